
/*
 * The decision explainer: the same request as serving (adserve_explain),
 * answered with what the decision would make of each line item of the unit
 * instead of an ad.
 */


#include "ngx_http_adserve.h"


/* The same request as serving, answered with what the decision would make
 * of each line item of the unit instead of an ad; nothing is counted, no
 * cap recorded, no pacing state touched. Operators only: the shipped
 * configuration puts it behind the API's auth (auth_request). */
static ngx_int_t ngx_http_adserve_explain_send(ngx_http_request_t *r,
    ngx_http_adserve_ctx_t *ctx, const adserve_unit_t *unit, adserve_decision_t *d);


ngx_int_t
ngx_http_adserve_explain_handler(ngx_http_request_t *r)
{
    return ngx_http_adserve_start(r, ngx_http_adserve_explain_send);
}


static ngx_int_t
ngx_http_adserve_explain_send(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, adserve_decision_t *d)
{
    static const char *const  verdicts[] = {
        "won", "tied", "outranked", "lower_priority", "held_back"
    };
    static const char *const  reasons[] = {
        "", "flight", "targeting", "goal_reached", "frequency_cap", "floor", "pacing"
    };

    ngx_http_adserve_main_conf_t  *amcf;
    adserve_explained_t           *x;
    const adserve_excl_t          *e;
    const adserve_li_t            *li;
    adserve_str_t                  id;
    const char                    *winner = NULL;
    u_char                        *body, *p;
    size_t                         len;
    uint32_t                       n, i;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    x = ngx_palloc(r->pool, (unit->ncands + 1) * sizeof(adserve_explained_t));
    if (x == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    n = adserve_explain(amcf->loader->snapshot, unit, d, x);

    /* ids escaped as JSON take at most 6 bytes a byte */
    len = 256 + 6 * unit->id_len
          + n * (512 + 6 * ADSERVE_TOKEN_ID_MAX)
          + unit->nexcluded * (128 + 12 * ADSERVE_TOKEN_ID_MAX);

    body = ngx_pnalloc(r->pool, len);
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    id.data = unit->id;
    id.len = unit->id_len;

    p = ngx_cpymem(body, "{\"ad_unit_id\":", sizeof("{\"ad_unit_id\":") - 1);
    p = ngx_http_adserve_json_str(p, &id);
    p = ngx_sprintf(p, ",\"time\":%T,\"caps\":\"%s\",\"segments\":\"%s\","
                    "\"line_items\":[",
                    ctx->now, unit->max_cap_seconds == 0 ? "none"
                              : d->caps_known ? "known" : "unknown",
                    unit->nsegments == 0 && !unit->segments_overflow ? "none"
                    : d->facts->segments_known ? "known" : "unknown");

    for (i = 0; i < n; i++) {
        li = x[i].li;

        if (x[i].verdict == ADSERVE_X_WON) {
            winner = li->id.data;
        }

        p = ngx_cpymem(p, i ? ",{\"line_item_id\":" : "{\"line_item_id\":",
                       i ? sizeof(",{\"line_item_id\":") - 1
                         : sizeof("{\"line_item_id\":") - 1);
        p = ngx_http_adserve_json_str(p, &li->id);
        p = ngx_sprintf(p, ",\"type\":\"%s\",\"priority\":%d,\"cost_type\":\"%s\","
                        "\"bid\":%.6f,\"ecpm\":%.6f,\"creatives\":%uD,"
                        "\"decision\":\"%s\"",
                        adserve_tier_names[li->tier % ADSERVE_TIER_COUNT], (int) li->priority,
                        adserve_cost_names[li->cost_type % ADSERVE_COST_COUNT], x[i].cand->bid, x[i].ecpm,
                        x[i].ncands, verdicts[x[i].verdict]);

        if (x[i].verdict == ADSERVE_X_RULE) {
            p = ngx_sprintf(p, ",\"reason\":\"%s\"", reasons[x[i].reason % 7]);
        }

        if (li->paced) {
            p = ngx_sprintf(p, ",\"pacing\":{\"share\":%.4f,\"budget_left\":%uD,"
                            "\"goal_reached\":%s}",
                            x[i].pace->allow == UINT32_MAX ? 1.0
                                : (double) x[i].pace->allow / 4294967295.0,
                            x[i].pace->budget > x[i].pace->served
                                ? x[i].pace->budget - x[i].pace->served : 0,
                            x[i].pace->stopped ? "true" : "false");
        }

        *p++ = '}';
    }

    p = ngx_cpymem(p, "],\"winner\":", sizeof("],\"winner\":") - 1);
    if (winner != NULL) {
        id.data = winner;
        id.len = ngx_strlen(winner);
        p = ngx_http_adserve_json_str(p, &id);
    } else {
        p = ngx_cpymem(p, "null", 4);
    }

    p = ngx_cpymem(p, ",\"excluded\":[", sizeof(",\"excluded\":[") - 1);

    for (i = 0; i < unit->nexcluded; i++) {
        e = &unit->excluded[i];
        p = ngx_cpymem(p, i ? ",{\"line_item_id\":" : "{\"line_item_id\":",
                       i ? sizeof(",{\"line_item_id\":") - 1
                         : sizeof("{\"line_item_id\":") - 1);
        p = ngx_http_adserve_json_str(p, &e->line_item_id);
        p = ngx_cpymem(p, ",\"creative_id\":", sizeof(",\"creative_id\":") - 1);
        p = ngx_http_adserve_json_str(p, &e->creative_id);
        p = ngx_sprintf(p, ",\"reason\":\"%s\"}", adserve_excl_names[e->reason < ADSERVE_EXCL_COUNT ? e->reason : 0]);
    }

    p = ngx_cpymem(p, "]}", 2);

    return ngx_http_adserve_send(r, NGX_HTTP_OK, body, p - body);
}
