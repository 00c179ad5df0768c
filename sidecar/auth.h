/* Passwords (argon2id via libsodium) and tokens (HS256 JWTs via libjwt,
 * opaque refresh tokens in Redis). */
#ifndef ADSERVE_AUTH_H
#define ADSERVE_AUTH_H

#include "store.h"
#include "users.h"

#include <stdbool.h>
#include <stddef.h>

#define REFRESH_TOKEN_BYTES 32
#define REFRESH_TOKEN_LEN (2 * REFRESH_TOKEN_BYTES + 1)
#define REFRESH_TTL_SECONDS (30L * 24 * 3600)

/* Keeps a copy of the signing key, sets up the hashing semaphore and the
 * dummy hash that unknown emails are verified against.  0 or -1. */
int auth_init(const char *secret, size_t secret_len, long access_ttl);
void auth_shutdown(void);

long auth_access_ttl(void);

/* argon2id PHC string of password into out.  0 or -1 (out of memory). */
int password_hash(const char *password, char out[crypto_pwhash_STRBYTES]);

/* Checks password against hash; with hash NULL, burns the same time
 * against a dummy hash and answers false, so that unknown accounts cannot
 * be told apart by timing. */
bool password_verify(const char *hash, const char *password);

/* A signed access token for u (malloc'd; free()), NULL on failure. */
char *access_token_issue(const struct user *u);

/* Creates an opaque refresh token for user_id and stores its SHA-256 as
 * adserve:refresh:{hex} -> user_id with a 30-day TTL. */
enum store_status refresh_token_issue(struct store_conn *c, const char *user_id,
                                      char out[REFRESH_TOKEN_LEN]);

enum auth_result {
    AUTH_OK = 0,
    AUTH_MISSING,        /* no Authorization: Bearer header */
    AUTH_INVALID,        /* bad signature, algorithm, type, claims */
    AUTH_EXPIRED,
    AUTH_UNKNOWN_USER,   /* the token's user no longer exists */
    AUTH_UNAVAILABLE,    /* Redis down: cannot tell */
    AUTH_FAILED,         /* internal error */
};

/* Checks an Authorization header value and loads the caller into *u.
 * Every authenticated route goes through this. */
enum auth_result auth_check_bearer(const char *authorization, struct store_conn *c,
                                   struct user *u);

/* The message for a failed check, for the 401 {"detail"}. */
const char *auth_result_detail(enum auth_result r);

#endif
