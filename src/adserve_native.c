/*
 * Native ads: requests, assets, the match and both renderings
 * (adserve_native.h).
 */

#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "adserve_native.h"
#include "adserve_vast.h"


/* ---- reading ------------------------------------------------------------- */

static uint32_t
uint_of(const cJSON *o, const char *name)
{
    const cJSON  *v = cJSON_GetObjectItemCaseSensitive(o, name);

    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 4e9
           ? (uint32_t) v->valuedouble : 0;
}


static const char *
str_of(const cJSON *o, const char *name)
{
    const cJSON  *v = cJSON_GetObjectItemCaseSensitive(o, name);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}


static char *
dup(adserve_native_alloc_pt alloc, void *ctx, const char *s)
{
    size_t  n = strlen(s) + 1;
    char   *p = alloc(ctx, n);

    if (p != NULL) {
        memcpy(p, s, n);
    }

    return p;
}


/* the strings of an array (of a member of each object in it, when member
 * is not NULL) */
static int
strs_read(const cJSON *a, const char *member, adserve_native_alloc_pt alloc, void *ctx,
    adserve_native_strs_t *out)
{
    const cJSON  *it;
    const char   *s;
    int           n = cJSON_GetArraySize(a);

    out->n = 0;
    out->v = NULL;

    if (n <= 0) {
        return 0;
    }

    out->v = alloc(ctx, (size_t) n * sizeof(char *));
    if (out->v == NULL) {
        return -1;
    }

    cJSON_ArrayForEach(it, a) {
        s = member ? str_of(it, member) : cJSON_IsString(it) ? it->valuestring : NULL;
        if (s == NULL) {
            continue;
        }

        out->v[out->n] = dup(alloc, ctx, s);
        if (out->v[out->n++] == NULL) {
            return -1;
        }
    }

    return 0;
}


static uint32_t
protocols_of(const cJSON *a)
{
    const cJSON  *it;
    uint32_t      bits = 0;

    cJSON_ArrayForEach(it, a) {
        if (cJSON_IsNumber(it) && it->valuedouble >= 1 && it->valuedouble < 32) {
            bits |= 1u << (unsigned) it->valuedouble;
        }
    }

    return bits;
}


static int
req_read(const cJSON *o, adserve_native_alloc_pt alloc, void *ctx, adserve_native_req_t *r)
{
    const cJSON  *m = NULL;
    int           k;

    memset(r, 0, sizeof(*r));

    for (k = 0; k < ADSERVE_ASSET_COUNT; k++) {
        m = cJSON_GetObjectItemCaseSensitive(o, adserve_asset_names[k]);
        if (cJSON_IsObject(m)) {
            break;
        }
    }

    if (k == ADSERVE_ASSET_COUNT) {
        return 1;                       /* no member: skipped */
    }

    r->kind = (uint8_t) k;
    r->id = uint_of(o, "id");
    r->required = uint_of(o, "required") == 1;
    r->type = (uint16_t) (uint_of(m, "type") > 65535 ? 0 : uint_of(m, "type"));
    r->len = uint_of(m, "len");
    r->w = uint_of(m, "w");
    r->h = uint_of(m, "h");
    r->wmin = uint_of(m, "wmin");
    r->hmin = uint_of(m, "hmin");
    r->mindur = uint_of(m, "minduration");
    r->maxdur = uint_of(m, "maxduration");
    r->linearity = (uint8_t) (uint_of(m, "linearity") == 2 ? 2 : 0);
    r->protocols = protocols_of(cJSON_GetObjectItemCaseSensitive(m, "protocols"));

    return strs_read(cJSON_GetObjectItemCaseSensitive(m, "mimes"), NULL, alloc, ctx,
                     &r->mimes);
}


int
adserve_native_reqs_read(const cJSON *assets, adserve_native_alloc_pt alloc, void *ctx,
    adserve_native_req_t **out, uint32_t *n)
{
    const cJSON  *it;
    int           size = cJSON_GetArraySize(assets), rc;

    *out = NULL;
    *n = 0;

    if (size <= 0) {
        return 0;
    }

    if (size > ADSERVE_NATIVE_ASSETS_MAX) {
        size = ADSERVE_NATIVE_ASSETS_MAX;
    }

    *out = alloc(ctx, (size_t) size * sizeof(adserve_native_req_t));
    if (*out == NULL) {
        return -1;
    }

    cJSON_ArrayForEach(it, assets) {
        if (*n == (uint32_t) size) {
            break;
        }

        rc = req_read(it, alloc, ctx, &(*out)[*n]);
        if (rc < 0) {
            return -1;
        }

        *n += rc == 0;
    }

    return 0;
}


static uint32_t
utf8_chars(const char *s)
{
    uint32_t  n = 0;

    for ( ; *s; s++) {
        n += ((unsigned char) *s & 0xc0) != 0x80;
    }

    return n;
}


static int
text_asset(adserve_native_alloc_pt alloc, void *ctx, adserve_native_asset_t *a, int kind,
    int type, const char *value)
{
    memset(a, 0, sizeof(*a));
    a->kind = (uint8_t) kind;
    a->type = (uint16_t) type;
    a->chars = utf8_chars(value);
    a->value = dup(alloc, ctx, value);

    return a->value ? 0 : -1;
}


static int
image_asset(adserve_native_alloc_pt alloc, void *ctx, adserve_native_asset_t *a,
    const cJSON *o)
{
    const char  *url = str_of(o, "url"), *mime = str_of(o, "mime");
    int          t = adserve_vocab_str(adserve_image_type_names, str_of(o, "type"));

    if (url == NULL || t < 0) {
        return 1;
    }

    if (text_asset(alloc, ctx, a, ADSERVE_ASSET_IMG, adserve_image_types[t], url) != 0) {
        return -1;
    }

    a->w = uint_of(o, "w");
    a->h = uint_of(o, "h");
    a->mime = mime ? dup(alloc, ctx, mime) : NULL;

    return mime && a->mime == NULL ? -1 : 0;
}


static int
video_asset(adserve_native_alloc_pt alloc, void *ctx, adserve_native_asset_t *a,
    const cJSON *v)
{
    memset(a, 0, sizeof(*a));
    a->kind = ADSERVE_ASSET_VIDEO;
    a->duration = uint_of(v, "duration");
    a->wrapper = str_of(v, "vast_tag_url") != NULL;

    return strs_read(cJSON_GetObjectItemCaseSensitive(v, "media_files"), "mime", alloc, ctx,
                     &a->mimes);
}


int
adserve_native_assets_read(const cJSON *native, adserve_native_alloc_pt alloc, void *ctx,
    adserve_native_asset_t **out, uint32_t *n)
{
    const cJSON             *images, *data, *video, *it;
    const char              *title, *value;
    adserve_native_asset_t  *a;
    int                      size, t, rc;

    title = str_of(native, "title");
    images = cJSON_GetObjectItemCaseSensitive(native, "images");
    data = cJSON_GetObjectItemCaseSensitive(native, "data");
    video = cJSON_GetObjectItemCaseSensitive(native, "video");

    *n = 0;
    size = (title != NULL) + cJSON_GetArraySize(images) + cJSON_GetArraySize(data)
           + cJSON_IsObject(video);

    *out = a = size > 0 ? alloc(ctx, (size_t) size * sizeof(adserve_native_asset_t)) : NULL;
    if (size > 0 && a == NULL) {
        return -1;
    }

    if (title != NULL) {
        if (text_asset(alloc, ctx, &a[(*n)++], ADSERVE_ASSET_TITLE, 0, title) != 0) {
            return -1;
        }
    }

    cJSON_ArrayForEach(it, images) {
        rc = image_asset(alloc, ctx, &a[*n], it);
        if (rc < 0) {
            return -1;
        }
        *n += rc == 0;
    }

    cJSON_ArrayForEach(it, data) {
        t = adserve_vocab_str(adserve_data_type_names, str_of(it, "type"));
        value = str_of(it, "value");
        if (t < 0 || value == NULL) {
            continue;
        }
        if (text_asset(alloc, ctx, &a[(*n)++], ADSERVE_ASSET_DATA, t + 1, value) != 0) {
            return -1;
        }
    }

    if (cJSON_IsObject(video)) {
        if (video_asset(alloc, ctx, &a[(*n)++], video) != 0) {
            return -1;
        }
    }

    return 0;
}


/* ---- the match ----------------------------------------------------------- */

static int
has(const adserve_native_strs_t *s, const char *v)
{
    uint32_t  i;

    for (i = 0; v != NULL && i < s->n; i++) {
        if (strcasecmp(s->v[i], v) == 0) {
            return 1;
        }
    }

    return 0;
}


/* OpenRTB: wmin is a minimum; w alone is exact */
static int
side_fits(uint32_t have, uint32_t exact, uint32_t min)
{
    return min ? have >= min : exact ? have == exact : 1;
}


static int
video_fits(const adserve_native_req_t *r, const adserve_native_asset_t *a)
{
    uint32_t  i;
    int       ok = r->mimes.n == 0 || a->wrapper;   /* a tag's files are its own */

    for (i = 0; !ok && i < a->mimes.n; i++) {
        ok = has(&r->mimes, a->mimes.v[i]);
    }

    return ok && r->linearity != 2
           && a->duration >= r->mindur && (r->maxdur == 0 || a->duration <= r->maxdur)
           && (r->protocols == 0
               || (r->protocols & (a->wrapper ? ADSERVE_PROTOCOLS_WRAPPER
                                              : ADSERVE_PROTOCOLS_INLINE)));
}


static int
fits(const adserve_native_req_t *r, const adserve_native_asset_t *a)
{
    if (r->kind != a->kind) {
        return 0;
    }

    switch (r->kind) {
    case ADSERVE_ASSET_TITLE:
        return r->len == 0 || a->chars <= r->len;

    case ADSERVE_ASSET_IMG:
        return (r->type == 0 || r->type == a->type)
               && side_fits(a->w, r->w, r->wmin) && side_fits(a->h, r->h, r->hmin)
               && (r->mimes.n == 0 || has(&r->mimes, a->mime));

    case ADSERVE_ASSET_DATA:
        return r->type == a->type && (r->len == 0 || a->chars <= r->len);

    default:
        return video_fits(r, a);
    }
}


int
adserve_native_match(const adserve_native_req_t *reqs, uint32_t nreqs,
    const adserve_native_asset_t *assets, uint32_t nassets, uint8_t *pick)
{
    uint64_t  used = 0;
    uint32_t  i, j, filled = 0;
    int       missing = -1;

    for (i = 0; i < nreqs; i++) {
        pick[i] = ADSERVE_NATIVE_UNFILLED;

        for (j = 0; j < nassets && j < 64; j++) {
            if (!(used & (1ull << j)) && fits(&reqs[i], &assets[j])) {
                used |= 1ull << j;
                pick[i] = (uint8_t) j;
                filled++;
                break;
            }
        }

        if (pick[i] == ADSERVE_NATIVE_UNFILLED && reqs[i].required && missing < 0) {
            missing = (int) i;
        }
    }

    return missing >= 0 ? missing : filled == 0 ? (int) nreqs : -1;
}


/* ---- asset mode ------------------------------------------------------------ */

static void
member_num(adserve_jsonw_t *w, const char *name, size_t len, uint32_t v)
{
    adserve_jsonw_raw(w, name, len);
    adserve_jsonw_num(w, v);
}

#define MEMBER_NUM(w, name, v)  member_num(w, "" name, sizeof(name) - 1, v)


static void
asset_json(adserve_jsonw_t *w, const adserve_native_asset_t *a, const char *vast,
    size_t vast_len)
{
    switch (a->kind) {
    case ADSERVE_ASSET_TITLE:
        adserve_jsonw_lit(w, ",\"title\":{\"text\":");
        adserve_jsonw_str(w, a->value);
        break;

    case ADSERVE_ASSET_IMG:
        MEMBER_NUM(w, ",\"img\":{\"type\":", a->type);
        adserve_jsonw_lit(w, ",\"url\":");
        adserve_jsonw_str(w, a->value);
        if (a->w && a->h) {
            MEMBER_NUM(w, ",\"w\":", a->w);
            MEMBER_NUM(w, ",\"h\":", a->h);
        }
        break;

    case ADSERVE_ASSET_DATA:
        MEMBER_NUM(w, ",\"data\":{\"type\":", a->type);
        adserve_jsonw_lit(w, ",\"value\":");
        adserve_jsonw_str(w, a->value);
        break;

    default:
        adserve_jsonw_lit(w, ",\"video\":{\"vasttag\":\"");
        adserve_jsonw_esc(w, vast ? vast : "", vast ? vast_len : 0, ADSERVE_SPLICE);
        adserve_jsonw_lit(w, "\"");
    }

    adserve_jsonw_lit(w, "}}");
}


unsigned
adserve_native_render_assets(adserve_jsonw_t *w, const adserve_native_req_t *reqs,
    uint32_t nreqs, const adserve_native_asset_t *assets, const uint8_t *pick,
    const char *vast, size_t vast_len, unsigned vast_splices)
{
    unsigned  n = 0;
    uint32_t  i;
    int       first = 1;

    adserve_jsonw_lit(w, "{\"ver\":\"1.2\",\"assets\":[");

    for (i = 0; i < nreqs; i++) {
        if (pick[i] == ADSERVE_NATIVE_UNFILLED) {
            continue;
        }

        adserve_jsonw_raw(w, ",", !first);
        first = 0;
        MEMBER_NUM(w, "{\"id\":", reqs[i].id);
        asset_json(w, &assets[pick[i]], vast, vast_len);

        if (assets[pick[i]].kind == ADSERVE_ASSET_VIDEO && vast != NULL) {
            n += vast_splices;
        }
    }

    /* the click and the impression as URLs in JSON text, not XML */
    adserve_jsonw_lit(w, "],\"link\":{\"url\":\"");
    adserve_splice_put(w, ADSERVE_SPLICE_CLICK | ADSERVE_SPLICE_JSON, &n);
    adserve_jsonw_lit(w, "\"},\"eventtrackers\":[{\"event\":1,\"method\":1,\"url\":\"");
    adserve_splice_put(w, ADSERVE_SPLICE_IMPRESSION | ADSERVE_SPLICE_JSON, &n);
    adserve_jsonw_lit(w, "\"}]}");

    return n;
}


/* ---- html mode: placeholders ------------------------------------------------ */

typedef enum {
    PH_TEXT,                            /* between tags */
    PH_URL                              /* in a quoted attribute value */
} ph_context_e;

#define PH_CLICK  0xffff                /* the click URL: a splice */

/* What {{name}} stands for: the asset kind and type, or PH_CLICK; -1 for
 * an unknown name. *ctx: where it may stand. */
static int
placeholder(const char *name, size_t len, int *kind, ph_context_e *ctx)
{
    int  t;

    *ctx = PH_URL;

    if (len == 9 && memcmp(name, "click_url", 9) == 0) {
        *kind = ADSERVE_ASSET_COUNT;
        return PH_CLICK;
    }

    if (len > 4 && memcmp(name, "img.", 4) == 0) {
        t = adserve_vocab(adserve_image_type_names, name + 4, len - 4);
        *kind = ADSERVE_ASSET_IMG;
        return t < 0 ? -1 : adserve_image_types[t];
    }

    *ctx = PH_TEXT;

    if (len == 5 && memcmp(name, "title", 5) == 0) {
        *kind = ADSERVE_ASSET_TITLE;
        return 0;
    }

    if (len > 5 && memcmp(name, "data.", 5) == 0) {
        t = adserve_vocab(adserve_data_type_names, name + 5, len - 5);
        *kind = ADSERVE_ASSET_DATA;
        return t < 0 ? -1 : t + 1;
    }

    return -1;
}


/* the value of the first asset of kind and type, or "" */
static const char *
value_of(const adserve_native_asset_t *assets, uint32_t n, int kind, int type)
{
    uint32_t  i;

    for (i = 0; i < n; i++) {
        if (assets[i].kind == kind && (kind == ADSERVE_ASSET_TITLE || assets[i].type == type)) {
            return assets[i].value;
        }
    }

    return "";
}


unsigned
adserve_native_render_html(adserve_jsonw_t *w, const char *html, const char *css,
    const adserve_native_asset_t *assets, uint32_t nassets)
{
    const char    *p, *end;
    ph_context_e   ctx;
    unsigned       n = 0;
    int            kind, type;

    if (css != NULL && css[0] != '\0') {
        adserve_jsonw_lit(w, "<style>");
        adserve_jsonw_raw(w, css, strlen(css));
        adserve_jsonw_lit(w, "</style>");
    }

    while ((p = strstr(html, "{{")) != NULL && (end = strstr(p + 2, "}}")) != NULL) {
        adserve_jsonw_raw(w, html, (size_t) (p - html));
        type = placeholder(p + 2, (size_t) (end - p - 2), &kind, &ctx);

        if (type == PH_CLICK) {
            adserve_splice_put(w, ADSERVE_SPLICE_CLICK, &n);

        } else if (type >= 0) {
            adserve_xml_esc(w, value_of(assets, nassets, kind, type));
        }

        html = end + 2;
    }

    adserve_jsonw_raw(w, html, strlen(html));

    return n;
}


/* ---- html mode: the check ------------------------------------------------------ */

typedef struct {
    const char    *start, *p;
    int            in_tag;              /* inside < ... > */
    int            after_eq;            /* in a tag, after an attribute's '=' */
    char           quote;               /* in a quoted attribute value */
    const char    *raw_end;             /* inside <script> or <style>: "</script" */
} scan_t;


/* Control bytes have no business in markup, and the build's splice byte
 * (ADSERVE_SPLICE) among them would be filled as one when serving. */
static const char *
control_byte(const char *s, size_t *at)
{
    const char  *p;

    for (p = s; *p; p++) {
        if ((unsigned char) *p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r') {
            *at = (size_t) (p - s);
            return p;
        }
    }

    return NULL;
}


static int
has_placeholder(const char *p, const char *end)
{
    for ( ; p + 1 < end; p++) {
        if (p[0] == '{' && p[1] == '{') {
            return 1;
        }
    }

    return 0;
}


static int
letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}


static const char *
tag_begin(scan_t *s)
{
    const char  *p = s->p + 1;

    if (!letter(*p) && *p != '/' && *p != '!') {
        s->p++;                          /* a '<' of the text */
        return NULL;
    }

    if (strncmp(p, "!--", 3) == 0) {
        /* as a browser reads it: <!--> and <!---> are whole comments */
        p = p[3] == '>' ? p + 1 : (p[3] == '-' && p[4] == '>') ? p + 2 : strstr(p + 3, "-->");
        if (p == NULL) {
            return "html: an HTML comment is not closed";
        }
        if (has_placeholder(s->p, p)) {
            return "html: a placeholder in an HTML comment";
        }
        s->p = p + 3;
        return NULL;
    }

    if (strncasecmp(p, "script", 6) == 0 && !letter(p[6])) {
        s->raw_end = "</script";

    } else if (strncasecmp(p, "style", 5) == 0 && !letter(p[5])) {
        s->raw_end = "</style";
    }

    s->in_tag = 1;
    s->after_eq = 0;
    s->p++;

    return NULL;
}


static const char *
check_placeholder(scan_t *s)
{
    const char    *end = strstr(s->p + 2, "}}");
    ph_context_e   ctx;
    int            kind;

    if (end == NULL) {
        return "html: a placeholder is not closed with }}";
    }

    if (s->raw_end != NULL) {
        return "html: a placeholder inside <script> or <style>";
    }

    if (placeholder(s->p + 2, (size_t) (end - s->p - 2), &kind, &ctx) < 0) {
        return "html: an unknown placeholder (title, img.icon, img.main, data.<type>, "
               "click_url)";
    }

    if (ctx == PH_TEXT && s->in_tag) {
        return "html: a text placeholder stands between tags, not inside one";
    }

    if (ctx == PH_URL && !(s->in_tag && s->quote)) {
        return "html: a URL placeholder stands in a quoted attribute value";
    }

    s->p = end + 2;

    return NULL;
}


/* the rest of a <script> or <style> element, up to its end tag */
static const char *
skip_raw(scan_t *s)
{
    const char  *p = s->p, *end;
    size_t       n = strlen(s->raw_end);

    for (end = p; *end && strncasecmp(end, s->raw_end, n) != 0; end++) {
        /* scan */
    }

    if (has_placeholder(p, end)) {
        return "html: a placeholder inside <script> or <style>";
    }

    s->p = end;
    s->raw_end = NULL;

    return NULL;
}


const char *
adserve_native_template_check(const char *html, const char *css, size_t *at)
{
    scan_t       s = { html, html, 0, 0, 0, NULL };
    const char  *why = NULL;
    const char  *c;

    *at = 0;

    if (html == NULL || strlen(html) > ADSERVE_NATIVE_TEMPLATE_MAX) {
        *at = ADSERVE_NATIVE_TEMPLATE_MAX;
        return "html: a template of up to 65536 bytes";
    }

    if (css != NULL && (strlen(css) > ADSERVE_NATIVE_TEMPLATE_MAX || strchr(css, '<'))) {
        *at = strchr(css, '<') ? (size_t) (strchr(css, '<') - css) : ADSERVE_NATIVE_TEMPLATE_MAX;
        return "css: up to 65536 bytes, without '<' (it goes in a <style> element)";
    }

    if (css != NULL && control_byte(css, at) != NULL) {
        return "css: a control character";
    }

    if (control_byte(html, at) != NULL) {
        return "html: a control character";
    }

    while (why == NULL && *s.p) {
        c = s.p;

        if (c[0] == '{' && c[1] == '{') {
            why = check_placeholder(&s);

        } else if (s.in_tag) {
            /* a quote opens a value only right after '=' (spaces aside): in
             * an unquoted value it is a character of the value */
            if (s.quote) {
                s.quote = *c == s.quote ? 0 : s.quote;
            } else if ((*c == '"' || *c == '\'') && s.after_eq) {
                s.quote = *c;
            } else if (*c == '>') {
                s.in_tag = 0;
                if (s.raw_end) {
                    s.p++;
                    why = skip_raw(&s);
                    continue;
                }
            }
            s.after_eq = !s.quote && (*c == '=' || (s.after_eq && (*c == ' ' || *c == '\t'
                                                                  || *c == '\n' || *c == '\r')));
            s.p++;

        } else if (*c == '<') {
            why = tag_begin(&s);

        } else {
            s.p++;
        }
    }

    if (why == NULL && s.in_tag) {
        why = "a tag is not closed";
    }

    *at = (size_t) (s.p - html);

    return why;
}
