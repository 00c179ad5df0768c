/* libFuzzer: what the media library makes of an upload's bytes
 * (sidecar/media_probe.h): the type libmagic finds in any bytes, then, for
 * an allowed image type, the size its library reads from them (stb_image,
 * libwebp), and the display name made of any file name. Each must end
 * without a fault; a size is 1 to MEDIA_SIZE_MAX each way; a name is at
 * most MEDIA_NAME_MAX bytes of UTF-8 with none of the bytes it drops.
 * (Videos are read from a file by ffprobe, which OSS-Fuzz fuzzes.) */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "media_probe.h"


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void) argc;
    (void) argv;

    if (media_probe_init() != 0) {
        abort();
    }

    return 0;
}


static void
check_name(const uint8_t *data, size_t size)
{
    char    name[MEDIA_NAME_MAX + 1];
    size_t  i, len;

    if (media_display_name((const char *) data, size, name) != (name[0] != '\0')) {
        abort();
    }

    len = strlen(name);
    if (len > MEDIA_NAME_MAX) {
        abort();
    }

    for (i = 0; i < len; i++) {
        unsigned char  c = (unsigned char) name[i];

        if (c < 0x20 || c == 0x7f || strchr("/\\<>\"'`", c) != NULL) {
            abort();
        }
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char                      mime[MEDIA_MIME_MAX];
    uint8_t                  *copy;
    const struct media_type  *type;
    struct media_info         info;
    char                      err[160];

    /* in its own buffer: ASan sees a read past the upload's bytes */
    copy = malloc(size ? size : 1);
    if (copy == NULL) {
        abort();
    }
    memcpy(copy, data, size);

    check_name(copy, size);

    if (media_sniff(copy, size, mime, &type) == 0 && type != NULL
        && type->kind == MEDIA_IMAGE
        && media_probe_image(type, copy, size, &info, err, sizeof(err)) == 0
        && (info.width < 1 || info.height < 1
            || info.width > MEDIA_SIZE_MAX || info.height > MEDIA_SIZE_MAX))
    {
        abort();
    }

    free(copy);

    return 0;
}
