"""The top-k longest-sentence signature beside simhash, on English and Chinese.

What it measures (issue "The last fingerprint of the source documents"):
precision and recall, against exact ground truth, of every way to find
near-duplicate pairs of a document set:
  - the sentence signature, simhash_sentences(body, k), for k = 3, 5, 8:
    candidate pairs share at least m of their hashes (m = 1, 2, 3 <= k);
  - the default simhash at Hamming distance 3 and 6 (simhash_pairs);
  - combined recipes: candidates from either (signature k = 5, m = 1, or
    k = 3, m = 2; or simhash within 6), verified by simhash_jaccard >= the
    threshold.
A pair is near-duplicate at threshold T when the Jaccard similarity of the
two texts' word 3-shingle sets (of simhash_tokens: the extension's own
tokens; groundtruth.py) is >= T, for T = 0.8 and 0.9.  Precision: the share
of a method's pairs that are near-duplicates; recall: the share of
near-duplicate pairs the method finds.  Per corpus, the same numbers by the
documents' sentence count (the smaller of the pair), which is where the
two methods part.

Corpora
    English: apt's package descriptions, identical texts collapsed
    (tools/corpus.py; about 61,000), natural near-duplicates: -dev, -doc,
    -data packages of one source that share a template.
    Chinese: the documents of test/quality/chinese.py (paragraphs of
    manpages-zh, entries of fortunes-zh; 5,000 drawn with its seed) and, for
    each, its realistic edits (a token replaced, 2-10% of tokens replaced, a
    sentence deleted or inserted, punctuation and width changed, a footer
    added): about 45,000 texts.

The verification of the combined recipe runs as SQL (simhash_jaccard) on
every candidate pair and must agree with the ground truth's Jaccard.

Writes docs/reports/quality_sentences.md.  Run through test/quality/evaluate.sh
--sentences (a throwaway cluster), or against a server with the extension
created in its database:
    /usr/bin/python3 test/quality/sentences.py
"""
import os
import random
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
import corpus  # noqa: E402  (tools/corpus.py)
import groundtruth as G  # noqa: E402
import chinese as ZH  # noqa: E402
from evaluate import copy_escape, psql  # noqa: E402

REPORT = os.path.join(ROOT, "docs", "reports", "quality_sentences.md")
THRESHOLDS = (0.8, 0.9)
SIG_KS = (3, 5, 8)
SIG_MS = (1, 2, 3)
SIMHASH_KS = (3, 6)
# the combined recipes: candidates from a signature rule or simhash, verified
COMBINED = (("sig k=5 m=1", "simhash k=6"), ("sig k=3 m=2", "simhash k=6"))


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def load(texts):
    """texts into table sdocs(id, body), id = list index; then each text's
    tokens, sentence count, signatures and fingerprint"""
    rows = "".join(f"{i}\t{copy_escape(t)}\n" for i, t in enumerate(texts))
    psql("DROP TABLE IF EXISTS sdocs; CREATE TABLE sdocs (id int PRIMARY KEY, body text);"
         "COPY sdocs FROM STDIN;", rows)
    sigs = ", ".join(f"simhash_sentences(body, {k})" for k in SIG_KS)
    out = psql("COPY (SELECT array_to_string(simhash_tokens(body), ' '), "
               "cardinality(simhash_sentences(body, 1000)), simhash(body)::bigint, "
               f"{sigs} FROM sdocs ORDER BY id) TO STDOUT;")
    toks, nsent, fps, sig = [], [], [], {k: [] for k in SIG_KS}
    for line in out.split("\n")[:-1]:
        f = line.split("\t")
        toks.append(f[0].split(" ") if f[0] else [])
        nsent.append(int(f[1]))
        fps.append(int(f[2]))
        for k, s in zip(SIG_KS, f[3:]):
            sig[k].append([int(x) for x in s.strip("{}").split(",")] if s != "{}" else [])
    psql("ANALYZE sdocs;")
    return toks, np.array(nsent), sig


def pair_keys(i, j, n):
    a, b = np.minimum(i, j), np.maximum(i, j)
    return a.astype(np.int64) * n + b


def signature_pairs(sigs, n, m):
    """Keys of the pairs of documents sharing at least m hashes."""
    buckets = {}
    for d, s in enumerate(sigs):
        for h in s:
            buckets.setdefault(h, []).append(d)
    keys = []
    for docs in buckets.values():
        if len(docs) < 2:
            continue
        a = np.array(docs, dtype=np.int64)
        ii, jj = np.triu_indices(len(a), 1)
        keys.append(a[ii] * n + a[jj])
    if not keys:
        return np.zeros(0, dtype=np.int64)
    allk = np.concatenate(keys)
    if m == 1:
        return np.unique(allk)
    u, c = np.unique(allk, return_counts=True)
    return u[c >= m]


def simhash_pairs_keys(k, n):
    out = psql(f"COPY (SELECT a, b FROM simhash_pairs('sdocs', 'id', 'fp_tmp', {k}) "
               f"AS p(a int, b int, d int)) TO STDOUT;")
    ab = np.array([int(x) for x in out.split()], dtype=np.int64).reshape(-1, 2)
    return np.unique(ab[:, 0] * n + ab[:, 1]) if len(ab) else np.zeros(0, dtype=np.int64)


def verify_in_sql(keys, n, gt_keys, gt_jac):
    """simhash_jaccard on every candidate pair, as the recipe runs it; checked
    against the ground truth's Jaccard (pairs under 0.5 are not in it)."""
    rows = "".join(f"{k // n}\t{k % n}\n" for k in keys)
    t0 = time.time()
    psql("DROP TABLE IF EXISTS cand; CREATE TABLE cand (a int, b int); COPY cand FROM STDIN;", rows)
    out = psql("COPY (SELECT c.a, c.b, simhash_jaccard(x.body, y.body) FROM cand c "
               "JOIN sdocs x ON x.id = c.a JOIN sdocs y ON y.id = c.b ORDER BY 1, 2) TO STDOUT;")
    secs = time.time() - t0
    got = {}
    for line in out.split("\n")[:-1]:
        a, b, j = line.split("\t")
        got[int(a) * n + int(b)] = float(j)
    pos = np.searchsorted(gt_keys, keys)
    pos[pos >= len(gt_keys)] = 0
    found = gt_keys[pos] == keys
    want = np.where(found, gt_jac[pos], -1.0)
    disagree = 0
    for k, w in zip(keys, want):
        g = got[int(k)]
        if (w < 0 and g >= 0.5 - 1e-12) or (w >= 0 and abs(g - w) > 1e-9):
            disagree += 1
    return secs, disagree


def measure(name, keys, gt_keys, gt_jac, nsent, n):
    """Precision and recall at each threshold, overall and by sentence band."""
    pos = np.searchsorted(gt_keys, keys)
    pos[pos >= len(gt_keys)] = 0
    found = gt_keys[pos] == keys
    jac = np.where(found, gt_jac[pos], 0.0)
    a, b = keys // n, keys % n
    cand_band = band(np.minimum(nsent[a], nsent[b]))
    gt_band = band(np.minimum(nsent[gt_keys // n], nsent[gt_keys % n]))
    row = {"method": name, "pairs": int(len(keys))}
    for t in THRESHOLDS:
        hit = jac >= t - 1e-12
        truth = gt_jac >= t - 1e-12
        row[f"prec{t}"] = float(hit.mean()) if len(keys) else float("nan")
        row[f"rec{t}"] = float(hit.sum() / truth.sum()) if truth.sum() else float("nan")
        for bnd in BANDS:
            cm = cand_band == bnd
            tm = truth & (gt_band == bnd)
            row[f"prec{t}_{bnd}"] = float(hit[cm].mean()) if cm.any() else float("nan")
            row[f"rec{t}_{bnd}"] = float((hit & cm).sum() / tm.sum()) if tm.sum() else float("nan")
    return row


BANDS = ("1", "2-3", "4+")


def band(nsent):
    return np.where(nsent <= 1, "1", np.where(nsent <= 3, "2-3", "4+"))


def evaluate(label, texts):
    log(f"{label}: {len(texts):,} texts into PostgreSQL")
    n = len(texts)
    toks, nsent, sig = load(texts)
    log(f"{label}: ground truth (Jaccard >= 0.5 of word 3-shingles)")
    gi, gj, gjac = G.pairs_of_tokens(toks)
    gt_keys = pair_keys(gi, gj, n)
    order = np.argsort(gt_keys)
    gt_keys, gt_jac = gt_keys[order], gjac[order]
    rows, cands = [], {}
    for k in SIG_KS:
        for m in SIG_MS:
            if m > k:
                continue
            name = f"sig k={k} m={m}"
            cands[name] = signature_pairs(sig[k], n, m)
            rows.append(measure(name, cands[name], gt_keys, gt_jac, nsent, n))
    psql("ALTER TABLE sdocs ADD COLUMN fp_tmp simhash64; UPDATE sdocs SET fp_tmp = simhash(body);")
    for k in SIMHASH_KS:
        name = f"simhash k={k}"
        cands[name] = simhash_pairs_keys(k, n)
        rows.append(measure(name, cands[name], gt_keys, gt_jac, nsent, n))
    verify = []
    for sig_rule, sim_rule in COMBINED:
        union = np.union1d(cands[sig_rule], cands[sim_rule])
        log(f"{label}: verifying {len(union):,} candidates ({sig_rule} or {sim_rule}) with simhash_jaccard in SQL")
        secs, disagree = verify_in_sql(union, n, gt_keys, gt_jac)
        verify.append({"rule": f"{sig_rule} or {sim_rule}", "pairs": int(len(union)),
                       "secs": secs, "disagree": disagree})
        pos = np.searchsorted(gt_keys, union)
        pos[pos >= len(gt_keys)] = 0
        in_gt = gt_keys[pos] == union
        for t in THRESHOLDS:
            kept = union[in_gt & (gt_jac[pos] >= t - 1e-12)]
            r = measure(f"{sig_rule} or {sim_rule}, verified at J >= {t}", kept, gt_keys, gt_jac, nsent, n)
            r["candidates"] = int(len(union))
            rows.append(r)
    counts = {bnd: int((band(nsent) == bnd).sum()) for bnd in BANDS}
    return {"label": label, "texts": n, "rows": rows, "gt": {t: int((gt_jac >= t - 1e-12).sum())
                                                              for t in THRESHOLDS},
            "bands": counts, "verify": verify}


def english_texts():
    docs, _collapsed = G.dedup_docs(corpus.load())
    return [t for _p, t in docs]


def chinese_texts():
    rng = random.Random(ZH.SEED)
    ZH.log = lambda msg: log("chinese.py: " + msg)
    zh_docs, _en, _twins, _n = ZH.build_sets(rng)
    pairs = ZH.make_pairs(zh_docs, "zh", rng)
    texts, _pairs = ZH.edited_group(zh_docs, pairs)
    seen, out = set(), []
    for t in texts:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def fmt(x):
    return "-" if x != x else f"{x:.3f}"


def table(res, t):
    lines = [f"| method | pairs | precision | recall | precision, 1 sentence | recall, 1 sentence "
             f"| precision, 2-3 | recall, 2-3 | precision, 4+ | recall, 4+ |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        if "verified" in r["method"] and not r["method"].endswith(str(t)):
            continue
        lines.append(f"| {r['method']} | {r['pairs']:,} | {fmt(r[f'prec{t}'])} | {fmt(r[f'rec{t}'])} | "
                     + " | ".join(f"{fmt(r[f'prec{t}_{b}'])} | {fmt(r[f'rec{t}_{b}'])}" for b in BANDS) + " |")
    return "\n".join(lines)


def write_report(results, secs):
    out = ["# The sentence signature beside simhash",
           "",
           "Written by `test/quality/sentences.py` (run by `bash test/quality/evaluate.sh --sentences`;"
           f" {secs:.0f} s). Do not edit by hand: the script says how each number is computed.",
           "",
           "A pair of documents is a near-duplicate at threshold T when the Jaccard similarity of their"
           " word 3-shingle sets (the extension's tokens) is at least T. *Precision*: the share of a"
           " method's pairs that are near-duplicates. *Recall*: the share of all near-duplicate pairs"
           " the method finds. `sig k=K m=M`: the two documents share at least M hashes of their"
           " `simhash_sentences(body, K)`. `simhash k=K`: default fingerprints within Hamming distance"
           " K. `A or B, verified`: the pairs of the two rules together, each verified"
           " with `simhash_jaccard(a, b) >= T` in SQL (so its precision is 1 by construction; its"
           " cost is the candidates verified). The band columns split the pairs by the smaller"
           " sentence count of the two documents.",
           ""]
    for res in results:
        out += [f"## {res['label']}", "",
                f"{res['texts']:,} texts; documents by sentence count: "
                + ", ".join(f"{b}: {res['bands'][b]:,}" for b in BANDS)
                + f". Near-duplicate pairs: {res['gt'][0.8]:,} at J >= 0.8, {res['gt'][0.9]:,} at J >= 0.9."
                + "".join(f" The recipe `{v['rule']}` verified {v['pairs']:,} candidates with"
                          f" `simhash_jaccard` in {v['secs']:.1f} s (disagreements with the ground truth:"
                          f" {v['disagree']})." for v in res["verify"]), ""]
        for t in THRESHOLDS:
            out += [f"### At J >= {t}", "", table(res, t), ""]
    with open(REPORT, "w", encoding="utf-8") as f:
        f.write("\n".join(out))


def main():
    t0 = time.time()
    results = [evaluate("English: apt's package descriptions", english_texts()),
               evaluate("Chinese: manpages-zh and fortunes-zh, with realistic edits (chinese.py)",
                        chinese_texts())]
    write_report(results, time.time() - t0)
    for res in results:
        print(res["label"])
        for t in THRESHOLDS:
            print(table(res, t))
    log(f"wrote {REPORT}")
    psql("DROP TABLE IF EXISTS sdocs, cand;")


if __name__ == "__main__":
    main()
