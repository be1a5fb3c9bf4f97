/* UTF-8 for everything the service hands on: what models, sandboxes,
 * uploads and plugins send is hostile, so every byte that reaches a JSON
 * message, a log line or the terminal is checked or repaired here. The
 * decoder itself is include/llmbox/utf8.h (shared with the plugins). */
#ifndef LB_COMMON_UTF8_H
#define LB_COMMON_UTF8_H

#include <stddef.h>

#include "llmbox/utf8.h"

/* The replacement character U+FFFD, as UTF-8. */
#define LB_UTF8_REPLACEMENT "\xEF\xBF\xBD"

/* Length of the valid UTF-8 sequence at p (n >= 1 bytes), 0 if invalid. */
size_t lb_utf8_seq_len(const char *p, size_t n);
/* True when p[0..n) is valid UTF-8 without NUL bytes. */
int lb_utf8_valid(const char *p, size_t n);
/* Returns a malloc'd, NUL-terminated copy of p[0..n) that is valid UTF-8:
 * invalid sequences and NUL bytes become U+FFFD. *outlen (may be NULL)
 * receives the length. NULL only when out of memory. */
char *lb_utf8_sanitize(const char *p, size_t n, size_t *outlen);
/* Drops a UTF-8 sequence cut short at the end of s (what snprintf into a
 * fixed buffer leaves behind), in place. */
void lb_utf8_trim_partial(char *s);

#endif
