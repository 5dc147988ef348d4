/*-------------------------------------------------------------------------
 *
 * recsort.h
 *		The record sort: (64-bit key, heap TID) records put in order within
 *		a memory budget, spilling to temporary files.  Shared by the
 *		simhash_perm index build (RunSort: whole keys) and the pairs search
 *		(RecStore: the rows as read; GroupSort: records grouped by their
 *		leading bits).  It knows nothing of the index or of fingerprints:
 *		a key is 64 bits to order by.
 *
 * IDENTIFICATION
 *	  src/recsort/recsort.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef RECSORT_H
#define RECSORT_H

#include "storage/itemptr.h"

/*
 * A record: what it is sorted by (a fingerprint, or one permuted for a
 * table of the index), and the row it stands for.  The one record of the
 * project: an index entry (src/index), a row of the pair search
 * (src/pairs), what the record sort puts in order.  extra rides along in
 * what would be the struct's padding (16 bytes either way) and takes no
 * part in the order: the code bits an index entry keeps beyond its key
 * (an index with leading equality columns, permwidelayout.c); 0 elsewhere.
 */
typedef struct KeyTid
{
	uint64		key;
	ItemPointerData tid;
	uint16		extra;
} KeyTid;

StaticAssertDecl(sizeof(KeyTid) == 16, "a record is 16 bytes");

/* Record order: by key, then by TID */
static inline int
KeyTidCompare(const KeyTid *a, const KeyTid *b)
{
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return ItemPointerCompare((ItemPointer) &a->tid, (ItemPointer) &b->tid);
}

struct BufFile;

/* recstore.c: records kept as they come, read back any number of times */
typedef struct RecStore RecStore;
extern RecStore *RecStoreBegin(int64 budget_bytes);
extern RecStore *RecStoreBeginOnFile(struct BufFile *file);
extern RecStore *RecStoreOpenFiles(struct BufFile **files,
								   const int64 *counts, int nfiles);
extern void RecStoreAdd(RecStore *st, const KeyTid *rec);
extern int64 RecStoreCount(RecStore *st);
extern bool RecStoreSpilled(RecStore *st);
extern void RecStoreRewind(RecStore *st);
/* The most records RecStoreNextBatch hands out at once */
#define RECSORT_BATCH	512

extern bool RecStoreNext(RecStore *st, KeyTid *rec);
extern int	RecStoreNextBatch(RecStore *st, KeyTid **recs);
extern void RecStoreEnd(RecStore *st);

/* runsort.c: records in full order, by sorted runs and their merge */
typedef struct RunSort RunSort;
extern RunSort *RunSortBegin(int64 budget_bytes, int64 expected);
extern void RunSortPut(RunSort *rs, const KeyTid *rec);
extern void RunSortFinish(RunSort *rs);
extern bool RunSortNext(RunSort *rs, KeyTid *rec);
extern void RunSortSave(RunSort *rs, struct BufFile *file);
extern RunSort *RunSortOpenSorted(struct BufFile *file);
extern void RunSortEnd(RunSort *rs);

/* groupsort.c: records grouped by their top bits, in partitions */
typedef struct GroupSort GroupSort;
extern GroupSort *GroupSortBegin(int64 budget_bytes, int64 expected,
								 int top_bits);
extern void GroupSortPutBatch(GroupSort *gs, const KeyTid *recs, int n);
extern void GroupSortFinish(GroupSort *gs);
extern void GroupSortRestart(GroupSort *gs, int64 expected, int top_bits);
extern int	GroupSortPartitions(GroupSort *gs, int *split);
extern int64 GroupSortNextChunk(GroupSort *gs, KeyTid **recs);
extern void GroupSortEnd(GroupSort *gs);

#endif							/* RECSORT_H */
