/*
 * adserve_arena: a grow-only allocator for data that lives and dies together
 * (a compiled snapshot, the raw records of one load). One free() per block
 * instead of one per object, and no fragmentation across snapshot swaps.
 */

#ifndef ADSERVE_ARENA_H
#define ADSERVE_ARENA_H

#include <stddef.h>

typedef struct adserve_arena_block_s  adserve_arena_block_t;

typedef struct {
    adserve_arena_block_t  *head;
    size_t                  block_size;   /* minimum size of a new block */
    size_t                  total;        /* bytes obtained from malloc */
} adserve_arena_t;

void adserve_arena_init(adserve_arena_t *a, size_t block_size);
void *adserve_arena_alloc(adserve_arena_t *a, size_t size);
void *adserve_arena_calloc(adserve_arena_t *a, size_t size);
char *adserve_arena_memdup(adserve_arena_t *a, const void *src, size_t len);
void adserve_arena_free(adserve_arena_t *a);

#endif
