/*-------------------------------------------------------------------------
 *
 * permpage.c
 *		simhash_perm: pages.  Initialising them, adding them to the
 *		relation, the format of internal pages, searching within a page,
 *		and reading a page of a table with every check, right-link after
 *		right-link, with the index's descriptor (perm.c) in hand.
 *
 * Every page keeps its entries in one packed array after the page header,
 * pd_lower marking its end (there are no line pointers), and a
 * PermPageOpaqueData in the special space.  Internal pages hold sorted
 * 18-byte downlinks (permuted key, heap TID, child block); the first
 * downlink of a level's leftmost page stands for minus infinity.  The leaf
 * format is in permleaf.c.
 *
 * No page is trusted: every page read from the relation is checked here
 * (PermCheckPage, PermCheckMetaPage) before anything in it is followed or
 * written back, and every link before it is read.  A violation is an
 * ERRCODE_INDEX_CORRUPTED error that names the index and the block and
 * asks for a REINDEX; walks along right-links count their steps against
 * the relation's length, so a cycle is an error, not a hang.  README.perm,
 * "Damaged indexes", lists what is checked.
 *
 * IDENTIFICATION
 *	  src/index/tree/permpage.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "index/perm.h"
#include "index/tree/permleaf.h"

/*
 * A key below every real key: the first downlink of a level's leftmost page
 * stands for it.
 */
const KeyTid PermMinKey = {0, {{0, 0}, 0}, 0};

/* Initialise a page of any kind */
void
PermInitPage(Page page, uint16 flags, uint16 table, uint16 level)
{
	PermPageOpaque opaque;

	PageInit(page, BLCKSZ, sizeof(PermPageOpaqueData));
	opaque = PermPageGetOpaque(page);
	opaque->rightlink = InvalidBlockNumber;
	opaque->flags = flags;
	opaque->table = table;
	opaque->level = level;
	opaque->nentries = 0;
	opaque->nsorted = 0;
	opaque->key_bytes = 8;
	opaque->block_bytes = 4;
	opaque->off_bytes = 2;
	opaque->lokey = 0;
	opaque->hikey = 0;
	ItemPointerSetInvalid(&opaque->hikey_tid);
	opaque->page_id = PERM_PAGE_ID;
	((PageHeader) page)->pd_lower = PermPageEntries(page) - (char *) page;
}

/*
 * A new page at the end of the relation, pinned and exclusively locked.
 * Pages are never freed (VACUUM only removes entries), so there is no free
 * space map to consult.
 */
Buffer
PermNewBuffer(Relation index, ForkNumber forknum)
{
	Buffer		buf;
	bool		needLock = !RELATION_IS_LOCAL(index);

	if (needLock)
		LockRelationForExtension(index, ExclusiveLock);
	buf = ReadBufferExtended(index, forknum, P_NEW, RBM_NORMAL, NULL);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	if (needLock)
		UnlockRelationForExtension(index, ExclusiveLock);
	return buf;
}

/* Slot i of an internal page */
static char *
PermInternalSlot(Page page, int i)
{
	return PermPageEntries(page) + (size_t) i * PERM_INTERNAL_ENTRY_SIZE;
}

/* Entry i of an internal page: separator key and child */
void
PermReadInternalEntry(Page page, int i, KeyTid *out, BlockNumber *child)
{
	char	   *p = PermInternalSlot(page, i);

	memcpy(&out->key, p, sizeof(uint64));
	memcpy(&out->tid, p + sizeof(uint64), sizeof(ItemPointerData));
	memcpy(child, p + PERM_KEY_SIZE, sizeof(BlockNumber));
}

/* Write a downlink into a slot (of a page or of an array of downlinks) */
void
PermWriteInternalEntry(char *slot, const KeyTid *key, BlockNumber child)
{
	memcpy(slot, &key->key, sizeof(uint64));
	memcpy(slot + sizeof(uint64), &key->tid, sizeof(ItemPointerData));
	memcpy(slot + PERM_KEY_SIZE, &child, sizeof(BlockNumber));
}

/* Put a downlink into an internal page with room, in key order */
void
PermInternalAdd(Page page, const KeyTid *key, BlockNumber child)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	int			pos = PermPageLowerBound(page, key);
	char	   *slot = PermInternalSlot(page, pos);

	memmove(slot + PERM_INTERNAL_ENTRY_SIZE, slot,
			(opaque->nentries - pos) * PERM_INTERNAL_ENTRY_SIZE);
	PermWriteInternalEntry(slot, key, child);
	opaque->nentries++;
	opaque->nsorted = opaque->nentries;
	((PageHeader) page)->pd_lower += PERM_INTERNAL_ENTRY_SIZE;
}

/* Replace an internal page's downlinks by a packed, sorted array */
void
PermInternalSet(Page page, const char *entries, int n)
{
	memcpy(PermPageEntries(page), entries, n * PERM_INTERNAL_ENTRY_SIZE);
	PermPageGetOpaque(page)->nentries = n;
	PermPageGetOpaque(page)->nsorted = n;
	((PageHeader) page)->pd_lower =
		(PermPageEntries(page) - (char *) page) + n * PERM_INTERNAL_ENTRY_SIZE;
}

/* Key of entry i, on a page of either kind */
void
PermPageReadKey(Page page, int i, KeyTid *out)
{
	if (PermPageIsLeaf(page))
		PermReadLeafEntry(page, i, out);
	else
	{
		char	   *p = PermInternalSlot(page, i);

		memcpy(&out->key, p, sizeof(uint64));
		memcpy(&out->tid, p + sizeof(uint64), sizeof(ItemPointerData));
	}
}

/*
 * First slot in [lo, hi) of the page's sorted part whose key is >= key,
 * given that every slot before lo is < key and every slot from hi on >= key.
 */
static int
lower_bound_between(Page page, const KeyTid *key, int lo, int hi)
{
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;
		KeyTid		k;

		PermPageReadKey(page, mid, &k);
		if (PermCompareKeys(&k, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * First slot of the page's sorted part whose key is >= key.  On internal
 * pages slot 0 is never the answer: the first downlink of a level's
 * leftmost page stands for minus infinity whatever key it carries (indexes
 * built before version 1.2 wrote the first real key there), so the search
 * and every insertion position start at slot 1.
 */
int
PermPageLowerBound(Page page, const KeyTid *key)
{
	int			n = PermPageGetOpaque(page)->nsorted;

	if (PermPageIsLeaf(page))
		return PermLeafLowerBound(page, key);
	return lower_bound_between(page, key, n == 0 ? 0 : 1, n);
}

/* Is key beyond this page's range (so a search must move right)? */
bool
PermPageBeyondHighKey(Page page, const KeyTid *key)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	KeyTid		hikey;

	if (opaque->rightlink == InvalidBlockNumber)
		return false;
	hikey.key = opaque->hikey;
	hikey.tid = opaque->hikey_tid;
	return PermCompareKeys(key, &hikey) >= 0;
}

/* The error for a damaged page: names the index and the block */
void
PermReportCorruption(Relation index, BlockNumber blkno, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("index \"%s\" contains a corrupted page at block %u",
					RelationGetRelationName(index), blkno),
			 errdetail_internal("%s", detail),
			 errhint("Please REINDEX it.")));
}

/*
 * Check what every page of a table or of the code store has: not all
 * zeros (what), a header whose pd_lower and pd_upper lie between the
 * entries' start and the special space, and PERM_PAGE_ID.  Returns the
 * special space.
 */
PermPageOpaque
PermCheckPageHeader(Relation index, Buffer buf, const char *what)
{
	Page		page = BufferGetPage(buf);
	BlockNumber blkno = BufferGetBlockNumber(buf);
	PageHeader	hdr = (PageHeader) page;
	PermPageOpaque opaque;
	size_t		entries_off = PermPageEntries(page) - (char *) page;

	if (PageIsNew(page))
		PermReportCorruption(index, blkno, psprintf("%s is all zeros.", what));
	if (hdr->pd_special != BLCKSZ - MAXALIGN(sizeof(PermPageOpaqueData)) ||
		hdr->pd_upper > hdr->pd_special || hdr->pd_lower < entries_off ||
		hdr->pd_lower > hdr->pd_upper)
		PermReportCorruption(index, blkno,
							 psprintf("Page header: pd_lower %u, pd_upper %u, pd_special %u.",
									  hdr->pd_lower, hdr->pd_upper, hdr->pd_special));
	opaque = PermPageGetOpaque(page);
	if (opaque->page_id != PERM_PAGE_ID)
		PermReportCorruption(index, blkno,
							 psprintf("Page identifier %04X, expected %04X.",
									  opaque->page_id, PERM_PAGE_ID));
	return opaque;
}

/*
 * Check a page of a table's tree: header, identification, flags, table
 * and level (table and level: -1 for any), entry counts against the page's
 * capacity and pd_lower, the leaf entry format, and that the right-link
 * does not point at the metapage or the page itself.
 */
static void
check_page(PermState *state, Buffer buf, int table,
		   int level)
{
	Relation	index = state->index;
	Page		page = BufferGetPage(buf);
	BlockNumber blkno = BufferGetBlockNumber(buf);
	PageHeader	hdr = (PageHeader) page;
	PermPageOpaque opaque;
	size_t		entries_off = PermPageEntries(page) - (char *) page;
	size_t		esize;
	int			ntables = state->layout.ntables;

	if (blkno == PERM_METAPAGE_BLKNO)
		PermReportCorruption(index, blkno, "The metapage is reached as a page of a table.");
	opaque = PermCheckPageHeader(index, buf, "The page");
	if ((opaque->flags & ~PERM_TREE_FLAGS) != 0 ||
		((opaque->flags & PERM_LEAF) != 0) == ((opaque->flags & PERM_INTERNAL) != 0) ||
		((opaque->flags & PERM_LEAF) != 0) != (opaque->level == 0) ||
		((opaque->flags & PERM_KEY_OFFSET) != 0 && opaque->level != 0) ||
		opaque->level > PERM_MAX_LEVEL)
		PermReportCorruption(index, blkno,
							 psprintf("Flags %04X at level %u.",
									  opaque->flags, opaque->level));
	if (opaque->table >= ntables || (table >= 0 && opaque->table != table))
		PermReportCorruption(index, blkno,
							 psprintf("The page belongs to table %u, expected %d of %d.",
									  opaque->table, table, ntables));
	if (level >= 0 && opaque->level != level)
		PermReportCorruption(index, blkno,
							 psprintf("The page is at level %u, expected %d.",
									  opaque->level, level));
	if (opaque->level == 0)
	{
		if (opaque->key_bytes > 8 || opaque->block_bytes < 1 ||
			opaque->block_bytes > 4 || opaque->off_bytes < 1 ||
			opaque->off_bytes > 2 ||
			opaque->extra_bytes != state->layout.extra / 8)
			PermReportCorruption(index, blkno,
								 psprintf("Leaf entry format: %u key, %u block, %u offset, %u extra bytes.",
										  opaque->key_bytes, opaque->block_bytes,
										  opaque->off_bytes, opaque->extra_bytes));
		esize = opaque->key_bytes + opaque->block_bytes + opaque->off_bytes +
			opaque->extra_bytes;
	}
	else
	{
		if (opaque->nentries < 1 || opaque->nsorted != opaque->nentries)
			PermReportCorruption(index, blkno,
								 psprintf("Internal page with %u entries, %u sorted.",
										  opaque->nentries, opaque->nsorted));
		esize = PERM_INTERNAL_ENTRY_SIZE;
	}
	if (opaque->nsorted > opaque->nentries ||
		(size_t) opaque->nentries * esize > PERM_PAGE_SPACE ||
		hdr->pd_lower != entries_off + (size_t) opaque->nentries * esize)
		PermReportCorruption(index, blkno,
							 psprintf("%u entries of %zu bytes (%u sorted), pd_lower %u.",
									  opaque->nentries, esize, opaque->nsorted,
									  hdr->pd_lower));
	if (opaque->rightlink == PERM_METAPAGE_BLKNO || opaque->rightlink == blkno)
		PermReportCorruption(index, blkno,
							 psprintf("The right-link points to block %u.",
									  opaque->rightlink));
}

void
PermCheckPage(PermState *state, Buffer buf, int table, int level)
{
	check_page(state, buf, table, level);
}

/*
 * Check that a link from block `from` (InvalidBlockNumber: from the
 * metapage or a leaf map) to blkno may be followed: not the metapage, not
 * the page itself, inside the relation.
 */
static void
check_link(PermState *state, BlockNumber from,
		   BlockNumber blkno)
{
	Relation	index = state->index;
	if (blkno == PERM_METAPAGE_BLKNO || blkno == InvalidBlockNumber ||
		blkno == from)
		PermReportCorruption(index, from == InvalidBlockNumber ?
							 PERM_METAPAGE_BLKNO : from,
							 psprintf("A link points to block %u.", blkno));
	if (blkno >= state->nblocks)
	{
		/* the relation may have grown since we last looked */
		state->nblocks = RelationGetNumberOfBlocks(index);
		if (blkno >= state->nblocks)
			PermReportCorruption(index, from == InvalidBlockNumber ?
								 PERM_METAPAGE_BLKNO : from,
								 psprintf("A link points to block %u, beyond the end of the index (%u blocks).",
										  blkno, state->nblocks));
	}
}

/* The most blocks of an index whose last buffer a backend remembers */
#define PERM_RECENT_MAX_BLOCKS	(1 << 20)

/*
 * Where this backend remembers the buffer block blkno was last read in, or
 * NULL past PERM_RECENT_MAX_BLOCKS (4 MB of memory, an index of 8 GB).
 */
static Buffer *
recent_slot(PermState *state, BlockNumber blkno)
{
	if (blkno >= PERM_RECENT_MAX_BLOCKS)
		return NULL;
	if (blkno >= state->nrecent)
	{
		BlockNumber n = Min(PERM_RECENT_MAX_BLOCKS,
							Max(blkno + 1, Max(state->nblocks, state->nrecent * 2)));

		if (state->recent == NULL)
			state->recent = MemoryContextAllocZero(state->cxt,
												   n * sizeof(Buffer));
		else
		{
			state->recent = repalloc(state->recent, n * sizeof(Buffer));
			memset(state->recent + state->nrecent, 0,
				   (n - state->nrecent) * sizeof(Buffer));
		}
		state->nrecent = n;
	}
	return &state->recent[blkno];
}

/*
 * Pin, lock and check block blkno, trying first the buffer *recent (if
 * recent is not NULL) and remembering there the buffer used.
 */
static Buffer
read_page(PermState *state, BlockNumber blkno,
		  Buffer *recent, int lockmode, int table, int level)
{
	Relation	index = state->index;
	Buffer		buf;

	if (recent != NULL && BufferIsValid(*recent) &&
		ReadRecentBuffer(SimhashRelationLocator(index), MAIN_FORKNUM, blkno, *recent))
		buf = *recent;
	else
	{
		buf = ReadBuffer(index, blkno);
		if (recent != NULL)
			*recent = buf;
	}
	LockBuffer(buf, lockmode);
	check_page(state, buf, table, level);
	return buf;
}

/* PermReadPage, with the descriptor in hand */
static Buffer
read_linked_page(PermState *state, BlockNumber from,
				 BlockNumber blkno, int lockmode, int table, int level)
{
	check_link(state, from, blkno);
	return read_page(state, blkno, recent_slot(state, blkno), lockmode,
					 table, level);
}

/*
 * Read and lock the page at blkno, reached by a link from block `from`, and
 * check it as a page of `table` at `level` (-1: any level).  If the buffer
 * this backend last read the block in still holds it, it is pinned without
 * a lookup in the shared buffer mapping table (ReadRecentBuffer): a pass
 * over a table's leaves, right-link after right-link, spent a fifth of its
 * time in those lookups.
 */
Buffer
PermReadPage(PermState *state, BlockNumber from, BlockNumber blkno,
			 int lockmode, int table, int level)
{
	return read_linked_page(state, from, blkno, lockmode, table, level);
}

/*
 * PermReadPage, from no particular page, of a page this backend last found
 * in buffer *recent: if that buffer still holds the page, it is pinned
 * without a lookup in the shared buffer mapping table (ReadRecentBuffer),
 * a tenth of a nearest-neighbour search's time at a million rows.
 * *recent is set to the buffer used.  The page is checked either way.
 */
Buffer
PermReadPageRecent(PermState *state, BlockNumber blkno, Buffer *recent,
				   int lockmode, int table, int level)
{
	check_link(state, InvalidBlockNumber, blkno);
	return read_page(state, blkno, recent, lockmode, table, level);
}

/*
 * Count one more page of a walk along a level.  A walk cannot visit more
 * pages than the relation has; one that does is going round a cycle of
 * right-links.
 */
static void
count_step(PermState *state, BlockNumber blkno,
		   int64 *steps)
{
	Relation	index = state->index;
	if (++(*steps) > (int64) state->nblocks)
	{
		state->nblocks = RelationGetNumberOfBlocks(index);
		if (*steps > (int64) state->nblocks)
			PermReportCorruption(index, blkno,
								 "Its level's right-links form a cycle.");
	}
}

void
PermCountStep(PermState *state, BlockNumber blkno, int64 *steps)
{
	count_step(state, blkno, steps);
}

/*
 * Release the page in buf and return its right sibling, locked in lockmode
 * and checked: same table, same level, and for leaves a low key equal to
 * the high key of the page it was reached from.  Counts the step; checks
 * for interrupts between the two pages, holding no lock of its own.
 */
Buffer
PermStepRight(PermState *state, Buffer buf, int lockmode, int64 *steps)
{
	Relation	index = state->index;
	PermPageOpaque opaque = PermPageGetOpaque(BufferGetPage(buf));
	BlockNumber from = BufferGetBlockNumber(buf);
	BlockNumber next = opaque->rightlink;
	uint64		hikey = opaque->hikey;
	int			table = opaque->table;
	int			level = opaque->level;

	UnlockReleaseBuffer(buf);
	count_step(state, next, steps);
	CHECK_FOR_INTERRUPTS();
	buf = read_linked_page(state, from, next, lockmode, table, level);
	if (level == 0 && PermPageGetOpaque(BufferGetPage(buf))->lokey != hikey)
		PermReportCorruption(index, next,
							 psprintf("Its low key %016llX is not the high key %016llX of block %u, whose right-link leads here.",
									  (unsigned long long) PermPageGetOpaque(BufferGetPage(buf))->lokey,
									  (unsigned long long) hikey, from));
	return buf;
}

/*
 * Is the page in buf (pinned and locked) a page of the code store?  For
 * what reads pages in physical order, which passes the store by: a page
 * whose header and identification are sound and whose flags say so.  The
 * store's own readers check it whole (permstore.c).
 */
bool
PermPageIsStore(Relation index, Buffer buf)
{
	Page		page = BufferGetPage(buf);

	if (PageIsNew(page) ||
		((PageHeader) page)->pd_special != BLCKSZ - MAXALIGN(sizeof(PermPageOpaqueData)))
		return false;
	return PermPageGetOpaque(page)->page_id == PERM_PAGE_ID &&
		(PermPageGetOpaque(page)->flags & PERM_STORE) != 0;
}

/*
 * The blocks of the current layout's trees: [*first, return value).
 * Blocks before *first belong to earlier layouts (permgrow.c); so do pages
 * within the range whose PERM_ODD_LAYOUT flag is not *flag (a change of
 * layout that a crash cut short).  For what reads pages in physical order.
 */
BlockNumber
PermLayoutBlocks(Relation index, BlockNumber *first, uint16 *flag)
{
	PermState  *state = PermGetState(index);

	*first = PERM_METAPAGE_BLKNO + 1;
	*flag = 0;
	if (state->has_growth)
	{
		*first = state->growth.layout_start;
		*flag = PermLayoutFlag(state->growth.generation);
	}
	return RelationGetNumberOfBlocks(index);
}

/*
 * The pages of the index that the current layout uses, the metapage
 * included: what a cost compares with (permtablescan.c, permtableknn.c)
 */
double
PermLayoutPageCount(Relation index)
{
	BlockNumber first;
	uint16		flag;
	BlockNumber nblocks = PermLayoutBlocks(index, &first, &flag);

	return (double) (nblocks - (first - 1));
}
