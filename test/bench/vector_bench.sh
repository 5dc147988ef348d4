#!/usr/bin/env bash
# Binary vectors with realistic neighbours: exact nearest neighbours of
# bit(1024) codes through simhash_perm (its code store) beside the parallel
# sequential scan and pgvector's approximate HNSW, in one run.
#
#   bash test/bench/vector_bench.sh [ROWS]        (default 200000)
#
# Data (fixed seed, /usr/bin/python3 and numpy): CLUSTERS (1000) centres
# drawn from N(0, I) in DIMS (128) dimensions; each row a centre chosen at
# random plus Gaussian noise of standard deviation SPREAD (0.5) in every
# dimension; its code the sign bits of a fixed random projection to 1024
# dimensions (a 128 x 1024 matrix of N(0, 1)): the binary quantisation of
# embeddings, or the SimHash of vectors.  Two codes' Hamming distance
# estimates their angle (1024 * angle / pi): a row's nearest rows are the
# rows of its cluster, near 190 bits away at SPREAD 0.5, the other rows
# near 512.  The rows come in blocks of 10,000 from a generator of their
# own, so a table of fewer rows is the start of a larger one.  Queries
# (bench_q): 200 fresh points of the same clusters, from a third
# generator, not in the table.  Loaded with COPY.
#
# Measured, each with pgbench (2 clients, -M prepared, SECS seconds, RUNS
# runs, median tps), all ORDER BY ... LIMIT 10:
#   knn10_perm    ORDER BY code <-> q through simhash_perm, as the planner
#                 plans it by itself (EXPLAIN in the report; if it chose
#                 another plan, knn10_index forces the index too)
#   knn10_seq     the sequential scan with 2 parallel workers
#                 (parallel_setup_cost = 0)
#   hnsw_ef40 / hnsw_ef200   pgvector HNSW (bit_hamming_ops), ORDER BY
#                 code <~> q, hnsw.ef_search 40 and 200
# Exactness: every query through simhash_perm against the sequential scan,
# the ten distances position by position.  HNSW's recall@10 against that
# exact answer: the rows it returns at or nearer than the true tenth
# distance, over 10 (ties at the tenth distance count as hits).  Sizes and
# build times: simhash_perm (its code store), HNSW (one process), the
# table.  No assertion: a report, written to
# test/bench/results/vector_ROWS.txt, the command at its top (docs/reports/
# keeps the runs quoted).
#
# pgvector comes from tools/build_pgvector.sh (Debian's source package);
# without it the HNSW rows say so.  Environment: SECS (10), RUNS (3),
# CLUSTERS (1000), DIMS (128), SPREAD (0.5), SEED (20240611), HNSW=0 to
# leave HNSW out (its build in one process takes minutes).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-200000}
SECS=${SECS:-10}
RUNS=${RUNS:-3}
CLUSTERS=${CLUSTERS:-1000}
DIMS=${DIMS:-128}
SPREAD=${SPREAD:-0.5}
SEED=${SEED:-20240611}
HNSW=${HNSW:-1}
NQ=200

# the command, for the report's first line: the settings that differ
# from the defaults, then the script
cmd="bash test/bench/vector_bench.sh $ROWS"
for v in SECS:10 RUNS:3 CLUSTERS:1000 DIMS:128 SPREAD:0.5 SEED:20240611 HNSW:1; do
	name=${v%%:*}
	[ "${!name}" = "${v#*:}" ] || cmd="$name=${!name} $cmd"
done

have_vector=0
if [ "$HNSW" = 1 ] && bash tools/build_pgvector.sh >/dev/null 2>&1; then
	have_vector=1
fi

simhash_bench_start vector "max_parallel_workers_per_gather = 2
max_parallel_workers = 2
max_parallel_maintenance_workers = 0
jit = off
autovacuum = off
shared_buffers = 2GB
maintenance_work_mem = 2GB
work_mem = 64MB
max_wal_size = 8GB"

t0=$(date +%s)
q -c "CREATE EXTENSION simhash" -c "
CREATE TABLE codes (id bigint, code bit(1024));
CREATE TABLE bench_q (qid int PRIMARY KEY, code bit(1024));"
# rows: COPY text, id then the code as x and 256 hex digits
gen() {
	/usr/bin/python3 - "$1" "$ROWS" "$CLUSTERS" "$DIMS" "$SPREAD" "$SEED" "$NQ" <<'PY'
import sys
import numpy as np
what, rows, clusters, dims, spread, seed, nq = sys.argv[1:]
rows, clusters, dims, nq, seed = int(rows), int(clusters), int(dims), int(nq), int(seed)
spread = float(spread)
BITS, BLOCK = 1024, 10000
model = np.random.default_rng(seed)
centres = model.standard_normal((clusters, dims))
proj = model.standard_normal((dims, BITS))
out = sys.stdout
def write(first, labels, g):
    x = centres[labels] + spread * g.standard_normal((len(labels), dims))
    packed = np.packbits(x @ proj > 0, axis=1)
    out.write(''.join('%d\tx%s\n' % (first + i, packed[i].tobytes().hex())
                      for i in range(len(labels))))
if what == 'rows':
    g = np.random.default_rng(seed + 1)
    for first in range(0, rows, BLOCK):
        n = min(BLOCK, rows - first)
        write(first + 1, g.integers(0, clusters, n), g)
else:
    g = np.random.default_rng(seed + 2)
    write(1, g.integers(0, clusters, nq), g)
PY
}
gen rows | q -c "\\copy codes FROM STDIN"
gen queries | q -c "\\copy bench_q FROM STDIN"
q -c "VACUUM ANALYZE codes, bench_q"
numpy=$(/usr/bin/python3 -c 'import numpy; print(numpy.__version__)')
echo "data: $(($(date +%s) - t0)) s"

# seconds of one statement, by psql's \timing
timed() {
	q -c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1 | awk '{ printf "%.1f\n", $1 / 1000 }'
}
build_perm=$(timed "CREATE INDEX codes_perm ON codes USING simhash_perm (code)")
q -c "ANALYZE codes"
size_perm=$(q -At -c "SELECT pg_relation_size('codes_perm')")
size_heap=$(q -At -c "SELECT pg_relation_size('codes')")
store_pages=$(q -At -c "SELECT sum(pages) FROM simhash_perm_check('codes_perm') WHERE table_no < 0")
layout=$(q -At -c "SELECT count(*) || ' substrings of ' || min(prefix_bits) || '..' || max(prefix_bits) || ' bits, radius ' || min(radius) FROM simhash_perm_info('codes_perm')")

# the exact answers: the sequential scan's ten distances of every query,
# then the index's against them, position by position
q -c "
CREATE FUNCTION knn_dists(qc bit, by_index bool) RETURNS int[] LANGUAGE plpgsql AS \$\$
DECLARE d int[];
BEGIN
  PERFORM set_config('enable_seqscan', (NOT by_index)::text, true);
  PERFORM set_config('enable_indexscan', by_index::text, true);
  PERFORM set_config('enable_bitmapscan', 'false', true);
  PERFORM set_config('enable_sort', (NOT by_index)::text, true);
  PERFORM set_config('parallel_setup_cost', '0', true);
  SELECT array_agg(dist ORDER BY o) INTO d FROM (SELECT code <-> qc AS dist,
    row_number() OVER () AS o FROM (SELECT code FROM codes ORDER BY code <-> qc LIMIT 10) s) x;
  RETURN d;
END \$\$;"
q -c "CREATE TABLE exact AS SELECT qid, code, knn_dists(code, false) AS d10 FROM bench_q"
exact=$(q -At -F ' ' -c "
SELECT count(*) FILTER (WHERE knn_dists(code, true) IS DISTINCT FROM d10), count(*),
       round(avg(d10[1]), 1), round(avg(d10[10]), 1), min(d10[10]), max(d10[10])
  FROM exact")
read -r bad nq first tenth tenth_min tenth_max <<<"$exact"
# how far the rest of the table lies: the median distance of a sample
median_far=$(q -At -c "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY c.code <-> b.code)
  FROM (SELECT code FROM codes WHERE id % 100 = 0) c, (SELECT code FROM bench_q WHERE qid <= 10) b")

# the plan the planner takes by itself for LIMIT 10 (parallel workers
# allowed), and the forced sequential one
Q1="(SELECT code FROM bench_q WHERE qid = 1)"
plan_knn10=$(q -At -c "EXPLAIN (costs off) SELECT id FROM codes ORDER BY code <-> $Q1 LIMIT 10" | grep -oE 'Parallel Seq Scan on codes|Seq Scan on codes( |$)|Index Scan using codes_[a-z0-9_]+' | head -1)
SEQ="-c enable_indexscan=off -c enable_bitmapscan=off -c parallel_setup_cost=0 -c parallel_tuple_cost=0 -c min_parallel_table_scan_size=0"
IDX="-c enable_seqscan=off -c enable_sort=off -c max_parallel_workers_per_gather=0"
plan_seq=$(PGOPTIONS="$SEQ" q -At -c "EXPLAIN (costs off) SELECT id FROM codes ORDER BY code <-> $Q1 LIMIT 10" | grep -oE 'Workers Planned: [0-9]+' | head -1)

S="$WORK/scripts"
mkdir -p "$S"
script() { printf '\\set qid random(%s, %s)\n%s\n' "$2" "$3" "$4" >"$S/$1.sql"; }
Q="(SELECT code FROM bench_q WHERE qid = :qid)"
script knn10 1 "$NQ" "SELECT id FROM codes ORDER BY code <-> $Q LIMIT 10;"
results=$(
	simhash_pgbench knn10_perm "$S/knn10.sql" "$SECS" "$RUNS" "" "$WORK"
	case $plan_knn10 in
	"Index Scan using codes_perm") ;;
	*) simhash_pgbench knn10_index "$S/knn10.sql" "$SECS" "$RUNS" "$IDX" "$WORK" ;;
	esac
	simhash_pgbench knn10_seq "$S/knn10.sql" "$SECS" "$RUNS" "$SEQ" "$WORK"
)
tps() { echo "$results" | awk -v n="$1" '$1 == n { print $3 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }

hnsw="pgvector: not installed (tools/build_pgvector.sh failed or HNSW=0)"
hnsw_ratios=""
if [ "$have_vector" = 1 ]; then
	q -c "CREATE EXTENSION vector"
	# one process: pgvector 0.8.0's parallel HNSW build has a buffer
	# overflow (fixed in 0.8.2), and the simhash_perm build runs in one too
	build_hnsw=$(timed "CREATE INDEX codes_hnsw ON codes USING hnsw (code bit_hamming_ops)")
	size_hnsw=$(q -At -c "SELECT pg_relation_size('codes_hnsw')")
	plan_hnsw=$(q -At -c "EXPLAIN (costs off) SELECT id FROM codes ORDER BY code <~> $Q1 LIMIT 10" | grep -oE 'Index Scan using codes_[a-z0-9_]+|Seq Scan on codes' | head -1)
	script hnsw10 1 "$NQ" "SELECT id FROM codes ORDER BY code <~> $Q LIMIT 10;"
	# recall@10 against the exact answer: a row at the tenth distance or
	# nearer is a hit; and the queries that found all ten
	recall() {
		q -At -F ' ' -c "SET hnsw.ef_search = $1" -c "SET enable_seqscan = off" -c "
		SELECT round(avg(hits) / 10.0, 3), count(*) FILTER (WHERE hits = 10), min(hits) FROM (
		  SELECT b.qid, (SELECT count(*) FROM (SELECT code FROM codes ORDER BY code <~> b.code LIMIT 10) h
		                  WHERE (h.code <-> b.code) <= b.d10[10]) AS hits
		    FROM exact b) s" | tail -1
	}
	read -r r40 all40 min40 <<<"$(recall 40)"
	read -r r200 all200 min200 <<<"$(recall 200)"
	hnswres=$(
		simhash_pgbench hnsw_ef40 "$S/hnsw10.sql" "$SECS" "$RUNS" "-c hnsw.ef_search=40 -c enable_seqscan=off" "$WORK"
		simhash_pgbench hnsw_ef200 "$S/hnsw10.sql" "$SECS" "$RUNS" "-c hnsw.ef_search=200 -c enable_seqscan=off" "$WORK"
	)
	htps() { echo "$hnswres" | awk -v n="$1" '$1 == n { print $3 }'; }
	hnsw="pgvector $(q -At -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'") HNSW (bit_hamming_ops, m 16, ef_construction 64, built in one process): build $build_hnsw s, $((size_hnsw / 1048576)) MB = $(awk -v s="$size_hnsw" -v n="$ROWS" 'BEGIN { printf "%.2f", s / (n * 128) }')x the codes; plan: $plan_hnsw
$hnswres
  recall@10: $r40 at ef_search 40 (all ten in $all40 of $nq queries, the worst $min40 of 10), $r200 at ef_search 200 (all ten in $all200, the worst $min200 of 10)"
	hnsw_ratios="
simhash_perm (exact) / HNSW ef_search 40:   $(ratio "$(tps knn10_perm)" "$(htps hnsw_ef40)")
simhash_perm (exact) / HNSW ef_search 200:  $(ratio "$(tps knn10_perm)" "$(htps hnsw_ef200)")"
fi

{
	echo "\$ $cmd"
	echo
	echo "vector_bench: $ROWS bit(1024) codes, the sign bits of a random projection of $DIMS-dimensional Gaussian data in $CLUSTERS clusters (spread $SPREAD, seed $SEED, numpy $numpy); $nq queries from the same clusters; pgbench 2 clients, ${SECS} s x $RUNS runs, medians"
	echo "$("$PG_CONFIG" --version); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) cores"
	echo
	echo "table: $((size_heap / 1048576)) MB; the codes 128 bytes a row, $((ROWS * 128 / 1048576)) MB"
	echo "simhash_perm: $layout; build $build_perm s, $((size_perm / 1048576)) MB = $(awk -v s="$size_perm" -v n="$ROWS" 'BEGIN { printf "%.2f", s / (n * 128) }')x the codes; the store $store_pages pages, $((store_pages * 8192 / 1048576)) MB"
	echo "LIMIT 10 as the planner plans it by itself (max_parallel_workers_per_gather = 2): $plan_knn10"
	echo "sequential scan: $plan_seq (parallel_setup_cost = 0)"
	echo "neighbours: the first at $first bits on average, the tenth at $tenth ($tenth_min..$tenth_max); the median distance to the table $median_far"
	echo
	echo "$results"
	echo
	echo "simhash_perm (exact) / parallel seq:      $(ratio "$(tps knn10_perm)" "$(tps knn10_seq)")$hnsw_ratios"
	echo
	echo "exact: $nq queries checked, simhash_perm's ten distances against the sequential scan's, position by position: mismatches $bad"
	echo
	echo "$hnsw"
	echo
	echo "total: $(($(date +%s) - t0)) s"
} | tee "$REPORT"
