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
 * otherwise.  Each table's permuted records are sorted within the other
 * half, in runs written to temporary files and merged (permsort.c), so the
 * sorts stay within work_mem whatever the table's size; a group of equal
 * prefixes is held whole (with B chosen so that groups are small).
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

#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
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
#include "utils/typcache.h"

#include "fingerprint.h"
#include "perm.h"
#include "simhash.h"

PG_FUNCTION_INFO_V1(simhash_pairs);
PG_FUNCTION_INFO_V1(simhash_clusters);

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
 * tables costs a pass over every row (permuting, a radix sort of four
 * passes, the walk: about sixty comparisons' worth a row, measured) and
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

/*
 * Reading the table: every row with a fingerprint, and how often each bit
 * is set (for the layout)
 */
static void
read_rows(PairsState *ps)
{
	TableScanDesc scan;
	SimhashVoter votes;			/* how often each bit is set */
	uint64		batch[1024];
	int			nbatch = 0;
	int			i;

	/* half the budget keeps the rows, half sorts a table */
	ps->rows = PermRecStoreBegin(ps->work_bytes / 2);
	SimhashVoterInit(&votes);

	scan = table_beginscan(ps->rel, ps->snapshot, 0, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, ps->slot))
	{
		bool		isnull;
		Datum		d = slot_getattr(ps->slot, ps->fpatt, &isnull);
		PairRec		rec;

		CHECK_FOR_INTERRUPTS();
		if (isnull)
			continue;
		rec.key = (uint64) DatumGetInt64(d);
		rec.tid = ps->slot->tts_tid;
		PermRecStoreAdd(ps->rows, &rec);
		batch[nbatch++] = rec.key;
		if (nbatch == lengthof(batch))
		{
			SimhashVoterAddBatch(&votes, batch, nbatch);
			nbatch = 0;
		}
	}
	table_endscan(scan);
	SimhashVoterAddBatch(&votes, batch, nbatch);
	if (ps->progress)
		ereport(NOTICE,
				(errmsg("simhash: read %lld rows with a fingerprint",
						(long long) PermRecStoreCount(ps->rows)),
				 errdetail("%.1f s; %s.", elapsed(ps),
						   PermRecStoreSpilled(ps->rows) ?
						   "more than half of work_mem: kept in a temporary file" :
						   "kept in memory")));

	PermChooseLayoutFromVotes(ps->k, choose_blocks(PermRecStoreCount(ps->rows), ps->k),
							  &votes, PermRecStoreCount(ps->rows), &ps->layout);
	ps->perm = palloc(ps->layout.ntables * sizeof(PermPermutation));
	for (i = 0; i < ps->layout.ntables; i++)
		PermMakePermutation(ps->layout.bits[i], &ps->perm[i]);
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
	Datum		a = fetch_key(ps, x);
	Datum		b = fetch_key(ps, y);

	if (compare_keys(ps, a, b) > 0)
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
			if (ps->clusters)
				uf_union(ps, &group[i].tid, &group[j].tid);
			else
				emit_pair(ps, &group[i].tid, &group[j].tid, d);
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
walk_add(GroupWalk *w, const PairRec *rec)
{
	PairsState *ps = w->ps;

	if (w->any && ((rec->key ^ w->last.key) & w->prefix_mask) != 0)
	{
		compare_group(ps, w->group, w->n);
		w->n = 0;
	}
	if (ps->clusters && w->any && rec->key == w->last.key)
	{
		/* a copy of the previous fingerprint: joined once, in table 0 */
		if (ps->table == 0)
			uf_union(ps, &w->last.tid, (ItemPointer) &rec->tid);
		w->any = true;
		return;
	}
	if (w->n == w->max)
	{
		w->max = Max(64, w->max * 2);
		w->group = w->group ? repalloc_huge(w->group, w->max * sizeof(PairRec)) :
			palloc_extended(w->max * sizeof(PairRec), MCXT_ALLOC_HUGE);
	}
	w->group[w->n++] = *rec;
	w->last = *rec;
	w->any = true;
}

/*
 * Sort table t's records (permuted) within half of work_mem, spilling runs
 * to temporary files, and walk them in key order.
 */
static void
search_table(PairsState *ps, int t)
{
	PermRunSort *rs;
	GroupWalk	w = {0};
	PairRec		rec;
	int64		i = 0;
	int			e;
	int			spilled;

	ps->table = t;
	for (e = 0; e < t; e++)
		ps->earlier_mask[e] = PermPermute(&ps->perm[t], prefix_mask(&ps->layout, e));
	w.ps = ps;
	w.prefix_mask = ps->layout.prefix_bits[t] >= 64 ? PG_UINT64_MAX :
		~(PG_UINT64_MAX >> ps->layout.prefix_bits[t]);

	rs = PermRunSortBegin(ps->work_bytes / 2, PermRecStoreCount(ps->rows));
	PermRecStoreRewind(ps->rows);
	while (PermRecStoreNext(ps->rows, &rec))
	{
		if ((++i & 65535) == 0)
			CHECK_FOR_INTERRUPTS();
		rec.key = PermPermute(&ps->perm[t], rec.key);
		PermRunSortPut(rs, &rec);
	}
	PermRunSortFinish(rs);
	spilled = PermRunSortSpilledRuns(rs);
	i = 0;
	while (PermRunSortNext(rs, &rec))
	{
		if ((++i & 65535) == 0)
			CHECK_FOR_INTERRUPTS();
		walk_add(&w, &rec);
	}
	PermRunSortEnd(rs);
	if (w.n > 0)
		compare_group(ps, w.group, w.n);
	if (w.group)
		pfree(w.group);

	if (ps->progress)
		ereport(NOTICE,
				(errmsg("simhash: table %d of %d sorted and compared",
						t + 1, ps->layout.ntables),
				 errdetail("%.1f s; %lld %s so far, %lld comparisons%s.",
						   elapsed(ps), (long long) ps->found,
						   ps->clusters ? "links" : "pairs", (long long) ps->compared,
						   spilled > 0 ? psprintf(", %d sorted runs merged", spilled + 1) : "")));
}

static void
search_all(PairsState *ps)
{
	int			t;

	read_rows(ps);
	if (ps->progress)
		ereport(NOTICE,
				(errmsg("simhash: %d blocks, %d tables sorted by prefixes of %d to %d bits",
						ps->layout.blocks, ps->layout.ntables,
						ps->layout.prefix_bits[ps->layout.ntables - 1],
						ps->layout.prefix_bits[0])));
	for (t = 0; t < ps->layout.ntables; t++)
		search_table(ps, t);
	PermRecStoreEnd(ps->rows);
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
