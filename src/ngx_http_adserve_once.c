
/*
 * Once per node: a small shared table of recent keys, a direct-mapped set
 * of 64-bit hashes that every worker of the node checks and marks with a
 * compare-and-swap, without a lock.
 *
 * It answers "has a worker of this node done this lately?". An external
 * win's billing notice (burl) goes out once for an impression that a
 * browser or a retry repeats, whichever worker each repeat reaches: a
 * worker's own memory would bill once per worker. A key is forgotten when
 * a newer one takes its slot, so "lately" means the last few thousand.
 * Across nodes, Redis counts the impression once after the fact, and the
 * notice carries the auction's id for the bidder to tell a repeat.
 *
 * The zone is kept across reloads like any zone of the same name and size;
 * a restart forgets.
 */


#include "ngx_http_adserve.h"


#define NGX_HTTP_ADSERVE_ONCE_ZONE   "adserve_once_1"
#define NGX_HTTP_ADSERVE_ONCE_SLOTS  8192      /* 64 KB on 64-bit */

typedef struct {
    ngx_atomic_t  slots[NGX_HTTP_ADSERVE_ONCE_SLOTS];     /* 0: free */
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


/* 1 the first time a worker of the node asks for key lately, 0 after. The
 * slot comes from the key's high bits, the mark is the key with its low
 * bit set (0 is a free slot); two workers racing on one slot retry, and
 * only one of them sees the mark go in. */
ngx_uint_t
ngx_http_adserve_once(uint64_t key)
{
    ngx_atomic_t       *slot;
    ngx_atomic_uint_t   mark, old;

    mark = (ngx_atomic_uint_t) key | 1;
    slot = &ngx_http_adserve_once_sh->slots[(key >> 40) % NGX_HTTP_ADSERVE_ONCE_SLOTS];

    for ( ;; ) {
        old = *slot;
        if (old == mark) {
            return 0;
        }

        if (ngx_atomic_cmp_set(slot, old, mark)) {
            return 1;
        }
    }
}
