/* E2B's sbx.getHost(port): https://<port>-<id>.<e2b_domain> reaches a
 * server the sandbox's code runs on 127.0.0.1:<port> (issue 17). */
#ifndef LB_E2B_PORT_H
#define LB_E2B_PORT_H

#include "web/request.h"
#include "web/sandbox_registry.h"

/* Relays r (its method, path, query, headers and body) to port inside s
 * as one HTTP/1.0 request over a connection sandboxd opens there
 * (port_connect), and the answer back. s is running, the caller checked
 * its token. */
void lb_e2b_port(lb_req *r, lb_sbx *s, int port);

#endif
