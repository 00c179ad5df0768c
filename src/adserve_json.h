/* adserve_json.h -- strict, allocation-free JSON scanner for ad requests.
 *
 * The scanner runs on the hot path of every ad request inside an nginx
 * worker, so it never allocates, bounds its recursion by the maximum
 * nesting depth, uses no locale-dependent libc function and visits every
 * input byte a bounded number of times (linear time).
 *
 * It accepts exactly RFC 8259 JSON whose top-level value is an object,
 * including full UTF-8 validation of strings, and extracts the handful of
 * fields the serving path needs. Everything else is validated and ignored.
 *
 * Plain C99, no nginx or third party dependency: unit-tested standalone
 * (t/unit/json_test.c) and compiled into the module with nginx's flags. */

#ifndef ADSERVE_JSON_H
#define ADSERVE_JSON_H

#include <stddef.h>

/* Containers (objects and arrays) open at once, the top-level object
 * included: 32 is accepted, 33 is an error. */
#define ADSERVE_JSON_MAX_DEPTH  32

/* Limits on extracted fields: values beyond them are ignored (absent),
 * the document is still valid. Lengths are in bytes after unescaping. */
#define ADSERVE_USER_ID_MAX     256
#define ADSERVE_UA_MAX          2048
#define ADSERVE_YOB_MIN         1900
#define ADSERVE_YOB_MAX         2100

typedef struct {
    const char  *data;   /* NULL when absent */
    size_t       len;
} adserve_str_t;

typedef struct {
    adserve_str_t  version;   /* top-level "version" */
    adserve_str_t  user_id;   /* "user": {"id": ...} */
    int            yob;       /* "user": {"yob": ...}; 0 when absent or ignored */
    char           gender;    /* "user": {"gender": "M"|"F"|"O"}; 0 when absent or ignored */
    adserve_str_t  ua;        /* "device": {"ua": ...} */
    adserve_str_t  kv;        /* "ext": {"kv": {...}}: the raw JSON text of the kv object, for later use */
    adserve_str_t  item_id;   /* "ext": {"item_id": ...}: the item the user looks at */
    adserve_str_t  context;   /* "ext": {"context": ...}: the serving context */
} adserve_ad_request_t;

/* Validates buf[0..len) as one JSON value that must be an object, and fills req.
 * Returns 0 on success, -1 when the body is not well-formed JSON (or not an object);
 * then *err points to a static message and *err_off to the byte offset of the fault.
 * String values are unescaped IN PLACE (buf is mutable; unescaped text is never longer),
 * so req's strings point into buf and are not NUL-terminated.
 *
 * Details:
 * - Only the extracted string values (version, user.id, device.ua) are
 *   rewritten in buf; keys, gender, unknown members and everything inside
 *   ext.kv are left byte-for-byte intact. A present but empty string has a
 *   non-NULL data and len 0.
 * - A duplicate key replaces the whole previous member, so with
 *   {"user":{"id":"a"},"user":{"yob":1990}} user_id is absent, and a later
 *   wrongly typed duplicate clears what an earlier one set.
 * - On error req is zeroed (all fields absent); buf may already be partly
 *   unescaped. On success *err is set to NULL and *err_off to 0.
 * - err and err_off may be NULL when the caller does not want them.
 * - err_off is the offset of the offending byte; for a bad escape it is the
 *   offset of its backslash, for bad UTF-8 that of the sequence's first
 *   byte, and for input that ends too early it is len. */
int adserve_json_parse_ad_request(char *buf, size_t len, adserve_ad_request_t *req,
    const char **err, size_t *err_off);

#endif
