#!/usr/bin/env bash
# Fingerprinting speed against md5 over apt's package descriptions.
#
#   bash test/bench/fingerprint_speed.sh [RUNS]      (default 21)
#
# Installs and builds like the demo, loads the descriptions into a
# throwaway cluster, runs test/bench/fingerprint_speed.py, and stops the
# cluster.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

simhash_install_deps
simhash_build_install
simhash_cluster_start
psql -q -c 'CREATE EXTENSION simhash'
simhash_load_corpus docs
psql -q -c 'VACUUM ANALYZE docs'
python3 test/bench/fingerprint_speed.py --runs "${1:-21}"
