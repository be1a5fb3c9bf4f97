/* Text helpers for what comes back from models and sandboxes: both are
 * hostile, so every byte that reaches a JSON message or the terminal goes
 * through here first. The UTF-8 checks themselves are common/utf8.h. */
#ifndef LB_AGENT_TEXT_H
#define LB_AGENT_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

/* A stream capped at head_max + tail_max bytes that keeps the first
 * head_max and the last tail_max bytes of everything appended, and counts
 * what fell in between (the model usually needs both the start of a long
 * output and its end, where the error is). */
typedef struct lb_htbuf {
    char *head;
    size_t head_len, head_max;
    char *tail;                 /* ring buffer of tail_max bytes */
    size_t tail_pos, tail_len, tail_max;
    uint64_t total;             /* every byte ever appended */
} lb_htbuf;

void lb_htbuf_init(lb_htbuf *b, size_t head_max, size_t tail_max);
void lb_htbuf_free(lb_htbuf *b);
/* Never fails short of memory; bytes beyond the caps are counted. */
LB_MUST_CHECK int lb_htbuf_append(lb_htbuf *b, const char *p, size_t n);
uint64_t lb_htbuf_omitted(const lb_htbuf *b);
/* Renders head + "\n[... N bytes omitted ...]\n" + tail as sanitized UTF-8
 * (malloc'd, NUL-terminated; "" when nothing was appended). */
char *lb_htbuf_render(const lb_htbuf *b, size_t *outlen);

/* Copies s into a new string with at most max bytes, cut on a UTF-8
 * boundary, with "..." appended when cut. */
char *lb_strdup_trunc(const char *s, size_t max);

#endif
