/*-------------------------------------------------------------------------
 *
 * permbuild.c
 *		simhash_perm: CREATE INDEX (ambuild) and the init fork of unlogged
 *		indexes (ambuildempty).
 *
 * The build never inserts row by row.  It collects every (fingerprint,
 * TID) while scanning the table, measures how often each bit is set (to
 * spread the bits over the blocks, see permlayout.c), then for each table
 * sorts the permuted keys and writes the leaves left to right as the sort
 * hands them out, then each internal level from the one below, until a
 * level has one page: the table's root.  Pages go through shared buffers
 * without WAL and are logged at the end with log_newpage_range().
 *
 * Memory stays within maintenance_work_mem: half of it keeps the collected
 * rows (16 bytes each; beyond that they go to a temporary file), half sorts
 * one table (in runs written to temporary files and merged beyond that),
 * see runsort.c.  What remains is a window of one leaf's entries and one
 * downlink per page of the level being built.  Leaves are filled to
 * PERM_BUILD_FILL_PERCENT in their compact format.
 *
 * IDENTIFICATION
 *	  src/index/permbuild.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "commands/progress.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "fingerprint.h"
#include "perm.h"

/* Leaves and internal pages are written this full, leaving room to grow */
#define PERM_BUILD_FILL_PERCENT		90

/* Fingerprints are counted bit by bit this many at a time */
#define PERM_BUILD_COUNT_BATCH		1024

typedef struct PermBuildState
{
	RecStore *rows;			/* (fingerprint, TID) of every row */
	int64		n;
	int64		budget;			/* maintenance_work_mem, in bytes */
	SimhashVoter counter;		/* how often each bit is set */
	uint64		batch[PERM_BUILD_COUNT_BATCH];
	int			nbatch;
	MemoryContext cxt;
} PermBuildState;

/* Callback of table_index_build_scan: collect one row */
static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *arg)
{
	PermBuildState *bs = (PermBuildState *) arg;
	PermKey		rec;

	if (isnull[0])
		return;
	rec.key = (uint64) DatumGetInt64(values[0]);
	rec.tid = *tid;
	RecStoreAdd(bs->rows, &rec);
	bs->n++;
	bs->batch[bs->nbatch++] = rec.key;
	if (bs->nbatch == PERM_BUILD_COUNT_BATCH)
	{
		SimhashVoterAddBatch(&bs->counter, bs->batch, bs->nbatch);
		bs->nbatch = 0;
	}
}

/*
 * Write one internal level of a table: n downlinks spread evenly over as
 * few pages as the fill factor allows.  Returns the number of pages and, in
 * firsts/blocks, each page's first key and block.
 */
static int
write_internal_level(Relation index, ForkNumber fork, int table, int level,
					 const char *entries, int64 n, PermKey **firsts,
					 BlockNumber **blocks)
{
	int			per_page = Max(2, PERM_INTERNAL_CAPACITY * PERM_BUILD_FILL_PERCENT / 100);
	int64		npages = Max(1, (n + per_page - 1) / per_page);
	Buffer		prev = InvalidBuffer;
	int64		p;

	*firsts = palloc_extended(npages * sizeof(PermKey), MCXT_ALLOC_HUGE);
	*blocks = palloc_extended(npages * sizeof(BlockNumber), MCXT_ALLOC_HUGE);

	for (p = 0; p < npages; p++)
	{
		int64		start = n * p / npages;
		int64		end = n * (p + 1) / npages;
		const char *first = entries + start * PERM_INTERNAL_ENTRY_SIZE;
		Buffer		buf = PermNewBuffer(index, fork);
		Page		page = BufferGetPage(buf);
		PermPageOpaque opaque;

		PermInitPage(page, PERM_INTERNAL, table, level);
		opaque = PermPageGetOpaque(page);
		memcpy(PermPageEntries(page), first, (end - start) * PERM_INTERNAL_ENTRY_SIZE);
		opaque->nentries = opaque->nsorted = end - start;
		((PageHeader) page)->pd_lower += (end - start) * PERM_INTERNAL_ENTRY_SIZE;
		PermReadInternalEntry(page, 0, &(*firsts)[p], &(*blocks)[p]);
		(*blocks)[p] = BufferGetBlockNumber(buf);

		if (BufferIsValid(prev))
		{
			PermPageOpaque popaque = PermPageGetOpaque(BufferGetPage(prev));

			popaque->rightlink = (*blocks)[p];
			popaque->hikey = (*firsts)[p].key;
			popaque->hikey_tid = (*firsts)[p].tid;
			MarkBufferDirty(prev);
			UnlockReleaseBuffer(prev);
		}
		prev = buf;
	}
	if (npages == 1)
		PermPageGetOpaque(BufferGetPage(prev))->flags |= PERM_ROOT;
	MarkBufferDirty(prev);
	UnlockReleaseBuffer(prev);
	return (int) npages;
}

/* Refill a window of sorted entries from the sort; returns its length */
static int
fill_window(RunSort *rs, PermKey *win, int n, int size)
{
	while (n < size && RunSortNext(rs, &win[n]))
		n++;
	return n;
}

/*
 * Write a table's leaves from its sorted entries, left to right, as the
 * sort hands them out.  A leaf takes entries while they fit, at the fill
 * factor, in the compact format that its key range and TIDs allow
 * (permleaf.c); its range runs from its first key (0 for the leftmost) to
 * the next leaf's first key.  The entries are read through a window one
 * longer than the most a leaf can hold, so the next leaf's first key is
 * always at hand.  Returns the number of leaves, with their first keys and
 * blocks.
 */
static int64
write_leaves(Relation index, ForkNumber fork, int table, RunSort *rs,
			 PermKey **firsts, BlockNumber **blocks)
{
	size_t		target = PERM_PAGE_SPACE * PERM_BUILD_FILL_PERCENT / 100;
	int			wsize = PERM_LEAF_MAX_ENTRIES + 1;
	PermKey    *win = palloc(wsize * sizeof(PermKey));
	int			n = fill_window(rs, win, 0, wsize);
	int64		cap = 1024;
	int64		npages = 0;
	Buffer		prev = InvalidBuffer;

	*firsts = palloc_extended(cap * sizeof(PermKey), MCXT_ALLOC_HUGE);
	*blocks = palloc_extended(cap * sizeof(BlockNumber), MCXT_ALLOC_HUGE);

	do
	{
		uint64		lo = (npages == 0) ? 0 : win[0].key;
		BlockNumber maxblock = 0;
		OffsetNumber maxoff = 0;
		int			j = 0;
		Buffer		buf;
		Page		page;
		PermPageOpaque opaque;
		bool		ok;

		/* take entries [0, j) of the window while they fit */
		while (j < n)
		{
			uint64		hi = (j + 1 < n) ? win[j + 1].key : PG_UINT64_MAX;
			BlockNumber b = Max(maxblock, ItemPointerGetBlockNumberNoCheck(&win[j].tid));
			OffsetNumber o = Max(maxoff, ItemPointerGetOffsetNumberNoCheck(&win[j].tid));

			if (j > 0 && (size_t) (j + 1) * PermLeafFormatSize(lo, hi, b, o) > target)
				break;
			maxblock = b;
			maxoff = o;
			j++;
		}

		if (npages == cap)
		{
			cap *= 2;
			*firsts = repalloc_huge(*firsts, cap * sizeof(PermKey));
			*blocks = repalloc_huge(*blocks, cap * sizeof(BlockNumber));
		}

		buf = PermNewBuffer(index, fork);
		page = BufferGetPage(buf);
		PermInitPage(page, PERM_LEAF, table, 0);
		opaque = PermPageGetOpaque(page);
		opaque->lokey = lo;
		if (j < n)
		{
			/* not the rightmost: the real right-link is set below */
			opaque->rightlink = BufferGetBlockNumber(buf) + 1;
			opaque->hikey = win[j].key;
			opaque->hikey_tid = win[j].tid;
		}
		ok = PermLeafSetEntries(page, win, j, j);
		Assert(ok);
		(void) ok;

		/* the leftmost leaf's downlink stands for minus infinity */
		(*firsts)[npages] = npages == 0 ? PermMinKey : win[0];
		(*blocks)[npages] = BufferGetBlockNumber(buf);

		if (BufferIsValid(prev))
		{
			PermPageGetOpaque(BufferGetPage(prev))->rightlink = (*blocks)[npages];
			MarkBufferDirty(prev);
			UnlockReleaseBuffer(prev);
		}
		prev = buf;
		npages++;

		/* slide the window past the entries written, and refill it */
		memmove(win, win + j, (n - j) * sizeof(PermKey));
		n = fill_window(rs, win, n - j, wsize);
	} while (n > 0);

	if (npages == 1)
		PermPageGetOpaque(BufferGetPage(prev))->flags |= PERM_ROOT;
	MarkBufferDirty(prev);
	UnlockReleaseBuffer(prev);
	pfree(win);
	return npages;
}

/*
 * Write a table's tree from its sorted entries, bottom up; returns the root
 * and sets *root_level.
 */
static BlockNumber
write_table(Relation index, ForkNumber fork, int table, RunSort *rs,
			uint16 *root_level)
{
	PermKey    *firsts;
	BlockNumber *blocks;
	int			level = 0;
	int64		npages = write_leaves(index, fork, table, rs, &firsts, &blocks);

	while (npages > 1)
	{
		char	   *downlinks = palloc_extended(npages * PERM_INTERNAL_ENTRY_SIZE,
												MCXT_ALLOC_HUGE);
		int64		i;

		for (i = 0; i < npages; i++)
		{
			PermWriteInternalEntry(downlinks + i * PERM_INTERNAL_ENTRY_SIZE,
								   &firsts[i], blocks[i]);
		}
		pfree(firsts);
		pfree(blocks);
		level++;
		npages = write_internal_level(index, fork, table, level, downlinks, npages,
									  &firsts, &blocks);
		pfree(downlinks);
	}
	*root_level = level;
	return blocks[0];
}

/*
 * The layout for the collected rows: bits are spread over the blocks by how
 * often each is set (permlayout.c), counted eight bits at a time.
 */
static void
choose_layout(PermBuildState *bs, int max_distance, int blocks,
			  PermLayout *layout)
{
	SimhashVoterAddBatch(&bs->counter, bs->batch, bs->nbatch);
	bs->nbatch = 0;
	PermChooseLayoutFromVotes(max_distance, blocks, &bs->counter, bs->n, layout);
}

/* Write the metapage, block 0, before any table; roots are filled in later */
static void
write_metapage(Relation index, ForkNumber fork, const PermLayout *layout)
{
	Buffer		metabuf = PermNewBuffer(index, fork);
	Page		metapage = BufferGetPage(metabuf);
	PermMetaPage meta;

	Assert(BufferGetBlockNumber(metabuf) == PERM_METAPAGE_BLKNO);
	PermInitPage(metapage, PERM_META, 0, 0);
	meta = PermPageGetMeta(metapage);
	meta->magic = PERM_MAGIC;
	meta->version = PERM_VERSION;
	meta->max_distance = layout->max_distance;
	meta->blocks = layout->blocks;
	meta->ntables = layout->ntables;
	meta->algorithm = 1;
	memcpy(meta->block_of_bit, layout->block_of_bit, 64);
	((PageHeader) metapage)->pd_lower =
		((char *) &meta->tables[layout->ntables] - (char *) metapage);
	MarkBufferDirty(metabuf);
	UnlockReleaseBuffer(metabuf);
}

/*
 * Write the whole index from the collected rows: metapage, then each table.
 * Used for CREATE INDEX (MAIN fork) and for the empty init fork.
 */
static void
write_index(Relation index, ForkNumber fork, PermBuildState *bs)
{
	int			max_distance,
				blocks;
	PermLayout	layout;
	Buffer		metabuf;
	PermMetaPage meta;
	PermPermutation *perm;
	int			t;
	int64		i;

	PermLayoutOptions(index, &max_distance, &blocks);

	choose_layout(bs, max_distance, blocks, &layout);
	write_metapage(index, fork, &layout);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL,
								 bs->n * layout.ntables);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, 0);

	perm = palloc(sizeof(PermPermutation));
	for (t = 0; t < layout.ntables; t++)
	{
		BlockNumber root;
		uint16		root_level;
		RunSort *rs;
		PermKey		rec;

		/* sort the table's permuted keys within half the budget */
		pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, PERM_PHASE_SORT);
		PermMakePermutation(layout.bits[t], perm);
		rs = RunSortBegin(bs->budget / 2, bs->n);
		i = 0;
		if (bs->rows)
		{
			RecStoreRewind(bs->rows);
			while (RecStoreNext(bs->rows, &rec))
			{
				if ((++i & 0xFFFF) == 0)
					CHECK_FOR_INTERRUPTS();
				rec.key = PermPermute(perm, rec.key);
				RunSortPut(rs, &rec);
			}
		}
		RunSortFinish(rs);

		/* and write it as the sort hands the keys out */
		pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, PERM_PHASE_WRITE);
		root = write_table(index, fork, t, rs, &root_level);
		RunSortEnd(rs);

		metabuf = ReadBufferExtended(index, fork, PERM_METAPAGE_BLKNO, RBM_NORMAL, NULL);
		LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
		meta = PermPageGetMeta(BufferGetPage(metabuf));
		memcpy(meta->tables[t].bits, layout.bits[t], 64);
		meta->tables[t].prefix_bits = layout.prefix_bits[t];
		meta->tables[t].root = root;
		meta->tables[t].root_level = root_level;
		MarkBufferDirty(metabuf);
		UnlockReleaseBuffer(metabuf);

		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE,
									 bs->n * (t + 1));
	}
	pfree(perm);

	/* WAL: every page of the new fork, once (always for the init fork) */
	if (RelationNeedsWAL(index) || fork == INIT_FORKNUM)
		log_newpage_range(index, fork, 0,
						  RelationGetNumberOfBlocksInFork(index, fork), true);
}

/* ambuild: CREATE INDEX, REINDEX */
IndexBuildResult *
permbuild(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	PermBuildState bs;
	double		reltuples;
	MemoryContext oldcxt;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data",
			 RelationGetRelationName(index));

	memset(&bs, 0, sizeof(bs));
	bs.cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash_perm build",
								   ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(bs.cxt);
	bs.budget = (int64) maintenance_work_mem * 1024;
	bs.rows = RecStoreBegin(bs.budget / 2);
	SimhashVoterInit(&bs.counter);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, PERM_PHASE_SCAN);
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   build_callback, &bs, NULL);

	write_index(index, MAIN_FORKNUM, &bs);
	RecStoreEnd(bs.rows);

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(bs.cxt);

	/*
	 * An exclusion constraint's index rebuilt without PostgreSQL's check
	 * (VACUUM FULL, CLUSTER: reindex_index drops the exclusion operators
	 * from indexInfo) checks its rows against its radius itself, which the
	 * reloption may have changed since the rows were last checked
	 * (permradius.c).
	 */
	if (indexInfo->ii_ExclusionOps == NULL && index->rd_index != NULL &&
		index->rd_index->indisexclusion)
		PermCheckRebuiltConstraint(heap, index);

	result = palloc(sizeof(IndexBuildResult));
	result->heap_tuples = reltuples;
	result->index_tuples = bs.n;
	return result;
}

/* ambuildempty: the init fork of an index on an unlogged table */
void
permbuildempty(Relation index)
{
	PermBuildState bs;

	memset(&bs, 0, sizeof(bs));
	bs.budget = (int64) maintenance_work_mem * 1024;
	SimhashVoterInit(&bs.counter);
	write_index(index, INIT_FORKNUM, &bs);
}
