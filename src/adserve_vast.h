/*
 * adserve_vast: a VIDEO creative's VAST 4.2 document, rendered once by the
 * snapshot build (README "Video").
 *
 * Where one of our URLs goes (the impression, the click, each tracking
 * event, the error), the text holds a splice: ADSERVE_SPLICE and a kind
 * byte. Serving writes there the ad unit's base URL, the event's path and
 * the request's ad_log (adserve_splice_path), so one rendering serves every
 * ad unit and every request. Everything else is escaped XML text: a field
 * of the creative can never add markup.
 *
 * Plain C, no nginx types.
 */

#ifndef ADSERVE_VAST_H
#define ADSERVE_VAST_H

#include <stddef.h>

#include "adserve_contract.h"

struct cJSON;

#include "adserve_jsonw.h"

#define ADSERVE_SPLICE             '\x01'
#define ADSERVE_SPLICE_IMPRESSION  'i'
#define ADSERVE_SPLICE_CLICK       'c'
#define ADSERVE_SPLICE_EVENT       'A'      /* + adserve_video_event_e */
/* or'ed into a kind: the URL sits in JSON text, not XML (a native ad's
 * link and tracker): its base is escaped for JSON alone, and so is its
 * path */
#define ADSERVE_SPLICE_JSON        0x80

/* The longest path a splice writes after the base URL, and before the
 * ad_log. */
#define ADSERVE_SPLICE_PATH_MAX    80

/* The VAST document of a video (a VIDEO creative's "video" object, or a
 * NATIVE one's video asset, as the API stores it): an InLine ad of its
 * media files, or a Wrapper of its vast_tag_url; title is the creative's
 * name. malloc'd and NUL-terminated, its length in *len and its splices
 * in *splices; NULL when the video cannot be one (no object, nothing to
 * play), or out of memory. */
char *adserve_vast_render(const struct cJSON *video, const char *title, const char *id,
    size_t *len, unsigned *splices);

/* XML text or attribute value, into w: the five special characters as
 * entities; control characters XML 1.0 cannot hold are dropped (the API
 * lets none through a URL, but a name is free text). */
void adserve_xml_esc(adserve_jsonw_t *w, const char *s);

/* Writes a splice of kind into w and counts it in *n. */
void adserve_splice_put(adserve_jsonw_t *w, int kind, unsigned *n);

/* The path a splice of kind writes after the base URL, up to the ad_log's
 * "=", XML-escaped (it sits in XML text) unless kind has
 * ADSERVE_SPLICE_JSON: into buf (ADSERVE_SPLICE_PATH_MAX bytes), its
 * length returned; 0 for an unknown kind. */
size_t adserve_splice_path(int kind, char *buf);

/* Where an Impression of ours goes in a VAST from outside (a bid's
 * markup): just after the opening tag of its first InLine or Wrapper ad.
 * The offset, or -1 when the text has neither (not a VAST whose
 * impressions could be counted here). */
long adserve_vast_impression_at(const char *vast, size_t len);

#endif
