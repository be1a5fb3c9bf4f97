/* The gateway's TLS termination for HTTPS that gets a secret
 * (netgw_tls.c; docs/NETWORK.md "Secrets"). OpenSSL does all of TLS and
 * X.509: a CA made per sandbox (its key only ever in this process's
 * memory), a leaf per server name signed on demand and cached, and a
 * verified TLS connection of the gateway's own upstream. What is written
 * here by hand is the HTTP/1.1 relay between the two (netgw_http.h reads
 * the requests), because no library reads a request the way a secret
 * needs: strictly, one request a connection, headers replaced by name. */
#ifndef LB_NETGW_TLS_H
#define LB_NETGW_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

#define LB_TLS_ADD_MAX 16 /* header lines added to one request */

/* Makes the CA and writes its certificate to dir/ca.crt (atomically);
 * upstream_ca: a file of CA certificates trusted upstream instead of the
 * system's (NULL or "": the system's). LB_OK, or a code and a sentence. */
LB_MUST_CHECK int lb_tls_init(const char *dir, const char *upstream_ca, char *why, size_t whysz);

/* What one connection adds: n header lines ("Name: value", no CRLF) and
 * the names they replace. */
typedef struct lb_tls_add {
    int n;
    const char *line[LB_TLS_ADD_MAX];
    const char *name[LB_TLS_ADD_MAX];
} lb_tls_add;

/* Serves the sandbox's connection c, a TLS connection to name, through u
 * (a TCP connection to where it goes): first a TLS connection upstream,
 * verified for name (refused when it does not verify: returns 0 and
 * leaves c untouched, the reason in why), then TLS with the sandbox under
 * a leaf for name, then one HTTP/1.1 request relayed with add's header
 * lines, and its answer. 1 when served (c and u still open: the caller
 * closes them); bytes the sandbox sent and received into out and in (the
 * plain text), what happened appended to why. */
int lb_tls_serve(int c, int u, const char *name, const lb_tls_add *add, uint64_t *out, uint64_t *in, char *why,
                 size_t whysz);

#endif
