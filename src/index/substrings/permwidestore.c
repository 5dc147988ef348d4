/*-------------------------------------------------------------------------
 *
 * permwidestore.c
 *		simhash_perm: the substrings engine's reads of the code store
 *		(store/permstore.c): a row's code found by its heap TID, and the
 *		nearest-neighbour scan of bit(n) codes read in passes, for queries
 *		whose neighbours all lie far (README.perm, "Code store").
 *
 * Found by TID.  The code of a row whose TID a table gave, read from the
 * store instead of the row: the rings of a nearest-neighbour scan of
 * bit(n) codes and an exclusion constraint's check on them read no table
 * row and compute no index expression (README.perm, "Code store", its
 * paragraph "Found by TID").  Each page of the chain of codes keeps the
 * range of its entries' TIDs (permstore.c widens it with every entry
 * added); a backend keeps a directory of the chain's pages and ranges,
 * with the index's state.
 *
 * Read in passes.   * A pass reads the store's pages of codes in chain order and computes the
 * distances of a page of codes at a time (POPCNT).  The first pass keeps
 * the K nearest entries in a bounded max-heap, and a histogram of every
 * entry's distance.  With D the largest distance in the heap, every entry
 * nearer than D is in the heap (one nearer than D outside it would have
 * displaced the one at D), so those are handed out, nearest first; the
 * entries at D too when the heap holds as many as the histogram counted.
 * Each further pass collects every entry at a distance in [lo, hi], lo the
 * least not yet handed out and hi the least distance at which the
 * histogram counts at least twice the previous batch from lo on, and
 * hands them out sorted.  So the rows come in increasing distance, each
 * once, with a few passes over the store: one for a LIMIT 10 or 100, about
 * log4(N / K) for every row.
 *
 * Exact under concurrent writes (README.perm, "Locking"): a pass reads
 * each page whole under its share lock and keeps no pin after it; entries
 * never move between pages, and VACUUM compacts a page in place, so a
 * pass meets every entry that was there when it began and is still there,
 * which includes every row the scan's MVCC snapshot sees.  Entries
 * appended after the scan began belong to rows the snapshot cannot see
 * (the executor checks every TID), so whether a pass meets them does not
 * matter; the histogram, counted by the first pass, only chooses how far
 * the next passes reach.
 *
 * IDENTIFICATION
 *	  src/index/substrings/permwidestore.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/varbit.h"

#include "index/perm.h"
#include "index/permscan.h"
#include "type/hamming_query.h"
#include "type/simhash.h"

/*
 * AVX-512's vector popcount, compiled in where the compiler can target it
 * (x86-64 with GCC or clang), used where the CPU has it: as SIMHASH_POPCNT
 * chooses POPCNT (type/simhash.h), and under the same switch
 */
#if defined(__x86_64__) && defined(__linux__) && defined(__has_attribute) && \
	defined(__has_include) && !defined(SIMHASH_NO_CPU_DISPATCH)
#if __has_attribute(target) && __has_include(<immintrin.h>)
#define PERM_STORE_VPOPCNT
#include <immintrin.h>
#endif
#endif

static bool cpu_has_vector_popcount(int words);

/* simhash.store_vector_popcount (permhandler.c) */
bool		perm_store_vector_popcount = true;

/* Entries the first pass keeps: a LIMIT 100 is usually served by it */
#define STORE_HEAP_SIZE		128
/* Each further batch holds at least this many times the previous one */
#define STORE_BATCH_GROWTH	4
/* Pages read ahead of the one being read (speculatively: the next ones) */
#define STORE_PREFETCH		16

/* An entry met by a pass: its row and its distance */
typedef struct StoreHit
{
	ItemPointerData tid;
	uint16		d;
} StoreHit;

#define ST_SORT sort_store_hits
#define ST_ELEMENT_TYPE StoreHit
#define ST_COMPARE(a, b) ((a)->d != (b)->d ? ((a)->d > (b)->d) - ((a)->d < (b)->d) : \
						  ItemPointerCompare((ItemPointer) &(a)->tid, (ItemPointer) &(b)->tid))
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

struct PermStoreScan
{
	PermState  *state;			/* the index's descriptor, which names it */
	MemoryContext cxt;
	int			width;
	int			words;
	int			esize;
	BlockNumber first;			/* the chains' first pages */
	BlockNumber null_first;
	bool		has_center;
	bool		vector_popcount;	/* page_distances_vpopcnt() */
	uint64	   *center;			/* [words]; distances are 0 without one */
	int			nquals;
	uint64	  **qual_codes;		/* [nquals][words] */
	int		   *qual_radius;
	int			lo;				/* every row nearer than lo handed out */
	int			cap;			/* no row farther than this is wanted */
	int			skip_d;			/* rows at skip_d in skip[] were handed */
	ItemPointerData *skip;		/* sorted */
	int64		nskip;
	bool		counted;		/* the first pass ran: hist[] is filled */
	int64	   *hist;			/* [width + 1]: entries by distance */
	StoreHit   *batch;			/* being handed out */
	int64		nbatch;
	int64		maxbatch;
	int64		next;
	int64		last_batch;		/* rows of the previous batch */
	bool		done;			/* every row up to cap handed out */
	BufferAccessStrategy strategy;
};

/* The code's words, as the store keeps them (zero-padded) */
static uint64 *
code_words(const VarBit *code, int words)
{
	uint64	   *w = palloc0(words * sizeof(uint64));

	memcpy(w, VARBITS(code), VARBITBYTES(code));
	return w;
}

/* Set up a scan of the store handing out rows from distance from to cap */
PermStoreScan *
PermStoreScanBegin(PermState *state, const VarBit *center,
				   const PermWideQual *quals, int nquals, int from, int cap,
				   const ItemPointerData *handed, int64 nhanded)
{
	Relation	index = state->index;
	PermStoreScan *ss = palloc0(sizeof(PermStoreScan));
	int			i;

	Assert(state->has_codes);
	ss->state = state;
	ss->cxt = CurrentMemoryContext;
	ss->width = state->store.width;
	ss->words = PermStoreWords(ss->width);
	ss->esize = state->store.entry_size;
	ss->first = state->store.first;
	ss->null_first = state->store.null_first;
	ss->has_center = (center != NULL);
	ss->center = center ? code_words(center, ss->words) :
		palloc0(ss->words * sizeof(uint64));
	ss->nquals = nquals;
	ss->qual_codes = palloc(Max(1, nquals) * sizeof(uint64 *));
	ss->qual_radius = palloc(Max(1, nquals) * sizeof(int));
	for (i = 0; i < nquals; i++)
	{
		ss->qual_codes[i] = code_words(quals[i].code, ss->words);
		ss->qual_radius[i] = quals[i].radius;
	}
	ss->lo = from;
	ss->cap = Min(cap, ss->width);
	ss->skip_d = from;
	ss->nskip = nhanded;
	ss->skip = palloc(Max(1, nhanded) * sizeof(ItemPointerData));
	if (nhanded > 0)			/* handed may be NULL then */
		memcpy(ss->skip, handed, nhanded * sizeof(ItemPointerData));
	ss->nskip = PermTidsSortUnique(ss->skip, ss->nskip);
	ss->hist = palloc0((ss->width + 1) * sizeof(int64));
	ss->done = ss->lo > ss->cap;
	ss->vector_popcount = cpu_has_vector_popcount(ss->words);

	/* a store larger than a quarter of shared buffers does not flood them */
	if (RelationGetNumberOfBlocks(index) > (BlockNumber) (NBuffers / 4))
		ss->strategy = GetAccessStrategy(BAS_BULKREAD);
	return ss;
}

/*
 * The distance of each of a page's n entries from center, into out[]: the
 * hot loop, a POPCNT a word, unrolled for the common widths.  Where the CPU
 * has AVX-512's vector popcount, page_distances_vpopcnt() below does the
 * same four words at a time.
 */
SIMHASH_POPCNT
static void
page_distances(const char *entries, int n, int esize, int words,
			   const uint64 *center, uint16 *out)
{
	int			i,
				w;

	if (words == 4)
	{
		uint64		c0 = center[0],
					c1 = center[1],
					c2 = center[2],
					c3 = center[3];

		for (i = 0; i < n; i++)
		{
			uint64		x[4];

			memcpy(x, entries + (size_t) i * esize, sizeof(x));
			out[i] = __builtin_popcountll(x[0] ^ c0) +
				__builtin_popcountll(x[1] ^ c1) +
				__builtin_popcountll(x[2] ^ c2) +
				__builtin_popcountll(x[3] ^ c3);
		}
		return;
	}
	if (words == 2)
	{
		uint64		c0 = center[0],
					c1 = center[1];

		for (i = 0; i < n; i++)
		{
			uint64		x[2];

			memcpy(x, entries + (size_t) i * esize, sizeof(x));
			out[i] = __builtin_popcountll(x[0] ^ c0) +
				__builtin_popcountll(x[1] ^ c1);
		}
		return;
	}
	for (i = 0; i < n; i++)
	{
		const char *e = entries + (size_t) i * esize;
		int			d = 0;

		for (w = 0; w < words; w++)
		{
			uint64		x;

			memcpy(&x, e + w * sizeof(uint64), sizeof(x));
			d += __builtin_popcountll(x ^ center[w]);
		}
		out[i] = d;
	}
}

#ifdef PERM_STORE_VPOPCNT
/* The bits of the code at e, in 256-bit group g, that differ from c's */
__attribute__((target("avx512f,avx512vl,avx512vpopcntdq")))
static inline __m256i
group_popcount(const char *e, int g, const uint64 *c)
{
	__m256i		x = _mm256_loadu_si256((const __m256i *) (e + g * 32));
	__m256i		y = _mm256_loadu_si256((const __m256i *) (c + 4 * g));

	return _mm256_popcnt_epi64(_mm256_xor_si256(x, y));
}

/*
 * page_distances for codes of a multiple of 256 bits (PDQ hashes, binary
 * vectors of 256, 512, 1024 bits) with AVX-512's VPOPCNTQ on 256-bit
 * vectors (Intel since Ice Lake, AMD since Zen 4): four entries at a time.
 * Each entry's 256-bit groups are loaded (unaligned: entries lie at
 * esize-byte strides, 38 bytes for bit(256)), XORed with the center's and
 * counted in one instruction, four words at once; the four entries' four
 * lanes are then added across in a transpose (unpack, then the 128-bit
 * halves), so that one vector holds the four distances, narrowed to 16
 * bits and stored together.  The last n % 4 entries go through
 * page_distances.  (Gathering one word of eight entries into a 512-bit
 * vector needs no transpose, but ran at half the speed of scalar POPCNT on
 * the AMD EPYC this was measured on: its gathers are slow.)  The result
 * is page_distances', number for number (test perm_store compares both).
 */
__attribute__((target("avx512f,avx512vl,avx512vpopcntdq")))
static void
page_distances_vpopcnt(const char *entries, int n, int esize, int words,
					   const uint64 *center, uint16 *out)
{
	int			groups = words / 4;
	int			i,
				g;

	for (i = 0; i + 4 <= n; i += 4)
	{
		const char *e = entries + (size_t) i * esize;
		__m256i		a = group_popcount(e, 0, center);
		__m256i		b = group_popcount(e + esize, 0, center);
		__m256i		c = group_popcount(e + 2 * esize, 0, center);
		__m256i		d = group_popcount(e + 3 * esize, 0, center);
		__m256i		ab,
					cd,
					sum;

		for (g = 1; g < groups; g++)
		{
			a = _mm256_add_epi64(a, group_popcount(e, g, center));
			b = _mm256_add_epi64(b, group_popcount(e + esize, g, center));
			c = _mm256_add_epi64(c, group_popcount(e + 2 * esize, g, center));
			d = _mm256_add_epi64(d, group_popcount(e + 3 * esize, g, center));
		}
		/* [a0+a1, b0+b1, a2+a3, b2+b3], the same of c and d */
		ab = _mm256_add_epi64(_mm256_unpacklo_epi64(a, b),
							  _mm256_unpackhi_epi64(a, b));
		cd = _mm256_add_epi64(_mm256_unpacklo_epi64(c, d),
							  _mm256_unpackhi_epi64(c, d));
		/* [a, b, c, d]: the low halves plus the high ones */
		sum = _mm256_add_epi64(_mm256_permute2x128_si256(ab, cd, 0x20),
							   _mm256_permute2x128_si256(ab, cd, 0x31));
		_mm_storel_epi64((__m128i *) (out + i), _mm256_cvtepi64_epi16(sum));
	}
	if (i < n)
		page_distances(entries + (size_t) i * esize, n - i, esize, words,
					   center, out + i);
}
#endif

/*
 * Does this CPU count bits of vectors, and may a scan of codes of words
 * 64-bit words use it (simhash.store_vector_popcount, on unless a test
 * or a benchmark turns it off)?  The CPU is asked once per scan.
 */
static bool
cpu_has_vector_popcount(int words)
{
#ifdef PERM_STORE_VPOPCNT
	return perm_store_vector_popcount && words % 4 == 0 &&
		__builtin_cpu_supports("avx512f") &&
		__builtin_cpu_supports("avx512vl") &&
		__builtin_cpu_supports("avx512vpopcntdq");
#else
	return false;
#endif
}

/* Does an entry's code pass every qual? */
SIMHASH_POPCNT
static bool
passes_quals(PermStoreScan *ss, const char *e)
{
	int			q,
				w;

	for (q = 0; q < ss->nquals; q++)
	{
		int			d = 0;

		for (w = 0; w < ss->words; w++)
		{
			uint64		x;

			memcpy(&x, e + w * sizeof(uint64), sizeof(x));
			d += __builtin_popcountll(x ^ ss->qual_codes[q][w]);
		}
		if (d > ss->qual_radius[q])
			return false;
	}
	return true;
}

/* Was this row at skip_d handed out before the store took over? */
static bool
skipped(PermStoreScan *ss, const ItemPointerData *tid)
{
	int64		lo = 0,
				hi = ss->nskip;

	while (lo < hi)
	{
		int64		mid = (lo + hi) / 2;
		int			c = ItemPointerCompare(&ss->skip[mid], (ItemPointer) tid);

		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* Max-heap of the first pass, by distance */
static void
heap_sift_down(StoreHit *heap, int n, int i)
{
	for (;;)
	{
		int			l = 2 * i + 1;
		int			r = l + 1;
		int			m = i;
		StoreHit	tmp;

		if (l < n && heap[l].d > heap[m].d)
			m = l;
		if (r < n && heap[r].d > heap[m].d)
			m = r;
		if (m == i)
			return;
		tmp = heap[i];
		heap[i] = heap[m];
		heap[m] = tmp;
		i = m;
	}
}

static void
heap_push(StoreHit *heap, int *n, const StoreHit *hit)
{
	int			i = (*n)++;

	heap[i] = *hit;
	while (i > 0 && heap[(i - 1) / 2].d < heap[i].d)
	{
		StoreHit	tmp = heap[i];

		heap[i] = heap[(i - 1) / 2];
		heap[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
}

/* Add a hit to the batch */
static void
batch_add(PermStoreScan *ss, const StoreHit *hit)
{
	if (ss->nbatch == ss->maxbatch)
	{
		ss->maxbatch = Max(1024, ss->maxbatch * 2);
		if (ss->batch == NULL)
			ss->batch = MemoryContextAllocHuge(ss->cxt,
											   ss->maxbatch * sizeof(StoreHit));
		else
			ss->batch = repalloc_huge(ss->batch, ss->maxbatch * sizeof(StoreHit));
	}
	ss->batch[ss->nbatch++] = *hit;
}

/*
 * One pass over the chain of codes.  With heap (the first pass), keep the
 * STORE_HEAP_SIZE nearest entries from lo to cap there (*nheap of them)
 * and count every such entry in hist[]; else add every entry from lo to hi
 * to the batch.
 */
static void
store_pass(PermStoreScan *ss, int lo, int hi, StoreHit *heap, int *nheap)
{
	Relation	index = ss->state->index;
	BlockNumber from = InvalidBlockNumber;
	BlockNumber blkno = ss->first;
	BlockNumber prefetched = InvalidBlockNumber;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	uint16		dist[PERM_PAGE_SPACE / sizeof(ItemPointerData) + 1];
	int64		steps = 0;
	int			tid_off = ss->esize - (int) sizeof(ItemPointerData);

	while (blkno != InvalidBlockNumber)
	{
		Buffer		buf;
		Page		page;
		const char *entries;
		int			n,
					i;

		CHECK_FOR_INTERRUPTS();

		/*
		 * The build writes the chain on consecutive blocks: read ahead of
		 * them when the store is larger than a quarter of shared buffers
		 * (then read through a ring, ss->strategy).  A smaller one is
		 * mostly in shared buffers, where a prefetch finds the page
		 * already there at the cost of a lookup in the buffer table: a
		 * sixth of a pass's time.
		 */
		if (ss->strategy)
		{
			if (prefetched == InvalidBlockNumber || prefetched < blkno)
				prefetched = blkno;
			while (prefetched < blkno + STORE_PREFETCH && prefetched + 1 < nblocks)
				(void) PrefetchBuffer(index, MAIN_FORKNUM, ++prefetched);
		}

		buf = PermStoreReadPage(ss->state, from, blkno, false,
								BUFFER_LOCK_SHARE, ss->strategy);
		page = BufferGetPage(buf);
		n = PermPageGetOpaque(page)->nentries;
		entries = PermPageEntries(page);
#ifdef PERM_STORE_VPOPCNT
		if (ss->has_center && ss->vector_popcount)
			page_distances_vpopcnt(entries, n, ss->esize, ss->words,
								   ss->center, dist);
		else
#endif
		if (ss->has_center)
			page_distances(entries, n, ss->esize, ss->words, ss->center, dist);
		else
			memset(dist, 0, n * sizeof(uint16));
		for (i = 0; i < n; i++)
		{
			const char *e;
			StoreHit	hit;

			if (dist[i] < lo || dist[i] > hi)
				continue;
			if (heap && *nheap == STORE_HEAP_SIZE && dist[i] > heap[0].d &&
				ss->nquals == 0 && dist[i] != ss->skip_d)
			{
				/* the common case of the first pass: counted, not kept */
				ss->hist[dist[i]]++;
				continue;
			}
			e = entries + (size_t) i * ss->esize;
			if (ss->nquals > 0 && !passes_quals(ss, e))
				continue;
			memcpy(&hit.tid, e + tid_off, sizeof(ItemPointerData));
			hit.d = dist[i];
			if (hit.d == ss->skip_d && ss->nskip > 0 && skipped(ss, &hit.tid))
				continue;
			if (heap == NULL)
			{
				batch_add(ss, &hit);
				continue;
			}
			ss->hist[hit.d]++;
			if (*nheap < STORE_HEAP_SIZE)
				heap_push(heap, nheap, &hit);
			else if (hit.d < heap[0].d)
			{
				heap[0] = hit;
				heap_sift_down(heap, *nheap, 0);
			}
		}
		from = blkno;
		blkno = PermPageGetOpaque(page)->rightlink;
		UnlockReleaseBuffer(buf);
		if (blkno != InvalidBlockNumber)
		{
			PermCountStep(ss->state, blkno, &steps);
			nblocks = Max(nblocks, ss->state->nblocks);
		}
	}
}

/* Fill the next batch: the first pass, or one of the passes after it */
static void
next_batch(PermStoreScan *ss)
{
	ss->last_batch = Max(ss->last_batch, ss->nbatch);
	ss->nbatch = 0;
	ss->next = 0;

	if (!ss->has_center)
	{
		/* no order: every row at distance 0, in one pass */
		store_pass(ss, 0, 0, NULL, NULL);
		ss->done = true;
	}
	else if (!ss->counted)
	{
		StoreHit	heap[STORE_HEAP_SIZE];
		int			nheap = 0;
		int			at_d = 0;
		int			i,
					d;

		store_pass(ss, ss->lo, ss->cap, heap, &nheap);
		ss->counted = true;
		if (nheap < STORE_HEAP_SIZE)
		{
			/* every row from lo to cap is in the heap */
			for (i = 0; i < nheap; i++)
				batch_add(ss, &heap[i]);
			ss->done = true;
		}
		else
		{
			d = heap[0].d;
			for (i = 0; i < nheap; i++)
				at_d += (heap[i].d == d);
			/* the rows at d are all here when the histogram counts no more */
			if (ss->hist[d] == at_d)
				d++;
			for (i = 0; i < nheap; i++)
				if (heap[i].d < d)
					batch_add(ss, &heap[i]);
			ss->lo = d;
			ss->done = ss->lo > ss->cap;
		}
	}
	else
	{
		int64		want = Max((int64) STORE_HEAP_SIZE,
							   STORE_BATCH_GROWTH * ss->last_batch);
		int64		count = 0;
		int			hi = ss->lo;

		/* the least hi whose batch holds want rows, by the histogram */
		for (hi = ss->lo; hi <= ss->cap; hi++)
		{
			count += ss->hist[hi];
			if (count >= want)
				break;
		}
		hi = Min(hi, ss->cap);
		/* no row the first pass counted lies from lo on: none is visible */
		if (count > 0)
			store_pass(ss, ss->lo, hi, NULL, NULL);
		ss->lo = hi + 1;
		ss->done = ss->lo > ss->cap;
	}
	sort_store_hits(ss->batch, ss->nbatch);
}

/*
 * The next row in increasing distance (ties in TID order within a batch),
 * with its distance; false when every row up to cap has been handed out
 */
bool
PermStoreScanNext(PermStoreScan *ss, ItemPointer tid, int *distance)
{
	for (;;)
	{
		if (ss->next < ss->nbatch)
		{
			*tid = ss->batch[ss->next].tid;
			*distance = ss->batch[ss->next].d;
			ss->next++;
			return true;
		}
		if (ss->done)
			return false;
		next_batch(ss);
	}
}

/* Add the TIDs of the rows whose code is NULL, from their chain, to *nulls */
void
PermStoreScanNulls(PermStoreScan *ss, PermTidList *nulls, MemoryContext cxt)
{
	PermTidListAddRowsWithoutCode(ss->state, nulls, cxt, ss->strategy);
}

/*
 * A backend's directory of the chain of codes: each page's block and range
 * of heap TIDs, in chain order, so that the code of a TID is found by
 * reading a page or two instead of the chain.  Built on the first lookup
 * by walking the chain, kept with the index's state (rd_amcache), and
 * brought up to date on every lookup by reading its last page again and
 * following the right-links from there: only the chain's last page gains
 * entries (appends), and a page's range only ever widens by them, so the
 * ranges of the other pages stay true (VACUUM only removes entries).
 */
typedef struct PermStoreDir
{
	int			n;
	int			max;
	BlockNumber *blk;
	uint64	   *lo;
	uint64	   *hi;				/* 0: the page's range is unknown */
	bool		sorted;			/* each range lies above the one before */
} PermStoreDir;

/*
 * Read page blkno of the chain into directory entry i (n, or n - 1 to read
 * the last page again): an empty page's range is empty (lo above hi), a
 * page of unknown range (built before ranges were kept) spans every TID;
 * returns the page's right-link
 */
static BlockNumber
storedir_read(PermState *state, PermStoreDir *dir, int i, BlockNumber blkno)
{
	Buffer		buf = PermStoreReadPage(state, InvalidBlockNumber, blkno,
										false, BUFFER_LOCK_SHARE, NULL);
	PermPageOpaque opaque = PermPageGetOpaque(BufferGetPage(buf));
	BlockNumber next = opaque->rightlink;

	if (i == dir->max)
	{
		dir->max *= 2;
		dir->blk = repalloc_huge(dir->blk, dir->max * sizeof(BlockNumber));
		dir->lo = repalloc_huge(dir->lo, dir->max * sizeof(uint64));
		dir->hi = repalloc_huge(dir->hi, dir->max * sizeof(uint64));
	}
	dir->blk[i] = blkno;
	if (opaque->nentries == 0)
	{
		dir->lo[i] = PG_UINT64_MAX;
		dir->hi[i] = 0;
	}
	else if (opaque->hikey == 0)
	{
		dir->lo[i] = 0;
		dir->hi[i] = PG_UINT64_MAX;
	}
	else
	{
		dir->lo[i] = opaque->lokey;
		dir->hi[i] = opaque->hikey;
	}
	UnlockReleaseBuffer(buf);
	/* ranges in increasing order and apart: a bisection finds the page */
	if (dir->lo[i] > dir->hi[i] || (i > 0 && dir->lo[i] <= dir->hi[i - 1]))
		dir->sorted = false;
	if (i == dir->n)
		dir->n++;
	return next;
}

/* The directory, brought up to date: its last page again, then new ones */
static PermStoreDir *
storedir_refresh(PermState *state)
{
	PermStoreDir *dir = state->storedir;
	BlockNumber next;
	int64		steps = 0;

	if (dir == NULL)
	{
		dir = MemoryContextAllocZero(state->cxt, sizeof(PermStoreDir));
		dir->max = 64;
		dir->blk = MemoryContextAlloc(state->cxt, dir->max * sizeof(BlockNumber));
		dir->lo = MemoryContextAlloc(state->cxt, dir->max * sizeof(uint64));
		dir->hi = MemoryContextAlloc(state->cxt, dir->max * sizeof(uint64));
		dir->sorted = true;
		state->storedir = dir;
		next = storedir_read(state, dir, 0, state->store.first);
	}
	else
		next = storedir_read(state, dir, dir->n - 1, dir->blk[dir->n - 1]);
	while (next != InvalidBlockNumber)
	{
		PermCountStep(state, next, &steps);
		next = storedir_read(state, dir, dir->n, next);
		if ((dir->n & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	return dir;
}

/* Look for tid in store page blkno; its code's words into words */
static bool
storedir_search_page(PermState *state, BlockNumber blkno, uint64 x,
					 char *words, int esize)
{
	Buffer		buf = PermStoreReadPage(state, InvalidBlockNumber, blkno,
										false, BUFFER_LOCK_SHARE, NULL);
	Page		page = BufferGetPage(buf);
	int			n = PermPageGetOpaque(page)->nentries;
	int			i;

	for (i = 0; i < n; i++)
	{
		const char *e = PermPageEntries(page) + (size_t) i * esize;
		ItemPointerData tid;

		memcpy(&tid, e + esize - sizeof(ItemPointerData), sizeof(tid));
		if (PermTidNumber(&tid) == x)
		{
			memcpy(words, e, esize - sizeof(ItemPointerData));
			UnlockReleaseBuffer(buf);
			return true;
		}
	}
	UnlockReleaseBuffer(buf);
	return false;
}

/*
 * The code the store holds for a heap TID, its words (zero-padded, as
 * stored) into words; false when the store has no entry of it.  Every row
 * the tables hold is in the store: an insert appends to the store before
 * it adds its keys to the tables (perminsert.c), so a scan or a check
 * that found a TID in a table finds its code here, even one of an insert
 * still in progress.  What reads the code here reads no table row and
 * computes no index expression (README.perm, "Code store").
 */
bool
PermStoreFindCode(PermState *state, ItemPointer tid,
				  char *words)
{
	PermStoreDir *dir;
	uint64		x = PermTidNumber(tid);
	int			esize = state->store.entry_size;
	int			i;

	Assert(state->has_codes);
	dir = storedir_refresh(state);
	if (dir->sorted)
	{
		int			lo = 0,
					hi = dir->n - 1;

		/* the last page whose range starts at or below x */
		while (lo < hi)
		{
			int			mid = (lo + hi + 1) / 2;

			if (dir->lo[mid] <= x)
				lo = mid;
			else
				hi = mid - 1;
		}
		return dir->lo[lo] <= x && x <= dir->hi[lo] &&
			storedir_search_page(state, dir->blk[lo], x, words, esize);
	}
	for (i = 0; i < dir->n; i++)
		if (dir->lo[i] <= x && x <= dir->hi[i] &&
			storedir_search_page(state, dir->blk[i], x, words, esize))
			return true;
	return false;
}

/*
 * The code the store holds for a heap TID as a bit string of the store's
 * width, palloc'd; NULL when the store has no entry of it
 */
VarBit *
PermStoreCodeBits(PermState *state, ItemPointer tid)
{
	int			width = state->store.width;
	char		words[PermStoreWords(PERM_MAX_WIDTH) * sizeof(uint64)];
	VarBit	   *code;

	if (!PermStoreFindCode(state, tid, words))
		return NULL;
	code = palloc0(VARBITTOTALLEN(width));
	SET_VARSIZE(code, VARBITTOTALLEN(width));
	VARBITLEN(code) = width;
	memcpy(VARBITS(code), words, VARBITBYTES(code));
	return code;
}
