#!/usr/bin/env python3
"""The sandbox API's kept FastCGI connections (nginx.conf: upstream
llmbox_sandbox_api, fastcgi_keep_conn), through the real nginx and web:

  - kept: sequential sandbox API calls reuse a connection between nginx and
    the web (one of the web's accepted connections outlives 20 calls),
    and at most 8 are kept (4 per nginx worker);
  - released: 1 s after the last call nginx closes them, so the threads
    they held serve everyone again (none left after 2.5 s);
  - nobody waits behind one: right after a sandbox API call, with its
    connection kept idle, other routes (new connections) answer at once,
    not after the 1 s the kept one waits (the accept lock is not held by a
    thread waiting on a kept connection: web_main.c), also with only 3
    web threads and 3 clients that keep connections;
  - a command still runs and answers over a kept connection after it was
    idle (nginx retries on a new one if the web had closed it).

Needs root (sandboxd) and the built image; Python stdlib only.
"""
import http.client
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import Reporter, Stack, image_ready  # noqa: E402

TOKEN = "test-token-" + os.urandom(16).hex()
HDR = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}


def web_conns(stack):
    """Inodes of the web's accepted connections on its FastCGI socket."""
    sock = os.path.join(stack.prefix, "var", "web", "web.sock")
    on_sock = set()
    with open("/proc/net/unix") as f:
        next(f)
        for ln in f:
            parts = ln.split()
            # Num RefCount Protocol Flags Type St Inode Path; St 03: connected
            if len(parts) >= 8 and parts[7] == sock and parts[5] == "03":
                on_sock.add(parts[6])
    mine = set()
    fd_dir = "/proc/%d/fd" % stack.pid("web")
    for fd in os.listdir(fd_dir):
        try:
            link = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in on_sock:
            mine.add(link[8:-1])
    return mine


class Client:
    """One keep-alive HTTP connection to nginx (so one nginx worker)."""

    def __init__(self, stack):
        self.c = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=30)

    def call(self, method, path, body=None):
        self.c.request(method, path, body=json.dumps(body).encode() if body is not None else None, headers=HDR)
        r = self.c.getresponse()
        data = r.read()
        assert r.status < 300, "%s %s: %d %r" % (method, path, r.status, data[:200])
        return json.loads(data) if data else None

    def close(self):
        self.c.close()


def timed_health(stack):
    t0 = time.time()
    st, _, _ = stack.request("GET", "/api/health", timeout=10)
    assert st == 200, "GET /api/health: %d" % st
    return time.time() - t0


def t_kept_and_released(stack):
    c = Client(stack)
    sid = c.call("POST", "/api/sandboxes", {})["id"]
    c.call("GET", "/api/sandboxes/" + sid)
    before = web_conns(stack)
    assert before, "no connection between nginx and the web is kept after a sandbox API call"
    for _ in range(20):
        c.call("GET", "/api/sandboxes/" + sid)
    after = web_conns(stack)
    assert before & after, ("no connection outlived 20 sequential calls (before %s, after %s): "
                            "nginx does not keep them" % (sorted(before), sorted(after)))
    assert len(after) <= 8, "%d kept connections (at most 4 per nginx worker)" % len(after)
    # idle, the connection is closed by nginx after 1 s and the web lets go
    time.sleep(2.5)
    left = web_conns(stack)
    assert not left, "%d kept connections still open 2.5 s after the last call" % len(left)
    # and the next call simply opens a new one
    r = c.call("POST", "/api/sandboxes/%s/exec" % sid, {"command": "echo again"})
    assert r.get("stdout") == "again\n", r
    c.call("DELETE", "/api/sandboxes/" + sid)
    c.close()


def t_nobody_waits(stack):
    c = Client(stack)
    sid = c.call("POST", "/api/sandboxes", {})["id"]
    worst = 0.0
    for _ in range(5):
        c.call("POST", "/api/sandboxes/%s/exec" % sid, {"command": "true"})
        assert web_conns(stack), "the sandbox API's connection was not kept"
        # a new connection (another route) while the kept one sits idle
        worst = max(worst, timed_health(stack))
    assert worst < 0.5, ("GET /api/health took %.2f s next to an idle kept connection: a thread "
                         "waiting on it holds the others back" % worst)
    c.call("DELETE", "/api/sandboxes/" + sid)
    c.close()


def t_few_threads(stack):
    """3 web threads, 3 clients that each keep a connection busy."""
    clients = [Client(stack) for _ in range(3)]
    sids = [cl.call("POST", "/api/sandboxes", {})["id"] for cl in clients]
    errors = []
    stop = time.time() + 2.0

    def loop(cl, sid):
        try:
            while time.time() < stop:
                cl.call("POST", "/api/sandboxes/%s/exec" % sid, {"command": "true"})
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    ts = [threading.Thread(target=loop, args=(cl, sid)) for cl, sid in zip(clients, sids)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    assert not errors, "sandbox API calls failed: %s" % errors[:3]
    # what the clients kept is idle now: it is given back within nginx's 1 s
    took = timed_health(stack)
    assert took < 1.6, "GET /api/health waited %.2f s for one of 3 threads" % took
    for cl, sid in zip(clients, sids):
        cl.call("DELETE", "/api/sandboxes/" + sid)
        cl.close()


def main():
    r = Reporter()
    if not image_ready():
        print("SKIP sandbox_api_keepconn: the sandbox image is not built (make image)")
        return
    if os.geteuid() != 0:
        print("SKIP sandbox_api_keepconn: sandboxd needs root")
        return
    env = {"LLMBOX_SANDBOX_API_TOKEN": TOKEN}
    with Stack(model=False, web_env=env) as st:
        r.run("kept_and_released", t_kept_and_released, st)
        r.run("nobody_waits_behind_a_kept_connection", t_nobody_waits, st)
    with Stack(model=False, web_env=dict(env, LLMBOX_WEB_THREADS="3")) as st:
        r.run("three_threads_three_kept_clients", t_few_threads, st)
    r.done()


if __name__ == "__main__":
    main()
