#include "users.h"

#include "log.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define KEY_MAX 128

static const struct {
    const char *name;
    unsigned bit;
} roles[] = {
    { "admin", ROLE_ADMIN },
    { "operator", ROLE_OPERATOR },
    { "advertiser", ROLE_ADVERTISER },
};

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

static int user_key(char key[KEY_MAX], const char *id)
{
    int n = snprintf(key, KEY_MAX, "adserve:user:%s", id);
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
        F(updated_at), F(created_by), F(password_hash),
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
                         (const char *[]){ "HGET", "adserve:user_by_email", email, NULL });
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

enum store_status user_insert(struct store_conn *c, const struct user *u)
{
    char key[KEY_MAX];

    if (user_key(key, u->id) != 0)
        return STORE_ERROR;
    /* advertiser_id is written only when set, so HGETALL leaves it "". */
    const char *hset[] = {
        "HSET", key, "id", u->id, "email", u->email, "role", u->role,
        "password_hash", u->password_hash, "created_at", u->created_at,
        "updated_at", u->updated_at, "created_by", u->created_by,
        u->advertiser_id[0] ? "advertiser_id" : NULL, u->advertiser_id, NULL,
    };
    const char *const *cmds[] = {
        hset,
        (const char *[]){ "HSET", "adserve:user_by_email", u->email, u->id, NULL },
        (const char *[]){ "SADD", "adserve:users", u->id, NULL },
    };
    return store_exec(c, cmds, sizeof cmds / sizeof cmds[0]);
}

static enum store_status role_of(struct store_conn *c, const char *id, char role[16])
{
    char key[KEY_MAX];

    if (user_key(key, id) != 0)
        return STORE_ERROR;
    return store_get_str(c, role, 16, (const char *[]){ "HGET", key, "role", NULL });
}

enum store_status users_admin_exists(struct store_conn *c)
{
    redisReply *r;
    enum store_status st = store_cmd(c, &r, (const char *[]){ "SMEMBERS", "adserve:users", NULL });

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
