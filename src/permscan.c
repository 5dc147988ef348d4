/*-------------------------------------------------------------------------
 *
 * permscan.c
 *		simhash_perm: index scans (plain and bitmap).
 *
 * A scan key is "fp <@ simhash_within(q, r)".  For every table the scan
 * permutes q, then reads the prefix ranges that can hold a match: the
 * query's own prefix when r <= max_distance, and every prefix within s(r)
 * bits of it above that (README.perm, "Any radius").  When enumerating
 * those prefixes would cost more than reading one table whole, it reads one
 * table whole instead: each table holds every row, so that alone is exact.  Entries
 * are checked against the full distance in the index, so the heap sees
 * only true matches (no recheck).
 *
 * PermSearch() is the one place that turns a query into probes and
 * reports (TID, distance) pairs; gettuple collects and de-duplicates them
 * (a row can match in several tables), getbitmap adds them to the bitmap.
 * Ordered (nearest-first) scans can be built on the same primitive by
 * growing r.
 *
 * IDENTIFICATION
 *	  src/permscan.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relscan.h"
#include "miscadmin.h"
#include "nodes/tidbitmap.h"
#include "pgstat.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "perm.h"
#include "query.h"
#include "simhash.h"

typedef struct PermScanOpaqueData
{
	MemoryContext cxt;			/* holds the match list, reset on rescan */
	bool		searched;
	ItemPointerData *tids;
	int64		ntids;
	int64		maxtids;
	int64		next;
} PermScanOpaqueData;

typedef PermScanOpaqueData *PermScanOpaque;

/* One query as seen by one table */
typedef struct PermQuery
{
	uint64		center;
	int			radius;
	uint64		key[PERM_MAX_TABLES];	/* center permuted for each table */
} PermQuery;

/* State of one search, shared with the probe callback */
typedef struct PermSearchState
{
	PermQuery  *queries;		/* queries[0] drives the probes */
	int			nqueries;
	int			table;			/* table being probed */
	PermMatchCallback callback;
	void	   *arg;
} PermSearchState;

/*
 * Probe callback: apply the other scan keys, then pass the match on.
 * Called for every candidate, so compiled with POPCNT where it helps.
 */
SIMHASH_POPCNT
static void
search_match(void *arg, ItemPointer tid, uint64 key, int distance)
{
	PermSearchState *ss = (PermSearchState *) arg;
	int			i;

	for (i = 1; i < ss->nqueries; i++)
	{
		PermQuery  *q = &ss->queries[i];

		if (simhash_hamming(key, q->key[ss->table]) > q->radius)
			return;
	}
	ss->callback(ss->arg, tid, key, distance);
}

/* Probe every prefix within `flips` more bit flips of key, from bit `from` down */
static void
probe_neighbours(Relation index, PermSearchState *ss, int prefix_bits,
				 uint64 key, int from, int flips)
{
	PermQuery  *q = &ss->queries[0];
	uint64		low_mask = prefix_bits >= 64 ? 0 :
		(PG_UINT64_MAX >> prefix_bits);
	uint64		lo = key & ~low_mask;
	int			bit;

	PermProbeRange(index, ss->table, lo, lo | low_mask, q->key[ss->table],
				   q->radius, search_match, ss);
	if (flips == 0)
		return;
	/* flip one more prefix bit, below the last one flipped */
	for (bit = from; bit >= 64 - prefix_bits; bit--)
	{
		CHECK_FOR_INTERRUPTS();
		probe_neighbours(index, ss, prefix_bits, key ^ (UINT64CONST(1) << bit),
						 bit - 1, flips - 1);
	}
}

/*
 * Run the scan's keys against the index, reporting every (TID, distance) of
 * a row matching all keys; a row may be reported once per table.
 */
static void
PermSearch(IndexScanDesc scan, PermMatchCallback callback, void *arg)
{
	Relation	index = scan->indexRelation;
	PermState  *state = PermGetState(index);
	PermLayout *layout = &state->layout;
	PermSearchState ss;
	PermQuery  *queries;
	PermTable	tables[PERM_MAX_TABLES];
	int			ntables;
	int			spread;
	double		enum_cost = 0;
	double		whole_cost = 0;
	int			i,
				t;

	queries = palloc(scan->numberOfKeys * sizeof(PermQuery));
	for (i = 0; i < scan->numberOfKeys; i++)
	{
		ScanKey		sk = &scan->keyData[i];
		SimhashQuery *sq;

		/* simhash_within() is strict; a NULL query matches nothing */
		if (sk->sk_flags & SK_ISNULL)
			return;
		sq = DatumGetSimhashQuery(sk->sk_argument);
		queries[i].center = sq->center;
		queries[i].radius = sq->radius;
		for (t = 0; t < layout->ntables; t++)
			queries[i].key[t] = PermPermute(&state->perm[t], sq->center);
	}
	/* the tightest key drives the probes, the others filter */
	for (i = 1; i < scan->numberOfKeys; i++)
		if (queries[i].radius < queries[0].radius)
		{
			PermQuery	tmp = queries[0];

			queries[0] = queries[i];
			queries[i] = tmp;
		}

	ss.queries = queries;
	ss.nqueries = scan->numberOfKeys;
	ss.callback = callback;
	ss.arg = arg;

	spread = queries[0].radius <= layout->max_distance ? 0 :
		PermProbeSpread(layout->blocks, layout->max_distance, queries[0].radius);

	/*
	 * Above the design radius, compare the probes' cost (a descent each)
	 * with reading one table whole (its pages).
	 */
	if (spread > 0)
	{
		PermMetaSnapshot(index, tables, &ntables);
		for (t = 0; t < ntables; t++)
			enum_cost += simhash_count_within(layout->prefix_bits[t], spread) *
				(tables[t].root_level + 1);
		whole_cost = (double) RelationGetNumberOfBlocks(index) / ntables;
	}

	if (spread > 0 && enum_cost > whole_cost)
	{
		ss.table = 0;
		PermProbeRange(index, 0, 0, PG_UINT64_MAX, queries[0].key[0],
					   queries[0].radius, search_match, &ss);
	}
	else
	{
		for (t = 0; t < layout->ntables; t++)
		{
			ss.table = t;
			probe_neighbours(index, &ss, layout->prefix_bits[t],
							 queries[0].key[t], 63, spread);
		}
	}
	pfree(queries);
}

/* ambeginscan */
IndexScanDesc
permbeginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	PermScanOpaque so = palloc0(sizeof(PermScanOpaqueData));

	so->cxt = AllocSetContextCreate(CurrentMemoryContext,
									"simhash_perm scan",
									ALLOCSET_DEFAULT_SIZES);
	scan->opaque = so;
	return scan;
}

/* amrescan */
void
permrescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys,
		   int norderbys)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;

	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
	MemoryContextReset(so->cxt);
	so->searched = false;
	so->tids = NULL;
	so->ntids = so->maxtids = so->next = 0;
}

/* Callback of gettuple's search: remember the TID */
static void
collect_tid(void *arg, ItemPointer tid, uint64 key, int distance)
{
	PermScanOpaque so = (PermScanOpaque) arg;

	if (so->ntids == so->maxtids)
	{
		so->maxtids = Max(64, so->maxtids * 2);
		if (so->tids == NULL)
			so->tids = MemoryContextAllocHuge(so->cxt,
											  so->maxtids * sizeof(ItemPointerData));
		else
			so->tids = repalloc_huge(so->tids, so->maxtids * sizeof(ItemPointerData));
	}
	so->tids[so->ntids++] = *tid;
}

static int
compare_tids(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

/* amgettuple: all matches are found on the first call, then handed out */
bool
permgettuple(IndexScanDesc scan, ScanDirection dir)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;

	if (!so->searched)
	{
		int64		i,
					n = 0;

		/*
		 * Matches are copied out of the pages, which are not kept pinned; a
		 * TID recycled by VACUUM in the meantime is only safe to hand out
		 * under an MVCC snapshot (README.perm, "Locking").
		 */
		if (!IsMVCCSnapshot(scan->xs_snapshot))
			elog(ERROR, "simhash_perm index scans require an MVCC snapshot");

		PermSearch(scan, collect_tid, so);
		pgstat_count_index_scan(scan->indexRelation);

		/* a row matching in several tables is returned once */
		if (so->ntids > 1)
		{
			qsort(so->tids, so->ntids, sizeof(ItemPointerData), compare_tids);
			for (i = 0; i < so->ntids; i++)
				if (n == 0 || !ItemPointerEquals(&so->tids[n - 1], &so->tids[i]))
					so->tids[n++] = so->tids[i];
			so->ntids = n;
		}
		so->searched = true;
	}

	if (so->next < so->ntids)
	{
		scan->xs_heaptid = so->tids[so->next++];
		scan->xs_recheck = false;
		return true;
	}
	return false;
}

typedef struct BitmapState
{
	TIDBitmap  *tbm;
	int64		ntids;
} BitmapState;

/* Callback of getbitmap's search: add the TID (duplicates merge) */
static void
add_to_bitmap(void *arg, ItemPointer tid, uint64 key, int distance)
{
	BitmapState *bs = (BitmapState *) arg;

	tbm_add_tuples(bs->tbm, tid, 1, false);
	bs->ntids++;
}

/* amgetbitmap */
int64
permgetbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	BitmapState bs;

	bs.tbm = tbm;
	bs.ntids = 0;
	PermSearch(scan, add_to_bitmap, &bs);
	pgstat_count_index_scan(scan->indexRelation);
	return bs.ntids;
}

/* amendscan */
void
permendscan(IndexScanDesc scan)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;

	MemoryContextDelete(so->cxt);
	pfree(so);
}
