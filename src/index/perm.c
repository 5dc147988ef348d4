/*-------------------------------------------------------------------------
 *
 * perm.c
 *		simhash_perm: the descriptor of an index (PermState), built once per
 *		relcache entry from the catalog and the metapage, which it checks.
 *
 * Every callback reads what kind of index it serves from the descriptor:
 * the code's column and kind (simhash64, bigint, bit(n), varbit), its
 * width, the leading (tenant) columns, the options, the layout of the
 * tables, the code store, and the engine that serves it (perm64.h: the
 * 64-bit permuted tables; permwide.h: the substrings of bit(n) codes).
 * The catalog's part (PermCodeColumn, PermTenantColumns, PermIndexIsWide)
 * is also asked by the build, before there is a metapage to read; the
 * options are permoptions.c's.
 *
 * The metapage is the one page read before the descriptor exists, so it
 * is checked here, whole, against the catalog: every field, the tables'
 * layout against what the build writes for the index's options, and the
 * records after the tables (growth, code, store).
 *
 * Below this file: the two layouts' arithmetic (permlayout.c,
 * permwidelayout.c), which knows no relation.
 *
 * IDENTIFICATION
 *	  src/index/perm.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/varbit.h"

#include "index/perm.h"

/*
 * The metapage's error, as PermReportCorruption (tree/permpage.c) reports
 * any other page's: the index, block 0, and what is wrong
 */
pg_noreturn static void
meta_report(Relation index, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("index \"%s\" contains a corrupted page at block %u",
					RelationGetRelationName(index), PERM_METAPAGE_BLKNO),
			 errdetail_internal("%s", detail),
			 errhint("Please REINDEX it.")));
}


/* Where the growth record lies in a metapage of ntables tables */
static char *
growth_location(Page metapage, int ntables)
{
	PermMetaPage meta = PermPageGetMeta(metapage);

	return (char *) metapage +
		TYPEALIGN(8, (char *) &meta->tables[ntables] - (char *) metapage);
}

/* Where the code record of an index on bit(n) codes lies: after growth */
static char *
code_location(Page metapage, int ntables)
{
	return growth_location(metapage, ntables) + sizeof(PermMetaGrowth);
}

/* Where the store record lies: after the code record */
static char *
store_location(Page metapage, int ntables)
{
	return code_location(metapage, ntables) + sizeof(PermMetaCode);
}

/*
 * The metapage's error: the index, block 0, and what is wrong (a field, its
 * value, and what the other fields imply)
 */
static void
meta_corrupt(Relation index, const char *fmt,...)
pg_attribute_printf(2, 3);

static void
meta_corrupt(Relation index, const char *fmt,...)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&buf, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&buf, needed);
	}
	meta_report(index, buf.data);
}

/*
 * The code record of an index laid out by multi-index hashing (bit(n)
 * codes, leading columns), against the index's columns and the rest of the
 * metapage; *expect is set to the layout the build writes for its width,
 * leading columns, radius and substrings (permwidelayout.c), to compare the
 * tables with.
 */
static void
check_code_record(Relation index, int column, PermMetaPage meta,
				  const PermMetaCode *code, PermLayout *expect)
{
	int			tenants = column;	/* the leading columns come first */
	bool		bits = index->rd_opcintype[column] == BITOID;
	int			declared = bits ?
		TupleDescAttr(RelationGetDescr(index), column)->atttypmod : 64;
	int			extra = tenants > 0 ? PERM_TENANT_EXTRA_BITS : 0;
	int			fewest = PermWideFewestSubstrings(code->width, tenants);
	int			most = PermWideMostSubstrings(code->width);
	int			tail = PermWideTail(tenants, code->radius);

	if (code->tenants != tenants)
		meta_corrupt(index, "Code record: tenants = %u, but the index has %d leading columns.",
					 code->tenants, tenants);
	if (code->width < 1 || code->width > PERM_MAX_WIDTH)
		meta_corrupt(index, "Code record: width = %u, outside 1 to %d.",
					 code->width, PERM_MAX_WIDTH);
	if (declared > 0 && code->width != declared)
		meta_corrupt(index, "Code record: width = %u, but the index's column is %s%d%s.",
					 code->width, bits ? "bit(" : "a ", declared,
					 bits ? ")" : "-bit fingerprint");
	if (code->radius != meta->max_distance)
		meta_corrupt(index, "Code record: radius = %u, but max_distance = %u.",
					 code->radius, meta->max_distance);
	if (code->radius > (bits ? code->width : PERM_MAX_MAX_DISTANCE))
		meta_corrupt(index, "Code record: radius = %u, more than %s (%d).",
					 code->radius, bits ? "the width" : "max_distance may be",
					 bits ? code->width : PERM_MAX_MAX_DISTANCE);
	if (code->substrings != meta->ntables || meta->blocks != meta->ntables)
		meta_corrupt(index, "Code record: substrings = %u, but ntables = %u and blocks = %u.",
					 code->substrings, meta->ntables, meta->blocks);
	if (code->substrings < fewest || code->substrings > most)
		meta_corrupt(index, "Code record: substrings = %u, but codes of %u bits after %d leading columns take %d to %d.",
					 code->substrings, code->width, tenants, fewest, most);

	/*
	 * A tenant's keys changed in development of 1.6 (a 32-bit tenant hash,
	 * no extra bits, extra then 0): such an index would be read wrongly,
	 * not just slowly
	 */
	if (tenants > 0 && code->extra == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("index \"%s\" was built by a development version of simhash 1.6",
						RelationGetRelationName(index)),
				 errhint("REINDEX it.")));
	if (code->extra != extra)
		meta_corrupt(index, "Code record: extra = %u, but %d leading columns imply %d.",
					 code->extra, tenants, extra);
	if (code->tail != tail)
		meta_corrupt(index, "Code record: tail = %u, but radius %u and %d leading columns imply %d.",
					 code->tail, code->radius, tenants, tail);
	PermWideFillLayout(code->width, tenants, code->radius, code->substrings,
					   code->tail, expect);
}

/*
 * The layout of an index on 64-bit fingerprints: options in range, the
 * table count they imply, every bit in a block and the blocks' sizes (as
 * equal as possible, the larger first).  *expect is set to the tables those
 * blocks make (permlayout.c), to compare the tables with.
 */
static void
check_fingerprint_layout(Relation index, PermMetaPage meta, PermLayout *expect)
{
	int			size[PERM_MAX_BLOCKS] = {0};
	int			want[PERM_MAX_BLOCKS];
	int			ntables;
	int			b,
				i;

	if (meta->max_distance > PERM_MAX_MAX_DISTANCE)
		meta_corrupt(index, "max_distance = %u, more than %d.",
					 meta->max_distance, PERM_MAX_MAX_DISTANCE);
	if (meta->blocks <= meta->max_distance || meta->blocks > PERM_MAX_BLOCKS)
		meta_corrupt(index, "blocks = %u, but max_distance = %u takes %u to %d blocks.",
					 meta->blocks, meta->max_distance, meta->max_distance + 1,
					 PERM_MAX_BLOCKS);
	/* what the blocks imply (permlayout.c), then the fields against it */
	ntables = PermCountTables(meta->blocks, meta->max_distance);
	for (b = 0; b < meta->blocks; b++)
		want[b] = PermBlockSize(meta->blocks, b);
	if (meta->ntables != ntables)
		meta_corrupt(index, "ntables = %u, but blocks = %u and max_distance = %u imply %d.",
					 meta->ntables, meta->blocks, meta->max_distance, ntables);
	for (i = 0; i < 64; i++)
	{
		if (meta->block_of_bit[i] >= meta->blocks)
			meta_corrupt(index, "Bit %d is in block %u of %u.", i,
						 meta->block_of_bit[i], meta->blocks);
		size[meta->block_of_bit[i]]++;
	}
	for (b = 0; b < meta->blocks; b++)
		if (size[b] != want[b])
			meta_corrupt(index, "Block %d holds %d bits in block_of_bit, but %u blocks of 64 bits imply %d.",
						 b, size[b], meta->blocks, want[b]);

	memset(expect, 0, sizeof(PermLayout));
	expect->max_distance = meta->max_distance;
	expect->blocks = meta->blocks;
	memcpy(expect->block_of_bit, meta->block_of_bit, 64);
	PermLayoutTables(expect);
}

/*
 * The growth record (permgrow.c) against the rest of the metapage and the
 * relation's length.  A first layout starts at block 1 and later ones
 * after it; a 64-bit layout chosen from PERM_GROWTH_FINAL_ROWS rows or
 * more is looked at no more.
 */
static void
check_growth(Relation index, PermMetaPage meta, const PermMetaGrowth *growth,
			 const PermMetaCode *code, BlockNumber nblocks)
{
	bool		final = growth->layout_rows >= PERM_GROWTH_FINAL_ROWS;
	int			t;

	if (growth->layout_start < 1 || growth->layout_start > nblocks)
		meta_corrupt(index, "Its layout starts at block %u of %u.",
					 growth->layout_start, nblocks);
	if ((growth->generation == 0) != (growth->layout_start == 1))
		meta_corrupt(index, "Growth record: layout_start = %u, but generation = %u (a first layout starts at block 1, later ones after it).",
					 growth->layout_start, growth->generation);

	/*
	 * A 64-bit layout is final from PERM_GROWTH_FINAL_ROWS rows on.  An
	 * index of codes looks at its layout again whenever its pages grow
	 * fourfold (permgrow.c), unless its substrings were given: any
	 * next_check, and any layout_rows (the rows of its last look, whether
	 * or not that changed the layout), may be right.
	 */
	if (code == NULL && final != (growth->next_check == InvalidBlockNumber))
		meta_corrupt(index, "Growth record: next_check = %u, but layout_rows = " UINT64_FORMAT " implies %s.",
					 growth->next_check, growth->layout_rows,
					 final ? "none (the layout is final)" : "one");
	for (t = 0; t < meta->ntables; t++)
		if (meta->tables[t].root < growth->layout_start)
			meta_corrupt(index, "Table %d: root = %u, but its layout starts at block %u.",
						 t, meta->tables[t].root, growth->layout_start);
}

/*
 * The store record (permstore.c) against the code record and the
 * relation.  Every index built by simhash 1.6 has one.  An index on
 * bit(n) codes keeps both chains: its width is the codes', its entry size
 * the one that width implies.  An index on 64-bit fingerprints (code NULL
 * here, or with leading columns a 64-bit code) keeps the chain of rows
 * without a code alone: width and entry size 0, no chain of codes.  The ends of the chains are pages of the relation,
 * not the metapage.
 */
static void
check_store_record(Relation index, Page page, const PermMetaCode *code,
				   BlockNumber nblocks)
{
	PermMetaStore store;
	BlockNumber ends[4];
	const char *names[4] = {"first", "last", "null_first", "null_last"};
	bool		codes;
	int			i;

	if (!PermMetaGetStore(page, &store))
		meta_corrupt(index, "Its store record's magic is %08X, expected %08X.",
					 store.magic, PERM_STORE_MAGIC);

	/*
	 * bit(n) codes keep their codes, 64-bit fingerprints (and, with leading
	 * columns, indexes built before tenants' codes were kept) do not
	 */
	codes = code != NULL && (code->tenants == 0 || store.width != 0);
	if (!codes)
	{
		/* the list of rows without a code alone */
		if (store.width != 0 || store.entry_size != 0 || store.pages != 0 ||
			store.first != InvalidBlockNumber || store.last != InvalidBlockNumber)
			meta_corrupt(index, "Store record: width %u, entry_size %u, %u pages of codes from %u to %u, but an index on %s keeps no codes in its store.",
						 store.width, store.entry_size, store.pages,
						 store.first, store.last,
						 code == NULL ? "64-bit fingerprints" : "codes after leading columns");
	}
	else
	{
		if (store.width != code->width)
			meta_corrupt(index, "Store record: width = %u, but the code record's is %u.",
						 store.width, code->width);
		if (store.entry_size != PermStoreEntrySize(code->width))
			meta_corrupt(index, "Store record: entry_size = %u, but codes of %u bits take %d.",
						 store.entry_size, code->width,
						 PermStoreEntrySize(code->width));
	}
	ends[0] = store.first;
	ends[1] = store.last;
	ends[2] = store.null_first;
	ends[3] = store.null_last;
	for (i = codes ? 0 : 2; i < 4; i++)
		if (ends[i] == PERM_METAPAGE_BLKNO || ends[i] >= nblocks)
			meta_corrupt(index, "Store record: %s = %u, but the index has blocks 1 to %u.",
						 names[i], ends[i], nblocks - 1);
	if ((codes && store.pages < 1) || store.null_pages < 1 ||
		(uint64) store.pages + store.null_pages >= nblocks)
		meta_corrupt(index, "Store record: %u pages of codes and %u of NULL codes, but the index has %u blocks.",
					 store.pages, store.null_pages, nblocks);
	if (codes &&
		(store.first == store.null_first || store.last == store.null_last))
		meta_corrupt(index, "Store record: the chains of codes (%u to %u) and of NULL codes (%u to %u) share a page.",
					 store.first, store.last, store.null_first, store.null_last);
}

/*
 * Check the metapage, whenever it is read: identification, version, the
 * records its pd_lower covers (a growth record, a code record exactly when
 * the index's columns call for one), and every field against what the
 * others imply.  A field in range that disagrees with the rest would pass
 * every page check and have queries compute keys their tables do not hold
 * (a bit(n) index's tail, a table's bit order), missing rows silently; so
 * the layout the build writes for the primary fields (64-bit: max_distance,
 * blocks and block_of_bit; bit(n): width, leading columns, radius and
 * substrings) is computed again, and every table's prefix length and bit
 * order compared with it.  Then the roots: inside the relation, in the
 * current layout's blocks.
 */
static void
PermCheckMetaPage(Relation index, Page page)
{
	PermMetaGrowth growth;
	PermMetaCode code;
	PermMetaPage meta = PermPageGetMeta(page);
	PermPageOpaque opaque;
	PermLayout *expect;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	LocationIndex pd_lower = ((PageHeader) page)->pd_lower;
	int			column = PermCodeColumn(index);
	bool		wide = PermIndexIsWide(index);
	bool		has_growth;
	bool		has_code;
	int			t,
				i;

	/*
	 * The special space is found through pd_special: check that first (an
	 * assert-enabled server checks it as PageGetSpecialPointer reads it).
	 */
	if (PageIsNew(page) ||
		((PageHeader) page)->pd_special != BLCKSZ - MAXALIGN(sizeof(PermPageOpaqueData)))
		opaque = NULL;
	else
		opaque = PermPageGetOpaque(page);
	if (opaque == NULL || meta->magic != PERM_MAGIC ||
		opaque->page_id != PERM_PAGE_ID || opaque->flags != PERM_META)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not a simhash_perm index",
						RelationGetRelationName(index)),
				 errdetail("Its metapage (block 0) does not identify it as one."),
				 errhint("Please REINDEX it.")));
	if (meta->version != PERM_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has simhash_perm layout version %u, expected %u",
						RelationGetRelationName(index), meta->version,
						PERM_VERSION),
				 errhint("REINDEX the index.")));
	if (meta->ntables < 1 || meta->ntables > PERM_MAX_TABLES ||
		(pd_lower != (char *) &meta->tables[meta->ntables] - (char *) page &&
		 pd_lower != growth_location(page, meta->ntables) + sizeof(PermMetaGrowth) - (char *) page &&
		 pd_lower != code_location(page, meta->ntables) + sizeof(PermMetaCode) - (char *) page &&
		 pd_lower != store_location(page, meta->ntables) + sizeof(PermMetaStore) - (char *) page))
		meta_report(index,
							 psprintf("max_distance %u, blocks %u, %u tables.",
									  meta->max_distance, meta->blocks,
									  meta->ntables));
	if (meta->algorithm != 1)
		meta_corrupt(index, "algorithm = %u, but the fingerprints of every index are of algorithm 1.",
					 meta->algorithm);

	/* the records that pd_lower covers must be there */
	has_growth = PermMetaGetGrowth(page, &growth);
	has_code = PermMetaGetCode(page, &code);
	if (!has_growth && pd_lower > (char *) &meta->tables[meta->ntables] - (char *) page)
		meta_corrupt(index, "Its growth record's magic is %08X, expected %08X.",
					 growth.magic, PERM_GROWTH_MAGIC);
	if (wide && !has_code)
		meta_report(index,
							 "The index's columns call for a record of its codes, which the metapage lacks.");
	if (!wide && has_code)
		meta_corrupt(index, "It holds a record of codes, but the index's column is a 64-bit fingerprint.");
	if (!wide && pd_lower >= code_location(page, meta->ntables) + sizeof(PermMetaCode) - (char *) page &&
		pd_lower != store_location(page, meta->ntables) + sizeof(PermMetaStore) - (char *) page)
		meta_corrupt(index, "pd_lower %u covers part of a record, but an index of 64-bit fingerprints has a growth record and a store record only.",
					 (unsigned) pd_lower);
	if (wide && !has_growth)
		meta_corrupt(index, "It lacks the growth record that every index of codes has.");

	expect = palloc(sizeof(PermLayout));
	if (wide)
		check_code_record(index, column, meta, &code, expect);
	else
		check_fingerprint_layout(index, meta, expect);
	Assert(expect->ntables == meta->ntables);

	/* bit(n): every bit in block 0 */
	if (memcmp(meta->block_of_bit, expect->block_of_bit, 64) != 0)
		for (i = 0; i < 64; i++)
			if (meta->block_of_bit[i] != expect->block_of_bit[i])
				meta_corrupt(index, "Bit %d is in block %u; an index of codes has every bit in block %u.",
							 i, meta->block_of_bit[i], expect->block_of_bit[i]);

	for (t = 0; t < meta->ntables; t++)
	{
		PermTable  *tab = &meta->tables[t];
		uint64		seen = 0;

		for (i = 0; i < 64; i++)
			if (tab->bits[i] < 64)
				seen |= UINT64CONST(1) << tab->bits[i];
		if (seen != PG_UINT64_MAX)
			meta_report(index,
								 psprintf("Table %d: its bit order is not a permutation of the 64 bits.",
										  t));
		if (tab->prefix_bits < 1 || tab->prefix_bits > 64)
			meta_report(index,
								 psprintf("Table %d: its prefix has %u bits.",
										  t, tab->prefix_bits));
		if (tab->prefix_bits != expect->prefix_bits[t] && wide)
			meta_corrupt(index, "Table %d: prefix_bits = %u, but substring %d of a code of %u bits cut in %u has %d bits.",
						 t, tab->prefix_bits, t, code.width, code.substrings,
						 expect->prefix_bits[t]);
		if (tab->prefix_bits != expect->prefix_bits[t])
			meta_corrupt(index, "Table %d: prefix_bits = %u, but the blocks it keys on hold %d bits.",
						 t, tab->prefix_bits, expect->prefix_bits[t]);
		if (memcmp(tab->bits, expect->bits[t], 64) != 0)
			for (i = 0; i < 64; i++)
				if (tab->bits[i] != expect->bits[t][i])
					meta_corrupt(index, "Table %d: bits[%d] = %u, but %s puts bit %u there.",
								 t, i, tab->bits[i],
								 wide ? "a table of substrings" : "its blocks' layout",
								 expect->bits[t][i]);
		if (tab->root == PERM_METAPAGE_BLKNO || tab->root >= nblocks ||
			tab->root_level > PERM_MAX_LEVEL)
			meta_report(index,
								 psprintf("Table %d: root block %u at level %u (the index has %u blocks).",
										  t, tab->root, tab->root_level, nblocks));
	}
	if (has_growth)
		check_growth(index, meta, &growth, has_code ? &code : NULL, nblocks);
	if (pd_lower == store_location(page, meta->ntables) + sizeof(PermMetaStore) - (char *) page)
		check_store_record(index, page, has_code ? &code : NULL, nblocks);
	pfree(expect);
}

/* Read, lock and check the metapage */
Buffer
PermReadMetaPage(Relation index, int lockmode)
{
	Buffer		buf;

	if (RelationGetNumberOfBlocks(index) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is empty", RelationGetRelationName(index)),
				 errhint("Please REINDEX it.")));
	buf = ReadBuffer(index, PERM_METAPAGE_BLKNO);
	LockBuffer(buf, lockmode);
	PermCheckMetaPage(index, BufferGetPage(buf));
	return buf;
}

/*
 * A root of a table to descend from, and its level: the cached one if it
 * reaches target_level, else the current one from the metapage.
 */
BlockNumber
PermGetRoot(PermState *state, int table, int target_level,
			int *level)
{
	Relation	index = state->index;
	Buffer		buf;
	PermMetaPage meta;

	if (table >= state->layout.ntables)
		elog(ERROR, "simhash_perm table %d does not exist in index \"%s\"",
			 table, RelationGetRelationName(index));
	if (state->root_level[table] < target_level ||
		state->root[table] == InvalidBlockNumber)
	{
		buf = PermReadMetaPage(index, BUFFER_LOCK_SHARE);
		meta = PermPageGetMeta(BufferGetPage(buf));
		if (meta->ntables != state->layout.ntables)
			meta_report(index,
								 psprintf("It now lists %u tables, %d before.",
										  meta->ntables, state->layout.ntables));
		state->root[table] = meta->tables[table].root;
		state->root_level[table] = meta->tables[table].root_level;
		UnlockReleaseBuffer(buf);
	}
	*level = state->root_level[table];
	return state->root[table];
}

/* Copy of the table roots and levels as they are now */
void
PermMetaSnapshot(Relation index, PermTable *tables, int *ntables)
{
	Buffer		buf = PermReadMetaPage(index, BUFFER_LOCK_SHARE);
	PermMetaPage meta = PermPageGetMeta(BufferGetPage(buf));

	*ntables = meta->ntables;
	memcpy(tables, meta->tables, meta->ntables * sizeof(PermTable));
	UnlockReleaseBuffer(buf);
}


/*
 * Read the metapage's growth record into *growth; false when it has none
 * (an index built before simhash 1.6).  pd_lower covers the record only
 * where one was written.
 */
bool
PermMetaGetGrowth(Page metapage, PermMetaGrowth *growth)
{
	char	   *at = growth_location(metapage, PermPageGetMeta(metapage)->ntables);

	if (at + sizeof(PermMetaGrowth) > (char *) metapage + ((PageHeader) metapage)->pd_lower)
		return false;
	memcpy(growth, at, sizeof(PermMetaGrowth));
	return growth->magic == PERM_GROWTH_MAGIC;
}

/*
 * Write the growth record into a metapage, and cover it with pd_lower (a
 * code record after it stays covered)
 */
void
PermMetaSetGrowth(Page metapage, const PermMetaGrowth *growth)
{
	char	   *at = growth_location(metapage, PermPageGetMeta(metapage)->ntables);
	LocationIndex end = (at + sizeof(PermMetaGrowth)) - (char *) metapage;

	memcpy(at, growth, sizeof(PermMetaGrowth));
	((PageHeader) metapage)->pd_lower = Max(((PageHeader) metapage)->pd_lower, end);
}

/*
 * Read the code record of an index on bit(n) codes into *code; false for
 * an index on 64-bit fingerprints, which has none
 */
bool
PermMetaGetCode(Page metapage, PermMetaCode *code)
{
	char	   *at = code_location(metapage, PermPageGetMeta(metapage)->ntables);

	if (at + sizeof(PermMetaCode) > (char *) metapage + ((PageHeader) metapage)->pd_lower)
		return false;
	memcpy(code, at, sizeof(PermMetaCode));
	return code->magic == PERM_CODE_MAGIC;
}

/* Write the code record after the growth record, and cover it */
void
PermMetaSetCode(Page metapage, const PermMetaCode *code)
{
	char	   *at = code_location(metapage, PermPageGetMeta(metapage)->ntables);

	memcpy(at, code, sizeof(PermMetaCode));
	((PageHeader) metapage)->pd_lower = (at + sizeof(PermMetaCode)) - (char *) metapage;
}

/*
 * Read the metapage's store record into *store; false for an index that
 * has none (64-bit fingerprints, leading columns, or built before the
 * store)
 */
bool
PermMetaGetStore(Page metapage, PermMetaStore *store)
{
	char	   *at = store_location(metapage, PermPageGetMeta(metapage)->ntables);

	if (at + sizeof(PermMetaStore) > (char *) metapage + ((PageHeader) metapage)->pd_lower)
	{
		memset(store, 0, sizeof(PermMetaStore));
		return false;
	}
	memcpy(store, at, sizeof(PermMetaStore));
	return store->magic == PERM_STORE_MAGIC;
}

/*
 * Write the store record after the code record (or its zeroed place, in an
 * index on 64-bit fingerprints), and cover it
 */
void
PermMetaSetStore(Page metapage, const PermMetaStore *store)
{
	char	   *at = store_location(metapage, PermPageGetMeta(metapage)->ntables);
	PermMetaCode code;

	/*
	 * an index on 64-bit fingerprints has no code record: its place stays
	 * zeroed, so that no stale bytes read as one
	 */
	if (!PermMetaGetCode(metapage, &code))
		memset(code_location(metapage, PermPageGetMeta(metapage)->ntables), 0,
			   sizeof(PermMetaCode));
	memcpy(at, store, sizeof(PermMetaStore));
	((PageHeader) metapage)->pd_lower = (at + sizeof(PermMetaStore)) - (char *) metapage;
}


/*
 * What the catalog says of an index, for the descriptor (and for the
 * build, before there is a metapage): which column is the code, how many
 * leading columns come before it, and whether the layout is in substrings
 */

/* The code's column of the index (0-based): the last key column */
int
PermCodeColumn(Relation index)
{
	return IndexRelationGetNumberOfKeyAttributes(index) - 1;
}

/*
 * Leading equality columns of the index (permtenant.c): all key columns
 * but the last
 */
int
PermTenantColumns(Relation index)
{
	return IndexRelationGetNumberOfKeyAttributes(index) - 1;
}

/*
 * Is the index laid out by multi-index hashing?  An index on bit(n) codes
 * is, and one with leading equality columns, whatever its code
 * (permtenant.c).
 */
bool
PermIndexIsWide(Relation index)
{
	return index->rd_opcintype[PermCodeColumn(index)] == BITOID ||
		PermTenantColumns(index) > 0;
}


/*
 * The per-index state and its lifetime.
 *
 * The state lives in a memory context of its own under the relcache
 * entry's rd_indexcxt, and rd_amcache points at a small PermStateRef that
 * names it, not at the state itself.  The relcache pfree()s rd_amcache at
 * every invalidation of the index (VACUUM's new statistics, ANALYZE, DDL),
 * and a backend may accept one in the middle of an index call: any
 * catalog lookup that misses its cache takes a lock, and taking a lock
 * processes invalidations (the tenant's hash function looked up by the
 * type cache, a row's index expression, the owner's identity).  The call
 * up the stack still holds the state it began with; if the invalidation
 * freed the state, the call would go on in freed memory (a crash that
 * debug_discard_caches = 1 makes certain, and that the sanitizers caught
 * under concurrent inserts and VACUUM).
 *
 * So an invalidation frees only the reference.  The next PermGetState finds
 * rd_amcache empty, retires the state it named (moves its context under
 * TopTransactionContext, so that it goes at the end of the transaction,
 * when no index call can still hold it) and reads the metapage into a new
 * one.  A call holding the old state finishes with it, as with a snapshot:
 * it describes the index as it was when the call began.  A transaction
 * keeps one retired state per invalidation of the index it sees, until it
 * ends.
 */
typedef struct PermStateRef
{
	PermState  *state;
} PermStateRef;

#define PERM_STATE_CONTEXT_NAME "simhash_perm state"

/*
 * Let every state context under the index's rd_indexcxt (those no
 * reference names any more) go at the end of the transaction; outside one
 * no call can hold them, and they go at once
 */
static void
retire_states(Relation index)
{
	MemoryContext child;
	MemoryContext next;

	for (child = index->rd_indexcxt->firstchild; child != NULL; child = next)
	{
		next = child->nextchild;
		if (child->name == NULL ||
			strcmp(child->name, PERM_STATE_CONTEXT_NAME) != 0)
			continue;
		if (TopTransactionContext != NULL)
			MemoryContextSetParent(child, TopTransactionContext);
		else
			MemoryContextDelete(child);
	}
}

/*
 * Drop the index's cached state, after its layout changed (permgrow.c):
 * the next PermGetState reads the metapage again.  A caller up the stack
 * may still hold the old state: it is retired, not freed.
 */
void
PermForgetState(Relation index)
{
	PermStateRef *ref = (PermStateRef *) index->rd_amcache;

	if (ref == NULL)
		return;
	index->rd_amcache = NULL;
	pfree(ref);
	retire_states(index);
}

/*
 * Index-wide state, read from the metapage once and kept until the
 * relcache entry is invalidated (see above)
 */
PermState *
PermGetState(Relation index)
{
	PermStateRef *ref = (PermStateRef *) index->rd_amcache;
	PermState  *state;
	MemoryContext cxt;
	Buffer		buf;
	Page		page;
	PermMetaPage meta;
	PermMetaCode code;
	int			t;

	if (ref != NULL)
		return ref->state;

	/* an invalidation freed the reference: its state may still be in use */
	retire_states(index);

	buf = PermReadMetaPage(index, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	meta = PermPageGetMeta(page);

	cxt = AllocSetContextCreate(index->rd_indexcxt, PERM_STATE_CONTEXT_NAME,
								ALLOCSET_SMALL_SIZES);
	state = MemoryContextAllocZero(cxt, sizeof(PermState));
	state->index = index;
	state->cxt = cxt;
	state->nblocks = RelationGetNumberOfBlocks(index);
	state->has_growth = PermMetaGetGrowth(page, &state->growth);
	state->has_store = PermMetaGetStore(page, &state->store);
	state->has_codes = state->has_store && state->store.width > 0;
	if (PermMetaGetCode(page, &code))
	{
		state->layout.width = code.width;
		state->layout.tenants = code.tenants;
		state->layout.tail = code.tail;
		state->layout.extra = code.extra;
	}
	state->code_column = PermCodeColumn(index);
	state->code_bits = index->rd_opcintype[state->code_column] == BITOID;
	/* an index with a code record is laid out in substrings */
	state->engine = state->layout.width > 0 ? PERM_ENGINE_SUBSTRINGS :
		PERM_ENGINE_TABLES;
	state->layout.max_distance = meta->max_distance;
	state->layout.blocks = meta->blocks;
	state->layout.ntables = meta->ntables;
	memcpy(state->layout.block_of_bit, meta->block_of_bit, 64);
	state->perm = MemoryContextAlloc(state->cxt,
									 meta->ntables * sizeof(PermPermutation));
	for (t = 0; t < meta->ntables; t++)
	{
		state->layout.prefix_bits[t] = meta->tables[t].prefix_bits;
		memcpy(state->layout.bits[t], meta->tables[t].bits, 64);
		state->root[t] = meta->tables[t].root;
		state->root_level[t] = meta->tables[t].root_level;
	}
	UnlockReleaseBuffer(buf);
	for (t = 0; t < state->layout.ntables; t++)
		PermMakePermutation(state->layout.bits[t], &state->perm[t]);

	ref = MemoryContextAlloc(index->rd_indexcxt, sizeof(PermStateRef));
	ref->state = state;
	index->rd_amcache = ref;
	return state;
}
