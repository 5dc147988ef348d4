/*-------------------------------------------------------------------------
 *
 * perm.c
 *		simhash_perm: the access method handler, reloptions, build phase
 *		names, and simhash_perm_info(), which shows an index's layout.
 *
 * IDENTIFICATION
 *	  src/perm.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/reloptions.h"
#include "commands/defrem.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "perm.h"

PG_FUNCTION_INFO_V1(simhash_perm_handler);
PG_FUNCTION_INFO_V1(simhash_perm_info);

/* Kind of our reloptions, registered once when the library is loaded */
static relopt_kind perm_relopt_kind;

/* Register the reloptions; called from _PG_init */
void
PermInit(void)
{
	perm_relopt_kind = add_reloption_kind();
	add_int_reloption(perm_relopt_kind, "max_distance",
					  "Design radius: queries up to this Hamming distance probe exact prefixes",
					  PERM_DEFAULT_MAX_DISTANCE, 0, PERM_MAX_MAX_DISTANCE,
					  AccessExclusiveLock);
	add_int_reloption(perm_relopt_kind, "blocks",
					  "Number of blocks the 64 bits are split into (0: max_distance + 1)",
					  0, 0, PERM_MAX_BLOCKS, AccessExclusiveLock);
}

/* Parse and validate WITH (...) */
bytea *
permoptions(Datum reloptions, bool validate)
{
	static const relopt_parse_elt tab[] = {
		{"max_distance", RELOPT_TYPE_INT, offsetof(PermOptions, max_distance)},
		{"blocks", RELOPT_TYPE_INT, offsetof(PermOptions, blocks)},
	};

	return (bytea *) build_reloptions(reloptions, validate, perm_relopt_kind,
									  sizeof(PermOptions), tab, lengthof(tab));
}

/* Names of our CREATE INDEX sub-phases, for pg_stat_progress_create_index */
static char *
permbuildphasename(int64 phasenum)
{
	switch (phasenum)
	{
		case PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE:
			return "initializing";
		case PERM_PHASE_SCAN:
			return "scanning table";
		case PERM_PHASE_SORT_WRITE:
			return "sorting and writing tables";
		default:
			return NULL;
	}
}

/* The access method handler */
Datum
simhash_perm_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *amroutine = makeNode(IndexAmRoutine);

	amroutine->amstrategies = PERM_NSTRATEGIES;
	amroutine->amsupport = PERM_NPROCS;
	amroutine->amoptsprocnum = 0;
	amroutine->amcanorder = false;
	amroutine->amcanorderbyop = false;
	amroutine->amcanbackward = false;
	amroutine->amcanunique = false;
	amroutine->amcanmulticol = false;
	/* a scan without a hamming_near qual would return the whole table */
	amroutine->amoptionalkey = false;
	amroutine->amsearcharray = false;
	amroutine->amsearchnulls = false;
	amroutine->amstorage = false;
	amroutine->amclusterable = false;
	amroutine->ampredlocks = false;
	amroutine->amcanparallel = false;
	amroutine->amcaninclude = false;
	amroutine->amusemaintenanceworkmem = false;
	amroutine->amparallelvacuumoptions =
		VACUUM_OPTION_PARALLEL_BULKDEL | VACUUM_OPTION_PARALLEL_CLEANUP;
	amroutine->amkeytype = InvalidOid;

	amroutine->ambuild = permbuild;
	amroutine->ambuildempty = permbuildempty;
	amroutine->aminsert = perminsert;
	amroutine->ambulkdelete = permbulkdelete;
	amroutine->amvacuumcleanup = permvacuumcleanup;
	amroutine->amcanreturn = NULL;
	amroutine->amcostestimate = permcostestimate;
	amroutine->amoptions = permoptions;
	amroutine->amproperty = NULL;
	amroutine->ambuildphasename = permbuildphasename;
	amroutine->amvalidate = permvalidate;
	amroutine->amadjustmembers = NULL;
	amroutine->ambeginscan = permbeginscan;
	amroutine->amrescan = permrescan;
	amroutine->amgettuple = permgettuple;
	amroutine->amgetbitmap = permgetbitmap;
	amroutine->amendscan = permendscan;
	amroutine->ammarkpos = NULL;
	amroutine->amrestrpos = NULL;
	amroutine->amestimateparallelscan = NULL;
	amroutine->aminitparallelscan = NULL;
	amroutine->amparallelrescan = NULL;

	PG_RETURN_POINTER(amroutine);
}

/* Statistics of one table, gathered by walking its leaves */
typedef struct PermTableStats
{
	int64		entries;
	int64		leaf_pages;
	int64		largest_bucket;
	int64		buckets;
} PermTableStats;

/* Walk a table's leaf level left to right, counting entries and buckets */
static void
table_stats(Relation index, int table, int prefix_bits, PermTableStats *st)
{
	PermKey		first;
	Buffer		buf;
	uint64		bucket = 0;
	int64		run = 0;
	bool		any = false;
	int			shift = 64 - prefix_bits;
	BlockNumber next;
	PermKey    *entries = palloc(PERM_LEAF_MAX_ENTRIES * sizeof(PermKey));

	memset(st, 0, sizeof(*st));
	first.key = 0;
	ItemPointerSet(&first.tid, 0, 0);

	/* the leftmost leaf: probe the smallest key, then walk right */
	{
		int			level;
		Buffer		mbuf = ReadBuffer(index, PERM_METAPAGE_BLKNO);
		PermMetaPage meta;
		BlockNumber blkno;

		LockBuffer(mbuf, BUFFER_LOCK_SHARE);
		meta = PermPageGetMeta(BufferGetPage(mbuf));
		blkno = meta->tables[table].root;
		level = meta->tables[table].root_level;
		UnlockReleaseBuffer(mbuf);
		while (level > 0)
		{
			PermKey		k;

			buf = ReadBuffer(index, blkno);
			LockBuffer(buf, BUFFER_LOCK_SHARE);
			PermReadInternalEntry(BufferGetPage(buf), 0, &k, &blkno);
			level = PermPageGetOpaque(BufferGetPage(buf))->level - 1;
			UnlockReleaseBuffer(buf);
		}
		next = blkno;
	}

	while (next != InvalidBlockNumber)
	{
		Page		page;
		PermPageOpaque opaque;
		int			i,
					n;

		CHECK_FOR_INTERRUPTS();
		buf = ReadBuffer(index, next);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		opaque = PermPageGetOpaque(page);
		st->leaf_pages++;
		n = PermLeafSortedEntries(page, entries);
		for (i = 0; i < n; i++)
		{
			uint64		b;

			b = shift >= 64 ? 0 : entries[i].key >> shift;
			if (!any || b != bucket)
			{
				st->buckets++;
				run = 0;
				bucket = b;
				any = true;
			}
			run++;
			st->largest_bucket = Max(st->largest_bucket, run);
			st->entries++;
		}
		next = opaque->rightlink;
		UnlockReleaseBuffer(buf);
	}
}

/*
 * simhash_perm_info(index): one row per table with its prefix, tree height,
 * leaf pages, entries, number of non-empty prefix buckets and the largest
 * bucket, plus the index-wide settings, for users tuning the layout.
 */
Datum
simhash_perm_info(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	index;
	PermState  *state;
	PermTable  *tables;
	int			ntables;
	int			t;
	BlockNumber nblocks;

	InitMaterializedSRF(fcinfo, 0);

	index = index_open(indexoid, AccessShareLock);
	if (index->rd_rel->relam != get_index_am_oid("simhash_perm", false))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a simhash_perm index",
						RelationGetRelationName(index))));

	state = PermGetState(index);
	tables = palloc(PERM_MAX_TABLES * sizeof(PermTable));
	PermMetaSnapshot(index, tables, &ntables);
	nblocks = RelationGetNumberOfBlocks(index);

	for (t = 0; t < ntables; t++)
	{
		Datum		values[11];
		bool		nulls[11] = {0};
		PermTableStats st;
		StringInfoData bits;
		int			i;

		table_stats(index, t, state->prefix_bits[t], &st);
		/* the fingerprint bits (0 = least significant) making the prefix */
		initStringInfo(&bits);
		for (i = 0; i < state->prefix_bits[t]; i++)
			appendStringInfo(&bits, "%s%d", i ? "," : "", state->bits[t][i]);
		values[3] = CStringGetTextDatum(bits.data);
		values[0] = Int32GetDatum(t);
		values[1] = Int32GetDatum(state->max_distance);
		values[2] = Int32GetDatum(state->prefix_bits[t]);
		values[4] = Int32GetDatum(tables[t].root_level + 1);
		values[5] = Int64GetDatum(st.leaf_pages);
		values[6] = Int64GetDatum(st.entries);
		values[7] = Int64GetDatum(st.buckets);
		values[8] = Int64GetDatum(st.largest_bucket);
		values[9] = Int32GetDatum(state->blocks);
		values[10] = Int64GetDatum((int64) nblocks);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	index_close(index, AccessShareLock);
	return (Datum) 0;
}
