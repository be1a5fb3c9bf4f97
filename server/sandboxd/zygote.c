/* The zygote (see zygote.h): sandboxd's side, then the helper's. */
#include "sandboxd/zygote.h"

#include "sandboxd/fdpass.h"
#include "sandboxd/image_layers.h"
#include "sandboxd/uidslot.h"

#include "common/log.h"
#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ZY_FD 3
#define ZY_TIMEOUT_MS 10000

/* One request: lbsd_init_cfg with its strings inline. Fixed size, so the
 * zygote takes nothing but a message of exactly this length. */
typedef struct zy_req {
    char scratch[LB_CFG_PATH + 64];
    char lower[LB_CFG_PATH + 64];
    char tag[64];
    int32_t has_idmap;
    int32_t make_idmap;           /* no idmap fd: make the namespace here (uidslot.h) */
    uint32_t idmap_base;
    int32_t disk_mib;
    uint32_t uid_root;
    int32_t rlimit_mode;
    uint64_t memory_bytes;
    int32_t pids;
    int32_t ptys;
    uint64_t nofile;
    /* a layered image (image_layers.h): "" for a debootstrap one */
    char lowerdirs[LBSD_LOWERDIRS_MAX];
    char hold[LB_CFG_PATH + 300];
    char workdir[LBSD_IMG_WORKDIR_MAX + 1];
    char env[LBSD_IMG_ENV_BYTES];
    uint64_t envlen;
    int64_t uid, gid;
} zy_req;

typedef struct zy_rep {
    int32_t pid;   /* > 0: the new init */
    int32_t err;   /* else the clone's errno */
} zy_rep;

static pthread_mutex_t zy_mu = PTHREAD_MUTEX_INITIALIZER;
static int zy_fd = -1;
static pid_t zy_pid;

pid_t lbsd_zygote_pid(void)
{
    pthread_mutex_lock(&zy_mu);
    pid_t p = zy_pid;
    pthread_mutex_unlock(&zy_mu);
    return p;
}

/* Forks and execs the zygote; zy_mu held (or no thread yet). */
static int zy_spawn(char *msg, size_t msgsz)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(msg, msgsz, "zygote socketpair: %s", strerror(errno));
        return LB_E_SANDBOX;
    }
    /* raw clone: this may run on a worker thread (a restart), and the
     * child only execs */
    pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
    if (pid < 0) {
        snprintf(msg, msgsz, "cannot start the zygote: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return LB_E_SANDBOX;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int s = sv[1] == ZY_FD ? sv[1] : dup2(sv[1], ZY_FD);
        if (s != ZY_FD)
            _exit(127);
        fcntl(ZY_FD, F_SETFD, 0);
        close_range(ZY_FD + 1, ~0U, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        char *argv[] = {"llmbox-sandboxd", "zygote", NULL};
        char *envp[] = {NULL};
        execve("/proc/self/exe", argv, envp);
        _exit(127);
    }
    close(sv[1]);
    if (zy_fd >= 0)
        close(zy_fd);
    zy_fd = sv[0];
    zy_pid = pid;
    return LB_OK;
}

int lbsd_zygote_start(char *msg, size_t msgsz)
{
    pthread_mutex_lock(&zy_mu);
    int rc = zy_spawn(msg, msgsz);
    pthread_mutex_unlock(&zy_mu);
    if (rc == LB_OK)
        lb_info("zygote %d started: sandboxes are cloned from it", (int)zy_pid);
    return rc;
}

void lbsd_zygote_stop(void)
{
    pthread_mutex_lock(&zy_mu);
    if (zy_fd >= 0)
        close(zy_fd);
    zy_fd = -1;
    zy_pid = 0;
    pthread_mutex_unlock(&zy_mu);
}

static int zy_copy(char *dst, size_t dstsz, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n >= dstsz)
        return -1;
    memcpy(dst, src ? src : "", n + 1);
    return 0;
}

/* One request and its answer; zy_mu held. 1: answered (rep filled), 0: the
 * zygote is gone (restart it), -1: a local failure (msg says it). */
static int zy_ask(const zy_req *rq, int ctl, int idmap, zy_rep *rep, char *msg, size_t msgsz)
{
    if (zy_fd < 0)
        return 0;
    int fds[2] = {ctl, idmap};
    ssize_t w = lbsd_fds_send(zy_fd, rq, sizeof *rq, fds, idmap >= 0 ? 2 : 1, 0);
    if (w < 0 && (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN))
        return 0;
    if (w != (ssize_t)sizeof *rq) {
        snprintf(msg, msgsz, "cannot reach the zygote: %s", strerror(errno));
        return -1;
    }
    /* The zygote only clones: it answers within a millisecond unless the
     * host is starved. A bound all the same, so that a stuck zygote fails
     * creates with a sentence instead of holding a worker for ever. */
    struct timeval tv = {.tv_sec = ZY_TIMEOUT_MS / 1000};
    setsockopt(zy_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t n;
    do
        n = recv(zy_fd, rep, sizeof *rep, 0);
    while (n < 0 && errno == EINTR);
    if (n == 0 || (n < 0 && errno == ECONNRESET))
        return 0;
    if (n != (ssize_t)sizeof *rep) {
        snprintf(msg, msgsz, "the zygote did not answer: %s",
                 n < 0 ? strerror(errno) : "a short answer");
        /* its answer may still come and would be taken for the next one's */
        close(zy_fd);
        zy_fd = -1;
        return -1;
    }
    return 1;
}

pid_t lbsd_zygote_clone(const lbsd_init_cfg *ic, int ctl, char *msg, size_t msgsz)
{
    zy_req rq;
    memset(&rq, 0, sizeof rq);
    if (zy_copy(rq.scratch, sizeof rq.scratch, ic->scratch) ||
        zy_copy(rq.lower, sizeof rq.lower, ic->lower) || zy_copy(rq.tag, sizeof rq.tag, ic->tag) ||
        zy_copy(rq.lowerdirs, sizeof rq.lowerdirs, ic->lowerdirs) || zy_copy(rq.hold, sizeof rq.hold, ic->hold) ||
        zy_copy(rq.workdir, sizeof rq.workdir, ic->workdir) || ic->envlen > sizeof rq.env) {
        snprintf(msg, msgsz, "a sandbox path is too long for the zygote");
        return -1;
    }
    rq.has_idmap = ic->idmap_fd >= 0;
    rq.make_idmap = ic->idmap_make && ic->idmap_fd < 0;
    rq.idmap_base = ic->idmap_base;
    rq.disk_mib = ic->disk_mib;
    rq.uid_root = ic->uid_root;
    rq.rlimit_mode = ic->rlimit_mode;
    rq.memory_bytes = ic->memory_bytes;
    rq.pids = ic->pids;
    rq.ptys = ic->ptys;
    rq.nofile = ic->nofile;
    if (ic->envlen)
        memcpy(rq.env, ic->env, ic->envlen);
    rq.envlen = ic->envlen;
    rq.uid = ic->uid;
    rq.gid = ic->gid;
    zy_rep rep = {0, 0};
    pthread_mutex_lock(&zy_mu);
    int r = zy_ask(&rq, ctl, ic->idmap_fd, &rep, msg, msgsz);
    if (r == 0) {
        /* it died (a bug, or someone killed it): one new one, logged */
        lb_warn("the zygote (pid %d) is gone: starting a new one", (int)zy_pid);
        if (zy_spawn(msg, msgsz) == LB_OK)
            r = zy_ask(&rq, ctl, ic->idmap_fd, &rep, msg, msgsz);
        if (r == 0)
            snprintf(msg, msgsz, "the zygote died and a new one does not answer");
    }
    pthread_mutex_unlock(&zy_mu);
    if (r <= 0)
        return -1;
    if (rep.pid <= 0) {
        snprintf(msg, msgsz, "the zygote could not start the sandbox's init (its namespaces or "
                             "its idmap, logged): %s", strerror(rep.err));
        return -1;
    }
    return (pid_t)rep.pid;
}

/* ---- the zygote process ------------------------------------------------------ */

static void zy_reply(pid_t pid, int err)
{
    zy_rep rep = {.pid = (int32_t)pid, .err = (int32_t)err};
    while (send(ZY_FD, &rep, sizeof rep, MSG_NOSIGNAL) < 0 && errno == EINTR)
        ;
}

/* Takes one request; returns 1 with it, 0 on EOF, -1 on a malformed one
 * (its fds closed). fds[0]: ctl, fds[1]: idmap or -1. */
static int zy_recv(zy_req *rq, int fds[2])
{
    int got[LBSD_FDPASS_MAX], ngot, cut;
    fds[0] = fds[1] = -1;
    ssize_t n = lbsd_fds_recv(ZY_FD, rq, sizeof *rq, got, LBSD_FDPASS_MAX, &ngot, &cut);
    if (n <= 0)
        return 0;
    int want = 1 + (n == (ssize_t)sizeof *rq && rq->has_idmap);
    if (n != (ssize_t)sizeof *rq || cut || ngot != want ||
        !memchr(rq->scratch, 0, sizeof rq->scratch) || !memchr(rq->lower, 0, sizeof rq->lower) ||
        !memchr(rq->tag, 0, sizeof rq->tag) || !memchr(rq->lowerdirs, 0, sizeof rq->lowerdirs) ||
        !memchr(rq->hold, 0, sizeof rq->hold) || !memchr(rq->workdir, 0, sizeof rq->workdir) ||
        rq->envlen > sizeof rq->env) {
        for (int i = 0; i < ngot; i++)
            close(got[i]);
        return -1;
    }
    fds[0] = got[0];
    fds[1] = want == 2 ? got[1] : -1;
    return 1;
}

/* A stock of fresh network namespaces, made while no request waits.
 *
 * A new network namespace (loopback, per-namespace sysctl tables) was
 * about half of every init's clone (perf: copy_net_ns, ~0.4 ms). Made
 * ahead, the clone only enters one. Each is made here by unshare, so it is
 * owned by the host's user namespace exactly as one made by the clone;
 * no process ever runs in it but the zygote for the moment of making it;
 * each is used once and closed. After making or using one the zygote goes
 * back to its own namespace, and dies if it cannot (sandboxd starts a new
 * zygote): it must never clone a sandbox into a namespace it shares. */
#define ZY_NET_STOCK 4
static int zy_host_net = -1;
static int zy_net[ZY_NET_STOCK];
static int zy_nnet;

static void zy_net_home(void)
{
    if (setns(zy_host_net, CLONE_NEWNET) != 0) {
        lb_error("zygote: cannot go back to its network namespace: %s", strerror(errno));
        _exit(1);
    }
}

/* Fills the stock while sandboxd sends nothing (a request goes first). */
static void zy_net_refill(void)
{
    while (zy_host_net >= 0 && zy_nnet < ZY_NET_STOCK) {
        struct pollfd p = {.fd = ZY_FD, .events = POLLIN};
        if (poll(&p, 1, 0) != 0)
            return;
        if (unshare(CLONE_NEWNET) != 0)
            return; /* the clone makes one itself, as without a stock */
        int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        zy_net_home();
        if (fd < 0)
            return;
        zy_net[zy_nnet++] = fd;
    }
}

int lbsd_zygote_main(void)
{
    lb_log_init("zygote");
    prctl(PR_SET_NAME, "llmbox-zygote");
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1)
        return 1; /* sandboxd died before we got here */
    signal(SIGPIPE, SIG_IGN);
    /* every init loads this program: compiled once, here */
    if (lbsd_seccomp_prepare() != LB_OK) {
        lb_error("zygote: cannot compile the seccomp filter");
        return 1;
    }
    zy_host_net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC); /* -1: no stock */
    for (;;) {
        zy_net_refill();
        zy_req rq;
        int fds[2];
        int r = zy_recv(&rq, fds);
        if (r == 0)
            return 0; /* sandboxd is gone */
        if (r < 0) {
            zy_reply(-1, EINVAL);
            continue;
        }
        if (rq.make_idmap) {
            char why[256];
            fds[1] = lbsd_userns_make(rq.idmap_base, rq.uid_root, why, sizeof why);
            if (fds[1] < 0) {
                lb_warn("zygote: %s", why);
                close(fds[0]);
                zy_reply(-1, EAGAIN);
                continue;
            }
        }
        lbsd_init_cfg ic = {
            .scratch = rq.scratch, .lower = rq.lower, .tag = rq.tag,
            .idmap_fd = fds[1],
            .disk_mib = rq.disk_mib,
            .uid_root = rq.uid_root,
            .rlimit_mode = rq.rlimit_mode,
            .memory_bytes = rq.memory_bytes,
            .pids = rq.pids,
            .nofile = rq.nofile,
            .ptys = rq.ptys,
            .lowerdirs = rq.lowerdirs[0] ? rq.lowerdirs : NULL,
            .hold = rq.hold[0] ? rq.hold : NULL,
            .workdir = rq.workdir,
            .env = rq.env,
            .envlen = (size_t)rq.envlen,
            .uid = rq.uid,
            .gid = rq.gid,
        };
        /* CLONE_PARENT: init is sandboxd's child, not ours (zygote.h);
         * its network namespace a fresh one from the stock, else new */
        unsigned long fl = CLONE_PARENT | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
        int net = zy_nnet > 0 ? zy_net[--zy_nnet] : -1;
        if (net >= 0 && setns(net, CLONE_NEWNET) != 0) {
            close(net);
            net = -1;
        }
        if (net < 0)
            fl |= CLONE_NEWNET;
        pid_t pid = (pid_t)syscall(SYS_clone, fl, NULL, NULL, NULL, NULL);
        if (pid == 0)
            lbsd_init_main(&ic, fds[0]);
        int e = errno;
        if (net >= 0) {
            zy_net_home();
            close(net);
        }
        close(fds[0]);
        if (fds[1] >= 0)
            close(fds[1]);
        zy_reply(pid, pid < 0 ? e : 0);
    }
}
