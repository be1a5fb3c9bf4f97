/* One sample of a sandbox's use (the contract is sandbox_metrics.h).
 *
 * Only the sandbox's own cgroup files are read, each capped at 4 KiB and
 * opened without following a symlink; what the sandbox could write (its
 * processes' /proc/<pid>/stat on a cgroup v1 host) is parsed as hostile:
 * numbers only, capped counts.
 *
 * CPU time: cgroup v2's cpu.stat usage_usec; v1's cpuacct.usage where
 * cpuacct is mounted with cpu; else the sum of utime and stime of the
 * memory group's processes (at most 4096; a process that has ended
 * takes its time with it, so the web's rate never goes below 0 there).
 * Memory: v2 memory.current, memory.max and memory.stat's file; v1
 * memory.usage_in_bytes, memory.limit_in_bytes and memory.stat's cache;
 * the sandbox's memory_mib when the limit reads as none. Disk: statvfs of
 * the sandbox's root, what `df /` shows inside. */
#include "sandboxd/sandbox_metrics.h"

#include "sandboxd/cgroup.h"
#include "sandboxd/proc_walk.h"
#include "sandboxd/reply.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define LBSD_MET_FILE_MAX 4096
#define LBSD_MET_PROCS_MAX 4096

/* dir/file into out (NUL-terminated, at most LBSD_MET_FILE_MAX - 1 bytes);
 * 0 when it cannot be read. */
static int met_read(const char *dir, const char *file, char *out, size_t outsz)
{
    char p[LBSD_CG_PATH + 64];
    if (!dir[0] || (size_t)snprintf(p, sizeof p, "%s/%s", dir, file) >= sizeof p)
        return 0;
    int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, out, outsz - 1);
    close(fd);
    if (n < 0)
        return 0;
    out[n] = '\0';
    return 1;
}

/* The leading whole number of s; 0 when there is none or it is "max". */
static int met_num(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (end == s || errno)
        return 0;
    *v = (uint64_t)x;
    return 1;
}

int lbsd_metrics_keyed(const char *buf, const char *key, uint64_t *v)
{
    size_t kl = strlen(key);
    for (const char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, key, kl) && l[kl] == ' ')
            return met_num(l + kl + 1, v);
    return 0;
}

/* The value of "key N" in a flat-keyed file. */
static int met_keyed(const char *dir, const char *file, const char *key, uint64_t *v)
{
    char buf[LBSD_MET_FILE_MAX];
    return met_read(dir, file, buf, sizeof buf) && lbsd_metrics_keyed(buf, key, v);
}

static int met_file_num(const char *dir, const char *file, uint64_t *v)
{
    char buf[64];
    return met_read(dir, file, buf, sizeof buf) && met_num(buf, v);
}

/* utime + stime (clock ticks) of one /proc/<pid>/stat: the fields after
 * the command's closing parenthesis (the command is the process's to
 * choose, so the last ')' ends it). */
int lbsd_metrics_stat_ticks(const char *buf, uint64_t *v)
{
    const char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    /* state is field 3; utime and stime are 14 and 15 */
    unsigned long long ut = 0, st = 0;
    if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return 0;
    if (ut > (1ull << 40) || st > (1ull << 40))
        return 0; /* no process has run that long: a line that lies */
    *v = (uint64_t)(ut + st);
    return 1;
}

static uint64_t met_proc_ticks(pid_t pid)
{
    char buf[1024];
    uint64_t v = 0;
    if (lbsd_proc_read(pid, "stat", buf, sizeof buf) <= 0 || !lbsd_metrics_stat_ticks(buf, &v))
        return 0;
    return v;
}

/* CPU time of v1 groups without cpuacct: the memory group's processes. */
static int met_v1_procs_us(const lbsd_cgroup *cg, uint64_t *us)
{
    char *buf = malloc(LBSD_MET_PROCS_MAX * 8);
    if (!buf || !met_read(cg->mem, "cgroup.procs", buf, LBSD_MET_PROCS_MAX * 8)) {
        free(buf);
        return 0;
    }
    long hz = sysconf(_SC_CLK_TCK);
    uint64_t ticks = 0;
    int n = 0;
    for (char *l = buf; *l && n < LBSD_MET_PROCS_MAX; n++) {
        uint64_t pid;
        if (met_num(l, &pid) && pid > 1 && pid < (1u << 22))
            ticks += met_proc_ticks((pid_t)pid);
        char *nl = strchr(l, '\n');
        if (!nl)
            break;
        l = nl + 1;
    }
    free(buf);
    *us = (uint64_t)((double)ticks * 1e6 / (double)(hz > 0 ? hz : 100)); /* at most 4096 * 2^41 ticks */
    return 1;
}

void lbsd_metrics_request(lbsd_conn *c, lbsd_sandbox *sb)
{
    const lbsd_cgroup *cg = &sb->cg;
    cJSON *r = cJSON_CreateObject();
    uint64_t v = 0, ns = 0;
    int v2 = cg->v2[0] != '\0';
    if (v2 ? met_keyed(cg->v2, "cpu.stat", "usage_usec", &v) : met_file_num(cg->cpu, "cpuacct.usage", &ns))
        cJSON_AddNumberToObject(r, "cpu_usage_us", (double)(v2 ? v : ns / 1000));
    else if (!v2 && met_v1_procs_us(cg, &v))
        cJSON_AddNumberToObject(r, "cpu_usage_us", (double)v);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int count = sb->cpu_milli > 0 ? (sb->cpu_milli + 999) / 1000 : (int)(ncpu > 0 ? ncpu : 1);
    if (ncpu > 0 && count > ncpu)
        count = (int)ncpu;
    cJSON_AddNumberToObject(r, "cpu_count", count);
    const char *mdir = v2 ? cg->v2 : cg->mem;
    if (met_file_num(mdir, v2 ? "memory.current" : "memory.usage_in_bytes", &v))
        cJSON_AddNumberToObject(r, "mem_used", (double)v);
    uint64_t limit = (uint64_t)(sb->memory_mib > 0 ? sb->memory_mib : 0) << 20;
    if (met_file_num(mdir, v2 ? "memory.max" : "memory.limit_in_bytes", &v) && v < (1ull << 50))
        limit = v; /* "max" and v1's huge "none" read as no limit */
    if (limit)
        cJSON_AddNumberToObject(r, "mem_total", (double)limit);
    if (met_keyed(mdir, "memory.stat", v2 ? "file" : "cache", &v))
        cJSON_AddNumberToObject(r, "mem_cache", (double)v);
    struct statvfs fs;
    if (sb->root_fd >= 0 && fstatvfs(sb->root_fd, &fs) == 0 && fs.f_blocks >= fs.f_bfree) {
        cJSON_AddNumberToObject(r, "disk_total", (double)fs.f_blocks * (double)fs.f_frsize);
        cJSON_AddNumberToObject(r, "disk_used", (double)(fs.f_blocks - fs.f_bfree) * (double)fs.f_frsize);
    }
    lbsd_reply(c, r, NULL, 0, 0);
}
