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

-- Boilerplate (1.6).  Pages of one template whose longest sentences are
-- the template's: every page shares them, so the plain signature pairs
-- every page with every other.  simhash_frequent_sentences finds the
-- template's sentences by their document frequency, and the signature
-- that skips them pairs only the copies.
CREATE TABLE tpl (id int, body text);
INSERT INTO tpl SELECT g, format(
    'This page is part of the documentation of the example project and is published under its license. '
    'For questions about this documentation please write to the mailing list of the example project. '
    'Topic %s: how the %s component reads its settings. The component keeps its state in %s. '
    'It reads them at start and on reload number %s. Footer.',
    g, md5(g::text), md5((-g)::text), g % 7)
  FROM generate_series(1, 400) g;
-- copies of pages 1-20: a word changed in the short sentence
INSERT INTO tpl SELECT 1000 + id, replace(body, 'at start', 'at startup') FROM tpl WHERE id <= 20;
-- the two template sentences and the footer are in every page, each of
-- the seven reload sentences in about 14%: ten frequent sentences, as an
-- exact count of every sentence finds them
SELECT cardinality(simhash_frequent_sentences(body, 0.1)) AS frequent,
       simhash_frequent_sentences(body, 0.1) = (
         SELECT array_agg(h ORDER BY h) FROM (
           SELECT h FROM tpl, unnest(simhash_sentences(body, 1000)) h
            GROUP BY h HAVING count(*) >= 0.1 * (SELECT count(*) FROM tpl)) f) AS equals_exact_count
  FROM tpl;
-- pairs sharing 2 of their 3 longest sentences: without skip every pair
-- of pages, with skip the 20 copies alone
CREATE TEMP TABLE sigs AS
SELECT id, simhash_sentences(body, 3) AS plain,
       simhash_sentences(body, 3, skip => (SELECT simhash_frequent_sentences(body, 0.1) FROM tpl)) AS skipped
  FROM tpl;
SELECT (SELECT count(*) FROM sigs a JOIN sigs b ON a.id < b.id
         WHERE simhash_sentence_overlap(a.plain, b.plain) >= 2) AS plain_pairs,
       (SELECT count(*) FROM sigs a JOIN sigs b ON a.id < b.id
         WHERE simhash_sentence_overlap(a.skipped, b.skipped) >= 2) AS skipped_pairs,
       (SELECT count(*) FROM sigs a JOIN sigs b ON b.id = a.id + 1000
         WHERE simhash_sentence_overlap(a.skipped, b.skipped) >= 2) AS copies_found;
-- skip takes the next longest in the place of those it passes over; an
-- empty skip is the 1.5 signature; a NULL element is ignored
SELECT simhash_sentences('A long first sentence here. A second. Third.', 2,
                         skip => simhash_sentences('A long first sentence here.', 1)) =
       simhash_sentences('A second. Third.', 2) AS next_longest,
       simhash_sentences(body, 3, '{}') = simhash_sentences(body, 3) AS empty_skip,
       simhash_sentences(body, 3, '{NULL}') = simhash_sentences(body, 3) AS null_element
  FROM tpl WHERE id = 5;
-- lossy counting: a sentence in 1 of 3 documents is not frequent at 0.5;
-- one in 2 of 3 is; a sentence in one document only never is; NULL
-- documents do not count; no documents, no sentences
SELECT simhash_frequent_sentences(d, 0.5) = simhash_sentences('Shared sentence.', 1) AS one_shared,
       cardinality(simhash_frequent_sentences(d, 0.01)) AS in_two_or_more
  FROM (VALUES ('Shared sentence. Only here.'), ('Shared sentence. Not here.'), ('Alone.'), (NULL)) v(d);
SELECT simhash_frequent_sentences(d, 0.5) AS none FROM (SELECT NULL::text WHERE false) v(d);
-- a column larger than a bucket (w = 10 / min_share documents): 3,000
-- documents at min_share 0.02 (buckets of 500), each with one sentence of
-- 60 kinds (the 60 each in 50 documents, 1.7%) and one of the template,
-- in every third page (33%): only the template's is returned
SELECT simhash_frequent_sentences(format('Template sentence number %s. Row sentence of kind %s.',
                                         CASE WHEN g % 3 = 0 THEN 1 ELSE g END, g % 60), 0.02)
       = simhash_sentences('Template sentence number 1.', 1) AS template_only
  FROM generate_series(1, 3000) g;
-- bad input names the value
SELECT simhash_frequent_sentences(body, 0) FROM tpl;
SELECT simhash_frequent_sentences(body, 1.5) FROM tpl;
SELECT simhash_frequent_sentences(body, NULL) FROM tpl;
DROP TABLE tpl;
