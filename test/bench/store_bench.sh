#!/usr/bin/env bash
# The code store of simhash_perm on bit(n) codes: far nearest-neighbour
# queries through the index against the parallel sequential scan, in one
# run.  Since simhash 1.6 every bit(n) index keeps its store, so the
# comparison with an index built without one (docs/reports/store_bench_1M.txt
# and store_bench_10M.txt, and the NEAR_AB rounds of store_near_ab_10M.txt,
# measured before) is no longer made.
#
#   bash test/bench/store_bench.sh [ROWS]        (default 1000000)
#
# Data (fixed seeds, as wide_bench.sh): ROWS bit(256) codes, 99% uniform
# random, 1% planted near-copies of random rows at distances 0..31, in the
# table codes, indexed with its code store.  Queries (bench_q):
# 1..200 near a planted pair (a stored row with 0..15 of its bits
# flipped), 201..400 random codes not in the table (their nearest rows lie
# near 90 bits away).
#
# Measured, each with pgbench (2 clients, -M prepared, SECS seconds, RUNS
# runs, median tps):
#   knn10_store / knn10_seq     ORDER BY code <-> q LIMIT 10, random
#                 queries: the index with its store, the sequential scan
#                 with 2 parallel workers
#   knn1_store / knn1_seq       the same, LIMIT 1
#   knn100_store / knn100_seq   LIMIT 100
#   r31_store                   WHERE hamming_near(code, q, 31), planted
#                 queries
#   near1_store                 LIMIT 1, planted queries
# Exactness: CHECK (50) queries of each kind, index against sequential scan
# (the distances of LIMIT 1, 10 and 100 in order, and the rows nearer than
# the last distance).  Sizes: the index, the store's pages, the codes'
# bytes.  Insert cost: INSERT ... SELECT of INSROWS (50000) rows into an
# indexed table of ROWS / 10 rows, RUNS times.
# No assertion: a report, written to test/bench/results/store_ROWS.txt
# (docs/reports/ keeps the runs quoted).  Environment: SECS (5), RUNS (3),
# SHARED_BUFFERS (2GB; ten million rows want 6GB, to keep the index in),
# CHECK (50), INSROWS (50000).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-1000000}
SECS=${SECS:-5}
SHARED_BUFFERS=${SHARED_BUFFERS:-2GB}
RUNS=${RUNS:-3}
CHECK=${CHECK:-50}
INSROWS=${INSROWS:-50000}

simhash_bench_start store "max_parallel_workers_per_gather = 2
max_parallel_workers = 2
jit = off
autovacuum = off
shared_buffers = $SHARED_BUFFERS
maintenance_work_mem = 1GB
work_mem = 64MB
max_wal_size = 8GB"

t0=$(date +%s)
q -c "CREATE EXTENSION simhash" -c "SELECT setseed(0.5)" -c "
CREATE FUNCTION rnd_hex(n int) RETURNS text LANGUAGE sql VOLATILE AS
  \$\$ SELECT left(string_agg(md5(random()::text), ''), n / 4) FROM generate_series(1, (n + 127) / 128) \$\$;
CREATE FUNCTION rnd_mask(n int, d int) RETURNS text LANGUAGE sql VOLATILE AS
  \$\$ SELECT string_agg(b, '' ORDER BY random()) FROM (SELECT CASE WHEN g <= d THEN '1' ELSE '0' END AS b FROM generate_series(1, n) g) s \$\$;
CREATE TABLE codes (id bigint, code bit(256));
INSERT INTO codes SELECT g, ('x' || md5(g::text) || md5((-g)::text))::bit(256)
  FROM generate_series(1, $ROWS - $ROWS / 100) g;
INSERT INTO codes SELECT $ROWS - $ROWS / 100 + i, c.code # rnd_mask(256, (i % 32)::int)::bit(256)
  FROM generate_series(1, $ROWS / 100) i
  JOIN codes c ON c.id = 1 + (hashint8(i)::bigint & 2147483647) % ($ROWS - $ROWS / 100);
CREATE TABLE bench_q (qid int PRIMARY KEY, code bit(256));
INSERT INTO bench_q SELECT i, c.code # rnd_mask(256, (i % 16)::int)::bit(256)
  FROM generate_series(1, 200) i
  JOIN codes c ON c.id = 1 + (hashint8(i)::bigint & 2147483647) % ($ROWS - $ROWS / 100);
INSERT INTO bench_q SELECT 200 + i, ('x' || rnd_hex(256))::bit(256) FROM generate_series(1, 200) i;" \
  -c "VACUUM ANALYZE codes, bench_q"
echo "data: $(($(date +%s) - t0)) s"

timed() {
	q -c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1 | awk '{ printf "%.1f\n", $1 / 1000 }'
}
build_store=$(timed "CREATE INDEX codes_perm ON codes USING simhash_perm (code)")
q -c "ANALYZE codes"
size_store=$(q -At -c "SELECT pg_relation_size('codes_perm')")
store_pages=$(q -At -c "SELECT sum(pages) FROM simhash_perm_check('codes_perm') WHERE table_no < 0")
layout=$(q -At -c "SELECT count(*) || ' substrings of ' || min(prefix_bits) || '..' || max(prefix_bits) || ' bits, radius ' || min(radius) FROM simhash_perm_info('codes_perm')")

# pgbench script NAME: a random query id from FIRST to LAST as :qid, then QUERY
S="$WORK/scripts"
mkdir -p "$S"
script() { printf '\\set qid random(%s, %s)\n%s\n' "$2" "$3" "$4" >"$S/$1.sql"; }

# Exactness: the index's answers against the sequential scan's
q -c "
CREATE FUNCTION knn_rows(tab text, qc bit, n int, by_index bool, OUT d int[], OUT near bigint[]) LANGUAGE plpgsql AS \$\$
BEGIN
  PERFORM set_config('enable_seqscan', (NOT by_index)::text, true);
  PERFORM set_config('enable_indexscan', by_index::text, true);
  PERFORM set_config('enable_bitmapscan', 'false', true);
  PERFORM set_config('enable_sort', (NOT by_index)::text, true);
  EXECUTE format('SELECT array_agg(dist ORDER BY o), array_agg(id ORDER BY id) FILTER (WHERE dist < (SELECT max(code <-> \$1) FROM (SELECT code FROM %I ORDER BY code <-> \$1 LIMIT \$2) m))
    FROM (SELECT id, code <-> \$1 AS dist, row_number() OVER () AS o FROM (SELECT id, code FROM %I ORDER BY code <-> \$1 LIMIT \$2) s) x', tab, tab)
    INTO d, near USING qc, n;
END \$\$;"
q -c "CREATE TABLE exact AS
SELECT qid, code, n, (knn_rows('codes', code, n, false)).*
  FROM bench_q, (VALUES (1), (10), (100)) l(n)
 WHERE qid <= $CHECK OR qid BETWEEN 201 AND 200 + $CHECK"
exact=$(q -At -F ' ' -c "
SELECT count(*) FILTER (WHERE (knn_rows('codes', code, n, true)).d IS DISTINCT FROM d
                           OR (knn_rows('codes', code, n, true)).near IS DISTINCT FROM near),
       count(*),
       round(avg(d[10]) FILTER (WHERE qid > 200 AND n = 10), 1)
  FROM exact")
read -r bad nq tenth <<<"$exact"

plan_knn10=$(q -At -c "EXPLAIN (costs off) SELECT id FROM codes ORDER BY code <-> (SELECT code FROM bench_q WHERE qid = 201) LIMIT 10" | grep -oE 'Seq Scan on codes( |$)|Index Scan using codes_[a-z0-9_]+' | head -1)

Q="(SELECT code FROM bench_q WHERE qid = :qid)"
script knn10_codes 201 400 "SELECT id FROM codes ORDER BY code <-> $Q LIMIT 10;"
script knn1_codes 201 400 "SELECT id FROM codes ORDER BY code <-> $Q LIMIT 1;"
script knn100_codes 201 400 "SELECT id FROM codes ORDER BY code <-> $Q LIMIT 100;"
script r31_codes 1 200 "SELECT count(*) FROM codes WHERE hamming_near(code, $Q, 31);"
script near1_codes 1 200 "SELECT id FROM codes ORDER BY code <-> $Q LIMIT 1;"
IDX="-c enable_seqscan=off -c enable_sort=off -c max_parallel_workers_per_gather=0"
SEQ="-c enable_indexscan=off -c enable_bitmapscan=off -c parallel_setup_cost=0 -c parallel_tuple_cost=0 -c min_parallel_table_scan_size=0"
plan_seq=$(PGOPTIONS="$SEQ" q -At -c "EXPLAIN (costs off) SELECT id FROM codes ORDER BY code <-> (SELECT code FROM bench_q WHERE qid = 201) LIMIT 10" | grep -oE 'Workers Planned: [0-9]+' | head -1)
results=$(
	simhash_pgbench knn10_store "$S/knn10_codes.sql" "$SECS" "$RUNS" "$IDX" "$WORK"
	simhash_pgbench knn10_seq "$S/knn10_codes.sql" "$SECS" "$RUNS" "$SEQ" "$WORK"
	simhash_pgbench knn1_store "$S/knn1_codes.sql" "$SECS" "$RUNS" "$IDX" "$WORK"
	simhash_pgbench knn1_seq "$S/knn1_codes.sql" "$SECS" "$RUNS" "$SEQ" "$WORK"
	simhash_pgbench knn100_store "$S/knn100_codes.sql" "$SECS" "$RUNS" "$IDX" "$WORK"
	simhash_pgbench knn100_seq "$S/knn100_codes.sql" "$SECS" "$RUNS" "$SEQ" "$WORK"
	simhash_pgbench r31_store "$S/r31_codes.sql" "$SECS" "$RUNS" "$IDX" "$WORK"
	simhash_pgbench near1_store "$S/near1_codes.sql" "$SECS" "$RUNS" "$IDX" "$WORK"
)

# 64-bit fingerprints: would a store help LIMIT 100 of random queries?
# The 64-bit index (whose table 0 holds whole codes) against the same bits
# as bit(64), whose index has a store, and the parallel sequential scan
q -c "CREATE TABLE fp64 (id bigint, fp simhash64);
INSERT INTO fp64 SELECT g, ((hashint8(g)::bigint << 32) | (hashint8(-g - 1)::bigint & 4294967295))::simhash64
  FROM generate_series(1, $ROWS) g;
CREATE TABLE b64 AS SELECT id, fp::bigint::bit(64) AS code FROM fp64;
CREATE INDEX ON fp64 USING simhash_perm (fp);
CREATE INDEX ON b64 USING simhash_perm (code);
CREATE TABLE q64 (qid int PRIMARY KEY, fp simhash64);
INSERT INTO q64 SELECT i, ((hashint8(i + 7777777)::bigint << 32) | (hashint8(-i - 7777777)::bigint & 4294967295))::simhash64
  FROM generate_series(1, 200) i;" -c "VACUUM ANALYZE fp64, b64, q64"
exact64=$(q -At -c "
SELECT count(*) FILTER (WHERE
  ARRAY(SELECT fp <-> q.fp FROM fp64 ORDER BY fp <-> q.fp LIMIT 100) IS DISTINCT FROM
  ARRAY(SELECT code <-> q.fp::bigint::bit(64) FROM b64 ORDER BY code <-> q.fp::bigint::bit(64) LIMIT 100))
FROM q64 q WHERE qid <= 20")
script knn100_fp64 1 200 "SELECT id FROM fp64 ORDER BY fp <-> (SELECT fp FROM q64 WHERE qid = :qid) LIMIT 100;"
script knn100_b64 1 200 "SELECT id FROM b64 ORDER BY code <-> (SELECT fp::bigint::bit(64) FROM q64 WHERE qid = :qid) LIMIT 100;"
results64=$(
	simhash_pgbench knn100_fp64 "$S/knn100_fp64.sql" "$SECS" "$RUNS" "$IDX" "$WORK"
	simhash_pgbench knn100_b64 "$S/knn100_b64.sql" "$SECS" "$RUNS" "$IDX" "$WORK"
	simhash_pgbench knn100_fp64seq "$S/knn100_fp64.sql" "$SECS" "$RUNS" "$SEQ" "$WORK"
)

# Insert cost: rows inserted one by one (aminsert) into an indexed table
q -c "CREATE TABLE ins_store (id bigint, code bit(256));
INSERT INTO ins_store SELECT * FROM codes WHERE id % 10 = 0;
CREATE INDEX ON ins_store USING simhash_perm (code);
CREATE TABLE ins_src AS SELECT * FROM codes WHERE id % 10 = 1 LIMIT $INSROWS;"
ins_store=()
for i in $(seq 1 "$RUNS"); do
	ins_store+=("$(timed "INSERT INTO ins_store SELECT * FROM ins_src")")
done
med() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
us_store=$(awk -v s="$(med "${ins_store[@]}")" -v n="$INSROWS" 'BEGIN { printf "%.1f", s * 1e6 / n }')

tps() { echo "$results" | awk -v n="$1" '$1 == n { print $3 }'; }
ratio() { awk -v a="$(tps "$1")" -v b="$(tps "$2")" 'BEGIN { printf "%.2fx", a / b }'; }
{
	echo "store_bench: $ROWS bit(256) codes (1% planted at 0..31); pgbench 2 clients, ${SECS} s x $RUNS runs, medians"
	echo "$("$PG_CONFIG" --version); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) cores"
	echo
	echo "simhash_perm on bit(256): $layout"
	echo "  with its code store: build $build_store s, $((size_store / 1048576)) MB = $(awk -v s="$size_store" -v n="$ROWS" 'BEGIN { printf "%.2f", s / (n * 32) }')x the codes (32 bytes a row); the store $store_pages pages, $((store_pages * 8192 / 1048576)) MB = $(awk -v s="$store_pages" -v n="$ROWS" 'BEGIN { printf "%.2f", s * 8192 / (n * 32) }')x the codes"
	echo "sequential scan: $plan_seq (parallel_setup_cost = 0); the planner by itself takes for LIMIT 10 (random): $plan_knn10"
	echo
	echo "$results"
	echo
	echo "LIMIT 10 (random), index with store / parallel seq:  $(ratio knn10_store knn10_seq)"
	echo "LIMIT 1 (random), index with store / parallel seq:   $(ratio knn1_store knn1_seq)"
	echo "LIMIT 100 (random), index with store / parallel seq: $(ratio knn100_store knn100_seq)"
	echo
	echo "64-bit fingerprints, LIMIT 100 (random), $ROWS rows (the same bits as bit(64), whose index has a store; distances differ in $exact64 of 20 queries):"
	echo "$results64"
	echo "  64-bit index / parallel seq: $(awk -v a="$(echo "$results64" | awk '$1 == "knn100_fp64" { print $3 }')" -v b="$(echo "$results64" | awk '$1 == "knn100_fp64seq" { print $3 }')" 'BEGIN { printf "%.2fx", a / b }');  bit(64) with store / 64-bit index: $(awk -v a="$(echo "$results64" | awk '$1 == "knn100_b64" { print $3 }')" -v b="$(echo "$results64" | awk '$1 == "knn100_fp64" { print $3 }')" 'BEGIN { printf "%.2fx", a / b }')"
	echo
	echo "insert, $INSROWS rows into $((ROWS / 10)): with store ${us_store} us a row (runs: ${ins_store[*]} s)"
	echo
	echo "exact, $nq queries checked (LIMIT 1, 10, 100; planted and random): mismatches $bad; the random queries' tenth neighbour at $tenth bits on average"
	echo
	echo "total: $(($(date +%s) - t0)) s"
} | tee "$REPORT"
