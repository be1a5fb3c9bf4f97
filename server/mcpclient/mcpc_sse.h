/* The event-stream answers of MCP's Streamable HTTP transport
 * (text/event-stream, as the WHATWG HTML standard defines it): each
 * event's data lines joined with "\n" are one JSON-RPC message. The bytes
 * are a remote server's, so a line and an event's data are capped; an
 * event over the cap is dropped whole and counted. Lines end in "\n" or
 * "\r\n" (a lone "\r" is kept as a character: MCP servers send neither). */
#ifndef LB_MCPC_SSE_H
#define LB_MCPC_SSE_H

#include <stddef.h>

#include "common/buf.h"
#include "common/status.h"

/* Called with each event's data (NUL-terminated); a nonzero status stops
 * the parse and is returned by lb_mcpc_sse_feed. */
typedef int (*lb_mcpc_sse_cb)(void *arg, const char *data, size_t len);

typedef struct lb_mcpc_sse {
    lb_buf line;                /* the line being read (at most max) */
    lb_buf data;                /* the event's data so far (at most max) */
    int skipping;               /* the line is over the cap: dropped to its end */
    int bad;                    /* the event lost a line: dropped at its end */
    size_t dropped;             /* events dropped for their size */
} lb_mcpc_sse;

void lb_mcpc_sse_init(lb_mcpc_sse *s, size_t max);
void lb_mcpc_sse_free(lb_mcpc_sse *s);
/* Takes n more bytes, calling cb for each event they complete. LB_OK,
 * LB_E_NOMEM, or cb's status. */
LB_MUST_CHECK int lb_mcpc_sse_feed(lb_mcpc_sse *s, const char *p, size_t n, lb_mcpc_sse_cb cb, void *arg);

#endif
