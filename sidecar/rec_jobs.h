/* Recommendation jobs: what the sidecar computes for serving from serving's
 * own counts, off the request path (README "Recommendation").
 *
 *   - popularity: the views counted in the last ADSERVE_POPULAR_HOURS
 *     hashes adserve:pop:{hour}, summed per serving context and ranked;
 *     each context's top ADSERVE_POPULAR_ITEMS_MAX become its popular_items
 *     record, a serving kind (the change log carries it to every node),
 *     written only when it changed, so an idle catalog does not make
 *     nodes rebuild. The hour hashes get their expiry here.
 *   - co-view: every user's history (adserve:rh:*, SCANned), each item
 *     they viewed and each one they viewed after it within
 *     ADSERVE_COVIEW_SECONDS; per item, the items most users viewed next
 *     become its coview_pools record, the pool the algorithm coview
 *     serves. Written, like popularity, only when it changed.
 *
 * A thread runs them every ADSERVE_REC_JOBS_INTERVAL seconds; with several
 * sidecars on one Redis, a lock lets one of them run per interval.
 * POST /api/recommendation-jobs/run runs them at once. */
#ifndef ADSERVE_REC_JOBS_H
#define ADSERVE_REC_JOBS_H

#include "store.h"

#include <time.h>

struct rec_jobs_report {
    long long views;            /* (context, item) view counts read */
    long contexts;              /* contexts ranked */
    long written, removed;      /* popular_items records changed */
    long long histories;        /* users' histories read */
    long sources;               /* items with a co-view pool */
    long pools_written, pools_removed;  /* coview_pools records changed */
};

/* Runs the jobs once, at now, on c. */
enum store_status rec_jobs_run(struct store_conn *c, time_t now, struct rec_jobs_report *r);

/* The timer: every interval seconds (0: never). -1 when the thread could
 * not start. */
int rec_jobs_start(long interval);
void rec_jobs_stop(void);

#endif
