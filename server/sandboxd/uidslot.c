/* One host uid range per sandbox (see uidslot.h). */
#include "sandboxd/uidslot.h"

#include "insandbox/sandbox_init.h"
#include "sandboxd/idmap.h"

#include "common/config.h"
#include "common/log.h"
#include "common/status.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SLOT_LOCK_DIR "/run/llmbox"
#define SLOT_LOCK_FILE SLOT_LOCK_DIR "/uid-slots.lock"

/* Per slot: held by one of our sandboxes, its cached user namespace.
 * Index 0 is the image's range and never held. The host-wide locks are
 * byte ranges of one file (slot_lock), so they cost one descriptor in all;
 * the namespaces are cached for the first LBSD_SLOT_NS_CACHED slots only
 * (lbsd_slot_userns), so that 10,000 sandboxes do not hold 10,000 more. */
static unsigned char *g_held;
static int *g_ns_fd;
static int g_count, g_used;
static int g_lock_fd = -1;     /* SLOT_LOCK_FILE; -1: slots are not locked host-wide */
static const lb_config *g_cfg;   /* sandboxd's, from lbsd_slot_init: the base and the paths */
/* Slots are taken and given back by the worker threads (workers.c) that
 * make and tear down sandboxes: the table and its counts under one lock.
 * g_count and g_cfg are set before the threads start. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

int lbsd_slot_count(void)
{
    return g_count;
}

int lbsd_slot_used(void)
{
    pthread_mutex_lock(&g_mu);
    int n = g_used;
    pthread_mutex_unlock(&g_mu);
    return n;
}

uint32_t lbsd_slot_root(int slot)
{
    return g_cfg->sandbox_uid_base + (uint32_t)slot * LBSD_ID_COUNT;
}

/* Slots that fit above the image's range and below the range that holds
 * (uid_t)-1, which no id map may contain: 2^32 - 65536. The default
 * (sandbox_uid_slots 4095 above base 0x70000000) ends at 2^31 - 1; more
 * slots than that are the operator's choice (uidslot.h: ids above 2^31). */
static int slot_fit(void)
{
    uint64_t base = g_cfg->sandbox_uid_base;
    uint64_t top = (1ull << 32) - LBSD_ID_COUNT;
    if (base + LBSD_ID_COUNT >= top)
        return 0;
    uint64_t n = (top - base) / LBSD_ID_COUNT - 1;
    return n > LBSD_SLOT_MAX ? LBSD_SLOT_MAX : (int)n;
}

static int slot_write(pid_t pid, const char *file, const char *line)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/%s", (int)pid, file);
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, line, strlen(line));
    int e = errno;
    close(fd);
    errno = e;
    return w == (ssize_t)strlen(line) ? 0 : -1;
}

/* A child in a new user namespace, parked on a pipe while we write its maps
 * and open its namespace; the namespace outlives it through that fd. ~1 ms
 * once per slot. */
int lbsd_userns_make(uint32_t base, uint32_t root, char *msg, size_t msgsz)
{
    int pp[2];
    if (pipe2(pp, O_CLOEXEC) != 0) {
        snprintf(msg, msgsz, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
    if (pid < 0) {
        snprintf(msg, msgsz, "cannot make a user namespace for the image's idmap: %s",
                 strerror(errno));
        close(pp[0]);
        close(pp[1]);
        return -1;
    }
    if (pid == 0) {
        /* a copy of sandboxd: keep nothing of it but the pipe */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (pp[0] > 0)
            close_range(0, (unsigned)pp[0] - 1, 0);
        close_range((unsigned)pp[0] + 1, ~0U, 0);
        char c;
        while (read(pp[0], &c, 1) < 0 && errno == EINTR)
            ;
        _exit(0);
    }
    close(pp[0]);
    char line[64];
    /* inside: the images' ids; outside: the slot's */
    snprintf(line, sizeof line, "%u %u %u\n", base, root, LBSD_ID_COUNT);
    int fd = -1;
    if (slot_write(pid, "uid_map", line) != 0 || slot_write(pid, "gid_map", line) != 0) {
        snprintf(msg, msgsz, "cannot write the id map of the image's idmap namespace: %s",
                 strerror(errno));
    } else {
        char p[64];
        snprintf(p, sizeof p, "/proc/%d/ns/user", (int)pid);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            snprintf(msg, msgsz, "cannot open %s: %s", p, strerror(errno));
    }
    close(pp[1]); /* the child's read ends: it exits */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return fd;
}

int lbsd_slot_userns(int slot, char *msg, size_t msgsz)
{
    if (slot <= 0 || slot > g_count) {
        snprintf(msg, msgsz, "no idmap for uid slot %d", slot);
        return -1;
    }
    if (slot > LBSD_SLOT_NS_CACHED) {
        snprintf(msg, msgsz, "uid slot %d's idmap namespace is made by the zygote", slot);
        return -1;
    }
    pthread_mutex_lock(&g_mu);
    if (g_ns_fd[slot] < 0)
        g_ns_fd[slot] = lbsd_userns_make(g_cfg->sandbox_uid_base, lbsd_slot_root(slot), msg, msgsz);
    int fd = g_ns_fd[slot];
    pthread_mutex_unlock(&g_mu);
    return fd;
}

/* One byte-range lock of SLOT_LOCK_FILE per slot, over its host ids (an
 * open-file-description lock: it belongs to our one descriptor, not to a
 * thread, and goes with the process). Two sandboxds whose bases differ
 * still meet where their ranges overlap. */
static int slot_lock_op(int slot, short type)
{
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET,
                       .l_start = (off_t)lbsd_slot_root(slot), .l_len = LBSD_ID_COUNT};
    return fcntl(g_lock_fd, F_OFD_SETLK, &fl);
}

/* The host-wide lock of slot (another sandboxd may hold it). 1: ours now,
 * 0: someone else's. Without the lock file, every slot is ours. */
static int slot_lock(int slot)
{
    if (g_lock_fd < 0)
        return 1;
    if (slot_lock_op(slot, F_WRLCK) == 0)
        return 1;
    if (errno == EAGAIN || errno == EACCES)
        return 0;
    lb_warn("cannot lock uid slot %d in %s (%s): taken without a host-wide lock", slot,
            SLOT_LOCK_FILE, strerror(errno));
    return 1;
}

int lbsd_slot_take(int *slot, char *msg, size_t msgsz)
{
    *slot = 0;
    if (g_count == 0)
        return LB_OK;
    int busy = 0;
    pthread_mutex_lock(&g_mu);
    /* the lowest free slot: its user namespace is most likely made already */
    for (int k = 1; k <= g_count; k++) {
        if (g_held[k])
            continue;
        if (!slot_lock(k)) {
            busy++;
            continue;
        }
        g_held[k] = 1;
        g_used++;
        *slot = k;
        pthread_mutex_unlock(&g_mu);
        return LB_OK;
    }
    pthread_mutex_unlock(&g_mu);
    snprintf(msg, msgsz, "all %d sandbox uid ranges are in use (%d by this sandboxd, %d by "
                         "another one on this host; LLMBOX_SANDBOX_UID_SLOTS)",
             g_count, g_used, busy);
    return LB_E_UNAVAILABLE;
}

void lbsd_slot_release(int slot)
{
    if (slot <= 0 || slot > g_count)
        return; /* slot 0: the shared range, never held */
    pthread_mutex_lock(&g_mu);
    if (!g_held[slot]) { /* one not held: lbsd_slot_init gives back every slot */
        pthread_mutex_unlock(&g_mu);
        return;
    }
    /* a held slot is counted in g_used: the count cannot go below zero */
    LB_ASSERT(g_used > 0);
    g_held[slot] = 0;
    g_used--;
    if (g_lock_fd >= 0 && slot_lock_op(slot, F_UNLCK) != 0)
        lb_warn("cannot unlock uid slot %d in %s: %s", slot, SLOT_LOCK_FILE, strerror(errno));
    pthread_mutex_unlock(&g_mu);
}

/* Whether an overlay can have an idmapped lower layer on the image store's
 * filesystem: tried once, in a child with a mount namespace of its own (a
 * tmpfs on var/sandboxes there holds the layers). Returns 0, or -1 with
 * what failed in why. */
static int slot_probe(int nsfd, char *why, size_t whysz)
{
    const lb_config *cfg = g_cfg;
    char scratch[LB_CFG_PATH + 32];
    snprintf(scratch, sizeof scratch, "%s/sandboxes", cfg->var_dir);
    const char *src = access(cfg->image_store, F_OK) == 0 ? cfg->image_store : cfg->var_dir;
    int pp[2];
    if (pipe2(pp, O_CLOEXEC) != 0) {
        snprintf(why, whysz, "pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, whysz, "fork: %s", strerror(errno));
        close(pp[0]);
        close(pp[1]);
        return -1;
    }
    if (pid == 0) {
        close(pp[0]);
        const char *step = "unshare a mount namespace";
        int ok = unshare(CLONE_NEWNS) == 0;
        if (ok && !(ok = mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0))
            step = "make the mounts private";
        if (ok && !(ok = mount("tmpfs", scratch, "tmpfs", 0, "size=64k") == 0))
            step = "mount a tmpfs";
        if (ok && !(ok = chdir(scratch) == 0 && mkdir("lower", 0755) == 0 &&
                        mkdir("upper", 0755) == 0 && mkdir("work", 0755) == 0 &&
                        mkdir("merged", 0755) == 0))
            step = "make the layer dirs";
        int t = -1;
        if (ok && !(ok = (t = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)) >= 0))
            step = "open_tree (kernel < 5.12?)";
        struct mount_attr a = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)nsfd};
        if (ok && !(ok = mount_setattr(t, "", AT_EMPTY_PATH, &a, sizeof a) == 0))
            step = "idmapped mount (kernel < 5.12, or the filesystem has no idmap support)";
        if (ok && !(ok = move_mount(t, "", AT_FDCWD, "lower", MOVE_MOUNT_F_EMPTY_PATH) == 0))
            step = "move_mount";
        if (ok && !(ok = mount("overlay", "merged", "overlay", 0,
                               "lowerdir=lower,upperdir=upper,workdir=work") == 0))
            step = "overlay on an idmapped lower layer (kernel < 5.19?)";
        if (!ok) {
            char line[256];
            int n = snprintf(line, sizeof line, "%s: %s", step, strerror(errno));
            if (write(pp[1], line, (size_t)n) < 0)
                _exit(2);
            _exit(1);
        }
        _exit(0);
    }
    close(pp[1]);
    ssize_t n = read(pp[0], why, whysz - 1);
    close(pp[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (n <= 0)
        snprintf(why, whysz, "the probe died (status %d)", st);
    else
        why[n] = '\0';
    return -1;
}

static void slot_warn_shared(const char *why)
{
    uint32_t b = g_cfg->sandbox_uid_base;
    lb_warn("every sandbox runs as the same host ids %u..%u (%s). The kernel's per-user "
            "counters of those ids are then shared by all sandboxes: pipe buffer pages "
            "(fs.pipe-user-pages-soft: one sandbox holding pipes shrinks every other sandbox's "
            "new pipes to 8 KiB and makes F_SETPIPE_SZ fail), unix fds in flight (past "
            "RLIMIT_NOFILE every SCM_RIGHTS fails with ETOOMANYREFS), epoll watches "
            "(fs.epoll.max_user_watches), locked memory of io_uring/perf/AF_XDP rings, watch "
            "queues and key quotas; and, with host root (the owner of their user namespaces), "
            "inotify instances and watches (user.max_inotify_instances), fanotify groups, nested "
            "namespaces, POSIX mqueue bytes and pending signals",
            b, b + LBSD_ID_COUNT - 1, why);
}

void lbsd_slot_init(const lb_config *cfg)
{
    g_cfg = cfg;
    int want = cfg->sandbox_uid_slots, fit = slot_fit();
    /* (called once by sandboxd; again only by the unit tests) */
    for (int k = 1; k <= g_count; k++) {
        lbsd_slot_release(k);
        if (g_ns_fd[k] >= 0)
            close(g_ns_fd[k]);
    }
    free(g_held);
    free(g_ns_fd);
    g_held = NULL;
    g_ns_fd = NULL;
    if (g_lock_fd >= 0)
        close(g_lock_fd);
    g_lock_fd = -1;
    g_count = g_used = 0;
    if (want == 0) {
        slot_warn_shared("LLMBOX_SANDBOX_UID_SLOTS=0");
        return;
    }
    if (fit == 0) {
        slot_warn_shared("LLMBOX_SANDBOX_UID_BASE leaves no room for a second range below 2^32");
        return;
    }
    int n = want < fit ? want : fit;
    if (want > fit)
        lb_info("LLMBOX_SANDBOX_UID_SLOTS=%d: only %d ranges fit below 2^32 - 65536 above base %u",
                want, fit, cfg->sandbox_uid_base);
    g_held = calloc((size_t)n + 1, 1);
    g_ns_fd = malloc(((size_t)n + 1) * sizeof(int));
    if (!g_held || !g_ns_fd) {
        slot_warn_shared("out of memory for the slot table");
        return;
    }
    for (int k = 0; k <= n; k++)
        g_ns_fd[k] = -1;
    g_count = n; /* lbsd_slot_userns needs it */
    char msg[512] = "", why[512] = "";
    int ns = lbsd_slot_userns(1, msg, sizeof msg);
    if (ns < 0 || slot_probe(ns, why, sizeof why) != 0) {
        g_count = 0;
        char full[600];
        snprintf(full, sizeof full, "no idmapped overlay here: %s", ns < 0 ? msg : why);
        slot_warn_shared(full);
        return;
    }
    if (lb_mkdirs(SLOT_LOCK_DIR, 0755) == LB_OK)
        g_lock_fd = open(SLOT_LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (g_lock_fd < 0)
        lb_warn("cannot open %s (%s): uid slots are not locked host-wide; another sandboxd on "
                "this host with an overlapping range would share them", SLOT_LOCK_FILE,
                strerror(errno));
    lb_info("each sandbox gets its own host uid range: %d slots of %u ids, host ids %u..%u "
            "(slot 0, %u.., is the images')",
            n, LBSD_ID_COUNT, lbsd_slot_root(1), lbsd_slot_root(n) + LBSD_ID_COUNT - 1,
            cfg->sandbox_uid_base);
    if ((uint64_t)lbsd_slot_root(n) + LBSD_ID_COUNT - 1 > 0x7fffffffu)
        lb_info("uid slots from %u up use host ids at or above 2^31 (%u..): the kernel and "
                "llmbox keep ids unsigned, but a host tool that holds them in a signed int shows "
                "them negative, and systemd's docs reserve that range (LLMBOX_SANDBOX_UID_SLOTS)",
                (unsigned)((0x80000000u - cfg->sandbox_uid_base) / LBSD_ID_COUNT),
                0x80000000u);
    if (cfg->sandbox_max > n)
        lb_warn("LLMBOX_SANDBOX_MAX=%d is above the %d uid slots: creates beyond %d live "
                "sandboxes (the warm pool's included) are refused", cfg->sandbox_max, n, n);
}
