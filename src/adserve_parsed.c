/*
 * Parsing one record of the data contract (adserve_parsed.h).
 *
 * Line items, creatives and LICAs, most of a large inventory, are read by
 * the strict scanner (adserve_fields.h) straight into the parse; the rules
 * of what a record means are the same functions for both readers (li_goal,
 * li_cap, li_active, creative_format, lica_weight, render_display). The
 * other kinds, and the records the scanner does not read, go through cJSON:
 * the JSON document is parsed, read into a scratch block and deleted at
 * once: cJSON's many small allocations are reused record after record,
 * instead of a whole inventory's worth of them living until a build ends.
 * The scratch block is then copied into one allocation of the exact size,
 * its pointers moved along: a builder keeps the parses of its whole
 * inventory, and an arena's spare room would double that.
 * What the API would refuse is read as the safest value (a line item that
 * never serves, a default), never as an error: a bad record must not stop
 * the others from serving.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "adserve_experiment.h"
#include "adserve_fields.h"
#include "adserve_jsonw.h"
#include "adserve_vast.h"
#include "adserve_parsed.h"
#include "adserve_rtb.h"
#include "adserve_target.h"
#include "adserve_token.h"


/* A bump allocator over one block: where a parse is written first. */
typedef struct {
    char        *base;
    size_t       used, cap;
    int          full;                /* an allocation did not fit */
} scratch_t;


static void *
s_alloc(scratch_t *sc, size_t size)
{
    void    *p;
    size_t   at;

    /* pointers, doubles and int64s: 8 bytes is all a parse needs; the
     * rounding may pass the end of the block, so it is checked first */
    at = (sc->used + 7) & ~(size_t) 7;

    if (at > sc->cap || sc->cap - at < size) {
        sc->full = 1;
        return NULL;
    }

    p = sc->base + at;
    sc->used = at + size;

    return p;
}


/* for adserve_native's readers */
static void *
s_alloc_cb(void *ctx, size_t size)
{
    return s_alloc(ctx, size);
}


static char *
s_dup(scratch_t *sc, const char *src, size_t len)
{
    char  *p;

    if (sc->cap - sc->used < len + 1) {
        sc->full = 1;
        return NULL;
    }

    p = sc->base + sc->used;
    memcpy(p, src, len);
    p[len] = '\0';
    sc->used += len + 1;

    return p;
}


static const char *
get_str(const cJSON *o, const char *name)
{
    const cJSON  *v = cJSON_GetObjectItemCaseSensitive(o, name);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}


static double
get_num(const cJSON *o, const char *name, double dflt)
{
    const cJSON  *v = cJSON_GetObjectItemCaseSensitive(o, name);

    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}


/* a number into [lo, hi], NaN to lo: casting an out-of-range double to
 * int is undefined */
static int
clamp_int(double v, int lo, int hi)
{
    return !(v >= lo) ? lo : v > hi ? hi : (int) v;
}


/* a cost field of ext: a finite, non-negative number (the API checks it) */
static double
get_cost(const cJSON *o, const char *name)
{
    double  v = get_num(o, name, 0);

    /* past the API's bound (a record written around it): the bound, so that
     * a floor never turns into none */
    return v >= 0 ? (v <= ADSERVE_COST_MAX ? v : ADSERVE_COST_MAX) : 0;
}


static void
read_size(const cJSON *o, adserve_size_t *sz, double dw, double dh)
{
    sz->w = get_num(o, "w", dw);
    sz->h = get_num(o, "h", dh);
}


/* The hash the build finds an id by (adserve_hash), 0 for none. */
static uint64_t
hash_of(const char *id)
{
    return id != NULL ? adserve_hash(id, strlen(id)) : 0;
}


/* A string member, copied into the record's arena; NULL when absent or out
 * of memory (*oom says which). */
static const char *
dup_str(scratch_t *a, const cJSON *o, const char *name, int *oom)
{
    const char  *s = get_str(o, name);
    char        *p;

    if (s == NULL) {
        return NULL;
    }

    p = s_dup(a, s, strlen(s));
    *oom |= p == NULL;

    return p;
}


/* The strings of an array (with member: the string member of each of its
 * objects), copied; other values are dropped. */
static adserve_strs_t
dup_strs_of(scratch_t *a, const cJSON *arr, const char *member, int *oom)
{
    adserve_strs_t  s = { NULL, NULL, 0 };
    const cJSON    *it, *v;
    char           *p;
    int             n = cJSON_GetArraySize(arr);

    if (!cJSON_IsArray(arr) || n == 0) {
        return s;
    }

    s.v = s_alloc(a, n * sizeof(char *));
    if (s.v == NULL) {
        *oom = 1;
        return s;
    }

    cJSON_ArrayForEach(it, arr) {
        v = member ? cJSON_GetObjectItemCaseSensitive(it, member) : it;
        if (cJSON_IsString(v)) {
            p = s_dup(a, v->valuestring, strlen(v->valuestring));
            if (p == NULL) {
                *oom = 1;
                return s;
            }
            s.v[s.n++] = p;
        }
    }

    return s;
}


static adserve_strs_t
dup_strs(scratch_t *a, const cJSON *arr, int *oom)
{
    return dup_strs_of(a, arr, NULL, oom);
}


/* A list of ids that the build resolves, with their hashes: -1 when the
 * block is full. */
static int
ids_hashed(scratch_t *a, adserve_strs_t *s)
{
    uint64_t  *h;
    uint32_t   i;

    if (s->n == 0) {
        return 0;
    }

    h = s_alloc(a, s->n * sizeof(uint64_t));
    if (h == NULL) {
        return -1;
    }

    for (i = 0; i < s->n; i++) {
        h[i] = hash_of(s->v[i]);
    }

    s->h = h;
    return 0;
}


/* A line item's lists of ad units and placements, hashed (both readers):
 * -1 when the block is full */
static int
li_ids_hashed(scratch_t *a, adserve_parsed_li_t *li)
{
    return ids_hashed(a, &li->include) != 0 || ids_hashed(a, &li->exclude) != 0
           || ids_hashed(a, &li->placements) != 0 ? -1 : 0;
}


/* ext.{display,video,native}.enabled: 1 or true */
static unsigned
unit_formats(const cJSON *ext)
{
    const cJSON  *v;
    unsigned      f, formats = 0;

    for (f = 0; f < ADSERVE_FORMAT_COUNT; f++) {
        v = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(ext, adserve_format_names[f]), "enabled");
        if ((cJSON_IsNumber(v) && v->valuedouble != 0) || cJSON_IsTrue(v)) {
            formats |= 1u << f;
        }
    }

    /* none on: display, as every ad unit served before formats */
    return formats ? formats : 1u << ADSERVE_FORMAT_DISPLAY;
}


/* The VideoPlacement, with the spec's defaults (480 x 300, durations 0:
 * any) */
static void
parse_unit_video(scratch_t *sc, adserve_parsed_unit_t *u, const cJSON *v, int *oom)
{
    const cJSON  *it, *durs = cJSON_GetObjectItemCaseSensitive(v, "rqddurs");

    read_size(v, &u->video, 480, 300);
    u->mindur = (uint32_t) clamp_int(get_num(v, "mindur", 0), 0, INT32_MAX);
    u->maxdur = (uint32_t) clamp_int(get_num(v, "maxdur", 0), 0, INT32_MAX);
    u->linear = clamp_int(get_num(v, "linear", 0), 0, 2);
    u->skip = get_num(v, "skip", 0) != 0;
    u->video_mimes = dup_strs(sc, cJSON_GetObjectItemCaseSensitive(v, "mime"), oom);

    if (cJSON_GetArraySize(durs) > 0) {
        u->rqddurs = s_alloc(sc, cJSON_GetArraySize(durs) * sizeof(uint32_t));
        if (u->rqddurs == NULL) {
            *oom = 1;
            return;
        }
        cJSON_ArrayForEach(it, durs) {
            if (cJSON_IsNumber(it)) {
                u->rqddurs[u->nrqddurs++] = (uint32_t) clamp_int(it->valuedouble, 0,
                                                                 INT32_MAX);
            }
        }
    }
}


/* The NativePlacement's requests and ext.native.render_mode; native_key
 * tells which units render a creative alike. */
static void
parse_unit_native(scratch_t *sc, adserve_parsed_unit_t *u, const cJSON *o, const cJSON *ext,
    int *oom)
{
    const cJSON  *assets;
    char         *text;
    int           mode;

    u->bid_formats = u->formats & ~(1u << ADSERVE_FORMAT_NATIVE);

    if (!(u->formats & (1u << ADSERVE_FORMAT_NATIVE))) {
        return;
    }

    mode = adserve_vocab_str(adserve_render_names,
               get_str(cJSON_GetObjectItemCaseSensitive(ext, "native"), "render_mode"));
    u->native_mode = mode < 0 ? ADSERVE_RENDER_HTML : mode;

    assets = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "native"),
                                              "assets");
    if (adserve_native_reqs_read(assets, s_alloc_cb, sc, &u->native_reqs,
                                 &u->nnative_reqs) != 0)
    {
        *oom = 1;
        return;
    }

    if (u->native_mode == ADSERVE_RENDER_ASSET && u->nnative_reqs > 0) {
        u->bid_formats |= 1u << ADSERVE_FORMAT_NATIVE;
    }

    text = assets ? cJSON_PrintUnformatted(assets) : NULL;
    if (assets != NULL && text == NULL) {
        *oom = 1;
        return;
    }

    u->native_key = adserve_hash(text ? text : "", text ? strlen(text) : 0)
                    ^ (uint64_t) u->native_mode;
    cJSON_free(text);
}


/* A preset's items: the ids, and each one's expiry (absent or null:
 * never; one that is not a date-time: already expired, as never shown
 * is the safe reading of a date that cannot be read). */
static void
parse_preset(scratch_t *sc, adserve_parsed_fallback_t *f, const cJSON *items, int *oom)
{
    const cJSON  *it, *x;
    const char   *id, *t;
    int           n = cJSON_GetArraySize(items);

    if (n <= 0) {
        return;
    }

    n = n > ADSERVE_PRESET_ITEMS_MAX ? ADSERVE_PRESET_ITEMS_MAX : n;
    f->items.v = s_alloc(sc, (size_t) n * sizeof(char *));
    f->expire = s_alloc(sc, (size_t) n * sizeof(int64_t));
    if (f->items.v == NULL || f->expire == NULL) {
        *oom = 1;
        return;
    }

    cJSON_ArrayForEach(it, items) {
        id = get_str(it, "id");
        if (id == NULL || f->items.n == (uint32_t) n) {
            continue;
        }

        t = get_str(it, "expire");
        x = cJSON_GetObjectItemCaseSensitive(it, "expire");
        f->expire[f->items.n] = INT64_MAX;
        if ((x != NULL && !cJSON_IsNull(x) && t == NULL)
            || (t != NULL && adserve_parse_time(t, &f->expire[f->items.n]) != 0))
        {
            f->expire[f->items.n] = INT64_MIN;
        }

        f->items.v[f->items.n] = s_dup(sc, id, strlen(id));
        if (f->items.v[f->items.n++] == NULL) {
            *oom = 1;
            return;
        }
    }
}


/* recommendation.fallback: the chain, in order; an entry of an unknown
 * type is dropped */
static void
parse_fallbacks(scratch_t *sc, adserve_parsed_unit_t *u, const cJSON *rec, int *oom)
{
    adserve_parsed_fallback_t  *f;
    const cJSON                *chain, *it;
    int                         n, type, v;

    chain = cJSON_GetObjectItemCaseSensitive(rec, "fallback");
    n = cJSON_GetArraySize(chain);
    if (n <= 0) {
        return;
    }

    n = n > ADSERVE_FALLBACKS_MAX ? ADSERVE_FALLBACKS_MAX : n;
    u->fallbacks = s_alloc(sc, (size_t) n * sizeof(adserve_parsed_fallback_t));
    if (u->fallbacks == NULL) {
        *oom = 1;
        return;
    }

    cJSON_ArrayForEach(it, chain) {
        type = adserve_vocab_str(adserve_fallback_names, get_str(it, "type"));
        if (type < 0 || u->nfallbacks == (uint32_t) n) {
            continue;
        }

        f = &u->fallbacks[u->nfallbacks++];
        memset(f, 0, sizeof(*f));
        f->type = (uint8_t) type;

        /* the spec's defaults: popular except_timeout, the others always */
        v = adserve_vocab_str(adserve_activation_names, get_str(it, "activation"));
        f->activation = (uint8_t) (v >= 0 ? v : type == ADSERVE_FALLBACK_POPULAR
                                                ? ADSERVE_ACTIVATION_EXCEPT_TIMEOUT
                                                : ADSERVE_ACTIVATION_ALWAYS);
        v = adserve_vocab_str(adserve_order_names, get_str(it, "order"));
        f->order = (uint8_t) (v >= 0 ? v : ADSERVE_ORDER_SEQUENTIAL);

        if (type == ADSERVE_FALLBACK_PRESET) {
            parse_preset(sc, f, cJSON_GetObjectItemCaseSensitive(it, "items"), oom);

        } else if (type == ADSERVE_FALLBACK_POPULAR) {
            /* the spec's default: the popularity of every context */
            f->context = get_str(it, "serving_context");
            f->context = f->context != NULL && f->context[0] != '\0'
                         && strlen(f->context) <= ADSERVE_CONTEXT_MAX
                         ? s_dup(sc, f->context, strlen(f->context))
                         : s_dup(sc, ADSERVE_V_CONTEXT_ALL, sizeof(ADSERVE_V_CONTEXT_ALL) - 1);
            *oom |= f->context == NULL;

        } else if (type == ADSERVE_FALLBACK_SNAPSHOT && get_str(it, "path") != NULL) {
            f->path = s_dup(sc, get_str(it, "path"), strlen(get_str(it, "path")));
            *oom |= f->path == NULL;
        }
    }
}


/* A bid request's part (adserve_rtb.h: place ADSERVE_RTB_SITE..OS_IOS, or
 * -1 for the imp) in the record's arena; an app the unit cannot name stays
 * NULL. */
static const char *
rtb_part(scratch_t *sc, const cJSON *o, unsigned formats, int place, int *oom)
{
    size_t       len = 0;
    char        *text;
    const char  *p;

    text = place < 0 ? adserve_rtb_render_imp(o, formats, &len)
                     : adserve_rtb_render_place(o, place, &len);
    if (text == NULL) {
        *oom |= place <= ADSERVE_RTB_SITE;
        return NULL;
    }

    p = s_dup(sc, text, len);
    free(text);
    *oom |= p == NULL;

    return p;
}


/* The parts of the unit's bid requests, rendered with its parse (after the
 * formats its bids may fill): a write renders one unit again, a rebuild
 * none. Every unit has them, since any may be allocated to a source. */
static void
parse_unit_rtb(scratch_t *sc, adserve_parsed_unit_t *u, const cJSON *o, int *oom)
{
    u->rtb_imp = rtb_part(sc, o, u->bid_formats, -1, oom);
    u->rtb_site = rtb_part(sc, o, 0, ADSERVE_RTB_SITE, oom);
    u->rtb_app[ADSERVE_RTB_OS_ANDROID - 1] = rtb_part(sc, o, 0, ADSERVE_RTB_OS_ANDROID, oom);
    u->rtb_app[ADSERVE_RTB_OS_IOS - 1] = rtb_part(sc, o, 0, ADSERVE_RTB_OS_IOS, oom);
    u->app_keywords = dup_strs(sc, cJSON_GetObjectItemCaseSensitive(
                          cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(o, "ext"), "implicit_app_inference"),
                          "ua_keywords"), oom);
}


/* ---- the kinds --------------------------------------------------------- */

static void
parse_unit_ext(scratch_t *sc, adserve_parsed_t *p, const cJSON *o, int *oom)
{
    adserve_parsed_unit_t  *u = &p->u.unit;
    const cJSON            *ext, *rec, *v;
    const char             *url;

    ext = cJSON_GetObjectItemCaseSensitive(o, "ext");
    u->formats = unit_formats(ext);
    u->bcat = dup_strs(sc, cJSON_GetObjectItemCaseSensitive(ext, "bcat"), oom);
    u->default_cpc = get_cost(ext, "default_cpc");
    u->default_cpa = get_cost(ext, "default_cpa");
    u->target_ecpm = get_cost(ext, "target_ecpm");

    url = get_str(ext, "public_url");
    u->public_url = (url != NULL && url[0] != '\0')
                    ? dup_str(sc, ext, "public_url", oom) : NULL;

    /* the spec lets ext.passback be any JSON: markup of another kind or
     * size is kept by the API and not served */
    v = cJSON_GetObjectItemCaseSensitive(ext, "passback");
    url = get_str(v, ADSERVE_V_PASSBACK_DISPLAY);
    u->passback = (url != NULL && url[0] != '\0' && strlen(url) <= ADSERVE_PASSBACK_MAX)
                  ? dup_str(sc, v, ADSERVE_V_PASSBACK_DISPLAY, oom) : NULL;

    /* a recommendation placement (ext.recommendation.enabled) records its
     * impression with the response when its ad_log_tracking_mode says so;
     * missing or null means on_event_tracker (spec) */
    v = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(ext, "recommendation"), "enabled");
    rec = cJSON_GetObjectItemCaseSensitive(o, "recommendation");
    u->rec = (cJSON_IsNumber(v) && v->valuedouble != 0) || cJSON_IsTrue(v);
    u->topn = (uint32_t) clamp_int(get_num(rec, "topn", ADSERVE_TOPN_DEFAULT), 0,
                                   ADSERVE_TOPN_MAX);
    if (u->rec) {
        parse_fallbacks(sc, u, rec, oom);
        u->filtering = adserve_vocab_str(adserve_filtering_names,
                           get_str(cJSON_GetObjectItemCaseSensitive(rec, "candidate_filtering"),
                                   "method"));
        u->filtering = u->filtering >= 0 ? u->filtering : ADSERVE_FILTERING_NONE;
        /* the spec's default; a name adserve does not have gives no items */
        u->algorithm = get_str(ext, "algorithm") == NULL
                       ? ADSERVE_ALGORITHM_AXA0
                       : adserve_vocab_str(adserve_algorithm_names, get_str(ext, "algorithm"));
        u->algorithm = u->algorithm >= 0 ? u->algorithm : ADSERVE_ALGORITHM_COUNT;
        /* a name the API would refuse calls nothing */
        if (adserve_service_name_ok(get_str(ext, "target_service"))) {
            u->target_service = dup_str(sc, ext, "target_service", oom);
        }
        v = cJSON_GetObjectItemCaseSensitive(rec, "content_filter_rule");
        u->filter = v != NULL && !cJSON_IsNull(v) ? (cJSON *) v : NULL;
    }
    u->on_response = u->rec
                     && adserve_vocab_str(adserve_tracking_names,
                                          get_str(rec, "ad_log_tracking_mode"))
                        == ADSERVE_TRACKING_ON_AD_RESPONSE;
}


static int
parse_unit(scratch_t *sc, adserve_parsed_t *p, cJSON *o)
{
    adserve_parsed_unit_t  *u = &p->u.unit;
    const cJSON            *sizes, *it;
    int                     oom = 0;

    u->parent_id = dup_str(sc, o, "parent_id", &oom);
    u->parent_hash = hash_of(u->parent_id);
    u->active = adserve_vocab_str(adserve_unit_status_names, get_str(o, "status"))
                == ADSERVE_UNIT_ACTIVE;
    u->instl = get_num(o, "instl", 0) != 0;

    /* the spec's DisplayPlacement defaults: 300 x 250; a size the API
     * would refuse (negative, NaN, beyond any screen) fits nothing: 0 */
    read_size(cJSON_GetObjectItemCaseSensitive(o, "display"), &u->display, 300, 250);
    u->display.w = u->display.w >= 0 && u->display.w <= 100000 ? u->display.w : 0;
    u->display.h = u->display.h >= 0 && u->display.h <= 100000 ? u->display.h : 0;

    sizes = cJSON_GetObjectItemCaseSensitive(o, "ad_unit_sizes");
    if (cJSON_IsArray(sizes) && cJSON_GetArraySize(sizes) > 0) {
        u->sizes = s_alloc(sc,
                       cJSON_GetArraySize(sizes) * sizeof(adserve_size_t));
        if (u->sizes == NULL) {
            return -1;
        }
        cJSON_ArrayForEach(it, sizes) {
            if (cJSON_IsObject(it)) {
                read_size(it, &u->sizes[u->nsizes++], -1, -1);
            }
        }
    }

    parse_unit_ext(sc, p, o, &oom);
    parse_unit_video(sc, u, cJSON_GetObjectItemCaseSensitive(o, "video"), &oom);
    parse_unit_native(sc, u, o, cJSON_GetObjectItemCaseSensitive(o, "ext"), &oom);
    parse_unit_rtb(sc, u, o, &oom);

    return oom ? -1 : 0;
}


static int
parse_placement(scratch_t *sc, adserve_parsed_t *p, cJSON *o)
{
    int  oom = 0;

    p->u.placement.ad_unit_ids = dup_strs(sc,
        cJSON_GetObjectItemCaseSensitive(o, "ad_unit_ids"), &oom);

    return oom || ids_hashed(sc, &p->u.placement.ad_unit_ids) != 0 ? -1 : 0;
}


static int
parse_order(scratch_t *sc, adserve_parsed_t *p, cJSON *o)
{
    (void) sc;

    p->u.order.approved = adserve_vocab_str(adserve_order_status_names,
                                            get_str(o, "status"))
                          == ADSERVE_ORDER_APPROVED;
    return 0;
}


/* ---- a line item's rules, whichever reader read its record ---- */

/* An impression goal of units: 1 when it is one the API would take (its
 * type is read then) */
static int
li_goal(adserve_parsed_li_t *li, double units)
{
    if (units >= 1 && units <= 1e15) {
        li->goal = (uint64_t) units;
        return 1;
    }

    return 0;
}


static int
li_delivery(int delivery)
{
    return delivery == ADSERVE_DELIVERY_ASAP ? ADSERVE_DELIVERY_ASAP : ADSERVE_DELIVERY_EVEN;
}


/* One element of frequency_caps: kept when the API would take it */
static void
li_cap(adserve_parsed_li_t *li, double max, double sec)
{
    if (li->ncaps < ADSERVE_CAPS_MAX && max >= 1 && max <= 1e6
        && sec >= 1 && sec <= 31536000)
    {
        li->caps[li->ncaps].max = (uint32_t) max;
        li->caps[li->ncaps].seconds = (uint32_t) sec;
        if (li->caps[li->ncaps].seconds > li->max_cap) {
            li->max_cap = li->caps[li->ncaps].seconds;
        }
        li->ncaps++;
    }
}


/* A record with no approval at all: not even an unknown one (-1) */
#define APPROVAL_NONE  -2

/* Whether it may serve, its order aside. Reviewed: an advertiser's line
 * item waits for an operator's APPROVED; a record with no approval at all
 * predates reviews (or a tool wrote it) and serves as before. */
static int
li_active(const adserve_parsed_li_t *li, int status, int approval, int bad_flight)
{
    return status == ADSERVE_LI_ACTIVE
           && (approval == APPROVAL_NONE || approval == ADSERVE_APPROVAL_APPROVED)
           && li->tier >= 0 && li->cost_type >= 0
           && li->rate >= 0 && li->rate <= ADSERVE_COST_MAX
           && !bad_flight && li->start < li->end;
}


/* goal, delivery and frequency caps; what the API refuses is ignored */
static void
parse_delivery(adserve_parsed_li_t *li, const cJSON *o)
{
    const cJSON  *goal, *caps, *it;
    double        units, max, sec;
    int           n;

    goal = cJSON_GetObjectItemCaseSensitive(o, "goal");
    units = get_num(goal, "units", 0);

    li->goal_type = ADSERVE_GOAL_NONE;
    if (li_goal(li, units)) {
        n = adserve_vocab_str(adserve_goal_names, get_str(goal, "type"));
        li->goal_type = n < 0 ? ADSERVE_GOAL_NONE : n;
    }

    li->delivery = li_delivery(adserve_vocab_str(adserve_delivery_names,
                                                 get_str(o, "delivery")));

    caps = cJSON_GetObjectItemCaseSensitive(o, "frequency_caps");
    if (!cJSON_IsArray(caps)) {
        return;
    }

    cJSON_ArrayForEach(it, caps) {
        max = get_num(it, "max", 0);
        sec = get_num(it, "seconds", 0);
        li_cap(li, max, sec);
    }
}


/* What serving decides per request: compiled once here to know whether
 * there is anything (most line items: nothing) and whether it compiles;
 * a rule with something in it is kept for each build to compile into its
 * snapshot. */
static int
parse_rule(adserve_parsed_li_t *li, cJSON *tg)
{
    adserve_arena_t            arena;
    adserve_target_builder_t   tb;
    const adserve_target_t    *t;
    int                        rc;

    adserve_arena_init(&arena, 1024);
    adserve_target_builder_init(&tb, &arena);
    rc = adserve_target_compile(&tb, tg, &t);
    adserve_target_builder_free(&tb);
    adserve_arena_free(&arena);

    switch (rc) {
    case 0:
        break;
    case 1:
        li->rule = ADSERVE_RULE_MALFORMED;
        return 0;
    default:
        return -1;
    }

    if (t == NULL) {
        li->rule = ADSERVE_RULE_NONE;
        return 0;
    }

    /* still in the document: adserve_parse takes it out once the parse
     * is final (a parse may be tried again in a larger scratch block) */
    li->targeting = tg;
    li->rule = ADSERVE_RULE_KEPT;

    return 0;
}


static int
parse_li(scratch_t *sc, adserve_parsed_t *p, cJSON *o)
{
    adserve_parsed_li_t  *li = &p->u.li;
    const cJSON          *units;
    cJSON                *tg;
    const char           *t;
    int                   bad_flight, oom = 0;

    li->tier = adserve_vocab_str(adserve_tier_names, get_str(o, "type"));
    li->priority = clamp_int(get_num(o, "priority", 8), 1, 16);
    li->cost_type = adserve_vocab_str(adserve_cost_names, get_str(o, "cost_type"));
    li->rate = get_num(o, "rate", 0);
    parse_delivery(li, o);

    li->start = INT64_MIN;
    li->end = INT64_MAX;
    t = get_str(o, "start_at");
    bad_flight = t != NULL && adserve_parse_time(t, &li->start) != 0;
    t = get_str(o, "end_at");
    bad_flight |= t != NULL && adserve_parse_time(t, &li->end) != 0;

    t = get_str(o, "approval");
    li->active = li_active(li, adserve_vocab_str(adserve_li_status_names, get_str(o, "status")),
                           t == NULL ? APPROVAL_NONE
                                     : adserve_vocab_str(adserve_approval_names, t),
                           bad_flight);

    li->order_id = dup_str(sc, o, "order_id", &oom);
    li->order_hash = hash_of(li->order_id);

    tg = cJSON_GetObjectItemCaseSensitive(o, "targeting");
    units = cJSON_GetObjectItemCaseSensitive(tg, "ad_units");
    li->include = dup_strs(sc,
                      cJSON_GetObjectItemCaseSensitive(units, "include"), &oom);
    li->exclude = dup_strs(sc,
                      cJSON_GetObjectItemCaseSensitive(units, "exclude"), &oom);
    li->placements = dup_strs(sc,
                         cJSON_GetObjectItemCaseSensitive(tg, "placements"), &oom);
    oom |= li_ids_hashed(sc, li) != 0;

    /* only a line item that could serve needs its rule */
    if (oom || (li->active && parse_rule(li, tg) != 0)) {
        return -1;
    }

    return 0;
}


/* Renders a display creative's "ad" object once; every ad unit it serves
 * on reuses the text. NULL when it cannot be rendered (its type lacks its
 * field), or out of memory. */
static char *
render_display(int ctype, const char *img, const char *html, const char *id,
    adserve_size_t size)
{
    adserve_jsonw_t  w;

    if (!(ctype == ADSERVE_CREATIVE_IMAGE && img != NULL)
        && !(ctype == ADSERVE_CREATIVE_HTML && html != NULL))
    {
        return NULL;
    }

    adserve_jsonw_init(&w);
    adserve_jsonw_lit(&w, "{\"id\":");
    adserve_jsonw_str(&w, id);
    adserve_jsonw_lit(&w, ",\"display\":{\"w\":");
    adserve_jsonw_num(&w, size.w);
    adserve_jsonw_lit(&w, ",\"h\":");
    adserve_jsonw_num(&w, size.h);

    if (ctype == ADSERVE_CREATIVE_IMAGE) {
        adserve_jsonw_lit(&w, ",\"banner\":{\"img\":");
        adserve_jsonw_str(&w, img);
        adserve_jsonw_lit(&w, "}}}");

    } else {
        adserve_jsonw_lit(&w, ",\"adm\":");
        adserve_jsonw_str(&w, html);
        adserve_jsonw_lit(&w, "}}");
    }

    if (w.oom) {
        adserve_jsonw_free(&w);
        return NULL;
    }

    return w.data;
}


/* A video creative's "ad" object: its VAST in a JSON string, the splices
 * left as they are for serving to fill (adserve_vast.h); the VAST itself
 * kept for GET /app/v0/vast. */
static char *
render_video(scratch_t *sc, const cJSON *o, adserve_parsed_t *p, int *oom)
{
    adserve_parsed_creative_t  *c = &p->u.creative;
    const cJSON                *v = cJSON_GetObjectItemCaseSensitive(o, "video");
    adserve_jsonw_t             w;
    char                       *vast;
    size_t                      len;
    double                      skip;

    vast = adserve_vast_render(v, get_str(o, "name"), p->id, &len, &c->splices);
    if (vast == NULL) {
        return NULL;
    }

    c->vast = s_dup(sc, vast, len);
    c->vast_len = len;
    /* the VAST was rendered: its duration is in range; a skip offset
     * past it (the API refuses those) is clamped, never cast as is */
    c->duration = (uint32_t) clamp_int(get_num(v, "duration", 0), 0, ADSERVE_VIDEO_DURATION_MAX);
    skip = get_num(v, "skip_offset", -1);
    c->skip_offset = skip >= 0 ? clamp_int(skip, 0, ADSERVE_VIDEO_DURATION_MAX) : -1;
    c->mimes = dup_strs_of(sc, cJSON_GetObjectItemCaseSensitive(v, "media_files"), "mime",
                           oom);
    *oom |= c->vast == NULL;

    adserve_jsonw_init(&w);
    adserve_jsonw_lit(&w, "{\"id\":");
    adserve_jsonw_str(&w, p->id);
    adserve_jsonw_lit(&w, ",\"video\":{\"w\":");
    adserve_jsonw_num(&w, c->size.w);
    adserve_jsonw_lit(&w, ",\"h\":");
    adserve_jsonw_num(&w, c->size.h);
    adserve_jsonw_lit(&w, ",\"vast\":\"");
    adserve_jsonw_esc(&w, vast, len, ADSERVE_SPLICE);
    adserve_jsonw_lit(&w, "\"}}");
    free(vast);

    if (w.oom) {
        adserve_jsonw_free(&w);
        return NULL;
    }

    return w.data;
}


/* A native creative's assets, and its video asset's VAST; its "ad"
 * object depends on the ad unit (adserve_native.h): the build renders
 * it. 1 when it has no asset. */
static int
parse_native(scratch_t *sc, const cJSON *o, adserve_parsed_t *p, int *oom)
{
    adserve_parsed_creative_t  *c = &p->u.creative;
    const cJSON                *native, *video;
    char                       *vast;
    size_t                      len;

    native = cJSON_GetObjectItemCaseSensitive(o, "native");

    if (adserve_native_assets_read(native, s_alloc_cb, sc, &c->assets, &c->nassets) != 0) {
        *oom = 1;
        return -1;
    }

    video = cJSON_GetObjectItemCaseSensitive(native, "video");
    if (cJSON_IsObject(video)) {
        vast = adserve_vast_render(video, get_str(o, "name"), p->id, &len, &c->splices);
        if (vast != NULL) {
            c->vast = s_dup(sc, vast, len);
            c->vast_len = len;
            *oom |= c->vast == NULL;
            free(vast);
        }
    }

    return c->nassets > 0 ? 0 : 1;
}


static int
creative_format(int ctype)
{
    return ctype == ADSERVE_CREATIVE_VIDEO ? ADSERVE_FORMAT_VIDEO
           : ctype == ADSERVE_CREATIVE_NATIVE ? ADSERVE_FORMAT_NATIVE
           : ADSERVE_FORMAT_DISPLAY;
}


static int
parse_creative(scratch_t *sc, adserve_parsed_t *p, cJSON *o)
{
    adserve_parsed_creative_t  *c = &p->u.creative;
    char                       *ad;
    int                         oom = 0, ctype;

    read_size(o, &c->size, -1, -1);
    c->categories = dup_strs(sc,
                        cJSON_GetObjectItemCaseSensitive(o, "categories"), &oom);
    c->landing_url = dup_str(sc, o, "landing_url", &oom);

    if (oom) {
        return -1;
    }

    ctype = adserve_vocab_str(adserve_creative_type_names, get_str(o, "type"));
    c->interstitial = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "interstitial"));
    c->format = creative_format(ctype);

    /* a creative that cannot be rendered can never serve */
    if (adserve_vocab_str(adserve_approval_names, get_str(o, "approval"))
        != ADSERVE_APPROVAL_APPROVED)
    {
        return 0;
    }

    if (c->format == ADSERVE_FORMAT_NATIVE) {
        c->approved = parse_native(sc, o, p, &oom) == 0 && !oom;
        return oom ? -1 : 0;
    }

    ad = c->format == ADSERVE_FORMAT_VIDEO ? render_video(sc, o, p, &oom)
                                           : render_display(ctype, get_str(o, "image_url"),
                                                            get_str(o, "html"), p->id, c->size);
    if (ad == NULL) {
        return oom ? -1 : 0;
    }

    c->ad_json_len = strlen(ad);
    c->ad_json = s_dup(sc, ad, c->ad_json_len);
    free(ad);
    c->approved = !oom;

    return c->ad_json && !oom ? 0 : -1;
}


static void
lica_weight(adserve_parsed_lica_t *l, int status, double w)
{
    if (status == ADSERVE_LICA_ACTIVE && w >= 1) {
        l->weight = w > 1000000 ? 1000000 : (uint32_t) w;
    }
}


static int
parse_lica(scratch_t *sc, adserve_parsed_t *p, cJSON *o)
{
    adserve_parsed_lica_t  *l = &p->u.lica;
    double                  w = get_num(o, "weight", 1);
    int                     oom = 0;

    l->line_item_id = dup_str(sc, o, "line_item_id", &oom);
    l->creative_id = dup_str(sc, o, "creative_id", &oom);
    l->line_item_hash = hash_of(l->line_item_id);
    l->creative_hash = hash_of(l->creative_id);

    lica_weight(l, adserve_vocab_str(adserve_lica_status_names, get_str(o, "status")), w);

    return oom ? -1 : 0;
}


/* An item's part of a recommendation: rendered once, per item. An item
 * id that could not be a catalog item's (the API's rule) never serves. */
static int
parse_item(scratch_t *sc, adserve_parsed_t *p, cJSON *o)
{
    adserve_parsed_item_t  *it = &p->u.item;
    adserve_jsonw_t         w;
    const char             *id = get_str(o, "item_id"), *url = get_str(o, "url");
    int                     oom = 0;

    if (!adserve_item_id_ok(id) || url == NULL) {
        return 0;
    }

    adserve_jsonw_init(&w);
    adserve_jsonw_lit(&w, "{\"id\":");
    adserve_jsonw_str(&w, id);
    adserve_jsonw_lit(&w, ",\"title\":");
    adserve_jsonw_str(&w, get_str(o, "title"));
    adserve_jsonw_lit(&w, ",\"url\":");
    adserve_jsonw_str(&w, url);
    adserve_jsonw_lit(&w, ",\"image\":");
    adserve_jsonw_str(&w, get_str(o, "image"));

    if (w.oom) {
        adserve_jsonw_free(&w);
        return -1;
    }

    it->head = s_dup(sc, w.data, w.len);
    it->head_len = w.len;
    adserve_jsonw_free(&w);
    it->item_id = dup_str(sc, o, "item_id", &oom);
    it->item_hash = hash_of(it->item_id);
    it->url = dup_str(sc, o, "url", &oom);

    if (adserve_attrs_read(cJSON_GetObjectItemCaseSensitive(o, "attributes"), s_alloc_cb, sc,
                           &it->attrs)
        != 0)
    {
        return -1;
    }

    return oom || it->head == NULL ? -1 : 0;
}


/* A ranked list of items by its source: a pool (source_item_id, its items'
 * item_id), a co-view pool (the same shape), a context's popular items
 * (context, items as plain ids). */
static int
parse_ranked(scratch_t *sc, adserve_parsed_t *p, const cJSON *o, const char *source,
    const char *item_member)
{
    adserve_parsed_pool_t  *pl = &p->u.pool;
    const cJSON            *items = cJSON_GetObjectItemCaseSensitive(o, "items");
    int                     oom = 0;

    pl->source = dup_str(sc, o, source, &oom);
    pl->source_hash = hash_of(pl->source);
    pl->items = item_member ? dup_strs_of(sc, items, item_member, &oom) : dup_strs(sc, items, &oom);

    return oom ? -1 : 0;
}


static int
parse_pool(scratch_t *sc, adserve_parsed_t *p, cJSON *o)
{
    return parse_ranked(sc, p, o, "source_item_id", "item_id");
}


static int
parse_popular(scratch_t *sc, adserve_parsed_t *p, cJSON *o)
{
    return parse_ranked(sc, p, o, "context", NULL);
}


/* An experiment: its unit, and its variants if it can split; the
 * variants array stays with the parse (adserve_parse detaches it). */
static int
parse_experiment(scratch_t *sc, adserve_parsed_t *p, cJSON *o)
{
    adserve_parsed_experiment_t  *x = &p->u.experiment;
    const cJSON                  *vs, *v, *w;
    uint32_t                      i, j, weights[ADSERVE_VARIANTS_MAX];
    int                           n, oom = 0, ok;

    x->ad_unit_id = dup_str(sc, o, "ad_unit_id", &oom);
    x->ad_unit_hash = hash_of(x->ad_unit_id);

    vs = cJSON_GetObjectItemCaseSensitive(o, "variants");
    n = cJSON_IsArray(vs) ? cJSON_GetArraySize(vs) : 0;
    ok = n >= ADSERVE_VARIANTS_MIN && n <= ADSERVE_VARIANTS_MAX
         && adserve_vocab_str(adserve_experiment_status_names, get_str(o, "status"))
            == ADSERVE_EXPERIMENT_ACTIVE;
    if (!ok || oom) {
        return oom ? -1 : 0;
    }

    x->variants = s_alloc(sc, n * sizeof(adserve_parsed_variant_t));
    if (x->variants == NULL) {
        return -1;
    }

    cJSON_ArrayForEach(v, vs) {
        adserve_parsed_variant_t  *pv = &x->variants[x->nvariants];

        w = cJSON_GetObjectItemCaseSensitive(v, "weight");
        ok = ok && adserve_variant_id_ok(get_str(v, "id")) && cJSON_IsNumber(w)
             && w->valuedouble >= 1 && w->valuedouble <= ADSERVE_VARIANT_WEIGHT_MAX
             && w->valuedouble == (double) (uint32_t) w->valuedouble;
        if (!ok) {
            break;
        }

        pv->id = dup_str(sc, v, "id", &oom);
        pv->weight = weights[x->nvariants] = (uint32_t) w->valuedouble;
        pv->overrides = v;

        for (j = 0; pv->id != NULL && j < x->nvariants; j++) {
            ok = ok && strcmp(x->variants[j].id, pv->id) != 0;
        }
        x->nvariants++;
    }

    i = x->nvariants;
    x->active = ok && !oom && adserve_experiment_bounds(weights, i, x->upto) == 0;
    x->doc = x->active ? (cJSON *) vs : NULL;

    /* an experiment that cannot split has no variants: their overrides
     * would point into a document that goes with the parse */
    if (!x->active) {
        x->nvariants = 0;
    }

    return oom ? -1 : 0;
}


/* A style that fails the API's check never serves: a record written past
 * the API must not put markup where a value goes. */
static int
parse_style(scratch_t *sc, adserve_parsed_t *p, cJSON *o)
{
    adserve_parsed_style_t  *st = &p->u.style;
    size_t                   at;
    int                      oom = 0;

    if (adserve_native_template_check(get_str(o, "html"), get_str(o, "css"), &at) == NULL) {
        st->html = dup_str(sc, o, "html", &oom);
        st->css = dup_str(sc, o, "css", &oom);
    }

    return oom ? -1 : 0;
}


static int
parse_unit_style(scratch_t *sc, adserve_parsed_t *p, cJSON *o)
{
    adserve_parsed_unit_style_t  *l = &p->u.unit_style;
    int                           oom = 0;

    l->ad_unit_id = dup_str(sc, o, "ad_unit_id", &oom);
    l->native_style_id = dup_str(sc, o, "native_style_id", &oom);
    l->ad_unit_hash = hash_of(l->ad_unit_id);
    l->native_style_hash = hash_of(l->native_style_id);

    return oom ? -1 : 0;
}


/* A public URL that is not one never serves: the API checked it, but a
 * record written past the API must not break every event URL. */
static int
parse_settings(scratch_t *sc, adserve_parsed_t *p, cJSON *o)
{
    const char  *url = get_str(o, "public_url");
    const char  *cur = get_str(o, "currency");
    int          oom = 0;

    if (url != NULL && adserve_public_url_ok(url, strlen(url))) {
        p->u.settings.public_url = dup_str(sc, o, "public_url", &oom);
    }

    p->u.settings.currency = cur != NULL ? adserve_vocab_str(adserve_currency_names, cur) : -1;

    return oom ? -1 : 0;
}


/* ---- external demand --------------------------------------------------- */

/* A source as the API writes it; one written past the API is clamped to
 * the API's bounds, or unusable (no endpoint) when it could send nothing. */
static int
parse_source(scratch_t *sc, adserve_parsed_t *p, cJSON *o)
{
    adserve_parsed_source_t  *src = &p->u.source;
    const cJSON              *f, *formats = cJSON_GetObjectItemCaseSensitive(o, "formats");
    const char               *url = get_str(o, "endpoint_url");
    int                       k, oom = 0;

    cJSON_ArrayForEach(f, formats) {
        k = adserve_vocab_str(adserve_format_names, cJSON_GetStringValue(f));
        if (k >= 0) {
            src->formats |= 1u << k;
        }
    }

    src->tmax_ms = (uint32_t) clamp_int(get_num(o, "tmax_ms", ADSERVE_TMAX_DEFAULT),
                                        ADSERVE_TMAX_MIN, ADSERVE_TMAX_MAX);
    src->qps_limit = (uint32_t) clamp_int(get_num(o, "qps_limit", 0), 0, ADSERVE_QPS_MAX);
    src->floor = get_cost(o, "floor");
    src->adjustment = get_num(o, "bid_adjustment", 1);
    if (!(src->adjustment >= ADSERVE_BID_ADJUSTMENT_MIN
          && src->adjustment <= ADSERVE_BID_ADJUSTMENT_MAX))
    {
        src->adjustment = 1;
    }
    src->seat = dup_str(sc, o, "seat", &oom);

    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "enabled")) && src->formats != 0
        && url != NULL && adserve_endpoint_url_ok(url, strlen(url)))
    {
        src->endpoint = dup_str(sc, o, "endpoint_url", &oom);
    }

    return oom ? -1 : 0;
}


static int
parse_allocation(scratch_t *sc, adserve_parsed_t *p, cJSON *o)
{
    adserve_parsed_allocation_t  *a = &p->u.allocation;
    double                        share = get_num(o, "share", -1);
    int                           oom = 0;

    a->ad_source_id = dup_str(sc, o, "ad_source_id", &oom);
    a->target_id = dup_str(sc, o, "target_id", &oom);
    a->ad_source_hash = hash_of(a->ad_source_id);
    a->target_hash = hash_of(a->target_id);
    a->target = adserve_vocab_str(adserve_alloc_target_names, get_str(o, "target"));
    a->share = share > ADSERVE_SHARE_MAX ? ADSERVE_SHARE_MAX : share;

    if (a->ad_source_id == NULL || a->target_id == NULL || !(share >= 0)) {
        a->target = -1;
    }

    return oom ? -1 : 0;
}


static int
parse_block(scratch_t *sc, adserve_parsed_t *p, cJSON *o)
{
    adserve_parsed_block_t  *bl = &p->u.block;
    int                      oom = 0;

    bl->kind = adserve_vocab_str(adserve_block_kind_names, get_str(o, "kind"));
    bl->value = dup_str(sc, o, "value", &oom);
    bl->ad_unit_id = dup_str(sc, o, "ad_unit_id", &oom);
    bl->ad_source_id = dup_str(sc, o, "ad_source_id", &oom);

    if (bl->value == NULL || bl->value[0] == '\0') {
        bl->kind = -1;
    }

    return oom ? -1 : 0;
}


/* ---- the hot kinds, read without a document (adserve_fields.h) -------- */

/* Member f as a string, decoded into sc's free room: gone with the next
 * allocation. NULL when it is not a string (or sc is full). */
static const char *
fl_tmp(scratch_t *sc, const adserve_fields_t *fl, adserve_fl_e f)
{
    if (fl->v[f].type != ADSERVE_FV_STRING) {
        return NULL;
    }

    if (sc->cap - sc->used < adserve_fields_len(fl, f)) {
        sc->full = 1;
        return NULL;
    }

    return adserve_fields_str(fl, f, sc->base + sc->used);
}


/* Member f as a string, kept, as dup_str keeps it. */
static const char *
fl_dup(scratch_t *sc, const adserve_fields_t *fl, adserve_fl_e f)
{
    const char  *s = fl_tmp(sc, fl, f);

    if (s != NULL) {
        sc->used += strlen(s) + 1;
    }

    return s;
}


static int
fl_vocab(scratch_t *sc, const adserve_fields_t *fl, adserve_fl_e f, const char *const *names)
{
    const char  *s;
    size_t       len;

    /* most are: read where they are */
    s = adserve_fields_plain(fl, f, &len);

    return s != NULL ? adserve_vocab(names, s, len) : adserve_vocab_str(names, fl_tmp(sc, fl, f));
}


/* A string list, its strings already in the sink. */
static adserve_strs_t
fl_strs(scratch_t *sc, const adserve_fields_t *fl, adserve_fl_e f, const char *sink)
{
    const adserve_fl_list_t  *l = adserve_fields_list(fl, f);
    adserve_strs_t            s = { NULL, NULL, 0 };
    const char               *at;

    if (l->n == 0) {
        return s;
    }

    s.v = s_alloc(sc, l->n * sizeof(char *));
    if (s.v == NULL) {
        return s;
    }

    for (at = sink + l->off; s.n < l->n; at += strlen(at) + 1) {
        s.v[s.n++] = at;
    }

    return s;
}


/* The rule of an active line item, as parse_rule has it from the document:
 * targeting with no member but ad_units and placements (which the build
 * resolves) compiles to nothing, and is not parsed; any other is parsed
 * alone, from its own text. 1 when the record is cJSON's to parse. */
static int
fl_rule(adserve_parsed_li_t *li, const adserve_fields_t *fl)
{
    const adserve_fv_t  *v = &fl->v[ADSERVE_FL_TARGETING];
    cJSON               *tg;

    if (v->type == ADSERVE_FV_ABSENT || v->type == ADSERVE_FV_NULL
        || (v->type == ADSERVE_FV_OBJECT && !fl->tg_other))
    {
        li->rule = ADSERVE_RULE_NONE;
        return 0;
    }

    /* not an object: malformed, but the compiler says so */
    if (v->type != ADSERVE_FV_OBJECT) {
        return 1;
    }

    tg = cJSON_ParseWithLength(fl->text + v->start, v->end - v->start);
    if (tg == NULL) {
        return -1;                   /* it scanned: only memory can fail */
    }

    if (parse_rule(li, tg) != 0) {
        cJSON_Delete(tg);
        return -1;
    }

    /* what parse_doc does with the document's: the rule outlives it, and
     * the build resolves ad_units and placements itself */
    if (li->targeting != NULL) {
        cJSON_DeleteItemFromObjectCaseSensitive(tg, "ad_units");
        cJSON_DeleteItemFromObjectCaseSensitive(tg, "placements");

    } else {
        cJSON_Delete(tg);
    }

    return 0;
}


static int
fl_li(scratch_t *sc, adserve_parsed_t *p, const adserve_fields_t *fl, const char *sink)
{
    adserve_parsed_li_t  *li = &p->u.li;
    const char           *t;
    uint32_t              i;
    int                   bad_flight, approval, n;

    li->tier = fl_vocab(sc, fl, ADSERVE_FL_TYPE, adserve_tier_names);
    li->priority = clamp_int(adserve_fields_num(fl, ADSERVE_FL_PRIORITY, 8), 1, 16);
    li->cost_type = fl_vocab(sc, fl, ADSERVE_FL_COST_TYPE, adserve_cost_names);
    li->rate = adserve_fields_num(fl, ADSERVE_FL_RATE, 0);

    li->goal_type = ADSERVE_GOAL_NONE;
    if (li_goal(li, adserve_fields_num(fl, ADSERVE_FL_GOAL_UNITS, 0))) {
        n = fl_vocab(sc, fl, ADSERVE_FL_GOAL_TYPE, adserve_goal_names);
        li->goal_type = n < 0 ? ADSERVE_GOAL_NONE : n;
    }
    li->delivery = li_delivery(fl_vocab(sc, fl, ADSERVE_FL_DELIVERY, adserve_delivery_names));

    for (i = 0; i < fl->ncaps; i++) {
        li_cap(li, fl->caps[i][0], fl->caps[i][1]);
    }

    li->start = INT64_MIN;
    li->end = INT64_MAX;
    t = fl_tmp(sc, fl, ADSERVE_FL_START_AT);
    bad_flight = t != NULL && adserve_parse_time(t, &li->start) != 0;
    t = fl_tmp(sc, fl, ADSERVE_FL_END_AT);
    bad_flight |= t != NULL && adserve_parse_time(t, &li->end) != 0;

    approval = fl->v[ADSERVE_FL_APPROVAL].type == ADSERVE_FV_STRING
               ? fl_vocab(sc, fl, ADSERVE_FL_APPROVAL, adserve_approval_names)
               : APPROVAL_NONE;
    li->active = li_active(li, fl_vocab(sc, fl, ADSERVE_FL_STATUS, adserve_li_status_names),
                           approval, bad_flight);

    li->order_id = fl_dup(sc, fl, ADSERVE_FL_ORDER_ID);
    li->order_hash = hash_of(li->order_id);

    li->include = fl_strs(sc, fl, ADSERVE_FL_INCLUDE, sink);
    li->exclude = fl_strs(sc, fl, ADSERVE_FL_EXCLUDE, sink);
    li->placements = fl_strs(sc, fl, ADSERVE_FL_PLACEMENTS, sink);
    /* a block too small says so in sc->full, and the parse is made again */
    (void) li_ids_hashed(sc, li);

    /* only a line item that could serve needs its rule; a scratch block
     * too small is tried again, the rule with it */
    return sc->full || !li->active ? 0 : fl_rule(li, fl);
}


static int
fl_creative(scratch_t *sc, adserve_parsed_t *p, const adserve_fields_t *fl, const char *sink)
{
    adserve_parsed_creative_t  *c = &p->u.creative;
    const char                 *img, *html;
    char                       *ad;
    int                         ctype;

    c->size.w = adserve_fields_num(fl, ADSERVE_FL_W, -1);
    c->size.h = adserve_fields_num(fl, ADSERVE_FL_H, -1);
    c->categories = fl_strs(sc, fl, ADSERVE_FL_CATEGORIES, sink);
    c->landing_url = fl_dup(sc, fl, ADSERVE_FL_LANDING_URL);

    ctype = fl_vocab(sc, fl, ADSERVE_FL_TYPE, adserve_creative_type_names);
    c->interstitial = fl->v[ADSERVE_FL_INTERSTITIAL].type == ADSERVE_FV_TRUE;
    c->format = creative_format(ctype);

    if (fl_vocab(sc, fl, ADSERVE_FL_APPROVAL, adserve_approval_names)
        != ADSERVE_APPROVAL_APPROVED)
    {
        return 0;
    }

    /* a video's VAST and a native's assets read the document: rare */
    if (c->format != ADSERVE_FORMAT_DISPLAY) {
        return 1;
    }

    /* one of them at most, each in sc's free room */
    img = ctype == ADSERVE_CREATIVE_IMAGE ? fl_tmp(sc, fl, ADSERVE_FL_IMAGE_URL) : NULL;
    html = ctype == ADSERVE_CREATIVE_HTML ? fl_tmp(sc, fl, ADSERVE_FL_HTML) : NULL;

    ad = render_display(ctype, img, html, p->id, c->size);
    if (ad == NULL) {
        return 0;
    }

    c->ad_json_len = strlen(ad);
    c->ad_json = s_dup(sc, ad, c->ad_json_len);
    free(ad);
    c->approved = c->ad_json != NULL;

    return 0;
}


static int
fl_lica(scratch_t *sc, adserve_parsed_t *p, const adserve_fields_t *fl, const char *sink)
{
    adserve_parsed_lica_t  *l = &p->u.lica;

    (void) sink;

    l->line_item_id = fl_dup(sc, fl, ADSERVE_FL_LINE_ITEM_ID);
    l->creative_id = fl_dup(sc, fl, ADSERVE_FL_CREATIVE_ID);
    l->line_item_hash = hash_of(l->line_item_id);
    l->creative_hash = hash_of(l->creative_id);
    lica_weight(l, fl_vocab(sc, fl, ADSERVE_FL_STATUS, adserve_lica_status_names),
                adserve_fields_num(fl, ADSERVE_FL_WEIGHT, 1));

    return 0;
}


/* ---- one record -------------------------------------------------------- */

/* One record: a JSON value and nothing after it but white space. */
static cJSON *
parse_json(const char *text, size_t len)
{
    const char  *end, *last = text + len;
    cJSON       *o;

    o = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (o == NULL) {
        return NULL;
    }

    while (end < last && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) {
        end++;
    }

    if (end != last) {
        cJSON_Delete(o);
        return NULL;
    }

    return o;
}


/* A parse is as long as its own kind's member of the union: a LICA's is a
 * fifth of a line item's. */
static size_t
parse_size(adserve_kind_e kind)
{
    static const size_t  sizes[ADSERVE_KIND_COUNT] = {
        sizeof(adserve_parsed_unit_t), sizeof(adserve_parsed_placement_t),
        sizeof(adserve_parsed_order_t), sizeof(adserve_parsed_li_t),
        sizeof(adserve_parsed_creative_t), sizeof(adserve_parsed_lica_t),
        sizeof(adserve_parsed_style_t), sizeof(adserve_parsed_unit_style_t),
        sizeof(adserve_parsed_item_t), sizeof(adserve_parsed_pool_t),
        sizeof(adserve_parsed_pool_t), sizeof(adserve_parsed_pool_t),
        sizeof(adserve_parsed_experiment_t), sizeof(adserve_parsed_settings_t),
        sizeof(adserve_parsed_source_t), sizeof(adserve_parsed_allocation_t),
        sizeof(adserve_parsed_block_t)
    };

    return offsetof(adserve_parsed_t, u) + sizes[kind];
}


typedef int (*parse_kind_pt)(scratch_t *sc, adserve_parsed_t *p, cJSON *o);

/* Parses o into sc: 0, 1 when sc was too small, -1 out of memory. */
static int
parse_into(scratch_t *sc, adserve_kind_e kind, cJSON *o, adserve_parsed_t **out)
{
    static const parse_kind_pt  parsers[ADSERVE_KIND_COUNT] = {
        parse_unit, parse_placement, parse_order,
        parse_li, parse_creative, parse_lica, parse_style, parse_unit_style,
        parse_item, parse_pool, parse_popular, parse_pool, parse_experiment,
        parse_settings, parse_source, parse_allocation, parse_block
    };
    adserve_parsed_t  *p;
    const char        *id;
    size_t             size = parse_size(kind);
    int                oom = 0, rc;

    p = s_alloc(sc, size);
    if (p == NULL) {
        return 1;
    }
    memset(p, 0, size);
    p->kind = kind;
    *out = p;

    id = cJSON_IsObject(o) ? get_str(o, "id") : NULL;

    /* ids go into every ad_log token: one too long could never serve */
    if (id == NULL || strlen(id) > ADSERVE_TOKEN_ID_MAX) {
        return 0;
    }

    p->id = dup_str(sc, o, "id", &oom);
    p->id_len = p->id ? strlen(p->id) : 0;
    p->id_hash = adserve_hash(p->id, p->id_len);

    rc = oom ? 0 : parsers[kind](sc, p, o);

    return sc->full ? 1 : (oom || rc != 0) ? -1 : 0;
}


typedef int (*fl_kind_pt)(scratch_t *sc, adserve_parsed_t *p, const adserve_fields_t *fl,
    const char *sink);

/* Reads a record of a hot kind into sc: 0, 1 when sc was too small, -1 out
 * of memory, 2 when the record is cJSON's to parse. */
static int
fl_into(scratch_t *sc, adserve_kind_e kind, const char *text, size_t len,
    adserve_parsed_t **out)
{
    adserve_fields_t   fl;
    adserve_parsed_t  *p;
    const char        *id, *sink;
    size_t             size = parse_size(kind);
    int                rc;

    p = s_alloc(sc, size);
    if (p == NULL) {
        return 1;
    }
    memset(p, 0, size);
    p->kind = kind;
    *out = p;

    /* the lists' strings go to sc's free room, and stay */
    rc = adserve_fields_scan(&fl, kind, text, len, sc->base + sc->used, sc->cap - sc->used);
    if (rc != 0) {
        return rc < 0 ? 2 : 1;
    }
    sink = sc->base + sc->used;
    sc->used += fl.sink_used;

    /* as parse_into: a record without a usable id is its kind alone */
    id = fl_dup(sc, &fl, ADSERVE_FL_ID);
    if (id == NULL || strlen(id) > ADSERVE_TOKEN_ID_MAX) {
        sc->used = (size_t) ((char *) p - sc->base) + size;
        return sc->full ? 1 : 0;
    }

    p->id = id;
    p->id_len = strlen(id);
    p->id_hash = adserve_hash(id, p->id_len);

    rc = kind == ADSERVE_KIND_LINE_ITEMS ? fl_li(sc, p, &fl, sink)
         : kind == ADSERVE_KIND_CREATIVES ? fl_creative(sc, p, &fl, sink)
         : fl_lica(sc, p, &fl, sink);

    if (rc == 0 && sc->full) {
        rc = 1;

    } else if (rc == 1) {
        rc = 2;
    }

    /* a rule parsed in a block that is not the parse's goes with it */
    if (rc != 0 && kind == ADSERVE_KIND_LINE_ITEMS) {
        cJSON_Delete(p->u.li.targeting);
        p->u.li.targeting = NULL;
    }

    return rc;
}


/* Moves what points into the scratch block by delta: the parse's new
 * home is delta bytes away. */
#define MOVE(ptr)                                                            \
    if ((ptr) != NULL) {                                                     \
        (ptr) = (void *) ((uintptr_t) (ptr) + delta);                        \
    }

static void
move_strs(adserve_strs_t *s, uintptr_t delta)
{
    uint32_t  i;

    MOVE(s->v);
    MOVE(s->h);
    for (i = 0; i < s->n; i++) {
        MOVE(s->v[i]);
    }
}


static void
move_nstrs(adserve_native_strs_t *s, uintptr_t delta)
{
    uint32_t  i;

    MOVE(s->v);
    for (i = 0; i < s->n; i++) {
        MOVE(s->v[i]);
    }
}


static void
move_native(adserve_parsed_t *p, uintptr_t delta)
{
    adserve_parsed_creative_t  *c = &p->u.creative;
    adserve_parsed_unit_t      *u = &p->u.unit;
    uint32_t                    i;

    if (p->kind == ADSERVE_KIND_AD_UNITS) {
        MOVE(u->native_reqs);
        for (i = 0; i < u->nnative_reqs; i++) {
            move_nstrs(&u->native_reqs[i].mimes, delta);
        }
        MOVE(u->fallbacks);
        for (i = 0; i < u->nfallbacks; i++) {
            move_strs(&u->fallbacks[i].items, delta);
            MOVE(u->fallbacks[i].expire);
            MOVE(u->fallbacks[i].context);
            MOVE(u->fallbacks[i].path);
        }
        return;
    }

    MOVE(c->assets);
    for (i = 0; i < c->nassets; i++) {
        MOVE(c->assets[i].value);
        MOVE(c->assets[i].mime);
        move_nstrs(&c->assets[i].mimes, delta);
    }
}


static void
move_parse(adserve_parsed_t *p, uintptr_t delta)
{
    MOVE(p->id);

    switch (p->kind) {
    case ADSERVE_KIND_AD_UNITS:
        MOVE(p->u.unit.parent_id);
        MOVE(p->u.unit.sizes);
        MOVE(p->u.unit.public_url);
        MOVE(p->u.unit.passback);
        MOVE(p->u.unit.rtb_imp);
        MOVE(p->u.unit.rtb_site);
        MOVE(p->u.unit.rtb_app[0]);
        MOVE(p->u.unit.rtb_app[1]);
        move_strs(&p->u.unit.app_keywords, delta);
        MOVE(p->u.unit.target_service);
        MOVE(p->u.unit.rqddurs);
        move_strs(&p->u.unit.bcat, delta);
        move_strs(&p->u.unit.video_mimes, delta);
        move_native(p, delta);
        break;
    case ADSERVE_KIND_PLACEMENTS:
        move_strs(&p->u.placement.ad_unit_ids, delta);
        break;
    case ADSERVE_KIND_LINE_ITEMS:
        MOVE(p->u.li.order_id);
        move_strs(&p->u.li.include, delta);
        move_strs(&p->u.li.exclude, delta);
        move_strs(&p->u.li.placements, delta);
        break;
    case ADSERVE_KIND_CREATIVES:
        MOVE(p->u.creative.landing_url);
        MOVE(p->u.creative.ad_json);
        MOVE(p->u.creative.vast);
        move_strs(&p->u.creative.categories, delta);
        move_strs(&p->u.creative.mimes, delta);
        move_native(p, delta);
        break;
    case ADSERVE_KIND_LICAS:
        MOVE(p->u.lica.line_item_id);
        MOVE(p->u.lica.creative_id);
        break;
    case ADSERVE_KIND_NATIVE_STYLES:
        MOVE(p->u.style.html);
        MOVE(p->u.style.css);
        break;
    case ADSERVE_KIND_AD_UNIT_NATIVE_STYLES:
        MOVE(p->u.unit_style.ad_unit_id);
        MOVE(p->u.unit_style.native_style_id);
        break;
    case ADSERVE_KIND_CATALOG_ITEMS:
        MOVE(p->u.item.item_id);
        MOVE(p->u.item.head);
        MOVE(p->u.item.url);
        MOVE(p->u.item.attrs.base);
        MOVE(p->u.item.attrs.keys);
        MOVE(p->u.item.attrs.values);
        break;
    case ADSERVE_KIND_ITEM_POOLS:
    case ADSERVE_KIND_POPULAR_ITEMS:
    case ADSERVE_KIND_COVIEW_POOLS:
        MOVE(p->u.pool.source);
        move_strs(&p->u.pool.items, delta);
        break;
    case ADSERVE_KIND_EXPERIMENTS:
        MOVE(p->u.experiment.ad_unit_id);
        MOVE(p->u.experiment.variants);
        for (uint32_t i = 0; i < p->u.experiment.nvariants; i++) {
            MOVE(p->u.experiment.variants[i].id);
        }
        break;
    case ADSERVE_KIND_SETTINGS:
        MOVE(p->u.settings.public_url);
        break;
    case ADSERVE_KIND_AD_SOURCES:
        MOVE(p->u.source.endpoint);
        MOVE(p->u.source.seat);
        break;
    case ADSERVE_KIND_ALLOCATIONS:
        MOVE(p->u.allocation.ad_source_id);
        MOVE(p->u.allocation.target_id);
        break;
    case ADSERVE_KIND_BLOCKED_CREATIVES:
        MOVE(p->u.block.value);
        MOVE(p->u.block.ad_unit_id);
        MOVE(p->u.block.ad_source_id);
        break;
    default:
        break;
    }
}

#undef MOVE


/* The parse of document o (freed here), whose text was len bytes. */
static adserve_parsed_t *
parse_doc(adserve_kind_e kind, cJSON *o, size_t len)
{
    scratch_t          sc;
    adserve_parsed_t  *p = NULL, *out = NULL;
    int                rc;

    /* a parse is rarely larger than its text: copies of some of its
     * strings, a few arrays; a larger one is tried again */
    sc.cap = sizeof(adserve_parsed_t) + 2 * len + 256;

    for ( ;; ) {
        sc.base = malloc(sc.cap);
        sc.used = 0;
        sc.full = 0;
        if (sc.base == NULL) {
            break;
        }

        rc = parse_into(&sc, kind, o, &p);

        if (rc == 1 && sc.cap < SIZE_MAX / 4) {
            free(sc.base);
            sc.cap *= 4;
            continue;
        }

        if (rc == 0 && (out = malloc(sc.used)) != NULL) {
            memcpy(out, sc.base, sc.used);
            move_parse(out, (uintptr_t) out - (uintptr_t) sc.base);
        }

        free(sc.base);
        break;
    }

    /* the rule outlives the document */
    if (out != NULL && kind == ADSERVE_KIND_LINE_ITEMS
        && out->u.li.targeting != NULL)
    {
        cJSON_DetachItemViaPointer(o, out->u.li.targeting);
        cJSON_DeleteItemFromObjectCaseSensitive(out->u.li.targeting, "ad_units");
        cJSON_DeleteItemFromObjectCaseSensitive(out->u.li.targeting, "placements");
    }

    if (out != NULL && kind == ADSERVE_KIND_AD_UNITS && out->u.unit.filter != NULL) {
        cJSON_DetachItemViaPointer(cJSON_GetObjectItemCaseSensitive(o, "recommendation"),
                                   out->u.unit.filter);
    }

    if (out != NULL && kind == ADSERVE_KIND_EXPERIMENTS && out->u.experiment.doc != NULL) {
        cJSON_DetachItemViaPointer(o, out->u.experiment.doc);
    }

    cJSON_Delete(o);

    return out;
}


/* The parse of a record of a hot kind read without a document; *dom when
 * it is cJSON's to parse. */
static adserve_parsed_t *
parse_fields(adserve_kind_e kind, const char *text, size_t len, int *dom)
{
    /* most records' scratch: on the stack, one allocation fewer a record */
    _Alignas(16) char  stack[4096];
    scratch_t          sc;
    adserve_parsed_t  *p = NULL, *out = NULL;
    int                rc;

    sc.cap = sizeof(adserve_parsed_t) + 2 * len + 256;

    for ( ;; ) {
        sc.base = sc.cap <= sizeof(stack) ? stack : malloc(sc.cap);
        sc.used = 0;
        sc.full = 0;
        if (sc.base == NULL) {
            break;
        }

        rc = fl_into(&sc, kind, text, len, &p);

        if (rc == 1 && sc.cap < SIZE_MAX / 4) {
            if (sc.base != stack) {
                free(sc.base);
            }
            sc.cap *= 4;
            continue;
        }

        *dom = rc == 2;

        if (rc == 0 && (out = malloc(sc.used)) != NULL) {
            memcpy(out, sc.base, sc.used);
            move_parse(out, (uintptr_t) out - (uintptr_t) sc.base);

        } else if (rc == 0 && kind == ADSERVE_KIND_LINE_ITEMS) {
            cJSON_Delete(p->u.li.targeting);
        }

        if (sc.base != stack) {
            free(sc.base);
        }
        break;
    }

    return out;
}


adserve_parsed_t *
adserve_parse(adserve_kind_e kind, const char *text, size_t len)
{
    adserve_parsed_t  *p;
    int                dom = 0;

    if (adserve_fields_kind(kind)) {
        p = parse_fields(kind, text, len, &dom);
        if (!dom) {
            return p;
        }
    }

    return parse_doc(kind, parse_json(text, len), len);
}


adserve_parsed_t *
adserve_parse_dom(adserve_kind_e kind, const char *text, size_t len)
{
    return parse_doc(kind, parse_json(text, len), len);
}


adserve_parsed_t *
adserve_parse_variant(const char *text, size_t len, const cJSON *variant)
{
    cJSON  *o = parse_json(text, len);

    /* a unit that is not an object parses as one without an id: unusable,
     * as the unit itself is */
    if (o != NULL && adserve_variant_apply(o, variant) != 0 && cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return NULL;
    }

    return parse_doc(ADSERVE_KIND_AD_UNITS, o, len);
}


void
adserve_parsed_free(adserve_parsed_t *p)
{
    if (p == NULL) {
        return;
    }

    if (p->kind == ADSERVE_KIND_LINE_ITEMS) {
        cJSON_Delete(p->u.li.targeting);
    }

    if (p->kind == ADSERVE_KIND_AD_UNITS) {
        cJSON_Delete(p->u.unit.filter);
    }

    if (p->kind == ADSERVE_KIND_EXPERIMENTS) {
        cJSON_Delete(p->u.experiment.doc);
    }

    free(p);
}
