/* Rollout groups in the task store (schema v8, store_rollout.c).
 *
 * A group is n samples of one request (jobs/handlers_rollouts.c); each
 * sample is one ordinary task of the group's owner, made by the runner
 * (jobs/rollout_runner.c), which moves it
 *   queued -> running (its task made) -> scoring (its task ended) -> done
 *   queued -> done (outcome cancelled: the group was cancelled)
 * and the table is the truth. A group is running until every sample is
 * done, then done; or cancelled. Deleting a group deletes its samples'
 * rows (their tasks stay: ordinary tasks of the owner).
 *
 * several nodes: the runner's writes take the fence of its claim on the group
 * (store_claim.h; NULL: unfenced, for tests and tools): LB_E_DENIED,
 * nothing changed, once another web holds it or the lease has expired. A
 * sample is started in two fenced steps around the making of its task,
 * reserve (start_task) and start, as an eval's run (store_eval.h). */
#ifndef LB_STORE_ROLLOUT_H
#define LB_STORE_ROLLOUT_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "store/store.h"
#include "store/store_claim.h" /* several nodes: the runner's fence */

#define LB_ROLLOUT_N_MAX 64 /* samples of one group (the contract's 1..64) */

/* One group as stored. Strings malloc'd; times -1 when not yet. Free with
 * lb_rollout_rec_free. */
typedef struct lb_rollout_rec {
    char id[33];
    char *owner;                /* NULL: made with the sandbox API token, or without users */
    char status[12];            /* running | done | cancelled */
    int n;
    char *request_json;         /* the normalised request (handlers_rollouts.c), when asked for */
    int64_t created_ms, finished_ms;
} lb_rollout_rec;

/* One sample as stored. */
typedef struct lb_rollout_sample {
    int idx;
    char status[12];            /* queued | running | scoring | done */
    char task_id[33];           /* "" while it has none */
    char outcome[16];           /* "" until done: ok, model_error, sandbox_error, timeout, scorer_error, cancelled */
    int has_reward;
    double reward;
    char *result_json;          /* the scored sample's fields (rollout_runner.c), or NULL */
    int64_t started_ms, finished_ms;
    char start_task[33];        /* several nodes: a queued sample's task being made ("" : none) */
} lb_rollout_sample;

void lb_rollout_rec_free(lb_rollout_rec *g);
void lb_rollout_samples_free(lb_rollout_sample *v, size_t n);

/* Stores group g (id, owner, n, request_json, created_ms; status running)
 * and its n queued samples in one transaction. LB_E_EXISTS: the id. */
LB_MUST_CHECK int lb_store_rollout_insert(lb_store *s, const lb_rollout_rec *g);
/* Group id into *out, with its request when with_request. LB_E_NOTFOUND. */
LB_MUST_CHECK int lb_store_rollout_load(lb_store *s, const char *id, int with_request, lb_rollout_rec *out);
/* The group's samples in index order (*out: lb_rollout_samples_free). */
LB_MUST_CHECK int lb_store_rollout_samples(lb_store *s, const char *id, lb_rollout_sample **out, size_t *n);
/* Ids of groups running, or with samples running or scoring (a cancel),
 * oldest first: the work runners claim (store_claim.h, the same rule).
 * Caller frees the array and each id. */
LB_MUST_CHECK int lb_store_rollouts_active(lb_store *s, char ***ids, size_t *n);
/* Samples running in every group (the rollout_max_samples bound). */
LB_MUST_CHECK int lb_store_rollout_running(lb_store *s, int64_t *n);
/* several nodes: a queued sample's task is about to be made with id task_id
 * (start_task). LB_E_EXISTS when it is not queued. */
LB_MUST_CHECK int lb_store_rollout_sample_reserve(lb_store *s, const lb_runner_fence *f, const char *id, int idx,
                                                  const char *task_id);
/* queued -> running with its task (start_task cleared). LB_E_EXISTS when
 * it was not queued or is being started with another task. */
LB_MUST_CHECK int lb_store_rollout_sample_start(lb_store *s, const lb_runner_fence *f, const char *id, int idx,
                                                const char *task_id);
/* several nodes: sample idx's task_id and start_task (33 bytes each; "" :
 * none). LB_E_NOTFOUND. */
LB_MUST_CHECK int lb_store_rollout_sample_task(lb_store *s, const char *id, int idx, char *task_id, char *start_task);
/* from -> to; when to is done: outcome, the reward (has_reward 0: null)
 * and result_json are kept and finished_ms set. LB_E_EXISTS when the
 * sample was not in from. */
LB_MUST_CHECK int lb_store_rollout_sample_move(lb_store *s, const lb_runner_fence *f, const char *id, int idx,
                                               const char *from, const char *to, const char *outcome, int has_reward,
                                               double reward, const char *result_json);
/* running -> done once no sample is left that is not done. LB_E_EXISTS:
 * not running or samples left. */
LB_MUST_CHECK int lb_store_rollout_finish(lb_store *s, const lb_runner_fence *f, const char *id);
/* Cancels a running group: status cancelled, its queued samples done
 * with outcome cancelled, in one transaction. Samples running or scoring
 * are left to the caller (their tasks are cancelled; they end as
 * cancelled). LB_E_EXISTS when it was not running. */
LB_MUST_CHECK int lb_store_rollout_cancel(lb_store *s, const char *id);
/* Deletes the group and its samples. LB_E_NOTFOUND. */
LB_MUST_CHECK int lb_store_rollout_delete(lb_store *s, const char *id);

#endif
