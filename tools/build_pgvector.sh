#!/usr/bin/env bash
# Build pgvector from Debian's source package, for a given PostgreSQL, into
# a cache outside the checkout, and install it (vector.so, its control and
# SQL files) into that PostgreSQL.  A second run for the same PostgreSQL
# finds the built tree and only installs it again, in a fraction of a second.
#
#   bash tools/build_pgvector.sh
#   PG_CONFIG=$(bash tools/build_postgres.sh 18) bash tools/build_pgvector.sh
#
# Debian 12 has no pgvector with HNSW on bit(n) (bit_hamming_ops, pgvector
# 0.7 and later); its source comes from Debian's newer suites, through deb-src
# lines in an apt configuration of this script's own (under the cache, as in
# tools/build_postgres.sh, so the machine's apt sources are not changed):
# from unstable, or else from trixie.  Unstable has 0.8.7-1, but the archive
# answered 404 for its files when this was written; trixie's 0.8.0-1 is what
# gets built then.  Only the upstream tarball is used, not Debian's
# packaging; unchanged, but for PostgreSQL 18 and later, which 0.8.0
# predates (0.8.1 added it): the two edits it needs to compile there
# (vacuum_delay_point's new argument; TupleDescAttr), made with sed.
# Compiled with the PostgreSQL's own flags and OPTFLAGS="" (no
# -march=native, as pgvector documents for portable builds), with make -j1:
# about 20 seconds, the fetch included.  The source is fetched once; delete
# pgvector-src/ to fetch a newer one.
#
# Environment: PG_CONFIG: the PostgreSQL to build for and install into
# (default: the one tools/common.sh takes, Debian's PostgreSQL 15;
# installing into it needs root).  PGVECTOR_SUITES: the suites to try, in
# order (default "sid trixie").  SIMHASH_CACHE: where the sources and the
# builds go, under pgvector-src/ (default /var/cache/simhash as root, which
# the postgres user can read; else ~/.cache/simhash); one build tree for each
# PostgreSQL.
set -euo pipefail

# PG_CONFIG: the caller's, or the project's default (tools/common.sh)
source "$(dirname "$0")/common.sh"
CACHE=$(simhash_cache_dir)
SRC=$CACHE/pgvector-src
SUITES=${PGVECTOR_SUITES:-sid trixie}

log() { echo "build_pgvector: $*" >&2; }

if [ ! -x "$PG_CONFIG" ]; then
	log "no pg_config at $PG_CONFIG"
	exit 1
fi
pgver=$("$PG_CONFIG" --version)      # "PostgreSQL 15.20 (Debian ...)"
major=$(echo "$pgver" | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')

# what the build needs (as root; otherwise they must be there already):
# PGXS, which Debian ships in postgresql-server-dev-$major
deps="make gcc"
[ -f "$("$PG_CONFIG" --pgxs)" ] ||
	case $PG_CONFIG in
	/usr/lib/postgresql/*/bin/pg_config) deps="$deps postgresql-server-dev-$major" ;;
	*) log "$PG_CONFIG has no PGXS ($("$PG_CONFIG" --pgxs))"; exit 1 ;;
	esac
simhash_need_packages build_pgvector $deps || exit 1

# the source package, through a private apt configuration (not
# build_postgres.sh's: its suites are not these): the first of $SUITES
# whose source can be fetched
APT="$SRC/apt"
mkdir -p "$APT/lists/partial"
for suite in $SUITES; do echo "deb-src http://deb.debian.org/debian $suite main"; done \
	>"$APT/sources.list"
aptopts=(-q -o "Dir::Etc::SourceList=$APT/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
	-o "Dir::State::Lists=$APT/lists" -o "APT::Sandbox::User=root")
tarball=$(ls "$SRC"/pgvector_*.orig.tar.gz 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$tarball" ]; then
	log "fetching the source of pgvector ($SUITES)"
	apt-get "${aptopts[@]}" update >/dev/null ||
		{ log "could not fetch the source index of $SUITES from deb.debian.org"; exit 1; }
	for suite in $SUITES; do
		dl=$(mktemp -d "$SRC/fetch.XXXXXX")
		if (cd "$dl" && apt-get "${aptopts[@]}" source --download-only "pgvector/$suite" \
			>/dev/null 2>"$dl/apt.log") && ls "$dl"/pgvector_*.orig.tar.gz >/dev/null 2>&1; then
			mv "$dl"/pgvector_* "$SRC"/
			rm -rf "$dl"
			break
		fi
		log "could not fetch pgvector from $suite: $(grep -m1 '^E:' "$dl/apt.log" || tail -1 "$dl/apt.log")"
		rm -rf "$dl"
	done
	tarball=$(ls "$SRC"/pgvector_*.orig.tar.gz 2>/dev/null | sort -V | tail -1 || true)
	if [ -z "$tarball" ]; then
		log "could not fetch Debian's source package pgvector from deb.debian.org ($SUITES)"
		exit 1
	fi
fi
version=$(basename "$tarball" .orig.tar.gz)
version=${version#pgvector_}

# one build tree for each PostgreSQL (each pgvector version): the objects
# are compiled against its headers
key=$(printf '%s' "$PG_CONFIG" | cksum | cut -d' ' -f1)
build="$SRC/build-$version-pg$major-$key"
# no -march=native; and without the clang the PostgreSQL was configured
# with (Debian's LLVM JIT), no bitcode
mkopts=(PG_CONFIG="$PG_CONFIG" OPTFLAGS="")
global="$(dirname "$("$PG_CONFIG" --pgxs)")/../Makefile.global"
clang=$(sed -nE 's/^CLANG[[:space:]]*=[[:space:]]*//p' "$global" | head -1)
if grep -qE '^with_llvm[[:space:]]*=[[:space:]]*yes' "$global" &&
	! command -v "${clang:-clang}" >/dev/null; then
	mkopts+=(with_llvm=no)
fi
if [ ! -f "$build/.complete" ]; then
	rm -rf "$build"
	mkdir -p "$build"
	log "building $(basename "$tarball") for $pgver in $build"
	tar -xzf "$tarball" -C "$build" --strip-components=1
	echo "$PG_CONFIG" >"$build/.pg_config"
	# pgvector 0.8.0 predates PostgreSQL 18 (0.8.1 added it): the edits it
	# needs to compile there, if this source does not have them yet
	if [ "$major" -ge 18 ] && grep -q 'vacuum_delay_point()' "$build"/src/*.c; then
		log "adapting pgvector $version to PostgreSQL $major"
		sed -i 's/vacuum_delay_point()/vacuum_delay_point(false)/' "$build"/src/*vacuum.c
		sed -i 's/buildstate->tupdesc->attrs\[0\]\.atttypid/TupleDescAttr(buildstate->tupdesc, 0)->atttypid/' \
			"$build/src/ivfbuild.c"
	fi
	make -s -j1 -C "$build" "${mkopts[@]}" >"$build/make.log" 2>&1 ||
		{ tail -30 "$build/make.log" >&2; exit 1; }
	touch "$build/.complete"
fi
make -s -C "$build" "${mkopts[@]}" install >"$build/install.log" 2>&1 ||
	{ tail -30 "$build/install.log" >&2; exit 1; }
echo "pgvector $version installed for $PG_CONFIG"
