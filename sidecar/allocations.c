/* An allocation's target (allocations.h): an ad unit for targets ad_unit
 * and path, a placement for target placement. */
#include "allocations.h"

#include "json_util.h"
#include "resource.h"

enum store_status allocation_target_check(struct store_conn *c, const cJSON *a,
                                          const char **why)
{
    int target = adserve_vocab_str(adserve_alloc_target_names, json_str_member(a, "target"));
    const struct resource *res = target == ADSERVE_ALLOC_PLACEMENT ? &resource_placements
                                                                   : &resource_ad_units_ref;
    cJSON *rec = NULL;

    *why = NULL;
    if (target < 0) {
        *why = "an unknown target";
        return STORE_OK;
    }
    enum store_status st = resource_load(c, res, NULL, json_str_member(a, "target_id"), &rec);
    cJSON_Delete(rec);
    if (st == STORE_NOT_FOUND) {
        *why = target == ADSERVE_ALLOC_PLACEMENT ? "no such placement" : "no such ad unit";
        return STORE_OK;
    }
    return st;
}
