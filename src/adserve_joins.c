/*
 * adserve_joins: what one snapshot build joined, kept for the next (the
 * header says why). Two open-addressing tables keyed by parse pointers.
 */

#include <stdlib.h>
#include <string.h>

#include "adserve_joins.h"


/* A pointer's slot: parses are malloc'd, so the low bits say nothing;
 * Fibonacci hashing spreads the rest. */
static uint32_t
slot_of(const void *p, uint32_t mask)
{
    return (uint32_t) ((((uintptr_t) p >> 4) * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}


/* Twice n, a power of two: at most half full. */
static uint32_t
size_for(uint32_t n)
{
    uint32_t  size = 16;

    while (size < 2 * (uint64_t) n && size < (1u << 31)) {
        size <<= 1;
    }

    return size;
}


void
adserve_joins_init(adserve_joins_t *j)
{
    memset(j, 0, sizeof(adserve_joins_t));
}


static void
free_units(adserve_joins_t *j)
{
    uint32_t  i;

    for (i = 0; j->units != NULL && i <= j->units_mask; i++) {
        free(j->units[i].pairs);
    }

    free(j->units);
    j->units = NULL;
    j->units_mask = 0;
}


void
adserve_joins_clear(adserve_joins_t *j)
{
    free_units(j);
    free(j->lis);
    j->lis = NULL;
    j->lis_mask = 0;
    j->nlis = 0;
    free(j->gone);
    j->gone = NULL;
    j->gone_mask = 0;
    j->ngone = 0;
    j->valid = 0;
    j->stamp = 0;
}


void
adserve_joins_free(adserve_joins_t *j)
{
    adserve_joins_clear(j);
}


int
adserve_joins_reset(adserve_joins_t *j, uint32_t nunits, uint32_t nlis)
{
    uint32_t  size = size_for(nunits);

    adserve_joins_clear(j);

    j->units = calloc(size, sizeof(adserve_joined_unit_t));
    if (j->units == NULL) {
        return -1;
    }
    j->units_mask = size - 1;

    size = size_for(nlis);
    j->lis = calloc(size, sizeof(adserve_joined_li_t));
    if (j->lis == NULL) {
        free_units(j);
        return -1;
    }
    j->lis_mask = size - 1;

    return 0;
}


int
adserve_joins_renew_lis(adserve_joins_t *j, uint32_t nlis, adserve_joined_li_t **old,
    uint32_t *old_mask)
{
    uint32_t              size = size_for(nlis);
    adserve_joined_li_t  *lis = calloc(size, sizeof(adserve_joined_li_t));

    if (lis == NULL) {
        return -1;
    }

    *old = j->lis;
    *old_mask = j->lis_mask;
    j->lis = lis;
    j->lis_mask = size - 1;
    j->nlis = 0;

    return 0;
}


/* The unit's slot, or a free one for it; NULL when the table is full.
 * It is sized for every unit of the build that joined all, and a build
 * that joins from it has the same units (joins_usable), so it never
 * fills: the bound only keeps a broken promise from looping. */
static adserve_joined_unit_t *
unit_slot(const adserve_joins_t *j, const adserve_parsed_t *unit)
{
    uint32_t  i, n;

    if (j->units == NULL) {
        return NULL;
    }

    for (i = slot_of(unit, j->units_mask), n = 0; n <= j->units_mask;
         i = (i + 1) & j->units_mask, n++)
    {
        if (j->units[i].unit == unit || j->units[i].unit == NULL) {
            return &j->units[i];
        }
    }

    return NULL;
}


const adserve_joined_unit_t *
adserve_joins_unit(const adserve_joins_t *j, const adserve_parsed_t *unit)
{
    const adserve_joined_unit_t  *e = unit_slot(j, unit);

    return e != NULL && e->unit == unit ? e : NULL;
}


int
adserve_joins_put_unit(adserve_joins_t *j, const adserve_parsed_t *unit, uint32_t ncands,
    uint32_t nexcl, adserve_joined_t **pairs)
{
    adserve_joined_unit_t  *e;
    uint32_t                n = ncands + nexcl;

    *pairs = NULL;

    e = unit_slot(j, unit);
    if (e == NULL) {
        j->valid = 0;
        return -1;
    }

    e->unit = unit;
    free(e->pairs);
    e->pairs = NULL;
    e->ncands = 0;
    e->nexcl = 0;

    if (n == 0) {
        return 0;
    }

    e->pairs = malloc(n * sizeof(adserve_joined_t));
    if (e->pairs == NULL) {
        j->valid = 0;
        return -1;
    }

    e->ncands = ncands;
    e->nexcl = nexcl;
    *pairs = e->pairs;

    return 0;
}


adserve_joined_li_t *
adserve_joins_li(adserve_joined_li_t *lis, uint32_t mask, const adserve_parsed_t *li)
{
    uint32_t  i;

    if (lis == NULL) {
        return NULL;
    }

    for (i = slot_of(li, mask); lis[i].li != NULL; i = (i + 1) & mask) {
        if (lis[i].li == li) {
            return &lis[i];
        }
    }

    return NULL;
}


void
adserve_joins_put_li(adserve_joins_t *j, const adserve_parsed_t *li, uint64_t sig)
{
    uint32_t  i;

    for (i = slot_of(li, j->lis_mask); j->lis[i].li != NULL && j->lis[i].li != li;
         i = (i + 1) & j->lis_mask)
    { /* void */ }

    j->nlis += j->lis[i].li == NULL;
    j->lis[i].li = li;
    j->lis[i].sig = sig;
    j->lis[i].seen = j->gen;
}


int
adserve_joins_gone_reset(adserve_joins_t *j, uint32_t n)
{
    uint32_t  size = size_for(n);

    free(j->gone);
    j->ngone = 0;
    j->gone = calloc(size, sizeof(adserve_parsed_t *));
    if (j->gone == NULL) {
        j->gone_mask = 0;
        return -1;
    }
    j->gone_mask = size - 1;

    return 0;
}


void
adserve_joins_gone_add(adserve_joins_t *j, const adserve_parsed_t *li)
{
    uint32_t  i;

    for (i = slot_of(li, j->gone_mask); j->gone[i] != NULL && j->gone[i] != li;
         i = (i + 1) & j->gone_mask)
    { /* void */ }

    j->ngone += j->gone[i] == NULL;
    j->gone[i] = li;
}


int
adserve_joins_gone(const adserve_joins_t *j, const adserve_parsed_t *li)
{
    uint32_t  i;

    if (j->ngone == 0) {
        return 0;
    }

    for (i = slot_of(li, j->gone_mask); j->gone[i] != NULL; i = (i + 1) & j->gone_mask) {
        if (j->gone[i] == li) {
            return 1;
        }
    }

    return 0;
}


/* splitmix64's finaliser over the pointer and the value: parts that are
 * summed must not cancel each other out, as XOR's equal parts would */
uint64_t
adserve_joins_mix(const void *p, uint64_t v)
{
    uint64_t  z = (uint64_t) (uintptr_t) p + v * 0x9e3779b97f4a7c15ull;

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;

    return z ^ (z >> 31);
}
