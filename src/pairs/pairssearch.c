/*-------------------------------------------------------------------------
 *
 * pairssearch.c
 *		simhash_pairs() and simhash_clusters(): reading the rows, and the
 *		search of one permuted table (sort by prefix, compare each group).
 *		The design is in pairs.c.
 *
 * IDENTIFICATION
 *	  src/pairs/pairssearch.c
 *
 *-------------------------------------------------------------------------
 */
#include "pairs/pairs.h"

double
pairs_elapsed(PairsState *ps)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, ps->search.start);
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

	ps->search.perm = palloc(ps->search.layout.ntables * sizeof(PermPermutation));
	for (i = 0; i < ps->search.layout.ntables; i++)
		PermMakePermutation(ps->search.layout.bits[i], &ps->search.perm[i]);
}

/*
 * Integer keys of pairs travel in the records in place of the rows' TIDs,
 * as 48-bit integers in the TID's six bytes: a pair found is then a row of
 * the result at once, where fetching its two rows' keys again from the
 * table cost more than finding it (random reads, 4 us a pair at 1M rows).
 * The rows were read under the statement's snapshot, so they need no
 * second look.  A NULL key or one beyond 48 bits sends the whole read back
 * to TIDs.  pairs.c reads them back (inlined_key).
 */
#define INLINE_KEY_LIMIT	(INT64CONST(1) << 47)

/*
 * An integer key (int2, int4 or int8) as int64; false if it is NULL or
 * outside [-limit, limit).  Also pairsquery.c's.
 */
bool
pairs_integer_key(PairsState *ps, Datum d, bool isnull, int64 limit, int64 *v)
{
	if (isnull)
		return false;
	if (ps->src.keytype == INT8OID)
		*v = DatumGetInt64(d);
	else if (ps->src.keytype == INT4OID)
		*v = DatumGetInt32(d);
	else
		*v = DatumGetInt16(d);
	return *v >= -limit && *v < limit;
}

static bool
read_key_inline(PairsState *ps, ItemPointer slotpos)
{
	bool		isnull;
	Datum		d = slot_getattr(ps->src.slot, ps->src.keyatt, &isnull);
	int64		v;
	uint64		u;

	if (!pairs_integer_key(ps, d, isnull, INLINE_KEY_LIMIT, &v))
		return false;
	u = (uint64) v;
	slotpos->ip_blkid.bi_hi = (uint16) (u >> 32);
	slotpos->ip_blkid.bi_lo = (uint16) (u >> 16);
	slotpos->ip_posid = (uint16) u;
	return true;
}

/*
 * Reading the table: every row with a fingerprint from scan into ps->search.rows,
 * and how often each bit is set (for the layout) into votes.  False when a
 * key cannot travel inline (the read must start again with TIDs).
 */
bool
pairs_scan_rows(PairsState *ps, TableScanDesc scan, SimhashVoter *votes)
{
	uint64		batch[1024];
	int			nbatch = 0;

	SimhashVoterInit(votes);
	while (table_scan_getnextslot(scan, ForwardScanDirection, ps->src.slot))
	{
		bool		isnull;
		Datum		d = slot_getattr(ps->src.slot, ps->src.fpatt, &isnull);
		KeyTid		rec;

		CHECK_FOR_INTERRUPTS();
		if (isnull)
			continue;
		rec.key = (uint64) DatumGetInt64(d);
		if (!ps->src.inline_keys)
			rec.tid = ps->src.slot->tts_tid;
		else if (!read_key_inline(ps, &rec.tid))
			return false;
		RecStoreAdd(ps->search.rows, &rec);
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
	return PermCountTables(choose_blocks(n, ps->search.k), ps->search.k);
}

/*
 * The layout of n rows whose bits were counted in votes (of nvoted rows:
 * all of them, or a sample), and its permutations
 */
void
pairs_choose_layout(PairsState *ps, const SimhashVoter *votes, int64 nvoted,
					int64 n)
{
	PermChooseLayoutFromVotes(ps->search.k, choose_blocks(n, ps->search.k), votes,
							  nvoted, &ps->search.layout);
	make_permutations(ps);
}

/* A layout chosen elsewhere (a part of a search over Citus workers) */
void
pairs_set_layout(PairsState *ps, const PermLayout *layout)
{
	ps->search.layout = *layout;
	make_permutations(ps);
}

void
pairs_report_read(PairsState *ps, const char *where)
{
	if (ps->search.progress)
		ereport(NOTICE,
				(errmsg("simhash: read %lld rows with a fingerprint",
						(long long) (ps->search.wide ? ps->search.wide->n :
									 RecStoreCount(ps->search.rows))),
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

		if (ps->search.rows)
			RecStoreEnd(ps->search.rows);
		ps->search.rows = RecStoreBegin(ps->search.work_bytes / 2);
		scan = table_beginscan(ps->src.rel, ps->src.snapshot, 0, NULL);
		ok = pairs_scan_rows(ps, scan, &votes);
		table_endscan(scan);
		if (ok)
			break;
		/* a NULL or a huge key: read again, keeping TIDs */
		ps->src.inline_keys = false;
	}
	pairs_report_read(ps, RecStoreSpilled(ps->search.rows) ?
				"more than half of work_mem: kept in a temporary file" :
				"kept in memory");
	pairs_choose_layout(ps, &votes, RecStoreCount(ps->search.rows),
						RecStoreCount(ps->search.rows));
}

/* The fingerprint bits of table t's prefix, as a mask on fingerprints */
uint64
pairs_prefix_mask(const PermLayout *layout, int t)
{
	uint64		mask = 0;
	int			i;

	for (i = 0; i < layout->prefix_bits[t]; i++)
		mask |= UINT64CONST(1) << layout->bits[t][i];
	return mask;
}


/*
 * The part of a search over nparts Citus workers that searches a row in a
 * table: a hash of the row's bits in the table's first prefix block (under
 * mask) and of that block's number (salt).  Two rows that share the
 * table's prefix share its first block, so they fall to the same part,
 * which finds their pair there; tables that start with the same block
 * send a row to the same part, so a row goes to at most B - K + 1 parts
 * whatever the number of tables (pairscitus.c has the argument).  The mix
 * is the finalizer of MurmurHash3, which spreads values that differ in a
 * few bits.
 */
int
pairs_part_of(uint64 fp, uint64 mask, int salt, int nparts)
{
	uint64		h = (fp & mask) ^ ((uint64) (salt + 1) * UINT64CONST(0x9E3779B97F4A7C15));

	h ^= h >> 33;
	h *= UINT64CONST(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64CONST(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return (int) (h % (uint64) nparts);
}

/* Table t's first prefix block: its number, and its bits as a mask */
int
pairs_first_block(const PermLayout *layout, int t, uint64 *mask)
{
	int			block = layout->block_of_bit[layout->bits[t][0]];
	int			i;

	*mask = 0;
	for (i = 0; i < 64; i++)
		if (layout->block_of_bit[i] == block)
			*mask |= UINT64CONST(1) << i;
	return block;
}

/*
 * Progress: the leader reports each table searched, its own or a worker's,
 * in the order they are done, with the counts of all processes.
 */
void
pairs_report_table_done(PairsState *ps, int partitions, int split)
{
	int64		found = ps->search.found;
	int64		compared = ps->search.compared;

	ps->par.tables_done++;
	if (!ps->search.progress)
		return;
	if (ps->par.shared)
	{
		found = pg_atomic_read_u64(&ps->par.shared->found);
		compared = pg_atomic_read_u64(&ps->par.shared->compared);
	}
	ereport(NOTICE,
			(errmsg("simhash: %d of %d tables sorted and compared",
					ps->par.tables_done, ps->search.layout.ntables),
			 errdetail("%.3f s; %lld %s so far, %lld comparisons%s.",
					   pairs_elapsed(ps), (long long) found,
					   ps->search.clusters ? "links" : "pairs", (long long) compared,
					   partitions > 0 && split > 0 ?
					   psprintf(", sorted in %d partitions, %d of them split again",
								partitions, split) :
					   partitions > 0 ? psprintf(", sorted in %d partitions", partitions) :
					   partitions < 0 ? ", by a parallel worker" : "")));
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
notice_large_group(PairsState *ps, KeyTid *group, int n)
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
		if (simhash_hamming(group[i].key, group[j].key) <= ps->search.k)
			hits++;
	}
	estimate = candidates * hits / PAIRS_SAMPLE + (double) ps->search.found;
	if (estimate < PAIRS_NOTICE_PAIRS)
		return;
	ps->search.size_noticed = true;
	ereport(NOTICE,
			(errmsg("simhash_pairs will return about %.3g pairs", estimate),
			 errdetail("%d rows of %s share a prefix, and about %.0f%% of their %.3g pairs lie within %d bits.",
					   n, ps->src.name,
					   100.0 * hits / PAIRS_SAMPLE, candidates, ps->search.k),
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
compare_group(PairsState *ps, KeyTid *group, int n)
{
	int			i,
				j,
				e;
	int			nearlier = ps->search.table;

	if (!ps->search.clusters && !ps->search.size_noticed &&
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
			if (d > ps->search.k)
				continue;
			/* found already in a table where the two share a prefix? */
			for (e = 0; e < nearlier; e++)
				if ((diff & ps->search.earlier_mask[e]) == 0)
				{
					seen = true;
					break;
				}
			if (seen)
				continue;
			ps->search.found++;
			ps->sink.found(ps, &group[i].tid, &group[j].tid, d);
		}
	}
	ps->search.compared += (int64) n * (n - 1) / 2;
}

/* State of the walk over one table's sorted records */
typedef struct GroupWalk
{
	PairsState *ps;
	uint64		prefix_mask;	/* top bits of the permuted key */
	KeyTid    *group;
	int			n;
	int			max;
	bool		any;
	KeyTid		last;			/* the previous record */
} GroupWalk;

static void
group_append(GroupWalk *w, const KeyTid *rec)
{
	if (w->n == w->max)
	{
		w->max = Max(64, w->max * 2);
		w->group = w->group ? repalloc_huge(w->group, w->max * sizeof(KeyTid)) :
			palloc_extended(w->max * sizeof(KeyTid), MCXT_ALLOC_HUGE);
	}
	w->group[w->n++] = *rec;
}

/*
 * Clusters: the records one by one, in order of whole keys.  A copy of the
 * previous fingerprint is joined to it once, in table 0, and left out of
 * the group.
 */
static void
walk_add(GroupWalk *w, const KeyTid *rec)
{
	PairsState *ps = w->ps;

	if (w->any && ((rec->key ^ w->last.key) & w->prefix_mask) != 0)
	{
		compare_group(ps, w->group, w->n);
		w->n = 0;
	}
	if (w->any && rec->key == w->last.key)
	{
		if (ps->search.table == 0)
			ps->sink.found(ps, &w->last.tid, (ItemPointer) &rec->tid, 0);
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
walk_chunk(GroupWalk *w, KeyTid *recs, int64 n)
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
	GroupSort *gs;
	GroupWalk	w = {0};
	KeyTid    *batch;
	KeyTid		permuted[RECSORT_BATCH];
	int			nbatch;
	KeyTid    *chunk;
	int64		n;
	int64		i = 0;
	int			e;
	int			spilled;
	int			split;
	int64		found_before = ps->search.found;
	int64		compared_before = ps->search.compared;

	ps->search.table = t;
	for (e = 0; e < t; e++)
		ps->search.earlier_mask[e] = PermPermute(&ps->search.perm[t], pairs_prefix_mask(&ps->search.layout, e));
	w.ps = ps;
	w.prefix_mask = ps->search.layout.prefix_bits[t] >= 64 ? PG_UINT64_MAX :
		~(PG_UINT64_MAX >> ps->search.layout.prefix_bits[t]);

	/*
	 * Pairs need each group of equal prefixes together, in any order within;
	 * clusters need copies of one fingerprint next to each other, so they
	 * sort whole keys.
	 */
	if (ps->search.sort == NULL)
		ps->search.sort = GroupSortBegin(ps->search.work_bytes / 2, RecStoreCount(ps->search.rows),
									  ps->search.clusters ? 64 : ps->search.layout.prefix_bits[t]);
	else
		GroupSortRestart(ps->search.sort, RecStoreCount(ps->search.rows),
							 ps->search.clusters ? 64 : ps->search.layout.prefix_bits[t]);
	gs = ps->search.sort;
	RecStoreRewind(ps->search.rows);
	while ((nbatch = RecStoreNextBatch(ps->search.rows, &batch)) > 0)
	{
		int			b;

		int			nput = 0;

		for (b = 0; b < nbatch; b++)
		{
			if (ps->search.nparts > 0 &&
				pairs_part_of(batch[b].key, ps->search.part_mask[t],
							  ps->search.part_salt[t], ps->search.nparts) != ps->search.part)
				continue;		/* another part searches it in this table */
			permuted[nput].key = PermPermute(&ps->search.perm[t], batch[b].key);
			permuted[nput].tid = batch[b].tid;
			nput++;
		}
		GroupSortPutBatch(gs, permuted, nput);
		if (((i += nbatch) & 65535) < nbatch)
		{
			CHECK_FOR_INTERRUPTS();
			if (ps->sink.poll)
				ps->sink.poll(ps);
		}
	}
	GroupSortFinish(gs);
	while ((n = GroupSortNextChunk(gs, &chunk)) > 0)
	{
		CHECK_FOR_INTERRUPTS();
		if (ps->sink.poll)
			ps->sink.poll(ps);
		if (!ps->search.clusters)
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

	if (ps->par.shared)
	{
		pg_atomic_add_fetch_u64(&ps->par.shared->found, ps->search.found - found_before);
		pg_atomic_add_fetch_u64(&ps->par.shared->compared, ps->search.compared - compared_before);
	}
	spilled = GroupSortPartitions(gs, &split);
	ps->sink.table_done(ps, spilled, split);
}

/* The tables are searched: free the sort's memory and files */
void
pairs_search_done(PairsState *ps)
{
	if (ps->search.sort)
		GroupSortEnd(ps->search.sort);
	ps->search.sort = NULL;
}
