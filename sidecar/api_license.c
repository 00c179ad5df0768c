/* The License group: the product's licence and its components', as
 * shipped.
 *
 *   GET /api/license   (every role)
 *
 * {product: {name, version, license, notice}, components: [{name,
 * version, license, package, used_by, copyright_file}]}. The components
 * are components.h's; each one's full terms are in its Debian package's
 * copyright file, named when it is on this machine (null otherwise). The
 * product's own licence is its owner's choice, not made yet: license is
 * null and the notice says so, rather than claiming one. */
#include "api.h"

#include "components.h"
#include "schema.h"

#include <stdio.h>
#include <unistd.h>

#define DOC_DIR "/usr/share/doc/"
#define PATH_MAX_LEN 128

static const char PRODUCT_NOTICE[] =
    "The owner of adserve has not chosen its licence yet: no licence is granted beyond the "
    "terms under which this copy was delivered. The components below keep their own licences.";

static cJSON *product(void)
{
    cJSON *o = cJSON_CreateObject();

    if (o == NULL || cJSON_AddStringToObject(o, "name", "adserve") == NULL ||
        cJSON_AddStringToObject(o, "version", API_VERSION) == NULL ||
        cJSON_AddNullToObject(o, "license") == NULL ||
        cJSON_AddStringToObject(o, "notice", PRODUCT_NOTICE) == NULL) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *component(const struct component *c)
{
    char path[PATH_MAX_LEN];
    cJSON *o = cJSON_CreateObject();
    int n = snprintf(path, sizeof path, DOC_DIR "%s/copyright", c->package);
    bool here = n > 0 && (size_t)n < sizeof path && access(path, R_OK) == 0;

    if (o == NULL || cJSON_AddStringToObject(o, "name", c->name) == NULL ||
        (c->version != NULL ? cJSON_AddStringToObject(o, "version", c->version())
                            : cJSON_AddNullToObject(o, "version")) == NULL ||
        cJSON_AddStringToObject(o, "license", c->license) == NULL ||
        cJSON_AddStringToObject(o, "package", c->package) == NULL ||
        cJSON_AddStringToObject(o, "used_by", c->used_by) == NULL ||
        (here ? cJSON_AddStringToObject(o, "copyright_file", path)
              : cJSON_AddNullToObject(o, "copyright_file")) == NULL) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static void api_license(struct request *req, struct reply *rep)
{
    cJSON *body = cJSON_CreateObject(), *p = product();
    cJSON *list = cJSON_AddArrayToObject(body, "components");
    bool ok = list != NULL && p != NULL && cJSON_AddItemToObject(body, "product", p);

    (void)req;
    if (!ok)
        cJSON_Delete(p);
    for (size_t i = 0; ok && i < components_count; i++) {
        cJSON *c = component(&components[i]);
        ok = c != NULL && cJSON_AddItemToArray(list, c);
        if (!ok)
            cJSON_Delete(c);
    }
    if (ok)
        reply_json(rep, 200, body);
    else {
        cJSON_Delete(body);
        reply_error(rep, 500, "internal error");
    }
}

static const struct schema text = { .type = SCHEMA_STRING };
static const struct schema text_n = { .type = SCHEMA_STRING, .nullable = true };
static const struct schema_field product_fields[] = {
    { "name", &text, .required = true },
    { "version", &text, .required = true, .description = "the API's" },
    { "license", &text_n, .required = true, .description = "SPDX; null: not chosen yet" },
    { "notice", &text, .required = true },
    { NULL },
};
static const struct schema product_schema = {
    .name = "LicenseProduct", .type = SCHEMA_OBJECT, .fields = product_fields,
};
static const struct schema_field component_fields[] = {
    { "name", &text, .required = true },
    { "version", &text_n, .required = true,
      .description = "as linked into the sidecar; null where the library does not say or the "
                     "sidecar does not link it" },
    { "license", &text, .required = true, .description = "SPDX" },
    { "package", &text, .required = true, .description = "the Debian package that ships it" },
    { "used_by", &text, .required = true, .description = "sidecar, module, or node (a server)" },
    { "copyright_file", &text_n, .required = true,
      .description = "its full terms on this machine, or null when the package is not here" },
    { NULL },
};
static const struct schema component_schema = {
    .name = "LicenseComponent", .type = SCHEMA_OBJECT, .fields = component_fields,
};
static const struct schema component_list = { .type = SCHEMA_ARRAY, .items = &component_schema };
static const struct schema_field license_fields[] = {
    { "product", &product_schema, .required = true },
    { "components", &component_list, .required = true },
    { NULL },
};
static const struct schema license_schema = {
    .name = "License", .type = SCHEMA_OBJECT, .fields = license_fields,
};
static const int license_errors[] = { 401, 0 };
static const struct route_doc license_doc = {
    .tag = "License", .response = &license_schema, .status = 200, .errors = license_errors,
    .summary = "The product's licence and its components', as shipped",
};

const struct route license_routes[] = {
    { "GET", "/api/license", api_license, ROLES_ANY, BODY_NONE, &license_doc },
};
const size_t license_routes_count = sizeof license_routes / sizeof license_routes[0];
