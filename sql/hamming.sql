--
-- Hamming distance and the within-k test, for simhash and bigint.
--
SELECT hamming_distance('0000000000000000'::simhash64, '0000000000000000') AS zero,
       hamming_distance('0000000000000000'::simhash64, 'ffffffffffffffff') AS all64,
       hamming_distance('8000000000000000'::simhash64, '0000000000000001') AS two,
       hamming_distance('ffffffffffffffff'::simhash64, '7fffffffffffffff') AS top_bit;
SELECT '0f0f0f0f0f0f0f0f'::simhash64 <-> 'f0f0f0f0f0f0f0f0' AS op_all,
       '0000000000000003'::simhash64 <-> '0000000000000001' AS op_one;

-- hamming_near is inclusive: distance <= k
SELECT k, hamming_near('0000000000000000'::simhash64, '0000000000000007', k)
  FROM generate_series(0, 5) k;
SELECT hamming_near('0000000000000000'::simhash64, 'ffffffffffffffff', 64) AS k64,
       hamming_near('0000000000000000'::simhash64, 'ffffffffffffffff', 63) AS k63,
       hamming_near('1234567890abcdef'::simhash64, '1234567890abcdef', 0) AS k0;

-- k outside 0..64 is an error naming k (SQLSTATE 22023)
\set VERBOSITY default
SELECT hamming_near('0000000000000000'::simhash64, '0000000000000000', -1);
SELECT hamming_near('0000000000000000'::simhash64, '0000000000000000', 65);
SELECT hamming_near(0::bigint, 0::bigint, 2147483647);
\set VERBOSITY terse
DO $$
BEGIN
  PERFORM hamming_near(0::bigint, 0::bigint, -5);
EXCEPTION WHEN invalid_parameter_value THEN
  RAISE NOTICE 'SQLSTATE %', SQLSTATE;
END $$;

-- NULL in, NULL out
SELECT hamming_distance(NULL::simhash64, '0000000000000000') IS NULL AS d,
       hamming_near(NULL::simhash64, '0000000000000000', 3) IS NULL AS n1,
       hamming_near('0000000000000000'::simhash64, '0000000000000000', NULL) IS NULL AS n2,
       (NULL::simhash64 <-> '0000000000000000') IS NULL AS op;

-- bigint forms: all 64 bits count, including the sign bit
SELECT hamming_distance(-1::bigint, 0::bigint) AS all64,
       hamming_distance((-9223372036854775808)::bigint, 0::bigint) AS sign_bit,
       hamming_near(-1::bigint, 9223372036854775807::bigint, 1) AS near1;

-- the distance agrees with bit_count over bit(64), for simhash and bigint
CREATE TEMP TABLE pairs AS
  SELECT (hashint8(g) * 4294967296 + hashint8(-g))::bigint AS a,
         (hashint8(g + 7) * 4294967296 + hashint8(g * 3))::bigint AS b
    FROM generate_series(1, 5000) g;
SELECT count(*) AS agree FROM pairs
 WHERE hamming_distance(a, b) = bit_count((a # b)::bit(64))
   AND hamming_distance(a::simhash64, b::simhash64) = bit_count((a # b)::bit(64))
   AND a::simhash64 <-> b::simhash64 = hamming_distance(a, b)
   AND hamming_near(a, b, 30) = (bit_count((a # b)::bit(64)) <= 30)
   AND hamming_near(a::simhash64, b::simhash64, 34) = (bit_count((a # b)::bit(64)) <= 34);
-- distance is symmetric and a metric
SELECT bool_and(hamming_distance(a, b) = hamming_distance(b, a)) AS symmetric,
       bool_and(hamming_distance(a, a) = 0) AS identity
  FROM pairs;

-- ORDER BY distance
SELECT fp, fp <-> '0000000000000000' AS d
  FROM (VALUES ('000000000000000f'::simhash64), ('0000000000000001'), ('00000000000000ff'),
               ('0000000000000000')) v(fp)
 ORDER BY fp <-> '0000000000000000', fp;
