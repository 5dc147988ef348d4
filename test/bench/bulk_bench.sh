#!/usr/bin/env bash
# A bulk load into a table whose simhash_perm index on bit(256) codes was
# created empty, against the same load into a table without an index and
# CREATE INDEX after it, in one run.
#
#   bash test/bench/bulk_bench.sh [ROWS]        (default 1000000)
#
# Data (fixed, as store_bench.sh): ROWS bit(256) codes, 99% uniform (md5
# of the row number), 1% planted near-copies of random rows at distances
# 0..31, in a source table src with a primary key on id.  Both loads copy
# src by INSERT ... SELECT ... WHERE id BETWEEN, BATCH (10000) rows a
# statement, each statement its own transaction, in one session:
#   loaded   the table with the index created empty before the load
#   plain    the table without an index, then CREATE INDEX (max
#            parallel_maintenance_workers as configured: 2 by default)
# Reported: the seconds of each, the ratio of the load into the index to
# the build alone and to the plain load and build together, WAL bytes,
# the sizes of both indexes and simhash_perm_check() on the loaded one.
# Exactness: CHECK (50) radius-31 queries (near planted rows) and CHECK
# nearest-ten queries (random codes), through each index against the
# sequential scan.  The time of each tenth of the loaded run shows whether
# a row costs more as the index grows.  Speed of queries: the same radius
# and nearest-ten queries through each index, ROUNDS (5) rounds
# alternating between them, the median of each reported with its ratio.
# No assertion: a report, written to test/bench/results/bulk_ROWS.txt
# (docs/reports/ keeps the runs quoted).  Environment: BATCH (10000),
# CHECK (50), ROUNDS (5), SHARED_BUFFERS (1GB).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-1000000}
BATCH=${BATCH:-10000}
CHECK=${CHECK:-50}
ROUNDS=${ROUNDS:-5}
SHARED_BUFFERS=${SHARED_BUFFERS:-1GB}

simhash_bench_start bulk "max_parallel_workers_per_gather = 0
jit = off
autovacuum = off
shared_buffers = $SHARED_BUFFERS
maintenance_work_mem = 512MB
max_wal_size = 8GB"

t0=$(date +%s)
q -c "CREATE EXTENSION simhash" -c "SELECT setseed(0.5)" -c "
CREATE FUNCTION rnd_hex(n int) RETURNS text LANGUAGE sql VOLATILE AS
  \$\$ SELECT left(string_agg(md5(random()::text), ''), n / 4) FROM generate_series(1, (n + 127) / 128) \$\$;
CREATE FUNCTION rnd_mask(n int, d int) RETURNS text LANGUAGE sql VOLATILE AS
  \$\$ SELECT string_agg(b, '' ORDER BY random()) FROM (SELECT CASE WHEN g <= d THEN '1' ELSE '0' END AS b FROM generate_series(1, n) g) s \$\$;
CREATE TABLE src (id bigint PRIMARY KEY, code bit(256));
INSERT INTO src SELECT g, ('x' || md5(g::text) || md5((-g)::text))::bit(256)
  FROM generate_series(1, $ROWS - $ROWS / 100) g;
INSERT INTO src SELECT $ROWS - $ROWS / 100 + i, c.code # rnd_mask(256, (i % 32)::int)::bit(256)
  FROM generate_series(1, $ROWS / 100) i
  JOIN src c ON c.id = 1 + (hashint8(i)::bigint & 2147483647) % ($ROWS - $ROWS / 100);
CREATE TABLE bench_q (qid int PRIMARY KEY, code bit(256));
INSERT INTO bench_q SELECT i, c.code # rnd_mask(256, (i % 16)::int)::bit(256)
  FROM generate_series(1, $CHECK) i
  JOIN src c ON c.id = 1 + (hashint8(i)::bigint & 2147483647) % ($ROWS - $ROWS / 100);
INSERT INTO bench_q SELECT 200 + i, ('x' || rnd_hex(256))::bit(256) FROM generate_series(1, $CHECK) i;
CREATE TABLE loaded (id bigint, code bit(256));
CREATE INDEX loaded_perm ON loaded USING simhash_perm (code);
CREATE TABLE plain (id bigint, code bit(256));" -c "VACUUM ANALYZE src, bench_q"
echo "data: $(($(date +%s) - t0)) s"

# load TABLE: copy src into TABLE, BATCH rows a statement, in one session;
# prints each statement's milliseconds, one a line
load() {
	local i
	for ((i = 0; i < ROWS; i += BATCH)); do
		echo "INSERT INTO $1 SELECT id, code FROM src WHERE id > $i AND id <= $((i + BATCH));"
	done | q -c '\timing on' -f - | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
}
sum_s() { awk '{ s += $1 } END { printf "%.1f", s / 1000 }'; }
wal_lsn() { q -At -c "SELECT pg_current_wal_lsn()"; }
wal_mb() { q -At -c "SELECT round(pg_wal_lsn_diff(pg_current_wal_lsn(), '$1') / 1048576)"; }

q -c "CHECKPOINT"
lsn=$(wal_lsn)
load loaded >"$WORK/loaded.ms"
wal_loaded=$(wal_mb "$lsn")
loaded_s=$(sum_s <"$WORK/loaded.ms")
# the seconds of each tenth of the statements
tenths=$(awk -v n="$(wc -l <"$WORK/loaded.ms")" '{ s[int((NR - 1) * 10 / n)] += $1 }
	END { for (i = 0; i < 10; i++) printf "%s%.1f", (i ? " " : ""), s[i] / 1000 }' "$WORK/loaded.ms")

q -c "CHECKPOINT"
lsn=$(wal_lsn)
load plain >"$WORK/plain.ms"
plain_s=$(sum_s <"$WORK/plain.ms")
build_s=$(q -c '\timing on' -c "CREATE INDEX plain_perm ON plain USING simhash_perm (code)" |
	sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | awk '{ printf "%.1f", $1 / 1000 }')
wal_plain=$(wal_mb "$lsn")
workers=$(q -At -c "SHOW max_parallel_maintenance_workers")
q -c "ANALYZE loaded, plain"

size() { q -At -c "SELECT pg_relation_size('$1') / 1048576"; }
layout() { q -At -c "SELECT count(*) || ' substrings of ' || min(prefix_bits) || '..' || max(prefix_bits) || ' bits' FROM simhash_perm_info('$1')"; }
check=$(q -At -c "SELECT count(*) || ' tables and chains checked, ' || sum(pages) || ' pages' FROM simhash_perm_check('loaded_perm')")

# Exactness: each index's answers against the sequential scan's (on
# plain, which holds the same rows)
q -c "
CREATE FUNCTION answers(tab text, qc bit, by_index bool, OUT near bigint[], OUT knn int[]) LANGUAGE plpgsql AS \$\$
BEGIN
  PERFORM set_config('enable_seqscan', (NOT by_index)::text, true);
  PERFORM set_config('enable_indexscan', by_index::text, true);
  PERFORM set_config('enable_bitmapscan', by_index::text, true);
  PERFORM set_config('enable_sort', (NOT by_index)::text, true);
  EXECUTE format('SELECT array_agg(id ORDER BY id) FROM %I WHERE hamming_near(code, \$1, 31)', tab) INTO near USING qc;
  EXECUTE format('SELECT array_agg(d ORDER BY o) FROM (SELECT code <-> \$1 AS d, row_number() OVER () AS o FROM (SELECT code FROM %I ORDER BY code <-> \$1 LIMIT 10) s) x', tab) INTO knn USING qc;
END \$\$;"
q -c "CREATE TABLE exact AS SELECT qid, code, (answers('plain', code, false)).* FROM bench_q"
exact=$(q -At -F ' ' -c "
SELECT count(*) FILTER (WHERE (l).near IS DISTINCT FROM near OR (l).knn IS DISTINCT FROM knn),
       count(*) FILTER (WHERE (p).near IS DISTINCT FROM near OR (p).knn IS DISTINCT FROM knn),
       count(*)
  FROM (SELECT near, knn, answers('loaded', code, true) AS l, answers('plain', code, true) AS p
          FROM exact) e")
read -r bad_loaded bad_plain nq <<<"$exact"

# Speed: the same queries through each index, alternating rounds (an
# index grown by inserts keeps an unsorted tail of recent entries in its
# leaves, which every probe of the leaf reads whole: this is its price)
q -c "
CREATE FUNCTION timed(tab text, kind text) RETURNS numeric LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; qc bit(256); n bigint;
BEGIN
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('enable_sort', 'off', true);
  t0 := clock_timestamp();
  FOR qc IN SELECT code FROM bench_q WHERE (kind = 'near') = (qid < 200) LOOP
    IF kind = 'near' THEN
      EXECUTE format('SELECT count(*) FROM %I WHERE hamming_near(code, \$1, 31)', tab) INTO n USING qc;
    ELSE
      EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM %I ORDER BY code <-> \$1 LIMIT 10) s', tab) INTO n USING qc;
    END IF;
  END LOOP;
  RETURN extract(epoch FROM clock_timestamp() - t0) * 1000 / $CHECK;
END \$\$;"
median() { sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for kind in near knn; do
	for ((r = 0; r < ROUNDS; r++)); do
		q -At -c "SELECT timed('loaded', '$kind')" >>"$WORK/q_loaded_$kind"
		q -At -c "SELECT timed('plain', '$kind')" >>"$WORK/q_plain_$kind"
	done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fx", a / b }'; }
qline() {
	local l p
	l=$(median <"$WORK/q_loaded_$1")
	p=$(median <"$WORK/q_plain_$1")
	echo "$2: $l ms a query through the loaded index, $p ms through the built one: $(ratio "$l" "$p")"
}
{
	echo "bulk_bench: $ROWS bit(256) codes (1% planted at 0..31) loaded by INSERT ... SELECT, $BATCH rows a statement"
	echo "$("$PG_CONFIG" --version); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) cores; shared_buffers $SHARED_BUFFERS, fsync off"
	echo
	echo "load into the table whose index was created empty:  ${loaded_s} s, WAL $wal_loaded MB"
	echo "  seconds by tenth of the load: $tenths"
	echo "load into the table without an index:              ${plain_s} s"
	echo "CREATE INDEX after it ($workers parallel workers at most): ${build_s} s; load and build WAL $wal_plain MB"
	echo
	echo "load into the index / CREATE INDEX after the load:            $(ratio "$loaded_s" "$build_s")"
	echo "load into the index / load without index + CREATE INDEX:      $(ratio "$loaded_s" "$(awk -v a="$plain_s" -v b="$build_s" 'BEGIN { print a + b }')")"
	echo
	echo "index loaded: $(size loaded_perm) MB, $(layout loaded_perm); simhash_perm_check: $check"
	echo "index built:  $(size plain_perm) MB, $(layout plain_perm)"
	echo "exact, $nq queries (radius 31 near planted rows, LIMIT 10 of random codes) against the sequential scan: mismatches $bad_loaded (loaded), $bad_plain (built)"
	echo
	echo "queries, median of $ROUNDS rounds alternating between the indexes, $CHECK queries a round:"
	qline near "  radius 31 near planted rows"
	qline knn "  nearest 10 of random codes  "
	echo "  (leaves of the loaded index keep unsorted tails of up to $(sed -n 's/^#define PERM_LEAF_TAIL_MAX[[:space:]]*//p' src/index/perm.h) entries, which each probe reads whole)"
	echo
	echo "total: $(($(date +%s) - t0)) s"
} | tee "$REPORT"
