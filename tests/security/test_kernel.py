#!/usr/bin/env python3
"""Security: attacks on the kernel interface from inside a sandbox.

TIOCSTI/TIOCLINUX (also with high bits set in the ioctl number), ptrace,
process_vm_readv and kill(-1), /proc/PID/exe of host-side helpers, inherited
fds, mount/unshare/setns/pivot_root/chroot games, setuid binaries and the
user namespace, dangerous syscalls, foreign syscall ABIs, writes to cgroup
files and /proc/sys. Run as root from the repo:

    python3 tests/security/test_kernel.py [CHECK...]
"""
import hashlib
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seclib import (BIN, REPO, Problems, cgroup_file, init_hostpid, pidns_of,  # noqa: E402
                    proc_cmdline, proc_status, procs_in, py, read_text, sh, suite_main)


def tiocsti(d):
    """TIOCSTI and TIOCLINUX are refused by seccomp (EPERM), also when the
    ioctl number carries high bits the kernel ignores (masked compare), and
    nothing is pushed into the terminal."""
    code = r'''
import select, tty
m, s = os.openpty()
tty.setraw(s)
res = {}
ch = ctypes.c_char(b"X")
sub = ctypes.c_char(b"\x06")      # TIOCL_GETSHIFTSTATE: harmless if it ever ran
for name, nr, arg in (("TIOCSTI", 0x5412, ch), ("TIOCSTI|1<<32", 0x5412 | 1 << 32, ch),
                      ("TIOCSTI|0xffffffff<<32", 0xffffffff00005412, ch),
                      ("TIOCSTI|1<<63", 0x5412 | 1 << 63, ch),
                      ("TIOCLINUX", 0x541C, sub), ("TIOCLINUX|1<<32", 0x541C | 1 << 32, sub)):
    for fd, side in ((s, "slave"), (m, "master")):
        r, e = sc(16, fd, nr, ctypes.byref(arg))
        res["%s on %s" % (name, side)] = ename(e) if r == -1 else "returned %d" % r
injected = bool(select.select([s], [], [], 0.2)[0])
out({"res": res, "injected": injected})
'''
    p = Problems()
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        r = py(c, sid, code)
    bad = {k: v for k, v in r["res"].items() if v != "EPERM"}
    p.expect(not bad, "not refused with EPERM: %s" % bad)
    p.expect(not r["injected"], "a byte was injected into the terminal")
    p.raise_if()


def ptrace_vm_kill(d):
    """ptrace and process_vm_readv/writev are refused even on the sandbox's
    own processes; kill(-1) and kill(<host pid>) only reach the sandbox."""
    p = Problems()
    host = subprocess.Popen(["sleep", "120"])
    code = r'''
import signal, subprocess, time
buf = ctypes.create_string_buffer(b"llmbox-secret-in-parent", 64)
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
res = {}
r, e = sc(101, 16, child, 0, 0)                  # PTRACE_ATTACH
res["ptrace(ATTACH, child)"] = ename(e) if r == -1 else "ok"
r, e = sc(101, 0x4206, child, 0, 0)              # PTRACE_SEIZE
res["ptrace(SEIZE, child)"] = ename(e) if r == -1 else "ok"
t = os.fork()
if t == 0:
    r, e = sc(101, 0, 0, 0, 0)                   # PTRACE_TRACEME
    os._exit(0 if r == 0 else 1)
res["ptrace(TRACEME)"] = "ok" if os.waitpid(t, 0)[1] == 0 else "refused"
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
dst = ctypes.create_string_buffer(64)
local = iovec(ctypes.addressof(dst), 64)
remote = iovec(ctypes.addressof(buf), 64)        # same address in the forked child
r, e = sc(310, child, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
res["process_vm_readv(child)"] = ename(e) if r == -1 else "read %d bytes" % r
r, e = sc(311, child, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
res["process_vm_writev(child)"] = ename(e) if r == -1 else "wrote %d bytes" % r
hp = int(sys.argv[1]) if len(sys.argv) > 1 else HOSTPID
r, e = sc(101, 16, hp, 0, 0)
res["ptrace(ATTACH, host pid)"] = ename(e) if r == -1 else "ok"
r, e = sc(62, hp, 0)                             # kill(host pid, 0)
res["kill(host pid, 0)"] = ename(e) if r == -1 else "ok"
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
out(res)
'''.replace("HOSTPID", str(host.pid))
    try:
        with d.connect() as c, d.connect() as c2:
            other = c2.create(memory_mib=128)
            sid = c.create(memory_mib=256)
            ns = pidns_of(c, sid)
            init = init_hostpid(ns)
            res = py(c, sid, code)
            want = {"ptrace(ATTACH, child)": "EPERM", "ptrace(SEIZE, child)": "EPERM",
                    "ptrace(TRACEME)": "refused", "process_vm_readv(child)": "EPERM",
                    "process_vm_writev(child)": "EPERM"}
            bad = {k: res.get(k) for k in want if res.get(k) != want[k]}
            p.expect(not bad, "allowed: %s" % bad)
            # the host pid must be unknown or refused, never signalled or traced
            for k in ("ptrace(ATTACH, host pid)", "kill(host pid, 0)"):
                p.expect(res.get(k) in ("ESRCH", "EPERM"), "%s: %s" % (k, res.get(k)))
            # kill(-1): everything of this sandbox but its init dies, nothing else
            sh(c, sid, "sleep 300 & sleep 301 &")
            r = c.exec(sid, "python3 -c 'import os, signal; os.kill(-1, signal.SIGKILL)'; "
                            "echo not-reached")
            p.expect("not-reached" not in r.get("stdout", ""), "kill(-1) spared the shell: %r" % r)
            time.sleep(0.2)
            p.expect(host.poll() is None, "the host process died (status %r)" % host.poll())
            p.expect(d.alive(), "sandboxd died")
            p.expect(init_hostpid(ns) == init, "the sandbox init died")
            r = c2.exec(other, "echo other-ok")
            p.expect(r.get("stdout") == "other-ok\n", "other sandbox after kill(-1): %r" % r)
            r = c.exec(sid, "echo again")
            p.expect(r.get("stdout") == "again\n", "sandbox after kill(-1): %r" % r)
            left = [proc_cmdline(x) for x in procs_in(ns) if "sleep 30" in proc_cmdline(x)]
            p.expect(not left, "kill(-1) missed %s" % left)
    finally:
        host.kill()
        host.wait()
    p.raise_if()


def proc_exe_host_helper(d):
    """Processes of the sandbox that run a host binary (its init is a copy of
    sandboxd): their /proc/PID/exe, root, cwd, mem, environ and fd cannot be
    opened from inside (the CVE-2019-5736 pattern), and the host binary is
    unchanged."""
    p = Problems()
    before = hashlib.sha256(open(BIN, "rb").read()).hexdigest()
    bst = os.stat(BIN)
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        ns = pidns_of(c, sid)
        # which sandbox pids run a host executable (not one of the sandbox's own root)?
        helpers = []
        for hp in procs_in(ns):
            try:
                st = os.stat("/proc/%d/exe" % hp)
            except OSError:
                continue
            # the host binary itself (init is a copy of sandboxd). Not "any exe
            # on another device": with the writable layer on a tmpfs, overlayfs
            # reports the lower filesystem's st_dev for files of the image, so
            # the sandbox's own bash would look foreign.
            if (st.st_dev, st.st_ino) == (bst.st_dev, bst.st_ino):
                nspid = proc_status(hp).get("NSpid", "").split()
                if nspid:
                    helpers.append(int(nspid[-1]))
        p.expect(1 in helpers or not helpers, "helpers %s" % helpers)
        code = r'''
res = {}
O_PATH = 0o10000000
for pid in HELPERS:
    for what, flags in (("exe", os.O_RDONLY), ("exe", os.O_WRONLY), ("exe", O_PATH),
                        ("mem", os.O_RDWR), ("environ", os.O_RDONLY), ("root", O_PATH),
                        ("cwd", O_PATH), ("fd/0", os.O_RDONLY), ("fd/3", os.O_RDWR)):
        path = "/proc/%d/%s" % (pid, what)
        try:
            fd = os.open(path, flags)
        except OSError as e:
            continue
        verdict = "opened"
        if what == "exe":
            # reopen through the fd for writing, as runc's attacker did
            try:
                os.close(os.open("/proc/self/fd/%d" % fd, os.O_WRONLY))
                verdict = "reopened for writing"
            except OSError:
                pass
        os.close(fd)
        res["%s flags=%o" % (path, flags)] = verdict
    for what in ("root/", "cwd/", "map_files/"):
        try:
            res["listdir /proc/%d/%s" % (pid, what)] = len(os.listdir("/proc/%d/%s" % (pid, what)))
        except OSError:
            pass
    # the fd numbers may show (sandbox root owns /proc/1/fd), where they lead must not
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        fds = []
    for f in fds:
        try:
            res["readlink /proc/%d/fd/%s" % (pid, f)] = os.readlink("/proc/%d/fd/%s" % (pid, f))
        except OSError:
            pass
# any process: exe never writable
for e in os.listdir("/proc"):
    if e.isdigit():
        try:
            os.close(os.open("/proc/%s/exe" % e, os.O_WRONLY))
            res["/proc/%s/exe writable" % e] = True
        except OSError:
            pass
out(res)
'''.replace("HELPERS", repr(helpers or [1]))
        res = py(c, sid, code)
        p.expect(not res, "reachable from inside: %s" % res)
    after = hashlib.sha256(open(BIN, "rb").read()).hexdigest()
    p.expect(before == after, "the host binary %s changed" % BIN)
    p.raise_if()


def inherited_fds(d):
    """A command's processes hold only fds 0, 1, 2 (no sandboxd socket,
    no pipe of the wrapper, no host file), in the foreground and as
    background jobs."""
    p = Problems()
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        sh(c, sid, "sleep 60 &")
        out = sh(c, sid, "sleep 61 & f=$!; "
                         # wait for the fork to exec sleep: between fork and exec
                         # the child is still bash, with bash's close-on-exec fds
                         "for i in $(seq 100); do [ \"$(cat /proc/$f/comm)\" = sleep ] && break; "
                         "sleep 0.02; done; echo \"foreground-child $(ls /proc/$f/fd | sort -n | "
                         "tr '\\n' ' ')\"; for q in $(pgrep -x sleep); do echo \"pid-$q $(ls "
                         "/proc/$q/fd | sort -n | tr '\\n' ' ')\"; done; "
                         "ls -l /proc/$f/fd /proc/$$/fd; kill %1 %2")
        listed = [(l.split()[0], l.split()[1:]) for l in out.splitlines()
                  if l.startswith(("foreground-child ", "pid-"))]
        p.expect(len(listed) >= 3, "could not list the children's fds: %r" % out)
        extra = {}
        for who, fds in listed:
            if fds != ["0", "1", "2"]:
                extra[who] = fds
        if extra:
            bad = set(f for fds in extra.values() for f in fds) - {"0", "1", "2"}
            targets = [l.split("-> ")[-1] + " (fd %s)" % l.split()[-3] for l in out.splitlines()
                       if " -> " in l and l.split()[-3] in bad]
            p.expect(False, "children hold more than fds 0 1 2: %s; targets %s"
                     % (extra, sorted(set(targets))[:4]))
        p.expect("socket:" not in out, "a socket is open in the shell or its child: %s" % out)
    p.raise_if()


def namespace_games(d):
    """mount, umount, the new mount API, unshare, setns, clone with namespace
    flags, clone3 and pivot_root are all refused; /proc/sys stays read-only."""
    p = Problems()
    code = r'''
res = {}
CLONE = {"NEWNS": 0x20000, "NEWUSER": 0x10000000, "NEWPID": 0x20000000, "NEWNET": 0x40000000,
         "NEWUTS": 0x04000000, "NEWIPC": 0x08000000, "NEWCGROUP": 0x02000000}
os.makedirs("/tmp/mnt", exist_ok=True)
r, e = sc(165, b"none", b"/tmp/mnt", b"tmpfs", 0, None); res["mount tmpfs"] = ename(e)
r, e = sc(165, b"/proc", b"/tmp/mnt", None, 0x1000, None); res["mount --bind /proc"] = ename(e)
r, e = sc(165, None, b"/proc/sys", None, 0x20 | 0x1000, None); res["remount /proc/sys rw"] = ename(e)
r, e = sc(166, b"/proc/sys", 2); res["umount /proc/sys"] = ename(e)
r, e = sc(166, b"/proc/kcore", 2); res["umount the /proc/kcore mask"] = ename(e)
r, e = sc(155, b".", b"."); res["pivot_root"] = ename(e)
r, e = sc(430, b"tmpfs", 0); res["fsopen"] = ename(e)
r, e = sc(428, -100, b"/", 1); res["open_tree(CLONE)"] = ename(e)
r, e = sc(429, -100, b"/tmp", -100, b"/tmp/mnt", 0); res["move_mount"] = ename(e)
r, e = sc(433, -100, b"/", 0); res["fspick"] = ename(e)
attr = (ctypes.c_uint64 * 4)(0, 1, 0, 0)   # clear MOUNT_ATTR_RDONLY
r, e = sc(442, -100, b"/proc/sys", 0x8000, ctypes.byref(attr), 32); res["mount_setattr"] = ename(e)
for n, f in CLONE.items():
    r, e = sc(272, f); res["unshare(%s)" % n] = ename(e)
    if n == "NEWCGROUP":
        r, e = sc(272, 0x80); res["unshare(NEWTIME)"] = ename(e)
    r, e = sc(56, f | 17, 0, 0, 0, 0)       # clone(f | SIGCHLD)
    if r == 0:
        os._exit(0)
    if r > 0:
        os.waitpid(r, 0)
    res["clone(%s)" % n] = ename(e) if r == -1 else "created pid %d" % r
cargs = (ctypes.c_uint64 * 11)(0x10000000, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0)
r, e = sc(435, ctypes.byref(cargs), 88)
if r == 0:
    os._exit(0)
res["clone3(NEWUSER)"] = ename(e) if r == -1 else "created pid %d" % r
for ns in ("mnt", "pid", "net", "user", "uts", "ipc", "cgroup"):
    try:
        fd = os.open("/proc/self/ns/" + ns, os.O_RDONLY)
        r, e = sc(308, fd, 0); res["setns(own %s)" % ns] = ename(e)
        os.close(fd)
    except OSError as x:
        res["setns(own %s)" % ns] = "open: " + ename(x.errno)
try:
    fd = os.open("/proc/1/ns/mnt", os.O_RDONLY)
    r, e = sc(308, fd, 0); res["setns(init mnt)"] = ename(e)
except OSError as x:
    res["setns(init mnt)"] = "open: " + ename(x.errno)
try:
    with open("/proc/sys/kernel/domainname", "w") as f:
        f.write("x")
    res["write /proc/sys"] = "ok"
except OSError as x:
    res["write /proc/sys"] = ename(x.errno)
out(res)
'''
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        res = py(c, sid, code)
        shell = sh(c, sid, "unshare -U -r true 2>&1 && echo UNSHARED; "
                           "mount -t tmpfs x /mnt 2>&1 && echo MOUNTED; "
                           "nsenter -t 1 -m true 2>&1 && echo ENTERED; echo done")
    def refused(k, v):
        if k.startswith("clone3"):
            return v == "ENOSYS"   # so that glibc falls back to clone, whose flags are visible
        if k == "write /proc/sys":
            return v in ("EROFS", "EACCES", "EPERM")
        # setns on an fd that could not even be opened is as good as a refusal
        return v == "EPERM" or v.startswith("open: ")
    bad = {k: v for k, v in res.items() if not refused(k, v)}
    p.expect(not bad, "not refused as expected (EPERM; clone3 ENOSYS): %s" % bad)
    p.expect(not any(w in shell for w in ("UNSHARED", "MOUNTED", "ENTERED")),
             "a tool succeeded: %r" % shell)
    p.raise_if()


def chroot_escape(d):
    """The classic chroot breakout (chroot into a subdir, climb out with a
    kept fd) ends at the sandbox's own root: nothing of the host appears."""
    p = Problems()
    marker = os.path.join(d.tmp, "host-marker")
    with open(marker, "w") as f:
        f.write("host\n")
    code = r'''
res = {}
os.makedirs("/tmp/jail", exist_ok=True)
try:
    fd = os.open("/", os.O_RDONLY)
    os.chroot("/tmp/jail")
    os.fchdir(fd)
    for _ in range(64):
        os.chdir("..")
    os.chroot(".")
    res["escaped"] = True
except OSError as e:
    res["escaped"] = "refused: " + ename(e.errno)
res["host marker"] = os.path.exists(MARKER)
res["repo"] = os.path.exists(REPO)
res["testbed"] = os.path.isdir("/testbed")
for p in ("/proc/1/root/", "/proc/1/cwd/"):
    try:
        res[p] = len(os.listdir(p))
    except OSError as e:
        res[p] = ename(e.errno)
out(res)
'''.replace("MARKER", repr(marker)).replace("REPO", repr(os.path.join(REPO, "Makefile")))
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        res = py(c, sid, code)
    p.expect(res["host marker"] is False and res["repo"] is False,
             "the host filesystem is reachable: %s" % res)
    p.expect(res["testbed"] is True, "the breakout did not land in the sandbox root: %s" % res)
    for k in ("/proc/1/root/", "/proc/1/cwd/"):
        p.expect(isinstance(res[k], str), "%s of init is listable (%s entries)" % (k, res[k]))
    p.raise_if()


def setuid_binary(d):
    """A setuid-root binary gives an unprivileged sandbox user nothing
    (no_new_privs), and sandbox root holds none of the dangerous
    capabilities."""
    p = Problems()
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        out = sh(c, sid, "cp /usr/bin/python3.11 /testbed/pysuid && chown 0:0 /testbed/pysuid && "
                         "chmod 4755 /testbed/pysuid && setpriv --reuid=65534 --regid=65534 "
                         "--clear-groups /testbed/pysuid -c 'import os; print(\"uid\", os.getuid(),"
                         " os.geteuid())'; grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status"
                         " | tr -s '\\t' ' '")
    p.expect("uid 65534 65534" in out, "setuid-root binary: %r" % out)
    caps = dict(l.split(": ", 1) for l in out.splitlines() if ": " in l)
    danger = {"SYS_ADMIN": 21, "SYS_MODULE": 16, "SYS_PTRACE": 19, "SYS_RAWIO": 17, "NET_ADMIN": 12,
              "SYS_TIME": 25, "MKNOD": 27, "DAC_READ_SEARCH": 2, "SYS_BOOT": 22, "BPF": 39}
    for k in ("CapEff", "CapBnd"):
        v = int(caps.get(k, "ffffffffffffffff"), 16)
        held = [n for n, b in danger.items() if v >> b & 1]
        p.expect(not held, "%s holds %s" % (k, held))
    p.expect(caps.get("NoNewPrivs") == "1", "NoNewPrivs: %r" % caps.get("NoNewPrivs"))
    p.raise_if()


def user_namespace(d):
    """Seen from the host, no sandbox process runs as host root (uid or gid
    0) and nothing maps host root into the sandbox; files that sandbox root
    creates (even a setuid-root binary) belong to an unprivileged host uid.
    Enough ids are mapped for apt's users (_apt is 42, nobody 65534)."""
    p = Problems()
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        ns = pidns_of(c, sid)
        out = sh(c, sid, "cp /usr/bin/python3.11 /testbed/suidroot && chmod 4755 /testbed/suidroot; "
                         "touch /testbed/apt42 && chown 42:42 /testbed/apt42 && "
                         "touch /testbed/nobody && chown 65534:65534 /testbed/nobody && "
                         "stat -c '%u:%g' /testbed/suidroot /testbed/apt42 /testbed/nobody; "
                         "sleep 60 & true")
        p.expect(out.split() == ["0:0", "42:42", "65534:65534"],
                 "ids inside the sandbox: %r" % out)
        as_root, maps_root, root_files = [], set(), []
        for hp in procs_in(ns):
            st = proc_status(hp)
            uids, gids = st.get("Uid", "").split(), st.get("Gid", "").split()
            if not uids or "0" in uids or not gids or "0" in gids:
                as_root.append("%d %s" % (hp, st.get("Name")))
            for m in read_text("/proc/%d/uid_map" % hp).splitlines():
                inside, outside, count = (int(x) for x in m.split())
                if outside <= 0 < outside + count:
                    maps_root.add(" ".join(m.split()))
        p.expect(not as_root, "sandbox processes run as host uid/gid 0: %s" % as_root)
        p.expect(not maps_root, "uid_map maps host uid 0: %s" % sorted(maps_root))
        init = init_hostpid(ns)
        for name in ("suidroot", "apt42", "nobody"):
            try:
                st = os.stat("/proc/%d/root/testbed/%s" % (init, name))
                if st.st_uid == 0 or st.st_gid == 0:
                    root_files.append("%s (%d:%d%s)" % (name, st.st_uid, st.st_gid,
                                                        " setuid" if st.st_mode & 0o4000 else ""))
                inside = {"apt42": 42, "nobody": 65534}.get(name)
                p.expect(st.st_uid != inside, "sandbox uid %s is host uid %d (not shifted into "
                         "an unprivileged range)" % (inside, st.st_uid))
            except OSError as e:
                p.expect(False, "cannot stat /testbed/%s from the host: %s" % (name, e))
        p.expect(not root_files, "files the sandbox made belong to host uid/gid 0: %s" % root_files)
    p.raise_if()


def denied_syscalls(d):
    """bpf, keyctl/add_key/request_key, perf_event_open, userfaultfd, io_uring,
    Linux AIO (io_setup & co.: a host-wide pool), module loading, kexec, clock setting, reboot, swap, syslog, handles,
    kcmp, pidfd_getfd, fanotify, quotactl, acct, iopl: each refused. The
    arguments are such that a call that got through would be harmless."""
    code = r'''
res = {}
def rec(name, r, e):
    if r > 2 and name not in ("iopl", "ioperm", "kcmp", "quotactl(Q_SYNC)"):
        try:
            os.close(r)
        except OSError:
            pass
    res[name] = ename(e) if r == -1 else "returned %d" % r
battr = (ctypes.c_uint32 * 18)(2, 4, 4, 1)                  # BPF_MAP_CREATE array 4/4/1
rec("bpf(MAP_CREATE)", *sc(321, 0, ctypes.byref(battr), 72))
rec("keyctl(GET_KEYRING_ID)", *sc(250, 0, -3, 0))
rec("add_key", *sc(248, b"user", b"llmbox-sectest", b"x", 1, -2))
rec("request_key", *sc(249, b"user", b"llmbox-sectest-none", None, 0))
pattr = (ctypes.c_uint64 * 16)()
pattr[0] = 1 | (112 << 32)                                   # PERF_TYPE_SOFTWARE, size 112
pattr[5] = 1 | (1 << 5) | (1 << 6)                           # disabled, exclude kernel/hv
rec("perf_event_open", *sc(298, ctypes.byref(pattr), 0, -1, -1, 0))
rec("userfaultfd", *sc(323, 0o2000000))
uparams = (ctypes.c_uint8 * 120)()
rec("io_uring_setup", *sc(425, 1, ctypes.byref(uparams)))
rec("io_uring_enter", *sc(426, 999, 0, 0, 0, None, 0))
rec("io_uring_register", *sc(427, 999, 0, None, 0))
img = ctypes.create_string_buffer(16)
rec("init_module", *sc(175, img, 16, b""))
rec("finit_module", *sc(313, 999, b"", 0))
rec("delete_module", *sc(176, b"llmbox_sectest_none", 0o4000))
rec("kexec_load", *sc(246, 0, 0, None, 0xdead0000))
rec("kexec_file_load", *sc(320, 999, 999, 0, b"", 0xdead0000))
rec("settimeofday(NULL, NULL)", *sc(164, None, None))
rec("clock_settime(REALTIME, NULL)", *sc(227, 0, None))
rec("clock_adjtime(REALTIME, NULL)", *sc(305, 0, None))
rec("adjtimex(NULL)", *sc(159, None))
rec("reboot(bad magic)", *sc(169, 0, 0, 0, None))
rec("swapon", *sc(167, b"/nonexistent", 0))
rec("swapoff", *sc(168, b"/nonexistent"))
rec("syslog(READ_ALL)", *sc(103, 3, ctypes.create_string_buffer(64), 64))
fh = (ctypes.c_uint8 * 136)(); ctypes.c_uint32.from_buffer(fh).value = 128
mid = ctypes.c_int(0)
rec("name_to_handle_at", *sc(303, -100, b"/", ctypes.byref(fh), ctypes.byref(mid), 0))
rec("open_by_handle_at", *sc(304, -100, ctypes.byref(fh), 0))
me = os.getpid()
rec("kcmp", *sc(312, me, me, 0, 0, 0))
rec("pidfd_getfd", *sc(438, 999, 0, 0))
rec("fanotify_init(REPORT_FID)", *sc(300, 0x200, 0))
rec("quotactl(Q_SYNC)", *sc(179, 0x80000100, None, 0, None))
rec("acct(NULL)", *sc(163, None))
rec("iopl(3)", *sc(172, 3))
rec("ioperm", *sc(173, 0x80, 1, 1))
rec("lookup_dcookie", *sc(212, 0, None, 0))
rec("vhangup", *sc(153))
rec("sethostname", *sc(170, b"x", 1))
# Linux AIO: one host-wide pool of events (fs.aio-max-nr); nr_events 1 would be harmless
ctx = ctypes.c_ulong(0)
rec("io_setup", *sc(206, 1, ctypes.byref(ctx)))
rec("io_destroy", *sc(207, 0))
rec("io_submit", *sc(209, 0, 0, None))
rec("io_cancel", *sc(210, 0, None, None))
rec("io_getevents", *sc(208, 0, 0, 0, None, None))
rec("io_pgetevents", *sc(333, 0, 0, 0, None, None, None))
out(res)
'''
    p = Problems()
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        res = py(c, sid, code)
        # the shell survived whatever got through
        p.expect(sh(c, sid, "echo ok") == "ok\n", "sandbox unusable after the syscalls")
    # ENOSYS: the kernel lacks the call (lookup_dcookie is gone since 6.8)
    bad = {k: v for k, v in res.items() if v not in ("EPERM", "EACCES") and
           not (v == "ENOSYS" and k == "lookup_dcookie")}
    p.expect(not bad, "not refused: %s" % bad)
    p.raise_if()


def vsock_denied(d):
    """AF_VSOCK sockets (the hypervisor's and other VMs' vsock services)
    cannot be created: socket() and socketpair() answer EAFNOSUPPORT, also
    with high bits set in the family argument (the kernel reads an int)."""
    code = r'''
res = {}
for name, fam in (("socket(AF_VSOCK)", 40), ("socket(AF_VSOCK|1<<32)", 40 | 1 << 32)):
    for typ in (1, 2, 5):                       # STREAM, DGRAM, SEQPACKET
        r, e = sc(41, fam, typ, 0)
        res["%s type %d" % (name, typ)] = ename(e) if r == -1 else "created"
sv = (ctypes.c_int * 2)()
r, e = sc(53, 40, 1, 0, ctypes.byref(sv))
res["socketpair(AF_VSOCK)"] = ename(e) if r == -1 else "created"
r, e = sc(41, 1, 1, 0)                           # AF_UNIX still works
res["socket(AF_UNIX)"] = "created" if r >= 0 else ename(e)
out(res)
'''
    p = Problems()
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        res = py(c, sid, code)
    bad = {k: v for k, v in res.items() if k != "socket(AF_UNIX)" and v != "EAFNOSUPPORT"}
    p.expect(not bad, "AF_VSOCK not refused with EAFNOSUPPORT: %s" % bad)
    p.expect(res.get("socket(AF_UNIX)") == "created", "AF_UNIX broken: %s" % res)
    p.raise_if()


def proc_host_info(d):
    """/proc/cmdline (the host kernel's boot line) and the other masked
    host-identifying /proc files read as empty inside a sandbox."""
    p = Problems()
    host_cmdline = read_text("/proc/cmdline").strip()
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        out = sh(c, sid, "for f in cmdline config.gz modules key-users bootconfig kallsyms; do "
                         "[ -e /proc/$f ] && echo \"$f $(wc -c < /proc/$f)\"; done; "
                         "cat /proc/cmdline")
    sizes = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            sizes[parts[0]] = int(parts[1])
    shown = {k: v for k, v in sizes.items() if v}
    p.expect(not shown, "host files readable inside (bytes): %s" % shown)
    if host_cmdline:
        p.expect(host_cmdline not in out, "the host kernel command line is visible inside")
    p.raise_if()


def foreign_abi(d):
    """i386 (int 0x80) and x32 system calls cannot be used to dodge the
    filter: the process is killed (or the kernel has no such ABI)."""
    code = r'''
import mmap, signal, subprocess
prog = r"""
import ctypes, mmap, sys
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(bytes([0xb8, 0x14, 0, 0, 0, 0xcd, 0x80, 0xc3]))   # mov eax, 20 (getpid); int 0x80; ret
f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
print("i386 getpid returned", f())
"""
res = {}
p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True)
res["i386"] = ("killed by %s" % signal.Signals(-p.returncode).name if p.returncode < 0
               else "exit %d %s" % (p.returncode, (p.stdout + p.stderr).strip()[-100:]))
x32 = r"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
r = libc.syscall(ctypes.c_long(0x40000000 | 39))             # x32 getpid
print("x32 getpid returned", r, ctypes.get_errno())
"""
p = subprocess.run([sys.executable, "-c", x32], capture_output=True, text=True)
res["x32"] = ("killed by %s" % signal.Signals(-p.returncode).name if p.returncode < 0
              else "exit %d %s" % (p.returncode, p.stdout.strip()))
out(res)
'''
    p = Problems()
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        res = py(c, sid, code)
    p.expect(res["i386"] in ("killed by SIGSYS", "killed by SIGSEGV"),
             "i386 syscall: %s" % res["i386"])
    p.expect(res["x32"] == "killed by SIGSYS" or res["x32"].endswith(" -1 38"),
             "x32 syscall: %s" % res["x32"])
    p.raise_if()


def cgroup_procsys_writes(d):
    """No file of /sys/fs/cgroup or /proc/sys, nor /proc/sysrq-trigger, can be
    opened for writing, no cgroup filesystem can be mounted (the
    release_agent trick), and the host side is unchanged."""
    p = Problems()
    code = r'''
res = {}
paths = ["/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sys/vm/drop_caches",
         "/proc/sys/kernel/hostname", "/proc/sys/fs/binfmt_misc/register", "/proc/sysrq-trigger",
         "/proc/sys/kernel/panic", "/proc/sys/net/ipv4/ip_forward", "/proc/kcore",
         "/sys/kernel/uevent_helper", "/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/pids.max",
         "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes",
         "/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/memory/release_agent",
         "/sys/fs/cgroup/cgroup.subtree_control"]
for top in ("/sys/fs/cgroup", "/proc/sys/kernel"):
    for dp, dn, fn in os.walk(top):
        paths += [os.path.join(dp, f) for f in fn]
        if len(paths) > 3000:
            break
for path in paths:
    try:
        fd = os.open(path, os.O_WRONLY)      # opened only: never written
        os.close(fd)
        res[path] = "opened for writing"
    except OSError as e:
        pass
os.makedirs("/tmp/cg", exist_ok=True)
for fstype, opts in ((b"cgroup2", None), (b"cgroup", b"memory"), (b"cgroup", b"none,name=x"),
                     (b"sysfs", None), (b"proc", None)):
    r, e = sc(165, b"x", b"/tmp/cg", fstype, 0, opts)
    if r == 0:
        res["mount %s" % fstype.decode()] = "mounted"
out(res)
'''
    core = read_text("/proc/sys/kernel/core_pattern")
    with d.connect() as c:
        sid = c.create(memory_mib=256, pids=100)
        ns = pidns_of(c, sid)
        init = init_hostpid(ns)
        pmax = cgroup_file(init, "pids", "pids.max")
        pm_before = read_text(pmax)
        res = py(c, sid, code)
        p.expect(not res, "writable from inside: %s" % dict(list(res.items())[:12]))
        p.expect(read_text(pmax) == pm_before, "pids.max changed: %r" % read_text(pmax))
    p.expect(read_text("/proc/sys/kernel/core_pattern") == core, "host core_pattern changed")
    p.raise_if()


def oom_score_adj(d):
    """A sandbox process cannot make itself unkillable by the OOM killer
    (oom_score_adj below 0 needs CAP_SYS_RESOURCE): else a memory bomb
    would stall instead of dying."""
    p = Problems()
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        out = sh(c, sid, "cat /proc/self/oom_score_adj; (echo -1000 > /proc/self/oom_score_adj) "
                         "2>/dev/null; cat /proc/self/oom_score_adj; (echo -1 > "
                         "/proc/$$/oom_score_adj) 2>/dev/null; cat /proc/$$/oom_score_adj")
    vals = out.split()
    # 0 where init is shielded at -1000, 1000 where it cannot be (sandboxd
    # says which at start; test_hostpools.oom_init)
    p.expect(vals[:1] in (["0"], ["1000"]), "commands start at oom_score_adj %r" % vals[:1])
    p.expect(len(vals) == 3 and all(int(v) >= 0 for v in vals),
             "oom_score_adj lowered from inside: %r (start, after -1000, shell after -1)" % vals)
    p.raise_if()


CHECKS = [
    ("tiocsti", tiocsti),
    ("ptrace_vm_kill", ptrace_vm_kill),
    ("proc_exe_host_helper", proc_exe_host_helper),
    ("inherited_fds", inherited_fds),
    ("namespace_games", namespace_games),
    ("chroot_escape", chroot_escape),
    ("setuid_binary", setuid_binary),
    ("user_namespace", user_namespace),
    ("denied_syscalls", denied_syscalls),
    ("vsock_denied", vsock_denied),
    ("proc_host_info", proc_host_info),
    ("foreign_abi", foreign_abi),
    ("cgroup_procsys_writes", cgroup_procsys_writes),
    ("oom_score_adj", oom_score_adj),
]

if __name__ == "__main__":
    sys.exit(suite_main("security/", CHECKS))
