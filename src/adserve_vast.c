#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "adserve_jsonw.h"
#include "adserve_vast.h"


void
adserve_xml_esc(adserve_jsonw_t *w, const char *s)
{
    const char  *run = s;

    for ( ; s != NULL && *s; s++) {
        const char  *ent;

        switch (*s) {
        case '&':  ent = "&amp;"; break;
        case '<':  ent = "&lt;"; break;
        case '>':  ent = "&gt;"; break;
        case '"':  ent = "&quot;"; break;
        case '\'': ent = "&apos;"; break;
        default:
            if ((unsigned char) *s >= 0x20 || *s == '\t' || *s == '\n' || *s == '\r') {
                continue;
            }
            ent = "";
        }

        adserve_jsonw_raw(w, run, (size_t) (s - run));
        adserve_jsonw_raw(w, ent, strlen(ent));
        run = s + 1;
    }

    if (run != NULL) {
        adserve_jsonw_raw(w, run, strlen(run));
    }
}


/* a string the caller chose among literals (adserve_jsonw_lit takes a
 * literal's size) */
static void
text(adserve_jsonw_t *w, const char *s)
{
    adserve_jsonw_raw(w, s, strlen(s));
}


void
adserve_splice_put(adserve_jsonw_t *w, int kind, unsigned *n)
{
    char  s[2] = { ADSERVE_SPLICE, (char) kind };

    adserve_jsonw_raw(w, s, 2);
    (*n)++;
}


/* an integer of the document (sizes, bitrates, seconds), as digits */
static void
num(adserve_jsonw_t *w, double v)
{
    char  buf[24];
    int   len = snprintf(buf, sizeof(buf), "%.0f", v >= 0 && v < 1e9 ? v : 0);

    adserve_jsonw_raw(w, buf, (size_t) len);
}


static void
timecode(adserve_jsonw_t *w, int s)
{
    char  buf[16];
    int   len = snprintf(buf, sizeof(buf), "%02d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);

    adserve_jsonw_raw(w, buf, (size_t) len);
}


static double
number(const cJSON *o, const char *name, double dflt)
{
    const cJSON  *v = cJSON_GetObjectItemCaseSensitive(o, name);

    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}


static const char *
string(const cJSON *o, const char *name)
{
    const cJSON  *v = cJSON_GetObjectItemCaseSensitive(o, name);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}


static void
tracking(adserve_jsonw_t *w, int duration, unsigned *n)
{
    int  e;

    adserve_jsonw_lit(w, "<TrackingEvents>");

    for (e = 0; e < ADSERVE_VIDEO_ERROR; e++) {
        adserve_jsonw_lit(w, "<Tracking event=\"");
        adserve_xml_esc(w, adserve_video_event_names[e]);

        if (e == ADSERVE_VIDEO_PROGRESS) {
            /* VAST's progress needs an offset: a view of a few seconds */
            adserve_jsonw_lit(w, "\" offset=\"");
            timecode(w, duration < ADSERVE_VIDEO_PROGRESS_AT ? duration
                                                             : ADSERVE_VIDEO_PROGRESS_AT);
        }

        adserve_jsonw_lit(w, "\">");
        adserve_splice_put(w, ADSERVE_SPLICE_EVENT + e, n);
        adserve_jsonw_lit(w, "</Tracking>");
    }

    adserve_jsonw_lit(w, "</TrackingEvents>");
}


/* Choice: a companion's type from its file name; the API checked it is an
 * http(s) URL, and players read the image whatever the type says. */
static const char *
image_type(const char *url)
{
    static const char *const  types[][2] = {
        { ".jpg", "image/jpeg" }, { ".jpeg", "image/jpeg" }, { ".gif", "image/gif" },
        { ".webp", "image/webp" }, { ".svg", "image/svg+xml" },
    };
    const char  *q = url ? strchr(url, '?') : NULL;
    size_t       len = url ? (q ? (size_t) (q - url) : strlen(url)) : 0, i, n;

    for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        n = strlen(types[i][0]);
        if (len >= n && strncasecmp(url + len - n, types[i][0], n) == 0) {
            return types[i][1];
        }
    }

    return "image/png";
}


static void
media_files(adserve_jsonw_t *w, const cJSON *files)
{
    const cJSON  *f;
    double        bitrate;

    adserve_jsonw_lit(w, "<MediaFiles>");

    cJSON_ArrayForEach(f, files) {
        adserve_jsonw_lit(w, "<MediaFile delivery=\"");
        adserve_xml_esc(w, string(f, "delivery") ? string(f, "delivery")
                                     : adserve_video_delivery_names[ADSERVE_VIDEO_PROGRESSIVE]);
        adserve_jsonw_lit(w, "\" type=\"");
        adserve_xml_esc(w, string(f, "mime"));
        adserve_jsonw_lit(w, "\" width=\"");
        num(w, number(f, "w", 0));
        adserve_jsonw_lit(w, "\" height=\"");
        num(w, number(f, "h", 0));
        bitrate = number(f, "bitrate", -1);
        if (bitrate >= 0) {
            adserve_jsonw_lit(w, "\" bitrate=\"");
            num(w, bitrate);
        }
        adserve_jsonw_lit(w, "\">");
        adserve_xml_esc(w, string(f, "url"));
        adserve_jsonw_lit(w, "</MediaFile>");
    }

    adserve_jsonw_lit(w, "</MediaFiles>");
}


static void
companions(adserve_jsonw_t *w, const cJSON *list, unsigned *n)
{
    const cJSON  *c;

    if (cJSON_GetArraySize(list) == 0) {
        return;
    }

    adserve_jsonw_lit(w, "<Creative><CompanionAds>");

    cJSON_ArrayForEach(c, list) {
        adserve_jsonw_lit(w, "<Companion width=\"");
        num(w, number(c, "w", 0));
        adserve_jsonw_lit(w, "\" height=\"");
        num(w, number(c, "h", 0));
        adserve_jsonw_lit(w, "\"><StaticResource creativeType=\"");
        adserve_xml_esc(w, image_type(string(c, "image_url")));
        adserve_jsonw_lit(w, "\">");
        adserve_xml_esc(w, string(c, "image_url"));
        adserve_jsonw_lit(w, "</StaticResource><CompanionClickThrough>");
        adserve_splice_put(w, ADSERVE_SPLICE_CLICK, n);
        adserve_jsonw_lit(w, "</CompanionClickThrough></Companion>");
    }

    adserve_jsonw_lit(w, "</CompanionAds></Creative>");
}


char *
adserve_vast_render(const cJSON *v, const char *title, const char *id, size_t *len,
    unsigned *splices)
{
    const cJSON     *files = cJSON_GetObjectItemCaseSensitive(v, "media_files");
    const char      *tag = string(v, "vast_tag_url");
    double           seconds = number(v, "duration", -1);
    int              duration = seconds >= 0 && seconds <= ADSERVE_VIDEO_DURATION_MAX
                                ? (int) seconds : -1;
    double           skip = number(v, "skip_offset", -1);
    adserve_jsonw_t  w;
    unsigned         n = 0;

    if (!cJSON_IsObject(v) || duration < 0 || duration > ADSERVE_VIDEO_DURATION_MAX
        || (tag == NULL && cJSON_GetArraySize(files) == 0))
    {
        return NULL;
    }

    adserve_jsonw_init(&w);
    adserve_jsonw_lit(&w, "<VAST version=\"4.2\" xmlns=\"http://www.iab.com/VAST\">"
                          "<Ad id=\"");
    adserve_xml_esc(&w, id);
    text(&w, tag ? "\"><Wrapper>" : "\"><InLine>");
    adserve_jsonw_lit(&w, "<AdSystem>adserve</AdSystem><Error>");
    adserve_splice_put(&w, ADSERVE_SPLICE_EVENT + ADSERVE_VIDEO_ERROR, &n);
    adserve_jsonw_lit(&w, "</Error><Impression id=\"adserve\">");
    adserve_splice_put(&w, ADSERVE_SPLICE_IMPRESSION, &n);
    adserve_jsonw_lit(&w, "</Impression>");

    if (tag) {
        adserve_jsonw_lit(&w, "<VASTAdTagURI>");
        adserve_xml_esc(&w, tag);
        adserve_jsonw_lit(&w, "</VASTAdTagURI>");

    } else {
        adserve_jsonw_lit(&w, "<AdServingId>");
        adserve_xml_esc(&w, id);
        adserve_jsonw_lit(&w, "</AdServingId><AdTitle>");
        adserve_xml_esc(&w, title);
        adserve_jsonw_lit(&w, "</AdTitle>");
    }

    adserve_jsonw_lit(&w, "<Creatives><Creative id=\"");
    adserve_xml_esc(&w, id);
    adserve_jsonw_lit(&w, "\"><Linear");

    if (!tag && skip >= 0 && skip <= ADSERVE_VIDEO_DURATION_MAX) {
        adserve_jsonw_lit(&w, " skipoffset=\"");
        timecode(&w, (int) skip);
        adserve_jsonw_lit(&w, "\"");
    }

    adserve_jsonw_lit(&w, ">");

    if (!tag) {
        adserve_jsonw_lit(&w, "<Duration>");
        timecode(&w, duration);
        adserve_jsonw_lit(&w, "</Duration>");
    }

    tracking(&w, duration, &n);

    /* a wrapper's ad brings its own ClickThrough: ours tracks the click */
    text(&w, tag ? "<VideoClicks><ClickTracking>"
                              : "<VideoClicks><ClickThrough>");
    adserve_splice_put(&w, ADSERVE_SPLICE_CLICK, &n);
    text(&w, tag ? "</ClickTracking></VideoClicks>"
                              : "</ClickThrough></VideoClicks>");

    if (!tag) {
        media_files(&w, files);
    }

    adserve_jsonw_lit(&w, "</Linear></Creative>");

    if (!tag) {
        companions(&w, cJSON_GetObjectItemCaseSensitive(v, "companions"), &n);
    }

    text(&w, tag ? "</Creatives></Wrapper></Ad></VAST>"
                              : "</Creatives></InLine></Ad></VAST>");

    if (w.oom) {
        adserve_jsonw_free(&w);
        return NULL;
    }

    *len = w.len;
    *splices = n;

    return w.data;
}


size_t
adserve_splice_path(int kind, char *buf)
{
    int  e, n;

    if (kind & ADSERVE_SPLICE_JSON) {
        kind &= ~ADSERVE_SPLICE_JSON;
        if (kind != ADSERVE_SPLICE_IMPRESSION && kind != ADSERVE_SPLICE_CLICK) {
            return 0;                    /* only these two: no '&' to escape */
        }
    }

    e = kind - ADSERVE_SPLICE_EVENT;

    if (kind == ADSERVE_SPLICE_IMPRESSION) {
        n = snprintf(buf, ADSERVE_SPLICE_PATH_MAX, "%s", ADSERVE_IMPRESSION_PATH);

    } else if (kind == ADSERVE_SPLICE_CLICK) {
        n = snprintf(buf, ADSERVE_SPLICE_PATH_MAX, "%s", ADSERVE_CLICK_PATH);

    } else if (e == ADSERVE_VIDEO_ERROR) {
        /* the player puts its code in the macro; the ad_log ends the URL */
        n = snprintf(buf, ADSERVE_SPLICE_PATH_MAX,
                     ADSERVE_VIDEO_EVENT_PATH "%s?code=[ERRORCODE]&amp;ad_log=",
                     adserve_video_event_names[e]);

    } else if (e >= 0 && e < ADSERVE_VIDEO_ERROR) {
        n = snprintf(buf, ADSERVE_SPLICE_PATH_MAX, ADSERVE_VIDEO_EVENT_PATH "%s?ad_log=",
                     adserve_video_event_names[e]);

    } else {
        return 0;
    }

    return n > 0 && n < ADSERVE_SPLICE_PATH_MAX ? (size_t) n : 0;
}


/* the end of an opening tag <name ...> at p (after "<name"), or NULL: a
 * self-closed one holds nothing, and "<InLineX" is another element */
static const char *
tag_end(const char *p, const char *end)
{
    if (p == end || (*p != '>' && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')) {
        return NULL;
    }

    p = memchr(p, '>', (size_t) (end - p));

    return p != NULL && p[-1] != '/' ? p + 1 : NULL;
}


long
adserve_vast_impression_at(const char *vast, size_t len)
{
    static const char *const  names[] = { "<InLine", "<Wrapper" };
    const char               *end = vast + len, *p, *t;
    size_t                    i, n;

    for (p = vast; p < end && (p = memchr(p, '<', (size_t) (end - p))) != NULL; p++) {
        for (i = 0; i < 2; i++) {
            n = strlen(names[i]);
            if ((size_t) (end - p) > n && memcmp(p, names[i], n) == 0) {
                t = tag_end(p + n, end);
                if (t != NULL) {
                    return (long) (t - vast);
                }
            }
        }
    }

    return -1;
}
