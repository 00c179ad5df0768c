#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#include "adserve_arena.h"

#define ADSERVE_ARENA_ALIGN  16

struct adserve_arena_block_s {
    adserve_arena_block_t  *next;
    size_t                  used;
    size_t                  size;
    _Alignas(ADSERVE_ARENA_ALIGN) unsigned char  data[];
};


void
adserve_arena_init(adserve_arena_t *a, size_t block_size)
{
    adserve_arena_init_from(a, block_size, NULL);
}


void
adserve_arena_init_from(adserve_arena_t *a, size_t block_size,
    const adserve_allocator_t *allocator)
{
    a->head = NULL;
    a->block_size = block_size ? block_size : 64 * 1024;
    a->total = 0;
    a->allocator = allocator;
}


void *
adserve_arena_alloc(adserve_arena_t *a, size_t size)
{
    adserve_arena_block_t  *b;
    size_t                  want;
    void                   *p;

    size = (size + ADSERVE_ARENA_ALIGN - 1) & ~(size_t) (ADSERVE_ARENA_ALIGN - 1);

    b = a->head;

    if (b == NULL || b->size - b->used < size) {
        want = size > a->block_size ? size : a->block_size;

        b = a->allocator
            ? a->allocator->alloc(a->allocator->data, sizeof(adserve_arena_block_t) + want)
            : malloc(sizeof(adserve_arena_block_t) + want);
        if (b == NULL) {
            return NULL;
        }

        b->size = want;
        b->used = 0;
        b->next = a->head;
        a->head = b;
        a->total += want;
    }

    p = b->data + b->used;
    b->used += size;

    return p;
}


void *
adserve_arena_calloc(adserve_arena_t *a, size_t size)
{
    void  *p;

    p = adserve_arena_alloc(a, size);
    if (p != NULL) {
        memset(p, 0, size);
    }

    return p;
}


char *
adserve_arena_memdup(adserve_arena_t *a, const void *src, size_t len)
{
    char  *p;

    /* always NUL-terminated, so the copy can also be used as a C string */
    p = adserve_arena_alloc(a, len + 1);
    if (p != NULL) {
        memcpy(p, src, len);
        p[len] = '\0';
    }

    return p;
}


void
adserve_arena_free(adserve_arena_t *a)
{
    adserve_arena_block_t  *b, *next;

    for (b = a->head; b; b = next) {
        next = b->next;

        if (a->allocator) {
            a->allocator->free(a->allocator->data, b);

        } else {
            free(b);
        }
    }

    a->head = NULL;
    a->total = 0;
}
