/* parsed_same.h -- whether two parses of a record (adserve_parsed.h) say
 * the same, member by member: what t/unit/fields_test.c and the fuzzer
 * t/fuzz/fuzz_fields.c ask of adserve_parse and adserve_parse_dom.
 * parsed_diff() names the first member that differs, or returns NULL. */
#ifndef PARSED_SAME_H
#define PARSED_SAME_H

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "adserve_parsed.h"

static int same_str(const char *a, const char *b) {
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static int same_mem(const char *a, size_t alen, const char *b, size_t blen) {
    return alen == blen && ((a == NULL && b == NULL)
                            || (a != NULL && b != NULL && memcmp(a, b, alen) == 0));
}

/* doubles bit for bit: both came from the same text */
static int same_num(double a, double b) {
    return memcmp(&a, &b, sizeof(double)) == 0;
}

static int same_strs(const adserve_strs_t *a, const adserve_strs_t *b) {
    uint32_t i;

    if (a->n != b->n) return 0;
    /* ids the build looks up carry their hashes, made alike by both */
    if ((a->h == NULL) != (b->h == NULL)) return 0;
    for (i = 0; i < a->n; i++) {
        if (!same_str(a->v[i], b->v[i])) return 0;
        if (a->h != NULL && (a->h[i] != b->h[i]
                             || a->h[i] != adserve_hash(a->v[i], strlen(a->v[i])))) return 0;
    }
    return 1;
}

static int same_nstrs(const adserve_native_strs_t *a, const adserve_native_strs_t *b) {
    uint32_t i;

    if (a->n != b->n) return 0;
    for (i = 0; i < a->n; i++) {
        if (!same_str(a->v[i], b->v[i])) return 0;
    }
    return 1;
}

/* rules as cJSON prints them: members, order and duplicates alike */
static int same_json(const cJSON *a, const cJSON *b) {
    char *pa, *pb;
    int same;

    if (a == NULL || b == NULL) return a == b;
    pa = cJSON_PrintUnformatted(a);
    pb = cJSON_PrintUnformatted(b);
    same = pa != NULL && pb != NULL && strcmp(pa, pb) == 0;
    cJSON_free(pa);
    cJSON_free(pb);
    return same;
}

#define DIFF(cond, what)  do { if (!(cond)) return what; } while (0)

static const char *li_diff(const adserve_parsed_li_t *a, const adserve_parsed_li_t *b) {
    uint32_t i;

    DIFF(a->active == b->active, "active");
    DIFF(a->tier == b->tier, "tier");
    DIFF(a->priority == b->priority, "priority");
    DIFF(a->cost_type == b->cost_type, "cost_type");
    DIFF(same_num(a->rate, b->rate), "rate");
    DIFF(a->start == b->start, "start");
    DIFF(a->end == b->end, "end");
    DIFF(a->goal_type == b->goal_type, "goal_type");
    DIFF(a->goal == b->goal, "goal");
    DIFF(a->delivery == b->delivery, "delivery");
    DIFF(a->ncaps == b->ncaps && a->max_cap == b->max_cap, "ncaps");
    for (i = 0; i < a->ncaps; i++) {
        DIFF(a->caps[i].max == b->caps[i].max && a->caps[i].seconds == b->caps[i].seconds,
             "caps");
    }
    DIFF(same_str(a->order_id, b->order_id) && a->order_hash == b->order_hash, "order_id");
    DIFF(same_strs(&a->include, &b->include), "include");
    DIFF(same_strs(&a->exclude, &b->exclude), "exclude");
    DIFF(same_strs(&a->placements, &b->placements), "placements");
    DIFF(a->rule == b->rule, "rule");
    DIFF(same_json(a->targeting, b->targeting), "targeting");
    return NULL;
}

static const char *creative_diff(const adserve_parsed_creative_t *a,
                                 const adserve_parsed_creative_t *b) {
    uint32_t i;

    DIFF(a->approved == b->approved, "approved");
    DIFF(same_num(a->size.w, b->size.w) && same_num(a->size.h, b->size.h), "size");
    DIFF(same_strs(&a->categories, &b->categories), "categories");
    DIFF(same_str(a->landing_url, b->landing_url), "landing_url");
    DIFF(same_mem(a->ad_json, a->ad_json_len, b->ad_json, b->ad_json_len), "ad_json");
    DIFF(a->format == b->format, "format");
    DIFF(a->interstitial == b->interstitial, "interstitial");
    DIFF(a->splices == b->splices, "splices");
    DIFF(a->duration == b->duration && a->skip_offset == b->skip_offset, "duration");
    DIFF(same_strs(&a->mimes, &b->mimes), "mimes");
    DIFF(same_mem(a->vast, a->vast_len, b->vast, b->vast_len), "vast");
    DIFF(a->nassets == b->nassets, "nassets");
    for (i = 0; i < a->nassets; i++) {
        DIFF(same_str(a->assets[i].value, b->assets[i].value)
             && same_str(a->assets[i].mime, b->assets[i].mime)
             && same_nstrs(&a->assets[i].mimes, &b->assets[i].mimes), "assets");
    }
    return NULL;
}

static const char *lica_diff(const adserve_parsed_lica_t *a, const adserve_parsed_lica_t *b) {
    DIFF(same_str(a->line_item_id, b->line_item_id), "line_item_id");
    DIFF(same_str(a->creative_id, b->creative_id), "creative_id");
    DIFF(a->line_item_hash == b->line_item_hash && a->creative_hash == b->creative_hash,
         "hashes");
    DIFF(a->weight == b->weight, "weight");
    return NULL;
}

/* NULL when a and b say the same (both NULL: out of memory, the same) */
static const char *parsed_diff(const adserve_parsed_t *a, const adserve_parsed_t *b) {
    if (a == NULL || b == NULL) return a == b ? NULL : "one is NULL";
    DIFF(a->kind == b->kind, "kind");
    DIFF(same_str(a->id, b->id) && a->id_len == b->id_len && a->id_hash == b->id_hash, "id");
    switch (a->kind) {
    case ADSERVE_KIND_LINE_ITEMS: return li_diff(&a->u.li, &b->u.li);
    case ADSERVE_KIND_CREATIVES:  return creative_diff(&a->u.creative, &b->u.creative);
    case ADSERVE_KIND_LICAS:      return lica_diff(&a->u.lica, &b->u.lica);
    default:                      return NULL;
    }
}

#undef DIFF

#endif
