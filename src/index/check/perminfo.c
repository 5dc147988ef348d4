/*-------------------------------------------------------------------------
 *
 * perminfo.c
 *		simhash_perm: index inspection.  simhash_perm_info(), which walks
 *		every table's leaf level and shows what the layout does with the
 *		data, and the opening of an index for it and for
 *		simhash_perm_check() (permcheck.c), with the caller's privileges
 *		checked first.
 *
 * IDENTIFICATION
 *	  src/index/check/perminfo.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "index/perm.h"
#include "index/tree/permleaf.h"

PG_FUNCTION_INFO_V1(simhash_perm_info);

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
 * An index built before simhash 1.6 has no store: it does not list the
 * rows whose code is NULL, and on bit(n) codes keeps no code store for the
 * far rows.  The planner leaves it out of the scans that need them
 * (src/planner/scanpaths.c); the inspection functions say what REINDEX
 * brings.
 */
void
PermNoteWhatReindexBrings(Relation index)
{
	PermState  *state = PermGetState(index);

	if (state->has_store)
		return;
	ereport(NOTICE,
			(errmsg("index \"%s\" was built before simhash 1.6",
					RelationGetRelationName(index)),
			 errdetail(state->layout.width > 0 && state->layout.tenants == 0 ?
					   "It does not list the rows whose code is NULL and keeps no code store: the planner leaves it out of nearest-neighbour scans." :
					   "It does not list the rows whose code is NULL: the planner leaves it out of ordered scans without a condition on the code."),
			 errhint("REINDEX the index.")));
}

/*
 * simhash_perm_info(): what the layout does with the data
 */

/* Statistics of one table, gathered by walking its leaves */
typedef struct PermTableStats
{
	int64		entries;
	int64		leaf_pages;
	int64		largest_bucket;
	int64		buckets;
} PermTableStats;

/* Walk a table's leaf level left to right, counting entries and buckets */
static void
table_stats(Relation index, int table, int prefix_bits, PermTableStats *st)
{
	PermState  *state = PermGetState(index);
	uint64		bucket = 0;
	int64		run = 0;
	bool		any = false;
	int			shift = 64 - prefix_bits;
	KeyTid    *entries = palloc(PERM_LEAF_MAX_ENTRIES * sizeof(KeyTid));
	Buffer		buf;
	int64		steps = 0;

	memset(st, 0, sizeof(*st));
	buf = PermLeftmostPage(state, table, 0);
	for (;;)
	{
		Page		page = BufferGetPage(buf);
		int			i,
					n;

		st->leaf_pages++;
		n = PermLeafSortedEntries(page, entries);
		for (i = 0; i < n; i++)
		{
			uint64		b = shift >= 64 ? 0 : entries[i].key >> shift;

			if (!any || b != bucket)
			{
				st->buckets++;
				run = 0;
				bucket = b;
				any = true;
			}
			run++;
			st->largest_bucket = Max(st->largest_bucket, run);
			st->entries++;
		}
		if (PermPageIsRightmost(page))
			break;
		buf = PermStepRight(state, buf, BUFFER_LOCK_SHARE, &steps);
	}
	UnlockReleaseBuffer(buf);
	pfree(entries);
}

/*
 * simhash_perm_info(index): one row per table with its prefix, tree height,
 * leaf pages, entries, number of non-empty prefix buckets and the largest
 * bucket, plus the index-wide settings, for users tuning the layout.
 */
Datum
simhash_perm_info(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	index;
	PermLayout *layout;
	PermTable  *tables;
	int			ntables;
	int			t;
	BlockNumber nblocks;

	InitMaterializedSRF(fcinfo, 0);

	index = PermOpenIndexForInspection(indexoid, AccessShareLock, NULL);
	PermNoteWhatReindexBrings(index);

	layout = &PermGetState(index)->layout;
	tables = palloc(PERM_MAX_TABLES * sizeof(PermTable));
	PermMetaSnapshot(index, tables, &ntables);
	nblocks = RelationGetNumberOfBlocks(index);

	for (t = 0; t < ntables; t++)
	{
		Datum		values[11];
		bool		nulls[11] = {0};
		PermTableStats st;
		StringInfoData bits;
		int			i;

		initStringInfo(&bits);
		if (layout->width > 0)
		{
			/*
			 * bit(n) codes: a bucket is a substring (the key above its
			 * tail); its bits are the code's positions t, t + m, ... (0 =
			 * leftmost), shown as first:step:last
			 */
			table_stats(index, t, 64 - PermWideTailBits(layout, t), &st);
			appendStringInfo(&bits, "%d:%d:%d", t, layout->ntables,
							 t + (layout->prefix_bits[t] - 1) * layout->ntables);
		}
		else
		{
			table_stats(index, t, layout->prefix_bits[t], &st);
			/* the fingerprint bits (0 = least significant) making the prefix */
			for (i = 0; i < layout->prefix_bits[t]; i++)
				appendStringInfo(&bits, "%s%d", i ? "," : "", layout->bits[t][i]);
		}
		values[0] = Int32GetDatum(t);
		values[1] = Int32GetDatum(layout->max_distance);	/* radius */
		values[2] = Int32GetDatum(layout->prefix_bits[t]);
		values[3] = CStringGetTextDatum(bits.data);
		values[4] = Int32GetDatum(tables[t].root_level + 1);
		values[5] = Int64GetDatum(st.leaf_pages);
		values[6] = Int64GetDatum(st.entries);
		values[7] = Int64GetDatum(st.buckets);
		values[8] = Int64GetDatum(st.largest_bucket);
		values[9] = Int32GetDatum(layout->blocks);
		values[10] = Int64GetDatum((int64) nblocks);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	/* the table's lock is kept to the end of the transaction */
	index_close(index, AccessShareLock);
	return (Datum) 0;
}
