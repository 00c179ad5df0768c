/* The service credential (service.h). */
#include "service.h"

#include "auth.h"
#include "secret.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define SERVICE_KEY_FILE "service.key"

/* only the key's hash is kept: what is compared is the hash of what was
 * sent, so neither the comparison's time nor its length tells anything */
static unsigned char key_hash[crypto_generichash_BYTES];
static bool loaded;

int service_init(const char *var_dir)
{
    char *key = secret_load_or_create(var_dir, SERVICE_KEY_FILE);

    if (key == NULL)
        return -1;
    int rc = crypto_generichash(key_hash, sizeof key_hash, (const unsigned char *)key,
                                strlen(key), NULL, 0);
    sodium_memzero(key, strlen(key));
    free(key);
    loaded = rc == 0;
    return rc == 0 ? 0 : -1;
}

void service_shutdown(void)
{
    sodium_memzero(key_hash, sizeof key_hash);
    loaded = false;
}

bool service_check(const char *authorization)
{
    const char *token = auth_bearer_token(authorization);
    unsigned char h[crypto_generichash_BYTES];

    if (!loaded || token == NULL ||
        crypto_generichash(h, sizeof h, (const unsigned char *)token, strlen(token), NULL, 0) != 0)
        return false;
    bool same = sodium_memcmp(h, key_hash, sizeof h) == 0;
    sodium_memzero(h, sizeof h);
    return same;
}

void service_caller(struct user *u)
{
    memset(u, 0, sizeof *u);
    memcpy(u->id, "service", sizeof "service");
    memcpy(u->role, "service", sizeof "service");
}
