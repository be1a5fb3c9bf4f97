#!/usr/bin/env python3
"""What a named user (E2B's `user`) costs a process start of sandboxd's own,
at the RPC level against a real sandboxd: proc_start of ["true"] attached
until its exit, as "user" (sandboxd reads the sandbox's /etc/passwd and
/etc/group from the host, the spawner's child drops to uid 1000 with its
groups), as "root" (no file read, no drop) and with no user (the image's
own), interleaved in one sandbox; then again with /etc/group padded to
250 KiB, the most a sandbox can make sandboxd read and parse per start.

    python3 bench/sandbox_user.py [--n 300]     (root, from the repo root)
"""
import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
from sandbox_rpc import Daemon  # noqa: E402


def one(c, sid, user):
    kw = {"user": user} if user else {}
    t0 = time.perf_counter()
    r = c.call(dict(kw, op="proc_start", id=sid, argv=["true"], attach=True))
    assert r.get("ok"), r
    while c.recv().get("event") not in ("exit", "gone"):
        pass
    return (time.perf_counter() - t0) * 1000


def p(a, q):
    s = sorted(a)
    return s[min(len(s) - 1, int(q * len(s)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    a = ap.parse_args()
    with open("/proc/loadavg") as f:
        load0 = " ".join(f.read().split()[:3])
    with Daemon(env={"LLMBOX_POOL_SIZE": "0"}) as d:
        c = d.connect()
        sid = c.create()
        for label in ("as built", "padded to 250 KiB"):
            if label != "as built":
                c.exec(sid, "for i in $(seq 5000); do echo \"pad$i:x:$((20000+i)):other,more\"; done >> /etc/group; "
                            "truncate -s 250K /etc/group")
            t = {"user": [], "root": [], None: []}
            for _ in range(a.n):
                for u in t:
                    t[u].append(one(c, sid, u))
            base = p(t[None], 0.5)
            print("/etc/group %s (n=%d each, interleaved):" % (label, a.n))
            for u, name in (("user", "as user"), ("root", "as root"), (None, "no user (peer)")):
                m = p(t[u], 0.5)
                print("    %-16s p50 %.3f ms, p90 %.3f, max %.3f: ratio to no user %.2f, %+.3f ms" % (
                    name, m, p(t[u], 0.9), max(t[u]), m / base, m - base))
        c.destroy(sid)
    with open("/proc/loadavg") as f:
        print("load at start %s, at end %s; %d cores" % (load0, " ".join(f.read().split()[:3]), os.cpu_count()))


if __name__ == "__main__":
    main()
