/* The route groups. Each api_*.c file defines its group's rows:
 *
 *   const struct route auth_routes[] = {
 *       { "POST", "/api/auth/login", api_auth_login, 0, BODY_JSON },
 *   };
 *   const size_t auth_routes_count = sizeof auth_routes / sizeof auth_routes[0];
 *
 * where roles 0 means public, otherwise a valid access token with one of
 * the listed roles is needed before the body is even read. A new group is
 * one line here and one declaration in api.h. */
#include "api.h"

#define GROUP(name) { name##_routes, &name##_routes_count }

const struct route_table route_tables[] = {
    GROUP(health),
    GROUP(auth),
    GROUP(users),
    GROUP(audit),
    GROUP(ad_units),
    GROUP(developer),
    GROUP(openapi),
    GROUP(batch),
    GROUP(advertisers),
    GROUP(placements),
    GROUP(orders),
    GROUP(line_items),
    GROUP(creatives),
    GROUP(licas),
    GROUP(targeting_keys),
    GROUP(metrics),
    GROUP(dashboard),
    GROUP(native_formats),
    GROUP(native_style_templates),
    GROUP(native_styles),
    GROUP(ad_unit_native_styles),
    GROUP(catalog_items),
    GROUP(item_pools),
    GROUP(rec_jobs),
    GROUP(rec_metrics),
    GROUP(experiments),
    GROUP(integration),
    GROUP(system),
    GROUP(developer_monitoring),
    GROUP(settings),
    GROUP(manager),
    GROUP(internal),
    GROUP(license),
    GROUP(segments),
    GROUP(media),
    GROUP(ad_sources),
    GROUP(allocations),
    GROUP(developer_allocations),
    GROUP(blocked_creatives),
    GROUP(external_creatives),
};

const size_t route_tables_count = sizeof route_tables / sizeof route_tables[0];
