"""scripts/cluster.sh (issue 13, a cluster on one machine), scaled to fit
`make test`: the real script brings up PostgreSQL, radosgw, HAProxy, two
webs and three sandbox nodes in their network namespaces, with the fake
model (tests/fake_model.py) on the bridge's host address and a short lease.

1. down when nothing runs: exit 0, says down; up refuses a state folder
   that holds anything, and down leaves such a folder alone.
2. up: its last line is the balancer's URL, which answers /api/health; up
   again says it is already up; a node cannot see another's home (its
   mount namespace shows an empty folder there) and its namespace has no
   route beyond the bridge.
3. node loss: 12 tasks through the balancer (bash `sleep`, then finish)
   spread over n1, n2, n3; streams of some on w1 and some on w2; once
   every task runs, `kill-node n2`: n2's tasks end failed naming n2 within
   lease + sweep (+2 s), the others succeed, every stream ends with
   `done`; `status` shows n2 down and the others running.
4. kill-web w1: status shows it down, the balancer answers through w2;
   kill-node of an unknown name is an error naming the nodes.
5. down: exit 0; nothing left: no process in the state folder, no
   namespace, bridge, veth, mount, sandboxd cgroup, and no state folder.
"""
import glob
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import REPO, Reporter, free_port, image_ready  # noqa: E402
import pg_server  # noqa: E402
import s3_server  # noqa: E402
from test_sandbox_lifecycle import install_tag  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

LEASE = 4
NET = "10.213.0"
TASKS = 12
SCRIPT = os.path.join(REPO, "scripts", "cluster.sh")
SCEN = {"scenarios": [{"match": "[cluster]", "steps": [
    {"content": "", "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 8; echo slept"}}]},
    {"content": "", "tool_calls": [{"name": "finish", "arguments": {"answer": "clustered"}}]},
]}]}


class Cluster:
    def __init__(self):
        self.base = tempfile.mkdtemp(prefix="llmbox-cluster-test-")
        os.chmod(self.base, 0o755)  # PostgreSQL runs as nobody under it
        self.dir = os.path.join(self.base, "c")
        self.port = free_port()
        self.model_port = free_port()
        self.model = None
        self.env = dict(os.environ, LLMBOX_CLUSTER_DIR=self.dir, LLMBOX_CLUSTER_PORT=str(self.port),
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

        def node_loss():
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
            per = {n: sum(1 for v in on.values() if v == n) for n in ("n1", "n2", "n3")}
            assert all(per.values()) and sum(per.values()) == TASKS, per
            # the cgroups the down check looks for are the nodes' sandboxds' (made
            # with their first sandbox)
            assert all(glob.glob("/sys/fs/cgroup/%s" % t) + glob.glob("/sys/fs/cgroup/*/%s" % t) for t in tags), tags
            rc, out, err = c.run("kill-node", "n2")
            assert rc == 0 and "n2: kill -9" in out, (rc, out, err)
            t0 = time.time()
            mine = [i for i in ids if on[i] == "n2"]
            while True:
                rows = {r[0]: r for r in c.sql(q)}
                if all(rows[i][1] != "running" for i in mine):
                    took = time.time() - t0
                    break
                assert time.time() - t0 < LEASE + LEASE / 3 + 10, rows
                time.sleep(0.2)
            for i in mine:
                assert rows[i][1] == "failed" and "node n2" in rows[i][3], rows[i]
            assert took <= LEASE + LEASE / 3.0 + 2, "swept after %.1f s (lease %d s)" % (took, LEASE)
            deadline = time.time() + 90
            while any(r[1] in ("queued", "running") for r in c.sql(q)):
                assert time.time() < deadline, c.sql(q)
                time.sleep(0.5)
            for i, r in {r[0]: r for r in c.sql(q)}.items():
                if on[i] != "n2":
                    assert r[1] == "succeeded", r
            for t in threads:
                t.join(60)
            assert len(streams) == 6, streams
            for tid, names in streams.items():
                assert names and names[-1] == "done", (tid, names)
            rc, out, err = c.run("status")
            lines = out.splitlines()
            assert any(ln.startswith("n2  node down") for ln in lines), out
            assert sum(1 for ln in lines if ln.startswith(("n1  node running", "n3  node running"))) == 2, out
            # the node's own web (its sandbox calls) went with it
            assert sum(1 for ln in lines if " web up " in ln) == 4 and "n2  web down  %s.22:8080" % NET in lines, out
            print("# %d tasks: per node %s; n2 killed: its %d failed after %.1f s (lease %d s)"
                  % (TASKS, per, len(mine), took, LEASE), file=sys.stderr)
        rep.run("node_loss", node_loss)

        def kill_web():
            rc, out, err = c.run("kill-node", "n9")
            assert rc == 1 and "no node named 'n9' (the nodes: n1 n2 n3)" in err, (rc, out, err)
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
            t0 = time.time()
            rc, out, err = c.run("down")
            assert rc == 0, (rc, out[-2000:], err[-2000:])
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
