#!/usr/bin/env bash
# A/B of VACUUM on a simhash_perm index between two revisions, in one run:
# written to measure the read stream (PostgreSQL 17+) that bulk delete reads
# its pages through, against one ReadBufferExtended() a page.
#
#   PG_CONFIG=.../pg_config bash test/bench/vacuum_ab.sh REV_A REV_B [ROWS]
#                                              (default 1000000 rows)
#
# Loads ROWS fingerprints (as perm_bench.sh) with a simhash_perm index, then
# for RUNS rounds alternating the two builds: deletes a fresh 1% of the
# rows, restarts the server (shared buffers empty; the kernel's page cache
# stays warm unless DROP_CACHES=1 and this machine lets us write
# /proc/sys/vm/drop_caches), and times VACUUM (INDEX_CLEANUP ON) of the
# table: the whole command, whose heap pass is the same code in both
# builds.  Reports the medians and the ratio B / A.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

REV_A=$1
REV_B=$2
ROWS=${3:-1000000}
RUNS=${RUNS:-5}

simhash_ab_start vacuum-ab "$REV_A" "$REV_B" 1GB
echo "== vacuum_ab: $ROWS rows, $RUNS rounds, $("$PG_CONFIG" --version), A $REV_A, B $REV_B"
simhash_bench_data "$ROWS"
q -c "CREATE INDEX fps_perm ON fps USING simhash_perm (fp)" -c "VACUUM ANALYZE fps" -c CHECKPOINT
q -At -c "SELECT 'index: ' || pg_size_pretty(pg_relation_size('fps_perm')) || ', table: ' || pg_size_pretty(pg_relation_size('fps'))"

declare -A secs
n=0
for r in $(seq 1 "$RUNS"); do
	for v in A B; do
		n=$((n + 1))
		simhash_ab_use $v
		q -c "DELETE FROM fps WHERE id % 100 = $n" -c CHECKPOINT
		simhash_as_pg pg_ctl -D "$SIMHASH_PGDATA" -w restart -l "$SIMHASH_TMP/server.log" >/dev/null
		if [ -n "${DROP_CACHES:-}" ]; then
			sync
			echo 1 >/proc/sys/vm/drop_caches
		fi
		a=$(date +%s.%N)
		q -c "VACUUM (INDEX_CLEANUP ON) fps"
		b=$(date +%s.%N)
		s=$(python3 -c "print(f'{$b - $a:.3f}')")
		secs[$v]="${secs[$v]:-} $s"
		echo "   round $r $v: VACUUM $s s"
	done
done
python3 - "${secs[A]}" "${secs[B]}" <<'PY'
import statistics, sys
a, b = ([float(x) for x in s.split()] for s in sys.argv[1:3])
print(f"  median VACUUM: A {statistics.median(a):.3f} s, B {statistics.median(b):.3f} s,"
      f" B / A {statistics.median(b) / statistics.median(a):.2f}")
PY
