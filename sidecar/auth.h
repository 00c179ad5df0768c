/* Passwords (argon2id via libsodium) and tokens: HS256 JWTs via libjwt for
 * access and API tokens, opaque random tokens stored only as SHA-256
 * digests in Redis for refresh and password-reset tokens.
 *
 * Token kinds:
 *   access   JWT, typ "access", claims sub, role, [advertiser_id], iat, exp,
 *            jti, sgen (the user's session_gen at issue); ADSERVE_ACCESS_TTL.
 *   api      JWT, typ "api", the same claims with ver (the user's
 *            api_token_ver) instead of sgen; API_TOKEN_TTL_SECONDS.  Issuing
 *            one bumps api_token_ver, which revokes the earlier ones.
 *   refresh  64 hex characters; single-use, rotated on every refresh.  Each
 *            login starts a family; presenting a used refresh token again
 *            revokes the whole family (every token descended from that
 *            login), since one of the two holders is not the user.
 *   reset    32 random bytes, base64url (43 characters); single-use,
 *            ADSERVE_RESET_TTL seconds.
 * A password change (reset or PATCH) bumps session_gen and api_token_ver:
 * every access, refresh, API and outstanding reset token of the user dies.
 *
 * Redis keys:
 *   adserve:refresh_token:{sha256 hex}  hash user, family, gen, [active];
 *                                       REFRESH_TTL_SECONDS
 *   adserve:refresh_family:{id}         user id; alive while the family is
 *                                       (sliding REFRESH_TTL_SECONDS)
 *   adserve:reset:{sha256 hex}          "{user id} {session_gen}"; reset TTL */
#ifndef ADSERVE_AUTH_H
#define ADSERVE_AUTH_H

#include "store.h"
#include "users.h"

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define PASSWORD_MIN 10                 /* characters, for every new password */
#define PASSWORD_MAX 1024
#define REFRESH_TOKEN_BYTES 32
#define REFRESH_TOKEN_LEN (2 * REFRESH_TOKEN_BYTES + 1)
#define REFRESH_TTL_SECONDS (30L * 24 * 3600)
#define API_TOKEN_TTL_SECONDS (365L * 24 * 3600)
#define RESET_TOKEN_BYTES 32
#define RESET_TOKEN_LEN 44              /* 43 base64url characters + NUL */
#define RESET_TTL_DEFAULT 3600L

/* Keeps a copy of the signing key, sets up the hashing semaphore and the
 * dummy hash that unknown emails are verified against, and reads
 * ADSERVE_RESET_TTL (seconds, 60..604800, default 3600).  0 or -1 (logged
 * when it is the configuration). */
int auth_init(const char *secret, size_t secret_len, long access_ttl);
void auth_shutdown(void);

long auth_access_ttl(void);
long auth_reset_ttl(void);

/* argon2id PHC string of password into out.  0 or -1 (out of memory). */
int password_hash(const char *password, char out[crypto_pwhash_STRBYTES]);

enum password_check {
    PASSWORD_OK,
    PASSWORD_WRONG,
    PASSWORD_BUSY,          /* every hashing slot taken: not checked */
};

/* Checks password against hash; with hash NULL, burns the same time
 * against a dummy hash and answers PASSWORD_WRONG, so that unknown
 * accounts cannot be told apart by timing.  Never waits for a hashing
 * slot: sign-ins that find them all taken are turned away (BUSY) rather
 * than hold an HTTP thread, so hashing never takes more than
 * HASH_CONCURRENCY of the HTTP_THREADS and other routes keep theirs. */
enum password_check password_verify(const char *hash, const char *password);

/* A signed access token for u (malloc'd; free()), NULL on failure. */
char *access_token_issue(const struct user *u);

/* A signed API token for u under u->api_token_ver (malloc'd; free()), its
 * expiry in *exp; NULL on failure. */
char *api_token_issue(const struct user *u, time_t *exp);

/* Creates a refresh token for u in a new family (a login). */
enum store_status refresh_token_issue(struct store_conn *c, const struct user *u,
                                      char out[REFRESH_TOKEN_LEN]);

enum refresh_result {
    REFRESH_OK = 0,
    REFRESH_INVALID,     /* unknown, expired, revoked, or its user is gone */
    REFRESH_REUSED,      /* already used: the family is now revoked */
    REFRESH_UNAVAILABLE, /* Redis down */
    REFRESH_FAILED,      /* internal error */
};

/* Uses up token and, on REFRESH_OK, loads its user into *u and puts the
 * next token of the same family into out. */
enum refresh_result refresh_token_rotate(struct store_conn *c, const char *token,
                                         struct user *u, char out[REFRESH_TOKEN_LEN]);

/* Signs out the login that token belongs to: its family and the token
 * itself are deleted, so neither it nor any token rotated from the same
 * login refreshes again.  REFRESH_INVALID when token is no refresh token
 * the store knows (nothing to do); the user's id goes to user_id on
 * REFRESH_OK. */
enum refresh_result refresh_token_revoke(struct store_conn *c, const char *token,
                                         char user_id[UUID_STR_LEN]);

/* A reset token for u (valid until u's session_gen changes or the TTL). */
enum store_status reset_token_issue(struct store_conn *c, const struct user *u,
                                    char out[RESET_TOKEN_LEN]);

/* The Redis work of reset_token_issue for addresses with no account, so
 * that both answer in about the same time: out is a token of the same
 * length that was never stored. */
enum store_status reset_token_dummy(struct store_conn *c, char out[RESET_TOKEN_LEN]);

/* Uses up a reset token: its user id and the session_gen it was issued
 * under.  STORE_NOT_FOUND when unknown, used or expired. */
enum store_status reset_token_consume(struct store_conn *c, const char *token,
                                      char user_id[UUID_STR_LEN], long long *gen);

enum auth_result {
    AUTH_OK = 0,
    AUTH_MISSING,        /* no Authorization: Bearer header */
    AUTH_INVALID,        /* bad signature, algorithm, type, claims */
    AUTH_EXPIRED,
    AUTH_REVOKED,        /* issued before a password change / regeneration */
    AUTH_UNKNOWN_USER,   /* the token's user no longer exists */
    AUTH_UNAVAILABLE,    /* Redis down: cannot tell */
    AUTH_FAILED,         /* internal error */
};

/* Checks an Authorization header value (an access or an API token) and
 * loads the caller into *u.  Every authenticated route goes through this. */
enum auth_result auth_check_bearer(const char *authorization, struct store_conn *c,
                                   struct user *u);

/* The token after "Bearer " (scheme case-insensitive, RFC 7235), or NULL
 * when there is none or it is too long. */
const char *auth_bearer_token(const char *authorization);

/* The message for a failed check, for the 401 {"detail"}. */
const char *auth_result_detail(enum auth_result r);

#endif
