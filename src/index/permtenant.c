/*-------------------------------------------------------------------------
 *
 * permtenant.c
 *		simhash_perm: leading equality columns, as in
 *		CREATE INDEX ... USING simhash_perm (site_id, fp), for queries and
 *		exclusion constraints within one tenant.
 *
 * The last column of the index is the code (a 64-bit fingerprint or a
 * bit(n) code); the columns before it, at most PERM_MAX_TENANT_COLUMNS, are
 * compared by equality only (strategy 4 of their operator class: int2,
 * int4, int8, float8, numeric, text, uuid, date, timestamp and timestamptz
 * ship with one).  Such an index is laid out by
 * multi-index hashing (permwidelayout.c), a 64-bit fingerprint as a 64-bit code,
 * with every key of every table
 *
 *		tenant hash (16 bits) << 48  |  the table's substring and tail (48 bits)
 *
 * and every leaf entry keeps 16 more bits of the code (KeyTid.extra), so
 * that an entry holds a 64-bit code whole (README.perm, "Leading equality
 * columns", says why the hash has 16 bits)
 *
 * where the tenant hash combines the leading values' hashes, each from its
 * type's default hash operator class (the hash partitioning uses: stable
 * across releases and machines).  So a tenant's rows form one key range of
 * each table, and a query that names the tenant probes inside that range
 * only: it costs what a one-column index over the tenant's rows would,
 * whatever the other tenants hold.  Two tenants of one hash share a range;
 * their rows are candidates to each other, which the recheck of the
 * equality on the row drops (the executor's, or the constraint check's
 * here).  Every answer is rechecked on the row, so nothing rests on the
 * hash being unique.
 *
 * A row whose tenant is NULL is not indexed: no equality matches it, and
 * an exclusion constraint never has it conflict (PostgreSQL's rule: a NULL
 * in any column lets the row pass).  A scan whose quals leave a leading
 * column without an equality reads the table instead (permwidescan.c); the
 * planner prices it so (permcost.c), and takes a sequential scan.
 *
 * IDENTIFICATION
 *	  src/index/permtenant.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relscan.h"
#include "access/htup_details.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/catcache.h"
#include "utils/syscache.h"
#include "utils/rel.h"
#include "utils/typcache.h"
#include "utils/varbit.h"

#include "index/perm.h"

/* The name of column i (0-based) of the index, for messages */
static const char *
column_name(Relation index, int i)
{
	return NameStr(TupleDescAttr(RelationGetDescr(index), i)->attname);
}

/* Has the operator family a within operator (strategy 1) for type? */
static bool
family_has_within(Oid opfamily, Oid type)
{
	CatCList   *list = SearchSysCacheList1(AMOPSTRATEGY,
										   ObjectIdGetDatum(opfamily));
	bool		found = false;
	int			i;

	for (i = 0; i < list->n_members; i++)
	{
		Form_pg_amop op = (Form_pg_amop) GETSTRUCT(&list->members[i]->tuple);

		if (op->amopstrategy == PERM_WITHIN_STRATEGY && op->amoplefttype == type)
			found = true;
	}
	ReleaseCatCacheList(list);
	return found;
}

/*
 * Check the index's columns before a build: at most
 * PERM_MAX_TENANT_COLUMNS leading columns, each with an equality operator
 * in its operator family that its type's default hash operator class
 * hashes, and a code as the last column.
 */
void
PermCheckTenantColumns(Relation index)
{
	int			n = PermTenantColumns(index);
	int			code = PermCodeColumn(index);
	Oid			codetype = index->rd_opcintype[code];
	int			i;

	if (n > PERM_MAX_TENANT_COLUMNS)
		ereport(ERROR,
				(errcode(ERRCODE_TOO_MANY_COLUMNS),
				 errmsg("simhash_perm index \"%s\" has %d columns before its code; at most %d are supported",
						RelationGetRelationName(index), n,
						PERM_MAX_TENANT_COLUMNS),
				 errhint("Index an expression that combines them, such as a row's hash or a text key.")));
	if (!family_has_within(index->rd_opfamily[code], codetype))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("the last column of simhash_perm index \"%s\", \"%s\", is not a fingerprint or a bit(n) code",
						RelationGetRelationName(index), column_name(index, code)),
				 errdetail("Its type is %s.", format_type_be(codetype)),
				 errhint("Put the code last: (tenant, ..., fingerprint).")));
	for (i = 0; i < n; i++)
	{
		Oid			type = index->rd_opcintype[i];
		Oid			eq = get_opfamily_member(index->rd_opfamily[i], type, type,
											 PERM_EQUAL_STRATEGY);
		TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_HASH_PROC |
											   TYPECACHE_HASH_OPFAMILY);

		if (!OidIsValid(eq))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("column \"%s\" of simhash_perm index \"%s\" has no equality operator in its operator class",
							column_name(index, i), RelationGetRelationName(index)),
					 errdetail("The columns before the code are compared by equality; type %s has none for simhash_perm.",
							   format_type_be(type)),
					 errhint("Leading columns of types smallint, integer, bigint, text and uuid are supported; cast another type to one of them.")));
		if (!OidIsValid(tc->hash_proc) || !OidIsValid(tc->hash_opf) ||
			!op_in_opfamily(eq, tc->hash_opf))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("column \"%s\" of simhash_perm index \"%s\" has no hash function for its equality",
							column_name(index, i), RelationGetRelationName(index)),
					 errdetail("Operator %s is not in the default hash operator class of type %s.",
							   format_operator(eq), format_type_be(type))));
	}
}

/*
 * An exclusion constraint on the index compares the leading columns with
 * = and the code with ~=; no other operator has a meaning the check can
 * serve (a leading bigint's class has <@, which is not a constraint's)
 */
void
PermCheckExclusionStrategies(Relation index, const uint16 *strats)
{
	int			code = PermCodeColumn(index);
	int			i;

	for (i = 0; i <= code; i++)
		if (strats[i] != (i == code ? PERM_NEAR_DUP_STRATEGY : PERM_EQUAL_STRATEGY))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a simhash_perm exclusion constraint compares column \"%s\" with %s",
							column_name(index, i), i == code ? "~=" : "="),
					 errhint("Write EXCLUDE USING simhash_perm (tenant WITH =, ..., fingerprint WITH ~=).")));
}

/* The hash of value in column i, by its type's default hash function */
static uint32
column_hash(Relation index, int i, Datum value)
{
	TypeCacheEntry *tc = lookup_type_cache(index->rd_opcintype[i],
										   TYPECACHE_HASH_PROC_FINFO);

	if (!OidIsValid(tc->hash_proc))
		elog(ERROR, "type %s has no hash function",
			 format_type_be(index->rd_opcintype[i]));
	return DatumGetUInt32(FunctionCall1Coll(&tc->hash_proc_finfo,
											index->rd_indcollation[i],
											value));
}

/*
 * The tenant's bits of every key: its 32-bit hash folded (halves xored) to
 * the 64 - PERM_TENANT_SHIFT bits above the code's
 */
static inline uint64
tenant_key_bits(uint32 h)
{
	h ^= h >> (64 - PERM_TENANT_SHIFT);
	return (uint64) h << PERM_TENANT_SHIFT;
}

/*
 * The tenant bits of a row's keys from its leading values; false when one
 * of them is NULL (the row is not indexed)
 */
bool
PermTenantBits(Relation index, const Datum *values, const bool *isnull,
			   uint64 *bits)
{
	uint32		h = 0;
	int			i;

	for (i = 0; i < PermTenantColumns(index); i++)
	{
		if (isnull[i])
			return false;
		h = hash_combine(h, column_hash(index, i, values[i]));
	}
	*bits = tenant_key_bits(h);
	return true;
}

/*
 * Is one of a row's leading values NULL?  Such a row is in no table and
 * not in the store's list of rows without a code either: = matches no
 * NULL, so no scan the index answers returns it (false for an index
 * without leading columns).
 */
bool
PermTenantValuesNull(Relation index, const bool *isnull)
{
	int			i;

	for (i = 0; i < PermTenantColumns(index); i++)
		if (isnull[i])
			return true;
	return false;
}

/*
 * A row's key in every table, from the index tuple's values; false when
 * the row is not indexed (its code or a tenant value is NULL).  A code of
 * another width than the layout's is an error (PermCheckCodeWidth).
 */
bool
PermRowKeys(Relation index, const PermLayout *layout, const Datum *values,
			const bool *isnull, uint64 *keys, uint16 *extras)
{
	int			code = PermCodeColumn(index);
	uint64		tenant = 0;
	VarBit	   *bits;
	bool		bitstring = index->rd_opcintype[code] == BITOID;
	int			t;

	if (isnull[code])
		return false;
	if (layout->tenants > 0 && !PermTenantBits(index, values, isnull, &tenant))
		return false;
	bits = PermCodeBits(bitstring, values[code]);
	PermCheckCodeWidth(index, layout->width, VARBITLEN(bits));
	PermWideKeys(layout, bits, keys, extras);
	for (t = 0; t < layout->ntables; t++)
		keys[t] |= tenant;
	return true;
}

/*
 * The tenant bits of a scan, from its equality keys: false when a leading
 * column has none (the scan cannot be confined to one tenant).  *none is
 * set when no row can match: a key compares with NULL, or two keys on one
 * column hash apart (the values differ, so no value equals both).
 */
bool
PermScanTenantBits(IndexScanDesc scan, uint64 *bits, bool *none)
{
	Relation	index = scan->indexRelation;
	uint32		h = 0;
	int			i,
				k;

	*none = false;
	for (i = 0; i < PermTenantColumns(index); i++)
	{
		bool		found = false;
		uint32		col = 0;

		for (k = 0; k < scan->numberOfKeys; k++)
		{
			ScanKey		sk = &scan->keyData[k];
			uint32		v;

			if (sk->sk_attno != i + 1 || sk->sk_strategy != PERM_EQUAL_STRATEGY)
				continue;
			if (sk->sk_flags & SK_ISNULL)
			{
				*none = true;
				continue;
			}
			v = column_hash(index, i, sk->sk_argument);
			if (found && v != col)
				*none = true;
			col = v;
			found = true;
		}
		if (!found && !*none)
			return false;
		h = hash_combine(h, col);
	}
	*bits = tenant_key_bits(h);
	return true;
}

/*
 * Do a row's leading values (an index tuple's, values[] and isnull[])
 * satisfy the scan's equality keys?  Compared by the keys' own operators,
 * as the executor's recheck would.
 */
bool
PermTenantRowMatches(IndexScanDesc scan, const Datum *values,
					 const bool *isnull)
{
	int			k;

	for (k = 0; k < scan->numberOfKeys; k++)
	{
		ScanKey		sk = &scan->keyData[k];
		int			i = sk->sk_attno - 1;

		if (sk->sk_strategy != PERM_EQUAL_STRATEGY)
			continue;
		if ((sk->sk_flags & SK_ISNULL) || isnull[i])
			return false;
		if (!DatumGetBool(FunctionCall2Coll(&sk->sk_func, sk->sk_collation,
											values[i], sk->sk_argument)))
			return false;
	}
	return true;
}
