/*
 * The sandbox's side of sandboxd's own processes (sandbox_proc.h): the
 * spawner. When the channel arrives, init forks it (as it forks the shell,
 * so it has everything init set up: namespaces, cgroup, user, rlimits,
 * capabilities, seccomp; not no_new_privs, which each child sets itself
 * unless it runs as a named user) and goes back to its own work. The
 * spawner says HELLO first: sandboxd takes its host pid from the message's
 * credentials and sets its oom_score_adj from the host, as for the shell
 * (init's copy is shielded, and a score set by a privileged writer is
 * also the lowest its children may set themselves). Then it forks each
 * process, reports its pid and its exit, and signals it on request.
 *
 * A clone of init, single-threaded: raw clone() as init's own fork, static
 * buffers only.
 */
#include "sandboxd/sandbox_proc.h"

#include "sandboxd/fdpass.h"
#include "sandboxd/image_user.h"
#include "insandbox/sandbox_pty.h"
#include "insandbox/sandbox_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int g_sock = -1;
static int g_pids[LBSD_PROC_MAX];
static int g_npids;
/* one START: the spec and room for its header fields */
static char g_msg[LBSD_PROC_SPEC_MAX + 1024];
static char *g_argv[LBSD_PROC_ARGS_MAX + 1];
static char *g_envp[LBSD_PROC_ENV_MAX + 1];
static char g_path[4096 + 256];
/* the START's named user (g_has_ids), else the image's own */
static lbsd_user_ids g_ids;
static int g_has_ids;


static void ip_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ip_send(const char *fmt, ...)
{
    char m[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (n <= 0 || (size_t)n >= sizeof m)
        return;
    while (send(g_sock, m, (size_t)n, MSG_NOSIGNAL) < 0 && errno == EINTR)
        ;
}

static int ip_find(int pid)
{
    for (int i = 0; i < g_npids; i++)
        if (g_pids[i] == pid)
            return i;
    return -1;
}

/* The next NUL-terminated field of msg[*at..len), or NULL past the end. */
static char *ip_field(char *msg, size_t len, size_t *at)
{
    if (*at >= len)
        return NULL;
    char *f = msg + *at;
    char *z = memchr(f, '\0', len - *at);
    if (!z)
        return NULL;
    *at = (size_t)(z - msg) + 1;
    return f;
}

/* execve, looking argv[0] up in the PATH of envp when it has no '/'. */
static void ip_exec(void)
{
    const char *file = g_argv[0];
    if (strchr(file, '/')) {
        execve(file, g_argv, g_envp);
        return;
    }
    const char *path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for (int i = 0; g_envp[i]; i++)
        if (!strncmp(g_envp[i], "PATH=", 5))
            path = g_envp[i] + 5;
    int seen_eacces = 0;
    while (*path) {
        const char *end = strchr(path, ':');
        size_t dl = end ? (size_t)(end - path) : strlen(path);
        size_t fl = strlen(file);
        if (dl && dl < 4096 && fl < 255) {
            memcpy(g_path, path, dl);
            g_path[dl] = '/';
            memcpy(g_path + dl + 1, file, fl + 1); /* g_path holds 4096 + 256 */
            execve(g_path, g_argv, g_envp);
            if (errno == EACCES)
                seen_eacces = 1;
        }
        path += dl + (end ? 1 : 0);
    }
    errno = seen_eacces ? EACCES : ENOENT;
}

/* ip_exec of another argv (the pty's program, argv + 3 of its relay). */
static void ip_exec_argv(char **argv)
{
    size_t i = 0;
    for (; argv[i]; i++)
        g_argv[i] = argv[i];
    g_argv[i] = NULL;
    ip_exec();
}

/* In the child: its pipes as 0-2 (stdin stays /dev/null unless one
 * came), its own session, default signals, then the program. Failures go
 * back through errfd as an errno. */
__attribute__((noreturn)) static void ip_child(const int *fds, int nfds, int errfd, const char *cwd)
{
    setsid();
    if (dup2(fds[0], 1) < 0 || dup2(fds[1], 2) < 0 || (nfds == 3 && dup2(fds[2], 0) < 0) || dup2(errfd, 3) < 0)
        _exit(126);
    fcntl(3, F_SETFD, FD_CLOEXEC);
    close_range(4, ~0U, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    int err = 0;
    if (cwd[0] ? chdir(cwd) != 0 : (chdir("/testbed") != 0 && chdir("/") != 0))
        err = errno;
    /* a named user (E2B's), else a layered image's User (image_user.h).
     * no_new_privs as the shell's, but for a named user: E2B's runs sudo.
     * The seccomp filter init installed stays either way (seccomp.h). */
    if (!err && (g_has_ids ? lbsd_user_become(&g_ids) : lbsd_img_proc_become()) != 0)
        err = errno;
    if (!err && !g_has_ids && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        err = errno;
    if (!err && !strcmp(g_argv[0], LBSB_PTY_ARGV0)) {
        close(3); /* started; the program's exec failure shows on the terminal */
        lbsd_pty_main(g_argv, ip_exec_argv);
    }
    if (!err && !strcmp(g_argv[0], LBSB_WATCH_ARGV0)) {
        close(3); /* started: the spawner reads the end of errfd */
        lbsd_watch_main(g_argv);
    }
    if (!err) {
        ip_exec();
        err = errno;
    }
    ssize_t w = write(3, &err, sizeof err);
    (void)w;
    _exit(127);
}

/* "uid:gid:g1,g2,..." into g_ids ("" : none); -1 when malformed. */
static int ip_ids(const char *s)
{
    g_has_ids = 0;
    if (!*s)
        return 0;
    memset(&g_ids, 0, sizeof g_ids);
    char *end;
    unsigned long u = strtoul(s, &end, 10);
    if (*end != ':')
        return -1;
    unsigned long g = strtoul(end + 1, &end, 10);
    if (*end != ':' || u >= LBSD_USER_ID_LIMIT || g >= LBSD_USER_ID_LIMIT)
        return -1;
    g_ids.uid = (uint32_t)u;
    g_ids.gid = (uint32_t)g;
    for (const char *p = end + 1; *p && g_ids.ngroups < LBSD_USER_GROUPS_MAX; p = *end ? end + 1 : end) {
        unsigned long x = strtoul(p, &end, 10);
        if (end == p || (*end && *end != ',') || x >= LBSD_USER_ID_LIMIT)
            return -1;
        g_ids.groups[g_ids.ngroups++] = (uint32_t)x;
    }
    g_has_ids = 1;
    return 0;
}

static void ip_start(size_t len, int *fds, int nfds)
{
    size_t at = 0;
    char *f[5];
    for (int i = 0; i < 5; i++)
        f[i] = ip_field(g_msg, len, &at); /* START, seq, stdin, cwd, ids */
    char *argc_s = ip_field(g_msg, len, &at);
    if (!f[4] || !argc_s)
        return; /* sandboxd never sends that */
    unsigned seq = (unsigned)strtoul(f[1], NULL, 10);
    int want_stdin = f[2][0] == '1';
    long argc = strtol(argc_s, NULL, 10);
    if (argc < 1 || argc > LBSD_PROC_ARGS_MAX || nfds != (want_stdin ? 3 : 2) || ip_ids(f[4]) != 0) {
        ip_send("FAILED %u %d", seq, EINVAL);
        return;
    }
    for (long i = 0; i < argc; i++)
        if (!(g_argv[i] = ip_field(g_msg, len, &at))) {
            ip_send("FAILED %u %d", seq, EINVAL);
            return;
        }
    g_argv[argc] = NULL;
    int envc = 0;
    char *e;
    while (envc < LBSD_PROC_ENV_MAX && (e = ip_field(g_msg, len, &at)))
        g_envp[envc++] = e;
    g_envp[envc] = NULL;
    if (g_npids >= LBSD_PROC_MAX) {
        ip_send("FAILED %u %d", seq, EAGAIN);
        return;
    }
    int ep[2];
    if (pipe2(ep, O_CLOEXEC) != 0) {
        ip_send("FAILED %u %d", seq, errno);
        return;
    }
    pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
    if (pid == 0)
        ip_child(fds, nfds, ep[1], f[3]);
    close(ep[1]);
    if (pid < 0) {
        int e2 = errno;
        close(ep[0]);
        ip_send("FAILED %u %d", seq, e2);
        return;
    }
    /* the write end closes at the exec: nothing read means it runs */
    int err = 0;
    ssize_t r;
    do
        r = read(ep[0], &err, sizeof err);
    while (r < 0 && errno == EINTR);
    close(ep[0]);
    if (r == (ssize_t)sizeof err) {
        ip_send("FAILED %u %d", seq, err); /* the child is reaped as any orphan */
        return;
    }
    g_pids[g_npids++] = pid;
    ip_send("STARTED %u %d", seq, (int)pid);
}

/* One message from sandboxd; -1 when it closed the channel. */
static int ip_handle(void)
{
    int fds[LBSD_FDPASS_MAX], nfds = 0, cut = 0;
    ssize_t n = lbsd_fds_recv(g_sock, g_msg, sizeof g_msg - 1, fds, 3, &nfds, &cut);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    if (n <= 0)
        return -1;
    g_msg[n] = '\0';
    int pid, sig;
    if (!cut && (size_t)n > 6 && !memcmp(g_msg, "START", 6)) {
        ip_start((size_t)n, fds, nfds);
    } else if (sscanf(g_msg, "KILL %d %d", &pid, &sig) == 2 && pid > 1 && sig > 0 && sig < NSIG &&
               ip_find(pid) >= 0) {
        /* only a process still ours: a reaped pid may be someone else's now */
        kill(-pid, sig);
        kill(pid, sig);
    }
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    return 0;
}

static void ip_reap(void)
{
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        int i = ip_find(pid);
        if (i < 0)
            continue;
        g_pids[i] = g_pids[--g_npids];
        ip_send("PEXIT %d %d", (int)pid, st);
    }
}

/* The spawner's life: HELLO, then starts, signals and exits until
 * sandboxd closes the channel (or the sandbox ends). */
__attribute__((noreturn)) static void ip_spawner(int sock)
{
    if (dup2(sock, 3) < 0)
        _exit(1);
    close_range(4, ~0U, 0);
    g_sock = 3;
    prctl(PR_SET_NAME, "llmbox-spawner");
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL); /* init's mask already; said again */
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        _exit(1);
    ip_send("HELLO");
    for (;;) {
        struct pollfd pf[2] = {{.fd = g_sock, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            _exit(1);
        }
        if (pf[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) > 0)
                ;
            ip_reap();
        }
        if ((pf[0].revents & (POLLIN | POLLHUP | POLLERR)) && ip_handle() < 0)
            _exit(0); /* sandboxd let go: what runs goes on, init reaps it */
    }
}

void lbsd_initproc_spawn(int sock)
{
    pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
    if (pid == 0)
        ip_spawner(sock);
    close(sock); /* the spawner's now; a failed fork shows as the channel's EOF */
}
