"""Task inputs and outputs in a real S3 server (several nodes, object storage):
one-node Ceph with radosgw (tests/lib/s3_server.py), started once for this
file, and the real stack (nginx, web, agent, sandboxd, fake model) with
LLMBOX_S3_* set. The inputs are stored when the task is created, the
outputs when it ends; a download or a bundle whose files are not on this
machine is fetched from the store (ranges included); the store down fails
a task with a sentence and keeps the local copy, downloads answer a JSON
503 and recover without restarts; wrong credentials give a clear error."""
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import LLMBOX, Reporter, Skip, Stack, image_ready  # noqa: E402
import s3_server  # noqa: E402

BIG = "head -c 300000 /dev/urandom > /testbed/output/d/big.bin"


def step(*calls, content=""):
    return {"content": content, "tool_calls": [{"name": n, "arguments": a} for n, a in calls]}


SCENARIOS = {"scenarios": [
    {"match": "[s3-write]", "steps": [
        step(("bash", {"command": "mkdir -p /testbed/output/d && cp /testbed/input/data.csv /testbed/output/copy.csv"
                                  " && " + BIG + " && echo stored > /testbed/output/answer.txt"})),
        step(("finish", {})),
    ]},
    {"match": "[s3-slow]", "steps": [
        step(("bash", {"command": "sleep 4; echo kept > /testbed/output/kept.txt"})),
        step(("finish", {"answer": "slow"})),
    ]},
]}


def blob(env, *args):
    e = dict(os.environ)
    e.update(env)
    return subprocess.run([LLMBOX, "blob", *args], capture_output=True, text=True, env=e, timeout=120)


def listing(env, prefix):
    r = blob(env, "ls", prefix)
    assert r.returncode == 0, r.stderr
    return {line.split(" ", 1)[1]: int(line.split(" ", 1)[0]) for line in r.stdout.splitlines()}


class T:
    def __init__(self, s3, s, env):
        self.s3, self.s, self.env = s3, s, env
        self.tid = None

    def out_dir(self, tid):
        return os.path.join(self.s.prefix, "artifacts", tid, "output")

    def run_task(self, prompt, files=()):
        st, t = self.s.create_task(prompt, files=files)
        assert st == 201, (st, t)
        return t["id"], self.s.wait_task(t["id"], timeout=120)

    def test_1_inputs_and_outputs_stored(self):
        tid, t = self.run_task("[s3-write] copy it", files=[("data.csv", b"x,y\n1,2\n")])
        assert t["status"] == "succeeded", t
        self.tid = tid
        got = listing(self.env, tid)
        assert got.get(tid + "/input/data.csv") == 8, got
        assert got.get(tid + "/output/copy.csv") == 8, got
        assert got.get(tid + "/output/d/big.bin") == 300000, got
        assert tid + "/output/answer.txt" in got, got
        # the stored bytes are the artifact the API lists (sha256)
        st, arts = self.s.get_json("/api/tasks/%s/artifacts" % tid)
        assert st == 200, arts
        sha = {a["path"]: a["sha256"] for a in arts["artifacts"]}
        dest = os.path.join(self.s.prefix, "big.from-s3")
        r = blob(self.env, "get", tid + "/output/d/big.bin", dest)
        assert r.returncode == 0, r.stderr
        assert hashlib.sha256(open(dest, "rb").read()).hexdigest() == sha["d/big.bin"]

    def test_2_download_from_store_with_range(self):
        if not self.tid:
            raise Skip("no stored task (test_1 failed)")
        local = os.path.join(self.out_dir(self.tid), "d", "big.bin")
        whole = open(local, "rb").read()
        # as if another node had run the task: nothing of it on this machine
        shutil.rmtree(self.out_dir(self.tid), ignore_errors=True)
        st, h, body = self.s.request("GET", "/api/tasks/%s/artifacts/d/big.bin" % self.tid,
                                     headers={"Range": "bytes=1000-1999"})
        assert st == 206 and body == whole[1000:2000], (st, len(body))
        assert open(local, "rb").read() == whole, "fetched whole, atomically, into the local cache"

    def test_2b_signed_link_from_store(self):
        if not self.tid:
            raise Skip("no stored task (test_1 failed)")
        st, arts = self.s.get_json("/api/tasks/%s/artifacts" % self.tid)
        url = {a["path"]: a["download_url"] for a in arts["artifacts"]}["d/big.bin"]
        local = os.path.join(self.out_dir(self.tid), "d", "big.bin")
        whole = open(local, "rb").read()
        shutil.rmtree(self.out_dir(self.tid), ignore_errors=True)
        # nginx finds no file, the backend fetches it from the store
        st, h, body = self.s.request("GET", url, headers={"Range": "bytes=5-9"})
        assert st == 206 and body == whole[5:10], (st, body[:200])
        assert h.get("content-disposition") == "attachment", h
        st, h, body = self.s.request("GET", url)
        assert st == 200 and hashlib.sha256(body).hexdigest() == hashlib.sha256(whole).hexdigest(), st
        # a changed signature is refused before anything is fetched
        shutil.rmtree(self.out_dir(self.tid), ignore_errors=True)
        st, _, body = self.s.request("GET", url[:-3] + ("AAA" if not url.endswith("AAA") else "BBB"))
        assert st == 403, (st, body[:200])
        assert not os.path.exists(local)

    def test_3_bundle_from_store(self):
        if not self.tid:
            raise Skip("no stored task (test_1 failed)")
        shutil.rmtree(self.out_dir(self.tid), ignore_errors=True)
        for f in os.listdir(os.path.join(self.s.prefix, "artifacts", self.tid)):
            if f.startswith("bundle"):
                os.unlink(os.path.join(self.s.prefix, "artifacts", self.tid, f))
        st, _, body = self.s.request("GET", "/api/tasks/%s/bundle.zip" % self.tid)
        assert st == 200, (st, body[:300])
        z = zipfile.ZipFile(io.BytesIO(body))
        names = set(z.namelist())
        assert any(n.endswith("copy.csv") for n in names) and any(n.endswith("d/big.bin") for n in names), names
        csv = [n for n in names if n.endswith("copy.csv")][0]
        assert z.read(csv) == b"x,y\n1,2\n"
        # a folder bundle (streamed) from the store too
        shutil.rmtree(self.out_dir(self.tid), ignore_errors=True)
        st, _, body = self.s.request("GET", "/api/tasks/%s/bundle.tar.gz?path=d" % self.tid)
        assert st == 200 and len(body) > 290000, (st, body[:300])

    def test_4_store_down(self):
        # created while the store answers: its inputs are stored
        st, t = self.s.create_task("[s3-slow] wait", files=[("in.txt", b"in")])
        assert st == 201, (st, t)
        tid = t["id"]
        self.s3.kill_gateway()
        try:
            t = self.s.wait_task(tid, timeout=120)
            assert t["status"] == "failed", t
            assert t["reason"].startswith("The task's outputs could not be stored: "), t["reason"]
            assert "cannot reach the object store" in t["reason"], t["reason"]
            # nothing lost locally
            assert open(os.path.join(self.out_dir(tid), "kept.txt")).read() == "kept\n"
            # a new task cannot store its inputs: refused with a sentence
            st, b = self.s.create_task("[s3-write] no", files=[("data.csv", b"1")])
            assert st == 503, (st, b)
            assert "could not be stored in the object store" in b["error"]["message"], b
            # a download that needs the store: JSON 503, Retry-After
            if self.tid:
                shutil.rmtree(self.out_dir(self.tid), ignore_errors=True)
                st, h, body = self.s.request("GET", "/api/tasks/%s/artifacts/copy.csv" % self.tid)
                assert st == 503, (st, body[:200])
                msg = json.loads(body)["error"]["message"]
                assert msg.startswith("The object store cannot be read right now: "), msg
                assert h.get("retry-after") == "5", h
        finally:
            self.s3.start_gateway()
        # recovery without restarts
        if self.tid:
            st, _, body = self.s.request("GET", "/api/tasks/%s/artifacts/copy.csv" % self.tid)
            assert st == 200 and body == b"x,y\n1,2\n", (st, body[:200])

    def test_5_wrong_credentials(self):
        env = dict(self.env, LLMBOX_S3_SECRET_KEY="not-the-secret")
        r = blob(env, "ls", "")
        assert r.returncode == 1
        assert ("the object store refused the credentials of access key %s (403 SignatureDoesNotMatch)"
                % s3_server.ACCESS_KEY) in r.stderr, r.stderr
        assert "not-the-secret" not in r.stderr
        env = dict(self.env, LLMBOX_S3_ACCESS_KEY="nobody")
        r = blob(env, "head", "x/y")
        assert r.returncode == 1 and "refused the credentials of access key nobody (403" in r.stderr, r.stderr

    def test_6_delete_removes_the_objects(self):
        if not self.tid:
            raise Skip("no stored task (test_1 failed)")
        assert listing(self.env, self.tid), "stored before"
        st, _, body = self.s.request("DELETE", "/api/tasks/" + self.tid)
        assert st == 200, (st, body)
        assert listing(self.env, self.tid) == {}, "every object of the task goes with it"
        st, _, _ = self.s.request("GET", "/api/tasks/%s/artifacts/copy.csv" % self.tid)
        assert st == 404, st


def main():
    rep = Reporter()
    if not image_ready():
        print("SKIP blobstore_s3: the sandbox image is not built (make image)")
        return
    if os.geteuid() != 0 or s3_server.missing():
        print("SKIP blobstore_s3: needs root and %s (make deps)" % " ".join(s3_server.missing() or ["root"]))
        return
    with s3_server.S3Server() as s3:
        print("# Ceph + radosgw answered in %.1f s" % s3.started_s, file=sys.stderr)
        env = s3.env(bucket="llmbox-it")
        r = blob(dict(env, LLMBOX_HOME="/"), "mkbucket")
        assert r.returncode == 0, r.stderr
        with Stack(SCENARIOS, env=env) as s:
            t = T(s3, s, dict(env, LLMBOX_HOME=s.prefix))
            for name in sorted(n for n in dir(T) if n.startswith("test_")):
                rep.run(name, getattr(t, name))
    rep.done()


if __name__ == "__main__":
    main()
