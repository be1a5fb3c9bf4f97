/* Evaluations in the task store (schema v7, store_eval.c).
 *
 * An eval is a dataset x modes x repeats run by the service
 * (jobs/eval_runner.c). Each run (row x mode x repeat) is one row of
 * eval_runs, unique per (eval, row id, mode, repeat); the runner moves it
 *   pending -> running (its task made) -> scoring (its task ended)
 *           -> done (result line stored) | error (could not run or score)
 *   pending -> skipped (the eval was cancelled)
 * and the table is the truth: results.jsonl is rendered from the stored
 * result lines in row order, never kept as a file. Eval statuses are the
 * task statuses' names (queued, running, succeeded, failed, cancelled);
 * the last three are final. Deleting an eval deletes its runs (the tasks
 * it made stay: they are ordinary tasks of its owner).
 *
 * several nodes: the writes of the runner take the fence of its claim on the
 * eval (store_claim.h; NULL: unfenced, for tests and tools) and are
 * refused with LB_E_DENIED, changing nothing, once another web holds the
 * eval or the claim's lease has expired. A run is started in two fenced
 * steps around the making of its task: reserve (the task's id written as
 * start_task), then start; a pending run with a start_task whose task
 * exists was made by a runner that stopped in between, and is adopted. */
#ifndef LB_STORE_EVAL_H
#define LB_STORE_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "store/store.h"
#include "store/store_claim.h" /* several nodes: the runner's fence */

/* One eval as stored. Strings malloc'd (NULL where the column is NULL);
 * times -1 when not yet. Free with lb_eval_rec_free. */
typedef struct lb_eval_rec {
    char id[33];
    char *owner;                /* NULL: made without users */
    char *name;
    char status[16];
    char *options_json;         /* the eval's options object (jobs/handlers_evals.c) */
    char *dataset;              /* the dataset's path on the server */
    int64_t created_ms, started_ms, finished_ms;
    char *error;                /* why it failed, or NULL */
    int64_t wall_ms_llm, wall_ms_sandbox; /* per mode: first submission to last answer */
    char *summary_json;         /* lb_eval_summary once done, or NULL */
} lb_eval_rec;

/* A run to insert with its eval. */
typedef struct lb_eval_run_new {
    int64_t row_idx;            /* the row's place in the dataset, from 0 */
    const char *row_id;
    const char *mode;           /* "llm" | "sandbox" */
    int repeat;                 /* from 0 */
    const char *status;         /* "pending", or "done"/"error" with result_json */
    const char *result_json;    /* one results.jsonl line, or NULL */
} lb_eval_run_new;

/* One run as stored (strings malloc'd). */
typedef struct lb_eval_run {
    int64_t rid;                /* its key */
    int64_t row_idx;
    char *row_id;
    char mode[8];
    int repeat;
    char status[12];
    char task_id[33];           /* "" while it has none */
    char *result_json;          /* NULL until done or error */
    int64_t started_ms, finished_ms; /* -1: not yet */
    char start_task[33];        /* several nodes: a pending run's task being made ("" : none) */
} lb_eval_run;

/* Runs per status of one eval; failed: the done ones whose result's
 * status is "failed" (their task did not succeed: scored 0). */
typedef struct lb_eval_counts {
    int64_t total, pending, running, scoring, done, error, skipped, failed;
} lb_eval_counts;

void lb_eval_rec_free(lb_eval_rec *e);
void lb_eval_recs_free(lb_eval_rec *v, size_t n);
void lb_eval_runs_free(lb_eval_run *v, size_t n);

/* Stores e (its id, owner, name, status, options_json, dataset,
 * created_ms) and its n runs in one transaction. LB_E_EXISTS: an id, or a
 * run's (row_id, mode, repeat), is there already. */
LB_MUST_CHECK int lb_store_eval_insert(lb_store *s, const lb_eval_rec *e, const lb_eval_run_new *runs, size_t n);
/* The eval id into *out (free with lb_eval_rec_free). LB_E_NOTFOUND. */
LB_MUST_CHECK int lb_store_eval_load(lb_store *s, const char *id, lb_eval_rec *out);
/* owner's evals (owner NULL: all), newest first, at most limit (1..1000);
 * summary_json is not loaded. *out: free with lb_eval_recs_free. */
LB_MUST_CHECK int lb_store_eval_list(lb_store *s, const char *owner, int limit, lb_eval_rec **out, size_t *n);
/* Ids of evals queued or running, and of evals that ended with runs
 * still running or scoring (a cancel), oldest first: the work runners
 * claim (store_claim.h, the same rule). Caller frees the array and each
 * string. */
LB_MUST_CHECK int lb_store_evals_active(lb_store *s, char ***ids, size_t *n);
/* queued -> running, with started_ms. LB_E_EXISTS when it is not queued. */
LB_MUST_CHECK int lb_store_eval_set_running(lb_store *s, const lb_runner_fence *f, const char *id);
/* Ends an eval that is not final yet: status (succeeded, failed), error
 * (may be NULL), its summary and wall times. LB_E_EXISTS when it was final
 * already (cancelled meanwhile), LB_E_NOTFOUND. */
LB_MUST_CHECK int lb_store_eval_finish(lb_store *s, const lb_runner_fence *f, const char *id, const char *status,
                                       const char *error,
                                       const char *summary_json, int64_t wall_ms_llm, int64_t wall_ms_sandbox);
/* Cancels an eval that is not final: status cancelled and every pending
 * run skipped, in one transaction (the runner then takes none of them).
 * Runs running or scoring are left to the caller (their tasks are
 * cancelled; what they finish is scored and kept). LB_E_EXISTS when it
 * was final already. */
LB_MUST_CHECK int lb_store_eval_cancel(lb_store *s, const char *id);
/* Deletes the eval and its runs. LB_E_NOTFOUND. */
LB_MUST_CHECK int lb_store_eval_delete(lb_store *s, const char *id);
LB_MUST_CHECK int lb_store_eval_counts(lb_store *s, const char *id, lb_eval_counts *out);

/* Which runs lb_store_eval_runs returns, in which order. */
typedef enum lb_eval_runs_of {
    LB_RUNS_ALL,        /* every run, in row order (row, mode, repeat): the results' order */
    LB_RUNS_PENDING,    /* pending ones in scheduling order: mode (llm first), row, repeat */
    LB_RUNS_ACTIVE,     /* running and scoring ones (the runner's watch) */
} lb_eval_runs_of;
/* A page of an eval's runs: skip offset, at most limit (1..10000).
 * *out: free with lb_eval_runs_free. */
LB_MUST_CHECK int lb_store_eval_runs(lb_store *s, const char *id, lb_eval_runs_of which, int64_t offset, int limit,
                                     lb_eval_run **out, size_t *n);
/* several nodes: a pending run's task is about to be made with id task_id
 * (start_task). LB_E_EXISTS when the run is not pending. */
LB_MUST_CHECK int lb_store_eval_run_reserve(lb_store *s, const lb_runner_fence *f, int64_t rid, const char *task_id);
/* pending -> running with its task and started_ms (start_task cleared).
 * LB_E_EXISTS when the run was not pending (the eval was cancelled
 * meanwhile) or is being started with another task. */
LB_MUST_CHECK int lb_store_eval_run_start(lb_store *s, const lb_runner_fence *f, int64_t rid, const char *task_id);
/* from -> to (result_json kept when not NULL; finished_ms set when to is
 * done or error). LB_E_EXISTS when the run was not in from. */
LB_MUST_CHECK int lb_store_eval_run_move(lb_store *s, const lb_runner_fence *f, int64_t rid, const char *from,
                                         const char *to, const char *result_json);
/* several nodes: run rid's task_id and start_task (33 bytes each; "" : none).
 * LB_E_NOTFOUND. */
LB_MUST_CHECK int lb_store_eval_run_task(lb_store *s, int64_t rid, char *task_id, char *start_task);

#endif
