/* Starting build/llmbox-stateio for a save or a restore (sandbox_stateio.h:
 * lbsd_stateio_run), on a worker thread. Its parent is cloned without
 * SIGCHLD and never execs, so the loop's waitpid(-1) never takes its status
 * (it is waited for here with __WCLONE); the helper is already inside the
 * sandbox's user namespace, as that namespace's root, when it execs:
 * libarchive never runs as host root nor in sandboxd. */
#include "sandboxd/sandbox_stateio.h"

#include "common/status.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* the helper's exit statuses (server/stateio/stateio.h) */
#define ST_EXIT_TOOBIG 2
#define ST_EXIT_DAMAGED 3
#define ST_EXIT_IMAGE 4

typedef struct st_spawn {
    int fds[5];              /* become the helper's 0..4 */
    int exe_fd;              /* the helper's binary (O_PATH) */
    int userns_fd;
    uint64_t fsize;          /* RLIMIT_FSIZE */
    char *argv[6];
} st_spawn;

/* In the clone: only system calls until the exec (a copy of a threaded
 * process). The ids change with the raw calls for the reason init's do
 * (sandbox_init.c). It forks the helper and waits for it, passing on its
 * exit status (128 + the signal that killed it): an exec makes a child a
 * plain SIGCHLD one again, which the loop's waitpid(-1) would take, while
 * this one never execs and stays waitable here alone. */
__attribute__((noreturn)) static void st_child(const st_spawn *sp)
{
    static char *const envp[] = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", NULL};
    /* host root's supplementary groups must not come along */
    if (syscall(SYS_setgroups, 0, NULL) != 0 || setns(sp->userns_fd, CLONE_NEWUSER) != 0 ||
        syscall(SYS_setresgid, 0, 0, 0) != 0 || syscall(SYS_setresuid, 0, 0, 0) != 0)
        _exit(121);
    /* after the id change, which clears it */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        _exit(120);
    int tmp[6];
    for (int i = 0; i < 5; i++)
        if ((tmp[i] = (int)fcntl(sp->fds[i], F_DUPFD, 16)) < 0)
            _exit(122);
    if ((tmp[5] = (int)fcntl(sp->exe_fd, F_DUPFD_CLOEXEC, 16)) < 0)
        _exit(122);
    for (int i = 0; i < 5; i++)
        if (dup2(tmp[i], i) != i)
            _exit(122);
    if (dup3(tmp[5], 5, O_CLOEXEC) != 5)
        _exit(122);
    if (syscall(SYS_close_range, 6, ~0U, 0) != 0)
        _exit(122);
    struct rlimit core = {0, 0}, nofile = {512, 512}, fsz = {sp->fsize, sp->fsize},
                  cpu = {LBSD_STATEIO_TIMEOUT_S, LBSD_STATEIO_TIMEOUT_S}, as = {2ull << 30, 2ull << 30};
    if (setrlimit(RLIMIT_CORE, &core) || setrlimit(RLIMIT_NOFILE, &nofile) || setrlimit(RLIMIT_FSIZE, &fsz) ||
        setrlimit(RLIMIT_CPU, &cpu) || setrlimit(RLIMIT_AS, &as))
        _exit(123);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        _exit(124);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    pid_t h = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
    if (h == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
            _exit(120);
        syscall(SYS_execveat, 5, "", sp->argv, envp, AT_EMPTY_PATH);
        _exit(127);
    }
    if (h < 0)
        _exit(125);
    /* the helper alone holds the state and the pipes now */
    syscall(SYS_close_range, 0, ~0U, 0);
    int st = 0;
    while (waitpid(h, &st, 0) < 0)
        if (errno != EINTR)
            _exit(126);
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0));
}

/* Bytes a peer wrote, kept printable: the helper's sentence names paths
 * of the sandbox, which may hold any byte. */
static void st_printable(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
            *s = '?';
}

/* Reads the helper's fd 1 and fd 2 until both close or the deadline. */
static int st_collect(int out, int err, char *result, size_t resultsz, char *msg, size_t msgsz)
{
    size_t rn = 0, mn = 0;
    int64_t deadline = lb_mono_ms() + (int64_t)LBSD_STATEIO_TIMEOUT_S * 1000;
    int open_n = 2;
    while (open_n > 0) {
        int64_t left = deadline - lb_mono_ms();
        if (left <= 0)
            return LB_E_TIMEOUT;
        struct pollfd pf[2] = {{.fd = out, .events = POLLIN}, {.fd = err, .events = POLLIN}};
        int r = poll(pf, 2, left > 60000 ? 60000 : (int)left);
        if (r < 0 && errno != EINTR)
            return LB_E_IO;
        for (int i = 0; r > 0 && i < 2; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char tmp[1024];
            ssize_t n = read(pf[i].fd, tmp, sizeof tmp);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                if (i == 0)
                    out = -1;
                else
                    err = -1;
                open_n--;
                continue;
            }
            /* bounded: what does not fit is dropped */
            char *dst = i == 0 ? result : msg;
            size_t *dn = i == 0 ? &rn : &mn, cap = (i == 0 ? resultsz : msgsz) - 1;
            size_t k = (size_t)n < cap - *dn ? (size_t)n : cap - *dn;
            memcpy(dst + *dn, tmp, k);
            *dn += k;
            dst[*dn] = '\0';
        }
    }
    return LB_OK;
}

int lbsd_stateio_run(const lb_config *cfg, const char *mode, const char *image, int userns_fd, int state_fd,
                     int upper_fd, int root_fd, uint64_t max_bytes, uint64_t max_entries, char *result,
                     size_t resultsz, char *msg, size_t msgsz)
{
    char exe[LB_CFG_PATH + 32], maxb[32], maxe[32], hmsg[1024] = "";
    const char *slash = strrchr(cfg->self_exe, '/');
    int dl = slash ? (int)(slash - cfg->self_exe) : 1;
    snprintf(exe, sizeof exe, "%.*s/llmbox-stateio", dl, slash ? cfg->self_exe : ".");
    snprintf(maxb, sizeof maxb, "%llu", (unsigned long long)max_bytes);
    snprintf(maxe, sizeof maxe, "%llu", (unsigned long long)max_entries);
    result[0] = '\0';
    int out[2] = {-1, -1}, err[2] = {-1, -1}, nul = -1, exe_fd = -1, rc = LB_E_SANDBOX;
    pid_t pid = -1;
    exe_fd = open(exe, O_PATH | O_CLOEXEC);
    if (exe_fd < 0) {
        snprintf(msg, msgsz, "the state helper %s is missing (make): %s", exe, strerror(errno));
        goto out;
    }
    nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul < 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        snprintf(msg, msgsz, "cannot start the state helper: %s", strerror(errno));
        goto out;
    }
    st_spawn sp = {
        .fds = {state_fd, out[1], err[1], upper_fd >= 0 ? upper_fd : nul, root_fd},
        .exe_fd = exe_fd,
        .userns_fd = userns_fd,
        .fsize = max_bytes + (1u << 20),
        .argv = {"llmbox-stateio", (char *)mode, maxb, maxe, (char *)image, NULL},
    };
    /* exit signal 0: a "clone" child, invisible to the loop's waitpid(-1) */
    pid = (pid_t)syscall(SYS_clone, 0, NULL, NULL, NULL, NULL);
    if (pid == 0)
        st_child(&sp);
    if (pid < 0) {
        snprintf(msg, msgsz, "cannot start the state helper: %s", strerror(errno));
        goto out;
    }
    close(out[1]);
    close(err[1]);
    out[1] = err[1] = -1;
    int crc = st_collect(out[0], err[0], result, resultsz, hmsg, sizeof hmsg);
    if (crc != LB_OK)
        kill(pid, SIGKILL);
    int st = 0;
    pid_t w;
    while ((w = waitpid(pid, &st, __WCLONE)) < 0 && errno == EINTR)
        ;
    if (w != pid) {
        /* cannot happen: nothing else waits for a clone child that never execs */
        snprintf(msg, msgsz, "the state helper's end was lost: %s", strerror(errno));
        goto out;
    }
    st_printable(hmsg);
    st_printable(result);
    if (crc == LB_E_TIMEOUT) {
        snprintf(msg, msgsz, "the state helper took longer than %d s and was stopped", LBSD_STATEIO_TIMEOUT_S);
    } else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        rc = LB_OK;
    } else if (WIFEXITED(st) && WEXITSTATUS(st) == ST_EXIT_TOOBIG) {
        rc = LB_E_TOOBIG;
        snprintf(msg, msgsz, "%s", hmsg);
    } else if (WIFEXITED(st) && (WEXITSTATUS(st) == ST_EXIT_DAMAGED || WEXITSTATUS(st) == ST_EXIT_IMAGE)) {
        rc = LB_E_INVAL;
        snprintf(msg, msgsz, "%s", hmsg);
    } else if (WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGXFSZ) {
        rc = LB_E_TOOBIG;
        snprintf(msg, msgsz, "the state is larger than its cap of %llu MiB",
                 (unsigned long long)(max_bytes >> 20));
    } else if (hmsg[0]) {
        snprintf(msg, msgsz, "%s", hmsg);
    } else {
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        snprintf(msg, msgsz, "the state helper failed (%s %d)", code > 128 ? "signal" : "exit status",
                 code > 128 ? code - 128 : code);
    }
out:
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (err[i] >= 0)
            close(err[i]);
    }
    if (nul >= 0)
        close(nul);
    if (exe_fd >= 0)
        close(exe_fd);
    return rc;
}
