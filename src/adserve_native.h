/*
 * adserve_native: native ads (OpenRTB Native 1.2), README "Native".
 *
 * What a native placement asks for (its AssetRequests), what a NATIVE
 * creative carries (its assets), whether the one fits the other, and the
 * two ways the ad is rendered:
 *   - asset mode: an OpenRTB Native 1.2 response object, its assets under
 *     the ids of the placement's requests (adserve_native_render_assets);
 *   - html mode: the creative through the ad unit's native style, an
 *     HTML/CSS template with placeholders, every value escaped
 *     (adserve_native_render_html).
 *
 * The sidecar reads a native format's requests and a creative's assets
 * with the same functions, and checks a style's template with
 * adserve_native_template_check: one grammar for both programs.
 *
 * Plain C, no nginx types.
 */

#ifndef ADSERVE_NATIVE_H
#define ADSERVE_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#include "adserve_contract.h"
#include "adserve_jsonw.h"

struct cJSON;

/* where what is read goes: the caller's block (the parse's scratch, an
 * arena); NULL when it is full */
typedef void *(*adserve_native_alloc_pt)(void *ctx, size_t size);

typedef struct {
    const char    **v;
    uint32_t        n;
} adserve_native_strs_t;

/* One AssetRequest of a placement (or of a native format). Zeros mean
 * "not asked": no type, no length limit, no size. */
typedef struct {
    uint32_t        id;               /* the response's asset id */
    uint8_t         kind;             /* adserve_asset_e */
    uint8_t         required;
    uint8_t         linearity;        /* video: 2 non-linear */
    uint16_t        type;             /* img: OpenRTB image type; data: type */
    uint32_t        len;              /* title, data: characters at most */
    uint32_t        w, h, wmin, hmin; /* img */
    uint32_t        mindur, maxdur;   /* video: seconds */
    uint32_t        protocols;        /* video: bit p is OpenRTB protocol p */
    adserve_native_strs_t  mimes;     /* img, video: none means any */
} adserve_native_req_t;

/* One asset of a NATIVE creative. */
typedef struct {
    uint8_t         kind;             /* adserve_asset_e */
    uint8_t         wrapper;          /* video: a VAST tag's wrapper */
    uint16_t        type;             /* img: OpenRTB image type; data: type */
    uint32_t        chars;            /* title, data: UTF-8 characters */
    uint32_t        w, h;             /* img */
    uint32_t        duration;         /* video: seconds */
    const char     *value;            /* title text, data value, img url */
    const char     *mime;             /* img: or NULL */
    adserve_native_strs_t  mimes;     /* video: of its media files */
} adserve_native_asset_t;

/* What adserve_native_match chose: per request, the index of the asset
 * that fills it, or ADSERVE_NATIVE_UNFILLED. */
#define ADSERVE_NATIVE_UNFILLED  0xff

/* A placement's (or a format's) "assets" array: 0, or -1 when the block
 * is full. Requests of an unknown shape are skipped (the API refuses
 * them); at most ADSERVE_NATIVE_ASSETS_MAX. */
int adserve_native_reqs_read(const struct cJSON *assets, adserve_native_alloc_pt alloc,
    void *ctx, adserve_native_req_t **out, uint32_t *n);

/* A NATIVE creative's "native" object: 0, or -1 when the block is full. */
int adserve_native_assets_read(const struct cJSON *native, adserve_native_alloc_pt alloc,
    void *ctx, adserve_native_asset_t **out, uint32_t *n);

/* Whether the assets fill the requests: -1 when every required one is
 * filled and at least one request is, else the index of the first
 * required request left unfilled (nreqs when no request is filled at
 * all). pick gets nreqs entries. An asset fills one request at most. */
int adserve_native_match(const adserve_native_req_t *reqs, uint32_t nreqs,
    const adserve_native_asset_t *assets, uint32_t nassets, uint8_t *pick);

/* The "native" member's value in asset mode: {ver, assets, link,
 * eventtrackers}, into w. link.url and the impression tracker are JSON
 * splices (adserve_vast.h); vast is the video asset's VAST, with its
 * vast_splices, or NULL. Returns the splices written. */
unsigned adserve_native_render_assets(adserve_jsonw_t *w,
    const adserve_native_req_t *reqs, uint32_t nreqs,
    const adserve_native_asset_t *assets, const uint8_t *pick,
    const char *vast, size_t vast_len, unsigned vast_splices);

/* html mode: the style's css in a <style> element, then its html with each
 * placeholder replaced by the creative's value, HTML-escaped; {{click_url}}
 * is a splice. The text is HTML, not yet a JSON string. Returns the
 * splices written. */
unsigned adserve_native_render_html(adserve_jsonw_t *w, const char *html,
    const char *css, const adserve_native_asset_t *assets, uint32_t nassets);

/* NULL when html and css make a valid style, else why not: a static
 * message naming its field ("html: ...", "css: ..."), and in *at the byte
 * offset in that field where it went wrong. Placeholders
 * are {{title}}, {{img.icon}}, {{img.main}}, {{data.<type>}} and
 * {{click_url}}; text values may stand only between tags, URLs only in
 * quoted attribute values, and none inside <script> or <style>. */
const char *adserve_native_template_check(const char *html, const char *css,
    size_t *at);

#endif
