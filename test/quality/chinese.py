"""A small Chinese near-duplicate test set, measured next to English.

Does simhash(text) find Chinese near-duplicates as well as English ones?
This script builds comparable material in both languages, edits it in the
same ways, fingerprints everything with the extension inside PostgreSQL, and
writes docs/reports/quality_chinese.md.

Documents
    Chinese: paragraphs of the man pages in manpages-zh (zh_CN and zh_TW,
    troff markup stripped) and the entries of fortunes-zh (sayings, classical
    prose, Tang and Song poems).  A document is kept if it has at least
    MIN_HAN Han characters and Han characters make up at least HAN_SHARE of
    its tokens (man pages mix in option names and commands).
    English: apt's package descriptions (corpus.load()).
    In both languages, documents with the same token sequence keep one copy,
    and documents above MAX_TOKENS tokens are left out (long English
    descriptions are too few to match them).  Tokens are what the extension
    counts: simhash_tokens(text), so a Han character is one token and an
    English word is one token.

Matching
    Simhash's behaviour depends mostly on how many features a text has, so
    the English set is drawn to have the same token counts as the Chinese one:
    each Chinese document, in random order, takes the unused English document
    whose token count is nearest to its own.

Edits
    Each document of both sets is edited once with each kind of EDIT_KINDS,
    giving a near-duplicate pair (original, edited).  The kinds are the same
    in both languages; only what counts as a word, a sentence or punctuation
    differs:
      replace_1, replace_2pct, replace_5pct, replace_10pct: replace one, or
        2, 5, 10 % of the tokens (at least one), each by another frequent
        token: a Han character by one of the TOP_VOCAB most frequent Han
        characters of the Chinese set (like 喊 -> 叫), an English word by one
        of the most frequent English words;
      delete_sentence: delete one sentence (or, failing that, one clause) of
        3 tokens or more and at most MAX_SPAN_SHARE of the text;
      insert_sentence: insert a sentence of the same size range taken from
        another document at a sentence boundary;
      format_only: punctuation and white space only (Chinese: full-width
        punctuation to half-width or back, Latin letters to full-width,
        unwrapped lines; English: curly quotes, dashes, double spaces,
        unwrapped lines); the tokens do not change;
      footer: append one of three short footers (11 to 16 tokens, the same
        counts in both languages).
    A document that offers no suitable sentence is skipped for that kind.

Measurements (with the extension; cjk => 'bigram' too for Chinese)
    Per language and kind: Hamming distances of the pairs (median, share
    within k = 3 and k = 6).  Exact Jaccard similarity of the pairs' sets of
    token 3-shingles (from simhash_tokens; a text of 1-2 tokens has one
    shingle of all its tokens), and the share of pairs above a Jaccard
    threshold found within k.  False positives: all pairs of different
    documents within each set (12.5 million for 5,000 documents, so no
    sampling), their Hamming distances, and how many of those within k are
    really similar (Jaccard >= 0.5).

Simplified/Traditional twins
    The zh_TW man pages are converted from the zh_CN ones, so the Chinese
    material holds the same paragraph in both scripts.  These pairs are
    measured on their own (a Chinese-only kind of copy), and counted apart
    among the false positives.

Usage: the extension installed, a server reachable through the PG*
variables, the extension created in its database.  From a checkout, as
root, with a throwaway cluster:
    bash -c 'source tools/common.sh && simhash_cluster_start &&
      psql -qc "CREATE EXTENSION simhash" && /usr/bin/python3 test/quality/chinese.py'
Needs Debian's manpages-zh, fortunes-zh, python3-numpy, lz4 and apt's
English descriptions (apt-get update -o Acquire::Languages=en).  The script
starts no server; it runs psql, and takes about half a minute.
"""
import collections
import gzip
import os
import random
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import corpus  # noqa: E402  (tools/corpus.py)

REPORT = os.path.normpath(os.path.join(HERE, "..", "..", "docs", "reports", "quality_chinese.md"))

SEED = 20240617
MIN_HAN = 40            # Han characters a Chinese document needs
HAN_SHARE = 0.6         # ... and their share of its tokens
MAX_TOKENS = 600        # longer documents are left out in both languages
N_DOCS = 5000           # documents per language (a random sample)
TOP_VOCAB = 500         # replacements come from this many frequent tokens
MAX_SPAN_SHARE = 0.2    # a deleted or inserted sentence: at most this share
MIN_SPAN_TOKENS = 3     # ... and at least this many tokens
KS = (3, 6)
FP_KS = (3, 6, 10)      # radii for the false-positive table
CLOSE_MAX = 12          # unrelated pairs this close get their Jaccard computed
JACCARD_LEVELS = (0.9, 0.8, 0.7, 0.5)
SEED_PAIR = ("妈妈喊你来吃饭", "妈妈叫你来吃饭")

EDIT_KINDS = ("replace_1", "replace_2pct", "replace_5pct", "replace_10pct",
              "delete_sentence", "insert_sentence", "format_only", "footer")
REPLACE_SHARE = {"replace_1": 0.0, "replace_2pct": 0.02,
                 "replace_5pct": 0.05, "replace_10pct": 0.10}

# Han blocks, as the extension classifies them (kana and bopomofo left out).
HAN_CLASS = "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U000323af]"
HAN = re.compile(HAN_CLASS)
# Approximate tokens, for choosing edits only: a Han character, or a run of
# other letters and digits.  The measurements use simhash_tokens().
APPROX_TOKEN = re.compile(HAN_CLASS + "|(?:(?!" + HAN_CLASS + ")[^\\W_])+")
EN_WORD = re.compile(r"(?<![^\W_])[A-Za-z]+(?![^\W_])")

FOOTERS = {
    "zh": ["本文来自网络，如有侵权请联系删除。",
           "转载请注明出处，谢谢合作！",
           "更多精彩内容，请关注我们的官方网站。"],
    "en": ["This text was taken from the internet; please contact us if you want it removed.",
           "Please credit the original source when you share this, thank you!",
           "For more great content like this, please follow our official website "
           "and our account every day."],
}

SENTENCE_END = {
    "zh": re.compile(r"[。！？；…]+[」』”’）)]*|[!?;]+(?=\s|$)|\n\s*\n"),
    "en": re.compile(r"[.!?;]+[\"')\]]*(?=\s|$)|\n\s*\n"),
}
CLAUSE_END = {
    "zh": re.compile(r"[。！？；…，、：]+[」』”’）)]*|[!?;,:]+(?=\s|$)|\n\s*\n"),
    "en": re.compile(r"[.!?;,:]+[\"')\]]*(?=\s|$)|\n\s*\n"),
}


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------- extraction

def package_files(package):
    """Regular files installed by a Debian package, sorted."""
    out = subprocess.run(["dpkg", "-L", package], check=True,
                         capture_output=True, text=True).stdout
    return sorted(p for p in out.split("\n")
                  if p and os.path.isfile(p) and not os.path.islink(p))


TROFF_SPECIAL = {"lq": "“", "rq": "”", "oq": "‘", "cq": "’", "dq": '"', "aq": "'",
                 "em": "—", "en": "–", "hy": "-", "mi": "-", "bu": "•", "co": "©",
                 "ti": "~", "ha": "^", "rs": "\\", "bv": "|", "ba": "|", "pl": "+",
                 "mu": "×", "<=": "≤", ">=": "≥", "->": "→", "<-": "←"}
TROFF_ESCAPES = [
    (re.compile(r'\\".*$'), ""),                                   # comment
    (re.compile(r"\\f(?:\[[^\]]*\]|\(..|.)"), ""),                 # font
    (re.compile(r"\\s[+-]?(?:\(\d\d|\[\d+\]|\d)"), ""),            # size
    (re.compile(r"\\[hvwlLoDbxXSHNZ]'[^']*'"), ""),                # motions
    (re.compile(r"\\[*n][+-]?(?:\[[^\]]*\]|\(..|.)"), ""),         # strings, registers
    (re.compile(r"\\\((..)"), lambda m: TROFF_SPECIAL.get(m.group(1), "")),
    (re.compile(r"\\\[([^\]]*)\]"), lambda m: TROFF_SPECIAL.get(m.group(1), "")),
    (re.compile(r"\\[ 0~]"), " "),
    (re.compile(r"\\e"), "\\\\"),
    (re.compile(r"\\[&|^,/c%:{}!)]"), ""),
    (re.compile(r"\\(.)"), r"\1"),                                 # \- \. \\ ...
]
# Requests that end a paragraph; their arguments are dropped, except the tag
# of .IP and .It.
TROFF_BREAKS = {"PP", "LP", "P", "TP", "IP", "HP", "sp", "Sp", "RS", "RE", "SH",
                "SS", "Sh", "Ss", "Pp", "Bl", "El", "It", "nf", "fi", "TH",
                "Dd", "Dt", "Os", "Sh", "TS", "TE", "PD", "in"}
# Font and mdoc macros whose arguments are running text.
TROFF_TEXT = {"B", "I", "SM", "SB", "Nm", "Ar", "Fl", "Xr", "Em", "Sy", "Pa", "Dq",
              "Ql", "Li", "Va", "Fn", "Cm", "Ev", "Nd", "Op", "Ic", "Tn", "Qq"}
TROFF_ALTERNATING = {"BR", "RB", "IR", "RI", "BI", "IB"}
TROFF_SKIP_BLOCK = {"de": "..", "ig": "..", "Vb": ".Ve", "TS": ".TE"}


def troff_unescape(s):
    for rx, repl in TROFF_ESCAPES:
        s = rx.sub(repl, s)
    return s


def troff_args(s):
    """The arguments of a request: quoted strings or runs of non-blanks."""
    return [m.group(1) if m.group(1) is not None else m.group(2)
            for m in re.finditer(r'"([^"]*)"?|(\S+)', s)]


def troff_to_paragraphs(source):
    """Plain-text paragraphs of a man page: requests dropped, escapes
    resolved, lines of one paragraph joined with newlines."""
    paras, cur, skip_until = [], [], None
    joining = False     # the last text line ended in \c: continue it

    def flush():
        nonlocal joining
        text = "\n".join(x for x in (re.sub(r"[ \t]+", " ", l).strip() for l in cur) if x)
        if text:
            paras.append(text)
        cur.clear()
        joining = False

    def add(raw, text):
        nonlocal joining
        if joining and cur:
            cur[-1] += text
        else:
            cur.append(text)
        joining = raw.rstrip().endswith("\\c")

    for line in source.split("\n"):
        if skip_until is not None:
            if line.startswith(skip_until):
                skip_until = None
            continue
        if line.startswith((".", "'")):
            m = re.match(r"[.'][ \t]*([^ \t]*)[ \t]*(.*)", line)
            name, rest = m.group(1), m.group(2)
            if name in TROFF_SKIP_BLOCK:
                flush()
                skip_until = TROFF_SKIP_BLOCK[name]
            elif name in TROFF_BREAKS:
                flush()
                if name in ("IP", "It") and rest:
                    add(rest, troff_unescape(troff_args(rest)[0] if name == "IP" else rest))
            elif name in TROFF_TEXT:
                add(rest, troff_unescape(" ".join(troff_args(rest))))
            elif name in TROFF_ALTERNATING:
                add(rest, troff_unescape("".join(troff_args(rest))))
            # any other request (.if, .nr, .ds, .br, .\" ...) carries no text
            continue
        if not line.strip():
            flush()
            continue
        add(line, troff_unescape(line))
    flush()
    return paras


def manpages():
    """The paragraphs of manpages-zh: {page: {"zh_CN": [...], "zh_TW": [...]}},
    a page being its path under the language directory (man1/ls.1.gz)."""
    pages = collections.defaultdict(dict)
    for path in package_files("manpages-zh"):
        m = re.match(r"/usr/share/man/(zh_\w+)/(.+\.gz)$", path)
        if m:
            with gzip.open(path, "rb") as f:
                source = f.read().decode("utf-8", errors="replace")
            pages[m.group(2)][m.group(1)] = troff_to_paragraphs(source)
    return pages


def manpage_docs(pages):
    """(source, text) for every paragraph; zh_CN first, pages in path order."""
    langs = sorted({lang for versions in pages.values() for lang in versions})
    return [("man " + lang, text) for lang in langs for page in sorted(pages)
            for text in pages[page].get(lang, [])]


def fortune_docs():
    """(source, text) for every entry of fortunes-zh, in file order."""
    out = []
    for path in package_files("fortunes-zh"):
        if not path.startswith("/usr/share/games/fortunes/") or path.endswith(".dat"):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            raw = re.sub(r"\x1b\[[0-9;]*m", "", f.read())
        for entry in re.split(r"\n%\n", raw):
            text = "\n".join(l.rstrip() for l in entry.strip("\n%").split("\n")).strip()
            if text:
                out.append(("fortune " + os.path.basename(path), text))
    return out


def is_chinese(text):
    """Enough Han characters, and mostly Han characters."""
    han = len(HAN.findall(text))
    return han >= MIN_HAN and han >= HAN_SHARE * len(APPROX_TOKEN.findall(text))


def chinese_candidates(pages):
    """Chinese documents with enough Han text, exact duplicates removed."""
    seen, out = set(), []
    for source, text in manpage_docs(pages) + fortune_docs():
        if is_chinese(text) and text not in seen:
            seen.add(text)
            out.append((source, text))
    return out


def script_twins(pages):
    """(Simplified, Traditional) pairs of one paragraph.  The zh_TW pages of
    manpages-zh look converted from the zh_CN ones, characters and some
    terms (文件 -> 檔案), so when both versions of a page have as many
    paragraphs, paragraph i of one is paragraph i of the other.  A pair is
    kept if both texts are Chinese documents and differ, their Latin words
    and digits are the same and their Han counts differ by at most 10 %."""
    latin = re.compile(r"[A-Za-z0-9]+")

    def han(s):
        return len(HAN.findall(s))

    out = []
    for page in sorted(pages):
        cn, tw = pages[page].get("zh_CN", []), pages[page].get("zh_TW", [])
        if len(cn) != len(tw):
            continue
        for a, b in zip(cn, tw):
            if (a != b and is_chinese(a) and is_chinese(b)
                    and latin.findall(a) == latin.findall(b)
                    and abs(han(a) - han(b)) <= 0.1 * han(a)):
                out.append((a, b))
    return out


def english_candidates():
    """apt's English package descriptions, exact duplicates removed."""
    seen, out = set(), []
    for _, text in corpus.load():
        if text not in seen:
            seen.add(text)
            out.append(("apt descriptions", text))
    return out


# ------------------------------------------------------------------ database

def copy_escape(s):
    return (s.replace("\\", "\\\\").replace("\t", "\\t")
            .replace("\n", "\\n").replace("\r", "\\r"))


def copy_block(table, rows):
    """A COPY ... FROM STDIN statement with its data, for a psql script."""
    lines = [f"COPY {table} FROM STDIN;"]
    lines.extend("\t".join(copy_escape(str(v)) for v in row) for row in rows)
    lines.append("\\.")
    return "\n".join(lines) + "\n"


def run_psql(script):
    """Run a psql script (connection from PG* variables); return the rows it
    writes with COPY ... TO STDOUT, as lists of fields."""
    r = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", "-"],
                       input=script, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"psql failed:\n{r.stderr}")
    return [line.split("\t") for line in r.stdout.split("\n") if line]


def token_stats(docs):
    """For each text: (token count, md5 of the token sequence), by the extension."""
    script = ("CREATE TEMP TABLE c (id int, body text);\n"
              + copy_block("c", ((i, t) for i, (_, t) in enumerate(docs)))
              + "COPY (SELECT id, coalesce(cardinality(simhash_tokens(body)), 0),"
                " md5(array_to_string(simhash_tokens(body), ' '))"
                " FROM c ORDER BY id) TO STDOUT;\n")
    rows = run_psql(script)
    assert len(rows) == len(docs)
    return [(int(n), h) for _, n, h in rows]


def fingerprint(texts, pairs):
    """Fingerprints and tokens of texts, and the Hamming distances of pairs
    (index into texts, index into texts), computed by the extension.

    Returns (fp_unigram uint64 array, fp_bigram uint64 array, token lists,
    distances int array of shape (len(pairs), 2): unigram, bigram), and the
    seed example's distances."""
    a, b = SEED_PAIR
    script = ("CREATE TEMP TABLE t (id int PRIMARY KEY, body text);\n"
              + copy_block("t", enumerate(texts))
              + "CREATE TEMP TABLE p (id int, a int, b int);\n"
              + copy_block("p", ((i, x, y) for i, (x, y) in enumerate(pairs)))
              + "CREATE TEMP TABLE f AS SELECT id, simhash(body) AS u,"
                " simhash(body, cjk => 'bigram') AS g,"
                " array_to_string(simhash_tokens(body), ' ') AS tok FROM t;\n"
              + "COPY (SELECT 'T', id, u, g, tok FROM f ORDER BY id) TO STDOUT;\n"
              + "COPY (SELECT 'P', p.id, fa.u <-> fb.u, fa.g <-> fb.g FROM p"
                " JOIN f fa ON fa.id = p.a JOIN f fb ON fb.id = p.b ORDER BY p.id) TO STDOUT;\n"
              + f"COPY (SELECT 'S', simhash(text '{a}') <-> simhash(text '{b}'),"
                f" simhash(text '{a}', cjk => 'bigram') <-> simhash(text '{b}', cjk => 'bigram'))"
                " TO STDOUT;\n")
    rows = run_psql(script)
    trows = [r for r in rows if r[0] == "T"]
    prows = [r for r in rows if r[0] == "P"]
    srow = [r for r in rows if r[0] == "S"][0]
    assert len(trows) == len(texts) and len(prows) == len(pairs)
    fpu = np.array([int(r[2], 16) for r in trows], dtype=np.uint64)
    fpg = np.array([int(r[3], 16) for r in trows], dtype=np.uint64)
    toks = [r[4].split(" ") if r[4] else [] for r in trows]
    dist = np.array([(int(r[2]), int(r[3])) for r in prows], dtype=np.int64).reshape(-1, 2)
    return fpu, fpg, toks, dist, (int(srow[1]), int(srow[2]))


# ----------------------------------------------------------------- selection

def select_chinese(cands, stats, rng):
    """N_DOCS Chinese documents of at most MAX_TOKENS tokens, one per token
    sequence, drawn at random and kept in file order; and how many there
    were to draw from."""
    seen, out = set(), []
    for (source, text), (n, h) in zip(cands, stats):
        if n <= MAX_TOKENS and h not in seen:
            seen.add(h)
            out.append((source, text, n))
    pool = len(out)
    if pool > N_DOCS:
        out = [out[i] for i in sorted(rng.sample(range(pool), N_DOCS))]
    return out, pool


def match_english(zh_counts, cands, stats, rng):
    """English documents whose token counts match zh_counts one to one:
    each Chinese count, in random order, takes the unused English document
    with the nearest count (random among equals)."""
    pool = collections.defaultdict(list)
    seen = set()
    for (source, text), (n, h) in zip(cands, stats):
        if 0 < n <= MAX_TOKENS and h not in seen:
            seen.add(h)
            pool[n].append((source, text, n))
    for bucket in pool.values():
        rng.shuffle(bucket)
    order = list(range(len(zh_counts)))
    rng.shuffle(order)
    chosen = [None] * len(zh_counts)
    for i in order:
        c = zh_counts[i]
        for d in range(MAX_TOKENS + 1):
            near = [c + s for s in ((-d, d) if d else (0,)) if pool.get(c + s)]
            if near:
                chosen[i] = pool[rng.choice(near)].pop()
                break
        assert chosen[i] is not None, "not enough English documents to match"
    return chosen


def frequent_tokens(texts, lang):
    """The TOP_VOCAB most frequent replacement tokens of a language."""
    count = collections.Counter()
    for t in texts:
        if lang == "zh":
            count.update(HAN.findall(t))
        else:
            count.update(w.lower() for w in EN_WORD.findall(t) if len(w) > 1)
    return [w for w, _ in sorted(count.items(), key=lambda x: (-x[1], x[0]))[:TOP_VOCAB]]


# --------------------------------------------------------------------- edits

def replace_positions(text, lang):
    rx = HAN if lang == "zh" else EN_WORD
    return [(m.start(), m.end()) for m in rx.finditer(text)]


def edit_replace(text, n_tokens, share, lang, vocab, rng):
    """Replace max(1, round(share * n_tokens)) tokens by frequent ones."""
    pos = replace_positions(text, lang)
    r = min(len(pos), max(1, round(share * n_tokens)))
    if r == 0:
        return None
    parts, last = [], 0
    for s, e in sorted(rng.sample(pos, r)):
        old = text[s:e].lower()
        new = rng.choice(vocab)
        while new == old:
            new = rng.choice(vocab)
        parts += [text[last:s], new]
        last = e
    parts.append(text[last:])
    return "".join(parts)


def spans(text, ends):
    """(start, end) of the pieces of text, each ending after a match of ends."""
    out, start = [], 0
    for m in ends.finditer(text):
        if m.end() > start:
            out.append((start, m.end()))
            start = m.end()
    if start < len(text):
        out.append((start, len(text)))
    return out


def approx_len(s):
    return len(APPROX_TOKEN.findall(s))


def sized_spans(text, total, ends):
    """Pieces of text cut at ends, of MIN_SPAN_TOKENS .. MAX_SPAN_SHARE *
    total tokens."""
    return [(s, e) for s, e in spans(text, ends)
            if MIN_SPAN_TOKENS <= approx_len(text[s:e]) <= MAX_SPAN_SHARE * total]


def edit_delete(text, lang, rng):
    """Delete a sentence; a clause if no sentence has a suitable size.
    Returns (edited text, "sentence" or "clause"), or None."""
    total = approx_len(text)
    for unit, ends in (("sentence", SENTENCE_END[lang]), ("clause", CLAUSE_END[lang])):
        ok = sized_spans(text, total, ends)
        if ok:
            s, e = rng.choice(ok)
            rest = text[e:].lstrip(" ") if lang == "en" else text[e:]
            return text[:s] + rest, unit
    return None


def edit_insert(text, lang, donors, rng, tries=50):
    """Insert a sentence of another document (a clause if none of tries
    donors has a sentence of suitable size) after a sentence of text.
    Returns (edited text, "sentence" or "clause"), or None."""
    total = approx_len(text)
    bounds = [e for _, e in spans(text, SENTENCE_END[lang])]
    for unit, ends in (("sentence", SENTENCE_END[lang]), ("clause", CLAUSE_END[lang])):
        for _ in range(tries):
            donor = rng.choice(donors)
            ok = sized_spans(donor, total, ends) if donor != text else []
            if ok:
                s, e = rng.choice(ok)
                piece = re.sub(r"\s*\n\s*", " ", donor[s:e].strip())
                at = rng.choice(bounds)
                if lang == "en":
                    edited = text[:at].rstrip(" ") + " " + piece + " " + text[at:].lstrip(" ")
                else:
                    edited = text[:at] + piece + text[at:]
                return edited, unit
    return None


ZH_FULL_TO_HALF = {"，": ", ", "。": ". ", "：": ": ", "；": "; ", "！": "! ",
                   "？": "? ", "（": " (", "）": ") ", "、": ", "}
ZH_HALF_TO_FULL = {",": "，", ".": "。", ":": "：", ";": "；", "!": "！",
                   "?": "？", "(": "（", ")": "）"}


def edit_format_zh(text, rng):
    """Full-width punctuation to half-width (or back), some Latin words in
    full-width letters, lines unwrapped."""
    if any(c in text for c in ZH_FULL_TO_HALF):
        text = "".join(ZH_FULL_TO_HALF.get(c, c) for c in text)
    else:
        text = re.sub(r"[,.:;!?()](?=\s|$)",
                      lambda m: ZH_HALF_TO_FULL[m.group(0)], text)
    text = re.sub(r"[A-Za-z0-9]+",
                  lambda m: ("".join(chr(ord(c) + 0xFEE0) for c in m.group(0))
                             if rng.random() < 0.3 else m.group(0)), text)
    return re.sub(r"\s*\n\s*", " ", text)


def edit_format_en(text, rng):
    """Curly quotes, em dashes, two spaces after a sentence, lines unwrapped."""
    text = re.sub(r'"([^"\n]*)"', r"“\1”", text)
    text = re.sub(r"(?<=\w)'(?=\w)", "’", text)
    text = re.sub(r" -{1,2} ", " — ", text)
    text = re.sub(r"(?<=[.!?]) (?=[A-Z])", "  ", text)
    return re.sub(r"[ \t]*\n[ \t]*", " ", text)


def make_edit(kind, text, n_tokens, lang, vocab, donors, rng):
    """(edited copy of text, unit edited), or None if the edit does not apply."""
    if kind in REPLACE_SHARE:
        edited = edit_replace(text, n_tokens, REPLACE_SHARE[kind], lang, vocab, rng)
        return (edited, "token") if edited is not None else None
    if kind == "delete_sentence":
        return edit_delete(text, lang, rng)
    if kind == "insert_sentence":
        return edit_insert(text, lang, donors, rng)
    if kind == "format_only":
        edited = (edit_format_zh if lang == "zh" else edit_format_en)(text, rng)
        return (edited, "format") if edited != text else None
    if kind == "footer":
        j = rng.randrange(len(FOOTERS[lang]))
        return text + "\n\n" + FOOTERS[lang][j], f"footer {j + 1}"
    raise ValueError(kind)


def make_pairs(docs, lang, rng):
    """(doc index, kind, edited text, unit) for every document and edit kind."""
    texts = [t for _, t, _ in docs]
    vocab = frequent_tokens(texts, lang)
    out = []
    for i, (_, text, n) in enumerate(docs):
        for kind in EDIT_KINDS:
            edit = make_edit(kind, text, n, lang, vocab, texts, rng)
            if edit is not None and edit[0] != text:
                out.append((i, kind) + edit)
    return out


# ------------------------------------------------------------------ measures

def shingles(tokens):
    """The set of 3-shingles of a token list (one shingle of all tokens if
    there are only 1 or 2)."""
    if len(tokens) >= 3:
        return {tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)}
    return {tuple(tokens)} if tokens else set()


def jaccard(ta, tb):
    a, b = shingles(ta), shingles(tb)
    return len(a & b) / len(a | b) if a or b else 1.0


POPCOUNT8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def popcount(x):
    return POPCOUNT8[x.view(np.uint8)].reshape(-1, 8).sum(axis=1, dtype=np.int64)


def all_pair_distances(fps, kmax):
    """Histogram of Hamming distances over all pairs of different documents,
    and the pairs (i, j, distance) within kmax."""
    hist = np.zeros(65, dtype=np.int64)
    close = []
    for i in range(len(fps) - 1):
        d = popcount(fps[i] ^ fps[i + 1:])
        hist += np.bincount(d, minlength=65)
        for j in np.flatnonzero(d <= kmax):
            close.append((i, i + 1 + int(j), int(d[j])))
    return hist, close


def quantiles(xs, qs=(0, 0.1, 0.25, 0.5, 0.75, 0.9, 1)):
    return [int(round(float(np.quantile(xs, q)))) for q in qs]


def share(mask):
    return float(np.mean(mask)) if len(mask) else float("nan")


def pair_results(docs, pairs, toks, dist, base):
    """Arrays over the edited pairs of one language: kind, unit edited,
    source, edited share, Jaccard, the original's token count, distances
    (unigram, bigram), and whether the tokens are unchanged."""
    kind, unit, frac, jac, ntok, same = [], [], [], [], [], []
    for p, (i, k, _, u) in enumerate(pairs):
        ta, tb = toks[base + i], toks[base + len(docs) + p]
        if k in REPLACE_SHARE:
            frac.append(sum(1 for x, y in zip(ta, tb) if x != y) / len(ta))
        else:
            frac.append(abs(len(tb) - len(ta)) / len(ta))
        kind.append(k)
        unit.append(u)
        jac.append(jaccard(ta, tb))
        ntok.append(len(ta))
        same.append(ta == tb)
    return {"kind": np.array(kind), "unit": np.array(unit),
            "src": np.array([docs[i][0] for i, _, _, _ in pairs]), "frac": np.array(frac),
            "jac": np.array(jac), "ntok": np.array(ntok), "dist": dist,
            "same": np.array(same)}


def false_positives(fps, toks, texts, twins):
    """Hamming distances of all pairs of different documents; for those
    within CLOSE_MAX, their Jaccard similarity and whether they are
    Simplified/Traditional twins."""
    hist, close = all_pair_distances(fps, CLOSE_MAX)
    pairs = int(hist.sum())
    d = np.arange(65)
    mean = float((hist * d).sum() / pairs)
    cum = np.cumsum(hist)
    return {"docs": len(fps), "pairs": pairs, "mean": mean, "cum": cum,
            "sd": float(np.sqrt((hist * (d - mean) ** 2).sum() / pairs)),
            "min": int(np.flatnonzero(hist)[0]),
            "p01": int(np.searchsorted(cum, 0.01 * pairs)),
            "close": [(dd, jaccard(toks[i], toks[j]),
                       frozenset((texts[i], texts[j])) in twins) for i, j, dd in close]}


def fp_within(c, k, similar=None, twin=None):
    """Pairs of c within k, optionally only (dis)similar ones or twins."""
    return sum(1 for dd, j, t in c["close"] if dd <= k
               and (similar is None or (j >= 0.5) == similar)
               and (twin is None or t == twin))


# -------------------------------------------------------------------- tables

def pct(x):
    return "–" if x != x else f"{100 * x:.1f} %"


def summarize_kinds(res):
    """Per kind: pairs, median edited share, median Jaccard, and per scheme
    the median distance and shares within each of KS."""
    rows = {}
    for kind in EDIT_KINDS:
        sel = res["kind"] == kind
        d = res["dist"][sel]
        rows[kind] = {
            "n": int(sel.sum()),
            "frac": float(np.median(res["frac"][sel])),
            "jac": float(np.median(res["jac"][sel])),
            "schemes": [(float(np.median(d[:, s])), [share(d[:, s] <= k) for k in KS])
                        for s in (0, 1)],
        }
    return rows


def fmt_kind_table(zh, en):
    lines = ["| edit | pairs zh / en | edited share zh / en | Jaccard zh / en "
             "| **zh** median d | ≤3 | ≤6 | zh bigram median d | ≤3 | ≤6 "
             "| **en** median d | ≤3 | ≤6 |", "|---" * 13 + "|"]
    for kind in EDIT_KINDS:
        z, e = zh[kind], en[kind]
        cells = [f"`{kind}`", f"{z['n']:,} / {e['n']:,}",
                 f"{100 * z['frac']:.1f} % / {100 * e['frac']:.1f} %",
                 f"{z['jac']:.2f} / {e['jac']:.2f}"]
        for med, sh in (z["schemes"][0], z["schemes"][1], e["schemes"][0]):
            cells += [f"{med:g}"] + [pct(x) for x in sh]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def recall(res, t, k, scheme):
    """Share of edited pairs (format_only left out) of Jaccard >= t within k."""
    sel = (res["jac"] >= t) & (res["kind"] != "format_only")
    return share(res["dist"][sel, scheme] <= k)


def fmt_recall_table(zh, en):
    lines = ["| Jaccard of the pair | zh pairs | zh ≤3 | zh ≤6 | zh bigram ≤3 | zh bigram ≤6 "
             "| en pairs | en ≤3 | en ≤6 |", "|---" * 9 + "|"]
    for t in JACCARD_LEVELS:
        cells = [f"≥ {t}"]
        for res, schemes in ((zh, (0, 1)), (en, (0,))):
            cells.append(f"{int(((res['jac'] >= t) & (res['kind'] != 'format_only')).sum()):,}")
            cells += [pct(recall(res, t, k, s)) for s in schemes for k in KS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def fmt_curve_table(zh, en, fp):
    """Recall and false positives for every k up to CLOSE_MAX."""
    lines = ["| k | zh recall J≥0.9 | zh recall J≥0.8 | zh false pos. "
             "| zh bigram recall J≥0.9 | J≥0.8 | false pos. "
             "| en recall J≥0.9 | en recall J≥0.8 | en false pos. |", "|---" * 10 + "|"]
    cols = ((zh, 0, fp["zh"][0]), (zh, 1, fp["zh"][1]), (en, 0, fp["en"][0]))
    for k in range(CLOSE_MAX + 1):
        cells = [str(k)]
        for res, s, c in cols:
            cells += [pct(recall(res, 0.9, k, s)), pct(recall(res, 0.8, k, s)),
                      f"{fp_within(c, k, similar=False):,}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def fmt_band_table(zh, en, kinds, bands):
    lines = ["| tokens | edit | pairs | zh median d | zh ≤3 | zh bigram median d "
             "| en median d | en ≤3 |", "|---" * 8 + "|"]
    for lo, hi in bands:
        for kind in kinds:
            cells = [f"{lo}–{hi}", f"`{kind}`"]
            for res, schemes in ((zh, (0, 1)), (en, (0,))):
                sel = (res["kind"] == kind) & (res["ntok"] >= lo) & (res["ntok"] <= hi)
                d = res["dist"][sel]
                if res is zh:
                    cells.append(f"{int(sel.sum()):,}")
                for s in schemes:
                    cells.append(f"{np.median(d[:, s]):g}" if len(d) else "–")
                    if s == 0:
                        cells.append(pct(share(d[:, 0] <= 3)))
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def fmt_group_table(res, field, label, kinds, ks=(3, 6)):
    """Median distance and shares within ks by res[field] (source or unit)."""
    lines = [f"| {label} | edit | pairs | median tokens | median d | "
             + " | ".join(f"≤{k}" for k in ks) + " |", "|---" * (5 + len(ks)) + "|"]
    for kind in kinds:
        for g in sorted(set(res[field][res["kind"] == kind])):
            sel = (res["kind"] == kind) & (res[field] == g)
            d = res["dist"][sel, 0]
            lines.append(f"| {g} | `{kind}` | {len(d):,} | {np.median(res['ntok'][sel]):g} | "
                         f"{np.median(d):g} | " + " | ".join(pct(share(d <= k)) for k in ks) + " |")
    return "\n".join(lines)


def footer_range(res, k=6):
    """Lowest and highest share within k among the footers."""
    sel = res["kind"] == "footer"
    sh = [share(res["dist"][sel & (res["unit"] == u), 0] <= k)
          for u in sorted(set(res["unit"][sel]))]
    return min(sh), max(sh)


def fmt_fp_table(fp):
    lines = ["| | Chinese | Chinese, bigram | English |", "|---|---|---|---|"]
    cols = [fp["zh"][0], fp["zh"][1], fp["en"][0]]
    rows = [("documents", lambda c: f"{c['docs']:,}"),
            ("pairs of different documents", lambda c: f"{c['pairs']:,}"),
            ("mean distance (sd)", lambda c: f"{c['mean']:.2f} ({c['sd']:.2f})"),
            ("1st percentile of the distance", lambda c: str(c["p01"])),
            ("minimum distance", lambda c: str(c["min"])),
            ("minimum distance of a dissimilar pair (Jaccard < 0.5)",
             lambda c: str(min([dd for dd, j, _ in c["close"] if j < 0.5],
                               default=f"> {CLOSE_MAX}")))]
    for k in FP_KS:
        rows += [(f"**pairs within k = {k}**",
                  lambda c, k=k: f"{int(c['cum'][k]):,} ({c['cum'][k] / c['pairs']:.1e})"),
                 ("... similar (Jaccard ≥ 0.5): real near-duplicates",
                  lambda c, k=k: f"{fp_within(c, k, similar=True):,}"),
                 ("... dissimilar: false positives",
                  lambda c, k=k: f"{fp_within(c, k, similar=False):,}"),
                 ("... ... of which Simplified/Traditional twins",
                  lambda c, k=k: f"{fp_within(c, k, similar=False, twin=True):,}")]
    for name, f in rows:
        lines.append(f"| {name} | " + " | ".join(f(c) for c in cols) + " |")
    return "\n".join(lines)


def changed_han_share(twins):
    """Median share of Han characters that differ, over the twins with as
    many Han characters in both versions (compared position by position)."""
    shares = []
    for a, b in twins:
        ha, hb = HAN.findall(a), HAN.findall(b)
        if len(ha) == len(hb):
            shares.append(sum(1 for x, y in zip(ha, hb) if x != y) / len(ha))
    return float(np.median(shares))


def twin_summary(tw):
    """Median Jaccard and distances of the Simplified/Traditional twins."""
    d = tw["dist"]
    return {"n": len(d), "jac": float(np.median(tw["jac"])), "changed": tw["changed"],
            "below": share(tw["jac"] < 0.5),
            "schemes": [(float(np.median(d[:, s])), [share(d[:, s] <= k) for k in FP_KS])
                        for s in (0, 1)]}


def fmt_twin_table(ts):
    lines = ["| | pairs | Jaccard (median) | median d | ≤3 | ≤6 | ≤10 |", "|---" * 7 + "|"]
    for name, (med, sh) in zip(("unigram (default)", "bigram"), ts["schemes"]):
        lines.append(f"| {name} | {ts['n']:,} | {ts['jac']:.2f} | {med:g} | "
                     + " | ".join(pct(x) for x in sh) + " |")
    return "\n".join(lines)


# -------------------------------------------------------------------- report

def write_report(ctx):
    zh, en = ctx["zh"], ctx["en"]
    zq, eq = ctx["zh_quant"], ctx["en_quant"]
    src = "\n".join(f"| {s} | {n:,} |" for s, n in ctx["sources"])
    seed_u, seed_g = ctx["seed"]
    text = f"""# Near-duplicate quality on Chinese, next to English

Generated by `test/quality/chinese.py` (seed {SEED}). Do not edit by hand: change the
script and run it again.

The requirement: Chinese must behave as well as English on comparable material. This report
builds a small Chinese test set from real Chinese text in Debian packages and an English set of
the same size and lengths. It makes near-duplicate pairs in both with the same kinds of edits
and measures both with the extension.

## The two sets

**Chinese**: {ctx['n_docs']:,} documents drawn at random from two Debian packages:
- `manpages-zh`: the man pages in `/usr/share/man/zh_CN` and `zh_TW`, with the troff markup
  stripped, cut into paragraphs;
- `fortunes-zh`: the entries of its fortune files: sayings, classical prose, Tang and Song poems.

A document is kept if:
- it has at least {MIN_HAN} Han characters;
- Han characters are at least {int(100 * HAN_SHARE)} % of its tokens (man pages mix in option
  names);
- it has at most {MAX_TOKENS} tokens.

{ctx['n_cands'][0]:,} paragraphs and entries pass the first two tests. {ctx['n_cands'][1]:,} of them also
pass the third and have a token sequence of their own (documents with the same token sequence
keep one copy). The sample of {ctx['n_docs']:,} has, by source:

| source | documents |
|---|---|
{src}

**English**: {ctx['n_docs']:,} of apt's English package descriptions (`corpus.load()`), one per
token sequence, drawn to match the Chinese set in length.

**Matching.** Simhash's behaviour depends above all on how many features a text has. With the
default scheme that is about twice its number of tokens. So the English set has the same token
counts as the Chinese one, counted by the extension (`simhash_tokens`): a Han character is a
token, and so is an English word. The Chinese documents are taken in random order. Each takes
the unused English description whose token count is nearest to its own.
{ctx['n_exact']:,} of the {ctx['n_docs']:,} got the same count exactly; the largest gap is
{ctx['max_gap']} tokens. Token counts:

| | min | 10 % | 25 % | median | 75 % | 90 % | max |
|---|---|---|---|---|---|---|---|
| Chinese | {' | '.join(map(str, zq))} |
| English | {' | '.join(map(str, eq))} |

The same number of tokens is not the same amount of text: a Chinese character carries less
than an English word, and many Chinese words have two characters. The matching compares the
fingerprint on equal numbers of features, which is what decides the Hamming distance.

## The edits

Every document of both sets is edited once with each kind of edit. Each edit gives a pair: the
original and its edited copy. The kinds are the same in both languages:

| edit | Chinese | English |
|---|---|---|
| `replace_1` | one Han character replaced by one of the {TOP_VOCAB} most frequent Han characters of the set (like 喊 → 叫) | one word replaced by one of the {TOP_VOCAB} most frequent words |
| `replace_2pct`, `_5pct`, `_10pct` | 2, 5 or 10 % of the tokens replaced so (at least one) | the same |
| `delete_sentence` | one sentence (ending in 。！？；) deleted; a clause (，、：) if no sentence fits | one sentence (ending in . ! ? ;) deleted; a clause (, :) if none fits |
| `insert_sentence` | a sentence of another Chinese document inserted after a sentence | the same in English |
| `format_only` | full-width punctuation to half-width or back, some Latin words in full-width letters, lines unwrapped | curly quotes, em dashes, two spaces after a sentence, lines unwrapped |
| `footer` | one of three footers appended, e.g. 转载请注明出处，谢谢合作！ | one of three footers, e.g. "Please credit the original source when you share this, thank you!" |

Rules for the edits:
- A deleted or inserted sentence has {MIN_SPAN_TOKENS} tokens or more and at most
  {int(100 * MAX_SPAN_SHARE)} % of the document's tokens.
- A document without such a sentence or clause is skipped for that edit.
- A clause stood in for a sentence in {ctx['clauses']}. Chinese paragraphs are
  more often one or two long sentences: {pct(ctx['few_sentences'][0])} of the Chinese documents
  have at most two, against {pct(ctx['few_sentences'][1])} of the English ones.
- The three footers have {ctx['footer_tokens']['zh']} tokens in Chinese and
  {ctx['footer_tokens']['en']} in English.
- "Edited share" below is the share of the original's tokens that were replaced, deleted or
  added.

Every measurement uses the extension:
- `simhash(text)` with the default scheme: words and word 3-shingles, tf weights,
  `cjk => 'unigram'`;
- for Chinese, also `cjk => 'bigram'`. For English the two modes give the same fingerprints.

Jaccard similarity is exact. It is computed on the sets of 3-shingles of the tokens that
`simhash_tokens(text)` returns (unigram tokens; a text of 1 or 2 tokens has one shingle of all
its tokens).

To reproduce, as root on Debian 12, from a checkout:

```sh
bash test/quality/evaluate.sh
```

It installs the packages (manpages-zh, fortunes-zh, apt's English descriptions), builds and
installs the extension, starts a throwaway cluster, runs the English evaluation and then this
script, and stops the cluster. The script itself only needs a database with the extension,
reached through the `PG*` variables. The script took
{ctx['runtime']:.0f} s on the development machine.

## Near-duplicate pairs: Hamming distance by edit

d is the Hamming distance of the pair's fingerprints. "≤3" and "≤6" are the shares of pairs
within k = 3 and k = 6.

{fmt_kind_table(ctx['zh_kinds'], ctx['en_kinds'])}

In `format_only` pairs the tokens stay the same, in every pair of both languages
({'checked' if ctx['format_ok'] else 'NOT so: see the script output'}). Their distance is
therefore 0 by construction.

## Recall against Jaccard similarity

This counts all edited pairs except `format_only`, grouped by the exact Jaccard similarity of
the pair. Each cell is the share of those pairs found within k.

{fmt_recall_table(zh, en)}

## By length

Median distance and share within k = 3, by the original's token count.

{fmt_band_table(zh, en, ('replace_1', 'replace_5pct', 'footer'), ctx['bands'])}

## By source and by footer

Chinese pairs by the package and file their document came from:

{fmt_group_table(zh, 'src', 'source', ('replace_1', 'replace_5pct'))}

Pairs by footer (the footers are listed in `FOOTERS` in the script, in this order). Chinese:

{fmt_group_table(zh, 'unit', 'footer', ('footer',))}

English:

{fmt_group_table(en, 'unit', 'footer', ('footer',))}

## False positives: all pairs of different documents

This takes every pair of different documents within each set. Pairs within k that have a
Jaccard similarity of 0.5 or more are real near-duplicates in the source material, not false
positives.

One kind of pair needs a note. The `zh_TW` pages of manpages-zh appear to be converted from
the `zh_CN` ones, and {ctx['twins_in_set']:,} pairs of the Chinese set are the same paragraph in Simplified
and Traditional characters ("twins"; see below). {pct(ctx['twins']['below'])} of all twins have a
Jaccard similarity below 0.5, so they count as dissimilar here, though a reader would call them
copies.

{fmt_fp_table(ctx['fp'])}

## Recall and false positives by k

For each k:
- recall: the share of the edited pairs (without `format_only`) of Jaccard ≥ 0.9 or ≥ 0.8
  that come out within k;
- false positives: the number of dissimilar pairs (Jaccard < 0.5) among the
  {ctx['fp']['zh'][0]['pairs']:,} pairs of different documents that come out within k.

{fmt_curve_table(zh, en, ctx['fp'])}

## Simplified and Traditional copies

This case exists in Chinese only. The `zh_TW` man pages appear to be converted from the
`zh_CN` ones, character by character and some terms (文件 → 檔案, 进程 → 程序): every page exists
in both, and the paragraphs line up, with the same Latin words. When both versions of a page
have as many paragraphs, paragraph i of one is taken to match paragraph i of the other. A pair is kept
when:
- both paragraphs pass the filter above;
- they have the same Latin words and digits;
- their Han counts differ by at most 10 %.

This gives {ctx['twins']['n']:,} pairs, all from `manpages-zh`. Where both versions have as many Han
characters, a median {pct(ctx['twins']['changed'])} of the characters differ, position by position.

{fmt_twin_table(ctx['twins'])}

The tokenizer does not fold Traditional characters to Simplified ones, so to simhash a converted
copy is a heavily edited text.

## The seed example

| | unigram (default) | bigram |
|---|---|---|
| Hamming(simhash('妈妈喊你来吃饭'), simhash('妈妈叫你来吃饭')) | {seed_u} | {seed_g} |

Seven tokens give 7 unigram and 5 trigram features. One replaced character changes 1 and 3 of
them, a third of the votes. Texts this short need a larger k and a verification step (README,
"Choosing k and features").

## Reading

{ctx['reading']}
"""
    with open(REPORT, "w", encoding="utf-8") as f:
        f.write(text)


def few_sentences(docs, lang):
    """Share of documents with at most two sentences."""
    return share([sum(1 for s, e in spans(t, SENTENCE_END[lang]) if approx_len(t[s:e])) <= 2
                  for _, t, _ in docs])


def clause_shares(zh, en):
    """How often a clause stood in for a sentence, as words for the report."""
    parts = []
    for kind in ("delete_sentence", "insert_sentence"):
        sh = [pct(share(r["unit"][r["kind"] == kind] == "clause")) for r in (zh, en)]
        parts.append(f"{sh[0]} of the Chinese and {sh[1]} of the English `{kind}` pairs")
    return " and in ".join(parts)


def reading(ctx):
    """The short reading of the numbers at the end of the report.  The
    judgements in it were written for the numbers of seed SEED; the numbers
    themselves are filled in from the run."""
    zk, ek, fp, zh, en = ctx["zh_kinds"], ctx["en_kinds"], ctx["fp"], ctx["zh"], ctx["en"]
    cz, cg, ce = fp["zh"][0], fp["zh"][1], fp["en"][0]

    def within(rows, kind, s, i):
        return rows[kind]["schemes"][s][1][i]

    differ = [f"`{kind}` ({zk[kind]['schemes'][0][0]:g} against {ek[kind]['schemes'][0][0]:g})"
              for kind in EDIT_KINDS if zk[kind]["schemes"][0][0] != ek[kind]["schemes"][0][0]]
    same_medians = ("for every kind of edit" if not differ else
                    "for every kind of edit except " + ", ".join(differ))
    gap = max(abs(within(zk, kind, 0, i) - within(ek, kind, 0, i))
              for kind in EDIT_KINDS if kind != "footer" for i in range(len(KS)))
    zf, ef = footer_range(zh), footer_range(en)
    short = [share(r["dist"][(r["kind"] == "replace_1") & (r["ntok"] < 80), 0] <= 3)
             for r in (zh, en)]
    tw = ctx["twins"]
    return f"""\
**On this material, Chinese behaves as English does.**
- With the default scheme, the median distance is the same in both languages
  {same_medians}.
- The shares within k = 3 and k = 6 differ by at most {100 * gap:.1f} percentage points
  (footers aside, see below).
- Recall against Jaccard similarity is the same too. At k = 3, {pct(recall(zh, 0.9, 3, 0))} of
  the Chinese and {pct(recall(en, 0.9, 3, 0))} of the English pairs of Jaccard ≥ 0.9 are found;
  at k = 6, {pct(recall(zh, 0.9, 6, 0))} and {pct(recall(en, 0.9, 6, 0))}.

This is what the design predicts. The fingerprint sees only tokens, and with
`cjk => 'unigram'` a Han character is a token, as an English word is. Replacing one changes one
unigram and three trigram features in either language, and the two sets have the same numbers
of tokens.

**The footer row is the one difference, and it comes from the footers, not from the
language.** A footer adds the same features to every document, so it pushes all fingerprints
the same way. How far depends on that footer's hashes. Between the three Chinese footers, the
share within k = 6 ranged from {pct(zf[0])} to {pct(zf[1])}; between the three English ones,
from {pct(ef[0])} to {pct(ef[1])}.

**False positives are no worse in Chinese.**
- Unrelated documents are {cz['mean']:.1f} bits apart on average in Chinese and
  {ce['mean']:.1f} in English. Both are below 32, because frequent tokens (的, 是; the, and) are
  features that most documents share.
- No dissimilar pair (Jaccard < 0.5) comes within k = 3 in either set. Within k = 6 there are
  {fp_within(cz, 6, similar=False)} (Chinese) and {fp_within(ce, 6, similar=False)} (English).
- At k = 10, Chinese has {fp_within(cz, 10, similar=False)} such pairs, against
  {fp_within(ce, 10, similar=False)} for English. {fp_within(cz, 10, similar=False, twin=True)}
  of the Chinese ones are Simplified/Traditional twins, which are copies in fact.
- The English set holds many more real near-duplicates: {fp_within(ce, 3, similar=True)}
  pairs within k = 3, against {fp_within(cz, 3, similar=True)}. Package descriptions come in
  families.

**Bigram mode trades recall for a thinner tail.** With `cjk => 'bigram'`, one changed character
changes two tokens, so edits move more bits. For `replace_1`, the median is
{zk['replace_1']['schemes'][1][0]:g} bits against {zk['replace_1']['schemes'][0][0]:g}, and
{pct(within(zk, 'replace_1', 1, 0))} of the pairs are within k = 3 against
{pct(within(zk, 'replace_1', 0, 0))}. Unrelated texts lie closer to 32 bits apart
({cg['mean']:.1f} on average), so fewer of them come near. Bigram is therefore shifted rather
than worse. With two bits more of k, it finds about as much with no more false positives (of
Jaccard ≥ 0.9 pairs):
- bigram at k = 8: {pct(recall(zh, 0.9, 8, 1))}, with {fp_within(cg, 8, similar=False)} false
  positives; unigram at k = 6: {pct(recall(zh, 0.9, 6, 0))}, with
  {fp_within(cz, 6, similar=False)};
- bigram at k = 10: {pct(recall(zh, 0.9, 10, 1))}, with {fp_within(cg, 10, similar=False)};
  unigram at k = 8: {pct(recall(zh, 0.9, 8, 0))}, with {fp_within(cz, 8, similar=False)}.

The false-positive counts are too small here to rank the two modes at large k. At the k = 3
that the README recommends, which is also the index's default `radius`, bigram finds far
fewer pairs. Unigram therefore remains the right default for Chinese, and it is the mode that
matches English.

**Short texts are hard in both languages alike.** In documents of fewer than 80 tokens, one
replaced token leaves only {pct(short[0])} (Chinese) and {pct(short[1])} (English) of the pairs
within k = 3. The seed example has 7 tokens, and its pair is {ctx['seed'][0]} bits apart
({ctx['seed'][1]} with bigrams).

Equal numbers of tokens are not equal amounts of text, however. A Chinese text usually has more
tokens than an English one saying the same thing, which helps the fingerprint. But a one-word
edit in Chinese often changes two characters (马上 → 立刻), which hurts it. Measured per token, the two
languages are equal. Per word, this report does not measure them.

**What simhash does not catch: Simplified and Traditional copies.** The same paragraph in
Simplified and Traditional characters has a median Jaccard similarity of {tw['jac']:.2f}, and
its two fingerprints are a median {tw['schemes'][0][0]:g} bits apart; only
{pct(tw['schemes'][0][1][2])} come within k = 10. About {pct(tw['changed'])} of the characters
differ, so nearly every trigram changes. English has no counterpart to this. To find such copies,
convert the texts to one script before fingerprinting, for example with OpenCC outside the
database. Folding scripts cannot enter the frozen default scheme; it would have to be a new,
separately named scheme.

**Limits of this test set.**
- The edits are synthetic. A replacement draws a random frequent character or word, not a
  synonym. To the fingerprint this makes no difference, since token hashes are unrelated
  whether the meanings are close or not.
- The Chinese set is mostly man-page paragraphs: technical prose with commands mixed in. The
  entries of the fortune file `chinese` (sayings, classical prose) behaved as the man pages did
  ("By source"). The Tang and Song poems came out farther apart. They are few and shorter, and
  this report does not separate the two effects.
- `delete_sentence` applies to fewer Chinese documents ({zk['delete_sentence']['n']:,} against
  {ek['delete_sentence']['n']:,}): more Chinese paragraphs have no sentence or clause of 3 tokens
  to 20 % of the text."""


# ---------------------------------------------------------------------- main

def build_sets(rng):
    """The Chinese and English document sets, and the Simplified/Traditional
    twins of manpages-zh."""
    log("extracting Chinese documents from manpages-zh and fortunes-zh")
    pages = manpages()
    zh_cands = chinese_candidates(pages)
    twins = script_twins(pages)
    log(f"  {len(zh_cands):,} candidates, {len(twins):,} twins; loading English descriptions")
    en_cands = english_candidates()
    log(f"  {len(en_cands):,} English texts; counting tokens with the extension")
    stats = token_stats(zh_cands + en_cands)
    zh_docs, n_pool = select_chinese(zh_cands, stats[:len(zh_cands)], rng)
    en_docs = match_english([n for _, _, n in zh_docs], en_cands, stats[len(zh_cands):], rng)
    return zh_docs, en_docs, twins, (len(zh_cands), n_pool)


def edited_group(docs, pairs):
    """Texts (the documents, then the edited copies) and pairs of indexes."""
    texts = [t for _, t, _ in docs] + [e for _, _, e, _ in pairs]
    return texts, [(i, len(docs) + p) for p, (i, _, _, _) in enumerate(pairs)]


def twin_group(twins):
    texts = [a for a, _ in twins] + [b for _, b in twins]
    return texts, [(i, len(twins) + i) for i in range(len(twins))]


def stack(groups):
    """One list of texts and one of pairs, from groups of (texts, pairs of
    indexes into them); and where each group starts in both."""
    texts, pairs, starts = [], [], []
    for t, p in groups:
        starts.append((len(texts), len(pairs)))
        pairs += [(a + len(texts), b + len(texts)) for a, b in p]
        texts += t
    return texts, pairs, starts


def main():
    t0 = time.time()
    rng = random.Random(SEED)
    zh_docs, en_docs, twins, n_cands = build_sets(rng)
    log(f"making near-duplicate pairs of {len(zh_docs):,} Chinese and "
        f"{len(en_docs):,} English documents")
    zh_pairs = make_pairs(zh_docs, "zh", rng)
    en_pairs = make_pairs(en_docs, "en", rng)
    texts, pairs, starts = stack([edited_group(zh_docs, zh_pairs),
                                  edited_group(en_docs, en_pairs), twin_group(twins)])
    log(f"  fingerprinting {len(texts):,} texts; {len(pairs):,} pairs")
    fpu, fpg, toks, dist, seed = fingerprint(texts, pairs)

    log("measuring")
    (zt, zp), (et, ep), (tt, tp) = starts
    zh = pair_results(zh_docs, zh_pairs, toks, dist[zp:ep], zt)
    en = pair_results(en_docs, en_pairs, toks, dist[ep:tp], et)
    tw = {"dist": dist[tp:],
          "jac": np.array([jaccard(toks[tt + i], toks[tt + len(twins) + i])
                           for i in range(len(twins))]),
          "changed": changed_han_share(twins)}
    twin_set = {frozenset(p) for p in twins}
    zr, er = slice(zt, zt + len(zh_docs)), slice(et, et + len(en_docs))
    fp = {"zh": [false_positives(f[zr], toks[zr], texts[zr], twin_set) for f in (fpu, fpg)],
          "en": [false_positives(fpu[er], toks[er], texts[er], twin_set)]}
    in_set = set(texts[zr])
    zn = np.array([n for _, _, n in zh_docs])
    en_n = np.array([n for _, _, n in en_docs])
    ctx = {"zh": zh, "en": en, "n_docs": len(zh_docs), "n_cands": n_cands,
           "sources": sorted(collections.Counter(s for s, _, _ in zh_docs).items()),
           "zh_quant": quantiles(zn), "en_quant": quantiles(en_n),
           "n_exact": int((zn == en_n).sum()), "max_gap": int(np.abs(zn - en_n).max()),
           "zh_kinds": summarize_kinds(zh), "en_kinds": summarize_kinds(en),
           "format_ok": bool(zh["same"][zh["kind"] == "format_only"].all()
                             and en["same"][en["kind"] == "format_only"].all()),
           "fp": fp, "seed": seed, "twins": twin_summary(tw),
           "twins_in_set": sum(1 for a, b in twins if a in in_set and b in in_set),
           "bands": ((40, 79), (80, 159), (160, MAX_TOKENS)),
           "footer_tokens": {lang: ", ".join(str(n) for n, _ in
                                             token_stats([("", f) for f in FOOTERS[lang]]))
                             for lang in FOOTERS},
           "clauses": clause_shares(zh, en),
           "few_sentences": (few_sentences(zh_docs, "zh"), few_sentences(en_docs, "en")),
           "runtime": time.time() - t0}
    ctx["reading"] = reading(ctx)
    write_report(ctx)
    print_summary(ctx)
    log(f"wrote {REPORT} in {time.time() - t0:.0f} s")


def print_summary(ctx):
    print(fmt_kind_table(ctx["zh_kinds"], ctx["en_kinds"]))
    print()
    print(fmt_recall_table(ctx["zh"], ctx["en"]))
    print()
    print(fmt_curve_table(ctx["zh"], ctx["en"], ctx["fp"]))
    print()
    print(fmt_fp_table(ctx["fp"]))
    print()
    print(fmt_twin_table(ctx["twins"]))
    print("seed example:", ctx["seed"], "; format_only tokens unchanged:", ctx["format_ok"])


if __name__ == "__main__":
    main()
