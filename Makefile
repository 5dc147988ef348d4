# simhash: PGXS build of the extension.
#
#   make && make install           build and install into the pg_config found
#   make installcheck              pg_regress + isolation tests on a running server
#   make prove_installcheck        TAP tests (test/t/*.pl) against the installed build
#   bash test/run_all.sh           everything, on a throwaway cluster (see README)

MODULE_big = simhash
OBJS = \
	src/simhash.o \
	src/hamming.o \
	src/fingerprint.o \
	src/tokenizer.o \
	src/vote.o \
	src/fingerprint_sql.o \
	src/minhash.o \
	src/query.o \
	src/simhash_support.o \
	src/perm.o \
	src/permbuild.o \
	src/perminsert.o \
	src/permscan.o \
	src/permorder.o \
	src/permquery.o \
	src/permvacuum.o \
	src/permcost.o \
	src/permvalidate.o \
	src/permsearch.o \
	src/permpage.o \
	src/permleaf.o \
	src/permcheck.o \
	src/permutils.o \
	src/permlayout.o \
	src/permsort.o \
	src/permstore.o \
	src/permgroup.o \
	src/pairs.o \
	src/pairssearch.o \
	src/pairsparallel.o

EXTENSION = simhash
# Install and upgrade scripts beside the control file, as in contrib.  A
# released script never changes: a new version adds simhash--X.sql for fresh
# installs and simhash--PREV--X.sql for updates (test "upgrade" compares them).
DATA = simhash--1.0.sql simhash--1.0--1.1.sql simhash--1.1.sql \
	simhash--1.1--1.2.sql simhash--1.2.sql \
	simhash--1.2--1.3.sql simhash--1.3.sql \
	simhash--1.3--1.4.sql simhash--1.4.sql

REGRESS = type hamming fingerprint fingerprint_golden verification perm_build perm_scan perm_growth perm_check perm_format perm_knn perm_security pairs upgrade
REGRESS_OPTS = --load-extension=simhash

# isolation tests: test/specs/*.spec, expected output in test/expected/
ISOLATION = perm_insert_scan_vacuum
ISOLATION_OPTS = --inputdir=test --load-extension=simhash

# Debian's libxxhash-dev: the header is compiled in (XXH_INLINE_ALL), so the
# module has no runtime dependency and no exported xxHash symbols.
PG_CPPFLAGS = -I$(srcdir)/src
# -Wextra, less -Wunused-parameter: PostgreSQL's own headers trip it, and so
# do the fixed signatures of index AM callbacks.
PG_CFLAGS = -Wextra -Wno-unused-parameter

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The fingerprint inner loops (tokenizer, XXH3 on short inputs, bit voting)
# gain from more aggressive inlining and vectorisation than PGXS's -O2.
src/fingerprint.o src/tokenizer.o src/vote.o: CFLAGS += -O3

# The bitcode that PostgreSQL's JIT may inline is built without run-time
# CPU dispatch (ifuncs, target_clones): LLVM 14's ThinLTO indexer crashes on
# it, and the JIT compiles for the host CPU anyway.
BITCODE_CFLAGS += -DSIMHASH_NO_CPU_DISPATCH

# PGXS does not track header dependencies: rebuild everything when a
# private header changes (structs such as SimhashVoter live on callers' stacks).
$(OBJS): $(wildcard $(srcdir)/src/*.h)

# TAP tests (test/t/*.pl) against the installed build, like pgvector's
# target of the same name.  Each test starts and stops clusters of its own
# with the binaries of $(PG_CONFIG), put first on PATH; no server need be
# running.  initdb refuses root, so run it as another user, who must be able
# to write TAP_TESTDIR (default: this directory).  Its tmp_check/ gets the
# clusters and, in log/, the logs (regress_log_<test>); each call empties it.
#
#   make prove_installcheck
#   make prove_installcheck PROVE_TESTS=test/t/003_perm_crash.pl PROVE_FLAGS=-v
#   runuser -u postgres -- make prove_installcheck TAP_TESTDIR=/tmp/simhash-tap
#
# PROVE_TESTS: the test files to run (default: all); PROVE_FLAGS: further
# options for prove.  test/run_all.sh calls this once per test, as postgres.
tap_testdir = $(abspath $(or $(TAP_TESTDIR),$(CURDIR)))

.PHONY: prove_installcheck
prove_installcheck:
	@if [ "$$(id -u)" = 0 ]; then \
	  echo "prove_installcheck: initdb refuses root; run as another user, e.g." \
	    "runuser -u postgres -- make prove_installcheck TAP_TESTDIR=DIR" >&2; \
	  exit 1; \
	fi
	rm -rf '$(tap_testdir)/tmp_check'
	$(MKDIR_P) '$(tap_testdir)/tmp_check'
	cd $(srcdir) && \
	  TESTDIR='$(tap_testdir)' PATH="$(bindir):$$PATH" \
	  PG_REGRESS='$(top_builddir)/src/test/regress/pg_regress' \
	  $(PROVE) $(PG_PROVE_FLAGS) $(PROVE_FLAGS) $(or $(PROVE_TESTS),test/t/*.pl)
