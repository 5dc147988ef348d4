/*-------------------------------------------------------------------------
 *
 * permstorefind.c
 *		simhash_perm: the code store found by heap TID.  The code of a row
 *		whose TID a table gave, read from the store instead of the row: the
 *		rings of a nearest-neighbour scan of bit(n) codes and an exclusion
 *		constraint's check on them read no table row and compute no index
 *		expression (README.perm, "Code store", its paragraph "Found by TID").
 *
 * Each page of the chain of codes keeps the range of its entries' TIDs
 * (permstore.c widens it with every entry added); a backend keeps a
 * directory of the chain's pages and ranges, with the index's state.
 *
 * IDENTIFICATION
 *	  src/index/store/permstorefind.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/varbit.h"

#include "index/perm.h"

/*
 * A backend's directory of the chain of codes: each page's block and range
 * of heap TIDs, in chain order, so that the code of a TID is found by
 * reading a page or two instead of the chain.  Built on the first lookup
 * by walking the chain, kept with the index's state (rd_amcache), and
 * brought up to date on every lookup by reading its last page again and
 * following the right-links from there: only the chain's last page gains
 * entries (appends), and a page's range only ever widens by them, so the
 * ranges of the other pages stay true (VACUUM only removes entries).
 */
typedef struct PermStoreDir
{
	int			n;
	int			max;
	BlockNumber *blk;
	uint64	   *lo;
	uint64	   *hi;				/* 0: the page's range is unknown */
	bool		sorted;			/* each range lies above the one before */
} PermStoreDir;

/*
 * Read page blkno of the chain into directory entry i (n, or n - 1 to read
 * the last page again): an empty page's range is empty (lo above hi), a
 * page of unknown range (built before ranges were kept) spans every TID;
 * returns the page's right-link
 */
static BlockNumber
storedir_read(Relation index, PermStoreDir *dir, int i, BlockNumber blkno)
{
	Buffer		buf = PermStoreReadPage(index, InvalidBlockNumber, blkno, false,
										BUFFER_LOCK_SHARE, NULL);
	PermPageOpaque opaque = PermPageGetOpaque(BufferGetPage(buf));
	BlockNumber next = opaque->rightlink;

	if (i == dir->max)
	{
		dir->max *= 2;
		dir->blk = repalloc_huge(dir->blk, dir->max * sizeof(BlockNumber));
		dir->lo = repalloc_huge(dir->lo, dir->max * sizeof(uint64));
		dir->hi = repalloc_huge(dir->hi, dir->max * sizeof(uint64));
	}
	dir->blk[i] = blkno;
	if (opaque->nentries == 0)
	{
		dir->lo[i] = PG_UINT64_MAX;
		dir->hi[i] = 0;
	}
	else if (opaque->hikey == 0)
	{
		dir->lo[i] = 0;
		dir->hi[i] = PG_UINT64_MAX;
	}
	else
	{
		dir->lo[i] = opaque->lokey;
		dir->hi[i] = opaque->hikey;
	}
	UnlockReleaseBuffer(buf);
	/* ranges in increasing order and apart: a bisection finds the page */
	if (dir->lo[i] > dir->hi[i] || (i > 0 && dir->lo[i] <= dir->hi[i - 1]))
		dir->sorted = false;
	if (i == dir->n)
		dir->n++;
	return next;
}

/* The directory, brought up to date: its last page again, then new ones */
static PermStoreDir *
storedir_refresh(Relation index)
{
	PermState  *state = PermGetState(index);
	PermStoreDir *dir = state->storedir;
	BlockNumber next;
	int64		steps = 0;

	if (dir == NULL)
	{
		dir = MemoryContextAllocZero(state->cxt, sizeof(PermStoreDir));
		dir->max = 64;
		dir->blk = MemoryContextAlloc(state->cxt, dir->max * sizeof(BlockNumber));
		dir->lo = MemoryContextAlloc(state->cxt, dir->max * sizeof(uint64));
		dir->hi = MemoryContextAlloc(state->cxt, dir->max * sizeof(uint64));
		dir->sorted = true;
		state->storedir = dir;
		next = storedir_read(index, dir, 0, state->store.first);
	}
	else
		next = storedir_read(index, dir, dir->n - 1, dir->blk[dir->n - 1]);
	while (next != InvalidBlockNumber)
	{
		PermCountStep(index, next, &steps);
		next = storedir_read(index, dir, dir->n, next);
		if ((dir->n & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	return dir;
}

/* Look for tid in store page blkno; its code's words into words */
static bool
storedir_search_page(Relation index, BlockNumber blkno, uint64 x,
					 char *words, int esize)
{
	Buffer		buf = PermStoreReadPage(index, InvalidBlockNumber, blkno, false,
										BUFFER_LOCK_SHARE, NULL);
	Page		page = BufferGetPage(buf);
	int			n = PermPageGetOpaque(page)->nentries;
	int			i;

	for (i = 0; i < n; i++)
	{
		const char *e = PermPageEntries(page) + (size_t) i * esize;
		ItemPointerData tid;

		memcpy(&tid, e + esize - sizeof(ItemPointerData), sizeof(tid));
		if (PermTidNumber(&tid) == x)
		{
			memcpy(words, e, esize - sizeof(ItemPointerData));
			UnlockReleaseBuffer(buf);
			return true;
		}
	}
	UnlockReleaseBuffer(buf);
	return false;
}

/*
 * The code the store holds for a heap TID, its words (zero-padded, as
 * stored) into words; false when the store has no entry of it.  Every row
 * the tables hold is in the store: an insert appends to the store before
 * it adds its keys to the tables (perminsert.c), so a scan or a check
 * that found a TID in a table finds its code here, even one of an insert
 * still in progress.  What reads the code here reads no table row and
 * computes no index expression (README.perm, "Code store").
 */
bool
PermStoreFindCode(Relation index, ItemPointer tid, char *words)
{
	PermState  *state = PermGetState(index);
	PermStoreDir *dir;
	uint64		x = PermTidNumber(tid);
	int			esize = state->store.entry_size;
	int			i;

	Assert(state->has_codes);
	dir = storedir_refresh(index);
	if (dir->sorted)
	{
		int			lo = 0,
					hi = dir->n - 1;

		/* the last page whose range starts at or below x */
		while (lo < hi)
		{
			int			mid = (lo + hi + 1) / 2;

			if (dir->lo[mid] <= x)
				lo = mid;
			else
				hi = mid - 1;
		}
		return dir->lo[lo] <= x && x <= dir->hi[lo] &&
			storedir_search_page(index, dir->blk[lo], x, words, esize);
	}
	for (i = 0; i < dir->n; i++)
		if (dir->lo[i] <= x && x <= dir->hi[i] &&
			storedir_search_page(index, dir->blk[i], x, words, esize))
			return true;
	return false;
}

/*
 * The code the store holds for a heap TID as a bit string of the store's
 * width, palloc'd; NULL when the store has no entry of it
 */
VarBit *
PermStoreCodeBits(Relation index, ItemPointer tid)
{
	PermState  *state = PermGetState(index);
	int			width = state->store.width;
	char		words[PermStoreWords(PERM_MAX_WIDTH) * sizeof(uint64)];
	VarBit	   *code;

	if (!PermStoreFindCode(index, tid, words))
		return NULL;
	code = palloc0(VARBITTOTALLEN(width));
	SET_VARSIZE(code, VARBITTOTALLEN(width));
	VARBITLEN(code) = width;
	memcpy(VARBITS(code), words, VARBITBYTES(code));
	return code;
}
