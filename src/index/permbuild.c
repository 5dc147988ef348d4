/*-------------------------------------------------------------------------
 *
 * permbuild.c
 *		simhash_perm: CREATE INDEX (ambuild) and the init fork of unlogged
 *		indexes (ambuildempty).
 *
 * The build never inserts row by row.  It collects every (fingerprint,
 * TID) while scanning the table, measures how often each bit is set (to
 * spread the bits over the blocks, see permlayout.c), then for each table
 * sorts the permuted keys and writes the leaves left to right as the sort
 * hands them out, then each internal level from the one below, until a
 * level has one page: the table's root.  Pages go through shared buffers
 * without WAL and are logged at the end with log_newpage_range().
 *
 * Memory stays within maintenance_work_mem: half of it keeps the collected
 * rows (16 bytes each; beyond that they go to a temporary file), half sorts
 * one table (in runs written to temporary files and merged beyond that),
 * see runsort.c.  The trees are written by permwrite.c, which the layout's
 * change as rows arrive (permgrow.c) shares.
 *
 * IDENTIFICATION
 *	  src/index/permbuild.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "commands/progress.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "fingerprint/fingerprint.h"
#include "index/perm.h"
#include "index/permleaf.h"

/* Fingerprints are counted bit by bit this many at a time */
#define PERM_BUILD_COUNT_BATCH		1024

typedef struct PermBuildState
{
	RecStore *rows;			/* (fingerprint, TID) of every row */
	int64		n;
	int64		budget;			/* maintenance_work_mem, in bytes */
	SimhashVoter counter;		/* how often each bit is set */
	uint64		batch[PERM_BUILD_COUNT_BATCH];
	int			nbatch;
	MemoryContext cxt;
} PermBuildState;

/* Callback of table_index_build_scan: collect one row */
static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *arg)
{
	PermBuildState *bs = (PermBuildState *) arg;
	KeyTid		rec;

	if (isnull[0])
		return;
	rec.key = (uint64) DatumGetInt64(values[0]);
	rec.tid = *tid;
	RecStoreAdd(bs->rows, &rec);
	bs->n++;
	bs->batch[bs->nbatch++] = rec.key;
	if (bs->nbatch == PERM_BUILD_COUNT_BATCH)
	{
		SimhashVoterAddBatch(&bs->counter, bs->batch, bs->nbatch);
		bs->nbatch = 0;
	}
}

/*
 * The layout for the collected rows: bits are spread over the blocks by how
 * often each is set (permlayout.c), counted eight bits at a time.
 */
static void
choose_layout(PermBuildState *bs, int max_distance, int blocks,
			  PermLayout *layout)
{
	SimhashVoterAddBatch(&bs->counter, bs->batch, bs->nbatch);
	bs->nbatch = 0;
	PermChooseLayoutFromVotes(max_distance, blocks, &bs->counter, bs->n, layout);
}

/* Write the metapage, block 0, before any table; roots are filled in later */
static void
write_metapage(Relation index, ForkNumber fork, const PermLayout *layout)
{
	Buffer		metabuf = PermNewBuffer(index, fork);
	Page		metapage = BufferGetPage(metabuf);
	PermMetaPage meta;

	Assert(BufferGetBlockNumber(metabuf) == PERM_METAPAGE_BLKNO);
	PermInitPage(metapage, PERM_META, 0, 0);
	meta = PermPageGetMeta(metapage);
	meta->magic = PERM_MAGIC;
	meta->version = PERM_VERSION;
	meta->max_distance = layout->max_distance;
	meta->blocks = layout->blocks;
	meta->ntables = layout->ntables;
	meta->algorithm = 1;
	memcpy(meta->block_of_bit, layout->block_of_bit, 64);
	((PageHeader) metapage)->pd_lower =
		((char *) &meta->tables[layout->ntables] - (char *) metapage);
	MarkBufferDirty(metabuf);
	UnlockReleaseBuffer(metabuf);
}

/*
 * Write the whole index from the collected rows: metapage, then each table.
 * Used for CREATE INDEX (MAIN fork) and for the empty init fork.
 */
static void
write_index(Relation index, ForkNumber fork, PermBuildState *bs)
{
	int			max_distance,
				blocks;
	PermLayout	layout;
	Buffer		metabuf;
	Page		metapage;
	PermMetaPage meta;
	PermMetaGrowth growth;
	BlockNumber roots[PERM_MAX_TABLES];
	uint16		root_levels[PERM_MAX_TABLES];
	int			t;

	PermLayoutOptions(index, &max_distance, &blocks);

	choose_layout(bs, max_distance, blocks, &layout);
	write_metapage(index, fork, &layout);

	PermWriteTables(index, fork, bs->rows, bs->n, bs->budget, &layout, 0,
					false, true, roots, root_levels);

	metabuf = ReadBufferExtended(index, fork, PERM_METAPAGE_BLKNO, RBM_NORMAL, NULL);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	metapage = BufferGetPage(metabuf);
	meta = PermPageGetMeta(metapage);
	for (t = 0; t < layout.ntables; t++)
	{
		memcpy(meta->tables[t].bits, layout.bits[t], 64);
		meta->tables[t].prefix_bits = layout.prefix_bits[t];
		meta->tables[t].root = roots[t];
		meta->tables[t].root_level = root_levels[t];
	}
	PermGrowthAfterBuild(&growth, bs->n,
						 RelationGetNumberOfBlocksInFork(index, fork));
	PermMetaSetGrowth(metapage, &growth);
	MarkBufferDirty(metabuf);
	UnlockReleaseBuffer(metabuf);

	/* WAL: every page of the new fork, once (always for the init fork) */
	if (RelationNeedsWAL(index) || fork == INIT_FORKNUM)
		log_newpage_range(index, fork, 0,
						  RelationGetNumberOfBlocksInFork(index, fork), true);
}

/* ambuild: CREATE INDEX, REINDEX */
IndexBuildResult *
permbuild(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	PermBuildState bs;
	double		reltuples;
	MemoryContext oldcxt;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data",
			 RelationGetRelationName(index));

	memset(&bs, 0, sizeof(bs));
	bs.cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash_perm build",
								   ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(bs.cxt);
	bs.budget = (int64) maintenance_work_mem * 1024;
	bs.rows = RecStoreBegin(bs.budget / 2);
	SimhashVoterInit(&bs.counter);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, PERM_PHASE_SCAN);
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   build_callback, &bs, NULL);

	write_index(index, MAIN_FORKNUM, &bs);
	RecStoreEnd(bs.rows);

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(bs.cxt);

	/*
	 * An exclusion constraint's index rebuilt without PostgreSQL's check
	 * (VACUUM FULL, CLUSTER: reindex_index drops the exclusion operators
	 * from indexInfo) checks its rows against its radius itself, which the
	 * reloption may have changed since the rows were last checked
	 * (permradius.c).
	 */
	if (indexInfo->ii_ExclusionOps == NULL && index->rd_index != NULL &&
		index->rd_index->indisexclusion)
		PermCheckRebuiltConstraint(heap, index);

	result = palloc(sizeof(IndexBuildResult));
	result->heap_tuples = reltuples;
	result->index_tuples = bs.n;
	return result;
}

/* ambuildempty: the init fork of an index on an unlogged table */
void
permbuildempty(Relation index)
{
	PermBuildState bs;

	memset(&bs, 0, sizeof(bs));
	bs.budget = (int64) maintenance_work_mem * 1024;
	SimhashVoterInit(&bs.counter);
	write_index(index, INIT_FORKNUM, &bs);
}
