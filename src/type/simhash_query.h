/*-------------------------------------------------------------------------
 *
 * simhash_query.h
 *		The simhash_query type: a fingerprint and a radius, the right-hand
 *		side of the within operator <@ that simhash_perm serves.
 *
 * IDENTIFICATION
 *	  src/type/simhash_query.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SIMHASH_QUERY_H
#define SIMHASH_QUERY_H

#include "fmgr.h"

/* On-disk and in-memory form (16 bytes, fixed length, passed by reference) */
typedef struct SimhashQuery
{
	uint64		center;
	int32		radius;
	int32		pad;
} SimhashQuery;

#define DatumGetSimhashQuery(X)		((SimhashQuery *) DatumGetPointer(X))
#define PG_GETARG_SIMHASH_QUERY(n)	DatumGetSimhashQuery(PG_GETARG_DATUM(n))

#endif							/* SIMHASH_QUERY_H */
