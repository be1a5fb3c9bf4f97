/* The agents of one node; the contract is node_agents.h. */
#include "node/node_agents.h"

#include "common/agent_spawn.h"
#include "common/blob_task.h"
#include "common/config.h"
#include "common/log.h"
#include "common/task.h"
#include "common/util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct lb_node_agent {
    pid_t pid;
    char id[33];
    int attempt;
    int term_sent;
    int timeout_s;       /* the task's limit, as its agent runs it (0: not read) */
    int64_t deadline_ms; /* monotonic: timeout_s + grace after the start; 0: none */
    int overdue;         /* killed at its deadline */
} lb_node_agent;

static int lb_na_grace_s; /* task_deadline_grace_s, from the first start */

/* The main thread changes the table; the lease watchdog (node_main.c)
 * only reads the pids to kill them, under the lock. */
static pthread_mutex_t lb_na_mu = PTHREAD_MUTEX_INITIALIZER;
static lb_node_agent lb_na[LB_NODE_AGENTS_MAX];
static int lb_na_n;
static char lb_na_node[64]; /* the node's name, from the first start */

void lb_node_agents_kill_now(void)
{
    pthread_mutex_lock(&lb_na_mu);
    for (int i = 0; i < lb_na_n; i++) {
        kill(-lb_na[i].pid, SIGKILL);
        kill(lb_na[i].pid, SIGKILL);
    }
    pthread_mutex_unlock(&lb_na_mu);
}

int lb_node_agents_count(void) { return lb_na_n; }

int lb_node_agents_count_locked(void)
{
    pthread_mutex_lock(&lb_na_mu);
    int n = lb_na_n;
    pthread_mutex_unlock(&lb_na_mu);
    return n;
}

/* environ plus LLMBOX_NODE_FENCE=fence (any inherited one left out); NULL
 * when out of room. */
static char **lb_env_with(const char *fence, char **out, size_t cap)
{
    size_t n = 0;
    for (char **e = environ; *e; e++) {
        if (!strncmp(*e, "LLMBOX_NODE_FENCE=", 18))
            continue;
        if (n + 2 >= cap)
            return NULL;
        out[n++] = *e;
    }
    out[n++] = (char *)fence;
    out[n] = NULL;
    return out;
}

/* Ends task id failed with why while it is still the claim (node,
 * attempt): its agent is gone or never started */
static void lb_end_failed(lb_store *s, const char *id, const char *node, int attempt, const char *why)
{
    int rc = lb_store_queue_end_attempt(s, id, node, attempt, why);
    if (rc != LB_OK && rc != LB_E_EXISTS && rc != LB_E_NOTFOUND)
        lb_error("node: task %s: cannot record its end (%s): %s", id, why, lb_strerror(rc));
}

/* The task's wall-clock limit as its agent runs it (the same limits, with
 * no user: agent_main.c); 0 when the task cannot be read now (the agent's
 * own watchdog is then the only one). */
static int lb_na_timeout(const lb_config *cfg, lb_store *s, const char *id)
{
    lb_task t;
    memset(&t, 0, sizeof t);
    if (lb_store_task_load(s, id, &t) != LB_OK)
        return 0;
    lb_task_request req;
    lb_task_limits lim;
    lb_task_request_of(&t, &req);
    lb_task_limits_of(&req, NULL, cfg, &lim);
    lb_task_free(&t);
    return lim.timeout_s;
}

int lb_node_agent_start(const lb_config *cfg, lb_store *s, const char *node, const lb_claim *c)
{
    char err[1400];
    int rc = LB_OK, logfd = -1, fa_ok = 0, at_ok = 0;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    if (lb_na_n >= LB_NODE_AGENTS_MAX) {
        snprintf(err, sizeof err, "the node runs %d agents already", lb_na_n);
        rc = LB_E_TOOBIG;
        goto out;
    }
    /* the inputs, from the object store when the web that admitted the
     * task is on another host (no-op without s3_bucket) */
    char why[1024];
    if ((rc = lb_blob_task_fetch_inputs(cfg, c->id, why, sizeof why)) != LB_OK) {
        snprintf(err, sizeof err, "could not fetch its inputs from the object store: %s", why);
        goto out;
    }
    /* a follow-up round another node ran the last of: the conversation so
     * far (trajectory.json) and the last outputs, which the round goes on
     * from (none stored: a first round) */
    int frc = lb_blob_task_fetch_record(cfg, c->id, "trajectory.json", why, sizeof why);
    if (frc == LB_OK)
        frc = lb_blob_task_fetch_outputs(cfg, c->id, "", why, sizeof why);
    if (frc != LB_OK && frc != LB_E_NOTFOUND) {
        snprintf(err, sizeof err, "could not fetch the task's last round from the object store: %s", why);
        rc = frc;
        goto out;
    }
    if ((logfd = lb_agent_log_open(cfg, c->id, err, sizeof err)) < 0) {
        rc = LB_E_IO;
        goto out;
    }
    if (posix_spawn_file_actions_init(&fa) != 0) {
        snprintf(err, sizeof err, "out of memory");
        rc = LB_E_NOMEM;
        goto out;
    }
    fa_ok = 1;
    if ((rc = lb_agent_spawn_files(&fa, logfd)) != LB_OK || (rc = lb_spawn_attr(&at, 1)) != LB_OK) {
        snprintf(err, sizeof err, "cannot set up the agent's process: %s", lb_strerror(rc));
        goto out;
    }
    at_ok = 1;
    char fence[96];
    snprintf(fence, sizeof fence, "LLMBOX_NODE_FENCE=%s:%d", node, c->attempt);
    static char *envp[4096];
    if (!lb_env_with(fence, envp, sizeof envp / sizeof envp[0])) {
        snprintf(err, sizeof err, "the node's environment is too large");
        rc = LB_E_TOOBIG;
        goto out;
    }
    char *argv[] = {(char *)cfg->self_exe, "agent", "--task", (char *)c->id, NULL};
    pid_t pid;
    int e = posix_spawn(&pid, cfg->self_exe, &fa, &at, argv, envp);
    if (e != 0) {
        snprintf(err, sizeof err, "cannot start %s: %s", cfg->self_exe, strerror(e));
        rc = LB_E_IO;
        goto out;
    }
    snprintf(lb_na_node, sizeof lb_na_node, "%s", node);
    lb_na_grace_s = cfg->task_deadline_grace_s;
    int timeout_s = lb_na_timeout(cfg, s, c->id);
    pthread_mutex_lock(&lb_na_mu);
    lb_node_agent *a = &lb_na[lb_na_n++];
    memset(a, 0, sizeof *a);
    a->pid = pid;
    a->attempt = c->attempt;
    a->timeout_s = timeout_s;
    a->deadline_ms = timeout_s > 0 ? lb_mono_ms() + ((int64_t)timeout_s + cfg->task_deadline_grace_s) * 1000 : 0;
    snprintf(a->id, sizeof a->id, "%s", c->id);
    pthread_mutex_unlock(&lb_na_mu);
    if (lb_store_task_set_pid(s, c->id, (int)pid) != LB_OK)
        lb_warn("node: task %s: cannot record the agent's pid %d", c->id, (int)pid);
    lb_info("node: task %s: agent started, pid %d, attempt %d", c->id, (int)pid, c->attempt);
out:
    if (at_ok)
        posix_spawnattr_destroy(&at);
    if (fa_ok)
        posix_spawn_file_actions_destroy(&fa);
    if (logfd >= 0)
        close(logfd);
    if (rc != LB_OK) {
        lb_error("node: task %s: %s", c->id, err);
        char reason[1500];
        snprintf(reason, sizeof reason, "node %s could not start the agent: %s", node, err);
        lb_end_failed(s, c->id, node, c->attempt, reason);
    }
    return rc;
}

/* Removes entry i (the last one takes its place) */
static void lb_na_drop(int i)
{
    pthread_mutex_lock(&lb_na_mu);
    lb_na[i] = lb_na[--lb_na_n];
    pthread_mutex_unlock(&lb_na_mu);
}

int lb_node_agents_reap(lb_store *s)
{
    int n = 0;
    for (int i = 0; i < lb_na_n;) {
        int st = 0;
        pid_t r = waitpid(lb_na[i].pid, &st, WNOHANG);
        if (r == 0 || (r < 0 && errno == EINTR)) {
            i++;
            continue;
        }
        /* exited (or not ours any more: ECHILD). Its helpers go with it */
        kill(-lb_na[i].pid, SIGKILL);
        char why[300];
        if (lb_na[i].overdue)
            snprintf(why, sizeof why,
                     "the task ran past its time limit (%d s) and its agent had not ended it %d s later; "
                     "node %s stopped the agent and its sandbox",
                     lb_na[i].timeout_s, lb_na_grace_s, lb_na_node);
        else if (r > 0 && WIFSIGNALED(st))
            snprintf(why, sizeof why, "the agent process was killed by signal %d without finishing the task",
                     WTERMSIG(st));
        else
            snprintf(why, sizeof why, "the agent process ended without finishing the task");
        /* LB_E_EXISTS, the usual case: the agent ended it (or a later round is on) */
        lb_end_failed(s, lb_na[i].id, lb_na_node, lb_na[i].attempt, why);
        lb_na_drop(i);
        n++;
    }
    return n;
}

void lb_node_agents_check_cancel(lb_store *s)
{
    for (int i = 0; i < lb_na_n; i++) {
        char status[16];
        int pid = 0;
        if (lb_na[i].term_sent || lb_store_task_state(s, lb_na[i].id, status, sizeof status, &pid) != LB_OK)
            continue;
        if (lb_task_status_is_final(lb_task_status_parse(status))) {
            lb_info("node: task %s is %s: stopping its agent (pid %d)", lb_na[i].id, status, (int)lb_na[i].pid);
            kill(lb_na[i].pid, SIGTERM); /* the agent's own way out: its sandbox is destroyed */
            lb_na[i].term_sent = 1;
        }
    }
}

void lb_node_agents_check_deadlines(void)
{
    int64_t now = lb_mono_ms();
    for (int i = 0; i < lb_na_n; i++) {
        lb_node_agent *a = &lb_na[i];
        if (!a->deadline_ms || a->overdue || now < a->deadline_ms)
            continue;
        lb_warn("node: task %s: agent pid %d is past the task's time limit (%d s) and %d s of grace; killing it",
                a->id, (int)a->pid, a->timeout_s, lb_na_grace_s);
        /* its group: the agent and its helpers; its sandbox goes with its
         * connection to sandboxd (a kept one with its lease) */
        kill(-a->pid, SIGKILL);
        kill(a->pid, SIGKILL);
        a->overdue = 1; /* the reap records the end, fenced by the claim */
    }
}

void lb_node_agents_kill_all(const char *why)
{
    if (lb_na_n)
        lb_warn("node: killing its %d agents: %s", lb_na_n, why);
    for (int i = 0; i < lb_na_n; i++) {
        kill(-lb_na[i].pid, SIGKILL);
        kill(lb_na[i].pid, SIGKILL);
    }
    for (int i = 0; i < lb_na_n; i++)
        while (waitpid(lb_na[i].pid, NULL, 0) < 0 && errno == EINTR)
            ;
    pthread_mutex_lock(&lb_na_mu);
    lb_na_n = 0;
    pthread_mutex_unlock(&lb_na_mu);
}

void lb_node_agents_kill_left(const lb_node_lease *l)
{
    for (size_t i = 0; i < l->nleft; i++) {
        int pid = l->left[i].pid;
        if (pid > 0 && lb_agent_alive(pid, l->left[i].id)) {
            lb_warn("node: task %s: killing the agent (pid %d) an earlier run of this node left", l->left[i].id,
                    pid);
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
        }
    }
}
