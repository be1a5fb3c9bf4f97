/* several nodes: API sandbox ids that say which node holds them.
 *
 * A web with node_name set names its API sandboxes "<node>.<32 hex>" so a
 * balancer (HAProxy, deploy/haproxy/llmbox.cfg) can send every call on a
 * sandbox to the web beside the sandboxd that runs it; without node_name
 * they stay 32 lowercase hex. Everything that takes a sandbox id from a
 * client accepts both forms and nothing else.
 */
#ifndef LB_NODE_ID_H
#define LB_NODE_ID_H

#include <stddef.h>

#include "common/status.h"

#define LB_NODE_ID_NAME_MAX 63                              /* a DNS label */
#define LB_NODE_ID_MAX (LB_NODE_ID_NAME_MAX + 1 + 32)       /* "<node>.<32 hex>" */

/* True when s is 1..63 of [a-z0-9-] not starting with '-'. */
int lb_node_id_name_ok(const char *s, size_t n);

/* True when s is 32 lowercase hex, or a node name, one '.', 32 lowercase hex. */
int lb_node_id_valid(const char *s);

/* The node part of a valid id into node[LB_NODE_ID_NAME_MAX + 1]: "" for a
 * plain id. Returns 0 when id is not valid (node is then ""). */
int lb_node_id_node(const char *id, char *node, size_t nodesz);

/* A new random id into out (at least LB_NODE_ID_MAX + 1): prefixed with
 * node unless node is "" or NULL. */
LB_MUST_CHECK int lb_node_id_new(const char *node, char *out, size_t outsz);

/* The sandbox of an E2B host name "<port>-<id>.<domain>" (the SDK builds
 * `${port}-${sandboxId}.${domain}`, so a prefixed id is two DNS labels):
 * the id into id (at least LB_NODE_ID_MAX + 1), the port (1..65535) into
 * *port. host is n bytes, a ":port" of the URL after them is ignored.
 * With domain set, host must end in "." domain (any case) and the id is
 * what lies between; with domain "" or NULL the id is the one label, or
 * the two, after the port that make an id (the two when both do). 0 when
 * host is not of that shape. Pure. */
int lb_node_id_host(const char *host, size_t n, const char *domain, char *id, size_t idsz, int *port);

#endif
