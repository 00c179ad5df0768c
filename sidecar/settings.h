/* The global settings (README "Settings"): one record, field
 * ADSERVE_SETTINGS_ID of the hash ADSERVE_KEY_SETTINGS, written by
 * PATCH /api/settings. Serving reads it like any record it follows (its
 * public_url, within a refresh); the sidecar reads it where it writes a
 * URL of its own (reset mails, integration tags). */
#ifndef ADSERVE_SETTINGS_H
#define ADSERVE_SETTINGS_H

#include "schema.h"
#include "store.h"

#include <cJSON.h>

/* the stored record's shape, and the output's */
extern const struct schema schema_settings;
/* a PATCH's body: the same fields, each optional */
extern const struct schema schema_settings_patch;

/* The stored settings with every default filled in (all defaults when
 * none were ever written): a new object in *out on STORE_OK. */
enum store_status settings_load(struct store_conn *c, cJSON **out);

/* The base of the URLs the sidecar writes: the settings' public_url, or
 * ADSERVE_PUBLIC_URL when it is null. Copied into out (at least
 * ADSERVE_PUBLIC_URL_MAX + 1 bytes). */
enum store_status settings_public_url(struct store_conn *c, char *out, size_t outlen);

#endif
