/* The generic resource layer (resource.h): lists, reads and the write
 * path of every demand resource, from its struct resource. */
#include "resource.h"

#include "log.h"
#include "users.h"
#include "util.h"

#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Writes race with other writes of the same hashes (another sidecar, the
 * ad unit routes); with the lock below, a handful of rounds is plenty and
 * a request never spins for long. */
#define WRITE_ATTEMPTS 8
#define BACKOFF_US 500          /* up to attempt x this, at random, after a conflict */
/* store.h takes at most 64 arguments: HMGET, the hash and 62 fields. */
#define HMGET_BATCH 62
#define KEY_MAX 192             /* a Redis key of ours */
#define UNIQUE_MAX 1100         /* a unique value: two ids and a 256-character name */
#define WATCH_MAX 32
#define MAX_REFS RESOURCE_MAX_REFS

/* ---- small helpers ---------------------------------------------------------------- */

static bool same(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static const cJSON *member(const cJSON *o, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(o, name);
}

/* The member at "a.b.c", a dot per level. */
static const cJSON *member_path(const cJSON *o, const char *path)
{
    const char *dot = strchr(path, '.');
    char head[64];

    if (dot == NULL)
        return member(o, path);
    if ((size_t)(dot - path) >= sizeof head)
        return NULL;
    memcpy(head, path, (size_t)(dot - path));
    head[dot - path] = '\0';
    return member_path(member(o, head), dot + 1);
}

static bool in_list(const char *const *list, const char *v)
{
    for (; list != NULL && *list != NULL; list++)
        if (same(*list, v))
            return true;
    return false;
}

/* Replaces (or adds) member name of o; false on OOM (value freed). */
static bool set_member(cJSON *o, const char *name, cJSON *value)
{
    if (value == NULL)
        return false;
    if (member(o, name) != NULL)
        return cJSON_ReplaceItemInObjectCaseSensitive(o, name, value) ||
               (cJSON_Delete(value), false);
    return cJSON_AddItemToObject(o, name, value) || (cJSON_Delete(value), false);
}

unsigned resource_role(const struct request *req)
{
    return role_from_name(req->user->role);
}

const char *resource_caller_advertiser(const struct request *req)
{
    return resource_role(req) == ROLE_ADVERTISER ? req->user->advertiser_id : NULL;
}

bool resource_owned_by(const char *caller, const char *advertiser)
{
    return caller == NULL || (caller[0] != '\0' && same(advertiser, caller));
}

static bool visible(const struct resource *res, const char *advertiser, const cJSON *rec)
{
    if (advertiser == NULL)
        return true;
    switch (res->owner) {
    case OWNER_NONE:
        return false;
    case OWNER_SELF:
        return resource_owned_by(advertiser, json_str_member(rec, "id"));
    case OWNER_FIELD:
        return resource_owned_by(advertiser, json_str_member(rec, "advertiser_id"));
    }
    return false;
}

/* The hash of res: its own, or its parent's (parent_param resources). */
static bool hash_key(const struct resource *res, const char *parent_id, char key[KEY_MAX])
{
    int n = res->parent_param != NULL
                ? snprintf(key, KEY_MAX, "%s%s", res->hash, parent_id ? parent_id : "")
                : snprintf(key, KEY_MAX, "%s", res->hash);
    return n > 0 && n < KEY_MAX;
}

static bool prefixed_key(char key[KEY_MAX], const char *prefix, const char *id)
{
    int n = snprintf(key, KEY_MAX, "%s%s", prefix, id);
    return n > 0 && n < KEY_MAX;
}

/* A hash value that is one JSON object, or NULL (a record written around
 * the API is skipped rather than failing the whole answer). */
static cJSON *parse_record(const redisReply *v)
{
    cJSON *o = v->type == REDIS_REPLY_STRING ? cJSON_ParseWithLength(v->str, v->len) : NULL;

    if (o != NULL && !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        o = NULL;
    }
    return o;
}

void resource_free_records(cJSON **recs, size_t n)
{
    for (size_t i = 0; recs != NULL && i < n; i++)
        cJSON_Delete(recs[i]);
    free(recs);
}

enum store_status resource_load(struct store_conn *c, const struct resource *res,
                                const char *parent_id, const char *id, cJSON **out)
{
    char hash[KEY_MAX];
    redisReply *r;

    *out = NULL;
    if (!hash_key(res, parent_id, hash))
        return STORE_ERROR;
    enum store_status st = store_cmd(c, &r, (const char *[]){ "HGET", hash, id, NULL });
    if (st != STORE_OK)
        return st;
    if (r->type == REDIS_REPLY_NIL) {
        st = STORE_NOT_FOUND;
    } else if ((*out = parse_record(r)) == NULL) {
        log_line("%s %.40s: the stored record is not a JSON object", res->name, id);
        st = STORE_ERROR;
    }
    freeReplyObject(r);
    return st;
}

/* HMGET hash ids[0..n) in batches: out[i] the parsed record or NULL. */
static enum store_status hmget_records(struct store_conn *c, const char *hash,
                                       const char *const *ids, size_t n, cJSON **out)
{
    for (size_t at = 0; at < n; at += HMGET_BATCH) {
        size_t m = n - at < HMGET_BATCH ? n - at : HMGET_BATCH;
        const char *argv[HMGET_BATCH + 3] = { "HMGET", hash };
        redisReply *r;

        memcpy(argv + 2, ids + at, m * sizeof *ids);
        argv[2 + m] = NULL;
        enum store_status st = store_cmd(c, &r, argv);
        if (st != STORE_OK)
            return st;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != m) {
            freeReplyObject(r);
            return STORE_ERROR;
        }
        for (size_t i = 0; i < m; i++)
            out[at + i] = parse_record(r->element[i]);
        freeReplyObject(r);
    }
    return STORE_OK;
}

/* The strings of an array reply, as pointers into it. */
static const char **reply_strings(const redisReply *r, size_t *n)
{
    const char **ids = calloc(r->elements + 1, sizeof *ids);

    *n = 0;
    for (size_t i = 0; ids != NULL && i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_STRING)
            ids[(*n)++] = r->element[i]->str;
    return ids;
}

/* The records of hash whose ids are the members of set (compacted). */
static enum store_status load_set(struct store_conn *c, const char *hash, const char *set,
                                  cJSON ***out, size_t *count)
{
    redisReply *r;
    size_t n = 0, k = 0;

    *out = NULL;
    *count = 0;
    enum store_status st = store_cmd(c, &r, (const char *[]){ "SMEMBERS", set, NULL });
    if (st != STORE_OK)
        return st;
    const char **ids = r->type == REDIS_REPLY_ARRAY ? reply_strings(r, &n) : NULL;
    cJSON **recs = ids != NULL ? calloc(n + 1, sizeof *recs) : NULL;
    st = recs == NULL ? STORE_ERROR : hmget_records(c, hash, ids, n, recs);
    for (size_t i = 0; st == STORE_OK && i < n; i++)
        if (recs[i] != NULL)
            recs[k++] = recs[i];
    if (st != STORE_OK) {
        resource_free_records(recs, n);
        recs = NULL;
        k = 0;
    }
    free(ids);
    freeReplyObject(r);
    *out = recs;
    *count = k;
    return st;
}

enum store_status resource_load_indexed(struct store_conn *c, const struct resource *res,
                                        const char *prefix, const char *id, cJSON ***out,
                                        size_t *n)
{
    char set[KEY_MAX];

    *out = NULL;
    *n = 0;
    if (!prefixed_key(set, prefix, id))
        return STORE_ERROR;
    return load_set(c, res->hash, set, out, n);
}

/* Every record of a hash. */
static enum store_status load_all(struct store_conn *c, const char *hash, cJSON ***out,
                                  size_t *count)
{
    redisReply *r;
    size_t k = 0;

    *out = NULL;
    *count = 0;
    enum store_status st = store_cmd(c, &r, (const char *[]){ "HGETALL", hash, NULL });
    if (st != STORE_OK)
        return st;
    cJSON **recs = r->type == REDIS_REPLY_ARRAY ? calloc(r->elements / 2 + 1, sizeof *recs) : NULL;
    if (recs == NULL)
        st = STORE_ERROR;
    for (size_t i = 1; recs != NULL && i < r->elements; i += 2)
        if ((recs[k] = parse_record(r->element[i])) != NULL)
            k++;
    freeReplyObject(r);
    *out = recs;
    *count = k;
    return st;
}

enum store_status resource_load_all(struct store_conn *c, const struct resource *res,
                                   cJSON ***out, size_t *n)
{
    return load_all(c, res->hash, out, n);
}

/* ---- lists ---------------------------------------------------------------------- */

static bool array_has(const cJSON *a, const char *want)
{
    const cJSON *e;

    cJSON_ArrayForEach(e, a)
        if (same(cJSON_GetStringValue(e), want))
            return true;
    return false;
}

static bool matches(const struct resource *res, const cJSON *rec, const cJSON *query,
                    const char *advertiser)
{
    if (!visible(res, advertiser, rec))
        return false;
    for (const struct resource_filter *f = res->filters; f != NULL && f->param != NULL; f++) {
        const char *want = json_str_member(query, f->param);
        const cJSON *v = member_path(rec, f->field);
        if (want == NULL)
            continue;
        if (f->search) {
            if (!cJSON_IsString(v) || strcasestr(v->valuestring, want) == NULL)
                return false;
        } else if (cJSON_IsArray(v) ? !array_has(v, want) : !same(cJSON_GetStringValue(v), want)) {
            return false;
        }
    }
    return true;
}


/* The set that narrows a list: the first indexed filter given, else an
 * advertiser caller's own advertiser_id index. NULL: the whole hash. */
static bool narrowing_set(const struct resource *res, const cJSON *query, const char *advertiser,
                          char set[KEY_MAX])
{
    for (const struct resource_filter *f = res->filters; f != NULL && f->param != NULL; f++) {
        const char *want = json_str_member(query, f->param);
        if (f->index != NULL && want != NULL)
            return prefixed_key(set, f->index, want);
    }
    for (const struct resource_filter *f = res->filters; f != NULL && f->param != NULL; f++)
        if (advertiser != NULL && f->index != NULL && strcmp(f->field, "advertiser_id") == 0)
            return prefixed_key(set, f->index, advertiser);
    return false;
}

/* The path's parent id (404 when malformed or unknown). */
static bool parent_of(const struct resource *res, struct request *req, struct reply *rep,
                      char id[UUID_STR_LEN])
{
    cJSON *parent;

    if (!request_uuid_param(req, res->parent_param, id)) {
        reply_error(rep, 404, "%s not found", res->parent->label);
        return false;
    }
    enum store_status st = resource_load(request_store(req), res->parent, NULL, id, &parent);
    cJSON_Delete(parent);
    if (st == STORE_NOT_FOUND)
        reply_error(rep, 404, "%s not found", res->parent->label);
    else if (st != STORE_OK)
        reply_store_error(rep, st);
    return st == STORE_OK;
}

static void list_records(const struct resource *res, struct request *req, struct reply *rep,
                         const cJSON *query, const char *parent_id)
{
    const char *advertiser = resource_caller_advertiser(req);
    char hash[KEY_MAX], set[KEY_MAX];
    cJSON **recs = NULL;
    size_t n = 0, k = 0;
    enum store_status st;

    if (!hash_key(res, parent_id, hash)) {
        reply_error(rep, 500, "internal error");
        return;
    }
    if (narrowing_set(res, query, advertiser, set))
        st = load_set(request_store(req), hash, set, &recs, &n);
    else
        st = load_all(request_store(req), hash, &recs, &n);
    if (st != STORE_OK) {
        reply_store_error(rep, st);
        return;
    }
    cJSON **picked = calloc(n + 1, sizeof *picked);
    if (picked == NULL) {
        resource_free_records(recs, n);
        reply_error(rep, 500, "internal error");
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (matches(res, recs[i], query, advertiser))
            picked[k++] = recs[i];
    qsort(picked, k, sizeof *picked, json_by_creation);
    reply_json(rep, 200, json_page(res->schema, picked, k, query));
    free(picked);
    resource_free_records(recs, n);
}

void resource_list(const struct resource *res, struct request *req, struct reply *rep)
{
    char parent[UUID_STR_LEN];

    /* The routes' roles say so already; this keeps the rule in one place
     * should a route row ever be wrong. */
    if (resource_caller_advertiser(req) != NULL && res->owner != OWNER_FIELD) {
        reply_error(rep, 403, "role not allowed");
        return;
    }
    cJSON *query = request_query_object(req, rep, res->list_query);
    if (query == NULL)
        return;
    if (res->parent_param == NULL || parent_of(res, req, rep, parent))
        list_records(res, req, rep, query, res->parent_param != NULL ? parent : NULL);
    cJSON_Delete(query);
}

/* ---- reads ------------------------------------------------------------------------- */

/* The record id as this caller may see it: 404 (answered in rep, STORE_OK)
 * when there is none or it is not the caller's. */
static enum store_status load_visible(struct request *req, struct reply *rep,
                                      const struct resource *res, const char *parent_id,
                                      const char *id, cJSON **out)
{
    enum store_status st = resource_load(request_store(req), res, parent_id, id, out);

    if (st == STORE_OK && !visible(res, resource_caller_advertiser(req), *out)) {
        cJSON_Delete(*out);
        *out = NULL;
        st = STORE_NOT_FOUND;
    }
    if (st == STORE_NOT_FOUND) {
        reply_error(rep, 404, "%s not found", res->label);
        return STORE_OK;
    }
    return st;
}

/* The path's {id} and, for nested resources, {parent}: false with a 404. */
static bool path_ids(const struct resource *res, struct request *req, struct reply *rep,
                     char id[UUID_STR_LEN], char parent[UUID_STR_LEN])
{
    if (res->parent_param != NULL && !request_uuid_param(req, res->parent_param, parent)) {
        reply_error(rep, 404, "%s not found", res->parent->label);
        return false;
    }
    if (!request_uuid_param(req, "id", id)) {
        reply_error(rep, 404, "%s not found", res->label);
        return false;
    }
    return true;
}

void resource_get(const struct resource *res, struct request *req, struct reply *rep)
{
    char id[UUID_STR_LEN], parent[UUID_STR_LEN];
    cJSON *rec = NULL;

    if (!path_ids(res, req, rep, id, parent))
        return;
    enum store_status st = load_visible(req, rep, res, res->parent_param ? parent : NULL, id, &rec);
    if (st != STORE_OK)
        reply_store_error(rep, st);
    else if (rec != NULL)
        reply_json(rep, 200, schema_output(res->schema, rec));
    cJSON_Delete(rec);
}

/* ---- the write path ----------------------------------------------------------------- */

enum write_op { WRITE_CREATE, WRITE_UPDATE, WRITE_DELETE };

struct write_job {
    const struct resource *res;
    enum write_op op;
    const cJSON *changes;       /* create, update */
    const char *id;             /* update, delete */
    const char *parent_id;      /* nested resources */
};

enum store_status resource_refuse(struct resource_write *w, int status, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    reply_error(w->rep, status, "%s", n >= 0 ? msg : "refused");
    return STORE_OK;
}

static bool answered(const struct resource_write *w)
{
    return w->rep->status != 0;
}

int resource_advertiser_exists(struct store_conn *c, const char *id, struct reply *rep)
{
    cJSON *rec = NULL;
    enum store_status st = resource_load(c, &resource_advertisers, NULL, id, &rec);

    cJSON_Delete(rec);
    if (st == STORE_NOT_FOUND)
        reply_error(rep, 422, "advertiser_id: no such advertiser");
    else if (st != STORE_OK)
        reply_store_error(rep, st);
    return st == STORE_OK ? 0 : -1;
}

bool resource_changed(const struct resource_write *w, const char *field)
{
    const cJSON *v = member(w->changes, field);

    return v != NULL && (w->before == NULL || !cJSON_Compare(v, member(w->before, field), true));
}

static bool set_approval(cJSON *record, adserve_approval_e value)
{
    cJSON *v = cJSON_CreateString(adserve_approval_names[value]);

    if (v == NULL)
        return false;
    cJSON_DeleteItemFromObjectCaseSensitive(record, "approval");
    if (!cJSON_AddItemToObject(record, "approval", v)) {
        cJSON_Delete(v);
        return false;
    }
    return true;
}

/* Whether the change touches what a reviewer approved. */
static bool reviewed_change(const struct resource_write *w, const char *const *unreviewed)
{
    for (const cJSON *c = w->changes->child; c != NULL; c = c->next) {
        bool free_to_change = false;
        for (size_t i = 0; unreviewed[i] != NULL && !free_to_change; i++)
            free_to_change = strcmp(c->string, unreviewed[i]) == 0;
        if (!free_to_change && resource_changed(w, c->string))
            return true;
    }
    return false;
}

enum store_status resource_review(struct resource_write *w, const char *what,
                                  const char *const *unreviewed)
{
    bool advertiser = w->advertiser != NULL;

    if (advertiser && cJSON_GetObjectItemCaseSensitive(w->changes, "approval") != NULL)
        return resource_refuse(w, 403, "approval: only admins and operators review %s", what);
    bool made = w->before == NULL && !json_has(w->changes, "approval");
    bool changed = w->before != NULL && advertiser && reviewed_change(w, unreviewed);

    if (!made && !changed)
        return STORE_OK;
    return set_approval(w->after, advertiser ? ADSERVE_APPROVAL_PENDING : ADSERVE_APPROVAL_APPROVED)
               ? STORE_OK : STORE_ERROR;
}

const cJSON *resource_loaded(const struct resource_write *w, const char *field)
{
    for (int i = 0; w->res->refs != NULL && w->res->refs[i].field != NULL && i < MAX_REFS; i++)
        if (strcmp(w->res->refs[i].field, field) == 0)
            return w->loaded[i];
    return NULL;
}

/* The hash of a unique row (per parent or not). */
static bool unique_hash(const struct resource_unique *u, const char *parent_id, char key[KEY_MAX])
{
    return prefixed_key(key, u->hash, u->per_parent && parent_id != NULL ? parent_id : "");
}

/* WATCH of every key the rules of res read: its watch list, its unique
 * hashes (the ones of this parent for nested resources) and, for an
 * existing record, its hash and the keys its dependents are counted in. */
static enum store_status watch(struct resource_write *w, const char *id)
{
    char keys[WATCH_MAX][KEY_MAX];
    const char *argv[WATCH_MAX + 2] = { "WATCH" };
    size_t n = 0;

    /* A create reads no record of its own hash (its id is new). */
    if (id != NULL) {
        if (!hash_key(w->res, w->parent_id, keys[n]))
            return STORE_ERROR;
        argv[1 + n] = keys[n];
        n++;
    }
    for (const char *const *k = w->res->watch; k != NULL && *k != NULL && n < WATCH_MAX; k++, n++)
        argv[1 + n] = *k;
    for (const struct resource_unique *u = w->res->uniques; u != NULL && u->hash != NULL &&
                                                            n < WATCH_MAX; u++, n++) {
        if (!unique_hash(u, w->parent_id, keys[n]))
            return STORE_ERROR;
        argv[1 + n] = keys[n];
    }
    for (const struct resource_dependent *d = w->res->dependents;
         id != NULL && d != NULL && d->prefix != NULL && n < WATCH_MAX; d++, n++) {
        if (!prefixed_key(keys[n], d->prefix, id))
            return STORE_ERROR;
        argv[1 + n] = keys[n];
    }
    argv[1 + n] = NULL;
    return n > 0 ? store_do(w->c, argv) : STORE_OK;
}

/* Sets created_at (new records) and updated_at, and lists the fields in
 * the table's order, so every stored record reads the same whatever the
 * order of the request. */
static bool finish_record(struct resource_write *w)
{
    char now[RFC3339_LEN];

    if (now_rfc3339(now) != 0 || !set_member(w->after, "updated_at", cJSON_CreateString(now)) ||
        (json_str_member(w->after, "created_at") == NULL &&
         !set_member(w->after, "created_at", cJSON_CreateString(now))))
        return false;
    cJSON *ordered = schema_output(w->res->schema, w->after);
    if (ordered == NULL)
        return false;
    cJSON_Delete(w->after);
    w->after = ordered;
    return true;
}

/* A new record: the input plus the server's fields. */
static enum store_status new_record(struct resource_write *w, const struct write_job *job)
{
    char id[UUID_STR_LEN];

    if (job->parent_id != NULL) {
        cJSON *parent;
        enum store_status st = resource_load(w->c, w->res->parent, NULL, job->parent_id, &parent);
        cJSON_Delete(parent);
        if (st == STORE_NOT_FOUND)
            return resource_refuse(w, 404, "%s not found", w->res->parent->label);
        if (st != STORE_OK)
            return st;
    }
    uuid_v4(id);
    w->after = cJSON_Duplicate(w->changes, 1);
    if (w->after == NULL || !set_member(w->after, "id", cJSON_CreateString(id)) ||
        !set_member(w->after, "created_by", cJSON_CreateString(w->req->user->id)) ||
        (job->parent_id != NULL &&
         !set_member(w->after, w->res->parent_param, cJSON_CreateString(job->parent_id))))
        return STORE_ERROR;
    return STORE_OK;
}

/* before with every changed member replaced (a PATCH replaces whole members). */
static enum store_status merged_record(struct resource_write *w)
{
    w->after = cJSON_Duplicate(w->before, 1);
    for (const cJSON *c = w->changes->child; w->after != NULL && c != NULL; c = c->next)
        if (!set_member(w->after, c->string, cJSON_Duplicate(c, 1)))
            return STORE_ERROR;
    return w->after != NULL ? STORE_OK : STORE_ERROR;
}

static enum store_status check_immutable(struct resource_write *w)
{
    for (const char *const *f = w->res->immutable; w->before != NULL && f != NULL && *f != NULL;
         f++)
        if (resource_changed(w, *f))
            return resource_refuse(w, 409, "%s: cannot change once set (make a new %s instead)",
                                   *f, w->res->label);
    return STORE_OK;
}

/* "A, B" of the states reachable from from. */
static void targets_of(const struct resource_states *s, const char *from, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (const struct resource_transition *t = s->transitions; t->to != NULL && used < len; t++)
        if (t->from == NULL || same(t->from, from)) {
            int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", t->to);
            used += n > 0 ? (size_t)n : 0;
        }
    if (used == 0)
        snprintf(buf, len, "none");
}

static enum store_status check_states(struct resource_write *w)
{
    const struct resource_states *s = w->res->states;
    char list[160];

    if (s == NULL)
        return STORE_OK;
    const char *from = w->before ? json_str_member(w->before, s->field) : NULL;
    const char *to = json_str_member(w->after, s->field);
    if (w->before == NULL) {
        if (s->initial != NULL && !in_list(s->initial, to))
            return resource_refuse(w, 409, "%s: a new %s starts as %s", s->field, w->res->label,
                                   s->initial[0]);
        return STORE_OK;
    }
    if (s->frozen != NULL && same(from, s->frozen))
        return resource_refuse(w, 409, "the %s is %s: it can no longer change", w->res->label,
                               s->frozen);
    if (same(from, to) || s->transitions == NULL)
        return STORE_OK;
    for (const struct resource_transition *t = s->transitions; t->to != NULL; t++) {
        if ((t->from != NULL && !same(t->from, from)) || !same(t->to, to))
            continue;
        if (t->roles != 0 && (t->roles & resource_role(w->req)) == 0)
            return resource_refuse(w, 403, "%s: only admins and operators may set %s", s->field,
                                   to);
        return STORE_OK;
    }
    targets_of(s, from, list, sizeof list);
    return resource_refuse(w, 409, "%s: cannot go from %s to %s (from %s: %s)", s->field,
                           from ? from : "none", to ? to : "none", from ? from : "none", list);
}

/* Every id of an array ref exists and is visible to the caller. */
static enum store_status check_ref_array(struct resource_write *w, const struct resource_ref *ref,
                                         const cJSON *ids)
{
    int n = cJSON_GetArraySize(ids), i = 0;
    const char **list = calloc((size_t)n + 1, sizeof *list);
    cJSON **recs = calloc((size_t)n + 1, sizeof *recs);
    enum store_status st = list != NULL && recs != NULL ? STORE_OK : STORE_ERROR;
    const cJSON *e;

    cJSON_ArrayForEach(e, ids)
        if (list != NULL)
            list[i++] = cJSON_IsString(e) ? e->valuestring : "";
    if (st == STORE_OK)
        st = hmget_records(w->c, ref->target->hash, list, (size_t)n, recs);
    for (i = 0; st == STORE_OK && i < n; i++)
        if (recs[i] == NULL || !visible(ref->target, w->advertiser, recs[i])) {
            resource_refuse(w, 422, "%s[%d]: no such %s", ref->field, i, ref->target->label);
            break;
        }
    resource_free_records(recs, (size_t)n);
    free(list);
    return st;
}

/* One string ref: the target exists, is the caller's, is not frozen. */
static enum store_status check_ref(struct resource_write *w, int row, const char *id)
{
    const struct resource_ref *ref = &w->res->refs[row];
    const struct resource_states *ts = ref->target->states;
    cJSON *target;

    enum store_status st = resource_load(w->c, ref->target, NULL, id, &target);
    if (st == STORE_OK && !visible(ref->target, w->advertiser, target))
        st = STORE_NOT_FOUND;
    if (st == STORE_NOT_FOUND) {
        cJSON_Delete(target);
        return resource_refuse(w, 422, "%s: no such %s", ref->field, ref->target->label);
    }
    if (st != STORE_OK)
        return st;
    w->loaded[row] = target;
    if (ts != NULL && ts->frozen != NULL && same(json_str_member(target, ts->field), ts->frozen))
        return resource_refuse(w, 409, "%s: the %s is %s", ref->field, ref->target->label,
                               ts->frozen);
    if (ref->inherit_owner) {
        const char *owner = json_str_member(target, "advertiser_id");
        if (owner == NULL || !set_member(w->after, "advertiser_id", cJSON_CreateString(owner)))
            return STORE_ERROR;
    }
    return STORE_OK;
}

static enum store_status check_refs(struct resource_write *w)
{
    const struct resource_ref *refs = w->res->refs;

    for (int i = 0; refs != NULL && refs[i].field != NULL && i < MAX_REFS; i++) {
        const cJSON *v = member(w->after, refs[i].field);
        enum store_status st = STORE_OK;
        if (w->before != NULL && !resource_changed(w, refs[i].field))
            continue;
        if (cJSON_IsArray(v))
            st = check_ref_array(w, &refs[i], v);
        else if (cJSON_IsString(v))
            st = check_ref(w, i, v->valuestring);
        if (st != STORE_OK || answered(w))
            return st;
    }
    return STORE_OK;
}

/* The unique value of rec under u ("" when a field is absent: no entry). */
static bool unique_value(const struct resource_unique *u, const cJSON *rec, char v[UNIQUE_MAX])
{
    size_t used = 0;

    v[0] = '\0';
    for (int i = 0; rec != NULL && u->fields[i] != NULL; i++) {
        const char *part = json_str_member(rec, u->fields[i]);
        if (part == NULL && rec != NULL && u->null_as != NULL)
            part = u->null_as;
        if (part == NULL) {
            v[0] = '\0';
            return true;
        }
        int n = snprintf(v + used, UNIQUE_MAX - used, "%s%s", i ? ":" : "", part);
        if (n < 0 || (size_t)n >= UNIQUE_MAX - used)
            return false;
        used += (size_t)n;
    }
    return true;
}

enum store_status resource_find_unique(struct store_conn *c, const struct resource *res,
                                       const char *parent_id, const cJSON *rec, cJSON **out)
{
    char hash[KEY_MAX], value[UNIQUE_MAX], id[UUID_STR_LEN];
    const struct resource_unique *u = res->uniques;

    *out = NULL;
    if (u == NULL || u->hash == NULL || !unique_hash(u, parent_id, hash) ||
        !unique_value(u, rec, value))
        return STORE_ERROR;
    if (value[0] == '\0')
        return STORE_NOT_FOUND;
    enum store_status st = store_get_str(c, id, sizeof id,
                                         (const char *[]){ "HGET", hash, value, NULL });
    return st == STORE_OK ? resource_load(c, res, parent_id, id, out) : st;
}

/* Refuses a value another record holds; moves this record's entries. */
static enum store_status put_uniques(struct resource_write *w, const char *id)
{
    for (const struct resource_unique *u = w->res->uniques; u != NULL && u->hash != NULL; u++) {
        char hash[KEY_MAX], old[UNIQUE_MAX], new[UNIQUE_MAX], owner[UUID_STR_LEN];
        if (!unique_hash(u, w->parent_id, hash) || !unique_value(u, w->before, old) ||
            !unique_value(u, w->after, new))
            return resource_refuse(w, 422, "%s: too long", u->fields[0]);
        if (strcmp(old, new) == 0)
            continue;
        if (new[0] != '\0') {
            enum store_status st = store_get_str(w->c, owner, sizeof owner,
                                                 (const char *[]){ "HGET", hash, new, NULL });
            if (st == STORE_OK && strcmp(owner, id) != 0)
                return resource_refuse(w, 409, "%s", u->detail);
            if (st != STORE_OK && st != STORE_NOT_FOUND)
                return st;
        }
        if (old[0] != '\0')
            txn_cmd(&w->txn, "HDEL", hash, old, NULL);
        if (new[0] != '\0')
            txn_cmd(&w->txn, "HSET", hash, new, id, NULL);
    }
    return STORE_OK;
}

/* The ids rec names at an index's field (one string or an array). */
static bool index_names(const cJSON *rec, const char *field, const char *id)
{
    const cJSON *v = rec != NULL ? member_path(rec, field) : NULL;

    return cJSON_IsArray(v) ? array_has(v, id) : same(cJSON_GetStringValue(v), id);
}

/* SREM / SADD for the ids of from that to does not name. */
static void index_moves(struct txn *t, const struct resource_index *x, const cJSON *from,
                        const cJSON *to, const char *cmd, const char *id)
{
    const cJSON *v = from != NULL ? member_path(from, x->field) : NULL;
    const cJSON *e;
    char key[KEY_MAX];

    if (cJSON_IsString(v)) {
        if (!index_names(to, x->field, v->valuestring)) {
            if (prefixed_key(key, x->prefix, v->valuestring))
                txn_cmd(t, cmd, key, id, NULL);
            else
                t->failed = true;
        }
        return;
    }
    cJSON_ArrayForEach(e, v)
        if (cJSON_IsString(e) && !index_names(to, x->field, e->valuestring)) {
            if (prefixed_key(key, x->prefix, e->valuestring))
                txn_cmd(t, cmd, key, id, NULL);
            else
                t->failed = true;
        }
}

static void add_location(struct resource_write *w, const char *id)
{
    char loc[128];
    const char *tpl = w->res->location, *brace = strchr(tpl, '{');
    int n;

    /* "/api/x/{key_id}/values": the parent's id in place of its {param} */
    if (brace != NULL && w->parent_id != NULL)
        n = snprintf(loc, sizeof loc, "%.*s%s%s/%s", (int)(brace - tpl), tpl, w->parent_id,
                     strchr(brace, '}') ? strchr(brace, '}') + 1 : "", id);
    else
        n = snprintf(loc, sizeof loc, "%s/%s", tpl, id);
    /* A courtesy for clients; the body holds the id anyway. */
    if (n > 0 && (size_t)n < sizeof loc)
        (void)reply_header(w->rep, "Location", loc);
}

static void stage(const struct resource *res, struct txn *t, const struct user *actor,
                  const char *action, const char *parent_id, const cJSON *before,
                  const cJSON *after)
{
    char hash[KEY_MAX];
    const char *id = json_str_member(after ? after : before, "id");
    char *json = after != NULL ? cJSON_PrintUnformatted(after) : NULL;

    if (id == NULL || !hash_key(res, parent_id, hash) || (after != NULL && json == NULL)) {
        cJSON_free(json);
        t->failed = true;
        return;
    }
    for (const struct resource_index *x = res->indexes; x != NULL && x->field != NULL; x++) {
        index_moves(t, x, before, after, "SREM", id);
        index_moves(t, x, after, before, "SADD", id);
    }
    if (after != NULL)
        txn_cmd(t, "HSET", hash, id, json, NULL);
    else
        txn_cmd(t, "HDEL", hash, id, NULL);
    cJSON_free(json);
    txn_audit(t, actor, action, res->name, id, before, after);
}

void resource_stage(const struct resource *res, struct txn *t, const struct user *actor,
                    const char *action, const cJSON *before, const cJSON *after)
{
    /* the revision: once, by txn_exec, for every record the change log names */
    stage(res, t, actor, action, NULL, before, after);
}

/* The record, its indexes, its audit record and the revision, then EXEC. */
static enum store_status commit(struct resource_write *w, const char *action, int status)
{
    const char *id = json_str_member(w->after ? w->after : w->before, "id");

    if (id == NULL)
        return STORE_ERROR;
    stage(w->res, &w->txn, w->req->user, action, w->parent_id, w->before, w->after);
    if (w->res->serving)
        txn_bump_revision(&w->txn);
    w->sent = !w->txn.failed;       /* else txn_exec sends nothing */
    enum store_status st = txn_exec(&w->txn, w->c);
    if (st != STORE_OK)
        return st;
    reply_json(w->rep, status, w->after != NULL ? schema_output(w->res->schema, w->after) : NULL);
    if (status == 201)
        add_location(w, id);
    return STORE_OK;
}

static enum store_status save(struct resource_write *w)
{
    enum store_status st;

    if ((st = check_immutable(w)) != STORE_OK || answered(w) ||
        (st = check_states(w)) != STORE_OK || answered(w) ||
        (st = check_refs(w)) != STORE_OK || answered(w))
        return st;
    if (w->res->check != NULL && ((st = w->res->check(w)) != STORE_OK || answered(w)))
        return st;
    if (!finish_record(w))
        return STORE_ERROR;
    const char *id = json_str_member(w->after, "id");
    if (id == NULL)
        return STORE_ERROR;
    if ((st = put_uniques(w, id)) != STORE_OK || answered(w))
        return st;
    return commit(w, w->before != NULL ? "update" : "create", w->before != NULL ? 200 : 201);
}

/* Refuses a delete the states or the dependents forbid. */
static enum store_status check_delete(struct resource_write *w, const char *id)
{
    const struct resource_states *s = w->res->states;
    const char *state = s != NULL ? json_str_member(w->before, s->field) : NULL;
    char key[KEY_MAX];

    if (s != NULL && s->deletable != NULL && !in_list(s->deletable, state))
        return resource_refuse(w, 409, "%s: only a %s %s can be deleted (this one is %s)",
                               s->field, s->deletable[0], w->res->label, state ? state : "none");
    for (const struct resource_dependent *d = w->res->dependents; d != NULL && d->prefix != NULL;
         d++) {
        redisReply *r;
        if (!prefixed_key(key, d->prefix, id))
            return STORE_ERROR;
        enum store_status st = store_cmd(w->c, &r, (const char *[]){
            d->is_hash ? "HLEN" : "SCARD", key, NULL });
        if (st != STORE_OK)
            return st;
        long long count = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
        freeReplyObject(r);
        if (count < 0)
            return STORE_ERROR;
        if (count > 0)
            return resource_refuse(w, 409, "the %s has %s (%lld): delete them first",
                                   w->res->label, d->what, count);
    }
    return STORE_OK;
}

static enum store_status remove_record(struct resource_write *w, const char *id)
{
    enum store_status st = check_delete(w, id);

    if (st != STORE_OK || answered(w))
        return st;
    for (const struct resource_unique *u = w->res->uniques; u != NULL && u->hash != NULL; u++) {
        char hash[KEY_MAX], v[UNIQUE_MAX];
        if (!unique_hash(u, w->parent_id, hash) || !unique_value(u, w->before, v))
            return STORE_ERROR;
        if (v[0] != '\0')
            txn_cmd(&w->txn, "HDEL", hash, v, NULL);
    }
    return commit(w, "delete", 204);     /* after is NULL: every index entry goes */
}

static enum store_status attempt(struct resource_write *w, const struct write_job *job)
{
    enum store_status st;

    if (job->op != WRITE_CREATE) {
        st = load_visible(w->req, w->rep, w->res, job->parent_id, job->id, &w->before);
        if (st != STORE_OK || answered(w))
            return st;
        /* An advertiser reads its own record but changes none of it. */
        if (w->advertiser != NULL && w->res->owner == OWNER_SELF)
            return resource_refuse(w, 403, "an advertiser's users cannot change its record");
    }
    if (job->op == WRITE_DELETE)
        return remove_record(w, job->id);
    st = job->op == WRITE_CREATE ? new_record(w, job) : merged_record(w);
    if (st != STORE_OK || answered(w))
        return st;
    /* Nothing changes: no write, no audit record, no revision. */
    if (w->before != NULL && cJSON_Compare(w->before, w->after, true)) {
        reply_json(w->rep, 200, schema_output(w->res->schema, w->before));
        return STORE_OK;
    }
    return save(w);
}

static void attempt_free(struct resource_write *w)
{
    /* A refused attempt leaves its WATCH on the pooled connection, where a
     * later request's transaction would see a stale conflict. */
    if (!w->sent)
        (void)store_do(w->c, (const char *[]){ "UNWATCH", NULL });
    txn_free(&w->txn);
    cJSON_Delete(w->before);
    cJSON_Delete(w->after);
    for (int i = 0; i < MAX_REFS; i++)
        cJSON_Delete(w->loaded[i]);
}

/* The sidecar's own demand writers take turns. Each write WATCHes whole
 * hashes (a hash field cannot be watched), so optimistic attempts of
 * concurrent requests would keep aborting one another (measured: about 5%
 * of the items of four concurrent batches ran out of attempts); in turn,
 * they never conflict. WATCH still guards against every other writer. */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;

static void write_attempts(struct request *req, struct reply *rep, const struct write_job *job)
{
    for (int i = 0; i < WRITE_ATTEMPTS; i++) {
        if (i > 0)
            usleep(randombytes_uniform((uint32_t)(BACKOFF_US * i)) + 1);
        struct resource_write w = {
            .res = job->res, .req = req, .rep = rep, .c = request_store(req),
            .advertiser = resource_caller_advertiser(req), .parent_id = job->parent_id,
            .changes = job->changes,
        };
        txn_init(&w.txn);
        enum store_status st = watch(&w, job->id);
        if (st == STORE_OK)
            st = attempt(&w, job);
        attempt_free(&w);
        if (st == STORE_CONFLICT && rep->status == 0)
            continue;
        if (st != STORE_OK)
            reply_store_error(rep, st);
        return;
    }
    reply_error(rep, 409, "concurrent modification of %ss, retry", job->res->label);
}

static void run_write(struct request *req, struct reply *rep, const struct write_job *job)
{
    int rc = pthread_mutex_lock(&write_lock);

    if (rc != 0) {
        log_line("resource: write lock: %s", strerror(rc));
        reply_error(rep, 500, "internal error");
        return;
    }
    write_attempts(req, rep, job);
    rc = pthread_mutex_unlock(&write_lock);
    if (rc != 0)
        log_line("resource: write unlock: %s", strerror(rc));
}

/* The error statuses of the routes, for their route_docs (RESOURCE_DOCS). */
const int resource_list_errors[] = { 401, 403, 422, 503, 0 };
const int resource_create_errors[] = { 400, 401, 403, 409, 415, 422, 503, 0 };
const int resource_get_errors[] = { 401, 404, 503, 0 };
const int resource_update_errors[] = { 400, 401, 403, 404, 409, 415, 422, 503, 0 };
const int resource_delete_errors[] = { 401, 403, 404, 409, 503, 0 };

/* ---- the entry points ------------------------------------------------------------------ */

/* Inventory and advertiser records are made by admins and operators. */
static bool may_create(const struct resource *res, struct request *req, struct reply *rep)
{
    if (resource_caller_advertiser(req) == NULL || res->owner == OWNER_FIELD)
        return true;
    reply_error(rep, 403, "role not allowed");
    return false;
}

void resource_create(const struct resource *res, struct request *req, struct reply *rep,
                     const cJSON *body)
{
    char parent[UUID_STR_LEN];

    if (!may_create(res, req, rep))
        return;
    if (res->parent_param != NULL && !request_uuid_param(req, res->parent_param, parent)) {
        reply_error(rep, 404, "%s not found", res->parent->label);
        return;
    }
    /* The body first: a bad one is a 422 whatever the path names. */
    cJSON *changes = json_apply_schema(res->schema, body, SCHEMA_FULL, rep);
    if (changes == NULL)
        return;
    struct write_job job = { .res = res, .op = WRITE_CREATE, .changes = changes,
                             .parent_id = res->parent_param != NULL ? parent : NULL };
    run_write(req, rep, &job);
    cJSON_Delete(changes);
}

void resource_update(const struct resource *res, struct request *req, struct reply *rep,
                     const char *id, const cJSON *body)
{
    char parent[UUID_STR_LEN];

    if (res->parent_param != NULL && !request_uuid_param(req, res->parent_param, parent)) {
        reply_error(rep, 404, "%s not found", res->parent->label);
        return;
    }
    cJSON *changes = json_apply_schema(res->schema, body, SCHEMA_PARTIAL, rep);
    if (changes == NULL)
        return;
    struct write_job job = { .res = res, .op = WRITE_UPDATE, .changes = changes, .id = id,
                             .parent_id = res->parent_param != NULL ? parent : NULL };
    run_write(req, rep, &job);
    cJSON_Delete(changes);
}

void resource_delete(const struct resource *res, struct request *req, struct reply *rep,
                     const char *id)
{
    char parent[UUID_STR_LEN];

    if (res->parent_param != NULL && !request_uuid_param(req, res->parent_param, parent)) {
        reply_error(rep, 404, "%s not found", res->parent->label);
        return;
    }
    struct write_job job = { .res = res, .op = WRITE_DELETE, .id = id,
                             .parent_id = res->parent_param != NULL ? parent : NULL };
    run_write(req, rep, &job);
}

void resource_delete_route(const struct resource *res, struct request *req, struct reply *rep)
{
    char id[UUID_STR_LEN];

    if (!request_uuid_param(req, "id", id))
        reply_error(rep, 404, "%s not found", res->label);
    else
        resource_delete(res, req, rep, id);
}

/* ---- shared demand rules --------------------------------------------------------------- */

bool demand_size_fits(const cJSON *line_item, const cJSON *creative)
{
    const cJSON *sizes = member_path(line_item, "targeting.sizes"), *s;
    const cJSON *w = member(creative, "w"), *h = member(creative, "h");

    if (cJSON_GetArraySize(sizes) == 0)
        return true;
    cJSON_ArrayForEach(s, sizes) {
        const cJSON *sw = member(s, "w"), *sh = member(s, "h");
        if (cJSON_IsNumber(sw) && cJSON_IsNumber(sh) && cJSON_IsNumber(w) && cJSON_IsNumber(h) &&
            sw->valuedouble == w->valuedouble && sh->valuedouble == h->valuedouble)
            return true;
    }
    return false;
}
