/* The shapes of experiments (schema_experiment.h). The spec names the
 * Experiment group and shows no fields: the choices are written next to
 * the rows, and the README's "Experiments" says why. Rules between fields
 * or records (distinct variant ids, a variant that makes a valid unit,
 * one ACTIVE experiment per unit) are api_experiments.c's. */
#include "schema_experiment.h"

#include "schema_rows.h"

#include <stddef.h>

#define RANGE(lo, hi) .has_min = true, .min = (lo), .has_max = true, .max = (hi)

static const struct schema label = { .type = SCHEMA_STRING, .min_length = 1, .max_length = 256 };
static const struct schema text_n = { .type = SCHEMA_STRING, .max_length = 4096,
                                      .nullable = true };
static const struct schema free_object = { .type = SCHEMA_FREE_OBJECT };
static const struct schema status = {
    .name = "ExperimentStatus", .type = SCHEMA_STRING,
    .enum_values = adserve_experiment_status_names,
    .description = "only an ACTIVE experiment splits traffic; one per ad unit",
};

/* ---- experiments ---------------------------------------------------------------------------- */

static const struct schema variant_id = {
    .type = SCHEMA_STRING, .min_length = 1, .max_length = ADSERVE_VARIANT_ID_MAX,
    .description = "letters, digits, _ and -; unique in the experiment",
};
static const struct schema weight = { .type = SCHEMA_INTEGER,
                                      RANGE(1, ADSERVE_VARIANT_WEIGHT_MAX) };
static const struct schema_field variant_fields[] = {
    { "id", &variant_id, .required = true },
    { "weight", &weight, .required = true,
      .description = "its share of the users is its weight over the sum of the weights" },
    { "ext", &free_object, .dflt = "{}",
      .description = "members that replace the ad unit's ext members of the same names "
                     "(algorithm, target_service, target_ecpm, bcat, ...); the result must be "
                     "a valid AdUnitExt" },
    { "recommendation", &free_object, .dflt = "{}",
      .description = "members that replace the ad unit's recommendation members (topn, "
                     "candidate_filtering, fallback, content_filter_rule, ...); the result "
                     "must be a valid RecommendationPlacement" },
    { NULL },
};
static const struct schema variant = {
    .name = "ExperimentVariant", .type = SCHEMA_OBJECT, .fields = variant_fields,
    .description = "The ad unit as this variant serves it: an empty variant is the control.",
};
static const struct schema variants = { .type = SCHEMA_ARRAY, .items = &variant,
                                        .max_items = ADSERVE_VARIANTS_MAX };

static const struct schema_field experiment_fields[] = {
    ID_ROW,
    { "name", &label, .required = true },
    { "description", &text_n, .dflt = "null" },
    { "ad_unit_id", &schema_uuid, .required = true,
      .description = "the ad unit whose traffic it splits; cannot change" },
    { "status", &status, .dflt = SCHEMA_JSON_STR(ADSERVE_V_PAUSED),
      .description = "PAUSED at creation unless given; ACTIVE splits; ARCHIVED is final" },
    { "variants", &variants, .required = true,
      .description = "2 to 8; a request joins the variant its user.id draws (stable); "
                     "requests without a user.id are served the unit as it is" },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(experiment, "Experiment", experiment_fields,
                 "A split of an ad unit's traffic between variants of its ext and "
                 "recommendation fields.");

static const struct schema_field experiment_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "ad_unit_id", .schema = &schema_uuid },
    { .name = "status", .schema = &status },
    { NULL },
};
LIST_QUERY(experiment, experiment_query_fields);

/* ---- results ------------------------------------------------------------------------------- */

static const struct schema_field results_query_fields[] = {
    { "from", &schema_date_time, .description = "the window's start; default the experiment's "
                                                 "creation (31 days at most before to)" },
    { "to", &schema_date_time, .description = "the window's end (exclusive); default now" },
    { NULL },
};
const struct schema schema_experiment_results_query = { .type = SCHEMA_OBJECT,
                                                        .fields = results_query_fields };

static const struct schema text = { .type = SCHEMA_STRING };
static const struct schema count = { .type = SCHEMA_INTEGER, .has_min = true, .min = 0 };
static const struct schema ratio = { .type = SCHEMA_NUMBER, RANGE(0, 1) };
static const struct schema ratio_n = { .type = SCHEMA_NUMBER, RANGE(0, 1), .nullable = true };
static const struct schema_field variant_result_fields[] = {
    { "id", &text, .required = true },
    { "weight", &count, .required = true },
    { "requests", &count, .required = true },
    { "answers", &count, .required = true, .description = "200 answers" },
    { "impressions", &count, .required = true },
    { "clicks", &count, .required = true, .description = "once per answer at most" },
    { "shown", &count, .required = true, .description = "recommended items (0 for ads)" },
    { "fill_rate", &ratio, .required = true, .description = "answers / requests" },
    { "ctr", &ratio, .required = true, .description = "clicks / impressions, 6 decimals" },
    { "ctr_low", &ratio, .required = true, .description = "its 95% Wilson interval's low end" },
    { "ctr_high", &ratio, .required = true, .description = "... and high end" },
    { "p_value", &ratio_n, .required = true,
      .description = "two-sided, of a two-proportion z-test of its CTR against the first "
                     "variant's (null for the first, or without impressions on either)" },
    { NULL },
};
const struct schema schema_experiment_variant_result = {
    .name = "ExperimentVariantResult", .type = SCHEMA_OBJECT, .fields = variant_result_fields,
};
static const struct schema variant_results = { .type = SCHEMA_ARRAY,
                                                .items = &schema_experiment_variant_result };
static const struct schema_field results_fields[] = {
    { "experiment_id", &schema_uuid, .required = true },
    { "ad_unit_id", &schema_uuid, .required = true },
    { "status", &status, .required = true },
    { "from", &schema_date_time, .required = true },
    { "to", &schema_date_time, .required = true },
    { "variants", &variant_results, .required = true, .description = "in the experiment's order" },
    { NULL },
};
const struct schema schema_experiment_results = {
    .name = "ExperimentResults", .type = SCHEMA_OBJECT, .fields = results_fields,
};
