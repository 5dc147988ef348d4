-- Data for the SQL examples of docs/ (test/readme/run_examples.py);
-- README.md's examples create what they use, as a reader runs them.
-- Each section, from a "-- fixture: NAME" line to the next, is run as one script in the example's fresh database;
-- an example names its fixtures in the comment above it (<!-- example:
-- setup=NAME data=NAME ... -->).  Setups run before the example; a data
-- fixture runs right after the example's last CREATE INDEX, so that the
-- planner sees a table of realistic size.

-- fixture: extension
CREATE EXTENSION simhash;

-- fixture: docs
-- the reference's table: texts, their fingerprints as simhash64 and as
-- bigint, an index on each, a table of new documents and one of a batch
CREATE TABLE docs (id bigint PRIMARY KEY, body text, fp simhash64, fp_bigint bigint,
                   duplicate_of bigint);
INSERT INTO docs (id, body)
SELECT g, 'page ' || g || ' of the crawl, on topic ' || g % 97 || ' in section ' || g % 13
  FROM generate_series(1, 5000) g;
INSERT INTO docs (id, body)
SELECT 100000 + g, 'page ' || g || ' of the crawl, on topic ' || g % 97 || ' in section ' || g % 13 || ' today'
  FROM generate_series(1, 5000, 5) g;
UPDATE docs SET fp = simhash(body), fp_bigint = simhash(body)::bigint;
CREATE INDEX docs_fp_idx ON docs USING simhash_perm (fp);
CREATE INDEX docs_fp_bigint_idx ON docs USING simhash_perm (fp_bigint);
CREATE TABLE new_docs AS
SELECT 200000 + g AS id, simhash('page ' || g || ' of the crawl, on topic ' || g % 97 || ' in section ' || g % 13 || ' again') AS fp
  FROM generate_series(1, 20) g;
CREATE TABLE batch (LIKE docs);
INSERT INTO batch (id, body, fp)
SELECT 300000 + g, 'page ' || g || ' of the crawl, on topic ' || g % 97 || ' in section ' || g % 13 || ' again',
       simhash('page ' || g || ' of the crawl, on topic ' || g % 97 || ' in section ' || g % 13 || ' again')
  FROM generate_series(1, 200) g;
ANALYZE docs;
ANALYZE new_docs;
ANALYZE batch;
