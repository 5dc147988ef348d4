--
-- An index's expressions and predicate are its table owner's code.  Two
-- rules keep that code from running with rights it should not have
-- (src/index/permowner.c, README "Security"):
--
--  - Maintenance (CREATE INDEX, REINDEX, VACUUM FULL, CLUSTER,
--    simhash_perm_check(index, true), ALTER INDEX ... SET on a constraint's
--    index) runs it as the table's owner, in a security-restricted
--    operation, with search_path = pg_catalog, pg_temp on every
--    PostgreSQL version, as amcheck and REINDEX do since CVE-2022-1552.
--  - A scan never runs it as the owner, and answers from the index's own
--    pages: the NULL codes at the end of ORDER BY code <-> q come from the
--    index's list of them, the far rows of a nearest-neighbour query on
--    bit(n) codes from its code store, and a (tenant, code) index is not
--    scanned without the tenant's equality.  The one scan that still reads
--    candidate rows (the rings of a bit(n) nearest-neighbour scan) runs
--    the expressions as the caller, as the sequential scan of the same
--    query does, and is not planned on a table with row-level security.
--
-- The attack: a role with SELECT only puts a schema of its own first in
-- its search_path, with its own lower(text), and queries a table indexed on
-- the owner's function that calls lower() unqualified.  Its lower() records
-- whom it ran as, tries to copy a table only the owner can read, and, run
-- as a superuser, tries to make its role a superuser.
--
CREATE ROLE regress_simhash_owner;
CREATE ROLE regress_simhash_reader;
GRANT CREATE ON SCHEMA public TO regress_simhash_owner;

-- 1. The owner's code in maintenance: as the owner, restricted
SET ROLE regress_simhash_owner;

-- who ran the owner's code, with what rights, and whether it was restricted
CREATE TABLE sec_log (who name, superuser bool, restricted bool);
GRANT INSERT ON sec_log TO PUBLIC;
CREATE FUNCTION sec_spy() RETURNS void LANGUAGE plpgsql VOLATILE
  SET search_path = public, pg_temp AS $$
DECLARE
	restricted bool := false;
	super bool := (SELECT rolsuper FROM pg_roles WHERE rolname = current_user);
BEGIN
	BEGIN
		CREATE TEMP TABLE sec_probe (x int);
		DROP TABLE sec_probe;
	EXCEPTION WHEN insufficient_privilege THEN
		-- "cannot create temporary table within security-restricted operation"
		restricted := true;
	END;
	INSERT INTO sec_log VALUES (current_user, super, restricted);
	IF super THEN
		ALTER ROLE regress_simhash_owner SUPERUSER;
	END IF;
END $$;
-- the wrappers an index may use: IMMUTABLE, as an index requires, and with
-- a search_path of their own
CREATE FUNCTION sec_fp(body text) RETURNS simhash64 LANGUAGE plpgsql IMMUTABLE
  SET search_path = public AS $$
BEGIN
	PERFORM sec_spy();
	RETURN simhash(body);
END $$;
CREATE FUNCTION sec_pred(id int) RETURNS bool LANGUAGE plpgsql IMMUTABLE
  SET search_path = public AS $$
BEGIN
	PERFORM sec_spy();
	RETURN id % 2 = 0;
END $$;

CREATE TABLE sec_docs (id int, body text, fp simhash64);
INSERT INTO sec_docs
SELECT g, 'document number ' || g, simhash('document number ' || g)
  FROM generate_series(1, 200) g;
INSERT INTO sec_docs SELECT 1000 + g, NULL, NULL FROM generate_series(1, 10) g;
CREATE INDEX sec_expr ON sec_docs USING simhash_perm (sec_fp(body));
CREATE INDEX sec_part ON sec_docs USING simhash_perm (fp) WHERE sec_pred(id);
GRANT SELECT ON sec_docs TO regress_simhash_reader;
RESET ROLE;

-- the weekly check, run by a superuser
TRUNCATE sec_log;
SELECT count(*) AS tables FROM simhash_perm_check('sec_expr', true) WHERE table_no >= 0;
SELECT count(*) AS tables FROM simhash_perm_check('sec_part', true) WHERE table_no >= 0;
SELECT who, superuser, restricted, count(*) > 0 AS ran FROM sec_log
 GROUP BY 1, 2, 3 ORDER BY 1;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_simhash_owner';

-- an ordered scan of the partial index hands out the rows without a
-- fingerprint last, from the index's list of them: the predicate is not
-- evaluated again (the query's own sec_pred(id) is implied by the
-- predicate and not run either), so nothing runs at all
TRUNCATE sec_log;
SET ROLE regress_simhash_reader;
SET enable_seqscan = off;
SET enable_sort = off;
EXPLAIN (COSTS OFF)
SELECT id FROM sec_docs WHERE sec_pred(id) ORDER BY fp <-> simhash('document number 8');
SELECT count(*) AS rows, count(*) FILTER (WHERE fp IS NULL) AS without_fp
  FROM (SELECT id, fp FROM sec_docs WHERE sec_pred(id)
         ORDER BY fp <-> simhash('document number 8')) s;
RESET enable_seqscan;
RESET enable_sort;
RESET ROLE;
SELECT who, superuser, restricted, count(*) > 0 AS ran FROM sec_log
 GROUP BY 1, 2, 3 ORDER BY 1;

-- the caller's user and settings are back afterwards
SELECT current_user = session_user AS caller_restored;

-- 2. The attack through every scan path that once read the table, against
--    a non-superuser owner and a superuser owner
CREATE TABLE sec_secret (x text);
INSERT INTO sec_secret VALUES ('only the owner reads this');
ALTER TABLE sec_secret OWNER TO regress_simhash_owner;

CREATE SCHEMA regress_attack AUTHORIZATION regress_simhash_reader;
GRANT USAGE ON SCHEMA regress_attack TO PUBLIC;
SET ROLE regress_simhash_reader;
CREATE TABLE regress_attack.seen (who name, superuser bool);
CREATE TABLE regress_attack.loot (x text);
GRANT INSERT ON regress_attack.seen, regress_attack.loot TO PUBLIC;
CREATE FUNCTION regress_attack.lower(t text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	super bool := (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user);
BEGIN
	INSERT INTO regress_attack.seen VALUES (current_user, super);
	BEGIN
		INSERT INTO regress_attack.loot SELECT x FROM public.sec_secret;
	EXCEPTION WHEN insufficient_privilege THEN
		NULL;
	END;
	IF super THEN
		BEGIN
			ALTER ROLE regress_simhash_reader SUPERUSER;
		EXCEPTION WHEN OTHERS THEN
			NULL;
		END;
	END IF;
	RETURN pg_catalog.lower(t);
END $$;
RESET ROLE;

-- the owner's index functions: lower() unqualified, as much code is
-- written; public.simhash qualified, as a build runs with search_path
-- pg_catalog, pg_temp
CREATE FUNCTION sec_norm(body text) RETURNS simhash64 LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	RETURN public.simhash(lower(body));
END $$;
CREATE FUNCTION sec_code(body text) RETURNS bit varying LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	RETURN public.simhash128(lower(body));
END $$;

-- sec_tables(suffix, owner): three tables owned by owner, each with one
-- index on the owner's functions: (code) on 64 bits, (code) on 128 bits,
-- (tenant, code); NULL bodies in each
CREATE FUNCTION sec_tables(suffix text, owner name) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('CREATE TABLE sec_n64%s (id int, body text)', suffix);
	EXECUTE format('CREATE TABLE sec_wide%s (id int, body text)', suffix);
	EXECUTE format('CREATE TABLE sec_tenant%s (id int, site int, body text)', suffix);
	EXECUTE format($q$INSERT INTO sec_n64%s SELECT g, CASE WHEN g %% 10 <> 0 THEN 'Page ' || g || ' of the site' END
					 FROM generate_series(1, 200) g$q$, suffix);
	EXECUTE format('INSERT INTO sec_wide%1$s SELECT * FROM sec_n64%1$s', suffix);
	EXECUTE format('INSERT INTO sec_tenant%1$s SELECT id, id %% 4, body FROM sec_n64%1$s', suffix);
	EXECUTE format('CREATE INDEX ON sec_n64%s USING simhash_perm (sec_norm(body))', suffix);
	EXECUTE format('CREATE INDEX ON sec_wide%s USING simhash_perm (sec_code(body))', suffix);
	EXECUTE format('CREATE INDEX ON sec_tenant%s USING simhash_perm (site, sec_norm(body))', suffix);
	EXECUTE format('ALTER TABLE sec_n64%s OWNER TO %I', suffix, owner);
	EXECUTE format('ALTER TABLE sec_wide%s OWNER TO %I', suffix, owner);
	EXECUTE format('ALTER TABLE sec_tenant%s OWNER TO %I', suffix, owner);
	EXECUTE format('GRANT SELECT ON sec_n64%1$s, sec_wide%1$s, sec_tenant%1$s TO regress_simhash_reader', suffix);
	EXECUTE format('ANALYZE sec_n64%1$s; ANALYZE sec_wide%1$s; ANALYZE sec_tenant%1$s', suffix);
END $$;
SELECT sec_tables('', 'regress_simhash_owner');
SELECT sec_tables('_su', current_user);
SELECT count(*) AS seen_at_build FROM regress_attack.seen;

-- the reader's session: its schema first, sequential scans off
SET ROLE regress_simhash_reader;
SET search_path = regress_attack, pg_catalog, public;
SET enable_seqscan = off;
SET enable_sort = off;
-- the NULL rows at the end of an ordered scan (permtableknn.c)
EXPLAIN (COSTS OFF)
SELECT id FROM sec_n64 ORDER BY sec_norm(body) <-> simhash('page 1 of the site');
SELECT count(*) AS rows FROM (SELECT id FROM sec_n64 ORDER BY sec_norm(body) <-> simhash('page 1 of the site')) s;
SELECT count(*) AS rows FROM (SELECT id FROM sec_n64_su ORDER BY sec_norm(body) <-> simhash('page 1 of the site')) s;
-- the sweep of a bit(n) nearest-neighbour scan whose neighbours lie far
-- (permwideknn.c)
EXPLAIN (COSTS OFF)
SELECT id FROM sec_wide ORDER BY sec_code(body) <-> simhash128('page 1 of the site') LIMIT 150;
SELECT count(*) AS rows FROM (SELECT id FROM sec_wide ORDER BY sec_code(body) <-> simhash128('page 1 of the site') LIMIT 150) s;
SELECT count(*) AS rows FROM (SELECT id FROM sec_wide_su ORDER BY sec_code(body) <-> simhash128('page 1 of the site') LIMIT 150) s;
-- a (tenant, code) index is not scanned without the tenant's equality
-- (the index could not answer it from its pages: scanpaths.c)
SELECT * FROM plan($$SELECT id FROM sec_tenant WHERE hamming_near(sec_norm(body), simhash('page 1 of the site'), 3)$$);
SELECT count(*) AS rows FROM sec_tenant WHERE hamming_near(sec_norm(body), simhash('page 1 of the site'), 3);
SELECT count(*) AS rows FROM sec_tenant_su WHERE hamming_near(sec_norm(body), simhash('page 1 of the site'), 3);
-- its nearest neighbours without the tenant's equality, and with it
SELECT count(*) AS rows FROM (SELECT id FROM sec_tenant ORDER BY sec_norm(body) <-> simhash('page 1 of the site')) s;
SELECT count(*) AS rows FROM (SELECT id FROM sec_tenant_su WHERE site = 1 ORDER BY sec_norm(body) <-> simhash('page 1 of the site')) s;
-- the tenant's equality alone is not planned on the index (it would read
-- the table for the NULL codes, running the owner's code for a query that
-- names none of it)
SELECT * FROM plan('SELECT id FROM sec_tenant_su WHERE site = 1');
SELECT count(*) AS rows FROM sec_tenant_su WHERE site = 1;
-- bitmap scans
SET enable_indexscan = off;
SELECT count(*) AS rows FROM sec_tenant_su WHERE hamming_near(sec_norm(body), simhash('page 1 of the site'), 3);
SELECT count(*) AS rows FROM sec_n64_su WHERE hamming_near(sec_norm(body), simhash('page 1 of the site'), 3);
RESET enable_indexscan;
RESET enable_seqscan;
RESET enable_sort;
RESET search_path;
RESET ROLE;

-- the reader's lower() ran as the reader only: nothing copied, no role
-- changed
SELECT who, superuser, count(*) > 0 AS ran FROM regress_attack.seen GROUP BY 1, 2 ORDER BY 1;
SELECT count(*) AS copied FROM regress_attack.loot;
SELECT rolname, rolsuper FROM pg_roles
 WHERE rolname IN ('regress_simhash_owner', 'regress_simhash_reader') ORDER BY 1;

-- 3. A superuser's maintenance under a hostile search_path: the owner's
--    code never reaches the reader's lower()
TRUNCATE regress_attack.seen;
CREATE TABLE sec_excl (id int, body text,
	EXCLUDE USING simhash_perm (sec_norm(body) WITH ~=) WITH (radius = 2));
INSERT INTO sec_excl SELECT id, body FROM sec_n64 WHERE id <= 50;
ALTER TABLE sec_excl OWNER TO regress_simhash_owner;
CREATE INDEX sec_n64_id ON sec_n64 (id);
SET search_path = regress_attack, pg_catalog, public;
SELECT count(*) AS tables FROM simhash_perm_check('public.sec_n64_sec_norm_idx', true) WHERE table_no >= 0;
SELECT count(*) AS tables FROM simhash_perm_check('public.sec_wide_su_sec_code_idx', true) WHERE table_no >= 0;
SELECT count(*) AS tables FROM simhash_perm_check('public.sec_tenant_site_sec_norm_idx', true) WHERE table_no >= 0;
REINDEX INDEX public.sec_n64_sec_norm_idx;
REINDEX TABLE public.sec_tenant_su;
VACUUM FULL public.sec_wide;
CLUSTER public.sec_n64 USING sec_n64_id;
CREATE INDEX sec_again ON public.sec_n64_su USING simhash_perm (public.sec_norm(body));
ALTER INDEX public.sec_excl_sec_norm_excl SET (radius = 3);
VACUUM FULL public.sec_excl;
RESET search_path;
SELECT count(*) AS reader_code_runs FROM regress_attack.seen;

-- 4. Row-level security: the index answers from its own pages, so the
--    caller's code never sees a row the policy hides.  Each table holds 80
--    hidden rows (site 2, ten of them without a body) beside the visible
--    ones (site 1); the reader's lower() records every text it receives.
CREATE SCHEMA regress_rls AUTHORIZATION regress_simhash_reader;
GRANT USAGE ON SCHEMA regress_rls TO PUBLIC;
SET ROLE regress_simhash_reader;
CREATE TABLE regress_rls.got (t text);
GRANT INSERT ON regress_rls.got TO PUBLIC;
CREATE FUNCTION regress_rls.lower(t text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	INSERT INTO regress_rls.got VALUES (t);
	RETURN pg_catalog.lower(t);
END $$;
RESET ROLE;
CREATE FUNCTION sec_rls_table(name text, index_def text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('CREATE TABLE %I (id int, site int, body text)', name);
	EXECUTE format($q$INSERT INTO %I SELECT g, 1, CASE WHEN g %% 8 <> 0 THEN 'Page ' || g || ' of the site' END
					 FROM generate_series(1, 120) g$q$, name);
	EXECUTE format($q$INSERT INTO %I SELECT 1000 + g, 2, CASE WHEN g %% 8 <> 0 THEN 'Hidden page ' || g || ' of the site' END
					 FROM generate_series(1, 80) g$q$, name);
	EXECUTE format('CREATE INDEX ON %I USING simhash_perm %s', name, index_def);
	EXECUTE format('ALTER TABLE %I OWNER TO regress_simhash_owner', name);
	EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', name);
	EXECUTE format('CREATE POLICY visible ON %I FOR SELECT USING (site = 1)', name);
	EXECUTE format('GRANT SELECT ON %I TO regress_simhash_reader', name);
	EXECUTE format('ANALYZE %I', name);
END $$;
SELECT sec_rls_table('sec_rls64', '(sec_norm(body))');
SELECT sec_rls_table('sec_rlst', '(site, sec_norm(body))');
SELECT sec_rls_table('sec_rlsw', '(sec_code(body))');
SELECT sec_rls_table('sec_rlstw', '(site, sec_code(body))');
-- same_answer(query): the query's rows (id and distance, in the order the
-- plan gives them, ties by id) through the index, then by a sequential
-- scan and sort, and whether they agree; the plan's scan
CREATE FUNCTION sec_same_answer(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	via_index text;
	via_seq text;
	plan_line text;
BEGIN
	FOR plan_line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		EXIT WHEN plan_line ~ 'Scan';
	END LOOP;
	plan_line := btrim(plan_line, ' ->');
	EXECUTE format('SELECT string_agg(id || '':'' || coalesce(d::text, ''-''), '','' ORDER BY d NULLS LAST, id) FROM (%s) s', query)
	  INTO via_index;
	SET LOCAL enable_indexscan = off;
	SET LOCAL enable_bitmapscan = off;
	SET LOCAL enable_seqscan = on;
	SET LOCAL enable_sort = on;
	EXECUTE format('SELECT string_agg(id || '':'' || coalesce(d::text, ''-''), '','' ORDER BY d NULLS LAST, id) FROM (%s) s', query)
	  INTO via_seq;
	RETURN format('%s: %s rows, %s', plan_line,
				  array_length(string_to_array(via_index, ','), 1),
				  CASE WHEN via_index IS NOT DISTINCT FROM via_seq THEN 'same as the sequential scan' ELSE 'DIFFERENT' END);
END $$;
SET ROLE regress_simhash_reader;
SET search_path = regress_rls, pg_catalog, public;
SET enable_seqscan = off;
SET enable_sort = off;
-- an ordered scan to its end: the rows without a code come from the
-- index's list of them, not from reading the table
SELECT sec_same_answer($$SELECT id, sec_norm(body) <-> simhash('page 3 of the site') AS d FROM sec_rls64 ORDER BY sec_norm(body) <-> simhash('page 3 of the site')$$);
-- a tenant's ordered scan: its rows from its key range, the rows without
-- a code from the list (every tenant's, each rechecked by the executor on
-- site = 1, which is leakproof)
SELECT sec_same_answer($$SELECT id, sec_norm(body) <-> simhash('page 3 of the site') AS d FROM sec_rlst WHERE site = 1 ORDER BY sec_norm(body) <-> simhash('page 3 of the site')$$);
-- the nearest-neighbour scan of bit(n) codes reads each candidate's code
-- from the code store, not from its row: planned on the index
SELECT sec_same_answer($$SELECT id, sec_code(body) <-> simhash128('page 3 of the site') AS d FROM sec_rlsw ORDER BY sec_code(body) <-> simhash128('page 3 of the site') LIMIT 150$$);
-- and within a tenant: its codes too come from the code store
SELECT sec_same_answer($$SELECT id, sec_code(body) <-> simhash128('page 3 of the site') AS d FROM sec_rlstw WHERE site = 1 ORDER BY sec_code(body) <-> simhash128('page 3 of the site') LIMIT 150$$);
RESET enable_seqscan;
RESET enable_sort;
RESET search_path;
RESET ROLE;
-- a tenant's nearest 64-bit fingerprints under a condition around the
-- same point (hamming_near(fp, q, k) ORDER BY fp <-> q, or fp <-> q <= k):
-- the scan folds it into its bound and reads no row, its entries holding
-- whole fingerprints (permwideknn.c); the owner runs it, no policy applying
-- to the owner, so the condition is an index condition.  What lower()
-- receives: the ten rows the executor hands out, no candidate more.
DELETE FROM regress_rls.got;
SET ROLE regress_simhash_owner;
SET search_path = regress_rls, pg_catalog, public;
SET enable_seqscan = off;
SELECT count(*) AS rows FROM (SELECT id, sec_norm(body) FROM sec_rlst WHERE site = 1 AND hamming_near(sec_norm(body), simhash('page 3 of the site'), 40) ORDER BY sec_norm(body) <-> simhash('page 3 of the site') LIMIT 10) s;
SELECT count(*) AS rows FROM (SELECT id, sec_norm(body) FROM sec_rlst WHERE site = 1 AND sec_norm(body) <-> simhash('page 3 of the site') <= 40 ORDER BY sec_norm(body) <-> simhash('page 3 of the site') LIMIT 10) s;
RESET enable_seqscan;
RESET search_path;
RESET ROLE;
SELECT count(*) AS texts_received FROM regress_rls.got;
SELECT * FROM plan($$SELECT id FROM sec_rlst WHERE site = 1 AND hamming_near(sec_norm(body), simhash('page 3 of the site'), 40) ORDER BY sec_norm(body) <-> simhash('page 3 of the site') LIMIT 10$$);
-- a role with INSERT only, into a table whose exclusion constraint is on
-- the owner's function: the check compares stored 64-bit keys and reads no
-- stored row (permtablescan.c, PermSearchConstraint); the 20 new rows pass,
-- the near-copy of a stored row is refused
CREATE TABLE sec_rlsx (id int, body text,
	EXCLUDE USING simhash_perm (sec_norm(body) WITH ~=) WITH (radius = 3));
INSERT INTO sec_rlsx SELECT g, 'Hidden page ' || g || ' of the site, kept' FROM generate_series(1, 80) g;
ALTER TABLE sec_rlsx OWNER TO regress_simhash_owner;
GRANT INSERT ON sec_rlsx TO regress_simhash_reader;
SET ROLE regress_simhash_reader;
SET search_path = regress_rls, pg_catalog, public;
INSERT INTO sec_rlsx SELECT 1000 + g, 'Page ' || (1000 + g) || ' of the site' FROM generate_series(1, 20) g;
INSERT INTO sec_rlsx VALUES (2000, 'HIDDEN PAGE 7 OF THE SITE, KEPT');
RESET search_path;
RESET ROLE;
SELECT count(*) AS rows FROM sec_rlsx;
-- the same on bit(128) codes at radius 16: the check's candidates (their
-- keys near the new row's) are decided on the codes of the code store
CREATE TABLE sec_rlsxw (id int, body text,
	EXCLUDE USING simhash_perm (sec_code(body) WITH ~=) WITH (width = 128, radius = 16));
INSERT INTO sec_rlsxw SELECT g, 'Hidden ' || md5(g::text) || ' ' || md5((-g)::text) FROM generate_series(1, 80) g;
ALTER TABLE sec_rlsxw OWNER TO regress_simhash_owner;
GRANT INSERT ON sec_rlsxw TO regress_simhash_reader;
SET ROLE regress_simhash_reader;
SET search_path = regress_rls, pg_catalog, public;
INSERT INTO sec_rlsxw SELECT 1000 + g, 'Mine ' || md5((1000 + g)::text) || ' ' || md5((-1000 - g)::text)
  FROM generate_series(1, 20) g;
INSERT INTO sec_rlsxw VALUES (2000, 'HIDDEN ' || upper(md5('7')) || ' ' || md5('-7'));
RESET search_path;
RESET ROLE;
SELECT count(*) AS rows FROM sec_rlsxw;
-- and within tenants: the candidates of the new rows' tenant are decided
-- on the store's codes; only one within the radius is read, to compare
-- the tenants (the refused near-copy, whose statement goes)
CREATE TABLE sec_rlsxt (id int, site int, body text,
	EXCLUDE USING simhash_perm (site WITH =, sec_code(body) WITH ~=) WITH (width = 128, radius = 16));
INSERT INTO sec_rlsxt SELECT g, g % 2, 'Hidden ' || md5(g::text) || ' ' || md5((-g)::text) FROM generate_series(1, 80) g;
ALTER TABLE sec_rlsxt OWNER TO regress_simhash_owner;
GRANT INSERT ON sec_rlsxt TO regress_simhash_reader;
SET ROLE regress_simhash_reader;
SET search_path = regress_rls, pg_catalog, public;
INSERT INTO sec_rlsxt SELECT 1000 + g, g % 2, 'Mine ' || md5((1000 + g)::text) || ' ' || md5((-1000 - g)::text)
  FROM generate_series(1, 20) g;
INSERT INTO sec_rlsxt VALUES (2000, 1, 'HIDDEN ' || upper(md5('7')) || ' ' || md5('-7'));
RESET search_path;
RESET ROLE;
SELECT count(*) AS rows FROM sec_rlsxt;
-- the reader's lower() saw visible bodies only (the sequential scans'),
-- and the bodies it inserted itself, never a hidden or stored one (what
-- the refused statement recorded went with it)
SELECT count(*) FILTER (WHERE t LIKE 'Hidden%') AS hidden_bodies_received,
	   count(*) FILTER (WHERE t LIKE 'Page%') > 0 AS visible_bodies_received
  FROM regress_rls.got;
DROP TABLE sec_rls64, sec_rlst, sec_rlsw, sec_rlstw, sec_rlsx, sec_rlsxw, sec_rlsxt;
DROP FUNCTION sec_rls_table(text, text), sec_same_answer(text);
DROP SCHEMA regress_rls CASCADE;

-- 5. What the locked search_path refuses, and what the error says: the
--    owner's function calls simhash() unqualified, which the extension's
--    schema (public here) on the inserting role's search_path finds, and
--    pg_catalog, pg_temp does not.  Its index, created on an empty table,
--    takes inserts, then cannot be rebuilt (PostgreSQL 15 and 16 rebuild a
--    btree on it with the caller's search_path; 17 refuses that too).  The
--    error carries a hint saying why (permowner.c).
\set VERBOSITY default
CREATE FUNCTION sec_unqualified(body text) RETURNS simhash64 LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	RETURN simhash(body);
END $$;
CREATE TABLE sec_hint (id int, body text);
CREATE INDEX sec_hint_fp ON sec_hint USING simhash_perm (sec_unqualified(body));
INSERT INTO sec_hint SELECT g, 'document number ' || g FROM generate_series(1, 20) g;
REINDEX INDEX sec_hint_fp;
VACUUM FULL sec_hint;
-- on a table with rows, CREATE INDEX fails the same way
CREATE INDEX sec_hint_again ON sec_hint USING simhash_perm (sec_unqualified(body));
-- the caller's user and search_path are back, after the abort of a
-- transaction as after a subtransaction's
SELECT current_user = session_user AS caller_restored,
	   current_setting('search_path') AS search_path;
DO $$
BEGIN
	REINDEX INDEX sec_hint_fp;
EXCEPTION WHEN undefined_function THEN
	RAISE NOTICE 'caught; caller restored: %, search_path: %',
		current_user = session_user, current_setting('search_path');
END $$;
-- the fix: the function's own search_path (or public.simhash() in it)
ALTER FUNCTION sec_unqualified(text) SET search_path = public;
REINDEX INDEX sec_hint_fp;
VACUUM FULL sec_hint;
SELECT count(*) AS tables FROM simhash_perm_check('sec_hint_fp', true) WHERE table_no >= 0;
SELECT count(*) AS near FROM sec_hint
 WHERE hamming_near(sec_unqualified(body), simhash('document number 7'), 0);

DROP TABLE sec_docs, sec_log, sec_secret, sec_n64, sec_wide, sec_tenant,
	sec_n64_su, sec_wide_su, sec_tenant_su, sec_excl, sec_hint;
DROP FUNCTION sec_fp(text), sec_pred(int), sec_spy(), sec_norm(text), sec_code(text),
	sec_tables(text, name), sec_unqualified(text);
DROP SCHEMA regress_attack CASCADE;
REVOKE CREATE ON SCHEMA public FROM regress_simhash_owner;
DROP ROLE regress_simhash_owner;
DROP ROLE regress_simhash_reader;
