#!/usr/bin/env bash
# Benchmark of the simhash_perm index against the baselines, in one run.
#
#   bash test/bench/perm_bench.sh [ROWS]        (default 1000000)
#
# Data: ROWS pseudo-random 64-bit fingerprints (fixed seed) stored as bigint,
# plus 1% planted near-duplicates (copies with 1-3 bits flipped).  Queries:
# 1,000 fingerprints, half originals of planted copies, half random.
#
# Compared, on the same table and the same queries:
#   perm       simhash_perm index, hamming_near(fp, q, k)
#   diy        the do-it-yourself approach: k+1 btree expression indexes on
#              the blocks of the fingerprint, OR of block equalities plus the
#              distance filter (4 x 16 bits for k = 3, 7 x 9/10 bits for k = 6)
#   btree_eq   a btree equality lookup fp = q: the ceiling for one probe
#   seqscan    bit_count((fp # q)::bit(64)) <= k over the whole table
# Each is run with pgbench -M prepared, 2 clients, RUNS runs of SECONDS
# seconds; the medians are reported, with latency percentiles and the ratios.
# Index sizes, build times and COPY speed are measured in the same run.
# Timings drift between machines and runs: compare only within one run.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-1000000}
RUNS=${RUNS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
COPY_ROWS=${COPY_ROWS:-$((ROWS / 10))}
simhash_bench_start perm_bench "shared_buffers = 4GB
max_parallel_workers_per_gather = 0
jit = off"

timed() {	# label, SQL: run and print elapsed seconds
	local t0 t1
	t0=$(date +%s.%N)
	q -c "$2" >/dev/null
	t1=$(date +%s.%N)
	python3 -c "print(f'$1 {$t1 - $t0:.2f}')"
}

echo "== data: $ROWS fingerprints + 1% planted near-duplicates"
simhash_bench_data "$ROWS"
# tables for the other indexes are copies, so each index is measured alone
for t in fps_diy3 fps_diy6 fps_btree; do
	q -c "CREATE TABLE $t AS SELECT * FROM fps" -c "VACUUM ANALYZE $t"
done

echo "== building indexes"
{
	echo "rows: $ROWS (+1% planted near-duplicates), queries: 1000"
	echo "build times (s):"
	timed "  perm (simhash_perm)                " "CREATE INDEX fps_perm ON fps USING simhash_perm (fp)"
	timed "  diy3 (4 btrees on 16-bit blocks)   " "
		CREATE INDEX d3_0 ON fps_diy3 ((fp >> 48 & 65535));
		CREATE INDEX d3_1 ON fps_diy3 ((fp >> 32 & 65535));
		CREATE INDEX d3_2 ON fps_diy3 ((fp >> 16 & 65535));
		CREATE INDEX d3_3 ON fps_diy3 ((fp & 65535));"
	timed "  diy6 (7 btrees on 9/10-bit blocks) " "
		CREATE INDEX d6_0 ON fps_diy6 ((fp >> 55 & 511));
		CREATE INDEX d6_1 ON fps_diy6 ((fp >> 46 & 511));
		CREATE INDEX d6_2 ON fps_diy6 ((fp >> 37 & 511));
		CREATE INDEX d6_3 ON fps_diy6 ((fp >> 28 & 511));
		CREATE INDEX d6_4 ON fps_diy6 ((fp >> 19 & 511));
		CREATE INDEX d6_5 ON fps_diy6 ((fp >> 10 & 511));
		CREATE INDEX d6_6 ON fps_diy6 ((fp & 1023));"
	timed "  btree on fp                        " "CREATE INDEX fps_bt ON fps_btree (fp)"
	q -c "ANALYZE"
	q -At -F ' ' -c "
		SELECT 'index sizes:' UNION ALL
		SELECT format('  %-36s %8s  %s bytes/row', name, pg_size_pretty(bytes), round(bytes::numeric / (SELECT count(*) FROM fps), 1))
		  FROM (SELECT 'perm (simhash_perm)' AS name, pg_relation_size('fps_perm') AS bytes
		        UNION ALL SELECT 'diy3 (4 btrees)', sum(pg_relation_size(i)) FROM unnest(ARRAY['d3_0','d3_1','d3_2','d3_3']::regclass[]) i
		        UNION ALL SELECT 'diy6 (7 btrees)', sum(pg_relation_size(i)) FROM unnest(ARRAY['d6_0','d6_1','d6_2','d6_3','d6_4','d6_5','d6_6']::regclass[]) i
		        UNION ALL SELECT 'btree on fp', pg_relation_size('fps_bt')) s"
	echo "perm layout:"
	q -At -F ' ' -c "SELECT '  tables ' || count(*) || ', prefix bits ' || min(prefix_bits) || ', height ' || max(height) || ', largest bucket ' || max(largest_bucket) FROM simhash_perm_info('fps_perm')"
} | tee "$REPORT"

echo "== exactness spot check (k = 3 and 6, 100 queries)"
q -At -c "
	SET enable_seqscan = off;
	SELECT 'perm k=3 rows ' || sum((SELECT count(*) FROM fps WHERE hamming_near(fp, b.fp, 3))) FROM bench_q b WHERE qid % 10 = 0;
	SET enable_seqscan = on; SET enable_indexscan = off; SET enable_bitmapscan = off;
	SELECT 'seq  k=3 rows ' || sum((SELECT count(*) FROM fps WHERE bit_count((fp # b.fp)::bit(64)) <= 3)) FROM bench_q b WHERE qid % 10 = 0;" | tee -a "$REPORT"

# pgbench scripts: fetch a query fingerprint, then search
simhash_bench_script "$WORK/perm3.sql" 1 1000 'SELECT id FROM fps WHERE hamming_near(fp, :fp, 3);'
simhash_bench_script "$WORK/perm6.sql" 1 1000 'SELECT id FROM fps WHERE hamming_near(fp, :fp, 6);'
simhash_bench_script "$WORK/diy3.sql" 1 1000 'SELECT id FROM fps_diy3 WHERE ((fp >> 48 & 65535) = (:fp::bigint >> 48 & 65535) OR (fp >> 32 & 65535) = (:fp::bigint >> 32 & 65535)
  OR (fp >> 16 & 65535) = (:fp::bigint >> 16 & 65535) OR (fp & 65535) = (:fp::bigint & 65535))
  AND bit_count((fp # :fp::bigint)::bit(64)) <= 3;'
simhash_bench_script "$WORK/diy6.sql" 1 1000 'SELECT id FROM fps_diy6 WHERE ((fp >> 55 & 511) = (:fp::bigint >> 55 & 511) OR (fp >> 46 & 511) = (:fp::bigint >> 46 & 511)
  OR (fp >> 37 & 511) = (:fp::bigint >> 37 & 511) OR (fp >> 28 & 511) = (:fp::bigint >> 28 & 511)
  OR (fp >> 19 & 511) = (:fp::bigint >> 19 & 511) OR (fp >> 10 & 511) = (:fp::bigint >> 10 & 511)
  OR (fp & 1023) = (:fp::bigint & 1023))
  AND bit_count((fp # :fp::bigint)::bit(64)) <= 6;'
simhash_bench_script "$WORK/btree_eq.sql" 1 1000 'SELECT id FROM fps_btree WHERE fp = :fp;'
simhash_bench_script "$WORK/seq3.sql" 1 1000 'SELECT id FROM fps WHERE bit_count((fp # :fp::bigint)::bit(64)) <= 3;'
sed 's/<= 3/<= 6/' "$WORK/seq3.sql" >"$WORK/seq6.sql"
chmod 644 "$WORK"/*.sql

# run one script RUNS times; print median tps and latency percentiles (ms)
bench() {
	local name=$1 script=$2 secs=${3:-$SECONDS_PER_RUN} runs=${4:-$RUNS} pre=${5:-}
	simhash_pgbench "$name" "$script" "$secs" "$runs" "$pre" "$WORK"
}

echo "== queries: pgbench -M prepared, 2 clients, $RUNS x ${SECONDS_PER_RUN}s, medians" | tee -a "$REPORT"
{
	echo "k = 3:"
	bench perm3 "$WORK/perm3.sql"
	bench diy3 "$WORK/diy3.sql"
	bench btree_eq "$WORK/btree_eq.sql"
	bench seq3 "$WORK/seq3.sql" 10 1
	echo "k = 6:"
	bench perm6 "$WORK/perm6.sql"
	bench diy6 "$WORK/diy6.sql"
	bench seq6 "$WORK/seq6.sql" 10 1
} | tee -a "$REPORT"

echo "== COPY $COPY_ROWS more rows" | tee -a "$REPORT"
q -c "\\copy (SELECT g + 100000000, fp_of(g + 100000000) FROM generate_series(1, $COPY_ROWS) g) TO '$WORK/more.csv' WITH (FORMAT csv)"
{
	timed "  COPY into table with simhash_perm   " "\\copy fps FROM '$WORK/more.csv' WITH (FORMAT csv)"
	timed "  COPY into table with btree on fp    " "\\copy fps_btree FROM '$WORK/more.csv' WITH (FORMAT csv)"
	q -At -c "SELECT '  perm size after COPY: ' || pg_size_pretty(pg_relation_size('fps_perm')) || ', largest bucket ' || max(largest_bucket) FROM simhash_perm_info('fps_perm')"
} | tee -a "$REPORT"

python3 - "$REPORT" <<'PY' | tee -a "$REPORT"
import re, sys
text = open(sys.argv[1]).read()
def num(pattern):
    m = re.search(pattern, text)
    return float(m.group(1)) if m else float("nan")
tps = {n: num(rf"  {n}\s+tps\s+([0-9.]+)") for n in ["perm3", "diy3", "btree_eq", "seq3", "perm6", "diy6", "seq6"]}
build = {n: num(rf"  {n}[^\n]*?([0-9.]+)\n") for n in ["perm", "diy3"]}
size = {}
for line in text.splitlines():
    m = re.match(r"\s+(perm|diy3)[^\n]*?([0-9.]+) bytes/row", line)
    if m: size[m.group(1)] = float(m.group(2))
copy = {n: num(rf"COPY into table with {n}\s+([0-9.]+)") for n in ["simhash_perm", "btree on fp"]}
print("ratios (targets from the issue in brackets):")
print(f"  k=3 perm / diy3 throughput       {tps['perm3'] / tps['diy3']:8.1f}x  [>= 10]")
print(f"  k=3 perm / btree_eq throughput   {tps['perm3'] / tps['btree_eq']:8.2f}x  [>= 0.5]")
print(f"  k=3 perm / seqscan throughput    {tps['perm3'] / tps['seq3']:8.0f}x")
print(f"  k=6 perm / diy6 throughput       {tps['perm6'] / tps['diy6']:8.1f}x  [>= 10]")
print(f"  k=6 perm / seqscan throughput    {tps['perm6'] / tps['seq6']:8.0f}x  [>= 100]")
print(f"  index size perm / diy3           {size.get('perm', 0) / size.get('diy3', 1):8.2f}x  [<= 2]")
print(f"  build time perm / diy3           {build['perm'] / build['diy3']:8.2f}x  [<= 1]")
print(f"  COPY speed perm / btree          {copy['btree on fp'] / copy['simhash_perm']:8.2f}x  [>= 0.5]")
PY
if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
	/usr/bin/python3 test/bench/plot_perm_bench.py "$REPORT" "${REPORT%.txt}.png"
	echo "plot: ${REPORT%.txt}.png"
fi
echo "report: $REPORT"
