/*-------------------------------------------------------------------------
 *
 * permcheckrows.h
 *		simhash_perm_check(): what the walk of the tables (permcheck.c) and
 *		the passes over the code store and the table (permcheckrows.c)
 *		share.
 *
 * IDENTIFICATION
 *	  src/index/check/permcheckrows.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PERMCHECKROWS_H
#define PERMCHECKROWS_H

#include "nodes/execnodes.h"

#include "index/perm.h"

/* A heap TID as one sortable number, and back */
#define TID_PACK(tid) \
	(((uint64) ItemPointerGetBlockNumberNoCheck(tid) << 16) | \
	 ItemPointerGetOffsetNumberNoCheck(tid))
#define TID_BLOCK(v)	((BlockNumber) ((v) >> 16))
#define TID_OFFSET(v)	((OffsetNumber) ((v) & 0xFFFF))

/* The heap TIDs of a table or of a chain of the code store, packed */
typedef struct TidList
{
	uint64	   *tids;
	int64		n;
	int64		capacity;
} TidList;

/*
 * What a heap TID may be, read once: the check's ShareLock keeps the table
 * from growing (inserts) and shrinking (VACUUM) while it runs
 */
typedef struct HeapBounds
{
	const char *relname;
	BlockNumber nblocks;
	/* heap AM: TIDs are physical; others' need not be (below) */
	bool		physical;
} HeapBounds;

/*
 * Rows as the code store holds them, or as the table does: for each, the
 * TID, and a 64-bit hash of the code's words as key (extra 1 and key 0: a
 * NULL code)
 */
typedef struct PermStoreRows
{
	KeyTid	   *rows;
	int64		n;
	int64		capacity;
	int			words;
} PermStoreRows;

/* The rows of the table, as CREATE INDEX would index them */
typedef struct HeapRows
{
	uint64	   *fps;			/* per row: the fingerprint, or for bit(n)
								 * codes its key in each table */
	uint16	   *extras;			/* bit(n) codes: each entry's extra bits */
	ItemPointerData *tids;
	int64		n;
	int64		capacity;
	Relation	heap;
	Relation	index;
	const PermLayout *codes;	/* bit(n) codes: the layout; else NULL */
	int			per_row;		/* values in fps per row */
	/* an index with a code store: every row's (hash of its code, TID) */
	bool		want_store;
	PermStoreRows *store;
} HeapRows;

/* What the walk of one table found */
typedef struct TableCheck
{
	Relation	index;
	int			table;
	const HeapBounds *bounds;
	TidList		tids;			/* the heap TIDs of the table's leaves */
	int64		pages;
	int64		entries;
	int64		incomplete_splits;
	/* heapallindexed: this table's keys of the heap rows, sorted */
	KeyTid    *heap_keys;
	int64		nheap;
	int64		heap_next;		/* next heap key to find in the leaves */
} TableCheck;

/*
 * The hint of an error that finds a heap TID in some of the index's tables
 * (or its code store) only.  Such entries are what an insert that failed
 * part-way, or a VACUUM that stopped, leaves of a row no snapshot sees;
 * only the table can tell them from entries lost to damage, and the check
 * reads it only with heapallindexed, which then counts them in a NOTICE
 * instead (PermCheckNotePartialRows).
 */
#define PERM_CHECK_PARTIAL_HINT \
	"An insert that failed part-way, or a VACUUM that stopped, leaves such entries of a row no query returns, and VACUUM removes them; simhash_perm_check with heapallindexed => true tells them from entries lost to damage.  If it fails too, REINDEX the index."

/* permcheckrows.c */
extern void PermCheckTidListAdd(TidList *list, ItemPointer tid);
extern uint64 PermCheckTidListSort(TidList *list);
extern bool PermCheckTidListsDiffer(const TidList *a, const TidList *b,
									uint64 *tid, bool *in_a);
extern void PermCheckTidListsAddDifference(const TidList *a,
										   const TidList *b, TidList *out);
extern void PermCheckNotePartialRows(Relation index, TidList *partial);
extern bool PermCheckTidListsShare(const TidList *a, const TidList *b,
								   uint64 *tid);
extern char *PermCheckHeapTidProblem(const HeapBounds *bounds,
									 ItemPointer tid);
extern char *PermCheckLeavesHolding(Relation index, int table, uint64 tid);
extern char *PermCheckStoreHolding(Relation index, uint64 tid);
extern void PermCheckStore(Relation index, int64 entries0,
						   const TidList *tids0, const HeapBounds *bounds,
						   PermStoreRows *heap, TidList *partial,
						   ReturnSetInfo *rsinfo,
						   MemoryContext outcxt);
extern void PermCheckReadHeap(void *arg);


#endif							/* PERMCHECKROWS_H */
