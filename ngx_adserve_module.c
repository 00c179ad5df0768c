
/*
 * adserve: an ad server inside nginx.
 *
 * POST /app/v0/ad/{tagid} is answered here, from a per-worker snapshot of
 * the inventory that src/ngx_http_adserve_loader.c keeps fresh from Redis.
 * A request never waits on Redis: it reads its body without blocking, looks
 * the ad unit up, picks a candidate, seals an ad_log token and copies out a
 * response that the snapshot build already rendered.
 *
 * Directives (main):  adserve_redis, adserve_redis_timeout, adserve_refresh,
 *                     adserve_ad_log_key, adserve_public_url,
 *                     adserve_flush_interval, adserve_pacing_interval,
 *                     adserve_cap_timeout, adserve_event_buffer,
 *                     adserve_event_stream_max, adserve_event_ttl,
 *                     adserve_conversion_ttl, adserve_test_clock
 * Directives (location): adserve_ad, adserve_event, adserve_status
 */


#include "ngx_http_adserve.h"

#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif




static ngx_int_t ngx_http_adserve_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_adserve_init_process(ngx_cycle_t *cycle);
static void ngx_http_adserve_exit_process(ngx_cycle_t *cycle);
static void *ngx_http_adserve_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_adserve_init_main_conf(ngx_conf_t *cf, void *conf);
static char *ngx_http_adserve_redis(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *ngx_http_adserve_ad(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *ngx_http_adserve_status(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_adserve_event(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_adserve_explain(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_adserve_ad_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_adserve_explain_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_adserve_explain_send(ngx_http_request_t *r,
    ngx_http_adserve_ctx_t *ctx, const adserve_unit_t *unit, adserve_decision_t *d);


static ngx_command_t  ngx_http_adserve_commands[] = {

    { ngx_string("adserve_redis"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_adserve_redis,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, redis),
      NULL },

    { ngx_string("adserve_redis_write"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_adserve_redis,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, redis_write),
      NULL },

    { ngx_string("adserve_redis_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, redis_timeout),
      NULL },

    { ngx_string("adserve_refresh"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, refresh),
      NULL },

    { ngx_string("adserve_ad_log_key"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, key_file),
      NULL },

    { ngx_string("adserve_public_url"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, public_url),
      NULL },

    { ngx_string("adserve_flush_interval"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, flush),
      NULL },

    { ngx_string("adserve_pacing_interval"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, pacing),
      NULL },

    { ngx_string("adserve_cap_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, cap_timeout),
      NULL },

    { ngx_string("adserve_event_buffer"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, event_buffer),
      NULL },

    { ngx_string("adserve_event_stream_max"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, stream_max),
      NULL },

    { ngx_string("adserve_event_ttl"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, event_ttl),
      NULL },

    { ngx_string("adserve_conversion_ttl"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, conversion_ttl),
      NULL },

    { ngx_string("adserve_test_clock"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, test_clock),
      NULL },

    { ngx_string("adserve_ad"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_adserve_ad,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("adserve_explain"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_adserve_explain,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("adserve_event"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_adserve_event,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("adserve_status"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_adserve_status,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_adserve_module_ctx = {
    NULL,                                  /* preconfiguration */
    ngx_http_adserve_init,                 /* postconfiguration */

    ngx_http_adserve_create_main_conf,     /* create main configuration */
    ngx_http_adserve_init_main_conf,       /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_adserve_module = {
    NGX_MODULE_V1,
    &ngx_http_adserve_module_ctx,          /* module context */
    ngx_http_adserve_commands,             /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_adserve_init_process,         /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_adserve_exit_process,         /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_str_t  ngx_http_adserve_json_type = ngx_string("application/json");


/* ---- the clock --------------------------------------------------------- */

static ngx_str_t  ngx_http_adserve_clock_header = ngx_string("X-Adserve-Clock");

/* the latest test clock seen by this worker: what its timers go by */
static time_t  ngx_http_adserve_test_now;


time_t
ngx_http_adserve_now(ngx_http_request_t *r)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_list_part_t               *part;
    ngx_table_elt_t               *h;
    ngx_uint_t                     i;
    time_t                         t;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    if (!amcf->test_clock) {
        return ngx_time();
    }

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {
        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }
            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].key.len == ngx_http_adserve_clock_header.len
            && ngx_strncasecmp(h[i].key.data, ngx_http_adserve_clock_header.data,
                               h[i].key.len) == 0)
        {
            t = ngx_atotm(h[i].value.data, h[i].value.len);
            if (t != NGX_ERROR) {
                if (t > ngx_http_adserve_test_now) {
                    ngx_http_adserve_test_now = t;
                }
                return t;
            }
        }
    }

    return ngx_http_adserve_clock();
}


time_t
ngx_http_adserve_clock(void)
{
    return ngx_http_adserve_test_now ? ngx_http_adserve_test_now : ngx_time();
}


/* ---- serving ----------------------------------------------------------- */

static ngx_http_adserve_loader_t *
ngx_http_adserve_loader(ngx_http_request_t *r)
{
    ngx_http_adserve_main_conf_t  *amcf;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    return amcf->loader;
}


/* The ad unit named by the path, if it is ACTIVE in the current snapshot.
 * The tagid is what follows the location's prefix: one path segment. The
 * answer is kept for as long as the snapshot it came from serves. */
const adserve_unit_t *
ngx_http_adserve_unit(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx)
{
    ngx_http_core_loc_conf_t   *clcf;
    ngx_http_adserve_loader_t  *ld;
    u_char                     *id;
    size_t                      len;

    ld = ngx_http_adserve_loader(r);
    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    if (ld == NULL || r->uri.len <= clcf->name.len) {
        return NULL;
    }

    /* the count of swaps, not the snapshot's address: a new snapshot may
     * well be allocated where the old one was */
    if (ctx->unit != NULL && ctx->loads == ld->loads) {
        return ctx->unit;
    }

    id = r->uri.data + clcf->name.len;
    len = r->uri.len - clcf->name.len;

    if (ngx_strlchr(id, id + len, '/') != NULL) {
        return NULL;
    }

    ctx->unit = adserve_snapshot_unit(ld->snapshot, (char *) id, len);
    ctx->loads = ld->loads;

    return ctx->unit;
}


/* The body as one mutable buffer: the JSON scanner unescapes in place. */
ngx_int_t
ngx_http_adserve_body(ngx_http_request_t *r, u_char **start, size_t *len)
{
    ngx_http_request_body_t  *rb = r->request_body;
    ngx_chain_t              *cl;
    u_char                   *p;
    size_t                    n = 0;

    if (rb == NULL || rb->bufs == NULL) {
        *start = NULL;
        *len = 0;
        return NGX_OK;
    }

    if (rb->temp_file != NULL) {
        /* only when client_body_buffer_size < client_max_body_size */
        return NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
    }

    if (rb->bufs->next == NULL) {
        *start = rb->bufs->buf->pos;
        *len = rb->bufs->buf->last - rb->bufs->buf->pos;
        return NGX_OK;
    }

    for (cl = rb->bufs; cl; cl = cl->next) {
        n += cl->buf->last - cl->buf->pos;
    }

    p = ngx_pnalloc(r->pool, n);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    *start = p;
    *len = n;

    for (cl = rb->bufs; cl; cl = cl->next) {
        p = ngx_cpymem(p, cl->buf->pos, cl->buf->last - cl->buf->pos);
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_adserve_send(ngx_http_request_t *r, ngx_uint_t status, u_char *body,
    size_t len)
{
    ngx_buf_t    *b;
    ngx_chain_t   out;
    ngx_int_t     rc;

    r->headers_out.status = status;
    r->headers_out.content_length_n = len;

    if (len == 0) {
        r->header_only = 1;
        return ngx_http_send_header(r);
    }

    r->headers_out.content_type = ngx_http_adserve_json_type;
    r->headers_out.content_type_len = ngx_http_adserve_json_type.len;

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->pos = body;
    b->last = body + len;
    b->memory = 1;
    b->last_buf = (r == r->main);
    b->last_in_chain = 1;

    rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


/* Copies the rendered response around a fresh ad_log token: the body is
 * the creative's head, the unit's impression URL, the token, the unit's
 * click URL, the token, and the token again as ext.ad_log. */
static ngx_int_t
ngx_http_adserve_send_ad(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, const adserve_cand_t *c, time_t now)
{
    ngx_http_adserve_main_conf_t  *amcf;
    adserve_ad_log_t               log;
    const adserve_li_t            *li;
    u_char                        *body, *p, *tok;
    size_t                         n;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    li = &amcf->loader->snapshot->lis[c->li];

    body = ngx_pnalloc(r->pool, c->response_head_len + unit->impression_prefix.len
                                + unit->click_prefix.len + 3 * ADSERVE_TOKEN_MAX
                                + sizeof(ADSERVE_RESPONSE_MIDDLE ADSERVE_RESPONSE_TAIL));
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_cpymem(body, c->response_head, c->response_head_len);
    p = ngx_cpymem(p, unit->impression_prefix.data, unit->impression_prefix.len);
    tok = p;

    log.issued = now;
    log.price_micros = c->bid_micros;
    log.cost_type = li->cost_type;
    log.ad_unit.data = unit->id;
    log.ad_unit.len = unit->id_len;
    log.line_item = li->id;
    log.creative = c->creative_id;
    log.user = ctx->req.user_id;
    if (log.user.data == NULL) {
        log.user.len = 0;
    }

    n = adserve_token_encode(amcf->tokens, &log, (char *) tok);
    if (n == 0) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "adserve: ad_log token could not be sealed");
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_cpymem(tok + n, unit->click_prefix.data, unit->click_prefix.len);
    p = ngx_cpymem(p, tok, n);
    p = ngx_cpymem(p, ADSERVE_RESPONSE_MIDDLE, sizeof(ADSERVE_RESPONSE_MIDDLE) - 1);
    p = ngx_cpymem(p, tok, n);
    p = ngx_cpymem(p, ADSERVE_RESPONSE_TAIL, sizeof(ADSERVE_RESPONSE_TAIL) - 1);

    ngx_http_adserve_count(amcf->events, now, ADSERVE_DIM_UNIT,
                           &(adserve_str_t) { unit->id, unit->id_len }, unit->hash,
                           NGX_HTTP_ADSERVE_M_ADS, 1);
    ngx_http_adserve_count(amcf->events, now, ADSERVE_DIM_LINE_ITEM,
                           &li->id, li->hash, NGX_HTTP_ADSERVE_M_ADS, 1);
    ngx_http_adserve_count(amcf->events, now, ADSERVE_DIM_CREATIVE,
                           &c->creative_id, c->creative_hash, NGX_HTTP_ADSERVE_M_ADS, 1);

    if (li->ncaps && log.user.len) {
        ngx_http_adserve_caps_record(li, &log, now,
                                     amcf->loader->snapshot->max_cap_seconds);
    }

    if (unit->impression_on_response) {
        (void) ngx_http_adserve_track(amcf->events, ADSERVE_EVENT_IMPRESSION,
                                      &log, now, 0);
    }

    return ngx_http_adserve_send(r, NGX_HTTP_OK, body, p - body);
}


/* A new worker has no snapshot until its first load ends: the request
 * waits for it (milliseconds) rather than being told 404. */
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


/* The decision proper, once the user's frequency caps are known (or are
 * known to be unknown). */
ngx_int_t
ngx_http_adserve_finish(ngx_http_request_t *r)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_http_adserve_ctx_t        *ctx;
    const adserve_unit_t          *unit;
    const adserve_cand_t          *c;
    adserve_decision_t             d;
    adserve_req_ctx_t              facts;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    ctx = ngx_http_get_module_ctx(r, ngx_http_adserve_module);

    /* again: the snapshot may have been swapped while caps were read */
    unit = ngx_http_adserve_unit(r, ctx);
    if (unit == NULL) {
        return NGX_HTTP_NOT_FOUND;
    }

    adserve_req_ctx_init(&facts, &ctx->req);

    d.now = ctx->now;
    d.rnd = (uint32_t) ngx_random();
    d.facts = &facts;
    d.seen = ctx->seen;
    d.nseen = ctx->nseen;
    d.caps_known = ctx->caps_known;

    if (ctx->explain) {
        return ngx_http_adserve_explain_send(r, ctx, unit, &d);
    }

    c = adserve_decide(amcf->loader->snapshot, unit, &d);
    if (c == NULL) {
        return ngx_http_adserve_send(r, NGX_HTTP_NO_CONTENT, NULL, 0);
    }

    return ngx_http_adserve_send_ad(r, ctx, unit, c, ctx->now);
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

    rc = ngx_http_adserve_body(r, &body, &len);
    if (rc != NGX_OK) {
        return rc;
    }

    if (adserve_json_parse_ad_request((char *) body, len, &ctx->req, &err, &off) != 0) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "adserve: malformed ad request at byte %uz: %s", off, err);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->now = ngx_http_adserve_now(r);

    if (!ctx->explain) {
        ngx_http_adserve_count(amcf->events, ctx->now, ADSERVE_DIM_UNIT,
                               &(adserve_str_t) { unit->id, unit->id_len }, unit->hash,
                               NGX_HTTP_ADSERVE_M_REQUESTS, 1);
    }

    /* a unit with capped line items needs what this user has seen: an
     * async read with a deadline; without a user id caps stay unknown, and
     * capped line items do not serve */
    if (unit->max_cap_seconds && ctx->req.user_id.len) {
        rc = ngx_http_adserve_caps_read(r, ctx, unit->max_cap_seconds);
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
static void
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


static ngx_int_t
ngx_http_adserve_start(ngx_http_request_t *r, ngx_uint_t explain)
{
    ngx_http_adserve_loader_t  *ld = ngx_http_adserve_loader(r);
    ngx_http_adserve_ctx_t     *ctx;
    ngx_int_t                   rc;

    if (!(r->method & NGX_HTTP_POST)) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_adserve_ctx_t));
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->request = r;
    ctx->explain = explain;
    ngx_http_set_ctx(r, ctx, ngx_http_adserve_module);

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


ngx_table_elt_t *
ngx_http_adserve_header(ngx_http_request_t *r, const char *name, ngx_str_t *value)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NULL;
    }

    h->hash = 1;
    h->key.data = (u_char *) name;
    h->key.len = ngx_strlen(name);
    h->value = *value;

    return h;
}


/* The CORS preflight of an adserve_ad or adserve_event location, for any
 * path: 204 with the location's add_header lines. In the rewrite phase, where a `return
 * 204` in the location would answer it: before limit_req, which does not
 * count preflights. */
static ngx_int_t
ngx_http_adserve_preflight_handler(ngx_http_request_t *r)
{
    static ngx_str_t           ad_methods = ngx_string("POST, OPTIONS");
    static ngx_str_t           event_methods = ngx_string("GET, POST, OPTIONS");
    ngx_http_core_loc_conf_t  *clcf;
    ngx_str_t                 *methods;
    ngx_int_t                  rc;

    if (r->method != NGX_HTTP_OPTIONS) {
        return NGX_DECLINED;
    }

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    if (clcf->handler == ngx_http_adserve_ad_handler) {
        methods = &ad_methods;

    } else if (clcf->handler == ngx_http_adserve_track_handler) {
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


static ngx_int_t
ngx_http_adserve_ad_handler(ngx_http_request_t *r)
{
    return ngx_http_adserve_start(r, 0);
}


/* ---- the explainer ----------------------------------------------------- */

/* The same request as serving, answered with what the decision would make
 * of each line item of the unit instead of an ad; nothing is counted, no
 * cap recorded, no pacing state touched. Operators only: the shipped
 * configuration puts it behind the API's auth (auth_request). */
static ngx_int_t
ngx_http_adserve_explain_handler(ngx_http_request_t *r)
{
    return ngx_http_adserve_start(r, 1);
}


static u_char *
ngx_http_adserve_json_str(u_char *p, const adserve_str_t *s)
{
    *p++ = '"';
    p = (u_char *) ngx_escape_json(p, (u_char *) s->data, s->len);
    *p++ = '"';

    return p;
}


static ngx_int_t
ngx_http_adserve_explain_send(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, adserve_decision_t *d)
{
    static const char *const  verdicts[] = {
        "won", "tied", "outranked", "lower_priority", "held_back"
    };
    static const char *const  reasons[] = {
        "", "flight", "targeting", "goal_reached", "frequency_cap", "floor", "pacing"
    };
    static const char *const  excluded[] = { "", "size", "bcat" };

    ngx_http_adserve_main_conf_t  *amcf;
    adserve_explained_t           *x;
    const adserve_excl_t          *e;
    const adserve_li_t            *li;
    adserve_str_t                  id;
    const char                    *winner = NULL;
    u_char                        *body, *p;
    size_t                         len;
    uint32_t                       n, i;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    x = ngx_palloc(r->pool, (unit->ncands + 1) * sizeof(adserve_explained_t));
    if (x == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    n = adserve_explain(amcf->loader->snapshot, unit, d, x);

    /* ids escaped as JSON take at most 6 bytes a byte */
    len = 256 + 6 * unit->id_len
          + n * (512 + 6 * ADSERVE_TOKEN_ID_MAX)
          + unit->nexcluded * (128 + 12 * ADSERVE_TOKEN_ID_MAX);

    body = ngx_pnalloc(r->pool, len);
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    id.data = unit->id;
    id.len = unit->id_len;

    p = ngx_cpymem(body, "{\"ad_unit_id\":", sizeof("{\"ad_unit_id\":") - 1);
    p = ngx_http_adserve_json_str(p, &id);
    p = ngx_sprintf(p, ",\"time\":%T,\"caps\":\"%s\",\"line_items\":[",
                    ctx->now, unit->max_cap_seconds == 0 ? "none"
                              : d->caps_known ? "known" : "unknown");

    for (i = 0; i < n; i++) {
        li = x[i].li;

        if (x[i].verdict == ADSERVE_X_WON) {
            winner = li->id.data;
        }

        p = ngx_cpymem(p, i ? ",{\"line_item_id\":" : "{\"line_item_id\":",
                       i ? sizeof(",{\"line_item_id\":") - 1
                         : sizeof("{\"line_item_id\":") - 1);
        p = ngx_http_adserve_json_str(p, &li->id);
        p = ngx_sprintf(p, ",\"type\":\"%s\",\"priority\":%d,\"cost_type\":\"%s\","
                        "\"bid\":%.6f,\"ecpm\":%.6f,\"creatives\":%uD,"
                        "\"decision\":\"%s\"",
                        adserve_tier_names[li->tier % ADSERVE_TIER_COUNT], (int) li->priority,
                        adserve_cost_names[li->cost_type % ADSERVE_COST_COUNT], x[i].cand->bid, x[i].ecpm,
                        x[i].ncands, verdicts[x[i].verdict]);

        if (x[i].verdict == ADSERVE_X_RULE) {
            p = ngx_sprintf(p, ",\"reason\":\"%s\"", reasons[x[i].reason % 7]);
        }

        if (li->paced) {
            p = ngx_sprintf(p, ",\"pacing\":{\"share\":%.4f,\"budget_left\":%uD,"
                            "\"goal_reached\":%s}",
                            li->pace.allow == UINT32_MAX ? 1.0
                                : (double) li->pace.allow / 4294967295.0,
                            li->pace.budget > li->pace.served
                                ? li->pace.budget - li->pace.served : 0,
                            li->pace.stopped ? "true" : "false");
        }

        *p++ = '}';
    }

    p = ngx_cpymem(p, "],\"winner\":", sizeof("],\"winner\":") - 1);
    if (winner != NULL) {
        id.data = winner;
        id.len = ngx_strlen(winner);
        p = ngx_http_adserve_json_str(p, &id);
    } else {
        p = ngx_cpymem(p, "null", 4);
    }

    p = ngx_cpymem(p, ",\"excluded\":[", sizeof(",\"excluded\":[") - 1);

    for (i = 0; i < unit->nexcluded; i++) {
        e = &unit->excluded[i];
        p = ngx_cpymem(p, i ? ",{\"line_item_id\":" : "{\"line_item_id\":",
                       i ? sizeof(",{\"line_item_id\":") - 1
                         : sizeof("{\"line_item_id\":") - 1);
        p = ngx_http_adserve_json_str(p, &e->line_item_id);
        p = ngx_cpymem(p, ",\"creative_id\":", sizeof(",\"creative_id\":") - 1);
        p = ngx_http_adserve_json_str(p, &e->creative_id);
        p = ngx_sprintf(p, ",\"reason\":\"%s\"}", excluded[e->reason % 3]);
    }

    p = ngx_cpymem(p, "]}", 2);

    return ngx_http_adserve_send(r, NGX_HTTP_OK, body, p - body);
}


/* ---- status ------------------------------------------------------------ */

static ngx_int_t
ngx_http_adserve_status_handler(ngx_http_request_t *r)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_http_adserve_loader_t  *ld = ngx_http_adserve_loader(r);
    adserve_snapshot_t         *s;
    u_char                     *body, *p;
    size_t                      len;
    ngx_int_t                   rc;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    len = sizeof("{\"pid\":,\"redis\":\"down\",\"rev\":,\"change_id\":\"\","
                 "\"snapshot_age_ms\":,\"active_ad_units\":,\"candidates\":,"
                 "\"skipped_records\":,\"loads\":,\"full_loads\":,"
                 "\"changes_applied\":,\"load_failures\":}")
          + 11 * NGX_INT64_LEN + NGX_HTTP_ADSERVE_STREAM_ID
          + NGX_HTTP_ADSERVE_EVENTS_STATUS_LEN;

    body = ngx_pnalloc(r->pool, len);
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    s = ld ? ld->snapshot : NULL;

    p = ngx_snprintf(body, len,
                     "{\"pid\":%P,\"redis\":\"%s\",\"rev\":%L,\"change_id\":\"%s\","
                     "\"snapshot_age_ms\":%L,\"active_ad_units\":%uz,"
                     "\"candidates\":%uz,\"skipped_records\":%uz,"
                     "\"loads\":%ui,\"full_loads\":%ui,\"changes_applied\":%ui,"
                     "\"load_failures\":%ui",
                     ngx_pid, (ld && ld->redis.connected) ? "up" : "down",
                     s ? (int64_t) s->rev : (int64_t) -1,
                     ld ? ld->change_id : "",
                     s ? (int64_t) (ngx_current_msec - ld->loaded_at) : (int64_t) -1,
                     s ? s->stats.active_units : 0, s ? s->stats.candidates : 0,
                     s ? s->stats.skipped : 0,
                     ld ? ld->loads : 0, ld ? ld->full_loads : 0,
                     ld ? ld->changes : 0, ld ? ld->failures : 0);

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    if (amcf->events != NULL) {
        p = ngx_http_adserve_events_status(amcf->events, p, body + len - 1);
    }
    *p++ = '}';

    return ngx_http_adserve_send(r, NGX_HTTP_OK, body, p - body);
}


/* ---- configuration ----------------------------------------------------- */

static void *
ngx_http_adserve_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_adserve_main_conf_t  *amcf;

    amcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_adserve_main_conf_t));
    if (amcf == NULL) {
        return NULL;
    }

    amcf->redis_timeout = NGX_CONF_UNSET_MSEC;
    amcf->refresh = NGX_CONF_UNSET_MSEC;
    amcf->flush = NGX_CONF_UNSET_MSEC;
    amcf->pacing = NGX_CONF_UNSET_MSEC;
    amcf->cap_timeout = NGX_CONF_UNSET_MSEC;
    amcf->event_buffer = NGX_CONF_UNSET_UINT;
    amcf->stream_max = NGX_CONF_UNSET_UINT;
    amcf->event_ttl = NGX_CONF_UNSET;
    amcf->conversion_ttl = NGX_CONF_UNSET;
    amcf->test_clock = NGX_CONF_UNSET;

    return amcf;
}


static char *
ngx_http_adserve_load_keys(ngx_conf_t *cf, ngx_http_adserve_main_conf_t *amcf)
{
    ngx_file_t        file;
    ngx_file_info_t   fi;
    u_char           *text;
    ssize_t           n;
    char              err[128];

    if (ngx_conf_full_name(cf->cycle, &amcf->key_file, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(&file, sizeof(ngx_file_t));
    file.name = amcf->key_file;
    file.log = cf->log;

    file.fd = ngx_open_file(file.name.data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);
    if (file.fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "adserve_ad_log_key: cannot open \"%V\"", &file.name);
        return NGX_CONF_ERROR;
    }

    if (ngx_fd_info(file.fd, &fi) == NGX_FILE_ERROR || ngx_file_size(&fi) > 4096) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "adserve_ad_log_key: \"%V\" is not a key file", &file.name);
        ngx_close_file(file.fd);
        return NGX_CONF_ERROR;
    }

    text = ngx_pnalloc(cf->temp_pool, ngx_file_size(&fi) + 1);
    n = text ? ngx_read_file(&file, text, ngx_file_size(&fi), 0) : NGX_ERROR;
    ngx_close_file(file.fd);

    if (n == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    amcf->tokens = ngx_pcalloc(cf->pool, sizeof(adserve_tokens_t));
    if (amcf->tokens == NULL) {
        return NGX_CONF_ERROR;
    }

    if (adserve_tokens_parse(amcf->tokens, (char *) text, n, err, sizeof(err)) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "adserve_ad_log_key: \"%V\": %s", &file.name, err);
        return NGX_CONF_ERROR;
    }

    ngx_explicit_memzero(text, n);

    return NGX_CONF_OK;
}


static char *
ngx_http_adserve_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_adserve_main_conf_t  *amcf = conf;

    ngx_conf_init_msec_value(amcf->redis_timeout, 1000);
    ngx_conf_init_msec_value(amcf->refresh, 100);
    ngx_conf_init_msec_value(amcf->flush, 1000);
    ngx_conf_init_msec_value(amcf->pacing, 5000);
    ngx_conf_init_msec_value(amcf->cap_timeout, 20);
    ngx_conf_init_uint_value(amcf->event_buffer, 16384);
    ngx_conf_init_uint_value(amcf->stream_max, 1000000);
    ngx_conf_init_value(amcf->event_ttl, 86400);
    ngx_conf_init_value(amcf->conversion_ttl, 30 * 86400);
    ngx_conf_init_value(amcf->test_clock, 0);

    if (amcf->flush > 1000 || amcf->flush < 10) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "adserve_flush_interval must be between 10ms and 1s");
        return NGX_CONF_ERROR;
    }

    if (amcf->pacing > 10000 || amcf->pacing < 100) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "adserve_pacing_interval must be between 100ms and 10s");
        return NGX_CONF_ERROR;
    }

    if (amcf->event_buffer < 16 || amcf->event_buffer > 1048576) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "adserve_event_buffer must be between 16 and 1048576");
        return NGX_CONF_ERROR;
    }

    if (!amcf->serving && !amcf->tracking) {
        return NGX_CONF_OK;
    }

    if (amcf->public_url.len == 0 && amcf->serving) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"adserve_ad\" needs \"adserve_public_url\" in the "
                           "http block (where impression and click URLs point)");
        return NGX_CONF_ERROR;
    }

    if (amcf->public_url.len
        && ((ngx_strncmp(amcf->public_url.data, "http://", 7) != 0
             && ngx_strncmp(amcf->public_url.data, "https://", 8) != 0)
            || amcf->public_url.data[amcf->public_url.len - 1] == '/'
            || ngx_strlchr(amcf->public_url.data,
                           amcf->public_url.data + amcf->public_url.len, '"')))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "adserve_public_url: \"%V\" is not an http(s) URL "
                           "without a trailing slash", &amcf->public_url);
        return NGX_CONF_ERROR;
    }

    if (amcf->redis.host == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"adserve_ad\" and \"adserve_event\" need "
                           "\"adserve_redis\" in the http block");
        return NGX_CONF_ERROR;
    }

    if (amcf->key_file.data == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"adserve_ad\" and \"adserve_event\" need "
                           "\"adserve_ad_log_key\" in the http block");
        return NGX_CONF_ERROR;
    }

#if (NGX_THREADS)
    /* snapshot builds run in the "default" pool: 32 threads unless the
     * configuration declares it with "thread_pool default threads=N" */
    if (ngx_thread_pool_add(cf, NULL) == NULL) {
        return NGX_CONF_ERROR;
    }
#endif

    return ngx_http_adserve_load_keys(cf, amcf);
}


static ngx_int_t
ngx_http_adserve_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt           *h;
    ngx_http_core_main_conf_t     *cmcf;
    ngx_http_adserve_main_conf_t  *amcf;

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_adserve_module);
    if (!amcf->serving && !amcf->tracking) {
        return NGX_OK;
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_REWRITE_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_adserve_preflight_handler;

    return NGX_OK;
}


/* adserve_redis and adserve_redis_write: an address into the member at
 * cmd->offset */
static char *
ngx_http_adserve_redis(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_adserve_redis_t  *rd = (ngx_http_adserve_redis_t *)
                                    ((u_char *) conf + cmd->offset);
    ngx_str_t                 *value = cf->args->elts;
    ngx_int_t                  rc;
    char                      *err = NULL;

    if (rd->host != NULL) {
        return "is duplicate";
    }

    rc = ngx_http_adserve_redis_parse_addr(cf, &value[1], rd, &err);

    if (rc == NGX_DECLINED) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%V: \"%V\": %s; it takes \"IP:port\", "
                           "\"[IPv6]:port\" or \"unix:/path\"",
                           &cmd->name, &value[1], err);
        return NGX_CONF_ERROR;
    }

    return rc == NGX_OK ? NGX_CONF_OK : NGX_CONF_ERROR;
}


/* adserve_ad and adserve_explain: the tagid is what follows the prefix, so
 * a prefix location that ends with "/" */
static char *
ngx_http_adserve_tagid_location(ngx_conf_t *cf, ngx_http_handler_pt handler)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

#if (NGX_PCRE)
    if (clcf->regex != NULL || clcf->named || clcf->name.len == 0
        || clcf->name.data[clcf->name.len - 1] != '/')
#else
    if (clcf->named || clcf->name.len == 0
        || clcf->name.data[clcf->name.len - 1] != '/')
#endif
    {
        return "needs a prefix location that ends with \"/\"";
    }

    clcf->handler = handler;

    return NGX_CONF_OK;
}


static char *
ngx_http_adserve_ad(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_adserve_main_conf_t  *amcf;

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_adserve_module);
    amcf->serving = 1;

    return ngx_http_adserve_tagid_location(cf, ngx_http_adserve_ad_handler);
}


static char *
ngx_http_adserve_explain(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_http_adserve_tagid_location(cf, ngx_http_adserve_explain_handler);
}


static char *
ngx_http_adserve_event(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_core_loc_conf_t      *clcf;
    ngx_http_adserve_main_conf_t  *amcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_adserve_track_handler;

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_adserve_module);
    amcf->tracking = 1;

    return NGX_CONF_OK;
}


static char *
ngx_http_adserve_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_adserve_status_handler;

    return NGX_CONF_OK;
}


/* ---- worker life ------------------------------------------------------- */

static ngx_int_t
ngx_http_adserve_init_process(ngx_cycle_t *cycle)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_http_adserve_loader_t     *ld;
    ngx_http_adserve_events_conf_t ecf;
#if (NGX_THREADS)
    ngx_str_t                      pool = ngx_string("default");
#endif

    if (ngx_process != NGX_PROCESS_WORKER && ngx_process != NGX_PROCESS_SINGLE) {
        return NGX_OK;
    }

    amcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_adserve_module);
    if (amcf == NULL || (!amcf->serving && !amcf->tracking)) {
        return NGX_OK;
    }

    if (adserve_tokens_start(amcf->tokens) != 0) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "adserve: cannot set up the ad_log cipher");
        return NGX_ERROR;
    }

    ld = ngx_pcalloc(cycle->pool, sizeof(ngx_http_adserve_loader_t));
    if (ld == NULL) {
        return NGX_ERROR;
    }

    ld->redis = amcf->redis;
    ld->redis.timeout = amcf->redis_timeout;
    ld->refresh = amcf->refresh;
    ld->timeout = amcf->redis_timeout;
    ld->public_url = (char *) amcf->public_url.data;    /* ngx_conf_set_str_slot
                                                       * NUL-terminates */
#if (NGX_THREADS)
    ld->thread_pool = ngx_thread_pool_get(cycle, &pool);
#endif

    ld->resume = ngx_http_adserve_resume;
    amcf->loader = ld;

    /* events and caps go to the primary, by default the one address */
    if (amcf->redis_write.host == NULL) {
        amcf->redis_write = amcf->redis;
    }
    amcf->redis_write.timeout = amcf->redis_timeout;
    ecf.redis = &amcf->redis_write;
    ecf.flush = amcf->flush;
    ecf.buffer = amcf->event_buffer;
    ecf.stream_max = amcf->stream_max;
    ecf.event_ttl = amcf->event_ttl;
    ecf.conversion_ttl = amcf->conversion_ttl;

    amcf->events = ngx_http_adserve_events_init(cycle, &ecf);
    if (amcf->events == NULL || ngx_http_adserve_pacing_init(cycle, amcf) != NGX_OK
        || ngx_http_adserve_caps_init(cycle, &amcf->redis_write) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_adserve_loader_init(ld, cycle);
}


static void
ngx_http_adserve_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_adserve_main_conf_t  *amcf;

    amcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_adserve_module);

    ngx_http_adserve_pacing_exit();
    ngx_http_adserve_caps_exit();

    if (amcf != NULL && amcf->events != NULL) {
        ngx_http_adserve_events_exit(amcf->events);
        amcf->events = NULL;
    }

    if (amcf != NULL && amcf->loader != NULL) {
        ngx_http_adserve_loader_exit(amcf->loader);
        adserve_tokens_stop(amcf->tokens);
        amcf->loader = NULL;
    }
}
