#!/usr/bin/env python3
"""Where the sandbox API's exec of `true` spends its time, against the
RPC's (the target of bench/sandbox.py's "exec `true` round trip": the API
at most 1.5x the RPC). One stack (tests/lib/stack.py), one API sandbox and
one RPC sandbox; --n rounds, each interleaving, so the machine's load falls
on all alike:

  api exec        POST /api/sandboxes/{id}/exec {"command": "true"}
  api status      GET /api/sandboxes/{id}: nginx, FastCGI and the web, no RPC
  rpc true        the RPC's exec of `true` (the peer)
  rpc helper      the RPC's exec of the API's line for `true`
                  (`__llmbox_exec '/testbed' true`, the helper defined once)
  rpc ping        one RPC frame each way, no shell

Prints each p50 and the API's exec against the RPC's `true`.

    python3 bench/exec_split.py [--n 300]
"""
import argparse
import ast
import http.client
import json
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
sys.path.insert(0, os.path.join(REPO, "bench"))
from stack import Stack, image_ready  # noqa: E402
import load  # noqa: E402
import sandbox as sb  # noqa: E402 - its RPC client (Conn)


def helper_text():
    """The API's helper definition, read from its C source."""
    src = open(os.path.join(REPO, "server", "sbxapi", "sandbox_spec.c")).read()
    a = src.index("static const char lb_exec_helper[] =")
    b = src.index(";\n", a)
    return "".join(ast.literal_eval(x.strip()) for x in src[a:b].split("=", 1)[1].strip().splitlines())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=300)
    a = ap.parse_args()
    if os.geteuid() != 0 or not image_ready():
        print("exec split: needs root and the sandbox image (make image); skipped")
        return 0
    print("exec split, %s" % time.strftime("%Y-%m-%d %H:%M"))
    print("machine: %s" % load.machine())
    print("command: python3 bench/exec_split.py --n %d" % a.n)
    tok = "bench-" + os.urandom(16).hex()
    with Stack(model=False, env={"LLMBOX_POOL_SIZE": "2"}, web_env={"LLMBOX_SANDBOX_API_TOKEN": tok}) as st:
        hc = http.client.HTTPConnection("127.0.0.1", st.port, timeout=60)
        hdr = {"Authorization": "Bearer " + tok, "Content-Type": "application/json"}

        def req(method, path, body=None):
            hc.request(method, path, body=json.dumps(body).encode() if body is not None else None, headers=hdr)
            r = hc.getresponse()
            data = r.read()
            if r.status >= 300:
                raise RuntimeError("%s %s: %d %s" % (method, path, r.status, data[:200]))
            return json.loads(data) if data else None

        sid = req("POST", "/api/sandboxes", {})["id"]
        c = sb.Conn(os.path.join(st.prefix, "var", "run", "sandboxd.sock"))
        rs = c.create()
        r = c.call({"op": "exec", "id": rs, "command": helper_text() + "; true", "timeout_ms": 20000})
        if r.get("exit_code") != 0:
            raise RuntimeError("the helper's definition failed: %s" % r)

        def rpc(cmd):
            r = c.call({"op": "exec", "id": rs, "command": cmd, "timeout_ms": 20000})
            if r.get("exit_code") != 0:
                raise RuntimeError("%s: %s" % (cmd, r))

        steps = [("api exec", lambda: req("POST", "/api/sandboxes/%s/exec" % sid, {"command": "true"})),
                 ("api status", lambda: req("GET", "/api/sandboxes/%s" % sid)),
                 ("rpc true", lambda: rpc("true")),
                 ("rpc helper", lambda: rpc("__llmbox_exec '/testbed' true")),
                 ("rpc ping", lambda: c.call({"op": "ping"}))]
        got = {k: [] for k, _ in steps}
        for i in range(a.n + 20):
            for k, fn in steps:
                t0 = time.perf_counter()
                fn()
                if i >= 20:
                    got[k].append((time.perf_counter() - t0) * 1000)
        req("DELETE", "/api/sandboxes/" + sid)
        c.destroy(rs)
        c.close()
        hc.close()
    p50 = {k: statistics.median(v) for k, v in got.items()}
    for k, _ in steps:
        print("  %-11s p50 %.3f ms" % (k, p50[k]))
    print("  api exec / rpc true: %.2fx (target <= 1.5x)" % (p50["api exec"] / p50["rpc true"]))
    print("load at the end: %s" % open("/proc/loadavg").read().split()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
