#include "api.h"

/* GET /api/health: 200 only when Redis answers, so that run scripts and
 * load balancers wait for a sidecar that can actually serve. */
void api_health(struct request *req, struct reply *rep)
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
