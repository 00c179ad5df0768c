#include "json_util.h"
#include "schema.h"

#include "util.h"

#include <ctype.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void drop_text(struct reply *rep)
{
    free(rep->text);
    rep->text = NULL;
    rep->text_len = 0;
    rep->content_type[0] = '\0';
}

void reply_json(struct reply *rep, int status, cJSON *body)
{
    drop_text(rep);
    cJSON_Delete(rep->body);
    rep->body = body;
    rep->status = status;
    if (body == NULL && status != 204)
        reply_error(rep, 500, "internal error");
}

void reply_error(struct reply *rep, int status, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        copy_str(msg, sizeof msg, "internal error");

    drop_text(rep);
    cJSON_Delete(rep->body);
    rep->status = status;
    rep->body = cJSON_CreateObject();
    /* On OOM the body stays NULL and http.c sends a fixed 500 body. */
    if (rep->body != NULL && cJSON_AddStringToObject(rep->body, "detail", msg) == NULL) {
        cJSON_Delete(rep->body);
        rep->body = NULL;
    }
}

void reply_text(struct reply *rep, int status, const char *content_type, char *text,
                size_t len)
{
    drop_text(rep);
    cJSON_Delete(rep->body);
    rep->body = NULL;
    if (text == NULL || copy_str(rep->content_type, sizeof rep->content_type, content_type) != 0) {
        free(text);
        reply_error(rep, 500, "internal error");
        return;
    }
    rep->text = text;
    rep->text_len = len;
    rep->status = status;
}

void reply_store_error(struct reply *rep, enum store_status st)
{
    switch (st) {
    case STORE_NOT_FOUND:
        reply_error(rep, 404, "not found");
        break;
    case STORE_CONFLICT:
        reply_error(rep, 409, "concurrent modification, retry");
        break;
    case STORE_UNAVAILABLE:
        reply_error(rep, 503, "redis unavailable");
        break;
    default:
        reply_error(rep, 500, "internal error");
        break;
    }
}

int reply_header(struct reply *rep, const char *name, const char *value)
{
    if (rep->n_headers >= REPLY_MAX_HEADERS)
        return -1;
    if (copy_str(rep->headers[rep->n_headers].name, sizeof rep->headers[0].name, name) != 0 ||
        copy_str(rep->headers[rep->n_headers].value, sizeof rep->headers[0].value, value) != 0)
        return -1;
    rep->n_headers++;
    return 0;
}

void reply_free(struct reply *rep)
{
    drop_text(rep);
    cJSON_Delete(rep->body);
    rep->body = NULL;
}

/* ["body", ...path]: "a.b[2].c" -> "body", "a", "b", 2, "c". */
static cJSON *loc_of(const char *path)
{
    cJSON *loc = cJSON_CreateArray();
    char seg[256];
    bool ok = loc != NULL && cJSON_AddItemToArray(loc, cJSON_CreateString("body"));

    for (const char *p = path; ok && *p != '\0';) {
        size_t n = strcspn(p, ".[]");
        if (n > 0 && n < sizeof seg) {
            memcpy(seg, p, n);
            seg[n] = '\0';
            char *end;
            long idx = strtol(seg, &end, 10);
            bool index = p > path && p[-1] == '[' && *end == '\0';
            ok = cJSON_AddItemToArray(loc, index ? cJSON_CreateNumber((double)idx)
                                                 : cJSON_CreateString(seg));
        }
        p += n;
        while (*p == '.' || *p == '[' || *p == ']')
            p++;
    }
    if (!ok) {
        cJSON_Delete(loc);
        return NULL;
    }
    return loc;
}

void reply_validation_list(struct reply *rep, const char *path, const char *msg,
                           const char *type)
{
    cJSON *body = cJSON_CreateObject();
    cJSON *list = body != NULL ? cJSON_AddArrayToObject(body, "detail") : NULL;
    cJSON *item = list != NULL ? cJSON_CreateObject() : NULL;
    if (item != NULL && !cJSON_AddItemToArray(list, item)) {
        cJSON_Delete(item);
        item = NULL;
    }
    cJSON *loc = item != NULL ? loc_of(path) : NULL;
    if (loc != NULL && !cJSON_AddItemToObject(item, "loc", loc)) {
        cJSON_Delete(loc);
        loc = NULL;
    }
    if (loc == NULL || cJSON_AddStringToObject(item, "msg", msg) == NULL ||
        cJSON_AddStringToObject(item, "type", type) == NULL) {
        cJSON_Delete(body);
        reply_error(rep, 500, "internal error");
        return;
    }
    reply_json(rep, 422, body);
}

static bool only_whitespace(const char *p, const char *end)
{
    for (; p < end; p++)
        if (!isspace((unsigned char)*p))
            return false;
    return true;
}

/*
 * Control characters in strings. cJSON ends its strings at a NUL, so
 * "a\u0000b" would be stored as "a", and a code "x\u0000-new" would
 * collide with "x". The escape is turned into \u0001 before parsing (the
 * same length; in JSON a backslash is only ever inside a string, and "\\"
 * pairs are skipped) and refused then with the other C0 controls. Tab, LF
 * and CR are text (templates, descriptions) and pass.
 */
static int nul_escapes_marked(const char *buf, size_t len, char **copy)
{
    *copy = NULL;
    for (size_t i = 0; i + 1 < len; i++) {
        if (buf[i] != '\\')
            continue;
        if (buf[i + 1] == 'u' && i + 5 < len && memcmp(buf + i + 2, "0000", 4) == 0) {
            if (*copy == NULL) {
                if ((*copy = malloc(len)) == NULL)
                    return -1;
                memcpy(*copy, buf, len);
            }
            (*copy)[i + 5] = '1';
        }
        i++;                            /* the escaped character */
    }
    return 0;
}

static bool control_free(const char *s)
{
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
            return false;
    }
    return true;
}

/* The path of the first key or string value with a control character, into
 * path (at its offset at); false when there is none. */
static bool control_path(const cJSON *node, char *path, size_t at, size_t cap)
{
    const cJSON *child;
    int i = 0;

    if (cJSON_IsString(node))
        return !control_free(node->valuestring);
    cJSON_ArrayForEach(child, node) {
        int n = cJSON_IsObject(node)
            ? snprintf(path + at, cap - at, "%s%.64s", at ? "." : "", child->string)
            : snprintf(path + at, cap - at, "[%d]", i);
        size_t next = n < 0 ? at : (size_t)n >= cap - at ? cap - 1 : at + (size_t)n;
        if ((cJSON_IsObject(node) && !control_free(child->string)) ||
            control_path(child, path, next, cap))
            return true;
        i++;
    }
    path[at] = '\0';
    return false;
}

cJSON *json_parse_object(const char *buf, size_t len, struct reply *rep)
{
    const char *end = NULL;
    char path[256] = "";

    if (buf == NULL || len == 0) {
        reply_error(rep, 400, "request body must be a JSON object");
        return NULL;
    }
    char *marked;
    if (nul_escapes_marked(buf, len, &marked) != 0) {
        reply_error(rep, 500, "out of memory");
        return NULL;
    }
    const char *text = marked != NULL ? marked : buf;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    bool trailing = end == NULL || !only_whitespace(end, text + len);
    free(marked);
    if (root == NULL || trailing) {
        cJSON_Delete(root);
        reply_error(rep, 400, "malformed JSON");
        return NULL;
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        reply_error(rep, 400, "request body must be a JSON object");
        return NULL;
    }
    if (control_path(root, path, 0, sizeof path)) {
        cJSON_Delete(root);
        reply_error(rep, 422, "field '%s' holds a control character (U+0000 to U+001F other "
                    "than tab, line feed and carriage return)", path);
        return NULL;
    }
    return root;
}

static bool listed(const char *name, const char *const *allowed)
{
    for (; *allowed != NULL; allowed++)
        if (strcmp(name, *allowed) == 0)
            return true;
    return false;
}

int json_reject_unknown(const cJSON *obj, const char *const *allowed, struct reply *rep)
{
    const cJSON *item;

    cJSON_ArrayForEach(item, obj)
        if (!listed(item->string, allowed)) {
            reply_error(rep, 422, "unknown field '%.64s'", item->string);
            return -1;
        }
    return 0;
}

const char *json_require_string(const cJSON *obj, const char *name, struct reply *rep)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

    if (v == NULL) {
        reply_error(rep, 422, "field '%s' is required", name);
        return NULL;
    }
    if (!cJSON_IsString(v) || v->valuestring == NULL) {
        reply_error(rep, 422, "field '%s' must be a string", name);
        return NULL;
    }
    return v->valuestring;
}

void reply_invalid(struct reply *rep, const struct schema_error *err)
{
    if (err->msg[0] == '\0')
        reply_error(rep, 500, "internal error");        /* out of memory */
    else if (err->path[0] != '\0')
        reply_error(rep, 422, "%s: %s", err->path, err->msg);
    else
        reply_error(rep, 422, "%s", err->msg);
}

cJSON *json_apply_schema(const struct schema *s, const cJSON *in, enum schema_mode mode,
                         struct reply *rep)
{
    struct schema_error err = { { 0 }, { 0 } };
    cJSON *out = schema_apply(s, in, mode, &err);

    if (out == NULL)
        reply_invalid(rep, &err);
    return out;
}

const char *json_str_member(const cJSON *o, const char *name)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
}

bool json_has(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

    return v != NULL && !cJSON_IsNull(v);
}

void json_wipe_member(cJSON *o, const char *name)
{
    char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));

    if (s != NULL)
        sodium_memzero(s, strlen(s));
}

int json_by_creation(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    const char *cx = json_str_member(x, "created_at"), *cy = json_str_member(y, "created_at");
    int c = strcmp(cx ? cx : "", cy ? cy : "");

    if (c != 0)
        return c;
    const char *ix = json_str_member(x, "id"), *iy = json_str_member(y, "id");
    return strcmp(ix ? ix : "", iy ? iy : "");
}

cJSON *json_page(const struct schema *s, cJSON **sorted, size_t n, const cJSON *query)
{
    size_t offset = (size_t)cJSON_GetObjectItemCaseSensitive(query, "offset")->valuedouble;
    size_t limit = (size_t)cJSON_GetObjectItemCaseSensitive(query, "limit")->valuedouble;
    cJSON *body = cJSON_CreateObject();
    cJSON *items = body != NULL ? cJSON_AddArrayToObject(body, "items") : NULL;

    if (items == NULL || cJSON_AddNumberToObject(body, "total", (double)n) == NULL)
        goto oom;
    for (size_t i = offset; i < n && i - offset < limit; i++) {
        cJSON *item = schema_output(s, sorted[i]);
        if (item == NULL || !cJSON_AddItemToArray(items, item)) {
            cJSON_Delete(item);
            goto oom;
        }
    }
    return body;
oom:
    cJSON_Delete(body);
    return NULL;
}
