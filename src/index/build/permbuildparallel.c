/*-------------------------------------------------------------------------
 *
 * permbuildparallel.c
 *		simhash_perm: CREATE INDEX with parallel workers, as nbtree builds
 *		in parallel: the table scan and the sorts shared out, the pages
 *		written by the leader.
 *
 * The leader (permbuild.c) starts up to max_parallel_maintenance_workers
 * workers, as PostgreSQL plans them for the table, and every process, the
 * leader too:
 *
 *	1. reads its share of the table's pages (a parallel table scan, under
 *	   the snapshot a serial build would use), writing what permbuild.c
 *	   collects of each row into its own files of a shared file set: for
 *	   64-bit fingerprints one file of (fingerprint, TID), for bit(n) codes
 *	   one file per table of (key, TID), the layout being fixed before the
 *	   scan, and two of the code store's rows (permstore.c) if the index
 *	   keeps one; and counts how often each bit is set;
 *	2. the leader waits for every share, sums the counts, chooses the
 *	   layout (64-bit fingerprints) and writes the metapage, then lets the
 *	   sorts begin;
 *	3. each worker takes the next table no one has taken, reads every
 *	   process's file for it, sorts its keys (permwrite.c's sort, within its
 *	   share of maintenance_work_mem) and writes them in order to a file of
 *	   the set; the leader writes the tables in order, each from the file
 *	   of its worker as soon as that is complete, or sorts a table itself
 *	   when it comes to one that no worker has taken.
 *
 * The leader writes every page, in the order a serial build writes them,
 * from the same records in the same order (key, then TID: a total order),
 * under the same layout (the sums of the counts are the counts): the tables
 * are the serial build's, page for page.  The code store holds the serial
 * build's entries on as many pages, the leader's rows first, then each
 * worker's: no answer depends on their order.
 *
 * The workers run the table owner's code (index expressions, a partial
 * index's predicate) as the leader does: a parallel worker takes the
 * leader's user and security context, and its settings, search_path among
 * them, as they are when the parallel context is made, after the leader
 * became the table's owner (permowner.c); the worker reads its share
 * through PermRunAsTableOwner all the same.
 *
 * IDENTIFICATION
 *	  src/index/build/permbuildparallel.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "commands/progress.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "storage/buffile.h"
#include "storage/condition_variable.h"
#include "storage/sharedfileset.h"
#include "storage/shm_toc.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"

#include "fingerprint/fingerprint.h"
#include "index/perm.h"

/* Keys of the shared memory table of contents */
#define PERM_PARALLEL_KEY_SHARED	UINT64CONST(0x5348500000000001)
#define PERM_PARALLEL_KEY_SCAN		UINT64CONST(0x5348500000000002)
#define PERM_PARALLEL_KEY_QUERY		UINT64CONST(0x5348500000000003)
#define PERM_PARALLEL_KEY_WAL		UINT64CONST(0x5348500000000004)
#define PERM_PARALLEL_KEY_BUFFERS	UINT64CONST(0x5348500000000005)

/* Where a table's sort stands */
#define PERM_TABLE_FREE		0		/* no one has taken it */
#define PERM_TABLE_TAKEN	1		/* a process sorts it */
#define PERM_TABLE_SORTED	2		/* a worker's file holds it in order */

/* One process's share of the scan: 0 is the leader, worker w is w + 1 */
typedef struct PermParallelPart
{
	bool		scanned;		/* its files are complete */
	int64		nrows;			/* records in each of its files */
	int64		store_codes;	/* a worker's spool of the code store: */
	int64		store_nulls;	/* its codes and NULL codes */
	SimhashVoter votes;			/* how often each bit is set in its rows */
} PermParallelPart;

typedef struct PermParallelShared
{
	/* set before the workers start */
	Oid			heaprelid;
	Oid			indexrelid;
	bool		isconcurrent;
	int			nstores;		/* files each process writes */
	int64		budget;			/* maintenance_work_mem, in bytes */
	bool		has_code_layout;	/* bit(n) codes: layout is fixed */
	bool		code_store;		/* the index keeps a code store */
	SharedFileSet fileset;

	slock_t		mutex;
	ConditionVariable cv;		/* any change below */

	/* the scan */
	int			nscanned;		/* processes whose share is done */
	double		reltuples;
	bool		brokenhotchain;

	/* the sorts, once the leader has set sorting */
	bool		sorting;
	int			nparticipants;	/* the leader and its launched workers */
	int64		nrows;			/* records of every table */
	PermLayout	layout;
	int			table_state[PERM_MAX_TABLES];

	PermParallelPart parts[FLEXIBLE_ARRAY_MEMBER];
} PermParallelShared;

struct PermParallel
{
	PermParallelShared *shared;
	ParallelTableScanDesc pscan;
	int			part;			/* this process's number */
	Relation	heap;
	Relation	index;
	IndexInfo  *indexInfo;
	RecStore   *stores[PERM_MAX_TABLES];	/* this process's stores */
	BufFile    *files[PERM_MAX_TABLES];	/* and their files */
	/* the leader */
	ParallelContext *pcxt;
	Snapshot	snapshot;
	WalUsage   *walusage;
	BufferUsage *bufferusage;
	/* a worker */
	LOCKMODE	heaplock;
	LOCKMODE	indexlock;
};

/* simhash.report_build_workers (permhandler.c): for tests */
bool		perm_report_build_workers = false;

/*
 * How many workers to ask for: those PostgreSQL plans for the table
 * (max_parallel_maintenance_workers, the table's size and parallel_workers
 * option, maintenance_work_mem; none for a temporary table or for index
 * expressions or a predicate that are not parallel safe).  17 plans them
 * for every access method that says it can build in parallel; before 17
 * only for btree, so the build asks the planner itself, as pgvector does.
 */
static int
workers_planned(Relation heap, Relation index, IndexInfo *indexInfo)
{
	if (!IsNormalProcessingMode() || IsInParallelMode() ||
		RelationUsesLocalBuffers(heap))
		return 0;
	return SimhashIndexBuildWorkers(heap, index, indexInfo);
}

static char *
store_file_name(int part, int store)
{
	return psprintf("rows.%d.%d", part, store);
}

static char *
sorted_file_name(int table)
{
	return psprintf("sorted.%d", table);
}

/*
 * Start a parallel build of index on heap: NULL if PostgreSQL plans no
 * workers for it or none could be launched, and the build is serial.
 * The caller is the table's owner already (permbuild.c), which the
 * workers inherit with the settings.  nstores: files each process writes;
 * code_layout: for bit(n) codes, the layout fixed before the scan, else
 * NULL.  budget: maintenance_work_mem in bytes, shared by the sorts.
 * code_store: the index keeps a code store (permstore.c), whose rows each
 * worker spools to files of the set for the leader.
 */
PermParallel *
PermParallelBegin(Relation heap, Relation index, IndexInfo *indexInfo,
				  int nstores, const PermLayout *code_layout, int64 budget,
				  bool code_store)
{
	int			request = workers_planned(heap, index, indexInfo);
	ParallelContext *pcxt;
	PermParallelShared *shared;
	PermParallel *par;
	Snapshot	snapshot;
	Size		shared_size;
	Size		scan_size;
	Size		querylen = 0;
	ParallelTableScanDesc pscan;
	int			t;

	if (request <= 0)
		return NULL;

	EnterParallelMode();
	pcxt = CreateParallelContext("simhash", "simhash_perm_build_worker", request);

	/*
	 * As nbtree: every row, and each process judges what to index, under
	 * SnapshotAny; a concurrent build indexes what its MVCC snapshot sees
	 */
	if (!indexInfo->ii_Concurrent)
		snapshot = SnapshotAny;
	else
		snapshot = RegisterSnapshot(GetTransactionSnapshot());

	shared_size = add_size(offsetof(PermParallelShared, parts),
						   mul_size(request + 1, sizeof(PermParallelPart)));
	scan_size = table_parallelscan_estimate(heap, snapshot);
	shm_toc_estimate_chunk(&pcxt->estimator, shared_size);
	shm_toc_estimate_chunk(&pcxt->estimator, scan_size);
	shm_toc_estimate_chunk(&pcxt->estimator, mul_size(sizeof(WalUsage), request));
	shm_toc_estimate_chunk(&pcxt->estimator, mul_size(sizeof(BufferUsage), request));
	shm_toc_estimate_keys(&pcxt->estimator, 4);
	if (debug_query_string)
	{
		querylen = strlen(debug_query_string);
		shm_toc_estimate_chunk(&pcxt->estimator, querylen + 1);
		shm_toc_estimate_keys(&pcxt->estimator, 1);
	}
	InitializeParallelDSM(pcxt);
	if (pcxt->seg == NULL)
	{
		/* no dynamic shared memory to be had: build alone */
		if (IsMVCCSnapshot(snapshot))
			UnregisterSnapshot(snapshot);
		DestroyParallelContext(pcxt);
		ExitParallelMode();
		return NULL;
	}

	shared = shm_toc_allocate(pcxt->toc, shared_size);
	memset(shared, 0, shared_size);
	shared->heaprelid = RelationGetRelid(heap);
	shared->indexrelid = RelationGetRelid(index);
	shared->isconcurrent = indexInfo->ii_Concurrent;
	shared->nstores = nstores;
	shared->budget = budget;
	shared->code_store = code_store;
	if (code_layout)
	{
		shared->has_code_layout = true;
		shared->layout = *code_layout;
	}
	SpinLockInit(&shared->mutex);
	ConditionVariableInit(&shared->cv);
	for (t = 0; t < PERM_MAX_TABLES; t++)
		shared->table_state[t] = PERM_TABLE_FREE;
	SharedFileSetInit(&shared->fileset, pcxt->seg);
	shm_toc_insert(pcxt->toc, PERM_PARALLEL_KEY_SHARED, shared);

	pscan = shm_toc_allocate(pcxt->toc, scan_size);
	table_parallelscan_initialize(heap, pscan, snapshot);
	shm_toc_insert(pcxt->toc, PERM_PARALLEL_KEY_SCAN, pscan);

	par = palloc0(sizeof(PermParallel));
	par->walusage = shm_toc_allocate(pcxt->toc, mul_size(sizeof(WalUsage), request));
	shm_toc_insert(pcxt->toc, PERM_PARALLEL_KEY_WAL, par->walusage);
	par->bufferusage = shm_toc_allocate(pcxt->toc, mul_size(sizeof(BufferUsage), request));
	shm_toc_insert(pcxt->toc, PERM_PARALLEL_KEY_BUFFERS, par->bufferusage);
	if (debug_query_string)
	{
		char	   *query = shm_toc_allocate(pcxt->toc, querylen + 1);

		memcpy(query, debug_query_string, querylen + 1);
		shm_toc_insert(pcxt->toc, PERM_PARALLEL_KEY_QUERY, query);
	}

	par->shared = shared;
	par->pscan = pscan;
	par->part = 0;
	par->heap = heap;
	par->index = index;
	par->indexInfo = indexInfo;
	par->pcxt = pcxt;
	par->snapshot = snapshot;

	LaunchParallelWorkers(pcxt);
	if (pcxt->nworkers_launched == 0)
	{
		/* no worker to be had: build alone */
		PermParallelEnd(par);
		return NULL;
	}
	return par;
}

/*
 * A worker: attach to the leader's build; opens the table and the index
 * with the locks the leader holds (the lock group lets them through), as
 * nbtree's workers do
 */
PermParallel *
PermParallelAttach(dsm_segment *seg, shm_toc *toc)
{
	PermParallel *par = palloc0(sizeof(PermParallel));
	PermParallelShared *shared = shm_toc_lookup(toc, PERM_PARALLEL_KEY_SHARED, false);

	debug_query_string = shm_toc_lookup(toc, PERM_PARALLEL_KEY_QUERY, true);
	pgstat_report_activity(STATE_RUNNING, debug_query_string);

	if (!shared->isconcurrent)
	{
		par->heaplock = ShareLock;
		par->indexlock = AccessExclusiveLock;
	}
	else
	{
		par->heaplock = ShareUpdateExclusiveLock;
		par->indexlock = RowExclusiveLock;
	}
	par->shared = shared;
	par->pscan = shm_toc_lookup(toc, PERM_PARALLEL_KEY_SCAN, false);
	par->walusage = shm_toc_lookup(toc, PERM_PARALLEL_KEY_WAL, false);
	par->bufferusage = shm_toc_lookup(toc, PERM_PARALLEL_KEY_BUFFERS, false);
	par->part = ParallelWorkerNumber + 1;
	SharedFileSetAttach(&shared->fileset, seg);
	par->heap = table_open(shared->heaprelid, par->heaplock);
	par->index = index_open(shared->indexrelid, par->indexlock);
	par->indexInfo = BuildIndexInfo(par->index);
	par->indexInfo->ii_Concurrent = shared->isconcurrent;
	InstrStartParallelQuery();
	return par;
}

Relation
PermParallelHeap(PermParallel *par)
{
	return par->heap;
}

Relation
PermParallelIndex(PermParallel *par)
{
	return par->index;
}

/* The layout of bit(n) codes, fixed before the scan; NULL for fingerprints */
const PermLayout *
PermParallelCodeLayout(PermParallel *par)
{
	return par->shared->has_code_layout ? &par->shared->layout : NULL;
}

/*
 * A worker's collection of the code store's rows, in files of the shared
 * set; NULL if the index keeps no store
 */
PermStoreBuild *
PermParallelStoreBuild(PermParallel *par)
{
	if (!par->shared->code_store)
		return NULL;
	return PermStoreBuildBegin(par->index, &par->shared->fileset, par->part);
}

/* This process's store number s: a file of the shared set */
RecStore *
PermParallelStore(PermParallel *par, int s)
{
	Assert(s < par->shared->nstores);
	if (par->stores[s] == NULL)
	{
		char	   *name = store_file_name(par->part, s);

		par->files[s] = BufFileCreateFileSet(&par->shared->fileset.fs, name);
		par->stores[s] = RecStoreBeginOnFile(par->files[s]);
		pfree(name);
	}
	return par->stores[s];
}

/*
 * This process's share of the table: table_index_build_scan over the
 * parallel scan, passing each row to callback.  The leader reports the
 * scan's progress.
 */
void
PermParallelScan(PermParallel *par, IndexBuildCallback callback, void *arg)
{
	TableScanDesc scan = table_beginscan_parallel(par->heap, par->pscan);
	double		reltuples;

	reltuples = table_index_build_scan(par->heap, par->index, par->indexInfo,
									   true, par->part == 0, callback, arg,
									   scan);
	SpinLockAcquire(&par->shared->mutex);
	par->shared->reltuples += reltuples;
	if (par->indexInfo->ii_BrokenHotChain)
		par->shared->brokenhotchain = true;
	SpinLockRelease(&par->shared->mutex);
}

/*
 * This process's share is read: nrows records in each of its stores (which
 * it must not use any more), its bits counted in votes; a worker's rows of
 * the code store in code_store (the leader keeps its own)
 */
void
PermParallelScanned(PermParallel *par, int64 nrows, const SimhashVoter *votes,
					PermStoreBuild *code_store)
{
	PermParallelShared *shared = par->shared;
	PermParallelPart *part = &shared->parts[par->part];
	int			s;

	for (s = 0; s < shared->nstores; s++)
	{
		/* a store never written to is still a file, empty */
		RecStore   *st = PermParallelStore(par, s);

		Assert(RecStoreCount(st) == nrows);
		BufFileExportFileSet(par->files[s]);
		RecStoreEnd(st);
		par->stores[s] = NULL;
		par->files[s] = NULL;
	}
	if (code_store && par->part > 0)
		PermStoreBuildShare(code_store, &part->store_codes, &part->store_nulls);
	part->nrows = nrows;
	part->votes = *votes;
	SpinLockAcquire(&shared->mutex);
	part->scanned = true;
	shared->nscanned++;
	SpinLockRelease(&shared->mutex);
	ConditionVariableBroadcast(&shared->cv);
}

/* Every process's file number s, in process order, as one store */
static RecStore *
open_stores(PermParallelShared *shared, int s)
{
	BufFile   **files = palloc(shared->nparticipants * sizeof(BufFile *));
	int64	   *counts = palloc(shared->nparticipants * sizeof(int64));
	int			nfiles = 0;
	int			p;
	RecStore   *st;

	for (p = 0; p < shared->nparticipants; p++)
	{
		char	   *name = store_file_name(p, s);

		Assert(shared->parts[p].scanned);
		files[nfiles] = BufFileOpenFileSet(&shared->fileset.fs, name,
										   O_RDONLY, false);
		counts[nfiles++] = shared->parts[p].nrows;
		pfree(name);
	}
	st = RecStoreOpenFiles(files, counts, nfiles);
	pfree(files);
	pfree(counts);
	return st;
}

/*
 * The leader, after its own share: wait for every worker's, then hand out
 * the rows of all as stores[0 .. nstores - 1] (each every process's file of
 * that number), their number, and the sums of their counts; the workers'
 * rows of the code store are added to the leader's code_store.  Returns
 * the rows the scans read; sets indexInfo's broken HOT chain if a worker
 * met one.
 */
double
PermParallelGather(PermParallel *par, RecStore **stores, int64 *nrows,
				   SimhashVoter *votes, PermStoreBuild *code_store)
{
	PermParallelShared *shared = par->shared;
	int			nparticipants = par->pcxt->nworkers_launched + 1;
	double		reltuples;
	int			p,
				s;

	/* a worker that never started must not be waited for */
	WaitForParallelWorkersToAttach(par->pcxt);
	for (;;)
	{
		bool		done;

		SpinLockAcquire(&shared->mutex);
		done = shared->nscanned == nparticipants;
		SpinLockRelease(&shared->mutex);
		if (done)
			break;
		ConditionVariableSleep(&shared->cv, WAIT_EVENT_PARALLEL_CREATE_INDEX_SCAN);
	}
	ConditionVariableCancelSleep();

	SpinLockAcquire(&shared->mutex);
	shared->nparticipants = nparticipants;
	reltuples = shared->reltuples;
	if (shared->brokenhotchain)
		par->indexInfo->ii_BrokenHotChain = true;
	SpinLockRelease(&shared->mutex);

	*nrows = 0;
	SimhashVoterInit(votes);
	for (p = 0; p < nparticipants; p++)
	{
		*nrows += shared->parts[p].nrows;
		SimhashVoterMerge(votes, &shared->parts[p].votes);
		elog(DEBUG1, "simhash_perm index \"%s\": %s read " INT64_FORMAT " rows",
			 RelationGetRelationName(par->index),
			 p == 0 ? "the leader" : psprintf("worker %d", p - 1),
			 shared->parts[p].nrows);
	}
	shared->nrows = *nrows;
	for (s = 0; s < shared->nstores; s++)
		stores[s] = open_stores(shared, s);
	if (code_store)
		for (p = 1; p < nparticipants; p++)
			PermStoreBuildAddShared(code_store, &shared->fileset, p,
									shared->parts[p].store_codes,
									shared->parts[p].store_nulls);

	if (perm_report_build_workers)
		ereport(NOTICE,
				(errmsg("simhash_perm index \"%s\" was read by %d parallel workers and the leader",
						RelationGetRelationName(par->index), nparticipants - 1)));
	return reltuples;
}

/* Take the first table no one has taken; false if none is left */
static bool
take_table(PermParallelShared *shared, int *table)
{
	int			t;

	SpinLockAcquire(&shared->mutex);
	for (t = 0; t < shared->layout.ntables; t++)
	{
		if (shared->table_state[t] == PERM_TABLE_FREE)
		{
			shared->table_state[t] = PERM_TABLE_TAKEN;
			break;
		}
	}
	SpinLockRelease(&shared->mutex);
	*table = t;
	return t < shared->layout.ntables;
}

/* The budget of each sort: maintenance_work_mem shared by the processes */
static int64
sort_budget(PermParallelShared *shared)
{
	return shared->budget / shared->nparticipants;
}

/*
 * The leader writes every table of layout, in order, from the rows
 * PermParallelGather handed out (rows, n of them): each from the file a
 * worker sorted it into, or sorted by the leader itself when no worker has
 * taken it when its turn comes.  As PermWriteTables, for CREATE INDEX.
 */
void
PermParallelWriteTables(PermParallel *par, RecStore **rows, int64 n,
						const PermLayout *layout, BlockNumber *roots,
						uint16 *root_levels)
{
	PermParallelShared *shared = par->shared;
	int			t;

	/* the workers may sort */
	SpinLockAcquire(&shared->mutex);
	shared->layout = *layout;
	shared->sorting = true;
	SpinLockRelease(&shared->mutex);
	ConditionVariableBroadcast(&shared->cv);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL,
								 n * layout->ntables);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, 0);
	for (t = 0; t < layout->ntables; t++)
	{
		RunSort    *rs;
		bool		mine = false;

		pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, PERM_PHASE_SORT);
		SpinLockAcquire(&shared->mutex);
		if (shared->table_state[t] == PERM_TABLE_FREE)
		{
			shared->table_state[t] = PERM_TABLE_TAKEN;
			mine = true;
		}
		SpinLockRelease(&shared->mutex);

		if (mine)
			rs = PermSortTable(rows[layout->width > 0 ? t : 0], n,
							   sort_budget(shared), layout, t);
		else
		{
			char	   *name = sorted_file_name(t);

			for (;;)
			{
				bool		sorted;

				SpinLockAcquire(&shared->mutex);
				sorted = shared->table_state[t] == PERM_TABLE_SORTED;
				SpinLockRelease(&shared->mutex);
				if (sorted)
					break;
				ConditionVariableSleep(&shared->cv,
									   WAIT_EVENT_PARALLEL_CREATE_INDEX_SCAN);
			}
			ConditionVariableCancelSleep();
			rs = RunSortOpenSorted(BufFileOpenFileSet(&shared->fileset.fs, name,
													  O_RDONLY, false));
			pfree(name);
		}

		pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, PERM_PHASE_WRITE);
		roots[t] = PermWriteTable(par->index, MAIN_FORKNUM, layout, t, 0,
								  false, rs, &root_levels[t]);
		RunSortEnd(rs);
		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE,
									 n * (t + 1));
	}
}

/*
 * A worker, after its share of the scan: once the leader lets the sorts
 * begin, sort tables no one has taken, each into a file for the leader,
 * until none is left
 */
void
PermParallelSortTables(PermParallel *par)
{
	PermParallelShared *shared = par->shared;
	int			t;

	for (;;)
	{
		bool		sorting;

		SpinLockAcquire(&shared->mutex);
		sorting = shared->sorting;
		SpinLockRelease(&shared->mutex);
		if (sorting)
			break;
		ConditionVariableSleep(&shared->cv, WAIT_EVENT_PARALLEL_CREATE_INDEX_SCAN);
	}
	ConditionVariableCancelSleep();

	while (take_table(shared, &t))
	{
		const PermLayout *layout = &shared->layout;
		RecStore   *rows = open_stores(shared, layout->width > 0 ? t : 0);
		RunSort    *rs = PermSortTable(rows, shared->nrows, sort_budget(shared),
									   layout, t);
		char	   *name = sorted_file_name(t);
		BufFile    *file = BufFileCreateFileSet(&shared->fileset.fs, name);

		RecStoreEnd(rows);
		RunSortSave(rs, file);
		RunSortEnd(rs);
		BufFileExportFileSet(file);
		BufFileClose(file);
		pfree(name);

		SpinLockAcquire(&shared->mutex);
		shared->table_state[t] = PERM_TABLE_SORTED;
		SpinLockRelease(&shared->mutex);
		ConditionVariableBroadcast(&shared->cv);
	}
}

/* A worker is done: its counts of buffers and WAL go to the leader */
void
PermParallelDetach(PermParallel *par)
{
	InstrEndParallelQuery(&par->bufferusage[ParallelWorkerNumber],
						  &par->walusage[ParallelWorkerNumber]);
	index_close(par->index, par->indexlock);
	table_close(par->heap, par->heaplock);
}

/*
 * The leader: wait for the workers to finish, take their counts of buffers
 * and WAL, and leave parallel mode.  The stores PermParallelGather handed
 * out must be ended first: their files go with the shared memory.
 */
void
PermParallelEnd(PermParallel *par)
{
	int			i;

	WaitForParallelWorkersToFinish(par->pcxt);
	for (i = 0; i < par->pcxt->nworkers_launched; i++)
		InstrAccumParallelQuery(&par->bufferusage[i], &par->walusage[i]);
	if (IsMVCCSnapshot(par->snapshot))
		UnregisterSnapshot(par->snapshot);
	DestroyParallelContext(par->pcxt);
	ExitParallelMode();
	pfree(par);
}
