#!/usr/bin/env python3
"""Does a 128-bit simhash separate near-duplicates better than the 64-bit
one at equal recall?  Measured on apt's English descriptions, against the
exact ground truth of evaluate.py (word 3-shingle Jaccard), without a
database: fingerprints come from the reference implementation's definitions
(test/reference/simhash_ref.py: simhash, simhash128), voted with numpy.

    /usr/bin/python3 test/quality/fp128.py [--quick]

For each feature scheme (the default, and the recipe's words {1} binary),
the 64-bit fingerprint (word 0 of the 128-bit one) and the 128-bit one
(words 0 and 1) are measured as evaluate.py measures a scheme: for every
radius k, "within" = ALL document pairs within Hamming distance k (brute
force over the 1.9 billion pairs), precision = share of them with Jaccard
>= t, recall = share of the ground-truth pairs with Jaccard >= t that are
within k.  Radii are integers, so the two widths are compared at equal
recall by interpolating between consecutive radii: taking the pairs at
distance k + 1 with probability p moves hits and "within" linearly, so
precision at recall r is r * truth / within(k + p).  The "candidates"
column is within(k + p): the pairs a search at that recall returns, which
the candidates-then-verification recipe must verify.

How much the choice of one hash function weighs: words 2..7 are voted like
word 1 with seeds 2..7 (not a stored format); the spread columns give the
mean and range of precision over the eight words alone (64 bits) and over
the pairs (0,1), (2,3), (4,5), (6,7) (128 bits).

Needs Debian's python3-numpy, python3-xxhash and unicode-data.  About 12 to 15
minutes on the development machine (the brute force takes most); --quick
measures the default scheme with words 0..3 only (about 5 minutes).
Report: docs/reports/quality_128.md.
"""
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
import corpus  # noqa: E402  (tools/corpus.py)
import groundtruth as G  # noqa: E402
import simhash_ref as ref  # noqa: E402
import xxhash  # noqa: E402

THRESHOLDS = (0.7, 0.8, 0.9)
RECALLS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
KMAX = {64: 16, 128: 32}
# 64-bit words measured: word 0 is simhash(), words 0 and 1 simhash128();
# the others (seeds 2..7) show how much one choice of hash function weighs
NWORDS = 8

# name -> (shingle sizes, weighting): the default scheme, and the
# recall-oriented fingerprint of the candidates-then-verification recipe
SCHEMES = {
    "default: words {1,3}, tf": ((1, 3), "tf"),
    "recipe: words {1}, binary": ((1,), "binary"),
}

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H = np.uint64(0x0101010101010101)
_S1, _S2, _S4, _S56 = (np.uint64(s) for s in (1, 2, 4, 56))


def popcount_xor(a, b, out, tmp):
    """out = popcount(a ^ b), elementwise (SWAR, in place)"""
    np.bitwise_xor(a, b, out=out)
    np.right_shift(out, _S1, out=tmp); tmp &= _M1; out -= tmp
    np.right_shift(out, _S2, out=tmp); tmp &= _M2; out &= _M2; out += tmp
    np.right_shift(out, _S4, out=tmp); out += tmp; out &= _M4
    out *= _H; out >>= _S56
    return out


def hist_all_pairs(words, codes, R=128, C=2048):
    """Exact count of unordered pairs (i < j) at each Hamming distance
    0..kmax of each code, in one pass over the pairs.  words: uint64 arrays
    of equal length; codes: (word indices, kmax), a code's distance summed
    over its words."""
    n = len(words[0])
    out = [np.zeros(kmax + 1, dtype=np.int64) for _, kmax in codes]
    used = sorted({w for ws, _ in codes for w in ws})
    pc = {w: np.empty((R, C), dtype=np.uint64) for w in used}
    d = np.empty((R, C), dtype=np.uint64)
    t = np.empty_like(d)
    for i0 in range(0, n, R):
        r = min(R, n - i0)
        for j0 in range(i0, n, C):
            c = min(C, n - j0)
            for w in used:
                popcount_xor(words[w][i0:i0 + r, None], words[w][None, j0:j0 + c],
                             pc[w][:r, :c], t[:r, :c])
            for (ws, kmax), hist in zip(codes, out):
                dv = d[:r, :c]
                np.copyto(dv, pc[ws[0]][:r, :c])
                for w in ws[1:]:
                    dv += pc[w][:r, :c]
                if j0 == i0:
                    dv[np.tril_indices(r, 0, c)] = 255  # self and j <= i
                sel = dv[dv <= kmax]
                if sel.size:
                    hist += np.bincount(sel.astype(np.int64), minlength=kmax + 1)
    return out


def distance(words, i, j):
    d = np.zeros(len(i), dtype=np.int64)
    tmp = np.empty(len(i), dtype=np.uint64)
    for fp in words:
        d += popcount_xor(fp[i], fp[j], np.empty(len(i), dtype=np.uint64), tmp).astype(np.int64)
    return d


def feature_hashes(tok_hashes, sizes):
    """The 64-bit feature hashes of a token-hash list (simhash_ref.features,
    from tokens already hashed)"""
    out = []
    for n in sizes:
        if len(tok_hashes) >= n:
            out.extend(ref.h64(ref.le(tok_hashes[p - n + 1:p + 1]))
                       for p in range(n - 1, len(tok_hashes)))
        elif tok_hashes:
            out.append(ref.h64(ref.le(tok_hashes)))
    return out


def word(h, w):
    """Word w of a feature whose 64-bit hash is h (simhash_ref.feature_word)"""
    return h if w == 0 else xxhash.xxh3_64_intdigest(h.to_bytes(8, "little"), seed=w)


def vote_words(per_doc):
    """Unit votes: per_doc is a list of uint64 arrays of feature hashes (one
    per document, every vote listed); returns the fingerprints as uint64,
    bit i set iff more than half the votes have it (ties give 0)."""
    n = len(per_doc)
    fp = np.zeros(n, dtype=np.uint64)
    for d0 in range(0, n, 2000):
        chunk = per_doc[d0:d0 + 2000]
        lens = np.array([len(a) for a in chunk], dtype=np.int64)
        flat = np.concatenate([a for a in chunk if len(a)])
        bits = np.unpackbits(flat.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        nz = lens > 0
        counts = np.zeros((len(chunk), 64), dtype=np.int64)
        counts[nz] = np.add.reduceat(bits, starts[nz], axis=0, dtype=np.int64)
        set_ = (2 * counts > lens[:, None]).astype(np.uint8)
        fp[d0:d0 + len(chunk)] = np.packbits(set_, axis=1, bitorder="little").view(np.uint64)[:, 0]
    return fp


def fingerprints(tok_hashes, sizes, weighting, nwords):
    """Words 0..nwords-1 of every document's fingerprint, each voted like
    the 64-bit fingerprint on feature words of its own seed (unit weights
    only: tf or binary); words 0 and 1 make the 128-bit fingerprint."""
    per_word = [[] for _ in range(nwords)]
    memo = {}
    for th in tok_hashes:
        f = feature_hashes(th, sizes)
        if weighting == "binary":
            f = list(dict.fromkeys(f))
        else:
            assert weighting == "tf"
        rows = []
        for h in f:
            v = memo.get(h)
            if v is None:
                v = memo[h] = [word(h, w) for w in range(nwords)]
            rows.append(v)
        a = np.array(rows, dtype=np.uint64).reshape(-1, nwords)
        for w in range(nwords):
            per_word[w].append(a[:, w])
    return [vote_words(p) for p in per_word], memo


def curves(words, codes, gi, gj, jac):
    """For each code (word indices, kmax): within[k], and for each threshold
    hits[k] and the number of truth pairs"""
    hists = hist_all_pairs(words, codes)
    out = []
    for (ws, kmax), h in zip(codes, hists):
        d = distance([words[w] for w in ws], gi, gj)
        c = {"within": np.cumsum(h)}
        for t in THRESHOLDS:
            m = jac >= t - 1e-12
            c[t] = (np.array([int(((d <= k) & m).sum()) for k in range(kmax + 1)]), int(m.sum()))
        out.append(c)
    return out


def at_recall(c, t, r):
    """(fractional radius, candidates, precision) at recall r for threshold
    t, interpolated between consecutive radii; None if out of reach"""
    hits, truth = c[t]
    want = r * truth
    for k in range(len(hits) - 1):
        if hits[k] <= want <= hits[k + 1] and hits[k + 1] > hits[k]:
            p = (want - hits[k]) / (hits[k + 1] - hits[k])
            within = c["within"][k] + p * (c["within"][k + 1] - c["within"][k])
            return k + p, within, want / within
    return None


def precision_at(c, t_prec, k):
    hits, _ = c[t_prec]
    return hits[k] / c["within"][k]


def independence_check(memo):
    """Each bit of word 1 against each bit of word 0 over the corpus's
    distinct features: the share of features where they agree"""
    h0 = np.fromiter(memo.keys(), dtype=np.uint64, count=len(memo))
    h1 = np.fromiter((v[1] for v in memo.values()), dtype=np.uint64, count=len(memo))
    b0 = np.unpackbits(h0.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little").astype(np.int8)
    b1 = np.unpackbits(h1.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little").astype(np.int8)
    s0 = 2 * b0.astype(np.float64) - 1
    s1 = 2 * b1.astype(np.float64) - 1
    corr = (s0.T @ s1) / len(h0)  # 64 x 64 correlations of +-1 bits
    ones = b1.mean(axis=0)
    return len(h0), float(np.abs(corr).max()), float(np.abs(ones - 0.5).max())


def fmt_spread(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    return f"{np.mean(vals):.3f} [{min(vals):.3f}-{max(vals):.3f}]"


def main():
    quick = "--quick" in sys.argv
    nwords = 4 if quick else NWORDS
    t0 = time.time()
    raw = corpus.load()
    docs, collapsed = G.dedup_docs(raw)
    toks = [ref.tokens(text, "unigram") for _, text in docs]
    gi, gj, jac = G.pairs_of_tokens(toks)
    print(f"{len(raw)} descriptions, {collapsed} identical texts collapsed, {len(docs)} documents; "
          f"ground truth: {len(jac)} pairs with J >= 0.5, "
          + ", ".join(f"{int((jac >= t - 1e-12).sum())} >= {t}" for t in THRESHOLDS)
          + f" ({time.time() - t0:.0f} s)", flush=True)
    tok_hashes = [[ref.h64(t.encode("utf-8")) for t in ts] for ts in toks]

    schemes = dict(list(SCHEMES.items())[:1]) if quick else SCHEMES
    for name, (sizes, weighting) in schemes.items():
        t1 = time.time()
        words, memo = fingerprints(tok_hashes, sizes, weighting, nwords)
        # the fast path against the reference's own functions, on a sample
        sample = range(0, len(docs), 97)
        bad = [i for i in sample
               if (int(words[0][i]) << 64 | int(words[1][i]))
               != ref.simhash128(docs[i][1], sizes, weighting)
               or int(words[0][i]) != ref.simhash(docs[i][1], sizes, weighting)]
        if bad:
            sys.exit(f"{name}: fingerprints differ from the reference for documents {bad[:10]}")
        nfeat, maxcorr, maxbias = independence_check(memo)
        print(f"\n== {name}  (shingles {set(sizes)}, {weighting})", flush=True)
        print(f"fingerprints of {len(docs)} documents in {time.time() - t1:.0f} s; "
              f"{len(sample)} of them recomputed by simhash_ref.simhash and simhash128: equal")
        print(f"word 1 against word 0 over the {nfeat} distinct feature hashes: largest "
              f"|correlation| of a bit pair {maxcorr:.4f}, largest bias of a word-1 bit "
              f"{maxbias:.4f} (1/sqrt(n) = {1 / np.sqrt(nfeat):.4f})")

        # 64 bits: each word alone (word 0 is simhash()); 128 bits: words
        # (0, 1) are simhash128(), (2, 3), ... the same with other seeds
        codes64 = [((w,), KMAX[64]) for w in range(nwords)]
        codes128 = [((w, w + 1), KMAX[128]) for w in range(0, nwords - 1, 2)]
        t2 = time.time()
        cs = curves(words, codes64 + codes128, gi, gj, jac)
        c64s, c128s = cs[:len(codes64)], cs[len(codes64):]
        print(f"all-pairs histograms of {len(codes64)} 64-bit and {len(codes128)} 128-bit "
              f"codes in {time.time() - t2:.0f} s", flush=True)

        for label, c in (("simhash(): 64 bits, word 0", c64s[0]),
                         ("simhash128(): 128 bits, words 0 and 1", c128s[0])):
            print(f"\n-- {label}: precision and recall by radius k")
            print("   k     within  " + "  ".join(f"prec{t} rec{t}" for t in THRESHOLDS))
            for k in range(len(c["within"])):
                cells = []
                for t in THRESHOLDS:
                    hits, truth = c[t]
                    w = c["within"][k]
                    cells.append(f"{hits[k] / w if w else float('nan'):7.3f} {hits[k] / truth:6.3f}")
                print(f"  {k:2d} {c['within'][k]:10d}  " + "  ".join(cells))

        for t in THRESHOLDS:
            print(f"\n-- equal recall, J >= {t}: precision, candidates (pairs within the "
                  "radius) and radius of each width at the same recall")
            print("   simhash() = word 0; simhash128() = words 0+1; spread: mean [min-max] over "
                  f"words 0..{nwords - 1} alone (64) and word pairs (0,1), (2,3), ... (128)")
            print("  recall |  64: k  candidates  prec | 128: k  candidates  prec | cand 64/128 "
                  "| prec 128-64 | 64 prec spread        | 128 prec spread")
            for r in RECALLS:
                a = at_recall(c64s[0], t, r)
                c = at_recall(c128s[0], t, r)
                if a is None or c is None:
                    print(f"  {r:6.2f} | out of reach (k64 <= {KMAX[64]}, k128 <= {KMAX[128]})")
                    continue
                s64 = [x[2] if x else None for x in (at_recall(cc, t, r) for cc in c64s)]
                s128 = [x[2] if x else None for x in (at_recall(cc, t, r) for cc in c128s)]
                print(f"  {r:6.2f} | {a[0]:5.2f} {a[1]:11.0f} {a[2]:5.3f} | {c[0]:5.2f} {c[1]:11.0f} "
                      f"{c[2]:5.3f} | {a[1] / c[1]:11.2f} | {c[2] - a[2]:+11.3f} "
                      f"| {fmt_spread(s64):21s} | {fmt_spread(s128)}")

        # the operating point of docs/reports/quality.md: k = 3 of 64 bits, precision
        # against J >= 0.8, recall of J >= 0.9
        c64, c128 = c64s[0], c128s[0]
        hits9, truth9 = c64[0.9]
        r9 = hits9[3] / truth9
        k, within, _ = at_recall(c128, 0.9, r9)
        k0 = int(k)
        p = k - k0
        h8 = c128[0.8][0]
        hits8 = h8[k0] + p * (h8[k0 + 1] - h8[k0])
        print(f"\n-- the operating point of docs/reports/quality.md (64 bits, k = 3): recall (J >= 0.9) "
              f"{r9:.3f}, precision (J >= 0.8) {precision_at(c64, 0.8, 3):.3f}, "
              f"{c64['within'][3]} pairs; 128 bits at the same recall: k = {k:.2f}, "
              f"precision (J >= 0.8) {hits8 / within:.3f}, {within:.0f} pairs", flush=True)
    print(f"\ndone in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
