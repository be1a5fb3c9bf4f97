/* The runner of jobs (runner.c), with its two sources: evaluations
 * (eval_runner.h, one task per run of a dataset row) and rollout groups
 * (rollout_runner.h, one task per sample). What they share is here: the
 * claims a source holds and the recovery of a unit of work whose task was
 * made by a runner that stopped before recording it.
 *
 * The claims (several nodes): the evaluations' and the rollout groups' runners
 * drive only the work they have claimed in the store (store/store_claim.h),
 * so of several webs on one store exactly one drives each evaluation or
 * group, and another takes it over once the holder's lease lapses.
 *
 * Each look (every LB_EVAL_POLL_MS) a source calls lb_runner_held_refresh:
 * every third of the lease it renews what it holds (one statement: what
 * is not renewed is no longer its own), then claims unclaimed or lapsed
 * work while it has room. Its first claim also takes the work an earlier
 * process of this same web held (same identity, node_name or the host
 * name), so a restarted web goes on at once as it always did rather than
 * after its old lease; with SQLite, one web, it therefore always holds
 * every claim. The writes it makes carry the claim's fence, and a write
 * refused (LB_E_DENIED) drops the item (lb_runner_held_drop). */
#ifndef LB_JOBS_RUNNER_H
#define LB_JOBS_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "store/store.h"
#include "store/store_claim.h"

/* What one source holds (runner thread only). */
typedef struct lb_runner_held {
    lb_runner_kind kind;
    lb_runner_claim v[LB_RUNNER_CLAIM_MAX];
    size_t n;
    int64_t renewed_ms;         /* monotonic: when the last renewal that answered was asked */
    int claimed_once;           /* the first claim (with the takeover) was made */
} lb_runner_held;

/* Stops task id, made for a run or a sample that will not have it (its
 * work was cancelled, or another web started it meanwhile): its agent if
 * this web runs it, else in the store (a queued task, another host's). */
void lb_runner_stop_task(lb_store *s, const char *id, const char *reason);

/* This process's owner id, "<node_name or host name>/<pid>-<start ms>",
 * and the runners' lease (runner_lease_s), from cfg. Once, before the
 * runner thread starts. */
void lb_runner_identity_init(const lb_config *cfg);
/* The owner id (after lb_runner_identity_init). */
const char *lb_runner_owner(void);
/* Renews h when due, then claims up to room (0: none) more items. */
void lb_runner_held_refresh(lb_store *s, lb_runner_held *h, size_t room);
/* 1 with *f set when id is held and the last renewal is recent enough to
 * start work under it (two thirds of the lease); else 0. */
int lb_runner_held_fence(const lb_runner_held *h, const char *id, lb_runner_fence *f);
/* Forgets id (it ended, or a fenced write was refused: another web holds
 * it now). */
void lb_runner_held_drop(lb_runner_held *h, const char *id);
/* Gives every claim of h back in the store (a web that stops: another web
 * takes the work at its next look instead of after the lease) and
 * forgets them; *released: how many. */
void lb_runner_held_release(lb_store *s, lb_runner_held *h, size_t *released);

/* Starts a unit of work (a run, a sample) on task_id under f: the source's
 * store write that records it (lb_store_eval_run_start,
 * lb_store_rollout_sample_start). */
typedef int lb_runner_start_fn(lb_store *s, const lb_runner_fence *f, const void *unit, const char *task_id);

/* Recovery: a unit whose start_task names a task that exists was started
 * by a runner that stopped between making the task and recording it: the
 * unit takes that task instead of a second one. LB_E_NOTFOUND when there
 * is no such task (start it anew), else start's answer. source and what
 * name the unit in the log ("eval", "run 12"). */
LB_MUST_CHECK int lb_runner_adopt(lb_store *s, const lb_runner_fence *f, const char *start_task,
                                  lb_runner_start_fn *start, const void *unit, const char *source,
                                  const char *what);

#endif
