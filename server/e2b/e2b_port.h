/* E2B's sbx.getHost(port): https://<port>-<id>.<e2b_domain> reaches a
 * server the sandbox's code runs on 127.0.0.1:<port> (E2B's protocol). */
#ifndef LB_E2B_PORT_H
#define LB_E2B_PORT_H

#include <stddef.h>

#include "common/buf.h"
#include "common/status.h"
#include "web/request.h"
#include "sbxapi/sandbox_registry.h"

/* Relays r (its method, path, query, headers and body) to port inside s
 * as one HTTP/1.0 request over a connection sandboxd opens there
 * (port_connect), and the answer back. s is running, the caller checked
 * its token. */
void lb_e2b_port(lb_req *r, lb_sbx *s, int port);

/* The answer head a server in a sandbox sent (head[0..n): its status line
 * and headers up to and with the blank line) as FastCGI's, appended to
 * out: "Status: <code> <reason>" and its headers but the hop-by-hop ones,
 * ours (the tokens) and X-Accel-* (nginx would obey them); *status gets
 * the code. LB_E_PROTO for anything but an HTTP/1.0 or 1.1 head with a
 * status of 100..599 whose lines all end in CRLF and hold no other control
 * character than a tab (or when out's cap is reached). Hostile input. */
LB_MUST_CHECK int lb_e2b_port_head(const char *head, size_t n, lb_buf *out, int *status);

/* How long the body after that head is (RFC 9112 6.3), so the relay ends
 * with the answer, not when the server closes (a server may keep the
 * connection open despite "Connection: close", and would hold a relay's
 * place until it idled out): *len 0 for an answer to HEAD and for 1xx,
 * 204 and 304; -1 (until the server closes) with Transfer-Encoding or
 * without Content-Length; else the Content-Length. LB_E_PROTO for a
 * Content-Length that is not digits, over 2^62, or given twice with two
 * values. head[0..n) is one lb_e2b_port_head accepted. */
LB_MUST_CHECK int lb_e2b_port_body_len(const char *head, size_t n, int status, int is_head, long long *len);

#endif
