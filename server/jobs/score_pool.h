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
    char error_class[64];       /* scorer_timeout, scorer_error, judge_unavailable, bad_request, cancelled
                                 * (lb_score_pool_cancel) */
} lb_score_out;

/* Scores q: exact, numeric and choice here, in this process (pure string
 * work: eval/score_request.h), the others by running `llmbox score` and
 * waiting (at most q->timeout_s plus a grace).
 * LB_OK when it printed a result line (o->error_class may still name an
 * error); else an error with error_class and detail set: LB_E_CANCELLED
 * (error_class "cancelled") when, on a pool thread, its job's group was
 * cancelled before or while it ran. */
LB_MUST_CHECK int lb_score_exec(const lb_config *cfg, const lb_score_req *q, lb_score_out *o);

/* Starts threads scorer threads with cfg (kept), and the fast lane's
 * cfg->score_fast_threads. Once.
 *
 * Two lanes, so that one user's slow scorers cannot hold everyone's:
 * - the slow lane (script, judge, boxed: a sandbox or a model, seconds to
 *   minutes each) has `threads` threads, of which one owner's jobs hold at
 *   most cfg->score_user_share (0: half, at least 1), and a free thread
 *   takes the job of the owner with the fewest running, then the one
 *   served least recently, then the oldest: a user with 1,000 samples
 *   queued delays another's first by at most one scorer's run;
 * - the fast lane (exact, numeric, choice, and runs with no scorer: no
 *   sandbox, a few milliseconds) never waits behind the slow one.
 * A cancelled group's jobs (lb_score_pool_cancel) go first, whatever the
 * shares: they only record that they were cancelled. */
LB_MUST_CHECK int lb_score_pool_start(const lb_config *cfg, int threads);
/* What a job is, for the pool's fairness and cancel. */
typedef struct lb_score_job_info {
    const char *key;            /* names the run: never queued twice */
    const char *group;          /* what lb_score_pool_cancel stops at once ("rollout:ID", "eval:ID"); NULL: key */
    const char *owner;          /* the user whose work it is; NULL or "": the service's own (one owner) */
    const char *scorer;         /* its scorer (lane): NULL when the run is only recorded, not scored */
} lb_score_job_info;
/* Queues fn(store, arg) on a scorer thread of the job's lane; done(arg)
 * runs after it (on that thread). LB_E_EXISTS while a job of that key is
 * queued or running, LB_E_BUSY when the queue is full (ask again later).
 * When refused, arg stays the caller's (done is not called: it would wake
 * the runner for nothing). */
LB_MUST_CHECK int lb_score_pool_submit_job(const lb_score_job_info *info, void (*fn)(struct lb_store *s, void *arg),
                                           void (*done)(void *arg), void *arg);
/* lb_score_pool_submit_job of a slow-lane job of no owner, grouped by its
 * key. */
LB_MUST_CHECK int lb_score_pool_submit(const char *key, void (*fn)(struct lb_store *s, void *arg),
                                       void (*done)(void *arg), void *arg);
/* Whether a job of key is queued or running. */
int lb_score_pool_has(const char *key);
/* Stops the jobs of group: a running scorer is killed (its process group,
 * and with it the sandbox sandboxd made for it), and every job of the
 * group, running, queued or queued later under the same fence, has
 * lb_score_exec answer at once with error_class "cancelled". Call it
 * again for jobs queued after this call. Returns how many jobs it
 * reached. */
int lb_score_pool_cancel(const char *group);
/* Whether scorer is one of the built-in ones that need no sandbox or
 * model (exact, numeric, choice): the fast lane's. */
int lb_score_is_fast(const char *scorer);

#endif
