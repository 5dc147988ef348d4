/*-------------------------------------------------------------------------
 *
 * runsort.c
 *		Sorting (key, TID) records within a memory budget: the records and
 *		their temporary files, the radix sort, and RunSort, the sort of
 *		a simhash_perm build.
 *
 * Records are 16 bytes (KeyTid).  Three pieces keep them within a budget,
 * each spilling to temporary files (BufFile) past its share:
 *
 *	RunSort		(here) one sort by key then TID: records are gathered in
 *					a buffer; a full buffer is sorted and written out as a
 *					run; at the end the last run stays in memory and is
 *					merged with the runs on disk.
 *	RecStore	(recstore.c) the records as they were read, kept to be
 *					read again once per table of simhash_pairs().
 *	GroupSort	(groupsort.c) records in order of their leading bits only,
 *					for simhash_pairs(): partitions by leading bits, each
 *					sorted in memory.
 *
 * In memory records are sorted by a radix sort (RecSortRadix), which the
 * three share with the reading and writing of records in temporary files
 * (recsort_int.h).  The merge keeps the runs' heads in a binary heap; each
 * run reads through its own BufFile buffer (8 kB), so a merge of a hundred
 * runs (a hundred million rows sorted in 64 MB) holds under a megabyte of
 * buffers.
 *
 * A finished sort can be saved to a file (RunSortSave) and a saved one
 * read back as a sort (RunSortOpenSorted): how a parallel build's worker
 * hands a sorted table to the leader.
 *
 * The design mirrors tuplesort's external sort without its per-tuple
 * headers: at 16 bytes a record and two buffers for the radix sort, a
 * 64 MB budget sorts two million rows in memory, where a tuplesort of
 * (int8, tid) tuples would hold about a third as many.
 *
 * IDENTIFICATION
 *	  src/recsort/runsort.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/buffile.h"
#include "utils/memutils.h"

#include "recsort/recsort.h"
#include "recsort/recsort_int.h"

#define ST_SORT sort_records
#define ST_ELEMENT_TYPE KeyTid
#define ST_COMPARE(a, b) KeyTidCompare(a, b)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* Below this many records, a comparison sort beats the radix sort's passes */
#define RECSORT_RADIX_MIN_RECORDS	4096
#define RECSORT_RADIX_BITS			8
/* Up to this many bits left to sort, one pass sorts them all */
#define RECSORT_RADIX_WIDE_BITS	12

/* A source of the merge and a copy of its head, kept in the heap */
typedef struct RunSortHeapItem
{
	KeyTid		head;
	int			src;
} RunSortHeapItem;

typedef struct SortRun
{
	BufFile    *file;
	KeyTid		head;			/* its next record, while it has one */
} SortRun;

struct RunSort
{
	KeyTid    *buf;
	KeyTid    *tmp;			/* the radix sort's second buffer */
	int64		n;
	int64		max;
	int64		next;			/* reading: next record of buf */
	SortRun    *runs;
	int			nruns;
	int			maxruns;
	int64		total;
	RunSortHeapItem *heap;			/* merging: sources' heads, smallest first */
	int			nheap;
	BufFile    *sorted;			/* RunSortOpenSorted: buf is read from it */
};

/* Records a sort opened on a sorted file reads at once */
#define RECSORT_SORTED_READ		8192

/*
 * Sort n records by key, then TID; or, with top_bits below 64, by the top
 * top_bits bits of the key alone, leaving the order within equal top bits
 * open (the passes below the top bits' lowest byte are skipped).  The
 * records' first known_bits bits are the same in all of them (a partition
 * of GroupSort), so no pass looks at those.
 *
 * A least-significant-digit radix sort on the key, 8 bits a pass (a pass
 * whose digit is the same in every record is skipped), is stable, so
 * records of equal keys keep their input order; for a whole-key sort, runs
 * of equal keys are then put in TID order by a comparison sort, as the
 * input need not be in TID order (a synchronized scan starts mid-table).
 * Eight passes, each scattering to 256 places that stay in the CPU's
 * caches (16-bit digits, four passes over 65,536 places, were a third
 * slower at a million rows), instead of log2(n) rounds of comparisons.
 * When no more than RECSORT_RADIX_WIDE_BITS bits are left to sort (the 11
 * bits of a 16-bit prefix below a partition's 5), one pass on all of them
 * replaces two: the 2,048 places still fit in the caches.  The result may
 * end in tmp: the sorted array is returned.
 */
KeyTid *
RecSortRadix(KeyTid *a, KeyTid *tmp, int64 n, int top_bits, int known_bits)
{
	int64	   *count;
	int			lo = 64 - top_bits;
	int			hi = 64 - known_bits;
	int			width;
	int			shift;
	int64		i,
				run;

	Assert(known_bits >= 0 && known_bits <= top_bits);
	if (n < RECSORT_RADIX_MIN_RECORDS)
	{
		sort_records(a, n);
		return a;
	}
	if (hi - lo <= RECSORT_RADIX_WIDE_BITS)
	{
		width = hi - lo;
		shift = lo;
	}
	else
	{
		width = RECSORT_RADIX_BITS;
		shift = lo / RECSORT_RADIX_BITS * RECSORT_RADIX_BITS;
	}
	count = palloc((Size) sizeof(int64) << Max(width, RECSORT_RADIX_BITS));
	for (; shift < hi && width > 0; shift += width)
	{
		uint64		mask = (UINT64CONST(1) << width) - 1;
		int			buckets = 1 << width;
		int64		sum = 0;
		KeyTid    *swap;
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
			sort_records(a + i, run - i);
	}
	return a;
}

void
RecSortWrite(BufFile *file, const KeyTid *recs, int64 n)
{
	BufFileWrite(file, (void *) recs, n * sizeof(KeyTid));
}

static bool
read_record(BufFile *file, KeyTid *rec)
{
	size_t		got = BufFileRead(file, rec, sizeof(KeyTid));

	if (got == 0)
		return false;
	if (got != sizeof(KeyTid))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read a sorted record from a temporary file: read %zu of %zu bytes",
						got, sizeof(KeyTid))));
	return true;
}

/* Read n records that must be there: record first of a file of total */
void
RecSortRead(BufFile *file, KeyTid *recs, int64 n, int64 total, int64 first)
{
	size_t		want = n * sizeof(KeyTid);
	size_t		got = BufFileRead(file, recs, want);

	if (got != want)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("temporary file of %lld records ended at record %lld",
						(long long) total, (long long) (first + got / sizeof(KeyTid)))));
}

void
RecSortRewind(BufFile *file)
{
	if (BufFileSeek(file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rewind a temporary file")));
}

int64
RecSortRecordsFor(int64 budget_bytes)
{
	return Max(RECSORT_MIN_RECORDS, budget_bytes / (int64) sizeof(KeyTid));
}

/*
 * RunSort
 */

RunSort *
RunSortBegin(int64 budget_bytes, int64 expected)
{
	RunSort *rs = palloc0(sizeof(RunSort));

	/* two buffers for the radix sort share the budget */
	rs->max = Min(RecSortRecordsFor(budget_bytes / 2), Max(expected, 1));
	rs->buf = palloc_extended(rs->max * sizeof(KeyTid), MCXT_ALLOC_HUGE);
	rs->tmp = palloc_extended(rs->max * sizeof(KeyTid), MCXT_ALLOC_HUGE);
	return rs;
}

void
RunSortPut(RunSort *rs, const KeyTid *rec)
{
	if (rs->n == rs->max)
	{
		/* a full buffer: sort it and put it aside as a run */
		KeyTid    *sorted;

		CHECK_FOR_INTERRUPTS();
		sorted = RecSortRadix(rs->buf, rs->tmp, rs->n, 64, 0);
		if (rs->nruns == rs->maxruns)
		{
			rs->maxruns = Max(8, rs->maxruns * 2);
			rs->runs = rs->runs ? repalloc(rs->runs, rs->maxruns * sizeof(SortRun)) :
				palloc(rs->maxruns * sizeof(SortRun));
		}
		rs->runs[rs->nruns].file = BufFileCreateTemp(false);
		RecSortWrite(rs->runs[rs->nruns].file, sorted, rs->n);
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
item_less(const RunSortHeapItem *a, const RunSortHeapItem *b)
{
	if (a->head.key != b->head.key)
		return a->head.key < b->head.key;
	return ItemPointerCompare((ItemPointer) &a->head.tid,
							  (ItemPointer) &b->head.tid) < 0;
}

/* Restore the heap below position i */
static void
heap_sift_down(RunSort *rs, int i)
{
	RunSortHeapItem item = rs->heap[i];

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
source_next(RunSort *rs, int src, KeyTid *rec)
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
RunSortFinish(RunSort *rs)
{
	int			r;

	CHECK_FOR_INTERRUPTS();
	if (RecSortRadix(rs->buf, rs->tmp, rs->n, 64, 0) != rs->buf)
	{
		/* the sorted records are in tmp: swap the buffers' roles */
		KeyTid    *swap = rs->buf;

		rs->buf = rs->tmp;
		rs->tmp = swap;
	}
	rs->next = 0;
	if (rs->nruns == 0)
		return;

	rs->heap = palloc((rs->nruns + 1) * sizeof(RunSortHeapItem));
	rs->nheap = 0;
	for (r = 0; r <= rs->nruns; r++)
	{
		if (r < rs->nruns)
			RecSortRewind(rs->runs[r].file);
		if (source_next(rs, r, &rs->heap[rs->nheap].head))
			rs->heap[rs->nheap++].src = r;
	}
	for (r = rs->nheap / 2 - 1; r >= 0; r--)
		heap_sift_down(rs, r);
}

/* Refill the buffer of a sort opened on a sorted file; false at its end */
static bool
read_sorted(RunSort *rs)
{
	size_t		got = BufFileRead(rs->sorted, rs->buf, rs->max * sizeof(KeyTid));

	if (got % sizeof(KeyTid) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read a sorted record from a temporary file: read %zu bytes, not a multiple of %zu",
						got, sizeof(KeyTid))));
	rs->n = got / sizeof(KeyTid);
	rs->next = 0;
	return rs->n > 0;
}

/* The next record in order; false after the last */
bool
RunSortNext(RunSort *rs, KeyTid *rec)
{
	if (rs->nruns == 0)
	{
		/* all in memory, or read from a sorted file a buffer at a time */
		if (rs->next >= rs->n && (rs->sorted == NULL || !read_sorted(rs)))
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

/*
 * Every record of a finished sort, in order, to file: how a parallel
 * build's worker hands a sorted table to the leader (a file of a shared
 * file set).  The sort is read to its end.
 */
void
RunSortSave(RunSort *rs, BufFile *file)
{
	KeyTid		rec;

	if (rs->nruns == 0)
	{
		/* all in memory: one write */
		RecSortWrite(file, rs->buf + rs->next, rs->n - rs->next);
		rs->next = rs->n;
		return;
	}
	while (RunSortNext(rs, &rec))
		RecSortWrite(file, &rec, 1);
}

/*
 * A finished sort whose records are those of file, in the order RunSortSave
 * wrote them.  They are read through the sort's buffer, RECSORT_SORTED_READ
 * records a read; RunSortEnd closes the file.
 */
RunSort *
RunSortOpenSorted(BufFile *file)
{
	RunSort    *rs = palloc0(sizeof(RunSort));

	rs->max = RECSORT_SORTED_READ;
	rs->buf = palloc(rs->max * sizeof(KeyTid));
	rs->sorted = file;
	RecSortRewind(file);
	return rs;
}

void
RunSortEnd(RunSort *rs)
{
	int			r;

	for (r = 0; r < rs->nruns; r++)
		BufFileClose(rs->runs[r].file);
	if (rs->sorted)
		BufFileClose(rs->sorted);
	if (rs->runs)
		pfree(rs->runs);
	if (rs->heap)
		pfree(rs->heap);
	pfree(rs->buf);
	if (rs->tmp)
		pfree(rs->tmp);
	pfree(rs);
}
