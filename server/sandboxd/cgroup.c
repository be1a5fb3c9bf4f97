/* Per-sandbox cgroups (see cgroup.h for the policy). */
#include "sandboxd/cgroup.h"

#include "sandboxd/stale.h"

#include "common/log.h"
#include "common/status.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The cgroup filesystem; only the unit tests point it elsewhere (a
 * simulated tree, lbsd_cg_set_root). */
static char cg_root[LBSD_CG_ROOT_MAX] = "/sys/fs/cgroup";
/* The group base carries a hash of the daemon's var dir, so two sandboxd
 * instances (a `make run` and a test stack, say) never clean up each
 * other's sandboxes at startup. */
#define CG_BASE_MAX (LBSD_CG_ROOT_MAX + 32) /* root, "/freezer/", the tag */
static char cg_v1_mem_base[CG_BASE_MAX], cg_v1_pids_base[CG_BASE_MAX], cg_v1_cpu_base[CG_BASE_MAX],
    cg_v1_frz_base[CG_BASE_MAX], cg_v2_base[CG_BASE_MAX];
#define CG_V1_MEM cg_v1_mem_base
#define CG_V1_PIDS cg_v1_pids_base
#define CG_V1_CPU cg_v1_cpu_base
#define CG_V1_FRZ cg_v1_frz_base
#define CG_V2_BASE cg_v2_base
#define CG_CPU_PERIOD_US 100000

static void cg_names_init(void)
{
    if (cg_v2_base[0])
        return;
    const char *tag = lbsd_install_tag(); /* llmbox-<FNV-1a of the var dir> */
    snprintf(cg_v1_mem_base, sizeof cg_v1_mem_base, "%s/memory/%s", cg_root, tag);
    snprintf(cg_v1_pids_base, sizeof cg_v1_pids_base, "%s/pids/%s", cg_root, tag);
    snprintf(cg_v1_cpu_base, sizeof cg_v1_cpu_base, "%s/cpu/%s", cg_root, tag);
    snprintf(cg_v1_frz_base, sizeof cg_v1_frz_base, "%s/freezer/%s", cg_root, tag);
    snprintf(cg_v2_base, sizeof cg_v2_base, "%s/%s", cg_root, tag);
}

static int cg_mode = -1;
static int cg_v1_mem, cg_v1_pids, cg_v1_cpu, cg_v1_frz; /* which v1 controllers we could use */
static int cg_v2_cpu;                                   /* v2: the cpu controller is there */
static int cg_cpu_warned;

/* spare groups (lbsd_cg_retire, below) */
#define CG_SPARES_MAX 64
typedef struct cg_spare {
    unsigned n;          /* its name: spare-<n> in each hierarchy it has */
    uint64_t mem_bytes;  /* its memory limit now */
    int has_v2, has_mem, has_pids, has_frz;
} cg_spare;

static pthread_mutex_t cg_spare_mu = PTHREAD_MUTEX_INITIALIZER;
static cg_spare cg_spares[CG_SPARES_MAX];
static int cg_nspares;
static unsigned cg_spare_seq;

const char *lbsd_cg_mode_name(lbsd_cg_mode m)
{
    return m == LBSD_CG_V2 ? "v2" : m == LBSD_CG_V1 ? "v1" : "rlimit";
}

static LB_MUST_CHECK int cg_write(const char *dir, const char *file, const char *val)
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

/* Why v2 was not used although the root offers memory and pids ("" when it
 * does not offer them): the fallback's warning says it. */
static char cg_v2_why[CG_BASE_MAX + 128];

static int cg_probe_v2(void)
{
    char buf[1024];
    cg_v2_why[0] = '\0';
    if (cg_read(cg_root, "cgroup.controllers", buf, sizeof buf) != LB_OK)
        return 0;
    if (!cg_has_words(buf, "memory", "pids"))
        return 0;
    int cpu = cg_has_words(buf, "cpu", "cpu");
    if (cg_mkdir(CG_V2_BASE) != LB_OK) {
        snprintf(cg_v2_why, sizeof cg_v2_why, "cannot make %s: %s", CG_V2_BASE, strerror(errno));
        return 0;
    }
    /* the controllers must be enabled on the way down to each sandbox group;
     * the root's may be enabled already (systemd does), so its answer does
     * not count: the base's write below fails if they are not */
    LB_IGNORE(cg_write(cg_root, "cgroup.subtree_control", "+memory +pids")); /* see above */
    if (cpu)
        LB_IGNORE(cg_write(cg_root, "cgroup.subtree_control", "+cpu")); /* see above */
    if (cg_write(CG_V2_BASE, "cgroup.subtree_control", "+memory +pids") != LB_OK) {
        /* typically a cgroup namespace (a container) whose root holds
         * processes: the kernel refuses to enable controllers there */
        snprintf(cg_v2_why, sizeof cg_v2_why, "cannot enable memory and pids in %s: %s", CG_V2_BASE,
                 strerror(errno));
        rmdir(CG_V2_BASE); /* no empty group left behind */
        return 0;
    }
    cg_v2_cpu = cpu && cg_write(CG_V2_BASE, "cgroup.subtree_control", "+cpu") == LB_OK;
    return 1;
}

/* v1: whether root/<hier>/<file> exists, and the base group in it could be made. */
static int cg_v1_usable(const char *hier, const char *file, const char *base)
{
    char p[LBSD_CG_PATH + 64];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s/%s", cg_root, hier, file);
    return stat(p, &st) == 0 && cg_mkdir(base) == LB_OK;
}

static int cg_probe_v1(void)
{
    cg_v1_mem = cg_v1_usable("memory", "memory.limit_in_bytes", CG_V1_MEM);
    cg_v1_pids = cg_v1_usable("pids", "cgroup.procs", CG_V1_PIDS);
    if (!cg_v1_mem && !cg_v1_pids)
        return 0;
    cg_v1_cpu = cg_v1_usable("cpu", "cpu.cfs_quota_us", CG_V1_CPU);
    /* the freezer makes destroy atomic (freeze, kill, thaw) */
    cg_v1_frz = cg_v1_usable("freezer", "cgroup.procs", CG_V1_FRZ);
    return 1;
}

lbsd_cg_mode lbsd_cg_detect(void)
{
    if (cg_mode >= 0)
        return (lbsd_cg_mode)cg_mode;
    cg_names_init();
    if (getenv("LLMBOX_SANDBOX_NO_CGROUP")) {
        cg_mode = LBSD_CG_RLIMIT;
        lb_warn("cgroups disabled by LLMBOX_SANDBOX_NO_CGROUP: memory is limited per process "
                "with RLIMIT_AS (approximate), processes with RLIMIT_NPROC (per user inside each "
                "sandbox), and there is no CPU limit");
    } else if (cg_probe_v2()) {
        cg_mode = LBSD_CG_V2;
    } else if (cg_probe_v1()) {
        cg_mode = LBSD_CG_V1;
        if (cg_v2_why[0])
            lb_warn("cgroup v2 not usable (%s); using v1", cg_v2_why);
        if (!cg_v1_mem || !cg_v1_pids)
            lb_warn("cgroup v1: the %s controller is missing; that limit is not enforced",
                    cg_v1_mem ? "pids" : "memory");
        if (!cg_v1_frz)
            lb_warn("cgroup v1: no freezer hierarchy; destroy kills through the pid namespace "
                    "and a /proc scan only");
    } else {
        cg_mode = LBSD_CG_RLIMIT;
        lb_warn("no writable cgroup v2 (memory+pids) or v1 hierarchy under %s%s%s: memory is "
                "limited per process with RLIMIT_AS (approximate), processes with RLIMIT_NPROC "
                "(per user inside each sandbox), and there is no CPU limit",
                cg_root, cg_v2_why[0] ? "; v2: " : "", cg_v2_why);
    }
    lb_info("cgroup mode: %s", lbsd_cg_mode_name((lbsd_cg_mode)cg_mode));
    return (lbsd_cg_mode)cg_mode;
}

int lbsd_cg_set_root(const char *root)
{
    if (!root || !root[0] || strlen(root) >= sizeof cg_root)
        return LB_E_INVAL;
    snprintf(cg_root, sizeof cg_root, "%s", root);
    cg_mode = -1;
    cg_v1_mem = cg_v1_pids = cg_v1_cpu = cg_v1_frz = 0;
    cg_v2_cpu = cg_cpu_warned = 0;
    cg_v2_base[0] = '\0';
    cg_nspares = 0; /* a test's new tree: the old one's spares are not in it */
    cg_spare_seq = 0;
    return LB_OK;
}

/* A v1 group named id under base; "" in dir when the hierarchy is unused. */
static int cg_v1_make(char *dir, size_t dirsz, const char *base, const char *id, lbsd_cgroup *cg)
{
    snprintf(dir, dirsz, "%s/%s", base, id);
    if (mkdir(dir, 0755) != 0) {
        dir[0] = '\0';
        return LB_E_IO;
    }
    cg->made = 1;
    return LB_OK;
}

int lbsd_cg_set_memory(const lbsd_cgroup *cg, uint64_t old_bytes, uint64_t bytes)
{
    char val[32];
    snprintf(val, sizeof val, "%llu", (unsigned long long)bytes);
    if (cg->v2[0] && cg_write(cg->v2, "memory.max", val) != LB_OK)
        return LB_E_IO;
    if (cg->mem[0]) {
        /* v1 wants memsw >= limit at every step (the kernel refuses the
         * write otherwise): memsw first on the way up, last on the way
         * down; without swap accounting the memsw file is absent */
        int up = bytes > old_bytes;
        if (up)
            LB_IGNORE(cg_write(cg->mem, "memory.memsw.limit_in_bytes", val)); /* may be absent */
        if (cg_write(cg->mem, "memory.limit_in_bytes", val) != LB_OK)
            return LB_E_IO;
        if (!up)
            LB_IGNORE(cg_write(cg->mem, "memory.memsw.limit_in_bytes", val)); /* may be absent */
    }
    return LB_OK;
}

int lbsd_cg_set_pids(const lbsd_cgroup *cg, int pids)
{
    char val[32];
    snprintf(val, sizeof val, "%d", pids);
    if (cg->v2[0] && cg_write(cg->v2, "pids.max", val) != LB_OK)
        return LB_E_IO;
    if (cg->pids[0] && cg_write(cg->pids, "pids.max", val) != LB_OK)
        return LB_E_IO;
    return LB_OK;
}

/* ---- spare groups --------------------------------------------------------
 *
 * Making a memory cgroup and removing it is most of what a create and a
 * destroy cost sandboxd's threads (perf, bench/RESULTS.md part 4: mkdir
 * with the memcg's shrinker state, and the kernel's workers that take the
 * removed group offline later, both under cgroup_mutex). So the groups of
 * a destroyed sandbox are kept, renamed "spare-<n>", and the next create
 * renames them to its own id instead of making new ones.
 *
 * Only groups with nothing left in them are kept: the sandbox's init was
 * reaped (so its pid namespace is empty), every kept group's cgroup.procs
 * reads empty, and the freezer is thawed. What a kept group carries over
 * is none of the next tenant's business and none it could use: the
 * limits are written again at reuse, the OOM-kill count is read at reuse
 * and subtracted (lbsd_cgroup.oom_base), a cpu group is never kept (a
 * v2 group's cpu.max is written either way), and page cache charged to
 * it by the last tenant (files of the shared image) is reclaimable and
 * counts against the new limit the way the tenant's own cache would. The
 * sandbox cannot read any of its group's files (no cgroupfs inside). */
static int cg_rmdir_retry(const char *dir);
static uint64_t cg_oom_total(const lbsd_cgroup *cg);


static void cg_spare_path(char *out, size_t outsz, const char *base, unsigned n)
{
    snprintf(out, outsz, "%s/spare-%u", base, n);
}

/* Renames dir (a group of this sandbox, under base) to spare-<n>, or back. */
static int cg_rename(const char *from, const char *to)
{
    return rename(from, to) == 0 ? LB_OK : LB_E_IO;
}

/* Whether the group dir holds no process (unreadable counts as not empty). */
static int cg_empty(const char *dir)
{
    char buf[64];
    return cg_read(dir, "cgroup.procs", buf, sizeof buf) == LB_OK && buf[0] == '\0';
}

/* Removes a spare's groups (at shutdown, or when it cannot be reused). */
static void cg_spare_drop(const cg_spare *sp)
{
    char p[LBSD_CG_PATH];
    const struct { int has; const char *base; } h[] = {
        {sp->has_v2, CG_V2_BASE}, {sp->has_mem, CG_V1_MEM}, {sp->has_pids, CG_V1_PIDS},
        {sp->has_frz, CG_V1_FRZ}};
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) {
        if (!h[i].has)
            continue;
        cg_spare_path(p, sizeof p, h[i].base, sp->n);
        LB_IGNORE(cg_rmdir_retry(p)); /* says why itself; the next start removes it */
    }
}

int lbsd_cg_retire(lbsd_cgroup *cg, uint64_t mem_bytes)
{
    if (!cg->made)
        return LB_OK;
    /* a cpu group is made only with a CPU limit: never kept */
    if (cg->cpu[0]) {
        struct stat st;
        if (stat(cg->cpu, &st) == 0 && cg_rmdir_retry(cg->cpu) != LB_OK)
            return lbsd_cg_remove(cg);
        cg->cpu[0] = '\0';
    }
    char st[32] = "", fz[8] = "";
    /* v2: not frozen (a file a kernel without the v2 freezer lacks: then
     * nothing can have frozen it) */
    int v2_frozen = cg->v2[0] && cg_read(cg->v2, "cgroup.freeze", fz, sizeof fz) == LB_OK &&
                    fz[0] == '1';
    int ok = (!cg->v2[0] || (cg_empty(cg->v2) && !v2_frozen)) &&
             (!cg->mem[0] || cg_empty(cg->mem)) &&
             (!cg->pids[0] || cg_empty(cg->pids)) &&
             (!cg->frz[0] || (cg_empty(cg->frz) &&
                              cg_read(cg->frz, "freezer.state", st, sizeof st) == LB_OK &&
                              !strncmp(st, "THAWED", 6)));
    pthread_mutex_lock(&cg_spare_mu);
    if (!ok || cg_nspares >= CG_SPARES_MAX) {
        pthread_mutex_unlock(&cg_spare_mu);
        return lbsd_cg_remove(cg);
    }
    cg_spare sp = {.n = cg_spare_seq++, .mem_bytes = mem_bytes, .has_v2 = cg->v2[0] != 0,
                   .has_mem = cg->mem[0] != 0, .has_pids = cg->pids[0] != 0,
                   .has_frz = cg->frz[0] != 0};
    pthread_mutex_unlock(&cg_spare_mu);
    char to[LBSD_CG_PATH];
    char *dirs[] = {cg->v2, cg->mem, cg->pids, cg->frz};
    const char *bases[] = {CG_V2_BASE, CG_V1_MEM, CG_V1_PIDS, CG_V1_FRZ};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        if (!dirs[i][0])
            continue;
        cg_spare_path(to, sizeof to, bases[i], sp.n);
        if (cg_rename(dirs[i], to) != LB_OK) {
            /* the ones renamed already: back, then all removed as usual */
            for (size_t k = 0; k < i; k++) {
                if (!dirs[k][0])
                    continue;
                cg_spare_path(to, sizeof to, bases[k], sp.n);
                LB_IGNORE(cg_rename(to, dirs[k])); /* the removal below says what is left */
            }
            return lbsd_cg_remove(cg);
        }
    }
    pthread_mutex_lock(&cg_spare_mu);
    if (cg_nspares < CG_SPARES_MAX) {
        cg_spares[cg_nspares++] = sp;
        sp.n = 0;
        sp.has_v2 = sp.has_mem = sp.has_pids = sp.has_frz = 0;
    }
    pthread_mutex_unlock(&cg_spare_mu);
    cg_spare_drop(&sp); /* only if the list filled up meanwhile */
    cg->made = 0;
    return LB_OK;
}

/* Takes a spare for id: its groups renamed to id's, limits written. 1: cg
 * is set up; 0: no usable spare (cg untouched, made fresh by the caller). */
static int cg_spare_take(lbsd_cgroup *cg, const char *id, uint64_t mem_bytes, int pids,
                         int want_cpu, long long quota)
{
    for (;;) {
        pthread_mutex_lock(&cg_spare_mu);
        if (!cg_nspares) {
            pthread_mutex_unlock(&cg_spare_mu);
            return 0;
        }
        cg_spare sp = cg_spares[--cg_nspares];
        pthread_mutex_unlock(&cg_spare_mu);
        /* the hierarchies in use now are the ones it was made in (the
         * mode is probed once) */
        struct {
            int has;
            const char *base;
            char *dir;
        } h[] = {{sp.has_v2, CG_V2_BASE, cg->v2}, {sp.has_mem, CG_V1_MEM, cg->mem},
                 {sp.has_pids, CG_V1_PIDS, cg->pids}, {sp.has_frz, CG_V1_FRZ, cg->frz}};
        int ok = 1;
        char from[LBSD_CG_PATH];
        for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) {
            if (!h[i].has)
                continue;
            cg_spare_path(from, sizeof from, h[i].base, sp.n);
            snprintf(h[i].dir, LBSD_CG_PATH, "%s/%s", h[i].base, id);
            if (ok && cg_rename(from, h[i].dir) == LB_OK) {
                cg->made = 1;
                continue;
            }
            ok = 0;
            LB_IGNORE(cg_rmdir_retry(from)); /* logged; the next start removes it */
            h[i].dir[0] = '\0';
        }
        /* v1: memsw >= limit at every step, so the old limit decides the order */
        if (ok && lbsd_cg_set_memory(cg, sp.mem_bytes, mem_bytes) != LB_OK)
            ok = 0;
        if (ok && lbsd_cg_set_pids(cg, pids) != LB_OK)
            ok = 0;
        if (ok && cg->v2[0] && cg_v2_cpu) {
            char val[48];
            if (want_cpu)
                snprintf(val, sizeof val, "%lld %d", quota, CG_CPU_PERIOD_US);
            else
                snprintf(val, sizeof val, "max %d", CG_CPU_PERIOD_US);
            if (cg_write(cg->v2, "cpu.max", val) != LB_OK)
                ok = 0;
        }
        if (ok) {
            cg->oom_base = cg_oom_total(cg);
            return 1;
        }
        lb_warn("a spare cgroup could not be reused (%s): making a new one", strerror(errno));
        LB_IGNORE(lbsd_cg_remove(cg)); /* logged by cg_rmdir_retry */
        memset(cg, 0, sizeof *cg);
    }
}

/* v1: the cpu group of id with its quota per 100 ms period. */
static int cg_v1_cpu_make(lbsd_cgroup *cg, const char *id, long long quota)
{
    char val[48];
    if (cg_v1_make(cg->cpu, sizeof cg->cpu, CG_V1_CPU, id, cg) != LB_OK)
        return LB_E_IO;
    snprintf(val, sizeof val, "%d", CG_CPU_PERIOD_US);
    if (cg_write(cg->cpu, "cpu.cfs_period_us", val) != LB_OK)
        return LB_E_IO;
    snprintf(val, sizeof val, "%lld", quota);
    return cg_write(cg->cpu, "cpu.cfs_quota_us", val);
}

int lbsd_cg_create(lbsd_cgroup *cg, const char *id, uint64_t mem_bytes, int pids, int cpu_milli)
{
    memset(cg, 0, sizeof *cg);
    lbsd_cg_mode m = lbsd_cg_detect();
    char val[48];
    if (m == LBSD_CG_RLIMIT)
        return LB_OK;
    int want_cpu = cpu_milli > 0;
    if (want_cpu && !(m == LBSD_CG_V2 ? cg_v2_cpu : cg_v1_cpu) && !cg_cpu_warned) {
        cg_cpu_warned = 1;
        lb_warn("no cgroup cpu controller: CPU limits (cpu_milli) are not enforced");
    }
    /* quota per period: 1000 milli = one full period per period (the
     * kernel's minimum quota, 1 ms, is 10 milli: the config and the RPC
     * refuse less) */
    long long quota = (long long)cpu_milli * (CG_CPU_PERIOD_US / 1000);
    if (cg_spare_take(cg, id, mem_bytes, pids, want_cpu && cg_v2_cpu, quota)) {
        if (m == LBSD_CG_V2 || !want_cpu || !cg_v1_cpu)
            return LB_OK;
        /* v1: the cpu group is never a spare's */
        if (cg_v1_cpu_make(cg, id, quota) != LB_OK)
            goto fail;
        return LB_OK;
    }
    if (m == LBSD_CG_V2) {
        snprintf(cg->v2, sizeof cg->v2, "%s/%s", CG_V2_BASE, id);
        if (mkdir(cg->v2, 0755) != 0) {
            cg->v2[0] = '\0';
            goto fail;
        }
        cg->made = 1;
        /* a new group is unlimited: memory.max is "max" */
        if (lbsd_cg_set_memory(cg, UINT64_MAX, mem_bytes) != LB_OK)
            goto fail;
        LB_IGNORE(cg_write(cg->v2, "memory.swap.max", "0")); /* absent without swap accounting */
        /* kill the whole group on OOM? no: the shell and init must survive */
        if (lbsd_cg_set_pids(cg, pids) != LB_OK)
            goto fail;
        if (want_cpu && cg_v2_cpu) {
            snprintf(val, sizeof val, "%lld %d", quota, CG_CPU_PERIOD_US);
            if (cg_write(cg->v2, "cpu.max", val) != LB_OK)
                goto fail;
        }
        return LB_OK;
    }
    if (cg_v1_mem) {
        if (cg_v1_make(cg->mem, sizeof cg->mem, CG_V1_MEM, id, cg) != LB_OK)
            goto fail;
        if (lbsd_cg_set_memory(cg, UINT64_MAX, mem_bytes) != LB_OK)
            goto fail;
        /* a preference, not a bound: memory.limit_in_bytes (and memsw
         * where swap is accounted) is what holds the sandbox */
        LB_IGNORE(cg_write(cg->mem, "memory.swappiness", "0"));
    }
    if (cg_v1_pids) {
        if (cg_v1_make(cg->pids, sizeof cg->pids, CG_V1_PIDS, id, cg) != LB_OK)
            goto fail;
        if (lbsd_cg_set_pids(cg, pids) != LB_OK)
            goto fail;
    }
    /* no group at all without a limit: each v1 group costs a mkdir and an rmdir */
    if (want_cpu && cg_v1_cpu && cg_v1_cpu_make(cg, id, quota) != LB_OK)
        goto fail;
    if (cg_v1_frz && cg_v1_make(cg->frz, sizeof cg->frz, CG_V1_FRZ, id, cg) != LB_OK)
        goto fail;
    return LB_OK;
fail:
    lb_error("cgroup setup for sandbox %s failed: %s", id, strerror(errno));
    /* what was made is empty (nothing attached yet); a group that will not
     * go is removed by the next start's cleanup of stale groups */
    LB_IGNORE(lbsd_cg_remove(cg));
    return LB_E_SANDBOX;
}

int lbsd_cg_attach(const lbsd_cgroup *cg, pid_t pid)
{
    char val[32];
    snprintf(val, sizeof val, "%d", (int)pid);
    const char *dirs[] = {cg->v2, cg->mem, cg->pids, cg->cpu, cg->frz};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        if (!dirs[i][0])
            continue;
        if (cg_write(dirs[i], "cgroup.procs", val) != LB_OK) {
            lb_error("cannot move pid %d into %s: %s", (int)pid, dirs[i], strerror(errno));
            return LB_E_SANDBOX;
        }
    }
    return LB_OK;
}

/* The group's own count, since it was made (a spare's earlier ones too). */
static uint64_t cg_oom_total(const lbsd_cgroup *cg)
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

uint64_t lbsd_cg_oom_kills(const lbsd_cgroup *cg)
{
    uint64_t n = cg_oom_total(cg);
    return n > cg->oom_base ? n - cg->oom_base : 0;
}

/* SIGKILLs whatever is listed in a group. Returns how many. */
static int cg_kill_procs(const char *dir)
{
    char buf[65536];
    if (cg_read(dir, "cgroup.procs", buf, sizeof buf) != LB_OK)
        return 0;
    int n = 0;
    char *save = NULL;
    for (char *w = strtok_r(buf, "\n", &save); w; w = strtok_r(NULL, "\n", &save)) {
        long pid = strtol(w, NULL, 10);
        if (pid > 1 && pid != (long)getpid() && kill((pid_t)pid, SIGKILL) == 0)
            n++;
    }
    return n;
}

static void cg_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* v1: freeze the group so nothing in it can fork while we kill, SIGKILL
 * every member, thaw (frozen tasks die as they thaw). */
static LB_MUST_CHECK int cg_freeze_kill(const char *dir)
{
    if (cg_write(dir, "freezer.state", "FROZEN") != LB_OK)
        return LB_E_IO;
    char st[32] = "";
    /* a task in uninterruptible sleep can hold FREEZING for a while: kill
     * anyway after a bound, the pid namespace still takes the rest down */
    for (int i = 0; i < 200; i++) {
        if (cg_read(dir, "freezer.state", st, sizeof st) != LB_OK || !strncmp(st, "FROZEN", 6))
            break;
        cg_sleep_ms(1);
    }
    cg_kill_procs(dir);
    /* a group left frozen keeps its killed processes until thawed; the
     * caller's removal of the group then fails and says so */
    LB_IGNORE(cg_write(dir, "freezer.state", "THAWED"));
    return LB_OK;
}

/* follow-ups: freeze and thaw (sandbox_freeze.c) */
int lbsd_cg_freeze(const lbsd_cgroup *cg, int on)
{
    if (cg->v2[0])
        return cg_write(cg->v2, "cgroup.freeze", on ? "1" : "0");
    if (cg->frz[0])
        return cg_write(cg->frz, "freezer.state", on ? "FROZEN" : "THAWED");
    return LB_E_IO;
}

int lbsd_cg_is_frozen(const lbsd_cgroup *cg)
{
    char st[512];
    if (cg->v2[0])
        return cg_read(cg->v2, "cgroup.events", st, sizeof st) == LB_OK && strstr(st, "frozen 1") != NULL;
    return cg->frz[0] && cg_read(cg->frz, "freezer.state", st, sizeof st) == LB_OK && !strncmp(st, "FROZEN", 6);
}

int lbsd_cg_kill(const lbsd_cgroup *cg)
{
    if (cg->v2[0]) {
        /* Linux 5.14+: the kernel kills every member, new forks included */
        if (cg_write(cg->v2, "cgroup.kill", "1") == LB_OK)
            return LB_OK;
        for (int i = 0; i < 5 && cg_kill_procs(cg->v2); i++)
            ;
        return LB_E_IO;
    }
    if (cg->frz[0])
        return cg_freeze_kill(cg->frz);
    return LB_E_IO;
}

int lbsd_cg_kill_members(const lbsd_cgroup *cg)
{
    const char *dirs[] = {cg->v2, cg->pids, cg->mem, cg->frz};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (dirs[i][0])
            return cg_kill_procs(dirs[i]);
    return 0;
}

static int cg_rmdir_retry(const char *dir)
{
    /* a group whose last task just died can stay busy for a moment */
    for (int i = 0; i < 50; i++) {
        if (rmdir(dir) == 0 || errno == ENOENT)
            return LB_OK;
        if (errno != EBUSY)
            break;
        cg_sleep_ms(10);
    }
    lb_warn("cannot remove cgroup %s: %s", dir, strerror(errno));
    return LB_E_IO;
}

int lbsd_cg_remove(lbsd_cgroup *cg)
{
    int rc = LB_OK;
    char *dirs[] = {cg->v2, cg->mem, cg->pids, cg->cpu, cg->frz};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
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

static void cg_cleanup_base(const char *base, int freezer)
{
    DIR *d = opendir(base);
    if (!d)
        return;
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d))) {
        /* a sandbox's group, or a spare (lbsd_cg_retire) */
        if (!lb_id_valid(de->d_name) && strncmp(de->d_name, "spare-", 6) != 0)
            continue;
        char p[LBSD_CG_PATH];
        snprintf(p, sizeof p, "%s/%s", base, de->d_name);
        /* best effort: the /proc kills and the removal below say what is left */
        if (freezer)
            LB_IGNORE(cg_freeze_kill(p));
        else if (!strcmp(base, CG_V2_BASE))
            LB_IGNORE(cg_write(p, "cgroup.kill", "1"));
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
    /* the spares go with the rest (they are empty: nothing to kill) */
    pthread_mutex_lock(&cg_spare_mu);
    cg_nspares = 0;
    pthread_mutex_unlock(&cg_spare_mu);
    if (m == LBSD_CG_V2) {
        cg_cleanup_base(CG_V2_BASE, 0);
    } else if (m == LBSD_CG_V1) {
        /* the freezer first: it stops forks while the others are emptied */
        if (cg_v1_frz)
            cg_cleanup_base(CG_V1_FRZ, 1);
        if (cg_v1_mem)
            cg_cleanup_base(CG_V1_MEM, 0);
        if (cg_v1_pids)
            cg_cleanup_base(CG_V1_PIDS, 0);
        if (cg_v1_cpu)
            cg_cleanup_base(CG_V1_CPU, 0);
    }
}

void lbsd_cg_shutdown(void)
{
    /* the base groups are per installation (hash of the var dir); a test
     * stack's temporary var dir would otherwise leave one empty group each */
    if (!cg_v2_base[0])
        return;
    pthread_mutex_lock(&cg_spare_mu);
    while (cg_nspares > 0)
        cg_spare_drop(&cg_spares[--cg_nspares]);
    pthread_mutex_unlock(&cg_spare_mu);
    rmdir(CG_V2_BASE);
    rmdir(CG_V1_MEM);
    rmdir(CG_V1_PIDS);
    rmdir(CG_V1_CPU);
    rmdir(CG_V1_FRZ);
}
