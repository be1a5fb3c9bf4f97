#!/usr/bin/env python3
"""Whether a flood of E2B volume writes holds sandboxd's event loop: the
exec round trip (p50, p99) of a sandbox on another connection while one
connection writes a large file into a volume over and over (sandboxd's
"volume" write: the bytes, an fsync, a rename), against the same round
trip with no flood. With --before BIN (an `llmbox` whose directory holds a
sandboxd built from the code before volume requests moved to the worker
threads), the same runs against it in the same run, and the ratio of the
flood's p99 now to before.

    python3 bench/volume_loop.py [--n 150] [--mib 48] [--writes 8] [--before /tmp/old/bin/llmbox]

Run as root from the repo root, with the sandbox image (var/images).
"""
import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
import sandbox_rpc  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def rtts(c, sid, n):
    out = []
    for _ in range(n):
        t = time.monotonic()
        r = c.exec(sid, "true")
        out.append((time.monotonic() - t) * 1000.0)
        assert r.get("ok") and r.get("exit_code") == 0, r
    return out


def one_daemon(binary, n, mib, least):
    sandbox_rpc.BIN = binary
    res = {}
    with sandbox_rpc.Daemon(env={"LLMBOX_POOL_SIZE": "0", "LLMBOX_VOLUME_MAX_MB_PER_OWNER": "4096"}) as d:
        b = d.connect()
        sid = b.create()
        rtts(b, sid, 10)  # warm
        res["idle"] = rtts(b, sid, n)
        a = d.connect(timeout=300)
        r = a.call({"op": "volume", "action": "create", "owner": "bench", "name": "flood"})
        assert r.get("ok"), r
        vid = r["volume"]["id"]
        data = os.urandom(1 << 20) * mib
        stop = threading.Event()
        writes = []

        def flood():
            i = 0
            while not stop.is_set():
                t = time.monotonic()
                w = a.call({"op": "volume", "action": "write", "volume": vid, "path": "/f%d" % (i % 2)}, data)
                assert w.get("ok"), w
                writes.append((time.monotonic() - t) * 1000.0)
                i += 1
        th = threading.Thread(target=flood)
        th.start()
        time.sleep(0.5)
        # at least n round trips, and on through at least `least` whole writes,
        # so that both daemons are measured across as many writes
        res["flood"] = rtts(b, sid, n)
        while len(writes) < least:
            res["flood"] += rtts(b, sid, 10)
        stop.set()
        th.join()
        res["writes"] = writes
        b.destroy(sid)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=150)
    ap.add_argument("--mib", type=int, default=48)
    ap.add_argument("--writes", type=int, default=8, help="whole writes the flood's round trips span, at least")
    ap.add_argument("--before", default="")
    a = ap.parse_args()
    runs = [("now", sandbox_rpc.BIN)] + ([("before", a.before)] if a.before else [])
    out = {}
    for name, binary in runs:
        out[name] = one_daemon(binary, a.n, a.mib, a.writes)
        r = out[name]
        print("%-6s exec idle p50 %.2f ms p99 %.2f ms | during the flood (%d) p50 %.2f ms p99 %.2f ms max %.1f ms | "
              "%d writes of %d MiB, p50 %.0f ms" % (
                  name, pct(r["idle"], 50), pct(r["idle"], 99), len(r["flood"]), pct(r["flood"], 50), pct(r["flood"], 99),
                  max(r["flood"]), len(r["writes"]), a.mib, pct(r["writes"], 50) if r["writes"] else 0))
    if a.before:
        now, bef = out["now"], out["before"]
        print("flood p99 now / before: x%.3f; flood p50 now / before: x%.3f" % (
            pct(now["flood"], 99) / pct(bef["flood"], 99), pct(now["flood"], 50) / pct(bef["flood"], 50)))


if __name__ == "__main__":
    main()
