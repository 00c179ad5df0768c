
/*
 * A user's recommendation history (ADSERVE_KEY_HISTORY in the contract):
 * the items recommended to them and the items they viewed or clicked,
 * each with its time, in one sorted set per user.
 *
 * Read before a recommendation whose placement filters candidates
 * (ViewOut, ViewPenalty), with the caps' deadline and machinery
 * (ngx_http_adserve_caps.c): a late or failed read recommends without the
 * history, since a repeated recommendation breaks no contract, unlike a
 * broken cap. Written after every recommendation with a user id, and on
 * every item click, on the caps' connection and at once: the user's next
 * request may reach another worker or node a moment later.
 */


#include "ngx_http_adserve.h"


#define NGX_HTTP_ADSERVE_HISTORY_KEY  (sizeof(ADSERVE_KEY_HISTORY) - 1              \
                                       + ADSERVE_TOKEN_USER_MAX)
#define NGX_HTTP_ADSERVE_HISTORY_ITEM (ADSERVE_HISTORY_KIND_LEN + ADSERVE_ITEM_ID_MAX)


static size_t
ngx_http_adserve_history_key(u_char *key, const adserve_str_t *user)
{
    return ngx_cpymem(ngx_cpymem(key, ADSERVE_KEY_HISTORY, sizeof(ADSERVE_KEY_HISTORY) - 1),
                      user->data, user->len)
           - key;
}


/* The members into ctx->history, as the hashes of their item ids (the
 * snapshot may change before the answer: a hash outlives it). */
static void
ngx_http_adserve_history_parse(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    redisReply *reply)
{
    redisReply  *m;
    size_t       i;

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY) {
        return;
    }

    ctx->history = ngx_palloc(r->pool, (reply->elements + 1) * sizeof(uint64_t));
    if (ctx->history == NULL) {
        return;
    }

    ctx->nhistory = 0;

    for (i = 0; i < reply->elements; i++) {
        m = reply->element[i];
        if (m->type == REDIS_REPLY_STRING && m->len > ADSERVE_HISTORY_KIND_LEN) {
            ctx->history[ctx->nhistory++] = adserve_hash(m->str + ADSERVE_HISTORY_KIND_LEN,
                                                         m->len - ADSERVE_HISTORY_KIND_LEN);
        }
    }

    ctx->history_known = 1;
}


ngx_int_t
ngx_http_adserve_history_read(ngx_http_request_t *r, ngx_http_adserve_ctx_t *ctx,
    ngx_http_adserve_caps_done_pt done)
{
    u_char       key[NGX_HTTP_ADSERVE_HISTORY_KEY];
    u_char       min[NGX_TIME_T_LEN + 2], *last;
    const char  *argv[4];
    size_t       argvlen[4];

    if (ctx->req.user_id.len == 0 || ctx->req.user_id.len > ADSERVE_TOKEN_USER_MAX) {
        return NGX_DECLINED;
    }

    last = ngx_sprintf(min, "(%T", ctx->now - (time_t) ADSERVE_HISTORY_SECONDS);

    argv[0] = "ZRANGEBYSCORE";     argvlen[0] = sizeof("ZRANGEBYSCORE") - 1;
    argv[1] = (char *) key;
    argvlen[1] = ngx_http_adserve_history_key(key, &ctx->req.user_id);
    argv[2] = (char *) min;        argvlen[2] = last - min;
    argv[3] = "+inf";              argvlen[3] = 4;

    return ngx_http_adserve_user_read(r, ctx, 4, argv, argvlen, ngx_http_adserve_history_parse,
                                      "view history not read in time, recommending "
                                      "without it", done);
}


/* "{kind}{item id}" into member, its length */
static size_t
ngx_http_adserve_history_member(u_char *member, const char *kind, const adserve_str_t *item)
{
    return ngx_cpymem(ngx_cpymem(member, kind, ADSERVE_HISTORY_KIND_LEN), item->data,
                      item->len)
           - member;
}


void
ngx_http_adserve_history_record(ngx_pool_t *pool, const adserve_str_t *user, time_t now,
    const adserve_item_t *const *shown, ngx_uint_t nshown, const adserve_str_t *viewed)
{
    u_char       key[NGX_HTTP_ADSERVE_HISTORY_KEY], score[NGX_TIME_T_LEN];
    u_char       old[NGX_TIME_T_LEN + 1], ttl[NGX_INT_T_LEN], *members, *p;
    u_char       keep[NGX_INT_T_LEN + 1];
    const char **argv;
    size_t      *argvlen, slen;
    ngx_uint_t   i, argc, n;

    n = nshown + (viewed != NULL && viewed->len > 0 && viewed->len <= ADSERVE_ITEM_ID_MAX);
    if (user->len == 0 || user->len > ADSERVE_TOKEN_USER_MAX || n == 0) {
        return;
    }

    argv = ngx_palloc(pool, (2 + 2 * n) * sizeof(char *));
    argvlen = ngx_palloc(pool, (2 + 2 * n) * sizeof(size_t));
    members = ngx_pnalloc(pool, n * NGX_HTTP_ADSERVE_HISTORY_ITEM);
    if (argv == NULL || argvlen == NULL || members == NULL) {
        return;
    }

    slen = ngx_sprintf(score, "%T", now) - score;

    argv[0] = "ZADD";              argvlen[0] = 4;
    argv[1] = (char *) key;
    argvlen[1] = ngx_http_adserve_history_key(key, user);
    argc = 2;
    p = members;

    for (i = 0; i < n; i++) {
        argv[argc] = (char *) score;
        argvlen[argc++] = slen;
        argv[argc] = (char *) p;
        argvlen[argc++] = i < nshown
            ? ngx_http_adserve_history_member(p, ADSERVE_HISTORY_SHOWN, &shown[i]->id)
            : ngx_http_adserve_history_member(p, ADSERVE_HISTORY_VIEWED, viewed);
        p += argvlen[argc - 1];
    }

    if (ngx_http_adserve_user_write((int) argc, argv, argvlen) != NGX_OK) {
        return;
    }

    /* bounded in age and in length; the key goes with its last entry */
    argv[0] = "ZREMRANGEBYSCORE";  argvlen[0] = sizeof("ZREMRANGEBYSCORE") - 1;
    argv[2] = "-inf";              argvlen[2] = 4;
    argv[3] = (char *) old;
    argvlen[3] = ngx_sprintf(old, "(%T", now - (time_t) ADSERVE_HISTORY_SECONDS) - old;
    (void) ngx_http_adserve_user_write(4, argv, argvlen);

    argv[0] = "ZREMRANGEBYRANK";   argvlen[0] = sizeof("ZREMRANGEBYRANK") - 1;
    argv[2] = "0";                 argvlen[2] = 1;
    argv[3] = (char *) keep;
    argvlen[3] = ngx_sprintf(keep, "-%d", ADSERVE_HISTORY_MAX + 1) - keep;
    (void) ngx_http_adserve_user_write(4, argv, argvlen);

    argv[0] = "EXPIRE";            argvlen[0] = 6;
    argv[2] = (char *) ttl;
    argvlen[2] = ngx_sprintf(ttl, "%d", ADSERVE_HISTORY_SECONDS) - ttl;
    (void) ngx_http_adserve_user_write(3, argv, argvlen);

    ngx_http_adserve_user_flush();
}


/* Whether the item is in the user's history. The history holds
 * ADSERVE_HISTORY_MAX entries at most: a scan. */
ngx_uint_t
ngx_http_adserve_history_has(const ngx_http_adserve_ctx_t *ctx, const adserve_item_t *it)
{
    uint32_t  i;

    for (i = 0; i < ctx->nhistory; i++) {
        if (ctx->history[i] == it->hash) {
            return 1;
        }
    }

    return 0;
}
