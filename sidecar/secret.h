/* The generated JWT signing key in the runtime folder. */
#ifndef ADSERVE_SECRET_H
#define ADSERVE_SECRET_H

/* Reads $var_dir/secrets/jwt.key, creating it (and the folders) with 32
 * random bytes, hex-encoded, mode 0600, when it does not exist.  Returns
 * the key text without its trailing newline (malloc'd; the caller wipes
 * and frees it), or NULL (logged). */
char *secret_load_or_create(const char *var_dir);

#endif
