#!/usr/bin/env bash
# A/B of index searches between two revisions, with the sequential scan
# beside them, in one run.
#
#   bash test/bench/radius_ab.sh REV_A REV_B [ROWS]      (default 1000000)
#   KS="3 knn10" bash test/bench/radius_ab.sh REV_A REV_B
#
# Builds both revisions (simhash_ab_start, tools/common.sh) and loads the
# index benchmarks' data (simhash_bench_data: ROWS fingerprints plus 1%
# planted near-duplicates, fixed seed) with a default simhash_perm index
# (design radius 3).  For each k in KS (default "8 12"), the query is
#   SELECT count(*) FROM fps WHERE hamming_near(fp, q, k)
# and for an entry knnN of KS the N nearest neighbours
#   SELECT id FROM fps ORDER BY fp <-> q LIMIT N
# for the 500 random fingerprints of bench_q, and for an entry pairsK every
# pair of the table within K (simhash_pairs, the same statement each time).
# First, in both builds, the counts (for knnN: the distances, in order)
# through the index must equal the sequential scan's for 100 of them (for
# pairsK: the two builds must find the same number of pairs); the run
# fails otherwise.  Then pgbench -M prepared, 2 clients,
# SECONDS_PER_RUN seconds: the sequential scan once per k, and RUNS rounds
# alternating the two builds (each round opens new connections).  Reports
# medians, B / A, and each build against the sequential scan.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

REV_A=$1
REV_B=$2
ROWS=${3:-1000000}
KS=${KS:-8 12}
RUNS=${RUNS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
OUT=${OUT:-test/bench/results}
mkdir -p "$OUT"
REPORT="$OUT/radius_ab_${ROWS}.txt"

simhash_ab_start radius-ab "$REV_A" "$REV_B" 4GB

q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

echo "== data: $ROWS fingerprints + 1% planted near-duplicates, default index"
simhash_bench_data "$ROWS"
q -c "CREATE INDEX fps_perm ON fps USING simhash_perm (fp)" -c "ANALYZE fps"

# the fingerprint type: simhash64 since 1.4, simhash before
FPTYPE=$(q -At -c "SELECT typname FROM pg_type WHERE typinput = 'simhash_in'::regproc")

# the query of a KS entry, for the bench_q row b
answer_sql() {
	case $1 in
	knn*) echo "(SELECT string_agg(d::text, ',' ORDER BY d) FROM (SELECT hamming_distance(fp, b.fp) AS d FROM fps ORDER BY fp <-> b.fp::$FPTYPE LIMIT ${1#knn}) x)" ;;
	pairs*) echo "(SELECT count(*)::text FROM simhash_pairs('fps', 'id', 'fp', ${1#pairs}) AS p(a bigint, b bigint, distance int) WHERE b.qid = 501)" ;;
	*) echo "(SELECT count(*)::text FROM fps WHERE hamming_near(fp, b.fp, $1))" ;;
	esac
}

for k in $KS; do
	case $k in
	knn*) query="SELECT id FROM fps ORDER BY fp <-> :fp::bigint::$FPTYPE LIMIT ${k#knn};" ;;
	pairs*) query="SELECT count(*) FROM simhash_pairs('fps', 'id', 'fp', ${k#pairs}) AS p(a bigint, b bigint, distance int);" ;;
	*) query="SELECT count(*) FROM fps WHERE hamming_near(fp, :fp, $k);" ;;
	esac
	cat >"$WORK/k$k.sql" <<-S
		\\set qid random(501, 1000)
		SELECT fp FROM bench_q WHERE qid = :qid \\gset
		$query
	S
done
chmod 644 "$WORK"/*.sql

echo "== exactness: 100 random queries per k, answers through the index against the sequential scan"
q -c "CREATE TABLE radius_truth (qid int, k text, n text)"
for k in $KS; do
	q -c "SET enable_indexscan = off; SET enable_bitmapscan = off;
		INSERT INTO radius_truth SELECT qid, '$k', $(answer_sql "$k")
		  FROM bench_q b WHERE qid BETWEEN 501 AND 600"
done
for v in A B; do
	simhash_ab_use $v
	wrong=0
	for k in $KS; do
		w=$(q -At -c "SET enable_seqscan = off; SET enable_bitmapscan = off;
			SELECT count(*) FROM radius_truth t JOIN bench_q b USING (qid)
			 WHERE t.k = '$k' AND n IS DISTINCT FROM $(answer_sql "$k")")
		wrong=$((wrong + w))
	done
	echo "   build $v: $wrong wrong answers"
	[ "$wrong" = 0 ] || { echo "build $v: the index's answers differ from the sequential scan's" >&2; exit 1; }
done

{
	echo "rows: $ROWS (+1% planted near-duplicates), default simhash_perm index (design radius 3)"
	echo "A: $REV_A ($(git rev-parse --short "$REV_A")), B: $REV_B ($(git rev-parse --short "$REV_B"))"
	echo "pgbench -M prepared, 2 clients, ${SECONDS_PER_RUN}s runs: sequential scan once, each build $RUNS alternating rounds"
} | tee "$REPORT"

for k in $KS; do
	echo "== k = $k" | tee -a "$REPORT"
	case $k in
	pairs*) ;;	# reads the table whichever way: no sequential scan to compare
	*) simhash_pgbench "seq_k$k" "$WORK/k$k.sql" "$SECONDS_PER_RUN" 1 \
		"-c enable_indexscan=off -c enable_bitmapscan=off" "$WORK" | tee -a "$REPORT" ;;
	esac
	for r in $(seq 1 "$RUNS"); do
		for v in A B; do
			simhash_ab_use $v
			simhash_pgbench "${v}_k${k}_r$r" "$WORK/k$k.sql" "$SECONDS_PER_RUN" 1 "" "$WORK" | tee -a "$REPORT"
		done
	done
done

python3 - "$REPORT" $KS <<'PY' | tee -a "$REPORT"
import re, statistics, sys
text = open(sys.argv[1]).read()
tps = {}
for m in re.finditer(r"^  (\w+)\s+tps\s+([0-9.]+)", text, re.M):
    tps.setdefault(re.sub(r"_r\d+$", "", m.group(1)), []).append(float(m.group(2)))
print("== medians (queries per second)")
for k in sys.argv[2:]:
    if f"seq_k{k}" not in tps:
        a = statistics.median(tps[f"A_k{k}"])
        b = statistics.median(tps[f"B_k{k}"])
        print(f"  {k}: A {a:.2f}, B {b:.2f}, B / A {b / a:.2f}x")
        continue
    seq = tps[f"seq_k{k}"][0]
    a = statistics.median(tps[f"A_k{k}"])
    b = statistics.median(tps[f"B_k{k}"])
    print(f"  {'k = ' + k if k.isdigit() else k}: sequential scan {seq:.1f}, A {a:.1f} ({a / seq:.1f}x the scan), "
          f"B {b:.1f} ({b / seq:.1f}x the scan), B / A {b / a:.2f}x")
PY
echo "report: $REPORT"
