/*-------------------------------------------------------------------------
 *
 * tokenizer_loop.h
 *		The tokenizer's loop, as inline functions.
 *
 * Steps 1 to 3 of the fingerprint algorithm (fingerprint.c lists them all;
 * docs/fingerprint_format.md is the reference):
 *
 *	1. Decode UTF-8 (an invalid byte decodes as U+FFFD, a separator).
 *	2. Normalise each code point: fullwidth ASCII forms to ASCII, the
 *	   ideographic space to a space, then Unicode 15.0 simple case folding.
 *	3. Classify: CJK ideographs and kana are tokens by themselves (or, in
 *	   bigram mode, overlapping pairs within a run); other letters, marks and
 *	   digits (categories L, M, N) form words; everything else separates.
 *
 * The loop is here as inline functions rather than behind a call, because
 * the fingerprint is computed at about md5's speed only when each token is
 * hashed inside the loop that finds it: simhash_tokenize() is always
 * inlined and takes its token sinks as parameters, so a caller that passes
 * constant functions (fingerprint.c) gets a loop with its sinks inlined.
 * The Unicode lookups, needed only past ASCII, are out of line in
 * tokenizer.c with the tables, as is SimhashTokenize(), the tokenizer for
 * any callback (tokenizer.h).  Only fingerprint.c, tokenizer.c and
 * sentences.c (which splits sentences with the same loop) include this
 * file.  Everything here is part of the stored fingerprint format.
 *
 * IDENTIFICATION
 *	  src/fingerprint/tokenizer_loop.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SIMHASH_TOKENIZER_LOOP_H
#define SIMHASH_TOKENIZER_LOOP_H

#include "lib/stringinfo.h"

#include "fingerprint/tokenizer.h"

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

/*
 * ascii_class[c]: 0 for bytes that are not ASCII letters or digits, 1 for
 * lowercase letters and digits, 2 for uppercase letters (which fold).
 */
#define AC(c) ((((c) >= '0' && (c) <= '9') || ((c) >= 'a' && (c) <= 'z')) ? 1 : \
			   ((c) >= 'A' && (c) <= 'Z') ? 2 : 0)
#define AC8(c) AC(c), AC((c) + 1), AC((c) + 2), AC((c) + 3), \
			   AC((c) + 4), AC((c) + 5), AC((c) + 6), AC((c) + 7)
#define AC32(c) AC8(c), AC8((c) + 8), AC8((c) + 16), AC8((c) + 24)

static const unsigned char ascii_class[256] = {
	AC32(0), AC32(32), AC32(64), AC32(96)
	/* bytes 128..255 are 0: not ASCII */
};

#ifndef WORDS_BIGENDIAN
#define BYTES_ONES	UINT64CONST(0x0101010101010101)
#define BYTES_HIGHS UINT64CONST(0x8080808080808080)

/*
 * The high bit of every byte of x that lies strictly between m and n, for
 * 0 <= m <= 127 and 0 <= n <= 128; bytes >= 0x80 never qualify.  No carry
 * or borrow crosses a byte boundary, so the test is exact byte by byte.
 */
static inline uint64
bytes_between(uint64 x, unsigned m, unsigned n)
{
	uint64		low7 = x & (BYTES_ONES * 127);

	return ((BYTES_ONES * (127 + n)) - low7) & ~x &
		(low7 + BYTES_ONES * (127 - m)) & BYTES_HIGHS;
}
#endif

/*
 * End of the run of ASCII letters and digits starting at p; sets *upper if
 * it holds an uppercase letter.  Eight bytes at a time where it can: the
 * end of a word is then found without a mispredicted branch per byte.
 */
static inline const unsigned char *
scan_ascii_word(const unsigned char *p, const unsigned char *end, bool *upper)
{
	int			classes = 0;

#ifndef WORDS_BIGENDIAN
	while (end - p >= 8)
	{
		uint64		x;
		uint64		caps,
					stop;

		memcpy(&x, p, sizeof(x));
		caps = bytes_between(x, 'A' - 1, 'Z' + 1);
		stop = ~(bytes_between(x, '0' - 1, '9' + 1) | caps |
				 bytes_between(x, 'a' - 1, 'z' + 1)) & BYTES_HIGHS;
		if (stop)
		{
			int			k = __builtin_ctzll(stop) >> 3;

			*upper = (caps & ((UINT64CONST(1) << (8 * k)) - 1)) != 0 ||
				classes == 2;
			return p + k;
		}
		if (caps)
			classes = 2;
		p += 8;
	}
#endif
	while (p < end && ascii_class[*p])
		classes |= ascii_class[*p++];
	*upper = (classes & 2) != 0;
	return p;
}

/* Tokenizer state shared by the helpers below */
typedef struct TokenizerState
{
	SimhashCjkMode cjk;
	void	   *arg;			/* passed to the sinks */
	StringInfoData word;		/* word token being built */
	char		ideograph[4];	/* previous ideograph of the current run */
	int			ideograph_len;
	int			run_length;		/* ideographs in the current run */
} TokenizerState;

/* Emit the word token being built, if any */
static pg_attribute_always_inline void
flush_word(TokenizerState *ts, SimhashTokenCallback sink)
{
	if (ts->word.len > 0)
	{
		sink(ts->arg, ts->word.data, ts->word.len);
		ts->word.len = 0;
		ts->word.data[0] = '\0';
	}
}

/* End a run of ideographs: in bigram mode a run of one is a token */
static pg_attribute_always_inline void
end_ideograph_run(TokenizerState *ts, SimhashTokenCallback short_sink)
{
	if (ts->run_length == 1 && ts->cjk == SIMHASH_CJK_BIGRAM)
		short_sink(ts->arg, ts->ideograph, ts->ideograph_len);
	ts->run_length = 0;
}

/* Handle one ideograph */
static pg_attribute_always_inline void
add_ideograph(TokenizerState *ts, uint32 cp, SimhashTokenCallback sink,
			  SimhashTokenCallback short_sink)
{
	char		enc[4];
	char		pair[8];
	int			len = encode_utf8(cp, enc);

	flush_word(ts, sink);
	if (ts->cjk == SIMHASH_CJK_UNIGRAM)
		short_sink(ts->arg, enc, len);
	else if (ts->run_length > 0)
	{
		memcpy(pair, ts->ideograph, ts->ideograph_len);
		memcpy(pair + ts->ideograph_len, enc, len);
		short_sink(ts->arg, pair, ts->ideograph_len + len);
	}
	memcpy(ts->ideograph, enc, len);
	ts->ideograph_len = len;
	ts->run_length++;
}

/*
 * Split UTF-8 text into case-folded tokens and pass each, in order, to
 * sink(arg, token, len); single ideographs and ideograph pairs go to
 * short_sink instead (a sink may want a path of its own for those short
 * tokens).  Always inlined: with constant sinks, each caller gets a loop
 * with its own sinks in it.
 */
static pg_attribute_always_inline void
simhash_tokenize(const char *text, size_t len, SimhashCjkMode cjk,
				 SimhashTokenCallback sink, SimhashTokenCallback short_sink,
				 void *arg)
{
	const unsigned char *p = (const unsigned char *) text;
	const unsigned char *end = p + len;
	TokenizerState ts;

	ts.cjk = cjk;
	ts.arg = arg;
	initStringInfo(&ts.word);
	ts.ideograph_len = 0;
	ts.run_length = 0;

	while (p < end)
	{
		uint32		cp;

		if (ascii_class[*p])
		{
			/* fast path: a run of ASCII letters and digits */
			const unsigned char *start = p;
			bool		upper;

			end_ideograph_run(&ts, short_sink);
			p = scan_ascii_word(p, end, &upper);

			/*
			 * A whole token in lowercase (the common case) is hashed where
			 * it stands; otherwise the run is folded into the token being
			 * built, which may also hold non-ASCII letters.
			 */
			if (ts.word.len == 0 && (p == end || *p < 0x80) && !upper)
				sink(arg, (const char *) start, p - start);
			else
			{
				const unsigned char *q;
				char	   *out;

				enlargeStringInfo(&ts.word, p - start);
				out = ts.word.data + ts.word.len;
				for (q = start; q < p; q++)
					*out++ = (char) ascii_fold(*q);
				*out = '\0';
				ts.word.len = out - ts.word.data;
			}
			continue;
		}

		if (*p < 0x80)
		{
			/* any other ASCII character separates */
			flush_word(&ts, sink);
			end_ideograph_run(&ts, short_sink);
			p++;
			continue;
		}

		cp = SimhashNormalizeCodePoint(decode_utf8(&p, end));

		if (SimhashIsIdeograph(cp))
			add_ideograph(&ts, cp, sink, short_sink);
		else if (SimhashIsWordCodePoint(cp))
		{
			end_ideograph_run(&ts, short_sink);
			append_utf8(&ts.word, cp);
		}
		else
		{
			flush_word(&ts, sink);
			end_ideograph_run(&ts, short_sink);
		}
	}
	flush_word(&ts, sink);
	end_ideograph_run(&ts, short_sink);
	pfree(ts.word.data);
}

/*
 * The character tokens of tokens => 'chars' (docs/fingerprint_format.md,
 * "Character tokens"): after steps 1 and 2, every code point of category L
 * or N is a token, with the marks (category M) that directly follow it
 * appended; a mark that follows anything else, and every other code point,
 * is dropped.  So a text's character tokens are its letters and digits, of
 * any script, one by one, whatever spaces or punctuation stood between
 * them.  Each goes to sink(arg, token, len).  Always inlined, like
 * simhash_tokenize().
 */
static pg_attribute_always_inline void
simhash_tokenize_chars(const char *text, size_t len, SimhashTokenCallback sink,
					   void *arg)
{
	const unsigned char *p = (const unsigned char *) text;
	const unsigned char *end = p + len;
	StringInfoData ch;			/* the character being read, with its marks */

	initStringInfo(&ch);
	while (p < end)
	{
		uint32		cp;

		if (*p < 0x80)
		{
			unsigned char c = *p++;

			if (ch.len > 0)
				sink(arg, ch.data, ch.len);
			ch.len = 0;
			if (ascii_class[c])
			{
				ch.data[0] = (char) ascii_fold(c);
				ch.len = 1;
			}
			ch.data[ch.len] = '\0';
			continue;
		}

		cp = SimhashNormalizeCodePoint(decode_utf8(&p, end));
		if (SimhashIsMark(cp))
		{
			/* a mark belongs to the letter or digit before it, if any */
			if (ch.len > 0)
				append_utf8(&ch, cp);
			continue;
		}
		if (ch.len > 0)
			sink(arg, ch.data, ch.len);
		ch.len = 0;
		ch.data[0] = '\0';
		if (SimhashIsWordCodePoint(cp))
			append_utf8(&ch, cp);
	}
	if (ch.len > 0)
		sink(arg, ch.data, ch.len);
	pfree(ch.data);
}

#endif							/* SIMHASH_TOKENIZER_LOOP_H */
