--
-- Upgrade path: an installation of 1.0 updates to the current version;
-- fingerprints stored under 1.0 (and an index on them) stay valid; and the
-- updated extension is the same, in every catalog property, as a fresh
-- install.  The two paths run different scripts: simhash--1.0.sql then
-- every update script, against the current version's complete script alone.
--
-- the fixtures of the setup test end here
DROP TABLE shapes, shape_queries;
DROP FUNCTION pseudo_fp(bigint), flip_bits(simhash64, bigint, int), plan(text), copy_shapes(),
	wide_random(int), wide_mask(int, int);
DROP EXTENSION simhash CASCADE;
CREATE EXTENSION simhash VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'simhash';
CREATE TABLE up_docs (id int, body text, fp simhash);
INSERT INTO up_docs SELECT g, 'document number ' || g || ' of the upgrade test', NULL
  FROM generate_series(1, 200) g;
UPDATE up_docs SET fp = simhash(body);
CREATE INDEX up_docs_fp ON up_docs USING simhash_perm (fp);
SELECT proname FROM pg_proc WHERE proname LIKE 'minhash%' OR proname = 'simhash_jaccard';

-- under 1.5, a view and an index that call the two functions 1.6 gives a
-- tokens parameter (in place: simhash--1.5--1.6.sql says why)
ALTER EXTENSION simhash UPDATE TO '1.5';
CREATE VIEW up_sim AS SELECT a.id AS a, b.id AS b, simhash_jaccard(a.body, b.body) AS j
  FROM up_docs a JOIN up_docs b ON b.id = a.id + 1;
CREATE INDEX up_docs_mh ON up_docs USING gin (minhash(body, 16));
CREATE TABLE up_before AS SELECT * FROM up_sim;
-- and simhash() (which gets tokens too) in an index and a generated column
CREATE INDEX up_docs_fpx ON up_docs USING simhash_perm (simhash(body));
CREATE TABLE up_gen (body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO up_gen VALUES ('inserted under 1.5');
-- what \dx said of 1.5 (its simhash.control's comment)
COMMENT ON EXTENSION simhash IS '64-bit simhash fingerprints of text, Hamming-distance search and the simhash_perm index';

ALTER EXTENSION simhash UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'simhash';
-- \dx describes 1.6 after the update, as after CREATE EXTENSION; the
-- pairs and clusters functions are no longer STRICT (a NULL argument is an
-- error naming it)
SELECT obj_description(oid, 'pg_extension') FROM pg_extension WHERE extname = 'simhash';
SELECT p.oid::regprocedure, p.proisstrict FROM pg_proc p
 WHERE p.proname IN ('simhash_pairs', 'simhash_clusters', 'simhash_pairs_query', 'simhash_clusters_query')
 ORDER BY p.oid::regprocedure::text;
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
-- and the index built under 1.0 serves nearest-neighbour queries (1.3)
EXPLAIN (COSTS OFF) SELECT id FROM up_docs ORDER BY fp <-> simhash(text 'document number 17 of the upgrade test') LIMIT 1;
SELECT id FROM up_docs ORDER BY fp <-> simhash(text 'document number 17 of the upgrade test') LIMIT 1;
RESET enable_seqscan;
-- 1.4 renamed the type simhash64: the column follows, and simhash('...')
-- on a bare literal is now a call of the function, not a cast
SELECT format_type(atttypid, atttypmod) AS fp_type FROM pg_attribute
 WHERE attrelid = 'up_docs'::regclass AND attname = 'fp';
SELECT id FROM up_docs WHERE hamming_near(fp, simhash('document number 17 of the upgrade test'), 0);
-- the view and the index made under 1.5 survive, and their calls keep
-- word tokens; the new parameter is there
SELECT count(*) AS rows, count(*) FILTER (WHERE s.j = b.j) AS same_jaccard
  FROM up_sim s JOIN up_before b USING (a, b);
CREATE FUNCTION up_index_scans(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	l text;
BEGIN
	FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		IF l LIKE '%Index Scan%' THEN
			RETURN NEXT ltrim(l, ' ->');
		END IF;
	END LOOP;
END $$;
SET enable_seqscan = off;
SELECT up_index_scans($$SELECT id FROM up_docs WHERE minhash(body, 16) @> minhash(text 'document number 17 of the upgrade test', 16)$$);
SELECT id FROM up_docs WHERE minhash(body, 16) @> minhash(text 'document number 17 of the upgrade test', 16);
SELECT up_index_scans($$SELECT id FROM up_docs WHERE hamming_near(simhash(body), simhash(text 'document number 17 of the upgrade test'), 0)$$);
SELECT id FROM up_docs WHERE hamming_near(simhash(body), simhash(text 'document number 17 of the upgrade test'), 0);
RESET enable_seqscan;
INSERT INTO up_gen VALUES ('inserted under 1.6');
SELECT body, fp = simhash(body) AS same_fingerprint FROM up_gen ORDER BY body;
SELECT pg_get_function_arguments('simhash_jaccard'::regproc) AS jaccard_args,
	   simhash_jaccard('版本 1.0 发布', '版本 1.1 发布', tokens => 'chars') AS chars;
DROP VIEW up_sim;
DROP TABLE up_docs, up_before, up_gen;
DROP FUNCTION up_index_scans(text);

--
-- simhash_catalog: the extension as the catalogs hold it, one row per
-- (object, property, value).  The objects are the extension's members and
-- what hangs on them (array types, the operators and support functions of
-- operator families); the properties, every column of each object's catalog
-- row, its dependencies, its comment and initial privileges.  OIDs differ
-- between installations: each column holding one shows the name of what it
-- points to instead (a column left raw that points into the extension would
-- make the two paths differ, so the comparison cannot silently miss one).
-- Node trees hold source positions: their deparsed forms are compared.  An
-- object in a catalog that catalog_rows does not read shows in the summary
-- below with fewer objects "with_columns" than "objects": add its catalog.
-- An aggregate's pg_aggregate row adds its properties (agg...) to those of
-- its function.
--
CREATE TEMP VIEW simhash_catalog AS
WITH ext AS (
  SELECT oid FROM pg_extension WHERE extname = 'simhash'
), members AS (
  SELECT d.classid, d.objid FROM pg_depend d, ext
   WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid
     AND d.deptype = 'e'
), objects AS (
  SELECT classid, objid FROM members
  UNION
  SELECT d.classid, d.objid FROM pg_depend d
    JOIN members m ON d.refclassid = m.classid AND d.refobjid = m.objid
   WHERE d.deptype IN ('a', 'i')
  UNION
  SELECT 'pg_extension'::regclass, oid FROM ext
), catalog_rows AS (
  SELECT 'pg_proc'::regclass AS classid, p.oid AS objid,
         to_jsonb(p) - 'oid' - 'proargdefaults' || jsonb_build_object(
           'pronamespace', p.pronamespace::regnamespace,
           'proowner', p.proowner::regrole,
           'prolang', (SELECT lanname FROM pg_language WHERE oid = p.prolang),
           'provariadic', format_type(p.provariadic, NULL),
           'prosupport', p.prosupport::oid::regprocedure,
           'prorettype', format_type(p.prorettype, NULL),
           'proargtypes', p.proargtypes::oid[]::regtype[],
           'proallargtypes', p.proallargtypes::regtype[],
           'protrftypes', p.protrftypes::regtype[],
           'prosqlbody', pg_get_function_sqlbody(p.oid),
           'arguments', pg_get_function_arguments(p.oid),
           'result', pg_get_function_result(p.oid)) AS props
    FROM pg_proc p
  UNION ALL
  SELECT 'pg_proc'::regclass, a.aggfnoid::oid,
         to_jsonb(a) - 'aggfnoid' || jsonb_build_object(
           'aggtransfn', a.aggtransfn::oid::regprocedure,
           'aggfinalfn', a.aggfinalfn::oid::regprocedure,
           'aggcombinefn', a.aggcombinefn::oid::regprocedure,
           'aggserialfn', a.aggserialfn::oid::regprocedure,
           'aggdeserialfn', a.aggdeserialfn::oid::regprocedure,
           'aggmtransfn', a.aggmtransfn::oid::regprocedure,
           'aggminvtransfn', a.aggminvtransfn::oid::regprocedure,
           'aggmfinalfn', a.aggmfinalfn::oid::regprocedure,
           'aggsortop', a.aggsortop::regoperator,
           'aggtranstype', format_type(a.aggtranstype, NULL),
           'aggmtranstype', format_type(a.aggmtranstype, NULL))
    FROM pg_aggregate a
  UNION ALL
  SELECT 'pg_type'::regclass, t.oid,
         to_jsonb(t) - 'oid' - 'typdefaultbin' || jsonb_build_object(
           'typnamespace', t.typnamespace::regnamespace,
           'typowner', t.typowner::regrole,
           'typrelid', t.typrelid::regclass,
           'typsubscript', t.typsubscript::oid::regprocedure,
           'typelem', format_type(t.typelem, NULL),
           'typarray', format_type(t.typarray, NULL),
           'typinput', t.typinput::oid::regprocedure,
           'typoutput', t.typoutput::oid::regprocedure,
           'typreceive', t.typreceive::oid::regprocedure,
           'typsend', t.typsend::oid::regprocedure,
           'typmodin', t.typmodin::oid::regprocedure,
           'typmodout', t.typmodout::oid::regprocedure,
           'typanalyze', t.typanalyze::oid::regprocedure,
           'typbasetype', format_type(t.typbasetype, NULL),
           'typcollation', t.typcollation::regcollation)
    FROM pg_type t
  UNION ALL
  SELECT 'pg_operator'::regclass, o.oid,
         to_jsonb(o) - 'oid' || jsonb_build_object(
           'oprnamespace', o.oprnamespace::regnamespace,
           'oprowner', o.oprowner::regrole,
           'oprleft', format_type(o.oprleft, NULL),
           'oprright', format_type(o.oprright, NULL),
           'oprresult', format_type(o.oprresult, NULL),
           'oprcom', o.oprcom::regoperator,
           'oprnegate', o.oprnegate::regoperator,
           'oprcode', o.oprcode::oid::regprocedure,
           'oprrest', o.oprrest::oid::regprocedure,
           'oprjoin', o.oprjoin::oid::regprocedure)
    FROM pg_operator o
  UNION ALL
  SELECT 'pg_cast'::regclass, c.oid,
         to_jsonb(c) - 'oid' || jsonb_build_object(
           'castsource', format_type(c.castsource, NULL),
           'casttarget', format_type(c.casttarget, NULL),
           'castfunc', c.castfunc::regprocedure)
    FROM pg_cast c
  UNION ALL
  SELECT 'pg_opclass'::regclass, c.oid,
         to_jsonb(c) - 'oid' || jsonb_build_object(
           'opcmethod', (SELECT amname FROM pg_am WHERE oid = c.opcmethod),
           'opcnamespace', c.opcnamespace::regnamespace,
           'opcowner', c.opcowner::regrole,
           'opcfamily', pg_describe_object('pg_opfamily'::regclass, c.opcfamily, 0),
           'opcintype', format_type(c.opcintype, NULL),
           'opckeytype', format_type(c.opckeytype, NULL))
    FROM pg_opclass c
  UNION ALL
  SELECT 'pg_opfamily'::regclass, f.oid,
         to_jsonb(f) - 'oid' || jsonb_build_object(
           'opfmethod', (SELECT amname FROM pg_am WHERE oid = f.opfmethod),
           'opfnamespace', f.opfnamespace::regnamespace,
           'opfowner', f.opfowner::regrole)
    FROM pg_opfamily f
  UNION ALL
  SELECT 'pg_amop'::regclass, a.oid,
         to_jsonb(a) - 'oid' || jsonb_build_object(
           'amopfamily', pg_describe_object('pg_opfamily'::regclass, a.amopfamily, 0),
           'amoplefttype', format_type(a.amoplefttype, NULL),
           'amoprighttype', format_type(a.amoprighttype, NULL),
           'amopopr', a.amopopr::regoperator,
           'amopmethod', (SELECT amname FROM pg_am WHERE oid = a.amopmethod),
           'amopsortfamily', pg_describe_object('pg_opfamily'::regclass, a.amopsortfamily, 0))
    FROM pg_amop a
  UNION ALL
  SELECT 'pg_amproc'::regclass, a.oid,
         to_jsonb(a) - 'oid' || jsonb_build_object(
           'amprocfamily', pg_describe_object('pg_opfamily'::regclass, a.amprocfamily, 0),
           'amproclefttype', format_type(a.amproclefttype, NULL),
           'amprocrighttype', format_type(a.amprocrighttype, NULL),
           'amproc', a.amproc::oid::regprocedure)
    FROM pg_amproc a
  UNION ALL
  SELECT 'pg_am'::regclass, a.oid,
         to_jsonb(a) - 'oid' || jsonb_build_object(
           'amhandler', a.amhandler::oid::regprocedure)
    FROM pg_am a
  UNION ALL
  SELECT 'pg_extension'::regclass, x.oid,
         to_jsonb(x) - 'oid' || jsonb_build_object(
           'extowner', x.extowner::regrole,
           'extnamespace', x.extnamespace::regnamespace,
           'extconfig', x.extconfig::regclass[])
    FROM pg_extension x
)
SELECT o.classid::regclass::text AS catalog,
       pg_describe_object(o.classid, o.objid, 0) AS object,
       prop.property, prop.value
  FROM objects o
  CROSS JOIN LATERAL (
    SELECT 'extension member' AS property,
           (o.classid, o.objid) IN (SELECT classid, objid FROM members)::text AS value
    UNION ALL
    SELECT 'column ' || c.key, c.value
      FROM catalog_rows r, jsonb_each_text(r.props) c
     WHERE r.classid = o.classid AND r.objid = o.objid
    UNION ALL
    SELECT 'depends on ' || pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid),
           string_agg(d.deptype::text, ',' ORDER BY d.deptype)
      FROM pg_depend d
     WHERE d.classid = o.classid AND d.objid = o.objid
     GROUP BY d.refclassid, d.refobjid, d.refobjsubid
    UNION ALL
    SELECT 'comment' || CASE WHEN c.objsubid <> 0 THEN ' on ' || c.objsubid ELSE '' END,
           c.description
      FROM pg_description c
     WHERE c.classoid = o.classid AND c.objoid = o.objid
    UNION ALL
    SELECT 'initial privileges' || CASE WHEN i.objsubid <> 0 THEN ' on ' || i.objsubid ELSE '' END,
           i.privtype::text || ' ' || i.initprivs::text
      FROM pg_init_privs i
     WHERE i.classoid = o.classid AND i.objoid = o.objid
  ) prop(property, value);

-- the updated extension ...
CREATE TEMP TABLE catalog_updated AS SELECT * FROM simhash_catalog;
-- ... and a fresh install of the current version
DROP EXTENSION simhash;
CREATE EXTENSION simhash;
SELECT extversion FROM pg_extension WHERE extname = 'simhash';
CREATE TEMP TABLE catalog_fresh AS SELECT * FROM simhash_catalog;

-- what the comparison covers: every object has its catalog row, and no
-- two objects share a description
SELECT catalog, count(DISTINCT object) AS objects,
       count(DISTINCT object) FILTER (WHERE property LIKE 'column %') AS with_columns,
       count(*) FILTER (WHERE property = 'comment') AS comments
  FROM catalog_fresh GROUP BY catalog ORDER BY catalog;
SELECT count(*) AS duplicate_properties
  FROM (SELECT object, property FROM catalog_fresh
         GROUP BY object, property HAVING count(*) > 1) s;

-- every difference between the two paths: expected none
(SELECT 'only updated' AS path, * FROM catalog_updated
 EXCEPT ALL
 SELECT 'only updated', * FROM catalog_fresh)
UNION ALL
(SELECT 'only fresh', * FROM catalog_fresh
 EXCEPT ALL
 SELECT 'only fresh', * FROM catalog_updated)
ORDER BY catalog, object, property, path;

-- Every released version, installed as a user of it would have it (only
-- 1.0 has a script of its own; CREATE EXTENSION reaches the others through
-- the update scripts), then updated: each ends equal to the fresh install,
-- property by property.
CREATE TEMP TABLE version_paths (version text, differences bigint);
DO $$
DECLARE
	v text;
BEGIN
	FOR v IN SELECT unnest(ARRAY['1.0', '1.1', '1.2', '1.3', '1.4', '1.5']) LOOP
		DROP EXTENSION simhash;
		EXECUTE format('CREATE EXTENSION simhash VERSION %L', v);
		ALTER EXTENSION simhash UPDATE;
		INSERT INTO version_paths
		SELECT v, count(*) FROM (
		  (SELECT * FROM simhash_catalog EXCEPT ALL SELECT * FROM catalog_fresh)
		  UNION ALL
		  (SELECT * FROM catalog_fresh EXCEPT ALL SELECT * FROM simhash_catalog)) d;
	END LOOP;
END $$;
SELECT * FROM version_paths ORDER BY version;
SELECT extversion FROM pg_extension WHERE extname = 'simhash';
-- every version can be installed
SELECT string_agg(version, ' ' ORDER BY version) AS versions
  FROM pg_available_extension_versions WHERE name = 'simhash';
