/*-------------------------------------------------------------------------
 *
 * scanpaths.c
 *		The scans the planner may build on a simhash_perm index: those the
 *		index answers from its own pages, reading no row the caller's
 *		row-level security hides.
 *
 * A simhash_perm index answers from its pages, as a btree does: its tables
 * hold every row with a code, its store lists the rows whose code is NULL
 * (permstore.c).  Some scans it cannot answer so, and it refuses them
 * rather than read the table: a scan of an index with leading columns
 * without an equality on each (the rows of a NULL tenant are in no
 * table), and, on an index built before simhash 1.6, an ordered scan that
 * may reach the rows whose code is NULL (no list of them) or the far rows
 * of bit(n) codes (no code store).  A scan with no condition on the code
 * and no ORDER BY on it (the count(*) of an index-only scan, a partial
 * index chosen for its predicate alone, a tenant's equality alone) is
 * answered but never wanted: it costs more than the sequential scan it
 * stands in for.  And the nearest-neighbour scan within a tenant of 64-bit
 * fingerprints with a condition on the code around another point than its
 * ORDER BY's (or of bit(n) codes on an index whose store keeps no codes)
 * reads each candidate's row to learn its distance, computing the index
 * expression on it before the executor applies row-level security: on a
 * table with security quals for the caller it is not built.
 *
 * The access method cannot refuse a scan at plan time: the planner builds
 * an index path for any condition on any column of an index that takes
 * optional keys, and pricing it out does not work (PostgreSQL 18 prefers a
 * path with fewer disabled nodes whatever its cost, and a bitmap heap path
 * is not disabled by its index path).  So the set_rel_pathlist hook, which
 * PostgreSQL provides to delete or modify a relation's paths, drops every
 * such path: plain and index-only scans, bitmap heap scans with such an
 * index anywhere in their bitmap tree, and those under a Gather.  A
 * sequential scan is added back when anything was dropped, since add_path
 * may have discarded it in favour of a dropped path (with enable_seqscan
 * off, or under PostgreSQL 18's disabled-node counting).
 *
 * IDENTIFICATION
 *	  src/planner/scanpaths.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "nodes/pathnodes.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"

#include "index/perm.h"
#include "planner/scanpaths.h"

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;

/*
 * Does the relation have quals of row-level security (or of a security
 * barrier view) that the executor applies after the index hands out a row?
 * They stand at a lower security level than the query's own quals.
 */
static bool
has_security_quals(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte)
{
	ListCell   *lc;

	if (rte->securityQuals != NIL)
		return true;
	foreach(lc, rel->baserestrictinfo)
		if (lfirst_node(RestrictInfo, lc)->security_level < root->qual_security_level)
			return true;
	return false;
}

/*
 * Could a scan of the index path's simhash_perm index not be answered
 * from the index's own pages, or read a row that the caller's row-level
 * security hides?  Such a path is dropped:
 *	- no condition on the code (the last key column) and no ORDER BY on it:
 *	  a count(*) of an index-only scan, a partial index chosen for its
 *	  predicate, a tenant's equality alone; priced above the sequential
 *	  scan it stands in for, and never wanted;
 *	- a leading column without its equality: the index refuses it;
 *	- ORDER BY without a condition on the code (a scan that reaches its
 *	  end hands out the rows whose code is NULL last) on an index built
 *	  before simhash 1.6, which does not list them;
 *	- ORDER BY on bit(n) codes without leading columns, on an index built
 *	  before simhash 1.6, which has no code store for the far rows;
 *	- ORDER BY on a table with row-level security for the caller, where
 *	  the scan reads candidate rows to learn their distance (a tenant's
 *	  codes, except 64-bit ones without a qual on them, which its entries
 *	  hold whole; codes without a tenant come from the code store): it
 *	  would compute the index expression on rows the policy hides before
 *	  the executor applies it.
 */
static bool
unanswerable_scan(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte,
				  IndexPath *ipath)
{
	IndexOptInfo *index = ipath->indexinfo;
	bool		code_qual = false;
	bool		ordered = (ipath->indexorderbys != NIL);
	ListCell   *lc;
	Relation	irel;
	PermState  *state;
	bool		drop = false;
	List	   *equalities;

	if ((void *) index->amcostestimate != (void *) permcostestimate)
		return false;
	foreach(lc, ipath->indexclauses)
	{
		if (lfirst_node(IndexClause, lc)->indexcol == index->nkeycolumns - 1)
			code_qual = true;
	}
	if (!ordered && !code_qual)
		return true;
	if (index->nkeycolumns > 1 && !PermPathTenantEqualities(ipath, &equalities))
		return true;
	if (!ordered)
		return false;

	/* the index's own state: what its pages hold (the planner has it locked) */
	irel = index_open(index->indexoid, NoLock);
	state = PermGetState(irel);
	if (!state->has_store && !code_qual)
		drop = true;
	else if (state->layout.width > 0 && state->layout.tenants == 0 &&
			 !state->has_codes)
		drop = true;
	else if (state->layout.width > 0 && state->layout.tenants > 0 &&
			 !state->has_codes && !(state->layout.width <= 64 && !code_qual) &&
			 has_security_quals(root, rel, rte))
		drop = true;
	index_close(irel, NoLock);
	return drop;
}

/* Does the path, or any path of its bitmap tree, scan so? */
static bool
path_is_unanswerable(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte,
					 Path *path)
{
	ListCell   *lc;

	switch (nodeTag(path))
	{
		case T_IndexPath:
			return unanswerable_scan(root, rel, rte, (IndexPath *) path);
		case T_BitmapHeapPath:
			return path_is_unanswerable(root, rel, rte, ((BitmapHeapPath *) path)->bitmapqual);
		case T_BitmapAndPath:
			foreach(lc, ((BitmapAndPath *) path)->bitmapquals)
				if (path_is_unanswerable(root, rel, rte, lfirst(lc)))
					return true;
			return false;
		case T_BitmapOrPath:
			foreach(lc, ((BitmapOrPath *) path)->bitmapquals)
				if (path_is_unanswerable(root, rel, rte, lfirst(lc)))
					return true;
			return false;
		case T_GatherPath:
			return path_is_unanswerable(root, rel, rte, ((GatherPath *) path)->subpath);
		case T_GatherMergePath:
			return path_is_unanswerable(root, rel, rte, ((GatherMergePath *) path)->subpath);
		default:
			return false;
	}
}

/* The paths of list that do not scan so; *dropped set when some did */
static List *
keep_paths(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte,
		   List *paths, bool *dropped)
{
	List	   *kept = NIL;
	ListCell   *lc;

	foreach(lc, paths)
	{
		Path	   *path = lfirst(lc);

		if (path_is_unanswerable(root, rel, rte, path))
			*dropped = true;
		else
			kept = lappend(kept, path);
	}
	return kept;
}

/* The set_rel_pathlist hook */
static void
drop_unanswerable_scans(PlannerInfo *root, RelOptInfo *rel, Index rti,
						RangeTblEntry *rte)
{
	bool		dropped = false;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);

	/* only a plain table's own scans use its indexes */
	if (rel->reloptkind != RELOPT_BASEREL &&
		rel->reloptkind != RELOPT_OTHER_MEMBER_REL)
		return;
	if (rte->rtekind != RTE_RELATION || rel->indexlist == NIL)
		return;

	SimhashAddDistancePaths(root, rel);
	rel->pathlist = keep_paths(root, rel, rte, rel->pathlist, &dropped);
	rel->partial_pathlist = keep_paths(root, rel, rte, rel->partial_pathlist,
									   &dropped);
	if (dropped)
		add_path(rel, create_seqscan_path(root, rel, rel->lateral_relids, 0));
}

/* Install the hook; called from _PG_init */
void
SimhashPathsInit(void)
{
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = drop_unanswerable_scans;
}
