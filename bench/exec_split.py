#!/usr/bin/env python3
"""Where the sandbox API's exec of `true` spends its time, against the
RPC's (the target of bench/sandbox.py's "exec `true` round trip": the API
at most 1.5x the RPC). One stack (tests/lib/stack.py), one API sandbox and
one RPC sandbox; --n rounds, each interleaving, so the machine's load falls
on all alike:

  api exec        POST /api/sandboxes/{id}/exec {"command": "true"}, with
                  Python's http.client (what bench/sandbox.py uses)
  api exec lean   the same request through a lean HTTP/1.1 client
                  (bench/sandbox.py's Lean: one send per request, the answer
                  read by its Content-Length), as lean as the RPC's client:
                  the like-for-like peer of "rpc true"
  api status      GET /api/sandboxes/{id}: nginx, FastCGI and the web, no RPC
  rpc true        the RPC's exec of `true` (the peer)
  rpc helper      the RPC's exec of the API's line for `true`
                  (`__llmbox_exec '/testbed' true`, the helper defined once)
  rpc ping        one RPC frame each way, no shell

--trace: then, on each side, --n more API execs (the lean client) with
`perf record` of the web's syscall tracepoints (raw_syscalls, linux-perf),
printing the web's own time per exec: from the FastCGI request's read to
its frame to sandboxd, and from sandboxd's answer to the FastCGI write
(what the web adds; the log line to fd 2 is not counted as the answer).

Prints each p50 and the API's exec against the RPC's `true`, with each
client (http.client parses the answer's head through the email package:
~0.3 ms of Python per request that the RPC's client does not spend). --peer DIR:
the same on the checkout in DIR (built there, e.g. main in a second
worktree), in a second stack, each step alternating between the two.

    python3 bench/exec_split.py [--n 300] [--peer DIR] [--trace]
"""
import argparse
import ast
import contextlib
import importlib.util
import re
import shutil
import signal
import subprocess
import tempfile
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


def helper_text(repo):
    """The API's helper definition, read from repo's C source; None when
    that checkout has none (older ones: every exec in a subshell)."""
    for rel in (("server", "sbxapi", "sandbox_spec.c"), ("server", "web", "sandbox_spec.c")):
        path = os.path.join(repo, *rel)
        if not os.path.exists(path):
            continue
        src = open(path).read()
        if "static const char lb_exec_helper[] =" not in src:
            return None
        a = src.index("static const char lb_exec_helper[] =")
        b = src.index(";\n", a)
        return "".join(ast.literal_eval(x.strip()) for x in src[a:b].split("=", 1)[1].strip().splitlines())
    return None


def peer_stack_class(repo):
    """tests/lib/stack.py of another checkout: its Stack runs that
    checkout's build (the module finds its binaries beside itself)."""
    spec = importlib.util.spec_from_file_location("peer_stack", os.path.join(repo, "tests", "lib", "stack.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.Stack


def open_side(es, stack_cls, repo):
    """One stack with one API sandbox and one RPC sandbox (the helper
    defined in it); returns the steps, each a (name, function)."""
    tok = "bench-" + os.urandom(16).hex()
    st = es.enter_context(stack_cls(model=False, env={"LLMBOX_POOL_SIZE": "2"},
                                    web_env={"LLMBOX_SANDBOX_API_TOKEN": tok}))
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
    helper = helper_text(repo)
    if helper is None:
        print("%s has no exec helper: its \"rpc helper\" step runs `true`" % repo)
    else:
        r = c.call({"op": "exec", "id": rs, "command": helper + "; true", "timeout_ms": 20000})
        if r.get("exit_code") != 0:
            raise RuntimeError("the helper's definition failed: %s" % r)

    lean = sb.Lean(st.port, tok)

    def close():
        lean.close()
        req("DELETE", "/api/sandboxes/" + sid)
        c.destroy(rs)
        c.close()
        hc.close()
    es.callback(close)

    def rpc(cmd):
        r = c.call({"op": "exec", "id": rs, "command": cmd, "timeout_ms": 20000})
        if r.get("exit_code") != 0:
            raise RuntimeError("%s: %s" % (cmd, r))

    def api_exec():
        r = req("POST", "/api/sandboxes/%s/exec" % sid, {"command": "true"})
        if r.get("return_code") != 0:
            raise RuntimeError("api exec of true: %s" % r)

    def api_exec_lean():
        r = lean.req("POST", "/api/sandboxes/%s/exec" % sid, {"command": "true"})
        if r.get("return_code") != 0:
            raise RuntimeError("api exec of true (lean client): %s" % r)

    open_side.last = (st.pid("web"), api_exec_lean)
    return [("api exec", api_exec),
            ("api exec lean", api_exec_lean),
            ("api status", lambda: req("GET", "/api/sandboxes/%s" % sid)),
            ("rpc true", lambda: rpc("true")),
            ("rpc helper", lambda: rpc("__llmbox_exec '/testbed' true" if helper is not None else "true")),
            ("rpc ping", lambda: c.call({"op": "ping"}))]


def web_own_time(web_pid, fn, n):
    """(p50 us from the FastCGI read to the frame to sandboxd, p50 us from
    sandboxd's answer to the FastCGI write, execs seen) over n calls of
    fn, from the web's syscall tracepoints."""
    d = tempfile.mkdtemp(prefix="exec-split-trace-")
    out = os.path.join(d, "perf.data")
    try:
        pr = subprocess.Popen(["perf", "record", "-q", "-e", "raw_syscalls:sys_enter,raw_syscalls:sys_exit",
                               "-p", str(web_pid), "-o", out], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # perf attached
        for _ in range(n):
            fn()
        pr.send_signal(signal.SIGINT)
        pr.wait(timeout=60)
        text = subprocess.run(["perf", "script", "-i", out, "-F", "tid,time,event,trace"], capture_output=True,
                              text=True, timeout=300).stdout
    finally:
        shutil.rmtree(d, ignore_errors=True)
    by_tid = {}
    pat = re.compile(r"\s*(\d+)\s+([\d.]+):\s+raw_syscalls:sys_(enter|exit): NR (\d+) (.*)")
    for ln in text.splitlines():
        m = pat.match(ln)
        if m:
            by_tid.setdefault(m[1], []).append((float(m[2]), m[3], int(m[4]), m[5]))
    pre, post = [], []
    READ, WRITE, RECVFROM, SENDMSG = 0, 1, 45, 46  # x86_64
    for es in by_tid.values():
        for i, (t, kind, nr, _) in enumerate(es):
            if nr != SENDMSG or kind != "enter":
                continue
            j = i - 1
            while j >= 0 and not (es[j][2] == READ and es[j][1] == "exit"):
                j -= 1
            k, answer = i + 1, None
            while k < len(es) and not (es[k][2] == WRITE and es[k][1] == "enter" and not es[k][3].startswith("(2,")):
                if es[k][2] == RECVFROM and es[k][1] == "exit":
                    answer = es[k][0]
                k += 1
            if j < 0 or k >= len(es) or answer is None:
                continue
            pre.append((t - es[j][0]) * 1e6)
            post.append((es[k][0] - answer) * 1e6)
    if not pre:
        return None
    return statistics.median(pre), statistics.median(post), len(pre)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--peer", help="a second checkout (built there, e.g. main), measured alternately in the same run")
    ap.add_argument("--trace", action="store_true", help="then the web's own time per exec (perf, syscall tracepoints)")
    a = ap.parse_args()
    if os.geteuid() != 0 or not image_ready():
        print("exec split: needs root and the sandbox image (make image); skipped")
        return 0
    print("exec split, %s" % time.strftime("%Y-%m-%d %H:%M"))
    print("machine: %s" % load.machine())
    print("command: python3 bench/exec_split.py --n %d%s%s" % (a.n, " --peer " + a.peer if a.peer else "",
                                                              " --trace" if a.trace else ""))
    sides = [("this", REPO)] + ([("peer", os.path.abspath(a.peer))] if a.peer else [])
    load0 = open("/proc/loadavg").read().split()[0]
    with contextlib.ExitStack() as es:
        steps = {}
        traced = {}
        for who, repo in sides:
            steps[who] = open_side(es, Stack if who == "this" else peer_stack_class(repo), repo)
            traced[who] = open_side.last
        got = {(who, k): [] for who, _ in sides for k, _ in steps[who]}
        for i in range(a.n + 20):
            # each step on each side in turn, the order of the sides flipped
            # every round: load falls on both alike
            order = sides if i % 2 == 0 else sides[::-1]
            for j in range(len(steps["this"])):
                for who, _ in order:
                    k, fn = steps[who][j]
                    t0 = time.perf_counter()
                    fn()
                    if i >= 20:
                        got[(who, k)].append((time.perf_counter() - t0) * 1000)
        own = {}
        if a.trace:
            if not shutil.which("perf"):
                print("--trace: no perf (apt-get install linux-perf); left out")
            else:
                for who, _ in sides:
                    own[who] = web_own_time(traced[who][0], traced[who][1], a.n)
    p50 = {key: statistics.median(v) for key, v in got.items()}
    for who, _ in sides:
        if a.peer:
            print("%s (%s):" % (who, dict(sides)[who]))
        for k, _ in steps[who]:
            print("  %-13s p50 %.3f ms" % (k, p50[(who, k)]))
        print("  api exec / rpc true: %.2fx (http.client; target <= 1.5x)"
              % (p50[(who, "api exec")] / p50[(who, "rpc true")]))
        print("  api exec lean / rpc true: %.2fx (like-for-like clients; target <= 1.5x)"
              % (p50[(who, "api exec lean")] / p50[(who, "rpc true")]))
        if own.get(who):
            print("  the web's own time per exec (syscall tracepoints, n=%d): FastCGI read -> sandboxd frame "
                  "p50 %.0f us, sandboxd's answer -> FastCGI write p50 %.0f us" % (own[who][2], own[who][0], own[who][1]))
    if a.peer:
        print("api exec, this / peer: %.2fx (http.client), %.2fx (lean)"
              % (p50[("this", "api exec")] / p50[("peer", "api exec")],
                 p50[("this", "api exec lean")] / p50[("peer", "api exec lean")]))
    print("load at the start %s, at the end %s" % (load0, open("/proc/loadavg").read().split()[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
