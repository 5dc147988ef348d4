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
 * Records are 16 bytes (PermKey), sorted by key then TID.  The merge picks
 * the smallest head among the runs linearly: a run holds a budget's worth
 * of records, so there are rows * 16 / budget of them, a few dozen at most
 * for any table this index serves in practice; each run reads through its
 * own BufFile buffer (8 kB).
 *
 * The design mirrors tuplesort's external sort without its per-tuple
 * headers: at 16 bytes a record, a 64 MB budget sorts four million rows in
 * memory, where a tuplesort of (int8, tid) tuples would hold about a third
 * as many.
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

struct PermRecStore
{
	PermKey    *mem;
	int64		n;
	int64		alloc;			/* records mem has room for */
	int64		max;			/* kept in memory while n < max */
	int64		next;			/* reading: the next record */
	BufFile    *file;			/* past max: all of them here */
};

typedef struct PermRun
{
	BufFile    *file;
	PermKey		head;
	bool		done;
} PermRun;

struct PermRunSort
{
	PermKey    *buf;
	int64		n;
	int64		max;
	int64		next;			/* reading: next record of buf */
	PermRun    *runs;
	int			nruns;
	int			maxruns;
	int64		total;
};

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

	rs->max = Min(records_for(budget_bytes), Max(expected, 1));
	rs->buf = palloc_extended(rs->max * sizeof(PermKey), MCXT_ALLOC_HUGE);
	return rs;
}

void
PermRunSortPut(PermRunSort *rs, const PermKey *rec)
{
	if (rs->n == rs->max)
	{
		/* a full buffer: sort it and put it aside as a run */
		CHECK_FOR_INTERRUPTS();
		sort_perm_keys(rs->buf, rs->n);
		if (rs->nruns == rs->maxruns)
		{
			rs->maxruns = Max(8, rs->maxruns * 2);
			rs->runs = rs->runs ? repalloc(rs->runs, rs->maxruns * sizeof(PermRun)) :
				palloc(rs->maxruns * sizeof(PermRun));
		}
		rs->runs[rs->nruns].file = BufFileCreateTemp(false);
		write_records(rs->runs[rs->nruns].file, rs->buf, rs->n);
		rs->nruns++;
		rs->n = 0;
	}
	rs->buf[rs->n++] = *rec;
	rs->total++;
}

/* All records are in: sort the last run and get ready to read in order */
void
PermRunSortFinish(PermRunSort *rs)
{
	int			r;

	CHECK_FOR_INTERRUPTS();
	sort_perm_keys(rs->buf, rs->n);
	rs->next = 0;
	for (r = 0; r < rs->nruns; r++)
	{
		rewind_file(rs->runs[r].file);
		rs->runs[r].done = !read_record(rs->runs[r].file, &rs->runs[r].head);
	}
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
	int			best = -1;
	int			r;

	for (r = 0; r < rs->nruns; r++)
		if (!rs->runs[r].done &&
			(best < 0 || PermCompareKeys(&rs->runs[r].head, &rs->runs[best].head) < 0))
			best = r;
	if (rs->next < rs->n &&
		(best < 0 || PermCompareKeys(&rs->buf[rs->next], &rs->runs[best].head) <= 0))
	{
		*rec = rs->buf[rs->next++];
		return true;
	}
	if (best < 0)
		return false;
	*rec = rs->runs[best].head;
	rs->runs[best].done = !read_record(rs->runs[best].file, &rs->runs[best].head);
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
	pfree(rs->buf);
	pfree(rs);
}
