/* The tool hosts of API sandboxes (POST /api/sandboxes/{id}/tools/{name}):
 * one `llmbox agent --tool-host` process per sandbox that has had a tool
 * call (agent/tool_host.h has its protocol), started on the first call and
 * again on the next call after it died. Plugins never load in the web.
 *
 * The host's sandbox requests are run here, on the sandbox's own sandboxd
 * connection (sandbox_registry.h), by the thread of the tool call, which
 * holds the sandbox's op_mu for the whole call. So a tool call and the
 * API's exec and file routes on one sandbox run one after another, and the
 * TTL, delete and the leases govern what the host can touch: it can reach
 * that sandbox only, with the five operations a plugin has (exec, read,
 * write, list, stat), on an id the web fills in.
 *
 * The host dies with its sandbox (lb_tool_host_stop from the registry's
 * teardown), and with the web (its socket closes, it reads end of file). */
#ifndef LB_WEB_TOOL_HOSTS_H
#define LB_WEB_TOOL_HOSTS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/status.h"

struct lb_sbx;
struct lb_config;

/* Any frame the host sends: a request with a file's bytes to write is the
 * largest (a call's arguments are at most 4 MiB). */
#define LB_TOOL_HOST_FRAME_MAX (16u << 20)
/* The observation of one call, well above what plugin_host.c renders
 * (three streams of 64 KiB and the messages): more is a broken host. */
#define LB_TOOL_OBS_MAX (1u << 20)

typedef struct lb_tool_host lb_tool_host;

/* Runs one call (tool name, the arguments' JSON text) on s's host,
 * starting it first when s has none (*started then set). The caller holds
 * s's op_mu (lb_sbx_lock). Returns
 *   LB_OK           *reply: the host's reply object (tool_host.h), caller frees;
 *   LB_E_UNAVAILABLE the host died or broke the protocol during the call: it is
 *                   gone (why in err), the next call starts a new one;
 *   LB_E_CANCELLED  the sandbox was deleted or expired during the call;
 *   LB_E_INTERNAL   no host could be started (err says why). */
LB_MUST_CHECK int lb_tool_host_call(struct lb_sbx *s, const struct lb_config *cfg, const char *tool,
                                    const char *args, size_t args_len, cJSON **reply, int *started, char *err,
                                    size_t errsz);
/* Kills the host and waits for it (NULL: nothing). Under op_mu. */
void lb_tool_host_stop(lb_tool_host *h);

#endif
