"""The task queue and `llmbox node` (several nodes) on a real PostgreSQL
(tests/lib/pg_server.py), several nodes as processes on this machine, each
with its own LLMBOX_HOME, and the fake model of tests/fake_model.py in its
eval behaviour. Tasks are llm-mode rows put in the queue directly (a
queued task is a row: INSERT ... claimable = 1), so hundreds of them need
no sandbox; one test goes through the web with task_runner = queue and a
sandbox (root and the image needed).

1. claims_once: LLMBOX_NODE_LOAD_N (300) tasks over three nodes: every task
   succeeds, claimed once (attempt 1), each node ran some, one "done" event
   each and the same events for every task (none lost or doubled).
2. kill9: a node killed -9 while its agents wait for a slow model: its tasks
   end failed naming it, due within lease + sweep interval (the test allows
   three times that, for a slower machine, and prints what it took), the
   other node's tasks succeed.
3. fenced_agent: the node and its agent SIGSTOPped past the lease; the agent
   continued alone: the store refuses its writes and it ends without an
   answer; the node continued: the task ends failed naming it, /healthz says
   running again and a new task succeeds on it.
4. db_stopped: every PostgreSQL process SIGSTOPped longer than the lease:
   the node's watchdog kills its agent (the store call hangs meanwhile);
   PostgreSQL continued: the task ends failed, a new one succeeds.
5. web_queue: a web with task_runner = queue stores the task and spawns
   nothing (queued after 1.5 s); a node started on the same home (shared
   filesystem: the inputs by path) runs it in a sandbox to its answer; a
   follow-up round is queued and claimed again (attempt 2).
6b. deadline: an agent SIGSTOPped (its own watchdog cannot act) is killed
   by its node at the time limit plus the grace; the task says so.
6. sigterm: a node told to stop renews at once with capacity 0 (the
   rounds whose sandboxes it holds go elsewhere), lets its running task
   finish, claims no more, removes its row and exits 0.
9. bad_start: node_listen taken, an invalid node name, a store not there,
   and an agent with a malformed or foreign fence each stop with a sentence.
8. cancel_elsewhere: a task ended in the store from another host has its
   agent stopped by the node.
5b. queue_web_takes_no_slot: a queue web with max_tasks 1 stores 20
   creates sent by 4 clients at once (no task slot is taken).
7. inputs_unreachable: a node whose object store does not answer fails the
   task with a sentence rather than run it without its inputs.
10. left_sandboxes: a node and its agent killed -9 while the agent holds a
   leased (kept) sandbox: the node restarted under the same name destroys
   it in sandboxd and forgets its record; also when another node swept
   the task meanwhile (left_sandboxes_swept).
11. followups_across_nodes: two nodes, a conversation through a queue web.
   Rounds 2 and 3 are claimed by the node that ran round 1 (the holder of
   the kept sandbox) although the other node is idle (the holder is
   stopped for 2 s after each message: the round stays queued meanwhile),
   and find round 1's exported variable and file. Then the holder is
   killed -9: round 4 is claimed by the other node within the lease (+ a
   poll), runs in a fresh sandbox (the variable and file are gone), and an
   error event and the model's opening message say that the computer was
   on the holder, which is gone. Every round ran once (attempt = round,
   one done each)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import LLMBOX, REPO, Reporter, Stack, Skip, free_port, image_ready, multipart  # noqa: E402
import pg_server  # noqa: E402

LOAD_N = int(os.environ.get("LLMBOX_NODE_LOAD_N", "300"))
LEASE = 3
# what a time bound allows for a machine three times slower or busier than
# this one: the bounds below catch a hang (a sweep, a kill that never
# comes), they are not speed checks; a bound's failure names the time it
# measured, and the kill -9 and holder tests print it when they pass
SLOW = 3


class Cluster:
    def __init__(self, pg, db):
        self.pg = pg
        pg.sql('CREATE DATABASE "%s"' % db)
        self.url = pg.url.replace("/%s?" % pg.db, "/%s?" % db)
        self.dir = tempfile.mkdtemp(prefix="llmbox-nodes-")
        self.procs = []
        self.nodes = {}
        self.models = {}

    def model(self, name, *args):
        scen = os.path.join(self.dir, "scenario.json")
        with open(scen, "w") as f:
            json.dump({"eval": True}, f)
        p = subprocess.Popen([sys.executable, os.path.join(REPO, "tests", "fake_model.py"), "--port", "0",
                              "--scenario", scen] + list(args), stdout=subprocess.PIPE,
                             stderr=open(os.path.join(self.dir, "model-%s.log" % name), "w"), text=True)
        self.procs.append(p)
        port = int(p.stdout.readline().split()[-1])
        self.models[name] = "http://127.0.0.1:%d/v1" % port
        return self.models[name]

    def node(self, name, model_url, capacity=4, lease=LEASE, env=None, home=None):
        home = home or os.path.join(self.dir, name)
        os.makedirs(home, exist_ok=True)
        port = free_port()
        e = dict(os.environ)
        for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "LLMBOX_LLM_KEY"):
            e.pop(k, None)
        e.update({"LLMBOX_HOME": home, "LLMBOX_DB_URL": self.url, "LLMBOX_LLM_URL": model_url,
                  "LLMBOX_LLM_MODEL": "fake-model", "LLMBOX_NODE_NAME": name,
                  "LLMBOX_NODE_LISTEN": "127.0.0.1:%d" % port, "LLMBOX_NODE_CAPACITY": str(capacity),
                  "LLMBOX_NODE_LEASE_S": str(lease),
                  "LLMBOX_PROMPTS": os.path.join(REPO, "server", "agent", "prompts"),
                  "LLMBOX_PLUGINS": os.path.join(REPO, "plugins")})
        e.update(env or {})
        log = open(os.path.join(home, "node-%s.log" % name), "a")
        p = subprocess.Popen([LLMBOX, "node"], cwd=home, env=e, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.procs.append(p)
        self.nodes[name] = (p, port, home)
        deadline = time.time() + 20
        while time.time() < deadline:
            st, h = self.health(name)
            if st == 200 and h["state"] == "running":
                return p
            assert p.poll() is None, "node %s exited: %s" % (name, self.log(name)[-2000:])
            time.sleep(0.1)
        raise AssertionError("node %s did not hold its lease in 20 s: %s" % (name, self.log(name)[-2000:]))

    def log(self, name):
        _, _, home = self.nodes[name]
        with open(os.path.join(home, "node-%s.log" % name)) as f:
            return f.read()

    def health(self, name):
        _, port, _ = self.nodes[name]
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=3) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())
        except OSError:
            return 0, None

    def sql(self, q):
        # unit and record separators: answers hold newlines
        r = subprocess.run([pg_server._bin("psql"), "-qAt", "-F", "\x1f", "-R", "\x1e", self.url, "-c", q],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return [rec.split("\x1f") for rec in r.stdout.rstrip("\n").split("\x1e") if rec]

    def insert(self, n, prompt="What is six times seven? LLM-ANSWER[42]"):
        """n llm-mode tasks queued for the nodes; their ids."""
        rows = self.sql("INSERT INTO tasks(id, status, prompt, max_turns, created_ms, options, claimable)"
                        " SELECT md5(random()::text || g), 'queued', '%s', 3,"
                        " (extract(epoch from clock_timestamp()) * 1000)::bigint + g, '{\"mode\":\"llm\"}', 1"
                        " FROM generate_series(1, %d) g RETURNING id" % (prompt.replace("'", "''"), n))
        return [r[0] for r in rows]

    def tasks(self, ids):
        rows = self.sql("SELECT id, status, COALESCE(reason, ''), COALESCE(answer, ''), COALESCE(node, ''),"
                        " attempt, COALESCE(pid, 0) FROM tasks WHERE id IN (%s)"
                        % ",".join("'%s'" % i for i in ids))
        return {r[0]: {"status": r[1], "reason": r[2], "answer": r[3], "node": r[4], "attempt": int(r[5]),
                       "pid": int(r[6])} for r in rows}

    def wait(self, ids, timeout, final=("succeeded", "failed", "cancelled")):
        deadline = time.time() + timeout
        while True:
            t = self.tasks(ids)
            if all(v["status"] in final for v in t.values()) and len(t) == len(ids):
                return t
            if time.time() > deadline:
                left = {k: v for k, v in t.items() if v["status"] not in final}
                raise AssertionError("%d of %d tasks not final after %d s: %s" %
                                     (len(left), len(ids), timeout, list(left.items())[:3]))
            time.sleep(0.2)

    def wait_running(self, tid, timeout=20):
        """Until task tid runs with its agent's pid recorded; the task."""
        deadline = time.time() + timeout
        while True:
            v = self.tasks([tid])[tid]
            if v["status"] == "running" and v["pid"]:
                return v
            assert time.time() < deadline, v
            time.sleep(0.05)

    def stop_node(self, name):
        p = self.nodes[name][0]
        if p.poll() is None:
            p.kill()
            p.wait()

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        # agents that outlived a killed node (own sessions): by their recorded pids
        try:
            for (pid,) in self.sql("SELECT pid FROM tasks WHERE pid IS NOT NULL"):
                kill_agent(int(pid))
        except AssertionError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


def kill_agent(pid):
    """SIGKILLs pid's group when pid is still an `llmbox agent`."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            if b"agent" not in f.read().split(b"\0"):
                return
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def agent_log(home, tid):
    """The agent log of task tid under a node's home (lb_cfg_logdir: next to
    db_path)."""
    for root, _, files in os.walk(home):
        if "agent-%s.log" % tid in files:
            with open(os.path.join(root, "agent-%s.log" % tid)) as f:
                return f.read()
    raise AssertionError("no agent log of %s under %s" % (tid, home))


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_claims_once(pg):
    c = Cluster(pg, "claims")
    try:
        m = c.model("fast")
        for n in ("n1", "n2", "n3"):
            c.node(n, m, capacity=6, lease=6)
        t0 = time.time()
        ids = c.insert(LOAD_N)
        t = c.wait(ids, timeout=60 + LOAD_N)
        took = time.time() - t0
        bad = [(k, v) for k, v in t.items() if v["status"] != "succeeded" or v["answer"] != "The answer is 42."]
        assert not bad, bad[:3]
        assert all(v["attempt"] == 1 for v in t.values()), "a task was claimed twice"
        per = {n: sum(1 for v in t.values() if v["node"] == n) for n in ("n1", "n2", "n3")}
        assert sum(per.values()) == LOAD_N and all(per.values()), per
        done = c.sql("SELECT task_id, COUNT(*) FILTER (WHERE type = 'done'), COUNT(*) FROM events GROUP BY task_id")
        assert len(done) == LOAD_N and all(int(d[1]) == 1 for d in done), done[:3]
        counts = {int(d[2]) for d in done}
        assert len(counts) == 1, "tasks have different numbers of events: %s" % counts
        print("# %d tasks over 3 nodes in %.1f s (%.0f tasks/s); per node %s; %d events each" %
              (LOAD_N, took, LOAD_N / took, per, counts.pop()), file=sys.stderr)
    finally:
        c.close()


def test_kill9(pg):
    c = Cluster(pg, "kill9")
    try:
        slow = c.model("slow", "--delay-ms", "30000")
        fast = c.model("fast")
        c.node("k1", slow, capacity=3)
        mine = c.insert(3)
        deadline = time.time() + 20
        while not all(v["status"] == "running" for v in c.tasks(mine).values()):
            assert time.time() < deadline, c.tasks(mine)
            time.sleep(0.1)
        c.node("k2", fast, capacity=3)
        others = c.insert(6)
        c.stop_node("k1")  # SIGKILL
        killed = time.time()
        t = c.wait(mine, timeout=LEASE + LEASE / 3 + 10)
        took = time.time() - killed
        for v in t.values():
            assert v["status"] == "failed", v
            assert "node k1 stopped renewing its lease (last seen at " in v["reason"], v
            assert "not run again" in v["reason"], v
        # a bound on a hang, not a speed check: the sweep is due by lease + interval; a
        # machine three times slower (or busier) still passes, a sweep that never comes does not
        assert took <= SLOW * (LEASE + LEASE / 3.0) + 2, "swept after %.1f s (lease %d s)" % (took, LEASE)
        assert "swept node k1" in c.log("k2"), c.log("k2")[-2000:]
        t2 = c.wait(others, timeout=60)
        assert all(v["status"] == "succeeded" and v["node"] == "k2" and v["attempt"] == 1 for v in t2.values()), t2
        done = c.sql("SELECT task_id, COUNT(*) FROM events WHERE type = 'done' GROUP BY task_id")
        assert len(done) == 9 and all(int(d[1]) == 1 for d in done), done
        print("# k1 killed -9: its 3 tasks failed after %.1f s (lease %d s)" % (took, LEASE), file=sys.stderr)
    finally:
        c.close()


def test_fenced_agent(pg):
    c = Cluster(pg, "fence")
    try:
        slow = c.model("slow", "--delay-ms", "2000")
        node = c.node("f1", slow, capacity=2)
        (tid,) = c.insert(1)
        v = c.wait_running(tid)
        agent = v["pid"]
        os.kill(node.pid, signal.SIGSTOP)
        os.kill(agent, signal.SIGSTOP)
        time.sleep(LEASE + 2)
        os.kill(agent, signal.SIGCONT)
        deadline = time.time() + 15
        while alive(agent):
            assert time.time() < deadline, "the fenced agent still runs"
            time.sleep(0.1)
        v = c.tasks([tid])[tid]
        assert v["status"] == "running" and not v["answer"], v  # nothing of it was written
        types = [r[0] for r in c.sql("SELECT type FROM events WHERE task_id = '%s' ORDER BY seq" % tid)]
        assert "answer" not in types and "model" not in types, types
        alog = agent_log(c.nodes["f1"][2], tid)
        assert "refused" in alog, alog[-2000:]
        os.kill(node.pid, signal.SIGCONT)
        v = c.wait([tid], timeout=LEASE * 2 + 5)[tid]
        assert v["status"] == "failed" and "node f1 stopped renewing its lease" in v["reason"], v
        deadline = time.time() + 10
        while c.health("f1")[1]["state"] != "running":
            assert time.time() < deadline, c.health("f1")
            time.sleep(0.1)
        (t2,) = c.insert(1)
        v2 = c.wait([t2], timeout=30)[t2]
        assert v2["status"] == "succeeded" and v2["node"] == "f1", v2
    finally:
        c.close()


def pg_pids(pg):
    """The postmaster and its children: every process of the server."""
    out = [pg.pid]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pg.pid:
                        out.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return out


def signal_all(pids, sig):
    """sig to each of pids; one that exited since they were listed (a
    backend of an earlier test closing) is skipped."""
    for p in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def test_db_stopped(pg):
    c = Cluster(pg, "dbstop")
    try:
        slow = c.model("slow", "--delay-ms", "20000")
        fast = c.model("fast")
        c.node("d1", slow, capacity=2)
        (tid,) = c.insert(1)
        v = c.wait_running(tid)
        agent = v["pid"]
        pids = pg_pids(pg)
        signal_all(pids, signal.SIGSTOP)
        try:
            deadline = time.time() + LEASE + 5
            while alive(agent):
                assert time.time() < deadline, "the node did not kill its agent while the store was stopped"
                time.sleep(0.1)
            gone_after = LEASE + 5 - (deadline - time.time())
        finally:
            signal_all(pids, signal.SIGCONT)
        assert "killing its agents" in c.log("d1"), c.log("d1")[-2000:]
        v = c.wait([tid], timeout=LEASE * 2 + 10)[tid]
        assert v["status"] == "failed" and "node d1" in v["reason"], v
        c.stop_node("d1")
        c.node("d1", fast, capacity=2)  # the restarted node (same name) claims new work
        (t2,) = c.insert(1)
        v2 = c.wait([t2], timeout=30)[t2]
        assert v2["status"] == "succeeded" and v2["node"] == "d1", v2
        print("# store stopped: the agent was killed after %.1f s (lease %d s)" % (gone_after, LEASE),
              file=sys.stderr)
    finally:
        c.close()


def test_deadline(pg):
    """An agent its own watchdog cannot stop (SIGSTOPped: the watchdog is
    one of its threads) is killed by its node at the task's time limit
    plus task_deadline_grace_s, and the task ends failed saying so; the
    node then runs the next task."""
    c = Cluster(pg, "deadline")
    try:
        slow = c.model("slow", "--delay-ms", "30000")
        c.node("d1", slow, capacity=1, env={"LLMBOX_TASK_TIMEOUT_S": "2", "LLMBOX_TASK_DEADLINE_GRACE_S": "1"})
        (tid,) = c.insert(1)
        c.wait_running(tid)
        pid = int(c.sql("SELECT pid FROM tasks WHERE id = '%s'" % tid)[0][0])
        os.kill(pid, signal.SIGSTOP)
        stopped = time.time()
        v = c.wait([tid], timeout=20)[tid]
        took = time.time() - stopped
        assert v["status"] == "failed", v
        assert "ran past its time limit (2 s)" in v["reason"] and "node d1 stopped the agent" in v["reason"], v
        assert took <= SLOW * (2 + 1) + 3, "ended %.1f s after the stop" % took  # due at 2 + 1 s
        assert not alive(pid), "the agent %d is still alive" % pid
    finally:
        c.close()


def test_sigterm(pg):
    c = Cluster(pg, "sigterm")
    try:
        slow = c.model("slow", "--delay-ms", "2000")
        node = c.node("s1", slow, capacity=1)
        (tid,) = c.insert(1)
        deadline = time.time() + 20
        while c.tasks([tid])[tid]["status"] != "running":
            assert time.time() < deadline
            time.sleep(0.05)
        node.send_signal(signal.SIGTERM)
        # at once, while its task still runs: capacity 0 in its row, so the
        # rounds whose sandboxes it holds go to other nodes (several nodes)
        deadline, cap = time.time() + 10, None
        while cap != [["0"]]:
            cap = c.sql("SELECT capacity FROM nodes WHERE name = 's1'")
            assert cap and time.time() < deadline, ("the draining node did not renew with capacity 0", cap)
            time.sleep(0.05)
        assert c.tasks([tid])[tid]["status"] == "running"
        (t2,) = c.insert(1)
        assert node.wait(timeout=30) == 0
        assert c.tasks([tid])[tid]["status"] == "succeeded"
        v2 = c.tasks([t2])[t2]
        assert v2["status"] == "queued" and v2["node"] == "", v2  # not claimed by a stopping node
        assert c.sql("SELECT COUNT(*) FROM nodes WHERE name = 's1'") == [["0"]]
    finally:
        c.close()


def test_cancel_elsewhere(pg):
    """A task ended in the store by another host (a web's cancel) has its
    agent stopped by the node within a few seconds."""
    c = Cluster(pg, "cancel")
    try:
        slow = c.model("slow", "--delay-ms", "20000")
        c.node("c1", slow, capacity=1)
        (tid,) = c.insert(1)
        v = c.wait_running(tid)
        c.sql("UPDATE tasks SET status = 'cancelled', reason = 'cancelled by the user' WHERE id = '%s'" % tid)
        deadline = time.time() + 5
        while alive(v["pid"]):
            assert time.time() < deadline, "the node did not stop the agent of a cancelled task"
            time.sleep(0.1)
        assert "is cancelled: stopping its agent" in c.log("c1"), c.log("c1")[-2000:]
        deadline = time.time() + 3
        while c.health("c1")[1]["tasks"] != 0:  # reaped at the node's next turn
            assert time.time() < deadline, c.health("c1")
            time.sleep(0.1)
    finally:
        c.close()


def test_bad_start(pg):
    """What stops a node or an agent at start says why: node_listen taken,
    a host name that is no node name, a malformed fence, a store not there."""
    c = Cluster(pg, "badstart")
    try:
        m = c.model("fast")
        c.node("b1", m)
        _, port, home = c.nodes["b1"]
        st, h = c.health("b1")
        assert st == 200 and h["name"] == "b1" and h["capacity"] == 4 and h["lease_expires"] > time.time() * 1000, h
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/other" % port, timeout=3)
            raise AssertionError("a path other than /healthz answered")
        except urllib.error.HTTPError as e:
            assert e.code == 404 and b"answers GET /healthz only" in e.read()
        env = dict(os.environ, LLMBOX_HOME=home, LLMBOX_DB_URL=c.url, LLMBOX_NODE_NAME="b2",
                   LLMBOX_NODE_LISTEN="127.0.0.1:%d" % port)
        r = subprocess.run([LLMBOX, "node"], env=env, capture_output=True, text=True, timeout=30)
        assert r.returncode == 1 and "cannot listen on 127.0.0.1:%d" % port in r.stderr, (r.returncode, r.stderr)
        env["LLMBOX_NODE_NAME"] = "B_2"
        r = subprocess.run([LLMBOX, "node"], env=env, capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and "LLMBOX_NODE_NAME=B_2: must be 1 to 63" in r.stderr, (r.returncode, r.stderr)
        env.update(LLMBOX_NODE_NAME="b3", LLMBOX_NODE_LISTEN="127.0.0.1:%d" % free_port(),
                   LLMBOX_DB_URL=c.url.replace("/badstart?", "/nosuchdb?"))
        r = subprocess.run([LLMBOX, "node"], env=env, capture_output=True, text=True, timeout=30)
        assert r.returncode == 1 and "cannot open the task store" in r.stderr, (r.returncode, r.stderr)
        c.stop_node("b1")
        (tid,) = c.insert(1)  # queued, claimed by no node: the agents below hold no claim on it
        r = subprocess.run([LLMBOX, "agent", "--task", tid], env=dict(env, LLMBOX_DB_URL=c.url,
                                                                     LLMBOX_NODE_FENCE="b1"),
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and "LLMBOX_NODE_FENCE must be <node>:<attempt>" in r.stdout + r.stderr, r
        r = subprocess.run([LLMBOX, "agent", "--task", tid], env=dict(env, LLMBOX_DB_URL=c.url,
                                                                     LLMBOX_NODE_FENCE="zz:1"),
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 1 and "write refused: attempt 1 on node zz" in r.stdout + r.stderr, r  # not its claim
        assert "claim on the task is gone; stopping" in r.stdout + r.stderr, r
        v = c.tasks([tid])[tid]
        assert v["status"] == "queued" and not v["answer"] and not v["pid"], v  # it wrote nothing
        assert c.sql("SELECT COUNT(*) FROM events WHERE task_id = '%s'" % tid) == [["0"]]
    finally:
        c.close()


def test_inputs_unreachable(pg):
    """A node whose object store does not answer fails the task, saying so,
    instead of running it without its inputs."""
    c = Cluster(pg, "inputs")
    try:
        m = c.model("fast")
        c.node("i1", m, env={"LLMBOX_S3_BUCKET": "llmbox-test", "LLMBOX_S3_ENDPOINT": "http://127.0.0.1:%d" % free_port(),
                             "LLMBOX_S3_ACCESS_KEY": "k", "LLMBOX_S3_SECRET_KEY": "s", "LLMBOX_S3_RETRIES": "0",
                             "LLMBOX_S3_TIMEOUT_S": "2"})
        (tid,) = c.insert(1)
        v = c.wait([tid], timeout=30)[tid]
        assert v["status"] == "failed", v
        assert "node i1 could not start the agent: could not fetch its inputs from the object store" in v["reason"], v
    finally:
        c.close()


ANSWER = " Write the answer to /testbed/output/answer.txt."


def sandbox_db(pg, db):
    """The URL of a new database db, for a test that needs root and the image."""
    if not image_ready():
        raise Skip("the sandbox image is not built (make image)")
    if os.geteuid() != 0:
        raise Skip("needs root (sandboxd)")
    pg.sql('CREATE DATABASE "%s"' % db)
    return pg.url.replace("/%s?" % pg.db, "/%s?" % db)


def nodes_on(pg, url):
    """A Cluster for nodes started on a Stack's home (c.node(..., home=))."""
    c = Cluster.__new__(Cluster)
    c.pg, c.url, c.dir, c.procs, c.nodes, c.models = pg, url, tempfile.mkdtemp(), [], {}, {}
    return c


def nodes_end(c):
    for p in c.procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    shutil.rmtree(c.dir, ignore_errors=True)


def test_web_queue(pg):
    url = sandbox_db(pg, "web")
    with Stack(scenario={"eval": True}, db_url=url, env={"LLMBOX_TASK_RUNNER": "queue"}) as s:
        st, t = s.create_task("SANDBOX-ANSWER[seven] FINISH-ANSWER[7]" + ANSWER)
        assert st in (200, 201), (st, t)
        time.sleep(1.5)
        st, v = s.get_json("/api/tasks/" + t["id"])
        assert v["status"] == "queued", v  # the web spawned nothing
        c = nodes_on(pg, url)
        try:
            c.node("w1", s.model_url, home=s.prefix, env={k: v for k, v in s.env.items() if k.startswith("LLMBOX_")
                                                         and k not in ("LLMBOX_NODE_NAME", "LLMBOX_NODE_LISTEN")})
            done = s.wait_task(t["id"], timeout=120)
            assert done["status"] == "succeeded" and done["answer"].strip() == "seven", done
            assert c.tasks([t["id"]])[t["id"]]["node"] == "w1"
            # a follow-up round is queued the same way and claimed again (attempt 2)
            ctype, body = multipart({"prompt": "SANDBOX-ANSWER[eight] FINISH-ANSWER[8]" + ANSWER, "fresh": "1"}, [])
            st, _, raw = s.request("POST", "/api/tasks/%s/messages" % t["id"], body, {"Content-Type": ctype})
            assert st in (200, 201, 202), (st, raw)
            deadline = time.time() + 120
            while True:
                st, r2 = s.get_json("/api/tasks/" + t["id"])
                if r2["round"] == 2 and r2["status"] in ("succeeded", "failed", "cancelled"):
                    break
                assert time.time() < deadline, r2
                time.sleep(0.2)
            assert r2["status"] == "succeeded" and r2["answer"] == "8", r2
            v = c.tasks([t["id"]])[t["id"]]
            assert v["node"] == "w1" and v["attempt"] == 2, v
        finally:
            nodes_end(c)


def test_queue_web_takes_no_slot(pg):
    """A queue web runs no agent, so a task being created takes none of its
    task slots (max_tasks): with max_tasks 1, 20 creates from 4 clients at
    once (nginx's burst of task starts per address) are all stored and
    queued, none refused with 429 "already running as many tasks as it
    may" (before, every create held a slot while it was stored)."""
    url = sandbox_db(pg, "noslot")
    env = {"LLMBOX_TASK_RUNNER": "queue", "LLMBOX_MAX_TASKS": "1", "LLMBOX_USER_MAX_TASKS": "0",
           "LLMBOX_USER_TASKS_PER_MINUTE": "0"}
    with Stack(scenario={"eval": True}, db_url=url, env=env) as s:
        answers = []

        def client():
            for _ in range(5):
                st, t = s.create_task("What is six times seven? LLM-ANSWER[42]", files=[("a.txt", b"x" * 2048)])
                answers.append((st, t))
        threads = [threading.Thread(target=client) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        refused = [a for a in answers if a[0] not in (200, 201)]
        assert len(answers) == 20 and not refused, "%d of %d refused, the first: %s" % (len(refused), len(answers),
                                                                                        refused[:1])
        n = int(pg.sql("SELECT COUNT(*) FROM tasks WHERE status = 'queued' AND claimable = 1",
                       db="noslot").strip())
        assert n == 20, "%d tasks queued" % n


def test_left_sandboxes(pg):
    """Several nodes: a node killed -9 while its agent holds a leased (kept)
    sandbox; the agent killed too, the sandbox stays in sandboxd (its
    lease); the node restarted under the same name destroys it."""
    left_sandboxes(pg, "left", swept=False)


def test_left_sandboxes_swept(pg):
    """The same, but another node swept the dead node's task before it
    came back: the task is no longer its to end, its sandbox still goes."""
    left_sandboxes(pg, "leftswept", swept=True)


def left_sandboxes(pg, db, swept):
    url = sandbox_db(pg, db)
    with Stack(scenario={"eval": True}, db_url=url, env={"LLMBOX_TASK_RUNNER": "queue"},
               model_args=["--delay-ms", "60000"]) as s:
        c = nodes_on(pg, url)
        env = {k: v for k, v in s.env.items() if k.startswith("LLMBOX_") and k not in ("LLMBOX_NODE_NAME",
                                                                                         "LLMBOX_NODE_LISTEN")}
        env["LLMBOX_FOLLOWUP_KEEP_S"] = "600"  # the agent keeps (leases) its sandbox for follow-ups
        try:
            st, t = s.create_task("SANDBOX-ANSWER[seven] FINISH-ANSWER[7]" + ANSWER)
            assert st in (200, 201), (st, t)
            c.node("c1", s.model_url, home=s.prefix, env=env)
            deadline = time.time() + 60
            while s.sandboxd_ping().get("sandboxes", 0) < 1:  # the agent made its sandbox, waits for the model
                assert time.time() < deadline, (c.tasks([t["id"]]), c.log("c1")[-2000:])
                time.sleep(0.2)
            while True:  # recorded just after it was made
                kept = c.sql("SELECT sandbox_id FROM task_sandboxes WHERE task_id = '%s'" % t["id"])
                if kept and kept[0][0]:
                    break
                assert time.time() < deadline, ("the agent recorded its leased sandbox", kept)
                time.sleep(0.2)
            pid = int(c.sql("SELECT pid FROM tasks WHERE id = '%s'" % t["id"])[0][0])
            c.stop_node("c1")  # SIGKILL
            kill_agent(pid)
            time.sleep(1.5)
            assert s.sandboxd_ping().get("sandboxes", 0) == 1, "the leased sandbox outlives its agent"
            if swept:
                c.node("c2", s.model_url, home=s.prefix, env=env)
                v = c.wait([t["id"]], timeout=LEASE * 3 + 10)[t["id"]]
                assert v["status"] == "failed" and "node c1 stopped renewing" in v["reason"], v
                c.stop_node("c2")
                assert s.sandboxd_ping().get("sandboxes", 0) == 1, "the sweeper cannot reach c1's sandboxd"
            c.node("c1", s.model_url, home=s.prefix, env=env)
            deadline = time.time() + 15
            while s.sandboxd_ping().get("sandboxes", 0) != 0:
                assert time.time() < deadline, ("the restarted node did not destroy it", c.log("c1")[-2000:])
                time.sleep(0.2)
            assert "destroyed its sandbox %s, left by an earlier run" % kept[0][0] in c.log("c1"), c.log("c1")[-2000:]
            v = c.tasks([t["id"]])[t["id"]]
            assert v["status"] == "failed", v
            assert not c.sql("SELECT sandbox_id FROM task_sandboxes WHERE task_id = '%s'" % t["id"]), "forgotten"
        finally:
            nodes_end(c)


def fu_bash(cmd):
    return {"tool_calls": [{"name": "bash", "arguments": {"command": cmd}}]}


def fu_finish(answer):
    return {"tool_calls": [{"name": "finish", "arguments": {"answer": answer}}]}


FU_CHECK = "echo \"var=[$FUVAR] file=[$(cat /testbed/r1.txt 2>/dev/null)]\""
# the step is the number of assistant messages so far: round n starts at step 2(n-1)
FU_SCENARIO = {"scenarios": [{"match": "[fu-x]", "steps": [
    fu_bash("export FUVAR=kept-1 && echo r1 > /testbed/r1.txt"), fu_finish("one"),
    fu_bash(FU_CHECK), fu_finish("two"),
    fu_bash(FU_CHECK), fu_finish("three"),
    fu_bash(FU_CHECK), fu_finish("four"),
]}]}


def test_followups_across_nodes(pg):
    url = sandbox_db(pg, "followx")
    lease = 6  # the holder is stopped 2 s at a time: well inside its lease
    with Stack(scenario=FU_SCENARIO, db_url=url, env={"LLMBOX_TASK_RUNNER": "queue"}) as s:
        c = nodes_on(pg, url)
        env = {k: v for k, v in s.env.items() if k.startswith("LLMBOX_") and k not in ("LLMBOX_NODE_NAME",
                                                                                         "LLMBOX_NODE_LISTEN")}
        env["LLMBOX_FOLLOWUP_KEEP_S"] = "600"
        try:
            for n in ("x1", "x2"):
                c.node(n, s.model_url, home=s.prefix, env=env, lease=lease)
            st, t = s.create_task("[fu-x] set things up")
            assert st in (200, 201), (st, t)
            tid = t["id"]
            done = s.wait_task(tid, timeout=120)
            assert done["status"] == "succeeded" and done["answer"] == "one", done
            holder = c.tasks([tid])[tid]["node"]
            other = {"x1": "x2", "x2": "x1"}[holder]
            assert c.sql("SELECT sandbox_node FROM tasks WHERE id = '%s'" % tid) == [[holder]]

            def tool_out(rnd):
                rows = c.sql("SELECT data FROM events WHERE task_id = '%s' AND type = 'tool' AND round = %d"
                             % (tid, rnd))
                return " ".join(json.loads(r[0]).get("stdout", "") for r in rows)

            def send(prompt):
                ctype, body = multipart({"prompt": prompt}, [])
                code, _, raw = s.request("POST", "/api/tasks/%s/messages" % tid, body, {"Content-Type": ctype})
                assert code == 201, (code, raw)

            def wait_round(n, timeout=120):
                deadline = time.time() + timeout
                while True:
                    code, v = s.get_json("/api/tasks/" + tid)
                    if code == 200 and v["round"] == n and v["status"] in ("succeeded", "failed", "cancelled"):
                        return v
                    assert time.time() < deadline, ("round %d did not end" % n, v)
                    time.sleep(0.2)

            def fresh_lease(name):
                """Until name has just renewed (over lease - 1 s left), so that
                a 2 s stop stays well inside its lease on a loaded machine."""
                deadline = time.time() + lease + 5
                while True:
                    left = c.sql("SELECT lease_expires_ms - (extract(epoch from clock_timestamp()) * 1000)::bigint"
                                 " FROM nodes WHERE name = '%s'" % name)
                    if left and int(left[0][0]) > (lease - 1) * 1000:
                        return
                    assert time.time() < deadline, ("node %s did not renew" % name, left)
                    time.sleep(0.05)

            for rnd, answer in ((2, "two"), (3, "three")):
                hp = c.nodes[holder][0]
                fresh_lease(holder)
                os.kill(hp.pid, signal.SIGSTOP)
                try:
                    send("[fu-x] check round %d" % rnd)
                    time.sleep(2)
                    v = c.tasks([tid])[tid]
                    assert v["status"] == "queued" and v["node"] == "", \
                        ("the idle node %s took a round whose sandbox %s holds" % (other, holder), v)
                finally:
                    os.kill(hp.pid, signal.SIGCONT)
                r = wait_round(rnd)
                assert r["status"] == "succeeded" and r["answer"] == answer, r
                v = c.tasks([tid])[tid]
                assert v["node"] == holder and v["attempt"] == rnd, v
                assert r["rounds"][-1]["sandbox"] == "kept", r["rounds"][-1]
                assert "var=[kept-1] file=[r1]" in tool_out(rnd), tool_out(rnd)

            c.stop_node(holder)  # SIGKILL, with round 3's sandbox kept in its sandboxd
            killed = time.time()
            send("[fu-x] check after the holder died")
            deadline = killed + lease + 30
            while c.tasks([tid])[tid]["node"] != other:
                assert time.time() < deadline, ("round 4 was not claimed by %s" % other, c.tasks([tid]))
                time.sleep(0.1)
            took = time.time() - killed
            assert took <= SLOW * (lease + lease / 3.0) + 2, \
                "claimed %.1f s after the holder died (lease %d s)" % (took, lease)
            r = wait_round(4)
            assert r["status"] == "succeeded" and r["answer"] == "four", r
            assert r["rounds"][-1]["sandbox"] == "fresh", r["rounds"][-1]
            out = tool_out(4)
            assert "var=[] file=[]" in out, out  # nothing of the dead node's sandbox came along
            note = "The computer of the earlier rounds (their sandbox and its saved state) was on node %s, " \
                   "which is gone (it stopped renewing its lease; last seen at " % holder
            errs = [json.loads(d[0])["message"] for d in
                    c.sql("SELECT data FROM events WHERE task_id = '%s' AND type = 'error' AND round = 4" % tid)]
            assert any(note in e and "this round runs on node %s in a fresh sandbox" % other in e for e in errs), errs
            last = sorted(f for f in os.listdir(s.model_log) if f.startswith("request-"))[-1]
            with open(os.path.join(s.model_log, last)) as f:
                req = json.load(f)
            texts = [m["content"] if isinstance(m.get("content"), str) else
                     " ".join(p.get("text", "") for p in m.get("content") or [] if isinstance(p, dict))
                     for m in req["messages"] if m.get("role") == "user"]
            opening = [x for x in texts if x.startswith("Follow-up message (round 4")]
            assert opening and note in opening[0], "the model was not told: %s" % texts[-1][-3000:]
            v = c.tasks([tid])[tid]
            assert v["node"] == other and v["attempt"] == 4, v  # each round claimed once
            assert c.sql("SELECT sandbox_node FROM tasks WHERE id = '%s'" % tid) == [[other]]
            done = c.sql("SELECT round, COUNT(*) FROM events WHERE task_id = '%s' AND type = 'done' GROUP BY round"
                         " ORDER BY round" % tid)
            assert done == [["1", "1"], ["2", "1"], ["3", "1"], ["4", "1"]], done
            print("# rounds 2-3 on %s with %s idle; %s killed: round 4 claimed by %s after %.1f s (lease %d s)"
                  % (holder, other, holder, other, took, lease), file=sys.stderr)
        finally:
            nodes_end(c)


def main():
    rep = Reporter()
    if pg_server.missing():
        print("SKIP node_queue: needs %s (make deps)" % " ".join(pg_server.missing()))
        return
    only = sys.argv[1:]
    with pg_server.PgServer() as pg:
        for name, fn in (("claims_once", test_claims_once), ("kill9", test_kill9),
                         ("fenced_agent", test_fenced_agent), ("db_stopped", test_db_stopped),
                         ("sigterm", test_sigterm), ("deadline", test_deadline), ("inputs_unreachable", test_inputs_unreachable),
                         ("cancel_elsewhere", test_cancel_elsewhere), ("bad_start", test_bad_start),
                         ("web_queue", test_web_queue), ("queue_web_takes_no_slot", test_queue_web_takes_no_slot), ("left_sandboxes", test_left_sandboxes),
                         ("left_sandboxes_swept", test_left_sandboxes_swept),
                         ("followups_across_nodes", test_followups_across_nodes)):
            if not only or name in only:
                rep.run(name, fn, pg)
    rep.done()


if __name__ == "__main__":
    main()
