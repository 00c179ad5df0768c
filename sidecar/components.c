/* The components table (components.h). Versions are the libraries' own
 * answers at run time, where the library gives one and the sidecar links
 * it; the module's and the servers' are their packages'. */
#include "components.h"

#include <cJSON.h>
#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <microhttpd.h>
#include <sodium.h>

#define STRINGIZE(x) #x
#define VERSION_OF(x) STRINGIZE(x)

static const char *hiredis_version(void)
{
    return VERSION_OF(HIREDIS_MAJOR) "." VERSION_OF(HIREDIS_MINOR) "." VERSION_OF(HIREDIS_PATCH);
}

static const char *curl_version_text(void)
{
    return curl_version_info(CURLVERSION_NOW)->version;
}

const struct component components[] = {
    { "hiredis", "BSD-3-Clause", "libhiredis0.14", "sidecar, module", hiredis_version },
    { "libmicrohttpd", "LGPL-2.1-or-later", "libmicrohttpd12", "sidecar", MHD_get_version },
    { "cjson", "MIT", "libcjson1", "sidecar, module", cJSON_Version },
    { "libsodium", "ISC", "libsodium23", "sidecar", sodium_version_string },
    { "libcurl", "curl", "libcurl4", "sidecar", curl_version_text },
    { "libjwt", "MPL-2.0", "libjwt0", "sidecar", NULL },
    { "openssl", "Apache-2.0", "libssl3", "sidecar, module", NULL },
    /* the media library's: types, images' sizes, videos'. Debian builds
     * FFmpeg with --enable-gpl, which makes its libraries GPL as shipped */
    { "libmagic", "BSD-2-Clause", "libmagic1", "sidecar", NULL },
    { "stb_image", "MIT OR Unlicense", "libstb0", "sidecar", NULL },
    { "libwebp", "BSD-3-Clause", "libwebp7", "sidecar", NULL },
    /* a program the sidecar runs, not a library it links */
    { "ffprobe", "GPL-2.0-or-later", "ffmpeg", "sidecar (runs it)", NULL },
    { "nginx", "BSD-2-Clause", "nginx", "node", NULL },
    { "redis", "BSD-3-Clause", "redis-server", "node", NULL },
};
const size_t components_count = sizeof components / sizeof components[0];
