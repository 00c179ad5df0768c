/* Users as stored in Redis.
 *
 * Keys (all written in one MULTI/EXEC):
 *   adserve:user:{id}        hash: id, email, role, [advertiser_id],
 *                            password_hash, created_at, updated_at, created_by
 *   adserve:user_by_email    hash: lower-cased email -> id
 *   adserve:users            set of ids */
#ifndef ADSERVE_USERS_H
#define ADSERVE_USERS_H

#include "store.h"
#include "util.h"

#include <cJSON.h>
#include <sodium.h>

#define EMAIL_MAX 254          /* RFC 5321 path limit */

enum role {
    ROLE_ADMIN = 1 << 0,
    ROLE_OPERATOR = 1 << 1,
    ROLE_ADVERTISER = 1 << 2,
};
#define ROLES_ANY (ROLE_ADMIN | ROLE_OPERATOR | ROLE_ADVERTISER)

struct user {
    char id[UUID_STR_LEN];
    char email[EMAIL_MAX + 1];
    char role[16];
    char advertiser_id[UUID_STR_LEN];       /* "" when none */
    char created_at[RFC3339_LEN];
    char updated_at[RFC3339_LEN];
    char created_by[UUID_STR_LEN];
    char password_hash[crypto_pwhash_STRBYTES];
};

/* The role bit for a role name; 0 when unknown. */
unsigned role_from_name(const char *name);

/* Lower-cases and checks an email address (a pragmatic subset of RFC 5321:
 * one '@', non-empty local part, dotted domain, no spaces or controls).
 * out has room for EMAIL_MAX + 1 bytes.  0 when valid, -1 otherwise. */
int email_normalize(const char *in, char out[EMAIL_MAX + 1]);

/* Loads adserve:user:{id}.  STORE_NOT_FOUND when there is no such user. */
enum store_status user_load(struct store_conn *c, const char *id, struct user *u);

/* The id stored for a (normalized) email.  STORE_NOT_FOUND when none. */
enum store_status user_id_by_email(struct store_conn *c, const char *email,
                                   char id[UUID_STR_LEN]);

/* The public view of a user: never the password hash.  NULL on OOM. */
cJSON *user_to_json(const struct user *u);

/* Writes a new user and its indexes in one transaction.  STORE_CONFLICT
 * when a preceding WATCH fired. */
enum store_status user_insert(struct store_conn *c, const struct user *u);

/* Whether any user has the admin role: STORE_OK (yes) or STORE_NOT_FOUND. */
enum store_status users_admin_exists(struct store_conn *c);

#endif
