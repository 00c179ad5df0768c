
/*
 * External demand at serving (README "External demand"): an ad unit with
 * allocations asks its sources for bids over OpenRTB 2.6, in parallel and
 * without blocking, and the best bid competes with direct demand.
 *
 * Each bid request is a background subrequest, its answer kept in memory,
 * to adserve_rtb_location, whose proxy_pass takes the source's endpoint
 * from $adserve_rtb_url and its body from $adserve_rtb_body (both read
 * from the subrequest's context, ngx_http_adserve_outbound_t). The request
 * waits for the last answer or for the longest tmax of the sources asked,
 * whichever comes first; a late answer is dropped (the request's pool
 * lives until its subrequests end: nginx counts them). The bid request is
 * the parts the build rendered (imp, site or app, bcat and badv) around
 * what the ad request says (device.ua, user) and the floor.
 *
 * Bids are read by adserve_rtb_parse_response (bounded, fuzzed) and judged
 * once, against the unit's blocks and floors as the current snapshot has
 * them; the auction is first-price: the winner pays its bid, which
 * ${AUCTION_PRICE} carries. Notices are GETs in the background through
 * adserve_notice_location ($adserve_rtb_url again): nurl when a bid is
 * served, lurl for the bids that lost (at most NOTICES_MAX a request), and
 * burl with the impression (the token carries it, ngx_http_adserve_track).
 */


#include "ngx_http_adserve.h"


#define NGX_HTTP_ADSERVE_NOTICES_MAX   8      /* lurls a request fires */
#define NGX_HTTP_ADSERVE_NO_LOSS       -1     /* not told: no lurl */
#define NGX_HTTP_ADSERVE_QPS_SLOTS     64     /* sources limited at once */
#define NGX_HTTP_ADSERVE_SEEN_SLOTS    1024   /* external creatives recorded */
#define NGX_HTTP_ADSERVE_SEEN_EVERY    60     /* seconds: last_seen's grain */

typedef enum {
    NGX_HTTP_ADSERVE_BIDDER_PENDING = 0,
    NGX_HTTP_ADSERVE_BIDDER_ANSWERED,      /* resp holds its bids, or none */
    NGX_HTTP_ADSERVE_BIDDER_FAILED,        /* down, an HTTP error, malformed */
    NGX_HTTP_ADSERVE_BIDDER_LATE           /* not in by the deadline */
} ngx_http_adserve_bidder_state_e;

typedef struct {
    ngx_http_adserve_outbound_t  out;     /* the subrequest's context */
    ngx_http_adserve_auction_t  *auction;
    adserve_str_t                source_id;
    uint64_t                     source_hash;
    adserve_str_t                counter_id;   /* "{unit}/{source}" */
    uint64_t                     counter_hash;
    ngx_uint_t                   state;
    adserve_rtb_response_t      *resp;    /* NULL: no bid (204, empty) */
    int16_t                      loss[ADSERVE_RTB_BIDS_MAX];
    ngx_http_adserve_native_bid_t *native[ADSERVE_RTB_BIDS_MAX];  /* a
                                          * native bid's markup, read */
} ngx_http_adserve_bidder_t;

struct ngx_http_adserve_auction_s {
    ngx_http_request_t          *request;
    ngx_event_t                  timer;
    ngx_uint_t                   pending;
    unsigned                     waiting:1;
    unsigned                     judged:1;
    ngx_http_adserve_bidder_t   *bidders;
    ngx_uint_t                   nbidders;
    ngx_http_adserve_bidder_t   *win;     /* the best bid, once judged */
    const adserve_rtb_bid_t     *bid;
    double                       price;   /* its CPM, adjusted */
    u_char                       id[32];  /* the bid request's id, hex */
};


/* A source's requests per second in this worker: its qps_limit shared
 * among the workers. */
typedef struct {
    uint64_t    hash;
    time_t      second;
    ngx_uint_t  sent;
} ngx_http_adserve_qps_t;

static ngx_http_adserve_qps_t  ngx_http_adserve_qps[NGX_HTTP_ADSERVE_QPS_SLOTS];


/* The external creatives this worker recorded lately, and when: a
 * creative that keeps winning is written once a minute, not once a win. */
typedef struct {
    uint64_t    hash;
    time_t      at;
} ngx_http_adserve_seen_t;

static ngx_http_adserve_seen_t  ngx_http_adserve_seen[NGX_HTTP_ADSERVE_SEEN_SLOTS];

/* HSET of the record, first_seen kept from the one it replaces (several
 * nodes write one record: the latest write wins the rest). KEYS[1]
 * adserve:external_creatives; ARGV: the id, the record. */
static ngx_http_adserve_script_t  ngx_http_adserve_seen_script = ngx_http_adserve_script(
    "local old = redis.call('HGET', KEYS[1], ARGV[1])\n"
    "local rec = ARGV[2]\n"
    "if old then\n"
    "  local ok, o = pcall(cjson.decode, old)\n"
    "  if ok and type(o) == 'table' and type(o.first_seen) == 'string' then\n"
    "    local n = cjson.decode(rec)\n"
    "    n.first_seen = o.first_seen\n"
    "    rec = cjson.encode(n)\n"
    "  end\n"
    "end\n"
    "return redis.call('HSET', KEYS[1], ARGV[1], rec)\n");


static ngx_int_t ngx_http_adserve_bid_done(ngx_http_request_t *sr, void *data, ngx_int_t rc);
static void ngx_http_adserve_auction_timeout(ngx_event_t *ev);
static void ngx_http_adserve_auction_cleanup(void *data);
static u_char *ngx_http_adserve_expand(ngx_http_request_t *r, const ngx_http_adserve_bidder_t *b,
    const adserve_rtb_bid_t *bid, const adserve_str_t *text, int loss, int url, size_t max,
    size_t *len);


static ngx_uint_t
ngx_http_adserve_qps_allows(ngx_http_request_t *r, const adserve_source_t *src)
{
    ngx_http_adserve_qps_t  *q, *o;
    ngx_core_conf_t         *ccf;
    ngx_uint_t               limit, i;

    if (src->qps_limit == 0) {
        return 1;
    }

    ccf = (ngx_core_conf_t *) ngx_get_conf(ngx_cycle->conf_ctx, ngx_core_module);
    limit = src->qps_limit / ccf->worker_processes;
    limit += (limit == 0);

    /* its slot among 4 in a row, else the stalest of them: two sources
     * limited at once do not reset each other's count */
    q = NULL;
    for (i = 0; i < 4; i++) {
        o = &ngx_http_adserve_qps[(src->hash + i) % NGX_HTTP_ADSERVE_QPS_SLOTS];
        if (o->hash == src->hash) {
            q = o;
            break;
        }
        if (q == NULL || o->second < q->second) {
            q = o;
        }
    }

    if (q->hash != src->hash || q->second != ngx_time()) {
        q->hash = src->hash;
        q->second = ngx_time();
        q->sent = 0;
    }

    if (q->sent == limit) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       NGX_HTTP_ADSERVE_LOG "source %s over its QPS limit", src->id.data);
        return 0;
    }

    q->sent++;

    return 1;
}


static void
ngx_http_adserve_count_source(ngx_http_request_t *r, ngx_http_adserve_bidder_t *b,
    ngx_http_adserve_metric_e m, ngx_uint_t n)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_http_adserve_ctx_t        *ctx;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    ctx = ngx_http_get_module_ctx(r, ngx_http_adserve_module);

    ngx_http_adserve_count(amcf->events, ctx->now, ADSERVE_DIM_AD_SOURCE, &b->counter_id,
                           b->counter_hash, m, n);
}


/* s, NUL-terminated, in the pool */
static char *
ngx_http_adserve_pool_str(ngx_pool_t *pool, const adserve_str_t *s)
{
    char  *p;

    p = ngx_pnalloc(pool, s->len + 1);
    if (p != NULL) {
        ngx_memcpy(p, s->data, s->len);
        p[s->len] = '\0';
    }

    return p;
}


/* The bid request to src for unit: the build's parts around this request's
 * facts. */
static ngx_int_t
ngx_http_adserve_bid_request(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, const adserve_alloc_t *al, const adserve_source_t *src,
    const adserve_str_t *place, const char *currency, ngx_str_t *out)
{
    ngx_http_adserve_auction_t  *a = ctx->auction;
    const adserve_ad_request_t  *q = &ctx->req;
    double                       floor;
    size_t                       len;
    u_char                      *p;

    floor = ngx_max(src->floor, unit->floor);

    len = sizeof("{\"id\":\"\",\"imp\":[,\"bidfloor\":,\"bidfloorcur\":\"\"}],"
                 ",\"device\":{\"ua\":},\"user\":{\"id\":,\"yob\":,\"gender\":\"\"},"
                 "\"at\":1,\"tmax\":,\"cur\":[\"\"]}")
          + sizeof(a->id) + unit->rtb_imp.len + 32 + 8 + place->len
          + 6 * q->ua.len + 6 * q->user_id.len + 2 * NGX_INT_T_LEN + al->blocks_json.len
          + sizeof(",\"wseat\":[]") + 6 * src->seat.len;

    p = ngx_pnalloc(r->pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    out->data = p;
    p = ngx_sprintf(p, "{\"id\":\"%*s\",\"imp\":[%*s,\"bidfloor\":%.6f,\"bidfloorcur\":\"%s\"}],%*s",
                    sizeof(a->id), a->id, unit->rtb_imp.len, unit->rtb_imp.data,
                    floor, currency, place->len, place->data);

    if (q->ua.len) {
        p = ngx_cpymem(p, ",\"device\":{\"ua\":", sizeof(",\"device\":{\"ua\":") - 1);
        p = ngx_http_adserve_json_str(p, &q->ua);
        *p++ = '}';
    }

    if (q->user_id.len || q->yob || q->gender) {
        p = ngx_cpymem(p, ",\"user\":{", sizeof(",\"user\":{") - 1);
        if (q->user_id.len) {
            p = ngx_cpymem(p, "\"id\":", sizeof("\"id\":") - 1);
            p = ngx_http_adserve_json_str(p, &q->user_id);
        }
        if (q->yob) {
            p = ngx_sprintf(p, "%s\"yob\":%d", q->user_id.len ? "," : "", q->yob);
        }
        if (q->gender) {
            p = ngx_sprintf(p, "%s\"gender\":\"%c\"", (q->user_id.len || q->yob) ? "," : "",
                            q->gender);
        }
        *p++ = '}';
    }

    /* a source of one seat: the bids of others are dropped */
    if (src->seat.len) {
        p = ngx_cpymem(p, ",\"wseat\":[", sizeof(",\"wseat\":[") - 1);
        p = ngx_http_adserve_json_str(p, &src->seat);
        *p++ = ']';
    }

    p = ngx_sprintf(p, ",\"at\":1,\"tmax\":%uD,\"cur\":[\"%s\"]%*s}", src->tmax_ms, currency,
                    al->blocks_json.len, al->blocks_json.data);
    out->len = p - out->data;

    return NGX_OK;
}


/* A subrequest to location, with o as what its variables read. */
static ngx_int_t
ngx_http_adserve_outbound(ngx_http_request_t *r, ngx_str_t *location,
    ngx_http_adserve_outbound_t *o, ngx_http_post_subrequest_t *ps)
{
    ngx_http_request_t  *sr;

    if (ngx_http_subrequest(r, location, NULL, &sr, ps,
                            (ps ? NGX_HTTP_SUBREQUEST_IN_MEMORY : 0)
                            | NGX_HTTP_SUBREQUEST_BACKGROUND)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_adserve_no_body(sr);
    sr->header_only = (ps == NULL);        /* a notice's answer is not read */
    ngx_http_set_ctx(sr, o, ngx_http_adserve_module);

    return NGX_OK;
}


/* One source's bid request, sent: NGX_OK, or NGX_DECLINED when it was not
 * (its share not drawn, its QPS used up), NGX_ERROR. */
static ngx_int_t
ngx_http_adserve_ask(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, const adserve_alloc_t *al, const adserve_str_t *place)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_http_adserve_auction_t    *a = ctx->auction;
    ngx_http_adserve_bidder_t     *b;
    ngx_http_post_subrequest_t    *ps;
    const adserve_source_t        *src;
    adserve_snapshot_t            *s;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    s = amcf->loader->snapshot;
    src = &s->sources[al->source];

    if ((double) (ngx_random() % 10000) >= al->share * 100
        || !ngx_http_adserve_qps_allows(r, src))
    {
        return NGX_DECLINED;
    }

    b = &a->bidders[a->nbidders];
    b->auction = a;
    b->source_hash = src->hash;
    b->counter_hash = al->counter_hash;

    /* copies: a new snapshot may come while the bids are out */
    b->source_id.data = ngx_http_adserve_pool_str(r->pool, &src->id);
    b->source_id.len = src->id.len;
    b->counter_id.data = ngx_http_adserve_pool_str(r->pool, &al->counter_id);
    b->counter_id.len = al->counter_id.len;
    b->out.url.data = (u_char *) ngx_http_adserve_pool_str(r->pool, &src->endpoint);
    b->out.url.len = src->endpoint.len;
    ps = ngx_palloc(r->pool, sizeof(ngx_http_post_subrequest_t));

    if (b->source_id.data == NULL || b->counter_id.data == NULL || b->out.url.data == NULL
        || ps == NULL
        || ngx_http_adserve_bid_request(r, ctx, unit, al, src, place, s->currency, &b->out.body)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    ps->handler = ngx_http_adserve_bid_done;
    ps->data = b;

    if (ngx_http_adserve_outbound(r, &amcf->rtb_location, &b->out, ps) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   NGX_HTTP_ADSERVE_LOG "bid request to %V: %V", &b->out.url, &b->out.body);

    ngx_http_adserve_count_source(r, b, NGX_HTTP_ADSERVE_M_BID_REQUESTS, 1);
    a->nbidders++;
    a->pending++;

    return NGX_OK;
}


ngx_int_t
ngx_http_adserve_auction_start(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_http_adserve_auction_t    *a;
    const adserve_str_t           *place;
    adserve_snapshot_t            *s;
    ngx_pool_cleanup_t            *cln;
    ngx_msec_t                     tmax = 0;
    ngx_uint_t                     i;
    uint32_t                       rnd[4];
    int                            os;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    s = amcf->loader->snapshot;

    a = ngx_pcalloc(r->pool, sizeof(ngx_http_adserve_auction_t)
                             + unit->nallocs * sizeof(ngx_http_adserve_bidder_t));
    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (a == NULL || cln == NULL) {
        return NGX_ERROR;
    }

    a->request = r;
    a->bidders = (ngx_http_adserve_bidder_t *) (a + 1);
    for (i = 0; i < 4; i++) {
        rnd[i] = (uint32_t) ngx_random();
    }
    ngx_hex_dump(a->id, (u_char *) rnd, sizeof(a->id) / 2);
    ctx->auction = a;

    /* an app when the user agent says so, else the site */
    os = unit->napp_keywords ? adserve_rtb_app_of(unit->app_keywords, unit->napp_keywords,
                                                  ctx->req.ua.data, ctx->req.ua.len)
                             : ADSERVE_RTB_SITE;
    place = (os != ADSERVE_RTB_SITE && unit->rtb_app[os - 1].len) ? &unit->rtb_app[os - 1]
                                                                 : &unit->rtb_site;

    for (i = 0; i < unit->nallocs; i++) {
        switch (ngx_http_adserve_ask(r, ctx, unit, &unit->allocs[i], place)) {
        case NGX_OK:
            tmax = ngx_max(tmax, s->sources[unit->allocs[i].source].tmax_ms);
            break;
        case NGX_DECLINED:
            break;
        default:
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          NGX_HTTP_ADSERVE_LOG "a bid request could not be made");
            break;
        }
    }

    cln->handler = ngx_http_adserve_auction_cleanup;
    cln->data = a;

    if (a->pending == 0) {
        return NGX_DECLINED;
    }

    a->waiting = 1;
    a->timer.handler = ngx_http_adserve_auction_timeout;
    a->timer.data = a;
    a->timer.log = r->connection->log;
    ngx_add_timer(&a->timer, tmax);

    return NGX_AGAIN;
}


/* The bids of a 200 answer, parsed in a copy in the main request's pool;
 * NGX_ERROR when the answer is not a BidResponse. */
static ngx_int_t
ngx_http_adserve_bid_read(ngx_http_request_t *sr, ngx_http_adserve_bidder_t *b)
{
    ngx_http_request_t  *r = b->auction->request;
    const char          *err;
    ngx_buf_t           *buf;
    u_char              *body;
    size_t               len;

    buf = sr->out ? sr->out->buf : NULL;
    len = buf ? (size_t) (buf->last - buf->pos) : 0;

    b->resp = ngx_palloc(r->pool, sizeof(adserve_rtb_response_t));
    body = ngx_pnalloc(r->pool, len + 1);
    if (b->resp == NULL || body == NULL) {
        return NGX_ERROR;
    }

    if (len) {
        ngx_memcpy(body, buf->pos, len);
    }

    if (adserve_rtb_parse_response((char *) body, len, b->resp, &err) != 0) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      NGX_HTTP_ADSERVE_LOG "source %s answered no BidResponse: %s",
                      b->source_id.data, err);
        b->resp = NULL;                 /* what was read of it is no bid */
        return NGX_ERROR;
    }

    return NGX_OK;
}


static void
ngx_http_adserve_auction_over(ngx_http_adserve_auction_t *a)
{
    ngx_http_request_t  *r = a->request;

    a->waiting = 0;
    if (a->timer.timer_set) {
        ngx_del_timer(&a->timer);
    }

    /* a background subrequest does not wake its parent: this does */
    r->write_event_handler = ngx_http_adserve_finish_posted;
    (void) ngx_http_post_request(r, NULL);
}


static ngx_int_t
ngx_http_adserve_bid_done(ngx_http_request_t *sr, void *data, ngx_int_t rc)
{
    ngx_http_adserve_bidder_t   *b = data;
    ngx_http_adserve_auction_t  *a = b->auction;

    if (!a->waiting || b->state != NGX_HTTP_ADSERVE_BIDDER_PENDING) {
        return rc;                      /* late: counted as a timeout */
    }

    switch (sr->headers_out.status) {

    case NGX_HTTP_NO_CONTENT:
        b->state = NGX_HTTP_ADSERVE_BIDDER_ANSWERED;        /* no bid */
        break;

    case NGX_HTTP_OK:
        b->state = ngx_http_adserve_bid_read(sr, b) == NGX_OK
                   ? NGX_HTTP_ADSERVE_BIDDER_ANSWERED : NGX_HTTP_ADSERVE_BIDDER_FAILED;
        break;

    default:
        ngx_log_error(NGX_LOG_INFO, a->request->connection->log, 0,
                      NGX_HTTP_ADSERVE_LOG "source %s answered %i", b->source_id.data,
                      sr->headers_out.status ? (ngx_int_t) sr->headers_out.status : rc);
        b->state = NGX_HTTP_ADSERVE_BIDDER_FAILED;
        break;
    }

    if (--a->pending == 0) {
        ngx_http_adserve_auction_over(a);
    }

    return rc;
}


static void
ngx_http_adserve_auction_timeout(ngx_event_t *ev)
{
    ngx_http_adserve_auction_t  *a = ev->data;
    ngx_http_request_t          *r = a->request;
    ngx_connection_t            *c = r->connection;
    ngx_uint_t                   i;

    for (i = 0; i < a->nbidders; i++) {
        if (a->bidders[i].state == NGX_HTTP_ADSERVE_BIDDER_PENDING) {
            a->bidders[i].state = NGX_HTTP_ADSERVE_BIDDER_LATE;
            ngx_log_error(NGX_LOG_INFO, c->log, 0,
                          NGX_HTTP_ADSERVE_LOG "source %s did not answer within its tmax",
                          a->bidders[i].source_id.data);
        }
    }

    a->waiting = 0;
    ngx_http_adserve_finish_posted(r);
    ngx_http_run_posted_requests(c);
}


/* the request ended some other way: its deadline must not fire into a
 * freed pool */
static void
ngx_http_adserve_auction_cleanup(void *data)
{
    ngx_http_adserve_auction_t  *a = data;

    a->waiting = 0;
    if (a->timer.timer_set) {
        ngx_del_timer(&a->timer);
    }
}


/* ---- judging ------------------------------------------------------------- */

/* The unit's allocation of b's source in the current snapshot, or NULL
 * (the unit or the source changed while the bids were out). */
static const adserve_alloc_t *
ngx_http_adserve_alloc_of(const adserve_snapshot_t *s, const adserve_unit_t *unit,
    const ngx_http_adserve_bidder_t *b)
{
    ngx_uint_t  i;

    for (i = 0; i < unit->nallocs; i++) {
        if (s->sources[unit->allocs[i].source].hash == b->source_hash) {
            return &unit->allocs[i];
        }
    }

    return NULL;
}


/* A native bid's values filled with its macros (ngx_http_adserve_fill_pt):
 * each is known once the bids are in, its own price the clearing one. */
typedef struct {
    ngx_http_request_t               *r;
    const ngx_http_adserve_bidder_t  *b;
    const adserve_rtb_bid_t          *bid;
} ngx_http_adserve_filling_t;


static void
ngx_http_adserve_fill(void *data, adserve_str_t *s, int url)
{
    ngx_http_adserve_filling_t  *f = data;
    u_char                      *v;
    size_t                       len;

    /* no macro: nothing to copy */
    if (ngx_strlchr((u_char *) s->data, (u_char *) s->data + s->len, '$') == NULL) {
        return;
    }

    /* one that does not fit stays as it is: its URL, braces and all, is
     * then refused */
    v = ngx_http_adserve_expand(f->r, f->b, f->bid, s, ADSERVE_RTB_LOSS_WON, url,
                                s->len + 1024, &len);
    if (v != NULL) {
        s->data = (const char *) v;
        s->len = len;
    }
}


/* Whether the unit takes a bid of mtype here: a banner (mtype 1, or none
 * said) for an ad request to a display unit, a video (2) for a unit with a
 * player, a native ad (4) for a unit whose native ads are assets; a VAST
 * request takes videos alone. */
static ngx_uint_t
ngx_http_adserve_bid_format_ok(const adserve_unit_t *unit, int mtype, ngx_uint_t vast)
{
    switch (mtype) {
    case 0:
    case 1:
        return !vast && (unit->formats & (1 << ADSERVE_FORMAT_DISPLAY));
    case 2:
        return (unit->formats & (1 << ADSERVE_FORMAT_VIDEO)) != 0;
    case 4:
        return !vast && (unit->formats & (1 << ADSERVE_FORMAT_NATIVE));
    default:
        return 0;
    }
}


/* Why a usable bid of b cannot win here: its loss reason (blocks counted),
 * or ADSERVE_RTB_LOSS_WON when it may. A native bid's markup is read here
 * (into *nb), for one that cannot be served is not a bid. */
static int
ngx_http_adserve_bid_check(ngx_http_request_t *r, ngx_http_adserve_bidder_t *b,
    const adserve_rtb_bid_t *bid, const adserve_unit_t *unit, const adserve_alloc_t *al,
    const adserve_source_t *src, ngx_uint_t vast, double *price,
    ngx_http_adserve_native_bid_t **nb)
{
    double                      floor = ngx_max(src->floor, unit->floor);
    const adserve_rtb_block_t  *k;
    adserve_str_t               seat;
    ngx_uint_t                  ok;
    const char                 *why;
    ngx_http_adserve_filling_t  fill;

    seat = adserve_rtb_bid_seat(b->resp, bid);

    if (adserve_rtb_bid_unusable(bid) != NULL
        || bid->impid.len != 1 || bid->impid.data[0] != '1'
        || (src->seat.len && (seat.len != src->seat.len
                              || ngx_memcmp(seat.data, src->seat.data, seat.len) != 0))
        || (bid->mtype == 2 && adserve_vast_impression_at(bid->adm.data, bid->adm.len) < 0))
    {
        ngx_http_adserve_count_source(r, b, NGX_HTTP_ADSERVE_M_ERRORS, 1);
        return ADSERVE_RTB_LOSS_INVALID;
    }

    ok = ngx_http_adserve_bid_format_ok(unit, bid->mtype, vast);

    if (ok && bid->mtype == 4) {
        fill.r = r;
        fill.b = b;
        fill.bid = bid;
        why = ngx_http_adserve_native_bid_read(r->pool, unit, bid, ngx_http_adserve_fill, &fill,
                                               nb);
        if (why != NULL) {
            ngx_http_adserve_count_source(r, b, NGX_HTTP_ADSERVE_M_ERRORS, 1);
            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          NGX_HTTP_ADSERVE_LOG "a native bid of source %s dropped: %s",
                          b->source_id.data, why);
            return ADSERVE_RTB_LOSS_INVALID;
        }
    }

    ngx_http_adserve_count_source(r, b, NGX_HTTP_ADSERVE_M_BIDS, 1);

    if (!ok) {
        return ADSERVE_RTB_LOSS_FORMAT;
    }

    k = adserve_rtb_blocked(bid, al->blocks, al->nblocks);
    if (k != NULL) {
        ngx_http_adserve_count_source(r, b, NGX_HTTP_ADSERVE_M_BLOCKED, 1);
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      NGX_HTTP_ADSERVE_LOG "a bid of source %s dropped: %s \"%*s\" is blocked",
                      b->source_id.data, adserve_block_kind_names[k->kind], k->value.len,
                      k->value.data);
        return k->kind == ADSERVE_BLOCK_ADOMAIN ? ADSERVE_RTB_LOSS_ADVERTISER
               : k->kind == ADSERVE_BLOCK_CRID ? ADSERVE_RTB_LOSS_DISAPPROVED
               : ADSERVE_RTB_LOSS_CATEGORY;
    }

    *price = (double) bid->price_micros / 1e6 * src->adjustment;

    return *price < floor ? ADSERVE_RTB_LOSS_BELOW_FLOOR : ADSERVE_RTB_LOSS_WON;
}


/* One source's answer, judged: its counts, and its best bid into a. */
static void
ngx_http_adserve_judge(ngx_http_request_t *r, const adserve_snapshot_t *s,
    const adserve_unit_t *unit, ngx_http_adserve_bidder_t *b, ngx_uint_t vast)
{
    ngx_http_adserve_auction_t  *a = b->auction;
    const adserve_alloc_t       *al;
    const adserve_source_t      *src;
    const adserve_rtb_bid_t     *bid;
    ngx_uint_t                   i;
    double                       price = 0;
    int                          loss;

    for (i = 0; i < ADSERVE_RTB_BIDS_MAX; i++) {
        b->loss[i] = NGX_HTTP_ADSERVE_NO_LOSS;
        b->native[i] = NULL;
    }

    switch (b->state) {
    case NGX_HTTP_ADSERVE_BIDDER_LATE:
        ngx_http_adserve_count_source(r, b, NGX_HTTP_ADSERVE_M_TIMEOUTS, 1);
        return;
    case NGX_HTTP_ADSERVE_BIDDER_FAILED:
        ngx_http_adserve_count_source(r, b, NGX_HTTP_ADSERVE_M_ERRORS, 1);
        return;
    default:
        break;
    }

    al = ngx_http_adserve_alloc_of(s, unit, b);
    if (b->resp == NULL || b->resp->nbids == 0 || al == NULL) {
        return;
    }
    src = &s->sources[al->source];

    /* a price in another currency cannot be compared */
    if (b->resp->cur.len && (b->resp->cur.len != ngx_strlen(s->currency)
                             || ngx_strncmp(b->resp->cur.data, s->currency,
                                            b->resp->cur.len) != 0))
    {
        ngx_http_adserve_count_source(r, b, NGX_HTTP_ADSERVE_M_ERRORS, b->resp->nbids);
        return;
    }

    for (i = 0; i < b->resp->nbids; i++) {
        bid = &b->resp->bids[i];
        loss = ngx_http_adserve_bid_check(r, b, bid, unit, al, src, vast, &price,
                                          &b->native[i]);
        b->loss[i] = (int16_t) loss;

        if (loss != ADSERVE_RTB_LOSS_WON) {
            continue;
        }

        if (a->bid != NULL && price <= a->price) {
            b->loss[i] = ADSERVE_RTB_LOSS_HIGHER_BID;
            continue;
        }

        if (a->bid != NULL) {
            a->win->loss[a->bid - a->win->resp->bids] = ADSERVE_RTB_LOSS_HIGHER_BID;
        }
        a->win = b;
        a->bid = bid;
        a->price = price;
    }
}


double
ngx_http_adserve_auction_best(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_http_adserve_auction_t    *a = ctx->auction;
    ngx_uint_t                     i;

    if (a == NULL) {
        return -1;
    }

    if (!a->judged) {
        amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
        a->judged = 1;
        for (i = 0; i < a->nbidders; i++) {
            ngx_http_adserve_judge(r, amcf->loader->snapshot, unit, &a->bidders[i], ctx->vast);
        }
    }

    return a->bid ? a->price : -1;
}


/* ---- notices and the answer --------------------------------------------- */

/* url expanded with the macros of bid's auction into the pool (url 1) or
 * as markup (url 0); NULL when it does not fit max bytes or out of memory. */
static u_char *
ngx_http_adserve_expand(ngx_http_request_t *r, const ngx_http_adserve_bidder_t *b,
    const adserve_rtb_bid_t *bid, const adserve_str_t *text, int loss, int url, size_t max,
    size_t *len)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_http_adserve_auction_t    *a = b->auction;
    adserve_rtb_macros_t           m;
    u_char                        *out;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    m.auction_id.data = (const char *) a->id;
    m.auction_id.len = sizeof(a->id);
    m.bid_id = bid->id;
    m.imp_id = bid->impid;
    m.seat_id = adserve_rtb_bid_seat(b->resp, bid);
    m.currency.data = amcf->loader->snapshot->currency;
    m.currency.len = ngx_strlen(m.currency.data);
    m.price_micros = bid->price_micros;
    m.loss = loss;

    out = ngx_pnalloc(r->pool, max);
    if (out == NULL) {
        return NULL;
    }

    *len = adserve_rtb_expand((char *) out, max, text->data, text->len, &m, url);

    return *len == (size_t) -1 ? NULL : out;
}


void
ngx_http_adserve_notice(ngx_http_request_t *r, u_char *url, size_t len)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_http_adserve_outbound_t   *o;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    /* only an absolute http(s) URL: what else a bidder wrote is not sent */
    if (!adserve_endpoint_url_ok((const char *) url, len)) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      NGX_HTTP_ADSERVE_LOG "a notice URL that is not one was not sent");
        return;
    }

    o = ngx_pcalloc(r->pool, sizeof(ngx_http_adserve_outbound_t));
    if (o == NULL) {
        return;
    }
    o->url.data = url;
    o->url.len = len;

    if (ngx_http_adserve_outbound(r, &amcf->notice_location, o, NULL) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      NGX_HTTP_ADSERVE_LOG "a notice could not be sent");
    }
}


/* every judged bid's lurl but the winner's, with its loss reason (a bid
 * that could compete and did not win lost to a higher bid) */
static void
ngx_http_adserve_notify_losers(ngx_http_request_t *r, ngx_http_adserve_auction_t *a,
    const adserve_rtb_bid_t *winner)
{
    ngx_http_adserve_bidder_t  *b;
    const adserve_rtb_bid_t    *bid;
    ngx_uint_t                  i, k, sent = 0;
    u_char                     *url;
    size_t                      len;
    int                         loss;

    for (i = 0; i < a->nbidders; i++) {
        b = &a->bidders[i];
        for (k = 0; b->resp && k < b->resp->nbids && sent < NGX_HTTP_ADSERVE_NOTICES_MAX; k++) {
            bid = &b->resp->bids[k];
            loss = b->loss[k];
            if (bid == winner || loss == NGX_HTTP_ADSERVE_NO_LOSS || bid->lurl.len == 0) {
                continue;
            }
            loss = loss == ADSERVE_RTB_LOSS_WON ? ADSERVE_RTB_LOSS_HIGHER_BID : loss;
            url = ngx_http_adserve_expand(r, b, bid, &bid->lurl, loss, 1, ADSERVE_RTB_URL_MAX,
                                          &len);
            if (url != NULL) {
                ngx_http_adserve_notice(r, url, len);
                sent++;
            }
        }
    }
}


void
ngx_http_adserve_auction_lost(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx)
{
    if (ctx->auction != NULL && ctx->auction->judged) {
        ngx_http_adserve_notify_losers(r, ctx->auction, NULL);
    }
}


/* The token of the won bid: the external creative, its price, the source
 * and the burl that its impression fires. */
static size_t
ngx_http_adserve_bid_token(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, u_char *creative, u_char *tok)
{
    ngx_http_adserve_auction_t  *a = ctx->auction;
    const adserve_rtb_bid_t     *bid = a->bid;
    adserve_ad_log_t             log;
    u_char                      *burl;
    size_t                       len = 0;

    ngx_memzero(&log, sizeof(adserve_ad_log_t));
    log.issued = ctx->now;
    log.price_micros = (uint64_t) bid->price_micros;
    log.cost_type = ADSERVE_COST_CPM;
    log.ad_unit.data = unit->id;
    log.ad_unit.len = unit->id_len;
    log.creative.data = (const char *) creative;
    log.creative.len = ADSERVE_UUID_LEN;
    log.user = ctx->req.user_id;
    ngx_http_adserve_seal_variant(&log, unit);
    log.source = a->win->source_id;

    burl = bid->burl.len ? ngx_http_adserve_expand(r, a->win, bid, &bid->burl,
                                                   ADSERVE_RTB_LOSS_WON, 1,
                                                   ADSERVE_TOKEN_BURL_MAX, &len)
                         : NULL;
    if (bid->burl.len && burl == NULL) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      NGX_HTTP_ADSERVE_LOG "source %s: a burl over %d bytes is not kept",
                      a->win->source_id.data, ADSERVE_TOKEN_BURL_MAX);
    }
    log.burl.data = (const char *) burl;
    log.burl.len = burl ? len : 0;

    return ngx_http_adserve_encode(r, &log, tok);
}


/* ,"name":["v",...] of a bid's list */
static u_char *
ngx_http_adserve_json_list(u_char *p, const char *name, const adserve_str_t *v, ngx_uint_t n)
{
    ngx_uint_t  i;

    p = ngx_sprintf(p, ",\"%s\":[", name);
    for (i = 0; i < n; i++) {
        if (i) {
            *p++ = ',';
        }
        p = ngx_http_adserve_json_str(p, &v[i]);
    }
    *p++ = ']';

    return p;
}


/* The won bid's creative into adserve:external_creatives (README
 * "External demand"), for operators to review and block: at most once a
 * minute per creative and worker, in the background. */
static void
ngx_http_adserve_record_creative(ngx_http_request_t *r, ngx_http_adserve_auction_t *a,
    const u_char *id, time_t now)
{
    const adserve_rtb_bid_t  *bid = a->bid;
    ngx_http_adserve_seen_t  *seen;
    adserve_str_t             sample, v;
    const char               *argv[6];
    size_t                    argvlen[6], len;
    uint64_t                  h;
    ngx_tm_t                  tm;
    u_char                   *rec, *p, when[sizeof("2026-01-01T00:00:00Z")];
    ngx_uint_t                i;

    h = adserve_hash((const char *) id, ADSERVE_UUID_LEN);
    seen = &ngx_http_adserve_seen[h % NGX_HTTP_ADSERVE_SEEN_SLOTS];
    if (seen->hash == h && now - seen->at < NGX_HTTP_ADSERVE_SEEN_EVERY && now >= seen->at) {
        return;
    }

    /* a sample of the markup, cut before a character, not inside one */
    sample = bid->adm;
    if (sample.len > ADSERVE_MARKUP_SAMPLE_MAX) {
        sample.len = ADSERVE_MARKUP_SAMPLE_MAX;
        while (sample.len && (sample.data[sample.len] & 0xC0) == 0x80) {
            sample.len--;
        }
    }

    len = sizeof("{\"id\":,\"ad_source_id\":,\"crid\":,\"adomain\":[],\"cat\":[],"
                 "\"w\":,\"h\":,\"markup_sample\":,\"first_seen\":\"\",\"last_seen\":\"\"}")
          + 6 * (ADSERVE_UUID_LEN + a->win->source_id.len + bid->crid.len + sample.len)
          + 2 * sizeof(when) + 2 * NGX_INT_T_LEN;
    for (i = 0; i < bid->nadomain; i++) {
        len += 6 * bid->adomain[i].len + 3;
    }
    for (i = 0; i < bid->ncat; i++) {
        len += 6 * bid->cat[i].len + 3;
    }

    rec = ngx_pnalloc(r->pool, len);
    if (rec == NULL) {
        return;
    }

    /* NUL-terminated: "%s" below reads up to the NUL (ngx_sprintf writes
     * none of its own; without, the stack's next bytes went into the record) */
    ngx_gmtime(now, &tm);
    (void) ngx_sprintf(when, "%4d-%02d-%02dT%02d:%02d:%02dZ%Z", tm.ngx_tm_year, tm.ngx_tm_mon,
                       tm.ngx_tm_mday, tm.ngx_tm_hour, tm.ngx_tm_min, tm.ngx_tm_sec);

    v.data = (const char *) id;
    v.len = ADSERVE_UUID_LEN;
    p = ngx_cpymem(rec, "{\"id\":", sizeof("{\"id\":") - 1);
    p = ngx_http_adserve_json_str(p, &v);
    p = ngx_cpymem(p, ",\"ad_source_id\":", sizeof(",\"ad_source_id\":") - 1);
    p = ngx_http_adserve_json_str(p, &a->win->source_id);
    p = ngx_cpymem(p, ",\"crid\":", sizeof(",\"crid\":") - 1);
    p = ngx_http_adserve_json_str(p, &bid->crid);
    p = ngx_http_adserve_json_list(p, "adomain", bid->adomain, bid->nadomain);
    p = ngx_http_adserve_json_list(p, "cat", bid->cat, bid->ncat);
    p = ngx_sprintf(p, bid->w ? ",\"w\":%d" : ",\"w\":null", bid->w);
    p = ngx_sprintf(p, bid->h ? ",\"h\":%d" : ",\"h\":null", bid->h);
    p = ngx_cpymem(p, ",\"markup_sample\":", sizeof(",\"markup_sample\":") - 1);
    p = ngx_http_adserve_json_str(p, &sample);
    p = ngx_sprintf(p, ",\"first_seen\":\"%s\",\"last_seen\":\"%s\"}", when, when);

    argv[2] = "1";
    argv[3] = ADSERVE_KEY_EXTERNAL_CREATIVES;
    argv[4] = (const char *) id;
    argv[5] = (const char *) rec;
    argvlen[2] = 1;
    argvlen[3] = sizeof(ADSERVE_KEY_EXTERNAL_CREATIVES) - 1;
    argvlen[4] = ADSERVE_UUID_LEN;
    argvlen[5] = p - rec;

    if (ngx_http_adserve_user_eval(&ngx_http_adserve_seen_script, 6, argv, argvlen) == NGX_OK) {
        seen->hash = h;
        seen->at = now;
    }
}


/* A video bid's VAST: its markup with our Impression (the unit's base,
 * the impression's path, the token) just inside its InLine or Wrapper, so
 * that the player's impression is counted here and fires the burl. */
static ngx_int_t
ngx_http_adserve_bid_vast(ngx_http_request_t *r, const adserve_unit_t *unit,
    adserve_str_t *adm, const u_char *tok, size_t n)
{
    static const char  open[] = "<Impression id=\"adserve\">";
    static const char  close[] = "</Impression>";
    const ngx_str_t   *path = ngx_http_adserve_splice_path(ADSERVE_SPLICE_IMPRESSION);
    long               at;
    u_char            *v, *p;

    at = adserve_vast_impression_at(adm->data, adm->len);
    if (at < 0) {
        return NGX_ERROR;               /* its macros filled, it is not one */
    }

    v = ngx_pnalloc(r->pool, adm->len + sizeof(open) + sizeof(close) + unit->vast_base.len
                             + path->len + n);
    if (v == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(v, adm->data, at);
    p = ngx_cpymem(p, open, sizeof(open) - 1);
    p = ngx_cpymem(p, unit->vast_base.data, unit->vast_base.len);
    p = ngx_cpymem(p, path->data, path->len);
    p = ngx_cpymem(p, tok, n);
    p = ngx_cpymem(p, close, sizeof(close) - 1);
    p = ngx_cpymem(p, adm->data + at, adm->len - at);

    adm->data = (const char *) v;
    adm->len = p - v;

    return NGX_OK;
}


/* What serving the won bid costs: the counts, its nurl, the others'
 * lurls, and its creative recorded. */
static void
ngx_http_adserve_bid_served(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, const u_char *creative)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_http_adserve_auction_t    *a = ctx->auction;
    const adserve_rtb_bid_t       *bid = a->bid;
    u_char                        *nurl;
    size_t                         len;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    ngx_http_adserve_count_source(r, a->win, NGX_HTTP_ADSERVE_M_WINS, 1);
    ngx_http_adserve_count(amcf->events, ctx->now, ADSERVE_DIM_UNIT,
                           &(adserve_str_t) { unit->id, unit->id_len }, unit->hash,
                           NGX_HTTP_ADSERVE_M_ADS, 1);
    ngx_http_adserve_count_variant(amcf->events, ctx->now, unit, NGX_HTTP_ADSERVE_M_ADS, 1);
    ngx_http_adserve_tally->ads[bid->mtype == 2 ? ADSERVE_FORMAT_VIDEO
                                : bid->mtype == 4 ? ADSERVE_FORMAT_NATIVE
                                : ADSERVE_FORMAT_DISPLAY]++;

    if (bid->nurl.len) {
        nurl = ngx_http_adserve_expand(r, a->win, bid, &bid->nurl, ADSERVE_RTB_LOSS_WON, 1,
                                       ADSERVE_RTB_URL_MAX, &len);
        if (nurl != NULL) {
            ngx_http_adserve_notice(r, nurl, len);
        }
    }
    ngx_http_adserve_notify_losers(r, a, bid);
    ngx_http_adserve_record_creative(r, a, creative, ctx->now);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   NGX_HTTP_ADSERVE_LOG "a bid of source %s won at %.6f",
                   a->win->source_id.data, a->price);
}


ngx_int_t
ngx_http_adserve_auction_send(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit)
{
    static const char              head[] = ADSERVE_RESPONSE_HEAD "{\"id\":\"";
    ngx_http_adserve_auction_t    *a = ctx->auction;
    const adserve_rtb_bid_t       *bid = a->bid;
    ngx_http_adserve_native_bid_t *nb;
    adserve_str_t                  adm;
    u_char                        *body, *p, tok[ADSERVE_TOKEN_MAX];
    u_char                         creative[ADSERVE_UUID_LEN + 1];
    size_t                         n, len = 0;
    ngx_uint_t                     video = (bid->mtype == 2), native = (bid->mtype == 4);

    adserve_external_creative_id(a->win->source_id.data, a->win->source_id.len,
                                 bid->crid.data, bid->crid.len, (char *) creative);

    n = ngx_http_adserve_bid_token(r, ctx, unit, creative, tok);
    if (n == 0) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (native) {
        /* ad.native: the assets, with our trackers first */
        nb = a->win->native[a->bid - a->win->resp->bids];
        adm.data = (const char *) ngx_http_adserve_native_bid_write(r, unit, nb, tok, n, &len);
        adm.len = len;
        if (adm.data == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

    } else {
        /* the markup's macros filled (a win pixel's price), else as it came */
        adm.data = (const char *) ngx_http_adserve_expand(r, a->win, bid, &bid->adm,
                                                          ADSERVE_RTB_LOSS_WON, 0,
                                                          bid->adm.len + 1024, &len);
        adm.len = adm.data ? len : 0;
        if (adm.data == NULL) {
            adm = bid->adm;
        }
    }

    if (video && ngx_http_adserve_bid_vast(r, unit, &adm, tok, n) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_http_adserve_bid_served(r, ctx, unit, creative);

    /* GET /app/v0/vast: the document itself */
    if (ctx->vast) {
        return ngx_http_adserve_send_xml(r, (u_char *) adm.data, adm.len);
    }

    body = ngx_pnalloc(r->pool, sizeof(head) + ADSERVE_UUID_LEN
                                + sizeof("\",\"display\":{\"w\":,\"h\":,\"adm\":}")
                                + 2 * NGX_INT_T_LEN + 6 * adm.len + 2
                                + ngx_http_adserve_ad_tail_len(unit, n));
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_cpymem(body, head, sizeof(head) - 1);
    p = ngx_cpymem(p, creative, ADSERVE_UUID_LEN);

    if (native) {
        p = ngx_cpymem(p, "\",\"native\":", sizeof("\",\"native\":") - 1);
        p = ngx_cpymem(p, adm.data, adm.len);

    } else {
        p = ngx_sprintf(p, video ? "\",\"video\":{\"w\":%d,\"h\":%d,\"vast\":"
                                 : "\",\"display\":{\"w\":%d,\"h\":%d,\"adm\":",
                        bid->w ? bid->w : unit->bid_w, bid->h ? bid->h : unit->bid_h);
        p = ngx_http_adserve_json_str(p, &adm);
        *p++ = '}';
    }

    p = ngx_http_adserve_ad_tail(p, unit, tok, n);

    return ngx_http_adserve_send(r, NGX_HTTP_OK, body, p - body);
}


/* ---- variables ----------------------------------------------------------- */

static ngx_int_t
ngx_http_adserve_outbound_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
    uintptr_t data)
{
    ngx_http_adserve_outbound_t  *o;
    ngx_str_t                    *s;

    /* only the subrequests this module makes carry an outbound context */
    o = r != r->main ? ngx_http_get_module_ctx(r, ngx_http_adserve_module) : NULL;
    if (o == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    s = (ngx_str_t *) ((u_char *) o + data);
    v->data = s->data;
    v->len = s->len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


ngx_int_t
ngx_http_adserve_add_variables(ngx_conf_t *cf)
{
    static ngx_http_variable_t  vars[] = {
        { ngx_string("adserve_rtb_url"), NULL, ngx_http_adserve_outbound_variable,
          offsetof(ngx_http_adserve_outbound_t, url), NGX_HTTP_VAR_NOCACHEABLE, 0 },
        { ngx_string("adserve_rtb_body"), NULL, ngx_http_adserve_outbound_variable,
          offsetof(ngx_http_adserve_outbound_t, body), NGX_HTTP_VAR_NOCACHEABLE, 0 },
        ngx_http_null_variable
    };
    ngx_http_variable_t  *v, *var;

    for (v = vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }
        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}
