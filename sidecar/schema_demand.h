/* The shapes of the demand model (schema.h tables): advertisers,
 * placements, orders, line items, creatives, LICAs, custom targeting keys
 * and values, their list queries, and the batch bodies.
 *
 * Each resource shape is the response, the POST body (read-only fields
 * refused on input) and, applied SCHEMA_PARTIAL, the PATCH body; its
 * *_patch twin is the same rows as the OpenAPI document shows a PATCH. */
#ifndef ADSERVE_SCHEMA_DEMAND_H
#define ADSERVE_SCHEMA_DEMAND_H

#include "schema.h"

extern const struct schema schema_advertiser, schema_advertiser_patch,
    schema_advertiser_list_query;
extern const struct schema schema_placement, schema_placement_patch,
    schema_placement_list_query;
extern const struct schema schema_order, schema_order_patch, schema_order_list_query;
extern const struct schema schema_line_item, schema_line_item_patch,
    schema_line_item_list_query;
extern const struct schema schema_creative, schema_creative_patch, schema_creative_list_query;
extern const struct schema schema_lica, schema_lica_patch, schema_lica_list_query;
extern const struct schema schema_targeting_key, schema_targeting_key_patch,
    schema_targeting_key_list_query;
extern const struct schema schema_targeting_value, schema_targeting_value_patch,
    schema_targeting_value_list_query;

#define BATCH_MAX_ITEMS 100

/* POST /api/{line-items,licas,orders}/batch, as documented:
 * {items: [{op, id, data}]} with at most BATCH_MAX_ITEMS items. */
extern const struct schema schema_batch_request;
/* The same envelope as applied: items of any kind, so that a malformed
 * item fails alone (schema_batch_item) rather than the whole batch. */
extern const struct schema schema_batch_envelope;
extern const struct schema schema_batch_item;
/* {results: [{index, status, id, detail}]} */
extern const struct schema schema_batch_response;

#endif
