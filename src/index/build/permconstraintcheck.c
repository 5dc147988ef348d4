/*-------------------------------------------------------------------------
 *
 * permconstraintcheck.c
 *		simhash_perm: the radius of an exclusion constraint always holds for
 *		the rows it guards.
 *
 * EXCLUDE USING simhash_perm (fp WITH ~=) WITH (radius = n) promises
 * that no two rows lie within n bits of each other, and pg_dump restores
 * the table by adding the constraint again with the radius the definition
 * prints.  PostgreSQL checks every row when the constraint is added and
 * when REINDEX rebuilds its index.  Two other paths would let the printed
 * radius and the rows part:
 *
 *	- ALTER INDEX ... SET (radius = m), or RESET, changes the printed
 *	  definition at once.  The index goes on enforcing the radius it was
 *	  built with and refuses writes until REINDEX (permconstraint.c), but the
 *	  definition, and so a dump, already says m.  An object access hook sees
 *	  the change right after the catalog update, in the same command; for a
 *	  larger m it searches the rows for a pair within m and refuses the
 *	  ALTER, naming both rows.  A smaller m needs no search: rows that keep
 *	  n bits apart keep m bits apart.
 *	- VACUUM FULL and CLUSTER rebuild the index without PostgreSQL's check
 *	  (the rows did not change, so reindex_index skips it), and the build
 *	  takes the radius from the reloption.  An index whose reloption was
 *	  raised by a release that did not check the ALTER would then enforce a
 *	  radius its rows break.  So such a rebuild searches the rows itself
 *	  (PermCheckRebuiltConstraint), as REINDEX does, and fails on a pair.
 *
 * The search reads every row visible to a new MVCC snapshot, computing its
 * indexed value as CREATE INDEX does (index expressions and a partial
 * index's predicate, as the table's owner in a security-restricted
 * operation), and searches the index for entries within the radius: exact
 * at any radius (README.perm, "Any radius").  Each entry found is read back
 * from the table under the same snapshot and its own value compared, so
 * that dead entries, and damaged keys, name no pair.  It costs one index
 * search a row, as the check of REINDEX does.
 *
 * IDENTIFICATION
 *	  src/index/build/permconstraintcheck.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/objectaccess.h"
#include "commands/defrem.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "storage/bufmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "index/perm.h"
#include "index/permoptions.h"
#include "index/permscan.h"
#include "type/simhash.h"

/* Why the rows are searched: the message of a pair found */
typedef enum PairSearchReason
{
	PAIR_SEARCH_ALTER,			/* ALTER INDEX ... SET (radius) */
	PAIR_SEARCH_REBUILD			/* VACUUM FULL, CLUSTER */
} PairSearchReason;

typedef struct PairSearch
{
	Relation	index;
	int			radius;
	PairSearchReason reason;
	Snapshot	snapshot;
	PermRowReader *rows;
	PermTidList found;
} PairSearch;

static object_access_hook_type prev_object_access_hook = NULL;

/* "(block,offset)" */
static char *
tid_string(ItemPointer tid)
{
	return psprintf("(%u,%u)", ItemPointerGetBlockNumber(tid),
					ItemPointerGetOffsetNumber(tid));
}

/* Refuse the command: rows a and b lie within the radius */
pg_noreturn static void
report_pair(PairSearch *ps, ItemPointer a, uint64 fa, ItemPointer b, uint64 fb)
{
	const char *name = RelationGetRelationName(ps->index);
	int			distance = simhash_hamming(fa, fb);

	if (ps->reason == PAIR_SEARCH_ALTER)
		ereport(ERROR,
				(errcode(ERRCODE_EXCLUSION_VIOLATION),
				 errmsg("cannot set radius = %d on index \"%s\" of an exclusion constraint: two rows lie within it",
						ps->radius, name),
				 errdetail("The rows at %s and %s, fingerprints %016llx and %016llx, lie %d bits apart.",
						   tid_string(a), tid_string(b),
						   (unsigned long long) fa, (unsigned long long) fb,
						   distance),
				 errhint("Remove one row of each such pair first (simhash_pairs lists them), or keep the radius.")));
	ereport(ERROR,
			(errcode(ERRCODE_EXCLUSION_VIOLATION),
			 errmsg("could not rebuild index \"%s\": two rows lie within its exclusion constraint's radius = %d",
					name, ps->radius),
			 errdetail("The rows at %s and %s, fingerprints %016llx and %016llx, lie %d bits apart.",
					   tid_string(a), tid_string(b),
					   (unsigned long long) fa, (unsigned long long) fb,
					   distance),
			 errhint("The radius was raised without a check of the rows.  Remove one row of each such pair (simhash_pairs lists them), or set the radius back with ALTER INDEX, then run the command again.")));
}

/*
 * Callback of the search's table scan: search the index around one row,
 * and read back every other row it finds
 */
SIMHASH_POPCNT
static void
search_row(Relation index, ItemPointer tid, Datum *values, bool *isnull,
		   bool tupleIsAlive, void *arg)
{
	PairSearch *ps = (PairSearch *) arg;
	uint64		fp,
				other_fp;
	int64		i;

	if (isnull[0])
		return;
	fp = DatumGetUInt64(values[0]);
	PermSearchCenter(ps->index, fp, ps->radius, &ps->found);
	for (i = 0; i < ps->found.n; i++)
	{
		ItemPointer other = &ps->found.tids[i];

		if (ItemPointerEquals(other, tid))
			continue;
		if (!PermRowReaderFetch(ps->rows, other, ps->snapshot, &other_fp))
			continue;			/* a dead entry, or a NULL value */
		if (simhash_hamming(fp, other_fp) <= ps->radius)
			report_pair(ps, tid, fp, other, other_fp);
	}
}

/*
 * Search the rows of heap for two within radius of each other, through
 * index (which holds every row, and may be built for another radius), and
 * raise an error naming them
 */
static void
search_pairs(Relation heap, Relation index, int radius, PairSearchReason reason)
{
	PairSearch	ps = {0};

	ps.index = index;
	ps.radius = radius;
	ps.reason = reason;
	ps.snapshot = RegisterSnapshot(GetLatestSnapshot());
	ps.rows = PermRowReaderBegin(heap, index);

	/*
	 * Index expressions and predicate are the table owner's code: the rows
	 * and the matches read back (search_row) are evaluated as the owner
	 */
	PermReadRowsAsOwner(heap, index, ps.snapshot, search_row, &ps);

	PermRowReaderEnd(ps.rows);
	UnregisterSnapshot(ps.snapshot);
	if (ps.found.tids)
		pfree(ps.found.tids);
}

/*
 * After ambuild: an exclusion constraint's index rebuilt without
 * PostgreSQL's check (VACUUM FULL, CLUSTER) checks its rows itself.
 */
void
PermCheckRebuiltConstraint(Relation heap, Relation index)
{
	/*
	 * An index on bit(n) codes or with leading columns: its radius can
	 * only have been lowered since the rows were checked
	 * (check_radius_change refuses a larger one), which they keep
	 */
	if (PermIndexIsWide(index))
		return;
	search_pairs(heap, index, PermGetState(index)->layout.max_distance,
				 PAIR_SEARCH_REBUILD);
}

/*
 * After ALTER INDEX ... SET or RESET on a simhash_perm index: every option
 * must apply to the index's code type (as the build requires: an option
 * accepted here and ignored, or refused by the next REINDEX, would break
 * a restore of a dump); and on an exclusion constraint's index, a radius
 * larger than the one the index was built with must hold for the rows
 * already there.
 */
static void
check_radius_change(Oid relid)
{
	HeapTuple	tuple;
	Form_pg_class classform;
	Form_pg_index indexform;
	char	   *amname;
	bool		exclusion;
	Oid			heapid;
	Relation	index,
				heap;
	int			max_distance,
				blocks,
				built;

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		return;
	classform = (Form_pg_class) GETSTRUCT(tuple);
	if (classform->relkind != RELKIND_INDEX)
	{
		ReleaseSysCache(tuple);
		return;
	}
	amname = get_am_name(classform->relam);
	ReleaseSysCache(tuple);
	if (amname == NULL || strcmp(amname, "simhash_perm") != 0)
		return;

	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		return;
	indexform = (Form_pg_index) GETSTRUCT(tuple);
	exclusion = indexform->indisexclusion && indexform->indisvalid;
	heapid = indexform->indrelid;
	ReleaseSysCache(tuple);

	/* the reloptions just written, and the radius of the index's build */
	CommandCounterIncrement();
	index = index_open(relid, AccessShareLock);
	if (RelationGetNumberOfBlocks(index) == 0)
	{
		/* storage being replaced (a rebuild checks its own options, rows) */
		index_close(index, NoLock);
		return;
	}
	/* each option applies to the code type (these refuse one that does not) */
	if (PermIndexIsWide(index))
		PermWideLayoutOptions(index, PermGetState(index)->layout.width,
							  &max_distance, &blocks);
	else
		PermLayoutOptions(index, &max_distance, &blocks);
	if (!exclusion)
	{
		index_close(index, NoLock);
		return;
	}
	built = PermGetState(index)->layout.max_distance;
	if (max_distance > built && PermIndexIsWide(index))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot raise the radius of index \"%s\" of an exclusion constraint on %s",
						RelationGetRelationName(index),
						PermTenantColumns(index) > 0 ? "leading columns" : "bit(n) codes"),
				 errdetail("Its rows are not searched for pairs within the new radius."),
				 errhint("Drop the constraint and add it again with the new radius: adding it checks every row.")));
	if (max_distance > built)
	{
		/*
		 * ShareLock, as CREATE INDEX takes: no row can come in unchecked
		 * while the ALTER is in progress (after it, writes wait for
		 * REINDEX)
		 */
		heap = table_open(heapid, ShareLock);
		search_pairs(heap, index, max_distance, PAIR_SEARCH_ALTER);
		table_close(heap, NoLock);
	}
	index_close(index, NoLock);
}

/* The object access hook: ALTER of a relation */
static void
perm_object_access(ObjectAccessType access, Oid classId, Oid objectId,
				   int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access == OAT_POST_ALTER && classId == RelationRelationId &&
		subId == 0)
		check_radius_change(objectId);
}

/* Install the hook; called from _PG_init */
void
PermRadiusInit(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = perm_object_access;
}
