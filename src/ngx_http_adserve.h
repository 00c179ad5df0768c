
/*
 * adserve: an ad server inside nginx.
 * Declarations shared by the module's sources.
 */

#ifndef _NGX_HTTP_ADSERVE_H_INCLUDED_
#define _NGX_HTTP_ADSERVE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#include "adserve_snapshot.h"
#include "adserve_vast.h"
#include "adserve_records.h"


/* Every line the module logs starts with it: one grep finds them all. */
#define NGX_HTTP_ADSERVE_LOG  ADSERVE_LOG_PREFIX


/* one Redis connection of a worker, on the nginx event loop */

typedef struct ngx_http_adserve_redis_s  ngx_http_adserve_redis_t;

typedef void (*ngx_http_adserve_redis_handler_pt)(ngx_http_adserve_redis_t *rd);

/* A Lua script run by its SHA-1 (EVALSHA), not by its text (EVAL: Redis
 * hashes the text, hundreds of bytes, on every call): loaded on its
 * connection when first used (or registered), again on every connect,
 * and again after a NOSCRIPT answer (SCRIPT FLUSH). */
#define NGX_HTTP_ADSERVE_SHA_LEN        40             /* SHA-1 in hex */
#define NGX_HTTP_ADSERVE_REDIS_SCRIPTS  4              /* a connection's */

typedef struct {
    const char  *text;
    size_t       len;
    char         sha[NGX_HTTP_ADSERVE_SHA_LEN + 1];    /* "" until first used */
} ngx_http_adserve_script_t;

#define ngx_http_adserve_script(text)  { text, sizeof(text) - 1, "" }

struct ngx_http_adserve_redis_s {
    redisAsyncContext                 *ac;
    ngx_connection_t                  *conn;
    ngx_event_t                        timer;      /* connect timeout, then backoff */
    ngx_log_t                         *log;

    ngx_str_t                          addr;       /* as configured, for logs */
    char                              *host;       /* NUL-terminated IP or path */
    int                                port;       /* 0 for a unix socket */

    /* adserve_redis_sentinel: the primary is whatever these sentinels
     * name (host points to primary), asked again before every connect */
    ngx_array_t                       *sentinels;  /* of ngx_http_adserve_redis_t */
    ngx_str_t                          master;     /* the name they monitor */
    ngx_uint_t                         sentinel;   /* the one asked next */
    ngx_uint_t                         asked;      /* in this round */
    char                               primary[NGX_INET6_ADDRSTRLEN + 1];
    ngx_msec_t                         timeout;
    ngx_msec_t                         backoff;

    ngx_http_adserve_redis_handler_pt  on_up;
    ngx_http_adserve_redis_handler_pt  on_down;
    void                              *data;
    ngx_uint_t                         metric;     /* ngx_http_adserve_conn_e */

    ngx_http_adserve_script_t         *scripts[NGX_HTTP_ADSERVE_REDIS_SCRIPTS];
    ngx_uint_t                         nscripts;
    uint64_t                           script_loads;  /* SCRIPT LOADs sent */

    /* in the outage's log lines: what the connection is for (NULL: the
     * loader's, unnamed) and what goes on meanwhile */
    const char                        *name;
    const char                        *outage;

    unsigned                           connected:1;
    unsigned                           down_logged:1;
    unsigned                           exiting:1;
    unsigned                           writing:1;  /* in redisAsyncHandleWrite */
    unsigned                           asking:1;   /* ac is a sentinel's */
    unsigned                           found:1;    /* primary is a sentinel's answer */
    unsigned                           was_up:1;   /* a connect after it is a reconnect */
    unsigned                           reloading:1;  /* its scripts, after a NOSCRIPT */
};


ngx_int_t ngx_http_adserve_redis_parse_addr(ngx_conf_t *cf, ngx_str_t *addr,
    ngx_http_adserve_redis_t *rd, char **err);
void ngx_http_adserve_redis_start(ngx_http_adserve_redis_t *rd);
void ngx_http_adserve_redis_drop(ngx_http_adserve_redis_t *rd,
    const char *reason);
void ngx_http_adserve_redis_stop(ngx_http_adserve_redis_t *rd);
void ngx_http_adserve_redis_healthy(ngx_http_adserve_redis_t *rd);
/* reply is -READONLY (the server was demoted by a failover): the connection
 * is dropped, so that the next one finds the primary; 1 then */
ngx_uint_t ngx_http_adserve_redis_demoted(ngx_http_adserve_redis_t *rd,
    redisReply *reply);
ngx_int_t ngx_http_adserve_redis_command(ngx_http_adserve_redis_t *rd,
    redisCallbackFn *fn, void *data, int argc, const char **argv,
    const size_t *argvlen);
/* a blocking connection to the primary (the sentinels asked now, when
 * there are), for a worker's last flush; NULL or an errored context with
 * *err set */
redisContext *ngx_http_adserve_redis_connect_now(ngx_http_adserve_redis_t *rd,
    struct timeval tv, const char **err);
/* s among rd's scripts (its SHA-1 computed the first time): loaded now
 * when rd is connected, and on every connect */
ngx_int_t ngx_http_adserve_redis_script(ngx_http_adserve_redis_t *rd,
    ngx_http_adserve_script_t *s);
/* EVALSHA of script s on rd: argv[0] and argv[1] are set here, the caller
 * fills the rest (numkeys, keys, arguments); fn NULL: no reply wanted but a
 * NOSCRIPT's, which loads the connection's scripts again */
ngx_int_t ngx_http_adserve_redis_eval(ngx_http_adserve_redis_t *rd,
    ngx_http_adserve_script_t *s, redisCallbackFn *fn, void *data, int argc,
    const char **argv, size_t *argvlen);
/* reply is -NOSCRIPT: the connection's scripts are loaded again (the call
 * that met it is lost, as one sent during an outage is); 1 then */
ngx_uint_t ngx_http_adserve_redis_noscript(ngx_http_adserve_redis_t *rd,
    const redisReply *reply);
/* a script's commands as arguments, for a caller that sends or keeps them
 * itself (the events' batches, their last flush at exit): SCRIPT LOAD of
 * s, all of it; EVALSHA of s, its first two (the name and the SHA-1) */
#define NGX_HTTP_ADSERVE_SCRIPT_LOAD_ARGS  3
void ngx_http_adserve_script_load_args(const ngx_http_adserve_script_t *s,
    const char **argv, size_t *argvlen);
void ngx_http_adserve_script_call_args(const ngx_http_adserve_script_t *s,
    const char **argv, size_t *argvlen);
size_t ngx_http_adserve_resp_size(int argc, const size_t *argvlen);
u_char *ngx_http_adserve_resp_format(u_char *p, int argc, const char **argv,
    const size_t *argvlen);


/* the worker's snapshot and the loader that keeps it fresh */

typedef enum {
    NGX_HTTP_ADSERVE_IDLE = 0,
    NGX_HTTP_ADSERVE_POLLING,         /* revision and change log, in MULTI */
    NGX_HTTP_ADSERVE_FETCHING,        /* HMGET of the changed records */
    NGX_HTTP_ADSERVE_SCANNING,        /* a full load: HSCAN of every kind */
    NGX_HTTP_ADSERVE_BUILDING         /* in the thread pool */
} ngx_http_adserve_load_state_e;

#define NGX_HTTP_ADSERVE_STREAM_ID    48      /* "ms-seq", NUL included */

typedef struct ngx_http_adserve_loader_s  ngx_http_adserve_loader_t;

typedef void (*ngx_http_adserve_resume_pt)(ngx_queue_t *q);

typedef struct ngx_http_adserve_zone_s  ngx_http_adserve_zone_t;

/* a full load's fresh copy of the records (_scan.c) */
typedef struct ngx_http_adserve_load_s  ngx_http_adserve_load_t;

/* How long the longest of some steps held the event loop, in ms: on the
 * clock, and in the thread's CPU time. They differ by the time the thread
 * waited for a core that the node's other processes held. */
typedef struct {
    double                         wall_ms;
    double                         cpu_ms;
} ngx_http_adserve_longest_t;

typedef struct {
    struct timespec                wall, cpu;
} ngx_http_adserve_step_t;

void ngx_http_adserve_step_start(ngx_http_adserve_step_t *st);
void ngx_http_adserve_step_end(const ngx_http_adserve_step_t *st,
    ngx_http_adserve_longest_t *longest);

/* One hash of a full load: every kind is scanned at once, one HSCAN
 * of each in flight, so that Redis reads the next chunk of one while
 * the worker stores another's. */
typedef struct {
    ngx_http_adserve_loader_t     *loader;
    adserve_kind_e                 kind;
    char                           cursor[24];    /* "0" when done */
    ngx_uint_t                     out;           /* an HSCAN in flight */
    ngx_uint_t                     held;          /* until chunks are parsed */
} ngx_http_adserve_scan_t;

/* The change log's watch (_watch.c): a blocking XREAD on a connection of
 * the builder's own, which makes its next poll come at once. */
typedef struct {
    ngx_http_adserve_redis_t       redis;
    ngx_http_adserve_loader_t     *loader;
    ngx_event_t                    deadline;      /* the XREAD's, or a retry */
    char                           seen[NGX_HTTP_ADSERVE_STREAM_ID];
    unsigned                       started:1;
    unsigned                       out:1;         /* an XREAD in flight */
    unsigned                       retry:1;       /* deadline: send again */
    unsigned                       warned:1;      /* an error reply logged */
} ngx_http_adserve_watch_t;

struct ngx_http_adserve_loader_s {
    ngx_http_adserve_redis_t       redis;
    ngx_http_adserve_watch_t       watch;
    ngx_uint_t                     changed;       /* the watch saw an entry
                                                   * while the loader was
                                                   * busy: poll once idle */
    ngx_msec_t                     polled;        /* the last poll's start */
    ngx_http_adserve_zone_t       *zone;          /* the node's snapshot */
    adserve_snapshot_t            *snapshot;      /* what requests serve from, */
    ngx_uint_t                     gen;           /* the zone's publication */
    ngx_uint_t                     attempts;      /* the zone's, when joined */
    ngx_msec_t                     loaded_at;

    /* until the first load of a new worker ends, requests wait for it
     * instead of answering 404 for lack of data (a reload, a start) */
    ngx_uint_t                     warming;
    ngx_uint_t                     pinging;       /* a follower's PING out */
    ngx_queue_t                    waiting;
    ngx_http_adserve_resume_pt     resume;

    ngx_http_adserve_load_state_e  state;
    ngx_event_t                    poll;          /* the next revision check */
    ngx_event_t                    deadline;      /* the commands in flight */

    /* the records the snapshot was built from, and how far into the
     * change log they are: "" before any load, "0-0" when the log was
     * empty then (nothing to continue from: the next change reloads) */
    adserve_records_t              records[ADSERVE_KIND_COUNT];
    adserve_joins_t                joins;         /* what the last build of
                                                   * the records joined */
    uint64_t                       rev;
    char                           change_id[NGX_HTTP_ADSERVE_STREAM_ID];

    /* a load in progress */
    ngx_http_adserve_load_t       *load;          /* full */
    ngx_http_adserve_scan_t        scans[ADSERVE_KIND_COUNT];
    ngx_uint_t                     scanning;      /* hashes not done yet */
    ngx_uint_t                     parsing;       /* chunks in the pool */
    ngx_uint_t                     holds;         /* scans held for parsing */
    adserve_arena_t                fetch_arena;   /* ids being fetched: the */
    adserve_str_t                 *fetch_ids[ADSERVE_KIND_COUNT];  /* poll's */
    size_t                         fetch_n[ADSERVE_KIND_COUNT];    /* reply */
    adserve_kind_e                 fetch_order[ADSERVE_KIND_COUNT];  /* is gone */
    ngx_uint_t                     nfetch, fetched;  /* HMGETs sent, answered */
    uint64_t                       next_rev;
    char                           next_change_id[NGX_HTTP_ADSERVE_STREAM_ID];
    int64_t                        log_added;     /* the log's entries-added at
                                                   * change_id; -1 unknown */
    int64_t                        next_log_added;
    ngx_msec_t                     started;

    ngx_uint_t                     loads;         /* snapshots swapped in */
    ngx_uint_t                     adopt_failed;  /* the last try: no memory */
    ngx_uint_t                     built;         /* by this worker */
    ngx_uint_t                     full_loads;
    ngx_http_adserve_longest_t     longest;       /* a full load's longest
                                                   * step on the event loop */
    ngx_uint_t                     changes;       /* change log entries applied */
    ngx_uint_t                     failures;
    ngx_uint_t                     rebuild;       /* failed builds in a row: */
    ngx_msec_t                     rebuild_at;    /* the records are built
                                                   * again then */

    ngx_msec_t                     refresh;
    ngx_msec_t                     timeout;
    const char                    *public_url;    /* NUL-terminated */
    const char                    *rec_snapshots; /* NUL-terminated, or NULL */
    void                          *thread_pool;   /* ngx_thread_pool_t */
};


ngx_int_t ngx_http_adserve_loader_init(ngx_http_adserve_loader_t *ld,
    ngx_cycle_t *cycle);
/* The change log has an entry past what the watch saw: a poll now, or as
 * soon as the loader is idle. */
void ngx_http_adserve_loader_changed(ngx_http_adserve_loader_t *ld);
void ngx_http_adserve_watch_start(ngx_http_adserve_loader_t *ld);
void ngx_http_adserve_watch_stop(ngx_http_adserve_loader_t *ld);
void ngx_http_adserve_loader_exit(ngx_http_adserve_loader_t *ld);
/* Takes the node's latest snapshot, if it is newer than the worker's: one
 * read of a shared counter when it is not. */
void ngx_http_adserve_loader_adopt(ngx_http_adserve_loader_t *ld);
void ngx_http_adserve_loader_wait(ngx_http_adserve_loader_t *ld, ngx_queue_t *q);

/* milliseconds since t0 (CLOCK_MONOTONIC), for the log */
double ngx_http_adserve_elapsed_ms(const struct timespec *t0);

/* Work for the loader's thread pool: work(data) in the pool's thread, then
 * finish(data) back on the event loop; both at once, here, when there is
 * no pool or its queue is full (rather than not at all). finish may free
 * what holds the offload. */
typedef struct {
#if (NGX_THREADS)
    ngx_thread_task_t              task;
#endif
    void                         (*work)(void *data, ngx_log_t *log);
    void                         (*finish)(void *data);
    void                          *data;
} ngx_http_adserve_offload_t;

void ngx_http_adserve_offload(ngx_http_adserve_loader_t *ld, ngx_http_adserve_offload_t *o);

/* the loader's states, for the full load (_scan.c) */
void ngx_http_adserve_loader_full(ngx_http_adserve_loader_t *ld);
/* the full load given up: its copy goes once the pool is done with it */
void ngx_http_adserve_loader_full_drop(ngx_http_adserve_loader_t *ld);
void ngx_http_adserve_loader_fail(ngx_http_adserve_loader_t *ld, const char *why);
ngx_int_t ngx_http_adserve_loader_send(ngx_http_adserve_loader_t *ld,
    redisCallbackFn *fn, void *data, int argc, const char **argv);
void ngx_http_adserve_loader_build(ngx_http_adserve_loader_t *ld);
/* a build's or a parse's thread: its priority lowered for the time */
int ngx_http_adserve_background_begin(void);
void ngx_http_adserve_background_end(int nice);


/* ---- the node's snapshot: src/ngx_http_adserve_zone.c --------------------
 *
 * A shared zone (adserve_snapshot_zone) holds the node's snapshot; one
 * worker, the builder, builds into it and publishes, every worker adopts
 * the latest publication (see the file's comment for the lifetimes). */

ngx_http_adserve_zone_t *ngx_http_adserve_zone_add(ngx_conf_t *cf, size_t size);
/* a worker reads the zone from now on (a reader slot); _leave at exit, which
 * also gives up the builder's role */
ngx_int_t ngx_http_adserve_zone_join(ngx_http_adserve_zone_t *zone);
void ngx_http_adserve_zone_leave(ngx_http_adserve_zone_t *zone);
/* whether this worker builds: it claims the role when it is free or its
 * holder is gone; _is_builder only asks */
ngx_uint_t ngx_http_adserve_zone_builder(ngx_http_adserve_zone_t *zone);
ngx_uint_t ngx_http_adserve_zone_is_builder(ngx_http_adserve_zone_t *zone);
void ngx_http_adserve_zone_resign(ngx_http_adserve_zone_t *zone);
/* the builders' first loads ended, in success or not (followers stop
 * waiting when it moves) */
ngx_uint_t ngx_http_adserve_zone_attempts(ngx_http_adserve_zone_t *zone);
void ngx_http_adserve_zone_attempted(ngx_http_adserve_zone_t *zone);
/* a build's allocator (NULL: too many builds not collected yet), and its
 * end, published or not */
const adserve_allocator_t *ngx_http_adserve_zone_build_start(
    ngx_http_adserve_zone_t *zone);
void ngx_http_adserve_zone_build_end(ngx_http_adserve_zone_t *zone);
ngx_int_t ngx_http_adserve_zone_publish(ngx_http_adserve_zone_t *zone,
    adserve_snapshot_t *s);
/* the published snapshot when it is not publication *gen (set), or NULL;
 * _hold once the worker reads only it */
adserve_snapshot_t *ngx_http_adserve_zone_latest(ngx_http_adserve_zone_t *zone,
    ngx_uint_t *gen);
void ngx_http_adserve_zone_hold(ngx_http_adserve_zone_t *zone, ngx_uint_t gen);
/* by the builder: frees what no worker reads and no build holds */
void ngx_http_adserve_zone_collect(ngx_http_adserve_zone_t *zone);
/* what the zone holds in all: a build's bound on borrowing (adserve_input_t) */
size_t ngx_http_adserve_zone_room(ngx_http_adserve_zone_t *zone);
/* appends ,"zone":{...} to the status document */
u_char *ngx_http_adserve_zone_status(ngx_http_adserve_zone_t *zone, u_char *p,
    u_char *last);
#define NGX_HTTP_ADSERVE_ZONE_STATUS_LEN  160


/* ---- events: counted in worker memory, flushed to Redis ----------------
 *
 * src/ngx_http_adserve_events.c. Serving counts ad requests and ads into a
 * per-worker table; tracking events (impressions, clicks, conversions) are
 * queued raw. A timer flushes both at least once a second, as one atomic,
 * idempotent script per batch on the worker's second Redis connection (the
 * first is the loader's); a batch that fails is kept and sent again, with
 * the same id, when Redis is back. Both buffers are bounded: what cannot be
 * kept is dropped, counted and logged. See README "Events".
 */

/* what serving counts per ad unit, line item or creative (adserve_dim_e),
 * by the index of each one's table of counts */
typedef enum {
    NGX_HTTP_ADSERVE_M_REQUESTS = 0,        /* ad requests (units) */
    NGX_HTTP_ADSERVE_M_ADS,                 /* 200 responses */
    NGX_HTTP_ADSERVE_M_OPPORTUNITIES,       /* a line item could have served
                                             * (pacing's denominator) */
    NGX_HTTP_ADSERVE_M_SHOWN,               /* recommended (items, sources) */
    NGX_HTTP_ADSERVE_M_VIEWS,               /* a request's item (items,
                                             * popularity) */
    NGX_HTTP_ADSERVE_M_CLICKS,              /* an item's click (items,
                                             * sources) */
    NGX_HTTP_ADSERVE_M_PASSBACKS,           /* passback answers (units) */
    /* the auction's, per unit and source (ADSERVE_DIM_AD_SOURCE) */
    NGX_HTTP_ADSERVE_M_BID_REQUESTS,
    NGX_HTTP_ADSERVE_M_BIDS,
    NGX_HTTP_ADSERVE_M_WINS,
    NGX_HTTP_ADSERVE_M_TIMEOUTS,
    NGX_HTTP_ADSERVE_M_ERRORS,
    NGX_HTTP_ADSERVE_M_BLOCKED,
    NGX_HTTP_ADSERVE_M_COUNT
} ngx_http_adserve_metric_e;

/* Popularity's counters: views of "{context}/{item id}" in the hour's
 * adserve:pop:{hour} hash rather than its stats (ADSERVE_KEY_POPULARITY) */
#define NGX_HTTP_ADSERVE_DIM_POPULAR    (ADSERVE_DIM_COUNT + 1)
/* the longest counted id: a context, '/', an item id */
#define NGX_HTTP_ADSERVE_COUNTER_ID_MAX (ADSERVE_CONTEXT_MAX + 1 + ADSERVE_ITEM_ID_MAX)

typedef struct ngx_http_adserve_events_s  ngx_http_adserve_events_t;

typedef struct {
    ngx_http_adserve_redis_t  *redis;        /* address to copy */
    ngx_msec_t                 flush;        /* adserve_flush_interval */
    ngx_uint_t                 buffer;       /* adserve_event_buffer: raw events */
    ngx_uint_t                 stream_max;   /* adserve_event_stream_max */
    time_t                     event_ttl;    /* impressions and clicks: the */
    time_t                     conversion_ttl;  /* oldest token accepted */
} ngx_http_adserve_events_conf_t;

ngx_http_adserve_events_t *ngx_http_adserve_events_init(ngx_cycle_t *cycle,
    ngx_http_adserve_events_conf_t *conf);
/* at worker exit: a last, synchronous flush bounded by the Redis timeout */
void ngx_http_adserve_events_exit(ngx_http_adserve_events_t *ev);

/* hot path: n more of metric m for one id (NGX_HTTP_ADSERVE_COUNTER_ID_MAX
 * bytes at most) in the hour of now; hash is adserve_hash(id) (the snapshot
 * keeps it, so it is not computed again). dim is an adserve_dim_e or
 * NGX_HTTP_ADSERVE_DIM_POPULAR. */
void ngx_http_adserve_count(ngx_http_adserve_events_t *ev, time_t now,
    ngx_uint_t dim, const adserve_str_t *id, uint64_t hash,
    ngx_http_adserve_metric_e m, ngx_uint_t n);
/* a count that will come: step 0 fetches its index slot, step 1 (some
 * work later) its counter; neither waits for memory */
void ngx_http_adserve_count_ahead(ngx_http_adserve_events_t *ev, time_t now,
    ngx_uint_t dim, uint64_t hash, ngx_uint_t step);
/* one of metric m for each of n items, as ngx_http_adserve_count of their
 * ids, their cache misses overlapped */
void ngx_http_adserve_count_items(ngx_http_adserve_events_t *ev, time_t now,
    ngx_uint_t dim, const adserve_item_t *const *items, ngx_uint_t n,
    ngx_http_adserve_metric_e m);

/* an authenticated tracking event, queued raw: deduplicated (once per
 * ad_log and type) and counted by the flush script. value: a conversion's
 * value in micros, a VAST error's code, else 0. NGX_OK, or NGX_DECLINED
 * when the buffer is full
 * (dropped and counted). */
ngx_int_t ngx_http_adserve_track(ngx_http_adserve_events_t *ev,
    adserve_event_e type, const adserve_ad_log_t *log, time_t now,
    int64_t value);

/* a forged, altered or expired token: counted as invalid, never as an event */
void ngx_http_adserve_track_invalid(ngx_http_adserve_events_t *ev,
    adserve_event_e type, time_t now);


/* appends ,"events":{...} to the status document; returns the new end */
u_char *ngx_http_adserve_events_status(ngx_http_adserve_events_t *ev,
    u_char *p, u_char *last);
#define NGX_HTTP_ADSERVE_EVENTS_STATUS_LEN  512


typedef struct ngx_http_adserve_main_conf_s  ngx_http_adserve_main_conf_t;


/* ---- a serving request ------------------------------------------------- */

typedef struct ngx_http_adserve_ctx_s  ngx_http_adserve_ctx_t;
typedef struct ngx_http_adserve_auction_s  ngx_http_adserve_auction_t;

/* cap reservations a request may ask for: the first choice's, then those
 * of the next choices when Redis refuses (the user's caps moved since
 * they were read); beyond, capped line items do not serve it */
#define NGX_HTTP_ADSERVE_RESERVE_MAX  3

/* What a request answers once its decision's inputs are known: the ad
 * (src/ngx_http_adserve_serve.c) or the explanation (_explain.c). */
typedef ngx_int_t (*ngx_http_adserve_answer_pt)(ngx_http_request_t *r,
    ngx_http_adserve_ctx_t *ctx, const adserve_unit_t *unit,
    adserve_decision_t *d);

/* What goes on once the user's caps are settled. */
typedef ngx_int_t (*ngx_http_adserve_caps_done_pt)(ngx_http_request_t *r);

/* What a read of the user's state in Redis makes of its reply (NULL: none
 * came). */
typedef void (*ngx_http_adserve_parse_pt)(ngx_http_request_t *r,
    ngx_http_adserve_ctx_t *ctx, redisReply *reply);

/* A command sent ahead of a read of the user's state, in the same round
 * trip: its reply comes first and is only parsed; the read's own reply
 * ends the wait (the segments ahead of the caps). */
typedef struct {
    int                         argc;
    const char                **argv;
    const size_t               *argvlen;
    ngx_http_adserve_parse_pt   parse;
} ngx_http_adserve_user_cmd_t;

/* a target service's call (src/ngx_http_adserve_recsvc.c) */
#define NGX_HTTP_ADSERVE_SVC_NONE       0     /* not called */
#define NGX_HTTP_ADSERVE_SVC_WAITING    1
#define NGX_HTTP_ADSERVE_SVC_ANSWERED   2     /* svc_ids hold its items */
#define NGX_HTTP_ADSERVE_SVC_TIMED_OUT  3     /* the deadline passed */
#define NGX_HTTP_ADSERVE_SVC_FAILED     4     /* an error, a bad answer, down */

/* per request, from the pool */
struct ngx_http_adserve_ctx_s {
    ngx_queue_t            queue;         /* in the loader's waiting list */
    ngx_http_request_t    *request;
    u_char                *tagid;         /* the unit id of the path, and */
    size_t                 tagid_len;
    uint64_t               tagid_hash;    /* its adserve_hash: once a request */
    ngx_str_t              tagid_uri;     /* (ngx_http_adserve_tagid), from
                                           * this r->uri */
    const adserve_unit_t  *unit;          /* found before the body was read, */
    ngx_uint_t             loads;         /* in the snapshot of this load */
    adserve_ad_request_t   req;           /* the parsed body */
    time_t                 now;
    ngx_event_t            caps_timer;    /* the frequency cap read's deadline */
    ngx_uint_t             caps_slot;
    adserve_seen_t        *seen;          /* the user's capped ads, their
                                           * line items by index in */
    ngx_uint_t             seen_loads;    /* the snapshot of this load */
    uint32_t               nseen;
    unsigned               caps_known:1;
    unsigned               caps_waiting:1;
    unsigned               explain:1;     /* the explainer, not serving */
    unsigned               vast:1;        /* GET /app/v0/vast: facts from
                                           * the query, no body */
    ngx_uint_t             svc;           /* the target service's call:
                                           * NGX_HTTP_ADSERVE_SVC_* */
    ngx_event_t            svc_timer;     /* its deadline */
    adserve_str_t         *svc_ids;       /* what it recommended */
    ngx_uint_t             nsvc_ids;
    uint32_t               rnd;           /* the decision's seed: a decision
                                           * made again decides the same */
    uint64_t               reserving;     /* the line item (its hash) whose
                                           * cap reservation is asked for
                                           * (a hash outlives a snapshot) */
    uint64_t               refused[NGX_HTTP_ADSERVE_RESERVE_MAX];
    uint32_t               nrefused;      /* line items Redis refused */
    uint64_t               granted[NGX_HTTP_ADSERVE_RESERVE_MAX];
    uint32_t               ngranted;      /* line items Redis reserved an ad
                                           * of for this request */
    uint32_t               reservations;  /* asked for, this request */
    ngx_msec_t             caps_deadline; /* of all its reads of the user's
                                           * state: adserve_cap_timeout from
                                           * the first one */
    unsigned               reserve_known:1;
    uint32_t              *history;       /* fingerprints of the items in
                                           * the user's recommendation
                                           * history, 0s after them */
    uint32_t               nhistory;      /* with the 0s: whole vectors */
    unsigned               history_known:1;
    unsigned               history_older:1;  /* the node has an older copy */
    ngx_http_adserve_answer_pt     answer;
    ngx_http_adserve_caps_done_pt  caps_done;     /* the read's end */
    ngx_http_adserve_caps_done_pt  finish;        /* the answer, once every
                                                   * input is there */
    ngx_http_adserve_parse_pt      parse;         /* its reply */
    ngx_http_adserve_parse_pt      parse_ahead;   /* the command ahead's */
    const uint64_t        *seg_asked;     /* the segments asked of Redis (a */
    uint32_t               nseg_asked;    /* copy: the snapshot may change), */
    uint64_t               seg_sig;       /* and their unit's segments_sig */
    uint64_t              *segments;      /* those the user is in, */
    uint32_t               nsegments;
    unsigned               segments_known:1;  /* once the reply came */
    const char                    *late;          /* logged when it is late */
    ngx_http_adserve_auction_t    *auction;       /* external demand's, once
                                                   * its bids were asked for */
};

/* The ACTIVE ad unit of the request's path, in the current snapshot. */
void ngx_http_adserve_unit_ahead(ngx_http_request_t *r);
const adserve_unit_t *ngx_http_adserve_unit(ngx_http_request_t *r,
    ngx_http_adserve_ctx_t *ctx);

/* A serving request (adserve_ad, answer NULL: the ad) or the explainer's
 * (its answer): the ad unit, then the body read; a location handler's
 * result. */
ngx_int_t ngx_http_adserve_start(ngx_http_request_t *r,
    ngx_http_adserve_answer_pt answer);

/* the loader's resume: a request parked while the first load ran */
void ngx_http_adserve_resume(ngx_queue_t *q);

/* location handlers: adserve_ad, the CORS preflight (rewrite phase),
 * adserve_explain (src/ngx_http_adserve_explain.c) */
ngx_int_t ngx_http_adserve_ad_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_adserve_vast_handler(ngx_http_request_t *r);

/* Seals log (its fields set) into tok (ADSERVE_TOKEN_MAX bytes): the
 * token's length, or 0 (logged). */
size_t ngx_http_adserve_encode(ngx_http_request_t *r, adserve_ad_log_t *log, u_char *tok);
/* The path a splice of kind writes (adserve_splice_path), made once. */
const ngx_str_t *ngx_http_adserve_splice_path(ngx_uint_t kind);
/* The end of an ad's 200 body after its format member: the unit's event
 * URLs and the ext around the token (n bytes), and its length. */
u_char *ngx_http_adserve_ad_tail(u_char *p, const adserve_unit_t *unit, const u_char *tok,
    size_t n);
size_t ngx_http_adserve_ad_tail_len(const adserve_unit_t *unit, size_t n);
/* The token names the variant of an experiment that served it, if any,
 * and no external win (direct demand, a recommendation). */
void ngx_http_adserve_seal_variant(adserve_ad_log_t *log, const adserve_unit_t *unit);
/* n more of metric m for the variant that unit is, if it is one. */
void ngx_http_adserve_count_variant(ngx_http_adserve_events_t *ev, time_t now,
    const adserve_unit_t *unit, ngx_http_adserve_metric_e m, ngx_uint_t n);

/* at configuration: each source's item tail, made once from the
 * contract's names (NGX_ERROR, logged, when one does not fit) */
ngx_int_t ngx_http_adserve_rec_init(ngx_conf_t *cf);
/* A recommendation ad unit's answer (src/ngx_http_adserve_recommend.c). */
ngx_int_t ngx_http_adserve_answer_rec(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, adserve_decision_t *d);

/* A recommended item's click (its token checked, its count queued): the
 * item's and its source's clicks (?src=), and a view in the history. */
void ngx_http_adserve_rec_click(ngx_http_request_t *r, const adserve_snapshot_t *s,
    const adserve_ad_log_t *log, const adserve_item_t *it, time_t now);

/* A target service's call: NGX_AGAIN while it runs (ctx->finish(r) then
 * answers, by the reply or at the deadline), NGX_ERROR when it cannot be
 * made. */
ngx_int_t ngx_http_adserve_recsvc_call(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit);

/* External demand (src/ngx_http_adserve_auction.c, README "External
 * demand"). start: the unit's bid requests, sent in parallel as background
 * subrequests to adserve_rtb_location; NGX_AGAIN while they are out
 * (ctx->finish(r) answers when all are in or the longest tmax passed),
 * NGX_DECLINED when no source was asked (shares, QPS limits). */
ngx_int_t ngx_http_adserve_auction_start(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit);
/* The best bid's price (CPM, adjusted) once the bids are judged against
 * unit's blocks and floors (once: counted then), or -1 for none. */
double ngx_http_adserve_auction_best(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit);
/* The best bid as the answer (its nurl fired, the others' lurl), or, for
 * lost, the direct ad won: every bid's lurl. */
ngx_int_t ngx_http_adserve_auction_send(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit);
void ngx_http_adserve_auction_lost(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx);
/* A native bid (src/ngx_http_adserve_native_bid.c): its markup read, its
 * macros filled, the unit's requests as it was judged against them, and
 * per request the index of the asset that answers it. */
typedef struct {
    adserve_rtb_native_t      n;
    adserve_rtb_native_req_t  reqs[ADSERVE_RTB_NATIVE_ASSETS_MAX];
    uint8_t                   nreqs;
    uint8_t                   pick[ADSERVE_RTB_NATIVE_ASSETS_MAX];
} ngx_http_adserve_native_bid_t;

/* fills a value's macros in place (url: %-escaped, as a URL's query) */
typedef void (*ngx_http_adserve_fill_pt)(void *data, adserve_str_t *s, int url);

/* bid's markup read in a copy in pool, its macros filled by fill, and
 * checked against unit's asset requests: NULL and *out, or why it cannot
 * be served (a static text). */
const char *ngx_http_adserve_native_bid_read(ngx_pool_t *pool, const adserve_unit_t *unit,
    const adserve_rtb_bid_t *bid, ngx_http_adserve_fill_pt fill, void *data,
    ngx_http_adserve_native_bid_t **out);
/* The answer's ad.native value of a won native bid, with our click and
 * impression URLs around the token (n bytes): the text in r's pool, its
 * length in *len; NULL out of memory. */
u_char *ngx_http_adserve_native_bid_write(ngx_http_request_t *r, const adserve_unit_t *unit,
    const ngx_http_adserve_native_bid_t *nb, const u_char *tok, size_t n, size_t *len);
/* A notice (nurl, lurl, burl): a GET to url, in the background, through
 * adserve_notice_location; its answer is not read. */
void ngx_http_adserve_notice(ngx_http_request_t *r, u_char *url, size_t len);
/* What a subrequest to those locations reads as $adserve_rtb_url and
 * $adserve_rtb_body (its module context). */
typedef struct {
    ngx_str_t   url;
    ngx_str_t   body;
} ngx_http_adserve_outbound_t;
ngx_int_t ngx_http_adserve_add_variables(ngx_conf_t *cf);

/* The user's recommendation history (src/ngx_http_adserve_history.c): read
 * as ngx_http_adserve_caps_read, into ctx->history; recorded after an
 * answer (the items shown, and the item viewed, or NULL) or a click (an
 * item viewed). */
ngx_int_t ngx_http_adserve_history_read(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    ngx_http_adserve_caps_done_pt done);
void ngx_http_adserve_history_record(ngx_pool_t *pool, const adserve_str_t *user,
    time_t now, const adserve_item_t *const *shown, ngx_uint_t nshown,
    const adserve_str_t *viewed);
/* the worker's timer that sends what the node held for the delay; at exit,
 * every held entry, over a blocking connection to addr */
void ngx_http_adserve_history_init(ngx_cycle_t *cycle);
void ngx_http_adserve_history_exit(ngx_http_adserve_redis_t *addr);
ngx_uint_t ngx_http_adserve_history_has(const ngx_http_adserve_ctx_t *ctx,
    const adserve_item_t *it);
/* before the answer reads the history: the node's older copy, if the read
 * that was to replace it did not come (late, failed, not sent) */
void ngx_http_adserve_history_older(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx);

/* The node's copy of users' histories (src/ngx_http_adserve_hzone.c): a
 * shared zone of adserve_history_zone bytes, trusted for
 * adserve_history_refresh after each read of Redis. A history as item
 * fingerprints and times, oldest first; room for two (a read's and the
 * copy's, merged). */
#define NGX_HTTP_ADSERVE_HZONE_NAME  "adserve_history"
typedef struct {
    ngx_uint_t  n;
    uint32_t    fp[2 * ADSERVE_HISTORY_MAX];
    uint32_t    at[2 * ADSERVE_HISTORY_MAX];
} ngx_http_adserve_hist_t;

/* An item's fingerprint in a history: 32 bits of its hash, never 0 (the
 * padding of a request's copy). Two items of one fingerprint would filter
 * each other: with 200 entries, one candidate in 20 million is dropped or
 * demoted wrongly, which no contract forbids. 4 bytes keep a request's
 * copy of 200 entries at 0.8 KB, within the request pool's block, four to
 * a vector, and a user's copy in the zone at 1.6 KB. */
static ngx_inline uint32_t
ngx_http_adserve_history_fp(uint64_t hash)
{
    uint32_t  fp;

    /* of the bits Redis's entries keep: theirs and the node's agree */
    hash = adserve_history_hash(hash);
    fp = (uint32_t) (hash ^ (hash >> 32));

    return fp ? fp : 1;
}

ngx_shm_zone_t *ngx_http_adserve_hzone_add(ngx_conf_t *cf, size_t size);
void ngx_http_adserve_hzone_init(ngx_shm_zone_t *shm_zone, time_t refresh,
    ngx_msec_t delay);
/* the user's copy into h, as the fingerprints of its entries within
 * ADSERVE_HISTORY_SECONDS (h->at left): NGX_OK when the node read Redis
 * for it within the refresh (or, with older, at all); NGX_AGAIN when
 * longer ago, h left (read Redis, then _fill; the older copy stands in if
 * the read cannot); NGX_DECLINED when the node has none */
ngx_int_t ngx_http_adserve_hzone_get(uint64_t user, time_t now, ngx_uint_t older,
    ngx_http_adserve_hist_t *h);
/* h, the latest entries read from Redis, merged into the user's copy (a
 * slot taken for them if need be), and the copy's fingerprints back into
 * h (h->at left: the request's set needs none) */
void ngx_http_adserve_hzone_fill(uint64_t user, time_t now, ngx_http_adserve_hist_t *h,
    ngx_http_adserve_hist_t *scratch);
/* Whether an APPEND of a user's entries sets the string's TTL, beyond a
 * new string's (the contract's rule, ADSERVE_HISTORY_TTL_REFRESH): the
 * node's copy knows when it last did for the user, or does not hold them
 * (then the string's growth decides). */
typedef enum {
    NGX_HTTP_ADSERVE_TTL_UNKNOWN = 0,
    NGX_HTTP_ADSERVE_TTL_DUE,           /* not for an hour: now */
    NGX_HTTP_ADSERVE_TTL_SET            /* within the hour */
} ngx_http_adserve_ttl_e;

/* A user's entries held back for one APPEND (adserve_history_delay): the
 * user's id (its key's) and the entries as the contract packs them, oldest
 * first. 64 hold five answers of ten items and their viewed item; an
 * answer of more than 64 goes out alone. */
#define NGX_HTTP_ADSERVE_HELD_MAX  64
typedef struct {
    size_t      len;
    ngx_uint_t  n;
    ngx_uint_t  ttl;                    /* ngx_http_adserve_ttl_e */
    u_char      id[ADSERVE_TOKEN_USER_MAX];
    u_char      entries[NGX_HTTP_ADSERVE_HELD_MAX * ADSERVE_HISTORY_ENTRY];
} ngx_http_adserve_held_t;
/* an answer's or a click's entries (their fingerprints fp[], and packed)
 * onto the user's copy, if the node has it. NGX_OK: the entries are held,
 * to go out with the user's next ones; NGX_DECLINED: the caller sends
 * them, their APPEND's TTL rule in *ttl. Either way, when out->n is not 0
 * the caller first sends out, the user's older held entries (they made
 * room). */
ngx_int_t ngx_http_adserve_hzone_append(uint64_t user, time_t now, const uint32_t *fp,
    ngx_uint_t n, const adserve_str_t *id, const u_char *entries,
    ngx_http_adserve_held_t *out, ngx_uint_t *ttl);
/* up to max users' held entries into out[], those held at now for age
 * or longer, oldest first; taken from the zone: the caller sends them.
 * How many. */
ngx_uint_t ngx_http_adserve_hzone_due(ngx_msec_t now, ngx_msec_t age,
    ngx_http_adserve_held_t *out, ngx_uint_t max);
/* adserve_history_delay when the node holds entries back, else 0 */
ngx_msec_t ngx_http_adserve_hzone_delay(void);
/* how often the workers' timers write what is due: a quarter of the delay */
ngx_msec_t ngx_http_adserve_hzone_tick(void);
/* appends ,"history_zone":{...} to the status document */
u_char *ngx_http_adserve_hzone_status(u_char *p, u_char *last);
/* and the adserve_history_copy_total series of /metrics */
u_char *ngx_http_adserve_hzone_metrics(u_char *p, u_char *last);
#define NGX_HTTP_ADSERVE_HZONE_STATUS_LEN  256

/* a video's VAST or a native ad: its splices filled with base, path and token
 * (adserve_vast.h); _init makes the paths, once */
void ngx_http_adserve_splice_init(void);
u_char *ngx_http_adserve_splice(u_char *p, const u_char *text, size_t len,
    const adserve_str_t bases[2], const u_char *tok, size_t n);
ngx_int_t ngx_http_adserve_preflight_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_adserve_explain_handler(ngx_http_request_t *r);


/* ---- frequency caps: src/ngx_http_adserve_caps.c -------------------------
 *
 * adserve:fc:{user id}, a sorted set: one member "{line item id}:{24 random
 * hex digits}" per ad of a capped line item, scored by its time. A request
 * on a unit with capped line items reads the user's members of the last
 * max_seconds, and reserves the ad of a capped line item it chose before
 * answering (ngx_http_adserve_caps_reserve); the read and the reservations
 * share adserve_cap_timeout, and when one is late, fails or cannot be sent,
 * the request goes on with caps unknown: capped line items do not serve it
 * (the safe outcome: a cap is never broken for want of an answer; the ad
 * slot goes to uncapped demand or stays empty). */

/* NGX_AGAIN: the read is under way, and done(r) follows when it ends (in
 * time or not), its result finalizing the request; NGX_DECLINED: caps stay
 * unknown, go on. */
ngx_int_t ngx_http_adserve_caps_read(ngx_http_request_t *r,
    ngx_http_adserve_ctx_t *ctx, uint32_t max_seconds,
    const ngx_http_adserve_user_cmd_t *ahead, ngx_http_adserve_caps_done_pt done);

/* Before an ad of a capped line item is answered: its reservation (exact
 * caps, see ngx_http_adserve_caps.c), within what is left of the caps'
 * deadline (NGX_AGAIN, then done(r); NGX_DECLINED: unknown). After it, the
 * line item is among ctx->granted (the ad may go) or ctx->refused, or
 * nothing is known (!ctx->reserve_known) and capped line items other than
 * the granted do not serve. */
ngx_int_t ngx_http_adserve_caps_reserve(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_li_t *li, uint32_t max_seconds, ngx_http_adserve_caps_done_pt done);

/* The machinery under the caps read, for any read of a user's state on
 * the caps' connection: one command (and the one ahead of it, or NULL),
 * its deadline (adserve_cap_timeout), parse(r, ctx, reply) when the reply
 * comes in time, then done(r). The same results as
 * ngx_http_adserve_caps_read; late is logged when the deadline passes. */
ngx_int_t ngx_http_adserve_user_read(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const ngx_http_adserve_user_cmd_t *ahead, ngx_http_adserve_script_t *script, int argc,
    const char **argv, size_t *argvlen, ngx_http_adserve_parse_pt parse, const char *late,
    ngx_http_adserve_caps_done_pt done);

/* ---- segments: src/ngx_http_adserve_segments.c ----------------------------
 *
 * The user's memberships of the segments the unit's line items target
 * (README "Segments"), read with the caps in one round trip and the same
 * deadline: NGX_AGAIN, then done(r); NGX_DECLINED: go on (the segments
 * are unknown when a read was needed). _facts gives the decision what is
 * known: unknown membership, and targeted demand does not serve. */
ngx_int_t ngx_http_adserve_user_state_read(ngx_http_request_t *r,
    ngx_http_adserve_ctx_t *ctx, const adserve_unit_t *unit,
    ngx_http_adserve_caps_done_pt done);
void ngx_http_adserve_segments_facts(const ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, adserve_req_ctx_t *facts);

/* A write of a user's state on the caps' connection, fn (or nothing, when
 * NULL) called with the reply; on the wire at the end of the iteration. */
ngx_uint_t ngx_http_adserve_user_writable(void);
ngx_int_t ngx_http_adserve_user_write(int argc, const char **argv, const size_t *argvlen,
    redisCallbackFn *fn, void *data);
/* the same, of a script (ngx_http_adserve_redis_eval: argv[0] and argv[1]
 * are set there) */
ngx_int_t ngx_http_adserve_user_eval(ngx_http_adserve_script_t *script, int argc,
    const char **argv, size_t *argvlen);

/* a reply on the caps' connection was -READONLY (a failover demoted the
 * server): the connection is dropped, and finds the primary again; 1 then */
ngx_uint_t ngx_http_adserve_user_demoted(redisReply *reply);

/* the caps' own connection to the primary, per worker */
ngx_int_t ngx_http_adserve_caps_init(ngx_cycle_t *cycle,
    ngx_http_adserve_redis_t *addr);
void ngx_http_adserve_caps_exit(void);


/* ---- pacing: src/ngx_http_adserve_pacing.c -------------------------------
 *
 * Every adserve_pacing_interval: the opportunities each paced line item had
 * in this worker are added to the counters, the delivered counts of every
 * paced, CPC or CPA line item are read from adserve:delivery (the loader's
 * connection), and adserve_pace_update sets each one's pace. Also right
 * after a snapshot swap that brought line items with no pace yet. */

ngx_int_t ngx_http_adserve_pacing_init(ngx_cycle_t *cycle,
    ngx_http_adserve_main_conf_t *amcf);
void ngx_http_adserve_pacing_exit(void);
/* the loader is swapping snapshots (old is still there): the pace table
 * moves to s's line items; NGX_ERROR out of memory, and s must not serve */
ngx_int_t ngx_http_adserve_pacing_swapped(adserve_snapshot_t *s,
    adserve_snapshot_t *old);
/* the worker's pace of each line item of the current snapshot, by index:
 * what adserve_decision_t.paces takes */
adserve_pace_t *ngx_http_adserve_paces(void);


/* ---- metrics: src/ngx_http_adserve_metrics.c ------------------------------
 *
 * Each worker counts in its slot of a shared zone, a scrape sums them (GET
 * /metrics, adserve_metrics). Counters first, gauges from redis_up on: the
 * scrape sums the counters of every slot, the gauges of live workers. */

typedef enum {
    NGX_HTTP_ADSERVE_H_AD = 0,
    NGX_HTTP_ADSERVE_H_VAST,
    NGX_HTTP_ADSERVE_H_EVENT,
    NGX_HTTP_ADSERVE_H_EXPLAIN,
    NGX_HTTP_ADSERVE_HANDLERS
} ngx_http_adserve_handler_e;

/* a worker's Redis connections (ngx_http_adserve_redis_t.metric) */
typedef enum {
    NGX_HTTP_ADSERVE_CONN_SNAPSHOT = 0,
    NGX_HTTP_ADSERVE_CONN_EVENTS,
    NGX_HTTP_ADSERVE_CONN_CAPS,
    NGX_HTTP_ADSERVE_CONN_WATCH,
    NGX_HTTP_ADSERVE_CONNS
} ngx_http_adserve_conn_e;

#define NGX_HTTP_ADSERVE_STATUSES  23      /* 22 of their own, and "other" */

typedef struct {
    /* counters */
    uint64_t    requests[NGX_HTTP_ADSERVE_HANDLERS][NGX_HTTP_ADSERVE_STATUSES];
    uint64_t    latency[NGX_HTTP_ADSERVE_HANDLERS][ADSERVE_LATENCY_NBUCKETS + 1];
    uint64_t    latency_ms[NGX_HTTP_ADSERVE_HANDLERS];
    uint64_t    ads[ADSERVE_FORMAT_COUNT + 1];       /* + recommendation */
    uint64_t    nobids[NGX_HTTP_ADSERVE_HANDLERS];
    uint64_t    events[ADSERVE_EVENT_COUNT];
    uint64_t    invalid_tokens;
    uint64_t    cap_timeouts;
    uint64_t    events_dropped;
    uint64_t    redis_reconnects[NGX_HTTP_ADSERVE_CONNS];
    /* gauges */
    uint64_t    redis_up[NGX_HTTP_ADSERVE_CONNS];
    uint64_t    events_buffered;
    uint64_t    events_capacity;
} ngx_http_adserve_metrics_slot_t;

/* where this worker counts: m->x++ from anywhere in the worker */
extern ngx_http_adserve_metrics_slot_t  *ngx_http_adserve_tally;

ngx_shm_zone_t *ngx_http_adserve_metrics_add(ngx_conf_t *cf);
void ngx_http_adserve_metrics_init(ngx_shm_zone_t *shm_zone);
void ngx_http_adserve_metrics_exit(void);
/* in the rewrite phase: r counts as handler's (the first location's) */
void ngx_http_adserve_metrics_mark(ngx_http_request_t *r, ngx_uint_t handler);
ngx_int_t ngx_http_adserve_metrics_log(ngx_http_request_t *r);
ngx_int_t ngx_http_adserve_metrics_handler(ngx_http_request_t *r);


/* ---- once per node: src/ngx_http_adserve_once.c ---------------------------
 *
 * A shared set of recent keys: 1 the first time any worker of the node asks
 * for a key lately, 0 after (an external impression's billing notice). */

ngx_shm_zone_t *ngx_http_adserve_once_add(ngx_conf_t *cf);
void ngx_http_adserve_once_init(ngx_shm_zone_t *shm_zone);
ngx_uint_t ngx_http_adserve_once(uint64_t key);


/* ---- the module's configuration, shared by its sources ---------------- */

struct ngx_http_adserve_main_conf_s {
    ngx_http_adserve_redis_t    redis;         /* address, from the config */
    ngx_http_adserve_redis_t    redis_write;   /* the primary: events, caps */
    ngx_msec_t                  redis_timeout;
    size_t                      zone_size;     /* adserve_snapshot_zone */
    ngx_http_adserve_zone_t    *zone;
    ngx_msec_t                  refresh;
    ngx_msec_t                  flush;         /* adserve_flush_interval */
    ngx_msec_t                  pacing;        /* adserve_pacing_interval */
    ngx_msec_t                  cap_timeout;   /* adserve_cap_timeout */
    ngx_uint_t                  event_buffer;
    ngx_uint_t                  stream_max;
    time_t                      event_ttl;     /* impressions and clicks */
    time_t                      conversion_ttl;
    ngx_flag_t                  test_clock;    /* honour X-Adserve-Clock */
    ngx_str_t                   public_url;
    ngx_str_t                   rec_snapshots; /* the snapshot fallbacks' folder */
    ngx_str_t                   rec_services;  /* target services' location prefix */
    ngx_msec_t                  rec_timeout;   /* a target service's deadline */
    ngx_str_t                   rtb_location;  /* where bid requests go */
    ngx_str_t                   notice_location;  /* and notices */
    ngx_str_t                   key_file;
    adserve_tokens_t           *tokens;
    ngx_http_adserve_loader_t  *loader;        /* per worker, from init_process */
    ngx_http_adserve_events_t  *events;        /* per worker */
    ngx_uint_t                  serving;       /* some location has adserve_ad */
    ngx_uint_t                  tracking;      /* some location has adserve_event */
    ngx_shm_zone_t             *metrics;       /* the node's counters */
    ngx_shm_zone_t             *once;          /* what the node did lately */
    size_t                      history_size;  /* adserve_history_zone */
    time_t                      history_refresh;  /* adserve_history_refresh */
    ngx_msec_t                  history_delay;    /* adserve_history_delay */
    ngx_shm_zone_t             *history;       /* the node's copy of histories */
    ngx_uint_t                  metrics_location;  /* some has adserve_metrics */
};

extern ngx_module_t  ngx_http_adserve_module;

/* ---- helpers: src/ngx_http_adserve_util.c ------------------------------ */

/* the worker's loader (its snapshot), or NULL outside a worker */
ngx_http_adserve_loader_t *ngx_http_adserve_loader(ngx_http_request_t *r);

/* s as a JSON string, quoted and escaped (6 bytes a byte at most) */
u_char *ngx_http_adserve_json_str(u_char *p, const adserve_str_t *s);

/* Unix seconds for this request: the clock, or X-Adserve-Clock where
 * adserve_test_clock is on (tests and scripts/simulate only). */
time_t ngx_http_adserve_now(ngx_http_request_t *r);
/* the same outside a request (timers): the latest test clock seen by this
 * worker, if any, else the clock */
time_t ngx_http_adserve_clock(void);

/* the request body read into memory, as one buffer (joined from the pool
 * if it came in several); NGX_OK, or a status */
ngx_int_t ngx_http_adserve_body(ngx_http_request_t *r, u_char **start,
    size_t *len);

/* a request parked on a background subrequest (a target service, bids)
 * or its deadline, woken: its answer, ctx->finish */
void ngx_http_adserve_finish_posted(ngx_http_request_t *r);

/* A subrequest of an ad request sends none of its body, nor announces
 * its length: it inherits both, and a proxy would send the length with no
 * body behind it (its peer waiting for the bytes until a timeout). */
void ngx_http_adserve_no_body(ngx_http_request_t *sr);

/* a GET (or HEAD) location's start: NGX_OK, or what to answer */
ngx_int_t ngx_http_adserve_get_only(ngx_http_request_t *r);

/* a shared zone's name, "{prefix}_{layout in hex}", the layout being what
 * this build of the module reads there: a reload that loads a module of
 * another layout makes a new zone rather than read the old one's */
ngx_int_t ngx_http_adserve_zone_name(ngx_conf_t *cf, ngx_str_t *name, const char *prefix,
    uint64_t layout);
/* a shared zone of one zeroed table of size bytes, kept across reloads
 * like any zone of the same name and size; a restart starts it afresh */
ngx_shm_zone_t *ngx_http_adserve_table_add(ngx_conf_t *cf, const char *name,
    size_t size);

/* adds a response header (name a static string, value kept as given); the
 * header, or NULL when out of memory */
ngx_table_elt_t *ngx_http_adserve_header(ngx_http_request_t *r,
    const char *name, ngx_str_t *value);

/* a response with a body in memory (or none); the JSON type when there is */
ngx_int_t ngx_http_adserve_send(ngx_http_request_t *r, ngx_uint_t status,
    u_char *body, size_t len);
/* the same, with its own Content-Type */
ngx_int_t ngx_http_adserve_send_as(ngx_http_request_t *r, ngx_uint_t status, u_char *body,
    size_t len, ngx_str_t *type);
/* 200 application/xml */
ngx_int_t ngx_http_adserve_send_xml(ngx_http_request_t *r, u_char *body, size_t len);

/* location handler of adserve_event (src/ngx_http_adserve_track.c):
 * GET  .../impression?ad_log=T  -> 204
 * GET  .../click?ad_log=T       -> 302 to the creative's landing page
 * POST .../ (the location itself) {"ad_log","type":"conversion","value"?} -> 204 */
ngx_int_t ngx_http_adserve_track_handler(ngx_http_request_t *r);


#endif /* _NGX_HTTP_ADSERVE_H_INCLUDED_ */
