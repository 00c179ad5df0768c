/* libFuzzer: an OpenRTB bidder's BidResponse, as the module reads it from a
 * source it does not control: the strict scanner with the bid response's
 * grammar, then what an auction asks of each bid. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adserve_rtb.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    adserve_rtb_response_t  r;
    adserve_str_t           seat;
    const char             *err;
    char                   *buf;
    unsigned                i;

    /* its own allocation, exactly the input's size: ASan sees a read past it */
    buf = malloc(size ? size : 1);
    if (buf == NULL) {
        return 0;
    }
    memcpy(buf, data, size);

    if (adserve_rtb_parse_response(buf, size, &r, &err) == 0) {
        for (i = 0; i < r.nbids; i++) {
            (void) adserve_rtb_bid_unusable(&r.bids[i]);
            seat = adserve_rtb_bid_seat(&r, &r.bids[i]);
            /* every string kept lies inside the input */
            if ((seat.data != NULL && (seat.data < buf || seat.data + seat.len > buf + size))
                || (r.bids[i].adm.data != NULL
                    && (r.bids[i].adm.data < buf || r.bids[i].adm.data + r.bids[i].adm.len > buf + size)))
            {
                abort();
            }
        }
    }

    free(buf);
    return 0;
}
