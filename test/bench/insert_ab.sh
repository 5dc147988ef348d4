#!/usr/bin/env bash
# A/B of insert speed into a simhash_perm index between two revisions, in one run.
#
#   bash test/bench/insert_ab.sh REV_A REV_B [ROWS] [COPY_ROWS]
#                                       (defaults: 1000000 rows, 100000 copied)
#
# Builds the extension at both git revisions (in temporary worktrees), loads
# ROWS fingerprints (as perm_bench.sh) into a template table once, then, for
# RUNS rounds alternating the two builds (the library file is swapped; each
# round opens new connections): copies the template into a fresh table with
# a simhash_perm index, and times COPY of COPY_ROWS more rows into it, and
# the same into a table with a btree on fp.  Reports the medians and the
# ratios, which is how perm_bench.sh states its COPY target (>= 0.5x the
# btree's speed).  The two revisions must share the index's on-disk format.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

REV_A=$1
REV_B=$2
ROWS=${3:-1000000}
COPY_ROWS=${4:-100000}
RUNS=${RUNS:-3}

simhash_ab_start insert-ab "$REV_A" "$REV_B" 2GB

q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
simhash_bench_data "$ROWS"
q -c "CREATE TABLE more AS SELECT id + 100000000 AS id, fp # 12345 AS fp FROM fps LIMIT $COPY_ROWS"
q -c "COPY more TO '$WORK/more.copy'" 2>/dev/null ||
	q -c "\\copy more TO '$WORK/more.copy'"
chmod 644 "$WORK/more.copy"

timed_copy() {	# table: seconds for COPY of the extra rows
	local t0 t1
	t0=$(date +%s.%N)
	q -c "\\copy $1 FROM '$WORK/more.copy'"
	t1=$(date +%s.%N)
	python3 -c "print(f'{$t1 - $t0:.3f}')"
}

declare -A secs
for r in $(seq 1 "$RUNS"); do
	for v in A B; do
		simhash_ab_use $v
		q -c "DROP TABLE IF EXISTS tp, tb" \
			-c "CREATE TABLE tp AS SELECT * FROM fps" -c "CREATE INDEX ON tp USING simhash_perm (fp)" \
			-c "CREATE TABLE tb AS SELECT * FROM fps" -c "CREATE INDEX ON tb (fp)" \
			-c "VACUUM ANALYZE tp" -c "VACUUM ANALYZE tb" -c "CHECKPOINT"
		p=$(timed_copy tp)
		b=$(timed_copy tb)
		secs[$v.perm]="${secs[$v.perm]:-} $p"
		secs[$v.btree]="${secs[$v.btree]:-} $b"
		echo "   round $r $v: simhash_perm $p s, btree $b s"
	done
done

python3 - "$REV_A" "$REV_B" "$ROWS" "$COPY_ROWS" "${secs[A.perm]}" "${secs[A.btree]}" "${secs[B.perm]}" "${secs[B.btree]}" <<'PY'
import statistics, sys
ra, rb, rows, crows = sys.argv[1:5]
ap, ab, bp, bb = ([float(x) for x in a.split()] for a in sys.argv[5:9])
print(f"COPY {crows} rows into a table of {rows} (+1%), medians of {len(ap)} alternating rounds")
for name, p, b in (("A " + ra, ap, ab), ("B " + rb, bp, bb)):
    mp, mb = statistics.median(p), statistics.median(b)
    print(f"  {name}: simhash_perm {mp:.3f} s, btree {mb:.3f} s, speed ratio perm / btree {mb / mp:.2f}x")
print(f"  simhash_perm time B / A: {statistics.median(bp) / statistics.median(ap):.2f}")
PY
