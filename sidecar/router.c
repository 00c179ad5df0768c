#include "router.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Length of the segment starting at s (up to the next '/' or the end). */
static size_t seg_len(const char *s)
{
    return strcspn(s, "/");
}

static bool is_param(const char *seg, size_t n)
{
    return n > 2 && seg[0] == '{' && seg[n - 1] == '}';
}

static bool match_segment(const char *pat, size_t pn, const char *path, size_t n,
                          struct route_params *params)
{
    if (!is_param(pat, pn))
        return pn == n && memcmp(pat, path, n) == 0;
    if (n == 0 || n >= ROUTE_PARAM_MAX || params->n >= ROUTE_MAX_PARAMS)
        return false;
    params->p[params->n].name = pat + 1;
    params->p[params->n].name_len = pn - 2;
    memcpy(params->p[params->n].value, path, n);
    params->p[params->n].value[n] = '\0';
    params->n++;
    return true;
}

/* Matches path against pattern segment by segment ("/a/{id}" vs "/a/42"). */
static bool match_path(const char *pattern, const char *path, struct route_params *params)
{
    params->n = 0;
    for (;;) {
        if (*pattern != '/' || *path != '/')
            return *pattern == '\0' && *path == '\0';
        pattern++;
        path++;
        size_t pn = seg_len(pattern), n = seg_len(path);
        if (!match_segment(pattern, pn, path, n, params))
            return false;
        pattern += pn;
        path += n;
    }
}

static void allow_add(char *allow, size_t allowlen, const char *method)
{
    size_t used = strlen(allow);

    if (strstr(allow, method) == NULL)
        snprintf(allow + used, allowlen - used, "%s%s", used ? ", " : "", method);
}

enum route_match router_find(const char *method, const char *path,
                             const struct route **found, struct route_params *params,
                             char *allow, size_t allowlen)
{
    struct route_params scratch;
    bool path_known = false;

    allow[0] = '\0';
    for (size_t t = 0; t < route_tables_count; t++) {
        const struct route *routes = route_tables[t].routes;

        for (size_t i = 0; i < *route_tables[t].count; i++) {
            if (!match_path(routes[i].pattern, path, &scratch))
                continue;
            if (strcmp(routes[i].method, method) == 0) {
                *found = &routes[i];
                *params = scratch;
                return ROUTE_FOUND;
            }
            path_known = true;
            allow_add(allow, allowlen, routes[i].method);
        }
    }
    return path_known ? ROUTE_NO_METHOD : ROUTE_NO_PATH;
}

const char *route_param(const struct route_params *params, const char *name)
{
    size_t len = strlen(name);

    for (int i = 0; i < params->n; i++)
        if (params->p[i].name_len == len && memcmp(params->p[i].name, name, len) == 0)
            return params->p[i].value;
    return NULL;
}
