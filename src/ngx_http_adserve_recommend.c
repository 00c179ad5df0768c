/*
 * Recommendation serving (README "Recommendation"): an ad unit with
 * ext.recommendation.enabled answers POST /app/v0/ad/{tagid} with up to
 * its topn catalog items, in place of an ad.
 *
 * The unit's algorithm gives its own items: axa0, the default, the
 * associated items pool of the item the request names (ext.item_id), in
 * its rank; coview, the co-view pool the sidecar computed for that item.
 * Then the placement's fallback chain, in order, until topn items are
 * there: presets (their items not expired), popular items of a context,
 * a snapshot file's items, each in order or shuffled. Every item passes the
 * content filter, and candidate filtering over the user's history
 * (ngx_http_adserve_history.c) drops or demotes what they saw. Everything
 * was resolved by the snapshot build (ids to catalog items, each item's
 * part of the answer rendered): a request looks up and copies.
 *
 * One ad_log token serves the answer. It names the ad unit and the user,
 * no line item and no creative; each item's click URL adds ?item= with its
 * id, and the click endpoint sends the browser to that catalog item's url.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_adserve.h"


#define NGX_HTTP_ADSERVE_ITEM_CLICK   ",\"click_url\":\""
#define NGX_HTTP_ADSERVE_ITEM_ARG     "&" ADSERVE_ITEM_ARG "="
#define NGX_HTTP_ADSERVE_SOURCE_ARG   "&" ADSERVE_SOURCE_ARG "="
#define NGX_HTTP_ADSERVE_ITEM_SOURCE  "\",\"source\":\""
#define NGX_HTTP_ADSERVE_ITEMS_END    "]}"
/* a source's name in an item tail, at most */
#define NGX_HTTP_ADSERVE_SOURCE_MAX   32
#define NGX_HTTP_ADSERVE_TAIL_MAX     (sizeof(NGX_HTTP_ADSERVE_SOURCE_ARG)                   \
                                       + sizeof(NGX_HTTP_ADSERVE_ITEM_SOURCE)                \
                                       + 2 * NGX_HTTP_ADSERVE_SOURCE_MAX + 2)


/* Each source's item tail, made at configuration from the contract's
 * names (ngx_http_adserve_rec_init) and inherited by the workers:
 * &src={name}","source":"{name}"} (its first arg_len bytes are the click
 * URL's argument), so that an answer copies them rather than measuring the
 * names for every item. */
typedef struct {
    ngx_str_t   tail;
    size_t      arg_len;
    u_char      buf[NGX_HTTP_ADSERVE_TAIL_MAX];
} ngx_http_adserve_rec_tail_t;

static ngx_http_adserve_rec_tail_t  ngx_http_adserve_rec_tails[ADSERVE_SOURCE_COUNT];


/* What an answer shows: topn items at most, each with its source. */
typedef struct {
    const adserve_item_t  *item[ADSERVE_TOPN_MAX];
    uint8_t                source[ADSERVE_TOPN_MAX];
    ngx_uint_t             n, topn;
    const adserve_item_t  *later[ADSERVE_TOPN_MAX];   /* ViewPenalty: seen */
    uint8_t                later_source[ADSERVE_TOPN_MAX];
    ngx_uint_t             nlater;
    const adserve_unit_t  *unit;
    const adserve_item_t  *viewed;      /* the request's item, if the catalog
                                         * has it: never shown */
    ngx_http_adserve_ctx_t *ctx;        /* its history */
    adserve_req_ctx_t     *facts;       /* what content filters read */
} ngx_http_adserve_picks_t;


static ngx_uint_t
ngx_http_adserve_picked(const adserve_item_t *const *items, ngx_uint_t n,
    const adserve_item_t *it)
{
    ngx_uint_t  i;

    for (i = 0; i < n; i++) {
        if (items[i] == it) {
            return 1;
        }
    }

    return 0;
}


/* An item from a source, unless the answer may not show it: the item the
 * user looks at, one shown already (an item once, from its first source),
 * one the content filter refuses, one the user saw (ViewOut; ViewPenalty
 * keeps it for the slots nothing else fills). */
static void
ngx_http_adserve_pick(ngx_http_adserve_picks_t *pk, const adserve_item_t *it,
    adserve_rec_source_e source)
{
    const adserve_unit_t  *u = pk->unit;

    if (pk->n == pk->topn
        || it == pk->viewed
        || ngx_http_adserve_picked(pk->item, pk->n, it)
        || ngx_http_adserve_picked(pk->later, pk->nlater, it)
        || (u->filter != NULL && !adserve_target_filter(u->filter, pk->facts, &it->attrs)))
    {
        return;
    }

    if (u->filtering != ADSERVE_FILTERING_NONE && ngx_http_adserve_history_has(pk->ctx, it)) {
        if (u->filtering == ADSERVE_FILTERING_PENALTY && pk->nlater < pk->topn) {
            pk->later[pk->nlater] = it;
            pk->later_source[pk->nlater++] = (uint8_t) source;
        }
        return;
    }

    pk->item[pk->n] = it;
    pk->source[pk->n++] = (uint8_t) source;
}


/* A fallback's items: a preset's not expired, a popular one's (its
 * context's most viewed first); in order or shuffled (Fisher-Yates over
 * their indexes: a fallback holds ADSERVE_PRESET_ITEMS_MAX at most). */
static void
ngx_http_adserve_fallback(ngx_http_adserve_picks_t *pk, const adserve_snapshot_t *s,
    const adserve_fallback_t *f, time_t now)
{
    static const uint8_t  sources[ADSERVE_FALLBACK_COUNT] = {
        [ADSERVE_FALLBACK_POPULAR] = ADSERVE_SOURCE_POPULAR,
        [ADSERVE_FALLBACK_PRESET] = ADSERVE_SOURCE_PRESET,
        [ADSERVE_FALLBACK_SNAPSHOT] = ADSERVE_SOURCE_SNAPSHOT
    };
    uint8_t     order[ADSERVE_PRESET_ITEMS_MAX];
    ngx_uint_t  i, j, n = 0;
    uint8_t     t;

    for (i = 0; i < f->n && n < ADSERVE_PRESET_ITEMS_MAX; i++) {
        if (f->expire == NULL || f->expire[i] > (int64_t) now) {
            order[n++] = (uint8_t) i;
        }
    }

    for (i = 0; i < n && pk->n < pk->topn; i++) {
        if (f->order == ADSERVE_ORDER_RANDOM) {
            j = i + (ngx_uint_t) ngx_random() % (n - i);
            t = order[i];
            order[i] = order[j];
            order[j] = t;
        }

        ngx_http_adserve_pick(pk, &s->items[f->items[order[i]]], sources[f->type]);
    }
}


/* The algorithm's items (the pool of the request's item, in its rank), or
 * the target service's, then the fallback chain in order until topn are
 * there, each fallback by its activation: always; except_timeout, unless
 * the service gave no answer in time; timeout_only, only then. */
static void
ngx_http_adserve_rec_items(ngx_http_adserve_picks_t *pk, const adserve_snapshot_t *s,
    ngx_http_adserve_ctx_t *ctx, const adserve_unit_t *unit, adserve_decision_t *d)
{
    const adserve_str_t   *item = &ctx->req.item_id;
    const adserve_pool_t  *pool;
    const adserve_item_t  *it;
    ngx_uint_t             i, timed_out;
    uint8_t                a;

    pk->n = 0;
    pk->nlater = 0;
    pk->topn = unit->filter_refuses ? 0 : unit->topn;
    pk->unit = unit;
    pk->viewed = item->data ? adserve_snapshot_item(s, item->data, item->len) : NULL;
    pk->ctx = ctx;
    pk->facts = d->facts;

    if (unit->target_service.len) {
        /* the service's items replace the algorithm's; no answer in time
         * (late, failed, down) is the fallbacks' timeout */
        timed_out = ctx->svc != NGX_HTTP_ADSERVE_SVC_ANSWERED;

        for (i = 0; !timed_out && i < ctx->nsvc_ids && pk->n < pk->topn; i++) {
            it = adserve_snapshot_item(s, ctx->svc_ids[i].data, ctx->svc_ids[i].len);
            if (it != NULL) {
                ngx_http_adserve_pick(pk, it, ADSERVE_SOURCE_ALGORITHM);
            }
        }

    } else {
        timed_out = 0;
        pool = item->data ? adserve_snapshot_pool(s, unit->algorithm, item->data, item->len)
                          : NULL;

        /* the candidates fetched together: ViewOut takes their hashes in
         * turn, and each was a cache miss of its own (most are in the
         * user's history, and touched for nothing else) */
        for (i = 0; pool != NULL && i < pool->n; i++) {
            __builtin_prefetch(&s->items[pool->items[i]].hash);
        }

        for (i = 0; pool != NULL && i < pool->n && pk->n < pk->topn; i++) {
            ngx_http_adserve_pick(pk, &s->items[pool->items[i]], ADSERVE_SOURCE_ALGORITHM);
        }
    }

    for (i = 0; i < unit->nfallbacks && pk->n < pk->topn; i++) {
        a = unit->fallbacks[i].activation;
        if (a == ADSERVE_ACTIVATION_ALWAYS
            || (a == ADSERVE_ACTIVATION_EXCEPT_TIMEOUT && !timed_out)
            || (a == ADSERVE_ACTIVATION_TIMEOUT_ONLY && timed_out))
        {
            ngx_http_adserve_fallback(pk, s, &unit->fallbacks[i], ctx->now);
        }
    }

    /* ViewPenalty: what the user saw fills the slots left, in its order */
    for (i = 0; i < pk->nlater && pk->n < pk->topn; i++) {
        pk->item[pk->n] = pk->later[i];
        pk->source[pk->n++] = pk->later_source[i];
    }
}


ngx_int_t
ngx_http_adserve_rec_init(ngx_conf_t *cf)
{
    ngx_http_adserve_rec_tail_t  *t;
    const char                   *name;
    size_t                        n;
    u_char                       *p;
    ngx_uint_t                    k;

    for (k = 0; k < ADSERVE_SOURCE_COUNT; k++) {
        t = &ngx_http_adserve_rec_tails[k];
        name = adserve_rec_source_names[k];
        n = ngx_strlen(name);

        if (n > NGX_HTTP_ADSERVE_SOURCE_MAX) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               NGX_HTTP_ADSERVE_LOG "the source name \"%s\" is too long", name);
            return NGX_ERROR;
        }

        p = ngx_cpymem(t->buf, NGX_HTTP_ADSERVE_SOURCE_ARG, sizeof(NGX_HTTP_ADSERVE_SOURCE_ARG) - 1);
        p = ngx_cpymem(p, name, n);
        t->arg_len = p - t->buf;
        p = ngx_cpymem(p, NGX_HTTP_ADSERVE_ITEM_SOURCE, sizeof(NGX_HTTP_ADSERVE_ITEM_SOURCE) - 1);
        p = ngx_cpymem(p, name, n);
        *p++ = '"';
        *p++ = '}';
        t->tail.data = t->buf;
        t->tail.len = p - t->buf;
    }

    return NGX_OK;
}


/* The bytes the answer takes with a token of tn. */
static size_t
ngx_http_adserve_rec_size(const adserve_unit_t *unit, const ngx_http_adserve_picks_t *pk,
    size_t tn)
{
    ngx_uint_t  i;
    size_t      len;

    len = unit->rec_head.len + sizeof(NGX_HTTP_ADSERVE_ITEMS_END)
          + unit->impression_prefix.len + unit->click_prefix.len + 3 * tn
          + sizeof(NGX_HTTP_ADSERVE_ITEM_ARG) + ADSERVE_ITEM_ID_MAX
          + ngx_http_adserve_rec_tails[pk->source[0]].arg_len
          + sizeof(ADSERVE_RESPONSE_MIDDLE ADSERVE_RESPONSE_TAIL);

    for (i = 0; i < pk->n; i++) {
        len += 1 + pk->item[i]->head.len + sizeof(NGX_HTTP_ADSERVE_ITEM_CLICK)
               + unit->url_base_json.len + sizeof(ADSERVE_CLICK_PATH) + tn
               + sizeof(NGX_HTTP_ADSERVE_ITEM_ARG) + pk->item[i]->id.len
               + ngx_http_adserve_rec_tails[pk->source[i]].tail.len;
    }

    return len;
}


/* One item: its rendered part, its own click URL, its source. */
static u_char *
ngx_http_adserve_rec_item(u_char *p, const adserve_unit_t *unit, const adserve_item_t *it,
    const u_char *tok, size_t tn, ngx_uint_t source)
{
    const ngx_str_t  *tail = &ngx_http_adserve_rec_tails[source].tail;

    p = ngx_cpymem(p, it->head.data, it->head.len);
    p = ngx_cpymem(p, NGX_HTTP_ADSERVE_ITEM_CLICK, sizeof(NGX_HTTP_ADSERVE_ITEM_CLICK) - 1);
    p = ngx_cpymem(p, unit->url_base_json.data, unit->url_base_json.len);
    p = ngx_cpymem(p, ADSERVE_CLICK_PATH, sizeof(ADSERVE_CLICK_PATH) - 1);
    p = ngx_cpymem(p, tok, tn);
    /* item ids are of ADSERVE_ITEM_ID_CHARS: safe in a query and in JSON */
    p = ngx_cpymem(p, NGX_HTTP_ADSERVE_ITEM_ARG, sizeof(NGX_HTTP_ADSERVE_ITEM_ARG) - 1);
    p = ngx_cpymem(p, it->id.data, it->id.len);

    return ngx_cpymem(p, tail->data, tail->len);
}


/* One view of "{context}/{item id}" for popularity. */
static void
ngx_http_adserve_count_popular(ngx_http_adserve_events_t *ev, time_t now,
    const u_char *context, size_t len, const adserve_item_t *it)
{
    u_char         id[NGX_HTTP_ADSERVE_COUNTER_ID_MAX], *p;
    adserve_str_t  s;

    if (len > ADSERVE_CONTEXT_MAX) {
        return;
    }

    p = ngx_cpymem(id, context, len);
    *p++ = ADSERVE_POPULAR_SEP;
    p = ngx_cpymem(p, it->id.data, it->id.len);

    s.data = (const char *) id;
    s.len = p - id;
    ngx_http_adserve_count(ev, now, NGX_HTTP_ADSERVE_DIM_POPULAR, &s,
                           adserve_hash(s.data, s.len), NGX_HTTP_ADSERVE_M_VIEWS, 1);
}


/* What an answer counts: the item viewed (per item, and its popularity in
 * "all" and in the request's context when a popular fallback queries
 * it), and the items shown, per item and per source. */
static void
ngx_http_adserve_rec_count(ngx_http_adserve_events_t *ev, const adserve_snapshot_t *s,
    ngx_http_adserve_ctx_t *ctx, const adserve_unit_t *unit,
    const ngx_http_adserve_picks_t *pk)
{
    const adserve_str_t   *cx = &ctx->req.context;
    const adserve_item_t  *it = pk->viewed;
    ngx_uint_t             i, shown[ADSERVE_SOURCE_COUNT];

    if (it != NULL) {
        ngx_http_adserve_count(ev, ctx->now, ADSERVE_DIM_ITEM, &it->id, it->hash,
                               NGX_HTTP_ADSERVE_M_VIEWS, 1);
        ngx_http_adserve_count_popular(ev, ctx->now, (u_char *) ADSERVE_V_CONTEXT_ALL,
                                       sizeof(ADSERVE_V_CONTEXT_ALL) - 1, it);

        if (cx->data != NULL && adserve_snapshot_counts_context(s, cx->data, cx->len)) {
            ngx_http_adserve_count_popular(ev, ctx->now, (u_char *) cx->data, cx->len, it);
        }
    }

    ngx_memzero(shown, sizeof(shown));

    ngx_http_adserve_count_items(ev, ctx->now, ADSERVE_DIM_ITEM, pk->item, pk->n,
                                 NGX_HTTP_ADSERVE_M_SHOWN);

    for (i = 0; i < pk->n; i++) {
        shown[pk->source[i]]++;
    }

    for (i = 0; i < ADSERVE_SOURCE_COUNT; i++) {
        if (shown[i]) {
            ngx_http_adserve_count(ev, ctx->now, ADSERVE_DIM_SOURCE, &unit->source_ids[i],
                                   unit->source_hashes[i], NGX_HTTP_ADSERVE_M_SHOWN, shown[i]);
        }
    }

    if (pk->n) {
        ngx_http_adserve_count_variant(ev, ctx->now, unit, NGX_HTTP_ADSERVE_M_SHOWN, pk->n);
    }
}


void
ngx_http_adserve_rec_click(ngx_http_request_t *r, const adserve_snapshot_t *s,
    const adserve_ad_log_t *log, const adserve_item_t *it, time_t now)
{
    ngx_http_adserve_main_conf_t  *amcf;
    const adserve_unit_t          *unit;
    ngx_str_t                      arg;
    ngx_int_t                      k;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    ngx_http_adserve_count(amcf->events, now, ADSERVE_DIM_ITEM, &it->id, it->hash,
                           NGX_HTTP_ADSERVE_M_CLICKS, 1);

    /* the source, as the click URL says: one of the vocabulary, or none;
     * counted for the unit that served it, an experiment's variant's */
    unit = adserve_snapshot_unit(s, log->ad_unit.data, log->ad_unit.len);
    if (unit != NULL) {
        unit = adserve_unit_variant(unit, log->variant.data, log->variant.len);
    }

    if (unit != NULL && unit->rec
        && ngx_http_arg(r, (u_char *) ADSERVE_SOURCE_ARG, sizeof(ADSERVE_SOURCE_ARG) - 1, &arg)
           == NGX_OK
        && (k = adserve_vocab(adserve_rec_source_names, (const char *) arg.data, arg.len)) >= 0)
    {
        ngx_http_adserve_count(amcf->events, now, ADSERVE_DIM_SOURCE, &unit->source_ids[k],
                               unit->source_hashes[k], NGX_HTTP_ADSERVE_M_CLICKS, 1);
    }

    /* the user viewed what they clicked: ViewOut and co-view read it */
    ngx_http_adserve_history_record(r->pool, &log->user, now, NULL, 0, &it->id);
}


ngx_int_t
ngx_http_adserve_answer_rec(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, adserve_decision_t *d)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_http_adserve_picks_t       pk;
    const adserve_snapshot_t      *s;
    const adserve_item_t          *first;
    adserve_ad_log_t               log;
    u_char                        *body, *p, tok[ADSERVE_TOKEN_MAX];
    ngx_uint_t                     i;
    size_t                         tn;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    s = amcf->loader->snapshot;

    /* a target service: called once, and the answer waits for it until
     * its deadline (ctx->finish comes back here) */
    if (unit->target_service.len && ctx->svc == NGX_HTTP_ADSERVE_SVC_NONE) {
        if (ngx_http_adserve_recsvc_call(r, ctx, unit) == NGX_AGAIN) {
            return NGX_AGAIN;
        }

        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      NGX_HTTP_ADSERVE_LOG "target service \"%*s\" cannot be called",
                      unit->target_service.len, unit->target_service.data);
        ctx->svc = NGX_HTTP_ADSERVE_SVC_FAILED;
    }

    ngx_http_adserve_history_older(r, ctx);
    ngx_http_adserve_rec_items(&pk, s, ctx, unit, d);

    /* what the user looks at is history, and counts, even when nothing
     * is shown */
    if (!ctx->explain) {
        ngx_http_adserve_history_record(r->pool, &ctx->req.user_id, ctx->now, pk.item, pk.n,
                                        &ctx->req.item_id);
        ngx_http_adserve_rec_count(amcf->events, s, ctx, unit, &pk);
    }

    if (pk.n == 0) {
        ngx_http_adserve_tally->nobids[NGX_HTTP_ADSERVE_H_AD] += !ctx->explain;
        return ngx_http_adserve_send(r, NGX_HTTP_NO_CONTENT, NULL, 0);
    }

    ngx_memzero(&log, sizeof(adserve_ad_log_t));
    log.issued = ctx->now;
    log.cost_type = ADSERVE_COST_CPM;
    log.ad_unit.data = unit->id;
    log.ad_unit.len = unit->id_len;
    if (ctx->req.user_id.data != NULL) {
        log.user = ctx->req.user_id;
    }
    ngx_http_adserve_seal_variant(&log, unit);

    tn = ngx_http_adserve_encode(r, &log, tok);
    if (tn == 0) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    body = ngx_pnalloc(r->pool, ngx_http_adserve_rec_size(unit, &pk, tn));
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_cpymem(body, unit->rec_head.data, unit->rec_head.len);

    for (i = 0; i < pk.n; i++) {
        if (i > 0) {
            *p++ = ',';
        }
        p = ngx_http_adserve_rec_item(p, unit, pk.item[i], tok, tn, pk.source[i]);
    }

    /* the answer's own URLs: the impression, and the click of its first
     * item (a recommendation's click names the item it lands on) */
    first = pk.item[0];
    p = ngx_cpymem(p, NGX_HTTP_ADSERVE_ITEMS_END, sizeof(NGX_HTTP_ADSERVE_ITEMS_END) - 1);
    p = ngx_cpymem(p, unit->impression_prefix.data, unit->impression_prefix.len);
    p = ngx_cpymem(p, tok, tn);
    p = ngx_cpymem(p, unit->click_prefix.data, unit->click_prefix.len);
    p = ngx_cpymem(p, tok, tn);
    p = ngx_cpymem(p, NGX_HTTP_ADSERVE_ITEM_ARG, sizeof(NGX_HTTP_ADSERVE_ITEM_ARG) - 1);
    p = ngx_cpymem(p, first->id.data, first->id.len);
    p = ngx_cpymem(p, ngx_http_adserve_rec_tails[pk.source[0]].buf,
                   ngx_http_adserve_rec_tails[pk.source[0]].arg_len);
    p = ngx_cpymem(p, ADSERVE_RESPONSE_MIDDLE, sizeof(ADSERVE_RESPONSE_MIDDLE) - 1);
    p = ngx_cpymem(p, tok, tn);
    p = ngx_cpymem(p, ADSERVE_RESPONSE_TAIL, sizeof(ADSERVE_RESPONSE_TAIL) - 1);

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   NGX_HTTP_ADSERVE_LOG "recommendation: %ui items of \"%*s\"", pk.n,
                   ctx->req.item_id.len, ctx->req.item_id.data);

    ngx_http_adserve_count(amcf->events, ctx->now, ADSERVE_DIM_UNIT,
                           &(adserve_str_t) { unit->id, unit->id_len }, unit->hash,
                           NGX_HTTP_ADSERVE_M_ADS, 1);
    ngx_http_adserve_count_variant(amcf->events, ctx->now, unit, NGX_HTTP_ADSERVE_M_ADS, 1);
    ngx_http_adserve_tally->ads[ADSERVE_FORMAT_COUNT]++;

    if (unit->impression_on_response) {
        (void) ngx_http_adserve_track(amcf->events, ADSERVE_EVENT_IMPRESSION, &log,
                                      ctx->now, 0);
    }

    return ngx_http_adserve_send(r, NGX_HTTP_OK, body, p - body);
}
