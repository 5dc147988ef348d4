/*-------------------------------------------------------------------------
 *
 * permutils.c
 *		simhash_perm: table layout, permutations, pages, and the per-table
 *		B+tree: descent (through the per-backend leaf maps), inserts (leaf
 *		appends logged as exact byte ranges, page splits), range probes.
 *
 * See perm.h for the design, in particular the locking rules that the
 * functions here implement, and permleaf.c for the leaf entry format.
 *
 * IDENTIFICATION
 *	  src/permutils.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/generic_xlog.h"
#include "access/xloginsert.h"
#include "access/rmgr.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "perm.h"

/* A key below every real key: the first downlink of a leftmost page */
static const PermKey perm_min_key = {0, {{0, 0}, 0}};

/* Index-wide state, read from the metapage once and kept in rd_amcache */
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

	buf = ReadBuffer(index, PERM_METAPAGE_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	meta = PermPageGetMeta(page);
	if (meta->magic != PERM_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not a simhash_perm index",
						RelationGetRelationName(index))));
	if (meta->version != PERM_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has simhash_perm layout version %u, expected %u",
						RelationGetRelationName(index), meta->version,
						PERM_VERSION),
				 errhint("REINDEX the index.")));

	state = MemoryContextAllocZero(index->rd_indexcxt, sizeof(PermState));
	state->max_distance = meta->max_distance;
	state->blocks = meta->blocks;
	state->ntables = meta->ntables;
	state->perm = MemoryContextAlloc(index->rd_indexcxt,
									 meta->ntables * sizeof(PermPermutation));
	for (t = 0; t < meta->ntables; t++)
	{
		state->prefix_bits[t] = meta->tables[t].prefix_bits;
		memcpy(state->bits[t], meta->tables[t].bits, 64);
		state->root[t] = meta->tables[t].root;
		state->root_level[t] = meta->tables[t].root_level;
	}
	UnlockReleaseBuffer(buf);
	for (t = 0; t < state->ntables; t++)
		PermMakePermutation(state->bits[t], &state->perm[t]);

	index->rd_amcache = state;
	return state;
}

/* Binary entropy of a bit that is 1 with probability p */
static double
bit_entropy(double p)
{
	if (p <= 0.0 || p >= 1.0)
		return 0.0;
	return -(p * log2(p) + (1.0 - p) * log2(1.0 - p));
}

/*
 * Decide the table layout: which block every bit belongs to, and for each
 * table the order of the 64 bits in its key.
 *
 * Blocks have sizes as equal as possible (the larger ones first).  Bits are
 * taken in order of decreasing entropy (bit_ones[i] is the fraction of rows
 * with bit i set; NULL means uniform) and each goes to the block with the
 * least entropy so far that still has room, so every block, and so every
 * table prefix, carries about the same information.  Entropies are rounded
 * and ties broken by bit position, most significant first, so the result is
 * deterministic; uniform statistics give the interleaved split in which bit
 * i belongs to block (63 - i) mod B.
 */
void
PermChooseLayout(int max_distance, int blocks, const double *bit_ones,
				 uint8 *block_of_bit, PermState *state)
{
	int			size[PERM_MAX_BLOCKS];
	int			filled[PERM_MAX_BLOCKS] = {0};
	double		entropy[PERM_MAX_BLOCKS] = {0};
	double		e[64];
	int			order[64];
	int			chosen[PERM_MAX_BLOCKS];
	int			nchosen = blocks - max_distance;
	int			b,
				i,
				j,
				t;

	for (b = 0; b < blocks; b++)
		size[b] = 64 / blocks + (b < 64 % blocks ? 1 : 0);

	/* bits by decreasing entropy; entropies are rounded so noise ties */
	for (i = 0; i < 64; i++)
	{
		e[i] = bit_ones ? rint(bit_entropy(bit_ones[i]) * 100.0) / 100.0 : 1.0;
		order[i] = 63 - i;
	}
	for (i = 1; i < 64; i++)
	{
		int			x = order[i];

		for (j = i; j > 0 && e[order[j - 1]] < e[x]; j--)
			order[j] = order[j - 1];
		order[j] = x;
	}

	for (i = 0; i < 64; i++)
	{
		int			bit = order[i];
		int			best = -1;

		for (b = 0; b < blocks; b++)
		{
			if (filled[b] == size[b])
				continue;
			if (best < 0 || entropy[b] < entropy[best] - 1e-9)
				best = b;
		}
		block_of_bit[bit] = (uint8) best;
		filled[best]++;
		entropy[best] += e[bit];
	}

	/* tables: every choice of blocks - max_distance blocks, in lexical order */
	state->max_distance = max_distance;
	state->blocks = blocks;
	for (i = 0; i < nchosen; i++)
		chosen[i] = i;
	t = 0;
	for (;;)
	{
		bool		in_prefix[PERM_MAX_BLOCKS] = {0};
		int			pos = 0;
		int			pass;

		Assert(t < PERM_MAX_TABLES);
		for (i = 0; i < nchosen; i++)
			in_prefix[chosen[i]] = true;

		/* chosen blocks first, then the rest; each block's bits high first */
		state->prefix_bits[t] = 0;
		for (pass = 0; pass < 2; pass++)
			for (b = 0; b < blocks; b++)
			{
				if (in_prefix[b] != (pass == 0))
					continue;
				for (i = 63; i >= 0; i--)
					if (block_of_bit[i] == b)
					{
						state->bits[t][pos++] = (uint8) i;
						if (pass == 0)
							state->prefix_bits[t]++;
					}
			}
		Assert(pos == 64);
		t++;

		/* next combination */
		for (i = nchosen - 1; i >= 0 && chosen[i] == blocks - nchosen + i; i--)
			;
		if (i < 0)
			break;
		chosen[i]++;
		for (j = i + 1; j < nchosen; j++)
			chosen[j] = chosen[j - 1] + 1;
	}
	state->ntables = t;
}

/* The lookup tables of a permutation (see PermPermutation) */
void
PermMakePermutation(const uint8 *bits, PermPermutation *perm)
{
	int			v,
				j;

	memset(perm, 0, sizeof(PermPermutation));
	/* bits[j] is the fingerprint bit that becomes key bit 63 - j */
	for (j = 0; j < 64; j++)
	{
		int			byte = bits[j] / 8;
		int			bit = bits[j] % 8;

		for (v = 0; v < 256; v++)
			if (v & (1 << bit))
				perm->spread[byte][v] |= UINT64CONST(1) << (63 - j);
	}
}

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
static inline char *
internal_ptr(Page page, int i)
{
	return PermPageEntries(page) + (size_t) i * PERM_INTERNAL_ENTRY_SIZE;
}

/* Entry i of an internal page: separator key and child */
void
PermReadInternalEntry(Page page, int i, PermKey *out, BlockNumber *child)
{
	char	   *p = internal_ptr(page, i);

	memcpy(&out->key, p, sizeof(uint64));
	memcpy(&out->tid, p + sizeof(uint64), sizeof(ItemPointerData));
	memcpy(child, p + PERM_KEY_SIZE, sizeof(BlockNumber));
}

/* Write a downlink at slot i of an internal page */
static void
write_internal(char *slot, const PermKey *key, BlockNumber child)
{
	memcpy(slot, &key->key, sizeof(uint64));
	memcpy(slot + sizeof(uint64), &key->tid, sizeof(ItemPointerData));
	memcpy(slot + PERM_KEY_SIZE, &child, sizeof(BlockNumber));
}

/* Key of entry i, on a page of either kind */
static inline void
read_key(Page page, int i, PermKey *out)
{
	if (PermPageIsLeaf(page))
		PermReadLeafEntry(page, i, out);
	else
	{
		char	   *p = internal_ptr(page, i);

		memcpy(&out->key, p, sizeof(uint64));
		memcpy(&out->tid, p + sizeof(uint64), sizeof(ItemPointerData));
	}
}

/* First slot of the sorted part whose key is >= key */
static int
lower_bound(Page page, const PermKey *key)
{
	int			lo = 0;
	int			hi = PermPageGetOpaque(page)->nsorted;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;
		PermKey		k;

		read_key(page, mid, &k);
		if (PermCompareKeys(&k, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Is key beyond this page's range (so the search must move right)? */
static inline bool
beyond_high_key(Page page, const PermKey *key)
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
static BlockNumber
get_root(Relation index, int table, int target_level, int *level)
{
	PermState  *state = PermGetState(index);
	Buffer		buf;
	PermMetaPage meta;

	if (table >= state->ntables)
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

/* Read the leaves of a table, in order, into a new map */
static PermLeafMap *
build_leaf_map(Relation index, int table)
{
	PermState  *state = PermGetState(index);
	int			level;
	BlockNumber blkno;
	PermLeafMap *map;
	int			cap = 1024;

	/* the leftmost page of level 1 (or the root, if it is a leaf) */
	state->root_level[table] = -1;	/* force a fresh root */
	blkno = get_root(index, table, 0, &level);
	if (level == 0)
	{
		map = MemoryContextAllocZero(index->rd_indexcxt, sizeof(PermLeafMap));
		map->nleaves = 1;
		map->lowkeys = MemoryContextAlloc(index->rd_indexcxt, sizeof(PermKey));
		map->blocks = MemoryContextAlloc(index->rd_indexcxt, sizeof(BlockNumber));
		map->lowkeys[0] = perm_min_key;
		map->blocks[0] = blkno;
		return map;
	}
	while (level > 1)
	{
		Buffer		buf = ReadBuffer(index, blkno);
		PermKey		k;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		PermReadInternalEntry(BufferGetPage(buf), 0, &k, &blkno);
		UnlockReleaseBuffer(buf);
		level--;
	}

	map = MemoryContextAllocZero(index->rd_indexcxt, sizeof(PermLeafMap));
	map->lowkeys = MemoryContextAlloc(index->rd_indexcxt, cap * sizeof(PermKey));
	map->blocks = MemoryContextAlloc(index->rd_indexcxt, cap * sizeof(BlockNumber));
	while (blkno != InvalidBlockNumber)
	{
		Buffer		buf = ReadBuffer(index, blkno);
		Page		page;
		PermPageOpaque opaque;
		int			i;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		opaque = PermPageGetOpaque(page);
		if (map->nleaves + opaque->nentries > PERM_LEAF_MAP_MAX)
		{
			/* too big to keep per backend: descend the usual way */
			UnlockReleaseBuffer(buf);
			pfree(map->lowkeys);
			pfree(map->blocks);
			map->nleaves = 0;
			map->lowkeys = NULL;
			map->blocks = NULL;
			return map;
		}
		while (map->nleaves + opaque->nentries > cap)
		{
			cap *= 2;
			map->lowkeys = repalloc(map->lowkeys, cap * sizeof(PermKey));
			map->blocks = repalloc(map->blocks, cap * sizeof(BlockNumber));
		}
		for (i = 0; i < opaque->nentries; i++)
		{
			PermReadInternalEntry(page, i, &map->lowkeys[map->nleaves],
								  &map->blocks[map->nleaves]);
			map->nleaves++;
		}
		blkno = opaque->rightlink;
		UnlockReleaseBuffer(buf);
	}
	if (map->nleaves > 0)
		map->lowkeys[0] = perm_min_key;
	return map;
}

/* The leaf to start from for key, per the map (see PermLeafMap) */
static BlockNumber
leaf_map_lookup(PermLeafMap *map, const PermKey *key)
{
	int			lo = 1,
				hi = map->nleaves - 1,
				found = 0;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (PermCompareKeys(&map->lowkeys[mid], key) <= 0)
		{
			found = mid;
			lo = mid + 1;
		}
		else
			hi = mid - 1;
	}
	return map->blocks[found];
}

/* Right-moves after which a leaf map is considered stale */
#define LEAF_MAP_MAX_MOVES	2

/*
 * Descend to the leaf that owns key through the table's leaf map, and
 * return it pinned and locked in lockmode; InvalidBuffer if there is no
 * usable map.
 */
static Buffer
descend_by_map(Relation index, int table, const PermKey *key, int lockmode)
{
	PermState  *state = PermGetState(index);
	PermLeafMap *map = state->leafmap[table];
	Buffer		buf;
	int			moves = 0;

	if (map == NULL || map->stale)
	{
		if (map != NULL)
		{
			if (map->lowkeys)
				pfree(map->lowkeys);
			if (map->blocks)
				pfree(map->blocks);
			pfree(map);
		}
		map = state->leafmap[table] = build_leaf_map(index, table);
	}
	if (map->nleaves == 0)
		return InvalidBuffer;

	buf = ReadBuffer(index, leaf_map_lookup(map, key));
	LockBuffer(buf, lockmode);
	while (beyond_high_key(BufferGetPage(buf), key))
	{
		BlockNumber next = PermPageGetOpaque(BufferGetPage(buf))->rightlink;

		UnlockReleaseBuffer(buf);
		buf = ReadBuffer(index, next);
		LockBuffer(buf, lockmode);
		moves++;
	}
	if (moves > LEAF_MAP_MAX_MOVES)
		map->stale = true;
	return buf;
}

/*
 * Descend a table's tree to the page at target_level that owns key, and
 * return it pinned and locked in lockmode (pages above are only share
 * locked, one at a time).  Follows right-links past pages that split after
 * their downlink was read.
 */
static Buffer
descend(Relation index, int table, const PermKey *key, int target_level,
		int lockmode)
{
	int			level;
	BlockNumber blkno;
	Buffer		buf;

	if (target_level == 0)
	{
		buf = descend_by_map(index, table, key, lockmode);
		if (BufferIsValid(buf))
			return buf;
	}
	blkno = get_root(index, table, target_level, &level);

	if (level < target_level)
		elog(ERROR, "simhash_perm table %d of index \"%s\" has no level %d",
			 table, RelationGetRelationName(index), target_level);

	buf = ReadBuffer(index, blkno);
	LockBuffer(buf, level == target_level ? lockmode : BUFFER_LOCK_SHARE);
	for (;;)
	{
		Page		page = BufferGetPage(buf);
		PermPageOpaque opaque = PermPageGetOpaque(page);
		int			mode;
		int			slot;
		PermKey		sep;

		/* move right while the key is beyond this page */
		while (beyond_high_key(page, key))
		{
			blkno = opaque->rightlink;
			mode = (opaque->level == target_level) ? lockmode : BUFFER_LOCK_SHARE;
			UnlockReleaseBuffer(buf);
			buf = ReadBuffer(index, blkno);
			LockBuffer(buf, mode);
			page = BufferGetPage(buf);
			opaque = PermPageGetOpaque(page);
		}

		if (opaque->level == target_level)
			return buf;

		/* the last downlink whose separator is <= key; slot 0 is -infinity */
		slot = lower_bound(page, key);
		if (slot < opaque->nentries)
		{
			read_key(page, slot, &sep);
			if (PermCompareKeys(&sep, key) > 0)
				slot--;
		}
		else
			slot--;
		if (slot < 0)
			slot = 0;
		PermReadInternalEntry(page, slot, &sep, &blkno);
		mode = (opaque->level - 1 == target_level) ? lockmode : BUFFER_LOCK_SHARE;
		UnlockReleaseBuffer(buf);
		buf = ReadBuffer(index, blkno);
		LockBuffer(buf, mode);
	}
}

/* Put a downlink into an internal page with room, in key order */
static void
internal_add(Page page, const PermKey *key, BlockNumber child)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	int			pos = lower_bound(page, key);
	char	   *slot = internal_ptr(page, pos);

	memmove(slot + PERM_INTERNAL_ENTRY_SIZE, slot,
			(opaque->nentries - pos) * PERM_INTERNAL_ENTRY_SIZE);
	write_internal(slot, key, child);
	opaque->nentries++;
	opaque->nsorted = opaque->nentries;
	((PageHeader) page)->pd_lower += PERM_INTERNAL_ENTRY_SIZE;
}

/* Replace an internal page's downlinks by a packed, sorted array */
static void
internal_set(Page page, const char *entries, int n)
{
	memcpy(PermPageEntries(page), entries, n * PERM_INTERNAL_ENTRY_SIZE);
	PermPageGetOpaque(page)->nentries = n;
	PermPageGetOpaque(page)->nsorted = n;
	((PageHeader) page)->pd_lower =
		(PermPageEntries(page) - (char *) page) + n * PERM_INTERNAL_ENTRY_SIZE;
}

/*
 * WAL for appends to leaves.
 *
 * An append changes three small byte ranges of a leaf: the new entry (or,
 * when the tail was merged, the whole entry array), pd_lower, and the
 * entry counts in the special space.  GenericXLogRegisterBuffer and
 * GenericXLogFinish would copy each page and compare it byte by byte with
 * its copy to find them, which costs more than everything else an insert
 * does.  Instead the ranges are written here as a generic WAL record in the
 * form generic_redo() replays: per block, a sequence of fragments
 * (uint16 offset, uint16 length, bytes), after which redo zeroes the hole
 * between pd_lower and pd_upper, as GenericXLogFinish does on the primary.
 * Full-page images follow the usual rules (REGBUF_STANDARD).
 */
typedef struct LeafAppend
{
	Buffer		buf;
	int			slot;			/* the new entry's slot */
	bool		rewritten;		/* all entries were rewritten: log them all */
} LeafAppend;

/* Add one fragment to a generic WAL delta being built */
static char *
add_fragment(char *out, Page page, const void *start, size_t len)
{
	OffsetNumber off = (OffsetNumber) ((const char *) start - (const char *) page);
	OffsetNumber olen = (OffsetNumber) len;

	memcpy(out, &off, sizeof(off));
	memcpy(out + sizeof(off), &olen, sizeof(olen));
	memcpy(out + 2 * sizeof(OffsetNumber), start, len);
	return out + 2 * sizeof(OffsetNumber) + len;
}

/*
 * Append keys[i] to the leaf in las[i].buf for each i, all exclusively
 * locked and with room (PermLeafHasRoom), atomically and WAL-logged as one
 * record.
 */
static void
leaves_append_logged(Relation index, int n, LeafAppend *las, const PermKey *keys)
{
	/* a page's delta is at most its entries plus three fragment headers */
	char		deltas[MAX_GENERIC_XLOG_PAGES][BLCKSZ + 64];
	int			lens[MAX_GENERIC_XLOG_PAGES];
	bool		needwal = RelationNeedsWAL(index);
	int			i;

	START_CRIT_SECTION();
	for (i = 0; i < n; i++)
	{
		Page		page = BufferGetPage(las[i].buf);
		PermPageOpaque opaque = PermPageGetOpaque(page);
		int			esize;
		char	   *out;

		las[i].rewritten = PermLeafAppend(page, &keys[i], &las[i].slot);
		MarkBufferDirty(las[i].buf);
		if (!needwal)
			continue;
		esize = PermLeafEntrySize(page);
		out = deltas[i];
		if (las[i].rewritten)
			out = add_fragment(out, page, PermPageEntries(page),
							   opaque->nentries * esize);
		else
			out = add_fragment(out, page,
							   PermPageEntries(page) + las[i].slot * esize, esize);
		out = add_fragment(out, page, &((PageHeader) page)->pd_lower,
						   sizeof(LocationIndex));
		out = add_fragment(out, page, &opaque->nentries, PERM_COUNTS_SIZE);
		lens[i] = out - deltas[i];
	}
	if (needwal)
	{
		XLogRecPtr	lsn;

		XLogBeginInsert();
		for (i = 0; i < n; i++)
		{
			XLogRegisterBuffer(i, las[i].buf, REGBUF_STANDARD);
			XLogRegisterBufData(i, deltas[i], lens[i]);
		}
		lsn = XLogInsert(RM_GENERIC_ID, 0);
		for (i = 0; i < n; i++)
			PageSetLSN(BufferGetPage(las[i].buf), lsn);
	}
	END_CRIT_SECTION();
}

static void insert_downlink(Relation index, int table, int level,
							const PermKey *sep, BlockNumber child);

static int
compare_keys(const void *a, const void *b)
{
	return PermCompareKeys((const PermKey *) a, (const PermKey *) b);
}

/*
 * Split the full, exclusively locked page in buf while adding key (and,
 * on internal pages, child), then release it.  The upper half moves to a
 * new right sibling; if the page was the root, a new root is made in the
 * same WAL record.  The downlink to the new page is inserted into the
 * parent afterwards.
 */
static void
split_and_add(Relation index, int table, Buffer buf, const PermKey *key,
			  BlockNumber child)
{
	Page		page = BufferGetPage(buf);
	PermPageOpaque opaque = PermPageGetOpaque(page);
	bool		leaf = PermPageIsLeaf(page);
	int			n = opaque->nentries;
	int			level = opaque->level;
	bool		was_root = (opaque->flags & PERM_ROOT) != 0;
	PermKey    *keys = NULL;	/* leaf: all entries plus the new one */
	char	   *links = NULL;	/* internal: all downlinks plus the new one */
	int			nleft;
	Buffer		rbuf = PermNewBuffer(index, MAIN_FORKNUM);
	Buffer		rootbuf = InvalidBuffer;
	Buffer		metabuf = InvalidBuffer;
	GenericXLogState *xlog;
	Page		lpage,
				rpage;
	PermPageOpaque lopaque,
				ropaque;
	PermKey		sep;
	BlockNumber rblkno;
	bool		ok;

	/* all entries plus the new one, in order */
	if (leaf)
	{
		keys = palloc((n + 1) * sizeof(PermKey));
		PermLeafSortedEntries(page, keys);
		keys[n] = *key;
		qsort(keys, n + 1, sizeof(PermKey), compare_keys);
	}
	else
	{
		int			pos = lower_bound(page, key);

		links = palloc((n + 1) * PERM_INTERNAL_ENTRY_SIZE);
		memcpy(links, PermPageEntries(page), pos * PERM_INTERNAL_ENTRY_SIZE);
		write_internal(links + pos * PERM_INTERNAL_ENTRY_SIZE, key, child);
		memcpy(links + (pos + 1) * PERM_INTERNAL_ENTRY_SIZE,
			   PermPageEntries(page) + pos * PERM_INTERNAL_ENTRY_SIZE,
			   (n - pos) * PERM_INTERNAL_ENTRY_SIZE);
	}
	n++;
	nleft = n / 2;
	if (leaf)
		sep = keys[nleft];
	else
	{
		memcpy(&sep.key, links + nleft * PERM_INTERNAL_ENTRY_SIZE, sizeof(uint64));
		memcpy(&sep.tid, links + nleft * PERM_INTERNAL_ENTRY_SIZE + sizeof(uint64),
			   sizeof(ItemPointerData));
	}

	if (was_root)
	{
		rootbuf = PermNewBuffer(index, MAIN_FORKNUM);
		metabuf = ReadBuffer(index, PERM_METAPAGE_BLKNO);
		LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	}

	xlog = GenericXLogStart(index);
	lpage = GenericXLogRegisterBuffer(xlog, buf, 0);
	rpage = GenericXLogRegisterBuffer(xlog, rbuf, GENERIC_XLOG_FULL_IMAGE);
	lopaque = PermPageGetOpaque(lpage);

	/* the right page takes the upper half and the old page's high key */
	PermInitPage(rpage, lopaque->flags & ~PERM_ROOT, table, level);
	ropaque = PermPageGetOpaque(rpage);
	ropaque->rightlink = lopaque->rightlink;
	ropaque->hikey = lopaque->hikey;
	ropaque->hikey_tid = lopaque->hikey_tid;
	ropaque->lokey = sep.key;

	/* the left page ends where the right one starts */
	lopaque->rightlink = BufferGetBlockNumber(rbuf);
	lopaque->hikey = sep.key;
	lopaque->hikey_tid = sep.tid;
	lopaque->flags &= ~PERM_ROOT;

	/* each half in the format its narrower range allows */
	if (leaf)
	{
		ok = PermLeafSetEntries(rpage, keys + nleft, n - nleft, n - nleft) &&
			PermLeafSetEntries(lpage, keys, nleft, nleft);
		if (!ok)
			elog(ERROR, "simhash_perm split of block %u left a half too large",
				 BufferGetBlockNumber(buf));
	}
	else
	{
		internal_set(rpage, links + nleft * PERM_INTERNAL_ENTRY_SIZE, n - nleft);
		internal_set(lpage, links, nleft);
	}

	if (was_root)
	{
		Page		newroot = GenericXLogRegisterBuffer(xlog, rootbuf,
														GENERIC_XLOG_FULL_IMAGE);
		Page		metapage = GenericXLogRegisterBuffer(xlog, metabuf, 0);
		PermMetaPage meta = PermPageGetMeta(metapage);

		PermInitPage(newroot, PERM_INTERNAL | PERM_ROOT, table, level + 1);
		internal_add(newroot, &perm_min_key, BufferGetBlockNumber(buf));
		internal_add(newroot, &sep, BufferGetBlockNumber(rbuf));
		meta->tables[table].root = BufferGetBlockNumber(rootbuf);
		meta->tables[table].root_level = level + 1;
	}
	GenericXLogFinish(xlog);

	rblkno = BufferGetBlockNumber(rbuf);
	if (was_root)
	{
		UnlockReleaseBuffer(metabuf);
		UnlockReleaseBuffer(rootbuf);
	}
	UnlockReleaseBuffer(rbuf);
	UnlockReleaseBuffer(buf);
	if (keys)
		pfree(keys);
	if (links)
		pfree(links);

	if (!was_root)
		insert_downlink(index, table, level + 1, &sep, rblkno);
}

/* Add a downlink to the locked internal page in buf, splitting if full */
static void
add_to_internal(Relation index, int table, Buffer buf, const PermKey *key,
				BlockNumber child)
{
	Page		page = BufferGetPage(buf);
	GenericXLogState *xlog;

	if (PermPageGetOpaque(page)->nentries >= PERM_INTERNAL_CAPACITY)
	{
		split_and_add(index, table, buf, key, child);
		return;
	}
	xlog = GenericXLogStart(index);
	page = GenericXLogRegisterBuffer(xlog, buf, 0);
	internal_add(page, key, child);
	GenericXLogFinish(xlog);
	UnlockReleaseBuffer(buf);
}

/* Insert the downlink (sep, child) into the page at level that owns sep */
static void
insert_downlink(Relation index, int table, int level, const PermKey *sep,
				BlockNumber child)
{
	Buffer		buf = descend(index, table, sep, level, BUFFER_LOCK_EXCLUSIVE);

	add_to_internal(index, table, buf, sep, child);
}

/* Insert one (permuted key, TID) entry into a table */
void
PermInsertEntry(Relation index, int table, const PermKey *key)
{
	Buffer		buf = descend(index, table, key, 0, BUFFER_LOCK_EXCLUSIVE);

	if (PermLeafHasRoom(BufferGetPage(buf), key))
	{
		LeafAppend	la;

		la.buf = buf;
		leaves_append_logged(index, 1, &la, key);
		UnlockReleaseBuffer(buf);
	}
	else
		split_and_add(index, table, buf, key, InvalidBlockNumber);
}

/*
 * Report every entry of a table whose key lies in [lo, hi] and is within
 * max_distance bits of query_key.  Each leaf is read whole under its share
 * lock (its sorted part from the first key in range, then its unsorted
 * tail) and released before the next is locked; matches are reported while
 * the lock is held, so the callback must not do I/O or take locks.
 *
 * A run of entries with one key that is too far away and continues onto
 * the next page (thousands of rows sharing a fingerprint) is skipped by
 * descending again to the next key rather than reading it.
 */
void
PermProbeRange(Relation index, int table, uint64 lo, uint64 hi,
			   uint64 query_key, int max_distance,
			   PermMatchCallback callback, void *arg)
{
	PermKey		search;
	Buffer		buf;

	search.key = lo;
	ItemPointerSet(&search.tid, 0, 0);
	buf = descend(index, table, &search, 0, BUFFER_LOCK_SHARE);

	for (;;)
	{
		Page		page = BufferGetPage(buf);
		PermPageOpaque opaque = PermPageGetOpaque(page);
		int			i;
		bool		past_hi = false;
		bool		skip = false;
		PermKey		e = {0};

		/* the sorted part, from the first entry >= search */
		for (i = lower_bound(page, &search); i < opaque->nsorted; i++)
		{
			int			d;

			PermReadLeafEntry(page, i, &e);
			if (e.key > hi)
			{
				past_hi = true;
				break;
			}
			d = __builtin_popcountll(e.key ^ query_key);
			if (d <= max_distance)
				callback(arg, &e.tid, e.key, d);
			else if (!PermPageIsRightmost(page) && opaque->hikey == e.key &&
					 i + 1 < opaque->nsorted)
			{
				/* a far key filling the rest of the page and going on */
				PermKey		last;

				PermReadLeafEntry(page, opaque->nsorted - 1, &last);
				if (last.key == e.key)
				{
					skip = true;
					break;
				}
			}
		}

		/* the unsorted tail: every entry in [lo, hi] */
		for (i = opaque->nsorted; i < opaque->nentries; i++)
		{
			PermKey		t;
			int			d;

			PermReadLeafEntry(page, i, &t);
			if (t.key < lo || t.key > hi)
				continue;
			d = __builtin_popcountll(t.key ^ query_key);
			if (d <= max_distance)
				callback(arg, &t.tid, t.key, d);
		}

		if (skip && e.key < hi)
		{
			UnlockReleaseBuffer(buf);
			CHECK_FOR_INTERRUPTS();
			search.key = e.key + 1;
			ItemPointerSet(&search.tid, 0, 0);
			buf = descend(index, table, &search, 0, BUFFER_LOCK_SHARE);
			continue;
		}
		if (skip || past_hi || PermPageIsRightmost(page) || opaque->hikey > hi)
			break;

		/* move right */
		{
			BlockNumber next = opaque->rightlink;

			search.key = opaque->hikey;
			search.tid = opaque->hikey_tid;
			UnlockReleaseBuffer(buf);
			CHECK_FOR_INTERRUPTS();
			buf = ReadBuffer(index, next);
			LockBuffer(buf, BUFFER_LOCK_SHARE);
		}
	}
	UnlockReleaseBuffer(buf);
}

/*
 * Insert one row's entries into its tables.  Tables are taken four at a
 * time (the most one generic WAL record can hold): their leaves are locked
 * in table order and, if all have room, the four appends are one record.
 * If one is full, those tables are inserted one by one, splitting as
 * needed.
 */
void
PermInsertRow(Relation index, int ntables, const PermKey *keys)
{
	int			first;

	for (first = 0; first < ntables; first += MAX_GENERIC_XLOG_PAGES)
	{
		int			n = Min(MAX_GENERIC_XLOG_PAGES, ntables - first);
		Buffer		bufs[MAX_GENERIC_XLOG_PAGES];
		bool		room = true;
		int			i;

		for (i = 0; i < n; i++)
		{
			bufs[i] = descend(index, first + i, &keys[first + i], 0,
							  BUFFER_LOCK_EXCLUSIVE);
			if (!PermLeafHasRoom(BufferGetPage(bufs[i]), &keys[first + i]))
			{
				room = false;
				i++;
				break;
			}
		}

		if (room)
		{
			LeafAppend	las[MAX_GENERIC_XLOG_PAGES];

			for (i = 0; i < n; i++)
				las[i].buf = bufs[i];
			leaves_append_logged(index, n, las, &keys[first]);
			for (i = 0; i < n; i++)
				UnlockReleaseBuffer(bufs[i]);
		}
		else
		{
			int			locked = i;

			for (i = 0; i < locked; i++)
				UnlockReleaseBuffer(bufs[i]);
			for (i = 0; i < n; i++)
				PermInsertEntry(index, first + i, &keys[first + i]);
		}
	}
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
