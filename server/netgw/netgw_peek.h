/* The name a connection's first bytes carry (netgw_peek.c): the Host of
 * an HTTP request, or the server name (SNI) of a TLS ClientHello. The
 * gateway matches name rules on it for ports 80 and 443. The bytes are
 * the sandbox's, hostile: every length is checked against what was read. */
#ifndef LB_NETGW_PEEK_H
#define LB_NETGW_PEEK_H

#include <stddef.h>

#define LB_PEEK_MAX 4096 /* bytes looked at; a Host or SNI further in is not found */

/* The Host header's name (port and one trailing dot cut, lowercased) of an
 * HTTP/1 request starting buf into name (at least 254 bytes). 1 found, 0
 * not (yet: more bytes may bring it), -1 not HTTP or malformed. */
int lb_peek_http_host(const unsigned char *buf, size_t len, char *name, size_t namesz);
/* The host_name of a TLS ClientHello's server_name extension into name,
 * lowercased. 1 found, 0 incomplete, -1 not a ClientHello or none there. */
int lb_peek_tls_sni(const unsigned char *buf, size_t len, char *name, size_t namesz);

#endif
