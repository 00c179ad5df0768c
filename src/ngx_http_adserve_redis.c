
/*
 * hiredis's async API on the nginx event loop.
 *
 * hiredis ships no nginx adapter, so this file is one: the Redis socket is
 * wrapped in an nginx connection whose read and write events call
 * redisAsyncHandleRead/Write, and hiredis's addRead/delRead/addWrite/delWrite
 * hooks switch those events on and off. The events are level-triggered:
 * hiredis reads at most one buffer per call, and an edge-triggered event
 * would not fire again for the rest of a large reply.
 *
 * hiredis has no timeouts of its own: a connect is bounded by a timer here,
 * commands by their owner. When the connection dies, for whatever reason,
 * hiredis calls the cleanup hook exactly once: that is where a reconnect is
 * scheduled, with exponential backoff. An outage is logged once, when it
 * starts, and its end once, not every attempt.
 *
 * With adserve_redis_sentinel, the connection's server is not configured
 * but asked for: before each connect, the sentinels one after another
 * (SENTINEL get-master-addr-by-name, on a connection of its own, with the
 * same timeout), then ROLE on the server named, which must be a primary
 * before the owner hears of it. A connection lost, or one that answers
 * READONLY, asks again: that is how a failover is followed.
 */


#include "ngx_http_adserve.h"

#include <openssl/evp.h>


/* a unix socket's path and its NUL, as ngx_parse_url bounds it */
#define NGX_HTTP_ADSERVE_UNIX_PATH    sizeof(((struct sockaddr_un *) 0)->sun_path)

#define NGX_HTTP_ADSERVE_BACKOFF_MIN  100
#define NGX_HTTP_ADSERVE_BACKOFF_MAX  5000


static void ngx_http_adserve_redis_connect(ngx_http_adserve_redis_t *rd);
static void ngx_http_adserve_redis_ask(ngx_http_adserve_redis_t *rd);
static void ngx_http_adserve_redis_asked(ngx_http_adserve_redis_t *rd);
static void ngx_http_adserve_redis_check_role(ngx_http_adserve_redis_t *rd);
static void ngx_http_adserve_redis_sentinel_reply(redisAsyncContext *ac, void *r,
    void *data);
static void ngx_http_adserve_redis_role_reply(redisAsyncContext *ac, void *r,
    void *data);
static void ngx_http_adserve_redis_load_scripts(ngx_http_adserve_redis_t *rd);


/*
 * An address as nginx reads one (ngx_parse_url: "IP:port", "[IPv6]:port",
 * "unix:/path"), kept as hiredis takes it: a NUL-terminated host without
 * brackets, and a port (0 for a unix socket). Names are refused, since
 * hiredis would resolve one with a blocking getaddrinfo() at each connect.
 * NGX_DECLINED with *err set when it is not an address.
 */
ngx_int_t
ngx_http_adserve_redis_parse_addr(ngx_conf_t *cf, ngx_str_t *addr,
    ngx_http_adserve_redis_t *rd, char **err)
{
    ngx_url_t        u;
    ngx_str_t        host;
    struct in_addr   in;
    struct in6_addr  in6;

    ngx_memzero(&u, sizeof(ngx_url_t));
    u.url = *addr;
    u.no_resolve = 1;

    if (ngx_parse_url(cf->pool, &u) != NGX_OK) {
        *err = u.err ? u.err : "not an address";
        return u.err ? NGX_DECLINED : NGX_ERROR;
    }

    host = u.host;

    if (u.family != AF_UNIX) {
        if (u.no_port) {
            *err = "no port";
            return NGX_DECLINED;
        }

        if (host.len > 2 && host.data[0] == '[') {
            host.data++;                    /* hiredis takes IPv6 bare */
            host.len -= 2;
        }
    }

    rd->addr = *addr;
    rd->port = u.family == AF_UNIX ? 0 : (int) u.port;
    rd->host = ngx_pnalloc(cf->pool, host.len + 1);
    if (rd->host == NULL) {
        return NGX_ERROR;
    }

    (void) ngx_cpystrn((u_char *) rd->host, host.data, host.len + 1);

    if (u.family != AF_UNIX
        && inet_pton(AF_INET, rd->host, &in) != 1
        && inet_pton(AF_INET6, rd->host, &in6) != 1)
    {
        *err = "a name, not an address (it would need a blocking lookup)";
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* ---- hiredis event hooks ----------------------------------------------- */

static void
ngx_http_adserve_redis_add(ngx_event_t *ev, ngx_int_t event)
{
    if (!ev->active && ngx_add_event(ev, event, NGX_LEVEL_EVENT) != NGX_OK) {
        ngx_log_error(NGX_LOG_ALERT, ev->log, 0, NGX_HTTP_ADSERVE_LOG "redis: add event failed");
    }
}


static void
ngx_http_adserve_redis_del(ngx_event_t *ev, ngx_int_t event)
{
    if (ev->active && ngx_del_event(ev, event, 0) != NGX_OK) {
        ngx_log_error(NGX_LOG_ALERT, ev->log, 0, NGX_HTTP_ADSERVE_LOG "redis: del event failed");
    }
}


static void
ngx_http_adserve_redis_add_read(void *data)
{
    ngx_http_adserve_redis_t  *rd = data;

    ngx_http_adserve_redis_add(rd->conn->read, NGX_READ_EVENT);
}


static void
ngx_http_adserve_redis_del_read(void *data)
{
    ngx_http_adserve_redis_t  *rd = data;

    ngx_http_adserve_redis_del(rd->conn->read, NGX_READ_EVENT);
}


/*
 * Commands queued while the event loop runs go out together at the end of
 * its iteration: the write event is posted, not waited for, so every
 * request the iteration handled shares one write(2) on the connection and
 * Redis one read(2) for all of them, and none waits for the next
 * epoll_wait(2). Only a socket that refused part of a write (or a connect
 * in progress) waits for epoll to say it is writable again.
 */
static void
ngx_http_adserve_redis_add_write(void *data)
{
    ngx_http_adserve_redis_t  *rd = data;
    ngx_event_t               *wev = rd->conn->write;

    if (!rd->connected || rd->writing) {
        ngx_http_adserve_redis_add(wev, NGX_WRITE_EVENT);
        return;
    }

    if (!wev->active && !wev->posted) {
        ngx_post_event(wev, &ngx_posted_events);
    }
}


static void
ngx_http_adserve_redis_del_write(void *data)
{
    ngx_http_adserve_redis_t  *rd = data;

    ngx_http_adserve_redis_del(rd->conn->write, NGX_WRITE_EVENT);
}


static void
ngx_http_adserve_redis_schedule(ngx_http_adserve_redis_t *rd)
{
    ngx_msec_t  delay;

    if (rd->exiting || ngx_exiting || ngx_terminate) {
        return;
    }

    /* jitter, so that the workers of many nodes do not reconnect in step */
    delay = rd->backoff + ngx_random() % (rd->backoff / 4 + 1);
    rd->backoff = ngx_min(rd->backoff * 2, NGX_HTTP_ADSERVE_BACKOFF_MAX);

    ngx_add_timer(&rd->timer, delay);
}


/* The connection is gone, or a connect failed: the owner learns of it (it
 * may be waiting for a first connection), and the next attempt is set. */
static void
ngx_http_adserve_redis_lost(ngx_http_adserve_redis_t *rd)
{
    if (rd->on_down) {
        rd->on_down(rd);
    }

    ngx_http_adserve_redis_schedule(rd);
}


/* A connect that failed before hiredis had a context: as the cleanup hook
 * would have gone on. */
static void
ngx_http_adserve_redis_failed(ngx_http_adserve_redis_t *rd)
{
    rd->ac = NULL;
    rd->conn = NULL;

    if (rd->asking) {
        rd->asking = 0;
        ngx_http_adserve_redis_asked(rd);
        return;
    }

    rd->found = 0;
    ngx_http_adserve_redis_lost(rd);
}


/* hiredis calls this once when the context goes away, whatever the cause */
static void
ngx_http_adserve_redis_cleanup(void *data)
{
    ngx_http_adserve_redis_t  *rd = data;
    ngx_connection_t          *c = rd->conn;

    /* hiredis closes the socket itself: only forget the events */
    if (c->read->active) {
        ngx_del_event(c->read, NGX_READ_EVENT, NGX_CLOSE_EVENT);
    }
    if (c->write->active) {
        ngx_del_event(c->write, NGX_WRITE_EVENT, NGX_CLOSE_EVENT);
    }
    if (c->read->posted) {
        ngx_delete_posted_event(c->read);
    }
    if (c->write->posted) {
        ngx_delete_posted_event(c->write);
    }

    c->fd = (ngx_socket_t) -1;
    ngx_free_connection(c);

    rd->conn = NULL;
    rd->ac = NULL;
    rd->connected = 0;
    ngx_http_adserve_tally->redis_up[rd->metric] = 0;

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    if (rd->asking) {
        rd->asking = 0;
        ngx_http_adserve_redis_asked(rd);
        return;
    }

    rd->found = 0;              /* the next connect asks the sentinels */

    ngx_http_adserve_redis_lost(rd);
}


static void
ngx_http_adserve_redis_log_down(ngx_http_adserve_redis_t *rd, const char *why)
{
    if (rd->down_logged || rd->exiting) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, rd->log, 0,
                       NGX_HTTP_ADSERVE_LOG "redis %V still unavailable: %s", &rd->addr, why);
        return;
    }

    rd->down_logged = 1;

    ngx_log_error(NGX_LOG_ERR, rd->log, 0,
                  NGX_HTTP_ADSERVE_LOG "%s%sredis %V unavailable (%s): %s, reconnecting "
                  "with backoff", rd->name ? rd->name : "", rd->name ? ": " : "",
                  &rd->addr, why,
                  rd->outage ? rd->outage : "serving from the last snapshot");
}


/* The owner may send: connected is not yet healthy, since a server that
 * refuses every command (no auth) must keep its backoff and its one log
 * line. */
static void
ngx_http_adserve_redis_up(ngx_http_adserve_redis_t *rd)
{
    rd->connected = 1;

    ngx_http_adserve_tally->redis_up[rd->metric] = 1;
    ngx_http_adserve_tally->redis_reconnects[rd->metric] += rd->was_up;
    rd->was_up = 1;

    rd->reloading = 0;
    ngx_http_adserve_redis_load_scripts(rd);

    if (rd->on_up) {
        rd->on_up(rd);
    }
}


static void
ngx_http_adserve_redis_on_connect(const redisAsyncContext *ac, int status)
{
    ngx_http_adserve_redis_t  *rd = ac->data;

    if (status != REDIS_OK) {
        /* hiredis frees the context next; the cleanup hook reconnects */
        ngx_http_adserve_redis_log_down(rd, ac->errstr);
        return;
    }

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    if (rd->asking) {
        ngx_http_adserve_redis_ask(rd);
        return;
    }

    if (rd->sentinels != NULL) {
        ngx_http_adserve_redis_check_role(rd);
        return;
    }

    ngx_http_adserve_redis_up(rd);
}


/* The owner got a good reply: the outage, if any, is over. */
void
ngx_http_adserve_redis_healthy(ngx_http_adserve_redis_t *rd)
{
    rd->backoff = NGX_HTTP_ADSERVE_BACKOFF_MIN;

    if (rd->down_logged) {
        rd->down_logged = 0;
        ngx_log_error(NGX_LOG_NOTICE, rd->log, 0,
                      NGX_HTTP_ADSERVE_LOG "%s%sredis %V connected again",
                      rd->name ? rd->name : "", rd->name ? ": " : "", &rd->addr);
    }
}


static void
ngx_http_adserve_redis_on_disconnect(const redisAsyncContext *ac, int status)
{
    ngx_http_adserve_redis_t  *rd = ac->data;

    if (status != REDIS_OK) {
        ngx_http_adserve_redis_log_down(rd, ac->errstr ? ac->errstr : "disconnected");
    }
}


/* ---- Sentinel ---------------------------------------------------------- */

/* A question of the connection's own before the owner hears of it (which
 * server is the primary; is this one), bounded by the same timer as a
 * connect: the timer handler frees a connection that does not answer. */
static void
ngx_http_adserve_redis_question(ngx_http_adserve_redis_t *rd, redisCallbackFn *fn, int argc,
    const char **argv, const size_t *argvlen)
{
    /* on failure the context goes from the timer: hiredis 0.14 reads it
     * again after the connect callback, which must not free it */
    if (redisAsyncCommandArgv(rd->ac, fn, rd, argc, argv, argvlen) != REDIS_OK) {
        ngx_http_adserve_redis_log_down(rd, "cannot send a command");
        ngx_add_timer(&rd->timer, 1);
        return;
    }

    ngx_add_timer(&rd->timer, rd->timeout);
}


/* On a sentinel's connection: which server is the primary of our master? */
static void
ngx_http_adserve_redis_ask(ngx_http_adserve_redis_t *rd)
{
    const char  *argv[] = { ADSERVE_REDIS_SENTINEL, ADSERVE_REDIS_SENTINEL_PRIMARY,
                            (const char *) rd->master.data };
    size_t       argvlen[] = { sizeof(ADSERVE_REDIS_SENTINEL) - 1,
                               sizeof(ADSERVE_REDIS_SENTINEL_PRIMARY) - 1, rd->master.len };

    ngx_http_adserve_redis_question(rd, ngx_http_adserve_redis_sentinel_reply, 3, argv, argvlen);
}


/* The sentinel's answer, ["IP", "port"], into host (NGX_INET6_ADDRSTRLEN
 * + 1 bytes) and *port; else why not. nil: it does not know the name. A
 * name instead of an IP is refused, as in the configuration (it would
 * need a blocking lookup). */
static const char *
ngx_http_adserve_sentinel_answer(const redisReply *reply, char *host, int *port)
{
    ngx_int_t        p;
    struct in_addr   in;
    struct in6_addr  in6;

    if (reply->type == REDIS_REPLY_NIL) {
        return "the sentinel does not know the master's name";
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2
        || reply->element[0]->type != REDIS_REPLY_STRING
        || reply->element[1]->type != REDIS_REPLY_STRING
        || reply->element[0]->len > NGX_INET6_ADDRSTRLEN)
    {
        return reply->type == REDIS_REPLY_ERROR ? reply->str
                                                : "an unexpected answer from the sentinel";
    }

    p = ngx_atoi((u_char *) reply->element[1]->str, reply->element[1]->len);
    (void) ngx_cpystrn((u_char *) host, (u_char *) reply->element[0]->str,
                       reply->element[0]->len + 1);

    if (p < 1 || p > 65535
        || (inet_pton(AF_INET, host, &in) != 1 && inet_pton(AF_INET6, host, &in6) != 1))
    {
        return "the sentinel named no IP:port";
    }

    *port = (int) p;

    return NULL;
}


/* The sentinel has answered: this connection is done (the cleanup hook
 * follows once hiredis is out of its callback, and moves on: _asked). */
static void
ngx_http_adserve_redis_sentinel_reply(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_adserve_redis_t  *rd = data;
    redisReply                *reply = r;
    const char                *why;
    char                       host[sizeof(rd->primary)];
    int                        port;

    if (reply == NULL) {
        return;                 /* the connection went first */
    }

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    why = ngx_http_adserve_sentinel_answer(reply, host, &port);

    if (why != NULL) {
        ngx_http_adserve_redis_log_down(rd, why);

    } else {
        if (rd->port != port || ngx_strcmp(rd->primary, host) != 0) {
            ngx_log_error(NGX_LOG_NOTICE, rd->log, 0,
                          NGX_HTTP_ADSERVE_LOG "%s%sthe sentinels name %s port %d "
                          "the primary of \"%V\"", rd->name ? rd->name : "",
                          rd->name ? ": " : "", host, port, &rd->master);
            ngx_memcpy(rd->primary, host, sizeof(host));
            rd->port = port;
        }

        rd->found = 1;
    }

    redisAsyncDisconnect(ac);
}


/* A sentinel's connection is gone: connect to the primary it named, or ask
 * the next sentinel; when none of them named it, the owner hears of an
 * outage and the round starts again after the backoff. */
static void
ngx_http_adserve_redis_asked(ngx_http_adserve_redis_t *rd)
{
    if (rd->exiting || ngx_exiting || ngx_terminate) {
        return;
    }

    if (rd->found) {
        rd->asked = 0;
        ngx_add_timer(&rd->timer, 1);       /* out of hiredis's cleanup */
        return;
    }

    rd->sentinel = (rd->sentinel + 1) % rd->sentinels->nelts;

    if (++rd->asked < rd->sentinels->nelts) {
        ngx_add_timer(&rd->timer, 1);
        return;
    }

    rd->asked = 0;
    ngx_http_adserve_redis_log_down(rd, "no sentinel named the primary");
    ngx_http_adserve_redis_lost(rd);
}


/* A sentinel can name a server that is no longer the primary (a failover
 * under way, the old primary back as a replica): ROLE says, before the
 * owner sends anything. */
static void
ngx_http_adserve_redis_check_role(ngx_http_adserve_redis_t *rd)
{
    const char  *argv[] = { ADSERVE_REDIS_ROLE };
    size_t       argvlen[] = { sizeof(ADSERVE_REDIS_ROLE) - 1 };

    ngx_http_adserve_redis_question(rd, ngx_http_adserve_redis_role_reply, 1, argv, argvlen);
}


static void
ngx_http_adserve_redis_role_reply(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_adserve_redis_t  *rd = data;
    redisReply                *reply = r;

    if (reply == NULL) {
        return;
    }

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements == 0
        || reply->element[0]->type != REDIS_REPLY_STRING
        || ngx_strcmp(reply->element[0]->str, ADSERVE_REDIS_ROLE_PRIMARY) != 0)
    {
        ngx_http_adserve_redis_log_down(rd, "the server the sentinels named is not "
                                            "a primary (yet)");
        redisAsyncDisconnect(ac);
        return;
    }

    ngx_http_adserve_redis_up(rd);
}


ngx_uint_t
ngx_http_adserve_redis_demoted(ngx_http_adserve_redis_t *rd, redisReply *reply)
{
    /* a fixed address is what it is: only the sentinels can name another.
     * Anywhere in the text: before Redis 7, a script's refused write is
     * "ERR Error running script ... -READONLY ..." */
    if (rd->sentinels == NULL || reply == NULL || reply->type != REDIS_REPLY_ERROR
        || ngx_strstrn((u_char *) reply->str, ADSERVE_REDIS_READONLY,
                       sizeof(ADSERVE_REDIS_READONLY) - 2) == NULL)
    {
        return 0;
    }

    ngx_http_adserve_redis_drop(rd, "the server is a replica now (READONLY)");

    return 1;
}


/* ---- scripts ----------------------------------------------------------- */

/* the SHA-1 of a script's text into its sha: what SCRIPT LOAD answers,
 * and EVALSHA's name of it */
static ngx_int_t
ngx_http_adserve_script_sha(ngx_http_adserve_script_t *s, ngx_log_t *log)
{
    u_char        digest[EVP_MAX_MD_SIZE];
    unsigned int  dlen;

    if (EVP_Digest(s->text, s->len, digest, &dlen, EVP_sha1(), NULL) != 1
        || dlen * 2 != NGX_HTTP_ADSERVE_SHA_LEN)
    {
        ngx_log_error(NGX_LOG_ALERT, log, 0,
                      NGX_HTTP_ADSERVE_LOG "cannot compute a script's SHA-1");
        return NGX_ERROR;
    }

    *ngx_hex_dump((u_char *) s->sha, digest, dlen) = '\0';

    return NGX_OK;
}


/* SCRIPT LOAD's answer: the SHA-1 the script is called by, or an alert
 * (its calls would meet NOSCRIPT, and load it again) */
static void
ngx_http_adserve_redis_loaded(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_adserve_redis_t   *rd = ac->data;
    ngx_http_adserve_script_t  *s = data;
    redisReply                 *reply = r;

    if (reply == NULL) {
        return;                       /* the connection went: loaded on connect */
    }

    rd->reloading = 0;

    if (reply->type != REDIS_REPLY_STRING || reply->len != NGX_HTTP_ADSERVE_SHA_LEN
        || ngx_strncasecmp((u_char *) reply->str, (u_char *) s->sha,
                           NGX_HTTP_ADSERVE_SHA_LEN) != 0)
    {
        ngx_log_error(NGX_LOG_ALERT, rd->log, 0,
                      NGX_HTTP_ADSERVE_LOG "%s: SCRIPT LOAD did not answer %s",
                      rd->name ? rd->name : "redis", s->sha);
    }
}


void
ngx_http_adserve_script_load_args(const ngx_http_adserve_script_t *s, const char **argv,
    size_t *argvlen)
{
    argv[0] = "SCRIPT";
    argvlen[0] = sizeof("SCRIPT") - 1;
    argv[1] = "LOAD";
    argvlen[1] = sizeof("LOAD") - 1;
    argv[2] = s->text;
    argvlen[2] = s->len;
}


void
ngx_http_adserve_script_call_args(const ngx_http_adserve_script_t *s, const char **argv,
    size_t *argvlen)
{
    argv[0] = "EVALSHA";
    argvlen[0] = sizeof("EVALSHA") - 1;
    argv[1] = s->sha;
    argvlen[1] = NGX_HTTP_ADSERVE_SHA_LEN;
}


/* Redis runs a connection's commands in order: an EVALSHA queued after
 * the load finds the script */
static ngx_int_t
ngx_http_adserve_redis_load(ngx_http_adserve_redis_t *rd, ngx_http_adserve_script_t *s)
{
    const char  *argv[NGX_HTTP_ADSERVE_SCRIPT_LOAD_ARGS];
    size_t       argvlen[NGX_HTTP_ADSERVE_SCRIPT_LOAD_ARGS];

    ngx_http_adserve_script_load_args(s, argv, argvlen);
    rd->script_loads++;

    return ngx_http_adserve_redis_command(rd, ngx_http_adserve_redis_loaded, s,
                                          NGX_HTTP_ADSERVE_SCRIPT_LOAD_ARGS, argv, argvlen);
}


static void
ngx_http_adserve_redis_load_scripts(ngx_http_adserve_redis_t *rd)
{
    ngx_uint_t  i;

    for (i = 0; i < rd->nscripts; i++) {
        (void) ngx_http_adserve_redis_load(rd, rd->scripts[i]);
    }
}


ngx_int_t
ngx_http_adserve_redis_script(ngx_http_adserve_redis_t *rd, ngx_http_adserve_script_t *s)
{
    ngx_uint_t  i;

    for (i = 0; i < rd->nscripts; i++) {
        if (rd->scripts[i] == s) {
            return NGX_OK;
        }
    }

    if (rd->nscripts == NGX_HTTP_ADSERVE_REDIS_SCRIPTS
        || (s->sha[0] == '\0' && ngx_http_adserve_script_sha(s, rd->log) != NGX_OK))
    {
        return NGX_ERROR;
    }

    rd->scripts[rd->nscripts++] = s;

    /* not connected yet: the connect loads it */
    return rd->connected ? ngx_http_adserve_redis_load(rd, s) : NGX_OK;
}


ngx_uint_t
ngx_http_adserve_redis_noscript(ngx_http_adserve_redis_t *rd, const redisReply *reply)
{
    if (reply == NULL || reply->type != REDIS_REPLY_ERROR
        || ngx_strncmp(reply->str, ADSERVE_REDIS_NOSCRIPT,
                       sizeof(ADSERVE_REDIS_NOSCRIPT) - 1) != 0)
    {
        return 0;
    }

    /* the calls queued before the load meet NOSCRIPT too: one load, one
     * line, until it is answered */
    if (!rd->reloading) {
        ngx_log_error(NGX_LOG_WARN, rd->log, 0,
                      NGX_HTTP_ADSERVE_LOG "%s: the server lost its scripts (NOSCRIPT): "
                      "loading them again", rd->name ? rd->name : "redis");

        rd->reloading = 1;
        ngx_http_adserve_redis_load_scripts(rd);
    }

    return 1;
}


/* the reply of an EVALSHA whose caller wants none */
static void
ngx_http_adserve_redis_evaled(redisAsyncContext *ac, void *r, void *data)
{
    (void) data;

    (void) ngx_http_adserve_redis_noscript(ac->data, r);
}


ngx_int_t
ngx_http_adserve_redis_eval(ngx_http_adserve_redis_t *rd, ngx_http_adserve_script_t *s,
    redisCallbackFn *fn, void *data, int argc, const char **argv, size_t *argvlen)
{
    if (rd->ac == NULL || !rd->connected) {
        return NGX_DECLINED;
    }

    if (ngx_http_adserve_redis_script(rd, s) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_http_adserve_script_call_args(s, argv, argvlen);

    return ngx_http_adserve_redis_command(rd, fn ? fn : ngx_http_adserve_redis_evaled,
                                          data, argc, argv, argvlen);
}


/* ---- blocking, at exit ------------------------------------------------- */

/* The primary's address from the first sentinel that names one, into
 * host and *port; NGX_DECLINED when none does. */
static ngx_int_t
ngx_http_adserve_redis_ask_now(ngx_http_adserve_redis_t *rd, struct timeval tv, char *host,
    int *port)
{
    ngx_http_adserve_redis_t  *s = rd->sentinels->elts;
    redisContext              *c;
    redisReply                *r;
    ngx_uint_t                 i;
    const char                *why;
    const char                *argv[] = { ADSERVE_REDIS_SENTINEL, ADSERVE_REDIS_SENTINEL_PRIMARY,
                                          (const char *) rd->master.data };
    size_t                     argvlen[] = { sizeof(ADSERVE_REDIS_SENTINEL) - 1,
                                             sizeof(ADSERVE_REDIS_SENTINEL_PRIMARY) - 1,
                                             rd->master.len };

    for (i = 0; i < rd->sentinels->nelts; i++) {
        c = s[i].port ? redisConnectWithTimeout(s[i].host, s[i].port, tv)
                      : redisConnectUnixWithTimeout(s[i].host, tv);
        r = (c != NULL && c->err == 0 && redisSetTimeout(c, tv) == REDIS_OK)
            ? redisCommandArgv(c, 3, argv, argvlen) : NULL;

        why = r != NULL ? ngx_http_adserve_sentinel_answer(r, host, port) : "no answer";

        if (r != NULL) {
            freeReplyObject(r);
        }

        if (c != NULL) {
            redisFree(c);
        }

        if (why == NULL) {
            return NGX_OK;
        }
    }

    return NGX_DECLINED;
}


/* A blocking connection to the primary, for a worker's last flush: with
 * adserve_redis_sentinel, the one the sentinels name now (the worker may
 * not have followed a failover yet). NULL with *err set. */
redisContext *
ngx_http_adserve_redis_connect_now(ngx_http_adserve_redis_t *rd, struct timeval tv,
    const char **err)
{
    redisContext  *c;
    char           host[ngx_max(sizeof(rd->primary), NGX_HTTP_ADSERVE_UNIX_PATH)];
    int            port = rd->port;

    /* with sentinels and no address, the primary they name; a unix
     * socket's path whole (a sockaddr_un's room) */
    host[0] = '\0';
    if (rd->host != NULL) {
        (void) ngx_cpystrn((u_char *) host, (u_char *) rd->host, sizeof(host));
    }

    if (rd->sentinels != NULL
        && ngx_http_adserve_redis_ask_now(rd, tv, host, &port) != NGX_OK)
    {
        *err = "no sentinel named the primary";
        return NULL;
    }

    c = port ? redisConnectWithTimeout(host, port, tv) : redisConnectUnixWithTimeout(host, tv);

    if (c == NULL) {
        *err = "out of memory";

    } else if (c->err) {
        *err = c->errstr;

    } else if (redisSetTimeout(c, tv) != REDIS_OK) {
        *err = "cannot set a timeout";
    }

    return c;
}


/* ---- nginx event handlers ---------------------------------------------- */

static void
ngx_http_adserve_redis_read_handler(ngx_event_t *ev)
{
    ngx_connection_t          *c = ev->data;
    ngx_http_adserve_redis_t  *rd = c->data;

    redisAsyncHandleRead(rd->ac);
}


static void
ngx_http_adserve_redis_write_handler(ngx_event_t *ev)
{
    ngx_connection_t          *c = ev->data;
    ngx_http_adserve_redis_t  *rd = c->data;

    /* hiredis asks for the write event again when the socket took only
     * part of the output: that one must wait for epoll (add_write) */
    rd->writing = 1;
    redisAsyncHandleWrite(rd->ac);
    rd->writing = 0;
}


/* one timer, two roles: bounds a connect in progress, or waits out the
 * backoff before the next attempt */
static void
ngx_http_adserve_redis_timer_handler(ngx_event_t *ev)
{
    ngx_http_adserve_redis_t  *rd = ev->data;

    if (rd->ac != NULL) {
        ngx_http_adserve_redis_log_down(rd, rd->asking ? "the sentinel did not answer in time"
                                                       : "connect timed out");
        redisAsyncFree(rd->ac);
        return;
    }

    ngx_http_adserve_redis_connect(rd);
}


static void
ngx_http_adserve_redis_connect(ngx_http_adserve_redis_t *rd)
{
    redisAsyncContext         *ac;
    ngx_connection_t          *c;
    ngx_http_adserve_redis_t  *to = rd;

    if (rd->sentinels != NULL && !rd->found) {
        to = (ngx_http_adserve_redis_t *) rd->sentinels->elts + rd->sentinel;
        rd->asking = 1;
    }

    ac = to->port ? redisAsyncConnect(to->host, to->port)
                  : redisAsyncConnectUnix(to->host);

    if (ac == NULL || ac->err) {
        ngx_http_adserve_redis_log_down(rd, ac ? ac->errstr : "out of memory");
        if (ac) {
            redisAsyncFree(ac);
        }
        ngx_http_adserve_redis_failed(rd);
        return;
    }

    c = ngx_get_connection(ac->c.fd, rd->log);
    if (c == NULL) {
        ngx_http_adserve_redis_log_down(rd, "no free nginx connection");
        redisAsyncFree(ac);
        ngx_http_adserve_redis_failed(rd);
        return;
    }

    c->data = rd;
    c->read->handler = ngx_http_adserve_redis_read_handler;
    c->write->handler = ngx_http_adserve_redis_write_handler;
    c->read->log = rd->log;
    c->write->log = rd->log;

    rd->ac = ac;
    rd->conn = c;

    ac->data = rd;
    ac->ev.data = rd;
    ac->ev.addRead = ngx_http_adserve_redis_add_read;
    ac->ev.delRead = ngx_http_adserve_redis_del_read;
    ac->ev.addWrite = ngx_http_adserve_redis_add_write;
    ac->ev.delWrite = ngx_http_adserve_redis_del_write;
    ac->ev.cleanup = ngx_http_adserve_redis_cleanup;

    redisAsyncSetConnectCallback(ac, ngx_http_adserve_redis_on_connect);
    redisAsyncSetDisconnectCallback(ac, ngx_http_adserve_redis_on_disconnect);

    /* the non-blocking connect completes when the socket turns writable */
    ngx_http_adserve_redis_add_write(rd);
    ngx_add_timer(&rd->timer, rd->timeout);
}


void
ngx_http_adserve_redis_start(ngx_http_adserve_redis_t *rd)
{
    rd->timer.handler = ngx_http_adserve_redis_timer_handler;
    rd->timer.data = rd;
    rd->timer.log = rd->log;
    rd->timer.cancelable = 1;     /* must not hold a graceful shutdown */
    rd->backoff = NGX_HTTP_ADSERVE_BACKOFF_MIN;

    if (rd->sentinels != NULL) {
        /* owners copy the configured structure: the buffer is their own */
        rd->host = rd->primary;
        rd->primary[0] = '\0';
        rd->found = 0;
    }

    ngx_http_adserve_redis_connect(rd);
}


/* Drops the connection (a command timed out, a reply made no sense);
 * pending callbacks run with a NULL reply, then a reconnect is scheduled. */
void
ngx_http_adserve_redis_drop(ngx_http_adserve_redis_t *rd, const char *reason)
{
    if (rd->ac == NULL) {
        return;
    }

    ngx_http_adserve_redis_log_down(rd, reason);
    redisAsyncFree(rd->ac);
}


void
ngx_http_adserve_redis_stop(ngx_http_adserve_redis_t *rd)
{
    rd->exiting = 1;

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    if (rd->ac != NULL) {
        redisAsyncFree(rd->ac);
    }
}


/*
 * A command in RESP, as redisFormatCommandArgv writes it: "*{argc}\r\n",
 * then "${length}\r\n{argument}\r\n" for each argument. hiredis's own
 * formatters print each length with a printf (or its sds cousin) and
 * allocate: two thirds of what a recommendation's three commands cost
 * nginx to queue, and most of an events flush's. _size is an upper bound
 * on what _format writes.
 */
size_t
ngx_http_adserve_resp_size(int argc, const size_t *argvlen)
{
    size_t  n;
    int     i;

    n = 1 + NGX_INT_T_LEN + 2;

    for (i = 0; i < argc; i++) {
        n += 1 + NGX_SIZE_T_LEN + 2 + argvlen[i] + 2;
    }

    return n;
}


static u_char *
ngx_http_adserve_resp_head(u_char *p, u_char type, size_t n)
{
    u_char  digits[NGX_SIZE_T_LEN], *d = digits + NGX_SIZE_T_LEN;

    do {
        *--d = (u_char) ('0' + n % 10);
        n /= 10;
    } while (n != 0);

    *p++ = type;
    p = ngx_cpymem(p, d, digits + NGX_SIZE_T_LEN - d);
    *p++ = CR;
    *p++ = LF;

    return p;
}


u_char *
ngx_http_adserve_resp_format(u_char *p, int argc, const char **argv, const size_t *argvlen)
{
    int  i;

    p = ngx_http_adserve_resp_head(p, '*', (size_t) argc);

    for (i = 0; i < argc; i++) {
        p = ngx_http_adserve_resp_head(p, '$', argvlen[i]);
        p = ngx_cpymem(p, argv[i], argvlen[i]);
        *p++ = CR;
        *p++ = LF;
    }

    return p;
}


/* the commands of requests are small: formatted on the stack, and hiredis
 * copies them into its output buffer */
#define NGX_HTTP_ADSERVE_RESP_STACK  2048

ngx_int_t
ngx_http_adserve_redis_command(ngx_http_adserve_redis_t *rd, redisCallbackFn *fn,
    void *data, int argc, const char **argv, const size_t *argvlen)
{
    u_char  cmd[NGX_HTTP_ADSERVE_RESP_STACK], *last;
    int     rc;

    if (rd->ac == NULL || !rd->connected) {
        return NGX_DECLINED;
    }

    /* argvlen NULL: C strings, a few commands of the connections' own */
    if (argvlen != NULL && ngx_http_adserve_resp_size(argc, argvlen) <= sizeof(cmd)) {
        last = ngx_http_adserve_resp_format(cmd, argc, argv, argvlen);
        rc = redisAsyncFormattedCommand(rd->ac, fn, data, (char *) cmd, last - cmd);

    } else {
        rc = redisAsyncCommandArgv(rd->ac, fn, data, argc, argv, argvlen);
    }

    return rc == REDIS_OK ? NGX_OK : NGX_ERROR;
}
