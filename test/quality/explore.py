"""Measure simhash feature schemes against exact Jaccard ground truth.

For each scheme: fingerprints of all deduplicated docs; for k = 0..10:
  precision@0.8 = #(pairs with Hamming <= k and J >= 0.8) / #(all pairs with Hamming <= k)
                  (all 61k^2/2 pairs are counted exactly by brute force; pairs not in the
                  ground truth have J < 0.5 and count as false)
  recall@0.9    = fraction of ground-truth pairs with J >= 0.9 having Hamming <= k
  recall@0.8    = same for J >= 0.8
Writes explore_results.md next to this file.
Usage: /usr/bin/python3 test/quality/explore.py [scheme-name ...]
"""
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import groundtruth as G  # noqa: E402
import simhash_ref as R  # noqa: E402

K = 10
OUT = os.path.join(HERE, "explore_results.md")
CN = ("妈妈喊你来吃饭", "妈妈叫你来吃饭")


def feats_for(kind, toks, th):
    """kind: ('w', n) word n-gram shingles (spec); ('c', q) char q-grams; tuple of kinds = concat."""
    if kind[0] == "w":
        return R.shingle_features(th, kind[1])
    if kind[0] == "c":
        return R.char_features(toks, kind[1])
    if kind[0] == "mix":
        return np.concatenate([feats_for(k, toks, th) for k in kind[1]])
    raise ValueError(kind)


SCHEMES = {}
for n in (1, 2, 3):
    for w in ("tf", "binary", "log"):
        SCHEMES[f"w{n}-{w}"] = (("w", n), w)
for w in ("tf", "binary"):
    SCHEMES[f"w1+w3-{w}"] = (("mix", (("w", 1), ("w", 3))), w)
    SCHEMES[f"w1+w2-{w}"] = (("mix", (("w", 1), ("w", 2))), w)
    SCHEMES[f"c5-{w}"] = (("c", 5), w)
    SCHEMES[f"c4-{w}"] = (("c", 4), w)

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


def hamming_hist_all_pairs(fp, kmax=K, R=128, C=4096):
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


def main(names):
    t0 = time.time()
    g = G.load_or_build()
    udocs, ncoll = G.dedup_docs()
    assert len(udocs) == int(g["n_docs"])
    toks = [R.tokenize(x, "unigram") for _, x in udocs]
    ths = [R.token_hashes(t) for t in toks]
    print(f"prep {time.time() - t0:.1f}s", flush=True)
    gi, gj, jac = g["i"], g["j"], g["jac"]
    m8, m9 = jac >= 0.8, jac >= 0.9
    n8, n9 = int(m8.sum()), int(m9.sum())
    rows = []
    for name in names:
        kind, w = SCHEMES[name]
        t1 = time.time()
        fp = np.array([R.fingerprint(feats_for(kind, tk, th), w) for tk, th in zip(toks, ths)],
                      dtype=np.uint64)
        t2 = time.time()
        allh = hamming_hist_all_pairs(fp)
        t3 = time.time()
        dg = hamming(fp[gi], fp[gj])
        cn = {}
        for cjk in ("unigram", "bigram"):
            fa = []
            for s in CN:
                tk = R.tokenize(s, cjk)
                fa.append(R.fingerprint(feats_for(kind, tk, R.token_hashes(tk)), w))
            cn[cjk] = bin(fa[0] ^ fa[1]).count("1")
        cum_all = np.cumsum(allh)
        for k in range(K + 1):
            within = dg <= k
            tp8 = int((within & m8).sum())
            prec = tp8 / cum_all[k] if cum_all[k] else float("nan")
            rows.append(dict(scheme=name, k=k, within=int(cum_all[k]), prec8=prec,
                             prec5=int(within.sum()) / cum_all[k] if cum_all[k] else float("nan"),
                             rec9=int((within & m9).sum()) / n9, rec8=tp8 / n8,
                             cn_uni=cn["unigram"], cn_bi=cn["bigram"],
                             t_fp=t2 - t1, t_pairs=t3 - t2))
        r3 = [r for r in rows if r["scheme"] == name and r["k"] == 3][0]
        print(f"{name}: fp {t2 - t1:.1f}s, all-pairs {t3 - t2:.1f}s | k=3 prec@0.8 {r3['prec8']:.3f} "
              f"rec@0.9 {r3['rec9']:.3f} rec@0.8 {r3['rec8']:.3f} within {r3['within']} | "
              f"CN hamming uni {cn['unigram']} bi {cn['bigram']}", flush=True)
        write(rows, g)
    return rows


def pareto_flags(rows):
    """For each (scheme,k) row: is it dominated (strictly worse-or-equal on both
    prec8 and rec9, strictly worse on one) by some other row (any scheme, any k)?"""
    flags = []
    for r in rows:
        dom = any((o["prec8"] >= r["prec8"] and o["rec9"] >= r["rec9"]
                   and (o["prec8"] > r["prec8"] or o["rec9"] > r["rec9"])) for o in rows)
        flags.append(dom)
    return flags


def write(rows, g):
    flags = pareto_flags(rows)
    L = ["# simhash feature-scheme exploration", "",
         "Generated by `/usr/bin/python3 test/quality/explore.py`. Ground truth: `groundtruth.py`.", "",
         "```", G.summary(g), "```", "",
         "Columns: `within` = all doc pairs (of the deduplicated corpus) with Hamming <= k (exact, brute force); "
         "`prec@0.8` = share of those with 3-shingle Jaccard >= 0.8; `prec@0.5` = share with J >= 0.5; "
         "`rec@0.9`/`rec@0.8` = share of ground-truth pairs with J >= 0.9 / 0.8 within k; "
         "`dominated` = some other (scheme, k) row is at least as good on both prec@0.8 and rec@0.9 and better on one; "
         "`CN uni/bi` = Hamming(妈妈喊你来吃饭, 妈妈叫你来吃饭) with cjk=unigram / bigram.", "",
         "| scheme | k | within | prec@0.8 | prec@0.5 | rec@0.9 | rec@0.8 | dominated | CN uni | CN bi |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for r, f in zip(rows, flags):
        L.append(f"| {r['scheme']} | {r['k']} | {r['within']} | {r['prec8']:.3f} | {r['prec5']:.3f} | "
                 f"{r['rec9']:.3f} | {r['rec8']:.3f} | {'yes' if f else 'no'} | {r['cn_uni']} | {r['cn_bi']} |")
    L += ["", "Timings (s): " + ", ".join(
        f"{r['scheme']} fp {r['t_fp']:.0f} pairs {r['t_pairs']:.0f}" for r in rows if r["k"] == 0)]
    with open(OUT, "w") as f:
        f.write("\n".join(L) + "\n")


if __name__ == "__main__":
    names = sys.argv[1:] or list(SCHEMES)
    main(names)
