--
-- simhash_pairs() and simhash_clusters() wherever the rows live: a
-- partitioned table (every partition, pairs across partitions too), a
-- view, a table with row-level security (the caller's policies apply), and
-- the rows of a query (simhash_pairs_query, simhash_clusters_query), each
-- compared with the same rows in one plain table.  Foreign tables on
-- shards: test/t/006_fdw_shards.pl.
--
SET client_min_messages = warning;

-- the shapes without the 5,000 identical rows (their pairs run to
-- millions), in a table partitioned on id % 3, and the same in one table
CREATE TABLE parts (id int, part int, fp simhash64) PARTITION BY LIST (part);
CREATE TABLE parts_0 PARTITION OF parts FOR VALUES IN (0);
CREATE TABLE parts_1 PARTITION OF parts FOR VALUES IN (1);
CREATE TABLE parts_2 PARTITION OF parts FOR VALUES IN (2);
INSERT INTO parts SELECT id, id % 3, fp FROM shapes WHERE shape <> 'identical';
CREATE TABLE flat AS SELECT id, fp FROM parts;
ANALYZE parts, flat;

CREATE TEMP TABLE truth AS
  SELECT * FROM simhash_pairs('flat', 'id', 'fp', 3) AS p(a int, b int, distance int);
SELECT count(*) AS pairs, count(*) FILTER (WHERE a % 3 <> b % 3) AS across_partitions FROM truth;

-- the partitioned table: every pair, those across partitions included
CREATE TEMP TABLE got AS
  SELECT * FROM simhash_pairs('parts', 'id', 'fp', 3) AS p(a int, b int, distance int);
SELECT (SELECT count(*) FROM (TABLE got EXCEPT ALL TABLE truth) x) AS extra,
       (SELECT count(*) FROM (TABLE truth EXCEPT ALL TABLE got) x) AS missing;
DROP TABLE got;

-- clusters: the same membership as on the plain table, singletons too
CREATE TEMP TABLE truth_clusters AS
  SELECT * FROM simhash_clusters('flat', 'id', 'fp', 3, singletons => true) AS c(id int, cluster int);
CREATE TEMP TABLE got AS
  SELECT * FROM simhash_clusters('parts', 'id', 'fp', 3, singletons => true) AS c(id int, cluster int);
SELECT (SELECT count(*) FROM truth_clusters) AS rows,
       (SELECT count(*) FROM truth_clusters WHERE id <> cluster) AS in_larger_clusters,
       (SELECT count(*) FROM (TABLE got EXCEPT ALL TABLE truth_clusters) x) AS extra,
       (SELECT count(*) FROM (TABLE truth_clusters EXCEPT ALL TABLE got) x) AS missing;
DROP TABLE got;

-- a query: the rows it returns, here one partition's and a filter, as
-- text keys (kept in the key spool) and as bigint keys (inline)
SELECT (SELECT count(*) FROM (
          SELECT * FROM simhash_pairs_query('SELECT id, fp FROM parts WHERE part = 1 AND id < 25000', 3)
            AS p(a int, b int, distance int)
          EXCEPT ALL
          SELECT * FROM truth WHERE a % 3 = 1 AND b % 3 = 1 AND a < 25000 AND b < 25000) x) AS extra,
       (SELECT count(*) FROM (
          SELECT * FROM truth WHERE a % 3 = 1 AND b % 3 = 1 AND a < 25000 AND b < 25000
          EXCEPT ALL
          SELECT * FROM simhash_pairs_query('SELECT id, fp FROM parts WHERE part = 1 AND id < 25000', 3)
            AS p(a int, b int, distance int)) x) AS missing;
CREATE TEMP TABLE got AS
  SELECT least(substr(a, 5)::int, substr(b, 5)::int) AS a, greatest(substr(a, 5)::int, substr(b, 5)::int) AS b, distance
    FROM simhash_pairs_query($$SELECT 'doc-' || id, fp::bigint FROM flat$$, 3) AS p(a text, b text, distance int);
SELECT (SELECT count(*) FROM (TABLE got EXCEPT ALL TABLE truth) x) AS extra,
       (SELECT count(*) FROM (TABLE truth EXCEPT ALL TABLE got) x) AS missing;
DROP TABLE got;
-- integer keys past 2^46 travel in the spool, mixed with inline ones
SELECT count(*) AS pairs, count(*) FILTER (WHERE a > 100000000000000 OR b > 100000000000000) AS with_big_keys
  FROM simhash_pairs_query($$SELECT CASE WHEN id % 2 = 0 THEN id ELSE id + 100000000000000 END::bigint, fp FROM flat$$, 3)
    AS p(a bigint, b bigint, distance int);
-- clusters of a query, with singletons
CREATE TEMP TABLE got AS
  SELECT * FROM simhash_clusters_query('SELECT id, fp FROM flat', 3, singletons => true) AS c(id int, cluster int);
SELECT (SELECT count(*) FROM (TABLE got EXCEPT ALL TABLE truth_clusters) x) AS extra,
       (SELECT count(*) FROM (TABLE truth_clusters EXCEPT ALL TABLE got) x) AS missing;
DROP TABLE got;

-- a view
CREATE VIEW planted_view AS SELECT id AS doc, fp AS print FROM parts WHERE id IN (SELECT id FROM shapes WHERE shape = 'planted');
SELECT count(*) AS pairs FROM simhash_pairs('planted_view', 'doc', 'print', 3) AS p(a int, b int, distance int);
SELECT count(*) AS pairs FROM truth
 WHERE a IN (SELECT id FROM shapes WHERE shape = 'planted') AND b IN (SELECT id FROM shapes WHERE shape = 'planted');

-- row-level security: a caller sees the pairs among the rows its policy
-- shows it, and no more (before 1.5 such tables were refused)
CREATE TABLE secret (id int, owner text, fp simhash64);
INSERT INTO secret SELECT id, CASE WHEN id % 2 = 0 THEN 'regress_simhash_reader' ELSE 'someone' END, fp
  FROM flat WHERE id IN (SELECT id FROM shapes WHERE shape = 'planted');
ALTER TABLE secret ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON secret USING (owner = current_user);
CREATE ROLE regress_simhash_reader;
GRANT SELECT ON secret TO regress_simhash_reader;
SET ROLE regress_simhash_reader;
SELECT count(*) AS pairs, count(*) FILTER (WHERE a % 2 = 1 OR b % 2 = 1) AS hidden_rows
  FROM simhash_pairs('secret', 'id', 'fp', 3) AS p(a int, b int, distance int);
RESET ROLE;
SELECT count(*) AS pairs_among_even_ids FROM truth
 WHERE a % 2 = 0 AND b % 2 = 0
   AND a IN (SELECT id FROM shapes WHERE shape = 'planted') AND b IN (SELECT id FROM shapes WHERE shape = 'planted');
DROP TABLE secret;
DROP ROLE regress_simhash_reader;

-- never a silent empty answer: a table whose statistics count rows but
-- that gives none (here: deleted since ANALYZE) warns
CREATE TABLE emptied (id int, fp simhash64) WITH (autovacuum_enabled = off);
INSERT INTO emptied SELECT id, fp FROM flat LIMIT 1000;
ANALYZE emptied;
DELETE FROM emptied;
SET client_min_messages = warning;
SELECT count(*) FROM simhash_pairs('emptied', 'id', 'fp', 3) AS p(a int, b int, distance int);
DROP TABLE emptied;

-- what cannot be read
SELECT * FROM simhash_pairs_query('SELECT id, id, fp FROM flat', 3) AS p(a int, b int, distance int);
SELECT * FROM simhash_pairs_query('SELECT id, id FROM flat', 3) AS p(a int, b int, distance int);
SELECT * FROM simhash_pairs_query('SELECT point(id, id), fp FROM flat', 3) AS p(a point, b point, distance int);
SELECT * FROM simhash_pairs_query('INSERT INTO flat VALUES (1, NULL) RETURNING id, fp', 3) AS p(a int, b int, distance int);
SELECT * FROM simhash_pairs_query('SELECT id, fp FROM flat', 3) AS p(a bigint, b bigint, distance int);
SELECT * FROM simhash_pairs_query('SELECT id, fp FROM flat', 13) AS p(a int, b int, distance int);
SELECT * FROM simhash_pairs_query('SELECT id, fp FROM no_such_table', 3) AS p(a int, b int, distance int);
-- a NULL key in a row with a near-duplicate
SELECT * FROM simhash_clusters_query($$SELECT NULL::int, fp FROM flat WHERE id = 20001 UNION ALL SELECT NULL, fp FROM flat WHERE id = 20001$$, 3) AS c(id int, cluster int);
SELECT * FROM simhash_pairs_query('WITH gone AS (DELETE FROM flat RETURNING id, fp) SELECT * FROM gone', 3) AS p(a int, b int, distance int);
SELECT * FROM simhash_pairs('shapes_id_seq', 'last_value', 'log_cnt', 3) AS p(a bigint, b bigint, distance int);
-- row locks: refused as such (SPI would speak of non-volatile functions)
SELECT * FROM simhash_pairs_query('SELECT id, fp FROM flat FOR UPDATE', 3) AS p(a int, b int, distance int);
SELECT * FROM simhash_pairs_query('SELECT id, fp FROM flat FOR SHARE', 3) AS p(a int, b int, distance int);
SELECT count(*) FROM flat;
-- a materialized view created WITH NO DATA is refused as a SELECT from it
-- is; once refreshed, its pairs are the table's
CREATE MATERIALIZED VIEW flat_mv AS SELECT id, fp FROM flat WITH NO DATA;
SELECT count(*) FROM simhash_pairs('flat_mv', 'id', 'fp', 3) AS p(a int, b int, distance int);
SELECT count(*) FROM flat_mv;
REFRESH MATERIALIZED VIEW flat_mv;
SELECT (SELECT count(*) FROM (SELECT * FROM simhash_pairs('flat_mv', 'id', 'fp', 3) AS p(a int, b int, distance int) EXCEPT ALL TABLE truth) x) AS extra,
       (SELECT count(*) FROM (TABLE truth EXCEPT ALL SELECT * FROM simhash_pairs('flat_mv', 'id', 'fp', 3) AS p(a int, b int, distance int)) x) AS missing;
DROP MATERIALIZED VIEW flat_mv;

-- a table of another table access method (here heap's code under another
-- name, as Citus columnar would be a name of its own) is read through the
-- executor, not as a heap: the same pairs
CREATE ACCESS METHOD heap_twin TYPE TABLE HANDLER heap_tableam_handler;
CREATE TABLE flat_twin USING heap_twin AS SELECT id, fp FROM flat;
SELECT (SELECT count(*) FROM (SELECT * FROM simhash_pairs('flat_twin', 'id', 'fp', 3) AS p(a int, b int, distance int) EXCEPT ALL TABLE truth) x) AS extra,
       (SELECT count(*) FROM (TABLE truth EXCEPT ALL SELECT * FROM simhash_pairs('flat_twin', 'id', 'fp', 3) AS p(a int, b int, distance int)) x) AS missing;
DROP TABLE flat_twin;
DROP ACCESS METHOD heap_twin;

DROP VIEW planted_view;
DROP TABLE parts, flat, truth, truth_clusters;
RESET client_min_messages;
