/*
 * The sandbox's pid 1. sandboxd clone()s this with new mount, pid, net,
 * ipc and uts namespaces; it builds the sandbox's filesystem, drops
 * privileges, then serves sandboxd on the control socket:
 *
 *   sandboxd -> init   "GO"                      (after cgroup attach)
 *                      "SPAWN" + 3 fds (SCM_RIGHTS: stdin, stdout, stderr)
 *   init -> sandboxd   "READY" | "ERR <why>"
 *                      "PID <n>"                 (the new shell, pid inside)
 *                      "EXIT <n> <wait status>"  (the shell died)
 *
 * It reaps every orphan of the sandbox. When sandboxd goes away (socket
 * EOF, or PR_SET_PDEATHSIG), it exits and the kernel kills the rest of the
 * pid namespace and drops its mounts.
 */
#include "sandbox/sandboxd.h"

#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#define INIT_CTL_FD 3

static void init_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void init_send(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof msg)
        n = sizeof msg - 1;
    while (send(INIT_CTL_FD, msg, (size_t)n, MSG_NOSIGNAL) < 0 && errno == EINTR)
        ;
}

__attribute__((noreturn)) static void init_fail(const char *what)
{
    init_send("ERR %s: %s", what, strerror(errno));
    _exit(1);
}

static void init_mount(const char *src, const char *dst, const char *type, unsigned long fl,
                       const char *data)
{
    if (mount(src, dst, type, fl, data) != 0) {
        char what[256];
        snprintf(what, sizeof what, "mount %.16s on %.200s", type ? type : "bind", dst);
        init_fail(what);
    }
}

/* Read-only bind of a path onto itself (a no-op if the path is absent). */
static void init_ro(const char *p)
{
    struct stat st;
    if (lstat(p, &st) != 0)
        return;
    if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) != 0 ||
        mount(NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              NULL) != 0)
        init_fail(p);
}

/* Hides a /proc file or dir that leaks host kernel state or controls. */
static void init_mask(const char *p)
{
    struct stat st;
    if (lstat(p, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode))
        init_mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,mode=555");
    else
        init_mount("/dev/null", p, NULL, MS_BIND, NULL);
}

static void init_proc(const char *root)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/proc", root);
    mkdir(p, 0555);
    init_mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    /* Without a user namespace, sandbox root writing /proc/sys would set the
     * host's sysctls (core_pattern runs a program as host root): read-only,
     * like Docker. Host-wide information and triggers are masked. */
    static const char *const ro[] = {"sys", "irq", "bus", "fs", "sysrq-trigger"};
    static const char *const masked[] = {"kcore",      "keys",     "timer_list", "sched_debug",
                                         "kallsyms",   "acpi",     "scsi",       "latency_stats",
                                         "kpagecount", "kpageflags", "kpagecgroup", "config.gz",
                                         "vmcore",     "firmware"};
    for (size_t i = 0; i < sizeof ro / sizeof ro[0]; i++) {
        snprintf(p, sizeof p, "%s/proc/%s", root, ro[i]);
        init_ro(p);
    }
    for (size_t i = 0; i < sizeof masked / sizeof masked[0]; i++) {
        snprintf(p, sizeof p, "%s/proc/%s", root, masked[i]);
        init_mask(p);
    }
}

static void init_dev(const char *root)
{
    char p[1200], q[1200];
    snprintf(p, sizeof p, "%s/dev", root);
    mkdir(p, 0755);
    /* not nodev: the few nodes below must work; CAP_MKNOD is dropped later
     * so no other node can ever appear */
    init_mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=1024k,nr_inodes=256");
    static const struct {
        const char *name;
        unsigned maj, min;
    } nodes[] = {{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7},
                 {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
        snprintf(p, sizeof p, "%s/dev/%s", root, nodes[i].name);
        if (mknod(p, S_IFCHR | 0666, makedev(nodes[i].maj, nodes[i].min)) != 0)
            init_fail(p);
        chmod(p, 0666); /* mknod obeys the umask */
    }
    snprintf(p, sizeof p, "%s/dev/pts", root);
    mkdir(p, 0755);
    init_mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620");
    snprintf(p, sizeof p, "%s/dev/shm", root);
    mkdir(p, 01777);
    init_mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=65536k");
    static const char *const links[][2] = {{"pts/ptmx", "ptmx"},      {"/proc/self/fd", "fd"},
                                           {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"},
                                           {"/proc/self/fd/2", "stderr"}};
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        snprintf(q, sizeof q, "%s/dev/%s", root, links[i][1]);
        if (symlink(links[i][0], q) != 0)
            init_fail(q);
    }
}

static void init_loopback(void)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        init_fail("socket for lo");
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    if (ioctl(s, SIOCGIFFLAGS, &ifr) != 0)
        init_fail("SIOCGIFFLAGS lo");
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0)
        init_fail("SIOCSIFFLAGS lo");
    close(s);
}

static void init_filesystem(const lbsd_init_cfg *cfg)
{
    char opts[4096], p[1200];
    /* nothing we mount may leak back to the host, and nothing the host
     * mounts later should appear here */
    init_mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
    if ((size_t)snprintf(opts, sizeof opts, "lowerdir=%s,upperdir=%s,workdir=%s", cfg->lower,
                         cfg->upper, cfg->work) >= sizeof opts) {
        errno = ENAMETOOLONG;
        init_fail("overlay options");
    }
    /* nodev: a device node that reaches the image or the upper layer is inert */
    init_mount("overlay", cfg->merged, "overlay", MS_NODEV, opts);
    init_proc(cfg->merged);
    init_dev(cfg->merged);
    snprintf(p, sizeof p, "%s/tmp", cfg->merged);
    mkdir(p, 01777);
    snprintf(opts, sizeof opts, "mode=1777,size=%dm", cfg->tmp_mib);
    init_mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, opts);
    /* the old root goes away entirely: pivot, then detach it */
    if (chdir(cfg->merged) != 0)
        init_fail("chdir to the new root");
    if (syscall(SYS_pivot_root, ".", ".") != 0)
        init_fail("pivot_root");
    if (umount2(".", MNT_DETACH) != 0)
        init_fail("detach the old root");
    if (chdir("/") != 0)
        init_fail("chdir /");
}

static void init_limits(const lbsd_init_cfg *cfg)
{
    struct rlimit core = {0, 0}, nofile = {65536, 65536};
    setrlimit(RLIMIT_CORE, &core);
    setrlimit(RLIMIT_NOFILE, &nofile);
    if (cfg->rlimit_mode) {
        /* approximate: per process, counts address space, not memory */
        struct rlimit as = {cfg->memory_bytes, cfg->memory_bytes};
        setrlimit(RLIMIT_AS, &as);
        /* NB: the kernel exempts the root user from RLIMIT_NPROC, so this
         * only bites once sandboxes run as a mapped uid (user namespace);
         * until then rlimit mode has no process limit (docs/SANDBOX.md) */
        struct rlimit np = {(rlim_t)cfg->pids, (rlim_t)cfg->pids};
        setrlimit(RLIMIT_NPROC, &np);
    }
}

/* Receives "SPAWN" + three fds. Returns 1 and the fds on success. */
static int init_recv(char *msg, size_t msgsz, int fds[3], int *nfds)
{
    char cbuf[CMSG_SPACE(3 * sizeof(int))];
    struct iovec iov = {.iov_base = msg, .iov_len = msgsz - 1};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                        .msg_controllen = sizeof cbuf};
    *nfds = 0;
    ssize_t n;
    do
        n = recvmsg(INIT_CTL_FD, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return -1;
    msg[n] = '\0';
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *in = (int *)CMSG_DATA(c);
        for (size_t i = 0; i < k; i++) {
            if (*nfds < 3)
                fds[(*nfds)++] = in[i];
            else
                close(in[i]);
        }
    }
    return 1;
}

__attribute__((noreturn)) static void init_exec_shell(int fds[3])
{
    /* own session and process group: sandboxd can kill the shell's jobs
     * as a group, and the shell has no controlling terminal */
    setsid();
    for (int i = 0; i < 3; i++) {
        int fd = fds[i];
        if (fd == i) {
            fcntl(fd, F_SETFD, 0);
        } else if (dup2(fd, i) < 0) {
            _exit(126);
        }
    }
    close_range(3, ~0U, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    /* init is protected from the OOM killer; the shell and its children
     * must not be (raising the score needs no privilege) */
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t w = write(fd, "0", 1);
        (void)w;
        close(fd);
    }
    if (chdir("/testbed") != 0 && chdir("/") != 0)
        _exit(126);
    char *argv[] = {"bash", "--noprofile", "--norc", NULL};
    char *envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "HOME=/root", "LANG=C.UTF-8", "TERM=dumb", "USER=root", "LOGNAME=root",
                    "SHELL=/bin/bash", "PWD=/testbed", NULL};
    execve("/bin/bash", argv, envp);
    execve("/usr/bin/bash", argv, envp);
    _exit(127);
}

static pid_t init_spawn(pid_t old, int fds[3])
{
    if (old > 0) {
        /* the old shell's process group first, then the shell itself */
        kill(-old, SIGKILL);
        kill(old, SIGKILL);
    }
    pid_t pid = fork();
    if (pid == 0)
        init_exec_shell(fds);
    return pid;
}

static void init_loop(void)
{
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        init_fail("signalfd");
    pid_t shell = 0;
    for (;;) {
        struct pollfd pf[2] = {{.fd = INIT_CTL_FD, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            _exit(1);
        }
        if (pf[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) > 0)
                ;
            int st;
            pid_t p;
            while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
                if (p == shell) {
                    init_send("EXIT %d %d", (int)p, st);
                    shell = 0;
                }
            }
        }
        if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            char msg[64];
            int fds[3], nfds;
            if (init_recv(msg, sizeof msg, fds, &nfds) < 0)
                _exit(0); /* sandboxd is gone: take the sandbox down with us */
            if (!strcmp(msg, "SPAWN") && nfds == 3) {
                pid_t p = init_spawn(shell, fds);
                if (p > 0) {
                    shell = p;
                    init_send("PID %d", (int)p);
                } else {
                    init_send("ERR fork: %s", strerror(errno));
                }
            }
            for (int i = 0; i < nfds; i++)
                close(fds[i]);
        }
    }
}

/* We are a copy of sandboxd: /proc/1/cmdline and /proc/1/environ inside
 * the sandbox would show sandboxd's command line and environment (which may
 * hold API keys of the operator's shell). Both live in our own copy of the
 * stack, where /proc/self/stat says (fields 48-51): blank them in place.
 * (PR_SET_MM would be neater but needs CAP_SYS_RESOURCE, which a root in a
 * container may not have.) */
static void init_hide_host_args(void)
{
    prctl(PR_SET_NAME, "llmbox-init");
    char buf[2048];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* comm may hold spaces */
    if (!p)
        return;
    unsigned long v[52] = {0};
    int field = 2;
    for (char *tok = strtok(p + 1, " "); tok && field < 51; tok = strtok(NULL, " ")) {
        field++;
        v[field] = strtoul(tok, NULL, 10);
    }
    if (field < 51)
        return;
    unsigned long as = v[48], ae = v[49], es = v[50], ee = v[51];
    if (as && ae > as && ae - as < (1ul << 20)) {
        memset((void *)as, 0, ae - as);
        if (ae - as > 12)
            memcpy((void *)as, "llmbox-init", 12);
    }
    if (es && ee > es && ee - es < (1ul << 20))
        memset((void *)es, 0, ee - es);
}

void lbsd_init_main(const lbsd_init_cfg *cfg, int ctl)
{
    /* Keep only the control socket: this is a copy of sandboxd, holding
     * every client connection and every other sandbox's pipes. */
    if (ctl != INIT_CTL_FD) {
        if (dup2(ctl, INIT_CTL_FD) < 0)
            _exit(1);
    }
    close_range(INIT_CTL_FD + 1, ~0U, 0);
    fcntl(INIT_CTL_FD, F_SETFD, FD_CLOEXEC);
    int nul = open("/dev/null", O_RDWR);
    if (nul >= 0) {
        for (int i = 0; i < 3; i++)
            if (nul != i)
                dup2(nul, i);
        if (nul > 2)
            close(nul);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    init_hide_host_args();
    /* Our memory is a copy of sandboxd's (config, other clients' buffers).
     * Not dumpable: /proc/1/mem, environ and ptrace need CAP_SYS_PTRACE,
     * which the sandbox never has. (The configuration holds no API key:
     * models name the variable that has it.) */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    umask(022);

    /* wait until sandboxd has put us into our cgroups */
    char go[16];
    ssize_t n;
    do
        n = recv(INIT_CTL_FD, go, sizeof go - 1, 0);
    while (n < 0 && errno == EINTR);
    if (n != 2 || memcmp(go, "GO", 2) != 0)
        _exit(1);
    /* our cgroup becomes the root of what the sandbox can see */
    unshare(CLONE_NEWCGROUP);

    init_filesystem(cfg);
    if (sethostname("sandbox", 7) != 0)
        init_fail("sethostname");
    init_loopback();
    init_limits(cfg);
    if (lbsd_drop_caps() != LB_OK)
        init_fail("drop capabilities");
    if (lbsd_seccomp_apply() != LB_OK)
        init_fail("seccomp");
    init_send("READY");
    init_loop();
    _exit(0);
}
