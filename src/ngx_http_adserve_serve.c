
/*
 * Serving: POST /app/v0/ad/{tagid}, from the worker's snapshot.
 *
 *   start: the ad unit of the path (404 at once when it is unknown), then
 *     the body is read without blocking;
 *   decide: parked while a new worker's first load runs (the loader resumes
 *     it), the body scanned, the request counted, and, on a unit with
 *     capped line items, the user's caps read from Redis (the caps resume
 *     it through ctx->caps_done, or its deadline does);
 *   finish: the decision, then ctx->answer: the ad (a rendered response
 *     around a fresh ad_log token), 204, or the explainer's document.
 *
 * Also the CORS preflight of the serving and tracking locations.
 */


#include "ngx_http_adserve.h"


static void ngx_http_adserve_requested_ahead(ngx_http_request_t *r, uint64_t hash,
    ngx_uint_t step);


/* The tagid of the request's path: what follows the location's prefix,
 * one path segment, with its hash; NGX_DECLINED without one. Found once a
 * request: the rewrite phase fetches the unit's slot ahead by it, and the
 * content handler looks the unit up (a hash is a multiply per byte, one
 * after another: 50 ns for a UUID). Found again if the path has changed
 * since: a `rewrite ... break` of the location, after this module's
 * rewrite handler, gives r->uri a new string. */
static ngx_int_t
ngx_http_adserve_tagid(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx)
{
    ngx_http_core_loc_conf_t  *clcf;
    u_char                    *id;
    size_t                     len;

    if (ctx->tagid_uri.data == r->uri.data && ctx->tagid_uri.len == r->uri.len) {
        return ctx->tagid != NULL ? NGX_OK : NGX_DECLINED;
    }

    ctx->tagid_uri = r->uri;
    ctx->tagid = NULL;

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    if (r->uri.len <= clcf->name.len) {
        return NGX_DECLINED;
    }

    id = r->uri.data + clcf->name.len;
    len = r->uri.len - clcf->name.len;

    if (memchr(id, '/', len) != NULL) {
        return NGX_DECLINED;
    }

    ctx->tagid = id;
    ctx->tagid_len = len;
    ctx->tagid_hash = adserve_hash((char *) id, len);

    return NGX_OK;
}


/* The request's context, made at its first need: the rewrite phase of an
 * ad request, or its handler. Only a main request's is ever made early: a
 * subrequest's slot may hold another struct of the module's (an outbound
 * call's, ngx_http_adserve_auction.c), never taken for this one. */
static ngx_http_adserve_ctx_t *
ngx_http_adserve_ctx(ngx_http_request_t *r)
{
    ngx_http_adserve_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_adserve_module);
    if (ctx != NULL && r == r->main) {
        return ctx;
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_adserve_ctx_t));
    if (ctx == NULL) {
        return NULL;
    }

    ctx->request = r;
    ngx_http_set_ctx(r, ctx, ngx_http_adserve_module);

    return ctx;
}


/* The unit's index slot fetched ahead, from the rewrite phase: its miss
 * overlaps the phases before the content handler looks the unit up
 * (limit_req's own lookup among them). */
void
ngx_http_adserve_unit_ahead(ngx_http_request_t *r)
{
    ngx_http_adserve_loader_t  *ld = ngx_http_adserve_loader(r);
    ngx_http_adserve_ctx_t     *ctx;

    if (ld == NULL) {
        return;
    }

    ctx = ngx_http_adserve_ctx(r);

    if (ctx != NULL && ngx_http_adserve_tagid(r, ctx) == NGX_OK) {
        adserve_snapshot_unit_prefetch(ld->snapshot, ctx->tagid_hash);
    }
}


/* The ad unit named by the path, if it is ACTIVE in the current snapshot.
 * The answer is kept for as long as the snapshot it came from serves. */
const adserve_unit_t *
ngx_http_adserve_unit(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx)
{
    ngx_http_adserve_loader_t  *ld;

    ld = ngx_http_adserve_loader(r);

    if (ld == NULL) {
        return NULL;
    }

    /* the count of swaps, not the snapshot's address: a new snapshot may
     * well be allocated where the old one was */
    if (ctx->unit != NULL && ctx->loads == ld->loads) {
        return ctx->unit;
    }

    /* a request starts on the node's latest snapshot, not on the one of
     * the worker's last tick (up to adserve_refresh older); a worker still
     * waiting for its first one leaves that to the tick, which resumes
     * the requests parked meanwhile, as does one short of memory for the
     * last one (not a try and a log line per request) */
    if (ctx->unit == NULL && !ld->warming && !ld->adopt_failed) {
        ngx_http_adserve_loader_adopt(ld);
    }

    if (ngx_http_adserve_tagid(r, ctx) != NGX_OK) {
        return NULL;
    }

    ctx->unit = adserve_snapshot_unit_hashed(ld->snapshot, (char *) ctx->tagid,
                                             ctx->tagid_len, ctx->tagid_hash);
    ctx->loads = ld->loads;

    /* the unit's hash is its id's: its count is fetched ahead without
     * waiting for the unit's record */
    if (ctx->unit != NULL) {
        ngx_http_adserve_requested_ahead(r, ctx->tagid_hash, 0);
    }

    return ctx->unit;
}


/* The count of a request to the unit (its hash), fetched ahead in the two
 * steps of ngx_http_adserve_count_ahead: 0 once the unit is known, 1 before the
 * request's parse, which it is counted after. Its slot and then its
 * counter were two misses one after another, in the first count. (The
 * clock may be a test's: a prefetch of another hour's slot is wasted,
 * never wrong.) */
static void
ngx_http_adserve_requested_ahead(ngx_http_request_t *r, uint64_t hash, ngx_uint_t step)
{
    ngx_http_adserve_main_conf_t  *amcf;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    ngx_http_adserve_count_ahead(amcf->events, ngx_time(), ADSERVE_DIM_UNIT, hash, step);
}


/* The path each splice kind writes (adserve_vast.h), made once. */
static ngx_str_t  ngx_http_adserve_splice_paths[256];
static u_char     ngx_http_adserve_splice_text[256 * ADSERVE_SPLICE_PATH_MAX];


void
ngx_http_adserve_splice_init(void)
{
    ngx_uint_t  k;
    u_char     *p = ngx_http_adserve_splice_text;

    for (k = 0; k < 256; k++) {
        ngx_http_adserve_splice_paths[k].data = p;
        ngx_http_adserve_splice_paths[k].len = adserve_splice_path((int) k, (char *) p);
        p += ADSERVE_SPLICE_PATH_MAX;
    }
}


const ngx_str_t *
ngx_http_adserve_splice_path(ngx_uint_t kind)
{
    return &ngx_http_adserve_splice_paths[kind & 0xff];
}


/* The rendered text with each splice filled: the base, the splice's path,
 * the token. bases[1] is for splices in JSON text (ADSERVE_SPLICE_JSON),
 * bases[0] for the others. */
u_char *
ngx_http_adserve_splice(u_char *p, const u_char *text, size_t len,
    const adserve_str_t bases[2], const u_char *tok, size_t n)
{
    const u_char         *end = text + len, *m;
    const adserve_str_t  *base;
    ngx_str_t            *path;

    /* memchr, not ngx_strlchr: glibc's looks at many bytes at a time, and
     * a VAST is some 3 KB between its 12 splices */
    while ((m = memchr(text, ADSERVE_SPLICE, end - text)) != NULL && m + 1 < end) {
        path = &ngx_http_adserve_splice_paths[m[1]];
        base = &bases[(m[1] & ADSERVE_SPLICE_JSON) != 0];
        p = ngx_cpymem(p, text, m - text);
        p = ngx_cpymem(p, base->data, base->len);
        p = ngx_cpymem(p, path->data, path->len);
        p = ngx_cpymem(p, tok, n);
        text = m + 2;
    }

    return ngx_cpymem(p, text, end - text);
}


/* Seals the ad_log of serving c on unit into tok (ADSERVE_TOKEN_MAX
 * bytes): its length, or 0. */
static size_t
ngx_http_adserve_seal(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, const adserve_cand_t *c, adserve_ad_log_t *log,
    u_char *tok)
{
    ngx_http_adserve_main_conf_t  *amcf;
    const adserve_li_t            *li;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    li = &amcf->loader->snapshot->lis[c->li];

    log->issued = ctx->now;
    log->price_micros = c->bid_micros;
    log->cost_type = li->cost_type;
    log->ad_unit.data = unit->id;
    log->ad_unit.len = unit->id_len;
    log->line_item = li->id;
    log->creative = c->creative_id;
    log->user = ctx->req.user_id;
    if (log->user.data == NULL) {
        log->user.len = 0;
    }
    ngx_http_adserve_seal_variant(log, unit);

    return ngx_http_adserve_encode(r, log, tok);
}


void
ngx_http_adserve_seal_variant(adserve_ad_log_t *log, const adserve_unit_t *unit)
{
    /* direct demand's and a recommendation's: no external win */
    log->source.data = NULL;
    log->source.len = 0;
    log->burl = log->source;

    if (unit->variant != NULL) {
        log->variant = unit->variant->id;

    } else {
        log->variant.data = NULL;
        log->variant.len = 0;
    }
}


void
ngx_http_adserve_count_variant(ngx_http_adserve_events_t *ev, time_t now,
    const adserve_unit_t *unit, ngx_http_adserve_metric_e m, ngx_uint_t n)
{
    if (unit->variant != NULL) {
        ngx_http_adserve_count(ev, now, ADSERVE_DIM_VARIANT, &unit->variant->id,
                               unit->variant->hash, m, n);
    }
}


size_t
ngx_http_adserve_encode(ngx_http_request_t *r, adserve_ad_log_t *log, u_char *tok)
{
    ngx_http_adserve_main_conf_t  *amcf;
    size_t                         n;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    n = adserve_token_encode(amcf->tokens, log, (char *) tok);
    if (n == 0) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      NGX_HTTP_ADSERVE_LOG "ad_log token could not be sealed");
    }

    return n;
}


/* What serving c costs once its answer is made: the counts. (A capped
 * line item's ad was reserved before it; an impression recorded with the
 * answer is a recommendation placement's: ngx_http_adserve_answer_rec.) */
static void
ngx_http_adserve_served(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, const adserve_cand_t *c)
{
    ngx_http_adserve_main_conf_t  *amcf;
    const adserve_li_t            *li;
    time_t                         now = ctx->now;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    li = &amcf->loader->snapshot->lis[c->li];

    ngx_http_adserve_tally->ads[c->format]++;

    ngx_http_adserve_count(amcf->events, now, ADSERVE_DIM_UNIT,
                           &(adserve_str_t) { unit->id, unit->id_len }, unit->hash,
                           NGX_HTTP_ADSERVE_M_ADS, 1);
    ngx_http_adserve_count_variant(amcf->events, now, unit, NGX_HTTP_ADSERVE_M_ADS, 1);
    ngx_http_adserve_count(amcf->events, now, ADSERVE_DIM_LINE_ITEM,
                           &li->id, li->hash, NGX_HTTP_ADSERVE_M_ADS, 1);
    ngx_http_adserve_count(amcf->events, now, ADSERVE_DIM_CREATIVE,
                           &c->creative_id, c->creative_hash, NGX_HTTP_ADSERVE_M_ADS, 1);
}


/* The counts ngx_http_adserve_served will make of c, fetched ahead: step
 * 0 before the seal, step 1 after it (ngx_http_adserve_count_ahead). The
 * unit's own counter is warm: its request was counted. */
static void
ngx_http_adserve_served_ahead(ngx_http_request_t *r, const adserve_cand_t *c,
    time_t now, ngx_uint_t step)
{
    ngx_http_adserve_main_conf_t  *amcf;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    ngx_http_adserve_count_ahead(amcf->events, now, ADSERVE_DIM_LINE_ITEM,
                                 amcf->loader->snapshot->lis[c->li].hash, step);
    ngx_http_adserve_count_ahead(amcf->events, now, ADSERVE_DIM_CREATIVE,
                                 c->creative_hash, step);
}


size_t
ngx_http_adserve_ad_tail_len(const adserve_unit_t *unit, size_t n)
{
    return unit->impression_prefix.len + unit->click_prefix.len + 3 * n
           + sizeof(ADSERVE_RESPONSE_MIDDLE ADSERVE_RESPONSE_TAIL) - 1;
}


u_char *
ngx_http_adserve_ad_tail(u_char *p, const adserve_unit_t *unit, const u_char *tok, size_t n)
{
    p = ngx_cpymem(p, unit->impression_prefix.data, unit->impression_prefix.len);
    p = ngx_cpymem(p, tok, n);
    p = ngx_cpymem(p, unit->click_prefix.data, unit->click_prefix.len);
    p = ngx_cpymem(p, tok, n);
    p = ngx_cpymem(p, ADSERVE_RESPONSE_MIDDLE, sizeof(ADSERVE_RESPONSE_MIDDLE) - 1);
    p = ngx_cpymem(p, tok, n);

    return ngx_cpymem(p, ADSERVE_RESPONSE_TAIL, sizeof(ADSERVE_RESPONSE_TAIL) - 1);
}


/* Copies the rendered response around a fresh ad_log token: the body is
 * the creative's head (a video's or a native ad's with its splices
 * filled), the unit's impression URL, the token, the unit's click URL, the
 * token, and the token again as ext.ad_log. The token is sealed first, so
 * the body is sized with its real length: a size that a token's maximum
 * pushed past the pool's block cost a native ad 400 instructions more. */
static ngx_int_t
ngx_http_adserve_send_ad(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, const adserve_cand_t *c)
{
    adserve_ad_log_t  log;
    adserve_str_t     bases[2];
    u_char           *body, *p, tok[ADSERVE_TOKEN_MAX];
    size_t            n, room;
    ngx_int_t         rc;

    ngx_http_adserve_served_ahead(r, c, ctx->now, 0);

    n = ngx_http_adserve_seal(r, ctx, unit, c, &log, tok);
    if (n == 0) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_http_adserve_served_ahead(r, c, ctx->now, 1);

    bases[0] = unit->vast_base_json;
    bases[1] = unit->url_base_json;
    room = c->splices * (ngx_max(bases[0].len, bases[1].len) + ADSERVE_SPLICE_PATH_MAX + n);

    body = ngx_pnalloc(r->pool, c->response_head_len + room
                                + ngx_http_adserve_ad_tail_len(unit, n));
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (c->splices == 0) {
        p = ngx_cpymem(body, c->response_head, c->response_head_len);

    } else {
        p = ngx_http_adserve_splice(body, (const u_char *) c->response_head,
                                    c->response_head_len, bases, tok, n);
    }

    p = ngx_http_adserve_ad_tail(p, unit, tok, n);

    rc = ngx_http_adserve_send(r, NGX_HTTP_OK, body, p - body);

    ngx_http_adserve_served(r, ctx, unit, c);

    return rc;
}


/* The VAST of serving c: the creative's document, its splices filled with
 * the unit's base URL and a fresh ad_log. */
static ngx_int_t
ngx_http_adserve_send_vast(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, const adserve_cand_t *c, const adserve_creative_t *cr)
{
    adserve_ad_log_t  log;
    adserve_str_t     bases[2];
    u_char           *body, *p, tok[ADSERVE_TOKEN_MAX];
    size_t            n;
    ngx_int_t         rc;

    ngx_http_adserve_served_ahead(r, c, ctx->now, 0);

    n = ngx_http_adserve_seal(r, ctx, unit, c, &log, tok);
    if (n == 0) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_http_adserve_served_ahead(r, c, ctx->now, 1);

    bases[0] = unit->vast_base;
    bases[1] = unit->vast_base;          /* a VAST is XML throughout */

    body = ngx_pnalloc(r->pool, cr->vast.len
                                + cr->splices * (unit->vast_base.len
                                                 + ADSERVE_SPLICE_PATH_MAX + n));
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_http_adserve_splice(body, (const u_char *) cr->vast.data, cr->vast.len,
                                bases, tok, n);

    rc = ngx_http_adserve_send_xml(r, body, p - body);

    ngx_http_adserve_served(r, ctx, unit, c);

    return rc;
}


static ngx_int_t
ngx_http_adserve_park(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx)
{
    ngx_http_adserve_loader_t  *ld = ngx_http_adserve_loader(r);

    if (ld == NULL || !ld->warming) {
        return NGX_DECLINED;
    }

    ngx_http_adserve_loader_wait(ld, &ctx->queue);

    return NGX_AGAIN;
}


static ngx_int_t ngx_http_adserve_finish(ngx_http_request_t *r);


/*
 * Exact caps: c, of a capped line item, is answered only once Redis has
 * reserved its ad (ngx_http_adserve_caps_reserve). NGX_OK: c may go (its
 * line item is uncapped, or reserved for this request); NGX_AGAIN: the
 * reservation is under way, and the decision is made again when it ends;
 * NGX_DECLINED: no reservation can be had, and capped line items do not
 * serve.
 */
static ngx_int_t
ngx_http_adserve_reserve(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_snapshot_t *s, const adserve_cand_t *c)
{
    const adserve_li_t  *li = &s->lis[c->li];
    ngx_uint_t           i;

    if (li->ncaps == 0) {
        return NGX_OK;
    }

    for (i = 0; i < ctx->ngranted; i++) {
        if (ctx->granted[i] == li->hash) {
            return NGX_OK;
        }
    }

    if (ctx->reservations == NGX_HTTP_ADSERVE_RESERVE_MAX) {
        return NGX_DECLINED;
    }

    ctx->reservations++;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   NGX_HTTP_ADSERVE_LOG "reserving an ad of capped line item %*s (%uD)",
                   li->id.len, li->id.data, ctx->reservations);

    return ngx_http_adserve_caps_reserve(r, ctx, li, s->max_cap_seconds,
                                         ngx_http_adserve_finish) == NGX_AGAIN
           ? NGX_AGAIN : NGX_DECLINED;
}


/*
 * The decision, its capped choice reserved: the candidate to answer with,
 * NULL for none, or NGX_AGAIN in *rc while a reservation is under way.
 * Where a capped line item may win, the decision is dry until it is final
 * (pacing counts an opportunity and an ad once a request, not once a
 * reservation), then made again to count: the same inputs, the same seed
 * and nothing run in between, so the same decision.
 */
static const adserve_cand_t *
ngx_http_adserve_choose(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, adserve_decision_t *d, ngx_int_t *rc)
{
    ngx_http_adserve_main_conf_t  *amcf;
    const adserve_cand_t          *c;
    adserve_snapshot_t            *s;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    s = amcf->loader->snapshot;

    *rc = NGX_OK;
    d->dry = (unit->max_cap_seconds != 0 && d->caps_known);

    for ( ;; ) {
        d->rnd = ctx->rnd;
        c = adserve_decide(s, unit, d);

        if (c != NULL) {
            *rc = ngx_http_adserve_reserve(r, ctx, s, c);
            if (*rc == NGX_AGAIN) {
                return NULL;
            }

            if (*rc == NGX_DECLINED) {
                /* as when the user's caps are unknown: uncapped demand
                 * (and what was reserved) only */
                d->caps_known = 0;
                continue;
            }
        }

        if (!d->dry) {
            return c;
        }

        d->dry = 0;
    }
}


/* Nothing filled a unit with a passback tag: its answer, rendered by the
 * build, counted as the unit's passback. Copied, since a slow client can
 * outlive the snapshot that holds it. */
static ngx_int_t
ngx_http_adserve_send_passback(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit)
{
    ngx_http_adserve_main_conf_t  *amcf;
    u_char                        *body;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    body = ngx_pnalloc(r->pool, unit->passback.len);
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    ngx_memcpy(body, unit->passback.data, unit->passback.len);

    ngx_http_adserve_count(amcf->events, ctx->now, ADSERVE_DIM_UNIT,
                           &(adserve_str_t) { unit->id, unit->id_len }, unit->hash,
                           NGX_HTTP_ADSERVE_M_PASSBACKS, 1);
    ngx_http_adserve_count_variant(amcf->events, ctx->now, unit,
                                   NGX_HTTP_ADSERVE_M_PASSBACKS, 1);

    return ngx_http_adserve_send(r, NGX_HTTP_OK, body, unit->passback.len);
}


/* Whether a bid at price (CPM) beats direct demand's choice c (NULL: none):
 * SPONSORSHIP and STANDARD always win, PRICE_PRIORITY competes on eCPM
 * (a tie keeps the direct ad), and HOUSE loses to any bid above the
 * floor (the auction kept only those). */
static ngx_uint_t
ngx_http_adserve_bid_beats(ngx_http_request_t *r, const adserve_cand_t *c,
    adserve_decision_t *d, double price)
{
    ngx_http_adserve_main_conf_t  *amcf;
    const adserve_li_t            *li;

    if (price < 0) {
        return 0;
    }

    if (c == NULL) {
        return 1;
    }

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    li = &amcf->loader->snapshot->lis[c->li];

    switch (li->tier) {
    case ADSERVE_TIER_PRICE_PRIORITY:
        return price > c->bid * d->paces[c->li].factor;
    case ADSERVE_TIER_HOUSE:
        return 1;
    default:
        return 0;
    }
}


/*
 * External demand, for a unit with allocations: the direct choice is
 * made dry (nothing counted, nothing reserved); unless a SPONSORSHIP or
 * STANDARD line item would serve, the sources are asked (NGX_AGAIN: this
 * answer runs again once their bids are in). Then the best bid's price,
 * or -1 in *price; NGX_OK when the bid beats the direct choice and is
 * served without reserving a capped line item's ad for nothing.
 */
static ngx_int_t
ngx_http_adserve_external(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, adserve_decision_t *d, double *price)
{
    ngx_http_adserve_main_conf_t  *amcf;
    const adserve_cand_t          *c;
    adserve_decision_t             dry;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    *price = -1;
    if (unit->nallocs == 0) {
        return NGX_DECLINED;
    }

    dry = *d;
    dry.dry = 1;
    c = adserve_decide(amcf->loader->snapshot, unit, &dry);

    if (ctx->auction == NULL) {
        if (c != NULL && amcf->loader->snapshot->lis[c->li].tier < ADSERVE_TIER_PRICE_PRIORITY) {
            return NGX_DECLINED;
        }

        if (ngx_http_adserve_auction_start(r, ctx, unit) == NGX_AGAIN) {
            return NGX_AGAIN;
        }
    }

    *price = ngx_http_adserve_auction_best(r, ctx, unit);

    return ngx_http_adserve_bid_beats(r, c, d, *price) ? NGX_OK : NGX_DECLINED;
}


/* The ad, a bid or 204: serving's answer (ctx->answer). */
static ngx_int_t
ngx_http_adserve_answer_ad(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, adserve_decision_t *d)
{
    ngx_http_adserve_main_conf_t  *amcf;
    const adserve_cand_t          *c;
    ngx_int_t                      rc;
    double                         price;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    if (unit->rec) {
        return ngx_http_adserve_answer_rec(r, ctx, unit, d);
    }

    rc = ngx_http_adserve_external(r, ctx, unit, d, &price);
    if (rc == NGX_AGAIN) {
        return NGX_AGAIN;
    }

    if (rc == NGX_OK) {
        return ngx_http_adserve_auction_send(r, ctx, unit);
    }

    c = ngx_http_adserve_choose(r, ctx, unit, d, &rc);
    if (rc == NGX_AGAIN) {
        return NGX_AGAIN;
    }

    /* the choice made for real may differ from the dry one (a cap
     * reservation refused): the bid may win after all */
    if (ngx_http_adserve_bid_beats(r, c, d, price)) {
        return ngx_http_adserve_auction_send(r, ctx, unit);
    }

    ngx_http_adserve_auction_lost(r, ctx);

    if (c == NULL) {
        ngx_http_adserve_tally->nobids[NGX_HTTP_ADSERVE_H_AD]++;
        return unit->passback.len ? ngx_http_adserve_send_passback(r, ctx, unit)
                                  : ngx_http_adserve_send(r, NGX_HTTP_NO_CONTENT, NULL, 0);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   NGX_HTTP_ADSERVE_LOG "line item %s, creative %s",
                   amcf->loader->snapshot->lis[c->li].id.data, c->creative_id.data);

    return ngx_http_adserve_send_ad(r, ctx, unit, c);
}


/* The VAST (a line item's, or a video bid's with our Impression), or the
 * empty document players take as no fill (ctx->answer of GET /app/v0/vast). */
static ngx_int_t
ngx_http_adserve_answer_vast(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, adserve_decision_t *d)
{
    static u_char                  none[] = "<VAST version=\"4.2\"/>";
    ngx_http_adserve_main_conf_t  *amcf;
    const adserve_creative_t      *cr;
    const adserve_cand_t          *c;
    adserve_snapshot_t            *s;
    ngx_int_t                      rc;
    double                         price;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    s = amcf->loader->snapshot;

    /* a recommendation unit serves no ad, a VAST included */
    d->video_only = 1;
    rc = NGX_OK;    /* a recommendation unit's: no choice made */
    price = -1;

    if (!unit->rec) {
        rc = ngx_http_adserve_external(r, ctx, unit, d, &price);
        if (rc == NGX_AGAIN) {
            return NGX_AGAIN;
        }

        if (rc == NGX_OK) {
            return ngx_http_adserve_auction_send(r, ctx, unit);
        }
    }

    c = unit->rec ? NULL : ngx_http_adserve_choose(r, ctx, unit, d, &rc);
    if (rc == NGX_AGAIN) {
        return NGX_AGAIN;
    }

    if (ngx_http_adserve_bid_beats(r, c, d, price)) {
        return ngx_http_adserve_auction_send(r, ctx, unit);
    }

    ngx_http_adserve_auction_lost(r, ctx);

    cr = c ? adserve_snapshot_creative(s, c->creative_id.data, c->creative_id.len)
           : NULL;

    if (cr == NULL || cr->vast.data == NULL) {
        ngx_http_adserve_tally->nobids[NGX_HTTP_ADSERVE_H_VAST]++;
        return ngx_http_adserve_send_xml(r, none, sizeof(none) - 1);
    }

    return ngx_http_adserve_send_vast(r, ctx, unit, c, cr);
}


/* The decision's inputs, once the user's frequency caps are known (or are
 * known to be unknown), handed to the request's answer. */
static ngx_int_t
ngx_http_adserve_finish(ngx_http_request_t *r)
{
    ngx_http_adserve_ctx_t        *ctx;
    const adserve_unit_t          *unit;
    adserve_decision_t             d;
    adserve_req_ctx_t              facts;

    ctx = ngx_http_get_module_ctx(r, ngx_http_adserve_module);

    /* again: the snapshot may have been swapped while caps were read */
    unit = ngx_http_adserve_unit(r, ctx);
    if (unit == NULL) {
        return NGX_HTTP_NOT_FOUND;
    }
    unit = adserve_unit_for_user(unit, ctx->req.user_id.data, ctx->req.user_id.len);

    adserve_req_ctx_init(&facts, &ctx->req);
    ngx_http_adserve_segments_facts(ctx, unit, &facts);

    ngx_memzero(&d, sizeof(adserve_decision_t));
    d.now = ctx->now;
    d.rnd = ctx->rnd;
    d.facts = &facts;
    d.paces = ngx_http_adserve_paces();
    d.seen = ctx->seen;
    d.nseen = ctx->nseen;
    d.refused = ctx->refused;
    d.nrefused = ctx->nrefused;
    d.granted = ctx->granted;
    d.ngranted = ctx->ngranted;
    /* a reservation that went unanswered: as if the caps were not read
     * (what was reserved may go all the same); and so when the snapshot
     * was swapped since they were read, since they name line items by
     * their index in the one before (rare: a write meanwhile) */
    d.caps_known = ctx->caps_known && (ctx->reservations == 0 || ctx->reserve_known);

    if (ctx->nseen && ctx->seen_loads != ctx->loads) {
        d.caps_known = 0;
        d.nseen = 0;
    }

    return ctx->answer(r, ctx, unit, &d);
}


/* A query argument, unescaped into the request's pool; NGX_DECLINED when
 * absent. */
static ngx_int_t
ngx_http_adserve_query_arg(ngx_http_request_t *r, const char *name, adserve_str_t *out)
{
    ngx_str_t   v;
    u_char     *dst, *src;

    if (ngx_http_arg(r, (u_char *) name, ngx_strlen(name), &v) != NGX_OK) {
        return NGX_DECLINED;
    }

    dst = ngx_pnalloc(r->pool, v.len + 1);
    if (dst == NULL) {
        return NGX_ERROR;
    }

    out->data = (const char *) dst;
    src = v.data;
    ngx_unescape_uri(&dst, &src, v.len, 0);     /* %XX; a + stays a + */
    out->len = dst - (u_char *) out->data;

    return NGX_OK;
}


/* A VAST request's facts: a player fetches a URL, it does not POST JSON.
 * uid is user.id, ua device.ua (the User-Agent header by default); over
 * the body's limits, each is ignored as it is in a body. */
static ngx_int_t
ngx_http_adserve_query_facts(ngx_http_request_t *r, adserve_ad_request_t *req)
{
    ngx_table_elt_t  *h = r->headers_in.user_agent;

    ngx_memzero(req, sizeof(adserve_ad_request_t));

    if (ngx_http_adserve_query_arg(r, "uid", &req->user_id) == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (req->user_id.len > ADSERVE_USER_ID_MAX) {
        req->user_id.data = NULL;
        req->user_id.len = 0;
    }

    switch (ngx_http_adserve_query_arg(r, "ua", &req->ua)) {
    case NGX_ERROR:
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    case NGX_DECLINED:
        if (h != NULL) {
            req->ua.data = (const char *) h->value.data;
            req->ua.len = h->value.len;
        }
        break;
    default:
        break;
    }

    if (req->ua.len > ADSERVE_UA_MAX) {
        req->ua.data = NULL;
        req->ua.len = 0;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_adserve_decide(ngx_http_request_t *r)
{
    ngx_http_adserve_main_conf_t  *amcf;
    const adserve_unit_t          *unit;
    ngx_http_adserve_ctx_t        *ctx;
    const char                    *err;
    size_t                         len, off;
    u_char                        *body;
    ngx_int_t                      rc;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    ctx = ngx_http_get_module_ctx(r, ngx_http_adserve_module);

    rc = ngx_http_adserve_park(r, ctx);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    /* again if the snapshot was swapped while the body was read */
    unit = ngx_http_adserve_unit(r, ctx);
    if (unit == NULL) {
        return NGX_HTTP_NOT_FOUND;
    }

    if (ctx->vast) {
        rc = ngx_http_adserve_query_facts(r, &ctx->req);
        if (rc != NGX_OK) {
            return rc;
        }

    } else {
        rc = ngx_http_adserve_body(r, &body, &len);
        if (rc != NGX_OK) {
            return rc;
        }

        ngx_http_adserve_requested_ahead(r, unit->hash, 1);

        if (adserve_json_parse_ad_request((char *) body, len, &ctx->req, &err, &off)
            != 0)
        {
            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          NGX_HTTP_ADSERVE_LOG "malformed ad request at byte %uz: %s", off, err);
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    /* the unit's candidates came in during the parse: their line items
     * and paces now, to come in during the counts and checks below */
    adserve_decide_ahead(amcf->loader->snapshot, unit, ngx_http_adserve_paces());

    ctx->now = ngx_http_adserve_now(r);
    ctx->rnd = (uint32_t) ngx_random();
    ctx->finish = ngx_http_adserve_finish;

    /* an experiment's variant is the unit this user is served */
    unit = adserve_unit_for_user(unit, ctx->req.user_id.data, ctx->req.user_id.len);

    if (!ctx->explain) {
        ngx_http_adserve_count(amcf->events, ctx->now, ADSERVE_DIM_UNIT,
                               &(adserve_str_t) { unit->id, unit->id_len }, unit->hash,
                               NGX_HTTP_ADSERVE_M_REQUESTS, 1);
        ngx_http_adserve_count_variant(amcf->events, ctx->now, unit,
                                       NGX_HTTP_ADSERVE_M_REQUESTS, 1);
    }

    /* a unit with capped or segment-targeted line items needs what this
     * user has seen and is: one async read with a deadline; without a user
     * id caps stay unknown (capped line items do not serve) and the user is
     * in no segment */
    if ((unit->max_cap_seconds || unit->nsegments) && ctx->req.user_id.len) {
        rc = ngx_http_adserve_user_state_read(r, ctx, unit, ngx_http_adserve_finish);
        if (rc == NGX_AGAIN) {
            return NGX_AGAIN;
        }
    }

    /* and a recommendation that filters what the user saw, their history */
    if (unit->rec && unit->filtering != ADSERVE_FILTERING_NONE && !ctx->vast) {
        rc = ngx_http_adserve_history_read(r, ctx, ngx_http_adserve_finish);
        if (rc == NGX_AGAIN) {
            return NGX_AGAIN;
        }
    }

    return ngx_http_adserve_finish(r);
}


static void
ngx_http_adserve_body_handler(ngx_http_request_t *r)
{
    ngx_int_t  rc;

    rc = ngx_http_adserve_decide(r);

    /* parked: the request stays open until the loader resumes it, or the
     * caps reply (or its deadline) finishes it */
    if (rc != NGX_AGAIN) {
        ngx_http_finalize_request(r, rc);
    }
}


/* called by the loader, outside any request's event */
void
ngx_http_adserve_resume(ngx_queue_t *q)
{
    ngx_http_adserve_ctx_t  *ctx;
    ngx_connection_t        *c;
    ngx_int_t                rc;

    ctx = ngx_queue_data(q, ngx_http_adserve_ctx_t, queue);
    c = ctx->request->connection;

    rc = ngx_http_adserve_decide(ctx->request);
    if (rc != NGX_AGAIN) {
        ngx_http_finalize_request(ctx->request, rc);
    }

    ngx_http_run_posted_requests(c);
}


ngx_int_t
ngx_http_adserve_start(ngx_http_request_t *r, ngx_http_adserve_answer_pt answer)
{
    ngx_http_adserve_loader_t  *ld = ngx_http_adserve_loader(r);
    ngx_http_adserve_ctx_t     *ctx;
    ngx_int_t                   rc;

    if (!(r->method & NGX_HTTP_POST)) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    ctx = ngx_http_adserve_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->answer = answer ? answer : ngx_http_adserve_answer_ad;
    ctx->explain = (answer != NULL);

    /* unknown or inactive: 404 at once, the body is discarded unread;
     * a worker still warming up cannot know yet */
    if (ngx_http_adserve_unit(r, ctx) == NULL && (ld == NULL || !ld->warming)) {
        return NGX_HTTP_NOT_FOUND;
    }

    r->request_body_in_single_buf = 1;

    rc = ngx_http_read_client_request_body(r, ngx_http_adserve_body_handler);
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


/* The CORS preflight of an adserve_ad or adserve_event location, for any
 * path: 204 with the location's add_header lines. In the rewrite phase, where a `return
 * 204` in the location would answer it: before limit_req, which does not
 * count preflights. An ad request's unit slot is fetched ahead here
 * (ngx_http_adserve_unit_ahead). */
ngx_int_t
ngx_http_adserve_preflight_handler(ngx_http_request_t *r)
{
    static ngx_str_t           ad_methods = ngx_string("POST, OPTIONS");
    static ngx_str_t           event_methods = ngx_string("GET, POST, OPTIONS");
    ngx_http_core_loc_conf_t  *clcf;
    ngx_str_t                 *methods;
    ngx_int_t                  rc;
    ngx_uint_t                 h;

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    if (clcf->handler == ngx_http_adserve_ad_handler) {
        h = NGX_HTTP_ADSERVE_H_AD;
    } else if (clcf->handler == ngx_http_adserve_vast_handler) {
        h = NGX_HTTP_ADSERVE_H_VAST;
    } else if (clcf->handler == ngx_http_adserve_track_handler) {
        h = NGX_HTTP_ADSERVE_H_EVENT;
    } else if (clcf->handler == ngx_http_adserve_explain_handler) {
        h = NGX_HTTP_ADSERVE_H_EXPLAIN;
    } else {
        return NGX_DECLINED;
    }

    /* the request counts in /metrics as this location's, whatever answers
     * it from here: the handler, limit_req, an error page's location */
    ngx_http_adserve_metrics_mark(r, h);

    if (r->method != NGX_HTTP_OPTIONS) {
        if (h == NGX_HTTP_ADSERVE_H_AD && r->method == NGX_HTTP_POST && r == r->main) {
            ngx_http_adserve_unit_ahead(r);
        }

        return NGX_DECLINED;
    }

    if (h == NGX_HTTP_ADSERVE_H_AD) {
        methods = &ad_methods;

    } else if (h == NGX_HTTP_ADSERVE_H_EVENT) {
        methods = &event_methods;

    } else {
        return NGX_DECLINED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    /* what only a preflight needs: every ad response is spared them */
    if (ngx_http_adserve_header(r, "Access-Control-Allow-Methods", methods) == NULL
        || ngx_http_adserve_header(r, "Access-Control-Allow-Headers",
                                   &(ngx_str_t) ngx_string("Content-Type")) == NULL
        || ngx_http_adserve_header(r, "Access-Control-Max-Age",
                                   &(ngx_str_t) ngx_string("86400")) == NULL)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_adserve_send(r, NGX_HTTP_NO_CONTENT, NULL, 0);
}


ngx_int_t
ngx_http_adserve_ad_handler(ngx_http_request_t *r)
{
    return ngx_http_adserve_start(r, NULL);
}


/* GET /app/v0/vast/{tagid}: the decision of POST /app/v0/ad among the
 * unit's videos, as the VAST a player reads. */
ngx_int_t
ngx_http_adserve_vast_handler(ngx_http_request_t *r)
{
    ngx_http_adserve_loader_t  *ld = ngx_http_adserve_loader(r);
    ngx_http_adserve_ctx_t     *ctx;
    ngx_int_t                   rc;

    rc = ngx_http_adserve_get_only(r);
    if (rc != NGX_OK) {
        return rc;
    }

    ctx = ngx_http_adserve_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->answer = ngx_http_adserve_answer_vast;
    ctx->vast = 1;

    if (ngx_http_adserve_unit(r, ctx) == NULL && (ld == NULL || !ld->warming)) {
        return NGX_HTTP_NOT_FOUND;
    }

    rc = ngx_http_adserve_decide(r);

    /* parked, or reading the user's caps: finalized when that ends */
    if (rc == NGX_AGAIN) {
        r->main->count++;
        return NGX_DONE;
    }

    return rc;
}
