/*-------------------------------------------------------------------------
 *
 * paths.h
 *		The scans the planner may build on a simhash_perm index (paths.c).
 *
 * IDENTIFICATION
 *	  src/planner/paths.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SIMHASH_PLANNER_PATHS_H
#define SIMHASH_PLANNER_PATHS_H

extern void SimhashPathsInit(void);

#endif							/* SIMHASH_PLANNER_PATHS_H */
