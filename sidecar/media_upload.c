/* Uploads to the media library (media_upload.h). */
#include "media_upload.h"

#include "http.h"
#include "log.h"
#include "media_library.h"
#include "resource.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* what libmicrohttpd's multipart reader holds of a part at once */
#define FORM_BUFFER 65536
/* a multipart body's own bytes (boundaries, part headers) beyond its file */
#define FORM_SLACK 65536
#define FILE_PART "file"
#define WHY_MAX 256

static const char *const a_kind[] = { [MEDIA_IMAGE] = "an image", [MEDIA_VIDEO] = "a video" };

enum upload_fault {
    FAULT_NONE,
    FAULT_TYPE,                 /* 415: not an allowed type */
    FAULT_SIZE,                 /* 413: past its kind's limit */
    FAULT_FORM,                 /* 400: a multipart body we cannot take */
    FAULT_IO,                   /* 500: the temporary file */
};

struct upload {
    int fd;
    char tmp[MEDIA_PATH_MAX];
    crypto_hash_sha256_state sha;
    size_t bytes;                       /* of the file */
    size_t limit;                       /* its kind's, once its type is known */
    unsigned char head[MEDIA_SNIFF_BYTES];
    size_t head_len;
    const struct media_type *type;      /* NULL until sniffed */
    char mime[MEDIA_MIME_MAX];          /* libmagic's word */
    bool sniffed;
    enum upload_fault fault;
    char why[WHY_MAX];
    struct MHD_PostProcessor *form;     /* multipart bodies */
    bool file_part;                     /* the form's file part came */
    char advertiser[UUID_STR_LEN];      /* "" : the house */
    char name[MEDIA_NAME_MAX + 1];
    bool named;
};

static const struct schema uuid = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_UUID };
static const struct schema file_name = { .type = SCHEMA_STRING, .min_length = 1,
                                         .max_length = 1024 };
static const struct schema_field query_fields[] = {
    { .name = "advertiser_id", .schema = &uuid,
      .description = "the owner: an advertiser (an advertiser's user may name only its own, "
                     "which is also the default for it); none: the house's" },
    { .name = "name", .schema = &file_name,
      .description = "a display name (else a multipart part's file name); only the last path "
                     "segment is kept, without control characters or <>\"'`" },
    { NULL },
};
const struct schema schema_media_upload_query = { .type = SCHEMA_OBJECT, .fields = query_fields };

/* what a body may be before its file's type is known */
static size_t body_max(void)
{
    return media_library_max() + FORM_SLACK;
}

static void fault(struct upload *u, enum upload_fault f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fault(struct upload *u, enum upload_fault f, const char *fmt, ...)
{
    va_list ap;

    if (u->fault != FAULT_NONE)
        return;
    u->fault = f;
    va_start(ap, fmt);
    vsnprintf(u->why, sizeof u->why, fmt, ap);
    va_end(ap);
}

/* "image/png, image/jpeg, ..." into list (each upload thread its own) */
static const char *allowed_list(char *list, size_t len)
{
    list[0] = '\0';
    for (const struct media_type *t = media_types; t->mime != NULL; t++) {
        size_t used = strlen(list);
        snprintf(list + used, len - used, "%s%s", used ? ", " : "", t->mime);
    }
    return list;
}

/* The type, from the first bytes: an allowed one sets the limit. */
static void sniff(struct upload *u)
{
    u->sniffed = true;
    if (media_sniff(u->head, u->head_len, u->mime, &u->type) != 0) {
        fault(u, FAULT_IO, "libmagic failed");
        return;
    }
    if (u->type == NULL) {
        char list[256];
        fault(u, FAULT_TYPE, "the file is %s by its bytes; allowed: %s", u->mime,
              allowed_list(list, sizeof list));
        return;
    }
    u->limit = media_library_limit(u->type->kind);
    if (u->bytes > u->limit)
        fault(u, FAULT_SIZE, "%s file may be at most %zu bytes", a_kind[u->type->kind], u->limit);
}

/* The file's next bytes: hashed, written, sniffed once there are enough. */
static int file_bytes(struct upload *u, const char *data, size_t n)
{
    if (u->fault != FAULT_NONE)
        return -1;
    u->bytes += n;
    if (u->bytes > u->limit) {
        if (u->type != NULL)
            fault(u, FAULT_SIZE, "%s file may be at most %zu bytes", a_kind[u->type->kind],
                  u->limit);
        else
            fault(u, FAULT_SIZE, "a file may be at most %zu bytes", u->limit);
        return -1;
    }
    crypto_hash_sha256_update(&u->sha, (const unsigned char *)data, n);
    for (size_t done = 0; done < n;) {
        ssize_t w = write(u->fd, data + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            log_line("media: writing an upload: %s", w < 0 ? strerror(errno) : "no progress");
            fault(u, FAULT_IO, "write");
            return -1;
        }
        done += (size_t)w;
    }
    if (!u->sniffed) {
        size_t take = n < MEDIA_SNIFF_BYTES - u->head_len ? n : MEDIA_SNIFF_BYTES - u->head_len;
        memcpy(u->head + u->head_len, data, take);
        u->head_len += take;
        if (u->head_len == MEDIA_SNIFF_BYTES)
            sniff(u);
    }
    return u->fault == FAULT_NONE ? 0 : -1;
}

/* A multipart body's parts: one, named "file", whatever its claimed type. */
static enum MHD_Result form_part(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *filename, const char *content_type,
                                 const char *transfer_encoding, const char *data, uint64_t off,
                                 size_t size)
{
    struct upload *u = cls;

    (void)kind;
    (void)content_type;
    (void)transfer_encoding;
    if (key == NULL || strcmp(key, FILE_PART) != 0) {
        fault(u, FAULT_FORM, "a multipart body has one part, named \"" FILE_PART "\" (not \"%.64s\")",
              key != NULL ? key : "");
        return MHD_NO;
    }
    if (u->file_part && off == 0 && u->bytes > 0) {
        fault(u, FAULT_FORM, "one file an upload");
        return MHD_NO;
    }
    u->file_part = true;
    if (!u->named && filename != NULL)
        u->named = media_display_name(filename, strlen(filename), u->name);
    return file_bytes(u, data, size) == 0 ? MHD_YES : MHD_NO;
}

/* The owner: an advertiser's user's own advertiser, or the one an admin
 * or operator names (which must exist), or the house. 0, or -1 with the
 * answer in rep. */
static int owner(struct request *req, struct reply *rep, const cJSON *query, struct upload *u)
{
    const char *own = resource_caller_advertiser(req);
    const char *named = json_str_member(query, "advertiser_id");

    if (own != NULL) {
        if (own[0] == '\0' || (named != NULL && strcasecmp(named, own) != 0)) {
            reply_error(rep, 422, "advertiser_id: no such advertiser");
            return -1;
        }
        return copy_str(u->advertiser, sizeof u->advertiser, own);
    }
    if (named == NULL)
        return 0;
    if (copy_str(u->advertiser, sizeof u->advertiser, named) != 0)
        return -1;
    for (char *p = u->advertiser; *p != '\0'; p++)
        *p = (char)(*p >= 'A' && *p <= 'F' ? *p - 'A' + 'a' : *p);
    return resource_advertiser_exists(request_store(req), u->advertiser, rep);
}

static void upload_free(struct upload *u)
{
    if (u->form != NULL)
        (void)MHD_destroy_post_processor(u->form);
    if (u->fd >= 0) {
        close(u->fd);
        if (unlink(u->tmp) != 0 && errno != ENOENT)
            log_line("media: cannot remove an upload's temporary file: %s", strerror(errno));
    }
    free(u);
}

static void *open_upload(struct request *req, struct reply *rep)
{
    cJSON *query = request_query_object(req, rep, &schema_media_upload_query);
    struct upload *u = query != NULL ? calloc(1, sizeof *u) : NULL;
    const char *ct = request_header(req, MHD_HTTP_HEADER_CONTENT_TYPE);
    const char *name = json_str_member(query, "name");

    if (u == NULL) {
        cJSON_Delete(query);
        return NULL;
    }
    u->fd = -1;
    u->limit = media_library_max();
    if (owner(req, rep, query, u) != 0) {
        cJSON_Delete(query);
        upload_free(u);
        return NULL;
    }
    if (name != NULL)
        u->named = media_display_name(name, strlen(name), u->name);
    cJSON_Delete(query);
    int n = snprintf(u->tmp, sizeof u->tmp, "%s/.upload-XXXXXX", media_library_dir());
    if (n < 0 || (size_t)n >= sizeof u->tmp || (u->fd = mkostemp(u->tmp, O_CLOEXEC)) < 0 ||
        crypto_hash_sha256_init(&u->sha) != 0) {
        log_line("media: cannot make an upload's temporary file: %s", strerror(errno));
        upload_free(u);
        return NULL;
    }
    if (ct != NULL && strncasecmp(ct, "multipart/form-data", 19) == 0 &&
        (u->form = MHD_create_post_processor(req->conn, FORM_BUFFER, form_part, u)) == NULL) {
        reply_error(rep, 400, "a multipart/form-data body needs its boundary");
        upload_free(u);
        return NULL;
    }
    return u;
}

static int chunk(void *state, const char *data, size_t n)
{
    struct upload *u = state;

    if (u->form == NULL)
        return file_bytes(u, data, n);
    if (MHD_post_process(u->form, data, n) != MHD_YES) {
        fault(u, FAULT_FORM, "a malformed multipart/form-data body");
        return -1;
    }
    return 0;
}

/* The size (and a video's duration) by its type's library: 0, or -1 with
 * the 422 in rep. */
static int probe(struct upload *u, struct media_info *info, struct reply *rep)
{
    char err[160];
    int rc;

    if (u->type->kind == MEDIA_VIDEO) {
        rc = media_probe_video(u->type, u->tmp, info, err, sizeof err);
    } else {
        /* mapped, not read: the file is at most the image limit */
        void *map = mmap(NULL, u->bytes, PROT_READ, MAP_PRIVATE, u->fd, 0);
        if (map == MAP_FAILED) {
            log_line("media: cannot map an upload: %s", strerror(errno));
            reply_error(rep, 500, "internal error");
            return -1;
        }
        rc = media_probe_image(u->type, map, u->bytes, info, err, sizeof err);
        munmap(map, u->bytes);
    }
    if (rc != 0)
        reply_error(rep, 422, "the file is not a %s that can be read: %s", u->type->mime, err);
    return rc;
}

/* The end of the form (whether it was whole), then the file's checks. */
static bool finished(struct upload *u, struct reply *rep, bool too_large)
{
    static const int statuses[] = {
        [FAULT_TYPE] = 415, [FAULT_SIZE] = 413, [FAULT_FORM] = 400, [FAULT_IO] = 500,
    };

    if (u->form != NULL) {
        if (MHD_destroy_post_processor(u->form) != MHD_YES)
            fault(u, FAULT_FORM, "a malformed or cut multipart/form-data body");
        u->form = NULL;
        if (!u->file_part)
            fault(u, FAULT_FORM, "the multipart body has no part named \"" FILE_PART "\"");
    }
    if (too_large)
        fault(u, FAULT_SIZE, "the body exceeds %zu bytes", body_max());
    if (u->fault == FAULT_NONE && u->bytes == 0)
        fault(u, FAULT_FORM, "an empty file: send the file's bytes as the body, or as the "
                             "part named \"" FILE_PART "\" of a multipart/form-data body");
    if (u->fault == FAULT_NONE && !u->sniffed)
        sniff(u);
    if (u->fault == FAULT_NONE)
        return true;
    if (u->fault == FAULT_IO)
        reply_error(rep, 500, "internal error");
    else
        reply_error(rep, statuses[u->fault], "%s", u->why);
    return false;
}

static void close_upload(void *state, struct request *req, struct reply *rep, bool too_large)
{
    struct upload *u = state;
    unsigned char digest[crypto_hash_sha256_BYTES];
    char hex[MEDIA_SHA256_HEX];
    struct media_info info;

    if (finished(u, rep, too_large) && probe(u, &info, rep) == 0) {
        crypto_hash_sha256_final(&u->sha, digest);
        sodium_bin2hex(hex, sizeof hex, digest, sizeof digest);
        /* readable by nginx's workers, on disk before any record names it */
        if (fchmod(u->fd, 0644) != 0 || fsync(u->fd) != 0) {
            log_line("media: cannot finish an upload's file: %s", strerror(errno));
            reply_error(rep, 500, "internal error");
        } else {
            struct media_upload m = {
                .advertiser_id = u->advertiser[0] != '\0' ? u->advertiser : NULL,
                .sha256 = hex, .type = u->type, .bytes = u->bytes, .info = info,
                .name = u->named ? u->name : NULL, .tmp_path = u->tmp,
            };
            media_library_add(req, rep, &m);
        }
    }
    upload_free(u);
}

/* Choice: the types that may be claimed. The bytes decide; the claim only
 * has to be a file (or a form holding one). */
static const char *const accepted[] = {
    "image/png", "image/jpeg", "image/gif", "image/webp", "video/mp4", "video/webm",
    "application/octet-stream", "multipart/form-data", NULL,
};

/* a cut upload keeps nothing: its first bytes may well pass for a file */
static void abandon_upload(void *state)
{
    upload_free(state);
}

const struct route_stream media_upload_stream = {
    .media_types = accepted, .form_part = FILE_PART, .max_bytes = body_max,
    .open = open_upload, .chunk = chunk, .close = close_upload, .abandon = abandon_upload,
};
