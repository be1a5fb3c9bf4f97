/* `llmbox agent --task ID`: runs one stored task (spawned by the web
 * backend, one process per task, so a crashing plugin or a runaway model
 * client ends only its own task). `llmbox agent --list-tools`: the loaded
 * tools and the plugins that were refused, as JSON for /api/tools. */
#include "agent/followup.h"
#include "agent/loop.h"
#include "agent/model_http.h"
#include "agent/plugin_host.h"
#include "agent/run_state.h"
#include "agent/sink.h"
#include "agent/sink_store.h"
#include "agent/tool_host.h"
#include "agent/toolcall_parse.h"
#include "agent/zygote.h"
#include "common/blob_task.h" /* several nodes: the cache trim's marker */
#include "common/config.h"
#include "common/log.h"
#include "common/netpolicy.h"
#include "common/status.h"
#include "common/task.h"
#include "common/task_opts.h"
#include "common/util.h"
#include "entry.h"
#include "store/store_queue.h" /* several nodes: the fence */
#include "store/store_round.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile int g_cancel, g_sb_interrupt, g_timed_out;

/* What the zygote saw of llmbox.conf when it (re)loaded the configuration:
 * an agent forked from it reloads only when the file is not that one any
 * more. The rest of what the configuration is made of cannot change under
 * the zygote (its environment, its working folder, its binary). */
typedef struct conf_ident {
    int exists;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
} conf_ident;

static void conf_ident_of(const lb_config *cfg, conf_ident *id)
{
    char deflt[LB_CFG_PATH + 16];
    snprintf(deflt, sizeof deflt, "%.*s/llmbox.conf", LB_CFG_PATH - 16, cfg->home);
    struct stat st;
    memset(id, 0, sizeof *id);
    if (stat(cfg->conf_path[0] ? cfg->conf_path : deflt, &st) != 0)
        return;
    id->exists = 1;
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    id->size = st.st_size;
    id->mtime = st.st_mtim;
    id->ctime = st.st_ctim;
}

static int conf_ident_same(const conf_ident *a, const conf_ident *b)
{
    if (a->exists != b->exists)
        return 0;
    return !a->exists || (a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
                          a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
                          a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec);
}

/* Loads the configuration again into cfg; when it does not load, says so
 * and cfg stays the one it was. */
static LB_MUST_CHECK lb_status conf_reload(lb_config *cfg)
{
    lb_config *fresh = malloc(sizeof *fresh);
    lb_status rc = fresh ? (lb_status)lb_config_load(fresh) : LB_E_NOMEM;
    if (rc == LB_OK)
        memcpy(cfg, fresh, sizeof *fresh);
    else
        lb_warn("spare agent: the configuration did not load again (%s); the one read at start is used",
                fresh ? lb_config_error() : "out of memory");
    free(fresh);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: llmbox agent --task ID\n"
               "       llmbox agent --spare      (started by the web: forks an agent per task asked on fd 0)\n"
               "       llmbox agent --list-tools\n"
               "       llmbox agent --tool-host  (started by the web: tool calls for one API sandbox on fd 0)\n");
}

static int list_tools(const lb_config *cfg)
{
    cJSON *errors = cJSON_CreateArray();
    lb_plugins *p = NULL;
    if (!errors || lb_plugins_load(cfg->plugin_dir, cfg, &p, errors) != LB_OK) {
        fprintf(stderr, "llmbox agent: out of memory\n");
        cJSON_Delete(errors);
        return 1;
    }
    /* exactly what a task is offered (tools = ... in llmbox.conf) */
    lb_plugins_select(p, cfg, errors);
    cJSON *out = lb_plugins_list_json(p, errors);
    char *text = out ? cJSON_PrintUnformatted(out) : NULL;
    int rc = 1;
    if (text) {
        printf("%s\n", text);
        rc = fflush(stdout) == 0 ? 0 : 1;
    }
    free(text);
    cJSON_Delete(out);
    cJSON_Delete(errors);
    lb_plugins_free(p);
    return rc;
}

/* Ends the task as failed before its loop could start; the store says
 * why it could not when it cannot (the web's reaper then ends it with
 * the agent's exit). */
static void end_task(lb_store *st, const char *id, const char *reason)
{
    int rc = lb_store_task_end(st, id, LB_TASK_FAILED, reason, NULL);
    if (rc != LB_OK && rc != LB_E_EXISTS)
        lb_error("task %s: cannot record its end (%s): %s", id, reason, lb_strerror(rc));
}

/* The task's record of its sandbox between rounds (lb_loop_opts's
 * sandbox_* hooks): in the store, so that the next round's agent finds it,
 * a delete destroys it, and followup_max_kept is counted machine-wide. */
typedef struct keep_rec {
    lb_store *st;
    const char *id;
    int max_kept;
} keep_rec;

static void sandbox_made(void *arg, const char *sb_id, const char *key, const char *how)
{
    keep_rec *k = arg;
    int rc = *key ? lb_store_kept_set(k->st, k->id, sb_id, key) : LB_OK; /* "": not leased, nothing to keep */
    if (rc != LB_OK)
        lb_warn("task %s: cannot record its sandbox (a delete now leaves it until its lease ends): %s", k->id,
                lb_strerror(rc));
    rc = lb_store_round_set_sandbox(k->st, k->id, how);
    if (rc != LB_OK)
        lb_warn("task %s: cannot record how the round got its sandbox: %s", k->id, lb_strerror(rc));
    /* several nodes: this node's sandboxd holds it (and the states saved from
     * it), so the next round comes back here while this node lives */
    rc = lb_store_queue_set_home(k->st, k->id);
    if (rc != LB_OK)
        lb_warn("task %s: cannot record the node of its sandbox (the next round may run elsewhere, in a fresh "
                "sandbox): %s", k->id, lb_strerror(rc));
}

/* several nodes: a later round claimed by a node other than the one that holds
 * the task's sandbox and saved states (that node is gone: the claim leaves
 * a round to its node while the node is live). Fills note (the sentence
 * for the user's events and the model) and returns 1; 0 when the round is
 * where its sandbox is, or the agent is the web's own. */
static int round_moved(lb_store *st, const char *id, char *note, size_t notesz)
{
    const char *self = lb_store_fence_node(st);
    char home[LB_NODE_NAME_MAX + 1], why[200] = "";
    if (!self[0] || lb_store_queue_home(st, id, home, sizeof home) != LB_OK || !home[0] || !strcmp(home, self))
        return 0;
    if (lb_store_node_gone_why(st, home, why, sizeof why) != LB_OK || !why[0])
        snprintf(why, sizeof why, "it cannot be reached");
    snprintf(note, notesz,
             "The computer of the earlier rounds (their sandbox and its saved state) was on node %s, which is gone "
             "(%s). Running processes, files outside /testbed/output, installed packages and the shell's state did "
             "not survive: this round runs on node %s in a fresh sandbox with the input files and the last round's "
             "outputs only.", home, why, self);
    return 1;
}

static int sandbox_keep(void *arg, int keep_s)
{
    keep_rec *k = arg;
    int64_t now = lb_now_ms();
    return lb_store_kept_keep(k->st, k->id, now, now + (int64_t)keep_s * 1000, k->max_kept);
}

static void state_saved(void *arg, const char *state, uint64_t bytes)
{
    keep_rec *k = arg;
    int rc = lb_store_round_set_state(k->st, k->id, state, (int64_t)bytes);
    if (rc != LB_OK)
        lb_warn("task %s: cannot record its saved state %s (the next round starts without it): %s", k->id, state,
                lb_strerror(rc));
}

static void sandbox_gone(void *arg)
{
    keep_rec *k = arg;
    LB_IGNORE(lb_store_kept_clear(k->st, k->id)); /* a stale record only makes the next round's adopt fail */
}

/* several nodes: an agent that `llmbox node` started gets its claim in
 * LLMBOX_NODE_FENCE ("<node>:<attempt>"); every write it makes is fenced
 * with it (store_queue.h). Unset: the web's agent, unfenced. */
static int agent_fence(lb_store *st, const char *id)
{
    const char *f = getenv("LLMBOX_NODE_FENCE");
    if (!f || !*f)
        return LB_OK;
    const char *colon = strrchr(f, ':');
    char node[64];
    char *end = NULL;
    long attempt = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || (size_t)(colon - f) >= sizeof node || !end || *end || attempt < 1 || attempt > 1000000) {
        lb_error("task %s: LLMBOX_NODE_FENCE must be <node>:<attempt>", id);
        return LB_E_INVAL;
    }
    snprintf(node, sizeof node, "%.*s", (int)(colon - f), f);
    int rc = lb_store_set_fence(st, node, (int)attempt);
    if (rc != LB_OK)
        lb_error("task %s: LLMBOX_NODE_FENCE names no valid node", id);
    return rc;
}

/* Whether the task's network policy (JSON text) still parses and lies
 * within the service's network_egress_max; why says what is wrong. */
static int network_policy_ok(const lb_config *cfg, const char *text, char *why, size_t whysz)
{
    lb_netpolicy *p = malloc(sizeof *p);
    if (!p) {
        snprintf(why, whysz, "out of memory");
        return 0;
    }
    int ok = lb_netpolicy_parse(text, p, why, whysz) == LB_OK &&
             lb_netpolicy_admit(p, cfg->network_egress_max, NULL, why, whysz) == LB_OK &&
             lb_netpolicy_admit_bytes(p, cfg->network_max_bytes, 0, why, whysz) == LB_OK;
    free(p);
    return ok;
}

/* cfg is written here only to add the replay model of a "Replay" task,
 * before the loop (and its watchdog thread) starts. */
static int run_task(lb_config *cfg, const char *id)
{
    lb_store *st = NULL;
    lb_task task;
    memset(&task, 0, sizeof task);
    int ret = 1;
    lb_loop_result res;
    memset(&res, 0, sizeof res);

    lb_agent_signals_install(&g_cancel, &g_sb_interrupt, &g_timed_out);
    int rc = lb_store_open(lb_cfg_store_where(cfg), &st);
    if (rc != LB_OK) {
        char shown[LB_CFG_PATH];
        lb_store_where_shown(lb_cfg_store_where(cfg), shown, sizeof shown);
        lb_error("cannot open the task store %s: %s", shown, lb_strerror(rc));
        goto out;
    }
    if (agent_fence(st, id) != LB_OK)
        goto out;
    rc = lb_store_task_load(st, id, &task);
    if (rc != LB_OK) {
        lb_error("task %s: %s", id, lb_strerror(rc));
        goto out;
    }
    if (task.status != LB_TASK_QUEUED && task.status != LB_TASK_RUNNING) {
        lb_error("task %s is %s, not queued", id,
                 task.status == LB_TASK_UNKNOWN ? "in an unknown state" : lb_task_status_name(task.status));
        goto out;
    }
    /* what it asked for, within what the service allows now */
    lb_task_request req;
    lb_task_limits lim;
    lb_task_request_of(&task, &req);
    lb_task_limits_of(&req, NULL, cfg, &lim);
    const char *model = task.model, *network = task.network, *image = task.image;
    /* the web checked this when the task was made; the operator may have
     * changed their mind since (a restart with another network_allow) */
    if (network && network[0] == '{') { /* a policy of rules: still within the ceiling (netpolicy.h) */
        char why[400];
        if (!network_policy_ok(cfg, network, why, sizeof why)) {
            end_task(st, id, why);
            goto out;
        }
    } else if (network && strcmp(network, "none") && !lb_cfg_network_allowed(cfg, network)) {
        end_task(st, id, "this service no longer allows network access from sandboxes (network_allow / "
                         "LLMBOX_NETWORK_ALLOW)");
        goto out;
    }

    /* the task's options: one the agent does not know fails the task,
     * saying which, rather than running it some other way */
    lb_task_opts opts;
    char why[400];
    if (lb_task_opts_parse(task.options_json, &opts, why, sizeof why) != LB_OK) {
        char reason[500];
        snprintf(reason, sizeof reason, "bad task options: %s", why);
        end_task(st, id, reason);
        goto out;
    }

    /* its own endpoint: checked again here, the operator may have turned it off since */
    if (opts.model_url[0]) {
        if (!cfg->rollout_allow_model_url) {
            end_task(st, id, "this service does not allow a task's own model_url (rollout_allow_model_url)");
            goto out;
        }
        int erc = lb_cfg_add_endpoint_model(cfg, model, opts.model_url, opts.model_id);
        if (erc != LB_OK) {
            end_task(st, id, erc == LB_E_INVAL ? "model_url needs an OpenAI-compatible model (provider openai)"
                                               : "the task's model_url could not be set up");
            goto out;
        }
        model = LB_MODEL_ENDPOINT_TASK;
    }

    char task_dir[4096], input_dir[4200], output_dir[4200], traj[4200], logdir[LB_CFG_PATH], marker[LB_CFG_PATH + 64],
        logpath[LB_CFG_PATH + 64];
    lb_cfg_logdir(cfg, logdir, sizeof logdir);
    LB_IGNORE(lb_mkdirs(logdir, 0750)); /* the web made it; an agent started by hand may not have one */
    /* names the tool running, so that the web can say which one crashed */
    snprintf(marker, sizeof marker, "%s/agent-%s.tool", logdir, id);
    snprintf(logpath, sizeof logpath, "%s/agent-%s.log", logdir, id); /* the web's (common/agent_spawn.c) */
    snprintf(task_dir, sizeof task_dir, "%s/%s", cfg->artifacts_dir, id);
    snprintf(input_dir, sizeof input_dir, "%s/input", task_dir);
    snprintf(output_dir, sizeof output_dir, "%s/output", task_dir);
    snprintf(traj, sizeof traj, "%s/trajectory.json", task_dir);
    if (model && !strcmp(model, LB_MODEL_REPLAY_TASK)) {
        /* "Replay": the web linked the earlier task's trajectory here */
        char replay[4200];
        snprintf(replay, sizeof replay, "%s/replay.json", task_dir);
        if (lb_cfg_add_replay_model(cfg, replay) != LB_OK) {
            end_task(st, id, "the replay could not be set up (path too long)");
            goto out;
        }
    }
    struct stat sb;
    int has_input = stat(input_dir, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (lb_mkdirs(task_dir, 0755) != LB_OK) {
        lb_error("cannot create %s", task_dir);
        end_task(st, id, "the task directory could not be created");
        goto out;
    }
    /* several nodes: what follows is written here first: the cache trim keeps
     * the folder until the round marks it stored */
    if (lb_blob_task_mark_agent(cfg, task_dir) != LB_OK) {
        lb_error("cannot mark %s as an agent's", task_dir);
        end_task(st, id, "the task directory could not be marked as this host's");
        goto out;
    }
    rc = lb_store_task_set_running(st, id, (int)getpid());
    if (rc != LB_OK)
        lb_warn("cannot mark task %s running: %s", id, lb_strerror(rc));

    /* a later round of the conversation: its own prompt and files, the
     * conversation so far, and the last round's sandbox */
    lb_round round, prev;
    memset(&round, 0, sizeof round);
    memset(&prev, 0, sizeof prev);
    cJSON *history = NULL, *round_inputs = NULL;
    lb_kept kept;
    memset(&kept, 0, sizeof kept);
    char moved[900] = "";
    int nround = task.round > 1 ? task.round : 1;
    if (nround > 1) {
        rc = lb_store_round_get(st, id, nround, &round);
        if (rc != LB_OK) {
            end_task(st, id, "the round's message could not be read from the store");
            goto out;
        }
        round_inputs = cJSON_Parse(round.inputs_json ? round.inputs_json : "[]");
        char hwhy[300];
        if (lb_followup_history_load(traj, &history, hwhy, sizeof hwhy) != LB_OK)
            lb_warn("task %s: round %d starts without the earlier conversation: %s", id, nround, hwhy);
        if (lb_store_kept_get(st, id, &kept) != LB_OK)
            kept.sandbox_id[0] = '\0';
        /* the last round's saved state, for when its kept sandbox is gone */
        if (lb_store_round_get(st, id, nround - 1, &prev) != LB_OK)
            memset(&prev, 0, sizeof prev);
        /* several nodes: both live on another node, which is gone: fresh here */
        if (round_moved(st, id, moved, sizeof moved)) {
            lb_warn("task %s: %s", id, moved);
            kept.sandbox_id[0] = '\0';
            /* a record of a sandbox nobody here can reach would read as kept */
            LB_IGNORE(lb_store_kept_clear(st, id)); /* this round's sandbox replaces it when kept */
            free(prev.state);
            prev.state = NULL;
            round.fresh = 1;
        }
    }
    keep_rec krec = {.st = st, .id = id, .max_kept = cfg->followup_max_kept};
    /* an evaluation's run or a rollout's sample never has a second round
     * (the web refuses its messages): its one round's trajectory and files
     * are the task's own, so no rounds/ copies are made (three folders and
     * the links: ~5% of a rollout sample's agent CPU, bench/RESULTS.md); a
     * download of its round 1 is served from output/ (handlers_messages.c) */
    int one_round = nround == 1 && task.options_json && *task.options_json &&
                    !lb_task_opts_only_mcp(task.options_json);
    char round_traj[4300];
    if (!one_round) {
        snprintf(round_traj, sizeof round_traj, "%s/rounds", task_dir);
        LB_IGNORE(lb_mkdirs(round_traj, 0750)); /* without it the round's trajectory is not kept: logged then */
    }
    snprintf(round_traj, sizeof round_traj, "%s/rounds/%d.json", task_dir, nround);

    lb_sink sink;
    lb_sink_store_init(&sink, st, id);
    lb_loop_opts o = {
        .cfg = cfg,
        .task_id = id,
        .prompt = task.prompt,
        .max_turns = lim.max_turns,
        .token_budget = lim.token_budget,
        .timeout_s = lim.timeout_s,
        .model_name = model && *model ? model : NULL,
        .tool_marker = marker,
        .tool_marker_on = logpath,
        .network = network,
        .image = image,
        .input_dir = has_input ? input_dir : NULL,
        .output_dir = output_dir,
        .trajectory_path = traj,
        .cancel = &g_cancel,
        .sb_interrupt = &g_sb_interrupt,
        .timed_out = &g_timed_out,
        .run_opts = &opts,
        .round = nround,
        .history = history,
        .round_inputs = round_inputs,
        .kept_id = kept.sandbox_id[0] ? kept.sandbox_id : NULL,
        .kept_key = kept.lease_key,
        .fresh = round.fresh,
        /* llm mode has no sandbox to keep; a task with run options is an
         * evaluation's run or a rollout's sample, which nobody continues:
         * keeping (and saving) its sandbox would only cost memory and time */
        .keep_s = opts.mode == LB_RUN_LLM || (task.options_json && *task.options_json) ||
                          (task.model && !strcmp(task.model, LB_MODEL_REPLAY_TASK)) /* refuses messages */
                      ? 0
                      : cfg->followup_keep_s,
        .sandbox_made = sandbox_made,
        .sandbox_keep = sandbox_keep,
        .sandbox_gone = sandbox_gone,
        .state_saved = state_saved,
        .restore_state = prev.state,
        .moved_note = moved[0] ? moved : NULL,
        .round_trajectory_path = one_round ? NULL : round_traj,
        .sandbox_arg = &krec,
    };
    if (nround > 1)
        o.prompt = round.prompt;
    lb_info("task %s: starting (model %s, %s mode, %d turns max)", id, model && *model ? model : "(default)",
            lb_run_mode_name(opts.mode), lim.max_turns);
    rc = lb_agent_run(&o, &sink, &res);
    lb_info("task %s: %s%s%s", id, res.status, res.reason[0] ? ": " : "", res.reason);
    ret = rc == LB_OK && !lb_sink_store_fenced_out() ? 0 : 1;
    /* this round's files, kept for its downloads once later rounds change them */
    lb_round done;
    if (opts.mode != LB_RUN_LLM && !one_round && lb_store_round_get(st, id, nround, &done) == LB_OK) {
        size_t lost = lb_followup_keep_outputs(task_dir, nround, done.artifacts_json);
        if (lost)
            lb_warn("task %s: %zu output%s of round %d not kept for its downloads", id, lost, lost == 1 ? "" : "s",
                    nround);
        lb_round_free(&done);
    }
    cJSON_Delete(history);
    cJSON_Delete(round_inputs);
    lb_round_free(&round);
    lb_round_free(&prev);
out:
    lb_loop_result_free(&res);
    lb_task_free(&task);
    lb_store_close(st);
    return ret;
}

int lb_agent_main(int argc, char **argv)
{
    /* the one place the agent takes the configuration; everything below
     * is handed it */
    lb_config *cfg = lb_cfg_mut();
    lb_log_init("agent");
    const char *task = NULL;
    int list = 0, spare = 0, task_arg = 0, tool_host = 0;
    char spare_id[33];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--spare"))
            spare = 1;
        else if (!strcmp(argv[i], "--task") && i + 1 < argc) {
            task = argv[++i];
            task_arg = i;
        }
        else if (!strncmp(argv[i], "--task=", 7))
            task = argv[i] + 7;
        else if (!strcmp(argv[i], "--list-tools"))
            list = 1;
        else if (!strcmp(argv[i], "--tool-host"))
            tool_host = 1;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (list)
        return list_tools(cfg);
    if (tool_host)
        return lb_tool_host_main(cfg);
    if (spare) {
        /* the file as it is now, then the configuration read again after
         * it: what the zygote holds is at least as new as what it saw */
        conf_ident seen, now;
        conf_ident_of(cfg, &seen);
        if (conf_reload(cfg) != LB_OK)
            seen.exists = -1; /* no agent trusts the zygote's copy */
        /* the zygote (agent/zygote.h): only its forked agents come back */
        if (lb_agent_zygote_serve(spare_id) != 0)
            return 0; /* the web has gone, or never needed this one */
        task = spare_id;
        /* the spare read llmbox.conf long before this task: read it again
         * when the file changed, so a changed tools list reaches this task,
         * as it would a fresh agent. An unchanged file is not read again:
         * loading it filled and copied the whole configuration (~1 MiB),
         * every page a fault in a process forked from the zygote, ~8% of
         * an agent's CPU (bench/RESULTS.md) */
        conf_ident_of(cfg, &now);
        if (!conf_ident_same(&seen, &now))
            LB_IGNORE(conf_reload(cfg)); /* said when it fails; the zygote's copy is used then */
        /* "--spare --task ................................" (the web's
         * placeholder) becomes "--task ID" in /proc/<pid>/cmdline, as an
         * agent started by exec shows it: the same memory, the rest NULs */
        if (task_arg == 3 && argc == 4 && !strcmp(argv[1], "--spare") && !strcmp(argv[2], "--task") &&
            strlen(argv[3]) == 32) {
            char *p = argv[1];
            size_t room = (size_t)(argv[3] + 33 - p);
            memset(p, 0, room);
            memcpy(p, "--task", 7);
            memcpy(p + 7, spare_id, 32);
        }
    }
    if (!task) {
        usage(stderr);
        return 2;
    }
    if (!lb_id_valid(task)) {
        fprintf(stderr, "llmbox agent: '%s' is not a task id (32 lowercase hex characters)\n", task);
        return 2;
    }
    int ret = run_task(cfg, task);
#if defined(__SANITIZE_ADDRESS__)
    spare = 0; /* make check-asan: exit's leak check runs in every agent */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    spare = 0; /* the same under clang */
#endif
#endif
    if (spare) {
        /* an agent forked from the zygote: exit's handlers (OpenSSL's
         * cleanup, the libraries' destructors) would free what the zygote
         * allocated, copying each page they touch (~4% of a sample's CPU,
         * bench/RESULTS.md) for a process that is ending; the task's files
         * and its store connection are closed by now */
        fflush(NULL);
        _exit(ret);
    }
    return ret;
}
