/* Admission of new tasks; the contract is admission.h. */
#include "web/admission.h"

#include "common/blob_task.h" /* several nodes */
#include "common/log.h"
#include "common/status.h"
#include "common/task.h"
#include "common/util.h"
#include "store/store_queue.h" /* several nodes */
#include "web/artifact_access.h"
#include "web/http.h"
#include "web/spawn.h"
#include "web/task_json.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

/* A folder of the new task could not be made (errno says why). */
static void lb_admit_dir_failed(lb_req *r, const char *dir)
{
    int e = errno;
    lb_error("web: cannot create %s: %s", dir, strerror(e));
    lb_http_drain(r);
    if (e == ENOSPC || e == EDQUOT)
        lb_http_disk_full(r, "create the task folder");
    else
        lb_http_error(r, 500, NULL, "Could not create the task folder.");
}

/* The slot (taken so that keep_free stay free), the id and the folder of
 * a new task: what both ways in share. LB_OK; LB_E_BUSY (no slot),
 * LB_E_INTERNAL (no id) or LB_E_IO (the folder, errno set, *dir_failed
 * naming it). */
static int lb_admit_take(const lb_config *cfg, lb_admission *a, int person, int keep_free, const char *stage,
                         char *dir_failed, size_t dsz)
{
    /* several nodes: a queue web runs no agent, so a person's task takes no
     * slot of its (max_tasks bounds this host's agents; the nodes' capacity
     * and the user's own max_tasks bound the queue). The runs of an
     * evaluation or a rollout group still take one: it is how they are
     * paced and leave room for people (keep_free). */
    if (!person || strcmp(cfg->task_runner, "queue")) {
        if (lb_spawn_reserve_leaving(keep_free) != LB_OK)
            return LB_E_BUSY;
        a->slot = 1;
    }
    a->cfg = cfg; /* several nodes: for the inputs' upload at commit */
    if (lb_random_hex(a->id, sizeof a->id, 16) != LB_OK)
        return LB_E_INTERNAL;
    snprintf(a->task_dir, sizeof a->task_dir, "%s/%s", cfg->artifacts_dir, a->id);
    snprintf(a->input_dir, sizeof a->input_dir, "%s/input", a->task_dir);
    if (lb_mkdirs(a->input_dir, 0750) != LB_OK) {
        a->dir_made = 1; /* task_dir itself may have been made */
        snprintf(dir_failed, dsz, "%s", a->input_dir);
        return LB_E_IO;
    }
    a->dir_made = 1;
    if (stage) {
        snprintf(dir_failed, dsz, "%s/%s", a->task_dir, stage);
        if (lb_mkdirs(dir_failed, 0700) != LB_OK)
            return LB_E_IO;
    }
    return LB_OK;
}

/* A person's request starts: a cleared admission and the user's start
 * (their limits: answered when refused). */
static int lb_admit_start(lb_req *r, lb_admission *a)
{
    memset(a, 0, sizeof *a);
    a->ticket.user = -1;
    return lb_limits_start(r, &a->ticket);
}

/* No task slot is free: 429, the body drained. */
static void lb_admit_no_slot(lb_req *r)
{
    lb_http_drain(r);
    lb_http_error(r, 429, NULL,
                  "The service is already running as many tasks as it may at once (%d); "
                  "try again when one has finished.",
                  r->cfg->max_concurrent_tasks);
}

int lb_admit_begin(lb_req *r, lb_admission *a, const char *stage)
{
    const lb_config *cfg = r->cfg;
    int rc = lb_admit_start(r, a);
    if (rc != LB_OK)
        return rc; /* the user's own limits: answered */
    char dir[sizeof a->task_dir + 64];
    rc = lb_admit_take(cfg, a, 1, 0, stage, dir, sizeof dir);
    if (rc == LB_E_BUSY) {
        lb_admit_no_slot(r);
    } else if (rc == LB_E_INTERNAL) {
        lb_http_drain(r);
        lb_http_error(r, 500, NULL, "Could not make a task id.");
    } else if (rc == LB_E_IO) {
        lb_admit_dir_failed(r, dir);
    }
    return rc;
}

int lb_admit_begin_internal(const lb_config *cfg, int keep_free, lb_admission *a, char *err, size_t errsz)
{
    memset(a, 0, sizeof *a);
    a->ticket.user = -1; /* no user start: the caller bounds its own starts */
    char dir[sizeof a->task_dir + 64];
    int rc = lb_admit_take(cfg, a, 0, keep_free, NULL, dir, sizeof dir);
    if (rc == LB_E_BUSY)
        snprintf(err, errsz, "no free task slot (max_tasks %d, %d kept for people's tasks)",
                 cfg->max_concurrent_tasks, keep_free);
    else if (rc == LB_E_INTERNAL)
        snprintf(err, errsz, "could not make a task id");
    else if (rc == LB_E_IO)
        snprintf(err, errsz, "cannot create %s: %s", dir, strerror(errno));
    return rc;
}

/* Spawns the agent of stored task id with a's slot; a failed spawn ends
 * the task (its round) as failed. */
/* several nodes: task_runner = queue: the stored task waits for a node
 * (store_queue.h) instead; the web's slot is given back at once. A task
 * that cannot be queued ends failed, as a failed spawn does. */
static void lb_admit_queue(lb_store *s, lb_admission *a, const char *id)
{
    a->committed = 1;
    if (a->slot)
        lb_spawn_unreserve();
    a->slot = 0;
    int rc = lb_store_queue_push(s, id);
    if (rc != LB_OK) {
        lb_error("web: task %s: cannot queue it: %s", id, lb_strerror(rc));
        rc = lb_store_task_end(s, id, LB_TASK_FAILED, "could not queue the task for a node", NULL);
        if (rc != LB_OK && rc != LB_E_EXISTS && rc != LB_E_NOTFOUND)
            lb_error("web: task %s: cannot record that it was not queued: %s", id, lb_strerror(rc));
    }
}

static void lb_admit_spawn(lb_store *s, lb_admission *a, const char *id, int nice_value)
{
    if (a->cfg && !strcmp(a->cfg->task_runner, "queue")) {
        lb_admit_queue(s, a, id);
        return;
    }
    a->committed = 1;
    int pid = 0;
    char err[512];
    a->slot = 0; /* lb_spawn_agent takes the slot over, whatever happens */
    int rc = lb_spawn_agent(id, &pid, err, sizeof err);
    if (rc != LB_OK) {
        lb_error("web: task %s: %s", id, err);
        char reason[600];
        snprintf(reason, sizeof reason, "could not start the agent: %s", err);
        rc = lb_store_task_end(s, id, LB_TASK_FAILED, reason, NULL);
        if (rc != LB_OK && rc != LB_E_EXISTS && rc != LB_E_NOTFOUND)
            lb_error("web: task %s: cannot record that its agent did not start: %s", id, lb_strerror(rc));
    } else {
        if ((rc = lb_store_task_set_pid(s, id, pid)) != LB_OK)
            lb_warn("web: task %s: cannot record the agent pid: %s", id, lb_strerror(rc));
        /* background work yields the CPU to people's agents; raising the
         * nice value of our own uid's process needs no privilege */
        if (nice_value && setpriority(PRIO_PROCESS, (id_t)pid, nice_value) != 0)
            lb_warn("web: task %s: cannot lower the agent's priority: %s", id, strerror(errno));
    }
}

/* Stores t and spawns its agent with a's slot: LB_OK once stored (a
 * failed spawn ends the task as failed), else the store's status. */
static int lb_admit_store_spawn(lb_store *s, lb_admission *a, const lb_task_new *t, int nice_value)
{
    /* several nodes: the inputs go to the object store once, before the task
     * exists (no-op with local files); a store that cannot take them
     * refuses the task rather than start one whose inputs are missing */
    int rc = a->cfg ? lb_blob_task_put_inputs(a->cfg, a->id, a->input_dir, a->blob_err, sizeof a->blob_err) : LB_OK;
    if (rc != LB_OK) {
        lb_error("web: task %s: its inputs could not be stored: %s", a->id, a->blob_err);
        return LB_E_UNAVAILABLE;
    }
    rc = lb_store_task_insert(s, t);
    if (rc != LB_OK)
        return rc;
    lb_admit_spawn(s, a, t->id, nice_value);
    lb_info("web: task %s created%s%s: model %s, max_turns %d, token_budget %lld, timeout %d s, network %s, "
            "image %s", t->id, t->rerun_of ? " again from " : "", t->rerun_of ? t->rerun_of : "",
            t->model ? t->model : "(default)", t->max_turns, (long long)t->token_budget, t->timeout_s,
            t->network ? t->network : "(default)", t->image ? t->image : "(default)");
    return LB_OK;
}

int lb_admit_commit_internal(lb_store *s, lb_admission *a, const lb_task_new *t)
{
    return lb_admit_store_spawn(s, a, t, LB_ADMIT_BACKGROUND_NICE);
}

int lb_admit_commit(lb_req *r, lb_admission *a, const lb_task_new *t)
{
    int rc = lb_admit_store_spawn(r->store, a, t, 0);
    if (rc == LB_E_BUSY) {
        /* the user's limit, reached by a request that ran at the same time */
        lb_http_error(r, 429, "too_many_tasks",
                      "You already have %d tasks queued or running, your limit; start this one when one of them "
                      "has finished (or stop one).",
                      t->owner_max_active);
        return LB_E_BUSY;
    }
    if (rc == LB_E_UNAVAILABLE && a->blob_err[0]) { /* several nodes */
        lb_http_error_hdr(r, 503, NULL, "Retry-After: 5\r\n",
                          "The task's files could not be stored in the object store: %s", a->blob_err);
        return rc;
    }
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "save the task");
        return rc;
    }
    snprintf(r->new_task, sizeof r->new_task, "%s", t->id); /* for the access log */
    cJSON *task = NULL;
    rc = lb_store_task_get(r->store, t->id, &task);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the new task");
        return LB_OK; /* stored and started: only the answer lacks it */
    }
    lb_auth_add_preview(task, t->id);
    char extra[128];
    snprintf(extra, sizeof extra, "Location: /api/tasks/%s\r\n", t->id);
    lb_http_json(r, 201, task, extra);
    cJSON_Delete(task);
    return LB_OK;
}

/* ---- follow-up rounds (follow-ups) ---- */

int lb_admit_begin_round(lb_req *r, lb_admission *a, const char *task_id)
{
    const lb_config *cfg = r->cfg;
    int rc = lb_admit_start(r, a);
    if (rc != LB_OK)
        return rc; /* the user's own limits: answered */
    if (strcmp(cfg->task_runner, "queue")) { /* a queue web runs no agent: no slot (lb_admit_take) */
        if (lb_spawn_reserve_leaving(0) != LB_OK) {
            lb_admit_no_slot(r);
            return LB_E_BUSY;
        }
        a->slot = 1;
    }
    a->cfg = cfg; /* several nodes: the task runner */
    snprintf(a->id, sizeof a->id, "%s", task_id);
    snprintf(a->task_dir, sizeof a->task_dir, "%s/%s", cfg->artifacts_dir, task_id);
    snprintf(a->input_dir, sizeof a->input_dir, "%s/input", a->task_dir);
    return LB_OK;
}

void lb_admit_spawn_round(lb_store *s, lb_admission *a)
{
    lb_admit_spawn(s, a, a->id, 0);
}

/* ---- forks ---- */

int lb_admit_begin_fork(lb_req *r, lb_admission *a)
{
    const lb_config *cfg = r->cfg;
    int rc = lb_admit_start(r, a);
    if (rc != LB_OK)
        return rc; /* the user's own limits: answered */
    a->cfg = cfg;
    if (lb_random_hex(a->id, sizeof a->id, 16) != LB_OK) {
        lb_http_drain(r);
        lb_http_error(r, 500, NULL, "Could not make a task id.");
        return LB_E_INTERNAL;
    }
    snprintf(a->task_dir, sizeof a->task_dir, "%s/%s", cfg->artifacts_dir, a->id);
    snprintf(a->input_dir, sizeof a->input_dir, "%s/input", a->task_dir);
    a->dir_made = 1; /* from here on a refused fork removes what it linked */
    if (lb_mkdirs(a->task_dir, 0750) != LB_OK) {
        lb_admit_dir_failed(r, a->task_dir);
        return LB_E_IO;
    }
    return LB_OK;
}

void lb_admit_commit_fork(lb_admission *a)
{
    a->committed = 1;
}

void lb_admit_end(lb_admission *a)
{
    if (a->committed)
        return;
    if (a->dir_made)
        LB_IGNORE(lb_rmtree(a->task_dir)); /* nothing refers to a task that was never stored: only disk */
    a->dir_made = 0;
    if (a->slot)
        lb_spawn_unreserve();
    a->slot = 0;
    lb_limits_refund(&a->ticket); /* no task was made: the start does not count */
}
