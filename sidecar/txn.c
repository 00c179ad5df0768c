#include "txn.h"
#include "util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void txn_init(struct txn *t)
{
    memset(t, 0, sizeof *t);
}

void txn_argv(struct txn *t, const char *const *argv)
{
    size_t n = 0;

    while (argv[n] != NULL)
        n++;
    if (t->failed || n == 0 || n > TXN_MAX_ARGS || t->n == TXN_MAX_CMDS) {
        t->failed = true;
        return;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char ***cmds = realloc(t->cmds, cap * sizeof *cmds);
        if (cmds == NULL) {
            t->failed = true;
            return;
        }
        t->cmds = cmds;
        t->cap = cap;
    }
    char **copy = calloc(n + 1, sizeof *copy);
    if (copy == NULL) {
        t->failed = true;
        return;
    }
    t->cmds[t->n++] = copy;
    for (size_t i = 0; i < n; i++) {
        copy[i] = strdup(argv[i]);
        if (copy[i] == NULL) {
            t->failed = true;
            return;
        }
    }
}

void txn_cmd(struct txn *t, const char *arg, ...)
{
    const char *argv[TXN_MAX_ARGS + 2];
    size_t n = 0;
    va_list ap;

    va_start(ap, arg);
    for (const char *a = arg; a != NULL && n <= TXN_MAX_ARGS; a = va_arg(ap, const char *))
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    txn_argv(t, argv);
}

/* JSON text of a resource, or "null" */
static char *print_or_null(const cJSON *v)
{
    return v != NULL ? cJSON_PrintUnformatted(v) : strdup("null");
}

void txn_audit(struct txn *t, const struct user *actor, const char *action,
               const char *resource, const char *id,
               const cJSON *before, const cJSON *after)
{
    char at[RFC3339_LEN];
    char *b = print_or_null(before), *a = print_or_null(after);

    if (b == NULL || a == NULL || now_rfc3339(at) != 0) {
        t->failed = true;
    } else {
        txn_cmd(t, "XADD", ADSERVE_KEY_AUDIT, "MAXLEN", "~", ADSERVE_AUDIT_MAXLEN, "*",
                "at", at,
                "actor", actor ? actor->id : "system",
                "role", actor ? actor->role : "system",
                "action", action, "resource", resource, "id", id,
                "before", b, "after", a, NULL);
    }
    cJSON_free(b);
    cJSON_free(a);
}

void txn_bump_revision(struct txn *t)
{
    txn_cmd(t, "INCR", ADSERVE_KEY_REV, NULL);
}

/* The change log's name of a hash serving reads (the contract's kinds), or NULL */
static const char *serving_kind(const char *key)
{
    int k = adserve_kind_by_key(key);

    return k < 0 ? NULL : adserve_kinds[k].name;
}

static bool is_cmd(char **argv, const char *name, const char *key)
{
    return strcasecmp(argv[0], name) == 0 &&
           (key == NULL || (argv[1] != NULL && strcmp(argv[1], key) == 0));
}

/* Adds the change log entries and the revision bump that the commands so
 * far call for. */
static void log_changes(struct txn *t)
{
    size_t n = t->n;
    bool changed = false, bumped = false;

    if (t->logged)
        return;
    t->logged = true;
    for (size_t i = 0; i < n; i++) {
        char **a = t->cmds[i];
        const char *kind = a[1] != NULL ? serving_kind(a[1]) : NULL;
        bool hset = is_cmd(a, "HSET", NULL), hdel = is_cmd(a, "HDEL", NULL);

        bumped |= is_cmd(a, "INCR", ADSERVE_KEY_REV);
        if (kind == NULL || !(hset || hdel))
            continue;
        changed = true;
        /* HSET key id value [id value ...], HDEL key id [id ...] */
        for (size_t j = 2; a[j] != NULL && (!hset || a[j + 1] != NULL); j += hset ? 2 : 1)
            txn_cmd(t, "XADD", ADSERVE_KEY_CHANGES, "MAXLEN", "~", ADSERVE_CHANGES_MAXLEN, "*",
                    ADSERVE_CHANGE_KIND, kind, ADSERVE_CHANGE_ID, a[j], NULL);
    }
    if (changed && !bumped)
        txn_bump_revision(t);
}

enum store_status txn_exec(struct txn *t, struct store_conn *c)
{
    log_changes(t);
    if (t->failed || t->n == 0)
        return STORE_ERROR;
    return store_exec(c, (const char *const *const *)t->cmds, t->n);
}

void txn_free(struct txn *t)
{
    for (size_t i = 0; i < t->n; i++) {
        for (char **a = t->cmds[i]; *a != NULL; a++)
            free(*a);
        free(t->cmds[i]);
    }
    free(t->cmds);
    memset(t, 0, sizeof *t);
}
