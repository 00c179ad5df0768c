/* The Auth group: login, refresh, forgot / reset password, me; and the
 * API token of the Settings group.  The policies are in auth.h (tokens),
 * ratelimit.h (limits) and mail.h (delivery). */
#include "api.h"

#include "auth.h"
#include "log.h"
#include "mail.h"
#include "prom.h"
#include "ratelimit.h"
#include "schema_auth.h"
#include "settings.h"
#include "txn.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WRITE_ATTEMPTS 3            /* optimistic transactions, then 409 */
#define RESET_SENT_DETAIL "if the account exists, a reset link has been sent"
#define RESET_INVALID_DETAIL "invalid or expired reset token"
#define MAIL_BODY_MAX 2048

static void unauthorized(struct reply *rep, const char *detail)
{
    reply_error(rep, 401, "%s", detail);
    reply_header(rep, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
}

/* The user for a normalized email. */
static enum store_status find_user(struct store_conn *c, const char *email, struct user *u)
{
    char id[UUID_STR_LEN];
    enum store_status st = user_id_by_email(c, email, id);

    memset(u, 0, sizeof *u);
    return st == STORE_OK ? user_load(c, id, u) : st;
}

/* ---- login and refresh ------------------------------------------------------ */

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

/* Answers 200 with an access token for u and the refresh token given. */
static void reply_tokens(struct reply *rep, const struct user *u, const char *refresh)
{
    char *access = access_token_issue(u);

    if (access == NULL) {
        reply_error(rep, 500, "internal error");
        return;
    }
    schema_auth_reply(rep, 200, &schema_token_pair, token_body(access, refresh));
    free(access);
}

/* The account a login names, for its rate limit: the normalized address,
 * or, for one that cannot be valid, the lower-cased text. */
static void account_subject(const char *email, char out[EMAIL_MAX + 1])
{
    if (email_normalize(email, out) == 0)
        return;
    size_t i = 0;
    for (; email[i] != '\0' && i < EMAIL_MAX; i++)
        out[i] = (char)tolower((unsigned char)email[i]);
    out[i] = '\0';
}

/* The client, as the limits count it: its IPv4 address, or its IPv6 /64
 * (what one subscriber gets: counting single IPv6 addresses would give
 * one guesser 2^64 of them). */
static void client_of(const struct request *req, char client[CLIENT_ADDR_LEN])
{
    struct in6_addr a;
    size_t n;

    if (request_client(req, client) != 0) {
        snprintf(client, CLIENT_ADDR_LEN, "unknown");
        return;
    }
    if (strchr(client, ':') == NULL || inet_pton(AF_INET6, client, &a) != 1)
        return;
    memset(a.s6_addr + 8, 0, 8);
    if (inet_ntop(AF_INET6, &a, client, CLIENT_ADDR_LEN) != NULL &&
        (n = strlen(client)) + 3 < CLIENT_ADDR_LEN)
        memcpy(client + n, "/64", 4);
}

/* The subject of an account and a client together: the account, a line
 * feed (in no address), the client. */
static void pair_subject(const char *account, const char *client,
                         char out[EMAIL_MAX + 1 + CLIENT_ADDR_LEN])
{
    snprintf(out, EMAIL_MAX + 1 + CLIENT_ADDR_LEN, "%s\n%s", account, client);
}

/* 429 (the client's limit) or 503 (the server's): retry after wait s */
static void too_many(struct reply *rep, int status, long wait, const char *what)
{
    char value[24];

    snprintf(value, sizeof value, "%ld", wait);
    reply_error(rep, status, "too many %s, retry in %ld s", what, wait);
    reply_header(rep, MHD_HTTP_HEADER_RETRY_AFTER, value);
}

/* 0 when this client may try to sign in to this account now; else a 429
 * (or the store error) is in rep. The client's attempts are counted here,
 * failed or not. Failures shut out the pair (this account from this
 * client) and the client (whatever the account); an account with many
 * failures from everywhere is under attack, and then a client that failed
 * on it even once waits for its window, while one that has not (the owner,
 * elsewhere) still signs in. */
static int login_allowed(struct store_conn *c, const char *account, const char *client,
                         const char *pair, struct reply *rep)
{
    long wait = 0, attacked = 0;
    bool over;
    enum store_status st = ratelimit_check(c, &limit_login_attempts, client, &wait);

    if (st == STORE_OK && wait == 0)
        st = ratelimit_hit(c, &limit_login_attempts, client, &over);
    if (st == STORE_OK && wait > 0) {
        too_many(rep, 429, wait, "sign-ins from this client");
        return -1;
    }
    if (st == STORE_OK)
        st = ratelimit_check(c, &limit_login_account, account, &attacked);
    if (st == STORE_OK)
        st = ratelimit_check(c, attacked ? &limit_login_pair_attacked : &limit_login_pair, pair,
                             &wait);
    if (st == STORE_OK && wait == 0)
        st = ratelimit_check(c, &limit_login_client, client, &wait);
    if (st != STORE_OK) {
        reply_store_error(rep, st);
        return -1;
    }
    if (wait == 0)
        return 0;
    too_many(rep, 429, wait, "failed logins");
    return -1;
}

static void login_failed(struct store_conn *c, const char *account, const char *client,
                         const char *pair, struct reply *rep)
{
    bool over;
    enum store_status st = ratelimit_hit(c, &limit_login_pair, pair, &over);

    if (st == STORE_OK)
        st = ratelimit_hit(c, &limit_login_client, client, &over);
    if (st == STORE_OK)
        st = ratelimit_hit(c, &limit_login_account, account, &over);
    if (st != STORE_OK) {
        reply_store_error(rep, st);
        return;
    }
    prom_auth_failure(PROM_AUTH_CREDENTIALS);
    unauthorized(rep, "invalid credentials");
}

static void login(struct request *req, struct reply *rep, const cJSON *in)
{
    const char *email = json_str_member(in, "email"), *password = json_str_member(in, "password");
    char account[EMAIL_MAX + 1], client[CLIENT_ADDR_LEN], pair[EMAIL_MAX + 1 + CLIENT_ADDR_LEN];
    struct store_conn *c = request_store(req);
    struct user u;

    account_subject(email, account);
    client_of(req, client);
    pair_subject(account, client, pair);
    if (login_allowed(c, account, client, pair, rep) != 0) {
        if (rep->status == 429)
            prom_auth_failure(PROM_AUTH_THROTTLED);
        return;
    }
    enum store_status st = find_user(c, account, &u);
    if (st != STORE_OK && st != STORE_NOT_FOUND) {
        reply_store_error(rep, st);
        return;
    }
    /* Unknown accounts cost the same argon2 verification as known ones. */
    enum password_check ok = password_verify(st == STORE_OK ? u.password_hash : NULL, password);
    sodium_memzero(u.password_hash, sizeof u.password_hash);
    if (ok == PASSWORD_BUSY) {
        too_many(rep, 503, 1, "sign-ins at once");
        return;
    }
    if (ok != PASSWORD_OK) {
        login_failed(c, account, client, pair, rep);
        return;
    }
    /* Success clears this pair's failures (not the client's, nor the
     * account's: those are others' too). */
    char refresh[REFRESH_TOKEN_LEN];
    st = ratelimit_clear(c, &limit_login_pair, pair);
    if (st == STORE_OK)
        st = refresh_token_issue(c, &u, refresh);
    if (st != STORE_OK) {
        reply_store_error(rep, st);
        return;
    }
    reply_tokens(rep, &u, refresh);
    sodium_memzero(refresh, sizeof refresh);
}

static void api_auth_login(struct request *req, struct reply *rep)
{
    cJSON *in = json_apply_schema(&schema_login_request, req->json, SCHEMA_FULL, rep);

    if (in != NULL)
        login(req, rep, in);
    json_wipe_member(in, "password");
    json_wipe_member(req->json, "password");
    cJSON_Delete(in);
}

static void api_auth_refresh(struct request *req, struct reply *rep)
{
    cJSON *in = json_apply_schema(&schema_refresh_request, req->json, SCHEMA_FULL, rep);
    char refresh[REFRESH_TOKEN_LEN];
    struct user u;

    if (in == NULL)
        return;
    enum refresh_result r = refresh_token_rotate(request_store(req),
                                                 json_str_member(in, "refresh_token"), &u, refresh);
    json_wipe_member(in, "refresh_token");
    json_wipe_member(req->json, "refresh_token");
    cJSON_Delete(in);
    sodium_memzero(u.password_hash, sizeof u.password_hash);
    switch (r) {
    case REFRESH_OK:
        reply_tokens(rep, &u, refresh);
        sodium_memzero(refresh, sizeof refresh);
        break;
    case REFRESH_INVALID:
    case REFRESH_REUSED:
        prom_auth_failure(PROM_AUTH_TOKEN);
        unauthorized(rep, "invalid refresh token");
        break;
    case REFRESH_UNAVAILABLE:
        reply_store_error(rep, STORE_UNAVAILABLE);
        break;
    default:
        reply_error(rep, 500, "internal error");
        break;
    }
}

/* Sign-out: the refresh token's login ends server-side (its whole family,
 * auth.h).  As RFC 7009's revocation, an unknown, used-up or expired token
 * answers the same 204: the caller's aim, a token that no longer works, is
 * met either way, and the answer tells a guesser nothing.  The access
 * token the client holds stays valid until it expires (expires_in): it is
 * a signed claim, not a stored session, and the client forgets it. */
static void api_auth_logout(struct request *req, struct reply *rep)
{
    cJSON *in = json_apply_schema(&schema_refresh_request, req->json, SCHEMA_FULL, rep);
    char user_id[UUID_STR_LEN];

    if (in == NULL)
        return;
    enum refresh_result r = refresh_token_revoke(request_store(req),
                                                 json_str_member(in, "refresh_token"), user_id);
    json_wipe_member(in, "refresh_token");
    json_wipe_member(req->json, "refresh_token");
    cJSON_Delete(in);
    switch (r) {
    case REFRESH_OK:
        log_line("user %s signed out: that login's refresh tokens are revoked", user_id);
        reply_json(rep, 204, NULL);
        break;
    case REFRESH_INVALID:
    case REFRESH_REUSED:
        reply_json(rep, 204, NULL);
        break;
    case REFRESH_UNAVAILABLE:
        reply_store_error(rep, STORE_UNAVAILABLE);
        break;
    default:
        reply_error(rep, 500, "internal error");
        break;
    }
}

/* ---- forgot / reset password -------------------------------------------------- */

/* The spec's validation error of forgot-password (reply_validation_list);
 * type is "missing" for an absent field, else "value_error". */
static void reply_validation(struct reply *rep, const cJSON *in, const char *path,
                             const char *msg)
{
    char first[256];
    size_t top = strcspn(path, ".[");

    snprintf(first, sizeof first, "%.*s", (int)(top < sizeof first ? top : sizeof first - 1),
             path);
    const char *type = first[0] != '\0' && cJSON_GetObjectItemCaseSensitive(in, first) == NULL
                           ? "missing" : "value_error";
    reply_validation_list(rep, path, msg, type);
}

/* Counts the request against both limits; *over when either is used up. */
static enum store_status reset_limits(struct store_conn *c, const char *email,
                                      const char *client, bool *over)
{
    bool by_address = false, by_client = false;
    enum store_status st = ratelimit_hit(c, &limit_reset_address, email, &by_address);

    if (st == STORE_OK)
        st = ratelimit_hit(c, &limit_reset_client, client, &by_client);
    *over = by_address || by_client;
    return st;
}

/* Issues a reset token for u and queues the mail with its link; for an
 * address with no account (u NULL), the same work with a token never
 * stored, to a decoy the mail thread drops: the answer's time must not
 * tell the two apart. */
static enum store_status send_reset(struct store_conn *c, const struct user *u,
                                    const char *email)
{
    char token[RESET_TOKEN_LEN], body[MAIL_BODY_MAX], what[96];
    const char *to = u != NULL ? u->email : email;
    enum store_status st = u != NULL ? reset_token_issue(c, u, token) : reset_token_dummy(c, token);

    if (st != STORE_OK)
        return st;
    char base[ADSERVE_PUBLIC_URL_MAX + 1];
    if (settings_public_url(c, base, sizeof base) != STORE_OK)
        snprintf(base, sizeof base, "%s", mail_public_url());
    long ttl = auth_reset_ttl();
    int n = snprintf(body, sizeof body,
                     "Hello,\r\n\r\n"
                     "someone (hopefully you) asked to reset the password of the adserve\r\n"
                     "account %s. To choose a new password, open this link:\r\n\r\n"
                     "%s" ADSERVE_CONSOLE_RESET_PATH "%s\r\n\r\n"
                     "The link works once and expires in %ld minutes. If you did not ask\r\n"
                     "for it, ignore this mail: your password stays as it is.\r\n",
                     to, base, token, ttl / 60 > 0 ? ttl / 60 : 1);
    sodium_memzero(token, sizeof token);
    /* a decoy's what is never logged */
    snprintf(what, sizeof what, "password reset mail for user %s", u != NULL ? u->id : "");
    if (n > 0 && (size_t)n < sizeof body)
        (void)mail_queue(to, "Reset your adserve password", body, what, u != NULL);  /* logs */
    else if (u != NULL)
        log_line("%s not sent: the message does not fit", what);
    sodium_memzero(body, sizeof body);
    return STORE_OK;    /* a mail problem never changes the answer */
}

static void forgot_password(struct request *req, struct reply *rep, const cJSON *in)
{
    char email[EMAIL_MAX + 1], client[CLIENT_ADDR_LEN];
    struct store_conn *c = request_store(req);
    struct user u;
    bool over;

    /* The schema's email format and email_normalize may differ at the edges. */
    if (email_normalize(json_str_member(in, "email"), email) != 0) {
        reply_validation(rep, in, "email", "value is not a valid email address");
        return;
    }
    client_of(req, client);
    /* The same work whether the account exists or not, limited or not. */
    enum store_status st = reset_limits(c, email, client, &over);
    if (st == STORE_OK)
        st = find_user(c, email, &u);
    bool exists = st == STORE_OK;
    if (st == STORE_NOT_FOUND)
        st = user_load(c, "00000000-0000-0000-0000-000000000000", &u) == STORE_UNAVAILABLE
                 ? STORE_UNAVAILABLE : STORE_OK;
    sodium_memzero(u.password_hash, sizeof u.password_hash);
    if (st == STORE_OK && over) {
        long long count;
        redisReply *r;
        st = store_cmd(c, &r, (const char *[]){ "INCR", ADSERVE_KEY_RESET_SUPPRESSED, NULL });
        count = st == STORE_OK && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
        if (st == STORE_OK)
            freeReplyObject(r);
        log_line("password reset mail suppressed by its rate limit (%lld so far)", count);
    } else if (st == STORE_OK) {
        st = send_reset(c, exists ? &u : NULL, email);
    }
    if (st != STORE_OK) {
        reply_store_error(rep, st);
        return;
    }
    cJSON *body = cJSON_CreateObject();
    if (body != NULL && cJSON_AddStringToObject(body, "detail", RESET_SENT_DETAIL) == NULL) {
        cJSON_Delete(body);
        body = NULL;
    }
    schema_auth_reply(rep, 200, &schema_message, body);
}

static void api_auth_forgot_password(struct request *req, struct reply *rep)
{
    struct schema_error err = { { 0 }, { 0 } };
    cJSON *in = schema_apply(&schema_forgot_request, req->json, SCHEMA_FULL, &err);

    if (in == NULL) {
        if (err.msg[0] == '\0')
            reply_error(rep, 500, "internal error");
        else
            reply_validation(rep, req->json, err.path, err.msg);
        return;
    }
    forgot_password(req, rep, in);
    cJSON_Delete(in);
}

/* Sets u's new password, checking again under WATCH that the token's
 * session is still current.  STORE_NOT_FOUND when it is not. */
static enum store_status store_new_password(struct store_conn *c, const char *user_id,
                                            long long gen, const char *hash,
                                            struct user *old, struct user *u)
{
    char key[USER_KEY_MAX];
    enum store_status st = STORE_CONFLICT;

    if (user_key(key, user_id) != 0)
        return STORE_NOT_FOUND;
    for (int i = 0; i < WRITE_ATTEMPTS && st == STORE_CONFLICT; i++) {
        st = store_do(c, (const char *[]){ "WATCH", key, NULL });
        if (st == STORE_OK)
            st = user_load(c, user_id, old);
        if (st != STORE_OK)
            return st;
        if (user_counter(old->session_gen) != gen)
            return STORE_NOT_FOUND;
        *u = *old;
        cJSON *before = user_to_json(old), *after = NULL;
        struct txn t;
        txn_init(&t);
        if (before == NULL || user_set_password(u, hash) != 0 || (after = user_to_json(u)) == NULL)
            t.failed = true;
        user_txn_write(&t, u, old);
        /* The actor is the account itself, proven by the mailed token. */
        txn_audit(&t, old, "reset_password", ADSERVE_RECORD_USER, u->id, before, after);
        st = txn_exec(&t, c);
        txn_free(&t);
        cJSON_Delete(before);
        cJSON_Delete(after);
    }
    return st;
}

static void reset_password(struct request *req, struct reply *rep, const cJSON *in)
{
    char user_id[UUID_STR_LEN], hash[crypto_pwhash_STRBYTES];
    struct store_conn *c = request_store(req);
    struct user old, u;
    long long gen;

    /* The token is used up first: a wrong one costs no argon2 work. */
    enum store_status st = reset_token_consume(c, json_str_member(in, "token"), user_id, &gen);
    if (st == STORE_OK && password_hash(json_str_member(in, "password"), hash) != 0) {
        reply_error(rep, 500, "internal error");
        return;
    }
    if (st == STORE_OK)
        st = store_new_password(c, user_id, gen, hash, &old, &u);
    sodium_memzero(hash, sizeof hash);
    sodium_memzero(&old, sizeof old);
    if (st == STORE_NOT_FOUND) {
        reply_error(rep, 400, RESET_INVALID_DETAIL);
        return;
    }
    if (st == STORE_OK)
        st = ratelimit_clear(c, &limit_login_account, u.email);
    sodium_memzero(&u, sizeof u);
    if (st != STORE_OK) {
        reply_store_error(rep, st);
        return;
    }
    log_line("password reset for user %s: its tokens are revoked", user_id);
    cJSON *body = cJSON_CreateObject();
    if (body != NULL && cJSON_AddStringToObject(body, "detail", "password has been reset") == NULL) {
        cJSON_Delete(body);
        body = NULL;
    }
    schema_auth_reply(rep, 200, &schema_message, body);
}

static void api_auth_reset_password(struct request *req, struct reply *rep)
{
    cJSON *in = json_apply_schema(&schema_reset_request, req->json, SCHEMA_FULL, rep);

    if (in != NULL)
        reset_password(req, rep, in);
    json_wipe_member(in, "password");
    json_wipe_member(req->json, "password");
    json_wipe_member(in, "token");
    json_wipe_member(req->json, "token");
    cJSON_Delete(in);
}

/* ---- me and the API token --------------------------------------------------------- */

static void api_auth_me(struct request *req, struct reply *rep)
{
    schema_auth_reply(rep, 200, &schema_user, user_to_json(req->user));
}

/* nginx's auth_request for operator tools served by the module (the
 * decision explainer, /api/explain/): the router has already checked the
 * token and the role, so reaching here is the yes. */
static void api_auth_check_operator(struct request *req, struct reply *rep)
{
    (void) req;
    reply_json(rep, 204, NULL);
}

/* Bumps the caller's api_token_ver, which revokes earlier API tokens. */
static enum store_status bump_api_version(struct store_conn *c, const struct user *actor,
                                          struct user *u)
{
    char key[USER_KEY_MAX];
    struct user old;
    enum store_status st = STORE_CONFLICT;

    if (user_key(key, actor->id) != 0)
        return STORE_ERROR;
    for (int i = 0; i < WRITE_ATTEMPTS && st == STORE_CONFLICT; i++) {
        st = store_do(c, (const char *[]){ "WATCH", key, NULL });
        if (st == STORE_OK)
            st = user_load(c, actor->id, &old);
        if (st != STORE_OK)
            break;
        *u = old;
        user_counter_bump(u->api_token_ver);
        cJSON *view = user_to_json(u);
        struct txn t;
        txn_init(&t);
        t.failed = view == NULL;
        user_txn_write(&t, u, &old);
        /* before and after read alike: the version is no public field. */
        txn_audit(&t, actor, "api_token", ADSERVE_RECORD_USER, u->id, view, view);
        st = txn_exec(&t, c);
        txn_free(&t);
        cJSON_Delete(view);
    }
    sodium_memzero(&old, sizeof old);
    sodium_memzero(u->password_hash, sizeof u->password_hash);
    return st;
}

static void api_settings_api_token(struct request *req, struct reply *rep)
{
    struct user u;
    time_t exp;
    char at[RFC3339_LEN];

    enum store_status st = bump_api_version(request_store(req), req->user, &u);
    if (st == STORE_NOT_FOUND) {
        unauthorized(rep, auth_result_detail(AUTH_UNKNOWN_USER));
        return;
    }
    if (st != STORE_OK) {
        reply_store_error(rep, st);
        return;
    }
    char *token = api_token_issue(&u, &exp);
    cJSON *body = cJSON_CreateObject();
    if (token == NULL || body == NULL || rfc3339_format(exp, at) != 0 ||
        cJSON_AddStringToObject(body, "api_token", token) == NULL ||
        cJSON_AddStringToObject(body, "token_type", "bearer") == NULL ||
        cJSON_AddStringToObject(body, "expires_at", at) == NULL) {
        cJSON_Delete(body);
        body = NULL;
    }
    free(token);
    log_line("API token issued for user %s: earlier ones are revoked", u.id);
    schema_auth_reply(rep, 200, &schema_api_token, body);
}

/* ---- routes ---------------------------------------------------------------------- */

static const int login_errors[] = { 400, 401, 415, 422, 429, 503, 0 };
static const int refresh_errors[] = { 400, 401, 415, 422, 503, 0 };
static const int logout_errors[] = { 400, 415, 422, 503, 0 };
static const int forgot_errors[] = { 400, 415, 422, 503, 0 };
static const int reset_errors[] = { 400, 415, 422, 503, 0 };
static const int me_errors[] = { 401, 503, 0 };

static const struct route_doc login_doc = {
    .tag = "Auth", .summary = "Log in with e-mail and password",
    .request = &schema_login_request, .response = &schema_token_pair, .status = 200,
    .errors = login_errors,
};
static const struct route_doc refresh_doc = {
    .tag = "Auth", .summary = "Exchange a refresh token for a new token pair (single-use)",
    .request = &schema_refresh_request, .response = &schema_token_pair, .status = 200,
    .errors = refresh_errors,
};
static const struct route_doc logout_doc = {
    .tag = "Auth",
    .summary = "Sign out: revoke a refresh token and every token rotated from the same login "
               "(204 also for an unknown or used-up token)",
    .request = &schema_refresh_request, .status = 204, .errors = logout_errors,
};
static const struct route_doc forgot_doc = {
    .tag = "Auth", .summary = "Mail a password-reset link (answers alike for unknown accounts)",
    .request = &schema_forgot_request, .response = &schema_message, .status = 200,
    .errors = forgot_errors,
};
static const struct route_doc reset_doc = {
    .tag = "Auth", .summary = "Set a new password with a mailed reset token",
    .request = &schema_reset_request, .response = &schema_message, .status = 200,
    .errors = reset_errors,
};
static const struct route_doc me_doc = {
    .tag = "Auth", .summary = "The caller's user",
    .response = &schema_user, .status = 200, .errors = me_errors,
};
static const int check_errors[] = { 401, 403, 503, 0 };
static const struct route_doc check_operator_doc = {
    .tag = "Auth", .summary = "204 when the token may use operator tools (admin, operator)",
    .status = 204, .errors = check_errors,
};
static const struct route_doc api_token_doc = {
    .tag = "Settings", .summary = "Issue a long-lived API token; earlier ones stop working",
    .response = &schema_api_token, .status = 200, .errors = me_errors,
};

const struct route auth_routes[] = {
    { "POST", "/api/auth/login", api_auth_login, 0, BODY_JSON, &login_doc },
    { "POST", "/api/auth/refresh", api_auth_refresh, 0, BODY_JSON, &refresh_doc },
    { "POST", "/api/auth/logout", api_auth_logout, 0, BODY_JSON, &logout_doc },
    { "POST", "/api/auth/forgot-password", api_auth_forgot_password, 0,
      BODY_JSON_SPEC_VALIDATION, &forgot_doc },
    { "POST", "/api/auth/reset-password", api_auth_reset_password, 0, BODY_JSON, &reset_doc },
    { "GET", "/api/auth/me", api_auth_me, ROLES_ANY, BODY_NONE, &me_doc },
    { "GET", "/api/auth/check/operator", api_auth_check_operator, ROLE_ADMIN | ROLE_OPERATOR,
      BODY_NONE, &check_operator_doc },
    { "POST", "/api/settings/api-token", api_settings_api_token, ROLES_ANY, BODY_NONE,
      &api_token_doc },
};
const size_t auth_routes_count = sizeof auth_routes / sizeof auth_routes[0];
