/* The shapes of the recommendation catalog (schema.h tables): catalog
 * items and associated items pools, with their list queries (README
 * "Recommendation catalog"). */
#ifndef ADSERVE_SCHEMA_CATALOG_H
#define ADSERVE_SCHEMA_CATALOG_H

#include "schema.h"

extern const struct schema schema_catalog_item, schema_catalog_item_patch,
    schema_catalog_item_list_query;
extern const struct schema schema_item_pool, schema_item_pool_patch, schema_item_pool_list_query;
/* the rows of recommendation metrics: per source, per algorithm, per item */
extern const struct schema schema_rec_source_metrics, schema_rec_algorithm_metrics,
    schema_rec_item_metrics;

#endif
