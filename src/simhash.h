/*-------------------------------------------------------------------------
 *
 * simhash.h
 *		The simhash data type: a 64-bit fingerprint passed by value.
 *
 * A fingerprint is an unsigned 64-bit integer.  In SQL it is declared LIKE
 * pg_catalog.int8, so it has int8's length, alignment and by-value handling
 * on every platform; in C we always look at it as uint64.  Ordering is
 * unsigned (0000... < 8000... < ffff...).
 *
 * IDENTIFICATION
 *	  src/simhash.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SIMHASH_H
#define SIMHASH_H

#include "fmgr.h"

/* Number of bits in a fingerprint, and the largest meaningful distance */
#define SIMHASH_BITS			64

#define DatumGetSimhash(X)		((uint64) DatumGetInt64(X))
#define SimhashGetDatum(X)		Int64GetDatum((int64) (X))
#define PG_GETARG_SIMHASH(n)	DatumGetSimhash(PG_GETARG_DATUM(n))
#define PG_RETURN_SIMHASH(x)	return SimhashGetDatum(x)

/*
 * Hamming distance between two fingerprints.  PG15's pg_popcount64 may go
 * through a function pointer; the builtin compiles to POPCNT where the
 * target has it and to a short bit-twiddling sequence elsewhere.
 */
static inline int
simhash_hamming(uint64 a, uint64 b)
{
	return __builtin_popcountll(a ^ b);
}

/* Raise an error unless 0 <= k <= 64 (the distance bound of hamming_near) */
extern void simhash_check_distance(int32 k);

/* Text input of the type, used by simhash_query's input */
extern Datum simhash_in(PG_FUNCTION_ARGS);

#endif							/* SIMHASH_H */
