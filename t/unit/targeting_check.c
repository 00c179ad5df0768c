/* targeting-check: feeds rules through serving's compiler, the one judge
 * of the targeting grammar (adserve_target_check). Reads one `targeting`
 * JSON value a line on stdin and prints TAP: "ok N" for a rule that
 * compiles, "not ok N - <path>: <reason>" for one that does not.
 *
 * t/109-targeting.t sends it every rule the management API accepted in
 * that test, as the API stored it: a rule the sidecar accepts must always
 * compile. Not a unit test of its own (it needs the rules): built into
 * build/t/tools/, out of prove's way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "adserve_target.h"

int main(void) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int n = 0, failed = 0;

    while ((len = getline(&line, &cap, stdin)) > 0) {
        adserve_target_err_t err;
        cJSON *rule = cJSON_ParseWithLength(line, (size_t) len);
        int rc;

        n++;
        if (rule == NULL) {
            printf("not ok %d - line %d is not JSON\n", n, n);
            failed++;
            continue;
        }
        rc = adserve_target_check(rule, &err);
        if (rc == 0) {
            printf("ok %d\n", n);
        } else {
            printf("not ok %d - %s: %s\n", n, rc < 0 ? "(out of memory)" : err.path,
                   rc < 0 ? "" : err.reason);
            failed++;
        }
        cJSON_Delete(rule);
    }
    free(line);
    printf("1..%d\n", n);
    return failed != 0;
}
