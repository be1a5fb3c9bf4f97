/* The blocking work of sandboxd, off its event loop: a few worker threads
 * make sandboxes (for a create or the warm pool), copy inputs in, and tear
 * sandboxes down, while the loop goes on serving every other connection
 * (docs/ARCHITECTURE.md, "sandboxd: no request waits behind another's
 * blocking work", says why threads). The loop hands a job over with
 * lbsd_workers_submit and gets it back, done, from lbsd_workers_done when
 * the eventfd of lbsd_workers_fd is readable; a destroy job comes back
 * only when it has an answer to send (its client waits for the teardown:
 * an answered destroy means the sandbox is gone). */
#ifndef LBSD_WORKERS_H
#define LBSD_WORKERS_H

#include <stdint.h>
#include <sys/types.h>

#include "common/config.h"
#include "common/status.h"
#include "sandbox/rpc.h"

struct lbsd_sandbox;

typedef enum lbsd_job_kind {
    LBSD_JOB_CREATE,  /* make a sandbox for req, then copy req's input_dir in */
    LBSD_JOB_INPUT,   /* copy req's input_dir into sb (a sandbox from the pool) */
    LBSD_JOB_REFILL,  /* make a sandbox for the warm pool (pool_img says which image) */
    LBSD_JOB_DESTROY, /* tear sb down (it is unlinked from everything already) */
    LBSD_JOB_STATE,   /* follow-ups: a save or a restore (sandbox_save.c, sandbox_restore.c): run(job) */
} lbsd_job_kind;

#define LBSD_ANSWER_OK 1
#define LBSD_ANSWER_EXPIRED 2

typedef struct lbsd_job {
    struct lbsd_job *next;
    lbsd_job_kind kind;
    const lb_config *cfg;
    struct lbsd_sandbox *sb;  /* INPUT, DESTROY: the sandbox; CREATE, REFILL: the result (NULL on failure) */
    lbsd_req req;             /* CREATE, INPUT, REFILL: owned; freed by lbsd_job_free */
    uint64_t conn_serial;     /* CREATE, INPUT: the connection that asked (it may be gone by the end) */
    uid_t uid;                /* CREATE, INPUT: whose rights the input copy has */
    gid_t gid;
    int net;                  /* CREATE, INPUT: the network mode to attach on the loop */
    int pool_img;             /* REFILL: the image's index in pool.c */
    int answer;               /* DESTROY: 0 none (the worker frees the job); LBSD_ANSWER_OK: {} to
                               * conn_serial; LBSD_ANSWER_EXPIRED: the error in msg, then the
                               * connection's deferred replies (its exec ended with the TTL) */
    int rc;                   /* the outcome: LB_OK or why not, with msg */
    char msg[1024];
    /* STATE (follow-ups): the work, its data (freed with the job by state_free) */
    void (*run)(struct lbsd_job *job);
    void *state;
    void (*state_free)(void *state);
} lbsd_job;

/* Starts n threads (1..64) and the completion eventfd. Call from the loop's
 * thread after it has blocked its signals (the threads, and the sandboxes
 * they clone, inherit the mask) and after lbsd_seccomp_prepare. */
LB_MUST_CHECK int lbsd_workers_start(int n);
/* The eventfd that is readable while jobs are done; -1 before start. */
int lbsd_workers_fd(void);
/* Hands job over (owned by the workers until lbsd_workers_done returns it;
 * a destroy job is freed by its worker). Without workers (not started, or
 * stopping) it runs at once, on the caller's thread. */
void lbsd_workers_submit(lbsd_job *job);
/* The next job done (the caller owns it: lbsd_job_free), or NULL. Call it
 * until NULL once the eventfd is readable: the read resets the eventfd. */
lbsd_job *lbsd_workers_done(void);
/* Jobs of kind submitted and not yet returned (destroys: not yet finished). */
int lbsd_workers_inflight(lbsd_job_kind kind);
/* Lets the workers finish every queued job, joins them; jobs done and not
 * collected are returned by lbsd_workers_done afterwards. */
void lbsd_workers_stop(void);
/* A job with its request moved in (req->json is the job's now; req is
 * left empty), or NULL without memory. */
lbsd_job *lbsd_job_new(lbsd_job_kind kind, const lb_config *cfg, lbsd_req *req);
void lbsd_job_free(lbsd_job *job);

#endif
