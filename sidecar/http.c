#include "http.h"

#include "auth.h"
#include "log.h"
#include "prom.h"
#include "schema.h"
#include "service.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CONNECTION_LIMIT 256
#define CONNECTION_TIMEOUT_S 30
#define CONNECTION_MEMORY_LIMIT ((size_t)64 * 1024)  /* request line + headers */
#define LOG_PATH_MAX 200
/* A request refused from its headers still has its body on the way, which
 * nginx streams to us for the upload routes. Closing with unread bytes
 * resets the connection, and the reset can overtake the answer (nginx then
 * says 502). So a body up to this size is read to its end and dropped
 * before the answer goes; a larger one is answered at once. */
#define REFUSED_BODY_DRAIN ((size_t)8 * 1024 * 1024)

/* Sent when even the error body cannot be built. */
static const char oom_body[] = "{\"detail\":\"internal error\"}";

static size_t max_body;

/* Per-request state, from the first callback to the completion notice. */
struct conn_ctx {
    double start_ms;
    char method[16];
    char log_path[LOG_PATH_MAX + 1];
    const struct route *route;
    struct route_params params;
    struct user user;
    bool authenticated;
    char *body;
    size_t body_len, body_cap;
    size_t received;
    bool too_large;
    bool queued;
    bool holding;               /* refused: held until the body is read */
    struct reply held;
    bool scrape;                /* GET /metrics: not an API request */
    int status;
    /* BODY_STREAM routes: the request their stream sees from open to
     * close, and the stream's state */
    struct request req;
    void *stream;
    bool stopped;               /* the stream took no more */
};

struct store_conn *request_store(struct request *req)
{
    if (req->store == NULL)
        req->store = store_acquire();
    return req->store;
}

const char *request_param(const struct request *req, const char *name)
{
    return route_param(req->params, name);
}

const char *request_header(const struct request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *request_query(const struct request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

bool request_uuid_param(const struct request *req, const char *name,
                        char out[UUID_STR_LEN])
{
    const char *v = request_param(req, name);

    if (v == NULL || !is_uuid(v) || copy_str(out, UUID_STR_LEN, v) != 0)
        return false;
    /* ids are stored lower-case; a UUID's hex digits have no case */
    for (char *p = out; *p != '\0'; p++)
        *p = (char)tolower((unsigned char)*p);
    return true;
}

struct query_ctx {
    cJSON *obj;
    const struct schema *schema;
    bool failed;
};

/* A query value as JSON: a number where the schema wants one and the text
 * is a JSON number, else the string (which the schema then judges). */
static cJSON *query_value(const struct schema *s, const char *key, const char *value)
{
    for (const struct schema_field *f = s->fields; f->name != NULL; f++) {
        if (strcmp(f->name, key) != 0 ||
            (f->schema->type != SCHEMA_INTEGER && f->schema->type != SCHEMA_NUMBER))
            continue;
        cJSON *n = cJSON_ParseWithOpts(value, NULL, 1);
        if (cJSON_IsNumber(n))
            return n;
        cJSON_Delete(n);
    }
    return cJSON_CreateString(value);
}

static enum MHD_Result add_query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    struct query_ctx *q = cls;
    cJSON *v = query_value(q->schema, key, value != NULL ? value : "");

    (void)kind;
    /* cJSON keeps repeated keys, so the schema reports them as duplicates. */
    if (v == NULL || !cJSON_AddItemToObject(q->obj, key, v)) {
        cJSON_Delete(v);
        q->failed = true;
        return MHD_NO;
    }
    return MHD_YES;
}

cJSON *request_query_object(struct request *req, struct reply *rep, const struct schema *s)
{
    struct query_ctx q = { .obj = cJSON_CreateObject(), .schema = s };
    struct schema_error err;

    if (q.obj == NULL ||
        (MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, add_query_arg, &q), q.failed)) {
        cJSON_Delete(q.obj);
        reply_error(rep, 500, "internal error");
        return NULL;
    }
    cJSON *out = schema_apply(s, q.obj, SCHEMA_FULL, &err);
    cJSON_Delete(q.obj);
    if (out == NULL)
        reply_invalid(rep, &err);
    return out;
}


/* Request lines are logged, so keep client-chosen bytes from forging
 * lines or terminal escapes. */
static void sanitize(char *dst, size_t dstlen, const char *src)
{
    size_t i = 0;

    for (; src[i] != '\0' && i + 1 < dstlen; i++)
        dst[i] = (src[i] > 0x20 && src[i] < 0x7f) ? src[i] : '?';
    dst[i] = '\0';
}

static struct MHD_Response *build_response(struct reply *rep, int *status)
{
    struct MHD_Response *resp;

    *status = rep->status;
    if (rep->text != NULL) {    /* handed over to libmicrohttpd, which frees it */
        resp = MHD_create_response_from_buffer(rep->text_len, rep->text, MHD_RESPMEM_MUST_FREE);
        if (resp == NULL)
            return NULL;        /* reply_free frees the text */
        rep->text = NULL;
        rep->text_len = 0;
        return resp;
    }
    char *text = rep->body != NULL ? cJSON_PrintUnformatted(rep->body) : NULL;
    if (text != NULL)
        resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    else if (rep->status == 204)
        return MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    else {
        *status = 500;
        return MHD_create_response_from_buffer(sizeof oom_body - 1, (void *)oom_body,
                                               MHD_RESPMEM_PERSISTENT);
    }
    if (resp == NULL)
        free(text);
    return resp;
}

static int add_headers(struct MHD_Response *resp, const struct reply *rep, int status)
{
    /* a text reply's own type; JSON otherwise (and for the fixed 500) */
    const char *type = rep->content_type[0] != '\0' && status == rep->status
                           ? rep->content_type : "application/json";

    if (status != 204 &&
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type) != MHD_YES)
        return -1;
    /* Management answers carry tokens and account data: never cache them. */
    if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store") != MHD_YES)
        return -1;
    for (int i = 0; i < rep->n_headers && status == rep->status; i++)
        if (MHD_add_response_header(resp, rep->headers[i].name, rep->headers[i].value) != MHD_YES)
            return -1;
    return 0;
}

/* Sends rep (and frees its body).  MHD_NO makes MHD drop the connection,
 * the only thing left to do when even queueing fails. */
static enum MHD_Result send_reply(struct MHD_Connection *conn, struct conn_ctx *cx,
                                  struct reply *rep)
{
    int status;
    struct MHD_Response *resp = build_response(rep, &status);
    enum MHD_Result rc = MHD_NO;

    if (resp != NULL && add_headers(resp, rep, status) == 0)
        rc = MHD_queue_response(conn, (unsigned)status, resp);
    reply_free(rep);
    if (resp != NULL)
        MHD_destroy_response(resp);
    if (rc == MHD_YES) {
        cx->queued = true;
        cx->status = status;
        /* counted now, not when sent: a client that has its answer finds
         * it in the next scrape */
        if (!cx->scrape)
            prom_request(cx->route, status, monotonic_ms() - cx->start_ms);
    }
    return rc;
}

/* Whether ct is the media type want (parameters aside). */
static bool is_media_type(const char *ct, const char *want)
{
    size_t n = strlen(want);

    if (ct == NULL)
        return false;
    while (*ct == ' ')
        ct++;
    return strncasecmp(ct, want, n) == 0 &&
           (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ' || ct[n] == '\t');
}

static bool is_json_content_type(const char *ct)
{
    return is_media_type(ct, "application/json");
}

/* Content-Length, when announced, lets an oversized body be refused
 * before any of it is read. */
static bool announced_over(struct MHD_Connection *conn, size_t limit)
{
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl == NULL)
        return false;
    char *end;
    unsigned long long n = strtoull(cl, &end, 10);
    return end != cl && n > limit;
}

static bool announced_too_large(struct MHD_Connection *conn)
{
    return announced_over(conn, max_body);
}

/* Whether a body follows the headers, and is small enough to read through
 * before a refusal is sent (REFUSED_BODY_DRAIN). */
static bool body_worth_draining(struct MHD_Connection *conn)
{
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl == NULL)
        return MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                           MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
    return strtoull(cl, NULL, 10) > 0 && !announced_over(conn, REFUSED_BODY_DRAIN);
}

/* Whether the stream takes a body of type ct: "Content-Type must be ..."
 * in why when not. */
static bool stream_takes(const struct route_stream *s, const char *ct, char *why, size_t len)
{
    size_t used = (size_t)snprintf(why, len, "Content-Type must be %s",
                                   s->media_types != NULL ? "one of " : s->media_type);

    for (const char *const *t = s->media_types; t != NULL && *t != NULL; t++) {
        if (is_media_type(ct, *t))
            return true;
        if (used < len)
            used += (size_t)snprintf(why + used, len - used, "%s%s",
                                     t == s->media_types ? "" : ", ", *t);
    }
    return s->media_types == NULL && is_media_type(ct, s->media_type);
}

/* A BODY_STREAM route's start, once its caller may use it: the media type,
 * the announced size, then the stream's own checks (open). 0 to go on
 * reading, into the stream. */
static int open_stream(struct MHD_Connection *conn, struct conn_ctx *cx, struct reply *rep)
{
    const struct route_stream *s = cx->route->doc->stream;
    char why[256];

    if (!stream_takes(s, MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_TYPE),
                      why, sizeof why)) {
        reply_error(rep, 415, "%s", why);
        return -1;
    }
    if (announced_over(conn, s->max_bytes())) {
        reply_error(rep, 413, "request body exceeds %zu bytes", s->max_bytes());
        return -1;
    }
    cx->req = (struct request){
        .conn = conn, .method = cx->method, .path = cx->log_path, .params = &cx->params,
        .user = cx->authenticated ? &cx->user : NULL,
    };
    cx->stream = s->open(&cx->req, rep);
    /* not held while the body comes: the stream takes one per batch */
    store_release(cx->req.store);
    cx->req.store = NULL;
    if (cx->stream != NULL)
        return 0;
    if (rep->status == 0)
        reply_error(rep, 500, "internal error");
    return -1;
}

/* The internal group's routes take the service credential, and nothing
 * else: a user's token is refused as any wrong key is. */
static int authenticate_service(const char *authz, struct conn_ctx *cx, struct reply *rep)
{
    if (!service_check(authz)) {
        prom_auth_failure(PROM_AUTH_TOKEN);
        reply_error(rep, 401, "the internal routes take the service credential");
        reply_header(rep, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
        return -1;
    }
    service_caller(&cx->user);
    cx->authenticated = true;
    return 0;
}

/* 0 when the caller may use the route; else rep holds the 401/403/503. */
static int authenticate(struct MHD_Connection *conn, struct conn_ctx *cx, struct reply *rep)
{
    const char *authz = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                    MHD_HTTP_HEADER_AUTHORIZATION);
    if (cx->route->roles == ROLE_SERVICE)
        return authenticate_service(authz, cx, rep);
    struct store_conn *sc = store_acquire();
    enum auth_result r = auth_check_bearer(authz, sc, &cx->user);
    store_release(sc);
    /* Handlers never need the caller's hash; do not keep it around. */
    sodium_memzero(cx->user.password_hash, sizeof cx->user.password_hash);

    if (r == AUTH_UNAVAILABLE) {
        reply_error(rep, 503, "%s", auth_result_detail(r));
        return -1;
    }
    if (r == AUTH_FAILED) {
        reply_error(rep, 500, "internal error");
        return -1;
    }
    if (r != AUTH_OK) {
        prom_auth_failure(PROM_AUTH_TOKEN);
        reply_error(rep, 401, "%s", auth_result_detail(r));
        reply_header(rep, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
        return -1;
    }
    if ((role_from_name(cx->user.role) & cx->route->roles) == 0) {
        prom_auth_failure(PROM_AUTH_ROLE);
        reply_error(rep, 403, "insufficient role");
        return -1;
    }
    cx->authenticated = true;
    return 0;
}

/* A body refused before its handler (415, 400, 422 with a string), in the
 * terms the spec fixes for the route (enum route_body). */
static void reply_in_route_terms(const struct route *route, struct reply *rep)
{
    if (rep->status >= 500 || route->body == BODY_JSON)
        return;
    if (route->body == BODY_JSON_SPEC_400) {
        if (rep->status == 415)
            rep->status = 400;
        return;
    }
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(rep->body, "detail");
    char msg[256];
    snprintf(msg, sizeof msg, "%s", cJSON_IsString(d) ? d->valuestring : "invalid body");
    reply_validation_list(rep, "", msg, "value_error");
}

/* Everything decidable from the request line and headers, so that bad
 * requests are refused before their body is read.  0 to go on reading. */
static int check_headers(struct MHD_Connection *conn, struct conn_ctx *cx, const char *url,
                         struct reply *rep)
{
    char allow[64];

    /* Prometheus's, not the API's: answered here, whole, from the headers */
    if (strcmp(url, PROM_PATH) == 0) {
        cx->scrape = true;
        if (strcmp(cx->method, "GET") == 0 || strcmp(cx->method, "HEAD") == 0)
            prom_reply(rep);
        else {
            reply_error(rep, 405, "method not allowed");
            reply_header(rep, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
        }
        return -1;
    }
    switch (router_find(cx->method, url, &cx->route, &cx->params, allow, sizeof allow)) {
    case ROUTE_NO_PATH:
        reply_error(rep, 404, "not found");
        return -1;
    case ROUTE_NO_METHOD:
        reply_error(rep, 405, "method not allowed");
        reply_header(rep, MHD_HTTP_HEADER_ALLOW, allow);
        return -1;
    case ROUTE_FOUND:
        break;
    }
    if (cx->route->roles != 0 && authenticate(conn, cx, rep) != 0)
        return -1;
    if (cx->route->body == BODY_STREAM)
        return open_stream(conn, cx, rep);
    if (cx->route->body != BODY_NONE &&
        !is_json_content_type(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                          MHD_HTTP_HEADER_CONTENT_TYPE))) {
        reply_error(rep, 415, "Content-Type must be application/json");
        reply_in_route_terms(cx->route, rep);
        return -1;
    }
    if (announced_too_large(conn)) {
        reply_error(rep, 413, "request body exceeds %zu bytes", max_body);
        return -1;
    }
    return 0;
}

static enum MHD_Result on_headers(struct MHD_Connection *conn, const char *url,
                                  const char *method, void **con_cls)
{
    struct conn_ctx *cx = calloc(1, sizeof *cx);
    struct reply rep = { 0 };

    if (cx == NULL)
        return MHD_NO;
    *con_cls = cx;
    cx->start_ms = monotonic_ms();
    sanitize(cx->method, sizeof cx->method, method);
    sanitize(cx->log_path, sizeof cx->log_path, url);
    if (check_headers(conn, cx, url, &rep) == 0)
        return MHD_YES;
    if (cx->scrape || !body_worth_draining(conn))
        return send_reply(conn, cx, &rep);
    cx->held = rep;             /* on_complete sends it */
    cx->holding = true;
    return MHD_YES;
}

/* Bodies carry passwords and tokens: wiped before their memory goes back,
 * so a later allocation cannot find them. */
static void body_free(struct conn_ctx *cx)
{
    if (cx->body != NULL)
        sodium_memzero(cx->body, cx->body_cap);
    free(cx->body);
    cx->body = NULL;
    cx->body_len = cx->body_cap = 0;
}

static int body_append(struct conn_ctx *cx, const char *data, size_t n)
{
    if (cx->body_len + n > cx->body_cap) {
        size_t cap = cx->body_cap ? cx->body_cap : 4096;
        while (cap < cx->body_len + n)
            cap *= 2;
        if (cap > max_body)
            cap = max_body;
        /* not realloc: it would leave the old copy behind, unwiped */
        char *p = malloc(cap);
        if (p == NULL)
            return -1;
        if (cx->body_len > 0)
            memcpy(p, cx->body, cx->body_len);
        size_t len = cx->body_len;
        body_free(cx);
        cx->body = p;
        cx->body_len = len;
        cx->body_cap = cap;
    }
    memcpy(cx->body + cx->body_len, data, n);
    cx->body_len += n;
    return 0;
}

static void refuse_body(struct conn_ctx *cx)
{
    cx->too_large = true;
    body_free(cx);
}

/* Body chunks: kept only for JSON routes and only up to max_body.
 *
 * libmicrohttpd 0.9.75 cannot queue a reply in the middle of a body, so a
 * body without Content-Length that grows past the limit is no longer
 * buffered, the rest is read and dropped and on_complete answers 413; a
 * client still sending after another max_body bytes is disconnected.
 * (nginx forwards bodies with Content-Length, refused up front.) */
/* A BODY_STREAM route's chunk: to its stream, up to the stream's limit
 * (past it, read and dropped, then disconnected as on_body does). */
static enum MHD_Result stream_body(struct conn_ctx *cx, const char *data, size_t n)
{
    const struct route_stream *s = cx->route->doc->stream;
    size_t max = s->max_bytes();

    cx->received += n;
    if (cx->too_large)
        return cx->received - max > max ? MHD_NO : MHD_YES;
    if (cx->received > max) {
        cx->too_large = true;
        return MHD_YES;
    }
    if (!cx->stopped && s->chunk(cx->stream, data, n) != 0)
        cx->stopped = true;
    return MHD_YES;
}

static enum MHD_Result on_body(struct conn_ctx *cx, const char *data, size_t *size)
{
    size_t n = *size;

    *size = 0;
    if (cx->queued)
        return MHD_YES;
    if (cx->holding) {
        cx->received += n;
        return cx->received > REFUSED_BODY_DRAIN ? MHD_NO : MHD_YES;
    }
    if (cx->stream != NULL)
        return stream_body(cx, data, n);
    cx->received += n;
    if (cx->too_large)
        return cx->received - max_body > max_body ? MHD_NO : MHD_YES;
    if (cx->received > max_body) {
        refuse_body(cx);
        return MHD_YES;
    }
    if (cx->route->body != BODY_NONE && body_append(cx, data, n) != 0)
        return MHD_NO;
    return MHD_YES;
}

static void run_handler(struct conn_ctx *cx, struct request *req, struct reply *rep)
{
    if (cx->route->body != BODY_NONE) {
        req->json = json_parse_object(cx->body, cx->body_len, rep);
        if (req->json == NULL) {
            reply_in_route_terms(cx->route, rep);
            return;
        }
    }
    cx->route->handler(req, rep);
    if (rep->status == 0)
        reply_error(rep, 500, "internal error");
    cJSON_Delete(req->json);
    store_release(req->store);
}

static enum MHD_Result on_complete(struct MHD_Connection *conn, struct conn_ctx *cx,
                                   const char *url)
{
    struct reply rep = { 0 };
    struct request req = {
        .conn = conn,
        .method = cx->method,
        .path = url,
        .params = &cx->params,
        .user = cx->authenticated ? &cx->user : NULL,
    };

    if (cx->queued)
        return MHD_YES;
    if (cx->holding) {
        cx->holding = false;
        return send_reply(conn, cx, &cx->held);
    }
    if (cx->stream != NULL) {
        cx->route->doc->stream->close(cx->stream, &cx->req, &rep, cx->too_large);
        cx->stream = NULL;
        store_release(cx->req.store);
    } else if (cx->too_large)
        reply_error(&rep, 413, "request body exceeds %zu bytes", max_body);
    else
        run_handler(cx, &req, &rep);
    return send_reply(conn, cx, &rep);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)cls;
    (void)version;
    if (*con_cls == NULL)
        return on_headers(conn, url, method, con_cls);
    if (*upload_data_size != 0)
        return on_body(*con_cls, upload_data, upload_data_size);
    return on_complete(conn, *con_cls, url);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct conn_ctx *cx = *con_cls;

    (void)cls;
    (void)conn;
    if (cx == NULL)
        return;
    if (cx->stream != NULL) {       /* the client left mid-body */
        const struct route_stream *s = cx->route->doc->stream;
        struct reply gone = { 0 };
        if (s->abandon != NULL)
            s->abandon(cx->stream);
        else
            s->close(cx->stream, &cx->req, &gone, false);
        reply_free(&gone);
        store_release(cx->req.store);
    }
    if (cx->holding)                /* the client left before its answer */
        reply_free(&cx->held);
    log_line("%s %s %d %.1fms%s", cx->method, cx->log_path, cx->status,
             monotonic_ms() - cx->start_ms,
             toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection closed early)");
    body_free(cx);
    free(cx);
    *con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];

    (void)cls;
    if (vsnprintf(msg, sizeof msg, fmt, ap) < 0)
        return;
    msg[strcspn(msg, "\r\n")] = '\0';
    log_line("microhttpd: %s", msg);
}

struct MHD_Daemon *http_start(uint16_t port, size_t body_limit)
{
    struct sockaddr_in addr = {
        .sin_family = AF_INET,
        .sin_port = htons(port),
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
    };

    max_body = body_limit;
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG, port, NULL, NULL,
        on_request, NULL,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,   /* first, to catch option errors */
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)HTTP_THREADS,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)CONNECTION_LIMIT,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)CONNECTION_TIMEOUT_S,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONNECTION_MEMORY_LIMIT,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
        MHD_OPTION_END);
    if (d == NULL)
        log_line("cannot listen on 127.0.0.1:%u", (unsigned)port);
    return d;
}

void http_stop(struct MHD_Daemon *d)
{
    if (d != NULL)
        MHD_stop_daemon(d);
}
