/* What the experiments' results and the dashboard share (README
 * "Experiments"): a variant's counters, read from the hour hashes'
 * xv:{experiment id}/{variant id}:{metric} fields, and its report row. */
#ifndef ADSERVE_EXPERIMENTS_H
#define ADSERVE_EXPERIMENTS_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* the counters of a variant */
enum { XV_REQ, XV_ADS, XV_IMP, XV_CLK, XV_SHOWN, XV_COUNT };

/* The counter of a metric's name, or -1 (a variant's other metrics). */
int experiment_counter_of(const char *metric, size_t len);

/* Appends the row of variant (its record) with counters v to arr: the
 * counts, fill rate, CTR with its 95% interval, and the p-value against
 * first (the first variant's counters; NULL: none). false out of memory. */
bool experiment_variant_row(cJSON *arr, const cJSON *variant, const long long *v,
                            const long long *first);

#endif
