/* A body of lines, one user id each (segment uploads), split as its bytes
 * come, in chunks cut anywhere, and each line judged: a user id is 1 to
 * ADSERVE_TOKEN_USER_MAX bytes of UTF-8 without control characters (what
 * serving's user.id can be). A trailing CR is dropped (CRLF files), blank
 * lines are skipped, and a last line needs no newline. */
#ifndef ADSERVE_LINES_H
#define ADSERVE_LINES_H

#include "adserve_token.h"

#include <stdbool.h>
#include <stddef.h>

enum line_fault {
    LINE_TOO_LONG,
    LINE_CONTROL,
    LINE_NOT_UTF8,
};

/* Each returns 0 to go on, -1 to stop the reader. */
typedef int line_id_fn(void *arg, const char *id, size_t len);
typedef int line_fault_fn(void *arg, size_t line_no, enum line_fault why);

struct line_reader {
    char buf[ADSERVE_TOKEN_USER_MAX + 1];
    size_t len;
    bool overlong;              /* the line went past the buffer */
    size_t line_no;             /* of the line being read, from 1 */
    line_id_fn *on_id;
    line_fault_fn *on_fault;
    void *arg;
};

void line_reader_init(struct line_reader *lr, line_id_fn *on_id, line_fault_fn *on_fault,
                      void *arg);

/* 0, or -1 when a callback stopped it. */
int line_reader_feed(struct line_reader *lr, const char *data, size_t n);

/* The body's end: its last line, when it had no newline. */
int line_reader_end(struct line_reader *lr);

/* "longer than 256 bytes", ... */
const char *line_fault_text(enum line_fault why);

#endif
