/*-------------------------------------------------------------------------
 *
 * pairspart.c
 *		What a part of simhash_pairs()'s search over Citus's workers runs on
 *		its node (pairscitus.c has the design): the layout it is sent, the
 *		filter of the rows it searches (simhash_pairs_part_has), the rows of
 *		other nodes packed (simhash_rows_pack) and received
 *		(simhash_rows_received), and the setup of simhash_pairs_part, whose
 *		search is pairs.c's over the rows pairsquery.c reads.
 *
 * IDENTIFICATION
 *	  src/pairs/pairspart.c
 *
 *-------------------------------------------------------------------------
 */
#include "pairs/pairs.h"

#include "port/pg_bswap.h"
#include "utils/expandeddatum.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"

/* The most parts a search may have */
#define PAIRS_MAX_PARTS		1024

/*
 * The layout as text, for the parts: "k/B/" and the block of each bit, bit
 * 63 first, one hexadecimal digit each.  The tables follow from them
 * (PermLayoutTables).
 */
char *
pairs_layout_text(const PermLayout *layout)
{
	StringInfoData s;
	int			i;

	initStringInfo(&s);
	appendStringInfo(&s, "%d/%d/", layout->max_distance, layout->blocks);
	for (i = 63; i >= 0; i--)
		appendStringInfoChar(&s, "0123456789abcdef"[layout->block_of_bit[i]]);
	return s.data;
}

/* The layout a part was sent, checked as any argument is */
static void
parse_layout(const char *text, PermLayout *layout)
{
	int			k,
				blocks,
				used = 0;
	int			n = -1;
	int			i;
	bool		ok;

	memset(layout, 0, sizeof(PermLayout));
	ok = sscanf(text, "%d/%d/%n", &k, &blocks, &n) == 2 && n > 0 &&
		strlen(text + n) == 64 && k >= 0 && k <= PAIRS_MAX_K &&
		blocks > k && blocks <= PERM_MAX_BLOCKS &&
		PermCountTables(blocks, k) > 0;
	for (i = 0; ok && i < 64; i++)
	{
		char		c = text[n + 63 - i];
		int			b = (c >= '0' && c <= '9') ? c - '0' :
			(c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;

		ok = b >= 0 && b < blocks;
		if (ok)
		{
			layout->block_of_bit[i] = (uint8) b;
			used |= 1 << b;
		}
	}
	if (!ok || used != (1 << blocks) - 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid layout \"%s\"", text),
				 errdetail("A layout is \"k/blocks/\" and 64 hexadecimal digits, the block of each bit, as simhash_pairs() sends its parts.")));
	layout->max_distance = k;
	layout->blocks = blocks;
	PermLayoutTables(layout);
}

static void
check_part(int part, int nparts)
{
	if (nparts < 1 || nparts > PAIRS_MAX_PARTS || part < 0 || part >= nparts)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("part %d of %d parts is out of range", part, nparts),
				 errdetail("Parts are numbered from 0, and a search has 1 to %d.",
						   PAIRS_MAX_PARTS)));
}

/*
 * Citus's master_run_on_worker, by which the coordinator runs the parts
 * and each part fetches other nodes' rows, looks for results every
 * citus.remote_task_check_interval (10 ms by default), sleeping between,
 * and takes what the connection holds each time, so that megabytes of
 * packed rows arrive in many sleeps: at 1 ms the whole table's pairs at a
 * million rows took 0.61 s instead of 0.82 to 1.18 (three runs each, two
 * workers on one machine).  Set for the rest of the transaction (the
 * part's, in its own connection) or until restore_citus_poll (the
 * coordinator's); a no-op without Citus.
 */
int
pairs_fast_citus_poll(GucAction action)
{
	int			nest = action == GUC_ACTION_SAVE ? NewGUCNestLevel() : 0;

	if (GetConfigOption("citus.remote_task_check_interval", true, false) != NULL)
		(void) set_config_option("citus.remote_task_check_interval", "1",
								 PGC_USERSET, PGC_S_SESSION, action, true, 0, false);
	return nest;
}

/*
 * A part of the search over Citus workers (simhash_pairs_part): the layout
 * it was sent, and which rows it searches in each table
 */
void
pairs_part_begin(PairsState *ps, const char *layout, int part, int nparts)
{
	PermLayout parsed;
	int			t;

	check_part(part, nparts);
	parse_layout(layout, &parsed);
	if (parsed.max_distance != ps->search.k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the layout \"%s\" is made for k = %d, not %d",
						layout, parsed.max_distance, ps->search.k)));
	pairs_set_layout(ps, &parsed);
	(void) pairs_fast_citus_poll(GUC_ACTION_LOCAL);
	ps->search.part = part;
	ps->search.nparts = nparts;
	for (t = 0; t < parsed.ntables; t++)
		ps->search.part_salt[t] = pairs_first_block(&parsed, t, &ps->search.part_mask[t]);
}

/*
 * What simhash_pairs_part_has keeps between calls: the first blocks of the
 * layout's tables, each once
 */
typedef struct PartFilter
{
	char		text[96];
	int			nblocks;
	uint64		mask[PERM_MAX_BLOCKS];
	int			salt[PERM_MAX_BLOCKS];
} PartFilter;

PG_FUNCTION_INFO_V1(simhash_pairs_part_has);

/*
 * simhash_pairs_part_has(fp int8, layout text, part int, nparts int)
 * returns bool: does part search this fingerprint in some table?  The
 * filter of each part's distributed query, evaluated on the shards.
 */
Datum
simhash_pairs_part_has(PG_FUNCTION_ARGS)
{
	uint64		fp = (uint64) PG_GETARG_INT64(0);
	char	   *layout = text_to_cstring(PG_GETARG_TEXT_PP(1));
	int			part = PG_GETARG_INT32(2);
	int			nparts = PG_GETARG_INT32(3);
	PartFilter *f = (PartFilter *) fcinfo->flinfo->fn_extra;
	int			t;
	int			b;

	if (f == NULL || strcmp(f->text, layout) != 0)
	{
		PermLayout parsed;

		parse_layout(layout, &parsed);
		if (f == NULL)
			f = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(PartFilter));
		strlcpy(f->text, layout, sizeof(f->text));
		f->nblocks = 0;
		for (t = 0; t < parsed.ntables; t++)
		{
			uint64		mask;
			int			salt = pairs_first_block(&parsed, t, &mask);

			for (b = 0; b < f->nblocks && f->salt[b] != salt; b++)
				;
			if (b == f->nblocks)
			{
				f->mask[f->nblocks] = mask;
				f->salt[f->nblocks++] = salt;
			}
		}
		fcinfo->flinfo->fn_extra = f;
	}
	check_part(part, nparts);
	for (b = 0; b < f->nblocks; b++)
		if (pairs_part_of(fp, f->mask[b], f->salt[b], nparts) == part)
			PG_RETURN_BOOL(true);
	PG_RETURN_BOOL(false);
}

/* A command that failed on a node fails the call, with the node's message */
void
pairs_report_node_failure(const char *node, int port, const char *result)
{
	const char *message = result ? result : "no message";

	if (strncmp(message, "ERROR:  ", 8) == 0)
		message += 8;
	ereport(ERROR,
			(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
			 errmsg("%s", message),
			 errdetail("On Citus node %s:%d, in simhash_pairs()'s search.", node, port)));
}

/*
 * Packed rows: how a part receives the rows of other nodes.  A part's node
 * runs simhash_rows_pack(key, fp) over its own shards, and asks each other
 * node for the same over that node's shards (master_run_on_worker from the
 * part's node: one text value a node, the hexadecimal of the bytea), so
 * the rows go from node to node, none through the coordinator, and each a
 * few bytes of one value, not a tuple formed, sent, stored and read again
 * by Citus's executor.  A record is the fingerprint and the length of the
 * key's binary form (-1: NULL), big-endian, then that form (the type's
 * send function; its receive function reads it back, pairsquery.c):
 * PAIRS_PACKED_HEADER + 8 bytes for a bigint key.
 *
 * The state grows in place: an expanded object (utils/expandeddatum.h),
 * which the aggregate code keeps without copying, so appending is
 * amortised O(1); flattened, it is the bytea of the records.
 */
typedef struct PackedRows
{
	ExpandedObjectHeader hdr;
	char	   *data;
	Size		used;
	Size		cap;
} PackedRows;

static Size
packed_flat_size(ExpandedObjectHeader *eohptr)
{
	return VARHDRSZ + ((PackedRows *) eohptr)->used;
}

static void
packed_flatten(ExpandedObjectHeader *eohptr, void *result, Size allocated_size)
{
	PackedRows *p = (PackedRows *) eohptr;

	SET_VARSIZE(result, allocated_size);
	memcpy(VARDATA(result), p->data, p->used);
}

static const ExpandedObjectMethods packed_methods = {
	packed_flat_size,
	packed_flatten
};

static void
packed_append(PackedRows *p, const char *bytes, Size n)
{
	if (p->used + n > p->cap)
	{
		Size		cap = Max(Max(p->cap * 2, p->used + n), 8192);

		if (cap > MaxAllocSize - VARHDRSZ)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("the packed rows of a part exceed 1 GB")));
		p->data = p->data ? repalloc(p->data, cap) :
			MemoryContextAlloc(p->hdr.eoh_context, cap);
		p->cap = cap;
	}
	memcpy(p->data + p->used, bytes, n);
	p->used += n;
}

PG_FUNCTION_INFO_V1(simhash_rows_pack_step);

/*
 * simhash_rows_pack_step(state bytea, key anyelement, fp int8) returns
 * bytea: the transition of simhash_rows_pack; a row without a fingerprint
 * is left out
 */
Datum
simhash_rows_pack_step(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	PackedRows *p;
	FmgrInfo   *send = (FmgrInfo *) fcinfo->flinfo->fn_extra;
	uint64		fp;
	uint32		len;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "simhash_rows_pack_step called in non-aggregate context");
	if (send == NULL)
	{
		Oid			keytype = get_fn_expr_argtype(fcinfo->flinfo, 1);
		Oid			sendfn;
		bool		varlena;

		if (!OidIsValid(keytype))
			elog(ERROR, "could not determine the key's type");
		getTypeBinaryOutputInfo(keytype, &sendfn, &varlena);
		send = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(FmgrInfo));
		fmgr_info_cxt(sendfn, send, fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = send;
	}
	if (!PG_ARGISNULL(0) &&
		VARATT_IS_EXTERNAL_EXPANDED_RW(DatumGetPointer(PG_GETARG_DATUM(0))))
		p = (PackedRows *) DatumGetEOHP(PG_GETARG_DATUM(0));
	else
	{
		MemoryContext objcxt = AllocSetContextCreate(aggcxt, "simhash packed rows",
													 ALLOCSET_DEFAULT_SIZES);

		p = MemoryContextAllocZero(objcxt, sizeof(PackedRows));
		EOH_init_header(&p->hdr, &packed_methods, objcxt);
		if (!PG_ARGISNULL(0))
		{
			/* a flat state: the records so far */
			bytea	   *flat = PG_GETARG_BYTEA_PP(0);

			packed_append(p, VARDATA_ANY(flat), VARSIZE_ANY_EXHDR(flat));
		}
	}
	if (!PG_ARGISNULL(2))
	{
		char		record[PAIRS_PACKED_HEADER + 8];
		bytea	   *form = NULL;
		Oid			keytype = send->fn_oid == F_INT8SEND ? INT8OID : InvalidOid;

		fp = pg_hton64((uint64) PG_GETARG_INT64(2));
		memcpy(record, &fp, 8);
		if (keytype == INT8OID && !PG_ARGISNULL(1))
		{
			/* int8send's form, without its call: the big-endian integer */
			uint64		v = pg_hton64((uint64) PG_GETARG_INT64(1));

			len = pg_hton32(8);
			memcpy(record + 8, &len, 4);
			memcpy(record + PAIRS_PACKED_HEADER, &v, 8);
			packed_append(p, record, PAIRS_PACKED_HEADER + 8);
			PG_RETURN_DATUM(EOHPGetRWDatum(&p->hdr));
		}
		if (!PG_ARGISNULL(1))
			form = SendFunctionCall(send, PG_GETARG_DATUM(1));
		len = pg_hton32(form ? (uint32) VARSIZE(form) - VARHDRSZ : PG_UINT32_MAX);
		memcpy(record + 8, &len, 4);
		packed_append(p, record, PAIRS_PACKED_HEADER);
		if (form)
		{
			packed_append(p, VARDATA(form), VARSIZE(form) - VARHDRSZ);
			pfree(form);
		}
	}
	PG_RETURN_DATUM(EOHPGetRWDatum(&p->hdr));
}

PG_FUNCTION_INFO_V1(simhash_rows_received);

/*
 * simhash_rows_received(node text, port int, success bool, result text)
 * returns bytea: the packed rows another node sent, from the columns of
 * master_run_on_worker; its failure is this query's, with its message
 */
Datum
simhash_rows_received(PG_FUNCTION_ARGS)
{
	char	   *node = PG_ARGISNULL(0) ? "?" : text_to_cstring(PG_GETARG_TEXT_PP(0));
	int			port = PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1);
	char	   *result = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));

	if (PG_ARGISNULL(2) || !PG_GETARG_BOOL(2))
		pairs_report_node_failure(node, port, result);
	if (result == NULL || result[0] == '\0')
		PG_RETURN_NULL();		/* no row had a fingerprint */
	PG_RETURN_DATUM(DirectFunctionCall1(byteain, CStringGetDatum(result)));
}
