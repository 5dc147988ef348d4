--
-- Every scan of a simhash_perm index returns what a sequential scan of the
-- same query returns, NULL codes included, for every shape of qual, with
-- sequential scans off: one-column 64-bit and bit(n) indexes, and
-- (tenant, code) indexes of both kinds.  A scan with no condition on the
-- code and no ORDER BY on it (the tenant's equality alone, none at all) is
-- never planned through the index (src/planner/scanpaths.c): it would have to
-- read the table for the NULL codes.
--
SET client_min_messages = warning;
SELECT setseed(0.41);

-- same_rows(query): the query's rows by a sequential scan, through index
-- scans and through bitmap scans, compared as sorted sets; says which scan
-- each plan used (the index's name, or Seq Scan), and how many rows
CREATE FUNCTION same_rows(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	seq text;
	idx text;
	bmp text;
	n bigint;
	plan_idx text;
	plan_bmp text;
	line text;
	q text := format('SELECT count(*), md5(string_agg(r::text, '','' ORDER BY r::text)) FROM (%s) r', query);
BEGIN
	SET LOCAL enable_indexscan = off;
	SET LOCAL enable_bitmapscan = off;
	EXECUTE q INTO n, seq;
	SET LOCAL enable_seqscan = off;
	SET LOCAL enable_indexscan = on;
	EXECUTE q INTO n, idx;
	plan_idx := 'Seq Scan';
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line ~ 'Index' AND line ~ ' on ' THEN
			plan_idx := substring(line from 'using (\w+)');
		END IF;
	END LOOP;
	SET LOCAL enable_indexscan = off;
	SET LOCAL enable_bitmapscan = on;
	EXECUTE q INTO n, bmp;
	plan_bmp := 'Seq Scan';
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line ~ 'Bitmap Index Scan on' THEN
			plan_bmp := substring(line from 'Bitmap Index Scan on (\w+)');
		END IF;
	END LOOP;
	RETURN format('%s rows; index: %s %s; bitmap: %s %s', n,
				  plan_idx, CASE WHEN idx IS NOT DISTINCT FROM seq THEN 'same' ELSE 'DIFFERENT' END,
				  plan_bmp, CASE WHEN bmp IS NOT DISTINCT FROM seq THEN 'same' ELSE 'DIFFERENT' END);
END $$;

-- 1. (site, fp bigint): 200 rows in site 7, 29 of them with a NULL code,
--    other sites around it, NULL sites
CREATE TABLE q64 (id int, site int, fp bigint);
INSERT INTO q64 SELECT g, CASE WHEN g <= 200 THEN 7 ELSE g % 13 END,
	   CASE WHEN g % 7 = 3 AND g <= 200 THEN NULL ELSE pseudo_fp(g)::bigint END
  FROM generate_series(1, 2000) g;
INSERT INTO q64 VALUES (-1, NULL, 5), (-2, NULL, NULL), (-3, 7, pseudo_fp(12)::bigint # 3);
CREATE INDEX q64_site ON q64 USING simhash_perm (site, fp);
ANALYZE q64;
SELECT count(*) FILTER (WHERE site = 7) AS site7,
	   count(*) FILTER (WHERE site = 7 AND fp IS NULL) AS site7_null FROM q64;

SELECT same_rows('SELECT id FROM q64 WHERE site = 7');
SELECT same_rows('SELECT id FROM q64 WHERE site = 7 AND hamming_near(fp, ' || pseudo_fp(12)::bigint || ', 3)');
SELECT same_rows('SELECT id FROM q64 WHERE hamming_near(fp, ' || pseudo_fp(12)::bigint || ', 3)');
SELECT same_rows('SELECT id FROM q64 WHERE site = 7 AND fp IS NULL');
SELECT same_rows('SELECT id FROM q64 WHERE site IN (7, 8)');
SELECT same_rows('SELECT id FROM q64 WHERE site IS NULL');
SELECT same_rows('SELECT count(*) FROM q64');
SELECT same_rows('SELECT id, fp <-> ' || pseudo_fp(12)::bigint || '::simhash64 AS d FROM q64 WHERE site = 7 ORDER BY fp <-> ' || pseudo_fp(12)::bigint || '::simhash64');
-- (LIMIT: the distances, as ties at the fifth may come in any order)
SELECT same_rows('SELECT fp <-> ' || pseudo_fp(12)::bigint || '::simhash64 AS d FROM q64 WHERE site = 7 ORDER BY fp <-> ' || pseudo_fp(12)::bigint || '::simhash64 LIMIT 5');

-- the plans: the tenant's equality alone is a sequential scan, with the
-- code's condition it is the index
SET enable_seqscan = off;
SELECT * FROM plan('SELECT id FROM q64 WHERE site = 7');
SELECT * FROM plan('SELECT id FROM q64 WHERE site = 7 AND hamming_near(fp, 12345, 3)');
SELECT * FROM plan('SELECT count(*) FROM q64');

-- a DELETE of the tenant's rows reaches every one of them
BEGIN;
DELETE FROM q64 WHERE site = 7;
SELECT count(*) AS left_in_site7 FROM q64 WHERE site = 7;
ROLLBACK;
RESET enable_seqscan;

-- 2. (site, code bit(128)), with NULL codes in the tenant
CREATE TABLE qwide (id int, site int, code bit(128));
INSERT INTO qwide SELECT g, CASE WHEN g <= 200 THEN 7 ELSE g % 13 END,
	   CASE WHEN g % 7 = 3 AND g <= 200 THEN NULL ELSE ('x' || wide_random(128))::bit(128) END
  FROM generate_series(1, 2000) g;
CREATE INDEX qwide_site ON qwide USING simhash_perm (site, code);
ANALYZE qwide;
SELECT same_rows('SELECT id FROM qwide WHERE site = 7');
SELECT same_rows('SELECT id FROM qwide WHERE site = 7 AND hamming_near(code, (SELECT code FROM qwide WHERE id = 12), 40)');
SELECT same_rows('SELECT id FROM qwide WHERE hamming_near(code, (SELECT code FROM qwide WHERE id = 12), 40)');
SELECT same_rows('SELECT count(*) FROM qwide');
SELECT same_rows('SELECT id FROM qwide WHERE site = 7 ORDER BY code <-> (SELECT code FROM qwide WHERE id = 12)');
SELECT same_rows('SELECT id FROM qwide ORDER BY code <-> (SELECT code FROM qwide WHERE id = 12)');

-- 3. one-column indexes: bigint and bit(128), with NULL codes
CREATE TABLE qone (id int, fp bigint, code bit(128));
INSERT INTO qone SELECT g, CASE WHEN g % 9 = 0 THEN NULL ELSE pseudo_fp(g)::bigint END,
	   CASE WHEN g % 9 = 0 THEN NULL ELSE ('x' || wide_random(128))::bit(128) END
  FROM generate_series(1, 2000) g;
CREATE INDEX qone_fp ON qone USING simhash_perm (fp);
CREATE INDEX qone_code ON qone USING simhash_perm (code);
ANALYZE qone;
SELECT same_rows('SELECT count(*) FROM qone');
SELECT same_rows('SELECT id FROM qone WHERE hamming_near(fp, ' || pseudo_fp(12)::bigint || ', 5)');
SELECT same_rows('SELECT id FROM qone ORDER BY fp <-> ' || pseudo_fp(12)::bigint || '::simhash64');
SELECT same_rows('SELECT id FROM qone WHERE hamming_near(code, (SELECT code FROM qone WHERE id = 12), 30)');
SELECT same_rows('SELECT id FROM qone ORDER BY code <-> (SELECT code FROM qone WHERE id = 12)');

-- 4. a partial index chosen for its predicate alone would read the table:
--    not planned
CREATE INDEX qone_part ON qone USING simhash_perm (fp) WHERE id > 1000;
SELECT same_rows('SELECT id FROM qone WHERE id > 1000');
SELECT same_rows('SELECT id FROM qone WHERE id > 1000 AND hamming_near(fp, ' || pseudo_fp(1012)::bigint || ', 5)');

-- 5. fp = v on a bigint code: the family's equality, a scan at radius 0,
--    with a constant and with a parameter (a generic plan once crashed the
--    planner, which took the equality's value for a query of a radius)
CREATE TABLE qeq (id int, fp bigint);
INSERT INTO qeq SELECT g, CASE WHEN g % 50 = 0 THEN NULL ELSE pseudo_fp(g % 700)::bigint END
  FROM generate_series(1, 2000) g;
CREATE INDEX qeq_fp ON qeq USING simhash_perm (fp);
ANALYZE qeq;
SELECT same_rows('SELECT id FROM qeq WHERE fp = ' || pseudo_fp(12)::bigint);
SET plan_cache_mode = force_generic_plan;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
PREPARE qeq_eq(bigint) AS SELECT count(*) FROM qeq WHERE fp = $1;
EXPLAIN (COSTS OFF) EXECUTE qeq_eq(0);
SELECT (SELECT count(*) FROM qeq WHERE fp = pseudo_fp(12)::bigint) AS by_constant;
EXECUTE qeq_eq(pseudo_fp(12)::bigint);
EXECUTE qeq_eq(-1);
DEALLOCATE qeq_eq;
RESET enable_bitmapscan;
RESET enable_seqscan;
RESET plan_cache_mode;

-- 6. the forms people write first: fp <-> q <= k, fp <-> q < k, q <-> fp <= k,
--    k >= fp <-> q, hamming_distance(fp, q) <= k (both orders), on bigint,
--    simhash64 and bit(n) codes, planned on the index as hamming_near is
--    (src/planner/distancequals.c), the same rows as a sequential scan
SELECT pseudo_fp(12)::bigint AS q12 \gset
SELECT (SELECT code FROM qone WHERE id = 12)::text AS c12 \gset
-- near copies of row 12, one to eight bits away
INSERT INTO qone SELECT 3000 + i,
	   :q12 # (1::bigint << (i % 64)) # (1::bigint << ((i * 7) % 64)) # (CASE WHEN i % 3 = 0 THEN 255::bigint << i % 50 ELSE 0 END),
	   :'c12'::bit(128) # (B'1'::bit(128) >> i) # (B'11111'::bit(128) >> (i * 3 % 120))
  FROM generate_series(1, 60) i;
CREATE TABLE q64s (id int, fp simhash64);
INSERT INTO q64s SELECT id, fp::simhash64 FROM qone;
CREATE INDEX q64s_fp ON q64s USING simhash_perm (fp);
ANALYZE q64s;
ANALYZE qone;
SELECT same_rows('SELECT id FROM q64s WHERE fp <-> ' || :q12 || '::simhash64 <= 5');
SELECT same_rows('SELECT id FROM q64s WHERE fp <-> ' || :q12 || '::simhash64 < 5');
SELECT same_rows('SELECT id FROM q64s WHERE ' || :q12 || '::simhash64 <-> fp <= 5');
SELECT same_rows('SELECT id FROM q64s WHERE 5 >= fp <-> ' || :q12 || '::simhash64');
SELECT same_rows('SELECT id FROM q64s WHERE 5 > fp <-> ' || :q12 || '::simhash64');
SELECT same_rows('SELECT id FROM q64s WHERE hamming_distance(fp, ' || :q12 || '::simhash64) <= 5');
SELECT same_rows('SELECT id FROM q64s WHERE hamming_distance(' || :q12 || '::simhash64, fp) <= 5');
SELECT same_rows('SELECT id FROM q64s WHERE fp <-> ' || :q12 || '::bigint <= 5');
SELECT same_rows('SELECT id FROM qone WHERE hamming_distance(fp, ' || :q12 || '::bigint) <= 5');
SELECT same_rows('SELECT id FROM qone WHERE hamming_distance(' || :q12 || '::bigint, fp) < 6');
SELECT same_rows('SELECT id FROM q64 WHERE site = 7 AND hamming_distance(fp, ' || :q12 || '::bigint) <= 3');
SELECT same_rows('SELECT id FROM qone WHERE code <-> ''' || :'c12' || '''::bit(128) <= 30');
SELECT same_rows('SELECT id FROM qone WHERE ''' || :'c12' || '''::bit(128) <-> code < 31');
SELECT same_rows('SELECT id FROM qone WHERE bit_hamming_distance(code, ''' || :'c12' || '''::bit(128)) <= 30');
SELECT (SELECT code FROM qwide WHERE id = 12)::text AS w12 \gset
SELECT same_rows('SELECT id FROM qwide WHERE site = 7 AND code <-> ''' || :'w12' || '''::bit(128) <= 40');
SELECT same_rows('SELECT id FROM q64s WHERE fp <-> ' || :q12 || '::simhash64 <= 1');
SELECT same_rows('SELECT id FROM q64s WHERE fp <-> ' || :q12 || '::simhash64 < 2');
SELECT same_rows('SELECT id FROM q64s WHERE fp <-> ' || :q12 || '::simhash64 <= 2');
SELECT same_rows('SELECT id FROM qone WHERE code <-> ''' || :'c12' || '''::bit(128) < 6');
SELECT same_rows('SELECT id FROM qone WHERE code <-> ''' || :'c12' || '''::bit(128) <= 6');
-- bounds at and past the ends: every row (64, 1000, 128 bits), none (< 0)
SELECT same_rows('SELECT id FROM q64s WHERE fp <-> ' || :q12 || '::simhash64 <= 64');
SELECT same_rows('SELECT id FROM q64s WHERE fp <-> ' || :q12 || '::simhash64 <= 1000');
SELECT same_rows('SELECT id FROM q64s WHERE fp <-> ' || :q12 || '::simhash64 < 0');
SELECT same_rows('SELECT id FROM qone WHERE code <-> ''' || :'c12' || '''::bit(128) <= 500');
-- the plans: the index condition in place of the clause
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT * FROM plan('SELECT id FROM q64s WHERE fp <-> ' || :q12 || '::simhash64 < 4');
SELECT * FROM plan('SELECT id FROM qone WHERE hamming_distance(' || :q12 || '::bigint, fp) <= 3');
SELECT * FROM plan('SELECT id FROM qone WHERE code <-> B''' || repeat('1', 128) || ''' <= 3');
SELECT * FROM plan('SELECT id FROM q64 WHERE site = 7 AND hamming_distance(fp, 12345) <= 3');
-- a bound known only at run time (a generic plan): the radius is clamped
-- for the index, the clause rechecked; no bound raises an error
SET plan_cache_mode = force_generic_plan;
PREPARE qnat(simhash64, int) AS SELECT count(*) FROM q64s WHERE fp <-> $1 <= $2;
PREPARE qnatb(bit, int) AS SELECT count(*) FROM qone WHERE code <-> $1 < $2;
EXPLAIN (COSTS OFF) EXECUTE qnat(:q12::bigint::simhash64, 5);
EXPLAIN (COSTS OFF) EXECUTE qnatb(:'c12', 5);
SELECT k, (SELECT count(*) FROM q64s WHERE fp <-> :q12::simhash64 <= k) AS seq_count
  FROM unnest(ARRAY[-5, 0, 5, 64, 100]) k;
EXECUTE qnat(:q12::bigint::simhash64, -5);
EXECUTE qnat(:q12::bigint::simhash64, 0);
EXECUTE qnat(:q12::bigint::simhash64, 5);
EXECUTE qnat(:q12::bigint::simhash64, 64);
EXECUTE qnat(:q12::bigint::simhash64, 100);
SELECT k, (SELECT count(*) FROM qone WHERE code <-> :'c12'::bit(128) < k) AS seq_count
  FROM unnest(ARRAY[-1, 0, 31, 129, 2147483647]) k;
EXECUTE qnatb(:'c12', -1);
EXECUTE qnatb(:'c12', 0);
EXECUTE qnatb(:'c12', 31);
EXECUTE qnatb(:'c12', 129);
EXECUTE qnatb(:'c12', 2147483647);
DEALLOCATE qnat;
DEALLOCATE qnatb;
RESET plan_cache_mode;
-- not matched, as README.md says: a join clause (hamming_near is), a
-- clause under OR
SELECT * FROM plan('SELECT a.id FROM q64s a JOIN q64s b ON a.fp <-> b.fp <= 3 WHERE b.id = 12');
SELECT * FROM plan('SELECT a.id FROM q64s a JOIN q64s b ON hamming_near(a.fp, b.fp, 3) WHERE b.id = 12');
RESET enable_bitmapscan;
RESET enable_seqscan;
-- the row estimate is hamming_near's, not a third of the table
SELECT (SELECT count(*) FROM q64s) AS rows_in_table;
CREATE FUNCTION estimated_rows(query text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	j json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO j;
	RETURN (j -> 0 -> 'Plan' ->> 'Plan Rows')::float8;
END $$;
SELECT estimated_rows('SELECT id FROM q64s WHERE fp <-> ' || :q12 || '::simhash64 <= 3') =
	   estimated_rows('SELECT id FROM q64s WHERE hamming_near(fp, ' || :q12 || '::simhash64, 3)') AS same_estimate,
	   estimated_rows('SELECT id FROM q64s WHERE fp <-> ' || :q12 || '::simhash64 <= 3') < 10 AS few;
DROP FUNCTION estimated_rows(text);
DROP TABLE q64s;

DROP TABLE q64, qwide, qone, qeq;
DROP FUNCTION same_rows(text);
