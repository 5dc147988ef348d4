/*-------------------------------------------------------------------------
 *
 * distancequals.c
 *		The forms people write first, fp <-> q <= k and
 *		hamming_distance(fp, q) <= k, planned on a simhash_perm index as
 *		hamming_near(fp, q, k) is.
 *
 * A pgvector user writes WHERE fp <-> $1 <= 3.  The clause's top-level
 * operator is the built-in int4le, whose function has no support function
 * of ours: PostgreSQL's index matching (indxpath.c) only asks the support
 * function of the clause's top-level function, and only when one side of it
 * is the index column, so it never sees the distance inside.  This file
 * does the matching from the set_rel_pathlist hook (scanpaths.c) instead:
 *
 *	1. recognise, among the relation's restriction clauses, a comparison of
 *	   int4 whose one side is our distance (the function behind <->,
 *	   hamming_distance or bit_hamming_distance, found by its C symbol and
 *	   schema, never by search_path) and whose other side is a bound:
 *		  d <= k,  d < k,  k >= d,  k > d;
 *	2. build, for each, the call hamming_near(a, b, r) with the radius r
 *	   the bound allows, and hand the relation's simhash_perm indexes to
 *	   PostgreSQL's own create_index_paths with that call standing in for
 *	   the clause, so the support function of hamming_near (planner.c)
 *	   makes the index condition, tenants' equalities, bitmap paths and
 *	   costs exactly as it does for hamming_near;
 *	3. give the new paths the user's clause back as the one their index
 *	   condition enforces, so the plan shows the index condition, and
 *	   EXPLAIN the clause as the user wrote it where it is rechecked.
 *
 * Exactness: with a constant bound the radius is exact (k, or k - 1 for
 * <), capped at the codes' width (every pair is within it), and the index
 * condition replaces the clause; a negative radius matches nothing and is
 * left to the sequential scan.  With a bound known only at run time (a
 * parameter of a generic plan, an expression) the radius is
 * LEAST(GREATEST(k, 0), width), which hamming_within accepts for every k,
 * and the clause stays as a filter on the rows the index returns: the
 * index hands out a superset, the filter the exact rows, and no value of k
 * raises an error that the sequential scan would not.
 *
 * Row estimate: the relation's size was estimated before this hook, with
 * PostgreSQL's default selectivity for an inequality on an expression (a
 * third of the table).  The selectivity of hamming_near, which knows the
 * binomial tail and the column's common values, replaces it, and the rows
 * of the paths already built follow.
 *
 * Not matched: a join clause (a.fp <-> b.fp <= 3 between two tables; write
 * hamming_near, whose support function also builds the parameterized scan
 * of a nested loop), a clause under OR, and pgvector's hamming_distance on
 * bit (a float8 of another extension).  README.md says so.
 *
 * IDENTIFICATION
 *	  src/planner/distancequals.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "access/htup_details.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/varbit.h"

#include "index/perm.h"
#include "planner/scanpaths.h"
#include "type/simhash.h"

/* A clause the user wrote and the hamming_near call that stands in for it */
typedef struct DistanceClause
{
	RestrictInfo *clause;		/* as written: d <= k and its kin */
	RestrictInfo *near;			/* hamming_near(a, b, r) */
	bool		recheck;		/* r known only at run time: keep the clause */
} DistanceClause;

/*
 * Is funcid our Hamming distance (of two fingerprints or of two bit
 * strings)?  Known by its C symbol in our library's language, so that a
 * user's function of the same name is not taken for it; *bits tells which.
 */
static bool
is_distance_function(Oid funcid, bool *bits)
{
	HeapTuple	tuple;
	Form_pg_proc proc;
	bool		isnull;
	Datum		src;
	char	   *symbol;
	bool		ours = false;

	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (!HeapTupleIsValid(tuple))
		return false;
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	if (proc->prolang == ClanguageId && proc->pronargs == 2)
	{
		src = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_prosrc, &isnull);
		if (!isnull)
		{
			symbol = TextDatumGetCString(src);
			if (strcmp(symbol, "simhash_hamming_distance") == 0)
				ours = true, *bits = false;
			else if (strcmp(symbol, "simhash_bit_hamming_distance") == 0)
				ours = true, *bits = true;
			pfree(symbol);
		}
	}
	ReleaseSysCache(tuple);
	return ours;
}

/*
 * The distance d and the bound k of "d <= k" and its kin; false when the
 * clause is not one.  *strict for < and >.
 */
static bool
split_bound(Expr *clause, Expr **distance, Node **bound, bool *strict)
{
	OpExpr	   *op;

	if (!IsA(clause, OpExpr) || list_length(((OpExpr *) clause)->args) != 2)
		return false;
	op = (OpExpr *) clause;
	set_opfuncid(op);
	switch (op->opfuncid)
	{
		case F_INT4LE:
		case F_INT4LT:
			*distance = linitial(op->args);
			*bound = lsecond(op->args);
			*strict = (op->opfuncid == F_INT4LT);
			return true;
		case F_INT4GE:
		case F_INT4GT:
			*distance = lsecond(op->args);
			*bound = linitial(op->args);
			*strict = (op->opfuncid == F_INT4GT);
			return true;
		default:
			return false;
	}
}

/* The function and arguments of a call of two arguments, operator or not */
static bool
split_call(Expr *expr, Oid *funcid, Node **a, Node **b)
{
	List	   *args;

	if (IsA(expr, OpExpr))
	{
		set_opfuncid((OpExpr *) expr);
		*funcid = ((OpExpr *) expr)->opfuncid;
		args = ((OpExpr *) expr)->args;
	}
	else if (IsA(expr, FuncExpr))
	{
		*funcid = ((FuncExpr *) expr)->funcid;
		args = ((FuncExpr *) expr)->args;
	}
	else
		return false;
	if (list_length(args) != 2)
		return false;
	*a = linitial(args);
	*b = lsecond(args);
	return true;
}

/* Does the expression read a column of the relation? */
static bool
reads_rel(Node *expr, RelOptInfo *rel)
{
	return bms_is_member(rel->relid, pull_varnos(NULL, expr));
}

/* LEAST(GREATEST(k, 0), width): a radius hamming_within accepts */
static Node *
clamped_radius(Node *k, Node *width)
{
	MinMaxExpr *greatest = makeNode(MinMaxExpr);
	MinMaxExpr *least = makeNode(MinMaxExpr);

	greatest->minmaxtype = INT4OID;
	greatest->op = IS_GREATEST;
	greatest->args = list_make2(k, makeConst(INT4OID, -1, InvalidOid,
											 sizeof(int32), Int32GetDatum(0),
											 false, true));
	greatest->location = -1;
	least->minmaxtype = INT4OID;
	least->op = IS_LEAST;
	least->args = list_make2(greatest, width);
	least->location = -1;
	return (Node *) least;
}

/* The width of a bit string constant, -1 when it is not one */
static int
constant_width(Node *expr)
{
	while (IsA(expr, RelabelType))
		expr = (Node *) ((RelabelType *) expr)->arg;
	if (!IsA(expr, Const) || ((Const *) expr)->constisnull)
		return -1;
	return VARBITLEN(DatumGetVarBitP(((Const *) expr)->constvalue));
}

/*
 * hamming_near(a, b, r) standing in for the clause, or NULL when the
 * clause is not a bound on our distance between a column of rel and a
 * value known for the scan, or its radius is negative.
 */
static Expr *
near_call(RelOptInfo *rel, Expr *clause, bool *recheck)
{
	Expr	   *distance;
	Node	   *bound,
			   *a,
			   *b,
			   *other,
			   *radius;
	bool		strict,
				bits;
	Oid			distfn,
				nearfn;
	Oid			argtypes[3];
	int			width;

	if (!split_bound(clause, &distance, &bound, &strict) ||
		!split_call(distance, &distfn, &a, &b) ||
		!is_distance_function(distfn, &bits))
		return NULL;
	/* one side reads the table, the other and the bound do not */
	if (reads_rel(bound, rel) || contain_volatile_functions(bound) ||
		reads_rel(a, rel) == reads_rel(b, rel))
		return NULL;
	other = reads_rel(a, rel) ? b : a;
	if (contain_volatile_functions(other))
		return NULL;

	/* hamming_near in the distance's own schema, with matching arguments */
	if (bits)
	{
		argtypes[0] = argtypes[1] = BITOID;
		width = constant_width(other);
	}
	else
	{
		/* (bigint, bigint), or simhash64 with either side relabelled */
		if (exprType(a) == INT8OID && exprType(b) == INT8OID)
			argtypes[0] = argtypes[1] = INT8OID;
		else
		{
			argtypes[0] = argtypes[1] = (exprType(a) == INT8OID) ?
				exprType(b) : exprType(a);
			if (exprType(a) == INT8OID)
				a = (Node *) makeRelabelType((Expr *) a, argtypes[0], -1,
											 InvalidOid, COERCE_IMPLICIT_CAST);
			if (exprType(b) == INT8OID)
				b = (Node *) makeRelabelType((Expr *) b, argtypes[0], -1,
											 InvalidOid, COERCE_IMPLICIT_CAST);
		}
		width = SIMHASH_BITS;
	}
	argtypes[2] = INT4OID;
	nearfn = LookupFuncName(list_make2(makeString(get_namespace_name(get_func_namespace(distfn))),
									   makeString("hamming_near")),
							3, argtypes, true);
	if (!OidIsValid(nearfn))
		return NULL;

	if (IsA(bound, Const) && width >= 0)
	{
		int64		r;

		if (((Const *) bound)->constisnull)
			return NULL;
		r = (int64) DatumGetInt32(((Const *) bound)->constvalue) - (strict ? 1 : 0);
		if (r < 0)
			return NULL;
		radius = (Node *) makeConst(INT4OID, -1, InvalidOid, sizeof(int32),
									Int32GetDatum((int32) Min(r, width)),
									false, true);
		*recheck = false;
	}
	else
	{
		Node	   *maxwidth;

		if (width >= 0)
			maxwidth = (Node *) makeConst(INT4OID, -1, InvalidOid,
										  sizeof(int32), Int32GetDatum(width),
										  false, true);
		else
			maxwidth = (Node *) makeFuncExpr(F_LENGTH_BIT, INT4OID,
											 list_make1(copyObject(other)),
											 InvalidOid, InvalidOid,
											 COERCE_EXPLICIT_CALL);
		radius = clamped_radius(copyObject(bound), maxwidth);
		*recheck = true;
	}
	return (Expr *) makeFuncExpr(nearfn, BOOLOID, list_make3(a, b, radius),
								 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

/*
 * A restriction clause standing in for the user's: the same clause but
 * for its expression, with nothing of the original's cached estimates.
 */
static RestrictInfo *
stand_in(RestrictInfo *rinfo, Expr *clause)
{
	RestrictInfo *copy = makeNode(RestrictInfo);

	memcpy(copy, rinfo, sizeof(RestrictInfo));
	copy->clause = clause;
	copy->orclause = NULL;
	copy->norm_selec = -1;
	copy->outer_selec = -1;
	copy->eval_cost.startup = -1;
	copy->parent_ec = NULL;
	copy->mergeopfamilies = NIL;
	copy->left_ec = copy->right_ec = NULL;
	copy->left_em = copy->right_em = NULL;
	copy->scansel_cache = NIL;
	copy->hashjoinoperator = InvalidOid;
	return copy;
}

/* The user's clause in place of each stand-in, in a path and below it */
static void
restore_clauses(Path *path, List *clauses)
{
	ListCell   *lc;

	switch (nodeTag(path))
	{
		case T_IndexPath:
			foreach(lc, ((IndexPath *) path)->indexclauses)
			{
				IndexClause *iclause = lfirst_node(IndexClause, lc);
				ListCell   *lc2;

				foreach(lc2, clauses)
				{
					DistanceClause *dc = lfirst(lc2);

					if (iclause->rinfo == dc->near)
					{
						iclause->rinfo = dc->clause;
						iclause->lossy = iclause->lossy || dc->recheck;
					}
				}
			}
			break;
		case T_BitmapHeapPath:
			restore_clauses(((BitmapHeapPath *) path)->bitmapqual, clauses);
			break;
		case T_BitmapAndPath:
			foreach(lc, ((BitmapAndPath *) path)->bitmapquals)
				restore_clauses(lfirst(lc), clauses);
			break;
		case T_BitmapOrPath:
			foreach(lc, ((BitmapOrPath *) path)->bitmapquals)
				restore_clauses(lfirst(lc), clauses);
			break;
		default:
			break;
	}
}

/*
 * The relation's size with hamming_near's selectivity in place of the
 * default a third that the clause was estimated with; the paths already
 * built follow.
 */
static void
reestimate_rows(PlannerInfo *root, RelOptInfo *rel, List *clauses)
{
	double		ratio = 1.0;
	ListCell   *lc;

	foreach(lc, clauses)
	{
		DistanceClause *dc = lfirst(lc);
		Selectivity old_sel,
					new_sel;

		old_sel = clause_selectivity(root, (Node *) dc->clause, 0,
									 JOIN_INNER, NULL);
		new_sel = clause_selectivity(root, (Node *) dc->near, 0,
									 JOIN_INNER, NULL);
		if (old_sel > 0 && new_sel < old_sel)
		{
			ratio *= new_sel / old_sel;
			dc->clause->norm_selec = new_sel;
		}
	}
	if (ratio >= 1.0)
		return;
	rel->rows = clamp_row_est(rel->rows * ratio);
	foreach(lc, rel->pathlist)
	{
		Path	   *path = lfirst(lc);

		if (path->param_info == NULL)
			path->rows = clamp_row_est(path->rows * ratio);
	}
	foreach(lc, rel->partial_pathlist)
	{
		Path	   *path = lfirst(lc);

		path->rows = clamp_row_est(path->rows * ratio);
	}
}

/* Called by the set_rel_pathlist hook before it drops unanswerable scans */
void
SimhashAddDistancePaths(PlannerInfo *root, RelOptInfo *rel)
{
	List	   *perm_indexes = NIL;
	List	   *clauses = NIL;
	List	   *saved_indexlist;
	List	   *saved_restrict = NIL;
	ListCell   *lc,
			   *ls;

	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *index = lfirst(lc);

		if ((void *) index->amcostestimate == (void *) permcostestimate)
			perm_indexes = lappend(perm_indexes, index);
	}
	if (perm_indexes == NIL)
		return;

	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		DistanceClause *dc;
		Expr	   *near;
		bool		recheck;

		if (rinfo->pseudoconstant ||
			(near = near_call(rel, rinfo->clause, &recheck)) == NULL)
			continue;
		dc = palloc(sizeof(DistanceClause));
		dc->clause = rinfo;
		dc->near = stand_in(rinfo, near);
		dc->recheck = recheck;
		clauses = lappend(clauses, dc);
	}
	if (clauses == NIL)
		return;

	reestimate_rows(root, rel, clauses);

	/*
	 * The simhash_perm indexes alone, each matching the stand-ins in place
	 * of the user's clauses; put back as they were once the paths are built.
	 */
	saved_indexlist = rel->indexlist;
	rel->indexlist = perm_indexes;
	foreach(lc, perm_indexes)
	{
		IndexOptInfo *index = lfirst(lc);
		List	   *quals = NIL;
		ListCell   *lc2;

		saved_restrict = lappend(saved_restrict, index->indrestrictinfo);
		foreach(lc2, index->indrestrictinfo)
		{
			RestrictInfo *rinfo = lfirst(lc2);
			ListCell   *lc3;

			foreach(lc3, clauses)
			{
				DistanceClause *dc = lfirst(lc3);

				if (dc->clause == rinfo)
					rinfo = dc->near;
			}
			quals = lappend(quals, rinfo);
		}
		index->indrestrictinfo = quals;
	}

	create_index_paths(root, rel);

	rel->indexlist = saved_indexlist;
	forboth(lc, perm_indexes, ls, saved_restrict)
		((IndexOptInfo *) lfirst(lc))->indrestrictinfo = lfirst(ls);
	foreach(lc, rel->pathlist)
		restore_clauses(lfirst(lc), clauses);
	foreach(lc, rel->partial_pathlist)
		restore_clauses(lfirst(lc), clauses);
}
