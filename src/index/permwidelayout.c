/*-------------------------------------------------------------------------
 *
 * permwidelayout.c
 *		simhash_perm on codes wider than 64 bits: bit(n) columns (PDQ image
 *		hashes, 128-bit fingerprints, binary vectors), by multi-index
 *		hashing (Norouzi, Punjani and Fleet, CVPR 2012, TPAMI 2014).
 *
 * A code of W bits is cut into m substrings; each is the key of one table
 * of the index, a tree like the 64-bit tables (the same pages, leaves, WAL
 * and VACUUM).  If two codes lie within r bits, the r differing bits fall
 * into the m substrings, so some substring differs in at most floor(r/m)
 * bits: probing every table at that radius finds every match.  Finer (the
 * TPAMI paper's refinement): write r = f m + a with 0 <= a < m; if the
 * first a + 1 substrings all differ in f + 1 bits or more, the other m -
 * a - 1 share at most r - (a + 1)(f + 1) = (m - a - 1) f - 1 bits, and one
 * of them differs in at most f - 1.  So tables 0..a are probed at radius f
 * and the others at f - 1 (not at all when f = 0): PermWideProbeRadius.
 * Every row a probe finds is a candidate, checked on its whole code (the
 * executor's recheck of the qual, or permwideknn.c reading the row).
 *
 * Substring t holds the code's bits at positions t, t + m, t + 2m, ...
 * (position 0 is the leftmost bit of the bit string), the first of them
 * the most significant.  Strided rather than contiguous: codes whose bits
 * are skewed by region (a constant header, the zero-padded end of a binary
 * vector, the low-energy half of a transform) still give every substring
 * its share of informative bits.  Table t's key, right-aligned in 64 bits,
 * is substring t followed by a tail, the leading bits of the substrings
 * after it (PermWideTailBits): probes select keys by the substring, and
 * the distance between two keys, a lower bound on the codes' distance,
 * rejects rows in the leaf.  Without a tail a key is short (about log2 of
 * the rows) and leaves store it in a byte or three (permleaf.c); a tail
 * adds three.
 *
 * The layout, m, is chosen by the cost model of one query at the design
 * radius (the reloption radius, width / 8 by default: PDQ's match radius
 * of 31 on 256 bits) over the rows at build time, but at least 2^20 rows:
 * for uniform codes a probe of a radius-rho ball in an s-bit substring
 * reads Ball(s, rho) = sum C(s, i), i <= rho, key ranges and finds
 * rows * Ball(s, rho) / 2^s candidates; the cost is
 *		m * COST_TABLE + probes * COST_PROBE + candidates * COST_CANDIDATE,
 * where a table whose ball has more keys than the table has leaves is read
 * whole instead (as the scan does), and a tail passes only the candidates
 * whose key lies within r.  Few substrings make long keys and probe balls
 * that explode; many make short keys that match many rows, which a tail
 * rejects.  Without tails the minimum sits near s = log2(rows), as Norouzi
 * et al. find; with them, at more and shorter substrings.  The
 * planner prices scans by the same model (permcost.c); README.perm ("Codes
 * wider than 64 bits") gives the rule with worked numbers.
 *
 * IDENTIFICATION
 *	  src/index/permwidelayout.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "port/pg_bitutils.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "index/permlayout.h"

/*
 * A layout is chosen for at least this many rows (an index built small):
 * simhash.wide_layout_min_rows, which only tests change, so that an index
 * created empty changes its layout within a few thousand rows (permgrow.c)
 */
#define WIDE_MIN_LAYOUT_ROWS	(1024 * 1024)
int			perm_wide_layout_min_rows = WIDE_MIN_LAYOUT_ROWS;

/*
 * The model's costs, in probes of one key range (about 0.3 us on the
 * development machine, where an entry tested costs about 4 ns and a
 * candidate's row read and checked about 1 us)
 */
#define WIDE_COST_TABLE			4.0 /* a descent into each table */
#define WIDE_COST_PROBE			1.0 /* one key range within a leaf */
#define WIDE_COST_CANDIDATE		3.0 /* a candidate's row read and checked */
#define WIDE_COST_ENTRY			0.015	/* an entry tested in a table read
										 * whole */

/* Leaves hold about this many short-keyed entries (for the model) */
#define WIDE_ENTRIES_PER_LEAF	600.0

/*
 * Code bits a key keeps after its substring (its tail), when the layout
 * keeps any: 24 bits add three bytes to a leaf entry and reject all but 1%
 * of random rows at radius 6 (the tail alone must lie within the radius)
 */
#define WIDE_TAIL_BITS			24

/* Define the setting for tests, hidden as permhandler.c's are; called from _PG_init */
void
PermWideInit(void)
{
	DefineCustomIntVariable("simhash.wide_layout_min_rows",
							"Fewest rows the layout of an index on bit(n) codes is chosen for (for tests).",
							NULL,
							&perm_wide_layout_min_rows,
							WIDE_MIN_LAYOUT_ROWS, 1, INT_MAX,
							PGC_SUSET,
							GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
}

/* Bits of substring t of a width-bit code cut into m */
int
PermWideSubstringBits(int width, int m, int t)
{
	return (width - t + m - 1) / m;
}

/*
 * The fewest and the most substrings a width-bit code may be cut into: a
 * key holds 64 bits, of which a tenant's hash takes the upper 16; a
 * substring holds a bit at least, and each is a table
 */
int
PermWideFewestSubstrings(int width, int tenants)
{
	return tenants > 0 ? (width + PERM_TENANT_SHIFT - 1) / PERM_TENANT_SHIFT :
		(width + 63) / 64;
}

int
PermWideMostSubstrings(int width)
{
	return Min(PERM_MAX_TABLES, width);
}

/*
 * Code bits a key keeps after its substring, at most, in an index with
 * tenants leading columns built for a design radius: every bit the key has
 * room for after leading columns (with KeyTid.extra they then hold a
 * 64-bit code whole); else WIDE_TAIL_BITS when the radius is less than half
 * of it (at larger radii a random row's tail would pass the bound as often
 * as not, and only lengthen the entries), and none otherwise
 */
int
PermWideTail(int tenants, int radius)
{
	if (tenants > 0)
		return PERM_TENANT_SHIFT;
	return 2 * radius < WIDE_TAIL_BITS ? WIDE_TAIL_BITS : 0;
}

/*
 * The layout of m substrings (every permutation the identity, every bit in
 * block 0): what the build writes, and what the metapage's check compares
 * with (permpage.c)
 */
void
PermWideFillLayout(int width, int tenants, int radius, int m, int tail,
				   PermLayout *layout)
{
	int			t,
				i;

	memset(layout, 0, sizeof(PermLayout));
	layout->width = width;
	layout->tenants = tenants;
	layout->tail = tail;
	layout->extra = tenants > 0 ? PERM_TENANT_EXTRA_BITS : 0;
	layout->max_distance = radius;
	layout->blocks = m;
	layout->ntables = m;
	for (t = 0; t < m; t++)
	{
		layout->prefix_bits[t] = PermWideSubstringBits(width, m, t);
		for (i = 0; i < 64; i++)
			layout->bits[t][i] = 63 - i;
	}
}

/*
 * The layout of an index on width-bit codes: m substrings as given, or the
 * m of least modelled cost of a query at the design radius over rows (at
 * least simhash.wide_layout_min_rows, 2^20).  Keys keep a tail
 * (PermWideTail): of WIDE_TAIL_BITS when the design radius is less than
 * half of it.  The tail rejects most of the rows a short substring
 * matches, so with it the model takes more, shorter substrings, each
 * probed at a smaller radius.
 */
void
PermWideChooseLayout(int width, int tenants, int radius, int substrings,
					 double rows, PermLayout *layout)
{
	double		plan_rows = Max(rows, (double) perm_wide_layout_min_rows);
	int			tail = PermWideTail(tenants, radius);
	int			best = substrings;
	double		best_cost = -1;
	int			m;

	for (m = PermWideFewestSubstrings(width, tenants);
		 substrings == 0 && m <= PermWideMostSubstrings(width); m++)
	{
		PermLayout	trial;
		double		probes,
					candidates,
					cost;

		PermWideFillLayout(width, tenants, radius, m, tail, &trial);
		PermWideModel(&trial, plan_rows, radius, true, &probes, &candidates);
		cost = m * WIDE_COST_TABLE + probes * WIDE_COST_PROBE +
			candidates * WIDE_COST_CANDIDATE;
		if (best_cost < 0 || cost < best_cost)
		{
			best_cost = cost;
			best = m;
		}
	}
	PermWideFillLayout(width, tenants, radius, best, tail, layout);
}

/*
 * Code bits that table t's key keeps after its substring: the layout's
 * tail, as far as the key has room below the substring (64 bits, of which
 * a tenant's hash takes the upper 16) and the code has other bits
 */
int
PermWideTailBits(const PermLayout *layout, int t)
{
	int			s = layout->prefix_bits[t];
	int			room = (layout->tenants > 0 ? PERM_TENANT_SHIFT : 64) - s;

	return Max(0, Min(layout->tail, Min(room, layout->width - s)));
}

/*
 * Code bits that table t's entries keep beyond the key, in KeyTid.extra:
 * the next bits after the tail (in the same order), as many as the layout
 * allows and the code has
 */
int
PermWideExtraBits(const PermLayout *layout, int t)
{
	int			s = layout->prefix_bits[t];

	return Max(0, Min(layout->extra,
					  layout->width - s - PermWideTailBits(layout, t)));
}

/*
 * Does an entry of table t hold its row's whole code (substring, tail and
 * extra bits together)?  Then the distance between an entry and a query's
 * key and extra is the codes' distance, with no row to read.
 */
bool
PermWideEntryHoldsCode(const PermLayout *layout, int t)
{
	return layout->prefix_bits[t] + PermWideTailBits(layout, t) +
		PermWideExtraBits(layout, t) == layout->width;
}

/*
 * How many of the substrings after t (up to the last, m - 1) table t's
 * tail holds whole; *rest is set to the tail's bits after them.  Table t's
 * keys then give the distance over substrings t .. t + n exactly: the
 * index-only sweep within a tenant reads table t for them and goes on at
 * t + n + 1 (permwidescan.c).
 */
int
PermWideTailSubstrings(const PermLayout *layout, int t, int *rest)
{
	int			bits = PermWideTailBits(layout, t);
	int			n = 0;

	while (t + n + 1 < layout->ntables && bits >= layout->prefix_bits[t + n + 1])
	{
		bits -= layout->prefix_bits[t + n + 1];
		n++;
	}
	*rest = bits;
	return n;
}

/*
 * Each table's key of a code: substring t's bits, its first bit the most
 * significant, then its tail (PermWideTailBits): the leading bits of
 * substrings t + 1, t + 2, ... (mod m), in that order.  The substring
 * bits select the key ranges a probe reads; the tail only sharpens the
 * lower bound that the distance between two keys gives.  Reads the set
 * bits only.
 */
void
PermWideKeys(const PermLayout *layout, const VarBit *code, uint64 *keys,
			 uint16 *extras)
{
	const bits8 *p = VARBITS(code);
	int			nbytes = VARBITBYTES(code);
	int			m = layout->ntables;
	uint64		sub[PERM_MAX_TABLES];
	int			byte;
	int			t;

	memset(keys, 0, m * sizeof(uint64));
	for (byte = 0; byte < nbytes; byte++)
	{
		uint32		v = p[byte];
		/* pos / m and pos % m of the byte's first bit: two divisions a byte */
		int			q0 = (byte * 8) / m;
		int			r0 = (byte * 8) % m;

		while (v != 0)
		{
			int			b = pg_leftmost_one_pos32(v);
			int			pos = byte * 8 + (7 - b);
			int			sub_of_bit = r0 + (7 - b);
			int			q = q0;

			/* without a division a bit: this loop runs for every set bit */
			while (sub_of_bit >= m)
			{
				sub_of_bit -= m;
				q++;
			}
			v &= ~((uint32) 1 << b);
			if (pos >= layout->width)
				break;			/* padding, zero in a valid bit string */
			keys[sub_of_bit] |= UINT64CONST(1) <<
				(layout->prefix_bits[sub_of_bit] - 1 - q);
		}
	}
	if (extras)
		memset(extras, 0, m * sizeof(uint16));
	if (layout->tail == 0)
		return;
	memcpy(sub, keys, m * sizeof(uint64));
	for (t = 0; t < m; t++)
	{
		int			tbits = PermWideTailBits(layout, t);
		int			ebits = PermWideExtraBits(layout, t);
		int			need = tbits + ebits;
		uint64		tail = 0;
		int			u = t;

		/*
		 * the bits after substring t, each next substring from its most
		 * significant bit: the tail's, then the extra's, one run of at most
		 * 64 bits (neither reaches back to substring t)
		 */
		while (need > 0)
		{
			int			s,
						take;

			u = (u + 1) % m;
			s = layout->prefix_bits[u];
			take = Min(need, s);
			tail = (tail << take) | (sub[u] >> (s - take));
			need -= take;
		}
		keys[t] = (sub[t] << tbits) | (tail >> ebits);
		if (extras)
			extras[t] = (uint16) (tail & ((UINT64CONST(1) << ebits) - 1));
	}
}

/*
 * The radius at which table t of m is probed for a query of radius r (the
 * refined pigeonhole above); -1: the table need not be probed
 */
int
PermWideProbeRadius(int m, int radius, int t)
{
	int			f = radius / m;
	int			a = radius % m;

	return t <= a ? f : f - 1;
}

/* Keys within radius of a key of bits bits: sum of C(bits, i), i <= radius */
double
PermWideBall(int bits, int radius)
{
	double		c = 1,
				sum = 0;
	int			i;

	for (i = 0; i <= Min(radius, bits); i++)
	{
		sum += c;
		c = c * (bits - i) / (i + 1);
	}
	return sum;
}

/*
 * The model of one query of radius r over rows uniform codes: key ranges
 * probed (a table read whole counts its leaves), with the entries tested
 * counted at WIDE_COST_ENTRY / WIDE_COST_PROBE, and candidates found (at
 * most rows).  A radius scan (filtered) hands on only the entries whose
 * key lies within r of the query's, substring and tail together: of the
 * keys whose substring is i bits away, a share Ball(T, r - i) / 2^T.  An
 * ordered scan reads every entry it meets.
 */
void
PermWideModel(const PermLayout *layout, double rows, int radius,
			  bool filtered, double *probes, double *candidates)
{
	double		leaves = rows / WIDE_ENTRIES_PER_LEAF + 1;
	int			t;

	*probes = 0;
	*candidates = 0;
	for (t = 0; t < layout->ntables; t++)
	{
		int			s = layout->prefix_bits[t];
		int			tail = filtered ? PermWideTailBits(layout, t) : 0;
		int			rho = PermWideProbeRadius(layout->ntables, radius, t);
		double		ball,
					entries,
					passed = 0;
		int			i;

		if (rho < 0)
			continue;
		ball = PermWideBall(s, rho);
		if (ball > leaves)
		{
			/* the table read whole: with a tail, every row is tested */
			*probes += leaves;
			entries = rows;
			if (tail > 0)
				passed = rows * PermWideBall(s + tail, radius) /
					ldexp(1.0, s + tail);
			else
				passed = rows * Min(1.0, ball / ldexp(1.0, s));
		}
		else
		{
			*probes += ball;
			entries = rows * ball / ldexp(1.0, s);
			if (tail > 0)
			{
				double		c = 1;	/* C(s, i) */

				for (i = 0; i <= Min(rho, s); i++)
				{
					passed += c * PermWideBall(tail, radius - i);
					c = c * (s - i) / (i + 1);
				}
				passed *= rows / ldexp(1.0, s + tail);
			}
			else
				passed = entries;
		}
		*probes += entries * WIDE_COST_ENTRY / WIDE_COST_PROBE;
		*candidates += passed;
	}
	*candidates = Min(*candidates, rows);
}

/*
 * The table the index-only read goes on with after table t: t + 1 + n, n
 * the substrings t's tail holds whole; *rest is set to the bits of t's
 * keys below them, left out of the sum.  Every table without tails, every
 * other one when each key keeps the next substring whole.
 */
int
PermWideTenantNextTable(const PermLayout *layout, int t, int *rest)
{
	return t + 1 + PermWideTailSubstrings(layout, t, rest);
}

/*
 * The number of tables the index-only read goes through: one when its
 * entries hold the whole code
 */
int
PermWideTenantTables(const PermLayout *layout)
{
	int			n = 0;
	int			rest;
	int			t;

	if (PermWideEntryHoldsCode(layout, 0))
		return 1;
	t = 0;
	while (t < layout->ntables)
	{
		t = PermWideTenantNextTable(layout, t, &rest);
		n++;
	}
	return n;
}
