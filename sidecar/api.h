/* Route handlers, one file per resource group (api_*.c). */
#ifndef ADSERVE_API_H
#define ADSERVE_API_H

#include "http.h"

/* the API's version: the OpenAPI document's, and /api/system's */
#define API_VERSION "0.5.0"

/* A group of routes, defined in its api_*.c file (see routes.c). */
#define ROUTE_GROUP(name)                         \
    extern const struct route name##_routes[];    \
    extern const size_t name##_routes_count

ROUTE_GROUP(health);
ROUTE_GROUP(auth);
ROUTE_GROUP(users);
ROUTE_GROUP(audit);
ROUTE_GROUP(ad_units);
ROUTE_GROUP(developer);
ROUTE_GROUP(openapi);
ROUTE_GROUP(batch);
ROUTE_GROUP(advertisers);
ROUTE_GROUP(placements);
ROUTE_GROUP(orders);
ROUTE_GROUP(line_items);
ROUTE_GROUP(creatives);
ROUTE_GROUP(licas);
ROUTE_GROUP(targeting_keys);
ROUTE_GROUP(metrics);
ROUTE_GROUP(dashboard);
ROUTE_GROUP(native_formats);
ROUTE_GROUP(native_style_templates);
ROUTE_GROUP(native_styles);
ROUTE_GROUP(ad_unit_native_styles);
ROUTE_GROUP(catalog_items);
ROUTE_GROUP(item_pools);
ROUTE_GROUP(rec_jobs);
ROUTE_GROUP(rec_metrics);
ROUTE_GROUP(experiments);
ROUTE_GROUP(integration);
ROUTE_GROUP(system);
ROUTE_GROUP(developer_monitoring);
ROUTE_GROUP(settings);
ROUTE_GROUP(manager);
ROUTE_GROUP(internal);
ROUTE_GROUP(license);
ROUTE_GROUP(segments);
ROUTE_GROUP(media);
ROUTE_GROUP(ad_sources);
ROUTE_GROUP(allocations);
ROUTE_GROUP(developer_allocations);
ROUTE_GROUP(blocked_creatives);
ROUTE_GROUP(external_creatives);

/* Handlers two groups share: the recommendation jobs' run (users, and the
 * internal group's scheduler), and its answer. */
void api_rec_jobs_run(struct request *req, struct reply *rep);
extern const struct schema schema_rec_jobs_report;

#endif
