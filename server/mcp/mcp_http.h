/* llmbox as an MCP server: the Streamable HTTP transport at /mcp
 * (mcp_http.c), its sessions and the dispatch of JSON-RPC methods. The
 * tools: mcp_tools.h; the resources: mcp_resources.h; the routes: rows of
 * front/router.c. */
#ifndef LB_MCP_HTTP_H
#define LB_MCP_HTTP_H

#include "common/status.h"
#include "web/request.h"

#define LB_MCP_SESSIONS_MAX 1024        /* sessions of the whole web process */
#define LB_MCP_SESSIONS_PER_CALLER 16   /* of one user or token: a 17th ends its least recently used one */
#define LB_MCP_SESSION_IDLE_S 3600      /* a session unused this long is ended */
#define LB_MCP_SESSION_LIFE_S 86400     /* and any after a day */
#define LB_MCP_PROTOCOL_LATEST "2025-11-25"

/* The router's gate of LB_WHO_MCP: the sandbox API token, or what the task
 * API takes (a user's token or login; without users, loopback). Answers
 * 401/403 and returns 0 when r may not go on. */
LB_MUST_CHECK int lb_mcp_auth_ok(lb_req *r);
/* POST /mcp: one JSON-RPC message; DELETE /mcp: ends the session. */
void lb_h_mcp_post(lb_req *r);
void lb_h_mcp_delete(lb_req *r);
/* Whether v is a protocol revision this server speaks. Pure. */
int lb_mcp_version_known(const char *v);

#endif
