/* The rollout groups' runner; the contract is rollout_runner.h.
 *
 * Like the evaluations' runner it polls the store (a sample's task ends
 * in another process) and is woken when an agent exits or a group is
 * made. The parsed request of each active group is kept (its files may
 * be megabytes: parsed once, not per look). */
#include "jobs/rollout_runner.h"

#include "common/log.h"
#include "common/path.h"
#include "common/status.h"
#include "common/task.h"
#include "common/util.h"
#include "store/store.h"
#include "store/store_rollout.h"
#include "web/admission.h"
#include "jobs/eval_runner.h"
#include "jobs/runner.h"
#include "sbxapi/sandbox_spec.h"
#include "jobs/score_pool.h"
#include "web/spawn.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <fcntl.h>

#define LB_RR_CACHE 256 /* groups whose request is kept parsed */
#define LB_RR_ANSWER_MAX (64u << 10) /* an answer as scored and shown (the agent's cap) */
#define LB_RR_FILE_MAX (64u << 20) /* one decoded file (the body's cap bounds them anyway) */

static const lb_config *lb_rr_cfg;
/* several nodes: the groups this web drives (runner thread only) */
static lb_runner_held lb_rr_held = {.kind = LB_RUNNER_ROLLOUTS};

/* ---- parsed requests of active groups (runner thread only) ---- */

typedef struct lb_rr_req {
    char id[33];
    cJSON *req;
    int seen;
    /* the input folder of a sample of this group that holds the request's
     * files (heap, NULL before the first): the next samples link them */
    char *files_dir;
} lb_rr_req;

static lb_rr_req lb_rr_cache[LB_RR_CACHE];
static int lb_rr_ncache;

static lb_rr_req *req_get(lb_store *s, const char *id)
{
    for (int i = 0; i < lb_rr_ncache; i++)
        if (!strcmp(lb_rr_cache[i].id, id)) {
            lb_rr_cache[i].seen = 1;
            return &lb_rr_cache[i];
        }
    if (lb_rr_ncache == LB_RR_CACHE)
        return NULL; /* later groups wait for a place */
    lb_rollout_rec g;
    if (lb_store_rollout_load(s, id, 1, &g) != LB_OK)
        return NULL;
    cJSON *req = cJSON_Parse(g.request_json);
    lb_rollout_rec_free(&g);
    if (!cJSON_IsObject(req)) {
        cJSON_Delete(req);
        return NULL;
    }
    lb_rr_req *c = &lb_rr_cache[lb_rr_ncache++];
    snprintf(c->id, sizeof c->id, "%.32s", id);
    c->req = req;
    c->seen = 1;
    c->files_dir = NULL;
    return c;
}

static const char *jstr(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static long long jnum(const cJSON *o, const char *k, long long def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? (long long)v->valuedouble : def;
}

/* ---- outcomes and scoring ---- */

const char *lb_rollout_outcome_of(int cancelled, const char *reason)
{
    if (cancelled)
        return "cancelled";
    const char *r = reason ? reason : "";
    if (strstr(r, "time limit") || strstr(r, "timed out"))
        return "timeout";
    if (strstr(r, "turn limit") || strstr(r, "token budget") || strstr(r, "without calling a tool"))
        return "ok";
    if (strcasestr(r, "sandbox") || strstr(r, "tool") || strstr(r, "input files") || strstr(r, "out of memory") ||
        strstr(r, "internal error") || strstr(r, "task options") || strstr(r, "agent"))
        return "sandbox_error";
    return "model_error";
}

typedef struct lb_rr_job {
    char id[33], task_id[33];
    int idx;
    char *scorer, *gt_json, *script, *model;
    int timeout_s;
    lb_runner_fence fence;      /* several nodes: the claim it was queued under */
} lb_rr_job;

static void job_free(lb_rr_job *j)
{
    if (!j)
        return;
    free(j->scorer);
    free(j->gt_json);
    free(j->script);
    free(j->model);
    free(j);
}

static void job_done(void *arg)
{
    job_free(arg);
    lb_eval_runner_wake(); /* the group may be complete now */
}

static int64_t usage_num(const cJSON *u, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(u, k);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 ? (int64_t)v->valuedouble : 0;
}

/* Scores one sample whose task has ended and stores its outcome. */
static void score_sample(lb_store *s, void *arg)
{
    lb_rr_job *j = arg;
    lb_task t;
    memset(&t, 0, sizeof t);
    cJSON *res = cJSON_CreateObject();
    const char *outcome = "ok";
    int has_reward = 0;
    double reward = 0;
    lb_score_out so = {.score = -1};
    char *line = NULL;
    if (!res)
        return;
    int rc = lb_store_task_load(s, j->task_id, &t);
    if (rc != LB_OK) {
        outcome = "sandbox_error";
        cJSON_AddStringToObject(res, "error",
                                rc == LB_E_NOTFOUND ? "the sample's task was deleted before it was scored"
                                                    : "the sample's task could not be read");
        goto store;
    }
    cJSON *u = t.usage_json ? cJSON_Parse(t.usage_json) : NULL;
    cJSON_AddNumberToObject(res, "turns", t.turns);
    cJSON_AddNumberToObject(res, "prompt_tokens", (double)t.prompt_tokens);
    cJSON_AddNumberToObject(res, "completion_tokens", (double)t.completion_tokens);
    cJSON_AddNumberToObject(res, "env_tokens", (double)usage_num(u, "environment_tokens"));
    cJSON_Delete(u);
    cJSON_AddNumberToObject(res, "wall_ms",
                            t.finished_ms > 0 && t.created_ms > 0 ? (double)(t.finished_ms - t.created_ms) : 0);
    char *answer = t.answer ? t.answer : "";
    if (strlen(answer) > LB_RR_ANSWER_MAX)
        answer[LB_RR_ANSWER_MAX] = '\0'; /* the agent caps it already; a stored one never grows past */
    cJSON_AddStringToObject(res, "answer", answer);
    if (t.status != LB_TASK_SUCCEEDED) {
        outcome = lb_rollout_outcome_of(t.status == LB_TASK_CANCELLED, t.reason);
        cJSON_AddStringToObject(res, "error", t.reason ? t.reason : "the task did not succeed");
        if (!strcmp(outcome, "ok") && j->scorer) {
            has_reward = 1; /* ended at its own limit: a result, scored 0 as evals do */
            cJSON_AddStringToObject(res, "reward_detail", "the episode ended at its limit without an answer");
        }
        goto store;
    }
    if (!j->scorer)
        goto store; /* no reward asked */
    char dir[LB_CFG_PATH + 64], req_path[LB_CFG_PATH + 160];
    lb_eval_dir(lb_rr_cfg, "rollouts", dir, sizeof dir);
    if (lb_mkdirs(dir, 0700) != LB_OK) {
        outcome = "scorer_error";
        cJSON_AddStringToObject(res, "reward_detail", "cannot make the scorers' folder");
        goto store;
    }
    snprintf(req_path, sizeof req_path, "%s/score-%s-%d.json", dir, j->id, j->idx);
    lb_score_req q = {.scorer = j->scorer,
                      .answer = answer,
                      .gt_json = j->gt_json,
                      .script = j->script,
                      .judge_model = j->model,
                      .judge_votes = 1,
                      .timeout_s = j->timeout_s,
                      .req_path = req_path};
    rc = lb_score_exec(lb_rr_cfg, &q, &so);
    if (rc == LB_OK && so.score >= 0 && !so.error_class[0]) {
        has_reward = 1;
        reward = so.score;
    } else if (rc == LB_E_CANCELLED) {
        outcome = "cancelled"; /* its group was cancelled while it waited or ran */
    } else {
        outcome = "scorer_error"; /* never a zero in disguise */
        cJSON_AddStringToObject(res, "scorer_error_class", so.error_class[0] ? so.error_class : "scorer_error");
    }
    cJSON_AddStringToObject(res, "reward_detail", so.detail ? so.detail : "");
    cJSON_AddStringToObject(res, "scorer", so.scorer);
store:
    line = cJSON_PrintUnformatted(res);
    if (!line) {
        lb_error("rollout %s: sample %d: out of memory making its result; scored again later", j->id, j->idx);
    } else {
        rc = lb_store_rollout_sample_move(s, &j->fence, j->id, j->idx, "scoring", "done", outcome, has_reward, reward,
                                          line);
        if (rc == LB_OK)
            lb_info("rollout %s: sample %d scored (%s)", j->id, j->idx, outcome);
        else if (rc == LB_E_DENIED)
            lb_info("rollout %s: sample %d: its outcome is not kept: another web drives the group now", j->id, j->idx);
        else if (rc != LB_E_EXISTS)
            lb_error("rollout %s: sample %d: cannot store its outcome (%s); scored again later", j->id, j->idx,
                     lb_strerror(rc));
    }
    free(line);
    free(so.detail);
    cJSON_Delete(res);
    lb_task_free(&t);
}

static void queue_score(const lb_runner_fence *f, const cJSON *req, const lb_rollout_sample *x, const char *owner)
{
    const char *id = f->id;
    char key[LB_SCORE_KEY_MAX], group[LB_SCORE_KEY_MAX];
    snprintf(key, sizeof key, "rollout:%s:%d", id, x->idx);
    snprintf(group, sizeof group, "rollout:%.32s", id);
    if (lb_score_pool_has(key))
        return;
    lb_rr_job *j = calloc(1, sizeof *j);
    if (!j)
        return; /* next look */
    snprintf(j->id, sizeof j->id, "%s", id);
    j->fence = *f;
    snprintf(j->task_id, sizeof j->task_id, "%s", x->task_id);
    j->idx = x->idx;
    const cJSON *rw = cJSON_GetObjectItemCaseSensitive(req, "reward");
    int ok = 1;
    if (cJSON_IsObject(rw)) {
        const cJSON *gt = cJSON_GetObjectItemCaseSensitive(rw, "ground_truth");
        const char *sc = jstr(rw, "script");
        ok = (j->scorer = strdup(jstr(rw, "scorer") ? jstr(rw, "scorer") : "exact")) != NULL;
        ok = ok && (!gt || (j->gt_json = cJSON_PrintUnformatted(gt)));
        ok = ok && (!sc || (j->script = strdup(sc)));
        ok = ok && (j->model = strdup(jstr(req, "model") ? jstr(req, "model") : ""));
        j->timeout_s = (int)jnum(rw, "timeout_s", LB_SCORE_TIMEOUT_DEFAULT_S);
    }
    if (!ok) {
        job_free(j);
        return;
    }
    /* the owner's share of the scorers, and a lane by scorer (score_pool.h) */
    lb_score_job_info info = {.key = key, .group = group, .owner = owner, .scorer = j->scorer};
    if (lb_score_pool_submit_job(&info, score_sample, job_done, j) != LB_OK)
        job_free(j); /* refused: queued again next look */
}

/* ---- starting samples ---- */

/* Links the file name of the folder from (an earlier sample's input
 * folder, which the same request's files went into) as path: 0 when it is
 * there, a regular file of len bytes, and was linked. Task folders' input
 * files are never changed in place (sandboxd copies them into the
 * sandbox; a later write replaces a name), so the samples of a group can
 * share them: one inode, one write and one fsync per group, not per
 * sample (the web's CPU per sample, bench/RESULTS.md). */
static int link_file(const char *from, const char *name, const char *path, size_t len)
{
    char src[LB_CFG_PATH + LB_PATH_MAX + 100];
    struct stat st;
    if (!from || lb_path_join(src, sizeof src, from, name) != LB_OK || lstat(src, &st) != 0 ||
        !S_ISREG(st.st_mode) || (uint64_t)st.st_size != (uint64_t)len)
        return -1;
    return linkat(AT_FDCWD, src, AT_FDCWD, path, 0);
}

/* Writes the request's files into the task's input folder (linked from
 * link_from, an earlier sample's input folder, where they are there; *unlinked
 * counts those that were not); *inputs gets [{path,size}]. */
static int write_files(const char *input_dir, const cJSON *files, const char *link_from, int *unlinked,
                       cJSON *inputs, char *err, size_t errsz)
{
    const cJSON *f;
    *unlinked = 0;
    cJSON_ArrayForEach(f, files)
    {
        const char *p = jstr(f, "path"), *text = jstr(f, "content"), *b64 = jstr(f, "content_base64");
        char name[LB_PATH_MAX + 1];
        /* checked by the handler; checked again: a path is a path */
        if (!p || lb_path_clean_rel(p, strlen(p), name, sizeof name) != LB_OK) {
            snprintf(err, errsz, "a file's path is not a clean relative path");
            return LB_E_INVAL;
        }
        char *dec = NULL;
        size_t len = text ? strlen(text) : 0;
        if (b64 && lb_base64_decode(b64, strlen(b64), LB_RR_FILE_MAX, &dec, &len) != LB_OK) {
            snprintf(err, errsz, "the file %.200s is not valid base64", name);
            return LB_E_INVAL;
        }
        char path[LB_CFG_PATH + LB_PATH_MAX + 100], parent[sizeof path];
        int rc = lb_path_join(path, sizeof path, input_dir, name);
        if (rc == LB_OK) {
            snprintf(parent, sizeof parent, "%s", path);
            *strrchr(parent, '/') = '\0';
            int mk = lb_mkdirs(parent, 0750);
            int linked = mk == LB_OK && link_file(link_from, name, path, len) == 0;
            *unlinked += !linked;
            const char *data = dec ? dec : text ? text : "";
            if (mk != LB_OK || (!linked && lb_write_file_atomic(path, data, len, 0640) != LB_OK)) {
                snprintf(err, errsz, "cannot write the input file %.200s: %s", name, strerror(errno));
                rc = LB_E_IO;
            }
        } else {
            snprintf(err, errsz, "the input file name \"%.80s\" is too long", name);
        }
        free(dec);
        if (rc != LB_OK)
            return rc;
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddStringToObject(o, "path", name) || !cJSON_AddNumberToObject(o, "size", (double)len) ||
            !cJSON_AddItemToArray(inputs, o)) {
            cJSON_Delete(o);
            return LB_E_NOMEM;
        }
    }
    return LB_OK;
}

char *lb_rollout_task_options(const cJSON *req)
{
    cJSON *o = cJSON_CreateObject();
    char *s = NULL;
    long long mt = jnum(req, "max_tokens", 0);
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(req, "capture_tokens");
    const cJSON *temp = cJSON_GetObjectItemCaseSensitive(req, "temperature");
    const cJSON *top_p = cJSON_GetObjectItemCaseSensitive(req, "top_p");
    const cJSON *top_k = cJSON_GetObjectItemCaseSensitive(req, "top_k");
    const char *sp = jstr(req, "system_prompt");
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(req, "tools");
    const cJSON *mcp = cJSON_GetObjectItemCaseSensitive(req, "mcp");
    if (o && cJSON_AddStringToObject(o, "mode", "sandbox") &&
        (!mt || cJSON_AddNumberToObject(o, "max_tokens", (double)mt)) &&
        (!cJSON_IsNumber(temp) || cJSON_AddNumberToObject(o, "temperature", temp->valuedouble)) &&
        (!cJSON_IsNumber(top_p) || cJSON_AddNumberToObject(o, "top_p", top_p->valuedouble)) &&
        (!cJSON_IsNumber(top_k) || cJSON_AddNumberToObject(o, "top_k", top_k->valuedouble)) &&
        (!cJSON_IsBool(ct) || cJSON_AddBoolToObject(o, "capture_tokens", cJSON_IsTrue(ct))) &&
        (!sp || cJSON_AddStringToObject(o, "system_prompt", sp)) &&
        (!jstr(req, "model_url") || cJSON_AddStringToObject(o, "model_url", jstr(req, "model_url"))) &&
        (!jstr(req, "model_id") || cJSON_AddStringToObject(o, "model_id", jstr(req, "model_id"))) &&
        (!cJSON_IsArray(tools) || cJSON_AddItemToObject(o, "tools", cJSON_Duplicate(tools, 1))) &&
        (!cJSON_IsArray(mcp) || cJSON_AddItemToObject(o, "mcp", cJSON_Duplicate(mcp, 1))))
        s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* A sample's start (lb_runner_start_fn): its task recorded under f. */
static int sample_start(lb_store *s, const lb_runner_fence *f, const void *unit, const char *task_id)
{
    const lb_rollout_sample *x = unit;
    return lb_store_rollout_sample_start(s, f, f->id, x->idx, task_id);
}

/* A queued sample whose start_task exists takes it (lb_runner_adopt). */
static int adopt_sample(lb_store *s, const lb_runner_fence *f, const lb_rollout_sample *x)
{
    char what[32];
    snprintf(what, sizeof what, "sample %d", x->idx);
    return lb_runner_adopt(s, f, x->start_task, sample_start, x, "rollout", what);
}

/* Makes sample idx's task under fence f. LB_OK (started, or not queued
 * any more), LB_E_BUSY (no slot now), LB_E_TOOBIG (the owner's own limit:
 * this group waits), LB_E_DENIED (several nodes: the claim is lost), or another
 * error (the sample cannot be made: it ends as sandbox_error). */
static int start_sample(lb_store *s, const lb_runner_fence *f, const lb_rollout_rec *g, lb_rr_req *c, int idx,
                        char *err, size_t errsz)
{
    const cJSON *req = c->req;
    const lb_config *cfg = lb_rr_cfg;
    lb_admission a;
    int reserve = lb_eval_reserve_slots(cfg->eval_reserve_slots, cfg->max_concurrent_tasks);
    int rc = lb_admit_begin_internal(cfg, reserve, &a, err, errsz);
    char *opts = NULL, *inputs_json = NULL;
    cJSON *inputs = cJSON_CreateArray();
    if (rc != LB_OK)
        goto out;
    if (!inputs) {
        rc = LB_E_NOMEM;
        goto out;
    }
    int unlinked = 0;
    if ((rc = write_files(a.input_dir, cJSON_GetObjectItemCaseSensitive(req, "files"), c->files_dir, &unlinked,
                          inputs, err, errsz)) != LB_OK)
        goto out;
    opts = lb_rollout_task_options(req);
    inputs_json = cJSON_PrintUnformatted(inputs);
    if (!opts || !inputs_json) {
        rc = LB_E_NOMEM;
        goto out;
    }
    const lb_user_cfg *user = g->owner ? lb_cfg_user(cfg, g->owner) : NULL;
    lb_task_request tr = {.max_turns = (int)jnum(req, "max_turns", 0),
                          .token_budget = jnum(req, "token_budget", -1),
                          .timeout_s = (int)jnum(req, "timeout_s", 0)};
    lb_task_limits tl;
    lb_task_limits_of(&tr, user, cfg, &tl);
    const char *model = jstr(req, "model");
    lb_task_new t = {.id = a.id,
                     .prompt = jstr(req, "prompt"),
                     .model = model && model[0] ? model : NULL,
                     .max_turns = tl.max_turns,
                     .token_budget = tl.token_budget,
                     .timeout_s = tl.timeout_s,
                     .inputs_json = inputs_json,
                     .network = jstr(req, "network"), /* NULL: none (handlers_rollouts.c checked it) */
                     .owner = g->owner,
                     .options_json = opts,
                     .owner_max_active = user ? (user->max_tasks ? user->max_tasks : 0) : 0};
    /* several nodes: the task's id goes on the sample first, under the claim:
     * a web that dies before recording the task leaves a name the next
     * holder adopts (adopt_sample) rather than a second task */
    rc = lb_store_rollout_sample_reserve(s, f, g->id, idx, a.id);
    if (rc == LB_E_EXISTS) {
        rc = LB_OK; /* not queued any more (cancelled): nothing to make */
        goto out;
    }
    if (rc != LB_OK)
        goto out;
    rc = lb_admit_commit_internal(s, &a, &t);
    if (rc == LB_E_BUSY) {
        rc = LB_E_TOOBIG;
        goto out;
    }
    if (rc != LB_OK)
        goto out;
    rc = lb_store_rollout_sample_start(s, f, g->id, idx, a.id);
    if (rc == LB_OK) {
        lb_info("rollout %s: sample %d started as task %s", g->id, idx, a.id);
        if (!c->files_dir || unlinked) {
            /* the files are in a started sample's folder now: the next
             * samples link them from there (none: each writes its own) */
            free(c->files_dir);
            c->files_dir = strdup(a.input_dir);
        }
    } else if (rc == LB_E_EXISTS) {
        /* cancelled while the task was made: stop it, it counts for nothing */
        lb_runner_stop_task(s, a.id, "cancelled with its rollout group");
        rc = LB_OK;
    } else if (rc == LB_E_DENIED) {
        /* another web holds the group: it adopts the task while the sample
         * still names it; one it started otherwise makes this one extra */
        char tid[33], start[33];
        if (lb_store_rollout_sample_task(s, g->id, idx, tid, start) == LB_OK && strcmp(start, a.id) &&
            strcmp(tid, a.id))
            lb_runner_stop_task(s, a.id, "its rollout sample was started by another web");
    } else {
        lb_error("rollout %s: sample %d: task %s made but not recorded (%s); the next look adopts it", g->id, idx,
                 a.id, lb_strerror(rc));
        rc = LB_OK;
    }
out:
    lb_admit_end(&a);
    cJSON_Delete(inputs);
    free(opts);
    free(inputs_json);
    return rc;
}

/* ---- the runner's look ---- */

/* One look at group id under this web's claim: *running counts the
 * samples running in every group (rollout_max_samples). LB_E_DENIED when
 * the claim was lost; *ended when the group was finished by this look. */
static int group_look(lb_store *s, const lb_runner_fence *f, const char *id, int64_t *running, int *no_slot,
                      int *ended)
{
    lb_rollout_rec g;
    int rc = lb_store_rollout_load(s, id, 0, &g);
    if (rc != LB_OK)
        return rc;
    lb_rr_req *c = req_get(s, id);
    const cJSON *req = c ? c->req : NULL;
    lb_rollout_sample *v = NULL;
    size_t n = 0;
    if (!req || (rc = lb_store_rollout_samples(s, id, &v, &n)) != LB_OK)
        goto out;
    int active = !strcmp(g.status, "running"), left = 0;
    for (size_t i = 0; i < n && rc != LB_E_DENIED; i++) {
        lb_rollout_sample *x = &v[i];
        rc = LB_OK;
        if (!strcmp(x->status, "running")) {
            char st[16];
            int trc = lb_store_task_state(s, x->task_id, st, sizeof st, NULL);
            if (trc == LB_OK && !lb_task_status_is_final(lb_task_status_parse(st))) {
                left++;
                continue;
            }
            if ((trc != LB_OK && trc != LB_E_NOTFOUND) ||
                (rc = lb_store_rollout_sample_move(s, f, id, x->idx, "running", "scoring", NULL, 0, 0, NULL)) != LB_OK) {
                left++;
                continue;
            }
            (*running)--;
            snprintf(x->status, sizeof x->status, "scoring");
        }
        if (!strcmp(x->status, "scoring")) {
            queue_score(f, req, x, g.owner);
            left++;
        } else if (!strcmp(x->status, "queued")) {
            left++;
            if (!active || *no_slot || *running >= lb_rr_cfg->rollout_max_samples)
                continue;
            if (x->start_task[0] && (rc = adopt_sample(s, f, x)) != LB_E_NOTFOUND) {
                if (rc == LB_OK)
                    (*running)++;
                continue; /* adopted, or tried next look */
            }
            char err[512] = "";
            rc = start_sample(s, f, &g, c, x->idx, err, sizeof err);
            if (rc == LB_OK) {
                (*running)++;
            } else if (rc == LB_E_BUSY) {
                *no_slot = 1;
            } else if (rc != LB_E_TOOBIG && rc != LB_E_DENIED) {
                /* this sample cannot be made: classified, the others go on */
                lb_error("rollout %s: sample %d: %s", id, x->idx, err[0] ? err : lb_strerror(rc));
                cJSON *res = cJSON_CreateObject();
                char *line = NULL;
                if (res && cJSON_AddStringToObject(res, "error", err[0] ? err : "the sample's task could not be made"))
                    line = cJSON_PrintUnformatted(res);
                /* not stored: tried again next look */
                rc = line ? lb_store_rollout_sample_move(s, f, id, x->idx, "queued", "done", "sandbox_error", 0, 0, line)
                          : LB_OK;
                free(line);
                cJSON_Delete(res);
            }
        }
    }
    if (rc == LB_E_DENIED)
        goto out;
    /* a cancelled group's scorers stop, those queued by this look too:
     * each sample then ends as cancelled */
    if (!strcmp(g.status, "cancelled")) {
        char group[LB_SCORE_KEY_MAX];
        snprintf(group, sizeof group, "rollout:%.32s", id);
        (void)lb_score_pool_cancel(group); /* a count, for nobody */
    }
    rc = LB_OK;
    if (active && !left) {
        rc = lb_store_rollout_finish(s, f, id);
        if (rc == LB_OK)
            lb_info("rollout %s: done", id);
        *ended = rc == LB_OK;
    }
out:
    lb_rollout_samples_free(v, n);
    lb_rollout_rec_free(&g);
    return rc;
}

static void group_tick(lb_store *s, const char *id, int64_t *running, int *no_slot)
{
    lb_runner_fence f;
    if (!lb_runner_held_fence(&lb_rr_held, id, &f))
        return; /* several nodes: no fresh lease: nothing is written until it is renewed */
    int ended = 0;
    int rc = group_look(s, &f, id, running, no_slot, &ended);
    if (ended)
        lb_runner_held_drop(&lb_rr_held, id); /* done: nothing more to drive */
    if (rc == LB_E_DENIED)
        lb_info("rollout %s: another web drives it now; this web lets go", id);
    if (rc == LB_E_DENIED || rc == LB_E_NOTFOUND)
        lb_runner_held_drop(&lb_rr_held, id); /* another web's now, or deleted */
}

/* One look at every group this web holds (the rollouts' job source), after
 * renewing its claims and claiming what it has room for (several nodes). */
static void rollouts_tick(lb_store *s, int *no_slot)
{
    static lb_runner_claim ids[LB_RUNNER_CLAIM_MAX]; /* runner thread only */
    int64_t running = 0;
    lb_runner_held_refresh(s, &lb_rr_held, lb_rr_held.n < LB_RR_CACHE ? LB_RR_CACHE - lb_rr_held.n : 0);
    if (lb_store_rollout_running(s, &running) != LB_OK)
        return;
    /* a copy: a look may let go of the group it looks at */
    size_t n = lb_rr_held.n;
    memcpy(ids, lb_rr_held.v, n * sizeof ids[0]);
    for (int i = 0; i < lb_rr_ncache; i++)
        lb_rr_cache[i].seen = 0;
    for (size_t i = 0; i < n; i++)
        group_tick(s, ids[i].id, &running, no_slot);
    /* groups no longer active here give their request's memory back */
    for (int i = 0; i < lb_rr_ncache;)
        if (!lb_rr_cache[i].seen) {
            cJSON_Delete(lb_rr_cache[i].req);
            free(lb_rr_cache[i].files_dir);
            lb_rr_cache[i] = lb_rr_cache[--lb_rr_ncache];
        } else {
            i++;
        }
}

static void rollouts_release(lb_store *s, size_t *released)
{
    lb_runner_held_release(s, &lb_rr_held, released);
}

int lb_rollout_runner_init(const lb_config *cfg)
{
    lb_rr_cfg = cfg;
    lb_info(
        "web: rollouts: at most %d samples running at once (rollout_max_samples), each in a task slot of max_tasks %d",
        cfg->rollout_max_samples, cfg->max_concurrent_tasks);
    int rc = lb_runner_add_source(rollouts_tick);
    return rc == LB_OK ? lb_runner_add_release(rollouts_release) : rc;
}
