/* simhash 1.5 -> 1.6: the 128-bit fingerprint; Hamming distance of bit(n) codes */

\echo Use "ALTER EXTENSION simhash UPDATE TO '1.6'" to load this file. \quit

-- simhash128(doc): the same features and weights as simhash(doc) voting on
-- 128 bits (docs/fingerprint_format.md, "The 128-bit fingerprint").  The
-- result always has 128 bits: store it in a bit(128) column.  (PostgreSQL
-- keeps no length in a function's result type, so the catalog says "bit".)
-- The leftmost 64 bits are simhash(doc)::bit(64).  Compare two with
-- bit_count(a # b), the Hamming distance.
CREATE FUNCTION simhash128(doc pg_catalog.text,
						   shingles pg_catalog.int4[] DEFAULT '{1,3}',
						   weighting pg_catalog.text DEFAULT 'tf',
						   cjk pg_catalog.text DEFAULT 'unigram')
	RETURNS pg_catalog.bit
	AS 'MODULE_PATHNAME', 'simhash128_text'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Codes wider than 64 bits (simhash128, PDQ image hashes written as
-- ('x' || hex)::bit(256), binary vectors) as bit(n): the Hamming distance,
-- the within-k test and the distance operator, for codes of one width (a
-- pair of two widths is an error naming both).  Sequential for now: no
-- index serves them yet.
CREATE FUNCTION hamming_distance(pg_catalog.bit, pg_catalog.bit) RETURNS pg_catalog.int4
	AS 'MODULE_PATHNAME', 'simhash_bit_hamming_distance'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR <-> (
	LEFTARG = pg_catalog.bit, RIGHTARG = pg_catalog.bit,
	PROCEDURE = hamming_distance, COMMUTATOR = <->
);

CREATE FUNCTION hamming_near(pg_catalog.bit, pg_catalog.bit, k pg_catalog.int4) RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME', 'simhash_bit_hamming_near'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
