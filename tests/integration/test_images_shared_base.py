#!/usr/bin/env python3
"""Many layered images on one shared base (docs/IMAGES.md, "The store"):
the store keeps the base once, so its disk is about the base plus each
image's own layer, and every image still runs as itself.

N images (LLMBOX_SHARED_BASE_IMAGES, 150 in `make test`; `make
images-1000` runs 1,000), each the same base layer (a small Debian-like
root) under a 16 KiB layer of its own, imported one after another with
`llmbox image import`:
  - the store holds N + 1 layers: the base once, never copied per image;
  - its disk (layers and blobs) is at most the base's twice (unpacked and
    its blob) plus 256 KiB per image, and under a tenth of N flattened
    roots once N passes 20;
  - `image ls --json` counts the base once in `layers_bytes`, and says
    every image shares bytes with others;
  - a sandbox of the first and of the last image each sees its own
    layer's file over the base (a real sandboxd).

    python3 tests/integration/test_images_shared_base.py   (from the repo root)

A store that kept the base per image fails both the layer count and the
disk bound: a copy of the base is about 5 MiB, the bound allows 256 KiB
an image.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from oci_images import Layout, dir_entries, entry, tar_layer, tiny_rootfs  # noqa: E402
from sandbox_rpc import BIN, Daemon, Reporter  # noqa: E402

COUNT = int(os.environ.get("LLMBOX_SHARED_BASE_IMAGES", "150"))
OWN = 16 << 10  # each image's own layer: one file of 16 KiB


def du(path):
    """Bytes of disk (allocated blocks) under path."""
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(d, f)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


class Env:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="llmbox-shared-base-")
        os.chmod(self.tmp, 0o755)
        self.store = os.path.join(self.tmp, "store")
        os.makedirs(self.store)
        self.env = dict(os.environ, LLMBOX_IMAGE_STORE=self.store, LLMBOX_VAR=os.path.join(self.tmp, "var"))
        self.root = tiny_rootfs(os.path.join(self.tmp, "rootfs"))
        self.base = tar_layer(dir_entries(self.root))
        self.tokens = {}

    def image(self, i):
        tok = "image-%d-%s" % (i, os.urandom(6).hex())
        self.tokens[i] = tok
        lay = Layout(os.path.join(self.tmp, "img%d" % i))
        own = tar_layer([entry("app", "dir"), entry("app/id", data=tok.encode()),
                         entry("app/pad.bin", data=os.urandom(OWN))])
        lay.image([self.base, own], ref="v1")
        r = subprocess.run([BIN, "image", "import", lay.path, "shared/app%d:1" % i], env=self.env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, (i, r.stdout, r.stderr)
        shutil.rmtree(lay.path)

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def check_imports_share_the_base(e):
    t = time.monotonic()
    for i in range(COUNT):
        e.image(i)
    took = time.monotonic() - t
    layers = os.listdir(os.path.join(e.store, "oci", "layers", "sha256"))
    assert len(layers) == COUNT + 1, "%d layers for %d images on one base" % (len(layers), COUNT)
    disk = du(os.path.join(e.store, "oci"))
    one_root = du(e.root)
    bound = 2 * max(len(e.base), one_root) + COUNT * (256 << 10)
    flat = COUNT * (one_root + OWN)
    print("   %d images: store %.1f MiB, %d flattened roots %.1f MiB (ratio %.3f), imports %.0f ms each"
          % (COUNT, disk / 1048576, COUNT, flat / 1048576, disk / flat, took * 1000 / COUNT))
    assert disk <= bound, "store %d bytes over the bound %d (base %d, %d images)" % (disk, bound, len(e.base), COUNT)
    if COUNT > 20:
        assert disk < flat / 10, (disk, flat)


def check_ls_counts_the_base_once(e):
    r = subprocess.run([BIN, "image", "ls", "--json"], env=e.env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    ls = json.loads(r.stdout)
    mine = [i for i in ls["images"] if i["name"].startswith("shared/app")]
    assert len(mine) == COUNT, len(mine)
    assert all(i["shared_bytes"] > 0 for i in mine), [i for i in mine if not i["shared_bytes"]][:2]
    summed = sum(i["bytes"] for i in mine)
    # the base counted once: the whole is far below the images' sum
    assert ls["layers_bytes"] < summed / 2 or COUNT < 3, (ls["layers_bytes"], summed)


def check_each_image_runs_as_itself(e):
    with Daemon(env={"LLMBOX_IMAGE_STORE": e.store, "LLMBOX_POOL_SIZE": "0"}) as d:
        c = d.connect()
        for i in (0, COUNT - 1):
            sid = c.create(image="shared/app%d:1" % i)
            x = c.exec(sid, "cat /app/id; echo; test -d /usr && echo base")
            assert x["stdout"] == e.tokens[i] + "\nbase\n", (i, x)
            c.destroy(sid)


def main():
    rep = Reporter("images_shared_base/")
    if os.geteuid() != 0:
        print("SKIP images_shared_base: needs root (the unpacker runs in a user namespace)")
        return 0
    e = Env()
    try:
        rep.run("imports_share_the_base", check_imports_share_the_base, e)
        rep.run("ls_counts_the_base_once", check_ls_counts_the_base_once, e)
        rep.run("each_image_runs_as_itself", check_each_image_runs_as_itself, e)
    finally:
        e.close()
    return rep.exit_code()


if __name__ == "__main__":
    sys.exit(main())
