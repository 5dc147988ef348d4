#!/usr/bin/env bash
# Parallel CREATE INDEX (src/index/build/permbuildparallel.c) against the serial
# build, in one run: ROWS 64-bit fingerprints (simhash_bench_data's table
# fps, 1% planted near-copies), built serially (max_parallel_maintenance_
# workers = 0) and with WORKERS workers (default 2), alternating, RUNS
# rounds (default 5); the median of each and their ratio.  With WIDE=N,
# the same for N bit(256) codes, indexed with their code store (as every
# bit(n) index is since simhash 1.6).  Every parallel index is compared
# with the serial one (simhash_perm_info, size): the script stops if they
# differ.
#
#   bash test/bench/parallel_build_bench.sh [ROWS]      (default 3000000)
#   WIDE=1000000 bash test/bench/parallel_build_bench.sh 3000000
#
# maintenance_work_mem is MEM (default 1GB): both builds sort in memory
# at 3M rows (the parallel one gives each process a third).  No
# assertion: a report, written to test/bench/results/parallel_build_ROWS.txt
# (docs/reports/ keeps the runs quoted).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-3000000}
RUNS=${RUNS:-5}
WORKERS=${WORKERS:-2}
WIDE=${WIDE:-0}
MEM=${MEM:-1GB}

simhash_bench_start parallel_build "max_parallel_workers_per_gather = 0
max_parallel_maintenance_workers = $WORKERS
max_worker_processes = 8
max_parallel_workers = 8
jit = off
autovacuum = off
shared_buffers = 1GB
maintenance_work_mem = $MEM
max_wal_size = 8GB"

# seconds of the last statement, by psql's \timing
timed() {
	q -c '\timing on' "$@" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1 |
		awk '{ printf "%.3f\n", $1 / 1000 }'
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }

{
	echo "command: $([ "$WIDE" -gt 0 ] && echo "WIDE=$WIDE ")RUNS=$RUNS WORKERS=$WORKERS MEM=$MEM bash test/bench/parallel_build_bench.sh $ROWS"
	echo "commit:  $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo ' (with uncommitted changes to src/)')"
	echo "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo); $("$PG_CONFIG" --version)"
	echo "date:    $(date -u +%Y-%m-%dT%H:%MZ)"
} >"$REPORT"

simhash_bench_data "$ROWS"
q -c "CREATE TABLE info_ser AS SELECT * FROM simhash_perm_info(NULL::regclass) WHERE false"

# build index NAME on TABLE (COLUMN) with W workers; prints its seconds,
# and stops the script unless W workers read a share of the table
build() {
	local name=$1 tbl=$2 col=$3 w=$4 t
	q -c "SET client_min_messages = warning" -c "DROP INDEX IF EXISTS $name" -c "CHECKPOINT"
	t=$(timed -c "SET max_parallel_maintenance_workers = $w" -c "SET simhash.report_build_workers = on" \
		-c "CREATE INDEX $name ON $tbl USING simhash_perm ($col)" 2>"$WORK/notice")
	if [ "$w" -gt 0 ] && ! grep -q "read by $w parallel workers" "$WORK/notice"; then
		echo "a build with $w workers did not get them:" >&2
		cat "$WORK/notice" >&2
		exit 1
	fi
	echo "$t"
}
# the serial index's figures, kept; a parallel one must have the same
keep() { q -c "TRUNCATE info_ser" -c "INSERT INTO info_ser SELECT * FROM simhash_perm_info('$1')"; }
same() {
	q -At -c "SELECT NOT EXISTS (SELECT * FROM simhash_perm_info('$1') EXCEPT SELECT * FROM info_ser)
		AND NOT EXISTS (SELECT * FROM info_ser EXCEPT SELECT * FROM simhash_perm_info('$1'))"
}

# RUNS rounds of a serial and a parallel build of TABLE (COLUMN)
compare() {
	local label=$1 tbl=$2 col=$3 ser="" par="" s p i
	for i in $(seq 1 "$RUNS"); do
		s=$(build bench_idx "$tbl" "$col" 0)
		keep bench_idx
		p=$(build bench_idx "$tbl" "$col" "$WORKERS")
		[ "$(same bench_idx)" = t ] || { echo "the parallel index of $label differs from the serial one" >&2; exit 1; }
		echo "  $label round $i: serial $s s, $WORKERS workers $p s" >>"$REPORT"
		ser="$ser $s"
		par="$par $p"
	done
	s=$(echo "$ser" | median)
	p=$(echo "$par" | median)
	{
		echo "$label: $(q -At -c "SELECT count(*) || ' tables, ' || min(entries) || ' entries each, ' || pg_size_pretty(pg_relation_size('bench_idx'))
			FROM simhash_perm_info('bench_idx')")"
		echo "  serial (median of $RUNS)      $s s"
		echo "  $WORKERS workers (median of $RUNS)   $p s"
		echo "  parallel / serial             $(ratio "$p" "$s")"
		echo "  parallel index = serial index: every round"
	} >>"$REPORT"
	q -c "DROP INDEX bench_idx"
}

echo "== $ROWS 64-bit fingerprints"
compare "64-bit, $ROWS rows" fps fp

if [ "$WIDE" -gt 0 ]; then
	echo "== $WIDE bit(256) codes, with their code store"
	q -c "CREATE TABLE wide (id bigint, code bit(256)) WITH (autovacuum_enabled = off);
		INSERT INTO wide SELECT g, ('x' || md5(g::text) || md5((-g)::text))::bit(256)
		  FROM generate_series(1, $WIDE) g;" -c "VACUUM ANALYZE wide"
	compare "bit(256), $WIDE rows, with a code store" wide code
fi

cat "$REPORT"
