#!/usr/bin/env bash
# simhash_pairs and simhash_clusters: the heap's fast path against the rows
# read through the executor, on the same rows, in one run.
#
#   bash test/bench/pairs_sources_bench.sh [ROWS]      (default 1000000)
#
# The index benchmarks' data (ROWS fingerprints + 1% planted near-copies,
# table fps) and the same rows in a table partitioned by hash into four.
# In RUNS rounds, each of these is timed once (no parallel workers, so that
# both paths search in one process; the heap path's workers are timed
# apart, last):
#   heap         simhash_pairs('fps', ...)                  the fast path
#   query        simhash_pairs_query('SELECT id, fp FROM fps', ...)
#   partitioned  simhash_pairs('fps_parts', ...)            the executor
#   query, text  simhash_pairs_query('SELECT id::text, fp FROM fps', ...)
#                (text keys go to the key spool and are read back a pair)
# and the same for simhash_clusters (heap, query).  Every variant must
# return the same pairs (count and checksum).  Reports the medians and the
# ratios to the heap path.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-1000000}
RUNS=${RUNS:-3}

simhash_bench_start pairs_sources "max_parallel_workers_per_gather = 0
jit = off
shared_buffers = 1GB"
exec > >(tee "$REPORT") 2>&1
echo "== pairs_sources_bench: $ROWS rows, $RUNS rounds, $("$PG_CONFIG" --version), commit $(git rev-parse --short HEAD)"
simhash_bench_data "$ROWS"
q -c "CREATE TABLE fps_parts (id bigint, fp bigint) PARTITION BY HASH (id)" \
	-c "CREATE TABLE fps_parts_0 PARTITION OF fps_parts FOR VALUES WITH (MODULUS 4, REMAINDER 0)" \
	-c "CREATE TABLE fps_parts_1 PARTITION OF fps_parts FOR VALUES WITH (MODULUS 4, REMAINDER 1)" \
	-c "CREATE TABLE fps_parts_2 PARTITION OF fps_parts FOR VALUES WITH (MODULUS 4, REMAINDER 2)" \
	-c "CREATE TABLE fps_parts_3 PARTITION OF fps_parts FOR VALUES WITH (MODULUS 4, REMAINDER 3)" \
	-c "INSERT INTO fps_parts SELECT * FROM fps" -c "VACUUM ANALYZE fps_parts"

declare -A VARIANT=(
	[pairs_heap]="simhash_pairs('fps', 'id', 'fp', 3) AS r(x bigint, y bigint, d int)"
	[pairs_query]="simhash_pairs_query('SELECT id, fp FROM fps', 3) AS r(x bigint, y bigint, d int)"
	[pairs_partitioned]="simhash_pairs('fps_parts', 'id', 'fp', 3) AS r(x bigint, y bigint, d int)"
	[pairs_query_text]="simhash_pairs_query('SELECT id::text, fp FROM fps', 3) AS t(tx text, ty text, d int), LATERAL (SELECT tx::bigint AS x, ty::bigint AS y) r"
	[clusters_heap]="simhash_clusters('fps', 'id', 'fp', 3) AS r(x bigint, y bigint)"
	[clusters_query]="simhash_clusters_query('SELECT id, fp FROM fps', 3) AS r(x bigint, y bigint)"
)
ORDER="pairs_heap pairs_query pairs_partitioned pairs_query_text clusters_heap clusters_query"
declare -A secs result
for r in $(seq 1 "$RUNS"); do
	for v in $ORDER; do
		a=$(date +%s.%N)
		# the pair's keys in order (a text key sorts otherwise), counted
		# and checksummed
		out=$(q -At -c "SELECT count(*), sum(hashint8(least(x, y)) # hashint8(greatest(x, y))) FROM ${VARIANT[$v]}")
		b=$(date +%s.%N)
		s=$(python3 -c "print(f'{$b - $a:.3f}')")
		secs[$v]="${secs[$v]:-} $s"
		result[$v]=$out
		echo "   round $r: $v $s s ($out)"
	done
done
a=$(date +%s.%N)
q -At -c "SET max_parallel_workers_per_gather = 2" -c "SELECT count(*) FROM ${VARIANT[pairs_heap]}" >/dev/null
b=$(date +%s.%N)
parallel=$(python3 -c "print(f'{$b - $a:.3f}')")

args=()
for v in $ORDER; do args+=("$v" "${secs[$v]}" "${result[$v]}"); done
python3 - "$parallel" "${args[@]}" <<'PY'
import statistics, sys
parallel = float(sys.argv[1])
rest = sys.argv[2:]
rows = [(rest[i], [float(x) for x in rest[i + 1].split()], rest[i + 2]) for i in range(0, len(rest), 3)]
med = {name: statistics.median(t) for name, t, _ in rows}
res = {name: r for name, _, r in rows}
print("== medians (one process each)")
for name, _, r in rows:
    base = "pairs_heap" if name.startswith("pairs") else "clusters_heap"
    same = "same result" if r == res[base] else "RESULT DIFFERS"
    print(f"  {name:18s} {med[name]:8.3f} s   {med[name] / med[base]:5.2f}x the heap path   {same}")
print(f"  pairs_heap with up to 2 parallel workers: {parallel:.3f} s (one run)")
PY
