/*-------------------------------------------------------------------------
 *
 * perminsert.c
 *		simhash_perm: inserting a row (aminsert).  Finding each table's
 *		leaf, appending to it, splitting full pages, making a new root, and
 *		adding the downlink of a new page to its parent, with the WAL of
 *		each step.
 *
 * A row goes into every table under that table's permuted key, up to four
 * tables per WAL record (PermInsertRow).  After a crash a row's entries may
 * sit in only some of the tables, but only for a transaction that never
 * committed, whose heap tuple no snapshot sees; VACUUM removes such entries
 * like any other dead ones.  README.perm, "Inserts and splits" and "WAL",
 * has the locking order and the crash argument.
 *
 * IDENTIFICATION
 *	  src/index/perminsert.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/rmgr.h"
#include "access/xact.h"
#include "access/xloginsert.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "index/perm.h"
#include "index/tree/permleaf.h"

/* simhash.fail_after_split: for tests of incomplete splits (permhandler.c) */
bool		perm_fail_after_split = false;

/*
 * WAL for appends to leaves.
 *
 * An append changes three small byte ranges of a leaf: the new entry (or,
 * when the tail was merged, the whole entry array and the page's flags,
 * which say its format), pd_lower, and the entry counts in the special
 * space.  GenericXLogRegisterBuffer and
 * GenericXLogFinish would copy each page and compare it byte by byte with
 * its copy to find them, which costs more than everything else an insert
 * does.  Instead the ranges are written here as a generic WAL record in the
 * form generic_redo() replays: per block, a sequence of fragments
 * (uint16 offset, uint16 length, bytes), after which redo zeroes the hole
 * between pd_lower and pd_upper, as GenericXLogFinish does on the primary.
 * Full-page images follow the usual rules (REGBUF_STANDARD).
 *
 * That format is internal to PostgreSQL (generic_xlog.c), so it is pinned
 * here to the major versions it was read from: 15 and 18.6, whose
 * applyPageRedo() and generic_redo() read the same fragments and zero the
 * same hole (the format has not changed since generic WAL came, in 9.6).
 * A build for a later major version stops below until someone has
 * compared generic_redo() again.  At run time the replica test replays
 * every such record under wal_consistency_checking = 'generic', which
 * compares each replayed page with the primary's and fails loudly on any
 * difference; test/run_all.sh runs it on 15 and on 18.
 */
#if PG_VERSION_NUM >= 190000
#error "simhash_perm writes generic WAL fragments as generic_redo() of PostgreSQL 15 to 18 reads them; check generic_xlog.c of this version and update this guard"
#endif
typedef struct LeafAppend
{
	Buffer		buf;
	int			slot;			/* the new entry's slot */
	bool		rewritten;		/* all entries were rewritten: log them all */
} LeafAppend;

/* Add one fragment, len bytes to go at offset off, to a delta being built */
static char *
add_fragment_bytes(char *out, size_t off, const void *bytes, size_t len)
{
	OffsetNumber ooff = (OffsetNumber) off;
	OffsetNumber olen = (OffsetNumber) len;

	memcpy(out, &ooff, sizeof(ooff));
	memcpy(out + sizeof(ooff), &olen, sizeof(olen));
	memcpy(out + 2 * sizeof(OffsetNumber), bytes, len);
	return out + 2 * sizeof(OffsetNumber) + len;
}

/* Add the fragment of a page's bytes [start, start + len) */
static char *
add_fragment(char *out, Page page, const void *start, size_t len)
{
	return add_fragment_bytes(out, (const char *) start - (const char *) page,
							  start, len);
}

/*
 * The delta of a plain append (PermLeafAppendIsPlain) of key to page, built
 * without changing the page: the new entry, pd_lower and the counts.
 */
static char *
plain_append_delta(char *out, Page page, const KeyTid *key, int *slot)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	char		entry[32];
	int			esize = PermLeafEncodeEntry(page, key, entry);
	LocationIndex lower = ((PageHeader) page)->pd_lower + esize;
	char		counts[PERM_COUNTS_SIZE];
	uint16		nentries = opaque->nentries + 1;

	*slot = opaque->nentries;
	memcpy(counts, &opaque->nentries, PERM_COUNTS_SIZE);
	memcpy(counts, &nentries, sizeof(nentries));
	out = add_fragment_bytes(out, (PermPageEntries(page) - (char *) page) +
							 (size_t) *slot * esize, entry, esize);
	out = add_fragment_bytes(out, offsetof(PageHeaderData, pd_lower),
							 &lower, sizeof(lower));
	return add_fragment_bytes(out, (char *) &opaque->nentries - (char *) page,
							  counts, PERM_COUNTS_SIZE);
}

/* Write a delta's fragments into a page, as generic_redo() does */
static void
apply_fragments(Page page, const char *delta, int len)
{
	const char *p = delta;

	while (p < delta + len)
	{
		OffsetNumber off;
		OffsetNumber flen;

		memcpy(&off, p, sizeof(off));
		memcpy(&flen, p + sizeof(off), sizeof(flen));
		memcpy((char *) page + off, p + 2 * sizeof(OffsetNumber), flen);
		p += 2 * sizeof(OffsetNumber) + flen;
	}
}

/*
 * Append keys[i] to the leaf in las[i].buf for each i, all exclusively
 * locked and with room (PermLeafHasRoom), atomically and WAL-logged as one
 * record.  The new page images and their deltas are prepared in a scratch
 * area first (the leaf's rewrite sorts on the stack, and nothing that can
 * fail or use much stack belongs in a critical section); the critical
 * section only writes the deltas into the pages, as redo will, and inserts
 * the record.
 */
static void
leaves_append_logged(PermState *state, int n,
					 LeafAppend *las, const KeyTid *keys)
{
	Relation	index = state->index;
	bool		needwal = RelationNeedsWAL(index);
	int			lens[MAX_GENERIC_XLOG_PAGES];
	int			i;

	if (state->append_scratch == NULL)
		state->append_scratch = MemoryContextAlloc(state->cxt,
												   sizeof(PermAppendScratch));

	for (i = 0; i < n; i++)
	{
		Page		page = state->append_scratch->pages[i].data;
		PermPageOpaque opaque;
		int			esize;
		char	   *out;

		/* the common case: a few bytes, computed from the page as it is */
		if (PermLeafAppendIsPlain(BufferGetPage(las[i].buf), &keys[i]))
		{
			las[i].rewritten = false;
			out = plain_append_delta(state->append_scratch->deltas[i],
									 BufferGetPage(las[i].buf), &keys[i],
									 &las[i].slot);
			lens[i] = out - state->append_scratch->deltas[i];
			continue;
		}

		/* a rewrite of the entries: done on a copy of the page */
		memcpy(page, BufferGetPage(las[i].buf), BLCKSZ);
		opaque = PermPageGetOpaque(page);
		las[i].rewritten = PermLeafAppend(page, &keys[i], &las[i].slot);
		esize = PermLeafEntrySize(page);

		/*
		 * The delta in the form generic_redo() replays (see above); offsets
		 * are the same in the copy as in the page.
		 */
		out = state->append_scratch->deltas[i];
		if (las[i].rewritten)
		{
			/* a page of an older index takes the current format here */
			out = add_fragment(out, page, &opaque->flags, sizeof(opaque->flags));
			out = add_fragment(out, page, PermPageEntries(page),
							   opaque->nentries * esize);
		}
		else
			out = add_fragment(out, page,
							   PermPageEntries(page) + las[i].slot * esize, esize);
		out = add_fragment(out, page, &((PageHeader) page)->pd_lower,
						   sizeof(LocationIndex));
		out = add_fragment(out, page, &opaque->nentries, PERM_COUNTS_SIZE);
		lens[i] = out - state->append_scratch->deltas[i];
	}

	START_CRIT_SECTION();
	for (i = 0; i < n; i++)
	{
		apply_fragments(BufferGetPage(las[i].buf),
						state->append_scratch->deltas[i], lens[i]);
		MarkBufferDirty(las[i].buf);
	}
	if (needwal)
	{
		XLogRecPtr	lsn;

		XLogBeginInsert();
		for (i = 0; i < n; i++)
		{
			XLogRegisterBuffer(i, las[i].buf, REGBUF_STANDARD);
			XLogRegisterBufData(i, state->append_scratch->deltas[i], lens[i]);
		}
		lsn = XLogInsert(RM_GENERIC_ID, 0);
		for (i = 0; i < n; i++)
			PageSetLSN(BufferGetPage(las[i].buf), lsn);
	}
	END_CRIT_SECTION();
}

/*
 * Page splits
 *
 * A full page and the entry that did not fit are split into the page (the
 * lower half) and a new right sibling (the upper half, and the old page's
 * right-link and high key), in one WAL record; if the page was its table's
 * root, the same record makes a new root above the two and points the
 * metapage at it.  Otherwise the downlink to the new page goes into the
 * parent afterwards, found by a new descent, in a record of its own.
 */

/* The entries of a page being split, plus the new one, in key order */
typedef struct PermSplit
{
	bool		leaf;
	int			n;				/* entries, the new one included */
	KeyTid    *keys;			/* leaf: decoded entries */
	char	   *links;			/* internal: packed downlinks */
} PermSplit;

/* Gather a full page's entries and the new one (with child, if internal) */
static void
split_gather(Page page, const KeyTid *key, BlockNumber child, PermSplit *split)
{
	int			n = PermPageGetOpaque(page)->nentries;

	split->leaf = PermPageIsLeaf(page);
	split->n = n + 1;
	split->keys = NULL;
	split->links = NULL;
	if (split->leaf)
	{
		split->keys = palloc((n + 1) * sizeof(KeyTid));
		/* the sorted part and the sorted tail merged: no sort of it all */
		PermLeafMergedEntries(page, key, split->keys);
	}
	else
	{
		int			pos = PermPageLowerBound(page, key);
		char	   *links = palloc((n + 1) * PERM_INTERNAL_ENTRY_SIZE);

		memcpy(links, PermPageEntries(page), pos * PERM_INTERNAL_ENTRY_SIZE);
		PermWriteInternalEntry(links + pos * PERM_INTERNAL_ENTRY_SIZE, key, child);
		memcpy(links + (pos + 1) * PERM_INTERNAL_ENTRY_SIZE,
			   PermPageEntries(page) + pos * PERM_INTERNAL_ENTRY_SIZE,
			   (n - pos) * PERM_INTERNAL_ENTRY_SIZE);
		split->links = links;
	}
}

/* Key of entry i of a split */
static void
split_key(const PermSplit *split, int i, KeyTid *out)
{
	if (split->leaf)
		*out = split->keys[i];
	else
	{
		const char *slot = split->links + i * PERM_INTERNAL_ENTRY_SIZE;

		memcpy(&out->key, slot, sizeof(uint64));
		memcpy(&out->tid, slot + sizeof(uint64), sizeof(ItemPointerData));
	}
}

/*
 * Write entries [from, to) of a split into a page whose range (lokey, high
 * key, right-link) is already set, in the format that range allows.
 */
static void
split_fill(const PermSplit *split, Page page, int from, int to)
{
	if (split->leaf)
	{
		if (!PermLeafSetEntries(page, split->keys + from, to - from, to - from))
			elog(ERROR, "simhash_perm split left a half too large for a page");
	}
	else
		PermInternalSet(page, split->links + from * PERM_INTERNAL_ENTRY_SIZE,
						to - from);
}

/*
 * Write a split into the left page (the old one, lpage) and the new right
 * page (rpage, block rblkno): the right one takes entries [nleft, n), the old
 * page's right-link and high key; the left one keeps [0, nleft) and ends at
 * sep.  Each half is written in the format its narrower range allows.
 * Unless a new root is made above the two, the left page is marked
 * PERM_INCOMPLETE_SPLIT until its new sibling's downlink is in the parent.
 */
static void
split_pages(const PermSplit *split, int nleft, const KeyTid *sep, Page lpage,
			Page rpage, BlockNumber rblkno, int table, int level, bool was_root)
{
	PermPageOpaque lopaque = PermPageGetOpaque(lpage);
	PermPageOpaque ropaque;

	PermInitPage(rpage, lopaque->flags &
				 ~(PERM_ROOT | PERM_INCOMPLETE_SPLIT | PERM_KEY_OFFSET),
				 table, level);
	ropaque = PermPageGetOpaque(rpage);
	ropaque->rightlink = lopaque->rightlink;
	ropaque->hikey = lopaque->hikey;
	ropaque->hikey_tid = lopaque->hikey_tid;
	ropaque->lokey = sep->key;
	ropaque->extra_bytes = lopaque->extra_bytes;

	lopaque->rightlink = rblkno;
	lopaque->hikey = sep->key;
	lopaque->hikey_tid = sep->tid;
	lopaque->flags &= ~PERM_ROOT;
	if (!was_root)
		lopaque->flags |= PERM_INCOMPLETE_SPLIT;

	split_fill(split, rpage, nleft, split->n);
	split_fill(split, lpage, 0, nleft);
}

static void
split_free(PermSplit *split)
{
	if (split->keys)
		pfree(split->keys);
	if (split->links)
		pfree(split->links);
}

/*
 * Make newroot (block rootblk) the root of a table whose old root, at level,
 * has just split into left and right at sep; point the metapage at it.
 */
static void
make_new_root(Page newroot, BlockNumber rootblk, Page metapage, int table,
			  int level, const KeyTid *sep, BlockNumber left, BlockNumber right)
{
	PermMetaPage meta = PermPageGetMeta(metapage);
	PermMetaGrowth growth;
	uint16		layout_flag = 0;

	/* the new root belongs to the current layout, as its children do */
	if (PermMetaGetGrowth(metapage, &growth))
		layout_flag = PermLayoutFlag(growth.generation);
	PermInitPage(newroot, PERM_INTERNAL | PERM_ROOT | layout_flag, table, level + 1);
	PermInternalAdd(newroot, &PermMinKey, left);
	PermInternalAdd(newroot, sep, right);
	meta->tables[table].root = rootblk;
	meta->tables[table].root_level = level + 1;
}

static void complete_split(PermState *state, int table, Buffer buf,
						   const KeyTid *sep, BlockNumber rblkno,
						   bool maybe_done);

/*
 * Split the full, exclusively locked page in buf while adding key (and,
 * on internal pages, child), then release it; then add the downlink of the
 * new page to the parent, unless a new root was made.
 */
static void
split_and_add(PermState *state, int table, Buffer buf, const KeyTid *key,
			  BlockNumber child)
{
	Relation	index = state->index;
	PermPageOpaque opaque = PermPageGetOpaque(BufferGetPage(buf));
	int			level = opaque->level;
	bool		was_root = (opaque->flags & PERM_ROOT) != 0;
	PermSplit	split;
	int			nleft;
	KeyTid		sep;
	Buffer		rbuf;
	Buffer		rootbuf = InvalidBuffer;
	Buffer		metabuf = InvalidBuffer;
	BlockNumber rblkno;
	GenericXLogState *xlog;
	Page		lpage,
				rpage;

	split_gather(BufferGetPage(buf), key, child, &split);
	nleft = split.n / 2;
	split_key(&split, nleft, &sep);

	/* locks: the page, its new sibling, a new root, then the metapage */
	rbuf = PermNewBuffer(index, MAIN_FORKNUM);
	rblkno = BufferGetBlockNumber(rbuf);
	if (was_root)
	{
		rootbuf = PermNewBuffer(index, MAIN_FORKNUM);
		metabuf = PermReadMetaPage(index, BUFFER_LOCK_EXCLUSIVE);
		if (PermPageGetMeta(BufferGetPage(metabuf))->tables[table].root !=
			BufferGetBlockNumber(buf))
			PermReportCorruption(index, BufferGetBlockNumber(buf),
								 "The page is marked as its table's root, but the metapage names another.");
	}

	xlog = GenericXLogStart(index);
	lpage = GenericXLogRegisterBuffer(xlog, buf, 0);
	rpage = GenericXLogRegisterBuffer(xlog, rbuf, GENERIC_XLOG_FULL_IMAGE);
	split_pages(&split, nleft, &sep, lpage, rpage, rblkno, table, level,
				was_root);

	if (was_root)
	{
		Page		newroot = GenericXLogRegisterBuffer(xlog, rootbuf,
														GENERIC_XLOG_FULL_IMAGE);
		Page		metapage = GenericXLogRegisterBuffer(xlog, metabuf, 0);

		make_new_root(newroot, BufferGetBlockNumber(rootbuf), metapage, table,
					  level, &sep, BufferGetBlockNumber(buf), rblkno);
	}
	GenericXLogFinish(xlog);

	if (was_root)
	{
		UnlockReleaseBuffer(metabuf);
		UnlockReleaseBuffer(rootbuf);
		UnlockReleaseBuffer(rbuf);
		UnlockReleaseBuffer(buf);
		split_free(&split);
		return;
	}
	UnlockReleaseBuffer(rbuf);
	split_free(&split);

	if (perm_fail_after_split)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("simhash_perm: stopping between a page split and its downlink"),
				 errdetail("simhash.fail_after_split is on, which leaves block %u's split incomplete, as a crash at this point would.",
						   BufferGetBlockNumber(buf))));

	/*
	 * The left page stays locked while the downlink goes in, so no one else
	 * can split it meanwhile (the flag then still describes this split).
	 */
	complete_split(state, table, buf, &sep, rblkno, false);
	UnlockReleaseBuffer(buf);
}

/* Add a downlink to the locked internal page in buf, splitting if full */
static void
add_to_internal(PermState *state, int table, Buffer buf, const KeyTid *key,
				BlockNumber child)
{
	Relation	index = state->index;
	GenericXLogState *xlog;

	if (PermPageGetOpaque(BufferGetPage(buf))->nentries >= PERM_INTERNAL_CAPACITY)
	{
		split_and_add(state, table, buf, key, child);
		return;
	}
	xlog = GenericXLogStart(index);
	PermInternalAdd(GenericXLogRegisterBuffer(xlog, buf, 0), key, child);
	GenericXLogFinish(xlog);
	UnlockReleaseBuffer(buf);
}

/* Does the internal page hold a downlink to child? */
static bool
has_downlink(Page page, BlockNumber child)
{
	int			n = PermPageGetOpaque(page)->nentries;
	int			i;

	for (i = 0; i < n; i++)
	{
		KeyTid		k;
		BlockNumber c;

		PermReadInternalEntry(page, i, &k, &c);
		if (c == child)
			return true;
	}
	return false;
}

/*
 * Descend to the page at level that owns key, exclusively locked, having
 * finished its own incomplete split first if it has one.
 */
static Buffer
descend_for_insert(PermState *state, int table, const KeyTid *key, int level)
{
	Buffer		buf = PermDescend(state, table, key, level,
								  BUFFER_LOCK_EXCLUSIVE);
	PermPageOpaque opaque = PermPageGetOpaque(BufferGetPage(buf));

	if (opaque->flags & PERM_INCOMPLETE_SPLIT)
	{
		KeyTid		sep;

		sep.key = opaque->hikey;
		sep.tid = opaque->hikey_tid;
		complete_split(state, table, buf, &sep, opaque->rightlink, true);
	}
	return buf;
}

/*
 * Complete the split of the exclusively locked page in buf, which keeps its
 * lock: put the downlink (sep, rblkno) to its right sibling into the parent
 * level, then clear PERM_INCOMPLETE_SPLIT.  These are two WAL records; if
 * the second is lost in a crash, the next inserter that comes here finds
 * the downlink present (maybe_done) and only clears the flag.
 */
static void
complete_split(PermState *state, int table, Buffer buf, const KeyTid *sep,
			   BlockNumber rblkno, bool maybe_done)
{
	Relation	index = state->index;
	int			level = PermPageGetOpaque(BufferGetPage(buf))->level;
	Buffer		pbuf = descend_for_insert(state, table, sep, level + 1);
	GenericXLogState *xlog;

	if (maybe_done && has_downlink(BufferGetPage(pbuf), rblkno))
		UnlockReleaseBuffer(pbuf);
	else
		add_to_internal(state, table, pbuf, sep, rblkno);

	xlog = GenericXLogStart(index);
	PermPageGetOpaque(GenericXLogRegisterBuffer(xlog, buf, 0))->flags &=
		~PERM_INCOMPLETE_SPLIT;
	GenericXLogFinish(xlog);
}

/* Insert one (permuted key, TID) entry into a table */
static void
insert_entry(PermState *state, int table, const KeyTid *key)
{
	Buffer		buf = descend_for_insert(state, table, key, 0);

	if (PermLeafHasRoom(BufferGetPage(buf), key))
	{
		LeafAppend	la;

		la.buf = buf;
		leaves_append_logged(state, 1, &la, key);
		UnlockReleaseBuffer(buf);
	}
	else
		split_and_add(state, table, buf, key, InvalidBlockNumber);
}

/*
 * Insert one row's entries into its tables.  Tables are taken four at a
 * time (the most one generic WAL record can hold): their leaves are locked
 * in table order and, if all have room, the four appends are one record.
 * If one is full, those tables are inserted one by one, splitting as
 * needed.
 */
static void
insert_row(PermState *state, const KeyTid *keys)
{
	int			ntables = state->layout.ntables;
	int			first;
	int			t;

	/* every table's leaf on its way into the CPU's caches at once */
	for (t = 0; t < ntables; t++)
		PermPrefetchLeaf(state, t, &keys[t]);

	for (first = 0; first < ntables; first += MAX_GENERIC_XLOG_PAGES)
	{
		int			n = Min(MAX_GENERIC_XLOG_PAGES, ntables - first);
		Buffer		bufs[MAX_GENERIC_XLOG_PAGES];
		int			locked;
		bool		room = true;
		int			i;

		for (locked = 0; locked < n && room; locked++)
		{
			bufs[locked] = PermDescend(state, first + locked,
									   &keys[first + locked], 0,
									   BUFFER_LOCK_EXCLUSIVE);
			/* a full leaf, or one with a split to finish: one by one */
			room = PermLeafHasRoom(BufferGetPage(bufs[locked]),
								   &keys[first + locked]) &&
				!(PermPageGetOpaque(BufferGetPage(bufs[locked]))->flags &
				  PERM_INCOMPLETE_SPLIT);
		}

		if (room)
		{
			LeafAppend	las[MAX_GENERIC_XLOG_PAGES];

			for (i = 0; i < n; i++)
				las[i].buf = bufs[i];
			leaves_append_logged(state, n, las, &keys[first]);
			for (i = 0; i < n; i++)
				UnlockReleaseBuffer(bufs[i]);
		}
		else
		{
			for (i = 0; i < locked; i++)
				UnlockReleaseBuffer(bufs[i]);
			for (i = 0; i < n; i++)
				insert_entry(state, first + i, &keys[first + i]);
		}
	}
}

/*
 * aminsert: a row with a code goes into every table; a row whose code is
 * NULL into the store's list of rows without a code (permstore.c), which
 * an ordered scan hands out last; a row with a NULL leading value nowhere
 * (permtenant.c: = matches no NULL).  A bit(n) code of another width than
 * the index's is an error.  An index that keeps codes in its store adds
 * the row's code to it too.  An index built before simhash 1.6 has no
 * store: its NULL rows are not listed, as before.
 */
bool
PermInsert(const PermEngine *engine, Relation index, Datum *values,
		   bool *isnull, ItemPointer ht_ctid)
{
	PermState  *state = PermGetState(index);
	KeyTid		keys[PERM_MAX_TABLES];

	if (isnull[state->code_column])
	{
		/* the trees hold no NULL code; the store lists its row */
		if (state->has_store &&
			!PermTenantValuesNull(index, isnull))
			PermStoreAppend(state, ht_ctid, NULL);
		return false;
	}

	/* a young index may change its layout first (permgrow.c) */
	PermGrowMaybeRelayout(index);
	state = PermGetState(index);

	/* the row's key in every table; none for a NULL tenant */
	if (!engine->row_keys(index, state, values, isnull, ht_ctid, keys))
		return false;

	/*
	 * the code store first: a scan or a constraint's check that finds the
	 * row in a table then finds its code in the store (PermStoreFindCode)
	 */
	if (state->has_codes)
		PermStoreAppend(state, ht_ctid,
						DatumGetVarBitP(values[state->code_column]));
	insert_row(state, keys);
	return false;
}
