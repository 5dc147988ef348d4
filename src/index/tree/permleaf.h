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
 * bytes as the page needs.  permleaf.c encodes, decodes, appends and
 * searches; README.perm ("Pages") describes the format and why.  The
 * inline readers below serve the loops that test every entry of a leaf
 * against a query (permdescend.c, permcost.c, the search within a leaf).
 *
 * IDENTIFICATION
 *	  src/index/tree/permleaf.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SIMHASH_PERMLEAF_H
#define SIMHASH_PERMLEAF_H

#include "index/perm.h"

/*
 * What a leaf adds to each stored key (permleaf.c): its low key, on pages
 * written in the offset format (PERM_KEY_OFFSET); on pages of indexes built
 * before it, the bits of the low key above the stored bytes.
 */
static inline uint64
PermLeafKeyBase(PermPageOpaque opaque)
{
	if (opaque->flags & PERM_KEY_OFFSET)
		return opaque->lokey;
	if (opaque->key_bytes >= 8)
		return 0;
	return opaque->lokey & ~((UINT64CONST(1) << (8 * opaque->key_bytes)) - 1);
}

/*
 * Reading a leaf's keys without their TIDs, for the loops that test every
 * entry against a query (permdescend.c): a key is one unaligned 8-byte load,
 * masked to the page's key bytes, plus the page's PermLeafKeyBase()
 * (permleaf.c describes the format).  The load may read past
 * the last entry: the special space follows the entries.  Little-endian
 * only; elsewhere it decodes byte by byte as permleaf.c does.
 */
typedef struct PermLeafKeys
{
	const unsigned char *entries;
	int			entry_size;
	uint64		mask;			/* the stored key bytes */
	uint64		base;			/* added to them: PermLeafKeyBase() */
	int			extra_at;		/* KeyTid.extra's offset in an entry */
	bool		has_extra;		/* entries keep KeyTid.extra (2 bytes) */
} PermLeafKeys;

static inline void
PermLeafKeysInit(PermLeafKeys *lk, Page page)
{
	PermPageOpaque opaque = (PermPageOpaque) PageGetSpecialPointer(page);
	int			kb = opaque->key_bytes;

	lk->entries = (const unsigned char *) PermPageEntries(page);
	lk->extra_at = kb + opaque->block_bytes + opaque->off_bytes;
	lk->entry_size = lk->extra_at + opaque->extra_bytes;
	lk->has_extra = opaque->extra_bytes > 0;
	lk->mask = kb >= 8 ? PG_UINT64_MAX : (UINT64CONST(1) << (8 * kb)) - 1;
	lk->base = PermLeafKeyBase(opaque);
}

/* Entry i's KeyTid.extra (0 on leaves that keep none), little-endian */
static inline uint16
PermLeafExtraAt(const PermLeafKeys *lk, int i)
{
	const unsigned char *p;

	if (!lk->has_extra)
		return 0;
	p = lk->entries + (size_t) i * lk->entry_size + lk->extra_at;
	return (uint16) (p[0] | (p[1] << 8));
}

static inline uint64
PermLeafKeyAt(const PermLeafKeys *lk, int i)
{
	const unsigned char *p = lk->entries + (size_t) i * lk->entry_size;
	uint64		v;

#ifdef WORDS_BIGENDIAN
	int			b;

	v = 0;
	for (b = 7; b >= 0; b--)
		v = (v << 8) | p[b];
#else
	memcpy(&v, p, sizeof(v));
#endif
	return lk->base + (v & lk->mask);
}

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
extern int	PermLeafRemove(Page page, bool (*dead) (ItemPointer tid, void *arg),
						   void *arg, int *kept);
extern int	PermCompareKeysQsort(const void *a, const void *b);

#endif							/* SIMHASH_PERMLEAF_H */
