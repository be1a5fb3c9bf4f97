#!/usr/bin/env python3
"""Hostile saved states (follow-ups): a state is the sandbox's own bytes, so
create's restore treats it as hostile input (server/stateio/stateio.h).
Each state below is written straight into sandboxd's store, as if a
sandbox had crafted it, and restored:

  - a symlink pointing out, then a file through it; "../" paths; absolute
    paths; a device file; a hard link; a file under /proc (another mount);
    a deletion mark of "."; a state of another image (or its image entry
    out of place, or not an image's name); a tar bomb of more entries than a state may
    hold; bytes that are no archive at all: each is refused with "invalid"
    and a sentence ("saved state is damaged: ..."); a huge (sparse) file
    with "toobig" naming the sandbox's disk; no sandbox is left, and
    nothing appears on the host;
  - a lone symlink pointing out and a setuid file are restored safely: the
    symlink is just a symlink in the sandbox (reading it reads the
    sandbox's own file), the setuid bit is dropped.

    python3 tests/security/test_state_hostile.py   (as root, from the repo root)
"""
import gzip
import io
import os
import sys
import tarfile
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sandbox_rpc import Daemon, Reporter, skip_reason  # noqa: E402

TAG = uuid.uuid4().hex[:12]
HOST_MARK = "/tmp/llmbox-pwned-" + TAG


def tar_bytes(entries, raw_tail=b""):
    """A gzip'd tar of entries: (name, kind, extra) with kind file (extra:
    bytes), dir, symlink (extra: target), hardlink (extra: target), chr
    (extra: (major, minor)), or header (extra: declared size, no data)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, kind, extra in entries:
            ti = tarfile.TarInfo(name)
            ti.mtime = 1700000000
            if kind == "file":
                ti.size = len(extra)
                ti.mode = 0o644
                t.addfile(ti, io.BytesIO(extra))
                continue
            if kind == "suid":
                ti.size = len(extra)
                ti.mode = 0o4755
                t.addfile(ti, io.BytesIO(extra))
                continue
            if kind == "dir":
                ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            elif kind == "symlink":
                ti.type, ti.linkname = tarfile.SYMTYPE, extra
            elif kind == "hardlink":
                ti.type, ti.linkname = tarfile.LNKTYPE, extra
            elif kind == "chr":
                ti.type, ti.devmajor, ti.devminor = tarfile.CHRTYPE, extra[0], extra[1]
            elif kind == "header":
                # a header that declares a huge file; its data never comes
                ti.size = extra
                t.fileobj.write(ti.tobuf(tarfile.PAX_FORMAT, tarfile.ENCODING, "surrogateescape"))
                continue
            t.addfile(ti)
    return gzip.compress(buf.getvalue() + raw_tail, 1)


BASE = [("layer", "dir", None), ("layer/testbed", "dir", None)]

REFUSED = {
    "symlink_out_then_file_through_it": BASE + [("layer/testbed/evil", "symlink", "/tmp"),
                                                ("layer/testbed/evil/llmbox-pwned-" + TAG, "file", b"x")],
    "dotdot_path": BASE + [("layer/../../../../tmp/llmbox-pwned-" + TAG, "file", b"x")],
    "dotdot_inside": BASE + [("layer/testbed/../../x", "file", b"x")],
    "absolute_path": BASE + [(HOST_MARK, "file", b"x")],
    "outside_layer": BASE + [("etc/passwd", "file", b"x")],
    "device_file": BASE + [("layer/testbed/null", "chr", (1, 3))],
    "hard_link": BASE + [("layer/testbed/a", "file", b"a"), ("layer/testbed/b", "hardlink", "layer/testbed/a")],
    "under_proc_mount": [("layer", "dir", None), ("layer/proc/sys/kernel/llmbox-" + TAG, "file", b"x")],
    "whiteout_of_dot": BASE + [("layer/testbed/.wh..", "file", b"")],
    "huge_sparse_file": BASE + [("layer/testbed/huge", "header", 100 << 30)],
    "another_image": [("meta/image", "file", b"other")] + BASE,
    "meta_not_first": BASE + [("meta/image", "file", b"default")],
    "meta_not_an_image": [("meta/image", "file", b"../etc")] + BASE,
}


def store(d, name, data):
    sd = os.path.join(d.var, "sandboxd", "states", "u%d" % os.getuid())
    os.makedirs(sd, exist_ok=True)
    with open(os.path.join(sd, name + ".state"), "wb") as f:
        f.write(data)


def sandboxes(c):
    r = c.call({"op": "ping"})
    assert r.get("ok"), r
    return r["sandboxes"]


def refused(d, name, data, want, code="invalid", damaged=True):
    c = d.connect()
    try:
        store(d, name, data)
        before = sandboxes(c)
        r = c.call({"op": "create", "restore": name})
        assert r.get("ok") is False and r.get("error") == code, r
        assert not damaged or code != "invalid" or "saved state is damaged" in r.get("message", ""), r
        assert want in r["message"], (want, r)
        assert sandboxes(c) == before, "a sandbox was left"
        assert not os.path.exists(HOST_MARK), "the state wrote on the host"
    finally:
        c.close()


def check_restored_safely(d):
    data = tar_bytes(BASE + [("layer/testbed/out", "symlink", "/etc/shadow"),
                             ("layer/testbed/tool", "suid", b"#!/bin/sh\necho tool\n")])
    store(d, "safe", data)
    c = d.connect()
    r = c.call({"op": "create", "restore": "safe"})
    assert r.get("ok"), r
    sid = r["id"]
    out = c.exec(sid, "readlink /testbed/out; stat -c %a /testbed/tool; head -c 5 /testbed/out | wc -c")
    lines = out["stdout"].split("\n")
    # the symlink names the sandbox's own /etc/shadow; the setuid bit is gone
    assert lines[0] == "/etc/shadow" and lines[1] == "755", out
    c.destroy(sid)
    c.close()


def check_tar_bomb(d):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        for name in ("layer", "layer/testbed", "layer/testbed/b"):
            ti = tarfile.TarInfo(name)
            ti.type = tarfile.DIRTYPE
            t.addfile(ti)
        ti = tarfile.TarInfo("x")
        for i in range(200001):
            ti.name = "layer/testbed/b/%d" % i
            t.addfile(ti)
    refused(d, "bomb", gzip.compress(buf.getvalue(), 1), "more than 200000 entries")


def main():
    p = Reporter("state_hostile/")
    why = skip_reason()
    if why:
        print("SKIP state_hostile: %s" % why)
        return 0
    with Daemon(env={"LLMBOX_POOL_SIZE": "0"}) as d:
        wants = {"symlink_out_then_file_through_it": "symlink", "dotdot_path": "out of the sandbox",
                 "dotdot_inside": "out of the sandbox", "absolute_path": "not under layer/",
                 "outside_layer": "not under layer/", "device_file": "device",
                 "hard_link": "hard link", "under_proc_mount": "another filesystem",
                 "whiteout_of_dot": "deletion mark", "huge_sparse_file": "larger than the new sandbox's disk (1024 MiB)",
                 "another_image": 'image "other"', "meta_not_first": "first entry",
                 "meta_not_an_image": "image's name"}
        for name, entries in REFUSED.items():
            # a file larger than the disk is "toobig": a state may be fine, the disk too small
            p.run("refused_" + name, refused, d, name.replace("_", "-"), tar_bytes(entries), wants[name],
                  "toobig" if name == "huge_sparse_file" else "invalid", name != "another_image")
        p.run("refused_not_an_archive", refused, d, "garbage", os.urandom(4096), "saved state is damaged")
        p.run("refused_tar_bomb_of_many_entries", check_tar_bomb, d)
        p.run("outward_symlink_and_setuid_restored_safely", check_restored_safely, d)
    return p.exit_code()


if __name__ == "__main__":
    sys.exit(main())
