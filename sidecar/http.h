/* The HTTP server (libmicrohttpd), request dispatch and body handling. */
#ifndef ADSERVE_HTTP_H
#define ADSERVE_HTTP_H

#include "json_util.h"
#include "router.h"
#include "store.h"
#include "users.h"

#include <cJSON.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>

#define HTTP_THREADS 4           /* MHD worker threads; also the Redis pool size */

/* What a handler sees of one request. */
struct request {
    struct MHD_Connection *conn;
    const char *method;
    const char *path;
    const struct route_params *params;
    cJSON *json;                 /* the body object, on BODY_JSON routes */
    const struct user *user;     /* the caller, on authenticated routes */
    struct store_conn *store;    /* use request_store() */
};

/* The request's Redis connection, taken from the pool on first use and
 * returned when the handler is done. */
struct store_conn *request_store(struct request *req);

/* A {name} path segment, a request header, a query argument; NULL if absent. */
const char *request_param(const struct request *req, const char *name);
const char *request_header(const struct request *req, const char *name);
const char *request_query(const struct request *req, const char *name);

/* Paging of a collection: ?limit= in 1..max (dflt when absent) and
 * ?offset= >= 0 (0 when absent). False, with a 422 naming the parameter in
 * rep, when either is not such a whole number. */
bool request_page(const struct request *req, struct reply *rep, long dflt, long max,
                  long *limit, long *offset);

/* Starts the daemon on 127.0.0.1:port.  NULL on failure (logged). */
struct MHD_Daemon *http_start(uint16_t port, size_t max_body);
void http_stop(struct MHD_Daemon *d);

#endif
