/* One MCP session over a transport (mcpc_transport.h): initialize and
 * notifications/initialized, then requests, each waiting for the
 * response with its own id until the per-call timeout. Whatever else
 * comes meanwhile is read and set aside, within bounds: responses to
 * other ids (a late answer to a request that timed out) are dropped;
 * notifications are read and dropped (at most LB_MCPC_OTHER_MAX messages
 * of either kind while one request waits, else the request fails: a
 * server that floods cannot hold the agent past that, nor past the
 * timeout); a request of the server's is answered (ping with {}, any
 * other with "method not found": this client offers no sampling, roots or
 * elicitation). A text that is not a JSON-RPC message, or is over the
 * budget of mcpc_msg.h, fails the waiting request at once with the reason
 * (it may have been the response). notifications/tools/list_changed is logged once and
 * otherwise ignored: the model keeps the tools it was offered at the
 * task's start, so its conversation, the trajectory and a replay stay
 * consistent. */
#ifndef LB_MCPC_SESSION_H
#define LB_MCPC_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/config.h"
#include "common/status.h"
#include "mcpclient/mcpc_transport.h"

#define LB_MCPC_OTHER_MAX 1000          /* messages set aside while one request waits */
#define LB_MCPC_PROTOCOL "2025-06-18"   /* the revision asked for; the server's answer is taken */

typedef struct lb_mcpc_session {
    char name[LB_CFG_MCP_NAME];
    lb_mcpc_transport *t;       /* owned */
    int timeout_ms;             /* one request */
    int64_t next_id;
    int list_changed;           /* notifications/tools/list_changed seen (logged once) */
    size_t other;               /* messages set aside in all */
    char server_name[64];       /* serverInfo.name, printable, for the log */
} lb_mcpc_session;

/* Takes t (closed by lb_mcpc_session_close, also on failure) and runs the
 * handshake. LB_OK, or a status with a sentence in err ("did not answer
 * initialize within 60 s", "answered initialize with an error: ..."). */
LB_MUST_CHECK int lb_mcpc_session_start(lb_mcpc_session *s, const char *name, lb_mcpc_transport *t,
                                        int timeout_ms, char *err, size_t errsz);
/* One request: params taken (may be NULL). When an HTTP server answers
 * 404 (it forgot the session), a new session is started and the request
 * sent once more in it, as the protocol says. LB_OK with *result (the
 * response's result, caller frees); LB_E_PROTO with the server's error
 * as a sentence in err when it answered with one; LB_E_TIMEOUT,
 * LB_E_TOOBIG (flooded) and the transport's failures with a sentence. */
LB_MUST_CHECK int lb_mcpc_session_request(lb_mcpc_session *s, const char *method, cJSON *params, cJSON **result,
                                          char *err, size_t errsz);
/* Stops the server or ends the session; s may be half started. */
void lb_mcpc_session_close(lb_mcpc_session *s);

#endif
