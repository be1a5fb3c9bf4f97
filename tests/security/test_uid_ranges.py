#!/usr/bin/env python3
"""Security: each sandbox has its own host uid range (the second security review, breaks 9 and 13).

Per-user kernel counters (pipe buffer pages, unix fds in flight, ...) are
kept per *host* uid. When every sandbox ran as the same host ids, one live
sandbox holding pipe buffers and fds in flight shrank every other sandbox's
pipes and made SCM_RIGHTS fail there. Also: the sandbox's mount table must
not name host paths (the image store, var/sandboxes/<id>).

    python3 tests/security/test_uid_ranges.py [CHECK...]

The attack is bounded: at most 512 pipes and 400 messages of 253 fds in
flight, held for about a second, in one sandbox whose limits stop it anyway.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seclib import (REPO, Daemon, Problems, init_hostpid, pidns_of, proc_status, procs_in,  # noqa: E402
                    py, sh, suite_main)

ID_COUNT = 65536

# Sandbox A takes as much of its host uid's pipe buffer budget
# (fs.pipe-user-pages-soft) and fds in flight (RLIMIT_NOFILE of the user)
# as the kernel lets it, then holds them until its stdin closes.
HOG = r'''
import fcntl, socket, array, time
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032
pipes, big, small = [], 0, 0
# 1 MiB pipes until the kernel refuses (the soft limit is reached) ...
for i in range(256):
    r, w = os.pipe()
    pipes.append((r, w))
    try:
        fcntl.fcntl(w, F_SETPIPE_SZ, 1 << 20)
        big += 1
    except OSError:
        break
# ... then default pipes until new ones come out shrunk
for i in range(256):
    r, w = os.pipe()
    pipes.append((r, w))
    if fcntl.fcntl(w, F_GETPIPE_SZ) < 65536:
        small += 1
        break
# fds in flight: 253 per message (SCM_MAX_FD) over a few stream socketpairs,
# until ETOOMANYREFS (the user's in-flight count passed RLIMIT_NOFILE)
pairs, sent, why = [], 0, ""
fds = array.array("i", [pipes[0][0]] * 253)
for k in range(40):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    a.setblocking(False)
    pairs.append((a, b))
    full = False
    for m in range(64):
        if sent >= 400:
            break
        try:
            a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())])
            sent += 1
        except BlockingIOError:
            break
        except OSError as e:
            why = ename(e.errno)
            full = True
            break
    if full or sent >= 400:
        break
out({"big": big, "pipes": len(pipes), "shrunk": small, "msgs": sent, "stop": why})
sys.stdout.flush()
time.sleep(60)  # hold everything until the sandbox is destroyed
'''

# What sandbox B must still be able to do.
VICTIM = r'''
import fcntl, socket, array
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032
r, w = os.pipe()
size = fcntl.fcntl(w, F_GETPIPE_SZ)
try:
    fcntl.fcntl(w, F_SETPIPE_SZ, 1 << 20)
    grow = "ok"
except OSError as e:
    grow = ename(e.errno)
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r]).tobytes())])
    msg, anc, fl, ad = b.recvmsg(1, socket.CMSG_SPACE(4))
    fdpass = "ok" if anc else "no fd"
except OSError as e:
    fdpass = ename(e.errno)
out({"size": size, "grow": grow, "fdpass": fdpass})
'''


def _start_hog(c, sid):
    """Starts HOG in the background in sid; returns its report once it holds."""
    import json
    from seclib import PRELUDE
    sh(c, sid, "cat > /tmp/hog.py <<'LLMBOX_HOG_EOF'\n%s\n%s\nLLMBOX_HOG_EOF\n"
               "(python3 /tmp/hog.py </dev/null >/tmp/hog.out 2>&1 &)" % (PRELUDE, HOG))
    deadline = time.time() + 30
    so = ""
    while time.time() < deadline:
        so = sh(c, sid, "cat /tmp/hog.out")
        if "@@JSON@@" in so:
            break
        time.sleep(0.2)
    i = so.rfind("@@JSON@@")
    if i < 0:
        raise AssertionError("the hog printed no report: %r" % so[-400:])
    return json.loads(so[i + 8:].splitlines()[0])


def kernel_counters_per_sandbox(d):
    """A holds its pipe buffer budget and ~65k fds in flight; B's pipes stay
    64 KiB, F_SETPIPE_SZ to 1 MiB works and an fd still passes."""
    p = Problems()
    with d.connect() as ca, d.connect() as cb:
        a = ca.create(memory_mib=256)
        b = cb.create(memory_mib=256)
        before = py(cb, b, VICTIM)
        p.expect(before == {"size": 65536, "grow": "ok", "fdpass": "ok"},
                 "B before the attack: %r" % before)
        hog = None
        try:
            hog = _start_hog(ca, a)
            # the attack must have been real: A's own pipes shrank or its
            # 1 MiB pipes were refused, and its fds in flight hit the limit
            p.expect(hog["shrunk"] or hog["big"] < 256, "A never reached the pipe limit: %r" % hog)
            p.expect(hog["stop"] == "ETOOMANYREFS", "A never reached the in-flight limit: %r" % hog)
            after = py(cb, b, VICTIM)
            p.expect(after.get("size") == 65536,
                     "B's new pipe holds %r bytes while A holds its pipes (want 65536)" % after.get("size"))
            p.expect(after.get("grow") == "ok",
                     "B's F_SETPIPE_SZ to 1 MiB: %r while A holds its pipes" % after.get("grow"))
            p.expect(after.get("fdpass") == "ok",
                     "B passing one fd over a unix socket: %r while A holds fds in flight" % after.get("fdpass"))
        finally:
            # end the hold at once: interrupt A, then destroy it
            try:
                ca.call({"op": "destroy", "id": a})
            except Exception:  # noqa: BLE001
                pass
        cb.destroy(b)
    p.raise_if()


INOTIFY_HOLD = r'''
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
fds = [libc.inotify_init1(0) for i in range(100)]
print("held", sum(1 for f in fds if f >= 0), flush=True)
time.sleep(20)
'''

INOTIFY_COUNT = r'''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
fds = []
for i in range(100):
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
n = len(fds)
for fd in fds:
    os.close(fd)
out({"n": n})
'''


def _host_inotify(n):
    """How many of n inotify instances host root gets (closed at once)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    fds = []
    for _ in range(n):
        fd = libc.inotify_init1(0)
        if fd < 0:
            break
        fds.append(fd)
    for fd in fds:
        os.close(fd)
    return len(fds)


def user_counts_per_sandbox(d):
    """The user namespace's per-user counts are charged to its owner in the
    host namespace too (user.max_inotify_instances, 128): A holds 100
    inotify instances; B and host root still get 100 each."""
    p = Problems()
    limit = int(open("/proc/sys/user/max_inotify_instances").read())
    if limit < 100 or limit > 4096:
        raise AssertionError("user.max_inotify_instances is %d: this check assumes 100..4096" % limit)
    with d.connect() as c:
        a, b = c.create(), c.create()
        c.call({"op": "write", "id": a, "path": "/tmp/hold.py"}, INOTIFY_HOLD.encode())
        try:
            held = sh(c, a, "(python3 /tmp/hold.py >/tmp/hold.out 2>&1 </dev/null &); "
                            "for i in $(seq 50); do grep -q held /tmp/hold.out && break; sleep 0.1; "
                            "done; cat /tmp/hold.out")
            p.expect(held.strip() == "held 100", "A could not take 100 inotify instances: %r" % held)
            got = py(c, b, INOTIFY_COUNT).get("n")
            p.expect(got == 100, "B gets %r of 100 inotify instances while A holds 100" % got)
            host = _host_inotify(100)
            p.expect(host == 100, "host root gets %d of 100 inotify instances while A holds 100" % host)
        finally:
            c.destroy(a)
        c.destroy(b)
    p.raise_if()


def _uid_root(c, sid):
    """Host uid of the sandbox's root, from its own uid_map ("0 X 65536")."""
    f = sh(c, sid, "cat /proc/self/uid_map /proc/self/gid_map").split()
    assert len(f) == 6 and f[0] == "0" and f[2] == str(ID_COUNT) and f[3:] == f[:3], f
    return int(f[1])


def host_uid_ranges(d):
    """From the host: two live sandboxes run as different host uid ranges,
    neither inside the other's nor the image's; what each creates (by its
    processes, by the write RPC, by the input copy) is owned by its range;
    the image's files look owned by its own root."""
    p = Problems()
    with d.connect() as c:
        base = c.call({"op": "ping"}).get("uid_base")
        inp = os.path.join(d.tmp, "uidinput")
        os.makedirs(inp, exist_ok=True)
        with open(os.path.join(inp, "in.txt"), "w") as f:
            f.write("in\n")
        ids = [c.create(input_dir=inp), c.create(input_dir=inp)]
        roots = [_uid_root(c, s) for s in ids]
        p.expect(roots[0] != roots[1] and abs(roots[0] - roots[1]) >= ID_COUNT,
                 "the two sandboxes' ranges overlap: %r" % roots)
        for r in roots:
            p.expect(r >= base + ID_COUNT and (r - base) % ID_COUNT == 0 and r + ID_COUNT <= 1 << 31,
                     "range %d is not a slot above the image's (base %d) below 2^31" % (r, base))
        for sid, root, other in ((ids[0], roots[0], roots[1]), (ids[1], roots[1], roots[0])):
            # uid 1234: the image has E2B's `user` at 1000 already
            sh(c, sid, "sleep 30 >/dev/null 2>&1 & touch /tmp/r /testbed/r; useradd -u 1234 u1 "
                       ">/dev/null 2>&1; su -s /bin/sh u1 -c 'touch /tmp/u' ; true")
            c.call({"op": "write", "id": sid, "path": "/testbed/output/w.txt"}, b"w\n")
            ns = pidns_of(c, sid)
            procs = procs_in(ns)
            uids = set()
            for pid in procs:
                st = proc_status(pid)
                uids |= {int(x) for x in st.get("Uid", "").split() + st.get("Gid", "").split()}
            p.expect(len(procs) >= 3, "%d processes in sandbox %s" % (len(procs), sid[:8]))
            p.expect(uids == {root}, "sandbox %s processes run as host ids %r (want only %d)"
                     % (sid[:8], sorted(uids), root))
            p.expect(not any(other <= u < other + ID_COUNT for u in uids),
                     "sandbox %s runs inside the other's range" % sid[:8])
            top = "/proc/%d/root" % init_hostpid(ns)
            want = {"/tmp/r": root, "/testbed/r": root, "/tmp/u": root + 1234,
                    "/testbed/output/w.txt": root, "/testbed/input/in.txt": root,
                    "/usr/bin/ls": root, "/etc/passwd": root}
            for path, uid in want.items():
                try:
                    st = os.lstat(top + path)
                    seen = (st.st_uid, st.st_gid)
                except OSError as e:
                    seen = repr(e)
                p.expect(seen == (uid, uid), "%s in %s: host owner %r, want %d" % (path, sid[:8], seen, uid))
            inside = sh(c, sid, "stat -c %u:%g /usr/bin/ls /etc/shadow /testbed/input/in.txt /tmp/u")
            p.expect(inside == "0:0\n0:42\n0:0\n1234:1234\n", "owners seen inside: %r" % inside)
        for s in ids:
            c.destroy(s)
    p.raise_if()


def mountinfo_hides_host_paths(d):
    """The sandbox's mount table names no host path: not the repo, the
    image store, the var dir, nor var/sandboxes/<id>."""
    p = Problems()
    with d.connect() as c:
        sid = c.create()
        text = sh(c, sid, "cat /proc/self/mountinfo /proc/1/mountinfo /proc/self/mounts "
                          "/proc/mounts 2>&1")
        p.expect("overlay" in text, "no overlay in the mount table: %r" % text[:300])
        bad = [w for w in ("/work", REPO, d.var, d.tmp, "var/images", "var/sandboxes", "rootfs",
                           os.environ.get("LLMBOX_IMAGE_STORE", "/var/images"), sid)
               if w and w in text]
        p.expect(not bad, "the mount table shows %r: %s" % (bad, [l for l in text.splitlines()
                                                                  if any(b in l for b in bad)][:3]))
        c.destroy(sid)
    p.raise_if()


def shared_range_fallback(d):
    """LLMBOX_SANDBOX_UID_SLOTS=0 (what sandboxd falls back to without
    idmapped mounts): sandboxes share the image's range, and sandboxd says at
    start exactly which counters are then shared."""
    p = Problems()
    d2 = Daemon(env={"LLMBOX_SANDBOX_UID_SLOTS": "0", "LLMBOX_POOL_SIZE": "0"}).start()
    try:
        with d2.connect() as c:
            base = c.call({"op": "ping"}).get("uid_base")
            a, b = c.create(), c.create()
            roots = [_uid_root(c, s) for s in (a, b)]
            p.expect(roots == [base, base], "shared mode roots %r (want the base %r)" % (roots, base))
            out = sh(c, a, "stat -c %u /usr/bin/ls; touch /tmp/x && echo ok")
            p.expect(out == "0\nok\n", "shared mode sandbox: %r" % out)
            c.destroy(a)
            c.destroy(b)
        log = d2.log_tail(200)
        p.expect("pipe" in log and "fds in flight" in log and "shared" in log,
                 "no start warning naming the shared counters: %r" % log[-600:])
    finally:
        rc = d2.terminate()
        p.expect(rc == 0, "second sandboxd exit status %r" % rc)
        d2.stop()
    p.raise_if()


CHECKS = [
    ("kernel_counters_per_sandbox", kernel_counters_per_sandbox),
    ("user_counts_per_sandbox", user_counts_per_sandbox),
    ("host_uid_ranges", host_uid_ranges),
    ("mountinfo_hides_host_paths", mountinfo_hides_host_paths),
    ("shared_range_fallback", shared_range_fallback),
]

if __name__ == "__main__":
    sys.exit(suite_main("security/", CHECKS))
