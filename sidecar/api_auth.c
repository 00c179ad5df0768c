/* POST /api/auth/login, GET /api/auth/me. */
#include "api.h"

#include "auth.h"

#include <stdlib.h>

static const char *const login_fields[] = { "email", "password", NULL };

/* The user for a login email; an address that cannot be valid is simply
 * an unknown account. */
static enum store_status find_user(struct store_conn *c, const char *email, struct user *u)
{
    char normalized[EMAIL_MAX + 1], id[UUID_STR_LEN];

    if (email_normalize(email, normalized) != 0)
        return STORE_NOT_FOUND;
    enum store_status st = user_id_by_email(c, normalized, id);
    return st == STORE_OK ? user_load(c, id, u) : st;
}

static cJSON *token_body(const char *access, const char *refresh)
{
    cJSON *o = cJSON_CreateObject();

    if (o == NULL || cJSON_AddStringToObject(o, "access_token", access) == NULL ||
        cJSON_AddStringToObject(o, "refresh_token", refresh) == NULL ||
        cJSON_AddStringToObject(o, "token_type", "bearer") == NULL ||
        cJSON_AddNumberToObject(o, "expires_in", (double)auth_access_ttl()) == NULL) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Answers 200 with a fresh access + refresh token pair for u. */
static void issue_tokens(struct request *req, struct reply *rep, const struct user *u)
{
    char refresh[REFRESH_TOKEN_LEN];
    enum store_status st = refresh_token_issue(request_store(req), u->id, refresh);

    if (st != STORE_OK) {
        reply_store_error(rep, st);
        return;
    }
    char *access = access_token_issue(u);
    if (access == NULL) {
        reply_error(rep, 500, "internal error");
        return;
    }
    reply_json(rep, 200, token_body(access, refresh));
    free(access);
}

static void api_auth_login(struct request *req, struct reply *rep)
{
    const char *email = json_require_string(req->json, "email", rep);
    const char *password = email ? json_require_string(req->json, "password", rep) : NULL;
    struct user u;

    if (password == NULL || json_reject_unknown(req->json, login_fields, rep) != 0)
        return;
    enum store_status st = find_user(request_store(req), email, &u);
    if (st != STORE_OK && st != STORE_NOT_FOUND) {
        reply_store_error(rep, st);
        return;
    }
    /* Unknown accounts cost the same argon2 verification as known ones. */
    bool ok = password_verify(st == STORE_OK ? u.password_hash : NULL, password);
    sodium_memzero(u.password_hash, sizeof u.password_hash);
    if (!ok) {
        reply_error(rep, 401, "invalid credentials");
        reply_header(rep, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
        return;
    }
    issue_tokens(req, rep, &u);
}

static void api_auth_me(struct request *req, struct reply *rep)
{
    reply_json(rep, 200, user_to_json(req->user));
}

const struct route auth_routes[] = {
    { "POST", "/api/auth/login", api_auth_login, 0, BODY_JSON, NULL },
    { "GET", "/api/auth/me", api_auth_me, ROLES_ANY, BODY_NONE, NULL },
};
const size_t auth_routes_count = sizeof auth_routes / sizeof auth_routes[0];
