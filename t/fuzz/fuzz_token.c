/* libFuzzer: the ad_log token of every tracking URL, which anyone can
 * send: base64url decoding and AES-GCM authentication must refuse what
 * they do not accept, and read nothing past the input; under both
 * ciphers (libsodium's, where the CPU has AES-NI, and OpenSSL's EVP),
 * which must agree. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adserve_token.h"

#define KEY "1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"

static adserve_tokens_t  tokens, evp;


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char  err[128];

    (void) argc;
    (void) argv;

    if (adserve_tokens_parse(&tokens, KEY, sizeof(KEY) - 1, err, sizeof(err)) != 0
        || adserve_tokens_start(&tokens) != 0
        || adserve_tokens_parse(&evp, KEY, sizeof(KEY) - 1, err, sizeof(err)) != 0)
    {
        abort();
    }

    evp.evp_only = 1;
    if (adserve_tokens_start(&evp) != 0) {
        abort();
    }

    return 0;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    adserve_ad_log_t  log;
    unsigned char     buf[ADSERVE_TOKEN_BUF];
    char             *tok = malloc(size ? size : 1);
    int               rc;

    if (tok == NULL) {
        return 0;
    }
    memcpy(tok, data, size);
    rc = adserve_token_decode(&tokens, tok, size, &log, buf);
    if (adserve_token_decode(&evp, tok, size, &log, buf) != rc) {
        abort();
    }
    free(tok);

    return 0;
}
