"""Weighted combinations of word-n-gram features (spec v1.1: unigram feature hash =
token hash, see simhash_ref.UNIGRAM_RAW).  Same metrics as explore.py; APPENDS a
section to explore_results.md (does not rewrite the earlier tables).

A scheme is a list of components (n, mode, weight):
  mode 'tf'     : every occurrence of an n-feature adds `weight` (integer);
  mode 'binary' : every DISTINCT n-feature hash adds `weight` once (integer);
  mode 'log'    : every DISTINCT n-feature hash adds 1 + ln(count) (float64, math.log).
Each component uses its own feature list (shingle_features(th, n)); hashes of
different components are NOT merged/deduplicated against each other.
V[i] = sum over terms of (+w if bit i of h else -w); bit i = 1 iff V[i] > 0 (tie -> 0).
Integer schemes: exact int64 arithmetic (order irrelevant).
Float schemes (any 'log' component): float64, terms added sequentially in this fixed
order: components in listed order; inside a component distinct hashes in ascending
unsigned order, each distinct hash contributing one term (tf: weight*count as float,
exact integer)."""
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import explore as E  # noqa: E402
import groundtruth as G  # noqa: E402
import simhash_ref as R  # noqa: E402

# SIMHASH_UNIGRAM_RAW=0 -> draft-v1 unigram hashing (rehash of the token hash), for comparison
# this sweep measured the unadopted raw-unigram variant unless told otherwise
R.UNIGRAM_RAW = os.environ.get("SIMHASH_UNIGRAM_RAW") != "0"
TAG = "" if R.UNIGRAM_RAW else " [v1 rehash]"

OUT = os.path.join(HERE, "explore_results.md")
CN = ("妈妈喊你来吃饭", "妈妈叫你来吃饭")

SCHEMES = {
    "w1+w3-tf (1,1)": [(1, "tf", 1), (3, "tf", 1)],
    "w1+w3-tf (2,3) [=a 1.5]": [(1, "tf", 2), (3, "tf", 3)],
    "w1+w3-tf (1,2) [=a 2 =uni 0.5]": [(1, "tf", 1), (3, "tf", 2)],
    "w1+w3-tf (1,3) [=a 3]": [(1, "tf", 1), (3, "tf", 3)],
    "w1log+w3tf1": [(1, "log", None), (3, "tf", 1)],
    "w1log+w3tf2": [(1, "log", None), (3, "tf", 2)],
    "w1bin+w3tf1": [(1, "binary", 1), (3, "tf", 1)],
    "w1bin+w3tf2": [(1, "binary", 1), (3, "tf", 2)],
    "w1+w2+w3-tf (1,1,1)": [(1, "tf", 1), (2, "tf", 1), (3, "tf", 1)],
    "w1+w4-tf (1,1)": [(1, "tf", 1), (4, "tf", 1)],
    "w2+w3-tf (1,1)": [(2, "tf", 1), (3, "tf", 1)],
}


def _bits(u):
    return np.unpackbits(u.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1,
                         bitorder="little")  # column i = bit i


def fingerprint_mix(th, comps):
    is_float = any(m == "log" for _, m, _ in comps)
    us, ws = [], []
    for n, mode, wt in comps:
        f = R.shingle_features(th, n)
        if len(f) == 0:
            continue
        u, c = np.unique(f, return_counts=True)  # ascending unsigned
        if mode == "tf":
            w = c.astype(np.int64) * wt
        elif mode == "binary":
            w = np.full(len(u), wt, dtype=np.int64)
        elif mode == "log":
            w = np.array([1.0 + math.log(x) for x in c.tolist()], dtype=np.float64)
        else:
            raise ValueError(mode)
        us.append(u)
        ws.append(w.astype(np.float64) if is_float else w)
    if not us:
        return 0
    u = np.concatenate(us)
    w = np.concatenate(ws)
    sgn = _bits(u).astype(np.int8) * 2 - 1  # +1 / -1
    if is_float:
        terms = sgn.astype(np.float64) * w[:, None]
        V = np.cumsum(terms, axis=0)[-1]  # strictly sequential float64 sum, fixed order
    else:
        V = (sgn.astype(np.int64) * w[:, None]).sum(axis=0)
    return int(np.packbits((V > 0).astype(np.uint8), bitorder="little").view("<u8")[0])


def self_check():
    """Cross-check fingerprint_mix against a literal per-term loop on a few texts."""
    texts = ["the quick brown fox jumps over the lazy dog the quick brown fox",
             CN[0], CN[1], "a", "a b", "x y z", "Ｈｅｌｌｏ　ＷＯＲＬＤ Straße déjà-vu 東京タワー"]
    for comps in SCHEMES.values():
        for t in texts:
            th = R.token_hashes(R.tokenize(t))
            V = [0.0 if any(m == "log" for _, m, _ in comps) else 0] * 64
            for n, mode, wt in comps:
                f = [int(x) for x in R.shingle_features(th, n)]
                cnt = {}
                for h in f:
                    cnt[h] = cnt.get(h, 0) + 1
                for h in sorted(cnt):
                    w = 1.0 + math.log(cnt[h]) if mode == "log" else (wt * cnt[h] if mode == "tf" else wt)
                    if isinstance(V[0], float):
                        w = float(w)
                    for i in range(64):
                        V[i] = V[i] + (w if (h >> i) & 1 else -w)
            ref = sum(1 << i for i in range(64) if V[i] > 0)
            assert ref == fingerprint_mix(th, comps), (comps, t)
    # unigram feature == token hash (v1.1)
    th = R.token_hashes(["hello"])
    assert not R.UNIGRAM_RAW or int(R.shingle_features(th, 1)[0]) == R._xxh(b"hello")


def main(names):
    self_check()
    t0 = time.time()
    g = G.load_or_build(verbose=False)
    udocs, _ = G.dedup_docs()
    assert len(udocs) == int(g["n_docs"])
    ths = [R.token_hashes(R.tokenize(x, "unigram")) for _, x in udocs]
    print(f"prep {time.time() - t0:.1f}s", flush=True)
    gi, gj, jac = g["i"], g["j"], g["jac"]
    m8, m9 = jac >= 0.8, jac >= 0.9
    n8, n9 = int(m8.sum()), int(m9.sum())
    rows = []
    for name in names:
        comps = SCHEMES[name]
        t1 = time.time()
        fp = np.array([fingerprint_mix(th, comps) for th in ths], dtype=np.uint64)
        t2 = time.time()
        allh = E.hamming_hist_all_pairs(fp, kmax=4)
        t3 = time.time()
        dg = E.hamming(fp[gi], fp[gj])
        fa = [fingerprint_mix(R.token_hashes(R.tokenize(s, "unigram")), comps) for s in CN]
        cn = bin(fa[0] ^ fa[1]).count("1")
        cum = np.cumsum(allh)
        for k in (2, 3, 4):
            within = dg <= k
            tp8 = int((within & m8).sum())
            rows.append(dict(scheme=name + TAG, k=k, within=int(cum[k]), prec8=tp8 / cum[k],
                             rec9=int((within & m9).sum()) / n9, rec8=tp8 / n8, cn=cn))
            r = rows[-1]
            print(f"{name}{TAG} k={k}: within {r['within']} prec@0.8 {r['prec8']:.3f} rec@0.9 "
                  f"{r['rec9']:.3f} rec@0.8 {r['rec8']:.3f} CN {cn}  (fp {t2 - t1:.0f}s pairs {t3 - t2:.0f}s)",
                  flush=True)
        with open(os.path.join(G.CACHE_DIR, "explore2_rows.txt"), "a") as f:
            for r in rows[-3:]:
                f.write(repr(r) + "\n")
    return rows


if __name__ == "__main__":
    main(sys.argv[1:] or list(SCHEMES))
