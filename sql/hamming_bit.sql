--
-- Hamming distance of codes wider than 64 bits, as bit(n) values: PDQ's 256
-- bits, simhash128's 128, binary vectors.  hamming_distance, hamming_near
-- and <-> agree with bit_count of the XOR; two widths, or a bound outside
-- 0..width, are errors that name them; NULL gives NULL.
--

-- a PDQ hash as its 64 hexadecimal digits goes in with one cast
CREATE TABLE images (id int, pdq bit(256));
INSERT INTO images
  SELECT g, ('x' || md5(g::text) || md5((g + 1000)::text))::bit(256)
    FROM generate_series(1, 500) g;
-- near-copies of image 7 at distances 0, 1, 31 and 32
INSERT INTO images
  SELECT 1000 + d, pdq # (repeat('1', d) || repeat('0', 256 - d))::bit(256)
    FROM images, (VALUES (0), (1), (31), (32)) AS v(d) WHERE id = 7;
INSERT INTO images VALUES (2000, NULL);

SELECT bit_hamming_distance(pdq, pdq), pdq <-> pdq FROM images WHERE id = 7;
-- the three functions against bit_count of the XOR, for every pair with image 7
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE bit_hamming_distance(a.pdq, b.pdq) <> bit_count(a.pdq # b.pdq)) AS distance_differs,
       count(*) FILTER (WHERE (a.pdq <-> b.pdq) <> bit_count(a.pdq # b.pdq)) AS operator_differs,
       count(*) FILTER (WHERE hamming_near(a.pdq, b.pdq, 31) <> (bit_count(a.pdq # b.pdq) <= 31)) AS near_differs
  FROM images a, images b WHERE a.id = 7 AND b.pdq IS NOT NULL;
-- the PDQ match query: within 31 bits, nearest first
SELECT id, pdq <-> (SELECT pdq FROM images WHERE id = 7) AS distance
  FROM images WHERE hamming_near(pdq, (SELECT pdq FROM images WHERE id = 7), 31)
 ORDER BY pdq <-> (SELECT pdq FROM images WHERE id = 7), id;
-- a row with a NULL code has no distance and is near nothing
SELECT id, pdq <-> (SELECT pdq FROM images WHERE id = 7) AS distance,
       hamming_near(pdq, (SELECT pdq FROM images WHERE id = 7), 256) AS near
  FROM images WHERE id = 2000;

-- widths that are not whole bytes, and the whole range of k
SELECT bit_hamming_distance(B'1011011', B'0011000'), hamming_near(B'1011011', B'0011000', 3),
       hamming_near(B'1011011', B'0011000', 2), hamming_near(B'1', B'0', 1),
       hamming_near(B'101', B'010', 3);
-- 128-bit fingerprints: the left half is simhash()'s
SELECT bit_hamming_distance(simhash128('the quick brown fox jumps over the lazy dog'),
                        simhash128('the quick brown fox jumped over the lazy dog')) <= 128 AS defined,
       bit_hamming_distance(substring(simhash128('a text') from 1 for 64),
                        simhash('a text')::bigint::bit(64)) AS left_half_differs_by;

-- errors: two widths, and bounds outside 0..width
SELECT bit_hamming_distance(B'1010', B'10100');
SELECT B'1010' <-> B'101';
SELECT hamming_near(pdq, pdq::bit(128), 3) FROM images WHERE id = 7;
SELECT hamming_near(pdq, pdq, -1) FROM images WHERE id = 7;
SELECT hamming_near(pdq, pdq, 257) FROM images WHERE id = 7;
SELECT hamming_near(B'1010', B'1010', 5);

DROP TABLE images;

-- pgvector's hamming_distance(bit, bit) (a float8) fits beside these in
-- one schema: the name is free
CREATE FUNCTION hamming_distance(bit, bit) RETURNS float8
	LANGUAGE sql IMMUTABLE AS $$ SELECT bit_count($1 # $2)::float8 $$;
SELECT hamming_distance(B'1010', B'0110'), bit_hamming_distance(B'1010', B'0110'),
       B'1010' <-> B'0110';
DROP FUNCTION hamming_distance(bit, bit);
