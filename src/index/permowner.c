/*-------------------------------------------------------------------------
 *
 * permowner.c
 *		simhash_perm: whose rights a table's index expressions run with.
 *
 * An index on an expression, or a partial index, holds the table owner's
 * code.  The index evaluates it in two kinds of places, and they differ in
 * whose rights it runs with (README.perm, "Security"):
 *
 *	- Maintenance, which must read every row as the index defines it: the
 *	  build (CREATE INDEX, REINDEX, VACUUM FULL, CLUSTER), the heapallindexed
 *	  pass of simhash_perm_check(), and the row search that guards an
 *	  exclusion constraint's radius on ALTER INDEX and on rebuilds.  These
 *	  run as the table's owner, in a security-restricted operation, with
 *	  search_path locked to pg_catalog, pg_temp, on every PostgreSQL version
 *	  (17 does this for its own maintenance commands; on 15 and 16 it is
 *	  done here): PermRunAsTableOwner, the one way in.  A caller's schema
 *	  then cannot put its own lower() under the owner's unqualified call.
 *	- No scan reads the table for rows the index lacks: the rows with a
 *	  NULL code are listed in its store (permstore.c), the far rows of a
 *	  nearest-neighbour query on bit(n) codes come from the code store, and
 *	  a scan without a tenant's equality is refused (the planner never
 *	  builds one).  Two places still read a candidate's row by its TID and
 *	  compute its code, as the caller (PermRowReader, permconstraint.c): the
 *	  rings of a nearest-neighbour scan of bit(n) codes, which the planner
 *	  keeps off tables with row-level security for the caller
 *	  (src/planner/scanpaths.c), and an exclusion constraint's check
 *	  (README.perm, "Security", says what is left to do there).
 *
 * At the bottom of the folder's order: every file may call it.
 *
 * IDENTIFICATION
 *	  src/index/permowner.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "index/perm.h"

/*
 * search_path = pg_catalog, pg_temp until the GUC nest level the caller
 * opened ends: PostgreSQL 17's RestrictSearchPath(), done by hand before
 */
static void
lock_search_path(void)
{
#if PG_VERSION_NUM >= 170000
	RestrictSearchPath();
#else
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
#endif
}

/* The caller's user and GUC level, while a table's owner runs its code */
typedef struct SavedUser
{
	Oid			userid;
	int			sec_context;
	int			gucnestlevel;
} SavedUser;

/*
 * Become the owner of heap, in a security-restricted operation with
 * search_path locked to pg_catalog, pg_temp, before evaluating its index
 * expressions or a partial index's predicate for maintenance (a build, the
 * heapallindexed pass, a constraint's row search).  Those are the table
 * owner's code: run as the caller, an owner's IMMUTABLE wrapper would run
 * with a superuser's rights when one checks the index; run with the
 * caller's search_path, an unqualified call in it would reach whatever the
 * caller's schemas define.  REINDEX and contrib/amcheck do the same since
 * CVE-2022-1552 (and lock search_path since PostgreSQL 17).  GUC changes
 * the code makes are undone by restore_user, or by the transaction's
 * abort, which also restores the user id.
 */
static void
become_table_owner(Relation heap, SavedUser *saved)
{
	GetUserIdAndSecContext(&saved->userid, &saved->sec_context);
	SetUserIdAndSecContext(heap->rd_rel->relowner,
						   saved->sec_context | SECURITY_RESTRICTED_OPERATION);
	saved->gucnestlevel = NewGUCNestLevel();
	lock_search_path();
}

/* Back to the caller's user id and settings after become_table_owner */
static void
restore_user(SavedUser *saved)
{
	AtEOXact_GUC(false, saved->gucnestlevel);
	SetUserIdAndSecContext(saved->userid, saved->sec_context);
}

/*
 * The hint an error about a missing name gets when it escapes the owner's
 * code under the locked search_path.  That lock is new in 1.6 on PostgreSQL
 * 15 and 16, where core rebuilds a btree with the caller's search_path: an
 * index on a function that calls simhash() unqualified, created on an empty
 * table and filled by inserts, fails at the first REINDEX with an error that
 * otherwise points only to argument types.
 */
#define PERM_SEARCH_PATH_HINT \
	"simhash_perm evaluates index expressions and predicates with search_path = pg_catalog, pg_temp; " \
	"schema-qualify the names in the functions they call, or give those functions SET search_path."

/*
 * In PG_CATCH of the owner's code: re-throw the error, with
 * PERM_SEARCH_PATH_HINT added if a name was not found.  Only the error is
 * changed.  The user id, the security context and the GUC nest level of
 * become_table_owner stay as they are, for the (sub)transaction's abort to
 * restore, as it does after any error raised inside: restored here too,
 * they would be restored twice.  The copy goes in cxt, the context of the
 * code that was interrupted (CopyErrorData must not run in ErrorContext);
 * ReThrowError copies it into ErrorContext.
 */
pg_noreturn static void
rethrow_with_search_path_hint(MemoryContext cxt)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	if ((edata->sqlerrcode != ERRCODE_UNDEFINED_FUNCTION &&
		 edata->sqlerrcode != ERRCODE_UNDEFINED_TABLE &&
		 edata->sqlerrcode != ERRCODE_UNDEFINED_OBJECT) ||
		(edata->hint != NULL && strstr(edata->hint, PERM_SEARCH_PATH_HINT)))
	{
		/* not ours to explain, or explained already (a parallel worker) */
		FreeErrorData(edata);
		PG_RE_THROW();
	}

	/*
	 * The parser's own hint for a missing function ("You might need to add
	 * explicit type casts") stays first: it is right when the types are
	 * wrong.
	 */
	if (edata->hint == NULL)
		edata->hint = pstrdup(PERM_SEARCH_PATH_HINT);
	else
		edata->hint = psprintf("%s %s", edata->hint, PERM_SEARCH_PATH_HINT);
	FlushErrorState();
	ReThrowError(edata);
}

/*
 * Run code(arg), the part of a maintenance command that evaluates heap's
 * index expressions or predicate (the table scan, and anything that may
 * read the index's expressions first, which inlines SQL functions), as
 * heap's owner (become_table_owner), then return to the caller's user and
 * settings.  An error that escapes code because a name was not found gets
 * a hint saying that search_path was locked.
 */
void
PermRunAsTableOwner(Relation heap, PermOwnerCode code, void *arg)
{
	SavedUser	saved;
	MemoryContext cxt = CurrentMemoryContext;

	become_table_owner(heap, &saved);
	PG_TRY();
	{
		code(arg);
	}
	PG_CATCH();
	{
		rethrow_with_search_path_hint(cxt);
	}
	PG_END_TRY();
	restore_user(&saved);
}

/*
 * Read every row of heap visible to the MVCC snapshot as CREATE INDEX would
 * for index (index expressions and a partial index's predicate evaluated
 * by the current user, a HOT chain reported by its root TID), and pass each
 * to callback.  The rows are read as a concurrent build reads them: under
 * an MVCC snapshot the table AM computes no xmin horizon (an assert of
 * heapam_index_build_range_scan checks that such a scan comes without
 * one).
 */
static void
read_rows(Relation heap, Relation index, Snapshot snapshot,
		  IndexBuildCallback callback, void *arg)
{
	IndexInfo  *info;
	TableScanDesc tscan;

	info = BuildIndexInfo(index);
	info->ii_Concurrent = true;
	tscan = table_beginscan_strat(heap, snapshot, 0, NULL, true, true);
	/* ends tscan */
	table_index_build_scan(heap, index, info, true, false, callback, arg,
						   tscan);
}

/* What PermReadRowsAsOwner reads, for read_rows_as_owner */
typedef struct OwnerRead
{
	Relation	heap;
	Relation	index;
	Snapshot	snapshot;
	IndexBuildCallback callback;
	void	   *arg;
} OwnerRead;

/* PermRunAsTableOwner's code for PermReadRowsAsOwner */
static void
read_rows_as_owner(void *arg)
{
	OwnerRead  *r = (OwnerRead *) arg;

	read_rows(r->heap, r->index, r->snapshot, r->callback, r->arg);
}

/*
 * read_rows for maintenance: as heap's owner, security-restricted, with
 * search_path locked
 */
void
PermReadRowsAsOwner(Relation heap, Relation index, Snapshot snapshot,
					IndexBuildCallback callback, void *arg)
{
	OwnerRead	r;

	r.heap = heap;
	r.index = index;
	r.snapshot = snapshot;
	r.callback = callback;
	r.arg = arg;
	PermRunAsTableOwner(heap, read_rows_as_owner, &r);
}
