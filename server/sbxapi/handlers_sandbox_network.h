/* GET and PATCH /api/sandboxes/{id}/network (handlers_sandbox_network.c):
 * a sandbox's network policy and the record of its connections, and the
 * policy changed while it runs (docs/NETWORK.md). */
#ifndef LB_SBXAPI_HANDLERS_SANDBOX_NETWORK_H
#define LB_SBXAPI_HANDLERS_SANDBOX_NETWORK_H

#include "web/request.h"

/* 200 {id, network, connections: [...], truncated}; 404 when the sandbox
 * is unknown or its network is not a policy of rules. */
void lb_h_sbx_network_get(lb_req *r);
/* Body {"allow": [...], "deny": [...]} (or {"network": that}): checked like
 * a create's (400, 403 naming the rule beyond network_egress_max), then the
 * gateway's policy replaced; 200 {id, network}. */
void lb_h_sbx_network_patch(lb_req *r);

#endif
