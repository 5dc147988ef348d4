"""Independent Python reference implementation of the simhash fingerprint spec
(the draft spec this session started from; the final algorithm is in
README.md, "The fingerprint algorithm").

simhash(text, shingle=n, weighting='tf'|'binary'|'log', cjk='unigram'|'bigram')
returns the fingerprint as an unsigned Python int (0 <= fp < 2**64).

Building blocks are exposed so that explore.py can tokenise once and try many
feature schemes:
  tokenize(text, cjk)            -> list of token strings (normalised)
  token_hashes(tokens)           -> np.uint64 array of XXH3_64(utf8(token))
  shingle_features(th, n)        -> np.uint64 array of feature hashes (spec step 6)
  fingerprint(feats, weighting)  -> int  (spec steps 7-9)
"""
import math
import re

import numpy as np
import xxhash

UNICODE_DIR = "/usr/share/unicode"
_xxh = xxhash.xxh3_64_intdigest


def _is_ideograph(cp):
    return (0x3400 <= cp <= 0x4DBF or 0x4E00 <= cp <= 0x9FFF or 0xF900 <= cp <= 0xFAFF
            or 0x20000 <= cp <= 0x323AF or 0x3040 <= cp <= 0x309F or 0x30A0 <= cp <= 0x30FF
            or 0x31F0 <= cp <= 0x31FF or 0xFF66 <= cp <= 0xFF9F or 0x3100 <= cp <= 0x312F
            or 0x31A0 <= cp <= 0x31BF)


_IDEO_RANGES = [(0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x323AF),
                (0x3040, 0x309F), (0x30A0, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F),
                (0x3100, 0x312F), (0x31A0, 0x31BF)]


def _load_casefold():
    fold = {}
    with open(f"{UNICODE_DIR}/CaseFolding.txt", encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            code, status, mapping = [x.strip() for x in line.split(";")[:3]]
            if status in ("C", "S"):
                fold[int(code, 16)] = int(mapping, 16)
    return fold


def _load_word_codepoints():
    """Set-like list of (lo, hi) ranges of code points with gc L*, M*, N*."""
    ranges = []
    first = None
    with open(f"{UNICODE_DIR}/UnicodeData.txt", encoding="utf-8") as f:
        for line in f:
            fields = line.split(";")
            cp = int(fields[0], 16)
            name, gc = fields[1], fields[2]
            if name.endswith(", First>"):
                first = cp
                continue
            lo = first if name.endswith(", Last>") else cp
            first = None
            if gc[0] in "LMN":
                ranges.append((lo, cp))
    return ranges


def _subtract_ideographs(ranges):
    """Remove ideograph code points from word ranges; merge adjacent ranges."""
    out = []
    for lo, hi in ranges:
        segs = [(lo, hi)]
        for ilo, ihi in _IDEO_RANGES:
            nxt = []
            for a, b in segs:
                if b < ilo or a > ihi:
                    nxt.append((a, b))
                else:
                    if a < ilo:
                        nxt.append((a, ilo - 1))
                    if b > ihi:
                        nxt.append((ihi + 1, b))
            segs = nxt
        out.extend(segs)
    out.sort()
    merged = []
    for a, b in out:
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def _cls(ranges):
    def esc(cp):
        return "\\U%08x" % cp
    return "".join(esc(a) if a == b else esc(a) + "-" + esc(b) for a, b in ranges)


# ---- build lookup structures once ------------------------------------------
_FOLD = _load_casefold()
_NORM = {}  # translate table: code point -> normalised code point (only changes)
for _cp, _to in _FOLD.items():
    _NORM[_cp] = _to
for _cp in range(0xFF01, 0xFF5F):          # fullwidth ASCII, then case folding
    _a = _cp - 0xFEE0
    _NORM[_cp] = _FOLD.get(_a, _a)
_NORM[0x3000] = 0x20
_NORM = {k: v for k, v in _NORM.items() if k != v}

WORD_RANGES = _subtract_ideographs(_load_word_codepoints())
_WORD_CLS = _cls(WORD_RANGES)
_IDEO_CLS = _cls(sorted(_IDEO_RANGES))
_TOK_UNI = re.compile("[%s]+|[%s]" % (_WORD_CLS, _IDEO_CLS))
_TOK_RUN = re.compile("([%s]+)|([%s]+)" % (_WORD_CLS, _IDEO_CLS))


def normalize(text):
    return text.translate(_NORM)


def tokenize(text, cjk="unigram"):
    t = normalize(text)
    if cjk == "unigram":
        return _TOK_UNI.findall(t)
    if cjk != "bigram":
        raise ValueError(cjk)
    toks = []
    for word, ideo in _TOK_RUN.findall(t):
        if word:
            toks.append(word)
        elif len(ideo) == 1:
            toks.append(ideo)
        else:
            toks.extend(ideo[i:i + 2] for i in range(len(ideo) - 1))
    return toks


_TOKEN_CACHE = {}


def token_hashes(tokens):
    c = _TOKEN_CACHE
    out = []
    for tok in tokens:
        h = c.get(tok)
        if h is None:
            h = _xxh(tok.encode("utf-8"))
            if len(c) < 2_000_000:
                c[tok] = h
        out.append(h)
    return np.array(out, dtype=np.uint64)


_UNI_FEAT_CACHE = {}

# The shipped algorithm (README, "The fingerprint algorithm") rehashes
# unigrams like any shingle: UNIGRAM_RAW = False.  Setting it to True gives
# the variant measured in the second section of explore_results.md (a
# unigram feature's hash is the token hash itself, no rehash), which was
# not adopted.  n-shingles
# (n >= 2) are unchanged: XXH3_64 of the n little-endian 8-byte token hashes;
# a text with 1..n-1 tokens gives one n-feature of all its tokens.
# Set UNIGRAM_RAW = False to get draft v1 (unigram feature = XXH3_64 of the
# 8-byte little-endian token hash), which produced explore_results.md's first table.
UNIGRAM_RAW = False


def shingle_features(th, n):
    """Spec step 6. th: np.uint64 token hashes. Returns np.uint64 feature hashes."""
    m = len(th)
    if m == 0:
        return np.zeros(0, dtype=np.uint64)
    b = th.astype("<u8").tobytes()
    if m < n:
        return np.array([_xxh(b)], dtype=np.uint64)
    if n == 1 and UNIGRAM_RAW:
        return th.astype(np.uint64, copy=True)
    if n == 1:
        c = _UNI_FEAT_CACHE
        out = []
        for i, h in enumerate(th.tolist()):
            f = c.get(h)
            if f is None:
                f = _xxh(b[8 * i:8 * i + 8])
                if len(c) < 2_000_000:
                    c[h] = f
            out.append(f)
        return np.array(out, dtype=np.uint64)
    w = 8 * n
    return np.array([_xxh(b[8 * i:8 * i + w]) for i in range(m - n + 1)], dtype=np.uint64)


def char_features(tokens, q):
    """Extra scheme (not in spec v1): code-point q-grams of the normalised tokens
    joined by single spaces (i.e. separators collapsed to one U+0020, no leading/
    trailing space). Feature hash = XXH3_64(utf8(q code points)), seed 0. A text
    with 1..q-1 code points (after joining) has one feature: the whole string."""
    s = " ".join(tokens)
    L = len(s)
    if L == 0:
        return np.zeros(0, dtype=np.uint64)
    if L < q:
        return np.array([_xxh(s.encode("utf-8"))], dtype=np.uint64)
    return np.array([_xxh(s[i:i + q].encode("utf-8")) for i in range(L - q + 1)], dtype=np.uint64)


def weights_of(feats, weighting):
    """Spec step 7: returns (distinct hashes, weights)."""
    u, cnt = np.unique(feats, return_counts=True)
    if weighting == "tf":
        w = cnt.astype(np.int64)
    elif weighting == "binary":
        w = np.ones(len(u), dtype=np.int64)
    elif weighting == "log":
        # math.log (libm), not np.log: numpy's SIMD log can differ by 1 ulp,
        # which flips near-tie bits.
        w = np.array([1.0 + math.log(c) for c in cnt.tolist()], dtype=np.float64)
    else:
        raise ValueError(weighting)
    return u, w


def vote(u, w):
    """Spec steps 8-9 on distinct hashes u with weights w. Returns int."""
    if len(u) == 0:
        return 0
    bits = np.unpackbits(u.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1,
                         bitorder="little")  # column i = bit i of the hash
    if w.dtype.kind == "f":
        # Float weights ('log'): the sign of a floating-point sum depends on the
        # summation order when the true sum is 0 (e.g. equal weights on both
        # sides).  We define V[i] as the EXACT sum of the double weights
        # fl(1 + ln c): compute in float, and recompute near-zero bits exactly.
        V = 2.0 * (w @ bits.astype(np.float64)) - w.sum()
        near = np.nonzero(np.abs(V) < 1e-6)[0]
        if len(near):
            from fractions import Fraction
            fw = [Fraction(x) for x in w.tolist()]
            for i in near.tolist():
                col = bits[:, i].tolist()
                s = sum((fw[j] if col[j] else -fw[j]) for j in range(len(fw)))
                V[i] = 1.0 if s > 0 else 0.0
    else:
        V = 2 * (w @ bits.astype(np.int64)) - int(w.sum())
    fp = np.packbits((V > 0).astype(np.uint8), bitorder="little").view("<u8")[0]
    return int(fp)


def fingerprint(feats, weighting="tf"):
    u, w = weights_of(feats, weighting)
    return vote(u, w)


def simhash(text, shingle=1, weighting="tf", cjk="unigram"):
    toks = tokenize(text, cjk)
    return fingerprint(shingle_features(token_hashes(toks), shingle), weighting)


def simhash_slow(text, shingle=1, weighting="tf", cjk="unigram"):
    """Literal, loop-based transcription of the spec, for cross-checking."""
    cps = [ord(c) for c in text]
    norm = []
    for cp in cps:
        if 0xFF01 <= cp <= 0xFF5E:
            cp -= 0xFEE0
        elif cp == 0x3000:
            cp = 0x20
        cp = _FOLD.get(cp, cp)
        norm.append(cp)
    import bisect
    starts = [a for a, b in WORD_RANGES]

    def is_word(cp):
        i = bisect.bisect_right(starts, cp) - 1
        return i >= 0 and WORD_RANGES[i][0] <= cp <= WORD_RANGES[i][1]

    toks, cur, run = [], [], []

    def flush_run():
        if not run:
            return
        if cjk == "bigram" and len(run) > 1:
            for i in range(len(run) - 1):
                toks.append(run[i] + run[i + 1])
        else:
            toks.extend(run)
        run.clear()

    for cp in norm:
        ch = chr(cp)
        if _is_ideograph(cp):
            if cur:
                toks.append("".join(cur)); cur = []
            run.append(ch)
        elif is_word(cp):
            flush_run()
            cur.append(ch)
        else:
            flush_run()
            if cur:
                toks.append("".join(cur)); cur = []
    flush_run()
    if cur:
        toks.append("".join(cur))
    th = [xxhash.xxh3_64_intdigest(t.encode("utf-8")) for t in toks]
    n = shingle
    if not th:
        return 0
    if len(th) < n:
        groups = [th]
    else:
        groups = [th[i:i + n] for i in range(len(th) - n + 1)]
    if n == 1 and UNIGRAM_RAW:
        feats = list(th)  # v1.1: unigram feature hash = token hash, no rehash
    else:
        feats = [xxhash.xxh3_64_intdigest(b"".join(h.to_bytes(8, "little") for h in g)) for g in groups]
    counts = {}
    for f in feats:
        counts[f] = counts.get(f, 0) + 1
    from fractions import Fraction
    V = [Fraction(0)] * 64   # exact arithmetic (see vote())
    items = [(f, 1) for f in feats] if weighting == "tf" else \
        [(f, 1 if weighting == "binary" else Fraction(1 + math.log(c))) for f, c in counts.items()]
    for f, w in items:
        for i in range(64):
            V[i] += w if (f >> i) & 1 else -w
    return sum(1 << i for i in range(64) if V[i] > 0)


if __name__ == "__main__":
    import sys
    a, b = "妈妈喊你来吃饭", "妈妈叫你来吃饭"
    for cjk in ("unigram", "bigram"):
        print(cjk, tokenize(a, cjk))
        for n in (1, 2, 3):
            for wt in ("tf", "binary", "log"):
                fa, fb = simhash(a, n, wt, cjk), simhash(b, n, wt, cjk)
                assert fa == simhash_slow(a, n, wt, cjk)
                print(f"  n={n} {wt:6s} {fa:016x} {fb:016x} hamming={bin(fa ^ fb).count('1')}")
    print(tokenize("Ｈｅｌｌｏ　ＷＯＲＬＤ Straße ΣΑΣ déjà-vu 東京タワー x²", "unigram"))
