--
-- An index's expressions and predicate are its table owner's code.  The
-- paths that evaluate them outside CREATE INDEX and REINDEX (which already
-- do this) run them as the table's owner, in a security-restricted
-- operation, never as the caller: simhash_perm_check(index, true) and the
-- read of the rows without a fingerprint at the end of an ordered scan.
-- Otherwise a table owner's IMMUTABLE wrapper would run with the rights of
-- the superuser who checks the index, and could make its owner a superuser
-- (the class of bug of CVE-2022-1552 in amcheck and REINDEX).
--
CREATE ROLE regress_simhash_owner;
GRANT CREATE ON SCHEMA public TO regress_simhash_owner;
SET ROLE regress_simhash_owner;

-- who ran the owner's code, with what rights, and whether it was restricted
CREATE TABLE sec_log (who name, superuser bool, restricted bool);
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
-- a search_path of their own (from PostgreSQL 17 on, maintenance commands
-- and the owner's code run with search_path pg_catalog, pg_temp)
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
RESET ROLE;

-- the weekly check, run by a superuser
TRUNCATE sec_log;
SELECT count(*) AS tables FROM simhash_perm_check('sec_expr', true);
SELECT count(*) AS tables FROM simhash_perm_check('sec_part', true);
SELECT who, superuser, restricted, count(*) > 0 AS ran FROM sec_log
 GROUP BY 1, 2, 3 ORDER BY 1;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_simhash_owner';

ALTER ROLE regress_simhash_owner NOSUPERUSER;

-- an ordered scan of the partial index hands out the rows without a
-- fingerprint last, found by evaluating the predicate over the table; the
-- query's own sec_pred(id) is implied by the predicate and not run again
TRUNCATE sec_log;
SET enable_seqscan = off;
SET enable_sort = off;
EXPLAIN (COSTS OFF)
SELECT id FROM sec_docs WHERE sec_pred(id) ORDER BY fp <-> simhash('document number 8');
SELECT count(*) AS rows, count(*) FILTER (WHERE fp IS NULL) AS without_fp
  FROM (SELECT id, fp FROM sec_docs WHERE sec_pred(id)
         ORDER BY fp <-> simhash('document number 8')) s;
RESET enable_seqscan;
RESET enable_sort;
SELECT who, superuser, restricted, count(*) > 0 AS ran FROM sec_log
 GROUP BY 1, 2, 3 ORDER BY 1;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_simhash_owner';

-- the caller's user and settings are back afterwards
SELECT current_user = session_user AS caller_restored;

DROP TABLE sec_docs, sec_log;
DROP FUNCTION sec_fp(text), sec_pred(int), sec_spy();
REVOKE CREATE ON SCHEMA public FROM regress_simhash_owner;
DROP ROLE regress_simhash_owner;
