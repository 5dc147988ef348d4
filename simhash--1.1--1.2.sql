/* simhash 1.1 -> 1.2: a checker for simhash_perm indexes; inspection only for those allowed */

\echo Use "ALTER EXTENSION simhash UPDATE TO '1.2'" to load this file. \quit

-- Check a simhash_perm index as contrib/amcheck checks a btree: every page's
-- structure, key order within and across pages, high keys, levels,
-- right-link chains, parent/child agreement, the same number of entries in
-- every table, and with heapallindexed every row of the table present in
-- every table.  Raises an error at the first problem; otherwise one row per
-- table.  VOLATILE and PARALLEL RESTRICTED: it locks the table and index.
CREATE FUNCTION simhash_perm_check(index pg_catalog.regclass,
	heapallindexed pg_catalog.bool DEFAULT false,
	OUT table_no pg_catalog.int4, OUT levels pg_catalog.int4,
	OUT pages pg_catalog.int8, OUT entries pg_catalog.int8,
	OUT incomplete_splits pg_catalog.int8)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'simhash_perm_check'
	LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

-- Both inspection functions read what an index holds; as with amcheck and
-- pgstattuple, only superusers and those granted EXECUTE may call them (and
-- they must also be allowed to SELECT from the table).
REVOKE ALL ON FUNCTION simhash_perm_check(pg_catalog.regclass, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION simhash_perm_info(pg_catalog.regclass) FROM PUBLIC;
