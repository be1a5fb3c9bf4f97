/* E2B's updateNetwork (e2b_network.c): PUT /sandboxes/{id}/network, the
 * SDK's sbx.updateNetwork({allowOut, denyOut, allowInternetAccess}), as
 * the same change as PATCH /api/sandboxes/{id}/network (docs/NETWORK.md):
 * the same rules, the same ceiling, the same 403 sentence beyond it. */
#ifndef LB_E2B_NETWORK_H
#define LB_E2B_NETWORK_H

#include "sbxapi/sandbox_registry.h"
#include "web/request.h"

/* Answers PUT /sandboxes/{id}/network for the API sandbox s (found and
 * held by the caller): 204 once the gateway applies the new rules; 400
 * (a body that is not E2B's shape, a field llmbox does not have, or a
 * sandbox made without rules), 403 naming a rule beyond
 * network_egress_max, in E2B's error shape. */
void lb_e2b_network_put(lb_req *r, lb_sbx *s);

#endif
