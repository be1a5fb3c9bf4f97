/*
 * The sandbox's pid 1. The zygote (zygote.h) clone()s this, as a child of
 * sandboxd, with new mount, pid, net, ipc and uts namespaces; still host root, it builds the sandbox's
 * filesystem and network (so those namespaces stay owned by the host's user
 * namespace: nothing in the sandbox can ever remount, unmount or configure
 * them), then enters a new user namespace in which it is root while being
 * the first host uid of the sandbox's own range (uidslot.h), drops
 * privileges, and serves sandboxd on the control socket:
 *
 *   sandboxd -> init   "GO" + 3 fds              (after cgroup attach; the first
 *                                                shell's stdin, stdout, stderr)
 *                      "MAPPED"                  (uid_map and gid_map written)
 *                      "SPAWN" + 3 fds (SCM_RIGHTS: stdin, stdout, stderr)
 *                      "PARK <seq>" + 3 fds (sandboxd's ends of the shell's pipes:
 *                                      keep them while it has no room, fdpark.h)
 *                      "UNPARK"                  (it took them back: drop ours)
 *   init -> sandboxd   "USERNS"                  (please write my id maps)
 *                      "READY <n>" | "ERR <why>" (set up; the first shell is pid n)
 *                      "PID <n>"                 (the new shell, pid inside)
 *                      "EXIT <n> <wait status>"  (the shell died)
 *                      "PARKED <seq> <a> <b> <c>" (where the parked fds are in our table)
 *
 * It reaps every orphan of the sandbox. When sandboxd goes away (socket
 * EOF, or PR_SET_PDEATHSIG), it exits and the kernel kills the rest of the
 * pid namespace and drops its mounts.
 */
#include "insandbox/sandbox_init.h"

#include "sandboxd/boot_id.h"
#include "sandboxd/fdpass.h"
#include "sandboxd/hostlimits.h"
#include "sandboxd/idmap.h"
#include "sandboxd/image_layers.h"
#include "sandboxd/image_user.h"
#include "sandboxd/sandbox_proc.h"
#include "sandboxd/seccomp.h"

#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#define INIT_CTL_FD 3
#define INIT_IDMAP_FD 4   /* the idmap user namespace (lbsd_init_cfg.idmap_fd), until mounted */
#define INIT_UPPER_FD LBSD_INIT_UPPER_FD /* sandboxd.h (follow-ups) */

static int g_idmap_fd = -1;

/* Init is cloned by the zygote (zygote.h), a fresh single-threaded image,
 * so glibc's own setresuid and fork would be safe here. It still changes
 * its ids and forks the shell with the raw system calls: they were needed
 * while init was a clone of multithreaded sandboxd (glibc would signal
 * "other threads" that are not in this process and wait for ever, fork()
 * would take locks another thread held), and they keep init independent of
 * which process clones it. */
static int init_setresuid(uid_t id)
{
    return (int)syscall(SYS_setresuid, id, id, id);
}

static int init_setresgid(gid_t id)
{
    return (int)syscall(SYS_setresgid, id, id, id);
}

static int init_setgroups_none(void)
{
    return (int)syscall(SYS_setgroups, 0, NULL);
}


static void init_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void init_send(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof msg)
        n = sizeof msg - 1;
    while (send(INIT_CTL_FD, msg, (size_t)n, MSG_NOSIGNAL) < 0 && errno == EINTR)
        ;
}

__attribute__((noreturn)) static void init_fail(const char *what)
{
    init_send("ERR %s: %s", what, strerror(errno));
    _exit(1);
}

static void init_mount(const char *src, const char *dst, const char *type, unsigned long fl,
                       const char *data)
{
    if (mount(src, dst, type, fl, data) != 0) {
        char what[256];
        snprintf(what, sizeof what, "mount %.16s on %.200s", type ? type : "bind", dst);
        init_fail(what);
    }
}

/* Read-only bind of a path onto itself (a no-op if the path is absent). */
static void init_ro(const char *p)
{
    struct stat st;
    if (lstat(p, &st) != 0)
        return;
    if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) != 0 ||
        mount(NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              NULL) != 0)
        init_fail(p);
}

/* Hides a /proc file or dir that leaks host kernel state or controls. */
static void init_mask(const char *p, char *null_ro, size_t null_rosz)
{
    struct stat st;
    if (lstat(p, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        init_mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,mode=555");
    } else if (null_ro[0]) {
        /* a bind of a bind keeps its ro,nosuid,noexec: one mount, not two */
        init_mount(null_ro, p, NULL, MS_BIND, NULL);
    } else {
        /* reads as empty; read-only so that no writable mount lacks nodev */
        init_mount("/dev/null", p, NULL, MS_BIND, NULL);
        init_mount(NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL);
        snprintf(null_ro, null_rosz, "%s", p);
    }
}

/* Best effort: a per-network-namespace sysctl, written through the
 * sandbox's own /proc (proc_dir) before it is made read-only. Not through
 * the host's: there the dentries of /proc/sys/net of every network
 * namespace that ever looked share one parent, and each lookup compares
 * them all (proc_sys_compare: 6% of the host's CPU while creating the
 * 3,000th sandbox, bench/RESULTS.md). */
static void init_net_sysctl(const char *proc_dir, const char *name, const char *val)
{
    char p[1300];
    snprintf(p, sizeof p, "%s/sys/net/ipv4/%s", proc_dir, name);
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t w = write(fd, val, strlen(val));
    (void)w;
    close(fd);
}

/* The sandbox's own boot id (sandboxd/boot_id.h): a file in the scratch
 * tmpfs (the working folder here, out of the sandbox's sight once the root
 * is pivoted), bound read-only over the host's. */
static void init_chown(const char *p, uint32_t base);

static void init_boot_id(const char *root, uint32_t uid_root)
{
    char p[1200], id[LBSD_BOOT_ID_LEN + 1];
    struct stat st;
    snprintf(p, sizeof p, "%s/proc/sys/kernel/random/boot_id", root);
    if (lstat(p, &st) != 0)
        return; /* a kernel without it: nothing to stand in for */
    int fd = open(LBSD_BOOT_ID_FILE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
    if (fd < 0 || lbsd_boot_id_new(id) != LB_OK || write(fd, id, LBSD_BOOT_ID_LEN) != LBSD_BOOT_ID_LEN)
        init_fail("write the boot id");
    close(fd);
    init_chown(LBSD_BOOT_ID_FILE, uid_root); /* the sandbox's root's, as the kernel's is root's */
    init_mount(LBSD_BOOT_ID_FILE, p, NULL, MS_BIND, NULL);
    init_mount(NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
}

static void init_proc(const char *root, uint32_t uid_root)
{
    char p[1200], null_ro[1200] = "";
    snprintf(p, sizeof p, "%s/proc", root);
    mkdir(p, 0555);
    init_mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    /* binding to ports below 1024 and ICMP echo sockets (ping) are checked
     * against the network namespace's owner, the host: allow them for the
     * sandbox's ids in its own network namespace */
    init_net_sysctl(p, "ip_unprivileged_port_start", "0");
    char range[64];
    snprintf(range, sizeof range, "%u %u", uid_root, uid_root + LBSD_ID_COUNT - 1);
    init_net_sysctl(p, "ping_group_range", range);
    /* The sandbox's root is not host root, so the kernel already refuses
     * it the host's sysctls and triggers; read-only and masked anyway, as
     * Docker does, in case a kernel bug forgets a check. Host-wide
     * information and triggers are masked.
     * Host-identifying files are masked too: the kernel's command line
     * (cmdline: boot options, often the host's root device, console and
     * hypervisor hints) and its boot configuration, the kernel config, the
     * loaded modules (what a kernel exploit would aim at) and the key
     * counts of every host uid (key-users). What stays visible is listed
     * in docs/SANDBOX.md ("What /proc shows"). */
    static const char *const ro[] = {"sys", "irq", "bus", "fs", "sysrq-trigger"};
    static const char *const masked[] = {"kcore",      "keys",       "timer_list",  "timer_stats",
                                         "sched_debug", "kallsyms",  "acpi",        "asound",
                                         "scsi",       "latency_stats", "kpagecount", "kpageflags",
                                         "kpagecgroup", "config.gz", "vmcore",      "firmware",
                                         "kmsg",       "cmdline",    "bootconfig",  "modules",
                                         "key-users"};
    for (size_t i = 0; i < sizeof ro / sizeof ro[0]; i++) {
        snprintf(p, sizeof p, "%s/proc/%s", root, ro[i]);
        init_ro(p);
    }
    for (size_t i = 0; i < sizeof masked / sizeof masked[0]; i++) {
        snprintf(p, sizeof p, "%s/proc/%s", root, masked[i]);
        init_mask(p, null_ro, sizeof null_ro);
    }
    init_boot_id(root, uid_root);
}

static void init_chown(const char *p, uint32_t base)
{
    if (lchown(p, (uid_t)base, (gid_t)base) != 0)
        init_fail(p);
}

static void init_dev(const char *root, uint32_t base, int ptys, int shm_mib)
{
    char p[1200], q[1200], opts[128];
    snprintf(p, sizeof p, "%s/dev", root);
    mkdir(p, 0755);
    /* not nodev: the few nodes below must work; it is made read-only once
     * they exist, and the sandbox can never mknod (no CAP_MKNOD towards the
     * host's user namespace) */
    init_mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=1024k,nr_inodes=256");
    init_chown(p, base);
    static const struct {
        const char *name;
        unsigned maj, min;
    } nodes[] = {{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7},
                 {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
        snprintf(p, sizeof p, "%s/dev/%s", root, nodes[i].name);
        if (mknod(p, S_IFCHR | 0666, makedev(nodes[i].maj, nodes[i].min)) != 0)
            init_fail(p);
        chmod(p, 0666); /* mknod obeys the umask */
        init_chown(p, base);
    }
    snprintf(p, sizeof p, "%s/dev/pts", root);
    mkdir(p, 0755);
    /* gid 5: Debian's tty group, as the sandbox sees it */
    /* max=: this instance's own share of the host's pty pool
     * (kernel.pty.max, of which every non-initial devpts shares all but
     * kernel.pty.reserve): without it one sandbox could take them all */
    snprintf(opts, sizeof opts, "newinstance,ptmxmode=0666,mode=0620,gid=%u,max=%d", base + 5,
             ptys);
    init_mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC, opts);
    snprintf(p, sizeof p, "%s/dev/shm", root);
    mkdir(p, 01777);
    /* sized with the disk to leave the sandbox room to run (hostlimits.h) */
    snprintf(opts, sizeof opts, "mode=1777,size=%dm,uid=%u,gid=%u",
             shm_mib, base, base);
    init_mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, opts);
    static const char *const links[][2] = {{"pts/ptmx", "ptmx"},      {"/proc/self/fd", "fd"},
                                           {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"},
                                           {"/proc/self/fd/2", "stderr"}};
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        snprintf(q, sizeof q, "%s/dev/%s", root, links[i][1]);
        if (symlink(links[i][0], q) != 0)
            init_fail(q);
        init_chown(q, base);
    }
    /* /dev is the one mount that is not nodev: nothing may be added to it */
    snprintf(p, sizeof p, "%s/dev", root);
    init_mount(NULL, p, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL);
}

static void init_loopback(void)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        init_fail("socket for lo");
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    if (ioctl(s, SIOCGIFFLAGS, &ifr) != 0)
        init_fail("SIOCGIFFLAGS lo");
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0)
        init_fail("SIOCSIFFLAGS lo");
    close(s);
}

static void init_mkdir_owned(const char *p, mode_t mode, uint32_t base)
{
    if (mkdir(p, mode) != 0 || chmod(p, mode) != 0)
        init_fail(p);
    init_chown(p, base);
}

/* A layered image's record, held with a shared flock for as long as init
 * lives (the fd is kept, far above the fixed numbers): `llmbox image
 * rm|gc` see the image in use even across a restart of sandboxd
 * (images/image_admin.h). */
static void init_hold_image(const char *record)
{
    int fd = open(record, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || flock(fd, LOCK_SH) != 0)
        init_fail("hold the image's record (was it removed?)");
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, 100);
    if (hi < 0)
        init_fail("keep the image's record open");
    close(fd);
}

/* The image as ./lower (cwd: the scratch tmpfs): with a slot of its own,
 * an idmapped clone that shows the images' ids (slot 0 on disk) as the
 * sandbox's range, so its root owns its system and nothing it does is
 * counted against another sandbox's host ids; else a plain bind. Either way
 * the overlay names it by a relative path, and nothing of the host's
 * layout reaches the sandbox's mount table. */
static void init_lower(const lbsd_init_cfg *cfg)
{
    if (mkdir("lower", 0755) != 0)
        init_fail("mkdir lower");
    if (cfg->hold)
        init_hold_image(cfg->hold);
    if (g_idmap_fd < 0) {
        init_mount(cfg->lower, "lower", NULL, MS_BIND, NULL);
        return;
    }
    int t = open_tree(AT_FDCWD, cfg->lower, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (t < 0)
        init_fail("open_tree of the image");
    struct mount_attr a = {.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
                                       MOUNT_ATTR_NODEV,
                           .userns_fd = (uint64_t)g_idmap_fd};
    if (mount_setattr(t, "", AT_EMPTY_PATH, &a, sizeof a) != 0)
        init_fail("idmapped mount of the image");
    if (move_mount(t, "", AT_FDCWD, "lower", MOVE_MOUNT_F_EMPTY_PATH) != 0)
        init_fail("move_mount of the image");
    close(t);
    close(g_idmap_fd);
    g_idmap_fd = -1;
}

/* A layered image has no /testbed/input and /testbed/output of its own
 * (a debootstrap image's builder makes them): made in the sandbox's layer,
 * after the pivot (so nothing outside the sandbox's root can be reached
 * through a symlink the image holds), owned by the image's user so that its
 * commands may write their output there. */
static void init_testbed(const lbsd_init_cfg *cfg)
{
    uint32_t owner = cfg->uid_root + (uint32_t)(cfg->uid > 0 ? cfg->uid : 0);
    uint32_t group = cfg->uid_root + (uint32_t)(cfg->gid > 0 ? cfg->gid : 0);
    static const char *const dirs[] = {"/testbed", "/testbed/input", "/testbed/output"};
    for (size_t i = 0; i < 3; i++) {
        struct stat st;
        if (lstat(dirs[i], &st) == 0)
            continue; /* the image's own, as it made it */
        if (mkdir(dirs[i], 0755) != 0 || lchown(dirs[i], i ? owner : cfg->uid_root, i ? group : cfg->uid_root) != 0)
            init_fail(dirs[i]);
    }
}

static void init_filesystem(const lbsd_init_cfg *cfg)
{
    char opts[256];
    uint32_t root = cfg->uid_root;
    /* nothing we mount may leak back to the host, and nothing the host
     * mounts later should appear here */
    init_mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
    /* The disk quota: one tmpfs of disk_mib holds the overlay's writable
     * layer and /tmp, mounted in this mount namespace only, so it vanishes
     * with the sandbox even if sandboxd dies. Its pages are RAM (and count
     * toward the sandbox's memory cgroup when the sandbox writes them). */
    snprintf(opts, sizeof opts, "size=%dm,mode=0700", cfg->disk_mib);
    init_mount("tmpfs", cfg->scratch, "tmpfs", MS_NOSUID | MS_NODEV, opts);
    /* From here on every path is relative to the scratch tmpfs: overlayfs
     * shows its layer paths as given in the sandbox's /proc/self/mountinfo,
     * and the host's (var/sandboxes/<id>, the image store) are none of the
     * sandbox's business. */
    if (chdir(cfg->scratch) != 0)
        init_fail("chdir to the scratch dir");
    /* upper/ is the sandbox's "/": its owner and mode are what the sandbox
     * sees for its root directory */
    init_mkdir_owned("upper", 0755, root);
    if (mkdir("work", 0700) != 0 || mkdir("merged", 0755) != 0)
        init_fail("scratch dirs");
    init_mkdir_owned("tmp", 01777, root);
    init_lower(cfg);
    /* nodev: a device node that reaches the image or the upper layer is
     * inert. Not nosuid: E2B's user runs sudo (seccomp.h). A setuid file
     * here raises only to ids of the sandbox's own range, only in a process
     * without no_new_privs (E2B's, as a named user: the shell and the
     * native API's processes set it), and only inside this mount
     * namespace, which no host process enters (the lower layers, the
     * scratch tmpfs and /tmp stay nosuid). The source names this installation
     * (lbsd_install_tag, handed in as cfg->tag), which is how stale.c
     * finds a sandbox's processes after a crash of sandboxd. */
    /* redirect_dir=off (follow-ups): a renamed image folder is copied, so
     * the upper layer alone says what the sandbox holds (a save reads it) */
    /* a layered image: lower is its store's layers/, each layer a
     * lowerdir of its own (image_layers.h), top first */
    char ovl[LBSD_LOWERDIRS_MAX + 96];
    snprintf(ovl, sizeof ovl, "lowerdir=%s,upperdir=upper,workdir=work,redirect_dir=off",
             cfg->lowerdirs ? cfg->lowerdirs : "lower");
    init_mount(cfg->tag, "merged", "overlay", MS_NODEV, ovl);
    /* follow-ups: keep the upper dir (INIT_UPPER_FD) for saves */
    int up = open("upper", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (up < 0 || (up != INIT_UPPER_FD && dup3(up, INIT_UPPER_FD, O_CLOEXEC) < 0))
        init_fail("keep the upper dir");
    if (up != INIT_UPPER_FD)
        close(up);
    init_proc("merged", root);
    init_dev("merged", root, cfg->ptys, lbsd_shm_mib((int)(cfg->memory_bytes >> 20)));
    mkdir("merged/tmp", 01777);
    /* a bind of the quota tmpfs keeps its nosuid,nodev */
    init_mount("tmp", "merged/tmp", NULL, MS_BIND, NULL);
    /* the old root goes away entirely: pivot, then detach it */
    if (chdir("merged") != 0)
        init_fail("chdir to the new root");
    if (syscall(SYS_pivot_root, ".", ".") != 0)
        init_fail("pivot_root");
    if (umount2(".", MNT_DETACH) != 0)
        init_fail("detach the old root");
    if (chdir("/") != 0)
        init_fail("chdir /");
    if (cfg->lowerdirs)
        init_testbed(cfg);
}

/* Set while still host root: raising a hard limit needs CAP_SYS_RESOURCE
 * towards the host, which the sandbox never has afterwards. */
static void init_limits(const lbsd_init_cfg *cfg)
{
    struct rlimit core = {0, 0}, nofile = {(rlim_t)cfg->nofile, (rlim_t)cfg->nofile};
    /* no single file larger than the whole writable layer; one MiB over
     * it, so that filling the layer with one file ends in ENOSPC from the
     * tmpfs (an error the writer can report) rather than in SIGXFSZ */
    rlim_t fsz = ((rlim_t)cfg->disk_mib + 1) << 20;
    struct rlimit fsize = {fsz, fsz};
    if (setrlimit(RLIMIT_CORE, &core) != 0 || setrlimit(RLIMIT_FSIZE, &fsize) != 0)
        init_fail("setrlimit");
    /* The sandbox's share of the host's file table, per process
     * (hostlimits.h: budget / 2 / pids). sandboxd already capped it at its
     * own hard limit; should setrlimit fail anyway, as many as it has. */
    if (setrlimit(RLIMIT_NOFILE, &nofile) != 0 && getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
        nofile.rlim_cur = nofile.rlim_max;
        setrlimit(RLIMIT_NOFILE, &nofile);
    }
    if (cfg->rlimit_mode) {
        /* approximate: per process, counts address space, not memory */
        struct rlimit as = {cfg->memory_bytes, cfg->memory_bytes};
        setrlimit(RLIMIT_AS, &as);
        /* counted per user and user namespace: each uid inside each
         * sandbox gets this many (the kernel's root exemption is for host
         * root only) */
        struct rlimit np = {(rlim_t)cfg->pids, (rlim_t)cfg->pids};
        setrlimit(RLIMIT_NPROC, &np);
    }
}

/* A user namespace's owner is the euid that made it, and the kernel charges
 * the per-user counts of everyone inside (inotify instances and watches,
 * fanotify groups, nested namespaces, POSIX mqueue bytes, pending signals)
 * to that owner in the parent namespace too. Made by host root, every
 * sandbox and host root itself drew on one count: one sandbox holding 128
 * inotify instances (user.max_inotify_instances) left none for any other
 * sandbox, nor for root's daemons. So the namespace is made as the
 * sandbox's own root on the host, keeping the capabilities (for hosts that
 * allow user namespaces to privileged processes only). The owner's
 * RLIMIT_NPROC (ours now) then also caps the sandbox's processes together. */
static void init_become_owner(uint32_t root)
{
    if (init_setgroups_none() != 0 || prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0)
        init_fail("keep capabilities");
    if (init_setresgid(root) != 0 || init_setresuid(root) != 0)
        init_fail("become the sandbox's root on the host");
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d) != 0)
        init_fail("capget");
    for (int i = 0; i < 2; i++)
        d[i].effective = d[i].permitted;
    if (syscall(SYS_capset, &h, d) != 0)
        init_fail("capset");
}

/* Becomes root of a new user namespace whose ids sandboxd maps to the
 * sandbox's host range (uidslot.h). */
static void init_userns(const lbsd_init_cfg *cfg)
{
    /* Only with a range of its own: in the shared range (uidslot.h) every
     * sandbox's owner would be the same host uid, and the owner's
     * RLIMIT_NPROC at creation would then cap all sandboxes' processes
     * together. There host root stays the owner, as before. */
    if (cfg->idmap_fd >= 0)
        init_become_owner(cfg->uid_root);
    if (unshare(CLONE_NEWUSER) != 0)
        init_fail("unshare a user namespace (is user.max_user_namespaces 0?)");
    init_send("USERNS");
    char buf[32];
    ssize_t n;
    do
        n = recv(INIT_CTL_FD, buf, sizeof buf - 1, 0);
    while (n < 0 && errno == EINTR);
    if (n != 6 || memcmp(buf, "MAPPED", 6) != 0)
        _exit(1); /* sandboxd could not map us and has said why */
    /* still holding every capability, now over the new namespace only */
    if (init_setresgid(0) != 0 || init_setresuid(0) != 0)
        init_fail("become root of the user namespace");
    if (init_setgroups_none() != 0)
        init_fail("setgroups");
    /* a credential change clears both of these */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* Receives one message from sandboxd and up to three fds. Returns 1 and
 * the fds, or -1 when sandboxd is gone. */
static int init_recv(char *msg, size_t msgsz, int fds[3], int *nfds)
{
    int cut;
    ssize_t n = lbsd_fds_recv(INIT_CTL_FD, msg, msgsz - 1, fds, 3, nfds, &cut);
    if (n <= 0)
        return -1;
    msg[n] = '\0';
    return 1;
}

__attribute__((noreturn)) static void init_exec_shell(int fds[3])
{
    /* own session and process group: sandboxd can kill the shell's jobs
     * as a group, and the shell has no controlling terminal */
    setsid();
    for (int i = 0; i < 3; i++) {
        int fd = fds[i];
        if (fd == i) {
            fcntl(fd, F_SETFD, 0);
        } else if (dup2(fd, i) < 0) {
            _exit(126);
        }
    }
    close_range(3, ~0U, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    /* init is protected from the OOM killer; the shell and its children
     * must not be: sandboxd sets the shell's oom_score_adj from the host
     * (this copy of init is not dumpable, so its /proc files belong to
     * host root and it could not write its own) */
    /* a layered image's WorkingDir, Env and User (image_user.h) */
    const char *wd = lbsd_img_proc_workdir();
    if (wd[0] ? chdir(wd) != 0 : (chdir("/testbed") != 0 && chdir("/") != 0))
        _exit(126);
    if (lbsd_img_proc_become() != 0)
        _exit(126);
    /* the native API's shell and all it starts: no exec raises privileges */
    if (lbsd_no_new_privs() != LB_OK)
        _exit(126);
    char *argv[] = {"bash", "--noprofile", "--norc", NULL};
    static const char *const base_env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                           "HOME=/root", "LANG=C.UTF-8", "TERM=dumb", "USER=root", "LOGNAME=root",
                                           "SHELL=/bin/bash", NULL};
    char *envp[LBSD_IMG_ENV_MAX + 16];
    int ne = lbsd_img_proc_env(base_env, envp, LBSD_IMG_ENV_MAX + 8);
    char pwd[LBSD_IMG_WORKDIR_MAX + 8];
    snprintf(pwd, sizeof pwd, "PWD=%s", wd[0] ? wd : "/testbed");
    envp[ne++] = pwd;
    envp[ne] = NULL;
    execve("/bin/bash", argv, envp);
    execve("/usr/bin/bash", argv, envp);
    _exit(127);
}

static pid_t init_spawn(pid_t old, int fds[3])
{
    if (old > 0) {
        /* the old shell's process group first, then the shell itself */
        kill(-old, SIGKILL);
        kill(old, SIGKILL);
    }
    /* not vfork: that would hold init until bash has exec'd, and the
     * first shell's exec is meant to overlap sandboxd's answer to the
     * create (READY goes out right after this fork) */
    pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
    if (pid == 0)
        init_exec_shell(fds);
    return pid;
}

/* sandboxd's ends of the shell's pipes while parked (fdpark.h) */
static int g_parked[3] = {-1, -1, -1};

static void init_unpark(void)
{
    for (int i = 0; i < 3; i++) {
        if (g_parked[i] >= 0)
            close(g_parked[i]);
        g_parked[i] = -1;
    }
}

/* shell: the first shell, started before READY (its SIGCHLD, if it died
 * already, is pending: blocked since before the fork) */
static void init_loop(pid_t shell)
{
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        init_fail("signalfd");
    for (;;) {
        struct pollfd pf[2] = {{.fd = INIT_CTL_FD, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            _exit(1);
        }
        if (pf[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) > 0)
                ;
            int st;
            pid_t p;
            while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
                if (p == shell) {
                    init_send("EXIT %d %d", (int)p, st);
                    shell = 0;
                }
            }
        }
        if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            char msg[64];
            int fds[3], nfds;
            if (init_recv(msg, sizeof msg, fds, &nfds) < 0)
                _exit(0); /* sandboxd is gone: take the sandbox down with us */
            unsigned seq;
            if (sscanf(msg, "PARK %u", &seq) == 1 && nfds == 3) {
                init_unpark(); /* stale copies, if an UNPARK was lost */
                for (int i = 0; i < 3; i++)
                    g_parked[i] = fds[i];
                nfds = 0; /* kept */
                init_send("PARKED %u %d %d %d", seq, g_parked[0], g_parked[1], g_parked[2]);
            } else if (!strcmp(msg, "PROCSOCK") && nfds == 1) {
                lbsd_initproc_spawn(fds[0]); /* E2B's protocol: sandbox_proc.h */
                nfds = 0;
            } else if (!strcmp(msg, "UNPARK")) {
                init_unpark();
            } else if (!strcmp(msg, "SPAWN") && nfds == 3) {
                pid_t p = init_spawn(shell, fds);
                if (p > 0) {
                    shell = p;
                    init_send("PID %d", (int)p);
                } else {
                    init_send("ERR fork: %s", strerror(errno));
                }
            }
            for (int i = 0; i < nfds; i++)
                close(fds[i]);
        }
    }
}

/* We are a copy of the zygote, whose command line is sandboxd's binary
 * ("llmbox-sandboxd zygote") and whose environment is empty; blanked all
 * the same, so that /proc/1/cmdline and /proc/1/environ inside the sandbox
 * show nothing of the host whoever clones init. Both live in our own copy of the
 * stack, where /proc/self/stat says (fields 48-51): blank them in place.
 * (PR_SET_MM would be neater but needs CAP_SYS_RESOURCE, which a root in a
 * container may not have.) */
static void init_hide_host_args(void)
{
    prctl(PR_SET_NAME, "llmbox-init");
    char buf[2048];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* comm may hold spaces */
    if (!p)
        return;
    unsigned long v[52] = {0};
    int field = 2;
    char *save = NULL;
    for (char *tok = strtok_r(p + 1, " ", &save); tok && field < 51; tok = strtok_r(NULL, " ", &save)) {
        field++;
        v[field] = strtoul(tok, NULL, 10);
    }
    if (field < 51)
        return;
    unsigned long as = v[48], ae = v[49], es = v[50], ee = v[51];
    if (as && ae > as && ae - as < (1ul << 20)) {
        memset((void *)as, 0, ae - as);
        if (ae - as > 12)
            memcpy((void *)as, "llmbox-init", 12);
    }
    if (es && ee > es && ee - es < (1ul << 20))
        memset((void *)es, 0, ee - es);
}

void lbsd_init_main(const lbsd_init_cfg *cfg, int ctl)
{
    /* Keep only the control socket and the idmap namespace: this is a copy
     * of the zygote, whose socket to sandboxd must not stay here. (The
     * namespace first goes above both targets, so neither dup2 can clobber
     * it.) */
    int ns = cfg->idmap_fd >= 0 ? fcntl(cfg->idmap_fd, F_DUPFD_CLOEXEC, INIT_IDMAP_FD + 1) : -1;
    if (cfg->idmap_fd >= 0 && ns < 0)
        _exit(1);
    if (ctl != INIT_CTL_FD) {
        if (dup2(ctl, INIT_CTL_FD) < 0)
            _exit(1);
    }
    if (ns >= 0) {
        if (dup3(ns, INIT_IDMAP_FD, O_CLOEXEC) < 0)
            _exit(1);
        g_idmap_fd = INIT_IDMAP_FD;
    }
    close_range(ns >= 0 ? INIT_IDMAP_FD + 1 : INIT_CTL_FD + 1, ~0U, 0);
    fcntl(INIT_CTL_FD, F_SETFD, FD_CLOEXEC);
    int nul = open("/dev/null", O_RDWR);
    if (nul >= 0) {
        for (int i = 0; i < 3; i++)
            if (nul != i)
                dup2(nul, i);
        if (nul > 2)
            close(nul);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* out of sandboxd's session: no way back to its controlling terminal */
    setsid();
    init_hide_host_args();
    /* Our memory is a copy of the zygote's (no configuration, no client's
     * data: zygote.h). Not dumpable all the same: /proc/1/mem, environ and
     * ptrace need CAP_SYS_PTRACE, which the sandbox never has. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    umask(022);
    lbsd_img_proc_set(cfg->env, cfg->envlen, cfg->workdir, cfg->uid, cfg->gid);

    /* wait until sandboxd has put us into our cgroups; GO brings the first
     * shell's pipes, kept above every fixed number used below */
    char go[16];
    int sh[3], nsh = 0, cut;
    ssize_t n = lbsd_fds_recv(INIT_CTL_FD, go, sizeof go - 1, sh, 3, &nsh, &cut);
    if (n != 2 || memcmp(go, "GO", 2) != 0 || nsh != 3 || cut)
        _exit(1);
    for (int i = 0; i < 3; i++) {
        int hi = fcntl(sh[i], F_DUPFD_CLOEXEC, INIT_UPPER_FD + 1);
        if (hi < 0)
            _exit(1);
        close(sh[i]);
        sh[i] = hi;
    }
    /* our cgroup becomes the root of what the sandbox can see; made before
     * the user namespace, so the sandbox does not own it */
    if (unshare(CLONE_NEWCGROUP) != 0)
        init_fail("unshare a cgroup namespace");

    init_filesystem(cfg);
    if (sethostname("sandbox", 7) != 0)
        init_fail("sethostname");
    init_loopback();
    init_limits(cfg);
    init_userns(cfg);
    /* The filter first, while init still holds CAP_SYS_ADMIN in its user
     * namespace: then it needs no no_new_privs, which every child would
     * inherit for good. The shell sets no_new_privs itself
     * (init_exec_shell); E2B's processes, forked by the spawner, do not,
     * so that sudo works for E2B's user (seccomp.h). */
    if (lbsd_seccomp_install() != LB_OK)
        init_fail("seccomp");
    if (lbsd_drop_caps() != LB_OK)
        init_fail("drop capabilities");
    /* the first shell now, with exactly the privileges any later one gets;
     * SIGCHLD blocked first, so that its death is never lost (init_loop) */
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    pid_t shell = init_spawn(0, sh);
    if (shell <= 0)
        init_fail("fork the shell");
    for (int i = 0; i < 3; i++)
        close(sh[i]);
    init_send("READY %d", (int)shell);
    init_loop(shell);
    _exit(0);
}
