/* The line reader (lines.h). */
#include "lines.h"

#include "utf8.h"

#include <stdint.h>
#include <string.h>

#define STRINGIZE(x) #x
#define TEXT_OF(x) STRINGIZE(x)

void line_reader_init(struct line_reader *lr, line_id_fn *on_id, line_fault_fn *on_fault,
                      void *arg)
{
    memset(lr, 0, sizeof *lr);
    lr->line_no = 1;
    lr->on_id = on_id;
    lr->on_fault = on_fault;
    lr->arg = arg;
}

/* Whether s[0..n) is UTF-8. */
static bool utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0, k; i < n; i += k)
        if ((k = utf8_char(s + i, n - i)) == 0)
            return false;
    return true;
}

static int end_line(struct line_reader *lr)
{
    size_t n = lr->len, no = lr->line_no++;
    const unsigned char *s = (const unsigned char *)lr->buf;

    lr->len = 0;
    if (lr->overlong) {
        lr->overlong = false;
        return lr->on_fault(lr->arg, no, LINE_TOO_LONG);
    }
    if (n > 0 && s[n - 1] == '\r')
        n--;
    if (n == 0)
        return 0;
    if (n > ADSERVE_TOKEN_USER_MAX)
        return lr->on_fault(lr->arg, no, LINE_TOO_LONG);
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] == 0x7f)
            return lr->on_fault(lr->arg, no, LINE_CONTROL);
    if (!utf8(s, n))
        return lr->on_fault(lr->arg, no, LINE_NOT_UTF8);
    return lr->on_id(lr->arg, lr->buf, n);
}

int line_reader_feed(struct line_reader *lr, const char *data, size_t n)
{
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t take = nl != NULL ? (size_t)(nl - data) : n;
        /* a CR the buffer keeps past the id's limit, for a CRLF line */
        size_t room = sizeof lr->buf - lr->len;

        if (take > room || lr->overlong)
            lr->overlong = true;
        else {
            memcpy(lr->buf + lr->len, data, take);
            lr->len += take;
        }
        if (nl == NULL)
            return 0;
        if (end_line(lr) != 0)
            return -1;
        data += take + 1;
        n -= take + 1;
    }
    return 0;
}

int line_reader_end(struct line_reader *lr)
{
    return lr->len > 0 || lr->overlong ? end_line(lr) : 0;
}

const char *line_fault_text(enum line_fault why)
{
    switch (why) {
    case LINE_TOO_LONG:
        return "longer than " TEXT_OF(ADSERVE_TOKEN_USER_MAX) " bytes";
    case LINE_CONTROL:
        return "a control character";
    case LINE_NOT_UTF8:
        return "not UTF-8";
    }
    return "malformed";
}
