/*-------------------------------------------------------------------------
 *
 * module.c
 *		The simhash library: its magic block, and _PG_init, which sets up
 *		what the subsystems register when the library loads (the
 *		simhash_perm index's reloptions and settings, its hook on ALTER
 *		INDEX, the hooks by which its layout follows the rows, and the
 *		planner hook that keeps scans the index cannot answer from its own
 *		pages off it).
 *
 * The subsystems are the folders of src/, each with a README saying what
 * it owns and what it may call; docs/architecture.md draws their layers.
 * This file is above all of them.
 *
 * IDENTIFICATION
 *	  src/module.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "index/perm.h"
#include "pairs/pairs.h"
#include "planner/scanpaths.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/* Library load */
void
_PG_init(void)
{
	/* simhash_pairs() on a Citus table: simhash.pairs_on_workers */
	pairs_citus_init();
	PermWideInit();
	/* defines the rest of the settings, and reserves their prefix */
	PermInit();
	/* ALTER INDEX ... SET (radius) of a constraint checks the rows */
	PermRadiusInit();
	/* a young index's layout looks again at the end of a statement */
	PermGrowInit();
	/* no scan of a simhash_perm index without a condition on the code */
	SimhashPathsInit();
}
