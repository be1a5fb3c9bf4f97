"""Logs through the real stack: one JSON access line per HTTP request in
var/log/web.log (method, route, path, status, bytes, duration_ms, task,
request_id), found by the X-Request-Id nginx returns; no query string,
token or cookie in any log; one line per task event in the agent's log;
no line per event-stream heartbeat. An operator greps and ships these
lines: each must parse, and each request must be there exactly once."""
import glob
import json
import os
import socket
import sys
import time
import http.client

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import Reporter, Stack, image_ready  # noqa: E402

API_TOKEN = "sbx-token-" + "7" * 40
QUERY_SECRET = "q-secret-5fa1c0de"
BEARER_SECRET = "wrong-bearer-9b8c7d6e"
COOKIE_SECRET = "cookie-secret-1a2b3c4d"


def step(*calls, delay_ms=0):
    d = {"content": "", "tool_calls": [{"name": n, "arguments": a} for n, a in calls]}
    if delay_ms:
        d["delay_ms"] = delay_ms
    return d


SCENARIOS = {"scenarios": [
    {"match": "[l-ok]", "steps": [
        step(("bash", {"command": "echo hi > /testbed/output/hi.txt"})),
        step(("finish", {"answer": "hi"})),
    ]},
    # the model thinks for 16 s: the open event stream sends one heartbeat (15 s)
    {"match": "[l-slow]", "steps": [
        step(("finish", {"answer": "slow"}), delay_ms=16000),
    ]},
]}


def lines(path, errors="strict"):
    out = []
    with open(path, errors=errors) as f:  # strict: every byte UTF-8
        for no, line in enumerate(f, 1):
            assert line.endswith("\n"), (path, no)
            out.append(json.loads(line))  # every line JSON
    return out


class Ctx:
    s = None
    requests = []   # (request_id, method, path, status, body, extra expectations)
    task = None


def req(method, path, body=None, headers=None, expect=None):
    s = Ctx.s
    st, h, b = s.request(method, path, body, headers)
    rid = h.get("x-request-id")
    assert rid and len(rid) == 32, h
    Ctx.requests.append((rid, method, path, st, b, expect or {}))
    return st, h, b


def access_lines():
    return [l for l in lines(os.path.join(Ctx.s.prefix, "var", "log", "web.log")) if l.get("msg") == "request"]


def access_lines_of(rid, timeout=5):
    """The access lines of one request: the web writes a request's line
    right after handing its answer to nginx, so a client that has the
    answer may look a moment before the line is there."""
    end = time.time() + timeout
    while True:
        got = [l for l in access_lines() if l.get("request_id") == rid]
        if got or time.time() > end:
            return got
        time.sleep(0.02)


def test_requests(s):
    Ctx.s = s
    st, t = s.create_task("[l-ok] write hi")
    assert st == 201, t
    Ctx.task = t["id"]
    s.wait_task(Ctx.task, 60)
    tid = Ctx.task
    req("GET", "/api/tasks/" + tid, expect={"route": "task", "task": tid})
    req("GET", "/api/tasks/%s/events" % tid, expect={"route": "task_events", "task": tid})
    req("GET", "/api/tasks/%s/artifacts" % tid, expect={"route": "task_artifacts", "task": tid})
    # nginx sends the file: the backend's body is empty
    req("GET", "/api/tasks/%s/artifacts/hi.txt" % tid, expect={"route": "task_artifact", "task": tid, "bytes": 0})
    req("GET", "/api/tasks?limit=5&token=" + QUERY_SECRET, expect={"route": "tasks", "path": "/api/tasks"})
    req("GET", "/api/tasks/" + "ab" * 16, expect={"route": "task", "task": "ab" * 16})
    req("GET", "/api/nothing-here", expect={"route": "unknown"})
    req("DELETE", "/api/health", expect={"route": "health"})
    req("HEAD", "/api/tasks/" + tid, expect={"route": "task", "task": tid, "bytes": 0})
    req("GET", "/api/models", headers={"Cookie": "session=" + COOKIE_SECRET}, expect={"route": "models"})
    req("POST", "/api/sandboxes", b"{}", {"Authorization": "Bearer " + BEARER_SECRET,
                                          "Content-Type": "application/json"}, expect={"route": "sandboxes"})
    st, _, b = req("POST", "/api/sandboxes", b"{}", {"Authorization": "Bearer " + API_TOKEN,
                                                     "Content-Type": "application/json"},
                   expect={"route": "sandboxes"})
    assert st == 201, (st, b)
    sid = json.loads(b)["id"]
    req("DELETE", "/api/sandboxes/" + sid, headers={"Authorization": "Bearer " + API_TOKEN},
        expect={"route": "sandboxes"})
    # a task made through the API: the line names it
    from stack import multipart
    ctype, body = multipart({"prompt": "[l-ok] again"}, [])
    st, _, b = req("POST", "/api/tasks", body, {"Content-Type": ctype}, expect={"route": "tasks"})
    assert st == 201, b
    s.wait_task(json.loads(b)["id"], 60)


def test_one_line_per_request(s):
    by_rid = {}
    for l in access_lines():
        if l.get("request_id"):
            by_rid.setdefault(l["request_id"], []).append(l)
    for rid, method, path, st, body, exp in Ctx.requests:
        got = by_rid.get(rid, [])
        assert len(got) == 1, (method, path, len(got))
        l = got[0]
        for k in ("ts", "level", "comp", "pid", "method", "route", "path", "status", "bytes", "duration_ms",
                  "client"):
            assert k in l, (k, l)
        assert l["comp"] == "web" and l["level"] in ("info", "warn"), l
        assert l["method"] == method and l["status"] == st, (method, path, st, l)
        assert l["path"] == exp.get("path", path.split("?")[0]), (path, l)
        assert l["route"] == exp["route"], (path, l)
        assert isinstance(l["duration_ms"], int) and l["duration_ms"] >= 0, l
        assert l["bytes"] == exp.get("bytes", len(body)), (path, l["bytes"], len(body))
        if "task" in exp:
            assert l.get("task") == exp["task"], (path, l)
        elif method == "POST" and path == "/api/tasks":
            assert l.get("task") == json.loads(body)["id"], l
        else:
            assert "task" not in l, l


def test_no_secrets_in_logs(s):
    logs = glob.glob(os.path.join(s.prefix, "var", "**", "*.log"), recursive=True)
    assert any(p.endswith("web.log") for p in logs) and any("agent-" in p for p in logs), logs
    for p in logs:
        text = open(p, errors="replace").read()
        for secret in (QUERY_SECRET, BEARER_SECRET, COOKIE_SECRET, API_TOKEN):
            assert secret not in text, (secret, p)


def fence(s):
    """A request whose own line is waited for: the web writes a line right
    after the answer, so the lines of the requests answered before it are
    written by then too."""
    st, h, _ = s.request("GET", "/api/nothing-here")
    assert st == 404 and len(access_lines_of(h.get("x-request-id"))) == 1


def test_probes_quiet(s):
    rids = []
    for _ in range(3):
        st, h, _ = s.request("GET", "/api/health")
        assert st == 200
        rids.append(h.get("x-request-id"))
    st, h, _ = s.request("GET", "/metrics")
    assert st == 200
    rids.append(h.get("x-request-id"))
    assert all(rids), rids
    fence(s)
    noisy = [l for l in access_lines() if l.get("request_id") in rids]
    assert not noisy, ("successful health checks and scrapes are debug lines", noisy)


def test_odd_bytes_in_path(s):
    # a raw non-UTF-8 byte in the request line: still one parseable line
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    c.sendall(b"GET /api/x\xff\xfey HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    resp = b""
    while True:
        d = c.recv(65536)
        if not d:
            break
        resp += d
    c.close()
    head = resp.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    assert " 404 " in head.split("\r\n")[0], head
    rid = [h.split(":", 1)[1].strip() for h in head.split("\r\n") if h.lower().startswith("x-request-id:")][0]
    got = access_lines_of(rid)
    assert len(got) == 1 and got[0]["path"] == "/api/x\ufffd\ufffdy", got


def test_event_lines(s):
    tid = Ctx.task
    evs = s.events(tid)
    agent_log = glob.glob(os.path.join(s.prefix, "var", "**", "agent-%s.log" % tid), recursive=True)
    assert len(agent_log) == 1, agent_log
    ev_lines = [l for l in lines(agent_log[0]) if l.get("msg") == "event"]
    assert all(l["task"] == tid and l["comp"] == "agent" for l in ev_lines), ev_lines
    stored = [(seq, kind) for seq, kind, _ in evs if kind != "done"]
    logged = [(l["seq"], l["type"]) for l in ev_lines if l["type"] != "done"]
    assert logged == stored, (logged, stored)
    done = [l for l in ev_lines if l["type"] == "done"]
    assert len(done) == 1 and done[0]["status"] == "succeeded", done
    for (seq, kind, data) in evs:
        if kind in ("model", "tool"):
            l = next(x for x in ev_lines if x.get("seq") == seq)
            assert l["turn"] == data["turn"] and l["duration_ms"] == data["duration_ms"], (l, data)
            if kind == "tool":
                assert l["tool"] == data["name"] and l["status"] == data["status"], (l, data)
    # what the model and the tools said is in the store, never in the log
    text = open(agent_log[0]).read()
    assert "echo hi" not in text, "a command in the agent log"


def test_stream_one_line_no_heartbeat_lines(s):
    st, t = s.create_task("[l-slow] think for a while")
    assert st == 201, t
    tid = t["id"]
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
    c.request("GET", "/api/tasks/%s/events" % tid, headers={"Accept": "text/event-stream"})
    r = c.getresponse()
    rid = r.getheader("X-Request-Id")
    raw = r.read().decode()  # to the end of the task
    c.close()
    assert ": keepalive" in raw, "no heartbeat was sent in 16 s"
    got = access_lines_of(rid)
    assert len(got) == 1, got
    assert got[0]["route"] == "task_events" and got[0]["duration_ms"] >= 15000, got
    assert got[0]["bytes"] == len(raw.encode()), (got[0]["bytes"], len(raw.encode()))
    web = open(os.path.join(s.prefix, "var", "log", "web.log")).read()
    assert "keepalive" not in web and "heartbeat" not in web


def test_nginx_lines(s):
    # nginx writes a path's bytes as they came (escape=json escapes quotes,
    # backslashes and control characters only): the odd request above is
    # not UTF-8 there; every line is still one JSON object
    ng = lines(os.path.join(s.prefix, "var", "log", "nginx-access.log"), errors="replace")
    ids = {l["request_id"] for l in ng}
    for rid, method, path, st, _, _ in Ctx.requests:
        assert rid in ids, (method, path)
    for l in ng:
        assert "?" not in l["path"], l
    assert not any(QUERY_SECRET in json.dumps(l) for l in ng)


def main():
    r = Reporter()
    if not image_ready():
        print("SKIP logs: the sandbox image is not built (make image)")
        return
    with Stack(SCENARIOS, web_env={"LLMBOX_SANDBOX_API_TOKEN": API_TOKEN}) as s:
        r.run("logs_requests_made", test_requests, s)
        r.run("logs_one_access_line_per_request", test_one_line_per_request, s)
        r.run("logs_probes_are_quiet", test_probes_quiet, s)
        r.run("logs_odd_bytes_in_path_stay_json", test_odd_bytes_in_path, s)
        r.run("logs_one_line_per_task_event", test_event_lines, s)
        r.run("logs_event_stream_one_line_no_heartbeat_lines", test_stream_one_line_no_heartbeat_lines, s)
        r.run("logs_nginx_json_lines_same_request_ids", test_nginx_lines, s)
        r.run("logs_no_query_token_or_cookie", test_no_secrets_in_logs, s)
    r.done()


if __name__ == "__main__":
    main()
