/*-------------------------------------------------------------------------
 *
 * permsubstrings.c
 *		simhash_perm: the engine of bit(n) codes, and of codes after leading
 *		(tenant) columns: multi-index hashing (PermSubstringsEngine).
 *
 * A code of width bits is cut into m substrings, one table each, keyed on
 * the substring (after a 16-bit hash of the tenant, where there are
 * leading columns), with the code's next bits in the key's tail
 * (permwidelayout.c).  A code within r bits of a query is within
 * floor(r / m) bits of it in some substring: the radius scan probes every
 * table's ball (permwidescan.c), the nearest-neighbour scan widens the
 * balls ring by ring or reads the code store in passes (permwideknn.c,
 * permwidestore.c), and a tenant's entries can be read whole
 * (permwidescan.c).  This file holds the engine's table of functions,
 * which the shared parts call (perm.h, PermEngine), a row's keys, and the
 * decision of an exclusion constraint's check.
 *
 * IDENTIFICATION
 *	  src/index/substrings/permsubstrings.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relscan.h"
#include "utils/varbit.h"

#include "index/perm.h"
#include "index/permscan.h"
#include "type/hamming_query.h"

/*
 * A row's key in each table: its code's substrings (after its tenant's
 * hash), permtenant.c; none for a NULL tenant
 */
static bool
substrings_row_keys(Relation index, PermState *state, const Datum *values,
					const bool *isnull, ItemPointer tid, KeyTid *keys)
{
	uint64		wkeys[PERM_MAX_TABLES];
	uint16		extras[PERM_MAX_TABLES];
	int			t;

	if (!PermRowKeys(index, &state->layout, values, isnull, wkeys, extras))
		return false;
	for (t = 0; t < state->layout.ntables; t++)
	{
		keys[t].key = wkeys[t];
		keys[t].tid = *tid;
		keys[t].extra = extras[t];
	}
	return true;
}

/*
 * Does a constraint check's match on an index laid out by multi-index
 * hashing (permwidelayout.c) conflict?  Its code within the radius of the new
 * row's, and its leading values equal the new row's.  The code comes from
 * the code store (PermStoreFindCode) where it keeps codes (bit(n) codes):
 * no row is read and no index expression computed for a candidate whose
 * code lies beyond the radius.  Without leading columns that decides.
 * With them, the index holds a hash of the tenant only: a candidate within
 * the radius (a conflict, or a tenant of the same hash), and every
 * candidate of a 64-bit code, is read under the check's snapshot and its
 * values computed as the executor computes the new row's (README.perm,
 * "Security", says what is left to do there).
 */
static bool
substrings_constraint_match(IndexScanDesc scan)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;
	PermState  *state = so->state;
	int			code = state->code_column;

	/* the new row's code and the constraint's radius: its ~=, prepared */
	const PermWideQual *qual = &so->wide_quals[0];
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];

	Assert(so->nquals == 1);
	if (state->has_codes)
	{
		VarBit	   *stored = PermStoreCodeBits(state, &scan->xs_heaptid);

		/* not in the store: an insert cut short, its row dead */
		if (stored == NULL ||
			simhash_bit_distance(stored, qual->code) > qual->radius)
			return false;
		/* within the radius: without leading columns, a conflict */
		if (state->layout.tenants == 0)
			return true;
	}
	if (so->rows == NULL)
		PermScanBeginRowReader(scan, so);
	if (!PermRowReaderFetchValues(so->rows, &scan->xs_heaptid,
								  scan->xs_snapshot, values, isnull) ||
		isnull[code] || !PermTenantRowMatches(scan, values, isnull))
		return false;
	return simhash_bit_distance(PermCodeBits(state->code_bits, values[code]),
								qual->code) <= qual->radius;
}

/*
 * The scan's quals on the code (PermWideScanQuals: ~= at the constraint's
 * radius) and, within a tenant, the bits of its leading values
 */
static void
substrings_prepare(IndexScanDesc scan)
{
	PermScanOpaque so = (PermScanOpaque) scan->opaque;

	so->wide_quals = palloc(Max(1, scan->numberOfKeys) * sizeof(PermWideQual));
	so->nquals = PermWideScanQuals(scan, so->state, so->wide_quals);
	so->qual_null = so->nquals < 0;
	so->nquals = Max(so->nquals, 0);
	so->tenant_known = true;
	if (so->state->layout.tenants > 0)
		so->tenant_known = PermScanTenantBits(scan, &so->tenant,
											  &so->tenant_none);
}

const PermEngine PermSubstringsEngine = {
	.name = "substrings",
	.prepare = substrings_prepare,
	.row_keys = substrings_row_keys,
	.search = PermWideSearch,
	.constraint_search = NULL,
	.constraint_match = substrings_constraint_match,
	.nearest = PermWideKnnGettuple,
	.end_scan = PermWideEndScan,
};
