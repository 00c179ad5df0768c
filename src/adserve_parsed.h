/*
 * adserve_parsed: one record of the data contract as the snapshot build
 * reads it, parsed from its JSON text once.
 *
 * A parse depends on the record's own text and nothing else: references
 * to other records stay ids, resolved by each build. So a parse is kept
 * beside its text (adserve_records) until the text changes, and a build
 * after one API write parses one record, not the inventory. Each parse
 * is one allocation: the struct, then its strings and arrays, freed in
 * one go when the record changes or goes.
 *
 * Plain C, no nginx types; engine-internal (the snapshot build and the
 * records table use it).
 */

#ifndef ADSERVE_PARSED_H
#define ADSERVE_PARSED_H

#include <stddef.h>
#include <stdint.h>

#include "adserve_arena.h"
#include "adserve_contract.h"
#include "adserve_native.h"
#include "adserve_target.h"


struct cJSON;

typedef struct {
    const char    **v;
    const uint64_t *h;                /* ids the build looks up: each one's
                                       * adserve_hash, made with the parse
                                       * (ids_hashed), so that a rebuild
                                       * does not hash them again; else NULL */
    uint32_t        n;
} adserve_strs_t;

typedef struct {
    double          w, h;
} adserve_size_t;

#define ADSERVE_CAPS_MAX  8

typedef struct {
    uint32_t        max;              /* ads at most */
    uint32_t        seconds;          /* in any window this long */
} adserve_cap_t;

/* A recommendation placement's fallback: its kind, when and how it is
 * tried, and a preset's items with their expiry. */
typedef struct {
    uint8_t         type;             /* adserve_fallback_e */
    uint8_t         activation;       /* adserve_activation_e */
    uint8_t         order;            /* adserve_order_e */
    adserve_strs_t  items;            /* preset: catalog item ids */
    int64_t        *expire;           /* preset: unix seconds per item;
                                       * INT64_MAX: never */
    const char     *context;          /* popular: its serving_context */
    const char     *path;             /* snapshot: its file, unchecked */
} adserve_parsed_fallback_t;

typedef struct {
    const char     *parent_id;
    uint64_t        parent_hash;      /* adserve_hash of each id, once: */
    int             active;
    adserve_size_t  display;          /* the spec's defaults: 300 x 250 */
    adserve_size_t *sizes;            /* ad_unit_sizes */
    uint32_t        nsizes;
    adserve_strs_t  bcat;
    double          default_cpc, default_cpa, target_ecpm;
    const char     *public_url;       /* ext.public_url, or NULL */
    const char     *passback;         /* ext.passback's display markup, up
                                       * to ADSERVE_PASSBACK_MAX, or NULL */
    const char     *rtb_imp;          /* its bid requests' parts (adserve_rtb.h): */
    const char     *rtb_site;         /* the imp, the site, and an app by */
    const char     *rtb_app[2];       /* ADSERVE_RTB_OS_* - 1 (NULL: none) */
    adserve_strs_t  app_keywords;     /* implicit_app_inference.ua_keywords */
    int             on_response;      /* recommendation, on_ad_response */
    unsigned        formats;          /* 1 << adserve_format_e it serves */
    unsigned        bid_formats;      /* those a bid may fill: native only
                                       * in asset mode, asking for an asset
                                       * (a style draws a creative's own) */
    adserve_size_t  video;            /* the VideoPlacement: 480 x 300 */
    uint32_t        mindur, maxdur;   /* seconds; maxdur 0: no maximum */
    uint32_t       *rqddurs;          /* exactly one of these, when any */
    uint32_t        nrqddurs;
    adserve_strs_t  video_mimes;      /* none: any */
    int             linear;           /* 0 unknown, 1 linear, 2 non-linear */
    int             skip;             /* the player offers a skip */
    int             instl;            /* interstitial: full screen */
    int             native_mode;      /* adserve_render_e */
    adserve_native_req_t *native_reqs;  /* the NativePlacement's assets */
    uint32_t        nnative_reqs;
    uint64_t        native_key;       /* the same for units whose native ads
                                       * render alike (mode and requests) */
    int             rec;              /* ext.recommendation.enabled: it
                                       * recommends catalog items */
    uint32_t        topn;             /* recommendation.topn */
    adserve_parsed_fallback_t *fallbacks;  /* recommendation.fallback */
    uint32_t        nfallbacks;
    struct cJSON   *filter;           /* recommendation.content_filter_rule,
                                       * compiled by each build; NULL: none */
    int             filtering;        /* adserve_filtering_e */
    int             algorithm;        /* adserve_algorithm_e; COUNT: unknown */
    const char     *target_service;   /* ext.target_service, a valid name,
                                       * or NULL */
} adserve_parsed_unit_t;

typedef struct {
    adserve_strs_t  ad_unit_ids;
} adserve_parsed_placement_t;

typedef struct {
    int             approved;
} adserve_parsed_order_t;

typedef enum {
    ADSERVE_RULE_NONE = 0,            /* serving decides nothing */
    ADSERVE_RULE_KEPT,                /* compiled by each build */
    ADSERVE_RULE_MALFORMED            /* the line item never serves */
} adserve_rule_e;

typedef struct {
    int             active;           /* ACTIVE, approved (or never
                                       * reviewed), a known type and cost
                                       * type, a sane rate and a valid flight;
                                       * whether its order lets it serve is
                                       * the build's to decide */
    int             tier;             /* adserve_tier_e */
    int             priority;
    int             cost_type;        /* adserve_cost_e, -1 unknown */
    double          rate;
    int64_t         start, end;
    int             goal_type;        /* adserve_goal_e */
    uint64_t        goal;
    int             delivery;         /* adserve_delivery_e */
    adserve_cap_t   caps[ADSERVE_CAPS_MAX];
    uint32_t        ncaps, max_cap;
    const char     *order_id;
    uint64_t        order_hash;
    adserve_strs_t  include, exclude, placements;
    adserve_rule_e  rule;
    struct cJSON   *targeting;        /* ADSERVE_RULE_KEPT: the rule without
                                       * ad_units and placements */
} adserve_parsed_li_t;

typedef struct {
    int             approved;         /* APPROVED, and it renders */
    adserve_size_t  size;
    adserve_strs_t  categories;
    const char     *landing_url;
    const char     *ad_json;          /* the rendered "ad" object */
    size_t          ad_json_len;
    int             format;           /* adserve_format_e */
    int             interstitial;     /* may fill an instl unit */
    unsigned        splices;          /* VIDEO: in ad_json, and in vast */
    uint32_t        duration;         /* VIDEO: seconds */
    int32_t         skip_offset;      /* VIDEO: seconds; -1 not skippable */
    adserve_strs_t  mimes;            /* VIDEO: of its media files (none:
                                       * a VAST tag's wrapper) */
    const char     *vast;             /* VIDEO: the VAST, with splices; */
    size_t          vast_len;         /* NATIVE: its video asset's */
    adserve_native_asset_t *assets;   /* NATIVE */
    uint32_t        nassets;
} adserve_parsed_creative_t;

typedef struct {
    const char     *line_item_id;
    const char     *creative_id;
    uint64_t        line_item_hash, creative_hash;
    uint32_t        weight;           /* 0: never serves (not ACTIVE, or a
                                       * weight below 1) */
} adserve_parsed_lica_t;

/* A catalog item: its natural key, and its part of an answer rendered
 * once: {"id":…,"title":…,"url":…,"image":… without the closing brace. */
typedef struct {
    const char     *item_id;          /* NULL: not a usable item */
    uint64_t        item_hash;
    const char     *head;
    size_t          head_len;
    const char     *url;              /* where a click on it goes */
    adserve_attrs_t attrs;            /* what content filters read */
} adserve_parsed_item_t;

/* An associated items pool: the source item's ranked items. A context's
 * popular items (ADSERVE_KIND_POPULAR_ITEMS) read as one: the context is
 * the source. */
typedef struct {
    const char     *source;           /* NULL: not a usable pool */
    uint64_t        source_hash;
    adserve_strs_t  items;
} adserve_parsed_pool_t;

/* A native style: its template, checked (adserve_native_template_check). */
typedef struct {
    const char     *html;             /* NULL: not a valid style */
    const char     *css;
} adserve_parsed_style_t;

/* An ad unit's native style. */
typedef struct {
    const char     *ad_unit_id;
    const char     *native_style_id;
    uint64_t        ad_unit_hash, native_style_hash;
} adserve_parsed_unit_style_t;

/* An experiment's variant; its overrides are its element of the kept
 * variants array (adserve_variant_apply applies them). */
typedef struct {
    const char     *id;               /* a valid variant id */
    uint32_t        weight;
    const struct cJSON *overrides;
} adserve_parsed_variant_t;

/* An experiment: usable when ACTIVE with ADSERVE_VARIANTS_MIN ..
 * ADSERVE_VARIANTS_MAX variants of distinct valid ids and valid weights
 * (anything else splits nothing: the unit serves as it is). */
typedef struct {
    const char     *ad_unit_id;
    uint64_t        ad_unit_hash;
    int             active;           /* ACTIVE and usable */
    adserve_parsed_variant_t *variants;
    uint32_t        nvariants;
    uint64_t        upto[ADSERVE_VARIANTS_MAX];  /* adserve_experiment_bounds */
    struct cJSON   *doc;              /* the variants array, kept */
} adserve_parsed_experiment_t;

/* The global settings: what serving follows of them. Only the record of
 * id ADSERVE_SETTINGS_ID counts. */
typedef struct {
    const char     *public_url;       /* adserve_public_url_ok, or NULL:
                                       * adserve_public_url's */
    int             currency;         /* adserve_currency_names; -1: the
                                       * default */
} adserve_parsed_settings_t;

/* External demand (README "External demand"): parsed and kept by each
 * build for the auction (the snapshot's sources, allocations and blocks).
 * An AdSource: usable (endpoint set) when enabled, with a valid endpoint
 * and a format. */
typedef struct {
    const char     *endpoint;         /* NULL: not usable */
    const char     *seat;             /* NULL: any */
    uint32_t        tmax_ms;          /* ADSERVE_TMAX_MIN .. _MAX */
    uint32_t        qps_limit;        /* 0: none */
    uint32_t        formats;          /* bit adserve_format_e */
    double          floor;            /* CPM, account currency */
    double          adjustment;       /* a bid's price multiplier */
} adserve_parsed_source_t;

/* An allocation: target -1 when it is not one (the build skips it). */
typedef struct {
    const char     *ad_source_id;
    const char     *target_id;
    uint64_t        ad_source_hash, target_hash;
    int             target;           /* adserve_alloc_target_e, or -1 */
    double          share;            /* percent, 0 .. ADSERVE_SHARE_MAX */
} adserve_parsed_allocation_t;

/* A blocked creative: kind -1 when it is not one. */
typedef struct {
    int             kind;             /* adserve_block_kind_e, or -1 */
    const char     *value;
    const char     *ad_unit_id;       /* NULL: every ad unit */
    const char     *ad_source_id;     /* NULL: every source */
} adserve_parsed_block_t;

typedef struct {
    adserve_kind_e  kind;
    /* the scratch of the build that reads the parse (one at a time, see
     * adserve_joins.h): its record's index in that build, and whether a
     * build that keeps joins has read it before (0: parsed since) */
    uint32_t        index:31;
    uint32_t        built:1;
    uint32_t        slot;             /* a line item's index in the lis of
                                       * the last snapshot built with joins
                                       * (ADSERVE_LI_NONE: none), which the
                                       * next one borrows from */
    const char     *id;               /* NULL: not an object with a usable
                                       * id; the build skips it */
    size_t          id_len;
    uint64_t        id_hash;          /* the build looks ids up by it */
    union {
        adserve_parsed_unit_t       unit;
        adserve_parsed_placement_t  placement;
        adserve_parsed_order_t      order;
        adserve_parsed_li_t         li;
        adserve_parsed_creative_t   creative;
        adserve_parsed_lica_t       lica;
        adserve_parsed_style_t      style;
        adserve_parsed_unit_style_t unit_style;
        adserve_parsed_item_t       item;
        adserve_parsed_pool_t       pool;
        adserve_parsed_experiment_t experiment;
        adserve_parsed_settings_t   settings;
        adserve_parsed_source_t     source;
        adserve_parsed_allocation_t allocation;
        adserve_parsed_block_t      block;
    } u;
} adserve_parsed_t;


/* Parses one record of kind; NULL only when out of memory. Line items,
 * creatives and LICAs are read by the strict scanner (adserve_fields.h),
 * the other kinds, and the records it does not read, through cJSON: the
 * parse is the same. */
adserve_parsed_t *adserve_parse(adserve_kind_e kind, const char *text, size_t len);

/* The same through cJSON's document, whatever the kind: what adserve_parse
 * falls back to, and what the tests and the fuzzer compare it with. */
adserve_parsed_t *adserve_parse_dom(adserve_kind_e kind, const char *text, size_t len);

/* Parses an ad unit's record as a variant of an experiment makes it (its
 * overrides applied: adserve_variant_apply); NULL only when out of
 * memory. */
adserve_parsed_t *adserve_parse_variant(const char *text, size_t len,
    const struct cJSON *variant);
void adserve_parsed_free(adserve_parsed_t *p);

#endif
