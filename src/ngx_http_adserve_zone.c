
/*
 * One snapshot per node: a shared memory zone (adserve_snapshot_zone) that
 * every worker serves from.
 *
 * One worker at a time, the builder, follows Redis (the loader's poll, its
 * records and the change log) and builds each new snapshot straight into
 * the zone, from a thread; then it publishes it. The others, followers,
 * adopt what is published on their refresh timer: a pointer swap. A
 * reload's new workers find the zone as the old ones left it (nginx keeps
 * a zone of the same name and size across reloads, at the same address)
 * and serve from it at once. Memory does not grow with the workers: one
 * published snapshot, the one being built, and the retired ones that some
 * worker still reads.
 *
 * Lifetimes, without locks on the serving path:
 *   - each worker holds a reader slot {pid, gen}: the publication it reads,
 *     and any newer one (a worker adopting a publication keeps its old gen
 *     until it no longer needs the old snapshot);
 *   - a retired snapshot of publication r is freed by the builder once every
 *     live slot is past r (dead workers' slots are reclaimed);
 *   - every block of the zone carries the build it belongs to, so that the
 *     blocks of a build that never ended (a builder killed, or exiting with
 *     a build in its thread) are found and freed, once its process is gone.
 *
 * The builder role is claimed with a compare-and-swap of its pid; a worker
 * that finds it free, or held by a process that is gone, takes it. An
 * exiting builder (reload, stop) gives it up.
 */


#include "ngx_http_adserve.h"


#define NGX_HTTP_ADSERVE_ZONE_NAME     "adserve_snapshot"

/* Bumped whenever what a zone holds changes meaning without changing size
 * (the sizes below catch the rest): the zone's name carries the layout,
 * so a reload that loads a new module gets a zone of its own, loaded
 * afresh, while the old workers go on reading the old one. */
#define NGX_HTTP_ADSERVE_ZONE_LAYOUT   5
#define NGX_HTTP_ADSERVE_READERS       1024    /* workers of a node, old and new:
                                                * a 96-core node with old workers
                                                * of two reloads still exiting is
                                                * 288; 16 bytes each */
#define NGX_HTTP_ADSERVE_RETIRED       16
#define NGX_HTTP_ADSERVE_BUILDS        4       /* in flight: one, and old ones */


/* a block of the zone, as the arena gets it: after this header */
typedef struct ngx_http_adserve_zblock_s  ngx_http_adserve_zblock_t;

struct ngx_http_adserve_zblock_s {
    ngx_http_adserve_zblock_t  *prev;
    ngx_http_adserve_zblock_t  *next;
    ngx_uint_t                  build;        /* the build it belongs to */
    ngx_uint_t                  size;
};

typedef struct {
    adserve_snapshot_t         *snapshot;
    ngx_uint_t                  build;
    ngx_uint_t                  first;        /* the build of its chain's
                                               * whole render: it borrows
                                               * from every build since */
    ngx_atomic_uint_t           gen;          /* its publication */
} ngx_http_adserve_pub_t;

typedef struct {
    ngx_atomic_t                pid;          /* 0: free */
    ngx_atomic_t                gen;          /* reads this publication and on */
} ngx_http_adserve_reader_t;

typedef struct {
    ngx_uint_t                  build;        /* 0: none */
    ngx_pid_t                   pid;
} ngx_http_adserve_inflight_t;

/* the zone's header, in the zone */
typedef struct {
    ngx_atomic_t                builder;      /* pid; 0: none */
    ngx_atomic_t                gen;          /* publications so far */
    ngx_atomic_t                attempts;     /* first loads the builders ended */
    ngx_http_adserve_pub_t      current;
    ngx_http_adserve_pub_t      retired[NGX_HTTP_ADSERVE_RETIRED];
    ngx_uint_t                  builds;       /* tickets handed out */
    ngx_http_adserve_inflight_t inflight[NGX_HTTP_ADSERVE_BUILDS];
    ngx_http_adserve_zblock_t   blocks;       /* every block: a ring */
    size_t                      used;         /* bytes in blocks */
    size_t                      size;         /* of the zone */
    ngx_http_adserve_reader_t   readers[NGX_HTTP_ADSERVE_READERS];
} ngx_http_adserve_zone_sh_t;

struct ngx_http_adserve_zone_s {
    ngx_shm_zone_t             *shm_zone;
    ngx_slab_pool_t            *shpool;
    ngx_http_adserve_zone_sh_t *sh;
    ngx_http_adserve_reader_t  *me;           /* this worker's slot */
    adserve_allocator_t         allocator;    /* of the build in flight */
    ngx_uint_t                  build;        /* its ticket; 0: none */
};


static void *ngx_http_adserve_zone_alloc(void *data, size_t size);
static void ngx_http_adserve_zone_free(void *data, void *p);


/* ---- the zone, at configuration -------------------------------------- */

static ngx_int_t
ngx_http_adserve_zone_init(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_adserve_zone_t     *ozone = data;
    ngx_http_adserve_zone_t     *zone = shm_zone->data;
    ngx_http_adserve_zone_sh_t  *sh;

    if (ozone != NULL) {
        /* a reload, same name and size: the node's snapshot goes on */
        zone->shpool = ozone->shpool;
        zone->sh = ozone->sh;
        return NGX_OK;
    }

    zone->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists) {
        zone->sh = zone->shpool->data;
        return NGX_OK;
    }

    sh = ngx_slab_calloc(zone->shpool, sizeof(ngx_http_adserve_zone_sh_t));
    if (sh == NULL) {
        return NGX_ERROR;
    }

    sh->blocks.prev = &sh->blocks;
    sh->blocks.next = &sh->blocks;
    sh->size = shm_zone->shm.size;

    zone->sh = sh;
    zone->shpool->data = sh;

    /* a full zone is the build's failure, logged there with the advice */
    zone->shpool->log_nomem = 0;
    zone->shpool->log_ctx = ngx_slab_alloc(zone->shpool,
                                           sizeof(" in adserve_snapshot_zone"));
    if (zone->shpool->log_ctx != NULL) {
        ngx_sprintf(zone->shpool->log_ctx, " in adserve_snapshot_zone%Z");
    }

    return NGX_OK;
}


ngx_http_adserve_zone_t *
ngx_http_adserve_zone_add(ngx_conf_t *cf, size_t size)
{
    ngx_http_adserve_zone_t  *zone;
    ngx_str_t                 name;
    uint64_t                  layout;

    zone = ngx_pcalloc(cf->pool, sizeof(ngx_http_adserve_zone_t));
    if (zone == NULL) {
        return NULL;
    }

    /* the layout of the zone and of the snapshot in it, as this build of
     * the module reads them */
    layout = NGX_HTTP_ADSERVE_ZONE_LAYOUT * 0x9e3779b97f4a7c15ULL
             ^ (sizeof(ngx_http_adserve_zone_sh_t) << 40)
             ^ (sizeof(adserve_snapshot_t) << 28) ^ (sizeof(adserve_li_t) << 20)
             ^ (sizeof(adserve_unit_t) << 12) ^ sizeof(adserve_cand_t)
             ^ (sizeof(adserve_creative_t) << 52);

    if (ngx_http_adserve_zone_name(cf, &name, NGX_HTTP_ADSERVE_ZONE_NAME, layout) != NGX_OK) {
        return NULL;
    }

    zone->shm_zone = ngx_shared_memory_add(cf, &name, size, &ngx_http_adserve_module);
    if (zone->shm_zone == NULL) {
        return NULL;
    }

    zone->shm_zone->init = ngx_http_adserve_zone_init;
    zone->shm_zone->data = zone;

    zone->allocator.alloc = ngx_http_adserve_zone_alloc;
    zone->allocator.free = ngx_http_adserve_zone_free;
    zone->allocator.data = zone;

    return zone;
}


/* ---- blocks ------------------------------------------------------------ */

/* the arena's blocks, from the build thread (the slab's mutex orders it
 * with the builder's frees) */
static void *
ngx_http_adserve_zone_alloc(void *data, size_t size)
{
    ngx_http_adserve_zone_t     *zone = data;
    ngx_http_adserve_zone_sh_t  *sh = zone->sh;
    ngx_http_adserve_zblock_t   *b;

    ngx_shmtx_lock(&zone->shpool->mutex);

    b = ngx_slab_alloc_locked(zone->shpool, sizeof(ngx_http_adserve_zblock_t) + size);

    if (b != NULL) {
        b->build = zone->build;
        b->size = size;
        b->next = sh->blocks.next;
        b->prev = &sh->blocks;
        sh->blocks.next->prev = b;
        sh->blocks.next = b;
        sh->used += size;
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);

    return b != NULL ? (void *) (b + 1) : NULL;
}


static void
ngx_http_adserve_zone_unlink_locked(ngx_http_adserve_zone_t *zone,
    ngx_http_adserve_zblock_t *b)
{
    b->prev->next = b->next;
    b->next->prev = b->prev;
    zone->sh->used -= b->size;

    ngx_slab_free_locked(zone->shpool, b);
}


static void
ngx_http_adserve_zone_free(void *data, void *p)
{
    ngx_http_adserve_zone_t  *zone = data;

    ngx_shmtx_lock(&zone->shpool->mutex);
    ngx_http_adserve_zone_unlink_locked(zone, (ngx_http_adserve_zblock_t *) p - 1);
    ngx_shmtx_unlock(&zone->shpool->mutex);
}


/* ---- the builder --------------------------------------------------------- */

static ngx_uint_t
ngx_http_adserve_zone_alive(ngx_pid_t pid)
{
    return pid != 0 && (kill(pid, 0) == 0 || ngx_errno != NGX_ESRCH);
}


ngx_uint_t
ngx_http_adserve_zone_is_builder(ngx_http_adserve_zone_t *zone)
{
    return zone->sh->builder == (ngx_atomic_uint_t) ngx_pid;
}


ngx_uint_t
ngx_http_adserve_zone_builder(ngx_http_adserve_zone_t *zone)
{
    ngx_http_adserve_zone_sh_t  *sh = zone->sh;
    ngx_atomic_uint_t            pid = sh->builder;

    if (pid == (ngx_atomic_uint_t) ngx_pid) {
        return 1;
    }

    if (ngx_exiting || ngx_terminate) {
        return 0;
    }

    /* free, or held by a process that is gone (killed, crashed) */
    if (pid != 0 && ngx_http_adserve_zone_alive((ngx_pid_t) pid)) {
        return 0;
    }

    if (!ngx_atomic_cmp_set(&sh->builder, pid, ngx_pid)) {
        return 0;                       /* another worker was quicker */
    }

    ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                  NGX_HTTP_ADSERVE_LOG "this worker builds the node's snapshot%s",
                  pid ? " (its builder is gone)" : "");

    ngx_http_adserve_zone_collect(zone);

    return 1;
}


void
ngx_http_adserve_zone_resign(ngx_http_adserve_zone_t *zone)
{
    if (zone->sh != NULL) {
        (void) ngx_atomic_cmp_set(&zone->sh->builder, ngx_pid, 0);
    }
}


ngx_uint_t
ngx_http_adserve_zone_attempts(ngx_http_adserve_zone_t *zone)
{
    return zone->sh->attempts;
}


void
ngx_http_adserve_zone_attempted(ngx_http_adserve_zone_t *zone)
{
    (void) ngx_atomic_fetch_add(&zone->sh->attempts, 1);
}


/* The allocator of a new build: a ticket, in flight until _build_end. */
const adserve_allocator_t *
ngx_http_adserve_zone_build_start(ngx_http_adserve_zone_t *zone)
{
    ngx_http_adserve_zone_sh_t  *sh = zone->sh;
    ngx_uint_t                   i;

    ngx_shmtx_lock(&zone->shpool->mutex);

    for (i = 0; i < NGX_HTTP_ADSERVE_BUILDS; i++) {
        if (sh->inflight[i].build == 0) {
            break;
        }
    }

    if (i == NGX_HTTP_ADSERVE_BUILDS) {
        ngx_shmtx_unlock(&zone->shpool->mutex);
        return NULL;                    /* old builds not collected yet */
    }

    zone->build = ++sh->builds;
    sh->inflight[i].build = zone->build;
    sh->inflight[i].pid = ngx_pid;

    ngx_shmtx_unlock(&zone->shpool->mutex);

    return &zone->allocator;
}


/* The build is over: published, or freed. */
void
ngx_http_adserve_zone_build_end(ngx_http_adserve_zone_t *zone)
{
    ngx_http_adserve_zone_sh_t  *sh = zone->sh;
    ngx_uint_t                   i;

    ngx_shmtx_lock(&zone->shpool->mutex);

    for (i = 0; i < NGX_HTTP_ADSERVE_BUILDS; i++) {
        if (sh->inflight[i].build == zone->build) {
            sh->inflight[i].build = 0;
        }
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);

    zone->build = 0;
}


/* Publishes s, built into the zone by this worker (the builder). NGX_OK;
 * NGX_DECLINED when too many old snapshots are still read, or when s
 * borrows from another than the one published (s is not published then,
 * and the caller frees it). */
ngx_int_t
ngx_http_adserve_zone_publish(ngx_http_adserve_zone_t *zone, adserve_snapshot_t *s)
{
    ngx_http_adserve_zone_sh_t  *sh = zone->sh;
    ngx_uint_t                   i;

    /* it borrows from what it was built from: the one published */
    if (s->base != NULL && s->base != sh->current.snapshot) {
        return NGX_DECLINED;
    }

    ngx_http_adserve_zone_collect(zone);

    if (sh->current.snapshot != NULL) {
        for (i = 0; i < NGX_HTTP_ADSERVE_RETIRED; i++) {
            if (sh->retired[i].snapshot == NULL) {
                break;
            }
        }

        if (i == NGX_HTTP_ADSERVE_RETIRED) {
            return NGX_DECLINED;
        }

        sh->retired[i] = sh->current;
    }

    /* a snapshot that borrows (adserve_snapshot_t's base) keeps every
     * build of its chain: the loader builds from the published one */
    sh->current.first = s->base != NULL ? sh->current.first : zone->build;
    sh->current.snapshot = s;
    sh->current.build = zone->build;

    /* the followers read gen, then the snapshot: the snapshot first */
    ngx_memory_barrier();
    sh->current.gen = (ngx_atomic_uint_t) ngx_atomic_fetch_add(&sh->gen, 1) + 1;

    return NGX_OK;
}


/* ---- readers ---------------------------------------------------------------- */

ngx_int_t
ngx_http_adserve_zone_join(ngx_http_adserve_zone_t *zone)
{
    ngx_http_adserve_zone_sh_t  *sh = zone->sh;
    ngx_uint_t                   i;
    ngx_atomic_uint_t            pid;

    for (i = 0; i < NGX_HTTP_ADSERVE_READERS; i++) {
        pid = sh->readers[i].pid;

        /* a slot of our own pid is a dead process's whose pid we reuse:
         * we have none yet */
        if ((pid == 0 || pid == (ngx_atomic_uint_t) ngx_pid
             || !ngx_http_adserve_zone_alive((ngx_pid_t) pid))
            && ngx_atomic_cmp_set(&sh->readers[i].pid, pid, ngx_pid))
        {
            /* 0 holds everything, until this worker adopts a publication
             * (the slot's old gen, meanwhile, holds nothing it reads) */
            sh->readers[i].gen = 0;
            ngx_memory_barrier();

            zone->me = &sh->readers[i];
            return NGX_OK;
        }
    }

    ngx_log_error(NGX_LOG_EMERG, ngx_cycle->log, 0,
                  NGX_HTTP_ADSERVE_LOG "more than %d workers read the snapshot zone",
                  NGX_HTTP_ADSERVE_READERS);

    return NGX_ERROR;
}


void
ngx_http_adserve_zone_leave(ngx_http_adserve_zone_t *zone)
{
    ngx_http_adserve_zone_resign(zone);

    if (zone->me != NULL) {
        (void) ngx_atomic_cmp_set(&zone->me->pid, ngx_pid, 0);
        zone->me = NULL;
    }
}


/* The published snapshot, when its publication is not *gen (which it
 * becomes); NULL when there is nothing newer. The caller keeps reading its
 * old snapshot until _hold: both stay in the zone until then. */
adserve_snapshot_t *
ngx_http_adserve_zone_latest(ngx_http_adserve_zone_t *zone, ngx_uint_t *gen)
{
    ngx_http_adserve_zone_sh_t  *sh = zone->sh;
    ngx_atomic_uint_t            g;
    adserve_snapshot_t          *s;

    g = sh->gen;

    if (g == 0 || g == *gen) {
        return NULL;
    }

    ngx_memory_barrier();
    s = sh->current.snapshot;

    /* published after the gen read: taken at the next tick */
    if (sh->current.gen != g) {
        return NULL;
    }

    *gen = g;

    return s;
}


/* This worker reads publication gen now, and no older one. */
void
ngx_http_adserve_zone_hold(ngx_http_adserve_zone_t *zone, ngx_uint_t gen)
{
    if (zone->me != NULL) {
        zone->me->gen = gen;
        ngx_memory_barrier();
    }
}


/* ---- collection ------------------------------------------------------------ */

static ngx_uint_t
ngx_http_adserve_zone_kept(ngx_http_adserve_zone_sh_t *sh, ngx_uint_t build)
{
    ngx_uint_t  i;

    if (sh->current.snapshot != NULL
        && build >= sh->current.first && build <= sh->current.build)
    {
        return 1;
    }

    for (i = 0; i < NGX_HTTP_ADSERVE_RETIRED; i++) {
        if (sh->retired[i].snapshot != NULL
            && build >= sh->retired[i].first && build <= sh->retired[i].build)
        {
            return 1;
        }
    }

    for (i = 0; i < NGX_HTTP_ADSERVE_BUILDS; i++) {
        if (sh->inflight[i].build == build) {
            return 1;
        }
    }

    return 0;
}


/* By the builder: frees the retired snapshots no live worker reads, the
 * builds that ended unpublished, and those whose process is gone without
 * ending them: every block whose build is not kept. */
void
ngx_http_adserve_zone_collect(ngx_http_adserve_zone_t *zone)
{
    ngx_http_adserve_zone_sh_t  *sh = zone->sh;
    ngx_http_adserve_zblock_t   *b, *next;
    ngx_atomic_uint_t            oldest = (ngx_atomic_uint_t) -1, pid;
    ngx_uint_t                   i;

    for (i = 0; i < NGX_HTTP_ADSERVE_READERS; i++) {
        pid = sh->readers[i].pid;
        if (pid == 0) {
            continue;
        }
        if (!ngx_http_adserve_zone_alive((ngx_pid_t) pid)) {
            (void) ngx_atomic_cmp_set(&sh->readers[i].pid, pid, 0);
            continue;
        }
        if (sh->readers[i].gen < oldest) {
            oldest = sh->readers[i].gen;
        }
    }

    /* a snapshot is freed by its build's blocks, below: its arena's
     * allocator is the builder's (another process, maybe another cycle) */
    for (i = 0; i < NGX_HTTP_ADSERVE_RETIRED; i++) {
        if (sh->retired[i].snapshot != NULL && sh->retired[i].gen < oldest) {
            sh->retired[i].snapshot = NULL;
        }
    }

    ngx_shmtx_lock(&zone->shpool->mutex);

    for (i = 0; i < NGX_HTTP_ADSERVE_BUILDS; i++) {
        if (sh->inflight[i].build != 0
            && !ngx_http_adserve_zone_alive(sh->inflight[i].pid))
        {
            sh->inflight[i].build = 0;  /* its blocks go below */
        }
    }

    for (b = sh->blocks.next; b != &sh->blocks; b = next) {
        next = b->next;
        if (!ngx_http_adserve_zone_kept(sh, b->build)) {
            ngx_http_adserve_zone_unlink_locked(zone, b);
        }
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);
}


size_t
ngx_http_adserve_zone_room(ngx_http_adserve_zone_t *zone)
{
    return zone->sh->size;
}


u_char *
ngx_http_adserve_zone_status(ngx_http_adserve_zone_t *zone, u_char *p, u_char *last)
{
    ngx_http_adserve_zone_sh_t  *sh = zone->sh;
    ngx_uint_t                   i, held = 0;

    for (i = 0; i < NGX_HTTP_ADSERVE_RETIRED; i++) {
        held += sh->retired[i].snapshot != NULL;
    }

    return ngx_slprintf(p, last,
                        ",\"zone\":{\"role\":\"%s\",\"gen\":%uA,\"used_kib\":%uz,"
                        "\"size_kib\":%uz,\"retired\":%ui}",
                        sh->builder == (ngx_atomic_uint_t) ngx_pid ? "builder"
                                                                   : "follower",
                        sh->gen, sh->used / 1024, sh->size / 1024, held);
}
