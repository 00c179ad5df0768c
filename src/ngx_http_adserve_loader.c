
/*
 * Keeps a worker's snapshot fresh, without ever blocking the worker.
 *
 *   IDLE --poll timer--> POLLING: GET adserve:rev
 *     same revision: back to IDLE
 *     new revision: SCANNING: HSCAN each kind's hash in chunks, copying the
 *       records; small replies keep the event loop responsive
 *     all scanned: BUILDING: the snapshot is compiled in a thread-pool
 *       thread, then swapped in on the event loop; the old one is freed.
 *
 * Consistency: the snapshot carries the revision read before the scan. A
 * write that lands during the scan bumps the revision, so the next poll,
 * at most one refresh interval later, loads again: the snapshot converges
 * to the latest data, and a half-seen write never lasts.
 *
 * Every command in flight has a deadline; a missed one drops the connection
 * (the Redis layer reconnects with backoff) and the load starts over later.
 * Serving keeps using the last snapshot all the while.
 */


#include "ngx_http_adserve.h"

#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#ifdef __GLIBC__
#include <malloc.h>
#endif


#define NGX_HTTP_ADSERVE_SCAN_COUNT  "500"


typedef struct {
#if (NGX_THREADS)
    ngx_thread_task_t           task;
#endif
    ngx_http_adserve_loader_t  *loader;
    adserve_input_t             input;
    adserve_snapshot_t         *snapshot;
    char                        err[128];
} ngx_http_adserve_build_ctx_t;


static void ngx_http_adserve_loader_poll(ngx_event_t *ev);
static void ngx_http_adserve_loader_scan(ngx_http_adserve_loader_t *ld);


/* The first load of this worker is over, well or not: whoever waited for
 * it is answered now, from what there is. */
static void
ngx_http_adserve_loader_warm(ngx_http_adserve_loader_t *ld)
{
    ngx_queue_t  *q;

    if (!ld->warming) {
        return;
    }

    ld->warming = 0;

    while (!ngx_queue_empty(&ld->waiting)) {
        q = ngx_queue_head(&ld->waiting);
        ngx_queue_remove(q);
        ld->resume(q);
    }
}


void
ngx_http_adserve_loader_wait(ngx_http_adserve_loader_t *ld, ngx_queue_t *q)
{
    ngx_queue_insert_tail(&ld->waiting, q);
}


static void
ngx_http_adserve_loader_idle(ngx_http_adserve_loader_t *ld)
{
    if (ld->deadline.timer_set) {
        ngx_del_timer(&ld->deadline);
    }

    if (ld->state == NGX_HTTP_ADSERVE_SCANNING) {
        adserve_input_free(&ld->input);
    }

    ld->state = NGX_HTTP_ADSERVE_IDLE;

    if (!ld->poll.timer_set && !ngx_exiting && !ngx_terminate) {
        ngx_add_timer(&ld->poll, ld->refresh);
    }
}


static void
ngx_http_adserve_loader_fail(ngx_http_adserve_loader_t *ld, const char *why)
{
    ld->failures++;
    ngx_http_adserve_loader_idle(ld);
    ngx_http_adserve_redis_drop(&ld->redis, why);
    ngx_http_adserve_loader_warm(ld);
}


static ngx_int_t
ngx_http_adserve_loader_send(ngx_http_adserve_loader_t *ld, redisCallbackFn *fn,
    int argc, const char **argv, const size_t *argvlen)
{
    if (ngx_http_adserve_redis_command(&ld->redis, fn, ld, argc, argv, argvlen)
        != NGX_OK)
    {
        ngx_http_adserve_loader_idle(ld);
        return NGX_ERROR;
    }

    ngx_add_timer(&ld->deadline, ld->timeout);

    return NGX_OK;
}


/* ---- the build, in a thread -------------------------------------------- */

static void
ngx_http_adserve_build_thread(void *data, ngx_log_t *log)
{
    ngx_http_adserve_build_ctx_t  *bc = data;

    bc->snapshot = adserve_snapshot_build(&bc->input, bc->err, sizeof(bc->err));

#ifdef __GLIBC__
    /* the build frees many small parse blocks: hand the pages back, or every
     * worker keeps its peak for good */
    malloc_trim(0);
#endif
}


static void
ngx_http_adserve_build_finish(ngx_http_adserve_build_ctx_t *bc)
{
    ngx_http_adserve_loader_t  *ld = bc->loader;
    adserve_snapshot_t         *s = bc->snapshot;

    adserve_input_free(&bc->input);
    ld->state = NGX_HTTP_ADSERVE_IDLE;

    if (s == NULL) {
        ld->failures++;
        ngx_log_error(NGX_LOG_ERR, ld->redis.log, 0,
                      "adserve: snapshot build failed: %s", bc->err);

    } else {
        /* requests copy what they send, so the old one can go at once */
        adserve_snapshot_free(ld->snapshot);
        ld->snapshot = s;
        ld->loaded_at = ngx_current_msec;
        ld->loads++;

        ngx_log_error(NGX_LOG_INFO, ld->redis.log, 0,
                      "adserve: snapshot rev %uL: %uz active ad units, "
                      "%uz candidates, %uz skipped records, %uz KiB; "
                      "loaded in %M ms, of which the build %ud ms",
                      s->rev, s->stats.active_units, s->stats.candidates,
                      s->stats.skipped, s->stats.bytes / 1024,
                      ngx_current_msec - ld->started, s->stats.build_ms);
    }

    ngx_free(bc);
    ngx_http_adserve_loader_idle(ld);
    ngx_http_adserve_loader_warm(ld);
}


#if (NGX_THREADS)

static void
ngx_http_adserve_build_done(ngx_event_t *ev)
{
    /* the thread pool reads task->next before calling us: freeing is safe */
    ngx_http_adserve_build_finish(ev->data);
}

#endif


static void
ngx_http_adserve_loader_build(ngx_http_adserve_loader_t *ld)
{
    ngx_http_adserve_build_ctx_t  *bc;

    if (ld->deadline.timer_set) {
        ngx_del_timer(&ld->deadline);
    }

    bc = ngx_calloc(sizeof(ngx_http_adserve_build_ctx_t), ld->redis.log);
    if (bc == NULL) {
        ngx_http_adserve_loader_fail(ld, "out of memory");
        return;
    }

    ld->state = NGX_HTTP_ADSERVE_BUILDING;
    bc->loader = ld;
    bc->input = ld->input;                      /* ownership moves */
    ngx_memzero(&ld->input, sizeof(adserve_input_t));

#if (NGX_THREADS)
    if (ld->thread_pool != NULL) {
        bc->task.ctx = bc;
        bc->task.handler = ngx_http_adserve_build_thread;
        bc->task.event.handler = ngx_http_adserve_build_done;
        bc->task.event.data = bc;
        bc->task.event.log = ld->redis.log;

        if (ngx_thread_task_post(ld->thread_pool, &bc->task) == NGX_OK) {
            return;
        }

        /* queue full: build right here rather than not at all */
    }
#endif

    ngx_http_adserve_build_thread(bc, ld->redis.log);
    ngx_http_adserve_build_finish(bc);
}


/* ---- Redis replies ----------------------------------------------------- */

static void
ngx_http_adserve_loader_on_scan(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_adserve_loader_t  *ld = data;
    redisReply                 *reply = r, *items, *v;
    size_t                      i;

    if (reply == NULL || ld->state != NGX_HTTP_ADSERVE_SCANNING) {
        return;                         /* connection gone: cleanup handles it */
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2
        || reply->element[0]->type != REDIS_REPLY_STRING
        || reply->element[0]->len >= sizeof(ld->cursor)
        || reply->element[1]->type != REDIS_REPLY_ARRAY)
    {
        ngx_http_adserve_loader_fail(ld, reply->type == REDIS_REPLY_ERROR
                                         ? reply->str : "unexpected HSCAN reply");
        return;
    }

    items = reply->element[1];

    for (i = 1; i < items->elements; i += 2) {
        v = items->element[i];
        if (v->type == REDIS_REPLY_STRING
            && adserve_input_add(&ld->input, ld->kind, v->str, v->len) != 0)
        {
            ngx_http_adserve_loader_fail(ld, "out of memory");
            return;
        }
    }

    ngx_memcpy(ld->cursor, reply->element[0]->str, reply->element[0]->len);
    ld->cursor[reply->element[0]->len] = '\0';

    if (ngx_strcmp(ld->cursor, "0") == 0) {
        if (++ld->kind == ADSERVE_KIND_COUNT) {
            ngx_http_adserve_loader_build(ld);
            return;
        }
    }

    if (ld->deadline.timer_set) {
        ngx_del_timer(&ld->deadline);
    }

    ngx_http_adserve_loader_scan(ld);
}


static void
ngx_http_adserve_loader_scan(ngx_http_adserve_loader_t *ld)
{
    const char  *argv[5];

    argv[0] = "HSCAN";
    argv[1] = adserve_kind_keys[ld->kind];
    argv[2] = ld->cursor;
    argv[3] = "COUNT";
    argv[4] = NGX_HTTP_ADSERVE_SCAN_COUNT;

    (void) ngx_http_adserve_loader_send(ld, ngx_http_adserve_loader_on_scan,
                                        5, argv, NULL);
}


static void
ngx_http_adserve_loader_on_rev(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_adserve_loader_t  *ld = data;
    redisReply                 *reply = r;
    uint64_t                    rev;
    ngx_int_t                   n;

    if (reply == NULL || ld->state != NGX_HTTP_ADSERVE_POLLING) {
        return;
    }

    if (reply->type == REDIS_REPLY_NIL) {
        rev = 0;                        /* nothing written yet */

    } else {
        n = reply->type == REDIS_REPLY_STRING
            ? ngx_atoi((u_char *) reply->str, reply->len) : NGX_ERROR;

        if (n == NGX_ERROR) {
            ngx_http_adserve_loader_fail(ld, reply->type == REDIS_REPLY_ERROR
                                             ? reply->str
                                             : "\"" ADSERVE_REV_KEY "\" is not a revision");
            return;
        }

        rev = (uint64_t) n;
    }

    ngx_http_adserve_redis_healthy(&ld->redis);

    if (ld->snapshot != NULL && ld->snapshot->rev == rev) {
        ngx_http_adserve_loader_idle(ld);
        return;
    }

    if (ngx_exiting) {
        /* an old worker after a reload: the new ones load for themselves,
         * and whoever waited here is answered from what there is */
        ngx_http_adserve_loader_idle(ld);
        ngx_http_adserve_loader_warm(ld);
        return;
    }

    if (ld->deadline.timer_set) {
        ngx_del_timer(&ld->deadline);
    }

    adserve_input_init(&ld->input);
    ld->input.rev = rev;
    ld->kind = 0;
    ngx_cpystrn((u_char *) ld->cursor, (u_char *) "0", sizeof(ld->cursor));
    ld->started = ngx_current_msec;
    ld->state = NGX_HTTP_ADSERVE_SCANNING;

    ngx_http_adserve_loader_scan(ld);
}


/* ---- timers and connection events -------------------------------------- */

static void
ngx_http_adserve_loader_poll(ngx_event_t *ev)
{
    ngx_http_adserve_loader_t  *ld = ev->data;
    const char                 *argv[2] = { "GET", ADSERVE_REV_KEY };

    if (ld->state != NGX_HTTP_ADSERVE_IDLE || !ld->redis.connected) {
        return;               /* busy, or on_up polls once connected again */
    }

    ld->state = NGX_HTTP_ADSERVE_POLLING;

    (void) ngx_http_adserve_loader_send(ld, ngx_http_adserve_loader_on_rev,
                                        2, argv, NULL);
}


static void
ngx_http_adserve_loader_deadline(ngx_event_t *ev)
{
    ngx_http_adserve_loader_t  *ld = ev->data;

    ngx_http_adserve_loader_fail(ld, "a command timed out");
}


static void
ngx_http_adserve_loader_on_up(ngx_http_adserve_redis_t *rd)
{
    ngx_http_adserve_loader_t  *ld = rd->data;

    if (ld->poll.timer_set) {
        ngx_del_timer(&ld->poll);
    }

    ngx_http_adserve_loader_poll(&ld->poll);
}


static void
ngx_http_adserve_loader_on_down(ngx_http_adserve_redis_t *rd)
{
    ngx_http_adserve_loader_t  *ld = rd->data;

    /* a build in the thread pool finishes on its own */
    if (ld->state != NGX_HTTP_ADSERVE_BUILDING) {
        ngx_http_adserve_loader_idle(ld);
        ngx_http_adserve_loader_warm(ld);
    }
}


static void
ngx_http_adserve_loader_event(ngx_event_t *ev, ngx_event_handler_pt handler,
    ngx_http_adserve_loader_t *ld)
{
    ev->handler = handler;
    ev->data = ld;
    ev->log = ld->redis.log;
    ev->cancelable = 1;       /* a graceful shutdown does not wait for them */
}


ngx_int_t
ngx_http_adserve_loader_init(ngx_http_adserve_loader_t *ld, ngx_cycle_t *cycle)
{
    ld->redis.log = cycle->log;
    ld->redis.data = ld;
    ld->warming = 1;
    ngx_queue_init(&ld->waiting);
    ld->redis.on_up = ngx_http_adserve_loader_on_up;
    ld->redis.on_down = ngx_http_adserve_loader_on_down;

    ngx_http_adserve_loader_event(&ld->poll, ngx_http_adserve_loader_poll, ld);
    ngx_http_adserve_loader_event(&ld->deadline, ngx_http_adserve_loader_deadline,
                                  ld);

    ngx_http_adserve_redis_start(&ld->redis);

    return NGX_OK;
}


void
ngx_http_adserve_loader_exit(ngx_http_adserve_loader_t *ld)
{
    if (ld->poll.timer_set) {
        ngx_del_timer(&ld->poll);
    }

    if (ld->deadline.timer_set) {
        ngx_del_timer(&ld->deadline);
    }

    ngx_http_adserve_redis_stop(&ld->redis);

    if (ld->state == NGX_HTTP_ADSERVE_SCANNING) {
        adserve_input_free(&ld->input);
    }

    /* a build still running in a thread owns its input; the process exit
     * reclaims it */
    adserve_snapshot_free(ld->snapshot);
    ld->snapshot = NULL;
}
