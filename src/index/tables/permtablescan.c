/*-------------------------------------------------------------------------
 *
 * permtablescan.c
 *		simhash_perm: queries into prefix probes.
 *
 * A scan key is "fp <@ simhash_within(q, r)".  For every table the scan
 * permutes q, then reads the prefix ranges that can hold a match: the
 * query's own prefix when r <= max_distance, and every prefix within s(r)
 * bits of it above that (README.perm, "Any radius").  When enumerating
 * those prefixes would cost more than reading one table whole, it reads one
 * table whole instead: each table holds every row, so that alone is exact.
 * Entries are checked against the full distance in the index, so the heap
 * sees only true matches (no recheck).
 *
 * PermSearch() is the one place that turns a scan's quals into probes and
 * reports (TID, distance) pairs; PermProbeNeighbours() probes the prefixes
 * of one ring for ordered scans (permtableknn.c).  Also here: the lists of
 * heap TIDs the scans collect, and PermCountWithin() for join estimates.
 *
 * IDENTIFICATION
 *	  src/index/tables/permtablescan.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/relscan.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "index/perm.h"
#include "index/permscan.h"
#include "type/simhash_query.h"
#include "type/simhash.h"

/*
 * Probe callback: apply the other scan keys, then pass the match on.
 * Called for every candidate, so compiled with POPCNT where it helps.
 */
SIMHASH_POPCNT
void
PermSearchMatch(void *arg, ItemPointer tid, uint64 key, int distance)
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

/*
 * Probe, in table ss->table, every prefix within `flips` bits of the
 * driving query's (exactly `flips` with `exact`), in key order so that
 * prefixes sharing a leaf are read under one lock.
 */
void
PermProbeNeighbours(Relation index, PermSearchState *ss, int prefix_bits,
				 int flips, bool exact)
{
	PermState  *state = ss->state;
	PermQuery  *q = &ss->queries[0];
	uint64		low_mask = prefix_bits >= 64 ? 0 :
		(PG_UINT64_MAX >> prefix_bits);
	double		count;
	uint64	   *lo;
	int64		n;

	count = simhash_count_within(prefix_bits, flips) -
		(exact ? simhash_count_within(prefix_bits, flips - 1) : 0);
	if (count < 1)
		return;
	if (count > (double) PG_INT32_MAX)
		elog(ERROR, "simhash_perm: %.0f prefixes to probe in one table", count);
	lo = palloc_extended((Size) rint(count) * sizeof(uint64), MCXT_ALLOC_HUGE);
	n = PermNeighbourKeys(q->key[ss->table] & ~low_mask, 63, 64 - prefix_bits,
						  flips, exact, lo);
	Assert(n == (int64) rint(count));
	PermProbeRanges(state, ss->table, lo, (int) n, low_mask,
					q->key[ss->table], 0, q->radius, PermSearchMatch, ss,
					ss->pins);
	pfree(lo);
}

/*
 * The scan's quals as queries, each permuted for every table, into
 * queries[first ..]; false if one of them is NULL (then nothing matches).
 */
bool
PermQualsToQueries(IndexScanDesc scan, PermState *state, PermQuery *queries,
				 int first)
{
	int			i,
				t;

	for (i = 0; i < scan->numberOfKeys; i++)
	{
		ScanKey		sk = &scan->keyData[i];
		PermQuery  *q = &queries[first + i];

		/* simhash_within() and ~= are strict; NULL matches nothing */
		if (sk->sk_flags & SK_ISNULL)
			return false;
		if (sk->sk_strategy == PERM_NEAR_DUP_STRATEGY)
		{
			/* fp ~= v: the constraint's radius (permconstraint.c) */
			q->center = DatumGetUInt64(sk->sk_argument);
			q->radius = PermConstraintRadius(scan, state);
		}
		else if (sk->sk_strategy == PERM_EQUAL_STRATEGY)
		{
			/* fp = v on a bigint code (its family's =): radius 0 */
			q->center = PermEqualityValue(sk);
			q->radius = 0;
		}
		else
		{
			SimhashQuery *sq = DatumGetSimhashQuery(sk->sk_argument);

			q->center = sq->center;
			q->radius = sq->radius;
		}
		for (t = 0; t < state->layout.ntables; t++)
			q->key[t] = PermPermute(&state->perm[t], q->center);
	}
	return true;
}

/*
 * Run the scan's keys against the index, reporting every (TID, distance) of
 * a row matching all keys; a row may be reported once per table.
 */
static void
search_queries(PermState *state, PermQuery *queries,
			   int nqueries, PermMatchCallback callback, void *arg,
			   PermPinList *pins)
{
	Relation	index = state->index;
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

	ss.state = state;
	ss.queries = queries;
	ss.nqueries = nqueries;
	ss.callback = callback;
	ss.arg = arg;
	ss.pins = pins;

	spread = queries[0].radius <= layout->max_distance ? 0 :
		PermPrefixFlips(layout->blocks, layout->max_distance, queries[0].radius);

	/*
	 * Above the design radius, compare the probes' cost (PermProbePages
	 * each) with reading one table whole (its pages).
	 */
	if (spread > 0)
	{
		PermMetaSnapshot(index, tables, &ntables);
		for (t = 0; t < ntables; t++)
			enum_cost += simhash_count_within(layout->prefix_bits[t], spread) *
				PermProbePages(state, t, tables[t].root_level);
		whole_cost = PermLayoutPageCount(index) / ntables;
	}

	if (spread > 0 && enum_cost > whole_cost)
	{
		ss.table = 0;
		PermProbeRange(state, 0, 0, PG_UINT64_MAX, queries[0].key[0], 0,
					   queries[0].radius, PermSearchMatch, &ss, pins);
	}
	else
	{
		for (t = 0; t < layout->ntables; t++)
		{
			ss.table = t;
			PermProbeNeighbours(index, &ss, layout->prefix_bits[t], spread, false);
		}
	}
}

void
PermSearch(IndexScanDesc scan, PermMatchCallback callback, void *arg,
		   PermPinList *pins)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;

	/* the quals as the rescan prepared them (permtables.c) */
	if (!so->qual_null)
		search_queries(so->state, so->quals, so->nquals,
					   callback, arg, pins);
}

/*
 * An exclusion constraint's check on 64-bit fingerprints, from the index's
 * pages alone.  A match's key is its fingerprint, permuted: its distance
 * from the new row's is exact, and the check need not read the row (which
 * would compute the owner's index expression on a row the inserting role
 * may not see; README.perm, "Security").  A key damaged in one table (a bit
 * flipped, which no page check sees) could still make an innocent row
 * conflict; so a match counts only when a second table holds the same
 * fingerprint for the same TID.  Damage in one table then at worst hides a
 * row from the check, as before.
 */
typedef struct CheckMatch
{
	ItemPointerData tid;
	int			table;			/* the table it was found in */
	uint64		fp;				/* its fingerprint, from that table's key */
} CheckMatch;

typedef struct CheckSearch
{
	PermSearchState *ss;		/* the probe: which table is being read */
	const PermLayout *layout;
	CheckMatch *matches;
	int64		n;
	int64		max;
} CheckSearch;

/* A table's key back to its fingerprint: the permutation undone */
static uint64
unpermute(const PermLayout *layout, int t, uint64 key)
{
	uint64		fp = 0;
	int			i;

	for (i = 0; i < 64; i++)
		if ((key >> (63 - i)) & 1)
			fp |= UINT64CONST(1) << layout->bits[t][i];
	return fp;
}

/* Probe callback (the leaf is locked): remember the match and its table */
static void
check_collect(void *arg, ItemPointer tid, uint64 key, int distance)
{
	CheckSearch *cs = (CheckSearch *) arg;
	CheckMatch *m;

	if (cs->n == cs->max)
	{
		cs->max = Max(16, cs->max * 2);
		cs->matches = cs->matches ?
			repalloc_huge(cs->matches, cs->max * sizeof(CheckMatch)) :
			palloc_extended(cs->max * sizeof(CheckMatch), MCXT_ALLOC_HUGE);
	}
	m = &cs->matches[cs->n++];
	m->tid = *tid;
	m->table = cs->ss->table;
	m->fp = unpermute(cs->layout, cs->ss->table, key);
}

static int
compare_check_matches(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) &((const CheckMatch *) a)->tid,
							  (ItemPointer) &((const CheckMatch *) b)->tid);
}

/* Probe callback of the confirmation: is the entry the match's own? */
static void
confirm_collect(void *arg, ItemPointer tid, uint64 key, int distance)
{
	CheckMatch *m = (CheckMatch *) arg;

	if (ItemPointerEquals(tid, &m->tid))
		m->table = -1;			/* confirmed */
}

/*
 * Every row within radius of center that two tables agree on, into found
 * (TIDs, sorted, each once), in the current memory context; the leaves of
 * the matches are kept pinned in pins (README.perm, "Exclusion
 * constraints")
 */
void
PermSearchConstraint(PermState *state, uint64 center,
					 int radius, PermTidList *found, PermPinList *pins)
{
	Relation	index = state->index;
	const PermLayout *layout = &state->layout;
	PermSearchState ss;
	CheckSearch cs;
	PermQuery	q;
	int64		i;
	int			t;

	q.center = center;
	q.radius = radius;
	for (t = 0; t < layout->ntables; t++)
		q.key[t] = PermPermute(&state->perm[t], center);
	memset(&cs, 0, sizeof(cs));
	cs.ss = &ss;
	cs.layout = layout;
	ss.state = state;
	ss.queries = &q;
	ss.nqueries = 1;
	ss.callback = check_collect;
	ss.arg = &cs;
	ss.pins = pins;
	for (t = 0; t < layout->ntables; t++)
	{
		ss.table = t;
		PermProbeNeighbours(index, &ss,
							layout->prefix_bits[t],
							radius <= layout->max_distance ? 0 :
							PermPrefixFlips(layout->blocks, layout->max_distance,
											radius),
							false);
	}
	if (cs.n == 0)
		return;
	qsort(cs.matches, cs.n, sizeof(CheckMatch), compare_check_matches);
	for (i = 0; i < cs.n; i++)
	{
		CheckMatch *m = &cs.matches[i];
		int			u = (m->table + 1) % layout->ntables;

		/* a row found in several tables: once, by the first that confirms */
		if (found->n > 0 && ItemPointerEquals(&m->tid, &found->tids[found->n - 1]))
			continue;
		/* a second table's entry, looked up after the probes' locks */
		if (u != m->table)
		{
			uint64		k = PermPermute(&state->perm[u], m->fp);

			PermProbeRange(state, u, k, k, k, 0, 0, confirm_collect, m, NULL);
			if (m->table != -1)
				continue;		/* the tables disagree: a damaged key */
		}
		PermTidListAdd(found, CurrentMemoryContext, &m->tid);
	}
	pfree(cs.matches);
}

/* Callback of PermSearchCenter: collect the TIDs */
static void
center_collect(void *arg, ItemPointer tid, uint64 key, int distance)
{
	PermTidListAdd((PermTidList *) arg, CurrentMemoryContext, tid);
}

/*
 * Every entry of the index within radius of center, dead ones included:
 * their TIDs, sorted, each once though several tables find it.  found is
 * emptied first and grown in the current memory context.
 */
void
PermSearchCenter(Relation index, uint64 center, int radius, PermTidList *found)
{
	PermState  *state = PermGetState(index);
	PermQuery	q;
	int			t;

	q.center = center;
	q.radius = radius;
	for (t = 0; t < state->layout.ntables; t++)
		q.key[t] = PermPermute(&state->perm[t], center);
	found->n = 0;
	search_queries(state, &q, 1, center_collect, found, NULL);
	PermTidListSortUnique(found);
}

/*
 * For each of n fingerprints, how many entries of the index lie within k
 * of it, each row counted once: the sample of a batch joined to the
 * indexed table, for the join estimate of hamming_near (planner.c).  Costs
 * one search of the index each.
 */
void
PermCountWithin(Relation index, const uint64 *centers, int n, int k,
				double *counts)
{
	PermTidList found = {0};
	int			i;

	for (i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		PermSearchCenter(index, centers[i], k, &found);
		counts[i] = (double) found.n;
	}
	if (found.tids)
		pfree(found.tids);
}
