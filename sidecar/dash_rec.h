/* The dashboard's "recommendations" section (api_dashboard.c, README
 * "Dashboard"): today's CTR of recommended items per source and per
 * algorithm over every recommendation ad unit, and today's figures of the
 * ACTIVE experiments' variants (the whole run is at
 * /api/experiments/{id}/results). */
#ifndef ADSERVE_DASH_REC_H
#define ADSERVE_DASH_REC_H

#include "stats.h"

#include <cJSON.h>

struct dash_rec;

/* NULL out of memory. */
struct dash_rec *dash_rec_new(void);
void dash_rec_free(struct dash_rec *r);

/* Adds one of today's hours (an HGETALL reply); -1 out of memory. */
int dash_rec_add_hour(struct dash_rec *r, const redisReply *fields);

/* The section, reading the experiments (HVALS: they are few). */
enum store_status dash_rec_json(struct dash_rec *r, struct store_conn *c, cJSON **out);

#endif
