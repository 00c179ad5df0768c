/* Segment member uploads (segment_upload.h). */
#include "segment_upload.h"

#include "http.h"
#include "lines.h"
#include "log.h"
#include "txn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* users a pipeline: 3 commands each on an add (STORE_MAX_PIPELINE is
 * 10,000) */
#define BATCH 2000
#define CMDS_PER_USER 3
#define KEY_LEN (sizeof(ADSERVE_KEY_USER_SEGMENTS) - 1 + ADSERVE_TOKEN_USER_MAX + 1)

struct upload {
    char segment[UUID_STR_LEN];
    bool remove;
    char until[24];                 /* an add: the second memberships end, */
    char ttl[24];                   /* and the seconds until then */
    struct line_reader lines;
    size_t members, malformed;
    cJSON *errors;                  /* [{line, reason}], the first ones */
    enum store_status failed;       /* the first Redis failure: stop */
    size_t nbatch;
    char keys[BATCH][KEY_LEN];
    const char *argv[BATCH * CMDS_PER_USER][6];
    const char *const *cmds[BATCH * CMDS_PER_USER];
    redisReply *replies[BATCH * CMDS_PER_USER];
};

static size_t max_bytes = SEGMENT_UPLOAD_MAX_DEFAULT;

void segment_upload_init(size_t limit)
{
    max_bytes = limit;
}

static size_t upload_max(void)
{
    return max_bytes;
}

/* the batch's commands: HSET and the key's life (set when new, else only
 * lengthened) on an add, HDEL on a remove */
static size_t batch_commands(struct upload *u)
{
    size_t n = 0;

    for (size_t i = 0; i < u->nbatch; i++) {
        const char *const add[][6] = {
            { "HSET", u->keys[i], u->segment, u->until, NULL },
            { "EXPIRE", u->keys[i], u->ttl, "NX", NULL },
            { "EXPIRE", u->keys[i], u->ttl, "GT", NULL },
        };
        const char *const del[6] = { "HDEL", u->keys[i], u->segment, NULL };
        size_t k = u->remove ? 1 : CMDS_PER_USER;

        for (size_t j = 0; j < k; j++) {
            memcpy(u->argv[n], u->remove ? del : add[j], sizeof u->argv[n]);
            u->cmds[n] = u->argv[n];
            n++;
        }
    }
    return n;
}

static int flush(struct upload *u)
{
    if (u->nbatch == 0 || u->failed != STORE_OK)
        return u->failed == STORE_OK ? 0 : -1;
    size_t n = batch_commands(u);
    struct store_conn *c = store_acquire();
    enum store_status st = store_pipeline(c, u->cmds, n, u->replies);
    store_release(c);
    for (size_t i = 0; i < n; i++)
        freeReplyObject(u->replies[i]);
    if (st != STORE_OK) {
        u->failed = st;
        return -1;
    }
    u->members += u->nbatch;
    u->nbatch = 0;
    return 0;
}

static int on_id(void *arg, const char *id, size_t len)
{
    struct upload *u = arg;
    char *k = u->keys[u->nbatch++];

    memcpy(k, ADSERVE_KEY_USER_SEGMENTS, sizeof(ADSERVE_KEY_USER_SEGMENTS) - 1);
    memcpy(k + sizeof(ADSERVE_KEY_USER_SEGMENTS) - 1, id, len);
    k[sizeof(ADSERVE_KEY_USER_SEGMENTS) - 1 + len] = '\0';
    return u->nbatch == BATCH ? flush(u) : 0;
}

static int on_fault(void *arg, size_t line_no, enum line_fault why)
{
    struct upload *u = arg;

    if (u->malformed++ < SEGMENT_UPLOAD_ERRORS_MAX) {
        cJSON *e = cJSON_CreateObject();
        if (e == NULL || cJSON_AddNumberToObject(e, "line", (double)line_no) == NULL ||
            cJSON_AddStringToObject(e, "reason", line_fault_text(why)) == NULL ||
            !cJSON_AddItemToArray(u->errors, e)) {
            cJSON_Delete(e);
            u->failed = STORE_ERROR;
            return -1;
        }
    }
    return 0;
}

/* The segment of the path, which must exist; its membership expiration
 * for an add. NULL with the answer in rep. */
static struct upload *open_upload(struct request *req, struct reply *rep, bool remove)
{
    char id[UUID_STR_LEN], text[4096];

    if (!request_uuid_param(req, "id", id)) {
        reply_error(rep, 404, "segment not found");
        return NULL;
    }
    enum store_status st = store_get_str(request_store(req), text, sizeof text,
                                         (const char *[]){ "HGET", ADSERVE_KEY_SEGMENTS, id, NULL });
    if (st == STORE_NOT_FOUND) {
        reply_error(rep, 404, "segment not found");
        return NULL;
    }
    if (st != STORE_OK) {
        reply_store_error(rep, st);
        return NULL;
    }
    cJSON *seg = cJSON_Parse(text);
    const cJSON *days = cJSON_GetObjectItemCaseSensitive(seg, "membership_expiration_days");
    long long ttl = cJSON_IsNumber(days) ? (long long)days->valuedouble * 86400 : 0;
    cJSON_Delete(seg);
    struct upload *u = ttl > 0 ? calloc(1, sizeof *u) : NULL;
    if (u == NULL || (u->errors = cJSON_CreateArray()) == NULL) {
        free(u);
        reply_error(rep, 500, "internal error");
        return NULL;
    }
    memcpy(u->segment, id, sizeof id);
    u->remove = remove;
    snprintf(u->until, sizeof u->until, "%lld", (long long)time(NULL) + ttl);
    snprintf(u->ttl, sizeof u->ttl, "%lld", ttl);
    line_reader_init(&u->lines, on_id, on_fault, u);
    return u;
}

static void *open_add(struct request *req, struct reply *rep)
{
    return open_upload(req, rep, false);
}

static void *open_remove(struct request *req, struct reply *rep)
{
    return open_upload(req, rep, true);
}

static int chunk(void *state, const char *data, size_t n)
{
    struct upload *u = state;

    return line_reader_feed(&u->lines, data, n);
}

/* {segment_id, lines, members|removed, malformed, errors[, expires_at]} */
static cJSON *report(struct upload *u)
{
    cJSON *o = cJSON_CreateObject();
    char at[RFC3339_LEN];

    if (o == NULL || cJSON_AddStringToObject(o, "segment_id", u->segment) == NULL ||
        cJSON_AddNumberToObject(o, "lines", (double)(u->lines.line_no - 1)) == NULL ||
        cJSON_AddNumberToObject(o, u->remove ? "removed" : "members", (double)u->members) ==
            NULL ||
        cJSON_AddNumberToObject(o, "malformed", (double)u->malformed) == NULL ||
        (!u->remove && (rfc3339_format(atoll(u->until), at) != 0 ||
                        cJSON_AddStringToObject(o, "expires_at", at) == NULL))) {
        cJSON_Delete(o);
        return NULL;
    }
    cJSON_AddItemToObject(o, "errors", u->errors);
    u->errors = NULL;
    return o;
}

static void audit(struct request *req, const struct upload *u, const cJSON *what)
{
    struct txn t;

    txn_init(&t);
    txn_audit(&t, req->user, u->remove ? "remove_members" : "add_members",
              ADSERVE_RECORD_SEGMENT, u->segment, NULL, what);
    if (txn_exec(&t, request_store(req)) != STORE_OK)
        log_line("segment %s: the upload's audit record was not written", u->segment);
    txn_free(&t);
}

static void close_upload(void *state, struct request *req, struct reply *rep, bool too_large)
{
    struct upload *u = state;

    if (u->failed == STORE_OK && line_reader_end(&u->lines) == 0)
        (void)flush(u);
    cJSON *body = report(u);
    if (body != NULL)
        audit(req, u, body);
    if (too_large)
        reply_error(rep, 413, "request body exceeds %zu bytes; the %zu members before it were "
                              "written", max_bytes, u->members);
    else if (u->failed != STORE_OK)
        reply_error(rep, u->failed == STORE_UNAVAILABLE ? 503 : 500,
                    "Redis failed after %zu members were written; send the upload again (it "
                    "is idempotent)", u->members);
    else if (body != NULL) {
        reply_json(rep, 200, body);
        body = NULL;
    } else
        reply_error(rep, 500, "internal error");
    cJSON_Delete(body);
    cJSON_Delete(u->errors);
    free(u);
}

const struct route_stream segment_members_add = {
    .media_type = "text/plain", .max_bytes = upload_max, .open = open_add, .chunk = chunk,
    .close = close_upload,
};
const struct route_stream segment_members_remove = {
    .media_type = "text/plain", .max_bytes = upload_max, .open = open_remove, .chunk = chunk,
    .close = close_upload,
};
