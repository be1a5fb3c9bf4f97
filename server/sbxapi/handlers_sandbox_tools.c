/* POST /api/sandboxes/{id}/tools/{name} (handlers_sandbox_tools.h). */
#include "sbxapi/handlers_sandbox_tools.h"

#include "agent/plugin_host.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/status.h"
#include "sbxapi/handlers_sandboxes.h"
#include "web/http.h"
#include "web/req_body.h"
#include "sbxapi/sandbox_registry.h"
#include "sbxapi/tool_hosts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_TOOL_NAME_MAX 64

/* What a crash takes with it, said in the 502. */
static const char lb_lost_state[] =
    "What the tools held in the host's memory is lost with it (file_editor's undo history); bash's shell "
    "lives in the sandbox and is kept, as are the sandbox's files, and a command the call left running goes on "
    "(call bash with \"\" to wait for it or \"C-c\" to stop it). The next call starts a new tool host.";

/* {"error": {code, message, <key>: value}} with one more field. */
static void lb_error_with(lb_req *r, int status, const char *code, const char *message, const char *key,
                          cJSON *value)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *e = o ? cJSON_AddObjectToObject(o, "error") : NULL;
    if (!e || !cJSON_AddStringToObject(e, "code", code) || !cJSON_AddStringToObject(e, "message", message)) {
        cJSON_Delete(o);
        cJSON_Delete(value);
        lb_http_error(r, 500, NULL, "Out of memory.");
        return;
    }
    if (value)
        cJSON_AddItemToObject(e, key, value);
    lb_http_json(r, status, o, NULL);
    cJSON_Delete(o);
}

/* The host's reply as the answer. */
static void lb_answer(lb_req *r, cJSON *reply, int fresh_after_crash)
{
    const char *kind = cJSON_GetObjectItemCaseSensitive(reply, "reply")->valuestring;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(reply, "message");
    const char *msg = cJSON_IsString(m) ? m->valuestring : "";
    if (!strcmp(kind, "unknown_tool")) {
        cJSON *tools = cJSON_DetachItemFromObjectCaseSensitive(reply, "tools");
        lb_error_with(r, 404, "unknown_tool", msg, "tools", tools);
        return;
    }
    if (!strcmp(kind, "bad_arguments")) {
        cJSON *obs = cJSON_DetachItemFromObjectCaseSensitive(reply, "observation");
        lb_error_with(r, 400, "bad_arguments", msg, "observation", obs);
        return;
    }
    if (strcmp(kind, "done")) {
        lb_http_error(r, 502, "tool_host_crashed", "The tool host sent a reply of an unknown kind.");
        return;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(reply, "reply");
    if (!cJSON_HasObjectItem(reply, "truncated"))
        cJSON_AddFalseToObject(reply, "truncated");
    if (fresh_after_crash)
        cJSON_AddTrueToObject(reply, "tool_host_restarted");
    lb_http_json(r, 200, reply, NULL);
}

void lb_h_sbx_tool(lb_req *r)
{
    const char *id = r->sandbox, *name = r->rest;
    if (!name || strlen(name) > LB_TOOL_NAME_MAX) {
        lb_http_drain(r);
        lb_http_error(r, 404, "unknown_tool", "There is no tool with a name that long (GET /api/tools lists them).");
        return;
    }
    lb_sbx *s = lb_sbx_usable(r, id);
    if (!s)
        return;
    lb_buf body;
    lb_buf_init(&body, 0);
    cJSON *reply = NULL;
    int claimed = 0;
    if (lb_req_body(r, LB_ARGS_MAX, &body, "tool arguments") != LB_OK)
        goto out;
    if (body.len) {
        /* not JSON at all is the client's mistake, said before a host runs;
         * the tool's schema is checked by the host, as the agent checks it */
        int prc = LB_OK;
        char msg[600];
        cJSON *j = lb_json_parse_checked(body.data, body.len, "tool arguments", LB_JSON_MAX_VALUES, LB_JSON_MAX_DEPTH,
                                         &prc, msg, sizeof msg);
        if (!j) {
            lb_http_error(r, prc == LB_E_NOMEM ? 500 : 400, prc == LB_E_NOMEM ? NULL : "bad_arguments", "%s", msg);
            goto out;
        }
        cJSON_Delete(j);
    }
    if (!lb_sbx_tool_claim(s)) {
        lb_http_error(r, 409, "tool_busy",
                      "A tool call is already running on the sandbox %s; send the next one when it has answered.", id);
        goto out;
    }
    claimed = 1;
    char gone[400], err[400] = "";
    if (lb_sbx_lock(s, gone, sizeof gone) != LB_OK) {
        lb_http_error(r, 404, "not_found", "%s", gone);
        goto out;
    }
    int started = 0;
    int rc = lb_tool_host_call(s, r->cfg, name, body.data ? body.data : "", body.len, &reply, &started, err,
                               sizeof err);
    int fresh_after_crash = started && s->tool_host_lost;
    if (rc == LB_OK)
        s->tool_host_lost = 0;
    else if (rc == LB_E_UNAVAILABLE)
        s->tool_host_lost = 1;
    lb_sbx_unlock(s);
    switch (rc) {
    case LB_OK:
        lb_answer(r, reply, fresh_after_crash);
        break;
    case LB_E_UNAVAILABLE:
        lb_warn("web: sandbox API: %s: tool %s: %s", s->id, name, err);
        lb_http_error(r, 502, "tool_host_crashed", "The call of %s did not complete: %s. %s", name, err,
                      lb_lost_state);
        break;
    case LB_E_CANCELLED:
        lb_http_error(r, 404, "not_found", "The sandbox %s was deleted or expired while the tool %s ran.", s->id,
                      name);
        break;
    default:
        lb_error("web: sandbox API: %s: tool %s: %s", s->id, name, err);
        lb_http_error(r, 500, NULL, "Could not run the tool: %s.", err);
        break;
    }
out:
    if (claimed)
        lb_sbx_tool_release(s);
    cJSON_Delete(reply);
    lb_buf_free(&body);
    lb_sbx_put(s);
}
