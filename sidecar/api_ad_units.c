/* /api/ad-units: the ad unit hierarchy (API.md), storage in ad_units.h.
 *
 * Admins and operators manage ad units. Advertisers cannot read raw
 * inventory: the collection answers them 403 (the route's roles), and
 * every /{id} route 404, so they cannot even learn which ids exist. */
#include "api.h"

#include "ad_units.h"
#include "schemas.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A move rewrites every descendant (a HSET and an audit record each) in
 * one transaction, which txn.h bounds. */
#define MOVE_MAX_DESCENDANTS ((TXN_MAX_CMDS - 16) / 2)

static bool hidden_from(const struct request *req, struct reply *rep)
{
    if ((role_from_name(req->user->role) & INVENTORY_ROLES) != 0)
        return false;
    reply_error(rep, 404, "ad unit not found");
    return true;
}

/* ---- GET /api/ad-units ------------------------------------------------------ */

static bool contains(const char *haystack, const char *needle)
{
    return haystack != NULL && strcasestr(haystack, needle) != NULL;
}

static bool matches(const cJSON *unit, const cJSON *query)
{
    const char *status = ad_unit_str(query, "status"), *parent = ad_unit_str(query, "parent_id");
    const char *q = ad_unit_str(query, "q"), *v;

    if (status != NULL && ((v = ad_unit_str(unit, "status")) == NULL || strcmp(v, status) != 0))
        return false;
    if (parent != NULL && ((v = ad_unit_str(unit, "parent_id")) == NULL || strcmp(v, parent) != 0))
        return false;
    return q == NULL || contains(ad_unit_str(unit, "name"), q) ||
           contains(ad_unit_str(unit, "code"), q);
}


/* The matching ad units of an HGETALL reply, parsed into all (every
 * record, for freeing) and picked (the matches, sorted). */
static void collect(const redisReply *r, const cJSON *query, cJSON **all, cJSON **picked,
                    size_t *n_picked)
{
    size_t n = 0;

    for (size_t i = 1; i < r->elements; i += 2) {
        const redisReply *v = r->element[i];
        cJSON *unit = v->type == REDIS_REPLY_STRING ? cJSON_ParseWithLength(v->str, v->len) : NULL;
        if (!cJSON_IsObject(unit)) {
            /* A record written around the API; listing goes on without it. */
            cJSON_Delete(unit);
            continue;
        }
        all[i / 2] = unit;
        if (matches(unit, query))
            picked[n++] = unit;
    }
    qsort(picked, n, sizeof *picked, json_by_creation);
    *n_picked = n;
}

static void api_ad_units_list(struct request *req, struct reply *rep)
{
    cJSON *query = request_query_object(req, rep, &schema_ad_unit_list_query);
    redisReply *r;

    if (query == NULL)
        return;
    enum store_status st = store_cmd(request_store(req), &r,
                                     (const char *[]){ "HGETALL", ADSERVE_KEY_AD_UNITS, NULL });
    if (st != STORE_OK || r->type != REDIS_REPLY_ARRAY) {
        reply_store_error(rep, st != STORE_OK ? st : STORE_ERROR);
        if (st == STORE_OK)
            freeReplyObject(r);
        cJSON_Delete(query);
        return;
    }
    size_t count = r->elements / 2, n = 0;
    cJSON **all = calloc(count + 1, sizeof *all), **picked = calloc(count + 1, sizeof *picked);
    if (all != NULL && picked != NULL) {
        collect(r, query, all, picked, &n);
        reply_json(rep, 200, json_page(&schema_ad_unit, picked, n, query));
    } else {
        reply_error(rep, 500, "internal error");
    }
    for (size_t i = 0; all != NULL && i < count; i++)
        cJSON_Delete(all[i]);
    free(all);
    free(picked);
    freeReplyObject(r);
    cJSON_Delete(query);
}

/* ---- POST /api/ad-units ------------------------------------------------------ */

/* The id owning code, "" when none. */
static enum store_status code_owner(struct store_conn *c, const char *code, char id[UUID_STR_LEN])
{
    enum store_status st = store_get_str(c, id, UUID_STR_LEN,
                                         (const char *[]){ "HGET", ADSERVE_KEY_AD_UNIT_CODES, code, NULL });
    if (st == STORE_NOT_FOUND) {
        id[0] = '\0';
        return STORE_OK;
    }
    return st;
}

/* path of a unit under parent (NULL: a root). */
static cJSON *path_under(const cJSON *parent, const char *id)
{
    char *path;

    if (parent == NULL)
        return cJSON_CreateString(id);
    /* A record written around the API (tests, scripts/gen-inventory) may
     * have no path: it then counts as a root, rather than failing. */
    const char *pp = ad_unit_str(parent, "path");
    if (pp == NULL)
        pp = ad_unit_str(parent, "id");
    if (pp == NULL || asprintf(&path, "%s/%s", pp, id) < 0)
        return NULL;
    cJSON *s = cJSON_CreateString(path);
    free(path);
    return s;
}

/* Sets unit's path to its place under parent; false on OOM. */
static bool set_path(cJSON *unit, const cJSON *parent, const char *id)
{
    cJSON *path = path_under(parent, id);

    cJSON_DeleteItemFromObjectCaseSensitive(unit, "path");
    if (path == NULL || !cJSON_AddItemToObject(unit, "path", path)) {
        cJSON_Delete(path);
        return false;
    }
    return true;
}

/* Loads the parent named by parent_id; 422 when it does not exist. On
 * STORE_OK with *parent NULL and rep unset, the unit is a root. */
static enum store_status load_parent(struct request *req, struct reply *rep,
                                     const char *parent_id, cJSON **parent)
{
    *parent = NULL;
    if (parent_id == NULL)
        return STORE_OK;
    enum store_status st = ad_unit_load(request_store(req), parent_id, parent);
    if (st == STORE_NOT_FOUND) {
        reply_error(rep, 422, "parent_id: no such ad unit");
        return STORE_OK;
    }
    return st;
}

/* The server's fields of a new unit. */
static bool stamp_new(cJSON *unit, const struct request *req, const cJSON *parent)
{
    char id[UUID_STR_LEN];

    uuid_v4(id);
    return set_path(unit, parent, id) && cJSON_AddStringToObject(unit, "id", id) != NULL &&
           cJSON_AddStringToObject(unit, "created_by", req->user->id) != NULL;
}

static void txn_link_child(struct txn *t, const char *cmd, const char *parent_id, const char *id)
{
    char key[AD_UNIT_CHILDREN_KEY_LEN];

    if (parent_id == NULL)
        return;
    ad_unit_children_key(key, parent_id);
    txn_cmd(t, cmd, key, id, NULL);
}

static enum store_status insert(struct request *req, struct reply *rep, const cJSON *unit)
{
    const char *id = ad_unit_str(unit, "id");
    struct txn t;

    txn_init(&t);
    ad_unit_txn_put(&t, req->user, "create", NULL, unit);
    txn_cmd(&t, "HSET", ADSERVE_KEY_AD_UNIT_CODES, ad_unit_str(unit, "code"), id, NULL);
    txn_link_child(&t, "SADD", ad_unit_str(unit, "parent_id"), id);
    txn_bump_revision(&t);
    enum store_status st = txn_exec(&t, request_store(req));
    txn_free(&t);
    if (st == STORE_OK) {
        char location[128];
        snprintf(location, sizeof location, "/api/ad-units/%s", id);
        reply_json(rep, 201, cJSON_Duplicate(unit, 1));
        /* A courtesy for clients; the body holds the id anyway. */
        (void)reply_header(rep, "Location", location);
    }
    return st;
}

static enum store_status create_attempt(struct request *req, struct reply *rep, void *arg)
{
    const cJSON *input = arg;
    char owner[UUID_STR_LEN];
    cJSON *parent;

    enum store_status st = code_owner(request_store(req), ad_unit_str(input, "code"), owner);
    if (st != STORE_OK)
        return st;
    if (owner[0] != '\0') {
        reply_error(rep, 409, "code: already used by another ad unit");
        return STORE_OK;
    }
    st = load_parent(req, rep, ad_unit_str(input, "parent_id"), &parent);
    if (st != STORE_OK || rep->status != 0)
        return st;
    cJSON *unit = cJSON_Duplicate(input, 1);
    if (unit == NULL || !stamp_new(unit, req, parent) || (unit = ad_unit_finish(unit)) == NULL) {
        cJSON_Delete(unit);
        cJSON_Delete(parent);
        return STORE_ERROR;
    }
    if (!ad_unit_fits(unit, rep)) {
        cJSON_Delete(unit);
        cJSON_Delete(parent);
        return STORE_OK;
    }
    st = insert(req, rep, unit);
    cJSON_Delete(unit);
    cJSON_Delete(parent);
    return st;
}

static void api_ad_units_create(struct request *req, struct reply *rep)
{
    struct schema_error err;
    cJSON *input = schema_apply(&schema_ad_unit, req->json, SCHEMA_FULL, &err);

    if (input == NULL) {
        reply_invalid(rep, &err);
        return;
    }
    ad_unit_write(req, rep, create_attempt, input);
    cJSON_Delete(input);
}

/* ---- GET /api/ad-units/{id} ------------------------------------------------------ */

static void api_ad_units_get(struct request *req, struct reply *rep)
{
    char id[UUID_STR_LEN];
    cJSON *unit;

    if (hidden_from(req, rep) || (unit = ad_unit_of_path(req, rep, "id", id)) == NULL)
        return;
    reply_json(rep, 200, schema_output(&schema_ad_unit, unit));
    cJSON_Delete(unit);
}

/* ---- PATCH /api/ad-units/{id} ------------------------------------------------------ */

struct patch {
    char id[UUID_STR_LEN];
    const cJSON *changes;        /* the normalised PATCH body */
    cJSON *before, *after;       /* of this attempt */
    struct txn txn;
};

static bool same_string(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The code index: refuse a code another unit owns, move this unit's. */
static enum store_status patch_code(struct request *req, struct reply *rep, struct patch *p)
{
    const char *old = ad_unit_str(p->before, "code"), *new = ad_unit_str(p->after, "code");
    char owner[UUID_STR_LEN];

    if (same_string(old, new))
        return STORE_OK;
    enum store_status st = code_owner(request_store(req), new, owner);
    if (st != STORE_OK)
        return st;
    if (owner[0] != '\0' && strcmp(owner, p->id) != 0) {
        reply_error(rep, 409, "code: already used by another ad unit");
        return STORE_OK;
    }
    if (old != NULL)
        txn_cmd(&p->txn, "HDEL", ADSERVE_KEY_AD_UNIT_CODES, old, NULL);
    txn_cmd(&p->txn, "HSET", ADSERVE_KEY_AD_UNIT_CODES, new, p->id, NULL);
    return STORE_OK;
}

/* Whether path has id as one of its '/'-separated segments. */
static bool path_has(const char *path, const char *id)
{
    size_t n = strlen(id);

    for (const char *s = path; s != NULL; s = strchr(s, '/') ? strchr(s, '/') + 1 : NULL)
        if (strncmp(s, id, n) == 0 && (s[n] == '/' || s[n] == '\0'))
            return true;
    return false;
}

/* The members of id's children set, as a reply the caller frees. */
static enum store_status children_of(struct store_conn *c, const char *id, redisReply **r)
{
    char key[AD_UNIT_CHILDREN_KEY_LEN];

    ad_unit_children_key(key, id);
    enum store_status st = store_cmd(c, r, (const char *[]){ "SMEMBERS", key, NULL });
    if (st == STORE_OK && (*r)->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(*r);
        *r = NULL;
        return STORE_ERROR;
    }
    return st;
}

static enum store_status rewrite_subtree(struct request *req, struct reply *rep, struct patch *p,
                                         const cJSON *unit, size_t *count);

/* One child of a moved unit: its path follows its parent's new path. */
static enum store_status rewrite_child(struct request *req, struct reply *rep, struct patch *p,
                                       const cJSON *parent, const char *id, size_t *count)
{
    cJSON *before, *after;
    enum store_status st = ad_unit_load(request_store(req), id, &before);

    if (st == STORE_NOT_FOUND)      /* a stale index entry: nothing to move */
        return STORE_OK;
    if (st != STORE_OK)
        return st;
    if (++*count > MOVE_MAX_DESCENDANTS) {
        reply_error(rep, 409, "cannot move more than %d descendants at once",
                    MOVE_MAX_DESCENDANTS);
        cJSON_Delete(before);
        return STORE_OK;
    }
    after = cJSON_Duplicate(before, 1);
    if (after != NULL && !set_path(after, parent, id)) {
        cJSON_Delete(after);
        after = NULL;
    }
    if (after == NULL || (after = ad_unit_finish(after)) == NULL) {
        cJSON_Delete(before);
        return STORE_ERROR;
    }
    ad_unit_txn_put(&p->txn, req->user, "move", before, after);
    st = rewrite_subtree(req, rep, p, after, count);
    cJSON_Delete(before);
    cJSON_Delete(after);
    return st;
}

/* Every descendant of unit (whose path is already the new one). */
static enum store_status rewrite_subtree(struct request *req, struct reply *rep, struct patch *p,
                                         const cJSON *unit, size_t *count)
{
    const char *id = ad_unit_str(unit, "id");
    redisReply *r = NULL;
    enum store_status st = id != NULL ? children_of(request_store(req), id, &r) : STORE_ERROR;

    for (size_t i = 0; st == STORE_OK && rep->status == 0 && i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_STRING)
            st = rewrite_child(req, rep, p, unit, r->element[i]->str, count);
    if (r != NULL)
        freeReplyObject(r);
    return st;
}

/* A new parent_id: checks the move and writes the new paths and links. */
static enum store_status patch_parent(struct request *req, struct reply *rep, struct patch *p)
{
    const char *old = ad_unit_str(p->before, "parent_id"), *new = ad_unit_str(p->after, "parent_id");
    cJSON *parent;
    size_t count = 0;

    if (same_string(old, new))
        return STORE_OK;
    if (new != NULL && strcmp(new, p->id) == 0) {
        reply_error(rep, 409, "parent_id: an ad unit cannot be its own parent");
        return STORE_OK;
    }
    enum store_status st = load_parent(req, rep, new, &parent);
    if (st != STORE_OK || rep->status != 0)
        return st;
    const char *parent_path = parent != NULL ? ad_unit_str(parent, "path") : NULL;
    if (parent_path != NULL && path_has(parent_path, p->id)) {
        reply_error(rep, 409, "parent_id: cannot move an ad unit under its own descendant");
        cJSON_Delete(parent);
        return STORE_OK;
    }
    bool ok = set_path(p->after, parent, p->id);
    cJSON_Delete(parent);
    if (!ok)
        return STORE_ERROR;
    txn_link_child(&p->txn, "SREM", old, p->id);
    txn_link_child(&p->txn, "SADD", new, p->id);
    return rewrite_subtree(req, rep, p, p->after, &count);
}

/* before with every changed member replaced. */
static cJSON *merged(const cJSON *before, const cJSON *changes)
{
    cJSON *after = cJSON_Duplicate(before, 1);

    for (const cJSON *c = changes->child; after != NULL && c != NULL; c = c->next) {
        cJSON *v = cJSON_Duplicate(c, 1);
        cJSON_DeleteItemFromObjectCaseSensitive(after, c->string);
        if (v == NULL || !cJSON_AddItemToObject(after, c->string, v)) {
            cJSON_Delete(v);
            cJSON_Delete(after);
            return NULL;
        }
    }
    return after;
}

static enum store_status patch_write(struct request *req, struct reply *rep, struct patch *p)
{
    cJSON *unit = ad_unit_finish(p->after);

    p->after = unit;
    if (unit == NULL)
        return STORE_ERROR;
    if (!ad_unit_fits(unit, rep))
        return STORE_OK;
    ad_unit_txn_put(&p->txn, req->user, "update", p->before, unit);
    txn_bump_revision(&p->txn);
    enum store_status st = txn_exec(&p->txn, request_store(req));
    if (st == STORE_OK)
        reply_json(rep, 200, cJSON_Duplicate(unit, 1));
    return st;
}

/* The descendants' rewrites go first in the txn; the unit's own HSET last. */
static enum store_status patch_steps(struct request *req, struct reply *rep, struct patch *p)
{
    enum store_status st = ad_unit_load(request_store(req), p->id, &p->before);

    if (st == STORE_NOT_FOUND) {
        reply_error(rep, 404, "ad unit not found");
        return STORE_OK;
    }
    if (st != STORE_OK)
        return st;
    if ((p->after = merged(p->before, p->changes)) == NULL)
        return STORE_ERROR;
    /* Nothing changes: no write, no audit record, no revision. */
    if (cJSON_Compare(p->before, p->after, true)) {
        reply_json(rep, 200, schema_output(&schema_ad_unit, p->before));
        return STORE_OK;
    }
    if ((st = patch_code(req, rep, p)) != STORE_OK || rep->status != 0)
        return st;
    if ((st = patch_parent(req, rep, p)) != STORE_OK || rep->status != 0)
        return st;
    return patch_write(req, rep, p);
}

static enum store_status patch_attempt(struct request *req, struct reply *rep, void *arg)
{
    struct patch *p = arg;

    txn_init(&p->txn);
    enum store_status st = patch_steps(req, rep, p);
    txn_free(&p->txn);
    cJSON_Delete(p->before);
    cJSON_Delete(p->after);
    p->before = p->after = NULL;
    return st;
}

static void api_ad_units_patch(struct request *req, struct reply *rep)
{
    struct patch p = { .changes = NULL };
    struct schema_error err;

    if (hidden_from(req, rep) || !ad_unit_path_id(req, rep, "id", p.id))
        return;
    cJSON *changes = schema_apply(&schema_ad_unit, req->json, SCHEMA_PARTIAL, &err);
    if (changes == NULL) {
        reply_invalid(rep, &err);
        return;
    }
    p.changes = changes;
    ad_unit_write(req, rep, patch_attempt, &p);
    cJSON_Delete(changes);
}

/* ---- DELETE /api/ad-units/{id} ------------------------------------------------------ */

static enum store_status remove_unit(struct request *req, struct reply *rep, const char *id,
                                     const cJSON *unit)
{
    char key[AD_UNIT_CHILDREN_KEY_LEN];
    struct txn t;

    ad_unit_children_key(key, id);
    txn_init(&t);
    txn_cmd(&t, "HDEL", ADSERVE_KEY_AD_UNITS, id, NULL);
    if (ad_unit_str(unit, "code") != NULL)
        txn_cmd(&t, "HDEL", ADSERVE_KEY_AD_UNIT_CODES, ad_unit_str(unit, "code"), NULL);
    txn_link_child(&t, "SREM", ad_unit_str(unit, "parent_id"), id);
    txn_cmd(&t, "DEL", key, NULL);
    txn_audit(&t, req->user, "delete", ADSERVE_RECORD_AD_UNIT, id, unit, NULL);
    txn_bump_revision(&t);
    enum store_status st = txn_exec(&t, request_store(req));
    txn_free(&t);
    if (st == STORE_OK)
        reply_json(rep, 204, NULL);
    return st;
}

static enum store_status delete_attempt(struct request *req, struct reply *rep, void *arg)
{
    const char *id = arg;
    cJSON *unit;
    redisReply *children;

    enum store_status st = ad_unit_load(request_store(req), id, &unit);
    if (st == STORE_NOT_FOUND) {
        reply_error(rep, 404, "ad unit not found");
        return STORE_OK;
    }
    if (st != STORE_OK)
        return st;
    if ((st = children_of(request_store(req), id, &children)) == STORE_OK) {
        if (children->elements > 0)
            reply_error(rep, 409, "the ad unit has %zu children: move or delete them first",
                        children->elements);
        else
            st = remove_unit(req, rep, id, unit);
        freeReplyObject(children);
    }
    cJSON_Delete(unit);
    return st;
}

static void api_ad_units_delete(struct request *req, struct reply *rep)
{
    char id[UUID_STR_LEN];

    if (hidden_from(req, rep) || !ad_unit_path_id(req, rep, "id", id))
        return;
    ad_unit_write(req, rep, delete_attempt, id);
}

/* ---- routes -------------------------------------------------------------------------- */

static const int list_errors[] = { 401, 403, 422, 503, 0 };
static const int create_errors[] = { 400, 401, 403, 409, 415, 422, 503, 0 };
static const int get_errors[] = { 401, 404, 503, 0 };
static const int patch_errors[] = { 400, 401, 404, 409, 415, 422, 503, 0 };
static const int delete_errors[] = { 401, 404, 409, 503, 0 };

static const struct route_doc list_doc = {
    .tag = "AdUnit", .response = &schema_ad_unit, .status = 200, .list = true,
    .query = &schema_ad_unit_list_query, .errors = list_errors,
    .summary = "List ad units, oldest first; filters: status, parent_id (direct children), "
               "q (a substring of the name or code, case-insensitive)",
};
static const struct route_doc create_doc = {
    .tag = "AdUnit", .request = &schema_ad_unit, .response = &schema_ad_unit, .status = 201,
    .errors = create_errors,
    .summary = "Create an ad unit (code unique: 409; unknown parent_id: 422); its path is the "
               "parent's path, a slash and its id",
};
static const struct route_doc get_doc = {
    .tag = "AdUnit", .response = &schema_ad_unit, .status = 200, .errors = get_errors,
    .summary = "Get an ad unit (advertisers: 404)",
};
static const struct route_doc patch_doc = {
    .tag = "AdUnit", .request = &schema_ad_unit_patch, .response = &schema_ad_unit,
    .status = 200, .errors = patch_errors,
    .summary = "Update an ad unit partially; a new parent_id moves it with its subtree (under "
               "itself or a descendant: 409; unknown parent: 422) (advertisers: 404)",
};
static const struct route_doc delete_doc = {
    .tag = "AdUnit", .status = 204, .errors = delete_errors,
    .summary = "Delete an ad unit (409 while it has children) (advertisers: 404)",
};

const struct route ad_units_routes[] = {
    { "GET", "/api/ad-units", api_ad_units_list, INVENTORY_ROLES, BODY_NONE, &list_doc },
    { "POST", "/api/ad-units", api_ad_units_create, INVENTORY_ROLES, BODY_JSON, &create_doc },
    { "GET", "/api/ad-units/{id}", api_ad_units_get, ROLES_ANY, BODY_NONE, &get_doc },
    { "PATCH", "/api/ad-units/{id}", api_ad_units_patch, ROLES_ANY, BODY_JSON, &patch_doc },
    { "DELETE", "/api/ad-units/{id}", api_ad_units_delete, ROLES_ANY, BODY_NONE, &delete_doc },
};
const size_t ad_units_routes_count = sizeof ad_units_routes / sizeof ad_units_routes[0];
