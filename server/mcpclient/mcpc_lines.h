/* The framing of MCP's stdio transport: one JSON-RPC message per line,
 * lines ended by "\n" (a "\r" before it is dropped). The bytes come from
 * a server run inside the task's sandbox, so they are hostile: a line
 * over the cap is dropped whole (up to its newline) and counted, never
 * kept; what is held is at most the cap (and a "\r") plus the last chunk
 * fed. */
#ifndef LB_MCPC_LINES_H
#define LB_MCPC_LINES_H

#include <stddef.h>

#include "common/buf.h"
#include "common/status.h"

typedef struct lb_mcpc_lines {
    lb_buf pend;                /* bytes not yet handed out */
    size_t off;                 /* where the next line starts in pend */
    size_t max;                 /* longest line kept */
    int skipping;               /* an over-long line is being dropped up to its newline */
    size_t dropped;             /* lines dropped for their length */
} lb_mcpc_lines;

/* max: the longest line handed out (LB_MCPC_MSG_MAX for messages). */
void lb_mcpc_lines_init(lb_mcpc_lines *l, size_t max);
void lb_mcpc_lines_free(lb_mcpc_lines *l);
/* Takes n more bytes. Call it only after lb_mcpc_lines_next found no
 * line, so pend stays within max + n. LB_OK or LB_E_NOMEM. */
LB_MUST_CHECK int lb_mcpc_lines_feed(lb_mcpc_lines *l, const char *p, size_t n);
/* The next whole line that is not blank: 1 with *line (NUL-terminated,
 * without its end; valid until the next call of feed or next) and *len,
 * or 0 when no whole line is held. A line found to be over max is
 * dropped (dropped++) and the search goes on. */
int lb_mcpc_lines_next(lb_mcpc_lines *l, const char **line, size_t *len);

#endif
