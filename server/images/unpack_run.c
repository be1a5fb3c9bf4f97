/* Starting build/llmbox-unpack in a user namespace of the images' ids
 * (unpack_run.h). The child unshares its user namespace, the parent (host
 * root) writes its maps, and only then does the child become the
 * namespace's root and exec the unpacker with the five fds it needs and
 * nothing else: no environment, no other descriptor. */
#include "images/unpack_run.h"

#include "common/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define UR_MSG_MAX 1500   /* the unpacker's sentence is at most 1200 bytes */
#define UR_IDS 65536u     /* ids in the map: the images' range (uidslot.h's slot 0) */

static int write_map(pid_t pid, const char *file, uint32_t base)
{
    char p[64], line[64];
    snprintf(p, sizeof p, "/proc/%d/%s", (int)pid, file);
    int n = snprintf(line, sizeof line, "0 %u %u\n", base, UR_IDS);
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, line, (size_t)n);
    close(fd);
    return w == n ? 0 : -1;
}

/* In the child: fds to their numbers (through high numbers first, so that
 * none is overwritten before it is moved), everything else closed. */
static void child_fds(const lb_unpack_job *j, int msg_w)
{
    int src[5] = {j->in_fd, -1, msg_w, j->dest_fd, j->opaque_fd};
    int tmp[5];
    for (int i = 0; i < 5; i++)
        tmp[i] = src[i] >= 0 ? fcntl(src[i], F_DUPFD, 100) : -1;
    int devnull = open("/dev/null", O_RDWR);
    for (int i = 0; i < 5; i++) {
        int from = tmp[i] >= 0 ? tmp[i] : devnull;
        if (from < 0 || dup2(from, i) != i)
            _exit(127);
    }
    syscall(SYS_close_range, 5u, ~0u, 0u);
}

int lb_unpack_run(const lb_unpack_job *j, char *msg, size_t msgsz)
{
    if (geteuid() != 0) {
        snprintf(msg, msgsz, "importing an image needs root (to run the unpacker in a user namespace of the "
                             "images' ids)");
        return LB_E_DENIED;
    }
    char maxb[32], maxe[32];
    snprintf(maxb, sizeof maxb, "%llu", (unsigned long long)j->max_bytes);
    snprintf(maxe, sizeof maxe, "%llu", (unsigned long long)j->max_entries);
    int sync_p[2] = {-1, -1}, go_p[2] = {-1, -1}, msg_p[2] = {-1, -1};
    if (pipe2(sync_p, O_CLOEXEC) != 0 || pipe2(go_p, O_CLOEXEC) != 0 || pipe2(msg_p, O_CLOEXEC) != 0) {
        snprintf(msg, msgsz, "pipe: %s", strerror(errno));
        for (int i = 0; i < 2; i++) {
            if (sync_p[i] >= 0)
                close(sync_p[i]);
            if (go_p[i] >= 0)
                close(go_p[i]);
        }
        return LB_E_IO;
    }
    pid_t pid = fork();
    if (pid == 0) {
        char c = 0;
        pid_t parent = getppid();
        if (unshare(CLONE_NEWUSER) != 0 || write(sync_p[1], "u", 1) != 1 || read(go_p[0], &c, 1) != 1 ||
            c != 'g')
            _exit(126);
        child_fds(j, msg_p[1]);
        if (setresgid(0, 0, 0) != 0 || setgroups(0, NULL) != 0 || setresuid(0, 0, 0) != 0)
            _exit(125);
        /* after the id change, which clears it: the unpacker dies with the
         * importer, so a killed import leaves nothing writing in tmp/ */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(123);
        char *argv[] = {"llmbox-unpack", (char *)j->mode, maxb, maxe, (char *)j->label, NULL};
        char *envp[] = {NULL};
        execve(j->exe, argv, envp);
        _exit(124);
    }
    close(sync_p[1]);
    close(go_p[0]);
    close(msg_p[1]);
    int rc = LB_E_IO;
    if (pid < 0) {
        snprintf(msg, msgsz, "cannot start the unpacker: %s", strerror(errno));
        close(sync_p[0]);
        close(go_p[1]);
        close(msg_p[0]);
        return LB_E_IO;
    }
    char c = 0;
    int mapped = read(sync_p[0], &c, 1) == 1 && write_map(pid, "uid_map", j->base) == 0 &&
                 write_map(pid, "gid_map", j->base) == 0;
    if (mapped && write(go_p[1], "g", 1) != 1)
        mapped = 0;
    close(sync_p[0]);
    close(go_p[1]);
    char out[UR_MSG_MAX + 1];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(msg_p[0], out + n, UR_MSG_MAX - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == UR_MSG_MAX) {
            char sink[256];
            while (read(msg_p[0], sink, sizeof sink) > 0) {
            }
            break;
        }
    }
    out[n] = '\0';
    close(msg_p[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (!mapped) {
        snprintf(msg, msgsz, "cannot map the unpacker's user namespace to the images' ids (%u...)", j->base);
        return LB_E_IO;
    }
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    if (code == 0)
        return LB_OK;
    rc = code == 2 ? LB_E_TOOBIG : code == 3 ? LB_E_INVAL : LB_E_IO;
    if (n) {
        snprintf(msg, msgsz, "%s", out);
        lb_utf8_trim_partial(msg); /* the unpacker's text is UTF-8; a cut may split a sequence */
    }
    else
        snprintf(msg, msgsz, "%s: the unpacker %s %d", j->label, WIFEXITED(st) ? "exited with" : "died of signal",
                 WIFEXITED(st) ? code : code - 128);
    return rc;
}
