/* The HTTP server (libmicrohttpd), request dispatch and body handling. */
#ifndef ADSERVE_HTTP_H
#define ADSERVE_HTTP_H

#include "json_util.h"
#include "router.h"
#include "store.h"
#include "users.h"
#include "util.h"

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

struct schema;

/* The query string as an object normalised by the schema s (a list
 * query's table starts with SCHEMA_PAGING_FIELDS): unknown or repeated
 * parameters are refused like unknown body fields, defaults filled in.
 * NULL with the answer (422, 500) in rep. */
cJSON *request_query_object(struct request *req, struct reply *rep, const struct schema *s);

/* The {name} path segment, when it is a UUID (every id of the API is):
 * copied into out, lower-cased. False otherwise; the caller answers 404. */
bool request_uuid_param(const struct request *req, const char *name,
                        char out[UUID_STR_LEN]);

/* Starts the daemon on 127.0.0.1:port.  NULL on failure (logged). */
struct MHD_Daemon *http_start(uint16_t port, size_t max_body);
void http_stop(struct MHD_Daemon *d);

#endif
