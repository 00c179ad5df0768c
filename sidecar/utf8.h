/* UTF-8 as RFC 3629 has it, for the client text the sidecar keeps as is
 * (a segment's user ids, a media file's display name). */
#ifndef ADSERVE_UTF8_H
#define ADSERVE_UTF8_H

#include <stddef.h>

/* The length of the character at p (n > 0 bytes left), or 0 when it is
 * not one: a stray continuation byte, a cut sequence, an overlong form, a
 * surrogate, a code point past U+10FFFF. */
size_t utf8_char(const unsigned char *p, size_t n);

#endif
