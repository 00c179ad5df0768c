/* Users as stored in Redis.
 *
 * Keys (all written in one MULTI/EXEC, with an audit record):
 *   adserve:user:{id}        hash: id, email, role, [advertiser_id],
 *                            password_hash, created_at, updated_at, created_by,
 *                            [session_gen], [api_token_ver]
 *   adserve:user_by_email    hash: lower-cased email -> id
 *   adserve:users            set of ids
 *
 * session_gen and api_token_ver are counters (absent = 0): access and
 * refresh tokens carry the session_gen they were issued under, API tokens
 * their api_token_ver; bumping a counter revokes every token issued under
 * the old value (see auth.h). */
#ifndef ADSERVE_USERS_H
#define ADSERVE_USERS_H

#include "store.h"
#include "util.h"

struct txn;

#include <cJSON.h>
#include <sodium.h>

#define EMAIL_MAX 254          /* RFC 5321 path limit */
#define USER_KEY_MAX 128
#define USER_COUNTER_LEN 21    /* a long long in decimal */

enum role {
    ROLE_ADMIN = 1 << 0,
    ROLE_OPERATOR = 1 << 1,
    ROLE_ADVERTISER = 1 << 2,
    /* never a user's: the service credential of the internal group
     * (service.h), on its routes only */
    ROLE_SERVICE = 1 << 3,
};
#define ROLES_ANY (ROLE_ADMIN | ROLE_OPERATOR | ROLE_ADVERTISER)
/* who manages the inventory: ad units, placements, keys, catalogs, styles */
#define INVENTORY_ROLES (ROLE_ADMIN | ROLE_OPERATOR)

struct user {
    char id[UUID_STR_LEN];
    char email[EMAIL_MAX + 1];
    char role[16];
    char advertiser_id[UUID_STR_LEN];       /* "" when none */
    char created_at[RFC3339_LEN];
    char updated_at[RFC3339_LEN];
    char created_by[UUID_STR_LEN];
    char password_hash[crypto_pwhash_STRBYTES];
    char session_gen[USER_COUNTER_LEN];     /* "" = 0 */
    char api_token_ver[USER_COUNTER_LEN];   /* "" = 0 */
};

/* A counter field's value (0 when absent or malformed). */
long long user_counter(const char *field);

/* Adds one to a counter field, in place. */
void user_counter_bump(char field[USER_COUNTER_LEN]);

/* Sets a new password hash (and updated_at) and bumps both token
 * counters, which revokes every token of the user.  0 or -1. */
int user_set_password(struct user *u, const char hash[crypto_pwhash_STRBYTES]);

/* The role bit for a role name; 0 when unknown. */
unsigned role_from_name(const char *name);
/* A user role's name (one bit of ROLES_ANY); NULL for another bit. */
const char *role_name(unsigned bit);

/* Lower-cases and checks an email address (a pragmatic subset of RFC 5321:
 * one '@', non-empty local part, dotted domain, no spaces or controls).
 * out has room for EMAIL_MAX + 1 bytes.  0 when valid, -1 otherwise. */
int email_normalize(const char *in, char out[EMAIL_MAX + 1]);

/* adserve:user:{id} into key; -1 when it does not fit. */
int user_key(char key[USER_KEY_MAX], const char *id);

/* Loads adserve:user:{id}.  STORE_NOT_FOUND when there is no such user. */
enum store_status user_load(struct store_conn *c, const char *id, struct user *u);

/* The id stored for a (normalized) email.  STORE_NOT_FOUND when none. */
enum store_status user_id_by_email(struct store_conn *c, const char *email,
                                   char id[UUID_STR_LEN]);

/* The public view of a user: never the password hash.  NULL on OOM. */
cJSON *user_to_json(const struct user *u);

/* Adds to t the commands that store u: the hash (advertiser_id removed
 * when empty), the email index and the id set.  old is the stored
 * version, or NULL for a new user; a changed email moves the index entry. */
void user_txn_write(struct txn *t, const struct user *u, const struct user *old);

/* Adds to t the commands that remove u and its index entries. */
void user_txn_delete(struct txn *t, const struct user *u);

/* Writes a new user, its indexes and an audit record ("create", by actor,
 * NULL for the system) in one transaction.  STORE_CONFLICT when a
 * preceding WATCH fired. */
enum store_status user_insert(struct store_conn *c, const struct user *u,
                              const struct user *actor);

/* Every user (password hashes wiped), sorted by email, into a
 * malloc'd array (free() it; NULL when there are none). */
enum store_status users_load_all(struct store_conn *c, struct user **out, size_t *n);

/* WATCHes the id set and every user key, then counts the admins, so that
 * a transaction that removes an admin fails (STORE_CONFLICT) if any other
 * user changed meanwhile.  The connection keeps the WATCH. */
enum store_status users_watch_admins(struct store_conn *c, size_t *admins);

/* Whether any user has the admin role: STORE_OK (yes) or STORE_NOT_FOUND. */
enum store_status users_admin_exists(struct store_conn *c);

#endif
