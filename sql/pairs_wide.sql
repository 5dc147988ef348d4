--
-- simhash_pairs and simhash_clusters over bit(n) codes (pairswide.c): the
-- pairs equal a self-join's on every data shape, each pair once; the
-- clusters equal the connected components of those pairs; on bit(64)
-- both equal the 64-bit search's on the same values as bigint.
--
SET client_min_messages = warning;
SELECT setseed(0.34);

-- wide_random(n) and wide_mask(n, d) come from setup

-- simhash_pairs against the self-join: pairs of each, pairs in one only
-- (a pair twice in simhash_pairs counts as missing from the self-join)
CREATE FUNCTION pw_compare(tbl regclass, radius int)
	RETURNS TABLE (k int, pairs bigint, self_join bigint, differ bigint)
	LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format($q$
	WITH p AS (SELECT a, b, d FROM simhash_pairs(%1$L, 'id', 'code', %2$s)
					AS (a int, b int, d int)),
		 s AS (SELECT x.id AS a, y.id AS b, bit_count(x.code # y.code)::int AS d
				 FROM %1$s x JOIN %1$s y ON x.id < y.id
				WHERE bit_count(x.code # y.code) <= %2$s)
	SELECT %2$s, (SELECT count(*) FROM p), (SELECT count(*) FROM s),
		   (SELECT count(*) FROM ((TABLE p EXCEPT ALL TABLE s)
								  UNION ALL (TABLE s EXCEPT ALL TABLE p)) x)
	$q$, tbl, radius);
END $$;

-- simhash_clusters against the connected components of the self-join's
-- pairs, each row labelled by the smallest id it reaches
CREATE FUNCTION pw_clusters(tbl regclass, radius int)
	RETURNS TABLE (k int, rows bigint, clusters bigint, differ bigint)
	LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format($q$
	WITH RECURSIVE e AS (SELECT x.id AS a, y.id AS b
						   FROM %1$s x JOIN %1$s y ON x.id <> y.id
						  WHERE bit_count(x.code # y.code) <= %2$s),
		 r(id, reach) AS (SELECT a, a FROM e UNION SELECT r.id, e.b FROM r JOIN e ON e.a = r.reach),
		 comp AS (SELECT id, min(reach) AS cluster FROM r GROUP BY id),
		 c AS (SELECT key, cluster FROM simhash_clusters(%1$L, 'id', 'code', %2$s)
					AS (key int, cluster int))
	SELECT %2$s, (SELECT count(*) FROM c), (SELECT count(DISTINCT cluster) FROM c),
		   (SELECT count(*) FROM ((TABLE c EXCEPT ALL TABLE comp)
								  UNION ALL (TABLE comp EXCEPT ALL TABLE c)) x)
	$q$, tbl, radius);
END $$;

-- 1. PDQ-like: 3,000 uniform 256-bit codes, 300 near-copies at distances
--    0..39, 30 exact copies (three of a code), NULL codes
CREATE TABLE pw (id int, code bit(256));
INSERT INTO pw SELECT i, ('x' || wide_random(256))::bit(256)
  FROM generate_series(1, 3000) i;
INSERT INTO pw SELECT 10000 + id, code # wide_mask(256, id % 40)::bit(256)
  FROM pw WHERE id <= 300;
INSERT INTO pw SELECT 20000 + id, code FROM pw WHERE id <= 15;
INSERT INTO pw SELECT 30000 + id, code FROM pw WHERE id <= 15;
INSERT INTO pw VALUES (-1, NULL), (-2, NULL);

SELECT * FROM pw_compare('pw', 0);
SELECT * FROM pw_compare('pw', 1);
SELECT * FROM pw_compare('pw', 8);
SELECT * FROM pw_compare('pw', 31);
SELECT * FROM pw_compare('pw', 39);
SELECT * FROM pw_compare('pw', 88);
SELECT * FROM pw_clusters('pw', 31);

-- singletons: every row with a code, in exactly one cluster
SELECT count(*) AS rows, count(DISTINCT key) AS keys
  FROM simhash_clusters('pw', 'id', 'code', 31, singletons => true)
	AS (key int, cluster int);

-- the query form, and pairs within a tenant
SELECT count(*) AS pairs
  FROM simhash_pairs_query('SELECT id, code FROM pw WHERE id % 2 = 0', 31)
	AS (a int, b int, d int);
SELECT count(*) AS self_join
  FROM pw x JOIN pw y ON x.id < y.id
 WHERE x.id % 2 = 0 AND y.id % 2 = 0 AND bit_count(x.code # y.code) <= 31;
ALTER TABLE pw ADD COLUMN site int;
-- near-copies share their original's site, the copies of 30000 + id not
UPDATE pw SET site = ((id % 10000) + id / 30000) % 3;
WITH p AS (SELECT * FROM simhash_pairs('pw', 'id', 'code', 31, tenant => 'site')
				AS (a int, b int, d int)),
	 s AS (SELECT x.id AS a, y.id AS b, bit_count(x.code # y.code)::int AS d
			 FROM pw x JOIN pw y ON x.id < y.id AND x.site = y.site
			WHERE bit_count(x.code # y.code) <= 31)
SELECT (SELECT count(*) FROM p) AS pairs, (SELECT count(*) FROM s) AS self_join,
	   (SELECT count(*) FROM ((TABLE p EXCEPT ALL TABLE s)
							  UNION ALL (TABLE s EXCEPT ALL TABLE p)) x) AS differ;
SELECT count(DISTINCT site) AS sites_of_a_cluster
  FROM simhash_clusters('pw', 'id', 'code', 31, tenant => 'site')
	AS (key int, cluster int)
  JOIN pw ON pw.id = key
 GROUP BY cluster ORDER BY 1 DESC LIMIT 1;

-- 2. Small tables: every pair compared (no layout pays off), one row, none
CREATE TABLE pw_small (id int, code bit(256));
INSERT INTO pw_small SELECT id, code FROM pw WHERE id <= 20 OR id BETWEEN 10001 AND 10020;
SELECT * FROM pw_compare('pw_small', 31);
SELECT * FROM pw_compare('pw_small', 256);
DELETE FROM pw_small WHERE id <> 1;
SELECT * FROM pw_compare('pw_small', 31);
TRUNCATE pw_small;
SELECT * FROM pw_compare('pw_small', 31);

-- 3. bit(64) against the 64-bit search on the same values as bigint:
--    skewed codes (the first 40 bits shared), 200 copies of one code
CREATE TABLE pw64 (id int, code bit(64), fp bigint);
INSERT INTO pw64 (id, code)
SELECT i, (repeat('0', 40) || right(('x' || wide_random(64))::bit(64)::text, 24))::bit(64)
  FROM generate_series(1, 2500) i;
INSERT INTO pw64 (id, code) SELECT 5000 + i, (SELECT code FROM pw64 WHERE id = 1)
  FROM generate_series(1, 200) i;
INSERT INTO pw64 (id, code) SELECT 10000 + id, code # wide_mask(64, id % 9)::bit(64)
  FROM pw64 WHERE id <= 500;
UPDATE pw64 SET fp = code::bigint;
SELECT k,
	   (SELECT count(*) FROM simhash_pairs('pw64', 'id', 'code', k) AS (a int, b int, d int)) AS pairs,
	   (SELECT count(*) FROM ((SELECT * FROM simhash_pairs('pw64', 'id', 'code', k) AS (a int, b int, d int)
							   EXCEPT ALL
							   SELECT * FROM simhash_pairs('pw64', 'id', 'fp', k) AS (a int, b int, d int))
							  UNION ALL
							  (SELECT * FROM simhash_pairs('pw64', 'id', 'fp', k) AS (a int, b int, d int)
							   EXCEPT ALL
							   SELECT * FROM simhash_pairs('pw64', 'id', 'code', k) AS (a int, b int, d int))) x) AS differ
  FROM generate_series(0, 8, 2) k;
SELECT count(*) AS rows,
	   (SELECT count(*) FROM ((SELECT * FROM simhash_clusters('pw64', 'id', 'code', 3) AS (key int, cluster int)
							   EXCEPT ALL
							   SELECT * FROM simhash_clusters('pw64', 'id', 'fp', 3) AS (key int, cluster int))
							  UNION ALL
							  (SELECT * FROM simhash_clusters('pw64', 'id', 'fp', 3) AS (key int, cluster int)
							   EXCEPT ALL
							   SELECT * FROM simhash_clusters('pw64', 'id', 'code', 3) AS (key int, cluster int))) x) AS differ
  FROM simhash_clusters('pw64', 'id', 'code', 3) AS (key int, cluster int);

-- 4. A 1024-bit code, text keys: the pairs keep their keys
CREATE TABLE pw_text (id text, code bit(1024));
INSERT INTO pw_text SELECT 'doc ' || i, ('x' || wide_random(1024))::bit(1024)
  FROM generate_series(1, 200) i;
INSERT INTO pw_text SELECT 'copy of ' || id, code # wide_mask(1024, 100)::bit(1024)
  FROM pw_text WHERE id IN ('doc 7', 'doc 70');
SELECT * FROM simhash_pairs('pw_text', 'id', 'code', 150) AS (a text, b text, d int)
 ORDER BY a;

-- 5. Errors: a radius beyond the width, mixed widths, too little memory
SELECT * FROM simhash_pairs('pw', 'id', 'code', 257) AS (a int, b int, d int);
SELECT * FROM simhash_pairs('pw', 'id', 'code', -1) AS (a int, b int, d int);
SELECT * FROM simhash_pairs_query('SELECT id, code::bit(128) FROM pw', 129)
	AS (a int, b int, d int);
CREATE TABLE pw_mixed (id int, code varbit);
INSERT INTO pw_mixed VALUES (1, B'1010'), (2, B'1011'), (3, B'10110');
SELECT * FROM simhash_pairs('pw_mixed', 'id', 'code', 1) AS (a int, b int, d int);
DELETE FROM pw_mixed WHERE id = 3;
SELECT * FROM simhash_pairs('pw_mixed', 'id', 'code', 1) AS (a int, b int, d int);
CREATE TABLE pw_big (id int, code bit(1024));
INSERT INTO pw_big SELECT g, (g::bit(32)::text || repeat('0', 992))::bit(1024)
  FROM generate_series(1, 7000) g;
SET maintenance_work_mem = '1MB';
SELECT count(*) FROM simhash_pairs('pw_big', 'id', 'code', 0) AS (a int, b int, d int);
RESET maintenance_work_mem;
SELECT count(*) FROM simhash_pairs('pw_big', 'id', 'code', 0) AS (a int, b int, d int);

DROP TABLE pw, pw_small, pw64, pw_text, pw_mixed, pw_big;
DROP FUNCTION pw_compare(regclass, int),
	pw_clusters(regclass, int);
