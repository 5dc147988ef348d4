--
-- Leaf formats: indexes built by simhash 1.3 and earlier store a leaf's
-- keys as their low bytes (one byte more whenever the leaf's key range
-- crosses a byte boundary); later ones store offsets from the leaf's low
-- key and mark the page PERM_KEY_OFFSET (permleaf.c).  Old leaves must stay
-- readable, take appends in their own format and the new format when they
-- are rewritten; simhash.write_old_leaf_format (for tests) writes the old.
--
\set VERBOSITY terse
CREATE EXTENSION IF NOT EXISTS pageinspect;
-- leaves by format, from the special space: flags at byte 20, key bytes at 34
CREATE FUNCTION leaf_formats(idx regclass, OUT offset_format bigint, OUT old_format bigint,
                             OUT key_bytes numeric)
  LANGUAGE sql AS $$
  SELECT count(*) FILTER (WHERE flags & 32 <> 0), count(*) FILTER (WHERE flags & 32 = 0),
         round(avg(kb), 2)
    FROM (SELECT get_byte(s, 20) + 256 * get_byte(s, 21) AS flags, get_byte(s, 34) AS kb
            FROM (SELECT substr(get_raw_page(idx::text, b::int), 8193 - 48) AS s
                    FROM generate_series(1, pg_relation_size(idx) / 8192 - 1) b) p) f
   WHERE flags & 2 <> 0 $$;

CREATE TABLE f (id int, fp simhash64);
INSERT INTO f SELECT g, pseudo_fp(g) FROM generate_series(1, 30000) g;
INSERT INTO f SELECT 100000 + g, '00000000000000ff' FROM generate_series(1, 2000) g;
INSERT INTO f VALUES (0, NULL);
CREATE TABLE f_new AS SELECT * FROM f;
SET simhash.write_old_leaf_format = on;
CREATE INDEX f_old_idx ON f USING simhash_perm (fp);
RESET simhash.write_old_leaf_format;
CREATE INDEX f_new_idx ON f_new USING simhash_perm (fp);
-- the same entries: the offset format needs at most as many key bytes
SELECT o.offset_format, o.old_format, n.offset_format, n.old_format, n.key_bytes <= o.key_bytes AS no_wider
  FROM leaf_formats('f_old_idx') o, leaf_formats('f_new_idx') n;

CREATE TABLE q AS SELECT fp FROM f WHERE id % 499 = 0
  UNION ALL SELECT '00000000000001ff'::simhash64 UNION ALL SELECT pseudo_fp(-g) FROM generate_series(1, 5) g;
-- every answer for k = 0..6 and the ten nearest, through the index and not
CREATE FUNCTION answers(tab regclass, through_index bool) RETURNS TABLE (n bigint, s numeric) LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('enable_seqscan', (NOT through_index)::text, true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  PERFORM set_config('enable_indexscan', through_index::text, true);
  RETURN QUERY EXECUTE format(
    'SELECT count(*), coalesce(sum(t.id::numeric * (k + 1)), 0)
       FROM q, generate_series(0, 6) k, %s t WHERE hamming_near(t.fp, q.fp, k)', tab);
  RETURN QUERY EXECUTE format(
    'SELECT count(*), sum(n.d::numeric)
       FROM q, LATERAL (SELECT t.fp <-> q.fp AS d FROM %s t ORDER BY t.fp <-> q.fp LIMIT 10) n', tab);
END $$;
CREATE FUNCTION agree(tab regclass) RETURNS bool LANGUAGE sql AS $$
  SELECT array_agg(a ORDER BY a) = (SELECT array_agg(b ORDER BY b) FROM answers(tab, false) b)
    FROM answers(tab, true) a $$;
SELECT agree('f') AS old_format_agrees;

-- appends to old leaves (plain, then tail merges and splits in the new format)
INSERT INTO f SELECT g, pseudo_fp(g) FROM generate_series(30001, 60000) g;
SELECT offset_format > 0 AS some_converted, old_format > 0 AS some_old FROM leaf_formats('f_old_idx');
SELECT agree('f') AS mixed_agrees, count(*) AS tables_sound FROM simhash_perm_check('f_old_idx') WHERE table_no >= 0;
-- VACUUM rewrites the leaves it removes entries from
DELETE FROM f WHERE id % 3 = 0;
VACUUM f;
SELECT agree('f') AS after_vacuum_agrees, count(*) AS tables_sound FROM simhash_perm_check('f_old_idx', heapallindexed => true) WHERE table_no >= 0;
-- and the other way: old-format writes into a new index
SET simhash.write_old_leaf_format = on;
INSERT INTO f_new SELECT g, pseudo_fp(g) FROM generate_series(30001, 60000) g;
RESET simhash.write_old_leaf_format;
SELECT old_format > 0 AS some_old FROM leaf_formats('f_new_idx');
INSERT INTO f_new SELECT g, pseudo_fp(g) FROM generate_series(60001, 70000) g;
SELECT agree('f_new') AS mixed_agrees, count(*) AS tables_sound FROM simhash_perm_check('f_new_idx', heapallindexed => true) WHERE table_no >= 0;
-- REINDEX writes every leaf in the offset format
REINDEX INDEX f_old_idx;
SELECT old_format AS old_leaves FROM leaf_formats('f_old_idx');
SELECT agree('f') AS after_reindex_agrees;
-- the setting is for superusers
CREATE ROLE simhash_format_nobody;
SET ROLE simhash_format_nobody;
SET simhash.write_old_leaf_format = on;
RESET ROLE;
DROP ROLE simhash_format_nobody;

DROP TABLE f, f_new, q;
DROP FUNCTION leaf_formats(regclass), answers(regclass, bool), agree(regclass);
