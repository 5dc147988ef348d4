#!/usr/bin/env python3
"""Find and print groups of near-duplicate documents in table docs.

Expects docs(id, package, body) and psql on PATH pointing at the server.
Identical texts are trivial duplicates: they are collapsed first (and
counted).  Every distinct text is fingerprinted, all pairs within Hamming
distance k are found with simhash_pairs() (and, for comparison, with a
self-join on hamming_near through a simhash_perm index), the clusters with
simhash_clusters(), each pair's exact Jaccard similarity of word 3-shingles
is computed with simhash_jaccard() (J below), and the largest groups are
printed: each group is a text together with every text within distance k
of it, chosen greedily, largest first, so that no text is shown twice.
Last, the crawler's ingest: the texts go in batches into a table with a
near-duplicate exclusion constraint, which keeps one of each group.
"""
import argparse
import csv
import io
import subprocess
import time
from collections import defaultdict


def psql(sql):
    out = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "--csv", "-c", sql],
                         text=True, capture_output=True, check=True).stdout
    rows = list(csv.reader(io.StringIO(out)))
    return rows[1:] if rows else []


def timed(label, sql):
    t0 = time.time()
    rows = psql(sql)
    print(f"   {label}: {time.time() - t0:.2f} s")
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--groups", type=int, default=8)
    args = ap.parse_args()
    k = args.k

    n, mb = psql("SELECT count(*), round(sum(octet_length(body)) / 1e6, 1) FROM docs")[0]
    print(f"   {n} descriptions, {mb} MB of text")
    psql("CREATE TABLE texts AS SELECT min(id) AS id, body, count(*) AS copies, "
         "(array_agg(package ORDER BY package))[1] AS package FROM docs GROUP BY body")
    nt = psql("SELECT count(*) FROM texts")[0][0]
    print(f"   {nt} distinct texts ({int(n) - int(nt)} exact copies set aside)")

    print("== fingerprinting")
    timed("UPDATE texts SET fp = simhash(body)",
          "ALTER TABLE texts ADD COLUMN fp simhash64; UPDATE texts SET fp = simhash(body)")

    # simhash_pairs() sorts the table once per permuted table and compares
    # neighbours: every pair within k, exactly, in one statement.
    print(f"== finding all pairs within Hamming distance {k}")
    timed("pairs: simhash_pairs()",
          f"CREATE TABLE pairs AS SELECT a, b, distance AS d "
          f"FROM simhash_pairs('texts', 'id', 'fp', {k}) AS p(a int, b int, distance int)")
    # The simhash_perm index answers "every fingerprint within k of this
    # one"; joined with the table itself it finds the same pairs, one probe
    # per row.  It is what checks a new batch against the table.
    timed("CREATE INDEX ... USING simhash_perm (fp)",
          f"CREATE INDEX texts_fp ON texts USING simhash_perm (fp) WITH (radius = {min(k, 8)})")
    psql("ANALYZE texts")
    same = psql(f"SELECT count(*) = (SELECT count(*) FROM pairs) FROM texts a JOIN texts b "
                f"ON hamming_near(b.fp, a.fp, {k}) AND a.id < b.id")[0][0]
    timed("for comparison: the self-join on hamming_near through the index",
          f"SELECT count(*) FROM texts a JOIN texts b ON hamming_near(b.fp, a.fp, {k}) AND a.id < b.id")
    print(f"   same number of pairs both ways: {'yes' if same == 't' else 'NO'}")
    timed("clusters: simhash_clusters()",
          f"CREATE TABLE clusters AS SELECT * "
          f"FROM simhash_clusters('texts', 'id', 'fp', {k}) AS c(id int, cluster int)")
    cl = psql("SELECT count(*), count(DISTINCT cluster), count(*) FILTER (WHERE id <> cluster) FROM clusters")[0]
    print(f"   {cl[0]} texts have a near-duplicate; they form {cl[1]} clusters, so keeping one "
          f"text per cluster would set {cl[2]} aside")
    timed("verification: exact Jaccard of word 3-shingles, simhash_jaccard()",
          "ALTER TABLE pairs ADD COLUMN j float8; "
          "UPDATE pairs SET j = simhash_jaccard(ta.body, tb.body) "
          "FROM texts ta, texts tb WHERE ta.id = pairs.a AND tb.id = pairs.b")
    stats = psql("SELECT count(*), count(*) FILTER (WHERE d = 0), "
                 "count(*) FILTER (WHERE j >= 0.8) FROM pairs")[0]
    print(f"   {stats[0]} pairs of distinct texts within distance {k} "
          f"({stats[1]} of them at distance 0; {stats[2]} with Jaccard >= 0.8)")

    pairs = psql("SELECT a, b, d, round(j::numeric, 2) FROM pairs")
    neighbours = defaultdict(dict)
    for a, b, d, j in pairs:
        neighbours[int(a)][int(b)] = (int(d), j)
        neighbours[int(b)][int(a)] = (int(d), j)
    docs = {int(i): (p + (f" (+{int(c) - 1} identical)" if int(c) > 1 else ""), s) for i, p, c, s in psql(
        "SELECT id, package, copies, split_part(body, E'\\n', 1) FROM texts "
        "WHERE id IN (SELECT a FROM pairs UNION SELECT b FROM pairs)")}

    print(f"== the {args.groups} largest groups of near-duplicate descriptions")
    shown = set()
    for groups in range(1, args.groups + 1):
        # the text with the most near-duplicates not shown yet
        best, members = None, []
        for centre, near in neighbours.items():
            if centre in shown:
                continue
            fresh = [(d, m) for m, d in near.items() if m not in shown]
            if len(fresh) > len(members) or (len(fresh) == len(members) and best is not None
                                              and fresh and centre < best):
                best, members = centre, fresh
        if best is None or not members:
            break
        shown.add(best)
        members.sort(key=lambda x: (x[0], docs[x[1]][0]))
        print(f"\n-- group {groups}: {len(members) + 1} near-identical texts")
        print(f"   centre {docs[best][0]:37s} {docs[best][1][:60]}")
        for (d, j), m in members[:12]:
            print(f"   d={d} J={j}  {docs[m][0]:40s} {docs[m][1][:52]}")
        if len(members) > 12:
            print(f"   ... and {len(members) - 12} more")
        shown.update(m for _, m in members)

    crawler(k)


def crawler(k):
    """The crawler's ingest: the texts arrive in batches, and a table with a
    near-duplicate exclusion constraint keeps one of each group of copies;
    INSERT ... ON CONFLICT DO NOTHING skips the rest, and a second query
    names the stored text each skipped one repeats."""
    batches = 8
    print(f"\n== a crawler's ingest: {batches} batches into a table that refuses near-copies "
          f"(EXCLUDE USING simhash_perm (fp WITH ~=), radius {k})")
    psql(f"CREATE TABLE kept (id int PRIMARY KEY, package text, body text, fp simhash64, "
         f"CONSTRAINT kept_no_near_copies EXCLUDE USING simhash_perm (fp WITH ~=) "
         f"WITH (radius = {k}))")
    t0 = time.time()
    stored = skipped = 0
    for b in range(batches):
        s, n = psql(f"WITH batch AS (SELECT * FROM texts WHERE id % {batches} = {b}), "
                    f"ins AS (INSERT INTO kept SELECT id, package, body, fp FROM batch ORDER BY id "
                    f"ON CONFLICT DO NOTHING RETURNING id) "
                    f"SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM batch)")[0]
        stored += int(s)
        skipped += int(n) - int(s)
    print(f"   {stored} texts stored, {skipped} skipped as near-copies: {time.time() - t0:.2f} s")
    pairs = psql(f"SELECT count(*) FROM simhash_pairs('kept', 'id', 'fp', {k}) AS p(a int, b int, d int)")[0][0]
    print(f"   pairs within {k} among the stored texts (simhash_pairs): {pairs}")
    print("   some skipped texts, each with the stored text it repeats:")
    for pkg, kept_pkg, d in psql(
            f"SELECT t.package, m.package, m.d FROM texts t "
            f"CROSS JOIN LATERAL (SELECT package, fp <-> t.fp AS d FROM kept "
            f"WHERE hamming_near(fp, t.fp, {k}) ORDER BY d, id LIMIT 1) m "
            f"WHERE NOT EXISTS (SELECT 1 FROM kept WHERE kept.id = t.id) "
            f"ORDER BY t.package LIMIT 6"):
        print(f"   {pkg:40s} d={d}  stored: {kept_pkg}")


if __name__ == "__main__":
    main()
