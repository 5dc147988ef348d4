/*-------------------------------------------------------------------------
 *
 * permtables.c
 *		simhash_perm: the engine of 64-bit fingerprints, the permuted tables
 *		of Manku, Jain and Das Sarma (PermTablesEngine).
 *
 * Each table keys a row on its fingerprint permuted so that one
 * combination of blocks leads (permlayout.c); a query within the design
 * radius probes one exact prefix in every table, a farther one the
 * prefixes within a few flips (README.perm, "Any radius").  This file holds
 * the engine's table of functions, which the shared parts call (perm.h,
 * PermEngine), and its two short entries: a row's keys, and the check of
 * an exclusion constraint, decided from the keys alone.  The radius scan
 * is in permtablescan.c, the nearest-neighbour scan in permtableknn.c.
 *
 * IDENTIFICATION
 *	  src/index/tables/permtables.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relscan.h"
#include "utils/memutils.h"

#include "index/perm.h"
#include "index/permscan.h"

/*
 * A row's key in each table: its fingerprint permuted by the table's
 * lookup tables.  Every row has a key (a NULL fingerprint never gets here).
 */
static bool
tables_row_keys(Relation index, PermState *state, const Datum *values,
				const bool *isnull, ItemPointer tid, KeyTid *keys)
{
	uint64		fp = (uint64) DatumGetInt64(values[0]);
	int			t;

	for (t = 0; t < state->layout.ntables; t++)
	{
		keys[t].key = PermPermute(&state->perm[t], fp);
		keys[t].tid = *tid;
		keys[t].extra = 0;
	}
	return true;
}

/*
 * An exclusion constraint's check: the entries within the constraint's
 * radius of the new row's fingerprint, decided from the keys alone (a key
 * is the whole fingerprint, permuted), their leaves pinned until the check
 * ends.  A NULL fingerprint conflicts with nothing.
 */
static void
tables_constraint_search(IndexScanDesc scan)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;
	MemoryContext old = MemoryContextSwitchTo(so->cxt);

	/* the new row's fingerprint, at the constraint's radius (its ~=) */
	if (!so->qual_null)
		PermSearchConstraint(so->state,
							 so->quals[0].center, so->quals[0].radius,
							 &so->matches, &so->pins);
	MemoryContextSwitchTo(old);
}

/*
 * The scan's quals, each permuted for every table (PermQualsToQueries):
 * ~= at the constraint's radius (permconstraint.c)
 */
static void
tables_prepare(IndexScanDesc scan)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;

	so->nquals = scan->numberOfKeys;
	so->quals = palloc(Max(1, so->nquals) * sizeof(PermQuery));
	so->qual_null = !PermQualsToQueries(scan, so->state, so->quals, 0);
}

const PermEngine PermTablesEngine = {
	.name = "permuted tables",
	.prepare = tables_prepare,
	.row_keys = tables_row_keys,
	.search = PermSearch,
	.constraint_search = tables_constraint_search,
	.constraint_match = NULL,
	.nearest = PermKnnGettuple,
	.end_scan = NULL,
};
