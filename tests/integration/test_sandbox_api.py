#!/usr/bin/env python3
"""The HTTP sandbox API (/api/sandboxes) through nginx, against the real web
backend and sandboxd: auth, create with a spec, exec, files, status, list,
destroy, TTL expiry, limits. Each case is one thing an outside client relies
on. Needs root (sandboxd) and the built image; Python stdlib only.
"""
import base64
import hashlib
import http.client
import json
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import Reporter, Skip, Stack, image_ready  # noqa: E402

TOKEN = "test-token-" + os.urandom(16).hex()
API_MAX = 6


class Api:
    """A small client for the sandbox API of one stack."""

    def __init__(self, stack, token=TOKEN):
        self.stack = stack
        self.token = token

    def call(self, method, path, body=None, headers=None, token=None, timeout=60):
        h = {}
        tok = self.token if token is None else token
        if tok:
            h["Authorization"] = "Bearer " + tok
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        st, hd, data = self.stack.request(method, path, body, h, timeout=timeout)
        return st, hd, data

    def json(self, method, path, body=None, **kw):
        st, hd, data = self.call(method, path, body, **kw)
        try:
            obj = json.loads(data) if data else None
        except ValueError:
            raise AssertionError("%s %s -> %d, not JSON: %r" % (method, path, st, data[:300]))
        return st, obj

    def create(self, spec=None, expect=201):
        st, o = self.json("POST", "/api/sandboxes", spec or {})
        assert st == expect, (st, o)
        return o

    def exec(self, sid, command, **kw):
        body = {"command": command}
        body.update(kw)
        st, o = self.json("POST", "/api/sandboxes/%s/exec" % sid, body, timeout=kw.get("timeout_s", 30) + 30)
        assert st == 200, (st, o)
        return o

    def delete(self, sid):
        st, o = self.json("DELETE", "/api/sandboxes/" + sid)
        assert st == 200 and o["deleted"] is True, (st, o)


def sandboxd_ping(stack):
    """Asks this stack's sandboxd directly (its RPC: 4-byte length + JSON)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(os.path.join(stack.prefix, "var", "run", "sandboxd.sock"))
    req = b'{"op":"ping"}'
    s.sendall(struct.pack(">I", len(req)) + req)
    hdr = b""
    while len(hdr) < 4:
        hdr += s.recv(4 - len(hdr))
    n = struct.unpack(">I", hdr)[0]
    data = b""
    while len(data) < n:
        data += s.recv(n - len(data))
    s.close()
    return json.loads(data)


def wait_sandboxd_count(stack, want, timeout=10):
    deadline = time.time() + timeout
    while True:
        n = sandboxd_ping(stack)["sandboxes"]
        if n == want or time.time() > deadline:
            return n
        time.sleep(0.1)


# ---- API turned off -----------------------------------------------------------

def t_off_403(stack):
    api = Api(stack)
    for method, path in [("GET", "/api/sandboxes"), ("POST", "/api/sandboxes"),
                         ("GET", "/api/sandboxes/" + "0" * 32), ("DELETE", "/api/sandboxes/" + "0" * 32),
                         ("POST", "/api/sandboxes/%s/exec" % ("0" * 32))]:
        st, o = api.json(method, path, {} if method == "POST" else None)
        assert st == 403, (method, path, st, o)
        assert o["error"]["code"] == "forbidden", o
        assert "LLMBOX_SANDBOX_API_TOKEN" in o["error"]["message"], o
    st, o = stack.get_json("/api/health")
    assert o["sandbox_api"]["enabled"] is False, o


# ---- auth ----------------------------------------------------------------------

def t_auth_401(stack):
    api = Api(stack)
    st, hd, data = api.call("GET", "/api/sandboxes", token="")
    o = json.loads(data)
    assert st == 401 and o["error"]["code"] == "unauthorized", (st, o)
    assert hd.get("www-authenticate", "").startswith("Bearer"), hd
    assert "Authorization: Bearer" in o["error"]["message"], o
    for bad in ("wrong", TOKEN + "x", TOKEN[:-1], " "):
        st, hd, data = api.call("GET", "/api/sandboxes", token=bad)
        assert st == 401, (bad, st)
        assert hd.get("www-authenticate", "").startswith("Bearer"), hd
    # another scheme with the right token is not a bearer token
    st, _, _ = api.call("GET", "/api/sandboxes", token="", headers={"Authorization": "Basic " + TOKEN})
    assert st == 401, st
    # a refused create leaves nothing behind
    st, _, _ = api.call("POST", "/api/sandboxes", {"ttl_s": 60}, token="nope")
    assert st == 401
    st, o = api.json("GET", "/api/sandboxes")
    assert st == 200 and o["count"] == 0, o
    # the scheme is case-insensitive
    st, _, _ = api.call("GET", "/api/sandboxes", token="", headers={"Authorization": "bearer " + TOKEN})
    assert st == 200, st


# ---- create, exec --------------------------------------------------------------

BLOB = bytes(range(256)) * 64


def t_create_spec(stack):
    api = Api(stack)
    spec = {
        "image": "default", "ttl_s": 600, "workdir": "/work/proj",
        "env": {"GREETING": "hello world", "QUOTED": "it's $HOME `x` \"y\"\nline2"},
        "files": [
            {"path": "main.py", "content": "print('hi from main')\n"},
            {"path": "/opt/tool/run.sh", "content": "#!/bin/sh\necho ran \"$@\"\n", "mode": "0755"},
            {"path": "data/blob.bin", "content_base64": base64.b64encode(BLOB).decode()},
        ],
        "resources": {"cpu": 1.5, "memory_mib": 512, "pids": 256},
        "network": "none",
        "metadata": {"rollout": 7, "tag": "unit"},
    }
    st, hd, data = api.call("POST", "/api/sandboxes", spec)
    o = json.loads(data)
    assert st == 201, (st, o)
    sid = o["id"]
    assert len(sid) == 32 and o["status"] == "running", o
    assert hd.get("location") == "/api/sandboxes/" + sid, hd
    assert o["created_at"].endswith("Z") and o["expires_at"] > o["created_at"], o
    assert o["metadata"] == {"rollout": 7, "tag": "unit"}, o
    s = o["spec"]
    assert s["workdir"] == "/work/proj" and s["ttl_s"] == 600 and s["network"] == "none", s
    assert s["resources"]["cpu"] == 1.5 and s["resources"]["memory_mib"] == 512, s
    assert s["env"]["GREETING"] == "hello world", s
    paths = [f["path"] for f in s["files"]]
    assert paths == ["/work/proj/main.py", "/opt/tool/run.sh", "/work/proj/data/blob.bin"], paths
    assert all("content" not in f and "content_base64" not in f for f in s["files"]), s["files"]
    assert s["files"][2]["size"] == len(BLOB) and s["files"][1]["mode"] == "0755", s["files"]

    r = api.exec(sid, "pwd; echo \"$GREETING\"; python3 main.py; /opt/tool/run.sh a b; "
                      "stat -c %a /opt/tool/run.sh; sha256sum data/blob.bin | cut -d' ' -f1")
    lines = r["stdout"].splitlines()
    assert r["return_code"] == 0 and r["error_type"] is None, r
    assert lines == ["/work/proj", "hello world", "hi from main", "ran a b", "755",
                     hashlib.sha256(BLOB).hexdigest()], lines
    r = api.exec(sid, "printf '%s' \"$QUOTED\"")
    assert r["stdout"] == spec["env"]["QUOTED"], r
    api.delete(sid)


def t_exec(stack):
    api = Api(stack)
    sid = api.create({"ttl_s": 600, "env": {"BASE": "from-spec", "OVER": "spec"}})["id"]
    try:
        r = api.exec(sid, "echo out; echo err >&2")
        assert r["stdout"] == "out\n" and r["stderr"] == "err\n", r
        assert r["return_code"] == 0 and r["error_type"] is None and r["truncated"] is False, r
        assert isinstance(r["duration_ms"], (int, float)), r

        r = api.exec(sid, "echo partial; exit 3")
        assert r["return_code"] == 3 and r["error_type"] is None and r["stdout"] == "partial\n", r
        r = api.exec(sid, "false")
        assert r["return_code"] == 1, r

        # stdin: passed as data, the temp file is gone afterwards
        text = "line one\nit's line 'two'\n$(not expanded)\n"
        r = api.exec(sid, "cat; echo; wc -l", stdin=text)
        assert r["stdout"].startswith(text), r
        r = api.exec(sid, "ls -a /tmp | grep -c llmbox-stdin || true")
        assert r["stdout"].strip() == "0", r
        r = api.exec(sid, "cat")  # no stdin: /dev/null, not a hang
        assert r["stdout"] == "" and r["return_code"] == 0, r

        # cwd: absolute, or relative to the workdir (/testbed by default)
        r = api.exec(sid, "pwd", cwd="/tmp")
        assert r["stdout"] == "/tmp\n", r
        api.exec(sid, "mkdir -p /testbed/sub")
        r = api.exec(sid, "pwd", cwd="sub")
        assert r["stdout"] == "/testbed/sub\n", r
        r = api.exec(sid, "pwd")
        assert r["stdout"] == "/testbed\n", r
        r = api.exec(sid, "pwd", cwd="/does/not/exist")
        assert r["return_code"] != 0 and "does/not/exist" in r["stderr"], r

        # env: the spec's for every exec, the request's wins, for this exec only
        r = api.exec(sid, "echo $BASE $OVER $ONLY", env={"OVER": "request", "ONLY": "x y"})
        assert r["stdout"] == "from-spec request x y\n", r
        r = api.exec(sid, "echo $BASE $OVER ${ONLY:-unset}")
        assert r["stdout"] == "from-spec spec unset\n", r
        weird = "a'b\"c$d`e`\\f\n; rm -rf /"
        r = api.exec(sid, "printf '%s' \"$W\"", env={"W": weird})
        assert r["stdout"] == weird, r

        # an exec is a subshell: cd and export do not leak into the next one
        api.exec(sid, "cd /etc; export LEAK=1")
        r = api.exec(sid, "pwd; echo ${LEAK:-none}")
        assert r["stdout"] == "/testbed\nnone\n", r

        # a plain command (words only) runs in the shell itself, without a
        # subshell: the same cwd, env, exit code and isolation. $OLDPWD in a
        # subshell exec is the persistent shell's own cwd: it must not move
        home = api.exec(sid, "echo $OLDPWD")["stdout"]
        r = api.exec(sid, "printenv ONLY OVER", env={"ONLY": "x y"}, cwd="/tmp")
        assert r["stdout"] == "x y\nspec\n" and r["return_code"] == 0, r
        r = api.exec(sid, "printenv ONLY")
        assert r["stdout"] == "" and r["return_code"] == 1, r
        r = api.exec(sid, "ls /nope-plain")
        assert r["return_code"] == 2 and "nope-plain" in r["stderr"], r
        r = api.exec(sid, "pwd", cwd="/etc")
        assert r["stdout"] == "/etc\n", r
        r = api.exec(sid, "uname")  # hashed only in a subshell, never in the shell
        assert r["return_code"] == 0, r
        r = api.exec(sid, "hash; echo $OLDPWD")
        assert "uname" not in r["stdout"] and r["stdout"].endswith(home), (r, home)
        r = api.exec(sid, "sleep 20", cwd="/tmp", timeout_s=1)
        assert r["error_type"] == "timeout", r
        r = api.exec(sid, "echo $OLDPWD; echo ${__lb_d:-clean}")
        assert r["stdout"] == home + "clean\n", (r, home)

        # a command with quotes, comments and parentheses is run as written
        r = api.exec(sid, "echo 'a)'; echo b # a comment with a ) and a '")
        assert r["stdout"] == "a)\nb\n" and r["return_code"] == 0, r
        r = api.exec(sid, "x=1\nif [ $x = 1 ]; then echo multi; fi # trailing")
        assert r["stdout"] == "multi\n", r

        # timeout: reported as such, quickly, and the sandbox goes on
        t0 = time.time()
        r = api.exec(sid, "echo before; sleep 20; echo after", timeout_s=1)
        took = time.time() - t0
        assert r["error_type"] == "timeout" and r["return_code"] is None, r
        assert "before" in r["stdout"] and "after" not in r["stdout"], r
        assert took < 5, took
        r = api.exec(sid, "echo alive")
        assert r["stdout"] == "alive\n", r

        # bad requests
        for body, code in [({}, 400), ({"command": ""}, 400), ({"command": "x", "timeout_s": 0}, 400),
                           ({"command": "x", "timeout_s": 10 ** 9}, 400), ({"command": "x", "env": {"1A": "x"}}, 400),
                           ({"command": "x", "env": {"A": 1}}, 400), ({"command": "x", "cwd": "/a/../b"}, 400),
                           ({"command": "x", "bogus": 1}, 400), ({"command": 5}, 400)]:
            st, o = api.json("POST", "/api/sandboxes/%s/exec" % sid, body)
            assert st == code and o["error"]["code"] == "bad_request", (body, st, o)
        st, hd, data = api.call("POST", "/api/sandboxes/%s/exec" % sid, b"{not json")
        assert st == 400, st
    finally:
        api.delete(sid)


def t_parallel_execs(stack):
    """Execs on different sandboxes run at the same time."""
    api = Api(stack)
    ids = [api.create({"ttl_s": 300})["id"] for _ in range(2)]
    results = []

    def run(sid):
        results.append(api.exec(sid, "sleep 2; echo done"))
    t0 = time.time()
    ts = [threading.Thread(target=run, args=(sid,)) for sid in ids]
    [t.start() for t in ts]
    [t.join() for t in ts]
    took = time.time() - t0
    for sid in ids:
        api.delete(sid)
    assert [r["stdout"] for r in results] == ["done\n", "done\n"], results
    assert took < 3.5, "two 2 s execs on two sandboxes took %.1f s (one after the other?)" % took


# ---- files ----------------------------------------------------------------------

def t_files(stack):
    api = Api(stack)
    sid = api.create({"ttl_s": 300})["id"]
    try:
        data = os.urandom(300000) + bytes(range(256)) + b"\x00\r\n"
        st, hd, body = api.call("PUT", "/api/sandboxes/%s/files/tmp/up/d%%C3%%A9j%%C3%%A0.bin" % sid, data,
                                headers={"Content-Type": "application/octet-stream"})
        o = json.loads(body)
        assert st == 200 and o["path"] == "/tmp/up/d\u00e9j\u00e0.bin" and o["size"] == len(data), (st, o)
        r = api.exec(sid, "sha256sum '/tmp/up/d\u00e9j\u00e0.bin' | cut -d' ' -f1")
        assert r["stdout"].strip() == hashlib.sha256(data).hexdigest(), r
        st, hd, back = api.call("GET", "/api/sandboxes/%s/files/tmp/up/d%%C3%%A9j%%C3%%A0.bin" % sid)
        assert st == 200 and back == data, (st, len(back))
        assert hd["content-type"] == "application/octet-stream", hd
        assert hd["x-content-type-options"] == "nosniff", hd
        assert hd["content-disposition"].startswith("attachment;") and "d%C3%A9j%C3%A0.bin" in hd["content-disposition"], hd
        # a file the command made
        api.exec(sid, "printf 'made here' > /testbed/made.txt")
        st, _, back = api.call("GET", "/api/sandboxes/%s/files/testbed/made.txt" % sid)
        assert st == 200 and back == b"made here", (st, back)
        # empty file, overwrite
        st, _, _ = api.call("PUT", "/api/sandboxes/%s/files/testbed/made.txt" % sid, b"")
        assert st == 200
        st, _, back = api.call("GET", "/api/sandboxes/%s/files/testbed/made.txt" % sid)
        assert st == 200 and back == b"", back
        # missing file, directory
        st, o = api.json("GET", "/api/sandboxes/%s/files/testbed/nope.txt" % sid)
        assert st == 404 and o["error"]["code"] == "not_found", (st, o)
        st, o = api.json("GET", "/api/sandboxes/%s/files/testbed" % sid)
        assert st == 400, (st, o)
        # HEAD: headers without the body
        st, hd, back = api.call("HEAD", "/api/sandboxes/%s/files/tmp/up/d%%C3%%A9j%%C3%%A0.bin" % sid)
        assert st == 200 and back == b"" and int(hd["content-length"]) == len(data), (st, hd)
    finally:
        api.delete(sid)


def t_stat_list(stack):
    """E2B's protocol: GET .../stat/{path} and .../list/{path}: sandboxd's metadata
    (type, size, mode, uid, gid, mtime, a symlink's target, never followed)."""
    api = Api(stack)
    sid = api.create({"ttl_s": 300})["id"]
    try:
        r = api.exec(sid, "mkdir -p /tmp/st/d && cd /tmp/st && printf abcde > f && chown 7:8 f && chmod 640 f && "
                          "touch -d @1600000000 f && ln -s /etc/shadow l && echo x > d/in")
        assert r["return_code"] == 0, r
        st, o = api.json("GET", "/api/sandboxes/%s/stat/tmp/st/f" % sid)
        assert st == 200 and o == {"path": "/tmp/st/f", "type": "file", "size": 5, "mode": 0o640, "uid": 7, "gid": 8,
                                   "mtime": "2020-09-13T12:26:40Z"}, (st, o)
        st, o = api.json("GET", "/api/sandboxes/%s/stat/tmp/st/l" % sid)
        assert st == 200 and (o["type"], o["target"]) == ("symlink", "/etc/shadow"), (st, o)
        st, o = api.json("GET", "/api/sandboxes/%s/stat/tmp/st/none" % sid)
        assert st == 404 and o["error"]["code"] == "not_found", (st, o)
        st, o = api.json("GET", "/api/sandboxes/%s/stat/tmp/st/l/x" % sid)   # through the symlink: not followed
        assert st == 400 and "not followed" in o["error"]["message"], (st, o)
        st, o = api.json("GET", "/api/sandboxes/%s/list/tmp/st?depth=2" % sid)
        assert st == 200 and o["path"] == "/tmp/st" and o["truncated"] is False, (st, o)
        by = {e["path"]: e for e in o["entries"]}
        assert sorted(by) == ["d", "d/in", "f", "l"], by
        assert (by["d"]["type"], by["d"]["mode"], by["d/in"]["size"], by["l"]["target"]) == \
            ("dir", 0o755, 2, "/etc/shadow"), by
        st, o = api.json("GET", "/api/sandboxes/%s/list/tmp/st?depth=99" % sid)
        assert st == 400 and "depth" in o["error"]["message"], (st, o)
        st, o = api.json("GET", "/api/sandboxes/%s/list/tmp/st/f" % sid)
        assert st == 400, (st, o)   # not a directory
        st, o = api.json("GET", "/api/sandboxes/%s/list/tmp/nope" % sid)
        assert st == 404, (st, o)
        st, o = api.json("GET", "/api/sandboxes/%s/stat/tmp/st/f" % sid, token="wrong")
        assert st == 401, (st, o)
    finally:
        api.delete(sid)


def raw_request(stack, method, raw_path, body=None):
    """Sends the path byte for byte (http.client would keep it too, but be explicit)."""
    c = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=30)
    c.putrequest(method, raw_path, skip_accept_encoding=True)
    c.putheader("Authorization", "Bearer " + TOKEN)
    c.putheader("Content-Length", str(len(body or b"")))
    c.endheaders(body or b"")
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def t_traversal(stack):
    api = Api(stack)
    sid = api.create({"ttl_s": 300})["id"]
    try:
        base = "/api/sandboxes/%s/files/" % sid
        bad = ["../../etc/passwd", "%2e%2e/%2e%2e/etc/passwd", "tmp/%2E%2E/%2e%2e/etc/shadow",
               "tmp%2F..%2F..%2Fetc%2Fpasswd", "tmp/..%2fetc/passwd", "etc/passwd%00.txt", "tmp/a%5c..%5cb",
               "tmp/%0a", "tmp/" + "a" * 300, "%ff%fe"]
        for p in bad:
            st, data = raw_request(stack, "GET", base + p)
            assert 400 <= st < 500, (p, st, data[:200])
            assert b"root:" not in data, p
            st, data = raw_request(stack, "PUT", base + p, b"owned")
            assert 400 <= st < 500, (p, st, data[:200])
        # symlinks are never followed, in a read or in a write
        api.exec(sid, "ln -s /etc/passwd /tmp/link; ln -s /etc /tmp/etcdir; ln -s / /tmp/root")
        for p in ("tmp/link", "tmp/etcdir/passwd", "tmp/root/etc/passwd"):
            st, data = raw_request(stack, "GET", base + p)
            assert 400 <= st < 500 and b"root:" not in data, (p, st, data[:200])
        st, data = raw_request(stack, "PUT", base + "tmp/etcdir/llmbox-evil", b"x")
        assert 400 <= st < 500, (st, data)
        r = api.exec(sid, "test -e /etc/llmbox-evil && echo present || echo absent")
        assert r["stdout"] == "absent\n", r
        # writing where a symlink is replaces the link, never the target
        st, data = raw_request(stack, "PUT", base + "tmp/link", b"replaced")
        if st == 200:
            r = api.exec(sid, "head -c 5 /etc/passwd; echo; test -L /tmp/link && echo link || echo file")
            assert r["stdout"].startswith("root:") and r["stdout"].endswith("file\n"), r
        # the spec's files and the exec's cwd are checked too
        for spec in ({"files": [{"path": "../etc/x", "content": "x"}]},
                     {"files": [{"path": "/a/../../b", "content": "x"}]},
                     {"workdir": "/a/../.."}, {"workdir": "relative"}):
            st, o = api.json("POST", "/api/sandboxes", spec)
            assert st == 400, (spec, st, o)
    finally:
        api.delete(sid)


# ---- status, list, destroy, TTL, limits -------------------------------------------

def t_status_list(stack):
    api = Api(stack)
    a = api.create({"ttl_s": 300, "metadata": {"name": "a"}})["id"]
    b = api.create({"ttl_s": 300, "metadata": {"name": "b"}})["id"]
    try:
        st, o = api.json("GET", "/api/sandboxes/" + a)
        assert st == 200 and o["id"] == a and o["status"] == "running" and o["metadata"] == {"name": "a"}, o
        assert o["spec"]["image"] == "default" and o["spec"]["workdir"] == "/testbed", o
        st, hd, data = api.call("HEAD", "/api/sandboxes/" + a)
        assert st == 200 and data == b"", st
        st, o = api.json("GET", "/api/sandboxes")
        assert st == 200, o
        mine = {s["id"]: s for s in o["sandboxes"]}
        assert a in mine and b in mine and mine[b]["metadata"] == {"name": "b"}, o
        assert mine[a]["status"] == "running" and "spec" not in mine[a], mine[a]
        assert o["count"] == len(o["sandboxes"]) and o["max"] == API_MAX, o
        st, h = stack.get_json("/api/health")
        assert h["sandbox_api"] == {"enabled": True, "sandboxes": o["count"], "max": API_MAX}, h
        # ids: malformed and unknown
        for bad in ("xyz", "0" * 31, "A" * 32, "0" * 33):
            st, o = api.json("GET", "/api/sandboxes/" + bad)
            assert st == 404 and o["error"]["code"] == "not_found", (bad, st, o)
        st, o = api.json("GET", "/api/sandboxes/" + "0" * 32)
        assert st == 404 and "no sandbox" in o["error"]["message"], o
        st, o = api.json("PATCH", "/api/sandboxes/" + a)
        assert st == 405, (st, o)
    finally:
        api.delete(a)
        api.delete(b)


def t_destroy(stack):
    api = Api(stack)
    before = sandboxd_ping(stack)["sandboxes"]
    sid = api.create({"ttl_s": 300})["id"]
    assert sandboxd_ping(stack)["sandboxes"] == before + 1
    api.delete(sid)
    assert sandboxd_ping(stack)["sandboxes"] == before, "sandboxd still holds the deleted sandbox"
    api.delete(sid)  # idempotent
    api.delete("f" * 32)  # never existed: still gone
    st, o = api.json("GET", "/api/sandboxes/" + sid)
    assert st == 404 and "deleted" in o["error"]["message"], o
    st, o = api.json("POST", "/api/sandboxes/%s/exec" % sid, {"command": "true"})
    assert st == 404, (st, o)
    st, _, _ = api.call("GET", "/api/sandboxes/%s/files/etc/hostname" % sid)
    assert st == 404


def t_delete_during_exec(stack):
    api = Api(stack)
    before = sandboxd_ping(stack)["sandboxes"]
    sid = api.create({"ttl_s": 300})["id"]
    out = {}

    def run():
        out["r"] = api.json("POST", "/api/sandboxes/%s/exec" % sid, {"command": "sleep 60", "timeout_s": 120})
    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.7)
    t0 = time.time()
    api.delete(sid)
    took = time.time() - t0
    t.join(30)
    assert not t.is_alive(), "the exec did not return after the delete"
    assert took < 5, "delete waited %.1f s for the running command" % took
    st, o = out["r"]
    assert st == 200 and o["error_type"] == "interrupted" and o["return_code"] is None, (st, o)
    assert "deleted" in o["message"], o
    assert sandboxd_ping(stack)["sandboxes"] == before, "sandboxd still holds the deleted sandbox"


def t_ttl(stack):
    api = Api(stack)
    before = sandboxd_ping(stack)["sandboxes"]
    o = api.create({"ttl_s": 2})
    sid = o["id"]
    assert o["spec"]["ttl_s"] == 2, o
    assert api.exec(sid, "echo ok")["stdout"] == "ok\n"
    time.sleep(2.6)
    st, o = api.json("GET", "/api/sandboxes/" + sid)
    assert st == 404 and "expired" in o["error"]["message"], (st, o)
    st, o = api.json("POST", "/api/sandboxes/%s/exec" % sid, {"command": "true"})
    assert st == 404 and "expired" in o["error"]["message"], (st, o)
    st, o = api.json("GET", "/api/sandboxes")
    assert sid not in [s["id"] for s in o["sandboxes"]], o
    assert wait_sandboxd_count(stack, before) == before, "sandboxd still holds the expired sandbox"
    # ttl_s is bounded and checked
    for bad in (0, -1, 1.5, "10", 10 ** 7):
        st, o = api.json("POST", "/api/sandboxes", {"ttl_s": bad})
        assert st == 400 and "ttl_s" in o["error"]["message"], (bad, st, o)


def t_spec_errors(stack):
    api = Api(stack)
    for spec, code in [([], 400), ({"ttl": 5}, 400), ({"image": "../x"}, 400), ({"image": "nosuchimage"}, 400),
                       ({"env": {"A-B": "x"}}, 400), ({"env": ["A"]}, 400), ({"network": "host"}, 400),
                       ({"resources": {"cpu": 0}}, 400), ({"resources": {"memory_mib": 1}}, 400),
                       ({"resources": {"gpus": 1}}, 400), ({"metadata": "x"}, 400),
                       ({"metadata": {"k": "v" * 5000}}, 413),
                       ({"files": [{"path": "/a", "content": "x", "content_base64": "eA=="}]}, 400),
                       ({"files": [{"path": "/a", "content_base64": "not base64!"}]}, 400),
                       ({"files": [{"path": "/a", "content": "x", "mode": "9999"}]}, 400),
                       ({"files": [{"content": "x"}]}, 400), ({"workdir": "/etc/hostname"}, 400)]:
        st, o = api.json("POST", "/api/sandboxes", spec)
        assert st == code and o["error"]["message"], (spec, st, o)
    st, _, _ = api.call("POST", "/api/sandboxes", b"")
    assert st == 400
    st, o = api.json("GET", "/api/sandboxes")
    assert o["count"] == 0, "a refused create left a sandbox: %s" % o


def t_cap(stack):
    api = Api(stack)
    ids = [api.create({"ttl_s": 120})["id"] for _ in range(API_MAX)]
    try:
        st, o = api.json("POST", "/api/sandboxes", {"ttl_s": 120})
        assert st == 429 and o["error"]["code"] == "too_many_sandboxes", (st, o)
        assert "LLMBOX_SANDBOX_API_MAX" in o["error"]["message"], o
    finally:
        for sid in ids:
            api.delete(sid)
    api.delete(api.create({"ttl_s": 60})["id"])  # room again


def t_token_not_leaked(stack):
    api = Api(stack)
    sid = api.create({"ttl_s": 60})["id"]
    r = api.exec(sid, "cat /proc/1/environ /proc/self/environ 2>/dev/null | tr '\\0' '\\n'; env; "
                      "cat /proc/1/cmdline")
    api.delete(sid)
    assert r["return_code"] == 0 and "PATH=" in r["stdout"], r
    assert TOKEN not in r["stdout"], "the token is visible inside a sandbox"
    logs = stack.logs()
    assert TOKEN not in logs, "the token shows in a log"
    for root, _, files in os.walk(os.path.join(stack.prefix, "var", "log")):
        for n in files:
            with open(os.path.join(root, n), "rb") as f:
                assert TOKEN.encode() not in f.read(), n


class RawConn:
    """One kept-alive HTTP/1.1 connection to nginx, read byte for byte: the
    answer's head as sent, its body by Content-Length only."""

    def __init__(self, stack):
        self.s = socket.create_connection(("127.0.0.1", stack.port), timeout=30)
        self.port = stack.port
        self.buf = b""

    def _fill(self):
        d = self.s.recv(65536)
        assert d, "nginx closed the kept-alive connection"
        self.buf += d

    def ask(self, method, path, body=None, token=TOKEN):
        data = json.dumps(body).encode() if body is not None else b""
        head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\n" % (method, path, self.port, len(data))
        if token:
            head += "Authorization: Bearer %s\r\n" % token
        if body is not None:
            head += "Content-Type: application/json\r\n"
        self.s.sendall((head + "\r\n").encode() + data)
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        i = self.buf.index(b"\r\n\r\n")
        lines = self.buf[:i].decode("latin-1").split("\r\n")
        self.buf = self.buf[i + 4:]
        hdrs = {}
        for h in lines[1:]:
            k, _, v = h.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        status = int(lines[0].split()[1])
        assert "transfer-encoding" not in hdrs, (method, path, lines)
        assert "content-length" in hdrs, (method, path, lines)
        n = int(hdrs["content-length"])
        if method == "HEAD":
            return status, hdrs, n
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return status, hdrs, out

    def close(self):
        self.s.close()


def t_answers_have_length(stack):
    """Every JSON answer says its length (Content-Length, no chunks), so a
    client reads exactly the body and the next answer on the same
    kept-alive connection starts where it should; a HEAD names the GET's
    length; the access line of an exec (written after the answer is out)
    still names the client and nginx's request id."""
    c = RawConn(stack)
    sid = None
    try:
        st, _, b = c.ask("POST", "/api/sandboxes", {})
        assert st == 201, (st, b)
        sid = json.loads(b)["id"]
        st, hd, b = c.ask("POST", "/api/sandboxes/%s/exec" % sid, {"command": "printf '%s' caf\u00e9; echo"})
        assert st == 200 and json.loads(b)["stdout"] == "caf\u00e9\n", (st, b)
        rid = hd.get("x-request-id")
        st, _, b = c.ask("GET", "/api/sandboxes/%s" % sid)
        assert st == 200 and json.loads(b)["id"] == sid, (st, b)
        st, _, n = c.ask("HEAD", "/api/sandboxes/%s" % sid)
        assert st == 200 and n == len(b), (st, n, len(b))
        st, _, b = c.ask("GET", "/api/sandboxes/" + "0" * 32)  # an error answer: JSON too
        assert st == 404 and json.loads(b)["error"], (st, b)
        st, _, b = c.ask("GET", "/api/sandboxes", token="not-the-token")
        assert st == 401 and json.loads(b)["error"], (st, b)
        st, _, b = c.ask("DELETE", "/api/sandboxes/" + sid)
        assert st == 200 and json.loads(b)["deleted"] is True, (st, b)
        sid = None
    finally:
        c.close()
        if sid:
            Api(stack).call("DELETE", "/api/sandboxes/" + sid)
    assert rid, "nginx sent no X-Request-Id"
    log = os.path.join(stack.prefix, "var", "log", "web.log")
    end = time.time() + 10
    got = []
    while not got and time.time() < end:
        got = [json.loads(x) for x in open(log, errors="replace") if rid in x]
        time.sleep(0.05)
    assert len(got) == 1, got
    g = got[0]
    assert g.get("msg") == "request" and g.get("status") == 200 and g.get("route") == "sandboxes", g
    assert g.get("client") == "127.0.0.1" and g.get("method") == "POST", g


def main():
    r = Reporter()
    if not image_ready():
        print("SKIP sandbox_api: the sandbox image is not built (make image)")
        return
    if os.geteuid() != 0:
        print("SKIP sandbox_api: sandboxd needs root")
        return
    with Stack(model=False) as off:
        r.run("api_off_403", t_off_403, off)
    env = {"LLMBOX_SANDBOX_API_TOKEN": TOKEN, "LLMBOX_SANDBOX_API_MAX": str(API_MAX)}
    with Stack(model=False, web_env=env) as st:
        for name, fn in [("auth_401", t_auth_401), ("create_spec", t_create_spec), ("exec", t_exec),
                         ("parallel_execs", t_parallel_execs), ("files_roundtrip", t_files),
                         ("stat_list_metadata", t_stat_list),
                         ("traversal_refused", t_traversal), ("status_list", t_status_list),
                         ("destroy_idempotent", t_destroy), ("delete_during_exec", t_delete_during_exec),
                         ("ttl_expiry", t_ttl), ("spec_errors", t_spec_errors), ("cap_429", t_cap),
                         ("token_not_leaked", t_token_not_leaked), ("answers_have_length", t_answers_have_length)]:
            r.run(name, fn, st)
        n = wait_sandboxd_count(st, 0)
        if n:
            r.run("no_leftovers", lambda: (_ for _ in ()).throw(AssertionError("%d sandboxes left" % n)))
        else:
            r.run("no_leftovers", lambda: None)
    r.done()


if __name__ == "__main__":
    main()
