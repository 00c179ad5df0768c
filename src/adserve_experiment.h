/*
 * adserve_experiment: what both programs share of experiments (README
 * "Experiments", the contract's "experiments" section): how a variant
 * overrides its ad unit, and how a user is drawn into a variant.
 *
 * The sidecar applies a variant to the stored unit to check that the
 * result is a unit it would accept; the snapshot build applies it to the
 * unit's record to build the variant's own unit. One function, so that
 * what the API checked is what serves.
 *
 * Plain C and cJSON, no nginx types.
 */

#ifndef ADSERVE_EXPERIMENT_H
#define ADSERVE_EXPERIMENT_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* Applies a variant ({"ext": {…}, "recommendation": {…}}, either may be
 * absent or null) to unit, an ad unit record: each member of the variant's
 * ext replaces the unit's ext member of that name, each member of its
 * recommendation the unit's recommendation member (the objects are made
 * when the unit has none). 0, or -1 when unit is not an object or memory
 * ran out (unit may be partly changed then). */
int adserve_variant_apply(struct cJSON *unit, const struct cJSON *variant);

/* A user's draw in an experiment, uniform over 32 bits: the same for the
 * same user and experiment every time, independent between experiments
 * (salt: adserve_hash of the experiment id). FNV-1a alone spreads short
 * ids poorly over its high bits: a 64-bit finaliser (splitmix64's) mixes
 * them. */
uint32_t adserve_experiment_draw(uint64_t salt, const char *user, size_t len);

/* The draws each of n variants takes, from their weights (each 1 ..
 * ADSERVE_VARIANT_WEIGHT_MAX): upto[i] is the first draw past variant i,
 * so variant i takes the draws in [upto[i - 1], upto[i]), the last one's
 * upto is 2^32, and a variant's share of the draws is its share of the
 * weights. -1 when a weight is out of its range or n is 0. */
int adserve_experiment_bounds(const uint32_t *weights, unsigned n, uint64_t *upto);

#endif
