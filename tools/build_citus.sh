#!/usr/bin/env bash
# Build Citus from its release source into a cache outside the checkout,
# for Debian's PostgreSQL 15, and install it into that PostgreSQL.  A
# second run finds the built tree and only installs it again (a second).
#
#   bash tools/build_citus.sh            (as root: it installs into
#                                         /usr/lib/postgresql/15)
#
# Citus is the test run's only use of it (test/t/011_citus.pl): never part
# of the extension.  Debian does not package it, and the machines this
# project runs on reach no registry but Debian's and npm's, so the source
# is a release tarball at hand: $CITUS_TARBALL, or citus-*.tar.gz in
# ../shared/citus/ beside this checkout or beside the repository it was
# cloned from.  Without one (and without a cached build) the script says so
# and exits 2, which the test reads as "skip".
#
# Citus 13.2.2 builds against PostgreSQL 15 to 17 (not 18).  Debian's 15.x
# headers export have_createdb_privilege(), which Citus's
# src/include/pg_version_compat.h also defines as a static inline function;
# the compile fails on the redefinition.  This script renames Citus's copy
# (sed, below) before configuring.  Configured --without-libcurl (its
# statistics collection, unused in tests); the other libraries it needs
# (lz4, zstd, krb5, selinux, pam headers) come from Debian.  About 6 minutes
# on 2 cores.
#
# Environment: PG_CONFIG (default: Debian's PostgreSQL 15, tools/common.sh);
# SIMHASH_CACHE: the cache (default /var/cache/simhash as root, else
# ~/.cache/simhash), one build tree per Citus version and PostgreSQL under
# citus/.
set -euo pipefail

source "$(dirname "$0")/common.sh"
CACHE=$(simhash_cache_dir)
log() { echo "build_citus: $*" >&2; }

major=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
if [ "$major" -lt 15 ] || [ "$major" -gt 17 ]; then
	log "Citus 13 builds for PostgreSQL 15 to 17, not $major"
	exit 2
fi

# the source: $CITUS_TARBALL, or ../shared/citus beside this checkout, or
# beside the repository this one was cloned from
tarball=${CITUS_TARBALL:-}
if [ -z "$tarball" ]; then
	for dir in "$SIMHASH_ROOT/../shared/citus" \
		"$(git -C "$SIMHASH_ROOT" config --get remote.origin.url 2>/dev/null || true)/../shared/citus"; do
		case $dir in /*) ;; *) continue ;; esac
		t=$(ls "$dir"/citus-*.tar.gz 2>/dev/null | sort -V | tail -1 || true)
		if [ -n "$t" ]; then tarball=$t; break; fi
	done
fi
if [ -n "$tarball" ]; then
	version=$(basename "$tarball" .tar.gz)
else
	# no source: a build cached earlier still serves
	version=$(ls -d "$CACHE"/citus/citus-*-pg"$major" 2>/dev/null | sort -V | tail -1 || true)
	version=${version##*/}
	version=${version%-pg$major}
	if [ -z "$version" ] || [ ! -f "$CACHE/citus/$version-pg$major/.complete" ]; then
		log "no Citus source (set CITUS_TARBALL, or put citus-*.tar.gz in ../shared/citus/)"
		exit 2
	fi
fi
build="$CACHE/citus/$version-pg$major"

if [ ! -f "$build/.complete" ]; then
	deps="make gcc postgresql-server-dev-$major liblz4-dev libzstd-dev libkrb5-dev libselinux1-dev libpam0g-dev"
		simhash_need_packages build_citus $deps || exit 1
	rm -rf "$build"
	mkdir -p "$build"
	log "building $(basename "$tarball") for PostgreSQL $major in $build"
	tar -xzf "$tarball" -C "$build" --strip-components=1
	# Debian's PostgreSQL 15 headers declare have_createdb_privilege();
	# Citus's compat header must not define it again
	if grep -q '^have_createdb_privilege(void)' "$build/src/include/pg_version_compat.h" &&
		grep -qs 'have_createdb_privilege' "$("$PG_CONFIG" --includedir-server)/commands/dbcommands.h"; then
		sed -i 's/^have_createdb_privilege(void)/citus_compat_have_createdb_privilege(void)/' \
			"$build/src/include/pg_version_compat.h"
		sed -i '/^citus_compat_have_createdb_privilege(void)/,/^}/{/^}/a\
#define have_createdb_privilege() citus_compat_have_createdb_privilege()
}' "$build/src/include/pg_version_compat.h"
	fi
	(cd "$build" && ./configure PG_CONFIG="$PG_CONFIG" --without-libcurl >configure.log 2>&1) ||
		{ tail -30 "$build/configure.log" >&2; exit 1; }
	make -s -j"$(nproc)" -C "$build" >"$build/make.log" 2>&1 ||
		{ tail -30 "$build/make.log" >&2; exit 1; }
	touch "$build/.complete"
fi
make -s -C "$build" install >"$build/install.log" 2>&1 ||
	{ tail -30 "$build/install.log" >&2; exit 1; }
echo "$version installed for $PG_CONFIG"
