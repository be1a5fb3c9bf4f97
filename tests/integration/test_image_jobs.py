#!/usr/bin/env python3
"""Image work sandboxd runs for the web (server/sandboxd/image_jobs.c,
docs/IMAGES.md "Pulls and builds for the web"), against a real
Distribution registry (Debian's docker-registry) on loopback behind a
counting proxy, images made by umoci and pushed by skopeo, a real
sandboxd, and a Stack whose web runs as its own user (llmbox), not root.

What a user relies on:
  - image_job_start pull + image_job_poll: the image is registered, the log
    holds the puller's lines; the same reference asked again while it runs
    is the same job;
  - a task or a sandbox API sandbox naming a registry reference the node
    lacks is created and runs
    (the web, not root, has sandboxd pull it); two creates of one missing
    reference at once pull it once (manifest GETs counted at the proxy);
  - a registry that cannot be reached fails the create with a sentence;
  - POST /api/images/pull and GET /api/images/jobs/{id}: state and log;
  - hostile build contexts are refused: "../x", a symlink for the folder,
    a symlink for the Dockerfile (nothing is read through them);
  - a build from a context the web wrote registers the image (with the
    build's network asked: "none"); a network beyond the operator's
    network_allow, or not a builder mode, is refused with a sentence;
  - more than image_jobs_max jobs at once: "busy";
  - kill -9 of sandboxd in the middle of a pull: its child dies too, the
    next start clears the job's leftovers, nothing is registered, and a
    pull after it works.

    python3 tests/integration/test_image_jobs.py   (from the repo root, as root)

Checked against the old code (before image jobs): image_job_start is an
"unknown op", the web's first-use pull fails with "registering an image
needs root", /api/images/pull is a 404: every check fails there.
"""
import http.client
import http.server
import json
import os
import shutil
import signal
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from oci_images import tiny_rootfs, umoci_image  # noqa: E402
from sandbox_rpc import BIN, Conn  # noqa: E402
from stack import REPO, Reporter, Stack, free_port  # noqa: E402

TMP = tempfile.mkdtemp(prefix="llmbox-imgjobs-")
os.chmod(TMP, 0o755)
STORE = os.path.join(TMP, "store")
REG_PORT = free_port()
REG = "127.0.0.1:%d" % REG_PORT
procs = []


class Proxy(http.server.BaseHTTPRequestHandler):
    """Forwards to the registry; counts manifest GETs per path; delays
    manifest answers by Proxy.delay s and blob answers of paths holding
    Proxy.stall for up to 60 s (to keep a pull in flight)."""
    protocol_version = "HTTP/1.1"
    lock = threading.Lock()
    manifest_gets = {}
    blob_gets = []
    delay = 0.0
    stall = None

    def log_message(self, *a):
        pass

    def _forward(self):
        if "/manifests/" in self.path and self.command == "GET":
            with Proxy.lock:
                Proxy.manifest_gets[self.path] = Proxy.manifest_gets.get(self.path, 0) + 1
            time.sleep(Proxy.delay)
        if "/blobs/" in self.path:
            with Proxy.lock:
                Proxy.blob_gets.append(self.path)
            end = time.time() + 60
            while Proxy.stall and Proxy.stall in self.path and time.time() < end:
                time.sleep(0.1)
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        c = http.client.HTTPConnection("127.0.0.1", REG_PORT, timeout=60)
        h = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        c.request(self.command, self.path, body, h)
        r = c.getresponse()
        data = r.read()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            try:
                self.wfile.write(data)
            except OSError:
                pass  # a pull killed on purpose
        c.close()

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = _forward


class ThreadingServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def start_registry():
    conf = os.path.join(TMP, "registry.yml")
    with open(conf, "w") as f:
        f.write("version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\n"
                "http:\n  addr: %s\n" % (os.path.join(TMP, "storage"), REG))
    log = open(os.path.join(TMP, "registry.log"), "w")
    procs.append(subprocess.Popen(["docker-registry", "serve", conf], stdout=log, stderr=log))
    for _ in range(300):
        try:
            urllib.request.urlopen("http://%s/v2/" % REG, timeout=2).read()
            break
        except Exception:
            time.sleep(0.1)
    else:
        raise AssertionError("the registry did not start")
    srv = ThreadingServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return "127.0.0.1:%d" % srv.server_address[1]


def push(layout, repo):
    """Pushes the layout's tag t to the registry as repo (through no proxy)."""
    subprocess.run(["skopeo", "copy", "--dest-tls-verify=false", "oci:%s:t" % layout, "docker://%s/%s" % (REG, repo)],
                   check=True, capture_output=True, timeout=300)


def fname(ref):
    host, rest = ref.split("/", 1)
    repo, tag = rest.rsplit(":", 1)
    return "%s+%s=%s" % (host.replace(":", "="), repo.replace("/", "+"), tag)


def registered(ref):
    return os.path.exists(os.path.join(STORE, "oci", "refs", fname(ref) + ".json"))


class Sandboxd:
    """sandboxd on a var dir of its own that survives a restart."""

    def __init__(self):
        self.var = os.path.join(TMP, "sd-var")
        self.sock = os.path.join(TMP, "sd.sock")
        self.env = dict(os.environ, LLMBOX_VAR=self.var, LLMBOX_IMAGE_STORE=STORE, LLMBOX_HOME=REPO,
                        LLMBOX_SANDBOXD_SOCKET=self.sock, LLMBOX_POOL_SIZE="0", LLMBOX_WEB_USER="llmbox",
                        LLMBOX_IMAGE_JOBS_MAX="2", LLMBOX_NETWORK_ALLOW="none")
        self.proc = None

    def start(self):
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        log = open(os.path.join(TMP, "sandboxd.log"), "a")
        self.proc = subprocess.Popen([BIN, "sandboxd"], env=self.env, stdout=log, stderr=log, cwd=REPO)
        for _ in range(400):
            if os.path.exists(self.sock) or self.proc.poll() is not None:
                break
            time.sleep(0.025)
        assert os.path.exists(self.sock), "sandboxd did not start: " + self.log()
        return self

    def log(self):
        return open(os.path.join(TMP, "sandboxd.log")).read()[-3000:]

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)

    def conn(self):
        return Conn(self.sock, timeout=60)


def wait_job(c, job, timeout=240):
    """Polls to the job's end; returns (last answer, the whole log)."""
    log, off, end = b"", 0, time.time() + timeout
    while True:
        r = c.call({"op": "image_job_poll", "job": job, "offset": off})
        assert r.get("ok"), r
        log += r.get("_data", b"")
        off = r["next_offset"]
        if r["state"] != "running":
            return r, log
        assert time.time() < end, "image job %s still runs after %d s" % (job, timeout)
        time.sleep(0.2)


def pull_procs(ref):
    """pids of `llmbox image pull ... ref` processes on this host."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            cmd = open("/proc/%s/cmdline" % p, "rb").read().split(b"\0")
        except OSError:
            continue
        if b"pull" in cmd and ref.encode() in cmd:
            out.append(int(p))
    return out


# ---- the checks ----------------------------------------------------------------

def check_rpc_pull_dedup_and_log(ctx):
    ref = "%s/team/a:1" % ctx["proxy"]
    Proxy.delay = 1.0  # the pull stays in flight while the second start comes
    try:
        with ctx["sd"].conn() as c:
            a = c.call({"op": "image_job_start", "kind": "pull", "ref": ref})
            b = c.call({"op": "image_job_start", "kind": "pull", "ref": ref})
            assert a.get("ok") and b.get("ok"), (a, b)
            assert a["job"] == b["job"], "one pull per reference: %r %r" % (a, b)
            r, log = wait_job(c, a["job"])
    finally:
        Proxy.delay = 0.0
    assert r["state"] == "succeeded" and r["exit_code"] == 0, (r, log)
    assert b"llmbox: pull: " in log and ref.encode() in log, log
    assert registered(ref), os.listdir(os.path.join(STORE, "oci", "refs"))
    path = "/v2/team/a/manifests/1"
    ctx["gets_one_pull"] = Proxy.manifest_gets.get(path, 0)
    assert ctx["gets_one_pull"] >= 1, Proxy.manifest_gets
    # asked again once it is there: nothing is fetched
    with ctx["sd"].conn() as c:
        j = c.call({"op": "image_job_start", "kind": "pull", "ref": ref})
        r, _ = wait_job(c, j["job"])
    assert r["state"] == "succeeded" and Proxy.manifest_gets.get(path, 0) == ctx["gets_one_pull"], Proxy.manifest_gets


def check_rpc_refuses_bad_fields(ctx):
    with ctx["sd"].conn() as c:
        for req, word in (({"kind": "pull", "ref": "team/a:1"}, "registry"),
                          ({"kind": "pull", "ref": "--oci=/etc"}, "reference"),
                          ({"kind": "delete", "ref": "127.0.0.1:1/a:1"}, "kind"),
                          ({"kind": "pull", "ref": "127.0.0.1:1/a:1", "context": "x"}, "no context"),
                          ({"kind": "build", "ref": "team/b:1", "context": "../x"}, "folder name"),
                          ({"kind": "build", "ref": "team/b:1", "context": "ok", "dockerfile": "../../etc/shadow"},
                           "file name"),
                          ({"kind": "build", "ref": "team/b:1", "context": "ok", "build_args": ["A"]}, "K=V"),
                          ({"kind": "build", "ref": "team/b:1", "context": "ok", "build_args": ["A=x"] * 65},
                           "K=V"),
                          # the build's network: a builder mode, within the operator's network_allow
                          ({"kind": "build", "ref": "team/b:1", "context": "ok", "network": "host"},
                           '"none" or "nat"'),
                          ({"kind": "build", "ref": "team/b:1", "context": "ok", "network": ["nat"]},
                           '"none" or "nat"'),
                          ({"kind": "build", "ref": "team/b:1", "context": "ok", "network": "nat"},
                           "network_allow"),
                          ({"kind": "pull", "ref": "127.0.0.1:1/a:1", "network": "none"}, "network")):
            r = c.call(dict(req, op="image_job_start"))
            assert not r.get("ok") and r["error"] == "invalid" and word in r["message"], (req, r)
        r = c.call({"op": "image_job_poll", "job": "0" * 32})
        assert not r.get("ok") and r["error"] == "notfound", r


def check_hostile_contexts_refused(ctx):
    ctxroot = os.path.join(ctx["sd"].var, "image-contexts")
    assert os.path.isdir(ctxroot) and not os.path.islink(ctxroot), ctxroot
    st = os.stat(ctxroot)
    import pwd
    assert st.st_uid == pwd.getpwnam("llmbox").pw_uid and st.st_mode & 0o777 == 0o700, oct(st.st_mode)
    secret = os.path.join(TMP, "secret")
    os.makedirs(secret)
    with open(os.path.join(secret, "Dockerfile"), "w") as f:
        f.write("FROM %s/team/a:1\n" % ctx["proxy"])
    os.symlink(secret, os.path.join(ctxroot, "linked"))  # the folder itself a symlink
    os.makedirs(os.path.join(ctxroot, "dflink"))
    os.symlink(os.path.join(secret, "Dockerfile"), os.path.join(ctxroot, "dflink", "Dockerfile"))
    with ctx["sd"].conn() as c:
        r = c.call({"op": "image_job_start", "kind": "build", "ref": "team/evil:1", "context": "linked"})
        assert not r.get("ok") and "symlink" in r["message"], r
        r = c.call({"op": "image_job_start", "kind": "build", "ref": "team/evil:2", "context": "dflink"})
        assert not r.get("ok") and "symlink" in r["message"], r
        r = c.call({"op": "image_job_start", "kind": "build", "ref": "team/evil:3", "context": "nothere"})
        assert not r.get("ok") and r["error"] == "notfound", r
    # the refused symlink is left where it was; the secret folder untouched
    assert os.path.islink(os.path.join(ctxroot, "linked")) and os.listdir(secret) == ["Dockerfile"]
    for _ in range(100):  # a taken context is removed by a child of sandboxd's
        jobs = os.listdir(os.path.join(ctx["sd"].var, "sandboxd", "image-jobs"))
        if not [n for n in jobs if n.endswith(".ctx")]:
            break
        time.sleep(0.1)
    assert not [n for n in jobs if n.endswith(".ctx")], "a refused context was kept: %r" % jobs


def check_build_from_a_context(ctx):
    ctxroot = os.path.join(ctx["sd"].var, "image-contexts")
    d = os.path.join(ctxroot, "app-1")
    os.makedirs(d)
    with open(os.path.join(d, "Build.df"), "w") as f:
        f.write("FROM %s/team/a:1\nARG GREETING=no\nCOPY hello.txt /hello.txt\nWORKDIR /opt/x\n" % ctx["proxy"])
    with open(os.path.join(d, "hello.txt"), "w") as f:
        f.write("hello from the context\n")
    with ctx["sd"].conn() as c:
        r = c.call({"op": "image_job_start", "kind": "build", "ref": "team/app:1", "context": "app-1",
                    "dockerfile": "Build.df", "build_args": ["GREETING=hi"], "network": "none"})
        assert r.get("ok"), r
        assert not os.path.exists(d), "the context stays where the web can change it"
        r, log = wait_job(c, r["job"], timeout=400)
    assert r["state"] == "succeeded", (r, log.decode(errors="replace")[-2000:])
    assert os.path.exists(os.path.join(STORE, "oci", "refs", "team+app=1.json")), \
        os.listdir(os.path.join(STORE, "oci", "refs"))
    # the taken context goes once the build is done with it
    jobs = os.path.join(ctx["sd"].var, "sandboxd", "image-jobs")
    for _ in range(100):
        if not [n for n in os.listdir(jobs) if n.endswith(".ctx")]:
            break
        time.sleep(0.1)
    assert not [n for n in os.listdir(jobs) if n.endswith(".ctx")], os.listdir(jobs)


def check_kill9_mid_pull(ctx):
    sd = ctx["sd"]
    ref = "%s/team/slow:1" % ctx["proxy"]
    Proxy.stall = "/team/slow"
    try:
        with sd.conn() as c:
            r = c.call({"op": "image_job_start", "kind": "pull", "ref": ref})
            assert r.get("ok"), r
            # image_jobs_max (2 here): a third job at once is refused as busy
            r2 = c.call({"op": "image_job_start", "kind": "pull", "ref": "%s/team/slow2:1" % ctx["proxy"]})
            assert r2.get("ok"), r2
            r3 = c.call({"op": "image_job_start", "kind": "pull", "ref": "%s/team/e:1" % ctx["proxy"]})
            assert not r3.get("ok") and r3["error"] == "busy" and "image_jobs_max" in r3["message"], r3
            end = time.time() + 60
            while not [p for p in Proxy.blob_gets if "/team/slow/" in p]:
                assert time.time() < end, "the pull never asked for a blob"
                time.sleep(0.1)
            assert pull_procs(ref), "no pull process while the pull runs"
            sd.stop(signal.SIGKILL)
        for _ in range(100):
            if not pull_procs(ref):
                break
            time.sleep(0.1)
        assert not pull_procs(ref), "the pull outlived sandboxd"
    finally:
        Proxy.stall = None
    sd.start()
    with sd.conn() as c:
        assert c.call({"op": "ping"}).get("ok")  # its loop runs: the start's cleanup is done
    assert not registered(ref), "a pull cut short registered its image"
    assert not os.listdir(os.path.join(sd.var, "sandboxd", "image-jobs")), "the killed job's log is left"
    with sd.conn() as c:
        r = c.call({"op": "image_job_start", "kind": "pull", "ref": ref})
        r, log = wait_job(c, r["job"])
    assert r["state"] == "succeeded" and registered(ref), (r, log)


def step(*calls):
    return {"content": "", "tool_calls": [{"name": n, "arguments": a} for n, a in calls]}


def check_web_first_use_pull_and_api(ctx):
    """One Stack (web as llmbox): the create that pulls, two at once pulling
    once, an unreachable registry, and the API."""
    proxy = ctx["proxy"]
    scen = [step(("bash", {"command": "cat /hello; id -u"})), step(("finish", {"answer": "ok"}))] * 3
    env = {"LLMBOX_IMAGE_STORE": STORE, "LLMBOX_POOL_SIZE": "0", "LLMBOX_IMAGE_PULL_WAIT_S": "240"}
    token = "imgjobs-" + os.urandom(16).hex()
    with Stack(scenario=scen, env=env, web_env={"LLMBOX_SANDBOX_API_TOKEN": token}) as s:
        ps = subprocess.run(["ps", "-o", "user=", "-p", str(s.pid("web"))], capture_output=True, text=True).stdout
        assert ps.strip() and ps.strip() != "root", "the web runs as %r: the check needs it unprivileged" % ps
        # a task naming a reference this node lacks
        ref = "%s/team/b:1" % proxy
        assert not registered(ref)
        st, t = s.create_task("[img] first use", image=ref)
        assert st in (200, 201), (st, t)
        assert registered(ref)
        assert s.wait_task(t["id"], timeout=240)["status"] == "succeeded"
        # two creates of one missing reference at once: one pull
        ref2 = "%s/team/c:1" % proxy
        Proxy.delay = 1.5
        out = []
        try:
            ths = [threading.Thread(target=lambda: out.append(s.create_task("[img] twice", image=ref2)))
                   for _ in range(2)]
            for th in ths:
                th.start()
            for th in ths:
                th.join(300)
        finally:
            Proxy.delay = 0.0
        assert len(out) == 2 and all(st in (200, 201) for st, _ in out), out
        gets = Proxy.manifest_gets.get("/v2/team/c/manifests/1", 0)
        assert gets == ctx["gets_one_pull"], "two creates pulled %d times (one pull GETs the manifest %d times)" % (
            gets, ctx["gets_one_pull"])
        for _, t2 in out:
            assert s.wait_task(t2["id"], timeout=240)["status"] == "succeeded"
        # a registry that cannot be reached: the create fails with the sentence
        dead = "127.0.0.1:%d/team/d:1" % free_port()
        st, o = s.create_task("x", image=dead)
        text = json.dumps(o)
        assert st == 400 and "does not have the image %s and cannot pull it: Cannot reach" % dead in text, (st, o)
        assert "needs root" not in text, o
        # a sandbox API create naming a missing reference
        ref4 = "%s/team/f:1" % proxy
        ah = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
        st, _, body = s.request("POST", "/api/sandboxes", json.dumps({"image": ref4}).encode(), ah, timeout=300)
        assert st in (200, 201), (st, body)
        sid = json.loads(body)["id"]
        st, _, body = s.request("POST", "/api/sandboxes/%s/exec" % sid, json.dumps({"command": "cat /hello"}).encode(),
                                ah)
        assert st == 200 and json.loads(body)["stdout"] == "pulled\n", (st, body)
        s.request("DELETE", "/api/sandboxes/" + sid, None, ah)
        st, _, body = s.request("POST", "/api/sandboxes", json.dumps({"image": dead}).encode(), ah)
        assert st == 400 and "cannot pull it: Cannot reach" in body.decode(), (st, body)
        # the API: a pull and its log
        ref3 = "%s/team/e:1" % proxy
        h = {"Content-Type": "application/json"}
        st, _, body = s.request("POST", "/api/images/pull", json.dumps({"ref": ref3}).encode(), h)
        assert st == 202, (st, body)
        job = json.loads(body)["job"]
        end, log, off = time.time() + 240, "", 0
        while True:
            st, _, body = s.request("GET", "/api/images/jobs/%s?offset=%d" % (job, off))
            o = json.loads(body)
            assert st == 200, (st, body)
            log += o["log"]
            off = o["next_offset"]
            if o["state"] != "running":
                break
            assert time.time() < end, o
            time.sleep(0.3)
        assert o["state"] == "succeeded" and o["exit_code"] == 0 and "llmbox: pull: " in log, (o, log)
        assert registered(ref3)
        st, _, body = s.request("GET", "/api/images/jobs/%s?offset=1" % job)
        assert st == 200 and json.loads(body)["log"] == log[1:], body
        st, _, body = s.request("POST", "/api/images/pull", json.dumps({"ref": dead}).encode(), h)
        job = json.loads(body)["job"]
        for _ in range(200):
            st, _, body = s.request("GET", "/api/images/jobs/%s" % job)
            o = json.loads(body)
            if o["state"] != "running":
                break
            time.sleep(0.2)
        assert o["state"] == "failed" and "Cannot reach" in o["error"], o
        for bad, want in ((json.dumps({"ref": "team/local:1"}), 400), (json.dumps({"ref": 3}), 400)):
            st, _, body = s.request("POST", "/api/images/pull", bad.encode(), h)
            assert st == want, (bad, st, body)
        st, _, body = s.request("GET", "/api/images/jobs/" + "0" * 32)
        assert st == 404, (st, body)
        st, _, body = s.request("GET", "/api/images/jobs/..%2Fx")
        assert st == 404, (st, body)


def main():
    r = Reporter()
    for tool in ("docker-registry", "skopeo", "umoci"):
        if not shutil.which(tool):
            print("SKIP image_jobs: %s is not installed (scripts/deps.sh)" % tool)
            return
    if os.geteuid() != 0:
        print("SKIP image_jobs: needs root (sandboxd)")
        return
    ctx = {}
    sd = None
    try:
        proxy = start_registry()
        os.makedirs(STORE)
        os.chmod(STORE, 0o755)  # the web (llmbox) reads the records
        root = tiny_rootfs(os.path.join(TMP, "rootfs"))
        with open(os.path.join(root, "hello"), "w") as f:
            f.write("pulled\n")
        lay = umoci_image(TMP, root, tag="t")
        for repo in ("team/a:1", "team/b:1", "team/c:1", "team/e:1", "team/f:1", "team/slow:1", "team/slow2:1"):
            push(lay, repo)
        ctx["proxy"] = proxy
        sd = ctx["sd"] = Sandboxd().start()
        r.run("rpc_pull_once_per_ref_with_log", check_rpc_pull_dedup_and_log, ctx)
        r.run("rpc_refuses_bad_fields", check_rpc_refuses_bad_fields, ctx)
        r.run("hostile_build_contexts_refused", check_hostile_contexts_refused, ctx)
        r.run("build_from_a_context_the_web_wrote", check_build_from_a_context, ctx)
        r.run("kill_9_mid_pull_leaves_nothing", check_kill9_mid_pull, ctx)
        sd.stop()
        sd = None
        ctx.setdefault("gets_one_pull", 1)  # when the first check could not count one pull
        r.run("web_first_use_pull_once_and_api", check_web_first_use_pull_and_api, ctx)
    finally:
        if sd:
            sd.stop()
        for p in procs:
            p.kill()
            p.wait()
        if r.failed:
            sys.stderr.write(open(os.path.join(TMP, "sandboxd.log")).read()[-4000:]
                             if os.path.exists(os.path.join(TMP, "sandboxd.log")) else "")
        shutil.rmtree(TMP, ignore_errors=True)
    r.done()


if __name__ == "__main__":
    main()
