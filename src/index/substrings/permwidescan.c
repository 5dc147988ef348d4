/*-------------------------------------------------------------------------
 *
 * permwidescan.c
 *		simhash_perm: the radius scan of an index on bit(n) codes
 *		(multi-index hashing, permwidelayout.c), what the nearest-neighbour
 *		scan (permwideknn.c) shares with it, and one tenant's entries read
 *		whole.
 *
 * A radius scan (code <@ hamming_within(q, r)) probes table t at radius
 * PermWideProbeRadius(m, r, t): every substring within that radius of the
 * query's, as one sorted list of key ranges (PermProbeRanges), or, when
 * the ball has more keys than the table has leaves, the whole table with
 * each key tested.  Where keys keep a tail (permwidelayout.c), an entry whose key
 * lies more than r from the query's is dropped in the leaf: the key's
 * distance is a lower bound on the code's.  Every row found is a
 * candidate, handed out for the executor's recheck of the qual on the
 * row's whole code; a row found in several tables is handed out once
 * (permscan.c).
 *
 * A tenant read whole.  In an index with leading equality columns
 * (permtenant.c) a tenant's entries are one key range of each table.  A
 * nearest-neighbour scan whose rings within the tenant would cost more
 * than reading the tenant whole (permwideknn.c) reads that range instead.
 * Without quals it needs no row: the substrings partition the code, and
 * table t's key holds substring t and, in its tail, substrings t + 1 ..
 * t + n whole (PermWideTailSubstrings), so a row's distance from the query
 * is the sum of its keys' distances over the tables
 * PermWideTenantNextTable() steps through (tables 0 and 2 for a
 * fingerprint in four 16-bit substrings whose keys keep the next 16 bits).
 * The sums are kept per row in a hash table keyed by the TID: a row of a
 * large tenant costs one entry per table read, about 35 ns each
 * (docs/reports/tenant_bench_10M.txt).  A row whose entry is missing from
 * one of the tables read (its insert was cut short by a crash, and VACUUM
 * has not removed what it left) has no complete sum: it is handed out as
 * such, and the scan reads it.
 *
 * IDENTIFICATION
 *	  src/index/substrings/permwidescan.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relscan.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "index/perm.h"
#include "index/permscan.h"
#include "type/hamming_query.h"
#include "type/simhash.h"
#include "type/simhash_query.h"

/* Leaves of one table, about: the index's pages shared by its tables */
double
PermWideTableLeaves(Relation index, int m)
{
	return Max(1.0, (double) (RelationGetNumberOfBlocks(index) - 1) / m);
}

/*
 * Probe table t for every row whose substring lies within rho of the
 * query's and whose key (substring and tail) within radius of key, the
 * query's key: as key ranges, one per substring of the ball, or the table
 * (the tenant's part of it) read whole when its ball has more keys than
 * the table has leaves.  A table whose keys keep no tail tests the
 * substring alone, at rho when read whole.
 */
static void
probe_ball(PermState *state, int t, uint64 key, uint16 extra, int rho,
		   int radius, uint64 tenant, double leaves,
		   PermMatchCallback callback, void *arg, PermPinList *pins)
{
	const PermLayout *layout = &state->layout;
	int			bits = layout->prefix_bits[t];
	int			tail = PermWideTailBits(layout, t);
	uint64	   *ranges;
	int64		n;
	int64		i;

	if (PermWideBall(bits, rho) > 2 * leaves)
	{
		PermWideProbeTenant(state, t, tenant, key, extra,
							tail > 0 ? radius : rho, callback, arg, pins);
		return;
	}
	ranges = palloc_extended(Max(1.0, PermWideBall(bits, rho)) * sizeof(uint64),
							 MCXT_ALLOC_HUGE);
	n = PermNeighbourKeys(key >> tail, bits - 1, 0, rho, false, ranges);
	for (i = 0; i < n; i++)
		ranges[i] = (ranges[i] << tail) | tenant;
	PermProbeRanges(state, t, ranges, (int) n, (UINT64CONST(1) << tail) - 1,
					key | tenant, extra, tail > 0 ? radius : PERM_MAX_HAMMING,
					callback, arg, pins);
	pfree(ranges);
}

/*
 * The scan's quals on the code, into quals[] (room for numberOfKeys):
 * code <@ hamming_within(q, r) on bit(n), fp <@ simhash_within(q, r) on a
 * fingerprint after leading columns, and a constraint's fp ~= v (at the
 * constraint's radius); each code's width checked against the index's.
 * Returns their number, or -1 when a NULL makes the scan match nothing.
 * The leading columns' equality keys are permtenant.c's.
 */
int
PermWideScanQuals(IndexScanDesc scan, PermState *state, PermWideQual *quals)
{
	Relation	index = scan->indexRelation;
	const PermLayout *layout = &state->layout;
	bool		bit = state->code_bits;
	int			n = 0;
	int			i;

	for (i = 0; i < scan->numberOfKeys; i++)
	{
		ScanKey		sk = &scan->keyData[i];

		/*
		 * a leading column's equality is permtenant.c's; any other qual
		 * on a leading column (bigint's class has <@ too) is the
		 * executor's to recheck
		 */
		if (sk->sk_attno != state->code_column + 1)
			continue;
		if (sk->sk_flags & SK_ISNULL)
			return -1;
		if (sk->sk_strategy == PERM_NEAR_DUP_STRATEGY)
		{
			quals[n].code = PermCodeBits(bit, sk->sk_argument);
			quals[n].radius = PermConstraintRadius(scan, state);
		}
		else if (sk->sk_strategy == PERM_EQUAL_STRATEGY)
		{
			/* code = v on a bigint code: radius 0 */
			quals[n].code = PermCodeBits(bit,
										 Int64GetDatum((int64) PermEqualityValue(sk)));
			quals[n].radius = 0;
		}
		else if (bit)
		{
			HammingQuery *q = DatumGetHammingQuery(sk->sk_argument);

			quals[n].code = &q->code;
			quals[n].radius = q->radius;
		}
		else
		{
			SimhashQuery *q = DatumGetSimhashQuery(sk->sk_argument);

			quals[n].code = PermCodeBits(bit, UInt64GetDatum(q->center));
			quals[n].radius = q->radius;
		}
		PermCheckCodeWidth(index, layout->width, VARBITLEN(quals[n].code));
		n++;
	}
	return n;
}

/*
 * A scan of an index with leading columns that leaves one of them without
 * an equality cannot be confined to a tenant's key range, and the rows
 * whose leading value is NULL are in none: only the table could answer
 * it.  The planner never builds one (src/planner/scanpaths.c); asked all
 * the same, the index refuses rather than read the table.
 */
void
PermRefuseScanWithoutTenant(Relation index)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("index \"%s\" cannot answer a scan without an equality on each of its leading columns",
					RelationGetRelationName(index)),
			 errdetail("Its tables are kept per tenant; the scan would have to read every row of the table.")));
}

/*
 * The radius scan: every row whose key in some table lies within that
 * table's probe radius of the query, for the qual of smallest radius (the
 * executor rechecks every qual on the row), inside the tenant's key range
 * when the index has leading columns.  Without a qual on the code, every
 * row of the tenant, those whose code is NULL included (read from the
 * table's list of rows without a code); without an equality on every
 * leading column, refused (the planner never builds such a scan).
 * A NULL query matches nothing.
 */
void
PermWideSearch(IndexScanDesc scan, PermMatchCallback callback, void *arg,
			   PermPinList *pins)
{
	Relation	index = scan->indexRelation;
	PermScanOpaque so = (PermScanOpaque) scan->opaque;
	PermState  *state = so->state;
	const PermLayout *layout = &state->layout;
	PermWideQual *query = NULL;
	uint64		keys[PERM_MAX_TABLES];
	uint16		extras[PERM_MAX_TABLES];
	uint64		tenant = so->tenant;
	double		leaves = PermWideTableLeaves(index, layout->ntables);
	int			i,
				t;

	/* the quals and the tenant as the rescan prepared them */
	if (so->qual_null)
		return;
	if (!so->tenant_known)
		PermRefuseScanWithoutTenant(index);
	if (so->tenant_none)
		return;
	for (i = 0; i < so->nquals; i++)
		if (query == NULL || so->wide_quals[i].radius < query->radius)
			query = &so->wide_quals[i];
	if (query == NULL)
	{
		/*
		 * only the leading columns' equalities: the tenant's rows (table 0
		 * holds each once), and those whose code is NULL, which pass these
		 * quals too (as in a sequential scan: a DELETE through this plan
		 * must reach them), from the store's list of every tenant's, for
		 * the executor's recheck of the equalities
		 */
		PermTidList nulls = {0};
		int64		i;

		PermWideProbeTenant(state, 0, tenant, 0, 0, PERM_MAX_HAMMING,
							callback, arg, pins);
		PermTidListAddRowsWithoutCode(state, &nulls, CurrentMemoryContext,
									  NULL);
		for (i = 0; i < nulls.n; i++)
			callback(arg, &nulls.tids[i], 0, 0);
		return;
	}
	PermWideKeys(layout, query->code, keys, extras);
	for (t = 0; t < layout->ntables; t++)
	{
		int			rho = PermWideProbeRadius(layout->ntables, query->radius, t);

		if (rho >= 0)
			probe_ball(state, t, keys[t], extras[t],
					   Min(rho, layout->prefix_bits[t]), query->radius, tenant,
					   leaves, callback, arg, pins);
	}
}

/*
 * A row of the tenant: its distance so far.  In a simplehash table keyed
 * by the TID as an integer.
 */
typedef struct TenantRow
{
	uint64		tid;			/* block << 16 | offset */
	int32		distance;		/* the sum of its substrings' distances */
	int16		tables;			/* tables that held an entry of it */
	char		status;			/* simplehash's */
} TenantRow;

#define SH_PREFIX		tenantrows
#define SH_ELEMENT_TYPE	TenantRow
#define SH_KEY_TYPE		uint64
#define SH_KEY			tid
#define SH_HASH_KEY(tb, key)	hash_combine(murmurhash32((uint32) ((key) >> 32)), murmurhash32((uint32) (key)))
#define SH_EQUAL(tb, a, b)		((a) == (b))
#define SH_SCOPE		static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* What the callback of one table's read needs */
typedef struct SubstringSum
{
	tenantrows_hash *rows;
	uint64		query;			/* the query's key in the table read */
	int			rest;			/* its keys' low bits, left out of the sum */
} SubstringSum;

/*
 * Every entry of table t whose key lies within radius of key, read from
 * the tenant's whole key range (the whole table when there are no leading
 * columns: tenant is then 0)
 */
void
PermWideProbeTenant(PermState *state, int t, uint64 tenant, uint64 key,
					uint16 extra, int radius, PermMatchCallback callback,
					void *arg, PermPinList *pins)
{
	const PermLayout *layout = &state->layout;
	uint64		hi = layout->tenants > 0 ?
		tenant | PERM_TENANT_CODE_MASK : PG_UINT64_MAX;

	PermProbeRange(state, t, tenant, hi, key | tenant, extra, radius, callback,
				   arg, pins);
}

/* Callback of one table's read: add an entry's substrings' distance */
SIMHASH_POPCNT
static void
add_substring(void *arg, ItemPointer tid, uint64 key, int distance)
{
	SubstringSum *sum = (SubstringSum *) arg;
	TenantRow  *row;
	bool		found;

	row = tenantrows_insert(sum->rows, PermTidNumber(tid), &found);
	if (!found)
	{
		row->distance = 0;
		row->tables = 0;
	}
	/* the tenant's bits agree: above rest, only whole substrings differ */
	row->distance += simhash_hamming((key ^ sum->query) >> sum->rest, 0);
	row->tables++;
}

/* What forwarding an entry of a table that holds whole codes needs */
typedef struct WholeCodes
{
	void		(*callback) (void *arg, ItemPointer tid, int distance);
	void	   *arg;
} WholeCodes;

/* Callback of the read of such a table: the entry's distance is the row's */
static void
forward_entry(void *arg, ItemPointer tid, uint64 key, int distance)
{
	WholeCodes *wc = (WholeCodes *) arg;

	wc->callback(wc->arg, tid, distance);
}

/*
 * Every row of the tenant with its distance from the query, whose key in
 * table t is keys[t] (and extra bits extras[t]), from the index alone:
 * callback(arg, tid, d) for each, d = -1 for a row with an entry missing
 * from a table read.  When table 0's entries hold the whole code, its
 * range alone gives every distance, each handed on as its leaf is read
 * (the callback must then take no lock).  Otherwise rows, the tenant's
 * size about, sizes the hash table of the sums; tmp holds it, and is
 * reset.
 */
void
PermWideTenantDistances(PermState *state, uint64 tenant, const uint64 *keys,
						const uint16 *extras, double rows, MemoryContext tmp,
						void (*callback) (void *arg, ItemPointer tid,
										  int distance),
						void *arg)
{
	const PermLayout *layout = &state->layout;
	int			ntables = PermWideTenantTables(layout);
	tenantrows_hash *hash;
	tenantrows_iterator it;
	TenantRow  *row;
	SubstringSum sum;
	int			t,
				next;

	if (ntables == 1 && PermWideEntryHoldsCode(layout, 0))
	{
		WholeCodes	wc;

		wc.callback = callback;
		wc.arg = arg;
		PermWideProbeTenant(state, 0, tenant, keys[0], extras[0],
							PERM_MAX_HAMMING, forward_entry, &wc, NULL);
		return;
	}
	hash = tenantrows_create(tmp, (uint32) Min(Max(64.0, rows * 1.5),
											   64.0 * 1024 * 1024),
							 NULL);
	sum.rows = hash;
	for (t = 0; t < layout->ntables; t = next)
	{
		CHECK_FOR_INTERRUPTS();
		next = PermWideTenantNextTable(layout, t, &sum.rest);
		sum.query = keys[t] | tenant;
		PermWideProbeTenant(state, t, tenant, keys[t], 0, PERM_MAX_HAMMING,
							add_substring, &sum, NULL);
	}
	tenantrows_start_iterate(hash, &it);
	while ((row = tenantrows_iterate(hash, &it)) != NULL)
	{
		ItemPointerData tid;

		ItemPointerSet(&tid, (BlockNumber) (row->tid >> 16),
					   (OffsetNumber) (row->tid & 0xFFFF));
		callback(arg, &tid, row->tables == ntables ? row->distance : -1);
	}
	tenantrows_destroy(hash);
	MemoryContextReset(tmp);
}
