/* The evaluations' runner; the contract is eval_runner.h.
 *
 * Why polling: a run's task ends in an agent process (another process
 * writes the store), so there is no in-process event to wait on that
 * covers every way a task ends (the agent, the reaper, the orphan scan,
 * a cancel, a previous web process). The runner looks every
 * LB_EVAL_POLL_MS and is woken at once by a new eval or a cancel. A look
 * costs one small query per active eval; at 250 ms that is nothing next to
 * a task, which lasts seconds at least, and a run's end is noticed within
 * a quarter second, well below the 200 ms a fake model's turn takes plus
 * the agent's start.
 *
 * Scoring runs on the score pool's threads (jobs/score_pool.h), so a slow
 * scorer (a judge model, a script in a sandbox) never holds up the
 * scheduling of other runs.
 *
 * Job sources: the same thread schedules other kinds of work made of
 * tasks (rollout groups, jobs/rollout_runner.c) through lb_runner_add_source,
 * each look starting at the next source in turn, so no kind of work
 * takes every free slot first tick after tick. */
#include "jobs/eval_runner.h"

#include "common/blob_eval.h" /* several nodes */
#include "common/blob_task.h" /* several nodes */
#include "common/buf.h"
#include "common/log.h"
#include "common/path.h"
#include "common/status.h"
#include "common/task.h"
#include "common/util.h"
#include "eval/capability.h"
#include "eval/dataset.h"
#include "eval/result.h"
#include "eval/summary.h"
#include "store/store.h"
#include "store/store_eval.h"
#include "web/admission.h"
#include "jobs/eval_prompt.h"
#include "jobs/runner.h"
#include "jobs/score_pool.h"
#include "web/spawn.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LB_EVAL_POLL_MS 250
#define LB_EVAL_CACHE 32              /* datasets kept loaded (one per active eval) */
#define LB_EVAL_TRAJ_MAX (64u << 20)  /* a trajectory read to count capabilities */
#define LB_EVAL_ANSWER_MAX (64u << 10) /* an answer as scored and stored (the agent's cap) */

static const lb_config *lb_er_cfg;
static pthread_mutex_t lb_er_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lb_er_wake = PTHREAD_COND_INITIALIZER;
static int lb_er_woken;
/* several nodes: the evals this web drives (runner thread only) */
static lb_runner_held lb_er_held = {.kind = LB_RUNNER_EVALS};
/* several nodes: a stop asked (lb_eval_runner_stop), and done: under lb_er_mu */
static int lb_er_stop, lb_er_stopped;

/* ---- options ---- */

static int opt_int(const cJSON *o, const char *k, long long lo, long long hi, long long def, long long *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v || cJSON_IsNull(v)) {
        *out = def;
        return LB_OK;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble < (double)lo || v->valuedouble > (double)hi)
        return LB_E_INVAL;
    *out = (long long)v->valuedouble;
    return LB_OK;
}

static int opt_str(const cJSON *o, const char *k, char *out, size_t outsz)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    out[0] = '\0';
    if (!v || cJSON_IsNull(v))
        return LB_OK;
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= outsz)
        return LB_E_INVAL;
    snprintf(out, outsz, "%s", v->valuestring);
    return LB_OK;
}

int lb_eval_opts_parse(const char *json, lb_eval_opts *o)
{
    memset(o, 0, sizeof *o);
    cJSON *j = json ? cJSON_Parse(json) : NULL;
    int rc = LB_E_INVAL;
    char mode[16];
    long long v;
    if (!cJSON_IsObject(j) || opt_str(j, "mode", mode, sizeof mode) != LB_OK)
        goto out;
    o->llm = !strcmp(mode, "llm") || !strcmp(mode, "both");
    o->sandbox = !strcmp(mode, "sandbox") || !strcmp(mode, "both");
    if (!o->llm && !o->sandbox)
        goto out;
    if (opt_str(j, "model", o->model, sizeof o->model) || opt_str(j, "layout", o->layout, sizeof o->layout) ||
        opt_str(j, "judge_model", o->judge_model, sizeof o->judge_model) ||
        opt_str(j, "network", o->network, sizeof o->network) || opt_str(j, "image", o->image, sizeof o->image))
        goto out;
    if (!o->layout[0])
        snprintf(o->layout, sizeof o->layout, "official");
    if (opt_int(j, "repeats", 1, 64, 1, &v))
        goto out;
    o->repeats = (int)v;
    if (opt_int(j, "concurrency", 1, 4096, 1, &v))
        goto out;
    o->concurrency = (int)v;
    if (opt_int(j, "limit", 0, 100000000, 0, &v))
        goto out;
    o->limit = (int)v;
    if (opt_int(j, "max_turns", 0, 100000, 0, &v))
        goto out;
    o->max_turns = (int)v;
    if (opt_int(j, "token_budget", -1, 1000000000, -1, &v))
        goto out;
    o->token_budget = v;
    if (opt_int(j, "timeout_s", 0, 7 * 86400, 0, &v))
        goto out;
    o->timeout_s = (int)v;
    if (opt_int(j, "max_tokens", 0, 10000000, 0, &v))
        goto out;
    o->max_tokens = v;
    if (opt_int(j, "judge_votes", 1, 9, 1, &v))
        goto out;
    o->judge_votes = (int)v;
    rc = LB_OK;
out:
    cJSON_Delete(j);
    return rc;
}

int lb_eval_reserve_slots(int configured, int max_tasks)
{
    int r = configured >= 0 ? configured : (max_tasks / 4 > 2 ? max_tasks / 4 : 2);
    if (r > max_tasks - 1)
        r = max_tasks - 1;
    return r < 0 ? 0 : r;
}

void lb_eval_dir(const lb_config *cfg, const char *id, char *out, size_t outsz)
{
    /* next to the database, as the agents' logs: the one folder of var/
     * the service user owns (scripts/prepare-dirs.sh) */
    const char *db = cfg->db_path;
    const char *slash = strrchr(db, '/');
    int n = slash ? (int)(slash - db) : 0;
    snprintf(out, outsz, "%.*s/evals/%s", n, slash ? db : ".", id);
}

void lb_eval_runner_wake(void)
{
    pthread_mutex_lock(&lb_er_mu);
    lb_er_woken = 1;
    pthread_cond_broadcast(&lb_er_wake);
    pthread_mutex_unlock(&lb_er_mu);
}

/* ---- loaded datasets, one per active eval (runner thread only) ---- */

typedef struct lb_er_ds {
    char id[33];
    lb_eval_dataset d;
    lb_eval_opts o;
    int seen;                  /* active in this tick */
} lb_er_ds;

static lb_er_ds lb_er_cache[LB_EVAL_CACHE];
static int lb_er_ncache;

static void ds_drop(int i)
{
    lb_eval_dataset_free(&lb_er_cache[i].d);
    lb_er_cache[i] = lb_er_cache[--lb_er_ncache];
    memset(&lb_er_cache[lb_er_ncache], 0, sizeof lb_er_cache[0]);
}

/* several nodes: evals whose dataset waits for the object store (runner thread
 * only): said once in the log, tried again at a look at most every
 * LB_EVAL_STORE_RETRY_MS (a store that hangs holds the runner up to its
 * timeout at each try). */
#define LB_EVAL_STORE_RETRY_MS 2000
typedef struct lb_er_wait {
    char id[33];
    int64_t next_ms;
} lb_er_wait;
static lb_er_wait lb_er_waits[LB_EVAL_CACHE];
static int lb_er_nwaits;

static lb_er_wait *wait_find(const char *id)
{
    for (int i = 0; i < lb_er_nwaits; i++)
        if (!strcmp(lb_er_waits[i].id, id))
            return &lb_er_waits[i];
    return NULL;
}

static void wait_drop(const char *id)
{
    lb_er_wait *w = wait_find(id);
    if (w)
        *w = lb_er_waits[--lb_er_nwaits];
}

/* The eval's dataset path on this web: the part of the stored path after
 * "/evals/<id>/" (the uploading web's folder, maybe on another host) in
 * this web's own folder of the eval; the stored path as it is when it has
 * no such part. */
static void dataset_here(const lb_eval_rec *e, char *out, size_t outsz)
{
    char dir[LB_CFG_PATH + 64], pat[48], clean[LB_PATH_MAX + 1];
    const char *ds = e->dataset ? e->dataset : "";
    snprintf(pat, sizeof pat, "/evals/%s/", e->id);
    const char *p = strstr(ds, pat);
    snprintf(out, outsz, "%s", ds);
    if (!p)
        return;
    p += strlen(pat);
    lb_eval_dir(lb_er_cfg, e->id, dir, sizeof dir);
    if (lb_path_clean_rel(p, strlen(p), clean, sizeof clean) == LB_OK && lb_path_join(out, outsz, dir, clean) != LB_OK)
        snprintf(out, outsz, "%s", ds);
}

/* Makes the eval's dataset present in its folder here (several nodes: fetched
 * from the object store when missing or of another size). LB_OK: load
 * path. LB_E_UNAVAILABLE: the store cannot be read now (said once; the eval
 * waits). Else err says why the eval cannot run. */
static int ds_fetch(const lb_eval_rec *e, const char *path, char *err, size_t errsz)
{
    char dir[LB_CFG_PATH + 64], why[600];
    struct stat st;
    lb_er_wait *w = wait_find(e->id);
    int64_t now = lb_now_ms();
    if (w && now < w->next_ms)
        return LB_E_UNAVAILABLE;
    lb_eval_dir(lb_er_cfg, e->id, dir, sizeof dir);
    int n = 0, rc = lb_blob_eval_fetch(lb_er_cfg, e->id, dir, &n, why, sizeof why);
    int here = lstat(path, &st) == 0;
    if (rc == LB_OK || (rc == LB_E_NOTFOUND && here)) {
        /* NOTFOUND with a copy here: an eval uploaded without a bucket */
        if (w)
            lb_info("eval %s: the object store answers again; the evaluation goes on", e->id);
        if (n)
            lb_info("eval %s: fetched %d file%s of its dataset from the object store", e->id, n, n == 1 ? "" : "s");
        wait_drop(e->id);
        return LB_OK;
    }
    if (rc == LB_E_NOTFOUND || rc == LB_E_PROTO || rc == LB_E_TOOBIG || rc == LB_E_INVAL) {
        wait_drop(e->id);
        if (rc == LB_E_NOTFOUND)
            snprintf(err, errsz, "the dataset cannot be read any more: it is neither in this web's folder (%.300s) nor "
                     "in the object store", dir);
        else
            snprintf(err, errsz, "the dataset cannot be fetched from the object store: %.480s", why);
        return rc;
    }
    /* the store cannot be read now: a copy here may be one an earlier
     * fetch left half made, so nothing is loaded until the store answers */
    if (!w) {
        if (lb_er_nwaits == LB_EVAL_CACHE)
            lb_er_nwaits--; /* full (evals waiting, then let go): the last one's line is said again */
        w = &lb_er_waits[lb_er_nwaits++];
        snprintf(w->id, sizeof w->id, "%s", e->id);
        lb_warn("eval %s: its dataset cannot be fetched from the object store: %s; the evaluation waits and "
                "tries again every %d s", e->id, why, LB_EVAL_STORE_RETRY_MS / 1000);
    }
    w->next_ms = now + LB_EVAL_STORE_RETRY_MS;
    return LB_E_UNAVAILABLE;
}

/* The eval's dataset and options, loaded once. NULL with err set when
 * they cannot be (the eval then fails with that reason), or when the
 * cache is full or the object store is away (err "": tried again next
 * tick). */
static lb_er_ds *ds_get(const lb_eval_rec *e, char *err, size_t errsz)
{
    err[0] = '\0';
    for (int i = 0; i < lb_er_ncache; i++)
        if (!strcmp(lb_er_cache[i].id, e->id))
            return &lb_er_cache[i];
    if (lb_er_ncache == LB_EVAL_CACHE)
        return NULL; /* later evals wait for a place: they run after the first ones end */
    lb_er_ds *c = &lb_er_cache[lb_er_ncache];
    memset(c, 0, sizeof *c);
    if (lb_eval_opts_parse(e->options_json, &c->o) != LB_OK) {
        snprintf(err, errsz, "the eval's stored options are damaged");
        return NULL;
    }
    char path[LB_CFG_PATH + LB_PATH_MAX + 100];
    dataset_here(e, path, sizeof path);
    int frc = ds_fetch(e, path, err, errsz);
    if (frc != LB_OK) {
        if (frc == LB_E_UNAVAILABLE)
            err[0] = '\0';
        return NULL;
    }
    lb_eval_limits lim;
    lb_eval_limits_for(lb_er_cfg, &lim);
    char why[512];
    if (lb_eval_dataset_load(path, &lim, &c->d, why, sizeof why) != LB_OK) {
        snprintf(err, errsz, "the dataset cannot be read any more: %s", why);
        return NULL;
    }
    snprintf(c->id, sizeof c->id, "%s", e->id);
    lb_er_ncache++;
    return c;
}

void lb_eval_limits_for(const lb_config *cfg, lb_eval_limits *lim)
{
    lb_eval_limits_default(lim);
    lim->max_rows = (size_t)cfg->eval_max_rows;
    if (lim->max_total_bytes > cfg->eval_max_upload_bytes)
        lim->max_total_bytes = cfg->eval_max_upload_bytes;
}

/* ---- the scorer threads ---- */

typedef struct lb_er_job {
    struct lb_er_job *next;
    int64_t rid;
    char eval_id[33], task_id[33], mode[8];
    int repeat;
    char *row_id, *domain, *scorer, *gt_json, *row_json, *script;
    char *image;                /* the row's own image, shown in its result; NULL: the evaluation's */
    char judge_model[LB_CFG_MODEL_NAME];
    int judge_votes;
    lb_runner_fence fence;      /* several nodes: the claim the run was queued under */
} lb_er_job;

static void job_free(lb_er_job *j)
{
    if (!j)
        return;
    free(j->row_id);
    free(j->domain);
    free(j->scorer);
    free(j->gt_json);
    free(j->row_json);
    free(j->script);
    free(j->image);
    free(j);
}

/* Reads the task's trajectory and counts its capabilities: 1 when it
 * could, 0 when there is none or it does not read (the result then has
 * no capabilities, and the summary leaves the run out of their rates). */
static int count_capabilities(const char *task_id, lb_capability_counts *c)
{
    memset(c, 0, sizeof *c);
    char path[LB_CFG_PATH + 80], why[600];
    /* several nodes: a run another host ran (none anywhere: no capabilities) */
    if (lb_blob_task_fetch_record(lb_er_cfg, task_id, "trajectory.json", why, sizeof why) != LB_OK)
        return 0;
    snprintf(path, sizeof path, "%s/%s/trajectory.json", lb_er_cfg->artifacts_dir, task_id);
    char *text = NULL;
    size_t len = 0;
    if (lb_read_file(path, LB_EVAL_TRAJ_MAX, &text, &len) != LB_OK)
        return 0;
    int ok = lb_capability_count_trajectory(text, len, c) == LB_OK;
    if (!ok)
        memset(c, 0, sizeof *c);
    free(text);
    /* a task that ran with network rules: its gateway's record says what
     * it really fetched (written by the agent at each round's end); none,
     * or one that does not read, leaves the patterns' count alone */
    snprintf(path, sizeof path, "%s/%s/network.json", lb_er_cfg->artifacts_dir, task_id);
    text = NULL;
    if (ok && lb_read_file(path, LB_EVAL_TRAJ_MAX, &text, &len) == LB_OK &&
        lb_capability_count_network(text, len, c) != LB_OK)
        lb_warn("task %s: network.json is not a network record; its traffic is not counted", task_id);
    free(text);
    return ok;
}

static int64_t usage_num(const cJSON *u, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(u, k);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 ? (int64_t)v->valuedouble : 0;
}

/* The error class of a task that did not succeed, from its status and
 * reason (the agent's and the reaper's sentences, common/task.h). */
static const char *failed_class(const lb_task *t)
{
    if (t->status == LB_TASK_CANCELLED)
        return "cancelled";
    const char *r = t->reason ? t->reason : "";
    if (strstr(r, "time limit") || strstr(r, "timed out") || strstr(r, "timeout"))
        return "timeout";
    if (strstr(r, "token budget"))
        return "token_budget";
    if (strstr(r, "max_turns") || strstr(r, "turns"))
        return "max_turns";
    if (strstr(r, "context"))
        return "context_length";
    return "task_failed";
}

/* Scores one run whose task has ended and stores its result line. */
static void score_one(lb_store *s, lb_er_job *j)
{
    lb_task t;
    memset(&t, 0, sizeof t);
    lb_eval_result res;
    memset(&res, 0, sizeof res);
    char scorer[64], error_class[64] = "";
    char *detail = NULL;
    snprintf(scorer, sizeof scorer, "%s", j->scorer ? j->scorer : "");
    res.id = j->row_id;
    res.domain = j->domain;
    res.mode = j->mode;
    res.repeat = j->repeat;
    res.score = -1;
    res.ground_truth_json = j->gt_json;
    res.task_id = j->task_id;
    res.image = j->image;
    int rc = lb_store_task_load(s, j->task_id, &t);
    if (rc != LB_OK) {
        res.status = "error";
        res.error = rc == LB_E_NOTFOUND ? "the run's task was deleted before it was scored"
                                        : "the run's task could not be read";
        snprintf(error_class, sizeof error_class, "task_missing");
    } else {
        cJSON *u = t.usage_json ? cJSON_Parse(t.usage_json) : NULL;
        res.turns = t.turns;
        res.prompt_tokens = t.prompt_tokens;
        res.completion_tokens = t.completion_tokens;
        res.env_tokens = usage_num(u, "environment_tokens");
        res.model_ms = usage_num(u, "model_ms");
        res.tool_ms = usage_num(u, "tools_ms");
        res.context_tokens = usage_num(u, "context_tokens");
        cJSON_Delete(u);
        res.wall_ms = t.finished_ms > 0 && t.created_ms > 0 ? t.finished_ms - t.created_ms : 0;
        /* Appendix D counts sandbox runs: an llm-mode run has no actions */
        if (!strcmp(j->mode, "sandbox"))
            res.has_capabilities = count_capabilities(j->task_id, &res.capabilities);
        char *answer = t.answer ? t.answer : "";
        if (strlen(answer) > LB_EVAL_ANSWER_MAX)
            answer[LB_EVAL_ANSWER_MAX] = '\0'; /* the agent caps it already; a stored one never grows past */
        res.answer = answer;
        if (t.status != LB_TASK_SUCCEEDED) {
            res.status = "failed";
            res.score = 0; /* counted: the model did not answer in its limits */
            res.error = t.reason ? t.reason : "the task did not succeed";
            snprintf(error_class, sizeof error_class, "%s", failed_class(&t));
        } else {
            double score = -1;
            /* a scorer that names an error class (judge down, scorer crashed
             * or timed out, a bad request) gave no score, whatever number
             * it printed: an error line, never a zero in disguise */
            char dir[LB_CFG_PATH + 64], req_path[LB_CFG_PATH + 128];
            lb_eval_dir(lb_er_cfg, j->eval_id, dir, sizeof dir);
            snprintf(req_path, sizeof req_path, "%s/score-%lld.json", dir, (long long)j->rid);
            lb_score_req q = {.scorer = j->scorer, .answer = answer, .gt_json = j->gt_json, .row_json = j->row_json,
                              .script = j->script, .judge_model = j->judge_model, .judge_votes = j->judge_votes,
                              .timeout_s = LB_SCORE_TIMEOUT_DEFAULT_S, .req_path = req_path};
            lb_score_out so;
            int src = lb_score_exec(lb_er_cfg, &q, &so);
            score = so.score;
            detail = so.detail;
            snprintf(scorer, sizeof scorer, "%s", so.scorer);
            snprintf(error_class, sizeof error_class, "%s", so.error_class);
            if (src == LB_OK && score >= 0 && !error_class[0]) {
                res.status = "ok";
                res.score = score;
            } else {
                res.status = "error"; /* a scorer's failure is not a zero in disguise */
                res.score = -1;
                res.error = detail ? detail : "the scorer failed";
                if (!error_class[0])
                    snprintf(error_class, sizeof error_class, "scorer_error");
            }
            res.score_detail = detail;
        }
    }
    res.scorer = scorer;
    res.error_class = error_class[0] ? error_class : NULL;
    char *line = lb_eval_result_to_json(&res);
    if (!line) {
        lb_error("eval %s: run %lld: out of memory making its result", j->eval_id, (long long)j->rid);
    } else {
        rc = lb_store_eval_run_move(s, &j->fence, j->rid, "scoring", !strcmp(res.status, "error") ? "error" : "done",
                                    line);
        if (rc == LB_OK)
            lb_info("eval %s: run %lld scored (%s)", j->eval_id, (long long)j->rid, res.status);
        else if (rc == LB_E_DENIED)
            lb_info("eval %s: run %lld: its score is not kept: another web drives the eval now", j->eval_id,
                    (long long)j->rid);
        else if (rc != LB_E_EXISTS)
            lb_error("eval %s: run %lld: cannot store its result (%s); scored again later", j->eval_id,
                     (long long)j->rid, lb_strerror(rc));
    }
    free(line);
    free(detail);
    lb_task_free(&t);
}

static void score_job(lb_store *s, void *arg)
{
    score_one(s, arg);
}

static void score_job_done(void *arg)
{
    job_free(arg);
    lb_eval_runner_wake(); /* the eval may be complete now */
}

/* Queues run r of eval c for scoring under fence f, once. */
static void queue_score(const lb_er_ds *c, const lb_eval_run *r, const lb_runner_fence *f, const char *owner)
{
    char key[LB_SCORE_KEY_MAX], group[LB_SCORE_KEY_MAX];
    snprintf(key, sizeof key, "eval:%s:%lld", c->id, (long long)r->rid);
    snprintf(group, sizeof group, "eval:%s", c->id);
    if (lb_score_pool_has(key))
        return;
    const lb_eval_row *row = r->row_idx >= 0 && (size_t)r->row_idx < c->d.n ? &c->d.rows[r->row_idx] : NULL;
    lb_er_job *j = calloc(1, sizeof *j);
    if (!j)
        return; /* next tick */
    j->rid = r->rid;
    j->fence = *f;
    snprintf(j->eval_id, sizeof j->eval_id, "%s", c->id);
    snprintf(j->task_id, sizeof j->task_id, "%s", r->task_id);
    snprintf(j->mode, sizeof j->mode, "%s", r->mode);
    j->repeat = r->repeat;
    j->row_id = strdup(r->row_id);
    j->domain = strdup(row && row->domain ? row->domain : "");
    j->scorer = strdup(row && row->scorer ? row->scorer : "exact");
    j->gt_json = row && row->ground_truth_json ? strdup(row->ground_truth_json) : NULL;
    j->row_json = row && row->row_json ? strdup(row->row_json) : NULL;
    j->script = c->d.script ? strdup(c->d.script) : NULL;
    const char *img = row && row->image ? row->image : c->o.image[0] ? c->o.image : NULL;
    j->image = img ? strdup(img) : NULL;
    if (img && row && !row->image && j->row_json) {
        /* the scorer's sandbox takes the row's `image` (score_main.c): the
         * evaluation's goes into the row it is handed */
        cJSON *rj = cJSON_Parse(j->row_json);
        char *with = rj && cJSON_AddStringToObject(rj, "image", img) ? cJSON_PrintUnformatted(rj) : NULL;
        cJSON_Delete(rj);
        if (with) {
            free(j->row_json);
            j->row_json = with;
        }
    }
    snprintf(j->judge_model, sizeof j->judge_model, "%s", c->o.judge_model[0] ? c->o.judge_model : c->o.model);
    j->judge_votes = c->o.judge_votes;
    if (!j->row_id || !j->domain || !j->scorer || (img && !j->image)) {
        job_free(j);
        return;
    }
    /* the owner's share of the scorers, and a lane by scorer (score_pool.h) */
    lb_score_job_info info = {.key = key, .group = group, .owner = owner, .scorer = j->scorer};
    if (lb_score_pool_submit_job(&info, score_job, score_job_done, j) != LB_OK)
        job_free(j); /* refused: queued again next tick */
}

/* ---- starting runs ---- */

/* Writes the row's files (and documents) into the task's input folder;
 * *inputs gets [{path,size}]. */
static int write_inputs(const char *input_dir, const lb_eval_row *row, cJSON *inputs, char *err, size_t errsz)
{
    for (size_t i = 0; i < row->nfiles + row->ndocuments; i++) {
        char name[LB_PATH_MAX + 1];
        const void *data;
        size_t len;
        if (i < row->nfiles) {
            /* clean already (dataset.h); checked again: a path is a path */
            if (lb_path_clean_rel(row->files[i].name, strlen(row->files[i].name), name, sizeof name) != LB_OK) {
                snprintf(err, errsz, "the input file name \"%.80s\" is not a clean relative path", row->files[i].name);
                return LB_E_INVAL;
            }
            data = row->files[i].data;
            len = row->files[i].len;
        } else {
            size_t k = i - row->nfiles;
            lb_eval_document_name(k, name, sizeof name);
            data = row->documents[k];
            len = strlen(row->documents[k]);
        }
        char path[LB_CFG_PATH + LB_PATH_MAX + 100], parent[sizeof path];
        if (lb_path_join(path, sizeof path, input_dir, name) != LB_OK) {
            snprintf(err, errsz, "the input file name \"%.80s\" is too long", name);
            return LB_E_TOOBIG;
        }
        snprintf(parent, sizeof parent, "%s", path);
        *strrchr(parent, '/') = '\0';
        if (lb_mkdirs(parent, 0750) != LB_OK || lb_write_file_atomic(path, data, len, 0640) != LB_OK) {
            snprintf(err, errsz, "cannot write the input file %.200s: %s", name, strerror(errno));
            return LB_E_IO;
        }
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddStringToObject(o, "path", name) || !cJSON_AddNumberToObject(o, "size", (double)len) ||
            !cJSON_AddItemToArray(inputs, o)) {
            cJSON_Delete(o);
            return LB_E_NOMEM;
        }
    }
    return LB_OK;
}

/* The task options of a run (contract: mode, layout, answer_file, max_tokens),
 * plus those of the row's own `task_options` object (an official benchmark
 * folder's system prompt, directories and tool names, set by llmbox eval
 * --benchmark) that the run does not set; the agent checks them all. */
static char *task_options(const lb_eval_opts *o, const char *mode, const lb_eval_row *row)
{
    cJSON *j = cJSON_CreateObject();
    cJSON *r = row->row_json ? cJSON_Parse(row->row_json) : NULL;
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(r, "task_options"), *it;
    if (!cJSON_IsObject(extra))
        extra = NULL;
    char *s = NULL;
    if (j && cJSON_AddStringToObject(j, "mode", mode) && cJSON_AddStringToObject(j, "layout", o->layout) &&
        cJSON_AddTrueToObject(j, "answer_file") &&
        (!o->max_tokens || cJSON_AddNumberToObject(j, "max_tokens", (double)o->max_tokens))) {
        cJSON_ArrayForEach(it, extra)
        {
            cJSON *c = it->string && !cJSON_GetObjectItemCaseSensitive(j, it->string) ? cJSON_Duplicate(it, 1) : NULL;
            if (c)
                cJSON_AddItemToObject(j, it->string, c);
        }
        s = cJSON_PrintUnformatted(j);
    }
    cJSON_Delete(j);
    cJSON_Delete(r);
    return s;
}

/* The prompt of a run: a row's own `llm_prompt` / `task_prompt` string
 * when it has one (llmbox eval --benchmark renders them the official
 * way), else the llm-mode prompt or the problem statement. */
static char *run_prompt(const lb_eval_row *row, int llm)
{
    cJSON *r = row->row_json ? cJSON_Parse(row->row_json) : NULL;
    const char *own = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, llm ? "llm_prompt" : "task_prompt"));
    char *p = own ? strdup(own) : llm ? lb_eval_llm_prompt(row) : strdup(row->problem);
    cJSON_Delete(r);
    return p;
}

/* A run's start (lb_runner_start_fn): its task recorded under f. */
static int run_start(lb_store *s, const lb_runner_fence *f, const void *unit, const char *task_id)
{
    const lb_eval_run *r = unit;
    return lb_store_eval_run_start(s, f, r->rid, task_id);
}

/* A pending run whose start_task exists takes it (lb_runner_adopt). */
static int adopt_run(lb_store *s, const lb_runner_fence *f, const lb_eval_run *r)
{
    char what[48];
    snprintf(what, sizeof what, "run %lld", (long long)r->rid);
    return lb_runner_adopt(s, f, r->start_task, run_start, r, "eval", what);
}

/* Makes run r's task under fence f. LB_OK (started, or not pending any
 * more), LB_E_BUSY (no slot of the service now: try later), LB_E_TOOBIG
 * (the owner has max_tasks tasks going: this eval tries later),
 * LB_E_DENIED (several nodes: the claim is lost, another web drives the eval),
 * or another error (the run cannot be made). */
static int start_run(lb_store *s, const lb_runner_fence *f, const lb_eval_rec *e, lb_er_ds *c, const lb_eval_run *r)
{
    const lb_config *cfg = lb_er_cfg;
    if (r->row_idx < 0 || (size_t)r->row_idx >= c->d.n || strcmp(c->d.rows[r->row_idx].id, r->row_id)) {
        lb_error("eval %s: run %lld names row %lld (%s), which the dataset does not have", e->id, (long long)r->rid,
                 (long long)r->row_idx, r->row_id);
        return LB_E_INVAL;
    }
    const lb_eval_row *row = &c->d.rows[r->row_idx];
    int llm = !strcmp(r->mode, "llm");
    lb_admission a;
    char err[512] = "";
    int reserve = lb_eval_reserve_slots(cfg->eval_reserve_slots, cfg->max_concurrent_tasks);
    int rc = lb_admit_begin_internal(cfg, reserve, &a, err, sizeof err);
    char *prompt = NULL, *opts = NULL, *inputs_json = NULL;
    cJSON *inputs = cJSON_CreateArray();
    if (rc != LB_OK)
        goto out;
    if (!inputs) {
        rc = LB_E_NOMEM;
        goto out;
    }
    if (!llm && (rc = write_inputs(a.input_dir, row, inputs, err, sizeof err)) != LB_OK)
        goto out;
    prompt = run_prompt(row, llm);
    opts = task_options(&c->o, r->mode, row);
    inputs_json = cJSON_PrintUnformatted(inputs);
    if (!prompt || !opts || !inputs_json) {
        rc = LB_E_NOMEM;
        goto out;
    }
    const lb_user_cfg *user = e->owner ? lb_cfg_user(cfg, e->owner) : NULL;
    lb_task_request req = {.max_turns = c->o.max_turns, .token_budget = c->o.token_budget,
                           .timeout_s = c->o.timeout_s};
    lb_task_limits tl;
    lb_task_limits_of(&req, user, cfg, &tl);
    lb_task_new t = {.id = a.id, .prompt = prompt, .model = c->o.model, .max_turns = tl.max_turns,
                     .token_budget = tl.token_budget, .timeout_s = tl.timeout_s, .inputs_json = inputs_json,
                     .owner = e->owner, .options_json = opts,
                     .network = c->o.network[0] ? c->o.network : NULL, /* handlers_evals.c checked it */
                     /* the row's own, else the evaluation's: checked when it was made (handlers_evals.c) */
                     .image = row->image ? row->image : c->o.image[0] ? c->o.image : NULL,
                     /* the owner's limit holds for an eval's tasks as for the owner's own */
                     .owner_max_active = user ? (user->max_tasks ? user->max_tasks : 0) : 0};
    /* several nodes: the task's id goes on the run first, under the claim: a
     * web that dies between making the task and recording it leaves a name
     * the next holder adopts (adopt_run) rather than a second task */
    rc = lb_store_eval_run_reserve(s, f, r->rid, a.id);
    if (rc == LB_E_EXISTS) {
        rc = LB_OK; /* not pending any more (cancelled): nothing to make */
        goto out;
    }
    if (rc != LB_OK)
        goto out;
    rc = lb_admit_commit_internal(s, &a, &t);
    if (rc == LB_E_BUSY) {
        rc = LB_E_TOOBIG; /* the owner's own limit, reached by their tasks: this eval waits, others go on */
        goto out;
    }
    if (rc != LB_OK)
        goto out;
    rc = lb_store_eval_run_start(s, f, r->rid, a.id);
    if (rc == LB_OK) {
        lb_info("eval %s: run %lld started as task %s", e->id, (long long)r->rid, a.id);
    } else if (rc == LB_E_EXISTS) {
        /* cancelled while the task was made: stop it, it counts for nothing */
        lb_runner_stop_task(s, a.id, "cancelled with its evaluation");
        rc = LB_OK;
    } else if (rc == LB_E_DENIED) {
        /* another web holds the eval now: it adopts the task while the run
         * still names it; a run it started otherwise makes this one extra */
        char tid[33], start[33];
        if (lb_store_eval_run_task(s, r->rid, tid, start) == LB_OK && strcmp(start, a.id) && strcmp(tid, a.id))
            lb_runner_stop_task(s, a.id, "its evaluation run was started by another web");
    } else {
        lb_error("eval %s: run %lld: task %s made but not recorded (%s); the next look adopts it", e->id,
                 (long long)r->rid, a.id, lb_strerror(rc));
        rc = LB_OK;
    }
out:
    if (rc != LB_OK && rc != LB_E_BUSY && rc != LB_E_TOOBIG && rc != LB_E_DENIED && err[0])
        lb_error("eval %s: run %lld (row %s, %s): %s", e->id, (long long)r->rid, r->row_id, r->mode, err);
    lb_admit_end(&a);
    cJSON_Delete(inputs);
    free(prompt);
    free(opts);
    free(inputs_json);
    return rc;
}

/* ---- ending an eval ---- */

int lb_eval_summarize(lb_store *s, const char *id, char **summary_json, int64_t *wall_llm, int64_t *wall_sbx)
{
    *summary_json = NULL;
    int64_t first[2] = {-1, -1}, last[2] = {-1, -1};
    lb_eval_result *v = NULL;
    size_t nv = 0, cap = 0;
    int rc = LB_OK;
    for (int64_t off = 0;; off += 1000) {
        lb_eval_run *runs = NULL;
        size_t n = 0;
        if ((rc = lb_store_eval_runs(s, id, LB_RUNS_ALL, off, 1000, &runs, &n)) != LB_OK)
            goto out;
        for (size_t i = 0; i < n && rc == LB_OK; i++) {
            int m = !strcmp(runs[i].mode, "sandbox");
            if (runs[i].started_ms > 0 && (first[m] < 0 || runs[i].started_ms < first[m]))
                first[m] = runs[i].started_ms;
            if (runs[i].started_ms > 0 && runs[i].finished_ms > last[m])
                last[m] = runs[i].finished_ms;
            if (!runs[i].result_json)
                continue;
            if (nv == cap) {
                size_t nc = cap ? cap * 2 : 256;
                lb_eval_result *nvv = realloc(v, nc * sizeof *nvv);
                if (!nvv) {
                    rc = LB_E_NOMEM;
                    break;
                }
                v = nvv;
                cap = nc;
            }
            char why[256];
            memset(&v[nv], 0, sizeof v[nv]);
            if (lb_eval_result_from_json(runs[i].result_json, strlen(runs[i].result_json), &v[nv], why,
                                         sizeof why) == LB_OK)
                nv++;
            else
                lb_warn("eval %s: a stored result does not read back (%s); left out of the summary", id, why);
        }
        lb_eval_runs_free(runs, n);
        if (rc != LB_OK || n < 1000)
            break;
    }
    if (rc != LB_OK)
        goto out;
    *wall_llm = first[0] >= 0 && last[0] >= first[0] ? last[0] - first[0] : 0;
    *wall_sbx = first[1] >= 0 && last[1] >= first[1] ? last[1] - first[1] : 0;
    cJSON *sum = lb_eval_summary(v, nv, (double)*wall_llm / 1000.0, (double)*wall_sbx / 1000.0);
    *summary_json = sum ? cJSON_PrintUnformatted(sum) : NULL;
    cJSON_Delete(sum);
    if (!*summary_json)
        rc = LB_E_NOMEM;
out:
    for (size_t i = 0; i < nv; i++)
        lb_eval_result_free(&v[i]);
    free(v);
    return rc;
}

/* Ends eval f->id under its claim: LB_OK, LB_E_EXISTS (final already),
 * LB_E_DENIED (another web holds it) or the store's error. */
static int eval_end(lb_store *s, const lb_runner_fence *f, const char *status, const char *error)
{
    const char *id = f->id;
    char *summary = NULL;
    int64_t wl = 0, ws = 0;
    int rc = lb_eval_summarize(s, id, &summary, &wl, &ws);
    if (rc != LB_OK)
        lb_warn("eval %s: no summary (%s)", id, lb_strerror(rc));
    rc = lb_store_eval_finish(s, f, id, status, error, summary, wl, ws);
    if (rc == LB_OK)
        lb_info("eval %s: %s%s%s", id, status, error ? ": " : "", error ? error : "");
    else if (rc != LB_E_EXISTS && rc != LB_E_DENIED)
        lb_error("eval %s: cannot record its end (%s); tried again", id, lb_strerror(rc));
    free(summary);
    return rc;
}

/* The error line of a run whose task cannot be made */
static int run_error(lb_store *s, const lb_runner_fence *f, lb_eval_run *r)
{
    lb_eval_result res;
    memset(&res, 0, sizeof res);
    res.id = r->row_id;
    res.mode = r->mode;
    res.repeat = r->repeat;
    res.score = -1;
    res.status = "error";
    res.error = "the run's task could not be made (see the web log)";
    res.error_class = "run_error";
    char *line = lb_eval_result_to_json(&res);
    if (!line)
        return LB_E_NOMEM; /* retried next tick */
    int rc = lb_store_eval_run_move(s, f, r->rid, "pending", "error", line);
    free(line);
    return rc;
}

/* ---- the runner's tick ---- */

/* Starts up to want pending runs of eval e (while slots are left:
 * *no_slot is set when the service had none). LB_E_DENIED when the claim
 * was lost. */
static int start_pending(lb_store *s, const lb_runner_fence *f, const lb_eval_rec *e, lb_er_ds *c, int want,
                         int *no_slot)
{
    lb_eval_run *runs = NULL;
    size_t n = 0;
    int lost = 0;
    if (lb_store_eval_runs(s, e->id, LB_RUNS_PENDING, 0, want, &runs, &n) != LB_OK)
        return LB_OK;
    for (size_t i = 0; i < n && !lost; i++) {
        int rc = LB_E_NOTFOUND;
        if (runs[i].start_task[0] && (rc = adopt_run(s, f, &runs[i])) != LB_E_NOTFOUND) {
            lost = rc == LB_E_DENIED; /* adopted, or tried next tick */
            continue;
        }
        rc = start_run(s, f, e, c, &runs[i]);
        if (rc == LB_E_BUSY) {
            *no_slot = 1;
            break;
        }
        if (rc == LB_E_TOOBIG)
            break;
        lost = rc == LB_E_DENIED;
        /* a run that cannot be made: an error line, and the others go on */
        if (rc != LB_OK && !lost)
            lost = run_error(s, f, &runs[i]) == LB_E_DENIED;
    }
    lb_eval_runs_free(runs, n);
    return lost ? LB_E_DENIED : LB_OK;
}

/* One look at eval id under this web's claim: score the runs whose task
 * ended, start pending ones up to its concurrency, end it when nothing is
 * left. */
static void eval_tick(lb_store *s, const char *id, int *no_slot)
{
    lb_runner_fence f;
    if (!lb_runner_held_fence(&lb_er_held, id, &f))
        return; /* several nodes: no fresh lease: nothing is written until it is renewed */
    lb_eval_rec e;
    int rc = lb_store_eval_load(s, id, &e);
    if (rc != LB_OK) {
        if (rc == LB_E_NOTFOUND)
            lb_runner_held_drop(&lb_er_held, id); /* deleted */
        return;
    }
    int active = !strcmp(e.status, "queued") || !strcmp(e.status, "running");
    char err[600];
    lb_er_ds *c = ds_get(&e, err, sizeof err);
    if (!c) {
        if (err[0] && active)
            rc = eval_end(s, &f, "failed", err);
        goto out;
    }
    c->seen = 1;
    if (!strcmp(e.status, "queued")) {
        rc = lb_store_eval_set_running(s, &f, e.id);
        if (rc != LB_OK && rc != LB_E_EXISTS)
            goto out;
    }
    /* runs whose task has ended go to the scorers */
    lb_eval_run *runs = NULL;
    size_t n = 0;
    int running = 0;
    rc = LB_OK;
    if (lb_store_eval_runs(s, e.id, LB_RUNS_ACTIVE, 0, 10000, &runs, &n) != LB_OK)
        goto out;
    for (size_t i = 0; i < n && rc != LB_E_DENIED; i++) {
        lb_eval_run *r = &runs[i];
        if (!strcmp(r->status, "running")) {
            char st[16];
            int trc = lb_store_task_state(s, r->task_id, st, sizeof st, NULL);
            if (trc == LB_OK && !lb_task_status_is_final(lb_task_status_parse(st))) {
                running++;
                continue;
            }
            if (trc != LB_OK && trc != LB_E_NOTFOUND)
                continue;
            if ((rc = lb_store_eval_run_move(s, &f, r->rid, "running", "scoring", NULL)) != LB_OK)
                continue;
        }
        queue_score(c, r, &f, e.owner);
    }
    lb_eval_runs_free(runs, n);
    /* a cancelled eval's scorers stop, those queued by this look too */
    if (!strcmp(e.status, "cancelled")) {
        char group[LB_SCORE_KEY_MAX];
        snprintf(group, sizeof group, "eval:%.32s", e.id);
        (void)lb_score_pool_cancel(group); /* a count, for nobody */
    }
    if (rc == LB_E_DENIED || !active)
        goto out; /* cancelled or ended: its running runs are scored, nothing new starts */
    int want = c->o.concurrency - running;
    if (want > 0 && !*no_slot && (rc = start_pending(s, &f, &e, c, want, no_slot)) == LB_E_DENIED)
        goto out;
    lb_eval_counts k;
    if (lb_store_eval_counts(s, e.id, &k) == LB_OK && !k.pending && !k.running && !k.scoring &&
        (rc = eval_end(s, &f, "succeeded", NULL)) == LB_OK)
        lb_runner_held_drop(&lb_er_held, id); /* ended: nothing more to drive */
out:
    if (rc == LB_E_DENIED) {
        /* several nodes: another web drives it now (this one stalled past its lease) */
        lb_info("eval %s: another web drives it now; this web lets go", e.id);
        lb_runner_held_drop(&lb_er_held, id);
    }
    lb_eval_rec_free(&e);
}

/* One look at every eval this web holds (the evals' job source), after
 * renewing its claims and claiming what it has room for (several nodes). */
static void evals_tick(lb_store *s, int *no_slot)
{
    static lb_runner_claim ids[LB_RUNNER_CLAIM_MAX]; /* runner thread only */
    lb_runner_held_refresh(s, &lb_er_held, lb_er_held.n < LB_EVAL_CACHE ? LB_EVAL_CACHE - lb_er_held.n : 0);
    /* a copy: a look may let go of the eval it looks at */
    size_t n = lb_er_held.n;
    memcpy(ids, lb_er_held.v, n * sizeof ids[0]);
    for (int i = 0; i < lb_er_ncache; i++)
        lb_er_cache[i].seen = 0;
    for (size_t i = 0; i < n; i++)
        eval_tick(s, ids[i].id, no_slot);
    /* evals no longer active here give their dataset's memory back */
    for (int i = 0; i < lb_er_ncache;)
        if (!lb_er_cache[i].seen)
            ds_drop(i);
        else
            i++;
}

static void evals_release(lb_store *s, size_t *released)
{
    lb_runner_held_release(s, &lb_er_held, released);
}

#define LB_RUNNER_SOURCES_MAX 4
static lb_runner_tick_fn lb_er_sources[LB_RUNNER_SOURCES_MAX] = {evals_tick};
static int lb_er_nsources = 1;
static lb_runner_release_fn lb_er_releases[LB_RUNNER_SOURCES_MAX] = {evals_release};
static int lb_er_nreleases = 1;

int lb_runner_add_release(lb_runner_release_fn release)
{
    pthread_mutex_lock(&lb_er_mu);
    int rc = lb_er_nreleases < LB_RUNNER_SOURCES_MAX ? LB_OK : LB_E_TOOBIG;
    if (rc == LB_OK)
        lb_er_releases[lb_er_nreleases++] = release;
    pthread_mutex_unlock(&lb_er_mu);
    return rc;
}

/* The runner thread's last act when the web stops: every claim back */
static void runner_release_all(lb_store *s)
{
    size_t released = 0;
    for (int i = 0; s && i < lb_er_nreleases; i++)
        lb_er_releases[i](s, &released);
    if (released)
        lb_info("web: stopping: gave back %zu claim%s on evaluations and rollout groups; another web takes them "
                "over at its next look", released, released == 1 ? "" : "s");
    pthread_mutex_lock(&lb_er_mu);
    lb_er_stopped = 1;
    pthread_cond_broadcast(&lb_er_wake);
    pthread_mutex_unlock(&lb_er_mu);
}

void lb_eval_runner_stop(int timeout_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&lb_er_mu);
    lb_er_stop = 1;
    pthread_cond_broadcast(&lb_er_wake);
    while (lb_er_cfg && !lb_er_stopped)
        if (pthread_cond_timedwait(&lb_er_wake, &lb_er_mu, &ts) != 0)
            break; /* the runner is stuck in a store call: the leases lapse instead */
    pthread_mutex_unlock(&lb_er_mu);
}

int lb_runner_add_source(lb_runner_tick_fn tick)
{
    pthread_mutex_lock(&lb_er_mu);
    int rc = lb_er_nsources < LB_RUNNER_SOURCES_MAX ? LB_OK : LB_E_TOOBIG;
    if (rc == LB_OK)
        lb_er_sources[lb_er_nsources++] = tick;
    pthread_mutex_unlock(&lb_er_mu);
    return rc;
}

static void *runner_main(void *arg)
{
    (void)arg;
    lb_store *s = NULL;
    unsigned first = 0;
    for (;;) {
        pthread_mutex_lock(&lb_er_mu);
        if (!lb_er_woken) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += LB_EVAL_POLL_MS * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&lb_er_wake, &lb_er_mu, &ts);
        }
        lb_er_woken = 0;
        int n = lb_er_nsources, stop = lb_er_stop;
        pthread_mutex_unlock(&lb_er_mu);
        if (!s && lb_store_open(lb_cfg_store_where(lb_er_cfg), &s) != LB_OK) {
            lb_store_close(s); /* what a failed open left */
            s = NULL;
            if (!stop)
                continue;
        }
        if (stop) {
            if (s)
                runner_release_all(s);
            lb_store_close(s);
            return NULL; /* the process exits */
        }
        int no_slot = 0;
        for (int i = 0; i < n; i++)
            lb_er_sources[(first + (unsigned)i) % (unsigned)n](s, &no_slot);
        first++;
    }
    return NULL;
}

/* The capability patterns of <home>/eval/capabilities.conf when there
 * is one, else the compiled-in copy (eval/capability.h). Before the
 * threads: the patterns are not written once they count. */
static void load_capabilities(const lb_config *cfg)
{
    char path[LB_CFG_PATH + 64], err[512];
    snprintf(path, sizeof path, "%s/eval/capabilities.conf", cfg->home);
    if (access(path, F_OK) != 0) {
        lb_info("web: evaluations: no %s; the built-in capability patterns count", path);
        return;
    }
    if (lb_capability_load(path, err, sizeof err) != LB_OK)
        lb_error("web: evaluations: %s; the built-in capability patterns count instead", err);
}

int lb_eval_runner_start(const lb_config *cfg)
{
    lb_er_cfg = cfg;
    lb_runner_identity_init(cfg); /* several nodes: the claims' owner id and lease */
    load_capabilities(cfg);
    lb_spawn_set_exit_hook(lb_eval_runner_wake);
    pthread_t t;
    if (pthread_create(&t, NULL, runner_main, NULL) != 0)
        return LB_E_INTERNAL;
    pthread_detach(t);
    if (lb_score_pool_start(cfg, cfg->score_threads) != LB_OK)
        return LB_E_INTERNAL;
    int reserve = lb_eval_reserve_slots(cfg->eval_reserve_slots, cfg->max_concurrent_tasks);
    lb_info("web: evaluations: %d of max_tasks %d slots kept for people's tasks (eval_reserve_slots), at most %d "
            "tasks per eval", reserve, cfg->max_concurrent_tasks, cfg->eval_max_concurrency);
    if (cfg->eval_reserve_slots > reserve)
        lb_warn("web: eval_reserve_slots %d leaves no slot to evals with max_tasks %d: the reserve is %d",
                cfg->eval_reserve_slots, cfg->max_concurrent_tasks, reserve);
    return LB_OK;
}
