"""Task options for evaluations (the evaluation harness): the llm mode, the two layouts,
the answer file, official tool names and bad options, through `llmbox
agent --task` on stored tasks (read back through the API) and through
`llmbox run`, against the fake model's eval behaviour
(tests/fake_model.py, {"eval": true}) and the real sandboxd."""
import json
import os
import sqlite3
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import LLMBOX, Reporter, Skip, Stack, image_ready  # noqa: E402

CONF = """
[model "official"]
base_url = {model_url}
model = fake-model
tool_names = official
"""


def toks(text):
    """The fake model's token count of a text: ceil(chars / 4)."""
    return (len(text) + 3) // 4


class Eval:
    def __init__(self, stack):
        self.s = stack
        self.db = os.path.join(stack.prefix, "var", "web", "llmbox.db")
        self.seen = 0  # model requests already looked at

    def task(self, prompt, options=None, inputs=None, model=None):
        """A queued task as the web would store it, with its input files."""
        tid = uuid.uuid4().hex
        listed = []
        if inputs:
            d = os.path.join(self.s.prefix, "artifacts", tid, "input")
            os.makedirs(d)
            for name, data in inputs.items():
                with open(os.path.join(d, name), "wb") as f:
                    f.write(data)
                listed.append({"path": name, "size": len(data)})
        db = sqlite3.connect(self.db, timeout=10)
        with db:
            db.execute("INSERT INTO tasks(id, status, prompt, model, max_turns, created_ms, inputs, options)"
                       " VALUES(?, 'queued', ?, ?, 10, ?, ?, ?)",
                       (tid, prompt, model, int(time.time() * 1000), json.dumps(listed),
                        None if options is None else (options if isinstance(options, str) else json.dumps(options))))
        db.close()
        return tid

    def run(self, tid, env=None):
        """Runs the task's agent to its end; the task as the API shows it."""
        p = subprocess.run([LLMBOX, "agent", "--task", tid], cwd=self.s.prefix, env=dict(self.s.env, **(env or {})),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
        st, t = self.s.get_json("/api/tasks/" + tid)
        assert st == 200, (st, t)
        assert t["status"] in ("succeeded", "failed"), (t, p.stdout[-2000:])
        return t

    def requests(self):
        """The model requests made since the last call, in order."""
        out = []
        d = self.s.model_log
        while os.path.exists(os.path.join(d, "request-%04d.json" % (self.seen + 1))):
            self.seen += 1
            with open(os.path.join(d, "request-%04d.json" % self.seen)) as f:
                out.append(json.load(f))
        return out

    def trajectory(self, tid):
        with open(os.path.join(self.s.prefix, "artifacts", tid, "trajectory.json")) as f:
            return json.load(f)


def llm_mode(e):
    prompt = "What is six times seven? LLM-ANSWER[42]"
    tid = e.task(prompt, {"mode": "llm", "max_tokens": 321})
    e.requests()
    # no sandbox at all: a sandboxd that cannot be reached changes nothing
    t = e.run(tid, {"LLMBOX_SANDBOXD_SOCKET": "/nonexistent/sandboxd.sock"})
    assert t["status"] == "succeeded", t
    assert t["answer"] == "The answer is 42.", t
    assert t["options"] == {"mode": "llm", "max_tokens": 321}, t["options"]
    u = t["usage"]
    assert t["turns"] == 1 and u["prompt_tokens"] == toks(prompt), (t["turns"], u)
    assert u["completion_tokens"] == toks("The answer is 42."), u
    assert u["environment_tokens"] == 0 and u["tools_ms"] == 0 and u["sandbox_ms"] == 0, u
    assert u["answer_source"] == "reply", u
    reqs = e.requests()
    assert len(reqs) == 1, reqs
    r = reqs[0]
    assert r["messages"] == [{"role": "user", "content": prompt}], r["messages"]
    assert "tools" not in r and r.get("max_tokens") == 321, r
    tr = e.trajectory(tid)
    assert tr["status"] == "succeeded" and tr["answer"] == "The answer is 42.", tr
    assert len(tr["turns"]) == 1 and tr["tools"] == [], tr
    assert [m["role"] for m in tr["messages"]] == ["user", "assistant"], tr["messages"]
    assert tr["config"]["options"]["mode"] == "llm" and tr["usage"]["answer_source"] == "reply", tr


def context_retry(e):
    prompt = "Long question CTX-ERROR-ONCE LLM-ANSWER[7]"
    tid = e.task(prompt, {"mode": "llm", "max_tokens": 2000})
    e.requests()
    t = e.run(tid)
    assert t["status"] == "succeeded" and t["answer"] == "The answer is 7.", t
    reqs = e.requests()
    assert len(reqs) == 2, len(reqs)
    # vLLM said 3000 tokens of prompt in a 4096 context: the retry asks less
    assert reqs[0]["max_tokens"] == 2000 and 0 < reqs[1]["max_tokens"] < 1096, [r["max_tokens"] for r in reqs]
    assert t["turns"] == 1 and t["usage"]["prompt_tokens"] == toks(prompt), t
    assert e.trajectory(tid)["config"]["model"]["max_tokens"] == reqs[1]["max_tokens"]
    # a context error that stays: the task fails with the reason
    tid = e.task("Too long CTX-ERROR-ALWAYS", {"mode": "llm"})
    t = e.run(tid)
    assert t["status"] == "failed" and "no longer fits the model's context" in t["reason"], t
    assert t["answer"] is None and t["usage"]["answer_source"] == "none", t
    assert len(e.requests()) == 2


def layout_official(e):
    prompt = "Read the document. ANSWER-FROM-INPUT[doc.txt]"
    tid = e.task(prompt, {"layout": "official", "answer_file": True}, {"doc.txt": b"forty-two  \n\n"})
    e.requests()
    t = e.run(tid)
    assert t["status"] == "succeeded", t
    # the file, trailing whitespace trimmed: the command ran where the prompt said
    assert t["answer"] == "forty-two" and t["usage"]["answer_source"] == "file", t
    reqs = e.requests()
    inst = reqs[0]["messages"][1]["content"]
    assert "/testbed/documents" in inst and "/testbed/answer.txt" in inst and "/testbed/input" not in inst, inst
    calls = [c for m in e.trajectory(tid)["messages"] for c in m.get("tool_calls") or []]
    call = json.loads(calls[0]["function"]["arguments"])
    assert call["command"] == "cat /testbed/documents/doc.txt > /testbed/answer.txt", call
    finish = [d for d in reqs[0]["tools"] if d["function"]["name"] == "finish"][0]
    assert "/testbed/answer.txt" in finish["function"]["description"], finish


def layout_llmbox(e):
    tid = e.task("Same, our way. ANSWER-FROM-INPUT[doc.txt]", {"layout": "llmbox", "answer_file": "1"},
                 {"doc.txt": b"6 x 7\n"})
    e.requests()
    t = e.run(tid)
    assert t["status"] == "succeeded" and t["answer"] == "6 x 7", t
    assert t["usage"]["answer_source"] == "file", t
    inst = e.requests()[0]["messages"][1]["content"]
    assert "/testbed/input" in inst and "/testbed/output/answer.txt" in inst, inst
    # the answer file is an output too, as before
    assert [a["path"] for a in t["artifacts"]] == ["answer.txt"], t["artifacts"]
    # the fake model's counts are exact: the second prompt grew by the reply
    # and the observation, so the environment tokens of turn 1 are the
    # observation's ceil(chars / 4), from the endpoint's counts
    tr = e.trajectory(tid)
    obs = [m for m in tr["messages"] if m["role"] == "tool"][0]["content"]
    u1 = tr["turns"][0]["usage"]
    assert u1["environment_tokens"] == toks(obs) and u1["environment_estimated"] is False, (u1, obs)


def answer_fallbacks(e):
    # no answer file: the finish tool's answer
    tid = e.task("Nothing written. FINISH-ANSWER[99]", {"layout": "official", "answer_file": True})
    t = e.run(tid)
    assert t["status"] == "succeeded" and t["answer"] == "99" and t["usage"]["answer_source"] == "finish", t
    # neither
    tid = e.task("Nothing at all.", {"layout": "official", "answer_file": True})
    t = e.run(tid)
    assert t["status"] == "succeeded" and t["answer"] is None and t["usage"]["answer_source"] == "none", t
    # a file wins over the finish answer
    tid = e.task("Both. SANDBOX-ANSWER[file one] FINISH-ANSWER[finish one]", {"answer_file": True})
    t = e.run(tid)
    assert t["answer"] == "file one" and t["usage"]["answer_source"] == "file", t
    e.requests()


def big_answer_capped(e):
    tid = e.task("A huge answer. BIG-ANSWER[1048576]", {"layout": "official", "answer_file": True})
    t = e.run(tid)
    assert t["status"] == "succeeded" and t["usage"]["answer_source"] == "file", t
    assert t["answer"] == "x" * 65536, len(t["answer"] or "")
    e.requests()


def official_tool_names(e):
    tid = e.task("Official names. SANDBOX-ANSWER[7]",
                 {"tool_names": "official", "layout": "official", "answer_file": True})
    e.requests()
    t = e.run(tid)
    assert t["status"] == "succeeded" and t["answer"] == "7", t
    reqs = e.requests()
    names = {d["function"]["name"] for d in reqs[0]["tools"]}
    assert {"execute_bash", "str_replace_editor", "submit"} <= names, names
    assert not names & {"bash", "file_editor", "finish"}, names
    system = reqs[0]["messages"][0]["content"]
    assert "`execute_bash`" in system and "`submit`" in system and "`bash`" not in system, system
    tr = e.trajectory(tid)
    called = [c["function"]["name"] for m in tr["messages"] for c in m.get("tool_calls") or []]
    assert called == ["execute_bash", "submit"], called
    assert {d["function"]["name"] for d in tr["tools"]} == names
    assert tr["config"]["options"]["tool_names"] == "official", tr["config"]
    db = sqlite3.connect(e.db, timeout=10)
    tools = [json.loads(d)["name"] for (d,) in
             db.execute("SELECT data FROM events WHERE task_id = ? AND type = 'tool' ORDER BY seq", (tid,))]
    db.close()
    assert tools == ["execute_bash", "submit"], tools
    # the model's setting (tool_names = official in llmbox.conf), no option
    tid = e.task("By the model. SANDBOX-ANSWER[8]", {"answer_file": True}, model="official")
    t = e.run(tid)
    assert t["status"] == "succeeded" and t["answer"] == "8", t
    names = {d["function"]["name"] for d in e.requests()[0]["tools"]}
    assert "execute_bash" in names and "bash" not in names, names
    # and the option wins over the model's setting
    tid = e.task("Ours after all. SANDBOX-ANSWER[9]", {"answer_file": True, "tool_names": "llmbox"}, model="official")
    t = e.run(tid)
    assert t["answer"] == "9" and "bash" in {d["function"]["name"] for d in e.requests()[0]["tools"]}, t


def bad_options(e):
    e.requests()
    cases = [({"mode": "fast"}, ["mode", "fast"]), ({"colour": "red"}, ["colour"]),
             ({"layout": 3}, ["layout"]), ({"max_tokens": 0}, ["max_tokens"]),
             ({"answer_file": "yes"}, ["answer_file"]), ("[1, 2]", ["not a JSON object"])]
    for opts, words in cases:
        tid = e.task("never asked", opts)
        t = e.run(tid)
        assert t["status"] == "failed" and t["reason"].startswith("bad task options: "), (opts, t)
        assert all(w in t["reason"] for w in words), (opts, t["reason"])
    assert e.requests() == [], "a task with bad options reached the model"


def rerun_copies_options(e):
    tid = e.task("Again. LLM-ANSWER[1]", {"mode": "llm"})
    e.run(tid)
    st, _, body = e.s.request("POST", "/api/tasks/%s/rerun" % tid)
    assert st == 201, (st, body)
    t = json.loads(body)
    assert t["options"] == {"mode": "llm"} and t["rerun_of"] == tid, t
    t = e.s.wait_task(t["id"])
    assert t["status"] == "succeeded" and t["answer"] == "The answer is 1.", t
    e.requests()


def cli_run(e):
    s = e.s
    out = os.path.join(s.prefix, "run-llm")
    p = subprocess.run([LLMBOX, "run", "--mode", "llm", "--max-tokens", "50", "-o", out, "Quick. LLM-ANSWER[5]"],
                       cwd=s.prefix, env=dict(s.env, LLMBOX_SANDBOXD_SOCKET="/nonexistent/sandboxd.sock"),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert p.returncode == 0 and "The answer is 5." in p.stdout, p.stdout
    tr = json.load(open(os.path.join(out, "trajectory.json")))
    assert tr["answer"] == "The answer is 5." and tr["usage"]["turns"] == 1, tr
    assert e.requests()[0]["max_tokens"] == 50
    out = os.path.join(s.prefix, "run-official")
    p = subprocess.run([LLMBOX, "run", "--layout", "official", "--tool-names", "official", "--answer-file",
                        "-o", out, "CLI. SANDBOX-ANSWER[3]"],
                       cwd=s.prefix, env=s.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=180)
    assert p.returncode == 0, p.stdout
    tr = json.load(open(os.path.join(out, "trajectory.json")))
    assert tr["answer"] == "3" and tr["usage"]["answer_source"] == "file", tr
    assert [c["function"]["name"] for m in tr["messages"] for c in m.get("tool_calls") or []] == \
        ["execute_bash", "submit"], tr["messages"]
    e.requests()
    p = subprocess.run([LLMBOX, "run", "--mode", "fast", "x"], cwd=s.prefix, env=s.env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)
    assert p.returncode == 2 and "mode" in p.stdout and "fast" in p.stdout, p.stdout


def main():
    rep = Reporter()
    if not image_ready():
        print("SKIP eval_modes: the sandbox image is not built (make image)")
        return
    s = Stack(scenario={"eval": True}, conf=CONF).start()
    try:
        e = Eval(s)
        for name, fn in [("llm_mode", llm_mode), ("context_retry", context_retry),
                         ("layout_official", layout_official), ("layout_llmbox", layout_llmbox),
                         ("answer_fallbacks", answer_fallbacks), ("big_answer_capped", big_answer_capped),
                         ("official_tool_names", official_tool_names), ("bad_options", bad_options),
                         ("rerun_copies_options", rerun_copies_options), ("cli_run", cli_run)]:
            rep.run(name, fn, e)
    finally:
        s.stop()
    rep.done()


if __name__ == "__main__":
    try:
        main()
    except Skip as ex:
        print("SKIP eval_modes: %s" % ex)
