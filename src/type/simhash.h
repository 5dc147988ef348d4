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
 *	  src/type/simhash.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SIMHASH_H
#define SIMHASH_H

#include "fmgr.h"
#include "compat.h"

/* Number of bits in a fingerprint, and the largest meaningful distance */
#define SIMHASH_BITS			64

#define DatumGetSimhash(X)		((uint64) DatumGetInt64(X))
#define SimhashGetDatum(X)		Int64GetDatum((int64) (X))
#define PG_GETARG_SIMHASH(n)	DatumGetSimhash(PG_GETARG_DATUM(n))
#define PG_RETURN_SIMHASH(x)	return SimhashGetDatum(x)

/*
 * Functions whose loops compute many Hamming distances are compiled twice,
 * with and without the POPCNT instruction, and the dynamic loader picks one
 * variant when the library is loaded (GCC's and clang's target_clones, an
 * ifunc): PGXS builds for the baseline x86-64, where __builtin_popcountll
 * is otherwise a call into libgcc.  Mark such functions SIMHASH_POPCNT.
 * Elsewhere (other CPUs, other compilers) the attribute is empty and the
 * builtin compiles to whatever the target has.
 */
#if defined(__x86_64__) && defined(__linux__) && defined(__has_attribute) && \
	!defined(SIMHASH_NO_CPU_DISPATCH)
#if __has_attribute(target_clones)
#define SIMHASH_POPCNT	__attribute__((target_clones("popcnt", "default")))
#endif
#endif
#ifndef SIMHASH_POPCNT
#define SIMHASH_POPCNT
#endif

/*
 * Hamming distance between two fingerprints: the one definition, used by
 * the SQL functions, the operators and the index alike.  Inlined, so it
 * compiles to POPCNT inside every SIMHASH_POPCNT function on CPUs that
 * have it.
 */
static inline int
simhash_hamming(uint64 a, uint64 b)
{
	return __builtin_popcountll(a ^ b);
}

/*
 * How many n-bit strings lie within Hamming distance r of a given one: the
 * sum of C(n, i) for i = 0..r (a double: it can exceed 2^63).  Used for
 * selectivity (n = 64) and for the index's probe counts (n = prefix bits).
 */
static inline double
simhash_count_within(int n, int r)
{
	double		total = 0,
				c = 1;
	int			i;

	for (i = 0; i <= r && i <= n; i++)
	{
		total += c;
		c = c * (n - i) / (i + 1);
	}
	return total;
}

/*
 * The smallest radius r >= from (at most 64) at which a point is expected to
 * have `wanted` of `rows` uniformly random fingerprints within r: the
 * distance of its wanted-th nearest neighbour.  Used to price and to bound
 * nearest-neighbour scans.
 */
static inline int
simhash_radius_holding(double rows, double wanted, int from)
{
	int			r = from;

	while (r < 64 && rows * simhash_count_within(64, r) / 18446744073709551616.0 < wanted)
		r++;
	return r;
}

/* Raise an error unless 0 <= k <= 64 (the distance bound of hamming_near) */
extern void simhash_check_distance(int32 k);

/*
 * Is typid the extension's fingerprint type (simhash64, named simhash
 * before 1.4)?  Known by its input function, not its name.
 */
extern bool simhash_is_fingerprint_type(Oid typid);

/* Text input of the type, used by simhash_query's input */
extern Datum simhash_in(PG_FUNCTION_ARGS);

#endif							/* SIMHASH_H */
