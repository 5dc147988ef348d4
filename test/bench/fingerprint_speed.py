#!/usr/bin/env python3
"""Speed of simhash(body) against md5(body) over the same rows.

Runs each query several times in one session, alternating so that both see
the same cache and machine state, and reports medians, the ratio and MB/s.
Needs a table of documents (default: docs(body text)) and psql on PATH with
PGHOST/PGPORT/... pointing at the server.

    test/bench/fingerprint_speed.py [--table docs] [--runs 7] [--wide]

--wide adds simhash128(body), the 128-bit fingerprint, and its time
against simhash(body)'s.
"""
import argparse
import re
import statistics
import subprocess


def timed(sql_list, runs):
    script = ["\\timing on"]
    for _ in range(runs):
        script.extend(sql_list)
    out = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1"],
                         input="\n".join(script) + "\n", text=True,
                         capture_output=True, check=True).stdout
    times = [float(t) for t in re.findall(r"Time: ([0-9.]+) ms", out)]
    per_query = {q: times[i::len(sql_list)] for i, q in enumerate(sql_list)}
    return per_query


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--table", default="docs")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--wide", action="store_true")
    args = ap.parse_args()
    t = args.table
    size = subprocess.run(
        ["psql", "-X", "-Atc", f"SELECT count(*), sum(octet_length(body)) FROM {t}"],
        text=True, capture_output=True, check=True).stdout.strip().split("|")
    rows, nbytes = int(size[0]), int(size[1])
    queries = {
        "scan": f"SELECT count(length(body)) FROM {t};",
        "md5": f"SELECT count(md5(body)) FROM {t};",
        "simhash": f"SELECT count(simhash(body)) FROM {t};",
    }
    if args.wide:
        queries["simhash128"] = f"SELECT count(simhash128(body)) FROM {t};"
    # one warm-up round, then measured rounds
    timed(list(queries.values()), 1)
    res = timed(list(queries.values()), args.runs)
    med = {k: statistics.median(res[q]) for k, q in queries.items()}
    best = {k: min(res[q]) for k, q in queries.items()}
    mb = nbytes / 1e6
    print(f"rows: {rows}, text: {mb:.1f} MB, runs: {args.runs} (medians)")
    for k in queries:
        print(f"  {k:8s} median {med[k]:8.1f} ms  {mb / (med[k] / 1000):7.1f} MB/s"
              f"   (fastest run {best[k]:7.1f} ms)")
    ratio = med["simhash"] / med["md5"]
    print(f"simhash / md5 time ratio: {ratio:.2f} of medians, "
          f"{best['simhash'] / best['md5']:.2f} of fastest runs (target <= 1.5)")
    extra = med["simhash"] - med["scan"]
    if extra > 0:
        print(f"simhash alone (minus the scan): {mb / (extra / 1000):.0f} MB/s")
    if args.wide:
        wide = med["simhash128"] - med["scan"]
        print(f"simhash128 / simhash time ratio: {med['simhash128'] / med['simhash']:.2f} of medians, "
              f"{best['simhash128'] / best['simhash']:.2f} of fastest runs; "
              f"minus the scan: {wide / extra:.2f}" if extra > 0 else "")


if __name__ == "__main__":
    main()
