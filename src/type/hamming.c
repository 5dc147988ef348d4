/*-------------------------------------------------------------------------
 *
 * hamming.c
 *		Hamming distance between fingerprints, and the within-k test.
 *
 * The same C functions serve simhash and bigint arguments: both are 64-bit
 * by-value Datums, and the distance only looks at the bits.  Codes wider
 * than 64 bits (PDQ's 256, simhash128's 128, binary vectors) are bit(n)
 * values: the distance of two is defined only between codes of one width,
 * and any other pair is an error that names both widths, never a distance
 * computed on a prefix.
 *
 * IDENTIFICATION
 *	  src/type/hamming.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "port/pg_bitutils.h"
#include "utils/varbit.h"

#include "type/hamming_query.h"
#include "type/simhash.h"

PG_FUNCTION_INFO_V1(simhash_hamming_distance);
PG_FUNCTION_INFO_V1(simhash_hamming_near);
PG_FUNCTION_INFO_V1(simhash_bit_hamming_distance);
PG_FUNCTION_INFO_V1(simhash_bit_hamming_near);

/*
 * Reject a distance bound outside 0..64.  A negative k would silently match
 * nothing and one above 64 everything; both are almost certainly mistakes
 * (a swapped argument, a wrong parameter), so say so.
 */
void
simhash_check_distance(int32 k)
{
	if (k < 0 || k > SIMHASH_BITS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("Hamming distance bound %d is out of range", k),
				 errdetail("The bound k must be between 0 and %d.",
						   SIMHASH_BITS)));
}

/* hamming_distance(a, b): number of differing bits, 0..64 */
SIMHASH_POPCNT
Datum
simhash_hamming_distance(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(simhash_hamming(PG_GETARG_SIMHASH(0),
									PG_GETARG_SIMHASH(1)));
}

/* hamming_near(a, b, k): true iff the distance is at most k */
SIMHASH_POPCNT
Datum
simhash_hamming_near(PG_FUNCTION_ARGS)
{
	int32		k = PG_GETARG_INT32(2);

	simhash_check_distance(k);
	PG_RETURN_BOOL(simhash_hamming(PG_GETARG_SIMHASH(0),
								   PG_GETARG_SIMHASH(1)) <= k);
}

/*
 * The Hamming distance of two bit strings of one width.  The bits past the
 * last in the last byte are zero in every bit string (varbit.c pads them
 * so), so whole bytes can be compared.
 */
int32
simhash_bit_distance(const VarBit *a, const VarBit *b)
{
	int			width = VARBITLEN(a);
	const bits8 *pa = VARBITS(a);
	const bits8 *pb = VARBITS(b);
	int			nbytes;
	int			i;
	int64		d = 0;

	if (VARBITLEN(b) != width)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_LENGTH_MISMATCH),
				 errmsg("cannot compare bit strings of different widths: %d and %d bits",
						width, VARBITLEN(b)),
				 errhint("Codes compared by Hamming distance must all have one width, as the values of one bit(n) column do.")));
	nbytes = VARBITBYTES(a);
	for (i = 0; i + 8 <= nbytes; i += 8)
	{
		uint64		x,
					y;

		memcpy(&x, pa + i, 8);
		memcpy(&y, pb + i, 8);
		d += pg_popcount64(x ^ y);
	}
	for (; i < nbytes; i++)
		d += pg_number_of_ones[pa[i] ^ pb[i]];
	return (int32) d;
}

/* hamming_distance(a bit, b bit): bits that differ, codes of one width */
Datum
simhash_bit_hamming_distance(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(simhash_bit_distance(PG_GETARG_VARBIT_P(0), PG_GETARG_VARBIT_P(1)));
}

/*
 * hamming_near(a bit, b bit, k): within k bits?  k runs from 0 to the
 * codes' width; outside that it is an error, as for 64-bit fingerprints.
 */
Datum
simhash_bit_hamming_near(PG_FUNCTION_ARGS)
{
	VarBit	   *a = PG_GETARG_VARBIT_P(0);
	VarBit	   *b = PG_GETARG_VARBIT_P(1);
	int32		k = PG_GETARG_INT32(2);
	int32		d = simhash_bit_distance(a, b);

	simhash_check_bit_radius(k, VARBITLEN(a));
	PG_RETURN_BOOL(d <= k);
}

/* Reject a bound k outside 0..width for codes of that width */
void
simhash_check_bit_radius(int32 k, int width)
{
	if (k < 0 || k > width)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("Hamming distance bound %d is out of range", k),
				 errdetail("The bound k must be between 0 and %d, the codes' width.",
						   width)));
}
