/* The MCP servers of one task, as the agent loop sees them (the one file
 * of server/mcpclient/ that server/agent/loop.c calls): which servers the
 * task is offered, starting them (handshake, tools/list with its checks),
 * their tools as entries of the model's tools list named SERVER__tool,
 * and one call made into an observation. A server that cannot be started
 * or whose tools are refused is left out with a sentence for the task's
 * log; the task goes on with the others and the plugins' tools. Images
 * in a result are written into the sandbox under /tmp/mcp/ and named in
 * the observation; their bytes come back in the outcome too, for the
 * providers whose tool results take images (Anthropic's; OpenAI's tool
 * messages carry text only). */
#ifndef LB_MCPC_HUB_H
#define LB_MCPC_HUB_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/config.h"
#include "common/status.h"
#include "llmbox/sandbox.h"
#include "mcpclient/mcpc_result.h"

#define LB_MCPC_IMAGE_DIR "/tmp/mcp"  /* where a result's images are written in the sandbox */

typedef struct lb_mcpc_hub lb_mcpc_hub;

/* The servers a task is offered: task (n_task names, a task's mcp
 * option) when n_task > 0, else model_list (a model's mcp setting, may be
 * NULL). LB_OK with *n names in names (room for LB_CFG_MAX_MCP), or
 * LB_E_NOTFOUND / LB_E_INVAL with a sentence in err naming what is not
 * configured. */
LB_MUST_CHECK int lb_mcpc_pick(const lb_config *cfg, const char (*task)[32], int n_task, const char *model_list,
                               char (*names)[LB_CFG_MCP_NAME], int *n, char *err, size_t errsz);

/* Starts the n servers named (each a configured one): stdio ones inside
 * sandbox sb_id (socket: sandboxd's; conn: the task's connection,
 * borrowed for the hub's life), HTTP ones from here. Each server left
 * out adds one sentence to notes (an array). cancel (may be NULL) ends a
 * wait. LB_OK with *out (even when every server was left out), or
 * LB_E_NOMEM. */
LB_MUST_CHECK int lb_mcpc_hub_start(const lb_config *cfg, const char (*names)[LB_CFG_MCP_NAME], int n,
                                    const char *socket, lbsb_conn *conn, const char *sb_id, volatile int *cancel,
                                    lb_mcpc_hub **out, cJSON *notes);
/* Tools offered in all. */
size_t lb_mcpc_hub_count(const lb_mcpc_hub *h);
/* Appends each tool as {type: "function", function: {name, description,
 * parameters}} to tools (the OpenAI tools array the loop sends). */
void lb_mcpc_hub_offer(const lb_mcpc_hub *h, cJSON *tools);
/* The server that offers the tool the model calls name, or NULL when no
 * server does (then it is a plugin's, or unknown). */
const char *lb_mcpc_hub_server_of(const lb_mcpc_hub *h, const char *name);

/* What one call produced. Strings owned, valid UTF-8. */
typedef struct lb_mcpc_outcome {
    char server[LB_CFG_MCP_NAME];
    char tool[65];              /* the server's name for the tool */
    char status[64];            /* "ok", "error" (isError), "failed" (no result: timeout, protocol) */
    char *text;                 /* for the trajectory and the page */
    char *observation;          /* what the model reads */
    /* the images written into the sandbox whose bytes are of a type a
     * model takes (png, jpeg, gif, webp), b64 owned: the loop sends them
     * where the provider takes images in a tool result (Anthropic) */
    lb_mcpc_image images[LB_MCPC_IMAGES];
    int n_images;
    int64_t duration_ms;
} lb_mcpc_outcome;

/* Calls the tool offered as name with args (len bytes of JSON text; empty
 * is {}); call_no numbers the images it writes. Every failure (bad
 * arguments, a timeout, a server that died, isError) is an outcome with
 * a sentence as its observation; returns LB_OK unless out of memory. */
LB_MUST_CHECK int lb_mcpc_hub_call(lb_mcpc_hub *h, const char *name, const char *args, size_t len, int call_no,
                                   lb_mcpc_outcome *o);
void lb_mcpc_outcome_free(lb_mcpc_outcome *o);
/* Stops every server (stdio: killed in the sandbox; HTTP: the session
 * ended) and frees h (may be NULL). */
void lb_mcpc_hub_free(lb_mcpc_hub *h);

#endif
