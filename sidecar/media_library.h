/* The media library's files and records (README "Media library").
 *
 * A file is stored once per content, as <sha256 hex>.<ext of its type> in
 * the media folder that nginx serves under /media/; no part of the name
 * comes from the client. A record (ADSERVE_KEY_MEDIA) is an item of one
 * owner, an advertiser or the house (advertiser_id null): the same bytes
 * uploaded again by the same owner are the same item, by another owner
 * another item on the same file. The file goes with the last item that
 * names it. Items and files change under one lock, so that a delete never
 * takes the file an upload of the same bytes has just kept. */
#ifndef ADSERVE_MEDIA_LIBRARY_H
#define ADSERVE_MEDIA_LIBRARY_H

#include "http.h"
#include "media_probe.h"

#include <stddef.h>

#define MEDIA_IMAGE_MAX_DEFAULT ((size_t)10 * 1024 * 1024)
#define MEDIA_VIDEO_MAX_DEFAULT ((size_t)100 * 1024 * 1024)
#define MEDIA_SHA256_HEX 65             /* 64 digits + NUL */
#define MEDIA_PATH_MAX 4096

/* The folder (made 0755 when missing; uploads a crash left behind are
 * removed), the limits of each kind, and libmagic. 0, or -1 (logged). */
int media_library_init(const char *dir, size_t image_max, size_t video_max);
void media_library_shutdown(void);

const char *media_library_dir(void);
size_t media_library_limit(enum media_kind kind);
/* the larger limit: what a body may be before its type is known */
size_t media_library_max(void);

/* An upload, read whole into tmp_path (a file of the media folder). */
struct media_upload {
    const char *advertiser_id;          /* the owner; NULL: the house */
    const char *sha256;                 /* hex */
    const struct media_type *type;
    size_t bytes;
    struct media_info info;
    const char *name;                   /* display name, or NULL */
    const char *tmp_path;
};

/* Keeps the upload: the owner's item of these bytes when there is one
 * (200, the file kept), else a new item (201) written with its audit
 * record; tmp_path is renamed or removed either way. Answers rep. */
void media_library_add(struct request *req, struct reply *rep, const struct media_upload *u);

/* DELETE /api/media/{id}: 409 naming the creatives that use the item,
 * else the item goes (with its audit record) and its file with the last
 * item that names it. Answers rep. */
void media_library_delete(struct request *req, struct reply *rep);

/* the record's shape, and the items as a resource (lists, reads, and a
 * creative's media_id reference): api_media.c */
extern const struct schema schema_media_item;
struct resource;
extern const struct resource resource_media;

#endif
