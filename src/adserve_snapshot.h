/*
 * adserve_snapshot: the immutable, compiled view of inventory and demand that
 * one nginx worker serves from.
 *
 * The loader hands over the raw records of every kind (the JSON values of the
 * Redis hashes of the data contract, see README "Redis data contract"); the
 * build joins them (ad unit hierarchy, placements, orders, line items, LICAs,
 * creatives), drops everything that can never serve, and leaves each ACTIVE ad
 * unit with its candidate list already ranked and with its response bytes
 * already rendered. Serving is then a hash probe, a flight check and a copy.
 *
 * Plain C, no nginx types: the build runs in a thread-pool thread, and the
 * whole engine is unit-tested and profiled outside nginx.
 */

#ifndef ADSERVE_SNAPSHOT_H
#define ADSERVE_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "adserve_arena.h"
#include "adserve_json.h"
#include "adserve_target.h"
#include "adserve_token.h"


typedef enum {
    ADSERVE_KIND_AD_UNITS = 0,
    ADSERVE_KIND_PLACEMENTS,
    ADSERVE_KIND_ORDERS,
    ADSERVE_KIND_LINE_ITEMS,
    ADSERVE_KIND_CREATIVES,
    ADSERVE_KIND_LICAS,
    ADSERVE_KIND_COUNT
} adserve_kind_e;

/* the Redis hash holding each kind, index by adserve_kind_e */
extern const char *const adserve_kind_keys[ADSERVE_KIND_COUNT];

#define ADSERVE_REV_KEY  "adserve:rev"


/* Line item types in serving order: a lower tier always wins. */
typedef enum {
    ADSERVE_TIER_SPONSORSHIP = 0,
    ADSERVE_TIER_STANDARD,
    ADSERVE_TIER_PRICE_PRIORITY,
    ADSERVE_TIER_HOUSE
} adserve_tier_e;


/* Raw input of one build: the record texts of each kind, and the revision
 * that was read before they were scanned. */
typedef struct {
    adserve_str_t  *records[ADSERVE_KIND_COUNT];
    size_t          nrecords[ADSERVE_KIND_COUNT];
    size_t          cap[ADSERVE_KIND_COUNT];
    uint64_t        rev;
    adserve_arena_t arena;            /* owns the arrays, not the texts */
} adserve_input_t;

void adserve_input_init(adserve_input_t *in);
/* Adds a record text without copying it: it must outlive the build. */
int adserve_input_ref(adserve_input_t *in, adserve_kind_e kind,
    const char *data, size_t len);
void adserve_input_free(adserve_input_t *in);


/* One way an ad unit can be filled: a line item showing one creative. */
typedef struct {
    int64_t         start;            /* flight, unix seconds, [start, end) */
    int64_t         end;
    uint32_t        weight;           /* LICA weight, for rotation */
    uint32_t        group;            /* candidates of one group rank equal */
    uint8_t         cost_type;        /* adserve_cost_e */
    uint64_t        price_micros;     /* the line item's rate x 1e6 */
    const char     *response_head;    /* body up to the ad_log value, */
    size_t          response_head_len;  /* shared by a creative's candidates */
    adserve_str_t   line_item_id;
    adserve_str_t   creative_id;
    uint64_t        line_item_hash;   /* adserve_hash() of the ids, for */
    uint64_t        creative_hash;    /* the event counters */
    const adserve_target_t *target;   /* the line item's rule decided per
                                       * request; NULL: none */
} adserve_cand_t;

typedef struct {
    const char     *id;
    size_t          id_len;
    uint64_t        hash;             /* adserve_hash() of the id */
    const adserve_cand_t *cands;      /* ranked: best group first */
    uint32_t        ncands;
} adserve_unit_t;

typedef struct {
    size_t          records[ADSERVE_KIND_COUNT];
    size_t          skipped;          /* records that were not valid JSON objects,
                                       * and line items whose targeting could
                                       * not be compiled (they never serve) */
    size_t          active_units;
    size_t          candidates;
    size_t          bytes;
    unsigned        build_ms;
} adserve_stats_t;

/* A creative as events need it: where its clicks go. */
typedef struct {
    adserve_str_t   id;
    adserve_str_t   landing_url;      /* absolute http(s), checked by the API */
} adserve_creative_t;

typedef struct {
    uint64_t        rev;
    adserve_stats_t stats;
    adserve_unit_t *units;            /* open-addressing table of ACTIVE units */
    uint32_t        mask;             /* table size - 1 */
    adserve_creative_t *creatives;    /* open addressing, every creative */
    uint32_t        creative_mask;
    adserve_arena_t arena;
} adserve_snapshot_t;


/* The constant tail of every 200 body, after the ad_log value. */
#define ADSERVE_RESPONSE_TAIL      "\"}}"
#define ADSERVE_RESPONSE_VERSION   "0.1.0"


adserve_snapshot_t *adserve_snapshot_build(const adserve_input_t *in,
    char *err, size_t errlen);
void adserve_snapshot_free(adserve_snapshot_t *s);

/* Any creative of the inventory (approved or not: a click on an ad served
 * before a change still lands), or NULL. */
const adserve_creative_t *adserve_snapshot_creative(const adserve_snapshot_t *s,
    const char *id, size_t len);

/* The ACTIVE ad unit with this id, or NULL. */
const adserve_unit_t *adserve_snapshot_unit(const adserve_snapshot_t *s,
    const char *id, size_t len);

/* The candidate to serve at time now, or NULL for no ad. rnd is a uniformly
 * random 32-bit value (the caller's generator, so tests are deterministic).
 * ctx holds the request's facts (adserve_req_ctx_init), computed only when
 * a candidate's targeting needs them: the best group with a candidate in
 * flight and matching the request wins, rotated by LICA weight. */
const adserve_cand_t *adserve_decide(const adserve_unit_t *u, int64_t now,
    uint32_t rnd, adserve_req_ctx_t *ctx);

/* RFC 3339 date-time to unix seconds in *t; 0, or -1 when it is not one. */
int adserve_parse_time(const char *s, int64_t *t);

#endif
