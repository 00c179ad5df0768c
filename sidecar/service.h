/* The service credential: what other programs of the installation (a
 * scheduler, a data pipeline, a deploy script) present on the internal
 * group's routes, in place of a user's token (README "internal").
 *
 * It is a secret file, $ADSERVE_VAR/secrets/service.key (32 random bytes,
 * hex, mode 0600), made on first start like jwt.key: a program that may
 * read the file may call the internal routes. It works on those routes
 * only, and a user's token never works there. Rotation: replace the file
 * and restart the sidecar. */
#ifndef ADSERVE_SERVICE_H
#define ADSERVE_SERVICE_H

#include "users.h"

#include <stdbool.h>

/* Loads the key, creating it when there is none. 0, or -1 (logged). */
int service_init(const char *var_dir);
void service_shutdown(void);

/* Whether an Authorization header carries the service key, compared in
 * constant time. */
bool service_check(const char *authorization);

/* The caller the internal routes' handlers and audit records see. */
void service_caller(struct user *u);

#endif
