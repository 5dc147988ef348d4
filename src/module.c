/*-------------------------------------------------------------------------
 *
 * module.c
 *		The simhash library: its magic block, and _PG_init, which sets up
 *		what the subsystems register when the library loads (the
 *		simhash_perm index's reloptions and settings, and the hooks by
 *		which its layout follows the rows).
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

PG_MODULE_MAGIC;

void		_PG_init(void);

/* Library load */
void
_PG_init(void)
{
	PermWideInit();
	PermInit();
	PermGrowInit();
}
