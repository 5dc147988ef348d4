/*-------------------------------------------------------------------------
 *
 * scanpaths.h
 *		The scans the planner may build on a simhash_perm index (scanpaths.c).
 *
 * IDENTIFICATION
 *	  src/planner/scanpaths.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SIMHASH_PLANNER_SCANPATHS_H
#define SIMHASH_PLANNER_SCANPATHS_H

struct PlannerInfo;
struct RelOptInfo;

extern void SimhashPathsInit(void);

/* distancequals.c: d <= k planned as hamming_near */
extern void SimhashAddDistancePaths(struct PlannerInfo *root,
									struct RelOptInfo *rel);

#endif							/* SIMHASH_PLANNER_SCANPATHS_H */
