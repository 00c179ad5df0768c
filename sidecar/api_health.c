#include "api.h"

#include "schema.h"

/* GET /api/health: 200 only when Redis answers, so that run scripts and
 * load balancers wait for a sidecar that can actually serve. */
static void api_health(struct request *req, struct reply *rep)
{
    enum store_status st = store_ping(request_store(req));

    if (st != STORE_OK) {
        reply_store_error(rep, st);
        return;
    }
    cJSON *body = cJSON_CreateObject();
    if (body != NULL && (cJSON_AddStringToObject(body, "status", "ok") == NULL ||
                         cJSON_AddStringToObject(body, "redis", "ok") == NULL)) {
        cJSON_Delete(body);
        body = NULL;
    }
    reply_json(rep, 200, body);
}

static const struct schema ok_text = { .type = SCHEMA_STRING };
static const struct schema_field health_fields[] = {
    { "status", &ok_text, .required = true, .description = "\"ok\"" },
    { "redis", &ok_text, .required = true, .description = "\"ok\"" },
    { NULL },
};
static const struct schema health_schema = {
    .name = "Health", .type = SCHEMA_OBJECT, .fields = health_fields,
};
static const int health_errors[] = { 503, 0 };
static const struct route_doc health_doc = {
    .tag = "System", .response = &health_schema, .status = 200, .errors = health_errors,
    .summary = "Liveness: 200 when Redis answers, else 503",
};

const struct route health_routes[] = {
    { "GET", "/api/health", api_health, 0, BODY_NONE, &health_doc },
};
const size_t health_routes_count = sizeof health_routes / sizeof health_routes[0];
