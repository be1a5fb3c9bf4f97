"""Exact tokens (RL rollouts): a model with capture_tokens = true makes the
agent ask the inference server for token ids and log-probabilities and
store, per turn, exactly what came back, in trajectory.json (NeMo Gym's
names) and tokens.jsonl, served at GET /api/tasks/{id}/tokens.jsonl to the
task's owner only.

Against the real stack (web, agent, sandboxd, nginx) and the fake model's
token shapes (tests/fake_model.py, "Exact tokens"): vLLM's, SGLang's two, a
server that returns no ids (marked missing, never filled in), one whose
lengths disagree (refused with the reason). Every stored array is compared
with the answer the fake server kept (response-NNNN.json): the ids equal,
the log-probabilities the same doubles bit for bit. A 64k-token prompt's
arrays reach neither the event stream nor the task JSON the page reads."""
import hashlib
import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stack import LLMBOX, Reporter, Stack, image_ready  # noqa: E402


def step(calls, tokens, **kw):
    s = {"tool_calls": [{"name": n, "arguments": a} for n, a in calls], "tokens": tokens}
    s.update(kw)
    return s


def two_turns(tokens, **kw):
    return [step([("bash", {"command": "echo hi"})], tokens, **kw),
            step([("finish", {"answer": "done"})], tokens, **kw)]


SCENARIOS = {"scenarios": [
    {"match": "[tok-vllm]", "steps": two_turns("vllm")},
    {"match": "[tok-sglang]", "steps": two_turns("sglang")},
    {"match": "[tok-sglext]", "steps": two_turns("sglext")},
    {"match": "[tok-none]", "steps": two_turns("none")},
    {"match": "[tok-mismatch]", "steps": two_turns("mismatch")},
    {"match": "[tok-llm]", "steps": [{"content": "The answer is 42.", "tokens": "sglext"}]},
    {"match": "[tok-big]", "steps": [step([("finish", {"answer": "big"})], "vllm", prompt_len=65536,
                                          gen_len=2048)]},
]}


def new_user(name):
    """(token, sha256) as `llmbox user add NAME` prints them."""
    out = subprocess.check_output([LLMBOX, "user", "add", name], text=True,
                                  env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LLMBOX_CONF": "/dev/null"})
    tok = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("lbx_")][0]
    hsh = [ln.split("=", 1)[1].strip() for ln in out.splitlines() if ln.startswith("token_sha256 =")][0]
    assert hashlib.sha256(tok.encode()).hexdigest() == hsh, out
    return tok, hsh


ALICE, ALICE_H = None, None
BOB, BOB_H = None, None


def conf():
    return """
[model "cap"]
base_url = {model_url}
model = fake-model
capture_tokens = true

[model "plain"]
base_url = {model_url}
model = fake-model

[user "alice"]
token_sha256 = %s

[user "bob"]
token_sha256 = %s
""" % (ALICE_H, BOB_H)


def req(s, method, path, who=None, body=None, headers=None):
    h = dict(headers or {})
    h["Authorization"] = "Bearer " + (who or ALICE)
    return s.request(method, path, body, h)


def get_json(s, path, who=None):
    st, _, body = req(s, "GET", path, who)
    return st, (json.loads(body) if body else None)


def run_task(s, marker, model="cap"):
    from stack import multipart
    ctype, body = multipart({"prompt": "Say hi %s" % marker, "model": model}, [])
    st, _, resp = req(s, "POST", "/api/tasks", body=body, headers={"Content-Type": ctype})
    assert st in (200, 201, 202), (st, resp)
    tid = json.loads(resp)["id"]
    import time
    deadline = time.time() + 120
    while time.time() < deadline:
        st, t = get_json(s, "/api/tasks/" + tid)
        if st == 200 and t["status"] in ("succeeded", "failed", "cancelled"):
            return tid, t
        time.sleep(0.1)
    raise AssertionError("task %s did not end" % tid)


def trajectory(s, tid):
    st, _, body = req(s, "GET", "/api/tasks/%s/trajectory" % tid)
    assert st == 200, (st, body[:300])
    return json.loads(body), body


def tokens_jsonl(s, tid, who=None):
    st, hdr, body = req(s, "GET", "/api/tasks/%s/tokens.jsonl" % tid, who)
    return st, hdr, body


def sent(s, marker):
    """The answers the fake server sent for marker's conversation, by turn
    (0-based): what the stored arrays must equal."""
    out = {}
    with open(os.path.join(s.model_log, "requests.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r["match"] == marker:
                path = os.path.join(s.model_log, "response-%04d.json" % r["n"])
                if os.path.exists(path):
                    with open(path) as g:
                        out[r["turn"]] = json.load(g)
    return out


def bits(xs):
    return [struct.pack("<d", x) for x in xs]


def events_text(s, tid):
    st, _, body = req(s, "GET", "/api/tasks/%s/events" % tid, headers={"Accept": "text/event-stream"})
    assert st == 200, st
    return body


def expect_ok(s, marker, shape_prompt):
    tid, t = run_task(s, marker)
    assert t["status"] == "succeeded", t
    traj, _ = trajectory(s, tid)
    answers = sent(s, marker)
    turns = traj["turns"]
    assert len(turns) == 2 and len(answers) == 2, (len(turns), sorted(answers))
    for k, turn in enumerate(turns):
        a = answers[k]
        ch = a["choices"][0]
        want_prompt = shape_prompt(a)
        want_gen = ch.get("token_ids") or a.get("sglext", {}).get("output_ids", [[None]])[0]
        want_lp = [e["logprob"] for e in ch["logprobs"]["content"]]
        assert turn["tokens_status"] == "ok", turn.get("tokens_error")
        assert turn["prompt_token_ids"] == want_prompt
        assert turn["generation_token_ids"] == want_gen
        got_lp = turn["generation_log_probs"]
        assert all(isinstance(x, float) for x in got_lp), got_lp[:5]
        assert bits(got_lp) == bits(want_lp), (got_lp, want_lp)
        assert turn["finish_reason"] == ch["finish_reason"]
        assert "tokens_error" not in turn
    assert traj["usage"]["tokens_captured"] == {"ok": 2, "turns": 2}, traj["usage"]
    assert t["usage"]["tokens_captured"] == {"ok": 2, "turns": 2}, t["usage"]
    assert traj["config"]["options"].get("capture_tokens") is True
    # the compact form: the same arrays, one line per turn
    st, hdr, body = tokens_jsonl(s, tid)
    assert st == 200, (st, body[:200])
    assert hdr.get("content-type", "").startswith("application/x-ndjson"), hdr
    lines = [json.loads(x) for x in body.decode().splitlines()]
    assert [x["turn"] for x in lines] == [1, 2]
    for line, turn in zip(lines, turns):
        assert set(line) == {"turn", "prompt_token_ids", "generation_token_ids", "generation_log_probs",
                             "finish_reason", "tokens_status"}, sorted(line)
        for k in ("prompt_token_ids", "generation_token_ids", "finish_reason", "tokens_status"):
            assert line[k] == turn[k], k
        assert bits(line["generation_log_probs"]) == bits(turn["generation_log_probs"])
    return tid


def test_vllm(s):
    expect_ok(s, "[tok-vllm]", lambda a: a["prompt_token_ids"])
    # what the agent asked for
    with open(os.path.join(s.model_log, "requests.jsonl")) as f:
        n = [json.loads(x)["n"] for x in f if json.loads(x)["match"] == "[tok-vllm]"][0]
    with open(os.path.join(s.model_log, "request-%04d.json" % n)) as f:
        r = json.load(f)
    assert r.get("return_token_ids") is True and r.get("logprobs") is True and r.get("top_logprobs") == 0, r


def test_sglang(s):
    expect_ok(s, "[tok-sglang]", lambda a: a["choices"][0]["prompt_token_ids"])


def test_sglext(s):
    expect_ok(s, "[tok-sglext]", lambda a: a["sglext"]["input_ids"])


def test_none_is_missing(s):
    tid, t = run_task(s, "[tok-none]")
    assert t["status"] == "succeeded", t  # the task itself is fine; its tokens are not
    traj, _ = trajectory(s, tid)
    for turn in traj["turns"]:
        assert turn["tokens_status"] == "missing", turn
        assert "no generated token ids" in turn["tokens_error"], turn["tokens_error"]
        # never filled in
        assert turn["prompt_token_ids"] is None and turn["generation_token_ids"] is None
        assert turn["generation_log_probs"] is None
    assert t["usage"]["tokens_captured"] == {"ok": 0, "turns": 2}, t["usage"]
    st, _, body = tokens_jsonl(s, tid)
    lines = [json.loads(x) for x in body.decode().splitlines()]
    assert [x["tokens_status"] for x in lines] == ["missing", "missing"], lines
    assert all(x["generation_token_ids"] is None and x["tokens_error"] for x in lines), lines


def test_mismatch_refused(s):
    tid, t = run_task(s, "[tok-mismatch]")
    traj, _ = trajectory(s, tid)
    answers = sent(s, "[tok-mismatch]")
    for k, turn in enumerate(traj["turns"]):
        n_ids = len(answers[k]["choices"][0]["token_ids"])
        assert turn["tokens_status"] == "mismatch", turn
        assert turn["tokens_error"] == ("The model server returned %d generated token ids but %d "
                                        "log-probabilities." % (n_ids, n_ids - 1)), turn["tokens_error"]
        # refused: nothing kept that could pass for exact
        assert turn["prompt_token_ids"] is None and turn["generation_token_ids"] is None
        assert turn["generation_log_probs"] is None
    assert t["usage"]["tokens_captured"] == {"ok": 0, "turns": 2}, t["usage"]


def test_off_by_default(s):
    tid, t = run_task(s, "[tok-vllm]", model="plain")
    traj, _ = trajectory(s, tid)
    assert all("tokens_status" not in x and "prompt_token_ids" not in x for x in traj["turns"])
    assert "tokens_captured" not in t["usage"], t["usage"]
    st, _, body = tokens_jsonl(s, tid)
    assert st == 404 and b"did not capture them" in body, (st, body)
    with open(os.path.join(s.model_log, "requests.jsonl")) as f:
        n = [json.loads(x)["n"] for x in f if json.loads(x)["match"] == "[tok-vllm]"][-1]
    with open(os.path.join(s.model_log, "request-%04d.json" % n)) as f:
        r = json.load(f)
    assert "return_token_ids" not in r and "logprobs" not in r, r


def test_access_rule(s):
    tid, _ = run_task(s, "[tok-sglang]")
    st, _, _ = tokens_jsonl(s, tid)
    assert st == 200
    st, _, body = tokens_jsonl(s, tid, who=BOB)  # another user: as if it did not exist
    assert st == 404, (st, body)
    st, _, body = s.request("GET", "/api/tasks/%s/tokens.jsonl" % tid)  # no credentials
    assert st == 401, (st, body)
    st, _, body = tokens_jsonl(s, "0" * 32)
    assert st == 404, (st, body)


def test_big_not_in_events(s):
    """A 64k-token prompt: the arrays are in the trajectory, not in the
    event stream or the task JSON the page reads."""
    tid, t = run_task(s, "[tok-big]")
    traj, raw = trajectory(s, tid)
    turn = traj["turns"][0]
    assert turn["tokens_status"] == "ok", turn.get("tokens_error")
    assert len(turn["prompt_token_ids"]) == 65536 and len(turn["generation_token_ids"]) == 2048
    answers = sent(s, "[tok-big]")
    assert turn["prompt_token_ids"] == answers[0]["prompt_token_ids"]
    ev = events_text(s, tid)
    st, _, task_body = req(s, "GET", "/api/tasks/" + tid)
    for body, what in ((ev, "events"), (task_body, "task JSON")):
        for key in (b"prompt_token_ids", b"generation_token_ids", b"generation_log_probs"):
            assert key not in body, "%s carries %s" % (what, key)
        assert len(body) < 64 * 1024, "%s is %d bytes" % (what, len(body))
    assert b'"tokens_status":"ok"' in ev  # the verdict is there
    assert len(raw) > 65536 * 2  # and the arrays are in the file


def test_cli_option_llm_mode(s):
    """The task option (llmbox run --capture-tokens) turns capture on for a
    model whose setting is off, in the llm mode too."""
    out = os.path.join(s.prefix, "run-tokens")
    p = subprocess.run([LLMBOX, "run", "--mode", "llm", "--model", "plain", "--capture-tokens", "-o", out,
                        "What is 6 x 7? [tok-llm]"],
                       cwd=s.prefix, env=dict(s.env, LLMBOX_SANDBOXD_SOCKET="/nonexistent/sandboxd.sock"),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert p.returncode == 0, p.stdout
    with open(os.path.join(out, "trajectory.json")) as f:
        tr = json.load(f)
    turn = tr["turns"][0]
    a = sent(s, "[tok-llm]")[0]
    assert turn["tokens_status"] == "ok", turn.get("tokens_error")
    assert turn["prompt_token_ids"] == a["sglext"]["input_ids"]
    assert turn["generation_token_ids"] == a["sglext"]["output_ids"][0]
    assert bits(turn["generation_log_probs"]) == bits([e["logprob"] for e in a["choices"][0]["logprobs"]["content"]])
    assert tr["config"]["options"]["capture_tokens"] is True and tr["usage"]["tokens_captured"] == {"ok": 1, "turns": 1}
    with open(os.path.join(out, "tokens.jsonl")) as f:
        lines = [json.loads(x) for x in f]
    assert len(lines) == 1 and lines[0]["generation_token_ids"] == turn["generation_token_ids"], lines


def main():
    global ALICE, ALICE_H, BOB, BOB_H
    r = Reporter()
    if not image_ready():
        print("SKIP tokens: the sandbox image is not built (make image)")
        return
    ALICE, ALICE_H = new_user("alice")
    BOB, BOB_H = new_user("bob")
    with Stack(SCENARIOS, conf=conf()) as s:
        r.run("tokens_vllm_shape_stored_exactly", test_vllm, s)
        r.run("tokens_sglang_shape_stored_exactly", test_sglang, s)
        r.run("tokens_sglext_shape_stored_exactly", test_sglext, s)
        r.run("tokens_server_without_ids_marked_missing", test_none_is_missing, s)
        r.run("tokens_mismatched_lengths_refused", test_mismatch_refused, s)
        r.run("tokens_off_unless_asked", test_off_by_default, s)
        r.run("tokens_jsonl_owner_only", test_access_rule, s)
        r.run("tokens_64k_not_in_events_or_task_json", test_big_not_in_events, s)
        r.run("tokens_task_option_cli_llm_mode", test_cli_option_llm_mode, s)
    r.done()


if __name__ == "__main__":
    main()
