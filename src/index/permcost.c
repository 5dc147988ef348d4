/*-------------------------------------------------------------------------
 *
 * permcost.c
 *		simhash_perm: amcostestimate.
 *
 * A scan costs, per table, one descent per probed prefix plus the entries
 * in those prefixes: with R rows and a P-bit prefix, about R / 2^P entries
 * per probe.  Queries above the design radius probe every prefix within
 * s(r) bits (or read one table whole, whichever the scan will choose).
 * genericcostestimate() prices the entries read and the heap access from
 * the selectivity of the clause; the descents are added like btree's.
 *
 * An ordered scan (ORDER BY fp <-> q) does its index work before it returns
 * its first row: the rings that see every row nearer than the n-th
 * neighbour, where n is the query's LIMIT (or the planner's tuple
 * fraction), table by table in the default layout (PermRingsToSee).  The
 * n-th neighbour's distance is estimated as for uniformly random
 * fingerprints: the smallest r with rows * C(64, <= r) / 2^64 >= n.
 * Near-duplicate data finds its neighbours sooner, so this errs towards the
 * sequential scan.  Reading on to the end costs one table read whole, the
 * sorting of each distance's rows by TID, and, without a qual, a pass over
 * the table for the rows with a NULL fingerprint (permtableknn.c); a scan with
 * neither qual nor ORDER BY (which the planner may build when sequential
 * scans are disabled) reads one table whole and makes that pass.  A qual
 * bounds every scan of the index, ordered or not: an ordered scan with one
 * reads no farther than its radius (a radius not known at planning, a
 * parameter, is taken to be the design radius, as for unordered scans).
 * On bit(n) codes an ordered scan costs the model's rings at the design
 * radius, capped by what reading every row costs: a sweep of the table, or
 * with a code store the passes over it (permstore.c, permwidestore.c).
 *
 * IDENTIFICATION
 *	  src/index/permcost.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/relation.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"

#include "index/perm.h"
#include "index/tree/permleaf.h"
#include "type/hamming_query.h"
#include "type/simhash_query.h"
#include "type/simhash.h"

/*
 * Rows a pass over the code store hands out at least (its bounded heap,
 * permwidestore.c, less the rows at its farthest distance)
 */
#define STORE_PASS_ROWS		100

/*
 * Sort unsigned 64-bit keys (prefixes, permuted fingerprints) ascending.
 * The comparison is inlined.
 */
#define ST_SORT sort_uint64
#define ST_ELEMENT_TYPE uint64
#define ST_COMPARE(a, b) ((*(a) > *(b)) - (*(a) < *(b)))
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/*
 * The smallest constant radius among the index clauses, or -1.  A clause
 * fp ~= v (which only a constraint's check can run; permconstraint.c) counts
 * as the design radius.  On bit(n) codes (codes), the queries are
 * hamming_query values, and hamming_within(q, k) counts with k known even
 * when q is a parameter.
 */
static int
clause_radius(PlannerInfo *root, IndexPath *path, int max_distance, bool codes)
{
	int			code = path->indexinfo->nkeycolumns - 1;
	int			radius = -1;
	ListCell   *lc;

	foreach(lc, path->indexclauses)
	{
		IndexClause *iclause = lfirst_node(IndexClause, lc);
		ListCell   *lc2;

		/* the leading columns' equalities: tenant_rows() */
		if (iclause->indexcol != code)
			continue;
		foreach(lc2, iclause->indexquals)
		{
			RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc2);
			Node	   *arg;
			int			r = -1;
			int			strategy;

			if (!IsA(rinfo->clause, OpExpr))
				continue;
			strategy = get_op_opfamily_strategy(((OpExpr *) rinfo->clause)->opno,
												path->indexinfo->opfamily[code]);
			if (strategy == PERM_NEAR_DUP_STRATEGY)
				r = max_distance;
			else if (strategy == PERM_EQUAL_STRATEGY)
				r = 0;			/* fp = v on a bigint code */
			else
			{
				arg = estimate_expression_value(root,
												lsecond(((OpExpr *) rinfo->clause)->args));
				if (IsA(arg, Const) && !((Const *) arg)->constisnull)
					r = codes ?
						DatumGetHammingQuery(((Const *) arg)->constvalue)->radius :
						DatumGetSimhashQuery(((Const *) arg)->constvalue)->radius;
				else if (codes && IsA(arg, FuncExpr) &&
						 list_length(((FuncExpr *) arg)->args) == 2 &&
						 IsA(lsecond(((FuncExpr *) arg)->args), Const) &&
						 !((Const *) lsecond(((FuncExpr *) arg)->args))->constisnull)
					r = DatumGetInt32(((Const *) lsecond(((FuncExpr *) arg)->args))->constvalue);
			}
			if (r >= 0 && (radius < 0 || r < radius))
				radius = r;
		}
	}
	return radius;
}

/*
 * How many rows an ordered scan is expected to hand out: the LIMIT, or the
 * planner's tuple fraction (absolute when >= 1), or all of them.
 */
static double
order_rows_wanted(PlannerInfo *root, double rows)
{
	double		wanted = rows;

	if (root->limit_tuples > 0)
		wanted = root->limit_tuples;
	else if (root->tuple_fraction >= 1.0)
		wanted = root->tuple_fraction;
	else if (root->tuple_fraction > 0)
		wanted = root->tuple_fraction * rows;
	return Max(1.0, Min(wanted, rows));
}

/*
 * amcostestimate of an index on bit(n) codes, from the model that chose
 * its layout (permwidelayout.c): key ranges probed, each a leaf's search, and
 * candidates, each a row the scan reads.  A radius scan hands its
 * candidates to the executor, which reads them (the selectivity says how
 * many); an ordered scan reads them itself, before its first row.  An
 * ordered scan is priced as if its rows lay within the design radius (or
 * a smaller qual's): the index is for near-duplicates, and a query whose
 * neighbours lie far sweeps the table instead (permwideknn.c), which
 * the price of reading every row caps.  A radius beyond what the tables
 * can answer cheaply (a radius of 100 on 256 bits) makes the scan read
 * whole tables and nearly every row: the sequential scan wins.
 */
/*
 * The equality clauses of a path on the leading columns (those before the
 * code), into *quals; false when a leading column has none (the index
 * refuses such a scan: permwidescan.c, and the planner never builds one:
 * src/planner/scanpaths.c)
 */
bool
PermPathTenantEqualities(IndexPath *path, List **quals)
{
	IndexOptInfo *index = path->indexinfo;
	int			col;

	*quals = NIL;
	for (col = 0; col < index->nkeycolumns - 1; col++)
	{
		bool		found = false;
		ListCell   *lc;

		foreach(lc, path->indexclauses)
		{
			IndexClause *iclause = lfirst_node(IndexClause, lc);
			ListCell   *lc2;

			if (iclause->indexcol != col)
				continue;
			foreach(lc2, iclause->indexquals)
			{
				RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc2);

				if (IsA(rinfo->clause, OpExpr) &&
					get_op_opfamily_strategy(((OpExpr *) rinfo->clause)->opno,
											 index->opfamily[col]) ==
					PERM_EQUAL_STRATEGY)
				{
					*quals = lappend(*quals, rinfo);
					found = true;
				}
			}
		}
		if (!found)
			return false;
	}
	return true;
}

/*
 * The rows of the tenant a path's equalities on the leading columns name:
 * the index's rows times their selectivity; -1 when a leading column has
 * none
 */
static double
tenant_rows(PlannerInfo *root, IndexPath *path, double rows)
{
	List	   *quals;

	if (!PermPathTenantEqualities(path, &quals))
		return -1;
	if (quals == NIL)
		return rows;
	return Max(1.0, rows * clauselist_selectivity(root, quals,
												  path->indexinfo->rel->relid,
												  JOIN_INNER, NULL));
}

/* Has the path a clause on the code (the last column)? */
static bool
has_code_clause(IndexPath *path)
{
	ListCell   *lc;

	foreach(lc, path->indexclauses)
		if (lfirst_node(IndexClause, lc)->indexcol ==
			path->indexinfo->nkeycolumns - 1)
			return true;
	return false;
}

static void
code_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				  const PermLayout *layout, double store_pages,
				  Cost *indexStartupCost,
				  Cost *indexTotalCost, Selectivity *indexSelectivity,
				  double *indexCorrelation, double *indexPages)
{
	IndexOptInfo *index = path->indexinfo;
	GenericCosts costs;
	double		rows = Max(index->tuples, 1.0);
	double		probes,
				candidates,
				probe_cost,
				sweep_cost;
	int			code = index->nkeycolumns - 1;
	int			radius = clause_radius(root, path, layout->max_distance,
									   index->opcintype[code] == BITOID);
	bool		code_clause = has_code_clause(path);

	if (layout->tenants > 0)
	{
		double		tenant = tenant_rows(root, path, rows);

		if (tenant < 0)
		{
			/*
			 * No tenant named: the scan reads every row in heap order, and
			 * the executor then reads each again by its TID
			 */
			*indexStartupCost = index->rel->pages * seq_page_cost +
				rows * (cpu_tuple_cost + 4 * cpu_operator_cost);
			*indexTotalCost = *indexStartupCost + rows * random_page_cost;
			*indexSelectivity = 1.0;
			*indexCorrelation = 0;
			*indexPages = index->pages;
			return;
		}
		rows = tenant;
	}

	if (radius < 0)
		radius = code_clause || path->indexorderbys != NIL ?
			layout->max_distance : layout->width;
	if (path->indexorderbys != NIL)
		radius = Min(radius, layout->max_distance);
	/* an ordered scan reads every entry it meets (permwideknn.c) */
	PermWideModel(layout, rows, radius, path->indexorderbys == NIL,
				  &probes, &candidates);
	/* a key range probed: about two rows of a sequential scan (README.perm) */
	probe_cost = probes * 10.0 * cpu_operator_cost;
	sweep_cost = index->rel->pages * seq_page_cost +
		rows * (cpu_tuple_cost + 4 * cpu_operator_cost) +
		index->pages / Max(layout->ntables, 1) * seq_page_cost;

	MemSet(&costs, 0, sizeof(costs));
	costs.numIndexTuples = Max(1.0, candidates);
	genericcostestimate(root, path, loop_count, &costs);
	costs.indexStartupCost += probe_cost;
	costs.indexTotalCost += probe_cost;
	costs.indexSelectivity = Max(costs.indexSelectivity,
								 candidates / Max(index->tuples, 1.0));
	if (store_pages > 0 && path->indexorderbys != NIL)
	{
		/*
		 * With a code store (permstore.c) an ordered scan reads it instead
		 * of sweeping the table: its pages in order and a comparison an
		 * entry, once for the first STORE_PASS_ROWS rows, and once more
		 * for each fourfold of the rows wanted beyond (permwidestore.c)
		 */
		double		wanted = order_rows_wanted(root, rows);
		double		passes = 1;

		if (wanted > STORE_PASS_ROWS)
			passes += ceil(log(wanted / STORE_PASS_ROWS) / log(4.0));
		sweep_cost = Min(sweep_cost, passes *
						 (store_pages * seq_page_cost + rows * cpu_operator_cost));
	}
	if (layout->tenants > 0)
	{
		/* a tenant's sweep: its rows, read by their TIDs */
		sweep_cost = rows * (random_page_cost + cpu_tuple_cost +
							 4 * cpu_operator_cost);
	}
	if (path->indexorderbys != NIL || !code_clause)
	{
		/* the scan reads its candidates' rows itself, or sweeps */
		double		own = candidates * (random_page_cost + cpu_tuple_cost +
										4 * cpu_operator_cost);

		if (!code_clause && path->indexorderbys == NIL)
			own = sweep_cost;
		costs.indexStartupCost = Min(costs.indexTotalCost + own, sweep_cost);
		costs.indexTotalCost = costs.indexStartupCost;
		if (!code_clause)
			costs.indexTotalCost += index->rel->pages * seq_page_cost +
				index->rel->tuples * cpu_tuple_cost;	/* the NULL rows */
	}
	*indexStartupCost = costs.indexStartupCost;
	*indexTotalCost = costs.indexTotalCost;
	*indexSelectivity = costs.indexSelectivity;
	*indexCorrelation = 0;
	*indexPages = costs.numIndexPages;
}

/* amcostestimate */
void
permcostestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				 Cost *indexStartupCost, Cost *indexTotalCost,
				 Selectivity *indexSelectivity, double *indexCorrelation,
				 double *indexPages)
{
	IndexOptInfo *index = path->indexinfo;
	GenericCosts costs;
	Relation	rel;
	PermState  *state;
	PermLayout *layout;
	PermTable	tables[PERM_MAX_TABLES];
	int			ntables;
	int			radius;
	int			ring;
	int			ring_tables;
	double		rows = Max(index->tuples, 1.0);
	double		entries = 0;
	double		descents = 0;
	double		levels = 0;
	double		probe_pages = 0;
	double		descent_cost;
	int			t;

	rel = index_open(index->indexoid, NoLock);
	state = PermGetState(rel);
	layout = &state->layout;
	if (layout->width > 0)
	{
		PermLayout	code_layout = *layout;

		/* passes over the store serve the index without leading columns */
		double		store_pages = state->has_codes && layout->tenants == 0 ?
			PermStorePages(state) : 0;

		index_close(rel, NoLock);
		code_costestimate(root, path, loop_count, &code_layout, store_pages,
						  indexStartupCost, indexTotalCost, indexSelectivity,
						  indexCorrelation, indexPages);
		return;
	}
	PermMetaSnapshot(rel, tables, &ntables);

	radius = clause_radius(root, path, layout->max_distance, false);
	/* a radius not known yet (a parameter): assume the design radius */
	if (path->indexclauses != NIL && radius < 0)
		radius = layout->max_distance;
	if (path->indexorderbys != NIL)
	{
		/*
		 * The n-th row, at order_r, is handed out once every row within
		 * order_r - 1 has been seen; with a qual of radius k < order_r, the
		 * scan reads on until it has seen every row within k.
		 */
		int			order_r = simhash_radius_holding(rows, order_rows_wanted(root, rows), 0);

		radius = radius < 0 ? order_r - 1 : Min(radius, order_r - 1);
		PermRingsToSee(layout, Max(radius, 0), &ring, &ring_tables);
	}
	else
	{
		if (path->indexclauses == NIL)
			radius = 64;		/* no qual at all: every row */
		ring = radius <= layout->max_distance ? 0 :
			PermPrefixFlips(layout->blocks, layout->max_distance, radius);
		ring_tables = ntables;
	}

	for (t = 0; t < ntables; t++)
	{
		int			p = layout->prefix_bits[t];
		double		probes = simhash_count_within(p, t < ring_tables ? ring : ring - 1);

		entries += rows * Min(1.0, probes / pow(2.0, p));
		descents += probes;
		levels += probes * (tables[t].root_level + 1);

		/*
		 * As the scans weigh their probes against a pass over one table
		 * whole: a radius search all of its probes (permtablescan.c,
		 * search_queries), an ordered scan each ring it reads (permtableknn.c,
		 * order_read_ring), of which the last, read in this table, is the
		 * largest.
		 */
		if (path->indexorderbys == NIL)
			probe_pages += probes * PermProbePages(state, t,
												   tables[t].root_level);
		else if (ring > 0 && (t == ring_tables - 1 || !PermRingsByTable(layout)))
			probe_pages += (probes - simhash_count_within(p, ring - 1)) *
				PermProbePages(state, t, tables[t].root_level);
	}
	index_close(rel, NoLock);

	/* the scan reads one table whole when that is cheaper than probing */
	if (ring > 0 && probe_pages > index->pages / Max(ntables, 1))
	{
		entries = rows;
		descents = 1;
		levels = tables[0].root_level + 1;
	}

	MemSet(&costs, 0, sizeof(costs));
	/* in rows of one table, so genericcostestimate's page count is right */
	costs.numIndexTuples = Max(1.0, entries / ntables);
	genericcostestimate(root, path, loop_count, &costs);

	/* the entries of the other tables, and one descent per probe */
	descent_cost = descents *
		(ceil(log(rows) / log(2.0)) + 50.0 * (levels / Max(descents, 1.0))) *
		cpu_operator_cost;
	costs.indexTotalCost += (entries - costs.numIndexTuples) *
		(cpu_index_tuple_cost + cpu_operator_cost);
	costs.indexStartupCost += descent_cost;
	costs.indexTotalCost += descent_cost;

	/*
	 * An ordered scan does all of the above before its first row.  With a
	 * qual, nothing lies beyond its radius: the scan stops there, having
	 * sorted only the matches by TID as it hands them out.  Without one,
	 * reading on to the end adds one table read whole, the sorting of every
	 * row, and the NULL rows' pass.  (A bitmap scan is priced by this same
	 * path when the query has an ORDER BY the index could serve, so a
	 * radius search must not pay for a read to the end either way.)
	 */
	if (path->indexorderbys != NIL)
	{
		double		handed = rows;

		costs.indexStartupCost = costs.indexTotalCost;
		if (path->indexclauses != NIL)
			handed = Max(1.0, costs.indexSelectivity * rows);
		else if (entries < rows)
			costs.indexTotalCost += rows * (cpu_index_tuple_cost + cpu_operator_cost) +
				index->pages / Max(ntables, 1) * random_page_cost;
		/* each distance's rows are sorted by TID as they are handed out */
		costs.indexTotalCost += handed * 2.0 * cpu_operator_cost *
			Max(1.0, log(handed / 65.0) / log(2.0));
	}
	/* without a qual, the NULL rows are found by reading the table */
	if (path->indexclauses == NIL)
		costs.indexTotalCost += index->rel->pages * seq_page_cost +
			index->rel->tuples * cpu_tuple_cost;

	*indexStartupCost = costs.indexStartupCost;
	*indexTotalCost = costs.indexTotalCost;
	*indexSelectivity = costs.indexSelectivity;
	*indexCorrelation = 0;
	*indexPages = costs.numIndexPages;
}

/*
 * How many pairs of distinct rows of the index's relation lie at each
 * distance d = 0..k: the evidence for the join selectivity of hamming_near
 * (planner.c), which the column's statistics cannot give, since a
 * near-duplicate is not a common value.
 *
 * The sample is PERM_PAIR_SAMPLE_PAGES pages spread evenly over the index.
 * In each leaf, the entries that share their table's P-bit prefix are
 * compared with one another.  A pair of rows at distance d shares table t's
 * prefix with chance f(t, d) = C(64 - P_t, d) / C(64, d) when its d differing
 * bits fall anywhere (1 for d = 0), so the whole index holds about
 * pairs(d) * F(d) such pairs, F(d) being the sum of f(t, d) over the tables,
 * nearly all of them on one leaf.  A sample of S of the M pages after the
 * metapage finds count(d) of them, and
 *		pairs(d) = count(d) * M / (S * F(d)).
 * Pairs split across two leaves are missed; that matters only for runs of
 * one fingerprint longer than a leaf, which the column's most common values
 * show (the caller takes the larger of the two).  A distance with
 * F(d) < PERM_PAIR_MIN_SHARE is not estimated: pairs[d] is set to -1.
 *
 * The pages are the same ones for the same index, so plans do not change
 * from one planning to the next.  Costs S page reads.
 */
#define PERM_PAIR_SAMPLE_PAGES	32
#define PERM_PAIR_MIN_SHARE		0.05

/* Count, by distance up to k, the pairs of keys that share their top p bits */
static SIMHASH_POPCNT void
count_leaf_pairs(uint64 *keys, int n, int p, int k, double *count)
{
	int			start,
				i,
				j;

	sort_uint64(keys, n);
	for (start = 0; start < n; start = i)
	{
		for (i = start + 1; i < n; i++)
		{
			if (p > 0 && (keys[i] ^ keys[start]) >> (64 - p) != 0)
				break;
		}
		for (j = start; j < i; j++)
		{
			int			m;

			for (m = j + 1; m < i; m++)
			{
				int			d = simhash_hamming(keys[j], keys[m]);

				if (d <= k)
					count[d] += 1;
			}
		}
	}
}

void
PermSampleNearPairs(Relation index, int k, double *pairs)
{
	PermState  *state = PermGetState(index);
	PermLayout *layout = &state->layout;
	BlockNumber first;
	uint16		layout_flag;
	BlockNumber nblocks = PermLayoutBlocks(index, &first, &layout_flag);
	double		count[PERM_MAX_MAX_DISTANCE + 1] = {0};
	uint64	   *keys;
	int			npages,
				i,
				d;

	Assert(k >= 0 && k <= PERM_MAX_MAX_DISTANCE);
	npages = Min(nblocks > first ? nblocks - first : 0, PERM_PAIR_SAMPLE_PAGES);
	keys = palloc(sizeof(uint64) * PERM_LEAF_MAX_ENTRIES);
	for (i = 0; i < npages; i++)
	{
		BlockNumber blkno = first + (BlockNumber) ((i + 0.5) * (nblocks - first) / npages);
		Buffer		buf;
		Page		page;
		int			n = 0,
					table = 0;

		CHECK_FOR_INTERRUPTS();
		buf = ReadBuffer(index, blkno);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		/* a page added by an insert that did not finish holds nothing */
		if (!PageIsNew(page) && !PermPageIsStore(index, buf))
		{
			PermCheckPage(state, buf, -1, -1);
			/* a page of the current layout's trees only (permgrow.c) */
			if (PermPageIsLeaf(page) &&
				(PermPageGetOpaque(page)->flags & PERM_ODD_LAYOUT) == layout_flag)
			{
				table = PermPageGetOpaque(page)->table;
				n = PermLeafReadKeys(page, keys);
			}
		}
		UnlockReleaseBuffer(buf);
		if (n > 1)
			count_leaf_pairs(keys, n, layout->prefix_bits[table], k, count);
	}
	pfree(keys);

	for (d = 0; d <= k; d++)
	{
		double		share = 0;
		int			t;

		for (t = 0; t < layout->ntables; t++)
		{
			int			free_bits = SIMHASH_BITS - layout->prefix_bits[t];

			if (d <= free_bits)
				share += (simhash_count_within(free_bits, d) -
						  simhash_count_within(free_bits, d - 1)) /
					(simhash_count_within(SIMHASH_BITS, d) -
					 simhash_count_within(SIMHASH_BITS, d - 1));
		}
		if (npages == 0)
			pairs[d] = 0;
		else if (share < PERM_PAIR_MIN_SHARE)
			pairs[d] = -1;
		else
			pairs[d] = count[d] * (nblocks - first) / (npages * share);
	}
}
