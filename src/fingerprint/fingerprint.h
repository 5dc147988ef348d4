/*-------------------------------------------------------------------------
 *
 * fingerprint.h
 *		Charikar's simhash of text: features, feature hashing, bit voting.
 *
 * This module has no fmgr code: it turns UTF-8 bytes into a 64-bit (or
 * 128-bit) value and can be reasoned about (and tested) on its own.
 * Everything here is part of the stored fingerprint format; see
 * docs/fingerprint_format.md before changing any of it.
 *
 * IDENTIFICATION
 *	  src/fingerprint/fingerprint.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SIMHASH_FINGERPRINT_H
#define SIMHASH_FINGERPRINT_H

#include "lib/stringinfo.h"

#include "fingerprint/tokenizer.h"

/* How much each occurrence of a feature counts */
typedef enum SimhashWeighting
{
	SIMHASH_WEIGHT_TF,			/* every occurrence votes 1 */
	SIMHASH_WEIGHT_BINARY,		/* every distinct feature votes 1 */
	SIMHASH_WEIGHT_LOG			/* distinct feature votes 1 + ln(count) */
} SimhashWeighting;

/* Limits of shingle sizes (tokens per feature) */
#define SIMHASH_MIN_SHINGLE		1
#define SIMHASH_MAX_SHINGLE		8

/* Limits of character n-gram sizes */
#define SIMHASH_MIN_CHARGRAM	1
#define SIMHASH_MAX_CHARGRAM	16

/*
 * The feature scheme of one fingerprint: word shingles of the listed sizes,
 * or, if chargram > 0, character n-grams of that many code points.
 */
typedef struct SimhashConfig
{
	int			nsizes;			/* shingle sizes, ascending and distinct */
	int			sizes[SIMHASH_MAX_SHINGLE];
	int			chargram;		/* n of character n-grams, or 0 */
	SimhashWeighting weighting;
	SimhashCjkMode cjk;
	SimhashTokens tokens;		/* words (with cjk) or characters */
} SimhashConfig;

/*
 * Vote accumulator: counts[i] unit votes had bit i set, out of unit_votes;
 * weighted votes are summed, signed, in sums[].
 */
typedef struct SimhashVoter
{
	int64		counts[64];
	int64		unit_votes;
	bool		weighted;		/* any weighted votes (sums[] is valid)? */
	double		sums[64];
} SimhashVoter;

extern void SimhashVoterInit(SimhashVoter *voter);
extern void SimhashVoterAdd(SimhashVoter *voter, uint64 hash);
extern void SimhashVoterAddBatch(SimhashVoter *voter, const uint64 *hashes,
								 size_t n);
extern void SimhashVoterAddWeighted(SimhashVoter *voter, uint64 hash,
									double weight);
extern void SimhashVoterMerge(SimhashVoter *into, const SimhashVoter *from);
extern uint64 SimhashVoterResult(SimhashVoter *voter);

extern uint64 SimhashFeatureHash(const char *bytes, size_t len);
extern uint64 SimhashOfText(const char *text, size_t len,
							const SimhashConfig *config, int64 *nfeatures);

/*
 * The 128-bit fingerprint (docs/fingerprint_format.md, "The 128-bit
 * fingerprint"): the same features and weights vote on two 64-bit words.
 * Word 0 is the 64-bit fingerprint itself; word 1 is voted by each feature's
 * second hash, XXH3-64 with seed 1 of its 64-bit hash as 8 little-endian
 * bytes.  SQL shows word 0 first (the leftmost 64 bits of a bit(128)).
 */
#define SIMHASH_WIDE_WORDS		2
extern void SimhashOfText128(const char *text, size_t len,
							 const SimhashConfig *config,
							 uint64 words[SIMHASH_WIDE_WORDS]);

extern uint64 *SimhashFeatureSet(const char *text, size_t len,
								 const SimhashConfig *config, size_t *nfeatures);

/* qsort() and bsearch() order of int64 values: signatures, sentence hashes */
static inline int
SimhashInt64Cmp(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y;
}

/* sentences.c: the top-k longest-sentence signature */
#define SIMHASH_MAX_SENTENCES	1000
extern int	SimhashSentenceSignature(const char *text, size_t len, int k,
									 const int64 *skip, int nskip, int64 *sig);
extern int64 *SimhashSentenceHashes(const char *text, size_t len, int *n);

#endif							/* SIMHASH_FINGERPRINT_H */
