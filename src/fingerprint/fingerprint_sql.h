/*-------------------------------------------------------------------------
 *
 * fingerprint_sql.h
 *		Argument handling shared by the SQL functions that fingerprint text
 *		(fingerprint_sql.c), compute MinHash signatures (minhash.c) and
 *		count sentences (boilerplate.c).
 *
 * IDENTIFICATION
 *	  src/fingerprint/fingerprint_sql.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SIMHASH_FINGERPRINT_SQL_H
#define SIMHASH_FINGERPRINT_SQL_H

#include "fmgr.h"

#include "fingerprint/fingerprint.h"

extern void SimhashConfigFromArgs(FunctionCallInfo fcinfo, int shingles_arg,
								  int weighting_arg, int cjk_arg,
								  int tokens_arg, SimhashConfig *config);
extern const char *SimhashStringAsUtf8(const char *s, int len,
									   size_t *utf8_len);
extern uint64 *SimhashFeatureSetOfText(text *doc, const SimhashConfig *config,
									   size_t *nfeatures);

#endif							/* SIMHASH_FINGERPRINT_SQL_H */
