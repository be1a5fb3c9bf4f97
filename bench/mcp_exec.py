#!/usr/bin/env python3
"""sandbox_exec through /mcp against POST /api/sandboxes/{id}/exec, the
same command (`true`) in the same sandbox, the same run, the same stack
(nginx, web, sandboxd; tests/lib/stack.py).

Both sides are Python's stdlib HTTP (http.client) on one kept-alive
connection each, the shared sandbox token as the bearer:

  api   POST /api/sandboxes/{id}/exec {"command": "true"}
  mcp   POST /mcp tools/call sandbox_exec {sandbox_id, command: "true"}
        in a session opened once (initialize, its Mcp-Session-Id,
        notifications/initialized); the answer is read whole (JSON or the
        event stream's last message)

Calls alternate api, mcp, api, mcp... so a change of the machine's load
falls on both. Prints each side's mean, p50 and p90 in ms and the ratio of
the means mcp / api.

    python3 bench/mcp_exec.py --n 300
"""
import argparse
import http.client
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
from stack import Stack  # noqa: E402

TOKEN = "mcp-bench-" + os.urandom(16).hex()


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


class Conn:
    def __init__(self, port):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.session = None

    def post(self, path, body, extra=None):
        h = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
        h.update(extra or {})
        self.c.request("POST", path, json.dumps(body).encode(), h)
        r = self.c.getresponse()
        data = r.read()
        return r.status, r, data

    def mcp(self, body):
        h = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
        if self.session:
            h["Mcp-Session-Id"] = self.session
        st, r, data = self.post("/mcp", body, h)
        if r.getheader("Mcp-Session-Id"):
            self.session = r.getheader("Mcp-Session-Id")
        if "event-stream" in (r.getheader("Content-Type") or ""):
            msgs = [ln[5:].strip() for ln in data.decode().splitlines() if ln.startswith("data:")]
            data = msgs[-1].encode() if msgs else b""
        return st, json.loads(data) if data else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300, help="calls of each kind")
    a = ap.parse_args()
    with Stack(web_env={"LLMBOX_SANDBOX_API_TOKEN": TOKEN}) as st:
        api, mcp = Conn(st.port), Conn(st.port)
        code, _, raw = api.post("/api/sandboxes", {})
        assert code == 201, (code, raw)
        sid = json.loads(raw)["id"]
        code, o = mcp.mcp({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                           "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "bench", "version": "1"}}})
        assert code == 200 and mcp.session, (code, o)
        mcp.mcp({"jsonrpc": "2.0", "method": "notifications/initialized"})
        t_api, t_mcp = [], []
        for i in range(a.n + 10):  # the first 10 of each warm up
            t0 = time.perf_counter()
            code, _, raw = api.post("/api/sandboxes/%s/exec" % sid, {"command": "true"})
            t1 = time.perf_counter()
            assert code == 200 and json.loads(raw)["return_code"] == 0, (code, raw)
            code, o = mcp.mcp({"jsonrpc": "2.0", "id": i + 2, "method": "tools/call",
                               "params": {"name": "sandbox_exec", "arguments": {"sandbox_id": sid,
                                                                                "command": "true"}}})
            t2 = time.perf_counter()
            assert code == 200 and not o["result"].get("isError") and \
                o["result"]["structuredContent"]["return_code"] == 0, (code, o)
            if i >= 10:
                t_api.append((t1 - t0) * 1000)
                t_mcp.append((t2 - t1) * 1000)
        api.c.request("DELETE", "/api/sandboxes/" + sid, headers={"Authorization": "Bearer " + TOKEN})
        api.c.getresponse().read()
        try:
            load = open("/proc/loadavg").read().split()[:3]
        except OSError:
            load = ["?"]
    for name, xs in (("api", t_api), ("mcp", t_mcp)):
        print("%s  mean %.2f ms  p50 %.2f  p90 %.2f  (n=%d)" % (name, statistics.mean(xs), pct(xs, 0.5),
                                                               pct(xs, 0.9), len(xs)))
    print("mcp / api (means): %.2f   load average %s" % (statistics.mean(t_mcp) / statistics.mean(t_api),
                                                         " ".join(load)))


if __name__ == "__main__":
    main()
