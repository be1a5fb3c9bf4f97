/* MCP's task tools (mcp_tools_task.c): run a task with llmbox's agent,
 * follow it, cancel it; each a request of the task API (/api/tasks) run
 * through its route (mcp_sub.h), so the user's owners, limits and quotas
 * are the API's. */
#ifndef LB_MCP_TOOLS_TASK_H
#define LB_MCP_TOOLS_TASK_H

#include <cjson/cJSON.h>

#include "mcp/mcp_tools.h"

/* Each answers c with a CallToolResult (mcp_tools.h); NULL on OOM. */
cJSON *lb_mcp_tool_task_run(lb_mcp_call *c);
cJSON *lb_mcp_tool_task_status(lb_mcp_call *c);
cJSON *lb_mcp_tool_task_cancel(lb_mcp_call *c);

#endif
