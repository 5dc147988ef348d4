/*-------------------------------------------------------------------------
 *
 * pairscitus.c
 *		simhash_pairs() and simhash_clusters() of a Citus distributed table,
 *		searched on the workers: only pairs travel to the coordinator.
 *
 * A table Citus distributes by hash keeps an empty shell on the
 * coordinator and its rows in shards on the workers.  Read through the
 * executor (pairsquery.c), every row's key and fingerprint comes to the
 * coordinator, which searches alone: adding workers makes nothing faster,
 * and the coordinator holds the whole table.  Here the workers search.
 *
 * Pairs within tenants.  When the tenant => column is the distribution
 * column, every tenant lies whole in one shard, so every pair does.  Each
 * shard is searched where it lies, by the worker's own simhash_pairs (or
 * simhash_clusters) with the same tenant column on the shard's table (a
 * plain heap there), one connection per shard, all at once.  The result
 * is the union of the shards' results; nothing else moves.
 *
 * The whole table.  The batch mode of Manku, Jain and Das Sarma (pairs.c)
 * sorts the rows once per permuted table and compares each group of equal
 * prefixes.  A group may hold rows of every shard, so rows must move; the
 * paper ran it as MapReduce, and so does this, with P parts, one per node
 * that holds shards.  The coordinator chooses the layout (from the bits of
 * a fixed sample of the rows) and sends it to every part.  In table t, a
 * row belongs to part pairs_part_of(fp, t): a hash of its bits in the
 * first block of t's prefix.  Part p reads the rows that belong to p in at
 * least one table (simhash_pairs_part_has): those of its own node's shards
 * there, and those of each other node's shards from that node, packed
 * (pairspart.c); and searches in table t only the rows that belong to p in t
 * (pairs_search_table).
 *
 * Exact, each pair once: two rows within k share the prefix of at least
 * one table (README.perm); let t be the first.  Sharing t's prefix, they
 * share its first block, so they belong to the same part p in t; part p
 * reads both, puts both in table t's sort, finds them in one group and
 * reports the pair, t being the first table where they share a prefix.
 * Any other part, or part p in a later table, that compares them sees
 * that they share t's prefix and drops the pair (compare_group's rule of
 * earlier tables).  Copies of one fingerprint are joined in table 0 by the
 * part of their common first block there, as in one process.
 *
 * Bytes moved.  Tables are the (B - K)-subsets of B blocks in lexical
 * order, so their first blocks are blocks 0 to K, K + 1 of them (K = k):
 * a row belongs to at most K + 1 parts whatever the number of tables,
 * P (1 - (1 - 1/P)^(K + 1)) on average (1.875 of 2 parts, 3.6 of 16 at
 * k = 3).  It travels to each of them but its own node's, as its
 * fingerprint, its key's binary form and their lengths (20 bytes for a
 * bigint key), in a bytea sent as text (twice the bytes).  Each part sorts
 * the rows of its share of each table, T N / P in all.  Only the pairs (or
 * the links of clusters) come back, as text: the part's three arrays of
 * first keys, second keys and distances.  test/bench/citus_bench.sh
 * measures it, and docs/scaling_out.md extrapolates.
 *
 * The coordinator unions the links of clusters itself, over the keys
 * (sorted, so each cluster's representative is its smallest key): its
 * memory grows with the rows that have a near-duplicate, not with the
 * table.  Rows that share a key are one member here, where the
 * coordinator's own search keeps each row.  With singletons => true it
 * reads every key once more, through Citus, to return the rest.
 *
 * When.  A table Citus distributes by hash, 64-bit fingerprints (not
 * bit(n)), the setting simhash.pairs_on_workers on, and a statement
 * outside a transaction block: the parts run in connections of their own
 * (master_run_on_worker, as the caller, from the coordinator and, for the
 * packed rows, from each part's node), each in its own transaction and
 * snapshot, so they cannot see what the caller's transaction wrote and
 * has not committed.  Inside BEGIN ... COMMIT the coordinator searches, as
 * it does for reference tables, for the tenant form when the tenant is
 * not the distribution column, for a table with row-level security (the
 * shards carry its policies only where Citus propagated them), and where
 * Citus is not installed.  Rows
 * that commit or go while the parts read may be seen by some parts and
 * not others: a pair is still reported at most once.
 *
 * This file is the coordinator's side: whether and how the workers
 * search, the commands, their results.  What a part runs on its node (the
 * layout it is sent, its rows, the packed rows) is pairspart.c.
 *
 * IDENTIFICATION
 *	  src/pairs/pairscitus.c
 *
 *-------------------------------------------------------------------------
 */
#include "pairs/pairs.h"

#include "access/xact.h"
#include "catalog/pg_proc.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/regproc.h"
#include "utils/ruleutils.h"

/* simhash.pairs_on_workers: search Citus distributed tables on the workers */
static bool pairs_on_workers = true;


/* One command, run on one node */
typedef struct CitusTask
{
	char	   *node;
	int			port;
	char	   *command;
} CitusTask;

/* A shard of the table, and the node its commands go to */
typedef struct CitusShard
{
	char	   *name;			/* qualified and quoted */
	char	   *node;
	int			port;
} CitusShard;

typedef struct PairsCitus
{
	bool		by_tenant;		/* the tenant form: one task per shard */
	bool		singletons;		/* clusters: every row, alone or not */
	char	   *relname;		/* the table, qualified and quoted */
	char	   *keyname;		/* its columns' names, not quoted */
	char	   *fpname;
	char	   *tenantname;
	char	   *schema;			/* the extension's, quoted */
	List	   *shards;			/* of CitusShard, in shard order */
	List	   *tasks;			/* of CitusTask */
	int64		estimated_rows; /* whole table: from the sample */
	int64		received;		/* pairs or links */
} PairsCitus;

/* The links of clusters received from the parts */
typedef struct CitusLinks
{
	Datum	   *a;
	Datum	   *b;
	int64		n;
	int64		cap;
} CitusLinks;

void
pairs_citus_init(void)
{
	DefineCustomBoolVariable("simhash.pairs_on_workers",
							 "Searches the pairs and clusters of a Citus distributed table on its workers.",
							 "Off: the coordinator reads every row and searches alone.",
							 &pairs_on_workers,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
}

/* SPI_execute_with_args with one OID argument, read-only */
static void
query_relation(const char *sql, Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];

	args[0] = ObjectIdGetDatum(relid);
	if (SPI_execute_with_args(sql, 1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read Citus's metadata: %s", sql);
}

static char *
spi_text(int row, int col)
{
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
}

/*
 * Can the workers search this table, and how?  When they can, sets
 * ps->citus: the form, the names the commands need, and the nodes (whole
 * table) or shards (tenants).  The key's type is set by the caller.
 */
bool
pairs_citus_plan(PairsState *ps, AttrNumber tenantatt)
{
	MemoryContext cxt = CurrentMemoryContext;
	Relation	rel = ps->src.rel;
	TupleDesc	desc = RelationGetDescr(rel);
	PairsCitus *pc;
	Oid			runner;
	bool		ok = false;
	uint64		i;

	if (!pairs_on_workers || ps->search.wide || IsTransactionBlock() ||
		!OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
		return false;

	/*
	 * The parts read the shards by name, which carry the policies of the
	 * table only where Citus propagated them: a table with row-level
	 * security for this role is read through the executor, where the
	 * coordinator's policies apply.
	 */
	if (check_enable_rls(RelationGetRelid(rel), InvalidOid, false) == RLS_ENABLED)
		return false;
	runner = DatumGetObjectId(DirectFunctionCall1(to_regprocedure,
												  CStringGetTextDatum("pg_catalog.master_run_on_worker(text[], integer[], text[], boolean)")));
	if (!OidIsValid(runner) ||
		SimhashProcAclcheck(runner, GetUserId(), ACL_EXECUTE) != ACLCHECK_OK)
		return false;

	pc = palloc0(sizeof(PairsCitus));
	pc->by_tenant = tenantatt != 0;
	pc->relname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
											 RelationGetRelationName(rel));
	pc->keyname = pstrdup(NameStr(TupleDescAttr(desc, ps->src.keyatt - 1)->attname));
	pc->fpname = pstrdup(NameStr(TupleDescAttr(desc, ps->src.fpatt - 1)->attname));
	if (tenantatt)
		pc->tenantname = pstrdup(NameStr(TupleDescAttr(desc, tenantatt - 1)->attname));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* hash-distributed, and for tenants by the tenant column */
	query_relation("SELECT pg_catalog.column_to_column_name(logicalrelid, partkey),"
				   "       (SELECT e.extnamespace::pg_catalog.regnamespace::pg_catalog.text"
				   "          FROM pg_catalog.pg_extension e WHERE e.extname = 'simhash')"
				   "  FROM pg_catalog.pg_dist_partition"
				   " WHERE logicalrelid = $1 AND partmethod = 'h'", RelationGetRelid(rel));
	if (SPI_processed == 1)
	{
		char	   *distcol = spi_text(0, 1);

		/* the extension's schema, quoted (regnamespace's output) */
		pc->schema = MemoryContextStrdup(cxt, spi_text(0, 2));

		ok = !tenantatt ||
			(distcol && strcmp(distcol, NameStr(TupleDescAttr(desc, tenantatt - 1)->attname)) == 0);
	}
	if (ok)
	{
		/* each shard, on a node with an active placement of it */
		query_relation("SELECT DISTINCT ON (s.shardid)"
					   "       pg_catalog.shard_name(s.logicalrelid, s.shardid, false), n.nodename, n.nodeport"
					   "  FROM pg_catalog.pg_dist_shard s"
					   "  JOIN pg_catalog.pg_dist_placement p ON p.shardid = s.shardid"
					   "  JOIN pg_catalog.pg_dist_node n ON n.groupid = p.groupid"
					   "   AND n.isactive AND n.noderole = 'primary'"
					   " WHERE s.logicalrelid = $1"
					   " ORDER BY s.shardid, n.nodeid", RelationGetRelid(rel));
		for (i = 0; i < SPI_processed; i++)
		{
			CitusShard *shard;

			MemoryContextSwitchTo(cxt);
			shard = palloc(sizeof(CitusShard));
			shard->name = spi_text(i, 1);
			shard->node = spi_text(i, 2);
			shard->port = pg_strtoint32(spi_text(i, 3));
			pc->shards = lappend(pc->shards, shard);
		}
	}
	MemoryContextSwitchTo(cxt);
	SPI_finish();
	MemoryContextSwitchTo(cxt);
	if (!ok || pc->shards == NIL)
		return false;
	ps->citus = pc;
	return true;
}

/*
 * The key column's type, as the column definition lists of the commands
 * write it: with the column's collation, which orders each pair's keys
 */
static const char *
key_type_name(PairsState *ps)
{
	const char *type = format_type_be_qualified(ps->src.keytype);

	if (!OidIsValid(ps->src.keycollation))
		return type;
	return psprintf("%s COLLATE %s", type,
					generate_collation_name(ps->src.keycollation));
}

/*
 * The command that returns a part's results as one text: an array of
 * three arrays, the first keys, the second keys and the distances (of
 * clusters: the keys, their clusters' keys, and an empty array).
 */
static char *
wrap_command(PairsState *ps, const char *call)
{
	PairsCitus *pc = ps->citus;
	const char *kt = key_type_name(ps);

	if (ps->search.clusters && pc->by_tenant)
		return psprintf("SELECT ARRAY[coalesce(pg_catalog.array_agg(r.k)::pg_catalog.text, '{}'),"
						" coalesce(pg_catalog.array_agg(r.c)::pg_catalog.text, '{}'), '{}']::pg_catalog.text"
						" FROM %s AS r(k %s, c %s)", call, kt, kt);
	return psprintf("SELECT ARRAY[coalesce(pg_catalog.array_agg(r.a)::pg_catalog.text, '{}'),"
					" coalesce(pg_catalog.array_agg(r.b)::pg_catalog.text, '{}'),"
					" coalesce(pg_catalog.array_agg(r.d)::pg_catalog.text, '{}')]::pg_catalog.text"
					" FROM %s AS r(a %s, b %s, d pg_catalog.int4)", call, kt, kt);
}

/* Each shard's command: the worker's own search of the tenants there */
static void
tenant_commands(PairsState *ps)
{
	PairsCitus *pc = ps->citus;
	ListCell   *lc;

	foreach(lc, pc->shards)
	{
		CitusShard *shard = lfirst(lc);
		CitusTask  *task = palloc(sizeof(CitusTask));
		char	   *call;

		if (ps->search.clusters)
			call = psprintf("%s.simhash_clusters(%s::pg_catalog.regclass, %s, %s, %d, tenant => %s, singletons => %s)",
							pc->schema, quote_literal_cstr(shard->name),
							quote_literal_cstr(pc->keyname), quote_literal_cstr(pc->fpname),
							ps->search.k, quote_literal_cstr(pc->tenantname),
							pc->singletons ? "true" : "false");
		else
			call = psprintf("%s.simhash_pairs(%s::pg_catalog.regclass, %s, %s, %d, tenant => %s)",
							pc->schema, quote_literal_cstr(shard->name),
							quote_literal_cstr(pc->keyname), quote_literal_cstr(pc->fpname),
							ps->search.k, quote_literal_cstr(pc->tenantname));
		task->node = shard->node;
		task->port = shard->port;
		task->command = wrap_command(ps, call);
		pc->tasks = lappend(pc->tasks, task);
	}
}

/*
 * The sample the layout is chosen from: the fingerprints of every
 * "every"-th row by the hash of its fingerprint (every = 1: all rows), or
 * of a share of the table's pages (TABLESAMPLE SYSTEM with a fixed seed,
 * which Citus runs on each shard, reading only those pages); the same
 * rows every run, so the same layout.  Into votes; the rows it has.
 */
static int64
sample(PairsState *ps, double percent, int every, SimhashVoter *votes)
{
	MemoryContext cxt = CurrentMemoryContext;
	PairsCitus *pc = ps->citus;
	const char *fp = quote_identifier(pc->fpname);
	int64		n;
	uint64		i;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(percent > 0 ?
					psprintf("SELECT %s::pg_catalog.int8 FROM %s TABLESAMPLE SYSTEM (%g) REPEATABLE (0)",
							 fp, pc->relname, percent) :
					psprintf("SELECT %s::pg_catalog.int8 FROM %s WHERE (pg_catalog.hashint8(%s::pg_catalog.int8) & %d) = 0",
							 fp, pc->relname, fp, every - 1),
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not sample the rows of %s", pc->relname);
	SimhashVoterInit(votes);
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			SimhashVoterAdd(votes, (uint64) DatumGetInt64(d));
	}
	n = (int64) SPI_processed;
	SPI_finish();
	MemoryContextSwitchTo(cxt);
	return n;
}

/*
 * The whole table's layout, chosen from the bits of a sample of its rows
 * and the row count the sample gives (the number of blocks needs no more):
 * a thousandth of its pages, or a hundredth, when either holds enough
 * rows; else, the table being small, about one row in 1,024 of a whole
 * read
 */
static void
choose_layout(PairsState *ps)
{
	PairsCitus *pc = ps->citus;
	SimhashVoter votes;
	int64		nsample;
	const char *how;

	if ((nsample = sample(ps, 0.1, 0, &votes)) >= 500)
	{
		pc->estimated_rows = nsample * 1000;
		how = "a thousandth of its pages";
	}
	else if ((nsample = sample(ps, 1, 0, &votes)) >= 500)
	{
		pc->estimated_rows = nsample * 100;
		how = "a hundredth of its pages";
	}
	else
	{
		nsample = sample(ps, 0, 1024, &votes);
		pc->estimated_rows = nsample * 1024;
		how = "about one row in 1,024";
	}
	pairs_choose_layout(ps, &votes, nsample, pc->estimated_rows);
	if (ps->search.progress)
		ereport(NOTICE,
				(errmsg("simhash: about %lld rows with a fingerprint on Citus's workers: %d blocks, %d tables",
						(long long) pc->estimated_rows, ps->search.layout.blocks,
						ps->search.layout.ntables),
				 errdetail("Counted and the layout %s chosen from %lld rows, %s.",
						   pairs_layout_text(&ps->search.layout), (long long) nsample, how)));
}

/* The nodes that hold shards, in the order of their first shard */
static List *
shard_nodes(PairsCitus *pc)
{
	List	   *nodes = NIL;
	ListCell   *lc;

	foreach(lc, pc->shards)
	{
		CitusShard *shard = lfirst(lc);
		ListCell   *nc;
		bool		seen = false;

		foreach(nc, nodes)
		{
			CitusShard *node = lfirst(nc);

			seen |= node->port == shard->port && strcmp(node->node, shard->node) == 0;
		}
		if (!seen)
			nodes = lappend(nodes, shard);
	}
	return nodes;
}

/*
 * "SELECT simhash_rows_pack(key, fp) FROM (the node's shards) WHERE the
 * part has the row", for one piece of the rows: the query that packs on
 * one node the rows of its shards that one part searches
 */
static char *
pack_query(PairsState *ps, const char *node, int port, const char *filter,
		   uint64 pieces, uint64 piece)
{
	PairsCitus *pc = ps->citus;
	StringInfoData q;
	ListCell   *lc;
	bool		first = true;

	initStringInfo(&q);
	appendStringInfo(&q, "SELECT %s.simhash_rows_pack(s.k, s.f) FROM (", pc->schema);
	foreach(lc, pc->shards)
	{
		CitusShard *shard = lfirst(lc);

		if (shard->port != port || strcmp(shard->node, node) != 0)
			continue;
		appendStringInfo(&q, "%sSELECT %s AS k, %s::pg_catalog.int8 AS f FROM %s",
						 first ? "" : " UNION ALL ", quote_identifier(pc->keyname),
						 quote_identifier(pc->fpname), shard->name);
		first = false;
	}
	appendStringInfo(&q, ") s WHERE %s", filter);
	if (pieces > 1)
		appendStringInfo(&q, " AND (pg_catalog.hashint8(s.f) & " UINT64_FORMAT ") = " UINT64_FORMAT,
						 pieces - 1, piece);
	return q.data;
}

/*
 * Each node's command: its part of every table.  The part's query packs
 * the rows of the node's own shards there, and the rows of each other
 * node's shards on that node, received through master_run_on_worker; rows
 * are packed in pieces of at most about 128 MB of records (a value holds
 * 1 GB, and travels as text twice its size).
 */
static void
whole_table_commands(PairsState *ps)
{
	PairsCitus *pc = ps->citus;
	char	   *layout = quote_literal_cstr(pairs_layout_text(&ps->search.layout));
	List	   *nodes = shard_nodes(pc);
	int			nparts = list_length(nodes);
	uint64		pieces = pg_nextpower2_64(Max(1, (uint64) pc->estimated_rows / nparts *
											  (PAIRS_PACKED_HEADER + 16) / (128 * 1024 * 1024)));
	int			part = 0;
	ListCell   *lc;

	foreach(lc, nodes)
	{
		CitusShard *here = lfirst(lc);
		CitusTask  *task = palloc(sizeof(CitusTask));
		char	   *filter = psprintf("%s.simhash_pairs_part_has(s.f, %s, %d, %d)",
									  pc->schema, layout, part, nparts);
		StringInfoData query;
		StringInfoData names;
		StringInfoData ports;
		StringInfoData commands;
		ListCell   *nc;
		uint64		piece;

		initStringInfo(&query);
		initStringInfo(&names);
		initStringInfo(&ports);
		initStringInfo(&commands);
		for (piece = 0; piece < pieces; piece++)
			appendStringInfo(&query, "%s%s", piece > 0 ? " UNION ALL " : "",
							 pack_query(ps, here->node, here->port, filter, pieces, piece));
		foreach(nc, nodes)
		{
			CitusShard *there = lfirst(nc);

			if (there == here)
				continue;
			for (piece = 0; piece < pieces; piece++)
			{
				appendStringInfo(&names, "%s%s", names.len > 0 ? ", " : "",
								 quote_literal_cstr(there->node));
				appendStringInfo(&ports, "%s%d", ports.len > 0 ? ", " : "", there->port);
				appendStringInfo(&commands, "%s%s", commands.len > 0 ? ", " : "",
								 quote_literal_cstr(pack_query(ps, there->node, there->port,
															   filter, pieces, piece)));
			}
		}
		if (commands.len > 0)
			appendStringInfo(&query,
							 " UNION ALL SELECT %s.simhash_rows_received(r.node_name, r.node_port, r.success, r.result)"
							 " FROM pg_catalog.master_run_on_worker(ARRAY[%s]::pg_catalog.text[],"
							 " ARRAY[%s]::pg_catalog.int4[], ARRAY[%s]::pg_catalog.text[], true) r",
							 pc->schema, names.data, ports.data, commands.data);
		task->node = here->node;
		task->port = here->port;
		task->command = wrap_command(ps,
									 psprintf("%s.simhash_pairs_part(%s, %d, %s, %d, %d, %s)",
											  pc->schema, quote_literal_cstr(query.data),
											  ps->search.k, layout, part, nparts,
											  ps->search.clusters ? "true" : "false"));
		pc->tasks = lappend(pc->tasks, task);
		part++;
	}
}

/* An array of the key's type from its text, with its elements */
static int
key_array(PairsState *ps, Datum arraytext, Datum **elems, bool **nulls)
{
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			n;
	Datum		array = OidInputFunctionCall(F_ARRAY_IN, TextDatumGetCString(arraytext),
											 ps->src.keytype, -1);

	get_typlenbyvalalign(ps->src.keytype, &typlen, &typbyval, &typalign);
	deconstruct_array(DatumGetArrayTypeP(array), ps->src.keytype, typlen, typbyval,
					  typalign, elems, nulls, &n);
	return n;
}

/*
 * A part's result: pairs (or a tenant's clusters) become result rows at
 * once; links of the whole table's clusters are kept, in cxt, for the
 * union at the end.
 */
static void
receive(PairsState *ps, const char *node, const char *port, char *result,
		ReturnSetInfo *rsinfo, CitusLinks *links, MemoryContext cxt)
{
	Datum	   *arrays;
	Datum	   *a,
			   *b,
			   *d = NULL;
	bool	   *anull,
			   *bnull,
			   *dnull;
	int			narrays,
				n,
				i;
	int16		keylen;
	bool		keybyval;

	deconstruct_array(DatumGetArrayTypeP(OidInputFunctionCall(F_ARRAY_IN, result, TEXTOID, -1)),
					  TEXTOID, -1, false, TYPALIGN_INT, &arrays, &anull, &narrays);
	if (narrays != 3 || anull[0] || anull[1] || anull[2])
		elog(ERROR, "unexpected result from Citus node %s:%s", node, port);
	n = key_array(ps, arrays[0], &a, &anull);
	if (key_array(ps, arrays[1], &b, &bnull) != n)
		elog(ERROR, "unexpected result from Citus node %s:%s", node, port);
	if (!ps->search.clusters || !ps->citus->by_tenant)
	{
		int			nd;

		deconstruct_array(DatumGetArrayTypeP(OidInputFunctionCall(F_ARRAY_IN, TextDatumGetCString(arrays[2]), INT4OID, -1)),
						  INT4OID, 4, true, TYPALIGN_INT, &d, &dnull, &nd);
		if (nd != n)
			elog(ERROR, "unexpected result from Citus node %s:%s", node, port);
	}
	ps->citus->received += n;
	get_typlenbyval(ps->src.keytype, &keylen, &keybyval);
	for (i = 0; i < n; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (ps->search.clusters && !ps->citus->by_tenant)
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			if (links->n == links->cap)
			{
				links->cap = Max(1024, links->cap * 2);
				links->a = links->a ? repalloc_huge(links->a, links->cap * sizeof(Datum)) :
					palloc_extended(links->cap * sizeof(Datum), MCXT_ALLOC_HUGE);
				links->b = links->b ? repalloc_huge(links->b, links->cap * sizeof(Datum)) :
					palloc_extended(links->cap * sizeof(Datum), MCXT_ALLOC_HUGE);
			}
			links->a[links->n] = datumCopy(a[i], keybyval, keylen);
			links->b[links->n] = datumCopy(b[i], keybyval, keylen);
			links->n++;
			MemoryContextSwitchTo(old);
			continue;
		}
		values[0] = a[i];
		nulls[0] = anull[i];
		values[1] = b[i];
		nulls[1] = bnull[i];
		if (d)
			values[2] = d[i];
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * Run every task at once, each in a connection of its own to its node
 * (Citus's master_run_on_worker, as the caller), and take in the results.
 * A task that failed fails the call, with the node's message.
 */
static void
run_tasks(PairsState *ps, ReturnSetInfo *rsinfo, CitusLinks *links)
{
	MemoryContext cxt = CurrentMemoryContext;
	PairsCitus *pc = ps->citus;
	int			ntasks = list_length(pc->tasks);
	Datum	   *nodes = palloc(ntasks * sizeof(Datum));
	Datum	   *ports = palloc(ntasks * sizeof(Datum));
	Datum	   *commands = palloc(ntasks * sizeof(Datum));
	Oid			argtypes[3] = {TEXTARRAYOID, INT4ARRAYOID, TEXTARRAYOID};
	Datum		args[3];
	ListCell   *lc;
	int			i = 0;
	int			nest;
	uint64		r;

	foreach(lc, pc->tasks)
	{
		CitusTask  *task = lfirst(lc);

		nodes[i] = CStringGetTextDatum(task->node);
		ports[i] = Int32GetDatum(task->port);
		commands[i] = CStringGetTextDatum(task->command);
		i++;
	}
	args[0] = PointerGetDatum(construct_array(nodes, ntasks, TEXTOID, -1, false, TYPALIGN_INT));
	args[1] = PointerGetDatum(construct_array(ports, ntasks, INT4OID, 4, true, TYPALIGN_INT));
	args[2] = PointerGetDatum(construct_array(commands, ntasks, TEXTOID, -1, false, TYPALIGN_INT));

	nest = pairs_fast_citus_poll(GUC_ACTION_SAVE);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT node_name, node_port::pg_catalog.text, success, result"
							  "  FROM pg_catalog.master_run_on_worker($1, $2, $3, true)",
							  3, argtypes, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not run the search on Citus's workers");
	for (r = 0; r < SPI_processed; r++)
	{
		char	   *node = spi_text(r, 1);
		char	   *port = spi_text(r, 2);
		char	   *success = spi_text(r, 3);
		char	   *result = spi_text(r, 4);

		if (success == NULL || strcmp(success, "t") != 0)
			pairs_report_node_failure(node, pg_strtoint32(port), result);
		receive(ps, node, port, result, rsinfo, links, cxt);
	}
	SPI_finish();
	MemoryContextSwitchTo(cxt);
	AtEOXact_GUC(true, nest);
}

static int
compare_key_datums(const void *x, const void *y, void *arg)
{
	PairsState *ps = (PairsState *) arg;

	return DatumGetInt32(FunctionCall2Coll(&ps->src.keycmp, ps->src.keycollation,
										   *(const Datum *) x, *(const Datum *) y));
}

/* The index of a key among the sorted keys, or -1 */
static int64
find_key(PairsState *ps, const Datum *keys, int64 nkeys, Datum key)
{
	int64		lo = 0,
				hi = nkeys;

	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;
		int			c = compare_key_datums(&keys[mid], &key, ps);

		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int64
find_root(int64 *parent, int64 x)
{
	int64		root = x;

	while (parent[root] != root)
		root = parent[root];
	while (parent[x] != root)
	{
		int64		next = parent[x];

		parent[x] = root;
		x = next;
	}
	return root;
}

/*
 * The whole table's clusters from the parts' links: a union-find over the
 * keys in order, each root the smallest key of its cluster; then, with
 * singletons, every other row's key, read through Citus.
 */
static void
emit_clusters(PairsState *ps, CitusLinks *links, ReturnSetInfo *rsinfo)
{
	PairsCitus *pc = ps->citus;
	int64		nkeys = 0;
	Datum	   *keys = palloc_extended(Max(1, 2 * links->n) * sizeof(Datum), MCXT_ALLOC_HUGE);
	int64	   *parent;
	int64		i;

	for (i = 0; i < links->n; i++)
	{
		keys[2 * i] = links->a[i];
		keys[2 * i + 1] = links->b[i];
	}
	qsort_arg(keys, 2 * links->n, sizeof(Datum), compare_key_datums, ps);
	for (i = 0; i < 2 * links->n; i++)
		if (nkeys == 0 || compare_key_datums(&keys[nkeys - 1], &keys[i], ps) != 0)
			keys[nkeys++] = keys[i];
	parent = palloc_extended(Max(1, nkeys) * sizeof(int64), MCXT_ALLOC_HUGE);
	for (i = 0; i < nkeys; i++)
		parent[i] = i;
	for (i = 0; i < links->n; i++)
	{
		int64		x = find_root(parent, find_key(ps, keys, nkeys, links->a[i]));
		int64		y = find_root(parent, find_key(ps, keys, nkeys, links->b[i]));

		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		/* the smaller key stays the root */
		if (x != y)
			parent[Max(x, y)] = Min(x, y);
	}
	for (i = 0; i < nkeys; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		values[0] = keys[i];
		values[1] = keys[find_root(parent, i)];
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	if (pc->singletons)
	{
		MemoryContext cxt = CurrentMemoryContext;
		Portal		portal;

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		portal = SPI_cursor_open_with_args(NULL,
										   psprintf("SELECT %s FROM %s WHERE %s IS NOT NULL",
													quote_identifier(pc->keyname), pc->relname,
													quote_identifier(pc->fpname)),
										   0, NULL, NULL, NULL, true, 0);
		for (;;)
		{
			uint64		r;

			CHECK_FOR_INTERRUPTS();
			SPI_cursor_fetch(portal, true, 10000);
			if (SPI_processed == 0)
				break;
			for (r = 0; r < SPI_processed; r++)
			{
				Datum		values[2];
				bool		nulls[2];

				values[0] = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &nulls[0]);
				if (!nulls[0] && find_key(ps, keys, nkeys, values[0]) >= 0)
					continue;
				values[1] = values[0];
				nulls[1] = nulls[0];
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			}
			SPI_freetuptable(SPI_tuptable);
		}
		SPI_cursor_close(portal);
		SPI_finish();
		MemoryContextSwitchTo(cxt);
	}
}

/* The search on the workers, planned by pairs_citus_plan */
void
pairs_citus_search(PairsState *ps, ReturnSetInfo *rsinfo, bool singletons)
{
	PairsCitus *pc = ps->citus;
	CitusLinks	links = {0};

	pc->singletons = singletons;
	if (pc->by_tenant)
		tenant_commands(ps);
	else
	{
		choose_layout(ps);
		whole_table_commands(ps);
	}
	if (ps->search.progress)
		ereport(NOTICE,
				(errmsg("simhash: searching %s on Citus's workers: %d %s at once",
						pc->relname, list_length(pc->tasks),
						pc->by_tenant ? "shards" : "parts")));
	run_tasks(ps, rsinfo, &links);
	if (ps->search.clusters && !pc->by_tenant)
		emit_clusters(ps, &links, rsinfo);
	if (ps->search.progress)
		ereport(NOTICE,
				(errmsg("simhash: received %lld %s from Citus's workers",
						(long long) pc->received,
						ps->search.clusters && !pc->by_tenant ? "links" :
						ps->search.clusters ? "rows" : "pairs"),
				 errdetail("%.3f s.", pairs_elapsed(ps))));
}
