/* adserve_native: the match of assets to requests, the template check and
 * both renderings. */

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "adserve_arena.h"
#include "adserve_native.h"
#include "adserve_vast.h"
#include "tap.h"


static void *
arena_cb(void *ctx, size_t size)
{
    return adserve_arena_alloc(ctx, size);
}


typedef struct {
    adserve_arena_t          arena;
    adserve_native_req_t    *reqs;
    uint32_t                 nreqs;
    adserve_native_asset_t  *assets;
    uint32_t                 nassets;
    uint8_t                  pick[ADSERVE_NATIVE_ASSETS_MAX];
} fixture_t;


/* -1 fits, else the request that is not filled (native.h) */
static int
match(fixture_t *f, const char *reqs, const char *native)
{
    cJSON  *r = cJSON_Parse(reqs), *n = cJSON_Parse(native);
    int     rc;

    adserve_arena_init(&f->arena, 4096);
    rc = adserve_native_reqs_read(r, arena_cb, &f->arena, &f->reqs, &f->nreqs) == 0
         && adserve_native_assets_read(n, arena_cb, &f->arena, &f->assets, &f->nassets) == 0
         ? adserve_native_match(f->reqs, f->nreqs, f->assets, f->nassets, f->pick) : -99;
    cJSON_Delete(r);
    cJSON_Delete(n);

    return rc;
}


static int
fits(const char *reqs, const char *native)
{
    fixture_t  f;
    int        rc = match(&f, reqs, native);

    adserve_arena_free(&f.arena);

    return rc;
}


#define CREATIVE \
    "{\"title\":\"Fresh \xc3\xa9t\xc3\xa9 salads\"," \
    "\"images\":[{\"type\":\"icon\",\"url\":\"https://a.example/i.png\",\"w\":80,\"h\":80}," \
    "{\"type\":\"main\",\"url\":\"https://a.example/m.jpg\",\"w\":1200,\"h\":627," \
    "\"mime\":\"image/jpeg\"}]," \
    "\"data\":[{\"type\":\"sponsored\",\"value\":\"Greens & Co\"}," \
    "{\"type\":\"desc\",\"value\":\"<b>crisp</b>\"}]," \
    "\"video\":{\"duration\":15,\"media_files\":[{\"url\":\"https://a.example/v.webm\"," \
    "\"mime\":\"video/webm\",\"w\":640,\"h\":360}]}}"


static void
test_match(void)
{
    fixture_t  f;

    is_int(match(&f, "[{\"id\":1,\"required\":1,\"title\":{\"len\":25}},"
                     "{\"id\":2,\"required\":1,\"img\":{\"type\":3,\"wmin\":600}},"
                     "{\"id\":3,\"data\":{\"type\":2}},"
                     "{\"id\":4,\"data\":{\"type\":12}}]", CREATIVE),
           -1, "every required request filled");
    is_int(f.nassets, 6, "title, two images, two data, a video");
    is_int(f.pick[0], 0, "the title fills the title");
    is_int(f.pick[1], 2, "the main image fills the main image request");
    is_int(f.pick[2], 4, "desc fills the desc request");
    is_int(f.pick[3], ADSERVE_NATIVE_UNFILLED, "no ctatext: that optional request stays empty");
    is_int(f.assets[0].chars, 16, "title length in characters, not bytes");
    adserve_arena_free(&f.arena);

    is_int(fits("[{\"id\":1,\"required\":1,\"title\":{\"len\":10}}]", CREATIVE), 0,
           "a title longer than len does not fit");
    is_int(fits("[{\"id\":1,\"title\":{\"len\":16}}]", CREATIVE), -1,
           "a title of exactly len fits");
    is_int(fits("[{\"id\":1,\"title\":{\"len\":10}},{\"id\":2,\"required\":1,"
                "\"data\":{\"type\":3}}]", CREATIVE), 1,
           "a missing required rating is named");
    is_int(fits("[{\"id\":1,\"title\":{\"len\":10}}]", CREATIVE), 1,
           "nothing filled at all: nreqs");
    is_int(fits("[{\"id\":7,\"required\":1,\"img\":{\"type\":3,\"w\":1200,\"h\":628}}]",
                CREATIVE), 0, "w and h alone are exact");
    is_int(fits("[{\"id\":7,\"required\":1,\"img\":{\"type\":3,\"wmin\":1300}}]", CREATIVE), 0,
           "below wmin does not fit");
    is_int(fits("[{\"id\":7,\"required\":1,\"img\":{\"type\":1,\"mimes\":[\"image/png\"]}}]",
                CREATIVE), 0, "an image without a mime does not fit a request naming mimes");
    is_int(fits("[{\"id\":7,\"required\":1,\"img\":{\"type\":3,\"mimes\":[\"image/JPEG\"]}}]",
                CREATIVE), -1, "mimes compare without case");
    is_int(fits("[{\"id\":1,\"required\":1,\"data\":{\"type\":1,\"len\":5}}]", CREATIVE), 0,
           "data longer than len does not fit");

    is_int(fits("[{\"id\":9,\"required\":1,\"video\":{\"minduration\":5,\"maxduration\":30,"
                "\"mimes\":[\"video/webm\"],\"protocols\":[13]}}]", CREATIVE), -1,
           "the video asset fits: duration, mime, VAST 4.2");
    is_int(fits("[{\"id\":9,\"required\":1,\"video\":{\"minduration\":20,\"maxduration\":30,"
                "\"mimes\":[\"video/webm\"],\"protocols\":[13]}}]", CREATIVE), 0,
           "a video shorter than minduration does not");
    is_int(fits("[{\"id\":9,\"required\":1,\"video\":{\"minduration\":5,\"maxduration\":30,"
                "\"mimes\":[\"video/mp4\"],\"protocols\":[13]}}]", CREATIVE), 0,
           "nor one without an accepted mime");
    is_int(fits("[{\"id\":9,\"required\":1,\"video\":{\"minduration\":5,\"maxduration\":30,"
                "\"mimes\":[\"video/webm\"],\"protocols\":[2,3]}}]", CREATIVE), 0,
           "nor one for a VAST 2/3 player");

    is_int(fits("[{\"id\":1,\"required\":1,\"title\":{\"len\":90}},"
                "{\"id\":2,\"required\":1,\"title\":{\"len\":90}}]", CREATIVE), 1,
           "an asset fills one request only");
}


static void
test_check(void)
{
    size_t       at;
    const char  *why;

    ok(adserve_native_template_check(
           "<div class=\"ad\"><a href=\"{{click_url}}\"><img src='{{img.main}}' alt=\"\">"
           "<h3>{{title}}</h3></a><p>{{data.desc}} &lt; {{data.sponsored}}</p>"
           "<!-- a comment --><script>var a = 1 < 2;</script></div>",
           ".ad { color: #333 }", &at) == NULL, "a valid style passes");

    why = adserve_native_template_check("<p>{{nope}}</p>", NULL, &at);
    ok(why && strstr(why, "unknown placeholder") && at == 3, "an unknown placeholder, at 3");
    ok(adserve_native_template_check("<a href={{click_url}}>x</a>", NULL, &at) != NULL,
       "a URL placeholder outside quotes");
    ok(adserve_native_template_check("<p>{{img.main}}</p>", NULL, &at) != NULL,
       "a URL placeholder in text");
    ok(adserve_native_template_check("<a title=\"{{title}}\">x</a>", NULL, &at) != NULL,
       "a text placeholder in an attribute");
    ok(adserve_native_template_check("<div onclick=\"{{title}}\"></div>", NULL, &at) != NULL,
       "a text placeholder in an event handler");
    ok(adserve_native_template_check("<script>x = '{{title}}'</script>", NULL, &at) != NULL,
       "a placeholder inside <script>");
    ok(adserve_native_template_check("<STYLE>a{}</STYLE><style>b{content:'{{title}}'}</style>",
                                     NULL, &at) != NULL, "a placeholder inside <style>");
    ok(adserve_native_template_check("<script src=\"{{img.main}}\"></script>", NULL, &at)
       != NULL, "a placeholder in a script's own tag");
    ok(adserve_native_template_check("<!-- {{title}} -->", NULL, &at) != NULL,
       "a placeholder in a comment");
    ok(adserve_native_template_check("<p>{{title</p>", NULL, &at) != NULL,
       "an unclosed placeholder");
    ok(adserve_native_template_check("<p class=\"a\"", NULL, &at) != NULL, "an unclosed tag");
    ok(adserve_native_template_check("<p></p>", "a{}</style><script>", &at) != NULL,
       "css that would close its <style>");
    why = adserve_native_template_check("<p>\x01" "c</p>", NULL, &at);
    ok(why && strstr(why, "control") && at == 3, "a control byte (the splice byte), at 3");
    ok(adserve_native_template_check("<p></p>", "a{}\x01", &at) != NULL, "... in css too");
    ok(adserve_native_template_check("<p>\t\r\n</p>", NULL, &at) == NULL, "tab, CR, LF are fine");
    ok(adserve_native_template_check("<!--><a onclick=\"-->{{title}}\">x</a>", NULL, &at) != NULL,
       "<!--> ends at once, as a browser reads it");
    ok(adserve_native_template_check("<!---><a onclick=\"-->{{title}}\">x</a>", NULL, &at)
       != NULL, "... and so does <!--->");
    ok(adserve_native_template_check("<img alt=it\"s src={{img.main}} x=\">", NULL, &at) != NULL,
       "a quote inside an unquoted value opens nothing");
    ok(adserve_native_template_check("<img src = \"{{img.main}}\" alt=x>", NULL, &at) == NULL,
       "spaces around '=' are fine");
}


static void
test_render(void)
{
    fixture_t        f;
    adserve_jsonw_t  w;
    cJSON           *o, *a;
    unsigned         n;

    match(&f, "[{\"id\":1,\"required\":1,\"title\":{\"len\":25}},"
              "{\"id\":5,\"data\":{\"type\":2}}]", CREATIVE);

    adserve_jsonw_init(&w);
    n = adserve_native_render_html(&w, "<a href=\"{{click_url}}\"><h3>{{title}}</h3>"
                                       "<p>{{data.desc}}</p><i>{{data.sponsored}}</i>"
                                       "<b>{{data.price}}</b></a>",
                                   ".x{}", f.assets, f.nassets);
    is_int(n, 1, "html: one splice, the click");
    ok(w.data && strstr(w.data, "<style>.x{}</style>") == w.data, "the css first");
    ok(w.data && strstr(w.data, "<p>&lt;b&gt;crisp&lt;/b&gt;</p>") != NULL,
       "markup in a value is escaped");
    ok(w.data && strstr(w.data, "<i>Greens &amp; Co</i>") != NULL, "and so is &");
    ok(w.data && strstr(w.data, "<b></b>") != NULL, "a value the creative lacks is empty");
    ok(w.data && strstr(w.data, "href=\"\x01" "c\"") != NULL, "the click is a splice");
    adserve_jsonw_free(&w);

    adserve_jsonw_init(&w);
    n = adserve_native_render_assets(&w, f.reqs, f.nreqs, f.assets, f.pick, NULL, 0, 0);
    is_int(n, 2, "asset mode: the link and the tracker");
    ok(w.data && strstr(w.data, "\"url\":\"\x01\xe3\"") != NULL, "a JSON click splice");
    ok(w.data && strstr(w.data, "\"url\":\"\x01\xe9\"") != NULL,
       "a JSON impression splice");
    adserve_jsonw_free(&w);

    /* with the splices as empty strings it is JSON: check its shape */
    adserve_jsonw_init(&w);
    f.pick[0] = 0;
    adserve_native_render_assets(&w, f.reqs, f.nreqs, f.assets, f.pick, NULL, 0, 0);
    for (char *p = w.data; p && (p = strchr(p, '\x01')) != NULL; ) {
        memmove(p, p + 2, strlen(p + 2) + 1);
    }
    o = w.data ? cJSON_Parse(w.data) : NULL;
    a = cJSON_GetObjectItem(o, "assets");
    ok(o != NULL, "asset mode is JSON");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(o, "ver")), "1.2", "ver 1.2");
    is_int(cJSON_GetArraySize(a), 2, "two assets");
    is_int((long long) cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(a, 1), "id")),
           5, "under the request's id");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(
               cJSON_GetArrayItem(a, 1), "data"), "value")), "<b>crisp</b>",
           "the value as it is: JSON, not HTML");
    cJSON_Delete(o);
    adserve_jsonw_free(&w);
    adserve_arena_free(&f.arena);
}


int
main(void)
{
    test_match();
    test_check();
    test_render();

    return done_testing();
}
