/*-------------------------------------------------------------------------
 *
 * permscan.c
 *		simhash_perm: index scans (plain and bitmap).
 *
 * The access method's scan callbacks, for both engines: a scan keeps the
 * index's engine (perm.h, PermEngine) and calls it through its table.  A
 * scan with quals collects every match on its first call (the engine's
 * radius scan) and hands the rows out in TID order, each once though
 * several tables find it; a bitmap scan adds them to the bitmap.  Ordered
 * scans (ORDER BY fp <-> q, and a scan with neither quals nor ORDER BY) are
 * the engine's nearest-neighbour scan.  What both engines' scans share is
 * here too: lists of TIDs, the rows without a code, the rows handed out.
 *
 * Every row is handed out for recheck of the quals: the executor applies
 * them on the row's own fingerprint (an index qual is leakproof wherever
 * row-level security applies: the planner sees to that).  The distance of
 * an ordered scan is exact; the executor recomputes it too, except on a
 * table with row-level security for the caller, where it would run the
 * index expression on rows before their security quals (permtableknn.c).  An
 * exclusion constraint's check is decided by the engine instead, since its
 * operator has no radius of its own (permconstraint.c).  The index's keys are
 * exact, so on a sound index the recheck changes nothing; on a damaged one
 * (a bit flipped in a stored key, which no page check can see) it turns a
 * wrong row into a missing one (README.perm, "Damaged indexes").
 *
 * IDENTIFICATION
 *	  src/index/permscan.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "common/hashfn.h"
#include "nodes/tidbitmap.h"
#include "pgstat.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "index/perm.h"
#include "index/permscan.h"
#include "type/hamming_query.h"
#include "type/simhash.h"

/* A set of heap TIDs (block << 16 | offset): the rows handed out */
typedef struct HandedEntry
{
	uint64		tid;
	char		status;
} HandedEntry;

#define SH_PREFIX handed
#define SH_ELEMENT_TYPE HandedEntry
#define SH_KEY_TYPE uint64
#define SH_KEY tid
#define SH_HASH_KEY(tb, key) murmurhash32((uint32) ((key) ^ ((key) >> 32)))
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/*
 * Is this the first time the scan hands out tid?  On a sound index a row has
 * one key, so one distance, in every table, and tid_list_merge_new drops
 * the copies that other tables find.  A TID can come at two distances only
 * if a stored key is damaged, or if VACUUM freed the TID and a new row took
 * it while the scan ran (neither version is visible to the scan's
 * snapshot); the scan hands it out once all the same, the first time.  The
 * set holds the rows handed out: 16 bytes each, in the scan's context.
 */
bool
PermScanFirstHandout(PermScanOpaque so, ItemPointer tid)
{
	uint64		key = ((uint64) ItemPointerGetBlockNumberNoCheck(tid) << 16) |
		ItemPointerGetOffsetNumberNoCheck(tid);
	bool		found;

	if (so->handed == NULL)
		so->handed = handed_create(so->cxt, 1024, NULL);
	(void) handed_insert(so->handed, key, &found);
	return !found;
}

/*
 * ambeginscan, through the handler (permhandler.c), which gives the engine
 * of the index (PermState.engine): the scan calls it through the table, so
 * that this file drives both engines and names neither.
 */
IndexScanDesc
PermBeginScan(Relation index, int nkeys, int norderbys,
			  const PermEngine *engine)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	PermScanOpaque so = palloc0(sizeof(PermScanOpaqueData));

	so->cxt = AllocSetContextCreate(CurrentMemoryContext,
									"simhash_perm scan",
									ALLOCSET_DEFAULT_SIZES);
	so->engine = engine;
	if (norderbys > 0)
	{
		scan->xs_orderbyvals = palloc0(norderbys * sizeof(Datum));
		scan->xs_orderbynulls = palloc(norderbys * sizeof(bool));
	}
	scan->opaque = so;
	return scan;
}

/* What a scan holds beyond its context: pins, a row reader, the engine's */
static void
release_scan(IndexScanDesc scan, PermScanOpaque so)
{
	PermReleasePins(&so->pins);
	if (so->rows)
		PermRowReaderEnd(so->rows);
	if (so->engine->end_scan)
		so->engine->end_scan(scan);
}

/* amrescan */
void
permrescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys,
		   int norderbys)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;
	MemoryContext cxt = so->cxt;
	const PermEngine *engine = so->engine;
	MemoryContext old;

	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
	if (orderbys && scan->numberOfOrderBys > 0)
		memmove(scan->orderByData, orderbys,
				scan->numberOfOrderBys * sizeof(ScanKeyData));
	release_scan(scan, so);
	MemoryContextReset(cxt);
	memset(so, 0, sizeof(*so));
	so->cxt = cxt;
	so->engine = engine;

	/*
	 * A call that holds the descriptor finishes with it, as with a snapshot
	 * (perm.c, "The per-index state and its lifetime"); a scan is such a
	 * call, from one rescan to the next, within one transaction.
	 */
	so->state = PermGetState(scan->indexRelation);
	old = MemoryContextSwitchTo(cxt);
	engine->prepare(scan);
	MemoryContextSwitchTo(old);
}

/* Callback of a search: remember the TID */
static void
collect_tid(void *arg, ItemPointer tid, uint64 key, int distance)
{
	PermScanOpaque so = (PermScanOpaque) arg;

	PermTidListAdd(&so->matches, so->cxt, tid);
}

/* Start reading matches' rows, in the scan's own context */
void
PermScanBeginRowReader(IndexScanDesc scan, PermScanOpaque so)
{
	MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(so));

	so->rows = PermRowReaderBegin(scan->heapRelation, scan->indexRelation);
	MemoryContextSwitchTo(old);
}

/*
 * amgettuple: all matches are found on the first call, then handed out.
 *
 * The index cannot return fingerprints (no amcanreturn), so the planner
 * builds an index-only scan on it only when the query needs no column at
 * all (count(*) over a scan without qual); such a scan still wants an index
 * tuple, and gets one whose column is NULL.
 */
static bool gettuple(IndexScanDesc scan, PermScanOpaque so);

/*
 * A heap TID from the index's pages, before the executor reads it: within
 * the table and an offset a heap page can have.  A damaged entry would
 * otherwise reach the heap as a read past the end of the table ("could not
 * open file ... previous segment is only N blocks", XX000) or trip an
 * assertion; it is the index's damage, reported as such.  The table's
 * length is looked up again only when a TID lies beyond the last one seen
 * (the table may have grown since).
 */
static void
check_heap_tid(IndexScanDesc scan, PermScanOpaque so)
{
	ItemPointer tid = &scan->xs_heaptid;
	BlockNumber blkno = ItemPointerGetBlockNumberNoCheck(tid);
	OffsetNumber off = ItemPointerGetOffsetNumberNoCheck(tid);

	if (blkno >= so->heap_nblocks && scan->heapRelation != NULL &&
		scan->heapRelation->rd_rel->relam == HEAP_TABLE_AM_OID)
		so->heap_nblocks = RelationGetNumberOfBlocks(scan->heapRelation);
	if (off == InvalidOffsetNumber || off > MaxHeapTuplesPerPage ||
		(blkno >= so->heap_nblocks && scan->heapRelation != NULL &&
		 scan->heapRelation->rd_rel->relam == HEAP_TABLE_AM_OID))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" points to heap TID (%u,%u), which table \"%s\" cannot hold",
						RelationGetRelationName(scan->indexRelation),
						blkno, off,
						scan->heapRelation ?
						RelationGetRelationName(scan->heapRelation) : "?"),
				 errdetail("The table has %u blocks of at most %d items.",
						   so->heap_nblocks, (int) MaxHeapTuplesPerPage),
				 errhint("Please REINDEX it.")));
}

bool
permgettuple(IndexScanDesc scan, ScanDirection dir)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;

	if (!gettuple(scan, so))
		return false;
	check_heap_tid(scan, so);
	return true;
}

static bool
gettuple(IndexScanDesc scan, PermScanOpaque so)
{
	const PermEngine *engine = so->engine;

	if (scan->xs_want_itup && scan->xs_itup == NULL)
	{
		/* in the scan's context, which outlives rescans */
		MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(so));
		Datum		value = (Datum) 0;
		bool		isnull = true;

		scan->xs_itupdesc = RelationGetDescr(scan->indexRelation);
		scan->xs_itup = index_form_tuple(scan->xs_itupdesc, &value, &isnull);
		MemoryContextSwitchTo(old);
	}

	/* nearest first; or, with neither quals nor ORDER BY, every row */
	if (scan->numberOfOrderBys > 0 || scan->numberOfKeys == 0)
		return engine->nearest(scan);

	if (!so->searched)
	{
		/*
		 * Matches are copied out of the pages, which are not kept pinned; a
		 * TID recycled by VACUUM in the meantime is only safe to hand out
		 * under an MVCC snapshot (README.perm, "Locking").
		 */
		if (!IsMVCCSnapshot(scan->xs_snapshot))
		{
			/*
			 * The other exception: an exclusion constraint's check, under
			 * a dirty snapshot, keeps the leaves of its matches pinned
			 * until it ends, as nbtree keeps its page (README.perm,
			 * "Exclusion constraints").
			 */
			if (!PermScanIsConstraintCheck(scan, so->state))
				elog(ERROR, "simhash_perm index scans require an MVCC snapshot");
			so->keep_pins = true;
			so->pins.cxt = so->cxt;
		}

		if (so->keep_pins && engine->constraint_search)
			engine->constraint_search(scan);
		else
			engine->search(scan, collect_tid, so,
						   so->keep_pins ? &so->pins : NULL);
		pgstat_count_index_scan(scan->indexRelation);

		/* a row matching in several tables is returned once */
		PermTidListSortUnique(&so->matches);
		so->searched = true;
	}

	while (so->next < so->matches.n)
	{
		scan->xs_heaptid = so->matches.tids[so->next++];

		/*
		 * The executor checks the row's own fingerprint (README.perm),
		 * except in a constraint's check: ~= has no radius of its own, so
		 * the engine decides the check's match (from the keys of 64-bit
		 * fingerprints already; from the code store, or the row, for
		 * bit(n) codes and within a tenant).
		 */
		scan->xs_recheck = !so->keep_pins;
		if (so->keep_pins && engine->constraint_match &&
			!engine->constraint_match(scan))
			continue;
		return true;
	}
	return false;
}

typedef struct BitmapState
{
	TIDBitmap  *tbm;
	int64		ntids;
} BitmapState;

/* Callback of getbitmap's search: add the TID (duplicates merge) */
static void
add_to_bitmap(void *arg, ItemPointer tid, uint64 key, int distance)
{
	BitmapState *bs = (BitmapState *) arg;

	tbm_add_tuples(bs->tbm, tid, 1, true);
	bs->ntids++;
}

/* amgetbitmap */
int64
permgetbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;
	PermState  *state = so->state;
	BitmapState bs;

	bs.tbm = tbm;
	bs.ntids = 0;
	if (scan->numberOfKeys == 0 && state->layout.tenants == 0)
	{
		/*
		 * No qual: every row, the NULL ones included.  Every row has one
		 * entry in each table, so the whole of table 0 is every row with a
		 * code, whichever the engine.
		 */
		PermProbeRange(state, 0, 0, PG_UINT64_MAX, 0, 0,
					   PERM_MAX_HAMMING, add_to_bitmap, &bs, NULL);
		PermScanReadNullRows(scan, so);
		tbm_add_tuples(tbm, so->nulls.tids, (int) so->nulls.n, true);
		bs.ntids += so->nulls.n;
	}
	else
		so->engine->search(scan, add_to_bitmap, &bs, NULL);	/* a tenant's
															 * rows without
															 * a qual too */
	pgstat_count_index_scan(scan->indexRelation);
	return bs.ntids;
}

/* amendscan */
void
permendscan(IndexScanDesc scan)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;

	release_scan(scan, so);
	MemoryContextDelete(so->cxt);
	pfree(so);
}

/*
 * Append the prefixes `flips` bits or fewer from key's (with `exact`, only
 * those exactly `flips` bits away, one ring of an ordered scan), in
 * increasing order, to list, which has room for them.  value holds the
 * bits above `bit` chosen so far and `flips` the differences still
 * allowed; bits below low_bit stay zero.  Each bit is chosen 0 before 1,
 * so the prefixes come out sorted, as PermProbeRanges takes them, without
 * a sort (which was a sixteenth of a random LIMIT 10 search's time).  Once
 * no difference is left, the remaining bits are key's, taken at once.
 */
static void
add_neighbours(PrefixList *list, uint64 key, uint64 value, int bit, int low_bit,
			   int flips, bool exact)
{
	uint64		mask;

	if (bit < low_bit)
	{
		if (!exact || flips == 0)
			list->lo[list->n++] = value;
		return;
	}
	if (flips == 0)
	{
		/* bits low_bit..bit of key */
		mask = (bit == 63 ? PG_UINT64_MAX : (UINT64CONST(1) << (bit + 1)) - 1) &
			~((UINT64CONST(1) << low_bit) - 1);
		list->lo[list->n++] = value | (key & mask);
		return;
	}
	if (exact && flips > bit - low_bit + 1)
		return;					/* too few bits left to differ in */
	mask = UINT64CONST(1) << bit;
	if ((key & mask) == 0)
	{
		add_neighbours(list, key, value, bit - 1, low_bit, flips, exact);
		add_neighbours(list, key, value | mask, bit - 1, low_bit, flips - 1, exact);
	}
	else
	{
		add_neighbours(list, key, value, bit - 1, low_bit, flips - 1, exact);
		add_neighbours(list, key, value | mask, bit - 1, low_bit, flips, exact);
	}
}

/*
 * The keys whose bits low_bit..high_bit lie within flips bits of key's
 * (exactly flips bits with exact), the other bits zero, in ascending order,
 * into out, which has room for them (simhash_count_within of the span's
 * width); returns how many.  The probes of a ring or a ball, here and for
 * bit(n) codes (permwidescan.c, permwideknn.c).
 */
int64
PermNeighbourKeys(uint64 key, int high_bit, int low_bit, int flips,
				  bool exact, uint64 *out)
{
	PrefixList	list;

	Assert(high_bit <= 63 && low_bit >= 0);
	list.lo = out;
	list.n = 0;
	if (flips >= 0)
		add_neighbours(&list, key, 0, high_bit, low_bit, flips, exact);
	return list.n;
}

/*
 * The value of an equality key on a bigint code, as the 64 bits the index
 * keys on: the operator family of bigint codes holds the integer
 * equalities, cross-type ones included (int2, int4), so fp = $1 scans the
 * index at radius 0.  A smaller integer is widened with its sign, as the
 * cross-type operator compares it.
 */
uint64
PermEqualityValue(ScanKey sk)
{
	if (sk->sk_subtype == INT2OID)
		return (uint64) (int64) DatumGetInt16(sk->sk_argument);
	if (sk->sk_subtype == INT4OID)
		return (uint64) (int64) DatumGetInt32(sk->sk_argument);
	return (uint64) DatumGetInt64(sk->sk_argument);
}

static int
compare_tids(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

/* Append a TID to a list allocated in cxt */
void
PermTidListAdd(PermTidList *list, MemoryContext cxt, ItemPointer tid)
{
	if (list->n == list->max)
	{
		list->max = Max(64, list->max * 2);
		if (list->tids == NULL)
			list->tids = MemoryContextAllocHuge(cxt,
												list->max * sizeof(ItemPointerData));
		else
			list->tids = repalloc_huge(list->tids,
									   list->max * sizeof(ItemPointerData));
	}
	list->tids[list->n++] = *tid;
}

/* Sort n TIDs and drop repeats; returns how many are left */
int64
PermTidsSortUnique(ItemPointer tids, int64 n)
{
	int64		i,
				kept = 0;

	if (n < 2)
		return n;
	qsort(tids, n, sizeof(ItemPointerData), compare_tids);
	for (i = 0; i < n; i++)
		if (kept == 0 || !ItemPointerEquals(&tids[kept - 1], &tids[i]))
			tids[kept++] = tids[i];
	return kept;
}

/* Sort a list in TID order and drop repeats (a row found in several tables) */
void
PermTidListSortUnique(PermTidList *list)
{
	list->n = PermTidsSortUnique(list->tids, list->n);
}

/* What PermTidListAddRowsWithoutCode's callback adds to */
typedef struct RowsWithoutCode
{
	PermTidList *list;
	MemoryContext cxt;
} RowsWithoutCode;

static void
add_row_without_code(void *arg, ItemPointer tid)
{
	RowsWithoutCode *r = (RowsWithoutCode *) arg;

	PermTidListAdd(r->list, r->cxt, tid);
}

/*
 * Add the rows the store lists without a code to a list, in cxt
 * (PermStoreReadRowsWithoutCode)
 */
void
PermTidListAddRowsWithoutCode(PermState *state, PermTidList *list,
							  MemoryContext cxt, BufferAccessStrategy strategy)
{
	RowsWithoutCode r;

	r.list = list;
	r.cxt = cxt;
	PermStoreReadRowsWithoutCode(state, strategy, add_row_without_code, &r);
}

/*
 * The index holds no entry in its tables for a row whose code is NULL, yet
 * ORDER BY fp <-> q returns such rows, last.  Once every indexed row has
 * been handed out, they come from the store's list of rows without a code
 * (permwidestore.c): no table read, no index expression evaluated.  With
 * leading columns, the list holds every tenant's: each row is handed out
 * for the executor's recheck of the tenant's equality (leakproof, as the
 * planner requires of an index qual on a table with row-level security).
 */
void
PermScanReadNullRows(IndexScanDesc scan, PermScanOpaque so)
{
	PermTidListAddRowsWithoutCode(so->state, &so->nulls, so->cxt,
								  NULL);
}

/*
 * Hand out the next row whose indexed value is NULL, after reading them
 * (PermScanReadNullRows) unless that was done: an ordered scan's last rows,
 * as the sequential scan's.  With once, a row already handed out is passed
 * over.  False when none is left.
 */
bool
PermScanNextNullRow(IndexScanDesc scan, PermScanOpaque so, bool once)
{
	if (!so->nulls_read)
	{
		PermScanReadNullRows(scan, so);
		so->nulls_read = true;
		so->next = 0;
	}
	while (so->next < so->nulls.n)
	{
		ItemPointer tid = &so->nulls.tids[so->next++];

		if (once && !PermScanFirstHandout(so, tid))
			continue;
		scan->xs_heaptid = *tid;
		scan->xs_recheck = scan->numberOfKeys > 0;	/* a tenant's equality */
		if (scan->numberOfOrderBys > 0)
		{
			scan->xs_orderbyvals[0] = (Datum) 0;
			scan->xs_orderbynulls[0] = true;
			scan->xs_recheckorderby = false;
		}
		return true;
	}
	return false;
}
