/* Shapes of the Auth, Settings and Users routes (schema_auth.h). */
#include "schema_auth.h"

#include "auth.h"
#include "users.h"

/* ---- fields shared by several shapes ------------------------------------- */

static const struct schema email_s = {
    .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_EMAIL, .max_length = EMAIL_MAX,
    .description = "e-mail address; compared case-insensitively, stored lower-cased",
};

/* New passwords: the policy (README). */
static const struct schema new_password_s = {
    .type = SCHEMA_STRING, .min_length = PASSWORD_MIN, .max_length = PASSWORD_MAX,
    .description = "at least 10 characters; never returned",
};

static const char *const role_values[] = { "admin", "operator", "advertiser", NULL };
static const struct schema role_s = {
    .type = SCHEMA_STRING, .enum_values = role_values,
    .description = "admin: everything; operator: inventory and campaigns, not users; "
                   "advertiser: its own advertiser's data",
};

static const struct schema uuid_s = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_UUID };
static const struct schema time_s = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_DATE_TIME };
static const struct schema advertiser_id_s = {
    .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_UUID, .nullable = true,
    .description = "required for the advertiser role, null otherwise; the advertiser's "
                   "existence is not checked (advertisers come later)",
};
static const struct schema string_s = { .type = SCHEMA_STRING };

/* ---- login and refresh ------------------------------------------------------ */

/* Any string: an address that cannot exist is an unknown account (401). */
static const struct schema login_email_s = { .type = SCHEMA_STRING, .max_length = EMAIL_MAX };
static const struct schema login_password_s = { .type = SCHEMA_STRING, .max_length = PASSWORD_MAX };

static const struct schema_field login_fields[] = {
    { "email", &login_email_s, .required = true },
    { "password", &login_password_s, .required = true, .write_only = true },
    { NULL },
};
const struct schema schema_login_request = {
    .name = "LoginRequest", .type = SCHEMA_OBJECT, .fields = login_fields,
    .description = "5 failed logins per account and 20 per client within 15 minutes "
                   "answer 429 (with Retry-After) until the window ends",
};

static const struct schema refresh_token_s = {
    .type = SCHEMA_STRING, .max_length = 4096,
    .description = "single-use: each refresh returns a new one; presenting a used one "
                   "again revokes every refresh token of that login",
};
static const struct schema_field refresh_fields[] = {
    { "refresh_token", &refresh_token_s, .required = true },
    { NULL },
};
const struct schema schema_refresh_request = {
    .name = "RefreshRequest", .type = SCHEMA_OBJECT, .fields = refresh_fields,
};

static const char *const bearer_values[] = { "bearer", NULL };
static const struct schema bearer_s = { .type = SCHEMA_STRING, .enum_values = bearer_values };
static const struct schema expires_in_s = {
    .type = SCHEMA_INTEGER, .min = 1, .has_min = true,
    .description = "access token lifetime in seconds",
};
static const struct schema_field token_pair_fields[] = {
    { "access_token", &string_s, .required = true,
      .description = "HS256 JWT: sub, role, advertiser_id, iat, exp, jti, typ \"access\"" },
    { "refresh_token", &string_s, .required = true,
      .description = "opaque, single-use, 30 days" },
    { "token_type", &bearer_s, .required = true },
    { "expires_in", &expires_in_s, .required = true },
    { NULL },
};
const struct schema schema_token_pair = {
    .name = "TokenPair", .type = SCHEMA_OBJECT, .fields = token_pair_fields,
};

/* ---- password reset ---------------------------------------------------------- */

static const struct schema_field forgot_fields[] = {
    { "email", &email_s, .required = true },
    { NULL },
};
const struct schema schema_forgot_request = {
    .name = "ForgotPasswordRequest", .type = SCHEMA_OBJECT, .fields = forgot_fields,
    .description = "always 200 for a well-formed address; a reset link valid "
                   "ADSERVE_RESET_TTL seconds is mailed when the account exists, at most 3 "
                   "per address and 10 per client per hour",
};

static const struct schema reset_token_s = { .type = SCHEMA_STRING, .max_length = 256 };
static const struct schema_field reset_fields[] = {
    { "token", &reset_token_s, .required = true,
      .description = "the token of the mailed link; single-use" },
    { "password", &new_password_s, .required = true, .write_only = true },
    { NULL },
};
const struct schema schema_reset_request = {
    .name = "ResetPasswordRequest", .type = SCHEMA_OBJECT, .fields = reset_fields,
};

static const struct schema_field message_fields[] = {
    { "detail", &string_s, .required = true },
    { NULL },
};
const struct schema schema_message = {
    .name = "Message", .type = SCHEMA_OBJECT, .fields = message_fields,
};

/* ---- API token ------------------------------------------------------------------ */

static const struct schema_field api_token_fields[] = {
    { "api_token", &string_s, .required = true,
      .description = "HS256 JWT with typ \"api\"; used like an access token; issuing a new "
                     "one, or a password change, revokes it" },
    { "token_type", &bearer_s, .required = true },
    { "expires_at", &time_s, .required = true },
    { NULL },
};
const struct schema schema_api_token = {
    .name = "ApiToken", .type = SCHEMA_OBJECT, .fields = api_token_fields,
};

/* ---- users ------------------------------------------------------------------------ */

static const struct schema_field user_fields[] = {
    { "id", &uuid_s, .read_only = true },
    { "email", &email_s, .required = true },
    { "password", &new_password_s, .required = true, .write_only = true },
    { "role", &role_s, .required = true },
    { "advertiser_id", &advertiser_id_s, .required = false },
    { "created_at", &time_s, .read_only = true },
    { "updated_at", &time_s, .read_only = true },
    { "created_by", &uuid_s, .read_only = true },
    { NULL },
};
/* GET /api/users */
static const struct schema email_part = {
    .type = SCHEMA_STRING, .min_length = 1, .max_length = 254,
};
static const struct schema_field users_list_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "role", .schema = &role_s },
    { "q", &email_part, .description = "a substring of the e-mail address, any case" },
    { NULL },
};
const struct schema schema_users_list_query = {
    .type = SCHEMA_OBJECT, .fields = users_list_query_fields,
};

const struct schema schema_user = {
    .name = "User", .type = SCHEMA_OBJECT, .fields = user_fields,
    .description = "a management account; admin only; a password change revokes the "
                   "user's tokens",
};

/* ---- helpers ------------------------------------------------------------------------ */

void schema_auth_reply(struct reply *rep, int status, const struct schema *s, cJSON *body)
{
    cJSON *out = body != NULL ? schema_output(s, body) : NULL;

    cJSON_Delete(body);
    reply_json(rep, status, out);
}
