/*
 * adserve_target: line item targeting at serving time.
 *
 * At snapshot build, each eligible line item's `targeting` (the stored shape
 * of sidecar/targeting.c) is compiled into an adserve_target_t in the
 * snapshot's arena: device, os and browser bit masks, a year-of-birth range,
 * a gender mask, daypart minute ranges per weekday, and the kv Expr as a flat
 * array of nodes with interned strings and sorted rhs values. A line item
 * whose targeting constrains nothing at serving (the usual case: ad units
 * and placements are resolved at build) compiles to NULL, so a candidate
 * costs one pointer test.
 *
 * At request time the facts a rule needs are computed lazily, at most once
 * per request, in an adserve_req_ctx_t: device class, os and browser from the
 * user agent (adserve_ua_classify), weekday and minute of day (UTC) from the
 * clock, and ext.kv parsed into bounded arrays without allocation.
 *
 * Semantics (README "Targeting at serving"):
 *   - every member must match; an absent, null or empty member matches
 *     anything;
 *   - device: the request's class, os and browser must each be in the
 *     corresponding list; a request without a user agent is "other" for all
 *     three;
 *   - user: yob_min <= yob <= yob_max (inclusive); a request without yob
 *     fails any bound, a request without gender fails a genders list, so
 *     targeted demand is not shown to unknown users;
 *   - dayparts: the current UTC minute is in [start, end) of a daypart that
 *     lists the current weekday;
 *   - segments: the user is in one of include and in none of exclude, as
 *     read from Redis for this request (adserve_req_ctx_segments); unknown
 *     membership matches nothing, and a request without a user id is in
 *     no segment;
 *   - kv: a cmp on a key that the request does not carry (or carries with no
 *     usable value) is false, whatever its op, so `not` of it is true; eq,
 *     in and intersects are true when any request value equals any rhs
 *     value; ne and nin are true when the key is present and no value
 *     equals; lt, le, gt and ge are true when any request value is a number
 *     that compares so with rhs. A string rhs equals a request value with
 *     the same bytes (a request number by its literal text: 5 equals "5",
 *     5.0 does not); a number rhs equals a request value of the same numeric
 *     value, a string that reads as a JSON number included ("5" equals 5).
 *
 * Plain C, no nginx types, no allocation at request time.
 */

#ifndef ADSERVE_TARGET_H
#define ADSERVE_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "adserve_arena.h"
#include "adserve_contract.h"
#include "adserve_json.h"


struct cJSON;


/* ---- facts of a user agent ---------------------------------------------- */

/* the contract's device, os and browser enums are the bit positions of the
 * compiled masks */
typedef struct {
    uint8_t         type;             /* adserve_device_type_e */
    uint8_t         os;               /* adserve_os_e */
    uint8_t         browser;          /* adserve_browser_e */
} adserve_device_t;

/* Classifies a user agent by case-sensitive substrings, first rule wins
 * (the table is in adserve_target.c and README). ua may be NULL: "other"
 * for all three. One pass over the text. */
void adserve_ua_classify(const char *ua, size_t len, adserve_device_t *d);



/* ---- ext.kv of a request ------------------------------------------------- */

/* Bounds: the first ADSERVE_KV_MAX_KEYS keys that carry a usable value are
 * kept, later ones ignored; of each key, the first ADSERVE_KV_MAX_VALUES
 * values, later ones ignored. */
#define ADSERVE_KV_MAX_KEYS    32
#define ADSERVE_KV_MAX_VALUES  16

typedef struct {
    uint32_t        off;              /* text: base + off, len bytes */
    uint32_t        len;
    double          num;              /* its numeric value, NaN when none */
} adserve_kv_value_t;

typedef struct {
    uint32_t        off;              /* name: base + off, len bytes */
    uint32_t        len;
    uint16_t        first;            /* values[first .. first + n) */
    uint16_t        n;                /* >= 1 */
} adserve_kv_key_t;

typedef struct {
    const char         *base;
    uint32_t            nkeys;
    uint32_t            nvalues;
    adserve_kv_key_t    keys[ADSERVE_KV_MAX_KEYS];
    adserve_kv_value_t  values[ADSERVE_KV_MAX_KEYS * ADSERVE_KV_MAX_VALUES];
} adserve_kv_t;

/* Parses span[0..len), the raw text of ext.kv (an object), into kv:
 * `{key: value | [values]}` where a value is a string or a number; other
 * values (objects, nested arrays, true, false, null) are ignored, and a key
 * left with no value is absent. For duplicate keys the last one wins.
 * Strings are unescaped IN PLACE, so the span must be writable and is no
 * longer JSON afterwards: parse it once (a request context does). Input
 * that is not well-formed stops the parse, keeping what was read; it never
 * reads outside the span. A string is a number when it reads as one in
 * JSON's grammar. span may be NULL (no kv). */
void adserve_kv_parse(char *span, size_t len, adserve_kv_t *kv);

/* The key with this name, or NULL. */
const adserve_kv_key_t *adserve_kv_find(const adserve_kv_t *kv, const char *name,
    size_t len);


/* ---- a catalog item's attributes ----------------------------------------- */

/* Named values as the kv Expr reads them, in the layout of adserve_kv_t:
 * a catalog item's attributes, which a content_filter_rule reads. */
typedef struct {
    const char                *base;
    const adserve_kv_key_t    *keys;
    const adserve_kv_value_t  *values;
    uint32_t                   nkeys;
} adserve_attrs_t;

typedef void *(*adserve_attrs_alloc_pt)(void *ctx, size_t size);

/* Reads a catalog item's `attributes` (a JSON object) into *out, its
 * arrays from alloc. A member is a string, a number (its text as cJSON
 * prints it), a boolean (the text "true" or "false", no number) or an
 * array of those; null, objects and nested arrays are skipped, and the
 * API's bounds (ADSERVE_ITEM_ATTRIBUTES_MAX members, ADSERVE_ITEM_ATTR_VALUES_MAX
 * values each) cut what is longer. 0, or -1 when alloc failed. */
int adserve_attrs_read(const struct cJSON *attributes, adserve_attrs_alloc_pt alloc,
    void *ctx, adserve_attrs_t *out);


/* ---- the request's facts ------------------------------------------------ */

typedef struct adserve_target_s  adserve_target_t;

/* One per request, on the caller's stack; only adserve_req_ctx_init's fields
 * are set up front, the rest when a rule first needs it. */
typedef struct {
    const adserve_ad_request_t  *req;         /* NULL: a request with no facts */
    unsigned                     have;        /* ADSERVE_HAVE_* computed so far */
    adserve_device_t             device;
    uint8_t                      weekday;     /* 0 Monday .. 6 Sunday, UTC */
    uint16_t                     minute;      /* of the UTC day, 0 .. 1439 */
    int64_t                      time_of;     /* the clock the two above are of */
    const uint64_t              *segments;    /* the user's segments: */
    uint32_t                     nsegments;   /* adserve_hash of their ids, */
    uint8_t                      segments_known;  /* once read (or no user) */
    const adserve_target_t      *memo;        /* the last rule evaluated, */
    int64_t                      memo_now;    /* at this time, */
    int                          memo_match;  /* and its result */
    adserve_kv_t                 kv;
} adserve_req_ctx_t;

#define ADSERVE_HAVE_DEVICE  1u
#define ADSERVE_HAVE_TIME    2u
#define ADSERVE_HAVE_KV      4u

/* req's ext.kv span must point into the writable buffer that
 * adserve_json_parse_ad_request scanned: it is unescaped in place when a
 * rule first needs it. req may be NULL. */
static inline void
adserve_req_ctx_init(adserve_req_ctx_t *ctx, const adserve_ad_request_t *req)
{
    ctx->req = req;
    ctx->have = 0;
    ctx->memo = NULL;
    ctx->segments = NULL;
    ctx->nsegments = 0;
    ctx->segments_known = 0;
}

/* The user's segment memberships, once known: a rule that targets segments
 * matches nothing until they are. */
static inline void
adserve_req_ctx_segments(adserve_req_ctx_t *ctx, const uint64_t *hashes, uint32_t n)
{
    ctx->segments = hashes;
    ctx->nsegments = n;
    ctx->segments_known = 1;
    ctx->memo = NULL;
}

/* True when the request of ctx, at time now (unix seconds), matches t. */
int adserve_target_match(const adserve_target_t *t, adserve_req_ctx_t *ctx,
    int64_t now);

/* True when a catalog item passes a recommendation's content filter (a
 * rule of adserve_target_compile_filter) for the request of ctx. */
int adserve_target_filter(const adserve_target_t *t, adserve_req_ctx_t *ctx,
    const adserve_attrs_t *item);


/* ---- the build ----------------------------------------------------------- */

typedef struct adserve_tstr_s  adserve_tstr_t;

/* Where and why a rule is refused: the path below `targeting` ("kv.data[1]
 * .data.rhs") and the reason, as the management API answers them. */
typedef struct {
    char                path[256];
    char                reason[256];
} adserve_target_err_t;

/* Compiles rules into an arena (the snapshot's), interning their strings
 * across line items; its own scratch memory is freed by _free. */
typedef struct {
    adserve_target_err_t *err;        /* NULL: refusals are not described */
    adserve_arena_t    *arena;
    adserve_tstr_t     *interned;     /* open addressing table */
    uint32_t            ninterned;
    uint32_t            mask;
    void               *scratch[4];   /* growable work arrays, reused */
    size_t              scratch_cap[4];
} adserve_target_builder_t;

void adserve_target_builder_init(adserve_target_builder_t *b, adserve_arena_t *arena);
void adserve_target_builder_free(adserve_target_builder_t *b);

/* Compiles a line item's `targeting` (a cJSON value, may be NULL) into *out:
 * NULL when nothing in it is decided at serving time. Returns 0, 1 when the
 * targeting is malformed (the line item must never serve), -1 when out of
 * memory. ad_units, placements and sizes are the build's business and
 * ignored here. */
int adserve_target_compile(adserve_target_builder_t *b, const struct cJSON *targeting,
    const adserve_target_t **out);

/* The segments a compiled rule (may be NULL) names, include then exclude:
 * their number, and the i-th's id (in the rule's arena) and hash. */
uint32_t adserve_target_nsegments(const adserve_target_t *t);
void adserve_target_segment(const adserve_target_t *t, uint32_t i, adserve_str_t *id,
    uint64_t *hash);

/* Compiles a recommendation placement's content_filter_rule (an Expr, may
 * be NULL) into *out, NULL when absent. Its comparisons read a catalog
 * item's attribute (lhs [name]) or the request's ext.kv (lhs
 * [ADSERVE_FILTER_KV, key]); a boolean rhs equals the boolean attribute.
 * Paths in refusals start below content_filter_rule. Returns as
 * adserve_target_compile. */
int adserve_target_compile_filter(adserve_target_builder_t *b, const struct cJSON *rule,
    const adserve_target_t **out);

/* adserve_target_check for a content_filter_rule. */
int adserve_target_check_filter(const struct cJSON *rule, adserve_target_err_t *err);

/* The targeting grammar's one judge: whether a line item's targeting (a
 * stored or a proposed one) compiles, as serving will compile it. 0 when it
 * does; 1 when it does not, with *err saying where and why; -1 out of
 * memory. The management API calls it on every write, so serving only
 * ever sees rules it can evaluate. */
int adserve_target_check(const struct cJSON *targeting, adserve_target_err_t *err);

#endif
