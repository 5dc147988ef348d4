/*-------------------------------------------------------------------------
 *
 * permtableknn.c
 *		simhash_perm: the nearest-neighbour scan (ORDER BY fp <-> q).
 *
 * An ordered scan grows the search ring by ring: ring sigma probes, in
 * every table, the prefixes exactly sigma bits from q's.  Once rings
 * 0..sigma are read, every row within R(sigma), the largest r with
 * s(r) <= sigma, has been seen, so the rows found at distances up to
 * R(sigma), and those found so far at R(sigma) + 1, are handed out, nearest
 * first, before ring sigma + 1 is read (README.perm, "Nearest neighbours").
 * A ring that would cost more than reading one table whole is replaced by
 * that read, which completes the ordering.
 *
 * A scan with neither quals nor ORDER BY (which the planner builds only
 * when sequential scans are disabled) is read here too, as ORDER BY
 * fp <-> NULL: one pass, then the rows with a NULL fingerprint.
 *
 * IDENTIFICATION
 *	  src/index/tables/permtableknn.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "index/perm.h"
#include "index/permscan.h"
#include "type/simhash.h"

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
	int64		distinct PG_USED_FOR_ASSERTS_ONLY;
	int64		nadded,
				i,
				j = 0,
				kept = 0;

	if (list->n == handed)
		return;					/* nothing new */
	out = list->tids;
	added = list->tids + handed;
	nadded = PermTidsSortUnique(added, list->n - handed);
	if (handed == 0)
	{
		list->n = nadded;
		return;
	}
	/* the handed-out ones' order no longer matters; they are distinct */
	distinct = PermTidsSortUnique(out, handed);
	Assert(distinct == handed);
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

/* The largest distance all of whose rows rings 0..ring have found */
static int
ring_complete_radius(PermLayout *layout, int ring)
{
	int			r = layout->max_distance;

	while (r < PERM_MAX_HAMMING &&
		   PermPrefixFlips(layout->blocks, layout->max_distance, r + 1) <= ring)
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
	PermTidListAdd(&so->found[distance], so->cxt, tid);
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
	/*
	 * The distance is exact, read from the key; the executor recomputes it
	 * all the same, so that a damaged key gives a row out of place rather
	 * than a wrong order (test 005), except on a table with row-level
	 * security for the caller: the executor would compute it before the
	 * row's security quals, passing rows the caller may not see to the
	 * index expression (README.perm, "Security").
	 */
	so->recheck_order = scan->heapRelation != NULL &&
		check_enable_rls(RelationGetRelid(scan->heapRelation), InvalidOid,
						 true) != RLS_ENABLED;
	/* no ORDER BY (a scan without quals either) is ORDER BY fp <-> NULL */
	so->order_null = scan->numberOfOrderBys == 0 ||
		(ok->sk_flags & SK_ISNULL) != 0;

	so->queries[0].center = so->order_null ? 0 :
		(uint64) DatumGetInt64(ok->sk_argument);
	so->queries[0].radius = PERM_MAX_HAMMING;
	for (t = 0; t < state->layout.ntables; t++)
		so->queries[0].key[t] = PermPermute(&state->perm[t],
											so->queries[0].center);

	if (so->qual_null)
	{
		so->cap = -1;			/* a NULL qual: nothing matches */
		return;
	}
	memcpy(&so->queries[1], so->quals, so->nquals * sizeof(PermQuery));
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
	 * With B = radius + 1 blocks (the default), each table's prefix is
	 * one block, and a ring is read a table at a time: each table completes
	 * one more distance, and a search whose n-th row lies there stops.
	 */
	bool		by_table = PermRingsByTable(layout);
	int			t;

	ss.state = state;
	ss.queries = so->queries;
	ss.nqueries = so->nqueries;
	ss.callback = collect_found;
	ss.arg = so;
	ss.pins = NULL;

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
			ring_cost += probes * PermProbePages(state, t,
												 tables[t].root_level);
		}
		if (ring_cost > PermLayoutPageCount(index) / ntables)
			whole = true;
	}

	if (whole)
	{
		int			bound = so->order_null ? PERM_MAX_HAMMING : pass_bound(index, so);

		ss.table = 0;
		PermProbeRange(state, 0, 0, PG_UINT64_MAX, so->queries[0].key[0], 0,
					   bound, PermSearchMatch, &ss, NULL);
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
		PermProbeNeighbours(index, &ss, layout->prefix_bits[ss.table], ring, true);
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
		PermProbeNeighbours(index, &ss, layout->prefix_bits[t], ring, true);
	}
	so->ring++;
	so->complete = Min(ring_complete_radius(layout, ring), so->ring_bound);
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
bool
PermKnnGettuple(IndexScanDesc scan)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;
	PermState  *state = ((PermScanOpaque) scan->opaque)->state;

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
		while (so->next < list->n)
		{
			ItemPointer tid = &list->tids[so->next++];

			if (!PermScanFirstHandout(so, tid))
				continue;
			scan->xs_heaptid = *tid;
			scan->xs_recheck = true;
			if (scan->numberOfOrderBys > 0)
			{
				scan->xs_orderbyvals[0] = Int32GetDatum(d);
				scan->xs_orderbynulls[0] = so->order_null;
				scan->xs_recheckorderby = so->recheck_order && !so->order_null;
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
	return PermScanNextNullRow(scan, so, true);
}
