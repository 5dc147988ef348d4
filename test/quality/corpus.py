"""Load Debian bookworm package descriptions (apt Translation-en) as documents.

A document = synopsis + "\n" + long description, where continuation lines have
their single leading space removed and a line " ." becomes an empty line.
"""
import subprocess

DEFAULT_PATH = "/var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_main_i18n_Translation-en.lz4"


def load(path=DEFAULT_PATH):
    """Return a list of (package, text) in file order."""
    raw = subprocess.run(["lz4cat", path], check=True, capture_output=True).stdout
    docs = []
    pkg = None
    lines = None

    def flush():
        if pkg is not None and lines is not None:
            docs.append((pkg, "\n".join(lines)))

    for line in raw.decode("utf-8").split("\n"):
        if line.startswith("Package: "):
            flush()
            pkg = line[len("Package: "):].strip()
            lines = None
        elif line.startswith("Description-en: "):
            lines = [line[len("Description-en: "):]]
        elif line.startswith(" ") and lines is not None:
            body = line[1:]
            lines.append("" if body == "." else body)
        elif line == "":
            continue
        # other fields (Description-md5) ignored
    flush()
    return docs


if __name__ == "__main__":
    d = load()
    print(len(d), "documents")
    print(d[1][0]); print(d[1][1])
