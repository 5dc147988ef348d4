/*-------------------------------------------------------------------------
 *
 * recstore.c
 *		RecStore: the (key, TID) records of simhash_pairs() as they were
 *		read, kept to be read again once per permuted table.
 *
 * The records stay in memory while they fit in the budget, then all of
 * them go to a temporary file.  A store can also write to a file of the
 * caller's (a file of a shared file set, which parallel workers write), or
 * read the files others wrote, one after the other.  Reading hands out
 * batches of RECSORT_BATCH records, one BufFile read each.
 *
 * IDENTIFICATION
 *	  src/recsort/recstore.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/buffile.h"
#include "utils/memutils.h"

#include "recsort/recsort.h"
#include "recsort/recsort_int.h"

struct RecStore
{
	KeyTid    *mem;
	int64		n;
	int64		alloc;			/* records mem has room for */
	int64		max;			/* kept in memory while n < max */
	int64		next;			/* reading: the next record */
	BufFile    *file;			/* past max: all of them here */
	KeyTid    *readbuf;		/* reading the file: records read ahead */
	KeyTid    *batch;			/* RecStoreNext: the current batch */
	int			nread;			/* its records */
	int			readpos;		/* and the next of them */
	/* a store over files written elsewhere, read one after the other */
	BufFile   **files;
	int64	   *file_counts;
	int			nfiles;
	int			fileno;			/* files[fileno] is file */
	int64		file_left;		/* its records not read yet */
};


RecStore *
RecStoreBegin(int64 budget_bytes)
{
	RecStore *st = palloc0(sizeof(RecStore));

	st->max = RecSortRecordsFor(budget_bytes);
	st->alloc = Min(st->max, 1024);
	st->mem = palloc_extended(st->alloc * sizeof(KeyTid), MCXT_ALLOC_HUGE);
	return st;
}

/*
 * A store that writes every record to a file of the caller's (a file of a
 * shared file set, which parallel workers read), and one that reads n
 * records from such a file, written elsewhere.
 */
RecStore *
RecStoreBeginOnFile(BufFile *file)
{
	RecStore *st = palloc0(sizeof(RecStore));

	st->file = file;
	return st;
}

RecStore *
RecStoreOpenFiles(BufFile **files, const int64 *counts, int nfiles)
{
	RecStore *st = palloc0(sizeof(RecStore));
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
RecStoreAdd(RecStore *st, const KeyTid *rec)
{
	if (st->file == NULL && st->n == st->max)
	{
		/* out of room: everything goes to a file from now on */
		st->file = BufFileCreateTemp(false);
		RecSortWrite(st->file, st->mem, st->n);
		pfree(st->mem);
		st->mem = NULL;
	}
	if (st->file)
		RecSortWrite(st->file, rec, 1);
	else
	{
		/* grow the array up to max, doubling */
		if (st->n == st->alloc)
		{
			st->alloc = Min(st->max, st->alloc * 2);
			st->mem = repalloc_huge(st->mem, st->alloc * sizeof(KeyTid));
		}
		st->mem[st->n] = *rec;
	}
	st->n++;
}

int64
RecStoreCount(RecStore *st)
{
	return st->n;
}

bool
RecStoreSpilled(RecStore *st)
{
	return st->file != NULL || st->nfiles > 0;
}

/* Start reading from the first record */
void
RecStoreRewind(RecStore *st)
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
		RecSortRewind(st->file);
}

/*
 * The next records, up to RECSORT_BATCH of them, as an array that
 * stays valid until the next call: their number, 0 after the last.
 */
int
RecStoreNextBatch(RecStore *st, KeyTid **recs)
{
	int			want = (int) Min(RECSORT_BATCH, st->n - st->next);

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
			RecSortRewind(st->file);
		}
		want = (int) Min(want, st->file_left);
		st->file_left -= want;
	}
	if (st->readbuf == NULL)
		st->readbuf = palloc(RECSORT_BATCH * sizeof(KeyTid));
	RecSortRead(st->file, st->readbuf, want, st->n, st->next);
	st->next += want;
	*recs = st->readbuf;
	return want;
}

bool
RecStoreNext(RecStore *st, KeyTid *rec)
{
	if (st->readpos == st->nread)
	{
		/* read ahead a batch: one call instead of one per record */
		st->nread = RecStoreNextBatch(st, &st->batch);
		st->readpos = 0;
		if (st->nread == 0)
			return false;
	}
	*rec = st->batch[st->readpos++];
	return true;
}

void
RecStoreEnd(RecStore *st)
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
