/* The Settings group: the account's global settings (settings.h).
 *
 *   GET   /api/settings   (every role: the console labels money with the
 *                          currency)
 *   PATCH /api/settings   (admin)
 *
 * A PATCH names the fields it changes; the answer is the whole settings.
 * The API token of POST /api/settings/api-token is the caller's own, in
 * the Auth group's file. */
#include "api.h"

#include "settings.h"
#include "txn.h"

#include <string.h>

#define WRITE_ATTEMPTS 8             /* optimistic transactions, then 409 */

static void api_settings_get(struct request *req, struct reply *rep)
{
    cJSON *s = NULL;
    enum store_status st = settings_load(request_store(req), &s);

    if (st != STORE_OK)
        reply_store_error(rep, st);
    else
        reply_json(rep, 200, s);
}

/* before with the changes of the checked body in; NULL out of memory */
static cJSON *merged(const cJSON *before, const cJSON *changes)
{
    char now[RFC3339_LEN];
    cJSON *after = cJSON_Duplicate(before, 1);
    const cJSON *f;

    if (after == NULL || now_rfc3339(now) != 0) {
        cJSON_Delete(after);
        return NULL;
    }
    cJSON_ArrayForEach(f, changes) {
        cJSON *v = cJSON_Duplicate(f, 1);
        if (v == NULL || !cJSON_ReplaceItemInObjectCaseSensitive(after, f->string, v)) {
            cJSON_Delete(v);
            cJSON_Delete(after);
            return NULL;
        }
    }
    cJSON *at = cJSON_CreateString(now);
    if (at == NULL || !cJSON_ReplaceItemInObjectCaseSensitive(after, "updated_at", at)) {
        cJSON_Delete(at);
        cJSON_Delete(after);
        return NULL;
    }
    return after;
}

/* The record as stored: the settings with their id, without what the
 * sidecar adds on reading. */
static char *record_text(const cJSON *after)
{
    cJSON *rec = cJSON_Duplicate(after, 1);
    char *text = NULL;

    if (rec != NULL) {
        cJSON_DeleteItemFromObjectCaseSensitive(rec, "default_public_url");
        if (cJSON_AddStringToObject(rec, "id", ADSERVE_SETTINGS_ID) != NULL)
            text = cJSON_PrintUnformatted(rec);
    }
    cJSON_Delete(rec);
    return text;
}

static enum store_status write_once(struct request *req, const cJSON *changes, cJSON **after)
{
    struct store_conn *c = request_store(req);
    cJSON *before = NULL;
    char *text = NULL;
    struct txn t;
    enum store_status st = store_do(c, (const char *[]){ "WATCH", ADSERVE_KEY_SETTINGS, NULL });

    if (st == STORE_OK)
        st = settings_load(c, &before);
    if (st != STORE_OK)
        return st;
    *after = merged(before, changes);
    text = *after != NULL ? record_text(*after) : NULL;
    if (text == NULL) {
        cJSON_Delete(before);
        return STORE_ERROR;
    }
    txn_init(&t);
    txn_cmd(&t, "HSET", ADSERVE_KEY_SETTINGS, ADSERVE_SETTINGS_ID, text, NULL);
    txn_audit(&t, req->user, "update", ADSERVE_RECORD_SETTINGS, ADSERVE_SETTINGS_ID, before,
              *after);
    txn_bump_revision(&t);        /* serving reads the public URL */
    st = txn_exec(&t, c);
    txn_free(&t);
    cJSON_free(text);
    cJSON_Delete(before);
    return st;
}

static void api_settings_patch(struct request *req, struct reply *rep)
{
    cJSON *changes = json_apply_schema(&schema_settings_patch, req->json, SCHEMA_PARTIAL, rep);
    cJSON *after = NULL;
    enum store_status st = STORE_CONFLICT;

    if (changes == NULL)
        return;
    const char *url = json_str_member(changes, "public_url");
    if (url != NULL && !adserve_public_url_ok(url, strlen(url))) {
        reply_error(rep, 422, "public_url: must be an http(s) URL without a trailing slash, "
                              "quotes, <, >, & or spaces");
        cJSON_Delete(changes);
        return;
    }
    for (int i = 0; i < WRITE_ATTEMPTS && st == STORE_CONFLICT; i++) {
        cJSON_Delete(after);
        after = NULL;
        st = write_once(req, changes, &after);
    }
    cJSON_Delete(changes);
    if (st == STORE_OK) {
        reply_json(rep, 200, after);
        return;
    }
    cJSON_Delete(after);
    if (st == STORE_CONFLICT)
        reply_error(rep, 409, "concurrent modification of the settings, retry");
    else
        reply_store_error(rep, st);
}

static const int get_errors[] = { 401, 503, 0 };
static const struct route_doc get_doc = {
    .tag = "Settings", .response = &schema_settings, .status = 200, .errors = get_errors,
    .summary = "The account's settings",
};
static const int patch_errors[] = { 400, 401, 403, 409, 415, 422, 503, 0 };
static const struct route_doc patch_doc = {
    .tag = "Settings", .request = &schema_settings_patch, .response = &schema_settings, .status = 200,
    .errors = patch_errors,
    .summary = "Change settings: the fields sent; serving follows within a refresh",
};

const struct route settings_routes[] = {
    { "GET", "/api/settings", api_settings_get, ROLES_ANY, BODY_NONE, &get_doc },
    { "PATCH", "/api/settings", api_settings_patch, ROLE_ADMIN, BODY_JSON, &patch_doc },
};
const size_t settings_routes_count = sizeof settings_routes / sizeof settings_routes[0];
