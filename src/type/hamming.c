/*-------------------------------------------------------------------------
 *
 * hamming.c
 *		Hamming distance between fingerprints, and the within-k test.
 *
 * The same C functions serve simhash and bigint arguments: both are 64-bit
 * by-value Datums, and the distance only looks at the bits.
 *
 * IDENTIFICATION
 *	  src/type/hamming.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "type/simhash.h"

PG_FUNCTION_INFO_V1(simhash_hamming_distance);
PG_FUNCTION_INFO_V1(simhash_hamming_near);

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
