/* Fixed-window counters in Redis, for sign-ins and reset mails.
 *
 *   adserve:ratelimit:{limit name}:{SHA-256 of the subject, hex}
 *
 * a counter that expires window seconds after its first event (the
 * subject, an email address, a client address or both, is hashed so that
 * no address is stored in a key name).  The limits (README "Failed
 * logins"), after OWASP's advice: failures shut out the place they come
 * from, never the account's owner signing in from elsewhere.
 *
 *   login_pair       5 failed logins per account and client per 15 min -> 429
 *                    (1 while the account is under attack, below)
 *   login_client    20 failed logins per client per 15 min            -> 429
 *   login_account   50 failed logins per account per 15 min: under attack
 *   login_attempts  60 sign-ins per client per minute, failed or not  -> 429
 *   reset_address    3 reset mails per address per hour               -> not sent
 *   reset_client    10 reset mails per client per hour                -> not sent */
#ifndef ADSERVE_RATELIMIT_H
#define ADSERVE_RATELIMIT_H

#include "http.h"
#include "store.h"

#include <netinet/in.h>
#include <stdbool.h>

struct rate_limit {
    const char *name;
    long max;            /* events allowed per window */
    long window;         /* seconds */
};

extern const struct rate_limit limit_login_pair, limit_login_pair_attacked;
extern const struct rate_limit limit_login_account, limit_login_client, limit_login_attempts;
extern const struct rate_limit limit_reset_address, limit_reset_client;

#define CLIENT_ADDR_LEN INET6_ADDRSTRLEN

/* The client: the X-Real-IP header, when the request came through our
 * nginx (it proves it with X-Adserve-Proxy, a secret of the runtime folder:
 * any local process can reach the sidecar's port, and could otherwise
 * claim a new address per request); else the peer address.  0 or -1. */
int request_client(const struct request *req, char out[CLIENT_ADDR_LEN]);

/* The proxy secret (ADSERVE_PROXY_TOKEN), kept for request_client; NULL or
 * "" trusts no X-Real-IP at all.  0, or -1 when it is too short. */
int ratelimit_init(const char *proxy_token);

/* Whether subject has used up its limit: *retry_after is the seconds
 * until the window ends (at least 1), or 0 when it has not. */
enum store_status ratelimit_check(struct store_conn *c, const struct rate_limit *l,
                                  const char *subject, long *retry_after);

/* Counts one event; *over is true when it goes beyond the limit. */
enum store_status ratelimit_hit(struct store_conn *c, const struct rate_limit *l,
                                const char *subject, bool *over);

/* Forgets subject's events. */
enum store_status ratelimit_clear(struct store_conn *c, const struct rate_limit *l,
                                  const char *subject);

#endif
