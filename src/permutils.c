/*-------------------------------------------------------------------------
 *
 * permutils.c
 *		simhash_perm: the per-index state kept in rd_amcache, and small
 *		helpers shared by the other files.
 *
 * IDENTIFICATION
 *	  src/permutils.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "perm.h"

/*
 * Index-wide state, read from the metapage once and kept in rd_amcache
 * (allocated in rd_indexcxt, so it goes when the relcache entry does).
 */
PermState *
PermGetState(Relation index)
{
	PermState  *state = (PermState *) index->rd_amcache;
	Buffer		buf;
	Page		page;
	PermMetaPage meta;
	int			t;

	if (state != NULL)
		return state;

	buf = PermReadMetaPage(index, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	meta = PermPageGetMeta(page);

	state = MemoryContextAllocZero(index->rd_indexcxt, sizeof(PermState));
	state->nblocks = RelationGetNumberOfBlocks(index);
	state->layout.max_distance = meta->max_distance;
	state->layout.blocks = meta->blocks;
	state->layout.ntables = meta->ntables;
	memcpy(state->layout.block_of_bit, meta->block_of_bit, 64);
	state->perm = MemoryContextAlloc(index->rd_indexcxt,
									 meta->ntables * sizeof(PermPermutation));
	for (t = 0; t < meta->ntables; t++)
	{
		state->layout.prefix_bits[t] = meta->tables[t].prefix_bits;
		memcpy(state->layout.bits[t], meta->tables[t].bits, 64);
		state->root[t] = meta->tables[t].root;
		state->root_level[t] = meta->tables[t].root_level;
	}
	UnlockReleaseBuffer(buf);
	for (t = 0; t < state->layout.ntables; t++)
		PermMakePermutation(state->layout.bits[t], &state->perm[t]);

	index->rd_amcache = state;
	return state;
}

/* PermCompareKeys for qsort */
int
PermCompareKeysQsort(const void *a, const void *b)
{
	return PermCompareKeys((const PermKey *) a, (const PermKey *) b);
}
