/*-------------------------------------------------------------------------
 *
 * fingerprint.c
 *		Charikar's simhash of text: features from tokens, feature hashing,
 *		and the voting that makes the fingerprint.  The tokenizer (steps 1-3)
 *		is in tokenizer.c and tokenizer_loop.h, the vote counters (step 6) in
 *		vote.c.
 *
 * The pipeline (docs/fingerprint_format.md is the reference):
 *
 *	1. Decode UTF-8 (an invalid byte decodes as U+FFFD, a separator).
 *	2. Normalise each code point: fullwidth ASCII forms to ASCII, the
 *	   ideographic space to a space, then Unicode 15.0 simple case folding.
 *	3. Classify: CJK ideographs and kana are tokens by themselves (or, in
 *	   bigram mode, overlapping pairs within a run); other letters, marks and
 *	   digits (categories L, M, N) form words; everything else separates.
 *	   With tokens = chars, every letter or digit (L, N) is a token instead,
 *	   with the marks that follow it, and everything else is dropped.
 *	4. Hash each token's UTF-8 bytes with XXH3-64 (seed 0).
 *	5. Features are the shingles of n consecutive tokens, for every n in the
 *	   scheme's list of sizes (default 1 and 3: each token, and each run of
 *	   three).  A feature's hash is XXH3-64 of its n token hashes written as
 *	   little-endian 8-byte words.  For each size n larger than the text's
 *	   token count (if it has any), the text has one feature of all tokens.
 *	6. Vote: each feature adds its weight to counter i if bit i of its hash
 *	   is 1 and subtracts it otherwise; bit i of the fingerprint is 1 iff
 *	   counter i ends above zero.  No features give fingerprint 0.
 *
 * The 128-bit fingerprint (SimhashOfText128) runs the same pipeline and
 * votes each feature twice, with the same weight: its hash on word 0, which
 * is therefore the 64-bit fingerprint, and a second hash of that hash on
 * word 1 (feature_word1).
 *
 * Two other feature schemes share steps 1-4: character n-grams (each run of
 * n code points of the tokens joined by spaces, collect_chargrams), and the
 * set of distinct features that simhash_jaccard() and minhash() compare
 * (SimhashFeatureSet: steps 1-5, no weights).
 *
 * Speed matters (the target is md5's speed over the same text), so ASCII
 * takes a fast path, tokens are hashed once and shingles are hashes of
 * hashes, and unit votes are added eight bits at a time in byte lanes.
 *
 * Memory: tf weights need none beyond the text and one token (copied if it
 * must be case-folded, and always for character n-grams).  Binary and log
 * weights and feature sets collect the distinct feature hashes, merging
 * each batch of new features into them (FeatureCollector): about 9 bytes
 * per distinct feature (10 with log weights' counts), however often
 * features repeat.  docs/benchmarks.md, "Memory", has the measured figures.
 *
 * IDENTIFICATION
 *	  src/fingerprint/fingerprint.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

/*
 * Fingerprints are stored data, and XXH3's output is frozen only from
 * xxHash 0.8.0 on (earlier releases marked it experimental, and it changed).
 */
#if !defined(XXH_VERSION_NUMBER) || XXH_VERSION_NUMBER < 800
#error "simhash needs xxHash 0.8.0 or later (libxxhash-dev): XXH3 output, which fingerprints store, is stable only from 0.8.0"
#endif

#include "fingerprint/fingerprint.h"
#include "fingerprint/tokenizer_loop.h"

/* Scale of the fixed-point log-tf weights (exact integer sums) */
#define LOG_WEIGHT_SCALE	1000000.0

/*
 * Shingling and voting for SimhashOfText.
 */

/* Sort of uint64 feature hashes, for counting distinct features */
#define ST_SORT sort_feature_hashes
#define ST_ELEMENT_TYPE uint64
#define ST_COMPARE(a, b) ((*(a) > *(b)) - (*(a) < *(b)))
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* Token hashes are buffered and turned into features this many at a time */
#define TOKEN_BATCH		256

/*
 * The feature collector of binary and log weights and of feature sets.
 *
 * New features go to an unsorted batch.  When the batch is full, it is
 * sorted and merged into the sorted array of the distinct features found so
 * far (with their counts, under log weights): so memory follows the number
 * of distinct features, not of occurrences.  The merge is in place: a first
 * pass counts the distinct features of the union, the array grows to that
 * size, and a second pass fills it from its end, where nothing is
 * overwritten before it has been read.  The batch holds an eighth as many
 * features as the array (at least COLLECT_MIN_BATCH), so each merge reads
 * the array about twice for that many new features: a few sequential moves
 * per feature beside the batch's sort.
 *
 * A count (log weights only) takes one byte; from COUNT_HEAVY on, the count
 * is kept in a hash table of heavy features instead, which has at most one
 * entry per COUNT_HEAVY occurrences.
 */
#define COLLECT_MIN_BATCH	(2 * TOKEN_BATCH)
#define COUNT_HEAVY			255

typedef struct HeavyFeature
{
	uint64		hash;
	uint64		count;
	char		status;			/* simplehash's */
} HeavyFeature;

#define SH_PREFIX heavy
#define SH_ELEMENT_TYPE HeavyFeature
#define SH_KEY_TYPE uint64
#define SH_KEY hash
#define SH_HASH_KEY(tb, key) ((uint32) ((key) ^ ((key) >> 32)))
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

typedef struct FeatureCollector
{
	bool		counting;		/* keep counts (log weights)? */
	uint64	   *distinct;		/* the distinct features so far, ascending */
	uint8	   *counts;			/* their counts, or COUNT_HEAVY: see heavy */
	size_t		ndistinct;
	size_t		capacity;		/* of distinct[] and counts[] */
	heavy_hash *heavy;			/* counts of COUNT_HEAVY and more, or NULL */
	uint64	   *batch;			/* the latest features, unsorted */
	size_t		nbatch;
	size_t		batch_capacity;
} FeatureCollector;

static void
collector_init(FeatureCollector *fc, bool counting)
{
	fc->counting = counting;
	fc->capacity = COLLECT_MIN_BATCH;
	fc->distinct = palloc(fc->capacity * sizeof(uint64));
	fc->counts = counting ? palloc(fc->capacity) : NULL;
	fc->ndistinct = 0;
	fc->heavy = NULL;
	fc->batch_capacity = COLLECT_MIN_BATCH;
	fc->batch = palloc(fc->batch_capacity * sizeof(uint64));
	fc->nbatch = 0;
}

/* The count of distinct[i] */
static inline uint64
collector_count(FeatureCollector *fc, size_t i)
{
	if (fc->counts[i] < COUNT_HEAVY)
		return fc->counts[i];
	return heavy_lookup(fc->heavy, fc->distinct[i])->count;
}

/* Set the count of distinct[w], which is (or is about to be) hash */
static inline void
collector_set_count(FeatureCollector *fc, size_t w, uint64 hash, uint64 count)
{
	HeavyFeature *entry;
	bool		found;

	if (count < COUNT_HEAVY)
	{
		fc->counts[w] = (uint8) count;
		return;
	}
	if (fc->heavy == NULL)
		fc->heavy = heavy_create(CurrentMemoryContext, 64, NULL);
	entry = heavy_insert(fc->heavy, hash, &found);
	entry->count = count;
	fc->counts[w] = COUNT_HEAVY;
}

/* Sort the batch and merge it into the distinct features (see above) */
static void
collector_merge(FeatureCollector *fc)
{
	uint64	   *b = fc->batch;
	uint64	   *d = fc->distinct;
	size_t		nb = fc->nbatch;
	size_t		p = fc->ndistinct;
	size_t		m = p;
	size_t		i = 0,
				j,
				w;

	if (nb == 0)
		return;
	CHECK_FOR_INTERRUPTS();
	sort_feature_hashes(b, nb);

	/* first pass: the size of the union */
	for (j = 0; j < nb; j++)
	{
		if (j > 0 && b[j] == b[j - 1])
			continue;
		while (i < p && d[i] < b[j])
			i++;
		if (i < p && d[i] == b[j])
			i++;
		else
			m++;
	}

	if (m > fc->capacity)
	{
		fc->capacity = Max(m, fc->capacity + fc->capacity / 4);
		fc->distinct = repalloc_huge(fc->distinct,
									 fc->capacity * sizeof(uint64));
		if (fc->counting)
			fc->counts = repalloc_huge(fc->counts, fc->capacity);
		d = fc->distinct;
	}

	/*
	 * Second pass, from the ends: i, j and w count the entries of the old
	 * array, of the batch and of the new array not yet placed.  w - i is the
	 * number of new features still to place, so w >= i: an entry is written
	 * only where one has already been read.  Once the batch is placed, the
	 * rest of the old array is where it belongs.
	 */
	i = p;
	j = nb;
	w = m;
	while (j > 0)
	{
		uint64		h = b[j - 1];
		uint64		run = 0;

		while (j > 0 && b[j - 1] == h)
		{
			j--;
			run++;
		}
		while (i > 0 && d[i - 1] > h)
		{
			i--;
			w--;
			d[w] = d[i];
			if (fc->counting)
				fc->counts[w] = fc->counts[i];
		}
		w--;
		if (i > 0 && d[i - 1] == h)
		{
			i--;
			if (fc->counting)
				collector_set_count(fc, w, h, collector_count(fc, i) + run);
		}
		else if (fc->counting)
			collector_set_count(fc, w, h, run);
		d[w] = h;
	}
	Assert(w == i);
	fc->ndistinct = m;
	fc->nbatch = 0;

	/* the next batch: an eighth of the distinct features (or a bit more) */
	if (m / 8 > fc->batch_capacity)
	{
		pfree(fc->batch);
		fc->batch_capacity = Max(m / 8,
								 fc->batch_capacity + fc->batch_capacity / 4);
		fc->batch = MemoryContextAllocHuge(CurrentMemoryContext,
										   fc->batch_capacity * sizeof(uint64));
	}
}

/* Add n features (n <= COLLECT_MIN_BATCH) */
static inline void
collector_add(FeatureCollector *fc, const uint64 *features, int n)
{
	if (fc->nbatch + n > fc->batch_capacity)
		collector_merge(fc);
	memcpy(fc->batch + fc->nbatch, features, n * sizeof(uint64));
	fc->nbatch += n;
}

/* Merge the last batch: distinct[] then holds all the distinct features */
static void
collector_finish(FeatureCollector *fc)
{
	collector_merge(fc);
	pfree(fc->batch);
	fc->batch = NULL;
}

/* Free the counts, once they have been used */
static void
collector_free_counts(FeatureCollector *fc)
{
	if (fc->counts)
		pfree(fc->counts);
	if (fc->heavy)
		heavy_destroy(fc->heavy);
	fc->counts = NULL;
	fc->heavy = NULL;
}

typedef struct ShingleState
{
	const SimhashConfig *config;
	int			width;			/* largest shingle size */

	/*
	 * hashes[0..carry-1] are the last tokens of the previous batch (up to
	 * width - 1 of them, so shingles continue across batches), followed by
	 * the tokens of this batch up to nhashes.
	 */
	uint64		hashes[TOKEN_BATCH + SIMHASH_MAX_SHINGLE];
	int			carry;
	int			nhashes;
	int64		ntokens;
	int64		nfeatures;
	SimhashVoter voter;
	uint64		features[TOKEN_BATCH];	/* one size's features of a batch */

	/*
	 * The 128-bit fingerprint: word 1's voter, and a batch's second hashes.
	 * Untouched (not even initialised) for the 64-bit one.
	 */
	bool		wide;
	SimhashVoter voter1;
	uint64		words1[TOKEN_BATCH];

	bool		collecting;		/* collect features (else vote them now)? */
	FeatureCollector collector;
} ShingleState;

/*
 * Hash of the n token hashes at tokens[0..n-1], as little-endian 8-byte
 * words.  A constant n lets the compiler inline XXH3's code for that length.
 */
static pg_attribute_always_inline uint64
shingle_hash(const uint64 *tokens, int n)
{
#ifdef WORDS_BIGENDIAN
	unsigned char buf[8 * SIMHASH_MAX_SHINGLE];
	int			j,
				b;

	for (j = 0; j < n; j++)
		for (b = 0; b < 8; b++)
			buf[8 * j + b] = (unsigned char) (tokens[j] >> (8 * b));
	return XXH3_64bits(buf, 8 * n);
#else
	return XXH3_64bits(tokens, 8 * n);
#endif
}

/*
 * The second hash of a feature, which votes on word 1 of the 128-bit
 * fingerprint: XXH3-64, seed 1, of the feature's 64-bit hash as 8
 * little-endian bytes.  A function of the 64-bit hash alone, so whatever
 * the 64-bit fingerprint defines on feature hashes (distinct features,
 * their counts and weights) holds for word 1 unchanged.
 */
static pg_attribute_always_inline uint64
feature_word1(uint64 hash)
{
#ifdef WORDS_BIGENDIAN
	unsigned char buf[8];
	int			b;

	for (b = 0; b < 8; b++)
		buf[b] = (unsigned char) (hash >> (8 * b));
	return XXH3_64bits_withSeed(buf, 8, 1);
#else
	return XXH3_64bits_withSeed(&hash, 8, 1);
#endif
}

/* Unit votes of n (<= TOKEN_BATCH) features on word 1 */
static void
vote_word1(ShingleState *st, const uint64 *features, int n)
{
	int			i;

	Assert(n <= TOKEN_BATCH);
	for (i = 0; i < n; i++)
		st->words1[i] = feature_word1(features[i]);
	SimhashVoterAddBatch(&st->voter1, st->words1, n);
}

/* Count (tf) or collect (binary, log, feature sets) the features of a batch */
static void
take_features(ShingleState *st, const uint64 *features, int n)
{
	st->nfeatures += n;
	if (!st->collecting)
	{
		SimhashVoterAddBatch(&st->voter, features, n);
		if (st->wide)
			vote_word1(st, features, n);
	}
	else
		collector_add(&st->collector, features, n);
}

/*
 * The features of shingle size n ending at the tokens hashes[from..to-1].
 * The loop has no dependency from one shingle to the next, so the CPU can
 * overlap their hashing.
 */
static pg_attribute_always_inline int
shingles_of_size(const uint64 *hashes, int from, int to, int n, uint64 *out)
{
	int			p,
				k = 0;

	for (p = from; p < to; p++)
		out[k++] = shingle_hash(hashes + p - n + 1, n);
	return k;
}

/* Turn the buffered token hashes into features, keep the carry */
static void
flush_tokens(ShingleState *st)
{
	int			i;

	for (i = 0; i < st->config->nsizes; i++)
	{
		int			n = st->config->sizes[i];
		int			from = Max(st->carry, n - 1);
		int			k;

		if (from >= st->nhashes)
			continue;
		switch (n)
		{
			case 1:
				k = shingles_of_size(st->hashes, from, st->nhashes, 1, st->features);
				break;
			case 2:
				k = shingles_of_size(st->hashes, from, st->nhashes, 2, st->features);
				break;
			case 3:
				k = shingles_of_size(st->hashes, from, st->nhashes, 3, st->features);
				break;
			default:
				k = shingles_of_size(st->hashes, from, st->nhashes, n, st->features);
				break;
		}
		take_features(st, st->features, k);
	}

	/* once per batch: a text of hundreds of megabytes takes seconds */
	CHECK_FOR_INTERRUPTS();

	/* keep the last width - 1 hashes for the shingles of the next batch */
	st->carry = Min(st->nhashes, st->width - 1);
	memmove(st->hashes, st->hashes + st->nhashes - st->carry,
			st->carry * sizeof(uint64));
	st->nhashes = st->carry;
}

/*
 * Token sink of the fingerprinting path: hash the token into the buffer.
 * Always inlined into the tokenizer's loop (tokenizer_loop.h).
 */
static pg_attribute_always_inline void
shingle_token(void *arg, const char *token, size_t len)
{
	ShingleState *st = (ShingleState *) arg;

	st->hashes[st->nhashes++] = XXH3_64bits(token, len);
	st->ntokens++;
	if (st->nhashes == TOKEN_BATCH + st->carry)
		flush_tokens(st);
}

/*
 * The same, out of line, for the short tokens of CJK text: inlining XXH3 for
 * them gains nothing and only makes the compiler reason about lengths that
 * cannot occur.
 */
static pg_noinline void
shingle_short_token(void *arg, const char *token, size_t len)
{
	shingle_token(arg, token, len);
}

/* Hash of a feature given as raw bytes (array and tsvector features) */
uint64
SimhashFeatureHash(const char *bytes, size_t len)
{
	return XXH3_64bits(bytes, len);
}

/*
 * Character n-grams.
 *
 * The text is reduced to its tokens (as with cjk = unigram) joined by single
 * spaces, except that two consecutive single-ideograph tokens are joined
 * without one, whatever separated them in the text.  Every run of n code points of that string is a
 * feature, hashed as its UTF-8 bytes with XXH3-64 (seed 0); a string shorter
 * than n code points, if not empty, is one feature.  The string is never held
 * whole: a window of the last code points is enough.
 */
typedef struct ChargramState
{
	ShingleState *st;			/* where the features go */
	int			n;
	StringInfoData buf;			/* the joined string, from some point on */
	int			ring[SIMHASH_MAX_CHARGRAM]; /* buf offsets of last n code
											 * points */
	int64		ncodepoints;
	bool		last_ideograph;
	int			nbatch;
	uint64		batch[TOKEN_BATCH];
} ChargramState;

/* Drop the bytes before the current window, once the buffer has grown */
static void
chargram_compact(ChargramState *cs)
{
	int			shift;
	int			i;

	if (cs->buf.len < 8192 || cs->ncodepoints < cs->n)
		return;
	/* start of the oldest code point still in the ring */
	shift = cs->ring[cs->ncodepoints % cs->n];
	memmove(cs->buf.data, cs->buf.data + shift, cs->buf.len - shift);
	cs->buf.len -= shift;
	cs->buf.data[cs->buf.len] = '\0';
	for (i = 0; i < cs->n; i++)
		cs->ring[i] -= shift;
}

/* Append one code point (len bytes) and emit the n-gram it completes */
static void
chargram_append(ChargramState *cs, const char *bytes, int len)
{
	int64		c = cs->ncodepoints++;

	cs->ring[c % cs->n] = cs->buf.len;
	appendBinaryStringInfo(&cs->buf, bytes, len);
	if (c >= cs->n - 1)
	{
		int			start = cs->ring[(c + 1) % cs->n];

		cs->batch[cs->nbatch++] = XXH3_64bits(cs->buf.data + start,
											  cs->buf.len - start);
		if (cs->nbatch == TOKEN_BATCH)
		{
			take_features(cs->st, cs->batch, cs->nbatch);
			cs->nbatch = 0;
			CHECK_FOR_INTERRUPTS();
		}
	}
}

/* Token callback of the n-gram path */
static void
chargram_token(void *arg, const char *token, size_t len)
{
	ChargramState *cs = (ChargramState *) arg;
	const unsigned char *p = (const unsigned char *) token;
	const unsigned char *end = p + len;
	bool		ideograph;

	ideograph = SimhashIsIdeograph(decode_utf8(&p, end)) && p == end;
	if (cs->ncodepoints > 0 && !(ideograph && cs->last_ideograph))
		chargram_append(cs, " ", 1);
	cs->last_ideograph = ideograph;

	/* code points start at every byte that is not a continuation byte */
	p = (const unsigned char *) token;
	while (p < end)
	{
		const unsigned char *q = p + 1;

		while (q < end && (*q & 0xC0) == 0x80)
			q++;
		chargram_append(cs, (const char *) p, q - p);
		p = q;
	}
	chargram_compact(cs);
}

/* Find the character n-gram features of a text */
static void
collect_chargrams(ShingleState *st, const char *text, size_t len)
{
	ChargramState cs;

	cs.st = st;
	cs.n = st->config->chargram;
	initStringInfo(&cs.buf);
	cs.ncodepoints = 0;
	cs.last_ideograph = false;
	cs.nbatch = 0;

	SimhashTokenize(text, len, SIMHASH_CJK_UNIGRAM, chargram_token, &cs);
	if (cs.nbatch > 0)
		take_features(st, cs.batch, cs.nbatch);
	if (cs.ncodepoints > 0 && cs.ncodepoints < cs.n)
	{
		uint64		f = XXH3_64bits(cs.buf.data, cs.buf.len);

		take_features(st, &f, 1);
	}
	pfree(cs.buf.data);
}

/*
 * Vote the collected features with binary or log-tf weights: binary weights
 * count the distinct features as one batch of unit votes, log weights add
 * them in ascending order of hash.
 */
static void
vote_collected(ShingleState *st)
{
	FeatureCollector *fc = &st->collector;
	size_t		i;

	collector_finish(fc);
	if (!fc->counting)
	{
		SimhashVoterAddBatch(&st->voter, fc->distinct, fc->ndistinct);
		if (st->wide)
			for (i = 0; i < fc->ndistinct; i += TOKEN_BATCH)
				vote_word1(st, fc->distinct + i,
						   (int) Min(fc->ndistinct - i, TOKEN_BATCH));
		return;
	}
	for (i = 0; i < fc->ndistinct; i++)
	{
		double		weight = rint(LOG_WEIGHT_SCALE *
								  (1.0 + log((double) collector_count(fc, i))));

		SimhashVoterAddWeighted(&st->voter, fc->distinct[i], weight);
		if (st->wide)
			SimhashVoterAddWeighted(&st->voter1,
									feature_word1(fc->distinct[i]), weight);
	}
}

/*
 * Run a text through the scheme's feature pipeline: the features are voted
 * (tf) or collected in st->collector.  collect_all collects them under any
 * weighting, without counts.
 */
static void
find_features(ShingleState *st, const char *text, size_t len,
			  const SimhashConfig *config, bool collect_all, bool wide)
{
	int			i;

	/* field by field: the buffers need no zeroing */
	st->config = config;
	st->wide = wide;
	if (wide)
		SimhashVoterInit(&st->voter1);
	st->width = config->sizes[config->nsizes - 1];
	st->carry = 0;
	st->nhashes = 0;
	st->ntokens = 0;
	st->nfeatures = 0;
	st->collecting = collect_all || config->weighting != SIMHASH_WEIGHT_TF;
	SimhashVoterInit(&st->voter);
	if (st->collecting)
		collector_init(&st->collector, !collect_all &&
					   config->weighting == SIMHASH_WEIGHT_LOG);

	if (config->chargram > 0)
	{
		collect_chargrams(st, text, len);
		return;
	}

	if (config->tokens == SIMHASH_TOKENS_CHARS)
		simhash_tokenize_chars(text, len, shingle_short_token, st);
	else
		simhash_tokenize(text, len, config->cjk, shingle_token,
						 shingle_short_token, st);
	flush_tokens(st);

	/*
	 * A text shorter than a shingle size gives one feature of all its
	 * tokens, which are then all still in the buffer.
	 */
	for (i = 0; i < config->nsizes; i++)
		if (st->ntokens > 0 && st->ntokens < config->sizes[i])
		{
			uint64		f = shingle_hash(st->hashes, (int) st->ntokens);

			take_features(st, &f, 1);
		}
}

/*
 * The simhash of a UTF-8 text under a feature scheme.  If nfeatures is not
 * NULL, it is set to the number of features (shingle occurrences) found.
 */
uint64
SimhashOfText(const char *text, size_t len, const SimhashConfig *config,
			  int64 *nfeatures)
{
	ShingleState st;

	Assert(config->nsizes >= 1 && config->nsizes <= SIMHASH_MAX_SHINGLE);

	find_features(&st, text, len, config, false, false);
	if (st.collecting)
	{
		vote_collected(&st);
		collector_free_counts(&st.collector);
		pfree(st.collector.distinct);
	}
	if (nfeatures)
		*nfeatures = st.nfeatures;
	return SimhashVoterResult(&st.voter);
}

/*
 * The 128-bit fingerprint of a UTF-8 text under a feature scheme: words[0]
 * is what SimhashOfText gives, words[1] the vote of the features' second
 * hashes, with the same weights.
 */
void
SimhashOfText128(const char *text, size_t len, const SimhashConfig *config,
				 uint64 words[SIMHASH_WIDE_WORDS])
{
	ShingleState st;

	Assert(config->nsizes >= 1 && config->nsizes <= SIMHASH_MAX_SHINGLE);

	find_features(&st, text, len, config, false, true);
	if (st.collecting)
	{
		vote_collected(&st);
		collector_free_counts(&st.collector);
		pfree(st.collector.distinct);
	}
	words[0] = SimhashVoterResult(&st.voter);
	words[1] = SimhashVoterResult(&st.voter1);
}

/*
 * The set of distinct feature hashes of a UTF-8 text under a feature scheme
 * (weights play no part), sorted ascending, palloc'd; *nfeatures is set to
 * its size.  This is what simhash_jaccard() and minhash() compare.
 */
uint64 *
SimhashFeatureSet(const char *text, size_t len, const SimhashConfig *config,
				  size_t *nfeatures)
{
	ShingleState st;
	FeatureCollector *fc = &st.collector;

	find_features(&st, text, len, config, true, false);
	collector_finish(fc);

	/*
	 * Give back the unused part of a large array: simhash_jaccard() holds
	 * one text's set while it collects the other's.
	 */
	if (fc->capacity - fc->ndistinct > COLLECT_MIN_BATCH)
		fc->distinct = repalloc_huge(fc->distinct,
									 Max(fc->ndistinct, 1) * sizeof(uint64));
	*nfeatures = fc->ndistinct;
	return fc->distinct;
}
