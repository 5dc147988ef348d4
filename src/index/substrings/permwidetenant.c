/*-------------------------------------------------------------------------
 *
 * permwidetenant.c
 *		simhash_perm: reading one tenant's entries whole, and the distance
 *		of each of its rows from the index alone.
 *
 * In an index with leading equality columns (permtenant.c) a tenant's
 * entries are one key range of each table.  A nearest-neighbour scan
 * whose rings within the tenant would cost more than reading the tenant
 * whole (permwideknn.c) reads that range instead.  Without quals it needs
 * no row: the substrings partition the code, and table t's key holds
 * substring t and, in its tail, substrings t + 1 .. t + n whole
 * (PermWideTailSubstrings), so a row's distance from the query is the sum
 * of its keys' distances over the tables PermWideTenantNextTable() steps
 * through (tables 0 and 2 for a fingerprint in four 16-bit substrings
 * whose keys keep the next 16 bits).  The sums are kept per row in a hash
 * table keyed by the TID: a row of a large tenant costs one entry per
 * table read, about 35 ns each (docs/reports/tenant_bench_10M.txt).
 *
 * A row whose entry is missing from one of the tables read (its insert
 * was cut short by a crash, and VACUUM has not removed what it left) has
 * no complete sum: it is handed out as such, and the scan reads it.
 *
 * IDENTIFICATION
 *	  src/index/substrings/permwidetenant.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "index/perm.h"
#include "index/permscan.h"
#include "type/simhash.h"

/*
 * A row of the tenant: its distance so far.  In a simplehash table keyed
 * by the TID as an integer.
 */
typedef struct TenantRow
{
	uint64		tid;			/* block << 16 | offset */
	int32		distance;		/* the sum of its substrings' distances */
	int16		tables;			/* tables that held an entry of it */
	char		status;			/* simplehash's */
} TenantRow;

#define SH_PREFIX		tenantrows
#define SH_ELEMENT_TYPE	TenantRow
#define SH_KEY_TYPE		uint64
#define SH_KEY			tid
#define SH_HASH_KEY(tb, key)	hash_combine(murmurhash32((uint32) ((key) >> 32)), murmurhash32((uint32) (key)))
#define SH_EQUAL(tb, a, b)		((a) == (b))
#define SH_SCOPE		static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* What the callback of one table's read needs */
typedef struct SubstringSum
{
	tenantrows_hash *rows;
	uint64		query;			/* the query's key in the table read */
	int			rest;			/* its keys' low bits, left out of the sum */
} SubstringSum;

/*
 * Every entry of table t whose key lies within radius of key, read from
 * the tenant's whole key range (the whole table when there are no leading
 * columns: tenant is then 0)
 */
void
PermWideProbeTenant(Relation index, int t, uint64 tenant, uint64 key,
					uint16 extra, int radius, PermMatchCallback callback,
					void *arg, PermPinList *pins)
{
	const PermLayout *layout = &PermGetState(index)->layout;
	uint64		hi = layout->tenants > 0 ?
		tenant | PERM_TENANT_CODE_MASK : PG_UINT64_MAX;

	PermProbeRange(index, t, tenant, hi, key | tenant, extra, radius, callback,
				   arg, pins);
}

/*
 * The table the index-only read goes on with after table t: t + 1 + n, n
 * the substrings t's tail holds whole; *rest is set to the bits of t's
 * keys below them, left out of the sum.  Every table without tails, every
 * other one when each key keeps the next substring whole.
 */
int
PermWideTenantNextTable(const PermLayout *layout, int t, int *rest)
{
	return t + 1 + PermWideTailSubstrings(layout, t, rest);
}

/*
 * The number of tables the index-only read goes through: one when its
 * entries hold the whole code
 */
int
PermWideTenantTables(const PermLayout *layout)
{
	int			n = 0;
	int			rest;
	int			t;

	if (PermWideEntryHoldsCode(layout, 0))
		return 1;
	t = 0;
	while (t < layout->ntables)
	{
		t = PermWideTenantNextTable(layout, t, &rest);
		n++;
	}
	return n;
}

/* Callback of one table's read: add an entry's substrings' distance */
SIMHASH_POPCNT
static void
add_substring(void *arg, ItemPointer tid, uint64 key, int distance)
{
	SubstringSum *sum = (SubstringSum *) arg;
	TenantRow  *row;
	bool		found;

	row = tenantrows_insert(sum->rows, PermTidNumber(tid), &found);
	if (!found)
	{
		row->distance = 0;
		row->tables = 0;
	}
	/* the tenant's bits agree: above rest, only whole substrings differ */
	row->distance += simhash_hamming((key ^ sum->query) >> sum->rest, 0);
	row->tables++;
}

/* What forwarding an entry of a table that holds whole codes needs */
typedef struct WholeCodes
{
	void		(*callback) (void *arg, ItemPointer tid, int distance);
	void	   *arg;
} WholeCodes;

/* Callback of the read of such a table: the entry's distance is the row's */
static void
forward_entry(void *arg, ItemPointer tid, uint64 key, int distance)
{
	WholeCodes *wc = (WholeCodes *) arg;

	wc->callback(wc->arg, tid, distance);
}

/*
 * Every row of the tenant with its distance from the query, whose key in
 * table t is keys[t] (and extra bits extras[t]), from the index alone:
 * callback(arg, tid, d) for each, d = -1 for a row with an entry missing
 * from a table read.  When table 0's entries hold the whole code, its
 * range alone gives every distance, each handed on as its leaf is read
 * (the callback must then take no lock).  Otherwise rows, the tenant's
 * size about, sizes the hash table of the sums; tmp holds it, and is
 * reset.
 */
void
PermWideTenantDistances(Relation index, uint64 tenant, const uint64 *keys,
						const uint16 *extras, double rows, MemoryContext tmp,
						void (*callback) (void *arg, ItemPointer tid,
										  int distance),
						void *arg)
{
	const PermLayout *layout = &PermGetState(index)->layout;
	int			ntables = PermWideTenantTables(layout);
	tenantrows_hash *hash;
	tenantrows_iterator it;
	TenantRow  *row;
	SubstringSum sum;
	int			t,
				next;

	if (ntables == 1 && PermWideEntryHoldsCode(layout, 0))
	{
		WholeCodes	wc;

		wc.callback = callback;
		wc.arg = arg;
		PermWideProbeTenant(index, 0, tenant, keys[0], extras[0],
							PERM_MAX_HAMMING, forward_entry, &wc, NULL);
		return;
	}
	hash = tenantrows_create(tmp, (uint32) Min(Max(64.0, rows * 1.5),
											   64.0 * 1024 * 1024),
							 NULL);
	sum.rows = hash;
	for (t = 0; t < layout->ntables; t = next)
	{
		CHECK_FOR_INTERRUPTS();
		next = PermWideTenantNextTable(layout, t, &sum.rest);
		sum.query = keys[t] | tenant;
		PermWideProbeTenant(index, t, tenant, keys[t], 0, PERM_MAX_HAMMING,
							add_substring, &sum, NULL);
	}
	tenantrows_start_iterate(hash, &it);
	while ((row = tenantrows_iterate(hash, &it)) != NULL)
	{
		ItemPointerData tid;

		ItemPointerSet(&tid, (BlockNumber) (row->tid >> 16),
					   (OffsetNumber) (row->tid & 0xFFFF));
		callback(arg, &tid, row->tables == ntables ? row->distance : -1);
	}
	tenantrows_destroy(hash);
	MemoryContextReset(tmp);
}
