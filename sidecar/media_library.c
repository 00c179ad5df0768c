/* The media library's files and records (media_library.h). */
#include "media_library.h"

#include "log.h"
#include "resource.h"
#include "settings.h"
#include "txn.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Concurrent writers of other sidecars are seen through WATCH; a few
 * rounds settle them. */
#define ATTEMPTS 8
#define SCOPE_MAX (UUID_STR_LEN + MEDIA_SHA256_HEX + 1)
#define KEY_MAX 160
#define URL_MAX (ADSERVE_PUBLIC_URL_MAX + 96)
/* the ids named in a refused delete's detail (all are in creative_ids) */
#define DETAIL_IDS 10

static char media_dir[MEDIA_PATH_MAX];
static size_t limits[2] = { MEDIA_IMAGE_MAX_DEFAULT, MEDIA_VIDEO_MAX_DEFAULT };
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

const char *media_library_dir(void)
{
    return media_dir;
}

size_t media_library_limit(enum media_kind kind)
{
    return limits[kind];
}

size_t media_library_max(void)
{
    return limits[MEDIA_IMAGE] > limits[MEDIA_VIDEO] ? limits[MEDIA_IMAGE] : limits[MEDIA_VIDEO];
}

/* Uploads that a crash or a kill cut short leave their temporary files;
 * nothing else in the folder starts with a dot. */
static void sweep(void)
{
    DIR *d = opendir(media_dir);
    struct dirent *e;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, ".upload-", 8) == 0 && unlinkat(dirfd(d), e->d_name, 0) != 0)
            log_line("media: cannot remove %s: %s", e->d_name, strerror(errno));
    closedir(d);
}

int media_library_init(const char *dir, size_t image_max, size_t video_max)
{
    struct stat st;

    if (copy_str(media_dir, sizeof media_dir - MEDIA_SHA256_HEX - 16, dir) != 0) {
        log_line("media: the folder's path is too long");
        return -1;
    }
    /* nginx's workers (another user) read it: 0755, files 0644 */
    if (mkdir(media_dir, 0755) != 0 && errno != EEXIST) {
        log_line("media: cannot make %s: %s", media_dir, strerror(errno));
        return -1;
    }
    if (stat(media_dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(media_dir, W_OK) != 0) {
        log_line("media: %s is not a folder the sidecar can write", media_dir);
        return -1;
    }
    sweep();
    limits[MEDIA_IMAGE] = image_max;
    limits[MEDIA_VIDEO] = video_max;
    return media_probe_init();
}

void media_library_shutdown(void)
{
    media_probe_shutdown();
}

static const struct media_type *type_of(const char *mime)
{
    for (const struct media_type *t = media_types; mime != NULL && t->mime != NULL; t++)
        if (strcmp(t->mime, mime) == 0)
            return t;
    return NULL;
}

/* the stored file of sha256 and type */
static bool file_path(char out[MEDIA_PATH_MAX], const char *sha256, const char *ext)
{
    int n = snprintf(out, MEDIA_PATH_MAX, "%s/%s.%s", media_dir, sha256, ext);
    return n > 0 && n < MEDIA_PATH_MAX;
}

/* "<advertiser id or ->:<sha256>": the owner's item of these bytes */
static bool scope_of(char out[SCOPE_MAX], const char *advertiser_id, const char *sha256)
{
    int n = snprintf(out, SCOPE_MAX, "%s:%s", advertiser_id ? advertiser_id : "-", sha256);
    return n > 0 && n < SCOPE_MAX;
}

static bool key_of(char out[KEY_MAX], const char *prefix, const char *id)
{
    int n = snprintf(out, KEY_MAX, "%s%s", prefix, id);
    return n > 0 && n < KEY_MAX;
}

/* The item as it is stored: every field of schema_media_item. */
static cJSON *new_record(struct request *req, const struct media_upload *u, const char *id,
                         const char *url)
{
    char now[RFC3339_LEN];
    cJSON *o = cJSON_CreateObject();
    bool ok = o != NULL && now_rfc3339(now) == 0 &&
              cJSON_AddStringToObject(o, "id", id) != NULL &&
              (u->advertiser_id ? cJSON_AddStringToObject(o, "advertiser_id", u->advertiser_id)
                                : cJSON_AddNullToObject(o, "advertiser_id")) != NULL &&
              (u->name ? cJSON_AddStringToObject(o, "name", u->name)
                       : cJSON_AddNullToObject(o, "name")) != NULL &&
              cJSON_AddStringToObject(o, "kind", media_kind_names[u->type->kind]) != NULL &&
              cJSON_AddStringToObject(o, "mime_type", u->type->mime) != NULL &&
              cJSON_AddStringToObject(o, "sha256", u->sha256) != NULL &&
              cJSON_AddNumberToObject(o, "bytes", (double)u->bytes) != NULL &&
              cJSON_AddNumberToObject(o, "width", (double)u->info.width) != NULL &&
              cJSON_AddNumberToObject(o, "height", (double)u->info.height) != NULL &&
              (u->info.duration >= 0
                   ? cJSON_AddNumberToObject(o, "duration", u->info.duration)
                   : cJSON_AddNullToObject(o, "duration")) != NULL &&
              cJSON_AddStringToObject(o, "url", url) != NULL &&
              cJSON_AddStringToObject(o, "created_at", now) != NULL &&
              cJSON_AddStringToObject(o, "updated_at", now) != NULL &&
              cJSON_AddStringToObject(o, "created_by", req->user->id) != NULL;
    cJSON *out = ok ? schema_output(&schema_media_item, o) : NULL;

    cJSON_Delete(o);
    return out;
}

static enum store_status load_item(struct store_conn *c, const char *id, cJSON **out)
{
    char text[8192];
    enum store_status st = store_get_str(c, text, sizeof text,
                                         (const char *[]){ "HGET", ADSERVE_KEY_MEDIA, id, NULL });

    *out = NULL;
    if (st != STORE_OK)
        return st;
    *out = cJSON_Parse(text);
    if (cJSON_IsObject(*out))
        return STORE_OK;
    log_line("media: item %.40s: the stored record is not a JSON object", id);
    cJSON_Delete(*out);
    *out = NULL;
    return STORE_ERROR;
}

/* The file in place: the upload renamed to its content's name (an
 * existing one has the same bytes). */
static int keep_file(const struct media_upload *u)
{
    char path[MEDIA_PATH_MAX];

    if (!file_path(path, u->sha256, u->type->ext) || rename(u->tmp_path, path) != 0) {
        log_line("media: cannot store %s.%s: %s", u->sha256, u->type->ext, strerror(errno));
        return -1;
    }
    return 0;
}

/* Removes the file of sha256 when no item names it any more. */
static void drop_file_if_unused(struct store_conn *c, const char *sha256, const char *mime)
{
    char key[KEY_MAX], path[MEDIA_PATH_MAX];
    const struct media_type *t = type_of(mime);
    redisReply *r;

    if (t == NULL || !key_of(key, ADSERVE_KEY_MEDIA_FILE_ITEMS, sha256) ||
        !file_path(path, sha256, t->ext) ||
        store_cmd(c, &r, (const char *[]){ "SCARD", key, NULL }) != STORE_OK)
        return;
    bool unused = r->type == REDIS_REPLY_INTEGER && r->integer == 0;
    freeReplyObject(r);
    if (unused && unlink(path) != 0 && errno != ENOENT)
        log_line("media: cannot remove %s.%s: %s", sha256, t->ext, strerror(errno));
}

/* One attempt of an add; STORE_CONFLICT to run it again. */
static enum store_status add_once(struct request *req, struct reply *rep,
                                  const struct media_upload *u, bool *kept)
{
    struct store_conn *c = request_store(req);
    char scope[SCOPE_MAX], id[UUID_STR_LEN], files[KEY_MAX], base[ADSERVE_PUBLIC_URL_MAX + 1];
    char url[URL_MAX];
    cJSON *rec = NULL;

    if (!scope_of(scope, u->advertiser_id, u->sha256) ||
        !key_of(files, ADSERVE_KEY_MEDIA_FILE_ITEMS, u->sha256))
        return STORE_ERROR;
    enum store_status st = store_do(c, (const char *[]){ "WATCH", ADSERVE_KEY_MEDIA_BY_HASH, NULL });
    if (st == STORE_OK)
        st = store_get_str(c, id, sizeof id,
                           (const char *[]){ "HGET", ADSERVE_KEY_MEDIA_BY_HASH, scope, NULL });
    if (st == STORE_OK && (st = load_item(c, id, &rec)) == STORE_OK) {
        /* the same bytes again: the same item (its file put back, should
         * someone have removed it by hand) */
        (void)store_do(c, (const char *[]){ "UNWATCH", NULL });
        if (!*kept)
            *kept = keep_file(u) == 0;
        reply_json(rep, 200, schema_output(&schema_media_item, rec));
        cJSON_Delete(rec);
        return STORE_OK;
    }
    if (st != STORE_NOT_FOUND)
        return st;
    if ((st = settings_public_url(c, base, sizeof base)) != STORE_OK)
        return st;
    uuid_v4(id);
    int n = snprintf(url, sizeof url, "%s/media/%s.%s", base, u->sha256, u->type->ext);
    if (n < 0 || (size_t)n >= sizeof url || (rec = new_record(req, u, id, url)) == NULL)
        return STORE_ERROR;
    char *json = cJSON_PrintUnformatted(rec);
    struct txn t;
    txn_init(&t);
    txn_cmd(&t, "HSET", ADSERVE_KEY_MEDIA, id, json ? json : "", NULL);
    txn_cmd(&t, "HSET", ADSERVE_KEY_MEDIA_BY_HASH, scope, id, NULL);
    txn_cmd(&t, "SADD", files, id, NULL);
    txn_audit(&t, req->user, "create", ADSERVE_RECORD_MEDIA, id, NULL, rec);
    t.failed = t.failed || json == NULL;
    cJSON_free(json);
    /* the file first: an item is never without its file */
    if (!*kept && keep_file(u) != 0)
        t.failed = true;
    else
        *kept = true;
    st = txn_exec(&t, c);
    txn_free(&t);
    if (st == STORE_OK) {
        reply_json(rep, 201, rec);
        char loc[64];
        snprintf(loc, sizeof loc, "/api/media/%s", id);
        (void)reply_header(rep, "Location", loc);
        return STORE_OK;
    }
    cJSON_Delete(rec);
    return st;
}

/* The library's lock: false with a 500 in rep when it cannot be taken. */
static bool take_lock(struct reply *rep)
{
    int rc = pthread_mutex_lock(&lock);

    if (rc != 0) {
        log_line("media: lock: %s", strerror(rc));
        reply_error(rep, 500, "internal error");
    }
    return rc == 0;
}

static void give_lock(void)
{
    int rc = pthread_mutex_unlock(&lock);

    if (rc != 0)
        log_line("media: unlock: %s", strerror(rc));
}

void media_library_add(struct request *req, struct reply *rep, const struct media_upload *u)
{
    bool kept = false;
    enum store_status st = STORE_CONFLICT;

    if (!take_lock(rep)) {
        (void)unlink(u->tmp_path);
        return;
    }
    for (int i = 0; i < ATTEMPTS && st == STORE_CONFLICT; i++)
        st = add_once(req, rep, u, &kept);
    /* a refused attempt leaves its WATCH on the pooled connection */
    if (st != STORE_OK)
        (void)store_do(request_store(req), (const char *[]){ "UNWATCH", NULL });
    /* a write that failed must not leave a file no item names */
    if (st != STORE_OK && kept)
        drop_file_if_unused(request_store(req), u->sha256, u->type->mime);
    give_lock();
    if (!kept && unlink(u->tmp_path) != 0 && errno != ENOENT)
        log_line("media: cannot remove an upload's temporary file: %s", strerror(errno));
    if (st == STORE_CONFLICT)
        reply_error(rep, 409, "concurrent uploads of the same file, retry");
    else if (st != STORE_OK)
        reply_store_error(rep, st);
}

/* 409 {detail, creative_ids} when creatives use the item. */
static enum store_status refuse_used(struct store_conn *c, struct reply *rep, const char *id,
                                     bool *used)
{
    char key[KEY_MAX], detail[DETAIL_IDS * UUID_STR_LEN + 160];
    redisReply *r;
    size_t at = 0;

    *used = false;
    if (!key_of(key, ADSERVE_KEY_MEDIA_CREATIVES, id))
        return STORE_ERROR;
    enum store_status st = store_cmd(c, &r, (const char *[]){ "SMEMBERS", key, NULL });
    if (st != STORE_OK)
        return st;
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
        st = r->type == REDIS_REPLY_ARRAY ? STORE_OK : STORE_ERROR;
        freeReplyObject(r);
        return st;
    }
    *used = true;
    cJSON *ids = cJSON_CreateArray();
    for (size_t i = 0; i < r->elements; i++) {
        const char *cid = r->element[i]->type == REDIS_REPLY_STRING ? r->element[i]->str : "";
        cJSON *s = cJSON_CreateString(cid);
        if (s == NULL || !cJSON_AddItemToArray(ids, s))
            cJSON_Delete(s);
        if (i < DETAIL_IDS) {
            int n = snprintf(detail + at, sizeof detail - at, "%s%s", i ? ", " : "", cid);
            at += n > 0 && (size_t)n < sizeof detail - at ? (size_t)n : 0;
        }
    }
    reply_error(rep, 409, "the media item is used by %zu creative%s (%s%s): change or delete "
                          "them first", r->elements, r->elements == 1 ? "" : "s", detail,
                r->elements > DETAIL_IDS ? ", ..." : "");
    freeReplyObject(r);
    if (ids == NULL || rep->body == NULL || !cJSON_AddItemToObject(rep->body, "creative_ids", ids))
        cJSON_Delete(ids);
    return STORE_OK;
}

/* One attempt of a delete; STORE_CONFLICT to run it again. */
static enum store_status delete_once(struct request *req, struct reply *rep, const char *id)
{
    struct store_conn *c = request_store(req);
    char users[KEY_MAX], files[KEY_MAX], scope[SCOPE_MAX];
    cJSON *rec = NULL;
    bool used;

    if (!key_of(users, ADSERVE_KEY_MEDIA_CREATIVES, id))
        return STORE_ERROR;
    enum store_status st = store_do(c, (const char *[]){ "WATCH", ADSERVE_KEY_MEDIA, users, NULL });
    if (st == STORE_OK)
        st = load_item(c, id, &rec);
    if (st == STORE_OK &&
        !resource_owned_by(resource_caller_advertiser(req), json_str_member(rec, "advertiser_id")))
        st = STORE_NOT_FOUND;
    if (st == STORE_NOT_FOUND)
        reply_error(rep, 404, "media item not found");
    if (st == STORE_OK && (st = refuse_used(c, rep, id, &used)) == STORE_OK && !used) {
        const char *sha = json_str_member(rec, "sha256");
        struct txn t;
        txn_init(&t);
        if (sha == NULL || !scope_of(scope, json_str_member(rec, "advertiser_id"), sha) ||
            !key_of(files, ADSERVE_KEY_MEDIA_FILE_ITEMS, sha))
            t.failed = true;
        txn_cmd(&t, "HDEL", ADSERVE_KEY_MEDIA, id, NULL);
        txn_cmd(&t, "HDEL", ADSERVE_KEY_MEDIA_BY_HASH, scope, NULL);
        txn_cmd(&t, "SREM", files, id, NULL);
        txn_audit(&t, req->user, "delete", ADSERVE_RECORD_MEDIA, id, rec, NULL);
        bool sent = !t.failed;
        st = txn_exec(&t, c);
        txn_free(&t);
        if (st == STORE_OK) {
            drop_file_if_unused(c, sha, json_str_member(rec, "mime_type"));
            reply_json(rep, 204, NULL);
        }
        if (sent) {
            cJSON_Delete(rec);
            return st;
        }
    }
    (void)store_do(c, (const char *[]){ "UNWATCH", NULL });
    cJSON_Delete(rec);
    return st == STORE_NOT_FOUND ? STORE_OK : st;
}

void media_library_delete(struct request *req, struct reply *rep)
{
    char id[UUID_STR_LEN];
    enum store_status st = STORE_CONFLICT;

    if (!request_uuid_param(req, "id", id)) {
        reply_error(rep, 404, "media item not found");
        return;
    }
    if (!take_lock(rep))
        return;
    for (int i = 0; i < ATTEMPTS && st == STORE_CONFLICT; i++)
        st = delete_once(req, rep, id);
    give_lock();
    if (st == STORE_CONFLICT)
        reply_error(rep, 409, "concurrent changes of the media item, retry");
    else if (st != STORE_OK)
        reply_store_error(rep, st);
}
