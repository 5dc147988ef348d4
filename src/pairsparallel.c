/*-------------------------------------------------------------------------
 *
 * pairsparallel.c
 *		The parallel search of simhash_pairs() and simhash_clusters().
 *
 * IDENTIFICATION
 *	  src/pairsparallel.c
 *
 *-------------------------------------------------------------------------
 */
#include "pairs.h"

/* A worker's links go to the leader, a message at a time */
void
pairs_send_links(PairsState *ps)
{
	shm_mq_result r = shm_mq_send(ps->out, ps->nlinks * sizeof(PairsLink),
								  ps->links, false, true);

	if (r != SHM_MQ_SUCCESS)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("simhash: the leader of the parallel search stopped reading")));
	ps->nlinks = 0;
}

/*
 * The leader takes what its workers sent, without waiting or, at the end,
 * until every worker has detached from its queue.
 */
void
pairs_poll_workers(PairsState *ps, bool wait)
{
	int			i;

	for (i = 0; i < ps->nqueues; i++)
	{
		while (!ps->queue_done[i])
		{
			Size		nbytes;
			void	   *data;
			PairsLink  *l;
			Size		n;
			shm_mq_result r = shm_mq_receive(ps->queues[i], &nbytes, &data, !wait);

			if (r == SHM_MQ_WOULD_BLOCK)
				break;
			if (r == SHM_MQ_DETACHED)
			{
				ps->queue_done[i] = true;
				break;
			}
			if (nbytes % sizeof(PairsLink) != 0)
				elog(ERROR, "simhash: message of %zu bytes from a parallel worker", nbytes);
			l = (PairsLink *) data;
			for (n = 0; n < nbytes / sizeof(PairsLink); n++)
			{
				if (l[n].distance == PAIRS_TABLE_DONE)
					pairs_report_table_done(ps, -1, 0);
				else if (ps->clusters)
					pairs_uf_union(ps, &l[n].a, &l[n].b);
				else
					pairs_emit_pair(ps, &l[n].a, &l[n].b, l[n].distance);
			}
		}
	}
}


/*
 * The search takes as long as its busiest process: with T tables and P
 * processes (the leader and its workers), ceil(T / P) tables one after the
 * other.  Start no more of the allowed workers than that time needs: at
 * k = 3 four tables take two rounds with three processes as with two, and
 * a third process would only compete with the others for the cores.  The
 * number of rows is the planner's (or a guess from the table's size): the
 * layout, chosen once every row is read, may differ, which costs time and
 * never a result.
 */
static int
workers_needed(PairsState *ps, BlockNumber nblocks, int allowed)
{
	double		reltuples = ps->rel->rd_rel->reltuples;
	int64		rows = reltuples > 0 ? (int64) reltuples : (int64) nblocks * 100;
	int			tables = pairs_count_tables(ps, rows);
	int			rounds;

	if (tables <= 0)
		return allowed;
	rounds = (tables + allowed) / (allowed + 1);
	return Min(allowed, (tables + rounds - 1) / rounds - 1);
}

/*
 * Parallel search.  The tables are independent: a pair is reported by the
 * first table where its two rows share a prefix, which each table knows
 * by itself.  So the leader starts up to max_parallel_workers_per_gather
 * workers at once (fewer when they would not shorten the search), and
 * every process:
 *
 *	1. reads its share of the table's pages (a parallel scan), into its own
 *	   file of a shared file set, counting how often each bit is set;
 *	2. waits at a barrier until every row is read, then sums the counts and
 *	   chooses the layout, the same in every process since the sums are;
 *	3. takes the next table not taken (an atomic counter) and searches it,
 *	   reading every process's file, sorting within its own work_mem.
 *
 * Workers send what they find, as pairs of TIDs (or keys), through one
 * message queue each; the leader turns them into result rows or cluster
 * links between its own chunks of work, and at the end until every worker
 * has finished.  Errors in a worker reach the leader through the parallel
 * context, as in a parallel query.
 *
 * Tables smaller than min_parallel_table_scan_size (8MB by default),
 * temporary tables (in the leader's local buffers), a call from within a
 * parallel operation, or max_parallel_workers_per_gather = 0 keep the search
 * in one process.  If a key cannot travel inline, every process
 * stops after the read and the leader reads again alone, with TIDs.
 */
ParallelContext *
pairs_begin_parallel(PairsState *ps)
{
	int			nworkers = max_parallel_workers_per_gather;
	ParallelContext *pcxt;
	PairsShared *shared;
	Size		shared_size;
	Size		scan_size;
	ParallelTableScanDesc pscan;
	char	   *queues;
	int			i;

	BlockNumber nblocks = RelationGetNumberOfBlocks(ps->rel);

	if (nworkers <= 0 || IsInParallelMode() ||
		RelationUsesLocalBuffers(ps->rel) ||
		nblocks < (BlockNumber) min_parallel_table_scan_size)
		return NULL;

	nworkers = workers_needed(ps, nblocks, nworkers);
	if (nworkers <= 0)
		return NULL;
	EnterParallelMode();
	pcxt = CreateParallelContext("simhash", "simhash_pairs_worker", nworkers);
	shared_size = add_size(offsetof(PairsShared, parts),
						   mul_size(nworkers + 1, sizeof(PairsPart)));
	scan_size = table_parallelscan_estimate(ps->rel, ps->snapshot);
	shm_toc_estimate_chunk(&pcxt->estimator, shared_size);
	shm_toc_estimate_chunk(&pcxt->estimator, scan_size);
	shm_toc_estimate_chunk(&pcxt->estimator, mul_size(PAIRS_QUEUE_SIZE, nworkers));
	shm_toc_estimate_keys(&pcxt->estimator, 3);
	InitializeParallelDSM(pcxt);
	if (pcxt->seg == NULL)
	{
		/* no dynamic shared memory to be had: search alone */
		DestroyParallelContext(pcxt);
		ExitParallelMode();
		return NULL;
	}

	shared = shm_toc_allocate(pcxt->toc, shared_size);
	memset(shared, 0, shared_size);
	shared->relid = RelationGetRelid(ps->rel);
	shared->keyatt = ps->keyatt;
	shared->fpatt = ps->fpatt;
	shared->keytype = ps->keytype;
	shared->k = ps->k;
	shared->clusters = ps->clusters;
	shared->inline_keys = ps->inline_keys;
	shared->progress = ps->progress;
	shared->start = ps->start;
	BarrierInit(&shared->read_done, 0);
	pg_atomic_init_u32(&shared->keys_not_inline, 0);
	pg_atomic_init_u32(&shared->next_table, 0);
	pg_atomic_init_u64(&shared->found, 0);
	pg_atomic_init_u64(&shared->compared, 0);
	SharedFileSetInit(&shared->fileset, pcxt->seg);
	shared->nparts = nworkers + 1;
	shm_toc_insert(pcxt->toc, PAIRS_SHARED_KEY, shared);

	pscan = shm_toc_allocate(pcxt->toc, scan_size);
	table_parallelscan_initialize(ps->rel, pscan, ps->snapshot);
	shm_toc_insert(pcxt->toc, PAIRS_SCAN_KEY, pscan);

	queues = shm_toc_allocate(pcxt->toc, mul_size(PAIRS_QUEUE_SIZE, nworkers));
	for (i = 0; i < nworkers; i++)
	{
		shm_mq	   *mq = shm_mq_create(queues + (Size) i * PAIRS_QUEUE_SIZE,
									   PAIRS_QUEUE_SIZE);

		shm_mq_set_receiver(mq, MyProc);
	}
	shm_toc_insert(pcxt->toc, PAIRS_QUEUES_KEY, queues);
	ps->shared = shared;

	LaunchParallelWorkers(pcxt);
	ps->nqueues = pcxt->nworkers_launched;
	ps->queues = palloc(Max(ps->nqueues, 1) * sizeof(shm_mq_handle *));
	ps->queue_done = palloc0(Max(ps->nqueues, 1) * sizeof(bool));
	for (i = 0; i < ps->nqueues; i++)
		ps->queues[i] = shm_mq_attach((shm_mq *) (queues + (Size) i * PAIRS_QUEUE_SIZE),
									  pcxt->seg, pcxt->worker[i].bgwhandle);
	return pcxt;
}

static char *
part_file_name(int part)
{
	return psprintf("rows.%d", part);
}

/*
 * Steps 1 and 2 for process number part (0: the leader).  False when a key
 * could not travel inline: the search must start again with TIDs.
 */
bool
pairs_read_rows_parallel(PairsState *ps, ParallelTableScanDesc pscan, int part)
{
	PairsShared *shared = ps->shared;
	SimhashVoter votes;
	BufFile   **files;
	int64	   *counts;
	int			nfiles = 0;
	int			p;

	if (BarrierAttach(&shared->read_done) == 0)
	{
		BufFile    *file = BufFileCreateFileSet(&shared->fileset.fs,
												part_file_name(part));
		TableScanDesc scan = table_beginscan_parallel(ps->rel, pscan);

		ps->rows = PermRecStoreBeginOnFile(file);
		if (!pairs_scan_rows(ps, scan, &shared->parts[part].votes))
			pg_atomic_write_u32(&shared->keys_not_inline, 1);
		table_endscan(scan);
		BufFileExportFileSet(file);
		shared->parts[part].nrows = PermRecStoreCount(ps->rows);
		shared->parts[part].wrote = true;
		PermRecStoreEnd(ps->rows);
		ps->rows = NULL;
		BarrierArriveAndWait(&shared->read_done, PG_WAIT_EXTENSION);
	}
	BarrierDetach(&shared->read_done);
	if (pg_atomic_read_u32(&shared->keys_not_inline) != 0)
		return false;

	/* everyone's rows, and the sums of everyone's counts */
	SimhashVoterInit(&votes);
	files = palloc(shared->nparts * sizeof(BufFile *));
	counts = palloc(shared->nparts * sizeof(int64));
	for (p = 0; p < shared->nparts; p++)
	{
		if (!shared->parts[p].wrote)
			continue;
		SimhashVoterMerge(&votes, &shared->parts[p].votes);
		files[nfiles] = BufFileOpenFileSet(&shared->fileset.fs, part_file_name(p),
										   O_RDONLY, false);
		counts[nfiles++] = shared->parts[p].nrows;
	}
	ps->rows = PermRecStoreOpenFiles(files, counts, nfiles);
	pairs_choose_layout(ps, &votes, PermRecStoreCount(ps->rows));
	return true;
}

void
pairs_end_parallel(PairsState *ps, ParallelContext *pcxt)
{
	pairs_poll_workers(ps, true);
	WaitForParallelWorkersToFinish(pcxt);
	/* the shared files go with the segment: close them first */
	if (ps->rows)
		PermRecStoreEnd(ps->rows);
	ps->rows = NULL;
	DestroyParallelContext(pcxt);
	ExitParallelMode();
	ps->shared = NULL;
	ps->nqueues = 0;
}

/* A parallel worker: reads its share, then searches tables until none is left */
void
simhash_pairs_worker(dsm_segment *seg, shm_toc *toc)
{
	PairsShared *shared = shm_toc_lookup(toc, PAIRS_SHARED_KEY, false);
	ParallelTableScanDesc pscan = shm_toc_lookup(toc, PAIRS_SCAN_KEY, false);
	char	   *queues = shm_toc_lookup(toc, PAIRS_QUEUES_KEY, false);
	shm_mq	   *mq = (shm_mq *) (queues + (Size) ParallelWorkerNumber * PAIRS_QUEUE_SIZE);
	PairsState	ps = {0};
	uint32		t;

	shm_mq_set_sender(mq, MyProc);
	ps.out = shm_mq_attach(mq, seg, NULL);
	ps.links = palloc(PAIRS_LINKS_PER_MESSAGE * sizeof(PairsLink));
	SharedFileSetAttach(&shared->fileset, seg);
	ps.shared = shared;
	ps.rel = table_open(shared->relid, AccessShareLock);
	ps.slot = table_slot_create(ps.rel, NULL);
	ps.keyatt = shared->keyatt;
	ps.fpatt = shared->fpatt;
	ps.keytype = shared->keytype;
	ps.k = shared->k;
	ps.clusters = shared->clusters;
	ps.inline_keys = shared->inline_keys;
	ps.progress = shared->progress;
	ps.start = shared->start;
	ps.work_bytes = (int64) work_mem * 1024;

	if (pairs_read_rows_parallel(&ps, pscan, ParallelWorkerNumber + 1))
	{
		while ((t = pg_atomic_fetch_add_u32(&shared->next_table, 1)) <
			   (uint32) ps.layout.ntables)
			pairs_search_table(&ps, (int) t);
		pairs_search_done(&ps);
		if (ps.nlinks > 0)
			pairs_send_links(&ps);
		PermRecStoreEnd(ps.rows);
	}
	ExecDropSingleTupleTableSlot(ps.slot);
	table_close(ps.rel, AccessShareLock);
	shm_mq_detach(ps.out);
}

