--
-- Upgrade path: an installation of 1.0 updates to the current version, with
-- the same objects as a fresh install, and fingerprints stored under 1.0
-- (and an index on them) stay valid.
--
DROP EXTENSION simhash CASCADE;
CREATE EXTENSION simhash VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'simhash';
CREATE TABLE up_docs (id int, body text, fp simhash);
INSERT INTO up_docs SELECT g, 'document number ' || g || ' of the upgrade test', NULL
  FROM generate_series(1, 200) g;
UPDATE up_docs SET fp = simhash(body);
CREATE INDEX up_docs_fp ON up_docs USING simhash_perm (fp);
SELECT proname FROM pg_proc WHERE proname LIKE 'minhash%' OR proname = 'simhash_jaccard';

ALTER EXTENSION simhash UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'simhash';
-- the objects 1.1 adds, with their properties
SELECT p.proname, p.provolatile, p.proisstrict, p.proparallel
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash'
 WHERE p.proname IN ('simhash_jaccard', 'simhash_chargrams', 'minhash',
                     'minhash_jaccard', 'minhash_bands', 'simhash_is_reliable')
 ORDER BY 1;
-- stored fingerprints are unchanged and still found through the index
SELECT count(*) AS unchanged FROM up_docs WHERE fp = simhash(body);
SET enable_seqscan = off;
SELECT id FROM up_docs WHERE hamming_near(fp, simhash(text 'document number 17 of the upgrade test'), 0);
RESET enable_seqscan;
DROP TABLE up_docs;

-- a fresh install of the current version has exactly the same objects
CREATE TEMP TABLE updated_objects AS
  SELECT pg_describe_object(classid, objid, objsubid) AS object
    FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash'
   WHERE d.deptype = 'e';
DROP EXTENSION simhash;
CREATE EXTENSION simhash;
SELECT count(*) AS objects,
       count(*) FILTER (WHERE object NOT IN (SELECT object FROM updated_objects)) AS only_fresh
  FROM (SELECT pg_describe_object(classid, objid, objsubid) AS object
          FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash'
         WHERE d.deptype = 'e') s;
SELECT count(*) AS only_updated FROM updated_objects
 WHERE object NOT IN (SELECT pg_describe_object(classid, objid, objsubid)
                        FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash'
                       WHERE d.deptype = 'e');
