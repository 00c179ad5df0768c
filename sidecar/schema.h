/* Declarative JSON schemas: the one source of truth of every request and
 * response shape of the management API.
 *
 * A shape is a static table (struct schema, with struct schema_field rows
 * for objects). From the same table come:
 *   - validation of input: types, bounds, enums, formats, required fields,
 *     unknown properties rejected (always, at every level);
 *   - defaults: an absent field with a default gets it (a field present as
 *     null stays null where the shape allows null);
 *   - the normalised output (schema_apply's result);
 *   - the OpenAPI 3.1 document (JSON Schema 2020-12 dialect).
 * No endpoint validates a field by hand.
 *
 * Example:
 *
 *   static const struct schema w_h = { .type = SCHEMA_INTEGER, .min = 0, .has_min = true };
 *   static const struct schema_field size_fields[] = {
 *       { "w", &w_h, .required = true },
 *       { "h", &w_h, .required = true },
 *       { NULL },
 *   };
 *   const struct schema schema_ad_unit_size = {
 *       .name = "AdUnitSize", .type = SCHEMA_OBJECT, .fields = size_fields,
 *   };
 *
 *   struct schema_error err;
 *   cJSON *out = schema_apply(&schema_ad_unit_size, in, SCHEMA_FULL, &err);
 *   if (out == NULL) reply_error(rep, 422, "%s: %s", err.path, err.msg);
 */
#ifndef ADSERVE_SCHEMA_H
#define ADSERVE_SCHEMA_H

#include "adserve_contract.h"

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* A default that is a word of a vocabulary, as JSON text. */
#define SCHEMA_JSON_STR(word) "\"" word "\""

enum schema_type {
    SCHEMA_OBJECT,          /* fields; unknown properties rejected */
    SCHEMA_FREE_OBJECT,     /* any JSON object (free-form) */
    SCHEMA_ANY,             /* any JSON value */
    SCHEMA_STRING,
    SCHEMA_INTEGER,
    SCHEMA_NUMBER,
    SCHEMA_BOOLEAN,
    SCHEMA_ARRAY,           /* items */
    SCHEMA_UNION,           /* one of variants, chosen by the discriminator;
                               without one (output shapes only: an answer's
                               rows of several kinds), told apart by their
                               own required members */
};

enum schema_format {
    SCHEMA_FORMAT_NONE,
    SCHEMA_FORMAT_UUID,
    SCHEMA_FORMAT_DATE_TIME,    /* RFC 3339 */
    SCHEMA_FORMAT_EMAIL,
    SCHEMA_FORMAT_URI,          /* absolute http(s) URL */
};

struct schema;

struct schema_field {
    const char *name;
    const struct schema *schema;
    bool required;              /* must be present on input (SCHEMA_FULL) */
    const char *dflt;           /* JSON text of the default, or NULL */
    bool read_only;             /* output only: rejected on input */
    bool write_only;            /* input only: never in output (passwords) */
    const char *description;
};

struct schema_variant {
    const char *tag;            /* the discriminator's value */
    const struct schema *schema;    /* an object schema holding the tag field */
};

struct schema {
    const char *name;           /* a component of the OpenAPI document, or
                                   NULL to be written inline */
    enum schema_type type;
    bool nullable;
    const char *description;

    /* strings */
    const char *const *enum_values;     /* NULL-terminated, or NULL */
    enum schema_format format;
    int min_length, max_length;         /* 0: no limit */

    /* integers and numbers */
    bool has_min, has_max;
    double min, max;
    const int *int_values;              /* an integer enum, or NULL */
    size_t n_int_values;

    /* arrays */
    const struct schema *items;
    int max_items;                      /* 0: no limit */

    /* objects: rows up to one with name NULL */
    const struct schema_field *fields;

    /* unions */
    const char *discriminator;          /* e.g. "type"; NULL: output only */
    const struct schema_variant *variants;  /* up to one with tag NULL */

    /* objects, added later (existing initialisers are unaffected): at
     * least one of these members must be present and not null (NULL-ended) */
    const char *const *require_one_of;
    /* objects: the OpenAPI view of a PATCH body over the same fields:
     * nothing required, no defaults. schema_apply takes the mode from its
     * caller and ignores this. */
    bool doc_partial;
};

/* ?limit= and ?offset= of every collection. A list query's table starts
 * with these rows, so paging reads, checks and documents the same way
 * everywhere:
 *
 *   static const struct schema_field list_query_fields[] = {
 *       SCHEMA_PAGING_FIELDS,
 *       { "q", &some_string },
 *       { NULL },
 *   }; */
#define LIST_LIMIT_DEFAULT 50
#define LIST_LIMIT_MAX 500
extern const struct schema schema_list_limit;      /* 1 .. LIST_LIMIT_MAX */
extern const struct schema schema_list_offset;     /* >= 0 */
#define SCHEMA_PAGING_FIELDS                                                        \
    { "limit", &schema_list_limit, .dflt = "50", .description = "items per page" }, \
    { "offset", &schema_list_offset, .dflt = "0", .description = "items to skip" }

enum schema_mode {
    SCHEMA_FULL,        /* a whole resource: required fields, defaults */
    SCHEMA_PARTIAL,     /* a PATCH: only the fields present, no defaults,
                           nothing required at the top level (nested
                           objects that are present are FULL) */
};

struct schema_error {
    char path[256];     /* e.g. "ext.native.render_mode", "display.event[2].type" */
    char msg[256];      /* e.g. "must be one of html, asset" */
};

/* Validates in against s and returns the normalised copy (the caller
 * frees it), or NULL with err filled: the first fault, by path. */
cJSON *schema_apply(const struct schema *s, const cJSON *in, enum schema_mode mode,
                    struct schema_error *err);

/* The output view of a stored resource: drops write_only fields. A new
 * object; NULL on OOM. */
cJSON *schema_output(const struct schema *s, const cJSON *stored);

/* The JSON Schema of s for the OpenAPI document. Named schemas become a
 * "$ref" to "#/components/schemas/<name>", and are added once to
 * components (an object) with their definition. NULL on OOM. */
cJSON *schema_openapi(const struct schema *s, cJSON *components);

#endif
