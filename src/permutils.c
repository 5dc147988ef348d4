/*-------------------------------------------------------------------------
 *
 * permutils.c
 *		simhash_perm: the per-index state kept in rd_amcache, opening an
 *		index for the inspection functions, running a table's index
 *		expressions as its owner, and small helpers.
 *
 * IDENTIFICATION
 *	  src/permutils.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "perm.h"

/*
 * Index-wide state, read from the metapage once and kept in rd_amcache
 * (allocated in rd_indexcxt, so it goes when the relcache entry does).
 */
PermState *
PermGetState(Relation index)
{
	PermState  *state = (PermState *) index->rd_amcache;
	Buffer		buf;
	Page		page;
	PermMetaPage meta;
	int			t;

	if (state != NULL)
		return state;

	buf = PermReadMetaPage(index, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	meta = PermPageGetMeta(page);

	state = MemoryContextAllocZero(index->rd_indexcxt, sizeof(PermState));
	state->nblocks = RelationGetNumberOfBlocks(index);
	state->layout.max_distance = meta->max_distance;
	state->layout.blocks = meta->blocks;
	state->layout.ntables = meta->ntables;
	memcpy(state->layout.block_of_bit, meta->block_of_bit, 64);
	state->perm = MemoryContextAlloc(index->rd_indexcxt,
									 meta->ntables * sizeof(PermPermutation));
	for (t = 0; t < meta->ntables; t++)
	{
		state->layout.prefix_bits[t] = meta->tables[t].prefix_bits;
		memcpy(state->layout.bits[t], meta->tables[t].bits, 64);
		state->root[t] = meta->tables[t].root;
		state->root_level[t] = meta->tables[t].root_level;
	}
	UnlockReleaseBuffer(buf);
	for (t = 0; t < state->layout.ntables; t++)
		PermMakePermutation(state->layout.bits[t], &state->perm[t]);

	index->rd_amcache = state;
	return state;
}

/* PermCompareKeys for qsort */
int
PermCompareKeysQsort(const void *a, const void *b)
{
	return PermCompareKeys((const PermKey *) a, (const PermKey *) b);
}

/*
 * Sort unsigned 64-bit keys (prefixes, permuted fingerprints) ascending.
 * The comparison is inlined: a nearest-neighbour search sorts the hundreds
 * of prefixes of each ring, and qsort's calls through a pointer were a
 * twentieth of its time.
 */
#define ST_SORT sort_uint64
#define ST_ELEMENT_TYPE uint64
#define ST_COMPARE(a, b) ((*(a) > *(b)) - (*(a) < *(b)))
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

void
PermSortUint64(uint64 *keys, size_t n)
{
	sort_uint64(keys, n);
}

/*
 * Open a simhash_perm index for simhash_perm_info() or simhash_perm_check():
 * its table first, then the index, both in lockmode (the order amcheck and
 * every other user take them in).  The caller must be allowed to read the
 * table, since the index shows what its rows hold.  If heap is NULL the
 * table is closed again, keeping its lock.
 */
Relation
PermOpenIndexForInspection(Oid indexoid, LOCKMODE lockmode, Relation *heap)
{
	Oid			heapoid = IndexGetRelation(indexoid, true);
	Relation	heaprel;
	Relation	index;
	AclResult	aclresult;

	if (!OidIsValid(heapoid))
	{
		if (get_rel_relkind(indexoid) == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("index with OID %u does not exist", indexoid)));
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an index", get_rel_name(indexoid))));
	}
	/* before taking any lock: one who may not read the table may not block it */
	aclresult = pg_class_aclcheck(heapoid, GetUserId(), ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, get_relkind_objtype(get_rel_relkind(heapoid)),
					   get_rel_name(heapoid));
	heaprel = table_open(heapoid, lockmode);
	index = index_open(indexoid, lockmode);
	if (IndexGetRelation(indexoid, false) != heapoid)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("index \"%s\" was dropped or changed meanwhile",
						RelationGetRelationName(index))));
	if (index->rd_rel->relam != get_index_am_oid("simhash_perm", false))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a simhash_perm index",
						RelationGetRelationName(index))));
	if (index->rd_rel->relkind != RELKIND_INDEX)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a partitioned index", RelationGetRelationName(index)),
				 errhint("Inspect the indexes of its partitions.")));
	if (heap)
		*heap = heaprel;
	else
		table_close(heaprel, NoLock);
	return index;
}

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
}

/* Back to the caller's user id after PermBecomeTableOwner */
void
PermRestoreUser(PermSavedUser *saved)
{
	AtEOXact_GUC(false, saved->gucnestlevel);
	SetUserIdAndSecContext(saved->userid, saved->sec_context);
}
