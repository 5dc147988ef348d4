/*-------------------------------------------------------------------------
 *
 * permleaf.h
 *		simhash_perm: the compact leaf format, whole in one place.
 *
 * A leaf holds its entries packed after the page header, in a format of its
 * own given by the special space (key_bytes, block_bytes, off_bytes; the
 * flag PERM_KEY_OFFSET): each entry is its key's offset from the leaf's
 * low key (or, on leaves of indexes built by 1.3 and earlier, the key's low
 * bytes), then the heap block number and offset, little-endian, in as few
 * bytes as the page needs.  permleaf.c encodes, decodes, appends,
 * searches and probes a leaf against a query, so that the format's readers
 * stay in one file; README.perm ("Pages") describes the format and why.
 *
 * IDENTIFICATION
 *	  src/index/tree/permleaf.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SIMHASH_PERMLEAF_H
#define SIMHASH_PERMLEAF_H

#include "index/perm.h"

/* What one leaf's probe found out (PermLeafProbe) */
typedef struct PermLeafProbeResult
{
	bool		past_hi;		/* the sorted part went beyond the range */
	bool		skip;			/* a far key fills the rest of the page */
	uint64		last_key;		/* the last key read from the sorted part */
	int			reported;		/* entries passed to the callback */
} PermLeafProbeResult;

extern bool perm_write_old_leaf_format;
extern int	PermLeafEntrySize(Page page);
extern void PermReadLeafEntry(Page page, int i, KeyTid *out);
extern int	PermLeafFormatSize(uint64 lo, uint64 hi, BlockNumber maxblock,
							   OffsetNumber maxoff, int extra_bytes);
extern bool PermLeafSetEntries(Page page, const KeyTid *keys, int n,
							   int nsorted);
extern int	PermLeafSortedEntries(Page page, KeyTid *out);
extern int	PermLeafMergedEntries(Page page, const KeyTid *key, KeyTid *out);
extern bool PermLeafHasRoom(Page page, const KeyTid *key);
extern bool PermLeafAppendIsPlain(Page page, const KeyTid *key);
extern int	PermLeafEncodeEntry(Page page, const KeyTid *key, char *out);
extern bool PermLeafAppend(Page page, const KeyTid *key, int *slot);
extern int	PermLeafLowerBound(Page page, const KeyTid *key);
extern void PermLeafProbe(Page page, const KeyTid *from, uint64 lo, uint64 hi,
						  uint64 query_key, uint16 query_extra,
						  int max_distance, PermMatchCallback callback,
						  void *arg, PermLeafProbeResult *result);
extern int	PermLeafReadKeys(Page page, uint64 *keys);
extern int	PermLeafRemove(Page page, bool (*dead) (ItemPointer tid, void *arg),
						   void *arg, int *kept);
extern int	PermCompareKeysQsort(const void *a, const void *b);

#endif							/* SIMHASH_PERMLEAF_H */
