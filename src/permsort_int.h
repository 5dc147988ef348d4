/*-------------------------------------------------------------------------
 *
 * permsort_int.h
 *		What permsort.c shares with permstore.c and permgroup.c: the radix
 *		sort of records and their temporary files.  Not for other files:
 *		they use PermRunSort, PermRecStore and PermGroupSort (perm.h).
 *
 * IDENTIFICATION
 *	  src/permsort_int.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PERMSORT_INT_H
#define PERMSORT_INT_H

#include "storage/buffile.h"

#include "perm.h"

/* The fewest records a buffer holds, however small the budget */
#define PERM_SORT_MIN_RECORDS	1024

extern PermKey *PermSortRecords(PermKey *a, PermKey *tmp, int64 n,
								int top_bits, int known_bits);
extern void PermWriteRecords(BufFile *file, const PermKey *recs, int64 n);
extern void PermReadRecords(BufFile *file, PermKey *recs, int64 n,
							int64 total, int64 first);
extern void PermRewindFile(BufFile *file);
extern int64 PermRecordsFor(int64 budget_bytes);

#endif							/* PERMSORT_INT_H */
