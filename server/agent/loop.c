/* The agent loop: the paper's Algorithm 1, made robust.
 *
 *   messages = [system, instance]
 *   for turn in 1..max_turns:
 *       reply = model(messages, tools)
 *       no tool call  -> one corrective message; a second in a row fails
 *       each call, in order -> validate, run, observation (+ turns left)
 *       finish called -> stop
 *   answer.txt, outputs, trajectory.json
 *
 * The same code serves the web (events into the store) and the terminal
 * (events printed) through lb_sink. */
#include "agent/loop.h"

#include "agent/collect.h"
#include "agent/crash.h"
#include "agent/followup.h"
#include "agent/llm_run.h"
#include "agent/model_http.h"
#include "agent/obs_images.h"
#include "agent/plugin_host.h"
#include "agent/prompts.h"
#include "agent/run_state.h"
#include "agent/sink.h"
#include "agent/tokens.h"
#include "agent/tool_names.h"
#include "agent/toolcall_parse.h"
#include "agent/trajectory.h"
#include "agent/watchdog.h"
#include "common/blob_task.h" /* several nodes */
#include "common/config.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/netrecord.h"
#include "common/mime.h"
#include "common/status.h"
#include "common/task.h"
#include "common/task_opts.h"
#include "common/utf8.h"
#include "common/util.h"
#include "mcpclient/mcpc_hub.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SB_WORKDIR "/testbed"
#define SB_INPUT "/testbed/input"
#define SB_OUTPUT "/testbed/output"
#define SB_ANSWER "/testbed/output/answer.txt"
#define LB_ANSWER_MAX (1u << 20)
#define LB_ANSWER_FILE_MAX (64u << 10) /* answer_file: what is read of the layout's answer file */

/* ---- signals ------------------------------------------------------------ */

static volatile int *sig_cancel, *sig_sb, *sig_timeout;

static void on_signal(int sig)
{
    if (sig == SIGALRM && sig_timeout)
        *sig_timeout = 1;
    if (sig_cancel)
        *sig_cancel = 1;
    if (sig_sb)
        *sig_sb = 1;
}

void lb_agent_signals_install(volatile int *cancel, volatile int *sb_interrupt,
                              volatile int *timed_out)
{
    sig_cancel = cancel;
    sig_sb = sb_interrupt;
    sig_timeout = timed_out;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* no SA_RESTART: a blocking call returns EINTR and sees the flag */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGALRM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* ---- state of one run --------------------------------------------------- */

typedef struct run {
    lb_run_state st;            /* options, sink, result, whether the status is decided */
    lb_plugins *plugins;
    cJSON *tools;
    lb_model model;
    int model_ready;
    lbsb_conn *conn;
    char sb_id[64];
    llmbox_ctx *ctx;
    cJSON *messages;
    lb_traj traj;
    int64_t t_start;
    int64_t budget;             /* tokens; 0: none */
    int timeout_s;              /* wall clock of the task */
    /* accounting: the last reply's counts (-1: the endpoint gave none), the
     * bytes of observations sent after it, and its trajectory usage object,
     * completed with environment tokens once the next reply tells */
    int64_t last_prompt, last_completion;
    size_t obs_bytes;
    cJSON *last_usage;
    /* the call running now, for the watchdog's message */
    const lb_toolcall *cur_call;
    int cur_turn;
    /* the task's options and what follows from them */
    lb_task_opts opts;
    int official;               /* tools offered under the official names */
    lb_tool_words words;        /* the tool names the model is told */
    /* follow-ups: the sandbox is leased (kept after the round) with this key */
    int leased;
    char lease_key[40];
    lb_followup_sandbox how;
    int n_cut;                  /* earlier tool outputs cut to fit the conversation */
    int outputs_stored;         /* several nodes: -1 none collected, 0 not stored, 1 in the object store */
    /* MCP servers' tools (server/mcpclient/): the servers the task is
     * offered, started once the sandbox is (stdio ones run inside it) */
    char mcp_names[LB_CFG_MAX_MCP][LB_CFG_MCP_NAME];
    int n_mcp;
    lb_mcpc_hub *mcp;
    int mcp_calls;              /* numbers the images a result writes */
    lb_obs_images images;       /* their bytes, for a provider that takes them (model.images) */
} run;

/* The result's status (a name, as lb_loop_result carries it). */
static lb_task_status res_status(const run *r)
{
    return lb_task_status_parse(r->st.res->status);
}

static cJSON *msg(const char *role, const char *content)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", role);
    cJSON_AddStringToObject(m, "content", content);
    return m;
}

/* ---- setup -------------------------------------------------------------- */

static int build_prompts(run *r)
{
    const lb_config *cfg = r->st.o->cfg;
    char err[1200], turns[16], answer[LB_TASK_OPTS_DIR_MAX + 16];
    char *sys_t = NULL, *inst_t = NULL, *sys = NULL, *inst = NULL;
    int rc = lb_prompt_load(cfg->prompts_dir, "system.md", &sys_t, err, sizeof err);
    if (rc == LB_OK)
        rc = lb_prompt_load(cfg->prompts_dir, "instance.md", &inst_t, err, sizeof err);
    if (rc != LB_OK) {
        lb_run_final(&r->st, LB_TASK_FAILED, "%s", err);
        goto out;
    }
    snprintf(turns, sizeof turns, "%d", r->st.o->max_turns);
    char *problem = lb_utf8_sanitize(r->st.o->prompt, strlen(r->st.o->prompt), NULL);
    lb_prompt_var vars[] = {
        {"problem_statement", problem},
        {"working_dir", SB_WORKDIR},
        {"input_dir", lb_task_opts_input_dir(&r->opts)},
        {"output_dir", SB_OUTPUT},
        {"answer_file", lb_task_opts_answer_file(&r->opts, answer, sizeof answer)},
        {"max_turns", turns},
        {"bash_tool", r->words.bash},
        {"editor_tool", r->words.editor},
        {"finish_tool", r->words.finish},
    };
    size_t nv = sizeof vars / sizeof vars[0];
    /* a task's own system prompt (task option system_prompt) takes the template's place */
    if (r->opts.verbatim_prompts) {
        /* rendered already, the official runner's way (llmbox eval --benchmark) */
        sys = r->opts.system_prompt[0] ? strdup(r->opts.system_prompt) : lb_prompt_render(sys_t, vars, nv);
        inst = problem ? strdup(problem) : NULL;
    } else {
        sys = lb_prompt_render(r->opts.system_prompt[0] ? r->opts.system_prompt : sys_t, vars, nv);
        inst = lb_prompt_render(inst_t, vars, nv);
    }
    free(problem);
    if (!sys || !inst || !problem) {
        lb_run_final(&r->st, LB_TASK_FAILED, "out of memory while building the prompts");
        rc = LB_E_NOMEM;
        goto out;
    }
    cJSON_AddItemToArray(r->messages, msg("system", sys));
    cJSON_AddItemToArray(r->messages, msg("user", inst));
out:
    free(sys_t);
    free(inst_t);
    free(sys);
    free(inst);
    return rc;
}

/* The official runner's layout: sandboxd copies the inputs into
 * /testbed/input; they move to /testbed/documents (which then exists,
 * empty when there were none) before the model sees anything. */
static int official_layout(run *r)
{
    char err[512] = "";
    lbsb_exec_out out;
    memset(&out, 0, sizeof out);
    int rc = lbsb_exec(r->conn, r->sb_id, "mv -T " SB_INPUT " /testbed/documents", 60000, &out, err, sizeof err);
    if (rc == LB_OK && out.exit_code != 0) {
        rc = LB_E_SANDBOX;
        if (out.err && out.err_len)
            snprintf(err, sizeof err, "%.*s", (int)(out.err_len > 400 ? 400 : out.err_len), out.err);
        else
            snprintf(err, sizeof err, "mv ended with status %d", out.exit_code);
    }
    lbsb_exec_out_free(&out);
    if (rc != LB_OK && !lb_run_cancelled(&r->st))
        lb_run_final(&r->st, LB_TASK_FAILED, "The input files could not be moved to /testbed/documents (layout official): %s",
                  err);
    return rc;
}

/* Task option input_dir: sandboxd copies the inputs into /testbed/input;
 * they move to the task's input folder (which then exists, empty when there
 * were none) before the model sees anything. The folder may exist already
 * (/testbed, /tmp): its content stays. */
static int input_dir_layout(run *r)
{
    char err[512] = "", cmd[3 * LB_TASK_OPTS_DIR_MAX + 128];
    const char *d = r->opts.input_dir; /* checked: [A-Za-z0-9._/-] only, not inside /testbed/input */
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp -a " SB_INPUT "/. %s/ && rm -rf " SB_INPUT, d, d);
    lbsb_exec_out out;
    memset(&out, 0, sizeof out);
    int rc = lbsb_exec(r->conn, r->sb_id, cmd, 60000, &out, err, sizeof err);
    if (rc == LB_OK && out.exit_code != 0) {
        rc = LB_E_SANDBOX;
        snprintf(err, sizeof err, "%.*s", (int)(out.err_len > 400 ? 400 : out.err_len), out.err ? out.err : "");
    }
    lbsb_exec_out_free(&out);
    if (rc != LB_OK && !lb_run_cancelled(&r->st))
        lb_run_final(&r->st, LB_TASK_FAILED, "The input files could not be moved to %s (task option input_dir): %s", d, err);
    return rc;
}

/* The lease of a sandbox while a round uses it: the round's own time
 * limit and the way out after it (outputs, the recorded end), so that it
 * never runs out under a running round; kept after it for keep_s. */
static int round_lease_s(const run *r)
{
    int64_t s = (int64_t)r->timeout_s + r->st.o->cfg->task_deadline_grace_s + 60;
    return s > 86400 ? 86400 : (int)s;
}

/* A later round's sandbox, adopted or restored: the round's new inputs
 * beside the earlier ones, and the last round's answer.txt removed (this
 * round's answer must be its own). */
static int prepare_round(run *r, char *err, size_t errsz)
{
    size_t n = 0;
    int rc = lb_followup_copy_inputs(r->conn, r->sb_id, r->st.o->input_dir, r->st.o->round_inputs,
                                     lb_task_opts_input_dir(&r->opts), &n, err, errsz);
    lbsb_exec_out out;
    memset(&out, 0, sizeof out);
    if (rc == LB_OK)
        rc = lbsb_exec(r->conn, r->sb_id, "rm -f " SB_ANSWER, 30000, &out, err, errsz);
    lbsb_exec_out_free(&out);
    return rc;
}

/* Creates the round's sandbox from spec (with a lease when the task keeps
 * its sandbox between rounds: r->lease_key gets its key). */
static int create_sandbox(run *r, lbsb_spec *spec, char *err, size_t errsz)
{
    const lb_config *cfg = r->st.o->cfg;
    const lb_loop_opts *o = r->st.o;
    spec->image = o->image && *o->image ? o->image : cfg->default_image;
    spec->network = o->network && *o->network ? o->network : NULL;
    spec->memory_mib = cfg->sandbox_memory_mib;
    spec->pids = cfg->sandbox_pids;
    spec->lease_s = o->keep_s > 0 ? round_lease_s(r) : 0;
    int rc = spec->lease_s ? lbsb_create_leased(r->conn, spec, r->sb_id, sizeof r->sb_id, r->lease_key,
                                                sizeof r->lease_key, err, errsz)
                           : lbsb_create(r->conn, spec, r->sb_id, sizeof r->sb_id, err, errsz);
    if (rc != LB_OK)
        r->sb_id[0] = '\0';
    r->leased = rc == LB_OK && spec->lease_s > 0;
    if (rc == LB_OK && spec->network && spec->network[0] == '{')
        lb_netrecord_note_task(cfg, o->task_id, r->sb_id);
    return rc;
}

/* A later round: adopts the last round's sandbox (kept: everything as it
 * was), copying the round's new inputs in. LB_OK when adopted;
 * LB_E_NOTFOUND when it is gone (its keep time passed, the machine
 * restarted) or was not kept. A fresh=1 round destroys the old one. */
static int adopt_kept(run *r, char *err, size_t errsz)
{
    const lb_loop_opts *o = r->st.o;
    if (!o->kept_id || !*o->kept_id || !o->kept_key)
        return LB_E_NOTFOUND;
    int rc = lbsb_adopt(r->conn, o->kept_id, o->kept_key, round_lease_s(r), err, errsz);
    if (rc != LB_OK)
        return rc == LB_E_CANCELLED ? rc : LB_E_NOTFOUND;
    snprintf(r->sb_id, sizeof r->sb_id, "%s", o->kept_id);
    if (o->fresh) {
        /* its memory is not held for a sandbox nobody will use again */
        LB_IGNORE(lbsb_destroy(r->conn, r->sb_id, err, errsz)); /* the lease runs out otherwise */
        r->sb_id[0] = '\0';
        return LB_E_NOTFOUND;
    }
    r->leased = 1;
    snprintf(r->lease_key, sizeof r->lease_key, "%s", o->kept_key);
    r->how = LB_FOLLOWUP_KEPT;
    /* kept frozen between rounds: no CPU while nobody talks to it */
    rc = lbsb_thaw(r->conn, r->sb_id, err, errsz);
    return rc == LB_OK ? prepare_round(r, err, errsz) : rc;
}

/* A later round whose kept sandbox is gone: a new one from the state
 * saved at the end of the last round. LB_OK; LB_E_NOTFOUND (no such
 * state: not saved, or removed by its age limit) or LB_E_INVAL (damaged),
 * err saying why; else the sandbox's error. */
static int restore_state(run *r, char *err, size_t errsz)
{
    lbsb_spec spec = {.restore = r->st.o->restore_state};
    int rc = create_sandbox(r, &spec, err, errsz);
    if (rc != LB_OK)
        return rc;
    r->how = LB_FOLLOWUP_RESTORED;
    return prepare_round(r, err, errsz) == LB_OK ? LB_OK : LB_E_SANDBOX;
}

/* A fresh sandbox of a later round gets the last round's outputs. */
static int fresh_outputs(run *r, char *err, size_t errsz)
{
    const lb_config *cfg = r->st.o->cfg;
    size_t copied = 0, skipped = 0;
    int rc = lb_followup_copy_tree(r->conn, r->sb_id, r->st.o->output_dir, SB_OUTPUT,
                                   cfg->max_output_files > 0 ? (size_t)cfg->max_output_files : 10000,
                                   cfg->max_output_bytes ? cfg->max_output_bytes : (1024ull << 20), &copied,
                                   &skipped, err, errsz);
    lbsb_exec_out out;
    memset(&out, 0, sizeof out);
    if (rc == LB_OK)
        rc = lbsb_exec(r->conn, r->sb_id, "rm -f " SB_ANSWER, 30000, &out, err, errsz);
    lbsb_exec_out_free(&out);
    if (rc == LB_OK && skipped) {
        char note[200];
        snprintf(note, sizeof note, "%zu file%s of the last round's outputs were not copied into the fresh "
                 "sandbox (symlinks, special files, or over the output caps).", skipped, skipped == 1 ? "" : "s");
        lb_run_emit_error(&r->st, note);
    }
    return rc;
}

static int start_sandbox(run *r)
{
    const lb_config *cfg = r->st.o->cfg;
    const lb_loop_opts *o = r->st.o;
    int round = o->round > 1 ? o->round : 1;
    char err[1024] = "";
    int64_t t0 = lb_mono_ms();
    int rc = lbsb_connect(cfg->sandboxd_socket, o->sb_interrupt, &r->conn, err, sizeof err);
    int adopted = 0;
    if (rc == LB_OK && round > 1 && o->moved_note)
        lb_run_emit_error(&r->st, o->moved_note); /* several nodes: where the earlier computer was, and that it is lost */
    if (rc == LB_OK && round > 1) {
        rc = adopt_kept(r, err, sizeof err);
        if (rc == LB_E_NOTFOUND && !o->fresh && o->restore_state && *o->restore_state)
            rc = restore_state(r, err, sizeof err);
        if ((rc == LB_E_NOTFOUND || rc == LB_E_INVAL) && !o->fresh) {
            /* the answer of the round says so, and what to do */
            r->st.res->usage.sandbox_ms = lb_mono_ms() - t0;
            int damaged = rc == LB_E_INVAL;
            lb_run_final(&r->st, LB_TASK_FAILED, damaged ? "the saved state of the earlier rounds is damaged: %s"
                                                 : "the sandbox of the earlier rounds is gone, and no saved state "
                                                   "of it exists%s", damaged ? err : "");
            free(r->st.res->answer);
            char text[1400];
            snprintf(text, sizeof text,
                     "%s, so files, installed packages and the shell's state cannot be restored. Send your "
                     "message again with fresh=1 (\"Continue in a fresh sandbox\") to go on in a fresh sandbox "
                     "with the files only: the input files and the last round's outputs.",
                     damaged ? "The saved state of the earlier rounds is damaged"
                             : "The sandbox of the earlier rounds is gone (it is kept only a while after a round, "
                               "followup_keep_s) and no saved state of it exists (it was not saved, was over its "
                               "cap, or was removed by its age limit)");
            r->st.res->answer = strdup(text);
            return LB_E_NOTFOUND;
        }
        adopted = rc == LB_OK;
        if (rc == LB_E_NOTFOUND)
            rc = LB_OK;
    }
    if (rc == LB_OK && !adopted) {
        lbsb_spec spec = {.input_dir = o->input_dir};
        rc = create_sandbox(r, &spec, err, sizeof err);
        r->how = round > 1 ? LB_FOLLOWUP_FRESH : LB_FOLLOWUP_NEW;
        if (rc == LB_OK && o->sandbox_made)
            o->sandbox_made(o->sandbox_arg, r->sb_id, r->leased ? r->lease_key : "",
                            lb_followup_sandbox_name(r->how));
        if (rc == LB_OK && round > 1)
            rc = fresh_outputs(r, err, sizeof err);
    } else if (adopted && o->sandbox_made) {
        /* kept, or restored from the last round's state */
        o->sandbox_made(o->sandbox_arg, r->sb_id, r->leased ? r->lease_key : "", lb_followup_sandbox_name(r->how));
    }
    r->st.res->usage.sandbox_ms = lb_mono_ms() - t0;
    if (rc != LB_OK) {
        if (!lb_run_cancelled(&r->st))
            lb_run_final(&r->st, LB_TASK_FAILED, "The sandbox could not be started: %s", err);
        return rc;
    }
    lb_debug("sandbox %s ready in %lld ms", r->sb_id, (long long)r->st.res->usage.sandbox_ms);
    lb_metrics_observe(lb_metrics_proc(), &lb_hist_sandbox_start, "", (double)r->st.res->usage.sandbox_ms / 1000.0);
    int tmo = cfg->cmd_timeout_s > 0 ? cfg->cmd_timeout_s * 1000 : 120000;
    int soft = cfg->bash_soft_timeout_s > 0 ? cfg->bash_soft_timeout_s * 1000 : 0;
    r->ctx = lb_ctx_new(r->conn, r->sb_id, r->st.o->cancel, tmo, soft);
    if (!r->ctx) {
        lb_run_final(&r->st, LB_TASK_FAILED, "out of memory");
        return LB_E_NOMEM;
    }
    if (r->opts.input_dir[0] && r->how != LB_FOLLOWUP_KEPT)
        return strcmp(r->opts.input_dir, SB_INPUT) ? input_dir_layout(r) : LB_OK;
    return r->opts.layout == LB_LAYOUT_OFFICIAL && r->how != LB_FOLLOWUP_KEPT ? official_layout(r) : LB_OK;
}

/* A later round's conversation: the earlier rounds' messages, made to fit
 * (lb_followup_fit). 0 when there is none to continue (then the round
 * starts from its own prompt, as a task does). */
static int take_history(run *r)
{
    if (r->st.o->round <= 1 || !cJSON_GetArraySize(r->st.o->history))
        return 0;
    cJSON *h = cJSON_Duplicate(r->st.o->history, 1);
    if (!h)
        return 0;
    r->n_cut = lb_followup_fit(h, r->budget);
    cJSON_Delete(r->messages);
    r->messages = h;
    return 1;
}

/* The message that opens a later round, once its sandbox is known. */
static int add_opening(run *r)
{
    char *text = lb_followup_opening(r->st.o->round, r->st.o->prompt, r->st.o->round_inputs, r->how, r->n_cut,
                                     r->st.o->max_turns, r->words.finish);
    if (text && r->st.o->moved_note) {
        /* several nodes: the model is told too, before what the fresh sandbox holds */
        size_t a = strlen(text), b = strlen(r->st.o->moved_note);
        char *both = malloc(a + b + 2);
        if (both) {
            memcpy(both, text, a);
            both[a] = '\n';
            memcpy(both + a + 1, r->st.o->moved_note, b + 1);
        }
        free(text);
        text = both;
    }
    char *clean = text ? lb_utf8_sanitize(text, strlen(text), NULL) : NULL;
    free(text);
    if (!clean) {
        lb_run_final(&r->st, LB_TASK_FAILED, "out of memory while building the prompts");
        return LB_E_NOMEM;
    }
    cJSON_AddItemToArray(r->messages, msg("user", clean));
    free(clean);
    return LB_OK;
}

/* ---- one turn ----------------------------------------------------------- */

/* "[N turns left]", and the tokens left once a quarter of the budget or
 * less remains (the paper's models are told the turns; the budget is
 * told when it starts to matter). */
static void turns_left_note(const run *r, char *buf, size_t sz, int left)
{
    char tokens[80] = "";
    int64_t used = r->st.res->usage.context_tokens;
    if (r->budget > 0 && used > 0 && r->budget - used <= r->budget / 4) {
        int64_t t = r->budget - used > 0 ? r->budget - used : 0;
        snprintf(tokens, sizeof tokens, "; about %lld tokens of context left", (long long)t);
    }
    if (left <= 0)
        snprintf(buf, sz, "\n\n[no turns left%s]", tokens);
    else if (left == 1)
        snprintf(buf, sz, "\n\n[1 turn left%s: save your results and call %s now]", tokens, r->words.finish);
    else
        snprintf(buf, sz, "\n\n[%d turns left%s]", left, tokens);
}

static void add_tool_message(run *r, const char *call_id, const char *content, int left)
{
    char note[160];
    turns_left_note(r, note, sizeof note, left);
    size_t cl = strlen(content), nl = strlen(note);
    char *full = malloc(cl + nl + 1);
    if (full) {
        memcpy(full, content, cl);
        memcpy(full + cl, note, nl + 1);
    }
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "tool");
    cJSON_AddStringToObject(m, "tool_call_id", call_id);
    cJSON_AddStringToObject(m, "content", full ? full : content);
    cJSON_AddItemToArray(r->messages, m);
    r->obs_bytes += cl + nl;
    free(full);
}

/* One call of an MCP server's tool (mcpclient/mcpc_hub.h): the same
 * event, trajectory result and tool message as a plugin's, each with the
 * server's name ("mcp_server"). LB_OK unless out of memory. */
static int run_mcp_call(run *r, int turn, const lb_toolcall *c, cJSON *results, int left)
{
    lb_mcpc_outcome oc;
    int rc = lb_mcpc_hub_call(r->mcp, c->name, c->arguments, strlen(c->arguments), ++r->mcp_calls, &oc);
    if (rc != LB_OK) {
        lb_mcpc_outcome_free(&oc);
        return rc;
    }
    r->st.res->usage.tools_ms += oc.duration_ms;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddNumberToObject(d, "turn", turn);
    cJSON_AddStringToObject(d, "call_id", c->id);
    cJSON_AddStringToObject(d, "name", c->name);
    cJSON_AddStringToObject(d, "arguments", c->arguments);
    cJSON_AddStringToObject(d, "status", oc.status);
    cJSON_AddStringToObject(d, "mcp_server", oc.server);
    cJSON_AddStringToObject(d, "mcp_tool", oc.tool);
    if (oc.text)
        cJSON_AddStringToObject(d, "text", oc.text);
    cJSON_AddNumberToObject(d, "duration_ms", (double)oc.duration_ms);
    lb_run_emit(&r->st, "tool", d);

    cJSON *tr = cJSON_CreateObject();
    cJSON_AddStringToObject(tr, "call_id", c->id);
    cJSON_AddStringToObject(tr, "name", c->name);
    cJSON_AddStringToObject(tr, "status", oc.status);
    cJSON_AddStringToObject(tr, "mcp_server", oc.server);
    cJSON_AddStringToObject(tr, "mcp_tool", oc.tool);
    cJSON_AddNumberToObject(tr, "duration_ms", (double)oc.duration_ms);
    cJSON_AddItemToArray(results, tr);

    add_tool_message(r, c->id, oc.observation ? oc.observation : "", left);
    /* Anthropic's tool results take images: the message names them (the
     * trajectory keeps that), the store holds the bytes sent. OpenAI's
     * tool messages take text only: there the text names the files. */
    cJSON *tm = cJSON_GetArrayItem(r->messages, cJSON_GetArraySize(r->messages) - 1);
    cJSON *ims = oc.n_images && r->model.provider == LB_PROVIDER_ANTHROPIC && tm ? cJSON_AddArrayToObject(tm, "images")
                                                                                  : NULL;
    for (int i = 0; ims && i < oc.n_images; i++) {
        cJSON *ref = cJSON_CreateObject();
        if (!ref || !cJSON_AddItemToArray(ims, ref)) {
            cJSON_Delete(ref);
            break;
        }
        cJSON_AddStringToObject(ref, "path", oc.images[i].path);
        cJSON_AddStringToObject(ref, "media_type", oc.images[i].media_type);
        /* one the store cannot take is named in the text still */
        LB_IGNORE(lb_obs_images_add(&r->images, oc.images[i].path, oc.images[i].media_type, oc.images[i].b64));
    }
    lb_mcpc_outcome_free(&oc);
    return LB_OK;
}

/* Starts the task's MCP servers once its sandbox is up, and offers their
 * tools beside the plugins' (also in the trajectory's tools). A server
 * left out is said on the task; the task goes on without it. */
static int start_mcp(run *r)
{
    if (!r->n_mcp)
        return LB_OK;
    cJSON *notes = cJSON_CreateArray();
    int rc = notes ? lb_mcpc_hub_start(r->st.o->cfg, (const char (*)[LB_CFG_MCP_NAME])r->mcp_names, r->n_mcp,
                                       r->st.o->cfg->sandboxd_socket, r->conn, r->sb_id, r->st.o->sb_interrupt,
                                       &r->mcp, notes)
                   : LB_E_NOMEM;
    const cJSON *n;
    cJSON_ArrayForEach(n, notes)
        lb_run_emit_error(&r->st, n->valuestring);
    cJSON_Delete(notes);
    if (rc != LB_OK) {
        lb_run_final(&r->st, LB_TASK_FAILED, "out of memory while starting the MCP servers");
        return rc;
    }
    lb_mcpc_hub_offer(r->mcp, r->tools);
    if (r->traj.root) {
        cJSON_ReplaceItemInObjectCaseSensitive(r->traj.root, "tools", cJSON_Duplicate(r->tools, 1));
        /* the run's configuration names the servers asked for and the tools offered (no URL, no header) */
        cJSON *conf = cJSON_GetObjectItemCaseSensitive(r->traj.root, "config");
        cJSON *names = cJSON_GetObjectItemCaseSensitive(conf, "tools");
        cJSON *servers = conf ? cJSON_AddArrayToObject(conf, "mcp") : NULL;
        for (int i = 0; servers && i < r->n_mcp; i++)
            cJSON_AddItemToArray(servers, cJSON_CreateString(r->mcp_names[i]));
        const cJSON *t, *each = cJSON_IsArray(names) ? r->tools : NULL;
        cJSON_ArrayForEach(t, each)
        {
            const char *tn = cJSON_GetStringValue(
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "function"), "name"));
            if (tn && lb_mcpc_hub_server_of(r->mcp, tn))
                cJSON_AddItemToArray(names, cJSON_CreateString(tn));
        }
    }
    return LB_OK;
}

/* Runs the calls of one reply in order. Returns nonzero when the loop
 * must stop (finish, cancel, sandbox lost). */
static int run_calls(run *r, int turn, const lb_model_reply *rep, cJSON *tturn)
{
    int left = r->st.o->max_turns - turn;
    cJSON *results = cJSON_AddArrayToObject(tturn, "tool_results");
    for (size_t i = 0; i < rep->n_calls; i++) {
        const lb_toolcall *c = &rep->calls[i];
        if (lb_ctx_finished(r->ctx, NULL, NULL) || lb_run_cancelled(&r->st)) {
            /* every call needs an answer for the conversation to stay valid */
            add_tool_message(r, c->id, lb_ctx_finished(r->ctx, NULL, NULL)
                                           ? "Not run: finish was called earlier in this reply."
                                           : "Not run: the task was cancelled.", left);
            continue;
        }
        if (lb_mcpc_hub_server_of(r->mcp, c->name)) {
            if (run_mcp_call(r, turn, c, results, left) != LB_OK) {
                lb_run_final(&r->st, LB_TASK_FAILED, "out of memory while running a tool");
                return 1;
            }
            continue;
        }
        lb_tool_outcome oc;
        r->cur_call = c;
        r->cur_turn = turn;
        int rc = lb_tool_run(r->plugins, r->ctx, c->name, c->arguments, strlen(c->arguments), &oc);
        r->cur_call = NULL;
        if (rc != LB_OK) {
            lb_tool_outcome_free(&oc);
            lb_run_final(&r->st, LB_TASK_FAILED, "out of memory while running a tool");
            return 1;
        }
        r->st.res->usage.tools_ms += oc.duration_ms;
        {
            /* the label is a loaded tool's name, never what the model made up */
            char labels[LB_METRIC_LABELS_MAX] = "";
            const lb_tool_entry *te = lb_plugins_find(r->plugins, c->name);
            const char *tool = te ? te->tool->name : "unknown";
            LB_IGNORE(lb_metrics_label(labels, sizeof labels, "tool", tool)); /* bounded names fit; one that does not is left out */
            lb_metrics_observe(lb_metrics_proc(), &lb_hist_tool, labels, (double)oc.duration_ms / 1000.0);
        }
        cJSON *d = cJSON_CreateObject();
        cJSON_AddNumberToObject(d, "turn", turn);
        cJSON_AddStringToObject(d, "call_id", c->id);
        cJSON_AddStringToObject(d, "name", c->name);
        cJSON_AddStringToObject(d, "arguments", c->arguments);
        cJSON_AddStringToObject(d, "status", oc.status);
        if (oc.has_exit_code)
            cJSON_AddNumberToObject(d, "exit_code", oc.exit_code);
        if (oc.out)
            cJSON_AddStringToObject(d, "stdout", oc.out);
        if (oc.err)
            cJSON_AddStringToObject(d, "stderr", oc.err);
        if (oc.text)
            cJSON_AddStringToObject(d, "text", oc.text);
        cJSON_AddNumberToObject(d, "duration_ms", (double)oc.duration_ms);
        lb_run_emit(&r->st, "tool", d);

        cJSON *tr = cJSON_CreateObject();
        cJSON_AddStringToObject(tr, "call_id", c->id);
        cJSON_AddStringToObject(tr, "name", c->name);
        cJSON_AddStringToObject(tr, "status", oc.status);
        if (oc.has_exit_code)
            cJSON_AddNumberToObject(tr, "exit_code", oc.exit_code);
        cJSON_AddNumberToObject(tr, "duration_ms", (double)oc.duration_ms);
        cJSON_AddItemToArray(results, tr);

        add_tool_message(r, c->id, oc.observation ? oc.observation : "", left);
        lb_tool_outcome_free(&oc);

        const char *why;
        if (lb_ctx_sandbox_lost(r->ctx, &why) && !lb_run_cancelled(&r->st)) {
            lb_run_final(&r->st, LB_TASK_FAILED, "The sandbox stopped working: %s", why);
            return 1;
        }
    }
    if (lb_ctx_finished(r->ctx, NULL, NULL)) {
        if (!lb_run_cancelled(&r->st))
            lb_run_final(&r->st, LB_TASK_SUCCEEDED, NULL);
        return 1;
    }
    return lb_run_cancelled(&r->st);
}

/* Counts one reply: its tokens (the endpoint's), the environment tokens
 * of the observations sent since the previous reply (the growth of the
 * prompt beyond that reply, when the endpoint counts; else bytes / 4),
 * and the context it used (estimated from the request when uncounted). */
static void add_usage(run *r, const lb_model_reply *rep, cJSON *tusage)
{
    lb_task_usage *u = &r->st.res->usage;
    int64_t P = rep->prompt_tokens, C = rep->completion_tokens;
    if (P > 0)
        u->prompt_tokens += P;
    if (C > 0)
        u->completion_tokens += C;
    if (r->last_usage) {
        int64_t env = -1;
        if (P >= 0 && r->last_prompt >= 0 && r->last_completion >= 0)
            env = P - r->last_prompt - r->last_completion;
        int est = env < 0;
        if (est)
            env = (int64_t)(r->obs_bytes + 3) / 4;
        u->environment_tokens += env;
        u->environment_estimated |= est;
        cJSON_AddNumberToObject(r->last_usage, "environment_tokens", (double)env);
        cJSON_AddBoolToObject(r->last_usage, "environment_estimated", est);
    }
    int64_t ctx = (P >= 0 ? P : (int64_t)(r->model.last_request_bytes / 4)) + (C > 0 ? C : 0);
    u->context_tokens = ctx;
    r->st.res->prompt_tokens = u->prompt_tokens;
    r->st.res->completion_tokens = u->completion_tokens;
    r->last_prompt = P;
    r->last_completion = C;
    r->last_usage = tusage;
    r->obs_bytes = 0;
}

/* The observations after the last reply: no next prompt counts them. */
static void close_usage(run *r)
{
    lb_task_usage *u = &r->st.res->usage;
    if (r->last_usage && r->obs_bytes) {
        int64_t env = (int64_t)(r->obs_bytes + 3) / 4;
        u->environment_tokens += env;
        u->environment_estimated = 1;
        cJSON_AddNumberToObject(r->last_usage, "environment_tokens", (double)env);
        cJSON_AddBoolToObject(r->last_usage, "environment_estimated", 1);
    }
    r->last_usage = NULL;
    r->obs_bytes = 0;
}

static void loop(run *r)
{
    int no_tool = 0;
    for (int turn = 1; turn <= r->st.o->max_turns; turn++) {
        if (lb_run_cancelled(&r->st))
            return;
        lb_model_reply rep;
        char err[1024] = "";
        int64_t t0 = lb_mono_ms();
        int rc = lb_model_chat(&r->model, r->messages, r->tools, &rep, err, sizeof err);
        int64_t dt = lb_mono_ms() - t0;
        r->st.res->usage.model_ms += dt;
        if (rc != LB_OK) {
            /* a refused key, a context that no longer fits, an endpoint
             * that stays down: each ends the task with the sentence */
            if (!lb_run_cancelled(&r->st)) {
                lb_run_emit_error(&r->st, err);
                lb_run_final(&r->st, LB_TASK_FAILED, "%s", err);
            }
            return;
        }
        r->st.res->turns = turn;
        r->st.res->usage.turns = turn;
        {
            char labels[LB_METRIC_LABELS_MAX] = "";
            LB_IGNORE(lb_metrics_label(labels, sizeof labels, "model", r->model.name)); /* bounded names fit; one that does not is left out */
            lb_metrics_observe(lb_metrics_proc(), &lb_hist_model_turn, labels, (double)dt / 1000.0);
        }
        /* ids are how observations find their call: make them present and unique */
        for (size_t i = 0; i < rep.n_calls; i++) {
            char id[64];
            /* unique across the rounds of a conversation too */
            if (r->st.o->round > 1)
                snprintf(id, sizeof id, "call_r%d_%d_%zu", r->st.o->round, turn, i);
            else
                snprintf(id, sizeof id, "call_%d_%zu", turn, i);
            int dup = 0;
            for (size_t k = 0; k < i && rep.calls[i].id; k++)
                dup |= rep.calls[k].id && !strcmp(rep.calls[k].id, rep.calls[i].id);
            if (!rep.calls[i].id || dup) {
                free(rep.calls[i].id);
                rep.calls[i].id = strdup(id);
            }
        }

        /* the event, the trajectory turn, and the assistant message */
        cJSON *d = cJSON_CreateObject();
        cJSON_AddNumberToObject(d, "turn", turn);
        cJSON_AddStringToObject(d, "content", rep.content ? rep.content : "");
        if (rep.reasoning)
            cJSON_AddStringToObject(d, "reasoning", rep.reasoning);
        cJSON *calls = cJSON_AddArrayToObject(d, "tool_calls");
        cJSON *am = cJSON_CreateObject();
        cJSON_AddStringToObject(am, "role", "assistant");
        if (rep.content)
            cJSON_AddStringToObject(am, "content", rep.content);
        else
            cJSON_AddNullToObject(am, "content");
        cJSON *amcalls = rep.n_calls ? cJSON_AddArrayToObject(am, "tool_calls") : NULL;
        for (size_t i = 0; i < rep.n_calls; i++) {
            const lb_toolcall *c = &rep.calls[i];
            if (!c->id)
                continue;
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "id", c->id);
            cJSON_AddStringToObject(e, "name", c->name);
            cJSON_AddStringToObject(e, "arguments", c->arguments);
            cJSON_AddItemToArray(calls, e);
            cJSON *tc = cJSON_CreateObject();
            cJSON_AddStringToObject(tc, "id", c->id);
            cJSON_AddStringToObject(tc, "type", "function");
            cJSON *fn = cJSON_AddObjectToObject(tc, "function");
            cJSON_AddStringToObject(fn, "name", c->name);
            cJSON_AddStringToObject(fn, "arguments", c->arguments);
            cJSON_AddItemToArray(amcalls, tc);
        }
        cJSON *u = cJSON_AddObjectToObject(d, "usage");
        cJSON_AddNumberToObject(u, "prompt_tokens", (double)(rep.prompt_tokens < 0 ? 0 : rep.prompt_tokens));
        cJSON_AddNumberToObject(u, "completion_tokens",
                                (double)(rep.completion_tokens < 0 ? 0 : rep.completion_tokens));
        if (rep.prompt_tokens < 0 || rep.completion_tokens < 0)
            cJSON_AddBoolToObject(u, "reported", 0); /* the endpoint gave no counts */
        cJSON_AddNumberToObject(d, "duration_ms", (double)dt);

        cJSON *tturn = lb_traj_turn(&r->traj, turn);
        cJSON *tusage = NULL;
        if (tturn) {
            cJSON_AddNumberToObject(tturn, "model_ms", (double)dt);
            if (rep.reasoning)
                cJSON_AddStringToObject(tturn, "reasoning", rep.reasoning);
            else
                cJSON_AddNullToObject(tturn, "reasoning");
            if (rep.finish_reason)
                cJSON_AddStringToObject(tturn, "finish_reason", rep.finish_reason);
            tusage = cJSON_Duplicate(u, 1);
            cJSON_AddItemToObject(tturn, "usage", tusage);
        }
        if (r->model.capture_tokens) {
            /* the arrays go to the trajectory only: the event carries the
             * verdict, so a long run never makes the page slow */
            lb_task_usage *tu = &r->st.res->usage;
            if (lb_tokens_record(rep.tokens, lb_tokens_why_none(&r->model), tturn, &tu->tokens_turns,
                                 &tu->tokens_ok) != LB_OK)
                lb_warn("task %s: out of memory: turn %d's tokens are not recorded", r->st.o->task_id, turn);
            cJSON_AddStringToObject(d, "tokens_status",
                                    lb_tokens_status_name(rep.tokens ? rep.tokens->status : LB_TOKENS_MISSING));
        }
        add_usage(r, &rep, tusage);
        lb_run_emit(&r->st, "model", d);
        /* Anthropic's thinking blocks must go back verbatim with the tool
         * results (model_anthropic.c); the name follows LiteLLM's */
        if (rep.blocks) {
            cJSON_AddItemToObject(am, "thinking_blocks", rep.blocks);
            rep.blocks = NULL;
        }
        cJSON_AddItemToArray(r->messages, am);
        if (r->st.sink->usage)
            r->st.sink->usage(r->st.sink->arg, &r->st.res->usage);

        int stop = 0;
        /* the paper's budget: the whole trajectory's context, i.e. the last
         * request's prompt plus its completion */
        int64_t context = r->st.res->usage.context_tokens;
        if (r->budget > 0 && context > r->budget) {
            char msg[300];
            snprintf(msg, sizeof msg, "The task reached its token budget: turn %d used %lld tokens of context, "
                     "the budget is %lld.", turn, (long long)context, (long long)r->budget);
            lb_run_emit_error(&r->st, msg);
            lb_run_final(&r->st, LB_TASK_FAILED, "reached the token budget (%lld tokens; the last turn used %lld)",
                      (long long)r->budget, (long long)context);
            stop = 1;
        } else if (rep.n_calls == 0) {
            if (++no_tool >= 2) {
                lb_run_emit_error(&r->st, "The model replied twice in a row without calling a tool.");
                lb_run_final(&r->st, LB_TASK_FAILED, "the model replied twice in a row without calling a tool");
                stop = 1;
            } else {
                char note[160], text[600];
                turns_left_note(r, note, sizeof note, r->st.o->max_turns - turn);
                snprintf(text, sizeof text,
                         "You must call a tool in every reply: use %s or %s to work on "
                         "the task, and call %s when you are done.%s", r->words.bash, r->words.editor,
                         r->words.finish, note);
                cJSON_AddItemToArray(r->messages, msg("user", text));
                r->obs_bytes += strlen(text);
            }
        } else {
            no_tool = 0;
            /* without a trajectory turn (out of memory) results go to a scratch object */
            cJSON *scratch = tturn ? NULL : cJSON_CreateObject();
            stop = run_calls(r, turn, &rep, tturn ? tturn : scratch);
            cJSON_Delete(scratch);
        }
        lb_model_reply_free(&rep);
        if (stop)
            return;
    }
    lb_run_final(&r->st, LB_TASK_FAILED, "reached the turn limit (%d)", r->st.o->max_turns);
}

/* What the run used, for trajectory.json: the model and its sampling,
 * the image, the limits and the tools offered. No key, no credentials. */
static cJSON *run_config(const run *r)
{
    const lb_config *cfg = r->st.o->cfg;
    cJSON *c = cJSON_CreateObject();
    if (!c)
        return NULL;
    cJSON *m = cJSON_AddObjectToObject(c, "model");
    const lb_model_cfg *mc = r->model_ready ? r->model.cfg : lb_cfg_model(cfg, r->st.o->model_name);
    if (m && mc) {
        cJSON_AddStringToObject(m, "name", mc->name);
        cJSON_AddStringToObject(m, "provider", mc->provider);
        cJSON_AddStringToObject(m, "model", mc->model);
        if (r->model_ready)
            cJSON_AddStringToObject(m, "url", r->model.shown_url);
        cJSON_AddStringToObject(m, "tool_mode", mc->tool_mode == LB_CFG_TOOLS_TEXT ? "text" : "native");
        /* what is sent: the model's settings, or the task's own */
        double temp = r->model_ready ? r->model.temperature : mc->temperature;
        double top_p = r->model_ready ? r->model.top_p : mc->top_p;
        int top_k = r->model_ready ? r->model.top_k : mc->top_k;
        if (!isnan(temp))
            cJSON_AddNumberToObject(m, "temperature", temp);
        if (!isnan(top_p))
            cJSON_AddNumberToObject(m, "top_p", top_p);
        if (top_k >= 0)
            cJSON_AddNumberToObject(m, "top_k", top_k);
        if (!isnan(mc->min_p))
            cJSON_AddNumberToObject(m, "min_p", mc->min_p);
        if (!isnan(mc->repetition_penalty))
            cJSON_AddNumberToObject(m, "repetition_penalty", mc->repetition_penalty);
        int mt = r->model_ready ? r->model.max_tokens : mc->max_tokens;
        if (mt > 0)
            cJSON_AddNumberToObject(m, "max_tokens", mt);
        if (mc->extra_body[0])
            cJSON_AddItemToObject(m, "extra_body", cJSON_Parse(mc->extra_body));
        if (mc->context_length > 0)
            cJSON_AddNumberToObject(m, "context_length", mc->context_length);
    }
    cJSON_AddStringToObject(c, "image", cfg->default_image);
    cJSON *l = cJSON_AddObjectToObject(c, "limits");
    if (l) {
        cJSON_AddNumberToObject(l, "max_turns", r->st.o->max_turns);
        cJSON_AddNumberToObject(l, "token_budget", (double)r->budget);
        cJSON_AddNumberToObject(l, "timeout_s", r->timeout_s);
        cJSON_AddNumberToObject(l, "cmd_timeout_s", cfg->cmd_timeout_s);
        cJSON_AddNumberToObject(l, "tool_timeout_s", cfg->tool_timeout_s);
        cJSON_AddNumberToObject(l, "sandbox_memory_mib", cfg->sandbox_memory_mib);
        cJSON_AddNumberToObject(l, "sandbox_pids", cfg->sandbox_pids);
    }
    /* how it ran (the task's options, tool_names resolved) */
    cJSON *op = cJSON_AddObjectToObject(c, "options");
    if (op) {
        cJSON_AddStringToObject(op, "mode", lb_run_mode_name(LB_RUN_SANDBOX));
        cJSON_AddStringToObject(op, "layout", lb_layout_name(r->opts.layout));
        cJSON_AddBoolToObject(op, "answer_file", r->opts.answer_file);
        cJSON_AddStringToObject(op, "tool_names", lb_tool_names_name(r->official));
        if (r->opts.max_tokens > 0)
            cJSON_AddNumberToObject(op, "max_tokens", r->opts.max_tokens);
        if (r->model_ready && r->model.capture_tokens)
            cJSON_AddTrueToObject(op, "capture_tokens");
    }
    cJSON *names = cJSON_AddArrayToObject(c, "tools");
    const cJSON *t;
    cJSON_ArrayForEach(t, r->tools)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "function"), "name");
        if (names && cJSON_IsString(n))
            cJSON_AddItemToArray(names, cJSON_CreateString(n->valuestring));
    }
    return c;
}

/* ---- the end ------------------------------------------------------------ */

/* Reads at most max bytes of a host file (never following a symlink). */
static char *read_head(const char *path, size_t max, size_t *len)
{
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return NULL;
    char *buf = malloc(max + 1);
    size_t got = 0;
    while (buf && got < max) {
        ssize_t n = read(fd, buf + got, max - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (buf) {
        buf[got] = '\0';
        *len = got;
    }
    return buf;
}

/* several nodes: the record (trajectory.json, tokens.jsonl, rounds/<n>.json)
 * into the object store too, so any web serves it and the node that runs
 * the next round goes on with the conversation (a no-op with local files).
 * The task's status stays: the trajectory already says it, and the local
 * copy is kept; the failure is said as an event and in the log. */
static void put_record(run *r)
{
    char dir[LB_CFG_PATH + 64], why[600];
    const char *slash = strrchr(r->st.o->trajectory_path, '/');
    if (!slash || (size_t)(slash - r->st.o->trajectory_path) >= sizeof dir)
        return;
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - r->st.o->trajectory_path), r->st.o->trajectory_path);
    int rc = lb_blob_task_put_record(r->st.o->cfg, r->st.o->task_id, dir, r->st.o->round, why, sizeof why);
    /* everything this host's agent wrote for the round is in the bucket:
     * the web's cache trim may remove the folder once the task is final */
    if (rc == LB_OK && r->outputs_stored != 0 && lb_blob_task_mark_stored(r->st.o->cfg, dir, r->st.o->round) != LB_OK)
        lb_warn("task %s: cannot mark its folder as stored: this host's cache trim keeps it", r->st.o->task_id);
    if (rc != LB_OK) {
        lb_warn("task %s: its record (trajectory.json) is not in the object store: %s", r->st.o->task_id, why);
        char msg[700];
        snprintf(msg, sizeof msg, "The task's record (trajectory.json) could not be stored in the object store; "
                 "only this node has it: %s", why);
        lb_run_emit_error(&r->st, msg);
    }
}

/* answer_file: the first 64 KiB of the layout's answer file in the
 * sandbox, as valid UTF-8 without trailing whitespace; NULL when it is
 * missing, not a file, empty once trimmed, or unreadable. */
static char *read_answer_file(run *r)
{
    char pbuf[LB_TASK_OPTS_DIR_MAX + 16];
    const char *path = lb_task_opts_answer_file(&r->opts, pbuf, sizeof pbuf);
    char err[512] = "", *raw = NULL;
    size_t len = 0;
    uint64_t size = 0;
    int rc = lbsb_read_range(r->conn, r->sb_id, path, 0, LB_ANSWER_FILE_MAX, &raw, &len, &size, err, sizeof err);
    if (rc != LB_OK) {
        if (rc != LB_E_NOTFOUND)
            lb_warn("task %s: cannot read %s: %s", r->st.o->task_id, path, err);
        return NULL;
    }
    char *text = lb_utf8_sanitize(raw, len, NULL);
    free(raw);
    size_t n = text ? strlen(text) : 0;
    while (n && (text[n - 1] == ' ' || text[n - 1] == '\t' || text[n - 1] == '\n' || text[n - 1] == '\r' ||
                 text[n - 1] == '\v' || text[n - 1] == '\f'))
        text[--n] = '\0';
    if (!n) {
        free(text);
        return NULL;
    }
    if (size > LB_ANSWER_FILE_MAX)
        lb_info("task %s: %s is %llu bytes; its first %u KiB are the answer", r->st.o->task_id, path,
                (unsigned long long)size, LB_ANSWER_FILE_MAX >> 10);
    return text;
}

static void finalize(run *r)
{
    const lb_config *cfg = r->st.o->cfg;
    const char *fanswer = NULL;
    size_t fanswer_len = 0;
    if (r->ctx)
        lb_ctx_finished(r->ctx, &fanswer, &fanswer_len);
    int alive = r->conn && r->ctx && !lb_ctx_sandbox_lost(r->ctx, NULL);
    char err[512];

    /* The loop is over: a cancel must not cut the collection short, but a
     * second signal still can (the handler sets the flag again). */
    if (r->st.o->sb_interrupt)
        *r->st.o->sb_interrupt = 0;

    /* answer_file: the layout's answer file as the model left it, read
     * before the finish tool's answer may be written there */
    char *file_answer = alive && r->opts.answer_file ? read_answer_file(r) : NULL;
    int wrote_finish = 0;
    if (alive && fanswer && fanswer_len) {
        int type = 0;
        uint64_t size = 0;
        int rc = lbsb_stat(r->conn, r->sb_id, SB_ANSWER, &type, &size, err, sizeof err);
        if ((rc == LB_OK && type == 0) || rc == LB_E_NOTFOUND) {
            rc = lbsb_write(r->conn, r->sb_id, SB_ANSWER, fanswer, fanswer_len, 1, err, sizeof err);
            if (rc != LB_OK)
                lb_warn("cannot write answer.txt: %s", err);
            wrote_finish = rc == LB_OK;
        }
    }

    size_t n_arts = 0;
    if (alive && r->st.o->output_dir) {
        lb_artifact *arts = NULL;
        char notes[600];
        lb_collect_limits lim = {
            .max_files = cfg->max_output_files > 0 ? (size_t)cfg->max_output_files : 10000,
            .max_bytes = cfg->max_output_bytes ? cfg->max_output_bytes : (1024ull << 20),
        };
        int crc = lb_collect_outputs(r->conn, r->sb_id, SB_OUTPUT, r->st.o->output_dir, &lim, &arts, &n_arts,
                                     notes, sizeof notes);
        /* A task whose outputs did not all reach the host did not succeed,
         * whatever the model said: its results would be missing. (The
         * finish tool never touches the sandbox, so a sandbox that died
         * while the model was thinking shows up only here.) */
        int lost = crc == LB_E_NOSPACE || crc == LB_E_UNAVAILABLE || crc == LB_E_IO || crc == LB_E_PROTO ||
                   crc == LB_E_SANDBOX;
        if (lost && res_status(r) == LB_TASK_SUCCEEDED) {
            snprintf(r->st.res->status, sizeof r->st.res->status, "%s", lb_task_status_name(LB_TASK_FAILED));
            if (crc == LB_E_NOSPACE)
                snprintf(r->st.res->reason, sizeof r->st.res->reason,
                         "disk full: the server has no space left for this task's outputs (%zu file%s saved)",
                         n_arts, n_arts == 1 ? "" : "s");
            else
                snprintf(r->st.res->reason, sizeof r->st.res->reason,
                         "The sandbox stopped working before the outputs were collected: %s",
                         notes[0] ? notes : lb_strerror(crc));
        }
        /* after a cancel cut a sandbox call short the connection is gone;
         * saying so again would only be noise */
        if (notes[0] && res_status(r) != LB_TASK_CANCELLED)
            lb_run_emit_error(&r->st, notes);
        /* several nodes: the collected outputs into the object store too (a
         * no-op with local files). A task whose outputs are not stored did
         * not succeed: no other node could serve them; the local copy stays. */
        char blob_err[600];
        int prc = lost ? LB_E_IO : lb_blob_task_put_outputs(cfg, r->st.o->task_id, r->st.o->output_dir, blob_err,
                                                            sizeof blob_err);
        r->outputs_stored = prc == LB_OK;
        if (!lost && prc != LB_OK) {
            lb_run_emit_error(&r->st, blob_err);
            if (res_status(r) == LB_TASK_SUCCEEDED) {
                snprintf(r->st.res->status, sizeof r->st.res->status, "%s", lb_task_status_name(LB_TASK_FAILED));
                snprintf(r->st.res->reason, sizeof r->st.res->reason, "The task's outputs could not be stored: %s",
                         blob_err);
            }
        }
        if (r->st.sink->artifacts)
            r->st.sink->artifacts(r->st.sink->arg, arts, n_arts);
        cJSON *d = cJSON_CreateObject();
        cJSON *list = cJSON_AddArrayToObject(d, "artifacts");
        for (size_t i = 0; i < n_arts; i++) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddStringToObject(a, "path", arts[i].path);
            cJSON_AddNumberToObject(a, "size", (double)arts[i].size);
            cJSON_AddStringToObject(a, "mime", arts[i].mime);
            cJSON_AddStringToObject(a, "sha256", arts[i].sha256);
            cJSON_AddItemToArray(list, a);
        }
        /* the record lists them too */
        if (r->traj.root && list) {
            cJSON_DeleteItemFromObjectCaseSensitive(r->traj.root, "artifacts");
            cJSON_AddItemToObject(r->traj.root, "artifacts", cJSON_Duplicate(list, 1));
        }
        lb_run_emit(&r->st, "artifacts", d);
        r->st.res->n_artifacts = n_arts;

        /* the answer is answer.txt as copied out (the first MiB of it) */
        char path[4096];
        snprintf(path, sizeof path, "%s/answer.txt", r->st.o->output_dir);
        int collected = 0;
        for (size_t i = 0; i < n_arts; i++)
            collected |= !strcmp(arts[i].path, "answer.txt");
        free(arts);
        size_t len = 0;
        char *raw = collected && !r->opts.answer_file ? read_head(path, LB_ANSWER_MAX, &len) : NULL;
        if (!raw && !r->opts.answer_file) {
            /* not copied (caps): read it from the sandbox */
            if (lbsb_read(r->conn, r->sb_id, SB_ANSWER, LB_ANSWER_MAX, &raw, &len, err, sizeof err))
                raw = NULL;
        }
        if (raw) {
            r->st.res->answer = lb_utf8_sanitize(raw, len, NULL);
            free(raw);
            snprintf(r->st.res->usage.answer_source, sizeof r->st.res->usage.answer_source, "%s",
                     wrote_finish ? "finish" : "file");
        }
    }
    if (file_answer) {
        free(r->st.res->answer);
        r->st.res->answer = file_answer;
        snprintf(r->st.res->usage.answer_source, sizeof r->st.res->usage.answer_source, "file");
    }
    if (!r->st.res->answer && r->opts.answer_file && !r->opts.finish_answer) {
        /* task option finish_answer false: the official runner's reading, an empty answer */
        r->st.res->answer = strdup("");
        snprintf(r->st.res->usage.answer_source, sizeof r->st.res->usage.answer_source, "none");
    }
    if (!r->st.res->answer && fanswer) {
        r->st.res->answer = strdup(fanswer);
        snprintf(r->st.res->usage.answer_source, sizeof r->st.res->usage.answer_source, "finish");
    }
    if (!r->st.res->answer)
        snprintf(r->st.res->usage.answer_source, sizeof r->st.res->usage.answer_source, "none");
    if (r->st.res->answer) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "answer", r->st.res->answer);
        lb_run_emit(&r->st, "answer", d);
    }
    close_usage(r);
    if (r->st.sink->usage)
        r->st.sink->usage(r->st.sink->arg, &r->st.res->usage);

    /* a run that failed during setup still leaves a record of why */
    if (r->st.o->trajectory_path && !r->traj.root) {
        cJSON *conf = run_config(r);
        if (lb_traj_init(&r->traj, r->st.o->task_id, r->st.o->prompt, r->st.o->max_turns,
                         r->model_ready ? r->model.shown_url : "", r->model_ready ? r->model.model : "",
                         r->tools, conf) != LB_OK)
            lb_warn("task %s: out of memory: no trajectory is written", r->st.o->task_id);
        cJSON_Delete(conf);
    }
    /* a context-length retry lowers max_tokens for the rest of the run:
     * the record says so */
    cJSON *tm = r->traj.root ? cJSON_GetObjectItemCaseSensitive(
                                   cJSON_GetObjectItemCaseSensitive(r->traj.root, "config"), "model")
                             : NULL;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(tm, "max_tokens");
    if (tm && r->model_ready && r->model.max_tokens > 0 &&
        (!cJSON_IsNumber(mt) || (int)mt->valuedouble != r->model.max_tokens)) {
        if (cJSON_IsNumber(mt))
            cJSON_AddNumberToObject(tm, "max_tokens_configured", mt->valuedouble);
        cJSON_DeleteItemFromObjectCaseSensitive(tm, "max_tokens");
        cJSON_AddNumberToObject(tm, "max_tokens", r->model.max_tokens);
    }
    if (r->st.o->trajectory_path && r->traj.root) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "started_ms", (double)r->t_start);
        cJSON_AddNumberToObject(t, "finished_ms", (double)lb_now_ms());
        cJSON_AddNumberToObject(t, "sandbox_start_ms", (double)r->st.res->usage.sandbox_ms);
        cJSON_AddNumberToObject(t, "model_ms", (double)r->st.res->usage.model_ms);
        cJSON_AddNumberToObject(t, "tools_ms", (double)r->st.res->usage.tools_ms);
        int trc = lb_traj_write(&r->traj, r->st.o->trajectory_path, r->messages, r->st.res->status, r->st.res->reason,
                                r->st.res->answer, &r->st.res->usage, t);
        if (trc == LB_OK && r->st.o->round_trajectory_path) {
            /* the conversation as at the end of this round, for a fork from it */
            unlink(r->st.o->round_trajectory_path);
            if (link(r->st.o->trajectory_path, r->st.o->round_trajectory_path) != 0)
                lb_warn("task %s: this round's trajectory is not kept for a fork: %s", r->st.o->task_id,
                        strerror(errno));
        }
        if (trc == LB_OK && r->st.res->usage.tokens_capture) {
            /* the compact form of the same arrays, for trainers */
            int krc = lb_tokens_write_beside(r->st.o->trajectory_path, r->traj.turns);
            if (krc != LB_OK)
                lb_warn("task %s: tokens.jsonl is not written (%s); trajectory.json has the same tokens",
                        r->st.o->task_id, lb_strerror(krc));
        }
        if (trc == LB_OK)
            put_record(r);
        if (trc == LB_E_NOSPACE && res_status(r) == LB_TASK_SUCCEEDED) {
            /* the record of the run is part of its results (and of its bundle) */
            snprintf(r->st.res->status, sizeof r->st.res->status, "%s", lb_task_status_name(LB_TASK_FAILED));
            snprintf(r->st.res->reason, sizeof r->st.res->reason,
                     "disk full: the server has no space left for this task's record (trajectory.json)");
        }
        cJSON_Delete(t);
    }
}

/* A leased sandbox that still works is kept keep_s for the next round
 * (its lease renewed to that, and the task's record saying until when),
 * within followup_max_kept; otherwise it is destroyed here, before the
 * end is recorded, so the page never offers a sandbox that is gone. */
static void keep_sandbox(run *r)
{
    const lb_loop_opts *o = r->st.o;
    if (!r->conn || !r->sb_id[0] || !r->leased)
        return;
    char err[512] = "";
    int alive = r->ctx && !lb_ctx_sandbox_lost(r->ctx, NULL);
    if (alive && o->keep_s > 0) {
        /* the state at the end of this round: what the next round restores
         * once the kept sandbox is gone, and what a fork from this round
         * starts from */
        char state[80];
        uint64_t bytes = 0, files = 0;
        lb_followup_state_name(o->task_id, o->round > 1 ? o->round : 1, state, sizeof state);
        int src = lbsb_save(r->conn, r->sb_id, state, 0, &bytes, &files, err, sizeof err);
        if (src == LB_OK && o->state_saved)
            o->state_saved(o->sandbox_arg, state, bytes);
        else if (src != LB_OK) {
            char note[800];
            snprintf(note, sizeof note, "The sandbox's state was not saved (%s): a follow-up continues in this "
                     "sandbox while it is kept (%d s), after that with the files only.", err, o->keep_s);
            lb_run_emit_error(&r->st, note);
        }
        /* no CPU while it waits; its memory stays, counted in followup_max_kept */
        if (lbsb_freeze(r->conn, r->sb_id, err, sizeof err) != LB_OK)
            lb_warn("task %s: the kept sandbox could not be frozen (it waits running): %s", o->task_id, err);
    }
    int rc = alive && o->keep_s > 0 ? lbsb_renew(r->conn, r->sb_id, o->keep_s, err, sizeof err) : LB_E_SANDBOX;
    if (rc == LB_OK && o->sandbox_keep)
        rc = o->sandbox_keep(o->sandbox_arg, o->keep_s);
    if (rc == LB_OK) {
        r->sb_id[0] = '\0'; /* kept: closing the connection leaves it waiting for the next round */
        return;
    }
    if (rc == LB_E_BUSY)
        lb_run_emit_error(&r->st, "The sandbox is not kept for a follow-up: the service already keeps as many as it may "
                      "(followup_max_kept). A next message continues in a fresh sandbox with the files only.");
    LB_IGNORE(lbsb_destroy(r->conn, r->sb_id, err, sizeof err)); /* its lease runs out otherwise */
    r->sb_id[0] = '\0';
    if (o->sandbox_gone)
        o->sandbox_gone(o->sandbox_arg);
}

/* The end of every run: final status, outputs, trajectory, the recorded
 * end, the sandbox destroyed (or kept, keep_sandbox). */
static int end_run(run *r)
{
    char err[512];
    lb_run_cancelled(&r->st); /* a cancel that came during setup */
    if (!r->st.final)
        lb_run_final(&r->st, LB_TASK_FAILED, "internal error");
    if (res_status(r) != LB_TASK_SUCCEEDED && res_status(r) != LB_TASK_CANCELLED && r->st.res->reason[0])
        lb_debug("task %s failed: %s", r->st.o->task_id, r->st.res->reason);
    finalize(r);
    /* the sandbox's network record into the task's files: the gateway's
     * folder goes when the sandbox ends */
    if (r->sb_id[0] && r->st.o->network && r->st.o->network[0] == '{')
        lb_netrecord_keep_task(r->st.o->cfg, r->st.o->task_id, r->sb_id);
    keep_sandbox(r);
    int rc = LB_OK;
    if (r->st.sink->finish)
        rc = r->st.sink->finish(r->st.sink->arg, r->st.res->status, r->st.res->reason[0] ? r->st.res->reason : NULL,
                             r->st.res->answer);
    alarm(0);
    /* a failed destroy leaves nothing either: the agent closes its
     * connection next, and sandboxd destroys the sandboxes of a closed one */
    if (r->conn && r->sb_id[0])
        LB_IGNORE(lbsb_destroy(r->conn, r->sb_id, err, sizeof err));
    return rc;
}

/* The watchdog's way out (watchdog.h): the main thread is parked inside
 * the plugin (hung, or crashed when sig is set), so this thread ends the
 * task the way the loop would have, and the process. */
static void on_hang(void *arg, const char *tool, int limit_s, int sig, const char *where)
{
    run *r = arg;
    alarm(0); /* the task timer must not cut the collection of outputs short */
    char msg[400], sname[24];
    const char *signame = sig ? lb_crash_signame(sig, sname, sizeof sname) : "";
    if (sig)
        snprintf(msg, sizeof msg, "The tool %s crashed (%s at %s); the task was stopped.", tool, signame, where);
    else
        snprintf(msg, sizeof msg,
                 "The tool %s did not return within %d s (time in its own code; waiting on the sandbox is not "
                 "counted) and was stopped.", tool, limit_s);
    if (r->cur_call) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddNumberToObject(d, "turn", r->cur_turn);
        cJSON_AddStringToObject(d, "call_id", r->cur_call->id ? r->cur_call->id : "");
        cJSON_AddStringToObject(d, "name", r->cur_call->name);
        cJSON_AddStringToObject(d, "arguments", r->cur_call->arguments);
        char st[48] = "killed (hung)";
        if (sig)
            snprintf(st, sizeof st, "crashed (%s)", signame);
        cJSON_AddStringToObject(d, "status", st);
        cJSON_AddStringToObject(d, "text", msg);
        lb_run_emit(&r->st, "tool", d);
    }
    lb_run_emit_error(&r->st, msg);
    if (sig) /* the words of the web's reaper (web/spawn.c) when the agent dies of it */
        lb_run_final(&r->st, LB_TASK_FAILED, "the tool %s crashed (%s); the task was stopped", tool, signame);
    else
        lb_run_final(&r->st, LB_TASK_FAILED, "the tool %s did not return within %d s and was stopped", tool, limit_s);
    end_run(r);
    if (r->st.o->on_abort)
        r->st.o->on_abort(r->st.o->on_abort_arg, r->st.res);
    fflush(stdout);
    fflush(stderr);
    _exit(1);
}

int lb_agent_run(const lb_loop_opts *o, const lb_sink *sink, lb_loop_result *res)
{
    if (o->run_opts && o->run_opts->mode == LB_RUN_LLM)
        return lb_agent_run_llm(o, sink, res);
    memset(res, 0, sizeof *res);
    run r;
    memset(&r, 0, sizeof r);
    if (o->run_opts)
        r.opts = *o->run_opts;
    else
        lb_task_opts_default(&r.opts);
    {
        /* the task's tool_names, else its model's */
        const lb_model_cfg *mc = lb_cfg_model(o->cfg, o->model_name);
        r.official = r.opts.tool_names == LB_TOOL_NAMES_DEFAULT ? mc && mc->tool_names == 1
                                                                : r.opts.tool_names == LB_TOOL_NAMES_OFFICIAL;
        lb_tool_words_of(r.official, &r.words);
    }
    lb_run_state_init(&r.st, o, sink, res);
    r.t_start = lb_now_ms();
    r.last_prompt = r.last_completion = -1;
    r.outputs_stored = -1;
    char err[1024] = "";
    const lb_config *cfg = o->cfg;
    /* the caller's are the task's effective limits (lb_task_limits_of) */
    r.budget = o->token_budget;
    r.timeout_s = o->timeout_s;

    r.messages = cJSON_CreateArray();
    cJSON *perr = cJSON_CreateArray();
    if (!r.messages || !perr) {
        lb_run_final(&r.st, LB_TASK_FAILED, "out of memory");
        goto end;
    }
    if (r.timeout_s > 0)
        alarm((unsigned)r.timeout_s);
    lb_mime_preload(); /* ready by the time the outputs are collected */
    lb_run_emit_status(&r.st, lb_task_status_name(LB_TASK_RUNNING), NULL);
    if (lb_watchdog_start(cfg->tool_timeout_s, o->tool_marker, o->tool_marker_on, on_hang, &r) != LB_OK)
        lb_warn("the tool watchdog could not start; a hung tool will hold its task until the time limit");

    /* each plugin that failed is in perr (said on the task below); no tool at all fails the task */
    LB_IGNORE(lb_plugins_load(cfg->plugin_dir, cfg, &r.plugins, perr));
    lb_plugins_select(r.plugins, cfg, perr);
    if (r.opts.n_tools && lb_plugins_restrict(r.plugins, r.opts.tools, r.opts.n_tools, err, sizeof err) != LB_OK) {
        lb_run_final(&r.st, LB_TASK_FAILED, "bad task options: %s", err);
        goto end;
    }
    char *missing = lb_plugins_missing_note(r.plugins, cfg, perr); /* said on the task, not only in logs */
    if (missing)
        lb_run_emit_error(&r.st, missing);
    free(missing);
    if (!lb_plugins_enabled_count(r.plugins)) {
        lb_run_final(&r.st, LB_TASK_FAILED, "no tools could be loaded from %s", cfg->plugin_dir);
        goto end;
    }
    if (lb_tool_names_offer(r.plugins, r.official) != LB_OK) {
        lb_run_final(&r.st, LB_TASK_FAILED, "the tools could not be offered under their official names");
        goto end;
    }
    r.tools = lb_plugins_openai_tools(r.plugins);
    char abuf[LB_TASK_OPTS_DIR_MAX + 16];
    lb_tools_adapt(r.tools, r.official, lb_task_opts_answer_file(&r.opts, abuf, sizeof abuf));
    {
        /* the MCP servers the task is offered: its option, else its model's */
        const lb_model_cfg *mc = lb_cfg_model(cfg, o->model_name);
        if (lb_mcpc_pick(cfg, (const char (*)[32])r.opts.mcp, r.opts.n_mcp, mc ? mc->mcp : NULL, r.mcp_names,
                         &r.n_mcp, err, sizeof err) != LB_OK) {
            lb_run_final(&r.st, LB_TASK_FAILED, "bad task options: %s", err);
            goto end;
        }
    }
    if (lb_model_init(&r.model, cfg, o->model_name, o->cancel, err, sizeof err) != LB_OK) {
        lb_run_final(&r.st, LB_TASK_FAILED, "%s", err);
        goto end;
    }
    r.model_ready = 1;
    r.model.images = &r.images;
    if (r.opts.max_tokens > 0)
        r.model.max_tokens = r.opts.max_tokens;
    lb_model_apply_opts(&r.model, &r.opts);
    lb_tokens_capture_set(&r.model, &r.opts, &r.st.res->usage);
    cJSON *conf = run_config(&r);
    if (lb_traj_init(&r.traj, o->task_id, o->prompt, o->max_turns, r.model.shown_url, r.model.model, r.tools,
                     conf) != LB_OK)
        lb_warn("task %s: out of memory: no trajectory is written", o->task_id);
    cJSON_Delete(conf);
    if (r.traj.root && o->round > 1)
        cJSON_AddNumberToObject(r.traj.root, "round", o->round);
    int resumed = take_history(&r);
    if (!resumed && build_prompts(&r) != LB_OK)
        goto end;
    if (start_sandbox(&r) != LB_OK)
        goto end;
    if (resumed && add_opening(&r) != LB_OK)
        goto end;
    if (start_mcp(&r) != LB_OK)
        goto end;
    {
        /* the page shows "starting the sandbox" until this one */
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "status", lb_task_status_name(LB_TASK_RUNNING));
        cJSON_AddStringToObject(d, "sandbox", "ready");
        cJSON_AddNumberToObject(d, "sandbox_ms", (double)r.st.res->usage.sandbox_ms);
        lb_run_emit(&r.st, "status", d);
    }
    loop(&r);
end:;
    lb_mcpc_hub_free(r.mcp); /* before the sandbox's connection closes: its servers are stopped on it */
    r.mcp = NULL;
    int rc = end_run(&r);
    lb_watchdog_stop();
    lb_mime_release(); /* the preloaded libmagic handle, taken or not */
    if (r.conn)
        lbsb_close(r.conn);
    lb_ctx_free(r.ctx);
    if (r.model_ready)
        lb_model_free(&r.model);
    lb_obs_images_free(&r.images);
    lb_traj_free(&r.traj);
    cJSON_Delete(r.tools);
    cJSON_Delete(r.messages);
    cJSON_Delete(perr);
    lb_plugins_free(r.plugins);
    return rc;
}
