/* POST /api/recommendation-jobs/run: the recommendation jobs (rec_jobs.h)
 * now, rather than at the timer's next tick: for an operator who wants a
 * fresh popularity ranking, and for tests. Admins and operators. */
#include "api.h"

#include "rec_jobs.h"
#include "schema.h"

#include <time.h>

static void api_rec_jobs_run(struct request *req, struct reply *rep)
{
    struct rec_jobs_report r;
    enum store_status st = rec_jobs_run(request_store(req), time(NULL), &r);
    cJSON *body;

    if (st != STORE_OK) {
        reply_store_error(rep, st);
        return;
    }
    body = cJSON_CreateObject();
    if (body != NULL && (cJSON_AddNumberToObject(body, "views", (double)r.views) == NULL ||
                         cJSON_AddNumberToObject(body, "contexts", (double)r.contexts) == NULL ||
                         cJSON_AddNumberToObject(body, "written", (double)r.written) == NULL ||
                         cJSON_AddNumberToObject(body, "removed", (double)r.removed) == NULL)) {
        cJSON_Delete(body);
        body = NULL;
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
    { NULL },
};
static const struct schema report = {
    .name = "RecommendationJobsReport", .type = SCHEMA_OBJECT, .fields = report_fields,
};
static const int run_errors[] = { 401, 403, 503, 0 };
static const struct route_doc run_doc = {
    .tag = "AssociatedItemsPool", .response = &report, .status = 200, .errors = run_errors,
    .summary = "Rank each serving context's popular items now (the popular fallback), from "
               "the views serving counted in the last 24 hours; the sidecar also does it "
               "every ADSERVE_REC_JOBS_INTERVAL seconds",
};

const struct route rec_jobs_routes[] = {
    { "POST", "/api/recommendation-jobs/run", api_rec_jobs_run, ROLE_ADMIN | ROLE_OPERATOR,
      BODY_NONE, &run_doc },
};
const size_t rec_jobs_routes_count = sizeof rec_jobs_routes / sizeof rec_jobs_routes[0];
