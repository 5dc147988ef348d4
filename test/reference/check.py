#!/usr/bin/env python3
"""Check the frozen fingerprints against the independent reference.

  /usr/bin/python3 test/reference/check.py [--db] [--sample N]

1. Every golden vector in expected/fingerprint_golden.out (which pg_regress
   compares with the extension) is recomputed by simhash_ref.py from the
   inputs in test/golden/inputs.tsv: the 64-bit fingerprints, and the
   128-bit ones of those inputs and of test/golden/inputs128.tsv.
2. With --db (psql on PATH and PG* variables pointing at a database where
   the extension is installed), N documents of apt's package descriptions are
   fingerprinted by the extension and by the reference, under several
   feature schemes, at 64 and 128 bits, and must agree.
Prints one line per problem and a closing "N passed, N failed" line; exits
non-zero on any disagreement.
"""
import argparse
import csv
import glob
import io
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import simhash_ref as ref  # noqa: E402


def unescape(s):
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}[m.group(1)], s)


def golden_inputs(name="inputs.tsv"):
    with open(os.path.join(ROOT, "test/golden", name), encoding="utf-8") as f:
        for line in f:
            label, shingles, weighting, cjk, text = line.rstrip("\n").split("\t")
            sizes = tuple(int(x) for x in shingles.strip("{}").split(","))
            yield label, sizes, weighting, cjk, unescape(text)


def expected_values():
    """label -> value of the 64-bit golden fingerprints (16 hex digits) and,
    apart, of the 128-bit ones (128 binary digits)"""
    out, out128 = {}, {}
    with open(os.path.join(ROOT, "expected/fingerprint_golden.out"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^ (\S+)\s+\| ([0-9a-f]{16})$", line)
            if m:
                out[m.group(1)] = int(m.group(2), 16)
            m = re.match(r"^ (\S+)\s+\| ([01]{128})$", line)
            if m:
                out128[m.group(1)] = m.group(2)
    return out, out128


def check_golden128(expected128):
    """The 128-bit golden fingerprints, recomputed"""
    passed = failed = 0
    inputs = list(golden_inputs()) + list(golden_inputs("inputs128.tsv"))
    for label, sizes, weighting, cjk, text in inputs:
        want = ref.bits128(ref.simhash128(text, sizes, weighting, cjk))
        if expected128.get(label) == want:
            passed += 1
        else:
            failed += 1
            print(f"golden 128-bit {label}: reference {want}, expected {expected128.get(label)}")
    if len(expected128) != len(inputs):
        failed += 1
        print(f"golden 128-bit: {len(expected128)} values expected, {len(inputs)} inputs")
    return passed, failed


def corpus(n):
    files = sorted(glob.glob("/var/lib/apt/lists/*_main_i18n_Translation-en.lz4"))
    if not files:
        return []
    raw = subprocess.run(["lz4cat"] + files, capture_output=True, check=True).stdout
    docs, body = [], None
    for line in raw.decode("utf-8", "replace").split("\n"):
        if line.startswith("Description-en: "):
            if body is not None:
                docs.append("\n".join(body))
            body = [line[16:]]
        elif line.startswith(" ") and body is not None:
            body.append("" if line == " ." else line[1:])
    if body is not None:
        docs.append("\n".join(body))
    step = max(1, len(docs) // n)
    return docs[::step][:n]


def psql_csv(sql):
    res = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1"], input=sql,
                         capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"psql failed: {res.stderr.strip()}")
    return list(csv.reader(io.StringIO(res.stdout)))


def signed(u):
    return u - (1 << 64) if u >= 1 << 63 else u


def check_v11(docs):
    """simhash_chargrams, simhash_jaccard, minhash and minhash_bands (1.1),
    and character tokens (1.6), against the reference on a sample: each
    document and its successor."""
    docs = ["妈妈喊你来吃饭", "妈妈叫你来吃饭。", "Linux内核。系统 abc 日本語のテキスト",
            "ＡＢＣ 数据库 système Ωmega", "", "a", "ab cd",
            "cafe\u0301 \u0301x हिन्दी ½Ⅻ〇", "CAFÉ x हिंदी 1/2 ⅻ 0"] + docs[:300]
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False, encoding="utf-8") as f:
        w = csv.writer(f, quoting=csv.QUOTE_ALL)  # "" is an empty text, not NULL
        for i, d in enumerate(docs):
            w.writerow([i, d])
        path = f.name
    rows = psql_csv(
        "CREATE TEMP TABLE sample (id int, doc text);\n"
        f"\\copy sample FROM '{path}' WITH (FORMAT csv)\n"
        "COPY (SELECT a.id, simhash_chargrams(a.doc, 4), simhash_chargrams(a.doc, 5, 'binary'),"
        " simhash_jaccard(a.doc, b.doc), simhash_jaccard(a.doc, b.doc, '{1,2}', 'bigram'),"
        " minhash(a.doc, 16), minhash_bands(minhash(a.doc, 16), 4),"
        " simhash_jaccard(a.doc, b.doc, tokens => 'chars'),"
        " simhash_jaccard(a.doc, b.doc, '{1,2}', tokens => 'chars'),"
        " minhash(a.doc, 16, '{2,4}', tokens => 'chars'),"
        " simhash128(a.doc, '{1,3}', 'log', tokens => 'chars')"
        " FROM sample a JOIN sample b ON b.id = (a.id + 1) % (SELECT count(*) FROM sample)"
        " ORDER BY a.id) TO STDOUT WITH (FORMAT csv);\n")
    os.unlink(path)
    passed = failed = 0
    for row in rows:
        i = int(row[0])
        a, b = docs[i], docs[(i + 1) % len(docs)]
        want = [f"{ref.simhash(a, chargram=4):016x}",
                f"{ref.simhash(a, weighting='binary', chargram=5):016x}",
                ref.jaccard(a, b), ref.jaccard(a, b, (1, 2), "bigram"),
                "{" + ",".join(str(signed(v)) for v in ref.minhash(a, 16)) + "}",
                "{" + ",".join(str(signed(v)) for v in ref.minhash_bands(ref.minhash(a, 16), 4)) + "}",
                ref.jaccard(a, b, tokens_kind="chars"),
                ref.jaccard(a, b, (1, 2), tokens_kind="chars"),
                "{" + ",".join(str(signed(v)) for v in ref.minhash(a, 16, (2, 4), tokens_kind="chars")) + "}",
                ref.bits128(ref.simhash128(a, (1, 3), "log", tokens_kind="chars"))]
        got = (row[1:3] + [float(row[3]), float(row[4])] + row[5:7] +
               [float(row[7]), float(row[8])] + row[9:11])
        for name, g, wv in zip(("chargrams4", "chargrams5-binary", "jaccard", "jaccard-bigram",
                                "minhash", "minhash_bands", "jaccard-chars", "jaccard-chars-1-2",
                                "minhash-chars", "simhash128-chars-log"), got, want):
            ok = abs(g - wv) < 1e-12 if isinstance(wv, float) else g == wv
            if ok:
                passed += 1
            else:
                failed += 1
                print(f"corpus document {i} {name}: extension {g}, reference {wv}")
    return passed, failed


def chars_goldens():
    """(label, sizes, weighting, a, b) of test/golden/chars.tsv"""
    with open(os.path.join(ROOT, "test/golden/chars.tsv"), encoding="utf-8") as f:
        for line in f:
            label, shingles, weighting, a, b = line.rstrip("\n").split("\t")
            sizes = tuple(int(x) for x in shingles.strip("{}").split(","))
            yield label, sizes, weighting, unescape(a), unescape(b)


def check_chars_goldens():
    """The golden values of character tokens in expected/fingerprint_golden.out
    (Jaccard, MinHash, 128-bit fingerprint), recomputed."""
    expected = {}
    with open(os.path.join(ROOT, "expected/fingerprint_golden.out"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^ (chars_\S+)\s+\|\s+(\S+) \| (\{[-0-9,]*\})\s+\| ([01]{128})$", line)
            if m:
                expected[m.group(1)] = (float(m.group(2)), m.group(3), m.group(4))
    passed = failed = 0
    inputs = list(chars_goldens())
    for label, sizes, weighting, a, b in inputs:
        want = (ref.jaccard(a, b, sizes, tokens_kind="chars"),
                "{" + ",".join(str(signed(v)) for v in ref.minhash(a, 6, sizes, tokens_kind="chars")) + "}",
                ref.bits128(ref.simhash128(a, sizes, weighting, tokens_kind="chars")))
        got = expected.get(label)
        if got is not None and abs(got[0] - want[0]) < 1e-12 and got[1:] == want[1:]:
            passed += 1
        else:
            failed += 1
            print(f"golden chars {label}: reference {want}, expected {got}")
    if len(expected) != len(inputs):
        failed += 1
        print(f"golden chars: {len(expected)} values expected, {len(inputs)} inputs")
    return passed, failed


def sentence_goldens():
    """(label, k, text) of test/golden/sentences.tsv"""
    with open(os.path.join(ROOT, "test/golden/sentences.tsv"), encoding="utf-8") as f:
        for line in f:
            label, k, text = line.rstrip("\n").split("\t")
            yield label, int(k), unescape(text)


def check_sentence_goldens():
    """The golden signatures in expected/sentences.out, recomputed."""
    expected = {}
    with open(os.path.join(ROOT, "expected/sentences.out"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^ (\w+)\s+\| (\{[-0-9,]*\})$", line)
            if m:
                expected[m.group(1)] = m.group(2)
    passed = failed = 0
    for label, k, text in sentence_goldens():
        want = "{" + ",".join(str(v) for v in ref.sentence_signature(text, k)) + "}"
        if expected.get(label) == want:
            passed += 1
        else:
            failed += 1
            print(f"golden sentences {label}: reference {want}, expected {expected.get(label)}")
    return passed, failed


def check_sentences(docs):
    """simhash_sentences (1.5) against the reference on a sample"""
    docs = ["我们今天去公园。天气很好！你来吗？", "Ｐｏｓｔｇｒｅｓ 数据库。简单。", "A. B! C? D…E。F",
            "", "no boundary"] + docs[:500]
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False, encoding="utf-8") as f:
        w = csv.writer(f, quoting=csv.QUOTE_ALL)
        for i, d in enumerate(docs):
            w.writerow([i, d])
        path = f.name
    rows = psql_csv(
        "CREATE TEMP TABLE sample (id int, doc text);\n"
        f"\\copy sample FROM '{path}' WITH (FORMAT csv)\n"
        "COPY (SELECT id, simhash_sentences(doc, 3), simhash_sentences(doc), simhash_sentences(doc, 20)"
        " FROM sample ORDER BY id) TO STDOUT WITH (FORMAT csv);\n")
    os.unlink(path)
    passed = failed = 0
    for row in rows:
        i = int(row[0])
        for k, got in zip((3, 5, 20), row[1:]):
            want = "{" + ",".join(str(v) for v in ref.sentence_signature(docs[i], k)) + "}"
            if got == want:
                passed += 1
            else:
                failed += 1
                print(f"corpus document {i} sentences k={k}: extension {got}, reference {want}")
    return passed, failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", action="store_true")
    ap.add_argument("--sample", type=int, default=1500)
    args = ap.parse_args()
    passed = failed = 0

    expected, expected128 = expected_values()
    extra = {
        "array": ref.simhash_array(["alpha", "beta", "gamma", "alpha"]),
        "array_weighted": ref.simhash_array(["alpha", "beta", "gamma"], [3, 1.5, 0.25]),
        "array_negative": ref.simhash_array(["alpha", "beta"], [-2, 1]),
        "tsvector": ref.vote([(ref.h64(b"alpha"), 2), (ref.h64(b"beta"), 1), (ref.h64(b"gamma"), 1)]),
    }
    checks = [(label, ref.simhash(text, sizes, weighting, cjk))
              for label, sizes, weighting, cjk, text in golden_inputs()]
    checks += list(extra.items())
    for label, value in checks:
        if expected.get(label) == value:
            passed += 1
        else:
            failed += 1
            print(f"golden {label}: reference {value:016x}, expected "
                  f"{expected.get(label, 0):016x}")

    p, f = check_golden128(expected128)
    passed += p
    failed += f

    p, f = check_sentence_goldens()
    passed += p
    failed += f

    p, f = check_chars_goldens()
    passed += p
    failed += f

    if args.db:
        docs = corpus(args.sample)
        schemes = [("{1,3}", "tf", "unigram"), ("{3}", "binary", "unigram"),
                   ("{1,2}", "log", "bigram")]
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False, encoding="utf-8") as f:
            w = csv.writer(f)
            for i, d in enumerate(docs):
                w.writerow([i, d])
            path = f.name
        cols = ", ".join(f"simhash(doc, shingles => '{s}', weighting => '{w}', cjk => '{c}')"
                         for s, w, c in schemes)
        cols += ", " + ", ".join(f"simhash128(doc, shingles => '{s}', weighting => '{w}', cjk => '{c}')"
                                 for s, w, c in schemes)
        sql = (f"CREATE TEMP TABLE sample (id int, doc text);\n"
               f"\\copy sample FROM '{path}' WITH (FORMAT csv)\n"
               f"COPY (SELECT id, {cols} FROM sample ORDER BY id) TO STDOUT WITH (FORMAT csv);\n")
        res = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1"], input=sql,
                             capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"psql failed: {res.stderr.strip()}")
        out = res.stdout
        os.unlink(path)
        for row in csv.reader(io.StringIO(out)):
            i = int(row[0])
            for (s, wt, c), got, got128 in zip(schemes, row[1:], row[1 + len(schemes):]):
                sizes = tuple(int(x) for x in s.strip("{}").split(","))
                want = ref.simhash(docs[i], sizes, wt, c)
                if int(got, 16) == want:
                    passed += 1
                else:
                    failed += 1
                    print(f"corpus document {i} {s} {wt} {c}: extension {got}, "
                          f"reference {want:016x}")
                want128 = ref.bits128(ref.simhash128(docs[i], sizes, wt, c))
                if got128 == want128:
                    passed += 1
                else:
                    failed += 1
                    print(f"corpus document {i} {s} {wt} {c}, 128 bits: extension {got128}, "
                          f"reference {want128}")
        if docs:
            p, f = check_v11(docs)
            passed += p
            failed += f
            p, f = check_sentences(docs)
            passed += p
            failed += f
        else:
            print("note: apt's package descriptions are not present; corpus check skipped")

    print(f"reference: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
