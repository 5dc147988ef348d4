--
-- simhash_perm: nearest neighbours (ORDER BY fp <-> q).  The index returns
-- rows in increasing distance, and the distances equal, position by
-- position, those of a sequential scan with the same ORDER BY and LIMIT.
--
\set VERBOSITY terse

-- the shapes of the setup test (uniform, planted clusters, skewed
-- prefixes, many identical fingerprints, and NULLs), copied: this test
-- changes them
SELECT copy_shapes();
SELECT count(*) AS queries FROM q;
CREATE INDEX d_idx ON d USING simhash_perm (fp);
ANALYZE d;
CREATE TABLE limits AS SELECT n FROM (VALUES (1), (10), (100), (3500)) v(n);

-- the truth: a sequential scan and a sort
SET enable_indexscan = off; SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM d ORDER BY fp <-> '0123456789abcdef' LIMIT 10;
CREATE TABLE truth AS
  SELECT qid, n, ARRAY(SELECT d.fp <-> q.fp FROM d ORDER BY d.fp <-> q.fp LIMIT n) AS dists
    FROM q, limits;
RESET enable_indexscan; RESET enable_bitmapscan;

-- the same through the index, each row with its position
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM d ORDER BY fp <-> '0123456789abcdef' LIMIT 10;
SELECT * FROM plan($$SELECT q.qid, s.* FROM q, limits,
  LATERAL (SELECT id, dist, row_number() OVER () AS pos
             FROM (SELECT id, d.fp <-> q.fp AS dist FROM d ORDER BY d.fp <-> q.fp LIMIT n) s) s$$);
CREATE TABLE by_index AS
  SELECT q.qid, limits.n, s.* FROM q, limits,
    LATERAL (SELECT id, dist, row_number() OVER () AS pos
               FROM (SELECT id, d.fp <-> q.fp AS dist FROM d ORDER BY d.fp <-> q.fp LIMIT n) s) s;
RESET enable_seqscan;
-- distances position by position; every row once, at its true distance;
-- and the rows nearer than the n-th distance all there (rows at the n-th
-- distance itself may be any of those tied)
SET enable_indexscan = off; SET enable_bitmapscan = off;
WITH bi AS (
  SELECT i.qid, i.n, array_agg(i.dist ORDER BY i.pos) AS dists,
         count(DISTINCT i.id) <> count(*) OR bool_or(i.dist <> hamming_distance(d.fp, q.fp)) AS wrong_rows,
         count(*) FILTER (WHERE i.dist < t.dists[t.n]) AS nearer
    FROM by_index i JOIN d USING (id) JOIN q USING (qid) JOIN truth t USING (qid, n)
   GROUP BY i.qid, i.n)
SELECT t.n, count(*) AS compared,
       count(*) FILTER (WHERE t.dists IS DISTINCT FROM bi.dists) AS wrong_distances,
       count(*) FILTER (WHERE bi.wrong_rows) AS wrong_rows,
       count(*) FILTER (WHERE (SELECT count(*) FROM d WHERE hamming_distance(d.fp, q.fp) < t.dists[t.n]) <> bi.nearer) AS missing_nearer,
       max(t.dists[t.n]) AS farthest
  FROM truth t JOIN q USING (qid) LEFT JOIN bi USING (qid, n) GROUP BY t.n ORDER BY t.n;
RESET enable_indexscan; RESET enable_bitmapscan;
-- identical fingerprints: 3000 rows at distance 0, then the next distance
SELECT array_agg(DISTINCT dist) FILTER (WHERE pos <= 3000) AS first_3000,
       min(dist) FILTER (WHERE pos = 3001) AS then
  FROM by_index WHERE n = 3500 AND qid = (SELECT qid FROM q WHERE fp = '00000000000000ff');

-- the whole table in order: every row, in non-decreasing distance, and
-- those with a NULL fingerprint last, as the sequential scan returns them
SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT id FROM d ORDER BY fp <-> '0123456789abcdef';
SELECT count(*) AS index_rows, count(*) FILTER (WHERE dist < prev OR dist IS NOT NULL AND prev IS NULL) AS out_of_order,
       count(*) FILTER (WHERE dist IS NULL) AS null_rows_last,
       (SELECT count(*) FROM d) AS table_rows, (SELECT count(fp) FROM d) AS non_null_rows
  FROM (SELECT dist, lag(dist) OVER () AS prev, row_number() OVER () AS n
          FROM (SELECT fp <-> '0123456789abcdef' AS dist FROM d ORDER BY fp <-> '0123456789abcdef') s) s
 WHERE n > 1;
SELECT count(*) AS queries_whole_table,
       count(*) FILTER (WHERE ARRAY(SELECT d.fp <-> q.fp FROM d ORDER BY d.fp <-> q.fp) IS DISTINCT FROM
                                ARRAY(SELECT hamming_distance(d.fp, q.fp) AS x FROM d ORDER BY 1)) AS wrong
  FROM q;
-- the NULL rows of a partial index are those its predicate admits
CREATE INDEX d_part ON d USING simhash_perm (fp) WHERE shape IN ('null', 'planted');
SELECT count(*) AS rows, count(dist) AS non_null
  FROM (SELECT fp <-> '0123456789abcdef' AS dist FROM d WHERE shape IN ('null', 'planted') ORDER BY fp <-> '0123456789abcdef') s;
DROP INDEX d_part;
-- neither qual nor ORDER BY (a plan the planner builds only when told
-- not to scan the table): every row, the NULL ones too
EXPLAIN (COSTS OFF) SELECT count(*) FROM (SELECT id FROM d ORDER BY fp <-> NULL::simhash64) s;
SELECT count(*) FROM (SELECT id FROM d ORDER BY fp <-> NULL::simhash64) s;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM (SELECT id FROM d ORDER BY fp <-> NULL::simhash64) s;
SELECT count(*) FROM (SELECT id FROM d ORDER BY fp <-> NULL::simhash64) s;
RESET enable_bitmapscan;
RESET enable_sort;

-- with other conditions: rows failing them are skipped, the order holds
-- (compared with hamming_distance(), which no index serves)
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT fp <-> '0123456789abcdef' FROM d WHERE shape = 'planted' ORDER BY fp <-> '0123456789abcdef' LIMIT 20;
SELECT count(*) AS compared,
       count(*) FILTER (WHERE ARRAY(SELECT d.fp <-> q.fp FROM d WHERE shape = 'planted' ORDER BY d.fp <-> q.fp LIMIT 20) <>
                                ARRAY(SELECT hamming_distance(d.fp, q.fp) FROM d WHERE shape = 'planted' ORDER BY 1 LIMIT 20)) AS wrong
  FROM q;
-- bounded by hamming_near in the same query, around the same center or
-- another: all rows within k, in order
EXPLAIN (COSTS OFF) SELECT id FROM d WHERE hamming_near(fp, '0123456789abcdef', 5) ORDER BY fp <-> '0123456789abcdef' LIMIT 10;
SELECT count(*) AS compared,
       count(*) FILTER (WHERE ARRAY(SELECT d.fp <-> q.fp FROM d WHERE hamming_near(d.fp, q.fp, k) ORDER BY d.fp <-> q.fp) <>
                                ARRAY(SELECT hamming_distance(d.fp, q.fp) FROM d WHERE hamming_distance(d.fp, q.fp) <= k ORDER BY 1)) AS wrong,
       count(*) FILTER (WHERE ARRAY(SELECT d.fp <-> q.fp FROM d WHERE hamming_near(d.fp, flip_bits(q.fp, 1, 2), k) ORDER BY d.fp <-> q.fp LIMIT 50) <>
                                ARRAY(SELECT hamming_distance(d.fp, q.fp) FROM d WHERE hamming_distance(d.fp, flip_bits(q.fp, 1, 2)) <= k ORDER BY 1 LIMIT 50)) AS wrong_other_center,
       sum((SELECT count(*) FROM d WHERE hamming_near(d.fp, q.fp, k))) AS rows_within_k
  FROM q, (VALUES (0), (3), (6), (13)) ks(k)
 WHERE q.qid % 3 = 1;
RESET enable_seqscan;

-- k nearest per row of another table: a LATERAL join
EXPLAIN (COSTS OFF) SELECT q.qid, n.id FROM q CROSS JOIN LATERAL (SELECT id FROM d ORDER BY d.fp <-> q.fp LIMIT 3) n;
SELECT count(*) AS pairs, sum(dist) AS total_distance
  FROM q CROSS JOIN LATERAL (SELECT d.fp <-> q.fp AS dist FROM d ORDER BY d.fp <-> q.fp LIMIT 3) n;
SELECT sum(dists[1] + dists[2] + dists[3]) AS truth_total_distance FROM truth WHERE n = 10;

-- generic plans: the query fingerprint a parameter
SET plan_cache_mode = force_generic_plan;
PREPARE nearest(simhash64, int) AS SELECT array_agg(dist) FROM (SELECT fp <-> $1 AS dist FROM d ORDER BY fp <-> $1 LIMIT $2) s;
EXPLAIN (COSTS OFF) EXECUTE nearest('0123456789abcdef', 10);
DO $$
DECLARE r record; a int[]; bad int := 0;
BEGIN
  FOR r IN SELECT t.*, q.fp FROM truth t JOIN q USING (qid) WHERE t.n IN (1, 10, 100) LOOP
    EXECUTE 'EXECUTE nearest(' || quote_literal(r.fp) || ', ' || r.n || ')' INTO a;
    IF a <> r.dists THEN bad := bad + 1; END IF;
  END LOOP;
  RAISE NOTICE 'generic plan mismatches: %', bad;
END $$;
DEALLOCATE nearest;
RESET plan_cache_mode;

-- ORDER BY fp <-> $1 with a NULL parameter: every distance is NULL, every
-- row comes back
PREPARE nearest_null(simhash64) AS SELECT count(*), count(dist) AS non_null_distances
  FROM (SELECT fp <-> $1 AS dist FROM d ORDER BY fp <-> $1) s;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE nearest_null(NULL);
EXECUTE nearest_null(NULL);
RESET plan_cache_mode;
DEALLOCATE nearest_null;
-- a NULL radius condition matches nothing
SELECT count(*) FROM d WHERE hamming_near(fp, NULL, 3) ORDER BY count(*);
SELECT count(*) FROM (SELECT id FROM d WHERE fp <@ NULL::simhash_query ORDER BY fp <-> '0123456789abcdef') s;

-- after inserts, updates, deletes and VACUUM
INSERT INTO d (shape, fp) SELECT 'late', pseudo_fp(g) FROM generate_series(200001, 215000) g;
INSERT INTO d (shape, fp) SELECT 'late', flip_bits(fp, qid, 4) FROM q;
UPDATE d SET fp = flip_bits(fp, id, 3) WHERE shape = 'uniform' AND id % 10 = 0;
DELETE FROM d WHERE shape = 'identical' AND id % 2 = 0;
DELETE FROM d WHERE shape = 'planted' AND id % 3 = 0;
VACUUM d;
RESET enable_seqscan;
SET enable_indexscan = off; SET enable_bitmapscan = off;
CREATE TABLE truth2 AS
  SELECT qid, n, ARRAY(SELECT d.fp <-> q.fp FROM d ORDER BY d.fp <-> q.fp LIMIT n) AS dists
    FROM q, limits;
RESET enable_indexscan; RESET enable_bitmapscan;
SET enable_seqscan = off;
SELECT count(*) AS compared, count(*) FILTER (WHERE t.dists <> ARRAY(SELECT d.fp <-> q.fp FROM d ORDER BY d.fp <-> q.fp LIMIT t.n)) AS wrong
  FROM truth2 t JOIN q USING (qid);
RESET enable_seqscan;

-- other layouts: six blocks for radius 5 (each prefix one block, so
-- rings are read a table at a time, as with the default), and five blocks
-- for radius 3 (prefixes of two blocks, whole rings)
CREATE TABLE d6 AS SELECT * FROM d;
CREATE INDEX d6_idx ON d6 USING simhash_perm (fp) WITH (radius = 5, blocks = 6);
CREATE TABLE d5 AS SELECT * FROM d;
CREATE INDEX d5_idx ON d5 USING simhash_perm (fp) WITH (radius = 3, blocks = 5);
ANALYZE d6, d5;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM d6 ORDER BY fp <-> '0123456789abcdef' LIMIT 10;
SELECT count(*) AS compared,
       count(*) FILTER (WHERE t.dists <> ARRAY(SELECT d6.fp <-> q.fp FROM d6 ORDER BY d6.fp <-> q.fp LIMIT t.n)) AS wrong_b6_k5,
       count(*) FILTER (WHERE t.dists <> ARRAY(SELECT d5.fp <-> q.fp FROM d5 ORDER BY d5.fp <-> q.fp LIMIT t.n)) AS wrong_b5_k3
  FROM truth2 t JOIN q USING (qid);
RESET enable_seqscan;
DROP TABLE d6, d5;

-- bigint fingerprints and an expression index
CREATE TABLE b AS SELECT id, fp::bigint AS fp FROM d;
CREATE INDEX b_idx ON b USING simhash_perm (fp);
ANALYZE b;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM b ORDER BY fp <-> '0123456789abcdef'::simhash64 LIMIT 5;
-- (with leaf maps off: every probe descends from the root)
SET simhash.leaf_map_memory = 0;
SELECT count(*) FILTER (WHERE ARRAY(SELECT b.fp <-> q.fp FROM b ORDER BY b.fp <-> q.fp LIMIT 10) <> t.dists) AS wrong_bigint
  FROM q JOIN truth2 t USING (qid) WHERE t.n = 10;
SELECT count(*) FILTER (WHERE ARRAY(SELECT id FROM b WHERE hamming_near(b.fp, q.fp::bigint, 5) ORDER BY id) <>
                              ARRAY(SELECT id FROM d WHERE hamming_distance(d.fp, q.fp) <= 5 ORDER BY id)) AS wrong_radius_without_maps
  FROM q;
RESET simhash.leaf_map_memory;
SHOW simhash.leaf_map_memory;
-- (the error's SQLSTATE only: its text gives the range in a form that
-- changed in PostgreSQL 18)
\set VERBOSITY sqlstate
SET simhash.leaf_map_memory = -1;
\set VERBOSITY terse
CREATE TABLE docs (id int, body text);
INSERT INTO docs SELECT g, 'note ' || g % 50 || ' about ' || g % 7 || ' and word' || g % 13 FROM generate_series(1, 2000) g;
CREATE INDEX docs_fp ON docs USING simhash_perm (simhash(body));
ANALYZE docs;
EXPLAIN (COSTS OFF) SELECT id FROM docs ORDER BY simhash(body) <-> simhash(text 'note 7 about 3 and word5') LIMIT 5;
SELECT ARRAY(SELECT simhash(body) <-> simhash(text 'note 7 about 3 and word5') FROM docs
              ORDER BY simhash(body) <-> simhash(text 'note 7 about 3 and word5') LIMIT 40) AS by_index \gset
RESET enable_seqscan;
SET enable_indexscan = off;
SELECT ARRAY(SELECT simhash(body) <-> simhash(text 'note 7 about 3 and word5') FROM docs
              ORDER BY simhash(body) <-> simhash(text 'note 7 about 3 and word5') LIMIT 40) = :'by_index' AS expression_index_exact;
RESET enable_indexscan;

-- the planner: the index for a few neighbours, a sort for the whole table
EXPLAIN (COSTS OFF) SELECT id FROM d ORDER BY fp <-> '0123456789abcdef' LIMIT 10;
EXPLAIN (COSTS OFF) SELECT id FROM d ORDER BY fp <-> '0123456789abcdef';

-- A radius qual bounds what any scan of the index reads, ordered or not:
-- the README's "is this page a near-copy of one we have?" query, with its
-- ORDER BY, runs on the index (not a sequential scan and a sort), with or
-- without LIMIT, ordered by the distance's alias or by fp <-> q, and
-- prepared, in custom and generic plans (where the query is a parameter).
CREATE TABLE pages (id int, body text,
                    fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO pages (id, body)
SELECT g, 'page ' || g || ' of the crawl, on topic ' || g % 97 || ' in section ' || g % 13
  FROM generate_series(1, 5000) g;
-- near-copies: a word added
INSERT INTO pages (id, body)
SELECT 10000 + g, 'page ' || g || ' of the crawl, on topic ' || g % 97 || ' in section ' || g % 13 || ' today'
  FROM generate_series(1, 5000, 5) g;
CREATE INDEX pages_fp ON pages USING simhash_perm (fp);
ANALYZE pages;
EXPLAIN (COSTS OFF)
SELECT id, fp <-> simhash('page 6 of the crawl, on topic 6 in section 6') AS distance
  FROM pages WHERE hamming_near(fp, simhash('page 6 of the crawl, on topic 6 in section 6'), 3)
 ORDER BY distance;
EXPLAIN (COSTS OFF)
SELECT id, fp <-> simhash('page 6 of the crawl, on topic 6 in section 6') AS distance
  FROM pages WHERE hamming_near(fp, simhash('page 6 of the crawl, on topic 6 in section 6'), 3)
 ORDER BY distance LIMIT 5;
EXPLAIN (COSTS OFF)
SELECT id FROM pages WHERE hamming_near(fp, simhash('page 6 of the crawl, on topic 6 in section 6'), 3)
 ORDER BY fp <-> simhash('page 6 of the crawl, on topic 6 in section 6');
PREPARE near_copy(text) AS
SELECT id, fp <-> simhash($1) AS distance FROM pages
 WHERE hamming_near(fp, simhash($1), 3) ORDER BY distance;
PREPARE near_copy_limit(text) AS
SELECT id, fp <-> simhash($1) AS distance FROM pages
 WHERE hamming_near(fp, simhash($1), 3) ORDER BY distance LIMIT 3;
SET plan_cache_mode = force_custom_plan;
EXPLAIN (COSTS OFF) EXECUTE near_copy('page 6 of the crawl, on topic 6 in section 6');
EXPLAIN (COSTS OFF) EXECUTE near_copy_limit('page 6 of the crawl, on topic 6 in section 6');
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE near_copy('page 6 of the crawl, on topic 6 in section 6');
EXPLAIN (COSTS OFF) EXECUTE near_copy_limit('page 6 of the crawl, on topic 6 in section 6');
RESET plan_cache_mode;
-- the index's answers equal the sequential scan's
EXPLAIN (COSTS OFF)
SELECT array_agg(distance ORDER BY distance) AS index_distances, count(*) AS index_rows
  FROM (SELECT fp <-> simhash('page 6 of the crawl, on topic 6 in section 6') AS distance FROM pages
         WHERE hamming_near(fp, simhash('page 6 of the crawl, on topic 6 in section 6'), 3)
         ORDER BY distance) s;
SELECT array_agg(distance ORDER BY distance) AS index_distances, count(*) AS index_rows
  FROM (SELECT fp <-> simhash('page 6 of the crawl, on topic 6 in section 6') AS distance FROM pages
         WHERE hamming_near(fp, simhash('page 6 of the crawl, on topic 6 in section 6'), 3)
         ORDER BY distance) s;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT array_agg(distance ORDER BY distance) AS seqscan_distances, count(*) AS seqscan_rows
  FROM (SELECT fp <-> simhash('page 6 of the crawl, on topic 6 in section 6') AS distance FROM pages
         WHERE hamming_near(fp, simhash('page 6 of the crawl, on topic 6 in section 6'), 3)
         ORDER BY distance) s;
RESET enable_indexscan;
RESET enable_bitmapscan;
DEALLOCATE near_copy;
DEALLOCATE near_copy_limit;

DROP TABLE d, q, limits, truth, by_index, truth2, b, docs, pages;
