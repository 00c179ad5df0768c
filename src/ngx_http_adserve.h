
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

#include "adserve_snapshot.h"
#include "adserve_records.h"


/* one Redis connection of a worker, on the nginx event loop */

typedef struct ngx_http_adserve_redis_s  ngx_http_adserve_redis_t;

typedef void (*ngx_http_adserve_redis_handler_pt)(ngx_http_adserve_redis_t *rd);

struct ngx_http_adserve_redis_s {
    redisAsyncContext                 *ac;
    ngx_connection_t                  *conn;
    ngx_event_t                        timer;      /* connect timeout, then backoff */
    ngx_log_t                         *log;

    ngx_str_t                          addr;       /* as configured, for logs */
    char                              *host;       /* NUL-terminated IP or path */
    int                                port;       /* 0 for a unix socket */
    ngx_msec_t                         timeout;
    ngx_msec_t                         backoff;

    ngx_http_adserve_redis_handler_pt  on_up;
    ngx_http_adserve_redis_handler_pt  on_down;
    void                              *data;

    unsigned                           connected:1;
    unsigned                           down_logged:1;
    unsigned                           exiting:1;
};


ngx_int_t ngx_http_adserve_redis_parse_addr(ngx_conf_t *cf, ngx_str_t *addr,
    ngx_http_adserve_redis_t *rd);
void ngx_http_adserve_redis_start(ngx_http_adserve_redis_t *rd);
void ngx_http_adserve_redis_drop(ngx_http_adserve_redis_t *rd,
    const char *reason);
void ngx_http_adserve_redis_stop(ngx_http_adserve_redis_t *rd);
void ngx_http_adserve_redis_healthy(ngx_http_adserve_redis_t *rd);
ngx_int_t ngx_http_adserve_redis_command(ngx_http_adserve_redis_t *rd,
    redisCallbackFn *fn, void *data, int argc, const char **argv,
    const size_t *argvlen);


/* the worker's snapshot and the loader that keeps it fresh */

typedef enum {
    NGX_HTTP_ADSERVE_IDLE = 0,
    NGX_HTTP_ADSERVE_POLLING,         /* revision and change log, in MULTI */
    NGX_HTTP_ADSERVE_FETCHING,        /* HMGET of the changed records */
    NGX_HTTP_ADSERVE_SCANNING,        /* a full load: HSCAN of every kind */
    NGX_HTTP_ADSERVE_BUILDING         /* in the thread pool */
} ngx_http_adserve_load_state_e;

#define NGX_HTTP_ADSERVE_CHANGES_KEY  "adserve:changes"
#define NGX_HTTP_ADSERVE_STREAM_ID    48      /* "ms-seq", NUL included */

typedef struct ngx_http_adserve_loader_s  ngx_http_adserve_loader_t;

typedef void (*ngx_http_adserve_resume_pt)(ngx_queue_t *q);

struct ngx_http_adserve_loader_s {
    ngx_http_adserve_redis_t       redis;
    adserve_snapshot_t            *snapshot;      /* what requests serve from */
    ngx_msec_t                     loaded_at;

    /* until the first load of a new worker ends, requests wait for it
     * instead of answering 404 for lack of data (a reload, a start) */
    ngx_uint_t                     warming;
    ngx_queue_t                    waiting;
    ngx_http_adserve_resume_pt     resume;

    ngx_http_adserve_load_state_e  state;
    ngx_event_t                    poll;          /* the next revision check */
    ngx_event_t                    deadline;      /* the commands in flight */

    /* the records the snapshot was built from, and how far into the
     * change log they are: "" before any load, "0-0" when the log was
     * empty then (nothing to continue from: the next change reloads) */
    adserve_records_t              records[ADSERVE_KIND_COUNT];
    uint64_t                       rev;
    char                           change_id[NGX_HTTP_ADSERVE_STREAM_ID];

    /* a load in progress */
    adserve_records_t              scan[ADSERVE_KIND_COUNT];    /* full */
    adserve_kind_e                 kind;          /* being scanned */
    char                           cursor[24];
    adserve_arena_t                fetch_arena;   /* ids being fetched: the */
    adserve_str_t                 *fetch_ids[ADSERVE_KIND_COUNT];  /* poll's */
    size_t                         fetch_n[ADSERVE_KIND_COUNT];    /* reply */
    adserve_kind_e                 fetch_order[ADSERVE_KIND_COUNT];  /* is gone */
    ngx_uint_t                     nfetch, fetched;  /* HMGETs sent, answered */
    uint64_t                       next_rev;
    char                           next_change_id[NGX_HTTP_ADSERVE_STREAM_ID];
    ngx_msec_t                     started;

    ngx_uint_t                     loads;         /* snapshots swapped in */
    ngx_uint_t                     full_loads;
    ngx_uint_t                     changes;       /* change log entries applied */
    ngx_uint_t                     failures;

    ngx_msec_t                     refresh;
    ngx_msec_t                     timeout;
    void                          *thread_pool;   /* ngx_thread_pool_t */
};


ngx_int_t ngx_http_adserve_loader_init(ngx_http_adserve_loader_t *ld,
    ngx_cycle_t *cycle);
void ngx_http_adserve_loader_exit(ngx_http_adserve_loader_t *ld);
void ngx_http_adserve_loader_wait(ngx_http_adserve_loader_t *ld, ngx_queue_t *q);


#endif /* _NGX_HTTP_ADSERVE_H_INCLUDED_ */
