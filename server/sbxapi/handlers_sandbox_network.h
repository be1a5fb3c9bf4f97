/* GET and PATCH /api/sandboxes/{id}/network (handlers_sandbox_network.c):
 * a sandbox's network policy and the record of its connections, and the
 * policy changed while it runs (docs/NETWORK.md). */
#ifndef LB_SBXAPI_HANDLERS_SANDBOX_NETWORK_H
#define LB_SBXAPI_HANDLERS_SANDBOX_NETWORK_H

#include "common/status.h"
#include "web/request.h"

#include <cjson/cJSON.h>
#include <stddef.h>

/* 200 {id, network, connections: [...], truncated}; 404 when the sandbox
 * is unknown or its network is not a policy of rules. */
void lb_h_sbx_network_get(lb_req *r);
/* Body {"allow": [...], "deny": [...]} (or {"network": that}): checked like
 * a create's (400, 403 naming the rule beyond network_egress_max), then the
 * gateway's policy replaced; 200 {id, network}. */
void lb_h_sbx_network_patch(lb_req *r);
/* The change PATCH makes, for other protocols' routes too (E2B's PUT
 * /sandboxes/{id}/network): policy v (a policy of rules) checked like a
 * create's and against the ceiling of r's user, then given to the gateway
 * of sandboxd sandbox sbx_id. LB_OK with the policy as canonical text in
 * text (LB_NETPOL_TEXT_MAX + 1 bytes); else a sentence in err and the HTTP
 * status to answer in *status: 400 (not a policy of rules), 403 (a rule
 * beyond network_egress_max, named), 404 (no gateway), 500. */
LB_MUST_CHECK int lb_sbx_network_apply(const lb_req *r, const char *sbx_id, const cJSON *v, char *text, char *err,
                                       size_t errsz, int *status);

#endif
