
/*
 * Once per node: a small shared table of recent keys that every worker of
 * the node checks and marks with a compare-and-swap, without a lock.
 *
 * It answers "has a worker of this node done this lately?". An external
 * win's billing notice (burl) goes out once for an impression that a
 * browser or a retry repeats, whichever worker each repeat reaches: a
 * worker's own memory would bill once per worker. Across nodes, Redis
 * counts the impression once after the fact, and the notice carries the
 * auction's id for the bidder to tell a repeat.
 *
 * Buckets of 8 marks, one cache line each: a mark is 40 bits of the key
 * (its bucket is chosen by 13 others) and the second it was made, in 24
 * bits. A new key takes its bucket's oldest mark. So a key is forgotten
 * once 8 newer ones have come to its bucket: of the 65,536 marks, about
 * the last 30,000 keys are kept (1 in 25 of those is forgotten, 1 in 4
 * million of the last 5,000), where one mark a slot forgot a third of the
 * last 3,000. Two workers marking one key at once see the same oldest
 * mark: one compare-and-swap wins, the other finds the key on its second
 * look.
 *
 * The zone is kept across reloads like any zone of the same name and size;
 * a restart forgets.
 */


#include "ngx_http_adserve.h"


#define NGX_HTTP_ADSERVE_ONCE_ZONE     "adserve_once_2"
#define NGX_HTTP_ADSERVE_ONCE_WAYS     8
#define NGX_HTTP_ADSERVE_ONCE_BUCKETS  8192      /* 512 KB */

#define NGX_HTTP_ADSERVE_ONCE_KEY(m)   ((m) >> 24)
#define NGX_HTTP_ADSERVE_ONCE_AT(m)    ((m) & 0xffffff)

typedef struct {
    volatile uint64_t  marks[NGX_HTTP_ADSERVE_ONCE_WAYS];   /* 0: free */
} ngx_http_adserve_once_bucket_t;

typedef struct {
    ngx_http_adserve_once_bucket_t  buckets[NGX_HTTP_ADSERVE_ONCE_BUCKETS];
} ngx_http_adserve_once_sh_t;


/* until the worker has the zone (or in a process without one): a table of
 * its own, which is still right for a single worker */
static ngx_http_adserve_once_sh_t   ngx_http_adserve_once_private;
static ngx_http_adserve_once_sh_t  *ngx_http_adserve_once_sh = &ngx_http_adserve_once_private;


ngx_shm_zone_t *
ngx_http_adserve_once_add(ngx_conf_t *cf)
{
    return ngx_http_adserve_table_add(cf, NGX_HTTP_ADSERVE_ONCE_ZONE,
                                      sizeof(ngx_http_adserve_once_sh_t));
}


void
ngx_http_adserve_once_init(ngx_shm_zone_t *shm_zone)
{
    if (shm_zone != NULL && shm_zone->data != NULL) {
        ngx_http_adserve_once_sh = shm_zone->data;
    }
}


/* The age of a mark at now, in seconds of the 24-bit clock (a free one is
 * the oldest of all) */
static ngx_inline uint64_t
ngx_http_adserve_once_age(uint64_t mark, uint64_t now)
{
    return mark == 0 ? (uint64_t) -1 : (now - NGX_HTTP_ADSERVE_ONCE_AT(mark)) & 0xffffff;
}


/* 1 the first time a worker of the node asks for key lately, 0 after. */
ngx_uint_t
ngx_http_adserve_once(uint64_t key)
{
    ngx_http_adserve_once_bucket_t  *b;
    uint64_t                         id, now, mark, old, m;
    ngx_uint_t                       i, oldest;

    b = &ngx_http_adserve_once_sh->buckets[(key >> 40) % NGX_HTTP_ADSERVE_ONCE_BUCKETS];
    id = key & 0xffffffffffULL;
    now = (uint64_t) ngx_time() & 0xffffff;
    mark = id << 24 | now;

    /* 0 reads as free: the one key of id 0 marked in second 0 takes 1 */
    if (mark == 0) {
        mark = 1;
    }

    for ( ;; ) {
        oldest = 0;
        old = b->marks[0];

        for (i = 0; i < NGX_HTTP_ADSERVE_ONCE_WAYS; i++) {
            m = b->marks[i];

            if (m != 0 && NGX_HTTP_ADSERVE_ONCE_KEY(m) == id) {
                return 0;
            }

            if (ngx_http_adserve_once_age(m, now) > ngx_http_adserve_once_age(old, now)) {
                oldest = i;
                old = m;
            }
        }

        /* (GCC's builtin, as ngx_atomic_cmp_set: a mark is 64 bits on
         * every platform, where ngx_atomic_t is a word) */
        if (__sync_bool_compare_and_swap(&b->marks[oldest], old, mark)) {
            return 1;
        }
    }
}
