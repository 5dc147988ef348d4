/* simhash 1.2 -> 1.3: nearest neighbours through simhash_perm */

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
