--
-- simhash_perm: every answer equals a sequential scan's, for every k and
-- data shape, through every kind of plan.
--
\set VERBOSITY terse

-- data of four shapes, in one table (the setup test's shapes, copied: this
-- test changes it):
--  uniform: 20000 pseudo-random fingerprints
--  planted: 400 clusters of copies with 1-6 bits flipped
--  skewed:  6000 fingerprints whose top 24 bits and every 3rd bit are zero
--  identical: 3000 rows sharing one fingerprint, 2000 another
SELECT copy_shapes();
-- queries: members of each shape, near copies of them, random points
SELECT count(*) AS queries FROM q;

CREATE INDEX d_idx ON d USING simhash_perm (fp);
ANALYZE d;

-- the truth, by sequential scan, for k = 0..8 and a few large k
CREATE TABLE ks AS SELECT k FROM generate_series(0, 8) k UNION ALL VALUES (10), (12), (16), (24), (40), (64);
SET enable_indexscan = off; SET enable_bitmapscan = off;
CREATE TABLE truth AS
  SELECT q.qid, ks.k, count(d.id) AS n, coalesce(sum(d.id), 0) AS ids
    FROM q CROSS JOIN ks LEFT JOIN d ON hamming_near(d.fp, q.fp, ks.k)
   GROUP BY 1, 2;
RESET enable_indexscan; RESET enable_bitmapscan;

-- plain index scans
SET enable_seqscan = off; SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM d WHERE hamming_near(fp, '0123456789abcdef', 3);
CREATE TABLE by_index AS
  SELECT q.qid, ks.k, (SELECT count(*) FROM d WHERE hamming_near(d.fp, q.fp, ks.k)) AS n,
         (SELECT coalesce(sum(id), 0) FROM d WHERE hamming_near(d.fp, q.fp, ks.k)) AS ids
    FROM q CROSS JOIN ks;
SELECT count(*) AS compared, count(*) FILTER (WHERE t.n <> i.n OR t.ids <> i.ids) AS wrong
  FROM truth t JOIN by_index i USING (qid, k);
-- the per-shape totals show what was compared
SELECT k, sum(n) AS rows_found FROM truth WHERE k IN (0, 3, 6, 12) GROUP BY k ORDER BY k;

-- bitmap scans
SET enable_indexscan = off; SET enable_bitmapscan = on;
EXPLAIN (COSTS OFF) SELECT id FROM d WHERE hamming_near(fp, '0123456789abcdef', 3);
CREATE TABLE by_bitmap AS
  SELECT q.qid, ks.k, (SELECT count(*) FROM d WHERE hamming_near(d.fp, q.fp, ks.k)) AS n,
         (SELECT coalesce(sum(id), 0) FROM d WHERE hamming_near(d.fp, q.fp, ks.k)) AS ids
    FROM q CROSS JOIN ks;
SELECT count(*) AS compared, count(*) FILTER (WHERE t.n <> b.n OR t.ids <> b.ids) AS wrong
  FROM truth t JOIN by_bitmap b USING (qid, k);
RESET enable_indexscan; RESET enable_bitmapscan;

-- the explicit operator form
SET enable_seqscan = off;
SELECT count(*) AS wrong FROM truth t JOIN q USING (qid)
 WHERE t.k <= 8 AND t.n <> (SELECT count(*) FROM d WHERE d.fp <@ simhash_within(q.fp, t.k));

-- combined with another index through BitmapAnd / BitmapOr
CREATE INDEX d_id ON d (id);
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM d WHERE hamming_near(fp, '00000000000000ff', 2) AND id BETWEEN 26000 AND 28000;
SELECT count(*) FROM d WHERE hamming_near(fp, '00000000000000ff', 2) AND id BETWEEN 28500 AND 29000;
EXPLAIN (COSTS OFF) SELECT count(*) FROM d WHERE hamming_near(fp, '00000000000000ff', 0) OR hamming_near(fp, 'ffffffff00000000', 0);
SELECT count(*) FROM d WHERE hamming_near(fp, '00000000000000ff', 0) OR hamming_near(fp, 'ffffffff00000000', 0);
RESET enable_indexscan;
-- two radius conditions on the same column
SELECT count(*) FROM d WHERE fp <@ simhash_within('00000000000000ff', 3) AND fp <@ simhash_within('00000000000001ff', 1);
RESET enable_seqscan;
SELECT count(*) FROM d WHERE hamming_near(fp, '00000000000000ff', 3) AND hamming_near(fp, '00000000000001ff', 1);

-- prepared statements, fingerprint and k both parameters, generic plans
SET plan_cache_mode = force_generic_plan;
PREPARE near(simhash64, int) AS SELECT count(*), coalesce(sum(id), 0) FROM d WHERE hamming_near(fp, $1, $2);
EXPLAIN (COSTS OFF) EXECUTE near('0123456789abcdef', 3);
DO $$
DECLARE r record; c bigint; s bigint; bad int := 0;
BEGIN
  FOR r IN SELECT t.*, q.fp FROM truth t JOIN q USING (qid) WHERE t.k IN (0, 2, 3, 5, 7, 12) LOOP
    EXECUTE 'EXECUTE near(' || quote_literal(r.fp) || ', ' || r.k || ')' INTO c, s;
    IF c <> r.n OR s <> r.ids THEN bad := bad + 1; END IF;
  END LOOP;
  RAISE NOTICE 'generic plan mismatches: %', bad;
END $$;
DEALLOCATE near;
RESET plan_cache_mode;

-- joins: the index on the inner side of a nested loop
SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_seqscan = off;
SELECT * FROM plan($$SELECT count(*) FROM q JOIN d ON hamming_near(d.fp, q.fp, 3)$$);
SELECT count(*) AS pairs FROM q JOIN d ON hamming_near(d.fp, q.fp, 3);
SELECT sum(n) AS truth_pairs FROM truth WHERE k = 3;
-- self-join of a table on near-duplicate fingerprints
SELECT count(*) AS near_pairs FROM d a JOIN d b ON hamming_near(b.fp, a.fp, 5)
 WHERE a.shape = 'planted' AND b.shape = 'planted' AND a.id < b.id;
RESET enable_hashjoin; RESET enable_mergejoin; RESET enable_seqscan;
SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT count(*) AS near_pairs_seq FROM d a JOIN d b ON hamming_near(b.fp, a.fp, 5)
 WHERE a.shape = 'planted' AND b.shape = 'planted' AND a.id < b.id;
RESET enable_indexscan; RESET enable_bitmapscan;

-- the planner: the index for selective queries, a sequential scan otherwise
EXPLAIN (COSTS OFF) SELECT id FROM d WHERE hamming_near(fp, '0123456789abcdef', 3);
EXPLAIN (COSTS OFF) SELECT id FROM d WHERE hamming_near(fp, '0123456789abcdef', 40);

-- inserts after the build, UPDATE of fp, DELETE and VACUUM
INSERT INTO d (shape, fp) SELECT 'late', pseudo_fp(g) FROM generate_series(200001, 230000) g;
UPDATE d SET fp = flip_bits(fp, id, 3) WHERE shape = 'uniform' AND id % 10 = 0;
DELETE FROM d WHERE shape = 'identical' AND id % 2 = 0;
DELETE FROM d WHERE shape = 'planted' AND id % 3 = 0;
VACUUM d;
SET enable_indexscan = off; SET enable_bitmapscan = off;
CREATE TABLE truth2 AS
  SELECT q.qid, ks.k, count(d.id) AS n, coalesce(sum(d.id), 0) AS ids
    FROM q CROSS JOIN ks LEFT JOIN d ON hamming_near(d.fp, q.fp, ks.k)
   WHERE ks.k <= 12 GROUP BY 1, 2;
RESET enable_indexscan; RESET enable_bitmapscan;
SET enable_seqscan = off;
SELECT count(*) AS compared, count(*) FILTER (WHERE t.n <> (SELECT count(*) FROM d WHERE hamming_near(d.fp, q.fp, t.k))) AS wrong
  FROM truth2 t JOIN q USING (qid);
RESET enable_seqscan;
SELECT min(entries) = max(entries) AS tables_agree, min(entries) = (SELECT count(fp) FROM d) AS entries_match_rows
  FROM simhash_perm_info('d_idx');

-- clean up for the tests that follow in the same database
DROP TABLE d, q, ks, truth, by_index, by_bitmap, truth2;
