#!/usr/bin/env python3
"""Runs INSIDE a sandbox (test_sandbox.py uploads it): calls each syscall the
seccomp filter denies, with arguments for which the kernel itself would
answer something else (EFAULT for a bad pointer, EINVAL for an invalid flag
mix, 0 for a harmless success) wherever such arguments exist, so an EPERM
(or ENOSYS for clone3) shows the filter at work. x86_64 numbers. Prints one
JSON object {probe: "ok" | errno name | exit status of a child}.
"""
import ctypes
import errno
import json
import os
import subprocess
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def sc(nr, *a):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])
    return "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


B = 1            # a bad pointer: the kernel would answer EFAULT
T = 0x00010000   # CLONE_THREAD without CLONE_SIGHAND: the kernel would answer EINVAL
me = os.getpid()
out = {
    "mount": sc(165, 0, B, 0, 0, 0), "umount2": sc(166, B, 0), "pivot_root": sc(155, B, B),
    "chroot": sc(161, B), "open_tree": sc(428, -1, B, 0), "move_mount": sc(429, -1, B, -1, B, 0),
    "fsopen": sc(430, B, 0), "fsconfig": sc(431, -1, 0, 0, 0, 0), "fsmount": sc(432, -1, 0, 0),
    "fspick": sc(433, -1, B, 0), "mount_setattr": sc(442, -1, B, 0, 0, 0),
    "open_tree_attr": sc(467, -1, B, 0, 0, 0),
    "unshare": sc(272, 0), "setns": sc(308, -1, 0), "clone3": sc(435, 0, 0),
    "ptrace": sc(101, 0x4242, 0, 0, 0),
    "process_vm_readv": sc(310, me, 0, 0, 0, 0, 0), "process_vm_writev": sc(311, me, 0, 0, 0, 0, 0),
    "kcmp": sc(312, me, me, 0, 0, 0), "pidfd_getfd": sc(438, -1, 0, 0),
    "bpf": sc(321, 9999, 0, 0), "perf_event_open": sc(298, 0, 0, -1, -1, 0),
    "keyctl": sc(250, 9999, 0, 0, 0, 0), "add_key": sc(248, 0, 0, 0, 0, 0),
    "request_key": sc(249, 0, 0, 0, 0), "userfaultfd": sc(323, 1 | 0x100),
    "io_uring_setup": sc(425, 1, 0), "io_uring_enter": sc(426, -1, 0, 0, 0, 0, 0),
    "io_uring_register": sc(427, -1, 0, 0, 0),
    "kexec_load": sc(246, 0, 0, 0, 0), "kexec_file_load": sc(320, -1, -1, 0, 0, 0),
    "init_module": sc(175, 0, 0, 0), "finit_module": sc(313, -1, 0, 0),
    "delete_module": sc(176, B, 0),
    "settimeofday": sc(164, 0, 0), "clock_settime": sc(227, 0, 0), "clock_adjtime": sc(305, 0, 0),
    "adjtimex": sc(159, 0), "reboot": sc(169, 0, 0, 0, 0), "swapon": sc(167, B, 0),
    "swapoff": sc(168, B), "acct": sc(163, 0), "quotactl": sc(179, 0, 0, 0, 0),
    "lookup_dcookie": sc(212, 0, 0, 0), "name_to_handle_at": sc(303, -1, B, 0, 0, 0),
    "open_by_handle_at": sc(304, -1, 0, 0),
    # ADDR_NO_RANDOMIZE, also hidden above bit 31; a query and PER_LINUX32 stay allowed
    "personality_no_aslr": sc(135, 0x0040000), "personality_high_bits": sc(135, 0x100040000),
    "personality_query": sc(135, 0xFFFFFFFF), "personality_linux32": sc(135, 0x0008),
    # on /dev/null the kernel would answer ENOTTY; it reads the number as 32 bits
    "tiocsti": sc(16, 0, 0x5412, B), "tiocsti_high_bit": sc(16, 0, 0x100005412, B),
    "tioclinux": sc(16, 0, 0x541C, B), "tioclinux_high_bit": sc(16, 0, 0xFFFFFFFF0000541C, B),
}
for name, flag in (("newns", 0x20000), ("newcgroup", 0x02000000), ("newuts", 0x04000000),
                   ("newipc", 0x08000000), ("newuser", 0x10000000), ("newpid", 0x20000000),
                   ("newnet", 0x40000000)):
    out["clone_" + name] = sc(56, flag | T, 0, 0, 0, 0)
sc(135, 0)  # back to the plain persona, whatever happened above
# foreign syscall tables kill the process (exit status -31, SIGSYS): the x32
# numbering, and int 0x80 (i386) from a few bytes of machine code
code = ("import ctypes; l = ctypes.CDLL(None); l.syscall.restype = ctypes.c_long; "
        "print(l.syscall(ctypes.c_long(0x40000000 + 39)))")
out["x32"] = subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL).returncode
code = ("import ctypes, mmap; m = mmap.mmap(-1, 4096, prot=7); "
        "m.write(bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3])); "  # mov eax,20; int 0x80; ret
        "f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m))); "
        "print(f())")
out["i386"] = subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL).returncode
print(json.dumps(out))
