/* several nodes: which node an API sandbox id names, and the answer for an id
 * of another node that reached this web.
 *
 * In a cluster each node's own `llmbox web` serves the sandboxes of its
 * sandboxd, and names them "<node_name>.<32 hex>" (common/node_id.h) so
 * HAProxy routes every call by the id. A call whose id names another node
 * gets 421 Misdirected Request (RFC 9110 15.5.20), not 404: the sandbox may
 * well exist, only not here, and a client or balancer must not take it for
 * gone. The answer names the node that holds it.
 */
#ifndef LB_SANDBOX_NODE_H
#define LB_SANDBOX_NODE_H

#include <stddef.h>

#include "web/request.h"

/* 1 when this web (node_name own, "" when none) may hold id: id has no
 * node prefix (a sandbox made before node_name was set) or own's. Else 0
 * with the id's node in node[nodesz]. Pure; id must be valid. */
int lb_sbx_id_mine(const char *own, const char *id, char *node, size_t nodesz);

/* The sentence of the 421 for an id of node into msg. */
void lb_sbx_id_elsewhere_msg(const char *own, const char *id, const char *node, char *msg, size_t msgsz);

/* 1 when the sandbox API id may be held here; else answers 421 JSON
 * {"error":{"code":"misdirected","message":..,"node":<holder>}} with an
 * X-Llmbox-Node header, and returns 0. */
int lb_sbx_id_here(lb_req *r, const char *id);

/* The same for a snapshot id (POST /api/sandboxes/{id}/snapshot names them
 * like sandboxes: a snapshot lives in its node's sandboxd). */
int lb_snapshot_id_here(lb_req *r, const char *id);

#endif
