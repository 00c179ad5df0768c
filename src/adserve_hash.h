/*
 * adserve_hash: FNV-1a over bytes, for the engine's id tables (the
 * snapshot's ad units, the records, interned targeting strings). Short
 * ids, built once or looked up once per request: simplicity wins.
 */

#ifndef ADSERVE_HASH_H
#define ADSERVE_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t
adserve_hash(const char *p, size_t len)
{
    uint64_t  h = 1469598103934665603ULL;

    while (len--) {
        h ^= (unsigned char) *p++;
        h *= 1099511628211ULL;
    }

    return h;
}

#endif
