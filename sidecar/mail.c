#include "mail.h"

#include "log.h"
#include "prom.h"
#include "secret.h"
#include "store.h"
#include "util.h"

#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ADDRESS_MAX 254
#define URL_MAX 512
#define WHAT_MAX 128
#define HEADERS_MAX 1024

struct mail {
    struct mail *next;
    char *to, *subject, *body;
    char what[WHAT_MAX];
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bool running;
    bool stop;
    bool curl_ready;
    struct mail *head, *tail;
    size_t queued;
    char *smtp_url;                 /* NULL: outbox only */
    bool smtp_loopback;             /* STARTTLS optional only there */
    char from[ADDRESS_MAX + 1];
    char public_url[URL_MAX];
    unsigned char outbox_key[crypto_secretbox_KEYBYTES];
} M = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
};

/* ---- configuration ----------------------------------------------------- */

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* No spaces, controls or characters that would break a header. */
static bool header_safe(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f || strchr("<>\"", *s))
            return false;
    return true;
}

/* smtp[s]://[user[:pass]@]host[:port]: whether host is this machine */
static bool smtp_host_is_loopback(const char *url)
{
    const char *host = strstr(url, "://") + 3, *at = strchr(host, '@');

    if (at != NULL && at < host + strcspn(host, "/"))
        host = at + 1;
    return has_prefix(host, "127.") || has_prefix(host, "localhost") ||
           has_prefix(host, "[::1]");
}

static int read_config(void)
{
    const char *url = getenv("ADSERVE_SMTP_URL");
    const char *from = getenv("ADSERVE_SMTP_FROM");
    const char *pub = getenv("ADSERVE_PUBLIC_URL");
    const char *port = getenv("ADSERVE_PORT");

    if (url != NULL && url[0] != '\0') {
        if (!(has_prefix(url, "smtp://") || has_prefix(url, "smtps://")) || !header_safe(url)) {
            log_line("ADSERVE_SMTP_URL must be an smtp:// or smtps:// URL");
            return -1;
        }
        if ((M.smtp_url = strdup(url)) == NULL)
            return -1;
        M.smtp_loopback = smtp_host_is_loopback(url);
    }
    if (from == NULL || from[0] == '\0')
        from = "adserve@localhost";
    const char *at = strchr(from, '@');
    if (!header_safe(from) || at == NULL || at == from || at[1] == '\0' ||
        copy_str(M.from, sizeof M.from, from) != 0) {
        log_line("ADSERVE_SMTP_FROM must be a plain address (local@domain)");
        return -1;
    }
    int n = pub != NULL && pub[0] != '\0'
                ? snprintf(M.public_url, sizeof M.public_url, "%s", pub)
                : snprintf(M.public_url, sizeof M.public_url, "http://127.0.0.1:%s",
                           port != NULL && port[0] != '\0' ? port : "8080");
    if (n <= 0 || (size_t)n >= sizeof M.public_url || !header_safe(M.public_url) ||
        !(has_prefix(M.public_url, "http://") || has_prefix(M.public_url, "https://"))) {
        log_line("ADSERVE_PUBLIC_URL must be an http:// or https:// URL");
        return -1;
    }
    while (n > 0 && M.public_url[n - 1] == '/')
        M.public_url[--n] = '\0';
    return 0;
}

const char *mail_public_url(void)
{
    return M.public_url;
}

/* ---- the queue ----------------------------------------------------------- */

static void mail_free(struct mail *m)
{
    if (m == NULL)
        return;
    if (m->body != NULL) {
        sodium_memzero(m->body, strlen(m->body));
        free(m->body);
    }
    free(m->to);
    free(m->subject);
    free(m);
}

int mail_queue(const char *to, const char *subject, const char *body, const char *what,
               bool send)
{
    struct mail *m = calloc(1, sizeof *m);

    if (m == NULL || (m->to = strdup(to)) == NULL || (m->subject = strdup(subject)) == NULL ||
        (m->body = strdup(body)) == NULL) {
        log_line("%s dropped: out of memory", what);
        if (send)
            prom_mail(PROM_MAIL_LOST);
        mail_free(m);
        return -1;
    }
    snprintf(m->what, sizeof m->what, "%s", what);
    /* a decoy takes the lock and looks at the queue as a mail does, but
     * takes no place in it: decoys never crowd out real mails */
    pthread_mutex_lock(&M.lock);
    bool full = !M.running || M.stop || M.queued >= MAIL_QUEUE_MAX;
    if (!full && send) {
        if (M.tail != NULL)
            M.tail->next = m;
        else
            M.head = m;
        M.tail = m;
        M.queued++;
    }
    pthread_mutex_unlock(&M.lock);
    if (full && send) {
        prom_mail(PROM_MAIL_LOST);
        log_line("%s dropped: the mail queue is full or stopped", what);
    }
    if (full || !send) {
        mail_free(m);
        return full ? -1 : 0;
    }
    return 0;
}

/* ---- delivery ------------------------------------------------------------ */

struct payload {
    char *data;
    size_t len, off;
};

static size_t read_payload(char *buf, size_t size, size_t nitems, void *userdata)
{
    struct payload *p = userdata;
    size_t n = p->len - p->off, room = size * nitems;

    if (n > room)
        n = room;
    memcpy(buf, p->data + p->off, n);
    p->off += n;
    return n;
}

/* The whole RFC 5322 message (malloc'd), NULL on failure. */
static char *compose(const struct mail *m, size_t *len)
{
    char date[64], id[33], headers[HEADERS_MAX];
    time_t now = time(NULL);
    struct tm tm;

    if (now == (time_t)-1 || gmtime_r(&now, &tm) == NULL ||
        strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S +0000", &tm) == 0 ||
        random_hex(id, sizeof id, 16) != 0)
        return NULL;
    int n = snprintf(headers, sizeof headers,
                     "Date: %s\r\nFrom: <%s>\r\nTo: <%s>\r\nSubject: %s\r\n"
                     "Message-ID: <%s%s>\r\nMIME-Version: 1.0\r\n"
                     "Content-Type: text/plain; charset=utf-8\r\n"
                     "Content-Transfer-Encoding: 8bit\r\n\r\n",
                     date, M.from, m->to, m->subject, id, strchr(M.from, '@'));
    if (n <= 0 || (size_t)n >= sizeof headers)
        return NULL;
    size_t blen = strlen(m->body);
    char *msg = malloc((size_t)n + blen + 1);
    if (msg == NULL)
        return NULL;
    memcpy(msg, headers, (size_t)n);
    memcpy(msg + n, m->body, blen + 1);
    *len = (size_t)n + blen;
    return msg;
}

#define SETOPT(h, rc, opt, val) \
    do { if ((rc) == CURLE_OK) (rc) = curl_easy_setopt((h), (opt), (val)); } while (0)

/* 0 when the server accepted the message; else err says why. */
static int smtp_send(const struct mail *m, char err[CURL_ERROR_SIZE])
{
    char from[ADDRESS_MAX + 3], to[ADDRESS_MAX + 3];
    struct payload p = { 0 };
    struct curl_slist *rcpt = NULL;
    CURLcode rc = CURLE_OK;
    CURL *h = NULL;

    err[0] = '\0';
    snprintf(from, sizeof from, "<%s>", M.from);
    if (snprintf(to, sizeof to, "<%s>", m->to) >= (int)sizeof to ||
        (p.data = compose(m, &p.len)) == NULL || (rcpt = curl_slist_append(NULL, to)) == NULL ||
        (h = curl_easy_init()) == NULL) {
        snprintf(err, CURL_ERROR_SIZE, "cannot prepare the message");
        rc = CURLE_OUT_OF_MEMORY;
    }
    SETOPT(h, rc, CURLOPT_ERRORBUFFER, err);
    SETOPT(h, rc, CURLOPT_URL, M.smtp_url);
    SETOPT(h, rc, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
    /* off this machine, a server that does not offer STARTTLS (or a
     * network that strips it) must not get the link and the credentials
     * in clear */
    SETOPT(h, rc, CURLOPT_USE_SSL, (long)(M.smtp_loopback ? CURLUSESSL_TRY : CURLUSESSL_ALL));
    SETOPT(h, rc, CURLOPT_MAIL_FROM, from);
    SETOPT(h, rc, CURLOPT_MAIL_RCPT, rcpt);
    SETOPT(h, rc, CURLOPT_READFUNCTION, read_payload);
    SETOPT(h, rc, CURLOPT_READDATA, &p);
    SETOPT(h, rc, CURLOPT_UPLOAD, 1L);
    SETOPT(h, rc, CURLOPT_NOSIGNAL, 1L);
    SETOPT(h, rc, CURLOPT_CONNECTTIMEOUT, (long)MAIL_TIMEOUT_S);
    SETOPT(h, rc, CURLOPT_TIMEOUT, (long)MAIL_TIMEOUT_S);
    if (rc == CURLE_OK)
        rc = curl_easy_perform(h);
    if (rc != CURLE_OK && err[0] == '\0')
        snprintf(err, CURL_ERROR_SIZE, "%s", curl_easy_strerror(rc));
    if (h != NULL)
        curl_easy_cleanup(h);
    curl_slist_free_all(rcpt);
    if (p.data != NULL) {
        sodium_memzero(p.data, p.len);
        free(p.data);
    }
    return rc == CURLE_OK ? 0 : -1;
}

/* The body, sealed with the outbox key: nonce | secretbox, base64url. The
 * body holds a reset link; Redis, its dumps and its replicas must not be
 * a way to take over accounts. NULL out of memory. */
static char *seal(const char *body)
{
    size_t n = strlen(body), raw = crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + n;
    size_t b64 = sodium_base64_ENCODED_LEN(raw, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    unsigned char *box = malloc(raw);
    char *out = malloc(b64);

    if (box == NULL || out == NULL) {
        free(box);
        free(out);
        return NULL;
    }
    randombytes_buf(box, crypto_secretbox_NONCEBYTES);
    crypto_secretbox_easy(box + crypto_secretbox_NONCEBYTES, (const unsigned char *)body, n,
                          box, M.outbox_key);
    sodium_bin2base64(out, b64, box, raw, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    free(box);
    return out;
}

static int outbox_append(const struct mail *m)
{
    char at[RFC3339_LEN], *sealed = seal(m->body);

    if (sealed == NULL || now_rfc3339(at) != 0) {
        free(sealed);
        return -1;
    }
    struct store_conn *c = store_acquire();
    enum store_status st = store_do(c, (const char *[]){
        "XADD", ADSERVE_KEY_OUTBOX, "MAXLEN", "~", OUTBOX_MAXLEN, "*", "at", at,
        "from", M.from, "to", m->to, "subject", m->subject, "sealed", sealed, NULL });
    store_release(c);
    free(sealed);
    return st == STORE_OK ? 0 : -1;
}

static void deliver(const struct mail *m, bool stopping)
{
    char err[CURL_ERROR_SIZE];

    if (M.smtp_url != NULL && !stopping) {
        if (smtp_send(m, err) == 0) {
            prom_mail(PROM_MAIL_SENT);
            log_line("%s sent", m->what);
            return;
        }
        err[strcspn(err, "\r\n")] = '\0';
        log_line("%s not sent (%.200s): falling back to the outbox", m->what, err);
    }
    if (outbox_append(m) == 0) {
        prom_mail(PROM_MAIL_OUTBOX);
        log_line("%s queued for the outbox (%s)", m->what, ADSERVE_KEY_OUTBOX);
    } else {
        prom_mail(PROM_MAIL_LOST);
        log_line("%s lost: the outbox cannot be written", m->what);
    }
}

/* Waits MAIL_POLL_MS, or less when stopping (with M.lock held). */
static void nap(void)
{
    struct timespec until;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += MAIL_POLL_MS * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&M.wake, &M.lock, &until);
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&M.lock);
    for (;;) {
        while (M.head == NULL && !M.stop)
            nap();
        struct mail *m = M.head;
        if (m == NULL)
            break;                  /* stopping, and nothing left */
        M.head = m->next;
        if (M.head == NULL)
            M.tail = NULL;
        M.queued--;
        bool stopping = M.stop;
        pthread_mutex_unlock(&M.lock);
        deliver(m, stopping);
        mail_free(m);
        pthread_mutex_lock(&M.lock);
    }
    pthread_mutex_unlock(&M.lock);
    return NULL;
}

/* ---- start and stop ------------------------------------------------------ */

/* The outbox key: 32 bytes, hex in the runtime folder's secrets */
static int outbox_key(char *hex)
{
    size_t n = 0;
    int rc = hex != NULL ? sodium_hex2bin(M.outbox_key, sizeof M.outbox_key, hex, strlen(hex),
                                          NULL, &n, NULL)
                         : -1;

    if (hex != NULL) {
        sodium_memzero(hex, strlen(hex));
        free(hex);
    }
    if (rc != 0 || n != sizeof M.outbox_key) {
        log_line("the outbox key must be %zu bytes, hex-encoded", sizeof M.outbox_key);
        return -1;
    }
    return 0;
}

int mail_init(const char *var_dir)
{
    if (read_config() != 0 || outbox_key(secret_load_or_create(var_dir, "outbox.key")) != 0)
        return -1;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        log_line("cannot initialise libcurl");
        return -1;
    }
    M.curl_ready = true;
    M.stop = false;
    /* the thread's naps are on the monotonic clock: a wall clock set back
     * must not hold the mails */
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0 ||
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_destroy(&M.wake) != 0 || pthread_cond_init(&M.wake, &attr) != 0) {
        log_line("cannot set up the mail thread's clock");
        return -1;
    }
    pthread_condattr_destroy(&attr);
    int rc = pthread_create(&M.thread, NULL, worker, NULL);
    if (rc != 0) {
        log_line("cannot start the mail thread: %s", strerror(rc));
        return -1;
    }
    M.running = true;
    log_line("mail: %s, sender %s, links to %s",
             M.smtp_url != NULL ? "SMTP (outbox on failure)" : "outbox only (ADSERVE_SMTP_URL unset)",
             M.from, M.public_url);
    return 0;
}

void mail_shutdown(void)
{
    if (M.running) {
        pthread_mutex_lock(&M.lock);
        M.stop = true;
        pthread_cond_signal(&M.wake);
        pthread_mutex_unlock(&M.lock);
        int rc = pthread_join(M.thread, NULL);
        if (rc != 0)
            log_line("cannot join the mail thread: %s", strerror(rc));
        M.running = false;
    }
    if (M.curl_ready)
        curl_global_cleanup();
    M.curl_ready = false;
    free(M.smtp_url);
    M.smtp_url = NULL;
}

/* ---- reading the outbox ---------------------------------------------------- */

static const char *entry_field(const redisReply *kv, const char *name)
{
    for (size_t i = 0; i + 1 < kv->elements; i += 2)
        if (kv->element[i]->type == REDIS_REPLY_STRING &&
            kv->element[i + 1]->type == REDIS_REPLY_STRING && strcmp(kv->element[i]->str, name) == 0)
            return kv->element[i + 1]->str;
    return "";
}

/* The body of a sealed entry, printed; "(cannot be opened)" if forged or
 * sealed under another key */
static void print_body(FILE *out, const char *sealed)
{
    size_t n = strlen(sealed), raw = 0;
    unsigned char *box = malloc(n + 1);
    unsigned char *plain = malloc(n + 1);

    if (box != NULL && plain != NULL &&
        sodium_base642bin(box, n + 1, sealed, n, NULL, &raw, NULL,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING) == 0 &&
        raw >= crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES &&
        crypto_secretbox_open_easy(plain, box + crypto_secretbox_NONCEBYTES,
                                   raw - crypto_secretbox_NONCEBYTES, box, M.outbox_key) == 0) {
        size_t len = raw - crypto_secretbox_NONCEBYTES - crypto_secretbox_MACBYTES;
        fprintf(out, "%.*s\n", (int)len, (const char *)plain);
        sodium_memzero(plain, len);
    } else {
        fprintf(out, "(cannot be opened: not sealed with this runtime folder's outbox key)\n");
    }
    free(box);
    free(plain);
}

int mail_outbox_print(const char *var_dir, const char *host, int port, long count, FILE *out)
{
    char countbuf[24];
    struct timeval tv = { 2, 0 };

    if (outbox_key(secret_load(var_dir, "outbox.key")) != 0)
        return -1;
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (c == NULL || c->err) {
        log_line("redis %s:%d: %s", host, port, c != NULL ? c->errstr : "out of memory");
        redisFree(c);
        return -1;
    }
    snprintf(countbuf, sizeof countbuf, "%ld", count);
    const char *argv[] = { "XREVRANGE", ADSERVE_KEY_OUTBOX, "+", "-", "COUNT", countbuf };
    redisReply *r = redisCommandArgv(c, 6, argv, NULL);
    int rc = r != NULL && r->type == REDIS_REPLY_ARRAY ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 || e->element[1]->type != REDIS_REPLY_ARRAY)
            continue;
        fprintf(out, "--- %s\nat: %s\nfrom: %s\nto: %s\nsubject: %s\n\n", e->element[0]->str,
                entry_field(e->element[1], "at"), entry_field(e->element[1], "from"),
                entry_field(e->element[1], "to"), entry_field(e->element[1], "subject"));
        print_body(out, entry_field(e->element[1], "sealed"));
    }
    if (rc != 0)
        log_line("cannot read %s", ADSERVE_KEY_OUTBOX);
    freeReplyObject(r);
    redisFree(c);
    sodium_memzero(M.outbox_key, sizeof M.outbox_key);
    return rc;
}
