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

static struct {
    unsigned char *key;
    size_t key_len;
    long access_ttl;
    sem_t hashing;
    bool sem_ready;
    char dummy_hash[crypto_pwhash_STRBYTES];
} auth;

int auth_init(const char *secret, size_t secret_len, long access_ttl)
{
    char dummy_password[33];

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

bool password_verify(const char *hash, const char *password)
{
    const char *h = hash != NULL && hash[0] != '\0' ? hash : auth.dummy_hash;

    hashing_enter();
    int rc = crypto_pwhash_str_verify(h, password, strlen(password));
    hashing_leave();
    return h != auth.dummy_hash && rc == 0;
}

static int add_claims(jwt_t *jwt, const struct user *u)
{
    char jti[33];
    time_t now = time(NULL);

    if (now == (time_t)-1 || random_hex(jti, sizeof jti, 16) != 0)
        return -1;
    if (jwt_add_grant(jwt, "sub", u->id) != 0 || jwt_add_grant(jwt, "role", u->role) != 0 ||
        jwt_add_grant_int(jwt, "iat", (long)now) != 0 ||
        jwt_add_grant_int(jwt, "exp", (long)now + auth.access_ttl) != 0 ||
        jwt_add_grant(jwt, "jti", jti) != 0 || jwt_add_grant(jwt, "typ", "access") != 0)
        return -1;
    if (u->advertiser_id[0] != '\0' && jwt_add_grant(jwt, "advertiser_id", u->advertiser_id) != 0)
        return -1;
    return 0;
}

char *access_token_issue(const struct user *u)
{
    jwt_t *jwt = NULL;
    char *token = NULL;

    if (jwt_new(&jwt) != 0)
        return NULL;
    if (add_claims(jwt, u) == 0 &&
        jwt_set_alg(jwt, JWT_ALG_HS256, auth.key, (int)auth.key_len) == 0)
        token = jwt_encode_str(jwt);
    jwt_free(jwt);
    return token;
}

/* Only a digest is stored, so a leaked Redis dump yields no usable token. */
static int refresh_key(char *key, size_t keylen, const char *token)
{
    unsigned char digest[crypto_hash_sha256_BYTES];
    char hex[2 * crypto_hash_sha256_BYTES + 1];

    if (crypto_hash_sha256(digest, (const unsigned char *)token, strlen(token)) != 0)
        return -1;
    sodium_bin2hex(hex, sizeof hex, digest, sizeof digest);
    int n = snprintf(key, keylen, "adserve:refresh:%s", hex);
    return n > 0 && (size_t)n < keylen ? 0 : -1;
}

enum store_status refresh_token_issue(struct store_conn *c, const char *user_id,
                                      char out[REFRESH_TOKEN_LEN])
{
    char key[128], ttl[24];

    if (random_hex(out, REFRESH_TOKEN_LEN, REFRESH_TOKEN_BYTES) != 0 ||
        refresh_key(key, sizeof key, out) != 0)
        return STORE_ERROR;
    snprintf(ttl, sizeof ttl, "%ld", REFRESH_TTL_SECONDS);
    return store_do(c, (const char *[]){ "SET", key, user_id, "EX", ttl, NULL });
}

/* The token after "Bearer " (scheme case-insensitive, RFC 7235), or NULL. */
static const char *bearer_token(const char *authorization)
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

/* Claims are read from the decoded JSON rather than with
 * jwt_get_grant_int(), whose error reporting cannot tell a missing claim
 * from a string-typed one. */
static enum auth_result check_claims(jwt_t *jwt, char sub[UUID_STR_LEN])
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
    if (!cJSON_IsString(typ) || strcmp(typ->valuestring, "access") != 0 ||
        !cJSON_IsNumber(exp) || !cJSON_IsString(s) ||
        copy_str(sub, UUID_STR_LEN, s->valuestring) != 0)
        r = AUTH_INVALID;
    else if ((double)time(NULL) >= exp->valuedouble)
        r = AUTH_EXPIRED;
    cJSON_Delete(claims);
    return r;
}

static enum auth_result decode_token(const char *token, char sub[UUID_STR_LEN])
{
    jwt_t *jwt = NULL;

    if (jwt_decode(&jwt, token, auth.key, (int)auth.key_len) != 0 || jwt == NULL)
        return AUTH_INVALID;
    /* libjwt 1.10 accepts "alg":"none" without a signature: only the one
     * algorithm we issue is acceptable. */
    enum auth_result r = jwt_get_alg(jwt) == JWT_ALG_HS256 ? check_claims(jwt, sub)
                                                           : AUTH_INVALID;
    jwt_free(jwt);
    return r;
}

enum auth_result auth_check_bearer(const char *authorization, struct store_conn *c,
                                   struct user *u)
{
    char sub[UUID_STR_LEN];
    const char *token = bearer_token(authorization);

    if (token == NULL)
        return AUTH_MISSING;
    enum auth_result r = decode_token(token, sub);
    if (r != AUTH_OK)
        return r;
    switch (user_load(c, sub, u)) {
    case STORE_OK:
        return AUTH_OK;
    case STORE_NOT_FOUND:
        return AUTH_UNKNOWN_USER;
    case STORE_UNAVAILABLE:
        return AUTH_UNAVAILABLE;
    default:
        return AUTH_FAILED;
    }
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
