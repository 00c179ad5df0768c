/* Outgoing mail.
 *
 * Messages are queued in memory and sent by one background thread over
 * SMTP (libcurl, MAIL_TIMEOUT_S per message), so that a slow or dead mail
 * server never holds an HTTP request, and an answer takes the same time
 * whether a mail goes out or not. Queueing never wakes the thread: it
 * looks at the queue every MAIL_POLL_MS on its own clock, since a thread
 * woken by a request ran at once beside it (two cores) and made that
 * request's answer about 0.1 ms slower: enough to tell, over a hundred
 * tries, which addresses have an account (issue 18). A request that must
 * not send (forgot-password for an unknown address) makes a decoy of the
 * same size, which is dropped before the queue.  When ADSERVE_SMTP_URL is unset, or
 * sending fails, the message is appended to the Redis stream
 * adserve:outbox instead (fields at, from, to, subject, body; capped at
 * about OUTBOX_MAXLEN entries), and a line says so in the log.  Log lines
 * name the mail's purpose and user, never its body (it holds a token).
 *
 * Configuration:
 *   ADSERVE_SMTP_URL    (unset: outbox only)  smtp://host:port, or
 *                       smtps://...; user:password@ may be given (it is
 *                       never logged); STARTTLS is used when offered.
 *   ADSERVE_SMTP_FROM   adserve@localhost     the sender address
 *   ADSERVE_PUBLIC_URL  http://127.0.0.1:$ADSERVE_PORT (8080)
 *                       the base of links in mails */
#ifndef ADSERVE_MAIL_H
#define ADSERVE_MAIL_H

#include <stdbool.h>
#include <stdio.h>

#define MAIL_TIMEOUT_S 5
#define MAIL_POLL_MS 100
#define MAIL_QUEUE_MAX 100
#define OUTBOX_MAXLEN "1000"

/* Reads the configuration and starts the sending thread.  0 or -1
 * (logged).  Call before any other thread uses libcurl. */
int mail_init(const char *var_dir);

/* adserve-sidecar outbox [N]: prints the newest N messages of the outbox,
 * opened with the runtime folder's outbox key.  0 or -1 (logged). */
int mail_outbox_print(const char *var_dir, const char *host, int port, long count, FILE *out);

/* Stops the thread: queued messages go to the outbox.  Call while the
 * Redis pool is still up; safe when mail_init failed or never ran. */
void mail_shutdown(void);

/* ADSERVE_PUBLIC_URL without a trailing slash. */
const char *mail_public_url(void);

/* Queues a text/plain message to the address to (already validated),
 * copying everything; what names it in the log ("password reset mail for
 * user <id>"). With send false, the same work for a decoy, which is then
 * dropped: never queued, sent or logged. 0, or -1 when the queue is full
 * or memory ran out (logged for a real mail): the message is dropped. */
int mail_queue(const char *to, const char *subject, const char *body, const char *what,
               bool send);

#endif
