/*-------------------------------------------------------------------------
 *
 * permoptions.h
 *		simhash_perm: an index's options (permoptions.c), read and checked
 *		against its code type.  Its columns are the descriptor's (perm.c).
 *
 * IDENTIFICATION
 *	  src/index/permoptions.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PERMOPTIONS_H
#define PERMOPTIONS_H

#include "utils/relcache.h"

#include "index/permlayout.h"

/*
 * Options from WITH (...), as stored by build_reloptions; given says which
 * the index's definition names (permoptions), so that a value given is
 * checked against its range even where it equals the value that stands
 * for "not given"
 */
typedef struct PermOptions
{
	int32		vl_len_;		/* varlena header (do not touch directly!) */
	int			max_distance;	/* the older name of radius, for 64-bit
								 * codes; -1: not given */
	int			blocks;			/* B; 0 means radius + 1 */
	int			radius;			/* design radius; -1: not given (3 on 64-bit
								 * codes, width / 8 on bit(n) codes) */
	int			substrings;		/* bit(n) codes, leading columns: m; 0:
								 * chosen (permwidelayout.c) */
	int			width;			/* bit varying codes: their width; 0: the
								 * column's, or the first row's */
	int			given;			/* PERM_OPT_* of the options named */
} PermOptions;

#define PERM_OPT_MAX_DISTANCE	0x01
#define PERM_OPT_BLOCKS			0x02
#define PERM_OPT_RADIUS			0x04
#define PERM_OPT_SUBSTRINGS		0x08
#define PERM_OPT_WIDTH			0x10

#define PermOptionGiven(opts, opt) ((opts) != NULL && ((opts)->given & (opt)) != 0)

extern void PermOptionsInit(void);
extern bytea *permoptions(Datum reloptions, bool validate);
extern bool PermRadiusOption(Relation index, int *radius,
							 const char **name);
extern int	PermFingerprintRadius(Relation index);
extern void PermWideLayoutOptions(Relation index, int width, int *radius,
								  int *substrings);
extern void PermLayoutOptions(Relation index, int *max_distance, int *blocks);

#endif							/* PERMOPTIONS_H */
