"""An evaluation with two webs on one PostgreSQL (several nodes: the runners
claim their work in the store, store/store_claim.h).

Two full stacks w1 and w2 (each its own nginx, web, sandboxd and prefix)
on one PostgreSQL store, task_runner = queue, one `llmbox node` running
the tasks (llm mode: no sandbox), the fake model in its eval behaviour
with a delay, runner_lease_s = 3. The evaluations' folder is shared (a
symlink: without an object store the dataset must be readable by
whichever web drives the eval, as docs/OPERATIONS.md says).

1. While both webs run, exactly one of them holds the eval's claim (the
   same claim, generation 1, at every look) and only it starts runs: the
   other web's log starts none.
2. The holder's web is killed (SIGKILL): within the lease and a look, the
   other web claims the eval (generation 2) and finishes it.
3. Every run was started exactly once and scored exactly once: one task
   per run in the store (no task made twice, none extra), each task claimed
   by the node once; across both webs' logs one "started as task" and one
   "scored" line per run; every run done with score 1, the eval succeeded.
4. A rollout group the same way (samples in sandboxes, two at a time;
   the artifacts folder shared too, as web and nodes share it without a
   bucket): the killed web restarted, both up, one of them drives the
   group (the other starts no sample); it is stopped with SIGTERM once a
   sample is done: it gives its claim back (its log says so), so the other
   web takes over within 1.5 s (a lapse takes at least two thirds of the
   lease: 2 s), and finishes the group: each
   sample started and scored once, one task per sample, every reward
   right.

5. The same takeover with the object store instead of a shared folder (a
   real Ceph radosgw, tests/lib/s3_server.py; two more webs, nothing of
   var/web/evals or artifacts shared): the upload stores the dataset as
   evals/<id>/... in the bucket; the holder is killed and, once its runs
   in flight are done, the gateway stopped and both webs' copies of the
   eval's folder removed (the takeover web has none, as on another host).
   An upload then answers a JSON 503 with Retry-After and leaves no eval
   and no folder. The other web takes the claim, says once in its log
   that the dataset cannot be fetched and waits (the eval stays running,
   no run starts); the gateway back, it fetches the dataset and finishes
   the eval, every run started and scored once. Deleting the eval removes
   its objects from the bucket.
"""
import io
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
from stack import Reporter, Stack, multipart  # noqa: E402
import pg_server  # noqa: E402
import s3_server  # noqa: E402
from stack import LLMBOX  # noqa: E402
from test_node_queue import nodes_end, nodes_on  # noqa: E402

ROWS, REPEATS, CONCURRENCY = 12, 2, 3
LEASE = 3
FINAL = ("succeeded", "failed", "cancelled")


def jsonl(rows):
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def post_eval(s, data, **fields):
    ctype, body = multipart(fields, [("dataset", "set.jsonl", data)])
    st, _, resp = s.request("POST", "/api/evals", body, {"Content-Type": ctype})
    return st, json.loads(resp) if resp else None


def sql(pg, url, q):
    r = subprocess.run([pg_server._bin("psql"), "-qAt", "-F", "\x1f", "-R", "\x1e", url, "-c", q],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [rec.split("\x1f") for rec in r.stdout.rstrip("\n").split("\x1e") if rec]


def log_lines(s, pattern):
    """The (rid) of every line of s's web log whose msg matches pattern."""
    out = []
    with open(os.path.join(s.prefix, "var", "log", "web.log"), errors="replace") as f:
        for line in f:
            try:
                msg = json.loads(line).get("msg", "")
            except ValueError:
                continue
            m = re.search(pattern, msg)
            if m:
                out.append(int(m.group(1)))
    return out


def runs_once(pg, url, s1, s2, eid, ev, nruns):
    """The eval succeeded, every run done with score 1, each started and
    scored exactly once across both webs' logs, one task per run."""
    assert ev["status"] == "succeeded", ev["status"]
    runs = ev["runs"]
    assert len(runs) == nruns, len(runs)
    for r in runs:
        assert r["status"] == "done" and r["score"] == 1, r
    tids = [r["task_id"] for r in runs]
    assert len(set(tids)) == nruns, "a task serves two runs: %s" % tids
    tasks = sql(pg, url, "SELECT id, status, attempt FROM tasks")
    assert sorted(t[0] for t in tasks) == sorted(tids), \
        "%d tasks for %d runs: a run was started twice, or a task is extra" % (len(tasks), nruns)
    assert all(t[1] == "succeeded" and t[2] == "1" for t in tasks), [t for t in tasks if t[1] != "succeeded"]
    rids = sorted(int(r[0]) for r in sql(pg, url, "SELECT rid FROM eval_runs WHERE eval_id = '%s'" % eid))
    started = log_lines(s1, r"^eval %s: run (\d+) started as task" % eid) + \
        log_lines(s2, r"^eval %s: run (\d+) started as task" % eid)
    scored = log_lines(s1, r"^eval %s: run (\d+) scored" % eid) + log_lines(s2, r"^eval %s: run (\d+) scored" % eid)
    assert sorted(started) == rids, "starts per run: %s" % {r: started.count(r) for r in rids
                                                            if started.count(r) != 1}
    assert sorted(scored) == rids, "scores per run: %s" % {r: scored.count(r) for r in rids
                                                           if scored.count(r) != 1}


def test_two_webs(pg, s1, s2, url, node_env):
    c = nodes_on(pg, url)
    try:
        c.node("n1", s1.model_url, capacity=4, home=s1.prefix, env=node_env)
        eval_phase(pg, s1, s2, url)
        rollout_phase(pg, s1, s2, url)
    finally:
        nodes_end(c)


def eval_phase(pg, s1, s2, url):
    rows = [{"id": "r%d" % i, "domain": "math", "ground_truth": "4", "scorer": "numeric",
             "problem_statement": "Compute it. LLM-ANSWER[4]"} for i in range(ROWS)]
    st, e = post_eval(s2, jsonl(rows), mode="llm", repeats=str(REPEATS), concurrency=str(CONCURRENCY))
    assert st == 201, (st, e)
    eid, nruns = e["id"], ROWS * REPEATS
    webs = {"w1": s1, "w2": s2}

    def claim():
        r = sql(pg, url, "SELECT COALESCE(runner, ''), runner_gen, status FROM evals WHERE id = '%s'" % eid)
        return r[0][0], int(r[0][1]), r[0][2]

    def done_runs():
        return int(sql(pg, url, "SELECT COUNT(*) FROM eval_runs WHERE eval_id = '%s' AND status = 'done'"
                       % eid)[0][0])

    # 1. both webs up: one holder, the same claim at every look, until a few runs are done
    deadline, holder = time.time() + 60, None
    while True:
        runner, gen, status = claim()
        if runner:
            assert gen == 1, (runner, gen)
            assert holder in (None, runner), "the claim moved between live webs: %s -> %s" % (holder, runner)
            holder = runner
        if done_runs() >= 4:
            break
        assert status not in FINAL, "the eval ended before the kill: %s" % status
        assert time.time() < deadline, "4 runs not done in 60 s: %s" % (claim(),)
        time.sleep(0.1)
    hname = holder.split("/")[0]
    assert hname in webs, holder
    oname = "w2" if hname == "w1" else "w1"
    hold, other = webs[hname], webs[oname]
    assert log_lines(other, r"^eval %s: run (\d+) started as task" % eid) == [], \
        "the web without the claim started runs"
    assert done_runs() < nruns, "the eval finished before the kill (slow it: more rows)"
    # 2. the holder dies; the other web takes over after the lease
    killed_at = time.time()
    hold.kill("web")
    deadline = killed_at + LEASE + 15
    while True:
        runner, gen, status = claim()
        if runner.startswith(oname + "/"):
            break
        assert time.time() < deadline, "no takeover %.0f s after the kill: %s" % (time.time() - killed_at,
                                                                               (runner, gen, status))
        time.sleep(0.1)
    took = time.time() - killed_at
    assert gen == 2, (runner, gen)
    deadline = time.time() + 90
    while True:
        st, ev = other.get_json("/api/evals/%s?limit=1000" % eid)
        assert st == 200, (st, ev)
        if ev["status"] in FINAL:
            break
        assert time.time() < deadline, "the eval did not end after the takeover: %s" % ev["progress"]
        time.sleep(0.2)
    # 3. each run once
    runs_once(pg, url, s1, s2, eid, ev, nruns)
    print("# takeover %.1f s after the kill (lease %d s); %d runs, %d started by the survivor" %
          (took, LEASE, nruns, len(log_lines(other, r"^eval %s: run (\d+) started as task" % eid))),
          file=sys.stderr)
    hold.restart("web")  # both up again for the groups


LEASE_S3 = 6  # the in-flight runs end and the gateway stops well before a takeover (two thirds of it)


def blob_ls(env, prefix):
    e = dict(os.environ, LLMBOX_HOME="/", **env)
    r = subprocess.run([LLMBOX, "blob", "ls", prefix], env=e, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return {line.split(" ", 1)[1]: int(line.split(" ", 1)[0]) for line in r.stdout.splitlines()}


def log_msgs(s, pattern):
    """Every msg of s's web log that matches pattern."""
    out = []
    with open(os.path.join(s.prefix, "var", "log", "web.log"), errors="replace") as f:
        for line in f:
            try:
                msg = json.loads(line).get("msg", "")
            except ValueError:
                continue
            if re.search(pattern, msg):
                out.append(msg)
    return out


def test_two_webs_s3(pg, s1, s2, url, node_env, s3, s3env):
    c = nodes_on(pg, url)
    try:
        c.node("n1", s1.model_url, capacity=4, home=s1.prefix, env=node_env)
        eval_phase_s3(pg, s1, s2, url, s3, s3env)
    finally:
        nodes_end(c)


def eval_phase_s3(pg, s1, s2, url, s3, s3env):
    data = jsonl([{"id": "r%d" % i, "domain": "math", "ground_truth": "4", "scorer": "numeric",
                   "problem_statement": "Compute it. LLM-ANSWER[4]"} for i in range(ROWS)])
    st, e = post_eval(s2, data, mode="llm", repeats=str(REPEATS), concurrency=str(CONCURRENCY))
    assert st == 201, (st, e)
    eid, nruns = e["id"], ROWS * REPEATS
    key = "evals/%s/upload/set.jsonl" % eid
    assert blob_ls(s3env, "evals/" + eid) == {key: len(data)}, "the dataset is not in the bucket as uploaded"
    webs = {"w1": s1, "w2": s2}

    def claim():
        r = sql(pg, url, "SELECT COALESCE(runner, ''), runner_gen, status FROM evals WHERE id = '%s'" % eid)
        return r[0][0], int(r[0][1]), r[0][2]

    def done_runs():
        return int(sql(pg, url, "SELECT COUNT(*) FROM eval_runs WHERE eval_id = '%s' AND status = 'done'"
                       % eid)[0][0])

    deadline, holder = time.time() + 60, None
    while not holder or done_runs() < 4:
        holder = claim()[0] or holder
        assert claim()[2] not in FINAL, "the eval ended before the kill"
        assert time.time() < deadline, "4 runs not done in 60 s: %s" % (claim(),)
        time.sleep(0.1)
    hname = holder.split("/")[0]
    oname = "w2" if hname == "w1" else "w1"
    hold, other = webs[hname], webs[oname]
    assert done_runs() < nruns, "the eval finished before the kill (slow it: more rows)"
    # the holder dies; its runs in flight end on the node (the store still up
    # for their records), then the store goes down before the lease lapses
    killed_at = time.time()
    hold.kill("web")
    deadline = killed_at + 20
    while int(sql(pg, url, "SELECT COUNT(*) FROM tasks WHERE status NOT IN ('succeeded', 'failed', 'cancelled')")
              [0][0]):
        assert time.time() < deadline, "the runs in flight did not end in 20 s"
        time.sleep(0.05)
    s3.kill_gateway()
    runner, gen, _ = claim()
    assert gen == 1 and runner.startswith(hname + "/"), \
        "taken over (%s, gen %d) %.1f s after the kill, before the store went down: the machine is too slow " \
        "for a lease of %d s" % (runner, gen, time.time() - killed_at, LEASE_S3)
    for w in (hold, other):  # no copy on either web: the takeover web is on another host
        shutil.rmtree(os.path.join(w.prefix, "var", "web", "evals", eid), ignore_errors=True)
    deadline = killed_at + LEASE_S3 + 15
    while not claim()[0].startswith(oname + "/"):
        assert time.time() < deadline, "no takeover %.0f s after the kill: %s" % (time.time() - killed_at, claim())
        time.sleep(0.1)
    assert claim()[1] == 2, claim()
    waiting = r"^eval %s: its dataset cannot be fetched from the object store" % eid
    deadline = time.time() + 15
    while not log_msgs(other, waiting):
        assert claim()[2] not in FINAL, "the eval ended while the store was down: %s" % (claim(),)
        assert time.time() < deadline, "the takeover web did not say it waits for the store"
        time.sleep(0.1)
    # an upload while the store is down: refused whole, nothing left
    evals_dir = os.path.join(other.prefix, "var", "web", "evals")
    before = set(os.listdir(evals_dir)) if os.path.isdir(evals_dir) else set()
    st_list, lst = other.get_json("/api/evals")
    st, hdrs, body = other.request("POST", "/api/evals", *multipart_body(data))
    assert st == 503 and hdrs.get("retry-after") and "object store" in json.loads(body)["error"]["message"], \
        (st, hdrs, body[:300])
    st_list2, lst2 = other.get_json("/api/evals")
    assert st_list == st_list2 == 200 and [x["id"] for x in lst2["evals"]] == [x["id"] for x in lst["evals"]] == \
        [eid], "a refused upload left an evaluation: %s" % lst2
    after = set(os.listdir(evals_dir)) if os.path.isdir(evals_dir) else set()
    assert after == before, "a refused upload left a folder: %s" % (after - before)
    # a few looks more (a try every 2 s): still waiting, said once, nothing started
    seen_until = time.time() + 2.5
    while time.time() < seen_until:
        st, ev = other.get_json("/api/evals/%s?limit=1" % eid)
        assert st == 200 and ev["status"] == "running", "the eval did not wait for the store: %s" % ev["status"]
        time.sleep(0.2)
    assert len(log_msgs(other, waiting)) == 1, log_msgs(other, waiting)
    assert log_lines(other, r"^eval %s: run (\d+) started as task" % eid) == [], "runs started without the dataset"
    down_for = time.time()
    s3.start_gateway()
    deadline = time.time() + 90
    while True:
        st, ev = other.get_json("/api/evals/%s?limit=1000" % eid)
        assert st == 200, (st, ev)
        if ev["status"] in FINAL:
            break
        assert time.time() < deadline, "the eval did not end once the store was back: %s" % ev["progress"]
        time.sleep(0.2)
    runs_once(pg, url, s1, s2, eid, ev, nruns)
    assert log_msgs(other, r"^eval %s: the object store answers again" % eid), "the web did not say it goes on"
    assert log_msgs(other, r"^eval %s: fetched 1 file of its dataset from the object store" % eid)
    with open(os.path.join(evals_dir, eid, "upload", "set.jsonl"), "rb") as f:
        assert f.read() == data, "the fetched dataset is not the uploaded one"
    # deleting the eval removes its objects
    st, _, body = other.request("DELETE", "/api/evals/" + eid)
    assert st == 200, (st, body[:300])
    assert blob_ls(s3env, "evals/" + eid) == {}, "the deleted eval's objects are left in the bucket"
    # an archive: its unpacked folder is stored (what the runner reads), not the archive
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, blob in (("set/f1/row.json", json.dumps({"id": "f1", "domain": "math", "scorer": "numeric",
                                                           "ground_truth": "4", "problem_statement": "x"}).encode()),
                           ("set/f1/files/value.bin", b"42")):
            ti = tarfile.TarInfo(name)
            ti.size = len(blob)
            t.addfile(ti, io.BytesIO(blob))
    ctype, body = multipart({"mode": "llm"}, [("dataset", "set.tar.gz", buf.getvalue())])
    st, _, raw = other.request("POST", "/api/evals", body, {"Content-Type": ctype})
    assert st == 201, (st, raw[:300])
    aid = json.loads(raw)["id"]
    assert sorted(blob_ls(s3env, "evals/" + aid)) == ["evals/%s/dataset/set/f1/files/value.bin" % aid,
                                                      "evals/%s/dataset/set/f1/row.json" % aid], \
        blob_ls(s3env, "evals/" + aid)
    st, _, raw = other.request("DELETE", "/api/evals/" + aid)
    assert st == 200 and blob_ls(s3env, "evals/" + aid) == {}, (st, raw[:300])
    print("# store down at the takeover: waited, then finished %.1f s after it was back; %d runs, %d started by "
          "the survivor" % (time.time() - down_for, nruns,
                            len(log_lines(other, r"^eval %s: run (\d+) started as task" % eid))), file=sys.stderr)


def multipart_body(data):
    ctype, body = multipart({"mode": "llm"}, [("dataset", "set.jsonl", data)])
    return body, {"Content-Type": ctype}


TOKEN = "two-webs-rollout-token-0123456789abcdef"
SAMPLES = 6


def rollout_phase(pg, s1, s2, url):
    auth = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
    webs = {"w1": s1, "w2": s2}
    body = {"prompt": "Read the file. ANSWER-FROM-INPUT[data/x.txt]", "n": SAMPLES,
            "files": [{"path": "data/x.txt", "content": "42\n"}], "reward": {"scorer": "numeric", "ground_truth": 42}}
    tasks_before = {t[0] for t in sql(pg, url, "SELECT id FROM tasks")}
    st, _, raw = s1.request("POST", "/api/rollouts", json.dumps(body).encode(), auth)
    assert st == 201, (st, raw[:500])
    gid = json.loads(raw)["id"]

    def claim():
        r = sql(pg, url, "SELECT COALESCE(runner, ''), runner_gen, status FROM rollouts WHERE id = '%s'" % gid)
        return r[0][0], int(r[0][1]), r[0][2]

    def done_samples():
        return int(sql(pg, url, "SELECT COUNT(*) FROM rollout_samples WHERE rollout_id = '%s' AND status = 'done'"
                       % gid)[0][0])

    started_re = r"^rollout %s: sample (\d+) started as task" % gid
    scored_re = r"^rollout %s: sample (\d+) scored" % gid
    deadline, holder = time.time() + 90, None
    while True:
        runner, gen, status = claim()
        if runner:
            assert gen == 1, (runner, gen)
            assert holder in (None, runner), "the group's claim moved between live webs: %s -> %s" % (holder, runner)
            holder = runner
        if done_samples() >= 1 and holder:
            break
        assert status == "running", "the group ended before the kill: %s" % status
        assert time.time() < deadline, "no sample done in 90 s: %s" % (claim(),)
        time.sleep(0.1)
    hname = holder.split("/")[0]
    oname = "w2" if hname == "w1" else "w1"
    hold, other = webs[hname], webs[oname]
    assert log_lines(other, started_re) == [], "the web without the group's claim started samples"
    assert done_samples() < SAMPLES, "the group finished before the kill"
    killed_at = time.time()
    hold.kill("web", sig=signal.SIGTERM)  # a clean stop: the claim is given back
    deadline, took = time.time() + 120, None
    while True:
        if took is None and claim()[0].startswith(oname + "/"):
            took = time.time() - killed_at
        st, _, raw = other.request("GET", "/api/rollouts/" + gid, None, auth)
        assert st == 200, (st, raw[:300])
        g = json.loads(raw)
        if g["status"] != "running":
            break
        assert time.time() < deadline, "the group did not end after the kill: %s" % raw[:1000]
        time.sleep(0.2)
    runner, gen, _ = claim()
    assert g["status"] == "done" and runner.startswith(oname + "/") and gen == 2, (g["status"], runner, gen)
    # given back, not lapsed: a lapse comes at the earliest two thirds of the lease after the last renewal
    assert took is not None and took < 1.5, \
        "the other web took the group %s s after a clean stop: not given back (lease %d s)" % (took, LEASE)
    with open(os.path.join(hold.prefix, "var", "log", "web.log"), errors="replace") as f:
        assert "gave back 1 claim on evaluations and rollout groups" in f.read(), "the stopped web gave nothing back"
    xs = g["samples"]
    assert len(xs) == SAMPLES and all(x["outcome"] == "ok" and x["reward"] == 1 for x in xs), xs
    tids = [x["task_id"] for x in xs]
    new_tasks = {t[0] for t in sql(pg, url, "SELECT id FROM tasks")} - tasks_before
    assert len(set(tids)) == SAMPLES and new_tasks == set(tids), \
        "%d tasks for %d samples: a sample was started twice, or a task is extra" % (len(new_tasks), SAMPLES)
    started = log_lines(s1, started_re) + log_lines(s2, started_re)
    scored = log_lines(s1, scored_re) + log_lines(s2, scored_re)
    assert sorted(started) == list(range(SAMPLES)), "starts per sample: %s" % sorted(started)
    assert sorted(scored) == list(range(SAMPLES)), "scores per sample: %s" % sorted(scored)
    print("# group taken over %.1f s after SIGTERM (lease %d s), done %.1f s after; %d of %d samples started by "
          "the survivor" % (took, LEASE, time.time() - killed_at, len(log_lines(other, started_re)), SAMPLES),
          file=sys.stderr)


def main():
    rep = Reporter()
    if pg_server.missing():
        print("SKIP eval_two_webs: needs %s (make deps)" % " ".join(pg_server.missing()))
        return rep.done()
    if os.geteuid() != 0:
        print("SKIP eval_two_webs: needs root (sandboxd)")
        return rep.done()
    with pg_server.PgServer() as pg:
        pg.sql('CREATE DATABASE "evalwebs"')
        url = pg.url.replace("/%s?" % pg.db, "/evalwebs?")
        # two samples at once: the survivor has some left to start after the kill
        common = {"LLMBOX_TASK_RUNNER": "queue", "LLMBOX_RUNNER_LEASE_S": str(LEASE),
                  "LLMBOX_ROLLOUT_MAX_SAMPLES": "2"}
        web_env = {"LLMBOX_SANDBOX_API_TOKEN": TOKEN}  # rollout groups are made with it
        shared = {}

        def share_evals(prefix):
            # the evaluations' folder and the artifacts of w2 are w1's (a
            # shared filesystem between the web hosts and the node)
            for rel in (("var", "web", "evals"), ("artifacts",)):
                d = os.path.join(shared["w1"], *rel)
                if not os.path.isdir(d):
                    os.makedirs(d)
                    u = pwd.getpwnam("llmbox")
                    os.chown(d, u.pw_uid, u.pw_gid)
                mine = os.path.join(prefix, *rel)
                if os.path.isdir(mine) and not os.path.islink(mine):
                    shutil.rmtree(mine)
                os.symlink(d, mine)

        with Stack(scenario={"eval": True}, db_url=url, model_args=["--delay-ms", "400"],
                   env=dict(common, LLMBOX_NODE_NAME="w1"), web_env=web_env) as s1:
            shared["w1"] = s1.prefix
            with Stack(scenario={"eval": True}, db_url=url, env=dict(common, LLMBOX_NODE_NAME="w2"),
                       web_env=web_env, prepare=share_evals) as s2:
                node_env = {k: v for k, v in s1.env.items() if k.startswith("LLMBOX_")
                            and k not in ("LLMBOX_NODE_NAME", "LLMBOX_NODE_LISTEN")}
                rep.run("an_eval_then_a_group_across_two_webs", test_two_webs, pg, s1, s2, url, node_env)
        if s3_server.missing():
            print("SKIP eval_two_webs_object_store: needs %s (make deps)" % " ".join(s3_server.missing()))
            return rep.done()
        # 5. the object store instead of a shared folder
        with s3_server.S3Server() as s3:
            pg.sql('CREATE DATABASE "evalwebs3"')
            url3 = pg.url.replace("/%s?" % pg.db, "/evalwebs3?")
            s3env = s3.env(bucket="llmbox-evals")
            r = subprocess.run([LLMBOX, "blob", "mkbucket"], env=dict(os.environ, LLMBOX_HOME="/", **s3env),
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stderr
            common3 = dict(common, LLMBOX_RUNNER_LEASE_S=str(LEASE_S3), **s3env)
            with Stack(scenario={"eval": True}, db_url=url3, model_args=["--delay-ms", "400"],
                       env=dict(common3, LLMBOX_NODE_NAME="w1")) as s1, \
                    Stack(scenario={"eval": True}, db_url=url3, env=dict(common3, LLMBOX_NODE_NAME="w2")) as s2:
                node_env = {k: v for k, v in s1.env.items() if k.startswith("LLMBOX_")
                            and k not in ("LLMBOX_NODE_NAME", "LLMBOX_NODE_LISTEN")}
                rep.run("an_eval_taken_over_with_its_dataset_in_the_object_store", test_two_webs_s3, pg, s1, s2,
                        url3, node_env, s3, s3env)
    return rep.done()


if __name__ == "__main__":
    main()
