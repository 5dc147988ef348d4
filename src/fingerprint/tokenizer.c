/*-------------------------------------------------------------------------
 *
 * tokenizer.c
 *		The tokenizer's Unicode lookups (case folding, word characters,
 *		ideographs, marks), and SimhashTokenize(), the tokenizer for any
 *		callback.
 *
 * The tokenizer's loop is in tokenizer_loop.h, which explains the split.  The
 * tables come from tools/gen_unicode_tables.py (Unicode 15.0) and are part
 * of the stored fingerprint format.
 *
 * IDENTIFICATION
 *	  src/fingerprint/tokenizer.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fingerprint/tokenizer_loop.h"
#include "fingerprint/unicode_tables.h"

/* Is this ASCII byte part of a word?  (Letters and digits.) */
static inline bool
ascii_is_word(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c >= '0' && c <= '9');
}

/* Fullwidth ASCII forms and the ideographic space, then case folding */
uint32
SimhashNormalizeCodePoint(uint32 cp)
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

/* Is cp in one of the n sorted ranges? */
static bool
in_ranges(uint32 cp, const UnicodeRange *ranges, int n)
{
	int			lo = 0,
				hi = n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (cp < ranges[mid].first)
			hi = mid - 1;
		else if (cp > ranges[mid].last)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/* Is this code point a letter, mark or digit (general category L, M, N)? */
bool
SimhashIsWordCodePoint(uint32 cp)
{
	if (cp < 0x80)
		return ascii_is_word((unsigned char) cp);
	return in_ranges(cp, unicode_word_ranges, lengthof(unicode_word_ranges));
}

/* Is this code point a mark (general category M)?  None is ASCII. */
bool
SimhashIsMark(uint32 cp)
{
	if (cp < 0x300)
		return false;
	return in_ranges(cp, unicode_mark_ranges, lengthof(unicode_mark_ranges));
}

/*
 * Is this a character of a script written without spaces between words:
 * Han ideographs, kana, bopomofo?  Only letters count, so punctuation in
 * those blocks (such as the katakana middle dot) still separates.
 */
bool
SimhashIsIdeograph(uint32 cp)
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
	return in_block && SimhashIsWordCodePoint(cp);
}

/* The tokenizer for any callback (simhash_tokens, character n-grams) */
void
SimhashTokenize(const char *text, size_t len, SimhashCjkMode cjk,
				SimhashTokenCallback callback, void *arg)
{
	simhash_tokenize(text, len, cjk, callback, callback, arg);
}
