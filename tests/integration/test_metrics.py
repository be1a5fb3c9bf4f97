"""GET /metrics through nginx and the real stack: a few tasks with the
scripted fake model (successes, a model that answers 503, a refused key, a
tool name the model made up), then a scrape parsed strictly (tests/lib/
prom.py) and checked against what the tasks did, as the API reports it.
An operator relies on these numbers to alert and to size the service."""
import math
import os
import socket
import sys
import time
import http.client

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import Reporter, Skip, Stack, image_ready  # noqa: E402
import prom  # noqa: E402


def step(*calls):
    return {"content": "", "tool_calls": [{"name": n, "arguments": a} for n, a in calls]}


SCENARIOS = {"scenarios": [
    {"match": "[m-ok]", "steps": [
        step(("bash", {"command": "echo hello; sleep 0.2"})),
        step(("file_editor", {"command": "create", "path": "/testbed/output/a.txt", "file_text": "a\n"})),
        step(("finish", {"answer": "ok"})),
    ]},
    # every request of this conversation gets a 503: the client retries
    # (retries = 2 by default, Retry-After 1 s) and the task fails
    {"match": "[m-503]", "steps": [{"status": 503, "error": "overloaded", "retry_after": 1}]},
    {"match": "[m-401]", "steps": [{"status": 401, "error": "bad key"}]},
    # does not fit: one retry with a smaller max_tokens, then the task fails
    {"match": "[m-ctx]", "steps": [{"status": 400, "error": "This model's maximum context length is 4096 "
                                    "tokens. However, you requested 5000 tokens (3000 in the messages, 2000 "
                                    "in the completion)."}]},
    {"match": "[m-bad]", "steps": [{"raw": "this is not JSON"}]},
    {"match": "[m-made-up]", "steps": [
        step(("no_such_tool", {"x": 1})),
        step(("finish", {"answer": "done"})),
    ]},
]}

TASKS = [("[m-ok] one", "succeeded"), ("[m-ok] two", "succeeded"), ("[m-503] slow", "failed"),
         ("[m-401] key", "failed"), ("[m-made-up] tool", "succeeded"), ("[m-ctx] long", "failed"),
         ("[m-bad] garbage", "failed")]


def scrape(s, source=None):
    """GET /metrics; returns (status, headers, text). source: bind the
    client to that loopback address (127.0.0.2 is "another host" for
    nginx's allow 127.0.0.1)."""
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30,
                                   source_address=(source, 0) if source else None)
    try:
        c.request("GET", "/metrics")
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
    finally:
        c.close()


def parsed(s):
    st, h, text = scrape(s)
    assert st == 200, (st, text[:300])
    assert h.get("content-type") == "text/plain; version=0.0.4; charset=utf-8", h
    fams = prom.parse(text)
    for name, f in fams.items():
        assert name.startswith("llmbox_"), name
        assert f["help"] and f["type"], (name, f)
        if f["type"] == "counter":
            assert name.endswith("_total"), name
        if f["type"] == "histogram":
            assert name.endswith("_seconds"), name
    return fams, text


class State:
    tasks = {}          # id -> (prompt, final task object)
    events = {}         # id -> [(seq, type, data)]
    before = None


def run_tasks(s):
    st = State
    st.before, _ = parsed(s)
    assert prom.value(st.before, "llmbox_tasks_created_total") == 0, "a fresh stack has created no task"
    for prompt, _ in TASKS:
        code, t = s.create_task(prompt)
        assert code == 201, (code, t)
        st.tasks[t["id"]] = (prompt, None)
    for tid, (prompt, _) in list(st.tasks.items()):
        t = s.wait_task(tid, 60)
        want = dict(TASKS)[prompt]
        assert t["status"] == want, (prompt, t["status"], t.get("reason"))
        st.tasks[tid] = (prompt, t)
        st.events[tid] = s.events(tid)


def test_exposition_is_strict_and_complete(s):
    fams, text = parsed(s)
    want = ["llmbox_tasks_created_total", "llmbox_tasks_finished_total", "llmbox_model_turn_duration_seconds",
            "llmbox_model_errors_total", "llmbox_tool_duration_seconds", "llmbox_sandbox_start_duration_seconds",
            "llmbox_http_requests_total", "llmbox_http_request_duration_seconds", "llmbox_tasks",
            "llmbox_store_up", "llmbox_agents_running", "llmbox_tasks_max", "llmbox_sandboxd_up",
            "llmbox_sandboxes_alive", "llmbox_pool_size", "llmbox_pool_ready", "llmbox_pool_hits_total",
            "llmbox_pool_misses_total", "llmbox_pool_other_total", "llmbox_build_info",
            "llmbox_sandbox_api_sandboxes"]
    missing = [n for n in want if n not in fams]
    assert not missing, missing
    assert prom.value(fams, "llmbox_store_up") == 1
    assert prom.value(fams, "llmbox_sandboxd_up") == 1
    # HEAD: the same head, no body
    st, h, body = s.request("HEAD", "/metrics")
    assert st == 200 and body == b"", (st, body[:100])


def test_task_counters_and_states(s):
    fams, _ = parsed(s)
    n = len(TASKS)
    assert prom.value(fams, "llmbox_tasks_created_total") == n, prom.value(fams, "llmbox_tasks_created_total")
    finals = {}
    for _, want in TASKS:
        finals[want] = finals.get(want, 0) + 1
    for status in ("succeeded", "failed", "cancelled"):
        got = prom.value(fams, "llmbox_tasks_finished_total", status=status)
        assert got == finals.get(status, 0), (status, got)
        assert prom.value(fams, "llmbox_tasks", state=status) == finals.get(status, 0), status
    assert prom.value(fams, "llmbox_tasks", state="queued") == 0
    assert prom.value(fams, "llmbox_tasks", state="running") == 0
    # a deleted task leaves the gauge, never the counters
    tid = next(t for t, (p, _) in State.tasks.items() if p.startswith("[m-401]"))
    st, _, body = s.request("DELETE", "/api/tasks/" + tid)
    assert st in (200, 204), (st, body)
    del State.tasks[tid]
    fams, _ = parsed(s)
    assert prom.value(fams, "llmbox_tasks", state="failed") == finals["failed"] - 1
    assert prom.value(fams, "llmbox_tasks_finished_total", status="failed") == finals["failed"]
    assert prom.value(fams, "llmbox_tasks_created_total") == n


def close(a, b, slack):
    return abs(a - b) <= slack


def test_turn_histogram_matches_tasks(s):
    fams, _ = parsed(s)
    h = prom.histogram(fams, "llmbox_model_turn_duration_seconds", model="default")
    assert h, "no turn histogram for model default"
    turns = [t["turns"] for _, t in State.tasks.values()]
    model_evs = [e for evs in State.events.values() for e in evs if e[1] == "model"]
    assert sum(turns) == len(model_evs) == h["count"], (turns, len(model_evs), h["count"])
    # the sum is the same waits the events report (ms, rounded per turn)
    want = sum(e[2]["duration_ms"] for e in model_evs) / 1000.0
    assert close(h["sum"], want, 1e-6), (h["sum"], want)
    # each wait sits in the first bucket whose bound holds it: the events
    # carry the same milliseconds, so the cumulative counts are exact
    for le, cum in h["buckets"]:
        n = sum(1 for e in model_evs if e[2]["duration_ms"] / 1000.0 <= le)
        assert cum == n, (le, cum, n)
    assert h["buckets"][-1] == (math.inf, h["count"])


def test_tool_histogram_by_tool(s):
    fams, _ = parsed(s)
    tool_evs = [e[2] for evs in State.events.values() for e in evs if e[1] == "tool"]
    by = {}
    for e in tool_evs:
        name = e["name"] if e["name"] in ("bash", "file_editor", "finish") else "unknown"
        by.setdefault(name, []).append(e["duration_ms"])
    assert len(by.get("unknown", [])) == 1, by
    assert len(by["bash"]) == 2 and len(by["file_editor"]) == 2 and len(by["finish"]) == 3, by
    for tool, durs in by.items():
        h = prom.histogram(fams, "llmbox_tool_duration_seconds", tool=tool)
        assert h and h["count"] == len(durs), (tool, h, durs)
        assert close(h["sum"], sum(durs) / 1000.0, 1e-6), (tool, h["sum"], durs)
        for le, cum in h["buckets"]:
            assert cum == sum(1 for d in durs if d / 1000.0 <= le), (tool, le, cum, durs)
    # the model's made-up name is not a label
    names = {dict(lab).get("tool") for _, lab, _ in fams["llmbox_tool_duration_seconds"]["samples"]}
    assert "no_such_tool" not in names, names
    # bash slept 0.2 s: both calls are above the 0.1 s bound
    h = prom.histogram(fams, "llmbox_tool_duration_seconds", tool="bash")
    assert dict(h["buckets"])[0.1] == 0, h


def test_model_errors_by_kind(s):
    fams, _ = parsed(s)
    # 1 try + 2 retries of the 503; the refused key is not retried
    assert prom.value(fams, "llmbox_model_errors_total", model="default", kind="http_5xx") == 3
    assert prom.value(fams, "llmbox_model_errors_total", model="default", kind="auth") == 1
    # the first answer and the one retry with a lower max_tokens
    assert prom.value(fams, "llmbox_model_errors_total", model="default", kind="context_length") == 2
    assert prom.value(fams, "llmbox_model_errors_total", model="default", kind="bad_reply") == 1
    kinds = {dict(lab)["kind"] for _, lab, _ in fams["llmbox_model_errors_total"]["samples"]}
    assert kinds == {"http_5xx", "auth", "context_length", "bad_reply"}, kinds


def test_sandbox_and_pool(s):
    time.sleep(3.2)  # sandboxd's ping is cached for 3 s
    fams, _ = parsed(s)
    h = prom.histogram(fams, "llmbox_sandbox_start_duration_seconds")
    assert h and h["count"] == len(TASKS), h
    ping = s.sandboxd_ping()
    pool = ping["pool"]
    assert prom.value(fams, "llmbox_pool_size") == pool["size"], (pool, fams["llmbox_pool_size"])
    hits = prom.value(fams, "llmbox_pool_hits_total")
    misses = prom.value(fams, "llmbox_pool_misses_total")
    other = prom.value(fams, "llmbox_pool_other_total")
    assert (hits, misses, other) == (pool["hits"], pool["misses"], pool["other"]), (hits, misses, other, pool)
    assert hits + misses + other >= len(TASKS), (hits, misses, other)
    assert prom.value(fams, "llmbox_sandboxes_alive") == ping["sandboxes"] == 0, ping


def test_http_requests_by_route(s):
    fams0, _ = parsed(s)

    def count(fams, **lab):
        return prom.value(fams, "llmbox_http_requests_total", **lab) or 0

    for _ in range(2):
        st, _, _ = s.request("GET", "/api/tasks/" + "0" * 32)
        assert st == 404
    st, _, _ = s.request("GET", "/api/no-such-route")
    assert st == 404
    st, _, _ = s.request("POST", "/api/health")
    assert st == 405
    st, _, _ = s.request("GET", "/api/tasks?limit=2")
    assert st == 200
    fams1, _ = parsed(s)
    deltas = {
        ("task", "GET", "404"): 2,
        ("unknown", "GET", "404"): 1,
        ("health", "POST", "405"): 1,
        ("tasks", "GET", "200"): 1,
        ("metrics", "GET", "200"): 1,  # the first scrape, counted once answered
    }
    for (route, method, status), d in deltas.items():
        got = count(fams1, route=route, method=method, status=status) - \
            count(fams0, route=route, method=method, status=status)
        assert got == d, (route, method, status, got, d)
    total0 = sum(v for _, _, v in fams0["llmbox_http_requests_total"]["samples"])
    total1 = sum(v for _, _, v in fams1["llmbox_http_requests_total"]["samples"])
    assert total1 - total0 == sum(deltas.values()), (total0, total1)
    h = prom.histogram(fams1, "llmbox_http_request_duration_seconds", route="task")
    assert h and h["count"] >= 2, h
    # event streams are counted but not timed
    assert count(fams1, route="task_events", method="GET", status="200") >= len(TASKS)
    assert not prom.histogram(fams1, "llmbox_http_request_duration_seconds", route="task_events")


def test_loopback_only(s):
    # nginx.conf: allow 127.0.0.1; deny all. 127.0.0.2 stands for another host.
    try:
        st, _, body = scrape(s, source="127.0.0.2")
    except OSError as e:
        raise Skip("cannot bind a client to 127.0.0.2: %s" % e)
    assert st == 403, (st, body[:200])
    assert "llmbox_" not in body, body[:200]
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10, source_address=("127.0.0.2", 0))
    c.request("GET", "/api/health")
    r = c.getresponse()
    assert r.status == 200, r.status  # only /metrics is closed
    c.close()


def main():
    r = Reporter()
    if not image_ready():
        print("SKIP metrics: the sandbox image is not built (make image)")
        return
    socket.setdefaulttimeout(60)
    with Stack(SCENARIOS) as s:
        r.run("metrics_tasks_ran", run_tasks, s)
        if r.failed:
            r.done()
        r.run("metrics_exposition_strict_and_complete", test_exposition_is_strict_and_complete, s)
        r.run("metrics_http_requests_by_route", test_http_requests_by_route, s)
        r.run("metrics_turn_histogram_matches_tasks", test_turn_histogram_matches_tasks, s)
        r.run("metrics_tool_histogram_by_tool", test_tool_histogram_by_tool, s)
        r.run("metrics_model_errors_by_kind", test_model_errors_by_kind, s)
        r.run("metrics_sandbox_start_and_pool", test_sandbox_and_pool, s)
        r.run("metrics_task_counters_and_states", test_task_counters_and_states, s)
        r.run("metrics_loopback_only", test_loopback_only, s)
    r.done()


if __name__ == "__main__":
    main()
