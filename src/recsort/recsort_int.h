/*-------------------------------------------------------------------------
 *
 * recsort_int.h
 *		What runsort.c shares with recstore.c and groupsort.c: the radix
 *		sort of records and their temporary files.  Not for other files:
 *		they use RunSort, RecStore and GroupSort (recsort.h).
 *
 * IDENTIFICATION
 *	  src/recsort/recsort_int.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PERMSORT_INT_H
#define PERMSORT_INT_H

#include "storage/buffile.h"

#include "recsort/recsort.h"

/* The fewest records a buffer holds, however small the budget */
#define RECSORT_MIN_RECORDS	1024

extern KeyTid *RecSortRadix(KeyTid *a, KeyTid *tmp, int64 n,
								int top_bits, int known_bits);
extern void RecSortWrite(BufFile *file, const KeyTid *recs, int64 n);
extern void RecSortRead(BufFile *file, KeyTid *recs, int64 n,
							int64 total, int64 first);
extern void RecSortRewind(BufFile *file);
extern int64 RecSortRecordsFor(int64 budget_bytes);

#endif							/* PERMSORT_INT_H */
