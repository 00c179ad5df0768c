/* The route table.  New endpoints are new rows; roles 0 means public,
 * otherwise a valid access token with one of the listed roles is needed
 * before the body is even read. */
#include "api.h"

const struct route routes[] = {
    { "GET", "/api/health", api_health, 0, BODY_NONE },
    { "POST", "/api/auth/login", api_auth_login, 0, BODY_JSON },
    { "GET", "/api/auth/me", api_auth_me, ROLES_ANY, BODY_NONE },
};

const size_t routes_count = sizeof routes / sizeof routes[0];
