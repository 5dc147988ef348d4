#!/usr/bin/env bash
# Peak backend memory of the text functions on large texts.
#
#   bash test/bench/text_memory.sh [TEXT...]     (default: apt:100 apt:300 distinct:100)
#
# TEXT is KIND:MB.  "apt" is apt's English package descriptions (the raw
# release list that tools/corpus.py --files names, lz4cat'd) repeated to MB
# megabytes (10^6 bytes), cut at a line end: a text whose distinct features
# are few against its occurrences.  "distinct" is the numbers 1, 2, 3, ...
# as words, ten to a line: every token and every shingle is distinct, the
# worst case for the functions that collect distinct features.
#
# Each call runs in a new session (a new backend) as
#     SELECT <call> FROM (SELECT pg_read_file(FILE) AS t OFFSET 0) s;
# and the backend then reads its own VmHWM (peak resident set) from
# /proc/self/status.  "extra" is that peak less the peak of the baseline
# call octet_length(t), which holds the text itself; "x input" is extra per
# byte of input.  Seconds include reading the file (the baseline's time).
#
# Without PGHOST, it installs, builds and starts a throwaway cluster like
# the other benchmarks.  With PGHOST (and PGPORT, PGUSER) set it uses that
# server instead, which must run on this machine, have this build of the
# extension installed, and accept a superuser (pg_read_file of any path);
# the files go to a temporary directory the server can read.
#
# Memory is in MiB.  The largest case, simhash_jaccard with 8 shingle sizes
# on the distinct text, peaks at about 1.8 GiB (before the feature
# collector, on the 300 MB text: 5.4 GiB).  docs/benchmarks.md, "Memory", has
# the figures.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

TEXTS=("$@")
[ ${#TEXTS[@]} -gt 0 ] || TEXTS=(apt:100 apt:300 distinct:100)

if [ -z "${PGHOST:-}" ]; then
	simhash_install_deps
	simhash_build_install
	simhash_cluster_start
fi
psql -X -q -c 'CREATE EXTENSION IF NOT EXISTS simhash' 2>&1 | grep -v 'already exists' || true

WORK=$(mktemp -d /tmp/simhash-textmem.XXXXXX)
chmod 755 "$WORK"
trap 'rm -rf "$WORK"; simhash_cluster_stop' EXIT

# make_text KIND MB FILE
make_text() {
	python3 - "$1" "$2" "$3" "$(python3 tools/corpus.py --files | tr '\n' ' ')" <<-'PY'
		import subprocess, sys
		kind, mb, path, lists = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split()
		size = mb * 1000000
		if kind == "apt":
		    unit = b"".join(subprocess.run(["lz4cat", f], check=True,
		                                   stdout=subprocess.PIPE).stdout for f in lists)
		    data = unit * (size // len(unit) + 1)
		elif kind == "distinct":
		    lines, n, i = [], 0, 1
		    while n < size:
		        line = " ".join(str(j) for j in range(i, i + 10)).encode() + b"\n"
		        lines.append(line)
		        n += len(line)
		        i += 10
		    data = b"".join(lines)
		else:
		    sys.exit(f"unknown text kind {kind!r}: apt or distinct")
		data = data[:size]
		data = data[:data.rindex(b"\n") + 1]
		with open(path, "wb") as f:
		    f.write(data)
	PY
	chmod 644 "$3"
}

# label|expression of t
CASES=(
	"baseline: octet_length|octet_length(t)"
	"simhash tf {1}|simhash(t, '{1}', 'tf')"
	"simhash tf {1,3}|simhash(t, '{1,3}', 'tf')"
	"simhash tf {1..8}|simhash(t, '{1,2,3,4,5,6,7,8}', 'tf')"
	"simhash binary {1}|simhash(t, '{1}', 'binary')"
	"simhash binary {1,3}|simhash(t, '{1,3}', 'binary')"
	"simhash binary {1..8}|simhash(t, '{1,2,3,4,5,6,7,8}', 'binary')"
	"simhash log {1}|simhash(t, '{1}', 'log')"
	"simhash log {1,3}|simhash(t, '{1,3}', 'log')"
	"simhash log {1..8}|simhash(t, '{1,2,3,4,5,6,7,8}', 'log')"
	"simhash_chargrams 4 tf|simhash_chargrams(t, 4, 'tf')"
	"simhash_chargrams 4 binary|simhash_chargrams(t, 4, 'binary')"
	"simhash_tokens|cardinality(simhash_tokens(t))"
	"simhash_feature_count {1,3} tf|simhash_feature_count(t)"
	"simhash_feature_count {1..8} log|simhash_feature_count(t, '{1,2,3,4,5,6,7,8}', 'log')"
	"simhash_is_reliable {1..8} binary|simhash_is_reliable(t, 100, '{1,2,3,4,5,6,7,8}', 'binary')"
	"simhash_jaccard(t, t) {3}|simhash_jaccard(t, t)"
	"simhash_jaccard(t, t) {1..8}|simhash_jaccard(t, t, '{1,2,3,4,5,6,7,8}')"
	"minhash 128 {3}|cardinality(minhash(t))"
	"minhash 128 {1..8}|cardinality(minhash(t, 128, '{1,2,3,4,5,6,7,8}'))"
)

# run_case FILE EXPR: prints "peak_kB<TAB>seconds<TAB>result or error"
run_case() {
	local out err
	out=$(psql -X -q -At -F $'\t' -v file="$1" 2>"$WORK/stderr" <<-SQL
		\set result ERROR
		SELECT clock_timestamp() AS t0 \gset
		SELECT ($2)::text AS result FROM (SELECT pg_read_file(:'file') AS t OFFSET 0) s \gset
		SELECT substring(pg_read_file('/proc/self/status') FROM 'VmHWM:\s*(\d+) kB'),
		       round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1),
		       :'result';
	SQL
	) || true
	err=$(grep -m1 'ERROR:' "$WORK/stderr" | sed 's/.*ERROR: */ERROR: /' || true)
	if [ -n "$err" ]; then
		out="${out%$'\t'*}"$'\t'"$err"
	fi
	printf '%s\n' "$out"
}

echo "== $(psql -X -At -c 'SELECT version()' | cut -d, -f1); simhash library: $(psql -X -At -c "SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'")/simhash.so"
for spec in "${TEXTS[@]}"; do
	kind=${spec%%:*}
	mb=${spec##*:}
	file="$WORK/$kind-$mb.txt"
	make_text "$kind" "$mb" "$file"
	bytes=$(stat -c %s "$file")
	echo
	echo "== $kind text, $bytes bytes"
	printf '%-36s %10s %10s %9s %8s  %s\n' "call" "peak MiB" "extra MiB" "x input" "seconds" "result"
	base=
	for c in "${CASES[@]}"; do
		label=${c%%|*}
		expr=${c#*|}
		IFS=$'\t' read -r kb secs result < <(run_case "$file" "$expr")
		[ -n "$base" ] || base=$kb
		awk -v l="$label" -v kb="$kb" -v base="$base" -v bytes="$bytes" \
			-v s="$secs" -v r="$result" 'BEGIN {
				printf "%-36s %10.0f %10.0f %9.2f %8s  %s\n", l, kb / 1024,
					(kb - base) / 1024, (kb - base) * 1024 / bytes, s, r }'
	done
	rm -f "$file"
done
