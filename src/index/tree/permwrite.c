/*-------------------------------------------------------------------------
 *
 * permwrite.c
 *		simhash_perm: writing whole tables bottom up from their rows, for
 *		CREATE INDEX (permbuild.c) and for a change of layout as rows arrive
 *		(permgrow.c).
 *
 * For each table: permute the rows' fingerprints, sort the keys (runsort.c,
 * within half the memory budget), write the leaves left to right as the
 * sort hands them out, then each internal level from the one below, until
 * a level has one page: the table's root.  Pages are new pages at the end
 * of the relation, filled to PERM_BUILD_FILL_PERCENT in their compact
 * format, leaving room to grow.  A build logs its pages once at the end
 * (log_newpage_range); a relayout, which writes into a relation in use,
 * logs each page as it finishes it, so that a crash leaves no page that
 * WAL does not restore whole.
 *
 * IDENTIFICATION
 *	  src/index/tree/permwrite.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xloginsert.h"
#include "commands/progress.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "index/perm.h"
#include "index/tree/permleaf.h"

/* Leaves and internal pages are written this full, leaving room to grow */
#define PERM_BUILD_FILL_PERCENT		90

/* How the pages of one table are written */
typedef struct TableWriter
{
	Relation	index;
	ForkNumber	fork;
	int			table;
	uint16		flags;			/* added to every page's flags */
	int			extra_bytes;	/* of KeyTid.extra in every leaf entry */
	bool		log_pages;		/* WAL-log each page as it is finished */
} TableWriter;

/* A page is complete: dirty it (and log it whole), release it */
static void
finish_page(TableWriter *tw, Buffer buf)
{
	START_CRIT_SECTION();
	MarkBufferDirty(buf);
	if (tw->log_pages)
		log_newpage_buffer(buf, true);
	END_CRIT_SECTION();
	UnlockReleaseBuffer(buf);
}

/*
 * Write one internal level of a table: n downlinks spread evenly over as
 * few pages as the fill factor allows.  Returns the number of pages and, in
 * firsts/blocks, each page's first key and block.
 */
static int
write_internal_level(TableWriter *tw, int level, const char *entries, int64 n,
					 KeyTid **firsts, BlockNumber **blocks)
{
	int			per_page = Max(2, PERM_INTERNAL_CAPACITY * PERM_BUILD_FILL_PERCENT / 100);
	int64		npages = Max(1, (n + per_page - 1) / per_page);
	Buffer		prev = InvalidBuffer;
	int64		p;

	*firsts = palloc_extended(npages * sizeof(KeyTid), MCXT_ALLOC_HUGE);
	*blocks = palloc_extended(npages * sizeof(BlockNumber), MCXT_ALLOC_HUGE);

	for (p = 0; p < npages; p++)
	{
		int64		start = n * p / npages;
		int64		end = n * (p + 1) / npages;
		const char *first = entries + start * PERM_INTERNAL_ENTRY_SIZE;
		Buffer		buf = PermNewBuffer(tw->index, tw->fork);
		Page		page = BufferGetPage(buf);
		PermPageOpaque opaque;

		PermInitPage(page, PERM_INTERNAL | tw->flags, tw->table, level);
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
			finish_page(tw, prev);
		}
		prev = buf;
	}
	if (npages == 1)
		PermPageGetOpaque(BufferGetPage(prev))->flags |= PERM_ROOT;
	finish_page(tw, prev);
	return (int) npages;
}

/* Refill a window of sorted entries from the sort; returns its length */
static int
fill_window(RunSort *rs, KeyTid *win, int n, int size)
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
write_leaves(TableWriter *tw, RunSort *rs, KeyTid **firsts, BlockNumber **blocks)
{
	size_t		target = PERM_PAGE_SPACE * PERM_BUILD_FILL_PERCENT / 100;
	int			wsize = PERM_LEAF_MAX_ENTRIES + 1;
	KeyTid    *win = palloc(wsize * sizeof(KeyTid));
	int			n = fill_window(rs, win, 0, wsize);
	int64		cap = 1024;
	int64		npages = 0;
	Buffer		prev = InvalidBuffer;

	*firsts = palloc_extended(cap * sizeof(KeyTid), MCXT_ALLOC_HUGE);
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

			if (j > 0 && (size_t) (j + 1) *
				PermLeafFormatSize(lo, hi, b, o, tw->extra_bytes) > target)
				break;
			maxblock = b;
			maxoff = o;
			j++;
		}

		if (npages == cap)
		{
			cap *= 2;
			*firsts = repalloc_huge(*firsts, cap * sizeof(KeyTid));
			*blocks = repalloc_huge(*blocks, cap * sizeof(BlockNumber));
		}

		buf = PermNewBuffer(tw->index, tw->fork);
		page = BufferGetPage(buf);
		PermInitPage(page, PERM_LEAF | tw->flags, tw->table, 0);
		opaque = PermPageGetOpaque(page);
		opaque->lokey = lo;
		opaque->extra_bytes = tw->extra_bytes;
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
			finish_page(tw, prev);
		}
		prev = buf;
		npages++;

		/* slide the window past the entries written, and refill it */
		memmove(win, win + j, (n - j) * sizeof(KeyTid));
		n = fill_window(rs, win, n - j, wsize);
	} while (n > 0);

	if (npages == 1)
		PermPageGetOpaque(BufferGetPage(prev))->flags |= PERM_ROOT;
	finish_page(tw, prev);
	pfree(win);
	return npages;
}

/*
 * Write a table's tree from its sorted entries, bottom up; returns the root
 * and sets *root_level.
 */
static BlockNumber
write_table(TableWriter *tw, RunSort *rs, uint16 *root_level)
{
	KeyTid    *firsts;
	BlockNumber *blocks;
	int			level = 0;
	int64		npages = write_leaves(tw, rs, &firsts, &blocks);

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
		npages = write_internal_level(tw, level, downlinks, npages,
									  &firsts, &blocks);
		pfree(downlinks);
	}
	*root_level = level;
	return blocks[0];
}

/*
 * Table t of layout in order: its records read from rows (for 64-bit
 * fingerprints, every row's fingerprint, permuted for the table here; for
 * bit(n) codes, the table's own (key, TID) of every row, as the build made
 * them; NULL: none), n of them, sorted within budget bytes.  The sort is
 * returned finished, to be read in order.
 */
RunSort *
PermSortTable(RecStore *rows, int64 n, int64 budget, const PermLayout *layout,
			  int t)
{
	RunSort    *rs = RunSortBegin(budget, n);
	KeyTid		rec;
	int64		i = 0;

	if (rows && layout->width > 0)
	{
		RecStoreRewind(rows);
		while (RecStoreNext(rows, &rec))
		{
			if ((++i & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
			RunSortPut(rs, &rec);
		}
	}
	else if (rows)
	{
		PermPermutation *perm = palloc(sizeof(PermPermutation));

		PermMakePermutation(layout->bits[t], perm);
		RecStoreRewind(rows);
		while (RecStoreNext(rows, &rec))
		{
			if ((++i & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
			rec.key = PermPermute(perm, rec.key);
			RunSortPut(rs, &rec);
		}
		pfree(perm);
	}
	RunSortFinish(rs);
	return rs;
}

/*
 * Write table t of layout from its sorted entries (rs, finished), as new
 * pages at the end of index's fork, every page with flags besides its kind
 * (with log_pages each is WAL-logged as it is finished).  Returns the
 * table's root and sets *root_level.
 */
BlockNumber
PermWriteTable(Relation index, ForkNumber fork, const PermLayout *layout,
			   int t, uint16 flags, bool log_pages, RunSort *rs,
			   uint16 *root_level)
{
	TableWriter tw;

	tw.index = index;
	tw.fork = fork;
	tw.table = t;
	tw.flags = flags;
	tw.log_pages = log_pages;
	tw.extra_bytes = layout->extra / 8;
	return write_table(&tw, rs, root_level);
}

/*
 * Write every table of layout from the rows (fingerprint, TID) in rows[0],
 * n of them (for bit(n) codes, from each table's (key, TID) in rows[t]), as
 * new pages at the end of index's fork; each table sorts within budget / 2
 * bytes.  Every page gets flags besides its kind; with log_pages each is
 * WAL-logged as it is finished.  With progress, the CREATE INDEX progress
 * view follows.  Sets each table's root and level.
 */
void
PermWriteTables(Relation index, ForkNumber fork, RecStore **rows, int64 n,
				int64 budget, const PermLayout *layout, uint16 flags,
				bool log_pages, bool progress, BlockNumber *roots,
				uint16 *root_levels)
{
	int			t;

	if (progress)
	{
		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL,
									 n * layout->ntables);
		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, 0);
	}
	for (t = 0; t < layout->ntables; t++)
	{
		RunSort    *rs;

		/* sort the table's keys within half the budget */
		if (progress)
			pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, PERM_PHASE_SORT);
		rs = PermSortTable(rows[layout->width > 0 ? t : 0], n, budget / 2,
						   layout, t);

		/* and write it as the sort hands the keys out */
		if (progress)
			pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, PERM_PHASE_WRITE);
		roots[t] = PermWriteTable(index, fork, layout, t, flags, log_pages,
								  rs, &root_levels[t]);
		RunSortEnd(rs);
		if (progress)
			pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE,
										 n * (t + 1));
	}
}
