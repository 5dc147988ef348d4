--
-- simhash_perm on bit(n) codes (multi-index hashing): every answer through
-- the index equals a sequential scan's, for radii 0 to the width and for
-- nearest neighbours, on every data shape the 64-bit tests use.
--
SET client_min_messages = warning;

-- wide_random(n) and wide_mask(n, d) come from setup (seeded: setseed below)

-- The ids within r of q, through the index or by a sequential scan
CREATE FUNCTION wide_near(tbl regclass, q bit, r int, by_index bool)
	RETURNS int[] LANGUAGE plpgsql AS $$
DECLARE
	ids int[];
BEGIN
	PERFORM set_config('enable_seqscan', (NOT by_index)::text, true);
	PERFORM set_config('enable_indexscan', by_index::text, true);
	PERFORM set_config('enable_bitmapscan', by_index::text, true);
	EXECUTE format('SELECT array_agg(id ORDER BY id) FROM %s WHERE hamming_near(code, $1, $2)', tbl)
		INTO ids USING q, r;
	RETURN ids;
END $$;

-- The distances of the n nearest rows (with the rows' own distances: ties
-- may come in either order)
CREATE FUNCTION wide_knn(tbl regclass, q bit, n int, by_index bool, qual int DEFAULT NULL)
	RETURNS int[] LANGUAGE plpgsql AS $$
DECLARE
	d int[];
BEGIN
	PERFORM set_config('enable_seqscan', (NOT by_index)::text, true);
	PERFORM set_config('enable_indexscan', by_index::text, true);
	PERFORM set_config('enable_bitmapscan', 'false', true);
	PERFORM set_config('enable_sort', (NOT by_index)::text, true);
	IF qual IS NULL THEN
		EXECUTE format('SELECT array_agg(dist) FROM (SELECT code <-> $1 AS dist FROM %s ORDER BY code <-> $1 LIMIT $2) s', tbl)
			INTO d USING q, n;
	ELSE
		EXECUTE format('SELECT array_agg(dist) FROM (SELECT code <-> $1 AS dist FROM %s WHERE hamming_near(code, $1, $3) ORDER BY code <-> $1 LIMIT $2) s', tbl)
			INTO d USING q, n, qual;
	END IF;
	RETURN d;
END $$;

-- The index answers like the sequential scan for queries from qtbl at
-- each radius: the number of mismatching queries per radius
CREATE FUNCTION wide_compare(tbl regclass, queries bit[], radii int[])
	RETURNS TABLE (radius int, queries int, matches bigint, mismatches int)
	LANGUAGE sql AS $$
	SELECT r, count(*)::int,
		   sum(coalesce(cardinality(wide_near(tbl, q, r, false)), 0)),
		   count(*) FILTER (WHERE wide_near(tbl, q, r, true) IS DISTINCT FROM
										wide_near(tbl, q, r, false))::int
	  FROM unnest(queries) q, unnest(radii) r
	 GROUP BY r ORDER BY r
$$;

CREATE FUNCTION wide_knn_compare(tbl regclass, queries bit[], n int, qual int DEFAULT NULL)
	RETURNS TABLE (queries int, mismatches int)
	LANGUAGE sql AS $$
	SELECT count(*)::int,
		   count(*) FILTER (WHERE wide_knn(tbl, q, n, true, qual) IS DISTINCT FROM
										wide_knn(tbl, q, n, false, qual))::int
	  FROM unnest(queries) q
$$;

SELECT setseed(0.32);

-- 1. Uniform 256-bit codes (PDQ-like), 40,000 of them, and 400 planted
--    near-copies at distances 0..31 from the first 400
CREATE TABLE pdq (id int, code bit(256));
INSERT INTO pdq SELECT i, ('x' || wide_random(256))::bit(256)
  FROM generate_series(1, 40000) i;
INSERT INTO pdq SELECT 100000 + id,
	   code # wide_mask(256, id % 32)::bit(256)
  FROM pdq WHERE id <= 400;
INSERT INTO pdq VALUES (-1, NULL), (-2, NULL);
CREATE INDEX pdq_idx ON pdq USING simhash_perm (code);
ANALYZE pdq;

-- the layout: m substrings of 256 bits, at the default radius 256 / 8
SELECT count(*) AS substrings, min(prefix_bits), max(prefix_bits),
	   sum(prefix_bits) AS bits, min(radius) AS radius,
	   min(entries) = max(entries) AND min(entries) = 40400 AS every_row
  FROM simhash_perm_info('pdq_idx');

-- the planner takes the index for a near-duplicate radius, and a
-- sequential scan where the index would read nearly every row
EXPLAIN (costs off)
SELECT id FROM pdq WHERE hamming_near(code, B'1'::bit(256), 8);
EXPLAIN (costs off)
SELECT id FROM pdq WHERE hamming_near(code, B'0'::bit(256), 100);
EXPLAIN (costs off)
SELECT id FROM pdq ORDER BY code <-> B'1'::bit(256) LIMIT 1;

-- exact at every radius, queries with planted neighbours and without
SELECT * FROM wide_compare('pdq',
	ARRAY(SELECT code FROM pdq WHERE id IN (3, 17, 31, 250, 100007, 39999)),
	'{0,1,2,3,5,8,11,16,23,31,40,64,100,128,256}');

-- nearest neighbours: with a planted one (LIMIT 1, 2), random queries
-- (LIMIT 10: neighbours near 90 bits away), and within a radius
SELECT * FROM wide_knn_compare('pdq',
	ARRAY(SELECT code FROM pdq WHERE id IN (5, 29, 31, 100030)), 2);
SELECT * FROM wide_knn_compare('pdq',
	ARRAY(SELECT ('x' || wide_random(256))::bit(256) FROM generate_series(1, 3)), 10);
SELECT * FROM wide_knn_compare('pdq',
	ARRAY(SELECT code FROM pdq WHERE id IN (5, 29, 31, 300)), 5, 31);

-- every row, NULLs last, through the index
SET enable_seqscan = off;
SET enable_sort = off;
SELECT count(*) AS rows, count(*) FILTER (WHERE d IS NULL) AS nulls,
	   bool_and(d IS NULL OR d >= 0) AS ok
  FROM (SELECT code <-> (SELECT code FROM pdq WHERE id = 9) AS d FROM pdq
		ORDER BY code <-> (SELECT code FROM pdq WHERE id = 9)) s;
RESET enable_seqscan;
RESET enable_sort;

-- 2. Skewed codes: the first 192 bits constant, so 64 bits vary; and 300
--    copies of one code
CREATE TABLE skew (id int, code bit(256));
INSERT INTO skew SELECT i, (repeat('0', 192) || right(('x' || wide_random(64))::bit(64)::text, 64))::bit(256)
  FROM generate_series(1, 8000) i;
INSERT INTO skew SELECT 10000 + i, (SELECT code FROM skew WHERE id = 1)
  FROM generate_series(1, 300) i;
CREATE INDEX skew_idx ON skew USING simhash_perm (code);
SELECT * FROM wide_compare('skew',
	ARRAY(SELECT code FROM skew WHERE id IN (1, 2, 3)),
	'{0,1,4,8,16,31,64}');
SELECT * FROM wide_knn_compare('skew', ARRAY(SELECT code FROM skew WHERE id IN (1, 4)), 320);

-- 3. Widths: 64, 100 (not a multiple of 8), 128, 1024; an index created on
--    an empty table, filled by inserts (and VACUUMed after deletes)
CREATE TABLE w64 (id int, code bit(64));
CREATE INDEX w64_idx ON w64 USING simhash_perm (code);
INSERT INTO w64 SELECT i, ('x' || wide_random(64))::bit(64) FROM generate_series(1, 3000) i;
INSERT INTO w64 SELECT 5000 + id, code # wide_mask(64, id % 8)::bit(64) FROM w64 WHERE id <= 100;
SELECT * FROM wide_compare('w64', ARRAY(SELECT code FROM w64 WHERE id IN (1, 50)), '{0,2,5,7,20,64}');

CREATE TABLE w100 (id int, code bit(100));
INSERT INTO w100 SELECT i, ('x' || wide_random(104))::bit(104)::bit(100) FROM generate_series(1, 3000) i;
INSERT INTO w100 SELECT 5000 + id, code # wide_mask(100, id % 13)::bit(100) FROM w100 WHERE id <= 100;
CREATE INDEX w100_idx ON w100 USING simhash_perm (code) WITH (radius = 12);
SELECT * FROM wide_compare('w100', ARRAY(SELECT code FROM w100 WHERE id IN (1, 12, 99)), '{0,3,12,13,30,100}');
SELECT * FROM wide_knn_compare('w100', ARRAY(SELECT code FROM w100 WHERE id IN (12, 99)), 3);

CREATE TABLE w1024 (id int, code bit(1024));
CREATE INDEX w1024_idx ON w1024 USING simhash_perm (code);
INSERT INTO w1024 SELECT i, ('x' || wide_random(1024))::bit(1024) FROM generate_series(1, 2000) i;
INSERT INTO w1024 SELECT 5000 + id, code # wide_mask(1024, id * 3)::bit(1024) FROM w1024 WHERE id <= 60;
DELETE FROM w1024 WHERE id % 7 = 0;
VACUUM w1024;
SELECT * FROM wide_compare('w1024', ARRAY(SELECT code FROM w1024 WHERE id IN (1, 30, 59)), '{0,50,128,200,1024}');
SELECT * FROM wide_knn_compare('w1024', ARRAY(SELECT code FROM w1024 WHERE id IN (30, 59)), 2);
SELECT count(*) AS tables, sum(entries) / count(*) AS entries_each FROM simhash_perm_check('w1024_idx', true) WHERE table_no >= 0;

-- simhash128 text fingerprints in a bit(128) column
CREATE TABLE t128 (id int, code bit(128));
INSERT INTO t128 SELECT i, simhash128('document number ' || i || ' about ' || (i % 50)) FROM generate_series(1, 2000) i;
CREATE INDEX t128_idx ON t128 USING simhash_perm (code) WITH (radius = 6);
SELECT * FROM wide_compare('t128', ARRAY(SELECT code FROM t128 WHERE id IN (1, 77)), '{0,3,6,7,10,40,64,65,100,128}');
-- a small design radius: seven substrings of 18 and 19 bits, each key with
-- a 24-bit tail that rejects rows in the index (radius scans above);
-- nearest neighbours read every entry their rings meet
SELECT count(*) AS tables, min(prefix_bits), max(prefix_bits) FROM simhash_perm_info('t128_idx');
SELECT * FROM wide_knn_compare('t128', ARRAY(SELECT code FROM t128 WHERE id IN (1, 77, 1500)), 12);
SELECT * FROM wide_knn_compare('w64', ARRAY(SELECT code FROM w64 WHERE id IN (1, 50)), 6);

-- 4. An empty table: the index answers nothing, at any radius
CREATE TABLE empty_codes (id int, code bit(256));
CREATE INDEX empty_codes_idx ON empty_codes USING simhash_perm (code);
SET enable_seqscan = off;
SELECT count(*) FROM empty_codes WHERE hamming_near(code, B'0'::bit(256), 31);
SELECT count(*) FROM (SELECT id FROM empty_codes ORDER BY code <-> B'0'::bit(256) LIMIT 3) s;
RESET enable_seqscan;

-- check, heapallindexed included, and the same after a REINDEX
SELECT count(*) AS tables, min(entries), max(entries) FROM simhash_perm_check('pdq_idx', true) WHERE table_no >= 0;
REINDEX INDEX pdq_idx;
SELECT count(*) AS tables, min(entries), max(entries) FROM simhash_perm_check('pdq_idx', true) WHERE table_no >= 0;

-- the indexable form, written out
SET enable_seqscan = off;
SELECT count(*) FROM pdq WHERE code <@ hamming_within((SELECT code FROM pdq WHERE id = 3), 31);
RESET enable_seqscan;
SELECT hamming_within(B'0101', 2), 'x3f/2'::hamming_query, '0110/0'::hamming_query;
-- a quoted code is read as bit reads it (binary digits, or x and hex
-- digits), with B'...' and bit(n) columns resolving as before; a
-- hexadecimal code without its x is refused with the literal to write
SELECT hamming_within('0101', 2), hamming_within('x3f', 2), hamming_within('b0110', 0),
       hamming_within(B'0101'::bit varying, 2), hamming_within(x'3f', 2);
SELECT hamming_within('x8f3a5c01d2e4b697', 3)::text = hamming_within(x'8f3a5c01d2e4b697', 3)::text AS same;
SET enable_seqscan = off;
SELECT count(*) = (SELECT count(code) FROM pdq) AS every_code FROM pdq WHERE code <@ hamming_within('x' || repeat('f', 64), 256);
RESET enable_seqscan;

-- Bad input: a code of another width, a radius out of range, a query of
-- the wrong length or of no bits, an index option that does not suit the
-- codes
\set VERBOSITY default
SELECT count(*) FROM pdq WHERE hamming_near(code, B'1010', 1);
SET enable_seqscan = off;
SELECT count(*) FROM pdq WHERE hamming_near(code, B'1010', 1);
SELECT id FROM pdq ORDER BY code <-> B'1010' LIMIT 1;
SELECT count(*) FROM pdq WHERE hamming_near(code, B'0'::bit(256), 257);
SELECT count(*) FROM pdq WHERE hamming_near(code, B'0'::bit(256), -1);
RESET enable_seqscan;
SELECT hamming_within(B'0101', 5);
SELECT 'x3f'::hamming_query;
SELECT 'x/0'::hamming_query;
SELECT 'b/0'::hamming_query;
SELECT hamming_within(B'', 0);
SELECT hamming_within('8f3a5c01d2e4b697', 3);
SELECT hamming_within('b697e', 3);
SELECT hamming_within('B0x1', 3);
SELECT hamming_within('01z1', 3);
SELECT hamming_within('', 0);
SELECT count(*) FROM pdq WHERE code <@ hamming_within(B'', 0);
CREATE INDEX ON pdq USING simhash_perm (code) WITH (substrings = 3);
CREATE INDEX ON pdq USING simhash_perm (code) WITH (radius = 300);
CREATE INDEX ON pdq USING simhash_perm (code) WITH (max_distance = 31);
CREATE TABLE fp64 (fp simhash64);
CREATE INDEX ON fp64 USING simhash_perm (fp) WITH (substrings = 4);
-- a column of any width: the index takes the width of its first code
CREATE TABLE anywidth (code bit varying);
CREATE INDEX ON anywidth USING simhash_perm (code);
INSERT INTO anywidth VALUES (B'1010');
CREATE INDEX anywidth_idx ON anywidth USING simhash_perm (code);
INSERT INTO anywidth VALUES (B'10101');
SELECT code FROM anywidth;
\set VERBOSITY terse

-- The near-duplicate constraint on bit(n) codes: no two images within the
-- index's radius (reloption radius), checked on the rows themselves
CREATE TABLE photos (id int, pdq bit(256),
	EXCLUDE USING simhash_perm (pdq WITH ~=) WITH (radius = 31));
INSERT INTO photos SELECT id, code FROM pdq WHERE id <= 2000;
INSERT INTO photos SELECT 100000 + id, code # wide_mask(256, 31)::bit(256) FROM pdq WHERE id = 7;
INSERT INTO photos SELECT 100000 + id, code # wide_mask(256, 32)::bit(256) FROM pdq WHERE id = 8;
INSERT INTO photos SELECT 100000 + id, code # wide_mask(256, 5)::bit(256) FROM pdq WHERE id = 9
	ON CONFLICT DO NOTHING;
SELECT count(*), count(*) FILTER (WHERE id > 100000) AS copies FROM photos;
-- within one statement, and a code of another width
INSERT INTO photos VALUES (-1, B'1'::bit(256)), (-2, B'11'::bit(256));
INSERT INTO photos VALUES (-3, B'1010');
-- ~= in a query points to hamming_near; the radius cannot be raised by ALTER
SELECT count(*) FROM photos WHERE pdq ~= B'1'::bit(256);
ALTER INDEX photos_pdq_excl SET (radius = 40);
ALTER INDEX photos_pdq_excl SET (radius = 20);
REINDEX INDEX photos_pdq_excl;
INSERT INTO photos SELECT 200000 + id, code # wide_mask(256, 25)::bit(256) FROM pdq WHERE id = 10;
SELECT count(*) FROM photos;
-- a table that holds near-copies refuses the constraint
CREATE TABLE photos2 AS SELECT * FROM pdq WHERE id IN (1, 100001);
ALTER TABLE photos2 ADD EXCLUDE USING simhash_perm (code WITH ~=) WITH (radius = 31);

DROP TABLE pdq, skew, w64, w100, w1024, t128, empty_codes, fp64, anywidth, photos, photos2;
DROP FUNCTION wide_near(regclass, bit, int, bool),
	wide_knn(regclass, bit, int, bool, int), wide_compare(regclass, bit[], int[]),
	wide_knn_compare(regclass, bit[], int, int);
