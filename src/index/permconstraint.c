/*-------------------------------------------------------------------------
 *
 * permconstraint.c
 *		simhash_perm: exclusion constraints, a table free of near-duplicates.
 *
 *	  ALTER TABLE docs ADD CONSTRAINT docs_no_near_copies
 *		  EXCLUDE USING simhash_perm (fp WITH ~=) WITH (radius = 3);
 *
 * refuses a row whose fingerprint lies within 3 bits of a stored row's, and
 * INSERT ... ON CONFLICT DO NOTHING skips it.  PostgreSQL runs the check:
 * after inserting the new row's index entries it scans the index with the
 * exclusion operator and the new row's value under a dirty snapshot, which
 * sees in-progress rows too, and waits for their transactions; the index
 * only has to find every entry within the radius, committed or not.
 *
 * Where the radius lives.  An exclusion operator takes two values of the
 * indexed type and nothing else, and the constraint stores only which
 * operator; so "within r" cannot be an argument, and a session setting
 * (as pg_trgm's similarity threshold) would let two sessions enforce two
 * rules.  The radius is the index's design radius (radius, or its older
 * name max_distance), which the build freezes in the metapage: a part of
 * the constraint's definition (pg_get_constraintdef and pg_dump print
 * it), the same for every session, and the radius the index answers with
 * the fewest probes.  Changing the
 * reloption with ALTER INDEX ... SET takes effect at REINDEX, which checks
 * the constraint again.  So ~= means "within the index's radius",
 * which only the index knows: outside a constraint's check (a query's
 * WHERE fp ~= v, by index or sequentially) it raises an error that points
 * to hamming_near().  Other designs weighed are in README.perm, "Exclusion
 * constraints".
 *
 * The check's recheck.  PostgreSQL rechecks a row the check's scan returns
 * by calling the operator's function on the two values, which cannot know
 * the radius; so the scan rechecks each match itself before handing it out
 * (PermRowReader): it reads the row by its TID under the check's snapshot,
 * computes the row's indexed value as the executor does (index expressions
 * included) and keeps the match only if that value lies within the radius.
 * A damaged key in the index may then hide a row from the check, never
 * refuse (or, under ON CONFLICT DO NOTHING, drop) an innocent one.  The
 * matches of a check are few (the rows of transactions in progress, or one
 * committed conflict), so the heap reads cost nothing on the common path.
 *
 * IDENTIFICATION
 *	  src/index/permconstraint.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relscan.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "index/perm.h"
#include "index/permoptions.h"

PG_FUNCTION_INFO_V1(simhash_near_duplicate);

/* The error of ~= used anywhere but in a constraint's check */
void
PermNearDupOutsideConstraint(bool codes)
{
	if (codes)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("operator ~= is evaluated only by a simhash_perm exclusion constraint"),
				 errdetail("Its radius is the radius of the constraint's index, which only the index knows."),
				 errhint("To compare codes in a query, use hamming_near(a, b, k) or bit_hamming_distance(a, b).")));
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("operator ~= is evaluated only by a simhash_perm exclusion constraint"),
			 errdetail("Its radius is the radius of the constraint's index, which only the index knows."),
			 errhint("To compare fingerprints in a query, use hamming_near(a, b, k) or hamming_distance(a, b).")));
}

/*
 * The function of operator ~= (simhash64, bigint and bit): only ever
 * called outside a constraint's check, since the check's index scan sets
 * no recheck.
 */
Datum
simhash_near_duplicate(PG_FUNCTION_ARGS)
{
	PermNearDupOutsideConstraint(get_fn_expr_argtype(fcinfo->flinfo, 0) == BITOID);
	PG_RETURN_BOOL(false);		/* not reached */
}

/*
 * Is this scan an exclusion constraint's check?  PostgreSQL runs those
 * (check_exclusion_or_unique_constraint) with one key per index column,
 * the constraint's operator, under a dirty snapshot; nothing else scans
 * with ~= under a dirty snapshot.
 */
bool
PermScanIsConstraintCheck(IndexScanDesc scan, PermState *state)
{
	int			code = state->code_column;

	return scan->xs_snapshot->snapshot_type == SNAPSHOT_DIRTY &&
		scan->numberOfKeys == code + 1 && scan->numberOfOrderBys == 0 &&
		scan->keyData[code].sk_attno == code + 1 &&
		scan->keyData[code].sk_strategy == PERM_NEAR_DUP_STRATEGY;
}

/*
 * The radius of a constraint's check: the design radius the build recorded
 * in the metapage.  Only a check asks (under a dirty snapshot); the
 * operator has no radius of its own to answer a query with.
 *
 * ALTER INDEX ... SET (radius = n) changes the reloption, which
 * pg_get_constraintdef and pg_dump print, but not the metapage, which only
 * a build writes.  Enforcing the old radius while the definition shows the
 * new one would let a dump fail to restore (or a near-copy in), so the
 * check refuses until REINDEX builds the index with the new radius and
 * checks every row against it.
 */
int
PermConstraintRadius(IndexScanDesc scan, PermState *state)
{
	int			max_distance,
				blocks;

	if (IsMVCCSnapshot(scan->xs_snapshot))
		PermNearDupOutsideConstraint(state->code_bits);
	if (state->layout.width > 0)
		PermWideLayoutOptions(scan->indexRelation, state->layout.width,
							  &max_distance, &blocks);
	else
		PermLayoutOptions(scan->indexRelation, &max_distance, &blocks);
	if (max_distance != state->layout.max_distance)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("index \"%s\" was built for radius = %d, but its definition now says %d",
						RelationGetRelationName(scan->indexRelation),
						state->layout.max_distance, max_distance),
				 errdetail("The exclusion constraint it serves enforces the radius the index was built with."),
				 errhint("REINDEX INDEX %s checks every row against the new radius and enforces it; ALTER INDEX ... SET (radius = %d) restores the old one.",
						 quote_identifier(RelationGetRelationName(scan->indexRelation)),
						 state->layout.max_distance)));
	return state->layout.max_distance;
}

/*
 * Start reading rows of heap by TID with their indexed fingerprint, for
 * index's definition.  Allocated in the current memory context; the caller
 * ends it with PermRowReaderEnd.
 */
PermRowReader *
PermRowReaderBegin(Relation heap, Relation index)
{
	PermRowReader *reader = palloc0(sizeof(PermRowReader));

	reader->heap = heap;
	reader->estate = CreateExecutorState();
	reader->info = BuildIndexInfo(index);
	reader->slot = table_slot_create(heap, NULL);
	reader->fetch = table_index_fetch_begin(heap);
	GetPerTupleExprContext(reader->estate)->ecxt_scantuple = reader->slot;
	return reader;
}

/*
 * Read the row at tid (the root of its HOT chain, as the index stores it)
 * under snapshot.  Returns false when no version of it is visible, or its
 * indexed value is NULL; otherwise sets *value to the value the index
 * would hold for it, valid until the next read.  The indexed value is the
 * same along a HOT chain, so the first visible version answers.
 */
bool
PermRowReaderFetchValue(PermRowReader *reader, ItemPointer tid,
						Snapshot snapshot, Datum *value)
{
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	int			code = reader->info->ii_NumIndexKeyAttrs - 1;

	if (!PermRowReaderFetchValues(reader, tid, snapshot, values, isnull) ||
		isnull[code])
		return false;
	*value = values[code];
	return true;
}

/*
 * The same for every column of the index: values[] and isnull[] as the
 * index tuple would hold them (INDEX_MAX_KEYS each); false when no version
 * of the row is visible
 */
bool
PermRowReaderFetchValues(PermRowReader *reader, ItemPointer tid,
						 Snapshot snapshot, Datum *values, bool *isnull)
{
	ItemPointerData t = *tid;
	bool		call_again = false;
	bool		all_dead = false;

	ResetPerTupleExprContext(reader->estate);
	ExecClearTuple(reader->slot);
	if (!table_index_fetch_tuple(reader->fetch, &t, snapshot, reader->slot,
								 &call_again, &all_dead))
		return false;
	FormIndexDatum(reader->info, reader->slot, reader->estate, values, isnull);
	return true;
}

/* The same for a 64-bit fingerprint */
bool
PermRowReaderFetch(PermRowReader *reader, ItemPointer tid, Snapshot snapshot,
				   uint64 *fp)
{
	Datum		value;

	if (!PermRowReaderFetchValue(reader, tid, snapshot, &value))
		return false;
	*fp = DatumGetUInt64(value);
	return true;
}

/* End a PermRowReaderBegin */
void
PermRowReaderEnd(PermRowReader *reader)
{
	table_index_fetch_end(reader->fetch);
	ExecDropSingleTupleTableSlot(reader->slot);
	FreeExecutorState(reader->estate);
	pfree(reader);
}
