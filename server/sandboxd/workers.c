/* Worker threads for sandboxd's blocking work (the contract is workers.h).
 *
 * What a worker may touch: the job's own sandbox, which nothing else sees
 * while the job runs, and the few shared things the make and the teardown
 * need, each safe from two threads: the uid slots (uidslot.c, a mutex),
 * the host limits and the seccomp program (read only once sandboxd has
 * started), the cgroup mode (detected at start), the log (one write(2) a
 * line). Everything the loop owns (connections, the sandbox list, the
 * pool's lists) stays on the loop: a job's result is handed back.
 *
 * A sandbox's init is not cloned from the worker's thread: the worker asks
 * the zygote (zygote.h), one request at a time under its lock, and the
 * init it clones is sandboxd's child all the same.
 */
#include "sandboxd/workers.h"

#include "sandboxd/sandbox_create.h"

#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define LBSD_WORKERS_MAX 64

static pthread_mutex_t w_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t w_cv = PTHREAD_COND_INITIALIZER;
static lbsd_job *w_head, *w_tail;      /* queued, oldest first */
static lbsd_job *w_done_head, *w_done_tail;
static int w_inflight[LBSD_JOB_STATE + 1];
static int w_stopping;
static int w_efd = -1;
static pthread_t w_threads[LBSD_WORKERS_MAX];
static int w_n;

lbsd_job *lbsd_job_new(lbsd_job_kind kind, const lb_config *cfg, lbsd_req *req)
{
    lbsd_job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->kind = kind;
    j->cfg = cfg;
    j->pool_img = -1;
    if (req) {
        j->req = *req;
        req->json = NULL; /* the job's now: its strings point into it */
    }
    return j;
}

void lbsd_job_free(lbsd_job *job)
{
    if (!job)
        return;
    lbsd_req_free(&job->req);
    if (job->state_free)
        job->state_free(job->state);
    free(job);
}

/* The work itself, on whichever thread runs it. */
static void job_run(lbsd_job *j)
{
    j->rc = LB_OK;
    switch (j->kind) {
    case LBSD_JOB_CREATE:
    case LBSD_JOB_REFILL:
        j->rc = lbsd_sandbox_make(j->cfg, &j->req, &j->sb, j->msg, sizeof j->msg);
        if (j->rc != LB_OK || j->kind == LBSD_JOB_REFILL)
            break;
        /* a create copies its inputs in, like a pool hit */
        __attribute__((fallthrough));
    case LBSD_JOB_INPUT:
        if (j->req.input_dir)
            j->rc = lbsd_sandbox_load_input(j->sb, j->req.input_dir, j->uid, j->gid, j->msg, sizeof j->msg);
        if (j->rc != LB_OK) {
            lb_warn("sandbox %s: input copy failed: %s", j->sb->id, j->msg);
            lbsd_sandbox_destroy(j->sb);
            j->sb = NULL;
        }
        break;
    case LBSD_JOB_DESTROY:
        lbsd_sandbox_destroy(j->sb);
        j->sb = NULL;
        break;
    case LBSD_JOB_STATE: /* follow-ups */
        j->run(j);
        break;
    }
}

static void job_finish(lbsd_job *j)
{
    pthread_mutex_lock(&w_mu);
    if (j->kind == LBSD_JOB_DESTROY && !j->answer) {
        w_inflight[j->kind]--;
        pthread_mutex_unlock(&w_mu);
        lbsd_job_free(j);
        return;
    }
    j->next = NULL;
    if (w_done_tail)
        w_done_tail->next = j;
    else
        w_done_head = j;
    w_done_tail = j;
    pthread_mutex_unlock(&w_mu);
    uint64_t one = 1;
    /* a full counter (2^64 - 2 wakes) cannot happen; the loop reads it each pass */
    if (w_efd >= 0 && write(w_efd, &one, sizeof one) != (ssize_t)sizeof one)
        lb_warn("workers: cannot wake the event loop: %s", strerror(errno));
}

static void *worker_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&w_mu);
        while (!w_head && !w_stopping)
            pthread_cond_wait(&w_cv, &w_mu);
        lbsd_job *j = w_head;
        if (!j) { /* stopping and nothing left */
            pthread_mutex_unlock(&w_mu);
            return NULL;
        }
        w_head = j->next;
        if (!w_head)
            w_tail = NULL;
        pthread_mutex_unlock(&w_mu);
        job_run(j);
        job_finish(j);
    }
}

int lbsd_workers_start(int n)
{
    if (n < 1 || n > LBSD_WORKERS_MAX)
        return LB_E_INVAL;
    w_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w_efd < 0)
        return LB_E_IO;
    w_stopping = 0;
    for (w_n = 0; w_n < n; w_n++) {
        if (pthread_create(&w_threads[w_n], NULL, worker_main, NULL) != 0) {
            lb_warn("workers: only %d of %d threads started", w_n, n);
            break;
        }
    }
    return w_n > 0 ? LB_OK : LB_E_INTERNAL;
}

int lbsd_workers_fd(void)
{
    return w_efd;
}

void lbsd_workers_submit(lbsd_job *job)
{
    pthread_mutex_lock(&w_mu);
    w_inflight[job->kind]++;
    if (w_n == 0 || w_stopping) {
        pthread_mutex_unlock(&w_mu);
        job_run(job);
        job_finish(job);
        return;
    }
    job->next = NULL;
    if (w_tail)
        w_tail->next = job;
    else
        w_head = job;
    w_tail = job;
    pthread_cond_signal(&w_cv);
    pthread_mutex_unlock(&w_mu);
}

lbsd_job *lbsd_workers_done(void)
{
    uint64_t v;
    if (w_efd >= 0 && read(w_efd, &v, sizeof v) < 0 && errno != EAGAIN)
        lb_warn("workers: eventfd: %s", strerror(errno));
    pthread_mutex_lock(&w_mu);
    lbsd_job *j = w_done_head;
    if (j) {
        w_done_head = j->next;
        if (!w_done_head)
            w_done_tail = NULL;
        j->next = NULL;
        w_inflight[j->kind]--;
    }
    pthread_mutex_unlock(&w_mu);
    return j;
}

int lbsd_workers_inflight(lbsd_job_kind kind)
{
    pthread_mutex_lock(&w_mu);
    int n = w_inflight[kind];
    pthread_mutex_unlock(&w_mu);
    return n;
}

void lbsd_workers_stop(void)
{
    pthread_mutex_lock(&w_mu);
    w_stopping = 1;
    pthread_cond_broadcast(&w_cv);
    pthread_mutex_unlock(&w_mu);
    for (int i = 0; i < w_n; i++)
        pthread_join(w_threads[i], NULL);
    w_n = 0;
}
