/* E2B's updateNetwork (e2b_network.c): PUT /sandboxes/{id}/network, the
 * SDK's sbx.updateNetwork({allowOut, denyOut, allowInternetAccess}), as
 * the same change as PATCH /api/sandboxes/{id}/network (docs/NETWORK.md):
 * the same rules, the same ceiling, the same 403 sentence beyond it. */
#ifndef LB_E2B_NETWORK_H
#define LB_E2B_NETWORK_H

#include "common/status.h"
#include "sbxapi/sandbox_registry.h"
#include "web/request.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#define LB_E2B_TRANSFORMS_MAX 16        /* headers all of network.rules set (the policy's secrets' cap) */
#define LB_E2B_TRANSFORM_NAME_MAX 63    /* a header name's bytes */
#define LB_E2B_TRANSFORM_VALUE_MAX 4096 /* a header value's bytes (an operator secret's cap) */

/* E2B's allow_internet_access (inet) and network object (net: allowOut,
 * denyOut, egressProxy, rules; either may be NULL) as an llmbox policy of
 * rules with "precedence": "allow" into *out (the caller frees it). When
 * neither list is given, *fallback (when not NULL; the caller frees it)
 * gets the policy to use where the ceiling refuses *out: a gateway that
 * allows nothing yet. net's "rules" (E2B's per-host transforms: headers
 * added to the HTTPS requests to a host, docs/NETWORK.md) become transform
 * secrets the policy names (LB_NETPOL_TRANSFORM_PREFIX) and, in *values,
 * their values as JSON text for sandboxd (lbsb_spec.net_values; the caller
 * wipes and frees it); with values NULL (an update) rules are refused.
 * LB_OK; LB_E_INVAL with a sentence in err; LB_E_NOMEM. */
LB_MUST_CHECK int lb_e2b_network_map(const cJSON *inet, const cJSON *net, cJSON **out, cJSON **fallback,
                                     char **values, char *err, size_t errsz);

/* The hosts of the transform values (lb_e2b_network_map's *values) held
 * to the operator's ceilings (lb_netpolicy_admit: service's and user's
 * network_egress_max): a header goes only where sandboxes may go. LB_OK;
 * LB_E_DENIED with the sentence naming the host; LB_E_INVAL; LB_E_NOMEM. */
LB_MUST_CHECK int lb_e2b_transforms_admit(const char *values, const char *service, const char *user, char *err,
                                          size_t errsz);

/* E2B's network.maskRequestHost (v: NULL, null or a string) checked into
 * out ("" when not given): HOST or HOST:PORT of letters, digits, '.',
 * '-', '_', with ${PORT} (the port the request is for) anywhere, under
 * LB_SBX_MASK_HOST_MAX bytes; so no CR, LF, space or other byte that would
 * break a header line. LB_OK, or LB_E_INVAL with a sentence in err. */
LB_MUST_CHECK int lb_e2b_mask_host_check(const cJSON *v, char *out, size_t outsz, char *err, size_t errsz);

/* The Host a request relayed to port carries for a checked mask: each
 * "${PORT}" replaced by port (1-65535: never longer than the mask), into
 * out (cut at outsz). */
void lb_e2b_mask_host_apply(const char *mask, int port, char *out, size_t outsz);

/* Answers PUT /sandboxes/{id}/network for the API sandbox s (found and
 * held by the caller): 204 once the gateway applies the new rules; 400
 * (a body that is not E2B's shape, a field llmbox does not have, or a
 * sandbox made without rules), 403 naming a rule beyond
 * network_egress_max, in E2B's error shape. */
void lb_e2b_network_put(lb_req *r, lb_sbx *s);

#endif
