/*
 * Network modes of a sandbox.
 *
 *   none  loopback only: the sandbox's own network namespace with `lo` up
 *         (sandbox_init.c). The default, always allowed.
 *   nat   outbound through slirp4netns: a user-mode TCP/IP stack on the
 *         host side that owns a tap device (tap0, 10.0.2.100/24, default
 *         route via 10.0.2.2, DNS 10.0.2.3) in the sandbox's network
 *         namespace and turns its traffic into ordinary sockets of the
 *         host. Host loopback is disabled (10.0.2.2 does not lead to the
 *         host's 127.0.0.1), slirp4netns sandboxes itself (own mount
 *         namespace, capabilities dropped, seccomp), and it dies with the
 *         sandbox (--exit-fd), with sandboxd (PR_SET_PDEATHSIG and the same
 *         exit fd), or at the next sandboxd start (stale.c).
 *
 * The operator chooses what clients may ask for: LLMBOX_NETWORK_ALLOW, a
 * comma-separated list ("none" or "none,nat"; "none" is always allowed).
 */
#include "sandboxd/sandbox_net.h"

#include "sandboxd/stale.h"

#include "sandboxd/sandbox_egress.h"

#include "common/log.h"
#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NET_READY_TIMEOUT_MS 5000
#define NET_RESOLV "nameserver 10.0.2.3\n" /* slirp4netns's DNS forwarder */

static unsigned g_allow = 1u << LBSD_NET_NONE;
static char g_slirp[64]; /* the slirp4netns binary, "" if not installed */

static void net_msg(char *msg, size_t msgsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void net_msg(char *msg, size_t msgsz, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msgsz, fmt, ap);
    va_end(ap);
}

int lbsd_net_check_config(const char *network_allow, char *msg, size_t msgsz)
{
    char list[sizeof ((lb_config *)0)->network_allow];
    snprintf(list, sizeof list, "%s", network_allow);
    g_allow = 1u << LBSD_NET_NONE;
    char *save = NULL;
    for (char *w = strtok_r(list, ", \t", &save); w; w = strtok_r(NULL, ", \t", &save)) {
        int m = lbsd_network_parse(w);
        if (m < 0) {
            net_msg(msg, msgsz, "LLMBOX_NETWORK_ALLOW: unknown network mode '%s' (known: none, nat)",
                    w);
            return LB_E_INVAL;
        }
        g_allow |= 1u << m;
    }
    /* a fixed list, not $PATH: sandboxd is root and runs what it finds */
    static const char *const cand[] = {"/usr/bin/slirp4netns", "/usr/local/bin/slirp4netns",
                                       "/bin/slirp4netns"};
    g_slirp[0] = '\0';
    for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
        if (access(cand[i], X_OK) == 0) {
            snprintf(g_slirp, sizeof g_slirp, "%s", cand[i]);
            break;
        }
    }
    if ((g_allow & (1u << LBSD_NET_NAT)) && !g_slirp[0])
        lb_warn("LLMBOX_NETWORK_ALLOW allows nat, but slirp4netns is not installed: nat sandboxes "
                "will fail (apt-get install slirp4netns)");
    return LB_OK;
}

int lbsd_net_allowed(int mode)
{
    if (mode == LBSD_NET_EGRESS) /* rules: the operator's network_egress_max, and the host's tools */
        return lbsd_egress_enabled();
    return mode > 0 && mode < 32 && (g_allow & (1u << mode));
}

cJSON *lbsd_net_allowed_json(void)
{
    cJSON *a = cJSON_CreateArray();
    for (int m = LBSD_NET_NONE; a && m <= LBSD_NET_NAT; m++)
        if (lbsd_net_allowed(m))
            cJSON_AddItemToArray(a, cJSON_CreateString(lbsd_network_name(m)));
    return a;
}

/* Writes /etc/resolv.conf through the sandbox's root fd: a temporary file
 * renamed over the old one, so a symlink there is replaced, never followed.
 * It gets the old file's owner (or /etc's), so that sandbox root can still
 * edit it whatever uid mapping the sandbox has. */
static int net_write_resolv(lbsd_sandbox *sb, char *msg, size_t msgsz)
{
    int etc = openat(sb->root_fd, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (etc < 0) {
        net_msg(msg, msgsz, "cannot open /etc in the sandbox: %s", strerror(errno));
        return LB_E_SANDBOX;
    }
    struct stat st;
    if (fstatat(etc, "resolv.conf", &st, AT_SYMLINK_NOFOLLOW) != 0 && fstat(etc, &st) != 0)
        st.st_uid = 0, st.st_gid = 0;
    char tmp[64];
    snprintf(tmp, sizeof tmp, ".resolv.conf.llmbox-%d", (int)getpid());
    unlinkat(etc, tmp, 0);
    int rc = LB_E_SANDBOX;
    int fd = openat(etc, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        net_msg(msg, msgsz, "cannot write /etc/resolv.conf in the sandbox: %s", strerror(errno));
        goto out;
    }
    if (lb_write_all(fd, NET_RESOLV, strlen(NET_RESOLV)) != LB_OK ||
        fchown(fd, st.st_uid, st.st_gid) != 0 || fchmod(fd, 0644) != 0) {
        net_msg(msg, msgsz, "cannot write /etc/resolv.conf in the sandbox: %s", strerror(errno));
        close(fd);
        unlinkat(etc, tmp, 0);
        goto out;
    }
    close(fd);
    if (renameat(etc, tmp, etc, "resolv.conf") != 0) {
        net_msg(msg, msgsz, "cannot replace /etc/resolv.conf in the sandbox: %s", strerror(errno));
        unlinkat(etc, tmp, 0);
        goto out;
    }
    rc = LB_OK;
out:
    close(etc);
    return rc;
}

/* Waits for pid (our child) for at most timeout_ms. 1 if reaped. */
static int net_wait(pid_t pid, int timeout_ms)
{
    int64_t end = lb_mono_ms() + timeout_ms;
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return 1;
        if (lb_mono_ms() >= end)
            return 0;
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* The last line slirp4netns wrote to its log, for an error message. */
static void net_log_tail(const char *path, char *out, size_t outsz)
{
    out[0] = '\0';
    char buf[2048];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    off_t end = lseek(fd, 0, SEEK_END);
    off_t from = end > (off_t)sizeof buf - 1 ? end - (off_t)sizeof buf + 1 : 0;
    ssize_t n = pread(fd, buf, sizeof buf - 1, from);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    char *line = strrchr(buf, '\n');
    line = line ? line + 1 : buf;
    /* it is our own helper's text, but keep the message one clean line */
    size_t j = 0;
    for (size_t i = 0; line[i] && j + 1 < outsz; i++)
        out[j++] = (line[i] >= 0x20 && line[i] < 0x7f) ? line[i] : '?';
    out[j] = '\0';
}

/* In the forked child: fds 0-2 /dev/null + log, 3 the exit fd, 4 the
 * ready fd, nothing else; then exec slirp4netns. Never returns. */
__attribute__((noreturn)) static void net_child(pid_t parent, int exit_rd, int ready_wr, int logfd,
                                                char *const argv[])
{
    /* dies with sandboxd even if the exit fd were somehow kept open */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    setsid(); /* a terminal's ^C goes to sandboxd, which tears down in order */
    int a = fcntl(exit_rd, F_DUPFD, 10), b = fcntl(ready_wr, F_DUPFD, 10),
        l = fcntl(logfd, F_DUPFD, 10), nul = open("/dev/null", O_RDONLY);
    if (a < 0 || b < 0 || l < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(l, 1) < 0 ||
        dup2(l, 2) < 0 || dup2(a, 3) < 0 || dup2(b, 4) < 0)
        _exit(126);
    close_range(5, ~0U, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C", NULL};
    execve(g_slirp, argv, envp);
    _exit(127);
}

static int net_start_slirp(lbsd_sandbox *sb, char *msg, size_t msgsz)
{
    int exitp[2] = {-1, -1}, readyp[2] = {-1, -1}, logfd = -1, rc = LB_E_SANDBOX;
    pid_t pid = -1;
    char logpath[sizeof sb->dir + 32], pidarg[16], argv0[64];
    snprintf(logpath, sizeof logpath, "%s/slirp4netns.log", sb->dir);
    snprintf(pidarg, sizeof pidarg, "%d", (int)sb->init_pid);
    /* argv[0] marks the helper as this installation's (stale.c finds it) */
    snprintf(argv0, sizeof argv0, "slirp4netns:%s", lbsd_install_tag());
    /* --userns-path: stay in the host user namespace. Without it slirp4netns
     * would enter the target's user namespace (the sandbox's, if it has
     * one) and then lack the right to join a netns owned by the host's. */
    char *argv[] = {argv0, "--configure", "--mtu=65520", "--disable-host-loopback",
                    "--enable-sandbox", "--enable-seccomp", "--exit-fd=3", "--ready-fd=4",
                    "--userns-path=/proc/self/ns/user", pidarg, "tap0", NULL};
    if (!g_slirp[0]) {
        net_msg(msg, msgsz, "network \"nat\" needs slirp4netns, which is not installed on this "
                            "host (apt-get install slirp4netns)");
        return LB_E_SANDBOX;
    }
    if (pipe2(exitp, O_CLOEXEC) != 0 || pipe2(readyp, O_CLOEXEC) != 0) {
        net_msg(msg, msgsz, "pipe: %s", strerror(errno));
        goto out;
    }
    logfd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (logfd < 0) {
        net_msg(msg, msgsz, "cannot create %s: %s", logpath, strerror(errno));
        goto out;
    }
    pid_t self = getpid();
    fflush(NULL);
    pid = fork(); /* sandboxd is single-threaded; the child only sets up fds and execs */
    if (pid < 0) {
        net_msg(msg, msgsz, "fork for slirp4netns: %s", strerror(errno));
        goto out;
    }
    if (pid == 0)
        net_child(self, exitp[0], readyp[1], logfd, argv);
    close(readyp[1]);
    readyp[1] = -1;
    /* its memory (the sandbox's traffic buffers) is the sandbox's; inside
     * that group the OOM killer picks sandbox processes, not the helper */
    if (lbsd_cg_attach(&sb->cg, pid) != LB_OK)
        lb_warn("sandbox %s: slirp4netns stays outside the sandbox cgroups", sb->id);
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/oom_score_adj", (int)pid);
    int ofd = open(p, O_WRONLY | O_CLOEXEC);
    if (ofd >= 0) {
        if (write(ofd, "-1000", 5) != 5)
            lb_debug("sandbox %s: cannot protect slirp4netns from the OOM killer", sb->id);
        close(ofd);
    }
    /* the tap is up, addressed and routed when "1" arrives */
    char c = 0;
    int64_t end = lb_mono_ms() + NET_READY_TIMEOUT_MS;
    for (;;) {
        int left = (int)(end - lb_mono_ms());
        struct pollfd pf = {.fd = readyp[0], .events = POLLIN};
        int r = left > 0 ? poll(&pf, 1, left) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r > 0) {
            ssize_t n = read(readyp[0], &c, 1);
            if (n < 0 && errno == EINTR)
                continue;
        }
        break;
    }
    if (c != '1') {
        kill(pid, SIGKILL);
        net_wait(pid, 2000);
        char tail[300];
        net_log_tail(logpath, tail, sizeof tail);
        net_msg(msg, msgsz, "network \"nat\": slirp4netns %s%s%s",
                lb_mono_ms() >= end ? "did not get ready in time" : "failed",
                tail[0] ? ": " : "", tail);
        pid = -1;
        goto out;
    }
    sb->net.slirp_pid = pid;
    sb->net.slirp_reaped = 0;
    sb->net.exit_fd = exitp[1];
    exitp[1] = -1;
    rc = LB_OK;
out:
    for (int i = 0; i < 2; i++) {
        if (exitp[i] >= 0)
            close(exitp[i]);
        if (readyp[i] >= 0)
            close(readyp[i]);
    }
    if (logfd >= 0)
        close(logfd);
    return rc;
}

int lbsd_net_attach(lbsd_sandbox *sb, int mode, char *msg, size_t msgsz)
{
    if (mode == LBSD_NET_DEFAULT)
        mode = LBSD_NET_NONE;
    sb->net.mode = mode;
    if (mode == LBSD_NET_EGRESS) { /* through the gateway (sandbox_egress.c); DNS to any address reaches it */
        int erc = lbsd_egress_attach(sb, msg, msgsz);
        if (erc == LB_OK && (erc = net_write_resolv(sb, msg, msgsz)) != LB_OK)
            lbsd_egress_detach(sb);
        return erc;
    }
    if (mode != LBSD_NET_NAT)
        return LB_OK; /* loopback only: init already brought lo up */
    int64_t t0 = lb_mono_ms();
    int rc = net_start_slirp(sb, msg, msgsz);
    if (rc == LB_OK && (rc = net_write_resolv(sb, msg, msgsz)) != LB_OK)
        lbsd_net_detach(sb);
    if (rc == LB_OK)
        lb_info("sandbox %s: network nat (slirp4netns pid %d, %lld ms)", sb->id,
                (int)sb->net.slirp_pid, (long long)(lb_mono_ms() - t0));
    return rc;
}

void lbsd_net_detach(lbsd_sandbox *sb)
{
    if (sb->net.mode == LBSD_NET_EGRESS)
        lbsd_egress_detach(sb);
    if (sb->net.slirp_pid <= 0)
        return;
    /* closing the exit fd ends it; SIGKILL makes sure */
    close(sb->net.exit_fd);
    sb->net.exit_fd = -1;
    if (!sb->net.slirp_reaped) {
        kill(sb->net.slirp_pid, SIGKILL);
        if (!net_wait(sb->net.slirp_pid, 5000))
            lb_error("sandbox %s: slirp4netns %d did not die within 5 s", sb->id,
                     (int)sb->net.slirp_pid);
    }
    sb->net.slirp_pid = 0;
    sb->net.slirp_reaped = 0;
}

int lbsd_net_child_exited(lbsd_sandbox *sb, pid_t pid, int status)
{
    if (sb->net.mode == LBSD_NET_EGRESS)
        return lbsd_egress_child_exited(sb, pid, status);
    if (sb->net.slirp_pid <= 0 || sb->net.slirp_pid != pid || sb->net.slirp_reaped)
        return 0;
    sb->net.slirp_reaped = 1;
    lb_warn("sandbox %s: slirp4netns exited (status %d); the sandbox has no outbound network now",
            sb->id, status);
    return 1;
}
