#!/usr/bin/env python3
"""The per-part work of simhash_pairs() on Citus's workers, and its
extrapolation (test/bench/citus_bench.sh).

Reads lines "part local count" from stdin: the rows of each part (one per
node that holds shards) that lie on the part's own node (local 1) or on
the other (local 0), counted by SQL with simhash_pairs_part_has and the
layout the coordinator chose.  Prints the rows and packed bytes each part
reads and receives, then the same figures from the formulas of
src/pairs/pairscitus.c for a billion rows on 16 workers.

Usage: citus_parts.py ROWS LAYOUT
"""
import math
import sys

# A packed row (pairs.h, PAIRS_PACKED_HEADER): fingerprint 8 bytes, key
# length 4, a bigint key 8; it crosses as bytea's hexadecimal text
PACKED = 8 + 4 + 8


def tables(blocks, k):
    return math.comb(blocks, blocks - k)


def choose_blocks(n, k):
    """pairssearch.c's choose_blocks: the cheapest B within 16 blocks, 64 tables"""
    rows = max(2.0, float(n))
    best, best_cost = k + 1, None
    for b in range(k + 1, 17):
        t = tables(b, k)
        if t > 64:
            break
        cost = t * (60.0 + rows / 2.0 ** (64.0 * (b - k) / b) / 2.0)
        if best_cost is None or cost < best_cost:
            best, best_cost = b, cost
    return best


def first_blocks(blocks, k):
    """the distinct first blocks of the tables: a row's part in each"""
    return k + 1 if blocks > k else 1


def copies(parts, f):
    """the parts a row goes to, on average: P (1 - (1 - 1/P)^F)"""
    return parts * (1 - (1 - 1 / parts) ** f)


def main():
    rows, layout = int(sys.argv[1]), sys.argv[2]
    k, blocks = (int(x) for x in layout.split("/")[:2])
    t = tables(blocks, k)
    counts = {}
    for line in sys.stdin:
        part, local, n = (int(x) for x in line.split())
        counts.setdefault(part, {})[local] = n
    total = rows + rows // 100
    parts = len(counts)
    print(f"  {total} rows, k = {k}: {blocks} blocks, {t} tables; {parts} parts")
    for p in sorted(counts):
        own, other = counts[p].get(1, 0), counts[p].get(0, 0)
        print(f"  part {p}: reads {own:9d} rows on its node, receives {other:9d} "
              f"({other * PACKED / 2**20:6.1f} MiB packed, {2 * other * PACKED / 2**20:6.1f} MiB as text); "
              f"{(own + other) / total:.3f} of the table")
    print(f"  a row goes to {copies(parts, first_blocks(blocks, k)):.3f} parts on average by the formula "
          f"P (1 - (1 - 1/P)^(k + 1)); measured {sum(sum(c.values()) for c in counts.values()) / total:.3f}")
    print(f"  each table's sort in a part: the rows whose prefix hashes to it, {total / parts:.0f} on average")
    print()
    n, p = 10**9, 16
    b = choose_blocks(n, k)
    tt = tables(b, k)
    c = copies(p, first_blocks(b, k))
    per_worker = n * c / p
    print(f"== extrapolation: {n:.0e} rows, k = {k}, {p} workers (formulas of src/pairs/pairscitus.c)")
    print(f"  layout: {b} blocks, {tt} tables; a row goes to {c:.2f} parts")
    print(f"  each worker reads {per_worker:.3g} rows ({per_worker / n:.3f} of the table), "
          f"{per_worker * (p - 1) / p:.3g} of them from other workers: "
          f"{per_worker * (p - 1) / p * PACKED / 2**30:.1f} GiB packed, twice that as text")
    print(f"  each worker sorts {tt * n / p:.3g} rows over its {tt} tables ({tt} x N / P); "
          f"the coordinator's own search sorts {tt * n:.3g}")
    print(f"  the coordinator receives the pairs only; its own search would hold {16 * n / 2**30:.0f} GiB "
          f"of (key, fingerprint) records and read every row")


if __name__ == "__main__":
    main()
