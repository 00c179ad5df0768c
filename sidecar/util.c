#include "util.h"

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

/* n decimal digits exactly (no sign, no blank) */
static int digits(const char *s, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        *v = *v * 10 + (s[i] - '0');
    }
    return 0;
}

static int days_in_month(int y, int m)
{
    static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

    return m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) ? 29 : days[m - 1];
}

/* days since 1970-01-01, proleptic Gregorian (H. Hinnant) */
static long long days_from_civil(long long y, unsigned m, unsigned d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

int rfc3339_parse(const char *s, long long *t)
{
    int y, mo, d, h, mi, sec, oh, om, off;

    if (s == NULL || strlen(s) < 20 || digits(s, 4, &y) || s[4] != '-' ||
        digits(s + 5, 2, &mo) || s[7] != '-' || digits(s + 8, 2, &d) ||
        (s[10] != 'T' && s[10] != 't') || digits(s + 11, 2, &h) || s[13] != ':' ||
        digits(s + 14, 2, &mi) || s[16] != ':' || digits(s + 17, 2, &sec) ||
        mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 ||
        sec > 60)
        return -1;
    s += 19;
    if (*s == '.') {
        if (s[1] < '0' || s[1] > '9')
            return -1;
        do
            s++;
        while (*s >= '0' && *s <= '9');
    }
    if ((*s == 'Z' || *s == 'z') && s[1] == '\0')
        off = 0;
    else if ((*s == '+' || *s == '-') && strlen(s) == 6 && digits(s + 1, 2, &oh) == 0 &&
             s[3] == ':' && digits(s + 4, 2, &om) == 0 && oh < 24 && om < 60)
        off = (*s == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    else
        return -1;
    *t = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + sec - off;
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
