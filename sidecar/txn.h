/* One write of the management API, as one Redis transaction.
 *
 * Every mutation writes its records and indexes, appends one audit record
 * per changed resource, and, when serving can see the change, bumps the
 * serving revision: all in one MULTI/EXEC, so that neither a crash nor a
 * concurrent reader ever sees half of it.
 *
 *   struct txn t;
 *   txn_init(&t);
 *   txn_cmd(&t, "HSET", ADSERVE_KEY_AD_UNITS, id, json, NULL);
 *   txn_audit(&t, req->user, "create", "ad_unit", id, NULL, after);
 *   txn_bump_revision(&t);
 *   st = txn_exec(&t, request_store(req));
 *   txn_free(&t);
 *
 * Arguments are copied, so callers may pass temporaries; a failure to add
 * (out of memory, too many commands) is remembered and makes txn_exec
 * answer STORE_ERROR without sending anything. */
#ifndef ADSERVE_TXN_H
#define ADSERVE_TXN_H

#include "store.h"
#include "users.h"

#include <cJSON.h>
#include <stdbool.h>

#define TXN_MAX_CMDS 10000             /* a subtree move rewrites each descendant */
#define TXN_MAX_ARGS 64

#define ADSERVE_AUDIT_MAXLEN "100000"           /* approximate cap of the stream */
#define ADSERVE_CHANGES_MAXLEN "100000"

struct txn {
    char ***cmds;                       /* each NULL-terminated */
    size_t n, cap;
    bool failed;
    bool logged;                        /* the change log entries are in */
};

void txn_init(struct txn *t);

/* Adds one command; the argument list ends with NULL. */
void txn_cmd(struct txn *t, const char *arg, ...) __attribute__((sentinel));

/* The same, from a NULL-terminated array. */
void txn_argv(struct txn *t, const char *const *argv);

/* Appends {at, actor, role, action, resource, id, before, after} to the
 * audit stream; before / after are the resource's JSON (NULL when it did
 * not or no longer exists) and must hold no secret. */
void txn_audit(struct txn *t, const struct user *actor, const char *action,
               const char *resource, const char *id,
               const cJSON *before, const cJSON *after);

/* INCR of the serving revision, for writes that serving reads. */
void txn_bump_revision(struct txn *t);

/* Sends it all as one MULTI/EXEC (after any WATCH the caller set). Every
 * HSET or HDEL of a hash that serving reads (the data contract's) gets its
 * entry {kind, id} in the change log and the revision its bump, added here
 * so that no write can forget them: nginx workers then fetch just those
 * records instead of reloading everything. */
enum store_status txn_exec(struct txn *t, struct store_conn *c);

void txn_free(struct txn *t);

#endif
