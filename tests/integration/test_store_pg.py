"""The store on PostgreSQL (several nodes): a real PostgreSQL started for this
file (tests/lib/pg_server.py: initdb + postgres as an unprivileged user on
a unix socket in a temporary folder).

1. The store's unit tests (build/tests/test_db, test_access, test_store*, test_sse_watch) run
   again with LLMBOX_TEST_DB_URL set: the same assertions on PostgreSQL
   (tests/unit/store_where.h). Their lines come out prefixed "pg/".
2. The real stack (nginx, web, agents, sandboxd, the fake model in its
   eval behaviour) with LLMBOX_DB_URL: a task, a follow-up round, an
   evaluation and a rollout group complete on PostgreSQL, their events
   in order and once, the streams woken by NOTIFY.
3. PostgreSQL restarted while a task runs: meanwhile the web answers 503
   with Retry-After; afterwards it answers again without a restart, and
   the task ends with every event stored once, in order.
4. A bad db_url: `llmbox web` stops at start with a sentence saying why
   (a scheme that is not PostgreSQL, no server, no such database), and a
   password in the URL appears in no message."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import LLMBOX, REPO, Reporter, Stack, image_ready, multipart  # noqa: E402
import pg_server  # noqa: E402

BUILD = os.environ.get("BUILD", os.path.join(REPO, "build"))
UNIT = ["test_db", "test_access", "test_store", "test_store_round", "test_store_eval", "test_store_rollout", "test_sse_watch",
        "test_store_queue",  # several nodes: the queue, leases, sweep, fence
        "test_store_claim",  # several nodes: the runners' claims on evals and rollout groups
        "test_store_shared",  # test_store_shared: several nodes, stateless webs
        "test_store_tombstone",  # several nodes: deleted tasks' tombstones
        "test_store_sandbox",  # several nodes: the nodes' API sandboxes, listed from any web
        "test_store_volume"]  # several nodes: E2B's volumes of every node


def run_unit(url, name):
    exe = os.path.join(BUILD, "tests", name)
    assert os.path.exists(exe), "%s is not built (make unit)" % exe
    r = subprocess.run([exe], env=dict(os.environ, LLMBOX_TEST_DB_URL=url), cwd="/",
                       capture_output=True, text=True, timeout=600)
    passed = failed = 0
    for line in r.stdout.splitlines():
        if line.startswith("PASS ") or line.startswith("FAIL ") or line.startswith("SKIP "):
            print("%s pg/%s/%s" % (line[:4], name, line[5:]), flush=True)
            passed += line.startswith("PASS ")
            failed += line.startswith("FAIL ")
    if r.returncode != 0 and not failed:
        print("FAIL pg/%s: exited %d\n%s" % (name, r.returncode, r.stderr[-2000:]), flush=True)
        failed += 1
    if failed:
        sys.stderr.write(r.stderr[-4000:])
    assert passed > 0 and not failed, "%s: %d passed, %d failed" % (name, passed, failed)


TOKEN = "store-pg-test-token-0123456789abcdef"
AUTH = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
ANSWER = " Write the answer to /testbed/output/answer.txt."


def call(s, method, path, body=None, timeout=90):
    data = json.dumps(body).encode() if body is not None else None
    st, _, raw = s.request(method, path, data, AUTH, timeout=timeout)
    return st, json.loads(raw) if raw else None


def seqs_once(evs):
    ids = [i for i, _, _ in evs]
    assert ids == list(range(ids[0], ids[0] + len(ids))), ids
    return ids


class T:
    """On the stack whose model is in its eval behaviour."""

    def __init__(self, pg, s, db):
        self.pg, self.s, self.db = pg, s, db

    def test_a_task_and_its_follow_up(self):
        s = self.s
        st, t = s.create_task("SANDBOX-ANSWER[seven] FINISH-ANSWER[7]" + ANSWER)
        assert st in (200, 201, 202), (st, t)
        done = s.wait_task(t["id"])
        assert done["status"] == "succeeded" and done["answer"].strip() == "seven", done
        evs = s.events(t["id"], last_event_id=0)
        seqs_once(evs)
        assert evs[-1][1] == "done" and evs[-1][2]["round"] == 1, evs[-1]
        assert [a["path"] for a in s.get_json("/api/tasks/" + t["id"])[1]["artifacts"]] == ["answer.txt"]
        # the rows are in PostgreSQL, not in a SQLite file
        assert self.pg.sql("SELECT status FROM tasks WHERE id = '%s'" % t["id"], db=self.db).strip() == "succeeded"
        assert not os.path.exists(os.path.join(s.prefix, "var", "web", "llmbox.db"))
        # fresh: the stack keeps no sandbox between rounds (LLMBOX_FOLLOWUP_KEEP_S=0)
        ctype, body = multipart({"prompt": "SANDBOX-ANSWER[eight] FINISH-ANSWER[8]" + ANSWER, "fresh": "1"}, [])
        st, _, raw = s.request("POST", "/api/tasks/%s/messages" % t["id"], body, {"Content-Type": ctype})
        assert st in (200, 201, 202), (st, raw)
        deadline = time.time() + 120
        while time.time() < deadline:
            st, r2 = s.get_json("/api/tasks/" + t["id"])
            if r2["round"] == 2 and r2["status"] in ("succeeded", "failed", "cancelled"):
                break
            time.sleep(0.2)
        assert r2["round"] == 2 and r2["status"] == "succeeded" and r2["answer"] == "8", r2
        more = s.events(t["id"], last_event_id=evs[-1][0])
        assert more and more[0][1] == "round" and more[-1][1] == "done" and more[-1][2]["round"] == 2, more
        seqs_once(evs + more)
        # the event streams were woken by NOTIFY (sse_watch.c), not the timer
        weblog = open(os.path.join(s.prefix, "var", "log", "web.log")).read()
        assert "woken by PostgreSQL's notifications" in weblog, weblog[-2000:]
        # the counters kept by the schema's triggers, read by GET /metrics
        st, _, m = s.request("GET", "/metrics")
        assert st == 200 and b"llmbox_tasks_created_total" in m, (st, m[:500])
        created = [ln for ln in m.decode().splitlines() if ln.startswith("llmbox_tasks_created_total")]
        assert created and float(created[0].split()[-1]) >= 1, created
        rounds = self.pg.sql("SELECT n, status FROM rounds WHERE task_id = '%s' ORDER BY n" % t["id"], db=self.db).split()
        assert rounds == ["1|succeeded", "2|succeeded"], rounds

    def test_an_evaluation(self):
        s = self.s
        rows = [{"id": "r%d" % i, "domain": "math", "ground_truth": str(i), "scorer": "numeric",
                 "problem_statement": "Compute it. LLM-ANSWER[%d]" % (i if i != 2 else 5)} for i in range(1, 4)]
        data = ("\n".join(json.dumps(r) for r in rows) + "\n").encode()
        ctype, body = multipart({"mode": "llm"}, [("dataset", "set.jsonl", data)])
        st, _, raw = s.request("POST", "/api/evals", body, {"Content-Type": ctype})
        assert st in (200, 201, 202), (st, raw)
        eid = json.loads(raw)["id"]
        deadline = time.time() + 120
        while time.time() < deadline:
            st, e = s.get_json("/api/evals/%s?limit=1000" % eid)
            if e["status"] in ("succeeded", "failed", "cancelled"):
                break
            time.sleep(0.2)
        assert e["status"] == "succeeded", e
        scores = sorted((r["id"], r["score"]) for r in e["runs"])
        assert scores == [("r1", 1), ("r2", 0), ("r3", 1)], scores

    def test_a_rollout_group(self):
        s = self.s
        b = {"prompt": "Read the file. ANSWER-FROM-INPUT[data/x.txt]", "n": 3,
             "files": [{"path": "data/x.txt", "content": "42\n"}],
             "reward": {"scorer": "numeric", "ground_truth": 42}}
        st, g = call(s, "POST", "/api/rollouts", b)
        assert st == 201, (st, g)
        st, done = call(s, "GET", "/api/rollouts/%s?wait=60" % g["id"], timeout=120)
        assert st == 200 and done["status"] == "done", (st, done)
        assert [x["reward"] for x in done["samples"]] == [1, 1, 1], done["samples"]

SLOW = {"scenarios": [{"match": "[slow]", "steps": [
    {"content": "", "tool_calls": [{"name": "bash", "arguments": {
        "command": "sleep 4; echo kept > /testbed/output/kept.txt"}}]},
    {"content": "", "tool_calls": [{"name": "bash", "arguments": {"command": "cat /testbed/output/kept.txt"}}]},
    {"content": "", "tool_calls": [{"name": "finish", "arguments": {"answer": "kept"}}]},
]}]}


class R:
    """On a stack whose model runs a slow command."""

    def __init__(self, pg, s, db):
        self.pg, self.s, self.db = pg, s, db

    def test_postgres_restarted_mid_task(self):
        s = self.s
        st, t = s.create_task("[slow] keep going")
        assert st in (200, 201, 202), (st, t)
        tid = t["id"]
        deadline = time.time() + 60
        while s.get_json("/api/tasks/" + tid)[1]["status"] == "queued" and time.time() < deadline:
            time.sleep(0.05)
        self.pg.halt()
        try:
            st, h, body = s.request("GET", "/api/tasks/" + tid)
            assert st == 503 and "retry-after" in h, (st, h, body)
            st, h, body = s.request("GET", "/api/tasks")
            assert st == 503 and "retry-after" in h, (st, h, body)
            time.sleep(5)  # the agent's next write (after its 4 s command) meets the server gone
        finally:
            self.pg.start()
        done = s.wait_task(tid, timeout=120)
        assert done["status"] == "succeeded" and done["answer"] == "kept", done
        evs = s.events(tid, last_event_id=0)
        seqs_once(evs)
        types = [e for _, e, _ in evs]
        assert types.count("done") == 1 and types[-1] == "done", types
        n = int(self.pg.sql("SELECT COUNT(*) FROM events WHERE task_id = '%s'" % tid, db=self.db))
        assert n == len(evs), (n, len(evs))
        st, lst = s.get_json("/api/tasks")
        assert st == 200 and any(x["id"] == tid for x in lst["tasks"]), lst
        # the agent met the server gone and waited for it (sink_store.c)
        logdir = os.path.join(s.prefix, "var", "web", "log")
        text = "".join(open(os.path.join(logdir, f)).read() for f in os.listdir(logdir) if tid in f)
        assert "cannot be reached; still waiting" in text, text[-3000:]


def bad_url(pg, url, want, secret=None):
    env = dict(os.environ, LLMBOX_HOME="/nonexistent-home-13", LLMBOX_DB_URL=url, LLMBOX_WEB_USER="")
    import tempfile
    home = tempfile.mkdtemp(prefix="llmbox-pg-bad-")
    try:
        env["LLMBOX_HOME"] = home
        env["LLMBOX_WEB_SOCKET"] = os.path.join(home, "web.sock")
        r = subprocess.run([LLMBOX, "web"], env=env, capture_output=True, text=True, timeout=60, cwd="/")
    finally:
        subprocess.run(["rm", "-rf", home])
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert want in out, (want, out)
    if secret:
        assert secret not in out, out
    return out


def test_bad_db_url(pg):
    out = bad_url(pg, "mysql://llmbox@localhost/llmbox", "must be a postgresql:// URL")
    assert "LLMBOX_DB_URL=(value hidden)" in out, out
    bad_url(pg, "postgresql://llmbox:hunter2secret@/llmbox?host=/nonexistent-13", "postgresql://llmbox:***@/llmbox",
            secret="hunter2secret")
    out = bad_url(pg, "postgresql://llmbox@/nosuchdb?host=%s" % pg.sockdir, "cannot open the task database")
    assert "nosuchdb" in out and "does not exist" in out, out
    bad_url(pg, "postgresql://llmbox@/llmbox?host=%s&password=hunter2secret&sslmode=bogus" % pg.sockdir,
            "password=***", secret="hunter2secret")


def main():
    rep = Reporter()
    if pg_server.missing():
        print("SKIP store_pg: needs %s (make deps)" % " ".join(pg_server.missing()))
        return
    with pg_server.PgServer() as pg:
        print("# PostgreSQL answered in %.1f s" % pg.started_s, file=sys.stderr)
        # llmbox connects as an ordinary role that owns its database, as
        # docs/OPERATIONS.md has it made (createuser; createdb -O)
        pg.sql("CREATE ROLE app LOGIN")
        for db in ("unit", "stack", "restart"):
            pg.sql('CREATE DATABASE "%s" OWNER app' % db)
        app = lambda db: pg.url.replace("//%s@/%s?" % (pg.role, pg.db), "//app@/%s?" % db)  # noqa: E731
        for name in UNIT:
            try:
                run_unit(app("unit"), name)
            except AssertionError as e:
                rep.failed += 1
                print("FAIL pg/%s: %s" % (name, e), flush=True)
        rep.run("bad_db_url", test_bad_db_url, pg)
        if not image_ready():
            print("SKIP store_pg stack: the sandbox image is not built (make image)")
        elif os.geteuid() != 0:
            print("SKIP store_pg stack: needs root (sandboxd)")
        else:
            for cls, db, kw in ((T, "stack", dict(scenario={"eval": True})), (R, "restart", dict(scenario=SLOW))):
                with Stack(db_url=app(db), web_env={"LLMBOX_SANDBOX_API_TOKEN": TOKEN}, **kw) as s:
                    t = cls(pg, s, db)
                    for name in sorted(n for n in dir(cls) if n.startswith("test_")):
                        rep.run(name, getattr(t, name))
    rep.done()


if __name__ == "__main__":
    main()
