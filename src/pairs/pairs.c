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
 * (README.perm, "Why C(B, K) tables find every match within K"), so they fall into the
 * same group of equal prefixes in that table's sorted order.  Each group is
 * compared pair by pair.  A pair found in table t is reported only if t is
 * the first table where the two share a prefix, so each pair comes once.
 *
 * Memory.  The rows' (fingerprint, TID) records, 16 bytes each, are kept in
 * memory while they fit in half of work_mem and go to a temporary file
 * otherwise.  Each table's permuted records are put in order within the
 * other half (GroupSort, runsort.c): in memory when they fit, else
 * dealt to partitions by their leading bits, one temporary file each, and
 * each partition sorted in memory in turn, so the sorts stay within
 * work_mem whatever the table's size; a group of equal prefixes is held
 * whole (with B chosen so that groups are small).  Pairs need only the
 * groups together and sort by the prefix alone; clusters sort whole keys.
 *
 * Integer keys travel in the records in place of TIDs (read_key_inline),
 * so a pair found needs no second read of its rows.  Large tables are
 * searched by parallel workers too, a table each at a time.
 *
 * Where the rows come from.  A plain table or materialized view is read
 * from its heap, records carrying TIDs (or integer keys), by parallel
 * workers where it is large.  Every other source is read through the
 * executor by pairsquery.c: a partitioned table, a foreign table, a view,
 * a table with row-level security, a table an extension keeps elsewhere
 * (Citus), and the query of simhash_pairs_query / simhash_clusters_query.
 *
 * Files: this one holds the SQL functions, the checks of their arguments,
 * where a relation's rows are read (rows_through_executor), and the
 * results (keys, union-find), which it hands to the search as its sink
 * (PairsSink): emit_pair for simhash_pairs, uf_union for simhash_clusters.
 * pairsparallel.c runs the search in parallel workers; pairsquery.c reads
 * rows through the executor; pairssearch.c reads a heap's rows and searches
 * one permuted table, handing each pair it finds to the sink; pairswide.c
 * searches bit(n) codes (multi-index hashing, its header has the
 * argument), with the same sinks.  pairs.h is what they share; calls run
 * down that list.
 *
 * Clusters are the connected components of the pairs, kept in a union-find
 * over the rows that have a near-duplicate.  Identical fingerprints are
 * adjacent in every sorted order: each run of them is joined in one pass
 * and stands as one fingerprint in the group comparisons, so 100,000 copies
 * of one fingerprint cost 100,000 unions, not 5 billion comparisons.
 *
 * IDENTIFICATION
 *	  src/pairs/pairs.c
 *
 *-------------------------------------------------------------------------
 */
#include "pairs/pairs.h"

#include "catalog/pg_am_d.h"

PG_FUNCTION_INFO_V1(simhash_pairs);
PG_FUNCTION_INFO_V1(simhash_clusters);
PG_FUNCTION_INFO_V1(simhash_pairs_query);
PG_FUNCTION_INFO_V1(simhash_clusters_query);
PG_FUNCTION_INFO_V1(simhash_pairs_tenant);
PG_FUNCTION_INFO_V1(simhash_clusters_tenant);
PG_FUNCTION_INFO_V1(simhash_pairs_part);

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

/*
 * Where a relation's rows are read: from its heap (the fast path, with
 * TIDs and parallel workers) when it is a plain table or materialized view
 * stored by the heap access method, whose rows are all there and all the
 * caller's to see; through the executor otherwise (pairsquery.c): a
 * partitioned table (every partition), a foreign table (a shard on another
 * server), a view, a table of another access method (Citus columnar, say),
 * a table with row-level security (the caller's policies apply), and a
 * table whose rows an extension keeps on other servers (a Citus
 * distributed table).  A materialized view not yet populated is refused,
 * as a SELECT from it is.
 */
static bool
rows_through_executor(Relation rel)
{
	switch (rel->rd_rel->relkind)
	{
		case RELKIND_MATVIEW:
			if (!RelationIsPopulated(rel))
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("materialized view \"%s\" has not been populated",
								RelationGetRelationName(rel)),
						 errhint("Use the REFRESH MATERIALIZED VIEW command.")));
			/* FALLTHROUGH */
		case RELKIND_RELATION:
			if (rel->rd_rel->relam != HEAP_TABLE_AM_OID)
				return true;
			if (check_enable_rls(RelationGetRelid(rel), InvalidOid, false) == RLS_ENABLED)
				return true;
			return pairs_rows_elsewhere(rel);
		case RELKIND_PARTITIONED_TABLE:
		case RELKIND_FOREIGN_TABLE:
		case RELKIND_VIEW:
			return true;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("\"%s\" is not a table, view, materialized view or foreign table",
							RelationGetRelationName(rel)),
					 errhint("For a query, use simhash_pairs_query() or simhash_clusters_query().")));
	}
	return false;				/* not reached */
}

/*
 * k of 64-bit fingerprints: up to simhash_perm's design radius.  k of
 * bit(n) codes is checked against their width once it is known
 * (pairswide.c).
 */
static void
check_k(PairsState *ps, int k)
{
	int			limit = ps->search.wide ? PERM_MAX_WIDTH : PAIRS_MAX_K;

	if (k < 0 || k > limit)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be between 0 and %d, not %d", limit, k)));
}

/*
 * The functions of pairs and clusters are not STRICT (from 1.6 on): a
 * STRICT one called with a NULL table, column, k or flag returns no rows,
 * which reads as "no near-duplicates".  Each calls this first instead, and
 * a NULL argument is an error that names it, as pg_proc spells it.
 */
static void
check_no_null_arguments(FunctionCallInfo fcinfo)
{
	int			i;

	for (i = 0; i < PG_NARGS(); i++)
	{
		HeapTuple	proc;
		char	  **names = NULL;
		Oid		   *types;
		char	   *modes;
		const char *name;
		int			nargs;

		if (!PG_ARGISNULL(i))
			continue;
		proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(fcinfo->flinfo->fn_oid));
		if (!HeapTupleIsValid(proc))
			elog(ERROR, "cache lookup failed for function %u",
				 fcinfo->flinfo->fn_oid);
		nargs = get_func_arg_info(proc, &types, &names, &modes);
		name = names != NULL && i < nargs && names[i][0] != '\0' ?
			names[i] : psprintf("%d", i + 1);
		ReleaseSysCache(proc);
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument %s of %s() must not be NULL",
						name, get_func_name(fcinfo->flinfo->fn_oid)),
				 strcmp(name, "tenant") == 0 ?
				 errhint("Leave tenant out to search the whole table.") : 0));
	}
}

/* What every source sets up alike */
static void
start_search(PairsState *ps, int k)
{
	ps->search.k = k;
	ps->src.snapshot = GetActiveSnapshot();
	ps->search.work_bytes = (int64) work_mem * 1024;
	INSTR_TIME_SET_CURRENT(ps->search.start);
}

/* The key column's type, collation and ordering */
static void
set_key_type(PairsState *ps, Name key)
{
	TypeCacheEntry *tce;

	ps->src.keytype = TupleDescAttr(RelationGetDescr(ps->src.rel), ps->src.keyatt - 1)->atttypid;
	ps->src.keycollation = TupleDescAttr(RelationGetDescr(ps->src.rel), ps->src.keyatt - 1)->attcollation;
	tce = lookup_type_cache(ps->src.keytype, TYPECACHE_CMP_PROC_FINFO);
	if (!OidIsValid(tce->cmp_proc_finfo.fn_oid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("key column \"%s\" is of type %s, which has no ordering",
						NameStr(*key), format_type_be(ps->src.keytype))));
	fmgr_info_copy(&ps->src.keycmp, &tce->cmp_proc_finfo, CurrentMemoryContext);
}

static void
open_source(PairsState *ps, Oid relid, Name key, Name fp, int k,
			bool checks_only)
{
	Oid			fptype;
	AclResult	aclresult;

	ps->src.rel = try_relation_open(relid, AccessShareLock);
	if (ps->src.rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	ps->src.name = psprintf("\"%s\"", RelationGetRelationName(ps->src.rel));
	aclresult = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, get_relkind_objtype(ps->src.rel->rd_rel->relkind),
					   RelationGetRelationName(ps->src.rel));

	ps->src.keyatt = column_of(ps->src.rel, key, "key");
	ps->src.fpatt = column_of(ps->src.rel, fp, "fingerprint");
	fptype = TupleDescAttr(RelationGetDescr(ps->src.rel), ps->src.fpatt - 1)->atttypid;
	if (fptype == BITOID || fptype == VARBITOID)
		pairs_wide_begin(ps, TupleDescAttr(RelationGetDescr(ps->src.rel),
										   ps->src.fpatt - 1)->atttypmod);
	else if (fptype != INT8OID && !simhash_is_fingerprint_type(fptype))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" is of type %s, not simhash64, bigint or bit(n)",
						NameStr(*fp), format_type_be(fptype))));
	check_k(ps, k);
	start_search(ps, k);
	if (ps->search.wide)
		pairs_wide_set_width(ps, ps->search.wide->width);
	if (checks_only)
		return;

	/* a Citus table's workers search it (pairscitus.c) */
	if (!ps->search.wide && pairs_citus_plan(ps, 0))
	{
		set_key_type(ps, key);
		return;
	}
	/* bit(n) codes are always read through the executor (pairswide.c) */
	if (ps->search.wide || rows_through_executor(ps->src.rel))
	{
		/* "SELECT key, fp FROM relation", under the statement's snapshot */
		pairs_query_open(ps, pairs_relation_query(ps->src.rel, ps->src.keyatt,
												  ps->src.fpatt));
		return;
	}

	set_key_type(ps, key);
	ps->src.inline_keys = !ps->search.clusters &&
		(ps->src.keytype == INT8OID || ps->src.keytype == INT4OID || ps->src.keytype == INT2OID);
	ps->src.slot = table_slot_create(ps->src.rel, NULL);
}

/*
 * The rows of a relation, tenant by tenant (the tenant => column forms):
 * always through the executor, ordered by the tenant (pairsquery.c)
 */
static void
open_tenant_source(PairsState *ps, Oid relid, Name key, Name fp, int k,
				   Name tenant)
{
	AttrNumber	tenantatt;

	open_source(ps, relid, key, fp, k, true);
	tenantatt = column_of(ps->src.rel, tenant, "tenant");
	if (tenantatt == ps->src.keyatt || tenantatt == ps->src.fpatt)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the tenant column \"%s\" is also the key or the fingerprint column",
						NameStr(*tenant))));
	ps->src.by_tenant = true;
	if (!ps->search.wide && pairs_citus_plan(ps, tenantatt))
	{
		/* each shard on its worker (pairscitus.c) */
		set_key_type(ps, key);
		return;
	}
	pairs_query_open(ps, pairs_tenant_query(ps->src.rel, ps->src.keyatt,
											 ps->src.fpatt, tenantatt));
}

/* The rows of the caller's query (the _query functions) */
static void
open_query_source(PairsState *ps, text *query, int k)
{
	ps->src.name = "the query";
	start_search(ps, k);
	pairs_query_open(ps, text_to_cstring(query));
	check_k(ps, k);
}

/* Close what open_source or open_query_source opened */
static void
close_source(PairsState *ps)
{
	if (ps->src.spool)
		BufFileClose(ps->src.spool);
	if (ps->src.slot)
		ExecDropSingleTupleTableSlot(ps->src.slot);
	if (ps->src.rel)
		relation_close(ps->src.rel, AccessShareLock);
}

/*
 * Integer keys of pairs travel in the records in place of the rows' TIDs,
 * as 48-bit integers in the TID's six bytes (pairssearch.c puts them
 * there: read_key_inline), so a pair found is a row of the result at once.
 */
/* The key put in a record in place of its TID */
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

	if (ps->src.keytype == INT8OID)
		return Int64GetDatum(v);
	if (ps->src.keytype == INT4OID)
		return Int32GetDatum((int32) v);
	return Int16GetDatum((int16) v);
}

/*
 * Results
 */

/* Fetch a row's key, copied into the current memory context */
static Datum
pairs_fetch_key(PairsState *ps, ItemPointer tid)
{
	bool		isnull;
	Datum		d;
	Form_pg_attribute att;

	if (ps->src.via_query)
		return pairs_query_key(ps, tid);
	att = TupleDescAttr(RelationGetDescr(ps->src.rel), ps->src.keyatt - 1);
	if (!table_tuple_fetch_row_version(ps->src.rel, tid, ps->src.snapshot, ps->src.slot))
		elog(ERROR, "row (%u,%u) of \"%s\" vanished during the search",
			 ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid),
			 RelationGetRelationName(ps->src.rel));
	d = slot_getattr(ps->src.slot, ps->src.keyatt, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("key column \"%s\" of \"%s\" is NULL in a row with a near-duplicate",
						NameStr(att->attname), RelationGetRelationName(ps->src.rel))));
	return datumCopy(d, att->attbyval, att->attlen);
}

static int
compare_keys(PairsState *ps, Datum a, Datum b)
{
	return DatumGetInt32(FunctionCall2Coll(&ps->src.keycmp, ps->src.keycollation, a, b));
}

/* The sink of simhash_pairs: a row of the result, the smaller key first */
static void
emit_pair(PairsState *ps, ItemPointer x, ItemPointer y, int distance)
{
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	Datum		a;
	Datum		b;
	bool		swap;

	if (ps->src.inline_keys && !ps->src.via_query)
	{
		a = inlined_key_datum(ps, x);
		b = inlined_key_datum(ps, y);
		swap = inlined_key(x) > inlined_key(y);
	}
	else
	{
		a = pairs_fetch_key(ps, x);
		b = pairs_fetch_key(ps, y);
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
	tuplestore_putvalues(ps->result.tupstore, ps->result.tupdesc, values, nulls);
}

/* The union-find node of a row, created on first use */
static int32
uf_node(PairsState *ps, ItemPointer tid)
{
	bool		found;
	UFEntry    *e = hash_search(ps->result.uf_hash, tid, HASH_ENTER, &found);

	if (!found)
	{
		if (ps->result.nnodes == ps->result.maxnodes)
		{
			ps->result.maxnodes = Max(1024, ps->result.maxnodes * 2);
			ps->result.parent = ps->result.parent ?
				repalloc_huge(ps->result.parent, ps->result.maxnodes * sizeof(int32)) :
				palloc_extended(ps->result.maxnodes * sizeof(int32), MCXT_ALLOC_HUGE);
			ps->result.node_tid = ps->result.node_tid ?
				repalloc_huge(ps->result.node_tid, ps->result.maxnodes * sizeof(ItemPointerData)) :
				palloc_extended(ps->result.maxnodes * sizeof(ItemPointerData), MCXT_ALLOC_HUGE);
		}
		e->node = ps->result.nnodes++;
		ps->result.parent[e->node] = e->node;
		ps->result.node_tid[e->node] = *tid;
	}
	return e->node;
}

static int32
uf_find(PairsState *ps, int32 x)
{
	int32		root = x;

	while (ps->result.parent[root] != root)
		root = ps->result.parent[root];
	while (ps->result.parent[x] != root)
	{
		int32		next = ps->result.parent[x];

		ps->result.parent[x] = root;
		x = next;
	}
	return root;
}

/* The sink of simhash_clusters: the two rows join one cluster */
static void
uf_union(PairsState *ps, ItemPointer x, ItemPointer y, int distance)
{
	int32		a = uf_find(ps, uf_node(ps, x));
	int32		b = uf_find(ps, uf_node(ps, y));

	/* the older root stays, so long chains of identical rows stay flat */
	if (a != b)
		ps->result.parent[Max(a, b)] = Min(a, b);
}


/*
 * A relation that gave no row with a fingerprint while its statistics
 * count rows: perhaps its rows are kept where its heap is not (an
 * extension's distributed table), which must not pass for "no pairs".
 */
static void
warn_if_nothing_read(PairsState *ps)
{
	float4		reltuples;

	if (ps->src.rel == NULL || RecStoreCount(ps->search.rows) > 0 ||
		pairs_wide_count(ps) > 0)
		return;
	reltuples = ps->src.rel->rd_rel->reltuples;
	if (reltuples > 0)
		ereport(WARNING,
				(errmsg("read no row with a fingerprint from %s, whose statistics count about %.0f rows",
						ps->src.name, reltuples),
				 errdetail("The result is empty because no row was read, not because no rows are near-duplicates."),
				 errhint("If the rows are kept elsewhere, read them with simhash_pairs_query('SELECT key, fp FROM ...'); if the fingerprints are NULL or the rows were deleted since the last ANALYZE, the result is right.")));
}

static void
report_layout(PairsState *ps)
{
	if (ps->search.progress)
		ereport(NOTICE,
				(errmsg("simhash: %d blocks, %d tables sorted by prefixes of %d to %d bits",
						ps->search.layout.blocks, ps->search.layout.ntables,
						ps->search.layout.prefix_bits[ps->search.layout.ntables - 1],
						ps->search.layout.prefix_bits[0])));
}

/* Search every table of the layout in this process alone */
static void
search_alone(PairsState *ps)
{
	int			t;

	for (t = 0; t < ps->search.layout.ntables; t++)
		pairs_search_table(ps, t);
	pairs_search_done(ps);
	RecStoreEnd(ps->search.rows);
}

static void
search_all(PairsState *ps)
{
	ParallelContext *pcxt;
	int			t;

	if (ps->src.by_tenant)
	{
		/* tenant by tenant, each searched as it is read */
		pairs_search_by_tenant(ps);
		return;
	}
	if (ps->src.via_query)
	{
		/* every row through the executor, then the search in one process */
		pairs_read_rows_query(ps);
		warn_if_nothing_read(ps);
		if (ps->search.wide)
		{
			pairs_wide_search(ps);
			RecStoreEnd(ps->search.rows);
			return;
		}
		report_layout(ps);
		search_alone(ps);
		return;
	}

	pcxt = pairs_begin_parallel(ps);
	if (pcxt != NULL)
	{
		ParallelTableScanDesc pscan = shm_toc_lookup(pcxt->toc, PAIRS_SCAN_KEY, false);

		if (pairs_read_rows_parallel(ps, pscan, 0))
		{
			pairs_report_read(ps, "each process keeps its share in a temporary file");
			if (ps->search.progress)
				ereport(NOTICE,
						(errmsg_plural("simhash: searching with %d parallel worker",
									   "simhash: searching with %d parallel workers",
									   ps->par.nqueues, ps->par.nqueues)));
		}
		else
		{
			pairs_end_parallel(ps, pcxt);
			pcxt = NULL;
			ps->src.inline_keys = false;
		}
	}
	if (pcxt == NULL)
		pairs_read_rows(ps);
	warn_if_nothing_read(ps);
	report_layout(ps);
	if (pcxt == NULL)
	{
		search_alone(ps);
		return;
	}
	while ((t = (int) pg_atomic_fetch_add_u32(&ps->par.shared->next_table, 1)) <
		   ps->search.layout.ntables)
		pairs_search_table(ps, t);
	pairs_search_done(ps);
	pairs_end_parallel(ps, pcxt);
}

/* The result's columns: (key, key, int4) or (key, key) */
static void
check_result_columns(PairsState *ps, TupleDesc desc, bool clusters)
{
	int			want = clusters ? 2 : 3;
	bool		ok = desc->natts == want;
	int			i;

	for (i = 0; ok && i < 2; i++)
		ok = TupleDescAttr(desc, i)->atttypid == ps->src.keytype;
	if (ok && !clusters)
		ok = TupleDescAttr(desc, 2)->atttypid == INT4OID;
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the column definition list does not match the key column"),
				 errdetail("The key column is of type %s.", format_type_be(ps->src.keytype)),
				 errhint(clusters ?
						 "Write AS (key %s, cluster %s)." :
						 "Write AS (a %s, b %s, distance integer).",
						 format_type_be(ps->src.keytype), format_type_be(ps->src.keytype))));
}

/* simhash_pairs and simhash_pairs_query, once the source is open */
static void
find_pairs(PairsState *ps, ReturnSetInfo *rsinfo)
{
	ps->result.tupstore = rsinfo->setResult;
	ps->result.tupdesc = rsinfo->setDesc;
	check_result_columns(ps, ps->result.tupdesc, false);
	ps->sink.found = emit_pair;
	ps->sink.table_done = pairs_report_table_done;
	if (ps->citus)
		pairs_citus_search(ps, rsinfo, false);
	else
		search_all(ps);
	close_source(ps);
}

/*
 * simhash_pairs(source regclass, key_column name, fp_column name, k int,
 *				 progress bool) returns setof record (a, b, distance)
 */
Datum
simhash_pairs(PG_FUNCTION_ARGS)
{
	PairsState	ps = {0};

	check_no_null_arguments(fcinfo);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ps.search.progress = PG_GETARG_BOOL(4);
	open_source(&ps, PG_GETARG_OID(0), PG_GETARG_NAME(1), PG_GETARG_NAME(2),
				PG_GETARG_INT32(3), false);
	find_pairs(&ps, (ReturnSetInfo *) fcinfo->resultinfo);
	return (Datum) 0;
}

/*
 * simhash_pairs_query(query text, k int, progress bool) returns setof
 * record (a, b, distance): the query returns (key, fingerprint)
 */
Datum
simhash_pairs_query(PG_FUNCTION_ARGS)
{
	PairsState	ps = {0};

	check_no_null_arguments(fcinfo);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ps.search.progress = PG_GETARG_BOOL(2);
	open_query_source(&ps, PG_GETARG_TEXT_PP(0), PG_GETARG_INT32(1));
	find_pairs(&ps, (ReturnSetInfo *) fcinfo->resultinfo);
	return (Datum) 0;
}

/* A cluster: its smallest key, found as its members are visited */
typedef struct ClusterKey
{
	Datum		key;
	bool		set;
} ClusterKey;

/* simhash_clusters(..., singletons => true) from the heap: every other row */
static void
heap_singletons(PairsState *ps, ReturnSetInfo *rsinfo)
{
	TableScanDesc scan = table_beginscan(ps->src.rel, ps->src.snapshot, 0, NULL);

	while (table_scan_getnextslot(scan, ForwardScanDirection, ps->src.slot))
	{
		Datum		values[2];
		bool		nulls[2];

		CHECK_FOR_INTERRUPTS();
		if (hash_search(ps->result.uf_hash, &ps->src.slot->tts_tid, HASH_FIND, NULL))
			continue;
		/* a row without fingerprint belongs to no cluster: skipped */
		slot_getattr(ps->src.slot, ps->src.fpatt, &nulls[1]);
		if (nulls[1])
			continue;
		values[0] = slot_getattr(ps->src.slot, ps->src.keyatt, &nulls[0]);
		values[1] = values[0];
		nulls[1] = nulls[0];
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	table_endscan(scan);
}

/*
 * simhash_clusters and simhash_clusters_query, once the source is open:
 * every row with a near-duplicate, and its cluster's smallest key; with
 * singletons, every other row with a fingerprint too, as its own cluster
 */
static void
find_clusters(PairsState *ps, ReturnSetInfo *rsinfo, bool singletons)
{
	HASHCTL		ctl;
	Datum	   *keys;
	ClusterKey *cluster;
	int32		i;

	check_result_columns(ps, rsinfo->setDesc, true);
	if (ps->citus)
	{
		pairs_citus_search(ps, rsinfo, singletons);
		close_source(ps);
		return;
	}
	ctl.keysize = sizeof(ItemPointerData);
	ctl.entrysize = sizeof(UFEntry);
	ctl.hcxt = CurrentMemoryContext;
	ps->result.uf_hash = hash_create("simhash clusters", 1024, &ctl,
									 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	ps->sink.found = uf_union;
	ps->sink.table_done = pairs_report_table_done;

	search_all(ps);

	/* each cluster's smallest key, then a row per member */
	keys = palloc_extended(Max(ps->result.nnodes, 1) * sizeof(Datum), MCXT_ALLOC_HUGE);
	cluster = palloc_extended(Max(ps->result.nnodes, 1) * sizeof(ClusterKey),
							  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (i = 0; i < ps->result.nnodes; i++)
	{
		int32		root = uf_find(ps, i);

		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		keys[i] = pairs_fetch_key(ps, &ps->result.node_tid[i]);
		if (!cluster[root].set || compare_keys(ps, keys[i], cluster[root].key) < 0)
		{
			cluster[root].key = keys[i];
			cluster[root].set = true;
		}
	}
	for (i = 0; i < ps->result.nnodes; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		values[0] = keys[i];
		values[1] = cluster[uf_find(ps, i)].key;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	if (singletons && ps->src.via_query)
		pairs_query_singletons(ps, rsinfo->setResult, rsinfo->setDesc);
	else if (singletons)
		heap_singletons(ps, rsinfo);
	if (ps->search.progress)
		ereport(NOTICE,
				(errmsg("simhash: %d rows in clusters", ps->result.nnodes),
				 errdetail("%.1f s.", pairs_elapsed(ps))));
	close_source(ps);
}

/*
 * simhash_clusters(source regclass, key_column name, fp_column name, k int,
 *					singletons bool, progress bool) returns setof record
 *					(key, cluster)
 */
Datum
simhash_clusters(PG_FUNCTION_ARGS)
{
	PairsState	ps = {0};

	check_no_null_arguments(fcinfo);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ps.search.progress = PG_GETARG_BOOL(5);
	ps.search.clusters = true;
	open_source(&ps, PG_GETARG_OID(0), PG_GETARG_NAME(1), PG_GETARG_NAME(2),
				PG_GETARG_INT32(3), false);
	find_clusters(&ps, (ReturnSetInfo *) fcinfo->resultinfo, PG_GETARG_BOOL(4));
	return (Datum) 0;
}

/*
 * simhash_clusters_query(query text, k int, singletons bool, progress bool)
 * returns setof record (key, cluster): the query returns (key, fingerprint)
 */
Datum
simhash_clusters_query(PG_FUNCTION_ARGS)
{
	PairsState	ps = {0};

	check_no_null_arguments(fcinfo);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ps.search.progress = PG_GETARG_BOOL(3);
	ps.search.clusters = true;
	open_query_source(&ps, PG_GETARG_TEXT_PP(0), PG_GETARG_INT32(1));
	find_clusters(&ps, (ReturnSetInfo *) fcinfo->resultinfo, PG_GETARG_BOOL(2));
	return (Datum) 0;
}

/*
 * simhash_pairs(source regclass, key_column name, fp_column name, k int,
 *				 tenant name, progress bool) returns setof record (a, b,
 *				 distance): the pairs whose rows have equal tenants
 */
Datum
simhash_pairs_tenant(PG_FUNCTION_ARGS)
{
	PairsState	ps = {0};

	check_no_null_arguments(fcinfo);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ps.search.progress = PG_GETARG_BOOL(5);
	open_tenant_source(&ps, PG_GETARG_OID(0), PG_GETARG_NAME(1),
					   PG_GETARG_NAME(2), PG_GETARG_INT32(3), PG_GETARG_NAME(4));
	find_pairs(&ps, (ReturnSetInfo *) fcinfo->resultinfo);
	return (Datum) 0;
}

/*
 * simhash_clusters(source regclass, key_column name, fp_column name, k int,
 *					tenant name, singletons bool, progress bool) returns
 *					setof record (key, cluster): clusters within each tenant
 */
Datum
simhash_clusters_tenant(PG_FUNCTION_ARGS)
{
	PairsState	ps = {0};

	check_no_null_arguments(fcinfo);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ps.search.progress = PG_GETARG_BOOL(6);
	ps.search.clusters = true;
	open_tenant_source(&ps, PG_GETARG_OID(0), PG_GETARG_NAME(1),
					   PG_GETARG_NAME(2), PG_GETARG_INT32(3), PG_GETARG_NAME(4));
	find_clusters(&ps, (ReturnSetInfo *) fcinfo->resultinfo, PG_GETARG_BOOL(5));
	return (Datum) 0;
}

/*
 * simhash_pairs_part(query text, k int, layout text, part int, nparts int,
 *					  clusters bool) returns setof record (a, b, distance):
 * one part of a search spread over Citus's workers, which simhash_pairs()
 * and simhash_clusters() run on each node (pairscitus.c): the pairs, or
 * the links of clusters, that this part finds among the query's rows
 */
Datum
simhash_pairs_part(PG_FUNCTION_ARGS)
{
	PairsState	ps = {0};

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ps.search.clusters = PG_GETARG_BOOL(5);
	ps.src.name = "the query";
	/*
	 * The keys' type and collation, for rows packed by simhash_rows_pack:
	 * the column definition list's (the coordinator writes the key
	 * column's collation there)
	 */
	ps.src.keytype = TupleDescAttr(((ReturnSetInfo *) fcinfo->resultinfo)->setDesc, 0)->atttypid;
	ps.src.keycollation = TupleDescAttr(((ReturnSetInfo *) fcinfo->resultinfo)->setDesc, 0)->attcollation;
	check_k(&ps, PG_GETARG_INT32(1));
	start_search(&ps, PG_GETARG_INT32(1));
	pairs_part_begin(&ps, text_to_cstring(PG_GETARG_TEXT_PP(2)),
					 PG_GETARG_INT32(3), PG_GETARG_INT32(4));
	pairs_query_open(&ps, text_to_cstring(PG_GETARG_TEXT_PP(0)));
	if (ps.search.wide)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a part of a search over Citus's workers takes 64-bit fingerprints, not bit(n) codes")));
	find_pairs(&ps, (ReturnSetInfo *) fcinfo->resultinfo);
	return (Datum) 0;
}
