/* Small helpers with no project state: randomness, ids, time. */
#ifndef ADSERVE_UTIL_H
#define ADSERVE_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#define UUID_STR_LEN 37      /* 36 characters + NUL */
#define RFC3339_LEN 21       /* "2024-01-31T12:34:56Z" + NUL */

/* Fills out with nbytes (at most 64) of CSPRNG output, hex-encoded; outlen
 * must be at least 2 * nbytes + 1.  Requires sodium_init().  0 or -1. */
int random_hex(char *out, size_t outlen, size_t nbytes);

/* A random (version 4, RFC 4122) UUID in lower-case canonical form. */
void uuid_v4(char out[UUID_STR_LEN]);

/* Unix seconds as UTC RFC 3339 with second precision ("2024-01-31T12:34:56Z";
 * years 0 to 9999). 0 or -1. */
int rfc3339_format(long long t, char out[RFC3339_LEN]);

/* The current UTC time, as rfc3339_format writes it. 0 or -1. */
int now_rfc3339(char out[RFC3339_LEN]);

/* An RFC 3339 date-time as unix seconds: adserve_parse_time (the
 * contract's, which serving uses too). 0, or -1 when it is not one. */
int rfc3339_parse(const char *s, long long *t);

/* Whether s is a UUID in canonical form (any version, either case). */
int is_uuid(const char *s);

/* Monotonic milliseconds, for durations only. */
double monotonic_ms(void);

/* Copies src into dst (size dstlen); -1 when it does not fit. */
int copy_str(char *dst, size_t dstlen, const char *src);

#endif
