/*
 * adserve_records: a worker's copy of the records of one kind, by id.
 *
 * A full load fills it; later, only the records named in the change log
 * (adserve:changes) are fetched again and put or deleted here, and the
 * snapshot is built from what it holds. Serving never reads it: only the
 * loader, one stage at a time, so a build in the thread pool always sees it
 * unchanged (and is the only one to write it: the parses it keeps). A full
 * load's fresh copy is filled by the pool's threads as they parse its
 * chunks, one at a time for each copy (ngx_http_adserve_scan.c).
 */

#ifndef ADSERVE_RECORDS_H
#define ADSERVE_RECORDS_H

#include <stddef.h>

#include "adserve_snapshot.h"
#include "adserve_parsed.h"

typedef struct adserve_record_s  adserve_record_t;

typedef struct {
    adserve_record_t  **buckets;
    size_t              nbuckets;     /* a power of two, or 0 */
    size_t              count;
    size_t              bytes;        /* of the texts kept */
} adserve_records_t;

void adserve_records_init(adserve_records_t *r);

/* Sets the record id to text (both copied). 0, or -1 out of memory. */
int adserve_records_put(adserve_records_t *r, const char *id, size_t id_len,
    const char *text, size_t len);

/* One record of a batch (adserve_records_put_batch). */
typedef struct {
    const char        *id, *text;
    size_t             id_len, len;
    adserve_parsed_t  *parsed;        /* NULL: it could not be parsed for
                                       * want of memory */
} adserve_records_item_t;

/* Sets each of n records to its parse, and to its text too when
 * keep_texts: a full load parses each chunk as it arrives (adserve_parse),
 * and a build needs nothing else but the ad units' texts (an experiment's
 * variants are parsed from them). Each record's bucket and chain are
 * brought into the cache a few records ahead of its insert: a full load
 * puts half a million, and in tables of megabytes each insert's reads are
 * cache misses. Returns how many were not stored (out of memory): their
 * parses are freed, and r owns the others. */
size_t adserve_records_put_batch(adserve_records_t *r,
    const adserve_records_item_t *items, size_t n, int keep_texts);

/* Room for n records without growing: a full load knows how many are
 * coming (HLEN), and a growth of a large table rehashes every record at
 * once (38 ms of a worker's event loop at 200,000). 0, or -1 out of
 * memory. */
int adserve_records_reserve(adserve_records_t *r, size_t n);

/* Removes the record id, if there is one. */
void adserve_records_del(adserve_records_t *r, const char *id, size_t id_len);

/* Adds every record of r to in, as kind, without copying: in refers to r's
 * texts and must not outlive a change to r. The build keeps each record's
 * parse in r, until put or del changes that record: the next build parses
 * only what changed. 0, or -1 out of memory. */
int adserve_records_export(const adserve_records_t *r, adserve_input_t *in,
    adserve_kind_e kind);

/* Frees the text of every record a build has parsed: the parse is all the
 * next builds read, and a new text comes with the record's next put. Half
 * of what a builder keeps at 100k line items. Call it when no input refers
 * to r (after the build). */
void adserve_records_drop_texts(adserve_records_t *r);

void adserve_records_free(adserve_records_t *r);

#endif
