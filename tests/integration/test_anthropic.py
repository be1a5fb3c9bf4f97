"""The Anthropic provider end to end: `llmbox run` with
LLMBOX_LLM_PROVIDER=anthropic against the fake model's /v1/messages and the
fake sandbox daemon (no root needed). Checks what was sent (system at the
top level, tools with input_schema, thinking blocks sent back with their
signature, tool_result blocks carrying the tool_use ids, the x-api-key
header) and that the key shows up nowhere else."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.abspath(os.path.join(here, "..", ".."))
binary = os.environ.get("LLMBOX") or os.path.join(repo, os.environ.get("BUILD", "build"), "llmbox")
KEY = "sk-ant-test-secret"
failed = False


def check(name, fn):
    global failed
    try:
        fn()
        print("PASS " + name, flush=True)
    except Exception as e:  # one line per case, like the other suites
        failed = True
        print("FAIL %s: %r" % (name, e), flush=True)


def wait_for(pred, what):
    for _ in range(100):
        if pred():
            return
        time.sleep(0.1)
    raise RuntimeError("timed out waiting for " + what)


class Env:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="llmbox-anthropic-test.")
        self.procs = []
        self.sock = os.path.join(self.tmp, "sandboxd.sock")
        self.procs.append(subprocess.Popen(
            [sys.executable, os.path.join(repo, "tests", "fake_sandboxd.py"), "--socket", self.sock,
             "--root", os.path.join(self.tmp, "sandboxes")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for(lambda: os.path.exists(self.sock), "the fake sandbox daemon")

    def model(self, name, steps):
        sc = os.path.join(self.tmp, name + ".json")
        with open(sc, "w") as f:
            json.dump(steps, f)
        log = os.path.join(self.tmp, name + ".log")
        p = subprocess.Popen([sys.executable, os.path.join(repo, "tests", "fake_model.py"), "--scenario", sc,
                              "--log-dir", log], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.procs.append(p)
        port = int(p.stdout.readline().split()[1])
        return "http://127.0.0.1:%d/v1" % port, log

    def run(self, url, out, prompt):
        env = dict(os.environ, LLMBOX_HOME=repo, LLMBOX_SANDBOXD_SOCKET=self.sock, LLMBOX_LLM_URL=url,
                   LLMBOX_LLM_PROVIDER="anthropic", ANTHROPIC_API_KEY=KEY, NO_COLOR="1")
        env.pop("LLMBOX_LLM_KEY", None)
        env.pop("OPENAI_API_KEY", None)
        return subprocess.run([binary, "run", "-o", out, "--max-turns", "6", prompt], env=env,
                              capture_output=True, text=True, timeout=120)

    def close(self):
        for p in self.procs:
            p.kill()
            p.wait()
        if os.environ.get("KEEP"):
            print("kept " + self.tmp, file=sys.stderr)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


def main():
    if not os.access(binary, os.X_OK):
        print("FAIL anthropic_setup: no llmbox binary at %s (run make first)" % binary)
        return 1
    E = Env()
    try:
        cases(E)
    finally:
        E.close()
    return 1 if failed else 0


def cases(E):
    url, log = E.model("task", [
        {"content": "Writing the file.", "reasoning_content": "A file, then check it.",
         "tool_calls": [
             {"name": "file_editor", "id": "toolu_A",
              "arguments": {"command": "create", "path": "/testbed/output/notes.md", "file_text": "alpha\n"}},
             {"name": "bash", "id": "toolu_B", "arguments": {"command": "cat output/notes.md"}}]},
        {"tool_calls": [
            {"name": "file_editor", "id": "toolu_C",
             "arguments": {"command": "str_replace", "path": "/testbed/output/notes.md",
                           "old_str": "alpha", "new_str": "beta"}},
            {"name": "file_editor", "id": "toolu_D",
             "arguments": {"command": "undo_edit", "path": "/testbed/output/notes.md"}}]},
        {"tool_calls": [{"name": "finish", "id": "toolu_E", "arguments": {"answer": "done"}}]},
    ])
    out = os.path.join(E.tmp, "out")
    res = E.run(url, out, "Write the notes")
    reqs = []

    def load(n):
        with open(os.path.join(log, "request-%04d.json" % n)) as f:
            return json.load(f)

    def succeeded():
        assert res.returncode == 0, (res.returncode, res.stdout[-500:], res.stderr[-500:])
        with open(os.path.join(out, "answer.txt")) as f:
            assert f.read() == "done"
        with open(os.path.join(out, "notes.md")) as f:
            assert f.read() == "alpha\n", "undo_edit did not restore the file"
        reqs.extend(load(n) for n in (1, 2, 3))
    check("anthropic_run_succeeds", succeeded)

    def first_request():
        r1 = reqs[0]
        assert "/testbed/output" in r1["system"], r1.get("system")
        assert all(m["role"] in ("user", "assistant") for m in r1["messages"])
        assert r1["messages"][0]["role"] == "user"
        assert "Write the notes" in json.dumps(r1["messages"][0])
        assert r1["max_tokens"] == 8192
        names = set()
        for t in r1["tools"]:
            assert set(t) <= {"name", "description", "input_schema"}, t
            assert t["input_schema"]["type"] == "object"
            names.add(t["name"])
        assert names >= {"bash", "file_editor", "finish"}, names
        fe = [t for t in r1["tools"] if t["name"] == "file_editor"][0]
        assert "undo_edit" in fe["input_schema"]["properties"]["command"]["enum"]
    check("anthropic_request_shape", first_request)

    def tool_results():
        r2 = reqs[1]
        a = r2["messages"][-2]
        assert a["role"] == "assistant"
        assert a["content"][0] == {"type": "thinking", "thinking": "A file, then check it.",
                                   "signature": "fake-signature-1"}, a["content"][0]
        assert a["content"][1] == {"type": "text", "text": "Writing the file."}
        uses = [b for b in a["content"] if b["type"] == "tool_use"]
        assert [u["id"] for u in uses] == ["toolu_A", "toolu_B"]
        assert uses[1]["input"] == {"command": "cat output/notes.md"}
        u = r2["messages"][-1]
        assert u["role"] == "user"
        ids = [b["tool_use_id"] for b in u["content"] if b["type"] == "tool_result"]
        assert ids == ["toolu_A", "toolu_B"], ids
        assert "alpha" in u["content"][1]["content"]
        r3 = reqs[2]
        res3 = [b for b in r3["messages"][-1]["content"] if b["type"] == "tool_result"]
        assert [b["tool_use_id"] for b in res3] == ["toolu_C", "toolu_D"]
        assert "Last edit to /testbed/output/notes.md undone." in res3[1]["content"], res3[1]
    check("anthropic_tool_results_carry_ids", tool_results)

    def headers():
        with open(os.path.join(log, "headers-0001.json")) as f:
            h = json.load(f)
        assert h.get("x-api-key") == KEY
        assert h.get("anthropic-version") == "2023-06-01"
        assert "authorization" not in h
        with open(os.path.join(out, "trajectory.json")) as f:
            traj = f.read()
        for where, text in (("stdout", res.stdout), ("stderr", res.stderr), ("trajectory", traj)):
            assert KEY not in text, "the key shows in " + where
        t = json.loads(traj)
        assert t["usage"]["turns"] == 3, t["usage"]
        assert t["usage"]["prompt_tokens"] == 600, t["usage"]
        assert t["turns"][0]["reasoning"] == "A file, then check it."
    check("anthropic_key_sent_never_shown", headers)

    url, _ = E.model("err", [{"status": 401, "error": "invalid x-api-key"}])
    res2 = E.run(url, os.path.join(E.tmp, "out2"), "x")

    def http_error():
        assert res2.returncode == 1, res2.returncode
        text = res2.stdout + res2.stderr
        assert "/v1/messages refused the API key from $ANTHROPIC_API_KEY (HTTP 401: invalid x-api-key)" in text, text[-400:]
        assert KEY not in text
    check("anthropic_http_error_reported", http_error)


if __name__ == "__main__":
    sys.exit(main())
