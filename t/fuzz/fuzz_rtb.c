/* libFuzzer: an OpenRTB bidder's BidResponse, as the module reads it from a
 * source it does not control: the strict scanner with the bid response's
 * grammar, then what an auction asks of each bid: its blocks, and its
 * notices and markup with the macros filled (exactly sized room, which
 * the expansion must never pass). The same bytes, and each bid's markup,
 * are also read as a native bid's markup (Native 1.2's response). */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adserve_contract.h"
#include "adserve_rtb.h"
#include "adserve_vast.h"


static const adserve_rtb_block_t  blocks[] = {
    { ADSERVE_BLOCK_ADOMAIN, { "example.com", 11 } },
    { ADSERVE_BLOCK_CRID, { "c", 1 } },
    { ADSERVE_BLOCK_CAT, { "IAB7", 4 } },
};


/* s with the macros filled into a buffer of exactly room bytes */
static void
expand(const adserve_str_t *s, const adserve_rtb_bid_t *b, size_t room, int url)
{
    adserve_rtb_macros_t  m = {
        .auction_id = { "0123456789abcdef", 16 }, .bid_id = b->id, .imp_id = b->impid,
        .seat_id = b->crid, .currency = { "USD", 3 }, .price_micros = b->price_micros,
        .loss = 102,
    };
    char                 *out;
    size_t                n;

    out = malloc(room ? room : 1);
    if (out == NULL) {
        return;
    }
    n = adserve_rtb_expand(out, room, s->data, s->len, &m, url);
    if (n != (size_t) -1 && n > room) {
        abort();
    }
    free(out);
}


/* the auction's check of a native bid against a unit's requests: each
 * kind, required or not; a pick is an asset of the request's id and kind */
static void
fit(const adserve_rtb_native_t *n)
{
    static const adserve_rtb_native_req_t  reqs[] = {
        { 1, ADSERVE_ASSET_TITLE, 1 }, { 2, ADSERVE_ASSET_IMG, 0 },
        { 3, ADSERVE_ASSET_DATA, 0 }, { 4, ADSERVE_ASSET_VIDEO, 0 },
    };
    uint8_t                                pick[4];
    unsigned                               i;

    if (adserve_rtb_native_unfit(n, reqs, 4, pick) != NULL) {
        return;
    }

    for (i = 0; i < 4; i++) {
        if (pick[i] != ADSERVE_RTB_NATIVE_UNFILLED
            && (pick[i] >= n->nassets || n->assets[pick[i]].id != reqs[i].id
                || n->assets[pick[i]].kind != reqs[i].kind))
        {
            abort();
        }
    }

    if (pick[0] == ADSERVE_RTB_NATIVE_UNFILLED) {
        abort();                        /* a required one left unfilled */
    }
}


/* buf[0..len) as a native bid's markup: every string kept lies inside it,
 * and every count within its bounds */
static void
native(char *buf, size_t len)
{
    adserve_rtb_native_t  n;
    const char           *err;
    const adserve_str_t  *v;
    unsigned              i;

    if (adserve_rtb_parse_native(buf, len, &n, &err) != 0) {
        if (err == NULL || n.nassets != 0) {
            abort();
        }
        return;
    }

    if (n.nassets > ADSERVE_RTB_NATIVE_ASSETS_MAX || n.nevents > ADSERVE_RTB_NATIVE_TRACKERS_MAX
        || n.nclicktrackers > ADSERVE_RTB_NATIVE_TRACKERS_MAX
        || n.nimptrackers > ADSERVE_RTB_NATIVE_TRACKERS_MAX)
    {
        abort();
    }

    for (i = 0; i < n.nassets + n.nevents + 1; i++) {
        v = i < n.nassets ? &n.assets[i].value
            : i < n.nassets + n.nevents ? &n.events[i - n.nassets].url : &n.link;
        if (v->data != NULL && (v->data < buf || v->data + v->len > buf + len)) {
            abort();
        }
    }

    fit(&n);
}


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
    native(buf, size);
    memcpy(buf, data, size);            /* the native read unescaped in place */

    if (adserve_rtb_parse_response(buf, size, &r, &err) == 0) {
        for (i = 0; i < r.nbids; i++) {
            (void) adserve_rtb_bid_unusable(&r.bids[i]);
            (void) adserve_rtb_blocked(&r.bids[i], blocks, 3);
            expand(&r.bids[i].nurl, &r.bids[i], ADSERVE_RTB_URL_MAX, 1);
            expand(&r.bids[i].lurl, &r.bids[i], r.bids[i].lurl.len, 1);
            expand(&r.bids[i].adm, &r.bids[i], r.bids[i].adm.len + 64, 0);
            if (adserve_vast_impression_at(r.bids[i].adm.data ? r.bids[i].adm.data : "",
                                           r.bids[i].adm.len)
                > (long) r.bids[i].adm.len)
            {
                abort();
            }
            seat = adserve_rtb_bid_seat(&r, &r.bids[i]);
            /* every string kept lies inside the input */
            if ((seat.data != NULL && (seat.data < buf || seat.data + seat.len > buf + size))
                || (r.bids[i].adm.data != NULL
                    && (r.bids[i].adm.data < buf || r.bids[i].adm.data + r.bids[i].adm.len > buf + size)))
            {
                abort();
            }
            if (r.bids[i].adm.data != NULL) {
                native((char *) r.bids[i].adm.data, r.bids[i].adm.len);
            }
        }
    }

    free(buf);
    return 0;
}
