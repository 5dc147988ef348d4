/* simhash 1.2 -> 1.3: nearest neighbours through simhash_perm; all pairs and clusters over a table */

\echo Use "ALTER EXTENSION simhash UPDATE TO '1.3'" to load this file. \quit
--
-- Nearest neighbours (added in 1.3): ORDER BY fp <-> q through a
-- simhash_perm index.  A bigint fingerprint is compared with a simhash
-- query (bigint <-> bigint is left alone: btree_gist defines it as the
-- absolute difference).
--
CREATE FUNCTION hamming_distance(pg_catalog.int8, simhash) RETURNS pg_catalog.int4
	AS 'MODULE_PATHNAME', 'simhash_hamming_distance'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION hamming_distance(simhash, pg_catalog.int8) RETURNS pg_catalog.int4
	AS 'MODULE_PATHNAME', 'simhash_hamming_distance'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

CREATE OPERATOR <-> (
	LEFTARG = pg_catalog.int8, RIGHTARG = simhash,
	PROCEDURE = hamming_distance, COMMUTATOR = <->
);
CREATE OPERATOR <-> (
	LEFTARG = simhash, RIGHTARG = pg_catalog.int8,
	PROCEDURE = hamming_distance, COMMUTATOR = <->
);

-- Strategy 2 of simhash_perm: the distance, as an ordering operator.
ALTER OPERATOR FAMILY simhash_perm_ops USING simhash_perm ADD
	OPERATOR 2 <-> (simhash, simhash) FOR ORDER BY pg_catalog.integer_ops;
ALTER OPERATOR FAMILY simhash_perm_bigint_ops USING simhash_perm ADD
	OPERATOR 2 <-> (pg_catalog.int8, simhash) FOR ORDER BY pg_catalog.integer_ops;

--
-- Deduplicating a whole table (added in 1.3): every pair of rows within
-- Hamming distance k, and the clusters they form, by sorting the table
-- once per permuted table instead of probing an index once per row.  The
-- result's key columns take the type of the table's key column, given in
-- the column definition list:
--   SELECT * FROM simhash_pairs('docs', 'id', 'fp', 3)
--     AS p(a bigint, b bigint, distance integer);
--   SELECT * FROM simhash_clusters('docs', 'id', 'fp', 3)
--     AS c(id bigint, cluster bigint);
-- STABLE: they read the table under the statement's snapshot.  PARALLEL
-- RESTRICTED: they sort into temporary files.
--
CREATE FUNCTION simhash_pairs(source pg_catalog.regclass,
							  key_column pg_catalog.name,
							  fp_column pg_catalog.name,
							  k pg_catalog.int4 DEFAULT 3,
							  progress pg_catalog.bool DEFAULT false)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'simhash_pairs'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION simhash_clusters(source pg_catalog.regclass,
								 key_column pg_catalog.name,
								 fp_column pg_catalog.name,
								 k pg_catalog.int4 DEFAULT 3,
								 singletons pg_catalog.bool DEFAULT false,
								 progress pg_catalog.bool DEFAULT false)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'simhash_clusters'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
