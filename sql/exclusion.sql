--
-- Near-duplicate exclusion constraints on simhash_perm: EXCLUDE USING
-- simhash_perm (fp WITH ~=) refuses a row within the index's radius
-- of a stored one (SQLSTATE 23P01), and INSERT ... ON CONFLICT DO NOTHING
-- skips it.  Concurrent sessions: test/isolation/specs/perm_exclusion.spec;
-- a stress run with a crash: test/t/008_exclusion_stress.pl.
--
CREATE TABLE pages (id int, url text, fp simhash64,
  CONSTRAINT pages_no_near_copies EXCLUDE USING simhash_perm (fp WITH ~=) WITH (radius = 3));
-- the radius is part of the definition that pg_dump restores
SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'pages_no_near_copies';

INSERT INTO pages VALUES (1, 'a', pseudo_fp(1)), (2, 'b', pseudo_fp(2));
-- 3 bits from page 1: refused, naming both fingerprints
INSERT INTO pages VALUES (3, 'a-copy', (pseudo_fp(1)::bigint # 7)::simhash64);
-- 4 bits away, and an exact copy of page 2
INSERT INTO pages VALUES (4, 'a-far', (pseudo_fp(1)::bigint # 15)::simhash64);
INSERT INTO pages VALUES (5, 'b-same', pseudo_fp(2));
-- NULL fingerprints never conflict, with rows or with each other
INSERT INTO pages VALUES (6, 'null', NULL), (7, 'null', NULL);
SELECT id FROM pages ORDER BY id;

-- ON CONFLICT DO NOTHING skips a near-copy of a stored row and one of an
-- earlier row of the same statement, and inserts the rest
INSERT INTO pages
  SELECT 100 + g, 'batch', CASE g WHEN 1 THEN flip_bits(pseudo_fp(2), 1, 2)
                                  WHEN 3 THEN flip_bits(pseudo_fp(10), 3, 1)
                                  ELSE pseudo_fp(8 + g) END
    FROM generate_series(1, 5) g ORDER BY g
  ON CONFLICT DO NOTHING RETURNING id;
-- a batch row within 3 of an earlier row of the batch is refused too
INSERT INTO pages VALUES (200, 'x', pseudo_fp(50)), (201, 'y', flip_bits(pseudo_fp(50), 2, 2));

-- COPY enforces the constraint as INSERT does
COPY pages (id, url, fp) FROM stdin;
300	copied	0123456789abcdef
301	copied-again	0123456789abcdee
\.
SELECT count(*) AS copied FROM pages WHERE id >= 300;

-- UPDATE: moving a row next to another is refused; moving it a bit from
-- where it was is not (its old version does not conflict with it)
UPDATE pages SET fp = flip_bits(pseudo_fp(2), 9, 1) WHERE id = 1;
UPDATE pages SET fp = (fp::bigint # (1::bigint << 40))::simhash64 WHERE id = 1;
SELECT fp <-> pseudo_fp(1) AS moved FROM pages WHERE id = 1;

-- the operator has no radius of its own: a query that uses it fails,
-- sequentially and through the index, and points to hamming_near
SELECT count(*) FROM pages WHERE fp ~= pseudo_fp(2);
SET enable_seqscan = off;
SELECT count(*) FROM pages WHERE fp ~= pseudo_fp(2);
RESET enable_seqscan;

-- DEFERRABLE INITIALLY DEFERRED: checked at commit
CREATE TABLE deferred_pages (id int, fp simhash64,
  EXCLUDE USING simhash_perm (fp WITH ~=) DEFERRABLE INITIALLY DEFERRED);
BEGIN;
INSERT INTO deferred_pages VALUES (1, pseudo_fp(1)), (2, flip_bits(pseudo_fp(1), 5, 1));
-- fixed before commit: the commit passes
UPDATE deferred_pages SET fp = pseudo_fp(2) WHERE id = 2;
COMMIT;
BEGIN;
INSERT INTO deferred_pages VALUES (3, flip_bits(pseudo_fp(2), 6, 2));
SELECT count(*) AS pending FROM deferred_pages;
COMMIT;
SELECT id FROM deferred_pages ORDER BY id;
DROP TABLE deferred_pages;

-- Adding the constraint to a table that holds near-copies fails, naming a
-- pair; simhash_pairs finds them all, and once one of each pair is gone the
-- constraint is added
CREATE TABLE crawl (id bigint, fp simhash64);
INSERT INTO crawl SELECT g, pseudo_fp(g) FROM generate_series(1, 1000) g;
INSERT INTO crawl SELECT 1000 + g, flip_bits(pseudo_fp(g * 7), g, 2) FROM generate_series(1, 5) g;
ALTER TABLE crawl ADD CONSTRAINT crawl_no_near_copies EXCLUDE USING simhash_perm (fp WITH ~=);
SELECT a, b FROM simhash_pairs('crawl', 'id', 'fp', 3) AS p(a bigint, b bigint, distance int) ORDER BY a, b;
DELETE FROM crawl WHERE id IN (SELECT b FROM simhash_pairs('crawl', 'id', 'fp', 3) AS p(a bigint, b bigint, distance int));
ALTER TABLE crawl ADD CONSTRAINT crawl_no_near_copies EXCLUDE USING simhash_perm (fp WITH ~=);
SELECT count(*) FROM crawl;
DROP TABLE crawl;

-- The constraint keeps exactly the rows a one-at-a-time reading keeps: each
-- row in order, stored unless a stored row lies within 3 (computed with
-- hamming_near and a plain index, no constraint), on every data shape:
-- uniform, planted clusters, skewed prefixes, thousands of identical rows,
-- NULLs.
CREATE TABLE kept_by_constraint (id int, fp simhash64,
  EXCLUDE USING simhash_perm (fp WITH ~=) WITH (radius = 3));
INSERT INTO kept_by_constraint SELECT id, fp FROM shapes WHERE id % 3 = 0 OR shape <> 'uniform'
  ORDER BY id ON CONFLICT DO NOTHING;
CREATE TABLE kept_by_reading (id int, fp simhash64);
CREATE INDEX ON kept_by_reading USING simhash_perm (fp);
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT id, fp FROM shapes WHERE id % 3 = 0 OR shape <> 'uniform' ORDER BY id LOOP
		IF r.fp IS NULL OR NOT EXISTS (SELECT 1 FROM kept_by_reading WHERE hamming_near(fp, r.fp, 3)) THEN
			INSERT INTO kept_by_reading VALUES (r.id, r.fp);
		END IF;
	END LOOP;
END $$;
SELECT s.shape, count(c.id) AS by_constraint, count(r.id) AS by_reading,
       count(*) FILTER (WHERE (c.id IS NULL) <> (r.id IS NULL)) AS differ
  FROM shapes s LEFT JOIN kept_by_constraint c USING (id) LEFT JOIN kept_by_reading r USING (id)
 WHERE s.id % 3 = 0 OR s.shape <> 'uniform'
 GROUP BY s.shape ORDER BY s.shape;
SELECT count(*) AS pairs FROM simhash_pairs('kept_by_constraint', 'id', 'fp', 3) AS p(a int, b int, distance int);
SELECT count(*) AS index_check FROM simhash_perm_check(
  (SELECT indexrelid FROM pg_index WHERE indrelid = 'kept_by_constraint'::regclass)::regclass, true) WHERE table_no >= 0;
DROP TABLE kept_by_constraint, kept_by_reading;

-- Radii: radius 0 is a unique constraint on the fingerprint; a wider
-- design radius (with more blocks) refuses rows farther out; a radius out
-- of range is refused
CREATE TABLE exact_only (fp simhash64, EXCLUDE USING simhash_perm (fp WITH ~=) WITH (radius = 0));
INSERT INTO exact_only VALUES (pseudo_fp(1)), (flip_bits(pseudo_fp(1), 1, 1));
INSERT INTO exact_only VALUES (pseudo_fp(1));
CREATE TABLE wide (fp simhash64, EXCLUDE USING simhash_perm (fp WITH ~=) WITH (radius = 6, blocks = 8));
INSERT INTO wide VALUES (pseudo_fp(1));
INSERT INTO wide VALUES ((pseudo_fp(1)::bigint # 127)::simhash64);
INSERT INTO wide VALUES ((pseudo_fp(1)::bigint # 63)::simhash64);
CREATE TABLE too_wide (fp simhash64, EXCLUDE USING simhash_perm (fp WITH ~=) WITH (radius = 13));
DROP TABLE exact_only, wide;

-- Changing the radius: ALTER INDEX ... SET changes the definition that
-- pg_dump prints at once, so a larger radius must hold for the rows already
-- there (the ALTER searches them); the index changes at REINDEX, and until
-- then writes are refused rather than checked against a radius the
-- definition no longer shows
CREATE TABLE retuned (id int, fp simhash64,
  CONSTRAINT retuned_excl EXCLUDE USING simhash_perm (fp WITH ~=) WITH (radius = 2));
INSERT INTO retuned VALUES (1, '0000000000000000'), (2, '0000000000000007'), (3, 'ffff000000000000');
-- rows 1 and 2 lie 3 apart: a radius of 3 is refused, naming them, and
-- the definition keeps 2
ALTER INDEX retuned_excl SET (radius = 3);
ALTER INDEX retuned_excl RESET (radius);
SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'retuned_excl';
-- a smaller radius needs no search
ALTER INDEX retuned_excl SET (radius = 1);
ALTER INDEX retuned_excl SET (radius = 2);
DELETE FROM retuned WHERE id = 2;
ALTER INDEX retuned_excl SET (radius = 3);
SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'retuned_excl';
-- the index still enforces the radius it was built with: writes wait
INSERT INTO retuned VALUES (4, 'ffffffffffffffff');
REINDEX INDEX retuned_excl;
INSERT INTO retuned VALUES (5, '0000000000000007');
INSERT INTO retuned VALUES (6, 'ffff00000000000f') ON CONFLICT DO NOTHING;
INSERT INTO retuned VALUES (7, 'ffffffffffffffff');
SELECT id, fp FROM retuned ORDER BY id;
-- a rebuild that PostgreSQL does not check (VACUUM FULL, CLUSTER) checks
-- the rows itself: a radius raised without a check of the rows (as
-- simhash 1.5 allowed; here by writing the catalog) fails it, naming a pair
INSERT INTO retuned VALUES (8, '000000000000001f');
UPDATE pg_class SET reloptions = '{radius=5}' WHERE relname = 'retuned_excl';
VACUUM FULL retuned;
CREATE INDEX retuned_id ON retuned (id);
CLUSTER retuned USING retuned_id;
ALTER INDEX retuned_excl SET (radius = 3);
VACUUM FULL retuned;
CLUSTER retuned USING retuned_id;
SELECT id, fp FROM retuned ORDER BY id;
DROP TABLE retuned;

-- a bigint fingerprint column, and a partial constraint (one language)
CREATE TABLE big (lang text, fp bigint,
  EXCLUDE USING simhash_perm (fp WITH ~=) WHERE (lang = 'en'));
INSERT INTO big VALUES ('en', 1000), ('de', 1001), ('en', 123456789);
INSERT INTO big VALUES ('en', 1001);
INSERT INTO big VALUES ('en', 1003) ON CONFLICT DO NOTHING;
SELECT lang, fp FROM big ORDER BY fp, lang;
DROP TABLE big;

-- columns no simhash_perm operator class serves
CREATE TABLE wrong_type (body text, EXCLUDE USING simhash_perm (body WITH ~=));
CREATE TABLE wrong_type (n int, EXCLUDE USING simhash_perm (n WITH ~=));
-- another operator cannot serve a constraint (PostgreSQL's own error;
-- 18 qualifies the operator's name with its schema, 15 does not)
DO $$
BEGIN
	CREATE TABLE wrong_op (fp simhash64, EXCLUDE USING simhash_perm (fp WITH =));
EXCEPTION WHEN others THEN
	RAISE NOTICE '%: %', SQLSTATE, replace(SQLERRM, 'public.', '');
END $$;

-- the index behind the constraint answers radius queries as any other
SET enable_seqscan = off;
SELECT id FROM pages WHERE hamming_near(fp, pseudo_fp(2), 3) ORDER BY id;
RESET enable_seqscan;
SELECT count(*) AS index_check FROM simhash_perm_check('pages_no_near_copies', true) WHERE table_no >= 0;
DROP TABLE pages;
