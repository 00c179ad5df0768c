/* GET /api/openapi.json: the OpenAPI 3.1.0 document, generated from the
 * route tables (router.h) and the schemas (schema.h), so it cannot drift
 * from what the server does. A route without a route_doc makes the whole
 * document fail with a 500 that names it: undocumented routes are a bug
 * that the tests catch, not something to paper over. */
#include "api.h"

#include "log.h"
#include "resource.h"
#include "schemas.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define OPENAPI_VERSION "3.1.0"
#define API_TITLE "Data Management APIs"

/* ---- the error shapes --------------------------------------------------------- */

static const struct schema detail_string = { .type = SCHEMA_STRING };
static const struct schema_field error_fields[] = {
    { "detail", &detail_string, .required = true, .description = "what went wrong" },
    { NULL },
};
static const struct schema error_schema = {
    .name = "Error", .type = SCHEMA_OBJECT, .fields = error_fields,
    .description = "Every management error.",
};

static const struct schema loc_part = { .type = SCHEMA_STRING };
static const struct schema loc = { .type = SCHEMA_ARRAY, .items = &loc_part };
static const struct schema text = { .type = SCHEMA_STRING };
static const struct schema_field validation_item_fields[] = {
    { "loc", &loc, .required = true, .description = "where: e.g. [\"body\", \"email\"]" },
    { "msg", &text, .required = true },
    { "type", &text, .required = true },
    { NULL },
};
static const struct schema validation_item = {
    .name = "ValidationErrorItem", .type = SCHEMA_OBJECT, .fields = validation_item_fields,
};
static const struct schema validation_items = { .type = SCHEMA_ARRAY, .items = &validation_item };
static const struct schema_field validation_fields[] = {
    { "detail", &validation_items, .required = true },
    { NULL },
};
static const struct schema validation_error = {
    .name = "ValidationError", .type = SCHEMA_OBJECT, .fields = validation_fields,
    .description = "The validation errors of forgot-password (the spec's shape).",
};

/* The spec's one exception to {detail: string}. */
static const struct schema *error_shape(const struct route *r, int status)
{
    return status == 422 && strcmp(r->pattern, "/api/auth/forgot-password") == 0
               ? &validation_error : &error_schema;
}

static const char *status_text(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Malformed JSON or a body that is not an object";
    case 401: return "Missing, invalid or expired token";
    case 403: return "The caller's role is not allowed";
    case 404: return "No such resource, or not visible to this caller";
    case 405: return "Method not allowed";
    case 409: return "Conflict with the current state";
    case 413: return "Request body too large";
    case 415: return "The body is not application/json";
    case 422: return "Well-formed but invalid (the detail names the field)";
    case 429: return "Too many requests";
    case 500: return "Internal error";
    case 503: return "Redis unavailable";
    }
    return "Error";
}

/* ---- building blocks ------------------------------------------------------------- */

/* Adds item under name (or to an array), freeing it on failure. */
static int put(cJSON *o, const char *name, cJSON *item)
{
    if (item == NULL)
        return -1;
    if ((name ? cJSON_AddItemToObject(o, name, item) : cJSON_AddItemToArray(o, item)) == 0) {
        cJSON_Delete(item);
        return -1;
    }
    return 0;
}

static cJSON *json_body(const struct schema *s, cJSON *schemas)
{
    cJSON *content = cJSON_CreateObject();
    cJSON *media = content ? cJSON_AddObjectToObject(content, "application/json") : NULL;

    if (media == NULL || put(media, "schema", schema_openapi(s, schemas)) != 0) {
        cJSON_Delete(content);
        return NULL;
    }
    return content;
}

/* {items: [item], total} */
static cJSON *list_body(const struct schema *item, cJSON *schemas)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *props = o ? cJSON_AddObjectToObject(o, "properties") : NULL;
    cJSON *items = props ? cJSON_AddObjectToObject(props, "items") : NULL;
    cJSON *total = props ? cJSON_AddObjectToObject(props, "total") : NULL;
    const char *required[] = { "items", "total" };

    if (items == NULL || total == NULL || !cJSON_AddStringToObject(o, "type", "object") ||
        !cJSON_AddStringToObject(items, "type", "array") ||
        put(items, "items", schema_openapi(item, schemas)) != 0 ||
        !cJSON_AddStringToObject(total, "type", "integer") ||
        !cJSON_AddNumberToObject(total, "minimum", 0) ||
        !cJSON_AddStringToObject(total, "description", "matches before paging") ||
        put(o, "required", cJSON_CreateStringArray(required, 2)) != 0 ||
        !cJSON_AddFalseToObject(o, "additionalProperties")) {
        cJSON_Delete(o);
        return NULL;
    }
    cJSON *content = cJSON_CreateObject();
    cJSON *media = content ? cJSON_AddObjectToObject(content, "application/json") : NULL;
    if (media == NULL || put(media, "schema", o) != 0) {
        cJSON_Delete(content);
        return NULL;
    }
    return content;
}

/* {name, in, required, schema} with schema {type} (+ format / bounds). */
static cJSON *parameter(const char *name, const char *in, const char *type, const char *format)
{
    cJSON *p = cJSON_CreateObject();
    cJSON *schema = p ? cJSON_AddObjectToObject(p, "schema") : NULL;

    if (schema == NULL || !cJSON_AddStringToObject(p, "name", name) ||
        !cJSON_AddStringToObject(p, "in", in) ||
        !cJSON_AddBoolToObject(p, "required", strcmp(in, "path") == 0) ||
        !cJSON_AddStringToObject(schema, "type", type) ||
        (format != NULL && !cJSON_AddStringToObject(schema, "format", format))) {
        cJSON_Delete(p);
        return NULL;
    }
    return p;
}

/* One row of a route's query schema: its table gives the type, bounds,
 * default and description, as it does for bodies. */
static cJSON *query_parameter(const struct schema_field *f, cJSON *schemas)
{
    cJSON *p = cJSON_CreateObject();
    cJSON *schema = p != NULL ? schema_openapi(f->schema, schemas) : NULL;

    /* once in p, the schema goes with it; put() frees what it cannot add */
    if (put(p, "schema", schema) != 0 ||
        !cJSON_AddStringToObject(p, "name", f->name) ||
        !cJSON_AddStringToObject(p, "in", "query") ||
        !cJSON_AddBoolToObject(p, "required", f->required) ||
        (f->description != NULL && !cJSON_AddStringToObject(p, "description", f->description)) ||
        (f->dflt != NULL && put(schema, "default", cJSON_Parse(f->dflt)) != 0)) {
        cJSON_Delete(p);
        return NULL;
    }
    return p;
}

/* Every {name} segment of the pattern: a UUID, as every id of the API. */
static int path_parameters(cJSON *params, const char *pattern)
{
    char name[ROUTE_PARAM_MAX];

    for (const char *s = strchr(pattern, '{'); s != NULL; s = strchr(s + 1, '{')) {
        size_t n = strcspn(s + 1, "}");
        if (n == 0 || n >= sizeof name)
            return -1;
        memcpy(name, s + 1, n);
        name[n] = '\0';
        if (put(params, NULL, parameter(name, "path", "string", "uuid")) != 0)
            return -1;
    }
    return 0;
}

static int parameters(cJSON *op, const struct route *r, cJSON *schemas)
{
    cJSON *params = cJSON_CreateArray();

    if (put(op, "parameters", params) != 0 || path_parameters(params, r->pattern) != 0)
        return -1;
    for (const struct schema_field *f = r->doc->query ? r->doc->query->fields : NULL;
         f != NULL && f->name != NULL; f++)
        if (put(params, NULL, query_parameter(f, schemas)) != 0)
            return -1;
    if (cJSON_GetArraySize(params) == 0)
        cJSON_DeleteItemFromObjectCaseSensitive(op, "parameters");
    return 0;
}

/* one media type of a streamed body: its bytes, or a form whose part
 * form_part holds them */
static int stream_type(cJSON *content, const char *type, const char *form_part)
{
    cJSON *media = cJSON_AddObjectToObject(content, type);
    cJSON *schema = media != NULL ? cJSON_AddObjectToObject(media, "schema") : NULL;

    if (schema == NULL)
        return -1;
    if (form_part == NULL || strcmp(type, "multipart/form-data") != 0)
        return cJSON_AddStringToObject(schema, "type", "string") != NULL ? 0 : -1;
    cJSON *props = cJSON_AddObjectToObject(schema, "properties");
    cJSON *part = props != NULL ? cJSON_AddObjectToObject(props, form_part) : NULL;
    cJSON *required = cJSON_AddArrayToObject(schema, "required");
    cJSON *name = cJSON_CreateString(form_part);
    if (part == NULL || required == NULL || name == NULL ||
        !cJSON_AddItemToArray(required, name)) {
        cJSON_Delete(name);
        return -1;
    }
    return cJSON_AddStringToObject(schema, "type", "object") != NULL &&
                   cJSON_AddStringToObject(part, "type", "string") != NULL &&
                   cJSON_AddStringToObject(part, "contentMediaType", "application/octet-stream")
               ? 0 : -1;
}

/* a streamed body: text or bytes of the stream's media types */
static int stream_body(cJSON *op, const struct route_stream *s)
{
    cJSON *body = cJSON_AddObjectToObject(op, "requestBody");
    cJSON *content = body != NULL ? cJSON_AddObjectToObject(body, "content") : NULL;

    if (content == NULL || !cJSON_AddTrueToObject(body, "required"))
        return -1;
    if (s->media_types == NULL)
        return stream_type(content, s->media_type, NULL);
    for (const char *const *t = s->media_types; *t != NULL; t++)
        if (stream_type(content, *t, s->form_part) != 0)
            return -1;
    return 0;
}

static int request_body(cJSON *op, const struct route *r, cJSON *schemas)
{
    if (r->doc->stream != NULL)
        return stream_body(op, r->doc->stream);
    if (r->doc->request == NULL)
        return 0;
    cJSON *body = cJSON_AddObjectToObject(op, "requestBody");
    if (body == NULL || !cJSON_AddTrueToObject(body, "required"))
        return -1;
    return put(body, "content", json_body(r->doc->request, schemas));
}

static int response(cJSON *responses, int status, const char *description, cJSON *content)
{
    char code[8];
    cJSON *resp = cJSON_CreateObject();

    snprintf(code, sizeof code, "%d", status);
    if (put(responses, code, resp) != 0 || !cJSON_AddStringToObject(resp, "description", description)) {
        cJSON_Delete(content);
        return -1;
    }
    return content != NULL ? put(resp, "content", content) : 0;
}

static bool listed(const int *errors, int status)
{
    for (; errors != NULL && *errors != 0; errors++)
        if (*errors == status)
            return true;
    return false;
}

static int error_response(cJSON *responses, const struct route *r, int status, cJSON *schemas)
{
    cJSON *content = json_body(error_shape(r, status), schemas);

    return content != NULL ? response(responses, status, status_text(status), content) : -1;
}

/* content["text/csv"]: {schema: {type: string, description}} */
static int csv_media(cJSON *content, const char *description)
{
    cJSON *media = cJSON_AddObjectToObject(content, "text/csv");
    cJSON *schema = media ? cJSON_AddObjectToObject(media, "schema") : NULL;

    if (schema == NULL || !cJSON_AddStringToObject(schema, "type", "string") ||
        !cJSON_AddStringToObject(schema, "description", description))
        return -1;
    return 0;
}

/* The success answer, then each error; 401 and 403 follow from the
 * route's roles even where the doc does not list them. */
static int responses(cJSON *op, const struct route *r, cJSON *schemas)
{
    const struct route_doc *d = r->doc;
    cJSON *resps = cJSON_AddObjectToObject(op, "responses");
    cJSON *content = NULL;

    if (resps == NULL)
        return -1;
    if (d->list)
        content = list_body(d->response, schemas);
    else if (d->response != NULL)
        content = json_body(d->response, schemas);
    if ((d->list || d->response != NULL) && content == NULL)
        return -1;
    if (d->csv != NULL && content != NULL && csv_media(content, d->csv) != 0) {
        cJSON_Delete(content);
        return -1;
    }
    if (response(resps, d->status, status_text(d->status), content) != 0)
        return -1;
    if (r->roles != 0 && !listed(d->errors, 401) && error_response(resps, r, 401, schemas) != 0)
        return -1;
    if (r->roles != 0 && (r->roles & ROLES_ANY) != ROLES_ANY && !listed(d->errors, 403) &&
        error_response(resps, r, 403, schemas) != 0)
        return -1;
    for (const int *e = d->errors; e != NULL && *e != 0; e++)
        if (error_response(resps, r, *e, schemas) != 0)
            return -1;
    /* a body over the limit: nginx's 413, in the API's shape (the two
     * routes whose failures the spec fixes answer it as 400 and 422) */
    if (r->body == BODY_JSON && !listed(d->errors, 413) &&
        error_response(resps, r, 413, schemas) != 0)
        return -1;
    return 0;
}

/* "Roles: admin, operator." */
static void roles_text(unsigned roles, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "Roles:");

    for (unsigned bit = ROLE_ADMIN; bit <= ROLE_ADVERTISER && used < len; bit <<= 1)
        if (roles & bit)
            used += (size_t)snprintf(buf + used, len - used, "%s %s", used > 6 ? "," : "",
                                     role_name(bit));
    if (used < len)
        snprintf(buf + used, len - used, ".");
}

static int security(cJSON *op, const struct route *r)
{
    char roles[64];
    cJSON *sec = cJSON_AddArrayToObject(op, "security");

    if (sec == NULL)
        return -1;
    if (r->roles == 0)      /* explicitly public */
        return cJSON_AddStringToObject(op, "description", "Public: no token.") ? 0 : -1;
    cJSON *req = cJSON_CreateObject();
    bool service = r->roles == ROLE_SERVICE;
    if (put(sec, NULL, req) != 0 ||
        cJSON_AddArrayToObject(req, service ? "serviceKey" : "bearerAuth") == NULL)
        return -1;
    if (service)
        return cJSON_AddStringToObject(op, "description",
                                       "The service credential only (README \"internal\").")
                   ? 0 : -1;
    roles_text(r->roles, roles, sizeof roles);
    return cJSON_AddStringToObject(op, "description", roles) ? 0 : -1;
}

/* "patch_api_ad_units_id": unique, since method + pattern is. */
static void operation_id(const struct route *r, char *buf, size_t len)
{
    size_t n = 0;

    for (const char *p = r->method; *p && n + 1 < len; p++)
        buf[n++] = (char)tolower((unsigned char)*p);
    for (const char *p = r->pattern; *p && n + 1 < len; p++)
        if (isalnum((unsigned char)*p))
            buf[n++] = *p;
        else if (n > 0 && buf[n - 1] != '_')
            buf[n++] = '_';
    while (n > 0 && buf[n - 1] == '_')
        n--;
    buf[n] = '\0';
}

static const char *route_tag(const struct route *r)
{
    return r->doc->tag != NULL ? r->doc->tag : "Other";
}

static cJSON *operation(const struct route *r, cJSON *schemas)
{
    char id[160];
    cJSON *op = cJSON_CreateObject();
    cJSON *tags = op ? cJSON_AddArrayToObject(op, "tags") : NULL;

    operation_id(r, id, sizeof id);
    if (tags == NULL || put(tags, NULL, cJSON_CreateString(route_tag(r))) != 0 ||
        (r->doc->summary != NULL && !cJSON_AddStringToObject(op, "summary", r->doc->summary)) ||
        !cJSON_AddStringToObject(op, "operationId", id) || parameters(op, r, schemas) != 0 ||
        request_body(op, r, schemas) != 0 || responses(op, r, schemas) != 0 ||
        security(op, r) != 0) {
        cJSON_Delete(op);
        return NULL;
    }
    return op;
}

static int add_operation(cJSON *paths, const struct route *r, cJSON *schemas)
{
    char method[16];
    cJSON *item = cJSON_GetObjectItemCaseSensitive(paths, r->pattern);

    if (item == NULL && (item = cJSON_AddObjectToObject(paths, r->pattern)) == NULL)
        return -1;
    size_t i = 0;
    for (; r->method[i] && i + 1 < sizeof method; i++)
        method[i] = (char)tolower((unsigned char)r->method[i]);
    method[i] = '\0';
    return put(item, method, operation(r, schemas));
}

static int add_tag(cJSON *tags, const char *name)
{
    const cJSON *t;

    cJSON_ArrayForEach(t, tags)
        if (strcmp(cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring, name) == 0)
            return 0;
    cJSON *tag = cJSON_CreateObject();
    return put(tags, NULL, tag) == 0 && cJSON_AddStringToObject(tag, "name", name) ? 0 : -1;
}

/* ---- the document -------------------------------------------------------------- */

static int header(cJSON *doc)
{
    cJSON *version = cJSON_AddStringToObject(doc, "openapi", OPENAPI_VERSION);
    cJSON *info = cJSON_AddObjectToObject(doc, "info");
    cJSON *servers = cJSON_AddArrayToObject(doc, "servers");
    cJSON *server = servers ? cJSON_CreateObject() : NULL;

    if (version == NULL || info == NULL ||
        !cJSON_AddStringToObject(info, "title", API_TITLE) ||
        !cJSON_AddStringToObject(info, "version", API_VERSION) ||
        !cJSON_AddStringToObject(info, "description",
                                 "The adserve management interface. Every error is "
                                 "{\"detail\": \"...\"}. Bearer tokens come from "
                                 "POST /api/auth/login.") ||
        put(servers, NULL, server) != 0 || !cJSON_AddStringToObject(server, "url", "/") ||
        !cJSON_AddStringToObject(server, "description", "nginx in front of the sidecar"))
        return -1;
    return 0;
}

static int components(cJSON *doc, cJSON **schemas)
{
    cJSON *comps = cJSON_AddObjectToObject(doc, "components");
    cJSON *sec = comps ? cJSON_AddObjectToObject(comps, "securitySchemes") : NULL;
    cJSON *bearer = sec ? cJSON_AddObjectToObject(sec, "bearerAuth") : NULL;
    cJSON *service = sec ? cJSON_AddObjectToObject(sec, "serviceKey") : NULL;

    *schemas = comps ? cJSON_AddObjectToObject(comps, "schemas") : NULL;
    if (*schemas == NULL || bearer == NULL || !cJSON_AddStringToObject(bearer, "type", "http") ||
        !cJSON_AddStringToObject(bearer, "scheme", "bearer") ||
        !cJSON_AddStringToObject(bearer, "bearerFormat", "JWT"))
        return -1;
    /* the internal group's: the contents of the sidecar's service.key */
    if (service == NULL || !cJSON_AddStringToObject(service, "type", "http") ||
        !cJSON_AddStringToObject(service, "scheme", "bearer") ||
        !cJSON_AddStringToObject(service, "description",
                                 "the service credential, $ADSERVE_VAR/secrets/service.key"))
        return -1;
    return 0;
}

/* ---- state machines ----------------------------------------------------------- */

/* The resources whose state changes the server restricts: their record
 * schemas carry x-state (the field) and x-transitions ({from (null: any
 * state), to, roles (absent: whoever may write)}), so that a client (the
 * console) offers the changes the server takes and nothing else. */
static const struct resource *const stateful[] = {
    &resource_orders, &resource_line_items, &resource_experiments,
};

static cJSON *transition_json(const struct resource_transition *t)
{
    cJSON *o = cJSON_CreateObject(), *roles;

    if (o == NULL ||
        !cJSON_AddItemToObject(o, "from", t->from ? cJSON_CreateString(t->from) : cJSON_CreateNull()) ||
        cJSON_AddStringToObject(o, "to", t->to) == NULL) {
        cJSON_Delete(o);
        return NULL;
    }
    if (t->roles == 0)
        return o;
    roles = cJSON_AddArrayToObject(o, "roles");
    for (unsigned bit = ROLE_ADMIN; roles != NULL && bit <= ROLE_ADVERTISER; bit <<= 1)
        if ((t->roles & bit) && !cJSON_AddItemToArray(roles, cJSON_CreateString(role_name(bit))))
            roles = NULL;
    if (roles == NULL) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static int state_machines(cJSON *schemas)
{
    for (size_t i = 0; i < sizeof stateful / sizeof stateful[0]; i++) {
        const struct resource_states *st = stateful[i]->states;
        cJSON *schema = cJSON_GetObjectItemCaseSensitive(schemas, stateful[i]->schema->name);
        cJSON *list = schema ? cJSON_AddArrayToObject(schema, "x-transitions") : NULL;

        if (list == NULL || cJSON_AddStringToObject(schema, "x-state", st->field) == NULL)
            return -1;
        for (const struct resource_transition *t = st->transitions; t->to != NULL; t++) {
            cJSON *o = transition_json(t);
            if (o == NULL || !cJSON_AddItemToArray(list, o)) {
                cJSON_Delete(o);
                return -1;
            }
        }
    }
    return 0;
}

/* The first undocumented route, or NULL. */
static const struct route *undocumented(void)
{
    for (size_t t = 0; t < route_tables_count; t++)
        for (size_t i = 0; i < *route_tables[t].count; i++)
            if (route_tables[t].routes[i].doc == NULL)
                return &route_tables[t].routes[i];
    return NULL;
}

static cJSON *document(void)
{
    cJSON *doc = cJSON_CreateObject(), *schemas = NULL;

    if (doc == NULL || header(doc) != 0 || components(doc, &schemas) != 0)
        goto fail;
    cJSON *tags = cJSON_AddArrayToObject(doc, "tags"), *paths = cJSON_AddObjectToObject(doc, "paths");
    if (tags == NULL || paths == NULL)
        goto fail;
    for (size_t t = 0; t < route_tables_count; t++)
        for (size_t i = 0; i < *route_tables[t].count; i++) {
            const struct route *r = &route_tables[t].routes[i];
            if (add_tag(tags, route_tag(r)) != 0 || add_operation(paths, r, schemas) != 0)
                goto fail;
        }
    if (state_machines(schemas) != 0)
        goto fail;
    return doc;
fail:
    cJSON_Delete(doc);
    return NULL;
}

static void api_openapi(struct request *req, struct reply *rep)
{
    const struct route *r = undocumented();

    (void)req;
    if (r != NULL) {
        log_line("openapi: route %s %s has no route_doc", r->method, r->pattern);
        reply_error(rep, 500, "route %s %s is not documented", r->method, r->pattern);
        return;
    }
    reply_json(rep, 200, document());
}

static const struct schema openapi_document = {
    .type = SCHEMA_FREE_OBJECT, .description = "An OpenAPI 3.1.0 document",
};
static const int openapi_errors[] = { 500, 0 };
static const struct route_doc openapi_doc = {
    .tag = "System", .response = &openapi_document, .status = 200, .errors = openapi_errors,
    .summary = "This OpenAPI 3.1.0 document (every route of the management interface)",
};

const struct route openapi_routes[] = {
    { "GET", "/api/openapi.json", api_openapi, 0, BODY_NONE, &openapi_doc },
};
const size_t openapi_routes_count = sizeof openapi_routes / sizeof openapi_routes[0];
