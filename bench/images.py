#!/usr/bin/env python3
"""Layered images (docs/IMAGES.md), each figure with a peer measured in the
same run (run as root from the repo root; needs umoci-free skopeo and
bubblewrap):

  - import: `llmbox image import` of an OCI layout (a small root and a
    layer of SIZE MB of random files) into an empty store, against `skopeo
    copy oci:... dir:...` of the same layout (which verifies and copies the
    blobs but extracts nothing);
  - cold create: sandboxd's create (pool off) of a 1-layer image and of a
    5-layer image of the same files, against `bwrap` starting `true` in
    that root (the unprivileged sandbox most tools use);
  - disk: 100 images sharing a base (each a base and a layer of its own),
    imported one after another: the store's disk against 100 copies of a
    flattened root.

    python3 bench/images.py [--size-mb 200] [--creates 40] [--images 100] [--only import|create|disk]
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
from oci_images import Layout, dir_entries, entry, tar_layer, tiny_rootfs  # noqa: E402
from sandbox_rpc import BIN, Daemon  # noqa: E402


def du(path):
    return int(subprocess.check_output(["du", "-sb", "--apparent-size", path]).split()[0]), \
        int(subprocess.check_output(["du", "-sk", path]).split()[0]) * 1024


def timed(argv, env=None):
    t = time.monotonic()
    subprocess.check_call(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t


def bench_import(tmp, base, size_mb, runs):
    lay = Layout(os.path.join(tmp, "big"))
    files = [entry("data", "dir")] + [entry("data/f%04d" % i, data=os.urandom(1 << 20)) for i in range(size_mb)]
    lay.image([base, tar_layer(files)], ref="v1")
    ours, peer = [], []
    for _ in range(runs):
        store = os.path.join(tmp, "store-import")
        env = dict(os.environ, LLMBOX_IMAGE_STORE=store, LLMBOX_VAR=os.path.join(tmp, "var"))
        ours.append(timed([BIN, "image", "import", lay.path, "bench/big:1"], env))
        shutil.rmtree(store)
        out = os.path.join(tmp, "skopeo-dir")
        peer.append(timed(["skopeo", "copy", "-q", "oci:%s:v1" % lay.path, "dir:" + out]))
        shutil.rmtree(out)
    o, p = statistics.median(ours), statistics.median(peer)
    print("import of %d MB (2 layers, uncompressed): llmbox image import %.2f s, skopeo copy to dir %.2f s, "
          "ratio %.2f (median of %d)" % (size_mb + 5, o, p, o / p, runs))


def bench_create(tmp, root, base, n):
    store = os.path.join(tmp, "store-create")
    env = dict(os.environ, LLMBOX_IMAGE_STORE=store, LLMBOX_VAR=os.path.join(tmp, "var"))
    one = Layout(os.path.join(tmp, "one"))
    one.image([base], ref="v1")
    subprocess.check_call([BIN, "image", "import", one.path, "bench/one:1"], env=env, stdout=subprocess.DEVNULL)
    # the same root split in five: the base, then four small layers
    five = Layout(os.path.join(tmp, "five"))
    extra = [tar_layer([entry("l%d" % i, "dir"), entry("l%d/f" % i, data=b"x")]) for i in range(4)]
    five.image([base] + extra, ref="v1")
    subprocess.check_call([BIN, "image", "import", five.path, "bench/five:1"], env=env, stdout=subprocess.DEVNULL)
    res = {}
    with Daemon(env={"LLMBOX_IMAGE_STORE": store, "LLMBOX_POOL_SIZE": "0"}) as d:
        c = d.connect()
        for img in ("bench/one:1", "bench/five:1"):
            c.destroy(c.create(image=img))  # warm the page cache and the slot's namespace
        for i in range(n):
            # the order alternates: a create right after a destroy shares the
            # machine with that destroy's teardown
            for img in (("bench/one:1", "bench/five:1") if i % 2 else ("bench/five:1", "bench/one:1")):
                t = time.monotonic()
                sid = c.create(image=img)
                res.setdefault(img, []).append((time.monotonic() - t) * 1000)
                c.destroy(sid)
    bw = []
    for _ in range(n):
        bw.append(timed(["bwrap", "--ro-bind", root, "/", "--proc", "/proc", "--dev", "/dev", "--unshare-all",
                         "--die-with-parent", "/usr/bin/true"]) * 1000)
    p1, p5, pb = (statistics.median(res["bench/one:1"]), statistics.median(res["bench/five:1"]),
                  statistics.median(bw))
    print("cold create, p50 of %d: 1 layer %.2f ms, 5 layers %.2f ms (+%.2f ms), bwrap true %.2f ms; "
          "ratios to bwrap %.2f / %.2f" % (n, p1, p5, p5 - p1, pb, p1 / pb, p5 / pb))


def bench_disk(tmp, root, base, count):
    store = os.path.join(tmp, "store-disk")
    env = dict(os.environ, LLMBOX_IMAGE_STORE=store, LLMBOX_VAR=os.path.join(tmp, "var"))
    t = time.monotonic()
    for i in range(count):
        lay = Layout(os.path.join(tmp, "img%d" % i))
        lay.image([base, tar_layer([entry("app", "dir"), entry("app/main.py", data=os.urandom(16 << 10))])],
                  ref="v1")
        subprocess.check_call([BIN, "image", "import", lay.path, "bench/app%d:1" % i], env=env,
                              stdout=subprocess.DEVNULL)
        shutil.rmtree(lay.path)
    took = time.monotonic() - t
    _, layers = du(os.path.join(store, "oci", "layers"))
    _, blobs = du(os.path.join(store, "oci", "blobs"))
    _, one_root = du(root)
    flat = count * (one_root + (16 << 10) + 4096)
    print("disk of %d images sharing a base: layers %.1f MiB + blobs %.1f MiB = %.1f MiB; %d flattened roots "
          "%.1f MiB; ratio %.3f (imports took %.1f s, %.0f ms each)" % (
              count, layers / 1048576, blobs / 1048576, (layers + blobs) / 1048576, count, flat / 1048576,
              (layers + blobs) / flat, took, took * 1000 / count))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--creates", type=int, default=40)
    ap.add_argument("--images", type=int, default=100)
    ap.add_argument("--only", choices=("import", "create", "disk"), help="one figure only")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="llmbox-bench-images-")
    try:
        root = tiny_rootfs(os.path.join(tmp, "rootfs"))
        base = tar_layer(dir_entries(root))
        if a.only in (None, "import"):
            bench_import(tmp, base, a.size_mb, a.runs)
        if a.only in (None, "create"):
            bench_create(tmp, root, base, a.creates)
        if a.only in (None, "disk"):
            bench_disk(tmp, root, base, a.images)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
