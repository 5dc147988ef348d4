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
 * every table holds each row once.
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
#include "utils/rel.h"

#include "perm.h"

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
		PermKey		e;

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
	BlockNumber blkno = PERM_METAPAGE_BLKNO + 1;
	BlockNumber nblocks;
	SimhashBlockRange range;

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
			if (PageIsNew(page))
			{
				UnlockReleaseBuffer(buf);
				continue;
			}
			PermCheckPage(index, buf, -1, -1);
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
	return stats;
}

/* amvacuumcleanup: count the rows if no bulk delete ran */
IndexBulkDeleteResult *
permvacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	if (info->analyze_only)
		return stats;
	if (stats == NULL)
	{
		stats = palloc0(sizeof(IndexBulkDeleteResult));
		vacuum_scan(info, stats, NULL, NULL);
	}
	return stats;
}
