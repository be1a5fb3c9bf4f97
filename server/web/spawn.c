/* Agent processes: spawn, concurrency slots, reaping, cancel.
 *
 * The web process is multithreaded, so children are started only with
 * posix_spawn (never a bare fork). Every child gets a clean signal mask and
 * default signal actions, stdin from /dev/null, and no descriptor above 2:
 * a leaked FastCGI connection in a long-lived agent would keep nginx
 * waiting for a response that has already been sent.
 *
 * One reaper thread polls the registered agents with waitpid(pid, WNOHANG)
 * every 100 ms. It waits for those pids only (never waitpid(-1)), so the
 * short-lived helpers of lb_spawn_capture are reaped by their own callers.
 * Because only the reaper reaps an agent, its pid cannot be reused while it
 * is in the table, which makes kill() on a registered pid safe.
 *
 * The reaper also enforces every task's deadline from outside the agent:
 * the agent's own alarm ends a task at its timeout_s, but an agent that is
 * stopped, hung in a plugin or stuck on its way out would hold its task
 * slot and sandbox forever. So timeout_s + task_deadline_grace_s after the
 * spawn, the reaper kills the agent's process group; sandboxd destroys the
 * sandboxes of its closed connection, and the task ends failed with a
 * sentence saying so. Agents of an earlier web process (not our children)
 * get the same deadline, from the task's recorded start, in the orphan
 * scan.
 */
#include "web/spawn.h"

#include "store/store.h"

#include "common/agent_spawn.h"
#include "common/buf.h"
#include "common/config.h"
#include "common/log.h"
#include "common/status.h"
#include "common/task.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define LB_REAP_INTERVAL_MS 100
#define LB_KILL_GRACE_MS 1500
#define LB_ORPHAN_SCAN_MS 2000 /* one query of the active tasks and a /proc read each */
#define LB_ZYGOTE_REPLY_MS 2000 /* a fork takes a millisecond; a zygote this late is stuck */

extern char **environ;

typedef struct lb_child {
    pid_t pid;
    char id[33];
    int cancel;          /* the user asked to stop it */
    int killed;          /* SIGKILL sent */
    int64_t kill_at_ms;  /* monotonic time for SIGKILL after a cancel */
    int64_t started_ms;  /* monotonic time of the spawn */
    int64_t deadline_ms; /* monotonic: timeout_s + grace after the spawn; 0 until the reaper has read the limit */
    int timeout_s;       /* the task's limit, for the sentence */
    int overdue;         /* killed by the reaper at its deadline */
} lb_child;

/* The agent zygote (lb_spare_*, below): started once, forks each task's agent. */
static pid_t lb_spare_take(const char *id, int logfd);
static void lb_spare_start(void);

static pthread_mutex_t lb_sp_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lb_sp_reaped = PTHREAD_COND_INITIALIZER;
static lb_child *lb_sp_tab;
static int lb_sp_n, lb_sp_cap, lb_sp_reserved;
/* The web's configuration, from lb_spawn_init (read only, shared by the
 * worker threads and the reaper): the database, the slots, the spare. */
static const lb_config *lb_sp_cfg;

/* ---- spawning ---- */

int lb_spawn_reserve(void)
{
    return lb_spawn_reserve_leaving(0);
}

int lb_spawn_reserve_leaving(int keep_free)
{
    int rc = LB_OK;
    if (keep_free < 0)
        keep_free = 0;
    pthread_mutex_lock(&lb_sp_mu);
    /* counted under the same lock as every other take: an eval and a
     * person asking at once can never both have the last free slot */
    if (lb_sp_n + lb_sp_reserved + keep_free >= lb_sp_cfg->max_concurrent_tasks)
        rc = LB_E_TOOBIG;
    else
        lb_sp_reserved++;
    pthread_mutex_unlock(&lb_sp_mu);
    return rc;
}

void lb_spawn_unreserve(void)
{
    pthread_mutex_lock(&lb_sp_mu);
    if (lb_sp_reserved > 0)
        lb_sp_reserved--;
    pthread_mutex_unlock(&lb_sp_mu);
}

int lb_spawn_running(void)
{
    pthread_mutex_lock(&lb_sp_mu);
    int n = lb_sp_n;
    pthread_mutex_unlock(&lb_sp_mu);
    return n;
}

int lb_spawn_agent(const char *id, int *pid_out, char *err, size_t errsz)
{
    const lb_config *cfg = lb_sp_cfg;
    int rc = LB_OK, logfd = -1, fa_ok = 0, at_ok = 0, consumed = 0;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    *pid_out = 0;
    if ((logfd = lb_agent_log_open(cfg, id, err, errsz)) < 0) {
        rc = LB_E_IO;
        goto out;
    }
    if (posix_spawn_file_actions_init(&fa) != 0) {
        rc = LB_E_NOMEM;
        goto out;
    }
    fa_ok = 1;
    if ((rc = lb_agent_spawn_files(&fa, logfd)) != LB_OK)
        goto out;
    if ((rc = lb_spawn_attr(&at, 1)) != LB_OK)
        goto out;
    at_ok = 1;
    char *argv[] = {(char *)cfg->self_exe, "agent", "--task", (char *)id, NULL};
    pid_t pid;
    pthread_mutex_lock(&lb_sp_mu);
    /* the zygote, when there is one, has paid the exec and the loading of
     * the binary's libraries once for all (~15 ms a task: bench/RESULTS.md) */
    pid = lb_spare_take(id, logfd);
    int took_spare = pid > 0;
    int e = took_spare ? 0 : posix_spawn(&pid, cfg->self_exe, &fa, &at, argv, environ);
    if (e == 0) {
        lb_child *c = &lb_sp_tab[lb_sp_n++]; /* a reserved slot guarantees room */
        memset(c, 0, sizeof *c);
        c->pid = pid;
        snprintf(c->id, sizeof c->id, "%s", id);
        c->started_ms = lb_mono_ms();
    }
    if (lb_sp_reserved > 0)
        lb_sp_reserved--;
    consumed = 1;
    pthread_mutex_unlock(&lb_sp_mu);
    if (e != 0) {
        snprintf(err, errsz, "cannot start %s: %s", cfg->self_exe, strerror(e));
        rc = LB_E_IO;
        goto out;
    }
    *pid_out = (int)pid;
    lb_info("web: task %s: agent started, pid %d%s", id, (int)pid, took_spare ? " (forked by the zygote)" : "");
    lb_spare_start(); /* a new zygote, if it had died */
out:
    if (!consumed) /* the slot was taken by the caller's lb_spawn_reserve */
        lb_spawn_unreserve();
    if (at_ok)
        posix_spawnattr_destroy(&at);
    if (fa_ok)
        posix_spawn_file_actions_destroy(&fa);
    if (logfd >= 0)
        close(logfd);
    return rc;
}

/* ---- reaping and cancel ---- */

static lb_child *lb_find(const char *id)
{
    for (int i = 0; i < lb_sp_n; i++)
        if (!strcmp(lb_sp_tab[i].id, id))
            return &lb_sp_tab[i];
    return NULL;
}

static void lb_kill_group(pid_t pid)
{
    /* the agent leads its own session and process group: take its helpers too */
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
}

int lb_spawn_cancel(const char *id)
{
    int rc = LB_OK;
    pthread_mutex_lock(&lb_sp_mu);
    lb_child *c = lb_find(id);
    if (!c) {
        rc = LB_E_NOTFOUND;
    } else if (!c->cancel) {
        c->cancel = 1;
        c->kill_at_ms = lb_mono_ms() + LB_KILL_GRACE_MS;
        kill(c->pid, SIGTERM); /* the agent cancels its sandbox and finishes the task */
        lb_info("web: task %s: cancel requested, SIGTERM to pid %d", id, (int)c->pid);
    }
    pthread_mutex_unlock(&lb_sp_mu);
    return rc;
}

/* Waits, holding lb_sp_mu, until no agent of task id is registered, up to
 * timeout_ms: LB_OK or LB_E_TIMEOUT. */
static int lb_wait_reaped_locked(const char *id, int timeout_ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    int rc = LB_OK;
    while (lb_find(id)) {
        if (pthread_cond_timedwait(&lb_sp_reaped, &lb_sp_mu, &deadline) == ETIMEDOUT) {
            rc = lb_find(id) ? LB_E_TIMEOUT : LB_OK;
            break;
        }
    }
    return rc;
}

int lb_spawn_kill_wait(const char *id, int timeout_ms)
{
    pthread_mutex_lock(&lb_sp_mu);
    lb_child *c = lb_find(id);
    if (!c) {
        pthread_mutex_unlock(&lb_sp_mu);
        return LB_E_NOTFOUND;
    }
    c->cancel = 1;
    if (!c->killed) {
        c->killed = 1;
        lb_kill_group(c->pid);
    }
    int rc = lb_wait_reaped_locked(id, timeout_ms);
    pthread_mutex_unlock(&lb_sp_mu);
    return rc;
}

/* follow-ups: one agent per task at a time */
int lb_spawn_wait_gone(const char *id, int timeout_ms)
{
    pthread_mutex_lock(&lb_sp_mu);
    int rc = lb_wait_reaped_locked(id, timeout_ms);
    pthread_mutex_unlock(&lb_sp_mu);
    return rc;
}

typedef struct lb_exited {
    char id[33];
    int status;
    int cancel;
    int overdue;   /* the reaper killed it at its deadline */
    int timeout_s; /* then: the task's limit */
} lb_exited;

/* Ends of agents that could not be recorded yet (the database was busy
 * or its disk full): retried every second with the same status and
 * reason until they are, so the task does not stay "running". */
typedef struct lb_unrecorded {
    char id[33];
    lb_task_status status;
    char reason[256];
} lb_unrecorded;

#define LB_PENDING_MAX 256
#define LB_PENDING_RETRY_MS 1000
#define LB_RESERVE_CHECK_MS 5000
static lb_unrecorded lb_pending[LB_PENDING_MAX];
static int lb_npending; /* reaper thread only */

/* Records the end; 1 when done (or nothing left to do), 0 to retry later. */
static int lb_record_end(lb_store **sp, const char *id, lb_task_status status, const char *reason)
{
    if (!*sp && lb_store_open(lb_cfg_store_where(lb_sp_cfg), sp) != LB_OK)
        return 0;
    int rc = lb_store_task_end(*sp, id, status, reason, NULL);
    if (rc == LB_OK) {
        lb_warn("web: task %s: %s: %s", id, lb_task_status_name(status), reason);
        return 1;
    }
    if (rc == LB_E_EXISTS || rc == LB_E_NOTFOUND)
        return 1; /* the agent recorded its own end, or the task was deleted */
    lb_error("web: task %s: cannot record the end of its agent yet (%s); will retry", id, lb_strerror(rc));
    return 0;
}

static void lb_keep_pending(const char *id, lb_task_status status, const char *reason)
{
    if (lb_npending == LB_PENDING_MAX) {
        /* the orphan scan still ends it, with a plainer reason */
        lb_error("web: task %s: too many unrecorded task ends; leaving it to the orphan scan", id);
        return;
    }
    lb_unrecorded *u = &lb_pending[lb_npending++];
    snprintf(u->id, sizeof u->id, "%s", id);
    u->status = status;
    snprintf(u->reason, sizeof u->reason, "%s", reason);
}

static void lb_retry_pending(lb_store **sp)
{
    for (int i = 0; i < lb_npending;) {
        if (lb_record_end(sp, lb_pending[i].id, lb_pending[i].status, lb_pending[i].reason))
            lb_pending[i] = lb_pending[--lb_npending];
        else
            i++;
    }
}

/* The tool whose code the agent was running when it died, from the marker
 * the agent keeps (agent/watchdog.h: an attribute of its log, else a file),
 * into tool (>= 80 bytes; "" if none). The marker is removed. */
static void lb_crash_tool(const char *id, char *tool, size_t toolsz)
{
    char logdir[LB_CFG_PATH], path[LB_CFG_PATH + 64];
    tool[0] = '\0';
    lb_cfg_logdir(lb_sp_cfg, logdir, sizeof logdir);
    /* the attribute of its log, where its file system takes one; else the file */
    snprintf(path, sizeof path, "%s/agent-%s.log", logdir, id);
    ssize_t xn = lgetxattr(path, LB_AGENT_TOOL_XATTR, tool, toolsz - 1);
    if (xn >= 0) /* removed as the file is: a later round's agent that dies early is not blamed on it */
        (void)lremovexattr(path, LB_AGENT_TOOL_XATTR);
    snprintf(path, sizeof path, "%s/agent-%s.tool", logdir, id);
    int fd = xn >= 0 ? -1 : open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (xn >= 0 || fd >= 0) {
        ssize_t n = xn >= 0 ? xn : read(fd, tool, toolsz - 1);
        if (fd >= 0)
            close(fd);
        tool[n > 0 ? n : 0] = '\0';
        /* written by a process running plugins: keep a tool name's characters only */
        for (char *p = tool; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) {
                *p = '\0';
                break;
            }
    }
    unlink(path);
}

/* Signals a crash raises in the process itself. A SIGKILL or SIGTERM comes
 * from outside (the OOM killer, an operator) whatever code was running, so
 * it is not blamed on the tool that happened to be in a call. */
static int lb_crash_signal(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGABRT ||
           sig == SIGSYS || sig == SIGTRAP;
}

static const char *lb_signame(int sig, char *buf, size_t bufsz)
{
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev)
        snprintf(buf, bufsz, "SIG%s", abbrev);
    else
        snprintf(buf, bufsz, "signal %d", sig);
    return buf;
}

/* Records the end of an agent in the store. The agent normally finishes its
 * own task; this only catches agents that died or were killed first, and
 * says why: which tool took the agent down, when the agent knew. */
static void lb_reaped(lb_store **sp, const lb_exited *x)
{
    char tool[80], sig[32];
    lb_crash_tool(x->id, tool, sizeof tool);
    char reason[256];
    lb_task_status status = LB_TASK_FAILED;
    if (x->cancel) {
        status = LB_TASK_CANCELLED;
        snprintf(reason, sizeof reason, "cancelled by the user");
    } else if (x->overdue) {
        snprintf(reason, sizeof reason,
                 "the task ran past its time limit (%d s) and its agent had not ended it %d s later; "
                 "the web stopped the agent and its sandbox",
                 x->timeout_s, lb_sp_cfg->task_deadline_grace_s);
    } else if (WIFSIGNALED(x->status) && tool[0] && lb_crash_signal(WTERMSIG(x->status))) {
        snprintf(reason, sizeof reason, "the tool %s crashed (%s); the task was stopped", tool,
                 lb_signame(WTERMSIG(x->status), sig, sizeof sig));
    } else if (WIFSIGNALED(x->status)) {
        snprintf(reason, sizeof reason, "the agent process died (%s)", lb_signame(WTERMSIG(x->status), sig, sizeof sig));
    } else if (tool[0]) {
        snprintf(reason, sizeof reason, "the tool %s ended the agent process (exit %d); the task was stopped", tool,
                 WEXITSTATUS(x->status));
    } else {
        snprintf(reason, sizeof reason, "the agent process died (exit %d)", WEXITSTATUS(x->status));
    }
    lb_info("web: task %s: agent exited (%s%d)", x->id, WIFSIGNALED(x->status) ? "signal " : "status ",
            WIFSIGNALED(x->status) ? WTERMSIG(x->status) : WEXITSTATUS(x->status));
    if (!lb_record_end(sp, x->id, status, reason))
        lb_keep_pending(x->id, status, reason);
}

/* The task's wall-clock limit as its agent runs it (the agent takes the
 * same limits, with no user: agent_main.c), into *timeout_s; started_ms
 * gets its recorded start (-1 if none). */
static int lb_task_timeout(lb_store *s, const char *id, int *timeout_s, int64_t *started_ms)
{
    lb_task t;
    memset(&t, 0, sizeof t);
    int rc = lb_store_task_load(s, id, &t);
    if (rc != LB_OK)
        return rc;
    lb_task_request req;
    lb_task_limits lim;
    lb_task_request_of(&t, &req);
    lb_task_limits_of(&req, NULL, lb_sp_cfg, &lim);
    *timeout_s = lim.timeout_s;
    *started_ms = t.started_ms;
    lb_task_free(&t);
    return LB_OK;
}

/* An agent of an earlier web process past its task's deadline (from the
 * recorded start): killed with its process group, 1; else 0. The task's
 * end is then recorded by the orphan scan with the deadline's sentence. */
static int lb_orphan_overdue(lb_store *s, const char *id, int pid)
{
    int timeout_s = 0;
    int64_t started = -1;
    if (lb_task_timeout(s, id, &timeout_s, &started) != LB_OK || started <= 0)
        return 0; /* not loadable now (the next scan tries again), or not started */
    int64_t deadline = started + ((int64_t)timeout_s + lb_sp_cfg->task_deadline_grace_s) * 1000;
    if (lb_now_ms() < deadline || !lb_agent_alive(pid, id))
        return 0;
    lb_kill_group((pid_t)pid);
    char reason[256];
    snprintf(reason, sizeof reason,
             "the task ran past its time limit (%d s) and its agent had not ended it %d s later; "
             "the web stopped the agent and its sandbox",
             timeout_s, lb_sp_cfg->task_deadline_grace_s);
    int rc = lb_store_task_end(s, id, LB_TASK_FAILED, reason, NULL);
    if (rc == LB_OK)
        lb_warn("web: task %s: %s (agent pid %d, from an earlier web process)", id, reason, pid);
    else if (rc != LB_E_EXISTS && rc != LB_E_NOTFOUND) /* the orphan scan ends it once the pid is gone */
        lb_error("web: task %s: cannot record that its deadline passed: %s", id, lb_strerror(rc));
    return 1;
}

#define LB_DEADLINE_LOADS 16 /* task loads per reaper tick: a burst of spawns is read over a few ticks */

/* Gives the agents spawned since the last tick their deadline: the task's
 * limit is read from the store here, in the reaper, so that every way of
 * spawning an agent gets one without passing it in. A task that cannot be
 * read now is tried at the next tick; a deleted one gets the longest limit
 * the service allows. */
static void lb_deadlines_read(lb_store **sp)
{
    struct {
        char id[33];
        pid_t pid;
        int64_t started;
    } todo[LB_DEADLINE_LOADS];
    int n = 0;
    pthread_mutex_lock(&lb_sp_mu);
    for (int i = 0; i < lb_sp_n && n < LB_DEADLINE_LOADS; i++)
        if (!lb_sp_tab[i].deadline_ms) {
            memcpy(todo[n].id, lb_sp_tab[i].id, sizeof todo[n].id);
            todo[n].pid = lb_sp_tab[i].pid;
            todo[n].started = lb_sp_tab[i].started_ms;
            n++;
        }
    pthread_mutex_unlock(&lb_sp_mu);
    if (!n || (!*sp && lb_store_open(lb_cfg_store_where(lb_sp_cfg), sp) != LB_OK))
        return;
    for (int k = 0; k < n; k++) {
        int timeout_s = 0;
        int64_t started = -1;
        int rc = lb_task_timeout(*sp, todo[k].id, &timeout_s, &started);
        if (rc == LB_E_NOTFOUND)
            timeout_s = lb_sp_cfg->task_timeout_s;
        else if (rc != LB_OK)
            continue;
        pthread_mutex_lock(&lb_sp_mu);
        lb_child *c = lb_find(todo[k].id);
        if (c && c->pid == todo[k].pid) {
            c->timeout_s = timeout_s;
            c->deadline_ms = todo[k].started + ((int64_t)timeout_s + lb_sp_cfg->task_deadline_grace_s) * 1000;
        }
        pthread_mutex_unlock(&lb_sp_mu);
    }
}

/* Agents that are not our children (they outlived an earlier web process)
 * cannot be reaped; when one of them dies without finishing its task, this
 * notices. Only tasks with a recorded pid are looked at: a task without
 * one is either being spawned right now or was never started by a web. */
static void lb_orphan_scan(lb_store **sp)
{
    if (!*sp && lb_store_open(lb_cfg_store_where(lb_sp_cfg), sp) != LB_OK)
        return;
    char **ids = NULL;
    int *pids = NULL;
    size_t n = 0;
    if (lb_store_tasks_active(*sp, &ids, &pids, &n) != LB_OK)
        return;
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&lb_sp_mu);
        int ours = lb_find(ids[i]) != NULL;
        pthread_mutex_unlock(&lb_sp_mu);
        for (int k = 0; k < lb_npending && !ours; k++)
            ours = !strcmp(lb_pending[k].id, ids[i]); /* its true reason is waiting to be recorded */
        if (!ours && pids[i] > 0 && lb_orphan_overdue(*sp, ids[i], pids[i])) {
            /* lb_orphan_overdue killed it; the end is recorded below, as for any agent gone */
        }
        if (!ours && pids[i] > 0 && !lb_agent_alive(pids[i], ids[i])) {
            int rc = lb_store_task_end(*sp, ids[i], LB_TASK_FAILED, "the agent process ended without finishing the task",
                                       NULL);
            if (rc == LB_OK)
                lb_warn("web: task %s: its agent (pid %d, from an earlier web process) is gone", ids[i], pids[i]);
            else if (rc != LB_E_EXISTS && rc != LB_E_NOTFOUND) /* the next scan tries again */
                lb_error("web: task %s: cannot record that its agent is gone: %s", ids[i], lb_strerror(rc));
        }
        free(ids[i]);
    }
    free(ids);
    free(pids);
}

static void (*lb_sp_exit_hook)(void);

void lb_spawn_set_exit_hook(void (*hook)(void))
{
    __atomic_store_n(&lb_sp_exit_hook, hook, __ATOMIC_RELEASE);
}

static void *lb_reaper_main(void *arg)
{
    (void)arg;
    lb_store *s = NULL;
    lb_exited *done = calloc((size_t)lb_sp_cap, sizeof *done);
    if (!done) {
        lb_error("web: reaper: out of memory");
        return NULL;
    }
    int64_t last_scan = lb_mono_ms(), last_retry = last_scan, last_reserve = last_scan - LB_RESERVE_CHECK_MS;
    for (;;) {
        int nd = 0;
        int64_t now = lb_mono_ms();
        if (lb_npending && now - last_retry >= LB_PENDING_RETRY_MS) {
            last_retry = now;
            lb_retry_pending(&s);
        }
        if (now - last_scan >= LB_ORPHAN_SCAN_MS) {
            last_scan = now;
            lb_orphan_scan(&s);
        }
        lb_deadlines_read(&s);
        /* the reserve is SQLite's (store.h); PostgreSQL's disk is its server's (several nodes) */
        if (now - last_reserve >= LB_RESERVE_CHECK_MS && !lb_sp_cfg->db_url[0]) {
            last_reserve = now;
            LB_IGNORE(lb_store_reserve_keep(lb_sp_cfg->db_path)); /* no room yet: tried again at the next check */
        }
        pthread_mutex_lock(&lb_sp_mu);
        for (int i = 0; i < lb_sp_n;) {
            lb_child *c = &lb_sp_tab[i];
            int st = 0;
            pid_t r = waitpid(c->pid, &st, WNOHANG);
            if (r == c->pid || (r < 0 && errno == ECHILD)) {
                /* a zombie's group may still hold the agent's helpers */
                if (c->cancel && r == c->pid)
                    kill(-c->pid, SIGKILL);
                snprintf(done[nd].id, sizeof done[nd].id, "%s", c->id);
                done[nd].status = r == c->pid ? st : 0;
                done[nd].cancel = c->cancel;
                done[nd].overdue = c->overdue;
                done[nd].timeout_s = c->timeout_s;
                nd++;
                lb_sp_tab[i] = lb_sp_tab[--lb_sp_n];
                continue;
            }
            if (c->deadline_ms && !c->killed && now >= c->deadline_ms) {
                lb_warn("web: task %s: agent pid %d is past the task's time limit (%d s) and %d s of grace; "
                        "killing it", c->id, (int)c->pid, c->timeout_s, lb_sp_cfg->task_deadline_grace_s);
                c->overdue = 1;
                c->killed = 1;
                lb_kill_group(c->pid);
            }
            if (c->cancel && !c->killed && now >= c->kill_at_ms) {
                lb_warn("web: task %s: agent pid %d ignored SIGTERM for %d ms; killing it", c->id,
                        (int)c->pid, LB_KILL_GRACE_MS);
                c->killed = 1;
                lb_kill_group(c->pid);
            }
            i++;
        }
        if (nd)
            pthread_cond_broadcast(&lb_sp_reaped);
        pthread_mutex_unlock(&lb_sp_mu);
        for (int i = 0; i < nd; i++)
            lb_reaped(&s, &done[i]);
        void (*hook)(void) = __atomic_load_n(&lb_sp_exit_hook, __ATOMIC_ACQUIRE);
        if (nd && hook)
            hook();
        struct timespec ts = {0, LB_REAP_INTERVAL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int lb_spawn_init(const lb_config *cfg)
{
    lb_sp_cfg = cfg;
    lb_sp_cap = cfg->max_concurrent_tasks;
    lb_sp_tab = calloc((size_t)lb_sp_cap, sizeof *lb_sp_tab);
    if (!lb_sp_tab)
        return LB_E_NOMEM;
    pthread_t t;
    if (pthread_create(&t, NULL, lb_reaper_main, NULL) != 0)
        return LB_E_INTERNAL;
    pthread_detach(t);
    lb_spare_start();
    return LB_OK;
}

/* ---- the agent zygote ----
 *
 * `llmbox agent --spare` is started once with one end of a socketpair as
 * its stdin; it loads and waits. A task hands it its id, its log file and
 * the read end of a go pipe (SCM_RIGHTS) in one message; the zygote forks
 * an agent that is our child (agent/zygote.h), which runs the task exactly
 * as `llmbox agent --task ID` would, and answers with its pid. A zygote
 * that died or does not answer is reaped here, the task gets an agent by
 * exec and a new zygote is started. When the web exits, the zygote reads
 * end-of-file and exits too. All under lb_sp_mu, except the start (a
 * spawn). */

static pid_t lb_spare_pid;     /* 0: none */
static int lb_spare_fd = -1;   /* our end of its socketpair */
static int lb_spare_off;       /* the zygote answered ENOSYS: agents by exec from then on */

static void lb_spare_start(void)
{
    const lb_config *cfg = lb_sp_cfg;
    if (!cfg->agent_spare)
        return;
    pthread_mutex_lock(&lb_sp_mu);
    int have = lb_spare_pid > 0 || lb_spare_off;
    pthread_mutex_unlock(&lb_sp_mu);
    if (have)
        return;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        lb_warn("web: no agent zygote: socketpair: %s", strerror(errno));
        return;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    if (posix_spawn_file_actions_init(&fa) != 0) {
        close(sv[0]);
        close(sv[1]);
        return;
    }
    int ok = !posix_spawn_file_actions_adddup2(&fa, sv[1], 0) &&
             !posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0) &&
             !posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0) &&
             !posix_spawn_file_actions_addclosefrom_np(&fa, 3) && lb_spawn_attr(&at, 1) == LB_OK;
    pid_t pid = 0;
    int e = 0;
    if (ok) {
        /* the placeholder becomes the task id in place, so that ps (and
         * anyone looking for `agent --task ID`) sees which task it runs */
        char *argv[] = {(char *)cfg->self_exe, "agent", "--spare", "--task", "................................",
                        NULL};
        e = posix_spawn(&pid, cfg->self_exe, &fa, &at, argv, environ);
        posix_spawnattr_destroy(&at);
    }
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    if (!ok || e != 0) {
        lb_warn("web: no agent zygote: %s", e ? strerror(e) : "out of memory");
        close(sv[0]);
        return;
    }
    pthread_mutex_lock(&lb_sp_mu);
    if (lb_spare_pid > 0) { /* another thread was quicker: one zygote is enough */
        pthread_mutex_unlock(&lb_sp_mu);
        close(sv[0]); /* it reads end-of-file and exits */
        waitpid(pid, NULL, 0);
        return;
    }
    lb_spare_pid = pid;
    lb_spare_fd = sv[0];
    pthread_mutex_unlock(&lb_sp_mu);
}

/* A zygote's agent for task id (its pid), or 0 when there is no zygote or
 * it did not answer (the caller then starts one by exec). The agent is
 * already our child (CLONE_PARENT: agent/zygote.h) when the zygote answers
 * and runs only once we wrote its go byte, which happens here, under
 * lb_sp_mu, before the caller records it: the reaper can never meet an
 * agent it does not know. A zygote that failed is killed and a new one
 * started by lb_spare_start. */
static pid_t lb_spare_take(const char *id, int logfd)
{
    if (lb_spare_pid <= 0)
        return 0;
    int go[2] = {-1, -1};
    if (pipe2(go, O_CLOEXEC) != 0)
        return 0; /* this task by exec; the zygote stays */
    char ctl[CMSG_SPACE(2 * sizeof(int))];
    memset(ctl, 0, sizeof ctl);
    int fds[2] = {logfd, go[0]};
    struct iovec iov = {.iov_base = (void *)id, .iov_len = strlen(id)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(cm), fds, sizeof fds);
    ssize_t n;
    do
        n = sendmsg(lb_spare_fd, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    close(go[0]);
    int32_t reply = 0;
    if (n == (ssize_t)iov.iov_len) {
        struct pollfd pf = {.fd = lb_spare_fd, .events = POLLIN};
        int pr;
        do
            pr = poll(&pf, 1, LB_ZYGOTE_REPLY_MS);
        while (pr < 0 && errno == EINTR);
        n = pr == 1 ? recv(lb_spare_fd, &reply, sizeof reply, MSG_DONTWAIT) : -1;
    }
    if (n == (ssize_t)sizeof reply && reply > 0 && write(go[1], "g", 1) == 1) {
        close(go[1]);
        return (pid_t)reply;
    }
    /* a forked agent, if there is one, reads end-of-file and exits unrun;
     * one whose pid we know is our child and reaped here. One whose answer
     * never came (a zygote stuck 2 s) stays a zombie of ours: rare, and
     * harmless but for its pid */
    close(go[1]);
    if (n == (ssize_t)sizeof reply && reply > 0)
        waitpid((pid_t)reply, NULL, 0);
    pid_t z = lb_spare_pid;
    if (n == (ssize_t)sizeof reply && reply < 0 && reply != -ENOSYS) { /* it could not fork now: it stays */
        lb_warn("web: the agent zygote could not fork (%s); task %s starts by exec", strerror(-reply), id);
        return 0;
    }
    int never = n == (ssize_t)sizeof reply && reply == -ENOSYS;
    kill(z, SIGKILL);
    waitpid(z, NULL, 0);
    close(lb_spare_fd);
    lb_spare_pid = 0;
    lb_spare_fd = -1;
    if (never) {
        lb_spare_off = 1; /* it never will: no zygote is started again */
        lb_warn("web: agents start by exec: the agent zygote cannot fork them here (no clone3 with "
                "CLONE_PARENT, or no PR_GET_TID_ADDRESS)");
    } else {
        lb_warn("web: the agent zygote %d did not answer; task %s starts by exec and a new zygote follows", (int)z,
                id);
    }
    return 0;
}

/* ---- short helpers with captured output ---- */

int lb_spawn_capture(char *const argv[], size_t max, int timeout_ms, char **out, size_t *outlen,
                     int *exit_status)
{
    return lb_spawn_capture_in(argv, NULL, max, timeout_ms, out, outlen, exit_status);
}

int lb_spawn_capture_in(char *const argv[], const char *stdin_path, size_t max, int timeout_ms, char **out,
                        size_t *outlen, int *exit_status)
{
    *out = NULL;
    *outlen = 0;
    *exit_status = -1;
    int p[2] = {-1, -1}, rc = LB_OK, fa_ok = 0, at_ok = 0;
    pid_t pid = 0;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    lb_buf b;
    lb_buf_init(&b, max);
    if (pipe2(p, O_CLOEXEC) != 0) {
        rc = LB_E_IO;
        goto out;
    }
    if (posix_spawn_file_actions_init(&fa) != 0) {
        rc = LB_E_NOMEM;
        goto out;
    }
    fa_ok = 1;
    /* stderr stays ours: whatever the helper complains about lands in the web log */
    if (posix_spawn_file_actions_addopen(&fa, 0, stdin_path ? stdin_path : "/dev/null", O_RDONLY | O_NOFOLLOW, 0) ||
        posix_spawn_file_actions_adddup2(&fa, p[1], 1) || posix_spawn_file_actions_addclosefrom_np(&fa, 3)) {
        rc = LB_E_NOMEM;
        goto out;
    }
    if ((rc = lb_spawn_attr(&at, 0)) != LB_OK)
        goto out;
    at_ok = 1;
    int e = posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
    if (e != 0) {
        pid = 0;
        errno = e;
        rc = LB_E_IO;
        goto out;
    }
    close(p[1]);
    p[1] = -1;
    rc = lb_buf_read_fd(&b, p[0], timeout_ms);
out:
    if (pid > 0) {
        if (rc != LB_OK)
            kill(pid, SIGKILL);
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        *exit_status = st;
    }
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
    if (at_ok)
        posix_spawnattr_destroy(&at);
    if (fa_ok)
        posix_spawn_file_actions_destroy(&fa);
    if (rc == LB_OK) {
        if (!b.data && lb_buf_append(&b, "", 0) != LB_OK)
            rc = LB_E_NOMEM;
        else
            *out = lb_buf_steal(&b, outlen);
    }
    lb_buf_free(&b);
    return rc;
}
