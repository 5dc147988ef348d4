--
-- The simhash type: text and binary I/O, casts, operator classes.
--

-- text form: 16 lowercase hex digits; input takes uppercase and 0x
SELECT '0123456789abcdef'::simhash64, '0123456789ABCDEF'::simhash64,
       '0x0123456789abcdef'::simhash64, '0XFEDCBA9876543210'::simhash64;
SELECT '0000000000000000'::simhash64, 'ffffffffffffffff'::simhash64;

-- every malformed input is a 22P02 error that quotes the value
\set VERBOSITY default
SELECT ''::simhash64;
SELECT '0x'::simhash64;
SELECT '0123456789abcde'::simhash64;
SELECT '0123456789abcdef0'::simhash64;
SELECT '0123456789abcdeg'::simhash64;
SELECT '01234567 9abcdef'::simhash64;
SELECT ' 0123456789abcdef'::simhash64;
SELECT '0123456789abcdef '::simhash64;
SELECT '-123456789abcdef'::simhash64;
SELECT '0x0x23456789abcdef'::simhash64;
-- a text literal given to simhash() is fingerprinted (until 1.4, when the
-- type was also named simhash, PostgreSQL read this as a cast to it)
SELECT simhash('hello world');
-- and so is an untyped parameter, which resolves to text
PREPARE untyped AS SELECT simhash($1);
EXECUTE untyped('hello world');
SELECT simhash(text 'hello world') AS same;
DEALLOCATE untyped;
\set VERBOSITY terse
DO $$
BEGIN
  PERFORM 'zz'::simhash64;
EXCEPTION WHEN invalid_text_representation THEN
  RAISE NOTICE 'SQLSTATE %', SQLSTATE;
END $$;

-- NULL in, NULL out
SELECT NULL::simhash64 IS NULL AS is_null;

-- binary I/O round trip (network byte order, like int8)
SELECT simhash_send('0123456789abcdef');
CREATE TEMP TABLE io (fp simhash64);
INSERT INTO io VALUES ('0123456789abcdef'), ('8000000000000000'), ('ffffffffffffffff'), (NULL);
-- the files go into the server's own data directory, under names of this
-- backend, so no other user's files in a shared directory can get in the way
SELECT current_setting('data_directory') || '/simhash_io_test_' || pg_backend_pid() AS iofile \gset
\set binfile :iofile '.bin'
\set txtfile :iofile '.txt'
COPY io TO :'binfile' WITH (FORMAT binary);
CREATE TEMP TABLE io2 (fp simhash64);
COPY io2 FROM :'binfile' WITH (FORMAT binary);
SELECT (SELECT array_agg(fp ORDER BY fp) FROM io) IS NOT DISTINCT FROM
       (SELECT array_agg(fp ORDER BY fp) FROM io2) AS binary_round_trip;
COPY io TO :'txtfile';
TRUNCATE io2;
COPY io2 FROM :'txtfile';
SELECT (SELECT array_agg(fp ORDER BY fp) FROM io) IS NOT DISTINCT FROM
       (SELECT array_agg(fp ORDER BY fp) FROM io2) AS text_round_trip;
-- the files go again; the COPY writes no row, so the program's exit
-- cannot break the pipe (with one empty row, PostgreSQL 18 may see EPIPE)
\set rmcmd 'rm -f ' :binfile ' ' :txtfile
COPY (SELECT WHERE false) TO PROGRAM :'rmcmd';

-- casts: bigint <-> simhash keep every bit, both ways
SELECT 'ffffffffffffffff'::simhash64::bigint, '8000000000000000'::simhash64::bigint,
       '7fffffffffffffff'::simhash64::bigint, '0000000000000001'::simhash64::bigint;
SELECT (-1)::bigint::simhash64, (-9223372036854775808)::bigint::simhash64,
       9223372036854775807::bigint::simhash64, 0::bigint::simhash64;
SELECT count(*) AS lossless
  FROM (SELECT (random() * 2^63)::bigint * (CASE WHEN random() < 0.5 THEN -1 ELSE 1 END) AS b
          FROM generate_series(1, 10000)) s
 WHERE b::simhash64::bigint = b AND b::simhash64::text = lpad(to_hex(b), 16, '0');
-- simhash -> bit(64): most significant bit first, like int8's cast
SELECT '8000000000000001'::simhash64::bit(64);
SELECT 'f0f0f0f0f0f0f0f0'::simhash64::bit(64) = x'f0f0f0f0f0f0f0f0'::bit(64) AS same_as_hex,
       '0123456789abcdef'::simhash64::bit(64) = x'0123456789abcdef'::bigint::bit(64) AS same_as_int8;
SELECT bit_count('ffff0000ffff0000'::simhash64::bit(64));
-- simhash -> bytea: the 8 bytes, most significant first
SELECT '0123456789abcdef'::simhash64::bytea;
-- text casts go through the I/O functions
SELECT '0123456789ABCDEF'::text::simhash64, 'fedcba9876543210'::simhash64::text;

-- comparison is unsigned: 0000 < 7fff < 8000 < ffff
SELECT a, b, a < b AS lt, a <= b AS le, a = b AS eq, a <> b AS ne, a >= b AS ge, a > b AS gt
  FROM (VALUES ('0000000000000000'::simhash64, '7fffffffffffffff'::simhash64),
               ('7fffffffffffffff', '8000000000000000'),
               ('8000000000000000', 'ffffffffffffffff'),
               ('ffffffffffffffff', 'ffffffffffffffff'),
               ('ffffffffffffffff', '0000000000000000')) v(a, b);

-- btree: ORDER BY, DISTINCT, GROUP BY, UNIQUE, merge join
CREATE TEMP TABLE t (fp simhash64);
INSERT INTO t VALUES ('ffffffffffffffff'), ('0000000000000001'), ('8000000000000000'),
                     ('7fffffffffffffff'), ('8000000000000000'), (NULL);
SELECT fp FROM t ORDER BY fp;
SELECT fp FROM t ORDER BY fp DESC NULLS LAST;
SELECT DISTINCT fp FROM t ORDER BY 1;
SELECT fp, count(*) FROM t GROUP BY fp ORDER BY fp;
CREATE UNIQUE INDEX t_unique ON t (fp);
DELETE FROM t WHERE ctid NOT IN (SELECT min(ctid) FROM t GROUP BY fp);
CREATE UNIQUE INDEX t_unique ON t (fp);
INSERT INTO t VALUES ('0000000000000001');
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT fp FROM t WHERE fp > '7fffffffffffffff' ORDER BY fp;
SELECT fp FROM t WHERE fp > '7fffffffffffffff' ORDER BY fp;
RESET enable_seqscan;

-- sorting many values uses sort support; check against bigint's order
CREATE TEMP TABLE many AS
  SELECT (hashint8(g) * 4294967296 + hashint8(g + 1000000))::bigint::simhash64 AS fp
    FROM generate_series(1, 20000) g;
SELECT bool_and(ok) AS sorted_unsigned FROM (
  SELECT lag(fp) OVER (ORDER BY fp) IS NULL
         OR ((lag(fp) OVER (ORDER BY fp))::bigint # (-9223372036854775808)::bigint)
            <= (fp::bigint # (-9223372036854775808)::bigint) AS ok
    FROM many) s;

SET enable_hashjoin = off; SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM many a JOIN many b ON a.fp = b.fp;
SELECT count(*) FROM many a JOIN many b ON a.fp = b.fp;
RESET enable_hashjoin; RESET enable_nestloop;

-- hash opclass: hash join, hash aggregate, hash index
SET enable_mergejoin = off; SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM many a JOIN many b ON a.fp = b.fp;
SELECT count(*) FROM many a JOIN many b ON a.fp = b.fp;
RESET enable_mergejoin; RESET enable_nestloop;
SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT fp, count(*) FROM many GROUP BY fp;
SELECT count(*) FROM (SELECT fp, count(*) FROM many GROUP BY fp) s;
RESET enable_sort;
CREATE INDEX many_hash ON many USING hash (fp);
SET enable_seqscan = off;
SELECT count(*) FROM many WHERE fp = (SELECT fp FROM many LIMIT 1);
RESET enable_seqscan;
-- the extended hash agrees with the standard one in its low 32 bits
SELECT bool_and((simhash_hash_extended(fp, 0) & 4294967295) =
                (simhash_hash(fp)::bigint & 4294967295)) AS hash_consistent
  FROM many;
SELECT count(DISTINCT simhash_hash_extended(fp, 1)) > 19990 AS seeded_hash_spreads FROM many;

-- the operator classes are well formed
SELECT amname, opcname, opcdefault
  FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod
 WHERE opcintype = 'simhash64'::regtype ORDER BY 1, 2;
SELECT amvalidate(c.oid) FROM pg_opclass c WHERE opcintype = 'simhash64'::regtype;

\set VERBOSITY default
-- The first things a user types (since 1.4, when the type became simhash64
-- and simhash is the function alone).  A bare literal is a call of
-- simhash(text), as it is for clients that interpolate parameters as
-- quoted literals (psycopg2, Django, Rails); an untyped parameter resolves
-- to text; the type's name casts hexadecimal digits.
SELECT simhash('some words') = simhash(text 'some words') AS bare_literal;
PREPARE fp_untyped AS SELECT simhash($1) = simhash(text 'some words');
EXECUTE fp_untyped('some words');
DEALLOCATE fp_untyped;
SELECT simhash64('0123456789abcdef') AS from_hex, '0x0123456789ABCDEF'::simhash64 AS with_prefix;
SELECT pg_typeof(simhash('some words'));
-- a stored generated column, and COPY of hexadecimal fingerprints
CREATE TABLE gen (body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO gen (body) VALUES ('the quick brown fox'), (NULL);
SELECT body, fp = simhash('the quick brown fox') AS generated FROM gen ORDER BY body;
CREATE TABLE copied (fp simhash64);
COPY copied FROM STDIN;
0123456789abcdef
0xFEDCBA9876543210
\N
\.
SELECT fp FROM copied ORDER BY fp NULLS LAST;
-- a bad literal names the value and says how a fingerprint is written
SELECT simhash64('some words');
SELECT 'xyz'::simhash64;
COPY copied FROM STDIN;
0123456789abcdeg
\.
DROP TABLE gen, copied;
