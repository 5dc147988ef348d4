--
-- The parts of simhash_pairs() and simhash_clusters() on Citus's workers
-- (src/pairs/pairscitus.c), run here without Citus: every part of a
-- search, each reading the rows simhash_pairs_part_has gives it (as rows,
-- or packed by simhash_rows_pack), together find exactly the pairs of one
-- process, each once, for several layouts and numbers of parts, on the
-- shapes of setup (skewed prefixes, copies of one fingerprint, NULLs).
-- The coordinator's side, which needs a Citus cluster, is tested by
-- test/t/011_citus.pl.
--
SET client_min_messages = warning;

CREATE TABLE pd AS
  SELECT id::bigint AS id, fp FROM shapes WHERE shape <> 'identical'
  UNION ALL SELECT 900000 + g, '00000000000000ff'::simhash64 FROM generate_series(1, 30) g;
CREATE TABLE pd_text AS SELECT 'doc ' || id AS id, fp FROM pd;

-- the interleaved layout (bit i in block (63 - i) mod B), as the
-- coordinator writes a layout: "k/B/" and each bit's block, bit 63 first
CREATE FUNCTION layout(k int, blocks int) RETURNS text LANGUAGE sql AS $$
  SELECT k || '/' || blocks || '/' || string_agg(to_hex(j % blocks), '' ORDER BY j)
    FROM generate_series(0, 63) j $$;

-- every part of a search, as each node runs its own
CREATE FUNCTION all_parts(source text, key text, k int, blocks int, nparts int,
                          clusters bool, packed bool)
RETURNS TABLE (a text, b text, distance int) LANGUAGE plpgsql AS $$
DECLARE
  l text := layout(k, blocks);
  q text;
BEGIN
  FOR p IN 0 .. nparts - 1 LOOP
    IF packed THEN
      q := format('SELECT simhash_rows_pack(%I, fp::bigint) FROM %I WHERE simhash_pairs_part_has(fp::bigint, %L, %s, %s)',
                  key, source, l, p, nparts);
    ELSE
      q := format('SELECT %I, fp FROM %I WHERE simhash_pairs_part_has(fp::bigint, %L, %s, %s)',
                  key, source, l, p, nparts);
    END IF;
    IF source = 'pd' THEN
      RETURN QUERY SELECT r.a::text, r.b::text, r.distance
        FROM simhash_pairs_part(q, k, l, p, nparts, clusters) AS r(a bigint, b bigint, distance int);
    ELSE
      RETURN QUERY SELECT r.a, r.b, r.distance
        FROM simhash_pairs_part(q, k, l, p, nparts, clusters) AS r(a text, b text, distance int);
    END IF;
  END LOOP;
END $$;

-- the pairs of the parts against one process's, for each case: none
-- missing, none extra (EXCEPT ALL: a pair found twice would be extra)
CREATE FUNCTION check_parts(k int, blocks int, nparts int, packed bool, source text DEFAULT 'pd')
RETURNS TABLE (k_ int, blocks_ int, parts int, packed_ bool, keys text, pairs bigint,
               missing bigint, extra bigint) LANGUAGE plpgsql AS $$
BEGIN
  CREATE TEMP TABLE truth AS
    SELECT p.a::text, p.b::text, p.distance FROM simhash_pairs('pd', 'id', 'fp', k) AS p(a bigint, b bigint, distance int);
  IF source = 'pd_text' THEN
    UPDATE truth SET a = 'doc ' || truth.a, b = 'doc ' || truth.b;
    UPDATE truth SET a = truth.b, b = truth.a WHERE truth.a > truth.b;
  END IF;
  CREATE TEMP TABLE got AS SELECT * FROM all_parts(source, 'id', k, blocks, nparts, false, packed);
  RETURN QUERY SELECT k, blocks, nparts, packed, CASE source WHEN 'pd' THEN 'bigint' ELSE 'text' END,
    (SELECT count(*) FROM truth),
    (SELECT count(*) FROM (TABLE truth EXCEPT ALL TABLE got) x),
    (SELECT count(*) FROM (TABLE got EXCEPT ALL TABLE truth) x);
  DROP TABLE truth, got;
END $$;

SELECT * FROM check_parts(3, 4, 1, false);
SELECT * FROM check_parts(3, 4, 2, true);
SELECT * FROM check_parts(3, 4, 3, false);
SELECT * FROM check_parts(3, 5, 2, true);
SELECT * FROM check_parts(3, 5, 4, true);
SELECT * FROM check_parts(6, 7, 3, true);
SELECT * FROM check_parts(0, 1, 2, true);
SELECT * FROM check_parts(3, 5, 3, true, 'pd_text');
SELECT * FROM check_parts(3, 4, 2, false, 'pd_text');

-- a row goes to at most k + 1 parts (one per first block of a table):
-- 10 tables at k = 3, B = 5, and no row goes to more than 4 of 8 parts
SELECT max(n) AS most_parts_of_a_row, min(n) AS fewest
  FROM (SELECT id, count(*) AS n FROM pd, generate_series(0, 7) p
         WHERE simhash_pairs_part_has(fp::bigint, layout(3, 5), p, 8) GROUP BY id) s;
SELECT count(*) AS rows_of_no_part
  FROM pd WHERE fp IS NOT NULL
   AND NOT EXISTS (SELECT FROM generate_series(0, 7) p
                    WHERE simhash_pairs_part_has(fp::bigint, layout(3, 5), p, 8));

-- clusters: the parts' links join exactly the rows of one process's
-- clusters, each link within k and inside one of its clusters
CREATE TEMP TABLE links AS SELECT * FROM all_parts('pd', 'id', 3, 4, 3, true, true);
CREATE TEMP TABLE truth_clusters AS
  SELECT c.id::text, c.cluster::text FROM simhash_clusters('pd', 'id', 'fp', 3) AS c(id bigint, cluster bigint);
SELECT (SELECT count(*) FROM links) > 0 AS some_links,
       (SELECT count(*) FROM links l JOIN pd x ON x.id::text = l.a JOIN pd y ON y.id::text = l.b
         WHERE hamming_distance(x.fp, y.fp) > 3) AS beyond_k,
       (SELECT count(*) FROM links l JOIN truth_clusters x ON x.id = l.a JOIN truth_clusters y ON y.id = l.b
         WHERE x.cluster <> y.cluster) AS across_clusters;
WITH RECURSIVE e AS (SELECT a AS x, b AS y FROM links UNION SELECT b, a FROM links),
r (node, label) AS (SELECT x, x FROM e UNION SELECT e.y, r.label FROM r JOIN e ON e.x = r.node),
got AS (SELECT node AS id, min(label) AS cluster FROM r GROUP BY node)
SELECT (SELECT count(*) FROM truth_clusters) AS rows_in_clusters,
       (SELECT count(*) FROM (SELECT id FROM got EXCEPT SELECT id FROM truth_clusters) x) AS extra,
       (SELECT count(*) FROM (SELECT id FROM truth_clusters EXCEPT SELECT id FROM got) x) AS missing,
       (SELECT count(DISTINCT cluster) FROM got) = (SELECT count(DISTINCT cluster) FROM truth_clusters) AS same_number_of_clusters;

-- a NULL key of a row with a near-duplicate is an error, packed or not
INSERT INTO pd VALUES (NULL, '00000000000000ff');
SELECT count(*) FROM all_parts('pd', 'id', 3, 4, 2, false, true);
SELECT count(*) FROM all_parts('pd', 'id', 3, 4, 2, false, false);
DELETE FROM pd WHERE id IS NULL;

-- bad arguments
SELECT * FROM simhash_pairs_part('SELECT id, fp FROM pd', 3, '3/4/xyz', 0, 2, false) AS r(a bigint, b bigint, distance int);
SELECT * FROM simhash_pairs_part('SELECT id, fp FROM pd', 3, '3/5/' || repeat('0123', 16), 0, 2, false) AS r(a bigint, b bigint, distance int);
SELECT * FROM simhash_pairs_part('SELECT id, fp FROM pd', 2, layout(3, 4), 0, 2, false) AS r(a bigint, b bigint, distance int);
SELECT * FROM simhash_pairs_part('SELECT id, fp FROM pd', 3, layout(3, 4), 2, 2, false) AS r(a bigint, b bigint, distance int);
SELECT simhash_pairs_part_has(1, layout(3, 4), 0, 0);
SELECT * FROM simhash_pairs_part('SELECT id, fp::bit(64) FROM pd', 3, layout(3, 4), 0, 1, false) AS r(a bigint, b bigint, distance int);
SELECT * FROM simhash_pairs_part('SELECT substring(simhash_rows_pack(id, fp::bigint) from 1 for 30) FROM pd',
                                 3, layout(3, 4), 0, 1, false) AS r(a bigint, b bigint, distance int);
SELECT * FROM simhash_pairs_part('SELECT simhash_rows_pack(id, fp::bigint) FROM pd',
                                 3, layout(3, 4), 0, 1, false) AS r(a text, b text, distance int);
-- what another node sent: its failure, or nothing
SELECT simhash_rows_received('worker-2', 5432, false, 'ERROR:  permission denied for table docs');
SELECT simhash_rows_received('worker-2', 5432, true, '') IS NULL AS nothing_sent;
SHOW simhash.pairs_on_workers;

DROP TABLE pd, pd_text, links, truth_clusters;
DROP FUNCTION check_parts, all_parts, layout;
