/*
 * adserve_joins: what one snapshot build joined, kept for the next.
 *
 * Joining line items to ad units and ranking each unit's candidates is most
 * of a build after one change at 100,000 line items (README "At scale"),
 * yet one change reaches a handful of units. The builder keeps, per ad
 * unit, its ranked candidates and its excluded pairs, and per line item a
 * signature of what it joins with (its parse, its eligibility, each LICA's
 * creative and weight). The next build joins again only the line items
 * whose signature moved, and ranks again only the units they reach or
 * reached; every other unit takes its pairs from here, ranked.
 *
 * Pairs refer to the parses the records keep (adserve_records.h), by
 * pointer. A parse lives as long as its record does not change, and a
 * parse made since the last build is not yet "built" (adserve_parsed_t):
 * a pointer seen here and found again on a built parse is the same parse.
 * So one adserve_joins_t belongs to one set of records, and to the builds
 * that keep it (adserve_input_t's joins); a build that fails clears it.
 *
 * Plain C, for the snapshot build only: one thread uses it at a time.
 */

#ifndef ADSERVE_JOINS_H
#define ADSERVE_JOINS_H

#include <stddef.h>
#include <stdint.h>

#include "adserve_parsed.h"

/* One creative of one line item on a unit: a candidate (reason 0) or, for
 * the explainer, one that cannot serve there (adserve_excl_e). */
typedef struct {
    const adserve_parsed_t  *li;
    const adserve_parsed_t  *cr;
    uint32_t                 weight;      /* its LICA's */
    uint32_t                 reason;
} adserve_joined_t;

typedef struct {
    const adserve_parsed_t  *unit;        /* NULL: a free slot */
    adserve_joined_t        *pairs;       /* ncands ranked, then nexcl */
    uint32_t                 ncands, nexcl;
} adserve_joined_unit_t;

typedef struct {
    const adserve_parsed_t  *li;          /* NULL: a free slot */
    uint64_t                 sig;
    uint32_t                 seen;        /* the last build that found it */
} adserve_joined_li_t;

typedef struct {
    int                      valid;       /* 0: the next build joins all */
    uint64_t                 stamp;       /* the snapshot of the build that
                                           * kept it (its joins_stamp); 0:
                                           * none. A build borrows from its
                                           * input's prev only when they
                                           * match (adserve_snapshot.h) */
    uint32_t                 gen;         /* builds that used it */
    uint32_t                 n[ADSERVE_KIND_COUNT];  /* records of the
                                           * build that kept it, */
    uint64_t                 order[ADSERVE_KIND_COUNT];  /* their parses in
                                           * order (adserve_joins_mix) */
    adserve_joined_unit_t   *units;
    uint32_t                 units_mask;
    adserve_joined_li_t     *lis;
    uint32_t                 lis_mask, nlis;
    const adserve_parsed_t **gone;        /* line items whose pairs this */
    uint32_t                 gone_mask, ngone;  /* build drops */
} adserve_joins_t;


void adserve_joins_init(adserve_joins_t *j);

/* Forgets everything: the next build joins all (and keeps again). */
void adserve_joins_clear(adserve_joins_t *j);
void adserve_joins_free(adserve_joins_t *j);

/* Room for nunits units and nlis line items, everything forgotten, the
 * valid flag unset until the caller sets it. 0, or -1 out of memory. */
int adserve_joins_reset(adserve_joins_t *j, uint32_t nunits, uint32_t nlis);

/* A fresh table of line items for nlis, the old one returned in *old
 * (its mask in *old_mask) for the caller to read and then free(). 0, or -1
 * out of memory (nothing changed). */
int adserve_joins_renew_lis(adserve_joins_t *j, uint32_t nlis,
    adserve_joined_li_t **old, uint32_t *old_mask);

/* The unit's pairs kept, or NULL. */
const adserve_joined_unit_t *adserve_joins_unit(const adserve_joins_t *j,
    const adserve_parsed_t *unit);

/* Room for a unit's pairs, in place of what it had, for the caller to
 * fill (*pairs NULL when there are none). 0, or -1 out of memory (the
 * joins are then no longer valid). */
int adserve_joins_put_unit(adserve_joins_t *j, const adserve_parsed_t *unit,
    uint32_t ncands, uint32_t nexcl, adserve_joined_t **pairs);

/* The line item's entry in table lis (mask), or NULL. */
adserve_joined_li_t *adserve_joins_li(adserve_joined_li_t *lis, uint32_t mask,
    const adserve_parsed_t *li);

/* Keeps a line item's signature (the table has room: renew_lis). */
void adserve_joins_put_li(adserve_joins_t *j, const adserve_parsed_t *li, uint64_t sig);

/* Room for n line items whose kept pairs this build drops, none yet. 0,
 * or -1 out of memory. */
int adserve_joins_gone_reset(adserve_joins_t *j, uint32_t n);
void adserve_joins_gone_add(adserve_joins_t *j, const adserve_parsed_t *li);
int adserve_joins_gone(const adserve_joins_t *j, const adserve_parsed_t *li);

/* A line item's signature, built up from its own part and one part per
 * LICA it joins with, in any order. */
uint64_t adserve_joins_mix(const void *p, uint64_t v);

#endif
