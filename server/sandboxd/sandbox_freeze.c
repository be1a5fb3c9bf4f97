/* Freeze and thaw of a sandbox (sandbox_freeze.h). Runs on the event loop:
 * the freezer answers within milliseconds (a bounded wait below). */
#include "sandboxd/sandbox_freeze.h"

#include "sandboxd/cgroup.h"
#include "sandboxd/proc_walk.h"
#include "sandboxd/objects.h"
#include "sandboxd/sandbox_create.h"

#include "common/log.h"
#include "common/status.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The freezer is asynchronous: a task in an uninterruptible sleep can keep
 * a group "FREEZING" for a while. Wait this long before giving up on it. */
#define FRZ_WAIT_MS 2000

static void frz_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000 * 1000};
    nanosleep(&ts, NULL);
}

typedef struct {
    lbsd_sandbox *sb;
    int sig;
    int n;
} frz_walk;

/* One process of the fallback: sig to it when it is the sandbox's and not
 * its init (which reaps, and answers sandboxd on its control socket). */
static int frz_signal_one(pid_t pid, void *arg)
{
    frz_walk *w = arg;
    if (pid == w->sb->init_pid || !lbsd_pid_in_sandbox(w->sb, pid))
        return 0;
    if (kill(pid, w->sig) == 0)
        w->n++;
    return 0;
}

static int frz_signal_all(lbsd_sandbox *sb, int sig)
{
    frz_walk w = {sb, sig, 0};
    /* twice: a process that forked during the first walk is caught by the
     * second (its parent is stopped by then) */
    for (int i = 0; i < (sig == SIGSTOP ? 2 : 1); i++)
        if (lbsd_proc_each(frz_signal_one, &w) < 0)
            return -1;
    return w.n;
}

int lbsd_sandbox_freeze(lbsd_sandbox *sb, char *msg, size_t msgsz)
{
    if (sb->frozen)
        return LB_OK;
    if (sb->cg.made && (sb->cg.v2[0] || sb->cg.frz[0])) {
        /* the group at once: nothing in it can fork away meanwhile */
        if (lbsd_cg_freeze(&sb->cg, 1) == LB_OK) {
            for (int i = 0; i < FRZ_WAIT_MS; i++) {
                if (lbsd_cg_is_frozen(&sb->cg)) {
                    sb->frozen = LBSD_FROZEN_CGROUP;
                    return LB_OK;
                }
                frz_sleep_ms(1);
            }
            lb_warn("sandbox %s: the cgroup freezer did not settle in %d ms; stopping its processes instead",
                    sb->id, FRZ_WAIT_MS);
            LB_IGNORE(lbsd_cg_freeze(&sb->cg, 0)); /* the processes are stopped one by one below */
        } else {
            lb_warn("sandbox %s: cannot use the cgroup freezer (%s); stopping its processes instead", sb->id,
                    strerror(errno));
        }
    } else {
        static int warned;
        if (!warned++)
            lb_warn("no cgroup freezer on this host: freeze stops a sandbox's processes with SIGSTOP");
    }
    if (frz_signal_all(sb, SIGSTOP) < 0) {
        snprintf(msg, msgsz, "cannot freeze sandbox %s: /proc cannot be read", sb->id);
        return LB_E_IO;
    }
    sb->frozen = LBSD_FROZEN_SIGSTOP;
    return LB_OK;
}

int lbsd_sandbox_thaw(lbsd_sandbox *sb, char *msg, size_t msgsz)
{
    if (!sb->frozen)
        return LB_OK;
    if (sb->frozen == LBSD_FROZEN_CGROUP) {
        if (lbsd_cg_freeze(&sb->cg, 0) != LB_OK) {
            snprintf(msg, msgsz, "cannot thaw sandbox %s: the cgroup freezer refused (%s)", sb->id,
                     strerror(errno));
            return LB_E_IO;
        }
    } else if (frz_signal_all(sb, SIGCONT) < 0) {
        snprintf(msg, msgsz, "cannot thaw sandbox %s: /proc cannot be read", sb->id);
        return LB_E_IO;
    }
    sb->frozen = LBSD_FROZEN_NO;
    return LB_OK;
}
