#include "ad_units.h"

#include "json_util.h"
#include "log.h"
#include "schemas.h"
#include "util.h"

#include "adserve_target.h"

#include <stdio.h>
#include <string.h>

/* Writes race only with other ad unit writes; a handful of rounds is
 * plenty for a management API, and a request never spins for long. */
#define WRITE_ATTEMPTS 8

bool ad_unit_path_id(struct request *req, struct reply *rep, const char *name,
                     char out[UUID_STR_LEN])
{
    bool ok = request_uuid_param(req, name, out);

    if (!ok)
        reply_error(rep, 404, "ad unit not found");
    return ok;
}

cJSON *ad_unit_of_path(struct request *req, struct reply *rep, const char *name,
                       char id[UUID_STR_LEN])
{
    cJSON *unit = NULL;

    if (!ad_unit_path_id(req, rep, name, id))
        return NULL;
    enum store_status st = ad_unit_load(request_store(req), id, &unit);
    if (st == STORE_NOT_FOUND)
        reply_error(rep, 404, "ad unit not found");
    else if (st != STORE_OK)
        reply_store_error(rep, st);
    return st == STORE_OK ? unit : NULL;
}

enum store_status ad_units_watch(struct store_conn *c)
{
    return store_do(c, (const char *[]){ "WATCH", ADSERVE_KEY_AD_UNITS, ADSERVE_KEY_AD_UNIT_CODES, NULL });
}

enum store_status ad_unit_load(struct store_conn *c, const char *id, cJSON **unit)
{
    redisReply *r;
    enum store_status st = store_cmd(c, &r, (const char *[]){ "HGET", ADSERVE_KEY_AD_UNITS, id, NULL });

    *unit = NULL;
    if (st != STORE_OK)
        return st;
    if (r->type == REDIS_REPLY_NIL)
        st = STORE_NOT_FOUND;
    else if (r->type != REDIS_REPLY_STRING)
        st = STORE_ERROR;
    else if ((*unit = cJSON_ParseWithLength(r->str, r->len)) == NULL || !cJSON_IsObject(*unit)) {
        log_line("ad unit %.40s: stored record is not a JSON object", id);
        cJSON_Delete(*unit);
        *unit = NULL;
        st = STORE_ERROR;
    }
    freeReplyObject(r);
    return st;
}

void ad_unit_children_key(char key[AD_UNIT_CHILDREN_KEY_LEN], const char *id)
{
    snprintf(key, AD_UNIT_CHILDREN_KEY_LEN, "%s%s", ADSERVE_KEY_AD_UNIT_CHILDREN, id);
}

/* Replaces (or adds) member name of o; false on OOM (value freed). */
static bool set_member(cJSON *o, const char *name, cJSON *value)
{
    if (value == NULL)
        return false;
    if (cJSON_GetObjectItemCaseSensitive(o, name) != NULL)
        return cJSON_ReplaceItemInObjectCaseSensitive(o, name, value) ||
               (cJSON_Delete(value), false);
    return cJSON_AddItemToObject(o, name, value) || (cJSON_Delete(value), false);
}

cJSON *ad_unit_finish(cJSON *unit)
{
    char now[RFC3339_LEN];
    const char *status = ad_unit_str(unit, "status");
    bool ok = now_rfc3339(now) == 0 &&
              set_member(unit, "updated_at", cJSON_CreateString(now)) &&
              (ad_unit_str(unit, "created_at") != NULL ||
               set_member(unit, "created_at", cJSON_CreateString(now))) &&
              set_member(unit, "is_active",
                         cJSON_CreateBool(adserve_vocab_str(adserve_unit_status_names, status) == ADSERVE_UNIT_ACTIVE));
    /* The output view lists the fields in the table's order, so every
     * stored record reads the same whatever the order of the request. */
    cJSON *out = ok ? schema_output(&schema_ad_unit, unit) : NULL;

    cJSON_Delete(unit);
    return out;
}

/* A recommendation's content_filter_rule is judged by serving's own
 * compiler, as a line item's targeting is: what is stored is evaluated. */
static bool filter_compiles(const cJSON *unit, struct reply *rep)
{
    const cJSON *rule = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(unit, "recommendation"), "content_filter_rule");
    adserve_target_err_t err;
    int rc = adserve_target_check_filter(cJSON_IsNull(rule) ? NULL : rule, &err);

    if (rc < 0)
        reply_error(rep, 500, "internal error");
    else if (rc > 0)
        reply_error(rep, 422, "recommendation.%s: %s", err.path, err.reason);
    return rc == 0;
}

/* A snapshot fallback's path stays inside the snapshot folder
 * (adserve_snapshot_path_check): the API refuses one that could leave it. */
static bool snapshot_paths_ok(const cJSON *unit, struct reply *rep)
{
    const cJSON *chain = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(unit, "recommendation"), "fallback");
    const cJSON *f;
    int i = 0;

    cJSON_ArrayForEach(f, chain) {
        const char *type = json_str_member(f, "type"), *why;
        if (type != NULL && strcmp(type, ADSERVE_V_SNAPSHOT) == 0 &&
            (why = adserve_snapshot_path_check(json_str_member(f, "path"))) != NULL) {
            reply_error(rep, 422, "recommendation.fallback[%d].path: %s", i, why);
            return false;
        }
        i++;
    }
    return true;
}

/* ext.target_service names an nginx location: a safe URI segment. */
static bool target_service_ok(const cJSON *unit, struct reply *rep)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(unit, "ext"), "target_service");

    if (v == NULL || cJSON_IsNull(v) || adserve_service_name_ok(cJSON_GetStringValue(v)))
        return true;
    reply_error(rep, 422, "ext.target_service: 1 to %d letters, digits, _ or -",
                ADSERVE_SERVICE_MAX);
    return false;
}

bool ad_unit_fits(const cJSON *unit, struct reply *rep)
{
    if (!filter_compiles(unit, rep) || !snapshot_paths_ok(unit, rep) ||
        !target_service_ok(unit, rep))
        return false;

    char *json = cJSON_PrintUnformatted(unit);

    if (json == NULL) {
        reply_error(rep, 500, "internal error");
        return false;
    }
    size_t n = strlen(json);
    cJSON_free(json);
    if (n > AD_UNIT_MAX_BYTES) {
        reply_error(rep, 422, "the ad unit would take %zu bytes, more than %d", n,
                    AD_UNIT_MAX_BYTES);
        return false;
    }
    return true;
}

void ad_unit_txn_put(struct txn *t, const struct user *actor, const char *action,
                     const cJSON *before, const cJSON *after)
{
    const char *id = ad_unit_str(after, "id");
    char *json = cJSON_PrintUnformatted(after);

    if (json == NULL || id == NULL)
        t->failed = true;
    else
        txn_cmd(t, "HSET", ADSERVE_KEY_AD_UNITS, id, json, NULL);
    cJSON_free(json);
    txn_audit(t, actor, action, ADSERVE_RECORD_AD_UNIT, id != NULL ? id : "", before, after);
}

void ad_unit_write(struct request *req, struct reply *rep, ad_unit_attempt *attempt, void *arg)
{
    for (int i = 0; i < WRITE_ATTEMPTS; i++) {
        enum store_status st = ad_units_watch(request_store(req));
        if (st == STORE_OK)
            st = attempt(req, rep, arg);
        if (st == STORE_CONFLICT)
            continue;
        if (st != STORE_OK)
            reply_store_error(rep, st);
        return;
    }
    reply_error(rep, 409, "concurrent modification of ad units, retry");
}

const char *ad_unit_str(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}
