/* `llmbox eval`: runs an evaluation on the service and keeps its results
 * in a folder.
 *
 * The service runs the evaluation (its runner admits each row as a task,
 * within the same limits and accounting as people's tasks, and scores it);
 * this command uploads the dataset, shows progress, and writes
 * results.jsonl, summary.json and summary.md into --out as runs finish, so
 * that Ctrl-C, a lost connection or a killed terminal keeps what finished.
 * Run again with the same --out: an evaluation still running is followed
 * again; otherwise a new one starts with the finished lines of
 * results.jsonl handed in as done, so only the rest runs. */
#include "eval/bench_cli.h"
#include "eval/eval_http.h"
#include "eval/eval_pack.h"
#include "eval/eval_progress.h"

#include "common/buf.h"
#include "common/config.h"
#include "common/status.h"
#include "common/util.h"
#include "entry.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EVAL_MAX_ANSWER (256u << 20)   /* results.jsonl of a large run */
#define EVAL_MAX_UPLOAD (1024u << 20)  /* a packed dataset folder */
#define EVAL_POLL_MS 1000
#define EVAL_SAVE_MS 5000              /* results.jsonl fetched at most this often while running */

static volatile sig_atomic_t g_stop;

static void on_sigint(int sig)
{
    (void)sig;
    g_stop = 1;
    signal(SIGINT, SIG_DFL); /* a second Ctrl-C leaves at once */
}

typedef struct eval_opts {
    const char *data, *mode, *model, *out, *layout, *judge, *name, *url, *token;
    const char *repeats, *concurrency, *limit, *max_turns, *timeout_s, *token_budget;
    const char *benchmark;  /* --benchmark DIR: an official benchmark folder (bench_cli.h) */
    const char *upload;     /* what is uploaded when not data: the folder dataset made from the benchmark */
    int print_prompts;      /* --print-prompts: render the benchmark's prompts, run nothing */
    int runner_dirs;        /* --runner-dirs: the runner's default directories (bench_cli.h) */
    cJSON *bench_identity;  /* the benchmark folder and its files' hashes, for the summary */
} eval_opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: llmbox eval --data FILE|DIR --mode sandbox|llm|both [--model NAME] [options]\n"
            "       llmbox eval --benchmark DIR [--data FILE] --mode sandbox|llm|both [options]\n"
            "\n"
            "Runs an evaluation on the running service (make run) and writes results.jsonl,\n"
            "summary.json and summary.md into --out as it goes. See docs/EVAL.md.\n"
            "\n"
            "  --data FILE|DIR      a .jsonl or .json dataset, or a folder (row.json + files per row)\n"
            "  --benchmark DIR      an official benchmark folder (config.yaml, reward.py,\n"
            "                       vanilla_llm_prompt.py): its prompts, directories, tool names\n"
            "                       and scorer; --data gives the rows when it names a published set\n"
            "  --print-prompts      with --benchmark: print each row's rendered prompts, run nothing\n"
            "  --runner-dirs        with --benchmark: the directories runner.py really uses (its\n"
            "                       defaults), not config.yaml's (docs/EVAL.md, \"the gap\")\n"
            "  --mode M             sandbox, llm or both\n"
            "  --model NAME         a model of llmbox.conf (default: the service's default)\n"
            "  --repeats K          run each row K times and average (default 1)\n"
            "  --concurrency N      rows at once (default: the service's)\n"
            "  --limit N            only the first N rows\n"
            "  --layout L           official (/testbed/documents, /testbed/answer.txt; default)\n"
            "                       or llmbox (/testbed/input, /testbed/output/answer.txt)\n"
            "  --judge-model NAME   the model the judge scorer asks\n"
            "  --max-turns N, --timeout S, --token-budget N   per-row task limits\n"
            "  --name TEXT          shown on the page\n"
            "  --out DIR            where results go (default: eval-out); the same DIR resumes\n"
            "  --url URL            the service (default: http://<listen of llmbox.conf>)\n"
            "  --token TOKEN        an API token when the service has users (or LLMBOX_TOKEN)\n");
}

static int parse_args(int argc, char **argv, eval_opts *o)
{
    static const struct option longopts[] = {
        {"data", required_argument, 0, 'd'},        {"mode", required_argument, 0, 'm'},
        {"model", required_argument, 0, 'M'},       {"repeats", required_argument, 0, 'r'},
        {"concurrency", required_argument, 0, 'c'}, {"limit", required_argument, 0, 'l'},
        {"out", required_argument, 0, 'o'},         {"layout", required_argument, 0, 'L'},
        {"judge-model", required_argument, 0, 'j'}, {"name", required_argument, 0, 'n'},
        {"url", required_argument, 0, 'u'},         {"token", required_argument, 0, 't'},
        {"max-turns", required_argument, 0, 'T'},   {"timeout", required_argument, 0, 'S'},
        {"token-budget", required_argument, 0, 'B'}, {"help", no_argument, 0, 'h'},
        {"benchmark", required_argument, 0, 'K'},   {"print-prompts", no_argument, 0, 'P'},
        {"runner-dirs", no_argument, 0, 'D'},
        {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': o->data = optarg; break;
        case 'm': o->mode = optarg; break;
        case 'M': o->model = optarg; break;
        case 'r': o->repeats = optarg; break;
        case 'c': o->concurrency = optarg; break;
        case 'l': o->limit = optarg; break;
        case 'o': o->out = optarg; break;
        case 'L': o->layout = optarg; break;
        case 'j': o->judge = optarg; break;
        case 'n': o->name = optarg; break;
        case 'u': o->url = optarg; break;
        case 't': o->token = optarg; break;
        case 'T': o->max_turns = optarg; break;
        case 'S': o->timeout_s = optarg; break;
        case 'B': o->token_budget = optarg; break;
        case 'K': o->benchmark = optarg; break;
        case 'P': o->print_prompts = 1; break;
        case 'D': o->runner_dirs = 1; break;
        case 'h': usage(stdout); return 1;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "llmbox eval: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    if ((!o->data && !o->benchmark) || !o->mode) {
        fprintf(stderr, "llmbox eval: --data (or --benchmark) and --mode are required (llmbox eval --help)\n");
        return 2;
    }
    if (o->print_prompts && !o->benchmark) {
        fprintf(stderr, "llmbox eval: --print-prompts goes with --benchmark\n");
        return 2;
    }
    if (strcmp(o->mode, "sandbox") && strcmp(o->mode, "llm") && strcmp(o->mode, "both")) {
        fprintf(stderr, "llmbox eval: --mode must be sandbox, llm or both, not \"%s\"\n", o->mode);
        return 2;
    }
    /* numbers are checked here so a typo fails before the upload; the
     * service checks their ranges and says which one is out */
    const char *nums[][2] = {{"--repeats", o->repeats},     {"--concurrency", o->concurrency},
                             {"--limit", o->limit},         {"--max-turns", o->max_turns},
                             {"--timeout", o->timeout_s},   {"--token-budget", o->token_budget}};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        const char *v = nums[i][1];
        if (!v)
            continue;
        char *end;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (errno || end == v || *end || n < 0) {
            fprintf(stderr, "llmbox eval: %s takes a whole number, not \"%s\"\n", nums[i][0], v);
            return 2;
        }
    }
    if (!o->out)
        o->out = "eval-out";
    if (!o->token)
        o->token = getenv("LLMBOX_TOKEN");
    return 0;
}

/* The options that make two runs the same evaluation: a folder resumes
 * only a run of these. */
static cJSON *opts_identity(const eval_opts *o)
{
    cJSON *j = cJSON_CreateObject();
    const char *kv[][2] = {{"data", o->data},         {"mode", o->mode},
                           {"model", o->model},       {"repeats", o->repeats},
                           {"layout", o->layout},     {"judge_model", o->judge},
                           {"limit", o->limit},       {"max_turns", o->max_turns},
                           {"timeout_s", o->timeout_s}, {"token_budget", o->token_budget}};
    for (size_t i = 0; j && i < sizeof kv / sizeof kv[0]; i++)
        if (!cJSON_AddStringToObject(j, kv[i][0], kv[i][1] ? kv[i][1] : "")) {
            cJSON_Delete(j);
            return NULL;
        }
    /* a benchmark folder's files are part of the experiment: other hashes, another evaluation */
    if (j && o->bench_identity && !cJSON_AddItemToObject(j, "benchmark", cJSON_Duplicate(o->bench_identity, 1))) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

static int out_path(const eval_opts *o, const char *name, char *p, size_t psz)
{
    int w = snprintf(p, psz, "%s/%s", o->out, name);
    return w < 0 || (size_t)w >= psz ? LB_E_TOOBIG : LB_OK;
}

static int write_out(const eval_opts *o, const char *name, const void *data, size_t len)
{
    char p[4096];
    int rc = out_path(o, name, p, sizeof p);
    if (rc == LB_OK)
        rc = lb_write_file_atomic(p, data, len, 0644);
    if (rc != LB_OK)
        fprintf(stderr, "llmbox eval: cannot write %s: %s\n", p, lb_strerror(rc));
    return rc;
}

/* The state file: which evaluation this folder follows. */
static int save_state(const eval_opts *o, const lb_eval_http *h, const char *id)
{
    cJSON *j = cJSON_CreateObject();
    cJSON *ident = opts_identity(o);
    if (!j || !ident || !cJSON_AddStringToObject(j, "id", id) || !cJSON_AddStringToObject(j, "url", h->base) ||
        !cJSON_AddItemToObject(j, "options", ident)) {
        cJSON_Delete(j);
        cJSON_Delete(ident);
        return LB_E_NOMEM;
    }
    char *s = cJSON_Print(j);
    cJSON_Delete(j);
    if (!s)
        return LB_E_NOMEM;
    int rc = write_out(o, "eval.json", s, strlen(s));
    free(s);
    return rc;
}

/* The evaluation a previous run in this folder started, when it is of the
 * same options; *mismatch when the folder holds another evaluation's. */
static int load_state(const eval_opts *o, char id[64], int *mismatch)
{
    char p[4096], *data = NULL;
    size_t len = 0;
    *mismatch = 0;
    id[0] = '\0';
    if (out_path(o, "eval.json", p, sizeof p) != LB_OK || lb_read_file(p, 1u << 20, &data, &len) != LB_OK)
        return LB_E_NOTFOUND;
    cJSON *j = cJSON_ParseWithLength(data, len);
    free(data);
    const cJSON *jid = cJSON_GetObjectItemCaseSensitive(j, "id");
    cJSON *ident = opts_identity(o);
    const cJSON *was = cJSON_GetObjectItemCaseSensitive(j, "options");
    int rc = LB_E_NOTFOUND;
    if (cJSON_IsString(jid) && strlen(jid->valuestring) < 64 && ident) {
        if (!was || !cJSON_Compare(was, ident, 1))
            *mismatch = 1;
        else {
            snprintf(id, 64, "%s", jid->valuestring);
            rc = LB_OK;
        }
    }
    cJSON_Delete(ident);
    cJSON_Delete(j);
    return rc;
}

static int64_t json_int(const cJSON *o, const char *k, int64_t dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : dflt;
}

/* POST /api/evals: the dataset, the options and, when the folder has one,
 * the finished results to keep. id gets the new evaluation's id. */
static int start_eval(lb_eval_http *h, const eval_opts *o, char id[64])
{
    lb_eval_part parts[16];
    size_t n = 0;
    lb_buf packed, ans;
    lb_buf_init(&packed, EVAL_MAX_UPLOAD);
    lb_buf_init(&ans, 4u << 20);
    char err[512] = "", resume[4096];
    int rc = LB_OK;
    struct stat st;
    const char *data = o->upload ? o->upload : o->data;
    if (stat(data, &st) != 0) {
        fprintf(stderr, "llmbox eval: %s: %s\n", data, strerror(errno));
        return LB_E_NOTFOUND;
    }
    if (S_ISDIR(st.st_mode)) {
        if ((rc = lb_eval_pack_dir(data, &packed, err, sizeof err)) != LB_OK) {
            fprintf(stderr, "llmbox eval: %s\n", err);
            lb_buf_free(&packed);
            return rc;
        }
        parts[n++] = (lb_eval_part){.name = "dataset", .data = packed.data, .data_len = packed.len,
                                    .filename = "dataset.tar.gz"};
    } else
        parts[n++] = (lb_eval_part){.name = "dataset", .path = data};
    const char *kv[][2] = {{"mode", o->mode},           {"model", o->model},
                           {"repeats", o->repeats},     {"concurrency", o->concurrency},
                           {"limit", o->limit},         {"layout", o->layout},
                           {"judge_model", o->judge},   {"name", o->name},
                           {"max_turns", o->max_turns}, {"timeout_s", o->timeout_s},
                           {"token_budget", o->token_budget}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (kv[i][1])
            parts[n++] = (lb_eval_part){.name = kv[i][0], .value = kv[i][1]};
    if (out_path(o, "results.jsonl", resume, sizeof resume) == LB_OK && stat(resume, &st) == 0 && st.st_size > 0) {
        parts[n++] = (lb_eval_part){.name = "resume", .path = resume};
        fprintf(stderr, "llmbox eval: resuming: finished runs in %s are kept, the rest runs\n", resume);
    }
    long status = 0;
    rc = lb_eval_http_post(h, "/api/evals", parts, n, &ans, &status, err, sizeof err);
    lb_buf_free(&packed);
    if (rc != LB_OK) {
        fprintf(stderr, "llmbox eval: cannot reach the service: %s%s\n", err,
                rc == LB_E_UNAVAILABLE ? " (is it running? make run)" : "");
        lb_buf_free(&ans);
        return rc;
    }
    if (status != 201) {
        lb_eval_http_error_text(&ans, status, err, sizeof err);
        fprintf(stderr, "llmbox eval: the service refused the evaluation: %s\n", err);
        if (status == 401)
            fprintf(stderr, "llmbox eval: this service has users: give an API token (--token or LLMBOX_TOKEN)\n");
        lb_buf_free(&ans);
        return status == 401 || status == 403 ? LB_E_DENIED : LB_E_INVAL;
    }
    cJSON *j = cJSON_ParseWithLength(ans.data, ans.len);
    const cJSON *jid = cJSON_GetObjectItemCaseSensitive(j, "id");
    if (!cJSON_IsString(jid) || strlen(jid->valuestring) >= 64) {
        fprintf(stderr, "llmbox eval: the service's answer has no evaluation id\n");
        rc = LB_E_PROTO;
    } else {
        snprintf(id, 64, "%s", jid->valuestring);
        const cJSON *errs = cJSON_GetObjectItemCaseSensitive(j, "row_errors");
        fprintf(stderr, "llmbox eval: evaluation %s: %lld rows, %lld runs\n", id, (long long)json_int(j, "rows", 0),
                (long long)json_int(j, "runs", 0));
        const cJSON *e;
        int shown = 0;
        cJSON_ArrayForEach(e, errs)
        {
            char *s = cJSON_PrintUnformatted(e);
            if (shown++ < 20)
                fprintf(stderr, "llmbox eval: row cannot run: %s\n", s ? s : "?");
            free(s);
        }
        if (shown > 20)
            fprintf(stderr, "llmbox eval: ... and %d more rows that cannot run (see results.jsonl)\n", shown - 20);
    }
    cJSON_Delete(j);
    lb_buf_free(&ans);
    return rc;
}

/* Fetches the evaluation's results.jsonl into the folder. */
static int save_results(lb_eval_http *h, const eval_opts *o, const char *id)
{
    char path[128], err[512];
    snprintf(path, sizeof path, "/api/evals/%s/results.jsonl", id);
    lb_buf b;
    lb_buf_init(&b, EVAL_MAX_ANSWER);
    long status = 0;
    int rc = lb_eval_http_get(h, path, &b, &status, err, sizeof err);
    if (rc == LB_OK && status != 200) {
        lb_eval_http_error_text(&b, status, err, sizeof err);
        rc = LB_E_PROTO;
    }
    if (rc == LB_OK)
        rc = write_out(o, "results.jsonl", b.data ? b.data : "", b.len);
    else
        fprintf(stderr, "llmbox eval: cannot fetch the results: %s\n", err);
    lb_buf_free(&b);
    return rc;
}

/* summary.json (from the evaluation) and summary.md, printed too. */
static int save_summary(lb_eval_http *h, const eval_opts *o, const char *id, const cJSON *ev)
{
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(ev, "summary");
    cJSON *own = sum && o->bench_identity ? cJSON_Duplicate(sum, 1) : NULL;
    if (own)
        cJSON_AddItemToObject(own, "benchmark", cJSON_Duplicate(o->bench_identity, 1));
    char *s = own ? cJSON_Print(own) : sum ? cJSON_Print(sum) : NULL;
    cJSON_Delete(own);
    int rc = s ? write_out(o, "summary.json", s, strlen(s)) : LB_E_PROTO;
    free(s);
    char path[128], err[512];
    snprintf(path, sizeof path, "/api/evals/%s/summary.md", id);
    lb_buf b;
    lb_buf_init(&b, 16u << 20);
    long status = 0;
    int rc2 = lb_eval_http_get(h, path, &b, &status, err, sizeof err);
    if (rc2 == LB_OK && status == 200 && o->bench_identity) {
        /* the experiment: which folder, which files (their SHA-256) */
        /* the buffer's cap only cuts the table short: summary.md is still written */
        LB_IGNORE(lb_buf_printf(&b, "\n## Benchmark folder\n\n%s (%s)\n\n| file | sha256 |\n| --- | --- |\n",
                      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o->bench_identity, "folder")),
                      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o->bench_identity, "path"))));
        const cJSON *f;
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(o->bench_identity, "files"))
            LB_IGNORE(lb_buf_printf(&b, "| %s | %s |\n", f->string, cJSON_GetStringValue(f))); /* as above */
    }
    if (rc2 == LB_OK && status == 200) {
        rc2 = write_out(o, "summary.md", b.data ? b.data : "", b.len);
        if (b.data)
            fputs(b.data, stdout);
    } else if (rc2 == LB_OK) {
        lb_eval_http_error_text(&b, status, err, sizeof err);
        fprintf(stderr, "llmbox eval: no summary.md: %s\n", err);
        rc2 = LB_E_PROTO;
    }
    lb_buf_free(&b);
    return rc != LB_OK ? rc : rc2;
}

static int is_final(const char *st)
{
    return !strcmp(st, "succeeded") || !strcmp(st, "failed") || !strcmp(st, "cancelled");
}

/* Follows evaluation id until it ends (or Ctrl-C cancels it); keeps the
 * results in the folder as it goes. The exit status of the command. */
static int follow(lb_eval_http *h, const eval_opts *o, const char *id)
{
    char path[160], err[512], status_s[32] = "";
    snprintf(path, sizeof path, "/api/evals/%s?limit=1", id);
    lb_eval_progress_out po = {.f = stderr, .tty = isatty(2)};
    lb_buf b;
    lb_buf_init(&b, 64u << 20);
    int64_t last_save = 0, saved_done = -1;
    int cancelled_by_us = 0, failures = 0;
    cJSON *ev = NULL;
    for (;;) {
        long status = 0;
        int rc = lb_eval_http_get(h, path, &b, &status, err, sizeof err);
        if (rc != LB_OK || status != 200) {
            if (rc == LB_OK)
                lb_eval_http_error_text(&b, status, err, sizeof err);
            /* a restarting service comes back; a minute of failures is not
             * that; a 4xx will not change by asking again; a 5xx or no answer may */
            if (++failures >= 60 || (status >= 400 && status < 500)) {
                lb_eval_progress_end(&po);
                fprintf(stderr, "llmbox eval: lost the evaluation: %s\n", err);
                lb_buf_free(&b);
                return 1;
            }
            sleep(1);
            continue;
        }
        failures = 0;
        cJSON_Delete(ev);
        ev = cJSON_ParseWithLength(b.data, b.len);
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(ev, "status");
        const cJSON *pr = cJSON_GetObjectItemCaseSensitive(ev, "progress");
        if (!cJSON_IsString(st) || !cJSON_IsObject(pr)) {
            lb_eval_progress_end(&po);
            fprintf(stderr, "llmbox eval: the service's answer about %s is not an evaluation\n", id);
            break;
        }
        snprintf(status_s, sizeof status_s, "%s", st->valuestring);
        lb_eval_progress p = {.total = json_int(pr, "total", 0),     .done = json_int(pr, "done", 0),
                              .running = json_int(pr, "running", 0), .scoring = json_int(pr, "scoring", 0),
                              .pending = json_int(pr, "pending", 0), .failed = json_int(pr, "failed", 0),
                              .error = json_int(pr, "error", 0),     .eta_s = json_int(ev, "eta_s", -1)};
        int64_t now = lb_mono_ms();
        lb_eval_progress_show(&po, &p, now);
        int final = is_final(status_s);
        if (final || (p.done != saved_done && now - last_save >= EVAL_SAVE_MS)) {
            if (save_results(h, o, id) == LB_OK)
                saved_done = p.done;
            last_save = now;
        }
        if (final)
            break;
        if (g_stop && !cancelled_by_us) {
            lb_eval_progress_end(&po);
            fprintf(stderr, "llmbox eval: stopping: the runs in progress are cancelled, finished ones kept "
                            "(Ctrl-C again to leave at once)\n");
            char cpath[160];
            snprintf(cpath, sizeof cpath, "/api/evals/%s/cancel", id);
            lb_buf cb;
            lb_buf_init(&cb, 1u << 20);
            long cst = 0;
            if (lb_eval_http_post(h, cpath, NULL, 0, &cb, &cst, err, sizeof err) != LB_OK || cst >= 300) {
                if (cst >= 300)
                    lb_eval_http_error_text(&cb, cst, err, sizeof err);
                fprintf(stderr, "llmbox eval: could not cancel %s: %s\n", id, err);
                lb_buf_free(&cb);
                break;
            }
            lb_buf_free(&cb);
            cancelled_by_us = 1;
        }
        usleep(EVAL_POLL_MS * 1000);
    }
    lb_eval_progress_end(&po);
    int code = 1;
    if (!strcmp(status_s, "succeeded")) {
        code = save_summary(h, o, id, ev) == LB_OK ? 0 : 1;
        fprintf(stderr, "llmbox eval: done: results in %s/ (results.jsonl, summary.json, summary.md)\n", o->out);
    } else if (!strcmp(status_s, "cancelled")) {
        LB_IGNORE(save_summary(h, o, id, ev)); /* a cancelled run's summary is of what finished: a bonus */
        fprintf(stderr,
                "llmbox eval: stopped; the finished runs are in %s/results.jsonl. Run the same command again "
                "to go on with the rest.\n",
                o->out);
        code = cancelled_by_us ? 130 : 1;
    } else if (!strcmp(status_s, "failed")) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(ev, "error");
        fprintf(stderr, "llmbox eval: the evaluation failed: %s\n",
                cJSON_IsString(e) ? e->valuestring : "(no reason given)");
    }
    cJSON_Delete(ev);
    lb_buf_free(&b);
    return code;
}

int lb_eval_main(int argc, char **argv)
{
    eval_opts o = {0};
    int prc = parse_args(argc, argv, &o);
    if (prc)
        return prc == 1 ? 0 : 2;
    char url[600];
    if (o.url)
        snprintf(url, sizeof url, "%s", o.url);
    else
        snprintf(url, sizeof url, "http://%s", lb_cfg()->listen);
    if (!o.print_prompts && lb_mkdirs(o.out, 0755) != LB_OK) {
        fprintf(stderr, "llmbox eval: cannot make %s: %s\n", o.out, strerror(errno));
        return 1;
    }
    lb_bench_prep bp;
    memset(&bp, 0, sizeof bp);
    if (o.benchmark) {
        /* the folder's Python runs in a sandbox of this host's sandboxd
         * before anything is uploaded, so no model is called for a folder
         * that cannot be scored */
        const lb_config *cfg = lb_cfg();
        /* the official CLI's temperature: LLM_TEMPERATURE, else 1.0 */
        const char *te = getenv("LLM_TEMPERATURE");
        char *tend = NULL;
        double temp = te && *te ? strtod(te, &tend) : 1.0;
        if (te && *te && (!tend || *tend || !(temp >= 0 && temp <= 2))) {
            fprintf(stderr, "llmbox eval: LLM_TEMPERATURE must be a number from 0 to 2, not \"%s\"\n", te);
            return 2;
        }
        lb_bench_opts bo = {.dir = o.benchmark, .data = o.data, .mode = o.mode, .work = o.out,
                            .print_prompts = o.print_prompts, .runner_dirs = o.runner_dirs, .temperature = temp,
                            .box = {.socket = cfg->sandboxd_socket,
                                    .image = cfg->default_image[0] ? cfg->default_image : "default",
                                    .memory_mib = cfg->sandbox_memory_mib > 0 && cfg->sandbox_memory_mib < 1024
                                                      ? cfg->sandbox_memory_mib : 1024,
                                    .pids = 64, .timeout_s = 120}};
        char berr[1200] = "";
        if (lb_bench_prepare(&bo, &bp, berr, sizeof berr) != LB_OK) {
            fprintf(stderr, "llmbox eval: %s\n", berr);
            return 1;
        }
        if (o.print_prompts) {
            lb_bench_prep_free(&bp);
            return 0;
        }
        o.data = o.benchmark;
        o.upload = bp.dataset;
        o.bench_identity = bp.identity;
        if (!o.name)
            o.name = bp.name;
        if (!o.layout)
            o.layout = "official";
        if (!o.max_turns)
            o.max_turns = "100"; /* the official CLI's max_steps */
    }
    lb_eval_http h;
    if (lb_eval_http_init(&h, url, o.token) != LB_OK) {
        fprintf(stderr, "llmbox eval: bad --url or --token\n");
        return 2;
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    char id[64] = "";
    int mismatch = 0;
    int code = 1;
    if (load_state(&o, id, &mismatch) == LB_OK) {
        /* still running on the service: follow it rather than start twice */
        char path[160], err[256];
        snprintf(path, sizeof path, "/api/evals/%s?limit=1", id);
        lb_buf b;
        lb_buf_init(&b, 64u << 20);
        long st = 0;
        int alive = 0;
        if (lb_eval_http_get(&h, path, &b, &st, err, sizeof err) == LB_OK && st == 200) {
            cJSON *j = cJSON_ParseWithLength(b.data, b.len);
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "status");
            alive = cJSON_IsString(s) && !is_final(s->valuestring);
            cJSON_Delete(j);
        }
        lb_buf_free(&b);
        if (alive)
            fprintf(stderr, "llmbox eval: following evaluation %s, still running on the service\n", id);
        else
            id[0] = '\0';
    } else if (mismatch) {
        fprintf(stderr,
                "llmbox eval: %s holds the results of an evaluation with other options (see %s/eval.json); "
                "give another --out, or the same options to go on with it\n",
                o.out, o.out);
        lb_eval_http_free(&h);
        lb_bench_prep_free(&bp);
        return 2;
    }
    if (!id[0]) {
        if (start_eval(&h, &o, id) != LB_OK || save_state(&o, &h, id) != LB_OK) {
            lb_eval_http_free(&h);
            lb_bench_prep_free(&bp);
            return 1;
        }
    }
    code = follow(&h, &o, id);
    lb_eval_http_free(&h);
    lb_bench_prep_free(&bp);
    return code;
}
