/*-------------------------------------------------------------------------
 *
 * permvalidate.c
 *		simhash_perm: amvalidate, the check of an operator class.
 *
 * A simhash_perm operator class has no support functions.  Its operators:
 * strategy 1, "<indexed type> <@ simhash_query" returning boolean, where the
 * indexed type is a 64-bit fingerprint (simhash or bigint), required; and
 * strategy 2, the ordering operator "<indexed type> <-> <fingerprint>"
 * returning int4 and sorted by an int4 btree family (added in 1.3); and
 * strategy 3, the exclusion operator "<indexed type> ~= <indexed type>"
 * returning boolean (added in 1.5; permconstraint.c).
 *
 * IDENTIFICATION
 *	  src/index/permvalidate.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/amvalidate.h"
#include "access/htup_details.h"
#include "catalog/pg_am.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_amproc.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/regproc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "index/perm.h"

/* Is opfamily a btree operator family? */
static bool
is_btree_family(Oid opfamily)
{
	HeapTuple	tup;
	bool		result;

	tup = SearchSysCache1(OPFAMILYOID, ObjectIdGetDatum(opfamily));
	if (!HeapTupleIsValid(tup))
		return false;
	result = ((Form_pg_opfamily) GETSTRUCT(tup))->opfmethod == BTREE_AM_OID;
	ReleaseSysCache(tup);
	return result;
}

/* amvalidate */
bool
permvalidate(Oid opclassoid)
{
	HeapTuple	classtup;
	Form_pg_opclass classform;
	Oid			opfamilyoid;
	Oid			opcintype;
	HeapTuple	familytup;
	char	   *opfamilyname;
	CatCList   *oprlist;
	CatCList   *proclist;
	bool		result = true;
	bool		has_strategy = false;
	bool		has_equality = false;
	bool		wide;
	int			i;

	classtup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
	if (!HeapTupleIsValid(classtup))
		elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
	classform = (Form_pg_opclass) GETSTRUCT(classtup);
	opfamilyoid = classform->opcfamily;
	opcintype = classform->opcintype;

	familytup = SearchSysCache1(OPFAMILYOID, ObjectIdGetDatum(opfamilyoid));
	if (!HeapTupleIsValid(familytup))
		elog(ERROR, "cache lookup failed for operator family %u", opfamilyoid);
	opfamilyname = pstrdup(NameStr(((Form_pg_opfamily) GETSTRUCT(familytup))->opfname));
	ReleaseSysCache(familytup);

	/* 64-bit fingerprints, or bit(n) codes (PermIndexIsWide) */
	wide = (opcintype == BITOID);

	proclist = SearchSysCacheList1(AMPROCNUM, ObjectIdGetDatum(opfamilyoid));
	if (proclist->n_members > 0)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("simhash_perm operator family \"%s\" has support functions, but simhash_perm uses none",
						opfamilyname)));
		result = false;
	}
	ReleaseCatCacheList(proclist);

	oprlist = SearchSysCacheList1(AMOPSTRATEGY, ObjectIdGetDatum(opfamilyoid));
	for (i = 0; i < oprlist->n_members; i++)
	{
		Form_pg_amop op = (Form_pg_amop) GETSTRUCT(&oprlist->members[i]->tuple);
		HeapTuple	typtup;
		bool		query_type = false;

		if (op->amopstrategy == PERM_DISTANCE_STRATEGY)
		{
			/* fp <-> q: an int4 distance, ordered by the int4 btree family */
			if (op->amoppurpose != AMOP_ORDER ||
				!check_amop_signature(op->amopopr, INT4OID, op->amoplefttype,
									  op->amoprighttype) ||
				(wide ? op->amoprighttype != BITOID :
				 (get_typlen(op->amoprighttype) != sizeof(int64) ||
				  !get_typbyval(op->amoprighttype))) ||
				!is_btree_family(op->amopsortfamily))
			{
				ereport(INFO,
						(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
						 errmsg("simhash_perm operator family \"%s\" has distance operator %s with wrong signature or purpose",
								opfamilyname, format_operator(op->amopopr))));
				result = false;
			}
			continue;
		}
		if (op->amopstrategy == PERM_NEAR_DUP_STRATEGY)
		{
			/* fp ~= fp: both sides the indexed type, a search operator */
			if (op->amoppurpose != AMOP_SEARCH ||
				op->amoplefttype != op->amoprighttype ||
				!check_amop_signature(op->amopopr, BOOLOID, op->amoplefttype,
									  op->amoprighttype) ||
				(wide ? op->amoplefttype != BITOID :
				 (get_typlen(op->amoplefttype) != sizeof(int64) ||
				  !get_typbyval(op->amoplefttype))))
			{
				ereport(INFO,
						(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
						 errmsg("simhash_perm operator family \"%s\" has exclusion operator %s with wrong signature or purpose",
								opfamilyname, format_operator(op->amopopr))));
				result = false;
			}
			continue;
		}
		if (op->amopstrategy == PERM_EQUAL_STRATEGY)
		{
			/* tenant = value: a leading column's equality (permtenant.c) */
			if (op->amoppurpose != AMOP_SEARCH ||
				op->amoplefttype != op->amoprighttype ||
				!check_amop_signature(op->amopopr, BOOLOID, op->amoplefttype,
									  op->amoprighttype) ||
				!op_hashjoinable(op->amopopr, op->amoplefttype))
			{
				ereport(INFO,
						(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
						 errmsg("simhash_perm operator family \"%s\" has equality operator %s with wrong signature, purpose or no hash support",
								opfamilyname, format_operator(op->amopopr))));
				result = false;
			}
			if (op->amoplefttype == opcintype)
				has_equality = true;
			continue;
		}
		if (op->amopstrategy != PERM_WITHIN_STRATEGY)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("simhash_perm operator family \"%s\" has operator %s with invalid strategy number %d",
							opfamilyname, format_operator(op->amopopr),
							op->amopstrategy)));
			result = false;
			continue;
		}
		if (op->amoppurpose != AMOP_SEARCH)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("simhash_perm operator family \"%s\" has ordering operator %s at the search strategy",
							opfamilyname, format_operator(op->amopopr))));
			result = false;
			continue;
		}
		typtup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(op->amoprighttype));
		if (HeapTupleIsValid(typtup))
		{
			query_type = strcmp(NameStr(((Form_pg_type) GETSTRUCT(typtup))->typname),
								wide ? "hamming_query" : "simhash_query") == 0;
			ReleaseSysCache(typtup);
		}
		if (!query_type ||
			!check_amop_signature(op->amopopr, BOOLOID, op->amoplefttype,
								  op->amoprighttype))
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("simhash_perm operator family \"%s\" has operator %s with wrong signature",
							opfamilyname, format_operator(op->amopopr))));
			result = false;
			continue;
		}
		if (op->amoplefttype == opcintype)
			has_strategy = true;
	}
	ReleaseCatCacheList(oprlist);

	/*
	 * A class of codes (64-bit fingerprints or bit(n)) has a within
	 * operator; a class of leading columns only an equality
	 */
	if (has_strategy && !wide &&
		(get_typlen(opcintype) != sizeof(int64) || !get_typbyval(opcintype)))
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("simhash_perm operator family \"%s\" indexes type %s, which is not a 64-bit fingerprint",
						opfamilyname, format_type_be(opcintype))));
		result = false;
	}
	if (!has_strategy && !has_equality)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("simhash_perm operator family \"%s\" has no within operator for type %s",
						opfamilyname, format_type_be(opcintype))));
		result = false;
	}

	ReleaseSysCache(classtup);
	return result;
}
