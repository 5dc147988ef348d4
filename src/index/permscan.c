/*-------------------------------------------------------------------------
 *
 * permscan.c
 *		simhash_perm: index scans (plain and bitmap).
 *
 * The access method's scan callbacks.  A scan with quals collects every
 * match on its first call (PermSearch, permprobe.c) and hands the rows out
 * in TID order, each once though several tables find it; a bitmap scan adds
 * them to the bitmap.  Ordered scans (ORDER BY fp <-> q, and a scan with
 * neither quals nor ORDER BY) are read nearest first by permknn.c.  An
 * index on bit(n) codes is searched by permwidescan.c (radius) and permwideknn.c (ordered).
 *
 * Every row is handed out for recheck of the quals: the executor applies
 * them on the row's own fingerprint (an index qual is leakproof wherever
 * row-level security applies: the planner sees to that).  The distance of
 * an ordered scan is exact; the executor recomputes it too, except on a
 * table with row-level security for the caller, where it would run the
 * index expression on rows before their security quals (permknn.c).  An
 * exclusion constraint's check is decided here instead, since its operator has no
 * radius of its own (permexclude.c).  The index's keys are
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
#include "nodes/tidbitmap.h"
#include "pgstat.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "index/perm.h"
#include "index/permscan.h"
#include "type/hamming_query.h"
#include "type/simhash.h"

/* ambeginscan */
IndexScanDesc
permbeginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	PermScanOpaque so = palloc0(sizeof(PermScanOpaqueData));

	so->cxt = AllocSetContextCreate(CurrentMemoryContext,
									"simhash_perm scan",
									ALLOCSET_DEFAULT_SIZES);
	if (norderbys > 0)
	{
		scan->xs_orderbyvals = palloc0(norderbys * sizeof(Datum));
		scan->xs_orderbynulls = palloc(norderbys * sizeof(bool));
	}
	scan->opaque = so;
	return scan;
}

/* amrescan */
void
permrescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys,
		   int norderbys)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;
	MemoryContext cxt = so->cxt;

	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
	if (orderbys && scan->numberOfOrderBys > 0)
		memmove(scan->orderByData, orderbys,
				scan->numberOfOrderBys * sizeof(ScanKeyData));
	PermReleasePins(&so->pins);
	if (so->rows)
		PermRowReaderEnd(so->rows);
	PermWideEndScan(so);
	MemoryContextReset(cxt);
	memset(so, 0, sizeof(*so));
	so->cxt = cxt;
}

/* Callback of gettuple's search: remember the TID */
static void
collect_tid(void *arg, ItemPointer tid, uint64 key, int distance)
{
	PermScanOpaque so = (PermScanOpaque) arg;

	PermTidListAdd(&so->matches, so->cxt, tid);
}

/* Start reading matches' rows, in the scan's own context */
static void
begin_row_reader(IndexScanDesc scan, PermScanOpaque so)
{
	MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(so));

	so->rows = PermRowReaderBegin(scan->heapRelation, scan->indexRelation);
	MemoryContextSwitchTo(old);
}

/*
 * Does a constraint check's match on an index laid out by multi-index
 * hashing (permwide.c) conflict?  Its code within the radius of the new
 * row's, and its leading values equal the new row's.  The code comes from
 * the code store (PermStoreFindCode) where it keeps codes (bit(n) codes):
 * no row is read and no index expression computed for a candidate whose
 * code lies beyond the radius.  Without leading columns that decides.
 * With them, the index holds a hash of the tenant only: a candidate within
 * the radius (a conflict, or a tenant of the same hash), and every
 * candidate of a 64-bit code, is read under the check's snapshot and its
 * values computed as the executor computes the new row's (README.perm,
 * "Security", says what is left to do there).
 */
static bool
wide_constraint_row_matches(IndexScanDesc scan, PermScanOpaque so,
							PermState *state)
{
	Relation	index = scan->indexRelation;
	int			code = PermCodeColumn(index);
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];

	if (state->has_codes)
	{
		VarBit	   *stored = PermStoreCodeBits(index, &scan->xs_heaptid);

		/* not in the store: an insert cut short, its row dead */
		if (stored == NULL ||
			simhash_bit_distance(stored,
								 PermCodeBits(index, scan->keyData[code].sk_argument)) >
			PermConstraintRadius(scan, state))
			return false;
		/* within the radius: without leading columns, a conflict */
		if (state->layout.tenants == 0)
			return true;
	}
	if (so->rows == NULL)
		begin_row_reader(scan, so);
	if (!PermRowReaderFetchValues(so->rows, &scan->xs_heaptid,
								  scan->xs_snapshot, values, isnull) ||
		isnull[code] || !PermTenantRowMatches(scan, values, isnull))
		return false;
	return simhash_bit_distance(PermCodeBits(index, values[code]),
								PermCodeBits(index, scan->keyData[code].sk_argument)) <=
		PermConstraintRadius(scan, state);
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
	{
		if (PermGetState(scan->indexRelation)->layout.width > 0)
			return PermWideKnnGettuple(scan, so);
		return PermKnnGettuple(scan, so);
	}

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
			if (!PermScanIsConstraintCheck(scan))
				elog(ERROR, "simhash_perm index scans require an MVCC snapshot");
			so->keep_pins = true;
			so->pins.cxt = so->cxt;
		}

		if (PermGetState(scan->indexRelation)->layout.width > 0)
			PermWideSearch(scan, collect_tid, so,
						   so->keep_pins ? &so->pins : NULL);
		else if (so->keep_pins)
		{
			/* the check of 64-bit fingerprints: from the keys alone */
			MemoryContext old = MemoryContextSwitchTo(so->cxt);
			PermState  *state = PermGetState(scan->indexRelation);

			if (!(scan->keyData[0].sk_flags & SK_ISNULL))
				PermSearchConstraint(scan->indexRelation,
									 DatumGetUInt64(scan->keyData[0].sk_argument),
									 PermConstraintRadius(scan, state),
									 &so->matches, &so->pins);
			MemoryContextSwitchTo(old);
		}
		else
			PermSearch(scan, collect_tid, so, NULL);
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
		 * the check's match is decided here, on 64-bit fingerprints from
		 * the keys already (PermSearchConstraint), on bit(n) codes and
		 * within a tenant on the row.
		 */
		scan->xs_recheck = !so->keep_pins;
		if (so->keep_pins &&
			PermGetState(scan->indexRelation)->layout.width > 0 &&
			!wide_constraint_row_matches(scan, so,
										 PermGetState(scan->indexRelation)))
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
	BitmapState bs;

	bs.tbm = tbm;
	bs.ntids = 0;
	if (scan->numberOfKeys == 0 &&
		PermGetState(scan->indexRelation)->layout.tenants > 0)
		PermWideSearch(scan, add_to_bitmap, &bs, NULL);	/* reads the table */
	else if (scan->numberOfKeys == 0)
	{
		/* no qual: every row, the NULL ones included */
		PermScanOpaque so = (PermScanOpaque) scan->opaque;
		PermSearchState ss;
		PermQuery	all;

		all.center = 0;
		all.radius = PERM_MAX_HAMMING;
		ss.queries = &all;
		ss.nqueries = 1;
		ss.table = 0;
		ss.callback = add_to_bitmap;
		ss.arg = &bs;
		ss.pins = NULL;
		PermProbeRange(scan->indexRelation, 0, 0, PG_UINT64_MAX, 0, 0,
					   PERM_MAX_HAMMING, PermSearchMatch, &ss, NULL);
		PermKnnReadNullRows(scan, so);
		tbm_add_tuples(tbm, so->nulls.tids, (int) so->nulls.n, true);
		bs.ntids += so->nulls.n;
	}
	else if (PermGetState(scan->indexRelation)->layout.width > 0)
		PermWideSearch(scan, add_to_bitmap, &bs, NULL);
	else
		PermSearch(scan, add_to_bitmap, &bs, NULL);
	pgstat_count_index_scan(scan->indexRelation);
	return bs.ntids;
}

/* amendscan */
void
permendscan(IndexScanDesc scan)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;

	PermReleasePins(&so->pins);
	if (so->rows)
		PermRowReaderEnd(so->rows);
	PermWideEndScan(so);
	MemoryContextDelete(so->cxt);
	pfree(so);
}
