--
-- The layout of an index on bit(n) codes follows the rows (permgrow.c): an
-- index created empty is laid out for 2^20 rows, and past that, whenever
-- the model (permwidelayout.c) would cut the codes into another number of
-- substrings for the rows the index holds, the tables are written anew in
-- that layout and the metapage switches.  The tests lower the floor of
-- the rows a layout is chosen for (simhash.wide_layout_min_rows, for
-- tests) so that a few thousand rows change it; answers stay those of a
-- sequential scan, and the index ends as one built on its rows.
--
SET client_min_messages = warning;
SET simhash.wide_layout_min_rows = 1000;
SELECT setseed(0.61);

-- The ids within r of q, through the index or by a sequential scan
CREATE FUNCTION grown_near(tbl regclass, q bit, r int, by_index bool)
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

-- Queries at each radius whose answer through the index differs
CREATE FUNCTION grown_compare(tbl regclass, queries bit[], radii int[])
	RETURNS TABLE (radius int, queries int, matches bigint, mismatches int)
	LANGUAGE sql AS $$
	SELECT r, count(*)::int,
		   sum(coalesce(cardinality(grown_near(tbl, q, r, false)), 0)),
		   count(*) FILTER (WHERE grown_near(tbl, q, r, true) IS DISTINCT FROM
										grown_near(tbl, q, r, false))::int
	  FROM unnest(queries) q, unnest(radii) r
	 GROUP BY r ORDER BY r
$$;

-- The distances of the 10 nearest rows, through the index or sorted
CREATE FUNCTION grown_knn(tbl regclass, q bit, by_index bool)
	RETURNS int[] LANGUAGE plpgsql AS $$
DECLARE
	d int[];
BEGIN
	PERFORM set_config('enable_seqscan', (NOT by_index)::text, true);
	PERFORM set_config('enable_indexscan', by_index::text, true);
	PERFORM set_config('enable_bitmapscan', 'false', true);
	PERFORM set_config('enable_sort', (NOT by_index)::text, true);
	EXECUTE format('SELECT array_agg(dist) FROM (SELECT code <-> $1 AS dist FROM %s ORDER BY code <-> $1 LIMIT 10) s', tbl)
		INTO d USING q;
	RETURN d;
END $$;

-- The layout as simhash_perm_info shows it: substrings and their widths
CREATE FUNCTION grown_layout(idx regclass) RETURNS text LANGUAGE sql AS $$
	SELECT count(*) || ' substrings of ' || min(prefix_bits) || '..' || max(prefix_bits) || ' bits'
	  FROM simhash_perm_info(idx)
$$;

-- 1. bit(256), the default radius (32): created empty, then 24,000 random
-- codes and 800 near-copies of them at 0 to 39 bits
CREATE TABLE g256 (id int, code bit(256));
CREATE INDEX g256_idx ON g256 USING simhash_perm (code);
SELECT grown_layout('g256_idx') AS created_empty;
INSERT INTO g256 SELECT g, ('x' || wide_random(256))::bit(256) FROM generate_series(1, 24000) g;
INSERT INTO g256 SELECT 30000 + id, code # wide_mask(256, id % 40)::bit(256) FROM g256 WHERE id <= 800;
SELECT grown_layout('g256_idx') AS grown;
SELECT min(entries) = 24800 AND max(entries) = 24800 AS every_row_in_every_table
  FROM simhash_perm_info('g256_idx');
SELECT count(*) AS tables_checked FROM simhash_perm_check('g256_idx', true) WHERE table_no >= 0;
-- the code store stays through the changes of layout, every row in it
SELECT table_no, entries FROM simhash_perm_check('g256_idx', true) WHERE table_no < 0 ORDER BY table_no;
SELECT * FROM grown_compare('g256', ARRAY(SELECT code FROM g256 WHERE id IN (1, 17, 301, 799, 30005, 30039)),
	'{0,5,16,31,32,40,64,120}');
SELECT count(*) FILTER (WHERE grown_knn('g256', code, true) IS DISTINCT FROM grown_knn('g256', code, false)) AS knn_mismatches
  FROM g256 WHERE id IN (2, 30010, 30033);
-- the layout is the one a build on these rows chooses; the pages of the
-- earlier layouts lie before the current one's (VACUUM passes them by)
SELECT grown_layout('g256_idx') AS grown_layout \gset
SELECT pg_relation_size('g256_idx') AS grown_size \gset
VACUUM g256;
SELECT count(*) AS tables_checked FROM simhash_perm_check('g256_idx', true) WHERE table_no >= 0;
REINDEX INDEX g256_idx;
SELECT grown_layout('g256_idx') = :'grown_layout' AS as_rebuilt,
       :grown_size::float8 / pg_relation_size('g256_idx') < 3 AS earlier_layouts_small;

-- 2. bit(128) at radius 10: keys keep a tail
CREATE TABLE g128 (id int, code bit(128));
CREATE INDEX g128_idx ON g128 USING simhash_perm (code) WITH (radius = 10);
SELECT grown_layout('g128_idx') AS created_empty;
INSERT INTO g128 SELECT g, ('x' || wide_random(128))::bit(128) FROM generate_series(1, 12000) g;
INSERT INTO g128 SELECT 20000 + id, code # wide_mask(128, id % 13)::bit(128) FROM g128 WHERE id <= 500;
SELECT grown_layout('g128_idx') AS grown;
SELECT count(*) AS tables_checked FROM simhash_perm_check('g128_idx', true) WHERE table_no >= 0;
SELECT * FROM grown_compare('g128', ARRAY(SELECT code FROM g128 WHERE id IN (3, 250, 20001, 20008)),
	'{0,3,6,10,11,14,40}');
-- the layout was chosen at the last look, for twice the rows it saw: a
-- build chooses for the rows it sees, and may choose a neighbour
REINDEX INDEX g128_idx;
SELECT grown_layout('g128_idx') AS rebuilt;

-- 3. Substrings set by the reloption stay
CREATE TABLE gfixed (id int, code bit(128));
CREATE INDEX gfixed_idx ON gfixed USING simhash_perm (code) WITH (substrings = 5);
INSERT INTO gfixed SELECT g, ('x' || wide_random(128))::bit(128) FROM generate_series(1, 8000) g;
SELECT grown_layout('gfixed_idx') AS fixed;

-- 4. Leading equality columns: (tenant, 64-bit fingerprint); each entry
-- keeps the tenant's hash above its substring, and the new keys keep it
CREATE TABLE gten (site int, id int, fp simhash64);
CREATE INDEX gten_idx ON gten USING simhash_perm (site, fp) WITH (radius = 8);
SELECT grown_layout('gten_idx') AS created_empty;
INSERT INTO gten SELECT g % 5, g, pseudo_fp(g) FROM generate_series(1, 12000) g;
INSERT INTO gten SELECT site, 20000 + id, flip_bits(fp, id, id % 11) FROM gten WHERE id <= 600;
SELECT grown_layout('gten_idx') AS grown;
SELECT count(*) AS tables_checked FROM simhash_perm_check('gten_idx', true);
SET enable_seqscan = off; SET enable_bitmapscan = off;
CREATE TEMP TABLE gten_got AS
  SELECT q.site, q.fp AS q, k, t.id FROM gten q, unnest(ARRAY[0, 3, 8, 9, 12]) k,
	LATERAL (SELECT id FROM gten t WHERE t.site = q.site AND hamming_near(t.fp, q.fp, k)) t
   WHERE q.id % 97 = 0 OR q.id BETWEEN 20001 AND 20040;
RESET enable_seqscan; RESET enable_bitmapscan;
SET enable_indexscan = off; SET enable_bitmapscan = off;
CREATE TEMP TABLE gten_want AS
  SELECT q.site, q.fp AS q, k, t.id FROM gten q, unnest(ARRAY[0, 3, 8, 9, 12]) k,
	LATERAL (SELECT id FROM gten t WHERE t.site = q.site AND hamming_distance(t.fp, q.fp) <= k) t
   WHERE q.id % 97 = 0 OR q.id BETWEEN 20001 AND 20040;
RESET enable_indexscan; RESET enable_bitmapscan;
SELECT (SELECT count(*) FROM gten_want) > 500 AS many,
       (SELECT count(*) FROM (TABLE gten_got EXCEPT ALL TABLE gten_want) x) AS extra,
       (SELECT count(*) FROM (TABLE gten_want EXCEPT ALL TABLE gten_got) x) AS missing;

-- 5. The racy insert, whose subquery scans the index (here for a copy
-- of the code): the end of the statement takes the look its inserts
-- noted (permgrow.c)
CREATE TABLE gracy (id int, code bit(256));
CREATE INDEX gracy_idx ON gracy USING simhash_perm (code);
SELECT grown_layout('gracy_idx') AS created_empty \gset
SET enable_seqscan = off; SET enable_bitmapscan = off;
CREATE TEMP TABLE gracy_src AS SELECT g AS id, ('x' || wide_random(256))::bit(256) AS code FROM generate_series(1, 24000) g;
INSERT INTO gracy SELECT id, code FROM gracy_src s
  WHERE NOT EXISTS (SELECT 1 FROM gracy WHERE hamming_near(gracy.code, s.code, 0));
RESET enable_seqscan; RESET enable_bitmapscan;
SELECT grown_layout('gracy_idx') <> :'created_empty' AS layout_changed;
SELECT count(*) AS tables_checked FROM simhash_perm_check('gracy_idx', true) WHERE table_no >= 0;
SELECT * FROM grown_compare('gracy', ARRAY(SELECT code FROM gracy WHERE id IN (5, 4000, 23999)), '{0,31,64}');

RESET simhash.wide_layout_min_rows;
DROP TABLE g256, g128, gfixed, gten, gracy;
DROP FUNCTION grown_near(regclass, bit, int, bool), grown_compare(regclass, bit[], int[]),
	grown_knn(regclass, bit, bool), grown_layout(regclass);
