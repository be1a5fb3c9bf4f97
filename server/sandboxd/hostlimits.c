/* Host-wide kernel pools and what sandboxd assumes about them (see
 * hostlimits.h). Everything here runs once, at start; the numbers it
 * derives are used at each create (sandbox_create.c) and by the file
 * watch (filewatch.c). */
#include "sandboxd/hostlimits.h"

#include "sandboxd/filewatch.h"

#include "common/config.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static lbsd_host g_host;

uint64_t lbsd_files_budget(uint64_t configured, uint64_t file_max, int sandbox_max)
{
    if (configured > 0)
        return configured;
    if (!file_max)
        return LBSD_FILES_FLOOR; /* unknown table: the floor, and the log says so */
    uint64_t share = file_max / 2 / (uint64_t)(sandbox_max > 0 ? sandbox_max : 1);
    uint64_t cap = file_max / LBSD_FILES_MAX_SHARE;
    if (share < LBSD_FILES_FLOOR)
        share = LBSD_FILES_FLOOR;
    return share < cap ? share : cap;
}

uint64_t lbsd_nofile_for(uint64_t budget, int pids, uint64_t hard)
{
    uint64_t n = budget / 2 / (uint64_t)(pids > 0 ? pids : 1);
    if (n < LBSD_NOFILE_MIN)
        n = LBSD_NOFILE_MIN;
    if (n > LBSD_NOFILE_MAX)
        n = LBSD_NOFILE_MAX;
    if (hard && n > hard)
        n = hard;
    return n;
}

uint64_t lbsd_files_worst(int pids, uint64_t nofile)
{
    return (uint64_t)(pids > 0 ? pids : 0) * nofile;
}

int lbsd_shm_mib(int memory_mib)
{
    if (memory_mib <= 0)
        return LBSD_SHM_MAX_MIB;
    int left = (memory_mib - LBSD_HEADROOM_MIB(memory_mib)) / 4;
    return left < 1 ? 1 : left > LBSD_SHM_MAX_MIB ? LBSD_SHM_MAX_MIB : left;
}

int lbsd_disk_fit(int memory_mib, int disk_mib)
{
    if (memory_mib <= 0)
        return disk_mib;
    int fit = memory_mib - LBSD_HEADROOM_MIB(memory_mib) - lbsd_shm_mib(memory_mib);
    if (fit < 1)
        fit = 1;
    return disk_mib < fit ? disk_mib : fit;
}

const lbsd_host *lbsd_host_get(void)
{
    return &g_host;
}

static uint64_t hl_read(const char *path, int field)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    unsigned long long v[3] = {0, 0, 0};
    int n = fscanf(f, "%llu %llu %llu", &v[0], &v[1], &v[2]);
    fclose(f);
    return n > field ? v[field] : 0;
}

/* Whether sandboxd may set oom_score_adj -1000 on a child: the write needs
 * CAP_SYS_RESOURCE, which root in a container often lacks. Tried on a
 * child that only waits to be killed, never on a sandbox. */
static int hl_probe_oom_shield(void)
{
    pid_t pid = fork();
    if (pid < 0)
        return 0;
    if (pid == 0) {
        pause();
        _exit(0);
    }
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/oom_score_adj", (int)pid);
    int ok = 0, fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        ok = write(fd, "-1000", 5) == 5;
        close(fd);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return ok;
}

static double hl_pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void hl_log_files(const lb_config *cfg)
{
    const lbsd_host *h = &g_host;
    int pids = cfg->sandbox_pids;
    uint64_t nofile = lbsd_nofile_for(h->files_budget, pids, h->nofile_hard);
    uint64_t all = h->files_budget * (uint64_t)cfg->sandbox_max;
    lb_info("open files: fs.file-max %llu, fs.nr_open %llu, vm.max_map_count %llu, RLIMIT_NOFILE "
            "hard limit here %llu; each sandbox may hold %llu files (%s; %.1f%% of the table), "
            "half of them through descriptors: a sandbox with %d pids gets RLIMIT_NOFILE %llu per "
            "process; files held without one (mmap of a closed file, up to vm.max_map_count per "
            "process) are counted every %d ms once the table grows, and a sandbox over its budget "
            "is destroyed; worst case for all %d sandboxes (LLMBOX_SANDBOX_MAX): %llu (%.0f%% of "
            "the table)",
            (unsigned long long)h->file_max, (unsigned long long)h->nr_open,
            (unsigned long long)h->map_max, (unsigned long long)h->nofile_hard,
            (unsigned long long)h->files_budget,
            cfg->sandbox_files > 0 ? "LLMBOX_SANDBOX_FILES" : "derived from fs.file-max",
            hl_pct(h->files_budget, h->file_max), pids, (unsigned long long)nofile,
            LBSD_FILEWATCH_MS, cfg->sandbox_max, (unsigned long long)all,
            hl_pct(all, h->file_max));
    if (!h->file_max)
        lb_warn("open files: cannot read /proc/sys/fs/file-max; assuming a per-sandbox budget of "
                "%llu files", (unsigned long long)h->files_budget);
    else if (all > h->file_max / 2)
        lb_warn("open files: %d sandboxes at their file budget could take more than half of "
                "fs.file-max (%llu); the table runs out only with %llu or more sandboxes at their "
                "limit at once: lower LLMBOX_SANDBOX_MAX or LLMBOX_SANDBOX_FILES if that many can "
                "be hostile",
                cfg->sandbox_max, (unsigned long long)h->file_max,
                (unsigned long long)(h->file_max / h->files_budget));
}

static void hl_log_ptys(const lb_config *cfg)
{
    const lbsd_host *h = &g_host;
    uint64_t shared = h->pty_max > h->pty_reserve ? h->pty_max - h->pty_reserve : 0;
    uint64_t all = (uint64_t)cfg->sandbox_ptys * (uint64_t)cfg->sandbox_max;
    lb_info("ptys: kernel.pty.max %llu, kernel.pty.reserve %llu (kept for the host's own ptys: "
            "sandboxes share the other %llu); each sandbox's devpts has max=%d "
            "(LLMBOX_SANDBOX_PTYS); worst case for all %d sandboxes: %llu",
            (unsigned long long)h->pty_max, (unsigned long long)h->pty_reserve,
            (unsigned long long)shared, cfg->sandbox_ptys, cfg->sandbox_max,
            (unsigned long long)all);
    if (shared && all > shared)
        lb_warn("ptys: %llu sandboxes at their pty limit (%d each) take the %llu ptys that "
                "sandboxes share; the host keeps its reserve of %llu either way",
                (unsigned long long)((shared + (uint64_t)cfg->sandbox_ptys - 1) /
                                     (uint64_t)cfg->sandbox_ptys),
                cfg->sandbox_ptys, (unsigned long long)shared,
                (unsigned long long)h->pty_reserve);
}

void lbsd_host_init(const lb_config *cfg)
{
    lbsd_host *h = &g_host;
    memset(h, 0, sizeof *h);
    h->file_max = hl_read("/proc/sys/fs/file-max", 0);
    h->nr_open = hl_read("/proc/sys/fs/nr_open", 0);
    h->map_max = hl_read("/proc/sys/vm/max_map_count", 0);
    h->pty_max = hl_read("/proc/sys/kernel/pty/max", 0);
    h->pty_reserve = hl_read("/proc/sys/kernel/pty/reserve", 0);
    h->pid_max = hl_read("/proc/sys/kernel/pid_max", 0);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY)
        h->nofile_hard = (uint64_t)rl.rlim_max;
    if (h->nr_open && (!h->nofile_hard || h->nofile_hard > h->nr_open))
        h->nofile_hard = h->nr_open;
    h->files_budget = lbsd_files_budget((uint64_t)cfg->sandbox_files, h->file_max, cfg->sandbox_max);
    h->oom_shield = hl_probe_oom_shield();

    hl_log_files(cfg);
    hl_log_ptys(cfg);
    lb_info("limits: a spec may ask for at most %d MiB of memory (LLMBOX_SANDBOX_MAX_MEMORY_MIB%s) "
            "and %d pids (LLMBOX_SANDBOX_MAX_PIDS, at most half of kernel.pid_max %llu); "
            "defaults %d MiB, %d pids",
            cfg->sandbox_max_memory_mib, cfg->sandbox_max_memory_mib > 0 ? "" : ": half the RAM",
            cfg->sandbox_max_pids, (unsigned long long)h->pid_max, cfg->sandbox_memory_mib,
            cfg->sandbox_pids);
    if (h->oom_shield)
        lb_info("OOM: sandbox init is shielded (oom_score_adj -1000); the shell and everything "
                "it starts run at 0");
    else
        lb_warn("OOM: sandbox init cannot be shielded here (oom_score_adj -1000 needs "
                "CAP_SYS_RESOURCE, which this root lacks): every sandbox process but init runs "
                "at oom_score_adj 1000, so the OOM killer takes them before init; init dies "
                "only when nothing else in the sandbox is left to kill (memory held by its "
                "tmpfs), and the sandbox then answers that its init was OOM-killed");
}
