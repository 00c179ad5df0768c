
/*
 * Frequency caps across workers and nodes: the user's recent ads of capped
 * line items live in Redis (adserve:fc:{user id}, see ngx_http_adserve.h),
 * read with a deadline when a request needs them, and reserved, an ad at a
 * time, before an ad of a capped line item is answered.
 *
 * The caps have a connection of their own: behind an event batch on the
 * events connection, a read would wait for the batch (milliseconds, near
 * the read's deadline) and a write would reach Redis after the user's next
 * request.
 *
 * A read's reply may come after its request is gone (the deadline passed and
 * the request was answered): callbacks do not point at requests but at a
 * slot of a per-worker table, with a generation that the request's end
 * bumps, so a late reply finds a stale generation and is dropped.
 */


#include "ngx_http_adserve.h"

#include <openssl/rand.h>


#define NGX_HTTP_ADSERVE_CAP_SLOTS  4096     /* reads in flight per worker */
#define NGX_HTTP_ADSERVE_RID_HEX    (2 * ADSERVE_TOKEN_NONCE)


typedef struct {
    ngx_http_adserve_ctx_t  *ctx;
    ngx_uint_t               gen;
} ngx_http_adserve_cap_slot_t;


static ngx_http_adserve_cap_slot_t  ngx_http_adserve_cap_slots[NGX_HTTP_ADSERVE_CAP_SLOTS];
static ngx_uint_t                   ngx_http_adserve_cap_next;
static ngx_http_adserve_redis_t     ngx_http_adserve_caps_redis;
static ngx_uint_t                   ngx_http_adserve_caps_started;


ngx_int_t
ngx_http_adserve_caps_init(ngx_cycle_t *cycle, ngx_http_adserve_redis_t *addr)
{
    ngx_http_adserve_redis_t  *rd = &ngx_http_adserve_caps_redis;

    *rd = *addr;
    rd->log = cycle->log;
    rd->timeout = addr->timeout ? addr->timeout : 1000;
    rd->data = NULL;
    rd->on_up = NULL;
    rd->on_down = NULL;
    rd->name = "caps";
    rd->metric = NGX_HTTP_ADSERVE_CONN_CAPS;
    rd->outage = "capped line items do not serve meanwhile";

    ngx_http_adserve_redis_start(rd);
    ngx_http_adserve_caps_started = 1;

    return NGX_OK;
}


void
ngx_http_adserve_caps_exit(void)
{
    if (ngx_http_adserve_caps_started) {
        ngx_http_adserve_caps_started = 0;
        ngx_http_adserve_redis_stop(&ngx_http_adserve_caps_redis);
    }
}


static ngx_http_adserve_redis_t *
ngx_http_adserve_caps_conn(void)
{
    return ngx_http_adserve_caps_started ? &ngx_http_adserve_caps_redis : NULL;
}


static void ngx_http_adserve_caps_reply(redisAsyncContext *ac, void *reply,
    void *data);
static void ngx_http_adserve_caps_ahead_reply(redisAsyncContext *ac, void *reply,
    void *data);
static void ngx_http_adserve_caps_parse(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    redisReply *reply);
static void ngx_http_adserve_caps_timeout(ngx_event_t *ev);
static void ngx_http_adserve_caps_cleanup(void *data);


/* adserve:fc:{user id} into key (NGX_HTTP_ADSERVE_FC_KEY bytes); its
 * length. hiredis copies arguments when a command is queued, so the
 * callers' buffers are on their stacks. */
#define NGX_HTTP_ADSERVE_FC_KEY  (sizeof(ADSERVE_KEY_FC) - 1       \
                                  + ADSERVE_TOKEN_USER_MAX)

static size_t
ngx_http_adserve_caps_key(u_char *key, const adserve_str_t *user)
{
    return ngx_cpymem(ngx_cpymem(key, ADSERVE_KEY_FC,
                                 sizeof(ADSERVE_KEY_FC) - 1),
                      user->data, user->len)
           - key;
}


static ngx_int_t
ngx_http_adserve_caps_slot(ngx_http_adserve_ctx_t *ctx)
{
    ngx_uint_t  i, k;

    for (k = 0; k < NGX_HTTP_ADSERVE_CAP_SLOTS; k++) {
        i = (ngx_http_adserve_cap_next + k) % NGX_HTTP_ADSERVE_CAP_SLOTS;

        if (ngx_http_adserve_cap_slots[i].ctx == NULL) {
            ngx_http_adserve_cap_slots[i].ctx = ctx;
            ngx_http_adserve_cap_next = i + 1;
            return (ngx_int_t) i;
        }
    }

    return NGX_ERROR;
}


static void
ngx_http_adserve_caps_release(ngx_http_adserve_ctx_t *ctx)
{
    ngx_http_adserve_cap_slot_t  *slot;

    if (!ctx->caps_waiting) {
        return;
    }

    slot = &ngx_http_adserve_cap_slots[ctx->caps_slot];
    slot->ctx = NULL;
    slot->gen++;
    ctx->caps_waiting = 0;

    if (ctx->caps_timer.timer_set) {
        ngx_del_timer(&ctx->caps_timer);
    }
}


ngx_int_t
ngx_http_adserve_user_read(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const ngx_http_adserve_user_cmd_t *ahead, ngx_http_adserve_script_t *script, int argc,
    const char **argv, size_t *argvlen, ngx_http_adserve_parse_pt parse, const char *late,
    ngx_http_adserve_caps_done_pt done)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_http_adserve_redis_t      *rd;
    ngx_pool_cleanup_t            *cln;
    ngx_msec_int_t                 left;
    ngx_int_t                      slot;
    uintptr_t                      data;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    rd = ngx_http_adserve_caps_conn();

    if (rd == NULL || !rd->connected) {
        return NGX_DECLINED;
    }

    /* one deadline for all of the request's reads: a reservation after the
     * caps' read has what is left of it */
    if (ctx->caps_deadline == 0) {
        ctx->caps_deadline = ngx_current_msec + amcf->cap_timeout;
    }

    left = (ngx_msec_int_t) (ctx->caps_deadline - ngx_current_msec);
    if (left <= 0) {
        return NGX_DECLINED;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_DECLINED;
    }

    slot = ngx_http_adserve_caps_slot(ctx);
    if (slot == NGX_ERROR) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      NGX_HTTP_ADSERVE_LOG "%d reads of users' state in flight, "
                      "serving without it", NGX_HTTP_ADSERVE_CAP_SLOTS);
        return NGX_DECLINED;
    }

    data = (uintptr_t) slot
           | (ngx_http_adserve_cap_slots[slot].gen << 12);

    /* the command ahead, on the wire in the same write: its reply comes
     * first, so the read's own finds it parsed */
    if ((ahead != NULL
         && ngx_http_adserve_redis_command(rd, ngx_http_adserve_caps_ahead_reply,
                                           (void *) data, ahead->argc, ahead->argv,
                                           ahead->argvlen)
            != NGX_OK)
        || (script != NULL
            ? ngx_http_adserve_redis_eval(rd, script, ngx_http_adserve_caps_reply,
                                          (void *) data, argc, argv, argvlen)
            : ngx_http_adserve_redis_command(rd, ngx_http_adserve_caps_reply, (void *) data,
                                             argc, argv, argvlen))
           != NGX_OK)
    {
        /* a reply to what was queued finds another generation */
        ngx_http_adserve_cap_slots[slot].ctx = NULL;
        ngx_http_adserve_cap_slots[slot].gen++;
        return NGX_DECLINED;
    }

    ctx->parse_ahead = ahead != NULL ? ahead->parse : NULL;

    ctx->caps_slot = (ngx_uint_t) slot;
    ctx->caps_waiting = 1;
    ctx->caps_done = done;
    ctx->parse = parse;
    ctx->late = late;

    cln->handler = ngx_http_adserve_caps_cleanup;
    cln->data = ctx;

    ctx->caps_timer.handler = ngx_http_adserve_caps_timeout;
    ctx->caps_timer.data = ctx;
    ctx->caps_timer.log = r->connection->log;
    ngx_add_timer(&ctx->caps_timer, (ngx_msec_t) left);

    /* the request stays open (as it does while its body is read) until the
     * reply or the deadline finalizes it */
    return NGX_AGAIN;
}


ngx_int_t
ngx_http_adserve_caps_read(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    uint32_t max_seconds, const ngx_http_adserve_user_cmd_t *ahead,
    ngx_http_adserve_caps_done_pt done)
{
    u_char       key[NGX_HTTP_ADSERVE_FC_KEY];
    u_char       min[NGX_TIME_T_LEN + 2], *last;
    const char  *argv[5];
    size_t       argvlen[5];

    if (ctx->req.user_id.len > ADSERVE_TOKEN_USER_MAX) {
        return NGX_DECLINED;
    }

    /* the ads inside the longest window: (now - max_seconds, +inf) */
    last = ngx_sprintf(min, "(%T", ctx->now - (time_t) max_seconds);

    argv[0] = "ZRANGEBYSCORE";     argvlen[0] = sizeof("ZRANGEBYSCORE") - 1;
    argv[1] = (char *) key;
    argvlen[1] = ngx_http_adserve_caps_key(key, &ctx->req.user_id);
    argv[2] = (char *) min;        argvlen[2] = last - min;
    argv[3] = "+inf";              argvlen[3] = 4;
    argv[4] = "WITHSCORES";        argvlen[4] = sizeof("WITHSCORES") - 1;

    return ngx_http_adserve_user_read(r, ctx, ahead, NULL, 5, argv, argvlen,
                                      ngx_http_adserve_caps_parse,
                                      "frequency caps not read in time, capped line items "
                                      "do not serve this request", done);
}


/* The reply's members into seen: "{line item id}:{24 hex digits}" and its
 * time; members of line items this snapshot does not know are skipped. */
static void
ngx_http_adserve_caps_parse(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    redisReply *reply)
{
    ngx_http_adserve_main_conf_t  *amcf;
    adserve_snapshot_t            *s;
    adserve_li_t                  *li;
    redisReply                    *m, *sc;
    size_t                         i;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    s = amcf->loader->snapshot;

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY || s == NULL) {
        return;
    }

    ctx->seen = ngx_palloc(r->pool, (reply->elements / 2 + 1) * sizeof(adserve_seen_t));
    if (ctx->seen == NULL) {
        return;
    }

    ctx->nseen = 0;
    ctx->seen_loads = amcf->loader->loads;

    for (i = 0; i + 1 < reply->elements; i += 2) {
        m = reply->element[i];
        sc = reply->element[i + 1];

        if (m->type != REDIS_REPLY_STRING || sc->type != REDIS_REPLY_STRING) {
            continue;
        }

        /* "{line item id}:{24 hex digits}": the suffix has a fixed length */
        if (m->len <= NGX_HTTP_ADSERVE_RID_HEX + 1
            || m->str[m->len - NGX_HTTP_ADSERVE_RID_HEX - 1] != ':')
        {
            continue;
        }

        li = adserve_snapshot_li(s, m->str, m->len - NGX_HTTP_ADSERVE_RID_HEX - 1);
        if (li == NULL || li->ncaps == 0) {
            continue;
        }

        ctx->seen[ctx->nseen].li = (uint32_t) (li - s->lis);
        ctx->seen[ctx->nseen].at = (int64_t) strtoll(sc->str, NULL, 10);
        ctx->nseen++;
    }

    ctx->caps_known = 1;
}


static void
ngx_http_adserve_caps_done(ngx_http_adserve_ctx_t *ctx)
{
    ngx_http_request_t  *r = ctx->request;
    ngx_connection_t    *c = r->connection;
    ngx_int_t            rc;

    ngx_http_adserve_caps_release(ctx);

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   NGX_HTTP_ADSERVE_LOG "caps %s, %uD capped ads seen; history %s, "
                   "%uD fingerprints (whole vectors)",
                   ctx->caps_known ? "known" : "unknown", ctx->nseen,
                   ctx->history_known ? "known" : "unknown", ctx->nhistory);

    /* NGX_AGAIN: the answer waits for more (a target service) */
    rc = ctx->caps_done(r);
    if (rc != NGX_AGAIN) {
        ngx_http_finalize_request(r, rc);
    }

    ngx_http_run_posted_requests(c);
}


/* the slot of a reply's data, NULL when its request is gone */
static ngx_http_adserve_ctx_t *
ngx_http_adserve_caps_owner(void *reply, void *data)
{
    ngx_http_adserve_cap_slot_t  *slot;
    uintptr_t                     v = (uintptr_t) data;

    slot = &ngx_http_adserve_cap_slots[v & (NGX_HTTP_ADSERVE_CAP_SLOTS - 1)];

    if (reply != NULL && ((redisReply *) reply)->type != REDIS_REPLY_ERROR) {
        ngx_http_adserve_redis_healthy(&ngx_http_adserve_caps_redis);
    }

    (void) ngx_http_adserve_user_demoted(reply);

    /* the request is gone: answered at its deadline */

    if (slot->ctx == NULL || (slot->gen & (((uintptr_t) -1) >> 12)) != (v >> 12)) {
        return NULL;
    }

    return slot->ctx;
}


/* the reply of the command ahead of a read: parsed, and the read's own
 * reply, next on the connection, ends the wait */
static void
ngx_http_adserve_caps_ahead_reply(redisAsyncContext *ac, void *reply, void *data)
{
    ngx_http_adserve_ctx_t  *ctx;

    (void) ac;

    ctx = ngx_http_adserve_caps_owner(reply, data);
    if (ctx != NULL && ctx->parse_ahead != NULL) {
        ctx->parse_ahead(ctx->request, ctx, reply);
    }
}


static void
ngx_http_adserve_caps_reply(redisAsyncContext *ac, void *reply, void *data)
{
    ngx_http_adserve_ctx_t  *ctx;

    (void) ngx_http_adserve_redis_noscript(ac->data, reply);

    ctx = ngx_http_adserve_caps_owner(reply, data);
    if (ctx != NULL) {
        ctx->parse(ctx->request, ctx, reply);
        ngx_http_adserve_caps_done(ctx);
    }
}


static void
ngx_http_adserve_caps_timeout(ngx_event_t *ev)
{
    ngx_http_adserve_ctx_t  *ctx = ev->data;

    ngx_log_error(NGX_LOG_INFO, ev->log, 0, NGX_HTTP_ADSERVE_LOG "%s", ctx->late);
    ngx_http_adserve_tally->cap_timeouts++;

    ngx_http_adserve_caps_done(ctx);
}


/* the request ended some other way (a worker exiting): forget the slot */
static void
ngx_http_adserve_caps_cleanup(void *data)
{
    ngx_http_adserve_caps_release(data);
}


/*
 * The reservation: one more ad of a capped line item for the user, taken
 * in Redis only when every cap of the line item still has room, checked
 * and added in one script, so that two requests of one user in flight at
 * once (two slots of a page, on any workers or nodes) cannot both take the
 * last one. The read before the decision only spares the reservations
 * that would be refused. What no cap looks at any more goes, and the key
 * lives as long as the longest cap's window (the TTL only ever grows).
 * Windows as the engine counts them (capped() in adserve_snapshot.c): the
 * ads at times after now - seconds.
 *
 * KEYS[1] the user's key; ARGV[1] the member ("{line item id}:{random}"),
 * ARGV[2] now, ARGV[3] the longest window of any line item, ARGV[4] the
 * line item's prefix ("{line item id}:"), then each cap's seconds and max.
 * 1: reserved, 0: refused. Members of another shape are not counted, as
 * the read skips them (ngx_http_adserve_caps_parse): the line item's are
 * as long as the new one.
 */
static ngx_http_adserve_script_t  ngx_http_adserve_reserve = ngx_http_adserve_script(
    "local key, now, horizon, prefix = KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]\n"
    "redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. (now - horizon))\n"
    "for i = 5, #ARGV - 1, 2 do\n"
    "  local n = 0\n"
    "  for _, m in ipairs(redis.call('ZRANGEBYSCORE', key, '(' .. (now - tonumber(ARGV[i])), '+inf')) do\n"
    /* the prefix found in place: string.sub would make a string of each */
    "    if #m == #ARGV[1] and string.find(m, prefix, 1, true) == 1 then n = n + 1 end\n"
    "  end\n"
    "  if n >= tonumber(ARGV[i + 1]) then return 0 end\n"
    "end\n"
    "redis.call('ZADD', key, now, ARGV[1])\n"
    "if redis.call('TTL', key) < horizon then redis.call('EXPIRE', key, horizon) end\n"
    "return 1\n");


#define NGX_HTTP_ADSERVE_RESERVE_ARGS  (8 + 2 * ADSERVE_CAPS_MAX)


/* the script's answer: reserved, or the line item refused (capped) */
static void
ngx_http_adserve_reserve_parse(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    redisReply *reply)
{
    (void) r;

    if (reply == NULL || reply->type != REDIS_REPLY_INTEGER) {
        return;
    }

    /* at most NGX_HTTP_ADSERVE_RESERVE_MAX reservations a request: room */
    if (reply->integer == 1) {
        ctx->granted[ctx->ngranted++] = ctx->reserving;

    } else {
        ctx->refused[ctx->nrefused++] = ctx->reserving;
    }

    ctx->reserve_known = 1;
}


ngx_int_t
ngx_http_adserve_caps_reserve(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_li_t *li, uint32_t max_seconds, ngx_http_adserve_caps_done_pt done)
{
    u_char       key[NGX_HTTP_ADSERVE_FC_KEY], rnd[NGX_HTTP_ADSERVE_RID_HEX / 2];
    u_char       member[ADSERVE_TOKEN_ID_MAX + 1 + 2 * sizeof(rnd)];
    u_char       nums[3 + 2 * ADSERVE_CAPS_MAX][NGX_TIME_T_LEN + 1];
    const char  *argv[NGX_HTTP_ADSERVE_RESERVE_ARGS];
    size_t       argvlen[NGX_HTTP_ADSERVE_RESERVE_ARGS];
    u_char      *p;
    ngx_uint_t   k, argc;

    if (ctx->req.user_id.len > ADSERVE_TOKEN_USER_MAX || li->id.len > ADSERVE_TOKEN_ID_MAX
        || li->ncaps > ADSERVE_CAPS_MAX || RAND_bytes(rnd, sizeof(rnd)) != 1)
    {
        return NGX_DECLINED;
    }

    /* the member is unique: a second ad of the same line item is a second
     * member, not the first one's time moved */
    p = ngx_cpymem(member, li->id.data, li->id.len);
    *p++ = ':';
    p = ngx_hex_dump(p, rnd, sizeof(rnd));

    /* argv[0] and argv[1]: EVALSHA and the script's */
    argv[2] = "1";                 argvlen[2] = 1;
    argv[3] = (char *) key;
    argvlen[3] = ngx_http_adserve_caps_key(key, &ctx->req.user_id);
    argv[4] = (char *) member;     argvlen[4] = p - member;
    argv[5] = (char *) nums[0];    argvlen[5] = ngx_sprintf(nums[0], "%T", ctx->now) - nums[0];
    argv[6] = (char *) nums[1];
    argvlen[6] = ngx_sprintf(nums[1], "%uD", max_seconds) - nums[1];
    argv[7] = (char *) member;     argvlen[7] = li->id.len + 1;
    argc = 8;

    for (k = 0; k < li->ncaps; k++) {
        argv[argc] = (char *) nums[2 + 2 * k];
        argvlen[argc] = ngx_sprintf(nums[2 + 2 * k], "%uD", li->caps[k].seconds)
                        - nums[2 + 2 * k];
        argc++;
        argv[argc] = (char *) nums[3 + 2 * k];
        argvlen[argc] = ngx_sprintf(nums[3 + 2 * k], "%uD", li->caps[k].max)
                        - nums[3 + 2 * k];
        argc++;
    }

    ctx->reserving = li->hash;
    ctx->reserve_known = 0;

    return ngx_http_adserve_user_read(r, ctx, NULL, &ngx_http_adserve_reserve, (int) argc,
                                      argv, argvlen, ngx_http_adserve_reserve_parse,
                                      "a frequency cap's reservation not answered in time, "
                                      "capped line items do not serve this request", done);
}


ngx_uint_t
ngx_http_adserve_user_demoted(redisReply *reply)
{
    ngx_http_adserve_redis_t  *rd = ngx_http_adserve_caps_conn();

    return rd != NULL && ngx_http_adserve_redis_demoted(rd, reply);
}


/* whether a write on the caps' connection would go now */
ngx_uint_t
ngx_http_adserve_user_writable(void)
{
    ngx_http_adserve_redis_t  *rd = ngx_http_adserve_caps_conn();

    return rd != NULL && rd->connected;
}


/* A write on the caps' connection, fn (when not NULL) called with its
 * reply. It goes out with the iteration's other commands (the Redis layer
 * posts the connection's write): before this worker reads another request,
 * so a user's next request, on any worker, reads what this one wrote. */
ngx_int_t
ngx_http_adserve_user_write(int argc, const char **argv, const size_t *argvlen,
    redisCallbackFn *fn, void *data)
{
    ngx_http_adserve_redis_t  *rd = ngx_http_adserve_caps_conn();

    if (rd == NULL || !rd->connected) {
        return NGX_DECLINED;
    }

    return ngx_http_adserve_redis_command(rd, fn, data, argc, argv, argvlen);
}


ngx_int_t
ngx_http_adserve_user_eval(ngx_http_adserve_script_t *script, int argc, const char **argv,
    size_t *argvlen)
{
    ngx_http_adserve_redis_t  *rd = ngx_http_adserve_caps_conn();

    if (rd == NULL) {
        return NGX_DECLINED;
    }

    return ngx_http_adserve_redis_eval(rd, script, NULL, NULL, argc, argv, argvlen);
}
