/*
 * Snapshot build: parse the records, join them, rank and render.
 *
 * Everything that does not depend on the request or the clock is decided
 * here, once per revision, so that serving does as little as possible.
 */

#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdarg.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "adserve_snapshot.h"
#include "adserve_pacing.h"




#define NONE  UINT32_MAX

typedef struct {
    const char  **v;
    uint32_t      n;
} strs_t;

typedef struct {
    uint32_t     *v;
    uint32_t      n;
} idxs_t;

typedef struct {
    double        w, h;
} size2_t;

struct li_rec_s;
struct creative_rec_s;

/* a candidate while building: what it joins, before it is ranked */
typedef struct {
    struct li_rec_s              *li;
    struct creative_rec_s        *cr;
    uint32_t                      weight;
} bcand_t;

typedef struct {
    const char   *id;
    const char   *parent_id;
    uint32_t      parent;
    uint32_t      first_child;
    uint32_t      next_sibling;
    int           active;
    size2_t       display;
    size2_t      *sizes;
    uint32_t      nsizes;
    strs_t        bcat;
    double        default_cpc, default_cpa, target_ecpm;
    const char   *public_url;         /* ext.public_url, or NULL */
    int           on_response;        /* recommendation, on_ad_response */
    bcand_t      *cands;              /* grows during the build */
    uint32_t      ncands, cap;
    bcand_t      *excl;               /* targeted, but size or bcat says no; */
    uint32_t      nexcl, xcap;        /* the weight holds the reason */
} unit_rec_t;

typedef struct {
    const char   *id;
    idxs_t        units;
} placement_rec_t;

typedef struct {
    const char   *id;
    int           approved;
} order_rec_t;

typedef struct li_rec_s {
    const char   *id;
    int           eligible;           /* ACTIVE and its order APPROVED */
    int           tier;
    int           priority;
    int           cost_type;          /* adserve_cost_e, -1 unknown */
    double        rate;
    int64_t       start, end;
    int           goal_type;          /* adserve_goal_e */
    uint64_t      goal;
    int           delivery;           /* adserve_delivery_e */
    adserve_cap_t caps[ADSERVE_CAPS_MAX];
    uint32_t      ncaps, max_cap;
    uint32_t      snap_li;            /* index in the snapshot's lis, or NONE */
    idxs_t        include, exclude, placements;
    const adserve_target_t *target;   /* decided per request; NULL: nothing */
    uint32_t      first_lica;
    adserve_str_t snap_id;            /* the id, copied into the snapshot once */
} li_rec_t;

typedef struct creative_rec_s {
    const char   *id;
    int           approved;
    size2_t       size;
    strs_t        categories;
    const char   *landing_url;
    char         *ad_json;            /* the rendered "ad" object, cJSON-owned */
    const char   *head;               /* the response head, in the snapshot, */
    size_t        head_len;           /* rendered once, on first use */
    adserve_str_t snap_id;
} creative_rec_t;

typedef struct {
    uint32_t      li, cr, weight;
    uint32_t      next;               /* next LICA of the same line item */
} lica_rec_t;


/* id -> index, open addressing; only used while building */
typedef struct {
    const char  **keys;
    uint32_t     *vals;
    uint32_t      mask;
} idmap_t;

typedef struct {
    adserve_snapshot_t *snap;
    adserve_arena_t     tmp;          /* parsed records, freed after the build */
    cJSON              *docs;         /* every parsed document, freed after */
    unit_rec_t         *units;
    placement_rec_t    *placements;
    order_rec_t        *orders;
    li_rec_t           *lis;
    creative_rec_t     *crs;
    lica_rec_t         *licas;
    uint32_t            n[ADSERVE_KIND_COUNT];
    idmap_t             map[ADSERVE_KIND_COUNT];
    uint32_t           *stamp;        /* per unit: last line item that included it */
    uint32_t           *xstamp;       /* per unit: last line item that excluded it */
    adserve_target_builder_t  tb;     /* compiles targeting into the snapshot */
    const char         *public_url;
    char               *err;
    size_t              errlen;
} build_t;


/* ---- small helpers ----------------------------------------------------- */

static uint32_t
table_size(size_t n)
{
    uint32_t  size = 16;

    while (size < n * 2) {
        size <<= 1;
    }

    return size;
}


static int
idmap_init(build_t *b, idmap_t *m, size_t n)
{
    uint32_t  size = table_size(n);

    m->keys = adserve_arena_calloc(&b->tmp, size * sizeof(char *));
    m->vals = adserve_arena_alloc(&b->tmp, size * sizeof(uint32_t));
    m->mask = size - 1;

    return (m->keys && m->vals) ? 0 : -1;
}


/* Returns 0, or -1 when the id is already there (a duplicate record). */
static int
idmap_put(idmap_t *m, const char *key, uint32_t val)
{
    uint32_t  i = (uint32_t) adserve_hash(key, strlen(key)) & m->mask;

    while (m->keys[i]) {
        if (strcmp(m->keys[i], key) == 0) {
            return -1;
        }
        i = (i + 1) & m->mask;
    }

    m->keys[i] = key;
    m->vals[i] = val;

    return 0;
}


static uint32_t
idmap_get(const idmap_t *m, const char *key)
{
    uint32_t  i;

    if (key == NULL) {
        return NONE;
    }

    i = (uint32_t) adserve_hash(key, strlen(key)) & m->mask;

    while (m->keys[i]) {
        if (strcmp(m->keys[i], key) == 0) {
            return m->vals[i];
        }
        i = (i + 1) & m->mask;
    }

    return NONE;
}


static void
build_error(build_t *b, const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(b->err, b->errlen, fmt, ap);
    va_end(ap);
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


static strs_t
get_strs(build_t *b, const cJSON *arr)
{
    strs_t        s = { NULL, 0 };
    const cJSON  *it;
    int           n = cJSON_GetArraySize(arr);

    if (!cJSON_IsArray(arr) || n == 0) {
        return s;
    }

    s.v = adserve_arena_alloc(&b->tmp, n * sizeof(char *));
    if (s.v == NULL) {
        return s;
    }

    cJSON_ArrayForEach(it, arr) {
        if (cJSON_IsString(it)) {
            s.v[s.n++] = it->valuestring;
        }
    }

    return s;
}


/* Resolves an array of ids of one kind to indexes; unknown ids are dropped,
 * since a dangling reference must not stop anything else from serving. */
static idxs_t
get_idxs(build_t *b, const cJSON *arr, adserve_kind_e kind)
{
    idxs_t        x = { NULL, 0 };
    strs_t        s = get_strs(b, arr);
    uint32_t      i, idx;

    if (s.n == 0) {
        return x;
    }

    x.v = adserve_arena_alloc(&b->tmp, s.n * sizeof(uint32_t));
    if (x.v == NULL) {
        return x;
    }

    for (i = 0; i < s.n; i++) {
        idx = idmap_get(&b->map[kind], s.v[i]);
        if (idx != NONE) {
            x.v[x.n++] = idx;
        }
    }

    return x;
}


/* ---- parsing records --------------------------------------------------- */

/* One record: a JSON value and nothing after it but white space. */
static cJSON *
parse_record(const adserve_str_t *rec)
{
    const char  *end, *last = rec->data + rec->len;
    cJSON       *o;

    o = cJSON_ParseWithLengthOpts(rec->data, rec->len, &end, 0);
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


/* Parses every record of a kind; keeps the valid objects with a string id
 * and a unique one, in input order (the first of duplicates wins). */
static cJSON **
parse_kind(build_t *b, const adserve_input_t *in, adserve_kind_e kind)
{
    cJSON       **objs, *o;
    const char   *id;
    size_t        i;
    uint32_t      n = 0;

    objs = adserve_arena_alloc(&b->tmp, (in->nrecords[kind] + 1) * sizeof(cJSON *));
    if (objs == NULL || idmap_init(b, &b->map[kind], in->nrecords[kind]) != 0) {
        return NULL;
    }

    for (i = 0; i < in->nrecords[kind]; i++) {
        o = parse_record(&in->records[kind][i]);
        id = cJSON_IsObject(o) ? get_str(o, "id") : NULL;

        /* ids go into every ad_log token: one too long could never serve */
        if (id == NULL || strlen(id) > ADSERVE_TOKEN_ID_MAX
            || idmap_put(&b->map[kind], id, n) != 0)
        {
            cJSON_Delete(o);
            b->snap->stats.skipped++;
            continue;
        }

        /* chain the documents so they are freed together at the end */
        o->next = b->docs;
        b->docs = o;
        objs[n++] = o;
    }

    b->n[kind] = n;
    b->snap->stats.records[kind] = n;

    return objs;
}


static void
read_size(const cJSON *o, size2_t *sz, double dw, double dh)
{
    sz->w = get_num(o, "w", dw);
    sz->h = get_num(o, "h", dh);
}


/* a cost field of ext: a finite, non-negative number (the API checks it) */
static double
get_cost(const cJSON *o, const char *name)
{
    double  v = get_num(o, name, 0);

    return v >= 0 && v < 1e9 ? v : 0;
}


static void
parse_unit_ext(build_t *b, unit_rec_t *u, const cJSON *o)
{
    const cJSON  *ext, *rec, *v;
    const char   *url;

    ext = cJSON_GetObjectItemCaseSensitive(o, "ext");
    u->bcat = get_strs(b, cJSON_GetObjectItemCaseSensitive(ext, "bcat"));
    u->default_cpc = get_cost(ext, "default_cpc");
    u->default_cpa = get_cost(ext, "default_cpa");
    u->target_ecpm = get_cost(ext, "target_ecpm");

    url = get_str(ext, "public_url");
    u->public_url = (url != NULL && url[0] != '\0') ? url : NULL;

    /* a recommendation placement (ext.recommendation.enabled) records its
     * impression with the response when its ad_log_tracking_mode says so;
     * missing or null means on_event_tracker (spec) */
    v = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(ext, "recommendation"), "enabled");
    rec = cJSON_GetObjectItemCaseSensitive(o, "recommendation");
    u->on_response = ((cJSON_IsNumber(v) && v->valuedouble != 0) || cJSON_IsTrue(v))
                     && adserve_vocab_str(adserve_tracking_names, get_str(rec, "ad_log_tracking_mode"))
                        == ADSERVE_TRACKING_ON_AD_RESPONSE;
}


static int
parse_units(build_t *b, cJSON **objs)
{
    uint32_t      i, j, steps, n = b->n[ADSERVE_KIND_AD_UNITS];
    unit_rec_t   *u;
    const cJSON  *sizes, *it;

    b->units = adserve_arena_calloc(&b->tmp, (n + 1) * sizeof(unit_rec_t));
    if (b->units == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        u = &b->units[i];
        u->id = get_str(objs[i], "id");
        u->parent_id = get_str(objs[i], "parent_id");
        u->active = adserve_vocab_str(adserve_unit_status_names,
                                      get_str(objs[i], "status"))
                    == ADSERVE_UNIT_ACTIVE;
        u->first_child = NONE;
        u->next_sibling = NONE;

        /* the spec's DisplayPlacement defaults: 300 x 250 */
        read_size(cJSON_GetObjectItemCaseSensitive(objs[i], "display"),
                  &u->display, 300, 250);

        sizes = cJSON_GetObjectItemCaseSensitive(objs[i], "ad_unit_sizes");
        u->nsizes = 0;
        if (cJSON_IsArray(sizes) && cJSON_GetArraySize(sizes) > 0) {
            u->sizes = adserve_arena_alloc(&b->tmp,
                           cJSON_GetArraySize(sizes) * sizeof(size2_t));
            if (u->sizes == NULL) {
                return -1;
            }
            cJSON_ArrayForEach(it, sizes) {
                if (cJSON_IsObject(it)) {
                    read_size(it, &u->sizes[u->nsizes++], -1, -1);
                }
            }
        }

        parse_unit_ext(b, u, objs[i]);
    }

    /* link the hierarchy: resolve every parent first, then cut cycles */
    for (i = 0; i < n; i++) {
        b->units[i].parent = idmap_get(&b->map[ADSERVE_KIND_AD_UNITS],
                                       b->units[i].parent_id);
    }

    for (i = 0; i < n; i++) {
        u = &b->units[i];

        /* bounded: a cycle above this unit (not through it) is cut when
         * one of its own members comes up */
        for (j = u->parent, steps = 0; j != NONE && steps < n;
             j = b->units[j].parent, steps++)
        {
            if (j == i) {
                u->parent = NONE;
                break;
            }
        }
    }

    for (i = 0; i < n; i++) {
        u = &b->units[i];
        if (u->parent != NONE) {
            u->next_sibling = b->units[u->parent].first_child;
            b->units[u->parent].first_child = i;
        }
    }

    return 0;
}


static int
parse_placements(build_t *b, cJSON **objs)
{
    uint32_t  i, n = b->n[ADSERVE_KIND_PLACEMENTS];

    b->placements = adserve_arena_calloc(&b->tmp, (n + 1) * sizeof(placement_rec_t));
    if (b->placements == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        b->placements[i].id = get_str(objs[i], "id");
        b->placements[i].units = get_idxs(b,
            cJSON_GetObjectItemCaseSensitive(objs[i], "ad_unit_ids"),
            ADSERVE_KIND_AD_UNITS);
    }

    return 0;
}


static int
parse_orders(build_t *b, cJSON **objs)
{
    uint32_t  i, n = b->n[ADSERVE_KIND_ORDERS];

    b->orders = adserve_arena_calloc(&b->tmp, (n + 1) * sizeof(order_rec_t));
    if (b->orders == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        b->orders[i].id = get_str(objs[i], "id");
        b->orders[i].approved = adserve_vocab_str(adserve_order_status_names,
                                                  get_str(objs[i], "status"))
                                == ADSERVE_ORDER_APPROVED;
    }

    return 0;
}


/* goal, delivery and frequency caps; what the API refuses is ignored */
static void
parse_delivery(li_rec_t *li, const cJSON *o)
{
    const cJSON  *goal, *caps, *it;
    const char   *t;
    double        units, max, sec;
    int           n;

    goal = cJSON_GetObjectItemCaseSensitive(o, "goal");
    t = get_str(goal, "type");
    units = get_num(goal, "units", 0);

    li->goal_type = ADSERVE_GOAL_NONE;
    if (units >= 1 && units <= 1e15) {
        li->goal = (uint64_t) units;
        n = adserve_vocab_str(adserve_goal_names, t);
        li->goal_type = n < 0 ? ADSERVE_GOAL_NONE : n;
    }

    li->delivery = adserve_vocab_str(adserve_delivery_names, get_str(o, "delivery"))
                   == ADSERVE_DELIVERY_ASAP ? ADSERVE_DELIVERY_ASAP
                                            : ADSERVE_DELIVERY_EVEN;

    caps = cJSON_GetObjectItemCaseSensitive(o, "frequency_caps");
    if (!cJSON_IsArray(caps)) {
        return;
    }

    cJSON_ArrayForEach(it, caps) {
        max = get_num(it, "max", 0);
        sec = get_num(it, "seconds", 0);

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
}


static int
parse_line_items(build_t *b, cJSON **objs)
{
    uint32_t      i, order, n = b->n[ADSERVE_KIND_LINE_ITEMS];
    li_rec_t     *li;
    const cJSON  *o, *tg, *units;
    const char   *t;
    int           bad_flight;

    b->lis = adserve_arena_calloc(&b->tmp, (n + 1) * sizeof(li_rec_t));
    if (b->lis == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        o = objs[i];
        li = &b->lis[i];
        li->id = get_str(o, "id");
        li->first_lica = NONE;
        li->tier = adserve_vocab_str(adserve_tier_names, get_str(o, "type"));
        li->priority = clamp_int(get_num(o, "priority", 8), 1, 16);

        li->cost_type = adserve_vocab_str(adserve_cost_names, get_str(o, "cost_type"));
        li->rate = get_num(o, "rate", 0);
        li->snap_li = NONE;
        parse_delivery(li, o);

        li->start = INT64_MIN;
        li->end = INT64_MAX;
        t = get_str(o, "start_at");
        bad_flight = t != NULL && adserve_parse_time(t, &li->start) != 0;
        t = get_str(o, "end_at");
        bad_flight |= t != NULL && adserve_parse_time(t, &li->end) != 0;

        order = idmap_get(&b->map[ADSERVE_KIND_ORDERS], get_str(o, "order_id"));

        li->eligible = adserve_vocab_str(adserve_li_status_names,
                                         get_str(o, "status")) == ADSERVE_LI_ACTIVE
                       && li->tier >= 0 && li->cost_type >= 0
                       && li->rate >= 0 && li->rate < 1e9
                       && order != NONE && b->orders[order].approved
                       && !bad_flight && li->start < li->end;

        tg = cJSON_GetObjectItemCaseSensitive(o, "targeting");
        units = cJSON_GetObjectItemCaseSensitive(tg, "ad_units");
        li->include = get_idxs(b, cJSON_GetObjectItemCaseSensitive(units, "include"),
                               ADSERVE_KIND_AD_UNITS);
        li->exclude = get_idxs(b, cJSON_GetObjectItemCaseSensitive(units, "exclude"),
                               ADSERVE_KIND_AD_UNITS);
        li->placements = get_idxs(b, cJSON_GetObjectItemCaseSensitive(tg, "placements"),
                                  ADSERVE_KIND_PLACEMENTS);

        /* what only the request can decide; a rule that cannot be
         * compiled (the sidecar checks them) never serves */
        if (li->eligible) {
            switch (adserve_target_compile(&b->tb, tg, &li->target)) {
            case 0:
                break;
            case 1:
                li->eligible = 0;
                b->snap->stats.skipped++;
                break;
            default:
                return -1;
            }
        }
    }

    return 0;
}


/* Renders the creative's "ad" object once; every ad unit it serves on
 * reuses the text. */
static char *
render_ad(const cJSON *o, const char *id, size2_t size)
{
    cJSON       *ad, *display, *banner;
    const char  *img, *html;
    int          ctype = adserve_vocab_str(adserve_creative_type_names,
                                           get_str(o, "type"));
    char        *out = NULL;

    ad = cJSON_CreateObject();
    if (ad == NULL) {
        return NULL;
    }

    cJSON_AddStringToObject(ad, "id", id);
    display = cJSON_AddObjectToObject(ad, "display");

    if (display != NULL) {
        cJSON_AddNumberToObject(display, "w", size.w);
        cJSON_AddNumberToObject(display, "h", size.h);

        img = get_str(o, "image_url");
        html = get_str(o, "html");

        if (ctype == ADSERVE_CREATIVE_IMAGE && img != NULL) {
            banner = cJSON_AddObjectToObject(display, "banner");
            if (banner != NULL) {
                cJSON_AddStringToObject(banner, "img", img);
                out = cJSON_PrintUnformatted(ad);
            }

        } else if (ctype == ADSERVE_CREATIVE_HTML && html != NULL) {
            cJSON_AddStringToObject(display, "adm", html);
            out = cJSON_PrintUnformatted(ad);
        }
    }

    cJSON_Delete(ad);

    return out;
}


static int
parse_creatives(build_t *b, cJSON **objs)
{
    uint32_t         i, n = b->n[ADSERVE_KIND_CREATIVES];
    creative_rec_t  *c;

    b->crs = adserve_arena_calloc(&b->tmp, (n + 1) * sizeof(creative_rec_t));
    if (b->crs == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        c = &b->crs[i];
        c->id = get_str(objs[i], "id");
        read_size(objs[i], &c->size, -1, -1);
        c->categories = get_strs(b,
                            cJSON_GetObjectItemCaseSensitive(objs[i], "categories"));
        c->landing_url = get_str(objs[i], "landing_url");

        /* a creative that cannot be rendered can never serve */
        c->approved = adserve_vocab_str(adserve_approval_names,
                                        get_str(objs[i], "approval"))
                      == ADSERVE_APPROVAL_APPROVED
                      && (c->ad_json = render_ad(objs[i], c->id, c->size)) != NULL;
    }

    return 0;
}


static int
parse_licas(build_t *b, cJSON **objs)
{
    uint32_t     i, li, cr, n = b->n[ADSERVE_KIND_LICAS];
    lica_rec_t  *l;
    double       w;

    b->licas = adserve_arena_calloc(&b->tmp, (n + 1) * sizeof(lica_rec_t));
    if (b->licas == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        li = idmap_get(&b->map[ADSERVE_KIND_LINE_ITEMS], get_str(objs[i], "line_item_id"));
        cr = idmap_get(&b->map[ADSERVE_KIND_CREATIVES], get_str(objs[i], "creative_id"));
        w = get_num(objs[i], "weight", 1);

        if (li == NONE || cr == NONE || !b->lis[li].eligible || !b->crs[cr].approved
            || adserve_vocab_str(adserve_lica_status_names, get_str(objs[i], "status"))
               != ADSERVE_LICA_ACTIVE
            || !(w >= 1))
        {
            continue;
        }

        l = &b->licas[i];
        l->li = li;
        l->cr = cr;
        l->weight = w > 1000000 ? 1000000 : (uint32_t) w;
        l->next = b->lis[li].first_lica;
        b->lis[li].first_lica = i;
    }

    return 0;
}


/* ---- joining ----------------------------------------------------------- */

static int
size_fits(const unit_rec_t *u, size2_t c)
{
    uint32_t  i;

    if (u->display.w == c.w && u->display.h == c.h) {
        return 1;
    }

    for (i = 0; i < u->nsizes; i++) {
        if (u->sizes[i].w == c.w && u->sizes[i].h == c.h) {
            return 1;
        }
    }

    return 0;
}


/* IAB categories are hierarchical: blocking "IAB7" blocks "IAB7-39" too. */
static int
category_blocked(const strs_t *bcat, const strs_t *cats)
{
    uint32_t  i, j;
    size_t    n;

    for (i = 0; i < bcat->n; i++) {
        n = strlen(bcat->v[i]);

        for (j = 0; j < cats->n; j++) {
            if (strncmp(bcat->v[i], cats->v[j], n) == 0
                && (cats->v[j][n] == '\0' || cats->v[j][n] == '-'))
            {
                return 1;
            }
        }
    }

    return 0;
}


/* Marks unit u and its whole subtree with stamp. */
static void
mark_subtree(build_t *b, uint32_t *marks, uint32_t u, uint32_t stamp)
{
    uint32_t  c;

    if (marks[u] == stamp) {
        return;                      /* already there through another root */
    }

    marks[u] = stamp;

    for (c = b->units[u].first_child; c != NONE; c = b->units[c].next_sibling) {
        mark_subtree(b, marks, c, stamp);
    }
}


static int
push_bcand(bcand_t **v, uint32_t *n, uint32_t *cap, li_rec_t *li, creative_rec_t *cr,
    uint32_t weight)
{
    bcand_t   *c;
    uint32_t   size;

    if (*n == *cap) {
        size = *cap ? *cap * 2 : 8;
        c = realloc(*v, size * sizeof(bcand_t));
        if (c == NULL) {
            return -1;
        }
        *v = c;
        *cap = size;
    }

    c = &(*v)[(*n)++];
    c->li = li;
    c->cr = cr;
    c->weight = weight;

    return 0;
}


static int
add_cand(unit_rec_t *u, li_rec_t *li, creative_rec_t *cr, uint32_t weight)
{
    return push_bcand(&u->cands, &u->ncands, &u->cap, li, cr, weight);
}


/* for the explainer: a creative of a line item that targets the unit but
 * cannot serve there; the reason is the weight */
static int
add_excl(unit_rec_t *u, li_rec_t *li, creative_rec_t *cr, adserve_excl_e why)
{
    return push_bcand(&u->excl, &u->nexcl, &u->xcap, li, cr, why);
}


static int
join_line_item(build_t *b, uint32_t i)
{
    li_rec_t        *li = &b->lis[i];
    lica_rec_t      *l;
    unit_rec_t      *u;
    creative_rec_t  *cr;
    uint32_t         k, j, stamp = i + 1;
    int              rc;

    for (k = 0; k < li->include.n; k++) {
        mark_subtree(b, b->stamp, li->include.v[k], stamp);
    }

    for (k = 0; k < li->placements.n; k++) {
        for (j = 0; j < b->placements[li->placements.v[k]].units.n; j++) {
            mark_subtree(b, b->stamp, b->placements[li->placements.v[k]].units.v[j],
                         stamp);
        }
    }

    for (k = 0; k < li->exclude.n; k++) {
        mark_subtree(b, b->xstamp, li->exclude.v[k], stamp);
    }

    for (j = 0; j < b->n[ADSERVE_KIND_AD_UNITS]; j++) {
        u = &b->units[j];

        if (b->stamp[j] != stamp || b->xstamp[j] == stamp || !u->active) {
            continue;
        }

        for (k = li->first_lica; k != NONE; k = l->next) {
            l = &b->licas[k];

            cr = &b->crs[l->cr];

            if (!size_fits(u, cr->size)) {
                rc = add_excl(u, li, cr, ADSERVE_EXCL_SIZE);

            } else if (category_blocked(&u->bcat, &cr->categories)) {
                rc = add_excl(u, li, cr, ADSERVE_EXCL_BCAT);

            } else {
                rc = add_cand(u, li, cr, l->weight);
            }

            if (rc != 0) {
                return -1;
            }
        }
    }

    return 0;
}


/* ---- ranking and rendering --------------------------------------------- */

static int
same_group(const li_rec_t *a, const li_rec_t *b)
{
    return a->tier == b->tier && a->priority == b->priority;
}


/* tier, then priority (1 is the highest); inside a group a line item's
 * candidates next to each other, in a stable order so builds are
 * reproducible. eCPM is decided per request: CPC and CPA line items rank on
 * observed rates, which change while a snapshot serves. */
static int
cand_cmp(const void *pa, const void *pb)
{
    const bcand_t   *a = pa, *b = pb;
    const li_rec_t  *la = a->li, *lb = b->li;
    int              c;

    if (la->tier != lb->tier) {
        return la->tier < lb->tier ? -1 : 1;
    }

    if (la->priority != lb->priority) {
        return la->priority < lb->priority ? -1 : 1;
    }

    c = strcmp(la->id, lb->id);

    return c ? c : strcmp(a->cr->id, b->cr->id);
}


/* The 200 body up to the ad's URLs: the "ad" object without its closing
 * brace. It does not depend on the ad unit, so all the candidates of a
 * creative share it. */
static const char *
render_head(build_t *b, creative_rec_t *cr, size_t *len)
{
    static const char  pre[] = "{\"version\":\"" ADSERVE_RESPONSE_VERSION "\",\"ad\":";
    size_t             n;
    char              *p;

    if (cr->head == NULL) {
        n = strlen(cr->ad_json) - 1;          /* without the closing '}' */
        cr->head_len = sizeof(pre) - 1 + n;

        p = adserve_arena_alloc(&b->snap->arena, cr->head_len);
        if (p == NULL) {
            return NULL;
        }

        memcpy(p, pre, sizeof(pre) - 1);
        memcpy(p + sizeof(pre) - 1, cr->ad_json, n);
        cr->head = p;
    }

    *len = cr->head_len;

    return cr->head;
}


/* ,"impression_url":"<base>/app/v0/event/impression?ad_log= and the same
 * for the click: the base is the unit's ext.public_url or the default,
 * escaped as a JSON string (the API checked it is an http(s) URL) */
static int
render_urls(build_t *b, const unit_rec_t *u, adserve_unit_t *out)
{
    const char  *base = u->public_url ? u->public_url : b->public_url;
    cJSON       *str;
    char        *json, *p;
    size_t       n;

    str = cJSON_CreateString(base ? base : "");
    json = str ? cJSON_PrintUnformatted(str) : NULL;
    cJSON_Delete(str);
    if (json == NULL) {
        return -1;
    }

    /* without its quotes, and without a trailing slash */
    n = strlen(json) - 2;
    while (n > 0 && json[n] == '/') {
        n--;
    }

#define URL_PART(field, lead, path)                                          \
    out->field.len = sizeof(lead) - 1 + n + sizeof(path) - 1;                \
    p = adserve_arena_alloc(&b->snap->arena, out->field.len);                \
    if (p != NULL) {                                                         \
        memcpy(p, lead, sizeof(lead) - 1);                                   \
        memcpy(p + sizeof(lead) - 1, json + 1, n);                           \
        memcpy(p + sizeof(lead) - 1 + n, path, sizeof(path) - 1);            \
    }                                                                        \
    out->field.data = p;

    URL_PART(impression_prefix, ",\"impression_url\":\"", ADSERVE_IMPRESSION_PATH)
    URL_PART(click_prefix, "\",\"click_url\":\"", ADSERVE_CLICK_PATH)

#undef URL_PART

    cJSON_free(json);

    return out->impression_prefix.data && out->click_prefix.data ? 0 : -1;
}


/* a record's id, copied into the snapshot the first time a candidate
 * needs it; later candidates share the copy */
static int
snap_id(build_t *b, const char *id, adserve_str_t *out)
{
    if (out->data == NULL) {
        out->len = strlen(id);
        out->data = adserve_arena_memdup(&b->snap->arena, id, out->len);
    }

    return out->data ? 0 : -1;
}


/* The line item in the snapshot's lis, added the first time a candidate
 * needs it. */
static uint32_t
snap_li(build_t *b, li_rec_t *r)
{
    adserve_snapshot_t  *s = b->snap;
    adserve_li_t        *li;
    adserve_cap_t       *caps = NULL;

    if (r->snap_li != NONE) {
        return r->snap_li;
    }

    if (r->ncaps) {
        caps = adserve_arena_alloc(&s->arena, r->ncaps * sizeof(adserve_cap_t));
        if (caps == NULL) {
            return NONE;
        }
        memcpy(caps, r->caps, r->ncaps * sizeof(adserve_cap_t));
    }

    /* the one copy of the id, shared with the explainer's exclusions */
    li = &s->lis[s->nlis];
    if (snap_id(b, r->id, &r->snap_id) != 0) {
        return NONE;
    }
    li->id = r->snap_id;

    li->hash = adserve_hash(li->id.data, li->id.len);
    li->start = r->start;
    li->end = r->end;
    li->goal = r->goal;
    li->target = r->target;
    li->caps = caps;
    li->ncaps = (uint8_t) r->ncaps;
    li->tier = (uint8_t) r->tier;
    li->priority = (uint8_t) r->priority;
    li->cost_type = (uint8_t) r->cost_type;
    li->goal_type = (uint8_t) r->goal_type;
    li->delivery = (uint8_t) r->delivery;
    li->paced = r->goal_type != ADSERVE_GOAL_NONE;

    if (r->max_cap > s->max_cap_seconds) {
        s->max_cap_seconds = r->max_cap;
    }

    r->snap_li = s->nlis++;

    return r->snap_li;
}


/* what a candidate bids per unit of its cost type: the line item's rate, or
 * for CPC and CPA without one, the ad unit's default */
static double
cand_bid(const unit_rec_t *u, const li_rec_t *li)
{
    if (li->rate > 0 || li->cost_type == ADSERVE_COST_CPM) {
        return li->rate;
    }

    return li->cost_type == ADSERVE_COST_CPC ? u->default_cpc : u->default_cpa;
}


static int
finish_unit(build_t *b, unit_rec_t *u, adserve_unit_t *out)
{
    adserve_arena_t  *a = &b->snap->arena;
    adserve_cand_t   *c;
    adserve_excl_t   *x;
    const bcand_t    *bc;
    uint32_t          i, group = 0;

    if (u->ncands > 1) {                 /* cands is NULL when there is none */
        qsort(u->cands, u->ncands, sizeof(bcand_t), cand_cmp);
    }

    c = adserve_arena_alloc(a, (u->ncands + 1) * sizeof(adserve_cand_t));
    if (c == NULL) {
        return -1;
    }

    out->max_cap_seconds = 0;

    for (i = 0; i < u->ncands; i++) {
        bc = &u->cands[i];

        if (i > 0 && !same_group(bc->li, u->cands[i - 1].li)) {
            group++;
        }

        c[i].li = snap_li(b, bc->li);
        c[i].weight = bc->weight;
        c[i].group = group;
        c[i].bid = cand_bid(u, bc->li);
        c[i].bid_micros = (uint64_t) (c[i].bid * 1e6 + 0.5);
        c[i].response_head = render_head(b, bc->cr, &c[i].response_head_len);

        if (c[i].li == NONE || snap_id(b, bc->cr->id, &bc->cr->snap_id) != 0
            || c[i].response_head == NULL)
        {
            return -1;
        }

        c[i].creative_id = bc->cr->snap_id;
        c[i].creative_hash = adserve_hash(c[i].creative_id.data, c[i].creative_id.len);

        if (bc->li->max_cap > out->max_cap_seconds) {
            out->max_cap_seconds = bc->li->max_cap;
        }
    }

    x = NULL;
    if (u->nexcl) {
        x = adserve_arena_alloc(a, u->nexcl * sizeof(adserve_excl_t));
        if (x == NULL) {
            return -1;
        }
    }

    for (i = 0; i < u->nexcl; i++) {
        bc = &u->excl[i];
        if (snap_id(b, bc->li->id, &bc->li->snap_id) != 0
            || snap_id(b, bc->cr->id, &bc->cr->snap_id) != 0)
        {
            return -1;
        }
        x[i].line_item_id = bc->li->snap_id;
        x[i].creative_id = bc->cr->snap_id;
        x[i].reason = (uint8_t) bc->weight;
    }
    out->excluded = x;
    out->nexcluded = u->nexcl;

    out->id_len = strlen(u->id);
    out->id = adserve_arena_memdup(a, u->id, out->id_len);
    out->hash = adserve_hash(u->id, out->id_len);
    out->cands = c;
    out->ncands = u->ncands;
    out->floor = u->target_ecpm;
    out->impression_on_response = u->on_response ? 1 : 0;
    b->snap->stats.candidates += u->ncands;

    return out->id && render_urls(b, u, out) == 0 ? 0 : -1;
}


/* id -> line item, for frequency cap replies and pacing */
static int
index_lis(adserve_snapshot_t *s)
{
    uint32_t  i, j, size = table_size(s->nlis);

    s->li_index = adserve_arena_calloc(&s->arena, size * sizeof(uint32_t));
    if (s->li_index == NULL) {
        return -1;
    }
    s->li_mask = size - 1;

    for (i = 0; i < s->nlis; i++) {
        for (j = (uint32_t) s->lis[i].hash & s->li_mask; s->li_index[j];
             j = (j + 1) & s->li_mask)
        { /* void */ }

        s->li_index[j] = i + 1;
    }

    return 0;
}


static int
build_table(build_t *b)
{
    adserve_snapshot_t  *s = b->snap;
    unit_rec_t          *u;
    uint32_t             i, j, size, n = b->n[ADSERVE_KIND_AD_UNITS];

    for (i = 0; i < n; i++) {
        s->stats.active_units += b->units[i].active;
    }

    s->lis = adserve_arena_calloc(&s->arena,
                 (b->n[ADSERVE_KIND_LINE_ITEMS] + 1) * sizeof(adserve_li_t));
    if (s->lis == NULL) {
        return -1;
    }

    size = table_size(s->stats.active_units);
    s->units = adserve_arena_calloc(&s->arena, size * sizeof(adserve_unit_t));
    if (s->units == NULL) {
        return -1;
    }
    s->mask = size - 1;

    for (i = 0; i < n; i++) {
        u = &b->units[i];
        if (!u->active) {
            continue;
        }

        j = (uint32_t) adserve_hash(u->id, strlen(u->id)) & s->mask;
        while (s->units[j].id != NULL) {
            j = (j + 1) & s->mask;
        }

        if (finish_unit(b, u, &s->units[j]) != 0) {
            return -1;
        }
    }

    return index_lis(s);
}


/* Every creative with a landing page, for clicks: approved or not, since an
 * ad served before a change may still be clicked. */
static int
build_creatives(build_t *b)
{
    adserve_snapshot_t  *s = b->snap;
    adserve_creative_t  *c;
    creative_rec_t      *cr;
    uint32_t             i, j, size, n = b->n[ADSERVE_KIND_CREATIVES];

    size = table_size(n);
    s->creatives = adserve_arena_calloc(&s->arena, size * sizeof(adserve_creative_t));
    if (s->creatives == NULL) {
        return -1;
    }
    s->creative_mask = size - 1;

    for (i = 0; i < n; i++) {
        cr = &b->crs[i];
        if (cr->landing_url == NULL) {
            continue;
        }

        j = (uint32_t) adserve_hash(cr->id, strlen(cr->id)) & s->creative_mask;
        while (s->creatives[j].id.data != NULL) {
            j = (j + 1) & s->creative_mask;
        }

        c = &s->creatives[j];
        if (snap_id(b, cr->id, &cr->snap_id) != 0) {
            return -1;
        }
        c->id = cr->snap_id;
        c->landing_url.len = strlen(cr->landing_url);
        c->landing_url.data = adserve_arena_memdup(&s->arena, cr->landing_url,
                                                   c->landing_url.len);
        if (c->landing_url.data == NULL) {
            return -1;
        }
    }

    return 0;
}


/* ---- the build --------------------------------------------------------- */

typedef int (*parse_pt)(build_t *b, cJSON **objs);

static int
build(build_t *b, const adserve_input_t *in)
{
    /* order matters: each kind resolves references to the kinds before it */
    static const parse_pt  parsers[ADSERVE_KIND_COUNT] = {
        parse_units, parse_placements, parse_orders,
        parse_line_items, parse_creatives, parse_licas
    };
    cJSON    **objs;
    uint32_t   k, i, nunits;

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        objs = parse_kind(b, in, k);
        if (objs == NULL || parsers[k](b, objs) != 0) {
            build_error(b, "out of memory parsing %s", adserve_kinds[k].key);
            return -1;
        }
    }

    nunits = b->n[ADSERVE_KIND_AD_UNITS];
    b->stamp = adserve_arena_calloc(&b->tmp, (nunits + 1) * sizeof(uint32_t));
    b->xstamp = adserve_arena_calloc(&b->tmp, (nunits + 1) * sizeof(uint32_t));
    if (b->stamp == NULL || b->xstamp == NULL) {
        build_error(b, "out of memory");
        return -1;
    }

    for (i = 0; i < b->n[ADSERVE_KIND_LINE_ITEMS]; i++) {
        if (b->lis[i].eligible && b->lis[i].first_lica != NONE
            && join_line_item(b, i) != 0)
        {
            build_error(b, "out of memory joining line items");
            return -1;
        }
    }

    if (build_table(b) != 0 || build_creatives(b) != 0) {
        build_error(b, "out of memory ranking candidates");
        return -1;
    }

    return 0;
}


static void
build_cleanup(build_t *b)
{
    cJSON     *o, *next;
    uint32_t   i;

    for (i = 0; b->units && i < b->n[ADSERVE_KIND_AD_UNITS]; i++) {
        free(b->units[i].cands);
        free(b->units[i].excl);
    }

    for (i = 0; b->crs && i < b->n[ADSERVE_KIND_CREATIVES]; i++) {
        cJSON_free(b->crs[i].ad_json);
    }

    for (o = b->docs; o; o = next) {
        next = o->next;
        o->next = NULL;
        cJSON_Delete(o);
    }

    adserve_target_builder_free(&b->tb);
    adserve_arena_free(&b->tmp);
}


static unsigned
elapsed_ms(const struct timespec *t0)
{
    struct timespec  t1;

    clock_gettime(CLOCK_MONOTONIC, &t1);

    return (unsigned) ((t1.tv_sec - t0->tv_sec) * 1000
                       + (t1.tv_nsec - t0->tv_nsec) / 1000000);
}


adserve_snapshot_t *
adserve_snapshot_build(const adserve_input_t *in, char *err, size_t errlen)
{
    build_t              b;
    adserve_snapshot_t  *s;
    adserve_arena_t      arena;
    struct timespec      t0;

    clock_gettime(CLOCK_MONOTONIC, &t0);

    /* the snapshot lives in its own arena, the struct included: one
     * allocator for all of it (a shared zone takes it whole) */
    adserve_arena_init_from(&arena, 256 * 1024, in->allocator);

    s = adserve_arena_calloc(&arena, sizeof(adserve_snapshot_t));
    if (s == NULL) {
        adserve_arena_free(&arena);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    s->arena = arena;
    s->rev = in->rev;

    memset(&b, 0, sizeof(build_t));
    adserve_arena_init(&b.tmp, 256 * 1024);
    b.snap = s;
    adserve_target_builder_init(&b.tb, &s->arena);
    b.err = err;
    b.errlen = errlen;
    b.public_url = in->public_url;

    if (build(&b, in) != 0) {
        build_cleanup(&b);
        adserve_snapshot_free(s);
        return NULL;
    }

    build_cleanup(&b);
    s->stats.bytes = s->arena.total;
    s->stats.build_ms = elapsed_ms(&t0);

    return s;
}


void
adserve_snapshot_free(adserve_snapshot_t *s)
{
    adserve_arena_t  arena;

    if (s != NULL) {
        arena = s->arena;           /* s is in it */
        adserve_arena_free(&arena);
    }
}


const adserve_unit_t *
adserve_snapshot_unit(const adserve_snapshot_t *s, const char *id, size_t len)
{
    const adserve_unit_t  *u;
    uint32_t               i;

    if (s == NULL) {
        return NULL;
    }

    for (i = (uint32_t) adserve_hash(id, len) & s->mask; ; i = (i + 1) & s->mask) {
        u = &s->units[i];

        if (u->id == NULL) {
            return NULL;
        }

        if (u->id_len == len && memcmp(u->id, id, len) == 0) {
            return u;
        }
    }
}


const adserve_creative_t *
adserve_snapshot_creative(const adserve_snapshot_t *s, const char *id, size_t len)
{
    const adserve_creative_t  *c;
    uint32_t                   i;

    if (s == NULL) {
        return NULL;
    }

    for (i = (uint32_t) adserve_hash(id, len) & s->creative_mask; ;
         i = (i + 1) & s->creative_mask)
    {
        c = &s->creatives[i];

        if (c->id.data == NULL) {
            return NULL;
        }

        if (c->id.len == len && memcmp(c->id.data, id, len) == 0) {
            return c;
        }
    }
}


adserve_li_t *
adserve_snapshot_li(const adserve_snapshot_t *s, const char *id, size_t len)
{
    uint32_t       i, k;
    adserve_li_t  *li;

    if (s == NULL || s->li_index == NULL) {
        return NULL;
    }

    for (i = (uint32_t) adserve_hash(id, len) & s->li_mask; (k = s->li_index[i]);
         i = (i + 1) & s->li_mask)
    {
        li = &s->lis[k - 1];
        if (li->id.len == len && memcmp(li->id.data, id, len) == 0) {
            return li;
        }
    }

    return NULL;
}


/* xorshift32: the decision's further random draws, from the caller's seed */
static inline uint32_t
next_rnd(adserve_decision_t *d)
{
    uint32_t  x = d->rnd ? d->rnd : 0x9e3779b9;

    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    d->rnd = x;

    return x;
}


/* Whether one more ad now would break a cap: the user's ads of this line
 * item inside (now - seconds, now] must stay below max. Unknown (no user
 * id, Redis late or down): the line item does not serve. */
static int
capped(uint32_t idx, const adserve_li_t *li, const adserve_decision_t *d)
{
    uint32_t  i, k, n;

    if (!d->caps_known) {
        return 1;
    }

    for (k = 0; k < li->ncaps; k++) {
        n = 0;
        for (i = 0; i < d->nseen; i++) {
            if (d->seen[i].li == idx && d->seen[i].at > d->now - li->caps[k].seconds) {
                n++;
            }
        }

        if (n >= li->caps[k].max) {
            return 1;
        }
    }

    return 0;
}


adserve_reason_e
adserve_li_check(const adserve_li_t *li, const adserve_unit_t *u,
    const adserve_cand_t *c, adserve_decision_t *d)
{
    const adserve_pace_t  *pace;

    if (d->now < li->start || d->now >= li->end) {
        return ADSERVE_NO_FLIGHT;
    }

    pace = &d->paces[c->li];

    if (pace->stopped) {
        return ADSERVE_NO_GOAL_REACHED;
    }

    if (li->tier == ADSERVE_TIER_PRICE_PRIORITY && c->bid * pace->factor < u->floor) {
        return ADSERVE_NO_FLOOR;
    }

    if (li->ncaps && capped(c->li, li, d)) {
        return ADSERVE_NO_FREQUENCY_CAP;
    }

    if (li->target != NULL && !adserve_target_match(li->target, d->facts, d->now)) {
        return ADSERVE_NO_TARGETING;
    }

    return ADSERVE_OK;
}


/* a line item's creative, by LICA weight */
static const adserve_cand_t *
pick_creative(const adserve_cand_t *c, const adserve_cand_t *end, uint32_t rnd)
{
    const adserve_cand_t  *k;
    uint64_t               total = 0, pick;

    for (k = c; k < end; k++) {
        total += k->weight;
    }

    pick = (uint64_t) rnd % total;

    for (k = c; k < end - 1; k++) {
        if (pick < k->weight) {
            break;
        }
        pick -= k->weight;
    }

    return k;
}


const adserve_cand_t *
adserve_decide(const adserve_snapshot_t *s, const adserve_unit_t *u,
    adserve_decision_t *d)
{
    const adserve_cand_t  *c = u->cands, *end = u->cands + u->ncands;
    const adserve_cand_t  *g, *run_end, *best, *best_end = NULL;
    const adserve_li_t    *li;
    adserve_pace_t        *pace;
    uint32_t               seed = d->rnd, ties = 0;
    double                 ecpm, best_ecpm = 0;

    while (c < end) {
        best = NULL;

        for (g = c; g < end && g->group == c->group; g = run_end) {
            for (run_end = g + 1; run_end < end && run_end->li == g->li; run_end++) {
                /* void */
            }

            li = &s->lis[g->li];

            if (adserve_li_check(li, u, g, d) != ADSERVE_OK) {
                continue;
            }

            pace = &d->paces[g->li];

            if (li->paced) {
                pace->opp++;
                if (!adserve_pace_allows(pace, next_rnd(d))) {
                    continue;
                }
            }

            /* the highest eCPM; equals at random (reservoir of one) */
            ecpm = g->bid * pace->factor;

            if (best == NULL || ecpm > best_ecpm) {
                best = g;
                best_end = run_end;
                best_ecpm = ecpm;
                ties = 1;

            } else if (ecpm == best_ecpm && next_rnd(d) % ++ties == 0) {
                best = g;
                best_end = run_end;
            }
        }

        if (best != NULL) {
            d->paces[best->li].served += s->lis[best->li].paced;
            return pick_creative(best, best_end, seed);
        }

        c = g;
    }

    return NULL;
}


uint32_t
adserve_explain(const adserve_snapshot_t *s, const adserve_unit_t *u,
    adserve_decision_t *d, adserve_explained_t *out)
{
    const adserve_cand_t  *c, *end = u->cands + u->ncands;
    adserve_explained_t   *x;
    const adserve_li_t    *li;
    uint32_t               n = 0, i, first = 0, group = UINT32_MAX;
    double                 best = -1;
    int                    decided = 0, nbest = 0;

    for (c = u->cands; c < end; n++) {
        x = &out[n];
        li = &s->lis[c->li];
        x->li = li;
        x->cand = c;
        for (x->ncands = 0; c < end && c->li == x->cand->li; c++) {
            x->ncands++;
        }

        x->pace = &d->paces[x->cand->li];
        x->ecpm = x->cand->bid * x->pace->factor;
        x->reason = adserve_li_check(li, u, x->cand, d);
        if (x->reason == ADSERVE_OK && li->paced
            && (x->pace->served >= x->pace->budget || x->pace->allow == 0))
        {
            x->reason = ADSERVE_NO_PACING;
        }
        x->verdict = x->reason == ADSERVE_OK ? ADSERVE_X_LOWER_PRIORITY : ADSERVE_X_RULE;

        /* the end of a group: the first one with a line item able to
         * serve is where the decision is made */
        if (x->cand->group != group) {
            if (!decided && best >= 0) {
                decided = 1;
            }
            if (!decided) {
                group = x->cand->group;
                first = n;
            }
        }

        if (!decided && x->reason == ADSERVE_OK) {
            if (x->ecpm > best) {
                best = x->ecpm;
                nbest = 1;
            } else if (x->ecpm == best) {
                nbest++;
            }
        }
    }

    for (i = first; best >= 0 && i < n && out[i].cand->group == group; i++) {
        if (out[i].reason == ADSERVE_OK) {
            out[i].verdict = out[i].ecpm < best ? ADSERVE_X_OUTRANKED
                             : nbest > 1 ? ADSERVE_X_TIED : ADSERVE_X_WON;
        }
    }

    return n;
}


/* ---- input ------------------------------------------------------------- */

void
adserve_input_init(adserve_input_t *in)
{
    memset(in, 0, sizeof(adserve_input_t));
    adserve_arena_init(&in->arena, 256 * 1024);
}


int
adserve_input_ref(adserve_input_t *in, adserve_kind_e kind, const char *data,
    size_t len)
{
    adserve_str_t  *v;
    size_t          cap;

    if (in->nrecords[kind] == in->cap[kind]) {
        /* arrays double inside the arena; the old copies are garbage
         * until the load ends, at most as much again as the final array */
        cap = in->cap[kind] ? in->cap[kind] * 2 : 256;
        v = adserve_arena_alloc(&in->arena, cap * sizeof(adserve_str_t));
        if (v == NULL) {
            return -1;
        }
        if (in->nrecords[kind]) {
            memcpy(v, in->records[kind], in->nrecords[kind] * sizeof(adserve_str_t));
        }
        in->records[kind] = v;
        in->cap[kind] = cap;
    }

    v = &in->records[kind][in->nrecords[kind]++];
    v->data = data;
    v->len = len;

    return 0;
}


void
adserve_input_free(adserve_input_t *in)
{
    adserve_arena_free(&in->arena);
    memset(in, 0, sizeof(adserve_input_t));
}
