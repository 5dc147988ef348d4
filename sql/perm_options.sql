--
-- One radius, under one name: radius is the design radius of every
-- simhash_perm index (on 64-bit fingerprints it means what max_distance,
-- its older name, means, which goes on working there); an option that
-- does not apply to the index's code type is refused at CREATE INDEX and at
-- ALTER INDEX, with an error that names the option to use; bit varying
-- codes take their width from a width option when the table is empty.  No
-- value is ignored or changed: one that is not an integer, or outside the
-- range of the index's codes, is refused (section 5).
--
SELECT setseed(0.17);
CREATE TABLE o64 (id int, site int, fp bigint);
INSERT INTO o64 SELECT g, g % 5, pseudo_fp(g)::bigint FROM generate_series(1, 3000) g;

-- 1. 64-bit fingerprints: radius and max_distance make the same index
CREATE INDEX o64_r4 ON o64 USING simhash_perm (fp) WITH (radius = 4);
CREATE INDEX o64_k4 ON o64 USING simhash_perm (fp) WITH (max_distance = 4);
CREATE INDEX o64_both ON o64 USING simhash_perm (fp) WITH (radius = 4, max_distance = 4);
SELECT indexrelid::regclass AS index, count(*) AS tables, min(radius) AS radius, min(blocks) AS blocks
  FROM (SELECT 'o64_r4'::regclass AS indexrelid, * FROM simhash_perm_info('o64_r4')
		UNION ALL SELECT 'o64_k4', * FROM simhash_perm_info('o64_k4')
		UNION ALL SELECT 'o64_both', * FROM simhash_perm_info('o64_both')) s
 GROUP BY 1 ORDER BY 1;
SET enable_seqscan = off;
SELECT count(*) FROM o64 WHERE hamming_near(fp, pseudo_fp(7)::bigint, 6);
RESET enable_seqscan;
SELECT count(*) FROM o64 WHERE hamming_near(fp, pseudo_fp(7)::bigint, 6);
-- what does not apply, or contradicts
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (radius = 4, max_distance = 3);
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (radius = 13);
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (radius = 3, blocks = 3);
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (substrings = 4);
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (width = 64);
-- ALTER INDEX applies the same rules
ALTER INDEX o64_r4 SET (substrings = 2);
ALTER INDEX o64_r4 SET (width = 64);
ALTER INDEX o64_r4 SET (max_distance = 5);
ALTER INDEX o64_r4 SET (radius = 13);
ALTER INDEX o64_k4 SET (radius = 5);
ALTER INDEX o64_k4 RESET (max_distance);
ALTER INDEX o64_k4 SET (radius = 5);
REINDEX INDEX o64_k4;
SELECT count(*) AS tables, min(radius) AS radius FROM simhash_perm_info('o64_k4');
DROP INDEX o64_r4, o64_k4, o64_both;

-- 2. (tenant, 64-bit fingerprint): radius, or max_distance; substrings;
--    not blocks
CREATE INDEX o64_site ON o64 USING simhash_perm (site, fp) WITH (radius = 4);
SELECT count(*) AS tables, min(radius) AS radius FROM simhash_perm_info('o64_site');
CREATE INDEX o64_bad ON o64 USING simhash_perm (site, fp) WITH (blocks = 5);
CREATE INDEX o64_bad ON o64 USING simhash_perm (site, fp) WITH (radius = 20);
ALTER INDEX o64_site SET (blocks = 5);
ALTER INDEX o64_site SET (width = 64);

-- 3. bit(n) codes: radius, substrings, width; not max_distance nor blocks
CREATE TABLE o256 (id int, code bit(256));
INSERT INTO o256 SELECT g, ('x' || wide_random(256))::bit(256) FROM generate_series(1, 500) g;
CREATE INDEX o256_bad ON o256 USING simhash_perm (code) WITH (max_distance = 5);
CREATE INDEX o256_bad ON o256 USING simhash_perm (code) WITH (blocks = 4);
CREATE INDEX o256_bad ON o256 USING simhash_perm (code) WITH (width = 128);
CREATE INDEX o256_idx ON o256 USING simhash_perm (code) WITH (radius = 20, width = 256);
SELECT min(radius) AS radius FROM simhash_perm_info('o256_idx');
ALTER INDEX o256_idx SET (max_distance = 12);
ALTER INDEX o256_idx SET (blocks = 4);
ALTER INDEX o256_idx SET (width = 128);
ALTER INDEX o256_idx SET (radius = 24);
SELECT reloptions FROM pg_class WHERE relname = 'o256_idx';

-- the constraint of the report: max_distance on bit(n) codes was accepted,
-- printed by pg_dump and ignored (the index enforced width / 8); now the
-- constraint is refused, and with radius it enforces the radius given
CREATE TABLE images (id int, pdq bit(256),
	EXCLUDE USING simhash_perm (pdq WITH ~=) WITH (max_distance = 5));
CREATE TABLE images (id int, pdq bit(256),
	EXCLUDE USING simhash_perm (pdq WITH ~=) WITH (radius = 5));
SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'images'::regclass;
INSERT INTO images SELECT id, code FROM o256 WHERE id = 1;
-- 10 bits apart: beyond radius 5, so not a near-copy (width / 8 = 32 would refuse it)
INSERT INTO images SELECT 2, code # wide_mask(256, 10)::bit(256) FROM o256 WHERE id = 1;
-- 5 bits apart: refused
INSERT INTO images SELECT 3, code # wide_mask(256, 5)::bit(256) FROM o256 WHERE id = 1;
SELECT count(*) FROM images;
ALTER INDEX images_pdq_excl SET (max_distance = 12);

-- 4. bit varying codes: the width from the option, so that a constraint can
--    be declared with its table
CREATE TABLE embeddings (id int, code bit varying,
	EXCLUDE USING simhash_perm (code WITH ~=) WITH (width = 64, radius = 6));
SELECT count(*) AS tables, min(radius) AS radius FROM simhash_perm_info('embeddings_code_excl');
INSERT INTO embeddings VALUES (1, x'0123456789abcdef'::bit(64)::bit varying);
INSERT INTO embeddings VALUES (2, (x'0123456789abcdef'::bigint # 63)::bit(64)::bit varying);
INSERT INTO embeddings VALUES (3, (x'0123456789abcdef'::bigint # 127)::bit(64)::bit varying);
INSERT INTO embeddings VALUES (4, B'1010');
SELECT id FROM embeddings ORDER BY id;
ALTER INDEX embeddings_code_excl SET (width = 128);
-- without the option, an empty table cannot tell the width
CREATE TABLE nowidth (code bit varying);
CREATE INDEX ON nowidth USING simhash_perm (code);
-- with it, a first row of another width is refused
CREATE INDEX nowidth_idx ON nowidth USING simhash_perm (code) WITH (width = 32);
INSERT INTO nowidth VALUES (B'1010');
INSERT INTO nowidth VALUES (x'deadbeef'::bit(32)::bit varying);
SELECT count(*) FROM nowidth;
-- on rows of another width, the build refuses it
CREATE INDEX ON embeddings USING simhash_perm (code) WITH (width = 32);

-- 5. Values: an integer in decimal digits, within the range of the index's
--    codes; the value that stands for "not given" (-1, 0), given, is out of
--    range too.  PostgreSQL alone would round 2.5 to 2 and 3.5 to 4, read
--    1e1 as 10, 0x3 as 3 and 010 as 8, and take radius = -1 for 3.
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (radius = -1);
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (radius = -5);
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (radius = 2.5);
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (radius = '3.5');
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (radius = '1e1');
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (radius = '0x3');
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (radius = '010');
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (radius = three);
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (radius = 99999999999);
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (radius);
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (max_distance = -1);
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (max_distance = 2.5);
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (max_distance = 13);
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (blocks = 0);
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (blocks = -1);
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (radius = 2, blocks = 17);
CREATE INDEX o64_bad ON o64 USING simhash_perm (fp) WITH (blocks = 4.5);
CREATE INDEX o64_bad ON o64 USING simhash_perm (site, fp) WITH (radius = -1);
CREATE INDEX o64_bad ON o64 USING simhash_perm (site, fp) WITH (substrings = 0);
-- an integer with spaces around it is that integer
CREATE INDEX o64_r2 ON o64 USING simhash_perm (fp) WITH (radius = ' 2 ', blocks = '+4');
SELECT count(*) AS tables, min(radius) AS radius, min(blocks) AS blocks FROM simhash_perm_info('o64_r2');
-- ALTER INDEX ... SET refuses the same values, and keeps the options
ALTER INDEX o64_r2 SET (radius = -1);
ALTER INDEX o64_r2 SET (radius = 2.5);
ALTER INDEX o64_r2 SET (max_distance = 1.5);
ALTER INDEX o64_r2 SET (blocks = 0);
ALTER INDEX o64_r2 SET (blocks = 20);
SELECT reloptions FROM pg_class WHERE relname = 'o64_r2';
-- bit(n) codes: radius 0 to the width, substrings as the width allows
CREATE INDEX o256_bad ON o256 USING simhash_perm (code) WITH (radius = -1);
CREATE INDEX o256_bad ON o256 USING simhash_perm (code) WITH (radius = 257);
CREATE INDEX o256_bad ON o256 USING simhash_perm (code) WITH (radius = 20.5);
CREATE INDEX o256_bad ON o256 USING simhash_perm (code) WITH (substrings = 0);
CREATE INDEX o256_bad ON o256 USING simhash_perm (code) WITH (substrings = 3);
CREATE INDEX o256_bad ON o256 USING simhash_perm (code) WITH (substrings = 65);
CREATE INDEX o256_bad ON o256 USING simhash_perm (code) WITH (width = 0);
CREATE INDEX o256_bad ON o256 USING simhash_perm (code) WITH (width = 4097);
CREATE INDEX o256_bad ON o256 USING simhash_perm (code) WITH (width = 256.0);
ALTER INDEX o256_idx SET (radius = -1);
ALTER INDEX o256_idx SET (substrings = 0);
SELECT reloptions FROM pg_class WHERE relname = 'o256_idx';
CREATE INDEX o256_r0 ON o256 USING simhash_perm (code) WITH (radius = 0);
SELECT min(radius) AS radius FROM simhash_perm_info('o256_r0');
SELECT id FROM o256 WHERE code <@ hamming_within((SELECT code FROM o256 WHERE id = 9), 0);
CREATE INDEX ON nowidth USING simhash_perm (code) WITH (width = -32);
-- options that simhash 1.5 accepted and stored: the index goes on working
-- (2.5 read as 2, blocks = 0 as radius + 1); ALTER INDEX ... SET replaces them
CREATE INDEX o64_old ON o64 USING simhash_perm (fp);
UPDATE pg_class SET reloptions = '{max_distance=2.5,blocks=0}' WHERE relname = 'o64_old';
REINDEX INDEX o64_old;
SELECT count(*) AS tables, min(radius) AS radius, min(blocks) AS blocks FROM simhash_perm_info('o64_old');
ALTER INDEX o64_old SET (radius = 1);
ALTER INDEX o64_old SET (max_distance = 2, blocks = 3);
REINDEX INDEX o64_old;
SELECT count(*) AS tables, min(radius) AS radius, min(blocks) AS blocks FROM simhash_perm_info('o64_old');

DROP TABLE o64, o256, images, embeddings, nowidth;

-- The settings: pg_settings (and SHOW ALL) list those meant for users; the
-- ones for tests are hidden there, and a superuser still sets and shows
-- them by name.
SELECT name, setting, unit, context, short_desc
  FROM pg_settings WHERE name LIKE 'simhash.%' ORDER BY name;
SET simhash.wide_layout_min_rows = 5;
SHOW simhash.wide_layout_min_rows;
RESET simhash.wide_layout_min_rows;
SELECT name FROM pg_settings
 WHERE name IN ('simhash.fail_after_split', 'simhash.report_build_workers',
				'simhash.write_old_leaf_format', 'simhash.store_vector_popcount',
				'simhash.wide_layout_min_rows');
