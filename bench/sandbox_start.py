#!/usr/bin/env python3
"""Sandbox start benchmark: create + first command + destroy, llmbox vs bwrap.

Both run `true` in the same Debian root (var/images/default/rootfs) in the
same run on the same machine. llmbox: one RPC connection to a private
sandboxd, per iteration `create` (namespaces, overlay, cgroups, shell),
`exec true`, `destroy`. bwrap: `bwrap --ro-bind ROOT / --proc /proc --dev
/dev --tmpfs /tmp --unshare-all --die-with-parent true` (a fresh process,
namespaces and mounts, no overlay, no persistent shell, no cgroups).
Prints the median and p90 of each and the ratio llmbox/bwrap. Run as root.

    python3 bench/sandbox_start.py [N]
"""
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
from test_sandbox import BIN, IMAGES, Conn  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 50
ROOT = os.path.join(IMAGES, "default", "rootfs")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def bench_llmbox():
    tmp = tempfile.mkdtemp(prefix="llmbox-bench-")
    sock = os.path.join(tmp, "sd.sock")
    env = dict(os.environ, LLMBOX_VAR=os.path.join(tmp, "var"), LLMBOX_IMAGE_STORE=IMAGES)
    proc = subprocess.Popen([BIN, "sandboxd", "--socket", sock], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        c = Conn(sock)
        times = []
        for i in range(N + 3):
            t0 = time.perf_counter()
            r = c.call({"op": "create", "image": "default"})
            assert r.get("ok"), r
            e = c.exec(r["id"], "true")
            assert e.get("ok") and e.get("exit_code") == 0, e
            c.call({"op": "destroy", "id": r["id"]})
            if i >= 3:  # warm-up
                times.append((time.perf_counter() - t0) * 1000)
        c.close()
        return times
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def bench_bwrap():
    argv = ["bwrap", "--ro-bind", ROOT, "/", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp", "--unshare-all", "--die-with-parent", "true"]
    times = []
    for i in range(N + 3):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True)
        if i >= 3:
            times.append((time.perf_counter() - t0) * 1000)
    return times


def main():
    if os.geteuid() != 0 or not os.path.isdir(ROOT) or not shutil.which("bwrap"):
        print("needs root, the default image (make image) and bwrap (apt-get install bubblewrap)")
        return 1
    lb = bench_llmbox()
    bw = bench_bwrap()
    print("machine: %s, %d cpus, kernel %s" % (platform.machine(), os.cpu_count(), platform.release()))
    print("iterations: %d (after 3 warm-up)" % N)
    for name, xs in (("llmbox create+exec+destroy", lb), ("bwrap true", bw)):
        print("%-28s median %7.2f ms   p90 %7.2f ms" % (name, statistics.median(xs), pct(xs, 0.9)))
    print("ratio llmbox/bwrap (median): %.2fx" % (statistics.median(lb) / statistics.median(bw)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
