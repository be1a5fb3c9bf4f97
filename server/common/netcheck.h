/* Which network targets a caller-chosen URL may reach (netcheck.c): the
 * operator's list of allowed targets, parsed once, and the two questions
 * asked of it: does a rule name this host, and may this address (the one
 * a connection is about to be made to, after resolving) be reached.
 *
 * A list is words separated by commas or blanks:
 *   public            every address that is not loopback, link-local,
 *                     private, shared (CGNAT), multicast, documentation
 *                     or otherwise reserved (lb_netaddr_is_public)
 *   10.1.2.0/24       an IPv4 or IPv6 network (CIDR); a bare address is
 *   fd00:1::/64       a network of one
 *   llm.internal      a host name: a URL naming it may reach whatever it
 *   *.llm.internal    resolves to (the operator trusts that name's DNS);
 *                     "*." names every host below it, not itself
 * The empty list allows nothing. Used by the agent's model client for a
 * task's own model_url (agent/model_http.c), checked when each socket is
 * opened, so a name that resolves to a forbidden address is refused
 * whatever it resolved to when the task was made. */
#ifndef LB_COMMON_NETCHECK_H
#define LB_COMMON_NETCHECK_H

#include <stddef.h>
#include <sys/socket.h>

#include "common/status.h"

#define LB_NETALLOW_MAX 64       /* rules in one list: an operator's hand-written list fits */
#define LB_NETALLOW_TEXT_MAX 4096 /* the list's text, in bytes */
#define LB_NETHOST_MAX 253       /* the longest DNS name */

enum { LB_NETRULE_PUBLIC = 1, LB_NETRULE_NET, LB_NETRULE_HOST, LB_NETRULE_SUFFIX };

typedef struct lb_netrule {
    int kind;                    /* LB_NETRULE_* */
    int family;                  /* NET: AF_INET or AF_INET6 */
    unsigned char addr[16];      /* NET: the network, host bits cleared */
    int prefix;                  /* NET: its length in bits */
    char host[LB_NETHOST_MAX + 1]; /* HOST, SUFFIX: lowercase, no trailing dot ("llm.internal" for
                                    * "*.llm.internal") */
} lb_netrule;

typedef struct lb_netallow {
    lb_netrule r[LB_NETALLOW_MAX];
    int n;
} lb_netallow;

/* Parses spec (the list above) into *a. LB_OK; LB_E_INVAL or LB_E_TOOBIG
 * with a sentence in err naming the word that is wrong. */
LB_MUST_CHECK int lb_netallow_parse(const char *spec, lb_netallow *a, char *err, size_t errsz);
/* Whether a host-name rule of a names host (a URL's host, any case, one
 * trailing dot allowed). An address literal never matches a name rule. */
int lb_netallow_host(const lb_netallow *a, const char *host);
/* Whether the address sa (AF_INET or AF_INET6, len its size) is allowed
 * by a "public" or network rule of a. An IPv4 address mapped into IPv6
 * (::ffff:a.b.c.d) is judged as that IPv4 address. */
int lb_netallow_addr(const lb_netallow *a, const struct sockaddr *sa, size_t len);
/* Whether sa is an address of the public internet (see "public" above):
 * IPv4-mapped, NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses are
 * judged by the IPv4 address they carry. */
int lb_netaddr_is_public(const struct sockaddr *sa, size_t len);
/* One rule alone, for callers that keep rules of their own (netpolicy.c):
 * whether r (NET or PUBLIC) allows the address sa, and whether r (HOST or
 * SUFFIX) names host; the same answers as the list functions above. */
int lb_netrule_addr(const lb_netrule *r, const struct sockaddr *sa, size_t len);
int lb_netrule_host(const lb_netrule *r, const char *host);

#endif
