/* Uploads of a segment's members (README "Segments"): the body of
 * POST /api/custom-targeting/segments/{id}/members (add) and of
 * DELETE on the same path (remove), one user id a line, taken as it comes
 * (lines.h) and written to each user's memberships in pipelined batches,
 * never kept whole. A malformed line is reported (its number and why, the
 * first SEGMENT_UPLOAD_ERRORS_MAX of them) and skipped; the good ones are
 * written. An upload is idempotent: sent again, it writes the same. */
#ifndef ADSERVE_SEGMENT_UPLOAD_H
#define ADSERVE_SEGMENT_UPLOAD_H

#include "router.h"

#include <stddef.h>

#define SEGMENT_UPLOAD_ERRORS_MAX 100
#define SEGMENT_UPLOAD_MAX_DEFAULT ((size_t)256 * 1024 * 1024)

/* ADSERVE_SEGMENT_UPLOAD_MAX: the largest body, in bytes */
void segment_upload_init(size_t max_bytes);

extern const struct route_stream segment_members_add, segment_members_remove;

#endif
