/*-------------------------------------------------------------------------
 *
 * fingerprint_sql.h
 *		Argument handling shared by the SQL functions that fingerprint text
 *		(fingerprint_sql.c) and compute MinHash signatures (minhash.c).
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
extern uint64 *SimhashFeatureSetOfText(text *doc, const SimhashConfig *config,
									   size_t *nfeatures);

#endif							/* SIMHASH_FINGERPRINT_SQL_H */
