#!/usr/bin/env bash
# Run every test of the simhash extension on a throwaway cluster.
#
#   bash test/run_all.sh
#
# On a fresh Debian 12 machine, as root, it installs what it needs (apt),
# builds with warnings as errors, installs the extension, checks that the
# documents agree with the code (test/docs/check_docs.py: versions, layers,
# links, the README's measured figures, the licence), starts a private
# cluster in a temporary directory (Unix socket only), runs the pg_regress
# and isolation tests against it, checks the fingerprints against the
# independent reference implementation, runs the extension from Python
# (psycopg2) and Node.js (node-postgres), runs every SQL example of
# README.md and docs/ as it is written there, holds the quality evaluation to the
# targets a run can check (test/quality/evaluate.py --check, about 3
# minutes), builds Citus for the distributed test (tools/build_citus.sh,
# cached), then runs the TAP tests (make prove_installcheck, one test at a
# time; they start and stop their own clusters), then test/sanitize.sh (the
# tests and a bounded fuzz run under ASan and UBSan on a private copy of
# PostgreSQL, about 12.5 minutes), then the same suites on an assert-enabled
# PostgreSQL 18 (tools/build_postgres.sh, cached), and stops everything even
# on failure.  Each step's duration is printed as it ends and again, all
# together, before the last line (docs/testing.md, "How long a run takes").
# The last line counts the suites; exit status 0 means every test passed.
# .ci/run runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/common.sh

# Where the time goes: each step's duration since the one before, printed
# as it ends ("== time: ...") and again, all together, at the end of the log
SIMHASH_TIMES=$(mktemp /tmp/simhash-times.XXXXXX)
lap_start=$SECONDS
lap() {	# what took the time since the last lap
	local s=$((SECONDS - lap_start))
	printf '%6d s  %s\n' "$s" "$1" >>"$SIMHASH_TIMES"
	echo "== time: $1: $s s"
	lap_start=$SECONDS
}

simhash_install_deps
lap "Debian packages (apt-get)"
simhash_build_install
lap "build and install for PostgreSQL 15"

passed=0
failed=0
# what the sanitizer stage found out about a crash, printed again at the end
SIMHASH_FAILURE_LOG=$(mktemp /tmp/simhash-failures.XXXXXX)
export SIMHASH_FAILURE_LOG
record() {	# suite name, exit status
	lap "$1"
	if [ "$2" -eq 0 ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "== FAILED: $1"
	fi
}

# pg_regress and isolation tests on the running cluster; LABEL prefixes
# the suite's name
run_installcheck() {	# label
	local rc=0
	echo "== ${1}pg_regress and isolation tests"
	make -s installcheck PG_CONFIG="$PG_CONFIG" || rc=$?
	if [ $rc -ne 0 ]; then
		for f in regression.diffs output_iso/regression.diffs; do
			[ -f "$f" ] && { echo "---- $f"; cat "$f"; }
		done
	fi
	record "${1}pg_regress and isolation" $rc
}

# The SQL examples of README.md and docs/ on the running cluster
run_readme_examples() {	# label
	local rc=0
	echo "== ${1}the SQL examples of README.md and docs/, as they are written there (test/readme/run_examples.py)"
	/usr/bin/python3 test/readme/run_examples.py || rc=$?
	record "${1}README examples" $rc
}

# The TAP tests TESTS, one make prove_installcheck each.  They run initdb,
# which refuses root: as root, they run as the postgres user, with their
# clusters and logs in a private directory that user can write (the target
# empties it at the start of each call).  ENV... is passed to them.
run_tap_tests() {	# label tests env...
	local label=$1 tests=$2 tapdir t rc
	shift 2
	echo "== ${label}TAP tests (make prove_installcheck, one test per call)"
	# 011_citus needs Citus in this installation: where there is none (it
	# is built for PostgreSQL 15 only, tools/build_citus.sh) the test is
	# left out here, saying so, rather than run to report that it skipped
	if [ ! -f "$("$PG_CONFIG" --pkglibdir)/citus.so" ] && [[ " $tests " == *"/011_citus.pl "* ]]; then
		echo "== ${label}test/t/011_citus.pl not run: no Citus in $("$PG_CONFIG" --pkglibdir)"
		tests=$(echo "$tests" | tr ' ' '\n' | grep -v '/011_citus.pl' | tr '\n' ' ')
	fi
	tapdir=$(mktemp -d /tmp/simhash-tap.XXXXXX)
	chmod 755 "$tapdir"
	[ "$(id -u)" = 0 ] && chown postgres: "$tapdir"
	for t in $tests; do
		rc=0
		simhash_as_pg env PATH="$PATH" "$@" \
			make -s prove_installcheck PG_CONFIG="$PG_CONFIG" TAP_TESTDIR="$tapdir" PROVE_TESTS="$t" || rc=$?
		if [ $rc -ne 0 ]; then
			find "$tapdir" -name 'regress_log_*' | while read -r log; do
				echo "---- $log (last 60 lines)"; tail -60 "$log"
			done
		fi
		record "$label$t" $rc
	done
	rm -rf "$tapdir"
}

echo "== the documents against the code (test/docs/check_docs.py)"
rc=0
/usr/bin/python3 test/docs/check_docs.py || rc=$?
record "documents against the code" $rc

simhash_cluster_start
run_installcheck ""

echo "== fingerprints against the independent reference implementation"
rc=0
PGDATABASE=contrib_regression /usr/bin/python3 test/reference/check.py --db --sample 1500 || rc=$?
record "reference check" $rc

echo "== clients: psycopg2 and node-postgres (test/clients/run.sh)"
rc=0
bash test/clients/run.sh || rc=$?
record "clients" $rc

run_readme_examples ""

echo "== quality checks on apt's package descriptions (test/quality/evaluate.py --check)"
rc=0
PGDATABASE=contrib_regression /usr/bin/python3 test/quality/evaluate.py --check || rc=$?
record "quality checks" $rc
simhash_cluster_stop

# Each TAP test runs once on PostgreSQL 15, in one of two builds: under the
# sanitizers (test/sanitize.sh), where a bad read shows, all but the
# replica and concurrency tests (002, 004: under the sanitizers they repeat
# the code paths of the others at twice the time), 007 (it upgrades 15 to
# 18: the PostgreSQL 18 stage runs it) and 011 (no Citus is built for the
# sanitized copy), which run in the release build.  On PostgreSQL 18 every
# test runs again but those whose outcome no PostgreSQL version decides:
# 005, 009 and 013 damage the index's own pages and hold the index's own
# checks to them, the same C on every version (their assertions are
# PostgreSQL's too: the sanitized 15 runs them).  docs/testing.md, "How
# long a run takes", has the time this saves.
all_tap=$(echo test/t/*.pl)
release_tap=$(echo "$all_tap" | tr ' ' '\n' | grep -e '/002_' -e '/004_' -e '/011_' | tr '\n' ' ')
sanitizer_tap=$(echo "$all_tap" | tr ' ' '\n' | grep -v -e '/002_' -e '/004_' -e '/007_' -e '/011_' | tr '\n' ' ')
pg18_tap=$(echo "$all_tap" | tr ' ' '\n' | grep -v -e '/005_' -e '/009_' -e '/013_' | tr '\n' ' ')
# Citus for 011_citus (tools/build_citus.sh: built once from its release
# source, cached outside the checkout; without a source at hand it says so
# and the test skips)
echo "== Citus for the distributed test (tools/build_citus.sh)"
rc=0
bash tools/build_citus.sh || rc=$?
if [ $rc -eq 2 ]; then
	echo "== Citus: not available, test/t/011_citus.pl will skip"
	lap "Citus build (no source: not built)"
else
	record "Citus build" $rc
fi
run_tap_tests "" "$release_tap"

echo "== the Debian package (test/package.sh: pg_buildext, dh --with pgxs)"
rc=0
bash test/package.sh || rc=$?
record "Debian package" $rc

echo "== sanitizers (test/sanitize.sh: its own PostgreSQL copy and cluster, about 12.5 minutes)"
rc=0
# The sanitized copy leaves out 007_pg_upgrade (it has no second
# PostgreSQL to upgrade from) and 011_citus (no Citus is built for it).
echo "== sanitizers: every TAP test but 002, 004, 011 (run in the release build) and 007 (run on PostgreSQL 18)"
SANITIZE_TAP_TESTS="$sanitizer_tap" bash test/sanitize.sh || rc=$?
record "sanitizers" $rc

# PostgreSQL 18, built with assertions (tools/build_postgres.sh caches it
# outside the checkout, so only the first run on a machine builds it): the
# same build, pg_regress, isolation, README and TAP tests on its server.
# SIMHASH_SKIP_PG18=1 skips this stage (it says so).
if [ -n "${SIMHASH_SKIP_PG18:-}" ]; then
	echo "== PostgreSQL 18: skipped (SIMHASH_SKIP_PG18 is set)"
else
	echo "== PostgreSQL 18 with assertions (tools/build_postgres.sh 18)"
	rc=0
	pg18=$(bash tools/build_postgres.sh 18) || rc=$?
	record "PostgreSQL 18 build" $rc
	if [ $rc -eq 0 ]; then
		# the installation the stages above ran on: 007_pg_upgrade
		# upgrades a cluster of it to 18
		first_pg=$(dirname "$("$PG_CONFIG" --bindir)")
		simhash_use_pg "$pg18"
		rc=0
		simhash_build_install || rc=$?
		record "build for PostgreSQL 18" $rc
		simhash_cluster_start
		run_installcheck "PostgreSQL 18: "
		run_readme_examples "PostgreSQL 18: "
		simhash_cluster_stop
		run_tap_tests "PostgreSQL 18: " "$pg18_tap" SIMHASH_UPGRADE_FROM="$first_pg"
	fi
fi

if [ -s "$SIMHASH_FAILURE_LOG" ]; then
	echo "== what explains the failures above (again, for a log read from its end)"
	head -150 "$SIMHASH_FAILURE_LOG"
fi
rm -f "$SIMHASH_FAILURE_LOG"
echo "== where the time went (each step since the one before)"
cat "$SIMHASH_TIMES"
printf '%6d s  %s\n' "$SECONDS" "the whole run ($((SECONDS / 60)) min $((SECONDS % 60)) s)"
rm -f "$SIMHASH_TIMES"
echo "== test suites"
echo "suites: $passed passed, $failed failed"
[ $failed -eq 0 ]
