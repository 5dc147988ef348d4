--
-- simhash_perm: building, options, layout, empty tables, NULLs, unlogged
-- tables, REINDEX, CREATE INDEX CONCURRENTLY, the bigint operator class.
--
\set VERBOSITY terse

-- deterministic pseudo-random fingerprints

-- the access method and its operator classes are valid
SELECT amname, amtype FROM pg_am WHERE amname = 'simhash_perm';
SELECT opcname, amvalidate(oid) FROM pg_opclass
 WHERE opcmethod = (SELECT oid FROM pg_am WHERE amname = 'simhash_perm') ORDER BY 1;
SELECT pg_indexam_has_property((SELECT oid FROM pg_am WHERE amname = 'simhash_perm'), p) AS v, p
  FROM unnest(ARRAY['can_order', 'can_unique', 'can_multi_col', 'can_exclude', 'can_include']) p;

-- an empty table
CREATE TABLE empty_t (id int, fp simhash64);
CREATE INDEX empty_idx ON empty_t USING simhash_perm (fp);
SELECT table_no, prefix_bits, height, entries FROM simhash_perm_info('empty_idx');
SET enable_seqscan = off;
SELECT count(*) FROM empty_t WHERE hamming_near(fp, '0000000000000000', 3);
INSERT INTO empty_t SELECT g, pseudo_fp(g) FROM generate_series(1, 2000) g;
SELECT count(*) FROM empty_t WHERE hamming_near(fp, pseudo_fp(77), 0);
RESET enable_seqscan;

-- layout options: defaults, other designs, and their limits
CREATE TABLE t (id int, fp simhash64);
INSERT INTO t SELECT g, pseudo_fp(g) FROM generate_series(1, 5000) g;
INSERT INTO t VALUES (0, NULL), (-1, NULL);
CREATE INDEX t_default ON t USING simhash_perm (fp);
SELECT count(*) AS tables, min(radius) AS k, min(blocks) AS b,
       min(prefix_bits) AS min_prefix, max(prefix_bits) AS max_prefix,
       min(entries) AS entries_per_table
  FROM simhash_perm_info('t_default');
CREATE INDEX t_k3b5 ON t USING simhash_perm (fp) WITH (radius = 3, blocks = 5);
SELECT count(*) AS tables, min(prefix_bits), max(prefix_bits) FROM simhash_perm_info('t_k3b5');
CREATE INDEX t_k0 ON t USING simhash_perm (fp) WITH (radius = 0);
SELECT count(*) AS tables, min(prefix_bits) FROM simhash_perm_info('t_k0');
CREATE INDEX t_k6 ON t USING simhash_perm (fp) WITH (radius = 6);
SELECT count(*) AS tables, min(prefix_bits), max(prefix_bits) FROM simhash_perm_info('t_k6');
-- each table's prefix is a different choice of blocks
SELECT count(DISTINCT prefix) = count(*) AS distinct_prefixes FROM simhash_perm_info('t_k3b5');
CREATE INDEX t_bad ON t USING simhash_perm (fp) WITH (radius = 3, blocks = 3);
CREATE INDEX t_bad ON t USING simhash_perm (fp) WITH (radius = 8, blocks = 16);
CREATE INDEX t_bad ON t USING simhash_perm (fp) WITH (radius = 13);
CREATE INDEX t_bad ON t USING simhash_perm (fp) WITH (blocks = 17);
CREATE INDEX t_bad ON t USING simhash_perm (fp) WITH (tables = 4);
-- ALTER INDEX ... SET applies the same rules as CREATE INDEX
ALTER INDEX t_k3b5 SET (blocks = 2);
ALTER INDEX t_k3b5 SET (blocks = 3);
ALTER INDEX t_k0 SET (radius = 9);
ALTER INDEX t_k6 RESET (radius);
ALTER INDEX t_k3b5 SET (blocks = 6);
SELECT reloptions FROM pg_class WHERE relname = 't_k3b5';
-- the layout is the one built; the new options take effect at REINDEX
SELECT count(*) AS tables FROM simhash_perm_info('t_k3b5');
REINDEX INDEX t_k3b5;
SELECT count(*) AS tables FROM simhash_perm_info('t_k3b5');
DROP INDEX t_k3b5, t_k0, t_k6;
-- the largest radius: C(9, 8) = 9 tables, although C(9, 4) = 126 > 64
CREATE INDEX t_k8 ON t USING simhash_perm (fp) WITH (radius = 8);
SELECT count(*) AS tables, min(prefix_bits), max(prefix_bits) FROM simhash_perm_info('t_k8');
SET enable_seqscan = off;
EXPLAIN (COSTS OFF)
SELECT id FROM t WHERE hamming_near(fp, (pseudo_fp(10)::bigint # 255)::simhash64, 9);
-- row 10 is 8 bits from the query
SELECT k, array_agg(id ORDER BY id) AS index_ids
  FROM generate_series(7, 10) k
  LEFT JOIN t ON hamming_near(fp, (pseudo_fp(10)::bigint # 255)::simhash64, k)
  GROUP BY k ORDER BY k;
RESET enable_seqscan;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT k, array_agg(id ORDER BY id) AS seqscan_ids
  FROM generate_series(7, 10) k
  LEFT JOIN t ON hamming_near(fp, (pseudo_fp(10)::bigint # 255)::simhash64, k)
  GROUP BY k ORDER BY k;
RESET enable_indexscan;
RESET enable_bitmapscan;
CREATE INDEX t_bad ON t USING simhash_perm (fp) WITH (radius = 8, blocks = 12);
DROP INDEX t_k8;

-- unsupported index shapes
CREATE INDEX t_bad ON t USING simhash_perm (fp, id);
CREATE UNIQUE INDEX t_bad ON t USING simhash_perm (fp);
CREATE INDEX t_bad ON t USING simhash_perm (id);

-- NULLs are not indexed and never returned
SELECT (sum(entries) / count(*))::int AS entries_per_table FROM simhash_perm_info('t_default');
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM t WHERE hamming_near(fp, pseudo_fp(10), 3);
SELECT id FROM t WHERE hamming_near(fp, pseudo_fp(10), 3);
SELECT count(*) FROM t WHERE hamming_near(fp, NULL, 3);
SELECT count(*) FROM t WHERE fp <@ simhash_within(NULL, 3);
RESET enable_seqscan;

-- the query type
SELECT simhash_within('0123456789abcdef', 3), '0123456789ABCDEF/7'::simhash_query;
SELECT '0123456789abcdef'::simhash64 <@ simhash_within('0123456789abcdee', 1) AS inside,
       '0123456789abcdef'::simhash64 <@ simhash_within('0123456789abcdec', 1) AS outside;
SELECT simhash_within('0123456789abcdef', 65);
SELECT '0123456789abcdef/x'::simhash_query;
SELECT '0123456789abcdef'::simhash_query;
SELECT 'nothex/3'::simhash_query;

-- REINDEX and CREATE INDEX CONCURRENTLY give the same answers
SELECT array_agg(id ORDER BY id) AS before FROM t WHERE hamming_near(fp, pseudo_fp(4321), 3) \gset
REINDEX INDEX t_default;
SET enable_seqscan = off;
SELECT array_agg(id ORDER BY id) = :'before' AS same_after_reindex FROM t WHERE hamming_near(fp, pseudo_fp(4321), 3);
RESET enable_seqscan;
DROP INDEX t_default;
CREATE INDEX CONCURRENTLY t_conc ON t USING simhash_perm (fp);
SELECT indisvalid FROM pg_index WHERE indexrelid = 't_conc'::regclass;
SET enable_seqscan = off;
SELECT array_agg(id ORDER BY id) = :'before' AS same_after_concurrently FROM t WHERE hamming_near(fp, pseudo_fp(4321), 3);
RESET enable_seqscan;
REINDEX INDEX CONCURRENTLY t_conc;
SELECT count(*) FROM t WHERE hamming_near(fp, pseudo_fp(4321), 0);

-- TRUNCATE empties the index; it works afterwards
TRUNCATE t;
SELECT sum(entries) FROM simhash_perm_info('t_conc');
INSERT INTO t SELECT g, pseudo_fp(g) FROM generate_series(1, 100) g;
SET enable_seqscan = off;
SELECT id FROM t WHERE hamming_near(fp, pseudo_fp(42), 2);
RESET enable_seqscan;

-- an unlogged table (init fork from ambuildempty)
CREATE UNLOGGED TABLE u (id int, fp simhash64);
CREATE INDEX u_idx ON u USING simhash_perm (fp);
INSERT INTO u SELECT g, pseudo_fp(g) FROM generate_series(1, 3000) g;
SET enable_seqscan = off;
SELECT id FROM u WHERE hamming_near(fp, pseudo_fp(2999), 1);
RESET enable_seqscan;

-- the bigint operator class
CREATE TABLE b (id int, fp bigint);
INSERT INTO b SELECT g, pseudo_fp(g)::bigint FROM generate_series(1, 3000) g;
CREATE INDEX b_idx ON b USING simhash_perm (fp);
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM b WHERE hamming_near(fp, pseudo_fp(5)::bigint, 3);
SELECT id FROM b WHERE hamming_near(fp, pseudo_fp(5)::bigint, 3);
SELECT id FROM b WHERE hamming_near(pseudo_fp(6)::bigint, fp, 3);
SELECT id FROM b WHERE fp <@ simhash_within(pseudo_fp(7), 2);
RESET enable_seqscan;

-- an expression index over fingerprints of text
CREATE TABLE docs (id int, body text);
INSERT INTO docs SELECT g, 'document number ' || g || ' says ' || repeat('word' || (g % 13) || ' ', 5) FROM generate_series(1, 500) g;
CREATE INDEX docs_fp ON docs USING simhash_perm (simhash(body));
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE hamming_near(simhash(body), simhash(text 'document number 7 says word7 word7 word7 word7 word7'), 3);
SELECT id FROM docs WHERE hamming_near(simhash(body), simhash(text 'document number 7 says word7 word7 word7 word7 word7'), 0);
RESET enable_seqscan;

-- build progress names
SELECT amname FROM pg_am WHERE amname = 'simhash_perm' AND pg_indexam_progress_phasename(oid, 2) = 'scanning table'
   AND pg_indexam_progress_phasename(oid, 3) = 'sorting a table'
   AND pg_indexam_progress_phasename(oid, 4) = 'writing a table';

-- a build within maintenance_work_mem: 1MB keeps 32,768 rows in memory and
-- sorts in runs of as many, so 150,000 rows spill to temporary files; the
-- index is the same, page for page, as one built in memory
CREATE TABLE big AS SELECT g AS id, pseudo_fp(g) AS fp FROM generate_series(1, 150000) g;
INSERT INTO big SELECT 200000 + g, pseudo_fp(g % 100) FROM generate_series(1, 5000) g;
SET maintenance_work_mem = '1MB';
SELECT temp_bytes AS temp_before FROM pg_stat_database WHERE datname = current_database() \gset
CREATE INDEX big_small ON big USING simhash_perm (fp);
SELECT pg_stat_force_next_flush();
SELECT temp_bytes > :temp_before AS spilled FROM pg_stat_database WHERE datname = current_database();
RESET maintenance_work_mem;
CREATE EXTENSION pageinspect;
-- (each page past its LSN and checksum, which differ between two builds)
CREATE TABLE big_pages AS SELECT blkno, substr(get_raw_page('big_small', blkno::int), 11) AS p FROM generate_series(0, pg_relation_size('big_small') / 8192 - 1) blkno;
SET maintenance_work_mem = '256MB';
DROP INDEX big_small;
CREATE INDEX big_large ON big USING simhash_perm (fp);
RESET maintenance_work_mem;
SELECT count(*) AS pages, count(*) FILTER (WHERE b.p IS DISTINCT FROM substr(get_raw_page('big_large', b.blkno::int), 11)) AS different
  FROM big_pages b;
SELECT table_no, entries, incomplete_splits FROM simhash_perm_check('big_large', true) WHERE table_no = 0;

-- REINDEX CONCURRENTLY, with the index in use before and after
SET enable_seqscan = off;
SELECT count(*) FROM big WHERE hamming_near(fp, pseudo_fp(42), 3);
REINDEX INDEX CONCURRENTLY big_large;
SELECT count(*) FROM big WHERE hamming_near(fp, pseudo_fp(42), 3);
RESET enable_seqscan;
SELECT count(*) FROM big WHERE hamming_near(fp, pseudo_fp(42), 3);
SELECT table_no, entries FROM simhash_perm_check('big_large', true) WHERE table_no = 0;

-- the index must be of our kind
SELECT * FROM simhash_perm_info('pg_class_oid_index');

-- clean up for the tests that follow in the same database
DROP TABLE empty_t, t, u, b, docs, big, big_pages;
DROP EXTENSION pageinspect;
