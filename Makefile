# simhash: PGXS build of the extension.
#
#   make && make install           build and install into the pg_config found
#   make installcheck              pg_regress + isolation tests on a running server
#   bash test/run_all.sh           everything, on a throwaway cluster (see README)

MODULE_big = simhash
OBJS = \
	src/simhash.o \
	src/hamming.o \
	src/fingerprint.o \
	src/tokenizer.o \
	src/fingerprint_sql.o \
	src/minhash.o \
	src/query.o \
	src/simhash_support.o \
	src/perm.o \
	src/permbuild.o \
	src/perminsert.o \
	src/permscan.o \
	src/permvacuum.o \
	src/permcost.o \
	src/permvalidate.o \
	src/permsearch.o \
	src/permpage.o \
	src/permleaf.o \
	src/permutils.o \
	src/permlayout.o

EXTENSION = simhash
# Install and upgrade scripts beside the control file, as in contrib.  A
# released script never changes: a new version adds simhash--X.sql for fresh
# installs and simhash--PREV--X.sql for updates (test "upgrade" compares them).
DATA = simhash--1.0.sql simhash--1.0--1.1.sql simhash--1.1.sql

REGRESS = type hamming fingerprint fingerprint_golden verification perm_build perm_scan perm_growth upgrade
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
src/fingerprint.o src/tokenizer.o: CFLAGS += -O3

# The bitcode that PostgreSQL's JIT may inline is built without run-time
# CPU dispatch (ifuncs, target_clones): LLVM 14's ThinLTO indexer crashes on
# it, and the JIT compiles for the host CPU anyway.
BITCODE_CFLAGS += -DSIMHASH_NO_CPU_DISPATCH

# PGXS does not track header dependencies: rebuild everything when a
# private header changes (structs such as SimhashVoter live on callers' stacks).
$(OBJS): $(wildcard $(srcdir)/src/*.h)
