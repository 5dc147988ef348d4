/*-------------------------------------------------------------------------
 *
 * pairs.h
 *		What the files of simhash_pairs() and simhash_clusters() share:
 *		pairs.c (the SQL functions and their results), pairssearch.c (reading
 *		the rows and searching one permuted table) and pairsparallel.c (the
 *		parallel search).
 *
 * IDENTIFICATION
 *	  src/pairs/pairs.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SIMHASH_PAIRS_H
#define SIMHASH_PAIRS_H

#include "postgres.h"

#include <math.h>

#include "access/parallel.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "optimizer/cost.h"
#include "optimizer/paths.h"
#include "port/atomics.h"
#include "storage/barrier.h"
#include "storage/buffile.h"
#include "storage/sharedfileset.h"
#include "storage/shm_mq.h"
#include "storage/shm_toc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/wait_event.h"
#include "utils/typcache.h"
#include "utils/varbit.h"

#include "fingerprint/fingerprint.h"
#include "index/perm.h"
#include "type/simhash.h"

/* The largest k: that of simhash_perm's design radius */
#define PAIRS_MAX_K		PERM_MAX_MAX_DISTANCE

/* A row is a KeyTid (recsort.h): its fingerprint (or permuted key) and heap TID */

/* Union-find over the rows that have a near-duplicate */
typedef struct UFEntry
{
	ItemPointerData tid;		/* hash key */
	int32		node;
} UFEntry;

/*
 * Parallel search (pairsparallel.c): what the leader shares with its
 * workers, in the parallel context's DSM segment, beside one message queue
 * per worker.
 */
#define PAIRS_SHARED_KEY		UINT64CONST(0x53494d5041495201)
#define PAIRS_QUEUES_KEY		UINT64CONST(0x53494d5041495202)
#define PAIRS_SCAN_KEY			UINT64CONST(0x53494d5041495203)
#define PAIRS_QUEUE_SIZE		(64 * 1024)

/* A process's part of the parallel read: its rows are file "rows.<n>" */
typedef struct PairsPart
{
	bool		wrote;
	int64		nrows;
	SimhashVoter votes;
} PairsPart;

typedef struct PairsShared
{
	Oid			relid;
	AttrNumber	keyatt;
	AttrNumber	fpatt;
	Oid			keytype;
	int			k;
	bool		clusters;
	bool		inline_keys;
	bool		progress;
	instr_time	start;
	Barrier		read_done;		/* phase 1: every row is in a file */
	pg_atomic_uint32 keys_not_inline;	/* a key could not travel inline */
	pg_atomic_uint32 next_table;	/* the next table to search */
	pg_atomic_uint64 found;		/* pairs or links, all processes */
	pg_atomic_uint64 compared;
	SharedFileSet fileset;
	int			nparts;
	PairsPart	parts[FLEXIBLE_ARRAY_MEMBER];	/* 0: the leader */
} PairsShared;

/* A pair found by a worker, sent to the leader */
typedef struct PairsLink
{
	ItemPointerData a;
	ItemPointerData b;
	int32		distance;
} PairsLink;

/*
 * A row packed by simhash_rows_pack (pairspart.c): its fingerprint, the
 * length of its key's binary form (-1: NULL), both big-endian, and that form
 */
#define PAIRS_PACKED_HEADER		12

/* The distance of a worker's marker: a table searched */
#define PAIRS_TABLE_DONE		(-1)

/* Links a worker sends in one message */
#define PAIRS_LINKS_PER_MESSAGE	256

typedef struct PairsState PairsState;

/* The rows of a search of bit(n) codes (pairswide.c), held in memory */
typedef struct PairsWideRows
{
	int			width;			/* bits of every code; 0 until known */
	int			nbytes;			/* bytes of a code; 0 until the first */
	int64		n;
	int64		cap;
	int64		limit;			/* bytes: maintenance_work_mem */
	bits8	   *codes;			/* n codes of nbytes */
	ItemPointerData *pos;		/* each row's key, inline or spooled */
} PairsWideRows;

/* The relation and the two columns read */
typedef struct PairsSource
{
	Relation	rel;
	AttrNumber	keyatt;
	AttrNumber	fpatt;
	Oid			keytype;
	Oid			keycollation;
	FmgrInfo	keycmp;
	Snapshot	snapshot;
	TupleTableSlot *slot;
	bool		inline_keys;	/* pairs: records carry keys, not TIDs */
	const char *name;			/* for messages: relation "x", or the query */

	/*
	 * Rows read through the executor (pairsquery.c): records carry keys or
	 * positions in the key spool, not TIDs; rel is NULL for a query.
	 */
	bool		via_query;
	bool		packed;			/* its one column: rows simhash_rows_pack packed */
	FmgrInfo	keyrecv;		/* packed keys: the key type's receive function */
	Oid			keyioparam;
	struct PortalData *portal;	/* the open cursor, until every row is read */
	BufFile    *spool;
	int16		keylen;
	bool		keybyval;

	/*
	 * Pairs within each tenant (simhash_pairs(..., tenant => column)): the
	 * query's third column, by which its rows come ordered; FmgrInfo
	 * compares two tenants as the ORDER BY did
	 */
	bool		by_tenant;
	Oid			tenantcollation;
	FmgrInfo	tenantcmp;
} PairsSource;

/* The search: the layout, the rows, the sort of the table being searched */
typedef struct PairsSearch
{
	int			k;
	bool		clusters;		/* whole keys sorted, copies joined once */
	bool		progress;
	PermLayout	layout;
	PermPermutation *perm;		/* one per table (16 kB each) */
	uint64		earlier_mask[PERM_MAX_TABLES];	/* of the table being read */
	int			table;
	int64		work_bytes;
	RecStore   *rows;
	PairsWideRows *wide;		/* bit(n) codes: the search of pairswide.c */
	GroupSort  *sort;			/* of the tables, restarted for each */

	/*
	 * One part of a search spread over Citus workers (pairscitus.c): table
	 * t searches only the rows whose first prefix block falls to this
	 * part; 0 parts: every row.
	 */
	int			part;
	int			nparts;
	uint64		part_mask[PERM_MAX_TABLES];	/* each table's first block */
	int			part_salt[PERM_MAX_TABLES];	/* and that block's number */
	int64		compared;
	int64		found;
	bool		size_noticed;	/* pairs: the NOTICE of a huge result is out */
	instr_time	start;
} PairsSearch;

/*
 * Where the search hands what it finds: each pair within k (found), the
 * end of each table (table_done), and, between chunks of its work, a
 * chance to take in what others found (poll; NULL if none).  The leader's
 * sink makes result rows or cluster links (pairs.c), and polls its
 * workers when it has any (pairsparallel.c); a worker's sink sends to the
 * leader (pairsparallel.c).  The search knows none of them.
 */
typedef struct PairsSink
{
	void		(*found) (PairsState *ps, ItemPointer a, ItemPointer b,
						  int distance);
	void		(*table_done) (PairsState *ps, int partitions, int split);
	void		(*poll) (PairsState *ps);
} PairsSink;

/* The results: pairs as rows, or the union-find of clusters */
typedef struct PairsResult
{
	Tuplestorestate *tupstore;
	TupleDesc	tupdesc;
	HTAB	   *uf_hash;
	int32	   *parent;
	ItemPointerData *node_tid;
	int32		nnodes;
	int32		maxnodes;
} PairsResult;

/* The parallel search: the leader's and a worker's ends of the queues */
typedef struct PairsParallel
{
	PairsShared *shared;		/* NULL: one process */
	shm_mq_handle **queues;		/* leader: one from each worker */
	bool	   *queue_done;
	int			nqueues;
	int			tables_done;	/* leader: for the progress report */
	shm_mq_handle *out;			/* worker: to the leader */
	PairsLink  *links;			/* worker: links not sent yet */
	int			nlinks;
} PairsParallel;

struct PairsState
{
	PairsSource src;
	PairsSearch search;
	PairsSink	sink;
	PairsResult result;
	PairsParallel par;
	struct PairsCitus *citus;	/* the search on Citus workers, or NULL */
};

/*
 * Calls run down this list: pairs.c calls pairsparallel.c, pairscitus.c,
 * pairspart.c, pairsquery.c, pairswide.c and pairssearch.c;
 * pairsparallel.c calls pairssearch.c; pairscitus.c calls pairspart.c and
 * pairssearch.c; pairspart.c calls pairssearch.c;
 * pairsquery.c calls pairswide.c and pairssearch.c; pairswide.c calls
 * pairssearch.c (its clock); the searches reach the others only through
 * the sink.
 */

/* pairs.c: the SQL functions, the leader's sink */

/* pairsparallel.c: the parallel search */
extern ParallelContext *pairs_begin_parallel(PairsState *ps);
extern bool pairs_read_rows_parallel(PairsState *ps, ParallelTableScanDesc pscan, int part);
extern void pairs_end_parallel(PairsState *ps, ParallelContext *pcxt);
extern PGDLLEXPORT void simhash_pairs_worker(dsm_segment *seg, shm_toc *toc);

/* pairscitus.c: the search on Citus's workers, the coordinator's side */
extern void pairs_citus_init(void);
extern bool pairs_citus_plan(PairsState *ps, AttrNumber tenantatt);
extern void pairs_citus_search(PairsState *ps, ReturnSetInfo *rsinfo, bool singletons);

/* pairspart.c: what a part of that search runs on its node */
extern char *pairs_layout_text(const PermLayout *layout);
extern void pairs_part_begin(PairsState *ps, const char *layout, int part, int nparts);
extern int	pairs_fast_citus_poll(GucAction action);
extern void pairs_report_node_failure(const char *node, int port, const char *result);

/* pairsquery.c: reading the rows through the executor */
extern bool pairs_rows_elsewhere(Relation rel);
extern char *pairs_relation_query(Relation rel, AttrNumber keyatt, AttrNumber fpatt);
extern char *pairs_tenant_query(Relation rel, AttrNumber keyatt, AttrNumber fpatt,
								AttrNumber tenantatt);
extern void pairs_search_by_tenant(PairsState *ps);
extern void pairs_query_open(PairsState *ps, const char *query);
extern void pairs_read_rows_query(PairsState *ps);
extern Datum pairs_query_key(PairsState *ps, ItemPointer pos);
extern void pairs_query_singletons(PairsState *ps, Tuplestorestate *tupstore,
								   TupleDesc desc);

/* pairswide.c: the search of bit(n) codes */
extern void pairs_wide_begin(PairsState *ps, int width);
extern void pairs_wide_set_width(PairsState *ps, int width);
extern void pairs_wide_add(PairsState *ps, Datum code, const ItemPointerData *pos);
extern int64 pairs_wide_count(PairsState *ps);
extern void pairs_wide_search(PairsState *ps);

/* pairssearch.c: reading the rows, searching one permuted table */
extern double pairs_elapsed(PairsState *ps);
extern bool pairs_integer_key(PairsState *ps, Datum d, bool isnull, int64 limit,
							  int64 *v);
extern bool pairs_scan_rows(PairsState *ps, TableScanDesc scan, SimhashVoter *votes);
extern int	pairs_count_tables(PairsState *ps, int64 n);
extern void pairs_choose_layout(PairsState *ps, const SimhashVoter *votes,
								int64 nvoted, int64 n);
extern void pairs_set_layout(PairsState *ps, const PermLayout *layout);
extern uint64 pairs_prefix_mask(const PermLayout *layout, int t);
extern int	pairs_part_of(uint64 fp, uint64 mask, int salt, int nparts);
extern int	pairs_first_block(const PermLayout *layout, int t, uint64 *mask);
extern void pairs_report_read(PairsState *ps, const char *where);
extern void pairs_read_rows(PairsState *ps);
extern void pairs_report_table_done(PairsState *ps, int partitions, int split);
extern void pairs_search_table(PairsState *ps, int t);
extern void pairs_search_done(PairsState *ps);

#endif							/* SIMHASH_PAIRS_H */
