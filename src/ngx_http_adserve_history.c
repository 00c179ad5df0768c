
/*
 * A user's recommendation history (ADSERVE_KEY_HISTORY in the contract):
 * the items recommended to them and the items they viewed or clicked,
 * each with its time, in one string of packed entries per user.
 *
 * Read before a recommendation whose placement filters candidates
 * (ViewOut, ViewPenalty): from the node's copy (ngx_http_adserve_hzone.c)
 * when it read the user's lately, else from Redis with the caps' deadline
 * and machinery (ngx_http_adserve_caps.c), the copy then filled. A late or
 * failed read recommends from the older copy, or without the history,
 * since a repeated recommendation breaks no contract, unlike a broken
 * cap. Written after every recommendation with a user id, and on
 * every item click, on the caps' connection: held in the node's copy for
 * adserve_history_delay when the node has one of the user (the copy
 * filters the user's next requests on any worker meanwhile), then sent
 * with the user's other entries of that time in one APPEND by any
 * worker's timer; else at the end of the event loop's iteration with the
 * other requests' commands. The format is the contract's (packed entries
 * in one string): one reply to read, an append to write.
 */


#include "ngx_http_adserve.h"


#define NGX_HTTP_ADSERVE_HISTORY_KEY  (sizeof(ADSERVE_KEY_HISTORY) - 1              \
                                       + ADSERVE_TOKEN_USER_MAX)
#define NGX_HTTP_ADSERVE_HISTORY_KEEP  (ADSERVE_HISTORY_MAX * ADSERVE_HISTORY_ENTRY)

/* appends whose reply is awaited, per worker; beyond, an append goes
 * without its check, and a later one of the user's asks for the cut */
#define NGX_HTTP_ADSERVE_HISTORY_SLOTS  512
/* appends whose reply was lost (the connection went), per worker: each
 * may have made a string with no TTL yet, so each gets its EXPIRE once
 * the connection answers again; beyond, the oldest are forgotten */
#define NGX_HTTP_ADSERVE_HISTORY_LOST   64

/* held entries taken from the zone at once, per worker, for one lock */
#define NGX_HTTP_ADSERVE_HISTORY_DUE    16
/* the fingerprints a membership test compares at a time: two vectors */
#define NGX_HTTP_ADSERVE_HISTORY_LANES  8
/* and by one tick of the timer at most: a backlog (Redis was down) goes
 * out over a few ticks, not in one long iteration */
#define NGX_HTTP_ADSERVE_HISTORY_TICK_MAX  2048


/*
 * The write is APPEND and EXPIRE, plain commands: a script's call cost
 * Redis four times the two commands, on every recommendation. The string
 * is cut to its latest ADSERVE_HISTORY_MAX entries once APPEND's reply
 * says it holds ADSERVE_HISTORY_CUT times as many (every 2 *
 * ADSERVE_HISTORY_MAX entries or so, not on every write), by the script below, which reads the length again:
 * appends of other workers may have come in between, and the cut keeps
 * the latest entries whatever they are. A cut asked for twice cuts once.
 * KEYS[1] the history, ARGV[1] the bytes kept, ARGV[2] the length that
 * asks for the cut.
 */
static ngx_http_adserve_script_t  ngx_http_adserve_history_cut = ngx_http_adserve_script(
    "local n = redis.call('STRLEN', KEYS[1])\n"
    "local keep = tonumber(ARGV[1])\n"
    "if n >= tonumber(ARGV[2]) then\n"
    "  redis.call('SET', KEYS[1], redis.call('GETRANGE', KEYS[1], n - keep, -1), 'KEEPTTL')\n"
    "end\n"
    "return n\n");


/* The key of an append in flight, the bytes it appends and its TTL rule,
 * for its reply (the request is gone by then); free when len is 0. */
typedef struct {
    size_t      len;
    size_t      appended;
    ngx_uint_t  ttl;                  /* ngx_http_adserve_ttl_e */
    u_char      key[NGX_HTTP_ADSERVE_HISTORY_KEY];
} ngx_http_adserve_history_slot_t;


static ngx_http_adserve_history_slot_t  ngx_http_adserve_history_slots[NGX_HTTP_ADSERVE_HISTORY_SLOTS];
static ngx_uint_t                       ngx_http_adserve_history_next;
static ngx_http_adserve_history_slot_t  ngx_http_adserve_history_lost[NGX_HTTP_ADSERVE_HISTORY_LOST];
static ngx_uint_t                       ngx_http_adserve_history_nlost;
/* the timer that sends what the node held for adserve_history_delay */
static ngx_event_t                      ngx_http_adserve_history_tick;
static ngx_http_adserve_held_t          ngx_http_adserve_history_due[NGX_HTTP_ADSERVE_HISTORY_DUE];
/* a user's held entries that an answer's made room for (1.3 KB: neither on
 * the stack nor in a request's pool, whose 4 KB block the history's set
 * half fills) */
static ngx_http_adserve_held_t          ngx_http_adserve_history_full;


static ngx_int_t ngx_http_adserve_history_send(const adserve_str_t *user,
    const u_char *entries, ngx_uint_t n, ngx_uint_t ttl);
static ngx_int_t ngx_http_adserve_history_append(int argc, const char **argv,
    const size_t *argvlen, ngx_uint_t ttl);
static void ngx_http_adserve_history_appended(redisAsyncContext *ac, void *r, void *data);
static void ngx_http_adserve_history_expire(const char *key, size_t len);


static size_t
ngx_http_adserve_history_key(u_char *key, const adserve_str_t *user)
{
    return ngx_cpymem(ngx_cpymem(key, ADSERVE_KEY_HISTORY, sizeof(ADSERVE_KEY_HISTORY) - 1),
                      user->data, user->len)
           - key;
}


/* APPEND key entries: the user's key made into key[] */
static void
ngx_http_adserve_history_append_argv(const char **argv, size_t *argvlen, u_char *key,
    const adserve_str_t *user, const u_char *entries, ngx_uint_t n)
{
    argv[0] = "APPEND";
    argvlen[0] = sizeof("APPEND") - 1;
    argv[1] = (char *) key;
    argvlen[1] = ngx_http_adserve_history_key(key, user);
    argv[2] = (char *) entries;
    argvlen[2] = n * ADSERVE_HISTORY_ENTRY;
}


/* EXPIRE key ADSERVE_HISTORY_SECONDS, the number made into ttl[] */
static void
ngx_http_adserve_history_expire_argv(const char **argv, size_t *argvlen, const char *key,
    size_t len, u_char *ttl)
{
    argv[0] = "EXPIRE";
    argvlen[0] = sizeof("EXPIRE") - 1;
    argv[1] = key;
    argvlen[1] = len;
    argv[2] = (char *) ttl;
    argvlen[2] = ngx_sprintf(ttl, "%d", ADSERVE_HISTORY_SECONDS) - ttl;
}


/* The user's entries within ADSERVE_HISTORY_SECONDS (the callers leave
 * the older out) into ctx->history, as fingerprints of their item ids'
 * hashes (the snapshot may change before the answer: a hash outlives it),
 * in a copy of whole vectors, its tail 0 (no fingerprint is). An array, not
 * a set: ViewOut asks it of 30 or so candidates, and comparing 200
 * fingerprints a few at a time costs less than building a set of them did
 * (190 probes with unpredictable ends, 7 % of a worker's time under the
 * bench's recommendations, and its 2 KB cleared). */
static void
ngx_http_adserve_history_set(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const ngx_http_adserve_hist_t *h)
{
    size_t  n;

    n = ngx_align(h->n, NGX_HTTP_ADSERVE_HISTORY_LANES);

    ctx->history = ngx_palloc(r->pool, ngx_max(n, 1) * sizeof(uint32_t));
    if (ctx->history == NULL) {
        return;
    }

    ngx_memcpy(ctx->history, h->fp, h->n * sizeof(uint32_t));
    ngx_memzero(ctx->history + h->n, (n - h->n) * sizeof(uint32_t));
    ctx->nhistory = (uint32_t) n;
    ctx->history_known = 1;
}


/* A user known by the hash of their id in the node's copy; 0 is a free
 * slot there */
static uint64_t
ngx_http_adserve_history_user(const adserve_str_t *user)
{
    uint64_t  h = adserve_hash(user->data, user->len);

    return h ? h : 1;
}


/* The reply, the latest ADSERVE_HISTORY_MAX entries, merged with the
 * node's copy (which keeps them for the next requests), into the set. */
static void
ngx_http_adserve_history_parse(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    redisReply *reply)
{
    ngx_http_adserve_hist_t   h, scratch;
    adserve_history_entry_t   e;
    const u_char             *p, *end;
    size_t                    n;

    if (reply == NULL || (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_NIL))
    {
        return;
    }

    n = reply->type == REDIS_REPLY_STRING ? reply->len / ADSERVE_HISTORY_ENTRY : 0;
    n = ngx_min(n, ADSERVE_HISTORY_MAX);
    h.n = 0;

    if (n > 0) {
        end = (u_char *) reply->str + reply->len / ADSERVE_HISTORY_ENTRY * ADSERVE_HISTORY_ENTRY;

        for (p = end - n * ADSERVE_HISTORY_ENTRY; p < end; p += ADSERVE_HISTORY_ENTRY) {
            adserve_history_get(p, ctx->now, &e);

            /* older ones never count: neither here nor in the copy */
            if (e.at <= (int64_t) ctx->now - ADSERVE_HISTORY_SECONDS) {
                continue;
            }

            h.fp[h.n] = ngx_http_adserve_history_fp(e.hash);
            h.at[h.n++] = (uint32_t) e.at;
        }
    }

    ngx_http_adserve_hzone_fill(ngx_http_adserve_history_user(&ctx->req.user_id), ctx->now,
                                &h, &scratch);
    ngx_http_adserve_history_set(r, ctx, &h);
}


ngx_int_t
ngx_http_adserve_history_read(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    ngx_http_adserve_caps_done_pt done)
{
    ngx_http_adserve_hist_t   h;
    u_char                    key[NGX_HTTP_ADSERVE_HISTORY_KEY], from[NGX_INT_T_LEN + 1];
    const char               *argv[4];
    size_t                    argvlen[4];
    ngx_int_t                 rc;

    if (ctx->req.user_id.len == 0 || ctx->req.user_id.len > ADSERVE_TOKEN_USER_MAX) {
        return NGX_DECLINED;
    }

    /* the node read it lately: its copy, with every answer since. Read
     * longer ago: Redis's, the copy standing in if Redis is late or down
     * (older than the refresh, but better than none), at the answer */
    rc = ngx_http_adserve_hzone_get(ngx_http_adserve_history_user(&ctx->req.user_id), ctx->now,
                                    0, &h);
    if (rc == NGX_OK) {
        ngx_http_adserve_history_set(r, ctx, &h);
        return NGX_OK;
    }

    ctx->history_older = (rc == NGX_AGAIN);

    /* the latest ADSERVE_HISTORY_MAX entries only: the string may hold
     * up to ADSERVE_HISTORY_CUT times as many until its next cut */
    argv[0] = "GETRANGE";          argvlen[0] = sizeof("GETRANGE") - 1;
    argv[1] = (char *) key;
    argvlen[1] = ngx_http_adserve_history_key(key, &ctx->req.user_id);
    argv[2] = (char *) from;
    argvlen[2] = ngx_sprintf(from, "-%d", NGX_HTTP_ADSERVE_HISTORY_KEEP) - from;
    argv[3] = "-1";                argvlen[3] = 2;

    return ngx_http_adserve_user_read(r, ctx, NULL, NULL, 4, argv, argvlen,
                                      ngx_http_adserve_history_parse,
                                      rc == NGX_AGAIN
                                      ? "view history not read in time, recommending "
                                        "from the node's older copy"
                                      : "view history not read in time, recommending "
                                        "without it", done);
}


void
ngx_http_adserve_history_record(ngx_pool_t *pool, const adserve_str_t *user, time_t now,
    const adserve_item_t *const *shown, ngx_uint_t nshown, const adserve_str_t *viewed)
{
    adserve_history_entry_t   e;
    ngx_http_adserve_held_t  *older = &ngx_http_adserve_history_full;
    adserve_str_t             id;
    u_char                   *entries, *p;
    uint32_t                  fps[ADSERVE_TOPN_MAX + 1];
    ngx_uint_t                i, n, ttl;
    ngx_int_t                 rc;

    nshown = ngx_min(nshown, ADSERVE_TOPN_MAX);
    n = nshown + (viewed != NULL && viewed->len > 0 && viewed->len <= ADSERVE_ITEM_ID_MAX);
    if (user->len == 0 || user->len > ADSERVE_TOKEN_USER_MAX || n == 0) {
        return;
    }

    entries = ngx_pnalloc(pool, n * ADSERVE_HISTORY_ENTRY);
    if (entries == NULL) {
        return;
    }

    e.at = (int64_t) now;

    for (p = entries, i = 0; i < n; i++, p += ADSERVE_HISTORY_ENTRY) {
        if (i < nshown) {
            e.hash = shown[i]->hash;
            e.kind = ADSERVE_HISTORY_SHOWN;
        } else {
            e.hash = adserve_hash(viewed->data, viewed->len);
            e.kind = ADSERVE_HISTORY_VIEWED;
        }
        adserve_history_put(p, &e);
        fps[i] = ngx_http_adserve_history_fp(e.hash);
    }

    /* the node's copy first: the user's next request may come before
     * Redis has this; and there they wait for the user's next ones, when
     * the node holds writes back */
    rc = ngx_http_adserve_hzone_append(ngx_http_adserve_history_user(user), now, fps, n,
                                       user, entries, older, &ttl);

    if (older->n > 0) {
        id.data = (const char *) older->id;
        id.len = older->len;

        if (ngx_http_adserve_history_send(&id, older->entries, older->n, older->ttl)
            != NGX_OK)
        {
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          NGX_HTTP_ADSERVE_LOG "history: %ui entries of a user lost: "
                          "the write could not be sent", older->n);
        }
    }

    if (rc != NGX_OK) {
        (void) ngx_http_adserve_history_send(user, entries, n, ttl);
    }
}


/* The user's entries to Redis: APPEND, and EXPIRE when the string may be
 * new or the TTL rule says so. NGX_DECLINED when the APPEND did not go (no
 * connection). */
static ngx_int_t
ngx_http_adserve_history_send(const adserve_str_t *user, const u_char *entries, ngx_uint_t n,
    ngx_uint_t ttl)
{
    u_char       key[NGX_HTTP_ADSERVE_HISTORY_KEY];
    const char  *argv[3];
    size_t       argvlen[3];
    ngx_int_t    rc;

    ngx_http_adserve_history_append_argv(argv, argvlen, key, user, entries, n);

    /* with a slot, APPEND's reply says when the string needs its TTL;
     * without one, it gets it now */
    rc = ngx_http_adserve_history_append(3, argv, argvlen, ttl);
    if (rc == NGX_DONE) {
        ngx_http_adserve_history_expire(argv[1], argvlen[1]);
    }

    return rc == NGX_DECLINED ? NGX_DECLINED : NGX_OK;
}


/* Every quarter of the delay: the entries held for the delay, to Redis.
 * Only with a connection: without, they wait in the zone (another worker's
 * may be up), and an outage shorter than the zone's room loses none. */
static void
ngx_http_adserve_history_send_due(ngx_event_t *ev)
{
    adserve_str_t  id;
    ngx_uint_t     i, k, sent = 0;

    do {
        if (!ngx_http_adserve_user_writable()) {
            break;
        }

        k = ngx_http_adserve_hzone_due(ngx_current_msec, ngx_http_adserve_hzone_delay(),
                                       ngx_http_adserve_history_due,
                                       NGX_HTTP_ADSERVE_HISTORY_DUE);

        for (i = 0; i < k; i++) {
            id.data = (const char *) ngx_http_adserve_history_due[i].id;
            id.len = ngx_http_adserve_history_due[i].len;

            if (ngx_http_adserve_history_send(&id, ngx_http_adserve_history_due[i].entries,
                                              ngx_http_adserve_history_due[i].n,
                                              ngx_http_adserve_history_due[i].ttl)
                != NGX_OK)
            {
                ngx_log_error(NGX_LOG_WARN, ev->log, 0,
                              NGX_HTTP_ADSERVE_LOG "history: %ui entries of a user "
                              "lost: the write could not be sent",
                              ngx_http_adserve_history_due[i].n);
            }
        }

        sent += k;

    } while (k == NGX_HTTP_ADSERVE_HISTORY_DUE && sent < NGX_HTTP_ADSERVE_HISTORY_TICK_MAX);

    if (!ngx_exiting && !ngx_terminate && !ngx_quit) {
        ngx_add_timer(ev, ngx_http_adserve_hzone_tick());
    }
}


void
ngx_http_adserve_history_init(ngx_cycle_t *cycle)
{
    ngx_event_t  *ev = &ngx_http_adserve_history_tick;

    if (ngx_http_adserve_hzone_delay() == 0) {
        return;
    }

    ev->handler = ngx_http_adserve_history_send_due;
    ev->log = cycle->log;
    ev->data = NULL;
    ev->cancelable = 1;           /* the exit writes what is held */

    ngx_add_timer(ev, ngx_http_adserve_hzone_tick());
}


/* At exit: every entry the node holds (other workers' too: a reload's new
 * ones write theirs again later, a stop's exit with nothing left), over a
 * blocking connection, APPEND and EXPIRE each, in one pipeline a batch. */
void
ngx_http_adserve_history_exit(ngx_http_adserve_redis_t *addr)
{
    ngx_http_adserve_held_t  *due = ngx_http_adserve_history_due;
    redisContext             *c = NULL;
    redisReply               *reply;
    struct timeval            tv;
    adserve_str_t             id;
    u_char                    key[NGX_HTTP_ADSERVE_HISTORY_KEY], ttl[NGX_INT_T_LEN];
    const char               *argv[3], *err = NULL;
    size_t                    argvlen[3];
    u_char                    why[128];
    ngx_uint_t                i, k, users = 0, lost = 0;
    ngx_msec_t                timeout, cutoff;

    if (ngx_http_adserve_history_tick.timer_set) {
        ngx_del_timer(&ngx_http_adserve_history_tick);
    }

    timeout = addr->timeout ? addr->timeout : 1000;
    tv.tv_sec = timeout / 1000;
    tv.tv_usec = (timeout % 1000) * 1000;

    /* what is held now: records the running workers (a reload's new ones)
     * hold later are theirs to write; and on a connection's failure, the
     * rest stay in the zone for them */
    ngx_time_update();
    cutoff = ngx_current_msec;

    while (err == NULL
           && (k = ngx_http_adserve_hzone_due(cutoff, 0, due, NGX_HTTP_ADSERVE_HISTORY_DUE)) > 0)
    {
        if (c == NULL) {
            c = ngx_http_adserve_redis_connect_now(addr, tv, &err);
        }

        for (i = 0; i < k && err == NULL; i++) {
            id.data = (const char *) due[i].id;
            id.len = due[i].len;

            ngx_http_adserve_history_append_argv(argv, argvlen, key, &id, due[i].entries,
                                                 due[i].n);

            if (redisAppendCommandArgv(c, 3, argv, argvlen) != REDIS_OK) {
                err = c->errstr;
                break;
            }

            ngx_http_adserve_history_expire_argv(argv, argvlen, argv[1], argvlen[1], ttl);

            if (redisAppendCommandArgv(c, 3, argv, argvlen) != REDIS_OK) {
                err = c->errstr;
            }
        }

        /* each user's APPEND reply, then its EXPIRE's: an error reply
         * (a key of another type) loses that user's entries alone */
        for (i = 0; i < 2 * k && err == NULL; i++) {
            if (redisGetReply(c, (void **) &reply) != REDIS_OK || reply == NULL) {
                err = c->errstr[0] ? c->errstr : "no reply";
                break;
            }

            if (i % 2 == 0) {
                if (reply->type == REDIS_REPLY_ERROR) {
                    lost += due[i / 2].n;

                } else {
                    users++;
                }
            }

            freeReplyObject(reply);
        }

        if (err != NULL) {
            /* the batch's replies not read: its users' entries may or may
             * not have landed */
            for (i = 0; i < k; i++) {
                lost += due[i].n;
            }

            /* c's errstr goes with c */
            (void) ngx_cpystrn(why, (u_char *) err, sizeof(why));
            err = (char *) why;
        }
    }

    if (c != NULL) {
        redisFree(c);
    }

    if (users) {
        ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                      NGX_HTTP_ADSERVE_LOG "history: the held entries of %ui users "
                      "written at exit", users);
    }

    if (lost) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      NGX_HTTP_ADSERVE_LOG "history: could not write all the held entries "
                      "at exit (%s): %ui entries lost, the rest left to the other workers",
                      err ? err : "error replies", lost);
    }
}


/* EXPIRE: the string expires ADSERVE_HISTORY_SECONDS from now */
static void
ngx_http_adserve_history_expire(const char *key, size_t len)
{
    u_char       ttl[NGX_INT_T_LEN];
    const char  *argv[3];
    size_t       argvlen[3];

    ngx_http_adserve_history_expire_argv(argv, argvlen, key, len, ttl);

    (void) ngx_http_adserve_user_write(3, argv, argvlen, NULL, NULL);
}


/* APPEND, with its reply awaited in a free slot when there is one (OK);
 * DONE when it went without, DECLINED when it did not go */
static ngx_int_t
ngx_http_adserve_history_append(int argc, const char **argv, const size_t *argvlen,
    ngx_uint_t ttl)
{
    ngx_http_adserve_history_slot_t  *slot;
    ngx_uint_t                        i, k;

    for (k = 0; k < NGX_HTTP_ADSERVE_HISTORY_SLOTS; k++) {
        i = (ngx_http_adserve_history_next + k) % NGX_HTTP_ADSERVE_HISTORY_SLOTS;
        slot = &ngx_http_adserve_history_slots[i];

        if (slot->len == 0) {
            if (ngx_http_adserve_user_write(argc, argv, argvlen, ngx_http_adserve_history_appended,
                                            (void *) (uintptr_t) i)
                != NGX_OK)
            {
                return NGX_DECLINED;
            }

            slot->len = argvlen[1];
            slot->appended = argvlen[2];
            slot->ttl = ttl;
            ngx_memcpy(slot->key, argv[1], argvlen[1]);
            ngx_http_adserve_history_next = i + 1;
            return NGX_OK;
        }
    }

    if (ngx_http_adserve_user_write(argc, argv, argvlen, NULL, NULL) != NGX_OK) {
        return NGX_DECLINED;
    }

    return NGX_DONE;
}


/* APPEND's reply, the string's length: its TTL when the string is new,
 * when the node's copy says it is due (once an hour of the user's writes),
 * or, for a user the copy does not hold, when the string crossed a
 * multiple of ADSERVE_HISTORY_TTL_EVERY entries (one EXPIRE for that many
 * entries, not one a write); and the cut when it is due */
static void
ngx_http_adserve_history_appended(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_adserve_history_slot_t  *slot, *lost;
    redisReply                       *reply = r;
    u_char                            keep[NGX_INT_T_LEN], at[NGX_INT_T_LEN];
    const char                       *argv[6];
    size_t                            argvlen[6], every, before;
    ngx_uint_t                        i;

    (void) ac;

    slot = &ngx_http_adserve_history_slots[(uintptr_t) data];

    /* no length (a lost connection: the append may have landed, and made
     * the string): its EXPIRE waits for a reply that says the connection
     * is back, since a command now would not go out */
    if (reply == NULL || reply->type != REDIS_REPLY_INTEGER || reply->integer < 0) {
        (void) ngx_http_adserve_user_demoted(reply);
        ngx_http_adserve_history_lost[ngx_http_adserve_history_nlost++
                                      % NGX_HTTP_ADSERVE_HISTORY_LOST] = *slot;
        slot->len = 0;
        return;
    }

    /* a reply: the connection is up; the latest lost ones get their TTL */
    for (i = 0; i < ngx_min(ngx_http_adserve_history_nlost, NGX_HTTP_ADSERVE_HISTORY_LOST); i++) {
        lost = &ngx_http_adserve_history_lost[i];
        ngx_http_adserve_history_expire((char *) lost->key, lost->len);
    }
    ngx_http_adserve_history_nlost = 0;

    every = ADSERVE_HISTORY_TTL_EVERY * ADSERVE_HISTORY_ENTRY;
    before = (size_t) reply->integer - ngx_min(slot->appended, (size_t) reply->integer);

    if (before == 0 || slot->ttl == NGX_HTTP_ADSERVE_TTL_DUE
        || (slot->ttl == NGX_HTTP_ADSERVE_TTL_UNKNOWN
            && before / every != (size_t) reply->integer / every))
    {
        ngx_http_adserve_history_expire((char *) slot->key, slot->len);
    }

    if (reply->integer >= ADSERVE_HISTORY_CUT * NGX_HTTP_ADSERVE_HISTORY_KEEP) {
        argv[2] = "1";
        argvlen[2] = 1;
        argv[3] = (char *) slot->key;
        argvlen[3] = slot->len;
        argv[4] = (char *) keep;
        argvlen[4] = ngx_sprintf(keep, "%d", NGX_HTTP_ADSERVE_HISTORY_KEEP) - keep;
        argv[5] = (char *) at;
        argvlen[5] = ngx_sprintf(at, "%d", ADSERVE_HISTORY_CUT * NGX_HTTP_ADSERVE_HISTORY_KEEP)
                     - at;

        (void) ngx_http_adserve_user_eval(&ngx_http_adserve_history_cut, 6, argv, argvlen);
    }

    slot->len = 0;
}


void
ngx_http_adserve_history_older(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx)
{
    ngx_http_adserve_hist_t  h;

    if (ctx->history_known || !ctx->history_older) {
        return;
    }

    ctx->history_older = 0;

    if (ngx_http_adserve_hzone_get(ngx_http_adserve_history_user(&ctx->req.user_id), ctx->now,
                                   1, &h)
        == NGX_OK)
    {
        ngx_http_adserve_history_set(r, ctx, &h);
    }
}


/* Whether the item is in the user's history: its fingerprint against
 * all of them, NGX_HTTP_ADSERVE_HISTORY_LANES at a time, with no branch but
 * the loop's (GCC's vector extension: SSE2 on x86-64, NEON on arm64,
 * scalar code elsewhere) */
ngx_uint_t
ngx_http_adserve_history_has(const ngx_http_adserve_ctx_t *ctx, const adserve_item_t *it)
{
    typedef uint32_t  v4u __attribute__((vector_size(16)));

    const uint32_t  *p, *end;
    uint32_t         fp;
    v4u              want, a, b, any;

    if (ctx->history == NULL) {
        return 0;
    }

    fp = ngx_http_adserve_history_fp(it->hash);
    want = (v4u) { fp, fp, fp, fp };
    any = (v4u) { 0, 0, 0, 0 };

    for (p = ctx->history, end = p + ctx->nhistory; p < end;
         p += NGX_HTTP_ADSERVE_HISTORY_LANES)
    {
        ngx_memcpy(&a, p, sizeof(v4u));
        ngx_memcpy(&b, p + 4, sizeof(v4u));
        any |= (v4u) (a == want) | (v4u) (b == want);
    }

    return (any[0] | any[1] | any[2] | any[3]) != 0;
}
