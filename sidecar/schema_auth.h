/* The request and response shapes of the Auth, Settings and Users routes
 * (schema.h), and two helpers that apply them. */
#ifndef ADSERVE_SCHEMA_AUTH_H
#define ADSERVE_SCHEMA_AUTH_H

#include "json_util.h"
#include "schema.h"

extern const struct schema schema_login_request;     /* {email, password} */
extern const struct schema schema_refresh_request;   /* {refresh_token} */
extern const struct schema schema_token_pair;        /* login and refresh answer */
extern const struct schema schema_forgot_request;    /* {email} */
extern const struct schema schema_reset_request;     /* {token, password} */
extern const struct schema schema_message;           /* {detail} on success */
extern const struct schema schema_api_token;         /* {api_token, token_type, expires_at} */
extern const struct schema schema_user;              /* the user resource */
extern const struct schema schema_users_list_query;  /* limit, offset, role, q */


/* Answers status with the output view of body (freed here). */
void schema_auth_reply(struct reply *rep, int status, const struct schema *s, cJSON *body);

#endif
