/*
 * adserve_token: the encrypted, authenticated tracking token (`ad_log`).
 *
 * token = base64url( kid | nonce[12] | AES-256-GCM(payload) | tag[16] )
 *
 * The key file names one or more keys, one per line, "<kid> <64 hex digits>";
 * '#' starts a comment. The first key encrypts; every listed key decrypts,
 * so a key can be rotated by putting the new one first and keeping the old
 * one listed for as long as its tokens may come back.
 *
 * The nonce is a random 8-byte prefix per process and a 4-byte counter; the
 * prefix is drawn again before the counter wraps, so no nonce repeats under
 * a key. The nonce also serves as the request id.
 */

#ifndef ADSERVE_TOKEN_H
#define ADSERVE_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "adserve_contract.h"
#include "adserve_json.h"

#define ADSERVE_TOKEN_KEYS      8
#define ADSERVE_TOKEN_NONCE     12
#define ADSERVE_TOKEN_TAG       16
#define ADSERVE_TOKEN_ID_MAX    64      /* longest id that fits in a token */
#define ADSERVE_TOKEN_USER_MAX  256
/* "{experiment id}/{variant id}" */
#define ADSERVE_TOKEN_VARIANT_MAX  (ADSERVE_TOKEN_ID_MAX + 1 + ADSERVE_VARIANT_ID_MAX)

/* an external win's billing notice (its burl, macros filled) */
#define ADSERVE_TOKEN_BURL_MAX  2048

/* payload: version, issued, price, 3 ids and the user, each length-prefixed,
 * then trailers, each written only when it or one after it is not empty
 * (tokens without them are as they were before, and still decode): the
 * variant, an external win's ad source and its burl */
#define ADSERVE_TOKEN_PAYLOAD_MAX \
    (1 + 8 + 8 + 1 + 3 * (1 + ADSERVE_TOKEN_ID_MAX) + 2 + ADSERVE_TOKEN_USER_MAX \
     + 1 + ADSERVE_TOKEN_VARIANT_MAX + 1 + ADSERVE_TOKEN_ID_MAX + 2 + ADSERVE_TOKEN_BURL_MAX)
#define ADSERVE_TOKEN_RAW_MAX \
    (1 + ADSERVE_TOKEN_NONCE + ADSERVE_TOKEN_PAYLOAD_MAX + ADSERVE_TOKEN_TAG)
#define ADSERVE_TOKEN_MAX       ((ADSERVE_TOKEN_RAW_MAX + 2) / 3 * 4)
#define ADSERVE_TOKEN_BUF       (ADSERVE_TOKEN_MAX / 4 * 3)  /* decode buffer */

typedef struct {
    uint8_t        kid;
    unsigned char  key[32];
    void          *gcm;             /* libsodium's expanded key
                                     * (crypto_aead_aes256gcm_state), keyed
                                     * once per process; NULL without
                                     * AES-NI: then EVP's contexts */
    void          *enc;             /* EVP_CIPHER_CTX, keyed once per process */
    void          *dec;
} adserve_token_key_t;

typedef struct {
    adserve_token_key_t  keys[ADSERVE_TOKEN_KEYS];
    int                  nkeys;
    int                  evp_only;  /* set before start: OpenSSL's EVP
                                     * even with AES-NI (the tests'
                                     * check that both agree) */
    unsigned char        prefix[8];
    uint32_t             counter;
} adserve_tokens_t;

typedef struct {
    unsigned char   request_id[ADSERVE_TOKEN_NONCE];   /* set by encode */
    int64_t         issued;                           /* unix seconds */
    uint64_t        price_micros;                     /* rate x 1e6 */
    uint8_t         cost_type;                        /* adserve_cost_e */
    adserve_str_t   ad_unit;
    adserve_str_t   line_item;
    adserve_str_t   creative;
    adserve_str_t   user;                             /* may be empty */
    adserve_str_t   variant;                          /* the experiment's
                                                       * variant that served
                                                       * it, or empty */
    adserve_str_t   source;                           /* an external win's
                                                       * ad source (line_item
                                                       * empty), or empty */
    adserve_str_t   burl;                             /* its billing notice,
                                                       * or empty */
} adserve_ad_log_t;

/* Parses a key file's text; 0, or -1 with a message in err. */
int adserve_tokens_parse(adserve_tokens_t *t, const char *text, size_t len,
    char *err, size_t errlen);

/* Per process (after fork): the keys' cipher states (libsodium's AES-GCM
 * where the CPU has AES-NI, else OpenSSL's EVP: the same cipher, each
 * opens the other's tokens) and a fresh nonce prefix. */
int adserve_tokens_start(adserve_tokens_t *t);
void adserve_tokens_stop(adserve_tokens_t *t);

/* Writes the token to out (ADSERVE_TOKEN_MAX bytes); returns its length,
 * or 0 when an id is too long or the cipher failed. */
size_t adserve_token_encode(adserve_tokens_t *t, adserve_ad_log_t *log, char *out);

/* Decodes and authenticates; the log's strings point into buf
 * (ADSERVE_TOKEN_BUF bytes). 0, or -1 for any forged, altered or
 * unknown-key token. */
int adserve_token_decode(adserve_tokens_t *t, const char *tok, size_t len,
    adserve_ad_log_t *log, unsigned char *buf);

#endif
