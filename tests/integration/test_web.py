#!/usr/bin/env python3
"""Integration tests of `llmbox web` behind the real nginx.conf.

Starts its own nginx (the repo's nginx.conf with the port, the body limit
and, when run as root, the worker user changed by sed) and `llmbox web` in a
temporary prefix: web -> repo/web, its own var/ and artifacts/. No sandbox
daemon and no model: the model URL is a closed loopback port, so agents
started by task creation fail at once, which these tests do not mind.
Agents and their events are simulated by writing to the database with the
sqlite3 module, as an agent would.

Prints "PASS name" / "FAIL name: why" lines. Python stdlib only.
Environment: BUILD (default "build") picks the binary BUILD/llmbox;
LLMBOX_KEEP_TEST_DIRS=1 keeps the prefix.
"""
import http.client
import io
import json
import os
import pwd
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
import zipfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.join(REPO, os.environ.get("BUILD", "build"), "llmbox")
UPLOAD_MB = 1          # LLMBOX_MAX_UPLOAD_MB for the backend
NGINX_BODY_MB = 3      # nginx client_max_body_size, above the backend's


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def multipart(fields, files, boundary=None):
    """fields: [(name, str)]; files: [(field, filename, bytes)] -> (ctype, body)."""
    boundary = boundary or "----llmbox" + uuid.uuid4().hex
    out = bytearray()
    for k, v in fields:
        out += ('--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n' % (boundary, k)).encode()
        out += v.encode() + b"\r\n"
    for field, name, data in files:
        out += ('--%s\r\nContent-Disposition: form-data; name="%s"; filename="%s"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n" % (boundary, field, name)).encode()
        out += data + b"\r\n"
    out += ("--%s--\r\n" % boundary).encode()
    return "multipart/form-data; boundary=" + boundary, bytes(out)


class Env:
    conf_subst = ()   # (old, new) replacements in nginx.conf, for other suites
    extra_env = {}    # more environment for the web
    before_web = None  # called with the prefix once it is ready, before the web starts

    def start(self):
        self.prefix = tempfile.mkdtemp(prefix="llmbox-webtest-")
        os.chmod(self.prefix, 0o755)
        p = self.prefix
        os.symlink(os.path.join(REPO, "web"), os.path.join(p, "web"))
        for d in ("var/run", "var/log", "var/nginx", "var/web", "artifacts"):
            os.makedirs(os.path.join(p, d))
        # the key of signed download links, for the web and nginx
        subprocess.check_call([os.path.join(REPO, "scripts", "nginx-local.sh"), pwd.getpwuid(os.geteuid()).pw_name],
                              cwd=p)
        self.port = free_port()
        conf = open(os.path.join(REPO, "nginx.conf")).read()
        for old, new in self.conf_subst:
            assert old in conf, "nginx.conf has no %r" % old
            conf = conf.replace(old, new)
        lines = []
        for line in conf.splitlines():
            if "listen 127.0.0.1:8080" in line:
                line = line.replace("listen 127.0.0.1:8080", "listen 127.0.0.1:%d" % self.port)
            if line.strip().startswith("client_max_body_size"):
                line = "    client_max_body_size %dm;" % NGINX_BODY_MB
            if line.strip().startswith("user "):
                # the web runs as us here (LLMBOX_WEB_USER unset), so its
                # socket is ours: nginx workers must run as us too
                line = "user root;" if os.geteuid() == 0 else ""
            lines.append(line)
        # next to the nginx-local.conf it includes, as scripts/nginx-conf.sh does
        self.nginx_conf = os.path.join(p, "var", "run", "nginx.conf")
        with open(self.nginx_conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.env = dict(os.environ)
        for k in ("LLMBOX_WEB_USER", "OPENAI_BASE_URL", "OPENAI_API_KEY", "LLMBOX_LLM_KEY", "LLMBOX_DB",
                  "LLMBOX_WEB_SOCKET", "LLMBOX_ARTIFACTS", "LLMBOX_PLUGINS", "LLMBOX_SANDBOXD_SOCKET"):
            self.env.pop(k, None)
        self.env.update({
            "LLMBOX_HOME": p,
            "LLMBOX_VAR": os.path.join(p, "var"),
            "LLMBOX_LLM_URL": "http://127.0.0.1:%d/v1" % free_port(),  # closed
            "LLMBOX_LLM_MODEL": "test-model",
            "LLMBOX_MAX_UPLOAD_MB": str(UPLOAD_MB),
            "LLMBOX_WEB_THREADS": "8",
        })
        self.env.update(self.extra_env)
        if self.before_web:
            self.before_web(p)
        self.procs = []
        logf = lambda n: open(os.path.join(p, "var", "log", n), "a")
        self.procs.append(subprocess.Popen([BIN, "web"], cwd=p, env=self.env, stdout=logf("web.out"),
                                           stderr=subprocess.STDOUT))
        self.procs.append(subprocess.Popen(["nginx", "-p", p + "/", "-c", self.nginx_conf,
                                            "-e", "var/log/nginx-error.log"], cwd=p, env=self.env,
                                           stdout=logf("nginx.out"), stderr=subprocess.STDOUT))
        deadline = time.time() + 15
        while time.time() < deadline:
            try:
                st, _, _ = self.req("GET", "/api/health", timeout=5)
                if st == 200:
                    self.db = sqlite3.connect(os.path.join(p, "var", "web", "llmbox.db"), timeout=10,
                                              isolation_level=None, check_same_thread=False)
                    return
            except OSError:
                pass
            for pr in self.procs:
                if pr.poll() is not None:
                    raise RuntimeError("%s exited at start\n%s" % (pr.args[0], self.logs()))
            time.sleep(0.1)
        raise RuntimeError("the web did not answer within 15 s\n" + self.logs())

    def logs(self):
        out = []
        d = os.path.join(self.prefix, "var", "log")
        for n in sorted(os.listdir(d)):
            try:
                out.append("--- %s\n%s" % (n, open(os.path.join(d, n), errors="replace").read()[-3000:]))
            except OSError:
                pass
        return "\n".join(out)

    def stop(self):
        for pr in self.procs:
            if pr.poll() is None:
                pr.send_signal(signal.SIGTERM)
        for pr in self.procs:
            try:
                pr.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pr.kill()
                pr.wait()
        if os.environ.get("LLMBOX_KEEP_TEST_DIRS"):
            print("kept %s" % self.prefix, file=sys.stderr)
        else:
            shutil.rmtree(self.prefix, ignore_errors=True)

    def conn(self, timeout=30):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def req(self, method, path, body=None, headers=None, timeout=30):
        c = self.conn(timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def json(self, method, path, body=None, headers=None):
        st, h, b = self.req(method, path, body, headers)
        try:
            return st, h, json.loads(b)
        except ValueError:
            raise AssertionError("%s %s -> %d, not JSON: %r" % (method, path, st, b[:300]))

    # ---- simulating an agent ----
    def insert_task(self, status="running", prompt="simulated", answer=None):
        tid = uuid.uuid4().hex
        now = int(time.time() * 1000)
        self.db.execute("INSERT INTO tasks(id, status, prompt, model, max_turns, created_ms, started_ms,"
                        " finished_ms, answer) VALUES(?,?,?,?,?,?,?,?,?)",
                        (tid, status, prompt, "test-model", 10, now, now,
                         now if status in ("succeeded", "failed", "cancelled") else None, answer))
        return tid

    def add_event(self, tid, seq, etype, data):
        self.db.execute("INSERT INTO events(task_id, seq, ts_ms, type, data) VALUES(?,?,?,?,?)",
                        (tid, seq, int(time.time() * 1000), etype, json.dumps(data)))

    def task_dir(self, tid):
        return os.path.join(self.prefix, "artifacts", tid)


def run_on_env(E, checks):
    """Starts E, runs each (check, arg) of checks with a PASS or FAIL line,
    and stops E; returns the suite's exit status. arg is E for most checks,
    None for one that starts an Env of its own."""
    try:
        E.start()
    except Exception as e:
        print("FAIL setup: %s" % str(e).splitlines()[0])
        print(str(e), file=sys.stderr)
        E.stop()
        return 1
    failed = 0
    for t, arg in checks:
        name = t.__name__[2:]
        t0 = time.time()
        try:
            t(arg)
            print("PASS %s (%.1fs)" % (name, time.time() - t0), flush=True)
        except Exception as e:
            failed += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, str(e)[:300]), flush=True)
            traceback.print_exc(file=sys.stderr)
    if failed:
        print(E.logs(), file=sys.stderr)
    E.stop()
    return 1 if failed else 0


def expect_error(st, body, status, code=None):
    assert st == status, "status %d, expected %d: %r" % (st, status, body)
    assert isinstance(body, dict) and "error" in body, "no error object: %r" % body
    e = body["error"]
    assert isinstance(e.get("code"), str) and isinstance(e.get("message"), str) and e["message"], e
    if code:
        assert e["code"] == code, "code %r, expected %r" % (e["code"], code)


# ---------------------------------------------------------------- tests

def t_health_shape(E):
    st, h, b = E.json("GET", "/api/health")
    assert st == 200, st
    assert h.get("content-type", "").startswith("application/json"), h
    assert b["ok"] is True and isinstance(b["version"], str) and b["version"]
    sb = b["sandboxd"]
    assert isinstance(sb["ok"], bool)
    if not sb["ok"]:
        assert "sandbox" in sb["message"].lower(), sb
    m = b["model"]
    assert m["url"] == E.env["LLMBOX_LLM_URL"] and m["model"] == "test-model", m
    assert m["reachable"] is False, m
    assert "not reachable" in m["message"] and m["url"] in m["message"], m
    assert "key" not in json.dumps(b).lower() or "api_key" not in json.dumps(b).lower()


def t_models(E):
    st, _, b = E.json("GET", "/api/models")
    # LLMBOX_LLM_URL / LLMBOX_LLM_MODEL describe the model named "default"
    assert st == 200 and b == [{"name": "default", "provider": "openai", "model": "test-model", "tool_mode": "native",
                                "url": E.env["LLMBOX_LLM_URL"], "default": True}], b


def t_tools(E):
    st, _, b = E.json("GET", "/api/tools")
    if st == 200:
        assert isinstance(b.get("tools"), list), b
    else:
        expect_error(st, b, 503)


def t_unknown_task_404(E):
    st, _, b = E.json("GET", "/api/tasks/" + uuid.uuid4().hex)
    expect_error(st, b, 404, "not_found")
    st, _, b = E.json("GET", "/api/tasks/%s/events" % uuid.uuid4().hex)
    expect_error(st, b, 404, "not_found")


def t_malformed_id(E):
    # a malformed id names no task: 404 with a sentence about the id format
    for bad in ("xyz", "0123456789ABCDEF0123456789ABCDEF", "0" * 31 + "g", "0" * 33, "%30" * 32):
        st, _, b = E.json("GET", "/api/tasks/" + bad)
        expect_error(st, b, 404, "not_found")
        assert "32 lowercase hexadecimal" in b["error"]["message"], b


def t_unknown_route_404(E):
    st, _, b = E.json("GET", "/api/nope")
    expect_error(st, b, 404, "not_found")


def t_wrong_method_405(E):
    st, h, b = E.json("PUT", "/api/tasks", body=b"")
    expect_error(st, b, 405, "method_not_allowed")
    assert "POST" in h.get("allow", "") and "GET" in h.get("allow", ""), h
    st, h, b = E.json("GET", "/api/tasks/%s/cancel" % uuid.uuid4().hex)
    expect_error(st, b, 405)
    assert h.get("allow") == "POST", h


def t_not_multipart_415(E):
    st, _, b = E.json("POST", "/api/tasks", body=b'{"prompt":"x"}', headers={"Content-Type": "application/json"})
    expect_error(st, b, 415, "unsupported_media_type")


def t_malformed_multipart_400(E):
    ct, body = multipart([("prompt", "hello")], [])
    # truncated: cut before the closing boundary
    st, _, b = E.json("POST", "/api/tasks", body=body[:-12], headers={"Content-Type": ct})
    expect_error(st, b, 400, "bad_request")
    assert "truncated" in b["error"]["message"] or "boundary" in b["error"]["message"], b
    # no boundary parameter
    st, _, b = E.json("POST", "/api/tasks", body=body, headers={"Content-Type": "multipart/form-data"})
    expect_error(st, b, 400)
    # missing prompt
    ct, body = multipart([("model", "m")], [("files", "a.txt", b"x")])
    st, _, b = E.json("POST", "/api/tasks", body=body, headers={"Content-Type": ct})
    expect_error(st, b, 400)
    assert "prompt" in b["error"]["message"], b
    # a file name that climbs out
    ct, body = multipart([("prompt", "p")], [("files", "../../etc/x", b"x")])
    st, _, b = E.json("POST", "/api/tasks", body=body, headers={"Content-Type": ct})
    expect_error(st, b, 400)
    # max_turns out of range
    ct, body = multipart([("prompt", "p"), ("max_turns", "0")], [])
    st, _, b = E.json("POST", "/api/tasks", body=body, headers={"Content-Type": ct})
    expect_error(st, b, 400)
    # nothing of these left a task folder behind
    st, _, lst = E.json("GET", "/api/tasks")
    ids = {t["id"] for t in lst["tasks"]}
    for d in os.listdir(os.path.join(E.prefix, "artifacts")):
        assert d in ids, "stray task folder %s" % d


def t_oversize_413(E):
    big = os.urandom(UPLOAD_MB * 1024 * 1024 + 1000)
    ct, body = multipart([("prompt", "p")], [("files", "big.bin", big)])
    st, _, b = E.json("POST", "/api/tasks", body=body, headers={"Content-Type": ct})
    expect_error(st, b, 413, "too_large")
    # larger than nginx's own limit: nginx answers, still as JSON
    ct, body = multipart([("prompt", "p")], [("files", "huge.bin", b"\0" * ((NGINX_BODY_MB + 1) << 20))])
    st, _, b = E.json("POST", "/api/tasks", body=body, headers={"Content-Type": ct})
    expect_error(st, b, 413)
    # a prompt over 100 KB
    ct, body = multipart([("prompt", "x" * (100 * 1024 + 1))], [])
    st, _, b = E.json("POST", "/api/tasks", body=body, headers={"Content-Type": ct})
    expect_error(st, b, 413)


def t_create_stores_inputs(E):
    files = [("files", "data/a.csv", b"x,y\n1,2\n"), ("files", "data/sub/b.bin", bytes(range(256))),
             ("files", "caf\u00e9.txt", "h\u00e9".encode())]
    ct, body = multipart([("prompt", "plot the trend"), ("max_turns", "7")], files)
    st, h, t = E.json("POST", "/api/tasks", body=body, headers={"Content-Type": ct})
    assert st == 201, (st, t)
    tid = t["id"]
    assert len(tid) == 32 and t["status"] in ("queued", "running", "failed"), t
    assert h.get("location") == "/api/tasks/" + tid, h
    assert t["prompt"] == "plot the trend" and t["max_turns"] == 7 and t["model"] == "default", t
    got = sorted((i["path"], i["size"]) for i in t["inputs"])
    assert got == sorted((n, len(d)) for _, n, d in files), got
    for _, name, data in files:
        with open(os.path.join(E.task_dir(tid), "input", name), "rb") as f:
            assert f.read() == data, name
    assert not os.path.exists(os.path.join(E.task_dir(tid), ".upload")), "temp folder left"
    st, _, lst = E.json("GET", "/api/tasks?limit=5")
    assert st == 200 and lst["tasks"][0]["id"] == tid, lst
    # the agent cannot work here (no model, no sandbox): the task must end
    # on its own with a reason, never stay queued
    deadline = time.time() + 10
    while time.time() < deadline:
        st, _, t = E.json("GET", "/api/tasks/" + tid)
        if t["status"] in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.2)
    assert t["status"] == "failed" and t["reason"], t


def read_sse(E, path, headers=None, until_done=True, max_s=10):
    """Returns [(id, event, data)] read from an event stream."""
    c = E.conn(timeout=max_s)
    c.request("GET", path, headers=headers or {})
    r = c.getresponse()
    assert r.status == 200, (r.status, r.read())
    h = {k.lower(): v for k, v in r.getheaders()}
    assert h["content-type"].startswith("text/event-stream"), h
    assert h.get("cache-control") == "no-cache", h
    events, cur = [], {}
    deadline = time.time() + max_s
    while time.time() < deadline:
        line = r.fp.readline()
        if not line:
            break
        line = line.decode().rstrip("\n")
        if line == "":
            if "event" in cur:
                events.append((int(cur["id"]), cur["event"], json.loads(cur["data"])))
                if cur["event"] == "done" and until_done:
                    break
            cur = {}
            continue
        if line.startswith(":"):
            continue
        k, _, v = line.partition(": ")
        cur[k] = v
    c.close()
    return events


def t_sse_replay(E):
    tid = E.insert_task("running")
    E.add_event(tid, 1, "status", {"status": "running"})
    E.add_event(tid, 2, "model", {"turn": 1, "content": "line1\nline2"})
    E.add_event(tid, 3, "tool", {"turn": 1, "name": "bash", "status": "ok"})

    import threading

    def agent():
        time.sleep(0.6)
        E.add_event(tid, 4, "answer", {"answer": "42"})
        E.db.execute("UPDATE tasks SET status='succeeded' WHERE id=?", (tid,))
        E.add_event(tid, 5, "done", {"status": "succeeded"})

    th = threading.Thread(target=agent)
    th.start()
    ev = read_sse(E, "/api/tasks/%s/events" % tid, {"Last-Event-ID": "1"})
    th.join()
    assert [e[0] for e in ev] == [2, 3, 4, 5], ev
    assert ev[0][1] == "model" and ev[0][2]["content"] == "line1\nline2", ev[0]
    assert ev[-1][1] == "done" and ev[-1][2]["status"] == "succeeded", ev[-1]
    # the query parameter resumes too, and a finished stream ends by itself
    ev = read_sse(E, "/api/tasks/%s/events?last_event_id=3" % tid)
    assert [e[0] for e in ev] == [4, 5], ev
    ev = read_sse(E, "/api/tasks/%s/events" % tid)
    assert [e[0] for e in ev] == [1, 2, 3, 4, 5], ev


def t_artifact_download(E):
    tid = E.insert_task("succeeded", answer="the answer")
    out = os.path.join(E.task_dir(tid), "output")
    os.makedirs(os.path.join(out, "plots"))
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
    html = b"<html><script>alert(1)</script></html>"
    files = {"plots/chart.png": (png, "image/png"), "r\u00e9sum\u00e9 \"x\".html": (html, "text/html"),
             "data.csv": (b"a,b\n1,2\n", "text/csv")}
    rows = []
    for name, (data, mime) in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        rows.append((tid, name, len(data), mime, "0" * 64))
    os.symlink("/etc/passwd", os.path.join(out, "link.txt"))
    rows.append((tid, "link.txt", 10, "text/plain", "0" * 64))
    E.db.executemany("INSERT INTO artifacts(task_id, path, size, mime, sha256) VALUES(?,?,?,?,?)", rows)

    st, _, b = E.json("GET", "/api/tasks/%s/artifacts" % tid)
    assert st == 200 and [a["path"] for a in b["artifacts"]] == sorted(files.keys() | {"link.txt"}), b

    st, h, body = E.req("GET", "/api/tasks/%s/artifacts/plots/chart.png" % tid)
    assert st == 200 and body == png, (st, len(body))
    assert h["content-type"] == "image/png", h
    assert h["content-disposition"].startswith("attachment;") and "filename*=UTF-8''chart.png" in h["content-disposition"], h
    assert h.get("x-content-type-options") == "nosniff", h
    assert "sandbox" in h.get("content-security-policy", ""), h
    assert "x-accel-redirect" not in h, h

    st, h, body = E.req("GET", "/api/tasks/%s/artifacts/plots/chart.png" % tid, headers={"Range": "bytes=8-15"})
    assert st == 206 and body == png[8:16], (st, body)
    assert h["content-range"] == "bytes 8-15/%d" % len(png), h

    enc = "r%C3%A9sum%C3%A9%20%22x%22.html"
    st, h, body = E.req("GET", "/api/tasks/%s/artifacts/%s?inline=1" % (tid, enc))
    assert st == 200 and body == html, (st, body)
    assert h["content-type"].startswith("text/html"), h
    cd = h["content-disposition"]
    assert cd.startswith("inline;") and "filename*=UTF-8''r%C3%A9sum%C3%A9%20%22x%22.html" in cd, cd
    assert 'filename="r_sum_ _x_.html"' in cd, cd
    assert h.get("content-security-policy") == "sandbox allow-scripts", h

    for bad in ("..%2f..%2f..%2fetc%2fpasswd", "nope.txt", "link.txt", "%2fetc%2fpasswd", "a%5c..%5cb",
                "plots%2f..%2f..%2f..%2fllmbox.db", "%ff.txt"):
        st, _, b = E.json("GET", "/api/tasks/%s/artifacts/%s" % (tid, bad))
        expect_error(st, b, 404)
    # nginx itself refuses a NUL in the URI; either way nothing is served
    st, _, _ = E.req("GET", "/api/tasks/%s/artifacts/data.csv%%00.png" % tid)
    assert st in (400, 404), st
    # the internal location is not reachable from outside
    st, _, _ = E.req("GET", "/_artifacts/%s/output/data.csv" % tid)
    assert st == 404, st


def t_trajectory(E):
    tid = E.insert_task("succeeded")
    st, _, b = E.json("GET", "/api/tasks/%s/trajectory" % tid)
    expect_error(st, b, 404)
    os.makedirs(E.task_dir(tid), exist_ok=True)
    with open(os.path.join(E.task_dir(tid), "trajectory.json"), "w") as f:
        json.dump({"version": 1, "turns": []}, f)
    st, h, b = E.json("GET", "/api/tasks/%s/trajectory" % tid)
    assert st == 200 and b == {"version": 1, "turns": []}, (st, b)
    assert h["content-type"].startswith("application/json"), h


def t_bundle(E):
    tid = E.insert_task("running")
    st, _, b = E.json("GET", "/api/tasks/%s/bundle.zip" % tid)
    expect_error(st, b, 409, "conflict")
    E.db.execute("UPDATE tasks SET status='succeeded', answer='forty-two' WHERE id=?", (tid,))
    out = os.path.join(E.task_dir(tid), "output")
    os.makedirs(os.path.join(out, "d"))
    with open(os.path.join(out, "d", "notes.txt"), "w") as f:
        f.write("hello " * 100)
    with open(os.path.join(out, "img.png"), "wb") as f:
        f.write(b"\x89PNG" + os.urandom(500))
    os.symlink("/etc/passwd", os.path.join(out, "evil"))
    with open(os.path.join(E.task_dir(tid), "trajectory.json"), "w") as f:
        f.write("{}")
    st, h, body = E.req("GET", "/api/tasks/%s/bundle.zip" % tid)
    assert st == 200, (st, body[:200])
    assert h["content-type"] == "application/zip", h
    assert "llmbox-%s.zip" % tid[:8] in h["content-disposition"] and h["content-disposition"].startswith("attachment"), h
    z = zipfile.ZipFile(io.BytesIO(body))
    names = sorted(z.namelist())
    assert names == ["answer.txt", "output/d/notes.txt", "output/img.png", "trajectory.json"], names
    assert z.read("answer.txt") == b"forty-two"
    assert z.getinfo("output/img.png").compress_type == zipfile.ZIP_STORED
    assert z.getinfo("output/d/notes.txt").compress_type == zipfile.ZIP_DEFLATED
    assert z.testzip() is None
    st, h, body = E.req("GET", "/api/tasks/%s/bundle.tar.gz" % tid)
    assert st == 200 and body[:2] == b"\x1f\x8b", (st, body[:20])


def t_cancel_and_delete(E):
    tid = E.insert_task("succeeded")
    st, _, b = E.json("POST", "/api/tasks/%s/cancel" % tid, body=b"")
    expect_error(st, b, 409, "conflict")
    # a running task with no agent of ours (as after a crash) is ended here
    tid2 = E.insert_task("running")
    st, _, b = E.json("POST", "/api/tasks/%s/cancel" % tid2, body=b"")
    assert st == 202, (st, b)
    st, _, t = E.json("GET", "/api/tasks/" + tid2)
    assert t["status"] == "cancelled" and t["reason"] == "cancelled by the user", t
    ev = read_sse(E, "/api/tasks/%s/events" % tid2)
    assert ev and ev[-1][1] == "done" and ev[-1][2]["status"] == "cancelled", ev
    os.makedirs(os.path.join(E.task_dir(tid), "output"), exist_ok=True)
    st, _, b = E.json("DELETE", "/api/tasks/" + tid)
    assert st == 200 and b.get("deleted") is True, (st, b)
    assert not os.path.exists(E.task_dir(tid))
    st, _, b = E.json("GET", "/api/tasks/" + tid)
    expect_error(st, b, 404)


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL setup: %s is not built (make BUILD=%s)" % (BIN, os.environ.get("BUILD", "build")))
        return 1
    if not shutil.which("nginx"):
        print("SKIP web: nginx is not installed")
        return 0
    E = Env()
    tests = [t_health_shape, t_models, t_tools, t_unknown_task_404, t_malformed_id, t_unknown_route_404,
             t_wrong_method_405, t_not_multipart_415, t_malformed_multipart_400, t_oversize_413,
             t_create_stores_inputs, t_sse_replay, t_artifact_download, t_trajectory, t_bundle,
             t_cancel_and_delete]
    return run_on_env(E, [(t, E) for t in tests])


if __name__ == "__main__":
    sys.exit(main())
