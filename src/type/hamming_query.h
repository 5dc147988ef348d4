/*-------------------------------------------------------------------------
 *
 * hamming_query.h
 *		The hamming_query type: a bit(n) code and a radius, the right-hand
 *		side of  code <@ hamming_within(q, k)  that simhash_perm serves for
 *		codes wider than 64 bits.
 *
 * IDENTIFICATION
 *	  src/type/hamming_query.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef HAMMING_QUERY_H
#define HAMMING_QUERY_H

#include "fmgr.h"
#include "utils/varbit.h"

/*
 * A varlena: the radius, then the code as a whole VarBit (its own length
 * word included), so that VARBITLEN and VARBITS read it in place.
 */
typedef struct HammingQuery
{
	int32		vl_len_;		/* varlena header (do not touch directly!) */
	int32		radius;
	VarBit		code;			/* variable length: keep last */
} HammingQuery;

#define DatumGetHammingQuery(X)		((HammingQuery *) PG_DETOAST_DATUM(X))
#define PG_GETARG_HAMMING_QUERY(n)	DatumGetHammingQuery(PG_GETARG_DATUM(n))

/* hamming.c */
extern int32 simhash_bit_distance(const VarBit *a, const VarBit *b);
extern void simhash_check_bit_radius(int32 k, int width);

#endif							/* HAMMING_QUERY_H */
