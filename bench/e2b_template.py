#!/usr/bin/env python3
"""E2B's Template.build through the SDK (tests/e2b/bench_template.mjs:
request, upload of the COPY's tar.gz, the steps made a Dockerfile, the
image job in sandboxd, polling at the SDK's 200 ms) against `llmbox image
build -f` of the same Dockerfile and context run directly as root against
the same sandboxd and store, in the same run, alternating round by round.
Each build has a new nonce in its RUN so neither hits the cache for it
(the COPY layer is cached for both after the first round). Run as root:

    python3 bench/e2b_template.py [--rounds 5]
"""
import argparse
import hashlib
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
from stack import LLMBOX, Stack  # noqa: E402

TOKEN = "bench-" + os.urandom(16).hex()
E2B_DIR = os.path.join(REPO, "tests", "e2b")
DOCKERFILE = """\
FROM team/base:1
COPY ["data", "/data"]
RUN ["/bin/sh", "-c", "mkdir -p /opt/out && cat /data/* > /opt/out/all && echo %s"]
ENV READY="1"
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="llmbox-bench-tpl-")
    os.chmod(tmp, 0o755)
    try:
        store = os.path.join(tmp, "store")
        os.makedirs(store)
        lay = umoci_image(tmp, tiny_rootfs(os.path.join(tmp, "rootfs")), env=["PATH=/usr/bin:/bin"], tag="v1")
        subprocess.check_call([LLMBOX, "image", "import", lay, "team/base:1"], stdout=subprocess.DEVNULL,
                              env=dict(os.environ, LLMBOX_IMAGE_STORE=store))
        ctx = os.path.join(tmp, "ctx")
        os.makedirs(os.path.join(ctx, "data"))
        for i in range(50):
            with open(os.path.join(ctx, "data", "f%02d" % i), "wb") as f:
                f.write(os.urandom(20000))
        res = {"sdk": [], "cli": []}
        with Stack(model=False, env={"LLMBOX_IMAGE_STORE": store, "LLMBOX_POOL_SIZE": "0"},
                   web_env={"LLMBOX_SANDBOX_API_TOKEN": TOKEN}) as st:
            node_env = dict(os.environ, E2B_API_URL="http://127.0.0.1:%d/e2b" % st.port, E2B_API_KEY=TOKEN)
            cli_env = dict(st.env, LLMBOX_SANDBOXD_SOCKET=os.path.join(st.prefix, "var", "run", "sandboxd.sock"))

            def sdk(n):
                nonce = hashlib.sha256(b"sdk%d" % n).hexdigest()[:12]
                r = subprocess.run(["node", "bench_template.mjs", ctx, "bench-sdk", nonce], cwd=E2B_DIR,
                                   env=node_env, capture_output=True, text=True, timeout=600)
                if r.returncode:
                    raise SystemExit("the SDK's build failed: %s %s" % (r.stdout[-2000:], r.stderr[-2000:]))
                return float(r.stdout.split("seconds ")[1])

            def cli(n):
                df = os.path.join(tmp, "Dockerfile")
                with open(df, "w") as f:
                    f.write(DOCKERFILE % hashlib.sha256(b"cli%d" % n).hexdigest()[:12])
                t = time.monotonic()
                r = subprocess.run([LLMBOX, "image", "build", "-f", df, "bench-cli", ctx], env=cli_env,
                                   capture_output=True, text=True, timeout=600)
                if r.returncode:
                    raise SystemExit("llmbox image build failed: %s %s" % (r.stdout[-2000:], r.stderr[-2000:]))
                t = time.monotonic() - t
                assert n < 0 or "1 run in a sandbox" in r.stdout + r.stderr, (r.stdout, r.stderr[-1000:])
                return t

            sdk(-1)  # warm both (the base's layers, the COPY's cache entry), untimed
            cli(-1)
            for i in range(a.rounds):
                order = [("sdk", sdk), ("cli", cli)]
                if i % 2:
                    order.reverse()
                for name, fn in order:
                    res[name].append(fn(i))
        print("machine: %s, load %s" % (os.uname().nodename, open("/proc/loadavg").read().split()[:3]))
        print("| what | Template.build median (s) | image build -f median (s) | ratio | SDK runs | CLI runs |")
        print("| --- | --- | --- | --- | --- | --- |")
        s, c = res["sdk"], res["cli"]
        print("| a RUN not cached | %.3f | %.3f | %.2f | %s | %s |" % (
            statistics.median(s), statistics.median(c), statistics.median(s) / statistics.median(c),
            " ".join("%.3f" % x for x in s), " ".join("%.3f" % x for x in c)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
