#!/usr/bin/env python3
"""A 3-step Dockerfile (COPY, RUN, ENV on a small base), cold and cached:
`llmbox image build -f` (each RUN in a sandbox of sandboxd) against
`buildah bud --layers` of the same file and context, in the same run
(buildah with --isolation chroot and the vfs storage driver in a temp
root, the base image pulled into that root from the same OCI layout).

Cold: llmbox --no-cache, buildah --no-cache (both still run every step
and register the image). Cached: the same build again, nothing changed.
The two tools alternate round by round. Run as root:

    python3 bench/image_build.py [--rounds 5]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
from oci_images import tiny_rootfs, umoci_image  # noqa: E402
from sandbox_rpc import BIN, Daemon  # noqa: E402

DOCKERFILE = """\
FROM team/base:1
COPY data /data
RUN mkdir -p /opt/out && cat /data/* > /opt/out/all && echo done
ENV READY=1
"""


def timed(argv, env=None):
    t = time.monotonic()
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise SystemExit("%s failed: %s %s" % (argv[:3], r.stdout[-2000:], r.stderr[-2000:]))
    return time.monotonic() - t, r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="llmbox-bench-build-")
    try:
        root = tiny_rootfs(os.path.join(tmp, "rootfs"))
        lay = umoci_image(tmp, root, env=["PATH=/usr/bin:/bin"], tag="v1")
        ctx = os.path.join(tmp, "ctx")
        os.makedirs(os.path.join(ctx, "data"))
        for i in range(50):
            with open(os.path.join(ctx, "data", "f%02d" % i), "wb") as f:
                f.write(os.urandom(20000))
        df = os.path.join(tmp, "Dockerfile")
        with open(df, "w") as f:
            f.write(DOCKERFILE)
        store = os.path.join(tmp, "store")
        os.makedirs(store)
        env = dict(os.environ, LLMBOX_IMAGE_STORE=store)
        subprocess.check_call([BIN, "image", "import", lay, "team/base:1"], env=env, stdout=subprocess.DEVNULL)
        broot = os.path.join(tmp, "buildah")
        bud = ["buildah", "--root", broot + "/root", "--runroot", broot + "/run", "--storage-driver", "vfs"]
        subprocess.check_call(bud + ["pull", "-q", "oci:%s:v1" % lay], stdout=subprocess.DEVNULL)
        ids = subprocess.check_output(bud + ["images", "-q"], text=True).split()
        subprocess.check_call(bud + ["tag", ids[0], "localhost/team/base:1"])
        res = {k: [] for k in ("llmbox cold", "llmbox cached", "buildah cold", "buildah cached")}
        with Daemon(env={"LLMBOX_IMAGE_STORE": store, "LLMBOX_POOL_SIZE": "0"}) as d:
            env.update(LLMBOX_VAR=d.var, LLMBOX_SANDBOXD_SOCKET=d.sock)

            def ours(cached):
                t, r = timed([BIN, "image", "build", "-f", df] + ([] if cached else ["--no-cache"]) +
                             ["bench/out:1", ctx], env)
                want = "0 run in a sandbox" if cached else "1 run in a sandbox"
                assert want in r.stdout, r.stdout
                return t

            def theirs(cached):
                t, r = timed(bud + ["bud", "-q", "--isolation", "chroot", "--layers"] +
                             ([] if cached else ["--no-cache"]) + ["-f", df, "-t", "bench/out:1", ctx])
                return t

            ours(False)  # warm the page cache for both, untimed
            theirs(False)
            for i in range(a.rounds):
                order = [("llmbox", ours), ("buildah", theirs)]
                if i % 2:
                    order.reverse()
                for name, fn in order:
                    res[name + " cold"].append(fn(False))
                    res[name + " cached"].append(fn(True))
        print("machine: %s, load %s" % (os.uname().nodename, open("/proc/loadavg").read().split()[:3]))
        print("| what | llmbox median (s) | buildah median (s) | ratio llmbox / buildah | llmbox runs | buildah runs |")
        print("| --- | --- | --- | --- | --- | --- |")
        for k in ("cold", "cached"):
            o, t = res["llmbox " + k], res["buildah " + k]
            print("| %s | %.3f | %.3f | %.2f | %s | %s |" % (
                k, statistics.median(o), statistics.median(t), statistics.median(o) / statistics.median(t),
                " ".join("%.3f" % x for x in o), " ".join("%.3f" % x for x in t)))
    finally:
        subprocess.call(["buildah", "--root", os.path.join(tmp, "buildah", "root"), "--runroot",
                         os.path.join(tmp, "buildah", "run"), "--storage-driver", "vfs", "rm", "--all"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
