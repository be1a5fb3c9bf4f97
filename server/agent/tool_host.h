/* `llmbox agent --tool-host`: the process that runs tool calls for one API
 * sandbox (POST /api/sandboxes/{id}/tools/{name}), started by the web
 * (sbxapi/tool_hosts.c) with one end of a socketpair as fd 0.
 *
 * It loads the plugins as an agent does (plugin_host.c, the tools
 * llmbox.conf offers) and runs each call with lb_tool_run, so the
 * observation is the agent's own text. Frames on fd 0 (4-byte big-endian
 * length, then the bytes, as sandboxd's protocol):
 *   web -> host  {"tool": name, "arguments": "<the arguments' JSON text>"}
 *   host -> web  sandbox requests of include/llmbox/sandbox.h ({"op":...},
 *                on the placeholder id LB_TOOL_HOST_SB_ID), each answered
 *                by the web as sandboxd would; then one reply:
 *                {"reply":"done", "observation", "status", "exit_code"?,
 *                 "truncated", "duration_ms", "finished"?, "answer"?}
 *                {"reply":"unknown_tool", "message", "tools":[names]}
 *                {"reply":"bad_arguments", "message", "observation"}
 *                {"reply":"crashed", "message"} (a plugin crashed or hung in
 *                its own code: sent by the watchdog, then the host exits)
 * The host holds no sandboxd connection: the web runs the requests on the
 * sandbox's own, so the API's TTL, delete and leases govern it. It exits
 * at end of file on fd 0 (the web closed it, or died). */
#ifndef LB_AGENT_TOOL_HOST_H
#define LB_AGENT_TOOL_HOST_H

#include "agent/plugin_host.h"
#include "common/config.h"

/* The sandbox id the host's requests carry; the web puts the real one. */
#define LB_TOOL_HOST_SB_ID "00000000000000000000000000000000"
/* A call frame: the arguments' cap (plugin_host.h) and the envelope. */
#define LB_TOOL_HOST_CALL_MAX (LB_ARGS_MAX + 4096)

/* Runs until fd 0 ends; the process's exit status. */
int lb_tool_host_main(const lb_config *cfg);

#endif
