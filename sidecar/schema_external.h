/* The shapes of external demand (README "External demand"): AdSources,
 * allocations, blocked and external creatives, their list queries, the
 * developer allocations view and the "block this" action. Rules between
 * fields or records are the api_*.c files' (resource.h tables and check
 * hooks). */
#ifndef ADSERVE_SCHEMA_EXTERNAL_H
#define ADSERVE_SCHEMA_EXTERNAL_H

#include "schema.h"

extern const struct schema schema_ad_source, schema_ad_source_patch, schema_ad_source_list_query;
extern const struct schema schema_allocation, schema_allocation_patch,
    schema_allocation_list_query;
extern const struct schema schema_blocked_creative, schema_blocked_creative_patch,
    schema_blocked_creative_list_query;
extern const struct schema schema_external_creative, schema_external_creative_patch,
    schema_external_creative_list_query;

/* PUT /api/developer/control/allocations: {items: [allocation, id optional]};
 * GET and the PUT's answer: {items: [Allocation]} */
#define ALLOCATIONS_PUT_MAX 1000
extern const struct schema schema_allocations_put, schema_allocations_view;

/* POST /api/external-creatives/{id}/block: {kind, ad_unit_id, description};
 * its answer {items: [BlockedCreative]} */
extern const struct schema schema_block_request, schema_block_response;

#endif
