/* POST /api/media: an upload to the media library (README "Media
 * library"), taken as it comes (router.h's BODY_STREAM), never kept whole:
 * the file's bytes, raw (Content-Type: one of the allowed types, or
 * application/octet-stream) or as the part named "file" of a
 * multipart/form-data body, go to a temporary file of the media folder
 * and through SHA-256 as they arrive. Their first MEDIA_SNIFF_BYTES say
 * their type (whatever the request claimed): another type stops the upload
 * (415), and so does a file past its kind's limit (413). At the end the
 * type's library reads its size, and media_library_add keeps it. The query
 * may say advertiser_id (the owner; an advertiser's own is the only one it
 * may name) and name (a display name; else the multipart part's file
 * name). */
#ifndef ADSERVE_MEDIA_UPLOAD_H
#define ADSERVE_MEDIA_UPLOAD_H

#include "router.h"
#include "schema.h"

extern const struct route_stream media_upload_stream;
extern const struct schema schema_media_upload_query;

#endif
