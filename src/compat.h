/*-------------------------------------------------------------------------
 *
 * compat.h
 *		The differences between the PostgreSQL major versions the extension
 *		builds for (15 to 18), each behind one PG_VERSION_NUM guard, with
 *		the release that made it.  Code elsewhere uses the names defined
 *		here and has no version test of its own.
 *
 * IDENTIFICATION
 *	  src/compat.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SIMHASH_COMPAT_H
#define SIMHASH_COMPAT_H

#if PG_VERSION_NUM < 150000
#error "simhash needs PostgreSQL 15 or later"
#endif

/* 16 moved the varlena macros (VARDATA, SET_VARSIZE ...) to varatt.h */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * 18 replaced pg_attribute_noreturn(), written after a declaration, by
 * pg_noreturn, written before it.  Before 18 the attribute may stand in
 * front as well.
 */
#ifndef pg_noreturn
#define pg_noreturn pg_attribute_noreturn()
#endif

/* 16 folded pg_proc_aclcheck() and its kin into object_aclcheck() */
#if PG_VERSION_NUM >= 160000
#define SimhashProcAclcheck(proc, role, mode) \
	object_aclcheck(ProcedureRelationId, (proc), (role), (mode))
#else
#define SimhashProcAclcheck(proc, role, mode) \
	pg_proc_aclcheck((proc), (role), (mode))
#endif

/* 16 renamed RelationData.rd_node (a RelFileNode) to rd_locator */
#if PG_VERSION_NUM >= 160000
#define SimhashRelationLocator(rel)	((rel)->rd_locator)
#else
#define SimhashRelationLocator(rel)	((rel)->rd_node)
#endif

/* 18 gave vacuum_delay_point() an argument: whether ANALYZE calls it */
#if PG_VERSION_NUM >= 180000
#define SimhashVacuumDelayPoint()	vacuum_delay_point(false)
#else
#define SimhashVacuumDelayPoint()	vacuum_delay_point()
#endif

/*
 * 17 added read streams (storage/read_stream.h): a pass over blocks in a
 * known order is read ahead and combined into larger reads, and VACUUM of
 * nbtree, GiST and SP-GiST reads its pages so.  SimhashBlockRange reads
 * blocks [from, end) of a relation's main fork, in order, pinned, through a
 * read stream on 17 and later, one ReadBufferExtended() a block before.
 */
#include "storage/bufmgr.h"
#include "utils/relcache.h"
#if PG_VERSION_NUM >= 170000
#include "storage/read_stream.h"
#endif

typedef struct SimhashBlockRange
{
	Relation	rel;
	BufferAccessStrategy strategy;
	BlockNumber next;			/* the next block to hand out (or to queue) */
	BlockNumber end;
#if PG_VERSION_NUM >= 170000
	ReadStream *stream;
#endif
} SimhashBlockRange;

#if PG_VERSION_NUM >= 170000
static inline BlockNumber
simhash_block_range_next(ReadStream *stream, void *arg, void *per_buffer_data)
{
	SimhashBlockRange *range = (SimhashBlockRange *) arg;

	return range->next < range->end ? range->next++ : InvalidBlockNumber;
}
#endif

static inline void
SimhashBlockRangeBegin(SimhashBlockRange *range, Relation rel,
					   BufferAccessStrategy strategy, BlockNumber from,
					   BlockNumber end)
{
	range->rel = rel;
	range->strategy = strategy;
	range->next = from;
	range->end = end;
#if PG_VERSION_NUM >= 170000
	range->stream = read_stream_begin_relation(READ_STREAM_MAINTENANCE |
											   READ_STREAM_FULL,
											   strategy, rel, MAIN_FORKNUM,
											   simhash_block_range_next,
											   range, 0);
#endif
}

/* The next block, pinned and not locked; InvalidBuffer after the last */
static inline Buffer
SimhashBlockRangeNext(SimhashBlockRange *range)
{
#if PG_VERSION_NUM >= 170000
	return read_stream_next_buffer(range->stream, NULL);
#else
	if (range->next >= range->end)
		return InvalidBuffer;
	return ReadBufferExtended(range->rel, MAIN_FORKNUM, range->next++,
							  RBM_NORMAL, range->strategy);
#endif
}

static inline void
SimhashBlockRangeEnd(SimhashBlockRange *range)
{
#if PG_VERSION_NUM >= 170000
	read_stream_end(range->stream);
#endif
}

/*
 * 17 plans the workers of a parallel CREATE INDEX for every access method
 * that sets amcanbuildparallel (indexInfo->ii_ParallelWorkers); before, for
 * btree alone, and an access method asks the planner itself.  Either way
 * plan_create_index_workers() decides: none for a temporary table, or for
 * index expressions or a predicate that are not parallel safe.
 */
#if PG_VERSION_NUM >= 170000
#define SimhashSetCanBuildParallel(amroutine) \
	((amroutine)->amcanbuildparallel = true)
#define SimhashIndexBuildWorkers(heap, index, indexInfo) \
	((indexInfo)->ii_ParallelWorkers)
#else
#define SimhashSetCanBuildParallel(amroutine)	((void) (amroutine))
#define SimhashIndexBuildWorkers(heap, index, indexInfo) \
	plan_create_index_workers(RelationGetRelid(heap), RelationGetRelid(index))
#endif

#endif							/* SIMHASH_COMPAT_H */
