/*-------------------------------------------------------------------------
 *
 * permlayout.h
 *		simhash_perm: the arithmetic of the two layouts, which knows no
 *		relation.  The 64-bit permuted tables (permlayout.c): blocks,
 *		tables, permutations, the flips a radius probes.  The substrings of
 *		bit(n) codes (permwidelayout.c): how a code is cut, each key's tail,
 *		probe radii, the cost model that picks the layout.  README.perm
 *		derives them.
 *
 * IDENTIFICATION
 *	  src/index/permlayout.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PERMLAYOUT_H
#define PERMLAYOUT_H

#include "utils/varbit.h"

/* Reloption limits and defaults */
#define PERM_DEFAULT_MAX_DISTANCE	3
#define PERM_MAX_MAX_DISTANCE		12
#define PERM_MAX_BLOCKS				16
#define PERM_MAX_TABLES				64

/* Widest bit(n) code, and the radius an option leaves to the width */
#define PERM_MAX_WIDTH			4096
#define PERM_DEFAULT_WIDE_RADIUS	(-1)	/* width / 8 */

/*
 * An index with leading equality columns, (tenant, ..., code), keys every
 * table on a 16-bit hash of the tenant above 48 bits of the code, and each
 * entry keeps 16 more bits of the code beside its key (KeyTid.extra): a
 * 64-bit code whole (permtenant.c, permwidelayout.c)
 */
#define PERM_MAX_TENANT_COLUMNS	8
#define PERM_TENANT_SHIFT		48
#define PERM_TENANT_EXTRA_BITS	16
/* the code's bits of a key after leading columns, below the tenant's */
#define PERM_TENANT_CODE_MASK	(PG_UINT64_MAX >> (64 - PERM_TENANT_SHIFT))

/*
 * The bit layout of an index, chosen at build time (and again while the
 * index is young, permgrow.c): which block each bit belongs to and, for
 * each table, the order of the 64 bits in its key.
 */
typedef struct PermLayout
{
	int			width;			/* 0: 64-bit fingerprints; else bit(width)
								 * codes in ntables substrings (permwidelayout.c) */
	int			tenants;		/* leading equality columns (permtenant.c) */
	int			tail;			/* bit(n) codes: bits of the code each key
								 * keeps after its substring, at most */
	int			extra;			/* bits of the code each entry keeps beyond
								 * its key (KeyTid.extra) */
	int			max_distance;	/* K (for bit(n) codes, the design radius) */
	int			blocks;			/* B */
	int			ntables;		/* C(B, K) */
	uint8		block_of_bit[64];
	int			prefix_bits[PERM_MAX_TABLES];
	uint8		bits[PERM_MAX_TABLES][64];
} PermLayout;

/*
 * A table's permutation as lookup tables: byte b of a fingerprint with
 * value v contributes spread[b][v] to the key, so permuting is eight loads
 * and ORs instead of 64 bit moves.
 */
typedef struct PermPermutation
{
	uint64		spread[8][256];
} PermPermutation;

/* A fingerprint's key in one table, through its lookup tables */
static inline uint64
PermPermute(const PermPermutation *perm, uint64 fp)
{
	return perm->spread[0][fp & 0xFF] | perm->spread[1][(fp >> 8) & 0xFF] |
		perm->spread[2][(fp >> 16) & 0xFF] | perm->spread[3][(fp >> 24) & 0xFF] |
		perm->spread[4][(fp >> 32) & 0xFF] | perm->spread[5][(fp >> 40) & 0xFF] |
		perm->spread[6][(fp >> 48) & 0xFF] | perm->spread[7][fp >> 56];
}

/* permlayout.c (SimhashVoter: fingerprint.h) */
struct SimhashVoter;
extern int	PermCountTables(int blocks, int max_distance);
extern void PermCheckLayoutOptions(int max_distance, int blocks);
extern int	PermBlockSize(int blocks, int b);
extern void PermLayoutTables(PermLayout *layout);
extern void PermChooseLayoutFromVotes(int max_distance, int blocks,
									  const struct SimhashVoter *votes, int64 n,
									  PermLayout *layout);
extern void PermMakePermutation(const uint8 *bits, PermPermutation *perm);
extern int	PermPrefixFlips(int blocks, int max_distance, int radius);
extern bool PermRingsByTable(const PermLayout *layout);
extern void PermRingsToSee(const PermLayout *layout, int c, int *ring,
						   int *tables);

/* permwidelayout.c */
extern int	perm_wide_layout_min_rows;
extern void PermWideInit(void);
extern int	PermWideSubstringBits(int width, int m, int t);
extern int	PermWideFewestSubstrings(int width, int tenants);
extern int	PermWideMostSubstrings(int width);
extern int	PermWideTail(int tenants, int radius);
extern void PermWideFillLayout(int width, int tenants, int radius, int m,
							   int tail, PermLayout *layout);
extern void PermWideChooseLayout(int width, int tenants, int radius,
								 int substrings, double rows,
								 PermLayout *layout);
extern void PermWideKeys(const PermLayout *layout, const VarBit *code,
						 uint64 *keys, uint16 *extras);
extern int	PermWideProbeRadius(int m, int radius, int t);
extern int	PermWideTailBits(const PermLayout *layout, int t);
extern int	PermWideExtraBits(const PermLayout *layout, int t);
extern bool PermWideEntryHoldsCode(const PermLayout *layout, int t);
extern int	PermWideTailSubstrings(const PermLayout *layout, int t, int *rest);
extern int	PermWideTenantNextTable(const PermLayout *layout, int t,
									int *rest);
extern int	PermWideTenantTables(const PermLayout *layout);
extern double PermWideBall(int bits, int radius);
extern void PermWideModel(const PermLayout *layout, double rows, int radius,
						  bool filtered, double *probes, double *candidates);

#endif							/* PERMLAYOUT_H */
