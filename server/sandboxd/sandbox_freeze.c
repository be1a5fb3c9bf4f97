/* Freeze and thaw of a sandbox (sandbox_freeze.h). Runs on the event loop:
 * the freezer answers within milliseconds (a bounded wait below). */
#include "sandboxd/sandbox_freeze.h"

#include "sandboxd/sandboxd.h"
#include "sandboxd/proc_walk.h"

#include "common/log.h"
#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The freezer is asynchronous: a task in an uninterruptible sleep can keep
 * a group "FREEZING" for a while. Wait this long before giving up on it. */
#define FRZ_WAIT_MS 2000

static int frz_write(const char *dir, const char *file, const char *val)
{
    char p[LBSD_CG_PATH + 32];
    if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, file) >= sizeof p)
        return LB_E_INVAL;
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return LB_E_IO;
    ssize_t w = write(fd, val, strlen(val));
    int e = errno;
    close(fd);
    errno = e;
    return w == (ssize_t)strlen(val) ? LB_OK : LB_E_IO;
}

static int frz_read(const char *dir, const char *file, char *buf, size_t bufsz)
{
    char p[LBSD_CG_PATH + 32];
    if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, file) >= sizeof p)
        return LB_E_INVAL;
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return LB_E_IO;
    ssize_t n = read(fd, buf, bufsz - 1);
    close(fd);
    if (n < 0)
        return LB_E_IO;
    buf[n] = '\0';
    return LB_OK;
}

static void frz_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* Whether the group says it is frozen: v2 "frozen 1" in cgroup.events,
 * v1 "FROZEN" in freezer.state. */
static int frz_is_frozen(const lbsd_sandbox *sb)
{
    char st[512];
    if (sb->cg.v2[0])
        return frz_read(sb->cg.v2, "cgroup.events", st, sizeof st) == LB_OK && strstr(st, "frozen 1") != NULL;
    return frz_read(sb->cg.frz, "freezer.state", st, sizeof st) == LB_OK && !strncmp(st, "FROZEN", 6);
}

static int frz_set(const lbsd_sandbox *sb, int on)
{
    if (sb->cg.v2[0])
        return frz_write(sb->cg.v2, "cgroup.freeze", on ? "1" : "0");
    return frz_write(sb->cg.frz, "freezer.state", on ? "FROZEN" : "THAWED");
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
        if (frz_set(sb, 1) == LB_OK) {
            for (int i = 0; i < FRZ_WAIT_MS; i++) {
                if (frz_is_frozen(sb)) {
                    sb->frozen = LBSD_FROZEN_CGROUP;
                    return LB_OK;
                }
                frz_sleep_ms(1);
            }
            lb_warn("sandbox %s: the cgroup freezer did not settle in %d ms; stopping its processes instead",
                    sb->id, FRZ_WAIT_MS);
            LB_IGNORE(frz_set(sb, 0)); /* the processes are stopped one by one below */
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
        if (frz_set(sb, 0) != LB_OK) {
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
