#!/usr/bin/env bash
# Build a PostgreSQL release from Debian's source package, with assertions
# and debugging symbols, into a cache outside the checkout, and print its
# pg_config.  A second run finds the build and prints it at once.
#
#   bash tools/build_postgres.sh [MAJOR]        (default 18)
#   PG_CONFIG=$(bash tools/build_postgres.sh 18) make
#
# Debian 12 ships PostgreSQL 15 only; newer majors come as source from
# Debian's newer suites (a deb-src line for unstable, in an apt
# configuration of this script's own, so the machine's apt sources are not
# changed).  postgresql-17's source could not be fetched (the archive answered
# 404 for it, from unstable and from trixie): 17 is built for by
# construction only (src/compat.h).  Configured with --enable-cassert
# --enable-debug --enable-tap-tests --without-icu, compiled with -O1 (a
# quicker build than -O2, and the assertions cost more than it saves), with the contrib
# modules the tests use (pageinspect, postgres_fdw, amcheck).  About 4
# minutes on 2 cores, fetching the source included (docs/reports/test_run_fresh.txt).
#
# Environment: SIMHASH_CACHE: where the sources and the installation go,
# under pg$MAJOR-cassert/ (default /var/cache/simhash as root, which the
# postgres user that runs the test clusters can read; else
# ~/.cache/simhash).
set -euo pipefail

# simhash_need_packages (not PG_CONFIG: this script builds its own)
source "$(dirname "$0")/common.sh"

MAJOR=${1:-18}
CACHE=$(simhash_cache_dir)
PREFIX=$CACHE/pg$MAJOR-cassert
if [ -x "$PREFIX/bin/pg_config" ] && [ -f "$PREFIX/.complete" ]; then
	echo "$PREFIX/bin/pg_config"
	exit 0
fi

log() { echo "build_postgres: $*" >&2; }

# what the build needs (as root; otherwise they must be there already)
deps="bison flex libreadline-dev zlib1g-dev dpkg-dev bzip2 make gcc libipc-run-perl"
simhash_need_packages build_postgres $deps || exit 1

# the source package, through a private apt configuration
APT="$CACHE/apt"
mkdir -p "$APT/lists/partial" "$CACHE/src"
echo "deb-src http://deb.debian.org/debian sid main" >"$APT/sources.list"
aptopts=(-q -o "Dir::Etc::SourceList=$APT/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
	-o "Dir::State::Lists=$APT/lists" -o "APT::Sandbox::User=root")
tarball=$(ls "$CACHE/src"/postgresql-"$MAJOR"_*.orig.tar.bz2 2>/dev/null | head -1 || true)
if [ -z "$tarball" ]; then
	log "fetching the source of postgresql-$MAJOR"
	apt-get "${aptopts[@]}" update >/dev/null
	(cd "$CACHE/src" && apt-get "${aptopts[@]}" source --download-only "postgresql-$MAJOR" >/dev/null)
	tarball=$(ls "$CACHE/src"/postgresql-"$MAJOR"_*.orig.tar.bz2 | head -1)
fi

build="$CACHE/src/build-$MAJOR"
rm -rf "$build"
mkdir -p "$build"
log "building $(basename "$tarball") into $PREFIX"
tar -xjf "$tarball" -C "$build" --strip-components=1
cd "$build"
./configure --prefix="$PREFIX" --enable-cassert --enable-debug --enable-tap-tests \
	--without-icu CFLAGS="-O1" >"$build/configure.log" 2>&1 ||
	{ tail -30 "$build/configure.log" >&2; exit 1; }
make -s -j"$(nproc)" >"$build/make.log" 2>&1 || { tail -30 "$build/make.log" >&2; exit 1; }
make -s install >/dev/null
for m in pageinspect postgres_fdw amcheck; do
	make -s -C "contrib/$m" install >/dev/null
done
# the isolation tester and the TAP tests' Perl modules, for PGXS's
# installcheck and prove_installcheck
make -s -C src/test/isolation install >/dev/null
make -s -C src/test/perl install >/dev/null
touch "$PREFIX/.complete"
# the sources are no longer needed; keep the tarball for a rebuild
cd "$CACHE/src" && rm -rf "$build"
echo "$PREFIX/bin/pg_config"
