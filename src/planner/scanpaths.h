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

extern void SimhashPathsInit(void);

#endif							/* SIMHASH_PLANNER_SCANPATHS_H */
