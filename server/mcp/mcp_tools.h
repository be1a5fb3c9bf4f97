/* MCP's tools (mcp_tools.c): the table tools/list shows, the call of one
 * tool, and the pieces every tool's result is made of. The tools
 * themselves: mcp_tools_sbx.c (sandboxes), mcp_tools_task.c (tasks). */
#ifndef LB_MCP_TOOLS_H
#define LB_MCP_TOOLS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/status.h"
#include "mcp/mcp_sub.h"
#include "web/request.h"

/* One tools/call as a tool sees it. */
typedef struct lb_mcp_call {
    lb_req *r;                 /* the POST /mcp request: its credentials run the inner requests */
    const cJSON *args;         /* "arguments": an object (an empty one when absent) */
    int wants_progress;        /* the request had a progressToken */
    const int *cancelled;      /* nonzero (read with __atomic_load_n) once the client sent
                                * notifications/cancelled for this call; may be NULL */
    /* Sends notifications/progress when the client asked for them (a
     * progressToken), else nothing. total <= 0: unknown. Returns 0, or -1
     * when the client has gone (the tool may stop waiting). */
    int (*progress)(struct lb_mcp_call *c, double progress, double total, const char *message);
    void *transport;           /* mcp_http.c's */
} lb_mcp_call;

/* A tool: name, description, its input schema as JSON text, and the
 * function that answers a call with a CallToolResult (never NULL but on
 * OOM). */
typedef struct lb_mcp_tool {
    const char *name;
    const char *title;
    const char *description;
    const char *schema;
    cJSON *(*run)(lb_mcp_call *c);
} lb_mcp_tool;

/* {"tools":[...]}: every tool with its schema. NULL on OOM. */
cJSON *lb_mcp_tools_list(void);
/* The tool named name, or NULL. */
const lb_mcp_tool *lb_mcp_tool_find(const char *name);

/* Results. A tool's error is a result with isError and one sentence: the
 * client shows it to its model, and the session goes on. */
cJSON *lb_mcp_result_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A result whose text is data as JSON, with data as structuredContent
 * (takes data). */
cJSON *lb_mcp_result_json(cJSON *data);
/* Appends {"type":"text","text":text} to result's content. 0 or -1. */
int lb_mcp_result_add_text(cJSON *result, const char *text);

/* The isError result of an inner request the API refused: "Could not
 * <what>: <the API's sentence>" */
cJSON *lb_mcp_result_refused(const lb_mcp_answer *a, const char *what);

/* lb_mcp_sub while telling the client: a notifications/progress every
 * second, "<what>: N s", while the inner request runs (on a thread of its
 * own; this one only writes the notifications). Without a progressToken
 * it is lb_mcp_sub. */
LB_MUST_CHECK int lb_mcp_sub_progress(lb_mcp_call *c, const char *method, const char *path, const char *ctype,
                                      const void *body, size_t len, size_t max, lb_mcp_answer *a, const char *what);

/* lb_mcp_sub_progress that also watches the client's
 * notifications/cancelled for this call (the inner request runs on a
 * thread then, with or without a progressToken): within 200 ms of the
 * cancel, on_cancel(arg, 1) asks the inner request to stop; once it has
 * returned, on_cancel(arg, 0) undoes what the first call set. on_cancel
 * NULL: lb_mcp_sub_progress. */
LB_MUST_CHECK int lb_mcp_sub_watch(lb_mcp_call *c, const char *method, const char *path, const char *ctype,
                                   const void *body, size_t len, size_t max, lb_mcp_answer *a, const char *what,
                                   void (*on_cancel)(void *arg, int start), void *arg);

/* Arguments: a string (NULL when absent or not one), a whole number
 * (def when absent; -1 when present but not one in [lo, hi]). */
const char *lb_mcp_arg_str(const lb_mcp_call *c, const char *name);
long long lb_mcp_arg_int(const lb_mcp_call *c, const char *name, long long def, long long lo, long long hi);

#endif
