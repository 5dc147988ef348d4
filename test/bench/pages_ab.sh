#!/usr/bin/env bash
# A/B of two revisions of the index, each querying indexes it built itself,
# in one run: first for the index answering from its own pages (issue 47),
# then for the shape of src/index/ (issue 49: one descriptor, two engines).
#
#   bash test/bench/pages_ab.sh REV_A REV_B [ROWS] [WROWS]
#                              (defaults: 1000000 fingerprints, 250000 codes)
#
# The revisions' indexes differ on disk (since simhash 1.6 every index has a
# store record and a list of the rows without a code, which an index built
# before lacks), so each revision builds its own: the data (fixed seeds) is
# copied into a table per revision, fps_A / fps_B (ROWS 64-bit fingerprints
# plus 1% planted near-copies, simhash_bench_data) and codes_A / codes_B
# (WROWS bit(256) codes, 2% of them NULL, plus 1% planted near-copies), and
# each table's simhash_perm index is built with that revision's library in
# place; a btree on fps_A.fp is the baseline of an equality lookup.
#
# Queries, pgbench -M prepared, 2 clients, SECS seconds, RUNS rounds
# alternating the two builds (the library swapped, new connections):
#   k3        WHERE hamming_near(fp, q, 3), random fingerprints
#   knn10     ORDER BY fp <-> q LIMIT 10, random fingerprints
#   w31       WHERE hamming_near(code, q, 31), near a stored code
#   wknn10    ORDER BY code <-> q LIMIT 10, random codes (far: the store)
#   wnear10   ORDER BY code <-> q LIMIT 10 near a stored code (the rings,
#             each candidate's code read by its TID: the store, or before
#             issue 47 its row)
# KINDS chooses among them (default: all).
#   eq        the btree's WHERE fp = q, once
# Inserts: INSROWS (20000) bit(256) rows into a fresh indexed table, timed
# per round.  Sizes: every index.  Exactness first: for 50 queries of each
# kind both builds answer as the sequential scan does (counts, and the
# distances in order), else the run fails.  Reports medians and B / A.
#
# BUILDS=1: CREATE INDEX timed per round, alternating the builds: on the
# fingerprints serial (max_parallel_maintenance_workers = 0) and parallel
# (2), on the codes serial.  SAME_DISK=1, for two revisions that must write
# the same index: the indexes each wrote are compared page by page (less
# each page's LSN, pageinspect), and each build checks and queries the
# other's (simhash_perm_check with heapallindexed, and the exactness
# queries); the run fails on any difference.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

REV_A=$1
REV_B=$2
ROWS=${3:-1000000}
WROWS=${4:-250000}
RUNS=${RUNS:-3}
SECS=${SECS:-10}
INSROWS=${INSROWS:-20000}
OUT=${OUT:-test/bench/results}
mkdir -p "$OUT"
REPORT="$OUT/pages_ab_${ROWS}${REPORT_SUFFIX:-}.txt"

simhash_ab_start pages-ab "$REV_A" "$REV_B" 2GB

q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

echo "== data: $ROWS fingerprints, $WROWS bit(256) codes"
simhash_bench_data "$ROWS"
q <<SQL
CREATE FUNCTION code_of(g bigint) RETURNS bit(256) LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS \$\$ SELECT ('x' || md5(g::text) || md5((-g)::text))::bit(256) \$\$;
-- code_of(g) with n of its bits flipped, chosen by seed
CREATE FUNCTION code_flip(c bit(256), seed bigint, n int) RETURNS bit(256) LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS \$\$ SELECT c # (SELECT bit_or(set_bit(repeat('0', 256)::bit(256), (hashint8(seed * 64 + i) & 255)::int, 1))
                      FROM generate_series(1, n) i) \$\$;
CREATE TABLE codes (id bigint, code bit(256)) WITH (autovacuum_enabled = off);
INSERT INTO codes SELECT g, CASE WHEN g % 50 = 0 THEN NULL ELSE code_of(g) END
  FROM generate_series(1, $WROWS) g;
INSERT INTO codes SELECT $WROWS + g, code_flip(code_of(g * 7), g, 1 + (g % 20)::int)
  FROM generate_series(1, $WROWS / 100) g;
-- 1..200 near a stored code (0..25 bits flipped), 201..400 random
CREATE TABLE bench_qw (qid int PRIMARY KEY, code bit(256));
INSERT INTO bench_qw SELECT g, code_flip(code_of(g * 13), -g, (g % 26)::int) FROM generate_series(1, 200) g;
INSERT INTO bench_qw SELECT 200 + g, code_of(-g - 1000) FROM generate_series(1, 200) g;
-- a few fingerprints without a value
UPDATE fps SET fp = NULL WHERE id % 100000 = 7;
SQL
for v in A B; do
	q -c "CREATE TABLE fps_$v AS SELECT * FROM fps" -c "CREATE TABLE codes_$v AS SELECT * FROM codes"
done
q -c "CREATE INDEX fps_A_btree ON fps_A (fp)"
for v in A B; do
	simhash_ab_use $v
	# serial builds, which write the same pages every time (SAME_DISK compares them)
	q -c "SET max_parallel_maintenance_workers = 0" \
	  -c "CREATE INDEX fps_${v}_perm ON fps_$v USING simhash_perm (fp)" \
	  -c "CREATE INDEX codes_${v}_perm ON codes_$v USING simhash_perm (code)" \
	  -c "VACUUM ANALYZE fps_$v" -c "VACUUM ANALYZE codes_$v"
done

if [ "${SAME_DISK:-0}" = 1 ]; then
	echo "== on disk: the indexes the two builds wrote, page by page, less each page's LSN"
	q -c "CREATE EXTENSION IF NOT EXISTS pageinspect"
	for t in fps codes; do
		pages() { echo "(SELECT md5(string_agg(md5(substr(get_raw_page('${t}_$1_perm', b::int), 9)), '' ORDER BY b))
			FROM generate_series(0, pg_relation_size('${t}_$1_perm') / current_setting('block_size')::int - 1) b)"; }
		same=$(q -At -c "SELECT $(pages a) = $(pages b), pg_relation_size('${t}_a_perm') / current_setting('block_size')::int")
		echo "   ${t}: the same pages, and how many: $same" | tee -a "$WORK/same_disk"
		[ "${same%%|*}" = t ] || { echo "the two builds wrote different ${t} indexes" >&2; exit 1; }
	done
	for v in A B; do
		o=$([ $v = A ] && echo B || echo A)
		simhash_ab_use $v
		q -At -c "SELECT count(*) FROM simhash_perm_check('fps_${o}_perm', true)" \
		  -c "SELECT count(*) FROM simhash_perm_check('codes_${o}_perm', true)" >/dev/null
		echo "   build $v checks build $o's indexes (heapallindexed): sound" | tee -a "$WORK/same_disk"
	done
fi

# the query of a kind for table suffix v, row b of bench_q or bench_qw
answer_sql() {
	case $1 in
	k3) echo "(SELECT count(*)::text FROM fps_$2 WHERE hamming_near(fp, b.fp, 3))" ;;
	knn10) echo "(SELECT string_agg(coalesce(d::text, '-'), ',') FROM (SELECT fp <-> b.fp::simhash64 AS d FROM fps_$2 ORDER BY fp <-> b.fp::simhash64 LIMIT 10) x)" ;;
	w31) echo "(SELECT count(*)::text FROM codes_$2 WHERE hamming_near(code, b.code, 31))" ;;
	wknn10|wnear10) echo "(SELECT string_agg(d::text, ',') FROM (SELECT code <-> b.code AS d FROM codes_$2 ORDER BY code <-> b.code LIMIT 10) x)" ;;
	esac
}
qtable() { case $1 in w*) echo "bench_qw" ;; *) echo "bench_q" ;; esac; }
qrange() { case $1 in w31|wnear10) echo "1 200" ;; wknn10) echo "201 400" ;; *) echo "501 1000" ;; esac; }

echo "== exactness: 50 queries of each kind, both builds against the sequential scan"
KINDS=${KINDS:-k3 knn10 w31 wknn10 wnear10}
for v in A B; do
	simhash_ab_use $v
	tables=$v
	[ "${SAME_DISK:-0}" = 1 ] && tables="A B"
	for t in $tables; do
	for k in $KINDS; do
		read -r lo hi <<<"$(qrange $k)"
		wrong=$(q -At -c "SET enable_indexscan = off; SET enable_bitmapscan = off;
			CREATE TEMP TABLE truth AS SELECT qid, $(answer_sql $k $t) AS n FROM $(qtable $k) b
			 WHERE qid BETWEEN $lo AND $lo + 49;
			RESET enable_indexscan; RESET enable_bitmapscan; SET enable_seqscan = off; SET enable_sort = off;
			SELECT count(*) FROM truth t JOIN $(qtable $k) b USING (qid) WHERE n IS DISTINCT FROM $(answer_sql $k $t)")
		echo "   build $v on build $t's index, $k: $wrong of 50 differ"
		[ "$wrong" = 0 ] || { echo "build $v: $k differs from the sequential scan" >&2; exit 1; }
	done
	done
done

script() {	# kind suffix
	local k=$1 v=$2 lo hi query
	read -r lo hi <<<"$(qrange $k)"
	case $k in
	k3) query="SELECT count(*) FROM fps_$v WHERE hamming_near(fp, :fp, 3);" ;;
	knn10) query="SELECT id FROM fps_$v ORDER BY fp <-> :fp::bigint::simhash64 LIMIT 10;" ;;
	w31) query="SELECT count(*) FROM codes_$v WHERE hamming_near(code, :code::bit(256), 31);" ;;
	wknn10|wnear10) query="SELECT id FROM codes_$v ORDER BY code <-> :code::bit(256) LIMIT 10;" ;;
	eq) query="SELECT count(*) FROM fps_A WHERE fp = :fp;" ;;
	esac
	if [ "$(qtable $k)" = bench_qw ]; then
		printf '\\set qid random(%s, %s)\nSELECT code FROM bench_qw WHERE qid = :qid \\gset\n%s\n' "$lo" "$hi" "$query"
	else
		printf '\\set qid random(%s, %s)\nSELECT fp FROM bench_q WHERE qid = :qid \\gset\n%s\n' "$lo" "$hi" "$query"
	fi >"$WORK/${k}_$v.sql"
}
for v in A B; do for k in $KINDS; do script $k $v; done; done
script eq A
chmod 644 "$WORK"/*.sql

{
	echo "rows: $ROWS fingerprints (+1%, a few NULL), $WROWS bit(256) codes (+1%, 2% NULL); one index per build and table"
	echo "A: $REV_A ($(git rev-parse --short "$REV_A")), B: $REV_B ($(git rev-parse --short "$REV_B"))"
	echo "pgbench -M prepared, 2 clients, ${SECS}s runs, $RUNS alternating rounds; the btree equality once"
	[ -f "$WORK/same_disk" ] && cat "$WORK/same_disk"
	q -At -c "SELECT format('  size %s: %s MB', c.relname, round(pg_relation_size(c.oid) / 1048576.0, 1))
		FROM pg_class c WHERE relname IN ('fps_a_perm', 'fps_b_perm', 'codes_a_perm', 'codes_b_perm', 'fps_a_btree') ORDER BY 1"
} | tee "$REPORT"

simhash_ab_use B
simhash_pgbench "eq_btree" "$WORK/eq_A.sql" "$SECS" 1 "-c enable_seqscan=off" "$WORK" | tee -a "$REPORT"
for k in $KINDS; do
	echo "== $k" | tee -a "$REPORT"
	for r in $(seq 1 "$RUNS"); do
		for v in A B; do
			simhash_ab_use $v
			simhash_pgbench "${v}_${k}_r$r" "$WORK/${k}_$v.sql" "$SECS" 1 "" "$WORK" | tee -a "$REPORT"
		done
	done
done

echo "== inserts: $INSROWS bit(256) codes into an indexed table, per round" | tee -a "$REPORT"
for r in $(seq 1 "$RUNS"); do
	for v in A B; do
		simhash_ab_use $v
		s=$(q -At <<-SQL
			CREATE TABLE ins (id bigint, code bit(256));
			CREATE INDEX ON ins USING simhash_perm (code);
			INSERT INTO ins SELECT id, code FROM codes WHERE id <= 1000;
			SELECT extract(epoch FROM clock_timestamp())::numeric(20,6);
			INSERT INTO ins SELECT id, code FROM codes WHERE id > 1000 AND id <= 1000 + $INSROWS;
			SELECT extract(epoch FROM clock_timestamp())::numeric(20,6);
			DROP TABLE ins;
		SQL
		)
		echo "  ${v}_insert_r$r us_per_row $(echo "$s" | awk -v n="$INSROWS" 'NR==1{a=$1} NR==2{printf "%.2f", ($1-a)*1e6/n}')" | tee -a "$REPORT"
	done
done

if [ "${BUILDS:-0}" = 1 ]; then
	echo "== CREATE INDEX, seconds per round: fingerprints serial and parallel (2 workers), codes serial" | tee -a "$REPORT"
	for r in $(seq 1 "$RUNS"); do
		for v in A B; do
			simhash_ab_use $v
			s=$(q -At <<-SQL
				SET maintenance_work_mem = '1GB';
				SET max_parallel_maintenance_workers = 0;
				SELECT extract(epoch FROM clock_timestamp())::numeric(20,6);
				CREATE INDEX build_s ON fps_$v USING simhash_perm (fp);
				SELECT extract(epoch FROM clock_timestamp())::numeric(20,6);
				DROP INDEX build_s;
				SET max_parallel_maintenance_workers = 2;
				SELECT extract(epoch FROM clock_timestamp())::numeric(20,6);
				CREATE INDEX build_p ON fps_$v USING simhash_perm (fp);
				SELECT extract(epoch FROM clock_timestamp())::numeric(20,6);
				DROP INDEX build_p;
				SET max_parallel_maintenance_workers = 0;
				SELECT extract(epoch FROM clock_timestamp())::numeric(20,6);
				CREATE INDEX build_c ON codes_$v USING simhash_perm (code);
				SELECT extract(epoch FROM clock_timestamp())::numeric(20,6);
				DROP INDEX build_c;
			SQL
			)
			echo "  ${v}_build_r$r $(echo "$s" | awk 'NR%2==1{a=$1} NR%2==0{printf "%s %.3f ", (NR==2?"serial":NR==4?"parallel":"codes"), $1-a}')" | tee -a "$REPORT"
		done
	done
fi

python3 - "$REPORT" $KINDS <<'PY' | tee -a "$REPORT"
import re, statistics, sys
text = open(sys.argv[1]).read()
tps = {}
for m in re.finditer(r"^  (\w+)\s+tps\s+([0-9.]+)", text, re.M):
    tps.setdefault(re.sub(r"_r\d+$", "", m.group(1)), []).append(float(m.group(2)))
ins = {}
for m in re.finditer(r"^  ([AB])_insert_r\d+ us_per_row ([0-9.]+)", text, re.M):
    ins.setdefault(m.group(1), []).append(float(m.group(2)))
eq = tps["eq_btree"][0]
print("== medians (queries per second), B / A, and each against the btree's equality lookup")
for k in sys.argv[2:]:
    a = statistics.median(tps[f"A_{k}"])
    b = statistics.median(tps[f"B_{k}"])
    print(f"  {k}: A {a:.1f} ({a / eq:.2f}x btree), B {b:.1f} ({b / eq:.2f}x btree), B / A {b / a:.2f}x")
a = statistics.median(ins["A"])
b = statistics.median(ins["B"])
print(f"  inserts: A {a:.2f} us a row, B {b:.2f} us a row, B / A {b / a:.2f}x")
builds = {}
for m in re.finditer(r"^  ([AB])_build_r\d+ (.*)$", text, re.M):
    f = m.group(2).split()
    for name, secs in zip(f[0::2], f[1::2]):
        builds.setdefault((m.group(1), name), []).append(float(secs))
for name in ("serial", "parallel", "codes"):
    if ("A", name) in builds:
        a = statistics.median(builds[("A", name)])
        b = statistics.median(builds[("B", name)])
        what = {"serial": "CREATE INDEX serial", "parallel": "CREATE INDEX parallel",
                "codes": "CREATE INDEX on the codes"}[name]
        print(f"  {what}: A {a:.2f} s, B {b:.2f} s, B / A {b / a:.2f}x")
PY
echo "report: $REPORT"
