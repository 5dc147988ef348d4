/*-------------------------------------------------------------------------
 *
 * simhash.c
 *		The simhash type: text and binary I/O, casts, and the comparison
 *		and hash functions behind its btree and hash operator classes.
 *
 * The text form is 16 lowercase hexadecimal digits, most significant digit
 * first; input also takes uppercase digits and an optional "0x" prefix, and
 * nothing else, so that every fingerprint has exactly one canonical
 * spelling plus a few obvious variants.  The binary form is the 64-bit value
 * in network byte order, the same as int8's.
 *
 * IDENTIFICATION
 *	  src/type/simhash.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "libpq/pqformat.h"
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/sortsupport.h"
#include "utils/syscache.h"
#include "utils/varbit.h"

#include "type/simhash.h"

PG_FUNCTION_INFO_V1(simhash_in);
PG_FUNCTION_INFO_V1(simhash_out);
PG_FUNCTION_INFO_V1(simhash_recv);
PG_FUNCTION_INFO_V1(simhash_send);
PG_FUNCTION_INFO_V1(simhash_to_bit);
PG_FUNCTION_INFO_V1(simhash_to_bytea);
PG_FUNCTION_INFO_V1(simhash_eq);
PG_FUNCTION_INFO_V1(simhash_ne);
PG_FUNCTION_INFO_V1(simhash_lt);
PG_FUNCTION_INFO_V1(simhash_le);
PG_FUNCTION_INFO_V1(simhash_gt);
PG_FUNCTION_INFO_V1(simhash_ge);
PG_FUNCTION_INFO_V1(simhash_cmp);
PG_FUNCTION_INFO_V1(simhash_sortsupport);
PG_FUNCTION_INFO_V1(simhash_hash);
PG_FUNCTION_INFO_V1(simhash_hash_extended);

/* Value of one hexadecimal digit, or -1 */
static inline int
hex_digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Text input: [0x]XXXXXXXXXXXXXXXX, case-insensitive */
Datum
simhash_in(PG_FUNCTION_ARGS)
{
	char	   *str = PG_GETARG_CSTRING(0);
	const char *p = str;
	uint64		value = 0;
	int			ndigits = 0;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;

	for (; *p != '\0'; p++)
	{
		int			d = hex_digit_value(*p);

		if (d < 0 || ndigits == SIMHASH_BITS / 4)
		{
			ndigits = -1;
			break;
		}
		value = (value << 4) | (uint64) d;
		ndigits++;
	}

	/*
	 * A sentence cast to the type (simhash64('some words')) is the likeliest
	 * way to get here with one: say which function computes a fingerprint.
	 */
	if (ndigits != SIMHASH_BITS / 4)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type %s: \"%s\"",
						"simhash64", str),
				 errdetail("A fingerprint is written as 16 hexadecimal digits, optionally preceded by \"0x\"."),
				 errhint("To compute the fingerprint of a text, call simhash('...').")));

	PG_RETURN_SIMHASH(value);
}

/* Text output: 16 lowercase hexadecimal digits */
Datum
simhash_out(PG_FUNCTION_ARGS)
{
	static const char digits[] = "0123456789abcdef";
	uint64		value = PG_GETARG_SIMHASH(0);
	char	   *result = palloc(SIMHASH_BITS / 4 + 1);
	int			i;

	for (i = SIMHASH_BITS / 4 - 1; i >= 0; i--)
	{
		result[i] = digits[value & 0xF];
		value >>= 4;
	}
	result[SIMHASH_BITS / 4] = '\0';
	PG_RETURN_CSTRING(result);
}

/* Binary input: 8 bytes, network byte order */
Datum
simhash_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);

	PG_RETURN_SIMHASH((uint64) pq_getmsgint64(buf));
}

/* Binary output: 8 bytes, network byte order */
Datum
simhash_send(PG_FUNCTION_ARGS)
{
	uint64		value = PG_GETARG_SIMHASH(0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint64(&buf, (int64) value);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* Write the fingerprint as 8 bytes, most significant first */
static void
simhash_to_big_endian(uint64 value, unsigned char *out)
{
	int			i;

	for (i = 7; i >= 0; i--)
	{
		out[i] = (unsigned char) (value & 0xFF);
		value >>= 8;
	}
}

/*
 * Cast to bit(64): most significant bit first, so the bit string reads like
 * the hex text form and like int8's cast to bit(64).
 */
Datum
simhash_to_bit(PG_FUNCTION_ARGS)
{
	uint64		value = PG_GETARG_SIMHASH(0);
	int			len = VARBITTOTALLEN(SIMHASH_BITS);
	VarBit	   *result = (VarBit *) palloc0(len);

	SET_VARSIZE(result, len);
	VARBITLEN(result) = SIMHASH_BITS;
	simhash_to_big_endian(value, VARBITS(result));
	PG_RETURN_VARBIT_P(result);
}

/* Cast to bytea: the 8 bytes of the value, most significant first */
Datum
simhash_to_bytea(PG_FUNCTION_ARGS)
{
	uint64		value = PG_GETARG_SIMHASH(0);
	bytea	   *result = (bytea *) palloc(VARHDRSZ + 8);

	SET_VARSIZE(result, VARHDRSZ + 8);
	simhash_to_big_endian(value, (unsigned char *) VARDATA(result));
	PG_RETURN_BYTEA_P(result);
}

/* Unsigned three-way comparison */
static inline int
simhash_compare(uint64 a, uint64 b)
{
	return (a > b) - (a < b);
}

Datum
simhash_eq(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(PG_GETARG_SIMHASH(0) == PG_GETARG_SIMHASH(1));
}

Datum
simhash_ne(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(PG_GETARG_SIMHASH(0) != PG_GETARG_SIMHASH(1));
}

Datum
simhash_lt(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(PG_GETARG_SIMHASH(0) < PG_GETARG_SIMHASH(1));
}

Datum
simhash_le(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(PG_GETARG_SIMHASH(0) <= PG_GETARG_SIMHASH(1));
}

Datum
simhash_gt(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(PG_GETARG_SIMHASH(0) > PG_GETARG_SIMHASH(1));
}

Datum
simhash_ge(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(PG_GETARG_SIMHASH(0) >= PG_GETARG_SIMHASH(1));
}

/* btree support function 1 */
Datum
simhash_cmp(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(simhash_compare(PG_GETARG_SIMHASH(0),
									PG_GETARG_SIMHASH(1)));
}

/* Comparator used by sort support */
static int
simhash_fastcmp(Datum x, Datum y, SortSupport ssup pg_attribute_unused())
{
	return simhash_compare(DatumGetSimhash(x), DatumGetSimhash(y));
}

/* btree support function 2: sorts skip the fmgr call per comparison */
Datum
simhash_sortsupport(PG_FUNCTION_ARGS)
{
	SortSupport ssup = (SortSupport) PG_GETARG_POINTER(0);

	ssup->comparator = simhash_fastcmp;
	PG_RETURN_VOID();
}

/*
 * Fold the 64 bits into the 32 that the hash functions take, as hashint8
 * does.  The extended hash with seed 0 then agrees with the standard one in
 * its low 32 bits, as hash opclasses require.
 */
static inline uint32
simhash_fold32(uint64 value)
{
	return (uint32) (value ^ (value >> 32));
}

/* hash support function 1 */
Datum
simhash_hash(PG_FUNCTION_ARGS)
{
	return UInt32GetDatum(hash_bytes_uint32(simhash_fold32(PG_GETARG_SIMHASH(0))));
}

/* hash support function 2 */
Datum
simhash_hash_extended(PG_FUNCTION_ARGS)
{
	return UInt64GetDatum(hash_bytes_uint32_extended(simhash_fold32(PG_GETARG_SIMHASH(0)),
													 (uint64) PG_GETARG_INT64(1)));
}

/*
 * Is typid our fingerprint type?  Known by its input function, not by its
 * name: the type is simhash64 since 1.4 and was simhash before, and this
 * library serves databases at either version.
 */
bool
simhash_is_fingerprint_type(Oid typid)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	bool		result;
	Form_pg_type typ;
	char	   *input;

	if (!HeapTupleIsValid(tup))
		return false;
	typ = (Form_pg_type) GETSTRUCT(tup);
	input = get_func_name(typ->typinput);
	result = input != NULL && strcmp(input, "simhash_in") == 0 &&
		typ->typlen == sizeof(int64) && typ->typbyval;
	ReleaseSysCache(tup);
	return result;
}
