/* One way in for new work: every request that makes a task (create,
 * "Run again", and the kinds of work that come later) is admitted here, so
 * the service's task slots, the user's limits and the cleanup of a refused
 * request live in one place.
 *
 *   lb_admission a;
 *   if (lb_admit_begin(r, &a, NULL) == LB_OK)   // slot, user start, id, folder
 *       ... fill a.input_dir, build the lb_task_new ...
 *       rc = lb_admit_commit(r, &a, &t);       // store, spawn, answer 201
 *   lb_admit_end(&a);                      // always: gives back what a
 *                                          // refused or failed one held
 *
 * Every refusal is answered here (429, 500, 507), the request body drained
 * first; the caller answers only its own refusals between begin and
 * commit. */
#ifndef LB_WEB_ADMISSION_H
#define LB_WEB_ADMISSION_H

#include "common/config.h"
#include "common/status.h"
#include "store/store.h"
#include "web/request.h"
#include "web/user_limits.h"

typedef struct lb_admission {
    char id[33];                        /* the new task's id */
    char task_dir[LB_CFG_PATH + 64];    /* artifacts/<id> */
    char input_dir[LB_CFG_PATH + 80];   /* artifacts/<id>/input, made by begin */
    lb_start_ticket ticket;             /* the user's start (web/user_limits.c) */
    int slot;                           /* a task slot is held (lb_spawn_reserve) */
    int dir_made;                       /* task_dir exists and is ours to remove */
    int committed;                      /* the task is stored: all of it is the task's now */
    /* several nodes: inputs into the object store at commit (common/blob_task.c) */
    const lb_config *cfg;               /* set by begin */
    char blob_err[512];                 /* why the inputs could not be stored */
} lb_admission;

/* Admits one new task for r: the user's limits (tasks queued or running,
 * starts per minute), a task slot of max_concurrent_tasks, a new id and
 * its folder with input/ (and stage/, mode 0700, when stage is not NULL).
 * LB_OK when admitted; when refused, the answer is sent and the status
 * says why (LB_E_BUSY: a limit or no slot; LB_E_IO: the folder; the
 * store's error). Call lb_admit_end afterwards either way. */
LB_MUST_CHECK int lb_admit_begin(lb_req *r, lb_admission *a, const char *stage);
/* Stores t (queued; t->id must be a->id), spawns its agent with the held
 * slot, and answers 201 with the task. LB_OK when the task was stored (a
 * failed spawn ends it as failed, still LB_OK); when not, answered:
 * LB_E_BUSY (429: the user's limit was reached meanwhile), the object
 * store's status (503: the inputs could not be stored there) or the
 * store's error. */
LB_MUST_CHECK int lb_admit_commit(lb_req *r, lb_admission *a, const lb_task_new *t);
/* The same two steps without an HTTP request, for the evaluations'
 * runner (jobs/eval_runner.c): no user start is taken (the runner bounds
 * an eval's tasks itself), and the slot is taken only while keep_free
 * slots stay free for people's tasks (lb_spawn_reserve_leaving). begin:
 * LB_OK, or LB_E_BUSY (no slot), LB_E_INTERNAL, LB_E_IO with a sentence in
 * err. commit: LB_OK once stored (a failed spawn ends the task as
 * failed), else the store's status (LB_E_BUSY: t->owner_max_active
 * reached). Call lb_admit_end afterwards either way. The agent of an
 * internal task runs at nice LB_ADMIT_BACKGROUND_NICE, so that people's
 * agents get the CPU first when both wait for it. */
#define LB_ADMIT_BACKGROUND_NICE 10
LB_MUST_CHECK int lb_admit_begin_internal(const lb_config *cfg, int keep_free, lb_admission *a, char *err,
                                          size_t errsz);
LB_MUST_CHECK int lb_admit_commit_internal(lb_store *s, lb_admission *a, const lb_task_new *t);
/* Follow-up rounds (follow-ups, handlers_messages.c): the next round of
 * an existing task comes in like a new task, without a new id or folder
 * (a->id and the folders are the task's; dir_made stays 0, so nothing of
 * the task is ever removed here). begin: the user's start and a task
 * slot, LB_OK or answered (429). spawn: once lb_store_round_begin has
 * stored the round, its agent with the held slot (a failed spawn ends
 * the round as failed); the admission is committed. */
LB_MUST_CHECK int lb_admit_begin_round(lb_req *r, lb_admission *a, const char *task_id);
void lb_admit_spawn_round(lb_store *s, lb_admission *a);
/* Forks (handlers_fork.c): a fork runs nothing, so it takes no task
 * slot, but it is a new task of its user all the same and comes in
 * here: the user's limits (tasks queued or running, starts per minute),
 * a new id and its folder (task_dir only: the fork links its own
 * input/ and output/). begin: LB_OK, or answered (429, 500, 507). Once
 * lb_store_task_fork has stored it, lb_admit_commit_fork marks it the
 * task's (the start counts, the folder stays); lb_admit_end otherwise. */
LB_MUST_CHECK int lb_admit_begin_fork(lb_req *r, lb_admission *a);
void lb_admit_commit_fork(lb_admission *a);
/* Gives back what an admission that made no task holds: the slot, the
 * user's start (a refused request does not count), the folder. Nothing
 * once committed. Safe to call twice, and after a refused begin. */
void lb_admit_end(lb_admission *a);

#endif
