/* The Connect protocol's answers for E2B's envd RPCs over FastCGI (the
 * JSON codec the e2b SDK uses): unary answers and errors, and enveloped
 * streams, each envelope flushed through nginx as it is written (the /e2b/
 * location has fastcgi_buffering off). Framing: e2b_envelope.h. */
#ifndef LB_E2B_CONNECT_H
#define LB_E2B_CONNECT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/status.h"
#include "web/request.h"

/* The request message: for a streaming call (streaming 1) the one envelope
 * of the body, else the body itself, parsed as one JSON object within the
 * body budget (req_body.h). NULL after answering the Connect error
 * (invalid_argument, resource_exhausted) in the shape of the call. */
cJSON *lb_e2b_request(lb_req *r, int streaming);
/* A unary answer: 200, application/json, msg (not freed). */
void lb_e2b_unary(lb_req *r, const cJSON *msg);
/* An error body {"code", "message"} with status: code is Connect's code
 * name, or NULL for E2B's REST shape (the status as a number, which the
 * SDK compares with 404). */
void lb_e2b_error_json(lb_req *r, int status, const char *code, const char *msg);
/* E2B's REST error ({"code": status, "message"}) with a formatted sentence,
 * after draining the request's body: what every control-plane route answers. */
void lb_e2b_error(lb_req *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A unary error: the HTTP status of code, {"code":code,"message":...}. */
void lb_e2b_unary_error(lb_req *r, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Starts a streamed answer: 200, application/connect+json. */
void lb_e2b_stream_begin(lb_req *r);
/* One message of the stream, flushed. LB_E_IO when the client is gone. */
LB_MUST_CHECK int lb_e2b_stream_send(lb_req *r, const cJSON *msg);
/* The same without the flush, for a message the end of the stream follows
 * at once (one write through nginx instead of several). */
LB_MUST_CHECK int lb_e2b_stream_queue(lb_req *r, const cJSON *msg);
/* Sends what was queued. LB_E_IO when the client is gone. */
LB_MUST_CHECK int lb_e2b_stream_flush(lb_req *r);
/* The end-of-stream message: {} (code NULL) or {"error":{code, message}};
 * starts the stream first if nothing was sent yet. */
void lb_e2b_stream_end(lb_req *r, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Ends a stream with no end message, the connection dropped: what a
 * client of envd sees when its sandbox is killed under a running call
 * (the VM and its envd vanish). The SDK then probes /health, gets 502
 * and says "the sandbox was killed". */
void lb_e2b_stream_cut(lb_req *r);

#endif
