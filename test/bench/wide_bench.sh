#!/usr/bin/env bash
# Exact search on bit(n) codes through simhash_perm (multi-index hashing),
# beside the sequential scan, a btree and pgvector's HNSW, in one run.
#
#   bash test/bench/wide_bench.sh [ROWS]        (default 1000000)
#
# Data (fixed seeds): ROWS bit(256) codes, PDQ-like: 99% uniform random,
# 1% planted near-copies of random rows at distances 0..31.  Queries
# (table bench_q): 1..200 near a planted pair (a stored row with e = 0..15
# of its bits flipped: its nearest rows lie within 15 + 31 bits), 201..400
# random codes (their nearest rows lie near 90 bits away).  And ROWS128
# (default ROWS/10) bit(128) codes (simhash128-like: uniform) for the
# radius-6 query against a btree equality lookup on the same column.
#
# Measured, each with pgbench (2 clients, -M prepared, SECS seconds, RUNS
# runs, median tps; no parallel workers, so both sides use both cores):
#   r31_index / r31_seq      WHERE hamming_near(code, q, 31)
#   knn1_index / knn1_seq    ORDER BY code <-> q LIMIT 1, planted queries
#   match_index / match_seq  WHERE hamming_near(code, q, 31)
#                            ORDER BY code <-> q LIMIT 1, planted queries
#   knn10_index / knn10_seq  ORDER BY code <-> q LIMIT 10, random queries
#   hnsw10                   pgvector HNSW (bit_hamming_ops), LIMIT 10,
#                            random queries, ef_search 40 (and 100)
#   r6_128 / eq_btree        bit(128): radius 6 through simhash_perm, and
#                            code = q through a btree
# Exactness: CHECK (50) queries of each kind, index against sequential scan
# (the ids within 31; the distances of LIMIT 1 and LIMIT 10); HNSW's
# recall@10 against the exact answer (ties at the tenth distance count as hits), and
# how often its LIMIT 1 misses a stored identical code.  Sizes and build
# times: simhash_perm, btree, HNSW.  No assertion: a report, written to
# test/bench/results/wide_ROWS.txt (docs/reports/ keeps the runs quoted).
#
# pgvector comes from tools/build_pgvector.sh (Debian's source package);
# without it the HNSW rows say so.  Environment: SECS (10), RUNS (3),
# HNSW=0 to leave HNSW out (its build takes minutes per million rows).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-1000000}
SECS=${SECS:-10}
RUNS=${RUNS:-3}
HNSW=${HNSW:-1}
CHECK=${CHECK:-50}
ROWS128=${ROWS128:-$((ROWS / 10))}

have_vector=0
if [ "$HNSW" = 1 ] && bash tools/build_pgvector.sh >/dev/null 2>&1; then
	have_vector=1
fi

simhash_bench_start wide "max_parallel_workers_per_gather = 0
jit = off
autovacuum = off
shared_buffers = 2GB
maintenance_work_mem = 1GB
work_mem = 64MB
max_wal_size = 8GB"

t0=$(date +%s)
q -c "CREATE EXTENSION simhash" -c "SELECT setseed(0.5)" -c "
-- n random bits as hex digits
CREATE FUNCTION rnd_hex(n int) RETURNS text LANGUAGE sql VOLATILE AS
  \$\$ SELECT left(string_agg(md5(random()::text), ''), n / 4) FROM generate_series(1, (n + 127) / 128) \$\$;
-- a mask of n bits with d set, at random places
CREATE FUNCTION rnd_mask(n int, d int) RETURNS text LANGUAGE sql VOLATILE AS
  \$\$ SELECT string_agg(b, '' ORDER BY random()) FROM (SELECT CASE WHEN g <= d THEN '1' ELSE '0' END AS b FROM generate_series(1, n) g) s \$\$;
CREATE TABLE codes (id bigint, code bit(256));
INSERT INTO codes SELECT g, ('x' || md5(g::text) || md5((-g)::text))::bit(256)
  FROM generate_series(1, $ROWS - $ROWS / 100) g;
-- 1% planted near-copies at distances 0..31
INSERT INTO codes SELECT $ROWS - $ROWS / 100 + i, c.code # rnd_mask(256, (i % 32)::int)::bit(256)
  FROM generate_series(1, $ROWS / 100) i
  JOIN codes c ON c.id = 1 + (hashint8(i)::bigint & 2147483647) % ($ROWS - $ROWS / 100);
CREATE TABLE bench_q (qid int PRIMARY KEY, code bit(256));
INSERT INTO bench_q SELECT i, c.code # rnd_mask(256, (i % 16)::int)::bit(256)
  FROM generate_series(1, 200) i
  JOIN codes c ON c.id = 1 + (hashint8(i)::bigint & 2147483647) % ($ROWS - $ROWS / 100);
INSERT INTO bench_q SELECT 200 + i, ('x' || rnd_hex(256))::bit(256) FROM generate_series(1, 200) i;
CREATE TABLE codes128 (id bigint, code bit(128));
INSERT INTO codes128 SELECT g, ('x' || md5((g * 7)::text))::bit(128) FROM generate_series(1, $ROWS128) g;
CREATE TABLE bench_q128 (qid int PRIMARY KEY, code bit(128));
INSERT INTO bench_q128 SELECT i, c.code # rnd_mask(128, (i % 7)::int)::bit(128)
  FROM generate_series(1, 200) i JOIN codes128 c ON c.id = i * 37;" \
  -c "VACUUM ANALYZE codes, codes128, bench_q, bench_q128"
echo "data: $(($(date +%s) - t0)) s"

# seconds of one statement, by psql's \timing
timed() {
	q -c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1 | awk '{ printf "%.1f\n", $1 / 1000 }'
}
build_perm=$(timed "CREATE INDEX codes_perm ON codes USING simhash_perm (code)")
build_btree=$(timed "CREATE INDEX codes_btree ON codes USING btree (code)")
build_perm128=$(timed "CREATE INDEX codes128_perm ON codes128 USING simhash_perm (code) WITH (radius = 6)")
q -c "CREATE INDEX codes128_btree ON codes128 USING btree (code); DROP INDEX codes_btree"
q -c "ANALYZE codes, codes128"
size_perm=$(q -At -c "SELECT pg_relation_size('codes_perm')")
size_perm128=$(q -At -c "SELECT pg_relation_size('codes128_perm')")
layout=$(q -At -c "SELECT count(*) || ' substrings of ' || min(prefix_bits) || '..' || max(prefix_bits) || ' bits, radius ' || min(radius) FROM simhash_perm_info('codes_perm')")
layout128=$(q -At -c "SELECT count(*) || ' substrings of ' || min(prefix_bits) || '..' || max(prefix_bits) || ' bits, radius ' || min(radius) FROM simhash_perm_info('codes128_perm')")

# Exactness: index against sequential scan, every query
q -c "
CREATE FUNCTION near_ids(qc bit, r int, by_index bool) RETURNS bigint[] LANGUAGE plpgsql AS \$\$
DECLARE ids bigint[];
BEGIN
  PERFORM set_config('enable_seqscan', (NOT by_index)::text, true);
  PERFORM set_config('enable_indexscan', by_index::text, true);
  PERFORM set_config('enable_bitmapscan', by_index::text, true);
  SELECT array_agg(id ORDER BY id) INTO ids FROM codes WHERE hamming_near(code, qc, r);
  RETURN ids;
END \$\$;
CREATE FUNCTION knn_dists(qc bit, n int, r int, by_index bool) RETURNS int[] LANGUAGE plpgsql AS \$\$
DECLARE d int[];
BEGIN
  PERFORM set_config('enable_seqscan', (NOT by_index)::text, true);
  PERFORM set_config('enable_indexscan', by_index::text, true);
  PERFORM set_config('enable_bitmapscan', 'false', true);
  PERFORM set_config('enable_sort', (NOT by_index)::text, true);
  SELECT array_agg(dist) INTO d FROM (SELECT code <-> qc AS dist FROM codes
    WHERE r IS NULL OR hamming_near(code, qc, coalesce(r, 256)) ORDER BY code <-> qc LIMIT n) s;
  RETURN d;
END \$\$;"
# the sequential answers once, for CHECK queries of each kind, then the
# index's against them
q -c "CREATE TABLE exact AS
SELECT qid, code, near_ids(code, 31, false) AS ids31, knn_dists(code, 1, NULL, false) AS d1,
       knn_dists(code, 1, 31, false) AS d1_31,
       CASE WHEN qid > 200 THEN knn_dists(code, 10, NULL, false) END AS d10
  FROM bench_q WHERE qid <= $CHECK OR qid BETWEEN 201 AND 200 + $CHECK"
exact=$(q -At -F ' ' -c "
SELECT count(*) FILTER (WHERE near_ids(code, 31, true) IS DISTINCT FROM ids31),
       count(*) FILTER (WHERE knn_dists(code, 1, NULL, true) IS DISTINCT FROM d1),
       count(*) FILTER (WHERE knn_dists(code, 1, 31, true) IS DISTINCT FROM d1_31),
       count(*) FILTER (WHERE qid > 200 AND knn_dists(code, 10, NULL, true) IS DISTINCT FROM d10),
       count(*),
       sum(coalesce(cardinality(ids31), 0)) FILTER (WHERE qid <= 200),
       avg(d10[10]) FILTER (WHERE qid > 200)
  FROM exact")
read -r bad_r31 bad_knn1 bad_match bad_knn10 nq matches31 tenth <<<"$exact"

# the plans the planner takes by itself
plan_r31=$(q -At -c "EXPLAIN (costs off) SELECT count(*) FROM codes WHERE hamming_near(code, (SELECT code FROM bench_q WHERE qid = 1), 31)" | grep -oE 'Seq Scan on codes( |$)|Index Scan using codes_[a-z0-9_]+|Bitmap Index Scan on codes_[a-z0-9_]+' | head -1)
plan_r100=$(q -At -c "EXPLAIN (costs off) SELECT count(*) FROM codes WHERE hamming_near(code, (SELECT code FROM bench_q WHERE qid = 1), 100)" | grep -oE 'Seq Scan on codes( |$)|Index Scan using codes_[a-z0-9_]+|Bitmap Index Scan on codes_[a-z0-9_]+' | head -1)
plan_knn1=$(q -At -c "EXPLAIN (costs off) SELECT id FROM codes ORDER BY code <-> (SELECT code FROM bench_q WHERE qid = 1) LIMIT 1" | grep -oE 'Seq Scan on codes( |$)|Index Scan using codes_[a-z0-9_]+' | head -1)

S="$WORK/scripts"
mkdir -p "$S"
script() { printf '\\set qid random(%s, %s)\n%s\n' "$2" "$3" "$4" >"$S/$1.sql"; }
Q="(SELECT code FROM bench_q WHERE qid = :qid)"
script r31 1 200 "SELECT count(*) FROM codes WHERE hamming_near(code, $Q, 31);"
script knn1 1 200 "SELECT id FROM codes ORDER BY code <-> $Q LIMIT 1;"
script match 1 200 "SELECT id FROM codes WHERE hamming_near(code, $Q, 31) ORDER BY code <-> $Q LIMIT 1;"
script knn10 201 400 "SELECT id FROM codes ORDER BY code <-> $Q LIMIT 10;"
script r6 1 200 "SELECT count(*) FROM codes128 WHERE hamming_near(code, (SELECT code FROM bench_q128 WHERE qid = :qid), 6);"
script eq 1 200 "SELECT count(*) FROM codes128 WHERE code = (SELECT code FROM bench_q128 WHERE qid = :qid);"
IDX="-c enable_seqscan=off -c enable_sort=off"
SEQ="-c enable_indexscan=off -c enable_bitmapscan=off"
results=$(
	simhash_pgbench r31_index "$S/r31.sql" "$SECS" "$RUNS" "$IDX" "$WORK"
	simhash_pgbench r31_seq "$S/r31.sql" "$SECS" "$RUNS" "$SEQ" "$WORK"
	simhash_pgbench knn1_index "$S/knn1.sql" "$SECS" "$RUNS" "$IDX" "$WORK"
	simhash_pgbench knn1_seq "$S/knn1.sql" "$SECS" "$RUNS" "$SEQ" "$WORK"
	simhash_pgbench match_index "$S/match.sql" "$SECS" "$RUNS" "$IDX" "$WORK"
	simhash_pgbench match_seq "$S/match.sql" "$SECS" "$RUNS" "$SEQ" "$WORK"
	simhash_pgbench knn10_index "$S/knn10.sql" "$SECS" "$RUNS" "$IDX" "$WORK"
	simhash_pgbench knn10_seq "$S/knn10.sql" "$SECS" "$RUNS" "$SEQ" "$WORK"
	simhash_pgbench r6_128 "$S/r6.sql" "$SECS" "$RUNS" "-c enable_seqscan=off -c enable_bitmapscan=off -c enable_indexscan=on" "$WORK"
	simhash_pgbench eq_btree "$S/eq.sql" "$SECS" "$RUNS" "-c enable_seqscan=off" "$WORK"
)

hnsw="pgvector: not installed (tools/build_pgvector.sh failed or HNSW=0)"
if [ "$have_vector" = 1 ]; then
	q -c "CREATE EXTENSION vector"
	# one process: pgvector 0.8.0's parallel HNSW build has a buffer
	# overflow (fixed in 0.8.2), and the simhash_perm build runs in one too
	build_hnsw=$(timed "SET max_parallel_maintenance_workers = 0; CREATE INDEX codes_hnsw ON codes USING hnsw (code bit_hamming_ops)")
	size_hnsw=$(q -At -c "SELECT pg_relation_size('codes_hnsw')")
	script hnsw10 201 400 "SELECT id FROM codes ORDER BY code <~> $Q LIMIT 10;"
	# recall@10 against the exact answer (a row at the tenth distance or
	# nearer is a hit); LIMIT 1 for stored codes (their own row is at 0)
	recall() {
		q -At -c "SET hnsw.ef_search = $1" -c "
		SELECT round(avg(hits) / 10.0, 3) FROM (
		  SELECT b.qid, (SELECT count(*) FROM (SELECT code FROM codes ORDER BY code <~> b.code LIMIT 10) h
		                  WHERE (h.code <-> b.code) <= b.d10[10]) AS hits
		    FROM exact b WHERE b.qid > 200) s" | tail -1
	}
	r40=$(recall 40)
	r100=$(recall 100)
	missed=$(q -At -F ' ' -c "SET hnsw.ef_search = 40" -c "
		SELECT count(*) FILTER (WHERE (SELECT code <~> c.code FROM codes ORDER BY code <~> c.code LIMIT 1) > 0), count(*)
		  FROM (SELECT code FROM codes WHERE id % ($ROWS / 500) = 0) c" | tail -1)
	hnswres=$(
		simhash_pgbench hnsw10_ef40 "$S/hnsw10.sql" "$SECS" "$RUNS" "-c hnsw.ef_search=40 -c enable_seqscan=off" "$WORK"
		simhash_pgbench hnsw10_ef100 "$S/hnsw10.sql" "$SECS" "$RUNS" "-c hnsw.ef_search=100 -c enable_seqscan=off" "$WORK"
	)
	hnsw="pgvector $(q -At -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'") HNSW (bit_hamming_ops, m 16, ef_construction 64): build $build_hnsw s, $((size_hnsw / 1048576)) MB
$hnswres
  recall@10 (random queries): $r40 at ef_search 40, $r100 at ef_search 100
  LIMIT 1 on stored codes (ef_search 40): missed its own identical code in ${missed% *} of ${missed#* } queries"
fi

tps() { echo "$results" | awk -v n="$1" '$1 == n { print $3 }'; }
ratio() { awk -v a="$(tps "$1")" -v b="$(tps "$2")" 'BEGIN { printf "%.1fx", a / b }'; }
{
	echo "wide_bench: $ROWS bit(256) codes (1% planted at 0..31), $ROWS128 bit(128) codes; pgbench 2 clients, ${SECS} s x $RUNS runs, medians"
	echo "$("$PG_CONFIG" --version); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) cores"
	echo
	echo "simhash_perm on bit(256): $layout; build $build_perm s, $((size_perm / 1048576)) MB = $(awk -v s="$size_perm" -v n="$ROWS" 'BEGIN { printf "%.2f", s / (n * 32) }')x the codes (32 bytes a row)"
	echo "btree on bit(256): build $build_btree s  (simhash_perm / btree: $(awk -v a="$build_perm" -v b="$build_btree" 'BEGIN { printf "%.2fx", a / b }'))"
	echo "simhash_perm on bit(128): $layout128; build $build_perm128 s, $((size_perm128 / 1048576)) MB"
	echo
	echo "$results"
	echo
	echo "radius 31, index / sequential:       $(ratio r31_index r31_seq)"
	echo "LIMIT 1 (planted), index / seq:      $(ratio knn1_index knn1_seq)"
	echo "radius 31 + LIMIT 1, index / seq:    $(ratio match_index match_seq)"
	echo "LIMIT 10 (random), index / seq:      $(ratio knn10_index knn10_seq)"
	echo "bit(128) radius 6 / btree equality:  $(ratio r6_128 eq_btree)"
	echo
	echo "exact, $nq queries checked: radius 31 mismatches $bad_r31 (planted queries' matches: $matches31); LIMIT 1 $bad_knn1; radius 31 + LIMIT 1 $bad_match; LIMIT 10 (random) $bad_knn10; the random queries' tenth neighbour at $(printf '%.1f' "$tenth") bits on average"
	echo "plans the planner takes by itself: radius 31: $plan_r31; radius 100: $plan_r100; LIMIT 1: $plan_knn1"
	echo
	echo "$hnsw"
	echo
	echo "total: $(($(date +%s) - t0)) s"
} | tee "$REPORT"
