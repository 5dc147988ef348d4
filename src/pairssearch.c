/*-------------------------------------------------------------------------
 *
 * pairssearch.c
 *		simhash_pairs() and simhash_clusters(): reading the rows, and the
 *		search of one permuted table (sort by prefix, compare each group).
 *		The design is in pairs.c.
 *
 * IDENTIFICATION
 *	  src/pairssearch.c
 *
 *-------------------------------------------------------------------------
 */
#include "pairs.h"

double
pairs_elapsed(PairsState *ps)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, ps->start);
	return INSTR_TIME_GET_DOUBLE(now);
}

/*
 * The number of blocks B for n rows and radius k.  Each of the C(B, k)
 * tables costs a pass over every row (permuting, sorting, the walk: about
 * sixty comparisons' worth a row, measured with whole-key sorts) and
 * the comparisons in its groups of equal prefixes, n / 2^P a row for
 * P = 64 (B - k) / B prefix bits, halved.  The cheapest B within
 * simhash_perm's limits (16 blocks, 64 tables) wins: at k = 3, B = 4 up to
 * a few million rows, then B = 5.
 */
static int
choose_blocks(int64 n, int k)
{
	double		rows = Max(2.0, (double) n);
	double		best_cost = -1;
	int			best = k + 1;
	int			b;

	for (b = k + 1; b <= PERM_MAX_BLOCKS; b++)
	{
		int			tables = PermCountTables(b, k);
		double		prefix = 64.0 * (b - k) / b;
		double		cost;

		if (tables < 0)
			break;				/* more than PERM_MAX_TABLES */
		cost = tables * (60.0 + rows / pow(2.0, prefix) / 2.0);
		if (best_cost < 0 || cost < best_cost)
		{
			best_cost = cost;
			best = b;
		}
	}
	return best;
}

static void
make_permutations(PairsState *ps)
{
	int			i;

	ps->perm = palloc(ps->layout.ntables * sizeof(PermPermutation));
	for (i = 0; i < ps->layout.ntables; i++)
		PermMakePermutation(ps->layout.bits[i], &ps->perm[i]);
}

/*
 * Reading the table: every row with a fingerprint from scan into ps->rows,
 * and how often each bit is set (for the layout) into votes.  False when a
 * key cannot travel inline (the read must start again with TIDs).
 */
bool
pairs_scan_rows(PairsState *ps, TableScanDesc scan, SimhashVoter *votes)
{
	uint64		batch[1024];
	int			nbatch = 0;

	SimhashVoterInit(votes);
	while (table_scan_getnextslot(scan, ForwardScanDirection, ps->slot))
	{
		bool		isnull;
		Datum		d = slot_getattr(ps->slot, ps->fpatt, &isnull);
		PairRec		rec;

		CHECK_FOR_INTERRUPTS();
		if (isnull)
			continue;
		rec.key = (uint64) DatumGetInt64(d);
		if (!ps->inline_keys)
			rec.tid = ps->slot->tts_tid;
		else if (!pairs_inline_key(ps, &rec.tid))
			return false;
		PermRecStoreAdd(ps->rows, &rec);
		batch[nbatch++] = rec.key;
		if (nbatch == lengthof(batch))
		{
			SimhashVoterAddBatch(votes, batch, nbatch);
			nbatch = 0;
		}
	}
	SimhashVoterAddBatch(votes, batch, nbatch);
	return true;
}

/* The number of tables the search of about n rows will have */
int
pairs_count_tables(PairsState *ps, int64 n)
{
	return PermCountTables(choose_blocks(n, ps->k), ps->k);
}

/* The layout of n rows with these votes, and its permutations */
void
pairs_choose_layout(PairsState *ps, const SimhashVoter *votes, int64 n)
{
	PermChooseLayoutFromVotes(ps->k, choose_blocks(n, ps->k), votes, n, &ps->layout);
	make_permutations(ps);
}

void
pairs_report_read(PairsState *ps, const char *where)
{
	if (ps->progress)
		ereport(NOTICE,
				(errmsg("simhash: read %lld rows with a fingerprint",
						(long long) PermRecStoreCount(ps->rows)),
				 errdetail("%.3f s; %s.", pairs_elapsed(ps), where)));
}

/* One process reads the table: half of work_mem keeps the rows */
void
pairs_read_rows(PairsState *ps)
{
	SimhashVoter votes;

	for (;;)
	{
		TableScanDesc scan;
		bool		ok;

		if (ps->rows)
			PermRecStoreEnd(ps->rows);
		ps->rows = PermRecStoreBegin(ps->work_bytes / 2);
		scan = table_beginscan(ps->rel, ps->snapshot, 0, NULL);
		ok = pairs_scan_rows(ps, scan, &votes);
		table_endscan(scan);
		if (ok)
			break;
		/* a NULL or a huge key: read again, keeping TIDs */
		ps->inline_keys = false;
	}
	pairs_report_read(ps, PermRecStoreSpilled(ps->rows) ?
				"more than half of work_mem: kept in a temporary file" :
				"kept in memory");
	pairs_choose_layout(ps, &votes, PermRecStoreCount(ps->rows));
}

/* The fingerprint bits of table t's prefix, as a mask on fingerprints */
static uint64
prefix_mask(PermLayout *layout, int t)
{
	uint64		mask = 0;
	int			i;

	for (i = 0; i < layout->prefix_bits[t]; i++)
		mask |= UINT64CONST(1) << layout->bits[t][i];
	return mask;
}


/*
 * Progress: the leader reports each table searched, its own or a worker's,
 * in the order they are done, with the counts of all processes.
 */
void
pairs_report_table_done(PairsState *ps, int partitions, int split)
{
	int64		found = ps->found;
	int64		compared = ps->compared;

	ps->tables_done++;
	if (!ps->progress)
		return;
	if (ps->shared)
	{
		found = pg_atomic_read_u64(&ps->shared->found);
		compared = pg_atomic_read_u64(&ps->shared->compared);
	}
	ereport(NOTICE,
			(errmsg("simhash: %d of %d tables sorted and compared",
					ps->tables_done, ps->layout.ntables),
			 errdetail("%.3f s; %lld %s so far, %lld comparisons%s.",
					   pairs_elapsed(ps), (long long) found,
					   ps->clusters ? "links" : "pairs", (long long) compared,
					   partitions > 0 && split > 0 ?
					   psprintf(", sorted in %d partitions, %d of them split again",
								partitions, split) :
					   partitions > 0 ? psprintf(", sorted in %d partitions", partitions) :
					   partitions < 0 ? ", by a parallel worker" : "")));
}


/*
 * Two rows within k, found: a row of the result or a link of the clusters,
 * in the leader; sent to the leader from a worker.
 */
static void
found_link(PairsState *ps, ItemPointer x, ItemPointer y, int distance)
{
	if (ps->out)
	{
		PairsLink  *l = &ps->links[ps->nlinks++];

		l->a = *x;
		l->b = *y;
		l->distance = distance;
		if (ps->nlinks == PAIRS_LINKS_PER_MESSAGE)
			pairs_send_links(ps);
	}
	else if (ps->clusters)
		pairs_uf_union(ps, x, y);
	else
		pairs_emit_pair(ps, x, y, distance);
}

/*
 * A group of more candidate pairs than this has its pairs estimated before
 * it is compared, and a result of more pairs than PAIRS_NOTICE_PAIRS (some
 * 4 GB in the result's tuplestore) is announced before it is written.
 */
#define PAIRS_LARGE_GROUP	1.0e7
#define PAIRS_NOTICE_PAIRS	1.0e8
#define PAIRS_SAMPLE		1024

/*
 * The pairs within k in a large group, estimated from PAIRS_SAMPLE pairs
 * of it drawn by a fixed-seed generator (xorshift64), so a run is
 * repeatable.  A million copies of one fingerprint are 5 x 10^11 pairs:
 * the user hears of it before the first of them is written, with the way
 * out (simhash_clusters, which joins copies without listing the pairs).
 */
SIMHASH_POPCNT
static void
notice_large_group(PairsState *ps, PairRec *group, int n)
{
	double		candidates = (double) n * (n - 1) / 2;
	uint64		x = UINT64CONST(0x9E3779B97F4A7C15) ^ (uint64) n;
	int			hits = 0;
	int			s;
	double		estimate;

	for (s = 0; s < PAIRS_SAMPLE; s++)
	{
		int			i,
					j;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		i = (int) ((x & PG_UINT32_MAX) % (uint64) n);
		j = (int) ((x >> 32) % (uint64) (n - 1));
		if (j >= i)
			j++;
		if (simhash_hamming(group[i].key, group[j].key) <= ps->k)
			hits++;
	}
	estimate = candidates * hits / PAIRS_SAMPLE + (double) ps->found;
	if (estimate < PAIRS_NOTICE_PAIRS)
		return;
	ps->size_noticed = true;
	ereport(NOTICE,
			(errmsg("simhash_pairs will return about %.3g pairs", estimate),
			 errdetail("%d rows of \"%s\" share a prefix, and about %.0f%% of their %.3g pairs lie within %d bits.",
					   n, RelationGetRelationName(ps->rel),
					   100.0 * hits / PAIRS_SAMPLE, candidates, ps->k),
			 errhint("simhash_clusters() groups such rows without listing every pair; temp_file_limit bounds the temporary space a run may write.")));
}

/*
 * Compare one group of equal prefixes pair by pair.  In cluster mode the
 * group holds one record per distinct fingerprint.  A group of many copies
 * of one fingerprint makes every comparison a pair written out: interrupts
 * are checked every few thousand comparisons, not only between rows.
 */
SIMHASH_POPCNT
static void
compare_group(PairsState *ps, PairRec *group, int n)
{
	int			i,
				j,
				e;
	int			nearlier = ps->table;

	if (!ps->clusters && !ps->size_noticed &&
		(double) n * (n - 1) / 2 > PAIRS_LARGE_GROUP)
		notice_large_group(ps, group, n);

	for (i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		for (j = i + 1; j < n; j++)
		{
			uint64		diff = group[i].key ^ group[j].key;
			int			d = simhash_hamming(group[i].key, group[j].key);
			bool		seen = false;

			if (((j - i) & 4095) == 0)
				CHECK_FOR_INTERRUPTS();
			if (d > ps->k)
				continue;
			/* found already in a table where the two share a prefix? */
			for (e = 0; e < nearlier; e++)
				if ((diff & ps->earlier_mask[e]) == 0)
				{
					seen = true;
					break;
				}
			if (seen)
				continue;
			ps->found++;
			found_link(ps, &group[i].tid, &group[j].tid, d);
		}
	}
	ps->compared += (int64) n * (n - 1) / 2;
}

/* State of the walk over one table's sorted records */
typedef struct GroupWalk
{
	PairsState *ps;
	uint64		prefix_mask;	/* top bits of the permuted key */
	PairRec    *group;
	int			n;
	int			max;
	bool		any;
	PairRec		last;			/* the previous record */
} GroupWalk;

static void
group_append(GroupWalk *w, const PairRec *rec)
{
	if (w->n == w->max)
	{
		w->max = Max(64, w->max * 2);
		w->group = w->group ? repalloc_huge(w->group, w->max * sizeof(PairRec)) :
			palloc_extended(w->max * sizeof(PairRec), MCXT_ALLOC_HUGE);
	}
	w->group[w->n++] = *rec;
}

/*
 * Clusters: the records one by one, in order of whole keys.  A copy of the
 * previous fingerprint is joined to it once, in table 0, and left out of
 * the group.
 */
static void
walk_add(GroupWalk *w, const PairRec *rec)
{
	PairsState *ps = w->ps;

	if (w->any && ((rec->key ^ w->last.key) & w->prefix_mask) != 0)
	{
		compare_group(ps, w->group, w->n);
		w->n = 0;
	}
	if (w->any && rec->key == w->last.key)
	{
		if (ps->table == 0)
			found_link(ps, &w->last.tid, (ItemPointer) &rec->tid, 0);
		return;
	}
	group_append(w, rec);
	w->last = *rec;
	w->any = true;
}

/*
 * Pairs: a chunk of records in order of their prefixes.  A group lying
 * whole in the chunk is compared where it lies; one still open at the
 * chunk's end is copied aside and completed from the next chunk.
 */
static void
walk_chunk(GroupWalk *w, PairRec *recs, int64 n)
{
	int64		i = 0;
	int64		groups = 0;

	if (w->n > 0)
	{
		while (i < n && ((recs[i].key ^ w->group[0].key) & w->prefix_mask) == 0)
			group_append(w, &recs[i++]);
		if (i == n)
			return;
		compare_group(w->ps, w->group, w->n);
		w->n = 0;
	}
	while (i < n)
	{
		uint64		prefix = recs[i].key & w->prefix_mask;
		int64		j = i + 1;

		while (j < n && (recs[j].key & w->prefix_mask) == prefix)
			j++;
		if (j == n)
		{
			while (i < n)
				group_append(w, &recs[i++]);
			return;
		}
		if (j - i > 1)
			compare_group(w->ps, recs + i, j - i);
		i = j;
		if ((++groups & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Search table t: sort its records (permuted) within half of work_mem,
 * spilling partitions to temporary files, and walk them in order of their
 * prefixes.
 */
void
pairs_search_table(PairsState *ps, int t)
{
	PermGroupSort *gs;
	GroupWalk	w = {0};
	PairRec    *batch;
	PairRec		permuted[PERM_STORE_BATCH];
	int			nbatch;
	PairRec    *chunk;
	int64		n;
	int64		i = 0;
	int			e;
	int			spilled;
	int			split;
	int64		found_before = ps->found;
	int64		compared_before = ps->compared;

	ps->table = t;
	for (e = 0; e < t; e++)
		ps->earlier_mask[e] = PermPermute(&ps->perm[t], prefix_mask(&ps->layout, e));
	w.ps = ps;
	w.prefix_mask = ps->layout.prefix_bits[t] >= 64 ? PG_UINT64_MAX :
		~(PG_UINT64_MAX >> ps->layout.prefix_bits[t]);

	/*
	 * Pairs need each group of equal prefixes together, in any order within;
	 * clusters need copies of one fingerprint next to each other, so they
	 * sort whole keys.
	 */
	if (ps->sort == NULL)
		ps->sort = PermGroupSortBegin(ps->work_bytes / 2, PermRecStoreCount(ps->rows),
									  ps->clusters ? 64 : ps->layout.prefix_bits[t]);
	else
		PermGroupSortRestart(ps->sort, PermRecStoreCount(ps->rows),
							 ps->clusters ? 64 : ps->layout.prefix_bits[t]);
	gs = ps->sort;
	PermRecStoreRewind(ps->rows);
	while ((nbatch = PermRecStoreNextBatch(ps->rows, &batch)) > 0)
	{
		int			b;

		for (b = 0; b < nbatch; b++)
		{
			permuted[b].key = PermPermute(&ps->perm[t], batch[b].key);
			permuted[b].tid = batch[b].tid;
		}
		PermGroupSortPutBatch(gs, permuted, nbatch);
		if (((i += nbatch) & 65535) < nbatch)
		{
			CHECK_FOR_INTERRUPTS();
			pairs_poll_workers(ps, false);
		}
	}
	PermGroupSortFinish(gs);
	while ((n = PermGroupSortNextChunk(gs, &chunk)) > 0)
	{
		CHECK_FOR_INTERRUPTS();
		pairs_poll_workers(ps, false);
		if (!ps->clusters)
			walk_chunk(&w, chunk, n);
		else
			for (i = 0; i < n; i++)
			{
				if ((i & 65535) == 65535)
					CHECK_FOR_INTERRUPTS();
				walk_add(&w, &chunk[i]);
			}
	}
	if (w.n > 0)
		compare_group(ps, w.group, w.n);
	if (w.group)
		pfree(w.group);

	if (ps->shared)
	{
		pg_atomic_add_fetch_u64(&ps->shared->found, ps->found - found_before);
		pg_atomic_add_fetch_u64(&ps->shared->compared, ps->compared - compared_before);
	}
	if (ps->out)
	{
		/* a worker: the leader reports the table, told by a marker */
		PairsLink  *l = &ps->links[ps->nlinks++];

		memset(l, 0, sizeof(PairsLink));
		l->distance = PAIRS_TABLE_DONE;
		pairs_send_links(ps);
	}
	else
	{
		spilled = PermGroupSortPartitions(gs, &split);
		pairs_report_table_done(ps, spilled, split);
	}
}

/* The tables are searched: free the sort's memory and files */
void
pairs_search_done(PairsState *ps)
{
	if (ps->sort)
		PermGroupSortEnd(ps->sort);
	ps->sort = NULL;
}
