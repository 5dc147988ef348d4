/*-------------------------------------------------------------------------
 *
 * fingerprint_sql.c
 *		SQL functions that compute fingerprints: simhash(text, ...),
 *		simhash(text[]), simhash(text[], real[]), simhash(tsvector),
 *		simhash128(text, ...),
 *		simhash_chargrams(), the helpers simhash_tokens() and
 *		simhash_feature_count(), and simhash_jaccard(), the exact similarity
 *		of two texts' feature sets.
 *
 * Fingerprints must not depend on the database encoding, so every string is
 * hashed as UTF-8: text from a database in another encoding is converted
 * first.  (In a SQL_ASCII database bytes are taken as they are; bytes that
 * are not UTF-8 act as separators.)
 *
 * IDENTIFICATION
 *	  src/fingerprint/fingerprint_sql.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "tsearch/ts_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/varbit.h"

#include "fingerprint/fingerprint.h"
#include "fingerprint/fingerprint_sql.h"
#include "type/simhash.h"

PG_FUNCTION_INFO_V1(simhash_text);
PG_FUNCTION_INFO_V1(simhash128_text);
PG_FUNCTION_INFO_V1(simhash_text_feature_count);
PG_FUNCTION_INFO_V1(simhash_text_tokens);
PG_FUNCTION_INFO_V1(simhash_text_array);
PG_FUNCTION_INFO_V1(simhash_text_array_weighted);
PG_FUNCTION_INFO_V1(simhash_tsvector);
PG_FUNCTION_INFO_V1(simhash_text_chargrams);
PG_FUNCTION_INFO_V1(simhash_text_jaccard);
PG_FUNCTION_INFO_V1(simhash_text_is_reliable);
PG_FUNCTION_INFO_V1(simhash_sentences);
PG_FUNCTION_INFO_V1(simhash_sentence_overlap);

/* The bytes of a string as UTF-8, converting from the database encoding */
const char *
SimhashStringAsUtf8(const char *s, int len, size_t *utf8_len)
{
	int			encoding = GetDatabaseEncoding();
	const char *converted;

	if (encoding == PG_UTF8 || encoding == PG_SQL_ASCII)
	{
		*utf8_len = len;
		return s;
	}
	converted = (const char *) pg_do_encoding_conversion((unsigned char *) s,
														  len, encoding,
														  PG_UTF8);
	*utf8_len = (converted == s) ? (size_t) len : strlen(converted);
	return converted;
}

/* The bytes of a text value as UTF-8 */
static inline const char *
text_as_utf8(text *t, size_t *utf8_len)
{
	return SimhashStringAsUtf8(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), utf8_len);
}

/* One accepted word of a text option, and the value it stands for */
typedef struct OptionWord
{
	const char *word;
	int			value;
} OptionWord;

static const OptionWord cjk_words[] = {
	{"unigram", SIMHASH_CJK_UNIGRAM},
	{"bigram", SIMHASH_CJK_BIGRAM},
};

static const OptionWord tokens_words[] = {
	{"words", SIMHASH_TOKENS_WORDS},
	{"chars", SIMHASH_TOKENS_CHARS},
};

static const OptionWord weighting_words[] = {
	{"tf", SIMHASH_WEIGHT_TF},
	{"binary", SIMHASH_WEIGHT_BINARY},
	{"log", SIMHASH_WEIGHT_LOG},
};

/*
 * The value of a text option (cjk, weighting): one of the words of its
 * table, else an error that lists them.  No palloc unless the word is bad:
 * called per row.
 */
static int
parse_option(const char *name, text *arg, const OptionWord *words, int nwords)
{
	const char *given = VARDATA_ANY(arg);
	size_t		len = VARSIZE_ANY_EXHDR(arg);
	StringInfoData valid;
	int			i;

	for (i = 0; i < nwords; i++)
		if (strlen(words[i].word) == len && memcmp(given, words[i].word, len) == 0)
			return words[i].value;

	/* "a", "b" and "c" */
	initStringInfo(&valid);
	for (i = 0; i < nwords; i++)
		appendStringInfo(&valid, "%s\"%s\"",
						 i == 0 ? "" : (i == nwords - 1 ? " and " : ", "),
						 words[i].word);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for parameter \"%s\": \"%s\"",
					name, text_to_cstring(arg)),
			 errhint("Valid values are %s.", valid.data)));
	return 0;					/* keep compiler quiet */
}

/* Parse the cjk option */
static inline SimhashCjkMode
parse_cjk(text *cjk)
{
	return (SimhashCjkMode) parse_option("cjk", cjk, cjk_words,
										 lengthof(cjk_words));
}

/* Parse the tokens option */
static inline SimhashTokens
parse_tokens(text *tokens)
{
	return (SimhashTokens) parse_option("tokens", tokens, tokens_words,
										lengthof(tokens_words));
}

/* Parse the weighting option */
static inline SimhashWeighting
parse_weighting(text *weighting)
{
	return (SimhashWeighting) parse_option("weighting", weighting,
										   weighting_words,
										   lengthof(weighting_words));
}

/* Report a bad list of shingle sizes, written out as given */
static void
invalid_shingles(const char *given, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid shingle sizes: %s", given),
			 errdetail("%s", why)));
}

/* Parse the shingle sizes: a non-empty int[] of distinct values 1..8 */
static void
parse_shingles(ArrayType *arr, SimhashConfig *config)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i,
				j;
	StringInfoData given;

	if (ARR_NDIM(arr) > 1)
		invalid_shingles("(a multidimensional array)",
						 "The sizes must be a one-dimensional array.");
	deconstruct_array(arr, INT4OID, sizeof(int32), true, TYPALIGN_INT,
					  &elems, &nulls, &n);

	/* the value as written, for error messages */
	initStringInfo(&given);
	appendStringInfoChar(&given, '{');
	for (i = 0; i < n; i++)
	{
		if (i > 0)
			appendStringInfoChar(&given, ',');
		if (nulls[i])
			appendStringInfoString(&given, "NULL");
		else
			appendStringInfo(&given, "%d", DatumGetInt32(elems[i]));
	}
	appendStringInfoChar(&given, '}');

	for (i = 0; i < n; i++)
		if (nulls[i])
			invalid_shingles(given.data, "The sizes must not be NULL.");
	if (n < 1 || n > SIMHASH_MAX_SHINGLE)
		invalid_shingles(given.data, psprintf("Give between 1 and %d sizes.",
											  SIMHASH_MAX_SHINGLE));
	for (i = 0; i < n; i++)
	{
		int32		v = DatumGetInt32(elems[i]);

		if (v < SIMHASH_MIN_SHINGLE || v > SIMHASH_MAX_SHINGLE)
			invalid_shingles(given.data,
							 psprintf("Every size must be between %d and %d.",
									  SIMHASH_MIN_SHINGLE, SIMHASH_MAX_SHINGLE));
		/* insertion into the sorted list */
		for (j = i; j > 0 && config->sizes[j - 1] > v; j--)
			config->sizes[j] = config->sizes[j - 1];
		if (j > 0 && config->sizes[j - 1] == v)
			invalid_shingles(given.data, "Every size must appear once.");
		config->sizes[j] = v;
	}
	config->nsizes = n;
}

/* Shingle sizes parsed on the first call of a query, kept in fn_extra */
typedef struct ShinglesCache
{
	SimhashConfig config;
} ShinglesCache;

/*
 * Build a shingle feature scheme from the arguments of a call: the shingle
 * sizes, the weighting (or tf, if weighting_arg < 0), the CJK mode and the
 * kind of tokens are arguments shingles_arg, weighting_arg, cjk_arg and
 * tokens_arg.  The tokens are words if tokens_arg < 0 or the call has no
 * such argument: the functions declared before version 1.6 (which a
 * database not yet updated still calls) have none.
 *
 * The shingle sizes are usually a constant or a query parameter, the same
 * on every call of a query: then they are parsed once.  An array computed
 * per row is parsed on every call; its Datum cannot identify it, since the
 * next row's array may be allocated at the same address.
 */
void
SimhashConfigFromArgs(FunctionCallInfo fcinfo, int shingles_arg,
					  int weighting_arg, int cjk_arg, int tokens_arg,
					  SimhashConfig *config)
{
	ShinglesCache *cache = (ShinglesCache *) fcinfo->flinfo->fn_extra;

	if (cache != NULL)
		*config = cache->config;
	else
	{
		parse_shingles(PG_GETARG_ARRAYTYPE_P(shingles_arg), config);
		if (get_fn_expr_arg_stable(fcinfo->flinfo, shingles_arg))
		{
			cache = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt,
									   sizeof(ShinglesCache));
			cache->config = *config;
			fcinfo->flinfo->fn_extra = cache;
		}
	}
	config->chargram = 0;
	config->weighting = weighting_arg < 0 ? SIMHASH_WEIGHT_TF :
		parse_weighting(PG_GETARG_TEXT_PP(weighting_arg));
	config->cjk = parse_cjk(PG_GETARG_TEXT_PP(cjk_arg));
	config->tokens = (tokens_arg >= 0 && tokens_arg < PG_NARGS()) ?
		parse_tokens(PG_GETARG_TEXT_PP(tokens_arg)) : SIMHASH_TOKENS_WORDS;

	/* characters are tokens one by one: there are no runs to pair */
	if (config->tokens == SIMHASH_TOKENS_CHARS &&
		config->cjk != SIMHASH_CJK_UNIGRAM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for parameter \"cjk\" with tokens \"chars\": \"%s\"",
						text_to_cstring(PG_GETARG_TEXT_PP(cjk_arg))),
				 errdetail("With tokens \"chars\" every character is a token of its own, so cjk must be \"unigram\"."),
				 errhint("Pairs of characters are shingles => '{2}'.")));
}

/*
 * The scheme of simhash(doc, shingles, weighting, cjk), of its helpers and
 * of simhash128(doc, shingles, weighting, cjk, tokens)
 */
static inline void
config_from_args(FunctionCallInfo fcinfo, SimhashConfig *config)
{
	SimhashConfigFromArgs(fcinfo, 1, 2, 3, 4, config);
}

/* The fingerprint of a text argument; nfeatures as for SimhashOfText */
static uint64
simhash_of_text_arg(text *doc, const SimhashConfig *config, int64 *nfeatures)
{
	size_t		len;
	const char *utf8 = text_as_utf8(doc, &len);

	return SimhashOfText(utf8, len, config, nfeatures);
}

/* simhash(text, shingles, weighting, cjk) */
Datum
simhash_text(PG_FUNCTION_ARGS)
{
	SimhashConfig config;

	config_from_args(fcinfo, &config);
	PG_RETURN_SIMHASH(simhash_of_text_arg(PG_GETARG_TEXT_PP(0), &config, NULL));
}

/*
 * simhash128(text, shingles, weighting, cjk): the 128-bit fingerprint as a
 * bit string of 128 bits, word 0 (the 64-bit fingerprint) first, each word
 * most significant bit first; so the leftmost 64 bits are simhash()'s, as
 * simhash64::bit(64) shows them.
 */
Datum
simhash128_text(PG_FUNCTION_ARGS)
{
	SimhashConfig config;
	text	   *doc;
	const char *utf8;
	size_t		len;
	uint64		words[SIMHASH_WIDE_WORDS];
	VarBit	   *result;
	bits8	   *out;
	int			w,
				b;

	config_from_args(fcinfo, &config);
	doc = PG_GETARG_TEXT_PP(0);
	utf8 = text_as_utf8(doc, &len);
	SimhashOfText128(utf8, len, &config, words);

	result = (VarBit *) palloc(VARBITTOTALLEN(64 * SIMHASH_WIDE_WORDS));
	SET_VARSIZE(result, VARBITTOTALLEN(64 * SIMHASH_WIDE_WORDS));
	VARBITLEN(result) = 64 * SIMHASH_WIDE_WORDS;
	out = VARBITS(result);
	for (w = 0; w < SIMHASH_WIDE_WORDS; w++)
		for (b = 0; b < 8; b++)
			*out++ = (bits8) (words[w] >> (56 - 8 * b));
	PG_RETURN_VARBIT_P(result);
}

/*
 * The number of features (occurrences) of a text argument.  It does not
 * depend on the weighting, which is checked but then replaced by tf: tf
 * collects nothing, so the count takes no memory for features.
 */
static int64
feature_count_of_text_arg(text *doc, SimhashConfig *config)
{
	int64		nfeatures;

	config->weighting = SIMHASH_WEIGHT_TF;
	(void) simhash_of_text_arg(doc, config, &nfeatures);
	return nfeatures;
}

/* simhash_feature_count(text, shingles, weighting, cjk): features voting */
Datum
simhash_text_feature_count(PG_FUNCTION_ARGS)
{
	SimhashConfig config;

	config_from_args(fcinfo, &config);
	PG_RETURN_INT64(feature_count_of_text_arg(PG_GETARG_TEXT_PP(0), &config));
}

/*
 * simhash_is_reliable(text, min_features, shingles, weighting, cjk): does the
 * fingerprint rest on at least min_features features?  A fingerprint of a
 * short text moves few bits when a word changes, so texts that differ in a
 * large share of their shingles still land within a small k.
 */
Datum
simhash_text_is_reliable(PG_FUNCTION_ARGS)
{
	int64		min_features = PG_GETARG_INT64(1);
	SimhashConfig config;

	SimhashConfigFromArgs(fcinfo, 2, 3, 4, -1, &config);
	PG_RETURN_BOOL(feature_count_of_text_arg(PG_GETARG_TEXT_PP(0), &config) >=
				   min_features);
}

/*
 * simhash_tokens builds its text[] in place, in two passes over the text:
 * the first adds up the size of the array, the second writes the tokens
 * into it.  The array is what construct_md_array() would build (one
 * dimension, lower bound 1, no NULLs, each element a text with a 4-byte
 * header at an int-aligned offset, zero padding), but nothing else is
 * allocated: no text value per token, no Datum array, no final copy, which
 * together took about 11 bytes per byte of text.  An array larger than
 * MaxAllocSize cannot exist, and the first pass finds out before anything
 * is allocated.  Tokenizing twice costs less than those allocations did.
 */
typedef struct TokenArrayBuilder
{
	char	   *data;			/* next element, or NULL in the first pass */
	uint64		size;			/* bytes of the elements so far */
	int64		ntokens;
} TokenArrayBuilder;

/* Token callback of simhash_tokens: convert back, measure or store */
static void
collect_token(void *arg, const char *token, size_t len)
{
	TokenArrayBuilder *tb = (TokenArrayBuilder *) arg;
	char	   *server = pg_any_to_server(token, (int) len, PG_UTF8);
	size_t		slen = (server == token) ? len : strlen(server);
	size_t		esize = INTALIGN(VARHDRSZ + slen);

	tb->ntokens++;
	tb->size += esize;
	if (tb->data != NULL)
	{
		SET_VARSIZE(tb->data, VARHDRSZ + slen);
		memcpy(VARDATA(tb->data), server, slen);
		/* the padding is zero already (palloc0) */
		tb->data += esize;
	}
	if (server != token)
		pfree(server);
}

/* simhash_tokens(text, cjk): the tokens the default tokenizer sees */
Datum
simhash_text_tokens(PG_FUNCTION_ARGS)
{
	text	   *doc = PG_GETARG_TEXT_PP(0);
	SimhashCjkMode cjk = parse_cjk(PG_GETARG_TEXT_PP(1));
	TokenArrayBuilder tb;
	const char *utf8;
	size_t		len;
	Size		overhead = ARR_OVERHEAD_NONULLS(1);
	uint64		total;
	ArrayType  *result;

	utf8 = text_as_utf8(doc, &len);

	/* first pass: how large is the array? */
	tb.data = NULL;
	tb.size = 0;
	tb.ntokens = 0;
	SimhashTokenize(utf8, len, cjk, collect_token, &tb);
	if (tb.ntokens == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(TEXTOID));
	total = overhead + tb.size;
	if (total > MaxAllocSize || tb.ntokens > (int64) MaxArraySize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the tokens of a text of %zu bytes do not fit in an array",
						(size_t) VARSIZE_ANY_EXHDR(doc)),
				 errdetail("The %lld tokens would take %llu bytes as a text[]; "
						   "an array takes at most %zu bytes and %zu elements.",
						   (long long) tb.ntokens, (unsigned long long) total,
						   (size_t) MaxAllocSize, (size_t) MaxArraySize)));

	/* second pass: the tokens, in place */
	result = (ArrayType *) palloc0(total);
	SET_VARSIZE(result, total);
	result->ndim = 1;
	result->dataoffset = 0;
	result->elemtype = TEXTOID;
	ARR_DIMS(result)[0] = (int) tb.ntokens;
	ARR_LBOUND(result)[0] = 1;
	tb.data = (char *) result + overhead;
	tb.size = 0;
	tb.ntokens = 0;
	SimhashTokenize(utf8, len, cjk, collect_token, &tb);
	Assert(tb.data == (char *) result + total);
	PG_RETURN_ARRAYTYPE_P(result);
}

/* Hash one text element of a feature array */
static uint64
text_datum_hash(Datum d)
{
	text	   *t = DatumGetTextPP(d);
	const char *utf8;
	size_t		len;

	utf8 = text_as_utf8(t, &len);
	return SimhashFeatureHash(utf8, len);
}

/* simhash(text[]): every non-NULL element is a feature of weight 1 */
Datum
simhash_text_array(PG_FUNCTION_ARGS)
{
	ArrayType  *features = PG_GETARG_ARRAYTYPE_P(0);
	Datum	   *elems;
	bool	   *nulls;
	int			n,
				i;
	SimhashVoter voter;

	deconstruct_array(features, TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, &n);
	SimhashVoterInit(&voter);
	for (i = 0; i < n; i++)
	{
		if (!nulls[i])
			SimhashVoterAdd(&voter, text_datum_hash(elems[i]));
	}
	PG_RETURN_SIMHASH(SimhashVoterResult(&voter));
}

/* simhash(text[], real[]): element i is a feature of weight weights[i] */
Datum
simhash_text_array_weighted(PG_FUNCTION_ARGS)
{
	ArrayType  *features = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *weights = PG_GETARG_ARRAYTYPE_P(1);
	Datum	   *felems,
			   *welems;
	bool	   *fnulls,
			   *wnulls;
	int			nf,
				nw,
				i;
	SimhashVoter voter;

	deconstruct_array(features, TEXTOID, -1, false, TYPALIGN_INT,
					  &felems, &fnulls, &nf);
	deconstruct_array(weights, FLOAT4OID, sizeof(float4), true,
					  TYPALIGN_INT, &welems, &wnulls, &nw);
	if (nf != nw)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("feature and weight arrays must have the same length"),
				 errdetail("There are %d features and %d weights.", nf, nw)));

	SimhashVoterInit(&voter);
	for (i = 0; i < nf; i++)
	{
		float4		w;

		if (fnulls[i] || wnulls[i])
			continue;
		w = DatumGetFloat4(welems[i]);
		if (isnan(w) || isinf(w))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("weight of feature \"%s\" is not a finite number: %s",
							TextDatumGetCString(felems[i]),
							isnan(w) ? "NaN" : (w > 0 ? "Infinity" : "-Infinity"))));
		SimhashVoterAddWeighted(&voter, text_datum_hash(felems[i]), w);
	}
	PG_RETURN_SIMHASH(SimhashVoterResult(&voter));
}

/* simhash(tsvector): lexemes are features, weighted by their positions */
Datum
simhash_tsvector(PG_FUNCTION_ARGS)
{
	TSVector	tsv = PG_GETARG_TSVECTOR(0);
	WordEntry  *entries = ARRPTR(tsv);
	char	   *lexemes = STRPTR(tsv);
	SimhashVoter voter;
	int			i;

	SimhashVoterInit(&voter);
	for (i = 0; i < tsv->size; i++)
	{
		WordEntry  *we = &entries[i];
		const char *utf8;
		size_t		len;
		uint64		hash;
		int			npos = we->haspos ? POSDATALEN(tsv, we) : 1;

		utf8 = SimhashStringAsUtf8(lexemes + we->pos, we->len, &len);
		hash = SimhashFeatureHash(utf8, len);
		if (npos == 1)
			SimhashVoterAdd(&voter, hash);
		else
			SimhashVoterAddWeighted(&voter, hash, (double) npos);
	}
	PG_RETURN_SIMHASH(SimhashVoterResult(&voter));
}

/* simhash_chargrams(text, n, weighting): character n-gram features */
Datum
simhash_text_chargrams(PG_FUNCTION_ARGS)
{
	text	   *doc = PG_GETARG_TEXT_PP(0);
	int32		n = PG_GETARG_INT32(1);
	SimhashConfig config;

	if (n < SIMHASH_MIN_CHARGRAM || n > SIMHASH_MAX_CHARGRAM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n-gram size %d is out of range", n),
				 errdetail("The size must be between %d and %d.",
						   SIMHASH_MIN_CHARGRAM, SIMHASH_MAX_CHARGRAM)));
	config.nsizes = 1;
	config.sizes[0] = 1;
	config.chargram = n;
	config.weighting = parse_weighting(PG_GETARG_TEXT_PP(2));
	config.cjk = SIMHASH_CJK_UNIGRAM;
	config.tokens = SIMHASH_TOKENS_WORDS;
	PG_RETURN_SIMHASH(simhash_of_text_arg(doc, &config, NULL));
}

/* The distinct feature hashes of a text argument, sorted */
uint64 *
SimhashFeatureSetOfText(text *doc, const SimhashConfig *config,
						size_t *nfeatures)
{
	size_t		len;
	const char *utf8 = text_as_utf8(doc, &len);

	return SimhashFeatureSet(utf8, len, config, nfeatures);
}

/*
 * simhash_jaccard(a, b, shingles, cjk, tokens): |A & B| / |A | B| of the two
 * texts' sets of distinct features.  Two texts without features have equal (empty)
 * sets, so their similarity is 1.
 */
Datum
simhash_text_jaccard(PG_FUNCTION_ARGS)
{
	text	   *a = PG_GETARG_TEXT_PP(0);
	text	   *b = PG_GETARG_TEXT_PP(1);
	SimhashConfig config;
	uint64	   *fa,
			   *fb;
	size_t		na,
				nb,
				i = 0,
				j = 0,
				common = 0;

	SimhashConfigFromArgs(fcinfo, 2, -1, 3, 4, &config);
	fa = SimhashFeatureSetOfText(a, &config, &na);
	fb = SimhashFeatureSetOfText(b, &config, &nb);
	if (na + nb == 0)
		PG_RETURN_FLOAT8(1.0);

	/* both sets are sorted: merge */
	while (i < na && j < nb)
	{
		if (fa[i] < fb[j])
			i++;
		else if (fa[i] > fb[j])
			j++;
		else
		{
			common++;
			i++;
			j++;
		}
	}
	pfree(fa);
	pfree(fb);
	PG_RETURN_FLOAT8((double) common / (double) (na + nb - common));
}

/* The distinct non-NULL elements of a bigint[], sorted */
static int64 *
distinct_int8s(ArrayType *a, int *n)
{
	Datum	   *elems;
	bool	   *nulls;
	int			count,
				i,
				out = 0;
	int64	   *v;

	deconstruct_array(a, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
					  TYPALIGN_DOUBLE, &elems, &nulls, &count);
	v = palloc(Max(count, 1) * sizeof(int64));
	for (i = 0; i < count; i++)
		if (!nulls[i])
			v[out++] = DatumGetInt64(elems[i]);
	qsort(v, out, sizeof(int64), SimhashInt64Cmp);
	count = out;
	out = 0;
	for (i = 0; i < count; i++)
		if (out == 0 || v[out - 1] != v[i])
			v[out++] = v[i];
	*n = out;
	return v;
}

/*
 * simhash_sentences(text, k, skip): the hashes of the text's k longest
 * sentences whose hashes are not in skip, sorted (sentences.c,
 * docs/fingerprint_format.md).  Fewer when the text has fewer sentences;
 * empty for a text without tokens.  A database not yet updated to 1.6
 * calls it without skip.
 */
Datum
simhash_sentences(PG_FUNCTION_ARGS)
{
	text	   *doc = PG_GETARG_TEXT_PP(0);
	int32		k = PG_GETARG_INT32(1);
	size_t		len;
	const char *utf8;
	int64	   *sig;
	int64	   *skip = NULL;
	int			nskip = 0;
	Datum	   *elems;
	int			n,
				i;

	if (k < 1 || k > SIMHASH_MAX_SENTENCES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be between 1 and %d, not %d", SIMHASH_MAX_SENTENCES, k)));
	if (PG_NARGS() > 2)
		skip = distinct_int8s(PG_GETARG_ARRAYTYPE_P(2), &nskip);
	utf8 = text_as_utf8(doc, &len);
	sig = palloc(k * sizeof(int64));
	n = SimhashSentenceSignature(utf8, len, k, skip, nskip, sig);
	elems = palloc(Max(n, 1) * sizeof(Datum));
	for (i = 0; i < n; i++)
		elems[i] = Int64GetDatum(sig[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, n, INT8OID, sizeof(int64),
										  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/*
 * simhash_sentence_overlap(a, b): how many sentence hashes two signatures
 * share (distinct values; NULL elements ignored)
 */
Datum
simhash_sentence_overlap(PG_FUNCTION_ARGS)
{
	int			na,
				nb,
				i = 0,
				j = 0,
				common = 0;
	int64	   *a = distinct_int8s(PG_GETARG_ARRAYTYPE_P(0), &na);
	int64	   *b = distinct_int8s(PG_GETARG_ARRAYTYPE_P(1), &nb);

	while (i < na && j < nb)
	{
		if (a[i] < b[j])
			i++;
		else if (a[i] > b[j])
			j++;
		else
		{
			common++;
			i++;
			j++;
		}
	}
	PG_RETURN_INT32(common);
}
