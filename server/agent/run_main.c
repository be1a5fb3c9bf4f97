/* `llmbox run [-i FILE]... [-o DIR] [--max-turns N] [--model NAME] "prompt"`:
 * the agent without the web server. Same loop as `llmbox agent`, with the
 * steps printed to the terminal and the results written to DIR. */
#include "agent/loop.h"
#include "agent/model_http.h"
#include "agent/prompts.h"
#include "agent/run_state.h"
#include "agent/sink.h"
#include "agent/sink_term.h"
#include "agent/toolcall_parse.h"
#include "common/config.h"
#include "common/log.h"
#include "common/status.h"
#include "common/task.h"
#include "common/task_opts.h"
#include "common/util.h"
#include "entry.h"
#include "llmbox/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUN_MAX_INPUTS 256
#define RUN_PROMPT_MAX (1u << 20)

static volatile int g_cancel, g_sb_interrupt, g_timed_out;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: llmbox run [-i FILE]... [-o DIR] [--max-turns N] [--model NAME]\n"
            "                  [--token-budget N] [--timeout S] [--mode llm|sandbox]\n"
            "                  [--layout llmbox|official] [--tool-names llmbox|official]\n"
            "                  [--answer-file] [--max-tokens N] [--capture-tokens]\n"
            "                  [--mcp NAME,...] \"prompt\"\n"
            "\n"
            "Runs one task in a sandbox and prints each step.\n"
            "  -i, --input FILE   copy FILE into /testbed/input (repeatable)\n"
            "  -o, --output DIR   where outputs, answer.txt and trajectory.json go\n"
            "                     (default ./llmbox-output)\n"
            "  --max-turns N      turn limit (default max_turns, 100)\n"
            "  --model NAME       a model of llmbox.conf (default: default_model)\n"
            "  --token-budget N   context tokens the task may use (default token_budget, 65536;\n"
            "                     0 = no budget)\n"
            "  --timeout S        wall-clock limit in seconds (default and maximum task_timeout_s)\n"
            "  --mode M           sandbox (default: the agent with its tools) or llm (one request,\n"
            "                     no tools, no sandbox: the reply is the answer)\n"
            "  --layout L         llmbox (default: inputs in /testbed/input, answer in\n"
            "                     /testbed/output/answer.txt) or official (/testbed/documents,\n"
            "                     /testbed/answer.txt)\n"
            "  --tool-names T     llmbox (bash, file_editor, finish) or official (execute_bash,\n"
            "                     str_replace_editor, submit); default: the model's tool_names\n"
            "  --answer-file      the answer is the layout's answer file (first 64 KiB), else\n"
            "                     the finish tool's answer\n"
            "  --max-tokens N     the generation cap of each request (default: the model's)\n"
            "  --capture-tokens   record each turn's exact token ids and log-probabilities\n"
            "                     (trajectory.json, tokens.jsonl; default: the model's\n"
            "                     capture_tokens)\n"
            "  --mcp NAME,...     the MCP servers ([mcp \"NAME\"] of llmbox.conf) whose tools are\n"
            "                     offered beside the plugins' (default: the model's mcp list)\n"
            "  prompt             the task; \"-\" reads it from standard input\n"
            "\n"
            "Models come from llmbox.conf ([model \"NAME\"] sections) or, for the model\n"
            "\"default\", from LLMBOX_LLM_URL (or OPENAI_BASE_URL) and LLMBOX_LLM_KEY (or\n"
            "OPENAI_API_KEY); the sandbox daemon must be running.\n");
}

/* When run outside the llmbox directory, find plugins and prompts next to
 * the binary (build/llmbox -> ..), unless LLMBOX_HOME says otherwise. */
static void find_home(lb_config *cfg)
{
    struct stat st;
    if (getenv("LLMBOX_HOME") || stat(cfg->plugin_dir, &st) == 0)
        return;
    char exe[LB_CFG_PATH];
    snprintf(exe, sizeof exe, "%s", cfg->self_exe);
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(exe, '/');
        if (!slash || slash == exe)
            return;
        *slash = '\0';
    }
    char probe[LB_CFG_PATH + 32];
    snprintf(probe, sizeof probe, "%s/plugins", exe);
    if (stat(probe, &st) != 0 || !S_ISDIR(st.st_mode))
        return;
    setenv("LLMBOX_HOME", exe, 1);
    if (lb_config_load(cfg) != LB_OK)
        unsetenv("LLMBOX_HOME");
}

static int copy_file(const char *src, const char *dst)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return LB_E_IO;
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (out < 0) {
        close(in);
        return errno == EEXIST ? LB_E_EXISTS : LB_E_IO;
    }
    char buf[65536];
    int rc = LB_OK;
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = LB_E_IO;
            break;
        }
        if (n == 0)
            break;
        if ((rc = lb_write_all(out, buf, (size_t)n)) != LB_OK)
            break;
    }
    close(in);
    if (close(out) != 0 && rc == LB_OK)
        rc = LB_E_IO;
    return rc;
}

static char *read_stdin(void)
{
    size_t cap = 4096, len = 0;
    char *s = malloc(cap);
    while (s) {
        if (len + 1 == cap) {
            if (cap >= RUN_PROMPT_MAX) {
                free(s);
                return NULL;
            }
            char *ns = realloc(s, cap * 2);
            if (!ns) {
                free(s);
                return NULL;
            }
            s = ns;
            cap *= 2;
        }
        size_t n = fread(s + len, 1, cap - len - 1, stdin);
        if (n == 0)
            break;
        len += n;
    }
    if (s)
        s[len] = '\0';
    return s;
}

static int dir_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return 1;
    struct dirent *e;
    int empty = 1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            empty = 0;
    closedir(d);
    return empty;
}

/* What is left to do once the loop has ended: the trajectory beside the
 * outputs, one summary line, the temporary inputs removed. Also run by the
 * watchdog when a hung tool ends the task (the loop cannot return then). */
typedef struct run_end {
    char tmp[64];
    int have_tmp;
    char out_dir[PATH_MAX];
    char traj_tmp[96];
    char id[LB_ID_HEX_LEN + 1];
} run_end;

static void finish_run(void *arg, const lb_loop_result *res)
{
    run_end *e = arg;
    /* the trajectory goes beside the outputs, never over one of them */
    char traj[PATH_MAX + 64];
    snprintf(traj, sizeof traj, "%s/trajectory.json", e->out_dir);
    struct stat st;
    if (lstat(traj, &st) == 0)
        snprintf(traj, sizeof traj, "%s/llmbox-trajectory-%.8s.json", e->out_dir, e->id);
    if (copy_file(e->traj_tmp, traj) != LB_OK)
        fprintf(stderr, "llmbox run: cannot write %s\n", traj);
    const lb_task_usage *u = &res->usage;
    if (u->tokens_capture) {
        /* the exact tokens' compact form, written beside the trajectory */
        char tok_tmp[sizeof e->traj_tmp + 16], tok[PATH_MAX + 64];
        snprintf(tok_tmp, sizeof tok_tmp, "%s/tokens.jsonl", e->tmp);
        snprintf(tok, sizeof tok, "%s/tokens.jsonl", e->out_dir);
        if (lstat(tok, &st) == 0)
            snprintf(tok, sizeof tok, "%s/llmbox-tokens-%.8s.jsonl", e->out_dir, e->id);
        if (lstat(tok_tmp, &st) == 0 && copy_file(tok_tmp, tok) != LB_OK)
            fprintf(stderr, "llmbox run: cannot write %s\n", tok);
    }
    printf("usage: %d turns; tokens: %lld prompt, %lld completion, %lld environment%s; "
           "time: model %.1f s, tools %.1f s, sandbox start %.1f s\n",
           u->turns, (long long)u->prompt_tokens, (long long)u->completion_tokens,
           (long long)u->environment_tokens, u->environment_estimated ? " (estimated)" : "",
           (double)u->model_ms / 1000.0, (double)u->tools_ms / 1000.0, (double)u->sandbox_ms / 1000.0);
    printf("results in %s (%zu output file(s)); trajectory: %s\n", e->out_dir, res->n_artifacts, traj);
    fflush(stdout);
    if (e->have_tmp)
        LB_IGNORE(lb_rmtree(e->tmp)); /* a temporary dir left behind costs only disk */
    e->have_tmp = 0;
}

static int sandboxd_check(const lb_config *cfg)
{
    lbsb_conn *c = NULL;
    char err[1024] = "";
    char *info = NULL;
    int rc = lbsb_connect(cfg->sandboxd_socket, NULL, &c, err, sizeof err);
    if (rc == LB_OK)
        rc = lbsb_ping(c, &info, err, sizeof err);
    free(info);
    lbsb_close(c);
    if (rc == LB_OK)
        return 0;
    fprintf(stderr,
            "llmbox run: the sandbox daemon is not reachable at %s\n"
            "  (%s)\n"
            "Start it in another terminal with:\n"
            "    sudo %s sandboxd\n"
            "or start the whole service with `make run` in the llmbox directory.\n",
            cfg->sandboxd_socket, err, cfg->self_exe[0] ? cfg->self_exe : "llmbox");
    return 1;
}

int lb_run_main(int argc, char **argv)
{
    lb_log_init("run");
    /* the one place `llmbox run` takes the configuration; written only by
     * find_home's reload, before anything else reads it */
    lb_config *cfg = lb_cfg_mut();
    find_home(cfg);
    const char *inputs[RUN_MAX_INPUTS];
    size_t n_inputs = 0;
    const char *out_arg = "llmbox-output", *model = NULL;
    char *prompt = NULL;
    int max_turns = cfg->max_turns_default;
    long long token_budget = -1, timeout_s = 0;
    int ret = 1;
    static run_end E;
    snprintf(E.tmp, sizeof E.tmp, "/tmp/llmbox-run-XXXXXX");
    char *tmp = E.tmp;
    int have_tmp = 0;
    lb_loop_result res;
    memset(&res, 0, sizeof res);
    lb_task_opts opts;
    lb_task_opts_default(&opts);

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if ((!strcmp(a, "-i") || !strcmp(a, "--input")) && more) {
            if (n_inputs == RUN_MAX_INPUTS) {
                fprintf(stderr, "llmbox run: at most %d input files\n", RUN_MAX_INPUTS);
                goto out;
            }
            inputs[n_inputs++] = argv[++i];
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && more) {
            out_arg = argv[++i];
        } else if (!strcmp(a, "--max-turns") && more) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > cfg->max_turns_limit) {
                fprintf(stderr, "llmbox run: --max-turns must be 1..%d\n", cfg->max_turns_limit);
                ret = 2;
                goto out;
            }
            max_turns = (int)v;
        } else if (!strcmp(a, "--model") && more) {
            model = argv[++i];
            if (!lb_cfg_model(cfg, model)) {
                char names[600];
                lb_cfg_model_names(cfg, names, sizeof names);
                fprintf(stderr, "llmbox run: there is no model called \"%s\" (configured: %s)\n", model,
                        names[0] ? names : "none");
                ret = 2;
                goto out;
            }
        } else if ((!strcmp(a, "--token-budget") || !strcmp(a, "--timeout")) && more) {
            int budget = !strcmp(a, "--token-budget");
            char *end;
            errno = 0;
            long long v = strtoll(argv[++i], &end, 10);
            long long lo = budget ? 0 : 1, hi = budget ? (long long)cfg->token_budget_max : cfg->task_timeout_s;
            if (errno || *end || v < lo || v > hi) {
                fprintf(stderr, "llmbox run: %s must be %lld..%lld\n", a, lo, hi);
                ret = 2;
                goto out;
            }
            *(budget ? &token_budget : &timeout_s) = v;
        } else if ((!strcmp(a, "--mode") || !strcmp(a, "--layout") || !strcmp(a, "--tool-names") ||
                    !strcmp(a, "--max-tokens") || !strcmp(a, "--mcp")) && more) {
            /* the task options (common/task_opts.h), checked as a stored task's are */
            char name[16], why[300];
            snprintf(name, sizeof name, "%s", a + 2);
            for (char *p = name; *p; p++)
                *p = *p == '-' ? '_' : *p;
            if (lb_task_opts_set(&opts, name, argv[++i], why, sizeof why) != LB_OK) {
                fprintf(stderr, "llmbox run: %s: %s\n", a, why);
                ret = 2;
                goto out;
            }
        } else if (!strcmp(a, "--answer-file")) {
            opts.answer_file = 1;
        } else if (!strcmp(a, "--capture-tokens")) {
            opts.capture_tokens = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            ret = 0;
            goto out;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "llmbox run: unknown or incomplete option '%s'\n\n", a);
            usage(stderr);
            ret = 2;
            goto out;
        } else if (prompt) {
            fprintf(stderr, "llmbox run: give the prompt as one argument (quote it)\n");
            ret = 2;
            goto out;
        } else {
            prompt = !strcmp(a, "-") ? read_stdin() : strdup(a);
            if (!prompt) {
                fprintf(stderr, "llmbox run: cannot read the prompt (at most %u KiB)\n", RUN_PROMPT_MAX >> 10);
                goto out;
            }
        }
    }
    if (!prompt || !*prompt) {
        usage(stderr);
        ret = 2;
        goto out;
    }
    if (opts.mode == LB_RUN_SANDBOX && sandboxd_check(cfg)) /* llm mode needs no sandbox */
        goto out;
    if (opts.mode == LB_RUN_LLM && n_inputs)
        fprintf(stderr, "llmbox run: note: the llm mode has no sandbox, so the input files are not used; put "
                        "what the model must read in the prompt\n");

    /* inputs: copies in a private temp dir, so the sandbox sees a snapshot */
    char input_dir[sizeof E.tmp + 16];
    if (!mkdtemp(tmp)) {
        fprintf(stderr, "llmbox run: cannot create a temporary directory: %s\n", strerror(errno));
        goto out;
    }
    have_tmp = 1;
    E.have_tmp = 1;
    chmod(tmp, 0755);
    snprintf(input_dir, sizeof input_dir, "%s/input", tmp);
    if (mkdir(input_dir, 0755) != 0) {
        fprintf(stderr, "llmbox run: cannot create %s: %s\n", input_dir, strerror(errno));
        goto out;
    }
    for (size_t i = 0; i < n_inputs; i++) {
        struct stat st;
        if (stat(inputs[i], &st) != 0 || !S_ISREG(st.st_mode)) {
            fprintf(stderr, "llmbox run: %s is not a readable file\n", inputs[i]);
            goto out;
        }
        const char *base = strrchr(inputs[i], '/');
        base = base ? base + 1 : inputs[i];
        char dst[PATH_MAX + 300];
        snprintf(dst, sizeof dst, "%s/%s", input_dir, base);
        int rc = copy_file(inputs[i], dst);
        if (rc != LB_OK) {
            fprintf(stderr, "llmbox run: cannot copy %s: %s\n", inputs[i],
                    rc == LB_E_EXISTS ? "two inputs have the same file name" : strerror(errno));
            goto out;
        }
    }

    if (lb_mkdirs(out_arg, 0755) != LB_OK) {
        fprintf(stderr, "llmbox run: cannot create %s: %s\n", out_arg, strerror(errno));
        goto out;
    }
    char *out_dir = E.out_dir;
    if (!realpath(out_arg, out_dir)) {
        fprintf(stderr, "llmbox run: %s: %s\n", out_arg, strerror(errno));
        goto out;
    }
    if (!dir_empty(out_dir))
        fprintf(stderr, "llmbox run: note: %s is not empty; files with the same names will be replaced\n",
                out_dir);
    char *traj_tmp = E.traj_tmp;
    snprintf(traj_tmp, sizeof E.traj_tmp, "%s/trajectory.json", tmp);

    /* the same limits a task of the service would get for these options */
    lb_task_request req = {.max_turns = max_turns, .token_budget = token_budget, .timeout_s = (int)timeout_s};
    lb_task_limits lim;
    lb_task_limits_of(&req, NULL, cfg, &lim);
    char *id = E.id;
    if (lb_random_hex(id, sizeof E.id, LB_ID_HEX_LEN / 2) != LB_OK)
        goto out;
    const lb_model_cfg *mc = lb_cfg_model(cfg, model);
    if (!mc)
        printf("llmbox run: task %s, no model configured\n", id);
    else if (!strcmp(mc->provider, "replay"))
        printf("llmbox run: task %s, replaying %s, up to %d turns, %zu input file(s)\n", id,
               mc->replay_file[0] ? mc->replay_file : "(LLMBOX_REPLAY_FILE not set)", lim.max_turns, n_inputs);
    else
        printf("llmbox run: task %s, model %s (%s %s), up to %d turns, %zu input file(s)\n", id, mc->name,
               mc->provider, mc->model, lim.max_turns, n_inputs);
    fflush(stdout);

    lb_agent_signals_install(&g_cancel, &g_sb_interrupt, &g_timed_out);
    lb_sink sink;
    lb_sink_term_init(&sink, stdout);
    lb_loop_opts o = {
        .cfg = cfg,
        .task_id = id,
        .prompt = prompt,
        .max_turns = lim.max_turns,
        .token_budget = lim.token_budget,
        .timeout_s = lim.timeout_s,
        .model_name = model,
        .on_abort = finish_run,
        .on_abort_arg = &E,
        .input_dir = input_dir,
        .output_dir = out_dir,
        .trajectory_path = traj_tmp,
        .cancel = &g_cancel,
        .sb_interrupt = &g_sb_interrupt,
        .timed_out = &g_timed_out,
        .run_opts = &opts,
    };
    /* the run's outcome is res.status; the status is the sink's finish,
     * and the terminal's cannot fail */
    LB_IGNORE(lb_agent_run(&o, &sink, &res));
    finish_run(&E, &res);
    have_tmp = 0;
    lb_task_status end = lb_task_status_parse(res.status);
    ret = end == LB_TASK_SUCCEEDED ? 0 : end == LB_TASK_CANCELLED ? 130 : 1;
out:
    if (have_tmp)
        LB_IGNORE(lb_rmtree(tmp)); /* a temporary dir left behind costs only disk */
    lb_loop_result_free(&res);
    free(prompt);
    return ret;
}
