/* What an uploaded file is, from its bytes alone (README "Media library"):
 * its type by libmagic on its first bytes, never by its name or the type
 * the client claimed; then its size, and a video's duration, by a library
 * that reads that type: stb_image (PNG, JPEG, GIF), libwebp (WebP),
 * ffprobe, a program (MP4, WebM). No parser of our own reads the files. */
#ifndef ADSERVE_MEDIA_PROBE_H
#define ADSERVE_MEDIA_PROBE_H

#include <stdbool.h>
#include <stddef.h>

/* the bytes the type is read from: every allowed type says what it is in
 * its first few (a signature, a box, an EBML header) */
#define MEDIA_SNIFF_BYTES 65536
#define MEDIA_MIME_MAX 96               /* a type libmagic names, NUL included */
#define MEDIA_NAME_MAX 255              /* a display name, in bytes */
#define MEDIA_SIZE_MAX 65535            /* pixels, each way */

enum media_kind { MEDIA_IMAGE, MEDIA_VIDEO };

struct media_type {
    const char *mime;                   /* "image/png" */
    const char *ext;                    /* "png": the stored file's */
    enum media_kind kind;
};

/* the allowed types, up to a row with mime NULL */
extern const struct media_type media_types[];
extern const char *const media_kind_names[];   /* "image", "video"; NULL-ended */

struct media_info {
    long width, height;
    double duration;                    /* seconds; < 0: unknown (or an image) */
};

/* libmagic with its database, loaded once: 0, or -1 (logged). */
int media_probe_init(void);
void media_probe_shutdown(void);

/* The type of head (a file's first n bytes) as libmagic names it, in mime,
 * and the allowed type it is in *type (NULL when none). 0, or -1 when
 * libmagic failed. Any thread. */
int media_sniff(const void *head, size_t n, char mime[MEDIA_MIME_MAX],
                const struct media_type **type);

/* An image's width and height from the whole file's bytes. 0, or -1 with
 * why in err (the file is not one its type's library can read). */
int media_probe_image(const struct media_type *t, const void *data, size_t n,
                      struct media_info *info, char *err, size_t errlen);

/* A video's width, height and duration, from the file at path, by
 * ffprobe, read only as its type's container (no other demuxer, no
 * protocol but file), within 10 s. */
int media_probe_video(const struct media_type *t, const char *path, struct media_info *info,
                      char *err, size_t errlen);

/* A client's file name as a display name: its last path segment, UTF-8
 * kept, invalid bytes, controls and "/\<>\"'` made '_', cut to
 * MEDIA_NAME_MAX bytes on a character boundary. False when nothing is
 * left (out empty). out holds MEDIA_NAME_MAX + 1 bytes. */
bool media_display_name(const char *in, size_t n, char out[MEDIA_NAME_MAX + 1]);

#endif
