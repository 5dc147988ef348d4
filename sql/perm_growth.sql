--
-- simhash_perm stays fast as the table grows after CREATE INDEX, and under
-- skew: pages read per probe (shared buffer hits of the index scan, from
-- EXPLAIN (ANALYZE, BUFFERS)) must not follow the table's size, a mass of
-- identical fingerprints, or fingerprints with many constant bits.  VACUUM
-- frees room that later inserts reuse.
--
\set VERBOSITY terse

-- index buffers read by a probe of table g for fingerprint q within k
CREATE FUNCTION probe_buffers(g regclass, q simhash64, k int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE format('EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM %s WHERE hamming_near(fp, %L, %s)',
                 g, q, k) INTO plan;
  RETURN (plan -> 0 -> 'Plan' ->> 'Shared Hit Blocks')::int + (plan -> 0 -> 'Plan' ->> 'Shared Read Blocks')::int;
END $$;

-- VACUUM removes deleted rows only once no snapshot taken before the
-- DELETE remains: an autovacuum ANALYZE of another test's table may hold
-- one for a moment.  After a DELETE, note its transaction in
-- simhash_test.after_delete, then wait (up to a minute) until no other
-- backend's xmin is that old.
CREATE PROCEDURE wait_for_older_snapshots() LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..600 LOOP
		PERFORM pg_stat_clear_snapshot();
		EXIT WHEN NOT EXISTS (SELECT 1 FROM pg_stat_activity
							   WHERE pid <> pg_backend_pid() AND backend_xmin IS NOT NULL
								 AND age(backend_xmin) >= age(current_setting('simhash_test.after_delete')::xid));
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;

SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- growth: build on 20,000 rows, then insert 180,000 more (10x)
CREATE TABLE grow (id int, fp simhash64);
INSERT INTO grow SELECT g, pseudo_fp(g) FROM generate_series(1, 20000) g;
CREATE INDEX grow_idx ON grow USING simhash_perm (fp);
SELECT probe_buffers('grow', pseudo_fp(1), 3) > 0 AS warmed;	-- builds the backend's leaf map
CREATE TABLE probes AS SELECT g, pseudo_fp(g * 7919) AS q FROM generate_series(1, 50) g;
SELECT sum(probe_buffers('grow', q, 3)) AS before FROM probes \gset
INSERT INTO grow SELECT g, pseudo_fp(g) FROM generate_series(20001, 200000) g;
SELECT probe_buffers('grow', pseudo_fp(1), 3) > 0 AS warmed;
SELECT sum(probe_buffers('grow', q, 3)) AS after FROM probes \gset
-- a heap page per match aside, a probe reads about one leaf per table
SELECT :before / 50.0 < 12 AS small_before, :after / 50.0 < 12 AS small_after,
       :after::float8 / :before < 2 AS not_proportional_to_rows;

-- skew 1: 100,000 rows share one fingerprint
CREATE TABLE same (id int, fp simhash64);
INSERT INTO same SELECT g, '5555555555555555' FROM generate_series(1, 100000) g;
INSERT INTO same SELECT g, pseudo_fp(g) FROM generate_series(100001, 120000) g;
CREATE INDEX same_idx ON same USING simhash_perm (fp);
SELECT probe_buffers('same', pseudo_fp(1), 3) > 0 AS warmed;
-- other fingerprints, including ones sharing a whole block with the mass
SELECT max(probe_buffers('same', q, 3)) < 30 AS others_stay_fast FROM probes;
SELECT probe_buffers('same', ('5555' || substr(q::text, 5))::simhash64, 3) < 30 AS same_block_fast
  FROM probes WHERE g = 1;
SELECT count(*) FROM same WHERE hamming_near(fp, '5555555555555554', 1);

-- skew 2: the top 24 bits and every third bit are always zero, leaving 26
-- informative bits.  A contiguous split would make one table's prefix the
-- constant top 16 bits: one bucket of all rows.  The build spreads the
-- informative bits over the blocks: 6 or 7 per prefix, 64 to 128 buckets in
-- every table, the best these data allow.
CREATE TABLE lowent (id int, fp simhash64);
INSERT INTO lowent SELECT g, (pseudo_fp(g)::bigint & 1099511627775 & ~(x'9249249249249249'::bigint))::simhash64
  FROM generate_series(1, 100000) g;
CREATE INDEX lowent_idx ON lowent USING simhash_perm (fp);
SELECT min(buckets) >= 64 AS every_table_spread, max(largest_bucket) < 2000 AS no_giant_bucket
  FROM simhash_perm_info('lowent_idx');
SELECT probe_buffers('lowent', fp, 3) < 30 AS lowent_fast FROM lowent WHERE id = 777;

-- VACUUM frees room that inserts reuse: delete half, vacuum, insert as
-- many new rows; the index stays about the same size
CREATE TABLE churn (id int, fp simhash64);
INSERT INTO churn SELECT g, pseudo_fp(g) FROM generate_series(1, 50000) g;
CREATE INDEX churn_idx ON churn USING simhash_perm (fp);
SELECT pg_relation_size('churn_idx') AS size_built \gset
DELETE FROM churn WHERE id % 2 = 0;
-- VACUUM removes those rows only once no older snapshot remains
SELECT set_config('simhash_test.after_delete', pg_current_xact_id()::xid::text, false) IS NOT NULL AS noted;
CALL wait_for_older_snapshots();
VACUUM (INDEX_CLEANUP ON) churn;
SELECT (sum(entries) / 4)::int AS entries_after_vacuum FROM simhash_perm_info('churn_idx');
INSERT INTO churn SELECT g, pseudo_fp(g) FROM generate_series(50001, 75000) g;
SELECT pg_relation_size('churn_idx')::float8 / :size_built < 1.1 AS space_reused;
SELECT count(*) FROM churn WHERE hamming_near(fp, pseudo_fp(60000), 0);

-- An index created empty takes the layout of uniform fingerprints.  Rows
-- that come later with two blocks of that layout constant (bits 63, 59, ..,
-- 3 and 62, 58, .., 2) would land under one prefix in two of its four
-- tables, which every probe would then read whole.  While the index is
-- young its layout follows the rows (permgrow.c): the inserts themselves
-- choose a new one, and the index ends as balanced as one built on them.
CREATE TABLE late (id int, fp simhash64);
CREATE INDEX late_idx ON late USING simhash_perm (fp);
SELECT string_agg(prefix, ';' ORDER BY table_no) AS uniform_layout FROM simhash_perm_info('late_idx') \gset
INSERT INTO late SELECT g, ((pseudo_fp(g)::bigint) & ~x'cccccccccccccccc'::bigint)::simhash64
  FROM generate_series(1, 20000) g;
SELECT string_agg(prefix, ';' ORDER BY table_no) <> :'uniform_layout' AS layout_changed,
       max(largest_bucket) < 1000 AS balanced, min(entries) = 20000 AS every_row
  FROM simhash_perm_info('late_idx');
SELECT probe_buffers('late', ((pseudo_fp(7)::bigint) & ~x'cccccccccccccccc'::bigint)::simhash64, 3) <= 10 AS probe_reads_few;
SELECT count(*) FROM simhash_perm_check('late_idx', true) WHERE table_no >= 0;
-- answers equal a sequential scan's, at the design radius and above it
CREATE TEMP TABLE late_q AS SELECT fp AS q FROM late WHERE id % 199 = 0
  UNION ALL SELECT ((pseudo_fp(-g)::bigint) & ~x'cccccccccccccccc'::bigint)::simhash64 FROM generate_series(1, 20) g;
SET enable_seqscan = off;
CREATE TEMP TABLE late_got AS
  SELECT q, k, l.id FROM late_q, generate_series(0, 7) k, LATERAL (SELECT id FROM late WHERE hamming_near(fp, q, k)) l;
RESET enable_seqscan;
SET enable_indexscan = off; SET enable_bitmapscan = off;
CREATE TEMP TABLE late_want AS
  SELECT q, k, l.id FROM late_q, generate_series(0, 7) k, LATERAL (SELECT id FROM late WHERE hamming_distance(fp, q) <= k) l;
RESET enable_indexscan; RESET enable_bitmapscan;
SELECT (SELECT count(*) FROM late_want) > 1000 AS many,
       (SELECT count(*) FROM (TABLE late_got EXCEPT ALL TABLE late_want) x) AS extra,
       (SELECT count(*) FROM (TABLE late_want EXCEPT ALL TABLE late_got) x) AS missing;
-- VACUUM passes by the pages of the earlier layout: it counts the rows once
DELETE FROM late WHERE id % 2 = 0;
SELECT set_config('simhash_test.after_delete', pg_current_xact_id()::xid::text, false) IS NOT NULL AS noted;
CALL wait_for_older_snapshots();
VACUUM late;
SELECT reltuples FROM pg_class WHERE relname = 'late_idx';
SELECT count(*) FROM simhash_perm_check('late_idx', true) WHERE table_no >= 0;

-- The racy form of "insert unless a near copy is there", INSERT ... SELECT
-- ... WHERE NOT EXISTS (SELECT 1 ... hamming_near ...), scans the index in
-- the statement that inserts into it: the index is open twice, and its
-- layout cannot change under the subquery's scan.  The insert notes that a
-- look is due, the end of the statement takes it (permgrow.c), and the
-- layout follows the rows all the same.
CREATE FUNCTION skewed_fp(g bigint) RETURNS simhash64 LANGUAGE sql IMMUTABLE
  AS $$ SELECT ((pseudo_fp(g)::bigint) & ~x'cccccccccccccccc'::bigint)::simhash64 $$;
CREATE TABLE racy (id int, fp simhash64);
CREATE INDEX racy_idx ON racy USING simhash_perm (fp);
SET enable_seqscan = off; SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF)
INSERT INTO racy SELECT g, skewed_fp(g) FROM generate_series(1, 20000) g
  WHERE NOT EXISTS (SELECT 1 FROM racy WHERE hamming_near(fp, skewed_fp(g), 3));
INSERT INTO racy SELECT g, skewed_fp(g) FROM generate_series(1, 20000) g
  WHERE NOT EXISTS (SELECT 1 FROM racy WHERE hamming_near(fp, skewed_fp(g), 3));
SELECT string_agg(prefix, ';' ORDER BY table_no) <> :'uniform_layout' AS layout_changed,
       max(largest_bucket) < 1000 AS balanced, min(entries) = 20000 AS every_row
  FROM simhash_perm_info('racy_idx');
-- one row a statement, as an application sends them: each statement's end
-- looks, and the next statements find the rows spread
INSERT INTO racy SELECT g, skewed_fp(g) FROM generate_series(20001, 20100) g;
DO $$
BEGIN
  FOR g IN 20101..21000 LOOP
    INSERT INTO racy SELECT g, skewed_fp(g)
      WHERE NOT EXISTS (SELECT 1 FROM racy WHERE hamming_near(fp, skewed_fp(g), 3));
  END LOOP;
END $$;
SELECT count(*) FROM racy;
SELECT count(*) FROM simhash_perm_check('racy_idx', true) WHERE table_no >= 0;
-- answers equal a sequential scan's, at several radii
CREATE TEMP TABLE racy_q AS SELECT fp AS q FROM racy WHERE id % 211 = 0
  UNION ALL SELECT skewed_fp(-g) FROM generate_series(1, 20) g;
CREATE TEMP TABLE racy_got AS
  SELECT q, k, r.id FROM racy_q, unnest(ARRAY[0, 3, 5, 9]) k, LATERAL (SELECT id FROM racy WHERE hamming_near(fp, q, k)) r;
RESET enable_seqscan; RESET enable_bitmapscan;
SET enable_indexscan = off; SET enable_bitmapscan = off;
CREATE TEMP TABLE racy_want AS
  SELECT q, k, r.id FROM racy_q, unnest(ARRAY[0, 3, 5, 9]) k, LATERAL (SELECT id FROM racy WHERE hamming_distance(fp, q) <= k) r;
RESET enable_indexscan; RESET enable_bitmapscan;
SELECT (SELECT count(*) FROM racy_want) > 1000 AS many,
       (SELECT count(*) FROM (TABLE racy_got EXCEPT ALL TABLE racy_want) x) AS extra,
       (SELECT count(*) FROM (TABLE racy_want EXCEPT ALL TABLE racy_got) x) AS missing;

-- A scan open across the inserts that make a look due (a cursor reading
-- nearest neighbours ring by ring): the layout stays while it is open, the
-- cursor answers as the table stood when it was opened, and closing it
-- lets the end of that statement take the look.
CREATE TABLE held (id int, fp simhash64);
CREATE INDEX held_idx ON held USING simhash_perm (fp);
INSERT INTO held SELECT g, skewed_fp(g) FROM generate_series(1, 200) g;
CREATE FUNCTION held_cursor(q simhash64, more int,
                            OUT while_open text, OUT after_close text,
                            OUT ids int[], OUT dists int[])
  LANGUAGE plpgsql AS $$
DECLARE c refcursor; r record;
BEGIN
  ids := '{}'; dists := '{}';
  SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off;
  OPEN c FOR SELECT id, fp <-> q AS d FROM held ORDER BY fp <-> q;
  FOR i IN 1..5 LOOP
    FETCH c INTO r; ids := ids || r.id; dists := dists || r.d;
  END LOOP;
  INSERT INTO held SELECT g, skewed_fp(g) FROM generate_series(201, 200 + more) g;
  SELECT string_agg(prefix, ';' ORDER BY table_no) INTO while_open FROM simhash_perm_info('held_idx');
  LOOP
    FETCH c INTO r; EXIT WHEN NOT FOUND; ids := ids || r.id; dists := dists || r.d;
  END LOOP;
  CLOSE c;
  SELECT string_agg(prefix, ';' ORDER BY table_no) INTO after_close FROM simhash_perm_info('held_idx');
END $$;
SELECT * INTO TEMP held_got FROM held_cursor(skewed_fp(7), 20000);
SELECT while_open = :'uniform_layout' AS kept_while_open,
       after_close <> :'uniform_layout' AS changed_after_close,
       cardinality(ids) AS rows_seen,
       dists = (SELECT array_agg(hamming_distance(fp, skewed_fp(7)) ORDER BY hamming_distance(fp, skewed_fp(7)), id)
                  FROM held WHERE id <= 200) AS distances_exact,
       (SELECT array_agg(x ORDER BY x) FROM unnest(ids) x) =
         (SELECT array_agg(id ORDER BY id) FROM held WHERE id <= 200) AS rows_exact
  FROM held_got;
SELECT count(*) FROM simhash_perm_check('held_idx', true) WHERE table_no >= 0;

-- Uniform fingerprints keep the uniform layout: no pages are rewritten
-- (the index's pages: leaves, the metapage, the page of the list of rows
-- without a code, and the tables' internal pages)
CREATE TABLE late_uniform (id int, fp simhash64);
CREATE INDEX late_uniform_idx ON late_uniform USING simhash_perm (fp);
INSERT INTO late_uniform SELECT g, pseudo_fp(g) FROM generate_series(1, 20000) g;
SELECT string_agg(prefix, ';' ORDER BY table_no) = :'uniform_layout' AS layout_kept,
       max(index_pages) = sum(leaf_pages) + 2 + (SELECT count(*) FROM simhash_perm_info('late_uniform_idx') WHERE height > 1) AS no_pages_left_behind
  FROM simhash_perm_info('late_uniform_idx');

-- A layout chosen from 65,536 rows or more is final.  If the rows that
-- come later are skewed, VACUUM and ANALYZE say so, with the hint to
-- REINDEX, which chooses the layout from the rows it then holds (and then
-- says nothing more).  Many copies of one fingerprint are not skew.
CREATE TABLE drift (id int, fp simhash64);
INSERT INTO drift SELECT g, pseudo_fp(g) FROM generate_series(1, 70000) g;
CREATE INDEX drift_idx ON drift USING simhash_perm (fp);
INSERT INTO drift SELECT g, ((pseudo_fp(g)::bigint) & ~x'cccccccccccccccc'::bigint)::simhash64
  FROM generate_series(70001, 82000) g;
ANALYZE drift;
VACUUM drift;
REINDEX INDEX drift_idx;
ANALYZE drift;
TRUNCATE drift;
INSERT INTO drift SELECT g, pseudo_fp(1) FROM generate_series(1, 20000) g;
VACUUM drift;

DROP TABLE grow, probes, same, lowent, churn, late, racy, held, late_uniform, drift;
DROP FUNCTION held_cursor(simhash64, int);
DROP FUNCTION skewed_fp(bigint);
DROP FUNCTION probe_buffers(regclass, simhash64, int);
DROP PROCEDURE wait_for_older_snapshots();
