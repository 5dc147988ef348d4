/*-------------------------------------------------------------------------
 *
 * permowner.c
 *		simhash_perm: running a table's index expressions and predicate as
 *		the table's owner, in a security-restricted operation.
 *
 * Outside CREATE INDEX and REINDEX (which switch user themselves), the
 * index evaluates a table owner's code in three places: the
 * heapallindexed pass of simhash_perm_check(), the NULL rows of an ordered
 * scan, and the pair search that guards an exclusion constraint's radius.
 * At the bottom of the folder's order: every file may call it.
 *
 * IDENTIFICATION
 *	  src/index/permowner.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "catalog/index.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "index/perm.h"

/*
 * Become the owner of heap, in a security-restricted operation, before
 * evaluating its index expressions or a partial index's predicate outside
 * of CREATE INDEX (simhash_perm_check's heapallindexed, the NULL rows of an
 * ordered scan).  Those are the table owner's code: run as the caller, an
 * owner's IMMUTABLE wrapper would run with a superuser's rights when one
 * checks the index.  REINDEX and contrib/amcheck do the same since
 * CVE-2022-1552.  GUC changes the code makes are undone by
 * PermRestoreUser, or by the transaction's abort.
 */
void
PermBecomeTableOwner(Relation heap, PermSavedUser *saved)
{
	GetUserIdAndSecContext(&saved->userid, &saved->sec_context);
	SetUserIdAndSecContext(heap->rd_rel->relowner,
						   saved->sec_context | SECURITY_RESTRICTED_OPERATION);
	saved->gucnestlevel = NewGUCNestLevel();
	SimhashRestrictSearchPath();
}

/* Back to the caller's user id after PermBecomeTableOwner */
void
PermRestoreUser(PermSavedUser *saved)
{
	AtEOXact_GUC(false, saved->gucnestlevel);
	SetUserIdAndSecContext(saved->userid, saved->sec_context);
}

/*
 * Read every row of heap visible to the MVCC snapshot as CREATE INDEX would
 * for index (index expressions and a partial index's predicate evaluated,
 * a HOT chain reported by its root TID), and pass each to callback, all as
 * heap's owner in a security-restricted operation.  The rows are read as
 * a concurrent build reads them: under an MVCC snapshot the table AM
 * computes no xmin horizon (an assert of heapam_index_build_range_scan
 * checks that such a scan comes without one).
 */
void
PermReadRowsAsOwner(Relation heap, Relation index, Snapshot snapshot,
					IndexBuildCallback callback, void *arg)
{
	PermSavedUser saved;
	IndexInfo  *info;
	TableScanDesc tscan;

	PermBecomeTableOwner(heap, &saved);
	info = BuildIndexInfo(index);
	info->ii_Concurrent = true;
	tscan = table_beginscan_strat(heap, snapshot, 0, NULL, true, true);
	/* ends tscan */
	table_index_build_scan(heap, index, info, true, false, callback, arg,
						   tscan);
	PermRestoreUser(&saved);
}
