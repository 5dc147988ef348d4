/*-------------------------------------------------------------------------
 *
 * perminsert.c
 *		simhash_perm: inserting one row (aminsert).
 *
 * A row goes into every table under that table's permuted key, up to four
 * tables per WAL record (PermInsertRow).  After a crash a row's entries may sit in only some of
 * the tables, but only for a transaction that never committed, whose heap
 * tuple no snapshot sees; VACUUM removes such entries like any other dead
 * ones.
 *
 * IDENTIFICATION
 *	  src/perminsert.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/execnodes.h"

#include "perm.h"

/* aminsert: NULL fingerprints are not indexed (hamming_near never matches) */
bool
perminsert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
		   Relation heapRel, IndexUniqueCheck checkUnique, bool indexUnchanged,
		   IndexInfo *indexInfo)
{
	PermState  *state;
	PermKey		keys[PERM_MAX_TABLES];
	uint64		fp;
	int			t;

	if (isnull[0])
		return false;

	state = PermGetState(index);
	fp = (uint64) DatumGetInt64(values[0]);
	for (t = 0; t < state->ntables; t++)
	{
		keys[t].key = PermPermuteFast(&state->perm[t], fp);
		keys[t].tid = *ht_ctid;
	}
	PermInsertRow(index, state->ntables, keys);
	return false;
}
