/*-------------------------------------------------------------------------
 *
 * pairs.c
 *		Every near-duplicate pair, and the clusters they form, over a table:
 *		simhash_pairs() and simhash_clusters().
 *
 * The batch mode of Manku, Jain and Das Sarma: instead of probing an index
 * once per row, sort the whole table once per permuted table and compare
 * neighbours.  With B blocks and C(B, k) tables whose sort keys start with
 * B - k blocks (the layout of simhash_perm, permlayout.c), two fingerprints
 * within distance k agree on all the leading blocks of at least one table
 * (README.perm, "Why the tables find every match"), so they fall into the
 * same group of equal prefixes in that table's sorted order.  Each group is
 * compared pair by pair.  A pair found in table t is reported only if t is
 * the first table where the two share a prefix, so each pair comes once.
 *
 * Memory.  The rows' (fingerprint, TID) records, 16 bytes each, are kept in
 * memory while they fit in half of work_mem and go to a temporary file
 * otherwise.  Each table's permuted records are put in order within the
 * other half (PermGroupSort, permsort.c): in memory when they fit, else
 * dealt to partitions by their leading bits, one temporary file each, and
 * each partition sorted in memory in turn, so the sorts stay within
 * work_mem whatever the table's size; a group of equal prefixes is held
 * whole (with B chosen so that groups are small).  Pairs need only the
 * groups together and sort by the prefix alone; clusters sort whole keys.
 *
 * Integer keys travel in the records in place of TIDs (inline_key), so a
 * pair found needs no second read of its rows.  Large tables are searched
 * by parallel workers too, a table each at a time (search_all).
 *
 * Clusters are the connected components of the pairs, kept in a union-find
 * over the rows that have a near-duplicate.  Identical fingerprints are
 * adjacent in every sorted order: each run of them is joined in one pass
 * and stands as one fingerprint in the group comparisons, so 100,000 copies
 * of one fingerprint cost 100,000 unions, not 5 billion comparisons.
 *
 * IDENTIFICATION
 *	  src/pairs.c
 *
 *-------------------------------------------------------------------------
 */
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
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/wait_event.h"
#include "utils/typcache.h"

#include "fingerprint.h"
#include "perm.h"
#include "simhash.h"

PG_FUNCTION_INFO_V1(simhash_pairs);
PG_FUNCTION_INFO_V1(simhash_clusters);

extern PGDLLEXPORT void simhash_pairs_worker(dsm_segment *seg, shm_toc *toc);

/* The largest k: that of simhash_perm's design radius */
#define PAIRS_MAX_K		PERM_MAX_MAX_DISTANCE

/* A row: its fingerprint (or permuted key) and heap TID */
typedef PermKey PairRec;

/* Union-find over the rows that have a near-duplicate */
typedef struct UFEntry
{
	ItemPointerData tid;		/* hash key */
	int32		node;
} UFEntry;

/*
 * Parallel search (see search_all): what the leader shares with its
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

/* The distance of a worker's marker: a table searched */
#define PAIRS_TABLE_DONE		(-1)

/* Links a worker sends in one message */
#define PAIRS_LINKS_PER_MESSAGE	256

typedef struct PairsState
{
	/* the source */
	Relation	rel;
	AttrNumber	keyatt;
	AttrNumber	fpatt;
	Oid			keytype;
	Snapshot	snapshot;
	TupleTableSlot *slot;
	FmgrInfo	keycmp;
	bool		inline_keys;	/* pairs: records carry keys, not TIDs */
	Oid			keycollation;

	/* the search */
	int			k;
	bool		clusters;
	bool		progress;
	PermLayout	layout;
	PermPermutation *perm;		/* one per table (16 kB each) */
	uint64		earlier_mask[PERM_MAX_TABLES];	/* of the table being read */
	int			table;
	int64		work_bytes;
	PermRecStore *rows;
	int64		compared;
	int64		found;
	instr_time	start;

	/* pairs: the result */
	Tuplestorestate *tupstore;
	TupleDesc	tupdesc;

	/* parallel search */
	PairsShared *shared;		/* NULL: one process */
	shm_mq_handle **queues;		/* leader: one from each worker */
	bool	   *queue_done;
	int			nqueues;
	shm_mq_handle *out;			/* worker: to the leader */
	PairsLink  *links;			/* worker: links not sent yet */
	int			nlinks;
	int			tables_done;	/* leader: for the progress report */

	/* clusters */
	HTAB	   *uf_hash;
	int32	   *parent;
	ItemPointerData *node_tid;
	int32		nnodes;
	int32		maxnodes;
} PairsState;

/*
 * Checks of the arguments and the table
 */

static AttrNumber
column_of(Relation rel, Name column, const char *role)
{
	AttrNumber	att = get_attnum(RelationGetRelid(rel), NameStr(*column));

	if (att == InvalidAttrNumber || att < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						NameStr(*column), RelationGetRelationName(rel)),
				 errdetail("It was given as the %s column.", role)));
	return att;
}

/* Is typid our simhash type (a 64-bit pass-by-value type of that name)? */
static bool
is_simhash_type(Oid typid)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	bool		result;
	Form_pg_type typ;

	if (!HeapTupleIsValid(tup))
		return false;
	typ = (Form_pg_type) GETSTRUCT(tup);
	result = strcmp(NameStr(typ->typname), "simhash") == 0 &&
		typ->typlen == sizeof(int64) && typ->typbyval;
	ReleaseSysCache(tup);
	return result;
}

static void
open_source(PairsState *ps, Oid relid, Name key, Name fp, int k)
{
	Oid			fptype;
	AclResult	aclresult;
	TypeCacheEntry *tce;

	if (k < 0 || k > PAIRS_MAX_K)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be between 0 and %d, not %d", PAIRS_MAX_K, k)));

	ps->rel = table_open(relid, AccessShareLock);
	if (ps->rel->rd_rel->relkind != RELKIND_RELATION &&
		ps->rel->rd_rel->relkind != RELKIND_MATVIEW)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table or materialized view",
						RelationGetRelationName(ps->rel)),
				 errhint("For a partitioned table, a view or a query, call the function on each partition or on a table made from the query.")));
	aclresult = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, RelationGetRelationName(ps->rel));
	if (check_enable_rls(relid, InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("\"%s\" has row-level security, which this function cannot apply",
						RelationGetRelationName(ps->rel))));

	ps->keyatt = column_of(ps->rel, key, "key");
	ps->fpatt = column_of(ps->rel, fp, "fingerprint");
	ps->keytype = TupleDescAttr(RelationGetDescr(ps->rel), ps->keyatt - 1)->atttypid;
	ps->keycollation = TupleDescAttr(RelationGetDescr(ps->rel), ps->keyatt - 1)->attcollation;
	fptype = TupleDescAttr(RelationGetDescr(ps->rel), ps->fpatt - 1)->atttypid;
	if (fptype != INT8OID && !is_simhash_type(fptype))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" is of type %s, not simhash or bigint",
						NameStr(*fp), format_type_be(fptype))));

	tce = lookup_type_cache(ps->keytype, TYPECACHE_CMP_PROC_FINFO);
	if (!OidIsValid(tce->cmp_proc_finfo.fn_oid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("key column \"%s\" is of type %s, which has no ordering",
						NameStr(*key), format_type_be(ps->keytype))));
	fmgr_info_copy(&ps->keycmp, &tce->cmp_proc_finfo, CurrentMemoryContext);

	ps->inline_keys = !ps->clusters &&
		(ps->keytype == INT8OID || ps->keytype == INT4OID || ps->keytype == INT2OID);
	ps->k = k;
	ps->snapshot = GetActiveSnapshot();
	ps->slot = table_slot_create(ps->rel, NULL);
	ps->work_bytes = (int64) work_mem * 1024;
	INSTR_TIME_SET_CURRENT(ps->start);
}

static double
elapsed(PairsState *ps)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, ps->start);
	return INSTR_TIME_GET_DOUBLE(now);
}

/*
 * The number of blocks B for n rows and radius k.  Each of the C(B, k)
 * tables costs a pass over every row (permuting, sorting, the walk: about
 * sixty comparisons' worth a row, measured with whole-key sorts) and
 * the comparisons in its groups of equal prefixes, n / 2^P a row for
 * P = 64 (B - k) / B prefix bits, halved.  The cheapest B within
 * simhash_perm's limits (16 blocks, 64 tables) wins: at k = 3, B = 4 up to
 * a few million rows, then B = 5.
 */
static int
choose_blocks(int64 n, int k)
{
	double		rows = Max(2.0, (double) n);
	double		best_cost = -1;
	int			best = k + 1;
	int			b;

	for (b = k + 1; b <= PERM_MAX_BLOCKS; b++)
	{
		int			tables = PermCountTables(b, k);
		double		prefix = 64.0 * (b - k) / b;
		double		cost;

		if (tables < 0)
			break;				/* more than PERM_MAX_TABLES */
		cost = tables * (60.0 + rows / pow(2.0, prefix) / 2.0);
		if (best_cost < 0 || cost < best_cost)
		{
			best_cost = cost;
			best = b;
		}
	}
	return best;
}

static void
make_permutations(PairsState *ps)
{
	int			i;

	ps->perm = palloc(ps->layout.ntables * sizeof(PermPermutation));
	for (i = 0; i < ps->layout.ntables; i++)
		PermMakePermutation(ps->layout.bits[i], &ps->perm[i]);
}

/*
 * Integer keys of pairs travel in the records in place of the rows' TIDs,
 * as 48-bit integers in the TID's six bytes: a pair found is then a row of
 * the result at once, where fetching its two rows' keys again from the
 * table cost more than finding it (random reads, 4 us a pair at 1M rows).
 * The rows were read under the statement's snapshot, so they need no
 * second look.  A NULL key or one beyond 48 bits sends the whole read back
 * to TIDs.
 */
#define INLINE_KEY_LIMIT	(INT64CONST(1) << 47)

static bool
inline_key(PairsState *ps, ItemPointer slotpos)
{
	bool		isnull;
	Datum		d = slot_getattr(ps->slot, ps->keyatt, &isnull);
	int64		v;
	uint64		u;

	if (isnull)
		return false;
	if (ps->keytype == INT8OID)
		v = DatumGetInt64(d);
	else if (ps->keytype == INT4OID)
		v = DatumGetInt32(d);
	else
		v = DatumGetInt16(d);
	if (v < -INLINE_KEY_LIMIT || v >= INLINE_KEY_LIMIT)
		return false;
	u = (uint64) v;
	slotpos->ip_blkid.bi_hi = (uint16) (u >> 32);
	slotpos->ip_blkid.bi_lo = (uint16) (u >> 16);
	slotpos->ip_posid = (uint16) u;
	return true;
}

/* The key put in a record by inline_key() */
static int64
inlined_key(const ItemPointerData *slotpos)
{
	uint64		u = ((uint64) slotpos->ip_blkid.bi_hi << 32) |
		((uint64) slotpos->ip_blkid.bi_lo << 16) | slotpos->ip_posid;

	/* sign-extend the 48 bits */
	return (int64) (u << 16) >> 16;
}

static Datum
inlined_key_datum(PairsState *ps, const ItemPointerData *slotpos)
{
	int64		v = inlined_key(slotpos);

	if (ps->keytype == INT8OID)
		return Int64GetDatum(v);
	if (ps->keytype == INT4OID)
		return Int32GetDatum((int32) v);
	return Int16GetDatum((int16) v);
}

/*
 * Reading the table: every row with a fingerprint from scan into ps->rows,
 * and how often each bit is set (for the layout) into votes.  False when a
 * key cannot travel inline (the read must start again with TIDs).
 */
static bool
scan_rows(PairsState *ps, TableScanDesc scan, SimhashVoter *votes)
{
	uint64		batch[1024];
	int			nbatch = 0;

	SimhashVoterInit(votes);
	while (table_scan_getnextslot(scan, ForwardScanDirection, ps->slot))
	{
		bool		isnull;
		Datum		d = slot_getattr(ps->slot, ps->fpatt, &isnull);
		PairRec		rec;

		CHECK_FOR_INTERRUPTS();
		if (isnull)
			continue;
		rec.key = (uint64) DatumGetInt64(d);
		if (!ps->inline_keys)
			rec.tid = ps->slot->tts_tid;
		else if (!inline_key(ps, &rec.tid))
			return false;
		PermRecStoreAdd(ps->rows, &rec);
		batch[nbatch++] = rec.key;
		if (nbatch == lengthof(batch))
		{
			SimhashVoterAddBatch(votes, batch, nbatch);
			nbatch = 0;
		}
	}
	SimhashVoterAddBatch(votes, batch, nbatch);
	return true;
}

/* The layout of n rows with these votes, and its permutations */
static void
choose_layout(PairsState *ps, const SimhashVoter *votes, int64 n)
{
	PermChooseLayoutFromVotes(ps->k, choose_blocks(n, ps->k), votes, n, &ps->layout);
	make_permutations(ps);
}

static void
report_read(PairsState *ps, const char *where)
{
	if (ps->progress)
		ereport(NOTICE,
				(errmsg("simhash: read %lld rows with a fingerprint",
						(long long) PermRecStoreCount(ps->rows)),
				 errdetail("%.3f s; %s.", elapsed(ps), where)));
}

/* One process reads the table: half of work_mem keeps the rows */
static void
read_rows(PairsState *ps)
{
	SimhashVoter votes;

	for (;;)
	{
		TableScanDesc scan;
		bool		ok;

		if (ps->rows)
			PermRecStoreEnd(ps->rows);
		ps->rows = PermRecStoreBegin(ps->work_bytes / 2);
		scan = table_beginscan(ps->rel, ps->snapshot, 0, NULL);
		ok = scan_rows(ps, scan, &votes);
		table_endscan(scan);
		if (ok)
			break;
		/* a NULL or a huge key: read again, keeping TIDs */
		ps->inline_keys = false;
	}
	report_read(ps, PermRecStoreSpilled(ps->rows) ?
				"more than half of work_mem: kept in a temporary file" :
				"kept in memory");
	choose_layout(ps, &votes, PermRecStoreCount(ps->rows));
}

/* The fingerprint bits of table t's prefix, as a mask on fingerprints */
static uint64
prefix_mask(PermLayout *layout, int t)
{
	uint64		mask = 0;
	int			i;

	for (i = 0; i < layout->prefix_bits[t]; i++)
		mask |= UINT64CONST(1) << layout->bits[t][i];
	return mask;
}

/*
 * Results
 */

/* Fetch a row's key, copied into the current memory context */
static Datum
fetch_key(PairsState *ps, ItemPointer tid)
{
	bool		isnull;
	Datum		d;
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(ps->rel), ps->keyatt - 1);

	if (!table_tuple_fetch_row_version(ps->rel, tid, ps->snapshot, ps->slot))
		elog(ERROR, "row (%u,%u) of \"%s\" vanished during the search",
			 ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid),
			 RelationGetRelationName(ps->rel));
	d = slot_getattr(ps->slot, ps->keyatt, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("key column \"%s\" of \"%s\" is NULL in a row with a near-duplicate",
						NameStr(att->attname), RelationGetRelationName(ps->rel))));
	return datumCopy(d, att->attbyval, att->attlen);
}

static int
compare_keys(PairsState *ps, Datum a, Datum b)
{
	return DatumGetInt32(FunctionCall2Coll(&ps->keycmp, ps->keycollation, a, b));
}

/* A pair of rows within k: a row of the result, the smaller key first */
static void
emit_pair(PairsState *ps, ItemPointer x, ItemPointer y, int distance)
{
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	Datum		a;
	Datum		b;
	bool		swap;

	if (ps->inline_keys)
	{
		a = inlined_key_datum(ps, x);
		b = inlined_key_datum(ps, y);
		swap = inlined_key(x) > inlined_key(y);
	}
	else
	{
		a = fetch_key(ps, x);
		b = fetch_key(ps, y);
		swap = compare_keys(ps, a, b) > 0;
	}
	if (swap)
	{
		values[0] = b;
		values[1] = a;
	}
	else
	{
		values[0] = a;
		values[1] = b;
	}
	values[2] = Int32GetDatum(distance);
	tuplestore_putvalues(ps->tupstore, ps->tupdesc, values, nulls);
}

/* The union-find node of a row, created on first use */
static int32
uf_node(PairsState *ps, ItemPointer tid)
{
	bool		found;
	UFEntry    *e = hash_search(ps->uf_hash, tid, HASH_ENTER, &found);

	if (!found)
	{
		if (ps->nnodes == ps->maxnodes)
		{
			ps->maxnodes = Max(1024, ps->maxnodes * 2);
			ps->parent = ps->parent ?
				repalloc_huge(ps->parent, ps->maxnodes * sizeof(int32)) :
				palloc_extended(ps->maxnodes * sizeof(int32), MCXT_ALLOC_HUGE);
			ps->node_tid = ps->node_tid ?
				repalloc_huge(ps->node_tid, ps->maxnodes * sizeof(ItemPointerData)) :
				palloc_extended(ps->maxnodes * sizeof(ItemPointerData), MCXT_ALLOC_HUGE);
		}
		e->node = ps->nnodes++;
		ps->parent[e->node] = e->node;
		ps->node_tid[e->node] = *tid;
	}
	return e->node;
}

static int32
uf_find(PairsState *ps, int32 x)
{
	int32		root = x;

	while (ps->parent[root] != root)
		root = ps->parent[root];
	while (ps->parent[x] != root)
	{
		int32		next = ps->parent[x];

		ps->parent[x] = root;
		x = next;
	}
	return root;
}

static void
uf_union(PairsState *ps, ItemPointer x, ItemPointer y)
{
	int32		a = uf_find(ps, uf_node(ps, x));
	int32		b = uf_find(ps, uf_node(ps, y));

	/* the older root stays, so long chains of identical rows stay flat */
	if (a != b)
		ps->parent[Max(a, b)] = Min(a, b);
}

/*
 * Progress: the leader reports each table searched, its own or a worker's,
 * in the order they are done, with the counts of all processes.
 */
static void
report_table_done(PairsState *ps, int partitions)
{
	int64		found = ps->found;
	int64		compared = ps->compared;

	ps->tables_done++;
	if (!ps->progress)
		return;
	if (ps->shared)
	{
		found = pg_atomic_read_u64(&ps->shared->found);
		compared = pg_atomic_read_u64(&ps->shared->compared);
	}
	ereport(NOTICE,
			(errmsg("simhash: %d of %d tables sorted and compared",
					ps->tables_done, ps->layout.ntables),
			 errdetail("%.3f s; %lld %s so far, %lld comparisons%s.",
					   elapsed(ps), (long long) found,
					   ps->clusters ? "links" : "pairs", (long long) compared,
					   partitions > 0 ? psprintf(", sorted in %d partitions", partitions) :
					   partitions < 0 ? ", by a parallel worker" : "")));
}

/* A worker's links go to the leader, a message at a time */
static void
send_links(PairsState *ps)
{
	shm_mq_result r = shm_mq_send(ps->out, ps->nlinks * sizeof(PairsLink),
								  ps->links, false, true);

	if (r != SHM_MQ_SUCCESS)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("simhash: the leader of the parallel search stopped reading")));
	ps->nlinks = 0;
}

/*
 * Two rows within k, found: a row of the result or a link of the clusters,
 * in the leader; sent to the leader from a worker.
 */
static void
found_link(PairsState *ps, ItemPointer x, ItemPointer y, int distance)
{
	if (ps->out)
	{
		PairsLink  *l = &ps->links[ps->nlinks++];

		l->a = *x;
		l->b = *y;
		l->distance = distance;
		if (ps->nlinks == PAIRS_LINKS_PER_MESSAGE)
			send_links(ps);
	}
	else if (ps->clusters)
		uf_union(ps, x, y);
	else
		emit_pair(ps, x, y, distance);
}

/*
 * The leader takes what its workers sent, without waiting or, at the end,
 * until every worker has detached from its queue.
 */
static void
poll_workers(PairsState *ps, bool wait)
{
	int			i;

	for (i = 0; i < ps->nqueues; i++)
	{
		while (!ps->queue_done[i])
		{
			Size		nbytes;
			void	   *data;
			PairsLink  *l;
			Size		n;
			shm_mq_result r = shm_mq_receive(ps->queues[i], &nbytes, &data, !wait);

			if (r == SHM_MQ_WOULD_BLOCK)
				break;
			if (r == SHM_MQ_DETACHED)
			{
				ps->queue_done[i] = true;
				break;
			}
			if (nbytes % sizeof(PairsLink) != 0)
				elog(ERROR, "simhash: message of %zu bytes from a parallel worker", nbytes);
			l = (PairsLink *) data;
			for (n = 0; n < nbytes / sizeof(PairsLink); n++)
			{
				if (l[n].distance == PAIRS_TABLE_DONE)
					report_table_done(ps, -1);
				else if (ps->clusters)
					uf_union(ps, &l[n].a, &l[n].b);
				else
					emit_pair(ps, &l[n].a, &l[n].b, l[n].distance);
			}
		}
	}
}

/*
 * Compare one group of equal prefixes pair by pair.  In cluster mode the
 * group holds one record per distinct fingerprint.
 */
SIMHASH_POPCNT
static void
compare_group(PairsState *ps, PairRec *group, int n)
{
	int			i,
				j,
				e;
	int			nearlier = ps->table;

	for (i = 0; i < n; i++)
	{
		for (j = i + 1; j < n; j++)
		{
			uint64		diff = group[i].key ^ group[j].key;
			int			d = simhash_hamming(group[i].key, group[j].key);
			bool		seen = false;

			if (d > ps->k)
				continue;
			/* found already in a table where the two share a prefix? */
			for (e = 0; e < nearlier; e++)
				if ((diff & ps->earlier_mask[e]) == 0)
				{
					seen = true;
					break;
				}
			if (seen)
				continue;
			ps->found++;
			found_link(ps, &group[i].tid, &group[j].tid, d);
		}
		if ((i & 255) == 255)
			CHECK_FOR_INTERRUPTS();
	}
	ps->compared += (int64) n * (n - 1) / 2;
}

/* State of the walk over one table's sorted records */
typedef struct GroupWalk
{
	PairsState *ps;
	uint64		prefix_mask;	/* top bits of the permuted key */
	PairRec    *group;
	int			n;
	int			max;
	bool		any;
	PairRec		last;			/* the previous record */
} GroupWalk;

static void
group_append(GroupWalk *w, const PairRec *rec)
{
	if (w->n == w->max)
	{
		w->max = Max(64, w->max * 2);
		w->group = w->group ? repalloc_huge(w->group, w->max * sizeof(PairRec)) :
			palloc_extended(w->max * sizeof(PairRec), MCXT_ALLOC_HUGE);
	}
	w->group[w->n++] = *rec;
}

/*
 * Clusters: the records one by one, in order of whole keys.  A copy of the
 * previous fingerprint is joined to it once, in table 0, and left out of
 * the group.
 */
static void
walk_add(GroupWalk *w, const PairRec *rec)
{
	PairsState *ps = w->ps;

	if (w->any && ((rec->key ^ w->last.key) & w->prefix_mask) != 0)
	{
		compare_group(ps, w->group, w->n);
		w->n = 0;
	}
	if (w->any && rec->key == w->last.key)
	{
		if (ps->table == 0)
			found_link(ps, &w->last.tid, (ItemPointer) &rec->tid, 0);
		return;
	}
	group_append(w, rec);
	w->last = *rec;
	w->any = true;
}

/*
 * Pairs: a chunk of records in order of their prefixes.  A group lying
 * whole in the chunk is compared where it lies; one still open at the
 * chunk's end is copied aside and completed from the next chunk.
 */
static void
walk_chunk(GroupWalk *w, PairRec *recs, int64 n)
{
	int64		i = 0;
	int64		groups = 0;

	if (w->n > 0)
	{
		while (i < n && ((recs[i].key ^ w->group[0].key) & w->prefix_mask) == 0)
			group_append(w, &recs[i++]);
		if (i == n)
			return;
		compare_group(w->ps, w->group, w->n);
		w->n = 0;
	}
	while (i < n)
	{
		uint64		prefix = recs[i].key & w->prefix_mask;
		int64		j = i + 1;

		while (j < n && (recs[j].key & w->prefix_mask) == prefix)
			j++;
		if (j == n)
		{
			while (i < n)
				group_append(w, &recs[i++]);
			return;
		}
		if (j - i > 1)
			compare_group(w->ps, recs + i, j - i);
		i = j;
		if ((++groups & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Search table t: sort its records (permuted) within half of work_mem,
 * spilling partitions to temporary files, and walk them in order of their
 * prefixes.
 */
static void
search_table(PairsState *ps, int t)
{
	PermGroupSort *gs;
	GroupWalk	w = {0};
	PairRec		rec;
	PairRec    *chunk;
	int64		n;
	int64		i = 0;
	int			e;
	int			spilled;
	int64		found_before = ps->found;
	int64		compared_before = ps->compared;

	ps->table = t;
	for (e = 0; e < t; e++)
		ps->earlier_mask[e] = PermPermute(&ps->perm[t], prefix_mask(&ps->layout, e));
	w.ps = ps;
	w.prefix_mask = ps->layout.prefix_bits[t] >= 64 ? PG_UINT64_MAX :
		~(PG_UINT64_MAX >> ps->layout.prefix_bits[t]);

	/*
	 * Pairs need each group of equal prefixes together, in any order within;
	 * clusters need copies of one fingerprint next to each other, so they
	 * sort whole keys.
	 */
	gs = PermGroupSortBegin(ps->work_bytes / 2, PermRecStoreCount(ps->rows),
							ps->clusters ? 64 : ps->layout.prefix_bits[t]);
	PermRecStoreRewind(ps->rows);
	while (PermRecStoreNext(ps->rows, &rec))
	{
		if ((++i & 65535) == 0)
		{
			CHECK_FOR_INTERRUPTS();
			poll_workers(ps, false);
		}
		rec.key = PermPermute(&ps->perm[t], rec.key);
		PermGroupSortPut(gs, &rec);
	}
	PermGroupSortFinish(gs);
	spilled = PermGroupSortPartitions(gs);
	while ((n = PermGroupSortNextChunk(gs, &chunk)) > 0)
	{
		CHECK_FOR_INTERRUPTS();
		poll_workers(ps, false);
		if (!ps->clusters)
			walk_chunk(&w, chunk, n);
		else
			for (i = 0; i < n; i++)
			{
				if ((i & 65535) == 65535)
					CHECK_FOR_INTERRUPTS();
				walk_add(&w, &chunk[i]);
			}
	}
	PermGroupSortEnd(gs);
	if (w.n > 0)
		compare_group(ps, w.group, w.n);
	if (w.group)
		pfree(w.group);

	if (ps->shared)
	{
		pg_atomic_add_fetch_u64(&ps->shared->found, ps->found - found_before);
		pg_atomic_add_fetch_u64(&ps->shared->compared, ps->compared - compared_before);
	}
	if (ps->out)
	{
		/* a worker: the leader reports the table, told by a marker */
		PairsLink  *l = &ps->links[ps->nlinks++];

		memset(l, 0, sizeof(PairsLink));
		l->distance = PAIRS_TABLE_DONE;
		send_links(ps);
	}
	else
		report_table_done(ps, spilled);
}

/*
 * Parallel search.  The tables are independent: a pair is reported by the
 * first table where its two rows share a prefix, which each table knows
 * by itself.  So the leader starts up to max_parallel_workers_per_gather
 * workers at once, and every process:
 *
 *	1. reads its share of the table's pages (a parallel scan), into its own
 *	   file of a shared file set, counting how often each bit is set;
 *	2. waits at a barrier until every row is read, then sums the counts and
 *	   chooses the layout, the same in every process since the sums are;
 *	3. takes the next table not taken (an atomic counter) and searches it,
 *	   reading every process's file, sorting within its own work_mem.
 *
 * Workers send what they find, as pairs of TIDs (or keys), through one
 * message queue each; the leader turns them into result rows or cluster
 * links between its own chunks of work, and at the end until every worker
 * has finished.  Errors in a worker reach the leader through the parallel
 * context, as in a parallel query.
 *
 * Tables smaller than min_parallel_table_scan_size (8MB by default),
 * temporary tables (in the leader's local buffers), a call from within a
 * parallel operation, or max_parallel_workers_per_gather = 0 keep the search
 * in one process.  If a key cannot travel inline, every process
 * stops after the read and the leader reads again alone, with TIDs.
 */
static ParallelContext *
begin_parallel(PairsState *ps)
{
	int			nworkers = max_parallel_workers_per_gather;
	ParallelContext *pcxt;
	PairsShared *shared;
	Size		shared_size;
	Size		scan_size;
	ParallelTableScanDesc pscan;
	char	   *queues;
	int			i;

	if (nworkers <= 0 || IsInParallelMode() ||
		RelationUsesLocalBuffers(ps->rel) ||
		RelationGetNumberOfBlocks(ps->rel) < (BlockNumber) min_parallel_table_scan_size)
		return NULL;
	EnterParallelMode();
	pcxt = CreateParallelContext("simhash", "simhash_pairs_worker", nworkers);
	shared_size = add_size(offsetof(PairsShared, parts),
						   mul_size(nworkers + 1, sizeof(PairsPart)));
	scan_size = table_parallelscan_estimate(ps->rel, ps->snapshot);
	shm_toc_estimate_chunk(&pcxt->estimator, shared_size);
	shm_toc_estimate_chunk(&pcxt->estimator, scan_size);
	shm_toc_estimate_chunk(&pcxt->estimator, mul_size(PAIRS_QUEUE_SIZE, nworkers));
	shm_toc_estimate_keys(&pcxt->estimator, 3);
	InitializeParallelDSM(pcxt);
	if (pcxt->seg == NULL)
	{
		/* no dynamic shared memory to be had: search alone */
		DestroyParallelContext(pcxt);
		ExitParallelMode();
		return NULL;
	}

	shared = shm_toc_allocate(pcxt->toc, shared_size);
	memset(shared, 0, shared_size);
	shared->relid = RelationGetRelid(ps->rel);
	shared->keyatt = ps->keyatt;
	shared->fpatt = ps->fpatt;
	shared->keytype = ps->keytype;
	shared->k = ps->k;
	shared->clusters = ps->clusters;
	shared->inline_keys = ps->inline_keys;
	shared->progress = ps->progress;
	shared->start = ps->start;
	BarrierInit(&shared->read_done, 0);
	pg_atomic_init_u32(&shared->keys_not_inline, 0);
	pg_atomic_init_u32(&shared->next_table, 0);
	pg_atomic_init_u64(&shared->found, 0);
	pg_atomic_init_u64(&shared->compared, 0);
	SharedFileSetInit(&shared->fileset, pcxt->seg);
	shared->nparts = nworkers + 1;
	shm_toc_insert(pcxt->toc, PAIRS_SHARED_KEY, shared);

	pscan = shm_toc_allocate(pcxt->toc, scan_size);
	table_parallelscan_initialize(ps->rel, pscan, ps->snapshot);
	shm_toc_insert(pcxt->toc, PAIRS_SCAN_KEY, pscan);

	queues = shm_toc_allocate(pcxt->toc, mul_size(PAIRS_QUEUE_SIZE, nworkers));
	for (i = 0; i < nworkers; i++)
	{
		shm_mq	   *mq = shm_mq_create(queues + (Size) i * PAIRS_QUEUE_SIZE,
									   PAIRS_QUEUE_SIZE);

		shm_mq_set_receiver(mq, MyProc);
	}
	shm_toc_insert(pcxt->toc, PAIRS_QUEUES_KEY, queues);
	ps->shared = shared;

	LaunchParallelWorkers(pcxt);
	ps->nqueues = pcxt->nworkers_launched;
	ps->queues = palloc(Max(ps->nqueues, 1) * sizeof(shm_mq_handle *));
	ps->queue_done = palloc0(Max(ps->nqueues, 1) * sizeof(bool));
	for (i = 0; i < ps->nqueues; i++)
		ps->queues[i] = shm_mq_attach((shm_mq *) (queues + (Size) i * PAIRS_QUEUE_SIZE),
									  pcxt->seg, pcxt->worker[i].bgwhandle);
	return pcxt;
}

static char *
part_file_name(int part)
{
	return psprintf("rows.%d", part);
}

/*
 * Steps 1 and 2 for process number part (0: the leader).  False when a key
 * could not travel inline: the search must start again with TIDs.
 */
static bool
read_rows_parallel(PairsState *ps, ParallelTableScanDesc pscan, int part)
{
	PairsShared *shared = ps->shared;
	SimhashVoter votes;
	BufFile   **files;
	int64	   *counts;
	int			nfiles = 0;
	int			p;
	int			i;

	if (BarrierAttach(&shared->read_done) == 0)
	{
		BufFile    *file = BufFileCreateFileSet(&shared->fileset.fs,
												part_file_name(part));
		TableScanDesc scan = table_beginscan_parallel(ps->rel, pscan);

		ps->rows = PermRecStoreBeginOnFile(file);
		if (!scan_rows(ps, scan, &shared->parts[part].votes))
			pg_atomic_write_u32(&shared->keys_not_inline, 1);
		table_endscan(scan);
		BufFileExportFileSet(file);
		shared->parts[part].nrows = PermRecStoreCount(ps->rows);
		shared->parts[part].wrote = true;
		PermRecStoreEnd(ps->rows);
		ps->rows = NULL;
		BarrierArriveAndWait(&shared->read_done, PG_WAIT_EXTENSION);
	}
	BarrierDetach(&shared->read_done);
	if (pg_atomic_read_u32(&shared->keys_not_inline) != 0)
		return false;

	/* everyone's rows, and the sums of everyone's counts */
	SimhashVoterInit(&votes);
	files = palloc(shared->nparts * sizeof(BufFile *));
	counts = palloc(shared->nparts * sizeof(int64));
	for (p = 0; p < shared->nparts; p++)
	{
		if (!shared->parts[p].wrote)
			continue;
		for (i = 0; i < 64; i++)
			votes.counts[i] += shared->parts[p].votes.counts[i];
		votes.unit_votes += shared->parts[p].votes.unit_votes;
		files[nfiles] = BufFileOpenFileSet(&shared->fileset.fs, part_file_name(p),
										   O_RDONLY, false);
		counts[nfiles++] = shared->parts[p].nrows;
	}
	ps->rows = PermRecStoreOpenFiles(files, counts, nfiles);
	choose_layout(ps, &votes, PermRecStoreCount(ps->rows));
	return true;
}

static void
end_parallel(PairsState *ps, ParallelContext *pcxt)
{
	poll_workers(ps, true);
	WaitForParallelWorkersToFinish(pcxt);
	/* the shared files go with the segment: close them first */
	if (ps->rows)
		PermRecStoreEnd(ps->rows);
	ps->rows = NULL;
	DestroyParallelContext(pcxt);
	ExitParallelMode();
	ps->shared = NULL;
	ps->nqueues = 0;
}

/* A parallel worker: reads its share, then searches tables until none is left */
void
simhash_pairs_worker(dsm_segment *seg, shm_toc *toc)
{
	PairsShared *shared = shm_toc_lookup(toc, PAIRS_SHARED_KEY, false);
	ParallelTableScanDesc pscan = shm_toc_lookup(toc, PAIRS_SCAN_KEY, false);
	char	   *queues = shm_toc_lookup(toc, PAIRS_QUEUES_KEY, false);
	shm_mq	   *mq = (shm_mq *) (queues + (Size) ParallelWorkerNumber * PAIRS_QUEUE_SIZE);
	PairsState	ps = {0};
	uint32		t;

	shm_mq_set_sender(mq, MyProc);
	ps.out = shm_mq_attach(mq, seg, NULL);
	ps.links = palloc(PAIRS_LINKS_PER_MESSAGE * sizeof(PairsLink));
	SharedFileSetAttach(&shared->fileset, seg);
	ps.shared = shared;
	ps.rel = table_open(shared->relid, AccessShareLock);
	ps.slot = table_slot_create(ps.rel, NULL);
	ps.keyatt = shared->keyatt;
	ps.fpatt = shared->fpatt;
	ps.keytype = shared->keytype;
	ps.k = shared->k;
	ps.clusters = shared->clusters;
	ps.inline_keys = shared->inline_keys;
	ps.progress = shared->progress;
	ps.start = shared->start;
	ps.work_bytes = (int64) work_mem * 1024;

	if (read_rows_parallel(&ps, pscan, ParallelWorkerNumber + 1))
	{
		while ((t = pg_atomic_fetch_add_u32(&shared->next_table, 1)) <
			   (uint32) ps.layout.ntables)
			search_table(&ps, (int) t);
		if (ps.nlinks > 0)
			send_links(&ps);
		PermRecStoreEnd(ps.rows);
	}
	ExecDropSingleTupleTableSlot(ps.slot);
	table_close(ps.rel, AccessShareLock);
	shm_mq_detach(ps.out);
}

static void
search_all(PairsState *ps)
{
	ParallelContext *pcxt = begin_parallel(ps);
	int			t;

	if (pcxt != NULL)
	{
		ParallelTableScanDesc pscan = shm_toc_lookup(pcxt->toc, PAIRS_SCAN_KEY, false);

		if (read_rows_parallel(ps, pscan, 0))
		{
			report_read(ps, "each process keeps its share in a temporary file");
			if (ps->progress)
				ereport(NOTICE,
						(errmsg("simhash: searching with %d parallel workers", ps->nqueues)));
		}
		else
		{
			end_parallel(ps, pcxt);
			pcxt = NULL;
			ps->inline_keys = false;
		}
	}
	if (pcxt == NULL)
		read_rows(ps);
	if (ps->progress)
		ereport(NOTICE,
				(errmsg("simhash: %d blocks, %d tables sorted by prefixes of %d to %d bits",
						ps->layout.blocks, ps->layout.ntables,
						ps->layout.prefix_bits[ps->layout.ntables - 1],
						ps->layout.prefix_bits[0])));
	if (pcxt == NULL)
	{
		for (t = 0; t < ps->layout.ntables; t++)
			search_table(ps, t);
		PermRecStoreEnd(ps->rows);
		return;
	}
	while ((t = (int) pg_atomic_fetch_add_u32(&ps->shared->next_table, 1)) <
		   ps->layout.ntables)
		search_table(ps, t);
	end_parallel(ps, pcxt);
}

/* The result's columns: (key, key, int4) or (key, key) */
static void
check_result_columns(PairsState *ps, TupleDesc desc, bool clusters)
{
	int			want = clusters ? 2 : 3;
	bool		ok = desc->natts == want;
	int			i;

	for (i = 0; ok && i < 2; i++)
		ok = TupleDescAttr(desc, i)->atttypid == ps->keytype;
	if (ok && !clusters)
		ok = TupleDescAttr(desc, 2)->atttypid == INT4OID;
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the column definition list does not match the key column"),
				 errdetail("The key column is of type %s.", format_type_be(ps->keytype)),
				 errhint(clusters ?
						 "Write AS (key %s, cluster %s)." :
						 "Write AS (a %s, b %s, distance integer).",
						 format_type_be(ps->keytype), format_type_be(ps->keytype))));
}

/*
 * simhash_pairs(source regclass, key_column name, fp_column name, k int,
 *				 progress bool) returns setof record (a, b, distance)
 */
Datum
simhash_pairs(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PairsState	ps = {0};

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ps.progress = PG_GETARG_BOOL(4);
	open_source(&ps, PG_GETARG_OID(0), PG_GETARG_NAME(1), PG_GETARG_NAME(2),
				PG_GETARG_INT32(3));
	ps.tupstore = rsinfo->setResult;
	ps.tupdesc = rsinfo->setDesc;
	check_result_columns(&ps, ps.tupdesc, false);

	search_all(&ps);

	ExecDropSingleTupleTableSlot(ps.slot);
	table_close(ps.rel, AccessShareLock);
	return (Datum) 0;
}

/* A cluster: its smallest key, found as its members are visited */
typedef struct ClusterKey
{
	Datum		key;
	bool		set;
} ClusterKey;

/*
 * simhash_clusters(source regclass, key_column name, fp_column name, k int,
 *					singletons bool, progress bool) returns setof record
 *					(key, cluster): every row with a near-duplicate, and its
 *					cluster's smallest key; with singletons, every other row
 *					with a fingerprint too, as its own cluster.
 */
Datum
simhash_clusters(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PairsState	ps = {0};
	HASHCTL		ctl;
	Datum	   *keys;
	ClusterKey *cluster;
	bool		singletons = PG_GETARG_BOOL(4);
	int32		i;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ps.progress = PG_GETARG_BOOL(5);
	ps.clusters = true;
	open_source(&ps, PG_GETARG_OID(0), PG_GETARG_NAME(1), PG_GETARG_NAME(2),
				PG_GETARG_INT32(3));
	check_result_columns(&ps, rsinfo->setDesc, true);

	ctl.keysize = sizeof(ItemPointerData);
	ctl.entrysize = sizeof(UFEntry);
	ctl.hcxt = CurrentMemoryContext;
	ps.uf_hash = hash_create("simhash clusters", 1024, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	search_all(&ps);

	/* each cluster's smallest key, then a row per member */
	keys = palloc_extended(Max(ps.nnodes, 1) * sizeof(Datum), MCXT_ALLOC_HUGE);
	cluster = palloc_extended(Max(ps.nnodes, 1) * sizeof(ClusterKey),
							  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (i = 0; i < ps.nnodes; i++)
	{
		int32		root = uf_find(&ps, i);

		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		keys[i] = fetch_key(&ps, &ps.node_tid[i]);
		if (!cluster[root].set || compare_keys(&ps, keys[i], cluster[root].key) < 0)
		{
			cluster[root].key = keys[i];
			cluster[root].set = true;
		}
	}
	for (i = 0; i < ps.nnodes; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		values[0] = keys[i];
		values[1] = cluster[uf_find(&ps, i)].key;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	if (singletons)
	{
		TableScanDesc scan = table_beginscan(ps.rel, ps.snapshot, 0, NULL);

		while (table_scan_getnextslot(scan, ForwardScanDirection, ps.slot))
		{
			Datum		values[2];
			bool		nulls[2];

			CHECK_FOR_INTERRUPTS();
			if (hash_search(ps.uf_hash, &ps.slot->tts_tid, HASH_FIND, NULL))
				continue;
			values[0] = slot_getattr(ps.slot, ps.keyatt, &nulls[0]);
			/* a row without fingerprint belongs to no cluster */
			slot_getattr(ps.slot, ps.fpatt, &nulls[1]);
			values[1] = values[0];
			nulls[1] = nulls[1] || nulls[0];
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		table_endscan(scan);
	}
	if (ps.progress)
		ereport(NOTICE,
				(errmsg("simhash: %d rows in clusters", ps.nnodes),
				 errdetail("%.1f s.", elapsed(&ps))));

	ExecDropSingleTupleTableSlot(ps.slot);
	table_close(ps.rel, AccessShareLock);
	return (Datum) 0;
}
