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
 *
 * Ordered scans (ORDER BY fp <-> q) grow the search ring by ring: ring σ
 * probes, in every table, the prefixes exactly σ bits from q's.  Once rings
 * 0..σ are read, every row within R(σ), the largest r with s(r) <= σ, has
 * been seen, so the rows found at distances up to R(σ), and those found so
 * far at R(σ) + 1, are handed out, nearest first, before ring σ + 1 is read
 * (README.perm, "Nearest neighbours").  A ring that would cost more than
 * reading one table whole is replaced by that read, which completes the
 * ordering.
 *
 * IDENTIFICATION
 *	  src/permscan.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "miscadmin.h"
#include "nodes/tidbitmap.h"
#include "pgstat.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "perm.h"
#include "query.h"
#include "simhash.h"

/* A list of heap TIDs */
typedef struct PermTidList
{
	ItemPointerData *tids;
	int64		n;
	int64		max;
} PermTidList;

/* One query as seen by one table */
typedef struct PermQuery
{
	uint64		center;
	int			radius;
	uint64		key[PERM_MAX_TABLES];	/* center permuted for each table */
} PermQuery;

/* Largest Hamming distance, and the number of distinct distances */
#define PERM_MAX_HAMMING	64
#define PERM_NDISTANCES		(PERM_MAX_HAMMING + 1)

typedef struct PermScanOpaqueData
{
	MemoryContext cxt;			/* holds the match lists, reset on rescan */
	bool		searched;

	/* unordered scans: every match, handed out in TID order */
	PermTidList matches;
	int64		next;

	/*
	 * Ordered scans.  queries[0] is the ORDER BY query (its radius: the
	 * farthest row the current read files), the others the scan's quals.
	 * found[d] holds the rows seen so far at distance d; every row within
	 * `complete` has been seen, rows within `emitted` - 1 have been handed
	 * out, and none beyond `cap` can pass the quals.  Rings file only rows
	 * within `ring_bound`, so they complete no farther than it.
	 */
	PermQuery  *queries;
	int			nqueries;
	bool		order_null;		/* ORDER BY fp <-> NULL: no order at all */
	int			cap;
	int			complete;
	int			emitted;
	int			ring;			/* the next ring to read */
	int			ring_table;		/* its next table, when read table by table */
	int			ring_bound;		/* rings file rows this near; -1: not set */
	int			passes;			/* passes over one table whole so far */
	PermTidList found[PERM_NDISTANCES];
	bool		found_sorted[PERM_NDISTANCES];

	/* the rows whose fingerprint is NULL, handed out last */
	bool		nulls_read;
	PermTidList nulls;
} PermScanOpaqueData;

typedef PermScanOpaqueData *PermScanOpaque;

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

/* A growing list of prefixes to probe */
typedef struct PrefixList
{
	uint64	   *lo;
	int			n;
	int			max;
} PrefixList;

/*
 * Append the prefixes `flips` bits or fewer from key's (with `exact`, only
 * those exactly `flips` bits away, one ring of an ordered scan), in
 * increasing order, to list, which has room for them.  value holds the
 * bits above `bit` chosen so far and `flips` the differences still
 * allowed; bits below low_bit stay zero.  Each bit is chosen 0 before 1,
 * so the prefixes come out sorted, as PermProbeRanges takes them, without
 * a sort (which was a sixteenth of a random LIMIT 10 search's time).
 */
static void
add_neighbours(PrefixList *list, uint64 key, uint64 value, int bit, int low_bit,
			   int flips, bool exact)
{
	uint64		mask;

	if (bit < low_bit)
	{
		if (!exact || flips == 0)
			list->lo[list->n++] = value;
		return;
	}
	if (exact && flips > bit - low_bit + 1)
		return;					/* too few bits left to differ in */
	mask = UINT64CONST(1) << bit;
	if ((key & mask) == 0)
	{
		add_neighbours(list, key, value, bit - 1, low_bit, flips, exact);
		if (flips > 0)
			add_neighbours(list, key, value | mask, bit - 1, low_bit, flips - 1, exact);
	}
	else
	{
		if (flips > 0)
			add_neighbours(list, key, value, bit - 1, low_bit, flips - 1, exact);
		add_neighbours(list, key, value | mask, bit - 1, low_bit, flips, exact);
	}
}

/*
 * Probe, in table ss->table, every prefix within `flips` bits of the
 * driving query's (exactly `flips` with `exact`), in key order so that
 * prefixes sharing a leaf are read under one lock.
 */
static void
probe_neighbours(Relation index, PermSearchState *ss, int prefix_bits,
				 int flips, bool exact)
{
	PermQuery  *q = &ss->queries[0];
	uint64		low_mask = prefix_bits >= 64 ? 0 :
		(PG_UINT64_MAX >> prefix_bits);
	double		count;
	PrefixList	list = {0};

	count = simhash_count_within(prefix_bits, flips) -
		(exact ? simhash_count_within(prefix_bits, flips - 1) : 0);
	if (count < 1)
		return;
	if (count > (double) PG_INT32_MAX)
		elog(ERROR, "simhash_perm: %.0f prefixes to probe in one table", count);
	list.max = (int) rint(count);
	list.lo = palloc_extended(list.max * sizeof(uint64), MCXT_ALLOC_HUGE);
	add_neighbours(&list, q->key[ss->table] & ~low_mask, 0, 63,
				   64 - prefix_bits, flips, exact);
	Assert(list.n == list.max);
	PermProbeRanges(index, ss->table, list.lo, list.n, low_mask,
					q->key[ss->table], q->radius, search_match, ss);
	pfree(list.lo);
}

/*
 * The scan's quals as queries, each permuted for every table, into
 * queries[first ..]; false if one of them is NULL (then nothing matches).
 */
static bool
quals_to_queries(IndexScanDesc scan, PermState *state, PermQuery *queries,
				 int first)
{
	int			i,
				t;

	for (i = 0; i < scan->numberOfKeys; i++)
	{
		ScanKey		sk = &scan->keyData[i];
		SimhashQuery *sq;
		PermQuery  *q = &queries[first + i];

		/* simhash_within() is strict; a NULL query matches nothing */
		if (sk->sk_flags & SK_ISNULL)
			return false;
		sq = DatumGetSimhashQuery(sk->sk_argument);
		q->center = sq->center;
		q->radius = sq->radius;
		for (t = 0; t < state->layout.ntables; t++)
			q->key[t] = PermPermute(&state->perm[t], sq->center);
	}
	return true;
}

/*
 * Run the scan's keys against the index, reporting every (TID, distance) of
 * a row matching all keys; a row may be reported once per table.
 */
static void
search_queries(Relation index, PermQuery *queries, int nqueries,
			   PermMatchCallback callback, void *arg)
{
	PermState  *state = PermGetState(index);
	PermLayout *layout = &state->layout;
	PermSearchState ss;
	PermTable	tables[PERM_MAX_TABLES];
	int			ntables;
	int			spread;
	double		enum_cost = 0;
	double		whole_cost = 0;
	int			i,
				t;

	Assert(nqueries > 0);
	/* the tightest key drives the probes, the others filter */
	for (i = 1; i < nqueries; i++)
		if (queries[i].radius < queries[0].radius)
		{
			PermQuery	tmp = queries[0];

			queries[0] = queries[i];
			queries[i] = tmp;
		}

	ss.queries = queries;
	ss.nqueries = nqueries;
	ss.callback = callback;
	ss.arg = arg;

	spread = queries[0].radius <= layout->max_distance ? 0 :
		PermProbeSpread(layout->blocks, layout->max_distance, queries[0].radius);

	/*
	 * Above the design radius, compare the probes' cost (PermProbePages
	 * each) with reading one table whole (its pages).
	 */
	if (spread > 0)
	{
		PermMetaSnapshot(index, tables, &ntables);
		for (t = 0; t < ntables; t++)
			enum_cost += simhash_count_within(layout->prefix_bits[t], spread) *
				PermProbePages(index, t, tables[t].root_level);
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
			probe_neighbours(index, &ss, layout->prefix_bits[t], spread, false);
		}
	}
}

static void
PermSearch(IndexScanDesc scan, PermMatchCallback callback, void *arg)
{
	PermQuery  *queries;

	queries = palloc(scan->numberOfKeys * sizeof(PermQuery));
	if (quals_to_queries(scan, PermGetState(scan->indexRelation), queries, 0))
		search_queries(scan->indexRelation, queries, scan->numberOfKeys,
					   callback, arg);
	pfree(queries);
}

/* Append a TID to a list allocated in cxt */
static inline void
tid_list_add(PermTidList *list, MemoryContext cxt, ItemPointer tid)
{
	if (list->n == list->max)
	{
		list->max = Max(64, list->max * 2);
		if (list->tids == NULL)
			list->tids = MemoryContextAllocHuge(cxt,
												list->max * sizeof(ItemPointerData));
		else
			list->tids = repalloc_huge(list->tids,
									   list->max * sizeof(ItemPointerData));
	}
	list->tids[list->n++] = *tid;
}

static int
compare_tids(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

/* Sort n TIDs and drop repeats; returns how many are left */
static int64
tids_sort_unique(ItemPointer tids, int64 n)
{
	int64		i,
				kept = 0;

	if (n < 2)
		return n;
	qsort(tids, n, sizeof(ItemPointerData), compare_tids);
	for (i = 0; i < n; i++)
		if (kept == 0 || !ItemPointerEquals(&tids[kept - 1], &tids[i]))
			tids[kept++] = tids[i];
	return kept;
}

/* Sort a list in TID order and drop repeats (a row found in several tables) */
static void
tid_list_sort_unique(PermTidList *list)
{
	list->n = tids_sort_unique(list->tids, list->n);
}

/*
 * The list's first `handed` TIDs have been handed out, and TIDs found since
 * were appended after them: sort and de-duplicate the new ones, and drop
 * those already handed out (a row found again in another table), so that
 * [handed, n) holds the rows still to hand out, in TID order.
 */
static void
tid_list_merge_new(PermTidList *list, int64 handed)
{
	ItemPointer out,
				added;
	int64		nadded,
				i,
				j = 0,
				kept = 0;

	if (list->n == handed)
		return;					/* nothing new */
	out = list->tids;
	added = list->tids + handed;
	nadded = tids_sort_unique(added, list->n - handed);
	if (handed == 0)
	{
		list->n = nadded;
		return;
	}
	/* the handed-out ones' order no longer matters */
	qsort(out, handed, sizeof(ItemPointerData), compare_tids);
	for (i = 0; i < nadded; i++)
	{
		while (j < handed && ItemPointerCompare(&out[j], &added[i]) < 0)
			j++;
		if (j < handed && ItemPointerEquals(&out[j], &added[i]))
			continue;
		added[kept++] = added[i];
	}
	list->n = handed + kept;
}

/* Callback of PermCountWithin: collect the TIDs */
static void
count_collect(void *arg, ItemPointer tid, uint64 key, int distance)
{
	tid_list_add((PermTidList *) arg, CurrentMemoryContext, tid);
}

/*
 * For each of n fingerprints, how many entries of the index lie within k
 * of it, each row counted once though several tables find it: the sample
 * of a batch joined to the indexed table, for the join estimate of
 * hamming_near (simhash_support.c).  Costs one search of the index each.
 */
void
PermCountWithin(Relation index, const uint64 *centers, int n, int k,
				double *counts)
{
	PermState  *state = PermGetState(index);
	PermQuery	q;
	PermTidList found = {0};
	int			i,
				t;

	for (i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		q.center = centers[i];
		q.radius = k;
		for (t = 0; t < state->layout.ntables; t++)
			q.key[t] = PermPermute(&state->perm[t], centers[i]);
		found.n = 0;
		search_queries(index, &q, 1, count_collect, &found);
		tid_list_sort_unique(&found);
		counts[i] = (double) found.n;
	}
	if (found.tids)
		pfree(found.tids);
}

/*
 * Nearest-first scans
 */

/* The largest distance all of whose rows rings 0..ring have found */
static int
ring_complete_radius(PermLayout *layout, int ring)
{
	int			r = layout->max_distance;

	while (r < PERM_MAX_HAMMING &&
		   PermProbeSpread(layout->blocks, layout->max_distance, r + 1) <= ring)
		r++;
	return r;
}

/* Callback of an ordered scan's probes: file the row under its distance */
static void
collect_found(void *arg, ItemPointer tid, uint64 key, int distance)
{
	PermScanOpaque so = (PermScanOpaque) arg;

	/* rows within `complete` were all found by earlier rings */
	if (distance <= so->complete || distance > so->cap)
		return;
	tid_list_add(&so->found[distance], so->cxt, tid);
	so->found_sorted[distance] = false;
}

/*
 * Set up an ordered scan: the ORDER BY query, the quals, and the largest
 * distance a row passing the quals can have.  For a qual of radius k around
 * c, a row within k of c lies within k + d(c, q) of the ORDER BY query q.
 */
static void
order_begin(IndexScanDesc scan, PermState *state, PermScanOpaque so)
{
	ScanKey		ok = scan->orderByData;
	int			i,
				t;

	so->nqueries = 1 + scan->numberOfKeys;
	so->queries = MemoryContextAlloc(so->cxt, so->nqueries * sizeof(PermQuery));
	so->cap = PERM_MAX_HAMMING;
	so->complete = -1;
	so->emitted = 0;
	so->ring = 0;
	so->ring_table = 0;
	so->ring_bound = -1;
	/* no ORDER BY (a scan without quals either) is ORDER BY fp <-> NULL */
	so->order_null = scan->numberOfOrderBys == 0 ||
		(ok->sk_flags & SK_ISNULL) != 0;

	so->queries[0].center = so->order_null ? 0 :
		(uint64) DatumGetInt64(ok->sk_argument);
	so->queries[0].radius = PERM_MAX_HAMMING;
	for (t = 0; t < state->layout.ntables; t++)
		so->queries[0].key[t] = PermPermute(&state->perm[t],
											so->queries[0].center);

	if (!quals_to_queries(scan, state, so->queries, 1))
	{
		so->cap = -1;			/* a NULL qual: nothing matches */
		return;
	}
	if (so->order_null)
		return;
	for (i = 1; i < so->nqueries; i++)
	{
		int			bound = so->queries[i].radius +
			simhash_hamming(so->queries[i].center, so->queries[0].center);

		so->cap = Min(so->cap, bound);
	}
}

/* Rows a pass over one table whole should find before it stops filing */
#define PERM_PASS_TARGET_ROWS	1024.0

/*
 * The distance up to which a pass over one table whole files rows: far
 * enough to hold, for uniformly random fingerprints, PERM_PASS_TARGET_ROWS
 * (sixteen times more on each further pass) beyond those already handed
 * out.  Rows beyond it are not filed, since a LIMIT rarely reaches them; a
 * scan that does reach them makes another pass.
 */
static int
pass_bound(Relation index, PermScanOpaque so)
{
	double		rows = Max(index->rd_rel->reltuples, 1.0);
	double		want = PERM_PASS_TARGET_ROWS;
	int			i;

	for (i = 0; i < so->passes; i++)
		want *= 16;
	return Min(simhash_radius_holding(rows, want, so->complete + 1), so->cap);
}

/*
 * Read the next ring, or one table whole if that is cheaper than the ring,
 * and raise `complete` to what has now been read.
 */
static void
order_read_ring(IndexScanDesc scan, PermState *state, PermScanOpaque so)
{
	Relation	index = scan->indexRelation;
	PermLayout *layout = &state->layout;
	PermSearchState ss;
	PermTable	tables[PERM_MAX_TABLES];
	int			ntables;
	int			ring = so->ring;
	double		ring_cost = 0;
	bool		whole = so->order_null || so->passes > 0;

	/*
	 * With B = max_distance + 1 blocks (the default), each table's prefix is
	 * one block, and a ring is read a table at a time: each table completes
	 * one more distance, and a search whose n-th row lies there stops.
	 */
	bool		by_table = PermRingsByTable(layout);
	int			t;

	ss.queries = so->queries;
	ss.nqueries = so->nqueries;
	ss.callback = collect_found;
	ss.arg = so;

	/*
	 * Rings file only the rows within a bound that should hold about
	 * PERM_PASS_TARGET_ROWS rows: the nearest rows a LIMIT asks for are
	 * among them, and the others (most of a ring's entries, which share
	 * only a prefix with the query) cost a comparison instead of a TID
	 * decoded and filed.  Once rings have completed up to that bound they
	 * can go no further, and a pass over one table whole takes over.
	 */
	if (!whole && so->ring_bound < 0)
		so->ring_bound = pass_bound(index, so);
	if (!whole && so->complete >= so->ring_bound)
		whole = true;

	if (ring > 0 && !whole)
	{
		PermMetaSnapshot(index, tables, &ntables);
		for (t = by_table ? so->ring_table : 0;
			 t < (by_table ? so->ring_table + 1 : ntables); t++)
		{
			int			p = layout->prefix_bits[t];
			double		probes;

			/* a ring wider than a prefix has no prefixes: read it whole */
			if (ring > p)
				whole = true;
			probes = simhash_count_within(p, ring) -
				simhash_count_within(p, ring - 1);
			ring_cost += probes * PermProbePages(index, t, tables[t].root_level);
		}
		if (ring_cost > (double) RelationGetNumberOfBlocks(index) / ntables)
			whole = true;
	}

	if (whole)
	{
		int			bound = so->order_null ? PERM_MAX_HAMMING : pass_bound(index, so);

		ss.table = 0;
		PermProbeRange(index, 0, 0, PG_UINT64_MAX, so->queries[0].key[0],
					   bound, search_match, &ss);
		so->passes++;
		so->complete = bound;
		return;
	}
	so->queries[0].radius = so->ring_bound;
	if (by_table)
	{
		/*
		 * Each table's prefix is one block: ring sigma of tables 0 .. j - 1
		 * (after every table's rings below sigma) has seen every row whose
		 * B blocks do not all differ from the query's by sigma bits or more,
		 * with sigma + 1 or more in the first j: every row within B sigma +
		 * j - 1.
		 */
		ss.table = so->ring_table++;
		probe_neighbours(index, &ss, layout->prefix_bits[ss.table], ring, true);
		so->complete = Min(layout->blocks * ring + so->ring_table - 1,
						   so->ring_bound);
		if (so->ring_table == layout->ntables)
		{
			so->ring++;
			so->ring_table = 0;
		}
		return;
	}
	for (t = 0; t < layout->ntables; t++)
	{
		ss.table = t;
		probe_neighbours(index, &ss, layout->prefix_bits[t], ring, true);
	}
	so->ring++;
	so->complete = Min(ring_complete_radius(layout, ring), so->ring_bound);
}

/* table_index_build_scan callback: remember the rows with a NULL key */
static void
collect_null(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			 bool tupleIsAlive, void *state)
{
	PermScanOpaque so = (PermScanOpaque) state;

	if (isnull[0])
		tid_list_add(&so->nulls, so->cxt, tid);
}

/*
 * The index holds no entry for a row whose fingerprint is NULL, yet ORDER BY
 * fp <-> q returns such rows, last.  Once every indexed row has been handed
 * out, find them as CREATE INDEX would, by reading the table under the
 * scan's snapshot (index expressions and a partial index's predicate
 * evaluated as for a build; a HOT chain reported by its root TID).
 */
static void
order_read_nulls(IndexScanDesc scan, PermScanOpaque so)
{
	Relation	heap = scan->heapRelation;
	IndexInfo  *info;
	TableScanDesc tscan;

	/* a bitmap scan is not given the table; the executor has it locked */
	if (heap == NULL)
		heap = table_open(IndexGetRelation(RelationGetRelid(scan->indexRelation),
										   false), AccessShareLock);
	info = BuildIndexInfo(scan->indexRelation);
	tscan = table_beginscan_strat(heap, scan->xs_snapshot, 0, NULL,
								  true, true);
	/* ends tscan */
	table_index_build_scan(heap, scan->indexRelation, info, true, false,
						   collect_null, so, tscan);
	if (heap != scan->heapRelation)
		table_close(heap, AccessShareLock);
}

/*
 * amgettuple of an ordered scan: hand out the rows at distance `emitted`,
 * reading rings as needed; then, unless a qual excludes them, the rows with
 * a NULL fingerprint.
 *
 * The rows found at distance d can be handed out as soon as every row
 * within d - 1 has been seen: an unseen row is then at d or farther, so
 * none can come before them.  The rows at d still unseen are found by the
 * reads that complete d, which must come before any row at d + 1 is handed
 * out.  A LIMIT that is met at d thus usually stops one table (or one
 * ring) earlier than waiting for d to complete would: a random LIMIT 10
 * query whose tenth row lies at 15 reads ring 3 of three tables, not
 * four, and one whose tenth row lies at 16 no ring 4, unless the rows at
 * that distance found by then are too few.  Rows at d that were handed
 * out and are found again by those later reads, in another table, are
 * dropped then (tid_list_merge_new).
 *
 * No row at d is missed.  Every read files each row it meets within its
 * radius (rings: ring_bound; a pass: its bound), and complete never
 * exceeds that radius.  So once complete >= d, every row at d has been met
 * by reads whose radius reaches d (all rings share one radius, and a pass
 * meets every row) and filed; before that, found[d] may hold only some of
 * them, or none, and handing those out early changes nothing for the rest.
 */
static bool
order_gettuple(IndexScanDesc scan, PermScanOpaque so)
{
	PermState  *state = PermGetState(scan->indexRelation);

	if (!so->searched)
	{
		if (!IsMVCCSnapshot(scan->xs_snapshot))
			elog(ERROR, "simhash_perm index scans require an MVCC snapshot");
		order_begin(scan, state, so);
		pgstat_count_index_scan(scan->indexRelation);
		so->searched = true;
	}

	while (so->emitted <= so->cap)
	{
		int			d = so->emitted;
		PermTidList *list = &so->found[d];

		/*
		 * emitted moves past a distance only once it is complete (below),
		 * so every row nearer than d has been seen
		 */
		Assert(d <= so->complete + 1);
		if (!so->found_sorted[d])
		{
			/* so->next of them are out already */
			tid_list_merge_new(list, so->next);
			so->found_sorted[d] = true;
		}
		if (so->next < list->n)
		{
			scan->xs_heaptid = list->tids[so->next++];
			scan->xs_recheck = false;
			if (scan->numberOfOrderBys > 0)
			{
				scan->xs_orderbyvals[0] = Int32GetDatum(d);
				scan->xs_orderbynulls[0] = so->order_null;
				scan->xs_recheckorderby = false;
			}
			return true;
		}
		/* all found at d are out; the rows at d not yet seen come next */
		if (d > so->complete)
		{
			CHECK_FOR_INTERRUPTS();
			order_read_ring(scan, state, so);
			continue;
		}
		if (list->tids)
			pfree(list->tids);
		memset(list, 0, sizeof(*list));
		so->emitted++;
		so->next = 0;
	}

	/* a qual is strict: no row with a NULL fingerprint passes one */
	if (so->nqueries > 1)
		return false;
	if (!so->nulls_read)
	{
		order_read_nulls(scan, so);
		so->nulls_read = true;
		so->next = 0;
	}
	if (so->next < so->nulls.n)
	{
		scan->xs_heaptid = so->nulls.tids[so->next++];
		scan->xs_recheck = false;
		if (scan->numberOfOrderBys > 0)
		{
			scan->xs_orderbyvals[0] = (Datum) 0;
			scan->xs_orderbynulls[0] = true;
			scan->xs_recheckorderby = false;
		}
		return true;
	}
	return false;
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
	if (norderbys > 0)
	{
		scan->xs_orderbyvals = palloc0(norderbys * sizeof(Datum));
		scan->xs_orderbynulls = palloc(norderbys * sizeof(bool));
	}
	scan->opaque = so;
	return scan;
}

/* amrescan */
void
permrescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys,
		   int norderbys)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;
	MemoryContext cxt = so->cxt;

	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
	if (orderbys && scan->numberOfOrderBys > 0)
		memmove(scan->orderByData, orderbys,
				scan->numberOfOrderBys * sizeof(ScanKeyData));
	MemoryContextReset(cxt);
	memset(so, 0, sizeof(*so));
	so->cxt = cxt;
}

/* Callback of gettuple's search: remember the TID */
static void
collect_tid(void *arg, ItemPointer tid, uint64 key, int distance)
{
	PermScanOpaque so = (PermScanOpaque) arg;

	tid_list_add(&so->matches, so->cxt, tid);
}

/*
 * amgettuple: all matches are found on the first call, then handed out.
 *
 * The index cannot return fingerprints (no amcanreturn), so the planner
 * builds an index-only scan on it only when the query needs no column at
 * all (count(*) over a scan without qual); such a scan still wants an index
 * tuple, and gets one whose column is NULL.
 */
bool
permgettuple(IndexScanDesc scan, ScanDirection dir)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;

	if (scan->xs_want_itup && scan->xs_itup == NULL)
	{
		/* in the scan's context, which outlives rescans */
		MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(so));
		Datum		value = (Datum) 0;
		bool		isnull = true;

		scan->xs_itupdesc = RelationGetDescr(scan->indexRelation);
		scan->xs_itup = index_form_tuple(scan->xs_itupdesc, &value, &isnull);
		MemoryContextSwitchTo(old);
	}

	/* nearest first; or, with neither quals nor ORDER BY, every row */
	if (scan->numberOfOrderBys > 0 || scan->numberOfKeys == 0)
		return order_gettuple(scan, so);

	if (!so->searched)
	{
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
		tid_list_sort_unique(&so->matches);
		so->searched = true;
	}

	if (so->next < so->matches.n)
	{
		scan->xs_heaptid = so->matches.tids[so->next++];
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
	if (scan->numberOfKeys == 0)
	{
		/* no qual: every row, the NULL ones included */
		PermScanOpaque so = (PermScanOpaque) scan->opaque;
		PermSearchState ss;
		PermQuery	all;

		all.center = 0;
		all.radius = PERM_MAX_HAMMING;
		ss.queries = &all;
		ss.nqueries = 1;
		ss.table = 0;
		ss.callback = add_to_bitmap;
		ss.arg = &bs;
		PermProbeRange(scan->indexRelation, 0, 0, PG_UINT64_MAX, 0,
					   PERM_MAX_HAMMING, search_match, &ss);
		order_read_nulls(scan, so);
		tbm_add_tuples(tbm, so->nulls.tids, (int) so->nulls.n, false);
		bs.ntids += so->nulls.n;
	}
	else
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
