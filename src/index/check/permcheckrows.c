/*-------------------------------------------------------------------------
 *
 * permcheckrows.c
 *		simhash_perm_check(): the lists of heap TIDs the walk compares, the
 *		walk of the code store's two chains, and heapallindexed's rows.
 *
 * The walk of the tables (permcheck.c) collects each table's heap TIDs
 * into a sorted list and compares it with table 0's (here: add, sort,
 * differ, share).  An index with a code store (store/permstore.c) has its
 * chains walked: no TID twice in them together, and the chain of codes
 * holding exactly table 0's TIDs (PermCheckStore).  With heapallindexed,
 * the table is read as CREATE INDEX reads it, as its owner (permowner.c),
 * each row's keys in every table computed and, on an index with a store,
 * a hash of its code kept (PermCheckReadHeap).  A finding names the TID
 * and where the index holds it (PermCheckLeavesHolding,
 * PermCheckStoreHolding).  permcheck.c says what the whole check proves.
 *
 * IDENTIFICATION
 *	  src/index/check/permcheckrows.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "index/perm.h"
#include "index/check/permcheckrows.h"
#include "index/tree/permleaf.h"

#define ST_SORT sort_tids
#define ST_ELEMENT_TYPE uint64
#define ST_COMPARE(a, b) (*(a) < *(b) ? -1 : *(a) > *(b))
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* Add a packed heap TID to a list */
static void
add_packed(TidList *list, uint64 tid)
{
	if (list->n == list->capacity)
	{
		list->capacity = Max(1024, list->capacity * 2);
		list->tids = list->tids ?
			repalloc_huge(list->tids, list->capacity * sizeof(uint64)) :
			palloc_extended(list->capacity * sizeof(uint64), MCXT_ALLOC_HUGE);
	}
	list->tids[list->n++] = tid;
}

/* Add a heap TID to a list */
void
PermCheckTidListAdd(TidList *list, ItemPointer tid)
{
	add_packed(list, TID_PACK(tid));
}

/*
 * Sort a list; return a TID it holds twice, or 0 (which no list holds: it
 * is (0,0), whose offset 0 was refused as the TID was read)
 */
uint64
PermCheckTidListSort(TidList *list)
{
	int64		i;

	sort_tids(list->tids, list->n);
	for (i = 1; i < list->n; i++)
		if (list->tids[i] == list->tids[i - 1])
			return list->tids[i];
	return 0;
}

/*
 * Compare two sorted lists: false if they hold the same TIDs; else *tid is
 * the first (in TID order) that only one of them holds, *in_a whether a
 */
bool
PermCheckTidListsDiffer(const TidList *a, const TidList *b, uint64 *tid,
						bool *in_a)
{
	int64		i = 0,
				j = 0;

	while (i < a->n && j < b->n && a->tids[i] == b->tids[j])
		i++, j++;
	if (i == a->n && j == b->n)
		return false;
	*in_a = j == b->n || (i < a->n && a->tids[i] < b->tids[j]);
	*tid = *in_a ? a->tids[i] : b->tids[j];
	return true;
}

/* Add to out every TID that exactly one of two sorted lists holds */
void
PermCheckTidListsAddDifference(const TidList *a, const TidList *b,
							   TidList *out)
{
	int64		i = 0,
				j = 0;

	while (i < a->n || j < b->n)
	{
		if (i < a->n && j < b->n && a->tids[i] == b->tids[j])
			i++, j++;
		else if (j == b->n || (i < a->n && a->tids[i] < b->tids[j]))
			add_packed(out, a->tids[i++]);
		else
			add_packed(out, b->tids[j++]);
	}
}

/*
 * With heapallindexed: the TIDs that some of the index's tables (or its
 * code store) hold and others lack, gathered by the comparisons with table
 * 0.  None is a row of the table: every row was looked up in every table
 * and in the store, and one missing from any of them is an error of its
 * own (missing_row, PermCheckStore).  So each is an entry of a row that no
 * snapshot sees, left by an insert that failed part-way (a row goes into
 * the tables a WAL record at a time, perminsert.c) or by a VACUUM that
 * stopped; queries never return such a row, and the next VACUUM removes
 * the entries.  A sound index may hold them: they are counted, not
 * reported as damage.
 */
void
PermCheckNotePartialRows(Relation index, TidList *partial)
{
	int64		n = 0;
	int64		i;

	if (partial->n == 0)
		return;
	sort_tids(partial->tids, partial->n);
	for (i = 0; i < partial->n; i++)
		if (i == 0 || partial->tids[i] != partial->tids[i - 1])
			n++;
	ereport(NOTICE,
			(errmsg_plural("index \"%s\" holds %lld heap TID in some of its tables only",
						   "index \"%s\" holds %lld heap TIDs in some of its tables only",
						   n, RelationGetRelationName(index), (long long) n),
			 errdetail("None is a row the index must hold, so no query returns it: an insert that failed part-way, or a VACUUM that stopped, leaves such entries.  The first is (%u,%u).",
					   TID_BLOCK(partial->tids[0]), TID_OFFSET(partial->tids[0])),
			 errhint("VACUUM removes them.")));
}

/* Is there a TID that both sorted lists hold?  *tid is the first */
bool
PermCheckTidListsShare(const TidList *a, const TidList *b, uint64 *tid)
{
	int64		i = 0,
				j = 0;

	while (i < a->n && j < b->n)
	{
		if (a->tids[i] == b->tids[j])
		{
			*tid = a->tids[i];
			return true;
		}
		if (a->tids[i] < b->tids[j])
			i++;
		else
			j++;
	}
	return false;
}

/*
 * What is wrong with the heap TID of an entry, as the rest of a sentence
 * starting "Entry N", or NULL.  The heap AM's TIDs name a page and a line
 * pointer on it; other table AMs may map row numbers to TIDs of no page
 * (Citus's columnar does), so for them only offset 0 is refused.
 */
char *
PermCheckHeapTidProblem(const HeapBounds *bounds, ItemPointer tid)
{
	BlockNumber blk = ItemPointerGetBlockNumberNoCheck(tid);
	OffsetNumber off = ItemPointerGetOffsetNumberNoCheck(tid);

	if (off == InvalidOffsetNumber)
		return psprintf("points to heap TID (%u,0), whose offset 0 is no row's",
						blk);
	if (bounds->physical && off > MaxHeapTuplesPerPage)
		return psprintf("points to heap TID (%u,%u), past the %d line pointers a heap page can have",
						blk, off, (int) MaxHeapTuplesPerPage);
	if (bounds->physical && blk >= bounds->nblocks)
		return psprintf("points to heap TID (%u,%u), past the end of table \"%s\" (%u blocks)",
						blk, off, bounds->relname, bounds->nblocks);
	return NULL;
}

/*
 * Where a table's leaves hold heap TID tid, as "block 12 entry 5, ...".
 * Only an error message needs it: the leaves are walked again rather than
 * every entry's block kept.
 */
char *
PermCheckLeavesHolding(Relation index, int table, uint64 tid)
{
	PermState  *state = PermGetState(index);
	StringInfoData where;
	Buffer		buf = PermLeftmostPage(state, table, 0);
	int64		steps = 0;

	initStringInfo(&where);
	for (;;)
	{
		Page		page = BufferGetPage(buf);
		int			i;

		for (i = 0; i < PermPageGetOpaque(page)->nentries; i++)
		{
			KeyTid		k;

			PermPageReadKey(page, i, &k);
			if (TID_PACK(&k.tid) == tid)
				appendStringInfo(&where, "%sblock %u entry %d",
								 where.len > 0 ? ", " : "",
								 BufferGetBlockNumber(buf), i);
		}
		if (PermPageIsRightmost(page))
			break;
		buf = PermStepRight(state, buf, BUFFER_LOCK_SHARE, &steps);
	}
	UnlockReleaseBuffer(buf);
	return where.data;
}

/* Callback of PermStoreCheck for store_holding: note where tid lies */
typedef struct StoreFind
{
	uint64		tid;
	StringInfoData where;
} StoreFind;

static void
find_store_entry(void *arg, BlockNumber blkno, int entry, ItemPointer tid,
				 const char *code)
{
	StoreFind  *f = (StoreFind *) arg;

	if (TID_PACK(tid) == f->tid)
		appendStringInfo(&f->where, "%sblock %u entry %d (%s)",
						 f->where.len > 0 ? ", " : "", blkno, entry,
						 code ? "codes" : "NULL codes");
}

/* Where the code store holds heap TID tid, as leaves_holding says it */
char *
PermCheckStoreHolding(Relation index, uint64 tid)
{
	StoreFind	f;
	int64		pages,
				entries;

	f.tid = tid;
	initStringInfo(&f.where);
	PermStoreCheck(index, false, &pages, &entries, find_store_entry, &f);
	PermStoreCheck(index, true, &pages, &entries, find_store_entry, &f);
	return f.where.data;
}

/* Add a row to a list of rows of the store: code's words, or NULL */
static void
store_rows_add(PermStoreRows *sr, ItemPointer tid, const char *code)
{
	KeyTid		rec;

	if (sr->n == sr->capacity)
	{
		sr->capacity = Max(1024, sr->capacity * 2);
		sr->rows = sr->rows ?
			repalloc_huge(sr->rows, sr->capacity * sizeof(KeyTid)) :
			palloc_extended(sr->capacity * sizeof(KeyTid), MCXT_ALLOC_HUGE);
	}
	rec.tid = *tid;
	rec.key = code ? hash_bytes_extended((const unsigned char *) code,
										 sr->words * sizeof(uint64), 0) : 0;
	rec.extra = code ? 0 : 1;
	sr->rows[sr->n++] = rec;
}

/* The walk of the code store's chains */
typedef struct StoreWalk
{
	Relation	index;
	const HeapBounds *bounds;
	TidList		tids[2];		/* [0] the chain of codes, [1] NULL codes */
	PermStoreRows *rows;		/* heapallindexed: the entries with codes */
} StoreWalk;

/* Callback of PermStoreCheck: check and collect one entry of the store */
static void
collect_store_entry(void *arg, BlockNumber blkno, int entry, ItemPointer tid,
					const char *code)
{
	StoreWalk  *walk = (StoreWalk *) arg;
	char	   *problem = PermCheckHeapTidProblem(walk->bounds, tid);

	if (problem)
		PermReportCorruption(walk->index, blkno,
							 psprintf("Entry %d of the code store's chain of %s %s.",
									  entry, code ? "codes" : "NULL codes",
									  problem));
	PermCheckTidListAdd(&walk->tids[code ? 0 : 1], tid);
	if (walk->rows)
		store_rows_add(walk->rows, tid, code);
}

/* The error for a heap TID that the code store holds twice */
static void
store_twice(Relation index, uint64 tid)
{
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("index \"%s\" holds heap TID (%u,%u) twice in its code store",
					RelationGetRelationName(index),
					TID_BLOCK(tid), TID_OFFSET(tid)),
			 errdetail("Entries: %s.", PermCheckStoreHolding(index, tid)),
			 errhint("Please REINDEX it.")));
}

/* Order of rows of the store: TID, then code, then NULL last */
static int
compare_store_rows(const void *a, const void *b)
{
	const KeyTid *x = (const KeyTid *) a;
	const KeyTid *y = (const KeyTid *) b;
	int			c = ItemPointerCompare((ItemPointer) &x->tid, (ItemPointer) &y->tid);

	if (c != 0)
		return c;
	if (x->extra != y->extra)
		return x->extra < y->extra ? -1 : 1;
	return x->key < y->key ? -1 : (x->key > y->key);
}

/*
 * Check the store (permstore.c): its chains, page by page, each entry's
 * heap TID within the table, no TID twice in the two chains; where it
 * keeps codes, as many as table 0 holds entries and exactly table 0's TIDs
 * (tids0, sorted); with heap rows, every row of the table is in the store
 * with its code (where it keeps codes) or as a row without a code, and
 * the TIDs that the codes and table 0 do not share are no rows: they go
 * into partial (PermCheckNotePartialRows), not into an error.  Emits
 * one row for the codes (table_no -1, where kept) and one for the rows
 * whose code is NULL (-2).
 */
void
PermCheckStore(Relation index, int64 entries0, const TidList *tids0,
			const HeapBounds *bounds, PermStoreRows *heap,
			TidList *partial, ReturnSetInfo *rsinfo, MemoryContext outcxt)
{
	PermStoreRows store = {0};
	StoreWalk	walk = {0};
	int64		pages[2],
				entries[2];
	int64		i,
				j;
	int			c;
	uint64		tid;
	bool		in_store;

	store.words = PermStoreWords(PermGetState(index)->store.width);
	walk.index = index;
	walk.bounds = bounds;
	walk.rows = heap ? &store : NULL;
	pages[0] = entries[0] = 0;
	if (PermGetState(index)->has_codes)
		PermStoreCheck(index, false, &pages[0], &entries[0],
					   collect_store_entry, &walk);
	PermStoreCheck(index, true, &pages[1], &entries[1], collect_store_entry,
				   &walk);
	if (PermGetState(index)->has_codes && entries[0] != entries0 && !partial)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" holds %lld codes in its code store but %lld entries in table 0",
						RelationGetRelationName(index),
						(long long) entries[0], (long long) entries0),
				 errhint(PERM_CHECK_PARTIAL_HINT)));

	/* one entry a row, in one chain or the other */
	for (c = 0; c < 2; c++)
		if ((tid = PermCheckTidListSort(&walk.tids[c])) != 0)
			store_twice(index, tid);
	if (PermCheckTidListsShare(&walk.tids[0], &walk.tids[1], &tid))
		store_twice(index, tid);
	/* a row is in the tables or listed without a code, never both */
	if (PermCheckTidListsShare(&walk.tids[1], tids0, &tid))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" lists heap TID (%u,%u) as a row without a code, but table 0 holds it too",
						RelationGetRelationName(index),
						TID_BLOCK(tid), TID_OFFSET(tid)),
				 errdetail("The store holds it at %s; table 0 at %s.",
						   PermCheckStoreHolding(index, tid),
						   PermCheckLeavesHolding(index, 0, tid)),
				 errhint("Please REINDEX it.")));
	if (PermGetState(index)->has_codes && partial)
		PermCheckTidListsAddDifference(&walk.tids[0], tids0, partial);
	else if (PermGetState(index)->has_codes &&
			 PermCheckTidListsDiffer(&walk.tids[0], tids0, &tid, &in_store))
	{
		if (in_store)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("index \"%s\" holds heap TID (%u,%u) in its code store but not in table 0",
							RelationGetRelationName(index),
							TID_BLOCK(tid), TID_OFFSET(tid)),
					 errdetail("The store holds it at %s; it has as many codes as table 0 has entries, so it lacks one of table 0's rows.",
							   PermCheckStoreHolding(index, tid)),
					 errhint(PERM_CHECK_PARTIAL_HINT)));
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" holds heap TID (%u,%u) in table 0 but not in its code store",
						RelationGetRelationName(index),
						TID_BLOCK(tid), TID_OFFSET(tid)),
				 errdetail("Table 0 holds it at %s; the store has as many codes, so one of them is not a row of table 0.",
						   PermCheckLeavesHolding(index, 0, tid)),
				 errhint(PERM_CHECK_PARTIAL_HINT)));
	}
	for (c = 0; c < 2; c++)
		if (walk.tids[c].tids)
			pfree(walk.tids[c].tids);

	if (heap)
	{
		qsort(heap->rows, heap->n, sizeof(KeyTid), compare_store_rows);
		qsort(store.rows, store.n, sizeof(KeyTid), compare_store_rows);
		for (i = 0, j = 0; i < heap->n; i++)
		{
			KeyTid	   *h = &heap->rows[i];

			while (j < store.n && compare_store_rows(&store.rows[j], h) < 0)
				j++;
			if (j < store.n && compare_store_rows(&store.rows[j], h) == 0)
				continue;
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("index \"%s\" lacks the row at (%u,%u) in its code store",
							RelationGetRelationName(index),
							ItemPointerGetBlockNumber(&h->tid),
							ItemPointerGetOffsetNumber(&h->tid)),
					 errdetail(j < store.n &&
							   ItemPointerEquals(&store.rows[j].tid, &h->tid) ?
							   "The store holds another code for it." :
							   h->extra ? "Its code is NULL, and the store's chain of NULL codes does not list it." :
							   "No entry of the store has its TID."),
					 errhint("Please REINDEX it.")));
		}
	}
	/* the row of codes only where the store keeps them */
	for (c = PermGetState(index)->has_codes ? 0 : 1; c < 2; c++)
	{
		Datum		values[5];
		bool		nulls[5] = {0};
		MemoryContext old = MemoryContextSwitchTo(outcxt);

		values[0] = Int32GetDatum(-1 - c);
		values[1] = Int32GetDatum(1);
		values[2] = Int64GetDatum(pages[c]);
		values[3] = Int64GetDatum(entries[c]);
		values[4] = Int64GetDatum(0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		MemoryContextSwitchTo(old);
	}
}

/* Callback of the heap scan: collect one row */
static void
collect_row(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			bool tupleIsAlive, void *arg)
{
	HeapRows   *rows = (HeapRows *) arg;
	PermState  *state = PermGetState(index);
	int			column = state->code_column;

	/*
	 * the store lists every row without a code (under non-NULL leading
	 * values), and keeps the others' codes only where it keeps codes
	 */
	if (rows->want_store &&
		!PermTenantValuesNull(index, isnull) &&
		(isnull[column] || state->has_codes))
	{
		uint64		words[PermStoreWords(PERM_MAX_WIDTH)] = {0};
		VarBit	   *code = NULL;

		if (!isnull[column])
		{
			code = DatumGetVarBitP(values[column]);
			memcpy(words, VARBITS(code),
				   Min(VARBITBYTES(code), rows->store->words * sizeof(uint64)));
		}
		store_rows_add(rows->store, tid, code ? (const char *) words : NULL);
	}
	if (isnull[column])
		return;
	if (rows->n == rows->capacity)
	{
		rows->capacity *= 2;
		rows->fps = repalloc_huge(rows->fps,
								  rows->capacity * rows->per_row * sizeof(uint64));
		if (rows->extras)
			rows->extras = repalloc_huge(rows->extras,
										 rows->capacity * rows->per_row * sizeof(uint16));
		rows->tids = repalloc_huge(rows->tids,
								   rows->capacity * sizeof(ItemPointerData));
	}
	if (rows->codes)
	{
		/* every table's key; a row with a NULL tenant has none */
		if (!PermRowKeys(rows->index, rows->codes, values, isnull,
						 &rows->fps[rows->n * rows->per_row],
						 &rows->extras[rows->n * rows->per_row]))
			return;
	}
	else
		rows->fps[rows->n] = (uint64) DatumGetInt64(values[0]);
	rows->tids[rows->n] = *tid;
	rows->n++;
}

/*
 * The heapallindexed pass's part that runs the table owner's code, its
 * index expressions and predicate (PermRunAsTableOwner): collect every row
 */
void
PermCheckReadHeap(void *arg)
{
	HeapRows   *rows = (HeapRows *) arg;

	table_index_build_scan(rows->heap, rows->index,
						   BuildIndexInfo(rows->index), true, false,
						   collect_row, rows, NULL);
}
