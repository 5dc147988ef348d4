#!/usr/bin/env python3
"""An independent reference implementation of simhash(text), written from
the specification in docs/fingerprint_format.md, not from the C
code.  check.py compares the two; they must agree bit for bit.

Needs Debian's python3-xxhash and unicode-data (Unicode 15.0 tables in
/usr/share/unicode, the version the C tables were generated from).
"""
import math
import xxhash

UCD = "/usr/share/unicode"

IDEOGRAPH_BLOCKS = [(0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF),
                    (0x20000, 0x323AF), (0x3040, 0x30FF), (0x31F0, 0x31FF),
                    (0xFF66, 0xFF9F), (0x3100, 0x312F), (0x31A0, 0x31BF)]


def _load():
    fold = {}
    with open(f"{UCD}/CaseFolding.txt", encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                code, status, target = [x.strip() for x in line.split(";")[:3]]
                if status in ("C", "S"):
                    fold[int(code, 16)] = int(target, 16)
    word, mark = set(), set()
    first = None
    with open(f"{UCD}/UnicodeData.txt", encoding="utf-8") as f:
        for line in f:
            fields = line.split(";")
            cp, name, cat = int(fields[0], 16), fields[1], fields[2]
            if name.endswith(", First>"):
                first = cp
                continue
            lo = first if name.endswith(", Last>") else cp
            first = None
            if cat[0] in "LMN":
                word.update(range(lo, cp + 1))
            if cat[0] == "M":
                mark.update(range(lo, cp + 1))
    return fold, word, mark


FOLD, WORD, MARK = _load()


def normalize(cp):
    if 0xFF01 <= cp <= 0xFF5E:
        cp -= 0xFF01 - 0x21
    elif cp == 0x3000:
        cp = 0x20
    return FOLD.get(cp, cp)


def is_word(cp):
    return cp in WORD


def is_ideograph(cp):
    return any(lo <= cp <= hi for lo, hi in IDEOGRAPH_BLOCKS) and is_word(cp)


def tokens(text, cjk="unigram"):
    """The tokens of a text, case-folded, as str."""
    out, word, run = [], [], []

    def end_word():
        if word:
            out.append("".join(word))
            word.clear()

    def end_run():
        if cjk == "bigram" and len(run) == 1:
            out.append(run[0])
        run.clear()

    for ch in text:
        cp = normalize(ord(ch))
        if is_ideograph(cp):
            end_word()
            if cjk == "unigram":
                out.append(chr(cp))
            elif run:
                out.append(run[-1] + chr(cp))
            run.append(chr(cp))
        elif is_word(cp):
            end_run()
            word.append(chr(cp))
        else:
            end_word()
            end_run()
    end_word()
    end_run()
    return out


def char_tokens(text):
    """The character tokens (tokens => 'chars'): each letter or digit
    (category L or N) after normalisation, with the marks that directly
    follow it; other marks and everything else dropped."""
    out = []
    attach = False
    for ch in text:
        cp = normalize(ord(ch))
        if cp in MARK:
            if attach:
                out[-1] += chr(cp)
        elif is_word(cp):
            out.append(chr(cp))
            attach = True
        else:
            attach = False
    return out


def h64(data):
    return xxhash.xxh3_64_intdigest(data)


def le(hashes):
    return b"".join(h.to_bytes(8, "little") for h in hashes)


def features(text, shingles=(1, 3), cjk="unigram", tokens_kind="words"):
    toks = char_tokens(text) if tokens_kind == "chars" else tokens(text, cjk)
    th = [h64(t.encode("utf-8")) for t in toks]
    out = []
    for n in sorted(shingles):
        if len(th) >= n:
            out.extend(h64(le(th[p - n + 1:p + 1])) for p in range(n - 1, len(th)))
        elif th:
            out.append(h64(le(th)))
    return out


def vote(weighted):
    """weighted: list of (hash, weight); bit i set iff its votes sum > 0"""
    fp = 0
    for i in range(64):
        v = sum(w if (h >> i) & 1 else -w for h, w in weighted)
        if v > 0:
            fp |= 1 << i
    return fp


def joined_tokens(text):
    """The tokens (cjk unigram) joined by spaces, no space between two
    consecutive single-ideograph tokens; and the number of code points of
    the tokens."""
    joined, prev_ideograph, length = "", False, 0
    for t in tokens(text, "unigram"):
        ideograph = len(t) == 1 and is_ideograph(ord(t))
        if joined and not (ideograph and prev_ideograph):
            joined += " "
        joined += t
        prev_ideograph = ideograph
        length += len(t)
    return joined, length


def chargram_features(text, n):
    """Character n-grams of the joined tokens."""
    joined, _ = joined_tokens(text)
    if not joined:
        return []
    if len(joined) < n:
        return [h64(joined.encode("utf-8"))]
    return [h64(joined[i:i + n].encode("utf-8")) for i in range(len(joined) - n + 1)]


def weighted_features(feats, weighting="tf"):
    """(hash, weight) of each vote, from the feature hashes of a text"""
    counts = {}
    for f in feats:
        counts[f] = counts.get(f, 0) + 1
    if weighting == "tf":
        return [(f, 1) for f in feats]
    if weighting == "binary":
        return [(f, 1) for f in counts]
    if weighting == "log":
        return [(f, round(1e6 * (1.0 + math.log(c)))) for f, c in counts.items()]
    raise ValueError(weighting)


def simhash(text, shingles=(1, 3), weighting="tf", cjk="unigram", chargram=0):
    feats = chargram_features(text, chargram) if chargram else features(text, shingles, cjk)
    return vote(weighted_features(feats, weighting))


# The 128-bit fingerprint (docs/fingerprint_format.md, "The 128-bit
# fingerprint"): the same features and weights voting on two 64-bit words.
# Word 0 is the 64-bit fingerprint's own feature hash h; word 1 is XXH3-64
# of h's 8 little-endian bytes with seed 1.

def feature_word(h, w):
    """Word w of a feature whose 64-bit hash is h"""
    return h if w == 0 else xxhash.xxh3_64_intdigest(h.to_bytes(8, "little"), seed=w)


def simhash128(text, shingles=(1, 3), weighting="tf", cjk="unigram", tokens_kind="words"):
    """The 128-bit fingerprint as an unsigned integer: word 0 (the 64-bit
    fingerprint) in the high 64 bits, word 1 in the low 64 bits; shown and
    stored as bit(128), most significant bit first."""
    weighted = weighted_features(features(text, shingles, cjk, tokens_kind), weighting)
    return (vote(weighted) << 64) | vote([(feature_word(h, 1), w) for h, w in weighted])


def bits128(fp):
    """The text form of a 128-bit fingerprint as bit(128): 128 characters 0/1"""
    return format(fp, "0128b")


def simhash_array(elements, weights=None):
    if weights is None:
        weights = [1.0] * len(elements)
    return vote([(h64(e.encode("utf-8")), w) for e, w in zip(elements, weights)
                 if e is not None and w is not None])


def jaccard(a, b, shingles=(3,), cjk="unigram", tokens_kind="words"):
    """Jaccard similarity of the sets of distinct features (1 if both empty)."""
    fa = set(features(a, shingles, cjk, tokens_kind))
    fb = set(features(b, shingles, cjk, tokens_kind))
    return len(fa & fb) / len(fa | fb) if fa or fb else 1.0


# The sentence signature (docs/fingerprint_format.md, "The sentence
# signature")
SENTENCE_ENDS = {0x0A, 0x0D, 0x2028, 0x2029, 0x3002, 0xFF61, 0xFF01, 0xFF1F, 0xFF1B, 0x2026}
SPACES = {0x20, 0x09, 0x0A, 0x0D, 0x0B, 0x0C, 0xA0, 0x3000, 0x2028, 0x2029}


def split_sentences(text):
    """The sentences of a text, each with the code point that ends it."""
    out, cur = [], []
    for i, ch in enumerate(text):
        cur.append(ch)
        cp = ord(ch)
        if cp in SENTENCE_ENDS or (ch in ".!?" and (i + 1 == len(text) or ord(text[i + 1]) in SPACES)):
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


def signed64(u):
    return u - (1 << 64) if u >= 1 << 63 else u


def sentence_signature(text, k=5):
    """The hashes of the k longest distinct sentences, as signed 64-bit
    integers, sorted."""
    lengths = {}
    for s in split_sentences(text):
        joined, length = joined_tokens(s)
        if length:
            lengths[h64(joined.encode("utf-8"))] = length
    longest = sorted(lengths.items(), key=lambda hl: (-hl[1], hl[0]))[:k]
    return sorted(signed64(h) for h, _ in longest)


M64 = (1 << 64) - 1


def fmix64(x):
    """MurmurHash3's 64-bit finaliser."""
    x ^= x >> 33
    x = (x * 0xff51afd7ed558ccd) & M64
    x ^= x >> 33
    x = (x * 0xc4ceb9fe1a85ec53) & M64
    x ^= x >> 33
    return x


def minhash(text, n=128, shingles=(3,), cjk="unigram", tokens_kind="words"):
    """MinHash signature as unsigned 64-bit values."""
    fs = set(features(text, shingles, cjk, tokens_kind))
    seeds = [fmix64(((i + 1) * 0x9E3779B97F4A7C15) & M64) for i in range(n)]
    return [min((fmix64(f ^ s) for f in fs), default=M64) for s in seeds]


def minhash_bands(sig, bands):
    rows = len(sig) // bands
    return [xxhash.xxh3_64_intdigest(le(sig[b * rows:(b + 1) * rows]), seed=b)
            for b in range(bands)]


if __name__ == "__main__":
    import sys
    for line in sys.stdin:
        print("%016x" % simhash(line.rstrip("\n")))
