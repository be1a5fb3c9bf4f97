/* Per-sandbox cgroups (see cgroup.h for the policy). */
#include "sandbox/cgroup.h"

#include "common/config.h"
#include "common/log.h"
#include "common/status.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CG_ROOT "/sys/fs/cgroup"
/* The group base carries a hash of the daemon's var dir, so two sandboxd
 * instances (a `make run` and a test stack, say) never clean up each
 * other's sandboxes at startup. */
static char cg_v1_mem_base[128], cg_v1_pids_base[128], cg_v2_base[128];
#define CG_V1_MEM cg_v1_mem_base
#define CG_V1_PIDS cg_v1_pids_base
#define CG_V2_BASE cg_v2_base

static void cg_names_init(void)
{
    if (cg_v2_base[0])
        return;
    uint32_t h = 2166136261u; /* FNV-1a of the var dir */
    for (const char *c = lb_cfg()->var_dir; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    snprintf(cg_v1_mem_base, sizeof cg_v1_mem_base, CG_ROOT "/memory/llmbox-%08x", h);
    snprintf(cg_v1_pids_base, sizeof cg_v1_pids_base, CG_ROOT "/pids/llmbox-%08x", h);
    snprintf(cg_v2_base, sizeof cg_v2_base, CG_ROOT "/llmbox-%08x", h);
}

static int cg_mode = -1;
static int cg_v1_mem, cg_v1_pids; /* which v1 controllers we could use */

const char *lbsd_cg_mode_name(lbsd_cg_mode m)
{
    return m == LBSD_CG_V2 ? "v2" : m == LBSD_CG_V1 ? "v1" : "rlimit";
}

static int cg_write(const char *dir, const char *file, const char *val)
{
    char p[LBSD_CG_PATH + 64];
    if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, file) >= sizeof p)
        return LB_E_INVAL;
    int fd = open(p, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return LB_E_IO;
    size_t n = strlen(val);
    ssize_t w = write(fd, val, n);
    int e = errno;
    close(fd);
    errno = e;
    return w == (ssize_t)n ? LB_OK : LB_E_IO;
}

static int cg_read(const char *dir, const char *file, char *out, size_t outsz)
{
    char p[LBSD_CG_PATH + 64];
    if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, file) >= sizeof p)
        return LB_E_INVAL;
    int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return LB_E_IO;
    ssize_t r = read(fd, out, outsz - 1);
    close(fd);
    if (r < 0)
        return LB_E_IO;
    out[r] = '\0';
    return LB_OK;
}

/* Value of "key N" in a flat-keyed cgroup file. */
static uint64_t cg_keyed(const char *dir, const char *file, const char *key)
{
    char buf[4096];
    if (cg_read(dir, file, buf, sizeof buf) != LB_OK)
        return 0;
    size_t kl = strlen(key);
    for (char *line = buf; line && *line;) {
        char *nl = strchr(line, '\n');
        if (!strncmp(line, key, kl) && line[kl] == ' ')
            return strtoull(line + kl + 1, NULL, 10);
        line = nl ? nl + 1 : NULL;
    }
    return 0;
}

static int cg_has_words(const char *text, const char *a, const char *b)
{
    int ha = 0, hb = 0;
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", text);
    char *save = NULL;
    for (char *w = strtok_r(tmp, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
        ha |= !strcmp(w, a);
        hb |= !strcmp(w, b);
    }
    return ha && hb;
}

static int cg_mkdir(const char *p)
{
    return (mkdir(p, 0755) == 0 || errno == EEXIST) ? LB_OK : LB_E_IO;
}

static int cg_probe_v2(void)
{
    char buf[1024];
    if (cg_read(CG_ROOT, "cgroup.controllers", buf, sizeof buf) != LB_OK)
        return 0;
    if (!cg_has_words(buf, "memory", "pids"))
        return 0;
    if (cg_mkdir(CG_V2_BASE) != LB_OK)
        return 0;
    /* the controllers must be enabled on the way down to each sandbox group */
    cg_write(CG_ROOT, "cgroup.subtree_control", "+memory +pids");
    if (cg_write(CG_V2_BASE, "cgroup.subtree_control", "+memory +pids") != LB_OK)
        return 0;
    return 1;
}

static int cg_probe_v1(void)
{
    struct stat st;
    if (stat(CG_ROOT "/memory/memory.limit_in_bytes", &st) == 0 && cg_mkdir(CG_V1_MEM) == LB_OK)
        cg_v1_mem = 1;
    if (stat(CG_ROOT "/pids/cgroup.procs", &st) == 0 && cg_mkdir(CG_V1_PIDS) == LB_OK)
        cg_v1_pids = 1;
    return cg_v1_mem || cg_v1_pids;
}

lbsd_cg_mode lbsd_cg_detect(void)
{
    if (cg_mode >= 0)
        return (lbsd_cg_mode)cg_mode;
    cg_names_init();
    if (getenv("LLMBOX_SANDBOX_NO_CGROUP")) {
        cg_mode = LBSD_CG_RLIMIT;
        lb_warn("cgroups disabled by LLMBOX_SANDBOX_NO_CGROUP: memory is limited per process "
                "with RLIMIT_AS (approximate), and there is no process limit (the kernel exempts "
                "root from RLIMIT_NPROC)");
    } else if (cg_probe_v2()) {
        cg_mode = LBSD_CG_V2;
    } else if (cg_probe_v1()) {
        cg_mode = LBSD_CG_V1;
        if (!cg_v1_mem || !cg_v1_pids)
            lb_warn("cgroup v1: the %s controller is missing; that limit is not enforced",
                    cg_v1_mem ? "pids" : "memory");
    } else {
        cg_mode = LBSD_CG_RLIMIT;
        lb_warn("no writable cgroup v2 (memory+pids) or v1 hierarchy under " CG_ROOT
                ": memory is limited per process with RLIMIT_AS (approximate), and there is no "
                "process limit (the kernel exempts root from RLIMIT_NPROC)");
    }
    lb_info("cgroup mode: %s", lbsd_cg_mode_name((lbsd_cg_mode)cg_mode));
    return (lbsd_cg_mode)cg_mode;
}

int lbsd_cg_create(lbsd_cgroup *cg, const char *id, uint64_t mem_bytes, int pids)
{
    memset(cg, 0, sizeof *cg);
    lbsd_cg_mode m = lbsd_cg_detect();
    char val[32];
    if (m == LBSD_CG_RLIMIT)
        return LB_OK;
    if (m == LBSD_CG_V2) {
        snprintf(cg->v2, sizeof cg->v2, "%s/%s", CG_V2_BASE, id);
        if (mkdir(cg->v2, 0755) != 0)
            goto fail;
        cg->made = 1;
        snprintf(val, sizeof val, "%llu", (unsigned long long)mem_bytes);
        if (cg_write(cg->v2, "memory.max", val) != LB_OK)
            goto fail;
        cg_write(cg->v2, "memory.swap.max", "0"); /* absent without swap accounting */
        /* kill the whole group on OOM? no: the shell and init must survive */
        snprintf(val, sizeof val, "%d", pids);
        if (cg_write(cg->v2, "pids.max", val) != LB_OK)
            goto fail;
        return LB_OK;
    }
    if (cg_v1_mem) {
        snprintf(cg->mem, sizeof cg->mem, "%s/%s", CG_V1_MEM, id);
        if (mkdir(cg->mem, 0755) != 0)
            goto fail;
        cg->made = 1;
        snprintf(val, sizeof val, "%llu", (unsigned long long)mem_bytes);
        if (cg_write(cg->mem, "memory.limit_in_bytes", val) != LB_OK)
            goto fail;
        /* memsw >= limit must hold; without swap accounting the file is absent */
        cg_write(cg->mem, "memory.memsw.limit_in_bytes", val);
        cg_write(cg->mem, "memory.swappiness", "0");
    }
    if (cg_v1_pids) {
        snprintf(cg->pids, sizeof cg->pids, "%s/%s", CG_V1_PIDS, id);
        if (mkdir(cg->pids, 0755) != 0)
            goto fail;
        cg->made = 1;
        snprintf(val, sizeof val, "%d", pids);
        if (cg_write(cg->pids, "pids.max", val) != LB_OK)
            goto fail;
    }
    return LB_OK;
fail:
    lb_error("cgroup setup for sandbox %s failed: %s", id, strerror(errno));
    lbsd_cg_remove(cg);
    return LB_E_SANDBOX;
}

int lbsd_cg_attach(const lbsd_cgroup *cg, pid_t pid)
{
    char val[32];
    snprintf(val, sizeof val, "%d", (int)pid);
    const char *dirs[] = {cg->v2, cg->mem, cg->pids};
    for (size_t i = 0; i < 3; i++) {
        if (!dirs[i][0])
            continue;
        if (cg_write(dirs[i], "cgroup.procs", val) != LB_OK) {
            lb_error("cannot move pid %d into %s: %s", (int)pid, dirs[i], strerror(errno));
            return LB_E_SANDBOX;
        }
    }
    return LB_OK;
}

uint64_t lbsd_cg_oom_kills(const lbsd_cgroup *cg)
{
    if (cg->v2[0])
        return cg_keyed(cg->v2, "memory.events", "oom_kill");
    if (cg->mem[0]) {
        /* oom_kill exists since Linux 4.13; failcnt counts limit hits, a
         * weaker sign we do not use because page cache reclaim bumps it */
        return cg_keyed(cg->mem, "memory.oom_control", "oom_kill");
    }
    return 0;
}

/* Kills whatever is still listed in a group (stale groups at startup). */
static void cg_kill_procs(const char *dir)
{
    char buf[65536];
    if (cg_read(dir, "cgroup.procs", buf, sizeof buf) != LB_OK)
        return;
    char *save = NULL;
    for (char *w = strtok_r(buf, "\n", &save); w; w = strtok_r(NULL, "\n", &save)) {
        long pid = strtol(w, NULL, 10);
        if (pid > 1)
            kill((pid_t)pid, SIGKILL);
    }
}

static int cg_rmdir_retry(const char *dir)
{
    /* a group whose last task just died can stay busy for a moment */
    for (int i = 0; i < 50; i++) {
        if (rmdir(dir) == 0 || errno == ENOENT)
            return LB_OK;
        if (errno != EBUSY)
            break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    lb_warn("cannot remove cgroup %s: %s", dir, strerror(errno));
    return LB_E_IO;
}

int lbsd_cg_remove(lbsd_cgroup *cg)
{
    int rc = LB_OK;
    char *dirs[] = {cg->v2, cg->mem, cg->pids};
    for (size_t i = 0; i < 3; i++) {
        if (!dirs[i][0])
            continue;
        struct stat st;
        if (stat(dirs[i], &st) != 0)
            continue;
        if (cg_rmdir_retry(dirs[i]) != LB_OK)
            rc = LB_E_IO;
    }
    if (rc == LB_OK)
        cg->made = 0;
    return rc;
}

static void cg_cleanup_base(const char *base)
{
    DIR *d = opendir(base);
    if (!d)
        return;
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d))) {
        if (!lb_id_valid(de->d_name))
            continue;
        char p[LBSD_CG_PATH];
        snprintf(p, sizeof p, "%s/%s", base, de->d_name);
        for (int i = 0; i < 5; i++)
            cg_kill_procs(p);
        if (cg_rmdir_retry(p) == LB_OK)
            n++;
    }
    closedir(d);
    if (n)
        lb_info("removed %d stale cgroup(s) under %s", n, base);
}

void lbsd_cg_cleanup_stale(void)
{
    lbsd_cg_mode m = lbsd_cg_detect();
    if (m == LBSD_CG_V2) {
        cg_cleanup_base(CG_V2_BASE);
    } else if (m == LBSD_CG_V1) {
        if (cg_v1_mem)
            cg_cleanup_base(CG_V1_MEM);
        if (cg_v1_pids)
            cg_cleanup_base(CG_V1_PIDS);
    }
}

void lbsd_cg_shutdown(void)
{
    /* the base groups are per installation (hash of the var dir); a test
     * stack's temporary var dir would otherwise leave one empty group each */
    if (!cg_v2_base[0])
        return;
    rmdir(CG_V2_BASE);
    rmdir(CG_V1_MEM);
    rmdir(CG_V1_PIDS);
}
