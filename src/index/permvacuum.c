/*-------------------------------------------------------------------------
 *
 * permvacuum.c
 *		simhash_perm: VACUUM (ambulkdelete, amvacuumcleanup).
 *
 * Bulk delete reads every page in physical order and compacts the leaves
 * that hold dead entries, one generic WAL record per changed page.  Scans
 * never keep a position inside a page (README.perm, "Locking"), but an
 * exclusion constraint's check keeps the leaves of its matches pinned
 * while the executor reads their rows under a dirty snapshot; so bulk
 * delete takes a cleanup lock on every page, as nbtree does, and cannot
 * finish, nor the heap reuse a TID it removes, while such a check runs
 * ("Exclusion constraints").  Pages are not deleted; the room freed in a
 * leaf is reused by later inserts into its key range.
 *
 * A leaf that splits while VACUUM runs moves entries to a new page at the
 * end of the relation, possibly entries VACUUM has not looked at yet, so
 * the pass continues until the relation stops growing, and reads its
 * length under the extension lock (see vacuum_scan).
 *
 * Counts (tuples removed, index tuples) are those of table 0, i.e. rows:
 * every table holds each row once.  The code store of an index on bit(n)
 * codes (permstore.c) is vacuumed after the tables, along its chains: the
 * physical pass passes its pages by.
 *
 * Skew.  The bit layout is chosen when the index is built, from the rows
 * then in the table (permlayout.c).  An index built on an empty table, or
 * on a few rows, gets the layout of uniform fingerprints; if the rows that
 * come later have near-constant bits in one table's prefix, most of them
 * land under one prefix of that table, and every search (and every insert's
 * constraint check) reads them all.  VACUUM and ANALYZE look for that, at
 * the cost of reading the level above the leaves: its keys are the leaves'
 * low keys, and a run of leaves whose low keys share a prefix is a bucket
 * at least that many leaves long.  A bucket of PERM_SKEW_MIN_LEAVES leaves
 * or more that holds a twentieth of its table draws a WARNING, with the
 * hint to REINDEX, which chooses the layout from the rows it then holds.
 * A run of one repeated fingerprint is not skew (no layout separates
 * identical rows) and is left alone.
 *
 * IDENTIFICATION
 *	  src/index/permvacuum.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/generic_xlog.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "index/perm.h"
#include "index/tree/permleaf.h"

/* Smallest bucket, in leaves, that VACUUM reports as skew */
#define PERM_SKEW_MIN_LEAVES	8

/* The largest bucket of one table, as the level above its leaves shows it */
typedef struct PermSkew
{
	int64		leaves;			/* leaves of the table */
	int64		bucket_leaves;	/* leaves wholly inside its largest bucket */
} PermSkew;

/*
 * Measure the largest prefix bucket of one table from its leaves' low
 * keys: the keys of the level above the leaves, read left to right.  In a
 * run of k leaves whose low keys share a prefix, the first k - 1 hold that
 * prefix alone.
 */
static void
measure_skew(Relation index, int table, int prefix_bits, PermSkew *skew)
{
	PermState  *state = PermGetState(index);
	Buffer		buf = PermLeftmostPage(state, table, 1);
	int64		steps = 0;
	int64		run = 0;
	bool		run_one_key = true;
	KeyTid		first = {0};
	uint64		prev = 0;

	skew->leaves = 0;
	skew->bucket_leaves = 0;
	for (;;)
	{
		Page		page = BufferGetPage(buf);
		int			n = PermPageGetOpaque(page)->nentries;
		int			i;

		for (i = 0; i < n; i++)
		{
			KeyTid		k;
			BlockNumber child;
			uint64		prefix;

			PermReadInternalEntry(page, i, &k, &child);
			prefix = k.key >> (64 - prefix_bits);
			if (skew->leaves > 0 && prefix == prev)
			{
				run++;
				run_one_key &= (k.key == first.key);
			}
			else
			{
				run = 1;
				run_one_key = true;
				first = k;
			}
			prev = prefix;
			skew->leaves++;
			if (!run_one_key)
				skew->bucket_leaves = Max(skew->bucket_leaves, run - 1);
		}
		if (PermPageIsRightmost(page))
			break;
		buf = PermStepRight(state, buf, BUFFER_LOCK_SHARE, &steps);
	}
	UnlockReleaseBuffer(buf);
}

/*
 * Warn when one table of the index keeps a large share of its rows under
 * one prefix (see the head of this file)
 */
static void
report_skew(Relation index)
{
	PermState  *state = PermGetState(index);
	PermSkew	worst = {0};
	int			worst_table = -1;
	int			t;

	/*
	 * bit(n) codes: a substring is the whole key and its layout never
	 * changes, so a REINDEX would not help (permwidelayout.c)
	 */
	if (state->layout.width > 0)
		return;

	for (t = 0; t < state->layout.ntables; t++)
	{
		PermSkew	skew;
		int			level;

		(void) PermGetRoot(state, t, 1, &level);
		if (level < 1)
			continue;			/* a table of one leaf */
		measure_skew(index, t, state->layout.prefix_bits[t], &skew);
		if (skew.bucket_leaves >= PERM_SKEW_MIN_LEAVES &&
			skew.bucket_leaves * 20 >= skew.leaves &&
			skew.bucket_leaves * worst.leaves >= worst.bucket_leaves * skew.leaves)
		{
			worst = skew;
			worst_table = t;
		}
	}
	if (worst_table < 0)
		return;
	ereport(WARNING,
			(errcode(ERRCODE_WARNING),
			 errmsg("index \"%s\" keeps %lld of the %lld leaves of its table %d under one prefix",
					RelationGetRelationName(index), (long long) worst.bucket_leaves,
					(long long) worst.leaves, worst_table),
			 errdetail("Its bit layout was chosen when it was built, from the rows then in the table; the rows since have nearly constant bits in that table's prefix, so every search there reads those rows one by one."),
			 errhint("REINDEX INDEX %s chooses the layout from the rows it holds now.",
					 quote_identifier(RelationGetRelationName(index)))));
}

/* Remove the dead entries of one leaf; count what stays and what goes */
static void
vacuum_leaf(Relation index, Buffer buf, IndexBulkDeleteCallback callback,
			void *callback_state, IndexBulkDeleteResult *stats)
{
	Page		page = BufferGetPage(buf);
	PermPageOpaque opaque = PermPageGetOpaque(page);
	bool		rows = (opaque->table == 0);
	int			n = opaque->nentries;
	int			i,
				kept,
				removed;
	GenericXLogState *xlog;

	/* most pages have nothing to remove: look before starting a record */
	for (i = 0; i < n; i++)
	{
		KeyTid		e;

		PermReadLeafEntry(page, i, &e);
		if (callback(&e.tid, callback_state))
			break;
	}
	if (i == n)
	{
		if (rows)
			stats->num_index_tuples += n;
		return;
	}

	xlog = GenericXLogStart(index);
	removed = PermLeafRemove(GenericXLogRegisterBuffer(xlog, buf, 0),
							 callback, callback_state, &kept);
	GenericXLogFinish(xlog);
	if (rows)
	{
		stats->tuples_removed += removed;
		stats->num_index_tuples += kept;
	}
}

/*
 * Visit every page from `from` to the current end of the relation, until
 * it stops growing; with a callback, remove dead entries, else only count.
 */
static void
vacuum_scan(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
			IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	PermState  *state = PermGetState(index);
	BlockNumber blkno;
	uint16		layout_flag;
	BlockNumber nblocks;
	SimhashBlockRange range;

	/*
	 * Only the current layout's pages: those before its first block, and
	 * those of the other generation's parity (a change of layout that a
	 * crash cut short), belong to no tree (permgrow.c)
	 */
	(void) PermLayoutBlocks(index, &blkno, &layout_flag);

	stats->num_index_tuples = 0;
	for (;;)
	{
		/*
		 * Read the length under the extension lock: a page added by a split
		 * is then already locked by the splitter, so we wait for it to be
		 * filled instead of passing it by as new and empty.
		 */
		if (!RELATION_IS_LOCAL(index))
			LockRelationForExtension(index, ExclusiveLock);
		nblocks = RelationGetNumberOfBlocks(index);
		if (!RELATION_IS_LOCAL(index))
			UnlockRelationForExtension(index, ExclusiveLock);
		if (blkno >= nblocks)
			break;

		/*
		 * The pages up to that length, in order: on 17 and later through a
		 * read stream, which reads ahead (src/compat.h)
		 */
		SimhashBlockRangeBegin(&range, index, info->strategy, blkno, nblocks);
		for (; blkno < nblocks; blkno++)
		{
			Buffer		buf;
			Page		page;

			SimhashVacuumDelayPoint();
			buf = SimhashBlockRangeNext(&range);
			Assert(BufferIsValid(buf) && BufferGetBlockNumber(buf) == blkno);
			if (callback)
				LockBufferForCleanup(buf);
			else
				LockBuffer(buf, BUFFER_LOCK_SHARE);
			page = BufferGetPage(buf);

			/*
			 * A page added by a split that never got initialised (a crash
			 * between extending the relation and the split's WAL record) is
			 * new; any other page must be a sound page of a table.
			 */
			if (PageIsNew(page) || PermPageIsStore(index, buf))
			{
				/* the code store is vacuumed along its chains */
				UnlockReleaseBuffer(buf);
				continue;
			}
			PermCheckPage(state, buf, -1, -1);
			if ((PermPageGetOpaque(page)->flags & PERM_ODD_LAYOUT) != layout_flag)
			{
				UnlockReleaseBuffer(buf);
				continue;
			}
			if (PermPageIsLeaf(page))
			{
				if (callback)
					vacuum_leaf(index, buf, callback, callback_state, stats);
				else if (PermPageGetOpaque(page)->table == 0)
					stats->num_index_tuples += PermPageGetOpaque(page)->nentries;
			}
			UnlockReleaseBuffer(buf);
		}
		Assert(!BufferIsValid(SimhashBlockRangeNext(&range)));
		SimhashBlockRangeEnd(&range);
	}
	stats->num_pages = nblocks;
	stats->estimated_count = false;
}

/* ambulkdelete */
IndexBulkDeleteResult *
permbulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
			   IndexBulkDeleteCallback callback, void *callback_state)
{
	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));
	vacuum_scan(info, stats, callback, callback_state);
	PermStoreVacuum(info->index, info->strategy, callback, callback_state);
	return stats;
}

/* amvacuumcleanup: count the rows if no bulk delete ran */
IndexBulkDeleteResult *
permvacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	report_skew(info->index);
	if (info->analyze_only)
		return stats;
	if (stats == NULL)
	{
		stats = palloc0(sizeof(IndexBulkDeleteResult));
		vacuum_scan(info, stats, NULL, NULL);
	}
	return stats;
}
