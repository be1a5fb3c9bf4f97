#!/usr/bin/env python3
"""Security: the file RPC (upload = write, download = read, list, stat) run
by sandboxd as host root on a tree the sandbox controls.

`..` in paths, symlinks to host paths (absolute, relative, in the middle and
at the end of a path, on /testbed itself), special files, /proc, and
symlinks swapped in by a loop inside the sandbox while the host reads and
writes (the race). Host canaries: a secret file that must never be read,
and a directory where nothing may ever be written. Run as root:

    python3 tests/security/test_files.py [CHECK...]
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seclib import Problems, sh, suite_main  # noqa: E402

CANARY = b"host-canary-never-leaves-the-host\n"


def _canaries(d):
    """A host directory with a secret file; returns (dir, secret path)."""
    host = os.path.join(d.tmp, "hostdir")
    os.makedirs(host, exist_ok=True)
    secret = os.path.join(host, "secret")
    with open(secret, "wb") as f:
        f.write(CANARY)
    return host, secret


def _host_untouched(p, host, secret):
    p.expect(sorted(os.listdir(host)) == ["secret"],
             "something was written on the host: %s" % sorted(os.listdir(host)))
    p.expect(open(secret, "rb").read() == CANARY, "the host secret was modified")


def _leaks(r):
    return CANARY.strip() in r.get("_data", b"") or CANARY.strip().decode() in repr(r)


def dotdot_paths(d):
    """Paths with `..` are refused (or stay inside the sandbox); nothing
    outside the sandbox is read or written."""
    p = Problems()
    host, secret = _canaries(d)
    depth = "/.." * 40
    with d.connect() as c:
        sid = c.create(memory_mib=128)
        for path in (depth + secret, "/testbed/.." + depth + secret, "/testbed/output/../../.." +
                     secret, "/../" * 10 + secret.lstrip("/"), "/testbed/output/..%2f..%2f" + secret,
                     "/testbed/./output/./../../.." + secret):
            r = c.call({"op": "read", "id": sid, "path": path})
            p.expect(not _leaks(r), "read %s leaked the host secret" % path)
            r = c.call({"op": "stat", "id": sid, "path": path})
            p.expect(r.get("type") in (None, "missing"), "stat %s: %r" % (path, r))
        for path in (depth + host + "/pwned", "/testbed/output/../../.." + host + "/pwned",
                     "/testbed/.." + depth + host + "/pwned"):
            r = c.call({"op": "write", "id": sid, "path": path}, b"pwned")
            r = c.call({"op": "list", "id": sid, "path": path.rsplit("/", 1)[0], "max_depth": 1})
            names = [e["path"] for e in r.get("entries", [])]
            p.expect("secret" not in names, "list %s shows the host dir: %s" % (path, names))
        p.expect(c.call({"op": "ping"}).get("ok"), "connection broken")
    _host_untouched(p, host, secret)
    p.raise_if()


def symlink_paths(d):
    """Symlinks planted by the sandbox (to host paths, to "/", relative
    climbs, on /testbed itself, as the final component) are never followed
    by read, write, list or stat."""
    p = Problems()
    host, secret = _canaries(d)
    with d.connect() as c:
        sid = c.create(memory_mib=128)
        sh(c, sid, "cd /testbed/output && ln -s %s abs && ln -s %s absdir && ln -s / root && "
                   "ln -s ../../../../../../../../..%s rel && ln -s ../../../../../../../../..%s reldir"
                   " && mkdir -p /data && ln -s %s /data/file && ln -s %s /tmp/dir"
                   % (secret, host, secret, host, secret, host))
        for path in ("/testbed/output/abs", "/testbed/output/absdir/secret",
                     "/testbed/output/root" + secret, "/testbed/output/rel",
                     "/testbed/output/reldir/secret", "/data/file", "/tmp/dir/secret"):
            r = c.call({"op": "read", "id": sid, "path": path})
            p.expect(r.get("ok") is False and not _leaks(r), "read %s: %r" % (path, r))
            r = c.call({"op": "stat", "id": sid, "path": path})
            p.expect(r.get("type") in ("other", "missing", None) and r.get("size", 0) != len(CANARY),
                     "stat %s: %r" % (path, r))
        for path in ("/testbed/output/absdir/pwned", "/testbed/output/root" + host + "/pwned",
                     "/testbed/output/reldir/pwned", "/tmp/dir/pwned"):
            r = c.call({"op": "write", "id": sid, "path": path}, b"pwned")
            p.expect(r.get("ok") is False, "write %s: %r" % (path, r))
        # a symlink as the final component is replaced, never written through
        r = c.call({"op": "write", "id": sid, "path": "/testbed/output/abs"}, b"replaced")
        r2 = sh(c, sid, "test -L /testbed/output/abs && echo link || cat /testbed/output/abs")
        p.expect(r2 == "replaced", "write onto a symlink: %r then %r" % (r, r2))
        r = c.call({"op": "list", "id": sid, "path": "/testbed/output", "max_depth": 8})
        names = [e["path"] for e in r.get("entries", [])]
        p.expect(not any("secret" in n for n in names), "list followed a symlink: %s" % names)
        # /testbed itself becomes a symlink to the host directory
        sh(c, sid, "mv /testbed /testbed.real && ln -s %s /testbed" % host)
        r = c.call({"op": "read", "id": sid, "path": "/testbed/secret"})
        p.expect(r.get("ok") is False and not _leaks(r), "read via /testbed link: %r" % r)
        r = c.call({"op": "write", "id": sid, "path": "/testbed/pwned"}, b"pwned")
        p.expect(r.get("ok") is False, "write via /testbed link: %r" % r)
        r = c.call({"op": "list", "id": sid, "path": "/testbed", "max_depth": 2})
        p.expect(r.get("ok") is False or not r.get("entries"), "list via /testbed link: %r" % r)
        # /proc and /dev are not the sandbox's files
        for path in ("/proc/1/environ", "/proc/self/root" + secret, "/proc/1/root" + secret,
                     "/dev/pts/ptmx"):
            r = c.call({"op": "read", "id": sid, "path": path})
            p.expect(r.get("ok") is False and not _leaks(r), "read %s: %r" % (path, r))
        r = c.call({"op": "write", "id": sid, "path": "/proc/sys/kernel/domainname"}, b"x")
        p.expect(r.get("ok") is False, "write into /proc/sys: %r" % r)
    _host_untouched(p, host, secret)
    p.raise_if()


def special_files(d):
    """A fifo, a socket or a device where a file is expected: read fails at
    once, write does not block on it, sandboxd keeps answering."""
    p = Problems()
    with d.connect() as c:
        sid = c.create(memory_mib=128)
        sh(c, sid, "mkfifo /testbed/output/fifo; python3 -c 'import socket; "
                   "socket.socket(socket.AF_UNIX).bind(\"/testbed/output/sock\")'; "
                   "ln /dev/null /testbed/output/null 2>/dev/null; "
                   "(sleep 30 > /testbed/output/fifo &) ; true")
        for path in ("/testbed/output/fifo", "/testbed/output/sock", "/dev/zero", "/dev/tty"):
            t0 = time.time()
            r = c.call({"op": "read", "id": sid, "path": path})
            p.expect(r.get("ok") is False and time.time() - t0 < 2,
                     "read %s: %r after %.1f s" % (path, r, time.time() - t0))
        # a write may replace the node with a regular file (write renames into
        # place), but must never open the fifo or device and block on it
        for path in ("/testbed/output/fifo", "/dev/tty"):
            t0 = time.time()
            r = c.call({"op": "write", "id": sid, "path": path}, b"x")
            p.expect(time.time() - t0 < 2, "write %s took %.1f s" % (path, time.time() - t0))
        p.expect(c.call({"op": "ping"}).get("ok"), "sandboxd stopped answering")
    p.raise_if()


def symlink_race(d):
    """While a loop inside the sandbox swaps a directory and a file with
    symlinks to host paths (rename, so each swap is atomic), hundreds of
    host-side reads, writes, lists and stats never leave the sandbox."""
    p = Problems()
    host, secret = _canaries(d)
    swapper = r'''
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
os.chdir("/testbed/output")
os.makedirs("d", exist_ok=True)
open("d/secret", "w").write("inside\n")
open("f", "w").write("inside\n")
os.makedirs("p" + os.path.dirname(SECRET), exist_ok=True)
open("p" + SECRET, "w").write("inside\n")
os.symlink(HOST, "d.alt")
os.symlink(SECRET, "f.alt")
os.symlink("/", "p.alt")
end = time.time() + 25
while time.time() < end and not os.path.exists("/tmp/stop"):
    for n in (b"d", b"f", b"p"):
        # renameat2(RENAME_EXCHANGE): n flips between the real thing and a symlink, atomically
        if libc.syscall(316, -100, n, -100, n + b".alt", 2) != 0:
            raise SystemExit("renameat2: errno %d" % ctypes.get_errno())
'''.replace("HOST", repr(host)).replace("SECRET", repr(secret))
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        sh(c, sid, "cat > /tmp/swap.py <<'EOF'\n%s\nEOF\n(python3 /tmp/swap.py &) ; sleep 0.3" % swapper)
        counts = {"read": 0, "write": 0, "list": 0, "stat": 0}
        inside = 0
        end = time.time() + 4.0
        while time.time() < end:
            for path in ("/testbed/output/d/secret", "/testbed/output/f",
                         "/testbed/output/p" + secret):
                r = c.call({"op": "read", "id": sid, "path": path})
                counts["read"] += 1
                if r.get("ok"):
                    inside += 1
                p.expect(not _leaks(r), "read %s returned the host secret" % path)
                r = c.call({"op": "stat", "id": sid, "path": path})
                counts["stat"] += 1
                p.expect(r.get("size") != len(CANARY), "stat %s saw the host secret: %r"
                         % (path, r))
            for path in ("/testbed/output/d/pwned", "/testbed/output/f",
                         "/testbed/output/p" + host + "/pwned"):
                c.call({"op": "write", "id": sid, "path": path}, b"pwned")
                counts["write"] += 1
            r = c.call({"op": "list", "id": sid, "path": "/testbed/output/d", "max_depth": 2})
            counts["list"] += 1
            p.expect(not any(e["path"] == "pwned" and e.get("size") == len(CANARY)
                             for e in r.get("entries", [])), "list saw the host dir")
            if len(p) > 5:
                break
        sh(c, sid, "touch /tmp/stop")
        p.expect(inside > 0, "the race never let a read through: the swapper did not run? %s"
                 % counts)
    _host_untouched(p, host, secret)
    # keep one message per kind
    p[:] = list(dict.fromkeys(p))[:5]
    if not p:
        sys.stderr.write("symlink_race: %s calls, %d reads inside the sandbox\n" % (counts, inside))
    p.raise_if()


CHECKS = [
    ("dotdot_paths", dotdot_paths),
    ("symlink_paths", symlink_paths),
    ("special_files", special_files),
    ("symlink_race", symlink_race),
]

if __name__ == "__main__":
    sys.exit(suite_main("security/", CHECKS))
