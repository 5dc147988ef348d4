/* simhash--1.4.sql: a fresh install of simhash 1.4 */

-- The objects of simhash--1.0.sql and the update scripts up to
-- simhash--1.3--1.4.sql in one script: CREATE EXTENSION simhash runs this
-- file alone, while an installation of 1.0 to 1.3 reaches 1.4 through
-- ALTER EXTENSION simhash UPDATE.  Both paths must leave the same catalog
-- entries; the regression test "upgrade" compares them property by
-- property.  Like those two, this file never changes once released: later
-- changes go into a new version's scripts.
--
-- Since 1.4 the type is simhash64: simhash is the function alone, so that
-- simhash('some words') is a call of simhash(text), not a cast.

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION simhash" to load this file. \quit

--
-- The type.  A fingerprint is an unsigned 64-bit value stored like int8.
--
CREATE TYPE simhash64;

CREATE FUNCTION simhash_in(cstring) RETURNS simhash64
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash_out(simhash64) RETURNS cstring
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash_recv(internal) RETURNS simhash64
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash_send(simhash64) RETURNS pg_catalog.bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE simhash64 (
	INPUT = simhash_in,
	OUTPUT = simhash_out,
	RECEIVE = simhash_recv,
	SEND = simhash_send,
	LIKE = pg_catalog.int8
);

COMMENT ON TYPE simhash64 IS '64-bit simhash fingerprint';

--
-- Casts.  bigint <-> simhash keep every bit (negative bigints are the
-- fingerprints with the top bit set), so they need no function.
--
CREATE CAST (simhash64 AS pg_catalog.int8) WITHOUT FUNCTION;
CREATE CAST (pg_catalog.int8 AS simhash64) WITHOUT FUNCTION;

CREATE FUNCTION simhash_to_bit(simhash64) RETURNS pg_catalog.bit
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (simhash64 AS pg_catalog.bit) WITH FUNCTION simhash_to_bit(simhash64);

CREATE FUNCTION simhash_to_bytea(simhash64) RETURNS pg_catalog.bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (simhash64 AS pg_catalog.bytea) WITH FUNCTION simhash_to_bytea(simhash64);

--
-- Comparison, in unsigned order, for the btree and hash operator classes.
--
CREATE FUNCTION simhash_eq(simhash64, simhash64) RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash_ne(simhash64, simhash64) RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash_lt(simhash64, simhash64) RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash_le(simhash64, simhash64) RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash_gt(simhash64, simhash64) RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash_ge(simhash64, simhash64) RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash_cmp(simhash64, simhash64) RETURNS pg_catalog.int4
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash_sortsupport(internal) RETURNS pg_catalog.void
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash_hash(simhash64) RETURNS pg_catalog.int4
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash_hash_extended(simhash64, pg_catalog.int8) RETURNS pg_catalog.int8
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

CREATE OPERATOR = (
	LEFTARG = simhash64, RIGHTARG = simhash64, PROCEDURE = simhash_eq,
	COMMUTATOR = =, NEGATOR = <>,
	RESTRICT = pg_catalog.eqsel, JOIN = pg_catalog.eqjoinsel,
	HASHES, MERGES
);
CREATE OPERATOR <> (
	LEFTARG = simhash64, RIGHTARG = simhash64, PROCEDURE = simhash_ne,
	COMMUTATOR = <>, NEGATOR = =,
	RESTRICT = pg_catalog.neqsel, JOIN = pg_catalog.neqjoinsel
);
CREATE OPERATOR < (
	LEFTARG = simhash64, RIGHTARG = simhash64, PROCEDURE = simhash_lt,
	COMMUTATOR = >, NEGATOR = >=,
	RESTRICT = pg_catalog.scalarltsel, JOIN = pg_catalog.scalarltjoinsel
);
CREATE OPERATOR <= (
	LEFTARG = simhash64, RIGHTARG = simhash64, PROCEDURE = simhash_le,
	COMMUTATOR = >=, NEGATOR = >,
	RESTRICT = pg_catalog.scalarlesel, JOIN = pg_catalog.scalarlejoinsel
);
CREATE OPERATOR > (
	LEFTARG = simhash64, RIGHTARG = simhash64, PROCEDURE = simhash_gt,
	COMMUTATOR = <, NEGATOR = <=,
	RESTRICT = pg_catalog.scalargtsel, JOIN = pg_catalog.scalargtjoinsel
);
CREATE OPERATOR >= (
	LEFTARG = simhash64, RIGHTARG = simhash64, PROCEDURE = simhash_ge,
	COMMUTATOR = <=, NEGATOR = <,
	RESTRICT = pg_catalog.scalargesel, JOIN = pg_catalog.scalargejoinsel
);

CREATE OPERATOR CLASS simhash_ops
	DEFAULT FOR TYPE simhash64 USING btree AS
		OPERATOR 1 <,
		OPERATOR 2 <=,
		OPERATOR 3 =,
		OPERATOR 4 >=,
		OPERATOR 5 >,
		FUNCTION 1 simhash_cmp(simhash64, simhash64),
		FUNCTION 2 simhash_sortsupport(internal);

CREATE OPERATOR CLASS simhash_ops
	DEFAULT FOR TYPE simhash64 USING hash AS
		OPERATOR 1 =,
		FUNCTION 1 simhash_hash(simhash64),
		FUNCTION 2 simhash_hash_extended(simhash64, pg_catalog.int8);

--
-- Hamming distance.  The bigint forms serve fingerprints stored as bigint.
--
CREATE FUNCTION hamming_distance(simhash64, simhash64) RETURNS pg_catalog.int4
	AS 'MODULE_PATHNAME', 'simhash_hamming_distance'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION hamming_distance(pg_catalog.int8, pg_catalog.int8) RETURNS pg_catalog.int4
	AS 'MODULE_PATHNAME', 'simhash_hamming_distance'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

CREATE OPERATOR <-> (
	LEFTARG = simhash64, RIGHTARG = simhash64, PROCEDURE = hamming_distance,
	COMMUTATOR = <->
);

-- hamming_near(fp, q, k) is indexable: its support function rewrites it to
-- fp <@ simhash_within(q, k), the operator of the simhash_perm index below.
CREATE FUNCTION simhash_support(internal) RETURNS internal
	AS 'MODULE_PATHNAME', 'simhash_support'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION hamming_near(simhash64, simhash64, k pg_catalog.int4) RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME', 'simhash_hamming_near'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT simhash_support;
CREATE FUNCTION hamming_near(pg_catalog.int8, pg_catalog.int8, k pg_catalog.int4) RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME', 'simhash_hamming_near'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT simhash_support;

--
-- Fingerprints.  The default feature scheme of simhash(text) is frozen: a
-- stored fingerprint must stay reproducible (README, "The fingerprint
-- algorithm"; test fingerprint_golden).
--
CREATE FUNCTION simhash(doc pg_catalog.text,
						shingles pg_catalog.int4[] DEFAULT '{1,3}',
						weighting pg_catalog.text DEFAULT 'tf',
						cjk pg_catalog.text DEFAULT 'unigram')
	RETURNS simhash64
	AS 'MODULE_PATHNAME', 'simhash_text'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- varchar has its own entry: until 1.4, when the type was also named
-- simhash, simhash(varchar_column) was read as a cast to it.
CREATE FUNCTION simhash(doc pg_catalog.varchar,
						shingles pg_catalog.int4[] DEFAULT '{1,3}',
						weighting pg_catalog.text DEFAULT 'tf',
						cjk pg_catalog.text DEFAULT 'unigram')
	RETURNS simhash64
	AS 'MODULE_PATHNAME', 'simhash_text'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION simhash_feature_count(doc pg_catalog.text,
									  shingles pg_catalog.int4[] DEFAULT '{1,3}',
									  weighting pg_catalog.text DEFAULT 'tf',
									  cjk pg_catalog.text DEFAULT 'unigram')
	RETURNS pg_catalog.int8
	AS 'MODULE_PATHNAME', 'simhash_text_feature_count'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION simhash_tokens(doc pg_catalog.text,
							   cjk pg_catalog.text DEFAULT 'unigram')
	RETURNS pg_catalog.text[]
	AS 'MODULE_PATHNAME', 'simhash_text_tokens'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION simhash(features pg_catalog.text[]) RETURNS simhash64
	AS 'MODULE_PATHNAME', 'simhash_text_array'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION simhash(features pg_catalog.text[], weights pg_catalog.float4[])
	RETURNS simhash64
	AS 'MODULE_PATHNAME', 'simhash_text_array_weighted'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION simhash(doc pg_catalog.tsvector) RETURNS simhash64
	AS 'MODULE_PATHNAME', 'simhash_tsvector'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

--
-- The simhash_perm index: permuted-prefix tables answering hamming_near.
--
-- A query "within distance k of q" is the value simhash_within(q, k), of
-- type simhash_query; fp <@ simhash_within(q, k) is the indexable form of
-- hamming_near(fp, q, k), which the planner rewrites to it by itself.
--
CREATE TYPE simhash_query;

CREATE FUNCTION simhash_query_in(cstring) RETURNS simhash_query
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash_query_out(simhash_query) RETURNS cstring
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE simhash_query (
	INPUT = simhash_query_in,
	OUTPUT = simhash_query_out,
	INTERNALLENGTH = 16,
	ALIGNMENT = double
);

COMMENT ON TYPE simhash_query IS 'a fingerprint and a Hamming radius, the right side of <@';

-- (bigint fingerprints are cast: simhash_within(q::simhash64, k))
CREATE FUNCTION simhash_within(simhash64, k pg_catalog.int4) RETURNS simhash_query
	AS 'MODULE_PATHNAME', 'simhash_within'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION simhash_within_match(simhash64, simhash_query) RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME', 'simhash_within_match'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash_within_match(pg_catalog.int8, simhash_query) RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME', 'simhash_within_match'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION simhash_within_sel(internal, pg_catalog.oid, internal, pg_catalog.int4)
	RETURNS pg_catalog.float8
	AS 'MODULE_PATHNAME', 'simhash_within_sel'
	LANGUAGE C STABLE STRICT PARALLEL SAFE;

CREATE OPERATOR <@ (
	LEFTARG = simhash64, RIGHTARG = simhash_query,
	PROCEDURE = simhash_within_match,
	RESTRICT = simhash_within_sel
);
CREATE OPERATOR <@ (
	LEFTARG = pg_catalog.int8, RIGHTARG = simhash_query,
	PROCEDURE = simhash_within_match,
	RESTRICT = simhash_within_sel
);

CREATE FUNCTION simhash_perm_handler(internal) RETURNS index_am_handler
	AS 'MODULE_PATHNAME', 'simhash_perm_handler'
	LANGUAGE C;

CREATE ACCESS METHOD simhash_perm TYPE INDEX HANDLER simhash_perm_handler;
COMMENT ON ACCESS METHOD simhash_perm IS
	'permuted-prefix tables for exact Hamming-radius search on 64-bit fingerprints';

CREATE OPERATOR CLASS simhash_perm_ops
	DEFAULT FOR TYPE simhash64 USING simhash_perm AS
		OPERATOR 1 <@ (simhash64, simhash_query);

CREATE OPERATOR CLASS simhash_perm_bigint_ops
	DEFAULT FOR TYPE pg_catalog.int8 USING simhash_perm AS
		OPERATOR 1 <@ (pg_catalog.int8, simhash_query);

-- layout and statistics of one index, one row per table
CREATE FUNCTION simhash_perm_info(index pg_catalog.regclass,
	OUT table_no pg_catalog.int4, OUT max_distance pg_catalog.int4,
	OUT prefix_bits pg_catalog.int4, OUT prefix pg_catalog.text,
	OUT height pg_catalog.int4, OUT leaf_pages pg_catalog.int8,
	OUT entries pg_catalog.int8, OUT buckets pg_catalog.int8,
	OUT largest_bucket pg_catalog.int8, OUT blocks pg_catalog.int4,
	OUT index_pages pg_catalog.int8)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'simhash_perm_info'
	LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- Check an index as contrib/amcheck checks a btree (added in 1.2): every
-- page's structure, key order within and across pages, high keys, levels,
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

--
-- Verification and candidates (added in 1.1): exact Jaccard similarity,
-- character n-gram fingerprints, MinHash signatures and band keys, and a
-- test of whether a text has enough features for its fingerprint.
--
-- Exact Jaccard similarity of two texts' sets of distinct features: the
-- same tokenizer and shingles as simhash(), default word 3-shingles.
CREATE FUNCTION simhash_jaccard(a pg_catalog.text, b pg_catalog.text,
								shingles pg_catalog.int4[] DEFAULT '{3}',
								cjk pg_catalog.text DEFAULT 'unigram')
	RETURNS pg_catalog.float8
	AS 'MODULE_PATHNAME', 'simhash_text_jaccard'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- A fingerprint of character n-grams instead of word shingles.
CREATE FUNCTION simhash_chargrams(doc pg_catalog.text,
								  n pg_catalog.int4 DEFAULT 4,
								  weighting pg_catalog.text DEFAULT 'tf')
	RETURNS simhash64
	AS 'MODULE_PATHNAME', 'simhash_text_chargrams'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- MinHash signature: n slots, each the minimum of one hash permutation over
-- the text's distinct features (the feature set of simhash_jaccard).
CREATE FUNCTION minhash(doc pg_catalog.text,
						n pg_catalog.int4 DEFAULT 128,
						shingles pg_catalog.int4[] DEFAULT '{3}',
						cjk pg_catalog.text DEFAULT 'unigram')
	RETURNS pg_catalog.int8[]
	AS 'MODULE_PATHNAME', 'minhash_text'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Share of equal slots: an unbiased estimate of the Jaccard similarity.
CREATE FUNCTION minhash_jaccard(a pg_catalog.int8[], b pg_catalog.int8[])
	RETURNS pg_catalog.float8
	AS 'MODULE_PATHNAME', 'minhash_jaccard'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- One key per band of n / bands slots; two signatures that agree on a whole
-- band share its key, so minhash_bands(x) && minhash_bands(y) finds
-- candidates, with a GIN index on the keys.
CREATE FUNCTION minhash_bands(signature pg_catalog.int8[],
							  bands pg_catalog.int4)
	RETURNS pg_catalog.int8[]
	AS 'MODULE_PATHNAME', 'minhash_bands'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Does a text's fingerprint rest on enough features to be trusted at small
-- k?  Below 64 features (about 32 words) most pairs within k = 3 of the
-- Debian descriptions were not near-duplicates (docs/quality.md).
CREATE FUNCTION simhash_is_reliable(doc pg_catalog.text,
									min_features pg_catalog.int8 DEFAULT 64,
									shingles pg_catalog.int4[] DEFAULT '{1,3}',
									weighting pg_catalog.text DEFAULT 'tf',
									cjk pg_catalog.text DEFAULT 'unigram')
	RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME', 'simhash_text_is_reliable'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

--
-- Nearest neighbours (added in 1.3): ORDER BY fp <-> q through a
-- simhash_perm index.  A bigint fingerprint is compared with a simhash64
-- query (bigint <-> bigint is left alone: btree_gist defines it as the
-- absolute difference).
--
CREATE FUNCTION hamming_distance(pg_catalog.int8, simhash64) RETURNS pg_catalog.int4
	AS 'MODULE_PATHNAME', 'simhash_hamming_distance'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION hamming_distance(simhash64, pg_catalog.int8) RETURNS pg_catalog.int4
	AS 'MODULE_PATHNAME', 'simhash_hamming_distance'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

CREATE OPERATOR <-> (
	LEFTARG = pg_catalog.int8, RIGHTARG = simhash64,
	PROCEDURE = hamming_distance, COMMUTATOR = <->
);
CREATE OPERATOR <-> (
	LEFTARG = simhash64, RIGHTARG = pg_catalog.int8,
	PROCEDURE = hamming_distance, COMMUTATOR = <->
);

-- Strategy 2 of simhash_perm: the distance, as an ordering operator.
ALTER OPERATOR FAMILY simhash_perm_ops USING simhash_perm ADD
	OPERATOR 2 <-> (simhash64, simhash64) FOR ORDER BY pg_catalog.integer_ops;
ALTER OPERATOR FAMILY simhash_perm_bigint_ops USING simhash_perm ADD
	OPERATOR 2 <-> (pg_catalog.int8, simhash64) FOR ORDER BY pg_catalog.integer_ops;

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
