/*-------------------------------------------------------------------------
 *
 * hamming_query.c
 *		The hamming_query type, "a bit(n) code and a radius", and the within
 *		operator <@ on bit(n) codes that the simhash_perm index serves.
 *
 * hamming_near(code, q, k) on bit(n) codes is rewritten by the planner
 * support function into  code <@ hamming_within(q, k)  when an index can
 * answer it (src/planner); users may also write that form themselves.
 * Text form: the code as bit's text form (binary digits, or x and hex
 * digits on input), a slash, the radius: '0110.../3' or 'x3fa9.../31'.
 * The code has at least one bit, as a bit(n) column's values do (an empty
 * one would print as a bare '/0'); the radius runs from 0 to the code's
 * width; a code of another width than the column's is an error naming both
 * widths (hamming.c).
 *
 * IDENTIFICATION
 *	  src/type/hamming_query.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "compat.h"
#include "utils/builtins.h"
#include "utils/varbit.h"

#include "type/hamming_query.h"

PG_FUNCTION_INFO_V1(hamming_query_in);
PG_FUNCTION_INFO_V1(hamming_query_out);
PG_FUNCTION_INFO_V1(hamming_within);
PG_FUNCTION_INFO_V1(hamming_within_match);

static HammingQuery *
make_query(const VarBit *code, int32 radius)
{
	Size		size = offsetof(HammingQuery, code) + VARSIZE(code);
	HammingQuery *q = palloc0(size);

	simhash_check_bit_radius(radius, VARBITLEN(code));
	SET_VARSIZE(q, size);
	q->radius = radius;
	memcpy(&q->code, code, VARSIZE(code));
	return q;
}

/* Text input: <bit string>/<radius> */
Datum
hamming_query_in(PG_FUNCTION_ARGS)
{
	char	   *str = PG_GETARG_CSTRING(0);
	char	   *slash = strrchr(str, '/');
	char	   *end;
	long		radius;
	VarBit	   *code;

	if (slash == NULL || slash == str || slash[1] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type %s: \"%s\"",
						"hamming_query", str),
				 errdetail("A hamming_query is written as code/radius, for example 0110/1 or x3fa9/2.")));
	errno = 0;
	radius = strtol(slash + 1, &end, 10);
	if (*end != '\0' || errno != 0 || radius < PG_INT32_MIN || radius > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type %s: \"%s\"",
						"hamming_query", str),
				 errdetail("A hamming_query is written as code/radius, for example 0110/1 or x3fa9/2.")));
	code = DatumGetVarBitP(DirectFunctionCall3(varbit_in,
											   CStringGetDatum(pnstrdup(str, slash - str)),
											   ObjectIdGetDatum(InvalidOid),
											   Int32GetDatum(-1)));
	if (VARBITLEN(code) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type %s: \"%s\"",
						"hamming_query", str),
				 errdetail("The code \"%s\" has no bits; a hamming_query's code has at least one.",
						   pnstrdup(str, slash - str))));
	PG_RETURN_POINTER(make_query(code, (int32) radius));
}

/* Text output: the code's binary digits, a slash, the radius */
Datum
hamming_query_out(PG_FUNCTION_ARGS)
{
	HammingQuery *q = PG_GETARG_HAMMING_QUERY(0);
	char	   *bits = DatumGetCString(DirectFunctionCall1(varbit_out,
														   PointerGetDatum(&q->code)));

	PG_RETURN_CSTRING(psprintf("%s/%d", bits, q->radius));
}

/* hamming_within(q, k): the ball of radius k around the code q */
Datum
hamming_within(PG_FUNCTION_ARGS)
{
	VarBit	   *code = PG_GETARG_VARBIT_P(0);

	if (VARBITLEN(code) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the code of hamming_within() has no bits: B''"),
				 errdetail("A Hamming query's code has at least one bit, as the values of a bit(n) column do.")));
	PG_RETURN_POINTER(make_query(code, PG_GETARG_INT32(1)));
}

/* code <@ hamming_within(q, k): is code within k bits of q? */
Datum
hamming_within_match(PG_FUNCTION_ARGS)
{
	VarBit	   *code = PG_GETARG_VARBIT_P(0);
	HammingQuery *q = PG_GETARG_HAMMING_QUERY(1);

	PG_RETURN_BOOL(simhash_bit_distance(code, &q->code) <= q->radius);
}
