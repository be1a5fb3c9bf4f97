/* A growable byte buffer with a hard cap.
 * Every buffer that holds model, sandbox or client data is an lb_buf with
 * max set, so no peer can make us allocate without bound (curl's dynbuf). */
#ifndef LB_BUF_H
#define LB_BUF_H
#include <stddef.h>
#include "status.h"

typedef struct lb_buf {
    char *data;   /* owned; always NUL-terminated when non-NULL */
    size_t len;
    size_t cap;
    size_t max;   /* hard cap on len; appends past it fail with LB_E_TOOBIG */
} lb_buf;

void lb_buf_init(lb_buf *b, size_t max);
void lb_buf_free(lb_buf *b);
void lb_buf_reset(lb_buf *b);            /* len = 0, keeps memory */
LB_MUST_CHECK int lb_buf_append(lb_buf *b, const void *p, size_t n);   /* all or nothing */
/* Reads fd into b until end of file, for at most timeout_ms in all (a
 * child's pipe: the output of a helper run with a deadline). LB_OK at end
 * of file; LB_E_TIMEOUT when the time is up first, LB_E_TOOBIG past b's
 * max, LB_E_IO on a read or poll error. What was read stays in b. */
LB_MUST_CHECK int lb_buf_read_fd(lb_buf *b, int fd, int timeout_ms);
LB_MUST_CHECK int lb_buf_appends(lb_buf *b, const char *s);
LB_MUST_CHECK int lb_buf_printf(lb_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends as much as fits under max; returns how many bytes were dropped. */
size_t lb_buf_append_trunc(lb_buf *b, const void *p, size_t n);
/* Hands the data to the caller (who frees it) and resets b. */
char *lb_buf_steal(lb_buf *b, size_t *len);

#endif
