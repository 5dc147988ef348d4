"""Near-duplicate quality of the extension's fingerprints, measured in PostgreSQL.

What it measures (issue "Near-duplicate quality on real text"):

1. The corpus: apt's English package descriptions (tools/corpus.py), loaded into a
   table.  Identical texts are collapsed to one row first and counted apart:
   they are trivial duplicates, found by any method at distance 0.
2. Ground truth, exact: every pair of documents whose sets of word 3-shingles
   have Jaccard similarity >= 0.5, found with an inverted index and prefix
   filtering (groundtruth.all_pairs), from the tokens the extension itself
   produces (simhash_tokens), so tokenization cannot differ.
3. For each feature scheme, fingerprints computed by the extension, and for
   k = 0..10: precision = share of ALL document pairs within Hamming distance
   k (counted exactly, by brute force over the 1.9 billion pairs) whose
   Jaccard is >= 0.7 / 0.8 / 0.9, and recall = share of ground-truth pairs
   with Jaccard >= 0.7 / 0.8 / 0.9 that are within k.
4. How reliable a fingerprint with few features is: precision at k = 3 by the
   smaller feature count of the pair.
5. The candidates-plus-verification recipe, run and timed as SQL: a
   simhash_perm index on a recall-oriented fingerprint, a self-join at a loose
   k, then simhash_jaccard() >= 0.8.
6. The MinHash path: GIN index on minhash_bands(), self-join with &&, and
   the recall of the band keys, then verification.

Needs a server with the extension installed, reached through the usual PG*
environment variables; Debian's python3-numpy (and python3-matplotlib for the
plot).  Run it through test/quality/evaluate.sh, which starts a throwaway
cluster.  Writes docs/reports/quality.md, docs/reports/quality.png and docs/reports/quality.json.

    /usr/bin/python3 test/quality/evaluate.py [--all] [--check]

--all     measures every scheme (about 10 minutes), not just the main ones.
--check   only what test/run_all.sh checks (check_targets), no report;
          exits non-zero if a check fails.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
import corpus  # noqa: E402  (tools/corpus.py)
import groundtruth as G  # noqa: E402

KMAX = 10
THRESHOLDS = (0.7, 0.8, 0.9)
DOCS = os.path.join(ROOT, "docs", "reports")

# name -> (SQL expression over qdocs.body, shown in the main table?)
# The first is the default scheme; the next two are the reference
# schemes (the textbook choices).
SCHEMES = {
    "default: words {1,3}, tf": ("simhash(body)", True),
    "ref: words {1}, tf": ("simhash(body, '{1}', 'tf')", True),
    "ref: words {3}, binary": ("simhash(body, '{3}', 'binary')", True),
    "words {1}, binary": ("simhash(body, '{1}', 'binary')", True),
    "chars 4, tf": ("simhash_chargrams(body, 4)", True),
    "user weights: tf-idf words {1,3}": (None, True),
    "words {1}, log": ("simhash(body, '{1}', 'log')", False),
    "words {3}, tf": ("simhash(body, '{3}', 'tf')", False),
    "words {2}, tf": ("simhash(body, '{2}', 'tf')", False),
    "words {1,2}, tf": ("simhash(body, '{1,2}', 'tf')", False),
    "words {1,3}, binary": ("simhash(body, '{1,3}', 'binary')", False),
    "words {1,3}, log": ("simhash(body, '{1,3}', 'log')", False),
    "words {1,2,3}, tf": ("simhash(body, '{1,2,3}', 'tf')", False),
    "chars 5, tf": ("simhash_chargrams(body, 5)", False),
    "chars 5, binary": ("simhash_chargrams(body, 5, 'binary')", False),
    "chars 3, tf": ("simhash_chargrams(body, 3)", False),
    # what the tokenizer's Unicode folding and word segmentation are worth:
    # raw whitespace-separated strings, case and punctuation kept
    "no folding: whitespace-split words {1}, tf":
        ("simhash(regexp_split_to_array(btrim(body), '\\s+'))", False),
}
DEFAULT = "default: words {1,3}, tf"
REFERENCES = ("ref: words {1}, tf", "ref: words {3}, binary")

# tf-idf weights through simhash(text[], real[]): each distinct word and word
# 3-shingle of a document is a feature, weighted by its count in the document
# times ln(N / number of documents containing it).  The user-weights option.
TFIDF_SQL = """
CREATE TEMP TABLE qfeat AS
  SELECT id, f, count(*) AS tf
  FROM (SELECT d.id, t.tok AS w1,
               t.tok || ' ' || lead(t.tok, 1) OVER w || ' ' || lead(t.tok, 2) OVER w AS w3
        FROM qdocs d, unnest(simhash_tokens(d.body)) WITH ORDINALITY AS t(tok, pos)
        WINDOW w AS (PARTITION BY d.id ORDER BY t.pos)) s,
       LATERAL (VALUES (w1), (w3)) AS v(f)
  WHERE f IS NOT NULL
  GROUP BY id, f;
CREATE TEMP TABLE qdf AS SELECT f, count(*) AS df FROM qfeat GROUP BY f;
COPY (SELECT simhash(array_agg(q.f), array_agg((q.tf * ln((SELECT count(*) FROM qdocs)::float8 / qdf.df))::real))::bigint
      FROM qfeat q JOIN qdf USING (f)
      GROUP BY q.id ORDER BY q.id) TO STDOUT;
"""


def psql(sql, stdin=None):
    """Run SQL with psql (stop on the first error); return its output."""
    r = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-f", "-"],
                       input=(sql if stdin is None else sql + "\n" + stdin + "\\.\n"),
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"psql failed:\n{r.stderr}")
    return r.stdout


def copy_escape(s):
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def load_corpus():
    """Load the deduplicated documents as qdocs(id, pkg, body); id = list index."""
    raw = corpus.load()
    docs, collapsed = G.dedup_docs(raw)
    rows = "".join(f"{i}\t{copy_escape(p)}\t{copy_escape(t)}\n" for i, (p, t) in enumerate(docs))
    psql("DROP TABLE IF EXISTS qdocs;"
         "CREATE TABLE qdocs (id int PRIMARY KEY, pkg text, body text);"
         "COPY qdocs FROM STDIN;", rows)
    psql("ANALYZE qdocs;")
    return len(raw), collapsed, len(docs)


def fetch_int64(sql_copy):
    out = psql(sql_copy)
    return np.array([int(x) for x in out.split()], dtype=np.int64)


def fingerprints(expr):
    """The fingerprints of all documents in id order, as uint64."""
    if expr is None:
        out = psql(TFIDF_SQL)
        fp = np.array([int(x) for x in out.split()], dtype=np.int64)
    else:
        fp = fetch_int64(f"COPY (SELECT ({expr})::bigint FROM qdocs ORDER BY id) TO STDOUT;")
    return fp.view(np.uint64)


def ground_truth():
    """Exact ground-truth pairs from the extension's own tokens."""
    out = psql("COPY (SELECT array_to_string(simhash_tokens(body), ' ') FROM qdocs ORDER BY id) TO STDOUT;")
    toks = [line.split(" ") if line else [] for line in out.split("\n")[:-1]]
    return G.pairs_of_tokens(toks)


# Hamming distances of uint64 fingerprint arrays, in numpy
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H = np.uint64(0x0101010101010101)
_S = [np.uint64(s) for s in (1, 2, 4, 56)]


def popcount64(x):
    """In-place SWAR popcount of a uint64 array; returns it (values 0..64)."""
    t = np.empty_like(x)
    np.right_shift(x, _S[0], out=t); t &= _M1; x -= t
    np.right_shift(x, _S[1], out=t); t &= _M2; x &= _M2; x += t
    np.right_shift(x, _S[2], out=t); x += t; x &= _M4
    x *= _H; x >>= _S[3]
    return x


def hamming_hist_all_pairs(fp, kmax=KMAX, R=128, C=4096):
    """Exact count of unordered pairs (i<j) at each Hamming distance 0..kmax.

    Brute force over all pairs, in R x C tiles whose temporaries stay in the
    CPU cache (this is what takes the time: 1.9 billion pairs).
    """
    n = len(fp)
    out = np.zeros(kmax + 1, dtype=np.int64)
    x = np.empty((R, C), dtype=np.uint64)
    t = np.empty_like(x)
    for i0 in range(0, n, R):
        a = fp[i0:i0 + R, None]
        r = len(a)
        for j0 in range(i0, n, C):
            b = fp[None, j0:j0 + C]
            c = b.shape[1]
            xv, tv = x[:r, :c], t[:r, :c]
            np.bitwise_xor(a, b, out=xv)
            np.right_shift(xv, _S[0], out=tv); tv &= _M1; xv -= tv
            np.right_shift(xv, _S[1], out=tv); tv &= _M2; xv &= _M2; xv += tv
            np.right_shift(xv, _S[2], out=tv); xv += tv; xv &= _M4
            xv *= _H; xv >>= _S[3]
            if j0 == i0:
                xv[np.tril_indices(r, 0, c)] = 255  # self and j <= i
            sel = xv[xv <= kmax]
            if sel.size:
                out += np.bincount(sel.astype(np.int64), minlength=kmax + 1)
    return out


def hamming(a, b):
    return popcount64(np.asarray(a, dtype=np.uint64) ^ np.asarray(b, dtype=np.uint64))


def measure(fp, gi, gj, jac):
    """Precision and recall at every k for one set of fingerprints."""
    within_all = np.cumsum(hamming_hist_all_pairs(fp, KMAX))
    d = hamming(fp[gi], fp[gj])
    rows = []
    for k in range(KMAX + 1):
        row = {"k": k, "within": int(within_all[k])}
        w = d <= k
        for t in THRESHOLDS:
            m = jac >= t - 1e-12
            hit = int((w & m).sum())
            row[f"prec{t}"] = hit / within_all[k] if within_all[k] else float("nan")
            row[f"rec{t}"] = hit / int(m.sum())
        rows.append(row)
    return rows, d


def reliability(fp, d, gi, gj, jac, counts, k=3):
    """Precision at k by the smaller feature count of each pair within k.

    All pairs within k are needed (most are not in the ground truth), so they
    are listed by brute force for this one k.
    """
    n = len(fp)
    pi, pj = [], []
    for i0 in range(0, n, 512):
        a = fp[i0:i0 + 512]
        x = hamming(a[:, None], fp[None, :])
        ii, jj = np.nonzero(x <= k)
        ii = ii + i0
        keep = ii < jj
        pi.append(ii[keep])
        pj.append(jj[keep])
    pi, pj = np.concatenate(pi), np.concatenate(pj)
    # J of each pair within k: from the ground truth, else < 0.5
    key_gt = gi.astype(np.int64) * n + gj
    key = pi.astype(np.int64) * n + pj
    pos = np.searchsorted(key_gt, key)
    pos[pos >= len(key_gt)] = 0
    found = key_gt[pos] == key
    pj_jac = np.where(found, jac[pos], 0.0)
    mins = np.minimum(counts[pi], counts[pj])
    buckets = [(0, 32), (32, 64), (64, 128), (128, 256), (256, 1 << 62)]
    out = []
    for lo, hi in buckets:
        m = (mins >= lo) & (mins < hi)
        docs = int(((counts >= lo) & (counts < hi)).sum())
        row = {"features": f"{lo}-{hi - 1}" if hi < 1 << 62 else f"{lo}+", "docs": docs,
               "pairs_within": int(m.sum())}
        for t in (0.5, 0.7, 0.8):
            row[f"prec{t}"] = float((pj_jac[m] >= t).mean()) if m.any() else float("nan")
        out.append(row)
    return out


# The verification step of both recipes: exact Jaccard of the candidates
VERIFY_SQL = """CREATE TEMP TABLE {out} AS
  SELECT c.i, c.j FROM {pairs} c
  JOIN qdocs a ON a.id = c.i JOIN qdocs b ON b.id = c.j
  WHERE simhash_jaccard(a.body, b.body) >= 0.8;"""

RECIPE_SQL = """
\\timing on
CREATE TEMP TABLE cand AS
  SELECT id, simhash(body, shingles => '{{1}}', weighting => 'binary') AS fp FROM qdocs;
CREATE INDEX ON cand USING simhash_perm (fp) WITH (radius = {k}, blocks = {blocks});
ANALYZE cand;
CREATE TEMP TABLE candpairs AS
  SELECT a.id AS i, b.id AS j
  FROM cand a JOIN cand b ON hamming_near(b.fp, a.fp, {k}) AND b.id > a.id;
{verify}
\\timing off
SELECT 'counts', (SELECT count(*) FROM candpairs), (SELECT count(*) FROM verified);
COPY (SELECT i, j FROM verified ORDER BY i, j) TO STDOUT;
"""

MINHASH_SQL = """
\\timing on
CREATE TEMP TABLE mh AS
  SELECT id, minhash_bands(minhash(body, {n}), {bands}) AS bands FROM qdocs;
CREATE INDEX ON mh USING gin (bands);
ANALYZE mh;
CREATE TEMP TABLE mhpairs AS
  SELECT a.id AS i, b.id AS j FROM mh a JOIN mh b ON b.bands && a.bands AND b.id > a.id;
{verify}
\\timing off
SELECT 'counts', (SELECT count(*) FROM mhpairs), (SELECT count(*) FROM mhverified);
COPY (SELECT i, j FROM mhpairs ORDER BY i, j) TO STDOUT;
SELECT 'verified';
COPY (SELECT i, j FROM mhverified ORDER BY i, j) TO STDOUT;
"""


def timed_sql(sql):
    """Run a recipe; return (total server time in s, per-statement times, output lines)."""
    out = psql(sql)
    lines = out.split("\n")
    times = [float(x.split()[1]) / 1000 for x in lines if x.startswith("Time: ")]
    rest = [x for x in lines if x and not x.startswith("Time: ")]
    return sum(times), times, rest


def pair_keys(lines, n):
    a = np.array([[int(v) for v in x.split("\t")] for x in lines], dtype=np.int64).reshape(-1, 2)
    return a[:, 0] * n + a[:, 1]


def score_pairs(keys, gi, gj, jac, n, t=0.8):
    """Recall of ground-truth pairs with J >= t, and precision (share with J >= t)."""
    key_gt = gi.astype(np.int64) * n + gj
    sel = jac >= t - 1e-12
    truth = key_gt[sel]
    hit = np.isin(keys, truth)
    return {"pairs": int(len(keys)), "recall": float(np.isin(truth, keys).mean()),
            "precision": float(hit.mean()) if len(keys) else float("nan")}


def recipe(gi, gj, jac, n, k, blocks):
    total, times, rest = timed_sql(RECIPE_SQL.format(
        k=k, blocks=blocks, verify=VERIFY_SQL.format(out="verified", pairs="candpairs")))
    counts = [x for x in rest if x.startswith("counts")][0].split("|")
    pairs = [x for x in rest if not x.startswith("counts")]
    res = score_pairs(pair_keys(pairs, n), gi, gj, jac, n)
    res.update({"k": k, "blocks": blocks, "candidates": int(counts[1]),
                "seconds": total, "step_seconds": times})
    return res


def minhash_path(gi, gj, jac, n, slots, bands):
    total, times, rest = timed_sql(MINHASH_SQL.format(
        n=slots, bands=bands, verify=VERIFY_SQL.format(out="mhverified", pairs="mhpairs")))
    counts = [x for x in rest if x.startswith("counts")][0].split("|")
    cut = rest.index("verified")
    body = [x for x in rest[:cut] if not x.startswith("counts")]
    cand = score_pairs(pair_keys(body, n), gi, gj, jac, n)
    ver = score_pairs(pair_keys(rest[cut + 1:], n), gi, gj, jac, n)
    return {"slots": slots, "bands": bands, "rows": slots // bands,
            "candidates": int(counts[1]), "verified": int(counts[2]), "candidate_recall": cand["recall"],
            "verified_recall": ver["recall"], "verified_precision": ver["precision"],
            "seconds": total, "step_seconds": times}


def check_targets(result):
    """The issue's targets that a test run holds the extension to: no
    reference scheme, at any k, beats the default scheme at k = 3 on both
    precision and recall; the candidates-plus-verification recipe and the
    MinHash band keys reach their recall and precision.  (The default
    scheme's own precision target is not met; see docs/reports/quality.md.)"""
    from report import dominated
    failures = []
    d3 = result["schemes"][DEFAULT]["rows"][3]
    beaten = dominated(d3, result["schemes"], REFERENCES)
    if beaten:
        failures.append(f"default scheme at k=3 beaten by {beaten}")
    r = result["recipe"][-1]
    if not (r["recall"] >= 0.95 and r["precision"] >= 0.99):
        failures.append(f"recipe k={r['k']}: recall {r['recall']:.3f}, precision {r['precision']:.3f}")
    m = result["minhash"][0]
    if m["candidate_recall"] < 0.95 or m["verified_precision"] < 0.99:
        failures.append(f"minhash bands: recall {m['candidate_recall']:.3f}, "
                        f"precision {m['verified_precision']:.3f}")
    for f in failures:
        print("FAILED:", f)
    print(f"quality checks: {3 - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


def main():
    everything = "--all" in sys.argv
    check = "--check" in sys.argv
    t0 = time.time()
    n_raw, collapsed, n = load_corpus()
    gi, gj, jac = ground_truth()
    print(f"{n_raw} descriptions, {collapsed} identical texts collapsed, {n} documents; "
          f"ground truth {len(jac)} pairs with J >= 0.5 "
          f"({int((jac >= 0.8).sum())} >= 0.8, {int((jac >= 0.9).sum())} >= 0.9) "
          f"in {time.time() - t0:.0f} s", flush=True)
    result = {"documents_raw": n_raw, "identical_collapsed": collapsed, "documents": n,
              "gt_pairs": {str(t): int((jac >= t - 1e-12).sum()) for t in (0.5,) + THRESHOLDS},
              "schemes": {}}

    for name, (expr, main_table) in SCHEMES.items():
        if check and name != DEFAULT and name not in REFERENCES:
            continue
        if not (main_table or everything):
            continue
        t1 = time.time()
        fp = fingerprints(expr)
        assert len(fp) == n
        rows, d = measure(fp, gi, gj, jac)
        result["schemes"][name] = {"sql": expr or "tf-idf via simhash(text[], real[])", "rows": rows}
        r3 = rows[3]
        print(f"{name}: k=3 prec@0.8 {r3['prec0.8']:.3f} rec@0.9 {r3['rec0.9']:.3f} "
              f"({time.time() - t1:.0f} s)", flush=True)
        if name == DEFAULT and not check:
            counts = fetch_int64("COPY (SELECT simhash_feature_count(body) FROM qdocs ORDER BY id) TO STDOUT;")
            result["reliability"] = reliability(fp, d, gi, gj, jac, counts)

    # candidates + verification, with an index designed for the query radius
    result["recipe"] = [recipe(gi, gj, jac, n, k, k + 2) for k in ((9,) if check else (7, 8, 9))]
    for r in result["recipe"]:
        print(f"recipe k={r['k']}: {r['candidates']} candidates, {r['pairs']} verified, "
              f"recall {r['recall']:.3f} precision {r['precision']:.3f} in {r['seconds']:.1f} s", flush=True)
    bandings = ((128, 16),) if check else ((128, 16), (128, 32), (120, 20))
    result["minhash"] = [minhash_path(gi, gj, jac, n, s, b) for s, b in bandings]
    for r in result["minhash"]:
        print(f"minhash {r['slots']}/{r['bands']}: {r['candidates']} candidates, recall {r['candidate_recall']:.3f}; "
              f"verified recall {r['verified_recall']:.3f} precision {r['verified_precision']:.3f} "
              f"in {r['seconds']:.1f} s", flush=True)

    if check:
        import mixed  # noqa: E402 (the mixed-script recipe: Chinese with ASCII, and English)
        import boilerplate  # noqa: E402 (templated pages: the signature that skips boilerplate)
        failed = check_targets(result)
        failed |= mixed.check() > 0
        failed |= boilerplate.check() > 0
        sys.exit(1 if failed else 0)

    result["seconds"] = time.time() - t0
    os.makedirs(DOCS, exist_ok=True)
    with open(os.path.join(DOCS, "quality.json"), "w") as f:
        json.dump(result, f, indent=1)
    import report  # noqa: E402 (matplotlib only when writing the report)
    report.write(result, DOCS, DEFAULT, REFERENCES)
    print(f"done in {time.time() - t0:.0f} s: docs/reports/quality.md, docs/reports/quality.png", flush=True)



if __name__ == "__main__":
    main()
