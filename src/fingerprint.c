/*-------------------------------------------------------------------------
 *
 * fingerprint.c
 *		Charikar's simhash of text: tokenizer, feature hashing, bit voting.
 *
 * The pipeline (README.md, "The fingerprint algorithm", is the reference):
 *
 *	1. Decode UTF-8 (an invalid byte decodes as U+FFFD, a separator).
 *	2. Normalise each code point: fullwidth ASCII forms to ASCII, the
 *	   ideographic space to a space, then Unicode 15.0 simple case folding.
 *	3. Classify: CJK ideographs and kana are tokens by themselves (or, in
 *	   bigram mode, overlapping pairs within a run); other letters, marks and
 *	   digits (categories L, M, N) form words; everything else separates.
 *	4. Hash each token's UTF-8 bytes with XXH3-64 (seed 0).
 *	5. A feature is a shingle of n consecutive tokens; its hash is XXH3-64 of
 *	   the n token hashes as little-endian 8-byte words.  A text with fewer
 *	   than n tokens (but at least one) has one feature made of all of them.
 *	6. Vote: each feature adds its weight to counter i if bit i of its hash
 *	   is 1 and subtracts it otherwise; bit i of the fingerprint is 1 iff
 *	   counter i ends above zero.  No features give fingerprint 0.
 *
 * Speed matters (the target is md5's speed over the same text), so ASCII
 * takes a fast path, tokens are hashed once and shingles are hashes of
 * hashes, and unit votes are added eight bits at a time in byte lanes.
 *
 * IDENTIFICATION
 *	  src/fingerprint.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "fingerprint.h"
#include "unicode_tables.h"

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

/* Scale of the fixed-point log-tf weights (exact integer sums) */
#define LOG_WEIGHT_SCALE	1000000.0

/* Unit votes are buffered and counted this many at a time */
#define VOTE_BATCH		128

/* Initialise an empty accumulator (the weighted sums only on first use) */
void
SimhashVoterInit(SimhashVoter *voter)
{
	memset(voter->counts, 0, sizeof(voter->counts));
	voter->unit_votes = 0;
	voter->weighted = false;
}

/*
 * Unit votes for a batch of hashes.  Eight byte-lane counters, held in
 * registers, count eight bits each per table lookup; they are spilled into
 * the 64-bit counters every 255 votes, before a byte can overflow.
 */
void
SimhashVoterAddBatch(SimhashVoter *voter, const uint64 *hashes, size_t n)
{
	size_t		done = 0;

	voter->unit_votes += n;
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

/*
 * Tokenizer.
 */

/* Is this ASCII byte part of a word?  (Letters and digits.) */
static inline bool
ascii_is_word(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c >= '0' && c <= '9');
}

/* ASCII case folding */
static inline unsigned char
ascii_fold(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

/*
 * Decode one UTF-8 sequence at *p and advance past it.  Anything that is not
 * a well-formed, shortest-form sequence of a scalar value decodes as U+FFFD
 * and consumes one byte.  Text from a UTF-8 database is always valid; this
 * only matters for SQL_ASCII databases.
 */
static inline uint32
decode_utf8(const unsigned char **pp, const unsigned char *end)
{
	const unsigned char *p = *pp;
	unsigned char c = p[0];
	uint32		cp;
	uint32		min;
	int			n;
	int			i;

	if (c >= 0xC2 && c <= 0xDF)
	{
		n = 2;
		cp = c & 0x1F;
		min = 0x80;
	}
	else if (c >= 0xE0 && c <= 0xEF)
	{
		n = 3;
		cp = c & 0x0F;
		min = 0x800;
	}
	else if (c >= 0xF0 && c <= 0xF4)
	{
		n = 4;
		cp = c & 0x07;
		min = 0x10000;
	}
	else
		goto invalid;

	if (end - p < n)
		goto invalid;
	for (i = 1; i < n; i++)
	{
		if ((p[i] & 0xC0) != 0x80)
			goto invalid;
		cp = (cp << 6) | (p[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		goto invalid;

	*pp = p + n;
	return cp;

invalid:
	*pp = p + 1;
	return 0xFFFD;
}

/* Write the UTF-8 encoding of a code point; returns its length */
static inline int
encode_utf8(uint32 cp, char *out)
{
	if (cp < 0x80)
	{
		out[0] = (char) cp;
		return 1;
	}
	if (cp < 0x800)
	{
		out[0] = (char) (0xC0 | (cp >> 6));
		out[1] = (char) (0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000)
	{
		out[0] = (char) (0xE0 | (cp >> 12));
		out[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char) (0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char) (0xF0 | (cp >> 18));
	out[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char) (0x80 | (cp & 0x3F));
	return 4;
}

/* Append the UTF-8 encoding of a code point to a token being built */
static inline void
append_utf8(StringInfo buf, uint32 cp)
{
	enlargeStringInfo(buf, 4);
	buf->len += encode_utf8(cp, buf->data + buf->len);
	buf->data[buf->len] = '\0';
}

/* Fullwidth ASCII forms and the ideographic space, then case folding */
static uint32
normalize_code_point(uint32 cp)
{
	int			lo,
				hi;

	if (cp >= 0xFF01 && cp <= 0xFF5E)
		cp -= 0xFF01 - 0x21;
	else if (cp == 0x3000)
		cp = 0x20;

	if (cp < 0x80)
		return ascii_fold((unsigned char) cp);

	lo = 0;
	hi = lengthof(unicode_case_fold) - 1;
	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (unicode_case_fold[mid].from == cp)
			return unicode_case_fold[mid].to;
		if (unicode_case_fold[mid].from < cp)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return cp;
}

/* Is this code point a letter, mark or digit (general category L, M, N)? */
static bool
is_word_code_point(uint32 cp)
{
	int			lo,
				hi;

	if (cp < 0x80)
		return ascii_is_word((unsigned char) cp);

	lo = 0;
	hi = lengthof(unicode_word_ranges) - 1;
	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (cp < unicode_word_ranges[mid].first)
			hi = mid - 1;
		else if (cp > unicode_word_ranges[mid].last)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/*
 * Is this a character of a script written without spaces between words:
 * Han ideographs, kana, bopomofo?  Only letters count, so punctuation in
 * those blocks (such as the katakana middle dot) still separates.
 */
static bool
is_ideograph(uint32 cp)
{
	bool		in_block;

	in_block = (cp >= 0x3400 && cp <= 0x4DBF) ||
		(cp >= 0x4E00 && cp <= 0x9FFF) ||
		(cp >= 0xF900 && cp <= 0xFAFF) ||
		(cp >= 0x20000 && cp <= 0x323AF) ||
		(cp >= 0x3040 && cp <= 0x30FF) ||	/* hiragana, katakana */
		(cp >= 0x31F0 && cp <= 0x31FF) ||	/* katakana extensions */
		(cp >= 0xFF66 && cp <= 0xFF9F) ||	/* halfwidth katakana */
		(cp >= 0x3100 && cp <= 0x312F) ||	/* bopomofo */
		(cp >= 0x31A0 && cp <= 0x31BF);
	return in_block && is_word_code_point(cp);
}

/* Tokenizer state shared by the helpers below */
typedef struct TokenizerState
{
	SimhashCjkMode cjk;
	SimhashTokenCallback callback;
	void	   *arg;
	StringInfoData word;		/* word token being built */
	char		ideograph[4];	/* previous ideograph of the current run */
	int			ideograph_len;
	int			run_length;		/* ideographs in the current run */
} TokenizerState;

/* Emit the word token being built, if any */
static inline void
flush_word(TokenizerState *ts)
{
	if (ts->word.len > 0)
	{
		ts->callback(ts->arg, ts->word.data, ts->word.len);
		ts->word.len = 0;
		ts->word.data[0] = '\0';
	}
}

/* End a run of ideographs: in bigram mode a run of one is a token */
static inline void
end_ideograph_run(TokenizerState *ts)
{
	if (ts->run_length == 1 && ts->cjk == SIMHASH_CJK_BIGRAM)
		ts->callback(ts->arg, ts->ideograph, ts->ideograph_len);
	ts->run_length = 0;
}

/* Handle one ideograph */
static void
add_ideograph(TokenizerState *ts, uint32 cp)
{
	char		enc[4];
	char		pair[8];
	int			len = encode_utf8(cp, enc);

	flush_word(ts);
	if (ts->cjk == SIMHASH_CJK_UNIGRAM)
		ts->callback(ts->arg, enc, len);
	else if (ts->run_length > 0)
	{
		memcpy(pair, ts->ideograph, ts->ideograph_len);
		memcpy(pair + ts->ideograph_len, enc, len);
		ts->callback(ts->arg, pair, ts->ideograph_len + len);
	}
	memcpy(ts->ideograph, enc, len);
	ts->ideograph_len = len;
	ts->run_length++;
}

/*
 * ascii_word_fold[c] is the case-folded byte for an ASCII letter or digit and
 * 0 for everything else, so the ASCII path needs one load per byte.
 */
#define AWF(c) ((((c) >= '0' && (c) <= '9') || ((c) >= 'a' && (c) <= 'z')) ? (c) : \
				((c) >= 'A' && (c) <= 'Z') ? (c) + ('a' - 'A') : 0)
#define AWF8(c) AWF(c), AWF((c) + 1), AWF((c) + 2), AWF((c) + 3), \
				AWF((c) + 4), AWF((c) + 5), AWF((c) + 6), AWF((c) + 7)
#define AWF32(c) AWF8(c), AWF8((c) + 8), AWF8((c) + 16), AWF8((c) + 24)

static const unsigned char ascii_word_fold[256] = {
	AWF32(0), AWF32(32), AWF32(64), AWF32(96)
	/* bytes 128..255 are 0: not ASCII */
};

/*
 * Split UTF-8 text into case-folded tokens and pass each to the callback,
 * in order.  Always inlined, so that a caller passing a constant callback
 * gets it inlined too.
 */
static pg_attribute_always_inline void
tokenize(const char *text, size_t len, SimhashCjkMode cjk,
		 SimhashTokenCallback callback, void *arg)
{
	const unsigned char *p = (const unsigned char *) text;
	const unsigned char *end = p + len;
	TokenizerState ts;

	ts.cjk = cjk;
	ts.callback = callback;
	ts.arg = arg;
	initStringInfo(&ts.word);
	ts.ideograph_len = 0;
	ts.run_length = 0;

	while (p < end)
	{
		uint32		cp;

		if (ascii_word_fold[*p])
		{
			/* fast path: a run of ASCII letters and digits */
			unsigned char c;
			char	   *out = ts.word.data + ts.word.len;
			char	   *limit = ts.word.data + ts.word.maxlen - 1;

			end_ideograph_run(&ts);
			while (p < end && (c = ascii_word_fold[*p]) != 0)
			{
				if (out == limit)
				{
					ts.word.len = out - ts.word.data;
					enlargeStringInfo(&ts.word, 1);
					out = ts.word.data + ts.word.len;
					limit = ts.word.data + ts.word.maxlen - 1;
				}
				*out++ = (char) c;
				p++;
			}
			*out = '\0';
			ts.word.len = out - ts.word.data;
			continue;
		}

		if (*p < 0x80)
		{
			/* any other ASCII character separates */
			flush_word(&ts);
			end_ideograph_run(&ts);
			p++;
			continue;
		}

		cp = normalize_code_point(decode_utf8(&p, end));

		if (is_ideograph(cp))
			add_ideograph(&ts, cp);
		else if (is_word_code_point(cp))
		{
			end_ideograph_run(&ts);
			append_utf8(&ts.word, cp);
		}
		else
		{
			flush_word(&ts);
			end_ideograph_run(&ts);
		}
	}
	flush_word(&ts);
	end_ideograph_run(&ts);
	pfree(ts.word.data);
}

/* Public entry point of the tokenizer (simhash_tokens) */
void
SimhashTokenize(const char *text, size_t len, SimhashCjkMode cjk,
				SimhashTokenCallback callback, void *arg)
{
	tokenize(text, len, cjk, callback, arg);
}

/* Hash of a feature given as raw bytes (array and tsvector features) */
uint64
SimhashFeatureHash(const char *bytes, size_t len)
{
	return XXH3_64bits(bytes, len);
}

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

typedef struct ShingleState
{
	const SimhashConfig *config;
	uint64		window[SIMHASH_MAX_SHINGLE];	/* hashes of the last tokens,
												 * oldest first */
	int64		ntokens;
	int64		nfeatures;
	SimhashVoter voter;
	uint64		batch[VOTE_BATCH];	/* tf votes not yet counted */
	int			nbatch;
	uint64	   *collected;		/* feature hashes, unless weighting is tf */
	size_t		ncollected;
	size_t		capacity;
} ShingleState;

/* Emit the feature made of m consecutive token hashes */
static inline void
emit_feature(ShingleState *st, const uint64 *tokens, int m)
{
	uint64		hash;
#ifdef WORDS_BIGENDIAN
	unsigned char buf[8 * SIMHASH_MAX_SHINGLE];
	int			j,
				b;

	for (j = 0; j < m; j++)
		for (b = 0; b < 8; b++)
			buf[8 * j + b] = (unsigned char) (tokens[j] >> (8 * b));
	hash = XXH3_64bits(buf, 8 * m);
#else
	/* the window already holds little-endian 8-byte words */
	hash = XXH3_64bits(tokens, 8 * m);
#endif
	st->nfeatures++;

	if (st->config->weighting == SIMHASH_WEIGHT_TF)
	{
		st->batch[st->nbatch++] = hash;
		if (st->nbatch == VOTE_BATCH)
		{
			SimhashVoterAddBatch(&st->voter, st->batch, VOTE_BATCH);
			st->nbatch = 0;
		}
		return;
	}
	if (st->ncollected == st->capacity)
	{
		st->capacity *= 2;
		st->collected = repalloc_huge(st->collected,
									  st->capacity * sizeof(uint64));
	}
	st->collected[st->ncollected++] = hash;
}

/* Token callback: hash the token and emit the shingle it completes */
static void
shingle_token(void *arg, const char *token, size_t len)
{
	ShingleState *st = (ShingleState *) arg;
	int			n = st->config->shingle;
	uint64		hash = XXH3_64bits(token, len);

	if (st->ntokens < n)
		st->window[st->ntokens] = hash;
	else
	{
		int			j;

		for (j = 0; j < n - 1; j++)
			st->window[j] = st->window[j + 1];
		st->window[n - 1] = hash;
	}
	st->ntokens++;
	if (st->ntokens >= n)
		emit_feature(st, st->window, n);
}

/*
 * Vote the collected features with binary or log-tf weights.  Sorting groups
 * equal hashes; for binary weights the distinct ones are compacted in place
 * and counted as one batch.
 */
static void
vote_collected(ShingleState *st)
{
	size_t		i = 0;
	size_t		ndistinct = 0;

	sort_feature_hashes(st->collected, st->ncollected);
	while (i < st->ncollected)
	{
		size_t		j = i + 1;

		while (j < st->ncollected && st->collected[j] == st->collected[i])
			j++;
		if (st->config->weighting == SIMHASH_WEIGHT_BINARY)
			st->collected[ndistinct++] = st->collected[i];
		else
			SimhashVoterAddWeighted(&st->voter, st->collected[i],
									rint(LOG_WEIGHT_SCALE *
										 (1.0 + log((double) (j - i)))));
		i = j;
	}
	SimhashVoterAddBatch(&st->voter, st->collected, ndistinct);
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
	uint64		result;

	Assert(config->shingle >= SIMHASH_MIN_SHINGLE &&
		   config->shingle <= SIMHASH_MAX_SHINGLE);

	/* field by field: the batch buffer needs no zeroing */
	st.config = config;
	st.ntokens = 0;
	st.nfeatures = 0;
	st.nbatch = 0;
	st.collected = NULL;
	st.ncollected = 0;
	st.capacity = 0;
	SimhashVoterInit(&st.voter);
	if (config->weighting != SIMHASH_WEIGHT_TF)
	{
		st.capacity = 64;
		st.collected = palloc(st.capacity * sizeof(uint64));
	}

	tokenize(text, len, config->cjk, shingle_token, &st);
	if (st.ntokens > 0 && st.ntokens < config->shingle)
		emit_feature(&st, st.window, (int) st.ntokens);

	SimhashVoterAddBatch(&st.voter, st.batch, st.nbatch);
	if (st.collected != NULL)
	{
		vote_collected(&st);
		pfree(st.collected);
	}
	result = SimhashVoterResult(&st.voter);
	if (nfeatures)
		*nfeatures = st.nfeatures;
	return result;
}
