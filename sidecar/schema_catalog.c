/* The shapes of the recommendation catalog (schema_catalog.h). The spec
 * names the AssociatedItemsPool group and the catalog item id and shows no
 * fields: the choices are written next to the rows. Rules between fields
 * (an item id's characters, a flat attribute map, a pool's distinct ids)
 * are the resources' own, in api_catalog.c. */
#include "schema_catalog.h"

#include "schema_rows.h"

#include <stddef.h>

#define RANGE(lo, hi) .has_min = true, .min = (lo), .has_max = true, .max = (hi)

static const struct schema item_id = {
    .type = SCHEMA_STRING, .min_length = 1, .max_length = ADSERVE_ITEM_ID_MAX,
    .description = "the customer's own catalog item id: letters, digits and . _ : ~ -",
};
static const struct schema title = { .type = SCHEMA_STRING, .min_length = 1, .max_length = 256 };
static const struct schema url = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_URI,
                                   .max_length = 2048 };
static const struct schema url_n = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_URI,
                                     .max_length = 2048, .nullable = true };
static const struct schema free_object = { .type = SCHEMA_FREE_OBJECT };
static const struct schema context = { .type = SCHEMA_STRING, .min_length = 1, .max_length = 64 };
static const struct schema contexts = { .type = SCHEMA_ARRAY, .items = &context,
                                        .max_items = ADSERVE_ITEM_CONTEXTS_MAX };
static const struct schema q = { .type = SCHEMA_STRING, .min_length = 1, .max_length = 256,
                                 .description = "a substring of the title, any case" };

/* ---- catalog items ----------------------------------------------------------------------- */

static const struct schema_field catalog_item_fields[] = {
    ID_ROW,
    { "item_id", &item_id, .required = true,
      .description = "unique; what pools, presets and requests name; cannot change" },
    { "title", &title, .required = true },
    { "url", &url, .required = true, .description = "where a click on it goes (absolute http(s))" },
    { "image", &url_n, .dflt = "null", .description = "its picture (absolute http(s))" },
    { "attributes", &free_object, .dflt = "{}",
      .description = "what content_filter_rule reads: up to 64 members, each a string (up to "
                     "256 bytes), a number, a boolean or an array of up to 32 strings" },
    { "contexts", &contexts, .dflt = "[\"" ADSERVE_V_CONTEXT_ALL "\"]",
      .description = "the serving contexts it belongs to (up to 16)" },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(catalog_item, "CatalogItem", catalog_item_fields,
                 "An item that recommendation placements may recommend.");

static const struct schema_field catalog_item_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "item_id", .schema = &item_id },
    { .name = "context", .schema = &context },
    { .name = "q", .schema = &q },
    { NULL },
};
LIST_QUERY(catalog_item, catalog_item_query_fields);

/* ---- associated items pools -------------------------------------------------------------------- */

static const struct schema score = { .type = SCHEMA_NUMBER, RANGE(-1e9, 1e9) };
static const struct schema_field associated_fields[] = {
    { "item_id", &item_id, .required = true },
    { "score", &score, .dflt = "0", .description = "higher first" },
    { NULL },
};
static const struct schema associated = {
    .name = "AssociatedItem", .type = SCHEMA_OBJECT, .fields = associated_fields,
};
static const struct schema associated_items = { .type = SCHEMA_ARRAY, .items = &associated,
                                                .max_items = ADSERVE_POOL_ITEMS_MAX };

static const struct schema_field item_pool_fields[] = {
    ID_ROW,
    { "source_item_id", &item_id, .required = true,
      .description = "the item a user is looking at; one pool per item; cannot change" },
    { "items", &associated_items, .required = true,
      .description = "up to 100 distinct items other than the source, stored ranked by score "
                     "(highest first, ties in the order sent); ids not in the catalog are "
                     "skipped when serving" },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(item_pool, "AssociatedItemsPool", item_pool_fields,
                 "The items to recommend beside a source item, ranked: a customer's "
                 "recommender's output, or adserve's own.");

static const struct schema_field item_pool_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "source_item_id", .schema = &item_id },
    { NULL },
};
LIST_QUERY(item_pool, item_pool_query_fields);

/* ---- recommendation metrics' rows (/api/metrics/recommendations, the dashboard) ------------ */

static const struct schema text = { .type = SCHEMA_STRING };
static const struct schema count = { .type = SCHEMA_INTEGER, .has_min = true, .min = 0 };
static const struct schema ratio = { .type = SCHEMA_NUMBER, RANGE(0, 1) };
#define CTR_ROWS                                                                                  \
    { "shown", &count, .required = true, .description = "times recommended" },                   \
    { "clicks", &count, .required = true },                                                      \
    { "ctr", &ratio, .required = true, .description = "clicks / shown, 6 decimals" },           \
    { "ctr_low", &ratio, .required = true, .description = "its 95% Wilson interval's low end" }, \
    { "ctr_high", &ratio, .required = true, .description = "... and high end" }

static const struct schema source_name = { .type = SCHEMA_STRING,
                                           .enum_values = adserve_rec_source_names };
static const struct schema_field source_fields[] = {
    { "source", &source_name, .required = true,
      .description = "algorithm (the unit's algorithm or target service: see algorithms), "
                     "popular, preset or snapshot" },
    CTR_ROWS,
    { NULL },
};
const struct schema schema_rec_source_metrics = {
    .name = "RecommendationSourceMetrics", .type = SCHEMA_OBJECT, .fields = source_fields,
};

static const struct schema algorithm_name = { .type = SCHEMA_STRING,
                                              .enum_values = adserve_rec_algorithm_counted };
static const struct schema_field algorithm_fields[] = {
    { "algorithm", &algorithm_name, .required = true,
      .description = "the algorithm that gave the items: the unit's ext.algorithm when they "
                     "were shown, or target_service" },
    CTR_ROWS,
    { NULL },
};
const struct schema schema_rec_algorithm_metrics = {
    .name = "RecommendationAlgorithmMetrics", .type = SCHEMA_OBJECT, .fields = algorithm_fields,
};

static const struct schema_field item_fields[] = {
    { "item_id", &text, .required = true },
    { "views", &count, .required = true,
      .description = "recommendation requests that viewed it (ext.item_id)" },
    CTR_ROWS,
    { NULL },
};
const struct schema schema_rec_item_metrics = {
    .name = "RecommendationItemMetrics", .type = SCHEMA_OBJECT, .fields = item_fields,
};
