--
-- Golden fingerprints: the frozen output of the fingerprint algorithm.
--
-- Fingerprints are stored data: these values must never change.  A change
-- to the tokenizer, the Unicode tables, the hash function or seed, the
-- shingling, the weights, the tie rule or the bit order shows up here.  The
-- same values are recomputed by an independent implementation
-- (test/reference/check.py) in every test run.
--
CREATE TEMP TABLE golden (label text, shingles int[], weighting text, cjk text, doc text);
\copy golden FROM 'test/golden/inputs.tsv'
SELECT label, simhash(doc, shingles => shingles, weighting => weighting, cjk => cjk)
  FROM golden ORDER BY label COLLATE "C";

-- features given directly
SELECT 'array' AS label, simhash(ARRAY['alpha', 'beta', 'gamma', 'alpha']);
SELECT 'array_weighted' AS label, simhash(ARRAY['alpha', 'beta', 'gamma'], ARRAY[3, 1.5, 0.25]::real[]);
SELECT 'array_negative' AS label, simhash(ARRAY['alpha', 'beta'], ARRAY[-2, 1]::real[]);
SELECT 'tsvector' AS label, simhash('alpha:1,4 beta:2 gamma'::tsvector);

-- The 128-bit fingerprint (1.6), frozen in the same way: the inputs above
-- and those of test/golden/inputs128.tsv (long texts under binary weights,
-- whose second hashes are voted in several batches; log weights).
\copy golden FROM 'test/golden/inputs128.tsv'
SELECT label, simhash128(doc, shingles => shingles, weighting => weighting, cjk => cjk)
  FROM golden ORDER BY label COLLATE "C";
-- its leftmost 64 bits are simhash()'s
SELECT count(*) AS texts,
       count(*) FILTER (WHERE simhash128(doc, shingles => shingles, weighting => weighting, cjk => cjk)::bit(64)
                            = simhash(doc, shingles => shingles, weighting => weighting, cjk => cjk)::bit(64))
         AS leftmost_64_equal
  FROM golden;

-- Character tokens (1.6, tokens => 'chars'; docs/fingerprint_format.md,
-- "Character tokens"), frozen in the same way: for each pair of
-- test/golden/chars.tsv, the Jaccard similarity of the two texts' character
-- shingles, the MinHash signature and the 128-bit fingerprint of the first.
CREATE TEMP TABLE golden_chars (label text, shingles int[], weighting text, a text, b text);
\copy golden_chars FROM 'test/golden/chars.tsv'
SELECT label,
       simhash_jaccard(a, b, shingles => shingles, tokens => 'chars') AS jaccard,
       minhash(a, 6, shingles => shingles, tokens => 'chars') AS minhash,
       simhash128(a, shingles => shingles, weighting => weighting, tokens => 'chars') AS fp128
  FROM golden_chars ORDER BY label COLLATE "C";
-- simhash() takes tokens too (1.6): its 64 bits are the leftmost of
-- simhash128's with the same options, on text and on varchar
SELECT count(*) FILTER (WHERE simhash(a, shingles => shingles, weighting => weighting, tokens => 'chars')::bit(64)
                              = substring(simhash128(a, shingles => shingles, weighting => weighting, tokens => 'chars') FROM 1 FOR 64)
                          AND simhash(a::varchar, shingles => shingles, weighting => weighting, tokens => 'chars')
                              = simhash(a, shingles => shingles, weighting => weighting, tokens => 'chars')) AS leftmost_64,
       count(*) FILTER (WHERE simhash(a, shingles => shingles, tokens => 'chars')
                              <> simhash(a, shingles => shingles)) AS differ_from_words,
       count(*) AS pairs
  FROM golden_chars;
-- tokens => 'words', the default, is what each function gave before
SELECT count(*) FILTER (WHERE simhash128(a, shingles => shingles, tokens => 'words')
                              = simhash128(a, shingles => shingles)) AS words_default,
       count(*) FILTER (WHERE simhash_jaccard(a, b, shingles, 'unigram', 'words')
                              = simhash_jaccard(a, b, shingles)
                          AND minhash(a, 6, shingles, 'unigram', 'words') = minhash(a, 6, shingles))
         AS words_default_jaccard_minhash,
       count(*) AS pairs
  FROM golden_chars;
-- spaces, punctuation, case and full-width forms do not change the tokens
SELECT simhash_jaccard('Ｐｏｓｔｇｒｅｓ 数据库，版本15。', 'postgres数据库版本 15', tokens => 'chars') AS folded,
       simhash_jaccard('Ｐｏｓｔｇｒｅｓ 数据库，版本15。', 'postgres数据库版本 15') AS folded_words;
-- errors name the bad value
SELECT simhash_jaccard('a', 'b', tokens => 'letters');
SELECT minhash('a', 4, cjk => 'bigram', tokens => 'chars');
