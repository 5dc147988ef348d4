--
-- simhash_perm stays fast as the table grows after CREATE INDEX, and under
-- skew: pages read per probe (shared buffer hits of the index scan, from
-- EXPLAIN (ANALYZE, BUFFERS)) must not follow the table's size, a mass of
-- identical fingerprints, or fingerprints with many constant bits.  VACUUM
-- frees room that later inserts reuse.
--
\set VERBOSITY terse

-- index buffers read by a probe of table g for fingerprint q within k
CREATE FUNCTION probe_buffers(g regclass, q simhash64, k int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE format('EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM %s WHERE hamming_near(fp, %L, %s)',
                 g, q, k) INTO plan;
  RETURN (plan -> 0 -> 'Plan' ->> 'Shared Hit Blocks')::int + (plan -> 0 -> 'Plan' ->> 'Shared Read Blocks')::int;
END $$;

SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- growth: build on 20,000 rows, then insert 180,000 more (10x)
CREATE TABLE grow (id int, fp simhash64);
INSERT INTO grow SELECT g, pseudo_fp(g) FROM generate_series(1, 20000) g;
CREATE INDEX grow_idx ON grow USING simhash_perm (fp);
SELECT probe_buffers('grow', pseudo_fp(1), 3) > 0 AS warmed;	-- builds the backend's leaf map
CREATE TABLE probes AS SELECT g, pseudo_fp(g * 7919) AS q FROM generate_series(1, 50) g;
SELECT sum(probe_buffers('grow', q, 3)) AS before FROM probes \gset
INSERT INTO grow SELECT g, pseudo_fp(g) FROM generate_series(20001, 200000) g;
SELECT probe_buffers('grow', pseudo_fp(1), 3) > 0 AS warmed;
SELECT sum(probe_buffers('grow', q, 3)) AS after FROM probes \gset
-- a heap page per match aside, a probe reads about one leaf per table
SELECT :before / 50.0 < 12 AS small_before, :after / 50.0 < 12 AS small_after,
       :after::float8 / :before < 2 AS not_proportional_to_rows;

-- skew 1: 100,000 rows share one fingerprint
CREATE TABLE same (id int, fp simhash64);
INSERT INTO same SELECT g, '5555555555555555' FROM generate_series(1, 100000) g;
INSERT INTO same SELECT g, pseudo_fp(g) FROM generate_series(100001, 120000) g;
CREATE INDEX same_idx ON same USING simhash_perm (fp);
SELECT probe_buffers('same', pseudo_fp(1), 3) > 0 AS warmed;
-- other fingerprints, including ones sharing a whole block with the mass
SELECT max(probe_buffers('same', q, 3)) < 30 AS others_stay_fast FROM probes;
SELECT probe_buffers('same', ('5555' || substr(q::text, 5))::simhash64, 3) < 30 AS same_block_fast
  FROM probes WHERE g = 1;
SELECT count(*) FROM same WHERE hamming_near(fp, '5555555555555554', 1);

-- skew 2: the top 24 bits and every third bit are always zero, leaving 26
-- informative bits.  A contiguous split would make one table's prefix the
-- constant top 16 bits: one bucket of all rows.  The build spreads the
-- informative bits over the blocks: 6 or 7 per prefix, 64 to 128 buckets in
-- every table, the best these data allow.
CREATE TABLE lowent (id int, fp simhash64);
INSERT INTO lowent SELECT g, (pseudo_fp(g)::bigint & 1099511627775 & ~(x'9249249249249249'::bigint))::simhash64
  FROM generate_series(1, 100000) g;
CREATE INDEX lowent_idx ON lowent USING simhash_perm (fp);
SELECT min(buckets) >= 64 AS every_table_spread, max(largest_bucket) < 2000 AS no_giant_bucket
  FROM simhash_perm_info('lowent_idx');
SELECT probe_buffers('lowent', fp, 3) < 30 AS lowent_fast FROM lowent WHERE id = 777;

-- VACUUM frees room that inserts reuse: delete half, vacuum, insert as
-- many new rows; the index stays about the same size
CREATE TABLE churn (id int, fp simhash64);
INSERT INTO churn SELECT g, pseudo_fp(g) FROM generate_series(1, 50000) g;
CREATE INDEX churn_idx ON churn USING simhash_perm (fp);
SELECT pg_relation_size('churn_idx') AS size_built \gset
DELETE FROM churn WHERE id % 2 = 0;
VACUUM (INDEX_CLEANUP ON) churn;
SELECT (sum(entries) / 4)::int AS entries_after_vacuum FROM simhash_perm_info('churn_idx');
INSERT INTO churn SELECT g, pseudo_fp(g) FROM generate_series(50001, 75000) g;
SELECT pg_relation_size('churn_idx')::float8 / :size_built < 1.1 AS space_reused;
SELECT count(*) FROM churn WHERE hamming_near(fp, pseudo_fp(60000), 0);

DROP TABLE grow, probes, same, lowent, churn;
DROP FUNCTION probe_buffers(regclass, simhash64, int);
