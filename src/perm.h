/*-------------------------------------------------------------------------
 *
 * perm.h
 *		Private header of the simhash_perm index access method.
 *
 * DESIGN
 *
 * simhash_perm answers "every row whose fingerprint is within Hamming
 * distance k of q" exactly, with the permuted-prefix tables of Manku, Jain
 * and Das Sarma (WWW 2007).
 *
 * Tables.  The 64 bits are split into B blocks (reloption "blocks", default
 * max_distance + 1).  Two fingerprints within distance K (reloption
 * "max_distance", default 3) agree on at least B - K whole blocks, so the
 * index keeps one table per choice of B - K blocks: C(B, K) tables.  In
 * table t every fingerprint is stored under a permuted key whose top bits
 * (the table's prefix, P_t bits) are its chosen blocks.  A query permutes q
 * the same way and reads, in every table, the entries whose prefix equals
 * its own; one of the tables holds every true match.  Permuting bits does
 * not change Hamming distances, so each entry's distance is checked on the
 * permuted key itself, inside the index, and only true matches reach the
 * heap.  Queries with k > K stay exact by probing, in every table, each
 * prefix within s(k) bits of the query's (ALGORITHM.md, "any radius");
 * queries with k <= K probe exact prefixes only.
 *
 * Which bit goes to which block is decided at build time from the data:
 * bits are spread over the blocks so that every block carries about the
 * same entropy.  On uniform fingerprints this interleaves the bits over
 * the blocks; when some bits are nearly constant (fingerprints of a narrow
 * corpus), no prefix is made of them alone, which would otherwise turn one
 * table's buckets into a scan of the whole table.  The assignment is frozen
 * in the metapage.
 *
 * Pages.  Block 0 is the metapage (options, the bit assignment, the root of
 * every table).  Each table is a B+tree of its own in the same relation,
 * keyed on (permuted key, heap TID), which makes every entry unique even
 * when many rows share one fingerprint.  Leaf pages hold a packed array of
 * (key, TID) entries in a compact format of their own (the key bytes that
 * the page's whole key range shares are left out, and the TID takes the
 * bytes it needs: about 10 bytes an entry in a table of ten million rows;
 * see permleaf.c): a sorted part followed by a short unsorted tail of
 * recent inserts, merged into the sorted part every PERM_LEAF_TAIL_MAX
 * inserts.  Internal pages hold sorted (key, TID, child) downlinks.  There are no line pointers: pd_lower marks the end of the
 * array, so generic WAL logs only the bytes a change touches and skips the
 * free space, and an insert that appends logs a few bytes.  Every page has
 * a right-link and a high key (Lehman and Yao): a reader that lands on a
 * page that split under it moves right.
 *
 * Growth.  Inserts go to the leaf that owns their key, which splits when
 * full, so every prefix range stays contiguous however much the table grows
 * after CREATE INDEX: a probe reads a descent plus the leaves of its range,
 * and that range grows with the number of rows sharing a prefix, not with
 * the pages of the index.  A long run of one identical key (many rows with
 * the same fingerprint) that is not within distance k is skipped with one
 * descent instead of being read.
 *
 * Locking.  Readers hold one share lock at a time: descend without lock
 * coupling (usually straight to the leaf, through a per-backend map of the
 * leaves; see PermLeafMap), read a leaf whole (copying out its matches), release it, move
 * right.  Inserters descend the same way, lock the leaf exclusively, move
 * right while the key is beyond the page's high key, and insert.  A row is
 * inserted into up to four tables' leaves under one WAL record, with the
 * leaves locked in table order; if one of them is full, each table is done
 * on its own instead.  A split
 * locks the page and a new right sibling, moves the upper half, and is one
 * WAL record (with the new root and the metapage when the root splits);
 * the downlink is then inserted into the parent, found by a new descent,
 * in a record of its own.  Locks are only ever taken left to right and
 * child before parent before metapage, so there is no deadlock.  A crash
 * between the two records leaves a page reachable only through its left
 * sibling's right-link, which readers and writers follow anyway.
 * Because a scan never keeps a position inside a page after releasing its
 * lock, VACUUM needs only an exclusive lock (not a cleanup lock) to compact
 * a leaf; scans therefore require an MVCC snapshot, under which a heap TID
 * recycled by VACUUM points to a tuple the scan cannot see.
 *
 * WAL.  Every change goes through generic WAL (no custom resource manager,
 * so nothing to preload on primaries or standbys); CREATE INDEX writes its
 * pages through shared buffers and logs them with log_newpage_range().
 *
 * IDENTIFICATION
 *	  src/perm.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SIMHASH_PERM_H
#define SIMHASH_PERM_H

#include "access/amapi.h"
#include "access/generic_xlog.h"
#include "access/itup.h"
#include "storage/bufmgr.h"
#include "utils/relcache.h"

/* Operator strategies and support functions */
#define PERM_WITHIN_STRATEGY	1	/* fp <@ simhash_within(q, k) */
#define PERM_NSTRATEGIES		1
#define PERM_NPROCS				0

/* Identification of our pages (last two bytes of every page) */
#define PERM_PAGE_ID			0xFF8A
#define PERM_MAGIC				0x53484D50	/* "SHMP" */
#define PERM_VERSION			1

#define PERM_METAPAGE_BLKNO		0

/* Page kinds (PermPageOpaque->flags) */
#define PERM_META				(1 << 0)
#define PERM_LEAF				(1 << 1)
#define PERM_INTERNAL			(1 << 2)
#define PERM_ROOT				(1 << 3)

/* Reloption limits and defaults */
#define PERM_DEFAULT_MAX_DISTANCE	3
#define PERM_MAX_MAX_DISTANCE		12
#define PERM_MAX_BLOCKS				16
#define PERM_MAX_TABLES				64

/* Build progress sub-phases (1 is PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE) */
#define PERM_PHASE_SCAN			2
#define PERM_PHASE_SORT_WRITE	3

/* Options from WITH (...), as stored by build_reloptions */
typedef struct PermOptions
{
	int32		vl_len_;		/* varlena header (do not touch directly!) */
	int			max_distance;	/* design radius K */
	int			blocks;			/* B; 0 means max_distance + 1 */
} PermOptions;

/*
 * A table's permutation: the 64 bits of a fingerprint in the order they
 * appear in the table's key, most significant first.  bits[0] is the
 * position (0 = least significant) of the fingerprint bit that becomes the
 * top bit of the key.
 */
typedef struct PermTable
{
	uint8		bits[64];
	uint8		prefix_bits;	/* P_t: bits of the chosen blocks */
	BlockNumber root;			/* root page of this table's tree */
	uint16		root_level;		/* 0 when the root is a leaf */
} PermTable;

/* Metapage contents */
typedef struct PermMetaPageData
{
	uint32		magic;
	uint32		version;
	uint16		max_distance;	/* K */
	uint16		blocks;			/* B */
	uint16		ntables;		/* C(B, K) */
	uint16		algorithm;		/* fingerprint algorithm id (1: see README) */
	uint8		block_of_bit[64];	/* bit position -> block number */
	PermTable	tables[FLEXIBLE_ARRAY_MEMBER];
} PermMetaPageData;

typedef PermMetaPageData *PermMetaPage;

#define PermPageGetMeta(page) ((PermMetaPage) PageGetContents(page))

/*
 * Key of an entry: permuted fingerprint, then heap TID as tie-breaker.  The
 * TID is stored as its 6 bytes, so entries pack without padding.
 */
typedef struct PermKey
{
	uint64		key;
	ItemPointerData tid;
} PermKey;

/* Order of entries: permuted key as unsigned, then heap TID */
static inline int
PermCompareKeys(const PermKey *a, const PermKey *b)
{
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return ItemPointerCompare((ItemPointer) &a->tid, (ItemPointer) &b->tid);
}

/*
 * Internal pages hold (key, TID, child) downlinks of 18 bytes; leaf entries
 * have a per-page compact format (permleaf.c).
 */
#define PERM_KEY_SIZE				(sizeof(uint64) + sizeof(ItemPointerData))
#define PERM_INTERNAL_ENTRY_SIZE	(PERM_KEY_SIZE + sizeof(BlockNumber))

/* Special space of every page */
typedef struct PermPageOpaqueData
{
	uint64		hikey;			/* high key; meaningless on the rightmost */
	uint64		lokey;			/* leaves: the lowest key the page may hold */
	BlockNumber rightlink;		/* next page of the same level, or Invalid */
	uint16		flags;
	uint16		table;			/* which table the page belongs to */
	uint16		level;			/* 0 for leaves */
	/* the next five fields are contiguous: appends log them as one range */
	uint16		nentries;		/* entries in the packed array */
	uint16		nsorted;		/* entries [0, nsorted) are sorted; a leaf's
								 * later entries are an unsorted tail */
	uint8		key_bytes;		/* leaves: entry format (permleaf.c) */
	uint8		block_bytes;
	uint8		off_bytes;
	ItemPointerData hikey_tid;
	uint16		page_id;		/* PERM_PAGE_ID, last two bytes of the page */
} PermPageOpaqueData;

/* Bytes from nentries through off_bytes */
#define PERM_COUNTS_SIZE \
	(offsetof(PermPageOpaqueData, off_bytes) + sizeof(uint8) - \
	 offsetof(PermPageOpaqueData, nentries))

typedef PermPageOpaqueData *PermPageOpaque;

#define PermPageGetOpaque(page) ((PermPageOpaque) PageGetSpecialPointer(page))
#define PermPageIsLeaf(page)	((PermPageGetOpaque(page)->flags & PERM_LEAF) != 0)
#define PermPageIsRightmost(page) \
	(PermPageGetOpaque(page)->rightlink == InvalidBlockNumber)

/* Start of the packed entry array, and its capacity */
#define PermPageEntries(page)	((char *) (page) + MAXALIGN(SizeOfPageHeaderData))
#define PERM_PAGE_SPACE \
	(BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - MAXALIGN(sizeof(PermPageOpaqueData)))
/* Most entries a leaf can hold (the smallest entry format is 2 bytes) */
#define PERM_LEAF_MAX_ENTRIES	((int) (PERM_PAGE_SPACE / 2 + 1))

/*
 * Inserts append to a leaf's unsorted tail, so that their WAL records carry
 * a few bytes instead of half a page moved over; the tail is merged into
 * the sorted part when it reaches this length (or the page splits).
 */
#define PERM_LEAF_TAIL_MAX		32
#define PERM_INTERNAL_CAPACITY	((int) (PERM_PAGE_SPACE / PERM_INTERNAL_ENTRY_SIZE))

/*
 * A table's permutation as lookup tables: byte b of a fingerprint with
 * value v contributes spread[b][v] to the key, so permuting is eight loads
 * and ORs instead of 64 bit moves.
 */
typedef struct PermPermutation
{
	uint64		spread[8][256];
} PermPermutation;

/*
 * Index-wide state cached in rd_amcache.  The layout never changes after
 * the build; the roots may be stale (a root split since they were read),
 * which is harmless: the old root is the leftmost page of its level, and a
 * descent from it reaches every key of that level by moving right.
 */
typedef struct PermState
{
	int			max_distance;
	int			blocks;
	int			ntables;
	int			prefix_bits[PERM_MAX_TABLES];
	uint8		bits[PERM_MAX_TABLES][64];
	BlockNumber root[PERM_MAX_TABLES];
	int			root_level[PERM_MAX_TABLES];
	PermPermutation *perm;		/* one per table */
	struct PermLeafMap *leafmap[PERM_MAX_TABLES];	/* NULL until built */
} PermState;

/*
 * A backend's map of one table's leaves: the low key and block of every
 * leaf, read from the level above them.  A descent to a leaf then reads one
 * page instead of the whole path.  The map may be stale: a leaf's low key
 * never changes and pages are never removed, so the leaf it names for a key
 * is that key's leaf or one to its left, and the descent moves right from
 * there (Lehman-Yao).  A descent that has to move right often marks the map
 * for rebuilding.
 */
typedef struct PermLeafMap
{
	int			nleaves;
	bool		stale;
	PermKey    *lowkeys;		/* lowkeys[0] stands for minus infinity */
	BlockNumber *blocks;
} PermLeafMap;

/* Leaf maps are kept for tables of at most this many leaves */
#define PERM_LEAF_MAP_MAX		262144

/* Called by PermProbeRange for every entry within the distance bound */
typedef void (*PermMatchCallback) (void *arg, ItemPointer tid, uint64 key,
								   int distance);

/* perm.c */
extern void PermInit(void);
extern IndexBuildResult *permbuild(Relation heap, Relation index,
								   struct IndexInfo *indexInfo);
extern void permbuildempty(Relation index);
extern bool perminsert(Relation index, Datum *values, bool *isnull,
					   ItemPointer ht_ctid, Relation heapRel,
					   IndexUniqueCheck checkUnique, bool indexUnchanged,
					   struct IndexInfo *indexInfo);
extern IndexBulkDeleteResult *permbulkdelete(IndexVacuumInfo *info,
											 IndexBulkDeleteResult *stats,
											 IndexBulkDeleteCallback callback,
											 void *callback_state);
extern IndexBulkDeleteResult *permvacuumcleanup(IndexVacuumInfo *info,
												IndexBulkDeleteResult *stats);
extern void permcostestimate(struct PlannerInfo *root, struct IndexPath *path,
							 double loop_count, Cost *indexStartupCost,
							 Cost *indexTotalCost, Selectivity *indexSelectivity,
							 double *indexCorrelation, double *indexPages);
extern bytea *permoptions(Datum reloptions, bool validate);
extern bool permvalidate(Oid opclassoid);
extern IndexScanDesc permbeginscan(Relation index, int nkeys, int norderbys);
extern void permrescan(IndexScanDesc scan, ScanKey keys, int nkeys,
					   ScanKey orderbys, int norderbys);
extern bool permgettuple(IndexScanDesc scan, ScanDirection dir);
extern int64 permgetbitmap(IndexScanDesc scan, TIDBitmap *tbm);
extern void permendscan(IndexScanDesc scan);

/* permutils.c */
extern PermState *PermGetState(Relation index);
extern void PermChooseLayout(int max_distance, int blocks,
							 const double *bit_ones, uint8 *block_of_bit,
							 PermState *state);
extern void PermMakePermutation(const uint8 *bits, PermPermutation *perm);

/* A fingerprint's key in one table, through its lookup tables */
static inline uint64
PermPermuteFast(const PermPermutation *perm, uint64 fp)
{
	return perm->spread[0][fp & 0xFF] | perm->spread[1][(fp >> 8) & 0xFF] |
		perm->spread[2][(fp >> 16) & 0xFF] | perm->spread[3][(fp >> 24) & 0xFF] |
		perm->spread[4][(fp >> 32) & 0xFF] | perm->spread[5][(fp >> 40) & 0xFF] |
		perm->spread[6][(fp >> 48) & 0xFF] | perm->spread[7][fp >> 56];
}
extern void PermInitPage(Page page, uint16 flags, uint16 table, uint16 level);
extern Buffer PermNewBuffer(Relation index, ForkNumber forknum);
extern void PermReadInternalEntry(Page page, int i, PermKey *out,
								  BlockNumber *child);
extern void PermInsertEntry(Relation index, int table, const PermKey *key);
extern void PermInsertRow(Relation index, int ntables, const PermKey *keys);

/* permleaf.c */
extern int	PermLeafEntrySize(Page page);
extern void PermReadLeafEntry(Page page, int i, PermKey *out);
extern int	PermLeafFormatSize(uint64 lo, uint64 hi, BlockNumber maxblock,
							   OffsetNumber maxoff);
extern bool PermLeafSetEntries(Page page, const PermKey *keys, int n,
							   int nsorted);
extern int	PermLeafSortedEntries(Page page, PermKey *out);
extern bool PermLeafHasRoom(Page page, const PermKey *key);
extern bool PermLeafAppend(Page page, const PermKey *key, int *slot);
extern int	PermLeafRemove(Page page, bool (*dead) (ItemPointer tid, void *arg),
						   void *arg, int *kept);
extern void PermProbeRange(Relation index, int table, uint64 lo, uint64 hi,
						   uint64 query_key, int max_distance,
						   PermMatchCallback callback, void *arg);
extern void PermMetaSnapshot(Relation index, PermTable *tables, int *ntables);

/* simhash_within query type, shared with the operator functions */
typedef struct SimhashQuery
{
	uint64		center;
	int32		radius;
	int32		pad;
} SimhashQuery;

#define DatumGetSimhashQuery(X)		((SimhashQuery *) DatumGetPointer(X))

/*
 * How many n-bit strings lie within Hamming distance r of a given one:
 * sum of C(n, i) for i = 0..r (a double: it can exceed 2^63).
 */
static inline double
PermCountWithin(int n, int r)
{
	double		total = 0,
				c = 1;
	int			i;

	for (i = 0; i <= r && i <= n; i++)
	{
		total += c;
		c = c * (n - i) / (i + 1);
	}
	return total;
}

/* s(r): bits of the table key to enumerate for radius r (ALGORITHM.md) */
static inline int
PermProbeSpread(int blocks, int max_distance, int radius)
{
	int			chosen = blocks - max_distance;
	int			extra = (radius % blocks) - max_distance;

	return chosen * (radius / blocks) + (extra > 0 ? extra : 0);
}

#endif							/* SIMHASH_PERM_H */
