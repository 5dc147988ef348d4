/*-------------------------------------------------------------------------
 *
 * permcheck.c
 *		simhash_perm_check(): prove a simhash_perm index sound, as
 *		contrib/amcheck's bt_index_parent_check does for a btree.
 *
 * For every table, level by level from the root down, every page is read
 * along the right-links and checked: its structure (PermCheckPage, as on
 * every read), that its entries are in key order within the page and
 * across the level, that they lie below its high key, that each page's low
 * bound is its left sibling's high key, that the root is alone on its level
 * and marked as the root, and that the pages of each level are exactly the
 * children of the level above, in order, with the right levels and low
 * keys; a page may lack its downlink only when its left sibling is marked
 * as an incomplete split (README.perm, "WAL and crashes"); and that every
 * page lies in the current layout's blocks and carries its generation's
 * flag (the metapage's growth record, permgrow.c).
 *
 * What can be known of the rows without reading one: every heap TID of a
 * leaf or of the code store lies within the table (a block below its
 * length, an offset a heap page can have); each table holds every indexed
 * row once, so no TID twice within a table, and the same TIDs as table 0
 * (the TIDs of each table are collected as block << 16 | offset, sorted,
 * and compared with table 0's: an entry missing from one table, or one
 * that points elsewhere, shows there even when the counts agree).  An index
 * on bit(n) codes with a code store (permstore.c) has its two chains walked
 * and checked too (one output row each: table_no -1 for the codes, where
 * the store keeps them, -2 for the rows whose code is NULL, which every
 * index built since 1.6 lists): no TID twice in them together, and the
 * chain of codes holds exactly table 0's TIDs.
 *
 * A TID in some tables only is also what a sound index holds for a while
 * after an insert that failed part-way (a row goes into the tables a WAL
 * record at a time, perminsert.c) or a VACUUM that stopped: entries of a
 * row no snapshot sees, which the next VACUUM removes.  Without reading the
 * table they cannot be told from entries lost to damage, so the plain check
 * reports them, with a hint that says so.
 *
 * With heapallindexed, every row that the table scan of CREATE INDEX would
 * index is looked up in every table (the rows are collected, permuted and
 * sorted per table, then merged with the leaf level), and in the store
 * with its code, or listed as a NULL code.  Only this finds a row that no
 * table holds, or an entry whose key or code is not its row's.  It also
 * settles the TIDs in some tables only: once every row is known to be in
 * every table, they are no rows, and a NOTICE counts them instead of an
 * error (PermCheckNotePartialRows).  Collecting
 * the rows evaluates the index's expressions and predicate, which are the
 * table owner's code: that runs as the owner, in a security-restricted
 * operation (PermRunAsTableOwner).
 *
 * The first problem found is an ERRCODE_INDEX_CORRUPTED error naming the
 * block, or the TID and where the index holds it.  An invalid index (what a
 * failed CREATE INDEX CONCURRENTLY leaves) is not checked: it may lack rows
 * by design.  The check holds ShareLock on the table and the index, so
 * inserts and VACUUM wait for it, and neither the structure it walks nor
 * the table's length can change.  Memory: 16 bytes an entry of one table
 * (table 0's TIDs, kept, and the table being checked); with
 * heapallindexed, 30 bytes a row more (the rows, and one table sorted), and
 * on bit(n) codes 8 bytes more per table (each row's key in every table,
 * computed as permwidelayout.c computes them).
 *
 * This file walks the tables; the lists of TIDs it compares, the walk of
 * the code store and heapallindexed's reading of the table are in
 * permcheckrows.c.
 *
 * IDENTIFICATION
 *	  src/index/check/permcheck.c
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
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "index/perm.h"
#include "index/check/permcheckrows.h"
#include "index/tree/permleaf.h"

PG_FUNCTION_INFO_V1(simhash_perm_check);

#define ST_SORT sort_check_entries
#define ST_ELEMENT_TYPE KeyTid
#define ST_COMPARE(a, b) PermCompareKeys(a, b)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* The same error for every finding: the index, the block, what is wrong */
static void
corrupt(TableCheck *tc, BlockNumber blkno, const char *what)
{
	PermReportCorruption(tc->index, blkno,
						 psprintf("Table %d: %s", tc->table, what));
}

/* Sort a table's TIDs: none may come twice */
static void
check_table_twice(TableCheck *tc)
{
	uint64		tid = PermCheckTidListSort(&tc->tids);

	if (tid != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" holds heap TID (%u,%u) twice in table %d",
						RelationGetRelationName(tc->index),
						TID_BLOCK(tid), TID_OFFSET(tid), tc->table),
				 errdetail("Leaf entries: %s.",
						   PermCheckLeavesHolding(tc->index, tc->table, tid)),
				 errhint("Please REINDEX it.")));
}

/*
 * A table's sorted TIDs against table 0's (tids0), of which it has as many:
 * the same ones.  With heapallindexed (partial not NULL) the TIDs that only
 * one of the two holds go into partial instead (PermCheckNotePartialRows).
 */
static void
check_table_same(TableCheck *tc, const TidList *tids0, TidList *partial)
{
	Relation	index = tc->index;
	uint64		tid;
	bool		in_table;

	if (partial)
	{
		PermCheckTidListsAddDifference(&tc->tids, tids0, partial);
		return;
	}
	if (!PermCheckTidListsDiffer(&tc->tids, tids0, &tid, &in_table))
		return;
	if (in_table)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" holds heap TID (%u,%u) in table %d but not in table 0",
						RelationGetRelationName(index),
						TID_BLOCK(tid), TID_OFFSET(tid), tc->table),
				 errdetail("Table %d holds it at %s; its entry count is table 0's, so it lacks one of table 0's rows.",
						   tc->table, PermCheckLeavesHolding(index, tc->table, tid)),
				 errhint(PERM_CHECK_PARTIAL_HINT)));
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("index \"%s\" holds heap TID (%u,%u) in table 0 but not in table %d",
					RelationGetRelationName(index),
					TID_BLOCK(tid), TID_OFFSET(tid), tc->table),
			 errdetail("Table 0 holds it at %s; table %d has as many entries, so one of them is not a row of table 0.",
					   PermCheckLeavesHolding(index, 0, tid), tc->table),
			 errhint(PERM_CHECK_PARTIAL_HINT)));
}

/* The error for a heap row that a table of the index lacks */
static void
missing_row(TableCheck *tc, const KeyTid *h, const char *where)
{
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("index \"%s\" lacks the row at (%u,%u) in table %d",
					RelationGetRelationName(tc->index),
					ItemPointerGetBlockNumber(&h->tid),
					ItemPointerGetOffsetNumber(&h->tid), tc->table),
			 errdetail("Its key %016llX %s.", (unsigned long long) h->key, where),
			 errhint("Please REINDEX it.")));
}

/*
 * Check the entries of one page: the sorted part in strictly increasing
 * order after *prev (the last entry of the level so far; NULL at its start)
 * and, with the tail, all at or above low and below the high key.  For
 * leaves with heapallindexed, merge the page's entries (all of them, in
 * order) with the heap keys.
 */
static void
check_entries(TableCheck *tc, Buffer buf, const KeyTid *low, KeyTid *prev,
			  bool *have_prev, KeyTid *scratch)
{
	Page		page = BufferGetPage(buf);
	BlockNumber blkno = BufferGetBlockNumber(buf);
	PermPageOpaque opaque = PermPageGetOpaque(page);
	bool		leaf = PermPageIsLeaf(page);
	KeyTid		hikey;
	int			i,
				n;

	hikey.key = opaque->hikey;
	hikey.tid = opaque->hikey_tid;
	for (i = 0; i < opaque->nentries; i++)
	{
		KeyTid		k;

		PermPageReadKey(page, i, &k);

		/* the first downlink of a leftmost page stands for minus infinity */
		if (!leaf && i == 0 && low == NULL)
			continue;

		/*
		 * A leaf's TIDs are rows' (an internal page's are copies of keys
		 * that may outlive their rows, and the table may have been
		 * truncated after them)
		 */
		if (leaf)
		{
			char	   *problem = PermCheckHeapTidProblem(tc->bounds, &k.tid);

			if (problem)
				corrupt(tc, blkno, psprintf("Entry %d %s.", i, problem));
			PermCheckTidListAdd(&tc->tids, &k.tid);
		}
		if (i < opaque->nsorted)
		{
			if (*have_prev && PermCompareKeys(prev, &k) >= 0)
				corrupt(tc, blkno, psprintf("Entry %d is not above the entry before it.", i));
			*prev = k;
			*have_prev = true;
		}
		if (low != NULL && PermCompareKeys(&k, low) < 0)
			corrupt(tc, blkno, psprintf("Entry %d lies below the page's low bound.", i));
		if (leaf && k.key < opaque->lokey)
			corrupt(tc, blkno, psprintf("Entry %d lies below the leaf's low key.", i));
		if (!PermPageIsRightmost(page) && PermCompareKeys(&k, &hikey) >= 0)
			corrupt(tc, blkno, psprintf("Entry %d is not below the page's high key.", i));
	}
	tc->entries += leaf ? opaque->nentries : 0;

	/* the tail after the sorted part: key order over the whole page */
	if (leaf && opaque->nsorted < opaque->nentries)
	{
		n = PermLeafSortedEntries(page, scratch);
		for (i = 1; i < n; i++)
			if (PermCompareKeys(&scratch[i - 1], &scratch[i]) >= 0)
				corrupt(tc, blkno, "The page holds one entry twice.");
		*prev = scratch[n - 1];
	}

	if (leaf && tc->heap_keys != NULL)
	{
		n = PermLeafSortedEntries(page, scratch);
		for (i = 0; i < n && tc->heap_next < tc->nheap; i++)
		{
			KeyTid    *h = &tc->heap_keys[tc->heap_next];
			int			c = PermCompareKeys(h, &scratch[i]);

			if (c < 0)
				missing_row(tc, h, psprintf("belongs before block %u", blkno));
			/* an index entry without a heap row is a dead one: skip it */
			if (c == 0)
			{
				if (h->extra != scratch[i].extra)
					corrupt(tc, blkno,
							psprintf("The entry of heap row (%u,%u) keeps the code bits %04X beside its key; the row's are %04X.",
									 ItemPointerGetBlockNumberNoCheck(&h->tid),
									 ItemPointerGetOffsetNumberNoCheck(&h->tid),
									 scratch[i].extra, h->extra));
				tc->heap_next++;
			}
		}
	}
}

/*
 * Check one level of a table, left to right from block first.  children:
 * the blocks that the level above links to, in order, with their downlink
 * keys (NULL for the root level).  Returns this level's downlinks, in
 * order, for the level below (internal levels).
 */
static void
check_level(TableCheck *tc, BlockNumber first, int level, bool root_level,
			const BlockNumber *children, const KeyTid *child_keys,
			int64 nchildren, BlockNumber **out_children, KeyTid **out_keys,
			int64 *out_n)
{
	Relation	index = tc->index;
	PermState  *state = PermGetState(index);
	BlockNumber layout_start;
	uint16		layout_flag;
	int64		steps = 0;
	int64		next_child = 0;
	int64		cap = 1024;
	bool		left_incomplete = false;
	bool		have_prev = false;
	KeyTid		prev = {0};
	KeyTid    *scratch = palloc(PERM_LEAF_MAX_ENTRIES * sizeof(KeyTid));
	Buffer		buf;

	*out_n = 0;
	*out_children = NULL;
	*out_keys = NULL;
	if (level > 0)
	{
		*out_children = palloc(cap * sizeof(BlockNumber));
		*out_keys = palloc(cap * sizeof(KeyTid));
	}

	(void) PermLayoutBlocks(index, &layout_start, &layout_flag);
	buf = PermReadPage(state, InvalidBlockNumber, first, BUFFER_LOCK_SHARE,
					   tc->table, level);
	for (;;)
	{
		Page		page = BufferGetPage(buf);
		BlockNumber blkno = BufferGetBlockNumber(buf);
		PermPageOpaque opaque = PermPageGetOpaque(page);
		const KeyTid *low = NULL;
		int			i;

		tc->pages++;

		/*
		 * the current layout's pages lie from its first block on, and carry
		 * the flag of its generation's parity (permgrow.c)
		 */
		if (blkno < layout_start)
			corrupt(tc, blkno, psprintf("The page lies before its layout's first block, %u.",
										layout_start));
		if ((opaque->flags & PERM_ODD_LAYOUT) != layout_flag)
			corrupt(tc, blkno, psprintf("The page is flagged for a layout of %s generation; the metapage's is %s.",
										(opaque->flags & PERM_ODD_LAYOUT) ? "odd" : "even",
										layout_flag ? "odd" : "even"));

		/* the root is alone on its level, and only it is marked root */
		if (root_level != ((opaque->flags & PERM_ROOT) != 0) ||
			(root_level && !PermPageIsRightmost(page)))
			corrupt(tc, blkno, "The root flag disagrees with the metapage, or the root has a right sibling.");

		/* is this page the next child of the level above? */
		if (children != NULL)
		{
			if (next_child < nchildren && children[next_child] == blkno)
			{
				low = next_child > 0 ? &child_keys[next_child] : NULL;
				if (low != NULL && level == 0 && opaque->lokey != low->key)
					corrupt(tc, blkno, "The leaf's low key is not its downlink's key.");
				next_child++;
			}
			else if (left_incomplete)
				tc->incomplete_splits++;
			else
				corrupt(tc, blkno, "The page has no downlink in the level above, or the downlinks are out of order.");
		}

		check_entries(tc, buf, low, &prev, &have_prev, scratch);
		if (low != NULL && level > 0)
		{
			KeyTid		k0;

			PermPageReadKey(page, 0, &k0);
			if (PermCompareKeys(&k0, low) != 0)
				corrupt(tc, blkno, "The page's first key is not its downlink's key.");
		}

		/* this level's downlinks, for the level below */
		for (i = 0; level > 0 && i < opaque->nentries; i++)
		{
			if (*out_n == cap)
			{
				cap *= 2;
				*out_children = repalloc_huge(*out_children, cap * sizeof(BlockNumber));
				*out_keys = repalloc_huge(*out_keys, cap * sizeof(KeyTid));
			}
			PermReadInternalEntry(page, i, &(*out_keys)[*out_n],
								  &(*out_children)[*out_n]);
			(*out_n)++;
		}

		left_incomplete = (opaque->flags & PERM_INCOMPLETE_SPLIT) != 0;
		if (left_incomplete && PermPageIsRightmost(page))
			corrupt(tc, blkno, "The rightmost page of its level is marked as an incomplete split.");
		if (PermPageIsRightmost(page))
			break;
		buf = PermStepRight(state, buf, BUFFER_LOCK_SHARE, &steps);
	}
	UnlockReleaseBuffer(buf);
	if (children != NULL && next_child < nchildren)
		corrupt(tc, children[next_child],
				"A downlink leads to a page that is not on the level below.");
	pfree(scratch);
}

/* Check one table's tree, top down */
static void
check_table(TableCheck *tc, const PermTable *meta_table)
{
	BlockNumber *children = NULL;
	KeyTid    *keys = NULL;
	int64		nchildren = 0;
	BlockNumber first = meta_table->root;
	int			level;

	for (level = meta_table->root_level; level >= 0; level--)
	{
		BlockNumber *next_children;
		KeyTid    *next_keys;
		int64		nnext;

		CHECK_FOR_INTERRUPTS();
		check_level(tc, first, level, level == meta_table->root_level,
					children, keys, nchildren, &next_children, &next_keys,
					&nnext);
		if (children)
		{
			pfree(children);
			pfree(keys);
		}
		children = next_children;
		keys = next_keys;
		nchildren = nnext;
		if (level > 0)
		{
			if (nchildren == 0)
				PermReportCorruption(tc->index, first, "An internal level has no downlinks.");
			first = children[0];
		}
	}
	if (tc->heap_keys != NULL && tc->heap_next < tc->nheap)
		missing_row(tc, &tc->heap_keys[tc->heap_next],
					"lies beyond the last entry");
}

/*
 * simhash_perm_check(index regclass, heapallindexed boolean): check the
 * index, raise an error at the first problem; else one row per table with
 * its levels, pages, entries and incomplete splits.
 */
Datum
simhash_perm_check(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	bool		heapallindexed = PG_GETARG_BOOL(1);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	heap;
	Relation	index;
	PermTable  *tables;
	int			ntables;
	int			t;
	int64		entries0 = -1;
	TidList		tids0 = {0};
	TidList		partial = {0};
	HeapBounds	bounds;
	HeapRows	rows = {0};
	PermPermutation *perm = NULL;
	MemoryContext cxt,
				oldcxt;

	InitMaterializedSRF(fcinfo, 0);
	index = PermOpenIndexForInspection(indexoid, ShareLock, &heap);

	/*
	 * An index that a failed CREATE INDEX CONCURRENTLY left invalid may lack
	 * rows by design, and queries do not use it: there is nothing to prove.
	 * (simhash_perm_info still shows it.)
	 */
	if (!index->rd_index->indisvalid)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot check index \"%s\"",
						RelationGetRelationName(index)),
				 errdetail("Index is not valid."),
				 errhint("REINDEX INDEX rebuilds it and makes it valid; or drop it.")));
	PermNoteWhatReindexBrings(index);
	bounds.relname = RelationGetRelationName(heap);
	bounds.nblocks = RelationGetNumberOfBlocks(heap);
	bounds.physical = heap->rd_rel->relam == HEAP_TABLE_AM_OID;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash_perm_check",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);

	tables = palloc(PERM_MAX_TABLES * sizeof(PermTable));
	PermMetaSnapshot(index, tables, &ntables);
	(void) PermGetState(index);

	if (heapallindexed)
	{
		rows.capacity = 1024;
		rows.heap = heap;
		rows.index = index;
		rows.per_row = 1;
		if (PermGetState(index)->layout.width > 0)
		{
			rows.codes = &PermGetState(index)->layout;
			rows.per_row = rows.codes->ntables;
		}
		if (PermGetState(index)->has_store)
		{
			rows.want_store = true;
			rows.store = palloc0(sizeof(PermStoreRows));
			rows.store->words = PermStoreWords(PermGetState(index)->store.width);
		}
		rows.fps = palloc(rows.capacity * rows.per_row * sizeof(uint64));
		if (rows.codes)
			rows.extras = palloc(rows.capacity * rows.per_row * sizeof(uint16));
		rows.tids = palloc(rows.capacity * sizeof(ItemPointerData));

		PermRunAsTableOwner(heap, PermCheckReadHeap, &rows);
		perm = palloc(sizeof(PermPermutation));
	}

	for (t = 0; t < ntables; t++)
	{
		TableCheck	tc = {0};
		Datum		values[5];
		bool		nulls[5] = {0};

		tc.index = index;
		tc.table = t;
		tc.bounds = &bounds;
		if (t > 0)
		{
			/* a sound table holds as many TIDs as table 0 */
			tc.tids.capacity = Max(tids0.n, 1);
			tc.tids.tids = palloc_extended(tc.tids.capacity * sizeof(uint64),
										   MCXT_ALLOC_HUGE);
		}
		if (heapallindexed)
		{
			int64		i;

			PermMakePermutation(tables[t].bits, perm);
			tc.heap_keys = palloc_extended(Max(rows.n, 1) * sizeof(KeyTid),
										   MCXT_ALLOC_HUGE);
			for (i = 0; i < rows.n; i++)
			{
				tc.heap_keys[i].key = rows.codes ?
					rows.fps[i * rows.per_row + t] :
					PermPermute(perm, rows.fps[i]);
				tc.heap_keys[i].tid = rows.tids[i];
				tc.heap_keys[i].extra = rows.codes ?
					rows.extras[i * rows.per_row + t] : 0;
			}
			tc.nheap = rows.n;
			sort_check_entries(tc.heap_keys, tc.nheap);
		}
		check_table(&tc, &tables[t]);
		if (tc.heap_keys)
			pfree(tc.heap_keys);

		/* no TID twice; then as many entries as table 0, and its TIDs */
		check_table_twice(&tc);
		if (entries0 < 0)
			entries0 = tc.entries;
		else if (tc.entries != entries0 && !heapallindexed)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("index \"%s\" holds %lld entries in table %d but %lld in table 0",
							RelationGetRelationName(index),
							(long long) tc.entries, t, (long long) entries0),
					 errhint(PERM_CHECK_PARTIAL_HINT)));
		if (t == 0)
			tids0 = tc.tids;
		else
		{
			check_table_same(&tc, &tids0, heapallindexed ? &partial : NULL);
			if (tc.tids.tids)
				pfree(tc.tids.tids);
		}

		values[0] = Int32GetDatum(t);
		values[1] = Int32GetDatum(tables[t].root_level + 1);
		values[2] = Int64GetDatum(tc.pages);
		values[3] = Int64GetDatum(tc.entries);
		values[4] = Int64GetDatum(tc.incomplete_splits);
		MemoryContextSwitchTo(oldcxt);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		MemoryContextSwitchTo(cxt);
	}

	if (PermGetState(index)->has_store)
		PermCheckStore(index, entries0, &tids0, &bounds,
					   heapallindexed ? rows.store : NULL,
					   heapallindexed ? &partial : NULL, rsinfo, oldcxt);
	PermCheckNotePartialRows(index, &partial);

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	index_close(index, ShareLock);
	table_close(heap, ShareLock);
	return (Datum) 0;
}
