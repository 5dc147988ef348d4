/*-------------------------------------------------------------------------
 *
 * permpage.c
 *		simhash_perm: pages.  Initialising them, adding them to the
 *		relation, the format of internal pages, searching within a page, and
 *		the metapage's record of each table's root.
 *
 * Every page keeps its entries in one packed array after the page header,
 * pd_lower marking its end (there are no line pointers), and a
 * PermPageOpaqueData in the special space.  Internal pages hold sorted
 * 18-byte downlinks (permuted key, heap TID, child block); the first
 * downlink of a level's leftmost page stands for minus infinity.  The leaf
 * format is in permleaf.c.
 *
 * IDENTIFICATION
 *	  src/permpage.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/rel.h"

#include "perm.h"

/*
 * A key below every real key: the first downlink of a level's leftmost page
 * stands for it.
 */
const PermKey PermMinKey = {0, {{0, 0}, 0}};

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
char *
PermInternalSlot(Page page, int i)
{
	return PermPageEntries(page) + (size_t) i * PERM_INTERNAL_ENTRY_SIZE;
}

/* Entry i of an internal page: separator key and child */
void
PermReadInternalEntry(Page page, int i, PermKey *out, BlockNumber *child)
{
	char	   *p = PermInternalSlot(page, i);

	memcpy(&out->key, p, sizeof(uint64));
	memcpy(&out->tid, p + sizeof(uint64), sizeof(ItemPointerData));
	memcpy(child, p + PERM_KEY_SIZE, sizeof(BlockNumber));
}

/* Write a downlink into a slot (of a page or of an array of downlinks) */
void
PermWriteInternalEntry(char *slot, const PermKey *key, BlockNumber child)
{
	memcpy(slot, &key->key, sizeof(uint64));
	memcpy(slot + sizeof(uint64), &key->tid, sizeof(ItemPointerData));
	memcpy(slot + PERM_KEY_SIZE, &child, sizeof(BlockNumber));
}

/* Put a downlink into an internal page with room, in key order */
void
PermInternalAdd(Page page, const PermKey *key, BlockNumber child)
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
PermPageReadKey(Page page, int i, PermKey *out)
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

/* First slot of the page's sorted part whose key is >= key */
int
PermPageLowerBound(Page page, const PermKey *key)
{
	int			lo = 0;
	int			hi = PermPageGetOpaque(page)->nsorted;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;
		PermKey		k;

		PermPageReadKey(page, mid, &k);
		if (PermCompareKeys(&k, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Is key beyond this page's range (so a search must move right)? */
bool
PermPageBeyondHighKey(Page page, const PermKey *key)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	PermKey		hikey;

	if (opaque->rightlink == InvalidBlockNumber)
		return false;
	hikey.key = opaque->hikey;
	hikey.tid = opaque->hikey_tid;
	return PermCompareKeys(key, &hikey) >= 0;
}

/*
 * A root of a table to descend from, and its level: the cached one if it
 * reaches target_level, else the current one from the metapage.
 */
BlockNumber
PermGetRoot(Relation index, int table, int target_level, int *level)
{
	PermState  *state = PermGetState(index);
	Buffer		buf;
	PermMetaPage meta;

	if (table >= state->layout.ntables)
		elog(ERROR, "simhash_perm table %d does not exist in index \"%s\"",
			 table, RelationGetRelationName(index));
	if (state->root_level[table] < target_level ||
		state->root[table] == InvalidBlockNumber)
	{
		buf = ReadBuffer(index, PERM_METAPAGE_BLKNO);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		meta = PermPageGetMeta(BufferGetPage(buf));
		state->root[table] = meta->tables[table].root;
		state->root_level[table] = meta->tables[table].root_level;
		UnlockReleaseBuffer(buf);
	}
	*level = state->root_level[table];
	return state->root[table];
}

/* Copy of the table roots and levels as they are now */
void
PermMetaSnapshot(Relation index, PermTable *tables, int *ntables)
{
	Buffer		buf = ReadBuffer(index, PERM_METAPAGE_BLKNO);
	PermMetaPage meta;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	meta = PermPageGetMeta(BufferGetPage(buf));
	*ntables = meta->ntables;
	memcpy(tables, meta->tables, meta->ntables * sizeof(PermTable));
	UnlockReleaseBuffer(buf);
}
