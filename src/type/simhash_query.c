/*-------------------------------------------------------------------------
 *
 * simhash_query.c
 *		The simhash_query type, "a fingerprint and a radius", and the
 *		within operator <@ that the simhash_perm index serves.
 *
 * hamming_near(fp, q, k) is rewritten by the planner support function into
 * fp <@ simhash_within(q, k) when an index can answer it; users may also
 * write that form themselves.  Text form: '0123456789abcdef/3'.
 *
 * IDENTIFICATION
 *	  src/type/simhash_query.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "type/simhash_query.h"
#include "type/simhash.h"

PG_FUNCTION_INFO_V1(simhash_query_in);
PG_FUNCTION_INFO_V1(simhash_query_out);
PG_FUNCTION_INFO_V1(simhash_within);
PG_FUNCTION_INFO_V1(simhash_within_match);

static SimhashQuery *
make_query(uint64 center, int32 radius)
{
	SimhashQuery *q = palloc0(sizeof(SimhashQuery));

	simhash_check_distance(radius);
	q->center = center;
	q->radius = radius;
	return q;
}

/* Text input: <16 hex digits>/<radius> */
Datum
simhash_query_in(PG_FUNCTION_ARGS)
{
	char	   *str = PG_GETARG_CSTRING(0);
	char	   *slash = strchr(str, '/');
	char	   *hex;
	char	   *end;
	long		radius;

	if (slash == NULL || slash[1] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type %s: \"%s\"",
						"simhash_query", str),
				 errdetail("A simhash_query is written as fingerprint/radius, for example 0123456789abcdef/3.")));
	hex = pnstrdup(str, slash - str);
	errno = 0;
	radius = strtol(slash + 1, &end, 10);
	if (*end != '\0' || errno != 0 || radius < PG_INT32_MIN || radius > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type %s: \"%s\"",
						"simhash_query", str),
				 errdetail("A simhash_query is written as fingerprint/radius, for example 0123456789abcdef/3.")));
	PG_RETURN_POINTER(make_query(DatumGetSimhash(DirectFunctionCall1(simhash_in,
																	 CStringGetDatum(hex))),
								 (int32) radius));
}

/* Text output */
Datum
simhash_query_out(PG_FUNCTION_ARGS)
{
	SimhashQuery *q = (SimhashQuery *) PG_GETARG_POINTER(0);

	PG_RETURN_CSTRING(psprintf("%016llx/%d", (unsigned long long) q->center,
							   q->radius));
}

/* simhash_within(q, k): the ball of radius k around q */
Datum
simhash_within(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(make_query(PG_GETARG_SIMHASH(0), PG_GETARG_INT32(1)));
}

/* fp <@ simhash_within(q, k): is fp in the ball? */
SIMHASH_POPCNT
Datum
simhash_within_match(PG_FUNCTION_ARGS)
{
	uint64		fp = PG_GETARG_SIMHASH(0);
	SimhashQuery *q = (SimhashQuery *) PG_GETARG_POINTER(1);

	PG_RETURN_BOOL(simhash_hamming(fp, q->center) <= q->radius);
}
