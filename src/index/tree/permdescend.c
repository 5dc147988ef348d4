/*-------------------------------------------------------------------------
 *
 * permdescend.c
 *		simhash_perm: reading a table's tree.  Descending to the page that
 *		owns a key (through the per-backend leaf maps where they help), and
 *		probing a prefix range of a table.
 *
 * Readers hold one share lock at a time and never keep a position inside
 * a page after releasing it; a page that split under a reader is caught up
 * with by moving right (Lehman and Yao).  See README.perm, "Locking".
 *
 * IDENTIFICATION
 *	  src/index/tree/permdescend.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "index/perm.h"
#include "index/tree/permleaf.h"

/* Right-moves after which a leaf map is considered stale */
#define LEAF_MAP_MAX_MOVES	2

/*
 * Descents of a table in this backend before its leaf map is built: a
 * connection that runs one query pays a few descents, not the reading of
 * every level-1 page (hundreds at a hundred million rows).
 */
#define LEAF_MAP_AFTER_DESCENTS	32

/* Memory of a map of n leaves */
#define LEAF_MAP_BYTES(n) \
	((int64) (n) * (int64) (sizeof(KeyTid) + sizeof(BlockNumber) + sizeof(Buffer) + \
							sizeof(int)))

/* simhash.leaf_map_memory: kB the leaf maps of one index may use, per backend */
int			perm_leaf_map_memory = PERM_DEFAULT_LEAF_MAP_MEMORY;

/*
 * A leaf reached for key must not begin above it.  A descent lands on the
 * page that owns key or on one to its left, and moves right from there; a
 * damaged downlink or right-link that leads too far right would otherwise
 * make every key between key and the leaf's low key silently unreachable
 * (a pass over a table whole, which starts at key 0, would miss them all).
 * A leaf's low key never changes once it is written, so a leaf map built
 * before the leaf split is still right about it.
 */
static void
check_leaf_reached(Relation index, Buffer buf, const KeyTid *key)
{
	PermPageOpaque opaque = PermPageGetOpaque(BufferGetPage(buf));

	if (opaque->level == 0 && key->key < opaque->lokey)
		PermReportCorruption(index, BufferGetBlockNumber(buf),
							 psprintf("A search for key %016llX reached this leaf, whose low key is %016llX: a downlink or a right-link leads past the leaf that owns the key.",
									  (unsigned long long) key->key,
									  (unsigned long long) opaque->lokey));
}

/* The leftmost page of a level (level <= the root's), share-locked */
Buffer
PermLeftmostPage(PermState *state, int table, int target_level)
{
	Relation	index = state->index;
	int			level;
	BlockNumber blkno = PermGetRoot(state, table, target_level, &level);
	BlockNumber from = InvalidBlockNumber;
	Buffer		buf;

	for (;;)
	{
		KeyTid		k;

		buf = PermReadPage(state, from, blkno, BUFFER_LOCK_SHARE, table,
						   level);
		if (level == target_level)
		{
			/* the leftmost leaf starts at key 0: nothing lies left of it */
			check_leaf_reached(index, buf, &PermMinKey);
			return buf;
		}
		from = blkno;
		PermReadInternalEntry(BufferGetPage(buf), 0, &k, &blkno);
		UnlockReleaseBuffer(buf);
		level--;
	}
}

/* Free a leaf map */
static void
free_leaf_map(PermState *state, PermLeafMap *map)
{
	state->leafmap_bytes -= LEAF_MAP_BYTES(map->nleaves);
	if (map->lowkeys)
		pfree(map->lowkeys);
	if (map->blocks)
		pfree(map->blocks);
	if (map->recent)
		pfree(map->recent);
	if (map->guide)
		pfree(map->guide);
	pfree(map);
}

/*
 * The map's guide (PermLeafMap): at most one bucket per leaf, each of
 * 2^guide_shift keys from the lowest leaf's low key, the fewest that cover
 * every low key.  Maps of fewer than four leaves are searched without.
 */
static void
build_guide(PermState *state, PermLeafMap *map)
{
	uint64		span;
	int			shift = 0;
	int			b,
				i;

	if (map->nleaves < 4)
		return;
	map->guide_base = map->lowkeys[1].key;
	span = map->lowkeys[map->nleaves - 1].key - map->guide_base;
	while ((span >> shift) >= (uint64) map->nleaves)
		shift++;
	map->guide_shift = shift;
	map->nguide = (int) (span >> shift) + 1;
	map->guide = MemoryContextAlloc(state->cxt,
									(map->nguide + 1) * sizeof(int));
	i = 1;
	for (b = 0; b < map->nguide; b++)
	{
		/* the first leaf whose low key lies in bucket b or above */
		while (i < map->nleaves &&
			   ((map->lowkeys[i].key - map->guide_base) >> shift) < (uint64) b)
			i++;
		map->guide[b] = i;
	}
	map->guide[map->nguide] = map->nleaves;
}

/*
 * Read the leaves of a table, in order, into a new map: every downlink of
 * level 1.  A table of more than PERM_LEAF_MAP_MAX leaves, or whose map
 * would take the index's maps past simhash.leaf_map_memory, gets an empty
 * map (nleaves = 0): descents then go the usual way.
 */
static PermLeafMap *
build_leaf_map(PermState *state, int table)
{
	PermLeafMap *map;
	int			level;
	BlockNumber blkno;
	Buffer		buf;
	int			cap = 1024;
	int64		steps = 0;

	map = MemoryContextAllocZero(state->cxt, sizeof(PermLeafMap));

	/* a fresh root: the map is only as good as the level it is read from */
	state->root_level[table] = -1;
	blkno = PermGetRoot(state, table, 0, &level);
	if (level == 0)
	{
		map->nleaves = 1;
		map->lowkeys = MemoryContextAlloc(state->cxt, sizeof(KeyTid));
		map->blocks = MemoryContextAlloc(state->cxt, sizeof(BlockNumber));
		map->recent = MemoryContextAllocZero(state->cxt, sizeof(Buffer));
		map->lowkeys[0] = PermMinKey;
		map->blocks[0] = blkno;
		return map;
	}

	map->lowkeys = MemoryContextAlloc(state->cxt, cap * sizeof(KeyTid));
	map->blocks = MemoryContextAlloc(state->cxt, cap * sizeof(BlockNumber));
	buf = PermLeftmostPage(state, table, 1);
	for (;;)
	{
		Page		page = BufferGetPage(buf);
		PermPageOpaque opaque = PermPageGetOpaque(page);
		int			i;

		if (map->nleaves + opaque->nentries > PERM_LEAF_MAP_MAX ||
			state->leafmap_bytes + LEAF_MAP_BYTES(map->nleaves + opaque->nentries) >
			(int64) perm_leaf_map_memory * 1024)
		{
			/* too big to keep per backend */
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
			map->lowkeys = repalloc(map->lowkeys, cap * sizeof(KeyTid));
			map->blocks = repalloc(map->blocks, cap * sizeof(BlockNumber));
		}
		for (i = 0; i < opaque->nentries; i++)
		{
			PermReadInternalEntry(page, i, &map->lowkeys[map->nleaves],
								  &map->blocks[map->nleaves]);
			map->nleaves++;
		}
		if (PermPageIsRightmost(page))
			break;
		buf = PermStepRight(state, buf, BUFFER_LOCK_SHARE, &steps);
	}
	UnlockReleaseBuffer(buf);
	if (map->nleaves > 0)
		map->lowkeys[0] = PermMinKey;
	map->recent = MemoryContextAllocZero(state->cxt,
										 Max(map->nleaves, 1) * sizeof(Buffer));
	build_guide(state, map);
	state->leafmap_bytes += LEAF_MAP_BYTES(map->nleaves);
	return map;
}

/*
 * What one probe of a table costs, in pages of a pass over one table whole.
 * Through a leaf map a probe reads one leaf from the key's place: about a
 * third of the time a pass spends on one leaf (0.55 us against 2.0 us,
 * measured at a million rows: docs/reports/knn_bench.md, "A probe against a
 * pass").  Without one it descends from the root.  A table is expected to have a map if this backend has
 * built one, or, before it has, if the index's leaves (estimated from its
 * size) would fit simhash.leaf_map_memory: the map is built after the first
 * LEAF_MAP_AFTER_DESCENTS descents, so a ring of hundreds of probes is
 * mostly read through it.  Scans weigh their probes with this against a
 * pass (permtablescan.c, permtableknn.c), and the planner does the same
 * (permcost.c).
 */
double
PermProbePages(PermState *state, int table, int root_level)
{
	Relation	index = state->index;
	PermLeafMap *map = state->leafmap[table];
	bool		mapped;

	if (map != NULL && !map->stale)
		mapped = map->nleaves > 0;
	else
	{
		double		leaves = (double) RelationGetNumberOfBlocks(index);

		mapped = leaves / state->layout.ntables <= PERM_LEAF_MAP_MAX &&
			LEAF_MAP_BYTES(leaves) <= (double) perm_leaf_map_memory * 1024.0;
	}
	return mapped ? 1.0 / 3.0 : root_level + 1;
}

/* The map's entry of the leaf to start from for key (see PermLeafMap) */
static int
leaf_map_lookup(PermLeafMap *map, const KeyTid *key)
{
	int			lo = 1,
				hi = map->nleaves - 1,
				found = 0;

	if (map->guide != NULL)
	{
		uint64		b;

		if (key->key < map->guide_base)
			return 0;			/* below every leaf's low key but the first */
		b = Min((key->key - map->guide_base) >> map->guide_shift,
				(uint64) map->nguide - 1);

		/*
		 * Leaves before guide[b] begin below the key's bucket, so below the
		 * key; leaves from guide[b + 1] on begin above the bucket, so above
		 * it (the last bucket's bound is nleaves).
		 */
		lo = map->guide[b];
		hi = map->guide[b + 1] - 1;
		found = lo - 1;
	}

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
	return found;
}

/*
 * Ask the CPU to bring in the leaf that the table's leaf map names for key,
 * as last read (its buffer descriptor, page header and special space), so
 * that an insert's descents to its tables' leaves, which come one after the
 * other, do not each wait for memory in turn: in an index much larger than
 * the CPU's caches these misses were the largest cost of a row inserted
 * (a third of it past half a million bit(256) rows).  Only a hint: nothing is
 * pinned or read, and a buffer that holds another page by now costs a
 * wasted prefetch; the descent itself checks everything as before.
 */
void
PermPrefetchLeaf(PermState *state, int table, const KeyTid *key)
{
#ifdef __GNUC__
	PermLeafMap *map = state->leafmap[table];
	Buffer		recent;
	const char *page;

	if (map == NULL || map->stale || map->nleaves == 0)
		return;
	recent = map->recent[leaf_map_lookup(map, key)];
	if (recent <= 0 || recent > NBuffers)
		return;					/* none yet, or a local buffer */
	page = BufferBlocks + (Size) (recent - 1) * BLCKSZ;
	__builtin_prefetch(GetBufferDescriptor(recent - 1));
	__builtin_prefetch(page);
	__builtin_prefetch(page + BLCKSZ - MAXALIGN(sizeof(PermPageOpaqueData)));
#else
	(void) state;
	(void) table;
	(void) key;
#endif
}

/*
 * Starting from the page locked in buf (in lockmode), move right while key
 * is beyond the page's high key; returns the page that owns key, locked the
 * same way.  *moves counts the steps.
 */
static Buffer
move_right(PermState *state, Buffer buf, const KeyTid *key, int lockmode,
		   int64 *moves)
{
	while (PermPageBeyondHighKey(BufferGetPage(buf), key))
		buf = PermStepRight(state, buf, lockmode, moves);
	return buf;
}

/*
 * Descend to the leaf that owns key through the table's leaf map, and
 * return it pinned and locked in lockmode; InvalidBuffer if there is no
 * usable map.
 */
static Buffer
descend_by_map(PermState *state, int table,
			   const KeyTid *key, int lockmode)
{
	Relation	index = state->index;
	PermLeafMap *map = state->leafmap[table];
	Buffer		buf;
	int64		moves = 0;
	int			i;

	if (map == NULL && ++state->descents[table] <= LEAF_MAP_AFTER_DESCENTS)
		return InvalidBuffer;
	if (map == NULL || map->stale)
	{
		if (map != NULL)
			free_leaf_map(state, map);
		map = state->leafmap[table] = build_leaf_map(state, table);
	}
	if (map->nleaves == 0)
		return InvalidBuffer;

	i = leaf_map_lookup(map, key);
	buf = PermReadPageRecent(state, map->blocks[i], &map->recent[i],
							 lockmode, table, 0);
	buf = move_right(state, buf, key, lockmode, &moves);
	check_leaf_reached(index, buf, key);
	if (moves > LEAF_MAP_MAX_MOVES)
		map->stale = true;
	return buf;
}

/* The downlink of an internal page to follow for key */
static BlockNumber
choose_child(Page page, const KeyTid *key)
{
	int			slot = PermPageLowerBound(page, key);
	KeyTid		sep;
	BlockNumber child;

	/* the last downlink whose separator is <= key; slot 0 is -infinity */
	if (slot < PermPageGetOpaque(page)->nentries)
	{
		PermPageReadKey(page, slot, &sep);
		if (PermCompareKeys(&sep, key) > 0)
			slot--;
	}
	else
		slot--;
	if (slot < 0)
		slot = 0;
	PermReadInternalEntry(page, slot, &sep, &child);
	return child;
}

/*
 * Descend a table's tree to the page at target_level that owns key, and
 * return it pinned and locked in lockmode (pages above are only share
 * locked, one at a time).  Follows right-links past pages that split after
 * their downlink was read.
 */
Buffer
PermDescend(PermState *state, int table, const KeyTid *key, int target_level,
			int lockmode)
{
	Relation	index = state->index;
	int			level;
	BlockNumber blkno;
	BlockNumber from = InvalidBlockNumber;
	Buffer		buf;
	int64		moves = 0;

	if (target_level == 0)
	{
		buf = descend_by_map(state, table, key, lockmode);
		if (BufferIsValid(buf))
			return buf;
	}
	blkno = PermGetRoot(state, table, target_level, &level);
	if (level < target_level)
		elog(ERROR, "simhash_perm table %d of index \"%s\" has no level %d",
			 table, RelationGetRelationName(index), target_level);

	for (;;)
	{
		int			mode = (level == target_level) ? lockmode : BUFFER_LOCK_SHARE;
		Page		page;

		/* each level one below the last: the loop ends at target_level */
		buf = PermReadPage(state, from, blkno, mode, table, level);
		buf = move_right(state, buf, key, mode, &moves);
		if (level == target_level)
		{
			check_leaf_reached(index, buf, key);
			return buf;
		}
		page = BufferGetPage(buf);
		from = BufferGetBlockNumber(buf);
		blkno = choose_child(page, key);
		UnlockReleaseBuffer(buf);
		level--;
	}
}

/*
 * Keep buf pinned (an extra pin, beyond the one its reader releases) until
 * PermReleasePins; the leaves of one probe come in order, so a leaf read
 * twice in a row is pinned once.
 */
static void
keep_pin(PermPinList *pins, Buffer buf)
{
	if (pins->n > 0 && pins->bufs[pins->n - 1] == buf)
		return;
	if (pins->n == pins->max)
	{
		pins->max = Max(8, pins->max * 2);
		pins->bufs = pins->bufs == NULL ?
			MemoryContextAlloc(pins->cxt, pins->max * sizeof(Buffer)) :
			repalloc(pins->bufs, pins->max * sizeof(Buffer));
	}
	IncrBufferRefCount(buf);
	pins->bufs[pins->n++] = buf;
}

/* Drop the pins keep_pin took */
void
PermReleasePins(PermPinList *pins)
{
	int			i;

	for (i = 0; i < pins->n; i++)
		ReleaseBuffer(pins->bufs[i]);
	pins->n = 0;
}

/*
 * Report the entries of a table whose key lies in [lo, hi] and is within
 * max_distance bits of query_key, starting on buf, a share-locked leaf that
 * holds lo's place (or InvalidBuffer: descend to it).  Each leaf is read
 * whole under its share lock (its sorted part from the first key in range,
 * then its unsorted tail) and released before the next is locked; matches
 * are reported while the lock is held, so the callback must not do I/O or
 * take locks.  Returns the share-locked leaf where the range ended.  With
 * pins, every leaf that reported an entry stays pinned after it is left.
 *
 * A run of entries with one key that is too far away and continues onto
 * the next page (thousands of rows sharing a fingerprint) is skipped by
 * descending again to the next key rather than reading it.
 */
static Buffer
probe_range(PermState *state, int table, Buffer buf, uint64 lo, uint64 hi,
			uint64 query_key, uint16 query_extra, int max_distance,
			PermMatchCallback callback, void *arg, PermPinList *pins)
{
	Relation	index = state->index;
	KeyTid		search;
	int64		steps = 0;

	search.key = lo;
	ItemPointerSet(&search.tid, 0, 0);
	if (!BufferIsValid(buf))
		buf = PermDescend(state, table, &search, 0, BUFFER_LOCK_SHARE);

	for (;;)
	{
		Page		page = BufferGetPage(buf);
		PermPageOpaque opaque = PermPageGetOpaque(page);
		PermLeafProbeResult probe;

		PermLeafProbe(page, &search, lo, hi, query_key, query_extra,
					  max_distance, callback, arg, &probe);
		if (pins != NULL && probe.reported > 0)
			keep_pin(pins, buf);

		if (probe.skip && probe.last_key < hi)
		{
			BlockNumber blkno = BufferGetBlockNumber(buf);

			/* the run's key lies ahead of the search, or the page lies */
			if (probe.last_key < search.key)
				PermReportCorruption(index, blkno,
									 "Its entries are not in key order.");
			UnlockReleaseBuffer(buf);
			PermCountStep(state, blkno, &steps);
			CHECK_FOR_INTERRUPTS();
			search.key = probe.last_key + 1;
			ItemPointerSet(&search.tid, 0, 0);
			buf = PermDescend(state, table, &search, 0, BUFFER_LOCK_SHARE);
			continue;
		}
		if (probe.skip || probe.past_hi || PermPageIsRightmost(page) ||
			opaque->hikey > hi)
			return buf;

		/* move right */
		search.key = opaque->hikey;
		search.tid = opaque->hikey_tid;
		buf = PermStepRight(state, buf, BUFFER_LOCK_SHARE, &steps);
	}
}

/* Report every entry of a table in [lo, hi] within max_distance of query_key */
void
PermProbeRange(PermState *state, int table, uint64 lo, uint64 hi,
			   uint64 query_key, uint16 query_extra, int max_distance,
			   PermMatchCallback callback, void *arg, PermPinList *pins)
{
	UnlockReleaseBuffer(probe_range(state, table, InvalidBuffer, lo, hi,
									query_key, query_extra, max_distance,
									callback, arg, pins));
}

/*
 * PermProbeRange for n ranges [lo[i], lo[i] | low_mask], ascending and
 * disjoint.  A range that starts on the leaf where the previous one ended
 * is read from that leaf, still locked, without descending again: the
 * prefixes of one ring of a nearest-neighbour search often share leaves.
 */
void
PermProbeRanges(PermState *state, int table, const uint64 *lo, int n,
				uint64 low_mask, uint64 query_key, uint16 query_extra,
				int max_distance, PermMatchCallback callback, void *arg,
				PermPinList *pins)
{
	Buffer		buf = InvalidBuffer;
	int			i;

	for (i = 0; i < n; i++)
	{
		KeyTid		search;

		Assert(i == 0 || lo[i] > (lo[i - 1] | low_mask));
		search.key = lo[i];
		ItemPointerSet(&search.tid, 0, 0);
		if (BufferIsValid(buf) &&
			PermPageBeyondHighKey(BufferGetPage(buf), &search))
		{
			UnlockReleaseBuffer(buf);
			buf = InvalidBuffer;
			CHECK_FOR_INTERRUPTS();
		}
		buf = probe_range(state, table, buf, lo[i], lo[i] | low_mask,
						  query_key, query_extra, max_distance, callback,
						  arg, pins);
	}
	if (BufferIsValid(buf))
		UnlockReleaseBuffer(buf);
}
