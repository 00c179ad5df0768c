/* The developer/monitoring group: the data flow through Redis, as a
 * developer checks it when something does not arrive.
 *
 *   GET /api/developer/monitoring   (admin)
 *
 * {revision, streams: {changes, events, outbox, audit}}, each stream
 * {length, last_at}: is the change log moving (the API's writes, which
 * serving follows), are tracking events arriving (the nodes' flushes), is
 * mail backing up, is the audit written. last_at is the newest entry's time
 * (its id's milliseconds), null for an empty stream. The nodes themselves
 * report through /metrics. One pipeline, nine commands. */
#include "api.h"

#include "schema.h"
#include "util.h"

#include <stdlib.h>

static const struct {
    const char *name;
    const char *key;
} streams[] = {
    { "changes", ADSERVE_KEY_CHANGES },
    { "events", ADSERVE_KEY_EVENTS },
    { "outbox", ADSERVE_KEY_OUTBOX },
    { "audit", ADSERVE_KEY_AUDIT },
};
#define NSTREAMS (sizeof streams / sizeof streams[0])
#define NCMDS (1 + 2 * NSTREAMS)

/* {length, last_at} of a stream from its XLEN and XREVRANGE ... COUNT 1 */
static cJSON *stream_part(const redisReply *len, const redisReply *last)
{
    cJSON *o = cJSON_CreateObject();
    char at[RFC3339_LEN];
    long long ms = 0;
    bool has = last->type == REDIS_REPLY_ARRAY && last->elements == 1 &&
               last->element[0]->type == REDIS_REPLY_ARRAY && last->element[0]->elements >= 1 &&
               last->element[0]->element[0]->type == REDIS_REPLY_STRING &&
               (ms = strtoll(last->element[0]->element[0]->str, NULL, 10)) > 0 &&
               rfc3339_format(ms / 1000, at) == 0;

    if (o == NULL || len->type != REDIS_REPLY_INTEGER ||
        cJSON_AddNumberToObject(o, "length", (double)len->integer) == NULL ||
        (has ? cJSON_AddStringToObject(o, "last_at", at) : cJSON_AddNullToObject(o, "last_at"))
            == NULL) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *monitoring(redisReply *const *r)
{
    cJSON *body = cJSON_CreateObject(), *all = cJSON_AddObjectToObject(body, "streams");
    bool ok = all != NULL && (r[0]->type == REDIS_REPLY_NIL || r[0]->type == REDIS_REPLY_STRING) &&
              cJSON_AddNumberToObject(body, "revision",
                                      r[0]->type == REDIS_REPLY_STRING ? strtod(r[0]->str, NULL)
                                                                       : 0) != NULL;

    for (size_t i = 0; ok && i < NSTREAMS; i++) {
        cJSON *s = stream_part(r[1 + 2 * i], r[2 + 2 * i]);
        ok = s != NULL && cJSON_AddItemToObject(all, streams[i].name, s);
        if (!ok)
            cJSON_Delete(s);
    }
    if (!ok) {
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}

static void api_developer_monitoring(struct request *req, struct reply *rep)
{
    const char *const *cmds[NCMDS];
    const char *argv[NCMDS][7];
    redisReply *r[NCMDS];

    argv[0][0] = "GET", argv[0][1] = ADSERVE_KEY_REV, argv[0][2] = NULL;
    cmds[0] = argv[0];
    for (size_t i = 0; i < NSTREAMS; i++) {
        const char **len = argv[1 + 2 * i], **last = argv[2 + 2 * i];

        len[0] = "XLEN", len[1] = streams[i].key, len[2] = NULL;
        last[0] = "XREVRANGE", last[1] = streams[i].key, last[2] = "+", last[3] = "-";
        last[4] = "COUNT", last[5] = "1", last[6] = NULL;
        cmds[1 + 2 * i] = len;
        cmds[2 + 2 * i] = last;
    }
    enum store_status st = store_pipeline(request_store(req), cmds, NCMDS, r);
    if (st != STORE_OK) {
        reply_store_error(rep, st);
        return;
    }
    cJSON *body = monitoring(r);
    for (size_t i = 0; i < NCMDS; i++)
        freeReplyObject(r[i]);
    if (body == NULL)
        reply_error(rep, 500, "internal error");
    else
        reply_json(rep, 200, body);
}

static const struct schema whole = { .type = SCHEMA_INTEGER };
static const struct schema when = { .type = SCHEMA_STRING, .nullable = true };
static const struct schema_field stream_fields[] = {
    { "length", &whole, .required = true, .description = "entries (each stream is capped)" },
    { "last_at", &when, .required = true,
      .description = "RFC 3339: the newest entry's time; null when empty" },
    { NULL },
};
static const struct schema stream_schema = {
    .name = "MonitoredStream", .type = SCHEMA_OBJECT, .fields = stream_fields,
};
static const struct schema_field streams_fields[] = {
    { "changes", &stream_schema, .required = true,
      .description = "the change log: the API's writes, which serving follows" },
    { "events", &stream_schema, .required = true,
      .description = "tracking events, as the nodes flush them" },
    { "outbox", &stream_schema, .required = true,
      .description = "mails that no SMTP server took" },
    { "audit", &stream_schema, .required = true, .description = "the audit log" },
    { NULL },
};
static const struct schema streams_schema = {
    .name = "MonitoredStreams", .type = SCHEMA_OBJECT, .fields = streams_fields,
};
static const struct schema_field monitoring_fields[] = {
    { "revision", &whole, .required = true, .description = "the revision that serving follows" },
    { "streams", &streams_schema, .required = true },
    { NULL },
};
static const struct schema monitoring_schema = {
    .name = "Monitoring", .type = SCHEMA_OBJECT, .fields = monitoring_fields,
};
static const int monitoring_errors[] = { 401, 403, 503, 0 };
static const struct route_doc monitoring_doc = {
    .tag = "developer/monitoring", .response = &monitoring_schema, .status = 200,
    .errors = monitoring_errors,
    .summary = "The data flow through Redis: the revision, and the streams' lengths and last entries",
};

const struct route developer_monitoring_routes[] = {
    { "GET", "/api/developer/monitoring", api_developer_monitoring, ROLE_ADMIN, BODY_NONE,
      &monitoring_doc },
};
const size_t developer_monitoring_routes_count =
    sizeof developer_monitoring_routes / sizeof developer_monitoring_routes[0];
