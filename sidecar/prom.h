/* The sidecar's metrics for Prometheus: GET /metrics on the sidecar's own
 * loopback port (nginx proxies only /api/, so it is never exposed), in the
 * text format (README "Monitoring"). Counters are atomics: the HTTP
 * threads and the mail thread count without a lock. */
#ifndef ADSERVE_PROM_H
#define ADSERVE_PROM_H

#include "http.h"
#include "router.h"

#include <time.h>

#define PROM_PATH "/metrics"

/* why a request was refused its caller (adserve_api_auth_failures_total) */
enum prom_auth {
    PROM_AUTH_CREDENTIALS,  /* a sign-in with a wrong email or password */
    PROM_AUTH_THROTTLED,    /* a sign-in refused with 429 */
    PROM_AUTH_TOKEN,        /* no token, or an invalid, expired or revoked one: 401 */
    PROM_AUTH_ROLE,         /* a token whose role may not use the route: 403 */
    PROM_AUTH_COUNT
};

/* what became of a mail (adserve_api_mails_total) */
enum prom_mail {
    PROM_MAIL_SENT,         /* the SMTP server took it */
    PROM_MAIL_OUTBOX,       /* written to adserve:outbox instead */
    PROM_MAIL_LOST,         /* neither */
    PROM_MAIL_COUNT
};

void prom_start(void);
/* when prom_start ran: the process's start, for /api/system too */
time_t prom_started_at(void);
/* a request's answer queued, ms after it arrived: route NULL when it
 * matched none (404, 405) */
void prom_request(const struct route *route, int status, double ms);
void prom_auth_failure(enum prom_auth reason);
void prom_mail(enum prom_mail outcome);
/* the document, into rep */
void prom_reply(struct reply *rep);

#endif
