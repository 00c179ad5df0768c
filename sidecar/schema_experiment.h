/* The shapes of experiments (schema.h tables): an experiment and its
 * variants, with the list query, and the results report (README
 * "Experiments"). */
#ifndef ADSERVE_SCHEMA_EXPERIMENT_H
#define ADSERVE_SCHEMA_EXPERIMENT_H

#include "schema.h"

extern const struct schema schema_experiment, schema_experiment_patch,
    schema_experiment_list_query;
extern const struct schema schema_experiment_results, schema_experiment_results_query;
/* one variant's row of the results (and of the dashboard's experiments) */
extern const struct schema schema_experiment_variant_result;

#endif
