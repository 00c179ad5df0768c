#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void log_line(const char *fmt, ...)
{
    char line[1024];
    struct timespec ts;
    struct tm tm;
    size_t n = 0;

    if (clock_gettime(CLOCK_REALTIME, &ts) == 0 && gmtime_r(&ts.tv_sec, &tm) != NULL)
        n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%SZ ", &tm);

    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    n += (size_t)m < sizeof line - n - 1 ? (size_t)m : sizeof line - n - 2;
    line[n++] = '\n';

    /* Best effort: there is nowhere to report a failing stderr. */
    ssize_t w = write(STDERR_FILENO, line, n);
    (void)w;
}
