/*-------------------------------------------------------------------------
 *
 * perm.h
 *		Private header of the simhash_perm index access method.
 *
 * simhash_perm finds every row within Hamming distance k of a query with
 * the permuted-prefix tables of Manku, Jain and Das Sarma (WWW 2007): C(B, K)
 * tables, each a B+tree in the same relation keyed on a permutation of the
 * fingerprint whose top bits are B - K of the B blocks.  src/index/README.perm
 * holds the design: why the tables find every match, the radius arithmetic
 * above K, the bit layout, the page formats, locking, WAL and crashes.
 *
 * One descriptor, two engines (README.perm, "The shape of the code").
 * Every callback reads the index's descriptor (PermState, perm.c), built
 * once per relcache entry from the catalog and the metapage.  Two engines
 * serve the two kinds of index behind one table of functions (PermEngine,
 * below): the 64-bit permuted tables (tables/) and the substrings of
 * bit(n) codes, or of codes after leading columns (substrings/).  The
 * handler picks the engine once, from the descriptor; the parts both use
 * (the trees, the code store, the tenant prefix, the build, VACUUM and the
 * check) read the layout from the descriptor and name no engine.
 *
 * Files, from the callbacks down (calls only go down this list; README in
 * this folder):
 *	permhandler.c	the handler: the callbacks, each engine picked once;
 *					the settings
 * check/: the SQL functions that inspect an index
 *	permcheck.c		simhash_perm_check(): proves an index sound, as amcheck does
 *	permcheckrows.c	its TID lists, the code store's chains, heapallindexed
 *	perminfo.c		simhash_perm_info(); opening an index for inspection
 *	perminsert.c	aminsert: a row's keys (its engine's), page splits, new
 *					roots, WAL
 * build/: CREATE INDEX and what rewrites whole tables
 *	permbuild.c		ambuild, ambuildempty: collect the rows, sort each table,
 *					write bottom up
 *	permbuildparallel.c	CREATE INDEX with parallel workers: shares of the
 *					scan, tables sorted by workers, written by the leader
 *	permconstraintcheck.c	an exclusion constraint's radius always holds
 *					for its rows: ALTER INDEX ... SET (radius) and rebuilds
 *					check them
 *	permgrow.c		a young index's layout follows the rows: a new layout
 *					written beside the old, one metapage record switches
 * tables/: the engine of 64-bit fingerprints (PermTablesEngine)
 *	permtables.c	its table of functions, a row's keys, a constraint's check
 *	permtableknn.c	the nearest-neighbour scan: nearest first, ring by ring
 *	permtablescan.c	the radius scan: queries permuted into prefix probes
 * substrings/: the engine of bit(n) codes (PermSubstringsEngine)
 *	permsubstrings.c	its table of functions, a row's keys, a constraint's
 *					check
 *	permwideknn.c	the nearest-neighbour scan, and within a tenant
 *	permwidescan.c	the radius scan, the quals both scans read, a tenant's
 *					entries read whole
 *	permwidestore.c	the code store read by TID, and in passes for far
 *					neighbours
 *	permscan.c		ambeginscan .. amendscan for both engines: matches handed
 *					out once, in TID order; TID lists, rows without a code
 *	permvacuum.c	ambulkdelete, amvacuumcleanup
 *	permcost.c		amcostestimate
 *	permconstraint.c	exclusion constraints: operator ~=, the check's
 *					radius, a match's row read back
 * tree/: the B+trees of keys, and store/: the code store
 *	permwrite.c		writing whole tables bottom up (CREATE INDEX, permgrow.c)
 *	permdescend.c	descending a table, leaf maps, probing a prefix range
 *	permstore.c		the code store of bit(n) codes: its pages, the build's
 *					chains, appends, VACUUM, the check's walk
 *	permpage.c		pages: initialisation, new pages, internal pages, reads
 *					that check every page, right-links
 *	permleaf.c		the compact leaf format (permleaf.h): encoding, appends,
 *					the search within a leaf, a leaf probed against a query
 *	permtenant.c	leading equality columns, (tenant, code): the tenant's
 *					hash in every key, a row's keys, a scan's tenant
 *	permoptions.c	the options, registered, parsed and read (amoptions),
 *					checked against the code type
 *	perm.c			the descriptor (PermState): the code's column and kind,
 *					the metapage read, checked against the catalog, and kept
 *					per relcache entry
 *	permwidelayout.c	the substrings of bit(n) codes: their keys, probe
 *					radii, the cost model that picks the layout
 *	permlayout.c	the bit layout of 64-bit tables: blocks, tables,
 *					permutations, s(r) (permlayout.h holds both layouts')
 *	permvalidate.c	amvalidate
 *	permowner.c		whose rights a table's index expressions run with
 * Below them: the record sort (src/recsort), the fingerprint voter
 * (src/fingerprint) and the type (src/type).
 *
 * IDENTIFICATION
 *	  src/index/perm.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SIMHASH_PERM_H
#define SIMHASH_PERM_H

#include "access/amapi.h"
#include "access/generic_xlog.h"
#include "access/itup.h"
#include "access/tableam.h"
#include "storage/bufmgr.h"
#include "storage/lockdefs.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"
#include "utils/varbit.h"

#include "compat.h"
#include "recsort/recsort.h"
#include "index/permlayout.h"

/*
 * Constants
 */

/* Operator strategies and support functions */
#define PERM_WITHIN_STRATEGY	1	/* fp <@ simhash_within(q, k) */
#define PERM_DISTANCE_STRATEGY	2	/* ORDER BY fp <-> q */
#define PERM_NEAR_DUP_STRATEGY	3	/* EXCLUDE (fp WITH ~=): within the radius */
#define PERM_EQUAL_STRATEGY		4	/* tenant = value: a leading column */
#define PERM_NSTRATEGIES		4
#define PERM_NPROCS				0

/*
 * Identification of our pages: the last field of every page's special space
 * (bytes 8184-8185 of an 8 kB page; the struct is padded to 48 bytes)
 */
#define PERM_PAGE_ID			0xFF8A
#define PERM_MAGIC				0x53484D50	/* "SHMP" */
#define PERM_VERSION			1

#define PERM_METAPAGE_BLKNO		0

/* Page kinds (PermPageOpaque->flags) */
#define PERM_META				(1 << 0)
#define PERM_LEAF				(1 << 1)
#define PERM_INTERNAL			(1 << 2)
#define PERM_ROOT				(1 << 3)
#define PERM_INCOMPLETE_SPLIT	(1 << 4)	/* right sibling lacks a downlink */
#define PERM_KEY_OFFSET			(1 << 5)	/* leaf keys stored as key - lokey */
#define PERM_ODD_LAYOUT			(1 << 6)	/* written for a layout of odd
											 * generation (permgrow.c) */
/*
 * Pages of the code store (permstore.c): every row's whole code and TID,
 * or (with PERM_STORE_NULLS) the TIDs of the rows whose code is NULL
 */
#define PERM_STORE				(1 << 7)
#define PERM_STORE_NULLS		(1 << 8)
#define PERM_TREE_FLAGS \
	(PERM_LEAF | PERM_INTERNAL | PERM_ROOT | PERM_INCOMPLETE_SPLIT | \
	 PERM_KEY_OFFSET | PERM_ODD_LAYOUT)

/* The flag of the pages of a layout of generation g */
#define PermLayoutFlag(g)		(((g) & 1) ? PERM_ODD_LAYOUT : 0)

/* Deepest tree a page may claim (a 64-table index of 2^40 rows has 5) */
#define PERM_MAX_LEVEL			32


/* Build progress sub-phases (1 is PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE) */
#define PERM_PHASE_SCAN			2
#define PERM_PHASE_SORT			3
#define PERM_PHASE_WRITE		4

/*
 * Inserts append to a leaf's unsorted tail, so that their WAL records carry
 * a few bytes instead of half a page moved over; the tail is merged into
 * the sorted part when it reaches this length (or the page splits).  A
 * merge logs the page's whole entry array, so the longer the tail, the
 * less WAL a row costs (a million bit(256) rows loaded into an index:
 * 2,652 MB at 32, 1,240 MB at 128); but every probe of a leaf reads its
 * tail whole.  README.perm, "Pages", has the measurements.
 */
#define PERM_LEAF_TAIL_MAX		128

/* Leaf maps are kept for tables of at most this many leaves */
#define PERM_LEAF_MAP_MAX		(64 * 1024 * 1024)

/* Default of simhash.leaf_map_memory, in kB */
#define PERM_DEFAULT_LEAF_MAP_MEMORY	(32 * 1024)

/*
 * Page structures
 */


/*
 * A table as the metapage records it.  bits[] is the table's permutation:
 * the 64 bits of a fingerprint in the order they appear in the table's key,
 * most significant first; bits[0] is the position (0 = least significant)
 * of the fingerprint bit that becomes the top bit of the key.
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
	uint16		algorithm;		/* fingerprint algorithm id (1: docs/fingerprint_format.md) */
	uint8		block_of_bit[64];	/* bit position -> block number */
	PermTable	tables[FLEXIBLE_ARRAY_MEMBER];
} PermMetaPageData;

typedef PermMetaPageData *PermMetaPage;

#define PermPageGetMeta(page) ((PermMetaPage) PageGetContents(page))

/*
 * How the layout follows the rows (permgrow.c), after the tables in the
 * metapage.  Indexes built before simhash 1.6 have none: their layout
 * never changes (PermMetaGetGrowth returns NULL).
 */
#define PERM_GROWTH_MAGIC		0x47524F57	/* "GROW" */
/* A layout chosen from this many rows is final: next_check is then Invalid */
#define PERM_GROWTH_FINAL_ROWS	65536

typedef struct PermMetaGrowth
{
	uint32		magic;			/* PERM_GROWTH_MAGIC */
	uint32		generation;		/* layouts before this one */
	uint64		layout_rows;	/* entries the layout was chosen from */
	BlockNumber layout_start;	/* the first block of this layout's trees:
								 * blocks before it belong to earlier ones */
	BlockNumber next_check;		/* relation length at which an insert looks
								 * at the layout again; InvalidBlockNumber:
								 * never */
} PermMetaGrowth;

/*
 * An index on bit(n) codes (permwidelayout.c) records the codes' width and how
 * they are cut, after the growth record.  Its tables are the code's m
 * substrings: table t holds the bits at positions t, t + m, t + 2m, ...
 * (0 = the leftmost bit of the bit string), the first of them the most
 * significant bit of a key of prefix_bits bits (the substring's width).
 */
#define PERM_CODE_MAGIC			0x57494445	/* "WIDE" */


typedef struct PermMetaCode
{
	uint32		magic;			/* PERM_CODE_MAGIC */
	uint16		width;			/* bits of every code */
	uint16		radius;			/* design radius */
	uint16		substrings;		/* m, the number of tables */
	uint16		tenants;		/* leading equality columns (permtenant.c) */
	uint16		tail;			/* code bits each key keeps after its
								 * substring, at most (permwidelayout.c) */
	uint16		extra;			/* code bits each entry keeps beyond its
								 * key: PERM_TENANT_EXTRA_BITS with leading
								 * columns, else 0 */
	uint64		layout_rows;	/* rows the layout was chosen for */
} PermMetaCode;

/*
 * The code store of an index on bit(n) codes without leading columns
 * (permstore.c), after the code record: two chains of pages linked by
 * their right-links, one of codes and TIDs, one of the TIDs of NULL
 * codes.  first and null_first never change; last and null_last are the
 * chains' last pages (appends go there).  Indexes built before simhash
 * 1.6 had it have none (PermMetaGetStore returns false).
 */
#define PERM_STORE_MAGIC		0x53544F52	/* "STOR" */

typedef struct PermMetaStore
{
	uint32		magic;			/* PERM_STORE_MAGIC */
	uint16		width;			/* bits of every code: the code record's */
	uint16		entry_size;		/* bytes of an entry of codes */
	BlockNumber first;			/* the chain of codes */
	BlockNumber last;
	BlockNumber null_first;		/* the chain of NULL codes' TIDs */
	BlockNumber null_last;
	BlockNumber pages;			/* pages of the chain of codes */
	BlockNumber null_pages;		/* and of the chain of NULL codes */
} PermMetaStore;

/* Pages of an index's code store, as its record last said (0: none) */
#define PermStorePages(state) \
	((state)->has_store ? (state)->store.pages + (state)->store.null_pages : 0)

/* 64-bit words of a code of width bits in the store (zero-padded) */
#define PermStoreWords(width)		(((width) + 63) / 64)
/* Bytes of an entry of codes: the code's words, then the heap TID */
#define PermStoreEntrySize(width) \
	(PermStoreWords(width) * (int) sizeof(uint64) + (int) sizeof(ItemPointerData))

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
	uint8		extra_bytes;	/* leaves: bytes of KeyTid.extra an entry
								 * keeps (0 or 2), the index's for life */
	ItemPointerData hikey_tid;
	uint16		page_id;		/* PERM_PAGE_ID, the special space's last field */
} PermPageOpaqueData;

typedef PermPageOpaqueData *PermPageOpaque;

/* Bytes from nentries through off_bytes */
#define PERM_COUNTS_SIZE \
	(offsetof(PermPageOpaqueData, off_bytes) + sizeof(uint8) - \
	 offsetof(PermPageOpaqueData, nentries))

#define PermPageGetOpaque(page) ((PermPageOpaque) PageGetSpecialPointer(page))
#define PermPageIsLeaf(page)	((PermPageGetOpaque(page)->flags & PERM_LEAF) != 0)
#define PermPageIsRightmost(page) \
	(PermPageGetOpaque(page)->rightlink == InvalidBlockNumber)

/*
 * An entry is a KeyTid (recsort.h): the permuted fingerprint, then the heap
 * TID as tie-breaker, the record the record sort puts in order.  The TID
 * is stored as its 6 bytes, so entries pack without padding.
 */

/*
 * Internal pages hold (key, TID, child) downlinks of 18 bytes; leaf entries
 * have a per-page compact format (permleaf.c).
 */
#define PERM_KEY_SIZE				(sizeof(uint64) + sizeof(ItemPointerData))
#define PERM_INTERNAL_ENTRY_SIZE	(PERM_KEY_SIZE + sizeof(BlockNumber))

/* Start of the packed entry array, and its capacity in bytes */
#define PermPageEntries(page)	((char *) (page) + MAXALIGN(SizeOfPageHeaderData))
#define PERM_PAGE_SPACE \
	(BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - MAXALIGN(sizeof(PermPageOpaqueData)))

/* Most entries a leaf can hold (the smallest entry format is 2 bytes) */
#define PERM_LEAF_MAX_ENTRIES	((int) (PERM_PAGE_SPACE / 2 + 1))
/* Most downlinks an internal page can hold */
#define PERM_INTERNAL_CAPACITY	((int) (PERM_PAGE_SPACE / PERM_INTERNAL_ENTRY_SIZE))

/*
 * State
 */


/*
 * A backend's map of one table's leaves: the low key and block of every
 * leaf, read from the level above them.  A descent to a leaf then reads one
 * page instead of the whole path.  The map may be stale: a leaf's low key
 * never changes and pages are never removed, so the leaf it names for a key
 * is that key's leaf or one to its left, and the descent moves right from
 * there (Lehman-Yao).  A descent that has to move right often marks the map
 * for rebuilding.  recent[] remembers the buffer each leaf was last found
 * in, which spares the buffer mapping table's lookup while it still holds
 * the leaf (PermReadPageRecent).
 *
 * guide[] narrows the search of lowkeys[]: the keys from guide_base up are
 * cut into buckets of 2^guide_shift keys, and guide[b] is the first leaf
 * (from 1) whose low key lies in bucket b or above (guide[nguide] =
 * nleaves).  Keys spread evenly over their range (permuted fingerprints,
 * substrings, tenants' hashes) put a leaf or two in a bucket, so a lookup
 * reads two or three cache lines instead of bisecting the whole map.
 */
typedef struct PermLeafMap
{
	int			nleaves;
	bool		stale;
	KeyTid    *lowkeys;		/* lowkeys[0] stands for minus infinity */
	BlockNumber *blocks;
	Buffer	   *recent;			/* the buffer a leaf was last read from */
	int		   *guide;			/* nguide + 1 entries, or NULL */
	int			nguide;
	int			guide_shift;
	uint64		guide_base;		/* lowkeys[1].key */
} PermLeafMap;

/*
 * Where an insert prepares its leaf appends before its critical section:
 * the new page images, and their WAL deltas (at most the entries plus three
 * fragment headers).  One per index per backend, in rd_indexcxt.
 */
typedef struct PermAppendScratch
{
	PGAlignedBlock pages[MAX_GENERIC_XLOG_PAGES];
	char		deltas[MAX_GENERIC_XLOG_PAGES][BLCKSZ + 64];
} PermAppendScratch;

/*
 * Index-wide state cached in rd_amcache.  The layout changes only under an
 * AccessExclusiveLock on the index, after which every backend's cache is
 * invalidated (permgrow.c); the roots may be stale (a root split since
 * they were read),
 * which is harmless: the old root is the leftmost page of its level, and a
 * descent from it reaches every key of that level by moving right.
 */
typedef enum PermEngineKind
{
	PERM_ENGINE_TABLES,			/* 64-bit fingerprints: tables/ */
	PERM_ENGINE_SUBSTRINGS		/* bit(n) codes, leading columns: substrings/ */
} PermEngineKind;

#define PERM_NENGINES			2

typedef struct PermState
{
	Relation	index;			/* the index it describes: its relcache
								 * entry, which outlives the state (perm.c) */
	MemoryContext cxt;			/* holds the state and all it points to */
	PermEngineKind engine;		/* which engine serves the index */
	int			code_column;	/* the code's key column (0-based, the
								 * last): the leading columns come first */
	bool		code_bits;		/* a bit(n) or varbit code, not a 64-bit
								 * fingerprint (simhash64, bigint) */
	PermLayout	layout;
	bool		has_growth;		/* the metapage has a PermMetaGrowth */
	PermMetaGrowth growth;		/* as the metapage had it when read */
	bool		has_store;		/* the metapage has a PermMetaStore: the list
								 * of rows without a code, at least */
	bool		has_codes;		/* and its store keeps codes (bit(n) codes
								 * without leading columns) */
	PermMetaStore store;		/* as the metapage had it when read; the
								 * chains' ends may have moved on since */
	struct PermStoreDir *storedir;	/* the pages of the chain of codes and
									 * their TIDs' ranges (permwidestore.c),
									 * NULL until a lookup */
	uint32		inserts;		/* this backend's inserts, to space out
								 * looks at the layout */

	BlockNumber nblocks;		/* the relation has at least this many blocks */
	BlockNumber root[PERM_MAX_TABLES];
	int			root_level[PERM_MAX_TABLES];
	PermPermutation *perm;		/* one per table */
	PermLeafMap *leafmap[PERM_MAX_TABLES];	/* NULL until built */
	int64		leafmap_bytes;	/* memory of the maps, for the limit */
	int			descents[PERM_MAX_TABLES];	/* counted until a map is built */
	PermAppendScratch *append_scratch;	/* NULL until the first insert */
	Buffer	   *recent;			/* per block: the buffer it was last read in */
	BlockNumber nrecent;		/* blocks recent has room for */
} PermState;

/*
 * Leaves a scan keeps pinned until it ends: an exclusion constraint's check
 * reads under a dirty snapshot, and the pins keep VACUUM (which takes a
 * cleanup lock on every page) from removing the entries it found, and the
 * heap from reusing their TIDs, before the executor has read the rows
 * (README.perm, "Exclusion constraints").
 */
typedef struct PermPinList
{
	MemoryContext cxt;			/* where bufs lives */
	Buffer	   *bufs;
	int			n;
	int			max;
} PermPinList;

/* Called by PermProbeRange for every entry within the distance bound */
typedef void (*PermMatchCallback) (void *arg, ItemPointer tid, uint64 key,
								   int distance);

/*
 * The two engines, and what differs between them (README.perm, "Two
 * engines"): the 64-bit permuted tables (tables/) and the substrings of
 * bit(n) codes, or of a code after leading columns (substrings/).  Both
 * keep their keys in the same trees (tree/), their codes in the same
 * store (store/), and are built, vacuumed and checked by the same code,
 * which reads the layout from the descriptor.  The handler
 * (permhandler.c) picks an index's engine once, from the descriptor
 * (PermState.engine), and hands it to the shared insert and to the scan,
 * which keeps it (permscan.c): calls go through this table, so that no
 * shared part names an engine.
 */
typedef struct PermEngine
{
	const char *name;

	/*
	 * the scan's keys in the engine's form (PermScanOpaqueData), at every
	 * rescan, in the scan's memory context
	 */
	void		(*prepare) (IndexScanDesc scan);

	/* a row's key in every table (insert); false: none, a NULL tenant */
	bool		(*row_keys) (Relation index, PermState *state,
							 const Datum *values, const bool *isnull,
							 ItemPointer tid, KeyTid *keys);

	/* the radius scan: every entry within the quals' radius, to callback */
	void		(*search) (IndexScanDesc scan, PermMatchCallback callback,
						   void *arg, PermPinList *pins);

	/*
	 * an exclusion constraint's check: its candidates into the scan's
	 * matches, their leaves pinned (NULL: search, with the pins); and
	 * whether a candidate conflicts (NULL: each does)
	 */
	void		(*constraint_search) (IndexScanDesc scan);
	bool		(*constraint_match) (IndexScanDesc scan);

	/* the nearest-neighbour scan: the next row, nearest first */
	bool		(*nearest) (IndexScanDesc scan);

	/* free what the engine's part of a scan holds (may be NULL) */
	void		(*end_scan) (IndexScanDesc scan);
} PermEngine;

/* tables/permtables.c, substrings/permsubstrings.c */
extern PGDLLIMPORT const PermEngine PermTablesEngine;
extern PGDLLIMPORT const PermEngine PermSubstringsEngine;

/*
 * Inline helpers, used in the inner loops of descents, probes and builds
 */

/* A heap TID as one integer, block << 16 | offset: a hash key */
static inline uint64
PermTidNumber(const ItemPointerData *tid)
{
	return ((uint64) ItemPointerGetBlockNumberNoCheck(tid) << 16) |
		ItemPointerGetOffsetNumberNoCheck(tid);
}

/* Order of entries: permuted key as unsigned, then heap TID */
static inline int
PermCompareKeys(const KeyTid *a, const KeyTid *b)
{
	return KeyTidCompare(a, b);
}


/*
 * A code as a bit string: a bit(n) value as it is, a 64-bit fingerprint
 * as bit(64), its most significant bit first (so Hamming distances agree).
 * bits: the index's codes are bit strings (PermState.code_bits).
 */
static inline VarBit *
PermCodeBits(bool bits, Datum value)
{
	VarBit	   *code;
	uint64		fp;
	int			i;

	if (bits)
		return DatumGetVarBitP(value);
	fp = DatumGetUInt64(value);
	code = palloc(VARBITTOTALLEN(64));
	SET_VARSIZE(code, VARBITTOTALLEN(64));
	VARBITLEN(code) = 64;
	for (i = 0; i < 8; i++)
		VARBITS(code)[i] = (bits8) (fp >> (56 - 8 * i));
	return code;
}

/* A code of another width than the index's is an error naming both */
static inline void
PermCheckCodeWidth(Relation index, int width, int got)
{
	if (got != width)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_LENGTH_MISMATCH),
				 errmsg("a code of %d bits does not fit index \"%s\" of %d-bit codes",
						got, RelationGetRelationName(index), width),
				 errdetail("A simhash_perm index holds codes of one width."),
				 errhint("Declare the column bit(%d), or give each width a partial index of its own (WHERE length(code) = %d).",
						 width, got)));
}

/*
 * Prototypes, by the file that defines them
 */

/* permhandler.c: the handler, the settings */
extern void PermInit(void);

/* perm.c: the descriptor and the metapage */
extern Buffer PermReadMetaPage(Relation index, int lockmode);
extern BlockNumber PermGetRoot(PermState *state, int table, int target_level,
							   int *level);
extern void PermMetaSnapshot(Relation index, PermTable *tables, int *ntables);
extern bool PermMetaGetGrowth(Page metapage, PermMetaGrowth *growth);
extern void PermMetaSetGrowth(Page metapage, const PermMetaGrowth *growth);
extern bool PermMetaGetCode(Page metapage, PermMetaCode *code);
extern void PermMetaSetCode(Page metapage, const PermMetaCode *code);
extern bool PermMetaGetStore(Page metapage, PermMetaStore *store);
extern void PermMetaSetStore(Page metapage, const PermMetaStore *store);
extern PermState *PermGetState(Relation index);
extern int	PermCodeColumn(Relation index);
extern int	PermTenantColumns(Relation index);
extern bool PermIndexIsWide(Relation index);
extern void PermForgetState(Relation index);


/* perminfo.c */
extern void PermNoteWhatReindexBrings(Relation index);
extern Relation PermOpenIndexForInspection(Oid indexoid, LOCKMODE lockmode,
										   Relation *heap);

/* permbuild.c (and its parallel workers: a dynamic shared memory segment) */
struct dsm_segment;
struct shm_toc;
struct SharedFileSet;

extern IndexBuildResult *permbuild(Relation heap, Relation index,
								   struct IndexInfo *indexInfo);
extern void permbuildempty(Relation index);
extern PGDLLEXPORT void simhash_perm_build_worker(struct dsm_segment *seg,
												  struct shm_toc *toc);

/* permbuildparallel.c */
typedef struct PermParallel PermParallel;
typedef struct PermStoreBuild PermStoreBuild;	/* permwidestore.c */
extern bool PermStoreFindCode(PermState *state, ItemPointer tid, char *words);
extern VarBit *PermStoreCodeBits(PermState *state, ItemPointer tid);

/* permstore.c */
struct SimhashVoter;

extern bool perm_report_build_workers;
extern PermParallel *PermParallelBegin(Relation heap, Relation index,
									   struct IndexInfo *indexInfo,
									   int nstores,
									   const PermLayout *code_layout,
									   int64 budget, bool code_store);
extern PermParallel *PermParallelAttach(struct dsm_segment *seg,
										struct shm_toc *toc);
extern Relation PermParallelHeap(PermParallel *par);
extern Relation PermParallelIndex(PermParallel *par);
extern const PermLayout *PermParallelCodeLayout(PermParallel *par);
extern RecStore *PermParallelStore(PermParallel *par, int s);
extern PermStoreBuild *PermParallelStoreBuild(PermParallel *par);
extern void PermParallelScan(PermParallel *par, IndexBuildCallback callback,
							 void *arg);
extern void PermParallelScanned(PermParallel *par, int64 nrows,
								const struct SimhashVoter *votes,
								PermStoreBuild *code_store);
extern double PermParallelGather(PermParallel *par, RecStore **stores,
								 int64 *nrows, struct SimhashVoter *votes,
								 PermStoreBuild *code_store);
extern void PermParallelWriteTables(PermParallel *par, RecStore **rows,
									int64 n, const PermLayout *layout,
									BlockNumber *roots, uint16 *root_levels);
extern void PermParallelSortTables(PermParallel *par);
extern void PermParallelDetach(PermParallel *par);
extern void PermParallelEnd(PermParallel *par);

/* permgrow.c */
extern void PermGrowthAfterBuild(PermMetaGrowth *growth, int64 rows,
								 BlockNumber nblocks, bool wide, bool fixed);
extern void PermGrowMaybeRelayout(Relation index);
extern void PermGrowInit(void);

/* permwrite.c */
extern RunSort *PermSortTable(RecStore *rows, int64 n, int64 budget,
							  const PermLayout *layout, int t);
extern BlockNumber PermWriteTable(Relation index, ForkNumber fork,
								  const PermLayout *layout, int t,
								  uint16 flags, bool log_pages, RunSort *rs,
								  uint16 *root_level);
extern void PermWriteTables(Relation index, ForkNumber fork, RecStore **rows,
							int64 n, int64 budget, const PermLayout *layout,
							uint16 flags, bool log_pages, bool progress,
							BlockNumber *roots, uint16 *root_levels);

/* permconstraintcheck.c */
extern void PermRadiusInit(void);
extern void PermCheckRebuiltConstraint(Relation heap, Relation index);

/* perminsert.c */
extern bool perm_fail_after_split;
extern int	perm_leaf_map_memory;
extern bool PermInsert(const PermEngine *engine, Relation index,
					   Datum *values, bool *isnull, ItemPointer ht_ctid);

/* permconstraint.c */

/*
 * Reading rows by TID with the fingerprint the index holds for them (index
 * expressions evaluated as the executor does), to recheck a match against
 * the row itself
 */
typedef struct PermRowReader
{
	Relation	heap;
	struct EState *estate;
	struct IndexInfo *info;
	struct TupleTableSlot *slot;
	struct IndexFetchTableData *fetch;
} PermRowReader;

pg_noreturn extern void PermNearDupOutsideConstraint(bool codes);
extern bool PermScanIsConstraintCheck(IndexScanDesc scan, PermState *state);
extern int	PermConstraintRadius(IndexScanDesc scan, PermState *state);
extern PermRowReader *PermRowReaderBegin(Relation heap, Relation index);
extern bool PermRowReaderFetchValues(PermRowReader *reader, ItemPointer tid,
									 Snapshot snapshot, Datum *values,
									 bool *isnull);
extern bool PermRowReaderFetchValue(PermRowReader *reader, ItemPointer tid,
									Snapshot snapshot, Datum *value);
extern bool PermRowReaderFetch(PermRowReader *reader, ItemPointer tid,
							   Snapshot snapshot, uint64 *fp);
extern void PermRowReaderEnd(PermRowReader *reader);

/* permscan.c */
extern IndexScanDesc PermBeginScan(Relation index, int nkeys, int norderbys,
								   const PermEngine *engine);
extern void permrescan(IndexScanDesc scan, ScanKey keys, int nkeys,
					   ScanKey orderbys, int norderbys);
extern bool permgettuple(IndexScanDesc scan, ScanDirection dir);
extern int64 permgetbitmap(IndexScanDesc scan, TIDBitmap *tbm);
extern void permendscan(IndexScanDesc scan);

/* permvacuum.c */
extern IndexBulkDeleteResult *permbulkdelete(IndexVacuumInfo *info,
											 IndexBulkDeleteResult *stats,
											 IndexBulkDeleteCallback callback,
											 void *callback_state);
extern IndexBulkDeleteResult *permvacuumcleanup(IndexVacuumInfo *info,
												IndexBulkDeleteResult *stats);

/* permcost.c */
extern void permcostestimate(struct PlannerInfo *root, struct IndexPath *path,
							 double loop_count, Cost *indexStartupCost,
							 Cost *indexTotalCost, Selectivity *indexSelectivity,
							 double *indexCorrelation, double *indexPages);
extern bool PermPathTenantEqualities(struct IndexPath *path, List **quals);
extern void PermSampleNearPairs(Relation index, int k, double *pairs);

/* permvalidate.c */
extern bool permvalidate(Oid opclassoid);

/* permtablescan.c */
extern void PermCountWithin(Relation index, const uint64 *centers, int n, int k,
							double *counts);

/* permstore.c */

extern bool perm_store_vector_popcount;
extern bool PermIndexStoresCodes(Relation index);
extern PermStoreBuild *PermStoreBuildBegin(Relation index,
										   struct SharedFileSet *fileset,
										   int part);
extern void PermStoreBuildAdd(PermStoreBuild *sb, ItemPointer tid,
							  Datum value, bool isnull);
extern void PermStoreBuildShare(PermStoreBuild *sb, int64 *ncodes,
								int64 *nnulls);
extern void PermStoreBuildAddShared(PermStoreBuild *sb,
									struct SharedFileSet *fileset, int part,
									int64 ncodes, int64 nnulls);
extern void PermStoreBuildWrite(PermStoreBuild *sb, Relation index,
								ForkNumber fork, int width,
								PermMetaStore *store);
extern void PermStoreBuildEnd(PermStoreBuild *sb);
extern void PermStoreAppend(PermState *state, ItemPointer tid,
							const VarBit *code);
extern void PermStoreReadRowsWithoutCode(PermState *state,
										 BufferAccessStrategy strategy,
										 void (*callback) (void *arg, ItemPointer tid),
										 void *arg);
extern void PermStoreVacuum(Relation index, BufferAccessStrategy strategy,
							IndexBulkDeleteCallback callback,
							void *callback_state);
extern Buffer PermStoreReadPage(PermState *state, BlockNumber from,
								BlockNumber blkno, bool nulls, int lockmode,
								BufferAccessStrategy strategy);
extern void PermStoreCheck(Relation index, bool nulls, int64 *pages,
						   int64 *entries,
						   void (*callback) (void *arg, BlockNumber blkno,
											 int entry, ItemPointer tid,
											 const char *code),
						   void *arg);

/* permdescend.c */
extern double PermProbePages(PermState *state, int table, int root_level);
extern Buffer PermLeftmostPage(PermState *state, int table, int target_level);
extern void PermPrefetchLeaf(PermState *state, int table, const KeyTid *key);
extern Buffer PermDescend(PermState *state, int table, const KeyTid *key,
						  int target_level, int lockmode);
extern void PermProbeRange(PermState *state, int table, uint64 lo, uint64 hi,
						   uint64 query_key, uint16 query_extra,
						   int max_distance, PermMatchCallback callback,
						   void *arg, PermPinList *pins);
extern void PermProbeRanges(PermState *state, int table, const uint64 *lo,
							int n, uint64 low_mask, uint64 query_key,
							uint16 query_extra, int max_distance,
							PermMatchCallback callback, void *arg,
							PermPinList *pins);
extern void PermReleasePins(PermPinList *pins);

/* permpage.c */
pg_noreturn extern void PermReportCorruption(Relation index, BlockNumber blkno,
										 const char *detail);
extern const KeyTid PermMinKey;
extern PermPageOpaque PermCheckPageHeader(Relation index, Buffer buf,
										  const char *what);
extern void PermCheckPage(PermState *state, Buffer buf, int table, int level);
extern Buffer PermReadPageRecent(PermState *state, BlockNumber blkno,
								 Buffer *recent, int lockmode, int table,
								 int level);
extern Buffer PermReadPage(PermState *state, BlockNumber from,
						   BlockNumber blkno, int lockmode, int table,
						   int level);
extern Buffer PermStepRight(PermState *state, Buffer buf, int lockmode,
							int64 *steps);
extern void PermCountStep(PermState *state, BlockNumber blkno, int64 *steps);
extern void PermInitPage(Page page, uint16 flags, uint16 table, uint16 level);
extern Buffer PermNewBuffer(Relation index, ForkNumber forknum);
extern void PermReadInternalEntry(Page page, int i, KeyTid *out,
								  BlockNumber *child);
extern void PermWriteInternalEntry(char *slot, const KeyTid *key,
								   BlockNumber child);
extern void PermInternalAdd(Page page, const KeyTid *key, BlockNumber child);
extern void PermInternalSet(Page page, const char *entries, int n);
extern void PermPageReadKey(Page page, int i, KeyTid *out);
extern int	PermPageLowerBound(Page page, const KeyTid *key);
extern bool PermPageBeyondHighKey(Page page, const KeyTid *key);
extern bool PermPageIsStore(Relation index, Buffer buf);
extern BlockNumber PermLayoutBlocks(Relation index, BlockNumber *first,
									uint16 *flag);
extern double PermLayoutPageCount(Relation index);


/* permwidescan.c */
extern void PermWideProbeTenant(PermState *state, int t, uint64 tenant,
								uint64 key, uint16 extra, int radius,
								PermMatchCallback callback, void *arg,
								PermPinList *pins);
extern void PermWideTenantDistances(PermState *state, uint64 tenant,
									const uint64 *keys, const uint16 *extras,
									double rows, MemoryContext tmp,
									void (*callback) (void *arg,
													  ItemPointer tid,
													  int distance),
									void *arg);

/* permtenant.c */
extern void PermCheckTenantColumns(Relation index);
extern void PermCheckExclusionStrategies(Relation index, const uint16 *strats);
extern bool PermTenantValuesNull(Relation index, const bool *isnull);
extern bool PermTenantBits(Relation index, const Datum *values,
						   const bool *isnull, uint64 *bits);
extern bool PermRowKeys(Relation index, const PermLayout *layout,
						const Datum *values, const bool *isnull,
						uint64 *keys, uint16 *extras);
extern bool PermScanTenantBits(IndexScanDesc scan, uint64 *bits, bool *none);
extern bool PermTenantRowMatches(IndexScanDesc scan, const Datum *values,
								 const bool *isnull);


/* permowner.c */

/* Maintenance's part that runs a table owner's code (PermRunAsTableOwner) */
typedef void (*PermOwnerCode) (void *arg);

extern void PermRunAsTableOwner(Relation heap, PermOwnerCode code, void *arg);
extern void PermReadRowsAsOwner(Relation heap, Relation index,
								Snapshot snapshot, IndexBuildCallback callback,
								void *arg);

#endif							/* SIMHASH_PERM_H */
