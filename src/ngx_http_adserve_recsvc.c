
/*
 * A recommendation unit's target service (ext.target_service, README
 * "Recommendation"): an external recommender, called over HTTP through
 * nginx's own upstream machinery, with a deadline.
 *
 * The call is a subrequest to the location adserve_rec_services + name,
 * which the publisher configures (proxy_pass to the service, its
 * timeouts): GET ?item_id=&user_id=&context=&topn=, answered 200 with
 * {"items": ["item id", ...]}. It runs in the background and in memory:
 * the answer never waits for it beyond adserve_rec_timeout. When the
 * deadline passes first, the request is answered at once (its fallbacks
 * see a timeout) and the late reply is dropped; the request's pool lives
 * until the subrequest ends (nginx counts it), so the late reply finds
 * the context it was given and sees it was answered.
 *
 * What the service says is read with the kv grammar's parser
 * (adserve_kv_parse: bounded, allocation-free, fuzzed): the first
 * ADSERVE_KV_MAX_VALUES ids of "items".
 */


#include "ngx_http_adserve.h"


static ngx_int_t ngx_http_adserve_recsvc_done(ngx_http_request_t *sr, void *data,
    ngx_int_t rc);
static void ngx_http_adserve_recsvc_cleanup(void *data);
static void ngx_http_adserve_recsvc_timeout(ngx_event_t *ev);


/* "name=value&" with value escaped as a query argument */
static u_char *
ngx_http_adserve_recsvc_arg(u_char *p, const char *name, const adserve_str_t *v)
{
    p = ngx_cpymem(p, name, ngx_strlen(name));
    *p++ = '=';
    p = (u_char *) ngx_escape_uri(p, (u_char *) v->data, v->len, NGX_ESCAPE_ARGS);
    *p++ = '&';

    return p;
}


/* The query: the item viewed, the user, the context, how many. */
static ngx_int_t
ngx_http_adserve_recsvc_args(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, ngx_str_t *args)
{
    const adserve_str_t  *v[3] = { &ctx->req.item_id, &ctx->req.user_id, &ctx->req.context };
    size_t                len = sizeof("topn=") + NGX_INT_T_LEN;
    ngx_uint_t            i;
    u_char               *p;

    for (i = 0; i < 3; i++) {
        len += sizeof("context=&") + v[i]->len
               + 2 * ngx_escape_uri(NULL, (u_char *) v[i]->data, v[i]->len, NGX_ESCAPE_ARGS);
    }

    p = ngx_pnalloc(r->pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    args->data = p;
    p = ngx_http_adserve_recsvc_arg(p, "item_id", v[0]);
    p = ngx_http_adserve_recsvc_arg(p, "user_id", v[1]);
    p = ngx_http_adserve_recsvc_arg(p, "context", v[2]);
    p = ngx_sprintf(p, "topn=%ui", (ngx_uint_t) unit->topn);
    args->len = p - args->data;

    return NGX_OK;
}


ngx_int_t
ngx_http_adserve_recsvc_call(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_http_post_subrequest_t    *ps;
    ngx_http_request_t            *sr;
    ngx_pool_cleanup_t            *cln;
    ngx_str_t                      uri, args;
    u_char                        *p;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    uri.len = amcf->rec_services.len + unit->target_service.len;
    uri.data = ngx_pnalloc(r->pool, uri.len);
    ps = ngx_palloc(r->pool, sizeof(ngx_http_post_subrequest_t));
    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (uri.data == NULL || ps == NULL || cln == NULL
        || ngx_http_adserve_recsvc_args(r, ctx, unit, &args) != NGX_OK)
    {
        return NGX_ERROR;
    }

    p = ngx_cpymem(uri.data, amcf->rec_services.data, amcf->rec_services.len);
    ngx_memcpy(p, unit->target_service.data, unit->target_service.len);

    ps->handler = ngx_http_adserve_recsvc_done;
    ps->data = ctx;

    /* background: the answer is sent without waiting for it; in memory:
     * its body comes to ps->handler, not to the client */
    if (ngx_http_subrequest(r, &uri, &args, &sr, ps,
                            NGX_HTTP_SUBREQUEST_IN_MEMORY|NGX_HTTP_SUBREQUEST_BACKGROUND)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* a GET (ngx_http_subrequest's method): the ad request's body is not
     * the service's business */
    ngx_http_adserve_no_body(sr);

    cln->handler = ngx_http_adserve_recsvc_cleanup;
    cln->data = ctx;

    ctx->svc = NGX_HTTP_ADSERVE_SVC_WAITING;
    ctx->svc_timer.handler = ngx_http_adserve_recsvc_timeout;
    ctx->svc_timer.data = ctx;
    ctx->svc_timer.log = r->connection->log;
    ngx_add_timer(&ctx->svc_timer, amcf->rec_timeout);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   NGX_HTTP_ADSERVE_LOG "target service \"%V?%V\"", &uri, &args);

    return NGX_AGAIN;
}


/* The service's ids, from its 200 body, into ctx (the request's pool). */
static void
ngx_http_adserve_recsvc_read(ngx_http_request_t *sr, ngx_http_adserve_ctx_t *ctx)
{
    const adserve_kv_key_t  *k;
    adserve_kv_t            *kv;
    ngx_buf_t               *b;
    ngx_uint_t               i;
    u_char                  *body;
    size_t                   len;

    if (sr->headers_out.status != NGX_HTTP_OK || sr->out == NULL || sr->out->buf == NULL) {
        return;
    }

    b = sr->out->buf;
    len = b->last - b->pos;

    /* the parser unescapes in place: a copy in the main request's pool */
    body = ngx_pnalloc(ctx->request->pool, len + 1);
    kv = ngx_palloc(ctx->request->pool, sizeof(adserve_kv_t));
    ctx->svc_ids = ngx_palloc(ctx->request->pool, ADSERVE_KV_MAX_VALUES * sizeof(adserve_str_t));
    if (body == NULL || kv == NULL || ctx->svc_ids == NULL) {
        return;
    }

    ngx_memcpy(body, b->pos, len);

    /* an object is an answer, "items": [] or none an empty one */
    for (i = 0; i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r'
                            || body[i] == '\n'); i++)
    {
        /* void */
    }

    if (i == len || body[i] != '{') {
        return;
    }

    adserve_kv_parse((char *) body, len, kv);
    ctx->svc = NGX_HTTP_ADSERVE_SVC_ANSWERED;

    k = adserve_kv_find(kv, "items", sizeof("items") - 1);
    for (i = 0; k != NULL && i < k->n; i++) {
        ctx->svc_ids[i].data = kv->base + kv->values[k->first + i].off;
        ctx->svc_ids[i].len = kv->values[k->first + i].len;
    }

    ctx->nsvc_ids = k != NULL ? k->n : 0;
}


/* The subrequest ended (answered, failed, or timed out in nginx's own
 * proxy timeouts). Unless the deadline answered the request already, its
 * ids are read and the request is woken to answer. */
static ngx_int_t
ngx_http_adserve_recsvc_done(ngx_http_request_t *sr, void *data, ngx_int_t rc)
{
    ngx_http_adserve_ctx_t  *ctx = data;
    ngx_http_request_t      *r = ctx->request;

    if (ctx->svc != NGX_HTTP_ADSERVE_SVC_WAITING) {
        return rc;                      /* late: the answer went without it */
    }

    if (ctx->svc_timer.timer_set) {
        ngx_del_timer(&ctx->svc_timer);
    }

    ctx->svc = NGX_HTTP_ADSERVE_SVC_FAILED;
    ngx_http_adserve_recsvc_read(sr, ctx);

    if (ctx->svc == NGX_HTTP_ADSERVE_SVC_FAILED) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      NGX_HTTP_ADSERVE_LOG "target service \"%V\" answered %i, no object: "
                      "recommending as on a timeout", &sr->uri,
                      sr->headers_out.status ? (ngx_int_t) sr->headers_out.status : rc);
    }

    /* a background subrequest does not wake its parent: this does */
    r->write_event_handler = ngx_http_adserve_finish_posted;

    if (ngx_http_post_request(r, NULL) != NGX_OK) {
        return NGX_ERROR;
    }

    return rc;
}


static void
ngx_http_adserve_recsvc_timeout(ngx_event_t *ev)
{
    ngx_http_adserve_ctx_t  *ctx = ev->data;
    ngx_http_request_t      *r = ctx->request;
    ngx_connection_t        *c = r->connection;

    ngx_log_error(NGX_LOG_INFO, c->log, 0,
                  NGX_HTTP_ADSERVE_LOG "target service not answered in time, recommending "
                  "as on a timeout");

    ctx->svc = NGX_HTTP_ADSERVE_SVC_TIMED_OUT;
    ngx_http_adserve_finish_posted(r);
    ngx_http_run_posted_requests(c);
}


/* the request ended some other way (a worker exiting, the client gone):
 * its deadline must not fire into a freed pool */
static void
ngx_http_adserve_recsvc_cleanup(void *data)
{
    ngx_http_adserve_ctx_t  *ctx = data;

    if (ctx->svc_timer.timer_set) {
        ngx_del_timer(&ctx->svc_timer);
    }

    ctx->svc = NGX_HTTP_ADSERVE_SVC_FAILED;
}
