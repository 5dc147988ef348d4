/* simhash 1.4 -> 1.5: near-duplicate exclusion constraints on simhash_perm */

\echo Use "ALTER EXTENSION simhash UPDATE TO '1.5'" to load this file. \quit

-- fp ~= v: "within the max_distance of the constraint's index", the
-- operator of
--   EXCLUDE USING simhash_perm (fp WITH ~=) WITH (max_distance = 3)
-- An exclusion operator takes two fingerprints and no radius, so the radius
-- is the index's (src/index/permexclude.c); only the index can evaluate it,
-- and the function raises an error that points to hamming_near() when a
-- query uses the operator.  IMMUTABLE and STRICT as the check requires
-- (NULL fingerprints never conflict).
CREATE FUNCTION simhash_near_duplicate(simhash64, simhash64) RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME', 'simhash_near_duplicate'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash_near_duplicate(pg_catalog.int8, pg_catalog.int8) RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME', 'simhash_near_duplicate'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR ~= (
	LEFTARG = simhash64, RIGHTARG = simhash64,
	FUNCTION = simhash_near_duplicate, COMMUTATOR = OPERATOR(~=),
	RESTRICT = pg_catalog.contsel, JOIN = pg_catalog.contjoinsel);
CREATE OPERATOR ~= (
	LEFTARG = pg_catalog.int8, RIGHTARG = pg_catalog.int8,
	FUNCTION = simhash_near_duplicate, COMMUTATOR = OPERATOR(~=),
	RESTRICT = pg_catalog.contsel, JOIN = pg_catalog.contjoinsel);

-- Strategy 3 of simhash_perm: the exclusion operator.
ALTER OPERATOR FAMILY simhash_perm_ops USING simhash_perm ADD
	OPERATOR 3 ~= (simhash64, simhash64);
ALTER OPERATOR FAMILY simhash_perm_bigint_ops USING simhash_perm ADD
	OPERATOR 3 ~= (pg_catalog.int8, pg_catalog.int8);

--
-- Deduplicating the rows of a query: simhash_pairs() and simhash_clusters()
-- over whatever a SELECT returns as (key, fingerprint): a filtered table,
-- a join, rows from several sources.  (The relation forms read partitioned
-- tables, foreign tables, views and tables with row-level security through
-- the executor too, from 1.5.)
--   SELECT * FROM simhash_pairs_query('SELECT id, fp FROM docs WHERE lang = ''en''', 3)
--     AS p(a bigint, b bigint, distance integer);
-- VOLATILE: the query may call anything.  PARALLEL RESTRICTED: they sort
-- into temporary files and run the query themselves.
--
CREATE FUNCTION simhash_pairs_query(query pg_catalog.text,
									k pg_catalog.int4 DEFAULT 3,
									progress pg_catalog.bool DEFAULT false)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'simhash_pairs_query'
	LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION simhash_clusters_query(query pg_catalog.text,
									   k pg_catalog.int4 DEFAULT 3,
									   singletons pg_catalog.bool DEFAULT false,
									   progress pg_catalog.bool DEFAULT false)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'simhash_clusters_query'
	LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

--
-- The top-k longest-sentence signature (src/fingerprint/sentences.c;
-- docs/fingerprint_format.md, "The sentence signature"): the hashes of a
-- text's k longest sentences, sorted, for GIN (&&, @>) and the overlap of
-- two signatures.  A stored format, frozen like the fingerprint.
--
CREATE FUNCTION simhash_sentences(body pg_catalog.text, k pg_catalog.int4 DEFAULT 5)
	RETURNS pg_catalog.int8[]
	AS 'MODULE_PATHNAME', 'simhash_sentences'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION simhash_sentence_overlap(a pg_catalog.int8[], b pg_catalog.int8[])
	RETURNS pg_catalog.int4
	AS 'MODULE_PATHNAME', 'simhash_sentence_overlap'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
