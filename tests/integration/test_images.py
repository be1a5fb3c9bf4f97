#!/usr/bin/env python3
"""Layered images (docs/IMAGES.md), end to end against the real tools and a
real sandboxd (python3 stdlib only, run as root; needs umoci and skopeo):

  - `llmbox image import` of an OCI layout made with umoci, of the
    oci-archive and the docker-archive `skopeo copy` writes of it; the
    three share what they can (one layer blob for the layout and the
    oci-archive), and `image ls` counts shared layers once;
  - a multi-arch image index: linux/amd64 is taken (the arm64 manifest's
    layer is not even a tar);
  - a sandbox of the imported image (by a registry-style reference): the
    config's Env, WorkingDir and User in force in the persistent shell and
    in processes started through the process API (what E2B's processes
    use);
  - five layers with OCI whiteouts and an opaque folder: the sandbox sees
    what `docker run` would;
  - gc while a sandbox uses the image: rm is refused, gc keeps its layers
    and removes only the unreferenced ones, the sandbox keeps working;
  - a task (fake model), an API sandbox and an E2B sandbox of the image,
    with its Env, WorkingDir and User; GET /api/images;
  - pool_images naming a layered image, and a new import of its name;
  - kill -9 of an import in the middle of a layer: nothing registered, and
    the next writer removes what was left in tmp/.

    python3 tests/integration/test_images.py   (from the repo root)

Checked against the old code (before layered images): `image import`
does not exist, create refuses "127.0.0.1:5000/team/img:1", so every check
fails there.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from oci_images import Layout, dir_entries, entry, tar_layer, tiny_rootfs, umoci_image  # noqa: E402
from sandbox_rpc import BIN, Daemon, Reporter, Skip  # noqa: E402
from stack import Stack  # noqa: E402

TOKEN = "images-test-" + os.urandom(16).hex()

REF = "127.0.0.1:5000/team/img:1"


class Env:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="llmbox-images-")
        self.store = os.path.join(self.tmp, "store")
        os.makedirs(self.store)
        self.env = dict(os.environ, LLMBOX_IMAGE_STORE=self.store, LLMBOX_VAR=os.path.join(self.tmp, "var"),
                        LLMBOX_POOL_IMAGES="default", LLMBOX_WEB_USER="llmbox")
        self.root = tiny_rootfs(os.path.join(self.tmp, "rootfs"))
        self.base = tar_layer(dir_entries(self.root))

    def llmbox(self, *args, check=True, env=None):
        r = subprocess.run([BIN, "image"] + list(args), env=dict(self.env, **(env or {})), capture_output=True,
                           text=True, timeout=300)
        if check:
            assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r

    def ls(self):
        return json.loads(self.llmbox("ls", "--json").stdout)

    def names(self):
        return sorted(i["name"] for i in self.ls()["images"] if i["kind"] == "layered")

    def daemon(self):
        return Daemon(env={"LLMBOX_IMAGE_STORE": self.store, "LLMBOX_POOL_SIZE": "0"})

    def layers(self):
        return sorted(os.listdir(os.path.join(self.store, "oci", "layers", "sha256")))

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def check_import_umoci_and_skopeo(e):
    lay = umoci_image(e.tmp, e.root, env=["FOO=bar"], cwd="/testbed", user="app", tag="v1")
    e.llmbox("import", lay, "team/umoci:v1")
    oa = os.path.join(e.tmp, "img-oci.tar")
    da = os.path.join(e.tmp, "img-docker.tar")
    subprocess.check_call(["skopeo", "copy", "-q", "oci:%s:v1" % lay, "oci-archive:%s:team/fromoci:v1" % oa])
    subprocess.check_call(["skopeo", "copy", "-q", "oci:%s:v1" % lay, "docker-archive:%s:team/fromdocker:v1" % da])
    out = e.llmbox("import", oa, "team/fromoci:v1").stdout
    assert "imported team/fromoci:v1" in out, out
    # no NAME: the archive's own RepoTags
    out = e.llmbox("import", da).stdout
    assert "team/fromdocker:v1" in out, out
    ls = e.ls()
    imgs = {i["name"]: i for i in ls["images"] if i["kind"] == "layered"}
    assert "team/umoci:v1" in imgs and "team/fromoci:v1" in imgs, imgs.keys()
    assert [n for n in imgs if n.endswith("team/fromdocker:v1")], imgs.keys()
    # the layout and its oci-archive are the same layer: one copy, shared
    assert imgs["team/umoci:v1"]["shared_bytes"] > 0, imgs["team/umoci:v1"]
    assert ls["layers_bytes"] < sum(i["bytes"] for i in imgs.values()), ls
    for i in imgs.values():
        assert i["workdir"] == "/testbed" and i["user"] == "app" and "FOO=bar" in i["env"], i
    # nothing left in staging
    assert os.listdir(os.path.join(e.store, "oci", "tmp")) == []
    # the records: the web's group may read them, other host users not even reach them
    import grp
    import stat as st
    refs = os.stat(os.path.join(e.store, "oci", "refs"))
    assert st.S_IMODE(refs.st_mode) == 0o750 and refs.st_gid == grp.getgrnam("llmbox").gr_gid, refs


def check_multiarch_picks_amd64(e):
    lay = Layout(os.path.join(e.tmp, "multi"))
    arm = lay.manifest([b"not a tar at all"], arch="arm64")
    amd = lay.manifest([e.base], env=["ARCH=amd64"], arch="amd64", gz=True)
    lay.multiarch({"arm64": arm, "amd64": amd})
    e.llmbox("import", lay.path, "team/multi:1")
    with open(os.path.join(e.store, "oci", "refs", "team+multi=1.json")) as f:
        rec = json.load(f)
    assert rec["manifest"] == amd["digest"] and "ARCH=amd64" in rec["env"], rec


def five_layer_image(e, name, extra=b"five"):
    lay = Layout(os.path.join(e.tmp, "five-" + name.replace("/", "_").replace(":", "_")))
    l2 = tar_layer([entry("opt", "dir"), entry("opt/x", "dir"), entry("opt/x/hello", data=b"hi\n", uid=1000, gid=1001),
                    entry("a", "dir"), entry("a/f1", data=b"1"), entry("a/f2", data=b"2"),
                    entry("b", "dir"), entry("b/old", data=b"old"), entry("b/sub", "dir"),
                    entry("b/sub/deep", data=b"d")])
    l3 = tar_layer([entry("a/.wh.f1"), entry("c", "dir"), entry("c/keep", data=b"k")])
    l4 = tar_layer([entry("b/.wh..wh..opq"), entry("b/new", data=b"new")])
    l5 = tar_layer([entry("top", data=extra), entry("c/.wh.keep"), entry("c/again", data=b"a")])
    lay.image([e.base, l2, l3, l4, l5], env=["FOO=bar baz", "PATH=/usr/bin:/bin:/opt/x"], workdir="/opt/x",
              user="app", ref="v1")
    e.llmbox("import", lay.path, name)


def check_sandbox_env_workdir_user(e, d):
    five_layer_image(e, REF)
    c = d.connect()
    sid = c.create(image=REF)
    r = c.exec(sid, "pwd; id -u; id -g; echo \"$FOO\"; echo $PATH; cat hello")
    assert r["exit_code"] == 0 and r["stderr"] == "", r
    assert r["stdout"] == "/opt/x\n1000\n1001\nbar baz\n/usr/bin:/bin:/opt/x\nhi\n", r
    # the process API (E2B's processes): the same Env, WorkingDir and User
    p = c.call({"op": "proc_start", "id": sid, "argv": ["/bin/sh", "-c", "pwd; id -u; echo $FOO"], "attach": True})
    assert p.get("ok"), p
    out = b""
    while True:
        ev = c.recv()
        if ev.get("event") == "out":
            out += ev.get("_data", b"")
        if ev.get("event") in ("exit", "gone"):
            break
    assert out == b"/opt/x\n1000\nbar baz\n", out
    # a process's own cwd and env still win
    p = c.call({"op": "proc_start", "id": sid, "argv": ["/bin/sh", "-c", "pwd; echo $FOO"], "attach": True,
                "cwd": "/tmp", "env": {"FOO": "mine"}})
    out = b""
    while True:
        ev = c.recv()
        if ev.get("event") == "out":
            out += ev.get("_data", b"")
        if ev.get("event") in ("exit", "gone"):
            break
    assert out == b"/tmp\nmine\n", out
    c.destroy(sid)


def check_whiteouts_and_opaque(e, d):
    c = d.connect()
    sid = c.create(image=REF)
    r = c.exec(sid, "ls /a; echo --; ls /b /b/sub 2>&1; echo --; ls /c; cat /top")
    assert r["stdout"] == "f2\n--\nls: cannot access '/b/sub': No such file or directory\n/b:\nnew\n--\nagain\nfive", r
    # the image's layers are read-only underneath: the sandbox writes its own layer
    r = c.exec(sid, "echo mine > /opt/x/hello && cat /opt/x/hello")
    assert r["stdout"] == "mine\n", r
    c.destroy(sid)
    # a second sandbox sees the image as it was
    sid = c.create(image=REF)
    assert c.exec(sid, "cat /opt/x/hello")["stdout"] == "hi\n"
    c.destroy(sid)


def check_gc_while_in_use(e, d):
    other = "team/other:1"
    five_layer_image(e, other, extra=b"other")  # shares four layers with REF
    before = e.layers()
    c = d.connect()
    sid = c.create(image=REF)
    sid2 = c.create(image=REF)
    # the operator's ls names the sandboxes that run it, and only those
    imgs = {i["name"]: i for i in e.ls()["images"]}
    assert imgs[REF]["sandboxes"] == 2 and sorted(imgs[REF]["sandbox_ids"]) == sorted([sid, sid2]), imgs[REF]
    assert imgs[other]["sandboxes"] == 0 and imgs[other]["sandbox_ids"] == [], imgs[other]
    assert "2 sandboxes" in e.llmbox("ls").stdout
    c.destroy(sid2)
    r = e.llmbox("rm", REF, check=False)
    assert r.returncode == 1 and "used by a sandbox" in r.stderr, r
    e.llmbox("rm", other)
    out = e.llmbox("gc").stdout
    assert "removed 1 layer" in out, out
    after = e.layers()
    assert len(after) == len(before) - 1, (before, after)
    # the sandbox still reads its layers
    assert c.exec(sid, "cat /opt/x/hello /top")["stdout"] == "hi\nfive"
    # an image named in pool_images is never removed
    r = e.llmbox("rm", REF, check=False, env={"LLMBOX_POOL_IMAGES": REF})
    assert r.returncode == 1 and "pool_images" in r.stderr, r
    c.destroy(sid)
    time.sleep(0.3)  # init has ended: its hold on the record with it
    e.llmbox("rm", REF)
    e.llmbox("gc")
    assert REF not in e.names()


def step(*calls):
    return {"content": "", "tool_calls": [{"name": n, "arguments": a} for n, a in calls]}


def check_task_api_e2b(e):
    """A task (fake model), an API sandbox and an E2B sandbox of the
    imported image, each with its Env, WorkingDir and User; GET /api/images
    lists it, in use while they run."""
    five_layer_image(e, REF)
    for p in (e.tmp, e.store):
        os.chmod(p, 0o755)  # the web runs as llmbox: it reads the records
    scen = [step(("bash", {"command": "pwd; id -u; echo \"$FOO\"; cat hello"})), step(("finish", {"answer": "ok"}))]
    env = {"LLMBOX_IMAGE_STORE": e.store, "LLMBOX_POOL_SIZE": "0"}
    with Stack(scenario=scen, env=env, web_env={"LLMBOX_SANDBOX_API_TOKEN": TOKEN}) as s:
        st, t = s.create_task("[img] show where you are", image=REF)
        assert st in (200, 201), (st, t)
        assert s.wait_task(t["id"])["status"] == "succeeded"
        tools = [ev[2] for ev in s.events(t["id"]) if ev[1] == "tool"]
        assert tools[0]["stdout"] == "/opt/x\n1000\nbar baz\nhi\n", tools[0]
        # an image that is not here: refused with a sentence, no task made
        st, o = s.create_task("x", image="127.0.0.1:5000/team/nothere:1")
        # (a registry reference the node lacks is pulled on first use; this
        # one cannot be, and the answer says why)
        assert st == 400 and "does not have the image 127.0.0.1:5000/team/nothere:1" in json.dumps(o), (st, o)
        h = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
        st, _, body = s.request("POST", "/api/sandboxes", json.dumps({"image": REF}).encode(), h)
        assert st in (200, 201), (st, body)
        sid = json.loads(body)["id"]
        st, _, body = s.request("POST", "/api/sandboxes/%s/exec" % sid,
                                json.dumps({"command": "pwd; id -u; echo $FOO"}).encode(), h)
        o = json.loads(body)
        assert st == 200 and o["stdout"] == "/opt/x\n1000\nbar baz\n", (st, o)
        st, _, body = s.request("GET", "/api/images", None, {"Authorization": "Bearer " + TOKEN})
        imgs = {i["name"]: i for i in json.loads(body)["images"]}
        assert st == 200 and imgs[REF]["in_use"] and imgs[REF]["layers"] == 5, (st, body)
        # how many sandboxes run it, never whose (any user reads this list)
        assert imgs[REF]["sandboxes"] == 1 and "sandbox_ids" not in imgs[REF], imgs[REF]
        s.request("DELETE", "/api/sandboxes/" + sid, None, h)
        # E2B: the template is the image's reference
        eh = {"X-API-KEY": TOKEN, "Content-Type": "application/json"}
        st, _, body = s.request("POST", "/e2b/v2/sandboxes", json.dumps({"templateID": REF}).encode(), eh)
        assert st == 201, (st, body)
        sb = json.loads(body)
        raw = json.dumps({"process": {"cmd": "/bin/sh", "args": ["-c", "pwd; id -u; echo $FOO"]}}).encode()
        import struct
        raw = struct.pack(">BI", 0, len(raw)) + raw
        st, _, data = s.request("POST", "/e2b/sandbox/process.Process/Start", raw,
                                {"E2b-Sandbox-Id": sb["sandboxID"], "X-Access-Token": sb["envdAccessToken"],
                                 "Content-Type": "application/connect+json"})
        assert st == 200, (st, data)
        import base64
        out, i = b"", 0
        while i + 5 <= len(data):
            n = struct.unpack(">I", data[i + 1:i + 5])[0]
            msg = json.loads(data[i + 5:i + 5 + n])
            d = msg.get("event", {}).get("data", {})
            if "stdout" in d:
                out += base64.b64decode(d["stdout"])
            i += 5 + n
        assert out == b"/opt/x\n1000\nbar baz\n", (out, data[-300:])
        s.request("DELETE", "/e2b/sandboxes/" + sb["sandboxID"], None, {"X-API-KEY": TOKEN})


def check_pool_of_a_layered_image(e):
    """pool_images names a layered image: creates of it are pool hits with
    its Env, WorkingDir and User; a new import of the name replaces what
    the pool holds."""
    five_layer_image(e, REF)
    with Daemon(env={"LLMBOX_IMAGE_STORE": e.store, "LLMBOX_POOL_SIZE": "1", "LLMBOX_POOL_IMAGES": REF}) as d:
        c = d.connect()

        def ready():
            deadline = time.time() + 60
            while time.time() < deadline:
                imgs = c.call({"op": "ping"}).get("pool", {}).get("images", [])
                if any(i["image"] == REF and i["ready"] >= 1 for i in imgs):
                    return
                time.sleep(0.1)
            raise AssertionError("the pool never readied %s: %s" % (REF, d.log_tail()))
        ready()
        r = c.call({"op": "create", "image": REF})
        assert r.get("ok") and r.get("pooled") is True, r
        assert c.exec(r["id"], "pwd; id -u; cat /top")["stdout"] == "/opt/x\n1000\nfive"
        c.destroy(r["id"])
        five_layer_image(e, REF, extra=b"again")  # a new import of the name
        time.sleep(0.5)
        ready()
        r = c.call({"op": "create", "image": REF})
        assert r.get("ok"), r
        assert c.exec(r["id"], "cat /top")["stdout"] == "again", "the pool kept the old image"
        c.destroy(r["id"])


def check_kill9_mid_import(e):
    # a layer big enough to be caught in the middle: 200 files of 1 MiB of
    # random bytes (no holes: written for real)
    files = [entry("big", "dir")] + [entry("big/f%03d" % i, data=os.urandom(1 << 20)) for i in range(200)]
    lay = Layout(os.path.join(e.tmp, "big"))
    lay.image([e.base, tar_layer(files)], ref="v1")
    p = subprocess.Popen([BIN, "image", "import", lay.path, "team/big:1"], env=e.env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    tmpd = os.path.join(e.store, "oci", "tmp")
    deadline = time.time() + 60
    caught = False
    while time.time() < deadline and p.poll() is None:
        stages = glob.glob(os.path.join(tmpd, "layer-*", "root", "big", "f0*"))
        if stages:
            caught = True
            break
        time.sleep(0.005)
    p.send_signal(signal.SIGKILL)
    p.wait()
    if not caught:
        raise Skip("the import ended before it could be caught (a very fast disk)")
    assert "team/big:1" not in e.names()
    assert not os.path.exists(os.path.join(e.store, "oci", "refs", "team+big=1.json"))
    time.sleep(0.3)  # the unpacker dies with its parent (PDEATHSIG)
    # the next writer cleans up, and the import then works
    e.llmbox("gc")
    assert os.listdir(tmpd) == [], os.listdir(tmpd)
    e.llmbox("import", lay.path, "team/big:1")
    assert "team/big:1" in e.names()
    e.llmbox("rm", "team/big:1")
    e.llmbox("gc")


def main():
    rep = Reporter("images/")
    if os.geteuid() != 0:
        print("SKIP images: needs root")
        return 0
    for tool in ("umoci", "skopeo"):
        if not shutil.which(tool):
            print("SKIP images: %s is not installed (scripts/deps.sh)" % tool)
            return 0
    e = Env()
    try:
        rep.run("import_umoci_layout_oci_archive_docker_archive", check_import_umoci_and_skopeo, e)
        rep.run("multiarch_index_takes_linux_amd64", check_multiarch_picks_amd64, e)
        with e.daemon() as d:
            rep.run("sandbox_has_the_image_env_workdir_user", check_sandbox_env_workdir_user, e, d)
            rep.run("whiteouts_and_opaque_folders", check_whiteouts_and_opaque, e, d)
            rep.run("gc_while_a_sandbox_uses_the_image", check_gc_while_in_use, e, d)
        rep.run("task_api_and_e2b_sandboxes_of_an_imported_image", check_task_api_e2b, e)
        rep.run("pool_of_a_layered_image", check_pool_of_a_layered_image, e)
        rep.run("kill9_mid_import_registers_nothing", check_kill9_mid_import, e)
    finally:
        e.close()
    return rep.exit_code()


if __name__ == "__main__":
    sys.exit(main())
