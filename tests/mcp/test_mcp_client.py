#!/usr/bin/env python3
"""MCP servers' tools for llmbox's agent (server/mcpclient/, docs/MCP.md):
one task of the real stack (sandboxd, web, nginx) driven by the scripted
fake model, whose model section offers five servers:

  box     tests/mcp/mcp_stdio_server.py (the task's input file) run INSIDE
          the sandbox over stdio: whoami, fail, image, echo
  hang    the same script, never answering tools/call (timeout_s 5)
  flood   the same script, answering tools/call with 5000 notifications
  huge    the same script, listing a tool whose schema nests 40 levels
  gate    a Streamable HTTP server on loopback (below, in this file) that
          wants the configured Authorization header, gives a session id,
          and answers tools/call as an event stream
  everything  @modelcontextprotocol/server-everything (pinned in
          tests/mcp/package-lock.json) over Streamable HTTP on loopback

Checks (each fails on the code before the MCP client: the tools were not
offered, so the model's calls were "Unknown tool"):
- stdio_result_reaches_model: whoami's text is in the model's next request,
  and the server ran in the sandbox (the file it wrote is an output of the
  task; the host has no such file; its hostname is not the host's).
- trajectory_names_server: the trajectory's tool results and the tool
  events carry mcp_server; the tools list offered box__whoami.
- tool_error_is_error_observation: isError comes back as "Error from the
  MCP server box: ..." with status "error".
- hang_times_out_and_task_goes_on: hang__wait answers "did not answer
  tools/call within 5 s", and a later call of box still works.
- flood_is_bounded: flood__spam fails with "more than 1000 other messages".
- huge_schema_refused: the task's log says the server huge was left out
  for its nesting, and huge__deep was never offered.
- image_written_in_sandbox: box__image's picture is a file under /tmp/mcp.
- http_header_and_session: gate saw the configured header and its session
  id; when it forgets the session (404), a new one is started and the call
  goes through; the header's secret is in no model request and not in the
  trajectory.
- server_everything_echo: everything__echo's answer reaches the model.
- unknown_names_refused: `llmbox run --mcp nope` and a model naming an
  unknown server are refused with a sentence.
- task_form_chooses_servers: POST /api/tasks with mcp=nope is a 400 with
  the sentence; GET /api/info lists the names (no header secret); mcp=gate
  offers gate's tools and not the model's box; a follow-up of that task is
  taken (the old web refused it as an evaluation's run) and its round
  starts gate again and calls it.
- rollout_chooses_servers: a rollout request's mcp ["nope"] is a 400 with
  the sentence; mcp ["gate"] gives its sample the server gate (which sees
  one more initialize) and no other (its trajectory's tools).

A second stack runs server-everything over STDIO inside a sandbox: an image
built once per run with llmbox's builder (node_image.py: the host's node and
tests/mcp/node_modules COPYed onto a tiny base) is the task's image, and
[mcp "everything"] is `node .../server-everything/dist/index.js stdio`:
- everything_stdio_in_sandbox: a bash call in the task's sandbox finds the
  server's process in the sandbox's own /proc (its pid namespace) and the
  host has no /opt/se, so it ran there; everything__echo's text and
  everything__get-sum's "The sum of 2 and 40 is 42." reach the model, and
  the trajectory names the server. Checked against the old code: the same
  as above (the tools were not offered: "Unknown tool").

    python3 tests/mcp/test_mcp_client.py
"""
import glob
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from node_image import ENTRY, build_node_image  # noqa: E402
from stack import LLMBOX, Reporter, Stack, free_port, image_ready, multipart  # noqa: E402

SECRET = "secret-xyz-4711"
TOKEN = "mcp-client-test-token-0123456789abcdef"


def call(name, args=None):
    return {"tool_calls": [{"name": name, "arguments": args or {}}]}


STEPS = [
    call("box__whoami"),                                  # request 2 sees its result
    call("box__fail"),                                    # 3
    call("hang__wait"),                                   # 4
    call("flood__spam"),                                  # 5
    call("box__image"),                                   # 6
    call("gate__check"),                                  # 7
    call("everything__echo", {"message": "hello from llmbox"}),  # 8
    call("box__echo", {"text": "after the hang"}),        # 9
    call("bash", {"command": "ls /tmp/mcp"}),             # 10
    call("gate__check"),                                  # 11: gate forgot the session: a new one
    call("finish", {"answer": "done"}),
    # the task made through the API with mcp=gate (task_form_chooses_servers)
    call("gate__check"),
    call("finish", {"answer": "form"}),
    call("gate__check"),                                  # its follow-up
    call("finish", {"answer": "again"}),
]


class Gate(http.server.BaseHTTPRequestHandler):
    """A Streamable HTTP MCP server: JSON answers, and an event stream for
    tools/call (a notification first, then the response)."""
    seen = []  # (method, authorization, session id, protocol version)
    sessions = 0  # sessions given; the second check of session 1 is a 404 (the server restarted)
    checks = 0

    def log_message(self, *a):
        pass

    def do_DELETE(self):
        self.send_response(204)
        self.end_headers()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        auth, sid = self.headers.get("Authorization"), self.headers.get("Mcp-Session-Id")
        Gate.seen.append((body.get("method"), auth, sid, self.headers.get("MCP-Protocol-Version")))
        if auth != "Bearer " + SECRET:
            self.send_response(401)
            self.end_headers()
            return
        m, mid = body.get("method"), body.get("id")
        if mid is None:
            self.send_response(202)
            self.end_headers()
            return
        if sid == "gate-session-1" and m == "tools/call":
            Gate.checks += 1
            if Gate.checks == 2:
                self.send_response(404)
                self.end_headers()
                return
        if m == "initialize":
            Gate.sessions += 1
            res = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "gate", "version": "1"}}
        elif m == "tools/list":
            res = {"tools": [{"name": "check", "description": "What the server saw.",
                              "inputSchema": {"type": "object", "properties": {}}}]}
        else:
            text = "authorized; session=%s; protocol=%s" % (sid, self.headers.get("MCP-Protocol-Version"))
            out = ("event: message\ndata: %s\n\n" % json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                                                                 "params": {"progressToken": 1, "progress": 1}}) +
                   "data: %s\n\n" % json.dumps({"jsonrpc": "2.0", "id": mid, "result": {
                       "content": [{"type": "text", "text": text}]}})).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        out = json.dumps({"jsonrpc": "2.0", "id": mid, "result": res}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if m == "initialize":
            self.send_header("Mcp-Session-Id", "gate-session-%d" % Gate.sessions)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def conf(gate_port, every_port):
    cmd = "python3 /testbed/input/mcp_stdio_server.py"
    return ("[model \"default\"]\nbase_url = {model_url}\nmodel = fake-model\n"
            "mcp = box, hang, flood, huge, gate, everything\n\n"
            "[mcp \"box\"]\ncommand = %s box\ntimeout_s = 30\n\n"
            "[mcp \"hang\"]\ncommand = %s hang\ntimeout_s = 5\n\n"
            "[mcp \"flood\"]\ncommand = %s flood\ntimeout_s = 30\n\n"
            "[mcp \"huge\"]\ncommand = %s huge\n\n"
            "[mcp \"gate\"]\nurl = http://127.0.0.1:%d/mcp\nheader = Authorization: Bearer %s\n\n"
            "[mcp \"everything\"]\nurl = http://127.0.0.1:%d/mcp\ntimeout_s = 30\n"
            % (cmd, cmd, cmd, cmd, gate_port, SECRET, every_port))


class Run:
    pass


def requests(st):
    out = []
    for p in sorted(glob.glob(os.path.join(st.model_log, "request-*.json"))):
        with open(p) as f:
            out.append(json.load(f))
    return out


def observation(reqs, n):
    """The last tool message of request n (1-based): the result of step n-1."""
    msgs = [m for m in reqs[n - 1]["messages"] if m.get("role") == "tool"]
    return msgs[-1]["content"]


def t_stdio_result_reaches_model(st, run):
    o = observation(run.reqs, 2)
    assert "hostname=" in o and "testbed=True" in o, o
    host = socket.gethostname()
    assert "hostname=%s " % host not in o, (host, o)
    names = [a["path"] for a in run.task.get("artifacts", [])]
    assert "from_mcp.txt" in names, names
    assert not os.path.exists("/testbed/output/from_mcp.txt"), "the server ran on the host"


def t_trajectory_names_server(st, run):
    results = [r for t in run.traj["turns"] for r in t.get("tool_results", [])]
    by = {r["name"]: r for r in results}
    assert by["box__whoami"].get("mcp_server") == "box" and by["box__whoami"]["status"] == "ok", by
    assert by["everything__echo"].get("mcp_server") == "everything", by
    assert "mcp_server" not in by["bash"], by["bash"]
    offered = [t["function"]["name"] for t in run.traj["tools"]]
    assert "box__whoami" in offered and "gate__check" in offered and "bash" in offered, offered
    conf = run.traj["config"]
    assert conf["mcp"] == ["box", "hang", "flood", "huge", "gate", "everything"], conf
    assert "box__whoami" in conf["tools"] and "huge__deep" not in conf["tools"], conf["tools"]
    tools = [d for _, e, d in run.events if e == "tool"]
    assert any(d.get("mcp_server") == "box" and d["name"] == "box__whoami" for d in tools), tools


def t_tool_error_is_error_observation(st, run):
    o = observation(run.reqs, 3)
    assert o.startswith("Error from the MCP server box: the widget is broken"), o
    results = {r["name"]: r for t in run.traj["turns"] for r in t.get("tool_results", [])}
    assert results["box__fail"]["status"] == "error", results["box__fail"]


def t_hang_times_out_and_task_goes_on(st, run):
    o = observation(run.reqs, 4)
    assert "The MCP server hang did not answer tools/call within 5 s." in o, o
    assert "echo: after the hang" in observation(run.reqs, 9), observation(run.reqs, 9)
    assert run.task["status"] == "succeeded", run.task


def t_flood_is_bounded(st, run):
    o = observation(run.reqs, 5)
    assert "more than 1000 other messages" in o, o


def t_huge_schema_refused(st, run):
    errs = [d.get("message", "") for _, e, d in run.events if e == "error"]
    assert any("The MCP server huge was left out" in m and "nested more than 12 levels" in m for m in errs), errs
    offered = [t["function"]["name"] for t in run.reqs[0]["tools"]]
    assert not any(n.startswith("huge__") for n in offered), offered


def t_image_written_in_sandbox(st, run):
    o = observation(run.reqs, 6)
    assert "a picture follows" in o and "was written to /tmp/mcp/box-" in o, o
    assert "box-5-1.png" in observation(run.reqs, 10), observation(run.reqs, 10)


def t_http_header_and_session(st, run):
    o = observation(run.reqs, 7)
    assert o.startswith("authorized; session=gate-session-1; protocol=2025-06-18"), o
    methods = [m for m, _, _, _ in Gate.seen]
    assert methods[:3] == ["initialize", "notifications/initialized", "tools/list"], Gate.seen
    o = observation(run.reqs, 11)
    assert o.startswith("authorized; session=gate-session-2;"), o
    for r in run.reqs:
        assert SECRET not in json.dumps(r), "the header's secret reached the model"
    assert SECRET not in json.dumps(run.traj)


def t_server_everything_echo(st, run):
    o = observation(run.reqs, 8)
    assert "hello from llmbox" in o, o


def t_unknown_names_refused(st, run):
    env = dict(st.env)
    p = subprocess.run([LLMBOX, "run", "--mcp", "nope", "hi"], env=env, cwd=st.prefix, capture_output=True,
                       text=True, timeout=60)
    out = p.stdout + p.stderr
    assert p.returncode != 0 and 'There is no MCP server called "nope"' in out, out
    bad = os.path.join(st.prefix, "bad.conf")
    with open(bad, "w") as f:
        f.write("[model \"m\"]\nbase_url = http://127.0.0.1:9/v1\nmcp = ghost\n")
    p = subprocess.run([LLMBOX, "run", "hi"], env=dict(env, LLMBOX_CONF=bad), cwd=st.prefix,
                       capture_output=True, text=True, timeout=60)
    out = p.stdout + p.stderr
    assert p.returncode != 0 and 'There is no MCP server called "ghost"' in out, out


def t_rollout_chooses_servers(st, run):
    auth = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
    body = {"prompt": "go", "n": 1, "reward": {"scorer": "numeric", "ground_truth": 0}}
    code, _, raw = st.request("POST", "/api/rollouts", json.dumps(dict(body, mcp=["nope"])).encode(), auth)
    assert code == 400 and b'There is no MCP server called \\"nope\\"' in raw, (code, raw)
    before = sum(1 for m, _, _, _ in Gate.seen if m == "initialize")
    code, _, raw = st.request("POST", "/api/rollouts", json.dumps(dict(body, mcp=["gate"])).encode(), auth)
    assert code in (200, 201, 202), (code, raw)
    gid = json.loads(raw)["id"]
    deadline = time.time() + 120
    while time.time() < deadline:
        code, _, raw = st.request("GET", "/api/rollouts/" + gid, None, auth)
        if json.loads(raw)["status"] != "running":
            break
        time.sleep(0.3)
    after = sum(1 for m, _, _, _ in Gate.seen if m == "initialize")
    assert after == before + 1, (before, after, raw[:500])
    # the request's list replaced the model's: only gate's tools were offered
    sample = json.loads(raw)["samples"][0]
    code, _, raw = st.request("GET", sample["trajectory_url"], None, auth)
    offered = [t["function"]["name"] for t in json.loads(raw)["tools"]]
    assert "gate__check" in offered and not any(n.startswith("box__") for n in offered), offered


def initializes():
    return sum(1 for m, _, _, _ in Gate.seen if m == "initialize")


def t_task_form_chooses_servers(st, run):
    # an unknown name is refused with a sentence, and nothing is made
    code, t = st.create_task("form mcp", mcp="nope")
    assert code == 400 and 'There is no MCP server called "nope"' in str(t), (code, t)
    code, info = st.get_json("/api/info")
    assert code == 200 and "gate" in info["mcp"] and SECRET not in json.dumps(info), info
    before = initializes()
    code, t = st.create_task("form mcp", mcp="gate")
    assert code == 201, (code, t)
    task = st.wait_task(t["id"], 120)
    assert task["status"] == "succeeded", task
    assert initializes() == before + 1, (before, initializes())
    code, traj = st.get_json("/api/tasks/%s/trajectory" % t["id"])
    offered = [x["function"]["name"] for x in traj["tools"]]
    assert "gate__check" in offered and not any(n.startswith("box__") for n in offered), offered
    # the choice is the user's, not an evaluation's run: a follow-up works
    # and its round is offered the same server
    ctype, body = multipart({"prompt": "again", "fresh": "1"}, [])  # the stack keeps no sandbox between rounds
    code, _, raw = st.request("POST", "/api/tasks/%s/messages" % t["id"], body, {"Content-Type": ctype})
    assert code in (200, 201, 202), (code, raw)
    deadline = time.time() + 120
    while time.time() < deadline:
        code, task = st.get_json("/api/tasks/" + t["id"])
        if task.get("round", 1) >= 2 and task["status"] in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.3)
    assert task["status"] == "succeeded", task
    assert initializes() == before + 2, (before, initializes())
    obs = [m for m in requests(st)[-1]["messages"] if m.get("role") == "tool"]
    assert "authorized; session=" in json.dumps(obs[-1]), obs[-1]


# the server-everything-over-stdio stack: its own scenario
NODE_STEPS = [
    # the pattern's [.] keeps grep's own command line from matching
    call("bash", {"command": "grep -a -c 'server-everything/dist/index[.]js stdio' /proc/[0-9]*/cmdline"
                             " | grep -v ':0$'"}),                       # request 2
    call("everything__echo", {"message": "hello from the sandbox"}),    # 3
    call("everything__get-sum", {"a": 2, "b": 40}),                     # 4
    call("finish", {"answer": "node"}),
]


def node_conf():
    return ("[model \"default\"]\nbase_url = {model_url}\nmodel = fake-model\nmcp = everything\n\n"
            "[mcp \"everything\"]\ncommand = /usr/local/bin/node %s stdio\ntimeout_s = 60\n" % ENTRY)


def t_everything_stdio_in_sandbox(st, run):
    assert run.task["status"] == "succeeded", run.task
    o = observation(run.reqs, 2)
    # the server's process is in the sandbox's pid namespace; the host has no such path
    assert "/cmdline:1" in o, o
    assert not os.path.exists("/opt/se"), "the host has /opt/se: the check proves nothing here"
    o = observation(run.reqs, 3)
    assert "hello from the sandbox" in o and not o.startswith("Error"), o
    o = observation(run.reqs, 4)
    assert "The sum of 2 and 40 is 42." in o, o
    results = {r["name"]: r for t in run.traj["turns"] for r in t.get("tool_results", [])}
    assert results["everything__get-sum"].get("mcp_server") == "everything", results
    assert results["everything__echo"]["status"] == "ok", results


def node_stack(r):
    """server-everything over stdio in a sandbox of an image built here."""
    tmp = tempfile.mkdtemp(prefix="llmbox-mcp-node-")
    os.chmod(tmp, 0o755)  # the web (an unprivileged user) looks the image up in the store
    try:
        t0 = time.time()
        store, image = build_node_image(tmp)
        print("node image built in %.1f s" % (time.time() - t0), file=sys.stderr)
        with Stack(scenario=NODE_STEPS, conf=node_conf(), env={"LLMBOX_IMAGE_STORE": store}) as st:
            run = Run()
            code, t = st.create_task("Use the everything server.", image=image)
            assert code == 201, (code, t)
            run.task = st.wait_task(t["id"], 180)
            code, run.traj = st.get_json("/api/tasks/%s/trajectory" % t["id"])
            run.reqs = requests(st)
            if run.task["status"] != "succeeded" or len(run.reqs) < 4:
                print(json.dumps(run.task, indent=1)[:3000], file=sys.stderr)
                print(st.logs()[-6000:], file=sys.stderr)
            r.run("everything_stdio_in_sandbox", t_everything_stdio_in_sandbox, st, run)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def t_image_reaches_anthropic_model(st, run):
    """An image of a tool result goes to an Anthropic model as an image
    block in the tool_result (the same base64 the server sent), and the
    trajectory names the file, not the bytes; to an OpenAI-compatible model
    (the main run) the tool message is text only and names the file."""
    o = [m for m in run.reqs[5]["messages"] if m.get("role") == "tool"][-1]
    assert "images" not in o and "iVBORw0KGgo" not in json.dumps(run.reqs[5]), o
    assert "was written to /tmp/mcp/box-" in o["content"], o
    with open(os.path.join(HERE, "mcp_stdio_server.py"), "rb") as f:
        server_py = f.read()
    png = [ln for ln in server_py.decode().splitlines() if ln.startswith("PNG = ")][0].split('"')[1]
    cf = ("[model \"default\"]\nprovider = anthropic\nbase_url = {model_url}\nmodel = fake-claude\nmcp = box\n\n"
          "[mcp \"box\"]\ncommand = python3 /testbed/input/mcp_stdio_server.py box\ntimeout_s = 30\n")
    with Stack(scenario=[call("box__image"), call("finish", {"answer": "seen"})], conf=cf) as a:
        code, t = a.create_task("Look at the picture.", files=[("mcp_stdio_server.py", server_py)])
        assert code == 201, (code, t)
        task = a.wait_task(t["id"], 180)
        assert task["status"] == "succeeded", (task, a.logs()[-3000:])
        reqs = requests(a)
        assert len(reqs) == 2, len(reqs)
        results = [b for m in reqs[1]["messages"] if m["role"] == "user" and isinstance(m["content"], list)
                   for b in m["content"] if b.get("type") == "tool_result"]
        parts = results[-1]["content"]
        assert isinstance(parts, list), results[-1]
        assert parts[0]["type"] == "text" and "/tmp/mcp/box-1-1.png" in parts[0]["text"], parts[0]
        src = parts[1]["source"]
        assert parts[1]["type"] == "image" and src == {"type": "base64", "media_type": "image/png", "data": png}, \
            parts[1]
        code, traj = a.get_json("/api/tasks/%s/trajectory" % t["id"])
        tool = [m for m in traj["messages"] if m.get("role") == "tool" and "box-1-1.png" in m["content"]][0]
        assert tool["images"] == [{"path": "/tmp/mcp/box-1-1.png", "media_type": "image/png"}], tool
        assert png not in json.dumps(traj), "the trajectory holds the image's bytes"


def main():
    r = Reporter()
    if not image_ready():
        print("SKIP mcp_client: the sandbox image is not built (make image)")
        return
    if os.geteuid() != 0:
        print("SKIP mcp_client: sandboxd needs root")
        return
    if not os.path.isdir(os.path.join(HERE, "node_modules", "@modelcontextprotocol", "server-everything")):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=HERE, check=True,
                       stdout=sys.stderr)
    gate = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Gate)
    threading.Thread(target=gate.serve_forever, daemon=True).start()
    every_port = free_port()
    every = subprocess.Popen(["node", os.path.join(HERE, "node_modules", "@modelcontextprotocol",
                                                   "server-everything", "dist", "index.js"), "streamableHttp"],
                             env=dict(os.environ, PORT=str(every_port)), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", every_port), 1).close()
                break
            except OSError:
                time.sleep(0.2)
        with open(os.path.join(HERE, "mcp_stdio_server.py"), "rb") as f:
            server_py = f.read()
        with Stack(scenario=STEPS, conf=conf(gate.server_address[1], every_port),
                   web_env={"LLMBOX_SANDBOX_API_TOKEN": TOKEN}) as st:
            run = Run()
            code, t = st.create_task("Use the MCP tools.", files=[("mcp_stdio_server.py", server_py)])
            assert code == 201, (code, t)
            run.task = st.wait_task(t["id"], 180)
            run.events = st.events(t["id"])
            code, run.traj = st.get_json("/api/tasks/%s/trajectory" % t["id"])
            run.reqs = requests(st)
            if run.task["status"] != "succeeded" or len(run.reqs) < 11:
                print(json.dumps(run.task, indent=1)[:3000], file=sys.stderr)
                print(st.logs()[-6000:], file=sys.stderr)
            for name, fn in [("stdio_result_reaches_model", t_stdio_result_reaches_model),
                             ("trajectory_names_server", t_trajectory_names_server),
                             ("tool_error_is_error_observation", t_tool_error_is_error_observation),
                             ("hang_times_out_and_task_goes_on", t_hang_times_out_and_task_goes_on),
                             ("flood_is_bounded", t_flood_is_bounded),
                             ("huge_schema_refused", t_huge_schema_refused),
                             ("image_written_in_sandbox", t_image_written_in_sandbox),
                             ("image_reaches_anthropic_model", t_image_reaches_anthropic_model),
                             ("http_header_and_session", t_http_header_and_session),
                             ("server_everything_echo", t_server_everything_echo),
                             ("unknown_names_refused", t_unknown_names_refused),
                             ("task_form_chooses_servers", t_task_form_chooses_servers),
                             ("rollout_chooses_servers", t_rollout_chooses_servers)]:
                r.run(name, fn, st, run)
    finally:
        every.terminate()
        every.wait(10)
        gate.shutdown()
    if shutil.which("umoci"):
        node_stack(r)
    else:
        print("SKIP mcp_client everything_stdio_in_sandbox: umoci is not installed (scripts/deps.sh)")
    r.done()


if __name__ == "__main__":
    main()
