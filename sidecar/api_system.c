/* The System group: what runs, and how Redis is.
 *
 *   GET /api/system   (admin, operator)
 *
 * {api_version, sidecar: {started_at, uptime_seconds, libraries}, redis:
 * {version, role, used_memory_bytes, maxmemory_bytes, connected_clients,
 * uptime_seconds}}, from Redis's INFO. Without Redis the API answers 503
 * (its tokens are checked there). The nodes' nginx report through their
 * own /metrics and /app/v0/status. */
#include "api.h"

#include "components.h"
#include "prom.h"
#include "schema.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* "name:value" of INFO's text, into out; false when absent */
static bool info_field(const char *info, const char *name, char *out, size_t outlen)
{
    size_t n = strlen(name);

    for (const char *p = info; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : p) {
        if (strncmp(p, name, n) != 0 || p[n] != ':')
            continue;
        size_t len = strcspn(p + n + 1, "\r\n");
        if (len >= outlen)
            return false;
        memcpy(out, p + n + 1, len);
        out[len] = '\0';
        return true;
    }
    return false;
}

static bool add_info_number(cJSON *o, const char *info, const char *name, const char *as)
{
    char v[32], *end;

    if (!info_field(info, name, v, sizeof v))
        return true;                         /* an older Redis may not say */
    long long n = strtoll(v, &end, 10);
    return *end != '\0' || cJSON_AddNumberToObject(o, as, (double)n) != NULL;
}

/* Redis as INFO tells it; NULL, with the store's error in rep, when it
 * does not answer */
static cJSON *redis_part(struct request *req, struct reply *rep)
{
    redisReply *r = NULL;
    char v[64];
    enum store_status st = store_cmd(request_store(req), &r,
                                     (const char *[]){ "INFO", "server", "memory", "clients",
                                                       "replication", NULL });
    if (st != STORE_OK) {
        reply_store_error(rep, st);
        return NULL;
    }
    cJSON *o = cJSON_CreateObject();
    bool ok = o != NULL && r->type == REDIS_REPLY_STRING &&
              (!info_field(r->str, "redis_version", v, sizeof v) ||
               cJSON_AddStringToObject(o, "version", v) != NULL) &&
              (!info_field(r->str, "role", v, sizeof v) ||
               cJSON_AddStringToObject(o, "role", v) != NULL) &&
              add_info_number(o, r->str, "used_memory", "used_memory_bytes") &&
              add_info_number(o, r->str, "maxmemory", "maxmemory_bytes") &&
              add_info_number(o, r->str, "connected_clients", "connected_clients") &&
              add_info_number(o, r->str, "uptime_in_seconds", "uptime_seconds");
    freeReplyObject(r);
    if (!ok) {
        cJSON_Delete(o);
        reply_error(rep, 500, "internal error");
        return NULL;
    }
    return o;
}

static cJSON *sidecar_part(void)
{
    cJSON *o = cJSON_CreateObject(), *libs = cJSON_AddObjectToObject(o, "libraries");
    char started[RFC3339_LEN];
    time_t at = prom_started_at();
    bool ok = libs != NULL && rfc3339_format((long long)at, started) == 0 &&
              cJSON_AddStringToObject(o, "started_at", started) != NULL &&
              cJSON_AddNumberToObject(o, "uptime_seconds", (double)(time(NULL) - at)) != NULL;

    for (size_t i = 0; ok && i < components_count; i++)
        ok = components[i].version == NULL ||
             cJSON_AddStringToObject(libs, components[i].name, components[i].version()) != NULL;
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static void api_system(struct request *req, struct reply *rep)
{
    cJSON *redis = redis_part(req, rep), *sidecar = redis != NULL ? sidecar_part() : NULL;
    cJSON *body = sidecar != NULL ? cJSON_CreateObject() : NULL;

    if (redis == NULL)
        return;
    if (body == NULL || cJSON_AddStringToObject(body, "api_version", API_VERSION) == NULL) {
        cJSON_Delete(sidecar);
        cJSON_Delete(redis);
        cJSON_Delete(body);
        reply_error(rep, 500, "internal error");
        return;
    }
    cJSON_AddItemToObject(body, "sidecar", sidecar);
    cJSON_AddItemToObject(body, "redis", redis);
    reply_json(rep, 200, body);
}

static const struct schema text = { .type = SCHEMA_STRING };
static const struct schema whole = { .type = SCHEMA_INTEGER };
static const struct schema any_object = { .type = SCHEMA_FREE_OBJECT };
static const struct schema_field sidecar_fields[] = {
    { "started_at", &text, .required = true, .description = "RFC 3339" },
    { "uptime_seconds", &whole, .required = true },
    { "libraries", &any_object, .required = true,
      .description = "the versions of hiredis, libmicrohttpd, cjson, libsodium, libcurl" },
    { NULL },
};
static const struct schema sidecar_schema = {
    .name = "SystemSidecar", .type = SCHEMA_OBJECT, .fields = sidecar_fields,
};
static const struct schema_field redis_fields[] = {
    { .name = "version", .schema = &text },
    { .name = "role", .schema = &text, .description = "\"master\" or \"slave\", as Redis says" },
    { .name = "used_memory_bytes", .schema = &whole },
    { .name = "maxmemory_bytes", .schema = &whole, .description = "0: no limit" },
    { .name = "connected_clients", .schema = &whole },
    { .name = "uptime_seconds", .schema = &whole },
    { NULL },
};
static const struct schema redis_schema = {
    .name = "SystemRedis", .type = SCHEMA_OBJECT, .fields = redis_fields,
};
static const struct schema_field system_fields[] = {
    { "api_version", &text, .required = true, .description = "the OpenAPI document's" },
    { "sidecar", &sidecar_schema, .required = true },
    { "redis", &redis_schema, .required = true },
    { NULL },
};
static const struct schema system_schema = {
    .name = "System", .type = SCHEMA_OBJECT, .fields = system_fields,
};
static const int system_errors[] = { 401, 403, 503, 0 };
static const struct route_doc system_doc = {
    .tag = "System", .response = &system_schema, .status = 200, .errors = system_errors,
    .summary = "Versions, and the health and memory of Redis",
};

const struct route system_routes[] = {
    { "GET", "/api/system", api_system, INVENTORY_ROLES, BODY_NONE, &system_doc },
};
const size_t system_routes_count = sizeof system_routes / sizeof system_routes[0];
