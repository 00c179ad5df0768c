
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
    NGX_HTTP_ADSERVE_POLLING,         /* GET adserve:rev sent */
    NGX_HTTP_ADSERVE_SCANNING,        /* HSCAN of one kind after another */
    NGX_HTTP_ADSERVE_BUILDING         /* in the thread pool */
} ngx_http_adserve_load_state_e;

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
    ngx_event_t                    deadline;      /* the command in flight */
    adserve_input_t                input;
    adserve_kind_e                 kind;          /* being scanned */
    char                           cursor[24];
    ngx_msec_t                     started;
    ngx_uint_t                     loads;
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
