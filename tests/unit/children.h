/* Real child processes for the unit tests that need them (test_cgroup.c,
 * test_cgroup_kernel.c). A child dies with the test and holds none of its
 * output: tests/run.sh reads that output to its end. */
#ifndef CHILDREN_H
#define CHILDREN_H

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* fork(): 0 in the child (stdout and stderr on /dev/null), its pid in the
 * test, -1 on failure. */
static pid_t child_start(void)
{
    pid_t parent = getpid(), p = fork();
    if (p != 0)
        return p;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    int fd = open("/dev/null", O_RDWR);
    dup2(fd, 1);
    dup2(fd, 2);
    return 0;
}

/* Waits up to ms for pid to end: the signal that ended it, 0 when it
 * exited, -1 when it was still there (then it is killed and reaped). */
static int child_end_signal(pid_t pid, int ms)
{
    int st = 0;
    for (int i = 0; i < ms / 10 && waitpid(pid, &st, WNOHANG) == 0; i++)
        usleep(10000);
    if (waitpid(pid, &st, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return -1;
    }
    return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

#endif
