--
-- simhash_jaccard, simhash_chargrams, minhash, minhash_jaccard, minhash_bands
--

-- Jaccard of word 3-shingle sets: 4 of 10 distinct shingles shared
SELECT simhash_jaccard('the quick brown fox jumps over the lazy dog',
                       'the quick brown fox jumped over the lazy dog');
-- same tokenizer as simhash(): case, punctuation and fullwidth forms fold away
SELECT simhash_jaccard('Hello, World! ＡＢＣ', 'hello world abc') AS folded;
-- other shingle sizes and CJK modes
SELECT simhash_jaccard('妈妈喊你来吃饭', '妈妈叫你来吃饭', '{1}') AS cn_unigrams,
       simhash_jaccard('妈妈喊你来吃饭', '妈妈叫你来吃饭', '{2}') AS cn_words2,
       simhash_jaccard('妈妈喊你来吃饭', '妈妈叫你来吃饭', '{1}', 'bigram') AS cn_bigrams;
-- a set, not a bag: repetition does not count
SELECT simhash_jaccard('a b c a b c a b c', 'a b c', '{1}') AS set_semantics;
-- texts shorter than the shingle have one feature of all their tokens
SELECT simhash_jaccard('one two', 'one two') AS short_equal,
       simhash_jaccard('one two', 'two one') AS short_swapped;
-- no features on either side: equal (empty) sets; on one side only: 0
SELECT simhash_jaccard('', '') AS both_empty, simhash_jaccard('...', 'x') AS one_empty;
SELECT simhash_jaccard(NULL, 'x') IS NULL AS strict;
SELECT simhash_jaccard('a', 'b', '{0}');
SELECT simhash_jaccard('a', 'b', '{3}', 'trigram');

-- reliability flag: enough features for the fingerprint to be trusted
SELECT simhash_feature_count(repeat('word ', 20)) AS features_20_words,
       simhash_is_reliable(repeat('word ', 20)) AS reliable_20_words,
       simhash_is_reliable(repeat('word ', 40)) AS reliable_40_words,
       simhash_is_reliable('a few words', 4) AS reliable_at_4,
       simhash_is_reliable('a few words', 5) AS reliable_at_5,
       simhash_is_reliable('a few words', 1, '{1}', 'binary') AS binary_distinct;
SELECT simhash_is_reliable('x', 1, '{9}');

-- character n-grams: golden values (frozen with the 1.1 format)
SELECT label, simhash_chargrams(doc, n, w) AS fp
  FROM (VALUES ('en-4', 'The quick brown fox jumps over the lazy dog', 4, 'tf'),
               ('en-5-binary', 'The quick brown fox jumps over the lazy dog', 5, 'binary'),
               ('en-3-log', 'to be or not to be, that is the question', 3, 'log'),
               ('zh-4', '妈妈喊你来吃饭', 4, 'tf'),
               ('mixed-4', 'Linux内核。系统 abc', 4, 'tf'),
               ('short', 'ab', 4, 'tf'),
               ('empty', '', 4, 'tf')) AS v(label, doc, n, w);
-- spaces and punctuation between words do not matter, case does not either
SELECT simhash_chargrams('Hello,   WORLD!') = simhash_chargrams('hello world') AS folded;
-- one edited character moves a short Chinese text by a few bits only
SELECT simhash_chargrams('妈妈喊你来吃饭', 2) <-> simhash_chargrams('妈妈叫你来吃饭', 2) AS cn_distance;
-- a long text is streamed through a window, not held whole
SELECT simhash_chargrams(repeat('abcdefghij klmnopqrst ', 5000), 5) =
       simhash_chargrams(repeat('abcdefghij klmnopqrst ', 5000) || ' ', 5) AS long_text;
SELECT simhash_chargrams('x', 0);
SELECT simhash_chargrams('x', 17);
SELECT simhash_chargrams('x', 4, 'idf');

-- MinHash: golden signature and band keys (frozen with the 1.1 format)
SELECT minhash('the quick brown fox jumps over the lazy dog', 8);
SELECT minhash_bands(minhash('the quick brown fox jumps over the lazy dog', 8), 4);
SELECT minhash('妈妈喊你来吃饭', 4, '{2}');
-- no features: every slot is all ones
SELECT minhash('', 3);
SELECT array_length(minhash('x'), 1) AS default_slots;
-- the estimate: equal texts 1, disjoint texts 0, and close to the exact value
SELECT minhash_jaccard(minhash('a b c d e'), minhash('A, B; C d e.')) AS equal,
       minhash_jaccard(minhash('a b c d e'), minhash('v w x y z')) AS disjoint;
SELECT abs(minhash_jaccard(minhash(a, 1024), minhash(b, 1024)) - simhash_jaccard(a, b)) < 0.05
         AS estimate_close
  FROM (SELECT string_agg('w' || g, ' ') AS a, string_agg('w' || (g + 20), ' ') AS b
          FROM generate_series(1, 200) g) s;
SELECT minhash('x', 0);
SELECT minhash('x', 4097);
SELECT minhash_jaccard('{1,2}', '{1,2,3}');
SELECT minhash_jaccard('{1,NULL}', '{1,2}');
SELECT minhash_jaccard('{}', '{}');
SELECT minhash_jaccard('{{1,2},{3,4}}', '{1,2,3,4}');
SELECT minhash_bands('{1,2,3}', 2);
SELECT minhash_bands('{1,2,3}', 0);
SELECT minhash_bands('{1,2,3}', 3) = minhash_bands('{1,2,3}', 3) AS deterministic,
       (minhash_bands('{5,5}', 2))[1] <> (minhash_bands('{5,5}', 2))[2] AS bands_differ;

-- candidate search through a GIN index on the band keys
CREATE TABLE mh_docs (id int, body text);
-- 300 documents of 30 words, no word shared between two of them
INSERT INTO mh_docs
  SELECT g, (SELECT string_agg('w' || (g * 100 + i), ' ') FROM generate_series(1, 30) i)
    FROM generate_series(1, 300) g;
-- near copies of documents 1..20 (first word changed: Jaccard 27/29)
INSERT INTO mh_docs
  SELECT 1000 + id, regexp_replace(body, '^w[0-9]+', 'changed') FROM mh_docs WHERE id <= 20;
-- distant relatives of documents 21..40 (first 15 words changed: Jaccard 11/34)
INSERT INTO mh_docs
  SELECT 2000 + id, repeat('other ', 14) || 'words ' || split_part(body, ' w', 16) || ' w' ||
         array_to_string((string_to_array(body, ' '))[17:30], ' ')
    FROM mh_docs WHERE id BETWEEN 21 AND 40;
SELECT simhash_jaccard(a.body, b.body) AS near_j, simhash_jaccard(c.body, d.body) AS distant_j
  FROM mh_docs a, mh_docs b, mh_docs c, mh_docs d
 WHERE a.id = 1 AND b.id = 1001 AND c.id = 21 AND d.id = 2021;
CREATE TABLE mh_sig AS
  SELECT id, minhash_bands(minhash(body, 64), 16) AS bands FROM mh_docs;
CREATE INDEX mh_sig_bands ON mh_sig USING gin (bands);
ANALYZE mh_sig;
SET enable_seqscan = off;
SELECT * FROM plan($$SELECT b.id FROM mh_sig a JOIN mh_sig b ON b.bands && a.bands AND b.id <> a.id WHERE a.id = 1$$);
RESET enable_seqscan;
-- every near copy is found, and the verification keeps exactly them
SELECT count(*) AS candidate_pairs,
       count(*) FILTER (WHERE b.id = a.id + 1000) AS near_found,
       count(*) FILTER (WHERE simhash_jaccard(da.body, db.body) >= 0.8) AS verified
  FROM mh_sig a JOIN mh_sig b ON b.bands && a.bands AND b.id > a.id
  JOIN mh_docs da ON da.id = a.id JOIN mh_docs db ON db.id = b.id;
DROP TABLE mh_docs, mh_sig;

-- shingle sizes that vary from row to row are read on every row, not
-- taken from the first (arrays of successive rows can share an address)
SELECT s,
       simhash(doc, ARRAY[s]) = CASE s WHEN 1 THEN simhash(doc, '{1}')
                                       WHEN 2 THEN simhash(doc, '{2}')
                                       ELSE simhash(doc, '{3}') END AS simhash_ok,
       simhash_feature_count(doc, ARRAY[s]) AS features,
       minhash(doc, 4, ARRAY[s]) = CASE s WHEN 1 THEN minhash(doc, 4, '{1}')
                                          WHEN 2 THEN minhash(doc, 4, '{2}')
                                          ELSE minhash(doc, 4, '{3}') END AS minhash_ok,
       round(simhash_jaccard(doc, 'a b c x', ARRAY[s])::numeric, 3) AS jaccard,
       simhash_is_reliable(doc, 3, ARRAY[s]) AS reliable_at_3
  FROM (VALUES (1, 1), (2, 3), (3, 2), (4, 1), (5, 3)) v(ord, s),
       (VALUES (text 'a b c d')) d(doc)
 ORDER BY ord;

-- feature sets of texts with many features (the collector merges equal
-- features whenever it fills): the values of version 1.1
CREATE TEMP TABLE many_features AS
SELECT string_agg(w, ' ' ORDER BY i) AS a,
       string_agg(CASE WHEN i % 10 = 0 THEN 'z' || i ELSE w END, ' ' ORDER BY i) AS b
  FROM (SELECT i, CASE i % 3 WHEN 0 THEN 'w' || (i % 97)
                             WHEN 1 THEN 'x' || (i % 1009)
                             ELSE 'y' || (i * 7919 % 50021) END AS w
          FROM generate_series(1, 200000) i) s;
SELECT round(simhash_jaccard(a, b)::numeric, 6) AS jaccard_3,
       round(simhash_jaccard(a, b, '{1,2,3}')::numeric, 6) AS jaccard_1_3,
       round(simhash_jaccard(a, b, '{1,2,3,4,5,6,7,8}')::numeric, 6) AS jaccard_1_8,
       minhash_jaccard(minhash(a), minhash(b)) AS minhash_estimate
  FROM many_features;
SELECT md5(minhash(a)::text) AS minhash_a,
       md5(minhash(b, 256, '{1,2,3,4,5,6,7,8}')::text) AS minhash_b_1_8,
       minhash_bands(minhash(a, 8), 4) AS bands_a
  FROM many_features;
DROP TABLE many_features;
