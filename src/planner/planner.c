/*-------------------------------------------------------------------------
 *
 * planner.c
 *		Planner support for hamming_near() and selectivity of <@.
 *
 * simhash_support (the SUPPORT function of hamming_near) turns
 *		hamming_near(col, q, k)   or   hamming_near(q, col, k)
 * into the index condition  col <@ simhash_within(q, k)  when col is the
 * column of a simhash_perm index and q and k are constant during the scan
 * (literals, parameters, outer columns of a nested loop).  The condition is
 * exact, so the call needs no recheck.  Objects are found in the schema of
 * hamming_near itself, never through search_path.
 *
 * On bit(n) codes, hamming_near(code, q, k) becomes
 * code <@ hamming_within(q, k) the same way (an index on bit(n) codes).
 *
 * Selectivity, of the operator and of hamming_near itself: the most common
 * values are tested exactly (when the query point is known at planning
 * time); the rest of the column is assumed uniform,
 * where the chance of distance <= k is the binomial tail sum C(64, i) / 2^64,
 * but never less than one row, since a near-duplicate query usually finds
 * at least the document it came from.
 *
 * IDENTIFICATION
 *	  src/planner/planner.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/supportnodes.h"
#include "parser/parsetree.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"

#include "index/perm.h"
#include "type/hamming_query.h"
#include "type/simhash_query.h"
#include "type/simhash.h"

PG_FUNCTION_INFO_V1(simhash_support);
PG_FUNCTION_INFO_V1(simhash_within_sel);
PG_FUNCTION_INFO_V1(hamming_within_sel);

/* Used when the query or the radius is not known at planning time */
#define DEFAULT_WITHIN_SEL	0.0001

/* Chance that a uniform random fingerprint is within radius of any point */
static double
binomial_tail(int radius)
{
	return simhash_count_within(SIMHASH_BITS, radius) / pow(2.0, SIMHASH_BITS);
}

/*
 * Selectivity of "var within radius of center".  With the center unknown
 * (a parameter of a generic plan), the most common values cannot be tested
 * and the whole non-NULL column is treated as uniform: the estimate is then
 * the same as for a constant that is not a common value, so generic and
 * custom plans cost alike and prepared statements keep a generic plan.
 */
static Selectivity
within_selectivity(VariableStatData *vardata, bool center_known, uint64 center,
				   int radius)
{
	double		nullfrac = 0,
				mcv_total = 0,
				selec = 0,
				rows;
	AttStatsSlot sslot;

	if (HeapTupleIsValid(vardata->statsTuple))
	{
		Form_pg_statistic stats = (Form_pg_statistic) GETSTRUCT(vardata->statsTuple);

		nullfrac = stats->stanullfrac;
		if (center_known &&
			get_attstatsslot(&sslot, vardata->statsTuple, STATISTIC_KIND_MCV,
							 InvalidOid, ATTSTATSSLOT_VALUES | ATTSTATSSLOT_NUMBERS))
		{
			int			i;

			for (i = 0; i < sslot.nvalues; i++)
			{
				uint64		v = (uint64) DatumGetInt64(sslot.values[i]);

				if (simhash_hamming(v, center) <= radius)
					selec += sslot.numbers[i];
				mcv_total += sslot.numbers[i];
			}
			free_attstatsslot(&sslot);
		}
	}
	rows = vardata->rel ? Max(vardata->rel->tuples, 1.0) : 1000.0;
	selec += Max(0.0, 1.0 - nullfrac - mcv_total) *
		Max(binomial_tail(radius), 1.0 / rows);
	CLAMP_PROBABILITY(selec);
	return selec;
}

/* Is expr a bit(n) code (rather than a 64-bit fingerprint)? */
static bool
is_code(Node *expr)
{
	Oid			type = exprType(expr);

	return type == BITOID || type == VARBITOID;
}

/*
 * Selectivity of "a width-bit code within radius of a point", for codes
 * uniform over their width (width unknown: 256), never less than a row:
 * the binomial tail sum C(width, i) / 2^width, i <= radius
 */
static Selectivity
code_within_selectivity(VariableStatData *vardata, int width, int radius)
{
	double		nullfrac = 0,
				rows,
				selec;

	if (width <= 0)
		width = 256;
	if (HeapTupleIsValid(vardata->statsTuple))
		nullfrac = ((Form_pg_statistic) GETSTRUCT(vardata->statsTuple))->stanullfrac;
	rows = vardata->rel ? Max(vardata->rel->tuples, 1.0) : 1000.0;
	selec = (1.0 - nullfrac) *
		Max(Min(1.0, PermWideBall(width, radius) / ldexp(1.0, width)), 1.0 / rows);
	CLAMP_PROBABILITY(selec);
	return selec;
}

/*
 * Selectivity of  var <@ query  (simhash or bigint <@ simhash_query; with
 * codes, bit <@ hamming_query): from the query when it is a constant, or
 * from the radius alone of simhash_within(param, k) / hamming_within(param,
 * k)
 */
static Selectivity
restriction_within(PlannerInfo *root, List *args, int varRelid, bool codes)
{
	VariableStatData vardata;
	Node	   *other;
	bool		varonleft;
	Selectivity selec = DEFAULT_WITHIN_SEL;

	if (!get_restriction_variable(root, args, varRelid, &vardata, &other, &varonleft))
		return selec;
	if (varonleft && IsA(other, Const))
	{
		Const	   *c = (Const *) other;

		if (c->constisnull)
			selec = 0;
		else if (codes)
		{
			HammingQuery *q = DatumGetHammingQuery(c->constvalue);

			selec = code_within_selectivity(&vardata, VARBITLEN(&q->code),
											q->radius);
		}
		else
		{
			SimhashQuery *q = DatumGetSimhashQuery(c->constvalue);

			selec = within_selectivity(&vardata, true, q->center, q->radius);
		}
	}
	else if (varonleft && IsA(other, FuncExpr) &&
			 list_length(((FuncExpr *) other)->args) == 2)
	{
		/* simhash_within(param, k): the radius may still be known */
		Node	   *k = estimate_expression_value(root,
												  lsecond(((FuncExpr *) other)->args));

		if (IsA(k, Const) && !((Const *) k)->constisnull)
		{
			int			radius = DatumGetInt32(((Const *) k)->constvalue);

			selec = codes ?
				code_within_selectivity(&vardata, exprTypmod(vardata.var), radius) :
				within_selectivity(&vardata, false, 0, radius);
		}
	}
	ReleaseVariableStats(vardata);
	return selec;
}

/* Restriction estimator of <@ (simhash or bigint, simhash_query) */
Datum
simhash_within_sel(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(restriction_within((PlannerInfo *) PG_GETARG_POINTER(0),
										(List *) PG_GETARG_POINTER(2),
										PG_GETARG_INT32(3), false));
}

/* Restriction estimator of <@ (bit, hamming_query) */
Datum
hamming_within_sel(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(restriction_within((PlannerInfo *) PG_GETARG_POINTER(0),
										(List *) PG_GETARG_POINTER(2),
										PG_GETARG_INT32(3), true));
}

/*
 * hamming_near(code, q, k) on bit(n) codes as the index condition
 * code <@ hamming_within(q, k)
 */
static List *
code_index_condition(SupportRequestIndexCondition *req, Oid nsp,
					 Node *indexed, Node *other, Node *k)
{
	Oid			querytype,
				opno,
				withinfn;
	Oid			argtypes[2] = {BITOID, INT4OID};
	Expr	   *query;

	querytype = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
								CStringGetDatum("hamming_query"),
								ObjectIdGetDatum(nsp));
	if (!OidIsValid(querytype))
		return NIL;
	opno = get_opfamily_member(req->opfamily, BITOID, querytype,
							   PERM_WITHIN_STRATEGY);
	if (!OidIsValid(opno))
		return NIL;
	withinfn = LookupFuncName(list_make2(makeString(get_namespace_name(nsp)),
										 makeString("hamming_within")),
							  2, argtypes, true);
	if (!OidIsValid(withinfn))
		return NIL;
	/* a bit varying column or query is the same bits: relabel it */
	if (exprType(indexed) != BITOID)
		indexed = (Node *) makeRelabelType((Expr *) indexed, BITOID, -1,
										   InvalidOid, COERCE_IMPLICIT_CAST);
	if (exprType(other) != BITOID)
		other = (Node *) makeRelabelType((Expr *) other, BITOID, -1,
										 InvalidOid, COERCE_IMPLICIT_CAST);
	query = (Expr *) makeFuncExpr(withinfn, querytype, list_make2(other, k),
								  InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	req->lossy = false;
	return list_make1(make_opclause(opno, BOOLOID, false, (Expr *) indexed,
									query, InvalidOid, InvalidOid));
}

/* hamming_near(a, b, k) as an index condition on a or b */
static List *
index_condition(SupportRequestIndexCondition *req)
{
	FuncExpr   *clause = (FuncExpr *) req->node;
	Node	   *indexed,
			   *other,
			   *k;
	Oid			nsp,
				querytype,
				lefttype,
				opno,
				withinfn;
	Oid			argtypes[1];
	Oid			any_args[1] = {InvalidOid};	/* not read with nargs -1 */
	Oid		   *within_args;
	int			nwithin_args;
	Expr	   *query;

	if (!IsA(clause, FuncExpr) || list_length(clause->args) != 3 ||
		req->indexarg > 1)
		return NIL;
	if (req->index->relam != get_index_am_oid("simhash_perm", true))
		return NIL;
	/* the code is the last column; those before it take equalities only */
	if (req->indexcol != req->index->nkeycolumns - 1)
		return NIL;

	indexed = list_nth(clause->args, req->indexarg);
	other = list_nth(clause->args, 1 - req->indexarg);
	k = lthird(clause->args);
	if (!is_pseudo_constant_for_index(req->root, other, req->index) ||
		!is_pseudo_constant_for_index(req->root, k, req->index))
		return NIL;

	/* our objects live in hamming_near's schema */
	nsp = get_func_namespace(clause->funcid);
	if (is_code(indexed))
		return code_index_condition(req, nsp, indexed, other, k);
	querytype = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
								CStringGetDatum("simhash_query"),
								ObjectIdGetDatum(nsp));
	if (!OidIsValid(querytype))
		return NIL;
	lefttype = exprType(indexed);
	opno = get_opfamily_member(req->opfamily, lefttype, querytype,
							   PERM_WITHIN_STRATEGY);
	if (!OidIsValid(opno))
		return NIL;

	/*
	 * simhash_within(fingerprint, k), which has one signature; the type is
	 * taken from it rather than by name (simhash64 since 1.4, simhash
	 * before, and this library serves databases at either version).
	 */
	withinfn = LookupFuncName(list_make2(makeString(get_namespace_name(nsp)),
										 makeString("simhash_within")),
							  -1, any_args, true);
	if (!OidIsValid(withinfn))
		return NIL;
	(void) get_func_signature(withinfn, &within_args, &nwithin_args);
	if (nwithin_args != 2 || within_args[1] != INT4OID)
		return NIL;
	argtypes[0] = within_args[0];
	/* a bigint query fingerprint is the same 64 bits: relabel it */
	if (exprType(other) != argtypes[0])
		other = (Node *) makeRelabelType((Expr *) other, argtypes[0], -1,
										 InvalidOid, COERCE_EXPLICIT_CAST);

	query = (Expr *) makeFuncExpr(withinfn, querytype, list_make2(other, k),
								  InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	req->lossy = false;
	return list_make1(make_opclause(opno, BOOLOID, false, (Expr *) indexed,
									query, InvalidOid, InvalidOid));
}

/*
 * The simhash_perm index whose first column is expr, when expr is a plain
 * column of a base relation (under a relabelling from bigint), or NULL.
 * Partial indexes do not count: their entries are not the column's.
 */
static IndexOptInfo *
near_join_index(PlannerInfo *root, Node *expr)
{
	Oid			am = get_index_am_oid("simhash_perm", true);
	RelOptInfo *rel;
	Var		   *var;
	ListCell   *lc;

	while (IsA(expr, RelabelType))
		expr = (Node *) ((RelabelType *) expr)->arg;
	if (!OidIsValid(am) || !IsA(expr, Var))
		return NULL;
	var = (Var *) expr;
	if (var->varlevelsup != 0 || var->varno < 1 ||
		var->varno >= root->simple_rel_array_size)
		return NULL;
	rel = root->simple_rel_array[var->varno];
	if (rel == NULL || rel->reloptkind != RELOPT_BASEREL)
		return NULL;
	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *index = lfirst_node(IndexOptInfo, lc);

		if (index->relam == am && index->nkeycolumns >= 1 &&
			index->indexkeys[0] == var->varattno && index->indpred == NIL)
			return index;
	}
	return NULL;
}

/*
 * Ordered pairs of distinct rows with equal values among the most common
 * values of expr: the sum over them of (f N)(f N - 1).  Runs of one
 * fingerprint longer than a leaf are seen here, not in the index sample.
 */
static double
common_value_pairs(PlannerInfo *root, Node *expr, double rows)
{
	VariableStatData vardata;
	AttStatsSlot sslot;
	double		pairs = 0;

	examine_variable(root, expr, 0, &vardata);
	if (HeapTupleIsValid(vardata.statsTuple) &&
		get_attstatsslot(&sslot, vardata.statsTuple, STATISTIC_KIND_MCV,
						 InvalidOid, ATTSTATSSLOT_NUMBERS))
	{
		int			i;

		for (i = 0; i < sslot.nnumbers; i++)
		{
			double		copies = sslot.numbers[i] * rows;

			pairs += copies * Max(copies - 1, 0.0);
		}
		free_attstatsslot(&sslot);
	}
	ReleaseVariableStats(vardata);
	return pairs;
}

/* The most of a batch's fingerprints the join estimate searches the index for */
#define NEAR_BATCH_SAMPLE	100
/* ... the fewest it uses, and how many rows of the batch the table is worth */
#define NEAR_BATCH_MIN_SAMPLE	10
#define NEAR_BATCH_PRIOR_ROWS	10

/*
 * Neighbours in x within k of a row of y, where x has the index and y is
 * another relation (a new batch), from y's own fingerprints: the values
 * ANALYZE kept for its column, each searched for in x's index, which counts
 * its neighbours within k exactly.  They are y's most common values,
 * weighted by their frequencies, and its histogram's bounds.  The bounds
 * are rows of ANALYZE's sample spread evenly over the column's order; since
 * that order says nothing of a row's near-duplicates in x, they stand for
 * a random sample of the rest of y.  *mean is the neighbours of a row of y
 * (0 for a NULL), *nsample the number of values searched.
 *
 * False (the caller estimates from x alone) when y is not another plain
 * column with statistics, when they hold fewer than NEAR_BATCH_MIN_SAMPLE
 * values, or when k is above the index's design radius: a search there
 * reads many more pages than a plan should spend.  Below it a search reads
 * about one leaf per permuted table, so at most NEAR_BATCH_SAMPLE searches
 * cost a few milliseconds of planning.
 */
static bool
near_batch_neighbours(PlannerInfo *root, Node *batch, IndexOptInfo *index,
					  int k, double *mean, int *nsample)
{
	VariableStatData vardata;
	AttStatsSlot mcv,
				hist;
	bool		have_mcv,
				have_hist;
	uint64		centers[NEAR_BATCH_SAMPLE];
	double		counts[NEAR_BATCH_SAMPLE];
	int			nmcv = 0,
				nhist = 0,
				i;
	double		nullfrac,
				mcv_freq = 0,
				neighbours = 0,
				hist_mean = 0;
	Relation	indexrel;
	bool		ok = false;
	Var		   *var;

	while (IsA(batch, RelabelType))
		batch = (Node *) ((RelabelType *) batch)->arg;
	if (!IsA(batch, Var))
		return false;
	var = (Var *) batch;
	if (var->varlevelsup != 0 || var->varno < 1 ||
		var->varno >= root->simple_rel_array_size ||
		root->simple_rel_array[var->varno] == NULL ||
		root->simple_rel_array[var->varno]->reloptkind != RELOPT_BASEREL ||
		planner_rt_fetch(var->varno, root)->relid ==
		planner_rt_fetch(index->rel->relid, root)->relid)
		return false;

	examine_variable(root, batch, 0, &vardata);
	if (!HeapTupleIsValid(vardata.statsTuple))
	{
		ReleaseVariableStats(vardata);
		return false;
	}
	nullfrac = ((Form_pg_statistic) GETSTRUCT(vardata.statsTuple))->stanullfrac;
	have_mcv = get_attstatsslot(&mcv, vardata.statsTuple, STATISTIC_KIND_MCV,
								InvalidOid, ATTSTATSSLOT_VALUES | ATTSTATSSLOT_NUMBERS);
	have_hist = get_attstatsslot(&hist, vardata.statsTuple, STATISTIC_KIND_HISTOGRAM,
								 InvalidOid, ATTSTATSSLOT_VALUES);
	if (have_mcv)
	{
		nmcv = Min(mcv.nvalues, NEAR_BATCH_SAMPLE / 2);
		for (i = 0; i < nmcv; i++)
			centers[i] = (uint64) DatumGetInt64(mcv.values[i]);
	}
	if (have_hist)
	{
		nhist = Min(hist.nvalues, NEAR_BATCH_SAMPLE - nmcv);
		/* evenly over the bounds when there are more than room */
		for (i = 0; i < nhist; i++)
			centers[nmcv + i] = (uint64)
				DatumGetInt64(hist.values[(int) ((int64) i * hist.nvalues / nhist)]);
	}

	indexrel = index_open(index->indexoid, AccessShareLock);
	if (nmcv + nhist >= NEAR_BATCH_MIN_SAMPLE &&
		k <= PermGetState(indexrel)->layout.max_distance)
	{
		PermCountWithin(indexrel, centers, nmcv + nhist, k, counts);
		for (i = 0; i < nmcv; i++)
		{
			neighbours += mcv.numbers[i] * counts[i];
			mcv_freq += mcv.numbers[i];
		}
		for (i = 0; i < nhist; i++)
			hist_mean += counts[nmcv + i] / nhist;
		neighbours += Max(0.0, 1.0 - nullfrac - mcv_freq) * hist_mean;
		*mean = neighbours;
		*nsample = nmcv + nhist;
		ok = true;
	}
	index_close(indexrel, AccessShareLock);
	if (have_mcv)
		free_attstatsslot(&mcv);
	if (have_hist)
		free_attstatsslot(&hist);
	ReleaseVariableStats(vardata);
	return ok;
}

/*
 * Selectivity of the join clause hamming_near(a.fp, b.fp, k).
 *
 * Near-duplicates are not common values: a column's statistics cannot show
 * them.  When one side is a column with a simhash_perm index, the index
 * shows them: PermSampleNearPairs (permcost.c) estimates from a few pages
 * how many pairs of distinct rows of that relation X lie at each distance.
 * The clause is then given the selectivity
 *		(ordered pairs of distinct rows of X within k) / N_X^2
 * which, for a self-join, counts every pair of distinct rows twice and
 * leaves out each row meeting itself: near-duplicate self-joins exclude
 * those (a.id < b.id), and a planner that multiplied them in would see every
 * row of the table in the join.  For a join of another relation Y (a new
 * batch) against X it gives each row of Y as many neighbours in X as a row of
 * X has: a batch that resembles the table.  Where Y's statistics allow, the
 * neighbours in X of up to a hundred of Y's own fingerprints are counted too
 * (near_batch_neighbours), and the two are weighed as that many rows of Y
 * against NEAR_BATCH_PRIOR_ROWS rows for X's figure.  A batch then gets
 * about the neighbours it has: in the Debian corpus the last 5% of the
 * packages in alphabetical order have a twentieth of the near-duplicates in
 * the rest that a package has on average, and X's figure alone was 20 times
 * too high.  X's figure still counts, as a sample of a hundred rows cannot
 * tell one near-duplicate in a hundred rows from none.  Long runs of one fingerprint
 * come from the most common values; distances the sample cannot see, and
 * data without any near-duplicates, from the uniform chance of a pair lying
 * within k (the binomial tail).
 *
 * Without such an index the clause is estimated as PostgreSQL estimates an
 * equality join without common values (1 / the larger number of distinct
 * values, which in a self-join is each row meeting itself), plus the
 * uniform chance.
 */
static Selectivity
near_join_selectivity(PlannerInfo *root, Node *a, Node *b, int k)
{
	IndexOptInfo *ia = near_join_index(root, a),
			   *ib = near_join_index(root, b),
			   *index;
	Node	   *indexed;
	VariableStatData va,
				vb;
	bool		isdefault;
	double		nd = 1;
	Selectivity selec;

	/* the larger relation is the table; the other side resembles it */
	if (ia != NULL && (ib == NULL || ia->rel->tuples >= ib->rel->tuples))
	{
		index = ia;
		indexed = a;
	}
	else
	{
		index = ib;
		indexed = b;
	}
	if (index != NULL && index->rel->tuples >= 2)
	{
		double		rows = index->rel->tuples;
		double		batch_mean;
		int			nsample;
		double		pairs[PERM_MAX_MAX_DISTANCE + 1];
		double		ordered = 0;
		Relation	indexrel;
		int			d;

		indexrel = index_open(index->indexoid, AccessShareLock);
		PermSampleNearPairs(indexrel, k, pairs);
		index_close(indexrel, AccessShareLock);
		for (d = 0; d <= k; d++)
		{
			double		at_d;

			if (pairs[d] >= 0)
				at_d = 2 * pairs[d];
			else
				at_d = rows * rows * (binomial_tail(d) - binomial_tail(d - 1));
			if (d == 0)
				at_d = Max(at_d, common_value_pairs(root, indexed, rows));
			ordered += at_d;
		}
		selec = Max(ordered / (rows * rows), binomial_tail(k));
		if (near_batch_neighbours(root, indexed == a ? b : a, index, k,
								  &batch_mean, &nsample))
			selec = Max((nsample * batch_mean / rows + NEAR_BATCH_PRIOR_ROWS * selec) /
						(nsample + NEAR_BATCH_PRIOR_ROWS), binomial_tail(k));
		CLAMP_PROBABILITY(selec);
		return selec;
	}

	examine_variable(root, a, 0, &va);
	examine_variable(root, b, 0, &vb);
	nd = Max(nd, get_variable_numdistinct(&va, &isdefault));
	nd = Max(nd, get_variable_numdistinct(&vb, &isdefault));
	ReleaseVariableStats(va);
	ReleaseVariableStats(vb);
	return Min(1.0, 1.0 / nd + binomial_tail(k));
}

/* Selectivity of hamming_near(var, const, const), or as a join clause */
static bool
near_selectivity(SupportRequestSelectivity *req)
{
	VariableStatData vardata;
	Node	   *other;
	Node	   *k;
	bool		varonleft;

	if (list_length(req->args) != 3)
		return false;
	k = estimate_expression_value(req->root, lthird(req->args));
	if (!IsA(k, Const))
		return false;
	if (is_code(linitial(req->args)))
	{
		/* bit(n) codes: uniform over their width; joins get the default */
		if (req->is_join ||
			!get_restriction_variable(req->root, list_make2(linitial(req->args),
															lsecond(req->args)),
									  req->varRelid, &vardata, &other, &varonleft))
			return false;
		if (((Const *) k)->constisnull ||
			(IsA(other, Const) && ((Const *) other)->constisnull))
			req->selectivity = 0;
		else
			req->selectivity =
				code_within_selectivity(&vardata,
										IsA(other, Const) ?
										VARBITLEN(DatumGetVarBitP(((Const *) other)->constvalue)) :
										exprTypmod(vardata.var),
										DatumGetInt32(((Const *) k)->constvalue));
		ReleaseVariableStats(vardata);
		return true;
	}
	if (req->is_join)
	{
		if (((Const *) k)->constisnull)
			req->selectivity = 0;
		else
			req->selectivity = near_join_selectivity(req->root, linitial(req->args),
													 lsecond(req->args),
													 DatumGetInt32(((Const *) k)->constvalue));
		return true;
	}
	if (!get_restriction_variable(req->root, list_make2(linitial(req->args),
														lsecond(req->args)),
								  req->varRelid, &vardata, &other, &varonleft))
		return false;
	{
		Const	   *kc = (Const *) k;
		bool		known = IsA(other, Const);

		if (kc->constisnull || (known && ((Const *) other)->constisnull))
			req->selectivity = 0;
		else
			req->selectivity =
				within_selectivity(&vardata, known,
								   known ? (uint64) DatumGetInt64(((Const *) other)->constvalue) : 0,
								   DatumGetInt32(kc->constvalue));
	}
	ReleaseVariableStats(vardata);
	return true;
}

/* The SUPPORT function of hamming_near */
Datum
simhash_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);

	if (IsA(rawreq, SupportRequestIndexCondition))
	{
		List	   *conds = index_condition((SupportRequestIndexCondition *) rawreq);

		if (conds != NIL)
			PG_RETURN_POINTER(conds);
	}
	else if (IsA(rawreq, SupportRequestSelectivity))
	{
		if (near_selectivity((SupportRequestSelectivity *) rawreq))
			PG_RETURN_POINTER(rawreq);
	}
	PG_RETURN_POINTER(NULL);
}
