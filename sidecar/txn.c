#include "txn.h"
#include "util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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
        txn_cmd(t, "XADD", AUDIT_STREAM, "MAXLEN", "~", AUDIT_MAXLEN, "*",
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
    txn_cmd(t, "INCR", REVISION_KEY, NULL);
}

enum store_status txn_exec(struct txn *t, struct store_conn *c)
{
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
