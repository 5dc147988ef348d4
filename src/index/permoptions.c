/*-------------------------------------------------------------------------
 *
 * permoptions.c
 *		simhash_perm: an index's options: registered, parsed (amoptions),
 *		and read with their ranges, which depend on the codes (the code's
 *		column and kind are the descriptor's, perm.c).
 *
 * The build reads them before the index has a metapage, and ALTER INDEX
 * ... SET checks them (build/permconstraintcheck.c); every other caller
 * reads what the build made of them from the descriptor.
 *
 * IDENTIFICATION
 *	  src/index/permoptions.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/reloptions.h"
#include "catalog/pg_type.h"
#include "nodes/parsenodes.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/varbit.h"

#include "index/perm.h"
#include "index/permoptions.h"

/* Kind of our reloptions, registered once when the library is loaded */
static relopt_kind perm_relopt_kind;

/* Register the reloptions; called from PermInit */
void
PermOptionsInit(void)
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
	 * hook (permconstraintcheck.c).  blocks = 0 is refused here only: an earlier
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

/*
 * The design radius an index's options give: radius, or max_distance (its
 * older name, which only 64-bit codes take); false when neither is given.
 * *name is the one given, for messages.  Both given with different values
 * is refused: one would be ignored.
 */
bool
PermRadiusOption(Relation index, int *radius, const char **name)
{
	PermOptions *opts = (PermOptions *) index->rd_options;
	bool		bits = index->rd_opcintype[PermCodeColumn(index)] == BITOID;
	bool		r_given = PermOptionGiven(opts, PERM_OPT_RADIUS);
	bool		k_given = PermOptionGiven(opts, PERM_OPT_MAX_DISTANCE);

	if (k_given && bits)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_distance does not apply to index \"%s\" on bit(n) codes",
						RelationGetRelationName(index)),
				 errhint("Its design radius is radius: WITH (radius = %d).",
						 opts->max_distance)));
	if (k_given && r_given && opts->max_distance != opts->radius)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("radius = %d and max_distance = %d both give the design radius of index \"%s\"",
						opts->radius, opts->max_distance,
						RelationGetRelationName(index)),
				 errhint("max_distance is the older name of radius: give radius alone (ALTER INDEX ... RESET (max_distance)).")));
	*radius = r_given ? opts->radius : k_given ? opts->max_distance : -1;
	*name = r_given ? "radius" : "max_distance";
	return r_given || k_given;
}

/*
 * The design radius of an index on 64-bit fingerprints, one column or
 * after leading columns: radius (or max_distance), 3 when not given, 0 to
 * PERM_MAX_MAX_DISTANCE; width, which gives bit varying codes theirs,
 * does not apply
 */
int
PermFingerprintRadius(Relation index)
{
	PermOptions *opts = (PermOptions *) index->rd_options;
	int			r;
	const char *name;

	if (PermOptionGiven(opts, PERM_OPT_WIDTH))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("width does not apply to index \"%s\" on 64-bit fingerprints",
						RelationGetRelationName(index)),
				 errhint("width gives the width of bit varying codes.")));
	if (!PermRadiusOption(index, &r, &name))
		return PERM_DEFAULT_MAX_DISTANCE;
	if (r < 0 || r > PERM_MAX_MAX_DISTANCE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s %d is out of range for 64-bit fingerprints",
						name, r),
				 errdetail("%s must be between 0 and %d (queries at any radius are answered exactly).",
						   name, PERM_MAX_MAX_DISTANCE)));
	return r;
}

/*
 * The reloptions of an index on width-bit codes, or with leading columns,
 * checked: the design radius (not given: width / 8, or 3 on a 64-bit
 * fingerprint), the number of substrings (0: chosen), and the width of
 * bit varying codes, which must be theirs; blocks does not apply
 */
void
PermWideLayoutOptions(Relation index, int width, int *radius, int *substrings)
{
	PermOptions *opts = (PermOptions *) index->rd_options;
	int			r;
	const char *name;
	bool		r_given = PermRadiusOption(index, &r, &name);
	bool		m_given = PermOptionGiven(opts, PERM_OPT_SUBSTRINGS);
	int			m = m_given ? opts->substrings : 0;
	int			tenants = PermTenantColumns(index);
	bool		bits = index->rd_opcintype[PermCodeColumn(index)] == BITOID;

	if (PermOptionGiven(opts, PERM_OPT_BLOCKS))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("blocks does not apply to index \"%s\"",
						RelationGetRelationName(index)),
				 errdetail("An index on bit(n) codes, or with leading columns, cuts its codes into substrings, one table each."),
				 errhint("WITH (substrings = %d) gives their number.", opts->blocks)));
	if (bits && PermOptionGiven(opts, PERM_OPT_WIDTH) && opts->width != width)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_LENGTH_MISMATCH),
				 errmsg("index \"%s\" is declared for %d-bit codes, but its codes have %d bits",
						RelationGetRelationName(index), opts->width, width),
				 errhint("width must be the codes' width; a new width needs a new index.")));

	/*
	 * A 64-bit fingerprint after leading columns: its design radius is 0
	 * to PERM_MAX_MAX_DISTANCE, 3 when not given, as in a one-column index
	 * (the radius of its exclusion constraint)
	 */
	if (!bits)
		r = PermFingerprintRadius(index);

	if (width < 1 || width > PERM_MAX_WIDTH)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("simhash_perm indexes codes of 1 to %d bits, not %d",
						PERM_MAX_WIDTH, width)));
	/* every substring is a table, and after leading columns a key of 48 bits */
	if (PermWideFewestSubstrings(width, tenants) > PermWideMostSubstrings(width))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("simhash_perm indexes codes of at most %d bits after leading columns, not %d",
						PERM_MAX_TABLES * PERM_TENANT_SHIFT, width)));
	if (bits && !r_given)
		r = Max(1, width / 8);
	else if (bits && (r < 0 || r > width))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("radius %d is out of range for %d-bit codes",
						r, width),
				 errdetail("radius must be between 0 and %d, the codes' width.",
						   width)));
	if (m_given && (m < PermWideFewestSubstrings(width, tenants) ||
					m > PermWideMostSubstrings(width)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("substrings %d is out of range for %d-bit codes%s",
						m, width, tenants > 0 ? " after leading columns" : ""),
				 errdetail("substrings must be between %d and %d: each substring is a key of at most %d bits, and one table.",
						   PermWideFewestSubstrings(width, tenants),
						   PermWideMostSubstrings(width),
						   tenants > 0 ? PERM_TENANT_SHIFT : 64)));
	*radius = r;
	*substrings = m;
}

/*
 * The layout options of an index on 64-bit fingerprints (its reloptions),
 * checked: the design radius (radius, or its older name max_distance) and
 * blocks; substrings and width do not apply.  blocks = 0, which an
 * earlier version accepted for "not given" (permoptions now refuses it),
 * still stands for radius + 1, so that such an index goes on working.
 */
void
PermLayoutOptions(Relation index, int *max_distance, int *blocks)
{
	PermOptions *opts = (PermOptions *) index->rd_options;
	int			k = PermFingerprintRadius(index);
	int			b;

	if (PermOptionGiven(opts, PERM_OPT_SUBSTRINGS))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("substrings does not apply to index \"%s\" on 64-bit fingerprints",
						RelationGetRelationName(index)),
				 errhint("Its fingerprints are cut into blocks: WITH (blocks = %d) gives their number.",
						 opts->substrings)));
	b = (PermOptionGiven(opts, PERM_OPT_BLOCKS) && opts->blocks != 0) ?
		opts->blocks : k + 1;
	PermCheckLayoutOptions(k, b);
	*max_distance = k;
	*blocks = b;
}
