/* Secrets generated into the runtime folder: jwt.key, outbox.key. */
#ifndef ADSERVE_SECRET_H
#define ADSERVE_SECRET_H

/* Reads $var_dir/secrets/<name>, creating it (and the folders) with 32
 * random bytes, hex-encoded, mode 0600, when it does not exist.  Returns
 * the key text without its trailing newline (malloc'd; the caller wipes
 * and frees it), or NULL (logged). */
char *secret_load_or_create(const char *var_dir, const char *name);

/* The same, for a secret that must exist already (a reader of what the
 * server wrote): NULL (logged) when it does not. */
char *secret_load(const char *var_dir, const char *name);

#endif
