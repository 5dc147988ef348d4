#!/usr/bin/env python3
"""apt's English package descriptions: the corpus of the demo, the speed
benchmark and the quality evaluation.  This is the one loader they share.

Source: the release's own list of English descriptions,
    /var/lib/apt/lists/*_main_i18n_Translation-en.lz4
whose suite has no "-" in its name: ..._dists_bookworm_main_i18n_... is
read; ..._dists_bookworm-updates_... and ..._dists_bookworm-security_...
are not.  The update suites repeat packages of the release with newer
versions and change from week to week; leaving them out keeps the corpus,
and every number measured on it, fixed for a release.  If several release
lists match (several releases or mirrors), they are read in sorted order.

Documents: one per entry of the list, in file order.  Every entry is kept,
also a package listed more than once: the list holds one entry per
distinct description, so a package whose description differs between
architectures or versions appears once for each.  Identical texts are kept
too; the demo and the evaluation set them aside themselves.

Text of an entry: the synopsis (the text after "Description-en: "), then
each continuation line of the long description with its one leading space
removed, a line " ." becoming an empty line, joined with "\\n".  Other
fields (Package is the name; Description-md5) are not part of the text.

    from corpus import load        # list of (package, text)

From the command line (Debian's python3, no other package needed):

    python3 tools/corpus.py           counts, and the files read
    python3 tools/corpus.py --csv     CSV (package, body) on stdout, for
                                      psql's \\copy ... WITH (FORMAT csv)
    python3 tools/corpus.py --files [LANG]   the files read, one per line
    python3 tools/corpus.py --fetch   apt-get update with the English and
                                      the Chinese (zh_CN) descriptions

Other languages: load(lang="zh_CN") reads apt's Chinese descriptions
(*_main_i18n_Translation-zh%5fCN.lz4, "Description-zh_CN: " entries) in the
same way; the mixed-script evaluation (test/quality/mixed.py) uses them.
apt keeps only the lists of the languages of its last update, so fetch()
always asks for English too.
"""
import csv
import glob
import io
import os
import subprocess
import sys

PATTERN = "/var/lib/apt/lists/*_main_i18n_Translation-en.lz4"
SUFFIX = "_main_i18n_Translation-en.lz4"
LANGUAGES = "en,zh_CN"          # what fetch() asks apt for


def fetch():
    """apt-get update with the description lists of LANGUAGES (as root)."""
    subprocess.run(["apt-get", "update", "-qq", "-o", f"Acquire::Languages={LANGUAGES}"],
                   check=True)


def files(lang="en"):
    """The release lists that load() reads, sorted; exits if there is none."""
    suffix = SUFFIX.replace("-en.", "-" + lang.replace("_", "%5f") + ".")
    pattern = "/var/lib/apt/lists/*" + suffix
    out = []
    for path in sorted(glob.glob(pattern)):
        name = os.path.basename(path)
        suite = name[:-len(suffix)].rsplit("_dists_", 1)[-1]
        if "-" not in suite:
            out.append(path)
    if not out:
        sys.exit(f"no release list of apt's descriptions in {lang} ({pattern}, suite without '-'): "
                 f"run python3 tools/corpus.py --fetch (apt-get update -o Acquire::Languages={LANGUAGES})")
    return out


def parse(data, lang="en"):
    """(package, text) of each entry of a Translation-<lang> file's text."""
    field = f"Description-{lang}: "
    docs = []
    pkg = None
    lines = None

    def flush():
        if pkg is not None and lines is not None:
            docs.append((pkg, "\n".join(lines)))

    for line in data.split("\n"):
        if line.startswith("Package: "):
            flush()
            pkg = line[len("Package: "):].strip()
            lines = None
        elif line.startswith(field):
            lines = [line[len(field):]]
        elif line.startswith(" ") and lines is not None:
            body = line[1:]
            lines.append("" if body == "." else body)
        # blank lines (between entries) and other fields (Description-md5)
        # are ignored
    flush()
    return docs


def load(paths=None, lang="en"):
    """Return the documents as a list of (package, text), in file order."""
    docs = []
    for path in paths or files(lang):
        raw = subprocess.run(["lz4cat", path], check=True, capture_output=True).stdout
        docs.extend(parse(raw.decode("utf-8"), lang))
    return docs


def main(argv):
    if argv[1:] == ["--csv"]:
        out = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="")
        w = csv.writer(out, lineterminator="\n")
        w.writerows(load())
        out.flush()
    elif argv[1:] == ["--fetch"]:
        fetch()
    elif argv[1:2] == ["--files"] and len(argv) <= 3:
        print("\n".join(files(*argv[2:])))
    elif argv[1:] == []:
        docs = load()
        texts = {t for _, t in docs}
        size = sum(len(t.encode("utf-8")) for _, t in docs)
        print(f"{len(docs)} descriptions ({size / 1e6:.1f} MB), {len(texts)} distinct texts, from")
        print("\n".join("  " + f for f in files()))
    else:
        sys.exit("usage: python3 tools/corpus.py [--csv | --files [LANG] | --fetch]")


if __name__ == "__main__":
    main(sys.argv)
