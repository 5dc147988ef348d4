#!/usr/bin/env bash
# Whole-table deduplication on a Citus cluster (src/pairs/pairscitus.c):
# the search on the workers against the coordinator's own search (every row
# read to the coordinator, simhash.pairs_on_workers = off) and against a
# local table holding the same rows, in one run on one machine.
#
#   bash test/bench/citus_bench.sh [ROWS]        (default 1000000)
#
# Three throwaway clusters on a private socket directory: a coordinator and
# two workers, Citus built by tools/build_citus.sh (exit 2 without it).
# Data: ROWS fixed-seed 64-bit fingerprints plus 1% planted near-copies
# (within 1-3 bits), in 1,000 sites; the table distributed by site_id into
# 16 shards; the same rows in a local table on the coordinator; and a
# second pair of tables of MEMORY_ROWS rows (default 4 x ROWS) for the
# coordinator's memory.  Measured, medians of RUNS rounds (default 5), each
# round running every variant once in turn (machine noise falls on all):
#   pairs, clusters   simhash_pairs / simhash_clusters(docs, id, fp, 3) on
#                     the workers, on the coordinator, and on the local table
#   tenant pairs      simhash_pairs(..., tenant => 'site_id'), the
#                     distribution column, the same three ways
#   memory            the coordinator backend's peak private memory
#                     (RssAnon, sampled every 20 ms) and its temporary
#                     bytes, at ROWS and MEMORY_ROWS, workers and coordinator
#   per part          from the layout the coordinator chose: the rows each
#                     part reads from its own node and from the other,
#                     the packed bytes that cross, the rows each table sorts
#   CPU per node      the CPU seconds each node's processes spend on one
#                     call: the work each worker does
#   one worker        the shards drained onto the first worker
#                     (citus_drain_node), pairs and clusters again, and
#                     the CPU per node: 2 workers against 1
# Every variant's answers are compared with the local table's (md5 of the
# ordered result); a difference fails the run.  The report ends with the
# extrapolation to a billion rows on 16 workers, from the same formulas.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-1000000}
RUNS=${RUNS:-5}
MEMORY_ROWS=${MEMORY_ROWS:-$((ROWS * 4))}
OUT=${OUT:-test/bench/results}
mkdir -p "$OUT"
REPORT="$OUT/citus_bench_${ROWS}.txt"

simhash_install_deps
bash tools/build_citus.sh >/dev/null
simhash_build_install

BASE=$(mktemp -d /tmp/simhash-citus.XXXXXX)
chmod 755 "$BASE"
[ "$(id -u)" = 0 ] && chown postgres: "$BASE"
NODES="coord w1 w2"
declare -A PORT=([coord]=54361 [w1]=54362 [w2]=54363)
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
		shared_preload_libraries = 'citus'
		max_connections = 200
		fsync = off
		shared_buffers = 1GB
		work_mem = 64MB
		jit = off
		wal_level = logical
		citus.local_hostname = '$BASE'
	CONF
	simhash_as_pg pg_ctl -D "$BASE/$n" -l "$BASE/$n.log" -w start >/dev/null
done
export PGHOST=$BASE PGUSER=postgres PGDATABASE=postgres
on() { local n=$1; shift; PGPORT=${PORT[$n]} psql -X -q -v ON_ERROR_STOP=1 "$@"; }
for n in $NODES; do on "$n" -c "CREATE EXTENSION citus"; done
on coord -c "SELECT citus_set_coordinator_host('$BASE', ${PORT[coord]})" \
	-c "SELECT citus_add_node('$BASE', ${PORT[w1]})" -c "SELECT citus_add_node('$BASE', ${PORT[w2]})" \
	-c "CREATE EXTENSION simhash" >/dev/null
export PGPORT=${PORT[coord]}

# load NAME N: the distributed table NAME and the local table local_NAME
load() {
	local name=$1 n=$2
	on coord >/dev/null <<-SQL
		CREATE TABLE local_$name (id bigint, site_id int, fp bigint);
		INSERT INTO local_$name
		  SELECT g, g % 1000, (hashint8(g)::bigint << 32) | (hashint8(-g - 1)::bigint & 4294967295)
		    FROM generate_series(1, $n) g;
		INSERT INTO local_$name
		  SELECT $n + g, (g * 97) % 1000,
		         ((hashint8(g * 97)::bigint << 32) | (hashint8(-g * 97 - 1)::bigint & 4294967295))
		         # (1::bigint << (g % 64)) # ((g % 3)::bigint << ((g * 7) % 62))
		    FROM generate_series(1, $n / 100) g;
		VACUUM ANALYZE local_$name;
		CREATE TABLE $name (id bigint, site_id int, fp bigint);
		SELECT create_distributed_table('$name', 'site_id', shard_count => 16);
		INSERT INTO $name SELECT * FROM local_$name;
		VACUUM ANALYZE $name;
	SQL
}
echo "== data: $ROWS and $MEMORY_ROWS rows (+1% planted), 16 shards over 2 workers" >&2
load docs "$ROWS"
load big "$MEMORY_ROWS"

PAIRS="simhash_pairs('%s', 'id', 'fp', 3) AS p(a bigint, b bigint, distance int)"
CLUSTERS="simhash_clusters('%s', 'id', 'fp', 3) AS c(id bigint, cluster bigint)"
TENANT="simhash_pairs('%s', 'id', 'fp', 3, tenant => 'site_id') AS p(a bigint, b bigint, distance int)"

# run_one SETTING TABLE FORM: seconds, temp bytes and peak RssAnon (kB) of
# the coordinator's backend for one call, its answer's md5 in $WORK/md5
WORK=$BASE/work
mkdir -p "$WORK"
run_one() {
	local setting=$1 table=$2 form=$3 before after t0 t1 peak=0 pid rss
	local sql
	# shellcheck disable=SC2059
	sql="SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM (SELECT * FROM $(printf "$form" "$table")) r"
	before=$(on coord -At -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()")
	rm -f "$WORK/pid" "$WORK/md5"
	t0=$(date +%s.%N)
	psql -X -q -v ON_ERROR_STOP=1 -At -c "SET simhash.pairs_on_workers = $setting" \
		-c "SELECT pg_backend_pid()" -o "$WORK/pid" -c "\\o $WORK/md5" -c "$sql" &
	local job=$!
	while kill -0 "$job" 2>/dev/null; do
		if [ -s "$WORK/pid" ]; then
			pid=$(head -1 "$WORK/pid")
			rss=$(awk '/^RssAnon/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
			[ "${rss:-0}" -gt "$peak" ] && peak=$rss
		fi
		sleep 0.02
	done
	wait "$job"
	t1=$(date +%s.%N)
	sleep 0.6	# statistics are flushed at most every 500 ms
	after=$(on coord -At -c "SELECT pg_stat_force_next_flush()" -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()" | tail -1)
	echo "$(python3 -c "print(round($t1 - $t0, 4))") $((after - before)) $peak"
}

# node_cpu: each node's CPU seconds so far, its ended processes' (the
# postmaster's cutime and cstime: a backend's time counts once it ends)
node_cpu() {
	local n pid
	for n in $NODES; do
		pid=$(head -1 "$BASE/$n/postmaster.pid")
		awk '{printf "%s ", ($16 + $17) / 100}' "/proc/$pid/stat"
	done
}

# cpu_split LABEL SETTING FORMVAR: the CPU seconds each node spends on one
# call (medians of RUNS calls), the work each does
cpu_split() {
	local label=$1 setting=$2 formvar=$3 r before after all=""
	for r in $(seq 1 "$RUNS"); do
		before=$(node_cpu)
		run_one "$setting" docs "${!formvar}" >/dev/null
		sleep 1
		after=$(node_cpu)
		all="$all$before|$after;"
	done
	python3 - "$label" "$all" <<-'PY'
		import statistics, sys
		label, runs = sys.argv[1], [r for r in sys.argv[2].split(";") if r]
		per = [[float(a) - float(b) for b, a in zip(*(x.split() for x in r.split("|")))] for r in runs]
		med = [statistics.median(p[i] for p in per) for i in range(3)]
		print(f"  {label:<34} CPU s: coordinator {med[0]:.2f}, worker 1 {med[1]:.2f}, worker 2 {med[2]:.2f}; busiest worker {max(med[1:]):.2f}")
	PY
}

# compare ROUNDS LABEL VARIANT... (VARIANT: setting:table:FORMVAR): the
# median seconds of each, rounds in turn; every answer must be the first's
compare() {
	local rounds=$1 label=$2
	shift 2
	local v r out md5 ref=""
	declare -A times=()
	for r in $(seq 1 "$rounds"); do
		for v in "$@"; do
			IFS=: read -r setting table formvar <<<"$v"
			out=$(run_one "$setting" "$table" "${!formvar}")
			md5=$(cat "$WORK/md5")
			if [ -z "$ref" ]; then ref=$md5; fi
			if [ "$md5" != "$ref" ]; then
				echo "FAIL: $label $v answered $md5, the first variant $ref" >&2
				exit 1
			fi
			times[$v]="${times[$v]:-} ${out%% *}"
		done
	done
	for v in "$@"; do
		python3 - "$label" "$v" "${times[$v]}" "${times[$1]}" "$WORK" <<-'PY'
			import statistics, sys
			label, v, t, base = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
			m = statistics.median(map(float, t)); b = statistics.median(map(float, base))
			setting, table, form = v.split(":")
			where = "local table" if table.startswith("local_") else ("workers" if setting == "on" else "coordinator")
			print(f"  {label:<16} {where:<12} median {m:7.3f} s  ({' '.join(t)})  {m / b:5.2f}x the local table")
			open(f"{sys.argv[5]}/median.{label.split(',')[0]}.{where}.{'1' if '1 wkr' in label else '2'}", "w").write(str(m))
		PY
	done
}

{
	echo "# test/bench/citus_bench.sh $ROWS (RUNS=$RUNS MEMORY_ROWS=$MEMORY_ROWS), $(date -u +%Y-%m-%d)"
	echo "# Citus $(on coord -At -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'"), PostgreSQL $(on coord -At -c 'SHOW server_version'), $(nproc) cores, all nodes on this machine"
	echo
	echo "== 2 workers, 16 shards, $ROWS rows + 1%: medians of $RUNS rounds"
	compare "$RUNS" pairs "on:local_docs:PAIRS" "on:docs:PAIRS" "off:docs:PAIRS"
	compare "$RUNS" clusters "on:local_docs:CLUSTERS" "on:docs:CLUSTERS" "off:docs:CLUSTERS"
	compare "$RUNS" "tenant pairs" "on:local_docs:TENANT" "on:docs:TENANT" "off:docs:TENANT"
	echo
	echo "== the CPU each node spends on one call (its processes', medians of $RUNS calls)"
	cpu_split "pairs on the workers, 2 workers" on PAIRS
	cpu_split "pairs on the coordinator, 2 workers" off PAIRS
	cpu_split "clusters on the workers, 2 workers" on CLUSTERS
	echo
	echo "== the coordinator's backend: peak private memory and temporary bytes (one call each)"
	for t in docs big; do
		n=$(on coord -At -c "SELECT count(*) FROM local_$t")
		for formvar in PAIRS CLUSTERS; do
			for setting in on off; do
				read -r secs temp peak <<<"$(run_one "$setting" "$t" "${!formvar}")"
				printf '  %-9s %9d rows  %-11s %7.3f s  peak %8.1f MiB  temporary %8.1f MiB\n' \
					"${formvar,,}" "$n" "$([ "$setting" = on ] && echo workers || echo coordinator)" \
					"$secs" "$(python3 -c "print($peak / 1024)")" "$(python3 -c "print($temp / 2**20)")"
			done
		done
	done
	echo
	echo "== per part, from the layout the coordinator chose for docs"
	layout=$(on coord -At -c "SET client_min_messages = notice" \
		-c "SELECT count(*) FROM simhash_pairs('docs', 'id', 'fp', 3, progress => true) AS p(a bigint, b bigint, distance int)" 2>&1 |
		sed -n 's/.*layout \([0-9]*\/[0-9]*\/[0-9a-f]*\).*/\1/p' | head -1)
	echo "  layout $layout"
	on coord -At -F ' ' <<-SQL | python3 test/bench/citus_parts.py "$ROWS" "$layout"
		WITH node AS (
		  SELECT DISTINCT ON (s.shardid) s.shardid, n.nodeport
		    FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
		    JOIN pg_dist_node n USING (groupid)
		   WHERE s.logicalrelid = 'docs'::regclass ORDER BY s.shardid, n.nodeid),
		ports AS (SELECT DISTINCT nodeport FROM node ORDER BY 1),
		part AS (SELECT row_number() OVER (ORDER BY nodeport) - 1 AS part, nodeport FROM ports)
		SELECT part.part, (node.nodeport = part.nodeport)::int AS local, count(*)
		  FROM docs d
		  JOIN node ON node.shardid = get_shard_id_for_distribution_column('docs', d.site_id)
		  CROSS JOIN part
		 WHERE simhash_pairs_part_has(d.fp, '$layout', part.part::int, 2)
		 GROUP BY 1, 2 ORDER BY 1, 2;
	SQL
	echo
	echo "== the shards drained onto one worker"
	on coord -c "SET client_min_messages = warning" \
		-c "SELECT citus_drain_node('$BASE', ${PORT[w2]}, shard_transfer_mode => 'block_writes')" >/dev/null
	echo "  shards per worker: $(on coord -At -c "SELECT string_agg(nodeport || ': ' || c, ', ') FROM (SELECT nodeport, count(*) c FROM citus_shards WHERE table_name = 'docs'::regclass GROUP BY 1 ORDER BY 1) s")"
	compare "$RUNS" "pairs, 1 wkr" "on:local_docs:PAIRS" "on:docs:PAIRS" "off:docs:PAIRS"
	compare "$RUNS" "clusters, 1 wkr" "on:local_docs:CLUSTERS" "on:docs:CLUSTERS" "off:docs:CLUSTERS"
	cpu_split "pairs on the workers, 1 worker" on PAIRS
	cpu_split "pairs on the coordinator, 1 worker" off PAIRS
	cpu_split "clusters on the workers, 1 worker" on CLUSTERS
	echo
	echo "== 2 workers against 1: the same call's medians"
	for f in pairs clusters; do
		for where in workers coordinator; do
			printf '  %-9s on the %-12s %.3f s on 2 workers, %.3f s on 1: %.2fx\n' "$f" "$where" \
				"$(cat "$WORK/median.$f.$where.2")" "$(cat "$WORK/median.$f.$where.1")" \
				"$(python3 -c "print($(cat "$WORK/median.$f.$where.2") / $(cat "$WORK/median.$f.$where.1"))")"
		done
	done
} 2>&1 | tee "$REPORT"
echo "report: $REPORT" >&2
