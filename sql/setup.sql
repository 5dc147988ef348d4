--
-- Fixtures the other regression tests share, created once, first (the
-- Makefile runs this test before the others; "upgrade", last, drops them
-- with the extension).
--
-- pseudo_fp(g): a fixed pseudo-random fingerprint for each integer (two
-- 32-bit hashes of it), so tests build the same tables on every run.
CREATE FUNCTION pseudo_fp(g bigint) RETURNS simhash64 LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((hashint8(g)::bigint << 32) | (hashint8(-g - 1)::bigint & 4294967295))::simhash64 $$;
-- flip_bits(fp, seed, n): fp with n pseudo-random bits flipped (fewer when
-- two draws pick the same bit), the same bits for the same seed.
CREATE FUNCTION flip_bits(fp simhash64, seed bigint, n int) RETURNS simhash64 LANGUAGE sql IMMUTABLE
  AS $$ SELECT (fp::bigint # coalesce((SELECT bit_or(1::bigint << ((hashint8(seed * 64 + i) & 63)::int))
                                         FROM generate_series(1, n) i), 0))::simhash64 $$;
SELECT pseudo_fp(1) AS one, pseudo_fp(2) AS two, flip_bits(pseudo_fp(1), 7, 3) <-> pseudo_fp(1) AS flipped;

-- wide_random(n): n random bits as hex digits, from md5 of random() (a test
-- that calls setseed first gets the same codes on every run); wide_mask(n,
-- d): a mask of n bits with d of them set, at random places.  For the
-- tests of bit(n) codes.
CREATE FUNCTION wide_random(n int) RETURNS text
	LANGUAGE sql VOLATILE AS $$
	SELECT left(string_agg(md5(random()::text), ''), (n + 3) / 4)
	  FROM generate_series(1, (n + 127) / 128)
$$;
CREATE FUNCTION wide_mask(n int, d int) RETURNS text
	LANGUAGE sql VOLATILE AS $$
	SELECT string_agg(b, '' ORDER BY random())
	  FROM (SELECT CASE WHEN g <= d THEN '1' ELSE '0' END AS b
			  FROM generate_series(1, n) g) s
$$;

-- plan(query): EXPLAIN (COSTS OFF) of query, less the lines that only some
-- PostgreSQL versions print (18: "Disabled: true" under a node of a type
-- the query disabled, and a WindowAgg's "Window:" definition), so that one
-- expected output serves every version
CREATE FUNCTION plan(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line !~ '^\s*(Disabled: true|Window: \w+ AS \(.*\))$' THEN
			RETURN NEXT line;
		END IF;
	END LOOP;
END $$;

-- shapes: the data that the index tests search, of four shapes and NULLs:
--  uniform: 20000 pseudo-random fingerprints
--  planted: 400 clusters of copies with 1-6 bits flipped
--  skewed:  6000 fingerprints whose top 24 bits and every 3rd bit are zero
--  identical: 3000 rows sharing one fingerprint, 2000 another
-- and shape_queries: members of each shape, near copies of them, random
-- points.  Tests that change them copy them first.
CREATE TABLE shapes (id serial, shape text, fp simhash64);
INSERT INTO shapes (shape, fp) SELECT 'uniform', pseudo_fp(g) FROM generate_series(1, 20000) g;
INSERT INTO shapes (shape, fp) SELECT 'planted', flip_bits(pseudo_fp(c), c * 100 + j, 1 + j % 6)
  FROM generate_series(1, 400) c, generate_series(1, 5) j;
INSERT INTO shapes (shape, fp) SELECT 'skewed', (pseudo_fp(g + 100000)::bigint & 1099511627775 & ~(x'9249249249249249'::bigint))::simhash64
  FROM generate_series(1, 6000) g;
INSERT INTO shapes (shape, fp) SELECT 'identical', '00000000000000ff' FROM generate_series(1, 3000);
INSERT INTO shapes (shape, fp) SELECT 'identical', 'ffffffff00000000' FROM generate_series(1, 2000);
INSERT INTO shapes (shape, fp) SELECT 'null', NULL FROM generate_series(1, 100);

CREATE TABLE shape_queries AS
  SELECT row_number() OVER () AS qid, fp FROM (
    SELECT fp FROM shapes WHERE shape = 'uniform' AND id % 2000 = 7
    UNION ALL SELECT flip_bits(fp, id, 2) FROM shapes WHERE shape = 'planted' AND id % 150 = 3
    UNION ALL SELECT fp FROM shapes WHERE shape = 'skewed' AND id % 1000 = 11
    UNION ALL SELECT flip_bits(fp, id, 1) FROM shapes WHERE shape = 'skewed' AND id % 1500 = 13
    UNION ALL SELECT '00000000000000ff'::simhash64
    UNION ALL SELECT '00000000000001ff'::simhash64
    UNION ALL SELECT 'ffffffff00000001'::simhash64
    UNION ALL SELECT '0000000000000000'::simhash64
    UNION ALL SELECT pseudo_fp(-g) FROM generate_series(1, 8) g) s;
SELECT shape, count(*) FROM shapes GROUP BY shape ORDER BY shape;
SELECT count(*) AS queries FROM shape_queries;

-- copy_shapes(): tables d and q, copies of shapes and shape_queries (with
-- d's ids continuing from the copy), for a test that changes them
CREATE FUNCTION copy_shapes() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	CREATE TABLE d (id serial, shape text, fp simhash64);
	INSERT INTO d SELECT * FROM shapes ORDER BY id;
	PERFORM setval('d_id_seq', (SELECT max(id) FROM d));
	CREATE TABLE q AS SELECT * FROM shape_queries;
END $$;
