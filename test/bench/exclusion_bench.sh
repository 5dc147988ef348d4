#!/usr/bin/env bash
# The cost of a near-duplicate exclusion constraint, side by side in one run.
#
#   bash test/bench/exclusion_bench.sh [ROWS]      (default 1000000)
#
# Three tables start from the same ROWS pseudo-random fingerprints (fixed
# seed; the rare pair within 3 bits removed first, so the constraint can be
# added).  fp_of(g) is distinct for distinct g below 2^31 only (hashint8
# folds the high half of a bigint into the low one), so every stream of new
# rows draws its g from a range of its own below 2^31:
#   plain       a simhash_perm index (radius 3), no rule: stores copies
#   constraint  EXCLUDE USING simhash_perm (fp WITH ~=) WITH (radius = 3)
#   racy        a simhash_perm index and INSERT ... WHERE NOT EXISTS (SELECT
#               ... hamming_near(fp, v, 3)): the form the constraint replaces,
#               which two sessions can both pass
# Then, in RUNS rounds that take the tables in turn:
#   INSERT: pgbench, 2 clients, SECS seconds, one row a statement; a fifth of
#     the rows are 1-bit copies of stored rows (ON CONFLICT DO NOTHING on the
#     constraint table, WHERE NOT EXISTS on the racy one, plain INSERT on the
#     plain one);
#   COPY: 100,000 new rows without near-copies, by \copy into plain and
#     constraint (the check runs for every row and finds nothing);
#   batch: 100,000 rows, a fifth of them copies, by COPY into a temporary
#     table and one INSERT ... SELECT: ON CONFLICT DO NOTHING on the
#     constraint table, WHERE NOT EXISTS on the racy one.
# Reports medians, and the ratios the issue sets targets for: the constraint
# at least 0.6x the plain index's rate, and no slower than the racy form.
# No assertion: a report, written to test/bench/results/exclusion_ROWS.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-1000000}
RUNS=${RUNS:-3}
SECS=${SECS:-20}
BATCH=100000

simhash_bench_start exclusion "max_parallel_workers_per_gather = 0
jit = off
shared_buffers = 2GB"
exec > >(tee "$REPORT") 2>&1
echo "== exclusion_bench: $ROWS rows, $RUNS rounds, $("$PG_CONFIG" --version), commit $(git rev-parse --short HEAD)"

q -f - <<SQL
CREATE EXTENSION simhash;
CREATE FUNCTION fp_of(g bigint) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS \$\$ SELECT (hashint8(g)::bigint << 32) | (hashint8(-g - 1)::bigint & 4294967295) \$\$;
CREATE TABLE base (id bigint, fp bigint);
INSERT INTO base SELECT g, fp_of(g) FROM generate_series(1, $ROWS) g;
DELETE FROM base WHERE id IN (SELECT b FROM simhash_pairs('base', 'id', 'fp', 3) AS p(a bigint, b bigint, d int));
CREATE TABLE plain (id bigint, fp bigint);
CREATE TABLE constr (id bigint, fp bigint);
CREATE TABLE racy (id bigint, fp bigint);
INSERT INTO plain SELECT * FROM base;
INSERT INTO constr SELECT * FROM base;
INSERT INTO racy SELECT * FROM base;
SQL
t0=$(date +%s.%N)
q -c "CREATE INDEX plain_fp ON plain USING simhash_perm (fp) WITH (radius = 3)"
t1=$(date +%s.%N)
q -c "ALTER TABLE constr ADD CONSTRAINT constr_no_near_copies EXCLUDE USING simhash_perm (fp WITH ~=) WITH (radius = 3)"
t2=$(date +%s.%N)
q -c "CREATE INDEX racy_fp ON racy USING simhash_perm (fp) WITH (radius = 3)"
q -c "VACUUM ANALYZE plain" -c "VACUUM ANALYZE constr" -c "VACUUM ANALYZE racy" -c CHECKPOINT
python3 -c "print(f'   CREATE INDEX {$t1 - $t0:.1f} s; ADD CONSTRAINT (build and check every row) {$t2 - $t1:.1f} s')"

# pgbench scripts: one row a transaction; :copy <= 20 makes it a 1-bit copy
# of a stored row, otherwise a fresh fingerprint
pick='\set copy random(1, 100)
\set row random(1, '"$ROWS"')
\set bit random(0, 63)
\set fresh random(1000000000, 1999999999)
'
value="CASE WHEN :copy <= 20 THEN fp_of(:row) # (1::bigint << :bit) ELSE fp_of(:fresh) END"
printf '%sINSERT INTO plain VALUES (-1, %s);\n' "$pick" "$value" >"$WORK/plain.sql"
printf '%sINSERT INTO constr VALUES (-1, %s) ON CONFLICT DO NOTHING;\n' "$pick" "$value" >"$WORK/constr.sql"
printf '%sINSERT INTO racy SELECT -1, v FROM (SELECT %s AS v) s WHERE NOT EXISTS (SELECT 1 FROM racy WHERE hamming_near(fp, s.v, 3));\n' \
	"$pick" "$value" >"$WORK/racy.sql"

echo "== INSERT, one row a statement: pgbench -M prepared -c 2 -T $SECS, $RUNS rounds"
declare -A tps
for r in $(seq 1 "$RUNS"); do
	for t in plain constr racy; do
		out=$(cd "$WORK" && pgbench -n -M prepared -c 2 -j 2 -T "$SECS" -f "$WORK/$t.sql" 2>&1)
		v=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
		[ -n "$v" ] || { echo "$out"; exit 1; }
		tps[$t]="${tps[$t]:-} $v"
		echo "   round $r: $t $v rows/s"
	done
done

echo "== COPY and batches of $BATCH rows, $RUNS rounds"
declare -A secs
timed() {	# label, SQL...: seconds for psql to run the commands
	local a b
	a=$(date +%s.%N)
	q "${@:2}"
	b=$(date +%s.%N)
	python3 -c "print(f'{$b - $a:.3f}')"
}
for r in $(seq 1 "$RUNS"); do
	# clean rows: fresh fingerprints of round r; a batch: the next fresh
	# rows and, for a fifth, 1-bit copies of stored rows
	q -c "DROP TABLE IF EXISTS clean, batch" \
		-c "CREATE TABLE clean AS SELECT -2 AS id, fp_of(2010000000 + $r * 1000000 + g) AS fp FROM generate_series(1, $BATCH) g" \
		-c "CREATE TABLE batch AS SELECT -3 AS id, CASE WHEN g % 5 = 0 THEN fp_of(1 + abs(hashint8(g * $r)::bigint) % $ROWS) # (1::bigint << (g % 64)) ELSE fp_of(2050000000 + $r * 1000000 + g) END AS fp FROM generate_series(1, $BATCH) g" \
		-c "\\copy clean TO '$WORK/clean.copy'" -c "\\copy batch TO '$WORK/batch.copy'"
	for t in plain constr; do
		s=$(timed x -c "\\copy $t FROM '$WORK/clean.copy'")
		secs[copy.$t]="${secs[copy.$t]:-} $s"
		echo "   round $r: COPY into $t $s s"
	done
	s=$(timed x -c "CREATE TEMP TABLE staging (id bigint, fp bigint)" -c "\\copy staging FROM '$WORK/batch.copy'" \
		-c "INSERT INTO constr SELECT * FROM staging ON CONFLICT DO NOTHING")
	secs[batch.constr]="${secs[batch.constr]:-} $s"
	echo "   round $r: batch into constr (ON CONFLICT DO NOTHING) $s s"
	s=$(timed x -c "CREATE TEMP TABLE staging (id bigint, fp bigint)" -c "\\copy staging FROM '$WORK/batch.copy'" \
		-c "INSERT INTO racy SELECT * FROM staging s WHERE NOT EXISTS (SELECT 1 FROM racy WHERE hamming_near(racy.fp, s.fp, 3))")
	secs[batch.racy]="${secs[batch.racy]:-} $s"
	echo "   round $r: batch into racy (WHERE NOT EXISTS) $s s"
done

echo "== what each table holds"
q -c "SELECT 'plain' AS t, count(*) AS rows, count(*) FILTER (WHERE id < 0) AS added FROM plain
      UNION ALL SELECT 'constr', count(*), count(*) FILTER (WHERE id < 0) FROM constr
      UNION ALL SELECT 'racy', count(*), count(*) FILTER (WHERE id < 0) FROM racy"
q -At -c "SELECT 'pairs within 3 in constr: ' || count(*) FROM simhash_pairs('constr', 'id', 'fp', 3) AS p(a bigint, b bigint, d int)"

python3 - "$BATCH" "${tps[plain]}" "${tps[constr]}" "${tps[racy]}" \
	"${secs[copy.plain]}" "${secs[copy.constr]}" "${secs[batch.constr]}" "${secs[batch.racy]}" <<'PY'
import statistics, sys
batch = int(sys.argv[1])
ip, ic, ir, cp, cc, bc, br = ([float(x) for x in a.split()] for a in sys.argv[2:9])
m = statistics.median
print("== medians")
print(f"  INSERT rows/s: plain {m(ip):.0f}, constraint {m(ic):.0f}, racy {m(ir):.0f}")
print(f"    constraint / plain {m(ic) / m(ip):.2f}x (target >= 0.6x); constraint / racy {m(ic) / m(ir):.2f}x (target >= 1.0x)")
print(f"  COPY rows/s: plain {batch / m(cp):.0f}, constraint {batch / m(cc):.0f}; constraint / plain {m(cp) / m(cc):.2f}x (target >= 0.6x)")
print(f"  batch rows/s: constraint (ON CONFLICT DO NOTHING) {batch / m(bc):.0f}, racy (WHERE NOT EXISTS) {batch / m(br):.0f};"
      f" constraint / racy {m(br) / m(bc):.2f}x (target >= 1.0x)")
PY
