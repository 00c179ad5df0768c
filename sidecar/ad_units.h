/* Ad units in Redis, shared by /api/ad-units and the developer endpoint.
 *
 * Keys (README data contract, plus the sidecar's own indexes):
 *   adserve:ad_units                  hash: id -> the AdUnit JSON (response shape)
 *   adserve:ad_unit_codes             hash: code -> id (codes are unique)
 *   adserve:ad_unit_children:{id}     set: ids of the direct children
 *
 * Every write is optimistic: WATCH the hash and the code index, read,
 * check, then one MULTI/EXEC (txn.h) with the records, the indexes, one
 * audit record per changed ad unit and the revision bump. A concurrent
 * write to any ad unit makes EXEC fail and the attempt is run again, so a
 * path is never computed from a parent that moved meanwhile. */
#ifndef ADSERVE_AD_UNITS_H
#define ADSERVE_AD_UNITS_H

#include "http.h"
#include "schema.h"
#include "txn.h"

#include <cJSON.h>

#define AD_UNIT_CHILDREN_KEY_LEN (sizeof ADSERVE_KEY_AD_UNIT_CHILDREN + UUID_STR_LEN)

/* The ad unit id of path segment name, lower-cased, in out; false (and a
 * 404 in rep) when it is not a UUID: such an ad unit cannot exist. */
bool ad_unit_path_id(struct request *req, struct reply *rep, const char *name,
                     char out[UUID_STR_LEN]);

/* The ad unit of path segment name (its id in id), loaded; NULL, with the
 * 404 or the store's error in rep, when there is none. */
cJSON *ad_unit_of_path(struct request *req, struct reply *rep, const char *name,
                       char id[UUID_STR_LEN]);

/* WATCH of every key an ad unit write reads. */
enum store_status ad_units_watch(struct store_conn *c);

/* The stored JSON of id; STORE_NOT_FOUND when there is none. */
enum store_status ad_unit_load(struct store_conn *c, const char *id, cJSON **unit);

/* The children set's key of id. */
void ad_unit_children_key(char key[AD_UNIT_CHILDREN_KEY_LEN], const char *id);

/* Sets updated_at (and created_at when absent) to now and is_active from
 * status, and returns the unit in the response shape's field order (a new
 * object; the argument is freed). NULL on failure. */
cJSON *ad_unit_finish(cJSON *unit);

/* Every worker of every node holds every ad unit, and the audit log two
 * copies per change: a record may take at most this much once stored
 * (free-form members such as ext.passback could otherwise fill Redis). */
#define AD_UNIT_MAX_BYTES 65536

/* True when the normalised unit can be stored: its recommendation's
 * content_filter_rule compiles as serving compiles it, its snapshot
 * fallbacks' paths stay in their folder, its ext.target_service is a name
 * serving can call, and it fits AD_UNIT_MAX_BYTES;
 * else a 422 (or a 500 out of memory) in rep. */
bool ad_unit_fits(const cJSON *unit, struct reply *rep);

/* Adds the HSET of unit and its audit record to t. */
void ad_unit_txn_put(struct txn *t, const struct user *actor, const char *action,
                     const cJSON *before, const cJSON *after);

/* One attempt of a write: reads after ad_units_watch, then answers in rep
 * and returns STORE_OK, or returns STORE_CONFLICT (a watched key moved:
 * the attempt runs again) or another failure (answered by the caller). */
typedef enum store_status ad_unit_attempt(struct request *req, struct reply *rep, void *arg);

/* Runs attempt until it is not a conflict, a few times at most. */
void ad_unit_write(struct request *req, struct reply *rep, ad_unit_attempt *attempt, void *arg);

/* The string member name of o, or NULL (also when it is null). */
const char *ad_unit_str(const cJSON *o, const char *name);

#endif
