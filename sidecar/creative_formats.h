/* The rules of a creative's video and native content (api_creatives.c's
 * check hook calls them once the type's field is there). */
#ifndef ADSERVE_CREATIVE_FORMATS_H
#define ADSERVE_CREATIVE_FORMATS_H

#include "resource.h"

/* A video plays something: its own media files, or a third-party VAST tag
 * (then nothing else: the tag's ad brings its files). path names the
 * object in the 422 ("video", "native.video"). */
enum store_status creative_video_check(struct resource_write *w, const cJSON *video,
                                       const char *path);

/* A native creative has an asset at least, one data asset of a type at
 * most, a video asset that plays, and every asset its native format (if
 * it names one) requires, by the engine's own match (adserve_native.h). */
enum store_status creative_native_check(struct resource_write *w);

#endif
