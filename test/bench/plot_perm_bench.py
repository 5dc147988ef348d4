#!/usr/bin/env python3
"""Plot a perm_bench.sh report: throughput of each method at k = 3 and 6.

    /usr/bin/python3 test/bench/plot_perm_bench.py REPORT.txt OUT.png

Needs Debian's python3-matplotlib.  Throughput is drawn on a log scale:
the methods differ by four orders of magnitude.
"""
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    report, out = sys.argv[1], sys.argv[2]
    text = open(report).read()
    rows = re.search(r"^rows: (\d+)", text, re.M)
    tps = {m.group(1): float(m.group(2))
           for m in re.finditer(r"^  (\w+)\s+tps\s+([0-9.]+)", text, re.M)}
    n = re.search(r"perm_bench_(\d+)", report)
    title_rows = int(rows.group(1)) if rows else (int(n.group(1)) if n else 0)
    groups = [
        ("k = 3", [("simhash_perm", "perm3"), ("4 btrees (DIY)", "diy3"),
                   ("sequential scan", "seq3"), ("btree fp = q", "btree_eq")]),
        ("k = 6", [("simhash_perm", "perm6"), ("7 btrees (DIY)", "diy6"),
                   ("sequential scan", "seq6")]),
    ]
    colors = {"simhash_perm": "#2a7ab9", "4 btrees (DIY)": "#e08a2c",
              "7 btrees (DIY)": "#e08a2c", "sequential scan": "#999999",
              "btree fp = q": "#5aa05a"}
    fig, ax = plt.subplots(figsize=(8, 4.2))
    x = 0
    ticks, labels = [], []
    for gname, items in groups:
        start = x
        for label, key in items:
            if key not in tps:
                continue
            ax.bar(x, tps[key], color=colors[label])
            ax.text(x, tps[key] * 1.15, f"{tps[key]:,.0f}", ha="center", fontsize=8)
            ticks.append(x)
            labels.append(label)
            x += 1
        ax.text((start + x - 1) / 2, max(tps.values()) * 2.2, gname, ha="center",
                fontsize=10, weight="bold")
        x += 0.8
    ax.set_yscale("log")
    ax.set_ylim(0.5, max(tps.values()) * 6)
    ax.set_xticks(ticks)
    ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("queries per second (pgbench, 2 clients)")
    ax.set_title(f"Hamming-radius queries on {title_rows:,} fingerprints")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
