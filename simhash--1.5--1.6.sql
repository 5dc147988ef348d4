/* simhash 1.5 -> 1.6: the 128-bit fingerprint */

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
