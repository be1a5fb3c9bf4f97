/* Scoring apart from the episodes (score_pool.c): a few threads of `llmbox
 * web`, fed by one queue, each waiting on one `llmbox score` process at a
 * time, with the request's own time limit. The evaluations' runner and the
 * rollout runner hand it their finished runs, so a slow verifier (a judge
 * model, a script or SymPy in a sandbox) never holds a task slot or the
 * scheduling of other runs: the episode's task has ended before its run is
 * queued here (the INIT / RUN / POSTRUN split of large RL systems). */
#ifndef LB_WEB_SCORE_POOL_H
#define LB_WEB_SCORE_POOL_H

#include <stddef.h>

#include "common/config.h"
#include "common/status.h"

struct lb_store; /* store/store.h */

#define LB_SCORE_TIMEOUT_DEFAULT_S 120 /* a scorer's limit when the request names none */
#define LB_SCORE_TIMEOUT_MAX_S 3600
#define LB_SCORE_KEY_MAX 64

/* One request to `llmbox score` (docs/EVAL.md, "llmbox score"). */
typedef struct lb_score_req {
    const char *scorer;         /* exact, numeric, choice, boxed, script, judge */
    const char *answer;
    const char *gt_json;        /* the ground truth as JSON text; NULL: null */
    const char *row_json;       /* the row handed to scorers; NULL: {} */
    const char *script;         /* the script scorer's program, or NULL */
    const char *judge_model;
    int judge_votes;
    int timeout_s;              /* the scorer's own limit; the process is killed a grace later */
    const char *req_path;       /* where the request file is written (removed after) */
} lb_score_req;

/* What it said. detail malloc'd (free it); error_class "" when it gave a
 * score. */
typedef struct lb_score_out {
    double score;               /* -1: none */
    char *detail;
    char scorer[64];
    char error_class[64];       /* scorer_timeout, scorer_error, judge_unavailable, bad_request */
} lb_score_out;

/* Runs `llmbox score` on q and waits (at most q->timeout_s plus a grace).
 * LB_OK when it printed a result line (o->error_class may still name an
 * error); else an error with error_class and detail set. */
LB_MUST_CHECK int lb_score_exec(const lb_config *cfg, const lb_score_req *q, lb_score_out *o);

/* Starts threads scorer threads with cfg (kept). Once. */
LB_MUST_CHECK int lb_score_pool_start(const lb_config *cfg, int threads);
/* Queues fn(store, arg) on a scorer thread; done(arg) runs after it (on
 * that thread). key names the run, so a run is never queued twice:
 * LB_E_EXISTS while one of that key is queued or running, LB_E_BUSY when
 * the queue is full (ask again later). When refused, arg stays the
 * caller's (done is not called: it would wake the runner for nothing). */
LB_MUST_CHECK int lb_score_pool_submit(const char *key, void (*fn)(struct lb_store *s, void *arg),
                                       void (*done)(void *arg), void *arg);
/* Whether a job of key is queued or running. */
int lb_score_pool_has(const char *key);

#endif
