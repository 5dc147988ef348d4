--
-- simhash_perm with leading equality columns, (tenant, ..., code): every
-- answer within a tenant through the index equals a sequential scan's, for
-- radius queries and nearest neighbours, on skewed tenants, skewed and
-- identical fingerprints, NULL tenants and codes, several leading columns,
-- text, uuid, numbers, times and bit(n); the per-tenant exclusion
-- constraint; the errors.
--
SET client_min_messages = warning;
SELECT setseed(0.33);

-- The ids of tenant t's rows within r of q: through the index or by a
-- sequential scan (tbl has columns id, site, fp)
CREATE FUNCTION tenant_near(tbl regclass, t int, q bigint, r int, by_index bool)
	RETURNS int[] LANGUAGE plpgsql AS $$
DECLARE
	ids int[];
BEGIN
	PERFORM set_config('enable_seqscan', (NOT by_index)::text, true);
	PERFORM set_config('enable_indexscan', by_index::text, true);
	PERFORM set_config('enable_bitmapscan', by_index::text, true);
	EXECUTE format('SELECT array_agg(id ORDER BY id) FROM %s WHERE site = $1 AND hamming_near(fp, $2, $3)', tbl)
		INTO ids USING t, q, r;
	RETURN ids;
END $$;

-- The distances of tenant t's n nearest rows (ties may come in any order)
CREATE FUNCTION tenant_knn(tbl regclass, t int, q bigint, n int, by_index bool, qual int DEFAULT NULL)
	RETURNS int[] LANGUAGE plpgsql AS $$
DECLARE
	d int[];
BEGIN
	PERFORM set_config('enable_seqscan', (NOT by_index)::text, true);
	PERFORM set_config('enable_indexscan', by_index::text, true);
	PERFORM set_config('enable_bitmapscan', 'false', true);
	PERFORM set_config('enable_sort', (NOT by_index)::text, true);
	EXECUTE format('SELECT array_agg(dist) FROM (SELECT fp <-> $2::simhash64 AS dist FROM %s
					 WHERE site = $1 AND ($4 IS NULL OR hamming_near(fp, $2, $4))
					 ORDER BY fp <-> $2::simhash64 LIMIT $3) s', tbl)
		INTO d USING t, q, n, qual;
	RETURN d;
END $$;

-- 1. 20,000 fingerprints in 40 tenants of skewed sizes (tenant 0 holds
--    about a third), near-copies planted within a tenant and across
--    tenants, 300 copies of one fingerprint in tenant 5 and 200 of it
--    elsewhere, a run of fingerprints sharing their top 24 bits, and NULLs
CREATE TABLE docs (id int, site int, fp bigint);
INSERT INTO docs SELECT g, floor(40 * power(random(), 2.5))::int,
	   (hashint8(g)::bigint << 32) | (hashint8(-g)::bigint & 4294967295)
  FROM generate_series(1, 20000) g;
INSERT INTO docs SELECT 100000 + id, site, fp # (1::bigint << (id % 64)) # (1::bigint << ((id * 7) % 64))
  FROM docs WHERE id <= 500;
INSERT INTO docs SELECT 200000 + id, (site + 1) % 40, fp # (1::bigint << (id % 64))
  FROM docs WHERE id <= 500;
INSERT INTO docs SELECT 300000 + g, CASE WHEN g <= 300 THEN 5 ELSE g % 40 END, 1234567
  FROM generate_series(1, 500) g;
INSERT INTO docs SELECT 400000 + g, 9, (x'ABCDEF0000000000'::bigint) | (hashint8(g)::bigint & 16777215)
  FROM generate_series(1, 1000) g;
INSERT INTO docs VALUES (-1, NULL, 77), (-2, 3, NULL), (-3, NULL, NULL);
CREATE INDEX docs_site ON docs USING simhash_perm (site, fp);
ANALYZE docs;

-- one table per substring of at most 48 bits, every indexed row in each
-- (rows with a NULL tenant or fingerprint are not indexed)
SELECT count(*) AS tables, min(prefix_bits), max(prefix_bits), sum(prefix_bits) AS bits,
	   min(entries) = max(entries) AND min(entries) =
		 (SELECT count(*) FROM docs WHERE site IS NOT NULL AND fp IS NOT NULL) AS every_row
  FROM simhash_perm_info('docs_site');

-- the planner takes the index for a tenant's near-duplicates and nearest
-- neighbours, and a sequential scan when no tenant is named
EXPLAIN (costs off)
SELECT id FROM docs WHERE site = 7 AND hamming_near(fp, 1234567, 3);
EXPLAIN (costs off)
SELECT id FROM docs WHERE site = 7 ORDER BY fp <-> 1234567::bigint::simhash64 LIMIT 5;
EXPLAIN (costs off)
SELECT id FROM docs WHERE hamming_near(fp, 1234567, 3);

-- exact within each tenant at every radius: queries from the planted
-- originals, the identical run, the skewed run, and fingerprints of
-- other tenants; the number of queries whose index answer differs
SELECT r, count(*) AS queries,
	   sum(coalesce(cardinality(tenant_near('docs', s, q, r, false)), 0)) AS matches,
	   count(*) FILTER (WHERE tenant_near('docs', s, q, r, true) IS DISTINCT FROM
								 tenant_near('docs', s, q, r, false)) AS mismatches
  FROM (SELECT site AS s, fp AS q FROM docs
		 WHERE id IN (3, 17, 250, 100017, 200031, 300001, 300400, 400007, 19999)
		UNION ALL SELECT t, 1234567 FROM generate_series(0, 39, 13) t
		UNION ALL SELECT 9, x'ABCDEF0000000000'::bigint) qs,
	   unnest(ARRAY[0, 1, 2, 3, 4, 5, 6, 8, 12, 20, 32, 64]) r
 GROUP BY r ORDER BY r;

-- nearest neighbours within a tenant: LIMIT 1 and 10, with and without a
-- radius, for queries near stored rows and for random ones
SELECT n, qual, count(*) AS queries,
	   count(*) FILTER (WHERE tenant_knn('docs', s, q, n, true, qual) IS DISTINCT FROM
								 tenant_knn('docs', s, q, n, false, qual)) AS mismatches
  FROM (SELECT site AS s, fp AS q FROM docs WHERE id IN (3, 250, 100017, 300001, 400007)
		UNION ALL SELECT g % 40, hashint8(g * 13)::bigint << 20 FROM generate_series(1, 8) g) qs,
	   (VALUES (1, NULL::int), (10, NULL), (10, 6), (400, NULL)) p(n, qual)
 GROUP BY n, qual ORDER BY n, qual;

-- the rows of a tenant come nearest first, NULL fingerprints last (the
-- OFFSET counts the tenant's rows, its NULL codes included: the last two); a
-- NULL tenant matches nothing
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT fp <-> 1234567::bigint::simhash64 AS d, id < 0 AS null_row FROM docs WHERE site = 3
 ORDER BY fp <-> 1234567::bigint::simhash64 LIMIT 3 OFFSET (SELECT count(*) - 2 FROM docs WHERE site = 3);
SELECT count(*) FROM docs WHERE site = NULL AND hamming_near(fp, 77, 3);
SELECT count(*) FROM docs WHERE site = 5 AND site = 6 AND hamming_near(fp, 1234567, 0);
-- no tenant named: the scan reads the table, and is still exact
SELECT count(*), (SELECT count(*) FROM docs WHERE fp = 1234567 OR fp = 77)
  FROM docs WHERE hamming_near(fp, 1234567, 0) OR hamming_near(fp, 77, 0);
SELECT count(*) FROM docs WHERE site = 5 AND fp IS NOT NULL;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- 2. after deletes and VACUUM, and inserts into the index, still exact;
--    simhash_perm_check proves every row indexed in every table
DELETE FROM docs WHERE id % 7 = 0;
INSERT INTO docs SELECT 500000 + g, g % 3, 1234567 # (1::bigint << (g % 64))
  FROM generate_series(1, 300) g;
VACUUM docs;
SELECT count(*) AS queries,
	   count(*) FILTER (WHERE tenant_near('docs', s, q, 4, true) IS DISTINCT FROM
								 tenant_near('docs', s, q, 4, false)) AS mismatches,
	   count(*) FILTER (WHERE tenant_knn('docs', s, q, 10, true) IS DISTINCT FROM
								 tenant_knn('docs', s, q, 10, false)) AS knn_mismatches
  FROM (SELECT t AS s, 1234567::bigint AS q FROM generate_series(0, 5) t
		UNION ALL SELECT site, fp FROM docs WHERE id IN (3, 250, 100017)) qs;
SELECT * FROM simhash_perm_check('docs_site', heapallindexed => true);

-- 3. several leading columns of text and uuid, over bit(128) codes, in an
--    index created empty and filled by inserts
CREATE TABLE images (org text, team uuid, id int, code bit(128));
CREATE INDEX images_team ON images USING simhash_perm (org, team, code);
INSERT INTO images
SELECT CASE WHEN g % 3 = 0 THEN 'acme' ELSE 'globex' END,
	   ('00000000-0000-0000-0000-00000000000' || (g % 4))::uuid, g,
	   ('x' || md5(g::text) || '')::bit(128)
  FROM generate_series(1, 3000) g;
INSERT INTO images SELECT org, team, 10000 + id, code # (B'1' || repeat('0', 127))::bit(128)
  FROM images WHERE id <= 200;
INSERT INTO images SELECT 'initech', team, 20000 + id, code FROM images WHERE id <= 50;
ANALYZE images;
EXPLAIN (costs off)
SELECT id FROM images WHERE org = 'acme' AND team = '00000000-0000-0000-0000-000000000003'
   AND hamming_near(code, ('x' || md5('3'))::bit(128), 10);
CREATE FUNCTION images_near(o text, t uuid, q bit, r int, by_index bool)
	RETURNS int[] LANGUAGE plpgsql AS $$
DECLARE
	ids int[];
BEGIN
	PERFORM set_config('enable_seqscan', (NOT by_index)::text, true);
	PERFORM set_config('enable_indexscan', by_index::text, true);
	PERFORM set_config('enable_bitmapscan', by_index::text, true);
	SELECT array_agg(id ORDER BY id) INTO ids FROM images
	 WHERE org = o AND team = t AND hamming_near(code, q, r);
	RETURN ids;
END $$;
SELECT r, count(*) AS queries,
	   sum(coalesce(cardinality(images_near(o, t, q, r, false)), 0)) AS matches,
	   count(*) FILTER (WHERE images_near(o, t, q, r, true) IS DISTINCT FROM
								 images_near(o, t, q, r, false)) AS mismatches
  FROM (SELECT org AS o, team AS t, code AS q FROM images WHERE id IN (3, 12, 20003, 10012, 2999)) qs,
	   unnest(ARRAY[0, 1, 4, 16, 40, 128]) r
 GROUP BY r ORDER BY r;
SELECT * FROM simhash_perm_check('images_team', heapallindexed => true);

-- 4. the per-tenant near-duplicate constraint: no two rows of one site
--    within the radius; other sites and NULL sites never conflict
CREATE TABLE posts (id int, site int, fp bigint,
	EXCLUDE USING simhash_perm (site WITH =, fp WITH ~=) WITH (radius = 3));
INSERT INTO posts VALUES (1, 1, 1000000), (2, 2, 1000000), (3, NULL, 1000000), (4, NULL, 1000000);
INSERT INTO posts VALUES (5, 1, 1000000 # 7);				-- 3 bits from row 1
INSERT INTO posts VALUES (6, 1, 1000000 # 15);			-- 4 bits: no conflict
INSERT INTO posts VALUES (7, 2, 1000000 # 1) ON CONFLICT DO NOTHING;
INSERT INTO posts VALUES (8, 3, 1000000 # 1) ON CONFLICT DO NOTHING;
SELECT id, site FROM posts ORDER BY id;
-- within one statement, too
INSERT INTO posts VALUES (9, 4, 42), (10, 4, 43);
-- the check compares the whole row: two sites whose hashes collide (they
-- share one key range of the index) do not conflict, nor see each other's
-- rows in a query
SELECT min(g) AS s1, max(g) AS s2 FROM generate_series(1, 300000) g
 GROUP BY hashint4(g) HAVING count(*) = 2 ORDER BY 1 LIMIT 1 \gset
INSERT INTO posts VALUES (11, :s1, 555), (12, :s2, 555), (13, :s2, 555 # 4095);
SELECT id FROM posts WHERE site = :s1 AND hamming_near(fp, 555, 3);
CREATE INDEX posts_site ON posts USING simhash_perm (site, fp);
SET enable_seqscan = off;
SELECT id FROM posts WHERE site = :s1 AND hamming_near(fp, 555, 3);
SELECT id FROM posts WHERE site = :s2 ORDER BY fp <-> 555::bigint::simhash64;
RESET enable_seqscan;
DROP INDEX posts_site;
-- ALTER cannot raise the radius of such an index (it would not search)
ALTER INDEX posts_site_fp_excl SET (radius = 5);

-- 5. what the index refuses, and why
CREATE TABLE bad (a int, b int, c int, d int, e int, f int, g int, h int, i int, fp bigint, code bit(64), x point);
CREATE INDEX ON bad USING simhash_perm (a, b, c, d, e, f, g, h, i, fp);
CREATE INDEX ON bad USING simhash_perm (code, fp);
CREATE INDEX ON bad USING simhash_perm (fp, a);
CREATE INDEX ON bad USING simhash_perm (x, fp);
CREATE INDEX ON bad USING simhash_perm (a, fp) WITH (blocks = 4);
CREATE INDEX ON bad USING simhash_perm (a, fp) WITH (substrings = 1);
-- after leading columns a key holds 48 bits of a code, and there are at most 64 tables
ALTER TABLE bad ADD COLUMN wide bit(3073);
CREATE INDEX ON bad USING simhash_perm (a, wide);
ALTER TABLE bad DROP COLUMN wide;
ALTER TABLE bad ADD EXCLUDE USING simhash_perm (a WITH =, fp WITH =);
ALTER TABLE bad ADD EXCLUDE USING simhash_perm (fp WITH =, fp WITH ~=);
SELECT amvalidate(oid) FROM pg_opclass WHERE opcmethod = (SELECT oid FROM pg_am WHERE amname = 'simhash_perm') ORDER BY opcname;

-- 6. pairs and clusters within each tenant: simhash_pairs(..., tenant =>)
--    finds exactly the pairs of a self-join on equal tenants, and none
--    across tenants (docs holds near-copies across tenants and 500 copies
--    of one fingerprint over all 40); clusters never span two tenants
CREATE TEMP TABLE self_pairs AS
SELECT a.id AS a, b.id AS b, a.fp <-> b.fp::simhash64 AS distance
  FROM docs a JOIN docs b ON a.site = b.site AND a.id < b.id AND hamming_near(a.fp, b.fp, 3);
CREATE TEMP TABLE tenant_pairs AS
SELECT least(a, b) AS a, greatest(a, b) AS b, distance
  FROM simhash_pairs('docs', 'id', 'fp', 3, tenant => 'site') AS p(a int, b int, distance int);
SELECT (SELECT count(*) FROM self_pairs) AS self_join,
	   (SELECT count(*) FROM tenant_pairs) AS tenant_pairs,
	   (SELECT count(*) FROM (SELECT * FROM self_pairs EXCEPT SELECT * FROM tenant_pairs) s) AS missing,
	   (SELECT count(*) FROM (SELECT * FROM tenant_pairs EXCEPT SELECT * FROM self_pairs) s) AS extra,
	   (SELECT count(*) FROM simhash_pairs('docs', 'id', 'fp', 3) AS p(a int, b int, distance int)) AS all_tenants;
CREATE TEMP TABLE tenant_clusters AS
SELECT * FROM simhash_clusters('docs', 'id', 'fp', 3, tenant => 'site') AS c(id int, cluster int);
SELECT count(*) AS clustered,
	   (SELECT count(DISTINCT x) FROM self_pairs, LATERAL (VALUES (a), (b)) v(x)) AS rows_in_pairs,
	   count(DISTINCT cluster) AS clusters,
	   (SELECT count(*) FROM (SELECT c.cluster FROM tenant_clusters c JOIN docs d USING (id)
							   GROUP BY c.cluster HAVING count(DISTINCT d.site) > 1) s) AS spanning_tenants,
	   (SELECT count(*) FROM self_pairs p JOIN tenant_clusters x ON x.id = p.a
			JOIN tenant_clusters y ON y.id = p.b WHERE x.cluster <> y.cluster) AS pairs_split
  FROM tenant_clusters;
-- text tenants and a text key (read back from the spool), and clusters
-- with singletons: every row with a tenant and a fingerprint, once
CREATE TEMP TABLE tdocs AS
SELECT 'doc-' || id AS id, CASE WHEN site % 2 = 0 THEN 'even ' || site ELSE 'odd ' || site END AS tenant, fp
  FROM docs;
SELECT count(*) AS text_pairs,
	   (SELECT count(*) FROM self_pairs) AS self_join
  FROM simhash_pairs('tdocs', 'id', 'fp', 3, tenant => 'tenant') AS p(a text, b text, distance int);
SELECT count(*) AS rows_listed, count(DISTINCT id) AS distinct_rows,
	   (SELECT count(*) FROM tdocs WHERE tenant IS NOT NULL AND fp IS NOT NULL) AS rows_with_both
  FROM simhash_clusters('tdocs', 'id', 'fp', 3, tenant => 'tenant', singletons => true) AS c(id text, cluster text);
SELECT count(*) FROM simhash_pairs('docs', 'id', 'fp', 3, tenant => 'nosuch') AS p(a int, b int, distance int);
SELECT count(*) FROM simhash_pairs('docs', 'id', 'fp', 3, tenant => 'fp') AS p(a int, b int, distance int);

-- 7. numbers and times as tenants (float8, numeric, date, timestamp,
--    timestamptz): equal values, however written, are one tenant (-0 and
--    +0, NaN and NaN, 1.0 and 1.00, one instant in two time zones), in
--    queries through the index and in the constraint
CREATE TABLE measures (id int, f float8, n numeric, d date, ts timestamp, tz timestamptz, fp bigint);
INSERT INTO measures
  SELECT g, (g % 7) * 0.5, (g % 7) / 2.0, date '2026-01-01' + g % 7,
		 timestamp '2026-01-01 00:00' + (g % 7) * interval '1 hour',
		 timestamptz '2026-01-01 00:00+00' + (g % 7) * interval '1 hour',
		 CASE WHEN g % 5 = 0 THEN flip_bits(7777::bigint::simhash64, g, 3)::bigint
			  ELSE pseudo_fp(g)::bigint END
	FROM generate_series(1, 2100) g;
INSERT INTO measures VALUES
  (9001, '-0', 0.00, '2026-01-01', '2026-01-01 00:00', '2026-01-01 02:00+02', 7777),
  (9002, '+0', 0, '2026-01-01', '2026-01-01 00:00', '2025-12-31 19:00-05', 7777 # 3),
  (9003, 'NaN', 'NaN', 'infinity', 'infinity', 'infinity', 7777 # 1),
  (9004, 'NaN', 'NaN', 'infinity', 'infinity', 'infinity', 7777 # 6);
CREATE INDEX measures_f ON measures USING simhash_perm (f, fp);
CREATE INDEX measures_n ON measures USING simhash_perm (n, fp);
CREATE INDEX measures_d ON measures USING simhash_perm (d, fp);
CREATE INDEX measures_ts ON measures USING simhash_perm (ts, fp);
CREATE INDEX measures_tz ON measures USING simhash_perm (tz, fp);
CREATE FUNCTION measures_near(col text, v text, by_index bool)
	RETURNS int[] LANGUAGE plpgsql AS $$
DECLARE
	ids int[];
BEGIN
	PERFORM set_config('enable_seqscan', (NOT by_index)::text, true);
	PERFORM set_config('enable_indexscan', by_index::text, true);
	PERFORM set_config('enable_bitmapscan', by_index::text, true);
	EXECUTE format('SELECT array_agg(id ORDER BY id) FROM measures WHERE %I = %L AND hamming_near(fp, 7777, 3)', col, v)
		INTO ids;
	RETURN ids;
END $$;
SELECT col, v, cardinality(measures_near(col, v, true)) AS by_index,
	   measures_near(col, v, false) = measures_near(col, v, true) AS same,
	   (SELECT array_agg(i ORDER BY i) FROM unnest(measures_near(col, v, true)) i WHERE i > 9000) AS planted
  FROM (VALUES ('f', '0'), ('f', '-0'), ('f', 'NaN'), ('n', '0.0'), ('n', 'NaN'),
			   ('d', '2026-01-01'), ('d', 'infinity'), ('ts', '2026-01-01 00:00'),
			   ('tz', '2026-01-01 00:00+00'), ('tz', '2026-01-01 09:00+09'), ('tz', 'infinity')) v(col, v);
-- the other tenants, against a sequential scan
SELECT count(*) AS checked,
	   count(*) FILTER (WHERE measures_near('f', f::text, true) IS NOT DISTINCT FROM measures_near('f', f::text, false)
						  AND measures_near('tz', tz::text, true) IS NOT DISTINCT FROM measures_near('tz', tz::text, false)) AS same
  FROM (SELECT DISTINCT f, tz FROM measures) s;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM measures WHERE tz = '2026-01-01 00:00+00' AND hamming_near(fp, 7777, 3);
RESET enable_seqscan;
SELECT count(*) AS entries FROM simhash_perm_check('measures_f', true) WHERE table_no >= 0;
-- the constraint: -0 and +0 are one tenant, and so are two spellings of one instant
CREATE TABLE readings (id int, f float8, tz timestamptz, fp bigint,
	EXCLUDE USING simhash_perm (f WITH =, fp WITH ~=) WITH (radius = 3),
	EXCLUDE USING simhash_perm (tz WITH =, fp WITH ~=) WITH (radius = 3));
INSERT INTO readings VALUES (1, '-0', '2026-01-01 00:00+00', 1000);
INSERT INTO readings VALUES (2, '+0', '2026-02-01 00:00+00', 1000 # 3) ON CONFLICT DO NOTHING;
INSERT INTO readings VALUES (3, 1.5, '2026-01-01 01:00+01', 1000 # 5) ON CONFLICT DO NOTHING;
INSERT INTO readings VALUES (4, 2.5, '2026-03-01 00:00+00', 1000 # 1);
SELECT id FROM readings ORDER BY id;

DROP TABLE docs, images, posts, bad, measures, readings;
DROP FUNCTION tenant_near, tenant_knn, images_near, measures_near;
