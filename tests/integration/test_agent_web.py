"""Models, budgets, accounting and plugins through the whole service: nginx,
the web backend, one agent per task, the real sandbox daemon and the
scripted fake model, configured by an llmbox.conf in LLMBOX_HOME.

What a user relies on: the page lists the configured models and never a
key; a task runs on the model it names (an unknown name is refused with the
list); its limits are kept and shown; its usage is recorded; the python
plugin runs code in the real sandbox; a plugin that crashes, hangs or
floods ends (or caps) its own task with a clear reason, and the service
goes on serving the next task."""
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import REPO, Reporter, Skip, Stack, image_ready  # noqa: E402

KEY = "sk-web-test-secret"


def step(*calls, **kw):
    s = {"tool_calls": [{"name": n, "arguments": a} for n, a in calls]}
    s.update(kw)
    return s


FINISH = step(("finish", {"answer": "done"}))

SCENARIOS = {"scenarios": [
    {"match": "[pick]", "steps": [FINISH]},
    {"match": "[usage]", "steps": [step(("bash", {"command": "sleep 0.2; echo hi > /testbed/output/hi.txt"})),
                                   FINISH]},
    {"match": "[budget]", "steps": [step(("bash", {"command": "true"}),
                                         usage={"prompt_tokens": 5000, "completion_tokens": 10}), FINISH]},
    {"match": "[slow]", "steps": [{"delay_ms": 15000, "content": "late"}]},
    {"match": "[python]", "steps": [
        step(("python", {"code": "import math\nprint(math.sqrt(16))"}),
             ("python", {"code": "x = 1\ny = x / 0\n"}),
             ("python", {"code": "open('/testbed/output/py.txt', 'w').write('from python')"})),
        FINISH]},
    {"match": "[crash]", "steps": [step(("crashfix", {}))]},
    {"match": "[hang]", "steps": [step(("bash", {"command": "echo kept > /testbed/output/before.txt"})),
                                  step(("hangfix", {}))]},
    {"match": "[flood]", "steps": [step(("floodfix", {"mib": 64})), FINISH]},
    {"match": "[replay]", "steps": [
        step(("bash", {"command": "awk -F, '{s+=$2} END {print s}' /testbed/input/data.csv > /testbed/output/sum.txt"}),
             ("file_editor", {"command": "create", "path": "/testbed/output/notes/n.md", "file_text": "# notes\n"})),
        step(("bash", {"command": "head -c 4096 /dev/urandom > /testbed/output/random.bin; echo made"})),
        step(("finish", {"answer": "sum written"}))]},
    {"match": "[big]", "steps": [
        step(("bash", {"command": "cd /testbed/output && head -c 100M /dev/urandom > big.bin && "
                                  "sha256sum big.bin | cut -c1-64 > big.sha && echo small > small.txt"})),
        FINISH]},
    {"match": "[after]", "steps": [step(("bash", {"command": "echo still here"})), FINISH]},
]}

CONF = """\
; the test's llmbox.conf (written into LLMBOX_HOME by tests/lib/stack.py)
tools = bash, file_editor, finish, python, crashfix, hangfix, floodfix
tool_timeout_s = 3
task_timeout_s = 600
default_model = fake

[model "fake"]
base_url = http://user:urlsecret@127.0.0.1:{model_port}/v1
model = fake-model
api_key_env = FAKE_WEB_KEY

[model "other"]
base_url = {model_url}
model = other-model
temperature = 0.3
"""


def plugin_dir():
    d = tempfile.mkdtemp(prefix="llmbox-plugins-")
    os.chmod(d, 0o755)
    for n in ("bash", "file_editor", "finish", "python"):
        os.symlink(os.path.join(REPO, "plugins", n + ".so"), os.path.join(d, n + ".so"))
    for n in ("crashfix", "hangfix", "floodfix", "good", "small_desc"):
        os.symlink(os.path.join(REPO, "tests", "plugins", n + ".so"), os.path.join(d, n + ".so"))
    return d


def requests_for(s, tag):
    """The fake model's recorded requests of the conversation tagged tag."""
    out = []
    for n in sorted(os.listdir(s.model_log)):
        if not n.startswith("request-"):
            continue
        r = json.load(open(os.path.join(s.model_log, n)))
        if tag in json.dumps(r.get("messages", [])):
            out.append((n, r))
    return out


def no_key_anywhere(s, tid):
    for path in ("/api/models", "/api/health", "/api/tools", "/api/tasks/" + tid, "/api/tasks/%s/trajectory" % tid):
        st, _, body = s.request("GET", path)
        assert KEY.encode() not in body and b"urlsecret" not in body, "a secret shows in " + path


def t_models_listed(s):
    st, models = s.get_json("/api/models")
    assert st == 200, st
    by = {m["name"]: m for m in models}
    # the two of the file, and "default" from LLMBOX_LLM_URL (set by the harness)
    assert set(by) == {"fake", "other", "default"}, by
    assert by["fake"]["default"] is True and by["other"]["default"] is False
    assert by["fake"] == {"name": "fake", "provider": "openai", "model": "fake-model", "tool_mode": "native",
                          "url": "http://127.0.0.1:%d/v1" % s.model_port, "default": True}, by["fake"]
    text = json.dumps(models)
    assert "urlsecret" not in text and "FAKE_WEB_KEY" not in text and KEY not in text, text


def t_unknown_model_400(s):
    st, b = s.create_task("x", model="gpt-nope")
    assert st == 400, (st, b)
    msg = b["error"]["message"]
    assert 'There is no model called "gpt-nope"; the configured models are: fake, other, default.' == msg, msg
    for field, value, words in (("token_budget", "10", "token_budget must be"), ("timeout_s", "601", "from 1 to 600"),
                                ("max_turns", "0", "max_turns must be")):
        st, b = s.create_task("x", **{field: value})
        assert st == 400 and words in b["error"]["message"], (field, st, b)


def t_model_picked(s):
    st, t = s.create_task("[pick] use the other one", model="other")
    assert st == 201 and t["model"] == "other", t
    t = s.wait_task(t["id"], 60)
    assert t["status"] == "succeeded", t
    reqs = requests_for(s, "[pick]")
    assert reqs and reqs[0][1]["model"] == "other-model" and reqs[0][1]["temperature"] == 0.3, reqs[:1]
    h = json.load(open(os.path.join(s.model_log, reqs[0][0].replace("request-", "headers-"))))
    assert "authorization" not in h, "the other model has no key: %r" % h.get("authorization")
    # the default model, with its key
    st, t2 = s.create_task("[pick] the default", max_turns="3")
    assert st == 201 and t2["model"] == "fake", t2
    t2 = s.wait_task(t2["id"], 60)
    r2 = [r for r in requests_for(s, "[pick] the default")]
    assert r2 and r2[0][1]["model"] == "fake-model", r2[:1]
    h = json.load(open(os.path.join(s.model_log, r2[0][0].replace("request-", "headers-"))))
    assert h.get("authorization") == "Bearer " + KEY, h
    no_key_anywhere(s, t2["id"])


def t_usage_and_limits_stored(s):
    st, t = s.create_task("[usage] go", token_budget="20000", timeout_s="300")
    assert st == 201 and t["token_budget"] == 20000 and t["timeout_s"] == 300, t
    t = s.wait_task(t["id"], 60)
    assert t["status"] == "succeeded", t
    u = t["usage"]
    for k in ("prompt_tokens", "completion_tokens", "total_tokens", "environment_tokens", "context_tokens",
              "model_ms", "tools_ms", "sandbox_ms"):
        assert isinstance(u.get(k), (int, float)), (k, u)
    assert u["tools_ms"] >= 200 and u["environment_tokens"] > 0 and isinstance(u["environment_estimated"], bool), u
    st, traj = s.get_json("/api/tasks/%s/trajectory" % t["id"])
    assert traj["usage"]["environment_tokens"] == u["environment_tokens"], (traj["usage"], u)
    assert traj["config"]["limits"] == dict(traj["config"]["limits"], token_budget=20000, timeout_s=300)
    # the service's defaults when the task says nothing
    st, t = s.create_task("[pick] defaults")
    assert t["token_budget"] == 65536 and t["timeout_s"] == 600, t
    s.wait_task(t["id"], 60)


def t_budgets_end_tasks(s):
    st, a = s.create_task("[budget] go", token_budget="2000")
    st, b = s.create_task("[slow] go", timeout_s="2")
    a = s.wait_task(a["id"], 60)
    assert a["status"] == "failed" and a["reason"] == "reached the token budget (2000 tokens; the last turn used 5010)", a
    t0 = time.time()
    b = s.wait_task(b["id"], 30)
    assert b["status"] == "failed" and b["reason"] == "reached the task time limit (2 s)", b


def t_tools_listed(s):
    st, b = s.get_json("/api/tools")
    assert st == 200, b
    names = sorted(t["name"] for t in b["tools"])
    assert names == ["bash", "crashfix", "file_editor", "finish", "floodfix", "hangfix", "python"], names
    assert [t["name"] for t in b["disabled"]] == ["echo_test"], b["disabled"]
    assert any("small_desc.so: descriptor size 8 is smaller" in e for e in b["errors"]), b["errors"]


def t_python_plugin(s):
    st, t = s.create_task("[python] compute")
    t = s.wait_task(t["id"], 90)
    assert t["status"] == "succeeded", t
    evs = [d for _, e, d in s.events(t["id"]) if e == "tool"]
    assert [e["status"] for e in evs[:3]] == ["ok", "exception (ZeroDivisionError)", "ok"], [e["status"] for e in evs]
    assert evs[0]["stdout"] == "4.0\n", evs[0]
    assert "The code raised ZeroDivisionError: division by zero (line 2 of the snippet)." in evs[1]["text"], evs[1]
    assert 'File "<snippet>", line 2' in evs[1]["stderr"], evs[1]["stderr"]
    st, _, body = s.request("GET", "/api/tasks/%s/artifacts/py.txt" % t["id"])
    assert st == 200 and body == b"from python", (st, body)
    # the model read the classified results
    obs = [m for m in requests_for(s, "[python]")[-1][1]["messages"] if m["role"] == "tool"]
    assert "[status: exception (ZeroDivisionError)]" in obs[1]["content"], obs[1]["content"]


def agent_pid(task_id):
    """The pid of the agent running task_id (by its command line), or None."""
    want = b"--task\0" + task_id.encode()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if want in open("/proc/%s/cmdline" % d, "rb").read():
                    return int(d)
            except OSError:
                pass
    return None


def t_tool_marker_on_log(s):
    """While a tool runs, the agent names it in an attribute of its log,
    making no marker file; an agent that dies of a crash signal its own
    handler does not take (SIGTRAP) in that tool has its task failed by
    the web naming the tool, read from there."""
    st, t = s.create_task("[hang] marked")
    assert st == 201, t
    logdir = os.path.join(s.prefix, "var", "web", "log")
    log = os.path.join(logdir, "agent-%s.log" % t["id"])
    deadline = time.time() + 60
    val = None
    while time.time() < deadline:
        try:
            val = os.getxattr(log, "user.llmbox.tool")
        except OSError:
            val = None
        if val == b"hangfix":
            break
        time.sleep(0.01)
    assert val == b"hangfix", val
    assert not os.path.exists(os.path.join(logdir, "agent-%s.tool" % t["id"])), os.listdir(logdir)
    pid = agent_pid(t["id"])
    assert pid, "no agent process for the task"
    os.kill(pid, signal.SIGTRAP)
    t = s.wait_task(t["id"], 60)
    assert t["status"] == "failed", t
    assert t["reason"] == "the tool hangfix crashed (SIGTRAP); the task was stopped", t["reason"]
    # read and removed, as the marker file was: nothing is left to blame a later agent's end on
    try:
        left = os.getxattr(log, "user.llmbox.tool")
    except OSError:
        left = None
    assert left is None, left


def t_crash_hang_flood(s):
    ids = {}
    for tag in ("crash", "hang", "flood"):
        st, t = s.create_task("[%s] go" % tag)
        assert st == 201, t
        ids[tag] = t["id"]
    crash = s.wait_task(ids["crash"], 60)
    assert crash["status"] == "failed", crash
    # an AddressSanitizer build (make check-asan) turns the SIGSEGV into its report and an abort
    sig = "SIGABRT" if "asan" in os.environ.get("BUILD", "") else "SIGSEGV"
    assert crash["reason"] == "the tool crashfix crashed (%s); the task was stopped" % sig, crash["reason"]
    if sig == "SIGSEGV":  # (under ASan the sanitizer reports the crash, not the agent)
        # the agent caught it: the .so and offset in its log, the call on the
        # task, and a trajectory that says so
        log = os.path.join(s.prefix, "var", "web", "log", "agent-%s.log" % ids["crash"])
        text = open(log).read()
        assert re.search(r"the tool crashfix crashed \(SIGSEGV\) at llmbox-plugins-\w+/crashfix\.so\+0x[0-9a-f]+", text), \
            text[-1000:]
        tools = [d for _, e, d in s.events(ids["crash"]) if e == "tool"]
        assert tools[-1]["name"] == "crashfix" and tools[-1]["status"] == "crashed (SIGSEGV)", tools[-1]
        st, traj = s.get_json("/api/tasks/%s/trajectory" % ids["crash"])
        assert st == 200 and traj["status"] == "failed", (st, traj.get("status"))

    hang = s.wait_task(ids["hang"], 60)
    assert hang["status"] == "failed", hang
    assert hang["reason"] == "the tool hangfix did not return within 3 s and was stopped", hang["reason"]
    assert [a["path"] for a in hang["artifacts"]] == ["before.txt"], hang["artifacts"]
    tools = [d for _, e, d in s.events(ids["hang"]) if e == "tool"]
    assert tools[-1]["name"] == "hangfix" and tools[-1]["status"] == "killed (hung)", tools[-1]
    st, traj = s.get_json("/api/tasks/%s/trajectory" % ids["hang"])
    assert st == 200 and traj["status"] == "failed", traj.get("status")

    flood = s.wait_task(ids["flood"], 60)
    assert flood["status"] == "succeeded", flood
    ev = [d for _, e, d in s.events(ids["flood"]) if e == "tool"][0]
    assert len(ev["stdout"]) < 70000 and ev["stdout"].startswith("FLOOD-START"), len(ev["stdout"])
    assert ev["stdout"].rstrip().endswith("FLOOD-END") and "bytes omitted" in ev["stdout"]
    log = os.path.join(s.prefix, "var", "web", "log", "agent-%s.log" % ids["flood"])
    assert os.path.getsize(log) < 100000, os.path.getsize(log)
    # once the agents are reaped: no marker left behind, and the sandboxes
    # went with their agents
    logdir = os.path.join(s.prefix, "var", "web", "log")
    markers = lambda: [n for n in os.listdir(logdir) if n.endswith(".tool")]
    deadline = time.time() + 10
    while (markers() or s.sandbox_leftovers()) and time.time() < deadline:
        time.sleep(0.2)
    assert not markers(), markers()
    assert not s.sandbox_leftovers(), s.sandbox_leftovers()

    # the service goes on
    st, t = s.create_task("[after] still there?")
    t = s.wait_task(t["id"], 60)
    assert t["status"] == "succeeded", t
    st, h = s.get_json("/api/health")
    assert h["ok"] and h["sandboxd"]["ok"], h


def artifact_digests(s, tid):
    st, arts = s.get_json("/api/tasks/%s/artifacts" % tid)
    assert st == 200, (st, arts)
    items = arts["artifacts"] if isinstance(arts, dict) else arts
    return {a["path"]: a["sha256"] for a in items}


def t_replay_without_model(s):
    """"Replay" plays an ended task's trajectory through the tools in a fresh
    sandbox, asking no model: the deterministic files come out the same,
    the random one differs (it really ran again)."""
    st, t = s.create_task("[replay] sum the column", files=[("data.csv", b"a,1\nb,2\nc,39\n")])
    assert st == 201, t
    src = s.wait_task(t["id"], 60)
    assert src["status"] == "succeeded", src
    before = len(requests_for(s, "[replay]"))
    st, _, body = s.request("POST", "/api/tasks/%s/rerun?replay=1" % src["id"], b"")
    r = json.loads(body)
    assert st == 201 and r["model"] == "@replay" and r["rerun_of"] == src["id"], (st, r)
    t2 = s.wait_task(r["id"], 60)
    assert t2["status"] == "succeeded" and t2["answer"] == "sum written", t2
    assert len(requests_for(s, "[replay]")) == before, "the replay asked the model"
    a, b = artifact_digests(s, src["id"]), artifact_digests(s, t2["id"])
    assert set(a) == set(b) and {"sum.txt", "notes/n.md", "random.bin"} <= set(a), (a, b)
    assert a["sum.txt"] == b["sum.txt"] and a["notes/n.md"] == b["notes/n.md"], (a, b)
    assert a["random.bin"] != b["random.bin"], "the command did not run again"
    st, _, data = s.request("GET", "/api/tasks/%s/artifacts/sum.txt" % t2["id"])
    assert data.strip() == b"42", data
    # a replay of the replay replays again, even without ?replay=1
    st, _, body = s.request("POST", "/api/tasks/%s/rerun" % t2["id"], b"")
    assert st == 201 and json.loads(body)["model"] == "@replay", body
    s.wait_task(json.loads(body)["id"], 60)
    # refused: a task still running, a task without a trajectory, a bad value
    st, slow = s.create_task("[slow] wait", max_turns="1")
    st, _, body = s.request("POST", "/api/tasks/%s/rerun?replay=1" % slow["id"], b"")
    assert st == 409 and "has ended" in json.loads(body)["error"]["message"], (st, body)
    s.request("POST", "/api/tasks/%s/cancel" % slow["id"], b"")
    s.wait_task(slow["id"], 60)
    os.unlink(os.path.join(s.prefix, "artifacts", src["id"], "trajectory.json"))
    st, _, body = s.request("POST", "/api/tasks/%s/rerun?replay=1" % src["id"], b"")
    assert st == 409 and "trajectory.json" in json.loads(body)["error"]["message"], (st, body)
    st, _, body = s.request("POST", "/api/tasks/%s/rerun?replay=yes" % src["id"], b"")
    assert st == 400, (st, body)


def t_large_output_file(s):
    """An output file larger than one sandbox RPC frame (~64 MiB) comes back
    whole, copied in ranges, with the right size and digest."""
    st, t = s.create_task("[big] make a 100 MiB file")
    assert st == 201, t
    t = s.wait_task(t["id"], 120)
    assert t["status"] == "succeeded", t
    by = {a["path"]: a for a in t["artifacts"]}
    assert set(by) >= {"big.bin", "big.sha", "small.txt"}, list(by)
    st, _, sha = s.request("GET", "/api/tasks/%s/artifacts/big.sha" % t["id"])
    assert by["big.bin"]["size"] == 100 << 20, by["big.bin"]
    assert by["big.bin"]["sha256"] == sha.decode().strip(), (by["big.bin"], sha)
    path = os.path.join(s.prefix, "artifacts", t["id"], "output", "big.bin")
    assert os.path.getsize(path) == 100 << 20
    assert not [n for n in os.listdir(os.path.dirname(path)) if ".tmp." in n], os.listdir(os.path.dirname(path))
    st, _, _ = s.request("DELETE", "/api/tasks/" + t["id"])
    assert st == 200, st


def spare_agents(s):
    """Pids of `llmbox agent --spare` children of this stack's web: the
    agent zygote (its task-id placeholder stays; a forked agent shows
    `agent --task ID`)."""
    web = [p for p in s.procs if len(p.args) > 1 and p.args[1] == "web"][0]
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            st = open("/proc/%s/stat" % d).read()
            ppid = int(st[st.rfind(")") + 2:].split()[1])
            cmd = open("/proc/%s/cmdline" % d, "rb").read()
        except (OSError, ValueError, IndexError):
            continue
        # waiting: its task-id placeholder is still there (a spare that took
        # a task shows --task ID instead)
        if ppid == web.pid and b"\0--spare" in cmd and b"\0" + b"." * 32 in cmd:
            out.append(int(d))
    return out


def wait_for(fn, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.05)
    return fn()


def create_paced(s, prompt):
    """create_task, waiting out the per-address rate (the tests before
    started many tasks)."""
    deadline = time.time() + 30
    while True:
        st, t = s.create_task(prompt)
        if st != 429 or time.time() > deadline:
            return st, t
        time.sleep(1)


def t_spare_agent(s):
    """One agent zygote waits, loaded: each task's agent is forked from it
    (no exec, no library loading), a child of the web like an agent started
    by exec, and the zygote stays for the next task; a zygote killed while
    it waits is replaced, and the task meanwhile still gets an agent."""
    first = wait_for(lambda: spare_agents(s))
    assert len(first) == 1, first
    for i in range(2):
        st, t = create_paced(s, "[pick] from the zygote %d" % i)
        assert st == 201, t
        t = s.wait_task(t["id"], 60)
        assert t["status"] == "succeeded", t
    log = open(os.path.join(s.prefix, "var", "log", "web.log")).read()
    forked = re.findall(r"agent started, pid (\d+) \(forked by the zygote\)", log)
    assert len(forked) >= 2 and str(first[0]) not in forked, (forked, first)
    assert spare_agents(s) == first, (spare_agents(s), first)
    os.kill(first[0], 9)
    time.sleep(0.2)
    st, t = create_paced(s, "[pick] after the zygote was killed")
    assert st == 201, t
    t = s.wait_task(t["id"], 60)
    assert t["status"] == "succeeded", t
    second = wait_for(lambda: [p for p in spare_agents(s) if p != first[0]])
    assert len(second) == 1, second


def t_spare_reads_tools_again(s):
    """A changed tools list in llmbox.conf reaches the next task, also when
    that task runs in the spare agent started before the change."""
    assert wait_for(lambda: spare_agents(s))
    conf = os.path.join(s.prefix, "llmbox.conf")
    old = open(conf).read()
    try:
        with open(conf + ".tmp", "w") as f:
            f.write(old.replace("tools = bash, file_editor, finish, python, crashfix, hangfix, floodfix",
                                "tools = bash, finish"))
        os.rename(conf + ".tmp", conf)
        deadline = time.time() + 30
        while True:  # the tests before started many tasks: wait out the per-address rate
            st, t = s.create_task("[pick] tools changed")
            if st != 429 or time.time() > deadline:
                break
            time.sleep(1)
        assert st == 201, t
        t = s.wait_task(t["id"], 60)
        assert t["status"] == "succeeded", t
        req = requests_for(s, "tools changed")[0][1]
        assert sorted(x["function"]["name"] for x in req["tools"]) == ["bash", "finish"], req["tools"]
    finally:
        with open(conf + ".tmp", "w") as f:
            f.write(old)
        os.rename(conf + ".tmp", conf)


def main():
    r = Reporter()
    if not image_ready():
        print("SKIP agent_web: the sandbox image is not built (make image)")
        return
    plugins = plugin_dir()
    try:
        with Stack(SCENARIOS, conf=CONF, env={"LLMBOX_PLUGINS": plugins, "FAKE_WEB_KEY": KEY}) as s:
            r.run("agent_web_models_listed_without_secrets", t_models_listed, s)
            r.run("agent_web_unknown_model_and_bad_limits_400", t_unknown_model_400, s)
            r.run("agent_web_model_picked_by_name", t_model_picked, s)
            r.run("agent_web_usage_and_limits_stored", t_usage_and_limits_stored, s)
            r.run("agent_web_budgets_end_tasks", t_budgets_end_tasks, s)
            r.run("agent_web_tools_listed_per_config", t_tools_listed, s)
            r.run("agent_web_python_plugin_in_sandbox", t_python_plugin, s)
            r.run("agent_web_crash_hang_flood_end_only_their_task", t_crash_hang_flood, s)
            r.run("agent_web_replay_without_model", t_replay_without_model, s)
            r.run("agent_web_large_output_file", t_large_output_file, s)
            r.run("agent_web_tool_marker_on_log", t_tool_marker_on_log, s)
            r.run("agent_web_spare_agent", t_spare_agent, s)
            r.run("agent_web_spare_reads_tools_again", t_spare_reads_tools_again, s)
    finally:
        shutil.rmtree(plugins, ignore_errors=True)
    r.done()


if __name__ == "__main__":
    main()
