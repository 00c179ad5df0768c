/* One-line diagnostics on stderr. */
#ifndef ADSERVE_LOG_H
#define ADSERVE_LOG_H

/* Writes "<RFC 3339 time> <message>\n" with a single write(2), so lines
 * from concurrent threads never interleave.  Never pass secrets, request
 * bodies or headers. */
void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
