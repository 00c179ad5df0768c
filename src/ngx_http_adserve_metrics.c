
/*
 * The node's metrics for Prometheus (adserve_metrics: GET /metrics in the
 * text format, loopback only in the shipped configuration).
 *
 * Every worker counts in a slot of its own in a small shared zone, with
 * plain increments: one writer a slot, so no atomics and no cache line
 * that two workers write. A scrape, answered by any worker, sums every
 * slot. A slot is claimed by pid (as the snapshot zone's readers are) and
 * keeps its counts when its worker goes: a killed worker's requests stay
 * counted, and the next worker to take the slot adds to them, so counters
 * never go down, across reloads and crashes alike. Gauges (Redis
 * connections up, events buffered) are read from live workers' slots only.
 * The zone is kept across reloads, like any zone of the same name and
 * size; a restart of nginx starts the counters at 0, which Prometheus's
 * rate() takes as a counter reset.
 */


#include "ngx_http_adserve.h"

#include <signal.h>


/* the zone's name carries its layout: a module whose slots differ gets a
 * zone of its own at a reload */
#define NGX_HTTP_ADSERVE_METRICS_ZONE   "adserve_metrics_1"
#define NGX_HTTP_ADSERVE_METRICS_SLOTS  256       /* workers of a node, old and new */

typedef struct {
    ngx_atomic_t                      pid;        /* 0: free */
    ngx_http_adserve_metrics_slot_t   m;
} ngx_http_adserve_mslot_t;

typedef struct {
    ngx_http_adserve_mslot_t          slots[NGX_HTTP_ADSERVE_METRICS_SLOTS];
} ngx_http_adserve_metrics_sh_t;


/* where this worker counts: its slot once claimed, until then (and in the
 * master, or without a zone) a private one that nobody reads */
static ngx_http_adserve_metrics_slot_t   ngx_http_adserve_metrics_private;
ngx_http_adserve_metrics_slot_t         *ngx_http_adserve_tally = &ngx_http_adserve_metrics_private;

static ngx_http_adserve_metrics_sh_t    *ngx_http_adserve_metrics_sh;
static ngx_http_adserve_mslot_t         *ngx_http_adserve_metrics_mine;


/* the statuses that get a label of their own; any other is "other" */
static const ngx_uint_t  ngx_http_adserve_statuses[NGX_HTTP_ADSERVE_STATUSES - 1] = {
    200, 204, 302, 304, 400, 401, 403, 404, 405, 408, 413, 414, 415, 422, 429, 444,
    494, 499, 500, 502, 503, 504
};

static const char *const  ngx_http_adserve_handler_names[NGX_HTTP_ADSERVE_HANDLERS] = {
    "ad", "vast", "event", "explain"
};

static const char *const  ngx_http_adserve_conn_names[NGX_HTTP_ADSERVE_CONNS] = {
    "snapshot", "events", "caps", "watch"
};

static const ngx_msec_t  ngx_http_adserve_bounds[ADSERVE_LATENCY_NBUCKETS] =
    ADSERVE_LATENCY_BUCKETS_MS;


/* ---- the zone ----------------------------------------------------------- */

ngx_shm_zone_t *
ngx_http_adserve_metrics_add(ngx_conf_t *cf)
{
    return ngx_http_adserve_table_add(cf, NGX_HTTP_ADSERVE_METRICS_ZONE,
                                      sizeof(ngx_http_adserve_metrics_sh_t));
}


static ngx_uint_t
ngx_http_adserve_alive(ngx_pid_t pid)
{
    return pid != 0 && (kill(pid, 0) == 0 || ngx_errno != NGX_ESRCH);
}


/* A worker takes a free slot, or one whose worker is gone (its counts
 * stay and grow); its gauges start at 0. */
void
ngx_http_adserve_metrics_init(ngx_shm_zone_t *shm_zone)
{
    ngx_http_adserve_mslot_t  *slot;
    ngx_atomic_uint_t          pid;
    ngx_uint_t                 i;

    if (shm_zone == NULL || shm_zone->data == NULL) {
        return;
    }

    ngx_http_adserve_metrics_sh = shm_zone->data;

    for (i = 0; i < NGX_HTTP_ADSERVE_METRICS_SLOTS; i++) {
        slot = &ngx_http_adserve_metrics_sh->slots[i];
        pid = slot->pid;

        /* a slot of this pid is a dead worker's whose pid came round to
         * this one: kill(0) would say it lives */
        if ((pid == 0 || pid == (ngx_atomic_uint_t) ngx_pid
             || !ngx_http_adserve_alive((ngx_pid_t) pid))
            && ngx_atomic_cmp_set(&slot->pid, pid, (ngx_atomic_uint_t) ngx_pid))
        {
            ngx_memzero(slot->m.redis_up, sizeof(slot->m.redis_up));
            slot->m.events_buffered = 0;
            slot->m.events_capacity = 0;

            ngx_http_adserve_metrics_mine = slot;
            ngx_http_adserve_tally = &slot->m;
            return;
        }
    }

    ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                  NGX_HTTP_ADSERVE_LOG "metrics: all %d slots are taken: this worker's "
                  "counts are not in /metrics", NGX_HTTP_ADSERVE_METRICS_SLOTS);
}


/* An exiting worker's gauges go; its counts stay in the slot it frees. */
void
ngx_http_adserve_metrics_exit(void)
{
    ngx_http_adserve_mslot_t  *slot = ngx_http_adserve_metrics_mine;

    if (slot == NULL) {
        return;
    }

    ngx_memzero(slot->m.redis_up, sizeof(slot->m.redis_up));
    slot->m.events_buffered = 0;
    slot->m.events_capacity = 0;

    ngx_http_adserve_tally = &ngx_http_adserve_metrics_private;
    ngx_http_adserve_metrics_mine = NULL;

    (void) ngx_atomic_cmp_set(&slot->pid, (ngx_atomic_uint_t) ngx_pid, 0);
}


/* ---- counting ------------------------------------------------------------ */

static ngx_uint_t
ngx_http_adserve_status_slot(ngx_uint_t status)
{
    ngx_uint_t  i;

    for (i = 0; i < NGX_HTTP_ADSERVE_STATUSES - 1; i++) {
        if (ngx_http_adserve_statuses[i] == status) {
            return i;
        }
    }

    return NGX_HTTP_ADSERVE_STATUSES - 1;
}


/* what marks a request as a location's of the module: a pool cleanup
 * that does nothing, whose data is the handler + 1. A cleanup, not a
 * module context: an internal redirect (an error page's named location)
 * clears contexts, not the pool's cleanups (as ngx_http_realip_module
 * finds its own after one). */
static void
ngx_http_adserve_metrics_marker(void *data)
{
    (void) data;
}


static ngx_uint_t
ngx_http_adserve_metrics_marked(ngx_http_request_t *r)
{
    ngx_pool_cleanup_t  *cln;

    for (cln = r->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == ngx_http_adserve_metrics_marker) {
            return (ngx_uint_t) (uintptr_t) cln->data;
        }
    }

    return 0;
}


void
ngx_http_adserve_metrics_mark(ngx_http_request_t *r, ngx_uint_t handler)
{
    ngx_pool_cleanup_t  *cln;

    if (r != r->main || ngx_http_adserve_metrics_marked(r)) {
        return;                 /* the first location of the request counts */
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return;                 /* not counted: nothing else is lost */
    }

    cln->handler = ngx_http_adserve_metrics_marker;
    cln->data = (void *) (uintptr_t) (handler + 1);
}


/*
 * The log phase: every request that a location of the module took (the
 * rewrite phase marked it), whatever answered it: the handler, limit_req's
 * 429, an error page's named location. The time is nginx's, in
 * milliseconds, as $request_time.
 */
ngx_int_t
ngx_http_adserve_metrics_log(ngx_http_request_t *r)
{
    ngx_http_adserve_metrics_slot_t   *m = ngx_http_adserve_tally;
    ngx_time_t                        *tp;
    ngx_msec_int_t                     ms;
    ngx_uint_t                         h, b, status;

    h = r == r->main ? ngx_http_adserve_metrics_marked(r) : 0;
    if (h-- == 0) {
        return NGX_OK;
    }

    status = r->err_status ? r->err_status : r->headers_out.status;

    tp = ngx_timeofday();
    ms = (ngx_msec_int_t) ((tp->sec - r->start_sec) * 1000 + (tp->msec - r->start_msec));
    ms = ngx_max(ms, 0);

    for (b = 0; b < ADSERVE_LATENCY_NBUCKETS; b++) {
        if ((ngx_msec_t) ms <= ngx_http_adserve_bounds[b]) {
            break;
        }
    }

    m->requests[h][ngx_http_adserve_status_slot(status)]++;
    m->latency[h][b]++;
    m->latency_ms[h] += (uint64_t) ms;

    return NGX_OK;
}


/* ---- the scrape ----------------------------------------------------------- */

/* what a scrape prints from: every slot summed (gauges of live ones) */
typedef struct {
    ngx_http_adserve_metrics_slot_t   m;
    ngx_uint_t                        workers;
} ngx_http_adserve_metrics_sum_t;


static void
ngx_http_adserve_metrics_sum(ngx_http_adserve_metrics_sum_t *sum)
{
    ngx_http_adserve_mslot_t  *slot;
    uint64_t                  *dst, *src;
    ngx_uint_t                 i, k, n, live;

    n = offsetof(ngx_http_adserve_metrics_slot_t, redis_up) / sizeof(uint64_t);

    for (i = 0; i < NGX_HTTP_ADSERVE_METRICS_SLOTS; i++) {
        slot = &ngx_http_adserve_metrics_sh->slots[i];
        src = (uint64_t *) &slot->m;
        dst = (uint64_t *) &sum->m;

        /* counters: every slot, a gone worker's included */
        for (k = 0; k < n; k++) {
            dst[k] += src[k];
        }

        live = ngx_http_adserve_alive((ngx_pid_t) slot->pid);
        if (!live) {
            continue;
        }

        sum->workers++;

        for (k = 0; k < NGX_HTTP_ADSERVE_CONNS; k++) {
            sum->m.redis_up[k] += slot->m.redis_up[k];
        }

        sum->m.events_buffered += slot->m.events_buffered;
        sum->m.events_capacity += slot->m.events_capacity;
    }
}


#define ngx_http_adserve_family(p, last, name, type, help)                    \
    ngx_slprintf(p, last, "# HELP " name " " help "\n# TYPE " name " " type "\n")


/* a family of one sample */
static u_char *
ngx_http_adserve_scalar(u_char *p, u_char *last, const char *name, const char *type,
    const char *help, uint64_t v)
{
    return ngx_slprintf(p, last, "# HELP %s %s\n# TYPE %s %s\n%s %uL\n",
                        name, help, name, type, name, v);
}


/* a family of a sample per Redis connection of the workers */
static u_char *
ngx_http_adserve_per_conn(u_char *p, u_char *last, const char *name, const char *type,
    const char *help, uint64_t *v)
{
    ngx_uint_t  i;

    p = ngx_slprintf(p, last, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);

    for (i = 0; i < NGX_HTTP_ADSERVE_CONNS; i++) {
        p = ngx_slprintf(p, last, "%s{connection=\"%s\"} %uL\n",
                         name, ngx_http_adserve_conn_names[i], v[i]);
    }

    return p;
}


static u_char *
ngx_http_adserve_print_requests(u_char *p, u_char *last,
    ngx_http_adserve_metrics_slot_t *m)
{
    ngx_uint_t  h, s, b;
    uint64_t    n;
    char        other[] = "other";

    p = ngx_http_adserve_family(p, last, "adserve_http_requests_total", "counter",
                                "Requests to the module's locations, by handler and "
                                "status (the handler's answer, limit_req's and "
                                "error pages' alike).");

    for (h = 0; h < NGX_HTTP_ADSERVE_HANDLERS; h++) {
        for (s = 0; s < NGX_HTTP_ADSERVE_STATUSES; s++) {
            if (m->requests[h][s] == 0) {
                continue;
            }

            if (s < NGX_HTTP_ADSERVE_STATUSES - 1) {
                p = ngx_slprintf(p, last,
                                 "adserve_http_requests_total{handler=\"%s\",status=\"%ui\"} %uL\n",
                                 ngx_http_adserve_handler_names[h],
                                 ngx_http_adserve_statuses[s], m->requests[h][s]);
            } else {
                p = ngx_slprintf(p, last,
                                 "adserve_http_requests_total{handler=\"%s\",status=\"%s\"} %uL\n",
                                 ngx_http_adserve_handler_names[h], other,
                                 m->requests[h][s]);
            }
        }
    }

    p = ngx_http_adserve_family(p, last, "adserve_http_request_duration_seconds", "histogram",
                                "Time from a request's first byte to its log line, on "
                                "nginx's millisecond clock ($request_time).");

    for (h = 0; h < NGX_HTTP_ADSERVE_HANDLERS; h++) {
        n = 0;

        for (b = 0; b <= ADSERVE_LATENCY_NBUCKETS; b++) {
            n += m->latency[h][b];
        }

        if (n == 0) {
            continue;
        }

        n = 0;

        for (b = 0; b < ADSERVE_LATENCY_NBUCKETS; b++) {
            n += m->latency[h][b];
            p = ngx_slprintf(p, last,
                             "adserve_http_request_duration_seconds_bucket{handler=\"%s\","
                             "le=\"%ui.%03ui\"} %uL\n", ngx_http_adserve_handler_names[h],
                             ngx_http_adserve_bounds[b] / 1000,
                             ngx_http_adserve_bounds[b] % 1000, n);
        }

        n += m->latency[h][ADSERVE_LATENCY_NBUCKETS];

        p = ngx_slprintf(p, last,
                         "adserve_http_request_duration_seconds_bucket{handler=\"%s\","
                         "le=\"+Inf\"} %uL\n"
                         "adserve_http_request_duration_seconds_sum{handler=\"%s\"} %uL.%03uL\n"
                         "adserve_http_request_duration_seconds_count{handler=\"%s\"} %uL\n",
                         ngx_http_adserve_handler_names[h], n,
                         ngx_http_adserve_handler_names[h], m->latency_ms[h] / 1000,
                         m->latency_ms[h] % 1000, ngx_http_adserve_handler_names[h], n);
    }

    return p;
}


static u_char *
ngx_http_adserve_print_serving(u_char *p, u_char *last, ngx_http_adserve_metrics_slot_t *m)
{
    ngx_uint_t  i;

    p = ngx_http_adserve_family(p, last, "adserve_ads_total", "counter",
                                "Ads answered, by format (a recommendation answer is one, "
                                "whatever its items).");

    for (i = 0; i < ADSERVE_FORMAT_COUNT; i++) {
        p = ngx_slprintf(p, last, "adserve_ads_total{format=\"%s\"} %uL\n",
                         adserve_format_names[i], m->ads[i]);
    }

    p = ngx_slprintf(p, last, "adserve_ads_total{format=\"recommendation\"} %uL\n",
                     m->ads[ADSERVE_FORMAT_COUNT]);

    p = ngx_http_adserve_family(p, last, "adserve_nobids_total", "counter",
                                "Ad requests answered without an ad (204, or an empty "
                                "VAST).");

    p = ngx_slprintf(p, last, "adserve_nobids_total{handler=\"ad\"} %uL\n"
                              "adserve_nobids_total{handler=\"vast\"} %uL\n",
                     m->nobids[NGX_HTTP_ADSERVE_H_AD], m->nobids[NGX_HTTP_ADSERVE_H_VAST]);

    p = ngx_http_adserve_family(p, last, "adserve_events_total", "counter",
                                "Tracking events taken, by type as the counters name "
                                "them (imp, clk, conv, and VAST's; repeats included, "
                                "which Redis keeps once).");

    for (i = 0; i < ADSERVE_EVENT_COUNT; i++) {
        p = ngx_slprintf(p, last, "adserve_events_total{type=\"%s\"} %uL\n",
                         adserve_event_name((adserve_event_e) i), m->events[i]);
    }

    p = ngx_http_adserve_scalar(p, last, "adserve_invalid_tokens_total", "counter",
                                "Tracking requests whose ad_log token did not open, or "
                                "had expired.", m->invalid_tokens);
    p = ngx_http_adserve_scalar(p, last, "adserve_cap_timeouts_total", "counter",
                                "A user's frequency caps or history not read in time "
                                "(adserve_cap_timeout): capped demand did not serve.",
                                m->cap_timeouts);

    return p;
}


static u_char *
ngx_http_adserve_print_node(u_char *p, u_char *last, ngx_http_adserve_metrics_sum_t *sum,
    ngx_http_adserve_loader_t *ld)
{
    ngx_http_adserve_metrics_slot_t  *m = &sum->m;
    adserve_snapshot_t               *s = ld ? ld->snapshot : NULL;
    ngx_msec_t                        age;

    p = ngx_http_adserve_scalar(p, last, "adserve_workers", "gauge",
                                "nginx workers of the node that count here.", sum->workers);
    p = ngx_http_adserve_per_conn(p, last, "adserve_redis_connected_workers", "gauge",
                                  "Workers whose Redis connection of this kind is up.",
                                  m->redis_up);
    p = ngx_http_adserve_per_conn(p, last, "adserve_redis_reconnects_total", "counter",
                                  "Redis connections made again after one was lost.",
                                  m->redis_reconnects);
    p = ngx_http_adserve_scalar(p, last, "adserve_events_buffered", "gauge",
                                "Events waiting in the workers for Redis, at their last "
                                "flush.", m->events_buffered);
    p = ngx_http_adserve_scalar(p, last, "adserve_events_buffer_capacity", "gauge",
                                "What the workers' event buffers hold at most "
                                "(adserve_event_buffer each).", m->events_capacity);
    p = ngx_http_adserve_scalar(p, last, "adserve_events_dropped_total", "counter",
                                "Events dropped: a full buffer, or a batch Redis refused "
                                "for good.", m->events_dropped);
    p = ngx_http_adserve_hzone_metrics(p, last);

    if (s == NULL) {
        return p;
    }

    age = ngx_current_msec - ld->loaded_at;

    p = ngx_http_adserve_scalar(p, last, "adserve_snapshot_revision", "gauge",
                                "Revision (adserve:rev) of the snapshot served.",
                                (uint64_t) s->rev);
    p = ngx_http_adserve_family(p, last, "adserve_snapshot_age_seconds", "gauge",
                                "Since the answering worker took the snapshot it serves.");
    p = ngx_slprintf(p, last, "adserve_snapshot_age_seconds %M.%03M\n", age / 1000, age % 1000);
    p = ngx_http_adserve_family(p, last, "adserve_snapshot_build_seconds", "gauge",
                                "How long the snapshot served took to build.");
    p = ngx_slprintf(p, last, "adserve_snapshot_build_seconds %ui.%03ui\n",
                     (ngx_uint_t) s->stats.build_ms / 1000, (ngx_uint_t) s->stats.build_ms % 1000);
    p = ngx_http_adserve_scalar(p, last, "adserve_snapshot_bytes", "gauge",
                                "Size of the snapshot served in the node's zone, "
                                "with what it borrows from those before.",
                                s->chain_bytes);

    return p;
}


/* 64 KiB holds every series, every status of every handler included */
#define NGX_HTTP_ADSERVE_METRICS_MAX  65536

ngx_int_t
ngx_http_adserve_metrics_handler(ngx_http_request_t *r)
{
    static ngx_str_t                 type = ngx_string(ADSERVE_PROMETHEUS_TYPE);
    ngx_http_adserve_metrics_sum_t  *sum;
    u_char                          *body, *p, *last;
    ngx_int_t                        rc;

    rc = ngx_http_adserve_get_only(r);
    if (rc != NGX_OK) {
        return rc;
    }

    if (ngx_http_adserve_metrics_sh == NULL) {
        return NGX_HTTP_NOT_FOUND;          /* no serving, nothing counted */
    }

    sum = ngx_pcalloc(r->pool, sizeof(ngx_http_adserve_metrics_sum_t));
    body = ngx_pnalloc(r->pool, NGX_HTTP_ADSERVE_METRICS_MAX);
    if (sum == NULL || body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_http_adserve_metrics_sum(sum);

    last = body + NGX_HTTP_ADSERVE_METRICS_MAX;
    p = ngx_http_adserve_print_requests(body, last, &sum->m);
    p = ngx_http_adserve_print_serving(p, last, &sum->m);
    p = ngx_http_adserve_print_node(p, last, sum, ngx_http_adserve_loader(r));

    return ngx_http_adserve_send_as(r, NGX_HTTP_OK, body, p - body, &type);
}
