/*-------------------------------------------------------------------------
 *
 * permwideknn.c
 *		simhash_perm: the nearest-neighbour scan of an index on bit(n) codes
 *		(multi-index hashing, permwidelayout.c), and of an index with leading
 *		equality columns within one tenant.
 *
 * A nearest-neighbour scan (ORDER BY code <-> q) reads the tables ring by
 * ring: after rings 0..rho[t] of every table t, every code within
 * bound - 1 of the query, bound = sum of (rho[t] + 1), has been found (if
 * a code differed from the query in more than rho[t] bits in every
 * substring, it would differ in at least bound bits).  Each ring adds one
 * to bound; the table with the fewest rings read goes next.  The scan
 * reads each new candidate's row under its snapshot and files it at its
 * exact distance; rows at distance d are handed out, with their exact
 * distance, once d <= bound, since every row not yet found lies at bound
 * or farther.  Quals bound the scan: a row they reject is not filed, and
 * no row beyond the smallest radius plus that qual's distance from the
 * ORDER BY query can pass them, so the scan stops there.
 *
 * When the next ring would cost more than a share of a pass over every
 * code (a query whose neighbours are far, as random codes' are from a
 * random query: about 94 bits of 256 at a million rows), the scan hands
 * the rest to the code store (permwidestore.c), or within a tenant reads
 * the tenant's range of the tables; after that every distance is
 * complete.  Without a qual, the rows whose code is NULL come last, from
 * the store's list of them (permtableknn.c).  Neither reads the table.
 *
 * The rows are read as permconstraint.c reads a match's row (PermRowReader):
 * the indexed expression evaluated on the version the snapshot sees.  A
 * row is read only after the index pages that named it are released.
 *
 * IDENTIFICATION
 *	  src/index/substrings/permwideknn.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/relscan.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "index/perm.h"
#include "index/permscan.h"
#include "type/hamming_query.h"
#include "type/simhash.h"
#include "type/simhash_query.h"

/*
 * The rings may cost at most this share of a sweep before the scan sweeps.
 * Costs in rows of a sweep (about 0.25 us each on the development
 * machine): a key range probed costs about 4, a candidate's row read by
 * its TID about 6 (test/bench/wide_bench.sh measures the outcome: a
 * random query's LIMIT 10 against the sequential scan).
 */
#define WIDE_SWEEP_SHARE	8
#define WIDE_KEY_WORK		4.0
#define WIDE_ROW_WORK		6.0
/*
 * An entry of the tenant's sweep from the index alone, found and summed:
 * about 35 ns (a tenant of 5,000 rows swept in 0.35 ms, one of a million
 * in 68 ms, two entries a row)
 */
#define WIDE_TENANT_ENTRY_WORK	0.15
/*
 * An entry of a pass over the code store (permwidestore.c), in rows of a
 * sweep: a code of 256 bits is compared and counted in about 5.5 ns, 0.02
 * rows (a random LIMIT 10 in 6.9 ms at a million rows, the rings'
 * share included: docs/reports/store_bench_1M.txt), priced at twice that,
 * so that the rings, which find moderately near rows without a pass, may
 * cost a quarter of a pass.  With a store, the rings may cost a
 * WIDE_SWEEP_SHARE of one pass (so priced) before the scan reads the
 * store instead.
 */
#define WIDE_STORE_ENTRY_WORK	0.04
/* rings within a tenant may cost this much before its size is sampled */
#define WIDE_TENANT_FREE_WORK	400.0

/*
 * The rows a scan has found, by their TID as an integer: a simplehash set,
 * since an ordered scan whose entries hold whole codes adds one for every
 * entry its rings meet (a dynahash cost half such a scan's time)
 */
typedef struct SeenTid
{
	uint64		tid;
	char		status;			/* simplehash's */
} SeenTid;

#define SH_PREFIX		seentids
#define SH_ELEMENT_TYPE	SeenTid
#define SH_KEY_TYPE		uint64
#define SH_KEY			tid
#define SH_HASH_KEY(tb, key)	hash_combine(murmurhash32((uint32) ((key) >> 32)), murmurhash32((uint32) (key)))
#define SH_EQUAL(tb, a, b)		((a) == (b))
#define SH_SCOPE		static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* Add tid to the rows found; false if it was there already */
static inline bool
seen_add(seentids_hash *seen, ItemPointer tid)
{
	bool		found;

	seentids_insert(seen, PermTidNumber(tid), &found);
	return !found;
}

/*
 * Where each substring lies in table t's key, for a layout whose entries
 * hold whole codes: sub[0] = t, then the substrings the tail holds whole;
 * the one substring left (partly in the tail, the rest in the entry's
 * extra bits) has the distance the others leave of the entry's.
 */
typedef struct SubstringSplit
{
	int			n;				/* substrings read from the key */
	int8		sub[PERM_MAX_TABLES];
	int8		shift[PERM_MAX_TABLES];
	uint64		mask[PERM_MAX_TABLES];
	int			last;			/* the substring left, or -1: none */
} SubstringSplit;

/*
 * Table t's split, when its entries hold whole codes and at most one
 * substring lies outside the key whole; false otherwise
 */
static bool
split_substrings(const PermLayout *layout, int t, SubstringSplit *split)
{
	int			m = layout->ntables;
	int			tail = PermWideTailBits(layout, t);
	int			shift = tail;
	int			whole = 0;
	int			i;

	/* the substrings after t (mod m, as the tail takes them) it holds whole */
	while (whole < m - 1 &&
		   tail >= layout->prefix_bits[(t + whole + 1) % m])
	{
		tail -= layout->prefix_bits[(t + whole + 1) % m];
		whole++;
	}
	if (!PermWideEntryHoldsCode(layout, t) || m - 1 - whole > 1)
		return false;
	split->n = whole + 1;
	for (i = 0; i <= whole; i++)
	{
		int			u = (t + i) % m;
		int			bits = layout->prefix_bits[u];

		if (i > 0)
			shift -= bits;
		split->sub[i] = u;
		split->shift[i] = shift;
		split->mask[i] = bits >= 64 ? PG_UINT64_MAX :
			(UINT64CONST(1) << bits) - 1;
	}
	split->last = whole + 1 < m ? (t + whole + 1) % m : -1;
	return true;
}

/*
 * Each substring's distance of an entry of table t, whose key differs from
 * the query's by diff and whose whole distance is distance, into d[]
 */
SIMHASH_POPCNT
static void
substring_distances(const SubstringSplit *split, uint64 diff, int distance,
					int *d)
{
	int			sum = 0;
	int			i;

	for (i = 0; i < split->n; i++)
	{
		int			di = simhash_hamming((diff >> split->shift[i]) &
										 split->mask[i], 0);

		d[split->sub[i]] = di;
		sum += di;
	}
	if (split->last >= 0)
		d[split->last] = distance - sum;
}

/* The state of a nearest-neighbour scan of bit(n) codes */
typedef struct PermWideOrder
{
	PermState  *state;			/* the index's descriptor, as the scan began */
	int			m;
	int			width;
	bool		code_bits;		/* bit(n) codes (PermState.code_bits) */
	VarBit	   *center;			/* ORDER BY code <-> center; NULL: none */
	uint64		keys[PERM_MAX_TABLES];	/* the center's substrings */
	uint16		extras[PERM_MAX_TABLES];	/* and its entries' extra bits */
	bool		exact;			/* entries hold the whole code, and no qual
								 * needs the row: rings file rows at their
								 * entries' distance, reading none */
	bool		first_ring;		/* and each row is filed by the first ring
								 * that holds it (ring_is_first), with no
								 * set of the rows seen */
	SubstringSplit split[PERM_MAX_TABLES];	/* table t's key, substring by
											 * substring */
	int			rho[PERM_MAX_TABLES];	/* rings read in each table */
	int			bound;			/* every row nearer than this was found */
	int			cap;			/* no row farther than this passes the quals */
	int			nquals;
	PermWideQual   *quals;
	bool		code_qual;		/* a qual on the code was given (some may
								 * be folded into cap) */
	uint64		tenant;			/* the tenant's bits of every key */
	bool		tenant_known;	/* false: a leading column has no equality
								 * (the scan sweeps the table at once) */
	bool		tenant_sweep;	/* the sweep reads the tenant's range */
	int			sweep_tables;	/* tables its index-only form reads */
	seentids_hash *seen;		/* TIDs found so far */
	PermTidList *found;			/* [width + 1]: rows at each distance */
	PermTidList pending;		/* TIDs of the last read, not yet looked at */

	/*
	 * Rings' TIDs whose key lies d > emit_d bits from the center's, at
	 * deferred[d], d a lower bound on the row's distance: read only once
	 * rows at d are to be handed out (flush_deferred), and never when the
	 * scan ends before.  deferred_min: the least d listed, or
	 * PERM_NDISTANCES.
	 */
	PermTidList deferred[PERM_NDISTANCES];
	int			deferred_min;
	int			emit_d;			/* the distance being handed out */
	int64		emit_i;			/* of found[emit_d], handed out so far */
	double		rows;			/* entries of a table, as the pages say */
	double		leaves;			/* leaves of a table, about */
	double		read;			/* candidates read so far */
	double		met;			/* entries the rings filed at their own
								 * distance (exact) */
	int			ring_table;		/* the table whose ring is being read */
	double		work;			/* the rings' cost so far, in rows of a
								 * sweep */
	PermRowReader *reader;
	MemoryContext tmp;			/* reset after each row read */
	bool		use_store;		/* passes over the code store (permstore.c)
								 * finish the scan: no leading columns */
	bool		codes_by_tid;	/* candidates' codes from the store by TID */
	PermStoreScan *store;		/* once it hands out the rows, or NULL */
} PermWideOrder;

/* Callback of the probes: remember the TID; rows are read afterwards */
static void
collect_pending(void *arg, ItemPointer tid, uint64 key, int distance)
{
	PermWideOrder *wo = (PermWideOrder *) arg;

	PermTidListAdd(&wo->pending, GetMemoryChunkContext(wo), tid);
}

/*
 * Is the ring being read (table wo->ring_table, ring rho of it) the first
 * to hold this entry's row?  Rings are read in order of their radius, then
 * of their table (read_next), and a row lies in ring d_u of every table u,
 * d_u its substring u's distance from the query's: the first of those is
 * the least (d_u, u).  A row is so filed once, and no set of the rows
 * filed is kept.
 */
static bool
ring_is_first(PermWideOrder *wo, uint64 key, int distance)
{
	int			t = wo->ring_table;
	int			d[PERM_MAX_TABLES];
	int			u;

	substring_distances(&wo->split[t], key ^ (wo->keys[t] | wo->tenant),
						distance, d);
	for (u = 0; u < wo->m; u++)
		if (u != t && (d[u] < d[t] || (d[u] == d[t] && u < t)))
			return false;
	return true;
}

/*
 * Has a ring read so far (rho[u] of every table u) filed the row of this
 * entry of table 0?  For the sweep after rings filed by ring_is_first.
 */
static bool
ring_filed(PermWideOrder *wo, uint64 key, int distance)
{
	int			d[PERM_MAX_TABLES];
	int			u;

	substring_distances(&wo->split[0], key ^ (wo->keys[0] | wo->tenant),
						distance, d);
	for (u = 0; u < wo->m; u++)
		if (d[u] <= wo->rho[u])
			return true;
	return false;
}

/*
 * Callback of a ring's probes: as collect_pending, but a row whose key
 * lies farther from the center's than the distance being handed out waits
 * in deferred[] (distance is the key's, a lower bound on the row's).  Keys
 * with a tail (permwidelayout.c) bound rows tightly: a ring of short substrings
 * holds many rows, few of them near.
 */
static void
collect_ring(void *arg, ItemPointer tid, uint64 key, int distance)
{
	PermWideOrder *wo = (PermWideOrder *) arg;

	if (wo->exact)
	{
		/* the entry's distance is the row's */
		wo->met++;
		if (distance > wo->cap)
			return;
		if (wo->first_ring ? ring_is_first(wo, key, distance) :
			seen_add(wo->seen, tid))
			PermTidListAdd(&wo->found[distance], GetMemoryChunkContext(wo),
						   tid);
		return;
	}
	if (distance <= wo->emit_d)
	{
		PermTidListAdd(&wo->pending, GetMemoryChunkContext(wo), tid);
		return;
	}
	PermTidListAdd(&wo->deferred[distance], GetMemoryChunkContext(wo), tid);
	wo->deferred_min = Min(wo->deferred_min, distance);
}

/* Forget the deferred rows: a sweep has filed every row */
static void
drop_deferred(PermWideOrder *wo)
{
	int			d;

	for (d = 0; d < PERM_NDISTANCES; d++)
		wo->deferred[d].n = 0;
	wo->deferred_min = PERM_NDISTANCES;
}

/*
 * Every key at exactly distance from center within its low bits bits, in
 * ascending order; *n of them, C(bits, distance).  The caller keeps the
 * count reasonable (it weighs it against reading the table whole).
 */
static uint64 *
wide_ring(uint64 center, int bits, int distance, int64 *n)
{
	int64		count = (int64) (PermWideBall(bits, distance) -
								 PermWideBall(bits, distance - 1) + 0.5);
	uint64	   *out = palloc_extended(Max(count, 1) * sizeof(uint64), MCXT_ALLOC_HUGE);

	Assert(distance >= 0 && distance <= bits && bits <= 64);
	*n = PermNeighbourKeys(center, bits - 1, 0, distance, true, out);
	Assert(*n == count);
	return out;
}

/* Callback counting entries */
static void
count_entry(void *arg, ItemPointer tid, uint64 key, int distance)
{
	(*(double *) arg) += 1;
}

/*
 * About how many rows the scan's tenant has: the entries of table 0 in a
 * 64th of the tenant's key range (the one around the center's key),
 * times 64; the whole range for a substring of 6 bits or fewer.  A
 * sample, since the count only decides when to stop reading rings and
 * read the tenant's rows instead (read_next).
 */
static double
tenant_rows(Relation index, PermWideOrder *wo)
{
	const PermLayout *layout = &wo->state->layout;
	int			bits = layout->prefix_bits[0];
	int			share = Min(6, bits);
	uint64		low = (UINT64CONST(1) <<
					   (bits - share + PermWideTailBits(layout, 0))) - 1;
	uint64		lo = wo->tenant | (wo->keys[0] & ~low & PERM_TENANT_CODE_MASK);
	double		n = 0;

	PermProbeRange(wo->state, 0, lo, lo | low, 0, 0, PERM_MAX_HAMMING,
				   count_entry, &n, NULL);
	return n * ldexp(1.0, share);
}

/* Set up a nearest-neighbour scan */
static PermWideOrder *
order_begin(IndexScanDesc scan, PermScanOpaque so)
{
	Relation	index = scan->indexRelation;
	PermState  *state = so->state;
	const PermLayout *layout = &state->layout;
	MemoryContext old = MemoryContextSwitchTo(so->cxt);
	PermWideOrder *wo = palloc0(sizeof(PermWideOrder));
	int			i,
				t;

	wo->state = state;
	wo->m = layout->ntables;
	wo->width = layout->width;
	wo->code_bits = state->code_bits;
	wo->cap = wo->width;
	wo->found = palloc0((wo->width + 1) * sizeof(PermTidList));
	/* the quals and the tenant as the rescan prepared them */
	wo->quals = palloc(Max(1, so->nquals) * sizeof(PermWideQual));
	memcpy(wo->quals, so->wide_quals, so->nquals * sizeof(PermWideQual));
	wo->nquals = so->nquals;
	if (so->qual_null)
		wo->cap = -1;			/* nothing matches a NULL query */
	wo->tenant_known = so->tenant_known;
	wo->tenant = so->tenant;
	if (so->tenant_none)
		wo->cap = -1;
	if (scan->numberOfOrderBys > 0 &&
		!(scan->orderByData[0].sk_flags & SK_ISNULL))
	{
		if (wo->code_bits)
			wo->center = DatumGetVarBitPCopy(scan->orderByData[0].sk_argument);
		else
			wo->center = PermCodeBits(false, scan->orderByData[0].sk_argument);
		PermCheckCodeWidth(index, wo->width, VARBITLEN(wo->center));
		PermWideKeys(layout, wo->center, wo->keys, wo->extras);
		/* a row within r of c lies within r + d(c, center) of center */
		for (i = 0; i < wo->nquals; i++)
			wo->cap = Min(wo->cap, wo->quals[i].radius +
						  simhash_bit_distance(wo->quals[i].code, wo->center));

		/*
		 * A qual around the center itself (WHERE hamming_near(code, q, k)
		 * ORDER BY code <-> q, the usual form) is the cap, exactly: the
		 * rings need no code but their entries' distance for it, and where
		 * the entries hold whole codes (a tenant's 64-bit fingerprints)
		 * no row is read.
		 */
		wo->code_qual = (wo->nquals > 0);
		for (i = 0, t = 0; i < wo->nquals; i++)
			if (simhash_bit_distance(wo->quals[i].code, wo->center) > 0)
				wo->quals[t++] = wo->quals[i];
		wo->nquals = t;
	}
	else
		wo->code_qual = (wo->nquals > 0);
	for (t = 0; t < wo->m; t++)
		wo->rho[t] = -1;
	wo->deferred_min = PERM_NDISTANCES;
	wo->seen = seentids_create(so->cxt, 1024, NULL);
	wo->leaves = PermWideTableLeaves(index, wo->m);
	/* the index's last count, or what its leaves hold at the least */
	wo->rows = Max(scan->indexRelation->rd_rel->reltuples, 100.0 * wo->leaves);
	if (layout->tenants > 0 && wo->tenant_known)
	{
		wo->rows = -1;			/* the tenant's: counted when needed */
		wo->tenant_sweep = true;
		wo->sweep_tables = PermWideTenantTables(layout);
	}
	wo->exact = wo->center != NULL && wo->nquals == 0;
	for (t = 0; t < wo->m && wo->exact; t++)
		wo->exact = PermWideEntryHoldsCode(layout, t);
	/* passes over the store: every row's code, so not within a tenant */
	wo->use_store = state->has_codes && layout->tenants == 0;
	wo->codes_by_tid = state->has_codes;
	wo->first_ring = wo->exact && wo->tenant_sweep;
	for (t = 0; t < wo->m && wo->first_ring; t++)
		wo->first_ring = split_substrings(layout, t, &wo->split[t]);
	wo->tmp = AllocSetContextCreate(so->cxt, "simhash_perm wide row",
									ALLOCSET_SMALL_SIZES);
	wo->reader = PermRowReaderBegin(scan->heapRelation, index);
	MemoryContextSwitchTo(old);

	/*
	 * Where the rings grow too dear, the scan reads on from its pages: the
	 * tenant's range of the tables, or the code store.  Without either (a
	 * scan of a tenant index without the tenant's equality, which the
	 * planner never builds; an index built before simhash 1.6, which it
	 * leaves out) only the table could answer: refused.
	 */
	if (layout->tenants > 0 && !wo->tenant_sweep)
		PermRefuseScanWithoutTenant(index);
	if (layout->tenants == 0 && !wo->use_store)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("index \"%s\" keeps no code store",
						RelationGetRelationName(index)),
				 errdetail("It was built by a version of simhash before 1.6; its nearest-neighbour scans would have to read the table."),
				 errhint("REINDEX the index.")));
	return wo;
}

/*
 * File a row at its distance, if the quals pass it.  With handed (a
 * sweep), a row nearer than emit_d, or at emit_d and in handed, was handed
 * out already and is passed over.
 */
static void
file_row(IndexScanDesc scan, PermWideOrder *wo, ItemPointer tid, Datum value,
		 HTAB *handed)
{
	VarBit	   *code = PermCodeBits(wo->code_bits, value);
	int			d = 0;
	int			q;

	PermCheckCodeWidth(scan->indexRelation, wo->width, VARBITLEN(code));
	for (q = 0; q < wo->nquals; q++)
		if (simhash_bit_distance(code, wo->quals[q].code) > wo->quals[q].radius)
			return;
	if (wo->center)
		d = simhash_bit_distance(code, wo->center);
	if (handed && (d < wo->emit_d ||
				   (d == wo->emit_d && hash_search(handed, tid, HASH_FIND, NULL))))
		return;
	if (d <= wo->cap)
		PermTidListAdd(&wo->found[d], GetMemoryChunkContext(wo), tid);
}

/*
 * Look at the TIDs of the last read: read each row not seen before, note
 * it as seen, and file it at its distance if the quals pass it
 */
static void
file_pending(IndexScanDesc scan, PermWideOrder *wo)
{
	int64		i;

	wo->pending.n = PermTidsSortUnique(wo->pending.tids, wo->pending.n);
	for (i = 0; i < wo->pending.n; i++)
	{
		ItemPointer tid = &wo->pending.tids[i];
		Datum		value;
		MemoryContext old;

		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!seen_add(wo->seen, tid))
			continue;
		wo->read++;
		old = MemoryContextSwitchTo(wo->tmp);
		if (wo->codes_by_tid)
		{
			/*
			 * the code from the store: no row read, no expression computed;
			 * a row the store lacks is an insert cut short, its row dead
			 */
			VarBit	   *stored = PermStoreCodeBits(wo->state, tid);

			if (stored != NULL)
				file_row(scan, wo, tid, PointerGetDatum(stored), NULL);
		}
		else if (PermRowReaderFetchValue(wo->reader, tid, scan->xs_snapshot, &value))
			file_row(scan, wo, tid, value, NULL);
		MemoryContextSwitchTo(old);
		MemoryContextReset(wo->tmp);
	}
	wo->pending.n = 0;
}

/*
 * Read the deferred rows whose key lies within emit_d of the center's:
 * one of them may lie at emit_d, and must be filed before the rows at
 * emit_d are handed out or the distance is complete
 */
static void
flush_deferred(IndexScanDesc scan, PermWideOrder *wo)
{
	int			d;

	for (d = wo->deferred_min; d <= wo->emit_d && d < PERM_NDISTANCES; d++)
	{
		PermTidList *list = &wo->deferred[d];
		int64		i;

		for (i = 0; i < list->n; i++)
			PermTidListAdd(&wo->pending, GetMemoryChunkContext(wo),
						   &list->tids[i]);
		list->n = 0;
	}
	while (wo->deferred_min < PERM_NDISTANCES &&
		   wo->deferred[wo->deferred_min].n == 0)
		wo->deferred_min++;
	file_pending(scan, wo);
}

/*
 * Hand the rest of the scan to the code store (permwidestore.c) instead
 * of sweeping the table: every row from emit_d to cap, but the first
 * emit_i at emit_d, which were handed out already, in increasing
 * distance, each with the distance of its code in the store; no row is
 * read and no expression evaluated.  The rows found by the rings and not
 * handed out yet come again from the store.
 */
static void
store_begin(IndexScanDesc scan, PermScanOpaque so, PermWideOrder *wo)
{
	PermTidList *at = &wo->found[wo->emit_d];
	int64		handed = Min(wo->emit_i, at->n);
	MemoryContext old = MemoryContextSwitchTo(so->cxt);
	int			d;

	wo->store = PermStoreScanBegin(wo->state, wo->center, wo->quals,
								   wo->nquals, wo->emit_d, wo->cap,
								   handed > 0 ? at->tids : NULL, handed);
	MemoryContextSwitchTo(old);
	for (d = wo->emit_d; d <= wo->width; d++)
		wo->found[d].n = 0;
	wo->emit_i = 0;
	wo->pending.n = 0;
	drop_deferred(wo);
	wo->bound = wo->width + 1;
}

/*
 * Hand out the next row from the code store, with its distance; false
 * when every row up to cap has been
 */
static bool
store_gettuple(IndexScanDesc scan, PermWideOrder *wo)
{
	ItemPointerData tid;
	int			d;

	if (!PermStoreScanNext(wo->store, &tid, &d))
		return false;
	scan->xs_heaptid = tid;
	scan->xs_recheck = true;
	if (scan->numberOfOrderBys > 0)
	{
		scan->xs_orderbyvals[0] = Int32GetDatum(d);
		scan->xs_orderbynulls[0] = (wo->center == NULL);
		scan->xs_recheckorderby = false;
	}
	return true;
}

/*
 * The farthest an entry's key may lie from the center's for its row to
 * pass the quals: the key's distance (substring and tail) is a lower bound
 * on the row's, and no row beyond cap passes them.  Rows the quals would
 * reject are then dropped in the leaf instead of read: the match query
 * (radius r and ORDER BY, LIMIT 1) reads only rows its radius may hold.
 */
static int
key_bound(const PermWideOrder *wo)
{
	return Min(wo->cap, PERM_MAX_HAMMING);
}

/*
 * Callback of the index-only sweep (PermWideTenantDistances): file a row
 * not seen by the rings at its distance, or read it when an entry of it
 * was missing (distance -1)
 */
static void
file_tenant_row(void *arg, ItemPointer tid, int distance)
{
	PermWideOrder *wo = (PermWideOrder *) arg;

	if (wo->seen->members > 0 &&
		seentids_lookup(wo->seen, PermTidNumber(tid)) != NULL)
		return;					/* filed by the rings */
	if (distance < 0)
		PermTidListAdd(&wo->pending, GetMemoryChunkContext(wo), tid);
	else if (distance <= wo->cap)
		PermTidListAdd(&wo->found[distance], GetMemoryChunkContext(wo), tid);
}

/*
 * Callback of the sweep of table 0 when its entries hold whole codes and
 * the rings filed by ring_is_first: file each row no ring has filed
 */
static void
sweep_whole_code(void *arg, ItemPointer tid, uint64 key, int distance)
{
	PermWideOrder *wo = (PermWideOrder *) arg;

	if (distance <= wo->cap && !ring_filed(wo, key, distance))
		PermTidListAdd(&wo->found[distance], GetMemoryChunkContext(wo), tid);
}

/*
 * The sweep of a scan confined to one tenant.  Without quals, from the
 * index alone (permwidescan.c): a row's distance is the sum of its
 * substrings' distances over the tenant's range of the tables that hold
 * them; a row with an entry missing from one of them (an insert cut short
 * by a crash, until VACUUM) is read instead.  With quals, which need the
 * whole code, every entry of the tenant's range in table 0 (which holds
 * every row of it) is read and filed.  The rows seen by the rings before
 * are filed already; after the sweep every distance is complete.  The rows
 * of a NULL code are not in the index: they come after, from their own
 * pass.
 */
static void
read_tenant(IndexScanDesc scan, PermWideOrder *wo)
{
	double		before = wo->read;

	if (wo->first_ring)
		PermWideProbeTenant(wo->state, 0, wo->tenant, wo->keys[0],
							wo->extras[0], PERM_MAX_HAMMING, sweep_whole_code,
							wo, NULL);
	else if (wo->nquals == 0 && wo->center != NULL)
		PermWideTenantDistances(wo->state, wo->tenant, wo->keys, wo->extras,
								wo->rows, wo->tmp, file_tenant_row, wo);
	else if (wo->center != NULL)
		PermWideProbeTenant(wo->state, 0, wo->tenant, wo->keys[0],
							wo->extras[0], key_bound(wo), collect_pending, wo,
							NULL);
	else
		PermWideProbeTenant(wo->state, 0, wo->tenant, 0, 0, PERM_MAX_HAMMING,
							collect_pending, wo, NULL);
	file_pending(scan, wo);
	drop_deferred(wo);			/* not seen, so filed above */
	wo->work += (wo->read - before) * WIDE_ROW_WORK;
	wo->bound = wo->width + 1;
}

/*
 * What the rings may cost before the scan sweeps: a share of reading every
 * row of the table in heap order; within a tenant, what its sweep costs,
 * each of its entries in the tables it reads (WIDE_TENANT_ENTRY_WORK each)
 */
static double
sweep_work(PermWideOrder *wo)
{
	if (wo->use_store)
		return wo->rows * WIDE_STORE_ENTRY_WORK / WIDE_SWEEP_SHARE;
	if (wo->tenant_sweep)
		return wo->rows * wo->sweep_tables * WIDE_TENANT_ENTRY_WORK;
	return wo->rows / WIDE_SWEEP_SHARE;
}

/*
 * Read the next ring (of the table with the fewest read), or sweep when
 * that ring would cost more than a share of reading every row
 */
static void
read_next(IndexScanDesc scan, PermScanOpaque so, PermWideOrder *wo)
{
	int			t = 0;
	int			u;
	int			bits;
	int			tail;
	double		ring;
	uint64	   *keys;
	int64		n;
	double		before;
	double		met_before;
	int64		i;

	for (u = 1; u < wo->m; u++)
		if (wo->rho[u] < wo->rho[t])
			t = u;
	bits = PermWideSubstringBits(wo->width, wo->m, t);
	ring = PermWideBall(bits, wo->rho[t] + 1) - PermWideBall(bits, wo->rho[t]);

	/*
	 * A tenant's size is sampled only once the rings cost more than the
	 * sample would: a near-copy's first rings need no count
	 */
	if (wo->rows < 0 && wo->center != NULL &&
		wo->work + ring * WIDE_KEY_WORK > WIDE_TENANT_FREE_WORK)
		wo->rows = tenant_rows(scan->indexRelation, wo);
	if (wo->center == NULL || wo->rho[t] + 1 > bits || !wo->tenant_known ||
		(wo->rows >= 0 &&
		 wo->work + ring * WIDE_KEY_WORK +
		 wo->rows * ring / ldexp(1.0, bits) *
		 (wo->exact ? WIDE_TENANT_ENTRY_WORK : WIDE_ROW_WORK) > sweep_work(wo)))
	{
		/* order_begin refused a scan that has neither */
		if (wo->tenant_sweep)
			read_tenant(scan, wo);
		else
			store_begin(scan, so, wo);
		return;
	}
	wo->rho[t]++;
	tail = PermWideTailBits(&wo->state->layout, t);
	keys = wide_ring(wo->keys[t] >> tail, bits, wo->rho[t], &n);
	for (i = 0; i < n; i++)
		keys[i] = (keys[i] << tail) | wo->tenant;
	met_before = wo->met;
	wo->ring_table = t;
	PermProbeRanges(wo->state, t, keys, (int) n,
					(UINT64CONST(1) << tail) - 1, wo->keys[t] | wo->tenant,
					wo->extras[t], key_bound(wo), collect_ring, wo, NULL);
	pfree(keys);
	before = wo->read;
	file_pending(scan, wo);
	wo->work += n * WIDE_KEY_WORK + (wo->read - before) * WIDE_ROW_WORK +
		(wo->met - met_before) * WIDE_TENANT_ENTRY_WORK;
	wo->bound++;
}

/*
 * amgettuple of an ordered scan (or one with neither quals nor ORDER BY)
 * of bit(n) codes: rows at distance d once d <= bound, each with its exact
 * distance; then, without a qual, the rows whose code is NULL
 */
bool
PermWideKnnGettuple(IndexScanDesc scan)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;
	PermWideOrder *wo = so->wide;

	if (wo == NULL)
	{
		if (!IsMVCCSnapshot(scan->xs_snapshot))
			elog(ERROR, "simhash_perm index scans require an MVCC snapshot");
		wo = so->wide = order_begin(scan, so);
		pgstat_count_index_scan(scan->indexRelation);
	}

	while (wo->emit_d <= wo->cap && wo->store == NULL)
	{
		PermTidList *list = &wo->found[wo->emit_d];

		if (wo->emit_d <= wo->bound && wo->deferred_min <= wo->emit_d)
			flush_deferred(scan, wo);
		if (wo->emit_d <= wo->bound && wo->emit_i < list->n)
		{
			scan->xs_heaptid = list->tids[wo->emit_i++];
			scan->xs_recheck = true;
			if (scan->numberOfOrderBys > 0)
			{
				scan->xs_orderbyvals[0] = Int32GetDatum(wo->emit_d);
				scan->xs_orderbynulls[0] = (wo->center == NULL);
				scan->xs_recheckorderby = false;
			}
			return true;
		}
		if (wo->emit_d < wo->bound)
		{
			/* complete: every row at emit_d has been handed out */
			wo->emit_d++;
			wo->emit_i = 0;
			continue;
		}
		CHECK_FOR_INTERRUPTS();
		read_next(scan, so, wo);
	}

	if (wo->store != NULL && store_gettuple(scan, wo))
		return true;

	/*
	 * a qual on the code is strict: no row whose code is NULL passes one
	 * (the leading columns' equalities are the executor's to recheck)
	 */
	if (wo->code_qual || wo->cap < 0)
		return false;

	/* the store's list of rows without a code: no row read (permtableknn.c) */
	return PermScanNextNullRow(scan, so, false);
}

/* End what a nearest-neighbour scan holds outside its memory context */
void
PermWideEndScan(IndexScanDesc scan)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;

	if (so->wide && so->wide->reader)
		PermRowReaderEnd(so->wide->reader);
}
