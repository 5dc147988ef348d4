/* simhash 1.5 -> 1.6: the 128-bit fingerprint; Hamming distance of bit(n) codes; character tokens; boilerplate sentences; simhash_perm_info's column radius */

\echo Use "ALTER EXTENSION simhash UPDATE TO '1.6'" to load this file. \quit

-- simhash128(doc): the same features and weights as simhash(doc) voting on
-- 128 bits (docs/fingerprint_format.md, "The 128-bit fingerprint").  The
-- result always has 128 bits: store it in a bit(128) column.  (PostgreSQL
-- keeps no length in a function's result type, so the catalog says "bit".)
-- The leftmost 64 bits are simhash(doc)::bit(64).  Compare two with
-- bit_count(a # b), the Hamming distance.  tokens => 'chars' makes every
-- letter or digit a token (see simhash_jaccard below).
CREATE FUNCTION simhash128(doc pg_catalog.text,
						   shingles pg_catalog.int4[] DEFAULT '{1,3}',
						   weighting pg_catalog.text DEFAULT 'tf',
						   cjk pg_catalog.text DEFAULT 'unigram',
						   tokens pg_catalog.text DEFAULT 'words')
	RETURNS pg_catalog.bit
	AS 'MODULE_PATHNAME', 'simhash128_text'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Codes wider than 64 bits (simhash128, PDQ image hashes written as
-- ('x' || hex)::bit(256), binary vectors) as bit(n): the Hamming distance,
-- the within-k test and the distance operator, for codes of one width (a
-- pair of two widths is an error naming both).  A
-- simhash_perm index on the column answers them (below).  The distance
-- function is not called hamming_distance: pgvector has
-- hamming_distance(bit, bit) (a float8), and both extensions must fit in
-- one schema.
CREATE FUNCTION bit_hamming_distance(pg_catalog.bit, pg_catalog.bit) RETURNS pg_catalog.int4
	AS 'MODULE_PATHNAME', 'simhash_bit_hamming_distance'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR <-> (
	LEFTARG = pg_catalog.bit, RIGHTARG = pg_catalog.bit,
	PROCEDURE = bit_hamming_distance, COMMUTATOR = <->
);

CREATE FUNCTION hamming_near(pg_catalog.bit, pg_catalog.bit, k pg_catalog.int4) RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME', 'simhash_bit_hamming_near'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- The simhash_perm index on bit(n) codes: multi-index hashing (Norouzi,
-- Punjani and Fleet), the code cut into substrings, each a table of the
-- index (src/index/README.perm, "Codes wider than 64 bits").  As for 64-bit
-- fingerprints, a query "within k of q" is a value, hamming_within(q, k),
-- and code <@ hamming_within(q, k) is the indexable form of
-- hamming_near(code, q, k), which the planner rewrites to it by itself.
CREATE TYPE hamming_query;

CREATE FUNCTION hamming_query_in(cstring) RETURNS hamming_query
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION hamming_query_out(hamming_query) RETURNS cstring
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE hamming_query (
	INPUT = hamming_query_in,
	OUTPUT = hamming_query_out,
	INTERNALLENGTH = VARIABLE,
	ALIGNMENT = int4,
	STORAGE = plain
);

COMMENT ON TYPE hamming_query IS 'a bit(n) code and a Hamming radius, the right side of <@';

CREATE FUNCTION hamming_within(pg_catalog.bit, k pg_catalog.int4) RETURNS hamming_query
	AS 'MODULE_PATHNAME', 'hamming_within'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- hamming_within('8f3a...', k): a quoted code resolves to this overload
-- (the parser prefers text for an unknown literal), which reads it as bit
-- does (binary digits, or 'x' and hexadecimal digits) and refuses
-- hexadecimal digits without the 'x' with the literal to write instead.
-- hamming_within(B'...', k) and a bit(n) column stay with the first.
CREATE FUNCTION hamming_within(pg_catalog.text, k pg_catalog.int4) RETURNS hamming_query
	AS 'MODULE_PATHNAME', 'hamming_within_text'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION hamming_within_match(pg_catalog.bit, hamming_query) RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME', 'hamming_within_match'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION hamming_within_sel(internal, oid, internal, pg_catalog.int4)
	RETURNS pg_catalog.float8
	AS 'MODULE_PATHNAME', 'hamming_within_sel'
	LANGUAGE C STABLE STRICT PARALLEL SAFE;

CREATE OPERATOR <@ (
	LEFTARG = pg_catalog.bit, RIGHTARG = hamming_query,
	PROCEDURE = hamming_within_match,
	RESTRICT = hamming_within_sel
);

ALTER FUNCTION hamming_near(pg_catalog.bit, pg_catalog.bit, pg_catalog.int4) SUPPORT simhash_support;

CREATE OPERATOR CLASS simhash_perm_bit_ops
	DEFAULT FOR TYPE pg_catalog.bit USING simhash_perm AS
		OPERATOR 1 <@ (pg_catalog.bit, hamming_query),
		OPERATOR 2 <-> (pg_catalog.bit, pg_catalog.bit) FOR ORDER BY pg_catalog.integer_ops;

COMMENT ON ACCESS METHOD simhash_perm IS
	'exact Hamming-radius and nearest-neighbour search: permuted-prefix tables on 64-bit fingerprints, multi-index hashing on bit(n) codes';

--
-- Leading equality columns: CREATE INDEX ... USING simhash_perm (site_id, fp)
-- searches and constrains the code within one tenant.  Every column before
-- the code is compared by = (strategy 4), hashed by its type's default hash
-- function into the index's keys.  bigint's equality joins the family of
-- its fingerprint class, so a bigint column serves either as the code (the
-- last column) or as a tenant.
--
CREATE OPERATOR CLASS simhash_perm_int2_ops
	DEFAULT FOR TYPE pg_catalog.int2 USING simhash_perm AS
		OPERATOR 4 pg_catalog.= (pg_catalog.int2, pg_catalog.int2);

CREATE OPERATOR CLASS simhash_perm_int4_ops
	DEFAULT FOR TYPE pg_catalog.int4 USING simhash_perm AS
		OPERATOR 4 pg_catalog.= (pg_catalog.int4, pg_catalog.int4);

CREATE OPERATOR CLASS simhash_perm_text_ops
	DEFAULT FOR TYPE pg_catalog.text USING simhash_perm AS
		OPERATOR 4 pg_catalog.= (pg_catalog.text, pg_catalog.text);

CREATE OPERATOR CLASS simhash_perm_uuid_ops
	DEFAULT FOR TYPE pg_catalog.uuid USING simhash_perm AS
		OPERATOR 4 pg_catalog.= (pg_catalog.uuid, pg_catalog.uuid);

-- Numbers and times as tenants too.  The key holds the value's hash from
-- its type's default hash class, which agrees with its =: float8's hashes
-- -0 as +0 and every NaN alike, numeric's 1.0 as 1.00, timestamptz's one
-- instant whatever the time zone it was written in.
CREATE OPERATOR CLASS simhash_perm_float8_ops
	DEFAULT FOR TYPE pg_catalog.float8 USING simhash_perm AS
		OPERATOR 4 pg_catalog.= (pg_catalog.float8, pg_catalog.float8);

CREATE OPERATOR CLASS simhash_perm_numeric_ops
	DEFAULT FOR TYPE pg_catalog.numeric USING simhash_perm AS
		OPERATOR 4 pg_catalog.= (pg_catalog.numeric, pg_catalog.numeric);

CREATE OPERATOR CLASS simhash_perm_date_ops
	DEFAULT FOR TYPE pg_catalog.date USING simhash_perm AS
		OPERATOR 4 pg_catalog.= (pg_catalog.date, pg_catalog.date);

CREATE OPERATOR CLASS simhash_perm_timestamp_ops
	DEFAULT FOR TYPE pg_catalog.timestamp USING simhash_perm AS
		OPERATOR 4 pg_catalog.= (pg_catalog.timestamp, pg_catalog.timestamp);

CREATE OPERATOR CLASS simhash_perm_timestamptz_ops
	DEFAULT FOR TYPE pg_catalog.timestamptz USING simhash_perm AS
		OPERATOR 4 pg_catalog.= (pg_catalog.timestamptz, pg_catalog.timestamptz);

ALTER OPERATOR FAMILY simhash_perm_bigint_ops USING simhash_perm ADD
	OPERATOR 4 pg_catalog.= (pg_catalog.int8, pg_catalog.int8);

--
-- Pairs and clusters within each tenant: simhash_pairs(..., tenant =>
-- 'site_id') reads the rows ordered by the tenant and searches each
-- tenant's rows alone, so no pair joins two tenants (rows of a NULL tenant
-- pair with none).
--
-- Not STRICT, as none of the pairs and clusters functions is from 1.6 on:
-- a NULL argument (a table, a column name, k, a flag) is an error naming
-- it (22004) rather than an empty result that reads as "no duplicates".
--
CREATE FUNCTION simhash_pairs(source pg_catalog.regclass,
							  key_column pg_catalog.name,
							  fp_column pg_catalog.name,
							  k pg_catalog.int4,
							  tenant pg_catalog.name,
							  progress pg_catalog.bool DEFAULT false)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'simhash_pairs_tenant'
	LANGUAGE C STABLE PARALLEL RESTRICTED;

CREATE FUNCTION simhash_clusters(source pg_catalog.regclass,
								 key_column pg_catalog.name,
								 fp_column pg_catalog.name,
								 k pg_catalog.int4,
								 tenant pg_catalog.name,
								 singletons pg_catalog.bool DEFAULT false,
								 progress pg_catalog.bool DEFAULT false)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'simhash_clusters_tenant'
	LANGUAGE C STABLE PARALLEL RESTRICTED;

ALTER FUNCTION simhash_pairs(pg_catalog.regclass, pg_catalog.name, pg_catalog.name,
							 pg_catalog.int4, pg_catalog.bool)
	CALLED ON NULL INPUT;
ALTER FUNCTION simhash_clusters(pg_catalog.regclass, pg_catalog.name, pg_catalog.name,
								pg_catalog.int4, pg_catalog.bool, pg_catalog.bool)
	CALLED ON NULL INPUT;
ALTER FUNCTION simhash_pairs_query(pg_catalog.text, pg_catalog.int4, pg_catalog.bool)
	CALLED ON NULL INPUT;
ALTER FUNCTION simhash_clusters_query(pg_catalog.text, pg_catalog.int4, pg_catalog.bool,
									  pg_catalog.bool)
	CALLED ON NULL INPUT;

--
-- The near-duplicate constraint on bit(n) codes:
--   EXCLUDE USING simhash_perm (code WITH ~=) WITH (radius = 31)
-- "within the radius of the constraint's index", as ~= is on fingerprints
-- within its max_distance (simhash--1.4--1.5.sql); the function is the
-- same, and raises the error that points to hamming_near() in a query.
--
CREATE FUNCTION simhash_near_duplicate(pg_catalog.bit, pg_catalog.bit) RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME', 'simhash_near_duplicate'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR ~= (
	LEFTARG = pg_catalog.bit, RIGHTARG = pg_catalog.bit,
	FUNCTION = simhash_near_duplicate, COMMUTATOR = OPERATOR(~=),
	RESTRICT = pg_catalog.contsel, JOIN = pg_catalog.contjoinsel);

ALTER OPERATOR FAMILY simhash_perm_bit_ops USING simhash_perm ADD
	OPERATOR 3 ~= (pg_catalog.bit, pg_catalog.bit);

--
-- Character tokens: tokens => 'chars' makes every letter or digit of any
-- script a token (docs/fingerprint_format.md, "Character tokens"), so that
-- simhash_jaccard(a, b, tokens => 'chars') is the Jaccard similarity of the
-- texts' sets of 3-character runs of their letters and digits, and
-- minhash(doc, n, tokens => 'chars') estimates it: text that mixes Chinese
-- with English words then weighs each character alike.
--
-- The parameter comes last, with a default, so every call written for 1.1
-- means what it meant.  CREATE OR REPLACE cannot add a parameter; an
-- overload beside the 1.1 functions would make every call that leaves it
-- out ambiguous (or, with the parameter third and required, would read
-- simhash_jaccard(a, b, '{1}') as tokens '{1}'); and dropping them to
-- create them anew would fail on every view, index or generated column
-- that calls one, or drop it with CASCADE.  So the functions keep their
-- OIDs, and with them whatever depends on them, and get the parameter in
-- their catalog rows, as contrib's pg_trgm 1.3 updated its support
-- functions' signatures "the hard way": the new argument list, names and
-- defaults are copied from scratch declarations of the new signatures,
-- then those are dropped.  A call stored before the update has one
-- argument fewer: the library takes a missing tokens argument as 'words'
-- and a missing skip as none (and the planner adds the default when it
-- next plans the call), so stored results keep their meaning.  Test "upgrade" holds that the updated
-- catalog equals a fresh install's, and that a view and an index that call
-- them survive the update.
--
CREATE FUNCTION simhash_jaccard_1_6(a pg_catalog.text, b pg_catalog.text,
									shingles pg_catalog.int4[] DEFAULT '{3}',
									cjk pg_catalog.text DEFAULT 'unigram',
									tokens pg_catalog.text DEFAULT 'words')
	RETURNS pg_catalog.float8
	AS 'MODULE_PATHNAME', 'simhash_text_jaccard'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- simhash(doc, ...) of 1.0, on text and on varchar, gets tokens too: its
-- 64 bits are the leftmost of simhash128(doc, ...) with the same tokens
CREATE FUNCTION simhash_1_6(doc pg_catalog.text,
							shingles pg_catalog.int4[] DEFAULT '{1,3}',
							weighting pg_catalog.text DEFAULT 'tf',
							cjk pg_catalog.text DEFAULT 'unigram',
							tokens pg_catalog.text DEFAULT 'words')
	RETURNS simhash64
	AS 'MODULE_PATHNAME', 'simhash_text'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION simhash_1_6(doc pg_catalog.varchar,
							shingles pg_catalog.int4[] DEFAULT '{1,3}',
							weighting pg_catalog.text DEFAULT 'tf',
							cjk pg_catalog.text DEFAULT 'unigram',
							tokens pg_catalog.text DEFAULT 'words')
	RETURNS simhash64
	AS 'MODULE_PATHNAME', 'simhash_text'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- and simhash_sentences(body, k) of 1.5 gets skip (below)
CREATE FUNCTION simhash_sentences_1_6(body pg_catalog.text,
									  k pg_catalog.int4 DEFAULT 5,
									  skip pg_catalog.int8[] DEFAULT '{}')
	RETURNS pg_catalog.int8[]
	AS 'MODULE_PATHNAME', 'simhash_sentences'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION minhash_1_6(doc pg_catalog.text,
							n pg_catalog.int4 DEFAULT 128,
							shingles pg_catalog.int4[] DEFAULT '{3}',
							cjk pg_catalog.text DEFAULT 'unigram',
							tokens pg_catalog.text DEFAULT 'words')
	RETURNS pg_catalog.int8[]
	AS 'MODULE_PATHNAME', 'minhash_text'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

UPDATE pg_catalog.pg_proc p
   SET pronargs = n.pronargs,
	   proargtypes = n.proargtypes,
	   proargnames = n.proargnames,
	   pronargdefaults = n.pronargdefaults,
	   proargdefaults = n.proargdefaults
  FROM pg_catalog.pg_proc n,
	   (VALUES ('simhash_jaccard(pg_catalog.text, pg_catalog.text, pg_catalog.int4[], pg_catalog.text)'::pg_catalog.regprocedure,
				'simhash_jaccard_1_6(pg_catalog.text, pg_catalog.text, pg_catalog.int4[], pg_catalog.text, pg_catalog.text)'::pg_catalog.regprocedure),
			   ('minhash(pg_catalog.text, pg_catalog.int4, pg_catalog.int4[], pg_catalog.text)'::pg_catalog.regprocedure,
				'minhash_1_6(pg_catalog.text, pg_catalog.int4, pg_catalog.int4[], pg_catalog.text, pg_catalog.text)'::pg_catalog.regprocedure),
			   ('simhash(pg_catalog.text, pg_catalog.int4[], pg_catalog.text, pg_catalog.text)'::pg_catalog.regprocedure,
				'simhash_1_6(pg_catalog.text, pg_catalog.int4[], pg_catalog.text, pg_catalog.text, pg_catalog.text)'::pg_catalog.regprocedure),
			   ('simhash(pg_catalog.varchar, pg_catalog.int4[], pg_catalog.text, pg_catalog.text)'::pg_catalog.regprocedure,
				'simhash_1_6(pg_catalog.varchar, pg_catalog.int4[], pg_catalog.text, pg_catalog.text, pg_catalog.text)'::pg_catalog.regprocedure),
			   ('simhash_sentences(pg_catalog.text, pg_catalog.int4)'::pg_catalog.regprocedure,
				'simhash_sentences_1_6(pg_catalog.text, pg_catalog.int4, pg_catalog.int8[])'::pg_catalog.regprocedure))
	   AS f(old, new)
 WHERE p.oid = f.old AND n.oid = f.new;

-- An index on an expression that calls one of them must keep matching the
-- queries that call it: a query's call now has the tokens (or skip)
-- argument, and so has the index's expression once the planner loads it
-- again, which an invalidation of the index's relcache entry makes every
-- session do (an unchanged update of its pg_class row sends one).
UPDATE pg_catalog.pg_class c SET relname = c.relname
 WHERE c.relkind = 'i' AND c.oid IN (
	SELECT d.objid FROM pg_catalog.pg_depend d
	 WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
	   AND d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
	   AND d.refobjid IN (
		'simhash_jaccard(pg_catalog.text, pg_catalog.text, pg_catalog.int4[], pg_catalog.text, pg_catalog.text)'::pg_catalog.regprocedure,
		'minhash(pg_catalog.text, pg_catalog.int4, pg_catalog.int4[], pg_catalog.text, pg_catalog.text)'::pg_catalog.regprocedure,
		'simhash_sentences(pg_catalog.text, pg_catalog.int4, pg_catalog.int8[])'::pg_catalog.regprocedure,
		'simhash(pg_catalog.text, pg_catalog.int4[], pg_catalog.text, pg_catalog.text, pg_catalog.text)'::pg_catalog.regprocedure,
		'simhash(pg_catalog.varchar, pg_catalog.int4[], pg_catalog.text, pg_catalog.text, pg_catalog.text)'::pg_catalog.regprocedure));

DROP FUNCTION simhash_jaccard_1_6(pg_catalog.text, pg_catalog.text, pg_catalog.int4[], pg_catalog.text, pg_catalog.text);
DROP FUNCTION minhash_1_6(pg_catalog.text, pg_catalog.int4, pg_catalog.int4[], pg_catalog.text, pg_catalog.text);
DROP FUNCTION simhash_sentences_1_6(pg_catalog.text, pg_catalog.int4, pg_catalog.int8[]);
DROP FUNCTION simhash_1_6(pg_catalog.text, pg_catalog.int4[], pg_catalog.text, pg_catalog.text, pg_catalog.text);
DROP FUNCTION simhash_1_6(pg_catalog.varchar, pg_catalog.int4[], pg_catalog.text, pg_catalog.text, pg_catalog.text);

--
-- Boilerplate: the sentences in at least min_share of a column's documents
-- (templates, footers), by lossy counting in bounded memory
-- (src/fingerprint/boilerplate.c says how exact), for
-- simhash_sentences(body, k, skip => ...) to pass over, so that pages of
-- one template are not paired by the template's long sentences:
--   UPDATE docs SET sig = simhash_sentences(body, 5,
--     skip => (SELECT simhash_frequent_sentences(body, 0.01) FROM docs));
--
CREATE FUNCTION simhash_frequent_sentences_step(pg_catalog.internal,
												pg_catalog.text,
												pg_catalog.float8)
	RETURNS pg_catalog.internal
	AS 'MODULE_PATHNAME'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION simhash_frequent_sentences_final(pg_catalog.internal)
	RETURNS pg_catalog.int8[]
	AS 'MODULE_PATHNAME'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE simhash_frequent_sentences(body pg_catalog.text,
											min_share pg_catalog.float8) (
	SFUNC = simhash_frequent_sentences_step,
	STYPE = pg_catalog.internal,
	FINALFUNC = simhash_frequent_sentences_final,
	FINALFUNC_MODIFY = READ_ONLY,
	PARALLEL = SAFE
);

--
-- The parts of a search spread over Citus's workers: simhash_pairs() and
-- simhash_clusters() of a table Citus distributes by hash run
-- simhash_pairs_part on every node that holds shards, each reading by a
-- distributed query the rows simhash_pairs_part_has gives it, and take
-- back only the pairs (src/pairs/pairscitus.c has the design and why it
-- is exact).  Called by those functions, through Citus, not by hand.
-- simhash_pairs_part is VOLATILE as simhash_pairs_query is: it runs a
-- query.
--
CREATE FUNCTION simhash_pairs_part_has(fp pg_catalog.int8,
									   layout pg_catalog.text,
									   part pg_catalog.int4,
									   nparts pg_catalog.int4)
	RETURNS pg_catalog.bool
	AS 'MODULE_PATHNAME', 'simhash_pairs_part_has'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION simhash_pairs_part(query pg_catalog.text,
								   k pg_catalog.int4,
								   layout pg_catalog.text,
								   part pg_catalog.int4,
								   nparts pg_catalog.int4,
								   clusters pg_catalog.bool)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'simhash_pairs_part'
	LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

-- How a part of that search receives rows: packed, each row its
-- fingerprint and its key's binary form, one bytea per node (and per piece
-- of the rows), from the other nodes through master_run_on_worker.
CREATE FUNCTION simhash_rows_pack_step(pg_catalog.bytea, anyelement,
									   pg_catalog.int8)
	RETURNS pg_catalog.bytea
	AS 'MODULE_PATHNAME'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE simhash_rows_pack(key anyelement, fp pg_catalog.int8) (
	SFUNC = simhash_rows_pack_step,
	STYPE = pg_catalog.bytea,
	COMBINEFUNC = pg_catalog.byteacat,
	PARALLEL = SAFE
);

CREATE FUNCTION simhash_rows_received(node pg_catalog.text,
									  port pg_catalog.int4,
									  success pg_catalog.bool,
									  result pg_catalog.text)
	RETURNS pg_catalog.bytea
	AS 'MODULE_PATHNAME'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- simhash_perm_info's second column is the index's design radius, which
-- the option radius gives on every index (max_distance, its older name,
-- works on 64-bit fingerprints only): the column is named radius.  An
-- output column's name is part of the function's result type, which
-- CREATE OR REPLACE cannot change; the function is dropped and created
-- again, with its privileges (simhash--1.1--1.2.sql: not executable by
-- PUBLIC).
DROP FUNCTION simhash_perm_info(pg_catalog.regclass);
CREATE FUNCTION simhash_perm_info(index regclass,
	OUT table_no pg_catalog.int4, OUT radius pg_catalog.int4,
	OUT prefix_bits pg_catalog.int4, OUT prefix pg_catalog.text,
	OUT height pg_catalog.int4, OUT leaf_pages pg_catalog.int8,
	OUT entries pg_catalog.int8, OUT buckets pg_catalog.int8,
	OUT largest_bucket pg_catalog.int8, OUT blocks pg_catalog.int4,
	OUT index_pages pg_catalog.int8)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'simhash_perm_info'
	LANGUAGE C STABLE STRICT PARALLEL SAFE;
REVOKE ALL ON FUNCTION simhash_perm_info(pg_catalog.regclass) FROM PUBLIC;

-- The four functions above are run by simhash_pairs() and
-- simhash_clusters(), through Citus, as the role that called them: a
-- part's connection to each node is that role's, so they stay executable
-- by PUBLIC (revoking it would break the search on the workers for every
-- role but superusers).  None is SECURITY DEFINER: each can do only what
-- its caller could with a SELECT.  Their comments say so where \df+ shows
-- them; docs/scaling_out.md documents them.
COMMENT ON FUNCTION simhash_pairs_part(pg_catalog.text, pg_catalog.int4, pg_catalog.text,
									   pg_catalog.int4, pg_catalog.int4, pg_catalog.bool) IS
	'internal: one part of simhash_pairs() or simhash_clusters() of a Citus table, run on a worker as the caller';
COMMENT ON FUNCTION simhash_pairs_part_has(pg_catalog.int8, pg_catalog.text, pg_catalog.int4,
										   pg_catalog.int4) IS
	'internal: whether a part of simhash_pairs() on Citus searches a fingerprint';
COMMENT ON AGGREGATE simhash_rows_pack(anyelement, pg_catalog.int8) IS
	'internal: packs rows for another node''s part of simhash_pairs() on Citus';
COMMENT ON FUNCTION simhash_rows_pack_step(pg_catalog.bytea, anyelement, pg_catalog.int8) IS
	'internal: transition function of simhash_rows_pack';
COMMENT ON FUNCTION simhash_rows_received(pg_catalog.text, pg_catalog.int4, pg_catalog.bool,
										  pg_catalog.text) IS
	'internal: the rows another node packed for a part of simhash_pairs() on Citus';

-- What \dx shows.  CREATE EXTENSION takes it from simhash.control, and an
-- update would keep the one the installed version was created with.
COMMENT ON EXTENSION simhash IS
	'64- and 128-bit simhash of text, Hamming search on fingerprints and bit(n) codes, the simhash_perm index, pairs and clusters';
