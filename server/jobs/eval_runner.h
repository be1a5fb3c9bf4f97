/* The evaluations' runner (eval_runner.c): one thread in `llmbox web`
 * that turns each pending run of an eval (row x mode x repeat, stored by
 * store/store_eval.h) into an ordinary task, and a few scorer threads
 * that score each run whose task has ended (`llmbox score`, a separate
 * process with a time limit) and store its result line.
 *
 * Fair share: the runner takes a task slot only while
 * lb_eval_reserve_slots() slots stay free (web/admission.h,
 * lb_admit_begin_internal), so however many evals run, people's own tasks
 * always find one. Within that, each eval runs at most its concurrency.
 *
 * State lives in the store only: a web restart finds the runs left
 * running (their tasks go on as usual, or have ended: then they are
 * scored) and goes on with the pending ones. */
#ifndef LB_WEB_EVAL_RUNNER_H
#define LB_WEB_EVAL_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include "common/netpolicy.h" /* LB_NETPOL_TEXT_MAX */
#include "common/config.h"
#include "common/status.h"
#include "eval/dataset.h"

struct lb_store; /* store/store.h */

/* An eval's options as stored (evals.options, a JSON object that
 * handlers_evals.c writes). */
typedef struct lb_eval_opts {
    int llm, sandbox;           /* the modes it runs (mode "both": both) */
    char model[LB_CFG_MODEL_NAME];
    int repeats;                /* 1..64 */
    int concurrency;            /* tasks at once, 1..eval_max_concurrency */
    int limit;                  /* 0: every row; else the first limit rows */
    char layout[16];            /* "official" | "llmbox" */
    int max_turns;              /* 0: the service's default */
    int64_t token_budget;       /* -1: the service's default */
    int timeout_s;              /* 0: the service's default */
    int64_t max_tokens;         /* 0: none asked (the model's setting) */
    char judge_model[LB_CFG_MODEL_NAME]; /* "" : the eval's model */
    int judge_votes;            /* 1..9 */
    char network[LB_NETPOL_TEXT_MAX + 1]; /* its tasks' network as a task holds it; "": none */
    char image[257];            /* its rows' image but for a row's own (a name or a reference); "": the default */
} lb_eval_opts;

/* Reads options JSON text into *o. LB_E_INVAL when it is not an object of
 * that shape (written by us, so only a damaged row is refused). */
LB_MUST_CHECK int lb_eval_opts_parse(const char *json, lb_eval_opts *o);

/* The task slots no eval may take: configured (eval_reserve_slots), or
 * when -1 max(2, max_tasks / 4); never more than max_tasks - 1, so an
 * eval can always run one task. */
int lb_eval_reserve_slots(int configured, int max_tasks);

/* The dataset caps of cfg: lb_eval_limits_default with eval_max_rows,
 * and no more bytes in all than eval_max_upload_mb. */
void lb_eval_limits_for(const lb_config *cfg, lb_eval_limits *lim);

/* The folder of eval id's files (its dataset, its resume file, scorer
 * requests): evals/<id> next to the database (var/web/evals/<id>). */
void lb_eval_dir(const lb_config *cfg, const char *id, char *out, size_t outsz);

/* The summary (lb_eval_summary, as JSON text: caller frees) of every
 * stored result of eval id; *wall_llm and *wall_sbx get each mode's span,
 * first submission to last answer (ms). The runner stores it when an eval
 * ends; the API computes it for a cancelled one. */
LB_MUST_CHECK int lb_eval_summarize(struct lb_store *s, const char *id, char **summary_json, int64_t *wall_llm,
                                    int64_t *wall_sbx);

/* Another job source for the runner's thread (jobs/rollout_runner.c):
 * tick(s, no_slot) is called at each look, in turn with the others; it
 * starts what it may with lb_admit_begin_internal and sets *no_slot when
 * the service had no slot (the sources after it then start nothing).
 * Before lb_eval_runner_start; LB_E_TOOBIG past a few sources. */
typedef void (*lb_runner_tick_fn)(struct lb_store *s, int *no_slot);
LB_MUST_CHECK int lb_runner_add_source(lb_runner_tick_fn tick);

/* Starts the runner and its scorer threads with cfg (kept, read only).
 * Call once, after lb_spawn_init. */
LB_MUST_CHECK int lb_eval_runner_start(const lb_config *cfg);
/* Wakes the runner now (a new eval, a cancel) instead of at its next
 * poll. Safe from any thread, and before the start (does nothing). */
void lb_eval_runner_wake(void);

/* Another job source's claims, given back when the web stops (several nodes,
 * jobs/runner.h): called on the runner thread. Before
 * lb_eval_runner_start; LB_E_TOOBIG past a few. */
typedef void (*lb_runner_release_fn)(struct lb_store *s, size_t *released);
LB_MUST_CHECK int lb_runner_add_release(lb_runner_release_fn release);
/* A web that stops (SIGTERM): the runner starts nothing more and gives
 * its claims back in the store, so another web takes its evaluations and
 * rollout groups over at once rather than after the lease; waits for that
 * at most timeout_ms. */
void lb_eval_runner_stop(int timeout_ms);

#endif
