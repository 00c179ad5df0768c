/* What adserve is built from and shipped with: the License group's list
 * (api_license.c), and the System group's library versions. */
#ifndef ADSERVE_COMPONENTS_H
#define ADSERVE_COMPONENTS_H

#include <stdbool.h>
#include <stddef.h>

struct component {
    const char *name;
    const char *license;            /* SPDX, as Debian's copyright file says */
    const char *package;            /* the Debian package that ships it */
    const char *used_by;            /* "sidecar", "module", "sidecar, module", "node" */
    const char *(*version)(void);   /* as linked into the sidecar, or NULL */
};

extern const struct component components[];
extern const size_t components_count;

#endif
