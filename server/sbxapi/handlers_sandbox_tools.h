/* POST /api/sandboxes/{id}/tools/{name}: one call of a loaded tool against
 * an API sandbox, run by the sandbox's tool host (tool_hosts.h); a row of
 * router.c. */
#ifndef LB_WEB_HANDLERS_SANDBOX_TOOLS_H
#define LB_WEB_HANDLERS_SANDBOX_TOOLS_H

#include "web/request.h"

/* r->sandbox: the validated id; r->rest: the tool's name. The body: the
 * tool's arguments object, as a model would send it. */
void lb_h_sbx_tool(lb_req *r);

#endif
