#!/usr/bin/env bash
# Run the tests under AddressSanitizer and UndefinedBehaviorSanitizer.
#
#   bash test/sanitize.sh
#
# Takes about 12.5 minutes on 2 cores with the TAP tests test/run_all.sh
# gives it (copy and build 1 minute, regression and isolation tests 3,
# fuzzing 1.5, TAP tests 7, 005 alone 2.7: docs/reports/test_run_fresh.txt).  Environment:
#   SANITIZE_FUZZ_SECONDS  how long to fuzz (default 90)
#   SANITIZE_FUZZ_SEED     the fuzzer's seed (default 1; the same seed gives
#                          the same statements)
#   SANITIZE_TAP_TESTS     TAP tests to run (default: all of test/t/*.pl;
#                          empty: none)
#   SANITIZE_PORT          the fuzz cluster's port (default 54406)
#
# It runs on Debian's PostgreSQL 15 only, whatever PG_CONFIG says: it
# copies that packaged installation (its layout is Debian's), and the other
# supported version, 18, is tested by test/run_all.sh on a server built
# with assertions instead, which catches what a debug build catches.
#
# What it does, in a temporary directory that it deletes on exit:
#  1. Copies the PostgreSQL 15 installation (Debian's /usr/lib/postgresql/15,
#     /usr/share/postgresql/15, /usr/include/postgresql; PostgreSQL finds
#     its directories relative to its binaries) and builds the extension
#     into that copy with -fsanitize=address,undefined.  The system
#     installation is never touched.
#  2. Replaces the copy's postgres binary with a wrapper that preloads the
#     ASan runtime, so that every server started from the copy (by pg_ctl,
#     initdb or the TAP tests) runs under the sanitizers.  PostgreSQL itself
#     is not instrumented: only our code is checked inline, the rest through
#     ASan's malloc and libc interceptors (see "What is checked" below).
#  3. Checks that a deliberate heap overflow and a deliberate undefined
#     shift in a canary function are caught, so that a broken setup cannot
#     pass silently.
#  4. Starts a throwaway cluster from the copy and runs the pg_regress and
#     isolation tests (make installcheck), then a bounded fuzz run
#     (test/sanitize_fuzz.py) in UTF8, SQL_ASCII, LATIN1 and EUC_JP
#     databases.
#  5. Runs the TAP tests (make prove_installcheck, one test per call, as
#     the postgres user when root), whose clusters also run the wrapper.
#  6. Fails if any test fails, a backend dies, or a sanitizer reports
#     anything.  On failure the logs and reports are copied to a directory
#     that is kept (its name is printed).  The last line counts what ran.
#
# Why the runtime needs more than LD_PRELOAD=libasan.so:
#  - Library constructors run before ASan's (libasan is preloaded, so it is
#    initialised after the libraries postgres links).  libgpg-error's calls
#    bindtextdomain(), libp11-kit's newlocale(); both malloc while holding
#    a glibc lock, ASan initialises inside that malloc, calls dlerror(),
#    which takes the same lock: the server hangs at start (even for
#    "postgres -V").  A tiny preloaded library marked DF_1_INITFIRST, whose
#    constructor runs before every other one, calls malloc() first.
#  - The UBSan runtime is loaded with our module, after fork, and reads
#    UBSAN_OPTIONS from /proc/self/environ, which PostgreSQL has overwritten
#    with the process title: the options would be lost.  The same library
#    defines __ubsan_default_options() to return getenv("UBSAN_OPTIONS")
#    (PostgreSQL moved environ, so getenv still works).
#  - pg_ctl restart re-runs the command recorded in postmaster.opts, that
#    is argv[0]: the wrapper passes its own path as argv[0] (exec -a) so
#    that a restarted server still runs under the sanitizers.
#
# ASAN_OPTIONS, each for a reason:
#  - detect_leaks=0: PostgreSQL frees memory by resetting memory contexts
#    or at process exit; LeakSanitizer would report every backend.
#  - abort_on_error=1: a report ends in abort(), so the postmaster logs
#    "terminated by signal 6" with the statement, instead of exit code 1.
#  - log_path: each report in a file of its own (asan.PID) in one
#    directory, whichever cluster (ours, the TAP tests') it came from.
#  - quarantine_size_mb=64: freed memory is held back to catch use after
#    free; the default, 256 MB per process, could add up with the TAP
#    tests' many backends on a small machine.
#  Defaults that are right as they are: handle_segv (a crash in our code
#  gets a report with a stack), use_sigaltstack (PostgreSQL has no
#  sigaltstack of its own), alloc_dealloc_mismatch (only C++ new/delete),
#  detect_stack_use_after_return off (its fake stacks would confuse
#  PostgreSQL's stack depth check).  No false reports were seen.
# UBSAN_OPTIONS: print_stacktrace=1, halt_on_error=1, abort_on_error=1 (as
#  for ASan).  Its reports go to the server's stderr, that is the server
#  log, whatever log_path says: the GCC runtime's log_path takes effect in
#  libasan, not in libubsan.  The script looks for them there.
#
# What is checked: every memory access of our code against ASan's shadow
# (stack buffers, globals, malloc'd memory), undefined behaviour in our code
# (shifts, alignment, bounds of arrays of known size, NULL, overflowing
# pointer arithmetic; not signed overflow, which -fwrapv defines), and libc
# calls anywhere (memcpy, strlen, ...) on poisoned memory.  Not checked:
# accesses within palloc'd memory.  Memory contexts carve small chunks out
# of blocks, so a small overrun stays inside a block; only chunks above
# 8 kB get a malloc of their own (an overrun past one is caught, which is
# why the fuzzer makes some texts that large), and shared buffers are
# never checked.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/common.sh

FUZZ_SECONDS=${SANITIZE_FUZZ_SECONDS:-90}
FUZZ_SEED=${SANITIZE_FUZZ_SEED:-1}
PORT=${SANITIZE_PORT:-54406}
TAP_TESTS=${SANITIZE_TAP_TESTS-$(echo test/t/*.pl)}
SAN_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"

start_time=$SECONDS
stage() { echo "== [$((SECONDS - start_time)) s] $*"; }

simhash_install_deps
libasan=$(gcc -print-file-name=libasan.so)
[ -e "$libasan" ] || { echo "sanitize: gcc's libasan.so not found" >&2; exit 1; }

T=$(mktemp -d /tmp/simhash-sanitize.XXXXXX)
chmod 755 "$T"
P=$T/pg					# the private copy of PostgreSQL
B=$P/usr/lib/postgresql/15/bin
PGC=$B/pg_config
SAN=$T/san				# ASan's reports
RUN=$T/run				# the fuzz cluster: data, socket, log
TAP=$T/tap				# TAP_TESTDIR
LOG=$RUN/server.log
STARTS=$T/starts.log			# one line per run of the wrapper
mkdir -p "$SAN" "$RUN" "$TAP" "$T/fuzz"
touch "$STARTS"
[ "$(id -u)" = 0 ] && chown postgres: "$SAN" "$RUN" "$TAP" "$T/fuzz" "$STARTS"

# stop every server whose data directory is under $T, then delete $T
cleanup() {
	local pidfile
	for pidfile in $(find "$T" -name postmaster.pid 2>/dev/null); do
		simhash_as_pg "$B/pg_ctl" -D "$(dirname "$pidfile")" -m immediate -w stop \
			>/dev/null 2>&1 || true
	done
	rm -rf "$T"
}
trap cleanup EXIT

failures=()
fail() { failures+=("$1"); echo "== FAILED: $1"; }

# keep what explains a failure: reports, server logs, the failing fuzz batch
KEEP=
keep() {
	[ -n "$KEEP" ] || KEEP=$(mktemp -d /tmp/simhash-sanitize-failure.XXXXXX)
	cp -r "$@" "$KEEP"/ 2>/dev/null || true
}

# sanitizer reports since offset $2 of server log $1 (UBSan writes there),
# and ASan's report files
log_reports() {
	tail -c +"$(($2 + 1))" "$1" | grep -E 'runtime error:|AddressSanitizer|UndefinedBehaviorSanitizer' || true
}
report_files() { find "$SAN" -type f | sort; }

# What explains a failed TAP test: what the servers logged before a crash,
# the sanitizers' reports, and the disk, whose filling up makes a WAL write
# PANIC (an abort, signal 6).  Printed at once, and appended to
# $SIMHASH_FAILURE_LOG when test/run_all.sh sets it: a CI run may show
# only the end of the output, where run_all.sh prints that file again.
explain_crash() {
	local log f signal_re='terminated by signal ([0-8]|1[0-9])\b'

	echo "---- $1 failed under the sanitizers"
	for log in $(grep -lE "$signal_re" "$TAP"/tmp_check/log/*.log 2>/dev/null); do
		echo "---- $log (before the crash)"
		grep -B40 -m1 -E "$signal_re" "$log" | tail -41
		grep -E 'PANIC|TRAP|AddressSanitizer|runtime error' "$log" | head -10
	done
	for f in $(report_files); do echo "---- $f"; head -60 "$f"; done
	df -h /tmp "$TAP" 2>/dev/null || true
}

stage "copying PostgreSQL 15 to $P and building with $SAN_CFLAGS"
mkdir -p "$P/usr/lib/postgresql" "$P/usr/share/postgresql" "$P/usr/include"
cp -a /usr/lib/postgresql/15 "$P/usr/lib/postgresql/"
cp -a /usr/share/postgresql/15 "$P/usr/share/postgresql/"
cp -a /usr/include/postgresql "$P/usr/include/"
pkglib=$("$PGC" --pkglibdir)
sharedir=$("$PGC" --sharedir)
case "$pkglib" in "$P"/*) ;; *) echo "sanitize: the copy's pg_config points outside it: $pkglib" >&2; exit 1;; esac
# whatever the system installation had of simhash must not be used
rm -rf "$pkglib"/simhash.so "$pkglib"/bitcode/simhash* "$sharedir"/extension/simhash*

# build in a copy of the source tree, so that the checkout's objects stay
# as they are; with_llvm=no: no JIT bitcode (the cluster runs with jit=off)
mkdir "$T/build"
tar --exclude=./.git -cf - . | tar -C "$T/build" -xf -
make -C "$T/build" -s clean PG_CONFIG="$PGC" with_llvm=no
make -C "$T/build" -s PG_CONFIG="$PGC" with_llvm=no COPT="$SAN_CFLAGS"
make -C "$T/build" -s PG_CONFIG="$PGC" with_llvm=no install >/dev/null
chmod -R a+rX "$T/build"
readelf -d "$pkglib/simhash.so" | grep -q 'libasan' ||
	{ echo "sanitize: $pkglib/simhash.so is not linked with ASan" >&2; exit 1; }

# the preloaded helper library (see the header)
cat >"$T/sanitize_preload.c" <<'EOF'
#include <stdlib.h>

void	   *volatile sanitize_preload_p;

/* DF_1_INITFIRST: runs before every other constructor; ASan initialises
 * in its first malloc, before any library holds a glibc lock */
__attribute__((constructor)) static void
sanitize_preload_init(void)
{
	sanitize_preload_p = malloc(1);
	free(sanitize_preload_p);
}

/* libubsan reads its options lazily, from /proc/self/environ, which
 * PostgreSQL overwrites with the process title; getenv() still works */
const char *
__ubsan_default_options(void)
{
	const char *o = getenv("UBSAN_OPTIONS");

	return o ? o : "";
}
EOF
gcc -O2 -shared -fPIC -Wl,-z,initfirst -o "$T/sanitize_preload.so" "$T/sanitize_preload.c"

# the canary: a heap overflow past a palloc'd chunk that has a malloc of its
# own, and an undefined shift
cat >"$T/sanitize_canary.c" <<'EOF'
#include "postgres.h"
#include "fmgr.h"

PG_MODULE_MAGIC;
PG_FUNCTION_INFO_V1(sanitize_canary);

Datum
sanitize_canary(PG_FUNCTION_ARGS)
{
	int32		i = PG_GETARG_INT32(0);

	if (PG_GETARG_BOOL(1))
	{
		char	   *p = palloc(16384);

		p[i] = 1;				/* i = 16384: heap-buffer-overflow */
		PG_RETURN_INT32(p[i]);
	}
	PG_RETURN_INT32(1 << i);	/* i = 40: shift exponent too large */
}
EOF
gcc -O1 -shared -fPIC $SAN_CFLAGS -I"$("$PGC" --includedir-server)" \
	-o "$pkglib/sanitize_canary.so" "$T/sanitize_canary.c"

mv "$B/postgres" "$B/postgres.bin"
cat >"$B/postgres" <<EOF
#!/bin/bash
# test/sanitize.sh's wrapper: this copy's servers run under ASan and UBSan
export LD_PRELOAD="$libasan $T/sanitize_preload.so"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:quarantine_size_mb=64:log_path=$SAN/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:abort_on_error=1:log_path=$SAN/ubsan"
echo "\$\$ \$*" >>"$STARTS"
exec -a "\$0" "\$0.bin" "\$@"
EOF
chmod 755 "$B/postgres"
"$B/postgres" -V >/dev/null

stage "starting a cluster from the copy (port $PORT)"
simhash_as_pg "$B/initdb" -D "$RUN/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
	>"$RUN/initdb.log" 2>&1 || { cat "$RUN/initdb.log"; exit 1; }
cat >>"$RUN/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$RUN'
port = $PORT
fsync = off
jit = off
CONF
simhash_as_pg "$B/pg_ctl" -D "$RUN/data" -l "$LOG" -w start >/dev/null
export PGHOST=$RUN PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
export PATH="$B:$PATH"
grep -q libasan "/proc/$(head -1 "$RUN/data/postmaster.pid")/maps" ||
	{ echo "sanitize: the postmaster runs without ASan" >&2; exit 1; }

wait_ready() {
	local i
	for i in $(seq 100); do
		pg_isready -q && psql -X -q -c 'SELECT 1' >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	echo "sanitize: the server did not come back" >&2
	return 1
}

stage "canary: a deliberate overflow and undefined shift must be caught"
psql -X -q -c "CREATE FUNCTION sanitize_canary(int, bool) RETURNS int
	AS 'sanitize_canary' LANGUAGE C STRICT"
psql -X -q -c "SELECT sanitize_canary(16384, true)" >/dev/null 2>&1 || true
wait_ready
psql -X -q -c "SELECT sanitize_canary(40, false)" >/dev/null 2>&1 || true
wait_ready
psql -X -q -c "DROP FUNCTION sanitize_canary(int, bool)"
canary_ok=1
grep -qs 'heap-buffer-overflow' "$SAN"/asan.* || canary_ok=0
grep -q 'sanitize_canary.c:.*runtime error: shift exponent 40' "$LOG" || canary_ok=0
[ "$(grep -c 'terminated by signal 6' "$LOG")" = 2 ] || canary_ok=0
if [ $canary_ok = 0 ]; then
	echo "sanitize: the canary's errors were not caught; the setup does not work:" >&2
	tail -30 "$LOG" >&2
	cat "$SAN"/* >&2 || true
	exit 1
fi
rm -f "$SAN"/* "$pkglib/sanitize_canary.so"
log_offset=$(stat -c %s "$LOG")

stage "pg_regress and isolation tests (make installcheck)"
rc=0
make -C "$T/build" installcheck PG_CONFIG="$PGC" with_llvm=no >"$T/installcheck.out" 2>&1 || rc=$?
grep -E 'tests (passed|failed)|FAILED|failed \(ignored\)' "$T/installcheck.out" || true
regress=$(grep -cE '\.\.\. ok' "$T/installcheck.out" || true)
if [ $rc -ne 0 ]; then
	tail -20 "$T/installcheck.out"
	for f in "$T/build/regression.diffs" "$T/build/output_iso/regression.diffs"; do
		[ -f "$f" ] && { echo "---- $f"; head -100 "$f"; keep "$f"; }
	done
	fail "pg_regress and isolation tests"
fi
if [ -n "$(log_reports "$LOG" "$log_offset")" ] ||
	tail -c +"$((log_offset + 1))" "$LOG" | grep -q 'terminated by signal'; then
	fail "the server log of the regression tests shows a crash or a sanitizer report"
	# what explains it, here and at the end of test/run_all.sh's output
	{
		echo "---- $LOG (before the crash)"
		tail -c +"$((log_offset + 1))" "$LOG" |
			grep -B30 -m1 -E 'terminated by signal|AddressSanitizer|runtime error' | tail -31
		log_reports "$LOG" "$log_offset" | head -10
		for f in $(report_files); do echo "---- $f"; head -60 "$f"; done
	} | tee -a "${SIMHASH_FAILURE_LOG:-/dev/null}"
	keep "$LOG" "$SAN"
fi

stage "fuzzing for $FUZZ_SECONDS s (seed $FUZZ_SEED)"
dbs=(fuzz_utf8:UTF8 fuzz_ascii:SQL_ASCII fuzz_latin1:LATIN1 fuzz_eucjp:EUC_JP)
for d in "${dbs[@]}"; do
	psql -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE ${d%%:*} TEMPLATE template0
		ENCODING '${d#*:}' LC_COLLATE 'C' LC_CTYPE 'C'"
	psql -X -q -v ON_ERROR_STOP=1 -d "${d%%:*}" -c "CREATE EXTENSION simhash"
done
rc=0
fuzz_out=$T/fuzz.out
/usr/bin/python3 test/sanitize_fuzz.py --seconds "$FUZZ_SECONDS" --seed "$FUZZ_SEED" \
	$(printf -- '--db %s ' "${dbs[@]}") --server-log "$LOG" --sanitizer-dir "$SAN" \
	--work-dir "$T/fuzz" --keep-dir "$T/fuzz_failure" | tee "$fuzz_out" || rc=$?
fuzz=$(sed -n 's/^FUZZ_STATEMENTS=//p' "$fuzz_out")
[ $rc -eq 0 ] || { keep "$T/fuzz_failure" "$LOG"; fail "fuzzing"; }
simhash_as_pg "$B/pg_ctl" -D "$RUN/data" -m fast -w stop >/dev/null
ubsan_reports=$(log_reports "$LOG" "$log_offset" | grep -c 'runtime error:' || true)
if [ -n "$(log_reports "$LOG" "$log_offset")" ]; then
	log_reports "$LOG" "$log_offset" | head -20
	keep "$LOG"
	fail "sanitizer output in the server log"
fi

stage "TAP tests (make prove_installcheck, one test per call)"
tap=0
for t in $TAP_TESTS; do
	t0=$SECONDS
	starts=$(wc -l <"$STARTS")
	rc=0
	simhash_as_pg env PATH="$PATH" make -C "$T/build" -s prove_installcheck \
		PG_CONFIG="$PGC" with_llvm=no TAP_TESTDIR="$TAP" PROVE_TESTS="$t" || rc=$?
	if [ "$(wc -l <"$STARTS")" = "$starts" ]; then
		# a test may skip itself whole (007_pg_upgrade needs a second
		# PostgreSQL): then it starts none, and says why above
		if grep -qs '1\.\.0 # SKIP' "$TAP/tmp_check/log/regress_log_$(basename "$t" .pl)"; then
			echo "sanitize: $t skipped itself"
		else
			echo "sanitize: $t started no server from the sanitized copy"
			rc=1
		fi
	fi
	# a crash of a backend is a failure, except the kill -9s of the tests
	crashes=$(cat "$TAP"/tmp_check/log/*.log 2>/dev/null |
		grep -E 'terminated by signal|runtime error:|AddressSanitizer' | grep -v 'signal 9: Killed' || true)
	ubsan_reports=$((ubsan_reports + $(echo "$crashes" | grep -c 'runtime error:' || true)))
	if [ $rc -ne 0 ] || [ -n "$crashes" ]; then
		[ -n "$crashes" ] && echo "$crashes" | head -20
		explain_crash "$t" | tee -a "${SIMHASH_FAILURE_LOG:-/dev/null}"
		find "$TAP" -name 'regress_log_*' | while read -r log; do
			echo "---- $log (last 40 lines)"; tail -40 "$log"
		done
		keep "$TAP/tmp_check/log"
		fail "$t"
	else
		tap=$((tap + 1))
	fi
	echo "   ($((SECONDS - t0)) s)"
done

reports=$(($(report_files | wc -l) + ubsan_reports))
if [ "$(report_files | wc -l)" -gt 0 ]; then
	for f in $(report_files); do echo "---- $f"; head -60 "$f"; done
	keep "$SAN"
	fail "sanitizer reports"
fi
stage "done"
if [ -n "$KEEP" ]; then
	echo "sanitize: logs and reports of the failures are kept in $KEEP"
fi
if [ ${#failures[@]} -gt 0 ]; then
	echo "sanitize: FAILED: ${failures[*]}"
fi
echo "sanitize: $regress regression tests, $tap TAP tests, ${fuzz:-0} fuzz statements, $reports sanitizer reports"
[ ${#failures[@]} -eq 0 ] && [ "$reports" -eq 0 ]
