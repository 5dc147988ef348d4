"""Exact ground truth: all document pairs with word-3-shingle-set Jaccard >= 0.5.

Documents: corpus.load() (tools/corpus.py), collapsed so that identical texts keep one
representative (the first in file order).  Tokens: evaluate.py passes the
extension's own (simhash_tokens) to pairs_of_tokens(); run alone, this script
takes them from the frozen reference implementation
(test/reference/simhash_ref.py, tokens(text, 'unigram')).  Shingle set = SET
of consecutive token 3-grams; a document with 1-2 tokens has one shingle of
all its tokens; no tokens -> empty set (never similar to anything).

Algorithm (exact): prefix filtering.  Shingles are ranked by document
frequency (rarest first); each set is sorted by rank.  For threshold t any pair
with J >= t shares at least one element among the first |x|-ceil(t|x|)+1
elements of each set, so candidate pairs = pairs sharing a prefix element;
every candidate is then verified exactly (also size filter).

Output cache: $SIMHASH_QUALITY_CACHE/gt_pairs.npz (default /tmp/simhash-quality) with i, j (indices into the deduplicated
document list, i < j), inter, union, jac; plus the deduplicated doc order.
"""
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import corpus  # noqa: E402  (tools/corpus.py)

CACHE_DIR = os.environ.get("SIMHASH_QUALITY_CACHE", "/tmp/simhash-quality")
os.makedirs(CACHE_DIR, exist_ok=True)
CACHE = os.path.join(CACHE_DIR, "gt_pairs.npz")
THRESH = 0.5


def dedup_docs(docs=None):
    """Return (unique_docs, n_collapsed). unique_docs: list of (package, text)."""
    if docs is None:
        docs = corpus.load()
    seen = set()
    out = []
    for pkg, text in docs:
        if text in seen:
            continue
        seen.add(text)
        out.append((pkg, text))
    return out, len(docs) - len(out)


def shingle_sets(token_lists):
    """Return list of sorted np.int64 arrays of global shingle ranks (rarest first)."""
    vocab = {}
    tid = [np.array([vocab.setdefault(t, len(vocab)) for t in toks], dtype=np.int64)
           for toks in token_lists]
    assert len(vocab) < (1 << 21) - 1
    PAD = (1 << 21) - 1
    keys = []
    for a in tid:
        if len(a) == 0:
            k = np.zeros(0, dtype=np.int64)
        elif len(a) < 3:
            b = np.concatenate([a, np.full(3 - len(a), PAD, dtype=np.int64)])
            k = np.array([(b[0] << 42) | (b[1] << 21) | b[2]], dtype=np.int64)
        else:
            k = np.unique((a[:-2] << 42) | (a[1:-1] << 21) | a[2:])
        keys.append(k)
    allk = np.concatenate(keys)
    uk, inv, cnt = np.unique(allk, return_inverse=True, return_counts=True)
    # rank: rarest first, ties by key value (deterministic)
    order = np.lexsort((uk, cnt))
    rank = np.empty(len(uk), dtype=np.int64)
    rank[order] = np.arange(len(uk))
    sets = []
    pos = 0
    for k in keys:
        r = rank[inv[pos:pos + len(k)]]
        pos += len(k)
        r.sort()
        sets.append(r)
    return sets, len(uk)


def all_pairs(sets, t=THRESH):
    n = len(sets)
    sizes = np.array([len(s) for s in sets], dtype=np.int64)
    # prefix postings
    el, dc = [], []
    for d, s in enumerate(sets):
        if len(s) == 0:
            continue
        p = len(s) - math.ceil(t * len(s) - 1e-12) + 1
        el.append(s[:p])
        dc.append(np.full(p, d, dtype=np.int64))
    el = np.concatenate(el)
    dc = np.concatenate(dc)
    o = np.lexsort((dc, el))
    el, dc = el[o], dc[o]
    bounds = np.flatnonzero(np.diff(el)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [len(el)]])
    multi = np.flatnonzero(ends - starts > 1)
    ncand_raw = int(sum((ends[g] - starts[g]) * (ends[g] - starts[g] - 1) // 2 for g in multi))
    cand = []
    for g in multi:
        ds = dc[starts[g]:ends[g]]
        ii, jj = np.triu_indices(len(ds), 1)
        a, b = ds[ii], ds[jj]
        # size filter
        sa, sb = sizes[a], sizes[b]
        keep = np.minimum(sa, sb) >= t * np.maximum(sa, sb) - 1e-9
        cand.append(a[keep] * n + b[keep])
    cand = np.unique(np.concatenate(cand)) if cand else np.zeros(0, dtype=np.int64)
    I, J = cand // n, cand % n
    pysets = [None] * n
    inter = np.empty(len(cand), dtype=np.int64)
    for k, (i, j) in enumerate(zip(I.tolist(), J.tolist())):
        si = pysets[i]
        if si is None:
            si = pysets[i] = set(sets[i].tolist())
        sj = pysets[j]
        if sj is None:
            sj = pysets[j] = set(sets[j].tolist())
        inter[k] = len(si & sj)
    union = sizes[I] + sizes[J] - inter
    jac = inter / union
    keep = jac >= t - 1e-12
    return I[keep], J[keep], inter[keep], union[keep], jac[keep], ncand_raw, len(cand)


def pairs_of_tokens(token_lists, t=THRESH):
    """Exact pairs (i < j) of token lists whose 3-shingle sets have J >= t.

    Returns (i, j, jac) as numpy arrays, sorted by i then j.
    """
    sets, _ = shingle_sets(token_lists)
    I, J, _inter, _union, jac, _nraw, _ncand = all_pairs(sets, t)
    order = np.lexsort((J, I))
    return I[order], J[order], jac[order]


def reference_tokens():
    """tokens(text, cjk) of the frozen reference, test/reference/simhash_ref.py
    (imported only here: it needs python3-xxhash and unicode-data)."""
    sys.path.insert(0, os.path.join(HERE, "..", "reference"))
    import simhash_ref
    return simhash_ref.tokens


def load_or_build(verbose=True):
    if os.path.exists(CACHE):
        z = np.load(CACHE)
        return {k: z[k] for k in z.files}
    t0 = time.time()
    raw = corpus.load()
    udocs, ncoll = dedup_docs(raw)
    tokens = reference_tokens()
    toks = [tokens(x, "unigram") for _, x in udocs]
    t1 = time.time()
    sets, nsh = shingle_sets(toks)
    t2 = time.time()
    I, J, inter, union, jac, ncand_raw, ncand = all_pairs(sets)
    t3 = time.time()
    ident_sets = int(np.sum(jac >= 1.0))
    res = dict(i=I, j=J, inter=inter, union=union, jac=jac,
               n_raw=np.array(len(raw)), n_docs=np.array(len(udocs)),
               n_collapsed=np.array(ncoll), n_shingles=np.array(nsh),
               ncand_raw=np.array(ncand_raw), ncand=np.array(ncand),
               identical_set_pairs=np.array(ident_sets),
               empty_docs=np.array(sum(1 for s in sets if len(s) == 0)),
               time_tok=np.array(t1 - t0), time_sets=np.array(t2 - t1), time_pairs=np.array(t3 - t2))
    np.savez(CACHE, **res)
    return res


def summary(g):
    jac = g["jac"]
    lines = [
        f"raw documents: {int(g['n_raw'])}",
        f"identical texts collapsed: {int(g['n_collapsed'])} -> {int(g['n_docs'])} documents",
        f"documents with no tokens: {int(g['empty_docs'])}",
        f"distinct 3-shingles: {int(g['n_shingles'])}",
        f"candidate pairs (raw postings / distinct after size filter): {int(g['ncand_raw'])} / {int(g['ncand'])}",
        f"pairs J>=0.5: {int(np.sum(jac >= 0.5))}",
        f"pairs J>=0.8: {int(np.sum(jac >= 0.8))}",
        f"pairs J>=0.9: {int(np.sum(jac >= 0.9))}",
        f"pairs J==1.0 (identical shingle sets, different text): {int(g['identical_set_pairs'])}",
        f"time: tokenise {float(g['time_tok']):.1f}s, shingle sets {float(g['time_sets']):.1f}s, pairs {float(g['time_pairs']):.1f}s",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    if "--rebuild" in sys.argv and os.path.exists(CACHE):
        os.remove(CACHE)
    print(summary(load_or_build()))
