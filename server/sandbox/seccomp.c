/*
 * Privilege reduction for everything that runs in a sandbox: the
 * capability set and the seccomp deny list.
 *
 * Sandbox root is host root in this version (no user namespace yet), so
 * these two are what stand between hostile code and the host kernel's
 * administrative interfaces. The kept capabilities are Docker's default set
 * minus MKNOD, NET_RAW and AUDIT_WRITE: enough for apt (setuid to _apt),
 * pip, chown and chroot inside the sandbox, nothing that administers the
 * machine.
 */
#include "sandbox/sandboxd.h"

#include "common/status.h"

#include <errno.h>
#include <linux/capability.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static const int lbsd_keep_caps[] = {
    CAP_CHOWN,      CAP_DAC_OVERRIDE, CAP_FOWNER,           CAP_FSETID,
    CAP_KILL,       CAP_SETGID,       CAP_SETUID,           CAP_SETPCAP,
    CAP_SETFCAP,    CAP_SYS_CHROOT,   CAP_NET_BIND_SERVICE,
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
 * processes, the keyring, BPF and perf, swap and reboot, raw handles. */
static const char *const lbsd_denied[] = {
    "mount",          "umount2",        "pivot_root",      "move_mount",
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
};

int lbsd_seccomp_apply(void)
{
    int rc = LB_E_INTERNAL;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return LB_E_DENIED;
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return LB_E_NOMEM;
    /* Other architectures' syscall tables (x32, i386 via int 0x80) would
     * dodge a list written for the native one: kill them outright. */
    if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0)
        goto out;
    for (size_t i = 0; i < sizeof lbsd_denied / sizeof lbsd_denied[0]; i++) {
        int nr = seccomp_syscall_resolve_name(lbsd_denied[i]);
        if (nr == __NR_SCMP_ERROR)
            continue; /* not on this architecture */
        if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0) != 0)
            goto out;
    }
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
    /* TIOCSTI pushes input into a terminal; TIOCLINUX can too. The ioctl
     * number is compared on its low 32 bits. */
    if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                         SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, 0x5412 /* TIOCSTI */)) != 0 ||
        seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                         SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, 0x541C /* TIOCLINUX */)) != 0)
        goto out;
    if (seccomp_load(ctx) != 0)
        goto out;
    rc = LB_OK;
out:
    seccomp_release(ctx);
    return rc;
}
