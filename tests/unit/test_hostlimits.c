/* The budgets sandboxd derives from the host's kernel pools
 * (sandbox/hostlimits.h) and the operator caps on a spec's memory_mib and
 * pids (common/config_host.c): pure functions, checked for several hosts. */
#include "testlib.h"

#include "common/config.h"
#include "sandboxd/hostlimits.h"

#include <stdlib.h>

TEST(files_budget_configured_wins)
{
    CHECK(lbsd_files_budget(5000, 2466177, 1024) == 5000);
    CHECK(lbsd_files_budget(1u << 30, 100000, 1) == 1u << 30);
}

TEST(files_budget_derived)
{
    /* this machine: 2.4 M table, 1024 sandboxes: the floor, an eighth at most */
    uint64_t b = lbsd_files_budget(0, 2466177, 1024);
    CHECK(b == LBSD_FILES_FLOOR);
    CHECK(b <= 2466177 / LBSD_FILES_MAX_SHARE);
    /* few sandboxes: half the table shared out, but never above an eighth */
    CHECK(lbsd_files_budget(0, 2466177, 1) == 2466177 / 8);
    CHECK(lbsd_files_budget(0, 80000000, 64) == 80000000 / 2 / 64);
    /* a tiny table: the eighth wins over the floor */
    CHECK(lbsd_files_budget(0, 100000, 4) == 100000 / 8);
    /* unknown table: the floor */
    CHECK(lbsd_files_budget(0, 0, 4) == LBSD_FILES_FLOOR);
    /* nonsense sandbox_max does not divide by zero */
    CHECK(lbsd_files_budget(0, 2466177, 0) == 2466177 / 8);
}

TEST(nofile_follows_pids)
{
    /* the default sandbox: 512 pids on the floor budget: 256 per process */
    CHECK(lbsd_nofile_for(LBSD_FILES_FLOOR, 512, 20000) == 256);
    CHECK(lbsd_nofile_for(LBSD_FILES_FLOOR, 128, 20000) == 1024);
    /* never below the minimum, never above the maximum or the hard limit */
    CHECK(lbsd_nofile_for(1000, 4096, 20000) == LBSD_NOFILE_MIN);
    CHECK(lbsd_nofile_for(1u << 30, 8, 0) == LBSD_NOFILE_MAX);
    CHECK(lbsd_nofile_for(1u << 30, 8, 20000) == 20000);
    CHECK(lbsd_nofile_for(1000, 0, 0) == 500);
}

TEST(worst_case_within_budget)
{
    /* descriptors take at most half the budget, whatever pids is, as long
     * as the per-process minimum does not round up */
    static const int pids[] = {8, 16, 64, 100, 512, 1000, 2048};
    for (size_t i = 0; i < sizeof pids / sizeof pids[0]; i++) {
        uint64_t n = lbsd_nofile_for(LBSD_FILES_FLOOR, pids[i], 0);
        CHECK(lbsd_files_worst(pids[i], n) <= LBSD_FILES_FLOOR / 2);
    }
    /* the old fixed 65536 per process would have allowed 33 M for 512 pids */
    CHECK(lbsd_files_worst(512, 65536) > 2466177);
    CHECK(lbsd_files_worst(-1, 100) == 0);
}

TEST(memory_cap)
{
    CHECK(lb_cfg_cap_memory_mib(4096, 24000) == 4096);
    CHECK(lb_cfg_cap_memory_mib(0, 24000) == 12000);
    CHECK(lb_cfg_cap_memory_mib(0, 100) == 64);
    CHECK(lb_cfg_cap_memory_mib(0, 0) == 64);
    CHECK(lb_cfg_cap_memory_mib(0, (uint64_t)1 << 40) == 1 << 20);
}

TEST(pids_cap)
{
    CHECK(lb_cfg_cap_pids(4096, 32768) == 4096);
    CHECK(lb_cfg_cap_pids(30000, 32768) == 16384);
    CHECK(lb_cfg_cap_pids(4096, 4194304) == 4096);
    CHECK(lb_cfg_cap_pids(4096, 0) == 4096); /* unknown pid_max: as configured */
}

TEST(config_resolves_caps_and_lowers_defaults)
{
    setenv("LLMBOX_SANDBOX_MAX_MEMORY_MIB", "1024", 1);
    setenv("LLMBOX_SANDBOX_MAX_PIDS", "100", 1);
    unsetenv("LLMBOX_CONF");
    CHECK(lb_config_load(lb_cfg_mut()) == 0);
    const lb_config *c = lb_cfg();
    CHECK(c->sandbox_max_memory_mib == 1024);
    CHECK(c->sandbox_max_pids == 100);
    CHECK(c->sandbox_memory_mib == 1024); /* default 2048 lowered to the cap */
    CHECK(c->sandbox_pids == 100);        /* default 512 lowered to the cap */
    CHECK(c->sandbox_ptys == 256);
    CHECK(c->sandbox_files == 0);
    unsetenv("LLMBOX_SANDBOX_MAX_MEMORY_MIB");
    unsetenv("LLMBOX_SANDBOX_MAX_PIDS");
    CHECK(lb_config_load(lb_cfg_mut()) == 0);
    CHECK(c->sandbox_max_memory_mib >= 64); /* half the RAM */
    CHECK(c->sandbox_max_pids <= 4096);
    setenv("LLMBOX_SANDBOX_PTYS", "0", 1);
    CHECK(lb_config_load(lb_cfg_mut()) != 0);
    unsetenv("LLMBOX_SANDBOX_PTYS");
}

TEST(tmpfs_leaves_headroom)
{
    /* the defaults: 1 GiB disk in 2 GiB memory is kept as asked */
    CHECK(lbsd_disk_fit(2048, 1024) == 1024);
    CHECK(lbsd_shm_mib(2048) == 64);
    /* a 96 MiB sandbox asking for 512 MiB of disk: 16 MiB kept free */
    CHECK(lbsd_shm_mib(96) == 20);
    CHECK(lbsd_disk_fit(96, 512) == 60);
    CHECK(lbsd_disk_fit(96, 512) + lbsd_shm_mib(96) + LBSD_HEADROOM_MIB(96) == 96);
    /* the smallest sandbox (32 MiB) still gets a disk */
    CHECK(lbsd_disk_fit(32, 1024) == 12);
    CHECK(lbsd_shm_mib(32) == 4);
    /* for every size, the tmpfs pages and the headroom fit in memory */
    for (int m = 32; m <= 65536; m += 37) {
        CHECK(lbsd_disk_fit(m, 1 << 22) + lbsd_shm_mib(m) + LBSD_HEADROOM_MIB(m) <= m);
        CHECK(lbsd_disk_fit(m, 5) == 5 || lbsd_disk_fit(m, 5) < 5);
    }
    /* no memory limit: the disk as asked */
    CHECK(lbsd_disk_fit(0, 777) == 777);
}

int main(void)
{
    RUN(tmpfs_leaves_headroom);
    RUN(files_budget_configured_wins);
    RUN(files_budget_derived);
    RUN(nofile_follows_pids);
    RUN(worst_case_within_budget);
    RUN(memory_cap);
    RUN(pids_cap);
    RUN(config_resolves_caps_and_lowers_defaults);
    return testlib_done();
}
