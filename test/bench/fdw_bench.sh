#!/usr/bin/env bash
# The cost of spreading a table over two shard servers with postgres_fdw
# (README, "Scaling out"), against one server holding every row, in one
# run on one machine (Unix sockets, so the figures show the overhead of
# the foreign-data machinery, not of a network).
#
#   bash test/bench/fdw_bench.sh [ROWS]        (default 2000000)
#
# Three throwaway clusters: a coordinator and two shards, set up as
# test/t/006_fdw_shards.pl sets them up: ROWS pseudo-random fingerprints
# with 1% planted near-duplicates split by id range over the shards, each
# with its simhash_perm index; the coordinator holds the same rows in one
# table with its index.  Measured with pgbench -M prepared, 2 clients,
# medians of RUNS runs of SECONDS seconds:
#   radius     hamming_near(fp, q, 3), the sharded table (extensions and
#              remote estimates on) against the single table
#   knn        ORDER BY fp <-> q LIMIT 10 (extensions on, local estimates)
#   batch      a batch of 20 rows joined to the table on hamming_near
#   pairs      simhash_pairs and simhash_clusters on the sharded table (every
#              row through postgres_fdw to the coordinator) against the
#              single table (its heap), timed once each, with the
#              coordinator's temporary bytes and the bytes a row crosses as
#              text; the answers must agree
# STAGES chooses among them (default: all four), e.g.
#   STAGES=pairs bash test/bench/fdw_bench.sh 10000000
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-2000000}
RUNS=${RUNS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
STAGES=${STAGES:-radius knn batch pairs}
OUT=${OUT:-test/bench/results}
mkdir -p "$OUT"
REPORT="$OUT/fdw_bench_${ROWS}.txt"

simhash_install_deps
simhash_build_install

BASE=$(mktemp -d /tmp/simhash-fdw.XXXXXX)
chmod 755 "$BASE"
[ "$(id -u)" = 0 ] && chown postgres: "$BASE"
NODES="coord shard1 shard2"
declare -A PORT=([coord]=54341 [shard1]=54342 [shard2]=54343)
stop_all() {
	local n
	for n in $NODES; do
		[ -d "$BASE/$n" ] && simhash_as_pg pg_ctl -D "$BASE/$n" -m immediate -w stop >/dev/null 2>&1 || true
	done
	rm -rf "$BASE"
}
trap stop_all EXIT
for n in $NODES; do
	simhash_as_pg initdb -D "$BASE/$n" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
	cat >>"$BASE/$n/postgresql.conf" <<-CONF
		listen_addresses = ''
		unix_socket_directories = '$BASE'
		port = ${PORT[$n]}
		fsync = off
		shared_buffers = 1GB
		max_parallel_workers_per_gather = 0
		jit = off
	CONF
	simhash_as_pg pg_ctl -D "$BASE/$n" -l "$BASE/$n.log" -w start >/dev/null
done
export PGHOST=$BASE PGUSER=postgres PGDATABASE=postgres
on() { local n=$1; shift; PGPORT=${PORT[$n]} psql -X -q -v ON_ERROR_STOP=1 "$@"; }

FP="(hashint8(g)::bigint << 32) | (hashint8(-g - 1)::bigint & 4294967295)"
ROWSQL="SELECT g AS id, ($FP)::simhash64 AS fp FROM generate_series(1, $ROWS) g
        UNION ALL
        SELECT $ROWS + g, ((hashint8(g * 97)::bigint << 32 | (hashint8(-g * 97 - 1)::bigint & 4294967295)) # (1::bigint << (g % 64)))::simhash64
          FROM generate_series(1, $ROWS / 100) g"
HALF=$((ROWS / 2))
echo "== data: $ROWS rows + 1% planted, split at id $HALF"
on shard1 -c "CREATE EXTENSION simhash" -c "CREATE TABLE docs AS SELECT * FROM ($ROWSQL) r WHERE id < $HALF" \
	-c "CREATE INDEX ON docs USING simhash_perm (fp)" -c "VACUUM ANALYZE docs"
on shard2 -c "CREATE EXTENSION simhash" -c "CREATE TABLE docs AS SELECT * FROM ($ROWSQL) r WHERE id >= $HALF" \
	-c "CREATE INDEX ON docs USING simhash_perm (fp)" -c "VACUUM ANALYZE docs"
SETUP="CREATE EXTENSION simhash; CREATE EXTENSION postgres_fdw;
	CREATE TABLE single AS SELECT * FROM ($ROWSQL) r;
	CREATE INDEX ON single USING simhash_perm (fp);
	ANALYZE single;
	CREATE TABLE bench_q AS SELECT row_number() OVER () AS qid, fp FROM (SELECT fp FROM single ORDER BY hashint8(id) LIMIT 1000) s;
	CREATE TABLE batch AS SELECT id, fp FROM single WHERE id % 100003 = 17 LIMIT 20;"
for f in "" _knn; do
	ext="extensions 'simhash'"
	[ -z "$f" ] && ext="$ext, use_remote_estimate 'true'"
	SETUP="$SETUP
	CREATE TABLE docs$f (id bigint, fp simhash64) PARTITION BY RANGE (id);"
	for s in 1 2; do
		lo=$([ $s = 1 ] && echo MINVALUE || echo $HALF)
		hi=$([ $s = 1 ] && echo $HALF || echo MAXVALUE)
		SETUP="$SETUP
		CREATE SERVER s$s$f FOREIGN DATA WRAPPER postgres_fdw
		  OPTIONS (host '$BASE', port '${PORT[shard$s]}', dbname 'postgres', $ext);
		CREATE USER MAPPING FOR CURRENT_USER SERVER s$s$f;
		CREATE FOREIGN TABLE docs${f}_$s PARTITION OF docs$f FOR VALUES FROM ($lo) TO ($hi)
		  SERVER s$s$f OPTIONS (table_name 'docs');"
	done
	SETUP="$SETUP
	ANALYZE docs$f;"
done
on coord -c "$SETUP"

WORK=$BASE/scripts
mkdir -p "$WORK"
chmod 755 "$WORK"
for t in docs single; do
	cat >"$WORK/radius_$t.sql" <<-S
		\\set qid random(1, 1000)
		SELECT fp FROM bench_q WHERE qid = :qid \\gset
		SELECT id FROM $t WHERE hamming_near(fp, :fp, 3);
	S
	k=$([ $t = docs ] && echo docs_knn || echo single)
	cat >"$WORK/knn_$t.sql" <<-S
		\\set qid random(1, 1000)
		SELECT fp FROM bench_q WHERE qid = :qid \\gset
		SELECT id FROM $k ORDER BY fp <-> :fp::simhash64 LIMIT 10;
	S
	cat >"$WORK/batch_$t.sql" <<-S
		SELECT count(*) FROM batch b JOIN $t d ON hamming_near(d.fp, b.fp, 3);
	S
done
chmod 644 "$WORK"/*.sql

bench() {
	local name=$1 script=$2 i tps=() out
	for i in $(seq 1 "$RUNS"); do
		out=$(cd "$WORK" && PGPORT=${PORT[coord]} pgbench -n -M prepared -c 2 -j 2 -T "$SECONDS_PER_RUN" -f "$script" 2>&1) ||
			{ echo "$out" >&2; return 1; }
		tps+=("$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')")
	done
	python3 -c "import statistics, sys; t = [float(x) for x in sys.argv[2:]]; print(f'  {sys.argv[1]:14s} tps {statistics.median(t):10.1f}  (runs: {\", \".join(f\"{x:.0f}\" for x in t)})')" "$name" "${tps[@]}"
}

{
	echo "rows: $ROWS (+1% planted) over two shards on one machine; pgbench -M prepared, 2 clients, medians of $RUNS x ${SECONDS_PER_RUN}s"
	echo "answers equal: radius $(on coord -At -c "SELECT (SELECT array_agg(id::bigint ORDER BY id) FROM docs d, bench_q q WHERE q.qid <= 50 AND hamming_near(d.fp, q.fp, 3)) = (SELECT array_agg(id::bigint ORDER BY id) FROM single d, bench_q q WHERE q.qid <= 50 AND hamming_near(d.fp, q.fp, 3))"), batch $(on coord -At -c "SELECT (SELECT count(*) FROM batch b JOIN docs d ON hamming_near(d.fp, b.fp, 3)) = (SELECT count(*) FROM batch b JOIN single d ON hamming_near(d.fp, b.fp, 3))")"
	for w in radius knn batch; do
		case " $STAGES " in *" $w "*) ;; *) continue ;; esac
		bench "${w}_single" "$WORK/${w}_single.sql"
		bench "${w}_sharded" "$WORK/${w}_docs.sql"
	done
	case " $STAGES " in *" pairs "*)
		for f in pairs clusters; do
			for t in single docs; do
				# the count of result rows and a checksum of them; the key
				# is integer in single (made from the rows), bigint in docs
				kt=$([ $t = single ] && echo int || echo bigint)
				if [ $f = pairs ]; then
					call="simhash_pairs('$t', 'id', 'fp', 3) AS r(x $kt, y $kt, distance int)"
				else
					call="simhash_clusters('$t', 'id', 'fp', 3) AS r(x $kt, y $kt)"
				fi
				tb=$(on coord -At -c "SELECT pg_stat_force_next_flush()" -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()" | tail -1)
				a=$(date +%s.%N)
				n=$(on coord -At -c "SELECT count(*), sum(hashint8(x) # hashint8(y)) FROM $call")
				b=$(date +%s.%N)
				sleep 1
				ta=$(on coord -At -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()")
				python3 -c "print(f'  {\"$f\":8s} {\"$t\":7s} {$b - $a:8.2f} s   result (count|checksum) $n   coordinator temp files {($ta - $tb) / 1e6:8.1f} MB')"
			done
		done
		echo "  a row crosses as text: $(on coord -At -c "SELECT round(avg(octet_length(id::text) + octet_length(fp::text)), 1) FROM single") bytes of values, plus postgres_fdw's DataRow framing (4-byte length a column, 7 bytes a row)"
		;;
	esac
} | tee "$REPORT"
python3 - "$REPORT" <<'PY' | tee -a "$REPORT"
import re, sys
text = open(sys.argv[1]).read()
print("sharded / single:")
for w in ("radius", "knn", "batch"):
    m1 = re.search(rf"  {w}_sharded\s+tps\s+([0-9.]+)", text)
    m2 = re.search(rf"  {w}_single\s+tps\s+([0-9.]+)", text)
    if m1 and m2:
        print(f"  {w:8s} throughput {float(m1.group(1)) / float(m2.group(1)):6.2f}x")
for f in ("pairs", "clusters"):
    s = re.search(rf"  {f}\s+single\s+([0-9.]+) s\s+result \(count\|checksum\) (\S+)", text)
    d = re.search(rf"  {f}\s+docs\s+([0-9.]+) s\s+result \(count\|checksum\) (\S+)", text)
    if s and d:
        print(f"  {f:8s} time {float(d.group(1)) / float(s.group(1)):6.2f}x, same result: {'yes' if s.group(2) == d.group(2) else 'NO'}")
PY
echo "report: $REPORT"
