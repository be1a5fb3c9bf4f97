/* cgroup.c against simulated cgroup trees (cgroupfs_model.h): v2 as on a
 * pure-v2 host (Debian 12 with systemd), v1 as on this machine, and none.
 * Each test asserts what the module writes (values, format, order), reads
 * (oom_kill) and does to processes (attach, kill) and groups (remove).
 * The same code against the real kernel: test_cgroup_kernel.c. */
#include "testlib.h"

#include "cgroupfs_model.h"
#include "children.h"

#include "common/config.h"
#include "common/status.h"
#include "sandboxd/cgroup.h"
#include "sandboxd/stale.h"


#define ID1 "0123456789abcdef0123456789abcdef"
#define ID2 "fedcba9876543210fedcba9876543210"

static char tmp[128];   /* holds the tree and the captured log */
static char tree[192];  /* the simulated /sys/fs/cgroup */
static char warned[8192];
static const char *tag; /* llmbox-<hash of the var dir> */

/* ---- helpers ------------------------------------------------------------ */

static pid_t kids[32];
static int nkids;

/* A child that waits to be killed. */
static pid_t sleeper(void)
{
    pid_t p = child_start();
    if (p == 0) {
        for (;;)
            pause();
    }
    if (p > 0 && nkids < (int)(sizeof kids / sizeof kids[0]))
        kids[nkids++] = p;
    return p;
}

/* Whatever a failed check left alive. */
static void kids_reap(void)
{
    for (int i = 0; i < nkids; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
        model_exited(kids[i]);
    }
    nkids = 0;
}

/* A fresh tree; the module probes again at its next call. */
static void fresh(void)
{
    kids_reap();
    model_reset(tree);
    CHECK(lbsd_cg_set_root(model_root) == LB_OK);
    unsetenv("LLMBOX_SANDBOX_NO_CGROUP");
}

static char *file_of(const char *rel, char *out, size_t outsz)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", model_root, rel);
    char *slash = strrchr(dir, '/');
    *slash = '\0';
    if (model_get(dir, slash + 1, out, outsz) != 0)
        snprintf(out, outsz, "(absent)");
    out[strcspn(out, "\n")] = '\0'; /* first line */
    return out;
}

/* The first line of root/<rel>, or "(absent)". */
static int file_is(const char *rel, const char *want)
{
    char got[512];
    file_of(rel, got, sizeof got);
    if (strcmp(got, want))
        printf("    %s is \"%s\", not \"%s\"\n", rel, got, want);
    return !strcmp(got, want);
}

static int exists(const char *rel)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", model_root, rel);
    return access(p, F_OK) == 0;
}

static int logged(const char *want)
{
    int ok = strstr(model_log, want) != NULL;
    if (!ok)
        printf("    not written: %s    writes were:\n%s", want, model_log);
    return ok;
}

/* Runs the statement with stderr (the module's log lines) kept in warned. */
#define CAPTURE(stmt)                                                          \
    do {                                                                       \
        char lp_[256];                                                         \
        snprintf(lp_, sizeof lp_, "%s/log", tmp);                              \
        int lf_ = open(lp_, O_RDWR | O_CREAT | O_TRUNC, 0600), e_ = dup(2);    \
        dup2(lf_, 2);                                                          \
        stmt;                                                                  \
        dup2(e_, 2);                                                           \
        close(e_);                                                             \
        ssize_t r_ = pread(lf_, warned, sizeof warned - 1, 0);                 \
        warned[r_ > 0 ? r_ : 0] = '\0';                                        \
        close(lf_);                                                            \
    } while (0)

/* The signal that ended pid (0: it exited; -1: it did not end within a
 * second). The kernel lists it nowhere now. */
static int reaped_by(pid_t pid)
{
    int sig = child_end_signal(pid, 1000);
    model_exited(pid);
    return sig;
}

static void rel_of(char *out, size_t outsz, const char *id, const char *file)
{
    snprintf(out, outsz, "%s/%s%s%s", tag, id, file ? "/" : "", file ? file : "");
}

/* ---- v2 ------------------------------------------------------------------ */

TEST(v2_probe_enables_the_controllers_on_the_way_down)
{
    fresh();
    model_layout_v2("cpuset cpu io memory hugetlb pids");
    CHECK(lbsd_cg_detect() == LBSD_CG_V2);
    CHECK_STR(lbsd_cg_mode_name(lbsd_cg_detect()), "v2");
    char want[512];
    snprintf(want, sizeof want,
             "cgroup.subtree_control=+memory +pids\ncgroup.subtree_control=+cpu\n"
             "%s/cgroup.subtree_control=+memory +pids\n%s/cgroup.subtree_control=+cpu\n",
             tag, tag);
    CHECK_STR(model_log, want);
    CHECK(file_is("cgroup.subtree_control", "cpu memory pids"));
    snprintf(want, sizeof want, "%s/cgroup.subtree_control", tag);
    CHECK(file_is(want, "cpu memory pids"));
}

TEST(v2_create_writes_the_limits)
{
    fresh();
    model_layout_v2("cpu memory pids");
    lbsd_cgroup cg;
    CHECK(lbsd_cg_create(&cg, ID1, 512ull << 20, 64, 1500) == LB_OK);
    char want[512], rel[256];
    snprintf(want, sizeof want, "%s/%s/%s", model_root, tag, ID1);
    CHECK_STR(cg.v2, want);
    CHECK(cg.made && !cg.mem[0] && !cg.pids[0] && !cg.cpu[0] && !cg.frz[0]);
    rel_of(rel, sizeof rel, ID1, "memory.max");
    CHECK(file_is(rel, "536870912"));
    rel_of(rel, sizeof rel, ID1, "memory.swap.max");
    CHECK(file_is(rel, "0"));
    rel_of(rel, sizeof rel, ID1, "pids.max");
    CHECK(file_is(rel, "64"));
    rel_of(rel, sizeof rel, ID1, "cpu.max"); /* 1.5 cores: 150 ms each 100 ms */
    CHECK(file_is(rel, "150000 100000"));
    CHECK(lbsd_cg_remove(&cg) == LB_OK && !cg.made);
    rel_of(rel, sizeof rel, ID1, NULL);
    CHECK(!exists(rel));
    /* the smallest CPU limit the RPC and the config take is the kernel's 1 ms */
    CHECK(lbsd_cg_create(&cg, ID1, 64ull << 20, 16, 10) == LB_OK);
    rel_of(rel, sizeof rel, ID1, "cpu.max");
    CHECK(file_is(rel, "1000 100000"));
    LB_IGNORE(lbsd_cg_remove(&cg)); /* cleanup; the next test resets the model tree */
}

TEST(v2_no_cpu_limit_leaves_cpu_max_alone)
{
    fresh();
    model_layout_v2("cpu memory pids");
    lbsd_cgroup cg;
    CHECK(lbsd_cg_create(&cg, ID1, 256ull << 20, 32, 0) == LB_OK);
    char rel[256];
    rel_of(rel, sizeof rel, ID1, "cpu.max");
    CHECK(file_is(rel, "max 100000"));
    CHECK(!strstr(model_log, "cpu.max"));
    LB_IGNORE(lbsd_cg_remove(&cg)); /* cleanup; the next test resets the model tree */
}

TEST(v2_a_refused_limit_fails_the_create_and_leaves_no_group)
{
    fresh();
    model_layout_v2("cpu memory pids");
    lbsd_cgroup cg;
    /* below the kernel's minimum quota (what the config let through before) */
    CAPTURE(CHECK(lbsd_cg_create(&cg, ID1, 256ull << 20, 32, 5) == LB_E_SANDBOX));
    CHECK(strstr(warned, "cgroup setup for sandbox " ID1 " failed: Invalid argument"));
    char rel[256];
    rel_of(rel, sizeof rel, ID1, NULL);
    CHECK(!exists(rel) && !cg.made);
}

TEST(v2_attach_oom_count_kill_and_remove)
{
    fresh();
    model_layout_v2("cpu memory pids");
    lbsd_cgroup cg;
    CHECK(lbsd_cg_create(&cg, ID1, 256ull << 20, 32, 0) == LB_OK);
    pid_t p = sleeper();
    CHECK(lbsd_cg_attach(&cg, p) == LB_OK);
    char rel[256], want[64];
    rel_of(rel, sizeof rel, ID1, "cgroup.procs");
    snprintf(want, sizeof want, "%d", (int)p);
    CHECK(file_is(rel, want));
    /* OOM kills: memory.events' oom_kill, as the kernel counts them */
    CHECK(lbsd_cg_oom_kills(&cg) == 0);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", cg.v2);
    model_put(dir, "memory.events", "low 0\nhigh 0\nmax 9\noom 5\noom_kill 3\noom_group_kill 0\n");
    CHECK(lbsd_cg_oom_kills(&cg) == 3);
    /* a group with a live member cannot go (retried for a while, then a warning) */
    CAPTURE(CHECK(lbsd_cg_remove(&cg) == LB_E_IO));
    CHECK(strstr(warned, "cannot remove cgroup") && strstr(warned, "Device or resource busy"));
    rel_of(rel, sizeof rel, ID1, NULL);
    CHECK(exists(rel) && cg.made);
    /* kill through cgroup.kill */
    CHECK(lbsd_cg_kill(&cg) == LB_OK);
    rel_of(rel, sizeof rel, ID1, "cgroup.kill=1\n");
    CHECK(logged(rel));
    CHECK(reaped_by(p) == SIGKILL);
    CHECK(lbsd_cg_remove(&cg) == LB_OK && !cg.made);
    rel_of(rel, sizeof rel, ID1, NULL);
    CHECK(!exists(rel));
}

TEST(v2_without_cgroup_kill_signals_the_members_and_says_so)
{
    fresh();
    model_layout_v2("cpu memory pids");
    model_has_cgroup_kill = 0; /* Linux before 5.14 */
    lbsd_cgroup cg;
    CHECK(lbsd_cg_create(&cg, ID1, 256ull << 20, 32, 0) == LB_OK);
    pid_t p = sleeper();
    CHECK(lbsd_cg_attach(&cg, p) == LB_OK);
    /* LB_E_IO: the caller adds its /proc scan; the listed member got SIGKILL */
    CHECK(lbsd_cg_kill(&cg) == LB_E_IO);
    CHECK(reaped_by(p) == SIGKILL);
    CHECK(lbsd_cg_remove(&cg) == LB_OK);
}

TEST(v2_pooled_sandbox_relimit)
{
    fresh();
    model_layout_v2("cpu memory pids");
    lbsd_cgroup cg;
    CHECK(lbsd_cg_create(&cg, ID1, 2048ull << 20, 512, 0) == LB_OK);
    CHECK(lbsd_cg_set_memory(&cg, 2048ull << 20, 256ull << 20) == LB_OK);
    CHECK(lbsd_cg_set_pids(&cg, 100) == LB_OK);
    char rel[256];
    rel_of(rel, sizeof rel, ID1, "memory.max");
    CHECK(file_is(rel, "268435456"));
    rel_of(rel, sizeof rel, ID1, "pids.max");
    CHECK(file_is(rel, "100"));
    LB_IGNORE(lbsd_cg_remove(&cg)); /* cleanup; the next test resets the model tree */
}

TEST(v2_startup_cleanup_kills_and_removes_stale_groups)
{
    fresh();
    model_layout_v2("cpu memory pids");
    lbsd_cgroup a, b;
    CHECK(lbsd_cg_create(&a, ID1, 256ull << 20, 32, 0) == LB_OK);
    CHECK(lbsd_cg_create(&b, ID2, 256ull << 20, 32, 0) == LB_OK);
    pid_t pa = sleeper(), pb = sleeper();
    CHECK(lbsd_cg_attach(&a, pa) == LB_OK && lbsd_cg_attach(&b, pb) == LB_OK);
    char other[PATH_MAX];
    snprintf(other, sizeof other, "%s/%s/not-a-sandbox", model_root, tag);
    mkdir(other, 0755); /* not ours to remove: not an id */
    /* a new sandboxd starts: it probes again and cleans up */
    CHECK(lbsd_cg_set_root(model_root) == LB_OK);
    CAPTURE(lbsd_cg_cleanup_stale());
    CHECK(reaped_by(pa) == SIGKILL && reaped_by(pb) == SIGKILL);
    char rel[256];
    rel_of(rel, sizeof rel, ID1, "cgroup.kill=1\n");
    CHECK(logged(rel));
    rel_of(rel, sizeof rel, ID1, NULL);
    CHECK(!exists(rel));
    rel_of(rel, sizeof rel, ID2, NULL);
    CHECK(!exists(rel));
    rel_of(rel, sizeof rel, "not-a-sandbox", NULL);
    CHECK(exists(rel));
    CHECK(strstr(warned, "removed 2 stale cgroup(s)") && !strstr(warned, "cannot remove"));
    /* a clean exit removes the base only when it is empty */
    lbsd_cg_shutdown();
    CHECK(exists(tag));
    rmdir(other);
    lbsd_cg_shutdown();
    CHECK(!exists(tag));
}

TEST(v2_without_cpu_controller_warns_once_and_carries_on)
{
    fresh();
    model_layout_v2("memory pids");
    CHECK(lbsd_cg_detect() == LBSD_CG_V2);
    lbsd_cgroup a, b;
    CAPTURE(CHECK(lbsd_cg_create(&a, ID1, 256ull << 20, 32, 500) == LB_OK));
    CHECK(strstr(warned, "no cgroup cpu controller: CPU limits (cpu_milli) are not enforced"));
    char rel[256];
    rel_of(rel, sizeof rel, ID1, "cpu.max");
    CHECK(!exists(rel));
    rel_of(rel, sizeof rel, ID1, "memory.max");
    CHECK(file_is(rel, "268435456"));
    CAPTURE(CHECK(lbsd_cg_create(&b, ID2, 256ull << 20, 32, 500) == LB_OK));
    CHECK(!strstr(warned, "cpu controller")); /* once */
    LB_IGNORE(lbsd_cg_remove(&a)); /* cleanup; the next test resets the model tree */
    LB_IGNORE(lbsd_cg_remove(&b)); /* cleanup; the next test resets the model tree */
}

TEST(v2_without_swap_accounting_is_fine)
{
    fresh();
    model_layout_v2("cpu memory pids");
    model_swap_accounting = 0;
    lbsd_cgroup cg;
    CHECK(lbsd_cg_create(&cg, ID1, 256ull << 20, 32, 0) == LB_OK);
    char rel[256];
    rel_of(rel, sizeof rel, ID1, "memory.max");
    CHECK(file_is(rel, "268435456"));
    LB_IGNORE(lbsd_cg_remove(&cg)); /* cleanup; the next test resets the model tree */
}

TEST(v2_without_pids_falls_back_to_v1)
{
    fresh();
    model_layout_v2("cpu memory");
    model_layout_v1("memory pids cpu freezer");
    CAPTURE(CHECK(lbsd_cg_detect() == LBSD_CG_V1));
    CHECK(!exists(tag));             /* no v2 base group made */
    CHECK(!strstr(warned, "cgroup v2 not usable")); /* it never offered pids */
    CHECK(!strstr(model_log, "cgroup.subtree_control"));
}

TEST(v2_controllers_that_cannot_be_enabled_fall_back_and_say_why)
{
    /* a container's cgroup namespace: its root holds processes, so the
     * kernel enables nothing below it */
    fresh();
    model_layout_v2("cpu memory pids");
    model_ns_root = 1;
    char me[32];
    snprintf(me, sizeof me, "%d\n", (int)getpid());
    model_put(model_root, "cgroup.procs", me);
    CAPTURE(CHECK(lbsd_cg_detect() == LBSD_CG_RLIMIT));
    char want[512];
    snprintf(want, sizeof want, "v2: cannot enable memory and pids in %s/%s: No such file or directory", model_root,
             tag);
    CHECK(strstr(warned, want));
    CHECK(!exists(tag)); /* the empty base group is not left behind */
    /* with v1 hierarchies there too, v1 is used and the reason logged */
    fresh();
    model_layout_v2("cpu memory pids");
    model_ns_root = 1;
    model_put(model_root, "cgroup.procs", me);
    model_layout_v1("memory pids");
    CAPTURE(CHECK(lbsd_cg_detect() == LBSD_CG_V1));
    CHECK(strstr(warned, "cgroup v2 not usable (cannot enable memory and pids"));
}

/* ---- v1 ------------------------------------------------------------------ */

TEST(v1_create_writes_the_limits)
{
    fresh();
    model_layout_v1("memory pids cpu freezer");
    CAPTURE(CHECK(lbsd_cg_detect() == LBSD_CG_V1));
    CHECK(!strstr(warned, "missing") && !strstr(warned, "freezer"));
    lbsd_cgroup cg;
    CHECK(lbsd_cg_create(&cg, ID1, 512ull << 20, 64, 1500) == LB_OK);
    char rel[256];
    snprintf(rel, sizeof rel, "memory/%s/%s/memory.limit_in_bytes", tag, ID1);
    CHECK(file_is(rel, "536870912"));
    snprintf(rel, sizeof rel, "memory/%s/%s/memory.memsw.limit_in_bytes", tag, ID1);
    CHECK(file_is(rel, "536870912"));
    snprintf(rel, sizeof rel, "memory/%s/%s/memory.swappiness", tag, ID1);
    CHECK(file_is(rel, "0"));
    snprintf(rel, sizeof rel, "pids/%s/%s/pids.max", tag, ID1);
    CHECK(file_is(rel, "64"));
    snprintf(rel, sizeof rel, "cpu/%s/%s/cpu.cfs_period_us", tag, ID1);
    CHECK(file_is(rel, "100000"));
    snprintf(rel, sizeof rel, "cpu/%s/%s/cpu.cfs_quota_us", tag, ID1);
    CHECK(file_is(rel, "150000"));
    snprintf(rel, sizeof rel, "freezer/%s/%s", tag, ID1);
    CHECK(exists(rel) && !cg.v2[0]);
    CHECK(lbsd_cg_remove(&cg) == LB_OK);
    CHECK(!exists(rel));
    /* without a CPU limit, no cpu group at all */
    CHECK(lbsd_cg_create(&cg, ID1, 512ull << 20, 64, 0) == LB_OK);
    snprintf(rel, sizeof rel, "cpu/%s/%s", tag, ID1);
    CHECK(!cg.cpu[0] && !exists(rel));
    LB_IGNORE(lbsd_cg_remove(&cg)); /* cleanup; the next test resets the model tree */
}

TEST(v1_relimit_keeps_memsw_above_the_limit)
{
    fresh();
    model_layout_v1("memory pids");
    lbsd_cgroup cg;
    CHECK(lbsd_cg_create(&cg, ID1, 512ull << 20, 64, 0) == LB_OK);
    /* up: memsw first; down: the limit first (the model, as the kernel,
     * refuses the other order) */
    model_log[0] = '\0';
    CHECK(lbsd_cg_set_memory(&cg, 512ull << 20, 1024ull << 20) == LB_OK);
    char want[512];
    snprintf(want, sizeof want,
             "memory/%s/%s/memory.memsw.limit_in_bytes=1073741824\nmemory/%s/%s/memory.limit_in_bytes=1073741824\n", tag,
             ID1, tag, ID1);
    CHECK_STR(model_log, want);
    model_log[0] = '\0';
    CHECK(lbsd_cg_set_memory(&cg, 1024ull << 20, 256ull << 20) == LB_OK);
    snprintf(want, sizeof want,
             "memory/%s/%s/memory.limit_in_bytes=268435456\nmemory/%s/%s/memory.memsw.limit_in_bytes=268435456\n", tag,
             ID1, tag, ID1);
    CHECK_STR(model_log, want);
    CHECK(lbsd_cg_set_pids(&cg, 7) == LB_OK);
    snprintf(want, sizeof want, "pids/%s/%s/pids.max", tag, ID1);
    CHECK(file_is(want, "7"));
    LB_IGNORE(lbsd_cg_remove(&cg)); /* cleanup; the next test resets the model tree */
}

TEST(v1_attach_oom_count_freeze_kill_and_remove)
{
    fresh();
    model_layout_v1("memory pids cpu freezer");
    lbsd_cgroup cg;
    CHECK(lbsd_cg_create(&cg, ID1, 256ull << 20, 32, 100) == LB_OK);
    pid_t p = sleeper();
    CHECK(lbsd_cg_attach(&cg, p) == LB_OK);
    char rel[256], want[32];
    snprintf(want, sizeof want, "%d", (int)p);
    const char *hiers[] = {"memory", "pids", "cpu", "freezer"};
    for (int i = 0; i < 4; i++) {
        snprintf(rel, sizeof rel, "%s/%s/%s/cgroup.procs", hiers[i], tag, ID1);
        CHECK(file_is(rel, want));
    }
    CHECK(lbsd_cg_oom_kills(&cg) == 0);
    model_put(cg.mem, "memory.oom_control", "oom_kill_disable 0\nunder_oom 1\noom_kill 2\n");
    CHECK(lbsd_cg_oom_kills(&cg) == 2);
    model_log[0] = '\0';
    CHECK(lbsd_cg_kill(&cg) == LB_OK);
    char seq[512];
    snprintf(seq, sizeof seq, "freezer/%s/%s/freezer.state=FROZEN\nfreezer/%s/%s/freezer.state=THAWED\n", tag, ID1,
             tag, ID1);
    CHECK_STR(model_log, seq);
    CHECK(reaped_by(p) == SIGKILL);
    CHECK(lbsd_cg_remove(&cg) == LB_OK && !cg.made);
    for (int i = 0; i < 4; i++) {
        snprintf(rel, sizeof rel, "%s/%s/%s", hiers[i], tag, ID1);
        CHECK(!exists(rel));
    }
}

/* follow-ups: freeze and thaw write the freezer; frozen is what the group says */
TEST(freeze_and_thaw_write_the_freezer)
{
    fresh();
    model_layout_v1("memory pids cpu freezer");
    lbsd_cgroup cg;
    CHECK(lbsd_cg_create(&cg, ID1, 256ull << 20, 32, 0) == LB_OK);
    CHECK(!lbsd_cg_is_frozen(&cg));
    CHECK(lbsd_cg_freeze(&cg, 1) == LB_OK && lbsd_cg_is_frozen(&cg));
    CHECK(lbsd_cg_freeze(&cg, 0) == LB_OK && !lbsd_cg_is_frozen(&cg));
    CHECK(lbsd_cg_remove(&cg) == LB_OK);

    fresh();
    model_layout_v2("cpu memory pids");
    CHECK(lbsd_cg_create(&cg, ID1, 256ull << 20, 32, 0) == LB_OK);
    model_log[0] = '\0';
    CHECK(lbsd_cg_freeze(&cg, 1) == LB_OK);
    char rel[256];
    rel_of(rel, sizeof rel, ID1, "cgroup.freeze=1\n");
    CHECK(logged(rel));
    /* asynchronous: frozen only once cgroup.events says so */
    CHECK(!lbsd_cg_is_frozen(&cg));
    model_put(cg.v2, "cgroup.events", "populated 1\nfrozen 1\n");
    CHECK(lbsd_cg_is_frozen(&cg));
    CHECK(lbsd_cg_freeze(&cg, 0) == LB_OK);
    rel_of(rel, sizeof rel, ID1, "cgroup.freeze=0\n");
    CHECK(logged(rel));
    CHECK(lbsd_cg_remove(&cg) == LB_OK);

    /* no freezer at all: the caller stops the processes itself */
    fresh();
    model_layout_v1("memory pids cpu");
    CAPTURE(CHECK(lbsd_cg_create(&cg, ID1, 256ull << 20, 32, 0) == LB_OK));
    CHECK(lbsd_cg_freeze(&cg, 1) == LB_E_IO && !lbsd_cg_is_frozen(&cg));
    CHECK(lbsd_cg_remove(&cg) == LB_OK);
}

/* A destroyed sandbox's empty groups are kept as spares (renamed) and the
 * next create takes them: new limits written, the old OOM kills not its
 * own, no cpu group carried over; a group that still holds a process is
 * never kept; startup cleanup and shutdown remove spares. */
TEST(v1_spare_groups_are_reused_with_their_own_limits)
{
    fresh();
    model_layout_v1("memory pids cpu freezer");
    lbsd_cgroup cg;
    char rel[256];
    const char *kept[] = {"memory", "pids", "freezer"};
    CHECK(lbsd_cg_create(&cg, ID1, 256ull << 20, 32, 100) == LB_OK);
    pid_t p = sleeper();
    CHECK(lbsd_cg_attach(&cg, p) == LB_OK);
    model_put(cg.mem, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
    CHECK(lbsd_cg_oom_kills(&cg) == 2);
    CHECK(lbsd_cg_kill(&cg) == LB_OK);
    CHECK(reaped_by(p) == SIGKILL);
    CHECK(lbsd_cg_retire(&cg, 256ull << 20) == LB_OK && !cg.made);
    for (int i = 0; i < 3; i++) {
        snprintf(rel, sizeof rel, "%s/%s/%s", kept[i], tag, ID1);
        CHECK(!exists(rel));
        snprintf(rel, sizeof rel, "%s/%s/spare-0", kept[i], tag);
        CHECK(exists(rel));
    }
    snprintf(rel, sizeof rel, "cpu/%s/%s", tag, ID1);
    CHECK(!exists(rel));
    snprintf(rel, sizeof rel, "cpu/%s/spare-0", tag);
    CHECK(!exists(rel));

    /* the next create: the spare, renamed, with this sandbox's limits */
    CHECK(lbsd_cg_create(&cg, ID2, 128ull << 20, 16, 0) == LB_OK && cg.made);
    for (int i = 0; i < 3; i++) {
        snprintf(rel, sizeof rel, "%s/%s/spare-0", kept[i], tag);
        CHECK(!exists(rel));
        snprintf(rel, sizeof rel, "%s/%s/%s", kept[i], tag, ID2);
        CHECK(exists(rel));
    }
    CHECK(!cg.cpu[0]);
    snprintf(rel, sizeof rel, "memory/%s/%s/memory.limit_in_bytes", tag, ID2);
    CHECK(file_is(rel, "134217728"));
    snprintf(rel, sizeof rel, "pids/%s/%s/pids.max", tag, ID2);
    CHECK(file_is(rel, "16"));
    CHECK(lbsd_cg_oom_kills(&cg) == 0); /* the last tenant's two */
    model_put(cg.mem, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
    CHECK(lbsd_cg_oom_kills(&cg) == 1);

    /* a group that still holds a process is removed, never kept */
    pid_t q = sleeper();
    CHECK(lbsd_cg_attach(&cg, q) == LB_OK);
    CAPTURE(CHECK(lbsd_cg_retire(&cg, 128ull << 20) == LB_E_IO));
    snprintf(rel, sizeof rel, "memory/%s/spare-1", tag);
    CHECK(!exists(rel));
    CHECK(lbsd_cg_kill(&cg) == LB_OK);
    CHECK(reaped_by(q) == SIGKILL);
    CHECK(lbsd_cg_remove(&cg) == LB_OK);

    /* a spare left by a crash goes at the next start; shutdown removes the rest */
    CHECK(lbsd_cg_create(&cg, ID1, 64ull << 20, 8, 0) == LB_OK);
    CHECK(lbsd_cg_retire(&cg, 64ull << 20) == LB_OK);
    snprintf(rel, sizeof rel, "memory/%s/spare-1", tag);
    CHECK(exists(rel));
    lbsd_cg_cleanup_stale();
    CHECK(!exists(rel));
    /* no spare now: a new group, without a word about spares */
    CAPTURE(CHECK(lbsd_cg_create(&cg, ID1, 64ull << 20, 8, 0) == LB_OK));
    CHECK(!strstr(warned, "spare"));
    snprintf(rel, sizeof rel, "memory/%s/%s/memory.limit_in_bytes", tag, ID1);
    CHECK(file_is(rel, "67108864"));
    CHECK(lbsd_cg_retire(&cg, 64ull << 20) == LB_OK);
    lbsd_cg_shutdown();
    for (int i = 0; i < 3; i++) {
        snprintf(rel, sizeof rel, "%s/%s", kept[i], tag);
        CHECK(!exists(rel));
    }
}

static int exists_spare_v2(int n)
{
    char rel[256];
    snprintf(rel, sizeof rel, "%s/spare-%d", tag, n);
    return exists(rel);
}

/* v1 destroy: whatever the groups list is killed, without the freezer */
TEST(v1_kill_members_kills_what_the_groups_list)
{
    fresh();
    model_layout_v1("memory pids freezer");
    lbsd_cgroup cg;
    CHECK(lbsd_cg_create(&cg, ID1, 256ull << 20, 32, 0) == LB_OK);
    pid_t a = sleeper(), b = sleeper();
    CHECK(lbsd_cg_attach(&cg, a) == LB_OK && lbsd_cg_attach(&cg, b) == LB_OK);
    model_log[0] = '\0';
    CHECK(lbsd_cg_kill_members(&cg) == 2);
    CHECK(!strstr(model_log, "freezer.state")); /* no freeze, no wait */
    CHECK(reaped_by(a) == SIGKILL && reaped_by(b) == SIGKILL);
    CHECK(lbsd_cg_kill_members(&cg) == 0);
    CHECK(lbsd_cg_remove(&cg) == LB_OK);
}

/* v2: a spare's cpu.max is written either way (a limit, or none); a
 * frozen group is never kept */
TEST(v2_spare_group_gets_its_cpu_limit_written)
{
    fresh();
    model_layout_v2("cpu memory pids");
    lbsd_cgroup cg;
    char rel[256];
    CHECK(lbsd_cg_create(&cg, ID1, 256ull << 20, 32, 500) == LB_OK);
    /* a group left frozen is not kept */
    CHECK(lbsd_cg_freeze(&cg, 1) == LB_OK);
    CHECK(lbsd_cg_retire(&cg, 256ull << 20) == LB_OK);
    CHECK(!exists_spare_v2(0));
    rel_of(rel, sizeof rel, ID1, NULL);
    CHECK(!exists(rel));
    CHECK(lbsd_cg_create(&cg, ID1, 256ull << 20, 32, 500) == LB_OK);
    CHECK(lbsd_cg_retire(&cg, 256ull << 20) == LB_OK);
    CHECK(exists_spare_v2(0));
    CHECK(lbsd_cg_create(&cg, ID2, 512ull << 20, 64, 0) == LB_OK);
    rel_of(rel, sizeof rel, ID2, "cpu.max");
    CHECK(file_is(rel, "max 100000"));
    rel_of(rel, sizeof rel, ID2, "memory.max");
    CHECK(file_is(rel, "536870912"));
    rel_of(rel, sizeof rel, ID1, NULL);
    CHECK(!exists(rel));
    CHECK(lbsd_cg_remove(&cg) == LB_OK);
}

TEST(v1_startup_cleanup_kills_and_removes_stale_groups)
{
    fresh();
    model_layout_v1("memory pids freezer");
    lbsd_cgroup cg;
    CHECK(lbsd_cg_create(&cg, ID1, 256ull << 20, 32, 0) == LB_OK);
    pid_t p = sleeper();
    CHECK(lbsd_cg_attach(&cg, p) == LB_OK);
    CHECK(lbsd_cg_set_root(model_root) == LB_OK);
    CAPTURE(lbsd_cg_cleanup_stale());
    CHECK(reaped_by(p) == SIGKILL);
    char rel[256];
    const char *hiers[] = {"memory", "pids", "freezer"};
    for (int i = 0; i < 3; i++) {
        snprintf(rel, sizeof rel, "%s/%s/%s", hiers[i], tag, ID1);
        CHECK(!exists(rel));
    }
    CHECK(!strstr(warned, "cannot remove"));
}

TEST(v1_missing_controllers_are_logged)
{
    fresh();
    model_layout_v1("memory cpu");
    CAPTURE(CHECK(lbsd_cg_detect() == LBSD_CG_V1));
    CHECK(strstr(warned, "cgroup v1: the pids controller is missing; that limit is not enforced"));
    CHECK(strstr(warned, "cgroup v1: no freezer hierarchy"));
    lbsd_cgroup cg;
    CHECK(lbsd_cg_create(&cg, ID1, 256ull << 20, 32, 0) == LB_OK);
    CHECK(cg.mem[0] && !cg.pids[0] && !cg.frz[0]);
    pid_t p = sleeper();
    CHECK(lbsd_cg_attach(&cg, p) == LB_OK);
    CHECK(lbsd_cg_kill(&cg) == LB_E_IO); /* no freezer: the caller's /proc scan */
    kill(p, SIGKILL);
    reaped_by(p);
    CHECK(lbsd_cg_remove(&cg) == LB_OK);
}

/* ---- none ---------------------------------------------------------------- */

TEST(no_tree_means_rlimits_and_a_warning)
{
    fresh();
    CAPTURE(CHECK(lbsd_cg_detect() == LBSD_CG_RLIMIT));
    char want[512];
    snprintf(want, sizeof want, "no writable cgroup v2 (memory+pids) or v1 hierarchy under %s: memory is limited",
             model_root);
    CHECK(strstr(warned, want));
    lbsd_cgroup cg;
    CHECK(lbsd_cg_create(&cg, ID1, 256ull << 20, 32, 500) == LB_OK);
    CHECK(!cg.made && !cg.v2[0] && !cg.mem[0]);
    CHECK(lbsd_cg_attach(&cg, getpid()) == LB_OK);
    CHECK(lbsd_cg_oom_kills(&cg) == 0);
    CHECK(lbsd_cg_kill(&cg) == LB_E_IO);
    CHECK(model_log[0] == '\0');
}

TEST(no_cgroup_variable_wins_over_a_v2_tree)
{
    fresh();
    model_layout_v2("cpu memory pids");
    setenv("LLMBOX_SANDBOX_NO_CGROUP", "1", 1);
    CAPTURE(CHECK(lbsd_cg_detect() == LBSD_CG_RLIMIT));
    CHECK(strstr(warned, "cgroups disabled by LLMBOX_SANDBOX_NO_CGROUP"));
    CHECK(model_log[0] == '\0' && !exists(tag));
    unsetenv("LLMBOX_SANDBOX_NO_CGROUP");
}

TEST(root_path_is_bounded)
{
    char big[LBSD_CG_ROOT_MAX + 8];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK(lbsd_cg_set_root(big) == LB_E_INVAL);
    CHECK(lbsd_cg_set_root("") == LB_E_INVAL);
}

int main(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/llmbox-cgtest-XXXXXX");
    if (!mkdtemp(tmp)) {
        printf("FAIL setup: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    snprintf(tree, sizeof tree, "%s/cgroup", tmp);
    snprintf(lb_cfg_mut()->var_dir, sizeof lb_cfg_mut()->var_dir, "%s/var", tmp);
    lbsd_install_tag_init(lb_cfg()->var_dir);
    tag = lbsd_install_tag();
    RUN(v2_probe_enables_the_controllers_on_the_way_down);
    RUN(v2_create_writes_the_limits);
    RUN(v2_no_cpu_limit_leaves_cpu_max_alone);
    RUN(v2_a_refused_limit_fails_the_create_and_leaves_no_group);
    RUN(v2_attach_oom_count_kill_and_remove);
    RUN(v2_without_cgroup_kill_signals_the_members_and_says_so);
    RUN(v2_pooled_sandbox_relimit);
    RUN(v2_startup_cleanup_kills_and_removes_stale_groups);
    RUN(v2_without_cpu_controller_warns_once_and_carries_on);
    RUN(v2_without_swap_accounting_is_fine);
    RUN(v2_without_pids_falls_back_to_v1);
    RUN(v2_controllers_that_cannot_be_enabled_fall_back_and_say_why);
    RUN(v1_create_writes_the_limits);
    RUN(v1_relimit_keeps_memsw_above_the_limit);
    RUN(v1_attach_oom_count_freeze_kill_and_remove);
    RUN(freeze_and_thaw_write_the_freezer);
    RUN(v1_spare_groups_are_reused_with_their_own_limits);
    RUN(v2_spare_group_gets_its_cpu_limit_written);
    RUN(v1_kill_members_kills_what_the_groups_list);
    RUN(v1_startup_cleanup_kills_and_removes_stale_groups);
    RUN(v1_missing_controllers_are_logged);
    RUN(no_tree_means_rlimits_and_a_warning);
    RUN(no_cgroup_variable_wins_over_a_v2_tree);
    RUN(root_path_is_bounded);
    kids_reap();
    model_root[0] = '\0';
    nftw(tmp, model_rm, 16, FTW_DEPTH | FTW_PHYS);
    return testlib_done();
}
