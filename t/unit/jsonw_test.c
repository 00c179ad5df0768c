/* adserve_jsonw: the build's JSON writer prints what cJSON prints, byte for
 * byte, so a response does not change with the code that rendered it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "adserve_jsonw.h"
#include "tap.h"

static char *cjson_str(const char *s) {
    cJSON *v = cJSON_CreateString(s);
    char *out = cJSON_PrintUnformatted(v);
    cJSON_Delete(v);
    return out;
}

static char *cjson_num(double d) {
    cJSON *v = cJSON_CreateNumber(d);
    char *out = cJSON_PrintUnformatted(v);
    cJSON_Delete(v);
    return out;
}

int main(void) {
    static const char *strs[] = {
        "", "plain", "quote \" and backslash \\", "slash / stays",
        "\b\f\n\r\t", "\x01\x02\x1f control", "\x7f del", "caf\xc3\xa9 \xe2\x82\xac",
        "<script>alert(1)</script>", "https://cdn.example/a.png?x=1&y=2",
    };
    static const double nums[] = {
        0, -0.0, 1, -1, 300, 728, 2147483647, -2147483648.0, 3e9, -3e9, 1e15, 1e20, 4294967296.0,
        0.5, 0.1, 1.0 / 3, 1e300, -1e-300, 123456789.125, 999999999999999.0,
        -999999999999999.0, 1e14, 10, -10, 7, 1e15 - 1, 9007199254740993.0, 0.1 + 0.2,
        1e-7, 2.5e-300 * 1e-10,
    };
    adserve_jsonw_t w;
    char *want;
    size_t i;

    for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
        adserve_jsonw_init(&w);
        adserve_jsonw_str(&w, strs[i]);
        want = cjson_str(strs[i]);
        ok(!w.oom && strcmp(w.data, want) == 0, "string %zu as cJSON prints it: %s", i, want);
        free(want);
        adserve_jsonw_free(&w);
    }

    for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
        adserve_jsonw_init(&w);
        adserve_jsonw_num(&w, nums[i]);
        want = cjson_num(nums[i]);
        ok(!w.oom && strcmp(w.data, want) == 0, "number %zu as cJSON prints it: %s", i, want);
        free(want);
        adserve_jsonw_free(&w);
    }

    adserve_jsonw_init(&w);
    adserve_jsonw_num(&w, NAN);
    adserve_jsonw_lit(&w, ",");
    adserve_jsonw_num(&w, INFINITY);
    adserve_jsonw_lit(&w, ",");
    adserve_jsonw_str(&w, NULL);
    ok(!w.oom && strcmp(w.data, "null,null,null") == 0, "NaN, infinity and no string: null");
    adserve_jsonw_free(&w);

    /* growth past the first block, in one string and in many pieces */
    {
        char *big = malloc(100001);
        size_t n;
        memset(big, '"', 100000);
        big[100000] = '\0';
        adserve_jsonw_init(&w);
        adserve_jsonw_str(&w, big);
        ok(!w.oom && w.len == 200002 && w.data[0] == '"' && w.data[200001] == '"',
           "a string of 100,000 quotes: 200,002 bytes");
        adserve_jsonw_free(&w);
        adserve_jsonw_init(&w);
        for (n = 0; n < 10000; n++) adserve_jsonw_lit(&w, "[1],");
        ok(!w.oom && w.len == 40000 && strlen(w.data) == 40000, "10,000 pieces, NUL-terminated");
        adserve_jsonw_free(&w);
        free(big);
    }

    return done_testing();
}
