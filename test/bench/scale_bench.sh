#!/usr/bin/env bash
# Benchmark of simhash_perm at scale: build within maintenance_work_mem,
# size, query throughput, COPY and a new connection's first query, against
# a btree on the same column, in one run.
#
#   bash test/bench/scale_bench.sh [ROWS]        (default 100000000)
#
# Data: simhash_bench_data (tools/common.sh): ROWS pseudo-random 64-bit
# fingerprints (fixed seed) plus 1% planted near-duplicates; fps carries
# the simhash_perm index and fps_btree, a copy, a btree on fp.
#
# Measured:
#   CREATE INDEX at maintenance_work_mem 64MB and 1GB, simhash_perm against
#     btree (which builds with PostgreSQL's default parallel workers), with
#     the backend's peak private memory (RssAnon, sampled every 50 ms) and
#     its temporary files;
#   index sizes in bytes per row;
#   k = 3 and k = 6 radius queries against btree equality lookups
#     (pgbench -M prepared, 2 clients, medians of RUNS runs of SECONDS s);
#   COPY of COPY_ROWS more rows into each table;
#   a new connection's first k = 3 query: its time and the backend's
#     private memory after it, and the same after 100 queries (leaf maps).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-100000000}
RUNS=${RUNS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
COPY_ROWS=${COPY_ROWS:-1000000}
simhash_bench_start scale_bench "shared_buffers = 4GB
max_parallel_workers_per_gather = 0
checkpoint_timeout = 30min
jit = off"

# timed LABEL MWM SQL: seconds, temporary files and peak private memory of
# the backend running SQL with maintenance_work_mem = MWM
timed() {
	local label=$1 mwm=$2 sql=$3 pidfile="$WORK/pid" peak=0 pid rss t0 t1 before after
	before=$(q -At -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()")
	rm -f "$pidfile"
	t0=$(date +%s.%N)
	PGOPTIONS="-c maintenance_work_mem=$mwm" psql -X -q -v ON_ERROR_STOP=1 -At \
		-c "SELECT pg_backend_pid()" -o "$pidfile" -c "\\o /dev/null" -c "$sql" &
	local job=$!
	while kill -0 "$job" 2>/dev/null; do
		if [ -s "$pidfile" ]; then
			pid=$(head -1 "$pidfile")
			rss=$(awk '/^RssAnon/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
			[ "${rss:-0}" -gt "$peak" ] && peak=$rss
		fi
		sleep 0.05
	done
	wait "$job"
	t1=$(date +%s.%N)
	sleep 0.6
	after=$(q -At -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()")
	python3 -c "print(f'  {\"$label\":44s} mwm {\"$mwm\":>4s}  {$t1 - $t0:8.1f} s  temp files {($after - $before) / 2**20:8.0f} MiB  peak private memory {$peak / 1024:7.0f} MiB')"
}

bench() {
	simhash_pgbench "$1" "$2" "$SECONDS_PER_RUN" "$RUNS" "" "$WORK"
}

echo "== data: $ROWS fingerprints + 1% planted near-duplicates"
t0=$(date +%s)
simhash_bench_data "$ROWS"
q -c "CREATE TABLE fps_btree AS SELECT * FROM fps" -c "VACUUM ANALYZE fps_btree"
echo "   ($(($(date +%s) - t0)) s)"

{
	echo "rows: $ROWS (+1% planted near-duplicates); $(nproc) cores; pgbench -M prepared, 2 clients, medians of $RUNS x ${SECONDS_PER_RUN}s"
	echo "table: $(q -At -c "SELECT pg_size_pretty(pg_relation_size('fps'))")"
	echo "CREATE INDEX:"
	timed "btree (fp)" 64MB "CREATE INDEX fps_bt ON fps_btree (fp)"
	q -c "DROP INDEX fps_bt"
	timed "btree (fp)" 1GB "CREATE INDEX fps_bt ON fps_btree (fp)"
	timed "simhash_perm (fp)" 64MB "CREATE INDEX fps_perm ON fps USING simhash_perm (fp)"
	q -c "DROP INDEX fps_perm"
	timed "simhash_perm (fp)" 1GB "CREATE INDEX fps_perm ON fps USING simhash_perm (fp)"
	q -c "ANALYZE fps" -c "ANALYZE fps_btree"
	q -At -F ' ' -c "
		SELECT format('  size: simhash_perm %s (%s bytes/row), btree %s (%s bytes/row)',
		              pg_size_pretty(pg_relation_size('fps_perm')),
		              round(pg_relation_size('fps_perm')::numeric / (SELECT count(*) FROM fps), 1),
		              pg_size_pretty(pg_relation_size('fps_bt')),
		              round(pg_relation_size('fps_bt')::numeric / (SELECT count(*) FROM fps), 1))"
	q -At -c "SELECT '  layout: ' || count(*) || ' tables, prefix bits ' || min(prefix_bits) || ', height ' || max(height) FROM simhash_perm_info('fps_perm')"
} | tee "$REPORT"

# a new connection's first query, then the 101st in the same session
{
	echo "first query of a new connection (k = 3):"
	for i in 1 2 3; do
		PGOPTIONS="" psql -X -q -At -v ON_ERROR_STOP=1 <<-SQL
			\\o /dev/null
			SELECT fp FROM bench_q WHERE qid = $((7 + i)) \\gset
			\\o
			SELECT clock_timestamp() AS t0 \\gset
			SELECT count(*) FROM fps WHERE hamming_near(fp, :fp, 3) \\g /dev/null
			SELECT format('  run $i: first query %s ms', round(extract(epoch FROM clock_timestamp() - :'t0') * 1000, 2));
			SELECT format('         backend private memory after it: %s kB', (regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'), 'RssAnon:\\s+(\\d+)'))[1]);
			SELECT sum(n.c) FROM bench_q b, LATERAL (SELECT count(*) AS c FROM fps WHERE hamming_near(fp, b.fp, 3)) n WHERE b.qid <= 100 \\g /dev/null
			SELECT format('         after 100 more queries (leaf maps built): %s kB', (regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'), 'RssAnon:\\s+(\\d+)'))[1]);
		SQL
	done
} | tee -a "$REPORT"

simhash_bench_script "$WORK/perm3.sql" 1 1000 'SELECT id FROM fps WHERE hamming_near(fp, :fp, 3);'
sed 's/, 3)/, 6)/' "$WORK/perm3.sql" >"$WORK/perm6.sql"
simhash_bench_script "$WORK/btree_eq.sql" 1 1000 'SELECT id FROM fps_btree WHERE fp = :fp;'
chmod 644 "$WORK"/*.sql
{
	echo "queries:"
	bench perm3 "$WORK/perm3.sql"
	bench btree_eq "$WORK/btree_eq.sql"
	bench perm6 "$WORK/perm6.sql"
} | tee -a "$REPORT"

q -c "\\copy (SELECT g + 1000000000, fp_of(g + 1000000000) FROM generate_series(1, $COPY_ROWS) g) TO '$WORK/more.csv' WITH (FORMAT csv)"
{
	echo "COPY $COPY_ROWS rows:"
	timed "into the table with simhash_perm" 64MB "\\copy fps FROM '$WORK/more.csv' WITH (FORMAT csv)"
	timed "into the table with a btree" 64MB "\\copy fps_btree FROM '$WORK/more.csv' WITH (FORMAT csv)"
} | tee -a "$REPORT"

python3 - "$REPORT" <<'PY' | tee -a "$REPORT"
import re, sys
text = open(sys.argv[1]).read()
def t(label, mwm):
    m = re.search(re.escape(label) + r"\s+mwm\s+" + mwm + r"\s+([0-9.]+) s", text)
    return float(m.group(1)) if m else float("nan")
tps = lambda n: float(re.search(rf"  {n}\s+tps\s+([0-9.]+)", text).group(1))
size = re.search(r"simhash_perm \S+ \S+ \(([0-9.]+) bytes/row\)", text)
print("ratios (targets from the issue in brackets):")
for mwm in ("64MB", "1GB"):
    print(f"  build time perm / btree, {mwm:4s}      {t('simhash_perm (fp)', mwm) / t('btree (fp)', mwm):6.2f}x  [<= 2.5]")
print(f"  index size, bytes/row               {float(size.group(1)) if size else float('nan'):6.1f}   [<= 45]")
print(f"  k=3 perm / btree_eq throughput      {tps('perm3') / tps('btree_eq'):6.2f}x  [>= 0.5]")
print(f"  COPY speed perm / btree             {t('into the table with a btree', '64MB') / t('into the table with simhash_perm', '64MB'):6.2f}x  [>= 0.5]")
PY
echo "report: $REPORT"
