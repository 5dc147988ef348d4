--
-- The 128-bit fingerprint, simhash128(text, ...) (1.6): behaviour, options,
-- errors, storage in a bit(128) column.  (The frozen values are in
-- fingerprint_golden.)
--

-- 128 bits, the leftmost 64 those of simhash(); the catalog's type is bit
-- (PostgreSQL keeps no length in a function's result type)
SELECT length(simhash128(text 'The quick brown fox jumps over the lazy dog')) AS bits,
       simhash128(text 'The quick brown fox jumps over the lazy dog')::bit(64)
         = simhash(text 'The quick brown fox jumps over the lazy dog')::bit(64) AS leftmost_64_is_simhash,
       pg_typeof(simhash128(text 'x')) AS type;
-- the same definition of the rightmost 64 bits for every text: a word of
-- its own, not a copy of the leftmost
SELECT substring(simhash128(text 'The quick brown fox jumps over the lazy dog') FROM 65)
         <> simhash128(text 'The quick brown fox jumps over the lazy dog')::bit(64) AS second_word_differs;
-- no features: all zeros; NULL in, NULL out
SELECT simhash128(text '') = repeat('0', 128)::bit(128) AS empty_is_zero,
       simhash128(text ' ... !!! ') = repeat('0', 128)::bit(128) AS punctuation_is_zero,
       simhash128(NULL) IS NULL AS null_in_null_out,
       simhash128(text 'x', NULL) IS NULL AS null_option;
-- varchar and other string types through the implicit cast to text
SELECT simhash128('some words'::varchar) = simhash128(text 'some words') AS varchar_ok;

-- the options are simhash()'s, with the same defaults
SELECT simhash128(text 'Some text, some more text.') =
       simhash128(text 'Some text, some more text.', shingles => '{1,3}', weighting => 'tf', cjk => 'unigram') AS defaults;
SELECT count(*) AS schemes, count(DISTINCT fp) AS distinct_fingerprints,
       count(*) FILTER (WHERE fp::bit(64) = fp64::bit(64)) AS leftmost_64_is_simhash
  FROM (SELECT simhash128(text 'a b c d e f g a b c a b x y 中文文本', shingles => s, weighting => w, cjk => c) AS fp,
               simhash(text 'a b c d e f g a b c a b x y 中文文本', shingles => s, weighting => w, cjk => c) AS fp64
          FROM (VALUES ('{1}'::int[]), ('{2}'), ('{3}'), ('{1,3}'), ('{1,2,3}'), ('{4}')) v(s),
               unnest(ARRAY['tf', 'binary', 'log']) w, unnest(ARRAY['unigram', 'bigram']) c) x;
-- case, width and punctuation are folded as for simhash()
SELECT simhash128(text 'The Quick, Brown FOX!') = simhash128(text 'the quick brown fox') AS folded,
       simhash128(text 'ＴＨＥ　ＱＵＩＣＫ　ＢＲＯＷＮ　ＦＯＸ') = simhash128(text 'the quick brown fox') AS width_folded;

-- near-duplicates come out close, unrelated texts far apart (about 64 of
-- 128 bits)
SELECT bit_count(simhash128(a) # simhash128(b)) AS near_copy,
       bit_count(simhash(a)::bit(64) # simhash(b)::bit(64)) AS near_copy_64
  FROM (SELECT string_agg('word' || g, ' ') AS a,
               string_agg(CASE WHEN g = 50 THEN 'changed' ELSE 'word' || g END, ' ') AS b
          FROM generate_series(1, 100) g) s;
SELECT bit_count(simhash128(a) # simhash128(b)) BETWEEN 40 AND 88 AS unrelated_far
  FROM (SELECT string_agg('alpha' || g, ' ') AS a, string_agg('beta' || g, ' ') AS b
          FROM generate_series(1, 100) g) s;

-- errors: those of simhash()
SELECT simhash128(text 'x', shingles => '{0}');
SELECT simhash128(text 'x', shingles => '{1,1}');
SELECT simhash128(text 'x', weighting => 'idf');
SELECT simhash128(text 'x', cjk => 'trigram');

-- IMMUTABLE, STRICT, PARALLEL SAFE
SELECT proname, provolatile, proisstrict, proparallel, pg_get_function_arguments(oid) AS arguments
  FROM pg_proc WHERE proname = 'simhash128';

-- a bit(128) column, generated from the text; a radius search with
-- bit_count of the XOR, the Hamming distance
CREATE TABLE docs128 (id int PRIMARY KEY, body text,
                      fp bit(128) GENERATED ALWAYS AS (simhash128(body)) STORED);
INSERT INTO docs128 (id, body)
SELECT g, 'page ' || (g % 7) || ' of the crawl, on topic ' || (g % 5) || ' in section ' || (g % 3)
          || ', with the same long tail of words that every page of this site carries'
  FROM generate_series(1, 60) g;
SELECT count(*) AS rows, count(*) FILTER (WHERE length(fp) = 128) AS of_128_bits,
       count(*) FILTER (WHERE fp::bit(64) = simhash(body)::bit(64)) AS leftmost_64_is_simhash
  FROM docs128;
SELECT id, bit_count(fp # simhash128(text 'page 6 of the crawl, on topic 1 in section 0, with the same long tail of words that every page of this site carries')) AS distance
  FROM docs128
 WHERE bit_count(fp # simhash128(text 'page 6 of the crawl, on topic 1 in section 0, with the same long tail of words that every page of this site carries')) <= 12
 ORDER BY distance, id LIMIT 5;
DROP TABLE docs128;
-- a bit(128) column refuses a 64-bit fingerprint
CREATE TEMP TABLE fp128 (fp bit(128));
INSERT INTO fp128 VALUES (simhash128(text 'x'));
INSERT INTO fp128 VALUES (simhash(text 'x')::bit(64));
DROP TABLE fp128;
