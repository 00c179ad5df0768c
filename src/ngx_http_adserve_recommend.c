/*
 * Recommendation serving (README "Recommendation"): an ad unit with
 * ext.recommendation.enabled answers POST /app/v0/ad/{tagid} with up to
 * its topn catalog items, in place of an ad.
 *
 * axa0, the default algorithm: the associated items pool of the item the
 * request names (ext.item_id), in its rank. Everything was resolved by the
 * snapshot build (the pool's ids to catalog items, each item's part of the
 * answer rendered): a request looks the pool up and copies.
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
#define NGX_HTTP_ADSERVE_ITEM_SOURCE  "\",\"source\":\""
#define NGX_HTTP_ADSERVE_ITEMS_END    "]}"


/* The items of the answer: the pool of the request's item, topn at most;
 * their number, 0 for none. */
static ngx_uint_t
ngx_http_adserve_rec_items(const adserve_snapshot_t *s, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, const adserve_pool_t **pool)
{
    const adserve_str_t  *item = &ctx->req.item_id;

    *pool = item->data ? adserve_snapshot_pool(s, item->data, item->len) : NULL;

    return *pool ? ngx_min((*pool)->n, (ngx_uint_t) unit->topn) : 0;
}


/* The bytes the answer takes with n items of pool and a token of tn. */
static size_t
ngx_http_adserve_rec_size(const adserve_snapshot_t *s, const adserve_unit_t *unit,
    const adserve_pool_t *pool, ngx_uint_t n, size_t tn, size_t source)
{
    const adserve_item_t  *it;
    ngx_uint_t             i;
    size_t                 len;

    len = unit->rec_head.len + sizeof(NGX_HTTP_ADSERVE_ITEMS_END)
          + unit->impression_prefix.len + unit->click_prefix.len + 3 * tn
          + sizeof(NGX_HTTP_ADSERVE_ITEM_ARG) + ADSERVE_ITEM_ID_MAX
          + sizeof(ADSERVE_RESPONSE_MIDDLE ADSERVE_RESPONSE_TAIL);

    for (i = 0; i < n; i++) {
        it = &s->items[pool->items[i]];
        len += 1 + it->head.len + sizeof(NGX_HTTP_ADSERVE_ITEM_CLICK)
               + unit->url_base_json.len + sizeof(ADSERVE_CLICK_PATH) + tn
               + sizeof(NGX_HTTP_ADSERVE_ITEM_ARG) + it->id.len
               + sizeof(NGX_HTTP_ADSERVE_ITEM_SOURCE) + source + 2;
    }

    return len;
}


/* One item: its rendered part, its own click URL, its source. */
static u_char *
ngx_http_adserve_rec_item(u_char *p, const adserve_unit_t *unit, const adserve_item_t *it,
    const u_char *tok, size_t tn, const char *source, size_t slen)
{
    p = ngx_cpymem(p, it->head.data, it->head.len);
    p = ngx_cpymem(p, NGX_HTTP_ADSERVE_ITEM_CLICK, sizeof(NGX_HTTP_ADSERVE_ITEM_CLICK) - 1);
    p = ngx_cpymem(p, unit->url_base_json.data, unit->url_base_json.len);
    p = ngx_cpymem(p, ADSERVE_CLICK_PATH, sizeof(ADSERVE_CLICK_PATH) - 1);
    p = ngx_cpymem(p, tok, tn);
    /* item ids are of ADSERVE_ITEM_ID_CHARS: safe in a query and in JSON */
    p = ngx_cpymem(p, NGX_HTTP_ADSERVE_ITEM_ARG, sizeof(NGX_HTTP_ADSERVE_ITEM_ARG) - 1);
    p = ngx_cpymem(p, it->id.data, it->id.len);
    p = ngx_cpymem(p, NGX_HTTP_ADSERVE_ITEM_SOURCE, sizeof(NGX_HTTP_ADSERVE_ITEM_SOURCE) - 1);
    p = ngx_cpymem(p, source, slen);
    *p++ = '"';
    *p++ = '}';

    return p;
}


ngx_int_t
ngx_http_adserve_answer_rec(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit)
{
    ngx_http_adserve_main_conf_t  *amcf;
    const adserve_snapshot_t      *s;
    const adserve_pool_t          *pool;
    const adserve_item_t          *first;
    const char                    *source;
    adserve_ad_log_t               log;
    u_char                        *body, *p, tok[ADSERVE_TOKEN_MAX];
    ngx_uint_t                     i, n;
    size_t                         tn, slen;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    s = amcf->loader->snapshot;

    n = ngx_http_adserve_rec_items(s, ctx, unit, &pool);
    if (n == 0) {
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

    tn = ngx_http_adserve_encode(r, &log, tok);
    if (tn == 0) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    source = adserve_rec_source_names[ADSERVE_SOURCE_ALGORITHM];
    slen = ngx_strlen(source);

    body = ngx_pnalloc(r->pool, ngx_http_adserve_rec_size(s, unit, pool, n, tn, slen));
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_cpymem(body, unit->rec_head.data, unit->rec_head.len);

    for (i = 0; i < n; i++) {
        if (i > 0) {
            *p++ = ',';
        }
        p = ngx_http_adserve_rec_item(p, unit, &s->items[pool->items[i]], tok, tn,
                                      source, slen);
    }

    /* the answer's own URLs: the impression, and the click of its first
     * item (a recommendation's click names the item it lands on) */
    first = &s->items[pool->items[0]];
    p = ngx_cpymem(p, NGX_HTTP_ADSERVE_ITEMS_END, sizeof(NGX_HTTP_ADSERVE_ITEMS_END) - 1);
    p = ngx_cpymem(p, unit->impression_prefix.data, unit->impression_prefix.len);
    p = ngx_cpymem(p, tok, tn);
    p = ngx_cpymem(p, unit->click_prefix.data, unit->click_prefix.len);
    p = ngx_cpymem(p, tok, tn);
    p = ngx_cpymem(p, NGX_HTTP_ADSERVE_ITEM_ARG, sizeof(NGX_HTTP_ADSERVE_ITEM_ARG) - 1);
    p = ngx_cpymem(p, first->id.data, first->id.len);
    p = ngx_cpymem(p, ADSERVE_RESPONSE_MIDDLE, sizeof(ADSERVE_RESPONSE_MIDDLE) - 1);
    p = ngx_cpymem(p, tok, tn);
    p = ngx_cpymem(p, ADSERVE_RESPONSE_TAIL, sizeof(ADSERVE_RESPONSE_TAIL) - 1);

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   NGX_HTTP_ADSERVE_LOG "recommendation: %ui items of \"%*s\"", n,
                   ctx->req.item_id.len, ctx->req.item_id.data);

    ngx_http_adserve_count(amcf->events, ctx->now, ADSERVE_DIM_UNIT,
                           &(adserve_str_t) { unit->id, unit->id_len }, unit->hash,
                           NGX_HTTP_ADSERVE_M_ADS, 1);

    if (unit->impression_on_response) {
        (void) ngx_http_adserve_track(amcf->events, ADSERVE_EVENT_IMPRESSION, &log,
                                      ctx->now, 0);
    }

    return ngx_http_adserve_send(r, NGX_HTTP_OK, body, p - body);
}
