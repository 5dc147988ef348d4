/*-------------------------------------------------------------------------
 *
 * groupsort.c
 *		GroupSort: (key, TID) records in the order of their leading bits
 *		alone, within a memory budget, for simhash_pairs().
 *
 * Records in the order of their top bits alone: simhash_pairs() needs the
 * records of equal prefixes together and nothing more.  While they fit in
 * memory the records are radix-sorted there, with only the passes the top
 * bits need (two for a 16-bit prefix, against eight for a whole key).
 * Past that they are dealt to partitions by their leading bits, one
 * temporary file each, and each partition is read back whole and sorted in
 * memory.  Against RunSort's runs and merge, each record is written
 * and read once and no heap of runs is sifted per record.  A partition
 * larger than memory is dealt again by the bits below those its records
 * share, or, where that cannot split it (many rows sharing their leading
 * bits), sorted by a RunSort of its own, which stays within the budget
 * however skewed the keys are (group_load_partition).  A sort can be
 * restarted for the next table and writes over its files.
 *
 * Memory: the two radix buffers share the budget with the files' 8 kB
 * buffers, which get at most an eighth of it.
 *
 * IDENTIFICATION
 *	  src/recsort/groupsort.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/buffile.h"
#include "utils/memutils.h"

#include "recsort/recsort.h"
#include "recsort/recsort_int.h"

struct GroupSort
{
	int			bits;			/* order by the key's top bits */
	int			known;			/* top bits all records share (a sub-sort) */
	int64		budget;
	int64		max;			/* records buf (and tmp) hold */
	KeyTid    *buf;
	KeyTid    *tmp;
	KeyTid    *sorted;			/* buf or tmp: records n in order */
	int64		n;
	int64		next;
	int			nparts;			/* 0: everything in buf */
	int			part_bits;		/* partition of a key: its part_bits bits */
	int			part_shift;		/* below the known: (key << known) >> shift */
	BufFile   **files;
	int64	   *counts;
	KeyTid    *stage;			/* records on their way to each file */
	int		   *staged;
	int			stage_cap;		/* records staged per partition */
	int			cur;			/* the partition being read */
	GroupSort *sub;			/* partition cur when larger than buf, */
	RunSort *big;			/* or this when that would not do */
	KeyTid    *chunk;			/* big's records, handed out in chunks */
	int			split;			/* partitions that went to sub or big */
};

static inline void group_put(GroupSort *gs, const KeyTid *rec);

/* Records of a RunSort'ed partition handed out at a time */
#define GROUPSORT_CHUNK		1024

/* The largest number of partitions a budget pays the file buffers of */
static int
group_max_parts(int64 budget_bytes)
{
	int64		parts = 2;

	while (parts * 2 * BLCKSZ <= budget_bytes / 8 && parts < 4096)
		parts *= 2;
	return (int) parts;
}

static void
group_alloc_buffers(GroupSort *gs)
{
	if (gs->buf == NULL)
	{
		gs->buf = palloc_extended(gs->max * sizeof(KeyTid), MCXT_ALLOC_HUGE);
		gs->tmp = palloc_extended(gs->max * sizeof(KeyTid), MCXT_ALLOC_HUGE);
	}
}

static void
group_free_buffers(GroupSort *gs)
{
	if (gs->buf)
	{
		pfree(gs->buf);
		pfree(gs->tmp);
		gs->buf = gs->tmp = gs->sorted = NULL;
	}
}

/*
 * Switch to partitions: enough of them for each to fit in buf with room
 * to spare, as far as the budget pays their buffers.
 */
/* The records a partition may hold once the budget pays limit files */
static int64
group_part_records(int64 budget_bytes, int limit)
{
	return RecSortRecordsFor((budget_bytes - (int64) limit * BLCKSZ - budget_bytes / 16) / 2);
}

static void
group_start_partitions(GroupSort *gs, int64 expected)
{
	int			limit = group_max_parts(gs->budget);
	int64		max_after = group_part_records(gs->budget, limit);
	int			nparts = 2;
	int			log2parts = 1;
	int64		i;

	while (nparts < limit && (int64) nparts * max_after < 2 * expected)
	{
		nparts *= 2;
		log2parts++;
	}
	gs->nparts = nparts;
	gs->part_bits = log2parts;
	gs->part_shift = 64 - log2parts;
	gs->files = palloc0(nparts * sizeof(BufFile *));
	gs->counts = palloc0(nparts * sizeof(int64));
	/* records go to the files a few hundred at a time, not one by one */
	gs->stage_cap = (int) Max(1, Min(256, gs->budget / 16 / (nparts * (int64) sizeof(KeyTid))));
	gs->stage = palloc((Size) nparts * gs->stage_cap * sizeof(KeyTid));
	gs->staged = palloc0(nparts * sizeof(int));

	/* what buf holds goes out first; buf is sized for a partition now */
	for (i = 0; i < gs->n; i++)
		group_put(gs, &gs->buf[i]);
	gs->n = 0;
	group_free_buffers(gs);
	gs->max = max_after;
}

static void
group_flush_stage(GroupSort *gs, int p)
{
	if (gs->staged[p] == 0)
		return;
	if (gs->files[p] == NULL)
		gs->files[p] = BufFileCreateTemp(false);
	else if (gs->counts[p] == gs->staged[p])
		RecSortRewind(gs->files[p]);	/* a restarted sort's file: overwrite */
	BufFileWrite(gs->files[p], gs->stage + (Size) p * gs->stage_cap,
				 gs->staged[p] * sizeof(KeyTid));
	gs->staged[p] = 0;
}

static inline void
group_put(GroupSort *gs, const KeyTid *rec)
{
	int			p;

	if (gs->nparts == 0)
	{
		if (gs->n < gs->max)
		{
			gs->buf[gs->n++] = *rec;
			return;
		}
		/* more records than expected, and no more room */
		group_start_partitions(gs, 2 * gs->n);
	}
	p = (int) ((rec->key << gs->known) >> gs->part_shift);
	gs->stage[(Size) p * gs->stage_cap + gs->staged[p]++] = *rec;
	gs->counts[p]++;
	if (gs->staged[p] == gs->stage_cap)
		group_flush_stage(gs, p);
}

static GroupSort *
group_begin(int64 budget_bytes, int64 expected, int top_bits, int known)
{
	GroupSort *gs = palloc0(sizeof(GroupSort));

	Assert(top_bits >= 1 && top_bits <= 64);
	Assert(known >= 0 && known < top_bits);
	gs->bits = top_bits;
	gs->known = known;
	gs->budget = budget_bytes;
	gs->max = RecSortRecordsFor(budget_bytes / 2);
	if (expected > gs->max)
		group_start_partitions(gs, expected);
	else
	{
		gs->max = Max(expected, 1);
		group_alloc_buffers(gs);
	}
	return gs;
}

GroupSort *
GroupSortBegin(int64 budget_bytes, int64 expected, int top_bits)
{
	return group_begin(budget_bytes, expected, top_bits, 0);
}

/* n records at once: what GroupSortPut does for each */
void
GroupSortPutBatch(GroupSort *gs, const KeyTid *recs, int n)
{
	int			i;

	for (i = 0; i < n; i++)
		group_put(gs, &recs[i]);
}

/*
 * Load partition p and sort it in buf.  A partition larger than buf (its
 * records share more leading bits than the partitions tell apart: a large
 * table in a small work_mem, or skewed keys) goes to a sort of its own: a
 * GroupSort that partitions it by the bits below, when its partitions
 * can be expected to fit at half their room (a 10M-row table in work_mem
 * 4MB: 32 partitions of 5 MB, each dealt to 32 more of 160 kB).
 * Otherwise a RunSort sorts the partition: whole keys (clusters),
 * which partitioning by more bits would never split when many records
 * share one; records that share every bit asked for already; and a budget
 * too small for more than a few partitions, where each level would write
 * the records again to split them only in two.
 */
static void
group_load_partition(GroupSort *gs, int p)
{
	BufFile    *file = gs->files[p];
	int64		count = gs->counts[p];
	int			known = Min(gs->bits, gs->known + gs->part_bits);
	KeyTid		recs[RECSORT_BATCH];
	int64		i;

	gs->n = gs->next = 0;
	if (file == NULL || count == 0)
		return;
	RecSortRewind(file);
	if (count <= gs->max)
	{
		group_alloc_buffers(gs);
		RecSortRead(file, gs->buf, count, count, 0);
		CHECK_FOR_INTERRUPTS();
		gs->sorted = RecSortRadix(gs->buf, gs->tmp, count, gs->bits, known);
		gs->n = count;
		return;
	}

	/* the radix buffers make room for the sort of the partition */
	group_free_buffers(gs);
	gs->split++;
	if (gs->bits < 64 && known < gs->bits &&
		count <= (int64) group_max_parts(gs->budget) *
		group_part_records(gs->budget, group_max_parts(gs->budget)) / 2)
		gs->sub = group_begin(gs->budget, count, gs->bits, known);
	else
		gs->big = RunSortBegin(gs->budget, count);
	for (i = 0; i < count; i += RECSORT_BATCH)
	{
		int			n = (int) Min(RECSORT_BATCH, count - i);
		int			r;

		CHECK_FOR_INTERRUPTS();
		RecSortRead(file, recs, n, count, i);
		if (gs->sub)
			GroupSortPutBatch(gs->sub, recs, n);
		else
			for (r = 0; r < n; r++)
				RunSortPut(gs->big, &recs[r]);
	}
	if (gs->sub)
		GroupSortFinish(gs->sub);
	else
		RunSortFinish(gs->big);
	/* the file stays open, for a restart to write again */
}

/* All records are in: get ready to read them in order */
void
GroupSortFinish(GroupSort *gs)
{
	CHECK_FOR_INTERRUPTS();
	gs->next = 0;
	if (gs->nparts == 0)
		gs->sorted = RecSortRadix(gs->buf, gs->tmp, gs->n, gs->bits, gs->known);
	else
	{
		int			p;

		for (p = 0; p < gs->nparts; p++)
			group_flush_stage(gs, p);
		pfree(gs->stage);
		pfree(gs->staged);
		gs->stage = NULL;
		gs->staged = NULL;
		gs->n = 0;
		gs->cur = -1;
	}
}

/*
 * Make a finished sort ready for another set of records (the next table of
 * simhash_pairs), within the same budget.  Its buffers and temporary files
 * are kept and written over: a new file for every partition of every pass
 * had the kernel allocate, and at the close free, its pages each time,
 * which took more time than copying the records in and out.
 */
void
GroupSortRestart(GroupSort *gs, int64 expected, int top_bits)
{
	Assert(top_bits > gs->known && top_bits <= 64);
	if (gs->sub)
	{
		GroupSortEnd(gs->sub);
		gs->sub = NULL;
	}
	if (gs->big)
	{
		RunSortEnd(gs->big);
		gs->big = NULL;
	}
	gs->bits = top_bits;
	gs->n = gs->next = 0;
	gs->sorted = NULL;
	gs->split = 0;
	if (gs->nparts > 0)
	{
		memset(gs->counts, 0, gs->nparts * sizeof(int64));
		if (gs->stage == NULL)
		{
			gs->stage = palloc((Size) gs->nparts * gs->stage_cap * sizeof(KeyTid));
			gs->staged = palloc0(gs->nparts * sizeof(int));
		}
	}
	else if (expected > gs->max)
	{
		group_free_buffers(gs);
		if (expected > RecSortRecordsFor(gs->budget / 2))
			group_start_partitions(gs, expected);
		else
		{
			gs->max = expected;
			group_alloc_buffers(gs);
		}
	}
}

/*
 * Partitions written to temporary files (0: the sort stayed in memory),
 * and in *split those of them too large for memory, sorted in pieces
 */
int
GroupSortPartitions(GroupSort *gs, int *split)
{
	*split = gs->split;
	return gs->nparts;
}

/*
 * The next records in order of the top bits, as an array that stays valid
 * until the next call: their number, 0 after the last.
 */
int64
GroupSortNextChunk(GroupSort *gs, KeyTid **recs)
{
	for (;;)
	{
		if (gs->sub)
		{
			int64		n = GroupSortNextChunk(gs->sub, recs);

			if (n > 0)
				return n;
			GroupSortEnd(gs->sub);
			gs->sub = NULL;
		}
		else if (gs->big)
		{
			int64		n = 0;

			if (gs->chunk == NULL)
				gs->chunk = palloc(GROUPSORT_CHUNK * sizeof(KeyTid));
			while (n < GROUPSORT_CHUNK && RunSortNext(gs->big, &gs->chunk[n]))
				n++;
			if (n > 0)
			{
				*recs = gs->chunk;
				return n;
			}
			RunSortEnd(gs->big);
			gs->big = NULL;
		}
		else if (gs->next < gs->n)
		{
			int64		n = gs->n - gs->next;

			*recs = gs->sorted + gs->next;
			gs->next = gs->n;
			return n;
		}
		if (gs->nparts == 0 || gs->cur + 1 >= gs->nparts)
			return 0;
		group_load_partition(gs, ++gs->cur);
	}
}

void
GroupSortEnd(GroupSort *gs)
{
	int			p;

	if (gs->sub)
		GroupSortEnd(gs->sub);
	if (gs->big)
		RunSortEnd(gs->big);
	for (p = 0; p < gs->nparts; p++)
		if (gs->files[p])
			BufFileClose(gs->files[p]);
	if (gs->files)
	{
		pfree(gs->files);
		pfree(gs->counts);
	}
	if (gs->stage)
	{
		pfree(gs->stage);
		pfree(gs->staged);
	}
	group_free_buffers(gs);
	if (gs->chunk)
		pfree(gs->chunk);
	pfree(gs);
}
