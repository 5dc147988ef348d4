# tools/common.sh: shared steps of test/run_all.sh, the demo and benchmarks.
#
# Sourced, not run.  Provides:
#   simhash_use_pg PG_CONFIG  build for and test on that PostgreSQL
#   simhash_install_deps [PKG...]  Debian packages the build, tests and demo
#                            need, and any others given
#   simhash_cache_dir        where builds of dependencies are cached
#   simhash_need_packages NAME PKG...
#                            the packages a build script needs (as root:
#                            installs the missing ones; else names them)
#   simhash_build_install    build with warnings as errors, install
#   simhash_cluster_start    throwaway cluster in a temporary directory,
#                            listening only on a private Unix socket;
#                            exports PGHOST, PGPORT, PGUSER, PGDATABASE
#   simhash_cluster_stop     stop it and delete it (also run on exit)
#   simhash_as_pg CMD...     run CMD as the cluster's owner
#   simhash_load_corpus TABLE  apt's package descriptions into TABLE
#   simhash_bench_data ROWS  the index benchmarks' data: extension, table
#                            fps of ROWS fingerprints + 1% planted, bench_q
#   simhash_pgbench NAME SCRIPT SECS RUNS PGOPTIONS DIR
#                            run a pgbench script RUNS times; print the
#                            median tps and latency percentiles
#   simhash_ab_start NAME REV_A REV_B SHARED_BUFFERS
#                            an A/B benchmark: WORK, both revisions'
#                            libraries and a throwaway cluster
#   simhash_ab_use A|B       put one revision's library in place
#   simhash_bench_script FILE FIRST LAST QUERY
#                            a pgbench script: a random bench_q row between
#                            FIRST and LAST as :fp, then QUERY
#   simhash_bench_start NAME CONF
#                            a benchmark's start: REPORT, a fresh build, a
#                            throwaway cluster with CONF, WORK; and q

SIMHASH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The PostgreSQL to build for and test on: $PG_CONFIG's (default: Debian's
# PostgreSQL 15); simhash_use_pg switches to another one.
simhash_use_pg() {
	PG_CONFIG=$1
	PG_BINDIR=$("$PG_CONFIG" --bindir)
	export PG_CONFIG PG_BINDIR
	export PATH="$PG_BINDIR:$PATH"
}
if [ -n "${PG_CONFIG:-}" ]; then
	simhash_use_pg "$PG_CONFIG"
else
	PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
	[ -x "$PG_CONFIG" ] || PG_CONFIG=pg_config
	PG_BINDIR=/usr/lib/postgresql/15/bin
	export PATH="$PG_BINDIR:$PATH"
fi

# initdb refuses to run as root: as root, the cluster belongs to "postgres".
simhash_as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

simhash_install_deps() {
	local pkgs="postgresql-15 postgresql-server-dev-15 libxxhash-dev make gcc lz4 libipc-run-perl python3 python3-xxhash python3-numpy python3-psycopg2 unicode-data $*"
	local missing="" p
	for p in $pkgs; do
		dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
	done
	# The demo and the quality evaluation read apt's English descriptions,
	# and the mixed-script evaluation its Chinese ones, which Debian's
	# container images switch off (Acquire::Languages "none").  apt keeps
	# only the languages of its last update: ask for both every time.
	if [ -z "$missing" ] && python3 "$SIMHASH_ROOT/tools/corpus.py" --files >/dev/null 2>&1 &&
		python3 "$SIMHASH_ROOT/tools/corpus.py" --files zh_CN >/dev/null 2>&1; then
		return 0
	fi
	if [ "$(id -u)" != 0 ]; then
		echo "missing Debian packages:$missing (run as root to install them)" >&2
		[ -z "$missing" ] && return 0
		return 1
	fi
	echo "== installing Debian packages:${missing:- (none)}; fetching package descriptions"
	apt-get update -qq -o Acquire::Languages=en,zh_CN
	if [ -n "$missing" ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
	fi
}

# Where the builds of PostgreSQL 18, pgvector and Citus are cached, outside
# any checkout: $SIMHASH_CACHE, or /var/cache/simhash as root (the postgres
# user that runs the test clusters can read it), else ~/.cache/simhash.
simhash_cache_dir() {
	if [ "$(id -u)" = 0 ]; then
		echo "${SIMHASH_CACHE:-/var/cache/simhash}"
	else
		echo "${SIMHASH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/simhash}"
	fi
}

# The Debian packages PKG... that a tool (NAME, for its messages) needs:
# as root, the missing ones are installed; otherwise they are named and
# the call fails.
simhash_need_packages() {	# name pkg...
	local name=$1 missing="" p
	shift
	for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "$name: missing Debian packages:$missing (run as root to install them)" >&2
		return 1
	fi
	echo "$name: installing$missing" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
}

simhash_build_install() {
	echo "== building for $("${PG_CONFIG:-pg_config}" --version) (warnings are errors) and installing"
	make -C "$SIMHASH_ROOT" -s clean PG_CONFIG="${PG_CONFIG:-pg_config}"
	make -C "$SIMHASH_ROOT" -s COPT=-Werror PG_CONFIG="${PG_CONFIG:-pg_config}"
	make -C "$SIMHASH_ROOT" -s install PG_CONFIG="${PG_CONFIG:-pg_config}" >/dev/null
}

simhash_cluster_stop() {
	if [ -n "${SIMHASH_PGDATA:-}" ] && [ -d "$SIMHASH_PGDATA" ]; then
		simhash_as_pg pg_ctl -D "$SIMHASH_PGDATA" -m immediate -w stop >/dev/null 2>&1 || true
		rm -rf "$SIMHASH_TMP"
	fi
	SIMHASH_PGDATA=
}

simhash_cluster_start() {
	SIMHASH_TMP=$(mktemp -d /tmp/simhash-cluster.XXXXXX)
	chmod 755 "$SIMHASH_TMP"
	SIMHASH_PGDATA=$SIMHASH_TMP/data
	mkdir "$SIMHASH_TMP/socket"
	[ "$(id -u)" = 0 ] && chown postgres: "$SIMHASH_TMP" "$SIMHASH_TMP/socket"
	trap simhash_cluster_stop EXIT
	simhash_as_pg initdb -D "$SIMHASH_PGDATA" -U postgres -A trust -E UTF8 \
		--locale=C.UTF-8 >"$SIMHASH_TMP/initdb.log" 2>&1 ||
		{ cat "$SIMHASH_TMP/initdb.log"; return 1; }
	cat >>"$SIMHASH_PGDATA/postgresql.conf" <<-CONF
		listen_addresses = ''
		unix_socket_directories = '$SIMHASH_TMP/socket'
		port = 54329
		fsync = off
		shared_buffers = 512MB
		max_wal_size = 4GB
		work_mem = 64MB
		maintenance_work_mem = 1GB
		${SIMHASH_EXTRA_CONF:-}
	CONF
	simhash_as_pg pg_ctl -D "$SIMHASH_PGDATA" -l "$SIMHASH_TMP/server.log" -w start >/dev/null
	export PGHOST=$SIMHASH_TMP/socket PGPORT=54329 PGUSER=postgres PGDATABASE=postgres
	echo "== throwaway cluster running in $SIMHASH_PGDATA"
}

# Load apt's English package descriptions into a table (package, body):
# the documents of tools/corpus.py, which says which ones and how they are read.
simhash_load_corpus() {
	local table=$1
	psql -q -v ON_ERROR_STOP=1 -c "CREATE TABLE $table (id serial PRIMARY KEY, package text, body text)"
	python3 "$SIMHASH_ROOT/tools/corpus.py" --csv |
		psql -q -v ON_ERROR_STOP=1 -c "\\copy $table (package, body) FROM STDIN WITH (FORMAT csv)"
}

# The index benchmarks' data, in the database psql reaches: CREATE EXTENSION,
# table fps(id, fp bigint) with ROWS pseudo-random fingerprints (fixed seed)
# plus 1% planted near-duplicates (copies of rows g * 97 with 1-3 bits
# flipped), and bench_q(qid, fp): 500 originals of planted copies and 500
# random fingerprints.  Ends with VACUUM ANALYZE fps.
simhash_bench_data() {
	local rows=$1
	psql -X -q -v ON_ERROR_STOP=1 -f - <<-SQL
		CREATE EXTENSION simhash;
		-- a fixed-seed 64-bit generator: two 32-bit hashes of the row number
		CREATE FUNCTION fp_of(g bigint) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE
		  AS \$\$ SELECT (hashint8(g)::bigint << 32) | (hashint8(-g - 1)::bigint & 4294967295) \$\$;
		CREATE FUNCTION flip(fp bigint, seed bigint, n int) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE
		  AS \$\$ SELECT fp # (SELECT bit_or(1::bigint << ((hashint8(seed * 8 + i) & 63)::int))
		                        FROM generate_series(1, n) i) \$\$;
		CREATE TABLE fps (id bigint, fp bigint) WITH (autovacuum_enabled = off);
		INSERT INTO fps SELECT g, fp_of(g) FROM generate_series(1, $rows) g;
		INSERT INTO fps SELECT $rows + g, flip(fp_of(g * 97), g, 1 + (g % 3)::int)
		  FROM generate_series(1, $rows / 100) g;
		CREATE TABLE bench_q (qid int PRIMARY KEY, fp bigint);
		INSERT INTO bench_q SELECT g, fp_of(g * 97) FROM generate_series(1, 500) g;
		INSERT INTO bench_q SELECT 500 + g, fp_of(-g * 31 - 7) FROM generate_series(1, 500) g;
		VACUUM ANALYZE fps;
	SQL
}

# Run pgbench script SCRIPT (-M prepared, 2 clients) RUNS times for SECS
# seconds each, in directory DIR, with PGOPTIONS (may be empty); print NAME,
# the median tps, every run's tps, and the 50th and 99th percentile latency
# over all runs (pgbench's per-transaction log).
simhash_pgbench() {
	local name=$1 script=$2 secs=$3 runs=$4 pre=$5 dir=$6
	local i tps=() out
	rm -f "$dir/lat_$name"
	for i in $(seq 1 "$runs"); do
		rm -f "$dir"/pgbench_log.*
		out=$(cd "$dir" && PGOPTIONS="$pre" pgbench -n -M prepared -c 2 -j 2 -T "$secs" -l -f "$script" 2>&1)
		tps+=("$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')")
		cat "$dir"/pgbench_log.* >>"$dir/lat_$name"
	done
	python3 - "$name" "$dir/lat_$name" "${tps[@]}" <<'PY'
import statistics, sys
name, latfile, tps = sys.argv[1], sys.argv[2], [float(t) for t in sys.argv[3:]]
lat = sorted(int(line.split()[2]) / 1000.0 for line in open(latfile))
pct = lambda p: lat[min(len(lat) - 1, int(p / 100 * len(lat)))]
print(f"  {name:14s} tps {statistics.median(tps):10.1f}  (runs: {', '.join(f'{t:.1f}' for t in tps)})"
      f"  latency ms p50 {pct(50):8.3f}  p99 {pct(99):8.3f}")
PY
}

# A/B benchmarks of two revisions (test/bench/*_ab.sh): sets WORK to a new
# temporary directory, builds each revision in a worktree there, keeps
# their libraries as $WORK/A.so and $WORK/B.so, installs B's SQL objects (B
# is normally the newer; the two must share the index's on-disk format),
# and starts a throwaway cluster with shared_buffers SHARED_BUFFERS and no
# parallel workers or JIT.  On exit: the cluster stopped, B's library left
# installed, WORK removed.
simhash_ab_start() {
	local name=$1 sb=$4 v rev
	simhash_install_deps
	WORK=$(mktemp -d "/tmp/simhash-$name.XXXXXX")
	chmod 755 "$WORK"
	for v in A B; do
		if [ "$v" = A ]; then rev=$2; else rev=$3; fi
		git -C "$SIMHASH_ROOT" worktree add -q --detach "$WORK/src_$v" "$rev"
		make -s -C "$WORK/src_$v" COPT=-Werror >/dev/null
		cp "$WORK/src_$v/simhash.so" "$WORK/$v.so"
	done
	make -s -C "$WORK/src_B" install >/dev/null
	SIMHASH_EXTRA_CONF="shared_buffers = $sb
max_parallel_workers_per_gather = 0
jit = off" simhash_cluster_start
	trap 'simhash_cluster_stop; simhash_ab_use B;
		git -C "$SIMHASH_ROOT" worktree remove --force "$WORK/src_A" || true;
		git -C "$SIMHASH_ROOT" worktree remove --force "$WORK/src_B" || true;
		rm -rf "$WORK"' EXIT
}

# Put revision A's or B's library in place: a new file, never rewritten in
# place, so running backends keep theirs and new connections load it.
simhash_ab_use() {
	local libdir
	libdir=$(pg_config --pkglibdir)
	cp "$WORK/$1.so" "$libdir/simhash.so.new" && mv -f "$libdir/simhash.so.new" "$libdir/simhash.so"
}

# The start of a benchmark run of ROWS rows: REPORT=$OUT/NAME_ROWS.txt (OUT
# defaults to test/bench/results), the Debian packages, a fresh build with
# warnings as errors, a throwaway cluster with CONF added to its settings,
# and a work directory WORK; the cluster and WORK go on exit.
simhash_bench_start() {
	local name=$1 conf=$2
	OUT=${OUT:-test/bench/results}
	mkdir -p "$OUT"
	REPORT="$OUT/${name}_${ROWS}.txt"
	simhash_install_deps
	simhash_build_install
	SIMHASH_EXTRA_CONF="$conf" simhash_cluster_start
	WORK=$(mktemp -d "/tmp/simhash-$name.XXXXXX")
	chmod 755 "$WORK"
	trap 'simhash_cluster_stop; rm -rf "$WORK"' EXIT
}

# psql that stops at the first error, without the user's psqlrc
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

# Write a pgbench script to FILE: take the fingerprint of a random row of
# bench_q with qid between FIRST and LAST as :fp, then run QUERY.
simhash_bench_script() {
	local file=$1 first=$2 last=$3 query=$4
	printf '\\set qid random(%s, %s)\nSELECT fp FROM bench_q WHERE qid = :qid \\gset\n%s\n' \
		"$first" "$last" "$query" >"$file"
}
