"""Named models, failures of the endpoint, budgets, accounting and the tools
setting, through `llmbox run` against the scripted fake model
(tests/fake_model.py) and the fake sandbox daemon (tests/fake_sandboxd.py,
which runs commands on the host: no root needed, not a sandbox).

Each case is one thing an operator or a user relies on: the model a task
names is the one asked, with its settings; a context that overflows is
retried once with a smaller max_tokens and then ends the task with a clear
reason; a refused key ends it at once; the budgets end it with a reason;
the accounting adds up; only the configured tools are offered; a hung tool
is stopped; a bad llmbox.conf stops everything with file:line."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
BIN = os.environ.get("LLMBOX") or os.path.join(REPO, os.environ.get("BUILD", "build"), "llmbox")
failed = False


def check(name, fn):
    global failed
    t0 = time.time()
    try:
        fn()
        print("PASS %s (%.1fs)" % (name, time.time() - t0), flush=True)
    except Exception as e:  # one line per case, like the other suites
        failed = True
        print("FAIL %s: %s: %s" % (name, type(e).__name__, e), flush=True)


def wait_for(pred, what, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise RuntimeError("timed out waiting for " + what)


def step(*calls, **kw):
    s = {"tool_calls": [{"name": n, "arguments": a} for n, a in calls]}
    s.update(kw)
    return s


FINISH = step(("finish", {"answer": "done"}))


class Env:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="llmbox-models-test.")
        self.procs = []
        self.sock = os.path.join(self.tmp, "sandboxd.sock")
        self.procs.append(subprocess.Popen(
            [sys.executable, os.path.join(REPO, "tests", "fake_sandboxd.py"), "--socket", self.sock,
             "--root", os.path.join(self.tmp, "sandboxes")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for(lambda: os.path.exists(self.sock), "the fake sandbox daemon")
        self.n = 0

    def model(self, steps):
        """Starts a fake model with these steps; returns (base URL, log dir)."""
        self.n += 1
        sc = os.path.join(self.tmp, "scenario-%d.json" % self.n)
        with open(sc, "w") as f:
            json.dump(steps, f)
        log = os.path.join(self.tmp, "model-%d" % self.n)
        p = subprocess.Popen([sys.executable, os.path.join(REPO, "tests", "fake_model.py"), "--scenario", sc,
                              "--log-dir", log], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.procs.append(p)
        port = int(p.stdout.readline().split()[1])
        return "http://127.0.0.1:%d/v1" % port, log

    def conf(self, text):
        path = os.path.join(self.tmp, "llmbox-%d.conf" % self.n)
        with open(path, "w") as f:
            f.write(text)
        return path

    def plugins(self, *names):
        """A plugin folder with these .so files (repo plugins or fixtures)."""
        d = tempfile.mkdtemp(prefix="plugins.", dir=self.tmp)
        for n in names:
            src = os.path.join(REPO, "plugins", n + ".so")
            if not os.path.exists(src):
                src = os.path.join(REPO, "tests", "plugins", n + ".so")
            os.symlink(src, os.path.join(d, n + ".so"))
        return d

    def run(self, prompt, *args, env=None, timeout=60):
        out = tempfile.mkdtemp(prefix="out.", dir=self.tmp)
        e = dict(os.environ, LLMBOX_HOME=REPO, LLMBOX_SANDBOXD_SOCKET=self.sock, NO_COLOR="1",
                 LLMBOX_CONF="/dev/null")
        for k in ("LLMBOX_LLM_URL", "OPENAI_BASE_URL", "LLMBOX_LLM_KEY", "OPENAI_API_KEY", "LLMBOX_LLM_MODEL",
                  "LLMBOX_TOOLS", "LLMBOX_TOKEN_BUDGET"):
            e.pop(k, None)
        e.update(env or {})
        t0 = time.time()
        res = subprocess.run([BIN, "run", "-o", out] + list(args) + [prompt], env=e, capture_output=True,
                             text=True, timeout=timeout)
        res.seconds = time.time() - t0
        res.out = out
        res.text = res.stdout + res.stderr
        traj = os.path.join(out, "trajectory.json")
        res.traj = json.load(open(traj)) if os.path.exists(traj) else None
        return res

    def close(self):
        for p in self.procs:
            p.kill()
            p.wait()
        if os.environ.get("KEEP"):
            print("kept " + self.tmp, file=sys.stderr)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


def requests(log):
    names = sorted(n for n in os.listdir(log) if n.startswith("request-"))
    return [json.load(open(os.path.join(log, n))) for n in names]


def headers(log, n):
    return json.load(open(os.path.join(log, "headers-%04d.json" % n)))


def cases(E):
    # ---- a model picked by name, with its settings and its own key ----
    url_a, log_a = E.model([FINISH])
    url_b, log_b = E.model([step(("bash", {"command": "echo hi"})), FINISH])
    conf = E.conf(
        "default_model = small\n"
        "[model \"small\"]\n"
        "base_url = %s\n"
        "model = small-model\n"
        "[model \"big\"]\n"
        "base_url = %s\n"
        "model = Qwen/Qwen3-Big\n"
        "api_key_env = BIG_TEST_KEY\n"
        "temperature = 0.6\n"
        "top_p = 0.95\n"
        "top_k = 20\n"
        "min_p = 0\n"
        "repetition_penalty = 1.05\n"
        "max_tokens = 3000\n"
        "extra_body = {\"chat_template_kwargs\": {\"enable_thinking\": true},\n"
        "    \"temperature\": 0.7}\n" % (url_a, url_b))
    res = E.run("Say hi", "--model", "big", env={"LLMBOX_CONF": conf, "BIG_TEST_KEY": "sk-big-secret"})

    def picked_by_name():
        assert res.returncode == 0, res.text[-800:]
        assert not os.listdir(log_a), "the default model was asked"
        r = requests(log_b)
        assert len(r) == 2, len(r)
        assert r[0]["model"] == "Qwen/Qwen3-Big", r[0]["model"]
        assert "model big (openai Qwen/Qwen3-Big)" in res.stdout, res.stdout[:300]
    check("model_picked_by_name", picked_by_name)

    def settings_and_extra_body():
        r = requests(log_b)[0]
        assert r["top_p"] == 0.95 and r["top_k"] == 20 and r["min_p"] == 0, r
        assert r["repetition_penalty"] == 1.05 and r["max_tokens"] == 3000, r
        assert r["chat_template_kwargs"] == {"enable_thinking": True}, r
        assert r["temperature"] == 0.7, "extra_body must win over temperature: %r" % r["temperature"]
        assert headers(log_b, 1).get("authorization") == "Bearer sk-big-secret"
        assert "sk-big-secret" not in res.text and "sk-big-secret" not in json.dumps(res.traj)
        m = res.traj["config"]["model"]
        assert m["name"] == "big" and m["model"] == "Qwen/Qwen3-Big" and m["max_tokens"] == 3000, m
        assert m["extra_body"]["chat_template_kwargs"] == {"enable_thinking": True}, m
    check("model_settings_and_extra_body_sent", settings_and_extra_body)

    def default_and_unknown():
        r2 = E.run("x", env={"LLMBOX_CONF": conf})
        assert r2.returncode == 0 and len(os.listdir(log_a)) >= 1, r2.text[-400:]
        assert requests(log_a)[0]["model"] == "small-model"
        assert "authorization" not in headers(log_a, 1), "a model without api_key_env sent a key"
        r3 = E.run("x", "--model", "nope", env={"LLMBOX_CONF": conf})
        assert r3.returncode == 2 and 'no model called "nope" (configured: small, big)' in r3.text, r3.text
    check("default_model_and_unknown_name", default_and_unknown)

    # ---- a context-length error: max_tokens lowered to fit, retried once ----
    ctx_msg = ("This model's maximum context length is 8192 tokens. However, you requested 9000 tokens "
               "(5000 in the messages, 4000 in the completion). Please reduce the length of the messages "
               "or completion.")
    url, log = E.model([{"status": 400, "error": ctx_msg}, step(("bash", {"command": "true"})), FINISH])
    conf = E.conf("[model \"m\"]\nbase_url = %s\nmax_tokens = 4000\n" % url)
    res = E.run("x", env={"LLMBOX_CONF": conf})

    def ctx_retry():
        assert res.returncode == 0, res.text[-600:]
        r = requests(log)
        assert [q["max_tokens"] for q in r] == [4000, 8192 - 5000 - 64, 8192 - 5000 - 64], [q["max_tokens"] for q in r]
        m = res.traj["config"]["model"]
        assert m["max_tokens"] == 8192 - 5000 - 64 and m["max_tokens_configured"] == 4000, m
    check("context_length_retry_then_success", ctx_retry)

    url, log = E.model([{"status": 400, "error": "context length exceeded", "code": "context_length_exceeded"},
                        {"status": 400, "error": "context length exceeded", "code": "context_length_exceeded"},
                        FINISH])
    conf = E.conf("[model \"m\"]\nbase_url = %s\nmax_tokens = 4000\n" % url)
    res2 = E.run("x", env={"LLMBOX_CONF": conf})

    def ctx_twice():
        assert res2.returncode == 1, res2.text[-600:]
        assert "The conversation no longer fits the model's context, even with max_tokens lowered to 2000" \
            in res2.text, res2.text[-600:]
        assert len(requests(log)) == 2, "asked %d times" % len(requests(log))
        assert res2.traj["status"] == "failed" and "no longer fits" in res2.traj["reason"]
    check("context_length_twice_fails_clearly", ctx_twice)

    # ---- a refused key ends the task at once ----
    url, log = E.model([{"status": 403, "error": "key revoked"}, FINISH])
    conf = E.conf("[model \"m\"]\nbase_url = %s\napi_key_env = M_TEST_KEY\nretries = 5\n" % url)
    res3 = E.run("x", env={"LLMBOX_CONF": conf, "M_TEST_KEY": "sk-revoked"})

    def refused():
        assert res3.returncode == 1 and res3.seconds < 5, (res3.returncode, res3.seconds)
        assert "refused the API key from $M_TEST_KEY (HTTP 403: key revoked)" in res3.text, res3.text[-500:]
        assert len(requests(log)) == 1
        assert "sk-revoked" not in res3.text
    check("refused_key_ends_task_at_once", refused)

    # ---- 429 with Retry-After, then an answer ----
    url, log = E.model([{"status": 429, "error": "slow down", "retry_after": 1}, FINISH])
    conf = E.conf("[model \"m\"]\nbase_url = %s\n" % url)
    res4 = E.run("x", env={"LLMBOX_CONF": conf})

    def retry_after():
        assert res4.returncode == 0, res4.text[-400:]
        assert len(requests(log)) == 2 and res4.seconds >= 1.0, res4.seconds
    check("retry_after_honoured", retry_after)

    # ---- budgets: tokens (per task) and wall clock ----
    url, log = E.model([step(("bash", {"command": "true"}))] * 5)
    res5 = E.run("x", "--token-budget", "250", env={"LLMBOX_LLM_URL": url})

    def token_budget():
        assert res5.returncode == 1, res5.text[-400:]
        assert "reached the token budget (250 tokens; the last turn used 310)" in res5.text, res5.text[-400:]
        assert len(requests(log)) == 3
        assert res5.traj["config"]["limits"]["token_budget"] == 250
    check("token_budget_reached", token_budget)

    def budget_default_and_note():
        url2, log2 = E.model([step(("bash", {"command": "true"}), usage={"prompt_tokens": 60000,
                                                                        "completion_tokens": 100}), FINISH])
        r = E.run("x", env={"LLMBOX_LLM_URL": url2})
        assert r.returncode == 0, r.text[-400:]
        assert r.traj["config"]["limits"]["token_budget"] == 65536
        # a quarter of the budget or less is left: the model is told
        obs = requests(log2)[1]["messages"][-1]["content"]
        assert obs.endswith("[99 turns left; about 5436 tokens of context left]"), obs[-120:]
    check("token_budget_default_and_told", budget_default_and_note)

    url, log = E.model([{"delay_ms": 20000, "content": "late"}])
    res6 = E.run("x", "--timeout", "2", env={"LLMBOX_LLM_URL": url})

    def wall_clock():
        assert res6.returncode == 1 and res6.seconds < 8, (res6.returncode, res6.seconds)
        assert "reached the task time limit (2 s)" in res6.text, res6.text[-400:]
        assert res6.traj["reason"] == "reached the task time limit (2 s)", res6.traj["reason"]
    check("wall_clock_limit", wall_clock)

    # ---- accounting: prompt, completion, environment tokens; model vs tool time ----
    url, log = E.model([
        step(("bash", {"command": "sleep 0.3; echo one"}), usage={"prompt_tokens": 1000, "completion_tokens": 50}),
        step(("bash", {"command": "echo two"}), usage={"prompt_tokens": 1400, "completion_tokens": 40}),
        step(("bash", {"command": "echo three"}), usage=None),
        step(("finish", {}), usage={"prompt_tokens": 2000, "completion_tokens": 10})])
    res7 = E.run("x", env={"LLMBOX_LLM_URL": url})

    def accounting():
        assert res7.returncode == 0, res7.text[-400:]
        u = res7.traj["usage"]
        assert u["prompt_tokens"] == 4400 and u["completion_tokens"] == 100, u
        turns = res7.traj["turns"]
        # turn 1: the endpoint's own count (1400 - 1000 - 50)
        assert turns[0]["usage"]["environment_tokens"] == 350, turns[0]["usage"]
        assert turns[0]["usage"]["environment_estimated"] is False
        # turn 2 and 3: the next reply (or this one) has no counts: bytes / 4
        obs2 = requests(log)[2]["messages"][-1]["content"]
        assert turns[1]["usage"]["environment_tokens"] == (len(obs2.encode()) + 3) // 4, (turns[1]["usage"], obs2)
        assert turns[1]["usage"]["environment_estimated"] is True
        assert turns[2]["usage"]["reported"] is False
        assert u["environment_estimated"] is True
        assert u["environment_tokens"] == sum(t["usage"].get("environment_tokens", 0) for t in turns), u
        assert u["tools_ms"] >= 300 and u["model_ms"] > 0 and u["model_ms"] < 5000, u
        assert u["context_tokens"] == 2010, u
        assert "tokens: 4400 prompt, 100 completion" in res7.stdout, res7.stdout[-300:]
    check("accounting_numbers_present", accounting)

    # ---- the tools setting: what the request offers ----
    url, log = E.model([FINISH])
    res8 = E.run("x", env={"LLMBOX_LLM_URL": url, "LLMBOX_TOOLS": "bash"})

    def tools_setting():
        assert res8.returncode == 0, res8.text[-400:]
        names = sorted(t["function"]["name"] for t in requests(log)[0]["tools"])
        assert names == ["bash", "finish"], names
        assert res8.traj["config"]["tools"] == ["bash", "finish"], res8.traj["config"]
        out = subprocess.run([BIN, "agent", "--list-tools"], capture_output=True, text=True,
                             env=dict(os.environ, LLMBOX_HOME=REPO, LLMBOX_CONF="/dev/null",
                                      LLMBOX_TOOLS="bash, no_such_tool"))
        lst = json.loads(out.stdout)
        assert sorted(t["name"] for t in lst["tools"]) == ["bash", "finish"], lst["tools"]
        assert "file_editor" in [t["name"] for t in lst["disabled"]], lst["disabled"]
        assert any("'no_such_tool' is enabled in the configuration but no loaded plugin provides it" in e
                   for e in lst["errors"]), lst["errors"]
    check("tools_setting_in_request_and_list", tools_setting)

    # ---- a tool that never returns: the watchdog ends the task ----
    url, log = E.model([step(("bash", {"command": "echo kept > output/before.txt"})),
                        step(("hangfix", {})), FINISH])
    plugins = E.plugins("bash", "finish", "hangfix")
    res9 = E.run("x", env={"LLMBOX_LLM_URL": url, "LLMBOX_PLUGINS": plugins, "LLMBOX_TOOLS": "all",
                           "LLMBOX_TOOL_TIMEOUT_S": "1"})

    def hang():
        assert res9.returncode == 1 and res9.seconds < 15, (res9.returncode, res9.seconds, res9.text[-500:])
        assert "the tool hangfix did not return within 1 s and was stopped" in res9.text, res9.text[-500:]
        assert res9.traj and res9.traj["status"] == "failed", res9.traj and res9.traj["status"]
        assert open(os.path.join(res9.out, "before.txt")).read() == "kept\n"
        assert "killed (hung)" in res9.stdout
    check("hung_tool_stopped_by_watchdog", hang)

    # ---- a bad llmbox.conf: nothing starts, the error names file:line ----
    bad = E.conf("max_turns = 10\n[model \"m\"]\nbase_url = http://127.0.0.1:9/v1\ntemprature = 0.5\n")

    def bad_conf():
        r = E.run("x", env={"LLMBOX_CONF": bad})
        assert r.returncode == 1, r.returncode
        assert "%s:4: unknown key 'temprature' in [model \"m\"]" % bad in r.stderr, r.stderr
        w = subprocess.run([BIN, "web"], env=dict(os.environ, LLMBOX_CONF=bad, LLMBOX_HOME=E.tmp),
                           capture_output=True, text=True, timeout=10)
        assert w.returncode == 1 and ("%s:4:" % bad) in w.stderr, (w.returncode, w.stderr)
    check("bad_conf_stops_with_file_line", bad_conf)


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL models_setup: no llmbox binary at %s (run make first)" % BIN)
        return 1
    E = Env()
    try:
        cases(E)
    finally:
        E.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
