"""OCI images for tests (python3 stdlib only): a tiny root filesystem made of
the host's own programs, OCI image layouts written by hand (any layer tar,
hostile ones included, any index: multi-arch lists too), and the real tools
(umoci, skopeo) where a test wants an image as people make them.

    from oci_images import tiny_rootfs, Layout, tar_layer
    root = tiny_rootfs(tmp + "/rootfs")
    lay = Layout(tmp + "/oci")
    base = tar_layer(dir_entries(root))
    lay.image([base], env=["FOO=bar"], workdir="/opt/x", user="app", ref="v1")
"""
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile

# what the tests run inside a sandbox: bash for the persistent shell, and a
# few programs whose libraries ldd names
PROGRAMS = ["bash", "sh", "cat", "ls", "id", "env", "pwd", "echo", "stat", "readlink", "sleep", "true",
            "mkdir", "touch", "grep"]


def _which(p):
    for d in ("/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        f = os.path.join(d, p)
        if os.path.exists(f):
            return os.path.realpath(f)
    raise RuntimeError("no %s on this host" % p)


def tiny_rootfs(root):
    """A root filesystem of the host's programs and their libraries, a
    usr-merged layout, /etc/passwd with root and app (1000), /testbed."""
    libs = set()
    for d in ("usr/bin", "usr/lib", "usr/lib64", "etc", "testbed", "tmp", "root", "home/app", "proc", "dev", "sys",
              "run"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for link, to in (("bin", "usr/bin"), ("sbin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
        if not os.path.lexists(os.path.join(root, link)):
            os.symlink(to, os.path.join(root, link))
    for p in PROGRAMS:
        src = _which(p)
        shutil.copy2(src, os.path.join(root, "usr/bin", p))
        out = subprocess.run(["ldd", src], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            for w in parts:
                if w.startswith("/"):
                    libs.add(w)
    for lib in libs:
        real = os.path.realpath(lib)
        rel = lib.lstrip("/")
        if rel.startswith("lib64/"):
            rel = "usr/" + rel
        elif rel.startswith("lib/"):
            rel = "usr/" + rel
        dst = os.path.join(root, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(real, dst)
    with open(os.path.join(root, "etc/passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/bash\napp:x:1000:1001:app:/home/app:/bin/bash\n")
    with open(os.path.join(root, "etc/group"), "w") as f:
        f.write("root:x:0:\napp:x:1001:\nstaff:x:50:\n")
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    os.chown(os.path.join(root, "home/app"), 1000, 1001)
    return root


def dir_entries(root):
    """(name, TarInfo, data) of every file under root, for tar_layer."""
    out = []
    for dp, dns, fns in os.walk(root):
        dns.sort()
        for n in sorted(dns) + sorted(fns):
            full = os.path.join(dp, n)
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            ti = tarfile.TarInfo(rel)
            ti.mode = st.st_mode & 0o7777
            ti.uid, ti.gid, ti.mtime = st.st_uid, st.st_gid, int(st.st_mtime)
            data = None
            if os.path.islink(full):
                ti.type, ti.linkname = tarfile.SYMTYPE, os.readlink(full)
            elif os.path.isdir(full):
                ti.type = tarfile.DIRTYPE
            else:
                with open(full, "rb") as f:
                    data = f.read()
                ti.size = len(data)
            out.append((ti, data))
    return out


def entry(name, kind="file", data=b"", mode=0o644, linkname="", uid=0, gid=0, size=None, devmajor=0, devminor=0):
    """One tar entry: kind file|dir|symlink|hardlink|chr|blk|fifo."""
    ti = tarfile.TarInfo(name)
    ti.type = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE,
               "hardlink": tarfile.LNKTYPE, "chr": tarfile.CHRTYPE, "blk": tarfile.BLKTYPE,
               "fifo": tarfile.FIFOTYPE}[kind]
    ti.mode, ti.uid, ti.gid, ti.linkname = mode, uid, gid, linkname
    ti.devmajor, ti.devminor = devmajor, devminor
    ti.mtime = 1700000000
    if kind == "file":
        ti.size = len(data) if size is None else size
    if kind == "dir" and mode == 0o644:
        ti.mode = 0o755
    return (ti, data if kind == "file" else None)


def tar_layer(entries, gz=False, fmt=tarfile.GNU_FORMAT):
    """The bytes of a layer tar of (TarInfo, data) entries (gzip'd on ask).
    Names may hold surrogate-escaped bytes (not UTF-8 on purpose)."""
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=fmt, encoding="utf-8", errors="surrogateescape") as t:
        for ti, data in entries:
            if ti.type == tarfile.REGTYPE and data is not None and len(data) != ti.size:
                # a header that claims more than it carries (a sparse bomb's
                # size): written by hand, the data cut short
                t.fileobj.write(ti.tobuf(t.format, t.encoding, t.errors))
                t.offset += tarfile.BLOCKSIZE
                continue
            t.addfile(ti, io.BytesIO(data) if data is not None else None)
    raw = bio.getvalue()
    return gzip.compress(raw, mtime=0) if gz else raw


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


class Layout:
    """An OCI image layout written by hand."""

    def __init__(self, path):
        self.path = path
        os.makedirs(os.path.join(path, "blobs", "sha256"), exist_ok=True)
        with open(os.path.join(path, "oci-layout"), "w") as f:
            f.write('{"imageLayoutVersion":"1.0.0"}')
        self.manifests = []

    def blob(self, b):
        d = sha(b)
        with open(os.path.join(self.path, "blobs", "sha256", d[7:]), "wb") as f:
            f.write(b)
        return d

    def manifest(self, layers, env=None, workdir="", user="", arch="amd64", gz=False):
        """Writes config and manifest blobs; returns the manifest's descriptor."""
        cfg = {"architecture": arch, "os": "linux",
               "config": {"Env": env or [], "WorkingDir": workdir, "User": user, "Cmd": ["/bin/bash"]},
               "rootfs": {"type": "layers", "diff_ids": [sha(x) for x in layers]}}
        cb = json.dumps(cfg).encode()
        lt = "application/vnd.oci.image.layer.v1.tar" + ("+gzip" if gz else "")
        ldescs = []
        for x in layers:
            body = gzip.compress(x, mtime=0) if gz else x
            ldescs.append({"mediaType": lt, "digest": self.blob(body), "size": len(body)})
        man = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
               "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": self.blob(cb),
                          "size": len(cb)},
               "layers": ldescs}
        mb = json.dumps(man).encode()
        return {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": self.blob(mb), "size": len(mb),
                "platform": {"os": "linux", "architecture": arch}}

    def index(self, descs, ref=None):
        for d in descs:
            if ref:
                d.setdefault("annotations", {})["org.opencontainers.image.ref.name"] = ref
        with open(os.path.join(self.path, "index.json"), "w") as f:
            json.dump({"schemaVersion": 2, "manifests": descs}, f)

    def image(self, layers, ref=None, **kw):
        d = self.manifest(layers, **kw)
        self.index([d], ref)
        return d

    def multiarch(self, per_arch, ref=None):
        """per_arch: {arch: manifest descriptor}; an image index blob of them,
        named by index.json."""
        idx = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
               "manifests": list(per_arch.values())}
        ib = json.dumps(idx).encode()
        self.index([{"mediaType": "application/vnd.oci.image.index.v1+json", "digest": self.blob(ib),
                     "size": len(ib)}], ref)


def umoci_image(workdir, rootfs, env=None, cwd=None, user=None, tag="v1"):
    """An OCI layout made with umoci from rootfs (init, new, unpack, copy
    rootfs in, repack, config): the way people make one by hand."""
    lay = os.path.join(workdir, "umoci-oci")
    b = os.path.join(workdir, "umoci-bundle")
    subprocess.check_call(["umoci", "init", "--layout", lay])
    subprocess.check_call(["umoci", "new", "--image", lay + ":" + tag])
    subprocess.check_call(["umoci", "unpack", "--image", lay + ":" + tag, b], stdout=subprocess.DEVNULL)
    subprocess.check_call(["cp", "-a", rootfs + "/.", os.path.join(b, "rootfs")])
    subprocess.check_call(["umoci", "repack", "--image", lay + ":" + tag, b])
    args = ["umoci", "config", "--image", lay + ":" + tag]
    for e in env or []:
        args += ["--config.env", e]
    if cwd:
        args += ["--config.workingdir", cwd]
    if user:
        args += ["--config.user", user]
    subprocess.check_call(args)
    shutil.rmtree(b)
    return lay
