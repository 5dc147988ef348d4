--
-- simhash_perm_check(): a sound index passes, whatever its history
-- (build, growth by splits, deletes and VACUUM, duplicates, NULLs, an
-- incomplete split); bad arguments and missing privileges are clean errors.
--
\set VERBOSITY terse

CREATE TABLE ck (id int, fp simhash64);
INSERT INTO ck SELECT g, pseudo_fp(g) FROM generate_series(1, 20000) g;
INSERT INTO ck SELECT 100000 + g, pseudo_fp(7) FROM generate_series(1, 2000) g;
INSERT INTO ck VALUES (-1, NULL), (-2, NULL);
CREATE INDEX ck_fp ON ck USING simhash_perm (fp);
SELECT * FROM simhash_perm_check('ck_fp');
SELECT table_no, entries FROM simhash_perm_check('ck_fp', heapallindexed => true);

-- growth after the build (leaf and internal splits), deletes, VACUUM
INSERT INTO ck SELECT g, pseudo_fp(g) FROM generate_series(20001, 60000) g;
DELETE FROM ck WHERE id % 7 = 0;
VACUUM ck;
SELECT count(*) AS tables, sum(entries) / count(*) = (SELECT count(fp) FROM ck) AS one_entry_per_row,
       min(levels) AS levels, sum(incomplete_splits) AS incomplete_splits
  FROM simhash_perm_check('ck_fp', true) WHERE table_no >= 0;

-- An incomplete split, as a crash between a split and its downlink leaves
-- it: simhash.fail_after_split stops the insert there.  The index stays
-- sound and answers exactly; the next insert into that page's range adds
-- the missing downlink.  (A fresh index: its leaves are 90% full.)
CREATE TABLE ck2 (id int, fp simhash64);
INSERT INTO ck2 SELECT g, pseudo_fp(g) FROM generate_series(1, 20000) g;
CREATE INDEX ck2_fp ON ck2 USING simhash_perm (fp);
SET simhash.fail_after_split = on;
INSERT INTO ck2 SELECT g, pseudo_fp(g) FROM generate_series(20001, 30000) g;
RESET simhash.fail_after_split;
-- the failed insert left entries in some tables only, until VACUUM: the
-- plain check cannot tell them from lost ones and reports them;
-- heapallindexed finds every row in every table, so they are no rows, and
-- it passes, counting them in a NOTICE
SELECT count(*) FROM simhash_perm_check('ck2_fp') WHERE table_no >= 0;
SELECT count(*) FROM simhash_perm_check('ck2_fp', heapallindexed => true) WHERE table_no >= 0;
VACUUM ck2;
SELECT sum(incomplete_splits) AS incomplete_splits FROM simhash_perm_check('ck2_fp', true) WHERE table_no >= 0;
-- the same on bit(128) codes, whose code store is compared with table 0 too
CREATE TABLE ck3 (id int, code bit(128));
INSERT INTO ck3 SELECT g, pseudo_fp(g)::bigint::bit(64) || pseudo_fp(-g)::bigint::bit(64)
  FROM generate_series(1, 20000) g;
CREATE INDEX ck3_code ON ck3 USING simhash_perm (code);
SET simhash.fail_after_split = on;
INSERT INTO ck3 SELECT g, pseudo_fp(g)::bigint::bit(64) || pseudo_fp(-g)::bigint::bit(64)
  FROM generate_series(20001, 30000) g;
RESET simhash.fail_after_split;
SELECT count(*) FROM simhash_perm_check('ck3_code') WHERE table_no >= 0;
SELECT count(*) FROM simhash_perm_check('ck3_code', heapallindexed => true) WHERE table_no >= 0;
VACUUM ck3;
SELECT table_no, entries FROM simhash_perm_check('ck3_code', true);
DROP TABLE ck3;
SET enable_seqscan = off;
SELECT count(*) AS index_matches FROM ck2 c, generate_series(1, 300) q
 WHERE hamming_near(c.fp, pseudo_fp(q * 311), 7);
RESET enable_seqscan;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT count(*) AS seqscan_matches FROM ck2 c, generate_series(1, 300) q
 WHERE hamming_near(c.fp, pseudo_fp(q * 311), 7);
RESET enable_indexscan;
RESET enable_bitmapscan;
INSERT INTO ck2 SELECT g, pseudo_fp(g) FROM generate_series(20001, 30000) g;
SELECT sum(incomplete_splits) AS incomplete_splits,
       sum(entries) / count(*) = (SELECT count(fp) FROM ck2) AS one_entry_per_row
  FROM simhash_perm_check('ck2_fp', true) WHERE table_no >= 0;

-- Keys below every key of the build: they all go to the leftmost leaf,
-- whose splits add downlinks below the first one of the level above.  That
-- first downlink stands for minus infinity; new ones go after it (before
-- 1.2 they went before it, and descents then missed the leftmost leaf).
CREATE TABLE ck3 (id int, fp simhash64);
INSERT INTO ck3 SELECT g, pseudo_fp(g) FROM generate_series(1, 1000) g;
CREATE INDEX ck3_fp ON ck3 USING simhash_perm (fp);
INSERT INTO ck3 SELECT -g, '0000000000000000' FROM generate_series(1, 3000) g;
SELECT min(entries), max(entries) FROM simhash_perm_check('ck3_fp', true) WHERE table_no >= 0;
SET enable_seqscan = off;
SELECT count(*) AS index_zeros FROM ck3 WHERE hamming_near(fp, '0000000000000000', 3);
RESET enable_seqscan;

-- An invalid index is not checked (amcheck refuses one too): what a failed
-- CREATE INDEX CONCURRENTLY leaves may lack rows, or have no pages at all.
-- Here the build's expression fails on one row.  REINDEX makes it valid.
CREATE TABLE ck4 (id int, fp simhash64);
INSERT INTO ck4 SELECT g, pseudo_fp(g) FROM generate_series(1, 100) g;
CREATE FUNCTION ck_refuse(fp simhash64, id int) RETURNS simhash64
  LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN IF id = 50 THEN RAISE EXCEPTION 'row % refused', id; END IF; RETURN fp; END $$;
CREATE INDEX CONCURRENTLY ck4_fp ON ck4 USING simhash_perm (ck_refuse(fp, id));
SELECT indisvalid FROM pg_index WHERE indexrelid = 'ck4_fp'::regclass;
\set VERBOSITY default
SELECT * FROM simhash_perm_check('ck4_fp');
\set VERBOSITY terse
SELECT * FROM simhash_perm_check('ck4_fp', heapallindexed => true);
DELETE FROM ck4 WHERE id = 50;
REINDEX INDEX ck4_fp;
SELECT count(*), min(entries) FROM simhash_perm_check('ck4_fp', true) WHERE table_no >= 0;
-- a built index marked invalid: simhash_perm_info still shows it, the
-- check refuses it
UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'ck4_fp'::regclass;
SELECT count(*), min(entries) FROM simhash_perm_info('ck4_fp');
SELECT * FROM simhash_perm_check('ck4_fp');
UPDATE pg_index SET indisvalid = true WHERE indexrelid = 'ck4_fp'::regclass;
SELECT count(*) FROM simhash_perm_check('ck4_fp') WHERE table_no >= 0;
DROP TABLE ck4;
DROP FUNCTION ck_refuse(simhash64, int);

-- bad arguments
SELECT * FROM simhash_perm_check(0);
SELECT * FROM simhash_perm_check('ck');
CREATE INDEX ck_bt ON ck (fp);
SELECT * FROM simhash_perm_check('ck_bt');
SELECT * FROM simhash_perm_info(0);
SELECT * FROM simhash_perm_info('ck_bt');
SELECT * FROM simhash_perm_check(NULL);
CREATE TABLE ck_parted (fp simhash64) PARTITION BY RANGE (fp);
CREATE INDEX ck_parted_fp ON ck_parted USING simhash_perm (fp);
SELECT * FROM simhash_perm_check('ck_parted_fp');

-- privileges: EXECUTE is not granted to PUBLIC, and the caller must be
-- allowed to read the table
CREATE ROLE regress_simhash_inspector;
SET ROLE regress_simhash_inspector;
SELECT count(*) FROM simhash_perm_info('ck_fp');
SELECT count(*) FROM simhash_perm_check('ck_fp') WHERE table_no >= 0;
RESET ROLE;
GRANT EXECUTE ON FUNCTION simhash_perm_info(regclass), simhash_perm_check(regclass, boolean)
  TO regress_simhash_inspector;
SET ROLE regress_simhash_inspector;
SELECT count(*) FROM simhash_perm_info('ck_fp');
SELECT count(*) FROM simhash_perm_check('ck_fp') WHERE table_no >= 0;
RESET ROLE;
GRANT SELECT ON ck TO regress_simhash_inspector;
SET ROLE regress_simhash_inspector;
SELECT count(*) FROM simhash_perm_info('ck_fp');
SELECT count(*) FROM simhash_perm_check('ck_fp') WHERE table_no >= 0;
RESET ROLE;
DROP OWNED BY regress_simhash_inspector;
DROP ROLE regress_simhash_inspector;
DROP TABLE ck, ck2, ck3, ck_parted;
