/*
 * adserve_arena: a grow-only allocator for data that lives and dies together
 * (a compiled snapshot, the raw records of one load). One free() per block
 * instead of one per object, and no fragmentation across snapshot swaps.
 */

#ifndef ADSERVE_ARENA_H
#define ADSERVE_ARENA_H

#include <stddef.h>

typedef struct adserve_arena_block_s  adserve_arena_block_t;

/* Where an arena's blocks come from: malloc by default, or the caller's
 * pool (nginx's shared zone, for a snapshot that every worker of a node
 * reads). alloc returns memory aligned to 16 bytes, or NULL. */
typedef struct {
    void                 *(*alloc)(void *data, size_t size);
    void                  (*free)(void *data, void *p);
    void                   *data;
} adserve_allocator_t;

typedef struct {
    adserve_arena_block_t  *head;
    size_t                  block_size;   /* minimum size of a new block */
    size_t                  total;        /* bytes obtained for blocks */
    const adserve_allocator_t  *allocator;    /* NULL: malloc */
} adserve_arena_t;

void adserve_arena_init(adserve_arena_t *a, size_t block_size);
/* the same, with blocks from allocator (NULL: malloc) */
void adserve_arena_init_from(adserve_arena_t *a, size_t block_size,
    const adserve_allocator_t *allocator);
void *adserve_arena_alloc(adserve_arena_t *a, size_t size);
void *adserve_arena_calloc(adserve_arena_t *a, size_t size);
char *adserve_arena_memdup(adserve_arena_t *a, const void *src, size_t len);
void adserve_arena_free(adserve_arena_t *a);

#endif
