/* The internal group: service-to-service routes, under the service
 * credential (service.h) and nothing else.
 *
 *   GET  /api/internal/revision                  the serving revision
 *   POST /api/internal/recommendation-jobs/run   the jobs, for a scheduler
 *
 * A deploy script that wrote through the API reads the revision, then
 * waits until every node's /app/v0/status reports it (or a later one); a
 * scheduler that owns the timing of batch work runs the recommendation
 * jobs with ADSERVE_REC_JOBS_INTERVAL=0. */
#include "api.h"

#include "schema.h"

#include <stdlib.h>

static void api_internal_revision(struct request *req, struct reply *rep)
{
    char rev[32] = "0";
    enum store_status st = store_get_str(request_store(req), rev, sizeof rev,
                                         (const char *[]){ "GET", ADSERVE_KEY_REV, NULL });
    cJSON *body = NULL;

    if (st != STORE_OK && st != STORE_NOT_FOUND) {
        reply_store_error(rep, st);
        return;
    }
    char *end;
    long long n = strtoll(rev, &end, 10);
    body = *end == '\0' && n >= 0 ? cJSON_CreateObject() : NULL;
    if (body != NULL && cJSON_AddNumberToObject(body, "revision", (double)n) != NULL)
        reply_json(rep, 200, body);
    else {
        cJSON_Delete(body);
        reply_error(rep, 500, "internal error");
    }
}

static const struct schema whole = { .type = SCHEMA_INTEGER, .min = 0, .has_min = true };
static const struct schema_field revision_fields[] = {
    { "revision", &whole, .required = true,
      .description = "what the nodes' /app/v0/status report once they serve every write made "
                     "so far" },
    { NULL },
};
static const struct schema revision_schema = {
    .name = "InternalRevision", .type = SCHEMA_OBJECT, .fields = revision_fields,
};
static const int errors[] = { 401, 503, 0 };
static const struct route_doc revision_doc = {
    .tag = "internal", .response = &revision_schema, .status = 200, .errors = errors,
    .summary = "The serving revision (the service credential)",
};
static const struct route_doc rec_jobs_doc = {
    .tag = "internal", .response = &schema_rec_jobs_report, .status = 200, .errors = errors,
    .summary = "Run the recommendation jobs now, for a scheduler (the service credential)",
};

const struct route internal_routes[] = {
    { "GET", "/api/internal/revision", api_internal_revision, ROLE_SERVICE, BODY_NONE,
      &revision_doc },
    { "POST", "/api/internal/recommendation-jobs/run", api_rec_jobs_run, ROLE_SERVICE,
      BODY_NONE, &rec_jobs_doc },
};
const size_t internal_routes_count = sizeof internal_routes / sizeof internal_routes[0];
