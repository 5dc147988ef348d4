#!/usr/bin/env bash
# Inserts under a near-duplicate constraint whose index was created on an
# empty table, with skewed fingerprints, against the same inserts into an
# index built on the data, side by side in one run.  The index created
# empty chooses its layout again as the rows arrive (src/index/build/permgrow.c);
# before simhash 1.6 it kept the uniform layout and each insert's check
# read every row.
#
#   bash test/bench/skew_bench.sh [ROWS]      (default 20000)
#
# The fingerprints have two blocks of the layout an empty build takes (bits
# 63, 59, .., 3 and 62, 58, .., 2: two of the four 16-bit table prefixes)
# all zero, as fingerprints of a narrow corpus have nearly constant bits.
# Each table is loaded with ROWS such rows, then ROWS more are inserted in
# one INSERT ... SELECT ... ON CONFLICT DO NOTHING (the constraint checks
# each row; random 32-bit remainders put a few hundred pairs within 3
# bits, which are skipped), and timed:
#   empty     the constraint declared in CREATE TABLE: the index was built
#             on no rows, took the layout of uniform fingerprints, and
#             follows the rows from there
#   built     the constraint added after the first ROWS rows: the index
#             chose its layout from them
#   reindexed the empty table's index after REINDEX, for the next ROWS
#             rows
# Prints the times, the ratio empty/built and reindexed/built, each table's
# largest bucket (simhash_perm_info), and what VACUUM says of the index
# created empty.  RUNS rounds (default 3), medians.  No assertion:
# a report, written to test/bench/results/skew_ROWS.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-20000}
RUNS=${RUNS:-3}

simhash_bench_start skew "max_parallel_workers_per_gather = 0
jit = off
autovacuum = off"

# the skewed fingerprint of row g: blocks 0 and 1 of the uniform layout zero
q -c "CREATE EXTENSION simhash;
CREATE FUNCTION skewed_fp(g bigint) RETURNS simhash64 LANGUAGE sql IMMUTABLE
  AS \$\$ SELECT ((((hashint8(g)::bigint << 32) | (hashint8(-g - 1)::bigint & 4294967295))
                  & ~x'cccccccccccccccc'::bigint))::simhash64 \$\$;"

# seconds of one statement, by psql's \timing
timed() {
	q -c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | awk '{ printf "%.3f\n", $1 / 1000 }'
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

: >"$WORK/empty"; : >"$WORK/built"; : >"$WORK/reindexed"
for run in $(seq 1 "$RUNS"); do
	q -c "DROP TABLE IF EXISTS t_empty, t_built;
	CREATE TABLE t_empty (id bigint, fp simhash64,
	  CONSTRAINT t_empty_nd EXCLUDE USING simhash_perm (fp WITH ~=) WITH (radius = 3));
	INSERT INTO t_empty SELECT g, skewed_fp(g) FROM generate_series(1, $ROWS) g ON CONFLICT DO NOTHING;
	CREATE TABLE t_built (id bigint, fp simhash64);
	INSERT INTO t_built SELECT * FROM t_empty;
	ALTER TABLE t_built ADD CONSTRAINT t_built_nd EXCLUDE USING simhash_perm (fp WITH ~=) WITH (radius = 3);"
	q -c "VACUUM ANALYZE t_empty, t_built" 2>/dev/null
	timed "INSERT INTO t_empty SELECT g, skewed_fp(g) FROM generate_series($ROWS + 1, 2 * $ROWS) g ON CONFLICT DO NOTHING" >>"$WORK/empty"
	timed "INSERT INTO t_built SELECT g, skewed_fp(g) FROM generate_series($ROWS + 1, 2 * $ROWS) g ON CONFLICT DO NOTHING" >>"$WORK/built"
	if [ "$run" = 1 ]; then
		info_empty=$(q -A -F ' ' -t -c "SELECT table_no, largest_bucket, entries FROM simhash_perm_info('t_empty_nd')")
		info_built=$(q -A -F ' ' -t -c "SELECT table_no, largest_bucket, entries FROM simhash_perm_info('t_built_nd')")
		warning=$(psql -X -q -c "VACUUM t_empty" 2>&1 || true)
	fi
	q -c "REINDEX INDEX t_empty_nd; ANALYZE t_empty;"
	timed "INSERT INTO t_empty SELECT g, skewed_fp(g) FROM generate_series(2 * $ROWS + 1, 3 * $ROWS) g ON CONFLICT DO NOTHING" >>"$WORK/reindexed"
	q -c "DELETE FROM t_built WHERE id > 2 * $ROWS"
done

e=$(median <"$WORK/empty")
b=$(median <"$WORK/built")
r=$(median <"$WORK/reindexed")
{
	echo "skew_bench: $ROWS skewed rows inserted into a constraint's index holding $ROWS, $RUNS rounds, medians"
	echo "$("$PG_CONFIG" --version); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo
	printf '%-34s %8s s  (rounds: %s)\n' "index created empty" "$e" "$(tr '\n' ' ' <"$WORK/empty")"
	printf '%-34s %8s s  (rounds: %s)\n' "index built on the data" "$b" "$(tr '\n' ' ' <"$WORK/built")"
	printf '%-34s %8s s  (rounds: %s)\n' "index created empty, REINDEXed" "$r" "$(tr '\n' ' ' <"$WORK/reindexed")"
	echo
	echo "empty / built:     $(awk -v a="$e" -v b="$b" 'BEGIN { printf "%.2fx", a / b }')"
	echo "reindexed / built: $(awk -v a="$r" -v b="$b" 'BEGIN { printf "%.2fx", a / b }')"
	echo
	echo "largest bucket per table (table_no largest_bucket entries), round 1, before the timed inserts' REINDEX:"
	echo "  created empty:"; echo "$info_empty" | sed 's/^/    /'
	echo "  built on the data:"; echo "$info_built" | sed 's/^/    /'
	echo
	echo "VACUUM on the index created empty:"
	echo "$warning" | sed 's/^/  /'
} | tee "$REPORT"
