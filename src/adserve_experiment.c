/*
 * adserve_experiment: variants over their ad unit, and the users' draws
 * (adserve_experiment.h).
 */

#include <cjson/cJSON.h>

#include "adserve_contract.h"
#include "adserve_experiment.h"


/* The object member name of o, made (empty) when absent or not an
 * object; NULL out of memory. */
static cJSON *
object_member(cJSON *o, const char *name)
{
    cJSON  *m = cJSON_GetObjectItemCaseSensitive(o, name);

    if (cJSON_IsObject(m)) {
        return m;
    }

    m = cJSON_CreateObject();
    if (m == NULL) {
        return NULL;
    }

    if (cJSON_GetObjectItemCaseSensitive(o, name) != NULL
        ? !cJSON_ReplaceItemInObjectCaseSensitive(o, name, m)
        : !cJSON_AddItemToObject(o, name, m))
    {
        cJSON_Delete(m);
        return NULL;
    }

    return m;
}


/* Every member of from replaces the member of the same name in member
 * name of unit. */
static int
override(cJSON *unit, const char *name, const cJSON *from)
{
    const cJSON  *v;
    cJSON        *to, *copy;

    if (!cJSON_IsObject(from) || from->child == NULL) {
        return 0;
    }

    to = object_member(unit, name);
    if (to == NULL) {
        return -1;
    }

    cJSON_ArrayForEach(v, from) {
        copy = cJSON_Duplicate(v, 1);
        if (copy == NULL) {
            return -1;
        }

        cJSON_DeleteItemFromObjectCaseSensitive(to, v->string);

        if (!cJSON_AddItemToObject(to, v->string, copy)) {
            cJSON_Delete(copy);
            return -1;
        }
    }

    return 0;
}


int
adserve_variant_apply(cJSON *unit, const cJSON *variant)
{
    if (!cJSON_IsObject(unit)) {
        return -1;
    }

    if (override(unit, ADSERVE_V_VARIANT_EXT,
                 cJSON_GetObjectItemCaseSensitive(variant, ADSERVE_V_VARIANT_EXT)) != 0
        || override(unit, ADSERVE_V_VARIANT_REC,
                    cJSON_GetObjectItemCaseSensitive(variant, ADSERVE_V_VARIANT_REC)) != 0)
    {
        return -1;
    }

    return 0;
}


uint32_t
adserve_experiment_draw(uint64_t salt, const char *user, size_t len)
{
    uint64_t  z = adserve_hash(user, len) ^ salt;

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;

    return (uint32_t) (z >> 32);
}


int
adserve_experiment_bounds(const uint32_t *weights, unsigned n, uint64_t *upto)
{
    uint64_t  total = 0, sum = 0;
    unsigned  i;

    for (i = 0; i < n; i++) {
        if (weights[i] < 1 || weights[i] > ADSERVE_VARIANT_WEIGHT_MAX) {
            return -1;
        }
        total += weights[i];
    }

    if (total == 0) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        sum += weights[i];
        upto[i] = (sum << 32) / total;
    }

    return 0;
}
