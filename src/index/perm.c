/*-------------------------------------------------------------------------
 *
 * perm.c
 *		simhash_perm: the access method handler, reloptions, settings and
 *		build phase names.  The design is in README.perm; perm.h lists the
 *		files.
 *
 * IDENTIFICATION
 *	  src/index/perm.c
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
#include "index/permleaf.h"

PG_FUNCTION_INFO_V1(simhash_perm_handler);

/* Kind of our reloptions, registered once when the library is loaded */
static relopt_kind perm_relopt_kind;

/* Register the reloptions; called from _PG_init */
void
PermInit(void)
{
	perm_relopt_kind = add_reloption_kind();

	/*
	 * radius is the design radius of every index; max_distance, its older
	 * name, goes on working on 64-bit codes (dumps, upgrades).  The bounds
	 * given to PostgreSQL are those of an int: the real range of an option
	 * depends on the index's codes (0 to 12 for radius on 64-bit
	 * fingerprints, 0 to the width on bit(n) codes), which the options
	 * alone do not tell, so the build and ALTER's hook check it
	 * (PermLayoutOptions, PermWideLayoutOptions) and name it, and refuse an
	 * option that does not apply to the codes; permoptions refuses what is
	 * not an integer.  Never is a value accepted and ignored.  The defaults
	 * (-1, 0) stand for "not given", which PermOptions.given tells apart
	 * from the same value given.
	 */
	add_int_reloption(perm_relopt_kind, "radius",
					  "Design radius: queries up to this Hamming distance probe exact keys (default: 3 on 64-bit codes, width / 8 on bit(n) codes)",
					  PERM_DEFAULT_WIDE_RADIUS, PG_INT32_MIN, PG_INT32_MAX,
					  AccessExclusiveLock);
	add_int_reloption(perm_relopt_kind, "max_distance",
					  "The older name of radius, on 64-bit codes",
					  -1, PG_INT32_MIN, PG_INT32_MAX, AccessExclusiveLock);
	add_int_reloption(perm_relopt_kind, "blocks",
					  "Blocks the 64 bits of a fingerprint are split into (default: radius + 1)",
					  0, PG_INT32_MIN, PG_INT32_MAX, AccessExclusiveLock);
	add_int_reloption(perm_relopt_kind, "substrings",
					  "Substrings a bit(n) code, or a code after leading columns, is cut into, one table each (default: chosen from the width, radius and rows)",
					  0, PG_INT32_MIN, PG_INT32_MAX, AccessExclusiveLock);
	add_int_reloption(perm_relopt_kind, "width",
					  "Width of the bit varying codes of the index (default: the column's, or the first row's)",
					  0, PG_INT32_MIN, PG_INT32_MAX, AccessExclusiveLock);

	/*
	 * The settings for tests below are hidden (GUC_NO_SHOW_ALL): SHOW ALL
	 * and pg_settings list only what users may want to set, and a test
	 * still sets and shows one by its name.  simhash.wide_layout_min_rows
	 * (permwide.c) is hidden too.
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
	 * where the CPU has it (permstorescan.c); off, with POPCNT alone, which
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

/* Our options, their flags in PermOptions.given, and their ranges */
static const struct
{
	const char *name;
	int			flag;
	const char *range;
}			perm_options[] =
{
	{"max_distance", PERM_OPT_MAX_DISTANCE,
	"between 0 and " CppAsString2(PERM_MAX_MAX_DISTANCE) ", on 64-bit fingerprints only"},
	{"blocks", PERM_OPT_BLOCKS,
	"between radius + 1 and " CppAsString2(PERM_MAX_BLOCKS) ", on 64-bit fingerprints only"},
	{"radius", PERM_OPT_RADIUS,
	"between 0 and " CppAsString2(PERM_MAX_MAX_DISTANCE) " on 64-bit fingerprints, and between 0 and the codes' width on bit(n) codes"},
	{"substrings", PERM_OPT_SUBSTRINGS,
	"between 1 and " CppAsString2(PERM_MAX_TABLES) ", and at most the codes' width"},
	{"width", PERM_OPT_WIDTH,
	"between 1 and " CppAsString2(PERM_MAX_WIDTH)},
};

/*
 * Refuse a value of an option that is not an integer written in decimal
 * digits.  PostgreSQL's parse_int rounds "2.5" to 2 (rint, so "3.5" is 4)
 * and reads "1e1" as 10, "0x10" as 16 and "010" as 8: the index would be
 * built with another value than the one its definition (and pg_dump)
 * shows.  Whitespace around the digits, which parse_int skips, is let be.
 */
static void
check_integer_option(const char *name, const char *value, const char *range)
{
	const char *p = value;
	bool		digits = false;
	int			parsed = 0;

	while (isspace((unsigned char) *p))
		p++;
	if (*p == '+' || *p == '-')
		p++;
	while (isdigit((unsigned char) *p))
	{
		p++;
		digits = true;
	}
	while (isspace((unsigned char) *p))
		p++;
	/* digits alone, within an int, and read as decimal (not octal: 010) */
	if (digits && *p == '\0' && !parse_int(value, &parsed, 0, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s %s is out of range", name, value),
				 errdetail("%s must be %s.", name, range)));
	if (!digits || *p != '\0' || strtol(value, NULL, 10) != parsed)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s %s is not an integer", name, value),
				 errdetail("%s must be an integer in decimal digits, %s.",
						   name, range)));
}

/*
 * Parse and validate WITH (...).  validate is true for CREATE INDEX and
 * ALTER INDEX ... SET, where every option given must be an integer; the
 * ranges, which depend on the codes, are checked by the build and by
 * ALTER's hook.  Options stored by an earlier version (max_distance =
 * 2.5, blocks = 0, then accepted) are read as PostgreSQL reads them, so
 * that the index goes on working.
 */
bytea *
permoptions(Datum reloptions, bool validate)
{
	static const relopt_parse_elt tab[] = {
		/* by name: 18 added a field (isset_offset) */
		{.optname = "max_distance", .opttype = RELOPT_TYPE_INT,
		.offset = offsetof(PermOptions, max_distance)},
		{.optname = "blocks", .opttype = RELOPT_TYPE_INT,
		.offset = offsetof(PermOptions, blocks)},
		{.optname = "radius", .opttype = RELOPT_TYPE_INT,
		.offset = offsetof(PermOptions, radius)},
		{.optname = "substrings", .opttype = RELOPT_TYPE_INT,
		.offset = offsetof(PermOptions, substrings)},
		{.optname = "width", .opttype = RELOPT_TYPE_INT,
		.offset = offsetof(PermOptions, width)},
	};
	PermOptions *opts;
	List	   *given = untransformRelOptions(reloptions);
	ListCell   *lc;
	int			flags = 0;

	foreach(lc, given)
	{
		DefElem    *def = lfirst_node(DefElem, lc);
		int			i;

		for (i = 0; i < (int) lengthof(perm_options); i++)
		{
			if (strcmp(def->defname, perm_options[i].name) != 0)
				continue;
			flags |= perm_options[i].flag;
			if (validate)
				check_integer_option(def->defname,
									 def->arg ? strVal(def->arg) : "",
									 perm_options[i].range);
		}
	}

	opts = (PermOptions *) build_reloptions(reloptions, validate,
											perm_relopt_kind,
											sizeof(PermOptions), tab,
											lengthof(tab));
	if (opts == NULL)
		return NULL;
	opts->given = flags;

	/*
	 * blocks and the radius must make a layout, whether given to CREATE
	 * INDEX or to ALTER INDEX ... SET (which would otherwise be accepted and
	 * break the next REINDEX, and a restore of a dump).  blocks applies to
	 * 64-bit codes only, whose radius is 0 to PERM_MAX_MAX_DISTANCE; a
	 * radius out of that range, and an option that does not apply to the
	 * code type (unknown here), are refused by the build and by ALTER's
	 * hook (permradius.c).  blocks = 0 is refused here only: an earlier
	 * version took it for "not given".
	 */
	if (validate && (flags & PERM_OPT_BLOCKS))
	{
		int			k = (flags & PERM_OPT_RADIUS) ? opts->radius :
			(flags & PERM_OPT_MAX_DISTANCE) ? opts->max_distance :
			PERM_DEFAULT_MAX_DISTANCE;

		if (k >= 0 && k <= PERM_MAX_MAX_DISTANCE)
			PermCheckLayoutOptions(k, opts->blocks);
	}

	/*
	 * width is that of the codes, which the build of an empty table takes
	 * from it: its range is that of every index on bit(n) codes
	 */
	if (validate && (flags & PERM_OPT_WIDTH) &&
		(opts->width < 1 || opts->width > PERM_MAX_WIDTH))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("width %d is out of range", opts->width),
				 errdetail("width must be between 1 and %d.", PERM_MAX_WIDTH)));
	return (bytea *) opts;
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
