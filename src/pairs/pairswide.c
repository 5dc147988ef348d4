/*-------------------------------------------------------------------------
 *
 * pairswide.c
 *		simhash_pairs() and simhash_clusters() over bit(n) codes (PDQ image
 *		hashes, 128-bit fingerprints, binary vectors): the batch form of
 *		multi-index hashing.
 *
 * The 64-bit search (pairssearch.c) sorts whole fingerprints by permuted
 * prefixes.  A code of n bits is cut instead, as simhash_perm's index of
 * wide codes cuts it (README.perm, "Codes wider than 64 bits"), into m
 * substrings, substring j holding the bits whose position p has
 * p mod m = j.  Two codes within distance k differ in at most k bits, so
 * by pigeonhole some substring of theirs differs in at most s = floor(k/m)
 * bits.  Within each substring the 64-bit batch search's own argument
 * applies: cut the substring into B blocks, and two substrings within s
 * agree on all the blocks of at least one choice of B - s of them.  So for
 * every substring j and every such choice t (C(B, s) of them), the codes
 * are sorted by the chosen blocks' bits, and each group of equal bits is
 * compared pair by pair on the whole code.
 *
 * Every pair within k is found at least once; it is reported once, at the
 * first (j, t) where it meets: a pair found in (j, t) is passed over if
 * the two differ in at most s blocks of an earlier substring (they met
 * there, in the pass that keeps the other blocks: two substrings more
 * than s bits apart meet too when their differing bits share blocks), or
 * if an earlier choice of substring j keeps no block where they differ.
 * No set of the pairs found is kept.
 *
 * Identical codes.  The rows are first sorted by their whole code, and a
 * run of identical codes stands as one code in the search: its own pairs
 * (distance 0) are made from the run, and a pair of codes found stands for
 * every pair of their rows (simhash_clusters joins each run once, and one
 * row of each code).  100,000 copies of one image cost 100,000 unions, not
 * 5 billion comparisons in every table.
 *
 * The layout.  m runs from the fewest substrings of at most 64 bits to
 * k + 1 (then s = 0), and B from s + 1 to 16; each (m, B) costs m C(B, s)
 * passes over the u distinct codes (building and sorting the keys, about
 * PASS_COST comparisons' worth a code) and the comparisons within groups,
 * u^2 / 2^(P+1) a pass for P bits kept of the substring (random codes).
 * The cheapest wins, or comparing every pair of codes (u^2 / 2) when that
 * is cheaper: a small table, or a radius near half the width.  For PDQ
 * (256 bits, k = 31) at a million rows: 8 substrings of 32 bits, s = 3,
 * B = 7: 280 sorted passes, about 4 codes a group.  The constants were
 * measured there, by forcing B = 7 and B = 8 (280 and 448 passes, 492 and
 * 215 million comparisons, 27.2 and 33.3 s): a pass about 66 ns a code, a
 * comparison of two 256-bit codes about 18 ns.
 *
 * A pass.  Each distinct code becomes one word, its key (the kept blocks'
 * bits, packed; a 32-bit hash of them when there are more than 32) above
 * the number of its first row, and the words are radix-sorted on the key.
 * The rows are in the order of their codes, so a word leads straight to
 * its code.  A group's codes are random rows, read from memory: they are
 * fetched ahead (prefetch_code) while the groups before are compared, and
 * the comparisons are compiled with POPCNT where the CPU has it
 * (SIMHASH_POPCNT).  A hashed key may join codes that differ in a kept
 * block: first_meeting checks the blocks, so the pair is reported where
 * it truly meets.
 *
 * Memory.  The codes, their rows' positions and the search's arrays are
 * held in memory, about n/8 + 40 bytes a row, within maintenance_work_mem
 * (a batch job sized as CREATE INDEX is): the rows are put in the order of
 * their codes in place.  A read that would need more stops with an error
 * that says how much.  The 64-bit search spills to temporary files
 * instead; wide codes are read through the executor (pairsquery.c), whose
 * records carry each row's key or its place in the key spool, so nothing
 * here reads the table.
 *
 * IDENTIFICATION
 *	  src/pairs/pairswide.c
 *
 *-------------------------------------------------------------------------
 */
#include "pairs/pairs.h"

#include "common/hashfn.h"
#include "port/pg_bitutils.h"
#include "utils/varbit.h"

/* Bytes a row takes in the search: its code plus these */
#define WIDE_ROW_BYTES		40

/* Cost of a pass over one distinct code, in comparisons of two codes */
#define PASS_COST			12.0

/* The most blocks of a substring, and passes of a layout */
#define WIDE_MAX_BLOCKS		16
#define WIDE_MAX_PASSES		4096

/* The layout of a search: m substrings of B blocks each, radius s within */
typedef struct WideLayout
{
	int			m;				/* substrings; 0: every pair compared */
	int			blocks;
	int			s;
	int			passes;			/* m * C(B, s) */
} WideLayout;

/*
 * A pass sorts one word a code: its key (the kept blocks' bits, or a
 * 32-bit hash of them when there are more) above the code's number, by a
 * radix sort of RADIX_BITS a round over the key's bits.
 */
#define RADIX_BITS			11

/* How far ahead in a pass's order the codes to compare are fetched */
#define PREFETCH_AHEAD		16

/* One substring's blocks: width, shift and mask of each in the substring */
typedef struct WideBlocks
{
	int			width;			/* of the substring */
	int			nblocks;
	int			shift[WIDE_MAX_BLOCKS];
	int			len[WIDE_MAX_BLOCKS];
	uint64		mask[WIDE_MAX_BLOCKS];	/* in place */
} WideBlocks;

/* The search's state beyond the rows */
typedef struct WideSearch
{
	PairsState *ps;
	PairsWideRows *rows;
	MemoryContext sink_cxt;		/* the caller's: what the sink keeps */
	int			k;
	uint32	   *first;			/* distinct code u: rows first[u]..first[u+1] - 1 */
	int64		ncodes;
	WideLayout	layout;
	WideBlocks *blocks;			/* each substring's blocks */
} WideSearch;

void
pairs_wide_begin(PairsState *ps, int width)
{
	PairsWideRows *rows = palloc0(sizeof(PairsWideRows));

	rows->width = width;
	rows->limit = (int64) maintenance_work_mem * 1024;
	ps->search.wide = rows;
}

/* The radius against the codes' width, once it is known */
static void
check_radius(PairsState *ps, int width)
{
	if (ps->search.k > width)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be between 0 and %d for %d-bit codes, not %d",
						width, width, ps->search.k),
				 errdetail("The codes of %s are of %d bits.", ps->src.name, width)));
}

/* The width of the codes, when the column's type says it (bit(n)) */
void
pairs_wide_set_width(PairsState *ps, int width)
{
	if (width <= 0)
		return;
	check_radius(ps, width);
	ps->search.wide->width = width;
}

/*
 * Take one row's code: every code of the read must have the width of the
 * first, and the rows must fit in maintenance_work_mem.
 */
void
pairs_wide_add(PairsState *ps, Datum code, const ItemPointerData *pos)
{
	PairsWideRows *rows = ps->search.wide;
	VarBit	   *bits = DatumGetVarBitP(code);
	int			width = VARBITLEN(bits);

	if (rows->nbytes == 0)
	{
		if (rows->width > 0 && width != rows->width)
			goto mismatch;
		if (width < 1 || width > PERM_MAX_WIDTH)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("codes of %d bits are not supported: 1 to %d bits are",
							width, PERM_MAX_WIDTH)));
		check_radius(ps, width);
		rows->width = width;
		rows->nbytes = VARBITBYTES(bits);
	}
	else if (width != rows->width)
		goto mismatch;

	if ((rows->n + 1) * (rows->nbytes + WIDE_ROW_BYTES) > rows->limit ||
		rows->n >= (int64) PG_UINT32_MAX - 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the %d-bit codes of %s need more than maintenance_work_mem (%d kB)",
						rows->width, ps->src.name, maintenance_work_mem),
				 errdetail("The search of bit(n) codes holds every row in memory, %d bytes a row; %lld rows were read so far.",
						   rows->nbytes + WIDE_ROW_BYTES, (long long) rows->n),
				 errhint("Raise maintenance_work_mem for this call, e.g. SET maintenance_work_mem = '%lldMB', or search a part of the rows at a time.",
					 (long long) (rows->n * 2 * (rows->nbytes + WIDE_ROW_BYTES)) / (1024 * 1024) + 1)));
	if (rows->n == rows->cap)
	{
		int64		cap = Max(1024, rows->cap * 2);

		/* never more than the limit allows, so the last doubling fits */
		cap = Min(cap, rows->limit / (rows->nbytes + WIDE_ROW_BYTES) + 1);
		if (rows->codes == NULL)
		{
			rows->codes = palloc_extended(cap * rows->nbytes, MCXT_ALLOC_HUGE);
			rows->pos = palloc_extended(cap * sizeof(ItemPointerData), MCXT_ALLOC_HUGE);
		}
		else
		{
			rows->codes = repalloc_huge(rows->codes, cap * rows->nbytes);
			rows->pos = repalloc_huge(rows->pos, cap * sizeof(ItemPointerData));
		}
		rows->cap = cap;
	}
	memcpy(rows->codes + rows->n * rows->nbytes, VARBITS(bits), rows->nbytes);
	rows->pos[rows->n] = *pos;
	rows->n++;
	/* a short bit string comes unpacked into a copy: not kept */
	if ((Pointer) bits != DatumGetPointer(code))
		pfree(bits);
	return;

mismatch:
	ereport(ERROR,
			(errcode(ERRCODE_STRING_DATA_LENGTH_MISMATCH),
			 errmsg("codes of %d and %d bits in %s", rows->width, width, ps->src.name),
			 errdetail("simhash_pairs and simhash_clusters compare codes of one width."),
			 errhint("Search each width apart, e.g. with simhash_pairs_query('SELECT key, code FROM ... WHERE length(code) = %d', ...).",
					 width)));
}

int64
pairs_wide_count(PairsState *ps)
{
	return ps->search.wide ? ps->search.wide->n : 0;
}

/* The code of row r (the rows are in the order of their codes) */
static inline const bits8 *
code_of(const WideSearch *ws, int64 r)
{
	return ws->rows->codes + r * ws->rows->nbytes;
}

/* Ask for row r's code ahead of its comparisons: a group's rows are random */
static inline void
prefetch_code(const WideSearch *ws, int64 r)
{
#if defined(__GNUC__) || defined(__clang__)
	__builtin_prefetch(code_of(ws, r));
#endif
}

/* The end of the run of identical codes that starts at row r */
static inline int64
run_end(const WideSearch *ws, int64 r)
{
	int64		e = r + 1;

	while (e < ws->rows->n &&
		   memcmp(code_of(ws, r), code_of(ws, e), ws->rows->nbytes) == 0)
		e++;
	return e;
}

/*
 * Bits that differ between two codes: inlined into the SIMHASH_POPCNT
 * loops below, where simhash_hamming compiles to the POPCNT instruction
 */
static inline int
code_distance(const bits8 *a, const bits8 *b, int nbytes)
{
	int			d = 0;
	int			i;

	for (i = 0; i + 8 <= nbytes; i += 8)
	{
		uint64		x,
					y;

		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		d += simhash_hamming(x, y);
	}
	for (; i < nbytes; i++)
		d += pg_number_of_ones[a[i] ^ b[i]];
	return d;
}

/* Rows sorted by code: qsort_arg's comparison */
static int
compare_codes(const void *a, const void *b, void *arg)
{
	PairsWideRows *rows = (PairsWideRows *) arg;

	return memcmp(rows->codes + (int64) *(const uint32 *) a * rows->nbytes,
				  rows->codes + (int64) *(const uint32 *) b * rows->nbytes,
				  rows->nbytes);
}

/* A pair of rows found: handed to the sink, counted */
static inline void
found_rows(WideSearch *ws, uint32 a, uint32 b, int d)
{
	PairsState *ps = ws->ps;
	MemoryContext old = MemoryContextSwitchTo(ws->sink_cxt);

	ps->search.found++;
	ps->sink.found(ps, &ws->rows->pos[a], &ws->rows->pos[b], d);
	MemoryContextSwitchTo(old);
}

/*
 * Two distinct codes within k, by the first rows of their runs: every
 * pair of their rows for simhash_pairs; for simhash_clusters, the first
 * rows (each run is joined already)
 */
static void
found_codes(WideSearch *ws, int64 ra, int64 rb, int d)
{
	int64		ea,
				eb,
				i,
				j;

	if (ws->ps->search.clusters)
	{
		found_rows(ws, ra, rb, d);
		return;
	}
	ea = run_end(ws, ra);
	eb = run_end(ws, rb);
	for (i = ra; i < ea; i++)
	{
		CHECK_FOR_INTERRUPTS();
		for (j = rb; j < eb; j++)
			found_rows(ws, i, j, d);
	}
}

/*
 * Put the rows in the order of their codes, in place: row i takes the row
 * that was at order[i], cycle by cycle, with one row's room to spare.
 */
static void
apply_order(PairsWideRows *rows, uint32 *order)
{
	int			nbytes = rows->nbytes;
	bits8	   *spare = palloc(nbytes);
	int64		i;

	for (i = 0; i < rows->n; i++)
	{
		ItemPointerData spare_pos;
		int64		j = i;

		if (order[i] == (uint32) i)
			continue;
		memcpy(spare, rows->codes + i * nbytes, nbytes);
		spare_pos = rows->pos[i];
		for (;;)
		{
			int64		k = order[j];

			order[j] = (uint32) j;
			if (k == i)
			{
				memcpy(rows->codes + j * nbytes, spare, nbytes);
				rows->pos[j] = spare_pos;
				break;
			}
			memcpy(rows->codes + j * nbytes, rows->codes + k * nbytes, nbytes);
			rows->pos[j] = rows->pos[k];
			j = k;
		}
	}
	pfree(spare);
}

/*
 * Sort the rows by code and make the distinct codes (each a run of rows);
 * the pairs within each run of identical codes are found here
 */
static void
make_distinct(WideSearch *ws)
{
	PairsWideRows *rows = ws->rows;
	int64		n = rows->n;
	int			nbytes = rows->nbytes;
	uint32	   *order = palloc_extended(n * sizeof(uint32), MCXT_ALLOC_HUGE);
	int64		i;
	int64		u = 0;

	for (i = 0; i < n; i++)
		order[i] = (uint32) i;
	qsort_arg(order, n, sizeof(uint32), compare_codes, rows);
	apply_order(rows, order);
	pfree(order);

	ws->first = palloc_extended((n + 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	for (i = 0; i < n; i++)
	{
		if (i > 0 && memcmp(rows->codes + (i - 1) * nbytes,
							rows->codes + i * nbytes, nbytes) == 0)
		{
			int64		j;

			CHECK_FOR_INTERRUPTS();
			if (ws->ps->search.clusters)
				found_rows(ws, ws->first[u - 1], i, 0);
			else
				for (j = ws->first[u - 1]; j < i; j++)
					found_rows(ws, j, i, 0);
			continue;
		}
		ws->first[u++] = (uint32) i;
	}
	ws->first[u] = (uint32) n;
	ws->ncodes = u;
}

/* C(n, r), or -1 beyond WIDE_MAX_PASSES */
static int
count_choices(int n, int r)
{
	double		c = 1;
	int			i;

	for (i = 1; i <= r; i++)
		c = c * (n - r + i) / i;
	return c > WIDE_MAX_PASSES ? -1 : (int) (c + 0.5);
}

/* The cheapest layout for u distinct codes of width bits within k */
static WideLayout
choose_layout(int width, int k, int64 ncodes, int nbytes)
{
	double		u = (double) ncodes;
	double		compare = 1.0 + nbytes / 16.0;
	double		best_cost = u * (u - 1) / 2 * compare;
	WideLayout	best = {0, 0, 0, 0};
	int			m;

	for (m = (width + 63) / 64; m <= Min(width, k + 1); m++)
	{
		int			s = k / m;
		int			w = width / m;	/* the narrowest substring */
		int			b;

		for (b = s + 1; b <= Min(WIDE_MAX_BLOCKS, w); b++)
		{
			int			choices = count_choices(b, s);
			double		kept;
			double		cost;

			if (choices < 0 || (double) m * choices > WIDE_MAX_PASSES)
				break;
			kept = (double) w * (b - s) / b;
			cost = (double) m * choices *
				(u * PASS_COST + u * u / pow(2.0, kept + 1) * compare);
			if (cost < best_cost)
			{
				best_cost = cost;
				best.m = m;
				best.blocks = b;
				best.s = s;
				best.passes = m * choices;
			}
		}
	}
	return best;
}

/* Compare every pair of distinct codes */
SIMHASH_POPCNT
static void
search_every_pair(WideSearch *ws)
{
	int			nbytes = ws->rows->nbytes;
	int64		u,
				v;

	for (u = 0; u < ws->ncodes; u++)
	{
		const bits8 *a = code_of(ws, ws->first[u]);

		CHECK_FOR_INTERRUPTS();
		for (v = u + 1; v < ws->ncodes; v++)
		{
			int			d = code_distance(a, code_of(ws, ws->first[v]), nbytes);

			if (d <= ws->k)
				found_codes(ws, ws->first[u], ws->first[v], d);
		}
		ws->ps->search.compared += ws->ncodes - u - 1;
	}
}

/* Substring j of a code, its first bit the most significant of w bits */
static uint64
substring_of(const bits8 *code, int width, int m, int j, int w)
{
	uint64		v = 0;
	int			i;

	for (i = 0; i < w; i++)
	{
		int			p = i * m + j;

		if (p >= width)
			break;
		v = (v << 1) | ((code[p / 8] >> (7 - p % 8)) & 1);
	}
	return v;
}

static void
make_blocks(int w, int b, WideBlocks *blocks)
{
	int			i;
	int			start = 0;

	blocks->width = w;
	blocks->nblocks = b;
	for (i = 0; i < b; i++)
	{
		int			len = w / b + (i < w % b ? 1 : 0);

		blocks->len[i] = len;
		blocks->shift[i] = w - start - len;
		blocks->mask[i] = ((len == 64) ? ~UINT64CONST(0) :
						   ((UINT64CONST(1) << len) - 1)) << blocks->shift[i];
		start += len;
	}
}

/* The key of a substring in a pass that keeps the blocks of keep */
static inline uint64
pass_key(const WideBlocks *blocks, uint32 keep, uint64 sub)
{
	uint64		key = 0;
	int			i;

	for (i = 0; i < blocks->nblocks; i++)
		if (keep & (1u << i))
		{
			/* a block of 64 bits is the whole key: no shift by 64 */
			if (blocks->len[i] < 64)
				key <<= blocks->len[i];
			key |= (sub & blocks->mask[i]) >> blocks->shift[i];
		}
	return key;
}

/* The blocks where two substrings differ, as a bit set */
static inline uint32
differing_blocks(const WideBlocks *blocks, uint64 x)
{
	uint32		d = 0;
	int			i;

	for (i = 0; i < blocks->nblocks; i++)
		if (x & blocks->mask[i])
			d |= 1u << i;
	return d;
}

/*
 * Is pass keep[t] of substring j the first where the pair (u, v) meets?
 * Not if they differ in at most s blocks of an earlier substring (there
 * some pass keeps only blocks where they agree: whatever the bits, not
 * only within s bits), or an earlier pass of this substring keeps no block
 * where they differ; and not if this pass keeps one where they differ
 * (their hashed keys collided: they meet in a later pass).
 */
static bool
first_meeting(WideSearch *ws, int64 ra, int64 rb, int j, const uint32 *keep,
			  int t)
{
	const bits8 *a = code_of(ws, ra);
	const bits8 *b = code_of(ws, rb);
	int			m = ws->layout.m;
	int			width = ws->rows->width;
	uint32		d = 0;
	int			i;

	for (i = 0; i <= j; i++)
	{
		const WideBlocks *blocks = &ws->blocks[i];
		uint64		x = substring_of(a, width, m, i, blocks->width) ^
			substring_of(b, width, m, i, blocks->width);

		d = differing_blocks(blocks, x);
		if (i < j && pg_popcount32(d) <= ws->layout.s)
			return false;
	}
	/* d: the blocks of substring j where they differ */
	if ((keep[t] & d) != 0)
		return false;
	for (i = 0; i < t; i++)
		if ((keep[i] & d) == 0)
			return false;
	return true;
}

/*
 * Sort n words by their upper bits (bits of them, at most 32), using tmp
 * (n words); returns the sorted array, words or tmp
 */
static uint64 *
radix_sort(uint64 *words, uint64 *tmp, int64 n, int bits)
{
	uint32		count[1 << RADIX_BITS];
	int			shift;

	for (shift = 32; shift < 32 + bits; shift += RADIX_BITS)
	{
		uint32		sum = 0;
		uint64	   *swap;
		int64		i;
		int			dgt;

		memset(count, 0, sizeof(count));
		for (i = 0; i < n; i++)
			count[(words[i] >> shift) & ((1 << RADIX_BITS) - 1)]++;
		for (dgt = 0; dgt < (1 << RADIX_BITS); dgt++)
		{
			uint32		c = count[dgt];

			count[dgt] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			tmp[count[(words[i] >> shift) & ((1 << RADIX_BITS) - 1)]++] = words[i];
		swap = words;
		words = tmp;
		tmp = swap;
	}
	return words;
}

/* The number of bits the blocks of keep hold */
static int
kept_bits(const WideBlocks *blocks, uint32 keep)
{
	int			bits = 0;
	int			i;

	for (i = 0; i < blocks->nblocks; i++)
		if (keep & (1u << i))
			bits += blocks->len[i];
	return bits;
}

/*
 * The passes of substring j: sort by the kept blocks, compare each group.
 * words holds 2 * ncodes words.
 */
SIMHASH_POPCNT
static void
search_substring(WideSearch *ws, int j, uint64 *subs, uint64 *words)
{
	int			m = ws->layout.m;
	int			width = ws->rows->width;
	int			nbytes = ws->rows->nbytes;
	const WideBlocks *blocks = &ws->blocks[j];
	uint32		keep[WIDE_MAX_PASSES];
	int			nkeep = 0;
	uint32		all = (1u << blocks->nblocks) - 1;
	uint32		set;
	int64		u;
	int			t;

	for (u = 0; u < ws->ncodes; u++)
		subs[u] = substring_of(code_of(ws, ws->first[u]), width, m, j, blocks->width);
	/* every choice of s blocks left out, in one order for first_meeting */
	for (set = 0; set <= all && nkeep < WIDE_MAX_PASSES; set++)
		if (pg_popcount32(set) == ws->layout.s)
			keep[nkeep++] = all & ~set;

	for (t = 0; t < nkeep; t++)
	{
		int			bits = kept_bits(blocks, keep[t]);
		uint64	   *sorted;
		int64		g;

		CHECK_FOR_INTERRUPTS();
		/* each distinct code by its first row: one read of it to compare */
		for (u = 0; u < ws->ncodes; u++)
		{
			uint64		key = pass_key(blocks, keep[t], subs[u]);

			if (bits > 32)
				key = hash_bytes_uint32((uint32) key) ^ (uint32) (key >> 32);
			words[u] = (key << 32) | (uint64) ws->first[u];
		}
		sorted = radix_sort(words, words + ws->ncodes, ws->ncodes, Min(bits, 32));
		for (g = 0; g < ws->ncodes;)
		{
			uint32		key = (uint32) (sorted[g] >> 32);
			int64		end = g + 1;
			int64		x,
						y;

			while (end < ws->ncodes && (uint32) (sorted[end] >> 32) == key)
				end++;
			/* the codes of the groups a little ahead, read by then */
			for (x = g; x < end && x + PREFETCH_AHEAD < ws->ncodes; x++)
				prefetch_code(ws, (uint32) sorted[x + PREFETCH_AHEAD]);
			for (x = g; x < end; x++)
			{
				int64		ra = (uint32) sorted[x];
				const bits8 *a = code_of(ws, ra);

				if (((x - g) & 1023) == 1023)
					CHECK_FOR_INTERRUPTS();
				for (y = x + 1; y < end; y++)
				{
					int64		rb = (uint32) sorted[y];
					int			d = code_distance(a, code_of(ws, rb), nbytes);

					if (d > ws->k ||
						!first_meeting(ws, ra, rb, j, keep, t))
						continue;
					if (ra < rb)
						found_codes(ws, ra, rb, d);
					else
						found_codes(ws, rb, ra, d);
				}
				ws->ps->search.compared += end - x - 1;
			}
			g = end;
		}
	}
}

static void
report(PairsState *ps, const char *what)
{
	if (ps->search.progress)
		ereport(NOTICE,
				(errmsg("simhash: %s", what),
				 errdetail("%.3f s; %lld %s so far, %lld comparisons.",
						   pairs_elapsed(ps), (long long) ps->search.found,
						   ps->search.clusters ? "links" : "pairs",
						   (long long) ps->search.compared)));
}

/*
 * Search the rows taken so far, handing each pair within k to the sink,
 * then forget them (the next tenant's rows come after)
 */
void
pairs_wide_search(PairsState *ps)
{
	PairsWideRows *rows = ps->search.wide;
	WideSearch	ws = {0};
	MemoryContext cxt;
	MemoryContext old;

	if (rows->n < 2)
	{
		rows->n = 0;
		return;
	}
	cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash wide search",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	ws.sink_cxt = old;
	ws.ps = ps;
	ws.rows = rows;
	ws.k = ps->search.k;
	make_distinct(&ws);
	ws.layout = choose_layout(rows->width, ws.k, ws.ncodes, rows->nbytes);
	if (ps->search.progress && !ps->src.by_tenant)
		report(ps, psprintf("%lld rows of %d-bit codes, %lld distinct; %s",
							(long long) rows->n, rows->width, (long long) ws.ncodes,
							ws.layout.m == 0 ? "every pair of codes compared" :
							psprintf("%d substrings of %d to %d bits, within %d bits of each in %d sorted passes",
									 ws.layout.m, rows->width / ws.layout.m,
									 (rows->width + ws.layout.m - 1) / ws.layout.m,
									 ws.layout.s, ws.layout.passes)));
	if (ws.ncodes > 1 && ws.layout.m == 0)
		search_every_pair(&ws);
	else if (ws.ncodes > 1)
	{
		uint64	   *subs = palloc_extended(ws.ncodes * sizeof(uint64), MCXT_ALLOC_HUGE);
		uint64	   *words = palloc_extended(2 * ws.ncodes * sizeof(uint64), MCXT_ALLOC_HUGE);
		int			j;

		ws.blocks = palloc(ws.layout.m * sizeof(WideBlocks));
		for (j = 0; j < ws.layout.m; j++)
		{
			int			w = (rows->width - j + ws.layout.m - 1) / ws.layout.m;

			make_blocks(w, Min(ws.layout.blocks, w), &ws.blocks[j]);
		}
		for (j = 0; j < ws.layout.m; j++)
		{
			search_substring(&ws, j, subs, words);
			if (!ps->src.by_tenant)
				report(ps, psprintf("substring %d of %d searched", j + 1, ws.layout.m));
		}
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	rows->n = 0;
}
