/*-------------------------------------------------------------------------
 *
 * scanpaths.c
 *		The scans the planner may build on a simhash_perm index: only those
 *		with a condition on the code, or an ORDER BY on it.
 *
 * A simhash_perm index holds an entry for every row whose code is not
 * NULL, and nothing for the others.  A scan whose conditions all lie on the
 * leading columns (WHERE site_id = 7), or that has none (the count(*) of an
 * index-only scan, a partial index chosen for its predicate alone), must
 * return the rows whose code is NULL too, and the index can find them only
 * by reading the table and computing each row's code: the owner's index
 * expression, run for a query that never asked for it.  Such a scan costs
 * more than the sequential scan it stands in for, so it is never wanted,
 * and it would run the table owner's code (as the caller) where a
 * sequential scan of the same query runs none.
 *
 * The access method cannot refuse a scan: the planner builds an index path
 * for any condition on any column of an index that takes optional keys, and
 * pricing it out does not work (PostgreSQL 18 prefers a path with fewer
 * disabled nodes whatever its cost, and a bitmap heap path is not disabled
 * by its index path).  So the set_rel_pathlist hook, which PostgreSQL
 * provides to delete or modify a relation's paths, drops every path that
 * scans a simhash_perm index without a condition on its code column or an
 * ORDER BY on it: plain and index-only scans, bitmap heap scans with such
 * an index anywhere in their bitmap tree, and those under a Gather.  A
 * sequential scan is added back when anything was dropped, since add_path
 * may have discarded it in favour of a dropped path (with enable_seqscan
 * off, or under PostgreSQL 18's disabled-node counting).
 *
 * The access method still answers such a scan whole if it is ever asked
 * (permwidescan.c, permknn.c: the NULL rows read from the table, as the
 * caller).
 *
 * IDENTIFICATION
 *	  src/planner/scanpaths.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/pathnodes.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"

#include "index/perm.h"
#include "planner/scanpaths.h"

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;

/*
 * Does the index path scan a simhash_perm index without a condition on its
 * code (the last key column) and without an ORDER BY on it?
 */
static bool
scans_without_code(IndexPath *ipath)
{
	IndexOptInfo *index = ipath->indexinfo;
	ListCell   *lc;

	if ((void *) index->amcostestimate != (void *) permcostestimate)
		return false;
	if (ipath->indexorderbys != NIL)
		return false;
	foreach(lc, ipath->indexclauses)
	{
		if (lfirst_node(IndexClause, lc)->indexcol == index->nkeycolumns - 1)
			return false;
	}
	return true;
}

/* Does the path, or any path of its bitmap tree, scan so? */
static bool
path_scans_without_code(Path *path)
{
	ListCell   *lc;

	switch (nodeTag(path))
	{
		case T_IndexPath:
			return scans_without_code((IndexPath *) path);
		case T_BitmapHeapPath:
			return path_scans_without_code(((BitmapHeapPath *) path)->bitmapqual);
		case T_BitmapAndPath:
			foreach(lc, ((BitmapAndPath *) path)->bitmapquals)
				if (path_scans_without_code(lfirst(lc)))
					return true;
			return false;
		case T_BitmapOrPath:
			foreach(lc, ((BitmapOrPath *) path)->bitmapquals)
				if (path_scans_without_code(lfirst(lc)))
					return true;
			return false;
		case T_GatherPath:
			return path_scans_without_code(((GatherPath *) path)->subpath);
		case T_GatherMergePath:
			return path_scans_without_code(((GatherMergePath *) path)->subpath);
		default:
			return false;
	}
}

/* The paths of list that do not scan so; *dropped set when some did */
static List *
keep_paths(List *paths, bool *dropped)
{
	List	   *kept = NIL;
	ListCell   *lc;

	foreach(lc, paths)
	{
		Path	   *path = lfirst(lc);

		if (path_scans_without_code(path))
			*dropped = true;
		else
			kept = lappend(kept, path);
	}
	return kept;
}

/* The set_rel_pathlist hook */
static void
drop_scans_without_code(PlannerInfo *root, RelOptInfo *rel, Index rti,
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

	rel->pathlist = keep_paths(rel->pathlist, &dropped);
	rel->partial_pathlist = keep_paths(rel->partial_pathlist, &dropped);
	if (dropped)
		add_path(rel, create_seqscan_path(root, rel, rel->lateral_relids, 0));
}

/* Install the hook; called from _PG_init */
void
SimhashPathsInit(void)
{
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = drop_scans_without_code;
}
