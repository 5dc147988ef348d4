/* simhash 1.0 -> 1.1: verification and candidate functions for near-duplicate search */

\echo Use "ALTER EXTENSION simhash UPDATE TO '1.1'" to load this file. \quit

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
	RETURNS simhash
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
