/* The Users group (admin only): /api/users and /api/users/{id}.
 *
 * Rules beyond the shape (schema_user):
 *   - advertiser_id is required for the advertiser role and only allowed
 *     for it (a role change away from advertiser drops it); its advertiser
 *     cannot be checked yet (advertisers come with a later issue);
 *   - emails are unique, case-insensitively (409);
 *   - the last admin can be neither demoted nor deleted (409);
 *   - a password change revokes the user's tokens (auth.h);
 *   - every write appends one audit record (resource "user"), without the
 *     password or its hash. */
#include "api.h"
#include "resource.h"

#include "auth.h"
#include "schema_auth.h"
#include "txn.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WRITE_ATTEMPTS 3
#define LIST_LIMIT_DEFAULT 50
#define LIST_LIMIT_MAX 500

/* The output view of one user; NULL on OOM. */
static cJSON *user_view(const struct user *u)
{
    cJSON *stored = user_to_json(u);
    cJSON *out = stored != NULL ? schema_output(&schema_user, stored) : NULL;

    cJSON_Delete(stored);
    return out;
}

static void reply_user(struct reply *rep, int status, const struct user *u)
{
    reply_json(rep, status, user_view(u));
}

/* ---- GET /api/users --------------------------------------------------------------- */

struct list_filter {
    const char *role;       /* NULL: any */
    char q[EMAIL_MAX + 1];  /* lower-cased; "" matches all */
};

/* The checked query (schema_users_list_query) into a filter. */
static void read_filter(const cJSON *query, struct list_filter *f)
{
    const char *q = json_str_member(query, "q");
    size_t i = 0;

    f->role = json_str_member(query, "role");
    for (; q != NULL && q[i] != '\0' && i < EMAIL_MAX; i++)
        f->q[i] = (char)tolower((unsigned char)q[i]);
    f->q[i] = '\0';
}

static bool matches(const struct user *u, const struct list_filter *f)
{
    return (f->role == NULL || strcmp(u->role, f->role) == 0) && strstr(u->email, f->q) != NULL;
}

static void api_users_list(struct request *req, struct reply *rep)
{
    struct list_filter f;
    struct user *all;
    size_t n;
    cJSON *query = request_query_object(req, rep, &schema_users_list_query);

    if (query == NULL)
        return;
    long limit = (long)cJSON_GetObjectItemCaseSensitive(query, "limit")->valuedouble;
    long offset = (long)cJSON_GetObjectItemCaseSensitive(query, "offset")->valuedouble;
    read_filter(query, &f);
    enum store_status st = users_load_all(request_store(req), &all, &n);
    if (st != STORE_OK) {
        cJSON_Delete(query);
        reply_store_error(rep, st);
        return;
    }
    cJSON *body = cJSON_CreateObject();
    cJSON *items = body != NULL ? cJSON_AddArrayToObject(body, "items") : NULL;
    bool ok = items != NULL;
    long total = 0;
    for (size_t i = 0; ok && i < n; i++) {
        if (!matches(&all[i], &f))
            continue;
        if (total >= offset && total - offset < limit) {
            cJSON *v = user_view(&all[i]);
            ok = v != NULL && cJSON_AddItemToArray(items, v);
            if (!ok)
                cJSON_Delete(v);
        }
        total++;
    }
    free(all);
    cJSON_Delete(query);                /* f.role pointed into it */
    if (!ok || cJSON_AddNumberToObject(body, "total", (double)total) == NULL) {
        cJSON_Delete(body);
        body = NULL;
    }
    reply_json(rep, 200, body);
}

/* ---- shared checks of POST and PATCH -------------------------------------------------- */

/* advertiser_id belongs to the advertiser role, which needs one.  given is
 * the request's member (NULL when absent).  0, or -1 with a 422. */
static int advertiser_rule(struct user *u, const cJSON *given, struct reply *rep)
{
    bool advertiser = strcmp(u->role, "advertiser") == 0;

    if (!advertiser) {
        if (given != NULL && !cJSON_IsNull(given)) {
            reply_error(rep, 422, "advertiser_id: only for the advertiser role");
            return -1;
        }
        u->advertiser_id[0] = '\0';
        return 0;
    }
    if (u->advertiser_id[0] == '\0') {
        reply_error(rep, 422, "advertiser_id: required for the advertiser role");
        return -1;
    }
    return 0;
}

/* An advertiser user must belong to an advertiser that exists: 0, or -1
 * with the answer in rep. (Not under WATCH: an advertiser deleted in the
 * same instant leaves a user who sees nothing, not one who sees more.) */
static int advertiser_exists(struct store_conn *c, const struct user *u, struct reply *rep)
{
    return u->advertiser_id[0] == '\0' ? 0 : resource_advertiser_exists(c, u->advertiser_id, rep);
}

/* Copies the request's email (normalized), role and advertiser_id into u. */
static int apply_fields(struct user *u, const cJSON *in, struct reply *rep)
{
    const char *email = json_str_member(in, "email"), *role = json_str_member(in, "role");
    const cJSON *adv = cJSON_GetObjectItemCaseSensitive(in, "advertiser_id");

    if (email != NULL && email_normalize(email, u->email) != 0) {
        reply_error(rep, 422, "email: not a valid e-mail address");
        return -1;
    }
    if (role != NULL && copy_str(u->role, sizeof u->role, role) != 0) {
        reply_error(rep, 422, "role: must be one of admin, operator, advertiser");
        return -1;
    }
    if (adv != NULL) {
        const char *id = cJSON_IsString(adv) ? adv->valuestring : "";
        /* lower-case, as the ids this service makes */
        size_t i = 0;
        for (; id[i] != '\0' && i + 1 < sizeof u->advertiser_id; i++)
            u->advertiser_id[i] = (char)tolower((unsigned char)id[i]);
        u->advertiser_id[i] = '\0';
    }
    return advertiser_rule(u, adv, rep);
}

/* STORE_OK when email is free (or already u's own), STORE_CONFLICT (409)
 * when another user has it.  Call after WATCH adserve:user_by_email. */
static enum store_status email_free(struct store_conn *c, const char *email, const char *self)
{
    char id[UUID_STR_LEN];
    enum store_status st = user_id_by_email(c, email, id);

    if (st == STORE_NOT_FOUND)
        return STORE_OK;
    if (st != STORE_OK)
        return st;
    return self != NULL && strcmp(id, self) == 0 ? STORE_OK : STORE_CONFLICT;
}

/* ---- POST /api/users ------------------------------------------------------------------- */

static enum store_status insert_new(struct store_conn *c, const struct user *u,
                                    const struct user *actor, struct reply *rep)
{
    enum store_status st = STORE_CONFLICT;

    for (int i = 0; i < WRITE_ATTEMPTS && st == STORE_CONFLICT; i++) {
        st = store_do(c, (const char *[]){ "WATCH", ADSERVE_KEY_USER_BY_EMAIL, NULL });
        if (st == STORE_OK)
            st = email_free(c, u->email, NULL);
        if (st == STORE_CONFLICT) {
            reply_error(rep, 409, "a user with this email already exists");
            return st;
        }
        if (st == STORE_OK)
            st = user_insert(c, u, actor);
    }
    if (st != STORE_OK)
        reply_store_error(rep, st);
    return st;
}

static void create_user(struct request *req, struct reply *rep, const cJSON *in)
{
    struct user u;

    memset(&u, 0, sizeof u);
    if (apply_fields(&u, in, rep) != 0 || advertiser_exists(request_store(req), &u, rep) != 0)
        return;
    uuid_v4(u.id);
    if (copy_str(u.created_by, sizeof u.created_by, req->user->id) != 0 ||
        now_rfc3339(u.created_at) != 0 ||
        password_hash(json_str_member(in, "password"), u.password_hash) != 0) {
        reply_error(rep, 500, "internal error");
        return;
    }
    memcpy(u.updated_at, u.created_at, sizeof u.created_at);
    if (insert_new(request_store(req), &u, req->user, rep) == STORE_OK)
        reply_user(rep, 201, &u);
    sodium_memzero(&u, sizeof u);
}

static void api_users_create(struct request *req, struct reply *rep)
{
    cJSON *in = json_apply_schema(&schema_user, req->json, SCHEMA_FULL, rep);

    if (in != NULL)
        create_user(req, rep, in);
    json_wipe_member(in, "password");
    json_wipe_member(req->json, "password");
    cJSON_Delete(in);
}

/* ---- GET /api/users/{id} ------------------------------------------------------------- */

/* The {id} of the path into id, or NULL with a 404 for one that cannot exist. */
static const char *path_id(const struct request *req, struct reply *rep, char id[UUID_STR_LEN])
{
    if (!request_uuid_param(req, "id", id)) {
        reply_error(rep, 404, "user not found");
        return NULL;
    }
    return id;
}

static void api_users_get(struct request *req, struct reply *rep)
{
    char idbuf[UUID_STR_LEN];
    const char *id = path_id(req, rep, idbuf);
    struct user u;

    if (id == NULL)
        return;
    enum store_status st = user_load(request_store(req), id, &u);
    sodium_memzero(u.password_hash, sizeof u.password_hash);
    if (st == STORE_NOT_FOUND)
        reply_error(rep, 404, "user not found");
    else if (st != STORE_OK)
        reply_store_error(rep, st);
    else
        reply_user(rep, 200, &u);
}

/* ---- PATCH /api/users/{id} -------------------------------------------------------------- */

/* STORE_OK when removing old's admin role leaves an admin; else 409 in rep.
 * Leaves every user key WATCHed, so a concurrent demotion aborts us. */
static enum store_status keeps_an_admin(struct store_conn *c, const struct user *old,
                                        const char *what, struct reply *rep)
{
    size_t admins;

    if (strcmp(old->role, "admin") != 0)
        return STORE_OK;
    enum store_status st = users_watch_admins(c, &admins);
    if (st == STORE_OK && admins <= 1) {
        reply_error(rep, 409, "cannot %s the last admin", what);
        return STORE_CONFLICT;
    }
    if (st != STORE_OK)
        reply_store_error(rep, st);
    return st;
}

/* An account manager stays a user who may manage demand (an admin or an
 * operator) until its advertisers have another (api_advertisers.c):
 * STORE_OK, or the 409 in rep. new_role NULL: a delete. */
static enum store_status keeps_its_advertisers(struct store_conn *c, const struct user *old,
                                               const char *new_role, struct reply *rep)
{
    char key[USER_KEY_MAX];
    redisReply *r = NULL;

    if (new_role != NULL && (role_from_name(new_role) & INVENTORY_ROLES) != 0)
        return STORE_OK;
    int n = snprintf(key, sizeof key, "%s%s", ADSERVE_KEY_MANAGER_ADVERTISERS, old->id);
    enum store_status st = n > 0 && (size_t)n < sizeof key
                               ? store_do(c, (const char *[]){ "WATCH", key, NULL })
                               : STORE_ERROR;
    if (st == STORE_OK)
        st = store_cmd(c, &r, (const char *[]){ "SCARD", key, NULL });
    if (st == STORE_OK && r->type == REDIS_REPLY_INTEGER && r->integer > 0) {
        reply_error(rep, 409, "this user manages %lld advertisers: give them another manager first",
                    r->integer);
        st = STORE_CONFLICT;
    }
    freeReplyObject(r);
    if (st != STORE_OK && st != STORE_CONFLICT)
        reply_store_error(rep, st);
    return st;
}

static bool same_user(const struct user *a, const struct user *b)
{
    return strcmp(a->email, b->email) == 0 && strcmp(a->role, b->role) == 0 &&
           strcmp(a->advertiser_id, b->advertiser_id) == 0;
}

/* WATCHes the user's record and loads it, for a write that depends on it:
 * STORE_OK, or the status with the answer (404, 503, ...) in rep. */
static enum store_status load_watched(struct store_conn *c, const char *id, struct user *u,
                                      struct reply *rep)
{
    char key[USER_KEY_MAX];
    enum store_status st = user_key(key, id) == 0 ? STORE_OK : STORE_ERROR;

    memset(u, 0, sizeof *u);
    if (st == STORE_OK)
        st = store_do(c, (const char *[]){ "WATCH", key, NULL });
    if (st == STORE_OK)
        st = user_load(c, id, u);
    if (st == STORE_NOT_FOUND)
        reply_error(rep, 404, "user not found");
    else if (st != STORE_OK)
        reply_store_error(rep, st);
    return st;
}

/* One optimistic attempt.  STORE_CONFLICT with rep unset: retry. */
static enum store_status try_update(struct store_conn *c, const struct request *req,
                                    const char *id, const cJSON *in, const char *hash,
                                    struct user *old, struct user *u, struct reply *rep)
{
    enum store_status st = load_watched(c, id, old, rep);

    if (st != STORE_OK)
        return st;
    *u = *old;
    if (apply_fields(u, in, rep) != 0 || advertiser_exists(c, u, rep) != 0)
        return STORE_ERROR;
    if (hash == NULL && same_user(u, old))
        return STORE_OK;                    /* nothing to write */
    if (strcmp(u->email, old->email) != 0 &&
        ((st = store_do(c, (const char *[]){ "WATCH", ADSERVE_KEY_USER_BY_EMAIL, NULL })) !=
             STORE_OK ||
         (st = email_free(c, u->email, id)) != STORE_OK)) {
        if (st == STORE_CONFLICT)
            reply_error(rep, 409, "a user with this email already exists");
        else
            reply_store_error(rep, st);
        return STORE_ERROR;
    }
    if (strcmp(u->role, "admin") != 0 && keeps_an_admin(c, old, "demote", rep) != STORE_OK)
        return STORE_ERROR;
    if (keeps_its_advertisers(c, old, u->role, rep) != STORE_OK)
        return STORE_ERROR;
    if ((hash != NULL ? user_set_password(u, hash) : now_rfc3339(u->updated_at)) != 0) {
        reply_error(rep, 500, "internal error");
        return STORE_ERROR;
    }
    cJSON *before = user_to_json(old), *after = user_to_json(u);
    struct txn t;
    txn_init(&t);
    t.failed = before == NULL || after == NULL;
    user_txn_write(&t, u, old);
    txn_audit(&t, req->user, "update", ADSERVE_RECORD_USER, id, before, after);
    st = txn_exec(&t, c);
    txn_free(&t);
    cJSON_Delete(before);
    cJSON_Delete(after);
    if (st != STORE_OK && st != STORE_CONFLICT)
        reply_store_error(rep, st);
    return st;
}

static void update_user(struct request *req, struct reply *rep, const char *id, const cJSON *in)
{
    char hash[crypto_pwhash_STRBYTES];
    const char *password = json_str_member(in, "password");
    struct user old, u;

    /* argon2 before the WATCH: it takes a while. */
    if (password != NULL && password_hash(password, hash) != 0) {
        reply_error(rep, 500, "internal error");
        return;
    }
    enum store_status st = STORE_CONFLICT;
    for (int i = 0; i < WRITE_ATTEMPTS && st == STORE_CONFLICT && rep->status == 0; i++)
        st = try_update(request_store(req), req, id, in, password != NULL ? hash : NULL,
                        &old, &u, rep);
    sodium_memzero(hash, sizeof hash);
    if (st == STORE_CONFLICT && rep->status == 0)
        reply_store_error(rep, st);
    if (st == STORE_OK)
        reply_user(rep, 200, &u);
    sodium_memzero(&old, sizeof old);
    sodium_memzero(&u, sizeof u);
}

static void api_users_update(struct request *req, struct reply *rep)
{
    char idbuf[UUID_STR_LEN];
    const char *id = path_id(req, rep, idbuf);
    cJSON *in = id != NULL ? json_apply_schema(&schema_user, req->json, SCHEMA_PARTIAL, rep)
                           : NULL;

    if (in != NULL)
        update_user(req, rep, id, in);
    json_wipe_member(in, "password");
    json_wipe_member(req->json, "password");
    cJSON_Delete(in);
}

/* ---- DELETE /api/users/{id} ------------------------------------------------------------- */

static enum store_status try_delete(struct store_conn *c, const struct request *req,
                                    const char *id, struct reply *rep)
{
    struct user old;
    enum store_status st = load_watched(c, id, &old, rep);

    sodium_memzero(old.password_hash, sizeof old.password_hash);
    if (st != STORE_OK)
        return st;
    if (keeps_an_admin(c, &old, "delete", rep) != STORE_OK)
        return STORE_ERROR;
    if (keeps_its_advertisers(c, &old, NULL, rep) != STORE_OK)
        return STORE_ERROR;
    cJSON *before = user_to_json(&old);
    struct txn t;
    txn_init(&t);
    t.failed = before == NULL;
    user_txn_delete(&t, &old);
    txn_audit(&t, req->user, "delete", ADSERVE_RECORD_USER, id, before, NULL);
    st = txn_exec(&t, c);
    txn_free(&t);
    cJSON_Delete(before);
    if (st != STORE_OK && st != STORE_CONFLICT)
        reply_store_error(rep, st);
    return st;
}

static void api_users_delete(struct request *req, struct reply *rep)
{
    char idbuf[UUID_STR_LEN];
    const char *id = path_id(req, rep, idbuf);
    enum store_status st = STORE_CONFLICT;

    for (int i = 0; id != NULL && i < WRITE_ATTEMPTS && st == STORE_CONFLICT && rep->status == 0;
         i++)
        st = try_delete(request_store(req), req, id, rep);
    if (id != NULL && st == STORE_CONFLICT && rep->status == 0)
        reply_store_error(rep, st);
    if (st == STORE_OK)
        reply_json(rep, 204, NULL);
}

/* ---- routes ---------------------------------------------------------------------------- */

static const int list_errors[] = { 401, 403, 422, 503, 0 };
static const int create_errors[] = { 400, 401, 403, 409, 415, 422, 503, 0 };
static const int get_errors[] = { 401, 403, 404, 503, 0 };
static const int update_errors[] = { 400, 401, 403, 404, 409, 415, 422, 503, 0 };
static const int delete_errors[] = { 401, 403, 404, 409, 503, 0 };

static const struct route_doc list_doc = {
    .tag = "Users", .summary = "List users (filters: role, q = e-mail substring)",
    .response = &schema_user, .status = 200, .list = true, .query = &schema_users_list_query,
    .errors = list_errors,
};
static const struct route_doc create_doc = {
    .tag = "Users", .summary = "Create a user",
    .request = &schema_user, .response = &schema_user, .status = 201, .errors = create_errors,
};
static const struct route_doc get_doc = {
    .tag = "Users", .summary = "Get a user",
    .response = &schema_user, .status = 200, .errors = get_errors,
};
static const struct route_doc update_doc = {
    .tag = "Users", .summary = "Update a user (email, password, role, advertiser_id)",
    .request = &schema_user, .response = &schema_user, .status = 200, .errors = update_errors,
};
static const struct route_doc delete_doc = {
    .tag = "Users", .summary = "Delete a user; their tokens stop working at once",
    .status = 204, .errors = delete_errors,
};

const struct route users_routes[] = {
    { "GET", "/api/users", api_users_list, ROLE_ADMIN, BODY_NONE, &list_doc },
    { "POST", "/api/users", api_users_create, ROLE_ADMIN, BODY_JSON, &create_doc },
    { "GET", "/api/users/{id}", api_users_get, ROLE_ADMIN, BODY_NONE, &get_doc },
    { "PATCH", "/api/users/{id}", api_users_update, ROLE_ADMIN, BODY_JSON, &update_doc },
    { "DELETE", "/api/users/{id}", api_users_delete, ROLE_ADMIN, BODY_NONE, &delete_doc },
};
const size_t users_routes_count = sizeof users_routes / sizeof users_routes[0];
