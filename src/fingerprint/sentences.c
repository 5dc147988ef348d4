/*-------------------------------------------------------------------------
 *
 * sentences.c
 *		The top-k longest-sentence signature of a text: the hashes of its
 *		k longest sentences.
 *
 * Long sentences carry an article; navigation, footers and templates are
 * short.  Two pages that share several of their longest sentences are
 * copies, whatever their short sentences say.  The signature is a stored
 * format, frozen like the fingerprint: docs/fingerprint_format.md, "The
 * sentence signature", is the specification this file follows, the
 * regression test sentences holds golden vectors, and the independent
 * reference (test/reference/simhash_ref.py, sentence_signature) is
 * compared with it on every test run.  In short:
 *
 *	1. Split the UTF-8 text into sentences.  A sentence ends after a line
 *	   break, after one of the full stops of Chinese and Japanese (U+3002,
 *	   U+FF61), after a full-width ! ? ; (U+FF01, U+FF1F, U+FF1B) or an
 *	   ellipsis (U+2026), and after an ASCII . ! ? that is followed by white
 *	   space or the end of the text.  Boundaries are read on the code
 *	   points as written, before normalisation.
 *	2. A sentence's text is its tokens (the fingerprint's tokenizer, cjk =
 *	   unigram: decoded, normalised, case-folded) joined by single spaces,
 *	   two consecutive ideographs joined without one: the joining of the
 *	   character n-grams.  Its length is the number of code points of its
 *	   tokens.  A sentence without tokens is dropped.
 *	3. Its hash is XXH3-64, seed 0, of that text's UTF-8.
 *	4. Equal hashes count once.  Sentences are ordered by length, longest
 *	   first, equal lengths by hash (unsigned, smallest first): the order of
 *	   the sentences in the text does not matter.  The first k are the
 *	   signature, returned sorted (as signed 64-bit integers, smallest
 *	   first), so that equal signatures are equal arrays.
 *	5. With a skip list (version 1.6: simhash_sentences(body, k, skip)),
 *	   a sentence whose hash is in the list is passed over before step 4
 *	   takes the first k: the next longest take its place.  An empty list
 *	   is the signature of 1.5.
 *
 * The text of a sentence is never held whole: the tokens stream into an
 * XXH3 state (on the stack; xxHash's header is compiled in, as in
 * fingerprint.c, which checks its version), so a sentence of a gigabyte
 * costs no more memory than one of a line.
 *
 * IDENTIFICATION
 *	  src/fingerprint/sentences.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "miscadmin.h"

#include "fingerprint/fingerprint.h"
#include "fingerprint/tokenizer_loop.h"

/* One sentence: its hash and length */
typedef struct Sentence
{
	uint64		hash;
	int64		length;
} Sentence;

/* A sentence being read: its hash so far */
typedef struct SentenceState
{
	XXH3_state_t *xxh;
	int64		length;			/* code points of its tokens */
	bool		last_ideograph;
} SentenceState;

/* Token callback: append the token to the sentence's text */
static void
sentence_token(void *arg, const char *token, size_t len)
{
	SentenceState *ss = (SentenceState *) arg;
	const unsigned char *p = (const unsigned char *) token;
	const unsigned char *end = p + len;
	bool		ideograph;
	int64		n = 0;

	ideograph = SimhashIsIdeograph(decode_utf8(&p, end)) && p == end;
	if (ss->length > 0 && !(ideograph && ss->last_ideograph))
		XXH3_64bits_update(ss->xxh, " ", 1);
	ss->last_ideograph = ideograph;
	XXH3_64bits_update(ss->xxh, token, len);
	for (p = (const unsigned char *) token; p < end; p++)
		n += (*p & 0xC0) != 0x80;
	ss->length += n;
}

/* A code point after which a sentence always ends */
static inline bool
ends_sentence(uint32 cp)
{
	return cp == '\n' || cp == '\r' || cp == 0x2028 || cp == 0x2029 ||
		cp == 0x3002 || cp == 0xFF61 ||
		cp == 0xFF01 || cp == 0xFF1F || cp == 0xFF1B ||
		cp == 0x2026;
}

/* White space after an ASCII . ! ? that ends a sentence */
static inline bool
is_space(uint32 cp)
{
	return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' ||
		cp == '\v' || cp == '\f' || cp == 0xA0 || cp == 0x3000 ||
		cp == 0x2028 || cp == 0x2029;
}

/* Longest first; equal lengths by hash, smallest first */
static int
sentence_cmp(const void *a, const void *b)
{
	const Sentence *x = (const Sentence *) a;
	const Sentence *y = (const Sentence *) b;

	if (x->length != y->length)
		return x->length > y->length ? -1 : 1;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return 0;
}

/* The sentences found so far */
typedef struct SentenceList
{
	Sentence   *items;
	int			n;
	int			max;
} SentenceList;

/* Hash one sentence, text[start, end); keep it if it has tokens */
static void
add_sentence(const char *start, const char *end, XXH3_state_t *xxh,
			 SentenceList *list)
{
	SentenceState ss;

	if (XXH3_64bits_reset(xxh) != XXH_OK)
		elog(ERROR, "XXH3_64bits_reset failed");
	ss.xxh = xxh;
	ss.length = 0;
	ss.last_ideograph = false;
	SimhashTokenize(start, end - start, SIMHASH_CJK_UNIGRAM, sentence_token, &ss);
	if (ss.length == 0)
		return;
	if (list->n == list->max)
	{
		list->max *= 2;
		list->items = repalloc_huge(list->items, (Size) list->max * sizeof(Sentence));
	}
	list->items[list->n].hash = XXH3_64bits_digest(xxh);
	list->items[list->n].length = ss.length;
	list->n++;
}

/* The code point at *p, advancing past it (decode_utf8 takes no ASCII) */
static inline uint32
next_code_point(const unsigned char **p, const unsigned char *end)
{
	if (**p < 0x80)
		return *(*p)++;
	return decode_utf8(p, end);
}

/* Split a UTF-8 text into sentences (step 1) and hash each */
static void
split_sentences(const char *text, size_t len, XXH3_state_t *xxh,
				SentenceList *list)
{
	const unsigned char *p = (const unsigned char *) text;
	const unsigned char *end = p + len;
	const char *start = text;

	while (p < end)
	{
		uint32		cp = next_code_point(&p, end);
		bool		boundary = ends_sentence(cp);

		if (!boundary && (cp == '.' || cp == '!' || cp == '?'))
		{
			const unsigned char *q = p;

			boundary = (q == end) || is_space(next_code_point(&q, end));
		}
		if (boundary)
		{
			add_sentence(start, (const char *) p, xxh, list);
			start = (const char *) p;
			if ((list->n & 1023) == 0)
				CHECK_FOR_INTERRUPTS();
		}
	}
	if (start < (const char *) end)
		add_sentence(start, (const char *) end, xxh, list);
}

/* The text's sentences, longest first, copies once (steps 1 to 4) */
static Sentence *
sorted_sentences(const char *text, size_t len, int *n)
{
	XXH3_state_t xxh;
	SentenceList list;
	int			i,
				out = 0;

	XXH3_INITSTATE(&xxh);
	list.n = 0;
	list.max = 16;
	list.items = palloc(list.max * sizeof(Sentence));
	split_sentences(text, len, &xxh, &list);
	qsort(list.items, list.n, sizeof(Sentence), sentence_cmp);
	for (i = 0; i < list.n; i++)
		if (out == 0 || list.items[i].hash != list.items[out - 1].hash)
			list.items[out++] = list.items[i];
	*n = out;
	return list.items;
}

/*
 * The signature of a UTF-8 text: up to k hashes, sorted, into sig (room for
 * k), passing over those in skip (nskip of them, sorted as signed 64-bit
 * integers); returns how many.
 */
int
SimhashSentenceSignature(const char *text, size_t len, int k,
						 const int64 *skip, int nskip, int64 *sig)
{
	int			n,
				i,
				kept = 0;
	Sentence   *items = sorted_sentences(text, len, &n);

	for (i = 0; i < n && kept < k; i++)
	{
		int64		h = (int64) items[i].hash;

		if (nskip > 0 && bsearch(&h, skip, nskip, sizeof(int64), SimhashInt64Cmp))
			continue;
		sig[kept++] = h;
	}
	pfree(items);
	qsort(sig, kept, sizeof(int64), SimhashInt64Cmp);
	return kept;
}

/*
 * Every distinct sentence hash of a UTF-8 text, in no particular order
 * (simhash_frequent_sentences counts them); *n is how many
 */
int64 *
SimhashSentenceHashes(const char *text, size_t len, int *n)
{
	Sentence   *items = sorted_sentences(text, len, n);
	int64	   *hashes = palloc(Max(*n, 1) * sizeof(int64));
	int			i;

	for (i = 0; i < *n; i++)
		hashes[i] = (int64) items[i].hash;
	pfree(items);
	return hashes;
}
