/*-------------------------------------------------------------------------
 *
 * permleaf.c
 *		simhash_perm: the leaf page format.
 *
 * A leaf holds (permuted key, heap TID) entries in a packed array, each
 * entry written in the page's own compact format:
 *
 *	- key: its offset from the leaf's low key, in key_bytes bytes.  A leaf
 *	  covers the key range from its low key (lokey, in the special space) to
 *	  its high key, so an offset needs no more bytes than the range's width,
 *	  hikey - lokey.  In a table of a hundred million rows a leaf spans about
 *	  2^47 keys: six bytes.  A leaf inside a run of one identical fingerprint
 *	  stores no key at all.  Pages in this format carry PERM_KEY_OFFSET.
 *	  Indexes built before it stored the key's low bytes, those below the
 *	  highest byte in which lokey and hikey differ, and took the bytes above
 *	  from lokey: one byte more whenever the range crosses a byte boundary,
 *	  which half the leaves of a hundred-million-row table do.  Such pages
 *	  are still read (leaf_key_base() gives each format's base, which a
 *	  stored key is added to) and take the new format when they are next
 *	  rewritten whole.
 *	- heap block number in block_bytes bytes (1 to 4) and offset in off_bytes
 *	  bytes (1 or 2): as many as the largest on the page needs.
 *	- KeyTid.extra in extra_bytes bytes: 2 in an index with leading
 *	  equality columns (16 more bits of the code), else none.  Fixed for
 *	  the index's life: a leaf takes it from the leaf it splits from, or
 *	  from the build.
 *
 * All multi-byte values are little-endian.  The format is chosen when the
 * entries are (re)written: by the build, a split, a tail merge or VACUUM.
 * An append whose TID needs wider fields rewrites the page in the wider
 * format first (or, if that no longer fits, the caller splits the page).
 * The key bytes never need widening: a key that belongs on a page lies in
 * its range.
 *
 * Entries [0, nsorted) are in key order; later ones are an unsorted tail of
 * recent appends, merged in every PERM_LEAF_TAIL_MAX appends (perm.h).
 * README.perm, "Pages", describes the format in full.
 *
 * IDENTIFICATION
 *	  src/index/tree/permleaf.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/bufpage.h"

#include "index/tree/permleaf.h"
#include "type/simhash.h"

/*
 * A leaf's tail, sorted by the order of the sorted part.  Insertion would
 * do for a short tail, but a tail of PERM_LEAF_TAIL_MAX (128) random keys
 * takes some four thousand moves that way.
 */
#define ST_SORT sort_tail
#define ST_ELEMENT_TYPE KeyTid
#define ST_COMPARE(a, b) PermCompareKeys(a, b)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* simhash.write_old_leaf_format (permhandler.c): for tests of older indexes */
bool		perm_write_old_leaf_format = false;

/*
 * What a leaf adds to each stored key: its low key, on pages
 * written in the offset format (PERM_KEY_OFFSET); on pages of indexes built
 * before it, the bits of the low key above the stored bytes.
 */
static inline uint64
leaf_key_base(PermPageOpaque opaque)
{
	if (opaque->flags & PERM_KEY_OFFSET)
		return opaque->lokey;
	if (opaque->key_bytes >= 8)
		return 0;
	return opaque->lokey & ~((UINT64CONST(1) << (8 * opaque->key_bytes)) - 1);
}

/*
 * Reading a leaf's keys without their TIDs, for the loops that test every
 * entry against a query (PermLeafProbe, the search within a leaf): a key
 * is one unaligned 8-byte load, masked to the page's key bytes, plus the
 * page's leaf_key_base() (the comment at the top describes the format).
 * The load may read past the last entry: the special space follows the
 * entries.  Little-endian only; elsewhere it decodes byte by byte as
 * load_le does.
 */
typedef struct LeafKeys
{
	const unsigned char *entries;
	int			entry_size;
	uint64		mask;			/* the stored key bytes */
	uint64		base;			/* added to them: leaf_key_base() */
	int			extra_at;		/* KeyTid.extra's offset in an entry */
	bool		has_extra;		/* entries keep KeyTid.extra (2 bytes) */
} LeafKeys;

static inline void
leaf_keys_init(LeafKeys *lk, Page page)
{
	PermPageOpaque opaque = (PermPageOpaque) PageGetSpecialPointer(page);
	int			kb = opaque->key_bytes;

	lk->entries = (const unsigned char *) PermPageEntries(page);
	lk->extra_at = kb + opaque->block_bytes + opaque->off_bytes;
	lk->entry_size = lk->extra_at + opaque->extra_bytes;
	lk->has_extra = opaque->extra_bytes > 0;
	lk->mask = kb >= 8 ? PG_UINT64_MAX : (UINT64CONST(1) << (8 * kb)) - 1;
	lk->base = leaf_key_base(opaque);
}

/* Entry i's KeyTid.extra (0 on leaves that keep none), little-endian */
static inline uint16
leaf_extra_at(const LeafKeys *lk, int i)
{
	const unsigned char *p;

	if (!lk->has_extra)
		return 0;
	p = lk->entries + (size_t) i * lk->entry_size + lk->extra_at;
	return (uint16) (p[0] | (p[1] << 8));
}

static inline uint64
leaf_key_at(const LeafKeys *lk, int i)
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

/*
 * Read an n-byte little-endian value.  Reads 8 bytes: every entry lies in
 * the entry area, which the special space (more than 8 bytes) follows, so
 * this stays inside the page; a fixed-size load compiles to one move.
 */
static inline uint64
load_le(const unsigned char *p, int n)
{
	uint64		v;

#ifdef WORDS_BIGENDIAN
	int			i;

	v = 0;
	for (i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
#else
	memcpy(&v, p, sizeof(v));
	return n == 8 ? v : v & ((UINT64CONST(1) << (8 * n)) - 1);
#endif
}

/* Write an n-byte little-endian value to a buffer with 8 bytes of room */
static inline void
store_le(unsigned char *p, uint64 v, int n)
{
#ifdef WORDS_BIGENDIAN
	int			i;

	for (i = 0; i < n; i++)
	{
		p[i] = (unsigned char) v;
		v >>= 8;
	}
#else
	(void) n;
	memcpy(p, &v, sizeof(v));
#endif
}

/* Bytes needed for a value (at least 1) */
static inline int
bytes_for(uint64 v)
{
	int			n = 1;

	while (n < 8 && (v >> (8 * n)) != 0)
		n++;
	return n;
}

/* The key range of a leaf: [lokey, hikey], +infinity on the rightmost */
static inline void
leaf_range(Page page, uint64 *lo, uint64 *hi)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);

	*lo = opaque->lokey;
	*hi = PermPageIsRightmost(page) ? PG_UINT64_MAX : opaque->hikey;
}

/*
 * Key bytes stored for a range: those of its width, hi - lo (in the old
 * format, those below the highest byte in which lo and hi differ)
 */
static inline int
key_bytes_for_range(uint64 lo, uint64 hi)
{
	if (lo == hi)
		return 0;
	return bytes_for(perm_write_old_leaf_format ? lo ^ hi : hi - lo);
}

/* Size of one entry in a page's format */
int
PermLeafEntrySize(Page page)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);

	return opaque->key_bytes + opaque->block_bytes + opaque->off_bytes +
		opaque->extra_bytes;
}

/* Entry i of a leaf, decoded */
void
PermReadLeafEntry(Page page, int i, KeyTid *out)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	int			kb = opaque->key_bytes;
	const unsigned char *p = (const unsigned char *) PermPageEntries(page) +
		(size_t) i * PermLeafEntrySize(page);

	out->key = leaf_key_base(opaque) + load_le(p, kb);
	p += kb;
	ItemPointerSet(&out->tid, (BlockNumber) load_le(p, opaque->block_bytes),
				   (OffsetNumber) load_le(p + opaque->block_bytes, opaque->off_bytes));
	p += opaque->block_bytes + opaque->off_bytes;
	out->extra = opaque->extra_bytes > 0 ?
		(uint16) load_le(p, opaque->extra_bytes) : 0;
}

/*
 * Encode an entry into out, which must have 8 bytes of room past the
 * entry; returns the entry's size.
 */
static inline int
encode_entry(unsigned char *out, const KeyTid *key, uint64 base, int kb,
			 int bb, int ob, int eb)
{
	store_le(out, key->key - base, kb);
	store_le(out + kb, ItemPointerGetBlockNumberNoCheck(&key->tid), bb);
	store_le(out + kb + bb, ItemPointerGetOffsetNumberNoCheck(&key->tid), ob);
	if (eb > 0)
		store_le(out + kb + bb + ob, key->extra, eb);
	return kb + bb + ob + eb;
}

/* Encode an entry at slot i in the page's format */
static void
write_leaf_entry(Page page, int i, const KeyTid *key)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	unsigned char tmp[32];
	int			esize = encode_entry(tmp, key, leaf_key_base(opaque),
									 opaque->key_bytes, opaque->block_bytes,
									 opaque->off_bytes, opaque->extra_bytes);

	memcpy(PermPageEntries(page) + (size_t) i * esize, tmp, esize);
}

/* Widths that hold every TID of keys[0..n-1] and one more, extra (or NULL) */
static void
tid_widths(const KeyTid *keys, int n, const KeyTid *extra, int *block_bytes,
		   int *off_bytes)
{
	BlockNumber maxblock = 0;
	OffsetNumber maxoff = 0;
	int			i;

	for (i = 0; i < n; i++)
	{
		maxblock = Max(maxblock, ItemPointerGetBlockNumberNoCheck(&keys[i].tid));
		maxoff = Max(maxoff, ItemPointerGetOffsetNumberNoCheck(&keys[i].tid));
	}
	if (extra)
	{
		maxblock = Max(maxblock, ItemPointerGetBlockNumberNoCheck(&extra->tid));
		maxoff = Max(maxoff, ItemPointerGetOffsetNumberNoCheck(&extra->tid));
	}
	*block_bytes = bytes_for(maxblock);
	*off_bytes = bytes_for(maxoff);
}

/*
 * Entry size for a leaf with key range [lo, hi] whose largest TID fields
 * are maxblock and maxoff, each entry keeping extra_bytes of KeyTid.extra;
 * the build uses it to fill pages.
 */
int
PermLeafFormatSize(uint64 lo, uint64 hi, BlockNumber maxblock,
				   OffsetNumber maxoff, int extra_bytes)
{
	return key_bytes_for_range(lo, hi) + bytes_for(maxblock) +
		bytes_for(maxoff) + extra_bytes;
}

/*
 * Write keys[0..n-1] as the page's entries, the first nsorted of them in
 * key order, in the format that the page's range (lokey, hikey and
 * rightlink must already be set) and these TIDs need, each keeping the
 * page's extra_bytes (set when the leaf was made).  Returns false,
 * changing nothing, if they do not fit.
 */
bool
PermLeafSetEntries(Page page, const KeyTid *keys, int n, int nsorted)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	uint64		lo,
				hi;
	int			kb,
				bb,
				ob,
				eb = opaque->extra_bytes,
				i;

	leaf_range(page, &lo, &hi);
	kb = key_bytes_for_range(lo, hi);
	tid_widths(keys, n, NULL, &bb, &ob);
	if ((size_t) n * (kb + bb + ob + eb) > PERM_PAGE_SPACE)
		return false;

	if (perm_write_old_leaf_format)
		opaque->flags &= ~PERM_KEY_OFFSET;
	else
		opaque->flags |= PERM_KEY_OFFSET;
	opaque->key_bytes = kb;
	opaque->block_bytes = bb;
	opaque->off_bytes = ob;
	{
		/* encode into a buffer with slack, then copy the exact bytes */
		unsigned char buf[PERM_PAGE_SPACE + 16];
		unsigned char *out = buf;
		uint64		base = leaf_key_base(opaque);

		for (i = 0; i < n; i++)
			out += encode_entry(out, &keys[i], base, kb, bb, ob, eb);
		memcpy(PermPageEntries(page), buf, out - buf);
	}
	opaque->nentries = n;
	opaque->nsorted = nsorted;
	((PageHeader) page)->pd_lower =
		(PermPageEntries(page) - (char *) page) + n * (kb + bb + ob + eb);
	return true;
}

/*
 * All entries of a leaf in page order, decoded; returns how many.  The
 * page's format is read once, not per entry as PermReadLeafEntry does:
 * inserts decode a whole leaf at every tail merge and split, and this loop
 * was a seventh of a bulk load's time.
 */
static int
read_all(Page page, KeyTid *out)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	int			n = opaque->nentries;
	int			kb = opaque->key_bytes;
	int			bb = opaque->block_bytes;
	int			ob = opaque->off_bytes;
	int			eb = opaque->extra_bytes;
	int			esize = kb + bb + ob + eb;
	uint64		base = leaf_key_base(opaque);
	const unsigned char *p = (const unsigned char *) PermPageEntries(page);
	int			i;

	for (i = 0; i < n; i++, p += esize)
	{
		out[i].key = base + (kb > 0 ? load_le(p, kb) : 0);
		ItemPointerSet(&out[i].tid, (BlockNumber) load_le(p + kb, bb),
					   (OffsetNumber) load_le(p + kb + bb, ob));
		out[i].extra = eb > 0 ? (uint16) load_le(p + kb + bb + ob, eb) : 0;
	}
	return n;
}

/*
 * Put keys[0..n) in key order, given that keys[0..nsorted) already are and
 * that the rest (an unsorted tail, at most PERM_LEAF_TAIL_MAX + 1 entries)
 * are not: the tail is sorted alone and merged in from the back, in time
 * linear in n, where sorting the whole would cost n log n compares.
 */
static void
merge_tail(KeyTid *keys, int nsorted, int n)
{
	KeyTid		tail[PERM_LEAF_TAIL_MAX + 1];
	int			nt = n - nsorted;
	int			a,
				b,
				k;

	Assert(nt >= 0 && nt <= PERM_LEAF_TAIL_MAX + 1);
	memcpy(tail, keys + nsorted, nt * sizeof(KeyTid));
	sort_tail(tail, nt);
	a = nsorted - 1;
	b = nt - 1;
	for (k = n - 1; b >= 0; k--)
	{
		if (a >= 0 && PermCompareKeys(&keys[a], &tail[b]) > 0)
			keys[k] = keys[a--];
		else
			keys[k] = tail[b--];
	}
}

/*
 * Merge a leaf's tail and key, one more entry, into its sorted part in the
 * page's format, which must hold key (the widths of its TID, and a page in
 * the offset format: the merge keeps the format, where PermLeafSetEntries
 * would convert an old page).  The tail is decoded and sorted; the sorted
 * part stays encoded and is copied in runs, each tail entry going where a
 * bisection of the encoded keys puts it.  A tail merge is due every
 * PERM_LEAF_TAIL_MAX appends to a leaf, and decoding, merging and encoding
 * the page's thousand-odd entries each time was a fifth of a bulk load's
 * time.  The page ends as PermLeafSetEntries would write it: every entry
 * sorted, in the same widths (those of its entries, which appends and
 * rewrites keep exact).
 */
static void
merge_encoded(Page page, const KeyTid *key)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	int			n = opaque->nentries;
	int			ns = opaque->nsorted;
	int			esize = PermLeafEntrySize(page);
	uint64		base = leaf_key_base(opaque);
	unsigned char *entries = (unsigned char *) PermPageEntries(page);
	KeyTid		tail[PERM_LEAF_TAIL_MAX + 1];
	unsigned char buf[PERM_PAGE_SPACE + 16];
	unsigned char *out = buf;
	LeafKeys lk;
	int			nt = 0,
				from = 0,
				i;

	Assert(n + 1 - ns <= PERM_LEAF_TAIL_MAX + 1);
	for (i = ns; i < n; i++)
		PermReadLeafEntry(page, i, &tail[nt++]);
	tail[nt++] = *key;
	merge_tail(tail, 0, nt);

	leaf_keys_init(&lk, page);
	for (i = 0; i < nt; i++)
	{
		/* the first slot from `from` on whose entry is above tail[i] */
		int			lo = from,
					hi = ns;

		while (lo < hi)
		{
			int			mid = lo + (hi - lo) / 2;
			uint64		k = leaf_key_at(&lk, mid);
			int			c;

			if (k != tail[i].key)
				c = k < tail[i].key ? -1 : 1;
			else
			{
				KeyTid		e;

				PermReadLeafEntry(page, mid, &e);
				c = ItemPointerCompare(&e.tid, &tail[i].tid);
			}
			if (c <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		memcpy(out, entries + (size_t) from * esize, (size_t) (lo - from) * esize);
		out += (size_t) (lo - from) * esize;
		out += encode_entry(out, &tail[i], base, opaque->key_bytes,
							opaque->block_bytes, opaque->off_bytes,
							opaque->extra_bytes);
		from = lo;
	}
	memcpy(out, entries + (size_t) from * esize, (size_t) (ns - from) * esize);
	out += (size_t) (ns - from) * esize;

	Assert(out - buf == (ptrdiff_t) (n + 1) * esize);
	memcpy(entries, buf, out - buf);
	opaque->nentries = n + 1;
	opaque->nsorted = n + 1;
	((PageHeader) page)->pd_lower =
		(PermPageEntries(page) - (char *) page) + (n + 1) * esize;
}

/*
 * A leaf's entries and key, one more, in key order, into out[] (room for
 * nentries + 1); returns how many.  Relies on the page's sorted part being
 * sorted, as its readers do; PermLeafSortedEntries does not (the checker's).
 */
int
PermLeafMergedEntries(Page page, const KeyTid *key, KeyTid *out)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	int			n = read_all(page, out);
	int			ns = opaque->nsorted;

	out[n++] = *key;
	if (n - ns > PERM_LEAF_TAIL_MAX + 1)
	{
		/* a longer tail than inserts leave: sort the whole */
		qsort(out, n, sizeof(KeyTid), PermCompareKeysQsort);
		return n;
	}
	merge_tail(out, ns, n);
	return n;
}

/* All entries of a leaf, in key order, into out[]; returns how many */
int
PermLeafSortedEntries(Page page, KeyTid *out)
{
	int			n = read_all(page, out);

	qsort(out, n, sizeof(KeyTid), PermCompareKeysQsort);
	return n;
}

/* Could key be appended (in the page's format, widened if needed)? */
bool
PermLeafHasRoom(Page page, const KeyTid *key)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	int			bb = Max(opaque->block_bytes,
						 bytes_for(ItemPointerGetBlockNumberNoCheck(&key->tid)));
	int			ob = Max(opaque->off_bytes,
						 bytes_for(ItemPointerGetOffsetNumberNoCheck(&key->tid)));

	return (size_t) (opaque->nentries + 1) *
		(opaque->key_bytes + bb + ob + opaque->extra_bytes) <= PERM_PAGE_SPACE;
}

/*
 * Is appending key a plain append: no wider TID fields and a tail not yet
 * due for merging?  Then only the new entry, pd_lower and the counts change
 * (PermLeafAppend's first case).
 */
bool
PermLeafAppendIsPlain(Page page, const KeyTid *key)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);

	return bytes_for(ItemPointerGetBlockNumberNoCheck(&key->tid)) <= opaque->block_bytes &&
		bytes_for(ItemPointerGetOffsetNumberNoCheck(&key->tid)) <= opaque->off_bytes &&
		opaque->nentries + 1 - opaque->nsorted < PERM_LEAF_TAIL_MAX;
}

/*
 * Encode key in the page's entry format into out (which needs 8 bytes of
 * room past the entry); returns the entry's size.
 */
int
PermLeafEncodeEntry(Page page, const KeyTid *key, char *out)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);

	return encode_entry((unsigned char *) out, key, leaf_key_base(opaque),
						opaque->key_bytes, opaque->block_bytes,
						opaque->off_bytes, opaque->extra_bytes);
}

/*
 * Append key to the leaf, which must have room (PermLeafHasRoom).  Returns
 * true if the whole entry array was rewritten (the format widened, or the
 * tail was merged into the sorted part), false if only the new entry's
 * bytes and the counts changed; *slot is the new entry's slot in the
 * latter case.  Uses no palloc, but sorts on the stack: callers work on a
 * copy of the page outside their critical section (perminsert.c).
 */
bool
PermLeafAppend(Page page, const KeyTid *key, int *slot)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	int			bb = Max(opaque->block_bytes,
						 bytes_for(ItemPointerGetBlockNumberNoCheck(&key->tid)));
	int			ob = Max(opaque->off_bytes,
						 bytes_for(ItemPointerGetOffsetNumberNoCheck(&key->tid)));
	int			n = opaque->nentries;
	KeyTid		keys[PERM_LEAF_MAX_ENTRIES];

	if (bb == opaque->block_bytes && ob == opaque->off_bytes &&
		n + 1 - opaque->nsorted < PERM_LEAF_TAIL_MAX)
	{
		/* the common case: the entry goes at the end of the tail */
		*slot = n;
		write_leaf_entry(page, n, key);
		opaque->nentries = n + 1;
		((PageHeader) page)->pd_lower += PermLeafEntrySize(page);
		return false;
	}

	/*
	 * A tail due for merging, in the page's own format: the encoded sorted
	 * part is copied in runs between the tail's entries, without decoding
	 * and encoding every entry of the page
	 */
	if (bb == opaque->block_bytes && ob == opaque->off_bytes &&
		(opaque->flags & PERM_KEY_OFFSET) && !perm_write_old_leaf_format &&
		n + 1 - opaque->nsorted <= PERM_LEAF_TAIL_MAX)
	{
		merge_encoded(page, key);
		return true;
	}

	/* rewrite: sort the tail with the new entry and merge it in */
	{
		bool		ok;

		n = PermLeafMergedEntries(page, key, keys);
		ok = PermLeafSetEntries(page, keys, n, n);
		Assert(ok);
		(void) ok;
		return true;
	}
}

/*
 * Remove the entries for which dead(tid) is true, keeping the order (and
 * so the sorted part).  Returns the number removed; counts the survivors of
 * the page in *kept.
 */
int
PermLeafRemove(Page page, bool (*dead) (ItemPointer tid, void *arg), void *arg,
			   int *kept)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	int			n = opaque->nentries;
	int			ns = opaque->nsorted;
	int			nkept = 0,
				nkept_sorted = 0,
				i;
	KeyTid		keys[PERM_LEAF_MAX_ENTRIES];
	bool		ok;

	read_all(page, keys);
	for (i = 0; i < n; i++)
	{
		if (dead(&keys[i].tid, arg))
			continue;
		keys[nkept++] = keys[i];
		if (i < ns)
			nkept_sorted++;
	}
	*kept = nkept;
	if (nkept == n)
		return 0;
	ok = PermLeafSetEntries(page, keys, nkept, nkept_sorted);
	Assert(ok);
	(void) ok;
	return n - nkept;
}

/* PermCompareKeys for qsort */
int
PermCompareKeysQsort(const void *a, const void *b)
{
	return PermCompareKeys((const KeyTid *) a, (const KeyTid *) b);
}

/*
 * Compare entry i of a leaf with key: the key alone, read without its TID,
 * unless the two keys are equal.
 */
static inline int
leaf_compare(Page page, const LeafKeys *lk, int i, const KeyTid *key)
{
	uint64		k = leaf_key_at(lk, i);
	KeyTid		e;

	if (k != key->key)
		return k < key->key ? -1 : 1;
	PermReadLeafEntry(page, i, &e);
	return ItemPointerCompare(&e.tid, (ItemPointer) &key->tid);
}

/*
 * First slot of a leaf's sorted part whose key is >= key.  Keys are
 * permuted fingerprints, close to uniform within the leaf's range [low
 * key, high key]: the search guesses the slot from the key's place in that
 * range (known from the special space, without reading an entry), then
 * gallops out from the guess until the answer is bracketed and finishes by
 * bisection.  A probe that would take ten cache misses to bisect a leaf
 * takes two or three; on skewed keys the gallop keeps it within twice the
 * bisection's steps.  Slots before lo are < key and slots from hi on are
 * >= key throughout.
 */
int
PermLeafLowerBound(Page page, const KeyTid *key)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	int			n = opaque->nsorted;
	LeafKeys lk;
	uint64		lokey,
				hikey;
	int			guess,
				step,
				lo = 0,
				hi = n;

	if (n == 0)
		return 0;
	leaf_keys_init(&lk, page);
	lokey = opaque->lokey;
	hikey = PermPageIsRightmost(page) ? leaf_key_at(&lk, n - 1) :
		opaque->hikey;
	if (key->key <= lokey || hikey <= lokey)
		guess = 0;
	else if (key->key >= hikey)
		guess = n - 1;
	else
		guess = (int) ((double) (key->key - lokey) / (double) (hikey - lokey) * n);
	guess = Max(0, Min(guess, n - 1));

	if (leaf_compare(page, &lk, guess, key) < 0)
	{
		/* the answer lies after guess: gallop right */
		lo = guess + 1;
		for (step = 1; lo < hi; step *= 2)
		{
			int			p = guess + step;

			if (p >= n)
				break;
			if (leaf_compare(page, &lk, p, key) >= 0)
			{
				hi = p;
				break;
			}
			lo = p + 1;
		}
	}
	else
	{
		/* the answer is guess or before it: gallop left */
		hi = guess;
		for (step = 1; lo < hi; step *= 2)
		{
			int			p = guess - step;

			if (p < 0)
				break;
			if (leaf_compare(page, &lk, p, key) < 0)
			{
				lo = p + 1;
				break;
			}
			hi = p;
		}
	}
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (leaf_compare(page, &lk, mid, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Report the entries of one share-locked leaf whose key lies in [from, hi]
 * and is within max_distance of query_key (the key's bits and, on leaves
 * that keep them, KeyTid.extra's bits against query_extra), and what the
 * probe found out (PermLeafProbeResult) for probe_range in permdescend.c,
 * which walks the leaves.  Compiled with and without POPCNT
 * (SIMHASH_POPCNT): this loop is where a scan spends its time.
 */
SIMHASH_POPCNT
void
PermLeafProbe(Page page, const KeyTid *from, uint64 lo, uint64 hi,
			  uint64 query_key, uint16 query_extra, int max_distance,
			  PermMatchCallback callback, void *arg,
			  PermLeafProbeResult *result)
{
	PermPageOpaque opaque = PermPageGetOpaque(page);
	int			nsorted = opaque->nsorted;
	LeafKeys lk;
	KeyTid		e;
	uint64		key = 0;
	uint64		far_key;
	int			i;

	result->past_hi = false;
	result->skip = false;
	result->reported = 0;
	leaf_keys_init(&lk, page);

	/*
	 * A run of one key that fills the end of the sorted part and goes on to
	 * the next page has the page's high key.  The high key is compared with
	 * in the loop; the last entry, which confirms the run, is read only
	 * then: reading it for every probe cost a cache miss each.
	 */
	far_key = PermPageIsRightmost(page) ? 0 : opaque->hikey;

	/*
	 * The sorted part, from the first entry >= from.  Keys are read alone;
	 * an entry's TID is decoded only when it matches.
	 */
	for (i = PermLeafLowerBound(page, from); i < nsorted; i++)
	{
		int			d;

		key = leaf_key_at(&lk, i);
		if (key > hi)
		{
			result->past_hi = true;
			break;
		}
		d = simhash_hamming(key, query_key);
		if (d <= max_distance && lk.has_extra)
			d += simhash_hamming(leaf_extra_at(&lk, i), query_extra);
		if (d <= max_distance)
		{
			PermReadLeafEntry(page, i, &e);
			callback(arg, &e.tid, e.key, d);
			result->reported++;
		}
		else if (key == far_key && i + 1 < nsorted &&
				 !PermPageIsRightmost(page) &&
				 leaf_key_at(&lk, nsorted - 1) == far_key)
		{
			/* a far key filling the rest of the page and going on */
			result->skip = true;
			break;
		}
	}
	result->last_key = key;

	/* the unsorted tail: every entry in [lo, hi] */
	for (i = opaque->nsorted; i < opaque->nentries; i++)
	{
		int			d;

		key = leaf_key_at(&lk, i);
		if (key < lo || key > hi)
			continue;
		d = simhash_hamming(key, query_key);
		if (d <= max_distance && lk.has_extra)
			d += simhash_hamming(leaf_extra_at(&lk, i), query_extra);
		if (d <= max_distance)
		{
			PermReadLeafEntry(page, i, &e);
			callback(arg, &e.tid, e.key, d);
			result->reported++;
		}
	}
}

/*
 * Every entry's key, in slot order, into keys (room for the page's
 * entries); returns their number.  For the planner's sample of a table's
 * leaves (permcost.c), which wants the keys alone.
 */
int
PermLeafReadKeys(Page page, uint64 *keys)
{
	int			n = PermPageGetOpaque(page)->nentries;
	LeafKeys	lk;
	int			i;

	leaf_keys_init(&lk, page);
	for (i = 0; i < n; i++)
		keys[i] = leaf_key_at(&lk, i);
	return n;
}
