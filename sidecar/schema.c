/* The schema engine (schema.h): validation and normalisation of input,
 * the output view of stored records, and the OpenAPI 3.1 form of a shape.
 * One function per type in each of the three walks. */
#include "schema.h"
#include "util.h"

#include "users.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Deeper input is refused: recursive shapes (Expr) would otherwise let a
 * request choose how deep the C stack goes. */
#define SCHEMA_MAX_DEPTH 64
/* Rows per object table; more is a table bug, reported on first use. */
#define SCHEMA_MAX_FIELDS 128
/* JSON numbers are doubles: beyond 2^53 an "integer" is no longer exact. */
#define SCHEMA_MAX_SAFE_INT 9007199254740991.0

struct walk {
    struct schema_error *err;
    char path[sizeof ((struct schema_error *)0)->path];
    size_t len;
    int depth;
};

/* ---- paths and errors ---------------------------------------------------- */

/* Appends to the path; returns the previous length for walk_pop. Names
 * are the client's bytes, so anything but printable ASCII becomes '?' to
 * keep the error message one clean line of valid UTF-8. */
static size_t walk_push_name(struct walk *w, const char *name)
{
    size_t old = w->len;

    if (w->len > 0 && w->len + 1 < sizeof w->path)
        w->path[w->len++] = '.';
    for (const char *p = name; *p != '\0' && w->len + 1 < sizeof w->path; p++)
        w->path[w->len++] = (*p > 0x20 && *p < 0x7f) ? *p : '?';
    w->path[w->len] = '\0';
    return old;
}

static size_t walk_push_index(struct walk *w, int i)
{
    size_t old = w->len;
    int n = snprintf(w->path + w->len, sizeof w->path - w->len, "[%d]", i);

    if (n > 0)
        w->len = (size_t)n < sizeof w->path - w->len ? w->len + (size_t)n : sizeof w->path - 1;
    return old;
}

static void walk_pop(struct walk *w, size_t old)
{
    w->len = old;
    w->path[old] = '\0';
}

static cJSON *fail(struct walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records the first fault (the walk stops at it) and returns NULL. */
static cJSON *fail(struct walk *w, const char *fmt, ...)
{
    va_list ap;

    memcpy(w->err->path, w->path, w->len + 1);
    va_start(ap, fmt);
    vsnprintf(w->err->msg, sizeof w->err->msg, fmt, ap);
    va_end(ap);
    return NULL;
}

/* "a, b, c" of an enum, for messages; truncated to the buffer. */
static void list_strings(char *buf, size_t len, const char *const *values)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; values[i] != NULL && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", values[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

static void list_ints(char *buf, size_t len, const int *values, size_t n_values)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < n_values && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%d", i ? ", " : "", values[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

static const char *null_suffix(const struct schema *s)
{
    return s->nullable ? " or null" : "";
}

/* Adds item to obj or array, freeing item when that fails; -1 then. */
static int add_member(cJSON *obj, const char *name, cJSON *item)
{
    if (item == NULL)
        return -1;
    if ((name != NULL ? cJSON_AddItemToObject(obj, name, item)
                      : cJSON_AddItemToArray(obj, item)) == 0) {
        cJSON_Delete(item);
        return -1;
    }
    return 0;
}

/* ---- strings: UTF-8 and formats ------------------------------------------ */

/* Code points in a valid UTF-8 string (no overlongs, no surrogates, at
 * most U+10FFFF), or -1: invalid bytes would make every later response
 * that echoes them invalid JSON. */
static long utf8_length(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    long n = 0;

    while (*p != 0) {
        unsigned c = *p;
        int extra = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2
                  : (c & 0xf8) == 0xf0 ? 3 : -1;
        if (extra < 0 || (extra == 1 && c < 0xc2) || c > 0xf4)
            return -1;
        unsigned long cp = extra == 0 ? c : c & (0x3fu >> extra);
        for (int i = 1; i <= extra; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return -1;
            cp = (cp << 6) | (p[i] & 0x3f);
        }
        if ((extra == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (extra == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return -1;
        p += extra + 1;
        n++;
    }
    return n;
}

static bool uuid_ok(const char *s)
{
    static const int dash[] = { 8, 13, 18, 23 };

    if (strlen(s) != 36)
        return false;
    for (int i = 0, d = 0; i < 36; i++) {
        if (d < 4 && i == dash[d]) {
            if (s[i] != '-')
                return false;
            d++;
        } else if (!isxdigit((unsigned char)s[i])) {
            return false;
        }
    }
    return true;
}

/* n decimal digits at s as a number, or -1. */
static int digits(const char *s, int n)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* RFC 3339 section 5.6 date-time, exactly (util.h's parser) */
static bool is_date_time(const char *s)
{
    long long t;

    return rfc3339_parse(s, &t) == 0;
}

/* The host[:port] of an absolute URL: a DNS name or IPv4 address, or an
 * IPv6 literal in brackets; no user-info (it only serves to mislead). */
static bool is_authority(const char *a, size_t n)
{
    size_t host = n;
    const char *colon = NULL;

    if (n == 0)
        return false;
    if (a[0] == '[') {
        const char *close = memchr(a, ']', n);
        if (close == NULL || close == a + 1)
            return false;
        for (const char *p = a + 1; p < close; p++)
            if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
                return false;
        host = (size_t)(close - a) + 1;
        if (host < n && a[host] != ':')
            return false;
    } else {
        for (size_t i = 0; i < n; i++)
            if (a[i] == ':') {
                host = i;
                break;
            }
        if (host == 0 || a[0] == '.' || a[0] == '-')
            return false;
        for (size_t i = 0; i < host; i++)
            if (!isalnum((unsigned char)a[i]) && a[i] != '-' && a[i] != '.')
                return false;
    }
    if (host < n)
        colon = a + host;
    if (colon == NULL)
        return true;
    size_t plen = n - host - 1;
    int port = plen >= 1 && plen <= 5 ? digits(colon + 1, (int)plen) : -1;
    return port >= 1 && port <= 65535;
}

/* An absolute http or https URL (RFC 3986 characters only). */
static bool is_http_uri(const char *s)
{
    size_t skip = strncasecmp(s, "http://", 7) == 0 ? 7 : strncasecmp(s, "https://", 8) == 0 ? 8 : 0;

    if (skip == 0)
        return false;
    for (const char *p = s; *p != '\0'; p++)
        if (*p <= 0x20 || *p >= 0x7f || strchr("\"<>\\^`{|}", *p) != NULL)
            return false;
    const char *a = s + skip;
    return is_authority(a, strcspn(a, "/?#"));
}

static bool is_email(const char *s)
{
    char normalized[EMAIL_MAX + 1];

    return email_normalize(s, normalized) == 0;
}

/* Checks the format; a uuid is lower-cased in place (ids compare as
 * strings everywhere else). NULL when valid, else what it must be. */
static const char *check_format(enum schema_format f, char *s)
{
    switch (f) {
    case SCHEMA_FORMAT_NONE:
        return NULL;
    case SCHEMA_FORMAT_UUID:
        if (!uuid_ok(s))
            return "a UUID";
        for (char *p = s; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        return NULL;
    case SCHEMA_FORMAT_DATE_TIME:
        return is_date_time(s) ? NULL : "an RFC 3339 date-time (e.g. 2024-01-31T12:00:00Z)";
    case SCHEMA_FORMAT_EMAIL:
        return is_email(s) ? NULL : "an e-mail address";
    case SCHEMA_FORMAT_URI:
        return is_http_uri(s) ? NULL : "an absolute http or https URL";
    }
    return "valid";
}

/* ---- schema_apply: one function per type -------------------------------- */

static cJSON *apply(struct walk *w, const struct schema *s, const cJSON *in,
                    enum schema_mode mode);

/* Free-form values are copied as they are, but their strings and keys
 * must still be valid UTF-8, and their nesting counts toward the same
 * depth limit as everything else. */
enum tree_fault { TREE_OK, TREE_TOO_DEEP, TREE_BAD_UTF8 };

static enum tree_fault tree_check(const cJSON *v, int depth)
{
    enum tree_fault f;

    if (depth > SCHEMA_MAX_DEPTH)
        return TREE_TOO_DEEP;
    if (cJSON_IsString(v) && utf8_length(v->valuestring) < 0)
        return TREE_BAD_UTF8;
    for (const cJSON *c = v->child; c != NULL; c = c->next) {
        if (c->string != NULL && utf8_length(c->string) < 0)
            return TREE_BAD_UTF8;
        if ((f = tree_check(c, depth + 1)) != TREE_OK)
            return f;
    }
    return TREE_OK;
}

static cJSON *apply_any(struct walk *w, const struct schema *s, const cJSON *in)
{
    (void)s;
    switch (tree_check(in, w->depth)) {
    case TREE_TOO_DEEP:
        return fail(w, "nested more than %d levels deep", SCHEMA_MAX_DEPTH);
    case TREE_BAD_UTF8:
        return fail(w, "must be valid UTF-8 (strings and property names)");
    case TREE_OK:
        break;
    }
    cJSON *out = cJSON_Duplicate(in, 1);
    return out != NULL ? out : fail(w, "out of memory");
}

static cJSON *apply_free_object(struct walk *w, const struct schema *s, const cJSON *in)
{
    if (!cJSON_IsObject(in))
        return fail(w, "must be an object%s", null_suffix(s));
    return apply_any(w, s, in);
}

static cJSON *apply_boolean(struct walk *w, const struct schema *s, const cJSON *in)
{
    if (!cJSON_IsBool(in))
        return fail(w, "must be a boolean%s", null_suffix(s));
    return cJSON_CreateBool(cJSON_IsTrue(in));
}

static bool in_string_enum(const char *const *values, const char *v)
{
    for (; *values != NULL; values++)
        if (strcmp(*values, v) == 0)
            return true;
    return false;
}

static cJSON *apply_string(struct walk *w, const struct schema *s, const cJSON *in)
{
    char list[200];

    if (!cJSON_IsString(in) || in->valuestring == NULL)
        return fail(w, "must be a string%s", null_suffix(s));
    long n = utf8_length(in->valuestring);
    if (n < 0)
        return fail(w, "must be valid UTF-8");
    if (s->min_length > 0 && n < s->min_length)
        return fail(w, s->min_length == 1 ? "must not be empty"
                                          : "must be at least %d characters long", s->min_length);
    if (s->max_length > 0 && n > s->max_length)
        return fail(w, "must be at most %d characters long", s->max_length);
    if (s->enum_values != NULL && !in_string_enum(s->enum_values, in->valuestring)) {
        list_strings(list, sizeof list, s->enum_values);
        return fail(w, "must be one of %s", list);
    }
    cJSON *out = cJSON_CreateString(in->valuestring);
    if (out == NULL)
        return fail(w, "out of memory");
    const char *want = check_format(s->format, out->valuestring);
    if (want != NULL) {
        cJSON_Delete(out);
        return fail(w, "must be %s", want);
    }
    return out;
}

/* Bounds shared by integers and numbers; the value is normalised. */
static cJSON *check_bounds(struct walk *w, const struct schema *s, double v)
{
    if (v == 0)
        v = 0;          /* -0 would print as "-0" */
    if (s->has_min && s->has_max && (v < s->min || v > s->max))
        return fail(w, "must be between %g and %g", s->min, s->max);
    if (s->has_min && v < s->min)
        return fail(w, "must be >= %g", s->min);
    if (s->has_max && v > s->max)
        return fail(w, "must be <= %g", s->max);
    return cJSON_CreateNumber(v);
}

static cJSON *apply_number(struct walk *w, const struct schema *s, const cJSON *in)
{
    /* cJSON turns 1e999 into infinity, which it would print as null. */
    if (!cJSON_IsNumber(in) || !isfinite(in->valuedouble))
        return fail(w, "must be a number%s", null_suffix(s));
    return check_bounds(w, s, in->valuedouble);
}

static cJSON *apply_integer(struct walk *w, const struct schema *s, const cJSON *in)
{
    char list[200];

    if (!cJSON_IsNumber(in) || !isfinite(in->valuedouble) ||
        in->valuedouble != trunc(in->valuedouble) || fabs(in->valuedouble) > SCHEMA_MAX_SAFE_INT)
        return fail(w, "must be an integer%s", null_suffix(s));
    double v = in->valuedouble;
    if (s->int_values != NULL) {
        for (size_t i = 0; i < s->n_int_values; i++)
            if (v == s->int_values[i])
                return cJSON_CreateNumber(s->int_values[i]);
        list_ints(list, sizeof list, s->int_values, s->n_int_values);
        return fail(w, "must be one of %s", list);
    }
    return check_bounds(w, s, v);
}

static cJSON *apply_array(struct walk *w, const struct schema *s, const cJSON *in)
{
    if (!cJSON_IsArray(in))
        return fail(w, "must be an array%s", null_suffix(s));
    if (s->max_items > 0 && cJSON_GetArraySize(in) > s->max_items)
        return fail(w, "must have at most %d items", s->max_items);
    cJSON *out = cJSON_CreateArray();
    if (out == NULL)
        return fail(w, "out of memory");
    int i = 0;
    for (const cJSON *item = in->child; item != NULL; item = item->next, i++) {
        size_t old = walk_push_index(w, i);
        cJSON *v = apply(w, s->items, item, SCHEMA_FULL);
        walk_pop(w, old);
        if (v == NULL || add_member(out, NULL, v) != 0) {
            cJSON_Delete(out);
            return v == NULL ? NULL : fail(w, "out of memory");
        }
    }
    return out;
}

static const struct schema_field *find_field(const struct schema *s, const char *name)
{
    for (const struct schema_field *f = s->fields; f->name != NULL; f++)
        if (strcmp(f->name, name) == 0)
            return f;
    return NULL;
}

/* Unknown, read-only and repeated members, in input order; false (with
 * the error recorded) at the first. */
static bool check_members(struct walk *w, const struct schema *s, const cJSON *in)
{
    bool seen[SCHEMA_MAX_FIELDS] = { false };

    for (const cJSON *m = in->child; m != NULL; m = m->next) {
        const struct schema_field *f = find_field(s, m->string);
        size_t row = f != NULL ? (size_t)(f - s->fields) : 0;
        const char *why = f == NULL ? "unknown property"
                        : f->read_only ? "is read-only (set by the server)"
                        : row >= SCHEMA_MAX_FIELDS ? "internal error: too many fields"
                        : seen[row] ? "duplicate property" : NULL;
        size_t old = walk_push_name(w, m->string);
        if (why != NULL) {
            fail(w, "%s", why);
            return false;
        }
        seen[row] = true;
        walk_pop(w, old);
    }
    return true;
}

/* The default of row f, from its JSON text and normalised by its schema
 * (so a default is held to the same rules as input). */
static cJSON *default_value(struct walk *w, const struct schema_field *f)
{
    cJSON *parsed = cJSON_Parse(f->dflt);

    if (parsed == NULL)
        return fail(w, "internal error: bad default");
    cJSON *v = apply(w, f->schema, parsed, SCHEMA_FULL);
    cJSON_Delete(parsed);
    return v;
}

/* The value of row f for the output: the input's, else (whole resources
 * only) the default; NULL with *absent when the field stays out. */
static cJSON *field_value(struct walk *w, const struct schema_field *f, const cJSON *in,
                          enum schema_mode mode, bool *absent)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(in, f->name);
    size_t old = walk_push_name(w, f->name);
    cJSON *out = NULL;

    *absent = false;
    if (v != NULL)
        out = apply(w, f->schema, v, SCHEMA_FULL);
    else if (mode == SCHEMA_FULL && f->required && !f->read_only)
        out = fail(w, "is required");
    else if (mode == SCHEMA_FULL && f->dflt != NULL)
        out = default_value(w, f);
    else
        *absent = true;
    walk_pop(w, old);
    return out;
}

/* require_one_of: at least one of the members is there and not null. */
static cJSON *check_one_of(struct walk *w, const struct schema *s, cJSON *out)
{
    char list[200];

    for (const char *const *n = s->require_one_of; *n != NULL; n++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(out, *n);
        if (v != NULL && !cJSON_IsNull(v))
            return out;
    }
    list_strings(list, sizeof list, s->require_one_of);
    cJSON_Delete(out);
    return fail(w, "must have at least one of %s", list);
}

static cJSON *apply_object(struct walk *w, const struct schema *s, const cJSON *in,
                           enum schema_mode mode)
{
    if (!cJSON_IsObject(in))
        return fail(w, "must be an object%s", null_suffix(s));
    if (!check_members(w, s, in))
        return NULL;
    cJSON *out = cJSON_CreateObject();
    if (out == NULL)
        return fail(w, "out of memory");
    for (const struct schema_field *f = s->fields; f->name != NULL; f++) {
        bool absent;
        cJSON *v = field_value(w, f, in, mode, &absent);
        if (absent)
            continue;
        if (v == NULL || add_member(out, f->name, v) != 0) {
            cJSON_Delete(out);
            return v == NULL ? NULL : fail(w, "out of memory");
        }
    }
    if (s->require_one_of != NULL && mode == SCHEMA_FULL)
        return check_one_of(w, s, out);
    return out;
}

static const struct schema_variant *find_variant(const struct schema *s, const char *tag)
{
    for (const struct schema_variant *v = s->variants; v->tag != NULL; v++)
        if (strcmp(v->tag, tag) == 0)
            return v;
    return NULL;
}

static void list_tags(char *buf, size_t len, const struct schema *s)
{
    const char *tags[32];
    size_t n = 0;

    for (const struct schema_variant *v = s->variants; v->tag != NULL && n < 31; v++)
        tags[n++] = v->tag;
    tags[n] = NULL;
    list_strings(buf, len, tags);
}

/* The discriminator picks the variant, whose object schema does the rest. */
static cJSON *apply_union(struct walk *w, const struct schema *s, const cJSON *in)
{
    char list[200];

    if (s->discriminator == NULL)       /* an answer's shape, never read */
        return fail(w, "is not an input");
    if (!cJSON_IsObject(in))
        return fail(w, "must be an object%s", null_suffix(s));
    const cJSON *tag = cJSON_GetObjectItemCaseSensitive(in, s->discriminator);
    list_tags(list, sizeof list, s);
    size_t old = walk_push_name(w, s->discriminator);
    if (tag == NULL)
        return fail(w, "is required (one of %s)", list);
    if (!cJSON_IsString(tag))
        return fail(w, "must be a string (one of %s)", list);
    const struct schema_variant *v = find_variant(s, tag->valuestring);
    if (v == NULL)
        return fail(w, "must be one of %s", list);
    walk_pop(w, old);
    return apply(w, v->schema, in, SCHEMA_FULL);
}

static cJSON *apply_typed(struct walk *w, const struct schema *s, const cJSON *in,
                          enum schema_mode mode)
{
    switch (s->type) {
    case SCHEMA_OBJECT:
        return apply_object(w, s, in, mode);
    case SCHEMA_FREE_OBJECT:
        return apply_free_object(w, s, in);
    case SCHEMA_ANY:
        return apply_any(w, s, in);
    case SCHEMA_STRING:
        return apply_string(w, s, in);
    case SCHEMA_INTEGER:
        return apply_integer(w, s, in);
    case SCHEMA_NUMBER:
        return apply_number(w, s, in);
    case SCHEMA_BOOLEAN:
        return apply_boolean(w, s, in);
    case SCHEMA_ARRAY:
        return apply_array(w, s, in);
    case SCHEMA_UNION:
        return apply_union(w, s, in);
    }
    return fail(w, "internal error: unknown schema type");
}

static cJSON *apply(struct walk *w, const struct schema *s, const cJSON *in,
                    enum schema_mode mode)
{
    cJSON *out;

    if (w->depth >= SCHEMA_MAX_DEPTH)
        return fail(w, "nested more than %d levels deep", SCHEMA_MAX_DEPTH);
    if (cJSON_IsNull(in) && s->type != SCHEMA_ANY) {
        if (!s->nullable)
            return fail(w, "must not be null");
        out = cJSON_CreateNull();
        return out != NULL ? out : fail(w, "out of memory");
    }
    w->depth++;
    out = apply_typed(w, s, in, mode);
    w->depth--;
    /* The scalar builders return cJSON_Create* results unchecked. */
    if (out == NULL && w->err->msg[0] == '\0')
        return fail(w, "out of memory");
    return out;
}

cJSON *schema_apply(const struct schema *s, const cJSON *in, enum schema_mode mode,
                    struct schema_error *err)
{
    struct walk w = { .err = err };

    err->path[0] = err->msg[0] = '\0';
    if (in == NULL)
        return fail(&w, "is required");
    return apply(&w, s, in, mode);
}

/* ---- schema_output -------------------------------------------------------- */

static cJSON *output(const struct schema *s, const cJSON *v);

static cJSON *output_object(const struct schema *s, const cJSON *v)
{
    cJSON *out = cJSON_CreateObject();

    if (out == NULL)
        return NULL;
    for (const struct schema_field *f = s->fields; f->name != NULL; f++) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(v, f->name);
        if (m == NULL || f->write_only)
            continue;
        if (add_member(out, f->name, output(f->schema, m)) != 0) {
            cJSON_Delete(out);
            return NULL;
        }
    }
    return out;
}

static cJSON *output_array(const struct schema *s, const cJSON *v)
{
    cJSON *out = cJSON_CreateArray();

    if (out == NULL)
        return NULL;
    for (const cJSON *item = v->child; item != NULL; item = item->next)
        if (add_member(out, NULL, output(s->items, item)) != 0) {
            cJSON_Delete(out);
            return NULL;
        }
    return out;
}

static cJSON *output_union(const struct schema *s, const cJSON *v)
{
    const cJSON *tag = s->discriminator != NULL
                           ? cJSON_GetObjectItemCaseSensitive(v, s->discriminator) : NULL;
    const struct schema_variant *var = cJSON_IsString(tag) ? find_variant(s, tag->valuestring)
                                                            : NULL;

    return var != NULL ? output(var->schema, v) : cJSON_Duplicate(v, 1);
}

/* Stored records were validated on their way in; a record that does not
 * fit its shape (written by hand, or by an older version) is passed
 * through where it does not fit rather than lost. */
static cJSON *output(const struct schema *s, const cJSON *v)
{
    if (s->type == SCHEMA_OBJECT && cJSON_IsObject(v))
        return output_object(s, v);
    if (s->type == SCHEMA_ARRAY && cJSON_IsArray(v))
        return output_array(s, v);
    if (s->type == SCHEMA_UNION && cJSON_IsObject(v))
        return output_union(s, v);
    return cJSON_Duplicate(v, 1);
}

cJSON *schema_output(const struct schema *s, const cJSON *stored)
{
    return stored != NULL ? output(s, stored) : NULL;
}

/* ---- schema_openapi ------------------------------------------------------- */

static cJSON *doc_schema(const struct schema *s, cJSON *components);

static const char *const format_names[] = {
    [SCHEMA_FORMAT_NONE] = NULL,
    [SCHEMA_FORMAT_UUID] = "uuid",
    [SCHEMA_FORMAT_DATE_TIME] = "date-time",
    [SCHEMA_FORMAT_EMAIL] = "email",
    [SCHEMA_FORMAT_URI] = "uri",
};

/* "type": "string", or ["string", "null"] when nullable. */
static int doc_type(cJSON *o, const char *type, bool nullable)
{
    if (!nullable)
        return cJSON_AddStringToObject(o, "type", type) != NULL ? 0 : -1;
    const char *both[] = { type, "null" };
    return add_member(o, "type", cJSON_CreateStringArray(both, 2));
}

static int doc_bounds(cJSON *o, const struct schema *s)
{
    if (s->has_min && cJSON_AddNumberToObject(o, "minimum", s->min) == NULL)
        return -1;
    if (s->has_max && cJSON_AddNumberToObject(o, "maximum", s->max) == NULL)
        return -1;
    return 0;
}

/* An enum admits null only if listed, whatever "type" says. */
static int doc_null_in_enum(cJSON *values, bool nullable)
{
    return nullable ? add_member(values, NULL, cJSON_CreateNull()) : 0;
}

static int doc_string(cJSON *o, const struct schema *s, bool nullable)
{
    if (doc_type(o, "string", nullable) != 0)
        return -1;
    if (s->enum_values != NULL) {
        int n = 0;
        while (s->enum_values[n] != NULL)
            n++;
        cJSON *values = cJSON_CreateStringArray((const char *const *)s->enum_values, n);
        if (add_member(o, "enum", values) != 0 || doc_null_in_enum(values, nullable) != 0)
            return -1;
    }
    if (format_names[s->format] != NULL &&
        cJSON_AddStringToObject(o, "format", format_names[s->format]) == NULL)
        return -1;
    if (s->min_length > 0 && cJSON_AddNumberToObject(o, "minLength", s->min_length) == NULL)
        return -1;
    if (s->max_length > 0 && cJSON_AddNumberToObject(o, "maxLength", s->max_length) == NULL)
        return -1;
    return 0;
}

static int doc_integer(cJSON *o, const struct schema *s, bool nullable)
{
    if (doc_type(o, "integer", nullable) != 0)
        return -1;
    if (s->int_values != NULL) {
        cJSON *values = cJSON_CreateIntArray(s->int_values, (int)s->n_int_values);
        if (add_member(o, "enum", values) != 0 || doc_null_in_enum(values, nullable) != 0)
            return -1;
    }
    return doc_bounds(o, s);
}

static int doc_number(cJSON *o, const struct schema *s, bool nullable)
{
    return doc_type(o, "number", nullable) == 0 ? doc_bounds(o, s) : -1;
}

static int doc_array(cJSON *o, const struct schema *s, bool nullable, cJSON *components)
{
    if (doc_type(o, "array", nullable) != 0 ||
        add_member(o, "items", doc_schema(s->items, components)) != 0)
        return -1;
    if (s->max_items > 0 && cJSON_AddNumberToObject(o, "maxItems", s->max_items) == NULL)
        return -1;
    return 0;
}

/* A property: the field's schema plus what the row says of it (JSON
 * Schema 2020-12 allows keywords beside "$ref"). */
static cJSON *doc_property(const struct schema_field *f, bool partial, cJSON *components)
{
    cJSON *p = doc_schema(f->schema, components);

    if (p == NULL)
        return NULL;
    if (f->dflt != NULL && !partial && add_member(p, "default", cJSON_Parse(f->dflt)) != 0)
        goto oom;
    if (f->read_only && !cJSON_AddTrueToObject(p, "readOnly"))
        goto oom;
    if (f->write_only && !cJSON_AddTrueToObject(p, "writeOnly"))
        goto oom;
    if (f->description != NULL && !cJSON_AddStringToObject(p, "description", f->description))
        goto oom;
    return p;
oom:
    cJSON_Delete(p);
    return NULL;
}

/* anyOf [{required: [m], properties: {m: {not: {type: null}}}}, ...] */
static int doc_one_of_required(cJSON *o, const char *const *names)
{
    cJSON *any = cJSON_AddArrayToObject(o, "anyOf");

    for (const char *const *n = names; *n != NULL; n++) {
        cJSON *alt = cJSON_CreateObject();
        if (add_member(any, NULL, alt) != 0 ||
            add_member(alt, "required", cJSON_CreateStringArray(n, 1)) != 0)
            return -1;
        cJSON *props = cJSON_AddObjectToObject(alt, "properties");
        cJSON *prop = props ? cJSON_AddObjectToObject(props, *n) : NULL;
        cJSON *not = prop ? cJSON_AddObjectToObject(prop, "not") : NULL;
        if (not == NULL || doc_type(not, "null", false) != 0)
            return -1;
    }
    return any != NULL ? 0 : -1;
}

static int doc_object(cJSON *o, const struct schema *s, bool nullable, cJSON *components)
{
    cJSON *props = cJSON_AddObjectToObject(o, "properties");
    cJSON *required = cJSON_CreateArray();

    if (props == NULL || add_member(o, "required", required) != 0 ||
        doc_type(o, "object", nullable) != 0)
        return -1;
    for (const struct schema_field *f = s->fields; f->name != NULL; f++) {
        if (add_member(props, f->name, doc_property(f, s->doc_partial, components)) != 0)
            return -1;
        if (f->required && !s->doc_partial &&
            add_member(required, NULL, cJSON_CreateString(f->name)) != 0)
            return -1;
    }
    /* JSON Schema wants a non-empty "required" when there is one. */
    if (cJSON_GetArraySize(required) == 0)
        cJSON_DeleteItemFromObjectCaseSensitive(o, "required");
    if (s->require_one_of != NULL && doc_one_of_required(o, s->require_one_of) != 0)
        return -1;
    return cJSON_AddFalseToObject(o, "additionalProperties") != NULL ? 0 : -1;
}

static int doc_free_object(cJSON *o, bool nullable)
{
    return doc_type(o, "object", nullable);
}

static char *component_ref(const char *name, char *buf, size_t len)
{
    int n = snprintf(buf, len, "#/components/schemas/%s", name);
    return n > 0 && (size_t)n < len ? buf : NULL;
}

static int doc_null_alternative(cJSON *one_of)
{
    cJSON *null = cJSON_CreateObject();

    return add_member(one_of, NULL, null) == 0 ? doc_type(null, "null", false) : -1;
}

/* oneOf the variants plus the discriminator and its mapping (none without
 * a discriminator); a nullable union also admits null, outside the
 * discriminator. */
static int doc_union(cJSON *o, const struct schema *s, bool nullable, cJSON *components)
{
    cJSON *one_of = cJSON_AddArrayToObject(o, "oneOf");
    cJSON *disc = NULL, *mapping = NULL;
    char ref[160];

    if (one_of == NULL)
        return -1;
    if (s->discriminator != NULL &&
        ((disc = cJSON_AddObjectToObject(o, "discriminator")) == NULL ||
         (mapping = cJSON_AddObjectToObject(disc, "mapping")) == NULL ||
         !cJSON_AddStringToObject(disc, "propertyName", s->discriminator)))
        return -1;
    for (const struct schema_variant *v = s->variants; v->tag != NULL; v++) {
        if (add_member(one_of, NULL, doc_schema(v->schema, components)) != 0)
            return -1;
        if (mapping != NULL && v->schema->name != NULL &&
            (component_ref(v->schema->name, ref, sizeof ref) == NULL ||
             !cJSON_AddStringToObject(mapping, v->tag, ref)))
            return -1;
    }
    return nullable ? doc_null_alternative(one_of) : 0;
}

/* Fills o with the definition of s, written inline. */
static int doc_fill(cJSON *o, const struct schema *s, bool nullable, cJSON *components)
{
    if (s->description != NULL && !cJSON_AddStringToObject(o, "description", s->description))
        return -1;
    switch (s->type) {
    case SCHEMA_OBJECT:
        return doc_object(o, s, nullable, components);
    case SCHEMA_FREE_OBJECT:
        return doc_free_object(o, nullable);
    case SCHEMA_ANY:
        return 0;               /* {}: any JSON value, null included */
    case SCHEMA_STRING:
        return doc_string(o, s, nullable);
    case SCHEMA_INTEGER:
        return doc_integer(o, s, nullable);
    case SCHEMA_NUMBER:
        return doc_number(o, s, nullable);
    case SCHEMA_BOOLEAN:
        return doc_type(o, "boolean", nullable);
    case SCHEMA_ARRAY:
        return doc_array(o, s, nullable, components);
    case SCHEMA_UNION:
        return doc_union(o, s, nullable, components);
    }
    return -1;
}

/* The component of a named schema, defined once. Its entry is added
 * before it is filled, so that a recursive shape (Expr) refers to itself
 * instead of recursing forever. A nullable use of a named schema shares
 * the (non-null) definition; the reference adds the null. */
static int doc_component(const struct schema *s, cJSON *components)
{
    if (cJSON_GetObjectItemCaseSensitive(components, s->name) != NULL)
        return 0;
    cJSON *def = cJSON_CreateObject();
    if (add_member(components, s->name, def) != 0)
        return -1;
    return doc_fill(def, s, false, components);
}

static cJSON *doc_ref(const struct schema *s, cJSON *components)
{
    char ref[160];

    if (doc_component(s, components) != 0 || component_ref(s->name, ref, sizeof ref) == NULL)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    if (!s->nullable) {
        if (cJSON_AddStringToObject(o, "$ref", ref) != NULL)
            return o;
    } else {
        cJSON *one_of = cJSON_AddArrayToObject(o, "oneOf"), *r = cJSON_CreateObject();
        if (add_member(one_of, NULL, r) == 0 && cJSON_AddStringToObject(r, "$ref", ref) != NULL &&
            doc_null_alternative(one_of) == 0)
            return o;
    }
    cJSON_Delete(o);
    return NULL;
}

static cJSON *doc_schema(const struct schema *s, cJSON *components)
{
    if (s->name != NULL)
        return doc_ref(s, components);
    cJSON *o = cJSON_CreateObject();
    if (o != NULL && doc_fill(o, s, s->nullable, components) != 0) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *schema_openapi(const struct schema *s, cJSON *components)
{
    return doc_schema(s, components);
}

/* ---- tables every resource shares -------------------------------------------------- */

const struct schema schema_list_limit = {
    .type = SCHEMA_INTEGER, .has_min = true, .min = 1, .has_max = true, .max = LIST_LIMIT_MAX,
};
const struct schema schema_list_offset = {
    .type = SCHEMA_INTEGER, .has_min = true, .min = 0,
};
