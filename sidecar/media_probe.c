/* Media types and sizes, by libraries and ffprobe (media_probe.h). */
#include "media_probe.h"

#include "log.h"
#include "utf8.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <magic.h>
#include <pthread.h>
#include <stb_image.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <webp/decode.h>

extern char **environ;

/* Choice: the formats every browser shows in an <img> or plays in a
 * <video>. SVG is left out on purpose: it is a document that can carry
 * script, not a picture. */
const struct media_type media_types[] = {
    { "image/png", "png", MEDIA_IMAGE },
    { "image/jpeg", "jpg", MEDIA_IMAGE },
    { "image/gif", "gif", MEDIA_IMAGE },
    { "image/webp", "webp", MEDIA_IMAGE },
    { "video/mp4", "mp4", MEDIA_VIDEO },
    { "video/webm", "webm", MEDIA_VIDEO },
    { NULL, NULL, MEDIA_IMAGE },
};

const char *const media_kind_names[] = { "image", "video", NULL };

/* A magic_t is not safe to share between threads; uploads are rare and
 * a look takes microseconds, so one cookie behind a lock. */
static magic_t cookie;
static pthread_mutex_t cookie_lock = PTHREAD_MUTEX_INITIALIZER;

int media_probe_init(void)
{
    /* MAGIC_NO_CHECK_COMPRESS: never decompress what a client sent to
     * look inside it (the type is the outer one's) */
    cookie = magic_open(MAGIC_MIME_TYPE | MAGIC_NO_CHECK_COMPRESS | MAGIC_ERROR);
    if (cookie == NULL) {
        log_line("media: libmagic: cannot open");
        return -1;
    }
    if (magic_load(cookie, NULL) != 0) {
        log_line("media: libmagic: cannot load its database: %s", magic_error(cookie));
        magic_close(cookie);
        cookie = NULL;
        return -1;
    }
    return 0;
}

void media_probe_shutdown(void)
{
    if (cookie != NULL)
        magic_close(cookie);
    cookie = NULL;
}

int media_sniff(const void *head, size_t n, char mime[MEDIA_MIME_MAX],
                const struct media_type **type)
{
    const char *m;
    int rc = -1;

    *type = NULL;
    mime[0] = '\0';
    if (cookie == NULL || pthread_mutex_lock(&cookie_lock) != 0)
        return -1;
    m = magic_buffer(cookie, head, n);
    if (m != NULL && strlen(m) < MEDIA_MIME_MAX) {
        memcpy(mime, m, strlen(m) + 1);
        rc = 0;
    }
    if (pthread_mutex_unlock(&cookie_lock) != 0)
        return -1;
    for (const struct media_type *t = media_types; rc == 0 && t->mime != NULL; t++)
        if (strcmp(t->mime, mime) == 0)
            *type = t;
    return rc;
}

static int size_ok(struct media_info *info, long w, long h, char *err, size_t errlen)
{
    if (w < 1 || h < 1 || w > MEDIA_SIZE_MAX || h > MEDIA_SIZE_MAX) {
        snprintf(err, errlen, "its size (%ld x %ld) is not 1 to %d pixels each way", w, h,
                 MEDIA_SIZE_MAX);
        return -1;
    }
    info->width = w;
    info->height = h;
    return 0;
}

int media_probe_image(const struct media_type *t, const void *data, size_t n,
                      struct media_info *info, char *err, size_t errlen)
{
    int w = 0, h = 0, comp;

    info->duration = -1;
    if (strcmp(t->mime, "image/webp") == 0) {
        if (!WebPGetInfo(data, n, &w, &h)) {
            snprintf(err, errlen, "libwebp cannot read it as a WebP image");
            return -1;
        }
    } else if (n > INT_MAX || !stbi_info_from_memory(data, (int)n, &w, &h, &comp)) {
        /* only the header is read: the browser decodes the pixels */
        snprintf(err, errlen, "stb_image cannot read its %s header", t->ext);
        return -1;
    }
    return size_ok(info, w, h, err, errlen);
}

/* A video is read by ffprobe (Debian's ffmpeg), run as a program rather
 * than linked: FFmpeg as Debian builds it is GPL, and the product's
 * licence is its owner's choice, which a linked libavformat would make.
 * ffprobe reads only the sniffed type's container (-f), only the file
 * protocol, within PROBE_SECONDS (coreutils' timeout kills it after). */
#define PROBE_SECONDS "10"
#define PROBE_OUTPUT_MAX 65536

/* ffprobe's JSON about path, in out (NUL-ended); 0, or -1 */
static int run_ffprobe(const struct media_type *t, const char *path, char *out, size_t outlen)
{
    char input[PATH_MAX + 8];
    int fds[2], status;
    size_t n = 0;
    ssize_t r;
    pid_t pid;
    posix_spawn_file_actions_t fa;
    /* mp4 is the mov demuxer's name too, webm matroska's */
    const char *const argv[] = {
        "timeout", "-s", "KILL", PROBE_SECONDS, "ffprobe", "-v", "quiet",
        "-protocol_whitelist", "file", "-f", t->ext,
        "-select_streams", "v:0", "-show_entries", "stream=width,height,duration:format=duration",
        "-of", "json", input, NULL,
    };

    if ((size_t)snprintf(input, sizeof input, "file:%s", path) >= sizeof input || pipe(fds) != 0)
        return -1;
    if (posix_spawn_file_actions_init(&fa) != 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    int bad = posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO) |
              posix_spawn_file_actions_addclose(&fa, fds[0]) |
              posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0) |
              posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    int rc = bad ? -1 : posix_spawnp(&pid, "timeout", &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return -1;
    }
    while (n + 1 < outlen && ((r = read(fds[0], out + n, outlen - n - 1)) > 0 || (r < 0 && errno == EINTR)))
        if (r > 0)
            n += (size_t)r;
    out[n] = '\0';
    close(fds[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* a number ffprobe wrote as JSON text ("12.5"), or -1 */
static double seconds(const cJSON *v)
{
    char *end;
    double d = cJSON_IsString(v) ? strtod(v->valuestring, &end) : -1;

    return cJSON_IsString(v) && *end == '\0' && d > 0 ? d : -1;
}

int media_probe_video(const struct media_type *t, const char *path, struct media_info *info,
                      char *err, size_t errlen)
{
    char *out = malloc(PROBE_OUTPUT_MAX);
    cJSON *doc = NULL;
    int rc = -1;

    info->duration = -1;
    if (out == NULL || run_ffprobe(t, path, out, PROBE_OUTPUT_MAX) != 0 ||
        (doc = cJSON_Parse(out)) == NULL) {
        snprintf(err, errlen, "ffprobe cannot read it as %s", t->ext);
        free(out);
        return -1;
    }
    const cJSON *st = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "streams"), 0);
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(st, "width");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(st, "height");
    if (!cJSON_IsNumber(w) || !cJSON_IsNumber(h))
        snprintf(err, errlen, "it holds no video stream");
    else {
        rc = size_ok(info, (long)w->valuedouble, (long)h->valuedouble, err, errlen);
        /* the container's duration, else the stream's */
        info->duration = seconds(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(doc, "format"), "duration"));
        if (info->duration < 0)
            info->duration = seconds(cJSON_GetObjectItemCaseSensitive(st, "duration"));
    }
    cJSON_Delete(doc);
    free(out);
    return rc;
}

bool media_display_name(const char *in, size_t n, char out[MEDIA_NAME_MAX + 1])
{
    const unsigned char *p = (const unsigned char *)in;
    size_t start = 0, used = 0;

    /* a browser may send C:\fakepath\x.png; only the last segment is a name */
    for (size_t i = 0; i < n; i++)
        if (p[i] == '/' || p[i] == '\\')
            start = i + 1;
    for (size_t i = start; i < n;) {
        size_t len = utf8_char(p + i, n - i);
        bool bad = len == 0 || (len == 1 && (p[i] < 0x20 || p[i] == 0x7f ||
                                             strchr("<>\"'`", p[i]) != NULL));
        size_t take = bad ? 1 : len;
        if (used + take > MEDIA_NAME_MAX)
            break;
        if (bad)
            out[used] = '_';
        else
            memcpy(out + used, p + i, len);
        used += take;
        i += bad ? 1 : len;
    }
    out[used] = '\0';
    return used > 0;
}
