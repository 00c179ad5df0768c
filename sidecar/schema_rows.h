/* The rows every resource shape shares, and the macros that make a
 * resource's shapes from its table of rows (schema_demand.c,
 * schema_native.c). */
#ifndef ADSERVE_SCHEMA_ROWS_H
#define ADSERVE_SCHEMA_ROWS_H

#include "schema.h"

extern const struct schema schema_uuid, schema_uuid_n, schema_date_time;

/* ---- the server's fields of every resource ------------------------------------------ */

#define ID_ROW { "id", &schema_uuid, .required = true, .read_only = true,              \
                 .description = "set by the server" }
#define META_ROWS                                                                           \
    { "created_at", &schema_date_time, .required = true, .read_only = true },              \
    { "updated_at", &schema_date_time, .required = true, .read_only = true },              \
    { "created_by", &schema_uuid, .required = true, .read_only = true,                     \
      .description = "the id of the user who made it" }

/* A resource's shape and its PATCH view, from one table. */
#define RESOURCE_SCHEMAS(var, title, rows, desc)                                            \
    const struct schema schema_##var = {                                                    \
        .name = title, .type = SCHEMA_OBJECT, .fields = rows, .description = desc,          \
    };                                                                                      \
    const struct schema schema_##var##_patch = {                                            \
        .name = title "Patch", .type = SCHEMA_OBJECT, .fields = rows, .doc_partial = true,  \
        .description = "Only the fields sent change; a nested object or array sent "        \
                       "replaces the stored one whole.",                                    \
    }

#define LIST_QUERY(var, rows) \
    const struct schema schema_##var##_list_query = { .type = SCHEMA_OBJECT, .fields = rows }

#endif
