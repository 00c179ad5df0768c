/* The allocation rule that the allocations resource and the developer
 * allocations view share (api_allocations.c, api_developer_allocations.c):
 * what an allocation's target names exists. */
#ifndef ADSERVE_ALLOCATIONS_H
#define ADSERVE_ALLOCATIONS_H

#include "store.h"

#include <cJSON.h>

/* Whether allocation a's target_id names a record of its target's kind:
 * STORE_OK with *why NULL when it does, STORE_OK with *why the 422's
 * message (after "target_id: ") when not; else the store's error. */
enum store_status allocation_target_check(struct store_conn *c, const cJSON *a,
                                          const char **why);

#endif
