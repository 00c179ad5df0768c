#include "prom.h"

#include "adserve_contract.h"
#include "json_util.h"
#include "log.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* every route of route_tables has a row, and one more for requests that
 * matched none; more routes than this count as that row (the check at
 * start-up says so) */
#define PROM_ROUTES 256
#define PROM_UNMATCHED PROM_ROUTES

/* the statuses that get a label of their own; any other is "other" */
static const int statuses[] = { 200, 201, 204, 304, 400, 401, 403, 404, 405, 409, 412, 413,
                                415, 422, 429, 500, 502, 503 };
#define PROM_STATUSES (sizeof statuses / sizeof statuses[0] + 1)

static const unsigned bounds_ms[ADSERVE_LATENCY_NBUCKETS] = ADSERVE_LATENCY_BUCKETS_MS;

static const char *const auth_reasons[PROM_AUTH_COUNT] = {
    "credentials", "throttled", "token", "role"
};
static const char *const mail_outcomes[PROM_MAIL_COUNT] = { "sent", "outbox", "lost" };

static struct {
    _Atomic uint64_t requests[PROM_ROUTES + 1][PROM_STATUSES];
    _Atomic uint64_t latency[PROM_ROUTES + 1][ADSERVE_LATENCY_NBUCKETS + 1];
    _Atomic uint64_t latency_us[PROM_ROUTES + 1];
    _Atomic uint64_t auth[PROM_AUTH_COUNT];
    _Atomic uint64_t mails[PROM_MAIL_COUNT];
    time_t started;
} P;

void prom_start(void)
{
    size_t routes = 0;

    for (size_t t = 0; t < route_tables_count; t++)
        routes += *route_tables[t].count;
    if (routes > PROM_ROUTES)
        log_line("metrics: %zu routes, the last %zu counted as unmatched: raise PROM_ROUTES",
                 routes, routes - PROM_ROUTES);
    P.started = time(NULL);
}

time_t prom_started_at(void)
{
    return P.started;
}

static void add(_Atomic uint64_t *v, uint64_t n)
{
    atomic_fetch_add_explicit(v, n, memory_order_relaxed);
}

static uint64_t get(_Atomic uint64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

/* a route's row: its place across route_tables */
static size_t route_row(const struct route *route)
{
    size_t row = 0;

    for (size_t t = 0; route != NULL && t < route_tables_count; t++) {
        const struct route *first = route_tables[t].routes;
        size_t n = *route_tables[t].count;

        if (route >= first && route < first + n)
            return row + (size_t)(route - first) < PROM_ROUTES ? row + (size_t)(route - first)
                                                                : PROM_UNMATCHED;
        row += n;
    }
    return PROM_UNMATCHED;
}

static const struct route *row_route(size_t row)
{
    for (size_t t = 0; t < route_tables_count; t++) {
        size_t n = *route_tables[t].count;

        if (row < n)
            return &route_tables[t].routes[row];
        row -= n;
    }
    return NULL;
}

static size_t status_slot(int status)
{
    for (size_t i = 0; i < PROM_STATUSES - 1; i++)
        if (statuses[i] == status)
            return i;
    return PROM_STATUSES - 1;
}

void prom_request(const struct route *route, int status, double ms)
{
    size_t row = route_row(route), b = 0;

    while (b < ADSERVE_LATENCY_NBUCKETS && ms > bounds_ms[b])
        b++;
    add(&P.requests[row][status_slot(status)], 1);
    add(&P.latency[row][b], 1);
    add(&P.latency_us[row], ms > 0 ? (uint64_t)(ms * 1000) : 0);
}

void prom_auth_failure(enum prom_auth reason)
{
    add(&P.auth[reason], 1);
}

void prom_mail(enum prom_mail outcome)
{
    add(&P.mails[outcome], 1);
}

/* route="…",method="…" of a row */
static void route_labels(FILE *f, size_t row)
{
    const struct route *r = row_route(row);

    if (row == PROM_UNMATCHED || r == NULL)
        fputs("route=\"unmatched\",method=\"\"", f);
    else
        fprintf(f, "route=\"%s\",method=\"%s\"", r->pattern, r->method);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void print_requests(FILE *f)
{
    family(f, "adserve_api_requests_total", "counter",
           "API requests answered, by route pattern, method and status (route \"unmatched\": "
           "no route had the path or the method).");
    for (size_t row = 0; row <= PROM_ROUTES; row++)
        for (size_t s = 0; s < PROM_STATUSES; s++) {
            uint64_t n = get(&P.requests[row][s]);
            if (n == 0)
                continue;
            fputs("adserve_api_requests_total{", f);
            route_labels(f, row);
            if (s < PROM_STATUSES - 1)
                fprintf(f, ",status=\"%d\"} %llu\n", statuses[s], (unsigned long long)n);
            else
                fprintf(f, ",status=\"other\"} %llu\n", (unsigned long long)n);
        }
}

static void print_latency(FILE *f)
{
    family(f, "adserve_api_request_duration_seconds", "histogram",
           "From a request's arrival to its answer being queued, by route.");
    for (size_t row = 0; row <= PROM_ROUTES; row++) {
        uint64_t n = 0, b_n[ADSERVE_LATENCY_NBUCKETS + 1];

        for (size_t b = 0; b <= ADSERVE_LATENCY_NBUCKETS; b++)
            n += b_n[b] = get(&P.latency[row][b]);
        if (n == 0)
            continue;
        n = 0;
        for (size_t b = 0; b <= ADSERVE_LATENCY_NBUCKETS; b++) {
            n += b_n[b];
            fputs("adserve_api_request_duration_seconds_bucket{", f);
            route_labels(f, row);
            if (b < ADSERVE_LATENCY_NBUCKETS)
                fprintf(f, ",le=\"%u.%03u\"} %llu\n", bounds_ms[b] / 1000, bounds_ms[b] % 1000,
                        (unsigned long long)n);
            else
                fprintf(f, ",le=\"+Inf\"} %llu\n", (unsigned long long)n);
        }
        uint64_t us = get(&P.latency_us[row]);
        fputs("adserve_api_request_duration_seconds_sum{", f);
        route_labels(f, row);
        fprintf(f, "} %llu.%06llu\nadserve_api_request_duration_seconds_count{",
                (unsigned long long)(us / 1000000), (unsigned long long)(us % 1000000));
        route_labels(f, row);
        fprintf(f, "} %llu\n", (unsigned long long)n);
    }
}

static void print_rest(FILE *f)
{
    family(f, "adserve_api_auth_failures_total", "counter",
           "Requests refused their caller: credentials (a sign-in with a wrong email or "
           "password), throttled (a sign-in refused with 429), token (no token, or an "
           "invalid, expired or revoked one), role (a role that may not use the route).");
    for (size_t i = 0; i < PROM_AUTH_COUNT; i++)
        fprintf(f, "adserve_api_auth_failures_total{reason=\"%s\"} %llu\n", auth_reasons[i],
                (unsigned long long)get(&P.auth[i]));
    family(f, "adserve_api_mails_total", "counter",
           "Mails (password resets), by outcome: sent (the SMTP server took it), outbox "
           "(written to adserve:outbox instead), lost (neither).");
    for (size_t i = 0; i < PROM_MAIL_COUNT; i++)
        fprintf(f, "adserve_api_mails_total{outcome=\"%s\"} %llu\n", mail_outcomes[i],
                (unsigned long long)get(&P.mails[i]));
    family(f, "adserve_api_start_time_seconds", "gauge", "When the sidecar started, Unix time.");
    fprintf(f, "adserve_api_start_time_seconds %lld\n", (long long)P.started);
}

void prom_reply(struct reply *rep)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    if (f == NULL) {
        reply_error(rep, 500, "internal error");
        return;
    }
    print_requests(f);
    print_latency(f);
    print_rest(f);
    if (fclose(f) != 0) {
        free(text);
        reply_error(rep, 500, "internal error");
        return;
    }
    reply_text(rep, 200, ADSERVE_PROMETHEUS_TYPE, text, len);
}
