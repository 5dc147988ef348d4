#!/usr/bin/env bash
# A layout that follows the rows (src/index/build/permgrow.c), on the paths it
# did not follow before: the racy insert whose subquery scans the index,
# and indexes on bit(n) codes.  Each case side by side with its baseline,
# as ratios, in one run.
#
#   bash test/bench/grow_bench.sh [ROWS]      (default 300000)
#
# (b) INSERT ... SELECT ... WHERE NOT EXISTS (SELECT 1 ... hamming_near(fp,
#     q, 3)) into a 64-bit index created empty, 40,000 rows in four
#     statements of 10,000; the last statement timed.  Skewed rows (two
#     blocks of the uniform layout zero, as skew_bench.sh) against uniform
#     ones: before, the index stayed in the uniform layout (the subquery's
#     scan kept it open twice) and the skewed rows took 8.1x as long.
# (a) i.  ROWS uniform bit(256) codes (1% planted near-copies) inserted
#         into an index created empty, then radius-31 queries (200 planted,
#         one statement of 200 index scans, RUNS rounds, median) against
#         the same index after REINDEX.  The model keeps 11 substrings up
#         to 16 million such rows: the layout does not change, the pages
#         split by inserts are what differs.
#     ii. A layout the model changes: bit(256) at radius 16, whose
#         substrings go from 17 at up to 32,768 rows to 14 at 60,000 and
#         12 at 300,000 rows; with the floor of the rows a layout is chosen
#         for lowered to 32,768 (simhash.wide_layout_min_rows, a setting
#         for tests: at the real floor, 2^20 rows, the model changes m only
#         past two million rows, too many for this machine), so that ROWS
#         rows change it.  Radius-16 queries through: the index created
#         empty that followed the rows; one created empty whose
#         substrings stay at 17 (WITH (substrings = 17), as every index
#         created empty was before); the index rebuilt on the rows.
# No assertion: a report, written to test/bench/results/grow_ROWS.txt
# (docs/reports/ keeps the runs quoted).  RUNS rounds (default 5).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-300000}
RUNS=${RUNS:-5}

simhash_bench_start grow "max_parallel_workers_per_gather = 0
jit = off
autovacuum = off
shared_buffers = 1GB
maintenance_work_mem = 512MB
max_wal_size = 4GB"

# seconds of the last statement, by psql's \timing
timed() {
	q -c '\timing on' "$@" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1 |
		awk '{ printf "%.3f\n", $1 / 1000 }'
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
layout() { q -At -c "SELECT count(*) || ' tables, prefixes of ' || min(prefix_bits) || '..' || max(prefix_bits) || ' bits, largest bucket ' || max(largest_bucket) FROM simhash_perm_info('$1')"; }

q -c "CREATE EXTENSION simhash" -c "
CREATE FUNCTION skewed_fp(g bigint) RETURNS simhash64 LANGUAGE sql IMMUTABLE
  AS \$\$ SELECT ((((hashint8(g)::bigint << 32) | (hashint8(-g - 1)::bigint & 4294967295))
                  & ~x'cccccccccccccccc'::bigint))::simhash64 \$\$;
CREATE FUNCTION uniform_fp(g bigint) RETURNS simhash64 LANGUAGE sql IMMUTABLE
  AS \$\$ SELECT (((hashint8(g)::bigint << 32) | (hashint8(-g - 1)::bigint & 4294967295)))::simhash64 \$\$;
CREATE FUNCTION rnd_mask(n int, d int) RETURNS text LANGUAGE sql VOLATILE AS
  \$\$ SELECT string_agg(b, '' ORDER BY random()) FROM (SELECT CASE WHEN g <= d THEN '1' ELSE '0' END AS b FROM generate_series(1, n) g) s \$\$;"

# (b) the racy insert
declare -A last info
for kind in skewed uniform; do
	for stmt in 1 2 3 4; do
		[ "$stmt" = 1 ] && q -c "DROP TABLE IF EXISTS racy; CREATE TABLE racy (id bigint, fp simhash64);
			CREATE INDEX racy_idx ON racy USING simhash_perm (fp);"
		s=$(timed -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" -c "
			INSERT INTO racy SELECT g, ${kind}_fp(g) FROM generate_series(($stmt - 1) * 10000 + 1, $stmt * 10000) g
			  WHERE NOT EXISTS (SELECT 1 FROM racy WHERE hamming_near(fp, ${kind}_fp(g), 3))")
	done
	last[$kind]=$s
	info[$kind]=$(layout racy_idx)
done

# (a) bit(256): data, queries near planted pairs (seeded)
q -c "SELECT setseed(0.25)" -c "CREATE TABLE src (id bigint, code bit(256));
INSERT INTO src SELECT g, ('x' || md5(g::text) || md5((-g)::text))::bit(256) FROM generate_series(1, $ROWS - $ROWS / 100) g;
INSERT INTO src SELECT $ROWS - $ROWS / 100 + i, c.code # rnd_mask(256, (i % 32)::int)::bit(256)
  FROM generate_series(1, $ROWS / 100) i JOIN src c ON c.id = 1 + (hashint8(i)::bigint & 2147483647) % ($ROWS - $ROWS / 100);
CREATE TABLE bench_q (qid int PRIMARY KEY, code bit(256));
INSERT INTO bench_q SELECT i, c.code # rnd_mask(256, (i % 16)::int)::bit(256)
  FROM generate_series(1, 200) i JOIN src c ON c.id = 1 + (hashint8(i)::bigint & 2147483647) % ($ROWS - $ROWS / 100);
ANALYZE src, bench_q;"

# median seconds of the 200 queries at radius r over table t, through its index
queries() {
	local t=$1 r=$2 all=""
	for run in $(seq 1 "$RUNS"); do
		all="$all $(timed -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" -c "
			SELECT count(*) FROM bench_q q, LATERAL (SELECT 1 FROM $t WHERE hamming_near($t.code, q.code, $r)) x")"
	done
	echo "$all" | median
}
answers() { q -At -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" -c "
	SELECT count(*) FROM bench_q q, LATERAL (SELECT 1 FROM $1 WHERE hamming_near($1.code, q.code, $2)) x"; }

# i. uniform bit(256), radius 31, at the real floor
q -c "CREATE TABLE a1 (id bigint, code bit(256)); CREATE INDEX a1_idx ON a1 USING simhash_perm (code)"
ins_a1=$(timed -c "INSERT INTO a1 SELECT * FROM src")
q -c "VACUUM ANALYZE a1"
info_a1=$(layout a1_idx); size_a1=$(q -At -c "SELECT pg_size_pretty(pg_relation_size('a1_idx'))")
n_a1=$(answers a1 31)
t_a1=$(queries a1 31)
q -c "REINDEX INDEX a1_idx"
info_a1r=$(layout a1_idx); size_a1r=$(q -At -c "SELECT pg_size_pretty(pg_relation_size('a1_idx'))")
n_a1r=$(answers a1 31)
t_a1r=$(queries a1 31)

# ii. bit(256) at radius 16, the floor lowered to 32,768 rows
FLOOR="SET simhash.wide_layout_min_rows = 32768"
q -c "$FLOOR" -c "CREATE TABLE a2 (id bigint, code bit(256)); CREATE INDEX a2_idx ON a2 USING simhash_perm (code) WITH (radius = 16);
	CREATE TABLE a2f (id bigint, code bit(256)); CREATE INDEX a2f_idx ON a2f USING simhash_perm (code) WITH (radius = 16, substrings = 17);"
info_a2e=$(layout a2_idx)
ins_a2=$(timed -c "$FLOOR" -c "INSERT INTO a2 SELECT * FROM src")
ins_a2f=$(timed -c "$FLOOR" -c "INSERT INTO a2f SELECT * FROM src")
q -c "VACUUM ANALYZE a2, a2f"
info_a2=$(layout a2_idx); info_a2f=$(layout a2f_idx)
n_a2=$(answers a2 16); n_a2f=$(answers a2f 16)
t_a2=$(queries a2 16)
t_a2f=$(queries a2f 16)
q -c "$FLOOR" -c "REINDEX INDEX a2_idx"
info_a2r=$(layout a2_idx)
n_a2r=$(answers a2 16)
t_a2r=$(queries a2 16)
n_seq=$(q -At -c "SELECT count(*) FROM bench_q q, LATERAL (SELECT 1 FROM src WHERE bit_hamming_distance(src.code, q.code) <= 16) x")

{
	echo "grow_bench: a layout that follows the rows; $ROWS bit(256) rows, medians of $RUNS rounds"
	echo "$("$PG_CONFIG" --version); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo
	echo "(b) INSERT ... WHERE NOT EXISTS (... hamming_near(fp, q, 3)) into a 64-bit index created empty,"
	echo "    40,000 rows in 4 statements; the last 10,000 timed"
	printf '  %-10s %8s s   layout after: %s\n' skewed "${last[skewed]}" "${info[skewed]}"
	printf '  %-10s %8s s   layout after: %s\n' uniform "${last[uniform]}" "${info[uniform]}"
	echo "  skewed / uniform: $(ratio "${last[skewed]}" "${last[uniform]}")"
	echo
	echo "(a) i. uniform bit(256), 200 radius-31 queries near planted pairs (one statement)"
	printf '  %-28s %8s s  %s rows  %s; %s\n' "created empty, grown" "$t_a1" "$n_a1" "$info_a1" "$size_a1"
	printf '  %-28s %8s s  %s rows  %s; %s\n' "rebuilt (REINDEX)" "$t_a1r" "$n_a1r" "$info_a1r" "$size_a1r"
	echo "  throughput grown / rebuilt: $(ratio "$t_a1r" "$t_a1")   (insert of the rows: $ins_a1 s)"
	echo
	echo "(a) ii. bit(256) at radius 16, simhash.wide_layout_min_rows = 32768: 200 radius-16 queries"
	echo "  created empty: $info_a2e"
	printf '  %-28s %8s s  %s rows  %s\n' "created empty, grown" "$t_a2" "$n_a2" "$info_a2"
	printf '  %-28s %8s s  %s rows  %s\n' "created empty, substrings=17" "$t_a2f" "$n_a2f" "$info_a2f"
	printf '  %-28s %8s s  %s rows  %s\n' "rebuilt (REINDEX)" "$t_a2r" "$n_a2r" "$info_a2r"
	echo "  sequential scan's answer: $n_seq rows"
	echo "  throughput grown / rebuilt: $(ratio "$t_a2r" "$t_a2");  fixed 17 / rebuilt: $(ratio "$t_a2r" "$t_a2f")"
	echo "  insert of the rows: grown $ins_a2 s, fixed 17 $ins_a2f s"
} | tee "$REPORT"
