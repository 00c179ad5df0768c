#include "ratelimit.h"

#include <arpa/inet.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define KEY_MAX 128

const struct rate_limit limit_login_pair = { "login_pair", 5, 15 * 60 };
/* the same counter, held to 1 while its account is under attack */
const struct rate_limit limit_login_pair_attacked = { "login_pair", 1, 15 * 60 };
const struct rate_limit limit_login_account = { "login_account", 50, 15 * 60 };
const struct rate_limit limit_login_client = { "login_client", 20, 15 * 60 };
const struct rate_limit limit_login_attempts = { "login_attempts", 60, 60 };
const struct rate_limit limit_reset_address = { "reset_address", 3, 3600 };
const struct rate_limit limit_reset_client = { "reset_client", 10, 3600 };

/* A textual IPv4 or IPv6 address, as nginx writes $remote_addr. */
static bool is_ip(const char *s)
{
    unsigned char buf[sizeof(struct in6_addr)];

    return s != NULL && strlen(s) < CLIENT_ADDR_LEN &&
           (inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1);
}

#define PROXY_TOKEN_MIN 32

static char proxy_token[128];

int ratelimit_init(const char *token)
{
    if (token == NULL || token[0] == '\0')
        return 0;
    if (strlen(token) < PROXY_TOKEN_MIN || strlen(token) >= sizeof proxy_token)
        return -1;
    memcpy(proxy_token, token, strlen(token) + 1);
    return 0;
}

/* X-Adserve-Proxy equals the secret (in constant time: it is one) */
static bool from_our_proxy(const struct request *req)
{
    const char *given = request_header(req, "X-Adserve-Proxy");
    size_t n = strlen(proxy_token);

    return n > 0 && given != NULL && strlen(given) == n &&
           sodium_memcmp(given, proxy_token, n) == 0;
}

int request_client(const struct request *req, char out[CLIENT_ADDR_LEN])
{
    const char *real = request_header(req, "X-Real-IP");

    if (from_our_proxy(req) && is_ip(real)) {
        memcpy(out, real, strlen(real) + 1);
        return 0;
    }
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci == NULL || ci->client_addr == NULL)
        return -1;
    const struct sockaddr *sa = ci->client_addr;
    const void *addr = sa->sa_family == AF_INET6
                           ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
                           : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;
    return inet_ntop(sa->sa_family, addr, out, CLIENT_ADDR_LEN) != NULL ? 0 : -1;
}

static int limit_key(char key[KEY_MAX], const struct rate_limit *l, const char *subject)
{
    unsigned char digest[crypto_hash_sha256_BYTES];
    char hex[2 * crypto_hash_sha256_BYTES + 1];

    if (crypto_hash_sha256(digest, (const unsigned char *)subject, strlen(subject)) != 0)
        return -1;
    sodium_bin2hex(hex, sizeof hex, digest, sizeof digest);
    int n = snprintf(key, KEY_MAX, ADSERVE_KEY_RATELIMIT "%s:%s", l->name, hex);
    return n > 0 && n < KEY_MAX ? 0 : -1;
}

/* An integer reply of one command, or a string holding one. */
static enum store_status int_cmd(struct store_conn *c, const char *const *argv, long long *out)
{
    redisReply *r;
    enum store_status st = store_cmd(c, &r, argv);

    if (st != STORE_OK)
        return st;
    *out = 0;
    if (r->type == REDIS_REPLY_INTEGER)
        *out = r->integer;
    else if (r->type == REDIS_REPLY_STRING)
        *out = strtoll(r->str, NULL, 10);
    else if (r->type != REDIS_REPLY_NIL)
        st = STORE_ERROR;
    freeReplyObject(r);
    return st;
}

enum store_status ratelimit_check(struct store_conn *c, const struct rate_limit *l,
                                  const char *subject, long *retry_after)
{
    char key[KEY_MAX];
    long long count, ttl_ms;

    *retry_after = 0;
    if (limit_key(key, l, subject) != 0)
        return STORE_ERROR;
    enum store_status st = int_cmd(c, (const char *[]){ "GET", key, NULL }, &count);
    if (st != STORE_OK || count < l->max)
        return st;
    st = int_cmd(c, (const char *[]){ "PTTL", key, NULL }, &ttl_ms);
    if (st != STORE_OK)
        return st;
    /* -2: expired since the GET; -1 cannot happen (see ratelimit_hit). */
    if (ttl_ms == -2)
        return STORE_OK;
    *retry_after = ttl_ms > 0 ? (long)((ttl_ms + 999) / 1000) : l->window;
    return STORE_OK;
}

enum store_status ratelimit_hit(struct store_conn *c, const struct rate_limit *l,
                                const char *subject, bool *over)
{
    char key[KEY_MAX], window[24];
    long long count, set;

    *over = false;
    if (limit_key(key, l, subject) != 0)
        return STORE_ERROR;
    snprintf(window, sizeof window, "%ld", l->window);
    enum store_status st = int_cmd(c, (const char *[]){ "INCR", key, NULL }, &count);
    /* NX: the window starts at the first event and is never extended; a
     * counter left without a TTL (a crash between the two) gets it here. */
    if (st == STORE_OK)
        st = int_cmd(c, (const char *[]){ "EXPIRE", key, window, "NX", NULL }, &set);
    if (st == STORE_OK)
        *over = count > l->max;
    return st;
}

enum store_status ratelimit_clear(struct store_conn *c, const struct rate_limit *l,
                                  const char *subject)
{
    char key[KEY_MAX];

    if (limit_key(key, l, subject) != 0)
        return STORE_ERROR;
    return store_do(c, (const char *[]){ "DEL", key, NULL });
}
