-- Data for the SQL examples of README.md and docs/
-- (test/readme/run_examples.py).  Each section, from a "-- fixture: NAME"
-- line to the next, is run as one script in the example's fresh database;
-- an example names its fixtures in the comment above it (<!-- example:
-- setup=NAME data=NAME ... -->).  Setups run before the example; a data
-- fixture runs right after the example's last CREATE INDEX, so that the
-- planner sees a table of realistic size.

-- fixture: extension
CREATE EXTENSION simhash;

-- fixture: incoming
-- texts waiting to be stored: 3000 pages and near-copies of a tenth of them
CREATE TABLE incoming (body text);
INSERT INTO incoming
SELECT 'page ' || g || ' of the crawl, on topic ' || g % 97 || ' in section ' || g % 13
  FROM generate_series(1, 3000) g;
INSERT INTO incoming
SELECT 'page ' || g || ' of the crawl, on topic ' || g % 97 || ' in section ' || g % 13 || ' today'
  FROM generate_series(1, 3000, 10) g;

-- fixture: pages
-- rows for the quick start's table (its fingerprints are generated)
INSERT INTO pages (url, body)
SELECT 'https://example.org/' || g,
       'page ' || g || ' of the crawl, on topic ' || g % 97 || ' in section ' || g % 13
  FROM generate_series(1, 5000) g;
INSERT INTO pages (url, body)
SELECT 'https://example.org/copy/' || g,
       'page ' || g || ' of the crawl, on topic ' || g % 97 || ' in section ' || g % 13 || ' today'
  FROM generate_series(1, 5000, 5) g;
ANALYZE pages;

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

-- fixture: old_version
-- a database that installed 1.3, with a fingerprint column and its index
CREATE EXTENSION simhash VERSION '1.3';
CREATE TABLE docs (id bigint, fp simhash);
INSERT INTO docs SELECT g, ('x' || lpad(to_hex(g * 2654435761), 16, '0'))::bit(64)::bigint::simhash
  FROM generate_series(1, 1000) g;
CREATE INDEX docs_fp_idx ON docs USING simhash_perm (fp);

-- fixture: crawl_batch
-- a crawler's batch: 400 new pages, and near-copies of every tenth of them
-- (a word added) later in the same batch
CREATE TABLE batch (n int, url text, body text);
INSERT INTO batch
SELECT g, 'https://example.org/' || g,
       'page ' || g || ' of the crawl, on topic ' || g % 97 || ' in section ' || g % 13
  FROM generate_series(1, 400) g;
INSERT INTO batch
SELECT 1000 + g, 'https://example.org/copy/' || g,
       'page ' || g || ' of the crawl, on topic ' || g % 97 || ' in section ' || g % 13 || ' today'
  FROM generate_series(1, 400, 10) g;

-- fixture: images
-- PDQ-like image hashes: 20,000 random 256-bit codes and 200 near-copies
-- of the first 200 (a run of 1..31 flipped bits), indexed
CREATE TABLE images (id bigint PRIMARY KEY, pdq bit(256));
INSERT INTO images SELECT g, ('x' || md5(g::text) || md5((-g)::text))::bit(256)
  FROM generate_series(1, 20000) g;
INSERT INTO images SELECT 100000 + id,
       pdq # ((repeat('1', 1 + (id % 31)::int) || repeat('0', 255 - (id % 31)::int))::bit(256) >> (id % 200)::int)
  FROM images WHERE id <= 200;
CREATE INDEX images_pdq_idx ON images USING simhash_perm (pdq);
ANALYZE images;
