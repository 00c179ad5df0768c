/*
 * A chained hash table of records: one allocation per record (id and text
 * inline), buckets doubled as it grows. Changes are rare next to reads of
 * the whole table at each build, so simplicity wins over cleverness.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adserve_records.h"
#include "adserve_contract.h"


struct adserve_record_s {
    adserve_record_t  *next;
    adserve_parsed_t  *parsed;        /* the build's parse of the text, once
                                       * a build has made it */
    size_t             id_len;
    size_t             len;
    char               data[];        /* the id, then the text */
};


void
adserve_records_init(adserve_records_t *r)
{
    memset(r, 0, sizeof(adserve_records_t));
}


#define RECORDS_AHEAD  8              /* a batch's prefetch distance */
#define RECORDS_RING   (2 * RECORDS_AHEAD)   /* its hashes, in flight */


static adserve_record_t **
find(const adserve_records_t *r, uint64_t hash, const char *id, size_t id_len)
{
    adserve_record_t  **p;

    p = &r->buckets[hash & (r->nbuckets - 1)];

    for (; *p != NULL; p = &(*p)->next) {
        if ((*p)->id_len == id_len && memcmp((*p)->data, id, id_len) == 0) {
            break;
        }
    }

    return p;
}


/* rehashes every record into n buckets (a power of two) */
static int
resize(adserve_records_t *r, size_t n)
{
    adserve_record_t  **b, *e, *next;
    size_t              i, j;

    b = calloc(n, sizeof(adserve_record_t *));
    if (b == NULL) {
        return -1;
    }

    for (i = 0; i < r->nbuckets; i++) {
        for (e = r->buckets[i]; e != NULL; e = next) {
            next = e->next;
            j = adserve_hash(e->data, e->id_len) & (n - 1);
            e->next = b[j];
            b[j] = e;
        }
    }

    free(r->buckets);
    r->buckets = b;
    r->nbuckets = n;

    return 0;
}


/* doubles the table once records outnumber buckets */
static int
grow(adserve_records_t *r)
{
    if (r->count < r->nbuckets) {
        return 0;
    }

    return resize(r, r->nbuckets ? r->nbuckets * 2 : 64);
}


int
adserve_records_reserve(adserve_records_t *r, size_t n)
{
    size_t  size = 64;

    while (size < n && size < ((size_t) 1 << 40)) {
        size <<= 1;
    }

    return size > r->nbuckets ? resize(r, size) : 0;
}


/* Sets id (of that hash) to a new entry of text (len bytes, kept after
 * the id) and parse; the entry it replaces goes, with its parse. */
static int
insert(adserve_records_t *r, uint64_t hash, const char *id, size_t id_len,
    const char *text, size_t len, adserve_parsed_t *parsed)
{
    adserve_record_t  **p, *e;

    if (grow(r) != 0) {
        return -1;
    }

    e = malloc(sizeof(adserve_record_t) + id_len + len);
    if (e == NULL) {
        return -1;
    }

    e->parsed = parsed;
    e->id_len = id_len;
    e->len = len;
    memcpy(e->data, id, id_len);
    if (len > 0) {
        memcpy(e->data + id_len, text, len);
    }

    p = find(r, hash, id, id_len);

    if (*p != NULL) {                       /* replace */
        e->next = (*p)->next;
        r->bytes -= (*p)->len;
        adserve_parsed_free((*p)->parsed);
        free(*p);

    } else {
        e->next = NULL;
        r->count++;
    }

    *p = e;
    r->bytes += len;

    return 0;
}


int
adserve_records_put(adserve_records_t *r, const char *id, size_t id_len,
    const char *text, size_t len)
{
    return insert(r, adserve_hash(id, id_len), id, id_len, text, len, NULL);
}


/* The bucket of a hash, for a prefetch (NULL: no buckets yet). */
static adserve_record_t **
bucket_of(const adserve_records_t *r, uint64_t hash)
{
    return r->nbuckets ? &r->buckets[hash & (r->nbuckets - 1)] : NULL;
}


/* Each record in three stages: hashed and its bucket fetched RECORDS_AHEAD
 * records before its insert, its chain's first entry half way, inserted. */
size_t
adserve_records_put_batch(adserve_records_t *r,
    const adserve_records_item_t *items, size_t n, int keep_texts)
{
    const adserve_records_item_t   *it;
    adserve_record_t              **b;
    uint64_t                        hash[RECORDS_RING];
    size_t                          i, j, failed = 0;

    for (i = 0; i < n + RECORDS_AHEAD; i++) {
        if (i < n) {
            hash[i % RECORDS_RING] = adserve_hash(items[i].id, items[i].id_len);
            adserve_prefetch(bucket_of(r, hash[i % RECORDS_RING]));
        }

        j = i - RECORDS_AHEAD / 2;
        if (i >= RECORDS_AHEAD / 2 && j < n) {
            b = bucket_of(r, hash[j % RECORDS_RING]);
            adserve_prefetch(b ? *b : NULL);
        }

        if (i < RECORDS_AHEAD) {
            continue;
        }

        j = i - RECORDS_AHEAD;
        it = &items[j];

        if (it->parsed == NULL) {
            failed++;

        } else if (insert(r, hash[j % RECORDS_RING], it->id, it->id_len,
                          it->text, keep_texts ? it->len : 0, it->parsed)
                   != 0)
        {
            adserve_parsed_free(it->parsed);
            failed++;
        }
    }

    return failed;
}


void
adserve_records_del(adserve_records_t *r, const char *id, size_t id_len)
{
    adserve_record_t  **p, *e;

    if (r->nbuckets == 0) {
        return;
    }

    p = find(r, adserve_hash(id, id_len), id, id_len);
    e = *p;

    if (e != NULL) {
        *p = e->next;
        r->count--;
        r->bytes -= e->len;
        adserve_parsed_free(e->parsed);
        free(e);
    }
}


int
adserve_records_export(const adserve_records_t *r, adserve_input_t *in,
    adserve_kind_e kind)
{
    adserve_record_t  *e;
    size_t             i;

    for (i = 0; i < r->nbuckets; i++) {
        for (e = r->buckets[i]; e != NULL; e = e->next) {
            if (adserve_input_ref_parsed(in, kind, e->data + e->id_len, e->len,
                                         &e->parsed) != 0)
            {
                return -1;
            }
        }
    }

    return 0;
}


void
adserve_records_drop_texts(adserve_records_t *r)
{
    adserve_record_t  **p, *e, *n;
    size_t              i;

    for (i = 0; i < r->nbuckets; i++) {
        for (p = &r->buckets[i]; *p != NULL; p = &(*p)->next) {
            e = *p;

            if (e->parsed == NULL || e->len == 0) {
                continue;
            }

            /* shrinking: in place with glibc, and harmless if it moves */
            n = realloc(e, sizeof(adserve_record_t) + e->id_len);
            if (n != NULL) {
                r->bytes -= n->len;
                n->len = 0;
                *p = n;
            }
        }
    }
}


void
adserve_records_free(adserve_records_t *r)
{
    adserve_record_t  *e, *next;
    size_t             i;

    for (i = 0; i < r->nbuckets; i++) {
        for (e = r->buckets[i]; e != NULL; e = next) {
            next = e->next;
            adserve_parsed_free(e->parsed);
            free(e);
        }
    }

    free(r->buckets);
    adserve_records_init(r);
}
