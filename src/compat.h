/*-------------------------------------------------------------------------
 *
 * compat.h
 *		The differences between the PostgreSQL major versions the extension
 *		builds for (15 to 18), each behind one PG_VERSION_NUM guard, with
 *		the release that made it.  Code elsewhere uses the names defined
 *		here and has no version test of its own.
 *
 * IDENTIFICATION
 *	  src/compat.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SIMHASH_COMPAT_H
#define SIMHASH_COMPAT_H

#if PG_VERSION_NUM < 150000
#error "simhash needs PostgreSQL 15 or later"
#endif

/* 16 moved the varlena macros (VARDATA, SET_VARSIZE ...) to varatt.h */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * 18 replaced pg_attribute_noreturn(), written after a declaration, by
 * pg_noreturn, written before it.  Before 18 the attribute may stand in
 * front as well.
 */
#ifndef pg_noreturn
#define pg_noreturn pg_attribute_noreturn()
#endif

/* 16 renamed RelationData.rd_node (a RelFileNode) to rd_locator */
#if PG_VERSION_NUM >= 160000
#define SimhashRelationLocator(rel)	((rel)->rd_locator)
#else
#define SimhashRelationLocator(rel)	((rel)->rd_node)
#endif

/*
 * 17 made maintenance commands run the table owner's code with search_path
 * restricted to pg_catalog, pg_temp (RestrictSearchPath), as amcheck and
 * REINDEX do; before 17 they kept the session's.
 */
#if PG_VERSION_NUM >= 170000
#define SimhashRestrictSearchPath()	RestrictSearchPath()
#else
#define SimhashRestrictSearchPath()	((void) 0)
#endif

/* 18 gave vacuum_delay_point() an argument: whether ANALYZE calls it */
#if PG_VERSION_NUM >= 180000
#define SimhashVacuumDelayPoint()	vacuum_delay_point(false)
#else
#define SimhashVacuumDelayPoint()	vacuum_delay_point()
#endif

#endif							/* SIMHASH_COMPAT_H */
