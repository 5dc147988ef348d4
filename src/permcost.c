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
 * its first row: the rings up to the distance of the n-th neighbour, where
 * n is the query's LIMIT (or the planner's tuple fraction).  That distance
 * is estimated as for uniformly random fingerprints: the smallest r with
 * rows * C(64, <= r) / 2^64 >= n.  Near-duplicate data finds its
 * neighbours sooner, so this errs towards the sequential scan.  Reading on
 * to the end costs one table read whole, the sorting of each distance's rows
 * by TID, and, without a qual, a pass over the table for the rows with a
 * NULL fingerprint (permscan.c); a scan with neither qual nor ORDER BY
 * (which the planner may build when sequential scans are disabled) reads
 * one table whole and makes that pass.
 *
 * IDENTIFICATION
 *	  src/permcost.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/relation.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"

#include "perm.h"
#include "query.h"
#include "simhash.h"

/* The smallest constant radius among the index clauses, or -1 */
static int
clause_radius(PlannerInfo *root, IndexPath *path)
{
	int			radius = -1;
	ListCell   *lc;

	foreach(lc, path->indexclauses)
	{
		IndexClause *iclause = lfirst_node(IndexClause, lc);
		ListCell   *lc2;

		foreach(lc2, iclause->indexquals)
		{
			RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc2);
			Node	   *arg;

			if (!IsA(rinfo->clause, OpExpr))
				continue;
			arg = estimate_expression_value(root,
											lsecond(((OpExpr *) rinfo->clause)->args));
			if (IsA(arg, Const) && !((Const *) arg)->constisnull)
			{
				SimhashQuery *q = DatumGetSimhashQuery(((Const *) arg)->constvalue);

				if (radius < 0 || q->radius < radius)
					radius = q->radius;
			}
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
	int			spread;
	double		rows = Max(index->tuples, 1.0);
	double		entries = 0;
	double		descents = 0;
	double		levels = 0;
	double		descent_cost;
	int			t;

	rel = index_open(index->indexoid, NoLock);
	state = PermGetState(rel);
	layout = &state->layout;
	PermMetaSnapshot(rel, tables, &ntables);
	index_close(rel, NoLock);

	radius = clause_radius(root, path);
	if (path->indexorderbys != NIL)
	{
		int			order_r = simhash_radius_holding(rows, order_rows_wanted(root, rows), 0);

		radius = radius < 0 ? order_r : Min(radius, order_r);
	}
	else if (path->indexclauses == NIL)
		radius = 64;			/* no qual at all: every row */
	else if (radius < 0)
		radius = layout->max_distance;	/* a parameter: assume the design */
	spread = radius <= layout->max_distance ? 0 :
		PermProbeSpread(layout->blocks, layout->max_distance, radius);

	for (t = 0; t < ntables; t++)
	{
		int			p = layout->prefix_bits[t];
		double		probes = simhash_count_within(p, spread);

		entries += rows * Min(1.0, probes / pow(2.0, p));
		descents += probes;
		levels += probes * (tables[t].root_level + 1);
	}
	/* the scan reads one table whole when that is cheaper than probing */
	if (spread > 0 && levels > index->pages / Max(ntables, 1))
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
	 * An ordered scan does all of the above before its first row; reading
	 * on to the end adds one table read whole, and the NULL rows' pass.
	 */
	if (path->indexorderbys != NIL)
	{
		costs.indexStartupCost = costs.indexTotalCost;
		if (entries < rows)
			costs.indexTotalCost += rows * (cpu_index_tuple_cost + cpu_operator_cost) +
				index->pages / Max(ntables, 1) * random_page_cost;
		/* each distance's rows are sorted by TID as they are handed out */
		costs.indexTotalCost += rows * 2.0 * cpu_operator_cost *
			Max(1.0, log(rows / 65.0) / log(2.0));
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
