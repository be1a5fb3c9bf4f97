#!/usr/bin/env python3
"""sandboxd killed -9 in the middle of each operation, then started again
on the same var dir (python3 stdlib only, run as root). With the worker
threads (sandboxd/workers.c) a kill can land while a worker is making a
sandbox, copying its input, tearing one down or refilling the pool, and
while the loop runs a command: after the restart, nothing of the killed
daemon may be left (no sandbox process, scratch dir, cgroup or mount), and
the new daemon serves.

    python3 tests/integration/test_sandboxd_kill9.py   (from the repo root)
"""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sandbox_rpc import Reporter, skip_reason  # noqa: E402
from test_sandbox_lifecycle import (Daemon, cgroups_of, host_mounts_under, procs_with,  # noqa: E402
                                    sandbox_mark, still_alive)

INPUT_MIB = 256


def in_flight(d, op, src):
    """Starts op on its own connection and returns once it is under way."""
    c = d.conn()
    if op == "exec":
        sid = c.call({"op": "create", "image": "default"})["id"]
        c.send({"op": "exec", "id": sid, "command": "sleep 100 & sleep 100"})
    elif op == "destroy":
        for _ in range(4):
            sid = c.call({"op": "create", "image": "default"})["id"]
            c.call({"op": "exec", "id": sid, "command": "sleep 100 &"})
        c.send({"op": "destroy", "id": sid})
    elif op == "create":
        c.send({"op": "create", "image": "default", "input_dir": src,
                "memory_mib": INPUT_MIB * 2 + 1024, "disk_mib": INPUT_MIB + 1024})
    time.sleep(0.05)
    return c


def kill9_during(tmp, src, op):
    var = os.path.join(tmp, "var-" + op)
    env = {"LLMBOX_POOL_SIZE": "4" if op == "refill" else "0"}
    d = Daemon(tmp, var, env, name=op)
    conns = []
    try:
        if op == "refill":
            time.sleep(0.02)  # the first refills are with the workers now
        else:
            # a few idle ones too, so there is more than the operation to clean up
            c = d.conn()
            for _ in range(2):
                c.call({"op": "create", "image": "default"})
            conns.append(c)
            conns.append(in_flight(d, op, src))
        procs = procs_with(sandbox_mark(var))
        sb_dir = os.path.join(var, "sandboxes")
        old = set(os.listdir(sb_dir)) if os.path.isdir(sb_dir) else set()
        d.proc.kill()
        d.proc.wait()
        d.log.close()
        d2 = Daemon(tmp, var, {"LLMBOX_POOL_SIZE": "0"}, name=op + "-restarted")
        try:
            # the socket exists before the stale cleanup runs; the first
            # answer comes after it (sandboxd serves once it is done)
            pc = d2.conn()
            assert pc.call({"op": "ping"}).get("ok"), "the restarted sandboxd does not answer"
            pc.close()
            end = time.time() + 10
            while time.time() < end and (still_alive(procs) or procs_with(sandbox_mark(var))):
                time.sleep(0.1)
            now = set(os.listdir(sb_dir)) if os.path.isdir(sb_dir) else set()
            left = []
            if still_alive(procs) or procs_with(sandbox_mark(var)):
                left.append("processes %r" % (still_alive(procs) or list(procs_with(sandbox_mark(var))))[:5])
            if old & now:
                left.append("scratch dirs %r" % sorted(old & now)[:5])
            if cgroups_of(var, old | now):
                left.append("cgroups %r" % cgroups_of(var, old | now)[:5])
            if host_mounts_under(var):
                left.append("mounts %r" % host_mounts_under(var)[:3])
            assert not left, "after kill -9 during %s and a restart: %s" % (op, "; ".join(left))
            c = d2.conn()
            r = c.call({"op": "create", "image": "default"})
            assert r.get("ok"), r
            x = c.call({"op": "exec", "id": r["id"], "command": "echo served"})
            assert x.get("stdout") == "served\n", x
            c.call({"op": "destroy", "id": r["id"]})
            c.close()
        finally:
            d2.stop()
    finally:
        for c in conns:
            c.close()
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()


def main():
    p = Reporter("sandboxd_kill9/")
    why = skip_reason()
    if why:
        print("SKIP sandboxd_kill9: %s" % why)
        return 0
    tmp = tempfile.mkdtemp(prefix="llmbox-kill9-")
    os.chmod(tmp, 0o755)
    src = os.path.join(tmp, "input")
    os.makedirs(src)
    with open(os.path.join(src, "big.bin"), "wb") as f:
        chunk = os.urandom(1 << 20)
        for _ in range(INPUT_MIB):
            f.write(chunk)
    os.chmod(src, 0o755)
    try:
        for op in ("create", "destroy", "exec", "refill"):
            p.run("kill9_during_%s_restart_leaves_nothing" % op, kill9_during, tmp, src, op)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return p.exit_code()


if __name__ == "__main__":
    sys.exit(main())
