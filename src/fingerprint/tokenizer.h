/*-------------------------------------------------------------------------
 *
 * tokenizer.h
 *		The tokenizer of the fingerprint: UTF-8 text into case-folded
 *		tokens (steps 1 to 3 of the algorithm in fingerprint.c).
 *
 * SimhashTokenize() takes any callback.  The loop itself is in
 * tokenizer_loop.h, for the fingerprint, which needs its token sink
 * inlined into it.  Everything here is part of the stored fingerprint
 * format.
 *
 * IDENTIFICATION
 *	  src/fingerprint/tokenizer.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SIMHASH_TOKENIZER_H
#define SIMHASH_TOKENIZER_H

/* How runs of CJK ideographs and kana become tokens */
typedef enum SimhashCjkMode
{
	SIMHASH_CJK_UNIGRAM,		/* each character is a token */
	SIMHASH_CJK_BIGRAM			/* overlapping character pairs */
} SimhashCjkMode;

/*
 * What a token is: a word (a run of letters, marks and digits; each
 * ideograph alone), the default; or one character, a letter or digit of any
 * script with the marks that follow it (tokens => 'chars',
 * docs/fingerprint_format.md, "Character tokens").
 */
typedef enum SimhashTokens
{
	SIMHASH_TOKENS_WORDS,
	SIMHASH_TOKENS_CHARS
} SimhashTokens;

/* Called once per token with its case-folded UTF-8 bytes */
typedef void (*SimhashTokenCallback) (void *arg, const char *token, size_t len);

/* tokenizer.c */
extern void SimhashTokenize(const char *text, size_t len, SimhashCjkMode cjk,
							SimhashTokenCallback callback, void *arg);
extern uint32 SimhashNormalizeCodePoint(uint32 cp);
extern bool SimhashIsWordCodePoint(uint32 cp);
extern bool SimhashIsIdeograph(uint32 cp);
extern bool SimhashIsMark(uint32 cp);

#endif							/* SIMHASH_TOKENIZER_H */
