"""scripts/cluster.sh (several nodes, a cluster on one machine), scaled to fit
`make test`: the real script brings up PostgreSQL (over TCP on the
bridge), radosgw, HAProxy, two webs and three sandbox nodes in their
network namespaces, with the fake model (tests/fake_model.py) on the
bridge's host address and a short lease.

1. down when nothing runs: exit 0, says down; up refuses a state folder
   that holds anything, and down leaves such a folder alone.
2. up: its last line is the balancer's URL, which answers /api/health; up
   again says it is already up; a node cannot see another's home (its
   mount namespace shows an empty folder there), its namespace has no
   route beyond the bridge, and the store's URL is TCP on the bridge.
3. API sandboxes through the balancer (LLMBOX_CLUSTER_SANDBOXES, 60 here;
   `make cluster-sandboxes`: 1,000), all alive at once: each created (by
   the web of the node its id names), then a file uploaded to each, a
   command run on it, its output downloaded and compared, then each
   destroyed; the count per node (the nodes' own, /api/health) within
   15 % of an even third; afterwards no sandbox on any node's sandboxd.
4. The Python client (clients/python) and the E2B SDK (tests/e2b,
   sdk_cluster.mjs) create, run commands and read files through the
   balancer, on ids of the three nodes; an E2B volume made on n2
   (sdk_volume_cluster.mjs) is mounted by a create through each node's
   web (n1's and n3's send it on to n2 through cluster_url).
4b. The cluster's image registry (docker-registry on the bridge, its
   blobs in radosgw): an image made with umoci is pushed with skopeo;
   its manifest, config and layer are in the bucket llmbox-registry;
   `status` shows the registry up; n1 and n2 each get two API sandbox
   creates of that reference at once: each node pulls it once (one image
   job), n3 not at all, and every sandbox reads the file the image holds;
   a reference to a tag the registry lacks fails the create with the
   node's sentence. (LLMBOX_CLUSTER_TEST_STEPS=registry runs only up,
   this and down.)
5. node loss and a partition: 12 tasks through the balancer (bash
   `sleep`, then finish) spread over n1, n2, n3; streams of some on w1
   and some on w2; once every task runs, `kill-node n2` and `cut n3`:
   n3's agents are killed by its own lease watchdog (gone from its
   namespace within lease + 2 s, its log says why); n2's and n3's tasks
   end failed naming their node (swept by n1, within lease + sweep
   + 2 s); new sandboxes all go to n1 (the balancer took n2 and n3 out);
   n1's tasks succeed, every stream ends with `done`. `heal n3`: n3 holds
   its lease again, its tasks stay failed, no event of any task is stored
   twice, and n3 claims new tasks, which succeed. `status` shows n2 down.
6. kill-web w1: status shows it down, the balancer answers through w2;
   kill-node and cut of an unknown name are errors naming the members;
   `partition n1 1` cuts n1 for a second and heals it.
7. down: exit 0; nothing left: no process in the state folder, no
   namespace, bridge, veth, mount, sandboxd cgroup, and no state folder.
"""
import calendar
import concurrent.futures
import glob
import hashlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import REPO, Reporter, Stack, free_port, image_ready  # noqa: E402
import pg_server  # noqa: E402
import s3_server  # noqa: E402
from test_sandbox_lifecycle import install_tag  # noqa: E402
from oci_images import tiny_rootfs, umoci_image  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

LEASE = 4
NET = "10.213.0"
TASKS = 12
NODES = ("n1", "n2", "n3")
# API sandboxes through the balancer: 60 in make test, 1,000 for issue
# 13's acceptance (make cluster-sandboxes); WORKERS at a time
SANDBOXES = int(os.environ.get("LLMBOX_CLUSTER_SANDBOXES", "60"))
WORKERS = int(os.environ.get("LLMBOX_CLUSTER_SANDBOX_WORKERS", "6"))
SCRIPT = os.path.join(REPO, "scripts", "cluster.sh")
# only these steps (comma-separated names) besides up and down: quicker
# to iterate on one; all of them when unset (make test)
ONLY = [w for w in os.environ.get("LLMBOX_CLUSTER_TEST_STEPS", "").split(",") if w]
E2B_DIR = os.path.join(REPO, "tests", "e2b")
SCEN = {"scenarios": [{"match": "[cluster]", "steps": [
    {"content": "", "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 8; echo slept"}}]},
    {"content": "", "tool_calls": [{"name": "finish", "arguments": {"answer": "clustered"}}]},
]}, {"match": "[rejoin]", "steps": [
    {"content": "", "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 3; echo back"}}]},
    {"content": "", "tool_calls": [{"name": "finish", "arguments": {"answer": "rejoined"}}]},
]}]}


class Cluster:
    def __init__(self):
        self.base = tempfile.mkdtemp(prefix="llmbox-cluster-test-")
        os.chmod(self.base, 0o755)  # PostgreSQL runs as nobody under it
        self.dir = os.path.join(self.base, "c")
        self.port = free_port()
        self.model_port = free_port()
        self.model = None
        self.reg_port = free_port()
        self.env = dict(os.environ, LLMBOX_CLUSTER_DIR=self.dir, LLMBOX_CLUSTER_PORT=str(self.port),
                        LLMBOX_CLUSTER_REGISTRY_PORT=str(self.reg_port),
                        LLMBOX_CLUSTER_LEASE=str(LEASE), LLMBOX_CLUSTER_NET=NET,
                        LLMBOX_LLM_URL="http://%s.1:%d/v1" % (NET, self.model_port),
                        LLMBOX_LLM_MODEL="fake-model")
        for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "LLMBOX_LLM_KEY"):
            self.env.pop(k, None)

    def run(self, *args, timeout=240):
        r = subprocess.run([SCRIPT] + list(args), env=self.env, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout, r.stderr

    def start_model(self):
        scen = os.path.join(self.base, "scenario.json")
        with open(scen, "w") as f:
            json.dump(SCEN, f)
        self.model = subprocess.Popen([sys.executable, os.path.join(REPO, "tests", "fake_model.py"), "--host",
                                       NET + ".1", "--port", str(self.model_port), "--scenario", scen],
                                      stdout=subprocess.PIPE, stderr=open(os.path.join(self.base, "model.log"), "w"),
                                      text=True)
        assert self.model.stdout.readline().startswith("PORT"), open(os.path.join(self.base, "model.log")).read()

    @property
    def token(self):
        with open(os.path.join(self.dir, "token")) as f:
            return f.read().strip()

    @property
    def sbx_token(self):
        with open(os.path.join(self.dir, "sandbox_token")) as f:
            return f.read().strip()

    def sbx(self, method, path, body=None, headers=None, timeout=60):
        """A sandbox API call through the balancer: (status, headers, body)."""
        h = dict(headers or {}, Authorization="Bearer " + self.sbx_token)
        if isinstance(body, dict):
            body = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        cn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            cn.request(method, path, body=body, headers=h)
            r = cn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            cn.close()

    def lb_servers(self):
        """HAProxy's view of the backend sandbox_nodes: {server: UP/DOWN...}."""
        sk = socket.socket(socket.AF_UNIX)
        sk.settimeout(5)
        try:
            sk.connect(os.path.join(self.dir, "infra", "haproxy", "haproxy.sock"))
            sk.sendall(b"show stat\n")
            out = b""
            while True:
                b = sk.recv(65536)
                if not b:
                    break
                out += b
        finally:
            sk.close()
        rows = [ln.split(",") for ln in out.decode().splitlines() if ln.startswith("sandbox_nodes,")]
        return {r[1]: r[17] for r in rows if r[1] not in ("FRONTEND", "BACKEND")}

    def node_log(self, m, what="node"):
        try:
            with open(os.path.join(self.dir, m, "var", "log", what + ".out"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def req(self, host, port, method, path, body=None, headers=None, timeout=30):
        c = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            h = dict(headers or {}, Authorization="Bearer " + self.token)
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def sql(self, q):
        with open(os.path.join(self.dir, "cluster.env")) as f:
            url = [ln.split("=", 1)[1].strip() for ln in f if ln.startswith("LLMBOX_DB_URL=")][0]
        r = subprocess.run([pg_server._bin("psql"), "-qAt", "-F", "\x1f", url, "-c", q],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        return [ln.split("\x1f") for ln in r.stdout.splitlines() if ln]

    def stop(self):
        if self.model and self.model.poll() is None:
            self.model.kill()
            self.model.wait()
        if os.path.exists(os.path.join(self.dir, "pids")):
            print(self.run("down")[1], file=sys.stderr)
        shutil.rmtree(self.base, ignore_errors=True)


def create(c, prompt):
    bnd = "----cluster-test"
    body = ("--%s\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\n%s\r\n--%s--\r\n"
            % (bnd, prompt, bnd)).encode()
    st, b = c.req("127.0.0.1", c.port, "POST", "/api/tasks", body,
                  {"Content-Type": "multipart/form-data; boundary=" + bnd})
    assert st in (200, 201), (st, b[:300])
    return json.loads(b)["id"]


def stream(c, host, tid, out):
    """The task's event stream from one web, to its end: out[tid] = names."""
    names = []
    try:
        cn = http.client.HTTPConnection(host, 8080, timeout=90)
        cn.request("GET", "/api/tasks/%s/events" % tid,
                   headers={"Accept": "text/event-stream", "Authorization": "Bearer " + c.token})
        r = cn.getresponse()
        for raw in r:
            ln = raw.decode().rstrip("\r\n")
            if ln.startswith("event:"):
                names.append(ln.split(":", 1)[1].strip())
                if names[-1] == "done":
                    break
        cn.close()
    except OSError as e:
        names.append("error: %s" % e)
    out[tid] = names


def sbx_create(c):
    """A new API sandbox through the balancer, made by the web of the node
    its id names: (id, node)."""
    st, h, b = c.sbx("POST", "/api/sandboxes", {})
    assert st == 201, ("create", st, b[:300])
    sid = json.loads(b)["id"]
    node = sid.split(".")[0]
    assert node in NODES and len(sid) == len(node) + 33, sid
    assert h.get("x-llmbox-web") == node, ("made by", sid, h.get("x-llmbox-web"))
    return sid, node


def sbx_use(c, sid, node, i):
    """Upload a file, run a command on it, download its output, each call
    answered by the sandbox's node."""
    data = (("%s %d\n" % (sid, i)) * 200).encode()
    st, h, b = c.sbx("PUT", "/api/sandboxes/%s/files/tmp/in.txt" % sid, data,
                     {"Content-Type": "application/octet-stream"})
    assert st in (200, 201, 204) and h.get("x-llmbox-web") == node, ("upload", sid, st, h, b[:300])
    st, h, b = c.sbx("POST", "/api/sandboxes/%s/exec" % sid,
                     {"command": "sha256sum < /tmp/in.txt | cut -c1-64 > /tmp/out.txt; cat /tmp/out.txt"})
    want = hashlib.sha256(data).hexdigest() + "\n"
    assert st == 200 and h.get("x-llmbox-web") == node, ("exec", sid, st, h, b[:300])
    o = json.loads(b)
    assert o["return_code"] == 0 and o["stdout"] == want, ("exec", sid, o)
    st, h, b = c.sbx("GET", "/api/sandboxes/%s/files/tmp/out.txt" % sid)
    assert st == 200 and b.decode() == want and h.get("x-llmbox-web") == node, ("download", sid, st, b[:300])


def sbx_destroy(c, sid, node):
    st, h, b = c.sbx("DELETE", "/api/sandboxes/" + sid)
    assert st in (200, 204) and h.get("x-llmbox-web") == node, ("destroy", sid, st, h, b[:300])


def sandbox_round(c, i):
    """One API sandbox through the balancer, start to end: its node."""
    sid, node = sbx_create(c)
    try:
        sbx_use(c, sid, node, i)
    finally:
        sbx_destroy(c, sid, node)
    return node


def node_sandboxes(c, m):
    """The API sandboxes node m's web holds, by its own count (/api/health)."""
    st, b = c.req("%s.%d" % (NET, 20 + int(m[1:])), 8080, "GET", "/api/health")
    assert st == 200, (m, st, b[:300])
    return json.loads(b)["sandbox_api"]["sandboxes"]


class NodeHome:
    """A node's home, for stack.Stack's look into its sandboxd (the socket
    is a file under the home: no network namespace in the way)."""
    sandboxd_ping = Stack.sandboxd_ping
    sandbox_leftovers = Stack.sandbox_leftovers

    def __init__(self, prefix):
        self.prefix = prefix


def sandboxes_left(c, nodes=NODES):
    """{node: what its web and its sandboxd still hold} for those that hold any."""
    left = {}
    for m in nodes:
        cn = http.client.HTTPConnection("%s.%d" % (NET, 20 + int(m[1:])), 8080, timeout=10)
        try:
            cn.request("GET", "/api/sandboxes", headers={"Authorization": "Bearer " + c.sbx_token})
            r = cn.getresponse()
            st, b = r.status, r.read()
        finally:
            cn.close()
        what = [] if st == 200 and not json.loads(b)["sandboxes"] else ["web: %s %s" % (st, b[:200])]
        what += NodeHome(os.path.join(c.dir, m)).sandbox_leftovers()
        if what:
            left[m] = what
    return left


def node_create(c, m, body, timeout=300):
    """An API sandbox create on node m's own web: (status, body)."""
    cn = http.client.HTTPConnection("%s.%d" % (NET, 20 + int(m[1:])), 8080, timeout=timeout)
    try:
        cn.request("POST", "/api/sandboxes", json.dumps(body).encode(),
                   {"Authorization": "Bearer " + c.sbx_token, "Content-Type": "application/json"})
        r = cn.getresponse()
        return r.status, r.read()
    finally:
        cn.close()


def registry_images(c):
    """Step 4b: the cluster's registry, its blobs in radosgw, and nodes
    that pull on first use."""
    reg = "%s.1:%d" % (NET, c.reg_port)
    work = os.path.join(c.base, "img")
    os.makedirs(work)
    root = tiny_rootfs(os.path.join(work, "rootfs"))
    word = "from-the-cluster-registry-" + os.urandom(6).hex()
    with open(os.path.join(root, "hello"), "w") as f:
        f.write(word + "\n")
    lay = umoci_image(work, root, tag="t")
    ref = "%s/team/cluster:1" % reg
    p = subprocess.run(["skopeo", "copy", "--dest-tls-verify=false", "oci:%s:t" % lay, "docker://" + ref],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (p.stdout[-1000:], p.stderr[-2000:])
    # the blobs the layout holds (manifest, config, layers) are in the bucket
    with open(os.path.join(lay, "index.json")) as f:
        mdig = [m["digest"] for m in json.load(f)["manifests"]
                if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == "t"][0]
    with open(os.path.join(lay, "blobs", "sha256", mdig.split(":")[1])) as f:
        man = json.load(f)
    want = [(man["config"]["digest"], man["config"]["size"])] + [(la["digest"], la["size"]) for la in man["layers"]]
    with open(os.path.join(c.dir, "cluster.env")) as f:
        env = dict(ln.rstrip("\n").split("=", 1) for ln in f if "=" in ln)
    env.update(LLMBOX_S3_BUCKET="llmbox-registry", LLMBOX_HOME="/", PATH=os.environ["PATH"])
    p = subprocess.run([os.path.join(REPO, "build", "llmbox"), "blob", "ls", "docker/registry/v2/blobs"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    for d, size in want:
        h = d.split(":")[1]
        key = "%d docker/registry/v2/blobs/sha256/%s/%s/data" % (size, h[:2], h)
        assert key in p.stdout.splitlines(), ("not in the bucket llmbox-registry", key, p.stdout[-2000:])
    assert "docker/registry/v2/repositories/team/cluster/" not in p.stdout  # only blobs were listed
    rc, out, err = c.run("status")
    assert "registry up    %s (blobs in radosgw's llmbox-registry)" % reg in out.splitlines(), out
    # two creates on n1 and two on n2, all at once
    jobs = lambda m: glob.glob(os.path.join(c.dir, m, "var", "sandboxd", "image-jobs", "*.log"))  # noqa: E731
    assert not any(jobs(m) for m in NODES), {m: jobs(m) for m in NODES}
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        res = list(ex.map(lambda m: (m, node_create(c, m, {"image": ref})), ("n1", "n2", "n1", "n2")))
    t1 = time.time()
    made = []
    for m, (st, b) in res:
        if st in (200, 201):
            made.append((json.loads(b)["id"], m))
    try:
        assert len(made) == 4, res
        for sid, m in made:
            assert sid.startswith(m + "."), (sid, m)
            cn = http.client.HTTPConnection("%s.%d" % (NET, 20 + int(m[1:])), 8080, timeout=60)
            cn.request("POST", "/api/sandboxes/%s/exec" % sid, json.dumps({"command": "cat /hello"}).encode(),
                       {"Authorization": "Bearer " + c.sbx_token, "Content-Type": "application/json"})
            r = cn.getresponse()
            o = json.loads(r.read())
            cn.close()
            assert r.status == 200 and o["stdout"] == word + "\n" and o["return_code"] == 0, (sid, r.status, o)
    finally:
        for sid, m in made:
            cn = http.client.HTTPConnection("%s.%d" % (NET, 20 + int(m[1:])), 8080, timeout=60)
            cn.request("DELETE", "/api/sandboxes/" + sid, headers={"Authorization": "Bearer " + c.sbx_token})
            cn.getresponse().read()
            cn.close()
    got = {m: len(jobs(m)) for m in NODES}
    assert got == {"n1": 1, "n2": 1, "n3": 0}, ("image jobs (pulls) per node", got)
    for m in ("n1", "n2"):
        refs = glob.glob(os.path.join(c.dir, m, "var", "images", "oci", "refs", "*.json"))
        assert len(refs) == 1, (m, refs)
    assert not os.path.exists(os.path.join(c.dir, "n3", "var", "images", "oci", "refs")) or \
        not os.listdir(os.path.join(c.dir, "n3", "var", "images", "oci", "refs"))
    # a tag the registry lacks: the node says it cannot pull it
    gone = "%s/team/cluster:missing" % reg
    st, b = node_create(c, "n3", {"image": gone})
    assert st == 400 and ("This node does not have the image %s and cannot pull it: " % gone) in b.decode(), (st, b)
    print("# the cluster's registry: pushed %d blobs, all in radosgw's bucket; 2 creates on n1 and 2 on n2 at once"
          " in %.1f s, one pull per node; a missing tag: %s" % (len(want) + 1, t1 - t0, b.decode()[:300]),
          file=sys.stderr)
    deadline = time.time() + 20
    while sandboxes_left(c) and time.time() < deadline:
        time.sleep(0.3)
    assert not sandboxes_left(c), sandboxes_left(c)


def netns_agents(m):
    """{pid: task id} of the agents running in member m's network namespace."""
    want = os.stat("/run/netns/lbxc-" + m).st_ino
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.stat("/proc/%s/ns/net" % d).st_ino != want:
                continue
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        # not the web's spare agent (--spare, no task yet)
        if b"agent" in argv and b"--task" in argv and b"--spare" not in argv:
            out[int(d)] = argv[argv.index(b"--task") + 1].decode()
    return out


def log_ts(text, what):
    """The time (epoch s) of the first JSON log line of text whose msg holds
    what, or None."""
    for ln in text.splitlines():
        if what in ln:
            try:
                ts = json.loads(ln)["ts"]
            except (ValueError, KeyError):
                continue
            return calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + ts[19:].rstrip("Z"))
    return None


def alive(pid):
    """pid runs (a zombie does not: it is dead, not yet reaped; a node whose
    main loop is held by a store call that does not answer reaps later)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def keep_logs(c):
    """LLMBOX_CLUSTER_TEST_LOGS=DIR: every member's logs copied there
    before down (to read after a failure)."""
    to = os.environ.get("LLMBOX_CLUSTER_TEST_LOGS")
    if not to:
        return
    for f in glob.glob(os.path.join(c.dir, "*", "var", "log", "*")) + glob.glob(os.path.join(c.dir, "infra", "*.out")):
        d = os.path.join(to, os.path.relpath(os.path.dirname(f), c.dir))
        try:
            os.makedirs(d, exist_ok=True)
            shutil.copy(f, d)
        except OSError:  # removed by down meanwhile
            pass


def nothing_left(c, tags):
    left = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cwd = os.readlink("/proc/%s/cwd" % d)
        except OSError:
            continue
        if cwd.startswith(c.dir):
            left.append("process %s in %s" % (d, cwd))
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left += ["netns " + ln for ln in ns.splitlines() if ln.startswith("lbxc-")]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    left += ["link " + ln.split(":")[1] for ln in links.splitlines() if "lbxc-" in ln]
    with open("/proc/self/mountinfo") as f:
        left += ["mount " + ln for ln in f if c.dir in ln]
    for tag in tags:
        left += glob.glob("/sys/fs/cgroup/%s" % tag) + glob.glob("/sys/fs/cgroup/*/%s" % tag)
    if os.path.exists(c.dir):
        left.append("folder %s" % c.dir)
    return left


def main():
    why = None
    if os.geteuid() != 0:
        why = "needs root (network namespaces, sandboxd)"
    elif pg_server.missing() or s3_server.missing() or not shutil.which("haproxy"):
        why = "not installed: %s (make deps)" % " ".join(pg_server.missing() + s3_server.missing() +
                                                          ([] if shutil.which("haproxy") else ["haproxy"]))
    elif not image_ready():
        why = "the sandbox image is not built (make image)"
    elif subprocess.run(["ip", "link", "show", "lbxc-br0"], capture_output=True).returncode == 0:
        why = "a cluster is up on this machine (lbxc-br0): scripts/cluster.sh down first"
    if why:
        print("SKIP test_cluster: " + why)
        return 0
    rep = Reporter()
    if ONLY:
        run = rep.run

        def only(name, fn, *args):
            if name in ("down_when_nothing_runs", "up", "down_leaves_nothing") or name in ONLY:
                return run(name, fn, *args)
            print("# skipped %s (LLMBOX_CLUSTER_TEST_STEPS)" % name, file=sys.stderr)
        rep.run = only
    c = Cluster()
    tags = ["%s" % install_tag(os.path.join(c.dir, n, "var")) for n in ("n1", "n2", "n3")]
    try:
        def down_idle():
            rc, out, err = c.run("down")
            assert rc == 0, (rc, out, err)
            assert "cluster: down" in out, out
            assert not os.path.exists(c.dir)
        rep.run("down_when_nothing_runs", down_idle)

        def not_empty():
            os.makedirs(c.dir)
            keep = os.path.join(c.dir, "keep")
            open(keep, "w").close()
            rc, out, err = c.run("up")
            assert rc == 1 and "%s is not empty" % c.dir in err, (rc, out, err)
            rc, out, err = c.run("down")
            assert rc == 0 and os.path.exists(keep), (rc, out, err)
            shutil.rmtree(c.dir)
        rep.run("up_refuses_a_folder_not_its_own", not_empty)

        def up():
            t0 = time.time()
            rc, out, err = c.run("up")
            assert rc == 0, (rc, out[-3000:], err[-3000:])
            url = out.strip().splitlines()[-1]
            assert url == "http://127.0.0.1:%d/" % c.port, out[-500:]
            print("# up in %.1f s" % (time.time() - t0), file=sys.stderr)
            st, b = c.req("127.0.0.1", c.port, "GET", "/api/health")
            assert st == 200 and json.loads(b)["ok"], (st, b[:300])
            rc, out, err = c.run("up")
            assert rc == 0 and "already up" in out, (rc, out, err)
            c.start_model()
            # n1's node sees an empty folder where n2's home is, and its own
            with open(os.path.join(c.dir, "pids", "n1.node")) as f:
                pid = f.read().strip()
            r = subprocess.run(["nsenter", "-t", pid, "-m", "ls", "-A", os.path.join(c.dir, "n2")],
                               capture_output=True, text=True)
            assert r.returncode != 0 or r.stdout.strip() == "", r
            r = subprocess.run(["nsenter", "-t", pid, "-m", "ls", os.path.join(c.dir, "n1", "var")],
                               capture_output=True, text=True)
            assert "run" in r.stdout.split(), r
            routes = subprocess.run(["ip", "-n", "lbxc-n1", "route"], capture_output=True, text=True).stdout
            assert routes.strip() == "%s.0/24 dev eth0 proto kernel scope link src %s.21" % (NET, NET), routes
        rep.run("up", up)

        def sandboxes():
            url = [ln for ln in open(os.path.join(c.dir, "cluster.env")) if ln.startswith("LLMBOX_DB_URL=")][0]
            assert url.startswith("LLMBOX_DB_URL=postgresql://llmbox:") and ("@%s.1:" % NET) in url, \
                "the store is not reached over TCP on the bridge"
            # all of them at once (each node holds its share), then each used,
            # then each destroyed
            ex = concurrent.futures.ThreadPoolExecutor(WORKERS)
            made = []
            try:
                t0 = time.time()
                futs = [ex.submit(sbx_create, c) for _ in range(SANDBOXES)]
                errs = []
                for f in futs:  # every one made is destroyed below, even when another failed
                    try:
                        made.append(f.result())
                    except Exception as e:  # noqa: BLE001 (raised below, the first)
                        errs.append(e)
                if errs:
                    raise errs[0]
                t1 = time.time()
                per = {n: sum(1 for _, m in made if m == n) for n in NODES}
                held = {n: node_sandboxes(c, n) for n in NODES}
                assert held == per, ("the nodes' own counts", held, "the ids'", per)
                list(ex.map(lambda a: sbx_use(c, a[1][0], a[1][1], a[0]), enumerate(made)))
                t2 = time.time()
            finally:
                for f in [ex.submit(sbx_destroy, c, sid, node) for sid, node in made]:
                    f.result()
                ex.shutdown()
            t3 = time.time()
            even = SANDBOXES / len(NODES)
            print("# %d API sandboxes through the balancer, all at once (%d calls at a time): per node %s (the"
                  " nodes' own count); created in %.1f s, upload + exec + download of each in %.1f s, destroyed"
                  " in %.1f s: %.1f s in all" % (SANDBOXES, WORKERS, per, t1 - t0, t2 - t1, t3 - t2, t3 - t0),
                  file=sys.stderr)
            assert all(abs(n - even) <= 0.15 * even for n in per.values()), ("not within 15 %% of %.1f each" % even,
                                                                            per)
            deadline = time.time() + 20
            while sandboxes_left(c) and time.time() < deadline:
                time.sleep(0.3)
            assert not sandboxes_left(c), sandboxes_left(c)
        rep.run("sandboxes_spread_over_the_nodes", sandboxes)

        def clients():
            sys.path.insert(0, os.path.join(REPO, "clients", "python"))
            from llmbox import Client  # noqa: E402
            cl = Client("http://127.0.0.1:%d" % c.port, sandbox_token=c.sbx_token)
            seen = []
            for _ in range(3):
                with cl.sandbox() as sb:
                    node = sb.id.split(".")[0]
                    assert node in NODES and len(sb.id) == len(node) + 33, sb.id
                    seen.append(node)
                    r = sb.exec("echo hi-%s" % node)
                    assert r.stdout == "hi-%s\n" % node and r.return_code == 0, r
                    sb.write_file("/tmp/p.txt", "via the client")
                    assert sb.read_file("/tmp/p.txt") == b"via the client"
            if not os.path.isdir(os.path.join(E2B_DIR, "node_modules", "e2b")):
                subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=E2B_DIR, check=True,
                               timeout=600)
            env = dict(os.environ, E2B_API_URL="http://127.0.0.1:%d/e2b" % c.port,
                       E2B_SANDBOX_URL="http://127.0.0.1:%d/e2b/sandbox" % c.port, E2B_API_KEY=c.sbx_token,
                       LLMBOX_E2B_NODES=" ".join(NODES))
            p = subprocess.run(["node", "sdk_cluster.mjs"], cwd=E2B_DIR, env=env, capture_output=True, text=True,
                               timeout=120)
            assert p.returncode == 0 and "FAIL" not in p.stdout, (p.stdout[-3000:], p.stderr[-2000:])
            ids = [ln for ln in p.stdout.splitlines() if ln.startswith("# ids: ")]
            # E2B volumes: one made on n2, mounted by a create through each
            # node's web (the others forward it to n2 through cluster_url)
            p = subprocess.run(["node", "sdk_volume_cluster.mjs"], cwd=E2B_DIR, timeout=300, capture_output=True,
                               text=True, env=dict(env, E2B_VOLUME_API_URL=env["E2B_API_URL"],
                                                   LLMBOX_VOLUME_NODE="n2"))
            assert p.returncode == 0 and "FAIL" not in p.stdout, (p.stdout[-3000:], p.stderr[-2000:])
            print("# the Python client's sandboxes on %s; the E2B SDK's %s" % (" ".join(seen), ids), file=sys.stderr)
            deadline = time.time() + 20
            while sandboxes_left(c) and time.time() < deadline:
                time.sleep(0.3)
            assert not sandboxes_left(c), sandboxes_left(c)
        rep.run("python_client_and_e2b_sdk", clients)
        rep.run("registry", registry_images, c)

        def loss_and_partition():
            ids = [create(c, "task %d [cluster]" % i) for i in range(TASKS)]
            streams = {}
            threads = [threading.Thread(target=stream, args=(c, "%s.%d" % (NET, 11 + i % 2), tid, streams))
                       for i, tid in enumerate(ids[:6])]
            for t in threads:
                t.start()
            q = "SELECT id, status, COALESCE(node, ''), COALESCE(reason, '') FROM tasks WHERE id IN (%s)" % \
                ",".join("'%s'" % i for i in ids)
            deadline = time.time() + 60
            while True:
                rows = c.sql(q)
                running = [r for r in rows if r[1] == "running"]
                if len(running) == TASKS:
                    break
                assert time.time() < deadline, rows
                time.sleep(0.2)
            on = {r[0]: r[2] for r in rows}
            per = {n: sum(1 for v in on.values() if v == n) for n in NODES}
            assert all(per.values()) and sum(per.values()) == TASKS, per
            # the cgroups the down check looks for are the nodes' sandboxds' (made
            # with their first sandbox)
            assert all(glob.glob("/sys/fs/cgroup/%s" % t) + glob.glob("/sys/fs/cgroup/*/%s" % t) for t in tags), tags
            lost, cut = [i for i in ids if on[i] == "n2"], [i for i in ids if on[i] == "n3"]
            deadline = time.time() + 20
            while sorted(netns_agents("n3").values()) != sorted(cut):  # an agent starts a moment after its claim
                assert time.time() < deadline, (netns_agents("n3"), cut)
                time.sleep(0.2)
            agents = netns_agents("n3")
            # the times below are the nodes' own (their log lines), from the
            # end of each command (its last step is the kill, the cut): a
            # loaded machine slows the test's polling, not what it measures
            rc, out, err = c.run("kill-node", "n2")
            tkill = time.time()
            assert rc == 0 and "n2: kill -9" in out, (rc, out, err)
            rc, out, err = c.run("cut", "n3")
            tcut = time.time()
            assert rc == 0 and "n3: cut" in out, (rc, out, err)
            # n3's own watchdog kills its agents once its lease runs out
            # unrenewed (no one can reach n3 to do it): gone from its namespace
            while any(alive(p) for p in agents):
                assert time.time() - tcut < LEASE + 10, ("n3's agents still run %.1f s after the cut (lease %d s)"
                                                         % (time.time() - tcut, LEASE), agents)
                time.sleep(0.1)
            # n3 itself did it: its watchdog thread (its main loop is stuck in
            # the renewal the cut holds) or, had the renewal failed at once,
            # its main loop; within its lease of the cut
            why = [(log_ts(c.node_log("n3"), w), w) for w in ("its lease expired unrenewed",
                                                              "could not renew its lease before it expired")]
            why = sorted(w for w in why if w[0])
            assert why and why[0][0] >= tcut - 0.5, (why, tcut, c.node_log("n3")[-2000:])
            killed = why[0][0] - tcut
            assert killed <= LEASE + 1, "n3 killed its agents %.1f s after the cut (lease %d s)" % (killed, LEASE)
            # swept by the one node left, n1
            deadline = time.time() + LEASE + LEASE / 3 + 20
            while True:
                rows = {r[0]: r for r in c.sql(q)}
                if all(rows[i][1] != "running" for i in lost + cut):
                    break
                assert time.time() < deadline, rows
                time.sleep(0.2)
            for i in lost:
                assert rows[i][1] == "failed" and "node n2" in rows[i][3], rows[i]
            for i in cut:
                assert rows[i][1] == "failed" and "node n3" in rows[i][3], rows[i]
            log1 = c.node_log("n1")
            s2, s3 = log_ts(log1, "swept node n2"), log_ts(log1, "swept node n3")
            assert s2 and s3, log1[-2000:]
            swept = max(s2 - tkill, s3 - tcut)
            assert swept <= LEASE + LEASE / 3.0 + 2, "swept after %.1f s (lease %d s)" % (swept, LEASE)
            rc, out, err = c.run("status")
            assert "n3  cut   (link lbxc-n3 down: cluster.sh heal n3)" in out.splitlines(), out
            # the balancer took n2 and n3 out of sandbox_nodes: a new sandbox is n1's
            deadline = time.time() + 15
            while c.lb_servers() != {"n1": "UP", "n2": "DOWN", "n3": "DOWN"}:
                assert time.time() < deadline, c.lb_servers()
                time.sleep(0.3)
            for i in range(3):
                node = sandbox_round(c, i)
                assert node == "n1", node
            deadline = time.time() + 90
            while any(r[1] in ("queued", "running") for r in c.sql(q)):
                assert time.time() < deadline, c.sql(q)
                time.sleep(0.5)
            for i, r in {r[0]: r for r in c.sql(q)}.items():
                if on[i] == "n1":
                    assert r[1] == "succeeded", r
            for t in threads:
                t.join(60)
            assert len(streams) == 6, streams
            for tid, names in streams.items():
                assert names and names[-1] == "done", (tid, names)
            print("# %d tasks: per node %s; n2 killed and n3 cut: n3's agents killed by its watchdog %.1f s after"
                  " the cut (%s), n2's and n3's %d tasks failed after %.1f s at most (lease %d s)"
                  % (TASKS, per, killed, why[0][1], len(lost + cut), swept, LEASE), file=sys.stderr)

            rc, out, err = c.run("heal", "n3")
            assert rc == 0 and "n3: healed" in out, (rc, out, err)
            t1 = time.time()
            # n3 holds its lease again (its store connection comes back
            # with TCP's next retransmission, or a new one)
            while True:
                try:
                    cn = http.client.HTTPConnection("%s.23" % NET, 8090, timeout=2)
                    cn.request("GET", "/healthz")
                    h = json.loads(cn.getresponse().read())
                    cn.close()
                except (OSError, ValueError):
                    h = {}
                if h.get("state") == "running":
                    break
                assert time.time() - t1 < 45, ("n3 did not hold its lease again", h, c.node_log("n3")[-2000:])
                time.sleep(0.3)
            rejoined = time.time() - t1
            assert not netns_agents("n3"), netns_agents("n3")
            rows = {r[0]: r for r in c.sql(q)}
            for i in cut:
                assert rows[i][1] == "failed" and "node n3" in rows[i][3], ("after the heal", rows[i])
            # every event once: no (task, type, data) twice, one end per task
            dup = c.sql("SELECT task_id, type, left(data, 200), count(*) FROM events WHERE task_id IN (%s)"
                        " GROUP BY task_id, type, data HAVING count(*) > 1" % ",".join("'%s'" % i for i in ids))
            assert not dup, dup
            ends = c.sql("SELECT task_id, count(*) FROM events WHERE task_id IN (%s) AND type = 'done'"
                         " GROUP BY task_id" % ",".join("'%s'" % i for i in ids))
            assert sorted(ids) == sorted(r[0] for r in ends) and all(r[1] == "1" for r in ends), ends
            # n3 takes new work: 8 tasks at once, n1 has room for 4
            more = [create(c, "again %d [rejoin]" % i) for i in range(8)]
            q2 = "SELECT id, status, COALESCE(node, ''), COALESCE(reason, '') FROM tasks WHERE id IN (%s)" % \
                ",".join("'%s'" % i for i in more)
            deadline = time.time() + 60
            while any(r[1] in ("queued", "running") for r in c.sql(q2)):
                assert time.time() < deadline, c.sql(q2)
                time.sleep(0.3)
            rows = c.sql(q2)
            assert all(r[1] == "succeeded" for r in rows), rows
            per2 = {n: sum(1 for r in rows if r[2] == n) for n in NODES}
            assert per2["n3"] > 0 and per2["n2"] == 0, per2
            rc, out, err = c.run("status")
            lines = out.splitlines()
            assert any(ln.startswith("n2  node down") for ln in lines), out
            assert sum(1 for ln in lines if ln.startswith(("n1  node running", "n3  node running"))) == 2, out
            assert not any(" cut " in ln for ln in lines), out
            # the node's own web (its sandbox calls) went with it
            assert sum(1 for ln in lines if " web up " in ln) == 4 and "n2  web down  %s.22:8080" % NET in lines, out
            print("# n3 healed: held its lease again after %.1f s, then ran %d of 8 new tasks (%s); no event twice"
                  % (rejoined, per2["n3"], per2), file=sys.stderr)
        rep.run("node_loss_and_partition", loss_and_partition)

        def kill_web():
            rc, out, err = c.run("kill-node", "n9")
            assert rc == 1 and "no node named 'n9' (the nodes: n1 n2 n3)" in err, (rc, out, err)
            rc, out, err = c.run("cut", "n9")
            assert rc == 1 and "no member named 'n9' (the webs: w1 w2; the nodes: n1 n2 n3)" in err, (rc, out, err)
            rc, out, err = c.run("partition", "n1", "soon")
            assert rc == 2 and "SECONDS must be a whole number, not 'soon'" in err, (rc, out, err)
            # a short partition: cut, a second, healed (shorter than the lease: nothing else happens)
            t0 = time.time()
            rc, out, err = c.run("partition", "n1", "1")
            assert rc == 0 and "n1: cut" in out and "n1: healed" in out and time.time() - t0 >= 1, (rc, out, err)
            link = subprocess.run(["ip", "-o", "link", "show", "lbxc-n1"], capture_output=True, text=True).stdout
            assert ",UP," in link or ",UP>" in link, link
            rc, out, err = c.run("kill-web", "w1")
            assert rc == 0 and "w1: kill -9" in out, (rc, out, err)
            rc, out, err = c.run("status")
            assert "w1  web down  %s.11:8080" % NET in out.splitlines(), out
            # the balancer takes w1 out (health checks every 2 s, fall 2)
            # and answers through w2, with a retry on a refused connection
            for _ in range(5):
                st, b = c.req("127.0.0.1", c.port, "GET", "/api/health")
                assert st == 200, (st, b[:300])
        rep.run("kill_web", kill_web)

        def down():
            keep_logs(c)
            stop = threading.Event()
            if os.environ.get("LLMBOX_CLUSTER_TEST_LOGS"):  # and what down adds to them, until it removes them
                threading.Thread(target=lambda: [keep_logs(c) or time.sleep(0.1) for _ in iter(stop.is_set, True)],
                                 daemon=True).start()
            t0 = time.time()
            rc, out, err = c.run("down")
            stop.set()
            assert rc == 0, (rc, out[-2000:], err[-2000:])
            if not ONLY or "node_loss_and_partition" in ONLY:
                assert "n2: sandboxd was killed" in out, out
            left = nothing_left(c, tags)
            assert not left, left
            print("# down in %.1f s, nothing left" % (time.time() - t0), file=sys.stderr)
        rep.run("down_leaves_nothing", down)
    finally:
        c.stop()
    return rep.done()


if __name__ == "__main__":
    sys.exit(main())
