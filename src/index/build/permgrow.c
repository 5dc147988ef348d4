/*-------------------------------------------------------------------------
 *
 * permgrow.c
 *		simhash_perm: the bit layout follows the rows while the index is
 *		young.
 *
 * The layout (which bit goes to which block, permlayout.c) is chosen from
 * the rows the build sees.  An index built on an empty table, or on a few
 * rows, gets the layout of uniform fingerprints; if the rows that come
 * later have nearly constant bits, most of them may fall under one prefix
 * of some table, and each probe of that table reads them all: a near-
 * duplicate constraint's check then costs O(N) an insert.  So while the
 * layout was chosen from fewer than PERM_GROWTH_FINAL_ROWS rows, an insert
 * that finds the relation grown to next_check blocks (PERM_GROWTH_FACTOR
 * times its length when the layout was last looked at) looks at it again:
 * it reads every entry of table 0 (each table holds every row), counts the
 * bits, and chooses the layout those rows call for.  The same layout (the
 * common case: uniform fingerprints give the uniform layout) costs that
 * read and one metapage record.  Another one is written beside the old:
 *
 *	1. Every table is written anew, bottom up, as CREATE INDEX writes it
 *	   (permwrite.c), at the end of the relation, each page WAL-logged whole
 *	   as it is finished.  The pages carry PERM_ODD_LAYOUT when the new
 *	   layout's generation is odd.
 *	2. One generic WAL record switches the metapage: the new bit layout,
 *	   roots, generation and layout_start, the first block of the new
 *	   trees.  Blocks before it belong to earlier layouts: no tree reaches
 *	   them, VACUUM passes them by, REINDEX gives the space back.  With a
 *	   layout looked at on every fourfold growth, and never again once
 *	   chosen from PERM_GROWTH_FINAL_ROWS rows, they stay a small share of
 *	   a small index.
 *	3. Every backend drops the layout it cached (rd_amcache): a relcache
 *	   invalidation sent at once, and logged for hot standbys.
 *
 * Locking.  All of it runs under an AccessExclusiveLock on the index, taken
 * only if no other session holds any lock on it (ConditionalLockRelation:
 * an insert never waits for it), and released as soon as the metapage has
 * switched: a change of pages, not of catalogs, so nothing waits for the
 * transaction's end.  No scan or insert of another backend is under way
 * meanwhile, and the next one takes its lock after the invalidation was
 * sent, so it reads the new layout.  On a hot standby the lock is held
 * from the start of the change until the transaction's end, so queries
 * there wait for it (or are cancelled by max_standby_streaming_delay).
 *
 * Scans of our own backend.  The lock does not keep out our own backend's
 * scans, and a scan takes the layout (permutations, roots, leaf maps) when
 * it starts, yet descends through the relation's current state: a switch
 * under an open scan would have it look for old keys in the new trees.  So
 * the index must be open once only, by the insert itself (rd_refcnt == 1):
 * every open scan, a cursor's or a subquery's, holds a reference of its
 * own.  When it is open more than once, as in INSERT ... SELECT ... WHERE
 * NOT EXISTS (SELECT 1 ... hamming_near ...), whose subquery scans the
 * index all through the statement, the insert decides that the look is due
 * and leaves it for later: the index is noted, and the look is taken at
 * the end of the statement (ExecutorEnd), after the executor has closed
 * the statement's scans, if the index is then open only by the look itself.
 * Otherwise (a cursor still open, a statement nested in another that scans
 * the index) it stays noted until a later statement's end, or until a later
 * insert finds the index open once.  The note goes at the transaction's end
 * (an abort may have taken the index with it); a later insert notes it
 * again.  No scan is ever open across a switch: those already open keep
 * reading an index that does not change under them (the test perm_growth
 * holds a cursor open across the inserts that make a look due).
 *
 * Codes wider than 64 bits (bit(n), and codes after leading columns:
 * permwidelayout.c).  Their layout is the number of substrings m, which the model
 * chooses from the number of rows alone (at least 2^20 of them), so it is
 * never final: the layout is looked at whenever its pages have grown
 * fourfold, for as long as the index grows, and a look counts the entries
 * of table 0 and chooses for twice as many (choose_wide_layout).  When
 * the model chooses another m, every row's code is put together again from
 * its entries (table t's keys hold substring t, below the tenant's hash
 * and above the tail), sorted by TID and table, and its keys in the new
 * layout written as above; the metapage's growth and code records, which
 * follow the tables, move with their number.  Substrings set by the
 * reloption stay.
 *
 * Crashes.  Until the metapage record, the old layout stands whole: a crash
 * before it leaves the new trees' pages unreached, restored whole by WAL or
 * new and empty, and marked with the generation that never came; VACUUM,
 * which reads pages in physical order, passes by pages of the other
 * generation's parity, and the next change of layout puts them before its
 * layout_start.
 *
 * IDENTIFICATION
 *	  src/index/build/permgrow.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/relation.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/sinval.h"
#include "storage/standby.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "fingerprint/fingerprint.h"
#include "index/perm.h"
#include "index/tree/permleaf.h"

/* The layout is looked at again each time the relation grows this much */
#define PERM_GROWTH_FACTOR		4

/* ... but not before it has this many blocks */
#define PERM_GROWTH_MIN_BLOCKS	32

/* Inserts between two looks at the relation's length, in one backend */
#define PERM_GROWTH_LOOK_EVERY	64

/* Fingerprints counted bit by bit at a time */
#define PERM_GROWTH_COUNT_BATCH	1024

/* Indexes noted at once, whose look waits for the end of a statement */
#define PERM_GROWTH_MAX_NOTED	16

/*
 * The indexes of this backend whose look at the layout is due but waits
 * until no scan of them is open here (see the head of this file)
 */
static Oid	noted[PERM_GROWTH_MAX_NOTED];
static int	nnoted = 0;

static ExecutorEnd_hook_type prev_executor_end = NULL;

/* When to look at a layout chosen from rows rows, in nblocks blocks */
static BlockNumber
next_check_for(int64 rows, BlockNumber nblocks)
{
	if (rows >= PERM_GROWTH_FINAL_ROWS)
		return InvalidBlockNumber;
	return Max((uint64) nblocks * PERM_GROWTH_FACTOR, PERM_GROWTH_MIN_BLOCKS);
}

/*
 * When to look at the layout of an index on bit(n) codes whose current
 * layout starts at block start of nblocks: when that layout's pages have
 * grown fourfold (the pages of earlier layouts, before start, do not
 * count), for as long as the index grows.  Its layout (the number of
 * substrings) is chosen from the number of rows alone, so it is never
 * final; a look that keeps it counts the entries of table 0.
 */
static BlockNumber
wide_next_check(BlockNumber start, BlockNumber nblocks)
{
	uint64		next = start + (uint64) (nblocks - start) * PERM_GROWTH_FACTOR;

	if (next >= MaxBlockNumber)
		return InvalidBlockNumber;
	return Max(next, PERM_GROWTH_MIN_BLOCKS);
}

/*
 * The relation's blocks that hold trees: all but the code store's
 * (permstore.c), whose growth the layout does not follow.  A code store's
 * pages lie among the trees', so an index with one measures its growth in
 * these: its next_check is a count of them, not a block number.
 */
static BlockNumber
tree_blocks(PermState *state)
{
	Relation	index = state->index;
	return RelationGetNumberOfBlocks(index) - PermStorePages(state);
}

/*
 * Where the current layout starts, counted in tree_blocks: the first
 * layout at block 1 (the build writes the store after the tables), a later
 * one after every store page there was at its switch (a look that keeps
 * the layout counts those added since as before it too, and so looks a
 * little later)
 */
static BlockNumber
tree_layout_start(const PermMetaGrowth *growth, PermState *state)
{
	if (growth->generation == 0 || growth->layout_start <= PermStorePages(state))
		return growth->layout_start;
	return growth->layout_start - PermStorePages(state);
}

/*
 * The growth record of an index just built from rows rows.  An index on
 * bit(n) codes (wide) follows the rows unless its substrings are set
 * by the reloption (fixed).
 */
void
PermGrowthAfterBuild(PermMetaGrowth *growth, int64 rows, BlockNumber nblocks,
					 bool wide, bool fixed)
{
	memset(growth, 0, sizeof(PermMetaGrowth));
	growth->magic = PERM_GROWTH_MAGIC;
	growth->generation = 0;
	growth->layout_rows = rows;
	growth->layout_start = PERM_METAPAGE_BLKNO + 1;
	if (fixed)
		growth->next_check = InvalidBlockNumber;
	else if (wide)
		growth->next_check = wide_next_check(growth->layout_start, nblocks);
	else
		growth->next_check = next_check_for(rows, nblocks);
}

/*
 * Read every entry of table 0 (every row of the index, dead ones included)
 * as (fingerprint, TID) into rows, counting the bits into votes; returns
 * how many.  Keys are turned back into fingerprints by the inverse of the
 * table's permutation.
 */
static int64
collect_rows(PermState *state, RecStore *rows,
			 SimhashVoter *votes)
{
	PermPermutation *inverse = palloc(sizeof(PermPermutation));
	uint8		inv[64];
	uint64		batch[PERM_GROWTH_COUNT_BATCH];
	int			nbatch = 0;
	int64		n = 0;
	int64		steps = 0;
	Buffer		buf;
	int			j;

	/* key bit 63 - j is fingerprint bit bits[j]: invert that */
	for (j = 0; j < 64; j++)
		inv[63 - state->layout.bits[0][j]] = 63 - j;
	PermMakePermutation(inv, inverse);

	buf = PermLeftmostPage(state, 0, 0);
	for (;;)
	{
		Page		page = BufferGetPage(buf);
		int			nentries = PermPageGetOpaque(page)->nentries;
		int			i;

		for (i = 0; i < nentries; i++)
		{
			KeyTid		e;

			PermReadLeafEntry(page, i, &e);
			e.key = PermPermute(inverse, e.key);
			RecStoreAdd(rows, &e);
			batch[nbatch++] = e.key;
			if (nbatch == PERM_GROWTH_COUNT_BATCH)
			{
				SimhashVoterAddBatch(votes, batch, nbatch);
				nbatch = 0;
			}
			n++;
		}
		if (PermPageIsRightmost(page))
			break;
		buf = PermStepRight(state, buf, BUFFER_LOCK_SHARE, &steps);
	}
	UnlockReleaseBuffer(buf);
	SimhashVoterAddBatch(votes, batch, nbatch);
	pfree(inverse);
	return n;
}

/* Do two layouts put every bit in the same place of every table? */
static bool
same_layout(const PermLayout *a, const PermLayout *b)
{
	int			t;

	if (a->ntables != b->ntables || a->width != b->width ||
		a->tail != b->tail || a->extra != b->extra ||
		memcmp(a->block_of_bit, b->block_of_bit, 64) != 0)
		return false;
	for (t = 0; t < a->ntables; t++)
		if (a->prefix_bits[t] != b->prefix_bits[t] ||
			memcmp(a->bits[t], b->bits[t], 64) != 0)
			return false;
	return true;
}

/* The entries of table 0: every row of the index, dead ones included */
static int64
count_rows(PermState *state)
{
	int64		n = 0;
	int64		steps = 0;
	Buffer		buf = PermLeftmostPage(state, 0, 0);

	for (;;)
	{
		Page		page = BufferGetPage(buf);

		n += PermPageGetOpaque(page)->nentries;
		if (PermPageIsRightmost(page))
			break;
		buf = PermStepRight(state, buf, BUFFER_LOCK_SHARE, &steps);
	}
	UnlockReleaseBuffer(buf);
	return n;
}

/*
 * A table's entry in the sort that brings each row's entries together: by
 * TID, then table; the entry's substring (and, after leading columns, the
 * tenant's hash above it: a substring then has at most 48 bits) rides in
 * the record's TID and extra, which the order never reaches, the key
 * being unique.
 */
static void
pack_substring(KeyTid *rec, const ItemPointerData *tid, int t, uint64 value)
{
	rec->key = (PermTidNumber(tid) << 6) | (uint64) t;
	ItemPointerSetBlockNumber(&rec->tid, (BlockNumber) (value >> 32));
	ItemPointerSetOffsetNumber(&rec->tid, (OffsetNumber) (value >> 16));
	rec->extra = (uint16) value;
}

static uint64
unpack_substring(const KeyTid *rec)
{
	return ((uint64) ItemPointerGetBlockNumberNoCheck(&rec->tid) << 32) |
		((uint64) ItemPointerGetOffsetNumberNoCheck(&rec->tid) << 16) |
		rec->extra;
}

/*
 * Put the substrings of every entry of every table of an index on bit(n)
 * codes into rs: table t's key holds substring t, above its tail (and
 * below the tenant's hash)
 */
static void
collect_substrings(PermState *state, RunSort *rs)
{
	const PermLayout *layout = &state->layout;
	int			t;

	for (t = 0; t < layout->ntables; t++)
	{
		int			tail = PermWideTailBits(layout, t);
		uint64		mask = PG_UINT64_MAX >> (64 - layout->prefix_bits[t]);
		int64		steps = 0;
		Buffer		buf = PermLeftmostPage(state, t, 0);

		for (;;)
		{
			Page		page = BufferGetPage(buf);
			int			nentries = PermPageGetOpaque(page)->nentries;
			int			i;

			for (i = 0; i < nentries; i++)
			{
				KeyTid		e;
				KeyTid		rec;
				uint64		value;

				PermReadLeafEntry(page, i, &e);
				value = (e.key >> tail) & mask;
				if (layout->tenants > 0)
					value |= e.key & ~PERM_TENANT_CODE_MASK;
				pack_substring(&rec, &e.tid, t, value);
				RunSortPut(rs, &rec);
			}
			if (PermPageIsRightmost(page))
				break;
			buf = PermStepRight(state, buf, BUFFER_LOCK_SHARE, &steps);
		}
		UnlockReleaseBuffer(buf);
	}
}

/*
 * Rebuild every row's code from its entries (substring t from table t),
 * and add its keys in the new layout to rows[t]; returns the rows.  A row
 * whose entries are not in every table (an insert cut short by an error
 * or a crash: a row no snapshot sees) has no code, and is left out, as
 * VACUUM would remove it.
 */
static int64
rekey_rows(const PermLayout *old, const PermLayout *layout, RunSort *rs,
		   RecStore **rows)
{
	int			m = old->ntables;
	int			width = old->width;
	VarBit	   *code = palloc0(VARBITTOTALLEN(width));
	uint64		sub[PERM_MAX_TABLES];
	uint64		tenant = 0;
	uint64		seen = 0;
	uint64		all = m == 64 ? PG_UINT64_MAX : (UINT64CONST(1) << m) - 1;
	uint64		row = PG_UINT64_MAX;
	bool		more;
	int64		n = 0;
	KeyTid		rec;

	SET_VARSIZE(code, VARBITTOTALLEN(width));
	VARBITLEN(code) = width;
	do
	{
		more = RunSortNext(rs, &rec);
		if (!more || rec.key >> 6 != row)
		{
			/* the row before is complete: its code, its new keys */
			if (row != PG_UINT64_MAX && seen == all)
			{
				uint64		keys[PERM_MAX_TABLES];
				uint16		extras[PERM_MAX_TABLES];
				KeyTid		out;
				int			t,
							j;

				memset(VARBITS(code), 0, VARBITBYTES(code));
				for (t = 0; t < m; t++)
				{
					int			s = old->prefix_bits[t];

					for (j = 0; j < s; j++)
						if ((sub[t] >> (s - 1 - j)) & 1)
						{
							int			pos = t + j * m;

							VARBITS(code)[pos / 8] |= (bits8) (0x80 >> (pos % 8));
						}
				}
				PermWideKeys(layout, code, keys, extras);
				ItemPointerSetBlockNumber(&out.tid, (BlockNumber) (row >> 16));
				ItemPointerSetOffsetNumber(&out.tid, (OffsetNumber) (row & 0xFFFF));
				for (t = 0; t < layout->ntables; t++)
				{
					out.key = keys[t] | tenant;
					out.extra = extras[t];
					RecStoreAdd(rows[t], &out);
				}
				n++;
				if ((n & 0xFFFF) == 0)
					CHECK_FOR_INTERRUPTS();
			}
			row = more ? rec.key >> 6 : PG_UINT64_MAX;
			seen = 0;
		}
		if (more)
		{
			int			t = (int) (rec.key & 63);
			uint64		value = unpack_substring(&rec);

			if (old->tenants > 0)
			{
				tenant = value & ~PERM_TENANT_CODE_MASK;
				value &= PERM_TENANT_CODE_MASK;
			}
			sub[t] = value;
			seen |= UINT64CONST(1) << t;
		}
	} while (more);
	pfree(code);
	return n;
}

/*
 * The layout that the rows of an index on bit(n) codes call for now: the
 * model's (permwidelayout.c) at the design radius the index was built with, for
 * twice the rows table 0 holds.  The layout serves the rows from this look
 * to the next, when its pages have grown fourfold: from n rows to about
 * 4n, whose middle (on the model's scale, the logarithm) is 2n.  Sets *n
 * to the rows.
 */
static void
choose_wide_layout(PermState *state, int64 *n,
				   PermLayout *layout)
{
	*n = count_rows(state);
	PermWideChooseLayout(state->layout.width, state->layout.tenants,
						 state->layout.max_distance, 0, 2.0 * (double) *n,
						 layout);
}

/*
 * Write the tables of an index on bit(n) codes anew in layout, from the
 * entries of the current one (state); returns the rows written
 */
static int64
write_wide_tables(PermState *state, const PermLayout *layout,
				  int64 budget, uint16 flags, BlockNumber *roots,
				  uint16 *root_levels)
{
	Relation	index = state->index;
	RecStore   *rows[PERM_MAX_TABLES];
	RunSort    *rs;
	int64		n;
	int			t;

	rs = RunSortBegin(budget / 2,
					  count_rows(state) * state->layout.ntables);
	collect_substrings(state, rs);
	RunSortFinish(rs);
	for (t = 0; t < layout->ntables; t++)
		rows[t] = RecStoreBegin(budget / 2 / layout->ntables);
	n = rekey_rows(&state->layout, layout, rs, rows);
	RunSortEnd(rs);
	PermWriteTables(index, MAIN_FORKNUM, rows, n, budget, layout, flags,
					RelationNeedsWAL(index), false, roots, root_levels);
	for (t = 0; t < layout->ntables; t++)
		RecStoreEnd(rows[t]);
	return n;
}

/*
 * Every backend, here and on hot standbys, drops its cached state of the
 * index: a relcache invalidation, sent now rather than at commit (the
 * change is not undone by an abort), and logged for standbys.
 */
static void
invalidate_cached_layouts(Relation index)
{
	SharedInvalidationMessage msg;

	memset(&msg, 0, sizeof(msg));
	msg.rc.id = SHAREDINVALRELCACHE_ID;
	msg.rc.dbId = MyDatabaseId;
	msg.rc.relId = RelationGetRelid(index);
	SendSharedInvalidMessages(&msg, 1);
	if (RelationNeedsWAL(index) && XLogStandbyInfoActive())
		LogStandbyInvalidations(1, &msg, false);
}

/*
 * Look at the layout again, under the index's AccessExclusiveLock: choose
 * one from the rows, and if it differs, write the tables anew in it and
 * switch the metapage (see the head of this file).
 */
static void
relayout(Relation index)
{
	MemoryContext cxt,
				old;
	PermState  *state;
	PermMetaGrowth growth;
	PermLayout	layout;
	SimhashVoter *votes;
	RecStore   *rows;
	int64		budget = (int64) maintenance_work_mem * 1024;
	int64		n;
	BlockNumber roots[PERM_MAX_TABLES];
	uint16		root_levels[PERM_MAX_TABLES];
	bool		same;
	Buffer		metabuf;
	GenericXLogState *xlog;
	Page		metapage;
	PermMetaPage meta;
	int			t;

	/* the state as the metapage has it now: another backend may have come first */
	PermForgetState(index);
	state = PermGetState(index);
	if (!state->has_growth || state->growth.next_check == InvalidBlockNumber ||
		tree_blocks(state) < state->growth.next_check)
		return;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash_perm relayout",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	growth = state->growth;
	if (state->layout.width > 0)
	{
		/*
		 * bit(n) codes: the substrings for the rows now held; the entries,
		 * whose keys are substrings, give each row's code back
		 */
		choose_wide_layout(state, &n, &layout);
		same = same_layout(&layout, &state->layout);
		if (!same)
		{
			growth.layout_start = RelationGetNumberOfBlocks(index);
			growth.generation++;
			n = write_wide_tables(state, &layout, budget,
								  PermLayoutFlag(growth.generation),
								  roots, root_levels);
		}
		growth.next_check = wide_next_check(tree_layout_start(&growth, state),
											tree_blocks(state));
	}
	else
	{
		rows = RecStoreBegin(budget / 2);
		votes = palloc(sizeof(SimhashVoter));
		SimhashVoterInit(votes);
		n = collect_rows(state, rows, votes);
		PermChooseLayoutFromVotes(state->layout.max_distance,
								  state->layout.blocks, votes, n, &layout);
		same = same_layout(&layout, &state->layout);
		if (!same)
		{
			growth.layout_start = RelationGetNumberOfBlocks(index);
			growth.generation++;
			PermWriteTables(index, MAIN_FORKNUM, &rows, n, budget, &layout,
							PermLayoutFlag(growth.generation),
							RelationNeedsWAL(index), false, roots,
							root_levels);
		}
		RecStoreEnd(rows);
		growth.next_check = next_check_for(n, RelationGetNumberOfBlocks(index));
	}
	growth.layout_rows = n;

	/* the switch: one record */
	metabuf = PermReadMetaPage(index, BUFFER_LOCK_EXCLUSIVE);
	xlog = GenericXLogStart(index);
	metapage = GenericXLogRegisterBuffer(xlog, metabuf, GENERIC_XLOG_FULL_IMAGE);
	meta = PermPageGetMeta(metapage);
	if (!same)
	{
		PermMetaCode code;
		PermMetaStore store;
		bool		has_code = PermMetaGetCode(metapage, &code);
		bool		has_store = PermMetaGetStore(metapage, &store);

		/*
		 * bit(n) codes may change their number of tables, which moves the
		 * growth, code and store records after the tables: all are written
		 * anew, in order (the code and store records set pd_lower)
		 */
		meta->blocks = layout.blocks;
		meta->ntables = layout.ntables;
		memcpy(meta->block_of_bit, layout.block_of_bit, 64);
		for (t = 0; t < layout.ntables; t++)
		{
			memcpy(meta->tables[t].bits, layout.bits[t], 64);
			meta->tables[t].prefix_bits = layout.prefix_bits[t];
			meta->tables[t].root = roots[t];
			meta->tables[t].root_level = root_levels[t];
		}
		PermMetaSetGrowth(metapage, &growth);
		if (has_code)
		{
			code.substrings = layout.ntables;
			code.tail = layout.tail;
			code.extra = layout.extra;
			code.layout_rows = n;
			PermMetaSetCode(metapage, &code);
		}
		/* the code store does not depend on the layout: it stays */
		if (has_store)
			PermMetaSetStore(metapage, &store);
	}
	else
		PermMetaSetGrowth(metapage, &growth);
	GenericXLogFinish(xlog);
	UnlockReleaseBuffer(metabuf);

	if (!same)
		invalidate_cached_layouts(index);
	PermForgetState(index);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/* Note the index for a look at the end of the statement */
static void
note_index(Oid indexoid)
{
	int			i;

	for (i = 0; i < nnoted; i++)
		if (noted[i] == indexoid)
			return;
	if (nnoted < PERM_GROWTH_MAX_NOTED)
		noted[nnoted++] = indexoid;
}

/*
 * Called by every insert before it reads the layout: now and then, while
 * the index is young, look at the layout again (see the head of this file).
 */
void
PermGrowMaybeRelayout(Relation index)
{
	PermState  *state = PermGetState(index);

	if (!state->has_growth || state->growth.next_check == InvalidBlockNumber)
		return;
	if (++state->inserts % PERM_GROWTH_LOOK_EVERY != 0)
		return;
	if (tree_blocks(state) < state->growth.next_check)
		return;
	if (index->rd_index == NULL || !index->rd_index->indisvalid ||
		!index->rd_index->indisready)
		return;

	/*
	 * Only with the index open once in this backend (no scan of it under
	 * way here): else at the end of the statement
	 */
	if (index->rd_refcnt != 1)
	{
		note_index(RelationGetRelid(index));
		return;
	}
	if (!ConditionalLockRelation(index, AccessExclusiveLock))
		return;
	relayout(index);
	UnlockRelation(index, AccessExclusiveLock);
}

/*
 * The looks noted by inserts that found the index open more than once: an
 * index open now only by us, and on which no other session holds a lock,
 * is looked at; one still open elsewhere in this backend stays noted; one
 * that is gone, or that another session holds, is forgotten (a later
 * insert notes it again).
 */
static void
look_at_noted(void)
{
	int			i = 0;

	while (i < nnoted)
	{
		Oid			indexoid = noted[i];
		Relation	index;
		bool		keep = false;

		if (ConditionalLockRelationOid(indexoid, AccessExclusiveLock))
		{
			index = try_relation_open(indexoid, NoLock);
			if (index != NULL)
			{
				if (index->rd_rel->relkind == RELKIND_INDEX &&
					index->rd_rel->relam == get_index_am_oid("simhash_perm", true) &&
					index->rd_index != NULL && index->rd_index->indisvalid &&
					index->rd_index->indisready)
				{
					if (index->rd_refcnt == 1)
						relayout(index);
					else
						keep = true;
				}
				relation_close(index, NoLock);
			}
			UnlockRelationOid(indexoid, AccessExclusiveLock);
		}
		if (keep)
			i++;
		else
			noted[i] = noted[--nnoted];
	}
}

/*
 * ExecutorEnd: once the statement's scans are closed, the looks its
 * inserts noted
 */
static void
grow_executor_end(QueryDesc *queryDesc)
{
	if (prev_executor_end)
		prev_executor_end(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
	if (nnoted > 0 && IsTransactionState())
		look_at_noted();
}

/* The end of a transaction forgets the looks it noted */
static void
grow_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
		nnoted = 0;
}

/* Install the hooks; called from _PG_init */
void
PermGrowInit(void)
{
	prev_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = grow_executor_end;
	RegisterXactCallback(grow_xact_callback, NULL);
}
