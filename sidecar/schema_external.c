/* The shapes of external demand (schema_external.h). The spec names the
 * AdSource, Allocations, Blocked Creative and External Creative groups and
 * shows no fields: the fields follow OpenRTB 2.6 (endpoint, seat, tmax,
 * bidfloor, badv, bcat, crid, adomain), and the bounds are choices written
 * next to their rows (the contract's constants, which serving clamps to). */
#include "schema_external.h"

#include "schema_rows.h"

#include <stddef.h>

#define RANGE(lo, hi) .has_min = true, .min = (lo), .has_max = true, .max = (hi)

static const struct schema label = { .type = SCHEMA_STRING, .min_length = 1, .max_length = 256 };
static const struct schema text_n = { .type = SCHEMA_STRING, .max_length = 4096,
                                      .nullable = true };
static const struct schema boolean = { .type = SCHEMA_BOOLEAN };
static const struct schema q = { .type = SCHEMA_STRING, .min_length = 1, .max_length = 256,
                                 .description = "a substring of the name, any case" };

/* ---- AdSources ------------------------------------------------------------------------- */

static const struct schema endpoint = {
    .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_URI, .max_length = ADSERVE_ENDPOINT_URL_MAX,
    .description = "the bidder's OpenRTB 2.6 endpoint: an absolute http(s) URL, no user "
                   "info, no fragment",
};
static const struct schema seat_n = { .type = SCHEMA_STRING, .min_length = 1,
                                      .max_length = ADSERVE_SEAT_MAX, .nullable = true };
static const struct schema tmax = { .type = SCHEMA_INTEGER,
                                    RANGE(ADSERVE_TMAX_MIN, ADSERVE_TMAX_MAX) };
static const struct schema floor_cpm = { .type = SCHEMA_NUMBER, RANGE(0, ADSERVE_COST_MAX) };
static const struct schema format = {
    .name = "AdFormat", .type = SCHEMA_STRING, .enum_values = adserve_format_names,
};
static const struct schema formats = { .type = SCHEMA_ARRAY, .items = &format,
                                       .max_items = ADSERVE_FORMAT_COUNT };
static const struct schema adjustment_n = {
    .type = SCHEMA_NUMBER, RANGE(ADSERVE_BID_ADJUSTMENT_MIN, ADSERVE_BID_ADJUSTMENT_MAX),
    .nullable = true,
};
static const struct schema qps_n = { .type = SCHEMA_INTEGER, RANGE(1, ADSERVE_QPS_MAX),
                                     .nullable = true };

static const struct schema_field ad_source_fields[] = {
    ID_ROW,
    { "name", &label, .required = true, .description = "unique" },
    { "description", &text_n, .dflt = "null" },
    { "endpoint_url", &endpoint, .required = true },
    { "seat", &seat_n, .dflt = "null",
      .description = "the buyer seat: sent as wseat, and bids of other seats are dropped; "
                     "null: any seat" },
    { "tmax_ms", &tmax, .dflt = "200",
      .description = "the bid request's tmax: the source's answer is waited for this long "
                     "at most (10..1000 ms)" },
    { "floor", &floor_cpm, .dflt = "0",
      .description = "the lowest CPM accepted, in the account currency; sent as bidfloor, "
                     "never below the ad unit's ext.target_ecpm" },
    { "formats", &formats, .dflt = "[\"display\"]",
      .description = "the formats it bids on (at least one, each once): an imp carries only "
                     "these of the ad unit's display, video and native objects" },
    { "enabled", &boolean, .dflt = "true",
      .description = "false: no request goes to it, whatever its allocations" },
    { "bid_adjustment", &adjustment_n, .dflt = "null",
      .description = "a multiplier of its bids' prices before they compete (0.01..10), e.g. "
                     "0.9 for a source that bills gross; null: 1" },
    { "qps_limit", &qps_n, .dflt = "null",
      .description = "bid requests per second at most, per node; null: no limit" },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(ad_source, "AdSource", ad_source_fields,
                 "An outside demand source: a bidder reached over OpenRTB 2.6.");

static const struct schema_field ad_source_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "q", .schema = &q },
    { NULL },
};
LIST_QUERY(ad_source, ad_source_query_fields);

/* ---- allocations ------------------------------------------------------------------------- */

static const struct schema alloc_target = {
    .name = "AllocationTarget", .type = SCHEMA_STRING, .enum_values = adserve_alloc_target_names,
    .description = "ad_unit: the ad unit target_id; path: the ad unit target_id and every "
                   "unit under it in the ad unit path; placement: the ad units of placement "
                   "target_id (with their descendants)",
};
static const struct schema share = {
    .type = SCHEMA_NUMBER, RANGE(0, ADSERVE_SHARE_MAX),
    .description = "the percentage of the targeted units' ad requests that are sent to the "
                   "source (each allocation draws apart); 0: idle",
};

#define ALLOCATION_ROWS                                                                    \
    { "ad_source_id", &schema_uuid, .required = true, .description = "an existing AdSource" }, \
    { "target", &alloc_target, .required = true },                                         \
    { "target_id", &schema_uuid, .required = true,                                         \
      .description = "an existing ad unit (target ad_unit, path) or placement (placement); " \
                     "one allocation per source and target_id" },                          \
    { "share", &share, .dflt = "100" }

static const struct schema_field allocation_fields[] = {
    ID_ROW,
    ALLOCATION_ROWS,
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(allocation, "Allocation", allocation_fields,
                 "Which ad units send bid requests to an AdSource, and how much of their "
                 "traffic.");

static const struct schema_field allocation_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "ad_source_id", .schema = &schema_uuid },
    { .name = "target_id", .schema = &schema_uuid },
    { .name = "target", .schema = &alloc_target },
    { NULL },
};
LIST_QUERY(allocation, allocation_query_fields);

static const struct schema_field allocation_put_fields[] = {
    { "id", &schema_uuid,
      .description = "an existing allocation's, which this item replaces; none: a new one" },
    ALLOCATION_ROWS,
    { NULL },
};
static const struct schema allocation_put = {
    .name = "AllocationPut", .type = SCHEMA_OBJECT, .fields = allocation_put_fields,
};
static const struct schema allocation_put_items = {
    .type = SCHEMA_ARRAY, .items = &allocation_put, .max_items = ALLOCATIONS_PUT_MAX,
};
static const struct schema_field allocations_put_fields[] = {
    { "items", &allocation_put_items, .required = true,
      .description = "the whole set: existing allocations not named here are deleted" },
    { NULL },
};
const struct schema schema_allocations_put = {
    .name = "AllocationsPut", .type = SCHEMA_OBJECT, .fields = allocations_put_fields,
};
static const struct schema allocation_items = { .type = SCHEMA_ARRAY, .items = &schema_allocation };
static const struct schema_field allocations_view_fields[] = {
    { "items", &allocation_items, .required = true, .description = "every allocation, oldest first" },
    { NULL },
};
const struct schema schema_allocations_view = {
    .name = "AllocationsView", .type = SCHEMA_OBJECT, .fields = allocations_view_fields,
};

/* ---- blocked creatives ------------------------------------------------------------------- */

static const struct schema block_kind = {
    .name = "BlockKind", .type = SCHEMA_STRING, .enum_values = adserve_block_kind_names,
    .description = "adomain: a bid's advertiser domain (and its subdomains; sent as badv); "
                   "crid: a bid's creative id; cat: an IAB category (IAB7 blocks IAB7-39; "
                   "sent in bcat)",
};
static const struct schema block_value = {
    .type = SCHEMA_STRING, .min_length = 1, .max_length = ADSERVE_BLOCK_VALUE_MAX,
    .description = "adomain: a host name, stored in lower case; cat: an IAB code such as "
                   "IAB7-39; crid: as the source sends it",
};

static const struct schema_field blocked_creative_fields[] = {
    ID_ROW,
    { "kind", &block_kind, .required = true },
    { "value", &block_value, .required = true },
    { "ad_unit_id", &schema_uuid_n, .dflt = "null",
      .description = "the ad unit it applies to (with its descendants); null: every ad unit" },
    { "ad_source_id", &schema_uuid_n, .dflt = "null",
      .description = "the source whose bids it applies to; null: every source" },
    { "external_creative_id", &schema_uuid_n, .dflt = "null",
      .description = "the external creative it was made from (its block action), if any" },
    { "description", &text_n, .dflt = "null" },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(blocked_creative, "BlockedCreative", blocked_creative_fields,
                 "What bids from outside demand may not carry: an advertiser domain, a "
                 "creative id or a category, for one ad unit or all; one per kind, value, "
                 "ad unit and source.");

static const struct schema_field blocked_creative_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "kind", .schema = &block_kind },
    { .name = "ad_unit_id", .schema = &schema_uuid },
    { .name = "ad_source_id", .schema = &schema_uuid },
    { .name = "external_creative_id", .schema = &schema_uuid },
    { NULL },
};
LIST_QUERY(blocked_creative, blocked_creative_query_fields);

static const struct schema_field block_request_fields[] = {
    { "kind", &block_kind, .dflt = "\"crid\"",
      .description = "crid: this creative of its source; adomain: each of its advertiser "
                     "domains, from any source; cat: each of its categories, from any source" },
    { "ad_unit_id", &schema_uuid_n, .dflt = "null", .description = "null: every ad unit" },
    { "description", &text_n, .dflt = "null" },
    { NULL },
};
const struct schema schema_block_request = {
    .name = "BlockRequest", .type = SCHEMA_OBJECT, .fields = block_request_fields,
};
static const struct schema block_items = { .type = SCHEMA_ARRAY, .items = &schema_blocked_creative };
static const struct schema_field block_response_fields[] = {
    { "items", &block_items, .required = true,
      .description = "the blocks that now cover it: made by this request, or there before" },
    { NULL },
};
const struct schema schema_block_response = {
    .name = "BlockResponse", .type = SCHEMA_OBJECT, .fields = block_response_fields,
};

/* ---- external creatives (the module writes them) ---------------------------------------------- */

static const struct schema crid = { .type = SCHEMA_STRING, .min_length = 1,
                                    .max_length = ADSERVE_CRID_MAX };
static const struct schema word = { .type = SCHEMA_STRING, .max_length = ADSERVE_BLOCK_VALUE_MAX };
static const struct schema words = { .type = SCHEMA_ARRAY, .items = &word };
static const struct schema pixels_n = { .type = SCHEMA_INTEGER, RANGE(0, 100000),
                                        .nullable = true };
static const struct schema sample = { .type = SCHEMA_STRING,
                                      .max_length = ADSERVE_MARKUP_SAMPLE_MAX };
static const struct schema_field external_creative_fields[] = {
    { "id", &schema_uuid, .required = true, .read_only = true,
      .description = "of its source and crid, the same on every node (the contract's "
                     "adserve_external_creative_id)" },
    { "ad_source_id", &schema_uuid, .required = true, .read_only = true },
    { "crid", &crid, .required = true, .read_only = true, .description = "the bid's crid" },
    { "adomain", &words, .dflt = "[]", .read_only = true, .description = "the bid's adomain" },
    { "cat", &words, .dflt = "[]", .read_only = true, .description = "the bid's cat" },
    { "w", &pixels_n, .dflt = "null", .read_only = true },
    { "h", &pixels_n, .dflt = "null", .read_only = true },
    { "markup_sample", &sample, .dflt = "\"\"", .read_only = true,
      .description = "the first 4096 bytes of a winning adm" },
    { "first_seen", &schema_date_time, .required = true, .read_only = true },
    { "last_seen", &schema_date_time, .required = true, .read_only = true },
    { NULL },
};
RESOURCE_SCHEMAS(external_creative, "ExternalCreative", external_creative_fields,
                 "A creative that won from an outside source, as serving recorded it.");

static const struct schema_field external_creative_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "ad_source_id", .schema = &schema_uuid },
    { .name = "adomain", .schema = &word, .description = "creatives carrying this domain" },
    { .name = "crid", .schema = &crid },
    { NULL },
};
LIST_QUERY(external_creative, external_creative_query_fields);
