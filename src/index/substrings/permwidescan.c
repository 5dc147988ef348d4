/*-------------------------------------------------------------------------
 *
 * permwidescan.c
 *		simhash_perm: the radius scan of an index on bit(n) codes
 *		(multi-index hashing, permwide.c), and what the nearest-neighbour
 *		scan (permwideknn.c) shares with it.
 *
 * A radius scan (code <@ hamming_within(q, r)) probes table t at radius
 * PermWideProbeRadius(m, r, t): every substring within that radius of the
 * query's, as one sorted list of key ranges (PermProbeRanges), or, when
 * the ball has more keys than the table has leaves, the whole table with
 * each key tested.  Where keys keep a tail (permwide.c), an entry whose key
 * lies more than r from the query's is dropped in the leaf: the key's
 * distance is a lower bound on the code's.  Every row found is a
 * candidate, handed out for the executor's recheck of the qual on the
 * row's whole code; a row found in several tables is handed out once
 * (permscan.c).
 *
 * IDENTIFICATION
 *	  src/index/substrings/permwidescan.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relscan.h"
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
probe_ball(Relation index, int t, uint64 key, uint16 extra, int rho,
		   int radius, uint64 tenant, double leaves,
		   PermMatchCallback callback, void *arg, PermPinList *pins)
{
	const PermLayout *layout = &PermGetState(index)->layout;
	int			bits = layout->prefix_bits[t];
	int			tail = PermWideTailBits(layout, t);
	uint64	   *ranges;
	int64		n;
	int64		i;

	if (PermWideBall(bits, rho) > 2 * leaves)
	{
		PermWideProbeTenant(index, t, tenant, key, extra,
							tail > 0 ? radius : rho, callback, arg, pins);
		return;
	}
	ranges = palloc_extended(Max(1.0, PermWideBall(bits, rho)) * sizeof(uint64),
							 MCXT_ALLOC_HUGE);
	n = PermNeighbourKeys(key >> tail, bits - 1, 0, rho, false, ranges);
	for (i = 0; i < n; i++)
		ranges[i] = (ranges[i] << tail) | tenant;
	PermProbeRanges(index, t, ranges, (int) n, (UINT64CONST(1) << tail) - 1,
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
PermWideScanQuals(IndexScanDesc scan, const PermLayout *layout,
				  PermWideQual *quals)
{
	Relation	index = scan->indexRelation;
	bool		bit = index->rd_opcintype[PermCodeColumn(index)] == BITOID;
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
		if (sk->sk_attno != PermCodeColumn(index) + 1)
			continue;
		if (sk->sk_flags & SK_ISNULL)
			return -1;
		if (sk->sk_strategy == PERM_NEAR_DUP_STRATEGY)
		{
			quals[n].code = PermCodeBits(index, sk->sk_argument);
			quals[n].radius = PermConstraintRadius(scan, PermGetState(index));
		}
		else if (sk->sk_strategy == PERM_EQUAL_STRATEGY)
		{
			/* code = v on a bigint code: radius 0 */
			quals[n].code = PermCodeBits(index,
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

			quals[n].code = PermCodeBits(index, UInt64GetDatum(q->center));
			quals[n].radius = q->radius;
		}
		PermWideCheckWidth(index, layout->width, VARBITLEN(quals[n].code));
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
	PermState  *state = PermGetState(index);
	const PermLayout *layout = &state->layout;
	PermWideQual   *quals = palloc(Max(1, scan->numberOfKeys) * sizeof(PermWideQual));
	PermWideQual   *query = NULL;
	uint64		keys[PERM_MAX_TABLES];
	uint16		extras[PERM_MAX_TABLES];
	uint64		tenant = 0;
	double		leaves = PermWideTableLeaves(index, layout->ntables);
	int			nquals = PermWideScanQuals(scan, layout, quals);
	int			i,
				t;

	if (nquals < 0)
		return;
	if (layout->tenants > 0)
	{
		bool		none;

		if (!PermScanTenantBits(scan, &tenant, &none))
			PermRefuseScanWithoutTenant(index);
		if (none)
			return;
	}
	for (i = 0; i < nquals; i++)
		if (query == NULL || quals[i].radius < query->radius)
			query = &quals[i];
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

		PermWideProbeTenant(index, 0, tenant, 0, 0, PERM_MAX_HAMMING,
							callback, arg, pins);
		PermTidListAddRowsWithoutCode(index, &nulls, CurrentMemoryContext,
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
			probe_ball(index, t, keys[t], extras[t],
					   Min(rho, layout->prefix_bits[t]), query->radius, tenant,
					   leaves, callback, arg, pins);
	}
}

