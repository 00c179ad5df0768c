/* The Integration group: what a publisher pastes to serve an ad unit.
 *
 *   GET /api/ad-units/{id}/integration   (admin, operator)
 *
 * {ad_unit_id, sdk: {script_url, element_id, snippet}, vast_tag_url}: the
 * web SDK's three lines for the unit (README "Web SDK"), sized as its
 * display placement when it has one, and the VAST tag players fetch when
 * the unit serves video (null otherwise; players add uid and ua to its
 * query). URLs start with the settings' public URL (ADSERVE_PUBLIC_URL when
 * it is null), as the reset mails' do. */
#include "api.h"

#include "ad_units.h"
#include "schemas.h"
#include "settings.h"

#include <stdio.h>
#include <string.h>

#define SNIPPET_MAX 1024
#define URL_LEN_MAX 600

/* ext.{name}.enabled, as serving reads it */
static bool format_enabled(const cJSON *unit, const char *name)
{
    const cJSON *ext = cJSON_GetObjectItemCaseSensitive(unit, "ext");
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(ext, name);
    const cJSON *on = cJSON_GetObjectItemCaseSensitive(f, "enabled");

    return cJSON_IsNumber(on) ? on->valueint != 0 : cJSON_IsTrue(on);
}

/* ",width:W,height:H" of the display placement, or "" without one */
static void size_args(const cJSON *unit, char *out, size_t outlen)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(unit, "display");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(d, "w");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(d, "h");

    out[0] = '\0';
    if (cJSON_IsNumber(w) && cJSON_IsNumber(h) && w->valueint > 0 && h->valueint > 0)
        snprintf(out, outlen, ",width:%d,height:%d", w->valueint, h->valueint);
}

/* The body; NULL out of memory or when a tag cannot be written. The id is
 * a lower-case UUID and the public URL has no quote, angle bracket,
 * ampersand or backslash (checked here), so nothing needs escaping in the
 * HTML and the script it goes into. */
static cJSON *integration(const char *base, const char *id, const cJSON *unit, const char **why)
{
    char script[URL_LEN_MAX], vast[URL_LEN_MAX], element[64], sizes[48], snippet[SNIPPET_MAX];

    if (strpbrk(base, "\"'<>&\\") != NULL) {
        *why = "the public URL has a character that cannot go into a tag";
        return NULL;
    }
    snprintf(script, sizeof script, "%s%s", base, ADSERVE_SDK_PATH);
    snprintf(vast, sizeof vast, "%s%s%s", base, ADSERVE_VAST_PATH, id);
    snprintf(element, sizeof element, "adserve-%s", id);
    size_args(unit, sizes, sizeof sizes);
    int n = snprintf(snippet, sizeof snippet,
                     "<div id=\"%s\"></div>\n"
                     "<script async src=\"%s\"></script>\n"
                     "<script>window.adserve=window.adserve||{cmd:[]};adserve.cmd.push(function()"
                     "{adserve.registerAd({tagid:\"%s\",element:\"%s\"%s});});</script>\n",
                     element, script, id, element, sizes);
    if (n < 0 || (size_t)n >= sizeof snippet) {
        *why = "the public URL is too long for a tag";
        return NULL;
    }

    cJSON *body = cJSON_CreateObject(), *sdk = cJSON_AddObjectToObject(body, "sdk");
    bool ok = sdk != NULL && cJSON_AddStringToObject(body, "ad_unit_id", id) != NULL &&
              cJSON_AddStringToObject(sdk, "script_url", script) != NULL &&
              cJSON_AddStringToObject(sdk, "element_id", element) != NULL &&
              cJSON_AddStringToObject(sdk, "snippet", snippet) != NULL &&
              (format_enabled(unit, "video") ? cJSON_AddStringToObject(body, "vast_tag_url", vast)
                                             : cJSON_AddNullToObject(body, "vast_tag_url")) != NULL;
    if (!ok) {
        cJSON_Delete(body);
        *why = "internal error";
        return NULL;
    }
    return body;
}

static void api_integration_get(struct request *req, struct reply *rep)
{
    char id[UUID_STR_LEN];
    const char *why = NULL;
    cJSON *unit = ad_unit_of_path(req, rep, "id", id), *body;

    if (unit == NULL)
        return;
    char base[ADSERVE_PUBLIC_URL_MAX + 1];
    enum store_status st = settings_public_url(request_store(req), base, sizeof base);
    if (st != STORE_OK) {
        reply_store_error(rep, st);
        cJSON_Delete(unit);
        return;
    }
    body = integration(base, id, unit, &why);
    if (body != NULL)
        reply_json(rep, 200, body);
    else
        reply_error(rep, 500, "%s", why);
    cJSON_Delete(unit);
}

static const struct schema text = { .type = SCHEMA_STRING };
static const struct schema nullable_text = { .type = SCHEMA_STRING, .nullable = true };
static const struct schema_field sdk_fields[] = {
    { "script_url", &text, .required = true, .description = "the web SDK, at the public URL" },
    { "element_id", &text, .required = true, .description = "the id of the snippet's element" },
    { "snippet", &text, .required = true,
      .description = "the SDK's three lines for this ad unit, sized as its display placement" },
    { NULL },
};
static const struct schema sdk_schema = {
    .name = "IntegrationSdk", .type = SCHEMA_OBJECT, .fields = sdk_fields,
};
static const struct schema_field integration_fields[] = {
    { "ad_unit_id", &text, .required = true },
    { "sdk", &sdk_schema, .required = true },
    { "vast_tag_url", &nullable_text, .required = true,
      .description = "GET for players, with uid and ua in the query; null unless the unit "
                     "serves video" },
    { NULL },
};
static const struct schema integration_schema = {
    .name = "Integration", .type = SCHEMA_OBJECT, .fields = integration_fields,
};
static const int integration_errors[] = { 401, 403, 404, 503, 0 };
static const struct route_doc integration_doc = {
    .tag = "Integration", .response = &integration_schema, .status = 200,
    .errors = integration_errors,
    .summary = "The web SDK's tag and the VAST tag URL of an ad unit",
};

const struct route integration_routes[] = {
    { "GET", "/api/ad-units/{id}/integration", api_integration_get, INVENTORY_ROLES, BODY_NONE,
      &integration_doc },
};
const size_t integration_routes_count = sizeof integration_routes / sizeof integration_routes[0];
