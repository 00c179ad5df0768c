/* Redis access: a small pool of synchronous hiredis connections.
 *
 * The sidecar is the management path, not the serving path, so blocking
 * calls with short timeouts are fine here.  Each HTTP worker thread holds
 * at most one connection for the duration of one request.  Commands are
 * always sent in argv form: user input is never formatted into a command. */
#ifndef ADSERVE_STORE_H
#define ADSERVE_STORE_H

/* every key and record type of ours */
#include "adserve_contract.h"

#include <stddef.h>
#include <hiredis/hiredis.h>

enum store_status {
    STORE_OK = 0,
    STORE_NOT_FOUND,     /* the key or field does not exist */
    STORE_CONFLICT,      /* a WATCHed key changed: EXEC did nothing */
    STORE_UNAVAILABLE,   /* Redis cannot be reached (or is loading) */
    STORE_ERROR,         /* Redis answered with an error, or bad data */
};

struct store_conn;

/* Prepares pool_size connection slots; connections are opened lazily. */
int store_init(const char *host, int port, int pool_size);

/* Finds the primary through Redis Sentinel from now on (README "Many
 * nodes"): sentinels is "IP:port[,IP:port...]" (at most STORE_SENTINELS),
 * master the name they monitor. Each (re)connect asks them in turn for the
 * primary's address (SENTINEL get-master-addr-by-name) and checks that it
 * is one (ROLE); a connection whose server turns out to be a replica
 * (READONLY, after a failover) is dropped, so the next one asks again.
 * 0, or -1 when the list is malformed. */
#define STORE_SENTINELS 8
int store_use_sentinels(const char *sentinels, const char *master);
void store_shutdown(void);

/* Takes a connection slot, waiting for one to be free, and (re)connects
 * it if needed.  Never NULL; when Redis is down, commands on the returned
 * connection answer STORE_UNAVAILABLE.  A connection that breaks stays
 * broken until released, so a WATCH can never silently be lost by a
 * reconnect in the middle of a request. */
struct store_conn *store_acquire(void);
void store_release(struct store_conn *c);

/* Runs one command.  argv is NULL-terminated; on STORE_OK *reply (which
 * may be a nil reply) belongs to the caller (freeReplyObject). */
enum store_status store_cmd(struct store_conn *c, redisReply **reply,
                            const char *const *argv);

/* Runs a command whose reply is a bulk string or nil, copying it into out.
 * STORE_NOT_FOUND for nil, STORE_ERROR for another type or if too long. */
enum store_status store_get_str(struct store_conn *c, char *out, size_t outlen,
                                const char *const *argv);

/* Runs a command whose reply is irrelevant beyond success (SET, HSET...). */
enum store_status store_do(struct store_conn *c, const char *const *argv);

/* MULTI, the n commands, EXEC, sent as one pipeline.  STORE_CONFLICT when a
 * preceding WATCH aborted the transaction. */
enum store_status store_exec(struct store_conn *c,
                             const char *const *const *cmds, size_t n);

/* The n commands sent as one pipeline (no transaction), their replies in
 * replies[0..n-1] (each the caller's: freeReplyObject). STORE_ERROR when
 * any reply is an error (logged; no reply is kept then), STORE_UNAVAILABLE
 * when the connection failed. At most STORE_MAX_PIPELINE commands. */
enum store_status store_pipeline(struct store_conn *c, const char *const *const *cmds,
                                 size_t n, redisReply **replies);

enum store_status store_ping(struct store_conn *c);

#endif
