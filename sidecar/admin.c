#include "admin.h"

#include "auth.h"
#include "log.h"
#include "users.h"
#include "util.h"

#include <string.h>

#define BOOTSTRAP_ATTEMPTS 3

/* STORE_OK when an admin exists (under that email or another one),
 * STORE_NOT_FOUND when one must be created. */
static enum store_status admin_present(struct store_conn *c, const char *email)
{
    char id[UUID_STR_LEN];
    enum store_status st = user_id_by_email(c, email, id);

    if (st == STORE_OK) {
        log_line("admin bootstrap: %s already has an account", email);
        return STORE_OK;
    }
    if (st != STORE_NOT_FOUND)
        return st;
    st = users_admin_exists(c);
    if (st == STORE_OK)
        log_line("admin bootstrap: an admin account exists; %s not created", email);
    return st;
}

static int fill_admin(struct user *u, const char *email, const char *password)
{
    memset(u, 0, sizeof *u);
    uuid_v4(u->id);
    memcpy(u->created_by, u->id, sizeof u->id);   /* the first admin creates itself */
    if (copy_str(u->email, sizeof u->email, email) != 0 ||
        copy_str(u->role, sizeof u->role, "admin") != 0 ||
        now_rfc3339(u->created_at) != 0 ||
        password_hash(password, u->password_hash) != 0)
        return -1;
    memcpy(u->updated_at, u->created_at, sizeof u->created_at);
    return 0;
}

/* One optimistic attempt: WATCH the indexes, check, write in MULTI/EXEC.
 * Two sidecars starting together cannot both create an admin. */
static enum store_status try_bootstrap(struct store_conn *c, const char *email,
                                       const char *password)
{
    struct user u;
    enum store_status st = store_do(c, (const char *[]){
        "WATCH", ADSERVE_KEY_USER_BY_EMAIL, ADSERVE_KEY_USERS, NULL });

    if (st == STORE_OK)
        st = admin_present(c, email);
    if (st != STORE_NOT_FOUND)
        return st;      /* store_release() drops the WATCH */
    if (password == NULL || password[0] == '\0') {
        log_line("no admin account exists: set ADSERVE_ADMIN_PASSWORD to create %s", email);
        return STORE_ERROR;
    }
    if (strlen(password) < PASSWORD_MIN)
        log_line("admin bootstrap: ADSERVE_ADMIN_PASSWORD is shorter than the password policy "
                 "(%d characters); change it", PASSWORD_MIN);
    if (fill_admin(&u, email, password) != 0) {
        log_line("admin bootstrap: cannot prepare the account");
        return STORE_ERROR;
    }
    st = user_insert(c, &u, NULL);
    if (st == STORE_OK)
        log_line("admin bootstrap: created admin %s (id %s)", u.email, u.id);
    sodium_memzero(&u, sizeof u);
    return st;
}

int admin_bootstrap(struct store_conn *c, const char *email, const char *password)
{
    char normalized[EMAIL_MAX + 1];

    if (email_normalize(email, normalized) != 0) {
        log_line("ADSERVE_ADMIN_EMAIL is not a valid email address");
        return -1;
    }
    for (int i = 0; i < BOOTSTRAP_ATTEMPTS; i++) {
        enum store_status st = try_bootstrap(c, normalized, password);
        if (st == STORE_OK)
            return 0;
        if (st != STORE_CONFLICT) {
            if (st == STORE_UNAVAILABLE)
                log_line("admin bootstrap: redis unavailable");
            return -1;
        }
    }
    log_line("admin bootstrap: concurrent changes, giving up");
    return -1;
}
