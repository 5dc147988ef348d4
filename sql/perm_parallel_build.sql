--
-- simhash_perm: CREATE INDEX with parallel workers (permbuildparallel.c).
-- Each index is built twice, with two workers and serially: the two are
-- the same, table by table (every figure of simhash_perm_info, the pages
-- included), the parallel one passes simhash_perm_check with every row
-- looked up, and its answers equal a sequential scan's at several radii
-- and for nearest neighbours.  For 64-bit fingerprints, bit(256) codes,
-- leading columns, an expression, a partial index, CONCURRENTLY and
-- REINDEX; the workers run the owner's code as the leader does; builds
-- that cannot be parallel are serial.  simhash.report_build_workers (a
-- setting for tests) says how many workers read a share of the table.
--
\set VERBOSITY terse

-- plan two workers for any table, whatever its size
SET max_parallel_maintenance_workers = 2;
SET maintenance_work_mem = '128MB';
SET min_parallel_table_scan_size = 0;
SET simhash.report_build_workers = on;

-- a fingerprint function that parallel workers may run, and one they may
-- not (its names qualified: a build runs it with search_path locked)
CREATE FUNCTION par_fp(g bigint) RETURNS simhash64 LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT ((hashint8(g)::bigint << 32) | (hashint8(-g - 1)::bigint & 4294967295))::public.simhash64 $$;
CREATE FUNCTION par_fp_unsafe(g bigint) RETURNS simhash64 LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE
  AS $$ BEGIN RETURN ((hashint8(g)::bigint << 32) | (hashint8(-g - 1)::bigint & 4294967295))::public.simhash64; END $$;

-- The rows (as text) query q returns through an index (by_index) or a
-- sequential scan
CREATE FUNCTION par_rows(q text, by_index bool) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('enable_seqscan', CASE WHEN by_index THEN 'off' ELSE 'on' END, true);
	PERFORM set_config('enable_indexscan', CASE WHEN by_index THEN 'on' ELSE 'off' END, true);
	PERFORM set_config('enable_bitmapscan', CASE WHEN by_index THEN 'on' ELSE 'off' END, true);
	RETURN QUERY EXECUTE q;
END $$;

-- Queries, each with the rows it returns, whether it went through index
-- idx, and how many of its rows differ between the index and a
-- sequential scan
CREATE FUNCTION par_compare(idx text, queries text[])
RETURNS TABLE (rows bigint, through_index bool, differ bigint)
LANGUAGE plpgsql AS $$
DECLARE
	q text;
	p text;
BEGIN
	FOREACH q IN ARRAY queries LOOP
		through_index := false;
		PERFORM set_config('enable_seqscan', 'off', true);
		PERFORM set_config('enable_indexscan', 'on', true);
		PERFORM set_config('enable_bitmapscan', 'on', true);
		FOR p IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
			IF p LIKE '%' || idx || '%' THEN
				through_index := true;
			END IF;
		END LOOP;
		SELECT count(*) INTO rows FROM par_rows(q, true);
		SELECT count(*) INTO differ FROM (
			(SELECT * FROM par_rows(q, true) EXCEPT ALL SELECT * FROM par_rows(q, false))
			UNION ALL
			(SELECT * FROM par_rows(q, false) EXCEPT ALL SELECT * FROM par_rows(q, true))) d;
		RETURN NEXT;
	END LOOP;
END $$;

-- Whether two indexes are the same, table by table
CREATE FUNCTION par_same(a regclass, b regclass) RETURNS bool
LANGUAGE sql AS $$
	SELECT NOT EXISTS (SELECT * FROM simhash_perm_info(a) EXCEPT SELECT * FROM simhash_perm_info(b))
	   AND NOT EXISTS (SELECT * FROM simhash_perm_info(b) EXCEPT SELECT * FROM simhash_perm_info(a))
	   AND pg_relation_size(a) = pg_relation_size(b)
$$;

-- 1. 64-bit fingerprints: 30,000 rows, 300 planted near-copies, a run of
--    one repeated fingerprint, NULLs
CREATE TABLE pfp (id bigint, fp simhash64);
INSERT INTO pfp SELECT g, par_fp(g) FROM generate_series(1, 30000) g;
INSERT INTO pfp SELECT 100000 + g, flip_bits(par_fp(g), g, (g % 5)::int)
  FROM generate_series(1, 300) g;
INSERT INTO pfp SELECT 200000 + g, '00000000000004d2' FROM generate_series(1, 500) g;
INSERT INTO pfp VALUES (-1, NULL), (-2, NULL);
ANALYZE pfp;
CREATE INDEX pfp_par ON pfp USING simhash_perm (fp);
SET max_parallel_maintenance_workers = 0;
CREATE INDEX pfp_ser ON pfp USING simhash_perm (fp);
SET max_parallel_maintenance_workers = 2;
SELECT par_same('pfp_par', 'pfp_ser') AS same,
	   (SELECT count(*) FROM simhash_perm_info('pfp_par')) AS tables,
	   (SELECT min(entries) FROM simhash_perm_info('pfp_par')) AS entries;
SELECT count(*) AS tables_checked FROM simhash_perm_check('pfp_par', true) WHERE table_no >= 0;
DROP INDEX pfp_ser;
SELECT * FROM par_compare('pfp_par', ARRAY(
	SELECT format('SELECT id::text FROM pfp WHERE hamming_near(fp, %L, %s)', par_fp(g), r)
	  FROM unnest('{7, 150, 299, 31000}'::int[]) g, unnest('{0, 3, 5, 8}'::int[]) r));
-- nearest neighbours: the distances of the 10 nearest, in order
SELECT * FROM par_compare('pfp_par', ARRAY(
	SELECT format('SELECT string_agg(d::text, %L) FROM (SELECT fp <-> %L AS d FROM pfp ORDER BY fp <-> %L LIMIT 10) s',
				  ',', q, q)
	  FROM unnest(ARRAY[par_fp(7), par_fp(31000), '00000000000004d3'::simhash64]) q));

-- the same build as a serial one under other options, by REINDEX, and
-- concurrently
CREATE INDEX pfp_k4_par ON pfp USING simhash_perm (fp) WITH (radius = 4, blocks = 6);
SET max_parallel_maintenance_workers = 0;
CREATE INDEX pfp_k4_ser ON pfp USING simhash_perm (fp) WITH (radius = 4, blocks = 6);
SET max_parallel_maintenance_workers = 2;
SELECT par_same('pfp_k4_par', 'pfp_k4_ser') AS same,
	   (SELECT count(*) FROM simhash_perm_info('pfp_k4_par')) AS tables;
DROP INDEX pfp_k4_par, pfp_k4_ser;
REINDEX INDEX pfp_par;
SELECT count(*) AS tables_checked FROM simhash_perm_check('pfp_par', true) WHERE table_no >= 0;
DROP INDEX pfp_par;
CREATE INDEX CONCURRENTLY pfp_conc ON pfp USING simhash_perm (fp);
SET max_parallel_maintenance_workers = 0;
CREATE INDEX pfp_ser ON pfp USING simhash_perm (fp);
SET max_parallel_maintenance_workers = 2;
SELECT par_same('pfp_conc', 'pfp_ser') AS same,
	   (SELECT indisvalid FROM pg_index WHERE indexrelid = 'pfp_conc'::regclass) AS valid;
SELECT count(*) AS tables_checked FROM simhash_perm_check('pfp_conc', true) WHERE table_no >= 0;
DROP INDEX pfp_ser;
-- rows deleted and updated since: the build indexes what is there
DELETE FROM pfp WHERE id % 7 = 0;
UPDATE pfp SET fp = par_fp(id + 50000) WHERE id % 11 = 0;
REINDEX INDEX pfp_conc;
SELECT count(*) AS tables_checked FROM simhash_perm_check('pfp_conc', true) WHERE table_no >= 0;
SELECT * FROM par_compare('pfp_conc', ARRAY(
	SELECT format('SELECT id::text FROM pfp WHERE hamming_near(fp, %L, %s)', par_fp(g), r)
	  FROM unnest('{12, 50011, 100150}'::int[]) g, unnest('{0, 4}'::int[]) r));
DROP TABLE pfp;

-- 2. bit(256) codes: 8,000 of them and 200 planted near-copies
SELECT setseed(0.61);
CREATE TABLE pw (id int, code bit(256));
INSERT INTO pw SELECT i, ('x' || wide_random(256))::bit(256) FROM generate_series(1, 8000) i;
INSERT INTO pw SELECT 100000 + id, code # wide_mask(256, id % 40)::bit(256)
  FROM pw WHERE id <= 200;
INSERT INTO pw VALUES (-1, NULL);
ANALYZE pw;
-- with its code store (permstore.c), as every bit(n) index is built: each
-- worker spools the whole codes and NULL rows of its share for the
-- leader, whose store then holds the same entries as a serial build's, in
-- another order
SELECT setseed(0.62);
CREATE TABLE pw_far AS SELECT i, ('x' || wide_random(256))::bit(256) AS code
  FROM generate_series(1, 3) i;
CREATE FUNCTION par_wide() RETURNS SETOF text LANGUAGE plpgsql AS $f$
DECLARE
	q record;
BEGIN
	CREATE INDEX pw_par ON pw USING simhash_perm (code);
	SET max_parallel_maintenance_workers = 0;
	CREATE INDEX pw_ser ON pw USING simhash_perm (code);
	SET max_parallel_maintenance_workers = 2;
	RETURN NEXT format('same: %s, substrings: %s, entries: %s, store chains checked: %s, tables checked: %s',
		par_same('pw_par', 'pw_ser'),
		(SELECT count(*) FROM simhash_perm_info('pw_par')),
		(SELECT min(entries) FROM simhash_perm_info('pw_par')),
		(SELECT count(*) FILTER (WHERE table_no < 0) FROM simhash_perm_check('pw_par', true)),
		(SELECT count(*) FROM simhash_perm_check('pw_par', true) WHERE table_no >= 0));
	DROP INDEX pw_ser;
	FOR q IN SELECT * FROM par_compare('pw_par', ARRAY(
		SELECT format('SELECT id::text FROM pw WHERE hamming_near(code, %L::bit(256), %s)', code, r)
		  FROM pw, unnest('{0, 8, 20, 39}'::int[]) r WHERE id IN (3, 150)
		UNION ALL
		SELECT format('SELECT string_agg(d::text, %L) FROM (SELECT code <-> %L::bit(256) AS d FROM pw ORDER BY code <-> %L::bit(256) LIMIT 10) s',
					  ',', code, code)
		  FROM (SELECT code FROM pw WHERE id IN (5, 199) UNION ALL SELECT code FROM pw_far) q
		UNION ALL
		SELECT format('SELECT id::text FROM (SELECT id FROM pw ORDER BY code <-> %L::bit(256) LIMIT 9000) s',
					  code)
		  FROM pw_far WHERE i = 1)) LOOP
		RETURN NEXT format('rows %s, through the index %s, differ %s', q.rows, q.through_index, q.differ);
	END LOOP;
	DROP INDEX pw_par;
END $f$;
SELECT par_wide();
DROP FUNCTION par_wide();
-- bit varying without a declared width: the layout waits for the first
-- row, so the build is serial; with the width given, parallel
CREATE TABLE pv (id int, code bit varying);
INSERT INTO pv SELECT id, code FROM pw WHERE code IS NOT NULL;
CREATE INDEX pv_first_row ON pv USING simhash_perm (code);
CREATE INDEX pv_width ON pv USING simhash_perm (code) WITH (width = 256);
SELECT par_same('pv_first_row', 'pv_width') AS same;
DROP TABLE pw, pw_far, pv;

-- 3. Leading columns: (tenant, fingerprint), skewed tenants
CREATE TABLE pt (id bigint, site int, fp simhash64);
INSERT INTO pt SELECT g, floor(30 * power((hashint8(g * 3) & 65535) / 65536.0, 2))::int, par_fp(g)
  FROM generate_series(1, 20000) g;
INSERT INTO pt SELECT 100000 + id, site, flip_bits(fp, id, 2) FROM pt WHERE id <= 300;
INSERT INTO pt VALUES (-1, NULL, par_fp(1)), (-2, 4, NULL);
ANALYZE pt;
CREATE INDEX pt_par ON pt USING simhash_perm (site, fp);
SET max_parallel_maintenance_workers = 0;
CREATE INDEX pt_ser ON pt USING simhash_perm (site, fp);
SET max_parallel_maintenance_workers = 2;
SELECT par_same('pt_par', 'pt_ser') AS same,
	   (SELECT count(*) FROM simhash_perm_info('pt_par')) AS tables;
SELECT count(*) AS tables_checked FROM simhash_perm_check('pt_par', true) WHERE table_no >= 0;
DROP INDEX pt_ser;
SELECT * FROM par_compare('pt_par', ARRAY(
	SELECT format('SELECT id::text FROM pt WHERE site = %s AND hamming_near(fp, %L, %s)', site, fp, r)
	  FROM pt, unnest('{0, 2, 6}'::int[]) r WHERE id IN (5, 120, 7000)));
SELECT * FROM par_compare('pt_par', ARRAY(
	SELECT format('SELECT string_agg(d::text, %L) FROM (SELECT fp <-> %L AS d FROM pt WHERE site = %s ORDER BY fp <-> %L LIMIT 10) s',
				  ',', fp, site, fp)
	  FROM pt WHERE id IN (5, 7000)));
DROP TABLE pt;

-- 4. An expression and a partial index
CREATE TABLE pe (id bigint, body text);
INSERT INTO pe SELECT g, 'row ' || g FROM generate_series(1, 20000) g;
ANALYZE pe;
CREATE INDEX pe_expr_par ON pe USING simhash_perm (par_fp(id));
CREATE INDEX pe_part_par ON pe USING simhash_perm (par_fp(id)) WHERE id % 3 <> 0;
SET max_parallel_maintenance_workers = 0;
CREATE INDEX pe_expr_ser ON pe USING simhash_perm (par_fp(id));
CREATE INDEX pe_part_ser ON pe USING simhash_perm (par_fp(id)) WHERE id % 3 <> 0;
SET max_parallel_maintenance_workers = 2;
SELECT par_same('pe_expr_par', 'pe_expr_ser') AS expr_same,
	   par_same('pe_part_par', 'pe_part_ser') AS part_same,
	   (SELECT min(entries) FROM simhash_perm_info('pe_part_par')) AS part_entries;
SELECT count(*) AS tables_checked FROM simhash_perm_check('pe_expr_par', true) WHERE table_no >= 0;
SELECT count(*) AS tables_checked FROM simhash_perm_check('pe_part_par', true) WHERE table_no >= 0;
DROP INDEX pe_expr_ser, pe_part_ser, pe_part_par;
SELECT * FROM par_compare('pe_expr_par', ARRAY(
	SELECT format('SELECT id::text FROM pe WHERE hamming_near(par_fp(id), %L, %s)', par_fp(g), r)
	  FROM unnest('{9, 18000}'::int[]) g, unnest('{0, 6}'::int[]) r));
-- an expression that is not parallel safe: a serial build
CREATE INDEX pe_unsafe ON pe USING simhash_perm (par_fp_unsafe(id));
SELECT par_same('pe_expr_par', 'pe_unsafe') AS same;
DROP TABLE pe;

-- 5. The workers run the owner's code as the owner, with search_path
--    locked, as the leader: an expression whose value tells who computed
--    it and which lower() its unqualified call reached, built by a
--    superuser whose search_path puts a lower() of its own first.  The
--    check recomputes every row as the owner: a row a worker computed
--    otherwise would be missing from the index.
CREATE ROLE regress_par_owner;
GRANT CREATE ON SCHEMA public TO regress_par_owner;
SET ROLE regress_par_owner;
CREATE FUNCTION par_owner_fp(body text) RETURNS simhash64 LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT CASE WHEN current_user = 'regress_par_owner' THEN public.simhash(lower(body))
					ELSE public.simhash('not the owner') END $$;
CREATE TABLE psec (id int, body text);
INSERT INTO psec SELECT g, 'Row Number ' || g FROM generate_series(1, 20000) g;
ANALYZE psec;
RESET ROLE;
CREATE SCHEMA par_evil;
CREATE FUNCTION par_evil.lower(text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT 'evil' $$;
SET search_path = par_evil, public;
CREATE INDEX psec_par ON psec USING simhash_perm (par_owner_fp(body));
RESET search_path;
SELECT count(*) AS tables_checked FROM simhash_perm_check('psec_par', true) WHERE table_no >= 0;
DROP TABLE psec;
DROP FUNCTION par_owner_fp(text);
DROP SCHEMA par_evil CASCADE;
REVOKE CREATE ON SCHEMA public FROM regress_par_owner;
DROP ROLE regress_par_owner;

-- 6. Serial where parallel workers cannot go: a temporary table, and no
--    workers allowed
CREATE TEMP TABLE ptemp AS SELECT g AS id, par_fp(g) AS fp FROM generate_series(1, 5000) g;
CREATE INDEX ptemp_idx ON ptemp USING simhash_perm (fp);
SELECT count(*) AS tables_checked FROM simhash_perm_check('ptemp_idx', true) WHERE table_no >= 0;
DROP TABLE ptemp;

DROP FUNCTION par_compare(text, text[]);
DROP FUNCTION par_rows(text, bool);
DROP FUNCTION par_same(regclass, regclass);
DROP FUNCTION par_fp(bigint);
DROP FUNCTION par_fp_unsafe(bigint);
RESET simhash.report_build_workers;
RESET min_parallel_table_scan_size;
RESET maintenance_work_mem;
RESET max_parallel_maintenance_workers;
