#include "util.h"

#include "adserve_contract.h"

#include <ctype.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int random_hex(char *out, size_t outlen, size_t nbytes)
{
    unsigned char buf[64];

    if (nbytes > sizeof buf || outlen < 2 * nbytes + 1)
        return -1;
    randombytes_buf(buf, nbytes);
    sodium_bin2hex(out, outlen, buf, nbytes);
    sodium_memzero(buf, sizeof buf);
    return 0;
}

void uuid_v4(char out[UUID_STR_LEN])
{
    unsigned char b[16];

    randombytes_buf(b, sizeof b);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);   /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);   /* RFC 4122 variant */
    snprintf(out, UUID_STR_LEN,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
             b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

int rfc3339_format(long long t, char out[RFC3339_LEN])
{
    time_t tt = (time_t)t;
    struct tm tm;

    if (gmtime_r(&tt, &tm) == NULL || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999)
        return -1;
    return strftime(out, RFC3339_LEN, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0 ? -1 : 0;
}

int now_rfc3339(char out[RFC3339_LEN])
{
    time_t t = time(NULL);

    return t == (time_t)-1 ? -1 : rfc3339_format(t, out);
}

double monotonic_ms(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0.0;
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

int copy_str(char *dst, size_t dstlen, const char *src)
{
    size_t n = strlen(src);

    if (n >= dstlen)
        return -1;
    memcpy(dst, src, n + 1);
    return 0;
}

/* The contract's parser, for the sidecar's long long times. */
int rfc3339_parse(const char *s, long long *t)
{
    int64_t v;

    if (adserve_parse_time(s, &v) != 0)
        return -1;
    *t = v;
    return 0;
}

int is_uuid(const char *s)
{
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
            return 0;
    }
    return s[36] == '\0';
}
