#!/usr/bin/env python3
"""sandbox_exec through MCP (/mcp) against the sandbox API's exec, in the
same run, on one sandbox.

Starts the stack of tests/lib/stack.py with the sandbox API on, creates one
sandbox, and for RT rounds interleaves three round trips of the command
`true`, each on its own kept HTTP connection through nginx:
  api:      POST /api/sandboxes/{id}/exec
  mcp:      POST /mcp tools/call sandbox_exec (one JSON answer)
  mcp+sse:  the same with a progressToken (an event stream answer; a
            command this short sends no progress)
Prints p50/p90/max of each and the ratios to the API's. A benchmark:
nothing is asserted. Needs root, make all and the default image.

    python3 bench/mcp.py [--rt 300]
"""
import argparse
import http.client
import json
import os
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
from stack import Stack  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rt", type=int, default=300)
    a = ap.parse_args()
    token = os.urandom(16).hex()
    auth = {"Authorization": "Bearer " + token}
    with open("/proc/loadavg") as f:
        load0 = f.read().split()[:3]
    with Stack(model=False, web_env={"LLMBOX_SANDBOX_API_TOKEN": token}) as st:
        def conn():
            return http.client.HTTPConnection("127.0.0.1", st.port, timeout=60)

        def call(c, method, path, body, headers):
            c.request(method, path, body=json.dumps(body).encode(), headers=dict(auth, **headers))
            r = c.getresponse()
            data = r.read()
            assert r.status in (200, 201), (path, r.status, data[:300])
            return r, data

        api, mcp, sse = conn(), conn(), conn()
        _, d = call(api, "POST", "/api/sandboxes", {"ttl_s": 600}, {"Content-Type": "application/json"})
        sid = json.loads(d)["id"]
        hj = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        r, _ = call(mcp, "POST", "/mcp", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                          "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                                     "clientInfo": {"name": "bench", "version": "1"}}}, hj)
        hs = dict(hj, **{"Mcp-Session-Id": r.getheader("Mcp-Session-Id")})
        args = {"sandbox_id": sid, "command": "true"}
        times = {"api": [], "mcp": [], "mcp+sse": []}
        for i in range(a.rt + 10):
            t0 = time.perf_counter()
            _, d = call(api, "POST", "/api/sandboxes/%s/exec" % sid, {"command": "true"},
                        {"Content-Type": "application/json"})
            t1 = time.perf_counter()
            _, e = call(mcp, "POST", "/mcp", {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                                              "params": {"name": "sandbox_exec", "arguments": args}}, hs)
            t2 = time.perf_counter()
            _, s = call(sse, "POST", "/mcp", {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                                              "params": {"name": "sandbox_exec", "arguments": args,
                                                         "_meta": {"progressToken": i}}}, hs)
            t3 = time.perf_counter()
            assert json.loads(d)["return_code"] == 0 and b'"return_code":0' in e and b"event: message" in s, (d, e, s)
            if i >= 10:  # the first rounds warm the connections and the shell
                times["api"].append((t1 - t0) * 1000)
                times["mcp"].append((t2 - t1) * 1000)
                times["mcp+sse"].append((t3 - t2) * 1000)
        call(api, "DELETE", "/api/sandboxes/" + sid, {}, {})
    with open("/proc/loadavg") as f:
        load1 = f.read().split()[:3]
    print("sandbox_exec 'true', %d round trips each, interleaved (load %s -> %s, %d CPUs)"
          % (a.rt, " ".join(load0), " ".join(load1), os.cpu_count()))
    base = pct(times["api"], 0.5)
    for k in ("api", "mcp", "mcp+sse"):
        xs = times[k]
        print("  %-8s p50 %6.2f ms  p90 %6.2f ms  max %7.2f ms  p50 ratio to api %.2f"
              % (k, pct(xs, 0.5), pct(xs, 0.9), max(xs), pct(xs, 0.5) / base))


if __name__ == "__main__":
    main()
