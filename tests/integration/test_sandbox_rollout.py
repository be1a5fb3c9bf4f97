#!/usr/bin/env python3
"""A rollout-style client of the sandbox API, the way an RL trainer uses it:
64 workers start at the same moment, each creates a sandbox through nginx
with its own files, runs a command, checks the output, and destroys the
sandbox. Afterwards sandboxd must hold no sandbox at all (no leak).

Python stdlib only (threads + http.client), as a client script would be.
Needs root (sandboxd) and the built image.
"""
import http.client
import json
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import Reporter, Stack, image_ready  # noqa: E402

N = 64
TOKEN = "rollout-" + os.urandom(16).hex()


class Client:
    """One worker's connection to the API (keep-alive, like a real client)."""

    def __init__(self, port):
        self.port = port
        self.conn = None

    def call(self, method, path, body=None, timeout=120):
        # no retry: a create sent twice would be two sandboxes
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        data = json.dumps(body).encode() if body is not None else None
        h = {"Authorization": "Bearer " + TOKEN}
        if data is not None:
            h["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=h)
        r = self.conn.getresponse()
        raw = r.read()
        return r.status, json.loads(raw) if raw else None

    def close(self):
        if self.conn:
            self.conn.close()


def sandboxd_count(prefix):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(os.path.join(prefix, "var", "run", "sandboxd.sock"))
    req = b'{"op":"ping"}'
    s.sendall(struct.pack(">I", len(req)) + req)
    buf = b""
    while len(buf) < 4:
        buf += s.recv(4096)
    n = struct.unpack(">I", buf[:4])[0]
    while len(buf) < 4 + n:
        buf += s.recv(4096)
    s.close()
    return json.loads(buf[4:4 + n])["sandboxes"]


def worker(port, i, start, results):
    c = Client(port)
    rec = {"i": i}
    try:
        start.wait()
        t0 = time.time()
        st, o = c.call("POST", "/api/sandboxes", {
            "ttl_s": 300, "workdir": "/work",
            "env": {"ROLLOUT": str(i)},
            "files": [{"path": "task.py", "content": "import os\nn = int(os.environ['ROLLOUT'])\n"
                                                     "print('rollout', n, n * n)\n"}],
            "metadata": {"rollout": i},
        })
        rec["create_s"] = time.time() - t0
        if st != 201:
            rec["error"] = "create: %d %s" % (st, o)
            return
        sid = rec["id"] = o["id"]
        t1 = time.time()
        st, r = c.call("POST", "/api/sandboxes/%s/exec" % sid, {"command": "python3 task.py", "timeout_s": 60})
        rec["exec_s"] = time.time() - t1
        if st != 200:
            rec["error"] = "exec: %d %s" % (st, r)
        elif r["stdout"] != "rollout %d %d\n" % (i, i * i) or r["return_code"] != 0:
            rec["error"] = "exec output: %r" % (r,)
        st, d = c.call("DELETE", "/api/sandboxes/" + sid)
        if st != 200 or not d.get("deleted"):
            rec.setdefault("error", "delete: %d %s" % (st, d))
        else:
            rec["deleted"] = True
    except Exception as e:  # recorded and reported by the test
        rec["error"] = "%s: %s" % (type(e).__name__, e)
    finally:
        c.close()
        results[i] = rec


def t_rollout(stack):
    results = [None] * N
    start = threading.Barrier(N)
    threads = [threading.Thread(target=worker, args=(stack.port, i, start, results)) for i in range(N)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    took = time.time() - t0
    assert not any(t.is_alive() for t in threads), "workers still running after 300 s"
    errors = [r for r in results if r is None or "error" in r]
    creates = sorted(r["create_s"] for r in results if r and "create_s" in r)
    execs = sorted(r["exec_s"] for r in results if r and "exec_s" in r)
    print("rollout: %d sandboxes in %.2f s; create p50 %.3f s max %.3f s; exec p50 %.3f s max %.3f s"
          % (N, took, creates[len(creates) // 2], creates[-1], execs[len(execs) // 2] if execs else -1,
             execs[-1] if execs else -1), file=sys.stderr)
    assert not errors, "%d of %d rollouts failed, first: %s" % (len(errors), N, errors[:3])
    assert len({r["id"] for r in results}) == N, "sandbox ids are not unique"
    # nothing left: not in the API, not in sandboxd, not on disk
    c = Client(stack.port)
    st, o = c.call("GET", "/api/sandboxes")
    c.close()
    assert st == 200 and o["count"] == 0, o
    n = sandboxd_count(stack.prefix)
    assert n == 0, "sandboxd still holds %d sandboxes after every rollout deleted its own" % n
    left = stack.sandbox_leftovers()
    assert not left, "sandbox folders left: %s" % left[:5]


def main():
    r = Reporter()
    if not image_ready():
        print("SKIP sandbox_rollout: the sandbox image is not built (make image)")
        return
    if os.geteuid() != 0:
        print("SKIP sandbox_rollout: sandboxd needs root")
        return
    env = {"LLMBOX_SANDBOX_API_TOKEN": TOKEN}
    with Stack(model=False, web_env=env) as st:
        r.run("rollout_64_at_once", t_rollout, st)
    r.done()


if __name__ == "__main__":
    main()
