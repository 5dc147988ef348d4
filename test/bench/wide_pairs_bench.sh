#!/usr/bin/env bash
# Every near-duplicate pair among bit(256) codes (PDQ's match threshold,
# distance 31): simhash_pairs and simhash_clusters beside the ways a user
# would do it without them, in one run.
#
#   bash test/bench/wide_pairs_bench.sh [ROWS]        (default 1000000)
#
# Data (fixed seeds, as test/bench/wide_bench.sh): ROWS bit(256) codes,
# 99% uniform random, 1% planted near-copies of random rows at distances
# 0..31, and 0.1% exact copies.
#
# Measured:
#   pairs       simhash_pairs(codes, id, code, 31): the whole table
#   clusters    simhash_clusters(..., 31)
#   lateral     the LATERAL join through a simhash_perm index
#               (SELECT ... FROM codes a, LATERAL (SELECT ... WHERE
#               hamming_near(b.code, a.code, 31))), for SAMPLE (2000) rows
#               spread over the table (id % (ROWS / SAMPLE) = 0), its rate
#               projected to the whole table
#   self_join   the sequential self-join on bit_count(a.code # b.code)
#               <= 31, for the SELF (50) rows of largest id (exact copies,
#               each with a pair) against the whole table, projected
#               likewise (each pair compared once: half the scans)
# The projections are rates measured here times the table's rows (each
# row's search costs alike: the codes are uniform); the report says which
# figures are projected.  Exactness: the pairs of simhash_pairs that
# involve a sample row equal the LATERAL join's for those rows, and those
# of the SELF rows the self-join's.
# No assertion: a report, written to test/bench/results/wide_pairs_ROWS.txt
# (docs/reports/ keeps the runs quoted).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-1000000}
SAMPLE=${SAMPLE:-2000}
SELF=${SELF:-50}

simhash_bench_start wide_pairs "max_parallel_workers_per_gather = 0
jit = off
autovacuum = off
shared_buffers = 2GB
maintenance_work_mem = 4GB
work_mem = 64MB
max_wal_size = 8GB"

t0=$(date +%s)
q -c "CREATE EXTENSION simhash" -c "SELECT setseed(0.5)" -c "
CREATE FUNCTION rnd_mask(n int, d int) RETURNS text LANGUAGE sql VOLATILE AS
  \$\$ SELECT string_agg(b, '' ORDER BY random()) FROM (SELECT CASE WHEN g <= d THEN '1' ELSE '0' END AS b FROM generate_series(1, n) g) s \$\$;
CREATE TABLE codes (id bigint, code bit(256));
INSERT INTO codes SELECT g, ('x' || md5(g::text) || md5((-g)::text))::bit(256)
  FROM generate_series(1, $ROWS - $ROWS / 100 - $ROWS / 1000) g;
-- 1% planted near-copies at distances 0..31, 0.1% exact copies
INSERT INTO codes SELECT $ROWS - $ROWS / 100 - $ROWS / 1000 + i, c.code # rnd_mask(256, (i % 32)::int)::bit(256)
  FROM generate_series(1, $ROWS / 100) i
  JOIN codes c ON c.id = 1 + (hashint8(i)::bigint & 2147483647) % ($ROWS - $ROWS / 100 - $ROWS / 1000);
INSERT INTO codes SELECT $ROWS - $ROWS / 1000 + i, c.code
  FROM generate_series(1, $ROWS / 1000) i
  JOIN codes c ON c.id = 1 + (hashint8(-i)::bigint & 2147483647) % ($ROWS - $ROWS / 100 - $ROWS / 1000);" \
  -c "VACUUM ANALYZE codes"
echo "data: $(($(date +%s) - t0)) s"

# seconds of one statement, by psql's \timing
timed() {
	q -c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1 | awk '{ printf "%.1f\n", $1 / 1000 }'
}

# the layout from the search's own NOTICE (progress costs nothing)
t_pairs=$(timed "CREATE TABLE pairs AS SELECT * FROM simhash_pairs('codes', 'id', 'code', 31, progress => true) AS (a bigint, b bigint, d int)" 2>"$WORK/notices")
layout=$(grep -o '[0-9]* rows of 256-bit codes.*' "$WORK/notices" | head -1 || true)
t_clusters=$(timed "CREATE TABLE clusters AS SELECT * FROM simhash_clusters('codes', 'id', 'code', 31) AS (key bigint, cluster bigint)")
npairs=$(q -At -c "SELECT count(*) FROM pairs")
nclustered=$(q -At -c "SELECT count(*) || ' rows in ' || count(DISTINCT cluster) || ' clusters' FROM clusters")

build=$(timed "CREATE INDEX codes_perm ON codes USING simhash_perm (code)")
q -c "ANALYZE codes"
t_lateral=$(timed "CREATE TABLE lateral_pairs AS
SELECT a.id AS a, b.id AS b, (a.code <-> b.code)::int AS d
  FROM (SELECT * FROM codes WHERE id % ($ROWS / $SAMPLE) = 0) a,
       LATERAL (SELECT id, code FROM codes b WHERE hamming_near(b.code, a.code, 31)) b
 WHERE b.id <> a.id")
plan=$(q -At -c "EXPLAIN (costs off) SELECT b.id FROM codes a, LATERAL (SELECT id, code FROM codes b WHERE hamming_near(b.code, a.code, 31)) b WHERE a.id < 10" |
	grep -oE 'Index Scan using codes_perm|Bitmap Index Scan on codes_perm|Seq Scan on codes b' | head -1 || true)
t_self=$(timed "SET enable_indexscan = off; SET enable_bitmapscan = off;
CREATE TABLE self_pairs AS
SELECT a.id AS a, b.id AS b, bit_count(a.code # b.code)::int AS d
  FROM (SELECT * FROM codes ORDER BY id DESC LIMIT $SELF) a JOIN codes b
    ON b.id <> a.id AND bit_count(a.code # b.code) <= 31")

# exactness: the pairs of the sample rows, both ways
read -r miss_lateral extra_lateral <<<"$(q -At -F ' ' -c "
WITH s AS (SELECT id FROM codes WHERE id % ($ROWS / $SAMPLE) = 0),
     p AS (SELECT a, b, d FROM pairs WHERE a IN (TABLE s) UNION ALL
           SELECT b, a, d FROM pairs WHERE b IN (TABLE s))
SELECT (SELECT count(*) FROM (SELECT * FROM lateral_pairs EXCEPT ALL SELECT * FROM p) x),
       (SELECT count(*) FROM (SELECT * FROM p EXCEPT ALL SELECT * FROM lateral_pairs) x)")"
read -r miss_self extra_self self_found <<<"$(q -At -F ' ' -c "
WITH s AS (SELECT id FROM codes ORDER BY id DESC LIMIT $SELF),
     p AS (SELECT a, b, d FROM pairs WHERE a IN (TABLE s) UNION ALL
           SELECT b, a, d FROM pairs WHERE b IN (TABLE s))
SELECT (SELECT count(*) FROM (SELECT * FROM self_pairs EXCEPT ALL SELECT * FROM p) x),
       (SELECT count(*) FROM (SELECT * FROM p EXCEPT ALL SELECT * FROM self_pairs) x),
       (SELECT count(*) FROM self_pairs)")"

awk_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.1f", b / a; else print "n/a" }'; }
proj_lateral=$(awk -v t="$t_lateral" -v n="$ROWS" -v s="$SAMPLE" 'BEGIN { printf "%.0f", t * n / s }')
proj_self=$(awk -v t="$t_self" -v n="$ROWS" -v s="$SELF" 'BEGIN { printf "%.0f", t * n / s / 2 }')

{
	echo "wide_pairs_bench: $ROWS bit(256) codes, k = 31 ($(date -u +%Y-%m-%d), $(git rev-parse --short HEAD), $(nproc) cores)"
	echo "command: bash test/bench/wide_pairs_bench.sh $ROWS"
	echo "data: 99% uniform random, 1% planted near-copies at 0..31, 0.1% exact copies"
	echo "search: $layout"
	echo
	echo "simhash_pairs     $t_pairs s   $npairs pairs"
	echo "simhash_clusters  $t_clusters s   $nclustered"
	echo "LATERAL join through simhash_perm ($plan; index built in $build s):"
	echo "                  $t_lateral s for $SAMPLE rows -> $proj_lateral s for the table (projected)"
	echo "self-join, sequential: $t_self s for $SELF rows against all -> $proj_self s for the table"
	echo "                  (projected, each pair compared once: half the rows' scans)"
	echo
	echo "simhash_pairs against the LATERAL join: $(awk_ratio "$t_pairs" "$proj_lateral")x faster (projected)"
	echo "simhash_pairs against the self-join:    $(awk_ratio "$t_pairs" "$proj_self")x faster (projected)"
	echo
	echo "exactness: the pairs of $SAMPLE sample rows: $miss_lateral missing from simhash_pairs, $extra_lateral not in the LATERAL join"
	echo "           the pairs of the $SELF self-join rows ($self_found pairs): $miss_self missing from simhash_pairs, $extra_self not in the self-join"
} | tee "$REPORT"
