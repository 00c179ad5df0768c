
/*
 * Custom targeting segments at serving: the user's memberships of the
 * segments an ad unit's line items target, read from the user's hash
 * (adserve:us:{user id}, segment id -> the second the membership ends)
 * with one HMGET, ahead of the caps' read on the caps' connection: one
 * round trip and one deadline for both, and the same safe outcome when
 * Redis is late or away (segment-targeted line items do not serve).
 */


#include "ngx_http_adserve.h"


#define NGX_HTTP_ADSERVE_US_KEY  (sizeof(ADSERVE_KEY_USER_SEGMENTS) - 1   \
                                  + ADSERVE_TOKEN_USER_MAX)


/* the user is in the segments whose membership ends after now */
static void
ngx_http_adserve_segments_parse(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    redisReply *reply)
{
    redisReply  *e;
    size_t       i;

    (void) r;

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY
        || reply->elements != ctx->nseg_asked)
    {
        return;
    }

    for (i = 0; i < reply->elements; i++) {
        e = reply->element[i];
        if (e->type == REDIS_REPLY_STRING && strtoll(e->str, NULL, 10) > (long long) ctx->now) {
            ctx->segments[ctx->nsegments++] = ctx->seg_asked[i];
        }
    }

    ctx->segments_known = 1;
}


ngx_int_t
ngx_http_adserve_user_state_read(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    const adserve_unit_t *unit, ngx_http_adserve_caps_done_pt done)
{
    u_char                        key[NGX_HTTP_ADSERVE_US_KEY];
    const char                   *argv[2 + ADSERVE_UNIT_SEGMENTS_MAX];
    size_t                        argvlen[2 + ADSERVE_UNIT_SEGMENTS_MAX];
    ngx_http_adserve_user_cmd_t   hmget, *ahead = NULL;
    uint64_t                     *asked;
    uint32_t                      i, n = unit->nsegments;

    if (ctx->req.user_id.len == 0 || ctx->req.user_id.len > ADSERVE_TOKEN_USER_MAX) {
        return NGX_DECLINED;
    }

    if (n) {
        asked = ngx_palloc(r->pool, n * sizeof(uint64_t));
        ctx->segments = ngx_palloc(r->pool, n * sizeof(uint64_t));
        if (asked == NULL || ctx->segments == NULL) {
            return NGX_DECLINED;
        }

        ngx_memcpy(asked, unit->segment_hashes, n * sizeof(uint64_t));
        ctx->seg_asked = asked;
        ctx->nseg_asked = n;
        ctx->seg_sig = unit->segments_sig;
        ctx->nsegments = 0;

        argv[0] = "HMGET";
        argvlen[0] = sizeof("HMGET") - 1;
        argv[1] = (char *) key;
        argvlen[1] = ngx_cpymem(ngx_cpymem(key, ADSERVE_KEY_USER_SEGMENTS,
                                           sizeof(ADSERVE_KEY_USER_SEGMENTS) - 1),
                                ctx->req.user_id.data, ctx->req.user_id.len)
                     - key;

        for (i = 0; i < n; i++) {
            argv[2 + i] = unit->segment_ids[i].data;
            argvlen[2 + i] = unit->segment_ids[i].len;
        }

        hmget = (ngx_http_adserve_user_cmd_t) { (int) (2 + n), argv, argvlen,
                                                ngx_http_adserve_segments_parse };
        ahead = &hmget;
    }

    if (unit->max_cap_seconds) {
        return ngx_http_adserve_caps_read(r, ctx, unit->max_cap_seconds, ahead, done);
    }

    return ngx_http_adserve_user_read(r, ctx, NULL, NULL, (int) (2 + n), argv, argvlen,
                                      ngx_http_adserve_segments_parse,
                                      "segments not read in time, segment-targeted line "
                                      "items do not serve this request", done);
}


void
ngx_http_adserve_segments_facts(const ngx_http_adserve_ctx_t *ctx, const adserve_unit_t *unit,
    adserve_req_ctx_t *facts)
{
    if (unit->segments_overflow) {
        return;                              /* none was asked: unknown */
    }

    /* no user id: in no segment; no segment targeted: nothing to know */
    if (unit->nsegments == 0 || ctx->req.user_id.len == 0) {
        adserve_req_ctx_segments(facts, NULL, 0);
        return;
    }

    if (!ctx->segments_known) {
        return;
    }

    /* a snapshot swapped while the read ran may give the unit other
     * segments: what was read answers another question, so unknown */
    if (ctx->seg_sig != unit->segments_sig) {
        return;
    }

    adserve_req_ctx_segments(facts, ctx->segments, ctx->nsegments);
}
