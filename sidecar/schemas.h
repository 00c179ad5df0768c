/* The shapes of the management API's resources (schema.h tables), by
 * resource: schema_ad_unit.c holds the spec's AdUnit and every shape
 * inside it. */
#ifndef ADSERVE_SCHEMAS_H
#define ADSERVE_SCHEMAS_H

#include "schema.h"

/* The AdUnit response shape, also the POST body (its read-only fields
 * id, created_by, path, created_at, updated_at, is_active are refused on
 * input) and, applied with SCHEMA_PARTIAL, the PATCH body. */
extern const struct schema schema_ad_unit;
/* The same fields as the OpenAPI document shows a PATCH body. */
extern const struct schema schema_ad_unit_patch;
/* AdUnitExt with every default of the spec's table. */
extern const struct schema schema_ad_unit_ext;
/* Endpoint 1's body: exactly {"ext": DeveloperAdUnitExt}. */
extern const struct schema schema_developer_ad_unit_ext_request;
/* GET /api/ad-units query: limit, offset, status, parent_id, q. */
extern const struct schema schema_ad_unit_list_query;
/* The spec's "Expr or null" (RecommendationPlacement, line item kv targeting). */
extern const struct schema schema_expr_n;
/* RecommendationPlacement with its defaults (experiments' variants are
 * checked against it). */
extern const struct schema schema_recommendation_placement;
/* NativePlacement's assets: AssetRequest[] (native formats name theirs so). */
extern const struct schema schema_asset_requests;


#endif
