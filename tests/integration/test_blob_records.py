#!/usr/bin/env python3
"""A task's files cross hosts through the object store (several nodes): two
hosts (two Stacks, each its own LLMBOX_HOME, artifacts folder and
sandboxd) share a real PostgreSQL and a real Ceph radosgw; webs run with
task_runner = queue and `llmbox node`s claim the work.

  1. inputs_across_hosts: a task sent to host 1's web runs on host 2's node
     (h2); its follow-up message, sent to host 1's web with a new file,
     runs on h2 too and finds that file (before: it was only in host 1's
     folder, and the round could not see it);
  2. record_on_the_other_web: trajectory.json and tokens.jsonl, written on
     host 2, are served by host 1's web, byte for byte;
  3. round_on_another_node: h2 stops; round 3 (fresh=1) is claimed by h1 on
     host 1, which never saw the task run: the model gets the whole
     conversation (the fake model's steps count the assistant messages it
     is sent, so a round without it would replay round 1) and the round
     reads the last round's outputs;
  4. record_refreshed: host 2's web, which holds round 2's trajectory.json
     and whole-task bundle, serves round 3's (a record is rewritten by each
     round) and builds the bundle again;
  4b. earlier_round_files_on_any_web: each round's files, kept in the
     bucket when the next message came, are served by the web of the host
     that did not run it;
  5. fork_across_hosts: a fork of round 3 made through host 1's web has its
     files in the bucket: host 2's web serves its output.

    python3 tests/integration/test_blob_records.py   (as root; PostgreSQL
    and Ceph from make deps)
"""
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from stack import LLMBOX, Reporter, Skip, Stack, image_ready, multipart  # noqa: E402
import pg_server  # noqa: E402
import s3_server  # noqa: E402
from test_node_queue import nodes_end, nodes_on  # noqa: E402


def bash(cmd, **kw):
    s = {"tool_calls": [{"name": "bash", "arguments": {"command": cmd}}], "tokens": "vllm"}
    s.update(kw)
    return s


def finish(answer):
    return {"tool_calls": [{"name": "finish", "arguments": {"answer": answer}}], "tokens": "vllm"}


# the step is the number of assistant messages in the request: a round
# that lost the conversation would start again at step 0
SCENARIO = {"scenarios": [{"match": "[rec]", "steps": [
    bash("mkdir -p /testbed/output && cp /testbed/input/a.txt /testbed/output/out.txt"),
    finish("one"),
    bash("cat /testbed/input/b.txt /testbed/output/out.txt | tee /testbed/output/r2.txt"),
    finish("two"),
    bash("cat /testbed/output/r2.txt > /testbed/output/r3.txt && echo three-and-longer >> /testbed/output/r3.txt"),
    finish("three"),
]}]}

CONF = """
[model "cap"]
base_url = {model_url}
model = fake-model
capture_tokens = true
"""


def node_env(s):
    return {k: v for k, v in s.env.items() if k.startswith("LLMBOX_") and k not in ("LLMBOX_NODE_NAME",
                                                                                    "LLMBOX_NODE_LISTEN")}


def send(s, tid, prompt, files=(), **fields):
    f = {"prompt": prompt}
    f.update(fields)
    ctype, body = multipart(f, [("files", n, d) for n, d in files])
    st, _, raw = s.request("POST", "/api/tasks/%s/messages" % tid, body, {"Content-Type": ctype})
    assert st in (200, 201, 202), (st, raw)


def wait_round(s, tid, n, timeout=120):
    deadline = time.time() + timeout
    while True:
        st, t = s.get_json("/api/tasks/" + tid)
        if st == 200 and t.get("round") == n and t["status"] in ("succeeded", "failed", "cancelled"):
            return t
        assert time.time() < deadline, "round %d of %s did not end: %s" % (n, tid, t)
        time.sleep(0.2)


def get(s, path):
    st, hdr, body = s.request("GET", path)
    return st, body


def zip_names(body):
    with zipfile.ZipFile(io.BytesIO(body)) as z:
        return [n.rsplit("/", 1)[-1] for n in z.namelist()]


def local(s, tid, name):
    with open(os.path.join(s.prefix, "artifacts", tid, name), "rb") as f:
        return f.read()


def main():
    rep = Reporter()
    if pg_server.missing() or s3_server.missing():
        print("SKIP blob_records: needs %s (make deps)" % " ".join(pg_server.missing() + s3_server.missing()))
        return
    if os.geteuid() != 0 or not image_ready():
        print("SKIP blob_records: needs root and the sandbox image (make image)")
        return
    with pg_server.PgServer() as pg, s3_server.S3Server() as s3:
        pg.sql('CREATE DATABASE "records"')
        url = pg.url.replace("/%s?" % pg.db, "/records?")
        env = s3.env(bucket="llmbox-records")
        r = subprocess.run([LLMBOX, "blob", "mkbucket"], env=dict(os.environ, LLMBOX_HOME="/", **env),
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        env.update({"LLMBOX_TASK_RUNNER": "queue", "LLMBOX_FOLLOWUP_KEEP_S": "600"})
        kw = dict(scenario=SCENARIO, db_url=url, conf=CONF, env=env)
        with Stack(**kw) as s1, Stack(**kw) as s2:
            c = nodes_on(pg, url)
            st_ = {}
            try:
                c.node("h2", s2.model_url, home=s2.prefix, env=node_env(s2))

                def inputs_across_hosts():
                    st, t = s1.create_task("Copy it [rec]", files=[("a.txt", b"alpha\n")], model="cap")
                    assert st in (200, 201), (st, t)
                    tid = st_["tid"] = t["id"]
                    t = s1.wait_task(tid)
                    assert t["status"] == "succeeded" and t["answer"] == "one", t
                    assert c.tasks([tid])[tid]["node"] == "h2"
                    assert not os.path.exists(os.path.join(s1.prefix, "artifacts", tid, "trajectory.json"))
                    send(s1, tid, "Now with b [rec]", files=[("b.txt", b"bravo\n")])
                    t = wait_round(s1, tid, 2)
                    assert t["status"] == "succeeded" and t["answer"] == "two", t
                    assert c.tasks([tid])[tid]["node"] == "h2"
                    st, body = get(s1, "/api/tasks/%s/artifacts/r2.txt" % tid)
                    assert st == 200 and body == b"bravo\nalpha\n", (st, body)

                def record_on_the_other_web():
                    tid = st_["tid"]
                    for name, path in (("trajectory.json", "trajectory"), ("tokens.jsonl", "tokens.jsonl")):
                        want = local(s2, tid, name)
                        st, body = get(s1, "/api/tasks/%s/%s" % (tid, path))
                        assert st == 200, (name, st, body[:300])
                        assert hashlib.sha256(body).hexdigest() == hashlib.sha256(want).hexdigest(), name
                    lines = [json.loads(x) for x in get(s1, "/api/tasks/%s/tokens.jsonl" % tid)[1].splitlines()]
                    assert len(lines) >= 2 and all(x["tokens_status"] == "ok" for x in lines), lines

                def round_on_another_node():
                    tid = st_["tid"]
                    st, body = get(s2, "/api/tasks/%s/bundle.zip" % tid)  # kept by host 2's web
                    assert st == 200 and "r2.txt" in zip_names(body), (st, body[:200])
                    c.stop_node("h2")  # SIGTERM: it drains (nothing runs) and leaves
                    c.node("h1", s1.model_url, home=s1.prefix, env=node_env(s1))
                    send(s1, tid, "And a third [rec]", fresh="1")
                    t = wait_round(s1, tid, 3)
                    assert t["status"] == "succeeded" and t["answer"] == "three", t
                    v = c.tasks([tid])[tid]
                    assert v["node"] == "h1", v
                    st, body = get(s1, "/api/tasks/%s/artifacts/r3.txt" % tid)
                    assert st == 200 and body == b"bravo\nalpha\nthree-and-longer\n", (st, body)

                def record_refreshed():
                    tid = st_["tid"]
                    st, body = get(s2, "/api/tasks/%s/trajectory" % tid)
                    assert st == 200, (st, body[:300], [x for x in s2.logs().splitlines() if tid in x][-5:])
                    assert body == local(s1, tid, "trajectory.json"), "host 2 served a stale trajectory"
                    traj = json.loads(body)
                    said = [m for m in traj["messages"] if m.get("role") == "assistant"]
                    assert traj["answer"] == "three" and len(said) == 6, (traj["answer"], len(said))
                    # host 2's kept bundle was of round 2: built again
                    st, body = get(s2, "/api/tasks/%s/bundle.zip" % tid)
                    assert st == 200, st
                    names = zip_names(body)
                    assert "r3.txt" in names, names
                    with zipfile.ZipFile(io.BytesIO(body)) as z:
                        traj_name = [n for n in z.namelist() if n.endswith("trajectory.json")][0]
                        assert json.loads(z.read(traj_name))["answer"] == "three"

                def earlier_round_files_on_any_web():
                    tid = st_["tid"]
                    # round 1 ran on host 2, round 3 on host 1: each web lacks
                    # the other's round copies, kept in the bucket at each message
                    for s, path, want in ((s1, "rounds/1/out.txt", b"alpha\n"),
                                          (s1, "rounds/2/r2.txt", b"bravo\nalpha\n"),
                                          (s2, "rounds/3/r3.txt", b"bravo\nalpha\nthree-and-longer\n")):
                        st, body = get(s, "/api/tasks/%s/%s" % (tid, path))
                        assert st == 200 and body == want, (s.port, path, st, body[:200])
                    st, body = get(s1, "/api/tasks/%s/rounds/1/r2.txt" % tid)  # not a file of round 1
                    assert st == 404, (st, body[:200])

                def fork_across_hosts():
                    tid = st_["tid"]
                    st, _, raw = s1.request("POST", "/api/tasks/%s/fork?round=3" % tid, b"")
                    assert st == 201, (st, raw)
                    fid = json.loads(raw)["id"]
                    st, body = get(s2, "/api/tasks/%s/artifacts/r3.txt" % fid)
                    assert st == 200 and body == b"bravo\nalpha\nthree-and-longer\n", (st, body)
                    st, body = get(s2, "/api/tasks/%s/trajectory" % fid)
                    assert st == 200 and json.loads(body)["answer"] == "three", (st, body[:300])
                    for t in (fid, tid):
                        st, _, raw = s1.request("DELETE", "/api/tasks/" + t)
                        assert st in (200, 204), (st, raw)

                for name, fn in (("blob_records/inputs_across_hosts", inputs_across_hosts),
                                 ("blob_records/record_on_the_other_web", record_on_the_other_web),
                                 ("blob_records/round_on_another_node", round_on_another_node),
                                 ("blob_records/record_refreshed", record_refreshed),
                                 ("blob_records/earlier_round_files_on_any_web", earlier_round_files_on_any_web),
                                 ("blob_records/fork_across_hosts", fork_across_hosts)):
                    if name.endswith("inputs_across_hosts") or st_.get("tid"):
                        rep.run(name, fn)
                    else:
                        print("SKIP %s: the first check made no task" % name, flush=True)
            finally:
                nodes_end(c)
    rep.done()


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    main()
