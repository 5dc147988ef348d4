--
-- simhash_pairs() and simhash_clusters(): every near-duplicate pair and
-- cluster of a table, equal to the self-join on hamming_near.
--
\set VERBOSITY terse

-- uniform, planted clusters, skewed prefixes, identical runs, NULLs
CREATE TABLE d (id bigint PRIMARY KEY, shape text, fp simhash64);
INSERT INTO d SELECT g, 'uniform', pseudo_fp(g) FROM generate_series(1, 4000) g;
INSERT INTO d SELECT 10000 + c * 10 + j, 'planted', flip_bits(pseudo_fp(c), c * 100 + j, 1 + j % 6)
  FROM generate_series(1, 300) c, generate_series(1, 5) j;
INSERT INTO d SELECT 20000 + g, 'skewed', (pseudo_fp(g + 100000)::bigint & 1099511627775 & ~(x'9249249249249249'::bigint))::simhash64
  FROM generate_series(1, 1500) g;
INSERT INTO d SELECT 30000 + g, 'identical', '00000000000000ff' FROM generate_series(1, 150) g;
INSERT INTO d SELECT 31000 + g, 'identical', '00000000000001ff' FROM generate_series(1, 100) g;
INSERT INTO d SELECT 32000 + g, 'null', NULL FROM generate_series(1, 50) g;
CREATE INDEX d_idx ON d USING simhash_perm (fp);
ANALYZE d;

-- the truth: the self-join through the index, each pair once
CREATE TABLE ks AS SELECT k FROM generate_series(0, 7) k;
SET enable_seqscan = off;
SELECT * FROM plan($$SELECT ks.k, a.id, b.id FROM ks, d a, d b WHERE hamming_near(b.fp, a.fp, ks.k) AND a.id < b.id$$);
CREATE TABLE truth AS
  SELECT ks.k, a.id AS a, b.id AS b, hamming_distance(a.fp, b.fp) AS distance
    FROM ks, d a, d b WHERE hamming_near(b.fp, a.fp, ks.k) AND a.id < b.id;
RESET enable_seqscan;
SELECT k, count(*) AS pairs FROM truth GROUP BY k ORDER BY k;

-- the planner's estimate of the self-join, from a sample of the index's
-- leaves: within 10x of the truth for every k (without the index sample it
-- was a third of the table at every k: each row meeting itself)
CREATE FUNCTION join_estimate(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO plan;
  RETURN (plan->0->'Plan'->>'Plan Rows')::float8;
END $$;
SET max_parallel_workers_per_gather = 0;
SELECT k, count(*) AS pairs,
       join_estimate(format('SELECT a.id, b.id FROM d a, d b WHERE hamming_near(b.fp, a.fp, %s) AND a.id < b.id', k))
         / count(*) BETWEEN 0.1 AND 10 AS estimate_within_10x
  FROM truth GROUP BY k ORDER BY k;
-- fingerprints without near-duplicates: a handful of rows, not thousands
CREATE TABLE u AS SELECT id, fp FROM d WHERE shape = 'uniform';
CREATE INDEX ON u USING simhash_perm (fp);
ANALYZE u;
SELECT count(*) AS pairs,
       join_estimate('SELECT a.id, b.id FROM u a, u b WHERE hamming_near(b.fp, a.fp, 3) AND a.id < b.id') < 10 AS estimate_below_10
  FROM u a, u b WHERE hamming_near(b.fp, a.fp, 3) AND a.id < b.id;
-- a batch that resembles the table: each new row has as many neighbours in
-- the table as a row of the table has
CREATE TABLE resembling AS SELECT 100000 + id AS id, flip_bits(fp, id, 1 + (id % 2)::int) AS fp
  FROM d WHERE id % 7 = 0;
ANALYZE resembling;
SELECT count(*) AS pairs,
       join_estimate('SELECT n.id, o.id FROM resembling n, d o WHERE hamming_near(o.fp, n.fp, 3)')
         / count(*) BETWEEN 0.1 AND 10 AS estimate_within_10x
  FROM resembling n, d o WHERE hamming_near(o.fp, n.fp, 3);
-- a batch unlike the table: 400 new fingerprints and 100 near-copies of rows
-- without near-duplicates, against a table whose rows have about nine
-- neighbours each (estimated as resembling the table, 40 times too many);
-- the batch's own fingerprints, from its statistics, are searched for in the
-- index
CREATE TABLE unlike AS SELECT 200000 + g AS id, pseudo_fp(700000 + g) AS fp FROM generate_series(1, 400) g;
INSERT INTO unlike SELECT 300000 + id, flip_bits(fp, id, 1) FROM d WHERE shape = 'uniform' AND id % 40 = 0;
ANALYZE unlike;
SELECT count(*) AS pairs,
       join_estimate('SELECT n.id, o.id FROM unlike n, d o WHERE hamming_near(o.fp, n.fp, 3)')
         / count(*) BETWEEN 0.1 AND 10 AS estimate_within_10x
  FROM unlike n, d o WHERE hamming_near(o.fp, n.fp, 3);
RESET max_parallel_workers_per_gather;
DROP TABLE u, resembling, unlike;
DROP FUNCTION join_estimate(text);

-- every pair, once, with its distance, smaller key first
CREATE TABLE found AS
  SELECT ks.k, p.* FROM ks, simhash_pairs('d', 'id', 'fp', ks.k) AS p(a bigint, b bigint, distance int);
SELECT ks.k,
       (SELECT count(*) FROM found f WHERE f.k = ks.k) AS found,
       (SELECT count(*) FROM (SELECT a, b, distance FROM found f WHERE f.k = ks.k
                              EXCEPT SELECT a, b, distance FROM truth t WHERE t.k = ks.k) x) AS wrong,
       (SELECT count(*) FROM (SELECT a, b, distance FROM truth t WHERE t.k = ks.k
                              EXCEPT SELECT a, b, distance FROM found f WHERE f.k = ks.k) x) AS missing,
       (SELECT count(*) - count(DISTINCT (a, b)) FROM found f WHERE f.k = ks.k) AS repeated,
       (SELECT count(*) FROM found f WHERE f.k = ks.k AND a >= b) AS unordered
  FROM ks ORDER BY ks.k;

-- k up to 12, the largest supported, on a sample of every shape
CREATE TABLE small AS SELECT * FROM d WHERE id % 5 = 0;
CREATE INDEX ON small USING simhash_perm (fp);
SET enable_seqscan = off;
SELECT k, count(*) AS truth,
       (SELECT count(*) FROM simhash_pairs('small', 'id', 'fp', k) AS p(a bigint, b bigint, distance int)) AS found,
       (SELECT count(*) FROM (SELECT a.id, b.id, hamming_distance(a.fp, b.fp) FROM small a, small b
                               WHERE hamming_near(b.fp, a.fp, k) AND a.id < b.id
                              EXCEPT SELECT * FROM simhash_pairs('small', 'id', 'fp', k) AS p(a bigint, b bigint, distance int)) x) AS missing
  FROM generate_series(8, 12) k, small a, small b
 WHERE hamming_near(b.fp, a.fp, k) AND a.id < b.id GROUP BY k ORDER BY k;
RESET enable_seqscan;

-- the same when the sorts spill: partitions in temporary files, each
-- larger than memory sorted in runs, merged (checked at the default
-- work_mem: a NOT IN within 64kB is not hashed)
SET work_mem = '64kB';
CREATE TABLE found_spilled AS
  SELECT * FROM simhash_pairs('d', 'id', 'fp', 4) AS p(a bigint, b bigint, distance int);
RESET work_mem;
SELECT count(*) AS found_spilled,
       (SELECT count(*) FROM truth WHERE k = 4) AS truth,
       count(*) FILTER (WHERE (a, b, distance) NOT IN (SELECT a, b, distance FROM truth WHERE k = 4)) AS wrong
  FROM found_spilled;
DROP TABLE found_spilled;

-- partitions larger than memory, split again: 200,000 rows in work_mem
-- 1MB make 8 partitions of about 25,000 records where 13,000 fit, each
-- dealt to 8 more (progress => true says so in its DETAIL lines, left out
-- here for their timings); the same pairs as the self-join through the index
CREATE TABLE wide AS SELECT g::bigint AS id, pseudo_fp(g) AS fp FROM generate_series(1, 200000) g;
INSERT INTO wide SELECT 300000 + g, flip_bits(pseudo_fp(g * 7), g, 1 + (g % 3)::int)
  FROM generate_series(1, 2000) g;
CREATE INDEX wide_idx ON wide USING simhash_perm (fp);
ANALYZE wide;
SET enable_seqscan = off;
CREATE TABLE wide_truth AS
  SELECT a.id AS a, b.id AS b, hamming_distance(a.fp, b.fp) AS distance
    FROM wide a, wide b WHERE hamming_near(b.fp, a.fp, 3) AND a.id < b.id;
RESET enable_seqscan;
SET work_mem = '1MB';
SET max_parallel_workers_per_gather = 0;
CREATE TABLE wide_found AS
  SELECT * FROM simhash_pairs('wide', 'id', 'fp', 3, progress => true) AS p(a bigint, b bigint, distance int);
RESET work_mem;
RESET max_parallel_workers_per_gather;
SELECT (SELECT count(*) FROM wide_found) AS found, (SELECT count(*) FROM wide_truth) AS truth,
       (SELECT count(*) FROM (SELECT * FROM wide_found EXCEPT ALL SELECT * FROM wide_truth) x) AS wrong_or_repeated,
       (SELECT count(*) FROM (SELECT * FROM wide_truth EXCEPT SELECT * FROM wide_found) x) AS missing;
DROP TABLE wide, wide_truth, wide_found;

-- a text key and a bigint fingerprint column
CREATE TABLE t AS SELECT 'doc-' || id AS name, fp::bigint AS fp FROM d;
SELECT count(*) AS text_pairs, count(*) FILTER (WHERE a >= b) AS unordered
  FROM simhash_pairs('t', 'name', 'fp', 3) AS p(a text, b text, distance int);
SELECT count(*) AS truth FROM truth WHERE k = 3;

-- clusters: connected components of the pairs, named by their smallest key
CREATE TABLE cl AS SELECT * FROM simhash_clusters('d', 'id', 'fp', 3) AS c(id bigint, cluster bigint);
WITH RECURSIVE edges AS (
  SELECT a AS x, b AS y FROM truth WHERE k = 3 UNION ALL SELECT b, a FROM truth WHERE k = 3
), label(node, lab) AS (
  SELECT x, x FROM edges
  UNION
  SELECT e.y, l.lab FROM label l JOIN edges e ON e.x = l.node
), comp AS (SELECT node, min(lab) AS lab FROM label GROUP BY node)
SELECT (SELECT count(*) FROM comp) AS rows_with_duplicates,
       (SELECT count(*) FROM cl) AS rows_in_clusters,
       (SELECT count(*) FROM comp FULL JOIN cl ON cl.id = comp.node
         WHERE cl.cluster IS DISTINCT FROM comp.lab) AS wrong_cluster,
       (SELECT count(DISTINCT cluster) FROM cl) AS clusters;
-- every row of an identical run in one cluster, named by its smallest id
SELECT cluster, count(*) FROM cl WHERE id BETWEEN 30000 AND 31999 GROUP BY 1 ORDER BY 1;
-- with singletons: every row with a fingerprint (rows without one are skipped)
SELECT count(*) AS all_rows, count(*) FILTER (WHERE id = cluster) AS own_cluster,
       count(*) FILTER (WHERE cluster IS NULL) AS no_fingerprint
  FROM simhash_clusters('d', 'id', 'fp', 3, singletons => true) AS c(id bigint, cluster bigint);

-- many identical fingerprints: linear, no pair by pair comparison
CREATE TABLE same AS SELECT g AS id, '0123456789abcdef'::simhash64 AS fp FROM generate_series(1, 20000) g;
INSERT INTO same SELECT 100000 + g, flip_bits('0123456789abcdef', g, 2) FROM generate_series(1, 10) g;
SELECT count(*), count(DISTINCT cluster), min(cluster)
  FROM simhash_clusters('same', 'id', 'fp', 3) AS c(id int, cluster int);

-- parallel workers (min_parallel_table_scan_size = 0 lets them take on
-- these small tables): each process reads a share of the table into its own
-- file and searches some of the permuted tables; the same pairs and clusters
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
-- at k = 3, four tables take two rounds with two processes as with three:
-- one worker is started; at k = 5 (more tables) both
SELECT count(*) FROM simhash_pairs('d', 'id', 'fp', 3, progress => true) AS p(a bigint, b bigint, distance int);
SELECT count(*) FROM simhash_pairs('d', 'id', 'fp', 5, progress => true) AS p(a bigint, b bigint, distance int);
CREATE TABLE found_parallel AS
  SELECT ks.k, p.* FROM ks, simhash_pairs('d', 'id', 'fp', ks.k) AS p(a bigint, b bigint, distance int);
SELECT ks.k,
       (SELECT count(*) FROM found_parallel f WHERE f.k = ks.k) AS found,
       (SELECT count(*) FROM (SELECT a, b, distance FROM found_parallel f WHERE f.k = ks.k
                              EXCEPT ALL SELECT a, b, distance FROM truth t WHERE t.k = ks.k) x) AS wrong_or_repeated,
       (SELECT count(*) FROM (SELECT a, b, distance FROM truth t WHERE t.k = ks.k
                              EXCEPT SELECT a, b, distance FROM found_parallel f WHERE f.k = ks.k) x) AS missing
  FROM ks ORDER BY ks.k;
-- text keys (TIDs travel to the leader, which fetches the keys), spilled sorts
-- (checked at the default work_mem: a NOT IN within 64kB is not hashed)
SET work_mem = '64kB';
CREATE TEMP TABLE text_found AS
  SELECT * FROM simhash_pairs('t', 'name', 'fp', 3) AS p(a text, b text, distance int);
RESET work_mem;
SELECT count(*) AS text_pairs_parallel,
       count(*) FILTER (WHERE (substr(a, 5)::bigint, substr(b, 5)::bigint) NOT IN
                               (SELECT LEAST(a, b), GREATEST(a, b) FROM truth WHERE k = 3)
                          AND (substr(b, 5)::bigint, substr(a, 5)::bigint) NOT IN
                               (SELECT LEAST(a, b), GREATEST(a, b) FROM truth WHERE k = 3)) AS wrong
  FROM text_found;
DROP TABLE text_found;
SELECT count(*) AS rows_in_clusters,
       count(*) FILTER (WHERE (c.id, c.cluster) NOT IN (SELECT id, cluster FROM cl)) AS wrong_cluster
  FROM simhash_clusters('d', 'id', 'fp', 3, progress => true) AS c(id bigint, cluster bigint);
SELECT count(*), count(DISTINCT cluster), min(cluster)
  FROM simhash_clusters('same', 'id', 'fp', 3) AS c(id int, cluster int);
-- a temporary table lives in the leader's local buffers: searched alone
CREATE TEMP TABLE d_temp AS SELECT * FROM d;
SELECT count(*) AS temp_table_pairs, (SELECT count(*) FROM truth WHERE k = 3) AS truth
  FROM simhash_pairs('d_temp', 'id', 'fp', 3) AS p(a bigint, b bigint, distance int);
DROP TABLE found_parallel, d_temp;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- the recipes of the README: keep one row per cluster, or flag the others
BEGIN;
DELETE FROM d USING simhash_clusters('d', 'id', 'fp', 3) AS c(id bigint, cluster bigint)
 WHERE d.id = c.id AND c.id <> c.cluster;
SELECT count(*) AS pairs_left FROM simhash_pairs('d', 'id', 'fp', 3) AS p(a bigint, b bigint, distance int);
ROLLBACK;
ALTER TABLE d ADD duplicate_of bigint;
UPDATE d SET duplicate_of = c.cluster
  FROM simhash_clusters('d', 'id', 'fp', 3) AS c(id bigint, cluster bigint)
 WHERE d.id = c.id AND c.id <> c.cluster;
SELECT count(*) AS flagged, count(*) FILTER (WHERE duplicate_of >= id) AS flagged_wrong FROM d WHERE duplicate_of IS NOT NULL;

-- incremental: a new batch against the cleaned table and against itself,
-- in one transaction, through the index
DELETE FROM d WHERE duplicate_of IS NOT NULL;
CREATE TABLE batch (id bigint, fp simhash64);
INSERT INTO batch SELECT 50000 + id, flip_bits(fp, id, 2) FROM d WHERE id % 97 = 0 AND fp IS NOT NULL ORDER BY id LIMIT 30;
INSERT INTO batch SELECT 60000 + g, pseudo_fp(900000 + g) FROM generate_series(1, 30) g;
INSERT INTO batch SELECT 70000 + g, flip_bits(pseudo_fp(900000 + g), g, 1) FROM generate_series(1, 5) g;
BEGIN;
-- rows of the batch near a row already kept
CREATE TEMP TABLE batch_dup AS
  SELECT DISTINCT ON (n.id) n.id, o.id AS duplicate_of
    FROM batch n JOIN d o ON hamming_near(o.fp, n.fp, 3) ORDER BY n.id, o.id;
-- and rows near another row of the batch
INSERT INTO batch_dup
  SELECT c.id, c.cluster FROM simhash_clusters('batch', 'id', 'fp', 3) AS c(id bigint, cluster bigint)
   WHERE c.id <> c.cluster AND c.id NOT IN (SELECT id FROM batch_dup);
INSERT INTO d (id, shape, fp) SELECT id, 'batch', fp FROM batch WHERE id NOT IN (SELECT id FROM batch_dup);
COMMIT;
SELECT (SELECT count(*) FROM batch_dup) AS batch_duplicates,
       (SELECT count(*) FROM d WHERE shape = 'batch') AS batch_kept,
       (SELECT count(*) FROM simhash_pairs('d', 'id', 'fp', 3) AS p(a bigint, b bigint, distance int)) AS pairs_left;

-- bad input
SELECT * FROM simhash_pairs('d', 'nope', 'fp', 3) AS p(a bigint, b bigint, distance int);
SELECT * FROM simhash_pairs('d', 'id', 'shape', 3) AS p(a bigint, b bigint, distance int);
SELECT * FROM simhash_pairs('d', 'id', 'fp', 13) AS p(a bigint, b bigint, distance int);
SELECT * FROM simhash_pairs('d', 'id', 'fp', -1) AS p(a bigint, b bigint, distance int);
SELECT * FROM simhash_pairs('d', 'id', 'fp', 3) AS p(a text, b text, distance int);
SELECT * FROM simhash_pairs('d', 'id', 'fp', 3);
SELECT * FROM simhash_clusters('d', 'id', 'fp', 3) AS c(id bigint);
-- (a view is read through the executor since 1.5: test pairs_sources)
CREATE VIEW dv AS SELECT * FROM d;
SELECT * FROM simhash_pairs('dv', 'id', 'fp', 3) AS p(a bigint, b bigint, distance int);
-- a NULL argument is an error naming it (22004), not an empty result
\set VERBOSITY default
SELECT * FROM simhash_pairs('d', 'id', 'fp', NULL) AS p(a bigint, b bigint, distance int);
SELECT * FROM simhash_pairs(NULL, 'id', 'fp', 3) AS p(a bigint, b bigint, distance int);
SELECT * FROM simhash_pairs('d', NULL, 'fp', 3) AS p(a bigint, b bigint, distance int);
SELECT * FROM simhash_pairs('d', 'id', NULL, 3) AS p(a bigint, b bigint, distance int);
SELECT * FROM simhash_pairs('d', 'id', 'fp', 3, progress => NULL) AS p(a bigint, b bigint, distance int);
SELECT * FROM simhash_pairs('d', 'id', 'fp', 3, tenant => NULL) AS p(a bigint, b bigint, distance int);
SELECT * FROM simhash_clusters('d', 'id', 'fp', NULL) AS c(id bigint, cluster bigint);
SELECT * FROM simhash_clusters('d', 'id', 'fp', 3, singletons => NULL) AS c(id bigint, cluster bigint);
SELECT * FROM simhash_clusters('d', 'id', 'fp', 3, tenant => 'shape', singletons => NULL) AS c(id bigint, cluster bigint);
SELECT * FROM simhash_pairs_query(NULL, 3) AS p(a bigint, b bigint, distance int);
SELECT * FROM simhash_clusters_query('SELECT id, fp FROM d', NULL) AS c(id bigint, cluster bigint);
DO $$
BEGIN
  PERFORM * FROM simhash_pairs('d', 'id', 'fp', NULL) AS p(a bigint, b bigint, distance int);
EXCEPTION WHEN null_value_not_allowed THEN
  RAISE NOTICE 'SQLSTATE %', SQLSTATE;
END $$;
\set VERBOSITY terse
-- an empty table, a table of NULL fingerprints (none of them in a cluster)
CREATE TABLE empty (id int, fp simhash64);
SELECT count(*) FROM simhash_pairs('empty', 'id', 'fp', 3) AS p(a int, b int, distance int);
INSERT INTO empty SELECT g, NULL FROM generate_series(1, 10) g;
SELECT count(*) FROM simhash_clusters('empty', 'id', 'fp', 3, true) AS c(id int, cluster int);
-- a NULL key in a row with a near-duplicate
INSERT INTO empty VALUES (NULL, '0123456789abcdef'), (5, '0123456789abcdee');
SELECT * FROM simhash_pairs('empty', 'id', 'fp', 3) AS p(a int, b int, distance int);
-- a relation that does not exist, by OID
SELECT * FROM simhash_pairs(0, 'id', 'fp', 3) AS p(a int, b int, distance int);
SELECT * FROM simhash_clusters(0, 'id', 'fp', 3) AS c(id int, cluster int);
-- the table's privileges apply
CREATE ROLE simhash_pairs_nobody;
SET ROLE simhash_pairs_nobody;
SELECT * FROM simhash_pairs('d', 'id', 'fp', 3) AS p(a bigint, b bigint, distance int);
RESET ROLE;
DROP ROLE simhash_pairs_nobody;
-- progress lines (their details, with timings, are not shown here)
SELECT count(*) FROM simhash_pairs('t', 'name', 'fp', 3, progress => true) AS p(a text, b text, distance int);
SELECT count(*) FROM simhash_clusters('same', 'id', 'fp', 3, progress => true) AS c(id int, cluster int);

-- A result too large to list (a million copies of one fingerprint are
-- 5 x 10^11 pairs) is announced before its first pair is written, and a
-- statement_timeout ends the run promptly: the comparison loop checks for
-- interrupts every few thousand comparisons.  Before it did, this run
-- went on for over 30 s past its 1 s timeout; the bound here is generous
-- for a loaded machine.
CREATE TABLE huge AS
SELECT g AS id, '0123456789abcdef'::simhash64 AS fp FROM generate_series(1, 1000000) g;
SET max_parallel_workers_per_gather = 0;
CREATE TABLE huge_start AS SELECT clock_timestamp() AS t;
SET statement_timeout = '1s';
SELECT count(*) FROM simhash_pairs('huge', 'id', 'fp', 3) AS p(a int, b int, distance int);
RESET statement_timeout;
SELECT clock_timestamp() - t < interval '15 s' AS ended_promptly FROM huge_start;
-- clusters join the copies without comparing them pair by pair
SELECT count(*), count(DISTINCT cluster)
  FROM simhash_clusters('huge', 'id', 'fp', 3) AS c(id int, cluster int);
RESET max_parallel_workers_per_gather;

DROP VIEW dv;
DROP TABLE d, ks, truth, found, small, t, cl, same, batch, empty, huge, huge_start;
