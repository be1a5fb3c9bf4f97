#!/usr/bin/env python3
"""llmbox as an MCP server (/mcp, docs/MCP.md): the official MCP TypeScript
SDK (@modelcontextprotocol/sdk, pinned in tests/mcp/package.json, installed
on first use) runs tests/mcp/client.mjs against the real stack: every tool,
progress notifications, task_run driven by the fake model, tool errors as
isError results, another user's task and a user's token on the sandboxes
refused, no token refused. Raw HTTP plays what the SDK never sends:
malformed JSON-RPC, missing and unknown sessions, oversized and too deep
messages, a caller that opens session after session. The MCP Inspector's
CLI mode (@modelcontextprotocol/inspector-cli) lists the tools. Needs root
(sandboxd), the built image and node; Python stdlib only.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import LLMBOX, Reporter, Stack, image_ready  # noqa: E402

TOKEN = "mcp-test-" + os.urandom(16).hex()
MCP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp")
SHOUT = ("tr a-z A-Z < /testbed/input/in.txt > /testbed/output/shout.txt && echo >> /testbed/output/shout.txt && "
         "head -c 20000 /dev/zero | tr '\\0' x > /testbed/output/big.txt")
SCENARIO = {
    "scenarios": [
        {"match": "[mcp]", "steps": [
            {"content": "Shouting.", "tool_calls": [{"name": "bash", "arguments": {"command": SHOUT}}]},
            {"content": "Done.", "tool_calls": [{"name": "finish", "arguments": {"answer": "I shouted it."}}]}]},
        {"match": "[long]", "steps": [{"content": "Thinking.", "delay_ms": 60000}]},
    ],
    "steps": [],
}
ACCEPT = "application/json, text/event-stream"


def new_user(name):
    """(token, hash) as `llmbox user add NAME` prints them."""
    out = subprocess.check_output([LLMBOX, "user", "add", name], text=True,
                                  env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LLMBOX_CONF": "/dev/null"})
    tok = [w for w in out.split() if w.startswith("lbx_")][0]
    hsh = [ln.split("=", 1)[1].strip() for ln in out.splitlines() if ln.startswith("token_sha256 =")][0]
    return tok, hsh


def post(st, body, token=TOKEN, session=None, ctype="application/json", extra=None):
    h = {"Content-Type": ctype, "Accept": ACCEPT}
    if token:
        h["Authorization"] = "Bearer " + token
    if session:
        h["Mcp-Session-Id"] = session
    h.update(extra or {})
    if not isinstance(body, bytes):
        body = (body if isinstance(body, str) else json.dumps(body)).encode()
    status, headers, data = st.request("POST", "/mcp", body, h, timeout=60)
    return status, {k.lower(): v for k, v in headers.items()} if isinstance(headers, dict) else dict(
        (k.lower(), v) for k, v in headers), data


def initialize(st, token=TOKEN, version="2025-11-25"):
    s, h, d = post(st, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}, token)
    assert s == 200, (s, d)
    return h["mcp-session-id"], json.loads(d)


def rpc_error(data):
    o = json.loads(data)
    assert o.get("jsonrpc") == "2.0" and "error" in o, o
    return o["id"], o["error"]["code"], o["error"]["message"]


# ---- the SDK ----

def t_sdk_client(st, users):
    env = dict(os.environ, MCP_URL="http://127.0.0.1:%d/mcp" % st.port, SBX_TOKEN=TOKEN,
               ALICE_TOKEN=users["alice"][0], BOB_TOKEN=users["bob"][0])
    p = subprocess.run(["node", "client.mjs"], cwd=MCP_DIR, env=env, capture_output=True, text=True, timeout=600)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith(("PASS ", "FAIL "))]
    for ln in lines:
        print("   " + ln, file=sys.stderr)
    fails = [ln for ln in lines if ln.startswith("FAIL ")]
    assert p.returncode == 0 and len(lines) >= 9 and not fails, "rc %d\n%s\n%s" % (
        p.returncode, "\n".join(fails or lines), p.stderr[-2000:])


def t_inspector_cli(st, users):
    # the MCP Inspector's CLI mode (@modelcontextprotocol/inspector-cli, pinned in
    # tests/mcp/package.json) lists /mcp's tools with the bearer token
    cli = os.path.join(MCP_DIR, "node_modules", ".bin", "mcp-inspector-cli")
    # the CLI looks for its own package.json at "../package.json" from the
    # current folder (then imports it relative to itself): a folder whose
    # parent holds a package.json
    cwd = os.path.join(MCP_DIR, "node_modules")
    p = subprocess.run([cli, "--cli", "http://127.0.0.1:%d/mcp" % st.port, "--transport", "http",
                        "--header", "Authorization: Bearer " + TOKEN, "--method", "tools/list"],
                       cwd=cwd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    out = p.stdout[p.stdout.index("{"):]
    names = [t["name"] for t in json.loads(out)["tools"]]
    assert "sandbox_exec" in names and "task_run" in names, names
    # without the token it is refused, and says so
    p = subprocess.run([cli, "--cli", "http://127.0.0.1:%d/mcp" % st.port, "--transport", "http",
                        "--method", "tools/list"], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0, (p.stdout[-2000:], p.stderr[-2000:])


# ---- raw HTTP ----

def t_initialize_raw(st, users):
    sid, o = initialize(st)
    assert len(sid) == 32 and o["result"]["protocolVersion"] == "2025-11-25", o
    # an older revision we speak is echoed; one we do not gets our newest
    assert initialize(st, version="2025-06-18")[1]["result"]["protocolVersion"] == "2025-06-18"
    assert initialize(st, version="1999-01-01")[1]["result"]["protocolVersion"] == "2025-11-25"
    s, h, d = post(st, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session=sid)
    assert s == 202 and not d, (s, d)
    s, h, d = post(st, {"jsonrpc": "2.0", "id": "p", "method": "ping"}, session=sid,
                   extra={"MCP-Protocol-Version": "2025-11-25"})
    assert s == 200 and json.loads(d) == {"jsonrpc": "2.0", "id": "p", "result": {}}, (s, d)


def t_malformed_jsonrpc(st, users):
    sid, _ = initialize(st)
    cases = [
        (b"{not json", 400, -32700, None),
        (b"", 400, -32700, None),
        (json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]), 400, -32600, None),
        (json.dumps({"jsonrpc": "1.0", "id": 7, "method": "ping"}), 400, -32600, 7),
        (json.dumps({"id": 8, "method": "ping"}), 400, -32600, 8),
        (json.dumps({"jsonrpc": "2.0", "id": None, "method": "ping"}), 400, -32600, None),
        (json.dumps({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}), 400, -32600, None),
        (json.dumps({"jsonrpc": "2.0", "id": 9, "method": 5}), 400, -32600, 9),
        (json.dumps({"jsonrpc": "2.0", "id": 10, "method": "ping", "params": [1]}), 400, -32600, 10),
        (json.dumps({"jsonrpc": "2.0", "id": 11}), 400, -32600, 11),
        (json.dumps("just a string"), 400, -32600, None),
        (json.dumps({"jsonrpc": "2.0", "id": 12, "method": "nope/nope"}), 200, -32601, 12),
        (json.dumps({"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"name": "sandbox_list",
                                                                                  "arguments": [1]}}), 200, -32602, 13),
        (json.dumps({"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {}}), 200, -32602, 14),
        (json.dumps({"jsonrpc": "2.0", "id": 15, "method": "resources/read", "params": {}}), 200, -32602, 15),
        (json.dumps({"jsonrpc": "2.0", "id": 16, "method": "resources/read",
                     "params": {"uri": "file:///etc/passwd"}}), 200, -32002, 16),
        # nesting past the budget: refused before it is built
        ('{"jsonrpc":"2.0","id":17,"method":"ping","params":{"a":' + "[" * 100 + "]" * 100 + "}}", 400, -32700,
         None),
    ]
    for body, want_status, want_code, want_id in cases:
        s, h, d = post(st, body, session=sid)
        rid, code, msg = rpc_error(d)
        assert (s, code, rid) == (want_status, want_code, want_id) and msg.endswith("."), (body[:80], s, d[:300])
    # the session survived all of them
    s, _, d = post(st, {"jsonrpc": "2.0", "id": 99, "method": "ping"}, session=sid)
    assert s == 200 and json.loads(d)["result"] == {}, (s, d)


def t_transport_refusals(st, users):
    sid, _ = initialize(st)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    s, _, d = post(st, ping)
    assert s == 400 and rpc_error(d)[1] == -32000 and "Mcp-Session-Id" in rpc_error(d)[2], (s, d)
    s, _, d = post(st, ping, session="0" * 32)
    assert s == 404 and rpc_error(d)[1] == -32001, (s, d)
    s, _, d = post(st, ping, session=sid, ctype="text/plain")
    assert s == 415, (s, d)
    s, _, d = post(st, ping, session=sid, extra={"Accept": "text/html"})
    assert s == 406, (s, d)
    s, _, d = post(st, ping, session=sid, extra={"MCP-Protocol-Version": "1999-01-01"})
    assert s == 400 and "protocol" in rpc_error(d)[2].lower(), (s, d)
    init = {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    s, _, d = post(st, init, session=sid)
    assert s == 400 and rpc_error(d)[1] == -32600, (s, d)
    # no server-initiated stream: GET is a 405 that says what is allowed
    s, h, d = st.request("GET", "/mcp", None, {"Authorization": "Bearer " + TOKEN, "Accept": "text/event-stream"})
    hd = {k.lower(): v for k, v in (h.items() if isinstance(h, dict) else h)}
    assert s == 405 and "POST" in hd.get("allow", ""), (s, hd)
    # a message past 8 MiB: the JSON-RPC error, not a dropped connection
    big = b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"' + b"a" * (8 << 20) + b'"}}'
    s, _, d = post(st, big, session=sid)
    assert s == 413, (s, d[:200])
    # no token at all
    s, _, d = post(st, ping, token=None)
    assert s == 401, (s, d)


def t_sessions_capped(st, users):
    """A caller that opens session after session keeps at most 16: the
    oldest ends (404 then), the newest work; another caller's are untouched."""
    bob_sid, _ = initialize(st, token=users["bob"][0])
    sids = [initialize(st, token=users["alice"][0])[0] for _ in range(20)]
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    alive = [post(st, ping, token=users["alice"][0], session=s)[0] for s in sids]
    assert alive[:4] == [404] * 4 and alive[4:] == [200] * 16, alive
    assert post(st, ping, token=users["bob"][0], session=bob_sid)[0] == 200
    # a session ended by DELETE is gone
    s, h, d = st.request("DELETE", "/mcp", None, {"Authorization": "Bearer " + users["bob"][0],
                                                  "Mcp-Session-Id": bob_sid})
    assert s == 204, (s, d)
    assert post(st, ping, token=users["bob"][0], session=bob_sid)[0] == 404


def main():
    r = Reporter()
    if not image_ready():
        print("SKIP mcp: the sandbox image is not built (make image)")
        return
    if os.geteuid() != 0:
        print("SKIP mcp: sandboxd needs root")
        return
    try:
        subprocess.run(["node", "--version"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        print("FAIL mcp: node is missing (scripts/deps.sh installs it)")
        sys.exit(1)
    if not os.path.isdir(os.path.join(MCP_DIR, "node_modules", "@modelcontextprotocol", "inspector-cli")):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=MCP_DIR, check=True,
                       stdout=sys.stderr)
    users = {n: new_user(n) for n in ("alice", "bob")}
    # bob may have one task queued or running: the API's limit, which task_run must meet too
    conf = "user_tasks_per_minute = 0\nuser_max_tasks = 0\n" + "".join(
        '[user "%s"]\ntoken_sha256 = %s\n%s' % (n, h, "max_tasks = 1\n" if n == "bob" else "")
        for n, (t, h) in users.items())
    with Stack(scenario=SCENARIO, conf=conf, web_env={"LLMBOX_SANDBOX_API_TOKEN": TOKEN,
                                                     "LLMBOX_SANDBOX_API_MAX": "8",
                                                     "LLMBOX_SSE_MAX_PER_CLIENT": "1"}) as st:
        r.run("initialize_raw", t_initialize_raw, st, users)
        r.run("malformed_jsonrpc", t_malformed_jsonrpc, st, users)
        r.run("transport_refusals", t_transport_refusals, st, users)
        r.run("sessions_capped_per_caller", t_sessions_capped, st, users)
        r.run("sdk_client", t_sdk_client, st, users)
        r.run("inspector_cli", t_inspector_cli, st, users)
    r.done()


if __name__ == "__main__":
    main()
