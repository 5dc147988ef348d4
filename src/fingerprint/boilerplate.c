/*-------------------------------------------------------------------------
 *
 * boilerplate.c
 *		simhash_frequent_sentences(body, min_share): the sentences that
 *		occur in many documents of a column (templates, footers, legal
 *		notices), which simhash_sentences(body, k, skip => ...) passes over.
 *
 * On templated pages the longest sentences are often the template's, so
 * two unrelated pages of one site share them and the top-k longest-sentence
 * signature (sentences.c) pairs them.  A sentence that occurs in a share
 * of the documents no copy explains is boilerplate: counting each
 * sentence's document frequency over a column finds it.
 *
 * The count is Manku and Motwani's lossy counting ("Approximate Frequency
 * Counts over Data Streams", VLDB 2002), so that memory stays bounded
 * however many documents and distinct sentences the column holds.  With s
 * = min_share and e = s / 10, the documents are read in buckets of w =
 * ceil(1 / e); b is the number of the current bucket (from 1).  Each
 * document counts each of its distinct sentences once: an entry (hash, f,
 * delta) gets f + 1, or is made with f = 1, delta = b - 1.  When a bucket
 * ends, the entries with f + delta <= b are dropped.  After N documents,
 * the sentences with f >= (s - e) N, and in at least two documents (one
 * document makes no pair), are returned, sorted.
 *
 * Why (the paper's lemmas, which hold unchanged when a document holds
 * several items, each counted once): an entry made in bucket b' missed at
 * most delta = b' - 1 <= e N' documents before it, N' those read then (an
 * entry dropped at the end of a bucket c had f + delta <= c, so at most c
 * occurrences up to there, and c <= e N at the end of bucket c).  So f
 * <= true count <= f + e N: every sentence in at least s N documents has f
 * >= (s - e) N and is returned, and every sentence returned is in at least
 * (s - e) N = 0.9 s N documents.  Memory: the entries made in the current
 * bucket (at most w documents' sentences) and those that survived earlier
 * buckets, which the paper bounds by (1 / e) log(e N) times the sentences
 * a document holds.
 *
 * The state lives in the aggregate's memory context; the aggregate has no
 * combine function, so a parallel plan runs it in the leader.
 *
 * IDENTIFICATION
 *	  src/fingerprint/boilerplate.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "fingerprint/fingerprint.h"
#include "fingerprint/fingerprint_sql.h"

PG_FUNCTION_INFO_V1(simhash_frequent_sentences_step);
PG_FUNCTION_INFO_V1(simhash_frequent_sentences_final);

/* One sentence's entry: its count since it entered, and what it missed */
typedef struct SentenceCount
{
	uint64		hash;
	int64		f;
	int64		delta;
	char		status;			/* simplehash's */
} SentenceCount;

#define SH_PREFIX		sentcount
#define SH_ELEMENT_TYPE	SentenceCount
#define SH_KEY_TYPE		uint64
#define SH_KEY			hash
#define SH_HASH_KEY(tb, key)	((uint32) (key))	/* XXH3 output: uniform */
#define SH_EQUAL(tb, a, b)		((a) == (b))
#define SH_SCOPE		static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

typedef struct FrequentState
{
	float8		share;			/* s */
	int64		width;			/* w = ceil(1 / e), e = s / 10 */
	int64		ndocs;			/* N */
	int64		bucket;			/* b */
	sentcount_hash *counts;
} FrequentState;

/* Drop the entries that cannot reach the threshold: f + delta <= b */
static void
end_bucket(FrequentState *st)
{
	sentcount_iterator it;
	SentenceCount *entry;

	sentcount_start_iterate(st->counts, &it);
	while ((entry = sentcount_iterate(st->counts, &it)) != NULL)
		if (entry->f + entry->delta <= st->bucket)
			sentcount_delete_item(st->counts, entry);
}

/*
 * simhash_frequent_sentences(body, min_share), the transition: count the
 * document's distinct sentences.  NULL documents are not counted.
 */
Datum
simhash_frequent_sentences_step(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	MemoryContext oldcxt;
	FrequentState *st;
	text	   *doc;
	const char *utf8;
	size_t		len;
	int64	   *hashes;
	int			n,
				i;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("simhash_frequent_sentences_step called outside an aggregate")));

	if (PG_ARGISNULL(0))
	{
		float8		share;

		if (PG_ARGISNULL(2))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("min_share of simhash_frequent_sentences must not be NULL")));
		share = PG_GETARG_FLOAT8(2);
		if (!(share > 0.0 && share <= 1.0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("min_share must be greater than 0 and at most 1, not %g", share)));
		st = MemoryContextAllocZero(aggcxt, sizeof(FrequentState));
		st->share = share;
		st->width = (int64) ceil(10.0 / share);
		st->bucket = 1;
		st->counts = sentcount_create(aggcxt, 1024, NULL);
	}
	else
		st = (FrequentState *) PG_GETARG_POINTER(0);

	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(st);

	doc = PG_GETARG_TEXT_PP(1);
	utf8 = SimhashStringAsUtf8(VARDATA_ANY(doc), VARSIZE_ANY_EXHDR(doc), &len);
	hashes = SimhashSentenceHashes(utf8, len, &n);
	oldcxt = MemoryContextSwitchTo(aggcxt);
	for (i = 0; i < n; i++)
	{
		bool		found;
		SentenceCount *entry = sentcount_insert(st->counts, (uint64) hashes[i], &found);

		if (found)
			entry->f++;
		else
		{
			entry->f = 1;
			entry->delta = st->bucket - 1;
		}
	}
	MemoryContextSwitchTo(oldcxt);
	pfree(hashes);
	if ((Pointer) doc != PG_GETARG_POINTER(1))
		pfree(doc);

	st->ndocs++;
	if (st->ndocs % st->width == 0)
	{
		end_bucket(st);
		st->bucket++;
	}
	PG_RETURN_POINTER(st);
}

/*
 * The final function: the hashes of the sentences with f >= (s - e) N and
 * in at least two documents, sorted; empty without documents.  It does not
 * change the state (FINALFUNC_MODIFY = READ_ONLY).
 */
Datum
simhash_frequent_sentences_final(PG_FUNCTION_ARGS)
{
	FrequentState *st;
	sentcount_iterator it;
	SentenceCount *entry;
	int64	   *out;
	Datum	   *elems;
	double		threshold;
	int			n = 0,
				i;

	if (PG_ARGISNULL(0))
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(INT8OID));
	st = (FrequentState *) PG_GETARG_POINTER(0);
	/* (s - e) N, rounded up: f is a whole number of documents */
	threshold = Max(2.0, ceil(0.9 * st->share * (double) st->ndocs - 1e-9));

	out = palloc(Max(st->counts->members, 1) * sizeof(int64));
	sentcount_start_iterate(st->counts, &it);
	while ((entry = sentcount_iterate(st->counts, &it)) != NULL)
		if ((double) entry->f >= threshold)
			out[n++] = (int64) entry->hash;
	qsort(out, n, sizeof(int64), SimhashInt64Cmp);
	elems = palloc(Max(n, 1) * sizeof(Datum));
	for (i = 0; i < n; i++)
		elems[i] = Int64GetDatum(out[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, n, INT8OID, sizeof(int64),
										  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}
