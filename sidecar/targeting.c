/* Line item targeting: the shape (schema_targeting) and the checks of what
 * a well-formed rule refers to (targeting_check).
 *
 * Redis layout read here. The demand resources write it (resource.h names
 * the keys; these are its macros); this is the contract between the two:
 *   adserve:ad_units                         hash  ad unit id -> AdUnit JSON
 *   adserve:placements                       hash  placement id -> Placement JSON
 *   adserve:targeting_keys                   hash  key id -> {id, name, type}, type
 *                                                  PREDEFINED or FREEFORM
 *   adserve:targeting_key_names              hash  key name -> key id
 *   adserve:targeting_values:{key_id}        hash  value id -> {id, key_id, name}
 *   adserve:targeting_value_names:{key_id}   hash  value name -> value id
 * A kv rule names keys and values by name (lhs ["section"], rhs "sport"),
 * so only the name indexes and the key records are read.
 *
 * What a rule means at serving (device, user, dayparts, kv: the op / rhs
 * agreement, nesting up to ADSERVE_KV_MAX_DEPTH, at most ADSERVE_KV_MAX_CMPS
 * comparisons and ADSERVE_KV_MAX_RHS rhs values, finite numbers) is judged
 * by serving's compiler, adserve_target_check (src/adserve_target.c),
 * linked here: the API accepts exactly the rules serving can evaluate.
 * What is checked here:
 *   - an ad unit both included and excluded is a contradiction;
 *   - ad units, placements and segments exist;
 *   - kv keys exist, and a PREDEFINED key's values are a closed set of
 *     names, so its rhs values must be strings naming one (a number is
 *     refused: lt / le / gt / ge cannot apply to such a key); a FREEFORM
 *     key takes any string or number;
 *   - the same id twice in one list is harmless and kept.
 * Every refusal is a 422 "targeting.<path>: <why>"; Redis failures are the
 * usual 503 / 500. Local checks come first, so a malformed rule never
 * costs a Redis round trip. */
#include "targeting.h"

#include "ad_units.h"
#include "log.h"
#include "resource.h"
#include "schemas.h"

#include "adserve_target.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IDS 1000            /* include, exclude, placements (each) */
#define MAX_SIZES 100
#define MAX_DAYPARTS 64
/* store_cmd takes at most 64 arguments: HMGET, the hash, 62 fields. */
#define HMGET_BATCH 62
#define KEY_ID_MAX 128

/* ---- the shape ----------------------------------------------------------------- */

static const struct schema uuid = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_UUID };
static const struct schema uuid_list = { .type = SCHEMA_ARRAY, .items = &uuid,
                                         .max_items = MAX_IDS };

static const struct schema_field ad_units_fields[] = {
    { "include", &uuid_list, .dflt = "[]",
      .description = "serve only on these ad units and their descendants; empty: on any" },
    { "exclude", &uuid_list, .dflt = "[]",
      .description = "never serve on these ad units or their descendants" },
    { NULL },
};
static const struct schema ad_units = {
    .name = "TargetingAdUnits", .type = SCHEMA_OBJECT, .fields = ad_units_fields,
};

static const struct schema segment_list = { .type = SCHEMA_ARRAY, .items = &uuid,
                                            .max_items = ADSERVE_SEGMENTS_MAX };
static const struct schema_field segments_fields[] = {
    { "include", &segment_list, .dflt = "[]",
      .description = "the user must be in one of these; empty: any user" },
    { "exclude", &segment_list, .dflt = "[]", .description = "the user must be in none of these" },
    { NULL },
};
static const struct schema segments = {
    .name = "TargetingSegments", .type = SCHEMA_OBJECT, .fields = segments_fields,
    .description = "Custom targeting segments, read per request with the frequency caps: "
                   "while a user's memberships are unknown (Redis late or away), the line item "
                   "does not serve; a request without user.id is in no segment.",
};

static const struct schema pixels = { .type = SCHEMA_INTEGER, .has_min = true, .min = 0 };
static const struct schema_field size_fields[] = {
    { "w", &pixels, .required = true, .description = "width in pixels" },
    { "h", &pixels, .required = true, .description = "height in pixels" },
    { NULL },
};
static const struct schema size = {
    .name = "TargetingSize", .type = SCHEMA_OBJECT, .fields = size_fields,
};
static const struct schema size_list = { .type = SCHEMA_ARRAY, .items = &size,
                                         .max_items = MAX_SIZES };

static const struct schema device_type = { .type = SCHEMA_STRING,
                                           .enum_values = adserve_device_type_names };
static const struct schema os = { .type = SCHEMA_STRING, .enum_values = adserve_os_names };
static const struct schema browser = { .type = SCHEMA_STRING,
                                       .enum_values = adserve_browser_names };
static const struct schema device_type_list = { .type = SCHEMA_ARRAY, .items = &device_type };
static const struct schema os_list = { .type = SCHEMA_ARRAY, .items = &os };
static const struct schema browser_list = { .type = SCHEMA_ARRAY, .items = &browser };

/* Read from the request's user-agent by serving; empty: any. */
static const struct schema_field device_fields[] = {
    { "types", &device_type_list, .dflt = "[]", .description = "any of these; empty: any" },
    { "os", &os_list, .dflt = "[]", .description = "any of these; empty: any" },
    { "browsers", &browser_list, .dflt = "[]", .description = "any of these; empty: any" },
    { NULL },
};
static const struct schema device = {
    .name = "TargetingDevice", .type = SCHEMA_OBJECT, .fields = device_fields,
};

static const struct schema yob = { .type = SCHEMA_INTEGER, .has_min = true, .min = 1900,
                                   .has_max = true, .max = 2100, .nullable = true };
static const struct schema gender = { .type = SCHEMA_STRING,
                                      .enum_values = adserve_gender_names };
static const struct schema gender_list = { .type = SCHEMA_ARRAY, .items = &gender };
static const struct schema_field user_fields[] = {
    { "yob_min", &yob, .dflt = "null", .description = "earliest year of birth; null: no bound" },
    { "yob_max", &yob, .dflt = "null",
      .description = "latest year of birth, >= yob_min; null: no bound" },
    { "genders", &gender_list, .dflt = "[]", .description = "any of these; empty: any" },
    { NULL },
};
static const struct schema user = {
    .name = "TargetingUser", .type = SCHEMA_OBJECT, .fields = user_fields,
};

static const struct schema weekday = { .type = SCHEMA_STRING,
                                       .enum_values = adserve_weekday_names };
static const struct schema weekday_list = { .type = SCHEMA_ARRAY, .items = &weekday };
static const struct schema zone = { .type = SCHEMA_STRING, .enum_values = adserve_zone_names };
static const struct schema hhmm = { .type = SCHEMA_STRING };
static const struct schema_field daypart_fields[] = {
    { "days", &weekday_list, .required = true, .description = "not empty" },
    { "start", &hhmm, .required = true, .description = "HH:MM, 00:00 to 23:59, inclusive" },
    { "end", &hhmm, .required = true,
      .description = "HH:MM, after start, up to 24:00, exclusive; past midnight: two dayparts" },
    { "tz", &zone, .dflt = SCHEMA_JSON_STR(ADSERVE_V_UTC), .description = "only UTC for now" },
    { NULL },
};
static const struct schema daypart = {
    .name = "TargetingDaypart", .type = SCHEMA_OBJECT, .fields = daypart_fields,
};
static const struct schema daypart_list = { .type = SCHEMA_ARRAY, .items = &daypart,
                                            .max_items = MAX_DAYPARTS };

static const struct schema_field targeting_fields[] = {
    { "ad_units", &ad_units, .dflt = "{}" },
    { "placements", &uuid_list, .dflt = "[]", .description = "any of these; empty: any" },
    { "sizes", &size_list, .dflt = "[]", .description = "any of these; empty: any" },
    { "kv", &schema_expr_n, .dflt = "null",
      .description = "custom key-values: each cmp's lhs is [key name]; null: any" },
    { "device", &device, .dflt = "{}" },
    { "user", &user, .dflt = "{}" },
    { "dayparts", &daypart_list, .dflt = "[]", .description = "any of these; empty: always" },
    { "segments", &segments, .dflt = "{}" },
    { NULL },
};
const struct schema schema_targeting = {
    .name = "Targeting", .type = SCHEMA_OBJECT, .fields = targeting_fields,
    .description = "Every part must match (an empty list or null matches anything).",
};

/* ---- paths and refusals ----------------------------------------------------------- */

struct path {
    char buf[256];
    size_t len;
};

static void path_init(struct path *p)
{
    p->len = (size_t)snprintf(p->buf, sizeof p->buf, "targeting");
}

static size_t path_append(struct path *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends to the path, truncated at the buffer's end; returns the previous
 * length for path_pop. */
static size_t path_append(struct path *p, const char *fmt, ...)
{
    size_t old = p->len;
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(p->buf + p->len, sizeof p->buf - p->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        p->len = p->len + (size_t)n < sizeof p->buf ? p->len + (size_t)n : sizeof p->buf - 1;
    return old;
}

/* ".name" */
static size_t path_name(struct path *p, const char *name)
{
    return path_append(p, ".%s", name);
}

/* "[i]" */
static size_t path_index(struct path *p, int i)
{
    return path_append(p, "[%d]", i);
}

static void path_pop(struct path *p, size_t old)
{
    p->len = old;
    p->buf[old] = '\0';
}

static int invalid(struct reply *rep, const struct path *p, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 422 "<path>: <why>"; always -1, so callers can return it. */
static int invalid(struct reply *rep, const struct path *p, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        msg[0] = '\0';
    reply_error(rep, 422, "%s: %s", p->buf, msg);
    return -1;
}

static int out_of_memory(struct reply *rep)
{
    reply_error(rep, 500, "internal error");
    return -1;
}

static const cJSON *member(const cJSON *o, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(o, name);
}

static bool is_null(const cJSON *v)
{
    return v == NULL || cJSON_IsNull(v);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ---- local checks: no Redis -------------------------------------------------------- */

/* The strings of an array, as a new array of pointers into it (*n set);
 * NULL when empty or out of memory (*n tells them apart). */
static const char **strings_of(const cJSON *list, size_t *n)
{
    const char **s;
    size_t i = 0;

    *n = (size_t)cJSON_GetArraySize(list);
    if (*n == 0 || (s = malloc(*n * sizeof *s)) == NULL)
        return NULL;
    for (const cJSON *e = list->child; e != NULL && i < *n; e = e->next)
        s[i++] = cJSON_IsString(e) ? e->valuestring : "";
    return s;
}

/* An ad unit both included and excluded is a contradiction, not a rule. */
static int check_overlap(const cJSON *include, const cJSON *exclude, struct reply *rep)
{
    size_t n;
    const char **in = strings_of(include, &n);
    struct path p;
    int i = 0;

    if (n == 0 || cJSON_GetArraySize(exclude) == 0) {
        free(in);
        return 0;
    }
    if (in == NULL)
        return out_of_memory(rep);
    qsort(in, n, sizeof *in, cmp_str);
    path_init(&p);
    path_name(&p, "ad_units.exclude");
    for (const cJSON *e = exclude->child; e != NULL; e = e->next, i++) {
        const char *id = cJSON_GetStringValue(e);
        if (id != NULL && bsearch(&id, in, n, sizeof *in, cmp_str) != NULL) {
            path_index(&p, i);
            free(in);
            return invalid(rep, &p, "ad unit \"%s\" is also in include", id);
        }
    }
    free(in);
    return 0;
}

/* ---- kv: one walk, three visits ----------------------------------------------------- */

enum key_type {
    KEY_MISSING,
    KEY_NAMED,          /* in the name index; its record not read yet */
    KEY_PREDEFINED,
    KEY_FREEFORM,
};

/* A key named by some cmp's lhs, and the string values used with it. */
struct kv_key {
    const char *name;           /* in the targeting object */
    enum key_type type;
    char id[KEY_ID_MAX];
    const char **values;        /* sorted and distinct once looked up */
    bool *known;                /* per value: a value of the key */
    size_t n_values, cap_values;
};

struct kv_check {
    struct kv_key keys[ADSERVE_KV_MAX_CMPS];    /* at most one new key per cmp */
    size_t n_keys;
    struct reply *rep;
};

typedef int (*cmp_visit)(struct kv_check *k, const cJSON *cmp, struct path *p);

static int walk(struct kv_check *k, const cJSON *e, struct path *p, int depth, cmp_visit visit);

static int walk_list(struct kv_check *k, const cJSON *list, struct path *p, int depth,
                     cmp_visit visit)
{
    int i = 0;

    if (cJSON_GetArraySize(list) == 0)
        return invalid(k->rep, p, "must hold at least one expression");
    for (const cJSON *e = list->child; e != NULL; e = e->next, i++) {
        size_t old = path_index(p, i);
        if (walk(k, e, p, depth + 1, visit) != 0)
            return -1;
        path_pop(p, old);
    }
    return 0;
}

/* The schema made e a well-formed Expr; the walk adds the limits and hands
 * each cmp's data to visit, with the path kept for the answer. */
static int walk(struct kv_check *k, const cJSON *e, struct path *p, int depth, cmp_visit visit)
{
    const char *type = json_str_member(e, "type");
    const cJSON *data = member(e, "data");

    if (depth > ADSERVE_KV_MAX_DEPTH || type == NULL || data == NULL)
        return invalid(k->rep, p, "internal error: a rule the compiler refused");
    size_t old = path_name(p, "data");
    int node = adserve_vocab_str(adserve_expr_names, type);
    int rc = node == ADSERVE_EXPR_CMP   ? visit(k, data, p)
           : node == ADSERVE_EXPR_NOT   ? walk(k, data, p, depth + 1, visit)
                                        : walk_list(k, data, p, depth, visit);
    if (rc == 0)
        path_pop(p, old);
    return rc;
}

static int walk_kv(struct kv_check *k, const cJSON *kv, cmp_visit visit)
{
    struct path p;

    path_init(&p);
    path_name(&p, "kv");
    return walk(k, kv, &p, 1, visit);
}

static struct kv_key *find_key(struct kv_check *k, const char *name)
{
    for (size_t i = 0; i < k->n_keys; i++)
        if (strcmp(k->keys[i].name, name) == 0)
            return &k->keys[i];
    return NULL;
}

/* The one key name of a cmp's lhs (the schema made it an array of strings). */
static const char *lhs_key(const cJSON *cmp)
{
    return cJSON_GetStringValue(cJSON_GetArrayItem(member(cmp, "lhs"), 0));
}

/* ---- visit 1: the keys the cmps name (the compiler vouched for the shape) ---- */

static int visit_names(struct kv_check *k, const cJSON *cmp, struct path *p)
{
    const char *name = lhs_key(cmp);

    (void)p;
    if (find_key(k, name) == NULL)
        k->keys[k->n_keys++].name = name;
    return 0;
}

/* ---- visit 2: each key exists; a PREDEFINED key's values are collected ---- */

static int add_value(struct kv_key *key, const char *v, struct reply *rep)
{
    if (key->n_values == key->cap_values) {
        size_t cap = key->cap_values ? key->cap_values * 2 : 16;
        const char **grown = realloc(key->values, cap * sizeof *grown);
        if (grown == NULL)
            return out_of_memory(rep);
        key->values = grown;
        key->cap_values = cap;
    }
    key->values[key->n_values++] = v;
    return 0;
}

/* A value of a PREDEFINED key: a string (collected) naming one of its values. */
static int predefined_value(struct kv_check *k, struct kv_key *key, const cJSON *v,
                            struct path *p)
{
    if (!cJSON_IsString(v))
        return invalid(k->rep, p, "must be a string naming a value of PREDEFINED key \"%s\"",
                       key->name);
    return add_value(key, v->valuestring, k->rep);
}

/* Calls each(k, key, value, path) for rhs, or for each item of an array rhs. */
typedef int (*value_visit)(struct kv_check *k, struct kv_key *key, const cJSON *v,
                           struct path *p);

static int each_value(struct kv_check *k, struct kv_key *key, const cJSON *cmp, struct path *p,
                      value_visit each)
{
    const cJSON *rhs = member(cmp, "rhs");
    size_t old = path_name(p, "rhs");
    int i = 0;

    if (!cJSON_IsArray(rhs)) {
        if (each(k, key, rhs, p) != 0)
            return -1;
        path_pop(p, old);
        return 0;
    }
    for (const cJSON *e = rhs->child; e != NULL; e = e->next, i++) {
        size_t at = path_index(p, i);
        if (each(k, key, e, p) != 0)
            return -1;
        path_pop(p, at);
    }
    path_pop(p, old);
    return 0;
}

static int visit_keys(struct kv_check *k, const cJSON *cmp, struct path *p)
{
    struct kv_key *key = find_key(k, lhs_key(cmp));

    if (key->type == KEY_MISSING) {
        path_name(p, "lhs[0]");
        return invalid(k->rep, p, "\"%s\" is not a custom targeting key", key->name);
    }
    if (key->type == KEY_FREEFORM)
        return 0;
    return each_value(k, key, cmp, p, predefined_value);
}

/* ---- visit 3: each collected value was found ---- */

static int known_value(struct kv_check *k, struct kv_key *key, const cJSON *v, struct path *p)
{
    const char **at = bsearch(&v->valuestring, key->values, key->n_values, sizeof *key->values,
                              cmp_str);

    if (at != NULL && key->known[at - key->values])
        return 0;
    return invalid(k->rep, p, "\"%s\" is not a value of key \"%s\"", v->valuestring, key->name);
}

static int visit_values(struct kv_check *k, const cJSON *cmp, struct path *p)
{
    struct kv_key *key = find_key(k, lhs_key(cmp));

    return key->type != KEY_PREDEFINED ? 0 : each_value(k, key, cmp, p, known_value);
}

static void kv_free(struct kv_check *k)
{
    if (k == NULL)
        return;
    for (size_t i = 0; i < k->n_keys; i++) {
        free(k->keys[i].values);
        free(k->keys[i].known);
    }
    free(k);
}

/* ---- Redis: HMGET in batches ----------------------------------------------------- */

/* Reads one HMGET reply of m fields: present[i], and a copy of each value
 * when vals is not NULL. -1 on a reply of the wrong shape or OOM. */
static int read_hmget(const redisReply *r, size_t m, bool *present, char **vals)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != m) {
        log_line("targeting: unexpected HMGET reply (type %d)", r->type);
        return -1;
    }
    for (size_t i = 0; i < m; i++) {
        const redisReply *e = r->element[i];
        present[i] = e->type == REDIS_REPLY_STRING;
        if (!present[i] && e->type != REDIS_REPLY_NIL)
            return -1;
        if (vals != NULL && present[i] && (vals[i] = strndup(e->str, e->len)) == NULL)
            return -1;
    }
    return 0;
}

static int hmget_batch(struct store_conn *c, const char *hash, const char *const *fields,
                       size_t m, bool *present, char **vals, struct reply *rep)
{
    const char *argv[HMGET_BATCH + 3] = { "HMGET", hash };
    redisReply *r;

    memcpy(argv + 2, fields, m * sizeof *fields);
    argv[2 + m] = NULL;
    enum store_status st = store_cmd(c, &r, argv);
    if (st != STORE_OK) {
        reply_store_error(rep, st);
        return -1;
    }
    int rc = read_hmget(r, m, present, vals);
    freeReplyObject(r);
    if (rc != 0)
        reply_error(rep, 500, "internal error");
    return rc;
}

/* HMGET hash fields[0..n): present[i] and, when vals is not NULL, vals[i]
 * (a copy the caller frees, NULL when absent; vals starts all NULL). */
static int hmget(struct store_conn *c, const char *hash, const char *const *fields, size_t n,
                 bool *present, char **vals, struct reply *rep)
{
    for (size_t at = 0; at < n; at += HMGET_BATCH) {
        size_t m = n - at < HMGET_BATCH ? n - at : HMGET_BATCH;
        if (hmget_batch(c, hash, fields + at, m, present + at, vals != NULL ? vals + at : NULL,
                        rep) != 0)
            return -1;
    }
    return 0;
}

static void free_strs(char **s, size_t n)
{
    for (size_t i = 0; s != NULL && i < n; i++)
        free(s[i]);
    free(s);
}

/* ---- Redis checks -------------------------------------------------------------- */

/* Every id of list (at path "targeting.<where>") is a field of hash. */
static int check_exist(struct store_conn *c, const char *hash, const cJSON *list,
                       const char *where, const char *what, struct reply *rep)
{
    size_t n;
    const char **ids = strings_of(list, &n);
    bool *present = ids != NULL ? malloc(n * sizeof *present) : NULL;
    int rc = n == 0 ? 0 : present == NULL ? out_of_memory(rep)
                                          : hmget(c, hash, ids, n, present, NULL, rep);

    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (!present[i]) {
            struct path p;
            path_init(&p);
            path_name(&p, where);
            path_index(&p, (int)i);
            rc = invalid(rep, &p, "%s \"%s\" does not exist", what, ids[i]);
        }
    }
    free(present);
    free(ids);
    return rc;
}

/* The type of a stored key record; -1 when it is not one (bad data). */
static int key_type_of(const char *json, enum key_type *type)
{
    cJSON *o = cJSON_Parse(json);
    const char *t = json_str_member(o, "type");
    int rc = 0;

    int k = adserve_vocab_str(adserve_key_type_names, t);

    if (k == ADSERVE_KEY_TYPE_PREDEFINED)
        *type = KEY_PREDEFINED;
    else if (k == ADSERVE_KEY_TYPE_FREEFORM)
        *type = KEY_FREEFORM;
    else
        rc = -1;
    cJSON_Delete(o);
    return rc;
}

/* Sets each key's id and type from its record. A name whose index entry
 * points at no record (a torn write) is a missing key, as serving would see it. */
static int key_records(struct store_conn *c, struct kv_check *k, struct reply *rep)
{
    const char *ids[ADSERVE_KV_MAX_CMPS];
    struct kv_key *of[ADSERVE_KV_MAX_CMPS];
    bool present[ADSERVE_KV_MAX_CMPS];
    char **recs = calloc(ADSERVE_KV_MAX_CMPS, sizeof *recs);
    size_t n = 0;

    if (recs == NULL)
        return out_of_memory(rep);
    for (size_t i = 0; i < k->n_keys; i++)
        if (k->keys[i].type != KEY_MISSING) {
            of[n] = &k->keys[i];
            ids[n++] = k->keys[i].id;
        }
    int rc = n == 0 ? 0 : hmget(c, ADSERVE_KEY_TARGETING_KEYS, ids, n, present, recs, rep);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (!present[i]) {
            of[i]->type = KEY_MISSING;
        } else if (key_type_of(recs[i], &of[i]->type) != 0) {
            log_line("targeting: key %s has no valid type", of[i]->id);
            reply_error(rep, 500, "internal error");
            rc = -1;
        }
    }
    free_strs(recs, ADSERVE_KV_MAX_CMPS);
    return rc;
}

/* Resolves each key name to its id (the name index), then its type. */
static int resolve_keys(struct store_conn *c, struct kv_check *k, struct reply *rep)
{
    const char *names[ADSERVE_KV_MAX_CMPS];
    bool present[ADSERVE_KV_MAX_CMPS];
    char **ids = calloc(ADSERVE_KV_MAX_CMPS, sizeof *ids);
    int rc;

    if (ids == NULL)
        return out_of_memory(rep);
    for (size_t i = 0; i < k->n_keys; i++)
        names[i] = k->keys[i].name;
    rc = hmget(c, ADSERVE_KEY_TARGETING_KEY_NAMES, names, k->n_keys, present, ids, rep);
    for (size_t i = 0; rc == 0 && i < k->n_keys; i++) {
        struct kv_key *key = &k->keys[i];
        /* An id too long for a key id is no key of ours. */
        key->type = present[i] && strlen(ids[i]) < sizeof key->id ? KEY_NAMED : KEY_MISSING;
        if (key->type != KEY_MISSING)
            memcpy(key->id, ids[i], strlen(ids[i]) + 1);
    }
    free_strs(ids, ADSERVE_KV_MAX_CMPS);
    return rc == 0 ? key_records(c, k, rep) : -1;
}

/* Sorts a PREDEFINED key's values, drops repeats, and looks them up in its
 * value name index. */
static int lookup_values(struct store_conn *c, struct kv_key *key, struct reply *rep)
{
    char hash[sizeof ADSERVE_KEY_TARGETING_VALUE_NAMES + KEY_ID_MAX];
    size_t n = 0;

    if (key->n_values == 0)
        return 0;
    qsort(key->values, key->n_values, sizeof *key->values, cmp_str);
    for (size_t i = 0; i < key->n_values; i++)
        if (n == 0 || strcmp(key->values[n - 1], key->values[i]) != 0)
            key->values[n++] = key->values[i];
    key->n_values = n;
    if ((key->known = malloc(n * sizeof *key->known)) == NULL)
        return out_of_memory(rep);
    snprintf(hash, sizeof hash, "%s%s", ADSERVE_KEY_TARGETING_VALUE_NAMES, key->id);
    return hmget(c, hash, key->values, n, key->known, NULL, rep);
}

/* Keys exist (visit 2), then each PREDEFINED value is one of the key's (visit 3). */
static int check_kv_refs(struct store_conn *c, struct kv_check *k, const cJSON *kv)
{
    if (resolve_keys(c, k, k->rep) != 0 || walk_kv(k, kv, visit_keys) != 0)
        return -1;
    for (size_t i = 0; i < k->n_keys; i++)
        if (k->keys[i].type == KEY_PREDEFINED && lookup_values(c, &k->keys[i], k->rep) != 0)
            return -1;
    return walk_kv(k, kv, visit_values);
}

/* ---- targeting_check ------------------------------------------------------------- */

/* What serving decides per request (device, user, dayparts, kv) is judged
 * by serving's own compiler (adserve_target_check): a rule this API accepts
 * is a rule serving evaluates, by construction. */
static int check_compiles(const cJSON *t, struct reply *rep)
{
    adserve_target_err_t err;
    int rc = adserve_target_check(t, &err);

    if (rc < 0)
        return out_of_memory(rep);
    if (rc > 0) {
        reply_error(rep, 422, "targeting%s%s: %s", err.path[0] != '\0' ? "." : "", err.path,
                    err.reason);
        return -1;
    }
    return 0;
}

static int check_local(const cJSON *t, struct kv_check *k, struct reply *rep)
{
    const cJSON *units = member(t, "ad_units"), *kv = member(t, "kv");

    if (check_overlap(member(units, "include"), member(units, "exclude"), rep) != 0 ||
        check_compiles(t, rep) != 0)
        return -1;
    return k != NULL ? walk_kv(k, kv, visit_names) : 0;
}

static int check_refs(struct store_conn *c, const cJSON *t, struct kv_check *k,
                      struct reply *rep)
{
    const cJSON *units = member(t, "ad_units");

    if (check_exist(c, ADSERVE_KEY_AD_UNITS, member(units, "include"), "ad_units.include", "ad unit",
                    rep) != 0 ||
        check_exist(c, ADSERVE_KEY_AD_UNITS, member(units, "exclude"), "ad_units.exclude", "ad unit",
                    rep) != 0 ||
        check_exist(c, ADSERVE_KEY_PLACEMENTS, member(t, "placements"), "placements", "placement",
                    rep) != 0 ||
        check_exist(c, ADSERVE_KEY_SEGMENTS, member(member(t, "segments"), "include"),
                    "segments.include", "segment", rep) != 0 ||
        check_exist(c, ADSERVE_KEY_SEGMENTS, member(member(t, "segments"), "exclude"),
                    "segments.exclude", "segment", rep) != 0)
        return -1;
    return k != NULL ? check_kv_refs(c, k, member(t, "kv")) : 0;
}

int targeting_check(struct store_conn *c, const cJSON *targeting, bool refs, struct reply *rep)
{
    struct kv_check *k = NULL;

    if (is_null(targeting))
        return 0;
    /* On the heap: it holds one slot per possible key (about 20 KB). */
    if (!is_null(member(targeting, "kv")) && (k = calloc(1, sizeof *k)) == NULL)
        return out_of_memory(rep);
    if (k != NULL)
        k->rep = rep;
    int rc = check_local(targeting, k, rep);
    if (rc == 0 && refs)
        rc = check_refs(c, targeting, k, rep);
    kv_free(k);
    return rc;
}
