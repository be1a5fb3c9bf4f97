#!/usr/bin/env python3
"""Hostile image layers (docs/IMAGES.md, "Layers are hostile input"): each
layer below is imported with `llmbox image import`, which extracts it with
build/llmbox-unpack in a user namespace of the images' ids. Each must be
refused with a sentence that names the layer's digest and the entry, leave
nothing registered and nothing in the store's staging, and write nothing
outside the image's folder (a canary folder on the host, which several
entries aim at, stays as it was). Also: setuid bits are dropped, a whiteout
becomes overlayfs's, ids past the namespace's map become nobody, and the
unpacker's files belong to the images' host ids, never to host root.

    python3 tests/security/test_image_layers.py   (as root, from the repo root)

Checked against the old code: `llmbox image import` does not exist there,
so every check fails.
"""
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from oci_images import Layout, entry, tar_layer  # noqa: E402
from sandbox_rpc import BIN, Reporter  # noqa: E402

BASE = 0x70000000  # LLMBOX_SANDBOX_UID_BASE's default


class Env:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="llmbox-hostile-")
        self.store = os.path.join(self.tmp, "store")
        self.canary = os.path.join(self.tmp, "canary")
        os.makedirs(self.store)
        os.makedirs(self.canary)
        with open(os.path.join(self.canary, "secret"), "w") as f:
            f.write("secret\n")
        self.env = dict(os.environ, LLMBOX_IMAGE_STORE=self.store, LLMBOX_VAR=os.path.join(self.tmp, "var"),
                        LLMBOX_IMAGE_LAYER_MAX_MIB="4", LLMBOX_IMAGE_LAYER_MAX_ENTRIES="500")
        self.n = 0

    def canary_state(self):
        out = []
        for dp, dns, fns in os.walk(self.canary):
            for n in dns + fns:
                p = os.path.join(dp, n)
                st = os.lstat(p)
                out.append((p, st.st_mode, st.st_uid, st.st_size, st.st_nlink))
        with open(os.path.join(self.canary, "secret")) as f:
            out.append(f.read())
        return sorted(map(str, out))

    def import_layer(self, entries, gz=False):
        self.n += 1
        lay = Layout(os.path.join(self.tmp, "lay%d" % self.n))
        layer = tar_layer(entries, gz=gz)
        lay.image([layer], ref="v1")
        digest = "sha256:" + hashlib.sha256(layer).hexdigest()
        r = subprocess.run([BIN, "image", "import", lay.path, "hostile/x:%d" % self.n], env=self.env,
                           capture_output=True, text=True, timeout=120)
        return r, digest

    def refused(self, entries, entry_name, why, gz=False):
        before = self.canary_state()
        r, digest = self.import_layer(entries, gz=gz)
        assert r.returncode == 1, (r.stdout, r.stderr)
        assert "layer " + digest in r.stderr, ("names the layer", r.stderr)
        assert entry_name in r.stderr and why in r.stderr, (entry_name, why, r.stderr)
        assert self.canary_state() == before, "something was written outside the image"
        refs = os.path.join(self.store, "oci", "refs")
        assert not [f for f in os.listdir(refs) if f.startswith("hostile+x=%d" % self.n)], os.listdir(refs)
        assert os.listdir(os.path.join(self.store, "oci", "tmp")) == [], "staging left behind"
        assert digest[7:] not in os.listdir(os.path.join(self.store, "oci", "layers", "sha256"))

    def layer_root(self, digest):
        return os.path.join(self.store, "oci", "layers", "sha256", digest[7:], "root")


def rel_canary(e, depth=12):
    return "../" * depth + e.canary.lstrip("/")


CASES = [
    ("absolute_path", lambda e: ([entry(e.canary + "/pwned", data=b"x")], e.canary + "/pwned",
                                 "is an absolute path")),
    ("dotdot_path", lambda e: ([entry(rel_canary(e) + "/pwned", data=b"x")], "pwned",
                               "\"..\" component")),
    ("file_through_a_symlink_to_outside", lambda e: (
        [entry("evil", "symlink", linkname=e.canary), entry("evil/pwned", data=b"x")], "evil/pwned",
        "is in a folder that is a symlink")),
    ("relative_symlink_climbing_out", lambda e: (
        [entry("a", "dir"), entry("a/up", "symlink", linkname="../../../../etc")], "a/up",
        "points outside the layer")),
    ("hardlink_to_a_host_file", lambda e: (
        [entry("h", "hardlink", linkname=e.canary + "/secret")], "\"h\"", "hard link")),
    ("hardlink_climbing_out", lambda e: (
        [entry("h", "hardlink", linkname=rel_canary(e) + "/secret")], "\"h\"", "hard link")),
    ("hardlink_through_a_symlink", lambda e: (
        [entry("evil", "symlink", linkname=e.canary), entry("h", "hardlink", linkname="evil/secret")], "\"h\"",
        "hard link")),
    ("char_device", lambda e: ([entry("dev", "dir"), entry("dev/mem", "chr", devmajor=1, devminor=1)], "dev/mem",
                               "is a device node")),
    ("block_device", lambda e: ([entry("sda", "blk", devmajor=8, devminor=0)], "sda", "is a device node")),
    ("whiteout_device_given_directly", lambda e: ([entry("w", "chr", devmajor=0, devminor=0)], "\"w\"",
                                                  "is a device node")),
    ("non_utf8_name", lambda e: ([entry("bad-\udcff-name", data=b"x")], "bad-", "not UTF-8")),
    ("tar_bomb_of_entries", lambda e: ([entry("d", "dir")] + [entry("d/f%d" % i, data=b"") for i in range(600)],
                                       "", "more than 500 entries")),
    ("tar_bomb_of_bytes_gzip", lambda e: ([entry("zeros", data=b"\0" * (6 << 20))], "zeros",
                                          "past 4194304 bytes", True)),
    ("sparse_file_of_a_terabyte", lambda e: ([entry("sparse", data=b"", size=1 << 40)], "sparse",
                                             "past 4194304 bytes")),
    ("file_replacing_a_folder", lambda e: ([entry("d", "dir"), entry("d/x", data=b"1"), entry("d", data=b"2")],
                                           "\"d\"", "replaces a folder")),
]


def check_case(e, make):
    spec = make(e)
    gz = False
    if len(spec) == 4:
        entries, name, why, gz = spec
    else:
        entries, name, why = spec
    e.refused(entries, name, why, gz=gz)


def check_what_is_kept(e):
    """A layer of ordinary but sharp entries: accepted, made harmless."""
    entries = [entry("bin", "dir"), entry("bin/su", data=b"#!/bin/sh\n", mode=0o4755),
               entry("bin/sg", data=b"x", mode=0o2755), entry("tmp", "dir", mode=0o1777),
               entry("etc", "dir"), entry("etc/.wh.gone"), entry("big-id", data=b"x", uid=200000, gid=300000),
               entry("abs-link", "symlink", linkname="/etc/passwd"), entry("fifo", "fifo"),
               entry("h1", data=b"same"), entry("h2", "hardlink", linkname="h1")]
    before = e.canary_state()
    r, digest = e.import_layer(entries)
    assert r.returncode == 0, r.stderr
    root = e.layer_root(digest)
    su = os.lstat(os.path.join(root, "bin/su"))
    assert stat.S_IMODE(su.st_mode) == 0o755, oct(su.st_mode)
    assert stat.S_IMODE(os.lstat(os.path.join(root, "bin/sg")).st_mode) == 0o755
    assert stat.S_IMODE(os.lstat(os.path.join(root, "tmp")).st_mode) == 0o1777
    wh = os.lstat(os.path.join(root, "etc/gone"))
    assert stat.S_ISCHR(wh.st_mode) and os.major(wh.st_rdev) == 0 and os.minor(wh.st_rdev) == 0
    big = os.lstat(os.path.join(root, "big-id"))
    assert (big.st_uid, big.st_gid) == (BASE + 65534, BASE + 65534), (big.st_uid, big.st_gid)
    assert os.readlink(os.path.join(root, "abs-link")) == "/etc/passwd"
    assert os.lstat(os.path.join(root, "h2")).st_ino == os.lstat(os.path.join(root, "h1")).st_ino
    # every file the unpacker made belongs to the images' ids, none to host root
    for dp, dns, fns in os.walk(root):
        for n in dns + fns + ["."]:
            st = os.lstat(os.path.join(dp, n))
            assert BASE <= st.st_uid < BASE + 65536, (os.path.join(dp, n), st.st_uid)
    # the store's folders: the host's users kept out
    assert stat.S_IMODE(os.stat(os.path.join(e.store, "oci", "layers")).st_mode) == 0o700
    assert os.stat(os.path.join(e.store, "oci", "layers")).st_uid == 0
    assert e.canary_state() == before


def check_opaque_marked_by_root(e):
    r, digest = e.import_layer([entry("d", "dir"), entry("d/.wh..wh..opq"), entry("d/new", data=b"n")])
    assert r.returncode == 0, r.stderr
    v = os.getxattr(os.path.join(e.layer_root(digest), "d"), "trusted.overlay.opaque")
    assert v == b"y", v
    assert not os.path.exists(os.path.join(e.layer_root(digest), "d", ".wh..wh..opq"))


def check_outer_archive_hostile(e):
    """The docker-archive's own tar is hostile too: the same unpacker reads
    it, and an absolute path in it is refused before any layer is read."""
    arch = os.path.join(e.tmp, "evil-archive.tar")
    with tarfile.open(arch, "w", format=tarfile.GNU_FORMAT) as t:
        for ti, data in [entry(e.canary + "/pwned", data=b"x")]:
            import io
            t.addfile(ti, io.BytesIO(data))
    before = e.canary_state()
    r = subprocess.run([BIN, "image", "import", arch, "hostile/archive:1"], env=e.env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and "is an absolute path" in r.stderr, r.stderr
    assert e.canary_state() == before
    assert os.listdir(os.path.join(e.store, "oci", "tmp")) == []


def check_blob_digest_mismatch(e):
    lay = Layout(os.path.join(e.tmp, "tampered"))
    d = lay.image([tar_layer([entry("f", data=b"good")])], ref="v1")
    man = json.load(open(os.path.join(lay.path, "blobs", "sha256", d["digest"][7:])))
    lp = os.path.join(lay.path, "blobs", "sha256", man["layers"][0]["digest"][7:])
    evil = tar_layer([entry("f", data=b"evil")])
    assert len(evil) == os.path.getsize(lp)
    with open(lp, "wb") as f:
        f.write(evil)
    r = subprocess.run([BIN, "image", "import", lay.path, "hostile/tampered:1"], env=e.env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and "does not match its digest" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(e.store, "oci", "blobs", "sha256", man["layers"][0]["digest"][7:]))


def main():
    rep = Reporter("image_layers/")
    if os.geteuid() != 0:
        print("SKIP image_layers: needs root")
        return 0
    e = Env()
    try:
        for name, make in CASES:
            rep.run("refuses_" + name, check_case, e, make)
        rep.run("keeps_sharp_entries_harmless", check_what_is_kept, e)
        rep.run("opaque_folder_marked_by_root", check_opaque_marked_by_root, e)
        rep.run("outer_archive_is_hostile_too", check_outer_archive_hostile, e)
        rep.run("blob_not_matching_its_digest", check_blob_digest_mismatch, e)
    finally:
        shutil.rmtree(e.tmp, ignore_errors=True)
    return rep.exit_code()


if __name__ == "__main__":
    sys.exit(main())
