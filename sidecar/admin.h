/* The first admin account, created at start when there is none. */
#ifndef ADSERVE_ADMIN_H
#define ADSERVE_ADMIN_H

#include "store.h"

/* Ensures an admin exists.  email is ADSERVE_ADMIN_EMAIL; password may be
 * NULL, which is only an error when the admin has to be created.
 * 0 on success, -1 on failure (logged). */
int admin_bootstrap(struct store_conn *c, const char *email, const char *password);

#endif
