/* /api/blocked-creatives: what bids from outside demand may not carry
 * (resource.h, README "External demand"): an advertiser domain, a creative
 * id or an IAB category, for one ad unit (with its descendants) or all, for
 * one source or all.
 *
 * Inventory: admins and operators. Rules beyond the shape:
 *   - an adomain is a host name, kept in lower case (domains compare
 *     without case, and serving compares bytes); a cat an IAB code
 *     (letters, digits, -) (422);
 *   - ad_unit_id, ad_source_id and external_creative_id name records that
 *     exist (422);
 *   - one block per kind, value, ad unit and source (409): global ones
 *     too, whose missing ad unit or source counts as "any".
 * A block whose ad unit or source is later deleted applies to nothing and
 * stays listed. Serving reads adserve:blocked_creatives: every write is
 * in the change log. */
#include "api.h"

#include "resource.h"
#include "schema_external.h"

#include <ctype.h>
#include <string.h>

static const char *const block_watch[] = { ADSERVE_KEY_AD_UNITS, ADSERVE_KEY_AD_SOURCES,
                                           ADSERVE_KEY_EXTERNAL_CREATIVES, NULL };
static const struct resource_ref block_refs[] = {
    { "ad_unit_id", &resource_ad_units_ref, false },
    { "ad_source_id", &resource_ad_sources, false },
    { "external_creative_id", &resource_external_creatives, false },
    { NULL, NULL, false },
};
static const struct resource_unique block_uniques[] = {
    { ADSERVE_KEY_BLOCK_VALUES, false, { "kind", "ad_unit_id", "ad_source_id", "value", NULL },
      "value: blocked already for this ad unit and source", ADSERVE_BLOCK_ANY },
    { NULL, false, { NULL }, NULL, NULL },
};
static const struct resource_filter block_filters[] = {
    { "kind", "kind", NULL, false },
    { "ad_unit_id", "ad_unit_id", NULL, false },
    { "ad_source_id", "ad_source_id", NULL, false },
    { "external_creative_id", "external_creative_id", NULL, false },
    { NULL, NULL, NULL, false },
};

/* A host name's characters, no empty label, no scheme or path. */
static bool host_name(const char *s)
{
    size_t n = strlen(s);

    return n > 0 && n <= 253 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789.-") == n &&
           s[0] != '.' && s[n - 1] != '.' && strstr(s, "..") == NULL;
}

void blocked_creative_normalise(cJSON *block)
{
    cJSON *value = cJSON_GetObjectItemCaseSensitive(block, "value");

    if (cJSON_IsString(value) &&
        adserve_vocab_str(adserve_block_kind_names, json_str_member(block, "kind")) ==
            ADSERVE_BLOCK_ADOMAIN)
        for (char *p = value->valuestring; *p != '\0'; p++)
            *p = (char)tolower((unsigned char)*p);
}

static enum store_status block_check(struct resource_write *w)
{
    cJSON *value = cJSON_GetObjectItemCaseSensitive(w->after, "value");
    int kind = adserve_vocab_str(adserve_block_kind_names, json_str_member(w->after, "kind"));

    if (!cJSON_IsString(value))
        return STORE_ERROR;
    blocked_creative_normalise(w->after);
    if (kind == ADSERVE_BLOCK_ADOMAIN) {
        if (!host_name(value->valuestring))
            return resource_refuse(w, 422, "value: a domain such as shop.example (not a URL)");
    } else if (kind == ADSERVE_BLOCK_CAT) {
        size_t n = strlen(value->valuestring);
        if (strspn(value->valuestring, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                       "0123456789-") != n)
            return resource_refuse(w, 422, "value: an IAB category code such as IAB7-39");
    }
    return STORE_OK;
}

const struct resource resource_blocked_creatives = {
    .name = ADSERVE_RECORD_BLOCKED_CREATIVE, .label = "blocked creative",
    .hash = ADSERVE_KEY_BLOCKED_CREATIVES, .location = "/api/blocked-creatives",
    .schema = &schema_blocked_creative, .list_query = &schema_blocked_creative_list_query,
    .filters = block_filters, .serving = true, .owner = OWNER_NONE, .watch = block_watch,
    .refs = block_refs, .uniques = block_uniques, .check = block_check,
};

RESOURCE_HANDLERS(blocks, resource_blocked_creatives)
RESOURCE_DOCS(blocks, "Blocked Creative", schema_blocked_creative, schema_blocked_creative_patch,
              schema_blocked_creative_list_query,
              "List blocked creatives, oldest first; filters: kind, ad_unit_id, ad_source_id, "
              "external_creative_id",
              "Block an advertiser domain, a creative id or a category in bids, for an ad unit "
              "or all (a block that exists: 409)",
              "Get a blocked creative (advertisers: 404)",
              "Update a blocked creative (advertisers: 404)",
              "Delete a blocked creative: bids may carry it again (advertisers: 404)");

const struct route blocked_creatives_routes[] = {
    { "GET", "/api/blocked-creatives", blocks_list, INVENTORY_ROLES, BODY_NONE, &blocks_list_doc },
    { "POST", "/api/blocked-creatives", blocks_create, INVENTORY_ROLES, BODY_JSON,
      &blocks_create_doc },
    { "GET", "/api/blocked-creatives/{id}", blocks_get, ROLES_ANY, BODY_NONE, &blocks_get_doc },
    { "PATCH", "/api/blocked-creatives/{id}", blocks_update, ROLES_ANY, BODY_JSON,
      &blocks_update_doc },
    { "DELETE", "/api/blocked-creatives/{id}", blocks_delete, ROLES_ANY, BODY_NONE,
      &blocks_delete_doc },
};
const size_t blocked_creatives_routes_count =
    sizeof blocked_creatives_routes / sizeof blocked_creatives_routes[0];
