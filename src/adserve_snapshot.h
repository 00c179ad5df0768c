/*
 * adserve_snapshot: the immutable, compiled view of inventory and demand that
 * nginx workers serve from. Nothing writes it once built: what changes while
 * it serves (pacing) is in each worker's pace table (adserve_paces_new).
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
#include "adserve_contract.h"
#include "adserve_joins.h"
#include "adserve_json.h"
#include "adserve_parsed.h"
#include "adserve_rtb.h"
#include "adserve_target.h"
#include "adserve_token.h"


/* A read of p brought into the cache ahead of its use (p may be NULL):
 * for loops whose every step is a cache miss in a large table. */
#if defined(__GNUC__)
#define adserve_prefetch(p)  __builtin_prefetch(p)
#else
#define adserve_prefetch(p)  (void) (p)
#endif


/* One record of the input: its text, and where its parse is kept between
 * builds (NULL: nowhere; the build parses it and frees the parse). The
 * build fills an empty slot and reuses a full one, so the slot must be
 * emptied (adserve_parsed_free) whenever the text changes. */
typedef struct {
    const char        *data;
    size_t             len;
    adserve_parsed_t **parsed;
} adserve_input_rec_t;

/* Raw input of one build: the records of each kind, and the revision that
 * was read before they were scanned. */
typedef struct {
    adserve_input_rec_t *records[ADSERVE_KIND_COUNT];
    size_t          nrecords[ADSERVE_KIND_COUNT];
    size_t          cap[ADSERVE_KIND_COUNT];
    uint64_t        rev;
    const char     *public_url;       /* default base of event URLs; NUL-
                                       * terminated, no trailing slash */
    const char     *rec_snapshots;    /* the snapshot fallbacks' folder, or
                                       * NULL: they have no items */
    unsigned        threads;          /* build on this many, at most 16
                                       * (0, 1: the build's own only): the
                                       * records not parsed yet; the LICAs'
                                       * lookups, from share_from LICAs;
                                       * and a join of all line items, their
                                       * ranking and the joins kept, from
                                       * share_from line items joined */
    uint32_t        share_from;       /* 0: 4096 (tests share small ones) */
    const struct adserve_snapshot_s *prev;  /* the snapshot the workers
                                       * serve now, or NULL: the build maps
                                       * each line item's pace to it */
    const adserve_allocator_t *allocator;  /* where the snapshot goes; NULL:
                                            * malloc */
    adserve_joins_t *joins;           /* what the last build joined, used and
                                       * kept again (adserve_joins.h), or
                                       * NULL: join everything */
    size_t          room;             /* bytes the allocator has for every
                                       * snapshot it holds (a zone's size);
                                       * 0: no bound. A chain of borrowing
                                       * snapshots leaves room for a whole
                                       * render beside it, and one more */
    adserve_arena_t arena;            /* owns the arrays, not the texts */
} adserve_input_t;

void adserve_input_init(adserve_input_t *in);
/* Adds a record text without copying it: it must outlive the build. */
int adserve_input_ref(adserve_input_t *in, adserve_kind_e kind,
    const char *data, size_t len);
/* The same, with the slot that keeps its parse (adserve_input_rec_t). */
int adserve_input_ref_parsed(adserve_input_t *in, adserve_kind_e kind,
    const char *data, size_t len, adserve_parsed_t **parsed);
void adserve_input_free(adserve_input_t *in);


/* What a line item has delivered, over its whole life and every node: the
 * fields of adserve:delivery (README "Events"), read by pacing. */
typedef struct {
    uint64_t        imp, clk, conv, ads, opp;
} adserve_delivered_t;

/* The state of a line item that changes while a snapshot serves: pacing and
 * the observed rates that rank CPC and CPA, set from delivered counts by
 * adserve_pace_update (adserve_pacing.c), carried over from one snapshot to
 * the next. Per worker, in a table beside the snapshot (adserve_paces_new),
 * by line item index: the snapshot itself is never written while it
 * serves. */
typedef struct {
    double          factor;           /* eCPM per unit of bid: 1 for CPM,
                                       * CTR x 1000 for CPC, CVR x 1000 for CPA */
    uint32_t        allow;            /* serve when a random 32-bit value is
                                       * below or equal; UINT32_MAX: always */
    uint32_t        budget;           /* ads this worker may serve until the
                                       * next update; UINT32_MAX: no limit */
    uint32_t        opp, served;      /* this worker, since the last update */
    uint32_t        pushed;           /* of opp, added to the counters */
    uint8_t         stopped;          /* the goal is reached */
    uint8_t         known;            /* an update has happened */
    int64_t         read_at;          /* the last update: time and the */
    uint64_t        read_opp;         /* global opportunities then */
} adserve_pace_t;

/* A line item that some ACTIVE ad unit can serve. */
typedef struct {
    adserve_str_t   id;
    uint64_t        hash;             /* adserve_hash(id): counters, lookups */
    int64_t         start;            /* flight, unix seconds, [start, end) */
    int64_t         end;
    uint64_t        goal;             /* units of goal_type */
    const adserve_target_t *target;   /* decided per request; NULL: none */
    const adserve_cap_t    *caps;
    uint8_t         ncaps;
    uint8_t         tier;             /* adserve_tier_e */
    uint8_t         priority;
    uint8_t         cost_type;        /* adserve_cost_e */
    uint8_t         goal_type;        /* adserve_goal_e */
    uint8_t         delivery;         /* adserve_delivery_e */
    uint8_t         paced;            /* has a goal: pacing decides */
    uint8_t         dead;             /* a slot borrowed from the snapshot
                                       * before and left: no unit serves
                                       * it, no lookup finds it, nothing
                                       * paces it */
} adserve_li_t;

/* What a worker reads of a line item to carry its pace over to a new
 * snapshot, apart from lis[] by the same index: 8 bytes a line item rather
 * than a whole one. At 100,000 line items lis[] is 10 MB of pages new to
 * every worker that adopts the snapshot, and on this project's virtual
 * machine each first touch of a shared page costs about 10 to 30 us. */
typedef struct {
    uint32_t        prev;             /* its index in the snapshot built
                                       * before (prev of the input) when its
                                       * pace carries over, else
                                       * ADSERVE_LI_NONE */
    uint8_t         paced;
    uint8_t         cost_type;
} adserve_pace_plan_t;

#define ADSERVE_LI_NONE  UINT32_MAX

/* One way an ad unit can be filled: a line item showing one creative. */
typedef struct {
    uint32_t        li;               /* index in the snapshot's lis */
    uint32_t        weight;           /* LICA weight, for rotation */
    uint32_t        group;            /* same tier and priority: one group */
    uint16_t        splices;          /* in response_head: a video's or a
                                       * native ad's URLs, filled per
                                       * request (adserve_vast.h) */
    uint16_t        format;           /* adserve_format_e */
    uint64_t        bid_micros;       /* the line item's rate, or the unit's
                                       * default_cpc / default_cpa, x 1e6 */
    double          bid;
    const char     *response_head;    /* body up to the ad's URLs, shared */
    size_t          response_head_len;  /* by a creative's candidates */
    adserve_str_t   creative_id;
    uint64_t        creative_hash;
} adserve_cand_t;

/* For the explainer: a creative of a line item that targets the ad unit
 * but can never serve there. */
typedef enum {
    ADSERVE_EXCL_SIZE = 1,            /* not the unit's display w x h, or not
                                       * the shape of its video player */
    ADSERVE_EXCL_BCAT,                /* a category in the unit's ext.bcat */
    ADSERVE_EXCL_FORMAT,              /* a format the unit does not serve */
    ADSERVE_EXCL_DURATION,            /* video: mindur..maxdur, rqddurs */
    ADSERVE_EXCL_MIME,                /* video: no media file of its mime */
    ADSERVE_EXCL_SKIP,                /* video: skippable, the player not */
    ADSERVE_EXCL_LINEARITY,           /* video: a non-linear placement */
    ADSERVE_EXCL_INTERSTITIAL,        /* an instl unit, a creative not made
                                       * to fill a screen */
    ADSERVE_EXCL_ASSETS,              /* native: a required asset it lacks or
                                       * that is out of the request's bounds,
                                       * or no asset asked for at all */
    ADSERVE_EXCL_STYLE,               /* native html mode: the unit has no
                                       * valid native style */
    ADSERVE_EXCL_COUNT
} adserve_excl_e;

/* the explainer's word for each (index adserve_excl_e; 0 unused) */
extern const char *const adserve_excl_names[ADSERVE_EXCL_COUNT + 1];

typedef struct {
    adserve_str_t   line_item_id;
    adserve_str_t   creative_id;
    uint8_t         reason;           /* adserve_excl_e */
} adserve_excl_t;

/* A recommendation unit's fallback: a preset's items resolved to the
 * catalog (those it lacks dropped), each with its expiry; a popular one's,
 * its context's popular items when the snapshot was built. */
typedef struct {
    uint8_t         type;             /* adserve_fallback_e */
    uint8_t         activation;       /* adserve_activation_e */
    uint8_t         order;            /* adserve_order_e */
    uint32_t        n;
    const uint32_t *items;            /* indexes in the snapshot's items */
    const int64_t  *expire;           /* unix seconds; INT64_MAX: never;
                                       * NULL: never for all (popular) */
} adserve_fallback_t;

struct adserve_unit_s;

/* An experiment's variant (README "Experiments"): the draws it takes, and
 * its ad unit as its overrides make it. */
typedef struct {
    adserve_str_t   id;               /* "{experiment id}/{variant id}": its
                                       * counters, and its ad_log tokens' */
    uint64_t        hash;
    uint64_t        upto;             /* adserve_experiment_bounds */
    const struct adserve_unit_s *unit;
} adserve_variant_t;

typedef struct {
    uint64_t        salt;             /* adserve_hash of its id */
    uint32_t        n;
    const adserve_variant_t *variants;
} adserve_experiment_t;

/* An OpenRTB source a unit may ask (README "External demand"): ENABLED,
 * with a usable endpoint. */
typedef struct {
    adserve_str_t   id;
    uint64_t        hash;
    adserve_str_t   endpoint;
    adserve_str_t   seat;             /* empty: any */
    uint32_t        tmax_ms;
    uint32_t        qps_limit;        /* 0: none */
    uint32_t        formats;          /* bits of adserve_format_e */
    double          floor;            /* CPM */
    double          adjustment;       /* a bid's price multiplier */
} adserve_source_t;

/* A unit's share of requests sent to a source, and what its bids there
 * are checked against. */
typedef struct {
    uint32_t        source;           /* index in the snapshot's sources */
    double          share;            /* percent, (0, ADSERVE_SHARE_MAX] */
    adserve_str_t   counter_id;       /* "{unit id}/{source id}": the */
    uint64_t        counter_hash;     /* auction's counts (ADSERVE_DIM_AD_SOURCE) */
    adserve_str_t   blocks_json;      /* its bid requests' ,"bcat":..,
                                       * "badv":.. (adserve_rtb_render_blocks) */
    const adserve_rtb_block_t *blocks;  /* the unit's bcat and the blocked */
    uint32_t        nblocks;          /* creatives of the unit and source */
} adserve_alloc_t;

typedef struct adserve_unit_s {
    const char     *id;
    size_t          id_len;
    uint64_t        hash;
    const adserve_experiment_t *experiment;  /* the ACTIVE experiment that
                                       * splits its traffic, or NULL */
    const adserve_variant_t *variant;  /* a variant's unit: its variant */
    const adserve_excl_t *excluded;
    uint32_t        nexcluded;
    const adserve_cand_t *cands;      /* by group, best first; a line item's
                                       * candidates next to each other */
    uint32_t        ncands;
    uint32_t        nvcands;
    const adserve_cand_t *vcands;     /* the videos among them, in the same
                                       * order (cands itself when all are):
                                       * what a VAST request chooses from */
    uint32_t        max_cap_seconds;  /* longest cap of its line items; 0: none */
    const adserve_str_t *segment_ids; /* the segments its line items target, */
    const uint64_t *segment_hashes;   /* once each: what a request asks of */
    uint32_t        nsegments;        /* the user's memberships */
    uint64_t        segments_sig;     /* adserve_hash of segment_hashes: a
                                       * read of another list is not this
                                       * unit's answer */
    unsigned        segments_overflow:1;  /* more than ADSERVE_UNIT_SEGMENTS_MAX:
                                       * none asked, its segment-targeted
                                       * line items do not serve */
    double          floor;            /* ext.target_ecpm: PRICE_PRIORITY below
                                       * it does not serve */
    unsigned        impression_on_response:1;  /* recommendation placement,
                                                * ad_log_tracking_mode
                                                * on_ad_response */
    adserve_str_t   impression_prefix;  /* ,"impression_url":"<base>...ad_log= */
    adserve_str_t   click_prefix;       /* ","click_url":"<base>...ad_log= */
    adserve_str_t   vast_base;          /* the base in a VAST: XML-escaped, */
    adserve_str_t   vast_base_json;     /* and that as JSON string text; */
    adserve_str_t   url_base_json;      /* the base as JSON string text alone
                                         * (ADSERVE_SPLICE_JSON) */
    unsigned        rec:1;              /* recommends catalog items (README
                                         * "Recommendation") */
    adserve_str_t   rec_head;           /* its answer up to the first item:
                                         * {"version":…,"ad":{"id":"<unit>",
                                         * "recommendation":{"items":[ */
    uint8_t         topn;               /* at most this many items */
    uint8_t         filtering;          /* adserve_filtering_e */
    uint8_t         algorithm;          /* adserve_algorithm_e;
                                         * ADSERVE_ALGORITHM_COUNT: unknown */
    adserve_str_t   target_service;     /* an external recommender's name
                                         * (its location), or empty */
    unsigned        filter_refuses:1;   /* its content filter does not
                                         * compile: no item passes */
    const adserve_target_t *filter;     /* content_filter_rule; NULL: none */
    adserve_str_t   source_ids[ADSERVE_SOURCE_COUNT];  /* "{unit id}/{source}": */
    uint64_t        source_hashes[ADSERVE_SOURCE_COUNT];  /* counted per source */
    uint8_t         nfallbacks;
    const adserve_fallback_t *fallbacks;  /* the chain, in order */
    adserve_str_t   passback;           /* the whole answer when nothing
                                         * fills (README "Passback"), or
                                         * empty: 204 */
    const adserve_alloc_t *allocs;      /* the sources it asks, each once, */
    uint8_t         nallocs;            /* those of a format it has */
    /* a unit with allocations: its bid requests' parts, rendered once
     * (adserve_rtb.h): the imp, open for each source's bidfloor; where it
     * is, a site, or an app for a user agent of its keywords (by
     * ADSERVE_RTB_OS_* - 1; empty: no bundle for that OS) */
    adserve_str_t   rtb_imp;
    adserve_str_t   rtb_site;
    adserve_str_t   rtb_app[2];
    const adserve_str_t *app_keywords;
    uint8_t         napp_keywords;
    uint16_t        bid_w, bid_h;       /* a bid's size when it has none:
                                         * the unit's first size, or 0 */
    uint8_t         formats;            /* 1 << adserve_format_e of the
                                         * bids it takes */
    uint8_t         nnative_reqs;       /* a native bid answers these */
    const adserve_rtb_native_req_t *native_reqs;
} adserve_unit_t;

/* A slot of the snapshot's unit index: one cache line, all a lookup
 * waits for. It holds the id's first bytes (all of a UUID's), compared
 * where they are read, and what the unit's decision reads first, its
 * candidates, which the lookup fetches with the unit's own lines. A
 * request's chain of misses was slot, then unit (and id), then the
 * candidates the unit names: it is now the slot, then the rest at once.
 * Empty: unit 0. */
#define ADSERVE_UNIT_SLOT_HEAD  44

typedef struct {
    char            head[ADSERVE_UNIT_SLOT_HEAD];  /* the id's first bytes;
                                       * the rest is compared in the unit's
                                       * own id. A shorter id, NUL after it,
                                       * is the unit's id itself. */
    uint32_t        len;              /* the id's */
    const adserve_cand_t *cands;      /* the unit's */
    uint32_t        unit;             /* index in units + 1 */
    uint8_t         ahead;            /* its candidates fetched at the
                                       * lookup: ADSERVE_DECIDE_AHEAD at most */
} __attribute__((aligned(64))) adserve_unit_slot_t;

/* A catalog item, for a recommendation's answer and its clicks. */
typedef struct {
    adserve_str_t   id;               /* item_id */
    uint64_t        hash;
    adserve_str_t   head;             /* {"id":…,"title":…,"url":…,"image":…
                                       * without the closing brace */
    adserve_str_t   url;              /* where a click goes */
    adserve_attrs_t attrs;            /* what content filters read */
} adserve_item_t;

/* A source item's associated items, ranked: indexes in the items. */
typedef struct {
    adserve_str_t   source;
    uint64_t        hash;
    const uint32_t *items;
    uint32_t        n;
} adserve_pool_t;

/* One ad the user was shown by a capped line item, from Redis. */
typedef struct {
    uint32_t        li;               /* index in the snapshot's lis */
    int64_t         at;
} adserve_seen_t;

/* Why a line item does not serve a request (the explainer names them). */
typedef enum {
    ADSERVE_OK = 0,
    ADSERVE_NO_FLIGHT,
    ADSERVE_NO_TARGETING,
    ADSERVE_NO_GOAL_REACHED,
    ADSERVE_NO_FREQUENCY_CAP,
    ADSERVE_NO_FLOOR,
    ADSERVE_NO_PACING
} adserve_reason_e;

/* One decision's inputs, and what it saw. */
typedef struct {
    int64_t         now;
    uint32_t        rnd;              /* state of the decision's generator */
    adserve_req_ctx_t *facts;         /* adserve_req_ctx_init */
    adserve_pace_t *paces;            /* this worker's pace of each line
                                       * item of the snapshot, by index */
    const adserve_seen_t *seen;       /* the user's capped ads; */
    uint32_t        nseen;
    const uint64_t *refused;          /* line items (their hashes) whose
                                       * cap reservation Redis refused:
                                       * capped */
    uint32_t        nrefused;
    const uint64_t *granted;          /* line items (their hashes) whose ad
                                       * Redis reserved for this request:
                                       * not capped, caps known or not */
    uint32_t        ngranted;
    unsigned        caps_known:1;     /* else capped line items do not serve */
    unsigned        dry:1;            /* decide without counting pacing's
                                       * opportunities and ads: a decision
                                       * that may be made again */
    unsigned        video_only:1;     /* a VAST request: the unit's vcands */
} adserve_decision_t;

typedef struct {
    size_t          records[ADSERVE_KIND_COUNT];
    size_t          skipped;          /* records that were not valid JSON objects,
                                       * and line items whose targeting could
                                       * not be compiled (they never serve) */
    size_t          active_units;
    size_t          candidates;
    size_t          excluded;         /* pairs the explainer names */
    size_t          joined;           /* line items joined to the units: all,
                                       * or those changed (adserve_joins.h) */
    size_t          ranked;           /* units whose candidates were sorted */
    size_t          borrowed;         /* units whose candidates are the
                                       * snapshot's before (its base) */
    size_t          bytes;
    unsigned        build_ms;
    /* where build_ms went, for the loader's log and snapshot-profile */
    unsigned        parse_ms;         /* records the input had not parsed */
    unsigned        link_ms;          /* id maps, references resolved */
    unsigned        join_ms;          /* line items to units, and ranked */
    unsigned        render_ms;        /* units, experiments, creatives */
    unsigned        keep_ms;          /* the joins kept for the next build:
                                       * on a thread of its own, what it
                                       * took past the render */
} adserve_stats_t;

/* A creative as events need it: where its clicks go. */
typedef struct {
    adserve_str_t   id;
    adserve_str_t   landing_url;      /* absolute http(s), checked by the API */
    adserve_str_t   vast;             /* a VIDEO's VAST, with splices */
    uint32_t        splices;
} adserve_creative_t;

typedef struct adserve_snapshot_s {
    uint64_t        rev;
    const struct adserve_snapshot_s *prev;  /* what plan[].prev index; a
                                       * pointer to compare, never read:
                                       * it may be gone */
    adserve_stats_t stats;
    /* A build after a change to line items, creatives or LICAs alone
     * borrows what it did not change from the snapshot before, its base:
     * the candidates, exclusions and segments of every unit the change
     * does not reach, the lis by the same index (those changed leave
     * dead slots, their new ones go after), and the creatives' table when
     * no creative changed. The base must outlive it: the snapshots of a
     * chain are freed together (adserve_snapshot_free, or a zone keeping
     * every build from the chain's first on). A full render starts a new
     * chain when the chain would be too deep or too large. */
    struct adserve_snapshot_s *base;  /* NULL: rendered whole */
    uint32_t        refs;             /* its owner, and the snapshot that
                                       * borrows from it */
    uint32_t        depth;            /* snapshots borrowed through: 0 whole */
    size_t          chain_bytes;      /* its arena and those of its bases */
    size_t          whole_bytes;      /* the chain's first arena */
    uint64_t        joins_stamp;      /* the joins its build kept
                                       * (adserve_joins_t's stamp) */
    adserve_li_t   *lis;              /* every line item some unit can serve */
    adserve_pace_plan_t *plan;        /* by the same index */
    uint32_t        nlis;
    uint32_t       *li_index;         /* open addressing over lis, by id; */
    uint32_t        li_mask;          /* entries are index + 1, 0 empty */
    uint32_t        max_cap_seconds;  /* longest cap of all */
    adserve_unit_t *units;            /* the ACTIVE units, */
    uint32_t        nunits;
    adserve_unit_slot_t *unit_index;  /* and open addressing over them by
                                       * id (a table of units would be 520
                                       * bytes a slot, most of them empty) */
    uint32_t        unit_mask;        /* its size - 1 */
    adserve_creative_t *creatives;    /* open addressing, every creative */
    uint32_t        creative_mask;
    adserve_item_t *items;            /* open addressing by item_id */
    uint32_t        item_mask;
    adserve_pool_t *pools;            /* open addressing by source item id */
    uint32_t        pool_mask;
    adserve_pool_t *coview;           /* co-view pools by source item id */
    uint32_t        coview_mask;
    adserve_pool_t *popular;          /* by context: its popular items */
    uint32_t        popular_mask;
    adserve_str_t  *pop_contexts;     /* the contexts popular fallbacks */
    uint32_t        npop_contexts;    /* query, "all" aside: counted */
    adserve_source_t *sources;        /* external demand's usable sources */
    uint32_t        nsources;
    char            currency[4];      /* the account's (ISO 4217): bids' */
    adserve_arena_t arena;
} adserve_snapshot_t;


/* The constant parts of every 200 body: between the click URL and the
 * ad_log value, and after it. */
#define ADSERVE_RESPONSE_MIDDLE    "\"},\"ext\":{\"message\":\"ok\",\"ad_log\":\""
#define ADSERVE_RESPONSE_TAIL      "\"}}"
#define ADSERVE_RESPONSE_VERSION   "0.1.0"
/* and before the "ad" object */
#define ADSERVE_PASSBACK_TAIL      "},\"ext\":{\"message\":\"passback\"}}"
#define ADSERVE_RESPONSE_HEAD      "{\"version\":\"" ADSERVE_RESPONSE_VERSION "\",\"ad\":"


adserve_snapshot_t *adserve_snapshot_build(const adserve_input_t *in,
    char *err, size_t errlen);
/* Drops its owner's hold on s: s goes when nothing borrows from it, and
 * with it each base that nothing else borrows from. A zone frees its
 * snapshots by their builds' blocks instead. */
void adserve_snapshot_free(adserve_snapshot_t *s);

/* Any creative of the inventory (approved or not: a click on an ad served
 * before a change still lands), or NULL. */
const adserve_creative_t *adserve_snapshot_creative(const adserve_snapshot_t *s,
    const char *id, size_t len);

/* A catalog item by its item_id, or NULL. */
const adserve_item_t *adserve_snapshot_item(const adserve_snapshot_t *s, const char *id,
    size_t len);

/* The pool of a source item for an algorithm (adserve_algorithm_e), or
 * NULL (an unknown algorithm has none). */
const adserve_pool_t *adserve_snapshot_pool(const adserve_snapshot_t *s, int algorithm,
    const char *id, size_t len);

/* A context's popular items (ADSERVE_KIND_POPULAR_ITEMS), or NULL. */
const adserve_pool_t *adserve_snapshot_popular(const adserve_snapshot_t *s,
    const char *context, size_t len);

/* Whether views in this context are counted for popularity: some popular
 * fallback queries it ("all" is always counted, apart). */
int adserve_snapshot_counts_context(const adserve_snapshot_t *s, const char *context,
    size_t len);

/* The ACTIVE ad unit with this id, or NULL. The unit found is fetched
 * ahead for its decision: its record and its first candidates (the line
 * items and paces they name are adserve_decide_ahead's). */
const adserve_unit_t *adserve_snapshot_unit(const adserve_snapshot_t *s,
    const char *id, size_t len);

/* The same, the id's adserve_hash given: a caller that needs it too (the
 * unit's counts) hashes the id once. It is the unit's hash. */
const adserve_unit_t *adserve_snapshot_unit_hashed(const adserve_snapshot_t *s,
    const char *id, size_t len, uint64_t hash);

/* The index slot where a lookup of the id of this hash starts, fetched
 * ahead: serving knows a request's unit id some phases before it looks the
 * unit up, and the slot was the first miss of every request (perf: 2 % of
 * the workers' time at the bench's 1,000 units). */
static inline void
adserve_snapshot_unit_prefetch(const adserve_snapshot_t *s, uint64_t hash)
{
    if (s != NULL && s->unit_index != NULL) {
        __builtin_prefetch(&s->unit_index[(uint32_t) hash & s->unit_mask]);
    }
}

/* The unit that serves this user: the variant of u's experiment that the
 * user draws, or u itself (no experiment, or no user id). */
const adserve_unit_t *adserve_unit_for_user(const adserve_unit_t *u, const char *user,
    size_t len);

/* The unit of u's variant named id ("{experiment id}/{variant id}", as
 * an ad_log token carries it), or u when it has no such variant (the
 * experiment changed or ended). */
const adserve_unit_t *adserve_unit_variant(const adserve_unit_t *u, const char *id,
    size_t len);

/* A line item by id, or NULL. */
adserve_li_t *adserve_snapshot_li(const adserve_snapshot_t *s, const char *id,
    size_t len);

/* Whether line item li may serve the decision's request, before pacing
 * (its pace: the goal reached, the floor on its eCPM). */
adserve_reason_e adserve_li_check(const adserve_li_t *li, const adserve_unit_t *u,
    const adserve_cand_t *c, adserve_decision_t *d);

/* The candidate to serve, or NULL for no ad. Groups are tried best first;
 * in the first with a line item that may serve (adserve_li_check) and that
 * pacing lets through, the highest eCPM wins, equals at random, then the
 * creative by LICA weight. Counts opportunities and ads into the paced line
 * items' paces (d->paces: the snapshot itself is never written), unless
 * d->dry: then the same decision made again, not dry, with the same d->rnd
 * and paces, decides the same and counts. d->rnd seeds the decision's
 * generator (the caller's random value: tests are deterministic). */
const adserve_cand_t *adserve_decide(const adserve_snapshot_t *s,
    const adserve_unit_t *u, adserve_decision_t *d);

/* A decision to come, fetched ahead so that its cache misses overlap the
 * work before it instead of coming one after another in it. The unit's
 * lookup fetched its record and its first candidates; some work later
 * (the request's parse), this fetches the line items and paces those
 * candidates name. It does not wait for memory. (The strings the answer's
 * URLs begin with are shared by the units of a base URL, and stay in the
 * cache.) */
#define ADSERVE_DECIDE_AHEAD  16          /* candidates, at most */

/* how many of a unit's candidates are fetched ahead: the lookup's (its
 * slot holds the count) and adserve_decide_ahead's */
#define adserve_cands_ahead(u)                                                \
    ((u)->ncands < ADSERVE_DECIDE_AHEAD ? (u)->ncands : ADSERVE_DECIDE_AHEAD)

void adserve_decide_ahead(const adserve_snapshot_t *s, const adserve_unit_t *u,
    const adserve_pace_t *paces);

/* The explainer: what a decision would make of each line item of a unit,
 * and why, without making it (no random draw, nothing counted). */
typedef enum {
    ADSERVE_X_WON = 0,               /* the best eCPM of the first group that
                                      * had a line item able to serve */
    ADSERVE_X_TIED,                  /* one of equal best eCPMs: a random
                                      * draw picks among them */
    ADSERVE_X_OUTRANKED,             /* able to serve, lower eCPM */
    ADSERVE_X_LOWER_PRIORITY,        /* able to serve, a better type or
                                      * priority had an ad */
    ADSERVE_X_RULE                   /* reason: the rule that held it back */
} adserve_verdict_e;

typedef struct {
    const adserve_li_t   *li;
    const adserve_pace_t *pace;      /* its pace in this worker */
    const adserve_cand_t *cand;      /* its first candidate on the unit */
    uint32_t              ncands;    /* its creatives there */
    adserve_reason_e      reason;    /* ADSERVE_OK, or what failed, pacing
                                      * included (no budget left, or a share
                                      * of 0) */
    adserve_verdict_e     verdict;
    double                ecpm;
} adserve_explained_t;

/* Fills out (u->ncands entries at most), one per line item in serving
 * order; returns how many. */
uint32_t adserve_explain(const adserve_snapshot_t *s, const adserve_unit_t *u,
    adserve_decision_t *d, adserve_explained_t *out);

#endif
