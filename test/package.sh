#!/usr/bin/env bash
# Build the Debian package of the extension as Debian builds its own
# PostgreSQL extension packages (debian/: pg_buildext, dh --with pgxs),
# install it in place of a make install, and run the regression and
# isolation suites against the installed package on throwaway clusters
# (pg_buildext installcheck, which runs pg_virtualenv).  As root, on Debian.
#
#   bash test/package.sh
#
# It builds postgresql-VERSION-simhash for every PostgreSQL whose server
# development package is installed (Debian 12: 15), from the files git
# tracks (and untracked ones it does not ignore), in a temporary directory.  Afterwards the package is removed and
# the extension installed again with make install, as the other suites
# expect.  The last line names the packages built and tested.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/common.sh

[ "$(id -u)" = 0 ] || { echo "package: run as root (it installs the package)" >&2; exit 1; }
simhash_install_deps debhelper postgresql-server-dev-all dpkg-dev

work=$(mktemp -d /tmp/simhash-package.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
version=$(sed -n "s/^default_version = '\(.*\)'$/\1/p" simhash.control).0
src="$work/simhash-$version"
mkdir "$src"
git ls-files -z --cached --others --exclude-standard | tar --null -cf - -T - | tar -xf - -C "$src"

echo "== building the Debian package (dpkg-buildpackage, dh --with pgxs)"
(cd "$src" && pg_buildext updatecontrol >/dev/null && dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1) ||
	{ tail -40 "$work/build.log"; exit 1; }
debs=$(ls "$work"/postgresql-*-simhash_*.deb)
echo "   built: $(cd "$work" && ls postgresql-*-simhash_*.deb | tr '\n' ' ')"

# the package's files, not a make install's, are what the suites see
make -s uninstall >/dev/null 2>&1 || true
echo "== installing the package"
dpkg -i $debs >/dev/null
pkgs=$(for d in $debs; do dpkg-deb -f "$d" Package; done)
for p in $pkgs; do
	# the whole list read (grep -q would stop early, and pipefail would
	# count dpkg's SIGPIPE as a failure)
	files=$(dpkg -L "$p")
	grep -q '/simhash\.so$' <<<"$files" || { echo "package: $p has no simhash.so" >&2; exit 1; }
	grep -q '/simhash\.control$' <<<"$files" || { echo "package: $p has no simhash.control" >&2; exit 1; }
done

echo "== pg_regress and isolation suites on the installed package (pg_buildext installcheck)"
rc=0
(cd "$src" && chown -R postgres: . && pg_buildext installcheck) || rc=$?
if [ $rc -ne 0 ]; then
	find "$src" -name regression.diffs -exec cat {} \; | head -100
fi

echo "== removing the package; make install again"
dpkg -r $pkgs >/dev/null
simhash_build_install >/dev/null
[ $rc -eq 0 ] && echo "package: built, installed and tested: $pkgs"
exit $rc
