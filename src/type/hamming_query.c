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

#include <ctype.h>

#include "fmgr.h"
#include "compat.h"
#include "utils/builtins.h"
#include "utils/varbit.h"

#include "type/hamming_query.h"

PG_FUNCTION_INFO_V1(hamming_query_in);
PG_FUNCTION_INFO_V1(hamming_query_out);
PG_FUNCTION_INFO_V1(hamming_within);
PG_FUNCTION_INFO_V1(hamming_within_text);
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

/* The ball of radius k around a code, for hamming_within() */
static HammingQuery *
within(const VarBit *code, int32 radius)
{
	if (VARBITLEN(code) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the code of hamming_within() has no bits: B''"),
				 errdetail("A Hamming query's code has at least one bit, as the values of a bit(n) column do.")));
	return make_query(code, radius);
}

/* hamming_within(q, k): the ball of radius k around the code q */
Datum
hamming_within(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(within(PG_GETARG_VARBIT_P(0), PG_GETARG_INT32(1)));
}

/*
 * hamming_within(q text, k): the same, q read as a bit string.  A quoted
 * literal, hamming_within('8f3a...', 3), resolves to this overload (the
 * parser prefers text for an unknown literal), and so does a text column.
 * Binary digits, and the prefixes bit's input takes ('b0110', 'x8f3a'),
 * mean what they mean as bit; a string of hexadecimal digits without the
 * x prefix is refused with the literal to write, where bit's own input would
 * say only "9 is not a valid binary digit".  Hexadecimal is not taken
 * without the prefix: '1010' would then mean 4 bits or 16 by its digits.
 */
Datum
hamming_within_text(PG_FUNCTION_ARGS)
{
	char	   *str = text_to_cstring(PG_GETARG_TEXT_PP(0));
	bool		prefixed = str[0] == 'b' || str[0] == 'B';
	const char *bad = NULL;
	bool		hex = str[0] != '\0';
	const char *c;

	/*
	 * Hexadecimal digits only, and not binary digits (after a b, which is a
	 * hexadecimal digit too: 'b697e...' is a hexadecimal code)
	 */
	for (c = str; *c != '\0'; c++)
	{
		if (!isxdigit((unsigned char) *c))
			hex = false;
		if (*c != '0' && *c != '1' && bad == NULL && !(prefixed && c == str))
			bad = c;
	}
	if (bad != NULL && hex)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("the code \"%s\" of hamming_within() has hexadecimal digits but no x before them",
						str),
				 errdetail("A code is read as binary digits unless it starts with x, as bit's input reads it, and \"%c\" is not one.",
						   *bad),
				 errhint("Write hexadecimal digits as 'x%s', or ('x' || column)::bit(%d) for a text column of them.",
						 str, (int) strlen(str) * 4)));
	PG_RETURN_POINTER(within(DatumGetVarBitP(DirectFunctionCall3(varbit_in,
																 CStringGetDatum(str),
																 ObjectIdGetDatum(InvalidOid),
																 Int32GetDatum(-1))),
							 PG_GETARG_INT32(1)));
}

/* code <@ hamming_within(q, k): is code within k bits of q? */
Datum
hamming_within_match(PG_FUNCTION_ARGS)
{
	VarBit	   *code = PG_GETARG_VARBIT_P(0);
	HammingQuery *q = PG_GETARG_HAMMING_QUERY(1);

	PG_RETURN_BOOL(simhash_bit_distance(code, &q->code) <= q->radius);
}
