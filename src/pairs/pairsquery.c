/*-------------------------------------------------------------------------
 *
 * pairsquery.c
 *		simhash_pairs() and simhash_clusters() over the rows of a query:
 *		relations whose rows the local heap does not hold, and the _query
 *		forms of the two functions.
 *
 * The fast path (pairssearch.c) scans a table's heap and keeps each row's
 * TID to find its key again.  A partitioned table keeps no rows of its own,
 * a foreign table (a postgres_fdw shard) keeps them on another server, a
 * view has none, an extension's distributed table (Citus) keeps an empty
 * shell on the coordinator, and a table with row-level security must not
 * show a caller the rows its policies hide.  For all of these the rows are
 * read through the executor, by "SELECT key, fp FROM relation" under the
 * caller's privileges and policies, or by the caller's own query: every
 * partition, every shard, every row the SELECT returns.
 *
 * Such rows have no TID.  Each record's six TID bytes (KeyTid) carry
 * instead either the row's integer key itself (simhash_pairs with an
 * int2/int4/int8 key within +-2^46: a pair found is a result row at once)
 * or, with bit 47 set, the position of the row's key in a temporary file,
 * the key spool (every other key, and every key of simhash_clusters, whose
 * union-find needs one identity per row even where keys repeat).  The
 * spool holds each key once, serialised (datumSerialize), and is read back
 * at random for the pairs found and in order for the singletons.  Keys of
 * both kinds may mix in one read: a NULL or huge integer key goes to the
 * spool without reading the rows again (the query may not return the same
 * rows twice).
 *
 * The rows are read by the leader alone (a cursor, 10,000 rows a fetch);
 * the search that follows is the same as the fast path's, in one process.
 * The fast path stays for plain tables: test/bench/pairs_sources_bench.sh
 * measures the two on the same table.
 *
 * IDENTIFICATION
 *	  src/pairs/pairsquery.c
 *
 *-------------------------------------------------------------------------
 */
#include "pairs/pairs.h"

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "executor/spi.h"
#include "port/pg_bswap.h"
#include "utils/plancache.h"
#include "utils/portal.h"

/* Rows a cursor fetch */
#define QUERY_FETCH_ROWS	10000

/* Bit 47 of a record's position: the rest is a spool position */
#define QUERY_SPOOLED		(UINT64CONST(1) << 47)
/* Integer keys that travel inline: [-2^46, 2^46) */
#define QUERY_INLINE_LIMIT	(INT64CONST(1) << 46)

static void
set_position(ItemPointer pos, uint64 u)
{
	pos->ip_blkid.bi_hi = (uint16) (u >> 32);
	pos->ip_blkid.bi_lo = (uint16) (u >> 16);
	pos->ip_posid = (uint16) u;
}

static uint64
get_position(const ItemPointerData *pos)
{
	return ((uint64) pos->ip_blkid.bi_hi << 32) |
		((uint64) pos->ip_blkid.bi_lo << 16) | pos->ip_posid;
}

/* An integer key as a position; false if it cannot travel inline */
static bool
key_inline(PairsState *ps, Datum d, bool isnull, uint64 *u)
{
	int64		v;

	if (!pairs_integer_key(ps, d, isnull, QUERY_INLINE_LIMIT, &v))
		return false;
	*u = (uint64) v & (QUERY_SPOOLED - 1);
	return true;
}

/* Append a key to the spool; its position, flagged */
static uint64
spool_key(PairsState *ps, Datum d, bool isnull)
{
	int			fileno;
	off_t		offset;
	Size		size;
	int32		len;
	char	   *buf;
	char	   *p;

	BufFileTell(ps->src.spool, &fileno, &offset);
	if (fileno >= (1 << 15) || offset > (off_t) PG_UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the keys of %s take more than 32 TB", ps->src.name)));
	size = datumEstimateSpace(d, isnull, ps->src.keybyval, ps->src.keylen);
	if (size > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a key of %s is too large to keep", ps->src.name)));
	buf = p = palloc(size);
	datumSerialize(d, isnull, ps->src.keybyval, ps->src.keylen, &p);
	len = (int32) size;
	BufFileWrite(ps->src.spool, &len, sizeof(len));
	BufFileWrite(ps->src.spool, buf, size);
	pfree(buf);
	return QUERY_SPOOLED | ((uint64) fileno << 32) | (uint64) offset;
}

/* Read the spool's key at the current position; false at its end */
static bool
read_spooled(PairsState *ps, Datum *d, bool *isnull)
{
	int32		len;
	size_t		got = BufFileRead(ps->src.spool, &len, sizeof(len));
	char	   *buf;
	char	   *p;

	if (got == 0)
		return false;
	if (got != sizeof(len) || len <= 0 || (Size) len > MaxAllocSize)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read a key of %s from its temporary file", ps->src.name)));
	buf = p = palloc(len);
	if (BufFileRead(ps->src.spool, buf, len) != (size_t) len)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read a key of %s from its temporary file", ps->src.name)));
	*d = datumRestore(&p, isnull);
	return true;
}

/*
 * The key a record carries: inline, or read from the spool.  A NULL key
 * of a row with a near-duplicate is an error, as on the fast path.
 */
Datum
pairs_query_key(PairsState *ps, ItemPointer pos)
{
	uint64		u = get_position(pos);
	Datum		d;
	bool		isnull;

	if (!(u & QUERY_SPOOLED))
	{
		int64		v = (int64) (u << 17) >> 17;	/* sign-extend 47 bits */

		if (ps->src.keytype == INT8OID)
			return Int64GetDatum(v);
		if (ps->src.keytype == INT4OID)
			return Int32GetDatum((int32) v);
		return Int16GetDatum((int16) v);
	}
	u &= ~QUERY_SPOOLED;
	if (BufFileSeek(ps->src.spool, (int) (u >> 32), (off_t) (u & PG_UINT32_MAX),
					SEEK_SET) != 0 ||
		!read_spooled(ps, &d, &isnull))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read a key of %s from its temporary file", ps->src.name)));
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("a row of %s with a near-duplicate has a NULL key", ps->src.name)));
	return d;
}

/*
 * simhash_clusters(..., singletons => true): every spooled row that has no
 * near-duplicate (is not in the union-find), as its own cluster
 */
void
pairs_query_singletons(PairsState *ps, Tuplestorestate *tupstore, TupleDesc desc)
{
	int			fileno;
	off_t		offset;
	ItemPointerData pos;
	Datum		values[2];
	bool		nulls[2];

	if (BufFileSeek(ps->src.spool, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read a key of %s from its temporary file", ps->src.name)));
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		BufFileTell(ps->src.spool, &fileno, &offset);
		if (!read_spooled(ps, &values[0], &nulls[0]))
			break;
		set_position(&pos, QUERY_SPOOLED | ((uint64) fileno << 32) | (uint64) offset);
		if (hash_search(ps->result.uf_hash, &pos, HASH_FIND, NULL))
			continue;
		values[1] = values[0];
		nulls[1] = nulls[0];
		tuplestore_putvalues(tupstore, desc, values, nulls);
	}
}

/*
 * Does an extension keep this table's rows on other servers?  Citus
 * records its distributed and reference tables in pg_dist_partition; the
 * table on the coordinator is an empty shell that only Citus's planner
 * turns into the shards' rows.  (Not tested here: Citus is not packaged
 * for Debian 12.  README, "Scaling out".)
 */
bool
pairs_rows_elsewhere(Relation rel)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	bool		result;

	if (!OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
		return false;
	args[0] = ObjectIdGetDatum(RelationGetRelid(rel));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_dist_partition");
	result = SPI_processed > 0;
	SPI_finish();
	MemoryContextSwitchTo(cxt);
	return result;
}

/* "SELECT key, fp[, tenant] FROM relation", every name quoted */
static char *
select_columns(Relation rel, AttrNumber keyatt, AttrNumber fpatt,
			   AttrNumber tenantatt)
{
	TupleDesc	desc = RelationGetDescr(rel);

	return psprintf("SELECT %s, %s%s%s FROM %s",
					quote_identifier(NameStr(TupleDescAttr(desc, keyatt - 1)->attname)),
					quote_identifier(NameStr(TupleDescAttr(desc, fpatt - 1)->attname)),
					tenantatt ? ", " : "",
					tenantatt ? quote_identifier(NameStr(TupleDescAttr(desc, tenantatt - 1)->attname)) : "",
					quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
											   RelationGetRelationName(rel)));
}

/* "SELECT key, fp FROM relation", every name quoted */
char *
pairs_relation_query(Relation rel, AttrNumber keyatt, AttrNumber fpatt)
{
	return select_columns(rel, keyatt, fpatt, 0);
}

/*
 * "SELECT key, fp, tenant FROM relation WHERE tenant IS NOT NULL ORDER BY
 * tenant": the rows of pairs within each tenant, tenant by tenant (a row
 * of no tenant pairs with none)
 */
char *
pairs_tenant_query(Relation rel, AttrNumber keyatt, AttrNumber fpatt,
				   AttrNumber tenantatt)
{
	const char *tenant = quote_identifier(NameStr(TupleDescAttr(RelationGetDescr(rel),
																 tenantatt - 1)->attname));

	return psprintf("%s WHERE %s IS NOT NULL ORDER BY %s",
					select_columns(rel, keyatt, fpatt, tenantatt), tenant, tenant);
}

/*
 * Does a SELECT change data (INSERT, UPDATE or DELETE in its WITH), or lock
 * rows (FOR UPDATE, FOR SHARE)?
 */
static bool
modifies_data(CachedPlanSource *source, bool *locks)
{
	ListCell   *lc;
	bool		modifies = false;

	*locks = false;
	foreach(lc, source->query_list)
	{
		Query	   *q = (Query *) lfirst(lc);

		modifies |= q->hasModifyingCTE;
		*locks |= q->hasForUpdate;
	}
	return modifies;
}

/*
 * Open a cursor on the query and check its two columns: a key with an
 * ordering and a fingerprint (simhash64 or bigint; or a bit(n) code, for
 * pairswide.c).  Sets the key's type, collation and comparison.  The query must be one SELECT, and runs
 * read-only under the statement's snapshot.  SPI stays connected until
 * pairs_read_rows_query; the caller's memory context stays current.
 */
void
pairs_query_open(PairsState *ps, const char *query)
{
	MemoryContext cxt = CurrentMemoryContext;
	SPIPlanPtr	plan;
	List	   *sources;
	Portal		portal;
	TupleDesc	desc;
	Form_pg_attribute keyatt;
	Oid			fptype;
	TypeCacheEntry *tce;
	bool		locks;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	MemoryContextSwitchTo(cxt);
	plan = SPI_prepare(query, 0, NULL);
	MemoryContextSwitchTo(cxt);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	sources = SPI_plan_get_plan_sources(plan);
	if (list_length(sources) != 1 ||
		((CachedPlanSource *) linitial(sources))->commandTag != CMDTAG_SELECT ||
		!SPI_is_cursor_plan(plan))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("the query must be a single SELECT that returns a key and a fingerprint"),
				 errdetail("The query was: %s", query)));

	/*
	 * The SELECT itself may not write: a data-modifying WITH and row locks
	 * are refused (SPI's read-only mode would refuse the locks too, with a
	 * message about non-volatile functions).  The functions it calls run
	 * as in any SELECT of the caller's: with the caller's rights, and a
	 * volatile one may write.
	 */
	if (modifies_data((CachedPlanSource *) linitial(sources), &locks))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("the query must not change data: a data-modifying WITH is refused"),
				 errdetail("The query was: %s", query)));
	if (locks)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("the query must not lock rows: FOR UPDATE and FOR SHARE are refused"),
				 errdetail("The query was: %s", query)));
	/* Under the statement's snapshot, read-only */
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	MemoryContextSwitchTo(cxt);
	desc = portal->tupDesc;
	if (ps->search.nparts > 0 && desc->natts == 1 &&
		TupleDescAttr(desc, 0)->atttypid == BYTEAOID)
	{
		/*
		 * A part of a search over Citus's workers, its rows packed by
		 * simhash_rows_pack (pairspart.c): keys in the binary form of the
		 * type the caller set from the result's columns
		 */
		Oid			recv;

		tce = lookup_type_cache(ps->src.keytype, TYPECACHE_CMP_PROC_FINFO);
		if (!OidIsValid(tce->cmp_proc_finfo.fn_oid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("the key type %s has no ordering",
							format_type_be(ps->src.keytype))));
		fmgr_info_copy(&ps->src.keycmp, &tce->cmp_proc_finfo, cxt);
		getTypeBinaryInputInfo(ps->src.keytype, &recv, &ps->src.keyioparam);
		fmgr_info_cxt(recv, &ps->src.keyrecv, cxt);
		get_typlenbyval(ps->src.keytype, &ps->src.keylen, &ps->src.keybyval);
		if (!OidIsValid(ps->src.keycollation))
			ps->src.keycollation = get_typcollation(ps->src.keytype);
		ps->src.portal = portal;
		ps->src.via_query = true;
		ps->src.packed = true;
		ps->src.inline_keys = !ps->search.clusters &&
			(ps->src.keytype == INT8OID || ps->src.keytype == INT4OID ||
			 ps->src.keytype == INT2OID);
		return;
	}
	if (desc->natts != (ps->src.by_tenant ? 3 : 2))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query returns %d columns, not 2: a key and a fingerprint",
						desc->natts),
				 errdetail("The query was: %s", query)));
	if (ps->src.by_tenant)
	{
		Form_pg_attribute tenantatt = TupleDescAttr(desc, 2);

		tce = lookup_type_cache(tenantatt->atttypid, TYPECACHE_CMP_PROC_FINFO);
		if (!OidIsValid(tce->cmp_proc_finfo.fn_oid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("tenant column \"%s\" is of type %s, which has no ordering",
							NameStr(tenantatt->attname), format_type_be(tenantatt->atttypid))));
		fmgr_info_copy(&ps->src.tenantcmp, &tce->cmp_proc_finfo, cxt);
		ps->src.tenantcollation = tenantatt->attcollation;
	}
	keyatt = TupleDescAttr(desc, 0);
	fptype = TupleDescAttr(desc, 1)->atttypid;
	if (fptype == BITOID || fptype == VARBITOID)
	{
		/* codes of n bits: the search of pairswide.c */
		if (ps->search.wide == NULL)
			pairs_wide_begin(ps, -1);
		if (ps->search.wide->width <= 0)
			pairs_wide_set_width(ps, TupleDescAttr(desc, 1)->atttypmod);
	}
	else if (fptype != INT8OID && !simhash_is_fingerprint_type(fptype))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query's second column \"%s\" is of type %s, not simhash64, bigint or bit(n)",
						NameStr(TupleDescAttr(desc, 1)->attname), format_type_be(fptype))));
	tce = lookup_type_cache(keyatt->atttypid, TYPECACHE_CMP_PROC_FINFO);
	if (!OidIsValid(tce->cmp_proc_finfo.fn_oid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("the query's first column \"%s\" is of type %s, which has no ordering",
						NameStr(keyatt->attname), format_type_be(keyatt->atttypid))));
	fmgr_info_copy(&ps->src.keycmp, &tce->cmp_proc_finfo, cxt);
	ps->src.keytype = keyatt->atttypid;
	ps->src.keycollation = keyatt->attcollation;
	ps->src.keylen = keyatt->attlen;
	ps->src.keybyval = keyatt->attbyval;
	ps->src.portal = portal;
	ps->src.via_query = true;
	ps->src.inline_keys = !ps->search.clusters &&
		(ps->src.keytype == INT8OID || ps->src.keytype == INT4OID ||
		 ps->src.keytype == INT2OID);
}

/* Called by read_cursor for each row with a fingerprint, as a record */
typedef void (*QueryRowFn) (PairsState *ps, const KeyTid *rec, HeapTuple tuple,
							TupleDesc desc, void *arg);

/*
 * The records of one value of simhash_rows_pack (pairspart.c): each row
 * to fn, as read_cursor hands a row
 */
static void
read_packed(PairsState *ps, HeapTuple tuple, TupleDesc desc, QueryRowFn fn,
			void *arg)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tuple, desc, 1, &isnull);
	bytea	   *packed;
	const char *p;
	Size		n;
	Size		off;
	uint64		count = 0;
	StringInfoData buf;

	if (isnull)
		return;
	packed = DatumGetByteaPP(d);
	p = VARDATA_ANY(packed);
	n = VARSIZE_ANY_EXHDR(packed);
	initStringInfo(&buf);
	for (off = 0; off < n;)
	{
		uint64		fp;
		uint32		len;
		Datum		key = (Datum) 0;
		bool		keynull;
		KeyTid		rec;
		uint64		u;

		if (n - off < PAIRS_PACKED_HEADER)
			break;
		memcpy(&fp, p + off, 8);
		memcpy(&len, p + off + 8, 4);
		len = pg_ntoh32(len);
		off += PAIRS_PACKED_HEADER;
		keynull = len == PG_UINT32_MAX;
		if (!keynull && len == 8 && ps->src.keytype == INT8OID && n - off >= 8)
		{
			/* int8recv's work, without its call */
			uint64		v;

			memcpy(&v, p + off, 8);
			key = Int64GetDatum((int64) pg_ntoh64(v));
			off += 8;
		}
		else if (!keynull)
		{
			if (len > n - off)
				break;
			/* the receive function reads a string of exactly its bytes */
			resetStringInfo(&buf);
			appendBinaryStringInfo(&buf, p + off, len);
			key = ReceiveFunctionCall(&ps->src.keyrecv, &buf, ps->src.keyioparam, -1);
			if (buf.cursor != buf.len)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
						 errmsg("a packed key of type %s has %d bytes more than its value",
								format_type_be(ps->src.keytype), buf.len - buf.cursor)));
			off += len;
		}
		rec.key = pg_ntoh64(fp);
		if (!ps->src.inline_keys || !key_inline(ps, key, keynull, &u))
			u = spool_key(ps, key, keynull);
		set_position(&rec.tid, u);
		fn(ps, &rec, tuple, desc, arg);
		if (!ps->src.keybyval && !keynull)
			pfree(DatumGetPointer(key));
		if ((++count & 65535) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	if (off != n)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("packed rows of %zu bytes end in a partial record", n)));
	pfree(buf.data);
}

/*
 * Read every row of the cursor: each with a fingerprint (and, reading by
 * tenant, a tenant) becomes a record, its key inline or in the spool, and
 * goes to fn.  Then close the cursor and SPI.  The caller's memory context
 * stays current.
 */
static void
read_cursor(PairsState *ps, QueryRowFn fn, void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;

	ps->src.spool = BufFileCreateTemp(false);
	for (;;)
	{
		SPITupleTable *tt;
		uint64		i;

		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(ps->src.portal, true, QUERY_FETCH_ROWS);
		MemoryContextSwitchTo(cxt);
		tt = SPI_tuptable;
		if (SPI_processed == 0)
			break;
		for (i = 0; ps->src.packed && i < SPI_processed; i++)
			read_packed(ps, tt->vals[i], tt->tupdesc, fn, arg);
		for (i = 0; !ps->src.packed && i < SPI_processed; i++)
		{
			bool		isnull;
			bool		keynull;
			Datum		fp = SPI_getbinval(tt->vals[i], tt->tupdesc, 2, &isnull);
			Datum		key;
			KeyTid		rec;
			uint64		u;

			if (isnull)
				continue;
			if (ps->src.by_tenant)
			{
				(void) SPI_getbinval(tt->vals[i], tt->tupdesc, 3, &isnull);
				if (isnull)
					continue;
			}
			key = SPI_getbinval(tt->vals[i], tt->tupdesc, 1, &keynull);
			/* a bit(n) code is taken from the tuple by fn (pairswide.c) */
			rec.key = ps->search.wide ? 0 : (uint64) DatumGetInt64(fp);
			if (!ps->src.inline_keys || !key_inline(ps, key, keynull, &u))
				u = spool_key(ps, key, keynull);
			set_position(&rec.tid, u);
			fn(ps, &rec, tt->vals[i], tt->tupdesc, arg);
		}
		SPI_freetuptable(tt);
		MemoryContextSwitchTo(cxt);
	}
	SPI_cursor_close(ps->src.portal);
	MemoryContextSwitchTo(cxt);
	ps->src.portal = NULL;
	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed");
	MemoryContextSwitchTo(cxt);
}

/* The rows of the whole read, and their bits' counts */
typedef struct QueryRows
{
	SimhashVoter votes;
	uint64		batch[1024];
	int			nbatch;
} QueryRows;

static void
add_row(PairsState *ps, const KeyTid *rec, HeapTuple tuple, TupleDesc desc,
		void *arg)
{
	QueryRows  *qr = (QueryRows *) arg;

	if (ps->search.wide)
	{
		bool		isnull;

		pairs_wide_add(ps, SPI_getbinval(tuple, desc, 2, &isnull), &rec->tid);
		return;
	}
	RecStoreAdd(ps->search.rows, rec);
	qr->batch[qr->nbatch++] = rec->key;
	if (qr->nbatch == lengthof(qr->batch))
	{
		SimhashVoterAddBatch(&qr->votes, qr->batch, qr->nbatch);
		qr->nbatch = 0;
	}
}

/*
 * Read every row of the cursor with a fingerprint into ps->search.rows,
 * keys inline or into the spool, then close the cursor and SPI, and choose
 * the layout as the fast path does.
 */
void
pairs_read_rows_query(PairsState *ps)
{
	QueryRows	qr;

	ps->search.rows = RecStoreBegin(ps->search.work_bytes / 2);
	SimhashVoterInit(&qr.votes);
	qr.nbatch = 0;
	read_cursor(ps, add_row, &qr);
	SimhashVoterAddBatch(&qr.votes, qr.batch, qr.nbatch);
	pairs_report_read(ps, RecStoreSpilled(ps->search.rows) ?
					  "through the executor; more than half of work_mem: kept in a temporary file" :
					  "through the executor; kept in memory");
	/* a part of a search over Citus workers has its layout already */
	if (ps->search.wide == NULL && ps->search.nparts == 0)
		pairs_choose_layout(ps, &qr.votes, RecStoreCount(ps->search.rows),
							RecStoreCount(ps->search.rows));
}

/* A tenant of at most this many rows is searched pair by pair */
#define PAIRS_SMALL_TENANT	64

/* Every pair of a small tenant's rows compared (search_tenant) */
SIMHASH_POPCNT
static void
search_small_tenant(PairsState *ps)
{
	KeyTid		recs[PAIRS_SMALL_TENANT];
	KeyTid	   *batch;
	int			got = 0,
				nb,
				i,
				j;

	RecStoreRewind(ps->search.rows);
	while ((nb = RecStoreNextBatch(ps->search.rows, &batch)) > 0)
	{
		memcpy(recs + got, batch, nb * sizeof(KeyTid));
		got += nb;
	}
	for (i = 0; i < got; i++)
		for (j = i + 1; j < got; j++)
		{
			int			d = simhash_hamming(recs[i].key, recs[j].key);

			if (d > ps->search.k)
				continue;
			ps->search.found++;
			ps->sink.found(ps, &recs[i].tid, &recs[j].tid, d);
		}
	ps->search.compared += (int64) got * (got - 1) / 2;
}

/*
 * Search the rows gathered of one tenant, then forget them: as the whole
 * table's rows are searched (a layout for their number, every table), or,
 * for a tenant of at most PAIRS_SMALL_TENANT rows, pair by pair.  A pair
 * found reads its keys from the spool (pairs_query_key), which moves the
 * spool's position: it is put back at the end, where the next keys go.
 */
static void
search_tenant(PairsState *ps, SimhashVoter *votes)
{
	int64		n = RecStoreCount(ps->search.rows);
	int			fileno;
	off_t		offset;

	BufFileTell(ps->src.spool, &fileno, &offset);
	if (ps->search.wide)
		pairs_wide_search(ps);
	else if (n > PAIRS_SMALL_TENANT)
	{
		int			t;

		pairs_choose_layout(ps, votes, n, n);
		for (t = 0; t < ps->search.layout.ntables; t++)
			pairs_search_table(ps, t);
		pairs_search_done(ps);
		pfree(ps->search.perm);
		ps->search.perm = NULL;
	}
	else if (n > 1)
		search_small_tenant(ps);
	if (BufFileSeek(ps->src.spool, fileno, offset, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write a key of %s to its temporary file", ps->src.name)));
	RecStoreEnd(ps->search.rows);
	ps->search.rows = RecStoreBegin(ps->search.work_bytes / 2);
	SimhashVoterInit(votes);
}

/* The tenant being gathered, for read_cursor's calls */
typedef struct TenantGroup
{
	MemoryContext cxt;			/* holds the tenant's value */
	SimhashVoter votes;
	Datum		tenant;
	bool		any;
	int16		typlen;
	bool		typbyval;
	int64		rows;
} TenantGroup;

/* A row of the cursor: a new tenant searches the rows of the last first */
static void
add_tenant_row(PairsState *ps, const KeyTid *rec, HeapTuple tuple,
			   TupleDesc desc, void *arg)
{
	TenantGroup *g = (TenantGroup *) arg;
	bool		isnull;
	Datum		t = SPI_getbinval(tuple, desc, 3, &isnull);

	if (!g->any || DatumGetInt32(FunctionCall2Coll(&ps->src.tenantcmp,
												   ps->src.tenantcollation,
												   g->tenant, t)) != 0)
	{
		MemoryContext old;

		if (g->any)
			search_tenant(ps, &g->votes);
		MemoryContextReset(g->cxt);
		old = MemoryContextSwitchTo(g->cxt);
		g->tenant = datumCopy(t, g->typbyval, g->typlen);
		MemoryContextSwitchTo(old);
		g->any = true;
	}
	g->rows++;
	if (ps->search.wide)
	{
		pairs_wide_add(ps, SPI_getbinval(tuple, desc, 2, &isnull), &rec->tid);
		return;
	}
	RecStoreAdd(ps->search.rows, rec);
	SimhashVoterAddBatch(&g->votes, &rec->key, 1);
}

/*
 * Pairs within each tenant (simhash_pairs(..., tenant => column)): the
 * cursor's rows come ordered by tenant (pairs_tenant_query), and each
 * tenant's rows are searched before the next tenant's are read, so no
 * pair joins two tenants and no row is compared with another tenant's:
 * the work is the sum of each tenant's own.  Two tenants are one when
 * their type's ordering finds them equal, as the ORDER BY did.  Closes the
 * cursor and SPI, as pairs_read_rows_query does.
 */
void
pairs_search_by_tenant(PairsState *ps)
{
	TenantGroup g = {0};

	g.cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash tenant",
								  ALLOCSET_SMALL_SIZES);
	get_typlenbyval(TupleDescAttr(ps->src.portal->tupDesc, 2)->atttypid,
					&g.typlen, &g.typbyval);
	SimhashVoterInit(&g.votes);
	ps->search.rows = RecStoreBegin(ps->search.work_bytes / 2);
	read_cursor(ps, add_tenant_row, &g);
	if (g.any)
		search_tenant(ps, &g.votes);
	RecStoreEnd(ps->search.rows);
	ps->search.rows = NULL;
	MemoryContextDelete(g.cxt);
	if (ps->search.progress)
		ereport(NOTICE,
				(errmsg("simhash: %lld rows read through the executor, searched tenant by tenant",
						(long long) g.rows)));
}
