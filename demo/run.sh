#!/usr/bin/env bash
# The simhash demo: near-duplicate Debian package descriptions.
#
#   bash demo/run.sh
#
# On a fresh Debian 12 machine (as root) it installs what it needs, builds
# and installs the extension, starts a throwaway PostgreSQL cluster in a
# temporary directory, loads apt's ~64,000 English package descriptions,
# fingerprints them with simhash(), finds every pair within Hamming distance
# 3, prints the largest groups of near-duplicates, and ingests them as a
# crawler would, into a table that refuses near-copies.  The cluster is
# stopped and deleted at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/common.sh

K=${K:-3}
simhash_install_deps
simhash_build_install
simhash_cluster_start

psql -q -c 'CREATE EXTENSION simhash'
echo "== loading apt's package descriptions"
simhash_load_corpus docs
psql -q -c 'ALTER TABLE docs ADD COLUMN fp simhash64'
python3 demo/near_duplicates.py --k "$K"
