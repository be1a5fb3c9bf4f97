/* A simulated cgroup filesystem for tests/unit/test_cgroup.c.
 *
 * That test is linked with -Wl,--wrap=mkdir,--wrap=rmdir,--wrap=write (see
 * the Makefile), so that under the model's root (a temporary directory)
 * these calls behave as the kernel's cgroupfs does, as far as cgroup.c
 * relies on it; elsewhere they are the plain calls.
 *  - mkdir makes a group with its interface files: in v2 the files of the
 *    controllers its parent enables in cgroup.subtree_control (its
 *    cgroup.controllers), which follow that setting when it changes later;
 *    in v1 the files of its hierarchy (a first path component memory,
 *    pids, cpu or freezer).
 *  - write is a command, as in the kernel: cgroup.subtree_control "+c -c"
 *    (ENOENT for a controller the group does not offer, EBUSY when a
 *    non-root group holds processes), cgroup.procs moves a pid out of every
 *    other group of its hierarchy (ESRCH for no such process; EBUSY in a v2
 *    group that enables controllers for children), cgroup.kill "1" SIGKILLs
 *    the members (ERANGE for anything else), limits are checked as the
 *    kernel checks them (EINVAL; v1 memsw never below the limit) and
 *    replace the file's content; a read-only file refuses the write
 *    (EINVAL; the kernel refuses already its open).
 *  - rmdir refuses a group with live members or child groups (EBUSY) and
 *    removes its files with it.
 * Every accepted write is logged as "<path under the root>=<value>\n" in
 * model_log, so a test can assert the exact writes and their order.
 *
 * Not modelled: a forked child joining its parent's group (the test lists
 * each process itself), hierarchical counters (populated, memory.events),
 * reclaim and OOM kills (a test writes memory.events as the kernel would
 * count), a v1 freezer's FREEZING state. Those points of the model that can
 * be checked on this machine's kernel are checked on its cgroup2 mount by
 * test_cgroup_kernel.c.
 */
#ifndef CGROUPFS_MODEL_H
#define CGROUPFS_MODEL_H

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

int __real_mkdir(const char *path, mode_t mode);
int __real_rmdir(const char *path);
ssize_t __real_write(int fd, const void *buf, size_t n);

static char model_root[256];          /* realpath of the simulated /sys/fs/cgroup; "" = off */
static int model_swap_accounting = 1; /* memory.swap.max, memory.memsw.* exist */
static int model_has_cgroup_kill = 1; /* Linux 5.14+ */
static int model_ns_root;             /* the root is a cgroup namespace's: no processes with controllers */
static char model_log[16384];

/* The order in which the kernel lists controllers. */
static const char *const model_ctrls[] = {"cpuset", "cpu", "io", "memory", "hugetlb", "pids", "rdma", "misc", NULL};
static const char *const model_v1_hiers[] = {"memory", "pids", "cpu", "freezer", NULL};

/* path relative to the root ("" for the root), or NULL when outside it */
static const char *model_rel(const char *path)
{
    size_t n = strlen(model_root);
    if (!n || strncmp(path, model_root, n) || (path[n] && path[n] != '/'))
        return NULL;
    return path[n] ? path + n + 1 : path + n;
}

static int model_get(const char *dir, const char *file, char *out, size_t outsz)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    FILE *f = fopen(p, "r");
    out[0] = '\0';
    if (!f)
        return -1;
    size_t r = fread(out, 1, outsz - 1, f);
    out[r] = '\0';
    fclose(f);
    return 0;
}

/* Replaces a file's content (stdio: its write is libc's own, not wrapped). */
static void model_put(const char *dir, const char *file, const char *text)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    FILE *f = fopen(p, "w");
    if (!f) {
        fprintf(stderr, "model: cannot write %s: %s\n", p, strerror(errno));
        abort();
    }
    fputs(text, f);
    fclose(f);
}

static int model_has_word(const char *text, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = text; (p = strstr(p, w)); p += n)
        if ((p == text || p[-1] == ' ' || p[-1] == '\n') && (!p[n] || p[n] == ' ' || p[n] == '\n'))
            return 1;
    return 0;
}

/* A process the kernel would still list: it exists and has not exited
 * (a zombie has left its cgroups). */
static int model_alive(long pid)
{
    char p[64], st[512];
    snprintf(p, sizeof p, "/proc/%ld", pid);
    if (pid <= 0 || model_get(p, "stat", st, sizeof st) != 0)
        return 0;
    const char *e = strrchr(st, ')');
    return e && e[1] == ' ' && e[2] != 'Z' && e[2] != 'X';
}

/* The processes a group lists that the kernel would still list; how many
 * (at most max of them in out). */
static int model_members(const char *dir, long *out, int max)
{
    char procs[4096];
    int n = 0;
    model_get(dir, "cgroup.procs", procs, sizeof procs);
    for (char *s = procs, *end; *s && n < max; s = end) {
        long pid = strtol(s, &end, 10);
        if (end == s)
            break;
        if (model_alive(pid))
            out[n++] = pid;
    }
    return n;
}

static int model_has_live_member(const char *dir)
{
    long one;
    return model_members(dir, &one, 1) > 0;
}

/* v1 hierarchy name of a path under the root, or "" for v2. */
static const char *model_hier(const char *rel)
{
    for (int i = 0; model_v1_hiers[i]; i++) {
        size_t n = strlen(model_v1_hiers[i]);
        if (!strncmp(rel, model_v1_hiers[i], n) && (!rel[n] || rel[n] == '/'))
            return model_v1_hiers[i];
    }
    return "";
}

/* The files of one v2 controller in a group, made or removed. */
static void model_ctrl_files(const char *dir, const char *ctrl, int on)
{
    static const char *const files[][2] = {
        {"memory", "memory.max"},     {"memory", "memory.current"}, {"memory", "memory.events"},
        {"memory", "memory.swap.max"}, {"pids", "pids.max"},         {"pids", "pids.current"},
        {"cpu", "cpu.max"},           {"cpu", "cpu.weight"},
    };
    static const char *const init[] = {"max\n", "0\n", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n",
                                       "max\n", "max\n", "0\n", "max 100000\n", "100\n"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if (strcmp(files[i][0], ctrl) || (!model_swap_accounting && !strcmp(files[i][1], "memory.swap.max")))
            continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", dir, files[i][1]);
        if (!on)
            unlink(p);
        else if (access(p, F_OK) != 0) /* a controller enabled again keeps nothing; one still on keeps its values */
            model_put(dir, files[i][1], init[i]);
    }
}

/* A v2 group's cgroup.controllers and controller files follow what its
 * parent enables, now and whenever the parent's subtree_control changes. */
static void model_sync_v2(const char *dir)
{
    char parent[PATH_MAX], on[256];
    snprintf(parent, sizeof parent, "%s", dir);
    *strrchr(parent, '/') = '\0';
    model_get(parent, "cgroup.subtree_control", on, sizeof on);
    on[strcspn(on, "\n")] = '\0';
    char line[300];
    snprintf(line, sizeof line, "%s\n", on);
    model_put(dir, "cgroup.controllers", line);
    static const char *const ctrls[] = {"memory", "pids", "cpu"};
    for (int i = 0; i < 3; i++)
        model_ctrl_files(dir, ctrls[i], model_has_word(on, ctrls[i]));
}

static void model_populate_v2(const char *dir)
{
    model_put(dir, "cgroup.subtree_control", "\n");
    model_put(dir, "cgroup.procs", "");
    model_put(dir, "cgroup.events", "populated 0\nfrozen 0\n");
    model_put(dir, "cgroup.freeze", "0\n");
    if (model_has_cgroup_kill)
        model_put(dir, "cgroup.kill", "");
    model_sync_v2(dir);
}

/* The files of a v1 hierarchy's root (made by the test) or of a new group. */
static void model_populate_v1(const char *dir, const char *hier)
{
    model_put(dir, "cgroup.procs", "");
    model_put(dir, "tasks", "");
    if (!strcmp(hier, "memory")) {
        model_put(dir, "memory.limit_in_bytes", "9223372036854771712\n");
        if (model_swap_accounting)
            model_put(dir, "memory.memsw.limit_in_bytes", "9223372036854771712\n");
        model_put(dir, "memory.swappiness", "60\n");
        model_put(dir, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
    } else if (!strcmp(hier, "pids")) {
        model_put(dir, "pids.max", "max\n");
    } else if (!strcmp(hier, "cpu")) {
        model_put(dir, "cpu.cfs_period_us", "100000\n");
        model_put(dir, "cpu.cfs_quota_us", "-1\n");
    } else if (!strcmp(hier, "freezer")) {
        model_put(dir, "freezer.state", "THAWED\n");
    }
}

int __wrap_mkdir(const char *path, mode_t mode)
{
    if (__real_mkdir(path, mode) != 0)
        return -1;
    const char *rel = model_rel(path);
    if (rel && *rel) {
        const char *h = model_hier(rel);
        if (!*h)
            model_populate_v2(path);
        else if (strchr(rel, '/'))
            model_populate_v1(path, h);
    }
    return 0;
}

int __wrap_rmdir(const char *path)
{
    const char *rel = model_rel(path);
    char probe[PATH_MAX];
    snprintf(probe, sizeof probe, "%s/cgroup.procs", path);
    if (!rel || !*rel || access(probe, F_OK) != 0)
        return __real_rmdir(path);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    struct dirent *de;
    int busy = model_has_live_member(path);
    while (!busy && (de = readdir(d)))
        busy = de->d_type == DT_DIR && strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    if (busy) {
        closedir(d);
        errno = EBUSY;
        return -1;
    }
    rewinddir(d);
    while ((de = readdir(d))) {
        char f[PATH_MAX];
        snprintf(f, sizeof f, "%s/%s", path, de->d_name);
        if (de->d_type == DT_REG)
            unlink(f);
    }
    closedir(d);
    return __real_rmdir(path);
}

/* ---- writes ------------------------------------------------------------ */

static long model_moving_pid; /* nftw has no user pointer */

static int model_drop_pid(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
    const char *base = p + ftw->base;
    if (type != FTW_F || strcmp(base, "cgroup.procs"))
        return 0;
    char dir[PATH_MAX], procs[4096], out[4096] = "";
    snprintf(dir, sizeof dir, "%.*s", ftw->base - 1, p);
    model_get(dir, "cgroup.procs", procs, sizeof procs);
    for (char *s = procs, *end; *s; s = end) {
        long pid = strtol(s, &end, 10);
        if (end == s)
            break;
        if (pid != model_moving_pid)
            snprintf(out + strlen(out), sizeof out - strlen(out), "%ld\n", pid);
    }
    model_put(dir, "cgroup.procs", out);
    return 0;
}

/* Takes pid out of every group under top: a process is in one group per
 * hierarchy (and once it has exited, in none). */
static void model_forget_pid(const char *top, long pid)
{
    model_moving_pid = pid;
    nftw(top, model_drop_pid, 16, FTW_PHYS);
}

static int model_is_uint(const char *v)
{
    if (!*v)
        return 0;
    for (; *v; v++)
        if (*v < '0' || *v > '9')
            return 0;
    return 1;
}

static int model_subtree_control(const char *dir, int is_root, char *val)
{
    char offered[256], on[256];
    model_get(dir, "cgroup.controllers", offered, sizeof offered);
    model_get(dir, "cgroup.subtree_control", on, sizeof on);
    int want[16] = {0};
    for (int i = 0; model_ctrls[i]; i++)
        want[i] = model_has_word(on, model_ctrls[i]);
    char *save = NULL;
    for (char *w = strtok_r(val, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        int i = 0;
        while (model_ctrls[i] && strcmp(model_ctrls[i], w + 1))
            i++;
        if ((w[0] != '+' && w[0] != '-') || !model_ctrls[i])
            return EINVAL;
        if (!model_has_word(offered, w + 1))
            return ENOENT;
        want[i] = w[0] == '+';
    }
    /* "no internal processes": only the (real) root may hold processes and
     * enable controllers for its children */
    if ((!is_root || model_ns_root) && model_has_live_member(dir))
        return EBUSY;
    char out[256] = "";
    for (int i = 0; model_ctrls[i]; i++)
        if (want[i])
            snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", out[0] ? " " : "", model_ctrls[i]);
    strcat(out, "\n");
    model_put(dir, "cgroup.subtree_control", out);
    DIR *d = opendir(dir); /* the children see it at once */
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char child[PATH_MAX + 256];
        snprintf(child, sizeof child, "%s/%s", dir, de->d_name);
        if (de->d_type == DT_DIR && strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && !*model_hier(model_rel(child)))
            model_sync_v2(child);
    }
    if (d)
        closedir(d);
    return 0;
}

static int model_procs(const char *dir, const char *rel, int is_root, const char *val)
{
    char *end;
    long pid = strtol(val, &end, 10);
    if (end == val || *end || !model_alive(pid))
        return ESRCH;
    const char *h = model_hier(rel);
    if (!*h && !is_root) {
        char on[256];
        model_get(dir, "cgroup.subtree_control", on, sizeof on);
        if (on[0] && on[0] != '\n')
            return EBUSY;
    }
    char top[PATH_MAX];
    snprintf(top, sizeof top, "%s%s%s", model_root, *h ? "/" : "", h);
    model_forget_pid(top, pid);
    char procs[4096];
    model_get(dir, "cgroup.procs", procs, sizeof procs);
    snprintf(procs + strlen(procs), sizeof procs - strlen(procs), "%ld\n", pid);
    model_put(dir, "cgroup.procs", procs);
    return 0;
}

static int model_kill(const char *dir, const char *val)
{
    if (strcmp(val, "1"))
        return ERANGE;
    long pids[256];
    int n = model_members(dir, pids, 256);
    for (int i = 0; i < n; i++)
        kill((pid_t)pids[i], SIGKILL);
    return 0;
}

/* A limit the kernel takes; returns 0 and the content to keep, or an errno. */
static int model_limit(const char *dir, const char *file, const char *val, char *keep, size_t keepsz)
{
    snprintf(keep, keepsz, "%s\n", val);
    if (!strcmp(file, "memory.max") || !strcmp(file, "memory.swap.max") || !strcmp(file, "memory.high") ||
        !strcmp(file, "pids.max"))
        return !strcmp(val, "max") || model_is_uint(val) ? 0 : EINVAL;
    if (!strcmp(file, "cpu.max")) {
        char quota[32] = "", period[32] = "", old[64];
        if (sscanf(val, "%31s %31s", quota, period) < 1)
            return EINVAL;
        if (!period[0]) { /* the period stays */
            model_get(dir, "cpu.max", old, sizeof old);
            sscanf(old, "%*s %31s", period);
        }
        long long q = atoll(quota), p = atoll(period);
        if ((strcmp(quota, "max") && (!model_is_uint(quota) || q < 1000)) || !model_is_uint(period) ||
            p < 1000 || p > 1000000)
            return EINVAL;
        snprintf(keep, keepsz, "%s %s\n", quota, period);
        return 0;
    }
    if (!strcmp(file, "memory.limit_in_bytes") || !strcmp(file, "memory.memsw.limit_in_bytes")) {
        if (!model_is_uint(val) && strcmp(val, "-1"))
            return EINVAL;
        unsigned long long v = strcmp(val, "-1") ? strtoull(val, NULL, 10) : ~0ULL;
        char other[64];
        int is_memsw = file[7] == 'm';
        if (model_get(dir, is_memsw ? "memory.limit_in_bytes" : "memory.memsw.limit_in_bytes", other,
                      sizeof other) == 0) {
            unsigned long long o = strtoull(other, NULL, 10);
            if (is_memsw ? v < o : v > o) /* memsw >= limit, always */
                return EINVAL;
        }
        return 0;
    }
    if (!strcmp(file, "memory.swappiness"))
        return model_is_uint(val) && atoi(val) <= 100 ? 0 : EINVAL;
    if (!strcmp(file, "cpu.cfs_period_us"))
        return model_is_uint(val) && atoll(val) >= 1000 && atoll(val) <= 1000000 ? 0 : EINVAL;
    if (!strcmp(file, "cpu.cfs_quota_us"))
        return !strcmp(val, "-1") || (model_is_uint(val) && atoll(val) >= 1000) ? 0 : EINVAL;
    if (!strcmp(file, "freezer.state"))
        return !strcmp(val, "FROZEN") || !strcmp(val, "THAWED") ? 0 : EINVAL;
    if (!strcmp(file, "cgroup.freeze"))
        return !strcmp(val, "0") || !strcmp(val, "1") ? 0 : EINVAL;
    return EINVAL; /* read-only (cgroup.controllers, *.events, *.current, ...) */
}

static int model_command(const char *path, char *val)
{
    char dir[PATH_MAX], keep[300];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    *slash = '\0';
    const char *file = slash + 1;
    int is_root = !strcmp(dir, model_root);
    const char *grel = model_rel(dir);
    if (!strcmp(file, "cgroup.subtree_control"))
        return model_subtree_control(dir, is_root, val);
    if (!strcmp(file, "cgroup.procs"))
        return model_procs(dir, grel, is_root, val);
    if (!strcmp(file, "cgroup.kill"))
        return model_kill(dir, val);
    int e = model_limit(dir, file, val, keep, sizeof keep);
    if (!e)
        model_put(dir, file, keep);
    return e;
}

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    char link[64], path[PATH_MAX];
    if (!model_root[0])
        return __real_write(fd, buf, n);
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t l = readlink(link, path, sizeof path - 1);
    if (l <= 0)
        return __real_write(fd, buf, n);
    path[l] = '\0';
    const char *rel = model_rel(path);
    if (!rel || !*rel)
        return __real_write(fd, buf, n);
    char val[256];
    size_t k = n < sizeof val - 1 ? n : sizeof val - 1;
    memcpy(val, buf, k);
    val[k] = '\0';
    if (k && val[k - 1] == '\n')
        val[k - 1] = '\0';
    char logged[256];
    snprintf(logged, sizeof logged, "%s", val); /* model_command may cut val up */
    int e = model_command(path, val);
    if (e) {
        errno = e;
        return -1;
    }
    snprintf(model_log + strlen(model_log), sizeof model_log - strlen(model_log), "%s=%s\n", rel, logged);
    return (ssize_t)n;
}

/* ---- layouts ------------------------------------------------------------ */

static int model_rm(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
    return type == FTW_DP ? __real_rmdir(p) : unlink(p);
}

/* An empty root at path (made or emptied), v2 and v1 alike; options back
 * to a current kernel with swap accounting. */
static void model_reset(const char *path)
{
    nftw(path, model_rm, 16, FTW_DEPTH | FTW_PHYS);
    __real_mkdir(path, 0755);
    if (!realpath(path, model_root))
        abort();
    model_log[0] = '\0';
    model_swap_accounting = 1;
    model_has_cgroup_kill = 1;
    model_ns_root = 0;
}

/* A cgroup2 root offering controllers ("cpu memory pids"). */
static void model_layout_v2(const char *controllers)
{
    char line[256];
    snprintf(line, sizeof line, "%s\n", controllers);
    model_put(model_root, "cgroup.controllers", line);
    model_put(model_root, "cgroup.subtree_control", "\n");
    model_put(model_root, "cgroup.procs", "");
}

/* v1 hierarchies ("memory pids cpu freezer") under the root. */
static void model_layout_v1(const char *hiers)
{
    for (int i = 0; model_v1_hiers[i]; i++) {
        if (!model_has_word(hiers, model_v1_hiers[i]))
            continue;
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/%s", model_root, model_v1_hiers[i]);
        __real_mkdir(dir, 0755);
        model_populate_v1(dir, model_v1_hiers[i]);
    }
}

/* The process exited and was reaped: the kernel lists it nowhere. */
static void model_exited(long pid)
{
    model_forget_pid(model_root, pid);
}

#endif
