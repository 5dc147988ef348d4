--
-- The top-k longest-sentence signature: simhash_sentences(text, k) and
-- simhash_sentence_overlap(a, b).
--
-- Golden vectors first.  Signatures are stored data like fingerprints: these
-- values must never change (docs/fingerprint_format.md, "The sentence
-- signature"); test/reference/check.py recomputes them with the
-- independent implementation in every test run.
--
CREATE TEMP TABLE golden_sentences (label text, k int, doc text);
\copy golden_sentences FROM 'test/golden/sentences.tsv'
SELECT label, simhash_sentences(doc, k) FROM golden_sentences ORDER BY label COLLATE "C";

-- the same sentences in another order, case and spacing: the same
-- signature; full-width Latin letters read as their ASCII forms (the
-- full-width text lacks the first sentence of the other)
SELECT a.label, b.label, simhash_sentences(a.doc) = simhash_sentences(b.doc) AS same,
       simhash_sentence_overlap(simhash_sentences(a.doc), simhash_sentences(b.doc)) AS shared
  FROM golden_sentences a, golden_sentences b
 WHERE (a.label, b.label) IN (('en_paragraph', 'en_reordered'), ('en_paragraph', 'en_upper_spaced'),
                              ('zh_mixed_latin', 'zh_fullwidth_latin'))
 ORDER BY 1, 2;
-- k longest: k = 1 is one of k = 3's, k = 3's are among k = 5's
SELECT simhash_sentences(doc, 1) <@ simhash_sentences(doc, 3) AS k1_in_k3,
       simhash_sentences(doc, 3) <@ simhash_sentences(doc, 5) AS k3_in_k5,
       cardinality(simhash_sentences(doc, 1)) AS n1, cardinality(simhash_sentences(doc, 1000)) AS n_all
  FROM golden_sentences WHERE label = 'en_paragraph';
-- a repeated sentence counts once; a text without tokens has no sentence
SELECT label, cardinality(simhash_sentences(doc, 10)) FROM golden_sentences
 WHERE label IN ('en_repeated', 'empty', 'punctuation_only', 'en_one_sentence') ORDER BY 1;

-- overlap: shared hashes, each once, NULLs ignored, in any order
SELECT simhash_sentence_overlap(simhash_sentences(a.doc), simhash_sentences(b.doc)) AS shared
  FROM golden_sentences a, golden_sentences b WHERE a.label = 'en_paragraph' AND b.label = 'en_k3';
SELECT simhash_sentence_overlap('{3,1,2,2,NULL}', '{2,3,3,4}'), simhash_sentence_overlap('{}', '{1}');

-- bad input: k out of range names the value; NULL is NULL (STRICT); a huge
-- single sentence and invalid UTF-8 (a SQL_ASCII database's bytes decode
-- as U+FFFD: test/sanitize_fuzz.py) are ordinary input
SELECT simhash_sentences('a. b.', 0);
SELECT simhash_sentences('a. b.', 1001);
SELECT simhash_sentences(NULL, 5) IS NULL AS null_in_null_out;
SELECT cardinality(simhash_sentences(repeat('word ', 2000000), 5)) AS one_huge_sentence;

-- Indexed lookup through PostgreSQL's GIN on bigint[]: help pages with a
-- shared template (short sentences), each with its own long ones; their
-- 3-sentence signatures; documents sharing at least 2 of their 3 longest
-- sentences with a given one
CREATE TABLE pages (id int, body text, sig bigint[]);
INSERT INTO pages (id, body)
SELECT g, format('Page %s of the program help. This paragraph explains option number %s in some detail. '
                 'It was written for release %s of the program. Footer. See index.',
                 g, g, g % 50)
  FROM generate_series(1, 5000) g;
-- near-copies: pages 1-50 again with the first sentence changed
INSERT INTO pages (id, body)
SELECT 10000 + g, format('Copy %s, with a reworded introduction. This paragraph explains option number %s in some detail. '
                         'It was written for release %s of the program. Footer. See index.',
                         g, g, g % 50)
  FROM generate_series(1, 50) g;
UPDATE pages SET sig = simhash_sentences(body, 3);
CREATE INDEX pages_sig ON pages USING gin (sig);
ANALYZE pages;
SELECT plan($$SELECT id FROM pages WHERE sig && '{1,2,3}'::bigint[] AND simhash_sentence_overlap(sig, '{1,2,3}') >= 2$$);
SELECT id FROM pages
 WHERE sig && (SELECT sig FROM pages WHERE id = 10007)
   AND simhash_sentence_overlap(sig, (SELECT sig FROM pages WHERE id = 10007)) >= 2
 ORDER BY id;
-- a whole table: every pair of pages sharing at least 2 of their longest
-- sentences, by joining their hashes (no index needed)
WITH s AS (SELECT id, unnest(sig) AS h FROM pages)
SELECT count(*) AS pairs, count(*) FILTER (WHERE b - a = 10000) AS planted
  FROM (SELECT a.id AS a, b.id AS b FROM s a JOIN s b ON a.h = b.h AND a.id < b.id
         GROUP BY a.id, b.id HAVING count(*) >= 2) p;
DROP TABLE pages;
