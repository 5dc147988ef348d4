/*-------------------------------------------------------------------------
 *
 * minhash.c
 *		MinHash signatures of texts, their Jaccard estimate, and band keys
 *		for candidate search with a GIN index.
 *
 * A simhash fingerprint tracks the cosine of weighted feature vectors and
 * misses many pairs whose feature sets overlap by 80%; MinHash estimates the
 * Jaccard similarity of the sets themselves, and its band keys turn "J above
 * a threshold" into "shares a key", which a GIN index on bigint[] answers
 * with &&.
 *
 * The signature is a stored format, frozen like the fingerprint:
 *
 *	- F = the set of distinct feature hashes of the text, as simhash_jaccard()
 *	  sees it (shingles of the given sizes, default 3, of words or, with
 *	  tokens = chars, of characters; fingerprint.c).
 *	- Slot i (0-based) of an n-slot signature is the minimum, as unsigned
 *	  64-bit integers, of mix(f XOR s_i) over f in F, where
 *	  s_i = mix((i + 1) * 0x9E3779B97F4A7C15) and mix is MurmurHash3's 64-bit
 *	  finaliser (a bijection, so each slot ranks F by its own permutation).
 *	  It is returned as bigint with the same bits.  An empty F gives every
 *	  slot all ones (bigint -1).
 *	- Band b (0-based) of r = n / bands rows is the key
 *	  XXH3-64(slots b*r .. b*r+r-1 as little-endian 8-byte words, seed b), so
 *	  equal rows in different bands give different keys.
 *
 * IDENTIFICATION
 *	  src/fingerprint/minhash.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Signatures and band keys are stored data: see fingerprint.c */
#if !defined(XXH_VERSION_NUMBER) || XXH_VERSION_NUMBER < 800
#error "simhash needs xxHash 0.8.0 or later (libxxhash-dev): XXH3 output, which fingerprints store, is stable only from 0.8.0"
#endif

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "fingerprint/fingerprint_sql.h"

PG_FUNCTION_INFO_V1(minhash_text);
PG_FUNCTION_INFO_V1(minhash_jaccard);
PG_FUNCTION_INFO_V1(minhash_bands);

/* Largest signature: 4096 slots is 32 kB, more than any practical need */
#define MINHASH_MAX_SLOTS	4096

/* MurmurHash3's fmix64: a bijection that mixes every input bit into all */
static inline uint64
minhash_mix(uint64 x)
{
	x ^= x >> 33;
	x *= UINT64CONST(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64CONST(0xc4ceb9fe1a85ec53);
	x ^= x >> 33;
	return x;
}

/* minhash(doc, n, shingles, cjk, tokens) */
Datum
minhash_text(PG_FUNCTION_ARGS)
{
	text	   *doc = PG_GETARG_TEXT_PP(0);
	int32		n = PG_GETARG_INT32(1);
	SimhashConfig config;
	uint64	   *features;
	uint64	   *seeds;
	uint64	   *slots;
	Datum	   *elems;
	size_t		nfeatures,
				f;
	int			i;

	if (n < 1 || n > MINHASH_MAX_SLOTS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("MinHash signature size %d is out of range", n),
				 errdetail("The size must be between 1 and %d.",
						   MINHASH_MAX_SLOTS)));
	SimhashConfigFromArgs(fcinfo, 2, -1, 3, 4, &config);
	features = SimhashFeatureSetOfText(doc, &config, &nfeatures);

	seeds = palloc(n * sizeof(uint64));
	slots = palloc(n * sizeof(uint64));
	for (i = 0; i < n; i++)
	{
		seeds[i] = minhash_mix((uint64) (i + 1) * UINT64CONST(0x9E3779B97F4A7C15));
		slots[i] = PG_UINT64_MAX;
	}

	/* feature-major: the inner loop over slots has no dependencies */
	for (f = 0; f < nfeatures; f++)
	{
		uint64		h = features[f];

		/* a text of many megabytes takes seconds: stay cancellable */
		if ((f & 4095) == 4095)
			CHECK_FOR_INTERRUPTS();

		for (i = 0; i < n; i++)
		{
			uint64		v = minhash_mix(h ^ seeds[i]);

			slots[i] = Min(slots[i], v);
		}
	}

	elems = palloc(n * sizeof(Datum));
	for (i = 0; i < n; i++)
		elems[i] = Int64GetDatum((int64) slots[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, n, INT8OID, sizeof(int64),
										  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/*
 * The slots of a signature argument.  A signature is a one-dimensional
 * bigint array without NULLs; anything else is an error naming the argument.
 */
static int64 *
signature_slots(ArrayType *arr, const char *argname, int *n)
{
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("MinHash signature \"%s\" must be a one-dimensional array",
						argname)));
	if (array_contains_nulls(arr))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("MinHash signature \"%s\" must not contain NULLs",
						argname)));
	*n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
	if (*n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("MinHash signature \"%s\" is empty", argname)));
	/* ARR_DATA_PTR, spelt out: its ?: mixes signedness under -Wextra */
	if (ARR_HASNULL(arr))
		return (int64 *) ((char *) arr + arr->dataoffset);
	return (int64 *) ((char *) arr + ARR_OVERHEAD_NONULLS(ARR_NDIM(arr)));
}

/* minhash_jaccard(a, b): the share of slots where a and b agree */
Datum
minhash_jaccard(PG_FUNCTION_ARGS)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *b = PG_GETARG_ARRAYTYPE_P(1);
	int64	   *sa,
			   *sb;
	int			na,
				nb,
				i,
				equal = 0;

	sa = signature_slots(a, "a", &na);
	sb = signature_slots(b, "b", &nb);
	if (na != nb)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("MinHash signatures of different sizes cannot be compared"),
				 errdetail("Signature a has %d slots, signature b has %d.",
						   na, nb)));
	for (i = 0; i < na; i++)
		equal += (sa[i] == sb[i]);
	PG_RETURN_FLOAT8((double) equal / (double) na);
}

/* minhash_bands(signature, bands): one key per band of rows */
Datum
minhash_bands(PG_FUNCTION_ARGS)
{
	ArrayType  *sig = PG_GETARG_ARRAYTYPE_P(0);
	int32		bands = PG_GETARG_INT32(1);
	int64	   *slots;
	Datum	   *keys;
	int			n,
				rows,
				b;

	slots = signature_slots(sig, "signature", &n);
	if (bands < 1 || bands > n || n % bands != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot split a MinHash signature of %d slots into %d bands",
						n, bands),
				 errhint("The number of bands must divide the signature size.")));
	rows = n / bands;

	keys = palloc(bands * sizeof(Datum));
	for (b = 0; b < bands; b++)
	{
#ifdef WORDS_BIGENDIAN
		unsigned char *buf = palloc(8 * rows);
		int			r,
					k;

		for (r = 0; r < rows; r++)
			for (k = 0; k < 8; k++)
				buf[8 * r + k] = (unsigned char) ((uint64) slots[b * rows + r] >> (8 * k));
		keys[b] = Int64GetDatum((int64) XXH3_64bits_withSeed(buf, 8 * rows, b));
		pfree(buf);
#else
		keys[b] = Int64GetDatum((int64) XXH3_64bits_withSeed(slots + b * rows,
															 8 * rows, b));
#endif
	}
	PG_RETURN_ARRAYTYPE_P(construct_array(keys, bands, INT8OID, sizeof(int64),
										  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}
