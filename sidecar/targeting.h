/* Line item targeting: its shape, and the checks of what it refers to.
 *
 * The shape (schema_targeting) is part of the line item's schema table, so
 * a malformed rule is a 422 like any other field. What a well-formed rule
 * names must also exist and fit: ad units, placements, custom targeting
 * keys and their values (a value of the wrong type for a key's type, an
 * unknown key); targeting_check reads Redis for that, so that serving only
 * ever sees rules it can evaluate. */
#ifndef ADSERVE_TARGETING_H
#define ADSERVE_TARGETING_H

#include "json_util.h"
#include "schema.h"
#include "store.h"

/* LineItem.targeting: {ad_units: {include, exclude}, placements, sizes,
 * kv (the spec's Expr), device, user, dayparts}. */
extern const struct schema schema_targeting;

/* Checks a normalised targeting object: what serving compiles, always;
 * with refs, that what it names exists (an advertiser's rule is taken as
 * written: the answer must not tell which ids exist). 0, or -1 with the
 * answer (422 naming the field, 503) in rep. */
int targeting_check(struct store_conn *c, const cJSON *targeting, bool refs, struct reply *rep);

#endif
