/*-------------------------------------------------------------------------
 *
 * permstore.c
 *		simhash_perm: the code store of an index on bit(n) codes.  Every
 *		row's whole code and heap TID, packed in pages of the index, so
 *		that a nearest-neighbour query whose neighbours all lie far reads
 *		them at memory speed instead of the table (permwidestore.c).
 *
 * The store is two chains of pages linked by their right-links, recorded
 * in the metapage (PermMetaStore, after the code record): one of entries
 * of codes (the code's 64-bit words, zero-padded, then the TID's 6 bytes;
 * 38 bytes for bit(256)), one of the TIDs of the rows whose code is NULL
 * (which the trees do not hold, and an ordered scan hands out last).  Each
 * page keeps its entries as one packed array after the page header,
 * pd_lower marking its end, like the leaves, and carries PERM_STORE (and
 * PERM_STORE_NULLS) in the special space; every page read is checked
 * before it is used (check_page).
 *
 * Writes: CREATE INDEX writes both chains after the tables, at least one
 * page each, from the rows it collected (PermStoreBuild*), and logs them
 * with the rest of the index.  An insert appends its row to the last page
 * of its chain, under that page's exclusive lock, in a generic WAL record
 * of its own bytes (as perminsert.c logs leaf appends); a full last page
 * gets a right sibling at the end of the relation, and the metapage the
 * new end, in one generic WAL record of the three pages.  Entries never
 * move between pages and pages are never removed: VACUUM compacts a page
 * in place (one generic WAL record per changed page), so a reader that
 * reads each page whole under its share lock sees every entry that was
 * there when its pass began and is still there.  The room VACUUM frees is
 * not reused (appends go to the last page); REINDEX packs the store.
 *
 * A change of layout (permgrow.c) rewrites the tables, not the store: the
 * store does not depend on the layout.  The record counts the chains'
 * pages, so that permgrow.c measures the growth of the trees alone, and
 * the planner knows what a pass reads (permcost.c).  Pages are found by following the
 * chains from the metapage, never in physical order (those who read pages
 * in physical order pass store pages by: PermPageIsStore).
 *
 * IDENTIFICATION
 *	  src/index/store/permstore.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/xloginsert.h"
#include "catalog/pg_type.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "storage/buffile.h"
#include "storage/sharedfileset.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "index/perm.h"

/*
 * The rows of a process's share of the build, spooled to two files: its
 * code entries and its NULL codes' TIDs
 */
typedef struct StoreSpool
{
	BufFile    *file[2];		/* [0] entries of codes, [1] TIDs of NULLs */
	int64		count[2];
} StoreSpool;

/*
 * The build's rows.  The process that reads a row spools it (spools[0]):
 * to temporary files, or in a parallel build's worker to files of the
 * build's shared set, which the leader then adds as further spools, in
 * the workers' order (PermStoreBuildAddShared).
 */
struct PermStoreBuild
{
	Relation	index;
	int			width;
	int			esize;
	SharedFileSet *fileset;		/* a worker's: its files are shared */
	int			part;			/* the worker's number in file names */
	int			nspools;
	StoreSpool *spools;
};

/*
 * Does this index keep codes in its store: bit(n) codes, with leading
 * columns or without?  Every index keeps the chain of rows without a code;
 * an index on 64-bit fingerprints keeps no chain of codes (its table 0,
 * or within a tenant its entries, hold every code whole: README.perm,
 * "Code store").
 */
bool
PermIndexStoresCodes(Relation index)
{
	return PermIndexIsWide(index) &&
		index->rd_opcintype[PermCodeColumn(index)] == BITOID;
}

/* Bytes of an entry of the chain (nulls: a TID alone) */
static int
entry_size(PermState *state, bool nulls)
{
	return nulls ? (int) sizeof(ItemPointerData) : state->store.entry_size;
}

/*
 * Check a page of the store, reached as a page of the chain of codes or of
 * NULL codes: header, identification, flags, the entry count against the
 * page's capacity and pd_lower, a right-link that is neither the metapage
 * nor the page itself.
 */
static void
check_page(PermState *state, Buffer buf, bool nulls)
{
	Relation	index = state->index;
	Page		page = BufferGetPage(buf);
	BlockNumber blkno = BufferGetBlockNumber(buf);
	PageHeader	hdr = (PageHeader) page;
	size_t		entries_off = PermPageEntries(page) - (char *) page;
	int			esize = entry_size(state, nulls);
	uint16		flags = PERM_STORE | (nulls ? PERM_STORE_NULLS : 0);
	PermPageOpaque opaque = PermCheckPageHeader(index, buf,
												"The page of the code store");

	if (opaque->flags != flags)
		PermReportCorruption(index, blkno,
							 psprintf("Flags %04X, but a page of the code store's %s has %04X.",
									  opaque->flags,
									  nulls ? "NULL codes" : "codes", flags));
	if (esize < (int) sizeof(ItemPointerData) ||
		(size_t) opaque->nentries * esize > PERM_PAGE_SPACE ||
		hdr->pd_lower != entries_off + (size_t) opaque->nentries * esize)
		PermReportCorruption(index, blkno,
							 psprintf("%u entries of %d bytes, pd_lower %u.",
									  opaque->nentries, esize, hdr->pd_lower));
	if (opaque->rightlink == PERM_METAPAGE_BLKNO || opaque->rightlink == blkno)
		PermReportCorruption(index, blkno,
							 psprintf("The right-link points to block %u.",
									  opaque->rightlink));
}

/*
 * Pin, lock and check the store page blkno of a chain, reached from block
 * from (InvalidBlockNumber: from the metapage): the link must lead inside
 * the relation, and not to the metapage or back to from
 */
Buffer
PermStoreReadPage(PermState *state, BlockNumber from,
				  BlockNumber blkno, bool nulls, int lockmode,
				  BufferAccessStrategy strategy)
{
	Relation	index = state->index;
	Buffer		buf;

	if (blkno == PERM_METAPAGE_BLKNO || blkno == InvalidBlockNumber ||
		blkno == from)
		PermReportCorruption(index, from == InvalidBlockNumber ?
							 PERM_METAPAGE_BLKNO : from,
							 psprintf("A link of the code store points to block %u.",
									  blkno));
	if (blkno >= state->nblocks)
	{
		state->nblocks = RelationGetNumberOfBlocks(index);
		if (blkno >= state->nblocks)
			PermReportCorruption(index, from == InvalidBlockNumber ?
								 PERM_METAPAGE_BLKNO : from,
								 psprintf("A link of the code store points to block %u, beyond the end of the index (%u blocks).",
										  blkno, state->nblocks));
	}
	buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, strategy);
	LockBuffer(buf, lockmode);
	check_page(state, buf, nulls);
	return buf;
}

/* Initialise a page of a chain */
static void
init_page(Page page, bool nulls)
{
	PermInitPage(page, PERM_STORE | (nulls ? PERM_STORE_NULLS : 0), 0, 0);
	PermPageGetOpaque(page)->key_bytes = 0;
	PermPageGetOpaque(page)->block_bytes = 0;
	PermPageGetOpaque(page)->off_bytes = 0;
}

/* Does a page of entries of esize bytes have room for one more? */
static inline bool
page_has_room(Page page, int esize)
{
	return (size_t) (PermPageGetOpaque(page)->nentries + 1) * esize <=
		PERM_PAGE_SPACE;
}

/*
 * Put an entry at the end of a page that has room, and widen the page's
 * range of heap TIDs to hold its TID.  lokey and hikey (unused by store
 * pages otherwise) are the least and greatest TID, as PermTidNumber, of
 * the entries the page has held: a page holds no entry of a TID outside
 * them, which PermStoreFindCode relies on.  A page of an index built
 * before the ranges were kept has hikey 0 with entries (no TID numbers
 * 0): its range is unknown, and stays so.
 */
static void
page_add(Page page, const char *entry, int esize)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	ItemPointerData tid;
	uint64		x;

	memcpy(PermPageEntries(page) + (size_t) opaque->nentries * esize, entry,
		   esize);
	opaque->nentries++;
	opaque->nsorted = opaque->nentries;
	((PageHeader) page)->pd_lower += esize;

	memcpy(&tid, entry + esize - sizeof(ItemPointerData), sizeof(tid));
	x = PermTidNumber(&tid);
	if (opaque->nentries == 1)
		opaque->lokey = opaque->hikey = x;
	else if (opaque->hikey != 0)
	{
		opaque->lokey = Min(opaque->lokey, x);
		opaque->hikey = Max(opaque->hikey, x);
	}
}

/* An entry of codes: the code's words, zero-padded, then the TID */
static void
make_entry(char *entry, int width, ItemPointer tid, const VarBit *code)
{
	int			words = PermStoreWords(width);

	memset(entry, 0, words * sizeof(uint64));
	memcpy(entry, VARBITS(code), VARBITBYTES(code));
	memcpy(entry + words * sizeof(uint64), tid, sizeof(ItemPointerData));
}

/* The name of a worker's file of the shared set: codes, or NULLs */
static char *
shared_file_name(int part, int which)
{
	return psprintf("store.%d.%s", part, which == 0 ? "codes" : "nulls");
}

/*
 * The build: the rows are spooled as the table is read, then written as
 * the two chains after the tables.  fileset: NULL, or a parallel worker's
 * (part its number), whose spool the leader reads.
 */
PermStoreBuild *
PermStoreBuildBegin(Relation index, SharedFileSet *fileset, int part)
{
	PermStoreBuild *sb = palloc0(sizeof(PermStoreBuild));

	sb->index = index;
	sb->fileset = fileset;
	sb->part = part;
	sb->nspools = 1;
	sb->spools = palloc0(sizeof(StoreSpool));
	return sb;
}

/* Write a record to this process's spool file which (0 codes, 1 NULLs) */
static void
spool_write(PermStoreBuild *sb, int which, const void *rec, size_t len)
{
	StoreSpool *spool = &sb->spools[0];

	if (spool->file[which] == NULL)
	{
		if (sb->fileset)
		{
			char	   *name = shared_file_name(sb->part, which);

			spool->file[which] = BufFileCreateFileSet(&sb->fileset->fs, name);
			pfree(name);
		}
		else
			spool->file[which] = BufFileCreateTemp(false);
	}
	BufFileWrite(spool->file[which], (void *) rec, len);
	spool->count[which]++;
}

/*
 * Add a row to the build's store: its code, or NULL.  The width is the
 * first code's (the build checks every row's against the layout's).
 */
void
PermStoreBuildAdd(PermStoreBuild *sb, ItemPointer tid, Datum value,
				  bool isnull)
{
	char		entry[PermStoreEntrySize(PERM_MAX_WIDTH)];
	VarBit	   *code;

	if (isnull)
	{
		spool_write(sb, 1, tid, sizeof(ItemPointerData));
		return;
	}
	code = DatumGetVarBitP(value);
	if (sb->width == 0)
	{
		sb->width = VARBITLEN(code);
		sb->esize = PermStoreEntrySize(sb->width);
	}
	PermCheckCodeWidth(sb->index, sb->width, VARBITLEN(code));
	make_entry(entry, sb->width, tid, code);
	spool_write(sb, 0, entry, sb->esize);
	/* a short varlena is copied out: free it, as the build reads on */
	if ((Pointer) code != DatumGetPointer(value))
		pfree(code);
}

/*
 * A parallel worker has read its share: close its spool for the leader,
 * and say how many codes and NULLs it holds.  A file never written to is
 * made, empty, so that the leader finds every worker's.
 */
void
PermStoreBuildShare(PermStoreBuild *sb, int64 *ncodes, int64 *nnulls)
{
	StoreSpool *spool = &sb->spools[0];
	int			which;

	Assert(sb->fileset != NULL);
	for (which = 0; which < 2; which++)
	{
		if (spool->file[which] == NULL)
		{
			char	   *name = shared_file_name(sb->part, which);

			spool->file[which] = BufFileCreateFileSet(&sb->fileset->fs, name);
			pfree(name);
		}
		BufFileExportFileSet(spool->file[which]);
		BufFileClose(spool->file[which]);
		spool->file[which] = NULL;
	}
	*ncodes = spool->count[0];
	*nnulls = spool->count[1];
}

/*
 * The leader: add the spool a worker (part) shared, of ncodes codes and
 * nnulls NULLs, after those added before
 */
void
PermStoreBuildAddShared(PermStoreBuild *sb, SharedFileSet *fileset, int part,
						int64 ncodes, int64 nnulls)
{
	StoreSpool *spool;
	int			which;

	sb->spools = repalloc(sb->spools, (sb->nspools + 1) * sizeof(StoreSpool));
	spool = &sb->spools[sb->nspools++];
	spool->count[0] = ncodes;
	spool->count[1] = nnulls;
	for (which = 0; which < 2; which++)
	{
		char	   *name = shared_file_name(part, which);

		spool->file[which] = BufFileOpenFileSet(&fileset->fs, name, O_RDONLY,
												false);
		pfree(name);
	}
}

/*
 * Write one chain of esize-byte entries, those of file which of every
 * spool in turn, to new pages at the end of the fork, at least one;
 * *first and *last are set to its ends.  Not WAL-logged: the build logs
 * every page at its end.
 */
static void
write_chain(PermStoreBuild *sb, Relation index, ForkNumber fork, int which,
			int esize, BlockNumber *first, BlockNumber *last,
			BlockNumber *pages)
{
	bool		nulls = (which == 1);
	Buffer		buf = PermNewBuffer(index, fork);
	Page		page = BufferGetPage(buf);
	char		entry[PermStoreEntrySize(PERM_MAX_WIDTH)];
	int			s;

	init_page(page, nulls);
	*first = BufferGetBlockNumber(buf);
	*pages = 1;
	for (s = 0; s < sb->nspools; s++)
	{
		BufFile    *file = sb->spools[s].file[which];
		int64		n = sb->spools[s].count[which];
		int64		i;

		if (n > 0 && BufFileSeek(file, 0, 0, SEEK_SET) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not rewind a temporary file")));
		for (i = 0; i < n; i++)
		{
			if (BufFileRead(file, entry, esize) != (size_t) esize)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("temporary file of %lld entries of the code store ended at entry %lld",
								(long long) n, (long long) i)));
			if (!page_has_room(page, esize))
			{
				Buffer		next = PermNewBuffer(index, fork);

				PermPageGetOpaque(page)->rightlink = BufferGetBlockNumber(next);
				MarkBufferDirty(buf);
				UnlockReleaseBuffer(buf);
				buf = next;
				page = BufferGetPage(buf);
				init_page(page, nulls);
				(*pages)++;
				CHECK_FOR_INTERRUPTS();
			}
			page_add(page, entry, esize);
		}
	}
	*last = BufferGetBlockNumber(buf);
	MarkBufferDirty(buf);
	UnlockReleaseBuffer(buf);
}

/*
 * Write the build's store after the tables, for codes of width bits (the
 * layout's); *store is its record
 */
void
PermStoreBuildWrite(PermStoreBuild *sb, Relation index, ForkNumber fork,
					int width, PermMetaStore *store)
{
	if (width == 0)
		Assert(sb->spools[0].count[0] == 0);
	else if (sb->width == 0)
	{
		sb->width = width;
		sb->esize = PermStoreEntrySize(width);
	}
	if (width > 0)
		PermCheckCodeWidth(index, width, sb->width);
	memset(store, 0, sizeof(PermMetaStore));
	store->magic = PERM_STORE_MAGIC;
	store->first = InvalidBlockNumber;
	store->last = InvalidBlockNumber;
	if (width > 0)
	{
		store->width = sb->width;
		store->entry_size = sb->esize;
		write_chain(sb, index, fork, 0, sb->esize, &store->first,
					&store->last, &store->pages);
	}
	write_chain(sb, index, fork, 1, sizeof(ItemPointerData),
				&store->null_first, &store->null_last, &store->null_pages);
}

/* Free the build's files */
void
PermStoreBuildEnd(PermStoreBuild *sb)
{
	int			s,
				which;

	for (s = 0; s < sb->nspools; s++)
		for (which = 0; which < 2; which++)
			if (sb->spools[s].file[which])
				BufFileClose(sb->spools[s].file[which]);
	pfree(sb->spools);
	pfree(sb);
}

/*
 * Append an entry to the last page of a chain, locked exclusively, with
 * room: a generic WAL record of the bytes it changes (the entry, pd_lower
 * and the counts), built as generic_redo() replays it (perminsert.c,
 * which logs leaf appends the same way, says why and what guards the
 * format)
 */
static void
append_logged(Relation index, Buffer buf, const char *entry, int esize)
{
	Page		page = BufferGetPage(buf);
	PermPageOpaque opaque = PermPageGetOpaque(page);
	char		delta[4 * 2 * sizeof(OffsetNumber) + PermStoreEntrySize(PERM_MAX_WIDTH) +
					  sizeof(LocationIndex) + 2 * sizeof(uint16) + 2 * sizeof(uint64)];
	char	   *out = delta;
	OffsetNumber frag[2];

	START_CRIT_SECTION();
	frag[0] = (OffsetNumber) (PermPageEntries(page) - (char *) page +
							  (size_t) opaque->nentries * esize);
	page_add(page, entry, esize);
	MarkBufferDirty(buf);
	if (RelationNeedsWAL(index))
	{
		XLogRecPtr	lsn;

		frag[1] = (OffsetNumber) esize;
		memcpy(out, frag, sizeof(frag));
		memcpy(out + sizeof(frag), entry, esize);
		out += sizeof(frag) + esize;
		frag[0] = offsetof(PageHeaderData, pd_lower);
		frag[1] = sizeof(LocationIndex);
		memcpy(out, frag, sizeof(frag));
		memcpy(out + sizeof(frag), &((PageHeader) page)->pd_lower,
			   sizeof(LocationIndex));
		out += sizeof(frag) + sizeof(LocationIndex);
		frag[0] = (OffsetNumber) ((char *) &opaque->nentries - (char *) page);
		frag[1] = 2 * sizeof(uint16);
		memcpy(out, frag, sizeof(frag));
		memcpy(out + sizeof(frag), &opaque->nentries, 2 * sizeof(uint16));
		out += sizeof(frag) + 2 * sizeof(uint16);
		/* the page's range of TIDs: hikey, then lokey */
		frag[0] = (OffsetNumber) ((char *) &opaque->hikey - (char *) page);
		frag[1] = 2 * sizeof(uint64);
		memcpy(out, frag, sizeof(frag));
		memcpy(out + sizeof(frag), &opaque->hikey, 2 * sizeof(uint64));
		out += sizeof(frag) + 2 * sizeof(uint64);

		XLogBeginInsert();
		XLogRegisterBuffer(0, buf, REGBUF_STANDARD);
		XLogRegisterBufData(0, delta, out - delta);
		lsn = XLogInsert(RM_GENERIC_ID, 0);
		PageSetLSN(page, lsn);
	}
	END_CRIT_SECTION();
}

/*
 * A full last page: a new page at the end of the relation takes the entry,
 * the full page's right-link and the metapage's record point at it; one
 * generic WAL record of the three pages
 */
static void
append_new_page(Relation index, Buffer buf, const char *entry, int esize,
				bool nulls)
{
	Buffer		newbuf = PermNewBuffer(index, MAIN_FORKNUM);
	BlockNumber newblk = BufferGetBlockNumber(newbuf);
	Buffer		metabuf = PermReadMetaPage(index, BUFFER_LOCK_EXCLUSIVE);
	PermState  *state;
	GenericXLogState *xlog;
	Page		page,
				newpage,
				metapage;
	PermMetaStore store;

	if (!PermMetaGetStore(BufferGetPage(metabuf), &store))
		PermReportCorruption(index, PERM_METAPAGE_BLKNO,
							 "The metapage lost its record of the code store.");
	if ((nulls ? store.null_last : store.last) != BufferGetBlockNumber(buf))
		PermReportCorruption(index, PERM_METAPAGE_BLKNO,
							 psprintf("The store record names block %u as the last page of a chain whose last page is %u.",
									  nulls ? store.null_last : store.last,
									  BufferGetBlockNumber(buf)));
	if (nulls)
	{
		store.null_last = newblk;
		store.null_pages++;
	}
	else
	{
		store.last = newblk;
		store.pages++;
	}

	xlog = GenericXLogStart(index);
	page = GenericXLogRegisterBuffer(xlog, buf, 0);
	newpage = GenericXLogRegisterBuffer(xlog, newbuf, GENERIC_XLOG_FULL_IMAGE);
	metapage = GenericXLogRegisterBuffer(xlog, metabuf, 0);
	init_page(newpage, nulls);
	page_add(newpage, entry, esize);
	PermPageGetOpaque(page)->rightlink = newblk;
	PermMetaSetStore(metapage, &store);
	GenericXLogFinish(xlog);
	UnlockReleaseBuffer(metabuf);
	UnlockReleaseBuffer(newbuf);
	UnlockReleaseBuffer(buf);

	state = PermGetState(index);
	state->nblocks = Max(state->nblocks, newblk + 1);
	state->store = store;
}

/*
 * aminsert's part: add a row, its code or NULL, to the end of its chain.
 * The chain's last page this backend knows of may have gained right
 * siblings since: they are followed to the end.  Locks: one store page at
 * a time, left to right, then (for a new page) the metapage, as a split
 * locks a child before the metapage.
 */
void
PermStoreAppend(PermState *state, ItemPointer tid,
				const VarBit *code)
{
	Relation	index = state->index;
	bool		nulls = (code == NULL);
	int			esize = entry_size(state, nulls);
	char		entry[PermStoreEntrySize(PERM_MAX_WIDTH)];
	BlockNumber blkno = nulls ? state->store.null_last : state->store.last;
	Buffer		buf;
	int64		steps = 0;

	if (nulls)
		memcpy(entry, tid, sizeof(ItemPointerData));
	else
	{
		PermCheckCodeWidth(index, state->store.width, VARBITLEN(code));
		make_entry(entry, state->store.width, tid, code);
	}

	buf = PermStoreReadPage(state, InvalidBlockNumber, blkno, nulls,
							BUFFER_LOCK_EXCLUSIVE, NULL);
	while (!PermPageIsRightmost(BufferGetPage(buf)))
	{
		BlockNumber from = BufferGetBlockNumber(buf);

		blkno = PermPageGetOpaque(BufferGetPage(buf))->rightlink;
		UnlockReleaseBuffer(buf);
		PermCountStep(state, blkno, &steps);
		buf = PermStoreReadPage(state, from, blkno, nulls,
								BUFFER_LOCK_EXCLUSIVE, NULL);
	}
	if (nulls)
		state->store.null_last = blkno;
	else
		state->store.last = blkno;

	if (page_has_room(BufferGetPage(buf), esize))
	{
		append_logged(index, buf, entry, esize);
		UnlockReleaseBuffer(buf);
	}
	else
		append_new_page(index, buf, entry, esize, nulls);
}

/*
 * The rows the tables do not hold (a NULL code; with leading columns, a
 * NULL code under non-NULL leading values), from the store's chain of
 * them, each handed to callback.  What an ordered scan hands out last, and
 * what a scan of a tenant without a qual on the code adds to the tenant's
 * rows: no table read, no index expression evaluated (README.perm,
 * "Security").  The chain is read page by page under share locks, as a
 * pass over the codes is (permwidestore.c says why that sees every row
 * the scan's snapshot sees).  An index built before simhash 1.6 has no
 * chain: the planner leaves it out of the scans that need one
 * (src/planner/scanpaths.c), and a scan asked all the same is refused.
 */
void
PermStoreReadRowsWithoutCode(PermState *state, BufferAccessStrategy strategy,
							 void (*callback) (void *arg, ItemPointer tid),
							 void *arg)
{
	Relation	index = state->index;
	BlockNumber from = InvalidBlockNumber;
	BlockNumber blkno;
	int64		steps = 0;

	if (!state->has_store)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("index \"%s\" does not list the rows whose code is NULL",
						RelationGetRelationName(index)),
				 errdetail("It was built by a version of simhash before 1.6; the scan would have to read the table."),
				 errhint("REINDEX the index.")));
	blkno = state->store.null_first;
	while (blkno != InvalidBlockNumber)
	{
		Buffer		buf;
		Page		page;
		int			n,
					i;

		CHECK_FOR_INTERRUPTS();
		buf = PermStoreReadPage(state, from, blkno, true, BUFFER_LOCK_SHARE,
								strategy);
		page = BufferGetPage(buf);
		n = PermPageGetOpaque(page)->nentries;
		for (i = 0; i < n; i++)
		{
			ItemPointerData tid;

			memcpy(&tid, PermPageEntries(page) + i * sizeof(ItemPointerData),
				   sizeof(tid));
			callback(arg, &tid);
		}
		from = blkno;
		blkno = PermPageGetOpaque(page)->rightlink;
		UnlockReleaseBuffer(buf);
		if (blkno != InvalidBlockNumber)
			PermCountStep(state, blkno, &steps);
	}
}

/* Remove the dead entries of one page of a chain, keeping the others' order */
static void
vacuum_page(Relation index, Buffer buf, int esize,
			IndexBulkDeleteCallback callback, void *callback_state)
{
	Page		page = BufferGetPage(buf);
	int			n = PermPageGetOpaque(page)->nentries;
	int			tid_off = esize - (int) sizeof(ItemPointerData);
	GenericXLogState *xlog;
	char	   *entries;
	int			i,
				kept;

	/* most pages have nothing to remove: look before starting a record */
	for (i = 0; i < n; i++)
	{
		ItemPointerData tid;

		memcpy(&tid, PermPageEntries(page) + (size_t) i * esize + tid_off,
			   sizeof(tid));
		if (callback(&tid, callback_state))
			break;
	}
	if (i == n)
		return;

	xlog = GenericXLogStart(index);
	page = GenericXLogRegisterBuffer(xlog, buf, 0);
	entries = PermPageEntries(page);
	for (i = 0, kept = 0; i < n; i++)
	{
		ItemPointerData tid;

		memcpy(&tid, entries + (size_t) i * esize + tid_off, sizeof(tid));
		if (callback(&tid, callback_state))
			continue;
		if (kept != i)
			memmove(entries + (size_t) kept * esize,
					entries + (size_t) i * esize, esize);
		kept++;
	}
	PermPageGetOpaque(page)->nentries = kept;
	PermPageGetOpaque(page)->nsorted = kept;
	((PageHeader) page)->pd_lower = (entries - (char *) page) + kept * esize;
	GenericXLogFinish(xlog);
}

/*
 * ambulkdelete's part: remove the dead entries of both chains, page by
 * page along the right-links.  A page added at the end meanwhile holds
 * only rows inserted after VACUUM began, none of them dead to it.
 */
void
PermStoreVacuum(Relation index, BufferAccessStrategy strategy,
				IndexBulkDeleteCallback callback, void *callback_state)
{
	PermState  *state = PermGetState(index);
	int			c;

	if (!state->has_store)
		return;
	for (c = 0; c < 2; c++)
	{
		bool		nulls = (c == 1);
		int			esize = entry_size(state, nulls);
		BlockNumber from = InvalidBlockNumber;
		BlockNumber blkno = nulls ? state->store.null_first : state->store.first;
		int64		steps = 0;

		/* an index without codes in its store has no chain of them */
		while (blkno != InvalidBlockNumber)
		{
			Buffer		buf;

			SimhashVacuumDelayPoint();
			buf = PermStoreReadPage(state, from, blkno, nulls,
									BUFFER_LOCK_EXCLUSIVE, strategy);
			vacuum_page(index, buf, esize, callback, callback_state);
			from = blkno;
			blkno = PermPageGetOpaque(BufferGetPage(buf))->rightlink;
			UnlockReleaseBuffer(buf);
			if (blkno != InvalidBlockNumber)
				PermCountStep(state, blkno, &steps);
		}
	}
}

/*
 * simhash_perm_check's part: walk one chain, checking every page, that
 * the chain ends where the metapage says, and (codes) that no entry has a
 * bit set beyond the width; *pages and *entries count them.  callback, if
 * not NULL, sees every entry: its block and number in the page (for the
 * caller's own reports), its TID and its code's words (NULL for the chain
 * of NULL codes).  The caller holds a lock that keeps writers out.
 */
void
PermStoreCheck(Relation index, bool nulls, int64 *pages, int64 *entries,
			   void (*callback) (void *arg, BlockNumber blkno, int entry,
								 ItemPointer tid, const char *code),
			   void *arg)
{
	PermState  *state = PermGetState(index);
	Buffer		metabuf = PermReadMetaPage(index, BUFFER_LOCK_SHARE);
	PermMetaStore store;
	int			esize;
	int			width;
	int			words;
	BlockNumber from = InvalidBlockNumber;
	BlockNumber blkno;
	BlockNumber last;
	int64		steps = 0;

	if (!PermMetaGetStore(BufferGetPage(metabuf), &store))
		elog(ERROR, "index \"%s\" has no code store",
			 RelationGetRelationName(index));
	UnlockReleaseBuffer(metabuf);
	esize = nulls ? (int) sizeof(ItemPointerData) : store.entry_size;
	width = store.width;
	words = PermStoreWords(width);
	blkno = nulls ? store.null_first : store.first;
	last = nulls ? store.null_last : store.last;
	*pages = 0;
	*entries = 0;
	/* an index without codes in its store has no chain of them */
	while (blkno != InvalidBlockNumber || last != InvalidBlockNumber)
	{
		Buffer		buf;
		Page		page;
		int			n,
					i;

		CHECK_FOR_INTERRUPTS();
		buf = PermStoreReadPage(state, from, blkno, nulls, BUFFER_LOCK_SHARE,
								NULL);
		page = BufferGetPage(buf);
		n = PermPageGetOpaque(page)->nentries;
		(*pages)++;
		*entries += n;
		for (i = 0; i < n; i++)
		{
			const char *e = PermPageEntries(page) + (size_t) i * esize;
			ItemPointerData tid;

			memcpy(&tid, e + esize - sizeof(ItemPointerData), sizeof(tid));
			if (!ItemPointerIsValid(&tid))
				PermReportCorruption(index, blkno,
									 psprintf("Entry %d of the code store holds an invalid heap TID.",
											  i));
			if (!nulls && width % 64 != 0)
			{
				uint64		tail;

				memcpy(&tail, e + (words - 1) * sizeof(uint64), sizeof(tail));
				/* bits beyond the width: the word's last bytes, big-endian */
				if ((pg_ntoh64(tail) << (width % 64)) != 0)
					PermReportCorruption(index, blkno,
										 psprintf("Entry %d of the code store has bits set beyond the codes' %d.",
												  i, width));
			}
			if (callback)
				callback(arg, blkno, i, &tid, nulls ? NULL : e);
			/*
			 * the page's range of TIDs, by which a TID's code is found
			 * (the chain of codes; after the caller has seen the entry,
			 * which names a TID the table cannot hold first)
			 */
			if (!nulls && PermPageGetOpaque(page)->hikey != 0 &&
				(PermTidNumber(&tid) < PermPageGetOpaque(page)->lokey ||
				 PermTidNumber(&tid) > PermPageGetOpaque(page)->hikey))
				PermReportCorruption(index, blkno,
									 psprintf("Entry %d of the code store holds heap TID (%u,%u), outside the page's range of TIDs.",
											  i, ItemPointerGetBlockNumber(&tid),
											  ItemPointerGetOffsetNumber(&tid)));
		}
		from = blkno;
		blkno = PermPageGetOpaque(page)->rightlink;
		UnlockReleaseBuffer(buf);
		if (blkno == InvalidBlockNumber)
			break;
		PermCountStep(state, blkno, &steps);
	}
	if (*pages != (nulls ? store.null_pages : store.pages))
		PermReportCorruption(index, PERM_METAPAGE_BLKNO,
							 psprintf("The store record counts %u pages in the chain of %s, which has %lld.",
									  nulls ? store.null_pages : store.pages,
									  nulls ? "NULL codes" : "codes",
									  (long long) *pages));
	if (from != last)
		PermReportCorruption(index, PERM_METAPAGE_BLKNO,
							 psprintf("The store record names block %u as the last page of the chain of %s, which ends at block %u.",
									  last, nulls ? "NULL codes" : "codes", from));
}
