#!/usr/bin/env python3
"""What a file write as a named user (E2B's `user`) costs at the RPC level
against a real sandboxd: sandboxd's "write" of a 4 KiB file into
/home/user as "user" (host root's write, the file handed to the user:
sandbox_fs.c; the mode that took the user's filesystem ids for the call,
which this first measured, is gone), as "root" (handed to the sandbox's
root) and with no user, interleaved in one sandbox.
With --before BIN (an `llmbox` whose directory holds the sandboxd built
from the code before the change: it wrote as host root and chowned the
file to the user), the same runs against it in the same run, and the
ratio of "user" now to "user" before (both daemons run at once, their
calls interleaved).

    python3 bench/e2b_user_write.py [--n 500] [--before /tmp/old/build/llmbox]
"""
import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
import sandbox_rpc  # noqa: E402

DATA = b"x" * 4096


def one(c, sid, user, i):
    req = {"op": "write", "id": sid, "path": "/home/user/w-%s-%d.txt" % (user, i % 8), "excl": False}
    if user:
        req["user"] = user
    t0 = time.perf_counter()
    r = c.call(req, DATA)
    assert r.get("ok"), r
    return (time.perf_counter() - t0) * 1000


def p(a, q):
    s = sorted(a)
    return s[min(len(s) - 1, int(q * len(s)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--before", help="an llmbox binary beside the sandboxd from before the change")
    a = ap.parse_args()
    with open("/proc/loadavg") as f:
        load0 = " ".join(f.read().split()[:3])
    runs = [("now", sandbox_rpc.BIN)] + ([("before", a.before)] if a.before else [])
    # both daemons at once, their calls interleaved: the machine's load
    # falls on both alike
    daemons, conns = [], {}
    try:
        for label, binary in runs:
            sandbox_rpc.BIN = binary
            d = sandbox_rpc.Daemon(env={"LLMBOX_POOL_SIZE": "0"}).start()
            daemons.append(d)
            c = d.connect()
            conns[label] = (c, c.create())
        res = {label: {"user": [], "root": [], None: []} for label, _ in runs}
        for i in range(a.n):
            for label, _ in runs:
                c, sid = conns[label]
                for u in res[label]:
                    res[label][u].append(one(c, sid, u, i))
        for label, c_sid in conns.items():
            c_sid[0].destroy(c_sid[1])
    finally:
        for d in daemons:
            d.stop()
    for label, binary in runs:
        t = res[label]
        base = p(t[None], 0.5)
        print("%s (%s), a 4 KiB write into /home/user, n=%d each, interleaved:" % (label, binary, a.n))
        for u, name in (("user", "as user"), ("root", "as root"), (None, "no user (peer)")):
            m = p(t[u], 0.5)
            print("    %-16s p50 %.3f ms, p90 %.3f, max %.3f: ratio to no user %.2f, %+.3f ms" % (
                name, m, p(t[u], 0.9), max(t[u]), m / base, m - base))
    if "before" in res:
        now, before = p(res["now"]["user"], 0.5), p(res["before"]["user"], 0.5)
        print("as user, now against before: p50 %.3f ms against %.3f ms, ratio %.2f (%+.3f ms)" % (
            now, before, now / before, now - before))
    with open("/proc/loadavg") as f:
        print("load at start %s, at end %s; %d cores" % (load0, " ".join(f.read().split()[:3]), os.cpu_count()))


if __name__ == "__main__":
    main()
