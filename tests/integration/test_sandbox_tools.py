#!/usr/bin/env python3
"""POST /api/sandboxes/{id}/tools/{name} through nginx, against the real web,
tool host and sandboxd: the observations of a sequence of calls equal, byte
for byte, those a task's trajectory.json holds for the same calls made by
the fake model (only the agent's "[N turns left]" note is cut, which the
endpoint does not add); unknown tool, bad arguments, one call at a time, the
argument cap, auth, a killed tool host and a plugin that crashes or hangs
(502, then a new host), and the host
dying with its sandbox (delete, TTL) and with the web. Needs root (sandboxd) and the built image.
"""
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import Reporter, Stack, image_ready  # noqa: E402

TOKEN = "tools-token-" + os.urandom(16).hex()
NOTES = "/tmp/tooltest/notes.txt"

# Each call as the model sends it; the same list goes to the endpoint.
CALLS = [
    ("bash", {"command": "echo hello; echo to-stderr >&2"}),
    # the soft timeout is 1 s (LLMBOX_BASH_SOFT_TIMEOUT_S): "still running
    # after 1 s", then "" waits for the end at 1.6 s
    ("bash", {"command": "echo start; sleep 1.6; echo end"}),
    ("bash", {"command": ""}),
    ("bash", {"command": "cd /tmp && export TOOLVAR=kept"}),
    ("bash", {"command": "pwd; echo $TOOLVAR"}),
    ("file_editor", {"command": "create", "path": NOTES, "file_text": "alpha\nbeta\ngamma\n"}),
    ("file_editor", {"command": "view", "path": NOTES}),
    ("file_editor", {"command": "str_replace", "path": NOTES, "old_str": "beta", "new_str": "BETA"}),
    ("file_editor", {"command": "undo_edit", "path": NOTES}),
    ("file_editor", {"command": "view", "path": NOTES}),
    ("bash", {"command": "echo oops >&2; exit 3"}),
    ("file_editor", {"command": "view", "path": "/tmp/tooltest/missing.txt"}),
    ("file_editor", {"command": "str_replace", "path": NOTES, "old_str": "not there", "new_str": "x"}),
    ("finish", {"answer": "done with tools"}),
]

SCENARIO = {"scenarios": [{"match": "[tools]", "steps": [
    {"content": "", "tool_calls": [{"name": n, "arguments": a}]} for n, a in CALLS]}]}

TURNS_LEFT = re.compile(r"\n\n\[(?:\d+ turns? left|no turns left)[^\]]*\]\Z")


class Api:
    def __init__(self, stack):
        self.s = stack

    def call(self, method, path, body=None, token=TOKEN, raw=None, timeout=60):
        h = {"Authorization": "Bearer " + token} if token else {}
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        if data is not None:
            h["Content-Type"] = "application/json"
        st, _, out = self.s.request(method, path, data, h, timeout=timeout)
        return st, (json.loads(out) if out else None)

    def tool(self, sid, name, args=None, **kw):
        return self.call("POST", "/api/sandboxes/%s/tools/%s" % (sid, name), args, **kw)

    def create(self):
        st, o = self.call("POST", "/api/sandboxes", {})
        assert st == 201, (st, o)
        return o["id"]


def agent_observations(s):
    """The tool messages of a task that made CALLS, without the turns note."""
    st, t = s.create_task("[tools] make the calls")
    assert st == 201, t
    t = s.wait_task(t["id"], 90)
    assert t["status"] == "succeeded", t
    st, traj = s.get_json("/api/tasks/%s/trajectory" % t["id"])
    assert st == 200, traj
    msgs = [m["content"] for m in traj["messages"] if m.get("role") == "tool"]
    assert len(msgs) == len(CALLS), (len(msgs), msgs)
    out = []
    for m in msgs:
        cut = TURNS_LEFT.sub("", m)
        assert cut != m, "no turns note at the end of %r" % m[-80:]
        out.append(cut)
    return out


def host_pids(s):
    """Pids of the tool hosts this stack's web started."""
    web = s.named["web"][0].pid
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = open("/proc/%s/cmdline" % d, "rb").read().split(b"\0")
            stat = open("/proc/%s/stat" % d).read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if b"--tool-host" in cmd and ppid == web:
            pids.append(int(d))
    return pids


def alive(pid):
    try:
        st = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return st != "Z"


def t_same_as_agent(s, api):
    want = agent_observations(s)
    sid = api.create()
    try:
        same_as_agent(api, sid, want)
    finally:
        api.call("DELETE", "/api/sandboxes/" + sid)


def same_as_agent(api, sid, want):
    for (name, args), exp in zip(CALLS, want):
        st, o = api.tool(sid, name, args)
        assert st == 200, (name, args, st, o)
        assert o["observation"] == exp, "call %s %r:\nendpoint %r\nagent    %r" % (name, args, o["observation"], exp)
        assert isinstance(o["truncated"], bool) and o["truncated"] is False, o
    # the structured fields of a few of them
    st, o = api.tool(sid, "bash", {"command": "exit 4"})
    assert st == 200 and o["status"] == "exit 4" and o["exit_code"] == 4, o
    st, o = api.tool(sid, "bash", {"command": "echo hi"})
    assert o["status"] == "ok" and o["exit_code"] == 0 and o["observation"] == "[stdout]\nhi\n[status: ok]", o
    st, o = api.tool(sid, "finish", {"answer": "42"})
    assert st == 200 and o["finished"] is True and o["answer"] == "42", o
    st, o = api.tool(sid, "bash", {"command": "echo after finish"})
    assert st == 200 and "finished" not in o, o
    st, o = api.tool(sid, "bash", {"command": "seq 1 200000"})
    assert st == 200 and o["truncated"] is True and len(o["observation"]) < 300000, (len(o["observation"]),)


def t_exec_beside_tools(s, api):
    """The API's exec of a plain command runs in the persistent shell the
    bash tool uses, by a helper function: it leaves that shell's cwd, its
    functions and variables as they were, respects a function of the
    command's name as a subshell would, and still works when the shell
    lost the helper (the web defines it again; the command runs once)."""
    sid = api.create()

    def ex(cmd, **kw):
        body = dict(kw, command=cmd)
        st, o = api.call("POST", "/api/sandboxes/%s/exec" % sid, body)
        assert st == 200, (st, o)
        return o

    def sh(cmd):
        st, o = api.tool(sid, "bash", {"command": cmd})
        assert st == 200, (st, o)
        return o["observation"]

    try:
        sh("cd /usr && export KEEP=kept")
        r = ex("pwd", cwd="/etc")
        assert r["stdout"] == "/etc\n" and r["return_code"] == 0, r
        r = ex("printenv KEEP")
        assert r["stdout"] == "kept\n", r
        assert "/usr\nkept" in sh("pwd; echo $KEEP; hash"), sh("pwd")
        # the helper gone from the shell: defined again, the command runs once
        sh("unset -f __llmbox_exec")
        assert "__llmbox_exec" not in sh("declare -F")
        r = ex("mkdir /tmp/once-dir")  # a second run would fail: it exists
        assert r["return_code"] == 0 and r["stderr"] == "", r
        assert "declare -f __llmbox_exec" in sh("declare -F")
        r = ex("pwd", cwd="/tmp")
        assert r["stdout"] == "/tmp\n" and r["stderr"] == "", r
        assert "/usr\n" in sh("pwd"), sh("pwd")
        # a function of the command's name runs, as in a subshell, and its cd stays there
        sh("uname() { echo from-function; cd /; }")
        r = ex("uname", cwd="/etc")
        assert r["stdout"] == "from-function\n", r
        assert "/usr\n" in sh("pwd"), sh("pwd")
        # a timeout in a plain command: the shell's cwd is put back
        r = ex("sleep 30", cwd="/etc", timeout_s=1)
        assert r["error_type"] == "timeout", r
        assert "/usr\n" in sh("pwd"), sh("pwd")
        r = ex("pwd")
        assert r["stdout"] == "/testbed\n", r
    finally:
        api.call("DELETE", "/api/sandboxes/" + sid)


def t_errors(s, api):
    sid = api.create()
    try:
        errors(api, sid)
    finally:
        api.call("DELETE", "/api/sandboxes/" + sid)


def errors(api, sid):
    st, o = api.tool(sid, "no_such_tool", {})
    assert st == 404 and o["error"]["code"] == "unknown_tool", (st, o)
    assert "no_such_tool" in o["error"]["message"] and "bash" in o["error"]["tools"], o
    assert "file_editor" in o["error"]["tools"], o
    st, o = api.tool(sid, "bash", {"cmd": "ls"})
    assert st == 400 and o["error"]["code"] == "bad_arguments", (st, o)
    assert "command" in o["error"]["message"] and "command" in o["error"]["observation"], o
    st, o = api.tool(sid, "bash", raw=b"[1, 2")
    assert st == 400 and o["error"]["code"] == "bad_arguments", (st, o)
    st, o = api.tool(sid, "bash", raw=b"[]")
    assert st == 400 and o["error"]["code"] == "bad_arguments", (st, o)
    st, o = api.tool(sid, "bash", raw=b'{"command": "' + b"x" * (5 << 20) + b'"}', timeout=120)
    assert st == 413, (st, o)
    st, o = api.tool(sid, "bash", {"command": "echo x"}, token=None)
    assert st == 401, (st, o)
    st, o = api.tool(sid, "bash", {"command": "echo x"}, token="wrong")
    assert st == 401, (st, o)
    st, o = api.tool("0" * 32, "bash", {"command": "echo x"})
    assert st == 404 and o["error"]["code"] == "not_found", (st, o)
    # one call at a time: the second is refused while the first runs
    res = {}

    def slow():
        res["a"] = api.tool(sid, "bash", {"command": "sleep 0.8; echo slow"})
    th = threading.Thread(target=slow)
    th.start()
    time.sleep(0.3)
    st, o = api.tool(sid, "bash", {"command": "echo fast"})
    th.join()
    assert st == 409 and o["error"]["code"] == "tool_busy", (st, o)
    assert res["a"][0] == 200 and res["a"][1]["observation"] == "[stdout]\nslow\n[status: ok]", res


def t_crash_and_destroy(s, api):
    sid = api.create()
    st, o = api.tool(sid, "file_editor", {"command": "create", "path": NOTES, "file_text": "one\n"})
    assert st == 200, (st, o)
    st, o = api.tool(sid, "file_editor", {"command": "str_replace", "path": NOTES, "old_str": "one", "new_str": "two"})
    assert st == 200, (st, o)
    st, o = api.tool(sid, "bash", {"command": "cd /tmp/tooltest"})
    pids = host_pids(s)
    assert len(pids) == 1, pids
    os.kill(pids[0], signal.SIGKILL)
    st, o = api.tool(sid, "bash", {"command": "echo after"})
    assert st == 502 and o["error"]["code"] == "tool_host_crashed", (st, o)
    assert "undo history" in o["error"]["message"] and "signal 9" in o["error"]["message"], o
    # the next call has a new host: the shell (in the sandbox) is kept, the undo history is not
    st, o = api.tool(sid, "bash", {"command": "pwd; cat notes.txt"})
    assert st == 200 and o["observation"] == "[stdout]\n/tmp/tooltest\ntwo\n[status: ok]", (st, o)
    assert o["tool_host_restarted"] is True, o
    st, o = api.tool(sid, "file_editor", {"command": "undo_edit", "path": NOTES})
    assert st == 200 and o["status"] == "error" and "tool_host_restarted" not in o, (st, o)
    new = host_pids(s)
    assert len(new) == 1 and new != pids, (new, pids)
    # killed in the middle of a call
    res = {}

    def slow():
        res["a"] = api.tool(sid, "bash", {"command": "sleep 5"})
    th = threading.Thread(target=slow)
    th.start()
    time.sleep(0.5)
    os.kill(new[0], signal.SIGKILL)
    th.join()
    assert res["a"][0] == 502 and res["a"][1]["error"]["code"] == "tool_host_crashed", res
    # the command it ran goes on in the sandbox, as the 502 says
    st, o = api.tool(sid, "bash", {"command": "echo back"})
    assert st == 200 and o["status"] == "busy", (st, o)
    st, o = api.tool(sid, "bash", {"command": "C-c"})
    assert st == 200 and o["status"] == "interrupted", (st, o)
    st, o = api.tool(sid, "bash", {"command": "echo back"})
    assert st == 200 and o["observation"] == "[stdout]\nback\n[status: ok]", (st, o)
    # the host dies with its sandbox
    host = host_pids(s)
    assert len(host) == 1, host
    st, o = api.call("DELETE", "/api/sandboxes/" + sid)
    assert st == 200, (st, o)
    assert not alive(host[0]), "the tool host outlived its sandbox"
    st, o = api.tool(sid, "bash", {"command": "echo x"})
    assert st == 404, (st, o)
    # and with its TTL
    st, o = api.call("POST", "/api/sandboxes", {"ttl_s": 2})
    assert st == 201, (st, o)
    sid = o["id"]
    st, o = api.tool(sid, "bash", {"command": "echo ttl"})
    assert st == 200, (st, o)
    host = host_pids(s)
    assert len(host) == 1, host
    deadline = time.time() + 10
    while alive(host[0]) and time.time() < deadline:
        time.sleep(0.2)
    assert not alive(host[0]), "the tool host outlived its sandbox's TTL"
    assert host_pids(s) == [], host_pids(s)


def t_web_exit(s, api):
    sid = api.create()
    st, o = api.tool(sid, "bash", {"command": "echo before > /tmp/kept.txt"})
    assert st == 200, (st, o)
    host = host_pids(s)
    assert len(host) == 1, host
    s.kill("web")
    deadline = time.time() + 10
    while alive(host[0]) and time.time() < deadline:
        time.sleep(0.1)
    assert not alive(host[0]), "the tool host outlived the web"
    # the restarted web adopts the sandbox (its lease) and starts a new host for it
    s.restart("web")
    st, o = api.tool(sid, "bash", {"command": "cat /tmp/kept.txt"})
    assert st == 200 and o["observation"] == "[stdout]\nbefore\n[status: ok]", (st, o)
    api.call("DELETE", "/api/sandboxes/" + sid)
    assert host_pids(s) == [], host_pids(s)


def plugin_dir():
    """The real tools and the test plugins that crash and hang."""
    d = tempfile.mkdtemp(prefix="llmbox-tool-plugins-")
    os.chmod(d, 0o755)
    for n in ("bash", "file_editor", "finish"):
        os.symlink(os.path.join(REPO, "plugins", n + ".so"), os.path.join(d, n + ".so"))
    for n in ("crashfix", "hangfix"):
        os.symlink(os.path.join(REPO, "tests", "plugins", n + ".so"), os.path.join(d, n + ".so"))
    return d


def t_plugin_crash_hang(s, api):
    sid = api.create()
    try:
        st, o = api.tool(sid, "crashfix", {})
        assert st == 502 and o["error"]["code"] == "tool_host_crashed", (st, o)
        assert "the tool crashfix crashed (signal" in o["error"]["message"], o
        assert "crashfix.so+0x" in o["error"]["message"], o
        st, o = api.tool(sid, "bash", {"command": "echo up"})
        assert st == 200 and o["tool_host_restarted"] is True, (st, o)
        t0 = time.time()
        st, o = api.tool(sid, "hangfix", {})
        assert st == 502 and "hangfix ran longer than tool_timeout_s (2 s)" in o["error"]["message"], (st, o)
        assert time.time() - t0 < 10, time.time() - t0
        st, o = api.tool(sid, "bash", {"command": "echo up"})
        assert st == 200 and o["observation"] == "[stdout]\nup\n[status: ok]", (st, o)
    finally:
        api.call("DELETE", "/api/sandboxes/" + sid)
    assert host_pids(s) == [], host_pids(s)


def main():
    r = Reporter()
    if not image_ready():
        print("SKIP sandbox_tools: the sandbox image is not built (make image)")
        return
    if os.geteuid() != 0:
        print("SKIP sandbox_tools: sandboxd needs root")
        return
    with Stack(SCENARIO, env={"LLMBOX_BASH_SOFT_TIMEOUT_S": "1"},
               web_env={"LLMBOX_SANDBOX_API_TOKEN": TOKEN}) as s:
        api = Api(s)
        r.run("tools_same_as_agent", t_same_as_agent, s, api)
        r.run("tools_errors", t_errors, s, api)
        r.run("tools_exec_beside_tools", t_exec_beside_tools, s, api)
        r.run("tools_crash_and_destroy", t_crash_and_destroy, s, api)
        r.run("tools_host_dies_with_web", t_web_exit, s, api)
    d = plugin_dir()
    try:
        with Stack(env={"LLMBOX_PLUGINS": d, "LLMBOX_TOOL_TIMEOUT_S": "2",
                        "LLMBOX_TOOLS": "bash, file_editor, finish, crashfix, hangfix"},
                   web_env={"LLMBOX_SANDBOX_API_TOKEN": TOKEN}) as s:
            r.run("tools_plugin_crash_and_hang", t_plugin_crash_hang, s, Api(s))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    r.done()


if __name__ == "__main__":
    main()
