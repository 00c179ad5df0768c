#include "store.h"

#include "log.h"
#include "util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define STORE_TIMEOUT_MS 1000     /* connect and per-command timeout */
#define STORE_IDLE_CHECK_MS 1000  /* PING a connection idle longer than this */
#define STORE_MAX_ARGS 64
#define STORE_MAX_PIPELINE 10000      /* = TXN_MAX_CMDS: a subtree move */

struct store_addr {
    char host[256];
    int port;
};

struct store_conn {
    redisContext *ctx;
    struct store_addr at;   /* where ctx is connected */
    double last_used_ms;
    bool in_use;
    bool watching;       /* a WATCH is active: UNWATCH before reuse */
};

static struct {
    char host[256];
    int port;
    struct store_addr sentinels[STORE_SENTINELS];
    int nsentinels;
    char master[64];
    int size;
    struct store_conn *conns;
    pthread_mutex_t lock;
    pthread_cond_t freed;
    atomic_bool down;    /* logged as down; log transitions, not every failure */
} pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .freed = PTHREAD_COND_INITIALIZER,
};

static void mark_down(const struct store_addr *at, const char *why)
{
    if (!atomic_exchange(&pool.down, true))
        log_line("redis %s:%d unavailable: %s", at->host, at->port, why);
}

static void mark_up(const struct store_addr *at)
{
    if (atomic_exchange(&pool.down, false))
        log_line("redis %s:%d reachable again", at->host, at->port);
}

int store_init(const char *host, int port, int pool_size)
{
    if (pool_size <= 0 || copy_str(pool.host, sizeof pool.host, host) != 0)
        return -1;
    pool.conns = calloc((size_t)pool_size, sizeof *pool.conns);
    if (pool.conns == NULL)
        return -1;
    pool.port = port;
    pool.size = pool_size;
    return 0;
}

int store_use_sentinels(const char *sentinels, const char *master)
{
    const char *p = sentinels;

    if (copy_str(pool.master, sizeof pool.master, master) != 0 || master[0] == '\0')
        return -1;
    while (*p != '\0') {
        size_t len = strcspn(p, ",");
        const char *colon = memchr(p, ':', len);
        struct store_addr *a = &pool.sentinels[pool.nsentinels];
        char *end;

        if (pool.nsentinels == STORE_SENTINELS || colon == NULL ||
            (size_t)(colon - p) >= sizeof a->host || colon == p)
            return -1;
        memcpy(a->host, p, (size_t)(colon - p));
        a->host[colon - p] = '\0';
        long port = strtol(colon + 1, &end, 10);
        if (end != p + len || port < 1 || port > 65535)
            return -1;
        a->port = (int)port;
        pool.nsentinels++;
        p += len + (p[len] == ',');
    }
    return pool.nsentinels > 0 ? 0 : -1;
}

/* The primary's address, from the first sentinel that knows it. */
static int ask_sentinels(struct store_addr *out)
{
    const struct timeval tv = { 0, 500 * 1000 };

    for (int i = 0; i < pool.nsentinels; i++) {
        redisContext *s = redisConnectWithTimeout(pool.sentinels[i].host, pool.sentinels[i].port, tv);
        redisReply *r = NULL;
        bool ok = false;

        if (s != NULL && s->err == 0 && redisSetTimeout(s, tv) == REDIS_OK)
            r = redisCommandArgv(s, 3, (const char *[]){ ADSERVE_REDIS_SENTINEL,
                                                         ADSERVE_REDIS_SENTINEL_PRIMARY, pool.master }, NULL);
        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING &&
            copy_str(out->host, sizeof out->host, r->element[0]->str) == 0) {
            out->port = atoi(r->element[1]->str);
            ok = out->port > 0;
        }
        if (r != NULL)
            freeReplyObject(r);
        if (s != NULL)
            redisFree(s);
        if (ok)
            return 0;
    }
    return -1;
}

static void drop(struct store_conn *c, const char *why)
{
    mark_down(&c->at, why);
    if (c->ctx != NULL)
        redisFree(c->ctx);
    c->ctx = NULL;
    c->watching = false;
}

/* Whether the server is a primary: after a failover, the old one may come
 * back as a replica while a sentinel still names it. */
static bool is_primary(struct store_conn *c)
{
    redisReply *r = redisCommandArgv(c->ctx, 1, (const char *[]){ ADSERVE_REDIS_ROLE }, NULL);
    bool yes = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
               r->element[0]->type == REDIS_REPLY_STRING &&
               strcmp(r->element[0]->str, ADSERVE_REDIS_ROLE_PRIMARY) == 0;

    if (r != NULL)
        freeReplyObject(r);
    return yes;
}

static void store_connect(struct store_conn *c)
{
    const struct timeval tv = { STORE_TIMEOUT_MS / 1000, (STORE_TIMEOUT_MS % 1000) * 1000 };

    if (pool.nsentinels == 0) {
        snprintf(c->at.host, sizeof c->at.host, "%s", pool.host);
        c->at.port = pool.port;
    } else if (ask_sentinels(&c->at) != 0) {
        mark_down(&c->at, "no sentinel named the primary");
        return;
    }
    c->ctx = redisConnectWithTimeout(c->at.host, c->at.port, tv);
    if (c->ctx == NULL) {
        mark_down(&c->at, "out of memory");
        return;
    }
    if (c->ctx->err != 0) {
        drop(c, c->ctx->errstr);
        return;
    }
    if (redisSetTimeout(c->ctx, tv) != REDIS_OK) {
        drop(c, "cannot set socket timeout");
        return;
    }
    if (pool.nsentinels > 0 && !is_primary(c)) {
        drop(c, "the server the sentinels named is not a primary (yet)");
        return;
    }
    c->last_used_ms = monotonic_ms();
    mark_up(&c->at);
}

/* A pooled connection may have been closed by Redis (restart, timeout)
 * while idle; finding out with a PING is cheaper than failing a request. */
static void check_idle(struct store_conn *c)
{
    if (c->ctx == NULL || monotonic_ms() - c->last_used_ms < STORE_IDLE_CHECK_MS)
        return;
    if (store_ping(c) != STORE_OK && c->ctx != NULL)
        drop(c, "connection check failed");
    if (c->ctx == NULL)
        store_connect(c);
}

struct store_conn *store_acquire(void)
{
    struct store_conn *c = NULL;

    pthread_mutex_lock(&pool.lock);
    for (;;) {
        for (int i = 0; i < pool.size && c == NULL; i++)
            if (!pool.conns[i].in_use)
                c = &pool.conns[i];
        if (c != NULL)
            break;
        pthread_cond_wait(&pool.freed, &pool.lock);
    }
    c->in_use = true;
    pthread_mutex_unlock(&pool.lock);

    /* Connect outside the lock: it may take up to the connect timeout. */
    if (c->ctx == NULL)
        store_connect(c);
    else
        check_idle(c);
    return c;
}

void store_release(struct store_conn *c)
{
    if (c == NULL)
        return;
    /* A request that bailed out between WATCH and EXEC must not leave the
     * WATCH to abort an unrelated transaction of the next user. */
    if (c->watching && store_do(c, (const char *[]){ "UNWATCH", NULL }) != STORE_OK)
        drop(c, "UNWATCH failed");
    pthread_mutex_lock(&pool.lock);
    c->in_use = false;
    pthread_cond_signal(&pool.freed);
    pthread_mutex_unlock(&pool.lock);
}

void store_shutdown(void)
{
    for (int i = 0; i < pool.size; i++)
        if (pool.conns[i].ctx != NULL)
            redisFree(pool.conns[i].ctx);
    free(pool.conns);
    pool.conns = NULL;
    pool.size = 0;
}

static int count_args(const char *const *argv)
{
    int n = 0;

    while (argv[n] != NULL && n <= STORE_MAX_ARGS)
        n++;
    return n <= STORE_MAX_ARGS ? n : -1;
}

static bool is_readonly(const redisReply *r)
{
    return strncmp(r->str, ADSERVE_REDIS_READONLY, sizeof ADSERVE_REDIS_READONLY - 1) == 0;
}

/* Redis error replies that mean "try later" rather than "bug". */
static bool error_is_transient(const redisReply *r)
{
    return strncmp(r->str, "LOADING", 7) == 0 || strncmp(r->str, "BUSY", 4) == 0 ||
           strncmp(r->str, "MASTERDOWN", 10) == 0 || is_readonly(r);
}

/* A write answered READONLY: the server was demoted (a failover). */
static bool is_demoted(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && is_readonly(r);
}

/* ... and then the connection goes, so that the next one finds the primary */
static void drop_demoted(struct store_conn *c)
{
    drop(c, "the server is a replica now (READONLY)");
}

/* Classifies a reply that arrived; frees it unless it is a success. */
static enum store_status check_reply(redisReply *r)
{
    if (r->type != REDIS_REPLY_ERROR)
        return STORE_OK;
    enum store_status st = error_is_transient(r) ? STORE_UNAVAILABLE : STORE_ERROR;
    log_line("redis error reply: %.200s", r->str);
    freeReplyObject(r);
    return st;
}

static void track_watch(struct store_conn *c, const char *cmd)
{
    if (strcasecmp(cmd, "WATCH") == 0)
        c->watching = true;
    else if (strcasecmp(cmd, "UNWATCH") == 0 || strcasecmp(cmd, "EXEC") == 0 ||
             strcasecmp(cmd, "DISCARD") == 0)
        c->watching = false;
}

enum store_status store_cmd(struct store_conn *c, redisReply **reply,
                            const char *const *argv)
{
    int argc = count_args(argv);

    *reply = NULL;
    if (argc <= 0)
        return STORE_ERROR;
    if (c->ctx == NULL)
        return STORE_UNAVAILABLE;
    redisReply *r = redisCommandArgv(c->ctx, argc, (const char **)argv, NULL);
    if (r == NULL) {
        drop(c, c->ctx->errstr);
        return STORE_UNAVAILABLE;
    }
    c->last_used_ms = monotonic_ms();
    track_watch(c, argv[0]);
    if (is_demoted(r))
        drop_demoted(c);
    enum store_status st = check_reply(r);
    if (st == STORE_OK)
        *reply = r;
    return st;
}

enum store_status store_get_str(struct store_conn *c, char *out, size_t outlen,
                                const char *const *argv)
{
    redisReply *r;
    enum store_status st = store_cmd(c, &r, argv);

    if (st != STORE_OK)
        return st;
    if (r->type == REDIS_REPLY_NIL)
        st = STORE_NOT_FOUND;
    else if (r->type != REDIS_REPLY_STRING || r->len >= outlen)
        st = STORE_ERROR;
    else
        memcpy(out, r->str, r->len + 1);
    freeReplyObject(r);
    return st;
}

enum store_status store_do(struct store_conn *c, const char *const *argv)
{
    redisReply *r;
    enum store_status st = store_cmd(c, &r, argv);

    if (st == STORE_OK)
        freeReplyObject(r);
    return st;
}

enum store_status store_ping(struct store_conn *c)
{
    return store_do(c, (const char *[]){ "PING", NULL });
}

static int append(struct store_conn *c, const char *const *argv)
{
    int argc = count_args(argv);

    if (argc <= 0)
        return -1;
    return redisAppendCommandArgv(c->ctx, argc, (const char **)argv, NULL) == REDIS_OK ? 0 : -1;
}

/* Reads one pipelined reply; NULL (and the connection dropped) on I/O error. */
static redisReply *read_reply(struct store_conn *c)
{
    void *r = NULL;

    if (redisGetReply(c->ctx, &r) != REDIS_OK || r == NULL) {
        drop(c, c->ctx->errstr[0] ? c->ctx->errstr : "no reply");
        return NULL;
    }
    return r;
}

/* EXEC's reply: nil when a WATCH fired, else one entry per command, any of
 * which may be a runtime error (Redis does not roll back). */
static enum store_status check_exec(redisReply *r)
{
    if (r->type == REDIS_REPLY_NIL)
        return STORE_CONFLICT;
    if (r->type == REDIS_REPLY_ERROR) {
        log_line("redis EXEC failed: %.200s", r->str);
        return STORE_ERROR;
    }
    if (r->type != REDIS_REPLY_ARRAY)
        return STORE_ERROR;
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_ERROR) {
            log_line("redis error in transaction: %.200s", r->element[i]->str);
            return STORE_ERROR;
        }
    return STORE_OK;
}

enum store_status store_pipeline(struct store_conn *c, const char *const *const *cmds,
                                 size_t n, redisReply **replies)
{
    enum store_status st = STORE_OK;

    for (size_t i = 0; i < n; i++)
        replies[i] = NULL;
    if (c->ctx == NULL)
        return STORE_UNAVAILABLE;
    if (n == 0 || n > STORE_MAX_PIPELINE)
        return STORE_ERROR;
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        bad |= append(c, cmds[i]);
    if (bad) {
        drop(c, "cannot buffer pipeline");
        return STORE_ERROR;
    }
    /* every reply is read, even after an error one, so the connection
     * stays in step */
    for (size_t i = 0; i < n; i++) {
        redisReply *r = read_reply(c);
        if (r == NULL) {
            st = STORE_UNAVAILABLE;
            break;
        }
        if (is_demoted(r))
            drop_demoted(c);
        enum store_status e = check_reply(r);
        if (c->ctx == NULL) {       /* demoted: the rest of the replies are gone */
            st = STORE_UNAVAILABLE;
            break;
        }
        if (e != STORE_OK) {
            if (st == STORE_OK)
                st = e;
            continue;
        }
        replies[i] = r;
    }
    c->last_used_ms = monotonic_ms();
    if (st != STORE_OK)
        for (size_t i = 0; i < n; i++) {
            if (replies[i] != NULL)
                freeReplyObject(replies[i]);
            replies[i] = NULL;
        }
    return st;
}

enum store_status store_exec(struct store_conn *c,
                             const char *const *const *cmds, size_t n)
{
    if (c->ctx == NULL)
        return STORE_UNAVAILABLE;
    if (n == 0 || n > STORE_MAX_PIPELINE)
        return STORE_ERROR;
    int bad = append(c, (const char *[]){ "MULTI", NULL });
    for (size_t i = 0; i < n; i++)
        bad |= append(c, cmds[i]);
    bad |= append(c, (const char *[]){ "EXEC", NULL });
    if (bad) {
        /* Partly buffered commands cannot be taken back: start afresh. */
        drop(c, "cannot buffer transaction");
        return STORE_ERROR;
    }
    /* MULTI's +OK and each +QUEUED (or a queueing error, which makes EXEC
     * answer EXECABORT, checked below); -READONLY: a demoted primary */
    bool demoted = false;
    for (size_t i = 0; i < n + 1; i++) {
        redisReply *r = read_reply(c);
        if (r == NULL)
            return STORE_UNAVAILABLE;
        demoted |= is_demoted(r);
        freeReplyObject(r);
    }
    redisReply *r = read_reply(c);
    if (r == NULL)
        return STORE_UNAVAILABLE;
    if (demoted) {
        freeReplyObject(r);
        drop_demoted(c);
        return STORE_UNAVAILABLE;
    }
    c->watching = false;
    c->last_used_ms = monotonic_ms();
    enum store_status st = check_exec(r);
    freeReplyObject(r);
    return st;
}
