#!/usr/bin/env bash
# Near-duplicate search within one tenant: an index on (site_id, fp) over a
# table of many tenants, beside a one-column index over a table that holds
# only that tenant's rows, in one run.
#
#   bash test/bench/tenant_bench.sh [ROWS]        (default 1000000)
#
# Data (fixed seeds): ROWS 64-bit fingerprints (fp_of, tools/common.sh) in
# 1,000 tenants of skewed sizes (site_id = floor(1000 * u^3) for a uniform
# u: tenant 0 holds about a tenth of the rows, half of the tenants fewer
# than a 1,000th), plus 1% planted near-copies (1 to 3 bits flipped) of
# rows of the same tenant.  For a large tenant (0) and a middling one
# (the tenant nearest ROWS / 2000 rows), a table of only its rows with a
# simhash_perm index on fp.
#
# Measured with pgbench (2 clients, -M prepared, SECS seconds, RUNS runs,
# median tps), 500 queries of the tenant's rows, its planted originals
# first:
#   r3_tenant / r3_alone     WHERE site_id = T AND hamming_near(fp, q, 3)
#                            against the one-tenant table's hamming_near
#   knn1_tenant / knn1_alone WHERE site_id = T ORDER BY fp <-> q' LIMIT 1,
#                            q' one bit from the row (its nearest is 1 away)
#   match_tenant / match_alone
#                            the same with hamming_near(fp, q', 3)
#   knn10_tenant / knn10_alone
#                            WHERE site_id = T ORDER BY fp <-> q LIMIT 10:
#                            far neighbours (14 to 17 bits in a large tenant)
# and the same radius query on the many-tenant table with a one-column
# index on fp instead (every tenant's rows are candidates).  Exactness: the ids of CHECK queries of each kind
# against a sequential scan.  Sizes and build times of both indexes.  No
# assertion: a report, test/bench/results/tenant_ROWS.txt (docs/reports/
# keeps the runs quoted).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-1000000}
SECS=${SECS:-10}
RUNS=${RUNS:-3}
CHECK=${CHECK:-50}

simhash_bench_start tenant "max_parallel_workers_per_gather = 0
jit = off
autovacuum = off
shared_buffers = 2GB
maintenance_work_mem = 1GB
work_mem = 64MB
max_wal_size = 8GB"

t0=$(date +%s)
q -f - <<SQL
CREATE EXTENSION simhash;
CREATE FUNCTION fp_of(g bigint) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS \$\$ SELECT (hashint8(g)::bigint << 32) | (hashint8(-g - 1)::bigint & 4294967295) \$\$;
CREATE FUNCTION site_of(g bigint) RETURNS int LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS \$\$ SELECT floor(1000 * power((hashint8(g * 3 + 1)::bigint & 2147483647) / 2147483648.0, 3))::int \$\$;
CREATE TABLE docs (id bigint, site_id int, fp bigint) WITH (autovacuum_enabled = off);
INSERT INTO docs SELECT g, site_of(g), fp_of(g) FROM generate_series(1, $ROWS) g;
INSERT INTO docs SELECT $ROWS + g, site_of(g * 97), fp_of(g * 97) # (1::bigint << (g % 64)) # ((g % 3)::bigint << 40)
  FROM generate_series(1, $ROWS / 100) g;
VACUUM ANALYZE docs;
SQL
mid=$(q -At -c "SELECT site_id FROM docs GROUP BY site_id ORDER BY abs(count(*) - $ROWS / 2000), site_id LIMIT 1")

{
	echo "tenant_bench: $ROWS rows in 1,000 tenants (+1% planted near-copies), $(date -u +%Y-%m-%d), $(nproc) cores"
	echo "command: bash test/bench/tenant_bench.sh $ROWS (SECS=$SECS RUNS=$RUNS CHECK=$CHECK)"
	echo "data loaded in $(( $(date +%s) - t0 )) s"
	q -At -c "SELECT 'rows of tenant 0: ' || count(*) FILTER (WHERE site_id = 0) || ', of tenant $mid: ' || count(*) FILTER (WHERE site_id = $mid) || ', tenants: ' || count(DISTINCT site_id) FROM docs"
} | tee "$REPORT"

build() {	# name sql
	local s e
	s=$(date +%s.%N)
	q -c "$2"
	e=$(date +%s.%N)
	printf '  %-34s %8.1f s  %8.1f MB\n' "$1" "$(echo "$e - $s" | bc)" \
		"$(q -At -c "SELECT pg_relation_size('$1') / 1048576.0")" | tee -a "$REPORT"
}
echo "builds:" | tee -a "$REPORT"
build docs_site_fp "CREATE INDEX docs_site_fp ON docs USING simhash_perm (site_id, fp)"
for t in 0 "$mid"; do
	q -c "CREATE TABLE alone_$t AS SELECT * FROM docs WHERE site_id = $t"
	q -c "VACUUM ANALYZE alone_$t"
	build "alone_${t}_fp" "CREATE INDEX alone_${t}_fp ON alone_$t USING simhash_perm (fp)"
	# the planted originals of the tenant (their near-copies are there),
	# then its other rows: 500 queries
	q -c "CREATE TABLE q_$t AS SELECT row_number() OVER (ORDER BY planted DESC, id) AS qid, fp
		   FROM (SELECT id, fp, id % 97 = 0 AND id / 97 <= $ROWS / 100 AS planted
				   FROM docs WHERE site_id = $t AND id <= $ROWS ORDER BY planted DESC, id LIMIT 500) s"
done
q -c "ANALYZE"

echo "exactness ($CHECK queries of each kind against a sequential scan):" | tee -a "$REPORT"
for t in 0 "$mid"; do
	q -At -f - <<SQL | tee -a "$REPORT"
CREATE FUNCTION ids(t int, f bigint, by_index bool, knn bool) RETURNS bigint[] LANGUAGE plpgsql AS \$\$
DECLARE r bigint[];
BEGIN
	PERFORM set_config('enable_seqscan', (NOT by_index)::text, true);
	PERFORM set_config('enable_indexscan', by_index::text, true);
	PERFORM set_config('enable_bitmapscan', by_index::text, true);
	PERFORM set_config('enable_sort', (NOT by_index)::text, true);
	IF knn THEN
		SELECT array_agg(d) INTO r FROM (SELECT fp <-> f::simhash64 AS d FROM docs WHERE site_id = t
		 ORDER BY fp <-> f::simhash64 LIMIT 10) s;
	ELSE
		SELECT array_agg(id ORDER BY id) INTO r FROM docs WHERE site_id = t AND hamming_near(fp, f, 3);
	END IF;
	RETURN r;
END \$\$;
SELECT '  tenant $t: radius 3: ' || count(*) FILTER (WHERE ids($t, fp, true, false) IS DISTINCT FROM ids($t, fp, false, false))
	   || ' mismatches in ' || count(*) || ', ' || sum(cardinality(ids($t, fp, false, false))) || ' matches; LIMIT 10: '
	   || count(*) FILTER (WHERE ids($t, fp, true, true) IS DISTINCT FROM ids($t, fp, false, true)) || ' mismatches'
  FROM q_$t WHERE qid <= $CHECK;
DROP FUNCTION ids;
SQL
done

echo "throughput (pgbench, 2 clients, ${SECS} s x ${RUNS}, median tps):" | tee -a "$REPORT"
script() {	# file tenant query
	printf '\\set qid random(1, %s)\nSELECT fp FROM q_%s WHERE qid = :qid \\gset\n%s\n' \
		"$(q -At -c "SELECT count(*) FROM q_$2")" "$2" "$3" >"$1"
}
declare -A tps
run() {	# name tenant query [pgoptions]
	local line
	script "$WORK/$1.sql" "$2" "$3"
	line=$(simhash_pgbench "$1" "$WORK/$1.sql" "$SECS" "$RUNS" "${4:-}" "$WORK")
	echo "$line" | tee -a "$REPORT"
	tps[$1]=$(echo "$line" | awk '{print $3}')
}
for t in 0 "$mid"; do
	run "r3_tenant_$t" "$t" "SELECT id FROM docs WHERE site_id = $t AND hamming_near(fp, :fp, 3);"
	run "r3_alone_$t" "$t" "SELECT id FROM alone_$t WHERE hamming_near(fp, :fp, 3);"
	# the near-copy question: the nearest row to a new text one bit from a
	# stored one, and the same within radius 3
	run "knn1_tenant_$t" "$t" "SELECT id FROM docs WHERE site_id = $t ORDER BY fp <-> ((:fp::bigint # 1))::simhash64 LIMIT 1;"
	run "knn1_alone_$t" "$t" "SELECT id FROM alone_$t ORDER BY fp <-> ((:fp::bigint # 1))::simhash64 LIMIT 1;"
	run "match_tenant_$t" "$t" "SELECT id FROM docs WHERE site_id = $t AND hamming_near(fp, :fp::bigint # 1, 3) ORDER BY fp <-> ((:fp::bigint # 1))::simhash64 LIMIT 1;"
	run "match_alone_$t" "$t" "SELECT id FROM alone_$t WHERE hamming_near(fp, :fp::bigint # 1, 3) ORDER BY fp <-> ((:fp::bigint # 1))::simhash64 LIMIT 1;"
	# a stored row's ten nearest: far neighbours (14 to 17 bits in a
	# tenant of a million rows)
	run "knn10_tenant_$t" "$t" "SELECT id FROM docs WHERE site_id = $t ORDER BY fp <-> (:fp::bigint)::simhash64 LIMIT 10;"
	run "knn10_alone_$t" "$t" "SELECT id FROM alone_$t ORDER BY fp <-> (:fp::bigint)::simhash64 LIMIT 10;"
done
build docs_fp "CREATE INDEX docs_fp ON docs USING simhash_perm (fp)"
q -c "DROP INDEX docs_site_fp"
run "r3_fp_only_$mid" "$mid" "SELECT id FROM docs WHERE site_id = $mid AND hamming_near(fp, :fp, 3);"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3fx", a / b }'; }
{
	echo "ratios (many-tenant index over the one-tenant table's index; goal: close to 1):"
	for t in 0 "$mid"; do
		echo "  tenant $t: radius 3 $(ratio "${tps[r3_tenant_$t]}" "${tps[r3_alone_$t]}")," \
			"LIMIT 1 near a row $(ratio "${tps[knn1_tenant_$t]}" "${tps[knn1_alone_$t]}")," \
			"radius 3 + LIMIT 1 $(ratio "${tps[match_tenant_$t]}" "${tps[match_alone_$t]}")," \
			"LIMIT 10 of a row $(ratio "${tps[knn10_tenant_$t]}" "${tps[knn10_alone_$t]}")"
	done
	echo "  tenant $mid radius 3 through an index on fp alone: $(ratio "${tps[r3_fp_only_$mid]}" "${tps[r3_alone_$mid]}") the one-tenant table"
} | tee -a "$REPORT"
