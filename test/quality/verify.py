"""Independent cross-checks (slow-ish):
1. ground truth vs brute-force Jaccard on a random subset of 3000 docs;
2. for one scheme, enumerate ALL pairs within Hamming k<=3 by pigeonhole on four 16-bit
   blocks, compute their Jaccard directly, and compare precision/recall with explore.py.
Usage: /usr/bin/python3 test/quality/verify.py [scheme]"""
import os, sys, itertools
import numpy as np
HERE = os.path.dirname(os.path.abspath(__file__)); sys.path.insert(0, HERE)
import groundtruth as G, simhash_ref as R, explore as E

g = G.load_or_build()
udocs, _ = G.dedup_docs()
toks = [R.tokenize(x) for _, x in udocs]
sets, _ = G.shingle_sets(toks)
pys = [set(s.tolist()) for s in sets]
def jac(a, b):
    i = len(pys[a] & pys[b]); return i / (len(pys[a]) + len(pys[b]) - i)
gt = {(int(i), int(j)): float(x) for i, j, x in zip(g["i"], g["j"], g["jac"])}
rng = np.random.default_rng(0)
sub = np.sort(rng.choice(len(udocs), 3000, replace=False))
bad = 0; cnt = 0
for a, b in itertools.combinations(sub.tolist(), 2):
    x = jac(a, b)
    if x >= 0.5:
        cnt += 1
        if abs(gt.get((a, b), -1) - x) > 1e-12: bad += 1
    elif (a, b) in gt: bad += 1
print(f"subset brute force: {cnt} pairs J>=0.5 among 3000 docs, mismatches {bad}")

name = sys.argv[1] if len(sys.argv) > 1 else "w1-tf"
kind, w = E.SCHEMES[name]
ths = [R.token_hashes(t) for t in toks]
fp = np.array([R.fingerprint(E.feats_for(kind, tk, th), w) for tk, th in zip(toks, ths)], dtype=np.uint64)
pairs = set()
for blk in range(4):
    key = (fp >> np.uint64(16 * blk)) & np.uint64(0xFFFF)
    o = np.argsort(key, kind="stable"); ks = key[o]
    br = np.flatnonzero(np.diff(ks)) + 1
    for grp in np.split(o, br):
        if len(grp) < 2: continue
        grp = np.sort(grp)
        ii, jj = np.triu_indices(len(grp), 1)
        a, b = grp[ii], grp[jj]
        d = E.hamming(fp[a], fp[b])
        for x, y in zip(a[d <= 3].tolist(), b[d <= 3].tolist()): pairs.add((x, y))
J = np.array([jac(a, b) for a, b in pairs])
d = np.array([bin(int(fp[a]) ^ int(fp[b])).count("1") for a, b in pairs])
n8 = sum(1 for v in gt.values() if v >= 0.8); n9 = sum(1 for v in gt.values() if v >= 0.9)
for k in range(4):
    m = d <= k
    print(f"{name} k={k}: within {m.sum()} prec@0.8 {np.mean(J[m] >= 0.8):.3f} "
          f"rec@0.9 {np.sum(J[m] >= 0.9) / n9:.3f} rec@0.8 {np.sum(J[m] >= 0.8) / n8:.3f}")
