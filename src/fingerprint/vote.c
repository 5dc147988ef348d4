/*-------------------------------------------------------------------------
 *
 * vote.c
 *		The vote accumulator of the fingerprint (step 6 of the algorithm in
 *		fingerprint.c): each 64-bit hash votes for its set bits and against
 *		its clear ones; bit i of the result is set iff counter i ends above
 *		zero.  Also counts how often each bit is set, for the index build's
 *		layout (permbuild.c).
 *
 * Unit votes are counted in byte lanes: with AVX2 where the CPU has it
 * (decided once, when the library is loaded), 64 lanes at a time, else
 * eight bits per table lookup.  Weighted votes are summed as doubles.  The
 * result is part of the stored fingerprint format.
 *
 * IDENTIFICATION
 *	  src/fingerprint/vote.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fingerprint/fingerprint.h"

/*
 * byte_spread[b] has bit j of b in the lowest bit of byte j, so adding it to
 * a byte-lane accumulator counts eight bits at once.
 */
#define SPREAD(b) \
	(((uint64) ((b) & 1)) | \
	 ((uint64) (((b) >> 1) & 1) << 8) | \
	 ((uint64) (((b) >> 2) & 1) << 16) | \
	 ((uint64) (((b) >> 3) & 1) << 24) | \
	 ((uint64) (((b) >> 4) & 1) << 32) | \
	 ((uint64) (((b) >> 5) & 1) << 40) | \
	 ((uint64) (((b) >> 6) & 1) << 48) | \
	 ((uint64) (((b) >> 7) & 1) << 56))
#define SPREAD4(b)	SPREAD(b), SPREAD((b) + 1), SPREAD((b) + 2), SPREAD((b) + 3)
#define SPREAD16(b) SPREAD4(b), SPREAD4((b) + 4), SPREAD4((b) + 8), SPREAD4((b) + 12)
#define SPREAD64(b) SPREAD16(b), SPREAD16((b) + 16), SPREAD16((b) + 32), SPREAD16((b) + 48)

static const uint64 byte_spread[256] = {
	SPREAD64(0), SPREAD64(64), SPREAD64(128), SPREAD64(192)
};

/* A byte lane holds at most 255 votes */
#define LANE_CAPACITY	255

/* Initialise an empty accumulator (the weighted sums only on first use) */
void
SimhashVoterInit(SimhashVoter *voter)
{
	memset(voter->counts, 0, sizeof(voter->counts));
	voter->unit_votes = 0;
	voter->weighted = false;
}

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && \
	!defined(SIMHASH_NO_CPU_DISPATCH)
#define SIMHASH_VOTE_AVX2 1
#include <immintrin.h>

/*
 * The unit-vote count with AVX2, on CPUs that have it: each hash is broadcast,
 * its bytes are spread over 64 byte lanes (vpshufb), each lane keeps its own
 * bit and turns it into 0 or -1, and subtracting that adds the vote: about
 * nine instructions a hash instead of eight table lookups and additions.
 */
__attribute__((target("avx2")))
static void
vote_batch_avx2(SimhashVoter *voter, const uint64 *hashes, size_t n)
{
	/* lane i of the low half takes byte i / 8 of the hash (bits 0..31) */
	const __m256i spread_lo = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0,
											   1, 1, 1, 1, 1, 1, 1, 1,
											   2, 2, 2, 2, 2, 2, 2, 2,
											   3, 3, 3, 3, 3, 3, 3, 3);
	const __m256i spread_hi = _mm256_setr_epi8(4, 4, 4, 4, 4, 4, 4, 4,
											   5, 5, 5, 5, 5, 5, 5, 5,
											   6, 6, 6, 6, 6, 6, 6, 6,
											   7, 7, 7, 7, 7, 7, 7, 7);
	const __m256i bit = _mm256_set1_epi64x(0x8040201008040201LL);
	size_t		done = 0;

	while (done < n)
	{
		size_t		chunk = Min(n - done, LANE_CAPACITY);
		__m256i		lo = _mm256_setzero_si256();
		__m256i		hi = _mm256_setzero_si256();
		uint8		lanes[64];
		size_t		i;
		int			j;

		for (i = done; i < done + chunk; i++)
		{
			__m256i		h = _mm256_set1_epi64x((long long) hashes[i]);
			__m256i		l = _mm256_and_si256(_mm256_shuffle_epi8(h, spread_lo), bit);
			__m256i		u = _mm256_and_si256(_mm256_shuffle_epi8(h, spread_hi), bit);

			lo = _mm256_sub_epi8(lo, _mm256_cmpeq_epi8(l, bit));
			hi = _mm256_sub_epi8(hi, _mm256_cmpeq_epi8(u, bit));
		}
		_mm256_storeu_si256((__m256i *) lanes, lo);
		_mm256_storeu_si256((__m256i *) (lanes + 32), hi);
		for (j = 0; j < 64; j++)
			voter->counts[j] += lanes[j];
		done += chunk;
	}
}
#endif

/*
 * Unit votes for a batch of hashes, without SIMD.  Eight byte-lane counters,
 * held in registers, count eight bits each per table lookup; they are
 * spilled into the 64-bit counters every 255 votes, before a byte can
 * overflow.
 */
static inline void
vote_batch_scalar(SimhashVoter *voter, const uint64 *hashes, size_t n)
{
	size_t		done = 0;

	while (done < n)
	{
		size_t		chunk = Min(n - done, LANE_CAPACITY);
		uint64		lane[8] = {0};
		size_t		i;
		int			b,
					j;

		for (i = done; i < done + chunk; i++)
		{
			uint64		h = hashes[i];

			lane[0] += byte_spread[h & 0xFF];
			lane[1] += byte_spread[(h >> 8) & 0xFF];
			lane[2] += byte_spread[(h >> 16) & 0xFF];
			lane[3] += byte_spread[(h >> 24) & 0xFF];
			lane[4] += byte_spread[(h >> 32) & 0xFF];
			lane[5] += byte_spread[(h >> 40) & 0xFF];
			lane[6] += byte_spread[(h >> 48) & 0xFF];
			lane[7] += byte_spread[h >> 56];
		}
		for (b = 0; b < 8; b++)
			for (j = 0; j < 8; j++)
				voter->counts[8 * b + j] += (lane[b] >> (8 * j)) & 0xFF;
		done += chunk;
	}
}

#ifdef SIMHASH_VOTE_AVX2
typedef void (*VoteBatchFunc) (SimhashVoter *voter, const uint64 *hashes,
							   size_t n);

static void
vote_batch_scalar_call(SimhashVoter *voter, const uint64 *hashes, size_t n)
{
	vote_batch_scalar(voter, hashes, n);
}

/*
 * Which counter large batches use, decided once, by the dynamic loader
 * when the library is loaded (an ifunc): AVX2 where the CPU has it.
 */
static VoteBatchFunc
resolve_vote_batch_wide(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") ? vote_batch_avx2 :
		vote_batch_scalar_call;
}

static void vote_batch_wide(SimhashVoter *voter, const uint64 *hashes, size_t n)
			__attribute__((ifunc("resolve_vote_batch_wide")));
#endif

/* Unit votes for a batch of hashes */
void
SimhashVoterAddBatch(SimhashVoter *voter, const uint64 *hashes, size_t n)
{
	voter->unit_votes += n;
#ifdef SIMHASH_VOTE_AVX2

	/*
	 * Small batches (array elements, tsvector lexemes, the tail of a short
	 * text) stay on the scalar path, which spills fewer counters; so both
	 * paths run in every test, and the golden vectors cover both.
	 */
	if (n >= 8)
	{
		vote_batch_wide(voter, hashes, n);
		return;
	}
#endif
	vote_batch_scalar(voter, hashes, n);
}

/*
 * Add the votes of another accumulator (simhash_pairs: each parallel
 * process counts the bits of its share of the rows)
 */
void
SimhashVoterMerge(SimhashVoter *into, const SimhashVoter *from)
{
	int			i;

	for (i = 0; i < 64; i++)
		into->counts[i] += from->counts[i];
	into->unit_votes += from->unit_votes;
	if (from->weighted)
	{
		if (!into->weighted)
		{
			memset(into->sums, 0, sizeof(into->sums));
			into->weighted = true;
		}
		for (i = 0; i < 64; i++)
			into->sums[i] += from->sums[i];
	}
}

/* One vote of weight 1 */
void
SimhashVoterAdd(SimhashVoter *voter, uint64 hash)
{
	SimhashVoterAddBatch(voter, &hash, 1);
}

/* One vote of any weight (negative weights vote against their bits) */
void
SimhashVoterAddWeighted(SimhashVoter *voter, uint64 hash, double weight)
{
	int			i;

	if (!voter->weighted)
	{
		memset(voter->sums, 0, sizeof(voter->sums));
		voter->weighted = true;
	}
	for (i = 0; i < 64; i++)
		voter->sums[i] += ((hash >> i) & 1) ? weight : -weight;
}

/* The fingerprint: bit i is set iff counter i is positive (ties give 0) */
uint64
SimhashVoterResult(SimhashVoter *voter)
{
	uint64		result = 0;
	int			i;

	/* unit votes only: counter i is positive iff 2 * counts[i] > votes */
	if (!voter->weighted)
	{
		for (i = 0; i < 64; i++)
			result |= (uint64) (2 * voter->counts[i] > voter->unit_votes) << i;
		return result;
	}

	for (i = 0; i < 64; i++)
	{
		double		total = (double) (2 * voter->counts[i] - voter->unit_votes);

		if (voter->weighted)
			total += voter->sums[i];

		if (total > 0)
			result |= UINT64CONST(1) << i;
	}
	return result;
}
