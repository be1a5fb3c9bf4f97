/* The agent zygote; the contract is zygote.h.
 *
 * Why CLONE_PARENT by a raw clone3 and not fork(): the web must stay the
 * parent of every agent (its reaper waits for an agent's pid and only then
 * may the pid be reused, which makes its kill() safe), and a zygote that
 * forked them itself would have to report their exits back. glibc's fork
 * cannot take CLONE_PARENT, so the clone is made here, and what glibc's
 * fork does for a child is done by hand: the thread id glibc keeps in its
 * thread block is written by the kernel (CLONE_CHILD_SETTID at the address
 * PR_GET_TID_ADDRESS reports: the one glibc registered at start), and the
 * robust-mutex list the kernel clears in a new process is registered
 * again. The zygote is single-threaded and holds no lock while it clones,
 * which is what makes skipping the rest of fork's work (the atfork
 * handlers, the locks of other threads) safe; no library registers an
 * atfork handler it would need: OpenSSL reseeds on a pid change. */
#include "agent/zygote.h"

#include "common/mime.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* glibc's thread id slot and robust list of this (the only) thread */
static pid_t *z_tidp;
static void *z_robust;
static size_t z_robust_len;

/* A child of our parent (the web), or -errno. 0 in the child. */
static pid_t clone_sibling(void)
{
    if (!z_tidp)
        return -ENOSYS; /* no PR_GET_TID_ADDRESS: the web starts agents by exec */
    struct clone_args ca;
    memset(&ca, 0, sizeof ca);
    /* exit_signal stays 0: with CLONE_PARENT the kernel takes ours (SIGCHLD) */
    ca.flags = CLONE_PARENT | CLONE_CHILD_SETTID;
    ca.child_tid = (uint64_t)(uintptr_t)z_tidp;
    long r = syscall(SYS_clone3, &ca, sizeof ca);
    if (r < 0)
        return (pid_t)-errno;
    if (r == 0 && z_robust)
        syscall(SYS_set_robust_list, z_robust, z_robust_len);
    return (pid_t)r;
}

/* One request: the id and the two descriptors, or -1. */
static int recv_task(char id[33], int *logfd, int *gofd)
{
    char buf[64], ctl[CMSG_SPACE(2 * sizeof(int))];
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf - 1};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    ssize_t n;
    do
        n = recvmsg(0, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    int fds[2] = {-1, -1};
    for (struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm; cm = CMSG_NXTHDR(&mh, cm))
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof fds))
            memcpy(fds, CMSG_DATA(cm), sizeof fds);
    if (n <= 0 || fds[0] < 0 || fds[1] < 0 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        for (int i = 0; i < 2; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        return -1;
    }
    buf[n] = '\0';
    if (!lb_id_valid(buf)) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    memcpy(id, buf, 33);
    *logfd = fds[0];
    *gofd = fds[1];
    return 0;
}

/* In the new agent: its descriptors and session, then the web's go. */
static void become_agent(int logfd, int gofd)
{
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(logfd, 1) < 0 || dup2(logfd, 2) < 0)
        _exit(1);
    close(null);
    close(logfd);
    if (setsid() < 0)
        _exit(1);
    char go = 0;
    ssize_t n;
    do
        n = read(gofd, &go, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
        _exit(0); /* the web did not record this agent: it must not run */
    close(gofd);
}

int lb_agent_zygote_serve(char id[33])
{
    if (prctl(PR_GET_TID_ADDRESS, &z_tidp, 0, 0, 0) != 0)
        z_tidp = NULL; /* each request is answered ENOSYS */
    if (syscall(SYS_get_robust_list, 0, &z_robust, &z_robust_len) != 0)
        z_robust = NULL;
    lb_mime_warm_here(); /* every agent types its outputs: its libmagic comes warm */
    for (;;) {
        int logfd = -1, gofd = -1;
        if (recv_task(id, &logfd, &gofd) != 0)
            return 1;
        pid_t pid = clone_sibling();
        if (pid == 0) {
            become_agent(logfd, gofd);
            return 0;
        }
        close(logfd);
        close(gofd);
        int32_t reply = (int32_t)pid;
        ssize_t n;
        do
            n = send(0, &reply, sizeof reply, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof reply)
            return 1; /* the web has gone: a child it never heard of exits at its closed go pipe */
    }
}
