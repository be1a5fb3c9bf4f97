/* `llmbox agent --tool-host` (tool_host.h): tool calls for one API sandbox. */
#include "agent/tool_host.h"

#include "agent/plugin_host.h"
#include "agent/watchdog.h"
#include "common/log.h"
#include "common/status.h"
#include "sandbox/rpc.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A plugin that hangs or crashes ends the host: it says which and how in
 * a last reply ("crashed"), then exits; the web answers 502
 * tool_host_crashed with that and starts a new host on the next call.
 * Nothing else could stop a plugin stuck in its own code. The main thread
 * is parked in the plugin's code, never in the middle of a frame (the
 * watchdog does not count time in host functions), so this thread may
 * write the socket. */
static void on_stop(void *arg, const char *tool, int limit_s, int sig, const char *where)
{
    (void)arg;
    char msg[400], frame[600];
    if (sig)
        snprintf(msg, sizeof msg, "the tool %s crashed (signal %d at %s)", tool, sig, where ? where : "?");
    else
        snprintf(msg, sizeof msg, "the tool %s ran longer than tool_timeout_s (%d s) in its own code", tool,
                 limit_s);
    lb_error("tool host: %s", msg);
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddStringToObject(o, "reply", "crashed") && cJSON_AddStringToObject(o, "message", msg) &&
        cJSON_PrintPreallocated(o, frame, sizeof frame, 0))
        LB_IGNORE(lbsd_frame_send(0, frame, strlen(frame), NULL)); /* the web notices the exit anyway */
    cJSON_Delete(o);
    _exit(70);
}

static int send_json(cJSON *o)
{
    char *t = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!t)
        return LB_E_NOMEM;
    int rc = lbsd_frame_send(0, t, strlen(t), NULL);
    free(t);
    return rc;
}

static cJSON *reply_new(const char *kind, const char *message)
{
    cJSON *o = cJSON_CreateObject();
    if (o && (!cJSON_AddStringToObject(o, "reply", kind) ||
              (message && !cJSON_AddStringToObject(o, "message", message)))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *unknown_tool(const lb_plugins *p, const char *name)
{
    char msg[200];
    snprintf(msg, sizeof msg, "There is no tool called '%.64s'.", name);
    cJSON *o = reply_new("unknown_tool", msg);
    cJSON *names = o ? cJSON_AddArrayToObject(o, "tools") : NULL;
    if (!names) {
        cJSON_Delete(o);
        return NULL;
    }
    for (size_t i = 0; i < lb_plugins_count(p); i++) {
        const lb_tool_entry *e = lb_plugins_at(p, i);
        if (e->enabled)
            cJSON_AddItemToArray(names, cJSON_CreateString(lb_tool_offered_name(e)));
    }
    return o;
}

static cJSON *outcome_reply(llmbox_ctx *ctx, const lb_tool_outcome *oc)
{
    cJSON *o = reply_new("done", NULL);
    if (!o)
        return NULL;
    int bad = !cJSON_AddStringToObject(o, "observation", oc->observation ? oc->observation : "") ||
              !cJSON_AddStringToObject(o, "status", oc->status) ||
              (oc->has_exit_code && !cJSON_AddNumberToObject(o, "exit_code", oc->exit_code)) ||
              !cJSON_AddBoolToObject(o, "truncated", oc->truncated) ||
              !cJSON_AddNumberToObject(o, "duration_ms", (double)oc->duration_ms);
    const char *answer = NULL;
    size_t alen = 0;
    if (!bad && lb_ctx_finished(ctx, &answer, &alen))
        bad = !cJSON_AddTrueToObject(o, "finished") || !cJSON_AddStringToObject(o, "answer", answer ? answer : "");
    lb_ctx_clear_finished(ctx); /* a sandbox outlives an episode's finish: said on its call only */
    if (bad) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* One call frame -> its reply (NULL: out of memory or a frame that is not
 * a call, which only a broken web sends). */
static cJSON *one_call(const lb_plugins *p, llmbox_ctx *ctx, const char *frame, size_t len)
{
    cJSON *call = cJSON_ParseWithLength(frame, len);
    const cJSON *jt = cJSON_GetObjectItemCaseSensitive(call, "tool");
    const cJSON *ja = cJSON_GetObjectItemCaseSensitive(call, "arguments");
    cJSON *out = NULL;
    if (!cJSON_IsString(jt) || !cJSON_IsString(ja)) {
        lb_error("tool host: a call frame without tool and arguments");
        goto done;
    }
    const char *name = jt->valuestring, *args = ja->valuestring;
    const lb_tool_entry *e = lb_plugins_find(p, name);
    if (!e) {
        out = unknown_tool(p, name);
        goto done;
    }
    char err[1024];
    cJSON *parsed = NULL;
    if (lb_tool_validate_args(e, args, strlen(args), &parsed, err, sizeof err) != LB_OK) {
        /* the observation too: what the agent would have told the model */
        lb_tool_outcome oc;
        if (lb_tool_run(p, ctx, name, args, strlen(args), &oc) == LB_OK) {
            out = reply_new("bad_arguments", err);
            if (out && !cJSON_AddStringToObject(out, "observation", oc.observation ? oc.observation : "")) {
                cJSON_Delete(out);
                out = NULL;
            }
        }
        lb_tool_outcome_free(&oc);
        goto done;
    }
    cJSON_Delete(parsed);
    lb_tool_outcome oc;
    if (lb_tool_run(p, ctx, name, args, strlen(args), &oc) == LB_OK)
        out = outcome_reply(ctx, &oc);
    lb_tool_outcome_free(&oc);
done:
    cJSON_Delete(call);
    return out;
}

int lb_tool_host_main(const lb_config *cfg)
{
    signal(SIGPIPE, SIG_IGN); /* a web gone mid-answer is a failed send, not a death */
    cJSON *perr = cJSON_CreateArray();
    lb_plugins *p = NULL;
    if (!perr || lb_plugins_load(cfg->plugin_dir, cfg, &p, perr) != LB_OK) {
        lb_error("tool host: out of memory loading the plugins");
        cJSON_Delete(perr);
        return 1;
    }
    lb_plugins_select(p, cfg, perr); /* the tools a task is offered, no more */
    cJSON_Delete(perr);
    if (lb_watchdog_start(cfg->tool_timeout_s, NULL, NULL, on_stop, NULL) != LB_OK)
        lb_warn("tool host: the tool watchdog could not start; a hung tool holds its sandbox's calls");
    lbsb_conn *conn = NULL;
    if (lbsb_conn_from_fd(0, NULL, &conn) != LB_OK) {
        lb_plugins_free(p);
        return 1;
    }
    /* the agent's own defaults of a command's limits (loop.c) */
    int tmo = cfg->cmd_timeout_s > 0 ? cfg->cmd_timeout_s * 1000 : 120000;
    int soft = cfg->bash_soft_timeout_s > 0 ? cfg->bash_soft_timeout_s * 1000 : 0;
    llmbox_ctx *ctx = lb_ctx_new(conn, LB_TOOL_HOST_SB_ID, NULL, tmo, soft);
    int ret = ctx ? 0 : 1;
    while (ctx) {
        char *frame = NULL;
        size_t len = 0;
        if (lbsd_frame_recv(0, LB_TOOL_HOST_CALL_MAX, &frame, &len, NULL) != LB_OK)
            break; /* the web closed our socket: the sandbox is gone, or the web */
        cJSON *out = one_call(p, ctx, frame, len);
        free(frame);
        if (!out || send_json(out) != LB_OK) {
            ret = 1;
            break;
        }
        if (lb_ctx_sandbox_lost(ctx, NULL))
            break; /* our connection is out of step; the next call gets a fresh host */
    }
    lb_watchdog_stop();
    lb_ctx_free(ctx);
    lbsb_close(conn);
    lb_plugins_free(p);
    return ret;
}
