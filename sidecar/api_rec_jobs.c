/* POST /api/recommendation-jobs/run: the recommendation jobs (rec_jobs.h)
 * now, rather than at the timer's next tick: for an operator who wants
 * fresh rankings, and for tests. Admins and operators; a scheduler calls
 * the same handler at POST /api/internal/recommendation-jobs/run. */
#include "api.h"

#include "rec_jobs.h"
#include "schema.h"

#include <time.h>

void api_rec_jobs_run(struct request *req, struct reply *rep)
{
    struct rec_jobs_report r;
    enum store_status st = rec_jobs_run(request_store(req), time(NULL), &r);
    cJSON *body;

    if (st != STORE_OK) {
        reply_store_error(rep, st);
        return;
    }
    const struct { const char *name; double v; } fields[] = {
        { "views", (double)r.views },         { "contexts", (double)r.contexts },
        { "written", (double)r.written },     { "removed", (double)r.removed },
        { "histories", (double)r.histories }, { "sources", (double)r.sources },
        { "pools_written", (double)r.pools_written },
        { "pools_removed", (double)r.pools_removed },
    };
    body = cJSON_CreateObject();
    for (size_t i = 0; body != NULL && i < sizeof fields / sizeof fields[0]; i++) {
        if (cJSON_AddNumberToObject(body, fields[i].name, fields[i].v) == NULL) {
            cJSON_Delete(body);
            body = NULL;
        }
    }
    reply_json(rep, 200, body);
}

static const struct schema count = { .type = SCHEMA_INTEGER, .has_min = true, .min = 0 };
static const struct schema_field report_fields[] = {
    { "views", &count, .required = true,
      .description = "the (context, item) view counts of the window's hours read" },
    { "contexts", &count, .required = true, .description = "the serving contexts ranked" },
    { "written", &count, .required = true,
      .description = "popular_items records that changed (serving follows within a second)" },
    { "removed", &count, .required = true,
      .description = "contexts with no view in the window any more" },
    { "histories", &count, .required = true, .description = "users' view histories read" },
    { "sources", &count, .required = true, .description = "items with a co-view pool" },
    { "pools_written", &count, .required = true,
      .description = "co-view pools that changed (the algorithm coview serves them)" },
    { "pools_removed", &count, .required = true,
      .description = "items no user viewed anything after any more" },
    { NULL },
};
const struct schema schema_rec_jobs_report = {
    .name = "RecommendationJobsReport", .type = SCHEMA_OBJECT, .fields = report_fields,
};
static const int run_errors[] = { 401, 403, 503, 0 };
static const struct route_doc run_doc = {
    .tag = "AssociatedItemsPool", .response = &schema_rec_jobs_report, .status = 200, .errors = run_errors,
    .summary = "Run the recommendation jobs now: each serving context's popular items (the "
               "popular fallback) from the views of the last 24 hours, and each item's co-view "
               "pool (the algorithm coview) from the users' view histories; the sidecar also "
               "runs them every ADSERVE_REC_JOBS_INTERVAL seconds",
};

const struct route rec_jobs_routes[] = {
    { "POST", "/api/recommendation-jobs/run", api_rec_jobs_run, ROLE_ADMIN | ROLE_OPERATOR,
      BODY_NONE, &run_doc },
};
const size_t rec_jobs_routes_count = sizeof rec_jobs_routes / sizeof rec_jobs_routes[0];
