--
-- The code store of simhash_perm indexes on bit(n) codes (permstore.c):
-- nearest-neighbour queries whose neighbours all lie far read it instead
-- of the table.  Every answer through the index equals a sequential
-- scan's, for LIMIT 1, 10, 100 and no LIMIT, NULL codes last; after
-- deletes and VACUUM; on an index built on an empty table and filled by
-- inserts; and the same answers from an index built without a store.
--
SET client_min_messages = warning;

-- n pseudo-random bits from a seed (md5, so every run has the same codes)
CREATE FUNCTION store_code(n int, seed int) RETURNS bit LANGUAGE sql IMMUTABLE AS $$
	SELECT ('x' || left(string_agg(md5(seed::text || ':' || i), '' ORDER BY i), n / 4))::bit varying
	FROM generate_series(1, (n + 127) / 128) i $$;

-- The index's answer and the sequential scan's to ORDER BY code <-> q
-- LIMIT n (NULL: all), compared: the distances in order, and the rows
-- nearer than the last distance (ties there may come in any order);
-- 'ok' or what differs
CREATE FUNCTION store_compare(tbl regclass, q bit, n int, qual int DEFAULT NULL)
	RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	qry text := format('SELECT id, code <-> $1 AS d FROM %s WHERE $3::int IS NULL OR hamming_near(code, $1, coalesce($3, 0)) ORDER BY code <-> $1 LIMIT $2', tbl);
	ai int[]; ad int[]; bi int[]; bd int[];
	last int;
BEGIN
	PERFORM set_config('enable_seqscan', 'off', true);
	PERFORM set_config('enable_bitmapscan', 'off', true);
	PERFORM set_config('enable_indexscan', 'on', true);
	PERFORM set_config('enable_sort', 'off', true);
	EXECUTE format('SELECT array_agg(id ORDER BY o), array_agg(d ORDER BY o) FROM (SELECT id, d, row_number() OVER () AS o FROM (%s) s) x', qry)
		INTO ai, ad USING q, n, qual;
	PERFORM set_config('enable_seqscan', 'on', true);
	PERFORM set_config('enable_indexscan', 'off', true);
	PERFORM set_config('enable_sort', 'on', true);
	EXECUTE format('SELECT array_agg(id ORDER BY o), array_agg(d ORDER BY o) FROM (SELECT id, d, row_number() OVER () AS o FROM (%s) s) x', qry)
		INTO bi, bd USING q, n, qual;
	IF ad IS DISTINCT FROM bd THEN
		RETURN 'distances differ';
	END IF;
	last := ad[cardinality(ad)];
	IF (SELECT array_agg(i ORDER BY i) FROM unnest(ai, ad) u(i, d) WHERE d < last OR (last IS NULL AND d IS NOT NULL))
	   IS DISTINCT FROM
	   (SELECT array_agg(i ORDER BY i) FROM unnest(bi, bd) u(i, d) WHERE d < last OR (last IS NULL AND d IS NOT NULL)) THEN
		RETURN 'rows differ';
	END IF;
	IF (SELECT count(DISTINCT i) FROM unnest(ai) i) <> coalesce(cardinality(ai), 0) THEN
		RETURN 'a row twice';
	END IF;
	RETURN 'ok';
END $$;

-- Every comparison for a table: queries (random codes, not in the table)
-- times LIMIT 1, 10, 100 and all; the results, counted
CREATE FUNCTION store_all(tbl regclass, width int, queries int)
	RETURNS TABLE (lim text, result text, n bigint) LANGUAGE sql AS $$
	SELECT coalesce(l::text, 'all'), store_compare(tbl, store_code(width, -q)::bit varying, l), count(*)
	FROM generate_series(1, queries) q, (VALUES (1), (10), (100), (NULL)) v(l)
	GROUP BY 1, 2 ORDER BY 1, 2 $$;

-- bit(256): 3,000 random codes, one in 30 NULL
CREATE TABLE st256 (id int, code bit(256));
INSERT INTO st256 SELECT g, CASE WHEN g % 30 = 0 THEN NULL ELSE store_code(256, g)::bit(256) END
	FROM generate_series(1, 3000) g;
CREATE INDEX st256_idx ON st256 USING simhash_perm (code);
ANALYZE st256;

-- the store: one row for its codes (-1), one for its NULL codes (-2)
SELECT table_no, levels, entries FROM simhash_perm_check('st256_idx', true) WHERE table_no < 1 ORDER BY table_no;
SELECT * FROM store_all('st256', 256, 4);
-- a qual and an order: rows within 110 bits of q, nearest first
SELECT store_compare('st256', store_code(256, -7)::bit(256), 10, 110) AS with_qual,
       store_compare('st256', store_code(256, -8)::bit(256), NULL, 115) AS with_qual_all;
-- a code of the table and its near-copies: the rings find them, and the
-- store what lies far
INSERT INTO st256 SELECT 10000 + g, code # (repeat('0', 256 - g) || repeat('1', g))::bit(256)
	FROM st256, generate_series(1, 12) g WHERE id = 17;
SELECT store_compare('st256', (SELECT code FROM st256 WHERE id = 17), l) AS near, count(*)
	FROM (VALUES (1), (10), (100), (NULL)) v(l) GROUP BY 1;

-- the bits counted without AVX-512's vector popcount (where the CPU has
-- it, scans use it): the same answers, distance for distance
CREATE FUNCTION store_distances(tbl regclass, q bit, n int) RETURNS int[]
	LANGUAGE plpgsql AS $$
DECLARE
	d int[];
BEGIN
	PERFORM set_config('enable_seqscan', 'off', true);
	EXECUTE format('SELECT array_agg(code <-> $1) FROM (SELECT code FROM %s ORDER BY code <-> $1 LIMIT $2) s', tbl)
		INTO d USING q, n;
	RETURN d;
END $$;
CREATE TEMP TABLE vp AS SELECT g, store_distances('st256', store_code(256, -g)::bit(256), 100) AS d
	FROM generate_series(1, 4) g;
SET simhash.store_vector_popcount = off;
SELECT count(*) FILTER (WHERE store_distances('st256', store_code(256, -g)::bit(256), 100) = d) AS same
	FROM vp;
RESET simhash.store_vector_popcount;

-- a far LIMIT 10 goes to the index
EXPLAIN (costs off) SELECT id FROM st256 ORDER BY code <-> store_code(256, -1)::bit(256) LIMIT 10;

-- deletes, VACUUM: dead entries leave the store, the answers stay exact
DELETE FROM st256 WHERE id % 7 = 0;
VACUUM st256;
SELECT table_no, entries FROM simhash_perm_check('st256_idx', true) WHERE table_no IN (0, -1, -2) ORDER BY table_no;
SELECT * FROM store_all('st256', 256, 3);

-- bit(1024): fewer rows, NULLs too
CREATE TABLE st1024 (id int, code bit(1024));
INSERT INTO st1024 SELECT g, CASE WHEN g % 25 = 0 THEN NULL ELSE store_code(1024, g)::bit(1024) END
	FROM generate_series(1, 800) g;
CREATE INDEX st1024_idx ON st1024 USING simhash_perm (code);
ANALYZE st1024;
SELECT table_no, entries FROM simhash_perm_check('st1024_idx', true) WHERE table_no < 0 ORDER BY table_no;
SELECT * FROM store_all('st1024', 1024, 3);
CREATE TEMP TABLE vp1024 AS SELECT g, store_distances('st1024', store_code(1024, -g)::bit(1024), 100) AS d
	FROM generate_series(1, 3) g;
SET simhash.store_vector_popcount = off;
SELECT count(*) FILTER (WHERE store_distances('st1024', store_code(1024, -g)::bit(1024), 100) = d) AS same
	FROM vp1024;
RESET simhash.store_vector_popcount;

-- an index built on an empty table: every row comes by insert, NULLs too
-- (the trees skip them, the store lists them), over several store pages
CREATE TABLE stempty (id int, code bit(256));
CREATE INDEX stempty_idx ON stempty USING simhash_perm (code);
SELECT table_no, pages, entries FROM simhash_perm_check('stempty_idx', true) WHERE table_no < 0 ORDER BY table_no;
INSERT INTO stempty SELECT g, CASE WHEN g % 11 = 0 THEN NULL ELSE store_code(256, g)::bit(256) END
	FROM generate_series(1, 2500) g;
ANALYZE stempty;
SELECT table_no, pages > 1 AS several_pages, entries FROM simhash_perm_check('stempty_idx', true) WHERE table_no < 0 ORDER BY table_no;
SELECT * FROM store_all('stempty', 256, 3);

-- bit varying with a width: a store too; a table of one row
CREATE TABLE stvar (id int, code bit varying);
INSERT INTO stvar VALUES (1, store_code(128, 1)), (2, NULL);
CREATE INDEX stvar_idx ON stvar USING simhash_perm (code) WITH (width = 128);
SELECT table_no, entries FROM simhash_perm_check('stvar_idx', true) WHERE table_no < 0 ORDER BY table_no;
SELECT store_compare('stvar', store_code(128, -1), NULL) AS one_row;

-- leading columns: a store too, its codes found by TID (a tenant's
-- nearest rows and its constraint's candidates), and the list of rows
-- whose code is NULL
CREATE TABLE sttenant (site int, code bit(256));
INSERT INTO sttenant SELECT g % 3, store_code(256, g)::bit(256) FROM generate_series(1, 300) g;
CREATE INDEX sttenant_idx ON sttenant USING simhash_perm (site, code);
SELECT count(*) AS store_rows FROM simhash_perm_check('sttenant_idx') WHERE table_no < 0;

-- (a change of layout keeps the store: perm_wide_growth checks it)

-- REINDEX writes the store anew, packed
REINDEX INDEX st256_idx;
SELECT table_no, entries FROM simhash_perm_check('st256_idx', true) WHERE table_no < 0 ORDER BY table_no;

DROP TABLE st256, st1024, stempty, stvar, sttenant;
DROP FUNCTION store_all(regclass, int, int), store_compare(regclass, bit, int, int), store_code(int, int);
