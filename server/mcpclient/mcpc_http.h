/* MCP's Streamable HTTP transport to a server outside the sandbox
 * (libcurl): each message is one POST to the server's URL with Accept
 * "application/json, text/event-stream"; the answer is a JSON body (one
 * message) or an event stream (mcpc_sse.c: each event one message), and
 * either is queued for recv. The session id the server gives at
 * initialize (Mcp-Session-Id) goes on every later request, with
 * MCP-Protocol-Version; the operator's headers (llmbox.conf's header
 * keys: credentials) go on every request and nowhere else. The server is
 * hostile: an answer is capped at LB_MCPC_HTTP_BODY_MAX, one message at
 * LB_MCPC_MSG_MAX, the queue at LB_MCPC_HTTP_QUEUE messages; redirects are
 * not followed (they would carry the credentials elsewhere); only http
 * and https. No stream is opened with GET (the protocol leaves it to the
 * client): what a server would send there, the client does not need. */
#ifndef LB_MCPC_HTTP_H
#define LB_MCPC_HTTP_H

#include <stddef.h>

#include "common/config.h"
#include "common/status.h"
#include "mcpclient/mcpc_transport.h"

#define LB_MCPC_HTTP_BODY_MAX (8u << 20)  /* one answer, all its events */
#define LB_MCPC_HTTP_QUEUE 4096           /* messages of one answer (notifications before the response) */
#define LB_MCPC_SESSION_ID_MAX 200        /* Mcp-Session-Id: visible ASCII */

/* A transport to m's url (m is borrowed: it must outlive the transport).
 * cancel (may be NULL): a request ends when it is set. LB_OK or
 * LB_E_NOMEM. Nothing is sent until the first send. */
LB_MUST_CHECK int lb_mcpc_http_open(const lb_mcp_cfg *m, volatile int *cancel, lb_mcpc_transport **out, char *err,
                                    size_t errsz);

#endif
