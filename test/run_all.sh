#!/usr/bin/env bash
# Run every test of the simhash extension on a throwaway cluster.
#
#   bash test/run_all.sh
#
# On a fresh Debian 12 machine, as root, it installs what it needs (apt),
# builds with warnings as errors, installs the extension, starts a private
# cluster in a temporary directory (Unix socket only), runs the pg_regress
# and isolation tests against it, then the TAP tests (which start and stop
# their own clusters), and stops everything even on failure.  Exit status 0
# means every test passed.  .ci/run runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/common.sh

simhash_install_deps
simhash_build_install

status=0
simhash_cluster_start

echo "== pg_regress and isolation tests"
if ! make -s installcheck; then
	status=1
	for f in regression.diffs output_iso/regression.diffs; do
		[ -f "$f" ] && { echo "---- $f"; cat "$f"; }
	done
fi
simhash_cluster_stop

echo "== TAP tests"
# PostgreSQL::Test::Cluster runs initdb, which refuses root: run the TAP
# suite as the postgres user, with its scratch files in a private directory.
tapdir=$(mktemp -d /tmp/simhash-tap.XXXXXX)
chmod 755 "$tapdir"
[ "$(id -u)" = 0 ] && chown postgres: "$tapdir"
pgxs_src=$(dirname "$(dirname "$(pg_config --pgxs)")")
if ! simhash_as_pg env PATH="$PATH" TESTDIR="$tapdir" PG_REGRESS="$pgxs_src/test/regress/pg_regress" \
	prove -I "$pgxs_src/test/perl" test/t/*.pl; then
	status=1
	find "$tapdir" -name '*.log' -newer "$tapdir" 2>/dev/null | while read -r log; do
		echo "---- $log (last 40 lines)"; tail -40 "$log"
	done
fi
rm -rf "$tapdir"

if [ $status -eq 0 ]; then
	echo "== all tests passed"
else
	echo "== SOME TESTS FAILED"
fi
exit $status
