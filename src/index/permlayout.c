/*-------------------------------------------------------------------------
 *
 * permlayout.c
 *		simhash_perm: the bit layout of an index.
 *
 * The 64 bits are split into B blocks; each of the C(B, K) tables keys its
 * entries on a permutation of the bits that puts B - K of the blocks first.
 * This file decides which bit goes to which block (from the data, so that
 * every block carries about the same entropy), lists the tables, turns a
 * table's bit order into lookup tables (PermPermute), and holds the radius
 * arithmetic s(r) that lets an index built for K answer any radius.  None of
 * it touches a page; src/index/README.perm has the reasoning.
 *
 * IDENTIFICATION
 *	  src/index/permlayout.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "utils/rel.h"

#include "fingerprint/fingerprint.h"
#include "index/permlayout.h"

/*
 * Number of tables C(blocks, max_distance), or -1 if it is more than
 * PERM_MAX_TABLES.
 */
int
PermCountTables(int blocks, int max_distance)
{
	int64		c = 1;
	int			m = Min(max_distance, blocks - max_distance);
	int			i;

	/*
	 * C(blocks, m) with m <= blocks / 2: the partial products C(blocks, i)
	 * grow with i, so none exceeds the limit unless the result does.
	 */
	for (i = 0; i < m; i++)
	{
		c = c * (blocks - i) / (i + 1);
		if (c > PERM_MAX_TABLES)
			return -1;
	}
	return (int) c;
}

/*
 * Check a pair of layout options: CREATE INDEX and ALTER INDEX ... SET
 * (through permoptions) and the build all apply the same rule.  blocks is
 * the number given or, when none is, max_distance + 1.
 */
void
PermCheckLayoutOptions(int max_distance, int blocks)
{
	if (blocks <= max_distance || blocks > PERM_MAX_BLOCKS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("blocks %d is out of range for radius %d",
						blocks, max_distance),
				 errdetail("blocks must be between %d and %d: two fingerprints within the radius must agree on at least one whole block.",
						   max_distance + 1, PERM_MAX_BLOCKS)));
	if (PermCountTables(blocks, max_distance) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("blocks = %d and radius = %d need more than %d tables",
						blocks, max_distance, PERM_MAX_TABLES),
				 errhint("The index keeps C(blocks, radius) tables; use fewer blocks.")));
}

/* Binary entropy of a bit that is 1 with probability p */
static double
bit_entropy(double p)
{
	if (p <= 0.0 || p >= 1.0)
		return 0.0;
	return -(p * log2(p) + (1.0 - p) * log2(1.0 - p));
}

/*
 * Each bit's entropy, rounded so that noise ties (bit_ones[i] is the share
 * of rows with bit i set; NULL means uniform), and the bits in order of
 * decreasing entropy, ties most significant first.
 */
static void
order_bits_by_entropy(const double *bit_ones, double *entropy, int *order)
{
	int			i,
				j;

	for (i = 0; i < 64; i++)
	{
		entropy[i] = bit_ones ?
			rint(bit_entropy(bit_ones[i]) * 100.0) / 100.0 : 1.0;
		order[i] = 63 - i;
	}
	/* insertion sort: stable, so equal entropies keep the order above */
	for (i = 1; i < 64; i++)
	{
		int			x = order[i];

		for (j = i; j > 0 && entropy[order[j - 1]] < entropy[x]; j--)
			order[j] = order[j - 1];
		order[j] = x;
	}
}

/*
 * Bits in block b of a layout of `blocks` blocks: sizes as equal as
 * possible, the larger ones first (every version has cut them so)
 */
int
PermBlockSize(int blocks, int b)
{
	return 64 / blocks + (b < 64 % blocks ? 1 : 0);
}

/*
 * Deal the bits, highest entropy first, each to the block with the least
 * entropy so far that still has room (ties: the lowest block).  Blocks have
 * sizes as equal as possible, the larger ones first.
 */
static void
assign_bits_to_blocks(int blocks, const double *entropy, const int *order,
					  uint8 *block_of_bit)
{
	int			size[PERM_MAX_BLOCKS];
	int			filled[PERM_MAX_BLOCKS] = {0};
	double		block_entropy[PERM_MAX_BLOCKS] = {0};
	int			b,
				i;

	for (b = 0; b < blocks; b++)
		size[b] = PermBlockSize(blocks, b);

	for (i = 0; i < 64; i++)
	{
		int			bit = order[i];
		int			best = -1;

		for (b = 0; b < blocks; b++)
		{
			if (filled[b] == size[b])
				continue;
			if (best < 0 || block_entropy[b] < block_entropy[best] - 1e-9)
				best = b;
		}
		block_of_bit[bit] = (uint8) best;
		filled[best]++;
		block_entropy[best] += entropy[bit];
	}
}

/*
 * The bit order of the table whose prefix is the blocks marked in_prefix:
 * those blocks first, then the rest, each block's bits high first
 * (block_bits[b], nbits[b] of them).  Returns the prefix length.
 */
static int
table_bit_order(int blocks, uint8 block_bits[][64], const int *nbits,
				const bool *in_prefix, uint8 *bits)
{
	int			pos = 0;
	int			prefix_bits = 0;
	int			pass,
				b;

	for (pass = 0; pass < 2; pass++)
		for (b = 0; b < blocks; b++)
		{
			if (in_prefix[b] != (pass == 0))
				continue;
			memcpy(bits + pos, block_bits[b], nbits[b]);
			pos += nbits[b];
			if (pass == 0)
				prefix_bits += nbits[b];
		}
	Assert(pos == 64);
	return prefix_bits;
}

/*
 * Advance chosen[0..k-1], a k-subset of 0..n-1 in increasing order, to the
 * next one in lexical order; false after the last.
 */
static bool
next_combination(int *chosen, int k, int n)
{
	int			i,
				j;

	for (i = k - 1; i >= 0 && chosen[i] == n - k + i; i--)
		;
	if (i < 0)
		return false;
	chosen[i]++;
	for (j = i + 1; j < k; j++)
		chosen[j] = chosen[j - 1] + 1;
	return true;
}

/*
 * The tables of a layout whose blocks are set (max_distance, blocks and
 * block_of_bit): one per choice of blocks - max_distance blocks, in lexical
 * order, each block's bits high first.  The build writes them so, and the
 * metapage's check computes them again to compare (permpage.c).
 */
void
PermLayoutTables(PermLayout *layout)
{
	int			chosen[PERM_MAX_BLOCKS];
	int			nchosen = layout->blocks - layout->max_distance;
	uint8		block_bits[PERM_MAX_BLOCKS][64];
	int			nbits[PERM_MAX_BLOCKS] = {0};
	int			i,
				t = 0;

	/* each block's bits, high first */
	for (i = 63; i >= 0; i--)
	{
		int			b = layout->block_of_bit[i];

		Assert(b < layout->blocks);
		block_bits[b][nbits[b]++] = (uint8) i;
	}
	for (i = 0; i < nchosen; i++)
		chosen[i] = i;
	do
	{
		bool		in_prefix[PERM_MAX_BLOCKS] = {0};

		Assert(t < PERM_MAX_TABLES);
		for (i = 0; i < nchosen; i++)
			in_prefix[chosen[i]] = true;
		layout->prefix_bits[t] = table_bit_order(layout->blocks, block_bits,
												 nbits, in_prefix,
												 layout->bits[t]);
		t++;
	} while (next_combination(chosen, nchosen, layout->blocks));
	layout->ntables = t;
}

/*
 * Decide the layout of an index: which block every bit belongs to, and the
 * tables, one per choice of blocks - max_distance blocks in lexical order.
 *
 * Bits are spread so that every block, and so every table prefix, carries
 * about the same information.  Entropies are rounded and ties broken by bit
 * position, so the result is deterministic; uniform statistics give the
 * interleaved split in which bit i belongs to block (63 - i) mod B.
 */
static void
PermChooseLayout(int max_distance, int blocks, const double *bit_ones,
				 PermLayout *layout)
{
	double		entropy[64];
	int			order[64];

	layout->width = 0;			/* 64-bit fingerprints */
	layout->tenants = 0;
	layout->tail = 0;
	layout->extra = 0;
	order_bits_by_entropy(bit_ones, entropy, order);
	assign_bits_to_blocks(blocks, entropy, order, layout->block_of_bit);

	layout->max_distance = max_distance;
	layout->blocks = blocks;
	PermLayoutTables(layout);
}

/* The lookup tables of a permutation (see PermPermutation) */
void
PermMakePermutation(const uint8 *bits, PermPermutation *perm)
{
	int			v,
				j;

	memset(perm, 0, sizeof(PermPermutation));
	/* bits[j] is the fingerprint bit that becomes key bit 63 - j */
	for (j = 0; j < 64; j++)
	{
		int			byte = bits[j] / 8;
		int			bit = bits[j] % 8;

		for (v = 0; v < 256; v++)
			if (v & (1 << bit))
				perm->spread[byte][v] |= UINT64CONST(1) << (63 - j);
	}
}

/*
 * s(r): how many bits of a table's prefix a match within radius r may
 * differ in, in the table that fits it best, for an index of `blocks`
 * blocks built for max_distance.  0 for r <= max_distance.  README.perm,
 * "Any radius", has the proof.
 */
int
PermPrefixFlips(int blocks, int max_distance, int radius)
{
	int			chosen = blocks - max_distance;
	int			extra = (radius % blocks) - max_distance;

	return chosen * (radius / blocks) + (extra > 0 ? extra : 0);
}

/*
 * Whether an ordered scan reads each ring a table at a time: when every
 * table's prefix is one block (blocks = max_distance + 1, one table per
 * block: the default layout).  Rings 0 .. sigma - 1 of every table and ring
 * sigma of the first j tables have then seen every row within
 * blocks * sigma + j - 1 (README.perm, "Nearest neighbours").
 */
bool
PermRingsByTable(const PermLayout *layout)
{
	return layout->blocks - layout->max_distance == 1 &&
		layout->ntables == layout->blocks;
}

/*
 * The rings an ordered scan reads until it has seen every row within
 * distance c >= 0: rings 0 .. *ring - 1 of every table and ring *ring of the
 * first *tables tables (of all of them unless rings are read a table at a
 * time).  Used to price the scan (permcost.c).
 */
void
PermRingsToSee(const PermLayout *layout, int c, int *ring, int *tables)
{
	if (PermRingsByTable(layout))
	{
		/* the least sigma, then the least j >= 1, with B sigma + j - 1 >= c */
		*ring = c / layout->blocks;
		*tables = c % layout->blocks + 1;
	}
	else
	{
		*ring = PermPrefixFlips(layout->blocks, layout->max_distance, c);
		*tables = layout->ntables;
	}
}

/*
 * The layout for n fingerprints whose bits were counted in votes (how often
 * each bit is set spreads the bits over the blocks); with no rows, the
 * uniform layout.  Used by CREATE INDEX and by simhash_pairs().
 */
void
PermChooseLayoutFromVotes(int max_distance, int blocks, const SimhashVoter *votes,
						  int64 n, PermLayout *layout)
{
	double		bit_ones[64];
	int			i;

	for (i = 0; i < 64; i++)
		bit_ones[i] = n > 0 ? (double) votes->counts[i] / (double) n : 0.5;
	PermChooseLayout(max_distance, blocks, n > 0 ? bit_ones : NULL, layout);
}
