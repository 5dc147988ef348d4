#!/usr/bin/env bash
# A/B of the run-time POPCNT dispatch in simhash_perm's scans, in one run.
#
#   bash test/bench/popcount_ab.sh [ROWS]        (default 10000000)
#
# Builds the extension twice from this checkout: "popcnt", as shipped (the
# loops that compute Hamming distances are compiled with and without the
# POPCNT instruction and the loader picks one, see src/type/simhash.h), and
# "libgcc", with that dispatch switched off (-DSIMHASH_NO_CPU_DISPATCH: every
# popcount is a call into libgcc, as before the dispatch existed).  Loads
# ROWS fingerprints and a simhash_perm index once, then alternates the two
# builds (the library file is swapped between runs; every pgbench run opens
# new connections, which load the file then), RUNS rounds of k = 3 and
# k = 6 queries each, pgbench -M prepared, 2 clients, SECONDS seconds a run.
# Prints the medians and the ratio popcnt / libgcc, and writes them to
# test/bench/results/popcount_ab_ROWS.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-10000000}
RUNS=${RUNS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
OUT=${OUT:-test/bench/results}
mkdir -p "$OUT"
REPORT="$OUT/popcount_ab_${ROWS}.txt"

simhash_install_deps
WORK=$(mktemp -d /tmp/simhash-ab.XXXXXX)
chmod 755 "$WORK"
LIBDIR=$(pg_config --pkglibdir)

echo "== building both variants"
make -s clean && make -s COPT=-Werror && cp simhash.so "$WORK/popcnt.so"
make -s clean && make -s COPT="-Werror -DSIMHASH_NO_CPU_DISPATCH" && cp simhash.so "$WORK/libgcc.so"
echo "   POPCNT instructions: popcnt $(objdump -d "$WORK/popcnt.so" | grep -c popcnt)," \
	"libgcc $(objdump -d "$WORK/libgcc.so" | grep -c popcnt || true)"
make -s clean && make -s COPT=-Werror && make -s install >/dev/null

SIMHASH_EXTRA_CONF="shared_buffers = 4GB
max_parallel_workers_per_gather = 0
jit = off" simhash_cluster_start
trap 'simhash_cluster_stop; use popcnt; rm -rf "$WORK"' EXIT

q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

echo "== data: $ROWS fingerprints + 1% planted near-duplicates (as perm_bench.sh)"
simhash_bench_data "$ROWS"
q -c "CREATE INDEX fps_perm ON fps USING simhash_perm (fp)" -c "VACUUM ANALYZE fps"

for k in 3 6; do
	cat >"$WORK/perm$k.sql" <<-S
		\set qid random(1, 1000)
		SELECT fp FROM bench_q WHERE qid = :qid \gset
		SELECT id FROM fps WHERE hamming_near(fp, :fp, $k);
	S
done

use() {	# variant: put its library in place (a new file, never rewritten in place)
	cp "$WORK/$1.so" "$LIBDIR/simhash.so.new" && mv -f "$LIBDIR/simhash.so.new" "$LIBDIR/simhash.so"
}
run() {	# variant, k: prints transactions per second
	use "$1"
	pgbench -n -M prepared -c 2 -j 2 -T "$SECONDS_PER_RUN" -f "$WORK/perm$2.sql" \
		2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}

echo "== $RUNS rounds, variants alternating"
declare -A tps
for r in $(seq 1 "$RUNS"); do
	for k in 3 6; do
		for v in popcnt libgcc; do
			t=$(run $v $k)
			tps[$v.$k]="${tps[$v.$k]:-} $t"
			echo "   round $r k=$k $v: $t tps"
		done
	done
done

{
	echo "rows: $ROWS (+1% planted), pgbench -M prepared, 2 clients, $RUNS x ${SECONDS_PER_RUN}s, variants alternating"
	for k in 3 6; do
		python3 - "$k" "${tps[popcnt.$k]}" "${tps[libgcc.$k]}" <<-'PY'
			import statistics, sys
			k, a, b = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
			ma, mb = statistics.median(a), statistics.median(b)
			print(f"k = {k}: popcnt {ma:9.1f} tps (runs {', '.join(f'{x:.0f}' for x in a)})")
			print(f"       libgcc {mb:9.1f} tps (runs {', '.join(f'{x:.0f}' for x in b)})")
			print(f"       ratio popcnt / libgcc {ma / mb:.3f}")
		PY
	done
} | tee "$REPORT"
echo "report: $REPORT"
