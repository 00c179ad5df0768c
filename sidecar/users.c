#include "users.h"

#include "log.h"
#include "txn.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX USER_KEY_MAX
#define WATCH_BATCH 32          /* keys per WATCH command */

static const struct {
    const char *name;
    unsigned bit;
} roles[] = {
    { "admin", ROLE_ADMIN },
    { "operator", ROLE_OPERATOR },
    { "advertiser", ROLE_ADVERTISER },
};

const char *role_name(unsigned bit)
{
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
        if (roles[i].bit == bit)
            return roles[i].name;
    return NULL;
}

unsigned role_from_name(const char *name)
{
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
        if (strcmp(roles[i].name, name) == 0)
            return roles[i].bit;
    return 0;
}

static bool email_char_ok(unsigned char ch)
{
    /* Printable ASCII except the characters that break headers, quoting
     * or the local@domain split; no quoted local parts. */
    return ch > 0x20 && ch < 0x7f && strchr("\"(),:;<>[\\]@", ch) == NULL;
}

static bool domain_ok(const char *d)
{
    size_t n = strlen(d);

    if (n < 3 || n > 253 || d[0] == '.' || d[0] == '-' || d[n - 1] == '.' ||
        strchr(d, '.') == NULL || strstr(d, "..") != NULL)
        return false;
    for (const char *p = d; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
            return false;
    return true;
}

int email_normalize(const char *in, char out[EMAIL_MAX + 1])
{
    size_t n = strlen(in);
    const char *at = strchr(in, '@');

    if (n == 0 || n > EMAIL_MAX || at == NULL || at == in || strchr(at + 1, '@') != NULL ||
        at - in > 64)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)in[i];
        if (ch != '@' && !email_char_ok(ch))
            return -1;
        out[i] = (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : (char)ch;
    }
    out[n] = '\0';
    return domain_ok(out + (at - in) + 1) ? 0 : -1;
}

long long user_counter(const char *field)
{
    char *end;

    if (field == NULL || field[0] == '\0')
        return 0;
    errno = 0;
    long long n = strtoll(field, &end, 10);
    return errno == 0 && *end == '\0' && n >= 0 ? n : 0;
}

void user_counter_bump(char field[USER_COUNTER_LEN])
{
    snprintf(field, USER_COUNTER_LEN, "%lld", user_counter(field) + 1);
}

int user_set_password(struct user *u, const char hash[crypto_pwhash_STRBYTES])
{
    if (copy_str(u->password_hash, sizeof u->password_hash, hash) != 0 ||
        now_rfc3339(u->updated_at) != 0)
        return -1;
    user_counter_bump(u->session_gen);
    user_counter_bump(u->api_token_ver);
    return 0;
}

int user_key(char key[KEY_MAX], const char *id)
{
    int n = snprintf(key, KEY_MAX, ADSERVE_KEY_USER "%s", id);
    return n > 0 && n < KEY_MAX ? 0 : -1;
}

/* Maps one hash field onto the struct; unknown fields are kept for later
 * versions and ignored here.  -1 when a value does not fit. */
static int set_field(struct user *u, const char *name, const char *value)
{
    static const struct {
        const char *name;
        size_t off, len;
    } fields[] = {
#define F(f) { #f, offsetof(struct user, f), sizeof(((struct user *)0)->f) }
        F(id), F(email), F(role), F(advertiser_id), F(created_at),
        F(updated_at), F(created_by), F(password_hash), F(session_gen),
        F(api_token_ver),
#undef F
    };

    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (strcmp(fields[i].name, name) == 0)
            return copy_str((char *)u + fields[i].off, fields[i].len, value);
    return 0;
}

static enum store_status fill_user(const redisReply *r, struct user *u)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0)
        return STORE_ERROR;
    if (r->elements == 0)
        return STORE_NOT_FOUND;
    for (size_t i = 0; i < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            return STORE_ERROR;
        if (set_field(u, k->str, v->str) != 0) {
            log_line("user record has an oversized field %.40s", k->str);
            return STORE_ERROR;
        }
    }
    /* A hash without the essentials is corruption, not a user. */
    return u->id[0] && u->role[0] ? STORE_OK : STORE_ERROR;
}

enum store_status user_load(struct store_conn *c, const char *id, struct user *u)
{
    char key[KEY_MAX];
    redisReply *r;

    memset(u, 0, sizeof *u);
    if (user_key(key, id) != 0)
        return STORE_NOT_FOUND;
    enum store_status st = store_cmd(c, &r, (const char *[]){ "HGETALL", key, NULL });
    if (st != STORE_OK)
        return st;
    st = fill_user(r, u);
    freeReplyObject(r);
    return st;
}

enum store_status user_id_by_email(struct store_conn *c, const char *email,
                                   char id[UUID_STR_LEN])
{
    return store_get_str(c, id, UUID_STR_LEN,
                         (const char *[]){ "HGET", ADSERVE_KEY_USER_BY_EMAIL, email, NULL });
}

static int add_nullable(cJSON *o, const char *name, const char *value)
{
    cJSON *v = value[0] ? cJSON_AddStringToObject(o, name, value)
                        : cJSON_AddNullToObject(o, name);
    return v == NULL ? -1 : 0;
}

cJSON *user_to_json(const struct user *u)
{
    cJSON *o = cJSON_CreateObject();

    if (o == NULL)
        return NULL;
    if (cJSON_AddStringToObject(o, "id", u->id) == NULL ||
        cJSON_AddStringToObject(o, "email", u->email) == NULL ||
        cJSON_AddStringToObject(o, "role", u->role) == NULL ||
        add_nullable(o, "advertiser_id", u->advertiser_id) != 0 ||
        cJSON_AddStringToObject(o, "created_at", u->created_at) == NULL ||
        cJSON_AddStringToObject(o, "updated_at", u->updated_at) == NULL ||
        cJSON_AddStringToObject(o, "created_by", u->created_by) == NULL) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

void user_txn_write(struct txn *t, const struct user *u, const struct user *old)
{
    char key[KEY_MAX];

    if (user_key(key, u->id) != 0) {
        t->failed = true;
        return;
    }
    /* Optional fields are written only when set, so HGETALL leaves them "". */
    const char *argv[32] = {
        "HSET", key, "id", u->id, "email", u->email, "role", u->role,
        "password_hash", u->password_hash, "created_at", u->created_at,
        "updated_at", u->updated_at, "created_by", u->created_by,
    };
    size_t n = 16;
    if (u->advertiser_id[0]) {
        argv[n++] = "advertiser_id";
        argv[n++] = u->advertiser_id;
    }
    if (u->session_gen[0]) {
        argv[n++] = "session_gen";
        argv[n++] = u->session_gen;
    }
    if (u->api_token_ver[0]) {
        argv[n++] = "api_token_ver";
        argv[n++] = u->api_token_ver;
    }
    argv[n] = NULL;
    txn_argv(t, argv);
    if (old != NULL && old->advertiser_id[0] && !u->advertiser_id[0])
        txn_cmd(t, "HDEL", key, "advertiser_id", NULL);
    if (old != NULL && strcmp(old->email, u->email) != 0)
        txn_cmd(t, "HDEL", ADSERVE_KEY_USER_BY_EMAIL, old->email, NULL);
    if (old == NULL || strcmp(old->email, u->email) != 0)
        txn_cmd(t, "HSET", ADSERVE_KEY_USER_BY_EMAIL, u->email, u->id, NULL);
    if (old == NULL)
        txn_cmd(t, "SADD", ADSERVE_KEY_USERS, u->id, NULL);
}

void user_txn_delete(struct txn *t, const struct user *u)
{
    char key[KEY_MAX];

    if (user_key(key, u->id) != 0) {
        t->failed = true;
        return;
    }
    txn_cmd(t, "DEL", key, NULL);
    txn_cmd(t, "HDEL", ADSERVE_KEY_USER_BY_EMAIL, u->email, NULL);
    txn_cmd(t, "SREM", ADSERVE_KEY_USERS, u->id, NULL);
}

enum store_status user_insert(struct store_conn *c, const struct user *u,
                              const struct user *actor)
{
    struct txn t;
    cJSON *after = user_to_json(u);

    if (after == NULL)
        return STORE_ERROR;
    txn_init(&t);
    user_txn_write(&t, u, NULL);
    txn_audit(&t, actor, "create", ADSERVE_RECORD_USER, u->id, NULL, after);
    enum store_status st = txn_exec(&t, c);
    txn_free(&t);
    cJSON_Delete(after);
    return st;
}

/* The ids of adserve:users, as a reply the caller frees. */
static enum store_status user_ids(struct store_conn *c, redisReply **r)
{
    enum store_status st = store_cmd(c, r, (const char *[]){ "SMEMBERS", ADSERVE_KEY_USERS, NULL });

    if (st == STORE_OK && (*r)->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(*r);
        *r = NULL;
        st = STORE_ERROR;
    }
    return st;
}

/* Emails are unique: a stable order for paging. */
static int by_email(const void *a, const void *b)
{
    const struct user *x = a, *y = b;
    return strcmp(x->email, y->email);
}

enum store_status users_load_all(struct store_conn *c, struct user **out, size_t *n)
{
    redisReply *r;
    enum store_status st = user_ids(c, &r);

    *out = NULL;
    *n = 0;
    if (st != STORE_OK)
        return st;
    struct user *all = r->elements ? calloc(r->elements, sizeof *all) : NULL;
    if (r->elements && all == NULL) {
        freeReplyObject(r);
        return STORE_ERROR;
    }
    size_t k = 0;
    for (size_t i = 0; st == STORE_OK && i < r->elements; i++) {
        if (r->element[i]->type != REDIS_REPLY_STRING)
            continue;
        enum store_status ls = user_load(c, r->element[i]->str, &all[k]);
        sodium_memzero(all[k].password_hash, sizeof all[k].password_hash);
        if (ls == STORE_OK)
            k++;
        else if (ls != STORE_NOT_FOUND)     /* deleted meanwhile: skip it */
            st = ls;
    }
    freeReplyObject(r);
    if (st != STORE_OK) {
        free(all);
        return st;
    }
    if (k > 1)                      /* all is NULL when there is no user */
        qsort(all, k, sizeof *all, by_email);
    *out = all;
    *n = k;
    return STORE_OK;
}

static enum store_status role_of(struct store_conn *c, const char *id, char role[16])
{
    char key[KEY_MAX];

    if (user_key(key, id) != 0)
        return STORE_ERROR;
    return store_get_str(c, role, 16, (const char *[]){ "HGET", key, "role", NULL });
}

/* WATCH of up to WATCH_BATCH user keys of r's ids, from index *i on. */
static enum store_status watch_batch(struct store_conn *c, const redisReply *r, size_t *i)
{
    char keys[WATCH_BATCH][KEY_MAX];
    const char *argv[WATCH_BATCH + 2] = { "WATCH" };
    size_t n = 0;

    for (; *i < r->elements && n < WATCH_BATCH; (*i)++) {
        const redisReply *e = r->element[*i];
        if (e->type != REDIS_REPLY_STRING || user_key(keys[n], e->str) != 0)
            continue;
        argv[1 + n] = keys[n];
        n++;
    }
    argv[1 + n] = NULL;
    return n == 0 ? STORE_OK : store_do(c, argv);
}

enum store_status users_watch_admins(struct store_conn *c, size_t *admins)
{
    redisReply *r;
    enum store_status st = store_do(c, (const char *[]){ "WATCH", ADSERVE_KEY_USERS, NULL });

    *admins = 0;
    if (st == STORE_OK)
        st = user_ids(c, &r);
    if (st != STORE_OK)
        return st;
    /* Every key is watched before any role is read. */
    for (size_t i = 0; st == STORE_OK && i < r->elements;)
        st = watch_batch(c, r, &i);
    for (size_t i = 0; st == STORE_OK && i < r->elements; i++) {
        char role[16];
        if (r->element[i]->type != REDIS_REPLY_STRING)
            continue;
        enum store_status rs = role_of(c, r->element[i]->str, role);
        if (rs == STORE_OK && strcmp(role, "admin") == 0)
            (*admins)++;
        else if (rs != STORE_OK && rs != STORE_NOT_FOUND)
            st = rs;
    }
    freeReplyObject(r);
    return st;
}

enum store_status users_admin_exists(struct store_conn *c)
{
    redisReply *r;
    enum store_status st = store_cmd(c, &r, (const char *[]){ "SMEMBERS", ADSERVE_KEY_USERS, NULL });

    if (st != STORE_OK)
        return st;
    st = r->type == REDIS_REPLY_ARRAY ? STORE_NOT_FOUND : STORE_ERROR;
    /* Runs once at start, so a scan is fine and keeps no extra index that
     * every later user mutation would have to maintain. */
    for (size_t i = 0; st == STORE_NOT_FOUND && i < r->elements; i++) {
        char role[16];
        if (r->element[i]->type != REDIS_REPLY_STRING)
            continue;
        enum store_status rs = role_of(c, r->element[i]->str, role);
        if (rs == STORE_OK && strcmp(role, "admin") == 0)
            st = STORE_OK;
        else if (rs == STORE_UNAVAILABLE)
            st = rs;
    }
    freeReplyObject(r);
    return st;
}
