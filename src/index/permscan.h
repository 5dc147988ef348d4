/*-------------------------------------------------------------------------
 *
 * permscan.h
 *		simhash_perm: queries permuted for each table, their probes
 *		(permtablescan.c), lists of heap TIDs, and the scan state that the
 *		scan callbacks (permscan.c) and ordered scans (permtableknn.c) fill.
 *
 * IDENTIFICATION
 *	  src/index/permscan.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PERMQUERY_H
#define PERMQUERY_H

#include "access/relscan.h"
#include "utils/memutils.h"

#include "index/perm.h"

/* A list of heap TIDs */
typedef struct PermTidList
{
	ItemPointerData *tids;
	int64		n;
	int64		max;
} PermTidList;

/* One query as seen by one table */
typedef struct PermQuery
{
	uint64		center;
	int			radius;
	uint64		key[PERM_MAX_TABLES];	/* center permuted for each table */
} PermQuery;

/* Largest Hamming distance, and the number of distinct distances */
#define PERM_MAX_HAMMING	64
#define PERM_NDISTANCES		(PERM_MAX_HAMMING + 1)

/* A scan's qual on a bit(n) code: rows within radius of code */
typedef struct PermWideQual
{
	VarBit	   *code;
	int			radius;
} PermWideQual;

typedef struct PermScanOpaqueData
{
	MemoryContext cxt;			/* holds the match lists, reset on rescan */
	const PermEngine *engine;	/* the index's (PermState.engine) */
	PermState  *state;			/* the index's descriptor, as the scan
								 * (re)started: the engines read it, and
								 * ask the relation nothing */

	/*
	 * The scan's keys in the engine's form, prepared at every rescan (as
	 * spgrescan prepares its keys), so that gettuple and getbitmap read
	 * what the query asks without decoding it: the quals on the code (the
	 * 64-bit tables: permuted for every table; bit(n) substrings: as bit
	 * strings), and within a tenant the bits of its leading values.
	 */
	bool		qual_null;		/* a qual's value is NULL: nothing matches */
	PermQuery  *quals;			/* the tables' quals (nquals of them) */
	PermWideQual *wide_quals;	/* the substrings' quals on the code */
	int			nquals;
	bool		tenant_known;	/* an equality on every leading column */
	bool		tenant_none;	/* one that no row can satisfy */
	uint64		tenant;			/* their hash's bits (PermScanTenantBits) */
	bool		searched;

	/*
	 * An exclusion constraint's check (a dirty snapshot): the leaves where
	 * matches were found stay pinned until rescan or end (README.perm,
	 * "Exclusion constraints").
	 */
	bool		keep_pins;
	PermPinList pins;
	PermRowReader *rows;		/* reads a match's row, to recheck it; in the
								 * scan's own context, NULL until needed */

	/* unordered scans: every match, handed out in TID order */
	PermTidList matches;
	int64		next;

	/*
	 * Ordered scans.  queries[0] is the ORDER BY query (its radius: the
	 * farthest row the current read files), the others the scan's quals.
	 * found[d] holds the rows seen so far at distance d; every row within
	 * `complete` has been seen, rows within `emitted` - 1 have been handed
	 * out, and none beyond `cap` can pass the quals.  Rings file only rows
	 * within `ring_bound`, so they complete no farther than it.
	 */
	PermQuery  *queries;
	int			nqueries;
	bool		order_null;		/* ORDER BY fp <-> NULL: no order at all */
	bool		recheck_order;	/* the executor recomputes each distance */
	BlockNumber heap_nblocks;	/* the table had at least this many blocks */
	int			cap;
	int			complete;
	int			emitted;
	int			ring;			/* the next ring to read */
	int			ring_table;		/* its next table, when read table by table */
	int			ring_bound;		/* rings file rows this near; -1: not set */
	int			passes;			/* passes over one table whole so far */
	PermTidList found[PERM_NDISTANCES];
	bool		found_sorted[PERM_NDISTANCES];
	struct handed_hash *handed; /* the rows handed out (permtableknn.c) */

	/* an ordered scan of bit(n) codes (permwideknn.c), or NULL */
	struct PermWideOrder *wide;

	/* the rows whose fingerprint is NULL, handed out last */
	bool		nulls_read;
	PermTidList nulls;
} PermScanOpaqueData;

typedef PermScanOpaqueData *PermScanOpaque;

/* State of one search, shared with the probe callback */
typedef struct PermSearchState
{
	PermState  *state;			/* the index's descriptor */
	PermQuery  *queries;		/* queries[0] drives the probes */
	int			nqueries;
	int			table;			/* table being probed */
	PermMatchCallback callback;
	void	   *arg;
	PermPinList *pins;			/* leaves to keep pinned, or NULL */
} PermSearchState;

/* permtablescan.c */
extern void PermSearch(IndexScanDesc scan, PermMatchCallback callback, void *arg,
					   PermPinList *pins);
extern void PermSearchMatch(void *arg, ItemPointer tid, uint64 key, int distance);
extern void PermProbeNeighbours(Relation index, PermSearchState *ss,
								int prefix_bits, int flips, bool exact);
extern int64 PermNeighbourKeys(uint64 key, int high_bit, int low_bit,
							   int flips, bool exact, uint64 *out);
extern bool PermQualsToQueries(IndexScanDesc scan, PermState *state,
							   PermQuery *queries, int first);
extern int64 PermTidsSortUnique(ItemPointer tids, int64 n);
extern void PermTidListAdd(PermTidList *list, MemoryContext cxt,
						   ItemPointer tid);
extern void PermTidListSortUnique(PermTidList *list);
extern void PermSearchCenter(Relation index, uint64 center, int radius,
							 PermTidList *found);

/* A list of prefixes to probe, with room for all of them */
typedef struct PrefixList
{
	uint64	   *lo;
	int64		n;
} PrefixList;

/* permwideknn.c */
extern bool PermWideKnnGettuple(IndexScanDesc scan);
extern void PermWideEndScan(IndexScanDesc scan);

/* permwidestore.c */
typedef struct PermStoreScan PermStoreScan;
extern PermStoreScan *PermStoreScanBegin(PermState *state,
										 const VarBit *center,
										 const PermWideQual *quals, int nquals,
										 int from, int cap,
										 const ItemPointerData *handed,
										 int64 nhanded);
extern bool PermStoreScanNext(PermStoreScan *ss, ItemPointer tid,
							  int *distance);
extern void PermRefuseScanWithoutTenant(Relation index);
extern uint64 PermEqualityValue(ScanKey sk);
extern void PermSearchConstraint(PermState *state,
								 uint64 center, int radius,
								 PermTidList *found, PermPinList *pins);
extern void PermTidListAddRowsWithoutCode(PermState *state, PermTidList *list,
										  MemoryContext cxt,
										  BufferAccessStrategy strategy);
extern void PermStoreScanNulls(PermStoreScan *ss, PermTidList *nulls,
							   MemoryContext cxt);

/* permwidescan.c */
extern void PermWideSearch(IndexScanDesc scan, PermMatchCallback callback,
						   void *arg, PermPinList *pins);
extern int	PermWideScanQuals(IndexScanDesc scan, PermState *state,
							  PermWideQual *quals);
extern double PermWideTableLeaves(Relation index, int m);

/* permtableknn.c */
extern bool PermKnnGettuple(IndexScanDesc scan);
extern void PermScanReadNullRows(IndexScanDesc scan, PermScanOpaque so);
extern bool PermScanFirstHandout(PermScanOpaque so, ItemPointer tid);
extern void PermScanBeginRowReader(IndexScanDesc scan, PermScanOpaque so);
extern bool PermScanNextNullRow(IndexScanDesc scan, PermScanOpaque so,
							   bool once);

#endif							/* PERMQUERY_H */
