#include "auth.h"

#include "log.h"
#include "util.h"

#include <cJSON.h>
#include <errno.h>
#include <jwt.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Each argon2id computation holds MEMLIMIT_INTERACTIVE (64 MiB); at most
 * this many run at once, whatever the number of HTTP threads. */
#define HASH_CONCURRENCY 2
#define TOKEN_MAX 4096
#define KEY_MAX 128
#define FAMILY_LEN 33               /* 16 random bytes, hex */
#define RESET_TTL_MIN 60L
#define RESET_TTL_MAX (7L * 24 * 3600)

static struct {
    unsigned char *key;
    size_t key_len;
    long access_ttl;
    long reset_ttl;
    sem_t hashing;
    bool sem_ready;
    char dummy_hash[crypto_pwhash_STRBYTES];
} auth;

/* ADSERVE_RESET_TTL: seconds, or the default when unset. */
static int read_reset_ttl(void)
{
    const char *v = getenv("ADSERVE_RESET_TTL");
    char *end;

    auth.reset_ttl = RESET_TTL_DEFAULT;
    if (v == NULL || v[0] == '\0')
        return 0;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < RESET_TTL_MIN || n > RESET_TTL_MAX) {
        log_line("ADSERVE_RESET_TTL must be a whole number from %ld to %ld", RESET_TTL_MIN,
                 RESET_TTL_MAX);
        return -1;
    }
    auth.reset_ttl = n;
    return 0;
}

int auth_init(const char *secret, size_t secret_len, long access_ttl)
{
    char dummy_password[33];

    if (read_reset_ttl() != 0)
        return -1;
    auth.key = malloc(secret_len);
    if (auth.key == NULL)
        return -1;
    memcpy(auth.key, secret, secret_len);
    auth.key_len = secret_len;
    auth.access_ttl = access_ttl;
    if (sem_init(&auth.hashing, 0, HASH_CONCURRENCY) != 0)
        return -1;
    auth.sem_ready = true;
    if (random_hex(dummy_password, sizeof dummy_password, 16) != 0)
        return -1;
    return password_hash(dummy_password, auth.dummy_hash);
}

void auth_shutdown(void)
{
    if (auth.key != NULL) {
        sodium_memzero(auth.key, auth.key_len);
        free(auth.key);
        auth.key = NULL;
    }
    if (auth.sem_ready)
        sem_destroy(&auth.hashing);
    auth.sem_ready = false;
}

long auth_access_ttl(void)
{
    return auth.access_ttl;
}

long auth_reset_ttl(void)
{
    return auth.reset_ttl;
}

static void hashing_enter(void)
{
    while (sem_wait(&auth.hashing) != 0 && errno == EINTR)
        ;
}

static void hashing_leave(void)
{
    sem_post(&auth.hashing);
}

int password_hash(const char *password, char out[crypto_pwhash_STRBYTES])
{
    hashing_enter();
    int rc = crypto_pwhash_str(out, password, strlen(password),
                               crypto_pwhash_OPSLIMIT_INTERACTIVE,
                               crypto_pwhash_MEMLIMIT_INTERACTIVE);
    hashing_leave();
    return rc == 0 ? 0 : -1;
}

enum password_check password_verify(const char *hash, const char *password)
{
    const char *h = hash != NULL && hash[0] != '\0' ? hash : auth.dummy_hash;

    if (sem_trywait(&auth.hashing) != 0)
        return PASSWORD_BUSY;
    int rc = crypto_pwhash_str_verify(h, password, strlen(password));
    hashing_leave();
    return h != auth.dummy_hash && rc == 0 ? PASSWORD_OK : PASSWORD_WRONG;
}

/* The claims both JWT kinds share; the caller adds the kind's own. */
static int add_claims(jwt_t *jwt, const struct user *u, const char *typ, long ttl, time_t *exp)
{
    char jti[33];
    time_t now = time(NULL);

    if (now == (time_t)-1 || random_hex(jti, sizeof jti, 16) != 0)
        return -1;
    *exp = now + ttl;
    if (jwt_add_grant(jwt, "sub", u->id) != 0 || jwt_add_grant(jwt, "role", u->role) != 0 ||
        jwt_add_grant_int(jwt, "iat", (long)now) != 0 ||
        jwt_add_grant_int(jwt, "exp", (long)*exp) != 0 ||
        jwt_add_grant(jwt, "jti", jti) != 0 || jwt_add_grant(jwt, "typ", typ) != 0)
        return -1;
    if (u->advertiser_id[0] != '\0' && jwt_add_grant(jwt, "advertiser_id", u->advertiser_id) != 0)
        return -1;
    return 0;
}

/* typ "access" carries sgen, typ "api" carries ver. */
static char *token_issue(const struct user *u, const char *typ, long ttl, time_t *exp)
{
    jwt_t *jwt = NULL;
    char *token = NULL;
    bool api = strcmp(typ, "api") == 0;
    long long counter = user_counter(api ? u->api_token_ver : u->session_gen);

    if (jwt_new(&jwt) != 0)
        return NULL;
    if (add_claims(jwt, u, typ, ttl, exp) == 0 &&
        jwt_add_grant_int(jwt, api ? "ver" : "sgen", (long)counter) == 0 &&
        jwt_set_alg(jwt, JWT_ALG_HS256, auth.key, (int)auth.key_len) == 0)
        token = jwt_encode_str(jwt);
    jwt_free(jwt);
    return token;
}

char *access_token_issue(const struct user *u)
{
    time_t exp;

    return token_issue(u, "access", auth.access_ttl, &exp);
}

char *api_token_issue(const struct user *u, time_t *exp)
{
    return token_issue(u, "api", API_TOKEN_TTL_SECONDS, exp);
}

/* prefix + the SHA-256 of token in hex: only a digest is stored, so a
 * leaked Redis dump yields no usable token. */
static int digest_key(char *key, size_t keylen, const char *prefix, const char *token)
{
    unsigned char digest[crypto_hash_sha256_BYTES];
    char hex[2 * crypto_hash_sha256_BYTES + 1];

    if (crypto_hash_sha256(digest, (const unsigned char *)token, strlen(token)) != 0)
        return -1;
    sodium_bin2hex(hex, sizeof hex, digest, sizeof digest);
    int n = snprintf(key, keylen, "%s%s", prefix, hex);
    return n > 0 && (size_t)n < keylen ? 0 : -1;
}

static int family_key(char key[KEY_MAX], const char *family)
{
    int n = snprintf(key, KEY_MAX, ADSERVE_KEY_REFRESH_FAMILY "%s", family);
    return n > 0 && n < KEY_MAX ? 0 : -1;
}

/* One transaction: the token's record, and the family kept alive as long
 * as its newest token (on a login, the family is created). */
static enum store_status store_refresh(struct store_conn *c, const char *user_id,
                                       const char *family, const char *gen,
                                       char out[REFRESH_TOKEN_LEN])
{
    char key[KEY_MAX], fkey[KEY_MAX], ttl[24];

    if (random_hex(out, REFRESH_TOKEN_LEN, REFRESH_TOKEN_BYTES) != 0 ||
        digest_key(key, sizeof key, ADSERVE_KEY_REFRESH_TOKEN, out) != 0 ||
        family_key(fkey, family) != 0)
        return STORE_ERROR;
    snprintf(ttl, sizeof ttl, "%ld", REFRESH_TTL_SECONDS);
    const char *const *cmds[] = {
        (const char *[]){ "HSET", key, "user", user_id, "family", family, "gen", gen,
                          "active", "1", NULL },
        (const char *[]){ "EXPIRE", key, ttl, NULL },
        (const char *[]){ "SET", fkey, user_id, "EX", ttl, NULL },
    };
    enum store_status st = store_exec(c, cmds, sizeof cmds / sizeof cmds[0]);
    if (st != STORE_OK)
        sodium_memzero(out, REFRESH_TOKEN_LEN);
    return st;
}

static void gen_text(char out[USER_COUNTER_LEN], const struct user *u)
{
    snprintf(out, USER_COUNTER_LEN, "%lld", user_counter(u->session_gen));
}

enum store_status refresh_token_issue(struct store_conn *c, const struct user *u,
                                      char out[REFRESH_TOKEN_LEN])
{
    char family[FAMILY_LEN], gen[USER_COUNTER_LEN];

    if (random_hex(family, sizeof family, 16) != 0)
        return STORE_ERROR;
    gen_text(gen, u);
    return store_refresh(c, u->id, family, gen, out);
}

struct refresh_record {
    char user[UUID_STR_LEN];
    char family[FAMILY_LEN];
    char gen[USER_COUNTER_LEN];
};

static enum refresh_result from_store(enum store_status st)
{
    return st == STORE_UNAVAILABLE ? REFRESH_UNAVAILABLE : REFRESH_FAILED;
}

/* The record of a refresh token's key; REFRESH_INVALID when there is none
 * (never issued, or expired). */
static enum refresh_result refresh_record(struct store_conn *c, const char *key,
                                          struct refresh_record *rec)
{
    redisReply *r;
    enum store_status st = store_cmd(c, &r, (const char *[]){
        "HMGET", key, "user", "family", "gen", NULL });

    if (st != STORE_OK)
        return from_store(st);
    enum refresh_result res = REFRESH_OK;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3)
        res = REFRESH_FAILED;
    else if (r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
        res = REFRESH_INVALID;
    else if (copy_str(rec->user, sizeof rec->user, r->element[0]->str) != 0 ||
             copy_str(rec->family, sizeof rec->family, r->element[1]->str) != 0 ||
             copy_str(rec->gen, sizeof rec->gen,
                      r->element[2]->type == REDIS_REPLY_STRING ? r->element[2]->str : "0") != 0)
        res = REFRESH_FAILED;
    freeReplyObject(r);
    return res;
}

/* HDEL of the active flag: exactly one caller ever gets 1 for a token. */
static enum refresh_result use_up(struct store_conn *c, const char *key, bool *first)
{
    redisReply *r;
    enum store_status st = store_cmd(c, &r, (const char *[]){ "HDEL", key, "active", NULL });

    if (st != STORE_OK)
        return from_store(st);
    enum refresh_result res = r->type == REDIS_REPLY_INTEGER ? REFRESH_OK : REFRESH_FAILED;
    *first = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return res;
}

static enum refresh_result load_owner(struct store_conn *c, const struct refresh_record *rec,
                                      struct user *u)
{
    enum store_status st = user_load(c, rec->user, u);

    if (st == STORE_NOT_FOUND)
        return REFRESH_INVALID;
    if (st != STORE_OK)
        return from_store(st);
    /* A password change since issue revokes it. */
    return user_counter(rec->gen) == user_counter(u->session_gen) ? REFRESH_OK : REFRESH_INVALID;
}

/* The next token of the family, unless the family was revoked: WATCH
 * makes a revocation between the check and the write abort the write. */
static enum refresh_result next_in_family(struct store_conn *c, const struct refresh_record *rec,
                                          char out[REFRESH_TOKEN_LEN])
{
    char fkey[KEY_MAX];
    redisReply *r;

    if (family_key(fkey, rec->family) != 0)
        return REFRESH_FAILED;
    enum store_status st = store_do(c, (const char *[]){ "WATCH", fkey, NULL });
    if (st == STORE_OK)
        st = store_cmd(c, &r, (const char *[]){ "EXISTS", fkey, NULL });
    if (st != STORE_OK)
        return from_store(st);
    bool alive = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    if (!alive)
        return REFRESH_INVALID;     /* store_release() drops the WATCH */
    st = store_refresh(c, rec->user, rec->family, rec->gen, out);
    if (st == STORE_CONFLICT)
        return REFRESH_INVALID;
    return st == STORE_OK ? REFRESH_OK : from_store(st);
}

enum refresh_result refresh_token_rotate(struct store_conn *c, const char *token,
                                         struct user *u, char out[REFRESH_TOKEN_LEN])
{
    char key[KEY_MAX], fkey[KEY_MAX];
    struct refresh_record rec;
    bool first = false;

    memset(u, 0, sizeof *u);
    if (strlen(token) != REFRESH_TOKEN_LEN - 1)
        return REFRESH_INVALID;
    if (digest_key(key, sizeof key, ADSERVE_KEY_REFRESH_TOKEN, token) != 0)
        return REFRESH_FAILED;
    enum refresh_result res = refresh_record(c, key, &rec);
    if (res == REFRESH_OK)
        res = use_up(c, key, &first);
    if (res != REFRESH_OK)
        return res;
    if (!first) {
        /* Presented twice: a copy is in other hands.  The whole login goes. */
        if (family_key(fkey, rec.family) != 0)
            return REFRESH_FAILED;
        enum store_status st = store_do(c, (const char *[]){ "DEL", fkey, NULL });
        if (st != STORE_OK)
            return from_store(st);
        log_line("refresh token reused for user %s: that login's tokens are revoked", rec.user);
        return REFRESH_REUSED;
    }
    res = load_owner(c, &rec, u);
    if (res == REFRESH_OK)
        res = next_in_family(c, &rec, out);
    return res;
}

enum refresh_result refresh_token_revoke(struct store_conn *c, const char *token,
                                         char user_id[UUID_STR_LEN])
{
    char key[KEY_MAX], fkey[KEY_MAX];
    struct refresh_record rec;

    user_id[0] = '\0';
    if (strlen(token) != REFRESH_TOKEN_LEN - 1)
        return REFRESH_INVALID;
    if (digest_key(key, sizeof key, ADSERVE_KEY_REFRESH_TOKEN, token) != 0)
        return REFRESH_FAILED;
    enum refresh_result res = refresh_record(c, key, &rec);
    if (res != REFRESH_OK)
        return res;
    if (family_key(fkey, rec.family) != 0)
        return REFRESH_FAILED;
    /* A used token signs out too: its login is the one to end, and a
     * thief holding the current one loses it with the rest. */
    const char *const *cmds[] = {
        (const char *[]){ "DEL", fkey, NULL },
        (const char *[]){ "DEL", key, NULL },
    };
    enum store_status st = store_exec(c, cmds, sizeof cmds / sizeof cmds[0]);
    if (st != STORE_OK)
        return from_store(st);
    if (copy_str(user_id, UUID_STR_LEN, rec.user) != 0)
        user_id[0] = '\0';
    return REFRESH_OK;
}

static int reset_key(char key[KEY_MAX], const char *token)
{
    return digest_key(key, KEY_MAX, ADSERVE_KEY_RESET, token);
}

/* A fresh reset token and its key. */
static int new_reset_token(char out[RESET_TOKEN_LEN], char key[KEY_MAX])
{
    unsigned char raw[RESET_TOKEN_BYTES];

    randombytes_buf(raw, sizeof raw);
    sodium_bin2base64(out, RESET_TOKEN_LEN, raw, sizeof raw,
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof raw);
    return reset_key(key, out);
}

enum store_status reset_token_issue(struct store_conn *c, const struct user *u,
                                    char out[RESET_TOKEN_LEN])
{
    char key[KEY_MAX], value[UUID_STR_LEN + USER_COUNTER_LEN + 1], ttl[24];

    if (new_reset_token(out, key) != 0)
        return STORE_ERROR;
    snprintf(value, sizeof value, "%s %lld", u->id, user_counter(u->session_gen));
    snprintf(ttl, sizeof ttl, "%ld", auth.reset_ttl);
    enum store_status st = store_do(c, (const char *[]){ "SET", key, value, "EX", ttl, NULL });
    if (st != STORE_OK)
        sodium_memzero(out, RESET_TOKEN_LEN);
    return st;
}

enum store_status reset_token_dummy(struct store_conn *c, char out[RESET_TOKEN_LEN])
{
    char key[KEY_MAX];

    if (new_reset_token(out, key) != 0)
        return STORE_ERROR;
    return store_do(c, (const char *[]){ "EXISTS", key, NULL });
}

enum store_status reset_token_consume(struct store_conn *c, const char *token,
                                      char user_id[UUID_STR_LEN], long long *gen)
{
    char key[KEY_MAX], value[UUID_STR_LEN + USER_COUNTER_LEN + 1];

    if (strlen(token) != RESET_TOKEN_LEN - 1)
        return STORE_NOT_FOUND;
    if (reset_key(key, token) != 0)
        return STORE_ERROR;
    /* GETDEL: of two concurrent uses, exactly one gets the value. */
    enum store_status st = store_get_str(c, value, sizeof value,
                                         (const char *[]){ "GETDEL", key, NULL });
    if (st != STORE_OK)
        return st;
    char *sp = strchr(value, ' ');
    if (sp == NULL)
        return STORE_ERROR;
    *sp = '\0';
    if (copy_str(user_id, UUID_STR_LEN, value) != 0)
        return STORE_ERROR;
    *gen = user_counter(sp + 1);
    return STORE_OK;
}

const char *auth_bearer_token(const char *authorization)
{
    if (authorization == NULL || strncasecmp(authorization, "Bearer ", 7) != 0)
        return NULL;
    const char *t = authorization + 7;
    while (*t == ' ')
        t++;
    size_t n = strlen(t);
    if (n == 0 || n > TOKEN_MAX || strchr(t, ' ') != NULL)
        return NULL;
    return t;
}

struct claims {
    char sub[UUID_STR_LEN];
    bool api;                   /* typ "api", else "access" */
    long long counter;          /* ver for api, sgen for access */
};

/* Claims are read from the decoded JSON rather than with
 * jwt_get_grant_int(), whose error reporting cannot tell a missing claim
 * from a string-typed one. */
static enum auth_result check_claims(jwt_t *jwt, struct claims *out)
{
    char *json = jwt_get_grants_json(jwt, NULL);
    if (json == NULL)
        return AUTH_INVALID;
    cJSON *claims = cJSON_Parse(json);
    free(json);
    if (claims == NULL)
        return AUTH_INVALID;

    enum auth_result r = AUTH_OK;
    const cJSON *typ = cJSON_GetObjectItemCaseSensitive(claims, "typ");
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(claims, "exp");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(claims, "sub");
    out->api = cJSON_IsString(typ) && strcmp(typ->valuestring, "api") == 0;
    bool access = cJSON_IsString(typ) && strcmp(typ->valuestring, "access") == 0;
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(claims, out->api ? "ver" : "sgen");
    if (!(access || out->api) || !cJSON_IsNumber(exp) || !cJSON_IsString(s) ||
        !cJSON_IsNumber(n) || n->valuedouble < 0 || n->valuedouble > 1e15 ||
        copy_str(out->sub, sizeof out->sub, s->valuestring) != 0)
        r = AUTH_INVALID;
    else if ((double)time(NULL) >= exp->valuedouble)
        r = AUTH_EXPIRED;
    else
        out->counter = (long long)n->valuedouble;
    cJSON_Delete(claims);
    return r;
}

/* libjwt compares HMACs in constant time (jwt_strcmp). */
static enum auth_result decode_token(const char *token, struct claims *claims)
{
    jwt_t *jwt = NULL;

    if (jwt_decode(&jwt, token, auth.key, (int)auth.key_len) != 0 || jwt == NULL)
        return AUTH_INVALID;
    /* libjwt 1.10 accepts "alg":"none" without a signature: only the one
     * algorithm we issue is acceptable. */
    enum auth_result r = jwt_get_alg(jwt) == JWT_ALG_HS256 ? check_claims(jwt, claims)
                                                           : AUTH_INVALID;
    jwt_free(jwt);
    return r;
}

enum auth_result auth_check_bearer(const char *authorization, struct store_conn *c,
                                   struct user *u)
{
    struct claims claims = { 0 };
    const char *token = auth_bearer_token(authorization);

    memset(u, 0, sizeof *u);
    if (token == NULL)
        return AUTH_MISSING;
    enum auth_result r = decode_token(token, &claims);
    if (r != AUTH_OK)
        return r;
    switch (user_load(c, claims.sub, u)) {
    case STORE_OK:
        break;
    case STORE_NOT_FOUND:
        return AUTH_UNKNOWN_USER;
    case STORE_UNAVAILABLE:
        return AUTH_UNAVAILABLE;
    default:
        return AUTH_FAILED;
    }
    /* API tokens start at version 1: version 0 means none was ever issued. */
    long long current = user_counter(claims.api ? u->api_token_ver : u->session_gen);
    if (claims.counter != current || (claims.api && current == 0)) {
        sodium_memzero(u->password_hash, sizeof u->password_hash);
        return AUTH_REVOKED;
    }
    return AUTH_OK;
}

const char *auth_result_detail(enum auth_result r)
{
    switch (r) {
    case AUTH_OK:
        return "ok";
    case AUTH_MISSING:
        return "not authenticated";
    case AUTH_EXPIRED:
        return "token expired";
    case AUTH_REVOKED:
        return "token revoked";
    case AUTH_UNKNOWN_USER:
        return "user no longer exists";
    case AUTH_UNAVAILABLE:
        return "redis unavailable";
    case AUTH_FAILED:
        return "internal error";
    case AUTH_INVALID:
    default:
        return "invalid token";
    }
}
