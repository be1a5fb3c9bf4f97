"""Rollout groups (RL rollouts, docs/API.md "Rollouts"): a group of n samples,
each a task in its own sandbox, scored after its episode by `llmbox
score`; rewards right and wrong; the request's files reach each sample's
input folder; a failing sample classified while the others finish; a hung
scorer classified as scorer_timeout after the sample's task (and its
slot) has ended; cancel; the ?wait= long-poll; the NDJSON stream; the
batch form; a web restart in the middle; the refusals; system_prompt
and tools; a trainer's own endpoint where allowed (and never the
operator's key sent there); who may see a group (no token 401, another
user's group 404, each sample's task readable by its maker); a person's
task still admitted while a big group holds every slot rollouts may take.

Against the real stack with the fake model's eval behaviour
(tests/fake_model.py, {"eval": true}): ANSWER-FROM-INPUT[NAME] makes the
model copy /testbed/input/NAME into the answer file, so the reward proves
the files were there."""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import LLMBOX, Reporter, Stack, image_ready  # noqa: E402

TOKEN = "rollout-test-token-0123456789abcdef"
AUTH = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
OUTCOMES = ("ok", "model_error", "sandbox_error", "timeout", "scorer_error", "cancelled")


def call(s, method, path, body=None, headers=None, timeout=90):
    h = dict(AUTH if headers is None else headers)
    data = json.dumps(body).encode() if body is not None else None
    st, hdrs, raw = s.request(method, path, data, h, timeout=timeout)
    try:
        return st, json.loads(raw) if raw else None
    except ValueError:
        return st, raw


def post(s, body, headers=None):
    return call(s, "POST", "/api/rollouts", body, headers)


def group_body(answer="42", gt=42, n=4, **extra):
    b = {"prompt": "Read the file. ANSWER-FROM-INPUT[data/x.txt]", "n": n,
         "files": [{"path": "data/x.txt", "content": answer + "\n"}],
         "reward": {"scorer": "numeric", "ground_truth": gt}}
    b.update(extra)
    return b


def wait_group(s, gid, timeout=180, until=None, headers=None):
    deadline = time.time() + timeout
    g = None
    while time.time() < deadline:
        st, g = call(s, "GET", "/api/rollouts/" + gid, headers=headers)
        assert st == 200, (st, g)
        if (until or (lambda x: x["status"] != "running"))(g):
            return g
        time.sleep(0.2)
    raise AssertionError("group %s: not there after %ss: %s" % (gid, timeout, json.dumps(g)[:2000]))


# ---- stack 1: no delay --------------------------------------------------------

def test_group_of_four_with_rewards_right_and_wrong(s):
    st, g = post(s, group_body("42", 42, metadata={"step": 7}))
    assert st == 201, (st, g)
    assert g["status"] == "running" and g["n"] == 4 and len(g["samples"]) == 4, g
    assert [x["index"] for x in g["samples"]] == [0, 1, 2, 3], g
    assert g["metadata"] == {"step": 7}, g
    st, bad = post(s, group_body("41", 42, n=2))
    assert st == 201, (st, bad)
    t0 = time.time()
    st, done = call(s, "GET", "/api/rollouts/%s?wait=60" % g["id"])
    assert st == 200 and done["status"] == "done", (st, done)
    assert time.time() - t0 < 60
    assert done["finished_ms"] >= done["created_ms"], done
    tasks = set()
    for x in done["samples"]:
        assert x["status"] == "done" and x["outcome"] == "ok", x
        assert x["reward"] == 1, x
        assert x["answer"].strip() == "42", x
        assert x["turns"] >= 2 and x["prompt_tokens"] > 0 and x["completion_tokens"] > 0, x
        assert x["wall_ms"] > 0, x
        assert x["trajectory_url"] == "/api/rollouts/%s/samples/%d/trajectory" % (g["id"], x["index"]), x
        tasks.add(x["task_id"])
    assert len(tasks) == 4, tasks  # each sample its own task (its own fresh sandbox)
    st, traj = call(s, "GET", done["samples"][2]["trajectory_url"])
    assert st == 200 and isinstance(traj, dict), (st, str(traj)[:300])
    # the sample's task is readable with the same credential (no users here: any loopback client)
    st, t = call(s, "GET", "/api/tasks/" + done["samples"][0]["task_id"], headers={})
    assert st == 200 and t["status"] == "succeeded", (st, t)
    # a sample never has a second round: its round 1 files are its outputs,
    # served from output/; its agent made no rounds/ copies of them
    tid = t["id"]
    arts = [a["path"] for a in t["artifacts"]]
    assert "answer.txt" in arts, t["artifacts"]
    st, _, raw = s.request("GET", "/api/tasks/%s/rounds/1/answer.txt" % tid, None, AUTH)
    assert st == 200 and raw.strip() == b"42", (st, raw[:300])
    st, _, raw = s.request("GET", "/api/tasks/%s/rounds/1/nothing.txt" % tid, None, AUTH)
    assert st == 404, (st, raw[:300])
    tdir = os.path.join(s.prefix, "artifacts", tid)
    assert os.path.isdir(tdir) and not os.path.exists(os.path.join(tdir, "rounds")), os.listdir(tdir)
    # the group's input file is written once and linked into each sample's
    # input folder: one file, each sample reading the request's content
    ins = [os.path.join(s.prefix, "artifacts", x["task_id"], "input", "data", "x.txt") for x in done["samples"]]
    assert all(open(p).read() == "42\n" for p in ins), ins
    assert len({(os.stat(p).st_dev, os.stat(p).st_ino) for p in ins}) == 1, [os.stat(p) for p in ins]
    # a deleted sample's task takes only its own name of the file
    st, e = call(s, "DELETE", "/api/tasks/" + done["samples"][3]["task_id"])
    assert st == 200, (st, e)
    assert all(open(p).read() == "42\n" for p in ins[:3]), ins
    w = wait_group(s, bad["id"])
    assert [x["reward"] for x in w["samples"]] == [0, 0], w["samples"]
    assert all(x["outcome"] == "ok" for x in w["samples"]), w["samples"]
    # the stream of a finished group: every sample, then the end
    st, hdrs, raw = s.request("GET", "/api/rollouts/%s/events" % g["id"], None, AUTH)
    assert st == 200 and hdrs["content-type"].startswith("application/x-ndjson"), (st, hdrs)
    lines = [json.loads(ln) for ln in raw.decode().splitlines() if ln.strip()]
    assert sorted(x["index"] for x in lines[:-1]) == [0, 1, 2, 3], lines
    assert lines[-1] == {"done": True, "status": "done"}, lines[-1]
    # no such sample, no such route
    st, e = call(s, "GET", "/api/rollouts/%s/samples/9/trajectory" % g["id"])
    assert st == 404, (st, e)
    st, e = call(s, "GET", "/api/rollouts/%s/samples/x/trajectory" % g["id"])
    assert st == 404, (st, e)
    # delete: gone, its tasks stay
    st, e = call(s, "DELETE", "/api/rollouts/" + bad["id"])
    assert st == 200 and e["deleted"] is True, (st, e)
    st, e = call(s, "GET", "/api/rollouts/" + bad["id"])
    assert st == 404, (st, e)
    st, t = call(s, "GET", "/api/tasks/" + w["samples"][0]["task_id"], headers={})
    assert st == 200, (st, t)


def test_hung_scorer_is_a_scorer_timeout_and_holds_no_slot(s):
    body = group_body("42", 42, n=1)
    body["reward"] = {"scorer": "script", "script": "import time\ntime.sleep(120)\nprint(1)\n", "timeout_s": 3}
    st, g = post(s, body)
    assert st == 201, (st, g)
    # while it is scored, the sample's task has ended: its slot and sandbox are free
    x = wait_group(s, g["id"], until=lambda y: y["samples"][0]["status"] in ("scoring", "done"))
    st, t = call(s, "GET", "/api/tasks/" + x["samples"][0]["task_id"], headers={})
    assert st == 200 and t["status"] == "succeeded", (st, t)
    done = wait_group(s, g["id"], timeout=90)
    smp = done["samples"][0]
    assert smp["outcome"] == "scorer_error" and smp["reward"] is None, smp
    assert smp["scorer_error_class"] == "scorer_timeout", smp
    assert done["status"] == "done", done


def test_system_prompt_and_tools(s):
    body = group_body("42", 42, n=1, system_prompt="You are SYS-MARK-77. Inputs are in {input_dir}.",
                      tools=["bash"], sampling={"temperature": 0.7, "top_p": 0.95, "top_k": 40,
                                                "max_tokens": 777})
    st, g = post(s, body)
    assert st == 201, (st, g)
    done = wait_group(s, g["id"])
    assert done["samples"][0]["outcome"] == "ok" and done["samples"][0]["reward"] == 1, done
    seen = 0
    for name in sorted(os.listdir(s.model_log)):
        if not name.startswith("request-"):
            continue
        with open(os.path.join(s.model_log, name)) as f:
            req = json.load(f)
        msgs = req.get("messages") or []
        if not msgs or "SYS-MARK-77" not in str(msgs[0].get("content")):
            continue
        seen += 1
        assert msgs[0]["role"] == "system", msgs[0]
        assert msgs[0]["content"] == "You are SYS-MARK-77. Inputs are in /testbed/input.", msgs[0]
        names = sorted(t["function"]["name"] for t in req["tools"])
        assert names == ["bash", "finish"], names  # only the tools asked for, and finish
        # the group's own sampling, sent as given
        assert (req.get("temperature"), req.get("top_p"), req.get("top_k"), req.get("max_tokens")) == \
            (0.7, 0.95, 40, 777), req
    assert seen == 2, seen  # both turns of the one sample
    # a tool no plugin provides: the sample fails, classified, and says why
    st, g = post(s, group_body("42", 42, n=1, tools=["no_such_tool"]))
    assert st == 201, (st, g)
    x = wait_group(s, g["id"])["samples"][0]
    assert x["outcome"] == "sandbox_error" and "no_such_tool" in x["error"], x


def test_batch_form(s):
    st, b = post(s, {"groups": [group_body("5", 5, n=1), group_body("6", 7, n=2)]})
    assert st == 201, (st, b)
    assert len(b["groups"]) == 2 and [x["n"] for x in b["groups"]] == [1, 2], b
    r = [wait_group(s, x["id"]) for x in b["groups"]]
    assert [x["reward"] for x in r[0]["samples"]] == [1], r[0]
    assert [x["reward"] for x in r[1]["samples"]] == [0, 0], r[1]
    # one bad group refuses the whole batch and says which
    st, e = post(s, {"groups": [group_body(n=1), group_body(n=65)]})
    assert st == 400 and "groups[1]" in e["error"]["message"] and "n must be" in e["error"]["message"], (st, e)
    st, e = post(s, {"groups": []})
    assert st == 400, (st, e)


def test_refusals(s):
    cases = [
        ({"n": 2}, "prompt"),
        (group_body(n=0), "n must be"),
        (group_body(n=65), "n must be"),
        (dict(group_body(), model="nope"), "configured model"),
        (dict(group_body(), system_prompt=""), "system_prompt"),
        (dict(group_body(), system_prompt="x" * 3073), "system_prompt"),
        (dict(group_body(), system_prompt="\u0001" * 1000), "after JSON escaping"),
        (dict(group_body(), tools=[]), "tools must be"),
        (dict(group_body(), tools=["Bad-Name"]), "tools:"),
        (dict(group_body(), sampling={"temperature": 2.5}), "sampling.temperature"),
        (dict(group_body(), sampling={"top_p": 0}), "sampling.top_p"),
        (dict(group_body(), sampling={"top_k": 1.5}), "sampling.top_k"),
        (dict(group_body(), sampling={"min_p": 0.1}), "min_p"),
        (dict(group_body(), colour="red"), "unknown field"),
        (dict(group_body(), files=[{"path": "../x", "content": "1"}]), "clean relative path"),
        (dict(group_body(), files=[{"path": "x", "content_base64": "%%%"}]), "base64"),
        (dict(group_body(), files=[{"path": "x"}]), "exactly one of"),
        (dict(group_body(), reward={"scorer": "magic", "ground_truth": 1}), "reward.scorer"),
        (dict(group_body(), reward={"scorer": "script"}), "reward.script"),
        (dict(group_body(), reward={"scorer": "exact"}), "ground_truth"),
        (dict(group_body(), reward={"scorer": "exact", "ground_truth": 1, "timeout_s": 0}), "timeout_s"),
        (dict(group_body(), max_turns=0), "max_turns"),
        (dict(group_body(), model_url="http://127.0.0.1:1/v1"), "does not take a model_url"),
    ]
    for body, words in cases:
        st, e = post(s, body)
        assert st == 400, (body, st, e)
        assert words in e["error"]["message"], (words, e)
    st, _, raw = s.request("POST", "/api/rollouts", b"{not json", AUTH)
    assert st == 400, (st, raw)
    st, e = call(s, "GET", "/api/rollouts/%s?wait=61" % ("0" * 32))
    assert st in (400, 404), (st, e)
    st, e = call(s, "GET", "/api/rollouts/nothex")
    assert st == 404, (st, e)


def test_auth(s):
    st, e = post(s, group_body(n=1), headers={"Content-Type": "application/json"})
    assert st == 401, (st, e)
    st, e = post(s, group_body(n=1), headers={"Authorization": "Bearer wrong", "Content-Type": "application/json"})
    assert st == 401, (st, e)
    st, e = call(s, "GET", "/api/rollouts/" + "0" * 32, headers={})
    assert st == 401, (st, e)


# ---- stack 2: a 1.5 s model, max_tasks 4, 2 kept for people ------------------

def test_failing_sample_is_classified_and_the_others_finish(s):
    st, g = post(s, group_body("42", 42, n=2))
    assert st == 201, (st, g)
    x = wait_group(s, g["id"], until=lambda y: all(z["status"] == "running" for z in y["samples"]))
    victim = x["samples"][0]["task_id"]
    st, _, _ = s.request("POST", "/api/tasks/%s/cancel" % victim)
    assert st in (200, 202), st
    done = wait_group(s, g["id"])
    a, b = done["samples"]
    assert a["outcome"] == "cancelled" and a["reward"] is None, a
    assert b["outcome"] == "ok" and b["reward"] == 1, b
    assert done["status"] == "done", done


def test_long_poll(s):
    st, g = post(s, group_body("42", 42, n=1))
    assert st == 201, (st, g)
    t0 = time.time()
    st, x = call(s, "GET", "/api/rollouts/%s?wait=1" % g["id"])
    took = time.time() - t0
    assert st == 200 and x["status"] == "running", (st, x)
    assert 0.9 <= took < 5, took  # it waited, and not past its limit
    st, x = call(s, "GET", "/api/rollouts/%s?wait=60" % g["id"])
    assert st == 200 and x["status"] == "done", (st, x)
    assert time.time() - t0 < 60
    st, e = call(s, "GET", "/api/rollouts/%s?wait=61" % g["id"])
    assert st == 400, (st, e)


def test_cancel_of_a_group(s):
    st, g = post(s, group_body("42", 42, n=6))
    assert st == 201, (st, g)
    wait_group(s, g["id"], until=lambda y: any(z["status"] == "running" for z in y["samples"]))
    st, e = call(s, "POST", "/api/rollouts/%s/cancel" % g["id"])
    assert st == 202 and e["status"] == "cancelled", (st, e)
    st, e = call(s, "POST", "/api/rollouts/%s/cancel" % g["id"])
    assert st == 409, (st, e)
    done = wait_group(s, g["id"], until=lambda y: all(z["status"] == "done" for z in y["samples"]))
    assert done["status"] == "cancelled", done
    outs = [z["outcome"] for z in done["samples"]]
    assert all(o in OUTCOMES for o in outs), outs
    assert outs.count("cancelled") >= 4, outs  # the queued ones at once, the running ones stopped
    for z in done["samples"]:
        if z["task_id"]:
            st, t = call(s, "GET", "/api/tasks/" + z["task_id"], headers={})
            assert t["status"] in ("succeeded", "cancelled", "failed"), t


def test_people_still_admitted_during_a_big_group(s):
    st, g = post(s, group_body("42", 42, n=16))
    assert st == 201, (st, g)
    peak = 0
    deadline = time.time() + 30
    while time.time() < deadline and peak < 2:
        st, x = call(s, "GET", "/api/rollouts/" + g["id"])
        peak = max(peak, sum(1 for z in x["samples"] if z["status"] == "running"))
        time.sleep(0.1)
    assert peak == 2, peak  # max_tasks 4 less the 2 kept for people
    st, t1 = s.create_task("a person's question LLM-ANSWER[1]")
    assert st == 201, (st, t1)
    st, t2 = s.create_task("another one LLM-ANSWER[2]")
    assert st == 201, (st, t2)
    for _ in range(10):
        st, x = call(s, "GET", "/api/rollouts/" + g["id"])
        assert sum(1 for z in x["samples"] if z["status"] == "running") <= 2, x
        time.sleep(0.1)
    call(s, "POST", "/api/rollouts/%s/cancel" % g["id"])
    s.wait_task(t1["id"])
    s.wait_task(t2["id"])


def test_web_restart_goes_on_with_the_groups(s):
    st, g = post(s, group_body("42", 42, n=4))
    assert st == 201, (st, g)
    wait_group(s, g["id"], until=lambda y: any(z["status"] == "running" for z in y["samples"]))
    s.kill("web", signal.SIGKILL)
    s.restart("web")
    done = wait_group(s, g["id"])
    assert done["status"] == "done", done
    assert [z["outcome"] for z in done["samples"]] == ["ok"] * 4, done["samples"]
    assert [z["reward"] for z in done["samples"]] == [1] * 4, done["samples"]


# ---- stack 3: users --------------------------------------------------------

def new_user(name):
    out = subprocess.check_output([LLMBOX, "user", "add", name], text=True,
                                  env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LLMBOX_CONF": "/dev/null"})
    tok = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("lbx_")][0]
    hsh = [ln.split("=", 1)[1].strip() for ln in out.splitlines() if ln.startswith("token_sha256 =")][0]
    return tok, hsh


def test_users_see_their_own_groups_only(s, ta, tb):
    ha = {"Authorization": "Bearer " + ta, "Content-Type": "application/json"}
    hb = {"Authorization": "Bearer " + tb, "Content-Type": "application/json"}
    st, g = post(s, group_body("42", 42, n=1), headers=ha)
    assert st == 201, (st, g)
    done = wait_group(s, g["id"], headers=ha)
    assert done["samples"][0]["reward"] == 1, done
    tid = done["samples"][0]["task_id"]
    st, e = call(s, "GET", "/api/rollouts/" + g["id"], headers=hb)
    assert st == 404, (st, e)
    st, e = call(s, "POST", "/api/rollouts/%s/cancel" % g["id"], headers=hb)
    assert st == 404, (st, e)
    st, e = call(s, "GET", "/api/rollouts/" + g["id"])  # the sandbox token did not make it
    assert st == 404, (st, e)
    st, t = call(s, "GET", "/api/tasks/" + tid, headers=ha)
    assert st == 200 and t["status"] == "succeeded", (st, t)
    st, t = call(s, "GET", "/api/tasks/" + tid, headers=hb)
    assert st == 404, (st, t)
    st, e = call(s, "GET", "/api/rollouts/" + g["id"], headers={})
    assert st == 401, (st, e)
    # the sandbox token works with users too, and its groups are its own
    st, g2 = post(s, group_body("42", 42, n=1))
    assert st == 201, (st, g2)
    st, e = call(s, "GET", "/api/rollouts/" + g2["id"], headers=ha)
    assert st == 404, (st, e)
    wait_group(s, g2["id"])


# ---- stack 4: the operator allows a trainer's own endpoint -------------------

def test_model_url(s):
    # the configured model "dead" answers nothing: a sample on it is a model error
    st, g = post(s, group_body("42", 42, n=1, model="dead", max_turns=3))
    assert st == 201, (st, g)
    x = wait_group(s, g["id"])["samples"][0]
    assert x["outcome"] == "model_error" and x["reward"] is None, x
    # the same with the trainer's endpoint (the fake model) and its own model id
    body = group_body("42", 42, n=2, model="dead", model_url=s.model_url, model_id="trainer-policy-7")
    st, g = post(s, body)
    assert st == 201, (st, g)
    done = wait_group(s, g["id"])
    assert [z["reward"] for z in done["samples"]] == [1, 1], done["samples"]
    ids, secret = set(), 0
    for name in os.listdir(s.model_log):
        with open(os.path.join(s.model_log, name)) as f:
            text = f.read()
        secret += "dead-model-secret-key" in text
        if name.startswith("request-"):
            ids.add(json.loads(text).get("model"))
    assert "trainer-policy-7" in ids, ids
    assert secret == 0, "the operator's API key reached the client's endpoint"
    for bad in ("ftp://x/v1", "http://user:pw@127.0.0.1/v1", "http:///v1", "http://a b/v1"):
        st, e = post(s, dict(body, model_url=bad))
        assert st == 400 and "model_url" in e["error"]["message"], (bad, st, e)


def main():
    if not image_ready():
        print("SKIP rollouts: the sandbox image is not built (make image)")
        return
    rep = Reporter()
    web_env = {"LLMBOX_SANDBOX_API_TOKEN": TOKEN}
    env = {"LLMBOX_MAX_TASKS": "8"}
    with Stack(scenario={"eval": True}, env=env, web_env=web_env) as s:
        rep.run("auth", test_auth, s)
        rep.run("refusals", test_refusals, s)
        rep.run("group_of_four_with_rewards_right_and_wrong", test_group_of_four_with_rewards_right_and_wrong, s)
        rep.run("batch_form", test_batch_form, s)
        rep.run("system_prompt_and_tools", test_system_prompt_and_tools, s)
        rep.run("hung_scorer_is_a_scorer_timeout_and_holds_no_slot",
                test_hung_scorer_is_a_scorer_timeout_and_holds_no_slot, s)
    env = {"LLMBOX_MAX_TASKS": "4", "LLMBOX_EVAL_RESERVE_SLOTS": "2", "LLMBOX_AGENT_SPARE": "0"}
    with Stack(scenario={"eval": True}, model_args=["--delay-ms", "1500"], env=env, web_env=web_env) as s:
        rep.run("failing_sample_is_classified_and_the_others_finish",
                test_failing_sample_is_classified_and_the_others_finish, s)
        rep.run("long_poll", test_long_poll, s)
        rep.run("cancel_of_a_group", test_cancel_of_a_group, s)
        rep.run("people_still_admitted_during_a_big_group", test_people_still_admitted_during_a_big_group, s)
        rep.run("web_restart_goes_on_with_the_groups", test_web_restart_goes_on_with_the_groups, s)
    (ta, ha), (tb, hb) = new_user("alice"), new_user("bob")
    conf = '[user "alice"]\ntoken_sha256 = %s\n[user "bob"]\ntoken_sha256 = %s\n' % (ha, hb)
    with Stack(scenario={"eval": True}, conf=conf, web_env=web_env) as s:
        rep.run("users_see_their_own_groups_only", test_users_see_their_own_groups_only, s, ta, tb)
    conf = '[model "dead"]\nbase_url = http://127.0.0.1:9/v1\nmodel = dead-id\napi_key_env = DEAD_KEY\nretries = 0\n'
    env = {"LLMBOX_ROLLOUT_ALLOW_MODEL_URL": "1", "DEAD_KEY": "dead-model-secret-key",
           # the trainer's endpoint here is the fake model on loopback, which
           # a task's model_url reaches only where the operator lists it
           "LLMBOX_ROLLOUT_MODEL_URL_ALLOW": "127.0.0.1"}
    with Stack(scenario={"eval": True}, conf=conf, env=env, web_env=web_env) as s:
        rep.run("model_url", test_model_url, s)
    rep.done()


if __name__ == "__main__":
    main()
