#!/usr/bin/env python3
"""Security: long work in the web's request threads cannot take them all,
and the web stops on SIGTERM within seconds, against the real stack (fake
model, sandboxd, web with 8 threads, nginx; two users, alice the attacker
and bob the victim).

- bundle_flood: alice's finished task has 20 MB in output/f, and alice
  sends 40 concurrent GET bundle.zip?path=f. Bob's GET /api/tasks stays
  quick meanwhile; each of alice's answers is the zip (200) or a JSON
  429/503 with Retry-After; the bundle is built once (one file, which the
  later requests are served from without a rebuild).
- port_drip: a server in an E2B sandbox sends its answer's head a byte
  every 20 s; 20 relayed requests (8000-<id>.<e2b_domain>) whose clients
  give up after 2 s. Bob's task list stays quick, relays past the bound
  are refused with Retry-After, and once the clients are gone the relays
  are too: a request to the same server's quick path is answered.
- port_held: the same server answers whole and keeps the connection open;
  twelve requests in a row (past the eight a sandbox may have relayed at
  once) each end at the answer's Content-Length.
- web_stop_bounded: the web is stopped with SIGTERM and started again, 5
  times idle, then 3 times busy (a running task with event streams open,
  requests in flight, an API sandbox held, and the database locked by
  another process, as a backup tool may): every exit takes under 6 s.

Old code (commit bbc3343, checked with BUILD=/work/main/build): bundle_flood
fails (bob's list waited for the 40 builds), port_drip fails (the relays
held every thread after the clients left), web_stop_bounded fails (the
stop waited for the event-stream watcher's store call: about 10 s).

Run as root with the image built:

    python3 tests/security/test_web_exhaustion.py [CHECK...]
"""
import hashlib
import json
import os
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stack import Reporter, Stack, image_ready  # noqa: E402

SBX_TOKEN = "exh-" + uuid.uuid4().hex + uuid.uuid4().hex
ALICE = "alice-" + uuid.uuid4().hex
BOB = "bob-" + uuid.uuid4().hex
THREADS = 8
BIG_CMD = "mkdir -p /testbed/output/f && for i in 1 2 3 4; do head -c 5000000 /dev/urandom > /testbed/output/f/$i.bin; done"
SCENARIO = {"scenarios": [
    {"match": "[hold]", "steps": [{"content": "thinking", "delay_ms": 120000},
                                  {"tool_calls": [{"name": "finish", "arguments": {"answer": "held"}}]}]},
    {"match": "[big]", "steps": [{"tool_calls": [{"name": "bash", "arguments": {"command": BIG_CMD}}]},
                                 {"tool_calls": [{"name": "finish", "arguments": {"answer": "big"}}]}]},
], "steps": [{"tool_calls": [{"name": "finish", "arguments": {"answer": "ok"}}]}]}
CONF = ('[user "alice"]\ntoken_sha256 = %s\nmax_tasks = 8\n[user "bob"]\ntoken_sha256 = %s\nmax_tasks = 8\n'
        % (hashlib.sha256(ALICE.encode()).hexdigest(), hashlib.sha256(BOB.encode()).hexdigest()))
# Bob's task list during an attack: the product's target is 200 ms p99
# (bench/exhaustion.py); here a bound that holds on a machine 3x slower
# and still fails when threads are taken (the old code: 17 s and more).
VICTIM_MAX_S = 3.0


def request(st, method, path, body=None, token=None, headers=None, timeout=30):
    h = dict(headers or {})
    if token:
        h["Authorization"] = "Bearer " + token
    return st.request(method, path, body, h, timeout=timeout)


def create_task(st, token, prompt):
    boundary = "----exh" + uuid.uuid4().hex
    body = ("--%s\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\n%s\r\n--%s--\r\n"
            % (boundary, prompt, boundary)).encode()
    status, _, resp = request(st, "POST", "/api/tasks", body, token,
                              {"Content-Type": "multipart/form-data; boundary=" + boundary})
    assert status == 201, (status, resp[:300])
    return json.loads(resp)["id"]


def wait_status(st, token, tid, want, timeout):
    deadline = time.time() + timeout
    t = None
    while time.time() < deadline:
        status, _, body = request(st, "GET", "/api/tasks/" + tid, token=token)
        if status == 200:
            t = json.loads(body)
            if t["status"] in want:
                return t
        time.sleep(0.3)
    raise AssertionError("task %s not %s after %d s: %s" % (tid, want, timeout, t and t["status"]))


def victim_lists(st, n, gap=0.1):
    """Bob's GET /api/tasks, n times in a row: the latencies in seconds
    (a request that failed or timed out counts as 30 s)."""
    out = []
    for _ in range(n):
        t0 = time.time()
        try:
            status, _, _ = request(st, "GET", "/api/tasks", token=BOB, timeout=30)
            out.append(time.time() - t0 if status == 200 else 30.0)
        except OSError:
            out.append(30.0)
        time.sleep(gap)
    return out


def is_json_refusal(status, headers, body):
    if status not in (429, 503) or not headers.get("retry-after"):
        return False
    try:
        return bool(json.loads(body).get("error"))
    except ValueError:
        return False


# ---- folder bundles ---------------------------------------------------------------

def t_bundle_flood(st):
    tid = create_task(st, ALICE, "[big] write 20 MB into output/f")
    t = wait_status(st, ALICE, tid, ("succeeded", "failed", "cancelled"), 180)
    assert t["status"] == "succeeded", t
    quiet = victim_lists(st, 10)
    results = []
    lock = threading.Lock()

    def one():
        try:
            r = request(st, "GET", "/api/tasks/%s/bundle.zip?path=f" % tid, token=ALICE, timeout=120)
        except OSError as e:
            r = (0, {}, str(e).encode())
        with lock:
            results.append(r)

    threads = [threading.Thread(target=one) for _ in range(40)]
    for th in threads:
        th.start()
    time.sleep(0.2)
    during = victim_lists(st, 15)
    for th in threads:
        th.join(180)
    assert len(results) == 40, "%d of 40 bundle requests answered" % len(results)
    ok = [r for r in results if r[0] == 200]
    bad = [(r[0], r[2][:120]) for r in results if r[0] != 200 and not is_json_refusal(*r)]
    assert not bad, "answers neither the zip nor a JSON 429/503 with Retry-After: %r" % bad[:3]
    assert ok and all(r[2][:2] == b"PK" and len(r[2]) > 20000000 for r in ok), [r[0] for r in results]
    assert max(during) < VICTIM_MAX_S, ("bob's task list took up to %.2f s while alice asked for 40 bundles "
                                        "(quiet: %.3f s)" % (max(during), max(quiet)))
    tdir = os.path.join(st.prefix, "artifacts", tid)
    kept = [n for n in os.listdir(tdir) if n.startswith("fbundle-") and n.endswith(".zip")]
    assert len(kept) == 1, "the folder bundle is built once: %r" % kept
    mtime = os.stat(os.path.join(tdir, kept[0])).st_mtime_ns
    # once built, every request is served from the file, none refused
    for _ in range(10):
        status, h, body = request(st, "GET", "/api/tasks/%s/bundle.zip?path=f" % tid, token=ALICE, timeout=60)
        assert status == 200 and body == ok[0][2], status
    assert os.stat(os.path.join(tdir, kept[0])).st_mtime_ns == mtime, "the bundle was built again"
    status, h, part = request(st, "GET", "/api/tasks/%s/bundle.zip?path=f" % tid, token=ALICE,
                              headers={"Range": "bytes=0-9"})
    assert status == 206 and part == ok[0][2][:10], (status, part)
    # bob cannot have it
    status, _, _ = request(st, "GET", "/api/tasks/%s/bundle.zip?path=f" % tid, token=BOB)
    assert status == 404, status


# ---- E2B port forwarding ----------------------------------------------------------

DRIP_SERVER = r'''
import socket, threading, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8000)); s.listen(64)
def serve(c):
    try:
        req = b""
        while b"\r\n\r\n" not in req:
            d = c.recv(4096)
            if not d:
                return
            req += d
        if req.startswith(b"GET /ready"):
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nready")
        elif req.startswith(b"GET /held"):  # the whole answer, then the connection kept open
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nheldNOT-THE-ANSWER")
            time.sleep(120)
        else:
            for b in b"HTTP/1.1 200 OK\r\n":
                c.sendall(bytes([b])); time.sleep(20)
    except OSError:
        pass
    finally:
        c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
'''


def e2b_api(st, method, path, body=None):
    h = {"X-API-KEY": SBX_TOKEN}
    if body is not None:
        body = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    return st.request(method, path, body, h, timeout=60)


def e2b_sandbox(st):
    status, _, data = e2b_api(st, "POST", "/e2b/v2/sandboxes", {"timeout": 600})
    assert status == 201, (status, data[:300])
    return json.loads(data)


def start_drip(st, sbx):
    """Runs DRIP_SERVER in the sandbox as an envd process, whose stream
    stays open (in St.keep) for as long as the server runs."""
    sid, tok = sbx["sandboxID"], sbx["envdAccessToken"]
    raw = json.dumps({"process": {"cmd": "python3", "args": ["-c", DRIP_SERVER]}}).encode()
    body = struct.pack(">BI", 0, len(raw)) + raw
    c = socket.create_connection(("127.0.0.1", st.port), timeout=30)
    c.sendall(("POST /process.Process/Start HTTP/1.1\r\nHost: 49983-%s.e2b.test:%d\r\nX-Access-Token: %s\r\n"
               "Content-Type: application/connect+json\r\nContent-Length: %d\r\n\r\n"
               % (sid, st.port, tok, len(body))).encode() + body)
    got = c.recv(4096)
    assert got.startswith(b"HTTP/1.1 200"), got[:300]
    St.keep.append(c)
    deadline = time.time() + 30
    while time.time() < deadline:
        status, _, body = port_get(st, sbx, "/ready", timeout=10)
        if status == 200 and body == b"ready":
            return
        time.sleep(0.5)
    raise AssertionError("the server in the sandbox did not come up: %s %r" % (status, body[:200]))


def port_get(st, sbx, path, timeout=30):
    h = {"X-Access-Token": sbx["envdAccessToken"], "Host": "8000-%s.e2b.test:%d" % (sbx["sandboxID"], st.port)}
    try:
        return st.request("GET", path, None, h, timeout=timeout)
    except OSError as e:
        return 0, {}, str(e).encode()


def t_port_drip(st):
    sbx = e2b_sandbox(st)
    St.sandbox = sbx  # held through the stop checks
    start_drip(st, sbx)
    quiet = victim_lists(st, 10)
    socks = []
    for _ in range(20):
        c = socket.create_connection(("127.0.0.1", st.port), timeout=10)
        c.sendall(("GET /drip HTTP/1.1\r\nHost: 8000-%s.e2b.test:%d\r\nX-Access-Token: %s\r\n\r\n"
                   % (sbx["sandboxID"], st.port, sbx["envdAccessToken"])).encode())
        socks.append(c)
    during = victim_lists(st, 10)
    # the clients give up; what the quick ones got was a refusal
    refused = 0
    for c in socks:
        c.settimeout(0.2)
        try:
            got = c.recv(65536)
            refused += got.startswith(b"HTTP/1.1 429") or got.startswith(b"HTTP/1.1 503")
            if got.startswith(b"HTTP/1.1 429") or got.startswith(b"HTTP/1.1 503"):
                assert b"retry-after" in got.lower(), got[:300]
        except OSError:
            pass
        c.close()
    t0 = time.time()
    after = victim_lists(st, 5)
    status, _, body = port_get(st, sbx, "/ready", timeout=20)
    took = time.time() - t0
    assert max(during) < VICTIM_MAX_S, ("bob's task list took up to %.2f s during 20 dripping relays "
                                        "(quiet: %.3f s)" % (max(during), max(quiet)))
    assert max(after) < VICTIM_MAX_S, "bob's task list took up to %.2f s after the clients left" % max(after)
    assert refused >= 1, "20 relays to one sandbox at once, and none refused"
    assert status == 200 and body == b"ready" and took < 10, (
        "the relays outlived their clients: the quick path took %.1f s: %s %r" % (took, status, body[:200]))


def t_port_held(st):
    """A server that keeps its connection open after a whole answer (despite
    "Connection: close"): each relay ends at the answer's Content-Length,
    so twelve such requests in a row, more than a sandbox's eight relays
    at once, are all answered, with the answer's 4 bytes and not what the
    server sent after them. Old code: each relay went on until the server
    had been idle 60 s, and its client had nothing until then (each of the
    twelve timed out after 20 s)."""
    if St.sandbox is None:
        St.sandbox = e2b_sandbox(st)
        start_drip(st, St.sandbox)
    got = []
    for _ in range(12):
        t0 = time.time()
        status, _, body = port_get(st, St.sandbox, "/held", timeout=20)
        got.append((status, body[:100], round(time.time() - t0, 2)))
    assert all(g[0] == 200 and g[1] == b"held" for g in got), got


# ---- stopping ---------------------------------------------------------------------

class St:
    sandbox = None
    keep = []  # envd streams of processes that must go on running


def stop_web_timed(st):
    """SIGTERM to the web; seconds until it exited (None: not in 30 s)."""
    pr = st.named["web"][0]
    t0 = time.time()
    pr.send_signal(signal.SIGTERM)
    try:
        pr.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pr.kill()
        pr.wait()
        return None
    return time.time() - t0


# Another process holding the database's WAL-index locks (bytes 120..127
# of the -shm file: the writer's, the checkpointer's, recovery's and every
# reader's slot), as a backup tool or a stuck process may: every store
# call of the web waits (SQLite retries a read for about 10 s).
LOCKER = r'''
import fcntl, os, sys, time
fd = os.open(sys.argv[1] + "-shm", os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 8, 120, os.SEEK_SET)
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
'''


def open_stream(st, tid):
    s = socket.create_connection(("127.0.0.1", st.port), timeout=10)
    s.sendall(("GET /api/tasks/%s/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
               "Accept: text/event-stream\r\n\r\n" % (tid, BOB)).encode())
    got = s.recv(4096)
    assert got.startswith(b"HTTP/1.1 200"), got[:200]
    return s


def t_web_stop_bounded(st):
    took = []
    for _ in range(5):
        took.append(stop_web_timed(st))
        st.restart("web")
    assert all(t is not None and t < 6 for t in took), "idle stops took %r s" % took
    if not image_ready():
        return
    busy = []
    db = os.path.join(st.prefix, "var", "web", "llmbox.db")
    for _ in range(3):
        tid = create_task(st, BOB, "[hold] stay running")
        wait_status(st, BOB, tid, ("running",), 60)
        streams = [open_stream(st, tid) for _ in range(3)]
        time.sleep(0.5)
        locker = subprocess.Popen([sys.executable, "-c", LOCKER, db, "20"], stdout=subprocess.PIPE)
        assert locker.stdout.readline().strip() == b"locked"
        inflight = [threading.Thread(target=victim_lists, args=(st, 1), daemon=True) for _ in range(4)]
        for th in inflight:
            th.start()
        time.sleep(1.0)
        busy.append(stop_web_timed(st))
        locker.kill()
        locker.wait()
        for s in streams:
            s.close()
        st.restart("web")
        request(st, "POST", "/api/tasks/%s/cancel" % tid, b"", token=BOB)
    assert all(t is not None and t < 6 for t in busy), (
        "busy stops (streams open, requests in flight, a sandbox held, the database locked) took %r s" % busy)


CHECKS = [
    ("bundle_flood", t_bundle_flood, True),
    ("port_drip", t_port_drip, True),
    ("port_held", t_port_held, True),
    ("web_stop_bounded", t_web_stop_bounded, False),
]


def main():
    r = Reporter()
    if os.geteuid() != 0:
        print("SKIP web_exhaustion: sandboxd needs root")
        return
    only = set(sys.argv[1:])
    web_env = {"LLMBOX_SANDBOX_API_TOKEN": SBX_TOKEN, "LLMBOX_WEB_THREADS": str(THREADS),
               "LLMBOX_E2B_DOMAIN": "e2b.test", "LLMBOX_SANDBOX_API_MAX": "4"}
    with Stack(scenario=SCENARIO, web_env=web_env, conf=CONF, env={"LLMBOX_POOL_SIZE": "1"}) as st:
        for name, fn, needs_image in CHECKS:
            if only and name not in only:
                continue
            if needs_image and not image_ready():
                print("SKIP security/web_exhaustion/%s: the sandbox image is not built (make image)" % name)
                continue
            r.run("security/web_exhaustion/" + name, fn, st)
    r.done()


if __name__ == "__main__":
    main()
