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
 * An index on bit(n) codes (permwidelayout.c) computes each row's key in every
 * table as it reads the row, into a store per table, with a layout fixed
 * before the first row from the codes' width and the table's size; its
 * tables are written from those stores the same way.  As the table grows,
 * the number of substrings follows it (permgrow.c).
 *
 * IDENTIFICATION
 *	  src/index/build/permbuild.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
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
#include "index/permoptions.h"
#include "index/tree/permleaf.h"

/* Fingerprints are counted bit by bit this many at a time */
#define PERM_BUILD_COUNT_BATCH		1024

typedef struct PermBuildState
{
	RecStore *rows;			/* (fingerprint, TID) of every row */

	/*
	 * An index on bit(n) codes (permwidelayout.c): the layout, fixed before the
	 * first row is read (from the column's width and the table's size), and
	 * each table's (key, TID) of every row
	 */
	bool		wide;
	bool		wide_ready;
	PermLayout	wide_layout;
	RecStore  **wide_rows;
	PermStoreBuild *store;		/* the store's rows (permstore.c): those
								 * without a code, and codes where kept */
	bool		store_codes;	/* the store keeps codes: bit(n) codes
								 * without leading columns */
	int64		n;
	int64		budget;			/* maintenance_work_mem, in bytes */
	SimhashVoter counter;		/* how often each bit is set */
	uint64		batch[PERM_BUILD_COUNT_BATCH];
	int			nbatch;
	MemoryContext cxt;
	Relation	heap;			/* NULL for the init fork */
	Relation	index;			/* read_table's arguments */
	IndexInfo  *info;
	double		reltuples;		/* and its count of the table's rows */
	PermParallel *par;			/* a parallel build (permbuildparallel.c) */
} PermBuildState;

/*
 * The layout of an index on bit(n) codes, from the codes' width (the
 * column's declared width, or the first code's) and the rows expected
 * (the table's last count, or its size in pages over the least a row of
 * such codes takes)
 */
static void
wide_choose_layout(Relation heap, Relation index, int width,
				   PermLayout *layout)
{
	int			radius,
				substrings;
	double		rows = heap ? heap->rd_rel->reltuples : 0;

	if (heap && rows < 0)
		rows = (double) RelationGetNumberOfBlocks(heap) *
			(BLCKSZ / (width / 8.0 + 32.0));
	PermWideLayoutOptions(index, width, &radius, &substrings);
	PermWideChooseLayout(width, PermTenantColumns(index), radius, substrings,
						 rows, layout);
}

/* A serial build of bit(n) codes: the layout, and a store per table */
static void
wide_begin(Relation heap, Relation index, PermBuildState *bs, int width)
{
	int			t;

	wide_choose_layout(heap, index, width, &bs->wide_layout);
	bs->wide_rows = palloc(bs->wide_layout.ntables * sizeof(RecStore *));
	for (t = 0; t < bs->wide_layout.ntables; t++)
		bs->wide_rows[t] = RecStoreBegin(bs->budget / 2 / bs->wide_layout.ntables);
	bs->wide_ready = true;
}

/*
 * The declared width of the index's code column (64 for a fingerprint):
 * the column's bit(n), or the width option of bit varying codes; or -1
 */
static int
declared_width(Relation index)
{
	int			code = PermCodeColumn(index);
	PermOptions *opts = (PermOptions *) index->rd_options;
	int			typmod;

	if (index->rd_opcintype[code] != BITOID)
		return 64;
	typmod = TupleDescAttr(RelationGetDescr(index), code)->atttypmod;
	if (typmod > 0)
		return typmod;
	return (opts && opts->width > 0) ? opts->width : -1;
}

/*
 * Collect one row of an index laid out by multi-index hashing (bit(n)
 * codes, leading columns): its key in every table
 */
static void
collect_code(Relation index, PermBuildState *bs, ItemPointer tid,
			 Datum *values, bool *isnull)
{
	uint64		keys[PERM_MAX_TABLES];
	uint16		extras[PERM_MAX_TABLES];
	KeyTid		rec;
	int			t;

	if (isnull[PermCodeColumn(index)])
	{
		/*
		 * the store lists the row, unless a leading value is NULL too
		 * (such a row matches no scan the index can answer)
		 */
		if (!PermTenantValuesNull(index, isnull))
			PermStoreBuildAdd(bs->store, tid, (Datum) 0, true);
		return;
	}
	if (!bs->wide_ready)
		wide_begin(bs->heap, index, bs,
				   declared_width(index) > 0 ? declared_width(index) :
				   VARBITLEN(DatumGetVarBitP(values[PermCodeColumn(index)])));
	if (!PermRowKeys(index, &bs->wide_layout, values, isnull, keys, extras))
		return;
	if (bs->store_codes)
		PermStoreBuildAdd(bs->store, tid, values[PermCodeColumn(index)], false);
	rec.tid = *tid;
	for (t = 0; t < bs->wide_layout.ntables; t++)
	{
		rec.key = keys[t];
		rec.extra = extras[t];
		RecStoreAdd(bs->wide_rows[t], &rec);
	}
	bs->n++;
}

/* Callback of table_index_build_scan: collect one row */
static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *arg)
{
	PermBuildState *bs = (PermBuildState *) arg;
	KeyTid		rec;

	if (bs->wide)
	{
		collect_code(index, bs, tid, values, isnull);
		return;
	}
	if (isnull[0])
	{
		PermStoreBuildAdd(bs->store, tid, (Datum) 0, true);
		return;
	}
	rec.key = (uint64) DatumGetInt64(values[0]);
	rec.tid = *tid;
	rec.extra = 0;
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
 * Write every table from the collected rows: each sorted here, or, in a
 * parallel build, by the workers (permbuildparallel.c)
 */
static void
write_tables(Relation index, ForkNumber fork, PermBuildState *bs,
			 RecStore **rows, const PermLayout *layout, BlockNumber *roots,
			 uint16 *root_levels)
{
	if (bs->par)
		PermParallelWriteTables(bs->par, rows, bs->n, layout, roots,
								root_levels);
	else
		PermWriteTables(index, fork, rows, bs->n, bs->budget, layout, 0,
						false, true, roots, root_levels);
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
	PermMetaStore store;
	int			t;

	if (bs->wide)
	{
		/* bit(n) codes: the layout fixed before the rows were read */
		if (!bs->wide_ready)
		{
			if (declared_width(index) <= 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("cannot tell the width of the codes of index \"%s\"",
								RelationGetRelationName(index)),
						 errdetail("The column is bit varying, and the table has no rows to take the width from."),
						 errhint("Give the width: WITH (width = 256), or declare the column bit(n).")));
			wide_begin(bs->heap, index, bs, declared_width(index));
		}
		layout = bs->wide_layout;
		write_metapage(index, fork, &layout);
		write_tables(index, fork, bs, bs->wide_rows, &layout, roots,
					 root_levels);
		PermStoreBuildWrite(bs->store, index, fork,
							bs->store_codes ? layout.width : 0, &store);
	}
	else
	{
		PermLayoutOptions(index, &max_distance, &blocks);
		choose_layout(bs, max_distance, blocks, &layout);
		write_metapage(index, fork, &layout);
		write_tables(index, fork, bs, &bs->rows, &layout, roots, root_levels);
		PermStoreBuildWrite(bs->store, index, fork, 0, &store);
	}

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
	if (bs->wide)
	{
		PermMetaCode code;
		int			radius,
					substrings;

		/*
		 * the substrings follow the rows as the table grows (permgrow.c),
		 * unless the reloption sets them
		 */
		PermWideLayoutOptions(index, layout.width, &radius, &substrings);
		PermGrowthAfterBuild(&growth, bs->n,
							 RelationGetNumberOfBlocksInFork(index, fork) -
							 (store.pages + store.null_pages),
							 true, substrings != 0);
		PermMetaSetGrowth(metapage, &growth);
		memset(&code, 0, sizeof(code));
		code.magic = PERM_CODE_MAGIC;
		code.width = layout.width;
		code.radius = layout.max_distance;
		code.substrings = layout.ntables;
		code.tenants = layout.tenants;
		code.tail = layout.tail;
		code.extra = layout.extra;
		code.layout_rows = bs->n;
		PermMetaSetCode(metapage, &code);
		PermMetaSetStore(metapage, &store);
	}
	else
	{
		PermGrowthAfterBuild(&growth, bs->n,
							 RelationGetNumberOfBlocksInFork(index, fork) -
							 (store.pages + store.null_pages),
							 false, false);
		PermMetaSetGrowth(metapage, &growth);
		PermMetaSetStore(metapage, &store);
	}
	MarkBufferDirty(metabuf);
	UnlockReleaseBuffer(metabuf);

	/* WAL: every page of the new fork, once (always for the init fork) */
	if (RelationNeedsWAL(index) || fork == INIT_FORKNUM)
		log_newpage_range(index, fork, 0,
						  RelationGetNumberOfBlocksInFork(index, fork), true);
}

/*
 * A parallel build's process collects into files of the build's shared set
 * (permbuildparallel.c): one store of fingerprints, or for bit(n) codes one
 * per table under the layout the leader fixed before the scan
 */
static void
collect_into_shared_files(PermBuildState *bs, PermParallel *par)
{
	const PermLayout *code_layout = PermParallelCodeLayout(par);
	int			t;

	if (code_layout)
	{
		bs->wide_layout = *code_layout;
		bs->wide_ready = true;
		bs->wide_rows = palloc(bs->wide_layout.ntables * sizeof(RecStore *));
		for (t = 0; t < bs->wide_layout.ntables; t++)
			bs->wide_rows[t] = PermParallelStore(par, t);
	}
	else
		bs->rows = PermParallelStore(par, 0);
}

/* A parallel build's process has read its share: its stores are done */
static void
shared_files_done(PermBuildState *bs, PermParallel *par)
{
	SimhashVoterAddBatch(&bs->counter, bs->batch, bs->nbatch);
	bs->nbatch = 0;
	PermParallelScanned(par, bs->n, &bs->counter, bs->store);
	bs->rows = NULL;
	if (bs->wide_rows)
		pfree(bs->wide_rows);
	bs->wide_rows = NULL;
}

/*
 * The leader starts a parallel build if PostgreSQL plans workers for it;
 * not for the codes of a bit varying column of no declared width, whose
 * layout waits for the first row (every process must collect under the
 * same one).  Each worker spools its rows without a code, and where the
 * index keeps codes in its store their whole codes (permstore.c), for the
 * leader.
 */
static PermParallel *
begin_parallel(Relation heap, Relation index, IndexInfo *indexInfo,
			   PermBuildState *bs)
{
	PermLayout	code_layout;

	if (!bs->wide)
		return PermParallelBegin(heap, index, indexInfo, 1, NULL, bs->budget,
								 true);
	if (declared_width(index) <= 0)
		return NULL;
	wide_choose_layout(heap, index, declared_width(index), &code_layout);
	return PermParallelBegin(heap, index, indexInfo, code_layout.ntables,
							 &code_layout, bs->budget, true);
}

/*
 * The leader's part of the scan, then everyone's rows: as stores over
 * every process's files, their number and the sums of their counts
 */
static double
scan_parallel(PermBuildState *bs, PermParallel *par)
{
	RecStore   *stores[PERM_MAX_TABLES];
	double		reltuples;
	int			t;

	collect_into_shared_files(bs, par);
	PermParallelScan(par, build_callback, bs);
	shared_files_done(bs, par);
	reltuples = PermParallelGather(par, stores, &bs->n, &bs->counter,
								   bs->store);
	if (bs->wide)
	{
		bs->wide_rows = palloc(bs->wide_layout.ntables * sizeof(RecStore *));
		for (t = 0; t < bs->wide_layout.ntables; t++)
			bs->wide_rows[t] = stores[t];
	}
	else
		bs->rows = stores[0];
	return reltuples;
}

/*
 * The build's part that runs the table owner's code (PermRunAsTableOwner):
 * reading the table, in parallel or not.  Parallel workers are started
 * here, and take the owner, the security context and search_path from the
 * leader.
 */
static void
read_table(void *arg)
{
	PermBuildState *bs = (PermBuildState *) arg;

	bs->par = begin_parallel(bs->heap, bs->index, bs->info, bs);
	if (bs->par)
		bs->reltuples = scan_parallel(bs, bs->par);
	else
	{
		if (!bs->wide)
			bs->rows = RecStoreBegin(bs->budget / 2);
		bs->reltuples = table_index_build_scan(bs->heap, bs->index, bs->info,
											   true, true, build_callback, bs,
											   NULL);
		if (perm_report_build_workers)
			ereport(NOTICE,
					(errmsg("simhash_perm index \"%s\" was read by the leader alone",
							RelationGetRelationName(bs->index))));
	}
}

/* ambuild: CREATE INDEX, REINDEX */
IndexBuildResult *
permbuild(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	PermBuildState bs;
	MemoryContext oldcxt;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data",
			 RelationGetRelationName(index));

	memset(&bs, 0, sizeof(bs));
	bs.cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash_perm build",
								   ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(bs.cxt);
	bs.budget = (int64) maintenance_work_mem * 1024;
	bs.heap = heap;
	bs.index = index;
	bs.info = indexInfo;
	PermCheckTenantColumns(index);
	if (indexInfo->ii_ExclusionStrats)
		PermCheckExclusionStrategies(index, indexInfo->ii_ExclusionStrats);
	bs.wide = PermIndexIsWide(index);
	bs.store_codes = PermIndexStoresCodes(index);
	bs.store = PermStoreBuildBegin(index, NULL, 0);
	SimhashVoterInit(&bs.counter);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, PERM_PHASE_SCAN);

	/*
	 * PostgreSQL runs a build as the table's owner, security-restricted,
	 * but locks search_path only since 17: the owner's expressions must not
	 * resolve an unqualified call through the search_path of whoever runs
	 * REINDEX, VACUUM FULL or CLUSTER, so it is locked here on every
	 * version (permowner.c).
	 */
	PermRunAsTableOwner(heap, read_table, &bs);

	write_index(index, MAIN_FORKNUM, &bs);
	if (bs.rows)
		RecStoreEnd(bs.rows);
	if (bs.wide_rows)
	{
		int			t;

		for (t = 0; t < bs.wide_layout.ntables; t++)
			RecStoreEnd(bs.wide_rows[t]);
	}
	PermStoreBuildEnd(bs.store);
	/* after the stores: their files go with the parallel context */
	if (bs.par)
		PermParallelEnd(bs.par);

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(bs.cxt);

	/*
	 * An exclusion constraint's index rebuilt without PostgreSQL's check
	 * (VACUUM FULL, CLUSTER: reindex_index drops the exclusion operators
	 * from indexInfo) checks its rows against its radius itself, which the
	 * reloption may have changed since the rows were last checked
	 * (permconstraintcheck.c).
	 */
	if (indexInfo->ii_ExclusionOps == NULL && index->rd_index != NULL &&
		index->rd_index->indisexclusion)
		PermCheckRebuiltConstraint(heap, index);

	result = palloc(sizeof(IndexBuildResult));
	result->heap_tuples = bs.reltuples;
	result->index_tuples = bs.n;
	return result;
}

/* A worker's part that runs the table owner's code: reading its share */
static void
read_share(void *arg)
{
	PermBuildState *bs = (PermBuildState *) arg;

	PermParallelScan(bs->par, build_callback, bs);
}

/*
 * A parallel worker of CREATE INDEX (permbuildparallel.c): collects its
 * share of the table as the leader does, as the table's owner, then sorts
 * tables for the leader
 */
void
simhash_perm_build_worker(dsm_segment *seg, shm_toc *toc)
{
	PermParallel *par = PermParallelAttach(seg, toc);
	PermBuildState bs;

	memset(&bs, 0, sizeof(bs));
	bs.cxt = CurrentMemoryContext;
	bs.budget = (int64) maintenance_work_mem * 1024;
	bs.heap = PermParallelHeap(par);
	bs.wide = PermIndexIsWide(PermParallelIndex(par));
	bs.store_codes = PermIndexStoresCodes(PermParallelIndex(par));
	bs.store = PermParallelStoreBuild(par);
	SimhashVoterInit(&bs.counter);
	collect_into_shared_files(&bs, par);
	bs.par = par;
	PermRunAsTableOwner(bs.heap, read_share, &bs);
	shared_files_done(&bs, par);
	PermStoreBuildEnd(bs.store);
	PermParallelSortTables(par);
	PermParallelDetach(par);
}

/* ambuildempty: the init fork of an index on an unlogged table */
void
permbuildempty(Relation index)
{
	PermBuildState bs;

	memset(&bs, 0, sizeof(bs));
	bs.budget = (int64) maintenance_work_mem * 1024;
	bs.wide = PermIndexIsWide(index);
	bs.store_codes = PermIndexStoresCodes(index);
	bs.store = PermStoreBuildBegin(index, NULL, 0);
	SimhashVoterInit(&bs.counter);
	write_index(index, INIT_FORKNUM, &bs);
	PermStoreBuildEnd(bs.store);
}
