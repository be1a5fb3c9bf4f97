/* MCP's sandbox tools (mcp_tools_sbx.c): each one request of the sandbox
 * API (/api/sandboxes), run through its route (mcp_sub.h). */
#ifndef LB_MCP_TOOLS_SBX_H
#define LB_MCP_TOOLS_SBX_H

#include <cjson/cJSON.h>

#include "mcp/mcp_tools.h"

/* Each answers c with a CallToolResult (mcp_tools.h); NULL on OOM. */
cJSON *lb_mcp_tool_sbx_create(lb_mcp_call *c);
cJSON *lb_mcp_tool_sbx_exec(lb_mcp_call *c);
cJSON *lb_mcp_tool_sbx_read(lb_mcp_call *c);
cJSON *lb_mcp_tool_sbx_write(lb_mcp_call *c);
cJSON *lb_mcp_tool_sbx_list(lb_mcp_call *c);
cJSON *lb_mcp_tool_sbx_destroy(lb_mcp_call *c);

#endif
