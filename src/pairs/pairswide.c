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
 * B = 6: 160 sorted passes, some 15 codes a group.
 *
 * Memory.  The codes, their rows' positions and the search's arrays are
 * held in memory, about n/8 + 40 bytes a row, within maintenance_work_mem
 * (a batch job sized as CREATE INDEX is); a table that needs more is an
 * error that says how much, before the search starts.  The 64-bit search
 * spills to temporary files instead; wide codes are read through the
 * executor (pairsquery.c), whose records carry each row's key or its place
 * in the key spool, so nothing here reads the table.
 *
 * IDENTIFICATION
 *	  src/pairs/pairswide.c
 *
 *-------------------------------------------------------------------------
 */
#include "pairs/pairs.h"

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

/* An entry of a pass's sort: the chosen blocks' bits of a code */
typedef struct WideEntry
{
	uint64		key;
	uint32		code;			/* index of the distinct code */
} WideEntry;

#define ST_SORT wide_sort_entries
#define ST_ELEMENT_TYPE WideEntry
#define ST_COMPARE(a, b) ((a)->key < (b)->key ? -1 : (a)->key > (b)->key ? 1 : 0)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

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
	uint32	   *order;			/* rows sorted by code */
	uint32	   *first;			/* distinct code u: rows order[first[u]..first[u+1]) */
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

static inline const bits8 *
code_of(const WideSearch *ws, int64 u)
{
	return ws->rows->codes + (int64) ws->order[ws->first[u]] * ws->rows->nbytes;
}

/* Bits that differ between two codes */
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
		d += pg_popcount64(x ^ y);
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
 * Two distinct codes within k: every pair of their rows for
 * simhash_pairs; for simhash_clusters, their first rows (each run is
 * joined already)
 */
static void
found_codes(WideSearch *ws, int64 u, int64 v, int d)
{
	uint32		i,
				j;

	if (ws->ps->search.clusters)
	{
		found_rows(ws, ws->order[ws->first[u]], ws->order[ws->first[v]], d);
		return;
	}
	for (i = ws->first[u]; i < ws->first[u + 1]; i++)
		for (j = ws->first[v]; j < ws->first[v + 1]; j++)
			found_rows(ws, ws->order[i], ws->order[j], d);
}

/*
 * Sort the rows by code and make the distinct codes; the pairs within
 * each run of identical codes are found here
 */
static void
make_distinct(WideSearch *ws)
{
	PairsWideRows *rows = ws->rows;
	int64		n = rows->n;
	int64		i;
	int64		u = 0;

	ws->order = palloc_extended(n * sizeof(uint32), MCXT_ALLOC_HUGE);
	for (i = 0; i < n; i++)
		ws->order[i] = (uint32) i;
	qsort_arg(ws->order, n, sizeof(uint32), compare_codes, rows);
	ws->first = palloc_extended((n + 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	for (i = 0; i < n; i++)
	{
		if (i > 0 && compare_codes(&ws->order[i - 1], &ws->order[i], rows) == 0)
		{
			int64		j;

			CHECK_FOR_INTERRUPTS();
			if (ws->ps->search.clusters)
				found_rows(ws, ws->order[ws->first[u - 1]], ws->order[i], 0);
			else
				for (j = ws->first[u - 1]; j < i; j++)
					found_rows(ws, ws->order[j], ws->order[i], 0);
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
static void
search_every_pair(WideSearch *ws)
{
	int			nbytes = ws->rows->nbytes;
	int64		u,
				v;

	for (u = 0; u < ws->ncodes; u++)
	{
		const bits8 *a = code_of(ws, u);

		CHECK_FOR_INTERRUPTS();
		for (v = u + 1; v < ws->ncodes; v++)
		{
			int			d = code_distance(a, code_of(ws, v), nbytes);

			if (d <= ws->k)
				found_codes(ws, u, v, d);
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
			key = (key << blocks->len[i]) | ((sub & blocks->mask[i]) >> blocks->shift[i]);
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
 * Has the pair (u, v), found in pass keep[t] of substring j, met before?
 * In an earlier substring where they differ in at most s blocks (there
 * some pass keeps only blocks where they agree: whatever the bits, not
 * only within s bits), or in an earlier pass of this substring that keeps
 * no block where they differ.
 */
static bool
met_before(WideSearch *ws, int64 u, int64 v, int j, const uint64 *subs,
		   const uint32 *keep, int t)
{
	const bits8 *a = code_of(ws, u);
	const bits8 *b = code_of(ws, v);
	int			m = ws->layout.m;
	uint32		d;
	int			i;

	for (i = 0; i < j; i++)
	{
		const WideBlocks *blocks = &ws->blocks[i];
		uint64		x = substring_of(a, ws->rows->width, m, i, blocks->width) ^
			substring_of(b, ws->rows->width, m, i, blocks->width);

		if (pg_popcount32(differing_blocks(blocks, x)) <= ws->layout.s)
			return true;
	}
	d = differing_blocks(&ws->blocks[j], subs[u] ^ subs[v]);
	for (i = 0; i < t; i++)
		if ((keep[i] & d) == 0)
			return true;
	return false;
}

/* The passes of substring j: sort by the kept blocks, compare each group */
static void
search_substring(WideSearch *ws, int j, uint64 *subs, WideEntry *entries)
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
		subs[u] = substring_of(code_of(ws, u), width, m, j, blocks->width);
	/* every choice of s blocks left out, in one order for met_before */
	for (set = 0; set <= all && nkeep < WIDE_MAX_PASSES; set++)
		if (pg_popcount32(set) == ws->layout.s)
			keep[nkeep++] = all & ~set;

	for (t = 0; t < nkeep; t++)
	{
		int64		g;

		CHECK_FOR_INTERRUPTS();
		for (u = 0; u < ws->ncodes; u++)
		{
			entries[u].key = pass_key(blocks, keep[t], subs[u]);
			entries[u].code = (uint32) u;
		}
		wide_sort_entries(entries, ws->ncodes);
		for (g = 0; g < ws->ncodes;)
		{
			int64		end = g + 1;
			int64		x,
						y;

			while (end < ws->ncodes && entries[end].key == entries[g].key)
				end++;
			for (x = g; x < end; x++)
			{
				const bits8 *a = code_of(ws, entries[x].code);

				if (((x - g) & 1023) == 1023)
					CHECK_FOR_INTERRUPTS();
				for (y = x + 1; y < end; y++)
				{
					int64		cu = entries[x].code;
					int64		cv = entries[y].code;
					int			d = code_distance(a, code_of(ws, cv), nbytes);

					if (d > ws->k ||
						met_before(ws, cu, cv, j, subs, keep, t))
						continue;
					if (cu < cv)
						found_codes(ws, cu, cv, d);
					else
						found_codes(ws, cv, cu, d);
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
		WideEntry  *entries = palloc_extended(ws.ncodes * sizeof(WideEntry), MCXT_ALLOC_HUGE);
		int			j;

		ws.blocks = palloc(ws.layout.m * sizeof(WideBlocks));
		for (j = 0; j < ws.layout.m; j++)
		{
			int			w = (rows->width - j + ws.layout.m - 1) / ws.layout.m;

			make_blocks(w, Min(ws.layout.blocks, w), &ws.blocks[j]);
		}
		for (j = 0; j < ws.layout.m; j++)
		{
			search_substring(&ws, j, subs, entries);
			if (!ps->src.by_tenant)
				report(ps, psprintf("substring %d of %d searched", j + 1, ws.layout.m));
		}
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	rows->n = 0;
}
