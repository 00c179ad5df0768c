/* GET /api/audit-logs: the audit stream (txn.h writes it), newest first.
 *
 * Filters: ?resource=, ?id=, ?actor=, ?action= (exact), ?from=, ?to=
 * (RFC 3339, inclusive). The time window maps onto stream ids, so Redis
 * only returns entries inside it; the other filters are applied here, while
 * the window is read newest first in batches. total counts the matches in
 * the window: narrow windows are cheap, an unbounded one reads the whole
 * stream (capped at ADSERVE_AUDIT_MAXLEN entries). */
#include "api.h"
#include "schema.h"
#include "txn.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

#define AUDIT_BATCH "1000"

static const char *const filters[] = { "resource", "id", "actor", "action", NULL };

struct query {
    long limit, offset;
    const char *want[4];            /* by index of filters */
    char start[48], end[48];        /* stream id bounds: "-" / "+" when open */
};

/* The checked query object into the scan's terms. Times before 1970 have
 * no stream id: they are the open end. */
static void read_query(const cJSON *o, struct query *q)
{
    const char *from = json_str_member(o, "from"), *to = json_str_member(o, "to");
    long long t;

    q->limit = (long)cJSON_GetObjectItemCaseSensitive(o, "limit")->valuedouble;
    q->offset = (long)cJSON_GetObjectItemCaseSensitive(o, "offset")->valuedouble;
    for (int i = 0; filters[i] != NULL; i++)
        q->want[i] = json_str_member(o, filters[i]);

    snprintf(q->start, sizeof q->start, "-");
    snprintf(q->end, sizeof q->end, "+");
    if (from != NULL && rfc3339_parse(from, &t) == 0 && t >= 0)
        snprintf(q->start, sizeof q->start, "%lld-0", t * 1000);
    /* the whole last second, whatever its sequence numbers */
    if (to != NULL && rfc3339_parse(to, &t) == 0 && t >= 0)
        snprintf(q->end, sizeof q->end, "%lld-18446744073709551615", t * 1000 + 999);
}

static const char *field(const redisReply *kv, const char *name)
{
    for (size_t i = 0; i + 1 < kv->elements; i += 2)
        if (kv->element[i]->type == REDIS_REPLY_STRING &&
            strcmp(kv->element[i]->str, name) == 0 &&
            kv->element[i + 1]->type == REDIS_REPLY_STRING)
            return kv->element[i + 1]->str;
    return NULL;
}

static bool matches(const struct query *q, const redisReply *kv)
{
    for (int i = 0; filters[i] != NULL; i++) {
        const char *v = q->want[i] ? field(kv, filters[i]) : NULL;
        if (q->want[i] && (v == NULL || strcmp(v, q->want[i]) != 0))
            return false;
    }
    return true;
}

/* one stream entry as the API shows it */
static cJSON *record(const char *seq, const redisReply *kv)
{
    static const char *const strings[] = { "at", "actor", "role", "action", "resource", "id", NULL };
    cJSON *o = cJSON_CreateObject();

    if (o == NULL || cJSON_AddStringToObject(o, "seq", seq) == NULL)
        goto fail;
    for (int i = 0; strings[i] != NULL; i++) {
        const char *v = field(kv, strings[i]);
        if (cJSON_AddItemToObject(o, strings[i], v ? cJSON_CreateString(v) : cJSON_CreateNull()) == 0)
            goto fail;
    }
    for (int i = 0; i < 2; i++) {
        const char *name = i ? "after" : "before", *v = field(kv, name);
        cJSON *j = v ? cJSON_Parse(v) : NULL;
        if (cJSON_AddItemToObject(o, name, j ? j : cJSON_CreateNull()) == 0)
            goto fail;
    }
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

/* Reads the window newest first; fills items (offset/limit) and *total. */
static enum store_status scan(struct store_conn *c, struct query *q, cJSON *items, long *total)
{
    char cursor[64];
    enum store_status st;
    redisReply *r;

    snprintf(cursor, sizeof cursor, "%s", q->end);
    for (;;) {
        st = store_cmd(c, &r, (const char *[]){ "XREVRANGE", ADSERVE_KEY_AUDIT, cursor, q->start,
                                                "COUNT", AUDIT_BATCH, NULL });
        if (st != STORE_OK)
            return st;
        if (r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
            freeReplyObject(r);
            return STORE_OK;
        }
        for (size_t i = 0; i < r->elements; i++) {
            const redisReply *e = r->element[i];
            if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
                e->element[0]->type != REDIS_REPLY_STRING ||
                e->element[1]->type != REDIS_REPLY_ARRAY || !matches(q, e->element[1]))
                continue;
            if (++*total > q->offset && cJSON_GetArraySize(items) < q->limit) {
                cJSON *rec = record(e->element[0]->str, e->element[1]);
                if (rec == NULL || !cJSON_AddItemToArray(items, rec)) {
                    cJSON_Delete(rec);
                    freeReplyObject(r);
                    return STORE_ERROR;
                }
            }
        }
        /* continue below the last id of this batch (exclusive) */
        const redisReply *last = r->element[r->elements - 1];
        if (last->type != REDIS_REPLY_ARRAY || last->elements != 2 ||
            last->element[0]->type != REDIS_REPLY_STRING) {
            freeReplyObject(r);
            return STORE_ERROR;          /* not an entry: not our stream */
        }
        snprintf(cursor, sizeof cursor, "(%s", last->element[0]->str);
        freeReplyObject(r);
    }
}

static const struct schema audit_query;

static void api_audit_logs(struct request *req, struct reply *rep)
{
    struct query q = { 0 };
    long total = 0;
    cJSON *query = request_query_object(req, rep, &audit_query);

    if (query == NULL)
        return;
    read_query(query, &q);

    cJSON *body = cJSON_CreateObject(), *items = cJSON_AddArrayToObject(body, "items");
    if (items == NULL) {
        cJSON_Delete(query);
        cJSON_Delete(body);
        reply_json(rep, 500, NULL);
        return;
    }
    enum store_status st = scan(request_store(req), &q, items, &total);
    cJSON_Delete(query);               /* q's strings pointed into it */
    if (st != STORE_OK) {
        cJSON_Delete(body);
        reply_store_error(rep, st);
        return;
    }
    if (cJSON_AddNumberToObject(body, "total", (double)total) == NULL) {
        cJSON_Delete(body);
        body = NULL;
    }
    reply_json(rep, 200, body);
}

/* ---- the shape, for the OpenAPI document ------------------------------ */

static const struct schema str = { .type = SCHEMA_STRING };
static const struct schema at = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_DATE_TIME };
static const struct schema snapshot = {
    .type = SCHEMA_ANY, .description = "the resource before or after (null: none)",
};
static const struct schema_field record_fields[] = {
    { "seq", &str, .required = true, .description = "the stream entry id, in time order" },
    { "at", &at, .required = true },
    { "actor", &str, .required = true, .description = "user id, or \"system\"" },
    { "role", &str, .required = true },
    { "action", &str, .required = true, .description = "create, update, delete, ..." },
    { "resource", &str, .required = true, .description = "ad_unit, user, ..." },
    { "id", &str, .required = true, .description = "the resource's id" },
    { "before", &snapshot, .required = true },
    { "after", &snapshot, .required = true },
    { NULL },
};
static const struct schema audit_record = {
    .name = "AuditRecord", .type = SCHEMA_OBJECT, .fields = record_fields,
};

static const struct schema filter = { .type = SCHEMA_STRING, .min_length = 1, .max_length = 256 };
static const struct schema_field audit_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { "resource", &filter, .description = "ad_unit, user, ..." },
    { "id", &filter, .description = "the resource's id" },
    { "actor", &filter, .description = "a user id, or system" },
    { .name = "action", .schema = &filter },
    { "from", &at, .description = "the window's start (inclusive)" },
    { "to", &at, .description = "the window's end (inclusive, the whole second)" },
    { NULL },
};
static const struct schema audit_query = { .type = SCHEMA_OBJECT, .fields = audit_query_fields };
static const int audit_errors[] = { 401, 403, 422, 503, 0 };
static const struct route_doc audit_doc = {
    .tag = "Audit Logs", .summary = "Page through the audit records, newest first",
    .response = &audit_record, .status = 200, .list = true, .query = &audit_query,
    .errors = audit_errors,
};

const struct route audit_routes[] = {
    { "GET", "/api/audit-logs", api_audit_logs, ROLE_ADMIN, BODY_NONE, &audit_doc },
};
const size_t audit_routes_count = sizeof audit_routes / sizeof audit_routes[0];
