/*-------------------------------------------------------------------------
 *
 * permsort.c
 *		Sorting (key, TID) records within a memory budget: the rows of a
 *		simhash_perm build and of simhash_pairs()/simhash_clusters().
 *
 * Three pieces, all spilling to temporary files (BufFile) past their share
 * of the budget:
 *
 *	PermRecStore	the records as they were read, kept to be read again once
 *					per table: in memory while they fit, then all of them in
 *					a temporary file (or files of a shared file set, which
 *					parallel workers of simhash_pairs() write and read).
 *	PermRunSort		one sort: records are gathered in a buffer; a full buffer
 *					is sorted and written out as a run; at the end the last
 *					run stays in memory and is merged with the runs on disk.
 *	PermGroupSort	records in order of their leading bits only, for
 *					simhash_pairs(): partitions by leading bits, each sorted
 *					in memory (see below).
 *
 * Records are 16 bytes (PermKey), sorted by key then TID, in memory by a
 * radix sort (sort_records).  The merge keeps the runs' heads in a binary
 * heap; each run reads through its own BufFile buffer (8 kB), so a merge of
 * a hundred runs (a hundred million rows sorted in 64 MB) holds under a
 * megabyte of buffers.
 *
 * The design mirrors tuplesort's external sort without its per-tuple
 * headers: at 16 bytes a record and two buffers for the radix sort, a
 * 64 MB budget sorts two million rows in memory, where a tuplesort of
 * (int8, tid) tuples would hold about a third as many.
 *
 * IDENTIFICATION
 *	  src/permsort.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/buffile.h"
#include "utils/memutils.h"

#include "perm.h"

#define ST_SORT sort_perm_keys
#define ST_ELEMENT_TYPE PermKey
#define ST_COMPARE(a, b) PermCompareKeys(a, b)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* The fewest records a buffer holds, however small the budget */
#define PERM_SORT_MIN_RECORDS	1024

/* Below this many records, a comparison sort beats the radix sort's passes */
#define PERM_RADIX_MIN_RECORDS	4096
#define PERM_RADIX_BITS			8
/* Up to this many bits left to sort, one pass sorts them all */
#define PERM_RADIX_WIDE_BITS	12

struct PermRecStore
{
	PermKey    *mem;
	int64		n;
	int64		alloc;			/* records mem has room for */
	int64		max;			/* kept in memory while n < max */
	int64		next;			/* reading: the next record */
	BufFile    *file;			/* past max: all of them here */
	PermKey    *readbuf;		/* reading the file: records read ahead */
	PermKey    *batch;			/* PermRecStoreNext: the current batch */
	int			nread;			/* its records */
	int			readpos;		/* and the next of them */
	/* a store over files written elsewhere, read one after the other */
	BufFile   **files;
	int64	   *file_counts;
	int			nfiles;
	int			fileno;			/* files[fileno] is file */
	int64		file_left;		/* its records not read yet */
};

/* A source of the merge and a copy of its head, kept in the heap */
typedef struct PermHeapItem
{
	PermKey		head;
	int			src;
} PermHeapItem;

typedef struct PermRun
{
	BufFile    *file;
	PermKey		head;			/* its next record, while it has one */
} PermRun;

struct PermRunSort
{
	PermKey    *buf;
	PermKey    *tmp;			/* the radix sort's second buffer */
	int64		n;
	int64		max;
	int64		next;			/* reading: next record of buf */
	PermRun    *runs;
	int			nruns;
	int			maxruns;
	int64		total;
	PermHeapItem *heap;			/* merging: sources' heads, smallest first */
	int			nheap;
};

/*
 * Sort n records by key, then TID; or, with top_bits below 64, by the top
 * top_bits bits of the key alone, leaving the order within equal top bits
 * open (the passes below the top bits' lowest byte are skipped).  The
 * records' first known_bits bits are the same in all of them (a partition
 * of PermGroupSort), so no pass looks at those.
 *
 * A least-significant-digit radix sort on the key, 8 bits a pass (a pass
 * whose digit is the same in every record is skipped), is stable, so
 * records of equal keys keep their input order; for a whole-key sort, runs
 * of equal keys are then put in TID order by a comparison sort, as the
 * input need not be in TID order (a synchronized scan starts mid-table).
 * Eight passes, each scattering to 256 places that stay in the CPU's
 * caches (16-bit digits, four passes over 65,536 places, were a third
 * slower at a million rows), instead of log2(n) rounds of comparisons.
 * When no more than PERM_RADIX_WIDE_BITS bits are left to sort (the 11
 * bits of a 16-bit prefix below a partition's 5), one pass on all of them
 * replaces two: the 2,048 places still fit in the caches.  The result may
 * end in tmp: the sorted array is returned.
 */
static PermKey *
sort_records(PermKey *a, PermKey *tmp, int64 n, int top_bits, int known_bits)
{
	int64	   *count;
	int			lo = 64 - top_bits;
	int			hi = 64 - known_bits;
	int			width;
	int			shift;
	int64		i,
				run;

	Assert(known_bits >= 0 && known_bits <= top_bits);
	if (n < PERM_RADIX_MIN_RECORDS)
	{
		sort_perm_keys(a, n);
		return a;
	}
	if (hi - lo <= PERM_RADIX_WIDE_BITS)
	{
		width = hi - lo;
		shift = lo;
	}
	else
	{
		width = PERM_RADIX_BITS;
		shift = lo / PERM_RADIX_BITS * PERM_RADIX_BITS;
	}
	count = palloc((Size) sizeof(int64) << Max(width, PERM_RADIX_BITS));
	for (; shift < hi && width > 0; shift += width)
	{
		uint64		mask = (UINT64CONST(1) << width) - 1;
		int			buckets = 1 << width;
		int64		sum = 0;
		PermKey    *swap;
		int			d;

		memset(count, 0, buckets * sizeof(int64));
		for (i = 0; i < n; i++)
			count[(a[i].key >> shift) & mask]++;
		if (count[(a[0].key >> shift) & mask] == n)
			continue;			/* one digit everywhere: nothing to move */
		for (d = 0; d < buckets; d++)
		{
			int64		c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			tmp[count[(a[i].key >> shift) & mask]++] = a[i];
		swap = a;
		a = tmp;
		tmp = swap;
		CHECK_FOR_INTERRUPTS();
	}
	pfree(count);
	if (top_bits < 64)
		return a;

	/* equal keys: by TID */
	for (i = 0; i < n; i = run)
	{
		for (run = i + 1; run < n && a[run].key == a[i].key; run++)
			;
		if (run - i > 1)
			sort_perm_keys(a + i, run - i);
	}
	return a;
}

static void
write_records(BufFile *file, const PermKey *recs, int64 n)
{
	BufFileWrite(file, (void *) recs, n * sizeof(PermKey));
}

static bool
read_record(BufFile *file, PermKey *rec)
{
	size_t		got = BufFileRead(file, rec, sizeof(PermKey));

	if (got == 0)
		return false;
	if (got != sizeof(PermKey))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read a sorted record from a temporary file: read %zu of %zu bytes",
						got, sizeof(PermKey))));
	return true;
}

/* Read n records that must be there: record first of a file of total */
static void
read_records(BufFile *file, PermKey *recs, int64 n, int64 total, int64 first)
{
	size_t		want = n * sizeof(PermKey);
	size_t		got = BufFileRead(file, recs, want);

	if (got != want)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("temporary file of %lld records ended at record %lld",
						(long long) total, (long long) (first + got / sizeof(PermKey)))));
}

static void
rewind_file(BufFile *file)
{
	if (BufFileSeek(file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rewind a temporary file")));
}

static int64
records_for(int64 budget_bytes)
{
	return Max(PERM_SORT_MIN_RECORDS, budget_bytes / (int64) sizeof(PermKey));
}

/*
 * PermRecStore
 */

PermRecStore *
PermRecStoreBegin(int64 budget_bytes)
{
	PermRecStore *st = palloc0(sizeof(PermRecStore));

	st->max = records_for(budget_bytes);
	st->alloc = Min(st->max, 1024);
	st->mem = palloc_extended(st->alloc * sizeof(PermKey), MCXT_ALLOC_HUGE);
	return st;
}

/*
 * A store that writes every record to a file of the caller's (a file of a
 * shared file set, which parallel workers read), and one that reads n
 * records from such a file, written elsewhere.
 */
PermRecStore *
PermRecStoreBeginOnFile(BufFile *file)
{
	PermRecStore *st = palloc0(sizeof(PermRecStore));

	st->file = file;
	return st;
}

PermRecStore *
PermRecStoreOpenFiles(BufFile **files, const int64 *counts, int nfiles)
{
	PermRecStore *st = palloc0(sizeof(PermRecStore));
	int			i;

	st->files = palloc(Max(nfiles, 1) * sizeof(BufFile *));
	st->file_counts = palloc(Max(nfiles, 1) * sizeof(int64));
	for (i = 0; i < nfiles; i++)
	{
		st->files[i] = files[i];
		st->file_counts[i] = counts[i];
		st->n += counts[i];
	}
	st->nfiles = nfiles;
	st->fileno = -1;
	return st;
}

void
PermRecStoreAdd(PermRecStore *st, const PermKey *rec)
{
	if (st->file == NULL && st->n == st->max)
	{
		/* out of room: everything goes to a file from now on */
		st->file = BufFileCreateTemp(false);
		write_records(st->file, st->mem, st->n);
		pfree(st->mem);
		st->mem = NULL;
	}
	if (st->file)
		write_records(st->file, rec, 1);
	else
	{
		/* grow the array up to max, doubling */
		if (st->n == st->alloc)
		{
			st->alloc = Min(st->max, st->alloc * 2);
			st->mem = repalloc_huge(st->mem, st->alloc * sizeof(PermKey));
		}
		st->mem[st->n] = *rec;
	}
	st->n++;
}

int64
PermRecStoreCount(PermRecStore *st)
{
	return st->n;
}

bool
PermRecStoreSpilled(PermRecStore *st)
{
	return st->file != NULL || st->nfiles > 0;
}

/* Start reading from the first record */
void
PermRecStoreRewind(PermRecStore *st)
{
	st->next = 0;
	st->nread = st->readpos = 0;
	if (st->nfiles > 0)
	{
		/* Next moves to the first file */
		st->fileno = -1;
		st->file_left = 0;
	}
	else if (st->file)
		rewind_file(st->file);
}

/*
 * The next records, up to PERM_STORE_BATCH of them, as an array that
 * stays valid until the next call: their number, 0 after the last.
 */
int
PermRecStoreNextBatch(PermRecStore *st, PermKey **recs)
{
	int			want = (int) Min(PERM_STORE_BATCH, st->n - st->next);

	if (want <= 0)
		return 0;
	if (st->file == NULL && st->nfiles == 0)
	{
		*recs = st->mem + st->next;
		st->next += want;
		return want;
	}
	if (st->nfiles > 0)
	{
		while (st->file_left == 0)
		{
			st->fileno++;
			if (st->fileno >= st->nfiles)
				elog(ERROR, "simhash: shared files of rows hold fewer than %lld records",
					 (long long) st->n);
			st->file = st->files[st->fileno];
			st->file_left = st->file_counts[st->fileno];
			rewind_file(st->file);
		}
		want = (int) Min(want, st->file_left);
		st->file_left -= want;
	}
	if (st->readbuf == NULL)
		st->readbuf = palloc(PERM_STORE_BATCH * sizeof(PermKey));
	read_records(st->file, st->readbuf, want, st->n, st->next);
	st->next += want;
	*recs = st->readbuf;
	return want;
}

bool
PermRecStoreNext(PermRecStore *st, PermKey *rec)
{
	if (st->readpos == st->nread)
	{
		/* read ahead a batch: one call instead of one per record */
		st->nread = PermRecStoreNextBatch(st, &st->batch);
		st->readpos = 0;
		if (st->nread == 0)
			return false;
	}
	*rec = st->batch[st->readpos++];
	return true;
}

void
PermRecStoreEnd(PermRecStore *st)
{
	if (st->nfiles > 0)
	{
		int			i;

		for (i = 0; i < st->nfiles; i++)
			BufFileClose(st->files[i]);
		pfree(st->files);
		pfree(st->file_counts);
	}
	else if (st->file)
		BufFileClose(st->file);
	if (st->mem)
		pfree(st->mem);
	if (st->readbuf)
		pfree(st->readbuf);
	pfree(st);
}

/*
 * PermRunSort
 */

PermRunSort *
PermRunSortBegin(int64 budget_bytes, int64 expected)
{
	PermRunSort *rs = palloc0(sizeof(PermRunSort));

	/* two buffers for the radix sort share the budget */
	rs->max = Min(records_for(budget_bytes / 2), Max(expected, 1));
	rs->buf = palloc_extended(rs->max * sizeof(PermKey), MCXT_ALLOC_HUGE);
	rs->tmp = palloc_extended(rs->max * sizeof(PermKey), MCXT_ALLOC_HUGE);
	return rs;
}

void
PermRunSortPut(PermRunSort *rs, const PermKey *rec)
{
	if (rs->n == rs->max)
	{
		/* a full buffer: sort it and put it aside as a run */
		PermKey    *sorted;

		CHECK_FOR_INTERRUPTS();
		sorted = sort_records(rs->buf, rs->tmp, rs->n, 64, 0);
		if (rs->nruns == rs->maxruns)
		{
			rs->maxruns = Max(8, rs->maxruns * 2);
			rs->runs = rs->runs ? repalloc(rs->runs, rs->maxruns * sizeof(PermRun)) :
				palloc(rs->maxruns * sizeof(PermRun));
		}
		rs->runs[rs->nruns].file = BufFileCreateTemp(false);
		write_records(rs->runs[rs->nruns].file, sorted, rs->n);
		rs->nruns++;
		rs->n = 0;
	}
	rs->buf[rs->n++] = *rec;
	rs->total++;
}

/*
 * The merge's sources are the runs on disk, 0 .. nruns - 1, and the last
 * run, still in memory, as source nruns.  The heap holds a copy of each
 * source's head, so sifting compares keys in place.
 */
static inline bool
item_less(const PermHeapItem *a, const PermHeapItem *b)
{
	if (a->head.key != b->head.key)
		return a->head.key < b->head.key;
	return ItemPointerCompare((ItemPointer) &a->head.tid,
							  (ItemPointer) &b->head.tid) < 0;
}

/* Restore the heap below position i */
static void
heap_sift_down(PermRunSort *rs, int i)
{
	PermHeapItem item = rs->heap[i];

	for (;;)
	{
		int			c = 2 * i + 1;

		if (c >= rs->nheap)
			break;
		if (c + 1 < rs->nheap && item_less(&rs->heap[c + 1], &rs->heap[c]))
			c++;
		if (!item_less(&rs->heap[c], &item))
			break;
		rs->heap[i] = rs->heap[c];
		i = c;
	}
	rs->heap[i] = item;
}

/* The next record of a source into *rec; false when it has none */
static inline bool
source_next(PermRunSort *rs, int src, PermKey *rec)
{
	if (src < rs->nruns)
		return read_record(rs->runs[src].file, rec);
	if (rs->next >= rs->n)
		return false;
	*rec = rs->buf[rs->next++];
	return true;
}

/* All records are in: sort the last run and get ready to read in order */
void
PermRunSortFinish(PermRunSort *rs)
{
	int			r;

	CHECK_FOR_INTERRUPTS();
	if (sort_records(rs->buf, rs->tmp, rs->n, 64, 0) != rs->buf)
	{
		/* the sorted records are in tmp: swap the buffers' roles */
		PermKey    *swap = rs->buf;

		rs->buf = rs->tmp;
		rs->tmp = swap;
	}
	rs->next = 0;
	if (rs->nruns == 0)
		return;

	rs->heap = palloc((rs->nruns + 1) * sizeof(PermHeapItem));
	rs->nheap = 0;
	for (r = 0; r <= rs->nruns; r++)
	{
		if (r < rs->nruns)
			rewind_file(rs->runs[r].file);
		if (source_next(rs, r, &rs->heap[rs->nheap].head))
			rs->heap[rs->nheap++].src = r;
	}
	for (r = rs->nheap / 2 - 1; r >= 0; r--)
		heap_sift_down(rs, r);
}

/* Runs written to temporary files (0: the sort stayed in memory) */
int
PermRunSortSpilledRuns(PermRunSort *rs)
{
	return rs->nruns;
}

/* The next record in order; false after the last */
bool
PermRunSortNext(PermRunSort *rs, PermKey *rec)
{
	if (rs->nruns == 0)
	{
		/* all in memory */
		if (rs->next >= rs->n)
			return false;
		*rec = rs->buf[rs->next++];
		return true;
	}
	if (rs->nheap == 0)
		return false;

	*rec = rs->heap[0].head;
	if (!source_next(rs, rs->heap[0].src, &rs->heap[0].head))
		rs->heap[0] = rs->heap[--rs->nheap];
	if (rs->nheap > 0)
		heap_sift_down(rs, 0);
	return true;
}

void
PermRunSortEnd(PermRunSort *rs)
{
	int			r;

	for (r = 0; r < rs->nruns; r++)
		BufFileClose(rs->runs[r].file);
	if (rs->runs)
		pfree(rs->runs);
	if (rs->heap)
		pfree(rs->heap);
	pfree(rs->buf);
	pfree(rs->tmp);
	pfree(rs);
}

/*
 * PermGroupSort
 *
 * Records in the order of their top bits alone: simhash_pairs() needs the
 * records of equal prefixes together and nothing more.  While they fit in
 * memory the records are radix-sorted there, with only the passes the top
 * bits need (two for a 16-bit prefix, against eight for a whole key).
 * Past that they are dealt to partitions by their leading bits, one
 * temporary file each, and each partition is read back whole and sorted in
 * memory.  Against PermRunSort's runs and merge, each record is written
 * and read once and no heap of runs is sifted per record.  A partition
 * larger than memory (many rows sharing their leading bits) is sorted by a
 * PermRunSort of its own, which stays within the budget however skewed the
 * keys are.
 *
 * Memory: the two radix buffers share the budget with the files' 8 kB
 * buffers, which get at most an eighth of it.
 */
struct PermGroupSort
{
	int			bits;			/* order by the key's top bits */
	int			known;			/* top bits all records share (a sub-sort) */
	int64		budget;
	int64		max;			/* records buf (and tmp) hold */
	PermKey    *buf;
	PermKey    *tmp;
	PermKey    *sorted;			/* buf or tmp: records n in order */
	int64		n;
	int64		next;
	int			nparts;			/* 0: everything in buf */
	int			part_bits;		/* partition of a key: its part_bits bits */
	int			part_shift;		/* below the known: (key << known) >> shift */
	BufFile   **files;
	int64	   *counts;
	PermKey    *stage;			/* records on their way to each file */
	int		   *staged;
	int			stage_cap;		/* records staged per partition */
	int			cur;			/* the partition being read */
	PermGroupSort *sub;			/* partition cur when larger than buf, */
	PermRunSort *big;			/* or this when that would not do */
	PermKey    *chunk;			/* big's records, handed out in chunks */
	int			split;			/* partitions that went to sub or big */
};

/* Records of a PermRunSort'ed partition handed out at a time */
#define PERM_GROUP_CHUNK		1024

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
group_alloc_buffers(PermGroupSort *gs)
{
	if (gs->buf == NULL)
	{
		gs->buf = palloc_extended(gs->max * sizeof(PermKey), MCXT_ALLOC_HUGE);
		gs->tmp = palloc_extended(gs->max * sizeof(PermKey), MCXT_ALLOC_HUGE);
	}
}

static void
group_free_buffers(PermGroupSort *gs)
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
	return records_for((budget_bytes - (int64) limit * BLCKSZ - budget_bytes / 16) / 2);
}

static void
group_start_partitions(PermGroupSort *gs, int64 expected)
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
	gs->stage_cap = (int) Max(1, Min(256, gs->budget / 16 / (nparts * (int64) sizeof(PermKey))));
	gs->stage = palloc((Size) nparts * gs->stage_cap * sizeof(PermKey));
	gs->staged = palloc0(nparts * sizeof(int));

	/* what buf holds goes out first; buf is sized for a partition now */
	for (i = 0; i < gs->n; i++)
		PermGroupSortPut(gs, &gs->buf[i]);
	gs->n = 0;
	group_free_buffers(gs);
	gs->max = max_after;
}

static void
group_flush_stage(PermGroupSort *gs, int p)
{
	if (gs->staged[p] == 0)
		return;
	if (gs->files[p] == NULL)
		gs->files[p] = BufFileCreateTemp(false);
	else if (gs->counts[p] == gs->staged[p])
		rewind_file(gs->files[p]);	/* a restarted sort's file: overwrite */
	BufFileWrite(gs->files[p], gs->stage + (Size) p * gs->stage_cap,
				 gs->staged[p] * sizeof(PermKey));
	gs->staged[p] = 0;
}

static PermGroupSort *
group_begin(int64 budget_bytes, int64 expected, int top_bits, int known)
{
	PermGroupSort *gs = palloc0(sizeof(PermGroupSort));

	Assert(top_bits >= 1 && top_bits <= 64);
	Assert(known >= 0 && known < top_bits);
	gs->bits = top_bits;
	gs->known = known;
	gs->budget = budget_bytes;
	gs->max = records_for(budget_bytes / 2);
	if (expected > gs->max)
		group_start_partitions(gs, expected);
	else
	{
		gs->max = Max(expected, 1);
		group_alloc_buffers(gs);
	}
	return gs;
}

PermGroupSort *
PermGroupSortBegin(int64 budget_bytes, int64 expected, int top_bits)
{
	return group_begin(budget_bytes, expected, top_bits, 0);
}

static inline void
group_put(PermGroupSort *gs, const PermKey *rec)
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

void
PermGroupSortPut(PermGroupSort *gs, const PermKey *rec)
{
	group_put(gs, rec);
}

/* n records at once: what PermGroupSortPut does for each */
void
PermGroupSortPutBatch(PermGroupSort *gs, const PermKey *recs, int n)
{
	int			i;

	for (i = 0; i < n; i++)
		group_put(gs, &recs[i]);
}

/*
 * Load partition p and sort it in buf.  A partition larger than buf (its
 * records share more leading bits than the partitions tell apart: a large
 * table in a small work_mem, or skewed keys) goes to a sort of its own: a
 * PermGroupSort that partitions it by the bits below, when its partitions
 * can be expected to fit at half their room (a 10M-row table in work_mem
 * 4MB: 32 partitions of 5 MB, each dealt to 32 more of 160 kB).
 * Otherwise a PermRunSort sorts the partition: whole keys (clusters),
 * which partitioning by more bits would never split when many records
 * share one; records that share every bit asked for already; and a budget
 * too small for more than a few partitions, where each level would write
 * the records again to split them only in two.
 */
static void
group_load_partition(PermGroupSort *gs, int p)
{
	BufFile    *file = gs->files[p];
	int64		count = gs->counts[p];
	int			known = Min(gs->bits, gs->known + gs->part_bits);
	PermKey		recs[PERM_STORE_BATCH];
	int64		i;

	gs->n = gs->next = 0;
	if (file == NULL || count == 0)
		return;
	rewind_file(file);
	if (count <= gs->max)
	{
		group_alloc_buffers(gs);
		read_records(file, gs->buf, count, count, 0);
		CHECK_FOR_INTERRUPTS();
		gs->sorted = sort_records(gs->buf, gs->tmp, count, gs->bits, known);
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
		gs->big = PermRunSortBegin(gs->budget, count);
	for (i = 0; i < count; i += PERM_STORE_BATCH)
	{
		int			n = (int) Min(PERM_STORE_BATCH, count - i);
		int			r;

		CHECK_FOR_INTERRUPTS();
		read_records(file, recs, n, count, i);
		if (gs->sub)
			PermGroupSortPutBatch(gs->sub, recs, n);
		else
			for (r = 0; r < n; r++)
				PermRunSortPut(gs->big, &recs[r]);
	}
	if (gs->sub)
		PermGroupSortFinish(gs->sub);
	else
		PermRunSortFinish(gs->big);
	/* the file stays open, for a restart to write again */
}

/* All records are in: get ready to read them in order */
void
PermGroupSortFinish(PermGroupSort *gs)
{
	CHECK_FOR_INTERRUPTS();
	gs->next = 0;
	if (gs->nparts == 0)
		gs->sorted = sort_records(gs->buf, gs->tmp, gs->n, gs->bits, gs->known);
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
PermGroupSortRestart(PermGroupSort *gs, int64 expected, int top_bits)
{
	Assert(top_bits > gs->known && top_bits <= 64);
	if (gs->sub)
	{
		PermGroupSortEnd(gs->sub);
		gs->sub = NULL;
	}
	if (gs->big)
	{
		PermRunSortEnd(gs->big);
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
			gs->stage = palloc((Size) gs->nparts * gs->stage_cap * sizeof(PermKey));
			gs->staged = palloc0(gs->nparts * sizeof(int));
		}
	}
	else if (expected > gs->max)
	{
		group_free_buffers(gs);
		if (expected > records_for(gs->budget / 2))
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
PermGroupSortPartitions(PermGroupSort *gs, int *split)
{
	*split = gs->split;
	return gs->nparts;
}

/*
 * The next records in order of the top bits, as an array that stays valid
 * until the next call: their number, 0 after the last.
 */
int64
PermGroupSortNextChunk(PermGroupSort *gs, PermKey **recs)
{
	for (;;)
	{
		if (gs->sub)
		{
			int64		n = PermGroupSortNextChunk(gs->sub, recs);

			if (n > 0)
				return n;
			PermGroupSortEnd(gs->sub);
			gs->sub = NULL;
		}
		else if (gs->big)
		{
			int64		n = 0;

			if (gs->chunk == NULL)
				gs->chunk = palloc(PERM_GROUP_CHUNK * sizeof(PermKey));
			while (n < PERM_GROUP_CHUNK && PermRunSortNext(gs->big, &gs->chunk[n]))
				n++;
			if (n > 0)
			{
				*recs = gs->chunk;
				return n;
			}
			PermRunSortEnd(gs->big);
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
PermGroupSortEnd(PermGroupSort *gs)
{
	int			p;

	if (gs->sub)
		PermGroupSortEnd(gs->sub);
	if (gs->big)
		PermRunSortEnd(gs->big);
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
