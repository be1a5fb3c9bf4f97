/* Parking idle sandboxes' descriptors with their inits (see fdpark.h). */
#include "sandboxd/fdpark.h"

#include "sandboxd/fdpass.h"

#include "common/log.h"
#include "common/status.h"
#include "common/util.h"
#include "sandboxd/sandbox_exec.h"
#include "sandboxd/sandbox_create.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PARK_FDS_UNPARKED 5      /* ctl, root, the shell's 3 pipes */

static long long g_budget = -1;  /* descriptors sandboxes may hold; -1: never park */
static unsigned g_changes;

unsigned lbsd_park_changes(void)
{
    return g_changes;
}

void lbsd_park_init(int max_conns, int workers)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return;
    /* a create holds ~8 more for a moment (socketpairs, pipes, the idmap
     * namespace, /proc files); the loop, the log and the lock a few */
    long long b = (long long)rl.rlim_cur - max_conns - 16LL * workers - 64;
    g_budget = b > 0 ? b : 0;
}

/* No command (running, or ended and not yet collected), a shell, not used
 * for min_age ms, and neither frozen (its init could not answer) nor being
 * saved (a worker reads it through its root: follow-ups, sandbox_save.c). */
static int park_idle(const lbsd_sandbox *sb, int64_t now, int64_t min_age)
{
    int64_t last = sb->used_ms > sb->created_ms ? sb->used_ms : sb->created_ms;
    return !sb->parked && !sb->broken && !sb->exec && !sb->frozen && !sb->saving &&
           sb->ctl_fd >= 0 && sb->sh_in >= 0 &&
           sb->sh_out >= 0 && sb->sh_err >= 0 && now - last >= min_age;
}

/* Hands copies of sb's shell pipes to its init; ours are closed when init
 * says where it keeps them (lbsd_park_note), so that nothing ever waits
 * for init: a sandbox wanted again before that simply takes its park back.
 * 0 on success. */
static int park_one(lbsd_sandbox *sb)
{
    /* what is in the pipes now goes to the idle buffers, as it would */
    lbsd_exec_on_output(sb, sb->sh_out);
    lbsd_exec_on_output(sb, sb->sh_err);
    int fds[3] = {sb->sh_in, sb->sh_out, sb->sh_err};
    struct stat st[3];
    for (int i = 0; i < 3; i++)
        if (fstat(fds[i], &st[i]) != 0)
            return -1;
    char word[32];
    int len = snprintf(word, sizeof word, "PARK %u", sb->park_seq + 1);
    ssize_t w = lbsd_fds_send(sb->ctl_fd, word, (size_t)len, fds, 3, MSG_DONTWAIT);
    if (w != len)
        return -1; /* init's queue is full or it is gone: stays unparked */
    sb->park_seq++;
    for (int i = 0; i < 3; i++) {
        sb->park_dev[i] = (uint64_t)st[i].st_dev;
        sb->park_ino[i] = (uint64_t)st[i].st_ino;
        sb->park_fd[i] = -1;
    }
    sb->parked = 1;
    return 0;
}

int lbsd_park_relieve(lbsd_sandbox *list, int n, int64_t now)
{
    if (g_budget < 0)
        return 0;
    if ((long long)n * PARK_FDS_UNPARKED * 4 <= g_budget * 3 && n <= LBSD_PARK_UNPARKED_MAX)
        return 0; /* the cheap test: even all unparked would do */
    long long held = 0, unparked = 0;
    for (const lbsd_sandbox *s = list; s; s = s->next) {
        held += s->parked == 2 ? 1 : PARK_FDS_UNPARKED;
        unparked += s->parked != 2;
    }
    if (held * 4 <= g_budget * 3 && unparked <= LBSD_PARK_UNPARKED_MAX)
        return 0;
    /* Enough to get down to half the budget and three quarters of the
     * count, the ones unused for LBSD_PARK_IDLE_MS first; past seven
     * eighths of the budget (a burst of creates, faster than that), any
     * without a command: a park and its unpark cost tens of microseconds,
     * a create refused for EMFILE costs more. The list is newest first, so
     * the candidates at its tail have waited longest: the others are
     * skipped. */
    int parked = 0;
    for (int pass = 0; pass < 2; pass++) {
        int64_t age = pass == 0 ? LBSD_PARK_IDLE_MS : 0;
        if (pass == 1 && held * 8 <= g_budget * 7)
            break;
        long long need = 0;
        if (held * 2 > g_budget)
            need = (held - g_budget / 2 + PARK_FDS_UNPARKED - 2) / (PARK_FDS_UNPARKED - 1);
        if (unparked - LBSD_PARK_UNPARKED_MAX * 3 / 4 > need)
            need = unparked - LBSD_PARK_UNPARKED_MAX * 3 / 4;
        if (need <= 0)
            break;
        long long idle = 0;
        for (const lbsd_sandbox *s = list; s; s = s->next)
            idle += park_idle(s, now, age);
        long long skip = idle > need ? idle - need : 0;
        for (lbsd_sandbox *s = list; s; s = s->next) {
            if (!park_idle(s, now, age) || skip-- > 0)
                continue;
            if (park_one(s) == 0) {
                held -= PARK_FDS_UNPARKED - 1;
                unparked--;
                parked++;
            }
        }
    }
    if (parked)
        lb_info("parked the descriptors of %d idle sandbox(es) with their inits (%lld of %lld "
                "descriptors held, %lld sandboxes unparked)", parked, held, g_budget, unparked);
    return parked;
}

int lbsd_park_note(lbsd_sandbox *sb, const char *msg)
{
    unsigned seq;
    int a, b, c;
    if (sscanf(msg, "PARKED %u %d %d %d", &seq, &a, &b, &c) != 4)
        return 0;
    /* an answer to an older park (taken back since) is no news */
    if (sb->parked != 1 || seq != sb->park_seq || a <= 2 || b <= 2 || c <= 2)
        return 1;
    sb->park_fd[0] = a;
    sb->park_fd[1] = b;
    sb->park_fd[2] = c;
    int *mine[4] = {&sb->sh_in, &sb->sh_out, &sb->sh_err, &sb->root_fd};
    for (int i = 0; i < 4; i++) {
        if (*mine[i] >= 0)
            close(*mine[i]);
        *mine[i] = -1;
    }
    sb->parked = 2;
    g_changes++;
    return 1;
}

int lbsd_unpark(lbsd_sandbox *sb, char *msg, size_t msgsz)
{
    sb->used_ms = lb_mono_ms();
    if (!sb->parked)
        return LB_OK;
    if (sb->parked == 1) {
        /* init has not answered: ours are still open, it drops its copies
         * when it reads this (after the park: the socket keeps the order) */
        sb->parked = 0;
        if (send(sb->ctl_fd, "UNPARK", 6, MSG_NOSIGNAL | MSG_DONTWAIT) != 6)
            lb_warn("sandbox %s: cannot tell init to drop its parked copies: %s", sb->id,
                    strerror(errno));
        return LB_OK;
    }
    if (sb->broken || sb->init_reaped) {
        snprintf(msg, msgsz, "its init died");
        return LB_E_SANDBOX;
    }
    /* what init said while nobody polled its socket (a shell that died) */
    for (int i = 0; i < 16 && sb->ctl_fd >= 0; i++) {
        struct pollfd p = {.fd = sb->ctl_fd, .events = POLLIN};
        if (poll(&p, 1, 0) <= 0)
            break;
        if (lbsd_ctl_handle(sb) < 0) {
            snprintf(msg, msgsz, "its init is gone");
            return LB_E_SANDBOX;
        }
    }
    int rc = LB_E_SANDBOX;
    int got[3] = {-1, -1, -1};
    /* init is our child and not reaped: its pid is still its own */
    int pfd = (int)syscall(SYS_pidfd_open, sb->init_pid, 0);
    if (pfd < 0) {
        snprintf(msg, msgsz, "pidfd_open of its init: %s", strerror(errno));
        goto out;
    }
    for (int i = 0; i < 3; i++) {
        got[i] = (int)syscall(SYS_pidfd_getfd, pfd, sb->park_fd[i], 0);
        struct stat st;
        if (got[i] < 0 || fstat(got[i], &st) != 0 || !S_ISFIFO(st.st_mode) ||
            (uint64_t)st.st_dev != sb->park_dev[i] || (uint64_t)st.st_ino != sb->park_ino[i]) {
            snprintf(msg, msgsz, "its parked descriptor %d did not come back from its init (%s)",
                     i, got[i] < 0 ? strerror(errno) : "another file");
            goto out;
        }
    }
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/root", (int)sb->init_pid);
    sb->root_fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sb->root_fd < 0) {
        snprintf(msg, msgsz, "cannot open the sandbox root: %s", strerror(errno));
        goto out;
    }
    /* pidfd_getfd sets close-on-exec; the shell's ends are non-blocking
     * already (the file status flags travel with the open file) */
    sb->sh_in = got[0];
    sb->sh_out = got[1];
    sb->sh_err = got[2];
    got[0] = got[1] = got[2] = -1;
    sb->parked = 0;
    g_changes++;
    /* init drops its copies; if this is lost, init keeps three stale fds
     * until the next park replaces them */
    if (send(sb->ctl_fd, "UNPARK", 6, MSG_NOSIGNAL | MSG_DONTWAIT) != 6)
        lb_warn("sandbox %s: cannot tell init to drop its parked copies: %s", sb->id,
                strerror(errno));
    rc = LB_OK;
out:
    for (int i = 0; i < 3; i++)
        if (got[i] >= 0)
            close(got[i]);
    if (pfd >= 0)
        close(pfd);
    return rc;
}

int lbsd_parked_count(const lbsd_sandbox *list)
{
    int n = 0;
    for (const lbsd_sandbox *s = list; s; s = s->next)
        n += s->parked == 2;
    return n;
}
