/*
 * The ad_log token: AES-256-GCM, with libsodium's AES-NI implementation
 * where the CPU has it, else OpenSSL's EVP interface. The same cipher and
 * layout either way: each opens the other's tokens.
 *
 * Each key gets its cipher state once per process, so a token costs one
 * pass over ~150 bytes and no allocation. libsodium's call takes the
 * nonce as an argument: 1,450 instructions a token under callgrind,
 * against 2,500 through EVP, which sets the IV and reads the tag back
 * through the provider's parameters (a serving request is about 25,000).
 */

#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <sodium.h>

#include "adserve_token.h"


#define ADSERVE_TOKEN_VERSION  1


static const char  b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";


static int
hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}


/* one "<kid> <hex key>" line; 1 when it held a key, 0 when blank, -1 bad */
static int
parse_line(const char *p, const char *end, adserve_token_key_t *k)
{
    int  kid = 0, digits = 0, i, hi, lo;

    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    if (p == end || *p == '#') {
        return 0;
    }

    while (p < end && *p >= '0' && *p <= '9' && digits++ < 3) {
        kid = kid * 10 + (*p++ - '0');
    }
    if (digits == 0 || kid > 255 || p == end || (*p != ' ' && *p != '\t')) {
        return -1;
    }
    while (p < end && (*p == ' ' || *p == '\t')) p++;

    if (end - p < 64) {
        return -1;
    }

    for (i = 0; i < 32; i++) {
        hi = hexval(p[2 * i]);
        lo = hexval(p[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return -1;
        }
        k->key[i] = (unsigned char) (hi << 4 | lo);
    }

    for (p += 64; p < end; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\r') {
            return -1;
        }
    }

    k->kid = (uint8_t) kid;

    return 1;
}


int
adserve_tokens_parse(adserve_tokens_t *t, const char *text, size_t len,
    char *err, size_t errlen)
{
    const char           *p = text, *end = text + len, *eol;
    int                   line = 0, rc, i;
    adserve_token_key_t   k;

    memset(t, 0, sizeof(adserve_tokens_t));
    memset(&k, 0, sizeof(adserve_token_key_t));

    while (p < end) {
        line++;
        eol = memchr(p, '\n', end - p);
        if (eol == NULL) {
            eol = end;
        }

        rc = parse_line(p, eol, &k);
        if (rc < 0) {
            snprintf(err, errlen, "line %d is not \"<kid 0-255> <64 hex digits>\"", line);
            return -1;
        }

        if (rc == 1) {
            if (t->nkeys == ADSERVE_TOKEN_KEYS) {
                snprintf(err, errlen, "more than %d keys", ADSERVE_TOKEN_KEYS);
                return -1;
            }

            for (i = 0; i < t->nkeys; i++) {
                if (t->keys[i].kid == k.kid) {
                    snprintf(err, errlen, "line %d repeats key id %d", line, k.kid);
                    return -1;
                }
            }

            t->keys[t->nkeys++] = k;
        }

        p = eol + 1;
    }

    OPENSSL_cleanse(&k, sizeof(adserve_token_key_t));

    if (t->nkeys == 0) {
        snprintf(err, errlen, "no key");
        return -1;
    }

    return 0;
}


/* A fresh random prefix restarts the counter; if none can be had, the old
 * prefix and counter stay, so the counter can never repeat under it. */
static int
new_prefix(adserve_tokens_t *t)
{
    unsigned char  prefix[8];

    if (RAND_bytes(prefix, sizeof(prefix)) != 1) {
        return -1;
    }

    memcpy(t->prefix, prefix, sizeof(prefix));
    t->counter = 0;

    return 0;
}


int
adserve_tokens_start(adserve_tokens_t *t)
{
    adserve_token_key_t  *k;
    int                   i, sodium;

    /* sodium_init() first: it detects the CPU's features */
    sodium = !t->evp_only && sodium_init() >= 0 && crypto_aead_aes256gcm_is_available();

    for (i = 0; i < t->nkeys; i++) {
        k = &t->keys[i];

        if (sodium) {
            /* the state's alignment (16) is more than a pool's */
            k->gcm = aligned_alloc(16, sizeof(crypto_aead_aes256gcm_state));
            if (k->gcm == NULL || crypto_aead_aes256gcm_beforenm(k->gcm, k->key) != 0) {
                adserve_tokens_stop(t);
                return -1;
            }
            continue;
        }

        k->enc = EVP_CIPHER_CTX_new();
        k->dec = EVP_CIPHER_CTX_new();

        if (k->enc == NULL || k->dec == NULL
            || EVP_EncryptInit_ex(k->enc, EVP_aes_256_gcm(), NULL, k->key, NULL) != 1
            || EVP_CIPHER_CTX_ctrl(k->enc, EVP_CTRL_GCM_SET_IVLEN,
                                   ADSERVE_TOKEN_NONCE, NULL) != 1
            || EVP_DecryptInit_ex(k->dec, EVP_aes_256_gcm(), NULL, k->key, NULL) != 1
            || EVP_CIPHER_CTX_ctrl(k->dec, EVP_CTRL_GCM_SET_IVLEN,
                                   ADSERVE_TOKEN_NONCE, NULL) != 1)
        {
            adserve_tokens_stop(t);
            return -1;
        }
    }

    return new_prefix(t);
}


void
adserve_tokens_stop(adserve_tokens_t *t)
{
    int  i;

    for (i = 0; i < t->nkeys; i++) {
        if (t->keys[i].gcm != NULL) {
            sodium_memzero(t->keys[i].gcm, sizeof(crypto_aead_aes256gcm_state));
            free(t->keys[i].gcm);
            t->keys[i].gcm = NULL;
        }
        EVP_CIPHER_CTX_free(t->keys[i].enc);
        EVP_CIPHER_CTX_free(t->keys[i].dec);
        t->keys[i].enc = NULL;
        t->keys[i].dec = NULL;
    }

    OPENSSL_cleanse(t->prefix, sizeof(t->prefix));
}


/* ---- payload ----------------------------------------------------------- */

static unsigned char *
put_u64(unsigned char *p, uint64_t v)
{
    int  i;

    for (i = 0; i < 8; i++) {
        *p++ = (unsigned char) (v >> (8 * i));
    }

    return p;
}


static const unsigned char *
get_u64(const unsigned char *p, uint64_t *v)
{
    int  i;

    *v = 0;
    for (i = 0; i < 8; i++) {
        *v |= (uint64_t) p[i] << (8 * i);
    }

    return p + 8;
}


static unsigned char *
put_str(unsigned char *p, const adserve_str_t *s, size_t lenbytes)
{
    *p++ = (unsigned char) s->len;
    if (lenbytes == 2) {
        *p++ = (unsigned char) (s->len >> 8);
    }

    if (s->len) {
        memcpy(p, s->data, s->len);
    }

    return p + s->len;
}


static const unsigned char *
get_str(const unsigned char *p, const unsigned char *end, adserve_str_t *s,
    size_t lenbytes)
{
    if ((size_t) (end - p) < lenbytes) {
        return NULL;
    }

    s->len = p[0] | (lenbytes == 2 ? (size_t) p[1] << 8 : 0);
    p += lenbytes;

    if ((size_t) (end - p) < s->len) {
        return NULL;
    }

    s->data = (const char *) p;

    return p + s->len;
}


static size_t
pack(const adserve_ad_log_t *log, unsigned char *out)
{
    unsigned char  *p = out;

    *p++ = ADSERVE_TOKEN_VERSION;
    p = put_u64(p, (uint64_t) log->issued);
    p = put_u64(p, log->price_micros);
    *p++ = log->cost_type;
    p = put_str(p, &log->ad_unit, 1);
    p = put_str(p, &log->line_item, 1);
    p = put_str(p, &log->creative, 1);
    p = put_str(p, &log->user, 2);

    /* the trailers: one is written when it or a later one has a value */
    if (log->variant.len || log->source.len || log->burl.len) {
        p = put_str(p, &log->variant, 1);
    }
    if (log->source.len || log->burl.len) {
        p = put_str(p, &log->source, 1);
    }
    if (log->burl.len) {
        p = put_str(p, &log->burl, 2);
    }

    return (size_t) (p - out);
}


static int
unpack(const unsigned char *p, size_t len, adserve_ad_log_t *log)
{
    const unsigned char  *end = p + len;
    adserve_str_t        *last;
    uint64_t              issued;

    if (len < 1 + 8 + 8 + 1 || *p++ != ADSERVE_TOKEN_VERSION) {
        return -1;
    }

    p = get_u64(p, &issued);
    p = get_u64(p, &log->price_micros);
    log->issued = (int64_t) issued;
    log->cost_type = *p++;

    p = get_str(p, end, &log->ad_unit, 1);
    p = p ? get_str(p, end, &log->line_item, 1) : NULL;
    p = p ? get_str(p, end, &log->creative, 1) : NULL;
    p = p ? get_str(p, end, &log->user, 2) : NULL;

    log->variant.data = NULL;
    log->variant.len = 0;
    log->source = log->variant;
    log->burl = log->variant;
    last = NULL;

    if (p != NULL && p < end) {
        p = get_str(p, end, last = &log->variant, 1);
    }
    if (p != NULL && p < end) {
        p = get_str(p, end, last = &log->source, 1);
    }
    if (p != NULL && p < end) {
        p = get_str(p, end, last = &log->burl, 2);
    }

    /* one way to write each token: the last trailer is never empty */
    return p == end && (last == NULL || last->len) ? 0 : -1;
}


/* ---- base64url without padding ----------------------------------------- */

/* The two characters of each 12-bit value, so that three bytes take two
 * lookups instead of four (8 KiB, built by the preprocessor). */
#define B64C(x)                                                               \
    ((x) < 26 ? 'A' + (x) : (x) < 52 ? 'a' + (x) - 26                          \
     : (x) < 62 ? '0' + (x) - 52 : (x) == 62 ? '-' : '_')
#define B64P1(i)     { B64C((i) >> 6), B64C((i) & 63) }
#define B64P4(i)     B64P1(i), B64P1(i + 1), B64P1(i + 2), B64P1(i + 3)
#define B64P16(i)    B64P4(i), B64P4(i + 4), B64P4(i + 8), B64P4(i + 12)
#define B64P64(i)    B64P16(i), B64P16(i + 16), B64P16(i + 32), B64P16(i + 48)
#define B64P256(i)   B64P64(i), B64P64(i + 64), B64P64(i + 128), B64P64(i + 192)
#define B64P1024(i)  B64P256(i), B64P256(i + 256), B64P256(i + 512),         \
                     B64P256(i + 768)

static const char  b64pairs[4096][2] = {
    B64P1024(0), B64P1024(1024), B64P1024(2048), B64P1024(3072)
};


static size_t
b64_encode(const unsigned char *in, size_t len, char *out)
{
    const unsigned char  *last = in + len - len % 3;
    char                 *p = out;
    uint32_t              v;

    while (in != last) {
        v = (uint32_t) in[0] << 16 | (uint32_t) in[1] << 8 | in[2];
        in += 3;

        memcpy(p, b64pairs[v >> 12], 2);
        memcpy(p + 2, b64pairs[v & 0xfff], 2);
        p += 4;
    }

    if (len % 3 == 1) {
        v = (uint32_t) in[0] << 16;
        *p++ = b64url[v >> 18];
        *p++ = b64url[(v >> 12) & 63];

    } else if (len % 3 == 2) {
        v = (uint32_t) in[0] << 16 | (uint32_t) in[1] << 8;
        *p++ = b64url[v >> 18];
        *p++ = b64url[(v >> 12) & 63];
        *p++ = b64url[(v >> 6) & 63];
    }

    return (size_t) (p - out);
}


static int
b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
}


/* returns the decoded length, or -1 */
static long
b64_decode(const char *in, size_t len, unsigned char *out)
{
    unsigned char  *p = out;
    uint32_t        v = 0;
    size_t          i;
    int             d, bits = 0;

    if (len % 4 == 1) {
        return -1;
    }

    for (i = 0; i < len; i++) {
        d = b64_value((unsigned char) in[i]);
        if (d < 0) {
            return -1;
        }

        v = v << 6 | (uint32_t) d;
        bits += 6;

        if (bits >= 8) {
            bits -= 8;
            *p++ = (unsigned char) (v >> bits);
        }
    }

    /* the unused low bits of the last character must be zero, so that
     * every token has exactly one spelling */
    if (v & ((1u << bits) - 1)) {
        return -1;
    }

    return (long) (p - out);
}


/* ---- encode, decode ---------------------------------------------------- */

size_t
adserve_token_encode(adserve_tokens_t *t, adserve_ad_log_t *log, char *out)
{
    unsigned char         raw[ADSERVE_TOKEN_RAW_MAX], *nonce, *ct;
    adserve_token_key_t  *k = &t->keys[0];
    OSSL_PARAM            iv[2], tag[2];
    size_t                n;
    int                   outl;

    if (log->ad_unit.len > ADSERVE_TOKEN_ID_MAX
        || log->line_item.len > ADSERVE_TOKEN_ID_MAX
        || log->creative.len > ADSERVE_TOKEN_ID_MAX
        || log->user.len > ADSERVE_TOKEN_USER_MAX
        || log->variant.len > ADSERVE_TOKEN_VARIANT_MAX
        || log->source.len > ADSERVE_TOKEN_ID_MAX
        || log->burl.len > ADSERVE_TOKEN_BURL_MAX)
    {
        return 0;
    }

    if (t->counter == UINT32_MAX && new_prefix(t) != 0) {
        return 0;
    }

    raw[0] = k->kid;
    nonce = raw + 1;
    memcpy(nonce, t->prefix, sizeof(t->prefix));
    t->counter++;
    nonce[8] = (unsigned char) (t->counter >> 24);
    nonce[9] = (unsigned char) (t->counter >> 16);
    nonce[10] = (unsigned char) (t->counter >> 8);
    nonce[11] = (unsigned char) t->counter;
    memcpy(log->request_id, nonce, ADSERVE_TOKEN_NONCE);

    ct = nonce + ADSERVE_TOKEN_NONCE;
    n = pack(log, ct);

    /* the key id is authenticated too: it cannot be swapped to another key */
    if (k->gcm != NULL) {
        if (crypto_aead_aes256gcm_encrypt_detached_afternm(ct, ct + n, NULL, ct, n, raw, 1,
                                                           NULL, nonce, k->gcm)
            != 0)
        {
            return 0;
        }

        return b64_encode(raw, 1 + ADSERVE_TOKEN_NONCE + n + ADSERVE_TOKEN_TAG, out);
    }

    /*
     * The new IV and the tag go through the provider's parameters: with
     * OpenSSL 3.0, EVP_EncryptInit_ex() asks the provider for the IV length
     * on each call, and the GET_TAG control converts to the same parameters,
     * which together cost more than the encryption of a token. The length
     * (size_t) -1 of the TLS fixed IV parameter sets the whole IV, as
     * EVP_CTRL_GCM_SET_IV_FIXED with -1 does. Either way may fall back.
     */
    iv[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED,
                                              nonce, (size_t) -1);
    iv[1] = OSSL_PARAM_construct_end();
    tag[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
                                               ct + n, ADSERVE_TOKEN_TAG);
    tag[1] = OSSL_PARAM_construct_end();

    if (EVP_CIPHER_CTX_set_params(k->enc, iv) != 1
        && EVP_EncryptInit_ex(k->enc, NULL, NULL, NULL, nonce) != 1)
    {
        return 0;
    }

    if (EVP_EncryptUpdate(k->enc, NULL, &outl, raw, 1) != 1
        || EVP_EncryptUpdate(k->enc, ct, &outl, ct, (int) n) != 1
        || EVP_EncryptFinal_ex(k->enc, ct + n, &outl) != 1)
    {
        return 0;
    }

    if (EVP_CIPHER_CTX_get_params(k->enc, tag) != 1
        && EVP_CIPHER_CTX_ctrl(k->enc, EVP_CTRL_GCM_GET_TAG, ADSERVE_TOKEN_TAG,
                               ct + n) != 1)
    {
        return 0;
    }

    return b64_encode(raw, 1 + ADSERVE_TOKEN_NONCE + n + ADSERVE_TOKEN_TAG, out);
}


int
adserve_token_decode(adserve_tokens_t *t, const char *tok, size_t len,
    adserve_ad_log_t *log, unsigned char *buf)
{
    adserve_token_key_t  *k = NULL;
    unsigned char        *ct;
    long                  raw;
    size_t                n;
    int                   i, outl;

    if (len > ADSERVE_TOKEN_MAX) {
        return -1;
    }

    raw = b64_decode(tok, len, buf);
    if (raw < 1 + ADSERVE_TOKEN_NONCE + ADSERVE_TOKEN_TAG + 1) {
        return -1;
    }

    for (i = 0; i < t->nkeys; i++) {
        if (t->keys[i].kid == buf[0]) {
            k = &t->keys[i];
            break;
        }
    }

    if (k == NULL) {
        return -1;
    }

    ct = buf + 1 + ADSERVE_TOKEN_NONCE;
    n = (size_t) raw - 1 - ADSERVE_TOKEN_NONCE - ADSERVE_TOKEN_TAG;

    if (k->gcm != NULL) {
        /* in place; a bad tag returns -1, what it wrote cleared */
        if (crypto_aead_aes256gcm_decrypt_detached_afternm(ct, NULL, ct, n, ct + n, buf, 1,
                                                           buf + 1, k->gcm)
            != 0)
        {
            return -1;
        }

    } else if (EVP_DecryptInit_ex(k->dec, NULL, NULL, NULL, buf + 1) != 1
        || EVP_DecryptUpdate(k->dec, NULL, &outl, buf, 1) != 1
        || EVP_DecryptUpdate(k->dec, ct, &outl, ct, (int) n) != 1
        || EVP_CIPHER_CTX_ctrl(k->dec, EVP_CTRL_GCM_SET_TAG, ADSERVE_TOKEN_TAG,
                               ct + n) != 1
        || EVP_DecryptFinal_ex(k->dec, ct + n, &outl) != 1)
    {
        return -1;
    }

    memcpy(log->request_id, buf + 1, ADSERVE_TOKEN_NONCE);

    return unpack(ct, n, log);
}
