/*-------------------------------------------------------------------------
 *
 * permhandler.c
 *		simhash_perm: the access method handler, reloptions, settings and
 *		build phase names.  The design is in README.perm; perm.h lists the
 *		files.
 *
 * IDENTIFICATION
 *	  src/index/permhandler.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/reloptions.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "index/perm.h"
#include "index/permoptions.h"
#include "index/tree/permleaf.h"

PG_FUNCTION_INFO_V1(simhash_perm_handler);

/* Register the reloptions and the settings; called from _PG_init */
void
PermInit(void)
{
	PermOptionsInit();

	/*
	 * The settings for tests below are hidden (GUC_NO_SHOW_ALL): SHOW ALL
	 * and pg_settings list only what users may want to set, and a test
	 * still sets and shows one by its name.  simhash.wide_layout_min_rows
	 * (permwidelayout.c) is hidden too.
	 *
	 * For tests only: an insert that splits a page stops with an error
	 * between the split and its downlink, leaving the split incomplete as a
	 * crash there would (README.perm, "WAL and crashes").
	 */
	DefineCustomBoolVariable("simhash.fail_after_split",
							 "Stops inserts between a page split and its downlink (for tests).",
							 NULL,
							 &perm_fail_after_split,
							 false,
							 PGC_SUSET,
							 GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	/*
	 * For tests only: leaves are written in the format of indexes built
	 * before PERM_KEY_OFFSET (permleaf.c), which this code must go on
	 * reading and converting.
	 */
	DefineCustomBoolVariable("simhash.write_old_leaf_format",
							 "Writes leaves in the format of indexes built by simhash 1.3 and earlier (for tests).",
							 NULL,
							 &perm_write_old_leaf_format,
							 false,
							 PGC_SUSET,
							 GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	/*
	 * A scan of the code store counts bits with AVX-512's vector popcount
	 * where the CPU has it (permwidestore.c); off, with POPCNT alone, which
	 * tests and benchmarks compare with
	 */
	DefineCustomBoolVariable("simhash.store_vector_popcount",
							 "Lets scans of a simhash_perm code store count bits with AVX-512 (off: for tests).",
							 NULL,
							 &perm_store_vector_popcount,
							 true,
							 PGC_SUSET,
							 GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	/*
	 * For tests only: CREATE INDEX says, as a NOTICE, how many parallel
	 * workers read a share of the table (permbuildparallel.c), so that a
	 * test can tell a parallel build from a serial one.
	 */
	DefineCustomBoolVariable("simhash.report_build_workers",
							 "Reports how many parallel workers each CREATE INDEX of a simhash_perm index used (for tests).",
							 NULL,
							 &perm_report_build_workers,
							 false,
							 PGC_SUSET,
							 GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	/*
	 * Leaf maps (README.perm, "Searching") make a descent one page read;
	 * they cost about 20 bytes a leaf per table, per backend.
	 */
	DefineCustomIntVariable("simhash.leaf_map_memory",
							"Memory the leaf maps of one simhash_perm index may use in a backend.",
							"Tables whose map does not fit are searched by descending from the root; 0 turns maps off.",
							&perm_leaf_map_memory,
							PERM_DEFAULT_LEAF_MAP_MEMORY,
							0, MAX_KILOBYTES,
							PGC_USERSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);
	MarkGUCPrefixReserved("simhash");
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
		case PERM_PHASE_SORT:
			return "sorting a table";
		case PERM_PHASE_WRITE:
			return "writing a table";
		default:
			return NULL;
	}
}

/*
 * The engine of an index (perm.h, PermEngine), from its descriptor: the one
 * place that names the engines
 */
static const PermEngine *const perm_engines[PERM_NENGINES] = {
	[PERM_ENGINE_TABLES] = &PermTablesEngine,
	[PERM_ENGINE_SUBSTRINGS] = &PermSubstringsEngine,
};

static const PermEngine *
engine_of(Relation index)
{
	return perm_engines[PermGetState(index)->engine];
}

/* aminsert: the shared insert, with the index's engine */
static bool
perminsert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
		   Relation heapRel, IndexUniqueCheck checkUnique, bool indexUnchanged,
		   struct IndexInfo *indexInfo)
{
	return PermInsert(engine_of(index), index, values, isnull, ht_ctid);
}

/* ambeginscan: the scan keeps the index's engine (permscan.c) */
static IndexScanDesc
permbeginscan(Relation index, int nkeys, int norderbys)
{
	return PermBeginScan(index, nkeys, norderbys, engine_of(index));
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
	amroutine->amcanorderbyop = true;
	amroutine->amcanbackward = false;
	amroutine->amcanunique = false;
	amroutine->amcanmulticol = true;	/* leading equality columns */
	/* ORDER BY fp <-> q needs no qual (rows with a NULL fp are not indexed) */
	amroutine->amoptionalkey = true;
	amroutine->amsearcharray = false;
	amroutine->amsearchnulls = false;
	amroutine->amstorage = false;
	amroutine->amclusterable = false;
	amroutine->ampredlocks = false;
	amroutine->amcanparallel = false;
	SimhashSetCanBuildParallel(amroutine);	/* permbuildparallel.c */
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
