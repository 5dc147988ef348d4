#!/usr/bin/env python3
"""Plot knn_bench.sh reports: queries per second of each query kind, one
group of bars per table size.

    /usr/bin/python3 test/bench/plot_knn_bench.py OUT.png REPORT.txt [REPORT.txt ...]

Needs Debian's python3-matplotlib.  Only the first index layout of each
report (the default one) is drawn.  Throughput is on a log scale: the
kinds differ by four orders of magnitude.
"""
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

KINDS = [
    ("sequential scan, random, LIMIT 10", "seq10_random", "#999999"),
    ("index, random, LIMIT 10", "knn10_random", "#2a7ab9"),
    ("index, planted, LIMIT 1", "knn1_planted", "#5aa05a"),
    ("index, planted, k = 3 radius", "k3_planted", "#e08a2c"),
]


def read(report):
    text = open(report).read()
    rows = int(re.search(r"^rows: (\d+)", text, re.M).group(1))
    tps = {}
    for m in re.finditer(r"^  (\w+)\s+tps\s+([0-9.]+)", text, re.M):
        tps.setdefault(m.group(1), float(m.group(2)))   # the first layout's
    return rows, tps


def main():
    out, reports = sys.argv[1], sys.argv[2:]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    x = 0
    top = 1
    for report in reports:
        rows, tps = read(report)
        start = x
        for label, key, color in KINDS:
            if key not in tps:
                continue
            ax.bar(x, tps[key], color=color, label=label if report == reports[0] else None)
            ax.text(x, tps[key] * 1.15, f"{tps[key]:,.0f}", ha="center", fontsize=8)
            top = max(top, tps[key])
            x += 1
        ax.text((start + x - 1) / 2, 0.25, f"{rows / 1e6:g}M rows", ha="center", fontsize=10,
                weight="bold")
        x += 0.8
    ax.set_yscale("log")
    ax.set_ylim(0.15, top * 80)
    ax.set_xticks([])
    ax.set_ylabel("queries per second (pgbench, 2 clients)")
    ax.set_title("Nearest neighbours: ORDER BY fp <-> q, exact")
    ax.legend(fontsize=8, loc="upper center", ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
