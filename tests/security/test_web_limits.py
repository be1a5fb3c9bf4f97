#!/usr/bin/env python3
"""Security: the web's own resources under one hostile client (the second security review,
breaks 4-6), against the real stack (fake model, sandboxd, web, nginx).

- JSON bombs on the sandbox API: a 100 MB array body gets a quick 413 and
  the web's memory (VmHWM in /proc/<web>/status) stays low; a 1 MB body of
  300k tiny values gets a 400 that names the budget; three large bodies at
  once do not grow the web beyond a bound; memory goes back after large
  allowed bodies (VmRSS).
- Event streams: one client address opening many streams gets 429
  too_many_streams beyond LLMBOX_SSE_MAX_PER_CLIENT, all streams together
  stop short of the web's threads (a reserve), another client's
  /api/tasks and /api/health answer promptly meanwhile, and the accepted
  streams keep working to the task's "done".
- Folder bundles: bundle.zip / bundle.tar.gz ?path= for each level of a
  20-deep output folder are valid archives with the right files, and the
  task keeps at most 8 of them on disk.

Run as root with the image built:

    python3 tests/security/test_web_limits.py [CHECK...]
"""
import io
import json
import os
import re
import socket
import sys
import tarfile
import threading
import time
import uuid
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stack import Reporter, Stack, image_ready  # noqa: E402

TOKEN = "limits-" + uuid.uuid4().hex + uuid.uuid4().hex
THREADS = 8          # the web's worker threads here
PER_CLIENT = 3       # LLMBOX_SSE_MAX_PER_CLIENT here
RESERVE = 2          # the effective reserve for 8 threads (a quarter of them)
DEPTH = 20
LEVEL_BYTES = 150000

DEEP_CMD = ("d=/testbed/output; for i in $(seq 1 %d); do d=$d/l$i; mkdir -p $d; "
            "head -c %d /dev/urandom > $d/f$i.bin; echo level $i > $d/n$i.txt; done"
            % (DEPTH, LEVEL_BYTES))
SCENARIO = {"scenarios": [
    # held in the model call: the task stays running while streams watch it
    {"match": "[hold]", "steps": [{"content": "thinking", "delay_ms": 60000},
                                  {"tool_calls": [{"name": "finish", "arguments": {"answer": "held"}}]}]},
    {"match": "[deep]", "steps": [{"tool_calls": [{"name": "bash", "arguments": {"command": DEEP_CMD}}]},
                                  {"tool_calls": [{"name": "finish", "arguments": {"answer": "deep"}}]}]},
], "steps": [{"tool_calls": [{"name": "finish", "arguments": {"answer": "ok"}}]}]}


# ---- raw HTTP ----------------------------------------------------------------

def connect(st, src, timeout=30):
    s = socket.socket()
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(("127.0.0.1", st.port))
    return s


def read_head(s):
    """Reads up to the blank line: (status, headers, rest of the bytes)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        c = s.recv(65536)
        if not c:
            break
        buf += c
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    m = re.match(rb"HTTP/1\.[01] (\d{3})", lines[0]) if lines and lines[0] else None
    h = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(b":")
        h[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
    return (int(m.group(1)) if m else 0), h, rest


def read_body(s, h, rest):
    body = rest
    if "content-length" in h:
        n = int(h["content-length"])
        while len(body) < n:
            c = s.recv(1 << 20)
            if not c:
                break
            body += c
        return body
    while True:
        c = s.recv(1 << 20)
        if not c:
            break
        body += c
    if h.get("transfer-encoding", "").lower() == "chunked":
        out, r = b"", body
        while r:
            size, _, r = r.partition(b"\r\n")
            n = int(size.split(b";")[0], 16)
            if n == 0:
                break
            out += r[:n]
            r = r[n + 2:]
        body = out
    return body


def request(st, method, path, body=b"", headers=None, src="127.0.0.1", timeout=30):
    """One request on its own connection; returns (status, headers, body,
    seconds from the last byte sent to the answer's head)."""
    h = {"Host": "localhost", "Connection": "close"}
    h.update(headers or {})
    if body or method in ("POST", "PUT"):
        h["Content-Length"] = str(len(body))
    head = "%s %s HTTP/1.1\r\n" % (method, path) + "".join("%s: %s\r\n" % kv for kv in h.items()) + "\r\n"
    s = connect(st, src, timeout)
    try:
        try:
            s.sendall(head.encode() + body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        t0 = time.time()
        status, hd, rest = read_head(s)
        waited = time.time() - t0
        return status, hd, read_body(s, hd, rest), waited
    finally:
        s.close()


def api(st, method, path, body=b"", **kw):
    return request(st, method, path, body, {"Authorization": "Bearer " + TOKEN,
                                            "Content-Type": "application/json"}, **kw)


def error_of(body):
    try:
        return json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return {"code": None, "message": body[:200]}


# ---- the web's memory ---------------------------------------------------------

def mem(st):
    """(VmRSS, VmHWM) of the web in bytes."""
    out = {}
    with open("/proc/%d/status" % st.pid("web")) as f:
        for ln in f:
            k, _, v = ln.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) * 1024
    return out["VmRSS"], out["VmHWM"]


MiB = 1 << 20


def t_json_bomb_413(st):
    """A 100 MB JSON array: 413 at once, the web does not grow."""
    _, hwm0 = mem(st)
    bomb = b"[" + b"0," * (50 * 1000 * 1000 - 1) + b"0]"
    status, _, body, waited = api(st, "POST", "/api/sandboxes", bomb, timeout=120)
    del bomb
    _, hwm1 = mem(st)
    assert status == 413, "status %d (%r), wanted 413" % (status, body[:200])
    assert error_of(body)["code"] == "too_large", body[:200]
    assert waited < 5, "the 413 took %.1f s after the body was sent" % waited
    assert hwm1 - hwm0 < 64 * MiB, "the web grew by %d MiB for a refused body" % ((hwm1 - hwm0) // MiB)


def t_json_budget_400(st):
    """A 1 MB body of 300k tiny values: 400 naming the budget."""
    body = b'{"metadata":[' + b"0, " * 299999 + b"0]}"
    assert len(body) < MiB
    status, _, resp, _ = api(st, "POST", "/api/sandboxes", body)
    e = error_of(resp)
    assert status == 400, "status %d (%r), wanted 400" % (status, resp[:200])
    assert "100000" in e["message"] and "budget" in e["message"], "the message does not name the budget: %r" % e
    # the same for exec, and for depth
    deep = b'{"metadata":' + b"[" * 200 + b"]" * 200 + b"}"
    status, _, resp, _ = api(st, "POST", "/api/sandboxes", deep)
    assert status == 400 and "deep" in error_of(resp)["message"], (status, resp[:200])


def t_json_three_at_once(st):
    """Three 10 MB arrays at once (5M values each): the web stays bounded."""
    _, hwm0 = mem(st)
    bomb = b"[" + b"0," * (5 * 1000 * 1000 - 1) + b"0]"
    res = []

    def one(i):
        res.append(api(st, "POST", "/api/sandboxes", bomb, src="127.0.0.%d" % (20 + i), timeout=120))
    th = [threading.Thread(target=one, args=(i,)) for i in range(3)]
    for t in th:
        t.start()
    for t in th:
        t.join(180)
    _, hwm1 = mem(st)
    assert len(res) == 3 and all(r[0] in (400, 413) for r in res), [(r[0], r[2][:120]) for r in res]
    assert hwm1 - hwm0 < 96 * MiB, "three bodies at once grew the web by %d MiB" % ((hwm1 - hwm0) // MiB)


def t_json_memory_returns(st):
    """Large bodies within the caps are parsed, then their memory goes back."""
    rss0, _ = mem(st)
    big_string = json.dumps({"metadata": {"k": "x" * (15 * MiB)}}).encode()
    many = json.dumps({"metadata": {"k": [0] * 90000}}).encode()
    for _ in range(3):
        for b in (big_string, many):
            status, _, resp, _ = api(st, "POST", "/api/sandboxes", b, timeout=60)
            assert status == 413 and "metadata" in error_of(resp)["message"], (status, resp[:200])
    time.sleep(0.5)
    rss1, _ = mem(st)
    assert rss1 - rss0 < 24 * MiB, "the web kept %d MiB after large requests" % ((rss1 - rss0) // MiB)


# ---- event streams ------------------------------------------------------------

class Stream:
    """An open event stream on its own socket; a thread reads its events."""

    def __init__(self, st, tid, src):
        self.s = connect(st, src, timeout=40)
        self.s.sendall(("GET /api/tasks/%s/events HTTP/1.1\r\nHost: localhost\r\n"
                        "Accept: text/event-stream\r\nConnection: close\r\n\r\n" % tid).encode())
        self.status, self.h, rest = read_head(self.s)
        self.data = rest
        self.done = threading.Event()
        if self.status == 200:
            threading.Thread(target=self.pump, daemon=True).start()
        else:
            try:
                self.data = read_body(self.s, self.h, rest)
            except (OSError, ValueError):
                pass

    def pump(self):
        try:
            while b"event: done" not in self.data:
                c = self.s.recv(65536)
                if not c:
                    break
                self.data += c
        except OSError:
            pass
        self.done.set()

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


def t_sse_admission(st):
    status, _, resp, _ = create_task(st, "[hold] keep running")
    assert status == 201, (status, resp[:200])
    tid = json.loads(resp)["id"]
    wait_status(st, tid, ("running",), 60)
    streams = []
    try:
        a = [Stream(st, tid, "127.0.0.5") for _ in range(PER_CLIENT + 2)]
        streams += a
        got = [x.status for x in a]
        assert got == [200] * PER_CLIENT + [429, 429], "one address's streams answered %r" % got
        e = error_of(a[-1].data)
        assert e["code"] == "too_many_streams", e
        # another client meanwhile: answered promptly
        for path in ("/api/tasks", "/api/health"):
            status, _, _, waited = request(st, "GET", path, src="127.0.0.9", timeout=10)
            assert status == 200 and waited < 2, "%s answered %d after %.1f s" % (path, status, waited)
        # more addresses: streams together stop at THREADS - RESERVE
        total = THREADS - RESERVE
        b = [Stream(st, tid, "127.0.0.6") for _ in range(PER_CLIENT)]
        streams += b
        assert [x.status for x in b] == [200] * PER_CLIENT, [x.status for x in b]
        c = Stream(st, tid, "127.0.0.7")
        streams.append(c)
        assert total == 2 * PER_CLIENT and c.status == 429, "stream %d answered %d" % (total + 1, c.status)
        for path in ("/api/tasks", "/api/health", "/api/tasks/" + tid):
            status, _, _, waited = request(st, "GET", path, src="127.0.0.9", timeout=10)
            assert status == 200 and waited < 2, "%s answered %d after %.1f s" % (path, status, waited)
        # the accepted streams keep working: each sees the task end
        status, _, resp, _ = request(st, "POST", "/api/tasks/%s/cancel" % tid, src="127.0.0.9")
        assert status in (200, 202), (status, resp[:200])
        ok = [x for x in a[:PER_CLIENT] + b if x.done.wait(20) and b"event: done" in x.data]
        assert len(ok) == 2 * PER_CLIENT, "%d of %d accepted streams saw the done event" % (len(ok), 2 * PER_CLIENT)
        # closed streams give their places back
        for x in streams:
            x.close()
        time.sleep(0.5)
        again = Stream(st, tid, "127.0.0.5")
        streams.append(again)
        assert again.status == 200, "after closing, a new stream answered %d" % again.status
    finally:
        for x in streams:
            x.close()


# ---- bundles --------------------------------------------------------------------

def create_task(st, prompt):
    boundary = "----limits" + uuid.uuid4().hex
    body = ("--%s\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\n%s\r\n--%s--\r\n"
            % (boundary, prompt, boundary)).encode()
    return request(st, "POST", "/api/tasks", body, {"Content-Type": "multipart/form-data; boundary=" + boundary},
                   src="127.0.0.9")


def wait_status(st, tid, want, timeout):
    deadline = time.time() + timeout
    t = None
    while time.time() < deadline:
        status, _, body, _ = request(st, "GET", "/api/tasks/" + tid, src="127.0.0.9")
        if status == 200:
            t = json.loads(body)
            if t["status"] in want:
                return t
        time.sleep(0.2)
    raise AssertionError("task %s not %s after %d s: %s" % (tid, want, timeout, t and t["status"]))


def du(path):
    """Bytes of the files under path, each inode once: a finished round's
    outputs are hard links (rounds/N/output), made just after the task's
    end is recorded, and take no more disk."""
    total = 0
    seen = set()
    for root, _, files in os.walk(path):
        for n in files:
            try:
                st = os.lstat(os.path.join(root, n))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def t_folder_bundles(st):
    status, _, resp, _ = create_task(st, "[deep] write a deep folder")
    assert status == 201, (status, resp[:200])
    tid = json.loads(resp)["id"]
    t = wait_status(st, tid, ("succeeded", "failed", "cancelled"), 120)
    assert t["status"] == "succeeded", t
    tdir = os.path.join(st.prefix, "artifacts", tid)
    out = du(os.path.join(tdir, "output"))
    assert out >= DEPTH * LEVEL_BYTES, "the output is %d bytes" % out
    before = du(tdir)
    folder = ""
    for lvl in range(1, DEPTH + 1):
        folder = folder + ("/" if folder else "") + "l%d" % lvl
        # what the folder holds, entry names starting at its own name
        want = {}
        for k in range(lvl, DEPTH + 1):
            rel = "/".join("l%d" % j for j in range(lvl, k + 1))
            want[rel + "/f%d.bin" % k] = LEVEL_BYTES
            want[rel + "/n%d.txt" % k] = len("level %d\n" % k)
        for fmt in ("zip", "tar.gz"):
            status, h, body, _ = request(st, "GET", "/api/tasks/%s/bundle.%s?path=%s" % (tid, fmt, folder),
                                         src="127.0.0.9", timeout=60)
            assert status == 200, "level %d %s: %d %r" % (lvl, fmt, status, body[:200])
            if fmt == "zip":
                z = zipfile.ZipFile(io.BytesIO(body))
                assert z.testzip() is None, "level %d: a damaged zip" % lvl
                got = {i.filename: i.file_size for i in z.infolist() if not i.filename.endswith("/")}
            else:
                tf = tarfile.open(fileobj=io.BytesIO(body), mode="r:gz")
                got = {}
                for m in tf.getmembers():
                    if m.isfile():
                        got[m.name] = len(tf.extractfile(m).read())
            assert got == want, "level %d %s: entries %r, wanted %r" % (lvl, fmt, sorted(got)[:4], sorted(want)[:4])
    grown = du(tdir) - before
    # built once and kept, but a task keeps at most 8 folder bundles
    kept = [n for n in os.listdir(tdir) if n.startswith("fbundle-")]
    assert len(kept) <= 8 and grown <= 8 * (out + 64 * 1024), (
        "%d folder bundles kept %d files, %d bytes on disk (the output is %d bytes)"
        % (2 * DEPTH, len(kept), grown, out))
    # the whole-task bundle is still kept once (and served with ranges)
    status, h, body, _ = request(st, "GET", "/api/tasks/%s/bundle.zip" % tid, src="127.0.0.9", timeout=60)
    assert status == 200 and zipfile.ZipFile(io.BytesIO(body)).testzip() is None, status
    status, h, part, _ = request(st, "GET", "/api/tasks/%s/bundle.zip" % tid, headers={"Range": "bytes=0-9"},
                                 src="127.0.0.9")
    assert status == 206 and part == body[:10], (status, part)
    # unknown folder and the 413 cap still answer before any byte
    status, _, resp, _ = request(st, "GET", "/api/tasks/%s/bundle.zip?path=nope" % tid, src="127.0.0.9")
    assert status == 404 and error_of(resp)["code"] == "not_found", (status, resp[:200])


CHECKS = [
    ("json_bomb_413", t_json_bomb_413),
    ("json_budget_400", t_json_budget_400),
    ("json_three_at_once", t_json_three_at_once),
    ("json_memory_returns", t_json_memory_returns),
    ("sse_admission", t_sse_admission),
    ("folder_bundles", t_folder_bundles),
]


def main():
    r = Reporter()
    if not image_ready():
        print("SKIP web_limits: the sandbox image is not built (make image)")
        return
    if os.geteuid() != 0:
        print("SKIP web_limits: sandboxd needs root")
        return
    only = set(sys.argv[1:])
    web_env = {"LLMBOX_SANDBOX_API_TOKEN": TOKEN, "LLMBOX_WEB_THREADS": str(THREADS),
               "LLMBOX_SSE_MAX_PER_CLIENT": str(PER_CLIENT)}
    with Stack(scenario=SCENARIO, web_env=web_env, env={"LLMBOX_POOL_SIZE": "1"}) as st:
        for name, fn in CHECKS:
            if only and name not in only:
                continue
            r.run("security/web_limits/" + name, fn, st)
    r.done()


if __name__ == "__main__":
    main()
