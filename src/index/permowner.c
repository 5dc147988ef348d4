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
 *	  done here): PermBecomeTableOwner, the one way in.  A caller's schema
 *	  then cannot put its own lower() under the owner's unqualified call.
 *	- No scan reads the table for rows the index lacks: the rows with a
 *	  NULL code are listed in its store (permstore.c), the far rows of a
 *	  nearest-neighbour query on bit(n) codes come from the code store, and
 *	  a scan without a tenant's equality is refused (the planner never
 *	  builds one).  Two places still read a candidate's row by its TID and
 *	  compute its code, as the caller (PermRowReader, permexclude.c): the
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
 * the code makes are undone by PermRestoreUser, or by the transaction's
 * abort, which also restores the user id.
 */
void
PermBecomeTableOwner(Relation heap, PermSavedUser *saved)
{
	GetUserIdAndSecContext(&saved->userid, &saved->sec_context);
	SetUserIdAndSecContext(heap->rd_rel->relowner,
						   saved->sec_context | SECURITY_RESTRICTED_OPERATION);
	saved->gucnestlevel = NewGUCNestLevel();
	lock_search_path();
}

/* Back to the caller's user id and settings after PermBecomeTableOwner */
void
PermRestoreUser(PermSavedUser *saved)
{
	AtEOXact_GUC(false, saved->gucnestlevel);
	SetUserIdAndSecContext(saved->userid, saved->sec_context);
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

/*
 * read_rows for maintenance: as heap's owner, security-restricted, with
 * search_path locked
 */
void
PermReadRowsAsOwner(Relation heap, Relation index, Snapshot snapshot,
					IndexBuildCallback callback, void *arg)
{
	PermSavedUser saved;

	PermBecomeTableOwner(heap, &saved);
	read_rows(heap, index, snapshot, callback, arg);
	PermRestoreUser(&saved);
}
