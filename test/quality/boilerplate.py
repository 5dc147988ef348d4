"""Templated pages: does the sentence signature pair copies, not templates?

On a site's pages the longest sentences are often the template's (a
licence notice, a navigation sentence), so the top-k longest-sentence
signature pairs every page of one template with every other.  This script
builds templated pages with known copies, computes the ground truth in
Python, and measures in PostgreSQL: plain simhash at several radii, the
signature, and the signature that skips the sentences
simhash_frequent_sentences finds.  It writes docs/reports/quality_boilerplate.md.

Documents
    Articles: apt's English descriptions with at least four sentences and
    400 letters or digits (tools/corpus.py), in a fixed random order.
    Templates: TEMPLATES sites, each two sentences before the article and
    two after it plus a short footer, the sentences taken from the longest
    sentences of other descriptions (so they are longer than most of an
    article's: the case that defeats the plain signature).
    A page is one article inside one template.  A share COPY_SHARE of the
    articles get a copy, edited once (a word changed, a sentence deleted,
    a sentence added), on the same site or, for half of them, on another
    site (a copied article).

Ground truth (independent of the extension)
    Two pages are near-duplicates when their articles are: Jaccard >= 0.8
    of the sets of 3-character runs of the articles' letters and digits
    (as test/quality/mixed.py defines it), every such pair found exactly.
    The template does not count: a reader ignores it.

Measured, each a set of candidate pairs, against the truth
    simhash(page) within k, for several k (the 64-bit fingerprint);
    the signature, 2 of 5 longest sentences shared;
    the signature skipping simhash_frequent_sentences(body, 0.01).
Precision is the share of candidates that are true pairs; recall the share
of true pairs among the candidates.  The target (--check): the signature
with skip at least as precise as simhash at the smallest k whose recall
reaches its own.

Usage: the extension installed, a server reachable through the PG*
variables, the extension created in its database:
    /usr/bin/python3 test/quality/boilerplate.py [--out FILE]
    /usr/bin/python3 test/quality/boilerplate.py --check
Needs apt's English descriptions (python3 tools/corpus.py --fetch) and
python3-numpy.  About 45 s.
"""
import argparse
import collections
import os
import random
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import mixed  # noqa: E402 (ground truth, psql and popcount helpers)

SEED = 20261127
ARTICLES = 2500
TEMPLATES = 8
COPY_SHARE = 0.3
MIN_SHARE = 0.01
RADII = (3, 6, 9, 12, 15)
SENTENCE = re.compile(r"(?<=[.!?])\s+")
WORDS = ["system", "library", "support", "program", "package", "server", "client",
         "network", "version", "module", "toolkit", "interface", "data", "files"]


def sentences(text):
    return [s for s in SENTENCE.split(" ".join(text.split())) if s]


def build(rng):
    """(documents, article index of each document), and the templates."""
    descs = [t for _, t in mixed.corpus.load()]
    rng.shuffle(descs)
    articles, rest = [], []
    for t in descs:
        ss = sentences(t)
        if len(articles) < ARTICLES and len(ss) >= 4 and len(mixed.letters_digits(t)) >= 400:
            articles.append(" ".join(ss))
        else:
            rest.append(t)
    long_sentences = sorted({s for t in rest[:20000] for s in sentences(t)
                             if 180 <= len(s) <= 260 and s.endswith(".")})
    rng.shuffle(long_sentences)
    templates = []
    for i in range(TEMPLATES):
        s = long_sentences[4 * i:4 * i + 4]
        templates.append((s[0] + " " + s[1], s[2] + " " + s[3] + " Site %d." % (i + 1)))
    docs, origin = [], []
    for a, text in enumerate(articles):
        site = rng.randrange(TEMPLATES)
        docs.append(page(templates[site], text))
        origin.append(a)
        if rng.random() < COPY_SHARE:
            if rng.random() < 0.5:
                site = (site + 1 + rng.randrange(TEMPLATES - 1)) % TEMPLATES
            docs.append(page(templates[site], edit(text, rng, articles)))
            origin.append(a)
    return docs, origin, articles


def page(template, article):
    return template[0] + "\n" + article + "\n" + template[1]


def edit(text, rng, articles):
    ss = sentences(text)
    kind = rng.randrange(3)
    if kind == 0:
        words = list(re.finditer(r"\b[A-Za-z]{4,}\b", text))
        m = rng.choice(words)
        return text[:m.start()] + rng.choice([w for w in WORDS if w != m.group(0).lower()]) + text[m.end():]
    if kind == 1:
        i = min(range(len(ss)), key=lambda k: len(ss[k]))     # the shortest
        return " ".join(s for k, s in enumerate(ss) if k != i)
    other = sentences(rng.choice(articles))
    return text + " " + min(other, key=len)


def simhash_pairs(fps, k):
    out = set()
    for i in range(len(fps) - 1):
        d = mixed.popcount64(fps[i + 1:] ^ fps[i])
        for j in np.nonzero(d <= k)[0]:
            out.add((i, i + 1 + int(j)))
    return out


def shared_pairs(sigs, need=2):
    by_hash = collections.defaultdict(list)
    for i, sig in enumerate(sigs):
        for h in sig:
            by_hash[h].append(i)
    counts = collections.Counter()
    for ids in by_hash.values():
        for x in range(len(ids)):
            for y in range(x + 1, len(ids)):
                counts[(ids[x], ids[y])] += 1
    return {p for p, c in counts.items() if c >= need}


def measure():
    rng = random.Random(SEED)
    docs, origin, articles = build(rng)
    arts = [articles[o] for o in origin]
    truth = set(mixed.all_pairs([mixed.grams(a) for a in arts]))
    rows = mixed.psql(
        "CREATE TEMP TABLE bp (id int, body text);\n" + mixed.copy_rows("bp", enumerate(docs)) +
        "CREATE TEMP TABLE bp_skip AS SELECT simhash_frequent_sentences(body, %s) AS skip FROM bp;\n"
        "COPY (SELECT id, simhash(body)::bigint, simhash_sentences(body, 5),"
        " simhash_sentences(body, 5, skip => (SELECT skip FROM bp_skip))"
        " FROM bp ORDER BY id) TO STDOUT WITH (FORMAT csv);\n"
        # against an exact count of every sentence's documents: none in
        # min_share of them missing, none below 0.9 of it returned
        "CREATE TEMP TABLE bp_df AS SELECT h, count(*) AS df"
        " FROM bp, unnest(simhash_sentences(body, 1000)) h GROUP BY h;\n"
        "COPY (SELECT cardinality(skip),"
        " NOT EXISTS (SELECT FROM bp_df WHERE df >= %s * (SELECT count(*) FROM bp) AND df >= 2"
        "             AND h <> ALL (skip))"
        " AND NOT EXISTS (SELECT FROM bp_df WHERE h = ANY (skip)"
        "                 AND df < 0.9 * %s * (SELECT count(*) FROM bp))"
        " FROM bp_skip) TO STDOUT WITH (FORMAT csv);\n" % (MIN_SHARE, MIN_SHARE, MIN_SHARE))
    *sig_rows, (nskip, exact) = rows
    fps = np.array([int(r[1]) & 0xFFFFFFFFFFFFFFFF for r in sig_rows], dtype=np.uint64)

    def arr(x):
        return [int(v) for v in x.strip("{}").split(",") if v]
    plain = [arr(r[2]) for r in sig_rows]
    skipped = [arr(r[3]) for r in sig_rows]

    def score(c):
        tp = len(c & truth)
        return (len(c), tp / len(c) if c else 1.0, tp / len(truth) if truth else 1.0)
    res = {"docs": len(docs), "articles": len(articles), "truth": len(truth),
           "copies": len(docs) - len(articles), "nskip": int(nskip), "exact": exact == "t",
           "simhash": [(k,) + score(simhash_pairs(fps, k)) for k in RADII],
           "signature": score(shared_pairs(plain)),
           "skip": score(shared_pairs(skipped))}
    _, p_skip, r_skip = res["skip"]
    reach = [row for row in res["simhash"] if row[3] >= r_skip]
    res["compare"] = reach[0] if reach else res["simhash"][-1]
    return res


def report(r, cmd):
    k, _, p_sim, r_sim = r["compare"]
    out = ["# Templated pages: the sentence signature with and without boilerplate", "",
           f"Measured by `{cmd}` (test/quality/boilerplate.py, whose docstring defines the set; "
           f"seed {SEED}).", "",
           f"{r['articles']} articles of apt's English descriptions in {TEMPLATES} templates, "
           f"{r['copies']} edited copies (half of them on another template): {r['docs']} pages. "
           f"Ground truth: {r['truth']} pairs whose articles have J ≥ 0.8 (character 3-runs, "
           "computed in Python; the template does not count).", "",
           f"`simhash_frequent_sentences(body, {MIN_SHARE})` returned {r['nskip']} sentences. Against an "
           "exact count of every sentence's documents in SQL: "
           + ("none in 1% of the pages is missing, and none returned is in fewer than 0.9% of them."
              if r["exact"] else "**the bounds of lossy counting do not hold**."),
           "", "| candidates | pairs | precision | recall |", "|---|---:|---:|---:|"]
    for k_, n, p, rec in r["simhash"]:
        out.append(f"| simhash within {k_} | {n} | {p:.3f} | {rec:.3f} |")
    n, p, rec = r["signature"]
    out.append(f"| signature, 2 of 5 longest sentences | {n} | {p:.3f} | {rec:.3f} |")
    n, p, rec = r["skip"]
    out.append(f"| signature skipping the frequent sentences | {n} | {p:.3f} | {rec:.3f} |")
    out += ["", "## Reading", "",
            "- Without skip the template's sentences are every page's longest: the signature pairs",
            "  the pages of one template with each other, whatever their articles.",
            f"- With skip, precision {p:.3f} at recall {rec:.3f}; "
            + (f"simhash reaches that recall first at k = {k}, with precision {p_sim:.3f} "
               f"(recall {r_sim:.3f})" if r_sim >= rec else
               f"simhash reaches it at no k measured (at k = {k}: precision {p_sim:.3f}, "
               f"recall {r_sim:.3f})")
            + ": the template weighs in the page's fingerprint, and a copy on another site is "
            "far from its original.",
            "- `test/quality/boilerplate.py --check` (run by `evaluate.py --check`) holds that the",
            "  signature with skip is at least as precise as simhash at equal recall.", ""]
    return "\n".join(out) + "\n"


def check():
    """The target a test run holds; returns the number of failures."""
    r = measure()
    k, _, p_sim, r_sim = r["compare"]
    _, p, rec = r["skip"]
    ok = p >= p_sim and r["exact"]
    print(f"{'' if ok else 'FAILED: '}templated pages: the signature with skip, precision {p:.3f} at "
          f"recall {rec:.3f}; simhash at k = {k}: precision {p_sim:.3f}, recall {r_sim:.3f}; "
          f"frequent sentences {'within' if r['exact'] else 'outside'} the bounds of lossy counting against an exact count")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "docs/reports/quality_boilerplate.md"))
    ap.add_argument("--check", action="store_true",
                    help="only the target, no report; exit 1 if it is missed")
    args = ap.parse_args()
    if args.check:
        sys.exit(check())
    text = report(measure(), "/usr/bin/python3 test/quality/boilerplate.py")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
