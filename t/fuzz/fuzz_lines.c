/* libFuzzer: the line reader of segment uploads (sidecar/lines.h), which
 * takes any bytes an operator's file holds. The input is fed in chunks cut
 * where its first byte says, and the ids it gives must be the same as
 * when fed whole: each one 1 to ADSERVE_TOKEN_USER_MAX bytes with no
 * control character, and nothing read past the input. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lines.h"

typedef struct {
    uint64_t  hash;                 /* of every id, in order */
    size_t    ids, faults;
} tally_t;

static int
on_id(void *arg, const char *id, size_t len)
{
    tally_t  *t = arg;
    size_t    i;

    if (len == 0 || len > ADSERVE_TOKEN_USER_MAX) {
        abort();
    }

    for (i = 0; i < len; i++) {
        if ((unsigned char) id[i] < 0x20 || id[i] == 0x7f) {
            abort();
        }
        t->hash = (t->hash ^ (unsigned char) id[i]) * 1099511628211ULL;
    }

    t->hash = (t->hash ^ 0x0a) * 1099511628211ULL;
    t->ids++;

    return 0;
}


static int
on_fault(void *arg, size_t line_no, enum line_fault why)
{
    tally_t  *t = arg;

    (void) line_no;
    (void) line_fault_text(why);
    t->faults++;

    return 0;
}


static void
read_all(const uint8_t *data, size_t size, size_t cut, tally_t *t)
{
    struct line_reader  lr;
    size_t              at, n;

    memset(t, 0, sizeof(tally_t));
    line_reader_init(&lr, on_id, on_fault, t);

    for (at = 0; at < size; at += n) {
        n = size - at < cut ? size - at : cut;
        /* each chunk in its own buffer: ASan sees a read past it */
        uint8_t *chunk = malloc(n);
        if (chunk == NULL) {
            abort();
        }
        memcpy(chunk, data + at, n);
        (void) line_reader_feed(&lr, (const char *) chunk, n);
        free(chunk);
    }

    (void) line_reader_end(&lr);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tally_t  whole, cut;

    if (size == 0) {
        return 0;
    }

    read_all(data + 1, size - 1, size, &whole);
    read_all(data + 1, size - 1, (size_t) data[0] % 17 + 1, &cut);

    if (whole.hash != cut.hash || whole.ids != cut.ids || whole.faults != cut.faults) {
        abort();
    }

    return 0;
}
