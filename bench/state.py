#!/usr/bin/env python3
"""Save, restore and freeze of a sandbox (follow-ups), against a fresh
sandboxd (tests/lib/sandbox_rpc.Daemon; run as root from the repo root):

  - save and restore time of a sandbox whose /testbed holds 50 MB: half
    random bytes (incompressible), half text (a Python tree's kind), in 500
    files; each run saves as a new state and restores it into a new sandbox
    (the pool off, so the restore includes a cold create); the time to the
    first command's answer after the restore, with the files checked;
  - memory of a sandbox frozen: its memory cgroup's usage before the freeze,
    frozen, and after thaw, with a 200 MB Python process holding its pages.

    python3 bench/state.py [--runs N]
"""
import argparse
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
from sandbox_rpc import Daemon, cgroup_file, init_hostpid, pidns_of, read_text  # noqa: E402

FILL = ("mkdir -p /testbed/data && cd /testbed/data && "
        "for i in $(seq 1 250); do head -c 100000 /dev/urandom > r$i.bin; done && "
        "for i in $(seq 1 250); do yes 'def f(x): return x * 2  # a line of code' | head -c 100000 > t$i.py; done && "
        "du -sb /testbed | cut -f1")


def ms(t):
    return (time.monotonic() - t) * 1000


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def mem_usage(ns):
    p = cgroup_file(init_hostpid(ns), "memory", "memory.usage_in_bytes") or \
        cgroup_file(init_hostpid(ns), "memory", "memory.current")
    return int(read_text(p, "0").strip() or 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    with Daemon(env={"LLMBOX_POOL_SIZE": "0"}) as d:
        c = d.connect()
        sid = c.call({"op": "create", "memory_mib": 1024})["id"]
        size = int(c.exec(sid, FILL, 120000)["stdout"].strip())
        saves, restores, firsts, sizes = [], [], [], []
        for i in range(a.runs):
            t = time.monotonic()
            r = c.call({"op": "save", "id": sid, "state": "b%d" % i})
            saves.append(ms(t))
            assert r.get("ok"), r
            sizes.append(r["bytes"])
            t = time.monotonic()
            r = c.call({"op": "create", "restore": "b%d" % i, "memory_mib": 1024})
            restores.append(ms(t))
            assert r.get("ok"), r
            out = c.exec(r["id"], "du -sb /testbed | cut -f1")
            firsts.append(ms(t))
            assert int(out["stdout"].strip()) == size, (out, size)
            c.destroy(r["id"])
        print("testbed %d bytes (500 files); state %d bytes (%.0f %%)" % (size, sizes[0], 100.0 * sizes[0] / size))
        for name, xs in (("save", saves), ("create+restore", restores), ("restore to first answer", firsts)):
            print("%-24s p50 %6.0f ms  p90 %6.0f ms  min %6.0f ms  (n=%d)" % (name, statistics.median(xs),
                                                                          pct(xs, 90), min(xs), len(xs)))
        # memory of a frozen sandbox
        ns = pidns_of(c, sid)
        c.exec(sid, "rm -rf /testbed/data; (nohup python3 -c \"b = bytearray(200 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nimport time\ntime.sleep(600)\" >/dev/null 2>&1 &); sleep 2")
        before = mem_usage(ns)
        c.call({"op": "freeze", "id": sid})
        time.sleep(1)
        frozen = mem_usage(ns)
        c.call({"op": "thaw", "id": sid})
        time.sleep(0.5)
        after = mem_usage(ns)
        print("memory cgroup usage: running %.1f MiB, frozen %.1f MiB, thawed %.1f MiB" %
              (before / 1048576.0, frozen / 1048576.0, after / 1048576.0))
        c.destroy(sid)


if __name__ == "__main__":
    main()
