#!/usr/bin/env bash
# Benchmark of whole-table deduplication: simhash_pairs() and
# simhash_clusters() against the baselines, in one run.
#
#   bash test/bench/pairs_bench.sh [ROWS]        (default 1000000)
#
# Data: simhash_bench_data (tools/common.sh): ROWS pseudo-random 64-bit
# fingerprints (fixed seed) plus 1% planted near-duplicates, and the
# Debian corpus (tools/corpus.py, about 64,000 package descriptions).
#
# Measured, each as the median of RUNS runs of one statement in a fresh
# session, with its temporary file bytes (pg_stat_database) and the peak
# private memory of the backend and its parallel workers (RssAnon summed,
# sampled every 20 ms):
#   count_distinct   SELECT count(DISTINCT fp): the issue's yardstick
#   pairs k=3, k=6   simhash_pairs(), at work_mem 4MB (PostgreSQL's
#                    default) and 1GB, with parallel workers (the default
#                    max_parallel_workers_per_gather, 2), and at k = 3 in
#                    one process too
#   clusters k=3     simhash_clusters()
#   self_join k=3    the self-join through the simhash_perm index (one run)
#   skewed clusters  ROWS rows of which 100,000 share one fingerprint
# and on the Debian corpus the pairs at k = 3 against the self-join.  Then
# the planner's row estimates of joins on hamming_near against their actual
# row counts: self-joins at k = 3 and 6, and a batch joined to the table
# (benchmark data: 10,000 new rows, 1% of them near-copies of rows of the
# table; Debian: every 20th description against the rest, and the last 5%
# in the corpus's alphabetical order against the rest, each batch and rest
# a table of its own).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-1000000}
RUNS=${RUNS:-3}
SELF_JOIN=${SELF_JOIN:-1}
simhash_bench_start pairs_bench "shared_buffers = 4GB
jit = off"

# estimate LABEL QUERY COUNT_SQL: the planner's row estimate of QUERY, planned
# without parallel workers (a join under Gather shows one process's share),
# against the actual count from COUNT_SQL
estimate() {
	local est act
	est=$(q -At -c "SET max_parallel_workers_per_gather = 0" -c "EXPLAIN (FORMAT JSON) $2" |
		python3 -c 'import json, sys; print(round(json.load(sys.stdin)[0]["Plan"]["Plan Rows"]))')
	act=$(q -At -c "$3")
	awk -v l="$1" -v e="$est" -v a="$act" 'BEGIN {
		r = e > a ? e / (a > 0 ? a : 1) : a / (e > 0 ? e : 1)
		printf "  estimate %-34s %9d rows, actual %9d: %s by %.1fx  [within 10x]\n", l, e, a, (e > a ? "over" : "under"), r }'
}

# session_rss PID: RssAnon (kB) of backend PID and of its parallel workers
# (simhash_pairs and parallel queries start them), summed
session_rss() {
	local total f w
	total=$(awk '/^RssAnon/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0)
	for f in $(grep -l -a -w "parallel worker for PID $1" /proc/[0-9]*/cmdline 2>/dev/null); do
		w=$(awk '/^RssAnon/ {print $2}' "${f%cmdline}status" 2>/dev/null || echo 0)
		total=$((total + ${w:-0}))
	done
	echo "${total:-0}"
}

# measure LABEL WORK_MEM SQL: median seconds, temp bytes, peak RssAnon
measure() {
	local label=$1 wm=$2 sql=$3 i times=() temps=() peaks=()
	for i in $(seq 1 "$RUNS"); do
		local before after pidfile="$WORK/pid" t0 t1 peak=0 pid rss
		before=$(q -At -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()")
		rm -f "$pidfile"
		t0=$(date +%s.%N)
		PGOPTIONS="-c work_mem=$wm" psql -X -q -v ON_ERROR_STOP=1 -At \
			-c "SELECT pg_backend_pid()" -o "$pidfile" -c "\\o /dev/null" -c "$sql" &
		local job=$!
		while kill -0 "$job" 2>/dev/null; do
			if [ -s "$pidfile" ]; then
				pid=$(head -1 "$pidfile")
				rss=$(session_rss "$pid")
				[ "${rss:-0}" -gt "$peak" ] && peak=$rss
			fi
			sleep 0.02
		done
		wait "$job"
		t1=$(date +%s.%N)
		sleep 0.6	# statistics are flushed at most every 500 ms
		after=$(q -At -c "SELECT pg_stat_force_next_flush(); SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()" | tail -1)
		times+=("$(python3 -c "print($t1 - $t0)")")
		temps+=("$((after - before))")
		peaks+=("$peak")
	done
	python3 - "$label" "$wm" "${times[*]}" "${temps[*]}" "${peaks[*]}" <<'PY'
import statistics, sys
label, wm = sys.argv[1], sys.argv[2]
t = [float(x) for x in sys.argv[3].split()]
temp = [int(x) for x in sys.argv[4].split()]
peak = [int(x) for x in sys.argv[5].split()]
print(f"  {label:34s} work_mem {wm:>4s}  {statistics.median(t):7.2f} s  (runs: {', '.join(f'{x:.2f}' for x in t)})"
      f"  temp files {max(temp) / 2**20:7.1f} MiB  peak private memory {max(peak) / 1024:7.1f} MiB")
PY
}

echo "== data: $ROWS fingerprints + 1% planted near-duplicates"
simhash_bench_data "$ROWS"
q -c "CREATE INDEX fps_perm ON fps USING simhash_perm (fp)" -c "ANALYZE fps"
q -c "CREATE TABLE skewed AS SELECT id, CASE WHEN id <= 100000 THEN 81985529216486895 ELSE fp END AS fp FROM fps WHERE id <= $ROWS" \
  -c "VACUUM ANALYZE skewed"

PAIRS="SELECT count(*) FROM simhash_pairs('fps', 'id', 'fp', 3) AS p(a bigint, b bigint, distance int)"
PAIRS_PROGRESS="SELECT count(*) FROM simhash_pairs('fps', 'id', 'fp', 3, progress => true) AS p(a bigint, b bigint, distance int)"
{
	echo "rows: $ROWS (+1% planted near-duplicates); median of $RUNS runs; $(nproc) cores"
	echo "pairs at k=3: $(q -At -c "$PAIRS"), at k=6: $(q -At -c "${PAIRS/, 3)/, 6)}")"
	measure "count_distinct (yardstick)" 4MB "SELECT count(DISTINCT fp) FROM fps"
	measure "count_distinct (yardstick)" 1GB "SELECT count(DISTINCT fp) FROM fps"
	measure "simhash_pairs k=3" 4MB "$PAIRS"
	measure "simhash_pairs k=3" 1GB "$PAIRS"
	measure "simhash_pairs k=3, one process" 4MB "SET max_parallel_workers_per_gather = 0; $PAIRS"
	echo "  progress of one run at 4MB (the leader reports its workers' tables too):"
	PGOPTIONS="-c work_mem=4MB" q -c "$PAIRS_PROGRESS" 2>&1 | sed -n 's/^NOTICE:  simhash: /    /p; s/^DETAIL:  /      /p' 
	measure "simhash_pairs k=6" 4MB "${PAIRS/, 3)/, 6)}"
	measure "simhash_pairs k=6" 1GB "${PAIRS/, 3)/, 6)}"
	measure "simhash_clusters k=3" 4MB "SELECT count(*) FROM simhash_clusters('fps', 'id', 'fp', 3) AS c(id bigint, cluster bigint)"
	measure "simhash_clusters k=3, 100000 same fp" 4MB "SELECT count(*) FROM simhash_clusters('skewed', 'id', 'fp', 3) AS c(id bigint, cluster bigint)"
	if [ "$SELF_JOIN" = 1 ]; then
		RUNS=1 measure "self-join through the index k=3" 4MB \
			"SELECT count(*) FROM fps a JOIN fps b ON hamming_near(b.fp, a.fp, 3) AND a.id < b.id"
	fi
	for k in 3 6; do
		estimate "self-join k=$k" "SELECT a.id, b.id FROM fps a JOIN fps b ON hamming_near(b.fp, a.fp, $k) AND a.id < b.id" \
			"SELECT count(*) FROM simhash_pairs('fps', 'id', 'fp', $k) AS p(a bigint, b bigint, distance int)"
	done
	q -c "CREATE TABLE batch AS SELECT $ROWS * 2 + g AS id,
	        CASE WHEN g % 100 = 0 THEN flip(fp_of(g * 89), g, 1 + (g % 3)::int) ELSE fp_of(-g * 13 - 5) END AS fp
	        FROM generate_series(1, 10000) g" -c "ANALYZE batch"
	estimate "batch of 10000 k=3" "SELECT n.id, o.id FROM batch n JOIN fps o ON hamming_near(o.fp, n.fp, 3)" \
		"SELECT count(*) FROM batch n JOIN fps o ON hamming_near(o.fp, n.fp, 3)"
} | tee "$REPORT"

python3 - "$REPORT" <<'PY' | tee -a "$REPORT"
import re, sys
text = open(sys.argv[1]).read()
def t(label, wm):
    m = re.search(re.escape(label) + r"[^\n]*work_mem\s+" + wm + r"\s+([0-9.]+) s", text)
    return float(m.group(1)) if m else float("nan")
cd = t("count_distinct (yardstick)", "4MB")
print("ratios (targets from the issue in brackets):")
print(f"  pairs k=3 / count(DISTINCT) time, 4MB   {t('simhash_pairs k=3', '4MB') / cd:6.2f}x  [<= 2]")
print(f"  pairs k=3 / count(DISTINCT) time, 1GB   {t('simhash_pairs k=3', '1GB') / t('count_distinct (yardstick)', '1GB'):6.2f}x  [<= 2]")
sj = t("self-join through the index k=3", "4MB")
if sj == sj:
    print(f"  self-join / pairs k=3 time              {sj / t('simhash_pairs k=3', '4MB'):6.1f}x  [>= 10]")
PY

if [ "$ROWS" -le 1000000 ]; then
	echo "== the Debian corpus" | tee -a "$REPORT"
	simhash_load_corpus deb
	q -c "ALTER TABLE deb ADD fp simhash64" -c "UPDATE deb SET fp = simhash(body)" \
	  -c "CREATE INDEX deb_fp ON deb USING simhash_perm (fp)" -c "ANALYZE deb"
	{
		echo "  descriptions: $(q -At -c "SELECT count(*) FROM deb")"
		RUNS=1 measure "deb simhash_pairs k=3" 4MB "SELECT count(*) FROM simhash_pairs('deb', 'id', 'fp', 3) AS p(a int, b int, distance int)"
		RUNS=1 measure "deb self-join through the index k=3" 4MB "SELECT count(*) FROM deb a JOIN deb b ON hamming_near(b.fp, a.fp, 3) AND a.id < b.id"
		echo "  pairs k=3: $(q -At -c "SELECT count(*) FROM simhash_pairs('deb', 'id', 'fp', 3) AS p(a int, b int, distance int)")," \
		     "self-join: $(q -At -c "SELECT count(*) FROM deb a JOIN deb b ON hamming_near(b.fp, a.fp, 3) AND a.id < b.id")"
		for k in 3 6; do
			estimate "deb self-join k=$k" "SELECT a.id, b.id FROM deb a JOIN deb b ON hamming_near(b.fp, a.fp, $k) AND a.id < b.id" \
				"SELECT count(*) FROM simhash_pairs('deb', 'id', 'fp', $k) AS p(a int, b int, distance int)"
		done
		# a batch is a table of its own, the rest another, with its index
		for split in "every 20th:id % 20 = 0" "last 5%:id > 60759"; do
			q -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS deb_new, deb_old" \
			  -c "CREATE TABLE deb_new AS SELECT id, fp FROM deb WHERE ${split#*:}" \
			  -c "CREATE TABLE deb_old AS SELECT id, fp FROM deb WHERE NOT (${split#*:})" \
			  -c "CREATE INDEX ON deb_old USING simhash_perm (fp)" -c "ANALYZE deb_new, deb_old"
			join="FROM deb_new n JOIN deb_old o ON hamming_near(o.fp, n.fp, 3)"
			estimate "deb ${split%%:*} vs the rest k=3" "SELECT n.id, o.id $join" "SELECT count(*) $join"
		done
		RUNS=1 measure "deb candidates k=9 + Jaccard >= 0.8" 4MB "
			SELECT count(*) FROM simhash_pairs('deb', 'id', 'fp', 9) AS p(a int, b int, distance int)
			  JOIN deb x ON x.id = p.a JOIN deb y ON y.id = p.b
			 WHERE simhash_jaccard(x.body, y.body) >= 0.8"
	} | tee -a "$REPORT"
fi
echo "report: $REPORT"
