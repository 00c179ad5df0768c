/* The demand model's resources as table rows: one generic implementation of
 * list, create, get, update (PATCH) and delete, driven by a struct resource
 * per resource (api_advertisers.c, api_orders.c, ...).
 *
 * A resource names its Redis hash (id -> the record's JSON, the response
 * shape), its schema (schema.h: the POST body, the PATCH body applied
 * SCHEMA_PARTIAL, and the stored shape), and its rules as data:
 *   - owner: which records an advertiser user may see and change;
 *   - refs: fields naming records of other resources (422 when unknown or
 *     not visible to the caller, 409 under a parent in its frozen state);
 *   - immutable: fields that PATCH may only repeat (409 otherwise);
 *   - states: the state field, its initial states, its transitions and
 *     who may make them (409 / 403), the frozen state, the deletable ones;
 *   - uniques: hashes mapping a value (or a pair) to the one record with
 *     it (409 on a duplicate);
 *   - indexes: a set per referenced id of the records referring to it,
 *     which lists read to avoid a scan and dependents count;
 *   - dependents: indexes that must be empty for a delete (409);
 *   - check: the resource's own rules, a hook run after all of the above.
 *
 * Every write is one optimistic attempt after WATCH of every key the
 * resource's rules read (watch), with one MULTI/EXEC (txn.h) holding the
 * record, its uniques and indexes, its audit record and, for the hashes
 * serving reads, the revision bump; a conflict runs the attempt again. */
#ifndef ADSERVE_RESOURCE_H
#define ADSERVE_RESOURCE_H

#include "http.h"
#include "schema.h"
#include "txn.h"

#include <cJSON.h>
#include <stdbool.h>

/* Which records an advertiser user sees. Admins and operators see all. */
enum resource_owner {
    OWNER_NONE,          /* inventory: none (403 on collections, 404 on ids) */
    OWNER_SELF,          /* the advertiser record: its own, read-only */
    OWNER_FIELD,         /* records whose advertiser_id is its own */
};

struct resource;

struct resource_ref {
    const char *field;                  /* a string id, or an array of ids */
    const struct resource *target;
    bool inherit_owner;                 /* copy the target's advertiser_id */
};

/* A set per referenced id: key prefix + id -> ids of the records whose
 * field (a top-level name or "a.b"; a string or an array of strings)
 * names it. */
struct resource_index {
    const char *field;
    const char *prefix;
};

/* Records that keep this one from being deleted: the set (or hash) at
 * prefix + this record's id must be empty. */
struct resource_dependent {
    const char *prefix;
    bool is_hash;                       /* HLEN rather than SCARD */
    const char *what;                   /* "line items", in the 409 */
};

/* fields' values joined by ':' -> record id, in hash (+ the parent id
 * when per_parent); 409 detail on a duplicate. A field absent or null
 * makes no entry, unless null_as names the word that stands for it (a
 * block of every ad unit is as unique as one of a single unit). */
struct resource_unique {
    const char *hash;
    bool per_parent;
    const char *fields[5];              /* NULL-ended */
    const char *detail;
    const char *null_as;
};

struct resource_transition {
    const char *from;                   /* NULL: any state */
    const char *to;
    unsigned roles;                     /* who may; 0: anyone who may write */
};

struct resource_states {
    const char *field;                  /* "status" */
    const char *const *initial;         /* allowed at creation; NULL: any */
    const struct resource_transition *transitions;  /* NULL: any change */
    const char *frozen;                 /* nothing changes in it; NULL: none */
    const char *const *deletable;       /* states a delete may leave; NULL: any */
};

/* ?name= of a list: the record's field equals the value (a string field)
 * or contains it (an array field); search: a case-insensitive substring.
 * With index, the index's set of that id is read instead of the hash. */
struct resource_filter {
    const char *param;
    const char *field;
    const char *index;                  /* an index prefix, or NULL */
    bool search;
};

#define RESOURCE_MAX_REFS 4             /* rows of a refs table */

/* One write attempt, as the check hook sees it. */
struct resource_write {
    const struct resource *res;
    struct request *req;
    struct reply *rep;                  /* answering stops the write */
    struct store_conn *c;
    const char *advertiser;             /* an advertiser caller's advertiser_id, else NULL */
    const char *parent_id;              /* the path's parent id, or NULL */
    const cJSON *changes;               /* the normalised input */
    cJSON *before;                      /* NULL on create */
    cJSON *after;                       /* the record to write; hooks may change it */
    cJSON *loaded[RESOURCE_MAX_REFS];   /* the string refs read this attempt, by row */
    struct txn txn;
    bool sent;                          /* EXEC was sent (no UNWATCH needed) */
};

typedef enum store_status resource_check(struct resource_write *w);

struct resource {
    const char *name;                   /* audit records: "line_item" */
    const char *label;                  /* messages: "line item" */
    const char *hash;                   /* or the prefix of one per parent */
    const char *location;               /* "/api/line-items" + "/" + id */
    const struct schema *schema;
    const struct schema *list_query;
    const struct resource_filter *filters;      /* up to a row with param NULL */
    bool serving;                       /* serving reads the hash: bump adserve:rev */
    enum resource_owner owner;
    const char *parent_param;           /* a path {param}, also the record's field */
    const struct resource *parent;
    const char *const *watch;           /* keys the rules read (NULL-ended) */
    const char *const *immutable;
    const struct resource_ref *refs;
    const struct resource_index *indexes;
    const struct resource_dependent *dependents;
    const struct resource_unique *uniques;
    const struct resource_states *states;
    resource_check *check;
};

/* The route handlers. */
void resource_list(const struct resource *res, struct request *req, struct reply *rep);
void resource_get(const struct resource *res, struct request *req, struct reply *rep);
void resource_delete_route(const struct resource *res, struct request *req, struct reply *rep);

/* Create and update from a body not yet checked (req->json, or a batch
 * item's data), and delete by id: what the routes and batches share. The
 * answer is in rep, as the route would give it. */
void resource_create(const struct resource *res, struct request *req, struct reply *rep,
                     const cJSON *body);
void resource_update(const struct resource *res, struct request *req, struct reply *rep,
                     const char *id, const cJSON *body);
void resource_delete(const struct resource *res, struct request *req, struct reply *rep,
                     const char *id);

/* The five handlers of a resource, for its route rows (whose literal rows
 * stay in each api_*.c, where the OpenAPI test reads them). */
#define RESOURCE_HANDLERS(prefix, res)                                                   \
    static void prefix##_list(struct request *req, struct reply *rep)                    \
    {                                                                                    \
        resource_list(&(res), req, rep);                                                 \
    }                                                                                    \
    static void prefix##_create(struct request *req, struct reply *rep)                  \
    {                                                                                    \
        resource_create(&(res), req, rep, req->json);                                    \
    }                                                                                    \
    static void prefix##_get(struct request *req, struct reply *rep)                     \
    {                                                                                    \
        resource_get(&(res), req, rep);                                                  \
    }                                                                                    \
    static void prefix##_update(struct request *req, struct reply *rep)                  \
    {                                                                                    \
        char id_[UUID_STR_LEN];                                                          \
        if (!request_uuid_param(req, "id", id_))                                         \
            reply_error(rep, 404, "%s not found", (res).label);                          \
        else                                                                             \
            resource_update(&(res), req, rep, id_, req->json);                           \
    }                                                                                    \
    static void prefix##_delete(struct request *req, struct reply *rep)                  \
    {                                                                                    \
        resource_delete_route(&(res), req, rep);                                         \
    }

/* The route_docs of the five routes (prefix##_list_doc, ...). */
extern const int resource_list_errors[], resource_create_errors[], resource_get_errors[],
    resource_update_errors[], resource_delete_errors[];
#define RESOURCE_DOCS(prefix, tag_, shape_, patch_, query_, list_s, create_s, get_s, update_s,     \
                      delete_s)                                                                 \
    static const struct route_doc prefix##_list_doc = {                                         \
        .tag = tag_, .summary = list_s, .response = &(shape_), .status = 200, .list = true,      \
        .query = &(query_), .errors = resource_list_errors,                                      \
    };                                                                                          \
    static const struct route_doc prefix##_create_doc = {                                       \
        .tag = tag_, .summary = create_s, .request = &(shape_), .response = &(shape_),            \
        .status = 201, .errors = resource_create_errors,                                        \
    };                                                                                          \
    static const struct route_doc prefix##_get_doc = {                                          \
        .tag = tag_, .summary = get_s, .response = &(shape_), .status = 200,                     \
        .errors = resource_get_errors,                                                          \
    };                                                                                          \
    static const struct route_doc prefix##_update_doc = {                                       \
        .tag = tag_, .summary = update_s, .request = &(patch_), .response = &(shape_),            \
        .status = 200, .errors = resource_update_errors,                                        \
    };                                                                                          \
    static const struct route_doc prefix##_delete_doc = {                                       \
        .tag = tag_, .summary = delete_s, .status = 204, .errors = resource_delete_errors,      \
    }

/* ---- for check hooks ------------------------------------------------------------- */

/* The caller's role bit (users.h). */
unsigned resource_role(const struct request *req);

/* An advertiser caller's advertiser_id ("" when its user has none, which
 * then owns nothing); NULL for admins and operators, who see everything. */
const char *resource_caller_advertiser(const struct request *req);

/* Whether that caller may see what advertiser (an advertiser_id, or NULL
 * when unknown) owns. */
bool resource_owned_by(const char *caller, const char *advertiser);

/* Answers status {detail} and returns STORE_OK: a hook's refusal. */
enum store_status resource_refuse(struct resource_write *w, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The record of ref row field read by this attempt (on create, or when the
 * field changed), else NULL. */
const cJSON *resource_loaded(const struct resource_write *w, const char *field);

/* The stored record id of res (parent_id for per-parent hashes; NULL
 * otherwise); STORE_NOT_FOUND when there is none. */
enum store_status resource_load(struct store_conn *c, const struct resource *res,
                                const char *parent_id, const char *id, cJSON **out);

/* The records of the index set prefix + id, parsed (NULL-free array of n;
 * free with resource_free_records). Ids with no record are skipped. */
enum store_status resource_load_indexed(struct store_conn *c, const struct resource *res,
                                        const char *prefix, const char *id, cJSON ***out,
                                        size_t *n);
void resource_free_records(cJSON **recs, size_t n);

/* Every record of res (not per parent), the same way. */
enum store_status resource_load_all(struct store_conn *c, const struct resource *res,
                                   cJSON ***out, size_t *n);

/* The record of res that holds rec's value of its first unique row (rec
 * as a write stores it), loaded into *out; STORE_NOT_FOUND when none. */
enum store_status resource_find_unique(struct store_conn *c, const struct resource *res,
                                       const char *parent_id, const cJSON *rec, cJSON **out);

/* Whether advertiser id exists: 0; -1 with the answer in rep (422
 * "advertiser_id: no such advertiser", or the store's error). For a field
 * outside a resource's refs (a user's, a media item's). */
int resource_advertiser_exists(struct store_conn *c, const char *id, struct reply *rep);

/* What a write of one record puts in t, unchecked: its index entries
 * moved from before to after, the record itself (HSET, or HDEL when after
 * is NULL) and its audit record (action); txn_exec adds the change log
 * entries and one revision bump for the transaction. Not its uniques: a caller writing many records of res in one
 * transaction (the developer allocations view) keeps those itself, since
 * one record's new value may be another's old one. */
void resource_stage(const struct resource *res, struct txn *t, const struct user *actor,
                    const char *action, const cJSON *before, const cJSON *after);

/* Whether the member changes is in the input and differs from before's. */
bool resource_changed(const struct resource_write *w, const char *field);

/* approval as a review (README "Demand"), for creatives and line items:
 * admins and operators set it (an advertiser sending it: 403, naming
 * what); made by an admin or an operator, the resource is APPROVED unless
 * they say otherwise; made by an advertiser, PENDING; and an advertiser's
 * change of any field but the unreviewed ones (NULL-ended) makes it
 * PENDING again, so nothing an advertiser wrote serves unreviewed. */
enum store_status resource_review(struct resource_write *w, const char *what,
                                  const char *const *unreviewed);

/* ---- the demand model (api_*.c) --------------------------------------------------- */

extern const struct resource resource_advertisers;
extern const struct resource resource_placements;
extern const struct resource resource_orders;
extern const struct resource resource_line_items;
extern const struct resource resource_creatives;
extern const struct resource resource_licas;
extern const struct resource resource_targeting_keys;
extern const struct resource resource_targeting_values;
extern const struct resource resource_native_formats;
extern const struct resource resource_native_style_templates;
extern const struct resource resource_native_styles;
extern const struct resource resource_ad_unit_native_styles;
extern const struct resource resource_catalog_items;
extern const struct resource resource_item_pools;
extern const struct resource resource_experiments;
extern const struct resource resource_ad_sources;
extern const struct resource resource_allocations;
extern const struct resource resource_blocked_creatives;
/* A block's value as it is stored: an adomain in lower case. */
void blocked_creative_normalise(cJSON *block);
extern const struct resource resource_external_creatives;
/* Ad units (api_ad_units.c owns them) as a reference target only. */
extern const struct resource resource_ad_units_ref;

/* Redis keys of the demand model (README). */

/* The LICA rule shared by line items, creatives and LICAs: a creative fits
 * a line item when the line item targets no sizes, or targets the
 * creative's w x h. */
bool demand_size_fits(const cJSON *line_item, const cJSON *creative);

#endif
