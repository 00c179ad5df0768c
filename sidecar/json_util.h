/* Replies (status + JSON body + a few headers) and JSON input helpers.
 *
 * Handlers fill a struct reply; http.c turns it into the HTTP answer.  Every
 * non-2xx answer is {"detail": "<message>"}. */
#ifndef ADSERVE_JSON_UTIL_H
#define ADSERVE_JSON_UTIL_H

#include "schema.h"
#include "store.h"

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#define REPLY_MAX_HEADERS 4

struct reply {
    int status;                   /* 0 until a handler sets one */
    cJSON *body;                  /* NULL: empty body (204) */
    char *text;                   /* instead of body: a body already
                                     written (malloc'd), of type
                                     content_type (reply_text) */
    size_t text_len;
    char content_type[64];
    int n_headers;
    struct {
        char name[32];
        char value[128];
    } headers[REPLY_MAX_HEADERS];
};

/* Sets status and body, taking ownership of body; a NULL body for a
 * status other than 204 means an allocation failed and becomes a 500. */
void reply_json(struct reply *rep, int status, cJSON *body);

/* Sets status and a body already written, taking ownership of text
 * (malloc'd, len bytes) whatever happens; a NULL text becomes a 500. */
void reply_text(struct reply *rep, int status, const char *content_type, char *text,
                size_t len);

/* Sets status and {"detail": printf-style message}. */
void reply_error(struct reply *rep, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Maps a failed store status onto 404 / 409 / 503 / 500. */
void reply_store_error(struct reply *rep, enum store_status st);

/* Adds a response header; -1 when full or too long. */
int reply_header(struct reply *rep, const char *name, const char *value);

void reply_free(struct reply *rep);

/* 422 "<path>: <message>" for a body or query that a schema refused (500
 * when it failed for lack of memory: no message). */
void reply_invalid(struct reply *rep, const struct schema_error *err);

/* The spec's validation error (forgot-password's only failure): 422
 * {"detail": [{"loc": ["body", ...path], "msg": msg, "type": type}]}, path
 * as schema errors name it ("a.b[2].c"), "" for the body itself. */
void reply_validation_list(struct reply *rep, const char *path, const char *msg,
                           const char *type);

/* schema_apply, answering rep as reply_invalid does when it fails. */
cJSON *json_apply_schema(const struct schema *s, const cJSON *in, enum schema_mode mode,
                         struct reply *rep);

/* The string member name of o, or NULL (absent or not a string). */
const char *json_str_member(const cJSON *o, const char *name);

/* Whether o has member name, and it is not null. */
bool json_has(const cJSON *o, const char *name);

/* {items, total}: the page of the n sorted records that the checked list
 * query's limit and offset name, each in the output view of s; total is
 * n. NULL out of memory. */
cJSON *json_page(const struct schema *s, cJSON **sorted, size_t n, const cJSON *query);

/* qsort order of resources (cJSON * elements): oldest first, then by id,
 * an order that paging can rely on. */
int json_by_creation(const void *a, const void *b);

/* Overwrites a string member (a password) before the object is freed. */
void json_wipe_member(cJSON *o, const char *name);

/* Parses a request body that must be one JSON object.  NULL with a 400
 * in rep when it is malformed, has trailing data, or is not an object. */
cJSON *json_parse_object(const char *buf, size_t len, struct reply *rep);

/* 422 naming the first member of obj not listed in allowed (NULL-ended);
 * 0 when all members are known. */
int json_reject_unknown(const cJSON *obj, const char *const *allowed, struct reply *rep);

/* The string member name of obj, or NULL with a 422 naming the field when
 * it is missing or not a string. */
const char *json_require_string(const cJSON *obj, const char *name, struct reply *rep);

#endif
