/*-------------------------------------------------------------------------
 *
 * permbuild.c
 *		simhash_perm: CREATE INDEX (ambuild) and the init fork of unlogged
 *		indexes (ambuildempty).
 *
 * The build never inserts row by row.  It collects every (fingerprint,
 * TID) in memory while scanning the table, measures how often each bit is
 * set (to spread the bits over the blocks, see permlayout.c), then for
 * each table sorts the permuted keys and writes the leaves left to right,
 * then each internal level from the one below, until a level has one page:
 * the table's root.  Pages go through shared buffers without WAL and are
 * logged at the end with log_newpage_range().
 *
 * Memory: 14 bytes per row for the collected fingerprints plus 16 bytes per
 * row for the table being sorted, allocated outside maintenance_work_mem.
 * Leaves are filled to PERM_BUILD_FILL_PERCENT in their compact format.
 *
 * IDENTIFICATION
 *	  src/permbuild.c
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

#define ST_SORT sort_build_entries
#define ST_ELEMENT_TYPE PermKey
#define ST_COMPARE(a, b) PermCompareKeys(a, b)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

typedef struct PermBuildState
{
	uint64	   *fps;
	ItemPointerData *tids;
	int64		n;
	int64		capacity;
	MemoryContext cxt;
} PermBuildState;

/* Callback of table_index_build_scan: collect one row */
static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *arg)
{
	PermBuildState *bs = (PermBuildState *) arg;

	if (isnull[0])
		return;
	if (bs->n == bs->capacity)
	{
		bs->capacity *= 2;
		bs->fps = repalloc_huge(bs->fps, bs->capacity * sizeof(uint64));
		bs->tids = repalloc_huge(bs->tids, bs->capacity * sizeof(ItemPointerData));
	}
	bs->fps[bs->n] = (uint64) DatumGetInt64(values[0]);
	bs->tids[bs->n] = *tid;
	bs->n++;
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

/*
 * Write a table's leaves from its sorted entries, left to right.  A leaf
 * takes entries while they fit, at the fill factor, in the compact format
 * that its key range and TIDs allow (permleaf.c); its range runs from its
 * first key (0 for the leftmost) to the next leaf's first key.  Returns the
 * number of leaves, with their first keys and blocks.
 */
static int64
write_leaves(Relation index, ForkNumber fork, int table, const PermKey *keys,
			 int64 n, PermKey **firsts, BlockNumber **blocks)
{
	size_t		target = PERM_PAGE_SPACE * PERM_BUILD_FILL_PERCENT / 100;
	int64		cap = 1024;
	int64		npages = 0;
	int64		i = 0;
	Buffer		prev = InvalidBuffer;

	*firsts = palloc_extended(cap * sizeof(PermKey), MCXT_ALLOC_HUGE);
	*blocks = palloc_extended(cap * sizeof(BlockNumber), MCXT_ALLOC_HUGE);

	do
	{
		uint64		lo = (npages == 0) ? 0 : keys[i].key;
		BlockNumber maxblock = 0;
		OffsetNumber maxoff = 0;
		int64		j = i;
		Buffer		buf;
		Page		page;
		PermPageOpaque opaque;
		bool		ok;

		/* take entries [i, j) while they fit */
		while (j < n)
		{
			uint64		hi = (j + 1 < n) ? keys[j + 1].key : PG_UINT64_MAX;
			BlockNumber b = Max(maxblock, ItemPointerGetBlockNumberNoCheck(&keys[j].tid));
			OffsetNumber o = Max(maxoff, ItemPointerGetOffsetNumberNoCheck(&keys[j].tid));

			if (j > i && (size_t) (j - i + 1) * PermLeafFormatSize(lo, hi, b, o) > target)
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
			opaque->hikey = keys[j].key;
			opaque->hikey_tid = keys[j].tid;
		}
		ok = PermLeafSetEntries(page, keys + i, (int) (j - i), (int) (j - i));
		Assert(ok);
		(void) ok;

		/* the leftmost leaf's downlink stands for minus infinity */
		(*firsts)[npages] = npages == 0 ? PermMinKey : keys[i];
		(*blocks)[npages] = BufferGetBlockNumber(buf);

		if (BufferIsValid(prev))
		{
			PermPageGetOpaque(BufferGetPage(prev))->rightlink = (*blocks)[npages];
			MarkBufferDirty(prev);
			UnlockReleaseBuffer(prev);
		}
		prev = buf;
		npages++;
		i = j;
	} while (i < n);

	if (npages == 1)
		PermPageGetOpaque(BufferGetPage(prev))->flags |= PERM_ROOT;
	MarkBufferDirty(prev);
	UnlockReleaseBuffer(prev);
	return npages;
}

/*
 * Write a table's tree from its sorted entries, bottom up; returns the root
 * and sets *root_level.
 */
static BlockNumber
write_table(Relation index, ForkNumber fork, int table, const PermKey *keys,
			int64 n, uint16 *root_level)
{
	PermKey    *firsts;
	BlockNumber *blocks;
	int			level = 0;
	int64		npages = write_leaves(index, fork, table, keys, n, &firsts, &blocks);

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
	double		bit_ones[64];
	int			i;

	if (bs->n > 0)
	{
		SimhashVoter counter;

		SimhashVoterInit(&counter);
		SimhashVoterAddBatch(&counter, bs->fps, bs->n);
		for (i = 0; i < 64; i++)
			bit_ones[i] = (double) counter.counts[i] / (double) bs->n;
	}
	PermChooseLayout(max_distance, blocks, bs->n > 0 ? bit_ones : NULL,
					 layout);
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
	PermKey    *sorted;
	PermPermutation *perm;
	int			t;
	int64		i;

	PermLayoutOptions(index, &max_distance, &blocks);

	choose_layout(bs, max_distance, blocks, &layout);
	write_metapage(index, fork, &layout);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, PERM_PHASE_SORT_WRITE);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL,
								 bs->n * layout.ntables);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, 0);

	sorted = palloc_extended(Max(bs->n, 1) * sizeof(PermKey), MCXT_ALLOC_HUGE);

	perm = palloc(sizeof(PermPermutation));
	for (t = 0; t < layout.ntables; t++)
	{
		BlockNumber root;
		uint16		root_level;

		PermMakePermutation(layout.bits[t], perm);
		for (i = 0; i < bs->n; i++)
		{
			if ((i & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
			sorted[i].key = PermPermute(perm, bs->fps[i]);
			sorted[i].tid = bs->tids[i];
		}
		if (bs->n > 0)
			sort_build_entries(sorted, bs->n);
		root = write_table(index, fork, t, sorted, bs->n, &root_level);

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
	pfree(sorted);
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

	bs.cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash_perm build",
								   ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(bs.cxt);
	bs.n = 0;
	bs.capacity = 1024;
	bs.fps = palloc(bs.capacity * sizeof(uint64));
	bs.tids = palloc(bs.capacity * sizeof(ItemPointerData));

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, PERM_PHASE_SCAN);
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   build_callback, &bs, NULL);

	write_index(index, MAIN_FORKNUM, &bs);

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(bs.cxt);

	result = palloc(sizeof(IndexBuildResult));
	result->heap_tuples = reltuples;
	result->index_tuples = bs.n;
	return result;
}

/* ambuildempty: the init fork of an index on an unlogged table */
void
permbuildempty(Relation index)
{
	PermBuildState bs = {0};

	write_index(index, INIT_FORKNUM, &bs);
}
