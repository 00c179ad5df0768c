/* The route table: {method, path pattern, handler, required roles, body}.
 * Patterns are literal segments and "{name}" segments matching any one
 * non-empty path segment; later features add rows to routes.c. */
#ifndef ADSERVE_ROUTER_H
#define ADSERVE_ROUTER_H

#include <stdbool.h>
#include <stddef.h>

#define ROUTE_MAX_PARAMS 4
#define ROUTE_PARAM_MAX 128      /* longer segments never match a {name} */

struct request;
struct reply;

typedef void route_handler(struct request *req, struct reply *rep);

enum route_body {
    BODY_NONE,                   /* any body is read and discarded */
    BODY_JSON,                   /* application/json object, parsed into req->json;
                                    one it cannot take: 400, 415 or 422 with
                                    {detail: string} */
    /* the same, where the spec fixes the endpoint's failures, in its terms: */
    BODY_JSON_SPEC_400,          /* endpoint 1: 400, 403, 404 or 422 only (a
                                    body not application/json is a 400) */
    BODY_JSON_SPEC_VALIDATION,   /* forgot-password: 422 only, with
                                    {detail: [{loc, msg, type}]} */
    BODY_STREAM,                 /* of the route's stream's media type, handed
                                    to it chunk by chunk as it arrives, never
                                    kept whole (struct route_stream) */
};


struct request;
struct reply;

/* A body too large to keep, taken as it comes (an upload of a million
 * lines). After the route's role check: open, with the request (its path
 * parameters, its caller); then each chunk; then close, which answers. */
struct route_stream {
    const char *media_type;              /* "text/plain": others are 415 */
    const char *const *media_types;      /* or any of these (NULL-ended) */
    const char *form_part;               /* multipart/form-data: the file's part */
    size_t (*max_bytes)(void);           /* the body's limit: over it, 413 */
    /* the state, or NULL with the refusal in rep (no body is read then) */
    void *(*open)(struct request *req, struct reply *rep);
    /* 0, or -1 to stop taking the body (the rest is read and dropped;
     * close answers why) */
    int (*chunk)(void *state, const char *data, size_t n);
    /* the body's end: answers rep and frees state; too_large when the body
     * went past max_bytes (what came before it was taken) */
    void (*close)(void *state, struct request *req, struct reply *rep, bool too_large);
    /* the client left before the body's end: frees state, keeping
     * nothing of it; NULL: close runs (its answer goes nowhere) */
    void (*abandon)(void *state);
};

struct schema;

/* What the OpenAPI document says of a route; every route has one. */
struct route_doc {
    const char *tag;                     /* the resource group: "Auth", "AdUnit" */
    const char *summary;
    const struct schema *request;        /* the JSON body, or NULL */
    const struct schema *response;       /* the success body, or NULL for none */
    int status;                          /* the success status: 200, 201, 204 */
    bool list;                           /* response is {items: [response], total} */
    const struct schema *query;          /* the query parameters (an object schema:
                                            list routes start with the paging rows) */
    const int *errors;                   /* the error statuses, 0-ended */
    const char *csv;                     /* the success answer is also text/csv
                                            (Accept): what its lines hold */
    const struct route_stream *stream;   /* BODY_STREAM routes: what takes the
                                            body, and its media type */
};

struct route {
    const char *method;
    const char *pattern;
    route_handler *handler;
    unsigned roles;              /* 0: public; else the ROLE_* bits allowed */
    enum route_body body;
    const struct route_doc *doc;
};

struct route_params {
    int n;
    struct {
        const char *name;        /* points into the pattern, not NUL-ended */
        size_t name_len;
        char value[ROUTE_PARAM_MAX];
    } p[ROUTE_MAX_PARAMS];
};

enum route_match {
    ROUTE_FOUND,
    ROUTE_NO_PATH,               /* -> 404 */
    ROUTE_NO_METHOD,             /* -> 405, allow lists the methods */
};

/* Each resource group keeps its rows in its own api_*.c file; routes.c
 * lists the groups. Within the list, the first match wins. */
struct route_table {
    const struct route *routes;
    const size_t *count;
};

extern const struct route_table route_tables[];
extern const size_t route_tables_count;

/* Finds the route for method and path, filling params on success and the
 * comma-separated methods the path supports on ROUTE_NO_METHOD. */
enum route_match router_find(const char *method, const char *path,
                             const struct route **found, struct route_params *params,
                             char *allow, size_t allowlen);

/* The value of the {name} segment, or NULL. */
const char *route_param(const struct route_params *params, const char *name);

#endif
