/* cgroup.c against the running kernel's cgroup v2, as far as this host
 * allows without touching its hierarchies (test_cgroup.c covers the same
 * code against a simulated tree).
 *
 * The first cgroup2 mount in /proc/self/mounts is used: /sys/fs/cgroup on a
 * pure-v2 host, /sys/fs/cgroup/unified on a hybrid one such as this machine,
 * where memory, pids and cpu are bound to v1 and the v2 mount offers
 * hugetlb only. Everything happens in a group of our own below it,
 * llmbox-kernel-test-<pid>, removed at the end.
 *  - Always (root, a writable cgroup2 mount): attach, fork inheritance,
 *    cgroup.events, removal refused while populated, cgroup.kill of a whole
 *    group including a setsid grandchild, removal; and the kernel's answers
 *    the model in cgroupfs_model.h claims (ENOENT, EINVAL, ERANGE, ESRCH).
 *  - Only where the mount offers memory and pids (a pure-v2 host): the
 *    module's own v2 mode end to end (probe, limits, an OOM kill counted,
 *    pids.max stopping a fork loop, stale cleanup). Here it SKIPs.
 */
#include "testlib.h"

#include "children.h"

#include "common/config.h"
#include "common/status.h"
#include "sandboxd/cgroup.h"
#include "sandboxd/stale.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define ID1 "0123456789abcdef0123456789abcdef"

static char mnt[256];      /* the cgroup2 mount */
static char base[400];     /* our group below it */
static char offered[256];  /* its cgroup.controllers */

/* ---- helpers ------------------------------------------------------------ */

static int read_file(const char *dir, const char *file, char *out, size_t outsz)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    out[0] = '\0';
    if (fd < 0)
        return -1;
    ssize_t r = read(fd, out, outsz - 1);
    close(fd);
    out[r > 0 ? r : 0] = '\0';
    return r < 0 ? -1 : 0;
}

/* errno of writing val to dir/file (0: taken). */
static int write_errno(const char *dir, const char *file, const char *val)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int e = write(fd, val, strlen(val)) == (ssize_t)strlen(val) ? 0 : errno;
    close(fd);
    return e;
}

static int has_word(const char *text, const char *w)
{
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", text);
    char *save = NULL;
    for (char *t = strtok_r(tmp, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
        if (!strcmp(t, w))
            return 1;
    return 0;
}

/* "populated N" of a group's cgroup.events, waited for up to a second. */
static int populated_becomes(const char *dir, int want)
{
    char ev[256], line[32];
    snprintf(line, sizeof line, "populated %d", want);
    for (int i = 0; i < 100; i++) {
        if (read_file(dir, "cgroup.events", ev, sizeof ev) == 0 && strstr(ev, line))
            return 1;
        usleep(10000);
    }
    printf("    cgroup.events stayed: %s", ev);
    return 0;
}

/* A child that waits for a byte on go, then forks a grandchild that leaves
 * for its own session (a "daemon"), sends its pid on back and waits. */
static pid_t forker(int go, int back)
{
    pid_t p = child_start();
    if (p != 0)
        return p;
    char c;
    if (read(go, &c, 1) != 1)
        _exit(1);
    pid_t g = fork();
    if (g == 0) {
        setsid();
        for (;;)
            pause();
    }
    if (write(back, &g, sizeof g) != (ssize_t)sizeof g)
        _exit(1);
    for (;;)
        pause();
}

/* Why the kernel part cannot run here; NULL when it can. */
static const char *kernel_unusable(char *why, size_t whysz)
{
    if (geteuid() != 0)
        return "not root: cgroup directories cannot be made";
    FILE *m = fopen("/proc/self/mounts", "r");
    char line[1024];
    while (m && fgets(line, sizeof line, m)) {
        char dev[256], dir[256], type[64];
        if (sscanf(line, "%255s %255s %63s", dev, dir, type) == 3 && !strcmp(type, "cgroup2")) {
            snprintf(mnt, sizeof mnt, "%s", dir);
            break;
        }
    }
    if (m)
        fclose(m);
    if (!mnt[0])
        return "no cgroup2 mount in /proc/self/mounts";
    read_file(mnt, "cgroup.controllers", offered, sizeof offered);
    offered[strcspn(offered, "\n")] = '\0';
    snprintf(base, sizeof base, "%s/llmbox-kernel-test-%d", mnt, (int)getpid());
    if (mkdir(base, 0755) != 0) {
        snprintf(why, whysz, "cannot make a group in the cgroup2 mount %s: %s", mnt, strerror(errno));
        return why;
    }
    return NULL;
}

/* ---- always, where a group can be made --------------------------------- */

/* What cgroupfs_model.h claims of the kernel, asked of the kernel. */
TEST(kernel_answers_as_the_model_does)
{
    char g[600];
    snprintf(g, sizeof g, "%s/%s", base, ID1);
    CHECK(mkdir(g, 0755) == 0);
    CHECK(write_errno(g, "cgroup.subtree_control", "+nosuch") == EINVAL);
    if (!has_word(offered, "memory")) /* offered, but not enabled by the parent: */
        CHECK(write_errno(g, "cgroup.subtree_control", "+memory") == ENOENT);
    CHECK(write_errno(g, "cgroup.kill", "0") == ERANGE);
    CHECK(write_errno(g, "cgroup.kill", "2") == ERANGE);
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    char v[32];
    snprintf(v, sizeof v, "%d", (int)gone);
    CHECK(write_errno(g, "cgroup.procs", v) == ESRCH);
    char ev[128];
    CHECK(read_file(g, "cgroup.events", ev, sizeof ev) == 0 && strstr(ev, "populated 0"));
    CHECK(rmdir(g) == 0);
}

TEST(kernel_attach_kill_and_remove)
{
    lbsd_cgroup cg;
    memset(&cg, 0, sizeof cg);
    snprintf(cg.v2, sizeof cg.v2, "%s/%s", base, ID1);
    CHECK(mkdir(cg.v2, 0755) == 0);
    cg.made = 1;
    int go[2], back[2];
    if (pipe(go) || pipe(back)) {
        CHECK(!"pipe");
        return;
    }
    pid_t c = forker(go[0], back[1]);
    CHECK(lbsd_cg_attach(&cg, c) == LB_OK);
    /* the kernel's view: /proc/<pid>/cgroup's v2 line names the group */
    char p[64], cgl[1024], want[700];
    snprintf(p, sizeof p, "/proc/%d", (int)c);
    read_file(p, "cgroup", cgl, sizeof cgl);
    snprintf(want, sizeof want, "/llmbox-kernel-test-%d/%s\n", (int)getpid(), ID1);
    const char *v2 = strstr(cgl, "0::");
    CHECK(v2 && strstr(v2, want));
    /* a fork inside stays inside, a new session too */
    pid_t g = -1;
    CHECK(write(go[1], "x", 1) == 1 && read(back[0], &g, sizeof g) == (ssize_t)sizeof g);
    char procs[256], a[32], b[32];
    read_file(cg.v2, "cgroup.procs", procs, sizeof procs);
    snprintf(a, sizeof a, "%d", (int)c);
    snprintf(b, sizeof b, "%d", (int)g);
    CHECK(has_word(procs, a) && has_word(procs, b));
    CHECK(populated_becomes(cg.v2, 1));
    if (!has_word(offered, "memory"))
        CHECK(lbsd_cg_oom_kills(&cg) == 0); /* no memory.events without the controller */
    /* a populated group cannot go: the retries end in LB_E_IO (EBUSY) */
    CHECK(lbsd_cg_remove(&cg) == LB_E_IO && cg.made && access(cg.v2, F_OK) == 0);
    /* cgroup.kill takes both, the setsid grandchild too (it comes back to
     * us, the subreaper, once its parent is gone) */
    CHECK(lbsd_cg_kill(&cg) == LB_OK);
    CHECK(child_end_signal(c, 2000) == SIGKILL);
    CHECK(g > 0 && child_end_signal(g, 2000) == SIGKILL);
    CHECK(populated_becomes(cg.v2, 0));
    CHECK(lbsd_cg_remove(&cg) == LB_OK && !cg.made && access(cg.v2, F_OK) != 0);
    close(go[0]);
    close(go[1]);
    close(back[0]);
    close(back[1]);
}

/* ---- only where the v2 mount offers memory and pids --------------------- */

/* A child that touches 4 times the memory limit, page by page. */
static pid_t hog(size_t bytes)
{
    pid_t p = child_start();
    if (p == 0) {
        char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            _exit(2);
        for (size_t i = 0; i < bytes; i += 4096)
            m[i] = 1;
        _exit(0);
    }
    return p;
}

/* A child that forks up to n sleepers and exits with how many it could. */
static pid_t fork_loop(int n)
{
    pid_t p = child_start();
    if (p == 0) {
        int made = 0;
        for (; made < n; made++) {
            pid_t k = fork();
            if (k < 0)
                break;
            if (k == 0) {
                for (;;)
                    pause();
            }
        }
        _exit(made);
    }
    return p;
}

/* A pid that waits, stopped, until it is put into a group and let go. */
static pid_t held(int *go)
{
    int fds[2];
    if (pipe(fds))
        return -1;
    pid_t p = child_start();
    if (p == 0) {
        close(fds[1]);
        char c;
        if (read(fds[0], &c, 1) != 1)
            _exit(1);
        return 0; /* the caller's code runs in the child from here */
    }
    close(fds[0]);
    *go = fds[1];
    return p;
}

TEST(kernel_v2_mode_end_to_end)
{
    /* the module's own base group: llmbox-<hash of this var dir> */
    snprintf(lb_cfg_mut()->var_dir, sizeof lb_cfg_mut()->var_dir, "/tmp/llmbox-kernel-test-%d", (int)getpid());
    lbsd_install_tag_init(lb_cfg()->var_dir);
    CHECK(lbsd_cg_set_root(mnt) == LB_OK);
    if (lbsd_cg_detect() != LBSD_CG_V2) {
        printf("    %s offers memory and pids, but the module fell back (see its warning on stderr)\n", mnt);
        CHECK(!"v2 mode");
        return;
    }
    int cpu = has_word(offered, "cpu");
    lbsd_cgroup cg;
    CHECK(lbsd_cg_create(&cg, ID1, 64ull << 20, 16, cpu ? 100 : 0) == LB_OK);
    char v[128];
    read_file(cg.v2, "memory.max", v, sizeof v);
    CHECK_STR(v, "67108864\n");
    read_file(cg.v2, "pids.max", v, sizeof v);
    CHECK_STR(v, "16\n");
    int swap_acct = read_file(cg.v2, "memory.swap.max", v, sizeof v) == 0;
    if (swap_acct)
        CHECK_STR(v, "0\n");
    if (cpu) {
        read_file(cg.v2, "cpu.max", v, sizeof v);
        CHECK_STR(v, "10000 100000\n");
    }
    /* an OOM kill inside, counted */
    int go = -1;
    pid_t h = held(&go);
    if (h == 0) {
        pid_t k = hog(256u << 20);
        int st = 0;
        waitpid(k, &st, 0);
        _exit(WIFSIGNALED(st) ? 100 + WTERMSIG(st) : WEXITSTATUS(st));
    }
    CHECK(lbsd_cg_attach(&cg, h) == LB_OK);
    CHECK(write(go, "x", 1) == 1);
    close(go);
    int st = 0;
    waitpid(h, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && !swap_acct)
        printf("SKIP kernel_v2_oom: no swap accounting, the hog swapped instead of being OOM-killed\n");
    else
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 100 + SIGKILL && lbsd_cg_oom_kills(&cg) >= 1);
    /* pids.max stops a fork loop (16 tasks: the loop itself and 15 more) */
    pid_t f = held(&go);
    if (f == 0) {
        pid_t k = fork_loop(64);
        int s2 = 0;
        waitpid(k, &s2, 0);
        _exit(WIFEXITED(s2) ? WEXITSTATUS(s2) : 255);
    }
    CHECK(lbsd_cg_attach(&cg, f) == LB_OK);
    CHECK(write(go, "x", 1) == 1);
    close(go);
    waitpid(f, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) < 64);
    /* the orphaned sleepers are still in the group: a restart's cleanup
     * kills them and removes it */
    CHECK(lbsd_cg_set_root(mnt) == LB_OK);
    lbsd_cg_cleanup_stale();
    CHECK(access(cg.v2, F_OK) != 0);
    for (int i = 0; i < 50; i++) /* the sleepers came back to us, the subreaper */
        while (waitpid(-1, NULL, WNOHANG) > 0)
            usleep(10000);
    lbsd_cg_shutdown();
    char b[600];
    snprintf(b, sizeof b, "%s/%s", mnt, lbsd_install_tag());
    CHECK(access(b, F_OK) != 0);
}

int main(void)
{
    char why[512];
    const char *no = kernel_unusable(why, sizeof why);
    if (no) {
        printf("SKIP kernel_cgroup2: %s\n", no);
        return 0;
    }
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    RUN(kernel_answers_as_the_model_does);
    RUN(kernel_attach_kill_and_remove);
    if (has_word(offered, "memory") && has_word(offered, "pids"))
        RUN(kernel_v2_mode_end_to_end);
    else
        printf("SKIP kernel_v2_mode_end_to_end: the cgroup2 mount %s offers \"%s\", not memory and pids "
               "(they are bound to cgroup v1 on this host): limits, OOM counting and the v2 probe "
               "run against the simulated tree only (test_cgroup)\n",
               mnt, offered);
    if (rmdir(base) != 0) {
        printf("FAIL cleanup: cannot remove %s: %s\n", base, strerror(errno));
        return 1;
    }
    return testlib_done();
}
