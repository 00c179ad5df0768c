/* The global settings: their shape, and reading them (settings.h). */
#include "settings.h"

#include "json_util.h"
#include "mail.h"

#include <stdio.h>
#include <string.h>

static const struct schema public_url_n = {
    .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_URI, .nullable = true,
    .max_length = ADSERVE_PUBLIC_URL_MAX,
    .description = "http(s), no trailing slash; no quotes, <, >, & or spaces",
};
static const struct schema currency = {
    .name = "Currency", .type = SCHEMA_STRING, .enum_values = adserve_currency_names,
    .description = "ISO 4217",
};
static const struct schema date_time = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_DATE_TIME };
static const struct schema url = { .type = SCHEMA_STRING };

static const struct schema_field settings_fields[] = {
    { "public_url", &public_url_n, .dflt = "null",
      .description = "where impression, click and event URLs, integration tags and reset links "
                     "point; serving follows a change within a refresh. null: each node's "
                     "adserve_public_url (and the sidecar's ADSERVE_PUBLIC_URL). An ad unit's "
                     "ext.public_url still wins" },
    { "currency", &currency, .dflt = SCHEMA_JSON_STR(ADSERVE_CURRENCY_DEFAULT),
      .description = "of every money field: rates, floors, spend" },
    { "default_public_url", &url, .read_only = true,
      .description = "the sidecar's ADSERVE_PUBLIC_URL: what a null public_url means" },
    { "updated_at", &date_time, .read_only = true, .description = "null: never written" },
    { NULL },
};
const struct schema schema_settings = {
    .name = "Settings", .type = SCHEMA_OBJECT, .fields = settings_fields,
};
const struct schema schema_settings_patch = {
    .name = "SettingsPatch", .type = SCHEMA_OBJECT, .fields = settings_fields,
    .doc_partial = true, .description = "Only the fields sent change.",
};

/* Its stored text, or all defaults when never written. */
static cJSON *stored(const redisReply *r)
{
    if (r->type == REDIS_REPLY_NIL)
        return cJSON_CreateObject();
    if (r->type != REDIS_REPLY_STRING)
        return NULL;
    cJSON *o = cJSON_ParseWithLength(r->str, r->len);
    if (o != NULL && !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Fills what the stored record lacks (it may predate a field); the stored
 * id stays out of the answer. */
static bool fill_defaults(cJSON *o)
{
    for (const struct schema_field *f = settings_fields; f->name != NULL; f++) {
        if (f->dflt == NULL || cJSON_HasObjectItem(o, f->name))
            continue;
        cJSON *v = cJSON_Parse(f->dflt);
        if (v == NULL || !cJSON_AddItemToObject(o, f->name, v)) {
            cJSON_Delete(v);
            return false;
        }
    }
    cJSON_DeleteItemFromObjectCaseSensitive(o, "id");
    cJSON_DeleteItemFromObjectCaseSensitive(o, "default_public_url");
    return (cJSON_HasObjectItem(o, "updated_at") || cJSON_AddNullToObject(o, "updated_at")) &&
           cJSON_AddStringToObject(o, "default_public_url", mail_public_url()) != NULL;
}

enum store_status settings_load(struct store_conn *c, cJSON **out)
{
    redisReply *r = NULL;
    enum store_status st = store_cmd(
        c, &r, (const char *[]){ "HGET", ADSERVE_KEY_SETTINGS, ADSERVE_SETTINGS_ID, NULL });

    if (st != STORE_OK)
        return st;
    *out = stored(r);
    freeReplyObject(r);
    if (*out == NULL || !fill_defaults(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return STORE_ERROR;
    }
    return STORE_OK;
}

enum store_status settings_public_url(struct store_conn *c, char *out, size_t outlen)
{
    cJSON *s = NULL;
    enum store_status st = settings_load(c, &s);

    if (st != STORE_OK)
        return st;
    const char *set = json_str_member(s, "public_url");
    /* serving ignores a URL that is not one (written past the API): so
     * does the sidecar */
    const char *base = set != NULL && adserve_public_url_ok(set, strlen(set)) ? set
                                                                              : mail_public_url();
    int n = snprintf(out, outlen, "%s", base);
    cJSON_Delete(s);
    return n > 0 && (size_t)n < outlen ? STORE_OK : STORE_ERROR;
}
