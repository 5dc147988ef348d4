/*-------------------------------------------------------------------------
 *
 * permsort.c
 *		Sorting (key, TID) records within a memory budget: the rows of a
 *		simhash_perm build and of simhash_pairs()/simhash_clusters().
 *
 * Two pieces, both spilling to temporary files (BufFile) past their share
 * of the budget:
 *
 *	PermRecStore	the records as they were read, kept to be read again once
 *					per table: in memory while they fit, then all of them in
 *					a temporary file.
 *	PermRunSort		one sort: records are gathered in a buffer; a full buffer
 *					is sorted and written out as a run; at the end the last
 *					run stays in memory and is merged with the runs on disk.
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
#define PERM_RADIX_BUCKETS		(1 << PERM_RADIX_BITS)

struct PermRecStore
{
	PermKey    *mem;
	int64		n;
	int64		alloc;			/* records mem has room for */
	int64		max;			/* kept in memory while n < max */
	int64		next;			/* reading: the next record */
	BufFile    *file;			/* past max: all of them here */
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
 * Sort n records by key, then TID.  A least-significant-digit radix sort
 * on the key, 8 bits a pass (a pass whose digit is the same in every
 * record is skipped), is stable, so records of equal keys keep their input
 * order; runs of equal keys are then put in TID order by a comparison sort,
 * as the input need not be in TID order (a synchronized scan starts
 * mid-table).  Eight passes, each scattering to 256 places that stay in
 * the CPU's caches (16-bit digits, four passes over 65,536 places, were a
 * third slower at a million rows), instead of log2(n) rounds of
 * comparisons.  The result may end in tmp: the sorted array is returned.
 */
static PermKey *
sort_records(PermKey *a, PermKey *tmp, int64 n)
{
	int64	   *count;
	int			shift;
	int64		i,
				run;

	if (n < PERM_RADIX_MIN_RECORDS)
	{
		sort_perm_keys(a, n);
		return a;
	}
	count = palloc(PERM_RADIX_BUCKETS * sizeof(int64));
	for (shift = 0; shift < 64; shift += PERM_RADIX_BITS)
	{
		int64		sum = 0;
		PermKey    *swap;
		int			d;

		memset(count, 0, PERM_RADIX_BUCKETS * sizeof(int64));
		for (i = 0; i < n; i++)
			count[(a[i].key >> shift) & (PERM_RADIX_BUCKETS - 1)]++;
		if (count[(a[0].key >> shift) & (PERM_RADIX_BUCKETS - 1)] == n)
			continue;			/* one digit everywhere: nothing to move */
		for (d = 0; d < PERM_RADIX_BUCKETS; d++)
		{
			int64		c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			tmp[count[(a[i].key >> shift) & (PERM_RADIX_BUCKETS - 1)]++] = a[i];
		swap = a;
		a = tmp;
		tmp = swap;
		CHECK_FOR_INTERRUPTS();
	}
	pfree(count);

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
	return st->file != NULL;
}

/* Start reading from the first record */
void
PermRecStoreRewind(PermRecStore *st)
{
	st->next = 0;
	if (st->file)
		rewind_file(st->file);
}

bool
PermRecStoreNext(PermRecStore *st, PermKey *rec)
{
	if (st->next >= st->n)
		return false;
	if (st->file == NULL)
		*rec = st->mem[st->next];
	else if (!read_record(st->file, rec))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("temporary file of %lld records ended at record %lld",
						(long long) st->n, (long long) st->next)));
	st->next++;
	return true;
}

void
PermRecStoreEnd(PermRecStore *st)
{
	if (st->file)
		BufFileClose(st->file);
	if (st->mem)
		pfree(st->mem);
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
		sorted = sort_records(rs->buf, rs->tmp, rs->n);
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
	if (sort_records(rs->buf, rs->tmp, rs->n) != rs->buf)
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
