#!/usr/bin/env python3
"""Follow-up rounds of a task (follow-ups), through the real stack (nginx,
web, agents, sandboxd as root) and tests/fake_model.py:

  - a three-round conversation: round 2 uses a file, a shell variable, the
    working directory and an "installed" command from round 1 (the kept
    sandbox), and a file sent with the message; the model sees the whole
    conversation; rounds, their answers and outputs (new / removed) are in
    GET /api/tasks/{id}; events carry their round;
  - "Replay" of the conversation plays every round's tool calls in one
    run; "Run again" starts over from the first prompt with every input;
  - fork from round 1 (the conversation and the saved state of round 1,
    restored by the fork's next message) and from the last round (its
    files come along);
  - a message while a round runs is refused with 409; a follow-up on a
    cancelled task continues in its sandbox;
  - a message whose file name an earlier round already has: 409;
  - deleting the task destroys its kept sandbox;
  - followup_max_kept: a sandbox over the cap is not kept (said in an
    error event) and its next round restores the saved state;
  - a share link shows the task (thread, answer, files) without a login,
    and is refused once deleted, and once its task is deleted;
  - after the keep time (followup_keep_s=2): the next round is restored
    from the state saved at the end of the last one (files, "installed"
    files, cwd, exported variables; the model is told processes did not
    survive); with that state missing, or damaged, the round says so and
    offers fresh=1; with fresh=1 it runs in a fresh sandbox with the inputs and
    the last outputs only; deleting the task deletes its saved states.

    python3 tests/integration/test_followups.py   (from the repo root, as root)
"""
import glob
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stack import Reporter, Skip, Stack, image_ready, multipart  # noqa: E402

rep = Reporter()


def bash(cmd):
    return {"tool_calls": [{"name": "bash", "arguments": {"command": cmd}}]}


def finish(answer):
    return {"tool_calls": [{"name": "finish", "arguments": {"answer": answer}}]}


SCENARIO = {"scenarios": [
    # three rounds: the step is the number of assistant messages so far,
    # so round 2 starts at step 2 only when round 1's are in the request
    {"match": "[conv-a]", "steps": [
        bash("mkdir -p /testbed/work && cd /testbed/work && echo hello > /testbed/data.txt && "
             "export GREETING=bonjour && printf '#!/bin/sh\\necho fakecmd-works\\n' > /usr/local/bin/fakecmd && "
             "chmod +x /usr/local/bin/fakecmd && mkdir -p /testbed/output && echo one > /testbed/output/r1.txt"),
        finish("round one done"),
        bash("echo \"$GREETING $(cat /testbed/data.txt) $(fakecmd) $(pwd) $(cat /testbed/input/extra.csv)\" "
             "| tee /testbed/output/r2.txt"),
        finish("round two done"),
        bash("rm /testbed/output/r1.txt && echo changed > /testbed/output/r2.txt && echo three > /testbed/output/r3.txt"),
        finish("round three done"),
    ]},
    # a slow round (cancelled), then a follow-up in the same sandbox
    {"match": "[conv-b]", "steps": [
        bash("echo kept-b > /testbed/b.txt"),
        dict(bash("sleep 1"), delay_ms=4000),
        bash("cat /testbed/b.txt"),
        finish("b continued"),
    ]},
    {"match": "[conv-d]", "steps": [bash("echo d > /testbed/d.txt"), finish("d one"),
                                    bash("cat /testbed/d.txt"), finish("d two")]},
    {"match": "[conv-s]", "steps": [bash("mkdir -p /testbed/output && echo 'shared file' > /testbed/output/s.txt"),
                                    finish("shared answer")]},
    # the keep time passes (second stack): restored, then missing, then fresh
    {"match": "[conv-c]", "steps": [
        bash("mkdir -p /testbed/output && echo c-out > /testbed/output/c.txt && echo c-other > /testbed/other.txt "
             "&& export CVAR=set && cd /testbed/output"),
        finish("c one"),
        bash("echo \"cvar=[$CVAR] pwd=[$(pwd)]\"; cat /testbed/other.txt; cat /testbed/input/c2.csv; "
             "echo c-two > /testbed/output/c.txt"),
        finish("c restored"),
        # round 3 asks no model (its state is missing); round 4 is fresh
        bash("cat /testbed/output/c.txt; cat /testbed/input/c.csv; ls /testbed/other.txt; echo \"cvar=[$CVAR]\""),
        finish("c fresh"),
    ]},
]}


def message(st, tid, prompt, files=(), **fields):
    f = {"prompt": prompt}
    f.update(fields)
    ctype, body = multipart(f, [("files", n, d) for n, d in files])
    code, _, resp = st.request("POST", "/api/tasks/%s/messages" % tid, body, {"Content-Type": ctype})
    return code, json.loads(resp) if resp else None


def all_events(st, tid):
    """Every event of every round: a stream ends at a round's done; the next
    one goes on from there (Last-Event-ID), as the page does."""
    code, t = st.get_json("/api/tasks/" + tid)
    evs, last = [], 0
    while True:
        more = st.events(tid, last_event_id=last)
        evs += more
        if not more or more[-1][1] != "done" or more[-1][2].get("round", 1) >= t["round"]:
            return evs
        last = more[-1][0]


def tool_events(st, tid, rnd=None):
    evs = all_events(st, tid)
    return [d for _, e, d in evs if e == "tool" and (rnd is None or d.get("round") == rnd)], evs


def model_requests(st):
    return [json.load(open(p)) for p in sorted(glob.glob(os.path.join(st.model_log, "request-*.json")))]


def wait_round(st, tid, n, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        code, t = st.get_json("/api/tasks/" + tid)
        if code == 200 and t["round"] == n and t["status"] in ("succeeded", "failed", "cancelled"):
            return t
        time.sleep(0.1)
    raise AssertionError("round %d of %s did not end: %s" % (n, tid, t))


def three_rounds(st):
    code, t = st.create_task("[conv-a] make the data")
    assert code == 201, (code, t)
    tid = t["id"]
    t = st.wait_task(tid)
    assert t["status"] == "succeeded" and t["answer"] == "round one done", t
    assert t["round"] == 1 and len(t["rounds"]) == 1, t
    assert t["sandbox"] and t["sandbox"]["kept_until_ms"] > time.time() * 1000, t["sandbox"]
    assert t["rounds"][0]["state_bytes"] > 0, t["rounds"]

    code, m = message(st, tid, "use what you made", files=[("extra.csv", b"extra-content\n")])
    assert code == 201 and m["round"] == 2 and m["status"] == "queued", (code, m)
    t = wait_round(st, tid, 2)
    assert t["status"] == "succeeded" and t["answer"] == "round two done", t
    tools, evs = tool_events(st, tid, 2)
    out = tools[0].get("stdout", "")
    assert "bonjour hello fakecmd-works /testbed/work extra-content" in out, tools
    assert [d.get("round") for _, e, d in evs if e == "done"] == [1, 2], evs
    assert any(e == "round" and d.get("round") == 2 and d.get("prompt") == "use what you made" for _, e, d in evs)

    # the model saw the whole conversation, and was told what survived
    reqs = [r for r in model_requests(st) if "[conv-a]" in json.dumps(r)]
    r2 = [r for r in reqs if any("round 2" in (m.get("content") or "") for m in r["messages"])][0]
    texts = json.dumps(r2["messages"])
    assert "round one done" in texts and "export GREETING=bonjour" in texts, texts[:2000]
    opening = [m for m in r2["messages"] if m["role"] == "user" and "round 2" in (m.get("content") or "")][0]
    assert "use what you made" in opening["content"] and "same one as in the previous round" in opening["content"]
    assert "extra.csv" in opening["content"], opening

    code, m = message(st, tid, "third")
    assert code == 201 and m["round"] == 3, (code, m)
    t = wait_round(st, tid, 3)
    assert t["status"] == "succeeded" and t["answer"] == "round three done", t
    rounds = t["rounds"]
    assert [r["round"] for r in rounds] == [1, 2, 3] and [r["answer"] for r in rounds] == [
        "round one done", "round two done", "round three done"], rounds
    assert [r["sandbox"] for r in rounds] == ["new", "kept", "kept"], rounds
    assert rounds[1]["inputs"] == [{"path": "extra.csv", "size": 14}], rounds[1]
    paths = lambda r: sorted(a["path"] for a in (r["artifacts"] or []))
    assert "r1.txt" in paths(rounds[0]) and "r2.txt" in paths(rounds[1]), rounds
    assert "r1.txt" not in paths(rounds[2]) and "r3.txt" in paths(rounds[2]), rounds
    sha = lambda r, p: [a["sha256"] for a in r["artifacts"] if a["path"] == p][0]
    assert sha(rounds[1], "r2.txt") != sha(rounds[2], "r2.txt"), "r2.txt changed in round 3"
    assert sorted(a["path"] for a in t["artifacts"]) == paths(rounds[2]), t["artifacts"]
    assert t["turns"] == sum(r["usage"]["turns"] for r in rounds) == 6, (t["turns"], rounds)
    assert {i["path"] for i in t["inputs"]} == {"extra.csv"}, t["inputs"]

    # each round's files as they were at its end
    for rnd, path, want in ((1, "r1.txt", 200), (2, "r2.txt", 200), (3, "r2.txt", 200), (3, "r1.txt", 404),
                            (4, "r1.txt", 404), (1, "../r1.txt", 404)):
        code, _, data = st.request("GET", "/api/tasks/%s/rounds/%d/%s" % (tid, rnd, path))
        assert code == want, (rnd, path, code, data)
    code, _, data = st.request("GET", "/api/tasks/%s/rounds/1/r1.txt" % tid)
    assert data == b"one\n", data
    code, _, data = st.request("GET", "/api/tasks/%s/rounds/2/r2.txt" % tid)
    assert data.startswith(b"bonjour hello"), data
    code, _, data = st.request("GET", "/api/tasks/%s/rounds/3/r2.txt" % tid)
    assert data == b"changed\n", data

    # a second file of the same name: refused, nothing replaced
    code, m = message(st, tid, "again", files=[("extra.csv", b"other\n")])
    assert code == 409 and "extra.csv" in m["error"]["message"], (code, m)
    code, t = st.get_json("/api/tasks/" + tid)
    assert t["round"] == 3 and t["status"] == "succeeded", t

    # "Replay" of the conversation: every round's tool calls in one run
    code, _, resp = st.request("POST", "/api/tasks/%s/rerun?replay=1" % tid)
    assert code == 201, (code, resp)
    rp = st.wait_task(json.loads(resp)["id"])
    assert rp["status"] == "succeeded" and rp["answer"] == "round three done", (rp["status"], rp["reason"], rp["answer"])
    assert sorted(a["path"] for a in rp["artifacts"]) == paths(rounds[2]), rp["artifacts"]
    # "Run again": the first round's prompt, every round's inputs
    code, _, resp = st.request("POST", "/api/tasks/%s/rerun" % tid)
    assert code == 201, (code, resp)
    ra = st.wait_task(json.loads(resp)["id"])
    assert ra["status"] == "succeeded" and ra["answer"] == "round one done", ra
    assert [i["path"] for i in ra["inputs"]] == ["extra.csv"], ra["inputs"]
    for x in (rp["id"], ra["id"]):
        st.request("DELETE", "/api/tasks/" + x)

    # fork from round 1: the conversation and the files as they were then
    code, _, resp = st.request("POST", "/api/tasks/%s/fork?round=1" % tid)
    assert code == 201, (code, resp)
    fk = json.loads(resp)
    fid = fk["id"]
    assert fid != tid and fk["status"] == "succeeded" and fk["answer"] == "round one done", fk
    assert fk["round"] == 1 and len(fk["rounds"]) == 1 and fk["inputs"] == [], fk
    assert fk["fork_of"] == {"id": tid, "round": 1}, fk["fork_of"]
    assert fk["artifacts"] == [], fk["artifacts"]  # the files of round 1 are in its saved state, not on disk
    code, m = message(st, fid, "use what you made", files=[("extra.csv", b"fork-extra\n")])
    assert code == 201 and m["round"] == 2, (code, m)
    f2 = wait_round(st, fid, 2)
    assert f2["status"] == "succeeded" and f2["rounds"][1]["sandbox"] == "restored", f2
    tools, _ = tool_events(st, fid, 2)
    out = tools[0].get("stdout", "")
    assert "bonjour hello fakecmd-works /testbed/work fork-extra" in out, tools
    # the fork's model saw round 1 and its own message, nothing of rounds 2 and 3
    freqs = [json.dumps(r) for r in model_requests(st) if "extra.csv" in json.dumps(r) and "fork-extra" in json.dumps(r)]
    freqs = freqs or [json.dumps(r) for r in model_requests(st)
                      if "round one done" in json.dumps(r) and "round two done" not in json.dumps(r)
                      and "round 2" in json.dumps(r)]
    assert freqs and all("round one done" in x and "round two done" not in x and "third" not in x for x in freqs), \
        len(freqs)
    # fork of the last round: its files come along
    code, _, resp = st.request("POST", "/api/tasks/%s/fork" % tid)
    assert code == 201, (code, resp)
    fk3 = json.loads(resp)
    assert fk3["round"] == 3 and len(fk3["rounds"]) == 3, fk3
    assert sorted(a["path"] for a in fk3["artifacts"]) == paths(rounds[2]), fk3["artifacts"]
    code, _, data = st.request("GET", "/api/tasks/%s/artifacts/r3.txt" % fk3["id"])
    assert code == 200 and data == b"three\n", (code, data)
    code, _, _ = st.request("POST", "/api/tasks/%s/fork?round=4" % tid)
    assert code == 404, code
    code, _, _ = st.request("POST", "/api/tasks/%s/fork?round=x" % tid)
    assert code == 400, code
    for x in (fid, fk3["id"]):
        code, _, _ = st.request("DELETE", "/api/tasks/" + x)
        assert code == 200, code

    # a message carries files as big as a new task's (nginx lets them through)
    code, m = message(st, tid, "big", files=[("big.bin", b"x" * (3 << 20))], unpack="0")
    assert code == 201 and m["inputs"] == [{"path": "big.bin", "size": 3 << 20}], (code, m)
    wait_round(st, tid, 4)

    # deleting the task destroys its kept sandbox
    code, _, _ = st.request("DELETE", "/api/tasks/" + tid)
    assert code == 200, code
    deadline = time.time() + 10
    while st.sandboxd_ping().get("sandboxes", 0) and time.time() < deadline:
        time.sleep(0.2)
    assert st.sandboxd_ping().get("sandboxes", 0) == 0, st.sandboxd_ping()


def busy_then_cancelled(st):
    code, t = st.create_task("[conv-b] slow")
    assert code == 201, (code, t)
    tid = t["id"]
    deadline = time.time() + 60
    while time.time() < deadline:  # the first reply is in: the second takes the model 4 s
        code, t = st.get_json("/api/tasks/" + tid)
        if t["status"] == "running" and t["turns"] >= 1:
            break
        time.sleep(0.1)
    code, m = message(st, tid, "too early")
    assert code == 409 and m["error"]["code"] == "round_running", (code, m)
    assert "not queued" in m["error"]["message"], m
    code, _, _ = st.request("POST", "/api/tasks/%s/cancel" % tid)
    assert code == 202, code
    t = st.wait_task(tid)
    assert t["status"] == "cancelled", t
    code, m = message(st, tid, "go on after the cancel")
    assert code == 201 and m["round"] == 2, (code, m)
    t = wait_round(st, tid, 2)
    assert t["status"] == "succeeded" and t["answer"] == "b continued", t
    tools, _ = tool_events(st, tid, 2)
    assert any("kept-b" in (d.get("stdout") or "") for d in tools), tools
    assert t["rounds"][1]["sandbox"] == "kept", t["rounds"]
    # an evaluation's run or a rollout's sample (a task with run options) takes no message
    import sqlite3
    db = sqlite3.connect(os.path.join(st.prefix, "var", "web", "llmbox.db"))
    db.execute("UPDATE tasks SET options = '{\"mode\":\"sandbox\"}' WHERE id = ?", (tid,))
    db.commit()
    db.close()
    code, m = message(st, tid, "score me again")
    assert code == 409 and "evaluation" in m["error"]["message"], (code, m)
    code, _, _ = st.request("DELETE", "/api/tasks/" + tid)
    assert code == 200


def keep_time_passed(st):
    code, t = st.create_task("[conv-c] first", files=[("c.csv", b"c-input\n")])
    assert code == 201, (code, t)
    tid = t["id"]
    t = st.wait_task(tid)
    assert t["status"] == "succeeded", t
    assert t["rounds"][0]["state_bytes"] > 0, t["rounds"]
    time.sleep(5)  # followup_keep_s=2: the lease runs out, sandboxd destroys the frozen sandbox
    code, t = st.get_json("/api/tasks/" + tid)
    assert t["sandbox"] is None, t["sandbox"]
    assert st.sandboxd_ping().get("sandboxes", 0) == 0, st.sandboxd_ping()

    # round 2: restored from round 1's saved state
    code, m = message(st, tid, "more please", files=[("c2.csv", b"c2-input\n")])
    assert code == 201, (code, m)
    t = wait_round(st, tid, 2)
    assert t["status"] == "succeeded" and t["answer"] == "c restored", t
    assert t["rounds"][1]["sandbox"] == "restored", t["rounds"]
    tools, _ = tool_events(st, tid, 2)
    out = tools[0].get("stdout") or ""
    assert "cvar=[set] pwd=[/testbed/output]" in out and "c-other" in out and "c2-input" in out, tools[0]
    reqs = [r for r in model_requests(st) if "more please" in json.dumps(r)]
    assert reqs and "did not survive" in json.dumps(reqs[0]["messages"][-1]), reqs[:1]

    # round 3: round 2's state gone (as its age limit removes it) while
    # nothing is kept: the answer says so and offers fresh=1
    time.sleep(5)
    states = glob.glob(os.path.join(st.prefix, "var", "sandboxd", "states", "u*", "t%s-r2.state" % tid))
    assert states, os.listdir(os.path.join(st.prefix, "var", "sandboxd", "states"))
    os.unlink(states[0])
    code, m = message(st, tid, "and again")
    assert code == 201, (code, m)
    t = wait_round(st, tid, 3)
    assert t["status"] == "failed" and "no saved state" in t["reason"], t
    assert "fresh=1" in (t["answer"] or ""), t["answer"]
    assert st.sandboxd_ping().get("sandboxes", 0) == 0, st.sandboxd_ping()

    # round 4: fresh=1, the files only
    code, m = message(st, tid, "continue fresh", fresh="1")
    assert code == 201 and m["fresh"] is True, (code, m)
    t = wait_round(st, tid, 4)
    assert t["status"] == "succeeded" and t["answer"] == "c fresh", t
    assert t["rounds"][3]["sandbox"] == "fresh" and t["rounds"][3]["fresh"] is True, t["rounds"]
    tools, _ = tool_events(st, tid, 4)
    out = (tools[0].get("stdout") or "") + (tools[0].get("stderr") or "")
    assert "c-two" in out and "c-input" in out, out             # the inputs and last outputs came along
    assert "cvar=[]" in out and "No such file" in out, out      # the rest did not
    reqs = [r for r in model_requests(st) if "continue fresh" in json.dumps(r)]
    assert reqs and "fresh sandbox" in json.dumps(reqs[0]["messages"][-1]), reqs[:1]

    # deleting the task deletes its saved states
    code, _, _ = st.request("DELETE", "/api/tasks/" + tid)
    assert code == 200
    left = glob.glob(os.path.join(st.prefix, "var", "sandboxd", "states", "u*", "t%s-*" % tid))
    assert not left, left


def damaged_state(st):
    """A saved state cut short (a disk that filled, a copy that broke): the
    round says it is damaged and offers fresh=1; nothing is left running."""
    code, t = st.create_task("[conv-d] first")
    assert code == 201, (code, t)
    tid = t["id"]
    t = st.wait_task(tid)
    assert t["status"] == "succeeded" and t["rounds"][0]["state_bytes"] > 0, t
    time.sleep(5)  # the kept sandbox is gone
    path = glob.glob(os.path.join(st.prefix, "var", "sandboxd", "states", "u*", "t%s-r1.state" % tid))[0]
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[:len(data) // 2])
    code, m = message(st, tid, "go on")
    assert code == 201, (code, m)
    t = wait_round(st, tid, 2)
    assert t["status"] == "failed" and "damaged" in (t["reason"] or ""), (t["status"], t["reason"], t["rounds"][1])
    assert "fresh=1" in (t["answer"] or ""), t["answer"]
    assert st.sandboxd_ping().get("sandboxes", 0) == 0, "a damaged restore left a sandbox"
    code, _, _ = st.request("DELETE", "/api/tasks/" + tid)
    assert code == 200


def new_user(name):
    from stack import LLMBOX
    import subprocess
    out = subprocess.check_output([LLMBOX, "user", "add", name], text=True,
                                  env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LLMBOX_CONF": "/dev/null"})
    tok = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("lbx_")][0]
    hsh = [ln.split("=", 1)[1].strip() for ln in out.splitlines() if ln.startswith("token_sha256 =")][0]
    return tok, hsh


def share_links(st, token):
    auth = {"Authorization": "Bearer " + token}
    ctype, body = multipart({"prompt": "[conv-s] share me"}, [])
    code, _, resp = st.request("POST", "/api/tasks", body, dict(auth, **{"Content-Type": ctype}))
    assert code == 201, (code, resp)
    tid = json.loads(resp)["id"]
    deadline = time.time() + 60
    while time.time() < deadline:
        code, _, resp = st.request("GET", "/api/tasks/" + tid, None, auth)
        t = json.loads(resp)
        if t["status"] in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.1)
    assert t["status"] == "succeeded", t
    # without a login the task itself is not there for anyone else
    code, _, _ = st.request("GET", "/api/tasks/" + tid)
    assert code == 401, code
    code, _, resp = st.request("POST", "/api/tasks/%s/shares" % tid, None, auth)
    assert code == 201, (code, resp)
    sh = json.loads(resp)
    assert sh["url"] == "/shared.html#" + sh["id"] and sh["expires_ms"] > time.time() * 1000 + 6 * 86400 * 1000, sh
    # the shared view, without any credentials: the thread, the answer, the files
    code, _, resp = st.request("GET", sh["api_url"])
    assert code == 200, (code, resp)
    v = json.loads(resp)
    assert v["id"] == tid and v["answer"] == "shared answer" and len(v["rounds"]) == 1, v
    assert "sandbox" not in v and "options" not in v and "preview_base" not in v, sorted(v)
    art = [a for a in v["artifacts"] if a["path"] == "s.txt"][0]
    code, _, data = st.request("GET", art["download_url"])
    assert code == 200 and data == b"shared file\n", (code, data)
    code, _, resp = st.request("GET", "/api/tasks/%s/shares" % tid, None, auth)
    assert code == 200 and [x["id"] for x in json.loads(resp)["shares"]] == [sh["id"]], resp
    # a wrong or made-up id: 404, the same sentence as a revoked one
    code, _, _ = st.request("GET", "/api/shared/" + "0" * 32)
    assert code == 404, code
    # revoked: refused at once
    code, _, _ = st.request("DELETE", "/api/tasks/%s/shares/%s" % (tid, sh["id"]), None, auth)
    assert code == 200, code
    code, _, resp = st.request("GET", sh["api_url"])
    assert code == 404 and b"does not exist" in resp, (code, resp)
    # a new link, then the task deleted: refused too, files gone
    code, _, resp = st.request("POST", "/api/tasks/%s/shares?ttl_s=3600" % tid, None, auth)
    assert code == 201, (code, resp)
    sh2 = json.loads(resp)
    assert sh2["expires_ms"] < time.time() * 1000 + 3601 * 1000, sh2
    code, _, resp = st.request("GET", sh2["api_url"])
    assert code == 200, code
    art = [a for a in json.loads(resp)["artifacts"] if a["path"] == "s.txt"][0]
    code, _, _ = st.request("DELETE", "/api/tasks/" + tid, None, auth)
    assert code == 200, code
    code, _, _ = st.request("GET", sh2["api_url"])
    assert code == 404, code
    time.sleep(1.5)  # nginx keeps an open file for up to 1 s (open_file_cache_valid in nginx.conf)
    code, _, _ = st.request("GET", art["download_url"])
    assert code == 404, code
    # sharing someone else's task: as if it did not exist
    code, _, _ = st.request("POST", "/api/tasks/%s/shares" % ("f" * 32), None, auth)
    assert code == 404, code


def kept_cap(st):
    """followup_max_kept=1: the second task's sandbox is not kept (an error
    event says so, sandboxd holds one sandbox), and its next message
    restores the state saved at the end of its round."""
    code, a = st.create_task("[conv-d] first")
    ta = st.wait_task(a["id"])
    code, b = st.create_task("[conv-d] second")
    tb = st.wait_task(b["id"])
    assert ta["status"] == tb["status"] == "succeeded", (ta, tb)
    assert ta["sandbox"] and tb["sandbox"] is None, (ta["sandbox"], tb["sandbox"])
    evs = all_events(st, b["id"])
    assert any(e == "error" and "followup_max_kept" in d.get("message", "") for _, e, d in evs), evs
    assert st.sandboxd_ping().get("sandboxes", 0) == 1, st.sandboxd_ping()
    code, m = message(st, b["id"], "go on")
    assert code == 201, (code, m)
    t = wait_round(st, b["id"], 2)
    assert t["status"] == "succeeded" and t["rounds"][1]["sandbox"] == "restored", t["rounds"]
    for x in (a["id"], b["id"]):
        st.request("DELETE", "/api/tasks/" + x)


def main():
    if os.geteuid() != 0:
        print("SKIP followups: needs root (sandboxd)")
        return
    if not image_ready():
        print("SKIP followups: no sandbox image (var/images/default)")
        return
    with Stack(scenario=SCENARIO, env={"LLMBOX_POOL_SIZE": "0", "LLMBOX_FOLLOWUP_KEEP_S": "600"}) as st:
        rep.run("followup_three_rounds_in_the_kept_sandbox", three_rounds, st)
        rep.run("followup_409_while_running_then_after_cancel", busy_then_cancelled, st)
    with Stack(scenario=SCENARIO, env={"LLMBOX_POOL_SIZE": "0", "LLMBOX_FOLLOWUP_KEEP_S": "600",
                                       "LLMBOX_FOLLOWUP_MAX_KEPT": "1"}) as st:
        rep.run("followup_max_kept_caps_kept_sandboxes", kept_cap, st)
    tok, hsh = new_user("ann")
    with Stack(scenario=SCENARIO, env={"LLMBOX_POOL_SIZE": "0", "LLMBOX_FOLLOWUP_KEEP_S": "600"}, conf='[user "ann"]\ntoken_sha256 = %s\n' % hsh) as st:
        rep.run("share_link_without_login_refused_after_delete", share_links, st, tok)
    with Stack(scenario=SCENARIO, env={"LLMBOX_POOL_SIZE": "0", "LLMBOX_FOLLOWUP_KEEP_S": "2"}) as st:
        rep.run("followup_after_keep_time_restored_missing_fresh", keep_time_passed, st)
        rep.run("followup_damaged_state_says_so", damaged_state, st)
    rep.done()


if __name__ == "__main__":
    main()
