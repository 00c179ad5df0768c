#include "api.h"

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

const struct route health_routes[] = {
    { "GET", "/api/health", api_health, 0, BODY_NONE, NULL },
};
const size_t health_routes_count = sizeof health_routes / sizeof health_routes[0];
