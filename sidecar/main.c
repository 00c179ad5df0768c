/* adserve-sidecar: the management API of adserve (JWT-authenticated, writes
 * to Redis), proxied by nginx under /api/.
 *
 * Configuration (environment variables):
 *
 *   ADSERVE_SIDECAR_PORT    8081        TCP port; binds 127.0.0.1 only.
 *   ADSERVE_REDIS_HOST      127.0.0.1   Redis host (an IP address avoids a
 *                                       blocking DNS lookup per reconnect).
 *   ADSERVE_REDIS_PORT      6380        Redis port.
 *   ADSERVE_REDIS_SENTINELS (unset)     IP:port[,IP:port...] of Redis
 *                                       Sentinels: the primary is found
 *                                       through them, again after a
 *                                       failover (host and port unused).
 *   ADSERVE_REDIS_MASTER    adserve     The name the sentinels monitor.
 *   ADSERVE_VAR             var         Runtime folder (secrets/ lives here).
 *   ADSERVE_JWT_SECRET      (generated) HS256 signing key, at least 32
 *                                       bytes.  When unset, the contents of
 *                                       $ADSERVE_VAR/secrets/jwt.key are used
 *                                       (created on first run: 32 random
 *                                       bytes hex-encoded, mode 0600).
 *   ADSERVE_ADMIN_EMAIL     admin@example.com
 *                                       The first admin's email.
 *   ADSERVE_ADMIN_PASSWORD  (none)      The first admin's password; needed
 *                                       only when no admin exists yet (the
 *                                       sidecar exits with an error if it is
 *                                       needed and unset).
 *   ADSERVE_MAX_BODY        1048576     Largest request body in bytes (413).
 *   ADSERVE_ACCESS_TTL      900         Access token lifetime in seconds.
 *   ADSERVE_RESET_TTL       3600        Password-reset token lifetime (s).
 *   ADSERVE_SMTP_URL        (unset)     SMTP server for mails (mail.h);
 *                                       unset: mails go to adserve:outbox.
 *   ADSERVE_SMTP_FROM       adserve@localhost   Sender of mails.
 *   ADSERVE_PUBLIC_URL      http://127.0.0.1:$ADSERVE_PORT   Base of links.
 *   ADSERVE_PROXY_TOKEN     (unset)     The secret nginx sends in
 *                                       X-Adserve-Proxy; only with it is
 *                                       X-Real-IP believed (32+ bytes).
 *   ADSERVE_SEGMENT_UPLOAD_MAX  268435456   Largest segment upload (bytes).
 *   ADSERVE_MEDIA_DIR       $ADSERVE_VAR/media   The media library's files
 *                                       (nginx serves them under /media/).
 *   ADSERVE_MEDIA_IMAGE_MAX 10485760    Largest image upload (bytes).
 *   ADSERVE_MEDIA_VIDEO_MAX 104857600   Largest video upload (bytes).
 *
 * Start-up: wait up to 30 s for Redis, create the first admin if needed,
 * then serve.  SIGTERM or SIGINT stops the server and exits 0. */
#include "admin.h"
#include "auth.h"
#include "http.h"
#include "log.h"
#include "mail.h"
#include "media_library.h"
#include "prom.h"
#include "ratelimit.h"
#include "rec_jobs.h"
#include "secret.h"
#include "segment_upload.h"
#include "service.h"
#include "store.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REDIS_WAIT_S 30
#define JWT_SECRET_MIN 32

struct config {
    long port;
    const char *redis_host;
    long redis_port;
    const char *redis_sentinels;    /* "" when the primary is fixed */
    const char *redis_master;
    const char *var_dir;
    const char *admin_email;
    const char *admin_password;
    long max_body;
    long access_ttl;
    long rec_jobs_interval;
    long segment_upload_max;
    char media_dir[MEDIA_PATH_MAX];
    long media_image_max, media_video_max;
};

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : fallback;
}

/* A whole decimal number in [min, max]; -1 (logged) otherwise. */
static int env_long(const char *name, long fallback, long min, long max, long *out)
{
    const char *v = getenv(name);
    char *end;

    *out = fallback;
    if (v == NULL || v[0] == '\0')
        return 0;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < min || n > max) {
        log_line("%s must be a whole number from %ld to %ld", name, min, max);
        return -1;
    }
    *out = n;
    return 0;
}

static int load_config(struct config *cfg)
{
    cfg->redis_host = env_or("ADSERVE_REDIS_HOST", "127.0.0.1");
    cfg->redis_sentinels = env_or("ADSERVE_REDIS_SENTINELS", "");
    cfg->redis_master = env_or("ADSERVE_REDIS_MASTER", ADSERVE_REDIS_MASTER_DEFAULT);
    cfg->var_dir = env_or("ADSERVE_VAR", "var");
    cfg->admin_email = env_or("ADSERVE_ADMIN_EMAIL", "admin@example.com");
    cfg->admin_password = getenv("ADSERVE_ADMIN_PASSWORD");
    if (env_long("ADSERVE_SIDECAR_PORT", 8081, 1, 65535, &cfg->port) != 0 ||
        env_long("ADSERVE_REDIS_PORT", 6380, 1, 65535, &cfg->redis_port) != 0 ||
        env_long("ADSERVE_MAX_BODY", 1048576, 1, 64L * 1024 * 1024, &cfg->max_body) != 0 ||
        env_long("ADSERVE_ACCESS_TTL", 900, 1, 7L * 24 * 3600, &cfg->access_ttl) != 0 ||
        env_long("ADSERVE_REC_JOBS_INTERVAL", 60, 0, 86400, &cfg->rec_jobs_interval) != 0 ||
        env_long("ADSERVE_SEGMENT_UPLOAD_MAX", (long)SEGMENT_UPLOAD_MAX_DEFAULT, 1,
                 16L * 1024 * 1024 * 1024, &cfg->segment_upload_max) != 0 ||
        env_long("ADSERVE_MEDIA_IMAGE_MAX", (long)MEDIA_IMAGE_MAX_DEFAULT, 1,
                 1024L * 1024 * 1024, &cfg->media_image_max) != 0 ||
        env_long("ADSERVE_MEDIA_VIDEO_MAX", (long)MEDIA_VIDEO_MAX_DEFAULT, 1,
                 16L * 1024 * 1024 * 1024, &cfg->media_video_max) != 0)
        return -1;
    segment_upload_init((size_t)cfg->segment_upload_max);
    const char *media = getenv("ADSERVE_MEDIA_DIR");
    int n = media != NULL && media[0] != '\0'
                ? snprintf(cfg->media_dir, sizeof cfg->media_dir, "%s", media)
                : snprintf(cfg->media_dir, sizeof cfg->media_dir, "%s/media", cfg->var_dir);
    if (n < 0 || (size_t)n >= sizeof cfg->media_dir) {
        log_line("ADSERVE_MEDIA_DIR (or ADSERVE_VAR) is too long");
        return -1;
    }
    return 0;
}

/* The signing key: from the environment, else from (or into) the file. */
static char *load_jwt_secret(const struct config *cfg)
{
    const char *env = getenv("ADSERVE_JWT_SECRET");
    char *secret = env != NULL && env[0] != '\0' ? strdup(env) : secret_load_or_create(cfg->var_dir, "jwt.key");

    if (secret == NULL)
        return NULL;
    if (strlen(secret) < JWT_SECRET_MIN) {
        log_line("the JWT secret must be at least %d bytes", JWT_SECRET_MIN);
        sodium_memzero(secret, strlen(secret));
        free(secret);
        return NULL;
    }
    return secret;
}

/* Sleeps up to ms, returning the signal number if SIGTERM/SIGINT came. */
static int sleep_or_signal(const sigset_t *stop, long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    int sig = sigtimedwait(stop, NULL, &ts);
    return sig > 0 ? sig : 0;
}

/* Redis may start after us (run scripts start both): retry with backoff.
 * 0 when Redis answers, 1 when a stop signal came first, -1 on giving up. */
static int wait_for_redis(const struct config *cfg, const sigset_t *stop)
{
    long delay = 100, waited = 0;

    for (;;) {
        struct store_conn *c = store_acquire();
        enum store_status st = store_ping(c);
        store_release(c);
        if (st == STORE_OK)
            return 0;
        if (waited >= REDIS_WAIT_S * 1000L) {
            log_line("redis at %s:%ld not reachable after %d s, giving up", cfg->redis_host,
                     cfg->redis_port, REDIS_WAIT_S);
            return -1;
        }
        if (sleep_or_signal(stop, delay) != 0)
            return 1;
        waited += delay;
        delay = delay * 2 > 2000 ? 2000 : delay * 2;
    }
}

static int bootstrap(const struct config *cfg)
{
    struct store_conn *c = store_acquire();
    int rc = admin_bootstrap(c, cfg->admin_email, cfg->admin_password);
    store_release(c);
    return rc;
}

/* SIGTERM/SIGINT are blocked in every thread (MHD's inherit the mask) and
 * taken synchronously by the main thread with sigwait. */
static int block_signals(sigset_t *stop)
{
    if (sigemptyset(stop) != 0 || sigaddset(stop, SIGTERM) != 0 || sigaddset(stop, SIGINT) != 0)
        return -1;
    /* A Redis connection closing under a write must not kill the process. */
    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
        return -1;
    return pthread_sigmask(SIG_BLOCK, stop, NULL) == 0 ? 0 : -1;
}

static int serve(const struct config *cfg, const sigset_t *stop)
{
    prom_start();
    struct MHD_Daemon *d = http_start((uint16_t)cfg->port, (size_t)cfg->max_body);
    int sig = 0;

    if (d == NULL)
        return -1;
    log_line("adserve-sidecar listening on 127.0.0.1:%ld", cfg->port);
    while (sigwait(stop, &sig) != 0)
        ;
    http_stop(d);
    log_line("adserve-sidecar stopped (%s)", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    return 0;
}

static int run(const struct config *cfg, const sigset_t *stop)
{
    char *secret = load_jwt_secret(cfg);
    int rc = -1;

    if (secret == NULL)
        return -1;
    if (auth_init(secret, strlen(secret), cfg->access_ttl) != 0)
        log_line("cannot initialise authentication");
    else if (store_init(cfg->redis_host, (int)cfg->redis_port, HTTP_THREADS) != 0)
        log_line("cannot initialise the redis pool");
    else if (cfg->redis_sentinels[0] != '\0' &&
             store_use_sentinels(cfg->redis_sentinels, cfg->redis_master) != 0)
        log_line("ADSERVE_REDIS_SENTINELS must be IP:port[,IP:port...] (at most %d)",
                 STORE_SENTINELS);
    else if (ratelimit_init(getenv("ADSERVE_PROXY_TOKEN")) != 0)
        log_line("ADSERVE_PROXY_TOKEN must be 32 to 127 bytes");
    else if (mail_init(cfg->var_dir) != 0)
        log_line("cannot initialise mail");
    else if (service_init(cfg->var_dir) != 0)
        log_line("cannot load the service credential");
    else if (media_library_init(cfg->media_dir, (size_t)cfg->media_image_max,
                                (size_t)cfg->media_video_max) != 0)
        log_line("cannot set up the media library");
    else if ((rc = wait_for_redis(cfg, stop)) == 0)
        rc = bootstrap(cfg) == 0 && rec_jobs_start(cfg->rec_jobs_interval) == 0
                 ? serve(cfg, stop) : -1;
    else if (rc == 1) {
        log_line("adserve-sidecar stopped while waiting for redis");
        rc = 0;
    }
    sodium_memzero(secret, strlen(secret));
    free(secret);
    rec_jobs_stop();
    mail_shutdown();            /* it may still write to the outbox */
    service_shutdown();
    media_library_shutdown();
    store_shutdown();
    auth_shutdown();
    return rc;
}

/* adserve-sidecar outbox [N]: the newest N (10) messages of the outbox,
 * for an operator without an SMTP server */
static int outbox(const struct config *cfg, int argc, char **argv)
{
    char *end;
    long count = argc > 2 ? strtol(argv[2], &end, 10) : 10;

    if (argc > 3 || (argc > 2 && (*end != '\0' || count < 1 || count > 1000))) {
        fprintf(stderr, "usage: adserve-sidecar outbox [1..1000]\n");
        return EXIT_FAILURE;
    }
    return mail_outbox_print(cfg->var_dir, cfg->redis_host, (int)cfg->redis_port, count, stdout) == 0
               ? EXIT_SUCCESS
               : EXIT_FAILURE;
}

int main(int argc, char **argv)
{
    struct config cfg;
    sigset_t stop;

    if (sodium_init() < 0) {
        log_line("cannot initialise libsodium");
        return EXIT_FAILURE;
    }
    if (argc > 1) {
        if (strcmp(argv[1], "outbox") != 0) {
            fprintf(stderr, "usage: adserve-sidecar [outbox [N]]\n");
            return EXIT_FAILURE;
        }
        return load_config(&cfg) != 0 ? EXIT_FAILURE : outbox(&cfg, argc, argv);
    }
    if (block_signals(&stop) != 0) {
        log_line("cannot set up signal handling");
        return EXIT_FAILURE;
    }
    if (load_config(&cfg) != 0)
        return EXIT_FAILURE;
    return run(&cfg, &stop) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
