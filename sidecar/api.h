/* Route handlers, one file per resource group (api_*.c). */
#ifndef ADSERVE_API_H
#define ADSERVE_API_H

#include "http.h"

route_handler api_health;
route_handler api_auth_login;
route_handler api_auth_me;

#endif
