/*
 * Privilege reduction for everything that runs in a sandbox: the
 * capability set and the seccomp deny list.
 *
 * Sandbox root is an unprivileged host uid in its own user namespace
 * (idmap.h), and every other namespace and mount of the sandbox belongs to
 * the host's user namespace, so its capabilities reach nothing but its own
 * files and processes. The kept set narrows even that: Docker's default set
 * minus MKNOD, NET_RAW, AUDIT_WRITE and SYS_CHROOT, enough for apt (setuid
 * to _apt), pip and chown. The seccomp filter then closes the kernel
 * interfaces a user namespace would otherwise open to unprivileged code
 * (mounts, more namespaces, BPF, io_uring, ...), which is where most
 * container-escape bugs have lived.
 */
#include "sandboxd/seccomp.h"

#include "common/status.h"

#include <errno.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static const int lbsd_keep_caps[] = {
    CAP_CHOWN,      CAP_DAC_OVERRIDE, CAP_FOWNER,           CAP_FSETID,
    CAP_KILL,       CAP_SETGID,       CAP_SETUID,           CAP_SETPCAP,
    CAP_SETFCAP,    CAP_NET_BIND_SERVICE,
};

static int lbsd_cap_kept(int cap)
{
    for (size_t i = 0; i < sizeof lbsd_keep_caps / sizeof lbsd_keep_caps[0]; i++)
        if (lbsd_keep_caps[i] == cap)
            return 1;
    return 0;
}

int lbsd_drop_caps(void)
{
    /* Bounding set first: it limits what any later execve can gain. The
     * kernel may know caps newer than our headers; walk until it says no. */
    for (int cap = 0; cap < 64; cap++) {
        if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0)
            break;
        if (!lbsd_cap_kept(cap) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
            return LB_E_DENIED;
    }
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    /* And this process's own sets, so pid 1 holds no more than its shell. */
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    for (size_t i = 0; i < sizeof lbsd_keep_caps / sizeof lbsd_keep_caps[0]; i++) {
        int cap = lbsd_keep_caps[i];
        d[cap / 32].effective |= 1u << (cap % 32);
        d[cap / 32].permitted |= 1u << (cap % 32);
    }
    if (syscall(SYS_capset, &h, d) != 0)
        return LB_E_DENIED;
    return LB_OK;
}

/* Syscalls that fail with EPERM inside a sandbox: the mount and namespace
 * families, kernel modules and kexec, tracing and introspection of other
 * processes, the keyring, BPF and perf, swap and reboot, raw handles,
 * obsolete interfaces, and both asynchronous I/O interfaces: io_uring (a
 * large attack surface) and Linux AIO, whose contexts come from one
 * host-wide pool (fs.aio-max-nr, 65536 events): one sandbox could take it
 * all and make io_setup fail for every process on the host, root
 * included. Programs that use AIO (libaio, some databases) see EPERM from
 * io_setup, the same answer io_uring_setup gives, and fall back to
 * threads where they can. */
static const char *const lbsd_denied[] = {
    "mount",          "umount2",        "pivot_root",      "move_mount",      "chroot",
    "uselib",         "ustat",          "sysfs",           "_sysctl",
    "open_tree",      "fsopen",         "fsconfig",        "fsmount",
    "fspick",         "mount_setattr",  "unshare",         "setns",
    "ptrace",         "process_vm_readv", "process_vm_writev", "kcmp",
    "pidfd_getfd",    "kexec_load",     "kexec_file_load", "init_module",
    "finit_module",   "delete_module",  "bpf",             "perf_event_open",
    "keyctl",         "add_key",        "request_key",     "reboot",
    "swapon",         "swapoff",        "open_by_handle_at", "name_to_handle_at",
    "acct",           "quotactl",       "quotactl_fd",     "lookup_dcookie",
    "userfaultfd",    "io_uring_setup", "io_uring_enter",  "io_uring_register",
    "syslog",         "settimeofday",   "clock_settime",   "clock_adjtime",
    "adjtimex",       "iopl",           "ioperm",          "vhangup",
    "nfsservctl",     "fanotify_init",  "sethostname",     "setdomainname",
    "io_setup",       "io_destroy",     "io_submit",       "io_cancel",
    "io_getevents",   "io_pgetevents",
};

/* Newer than the libseccomp we build with (its name table would not know
 * them): denied by number. Syscalls added since Linux 5.1 have one number on
 * every architecture, so this holds wherever the filter is built. */
static const struct {
    const char *name;
    int nr;
} lbsd_denied_nr[] = {
    {"open_tree_attr", 467},
};

/* personality(2): the execution domain (low byte) and UNAME26 are harmless;
 * every flag from ADDR_NO_RANDOMIZE (0x40000) up weakens the sandbox's own
 * processes (no ASLR, readable-implies-exec, page zero mapped, ...). Denies
 * the persona values 0x40000..0xfffffffe (0xffffffff only asks for the
 * current one), compared on the low 32 bits, which is all the kernel reads.
 * A range is not one seccomp compare, so it is written as the prefix blocks
 * that cover it: [2^k, 2^(k+1)) for k = 18..30, then the values with bit 31
 * set and some lower bit clear. */
static int lbsd_deny_personality(scmp_filter_ctx ctx)
{
    for (int k = 18; k <= 30; k++) {
        uint32_t mask = 0xFFFFFFFFu << k, val = 1u << k;
        if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, mask, val)) != 0)
            return -1;
    }
    for (int j = 0; j <= 30; j++) {
        uint32_t mask = 0xFFFFFFFFu << j, val = 0xFFFFFFFFu << (j + 1);
        if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, mask, val)) != 0)
            return -1;
    }
    return 0;
}

/* The filter as libseccomp builds it (NULL on failure). */
static scmp_filter_ctx lbsd_seccomp_build(void)
{
    int ok = 0;
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return NULL;
    /* Other architectures' syscall tables (x32, i386 via int 0x80) would
     * dodge a list written for the native one: kill them outright. (The
     * filter holds the native architecture only; libseccomp sends x32
     * numbers on x86_64 to this action too.) */
    if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0)
        goto out;
    /* a binary search over syscall numbers instead of a linear chain: every
     * syscall of the sandbox passes through this filter */
    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    for (size_t i = 0; i < sizeof lbsd_denied / sizeof lbsd_denied[0]; i++) {
        int nr = seccomp_syscall_resolve_name(lbsd_denied[i]);
        if (nr == __NR_SCMP_ERROR)
            continue; /* not on this architecture */
        if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0) != 0)
            goto out;
    }
    for (size_t i = 0; i < sizeof lbsd_denied_nr / sizeof lbsd_denied_nr[0]; i++) {
        int nr = seccomp_syscall_resolve_name(lbsd_denied_nr[i].name);
        if (nr == __NR_SCMP_ERROR)
            nr = lbsd_denied_nr[i].nr;
        if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0) != 0)
            goto out;
    }
    if (lbsd_deny_personality(ctx) != 0)
        goto out;
    /* AF_VSOCK talks to the hypervisor and to other VMs' vsock services
     * (and was the home of several kernel bugs); nothing in a sandbox needs
     * it. The family is an int: compared on the low 32 bits, like the
     * ioctl numbers below. EAFNOSUPPORT is what a kernel without vsock
     * answers, so programs take it as "not available". */
    if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, AF_VSOCK)) != 0 ||
        seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socketpair), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, AF_VSOCK)) != 0)
        goto out;
    /* clone with any namespace flag (fork, vfork and threads stay allowed).
     * A rule matches on one masked compare, so one rule per flag. */
    static const unsigned long ns_flags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS,
                                             CLONE_NEWIPC, CLONE_NEWUSER,   CLONE_NEWPID,
                                             CLONE_NEWNET, CLONE_NEWTIME};
    for (size_t i = 0; i < sizeof ns_flags / sizeof ns_flags[0]; i++) {
        if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i])) != 0)
            goto out;
    }
    /* clone3 hides its flags in a struct seccomp cannot read: ENOSYS makes
     * glibc fall back to clone, which the rules above can inspect */
    if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) != 0)
        goto out;
    /* TIOCSTI pushes input into a terminal; TIOCLINUX can too. The kernel
     * reads the ioctl number as 32 bits, so the compare masks the upper
     * half: 0x100005412 is TIOCSTI too. */
    if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                         SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, 0x5412 /* TIOCSTI */)) != 0 ||
        seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                         SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, 0x541C /* TIOCLINUX */)) != 0)
        goto out;
    ok = 1;
out:
    if (!ok) {
        seccomp_release(ctx);
        ctx = NULL;
    }
    return ctx;
}

/* The compiled program, made once in sandboxd: every init is a copy of
 * sandboxd and loads it with one syscall instead of compiling the rules
 * again (about a millisecond per sandbox). */
static struct sock_filter *lbsd_bpf;
static unsigned short lbsd_bpf_len;

int lbsd_seccomp_prepare(void)
{
    if (lbsd_bpf)
        return LB_OK;
    int rc = LB_E_INTERNAL;
    struct sock_filter *prog = NULL;
    scmp_filter_ctx ctx = lbsd_seccomp_build();
    int fd = memfd_create("lbsd-seccomp", MFD_CLOEXEC);
    if (!ctx || fd < 0 || seccomp_export_bpf(ctx, fd) != 0)
        goto out;
    off_t size = lseek(fd, 0, SEEK_END);
    if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 ||
        size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS)
        goto out;
    prog = malloc((size_t)size);
    if (!prog || pread(fd, prog, (size_t)size, 0) != (ssize_t)size)
        goto out;
    lbsd_bpf = prog;
    lbsd_bpf_len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
    prog = NULL;
    rc = LB_OK;
out:
    free(prog);
    if (fd >= 0)
        close(fd);
    if (ctx)
        seccomp_release(ctx);
    return rc;
}

/* The filter alone. Without no_new_privs the kernel asks for CAP_SYS_ADMIN
 * in the caller's user namespace, which init holds until lbsd_drop_caps. */
int lbsd_seccomp_install(void)
{
    if (lbsd_bpf) {
        struct sock_fprog fp = {.len = lbsd_bpf_len, .filter = lbsd_bpf};
        return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) == 0 ? LB_OK : LB_E_DENIED;
    }
    scmp_filter_ctx ctx = lbsd_seccomp_build();
    if (!ctx)
        return LB_E_INTERNAL;
    /* libseccomp would set no_new_privs itself: that is the caller's to say */
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) == 0 && seccomp_load(ctx) == 0 ? LB_OK : LB_E_DENIED;
    seccomp_release(ctx);
    return rc;
}

int lbsd_no_new_privs(void)
{
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 ? LB_OK : LB_E_DENIED;
}

int lbsd_seccomp_apply(void)
{
    int rc = lbsd_no_new_privs();
    return rc ? rc : lbsd_seccomp_install();
}
