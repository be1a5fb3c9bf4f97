/* The llm mode: the paper's "LLM" baseline. One request, the task's
 * prompt as the only message (no system prompt, no tools), no sandbox;
 * the reply's text is the answer. A context-length error lowers
 * max_tokens and retries once inside lb_model_chat, as for any turn; then
 * the task fails with the reason. The accounting, the events and the
 * trajectory are those of a one-turn sandbox run with no tool, so the two
 * modes compare line for line. */
#include "agent/llm_run.h"

#include "agent/loop.h"
#include "agent/model_http.h"
#include "agent/prompts.h"
#include "agent/run_state.h"
#include "agent/sink.h"
#include "agent/tokens.h"
#include "agent/toolcall_parse.h"
#include "agent/trajectory.h"
#include "common/config.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/status.h"
#include "common/task.h"
#include "common/task_opts.h"
#include "common/utf8.h"
#include "common/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the run used, as the sandbox mode's record says it (model,
 * options, limits); no key. */
static cJSON *llm_config(const lb_loop_opts *o, const lb_model *m, int ready)
{
    cJSON *c = cJSON_CreateObject();
    const lb_model_cfg *mc = ready ? m->cfg : lb_cfg_model(o->cfg, o->model_name);
    cJSON *jm = c ? cJSON_AddObjectToObject(c, "model") : NULL;
    if (jm && mc) {
        cJSON_AddStringToObject(jm, "name", mc->name);
        cJSON_AddStringToObject(jm, "provider", mc->provider);
        cJSON_AddStringToObject(jm, "model", mc->model);
        if (ready)
            cJSON_AddStringToObject(jm, "url", m->shown_url);
        int mt = ready ? m->max_tokens : mc->max_tokens;
        if (mt > 0)
            cJSON_AddNumberToObject(jm, "max_tokens", mt);
        if (mc->context_length > 0)
            cJSON_AddNumberToObject(jm, "context_length", mc->context_length);
    }
    cJSON *op = c ? cJSON_AddObjectToObject(c, "options") : NULL;
    if (op) {
        cJSON_AddStringToObject(op, "mode", lb_run_mode_name(LB_RUN_LLM));
        if (o->run_opts && o->run_opts->max_tokens > 0)
            cJSON_AddNumberToObject(op, "max_tokens", o->run_opts->max_tokens);
        if (ready && m->capture_tokens)
            cJSON_AddTrueToObject(op, "capture_tokens");
    }
    cJSON *l = c ? cJSON_AddObjectToObject(c, "limits") : NULL;
    if (l) {
        cJSON_AddNumberToObject(l, "max_turns", 1);
        cJSON_AddNumberToObject(l, "timeout_s", o->timeout_s);
    }
    return c;
}

/* The one request; fills the trajectory's turn and the messages. */
static void ask(lb_run_state *r, lb_model *m, cJSON *messages, lb_traj *traj)
{
    lb_model_reply rep;
    char err[1024] = "";
    lb_task_usage *u = &r->res->usage;
    int64_t t0 = lb_mono_ms();
    int rc = lb_model_chat(m, messages, NULL, &rep, err, sizeof err);
    int64_t dt = lb_mono_ms() - t0;
    u->model_ms += dt;
    if (rc != LB_OK) {
        if (!lb_run_cancelled(r)) {
            lb_run_emit_error(r, err);
            lb_run_final(r, LB_TASK_FAILED, "%s", err);
        }
        return;
    }
    char labels[LB_METRIC_LABELS_MAX] = "";
    LB_IGNORE(lb_metrics_label(labels, sizeof labels, "model", m->name)); /* bounded names fit; one that does not is left out */
    lb_metrics_observe(lb_metrics_proc(), &lb_hist_model_turn, labels, (double)dt / 1000.0);
    r->res->turns = u->turns = 1;
    int64_t P = rep.prompt_tokens, C = rep.completion_tokens;
    u->prompt_tokens = P > 0 ? P : 0;
    u->completion_tokens = C > 0 ? C : 0;
    /* no tool ran, so nothing came from the environment */
    u->environment_tokens = 0;
    u->context_tokens = (P >= 0 ? P : (int64_t)(m->last_request_bytes / 4)) + (C > 0 ? C : 0);
    r->res->prompt_tokens = u->prompt_tokens;
    r->res->completion_tokens = u->completion_tokens;

    cJSON *d = cJSON_CreateObject();
    cJSON_AddNumberToObject(d, "turn", 1);
    cJSON_AddStringToObject(d, "content", rep.content ? rep.content : "");
    if (rep.reasoning)
        cJSON_AddStringToObject(d, "reasoning", rep.reasoning);
    cJSON_AddArrayToObject(d, "tool_calls"); /* none is asked for; any the model made up are not run */
    cJSON *usage = cJSON_AddObjectToObject(d, "usage");
    cJSON_AddNumberToObject(usage, "prompt_tokens", (double)u->prompt_tokens);
    cJSON_AddNumberToObject(usage, "completion_tokens", (double)u->completion_tokens);
    if (P < 0 || C < 0)
        cJSON_AddBoolToObject(usage, "reported", 0);
    cJSON_AddNumberToObject(d, "duration_ms", (double)dt);
    cJSON *tturn = traj->root ? lb_traj_turn(traj, 1) : NULL;
    if (tturn) {
        cJSON_AddNumberToObject(tturn, "model_ms", (double)dt);
        if (rep.reasoning)
            cJSON_AddStringToObject(tturn, "reasoning", rep.reasoning);
        else
            cJSON_AddNullToObject(tturn, "reasoning");
        if (rep.finish_reason)
            cJSON_AddStringToObject(tturn, "finish_reason", rep.finish_reason);
        cJSON_AddItemToObject(tturn, "usage", cJSON_Duplicate(usage, 1));
    }
    if (m->capture_tokens) {
        /* the arrays go to the trajectory only (loop.c does the same) */
        if (lb_tokens_record(rep.tokens, lb_tokens_why_none(m), tturn, &u->tokens_turns, &u->tokens_ok) != LB_OK)
            lb_warn("task %s: out of memory: the turn's tokens are not recorded", r->o->task_id);
        cJSON_AddStringToObject(d, "tokens_status",
                                lb_tokens_status_name(rep.tokens ? rep.tokens->status : LB_TOKENS_MISSING));
    }
    lb_run_emit(r, "model", d);
    cJSON *am = cJSON_CreateObject();
    cJSON_AddStringToObject(am, "role", "assistant");
    if (rep.content)
        cJSON_AddStringToObject(am, "content", rep.content);
    else
        cJSON_AddNullToObject(am, "content");
    cJSON_AddItemToArray(messages, am);

    if (rep.content && rep.content[0]) {
        r->res->answer = strdup(rep.content);
        if (!r->res->answer)
            lb_run_final(r, LB_TASK_FAILED, "out of memory");
        else
            lb_run_final(r, LB_TASK_SUCCEEDED, NULL);
    } else {
        lb_run_final(r, LB_TASK_FAILED, "the model's reply has no text%s%s%s",
                  rep.finish_reason ? " (finish_reason " : "", rep.finish_reason ? rep.finish_reason : "",
                  rep.finish_reason ? ")" : "");
    }
    lb_model_reply_free(&rep);
}

int lb_agent_run_llm(const lb_loop_opts *o, const lb_sink *sink, lb_loop_result *res)
{
    memset(res, 0, sizeof *res);
    lb_run_state r;
    lb_run_state_init(&r, o, sink, res);
    lb_model m;
    int ready = 0, configured_tokens = 0;
    lb_traj traj;
    memset(&traj, 0, sizeof traj);
    char err[1024] = "";
    int64_t t_start = lb_now_ms();
    cJSON *messages = cJSON_CreateArray();
    char *prompt = lb_utf8_sanitize(o->prompt, strlen(o->prompt), NULL);

    if (o->timeout_s > 0)
        alarm((unsigned)o->timeout_s);
    lb_run_emit_status(&r, lb_task_status_name(LB_TASK_RUNNING), NULL);
    if (!messages || !prompt) {
        lb_run_final(&r, LB_TASK_FAILED, "out of memory");
        goto end;
    }
    if (lb_model_init(&m, o->cfg, o->model_name, o->cancel, err, sizeof err) != LB_OK) {
        lb_run_final(&r, LB_TASK_FAILED, "%s", err);
        goto end;
    }
    ready = 1;
    if (o->run_opts && o->run_opts->max_tokens > 0)
        m.max_tokens = o->run_opts->max_tokens;
    if (o->run_opts)
        lb_model_apply_opts(&m, o->run_opts);
    m.tool_mode = LB_TOOL_MODE_NATIVE; /* no tools: text mode would add their description */
    lb_tokens_capture_set(&m, o->run_opts, &res->usage);
    if (o->trajectory_path) {
        cJSON *conf = llm_config(o, &m, 1);
        if (lb_traj_init(&traj, o->task_id, o->prompt, 1, m.shown_url, m.model, NULL, conf) != LB_OK)
            lb_traj_free(&traj); /* tried again at the end, which says why it cannot */
        cJSON_Delete(conf);
    }
    configured_tokens = m.max_tokens;
    cJSON *um = cJSON_CreateObject();
    cJSON_AddStringToObject(um, "role", "user");
    cJSON_AddStringToObject(um, "content", prompt);
    cJSON_AddItemToArray(messages, um);
    if (!lb_run_cancelled(&r))
        ask(&r, &m, messages, &traj);
end:
    lb_run_cancelled(&r);
    if (!r.final)
        lb_run_final(&r, LB_TASK_FAILED, "internal error");
    alarm(0);
    snprintf(res->usage.answer_source, sizeof res->usage.answer_source, "%s", res->answer ? "reply" : "none");
    if (res->answer) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "answer", res->answer);
        lb_run_emit(&r, "answer", d);
    }
    if (sink->usage)
        sink->usage(sink->arg, &res->usage);
    if (o->trajectory_path) {
        cJSON *conf = llm_config(o, &m, ready);
        int trc = traj.root ? LB_OK
                            : lb_traj_init(&traj, o->task_id, o->prompt, 1, ready ? m.shown_url : "",
                                           ready ? m.model : "", NULL, conf);
        cJSON_Delete(conf);
        /* a context-length retry lowered max_tokens: the record says so */
        cJSON *tm = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(traj.root, "config"), "model");
        if (tm && ready && m.max_tokens != configured_tokens) {
            cJSON_DeleteItemFromObjectCaseSensitive(tm, "max_tokens");
            if (configured_tokens > 0)
                cJSON_AddNumberToObject(tm, "max_tokens_configured", configured_tokens);
            cJSON_AddNumberToObject(tm, "max_tokens", m.max_tokens);
        }
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "started_ms", (double)t_start);
        cJSON_AddNumberToObject(t, "finished_ms", (double)lb_now_ms());
        cJSON_AddNumberToObject(t, "sandbox_start_ms", 0);
        cJSON_AddNumberToObject(t, "model_ms", (double)res->usage.model_ms);
        cJSON_AddNumberToObject(t, "tools_ms", 0);
        if (trc == LB_OK)
            trc = lb_traj_write(&traj, o->trajectory_path, messages, res->status, res->reason, res->answer,
                                &res->usage, t);
        else
            lb_warn("task %s: out of memory: no trajectory is written", o->task_id);
        if (trc == LB_OK && res->usage.tokens_capture) {
            int krc = lb_tokens_write_beside(o->trajectory_path, traj.turns);
            if (krc != LB_OK)
                lb_warn("task %s: tokens.jsonl is not written (%s); trajectory.json has the same tokens",
                        o->task_id, lb_strerror(krc));
        }
        if (trc == LB_E_NOSPACE && lb_task_status_parse(res->status) == LB_TASK_SUCCEEDED) {
            snprintf(res->status, sizeof res->status, "%s", lb_task_status_name(LB_TASK_FAILED));
            snprintf(res->reason, sizeof res->reason,
                     "disk full: the server has no space left for this task's record (trajectory.json)");
        }
        cJSON_Delete(t);
    }
    int rc = LB_OK;
    if (sink->finish)
        rc = sink->finish(sink->arg, res->status, res->reason[0] ? res->reason : NULL, res->answer);
    if (ready)
        lb_model_free(&m);
    lb_traj_free(&traj);
    cJSON_Delete(messages);
    free(prompt);
    return rc;
}
