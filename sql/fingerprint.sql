--
-- Fingerprints of text, arrays and tsvectors: behaviour, options, errors.
-- (The frozen values themselves are in fingerprint_golden.)
--

-- the tokenizer: Unicode case folding, fullwidth forms, CJK as single
-- characters, punctuation and symbols separate, marks stay in words
SELECT simhash_tokens(text 'Hello, World! ÉCOLE Straße ΣΊΣΥΦΟΣ don''t e-mail 3.14');
SELECT simhash_tokens(text 'ＡＢＣ１２３　ｄｅｆ，ghi');
SELECT simhash_tokens(text '妈妈喊你来吃饭。我们abc123吃饭');
SELECT simhash_tokens(text '妈妈喊你来吃饭。我们abc123吃饭', cjk => 'bigram');
SELECT simhash_tokens(text 'カタカナ・テスト ひらがな 한국어 텍스트 ภาษาไทย');
SELECT simhash_tokens(text 'naïve café', cjk => 'bigram'), simhash_tokens(text 'nai' || chr(776) || 've');
SELECT simhash_tokens(text 'tab	newline
emoji😀between ∑ symbols © ® ™ ok');
SELECT simhash_tokens(text ''), simhash_tokens(text '  ,.;  ');

-- case and width do not change a fingerprint; word order and content do
SELECT simhash(text 'The Quick Brown Fox') = simhash(text 'the quick brown fox') AS case_folded,
       simhash(text 'ＴＨＥ　ＱＵＩＣＫ　ＢＲＯＷＮ　ＦＯＸ') = simhash(text 'the quick brown fox') AS width_folded,
       simhash(text 'the quick, brown... fox!') = simhash(text 'the quick brown fox') AS punctuation_ignored,
       simhash(text 'the quick brown fox') <> simhash(text 'fox brown quick the') AS order_matters;

-- near-duplicates come out close, unrelated texts far apart
SELECT simhash(a) <-> simhash(b) AS near_copy
  FROM (SELECT string_agg('word' || g, ' ') AS a,
               string_agg(CASE WHEN g = 50 THEN 'changed' ELSE 'word' || g END, ' ') AS b
          FROM generate_series(1, 100) g) s;
SELECT (simhash(a) <-> simhash(b)) BETWEEN 16 AND 48 AS unrelated_far
  FROM (SELECT string_agg('alpha' || g, ' ') AS a, string_agg('beta' || g, ' ') AS b
          FROM generate_series(1, 100) g) s;
-- the short Chinese example of the source documents: one character changed
SELECT simhash(text '妈妈喊你来吃饭') <-> simhash(text '妈妈叫你来吃饭') AS chinese_one_char;
SELECT simhash(text '妈妈喊你来吃饭') <-> simhash(text '今天天气很好我们去公园') AS chinese_unrelated;

-- options: the knobs give different fingerprints (a few coincide on this
-- short text, where tf and binary weights see the same distinct features)
SELECT count(*) AS schemes, count(DISTINCT fp) AS distinct_fingerprints FROM (
  SELECT simhash(text 'a b c d e f g a b c a b x y', shingles => s, weighting => w) AS fp
    FROM (VALUES ('{1}'::int[]), ('{2}'), ('{3}'), ('{1,3}'), ('{1,2,3}'), ('{4}')) v(s),
         unnest(ARRAY['tf', 'binary', 'log']) w) x;
-- the default is shingles {1,3}, tf weights, single CJK characters
SELECT simhash(text 'Some text, some more text.') =
       simhash(text 'Some text, some more text.', shingles => '{1,3}', weighting => 'tf', cjk => 'unigram') AS defaults;
-- sizes are a set: order does not matter
SELECT simhash(text 'one two three four', shingles => '{3,1}') = simhash(text 'one two three four') AS unordered;
SELECT simhash(text '中文文本', cjk => 'unigram') <> simhash(text '中文文本', cjk => 'bigram') AS cjk_option;
-- tf counts repeats, binary does not
SELECT simhash(text 'spam spam spam spam eggs', shingles => '{1}', weighting => 'binary')
     = simhash(text 'spam eggs', shingles => '{1}', weighting => 'binary') AS binary_ignores_repeats,
       simhash(text 'spam spam spam spam eggs', shingles => '{1}', weighting => 'tf')
     = simhash(text 'spam eggs', shingles => '{1}', weighting => 'tf') AS tf_counts_repeats;
-- log weights: a repeated feature counts more than once, less than tf
SELECT simhash(text 'spam spam spam spam eggs', shingles => '{1}', weighting => 'log') IS NOT NULL AS log_ok;
-- features per text: each size n contributes one per run of n tokens; a
-- text shorter than n gives one feature of all its tokens for that size
SELECT simhash_feature_count(text 'one two') AS two_tokens,
       simhash_feature_count(text 'one two three four five') AS five_tokens,
       simhash_feature_count(text 'one two three four five', shingles => '{1}') AS unigrams,
       simhash_feature_count(text 'one two three four five', shingles => '{3}') AS trigrams,
       simhash_feature_count(text 'one', shingles => '{2,3}') AS one_token,
       simhash_feature_count(text '') AS empty;
-- shingles continue across the tokenizer's internal batches of 256 tokens
SELECT simhash_feature_count(string_agg('w' || g, ' '), shingles => '{3}') AS long_trigrams
  FROM generate_series(1, 1000) g;
SELECT simhash(string_agg('w' || g, ' '), shingles => '{3}') =
       simhash(string_agg('W' || g, ' ' ORDER BY g), shingles => '{3}') AS batches_consistent
  FROM generate_series(1, 1000) g;

-- empty text and text without features: the documented fingerprint 0
SELECT simhash(text '') AS empty, simhash(text '  ...!!  ') AS no_features,
       simhash(ARRAY[]::text[]) AS empty_array, simhash(''::tsvector) AS empty_tsvector;

-- NULL in, NULL out (all functions are STRICT)
SELECT simhash(NULL::text) IS NULL AS t, simhash(NULL::text[]) IS NULL AS a,
       simhash(NULL::tsvector) IS NULL AS v, simhash(ARRAY['a'], NULL::real[]) IS NULL AS w,
       simhash(text 'abc', shingles => NULL) IS NULL AS opt;

-- varchar columns call the function, not a cast
CREATE TEMP TABLE vc (body varchar(100));
INSERT INTO vc VALUES ('the quick brown fox');
SELECT simhash(body) = simhash(text 'the quick brown fox') AS varchar_ok FROM vc;

-- arrays: each element a feature of weight 1; NULL elements are skipped
SELECT simhash(ARRAY['alpha', 'beta', 'gamma']) = simhash(ARRAY['alpha', NULL, 'beta', 'gamma']) AS nulls_skipped,
       simhash(ARRAY['alpha', 'beta']) <> simhash(ARRAY['Alpha', 'beta']) AS features_verbatim,
       simhash(ARRAY['x']) = simhash(ARRAY['x'], ARRAY[2.5]::real[]) AS single_feature_weight_free;
-- weights: a heavy feature outvotes the rest; negative weights vote against
SELECT simhash(ARRAY['heavy', 'a', 'b', 'c'], ARRAY[100, 1, 1, 1]::real[])
     = simhash(ARRAY['heavy']) AS heavy_dominates,
       simhash(ARRAY['x'], ARRAY[-1]::real[])::bigint = ~(simhash(ARRAY['x'])::bigint) AS negative_inverts,
       simhash(ARRAY['a', 'b', 'c'], ARRAY[1, 1, 1]::real[]) = simhash(ARRAY['a', 'b', 'c']) AS unit_weights_match;
\set VERBOSITY default
SELECT simhash(ARRAY['a', 'b', 'c'], ARRAY[1, 2]::real[]);
SELECT simhash(ARRAY['a', 'b'], ARRAY[1, 'NaN']::real[]);
SELECT simhash(ARRAY['a', 'b'], ARRAY[1, '-Infinity']::real[]);

-- tsvector: lexemes are features, weighted by their number of positions
SELECT simhash(to_tsvector('english', 'The cats are running and running')) =
       simhash(ARRAY['cat', 'run'], ARRAY[1, 2]::real[]) AS tsvector_weights;
SELECT simhash(strip(to_tsvector('english', 'cats running running'))) =
       simhash(ARRAY['cat', 'run']) AS stripped_weight_one;
SELECT simhash(to_tsvector('english', 'The cat sat on the mat')) <->
       simhash(to_tsvector('english', 'A cat sat on a mat')) AS stop_words_ignored;

-- bad options are errors naming the value (SQLSTATE 22023)
SELECT simhash(text 'abc', shingles => '{0}');
SELECT simhash(text 'abc', shingles => '{1,9}');
SELECT simhash(text 'abc', shingles => '{}');
SELECT simhash(text 'abc', shingles => '{1,1}');
SELECT simhash(text 'abc', shingles => '{1,NULL}');
SELECT simhash(text 'abc', shingles => '{{1},{3}}');
SELECT simhash(text 'abc', weighting => 'idf');
SELECT simhash(text 'abc', cjk => 'trigram');
SELECT simhash_tokens(text 'abc', cjk => '');
\set VERBOSITY terse

-- a 100 MB text: fingerprinted without error, equal to its 1 MB building block
-- repeated (the same shingles, each 100 times as often under tf weights)
SELECT octet_length(repeat('lorem ipsum dolor sit amet ', 3883496)) > 100000000 AS over_100mb,
       simhash(repeat('lorem ipsum dolor sit amet ', 3883496)) =
       simhash(repeat('lorem ipsum dolor sit amet ', 38835)) AS same_as_1mb;
-- one 100 MB token, and 100 MB of CJK text
SELECT simhash(repeat('x', 100000000)) <> simhash(text 'yyy') AS one_token_differs,
       simhash(repeat('x', 100000000)) = simhash(repeat('x', 100000000)) AS deterministic;
SELECT simhash(repeat('汉字', 17000000)) = simhash(repeat('汉字', 1000)) AS cjk_100mb;

-- binary and log weights, and character n-grams, collect their features
-- and merge equal ones whenever the collector fills (at 512 entries, then
-- doubling): on texts of many features, some repeated, some distinct, the
-- fingerprints are those of version 1.1, which kept every occurrence
CREATE TEMP TABLE many_features AS
SELECT string_agg(CASE i % 3 WHEN 0 THEN 'w' || (i % 97)
                             WHEN 1 THEN 'x' || (i % 1009)
                             ELSE 'y' || (i * 7919 % 50021) END, ' ' ORDER BY i) AS body,
       string_agg(i::text, ' ' ORDER BY i) AS distinct_body
  FROM generate_series(1, 200000) i;
SELECT octet_length(body) AS bytes,
       simhash_feature_count(body, '{1,2,3,4,5,6,7,8}') AS occurrences
  FROM many_features;
SELECT simhash(body, '{1}', 'binary') AS binary_1,
       simhash(body, '{1,3}', 'binary') AS binary_1_3,
       simhash(body, '{1,2,3,4,5,6,7,8}', 'binary') AS binary_1_8,
       simhash(body, '{1}', 'log') AS log_1,
       simhash(body, '{1,3}', 'log') AS log_1_3,
       simhash(body, '{1,2,3,4,5,6,7,8}', 'log') AS log_1_8
  FROM many_features;
SELECT simhash_chargrams(body, 1, 'log') AS chargrams_1_log,
       simhash_chargrams(body, 4, 'binary') AS chargrams_4_binary,
       simhash_chargrams(body, 4, 'log') AS chargrams_4_log
  FROM many_features;
-- every feature distinct: binary weights vote as tf does
SELECT simhash(distinct_body, '{1,2,3}', 'binary') AS distinct_binary,
       simhash(distinct_body, '{1,2,3}', 'binary') = simhash(distinct_body, '{1,2,3}', 'tf') AS binary_is_tf,
       simhash(distinct_body, '{1,2,3}', 'log') = simhash(distinct_body, '{1,2,3}', 'tf') AS log_is_tf
  FROM many_features;
-- one feature a million times, among others
SELECT simhash(repeat('a ', 1000000) || body, '{1,2}', 'log') AS log_heavy_feature,
       simhash(repeat('a ', 1000000) || body, '{1,2}', 'binary') AS binary_heavy_feature
  FROM many_features;
-- the 100 MB text under binary weights: the distinct features of its 1 MB
-- building block
SELECT simhash(repeat('lorem ipsum dolor sit amet ', 3883496), '{1,3}', 'binary') =
       simhash(repeat('lorem ipsum dolor sit amet ', 38835), '{1,3}', 'binary') AS binary_100mb;
-- the count of features does not depend on the weighting
SELECT simhash_feature_count(body, '{1,3}', 'tf') AS tf,
       simhash_feature_count(body, '{1,3}', 'binary') AS binary,
       simhash_feature_count(body, '{1,3}', 'log') AS log,
       simhash_is_reliable(body, 399998, '{1,3}', 'log') AS reliable_at_count,
       simhash_is_reliable(body, 399999, '{1,3}', 'binary') AS reliable_above_count
  FROM many_features;

-- simhash_tokens writes its array in place: byte for byte the array that
-- PostgreSQL builds from the same strings (*= compares the bytes)
SELECT x *= y AS same_bytes, cardinality(t) AS tokens
  FROM (SELECT ROW(simhash_tokens(body)) AS x, ROW(string_to_array(body, ' ')) AS y,
               simhash_tokens(body) AS t
          FROM many_features) s;
SELECT x1 *= y1 AS unigram, x2 *= y2 AS bigram, x3 *= y3 AS empty, dims
  FROM (SELECT ROW(simhash_tokens(text 'Ab, ÉCOLE 中文 x')) AS x1,
               ROW(ARRAY['ab', 'école', '中', '文', 'x']) AS y1,
               ROW(simhash_tokens(text 'Ab, ÉCOLE 中文 x', 'bigram')) AS x2,
               ROW(ARRAY['ab', 'école', '中文', 'x']) AS y2,
               ROW(simhash_tokens(text ' ... ')) AS x3, ROW('{}'::text[]) AS y3,
               array_dims(simhash_tokens(text 'a b c')) AS dims) s;
SELECT cardinality(simhash_tokens(repeat('lorem ipsum dolor sit amet ', 3883496))) AS tokens_of_100mb;

-- an array holds at most 1 GB: simhash_tokens refuses a text whose tokens
-- would not fit (SQLSTATE 54000), before allocating them
\set VERBOSITY default
SELECT simhash_tokens(repeat('a ', 140000000));
\echo SQLSTATE :LAST_ERROR_SQLSTATE
\set VERBOSITY terse
DROP TABLE many_features;

-- mixed scripts in one document
SELECT simhash(text 'PostgreSQL 数据库 は 高速 です and fast') <->
       simhash(text 'PostgreSQL 数据库 は 高速 です and quick') AS mixed_scripts_near;

-- fingerprints do not depend on the database encoding: text in a LATIN1
-- database converts to UTF-8 before hashing
SELECT simhash(text 'Ærøskøbing café naïve Straße') AS utf8_fp \gset
CREATE DATABASE simhash_latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
\c simhash_latin1
SET client_encoding = 'UTF8';
CREATE EXTENSION simhash;
SELECT simhash(text 'Ærøskøbing café naïve Straße') = :'utf8_fp'::simhash64 AS same_in_latin1;
SELECT simhash_tokens(text 'Ærøskøbing CAFÉ');
-- the array of tokens converted back to LATIN1, byte for byte
SELECT x *= y AS same_bytes_in_latin1
  FROM (SELECT ROW(simhash_tokens(text 'Ærøskøbing CAFÉ')) AS x,
               ROW(ARRAY['ærøskøbing', 'café']) AS y) s;
\c contrib_regression
DROP DATABASE simhash_latin1;
