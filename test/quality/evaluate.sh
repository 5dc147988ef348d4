#!/usr/bin/env bash
# The quality evaluation, on a throwaway cluster:
#
#   bash test/quality/evaluate.sh            English: main schemes, recipe, MinHash;
#                                            then the Chinese test set
#   bash test/quality/evaluate.sh --all      every feature scheme (about 10 minutes)
#   bash test/quality/evaluate.sh --check    only the checks test/run_all.sh runs
#   bash test/quality/evaluate.sh --sentences  only the sentence signature beside
#                                            simhash (docs/reports/quality_sentences.md)
#
# Installs what it needs (Debian packages, apt's English descriptions), builds
# and installs the extension, starts a cluster, runs test/quality/evaluate.py
# (docs/reports/quality.md, .png, .json), test/quality/chinese.py
# (docs/reports/quality_chinese.md) and test/quality/sentences.py
# (docs/reports/quality_sentences.md), and stops the cluster.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

simhash_install_deps python3-matplotlib manpages-zh fortunes-zh
simhash_build_install
simhash_cluster_start
psql -q -c 'CREATE EXTENSION simhash'
case " $* " in
	*" --sentences "*)
		/usr/bin/python3 test/quality/sentences.py
		exit 0 ;;
esac
/usr/bin/python3 test/quality/evaluate.py "$@"
case " $* " in
	*" --check "*) ;;
	*)
		/usr/bin/python3 test/quality/chinese.py
		/usr/bin/python3 test/quality/sentences.py ;;
esac
