
/*
 * The change log's watch: the builder waits on adserve:changes with a
 * blocking XREAD, on a Redis connection of its own, and polls as soon as
 * an entry comes rather than at its next tick (adserve_refresh: half of it,
 * on average, of every write's freshness).
 *
 * It only ever makes a poll sooner. The tick polls as it did, so a watch
 * that is down, late or confused costs freshness, never a change: what an
 * entry means is read by the poll (_loader.c), not here. The connection
 * is the builder's alone: a follower has nothing to poll.
 */


#include "ngx_http_adserve.h"


#define NGX_HTTP_ADSERVE_WATCH_MS       1000     /* Redis holds an XREAD */
#define NGX_HTTP_ADSERVE_WATCH_COUNT    "1000"   /* a backlog in one reply */
#define ngx_http_adserve_watch_str(n)   ngx_http_adserve_watch_str_(n)
#define ngx_http_adserve_watch_str_(n)  #n
#define NGX_HTTP_ADSERVE_WATCH_RETRY    1000     /* ms after an error reply */


static void ngx_http_adserve_watch_send(ngx_http_adserve_watch_t *w);


static void
ngx_http_adserve_watch_reply(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_adserve_watch_t  *w = data;
    redisReply                *reply = r, *entries, *entry;

    (void) ac;

    if (reply == NULL) {
        return;                 /* the connection went: on_up sends again */
    }

    w->out = 0;
    if (w->deadline.timer_set) {
        ngx_del_timer(&w->deadline);
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        /* a reply the poll may explain better (a key of another type): the
         * watch waits, the tick goes on; logged once until it answers */
        if (!w->warned) {
            ngx_log_error(NGX_LOG_WARN, w->redis.log, 0,
                          NGX_HTTP_ADSERVE_LOG "the change log's watch: %*s",
                          (size_t) reply->len, reply->str);
            w->warned = 1;
        }
        w->retry = 1;
        ngx_add_timer(&w->deadline, NGX_HTTP_ADSERVE_WATCH_RETRY);
        return;
    }

    /* an answer, if only "nothing in a second": its backoff starts over,
     * and its next outage is logged */
    ngx_http_adserve_redis_healthy(&w->redis);
    w->warned = 0;

    /* [[stream, [[id, [field, value, ...]]]]], or nil when it timed out */
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 1
        && reply->element[0]->type == REDIS_REPLY_ARRAY
        && reply->element[0]->elements == 2)
    {
        entries = reply->element[0]->element[1];

        if (entries->type == REDIS_REPLY_ARRAY && entries->elements > 0) {
            entry = entries->element[entries->elements - 1];

            if (entry->type == REDIS_REPLY_ARRAY && entry->elements >= 1
                && entry->element[0]->type == REDIS_REPLY_STRING
                && entry->element[0]->len < sizeof(w->seen))
            {
                ngx_memcpy(w->seen, entry->element[0]->str, entry->element[0]->len);
                w->seen[entry->element[0]->len] = '\0';
                ngx_http_adserve_loader_changed(w->loader);
            }
        }
    }

    ngx_http_adserve_watch_send(w);
}


static void
ngx_http_adserve_watch_send(ngx_http_adserve_watch_t *w)
{
    const char  *argv[] = { "XREAD", "BLOCK",
                            ngx_http_adserve_watch_str(NGX_HTTP_ADSERVE_WATCH_MS),
                            "COUNT", NGX_HTTP_ADSERVE_WATCH_COUNT,
                            "STREAMS", ADSERVE_KEY_CHANGES, w->seen };

    if (w->out || !w->redis.connected || w->redis.exiting) {
        return;
    }

    if (ngx_http_adserve_redis_command(&w->redis, ngx_http_adserve_watch_reply, w,
                                       sizeof(argv) / sizeof(argv[0]), argv, NULL)
        != NGX_OK)
    {
        ngx_http_adserve_redis_drop(&w->redis, "cannot send the change log's watch");
        return;                 /* on_up sends again */
    }

    w->out = 1;

    /* Redis answers by the end of its BLOCK; past that and the timeout,
     * the connection is lost to us */
    if (w->deadline.timer_set) {
        ngx_del_timer(&w->deadline);
    }
    w->retry = 0;
    ngx_add_timer(&w->deadline, NGX_HTTP_ADSERVE_WATCH_MS + w->redis.timeout);
}


static void
ngx_http_adserve_watch_deadline(ngx_event_t *ev)
{
    ngx_http_adserve_watch_t  *w = ev->data;

    if (w->retry) {
        w->retry = 0;
        ngx_http_adserve_watch_send(w);
        return;
    }

    w->out = 0;
    ngx_http_adserve_redis_drop(&w->redis, "the change log's watch timed out");
}


static void
ngx_http_adserve_watch_on_up(ngx_http_adserve_redis_t *rd)
{
    ngx_http_adserve_watch_t  *w = rd->data;

    w->out = 0;

    /* entries since the records' position come at once: a poll then */
    if (w->seen[0] == '\0' || ngx_strcmp(w->seen, "$") == 0) {
        ngx_cpystrn((u_char *) w->seen,
                    (u_char *) (w->loader->change_id[0] ? w->loader->change_id : "$"),
                    sizeof(w->seen));
    }

    ngx_http_adserve_watch_send(w);
}


static void
ngx_http_adserve_watch_on_down(ngx_http_adserve_redis_t *rd)
{
    ngx_http_adserve_watch_t  *w = rd->data;

    w->out = 0;
    w->retry = 0;
    if (w->deadline.timer_set) {
        ngx_del_timer(&w->deadline);
    }
}


/* The builder watches: from its first tick as one, until it exits. */
void
ngx_http_adserve_watch_start(ngx_http_adserve_loader_t *ld)
{
    ngx_http_adserve_watch_t  *w = &ld->watch;

    if (w->started) {
        return;
    }

    /* w->redis: the loader's address as configured (_loader_init); a
     * watch stopped before is one no more */
    w->redis.exiting = 0;
    w->redis.data = w;
    w->redis.on_up = ngx_http_adserve_watch_on_up;
    w->redis.on_down = ngx_http_adserve_watch_on_down;
    w->redis.name = "watch";
    w->redis.metric = NGX_HTTP_ADSERVE_CONN_WATCH;
    w->redis.outage = "changes are seen at each adserve_refresh meanwhile";
    w->loader = ld;
    w->seen[0] = '\0';

    w->deadline.handler = ngx_http_adserve_watch_deadline;
    w->deadline.data = w;
    w->deadline.log = ld->redis.log;
    w->deadline.cancelable = 1;

    w->started = 1;
    ngx_http_adserve_redis_start(&w->redis);
}


void
ngx_http_adserve_watch_stop(ngx_http_adserve_loader_t *ld)
{
    ngx_http_adserve_watch_t  *w = &ld->watch;

    if (!w->started) {
        return;
    }

    w->started = 0;
    w->out = 0;
    if (w->deadline.timer_set) {
        ngx_del_timer(&w->deadline);
    }

    ngx_http_adserve_redis_stop(&w->redis);
}
