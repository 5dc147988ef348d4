/*-------------------------------------------------------------------------
 *
 * pairsparallel.c
 *		The parallel search of simhash_pairs() and simhash_clusters():
 *		starting the workers, their share of the read, the worker's sink
 *		(pairs sent to the leader) and the leader's polling of them.
 *
 * IDENTIFICATION
 *	  src/pairs/pairsparallel.c
 *
 *-------------------------------------------------------------------------
 */
#include "pairs/pairs.h"

/* A worker's links go to the leader, a message at a time */
static void
send_links(PairsState *ps)
{
	shm_mq_result r = shm_mq_send(ps->par.out, ps->par.nlinks * sizeof(PairsLink),
								  ps->par.links, false, true);

	if (r != SHM_MQ_SUCCESS)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("simhash: the leader of the parallel search stopped reading")));
	ps->par.nlinks = 0;
}

/* A worker's sink: a pair found joins the next message to the leader */
static void
worker_found(PairsState *ps, ItemPointer a, ItemPointer b, int distance)
{
	PairsLink  *l = &ps->par.links[ps->par.nlinks++];

	l->a = *a;
	l->b = *b;
	l->distance = distance;
	if (ps->par.nlinks == PAIRS_LINKS_PER_MESSAGE)
		send_links(ps);
}

/* A worker's sink: the leader reports the table, told by a marker */
static void
worker_table_done(PairsState *ps, int partitions, int split)
{
	PairsLink  *l = &ps->par.links[ps->par.nlinks++];

	memset(l, 0, sizeof(PairsLink));
	l->distance = PAIRS_TABLE_DONE;
	send_links(ps);
}

/*
 * The leader takes what its workers sent, without waiting or, at the end,
 * until every worker has detached from its queue, and hands it to its own
 * sink.
 */
static void
take_from_workers(PairsState *ps, bool wait)
{
	int			i;

	for (i = 0; i < ps->par.nqueues; i++)
	{
		while (!ps->par.queue_done[i])
		{
			Size		nbytes;
			void	   *data;
			PairsLink  *l;
			Size		n;
			shm_mq_result r = shm_mq_receive(ps->par.queues[i], &nbytes, &data, !wait);

			if (r == SHM_MQ_WOULD_BLOCK)
				break;
			if (r == SHM_MQ_DETACHED)
			{
				ps->par.queue_done[i] = true;
				break;
			}
			if (nbytes % sizeof(PairsLink) != 0)
				elog(ERROR, "simhash: message of %zu bytes from a parallel worker", nbytes);
			l = (PairsLink *) data;
			for (n = 0; n < nbytes / sizeof(PairsLink); n++)
			{
				if (l[n].distance == PAIRS_TABLE_DONE)
					pairs_report_table_done(ps, -1, 0);
				else
					ps->sink.found(ps, &l[n].a, &l[n].b, l[n].distance);
			}
		}
	}
}

/* The leader's sink, between its own chunks of work: take without waiting */
static void
leader_poll(PairsState *ps)
{
	take_from_workers(ps, false);
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
	double		reltuples = ps->src.rel->rd_rel->reltuples;
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

	BlockNumber nblocks = RelationGetNumberOfBlocks(ps->src.rel);

	if (nworkers <= 0 || IsInParallelMode() ||
		RelationUsesLocalBuffers(ps->src.rel) ||
		nblocks < (BlockNumber) min_parallel_table_scan_size)
		return NULL;

	nworkers = workers_needed(ps, nblocks, nworkers);
	if (nworkers <= 0)
		return NULL;
	EnterParallelMode();
	pcxt = CreateParallelContext("simhash", "simhash_pairs_worker", nworkers);
	shared_size = add_size(offsetof(PairsShared, parts),
						   mul_size(nworkers + 1, sizeof(PairsPart)));
	scan_size = table_parallelscan_estimate(ps->src.rel, ps->src.snapshot);
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
	shared->relid = RelationGetRelid(ps->src.rel);
	shared->keyatt = ps->src.keyatt;
	shared->fpatt = ps->src.fpatt;
	shared->keytype = ps->src.keytype;
	shared->k = ps->search.k;
	shared->clusters = ps->search.clusters;
	shared->inline_keys = ps->src.inline_keys;
	shared->progress = ps->search.progress;
	shared->start = ps->search.start;
	BarrierInit(&shared->read_done, 0);
	pg_atomic_init_u32(&shared->keys_not_inline, 0);
	pg_atomic_init_u32(&shared->next_table, 0);
	pg_atomic_init_u64(&shared->found, 0);
	pg_atomic_init_u64(&shared->compared, 0);
	SharedFileSetInit(&shared->fileset, pcxt->seg);
	shared->nparts = nworkers + 1;
	shm_toc_insert(pcxt->toc, PAIRS_SHARED_KEY, shared);

	pscan = shm_toc_allocate(pcxt->toc, scan_size);
	table_parallelscan_initialize(ps->src.rel, pscan, ps->src.snapshot);
	shm_toc_insert(pcxt->toc, PAIRS_SCAN_KEY, pscan);

	queues = shm_toc_allocate(pcxt->toc, mul_size(PAIRS_QUEUE_SIZE, nworkers));
	for (i = 0; i < nworkers; i++)
	{
		shm_mq	   *mq = shm_mq_create(queues + (Size) i * PAIRS_QUEUE_SIZE,
									   PAIRS_QUEUE_SIZE);

		shm_mq_set_receiver(mq, MyProc);
	}
	shm_toc_insert(pcxt->toc, PAIRS_QUEUES_KEY, queues);
	ps->par.shared = shared;

	LaunchParallelWorkers(pcxt);
	ps->par.nqueues = pcxt->nworkers_launched;
	ps->par.queues = palloc(Max(ps->par.nqueues, 1) * sizeof(shm_mq_handle *));
	ps->par.queue_done = palloc0(Max(ps->par.nqueues, 1) * sizeof(bool));
	for (i = 0; i < ps->par.nqueues; i++)
		ps->par.queues[i] = shm_mq_attach((shm_mq *) (queues + (Size) i * PAIRS_QUEUE_SIZE),
										  pcxt->seg, pcxt->worker[i].bgwhandle);
	ps->sink.poll = leader_poll;
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
	PairsShared *shared = ps->par.shared;
	SimhashVoter votes;
	BufFile   **files;
	int64	   *counts;
	int			nfiles = 0;
	int			p;

	if (BarrierAttach(&shared->read_done) == 0)
	{
		BufFile    *file = BufFileCreateFileSet(&shared->fileset.fs,
												part_file_name(part));
		TableScanDesc scan = table_beginscan_parallel(ps->src.rel, pscan);

		ps->search.rows = RecStoreBeginOnFile(file);
		if (!pairs_scan_rows(ps, scan, &shared->parts[part].votes))
			pg_atomic_write_u32(&shared->keys_not_inline, 1);
		table_endscan(scan);
		BufFileExportFileSet(file);
		shared->parts[part].nrows = RecStoreCount(ps->search.rows);
		shared->parts[part].wrote = true;
		RecStoreEnd(ps->search.rows);
		ps->search.rows = NULL;
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
	ps->search.rows = RecStoreOpenFiles(files, counts, nfiles);
	pairs_choose_layout(ps, &votes, RecStoreCount(ps->search.rows),
						RecStoreCount(ps->search.rows));
	return true;
}

void
pairs_end_parallel(PairsState *ps, ParallelContext *pcxt)
{
	take_from_workers(ps, true);
	ps->sink.poll = NULL;
	WaitForParallelWorkersToFinish(pcxt);
	/* the shared files go with the segment: close them first */
	if (ps->search.rows)
		RecStoreEnd(ps->search.rows);
	ps->search.rows = NULL;
	DestroyParallelContext(pcxt);
	ExitParallelMode();
	ps->par.shared = NULL;
	ps->par.nqueues = 0;
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
	ps.par.out = shm_mq_attach(mq, seg, NULL);
	ps.par.links = palloc(PAIRS_LINKS_PER_MESSAGE * sizeof(PairsLink));
	SharedFileSetAttach(&shared->fileset, seg);
	ps.par.shared = shared;
	ps.src.rel = table_open(shared->relid, AccessShareLock);
	ps.src.name = psprintf("\"%s\"", RelationGetRelationName(ps.src.rel));
	ps.src.slot = table_slot_create(ps.src.rel, NULL);
	ps.src.keyatt = shared->keyatt;
	ps.src.fpatt = shared->fpatt;
	ps.src.keytype = shared->keytype;
	ps.search.k = shared->k;
	ps.search.clusters = shared->clusters;
	ps.src.inline_keys = shared->inline_keys;
	ps.search.progress = shared->progress;
	ps.search.start = shared->start;
	ps.search.work_bytes = (int64) work_mem * 1024;
	ps.sink.found = worker_found;
	ps.sink.table_done = worker_table_done;
	ps.sink.poll = NULL;

	if (pairs_read_rows_parallel(&ps, pscan, ParallelWorkerNumber + 1))
	{
		while ((t = pg_atomic_fetch_add_u32(&shared->next_table, 1)) <
			   (uint32) ps.search.layout.ntables)
			pairs_search_table(&ps, (int) t);
		pairs_search_done(&ps);
		if (ps.par.nlinks > 0)
			send_links(&ps);
		RecStoreEnd(ps.search.rows);
	}
	ExecDropSingleTupleTableSlot(ps.src.slot);
	table_close(ps.src.rel, AccessShareLock);
	shm_mq_detach(ps.par.out);
}

