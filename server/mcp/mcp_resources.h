/* MCP's resources (mcp_resources.c): a task's output files and its
 * trajectory, by URI:
 *   llmbox://tasks/<task id>/artifacts/<path>   one output file
 *   llmbox://tasks/<task id>/trajectory         the agent's steps (JSON)
 * Read through the API's own routes (mcp_sub.h), so only the task's owner
 * reads them, with the API's rules on what may be served. */
#ifndef LB_MCP_RESOURCES_H
#define LB_MCP_RESOURCES_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/status.h"
#include "web/request.h"

#define LB_MCP_RESOURCE_MAX (8u << 20)   /* bytes of one resource read: a message stays small */

/* One resources/read: *out gets {uri, mimeType, text | blob} for uri, its
 * file at most max bytes. LB_OK; else *code is the JSON-RPC error
 * (LB_MCP_RESOURCE_NOT_FOUND, LB_RPC_INVALID_PARAMS, LB_RPC_INTERNAL_ERROR)
 * with a sentence in msg. */
LB_MUST_CHECK int lb_mcp_resource_read(lb_req *r, const char *uri, size_t max, cJSON **out, int *code, char *msg,
                                       size_t msgsz);
/* {"resources":[...]}: the trajectory and output files of the caller's
 * newest tasks. NULL on OOM. */
cJSON *lb_mcp_resources_list(lb_req *r);
/* {"resourceTemplates":[...]}: the two URI shapes above. */
cJSON *lb_mcp_resource_templates(void);
/* A resource_link content item for output file path of task id. */
cJSON *lb_mcp_artifact_link(const char *id, const char *path, const char *mime, double size);

#endif
