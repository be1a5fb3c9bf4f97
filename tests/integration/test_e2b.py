#!/usr/bin/env python3
"""E2B's protocol (/e2b/): E2B's own SDK from npm (e2b, pinned in
tests/e2b/package.json, installed on first use) runs the scripts in
tests/e2b/ unchanged against the real stack, and raw HTTP plays the clients
the SDK never is: missing keys, another sandbox's access token, broken
Connect envelopes, a client that never reads its stream. Needs root
(sandboxd), the built image and node; Python stdlib only.
"""
import base64
import gzip
import hashlib
import http.client
import json
import os
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import Reporter, Stack, image_ready  # noqa: E402

TOKEN = "e2b-test-" + os.urandom(16).hex()
# users with their own API tokens (llmbox.conf's [user] sections): each
# token is an E2B_API_KEY and a sandbox API bearer token of its own
USERS = {name: "%s-%s" % (name, os.urandom(16).hex()) for name in ("alice", "bob", "carol", "dave", "erin")}
USERS_CONF = "".join('[user "%s"]\ntoken_sha256 = %s\n%s' % (
    n, hashlib.sha256(t.encode()).hexdigest(), "max_sandboxes = 1\nsandboxes_per_minute = 2\n" if n in ("carol", "dave")
    else "max_sandboxes = 2\n" if n == "erin" else "")  # erin: sdk_fork.mjs's forks counted
    for n, t in USERS.items())
# E2B's volumes (sdk_volumes.mjs): small caps, so the test reaches them
VOLUME_CONF = "volume_max_per_owner = 3\nvolume_max_mb_per_owner = 2\n"
E2B_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2b")


def sdk_env(stack, key=TOKEN):
    env = dict(os.environ)
    env.update({"E2B_API_URL": "http://127.0.0.1:%d/e2b" % stack.port,
                "E2B_SANDBOX_URL": "http://127.0.0.1:%d/e2b/sandbox" % stack.port,
                "E2B_VOLUME_API_URL": "http://127.0.0.1:%d/e2b" % stack.port,
                "E2B_API_KEY": key})
    return env


def run_script(stack, name, timeout=600, args=(), more_env=None):
    """Runs tests/e2b/<name> with node; returns (rc, stdout, stderr)."""
    env = sdk_env(stack)
    env.update({"E2B_KEY_" + n.upper(): t for n, t in USERS.items()})
    env.update(more_env or {})
    p = subprocess.run(["node", name] + list(args), cwd=E2B_DIR, env=env, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def api(stack, method, path, body=None, headers=None, key=TOKEN, timeout=30):
    h = {"X-API-KEY": key} if key else {}
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    h.update(headers or {})
    return stack.request(method, path, body, h, timeout=timeout)


def create(stack, **body):
    st, _, data = api(stack, "POST", "/e2b/v2/sandboxes", body)
    assert st == 201, (st, data)
    return json.loads(data)


def envd(stack, sbx, method, body, token=None, streaming=False, timeout=30):
    """One envd RPC; streaming: body is enveloped, answer split in envelopes."""
    raw = json.dumps(body).encode()
    h = {"E2b-Sandbox-Id": sbx["sandboxID"], "X-Access-Token": token or sbx["envdAccessToken"]}
    if streaming:
        raw = struct.pack(">BI", 0, len(raw)) + raw
        h["Content-Type"] = "application/connect+json"
    else:
        h["Content-Type"] = "application/json"
    st, hd, data = stack.request("POST", "/e2b/sandbox/" + method, raw, h, timeout=timeout)
    return st, hd, (envelopes(data) if streaming and st == 200 else data)


def envelopes(data):
    out, i = [], 0
    while i + 5 <= len(data):
        flags, n = struct.unpack(">BI", data[i:i + 5])
        out.append((flags, json.loads(data[i + 5:i + 5 + n])))
        i += 5 + n
    assert i == len(data), "trailing bytes after the envelopes"
    return out


def raw_start(stack, sbx, payload, ctype="application/connect+json"):
    h = {"E2b-Sandbox-Id": sbx["sandboxID"], "X-Access-Token": sbx["envdAccessToken"], "Content-Type": ctype}
    st, _, data = stack.request("POST", "/e2b/sandbox/process.Process/Start", payload, h)
    return st, data


# ---- the SDK's own scripts ----

def sdk_checks(stack, script, args=None, more_env=None):
    """Runs an SDK script (tests/e2b) and asserts it printed checks and none
    failed; its output, for the lines a later step reads."""
    rc, out, err = run_script(stack, script, args=args or [], more_env=more_env)
    lines = [l for l in out.splitlines() if l.startswith(("PASS ", "FAIL "))]
    for l in lines:
        print("   " + l, file=sys.stderr)
    fails = [l for l in lines if l.startswith("FAIL ")]
    assert rc == 0 and lines and not fails, "%s: rc %d\n%s\n%s" % (script, rc, "\n".join(fails or lines), err[-2000:])
    return out


def t_sdk(stack, script):
    sdk_checks(stack, script)


def t_sdk_volumes(stack):
    """E2B's volumes with the SDK (sdk_volumes.mjs), then a restart of the
    web and sandboxd, then the same volume again: its record and content
    are kept, and it mounts."""
    out = sdk_checks(stack, "sdk_volumes.mjs")
    vid = [l.split("=", 1)[1] for l in out.splitlines() if l.startswith("PERSIST_VOLUME=")]
    assert len(vid) == 1, out
    stack.kill("web")
    stack.kill("sandboxd")
    stack.restart("sandboxd", wait=False)
    stack.restart("web")
    sdk_checks(stack, "sdk_volumes.mjs", ["after"], {"PERSIST_VOLUME": vid[0]})


def t_sdk_restart_flags(stack):
    """E2B's allowPublicTraffic, maskRequestHost and autoPause of a sandbox
    kept across a kill -9 and start of the web (sdk_restart_flags.mjs)."""
    out = sdk_checks(stack, "sdk_restart_flags.mjs")
    kid = [l.split("=", 1)[1] for l in out.splitlines() if l.startswith("KEEP_ID=")]
    assert len(kid) == 1, out
    stack.kill("web")
    stack.restart("web")
    sdk_checks(stack, "sdk_restart_flags.mjs", ["after"], {"KEEP_ID": kid[0]})


def t_readme_example(stack):
    rc, out, err = run_script(stack, "readme_example.mjs", timeout=60)
    assert rc == 0 and out == "Hello from E2B!\n\n", (rc, out, err[-1000:])


# ---- raw HTTP: what the SDK never sends ----

def t_keys(stack):
    for key, want in ((None, "E2B_API_KEY"), ("wrong", "neither this server's")):
        st, _, data = api(stack, "GET", "/e2b/v2/sandboxes", key=key)
        o = json.loads(data)
        assert st == 401 and o["code"] == 401 and want in o["message"], (st, o)
    # envd: no token, and another sandbox's token
    a, b = create(stack), create(stack)
    try:
        st, _, data = envd(stack, a, "process.Process/List", {}, token="0" * 64)
        assert st == 401 and json.loads(data)["code"] == "unauthenticated", (st, data)
        st, _, data = envd(stack, a, "process.Process/List", {}, token=b["envdAccessToken"])
        assert st == 401, ("another sandbox's token opens nothing", st, data)
        st, _, data = envd(stack, a, "process.Process/List", {})
        assert st == 200 and json.loads(data) == {"processes": []}, (st, data)
        # an id that is no sandbox: E2B's "sandbox is gone" answer
        st, _, data = envd(stack, dict(a, sandboxID="f" * 32), "process.Process/List", {})
        assert st == 502, (st, data)
    finally:
        for s in (a, b):
            api(stack, "DELETE", "/e2b/sandboxes/" + s["sandboxID"])


def t_metrics_many(stack):
    """E2B's GET /sandboxes/metrics?sandbox_ids=a,b: {"sandboxes": {id: the
    newest SandboxMetric}} of the listed running sandboxes the key sees (a
    user's key: its own; another's, an unknown or a killed one left out);
    more than 100 ids, a malformed id or none: 400 with E2B's words."""
    fields = {"timestamp", "timestampUnix", "cpuCount", "cpuUsedPct", "memUsed", "memTotal", "memCache", "diskUsed",
              "diskTotal"}
    a, b = create(stack), create(stack)
    st, _, data = api(stack, "POST", "/e2b/v2/sandboxes", {}, key=USERS["alice"])
    assert st == 201, (st, data)
    c = json.loads(data)
    ids = [x["sandboxID"] for x in (a, b, c)]
    unknown = "0" * 32

    def many(id_list, key=TOKEN):
        st, _, data = api(stack, "GET", "/e2b/sandboxes/metrics?sandbox_ids=" + ",".join(id_list), key=key)
        return st, json.loads(data) if data else None
    try:
        st, o = many(ids + [unknown, ids[0]])
        assert st == 200 and sorted(o["sandboxes"]) == sorted(ids), (st, o)
        for sid, m in o["sandboxes"].items():
            assert set(m) == fields and m["cpuCount"] >= 1 and m["memTotal"] > 0 and m["diskTotal"] > 0, (sid, m)
            assert isinstance(m["timestampUnix"], int) and abs(m["timestampUnix"] - time.time()) < 900, (sid, m)
        st, o = many(ids, key=USERS["alice"])
        assert st == 200 and list(o["sandboxes"]) == [c["sandboxID"]], ("a user's key: its own only", st, o)
        st, o = many(ids, key=USERS["bob"])
        assert st == 200 and o == {"sandboxes": {}}, ("another user's are as absent", st, o)
        api(stack, "DELETE", "/e2b/sandboxes/" + b["sandboxID"])
        st, o = many(ids)
        assert st == 200 and sorted(o["sandboxes"]) == sorted([ids[0], ids[2]]), ("a killed one left out", st, o)
        hundred = ["%032x" % i for i in range(1, 101)]
        st, o = many(hundred)
        assert st == 200 and o == {"sandboxes": {}}, (st, o)
        for bad, want in [(hundred + [ids[0]], "maximum is 100"), (["x"], "Invalid sandbox ID"),
                          ([ids[0], ""], "Invalid sandbox ID"), ([], "required")]:
            st, o = many(bad)
            assert st == 400 and want in o["message"], (bad[-1:], st, o)
        st, _, data = api(stack, "GET", "/e2b/sandboxes/metrics")
        assert st == 400 and "required" in json.loads(data)["message"], (st, data)
        st, _, data = api(stack, "POST", "/e2b/sandboxes/metrics?sandbox_ids=" + ids[0], {})
        assert st == 405, (st, data)
        st, _, data = api(stack, "GET", "/e2b/sandboxes/metrics?sandbox_ids=" + ids[0], key="wrong")
        assert st == 401, (st, data)
    finally:
        for x in (a, b):
            api(stack, "DELETE", "/e2b/sandboxes/" + x["sandboxID"])
        api(stack, "DELETE", "/e2b/sandboxes/" + c["sandboxID"], key=USERS["alice"])


def t_users_raw(stack):
    """The sandbox API with users' bearer tokens: each reaches its own; another
    user's id answers exactly what an unknown id answers; E2B's 429 shape."""
    def sbx(method, path, token, body=None):
        h = {"Authorization": "Bearer " + token}
        if body is not None:
            body = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        st, hd, data = stack.request(method, path, body, h, timeout=60)
        return st, hd, json.loads(data) if data else None
    st, _, a = sbx("POST", "/api/sandboxes", USERS["alice"], {})
    assert st == 201, (st, a)
    try:
        exec_body = {"command": "echo hi"}
        st, _, o = sbx("POST", "/api/sandboxes/%s/exec" % a["id"], USERS["alice"], exec_body)
        assert st == 200 and o["stdout"] == "hi\n", (st, o)
        st, _, o = sbx("POST", "/api/sandboxes/%s/exec" % a["id"], TOKEN, exec_body)
        assert st == 200, ("the shared token reaches every sandbox", st, o)
        unknown = "0" * 32
        for path in ("/api/sandboxes/%s", "/api/sandboxes/%s/exec", "/api/sandboxes/%s/files/tmp/x",
                     "/api/sandboxes/%s/stat/tmp"):
            method = "POST" if path.endswith("exec") else "GET"
            st, _, o = sbx(method, path % a["id"], USERS["bob"], exec_body if method == "POST" else None)
            st2, _, o2 = sbx(method, path % unknown, USERS["bob"], exec_body if method == "POST" else None)
            assert st == 404 == st2, (path, st, o, st2, o2)
            assert o["error"]["message"].replace(a["id"], unknown) == o2["error"]["message"], (o, o2)
        st, _, o = sbx("DELETE", "/api/sandboxes/" + a["id"], USERS["bob"])
        assert st == 404, (st, o)
        st, _, o = sbx("GET", "/api/sandboxes", USERS["bob"])
        assert st == 200 and a["id"] not in [x["id"] for x in o["sandboxes"]], o
        st, _, o = sbx("GET", "/api/sandboxes", USERS["alice"])
        assert st == 200 and a["id"] in [x["id"] for x in o["sandboxes"]], o
        st, _, o = sbx("GET", "/api/sandboxes", TOKEN)
        assert st == 200 and a["id"] in [x["id"] for x in o["sandboxes"]], o
        st, _, o = sbx("GET", "/api/sandboxes", "not-a-token-of-anyone")
        assert st == 401, (st, o)
    finally:
        sbx("DELETE", "/api/sandboxes/" + a["id"], TOKEN)
    # dave may hold one at once: the second answers E2B's 429 shape
    one = json.loads(api(stack, "POST", "/e2b/v2/sandboxes", {}, key=USERS["dave"])[2])
    try:
        st, _, data = api(stack, "POST", "/e2b/v2/sandboxes", {}, key=USERS["dave"])
        o = json.loads(data)
        assert st == 429 and o["code"] == 429 and "max_sandboxes" in o["message"], (st, o)
    finally:
        api(stack, "DELETE", "/e2b/sandboxes/" + one["sandboxID"])
    # ... and creates two a minute: the third answers 429 with Retry-After
    st, _, data = api(stack, "POST", "/e2b/v2/sandboxes", {}, key=USERS["dave"])
    assert st == 201, (st, data)
    api(stack, "DELETE", "/e2b/sandboxes/" + json.loads(data)["sandboxID"])
    st, hd, data = api(stack, "POST", "/e2b/v2/sandboxes", {}, key=USERS["dave"])
    o = json.loads(data)
    assert st == 429 and o["code"] == 429 and "sandboxes_per_minute" in o["message"], (st, o)
    retry = int({k.lower(): v for k, v in hd.items()}.get("retry-after", "0"))
    assert 1 <= retry <= 60, hd


def t_envelopes(stack):
    s = create(stack)
    try:
        good = json.dumps({"process": {"cmd": "/bin/echo", "args": ["ok"]}}).encode()
        cases = [
            ("short", b"\x00\x00", "invalid_argument"),
            ("huge length", struct.pack(">BI", 0, 0xFFFFFFFF) + good, "resource_exhausted"),
            ("length past the body", struct.pack(">BI", 0, len(good) + 10) + good, "invalid_argument"),
            ("trailing bytes", struct.pack(">BI", 0, len(good)) + good + b"xx", "invalid_argument"),
            ("compressed", struct.pack(">BI", 1, len(good)) + good, "invalid_argument"),
            ("end flag", struct.pack(">BI", 2, len(good)) + good, "invalid_argument"),
            ("not json", struct.pack(">BI", 0, 3) + b"{{{", "invalid_argument"),
            ("json array", struct.pack(">BI", 0, 2) + b"[]", "invalid_argument"),
            ("no cmd", struct.pack(">BI", 0, 2) + b"{}", "invalid_argument"),
            ("over the cap", struct.pack(">BI", 0, 2 << 20) + b" " * (2 << 20), "resource_exhausted"),
        ]
        for name, payload, code in cases:
            st, data = raw_start(stack, s, payload)
            if st == 200:
                env = envelopes(data)
                assert env[-1][0] == 2 and env[-1][1]["error"]["code"] == code, (name, env)
                assert len(env) == 1, (name, "nothing ran", env)
            else:
                assert st == 413 and code == "resource_exhausted", (name, st, data)
        st, data = raw_start(stack, s, struct.pack(">BI", 0, len(good)) + good)
        env = envelopes(data)
        assert env[0][1]["event"]["start"]["pid"] > 0, env
        assert env[-1] == (2, {}), env
        assert any(e[1].get("event", {}).get("end", {}).get("exitCode") == 0 for e in env), env
    finally:
        api(stack, "DELETE", "/e2b/sandboxes/" + s["sandboxID"])


def t_never_reads(stack):
    """A client that starts a command with endless output and never reads:
    the web goes on serving others (the same sandbox too: the process
    waits on its full pipe, sandboxd reads no more than the stream takes),
    and once the client has left the process runs on, listed, until it is
    killed."""
    s, other = create(stack), create(stack)
    try:
        body = json.dumps({"process": {"cmd": "/bin/bash",
                                       "args": ["-c", "while :; do echo 0123456789abcdef; done"]}}).encode()
        body = struct.pack(">BI", 0, len(body)) + body
        c = socket.create_connection(("127.0.0.1", stack.port))
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.sendall(("POST /e2b/sandbox/process.Process/Start HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                   "E2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\nContent-Type: application/connect+json\r\n"
                   "Content-Length: %d\r\n\r\n" % (stack.port, s["sandboxID"], s["envdAccessToken"], len(body))
                   ).encode() + body)
        time.sleep(3)  # the stream fills every buffer on the way
        for x in (other, s):
            t0 = time.time()
            st, _, env = envd(stack, x, "process.Process/Start",
                              {"process": {"cmd": "/bin/echo", "args": ["alive"]}}, streaming=True)
            assert st == 200 and env[-1] == (2, {}) and time.time() - t0 < 5, ("served meanwhile", env)
        st, _, _ = stack.request("GET", "/api/health")
        assert st == 200
        c.close()
        st, _, data = envd(stack, s, "process.Process/List", {})
        procs = json.loads(data)["processes"]
        assert st == 200 and len(procs) == 1, ("it runs on after its client left", data)
        st, _, data = envd(stack, s, "process.Process/SendSignal",
                           {"process": {"pid": procs[0]["pid"]}, "signal": "SIGNAL_SIGKILL"})
        assert st == 200, data
        deadline = time.time() + 10
        while True:
            st, _, data = envd(stack, s, "process.Process/List", {})
            if json.loads(data)["processes"] == []:
                break
            assert time.time() < deadline, ("killed, it leaves the list", data)
            time.sleep(0.2)
    finally:
        for x in (s, other):
            api(stack, "DELETE", "/e2b/sandboxes/" + x["sandboxID"])


def t_e2b_domain_host_names(stack):
    """E2B_DOMAIN host names (nginx's rewrite, allowed_hosts, the router):
    49983-<id>.<e2b_domain> is that sandbox's envd on every path."""
    s = create(stack)
    sid = s["sandboxID"]
    host = "49983-%s.e2b.test" % sid
    tok = {"X-Access-Token": s["envdAccessToken"]}
    try:
        st, _, data = stack.request("GET", "/health", None, {"Host": host})
        assert st == 204, (st, data)
        h = dict(tok, Host=host + ":%d" % stack.port)
        h["Content-Type"] = "application/json"
        st, _, data = stack.request("POST", "/filesystem.Filesystem/Stat", json.dumps({"path": "/tmp"}).encode(), h)
        assert st == 200 and json.loads(data)["entry"]["type"] == "FILE_TYPE_DIRECTORY", (st, data)
        raw = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-c", "echo via-host"]}}).encode()
        h["Content-Type"] = "application/connect+json"
        st, _, data = stack.request("POST", "/process.Process/Start", struct.pack(">BI", 0, len(raw)) + raw, h)
        assert st == 200, (st, data)
        outs = [base64.b64decode(m["event"]["data"]["stdout"]) for _, m in envelopes(data)
                if "data" in m.get("event", {})]
        assert b"".join(outs) == b"via-host\n", data
        h["Content-Type"] = "application/json"
        h["X-Access-Token"] = "0" * 64
        st, _, data = stack.request("POST", "/filesystem.Filesystem/Stat", b'{"path": "/tmp"}', h)
        assert st == 401 and b"unauthenticated" in data, ("another token opens nothing", st, data)
        for bad in ("49983-%s.other.test" % sid, "e2b.test", "49983-%s.x.e2b.test.evil" % sid,
                    "49983-%s.e2b.test" % sid.upper()[:31]):
            for path in ("/health", "/e2b/sandbox/health"):
                st, _, data = stack.request("GET", path, None, {"Host": bad})
                # nginx serves a path it does not rewrite itself (a 404 page); the backend refuses the Host
                assert (st == 403 and b"host_not_allowed" in data) or (path == "/health" and st == 404), \
                    (bad, path, st, data)
    finally:
        api(stack, "DELETE", "/e2b/sandboxes/" + sid)


def t_unsupported_said(stack):
    s = create(stack)
    try:
        st, _, data = api(stack, "GET", "/e2b/sandboxes/%s/logs" % s["sandboxID"])
        assert st == 501 and "not supported" in json.loads(data)["message"], (st, data)
        st, _, data = api(stack, "POST", "/e2b/sandboxes/%s/resume" % s["sandboxID"], {})
        assert st == 404 and "/connect" in json.loads(data)["message"], (st, data)
        st, _, data = api(stack, "GET", "/e2b/templates")
        assert st == 501 and "not supported" in json.loads(data)["message"], (st, data)
        st, _, data = api(stack, "POST", "/e2b/v2/sandboxes", {"templateID": "no-such-image"})
        assert st == 400 and "llmbox image" in json.loads(data)["message"], (st, data)
        # a client-streaming call (the SDK's pty uses SendInput): said
        st, _, data = envd(stack, s, "process.Process/StreamInput", {})
        assert json.loads(data)["code"] == "unimplemented" and "SendInput" in json.loads(data)["message"], (st, data)
        # the polling watchers (the Python SDK's; the JS SDK streams WatchDir): said, not silent
        st, _, data = envd(stack, s, "filesystem.Filesystem/CreateWatcher", {"path": "/tmp"})
        assert json.loads(data)["code"] == "unimplemented" and "WatchDir" in json.loads(data)["message"], (st, data)
    finally:
        api(stack, "DELETE", "/e2b/sandboxes/" + s["sandboxID"])


def files_req(stack, sbx, method, query, body=None, headers=None):
    h = {"E2b-Sandbox-Id": sbx["sandboxID"], "X-Access-Token": sbx["envdAccessToken"]}
    h.update(headers or {})
    return stack.request(method, "/e2b/sandbox/files?" + query, body, h)


def t_gzip_raw(stack):
    """/files with Content-Encoding and Accept-Encoding as envd takes them;
    what the SDK never sends: damaged gzip, another coding, a bomb."""
    s = create(stack)
    try:
        data = b"llmbox gzip " * 5000
        oct_ = {"Content-Type": "application/octet-stream"}
        st, _, out = files_req(stack, s, "POST", "path=/tmp/g.bin", gzip.compress(data),
                               dict(oct_, **{"Content-Encoding": "gzip"}))
        assert st == 200, (st, out)
        st, hd, out = files_req(stack, s, "GET", "path=/tmp/g.bin")
        assert st == 200 and out == data and "content-encoding" not in hd, (st, hd, out[:40])
        st, hd, out = files_req(stack, s, "GET", "path=/tmp/g.bin", headers={"Accept-Encoding": "gzip"})
        assert st == 200 and hd.get("content-encoding") == "gzip" and gzip.decompress(out) == data, (st, hd)
        assert len(out) < len(data) // 10, "packed: %d bytes" % len(out)
        st, hd, out = files_req(stack, s, "GET", "path=/tmp/g.bin", headers={"Accept-Encoding": "gzip;q=0, br"})
        assert st == 200 and out == data and "content-encoding" not in hd, ("q=0 refuses gzip", st, hd)
        # multipart, gzipped whole (envd unpacks before it reads the parts)
        mp = (b"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"m.txt\"\r\n\r\nmulti\r\n--B--\r\n")
        st, _, out = files_req(stack, s, "POST", "path=/tmp/m.txt", gzip.compress(mp),
                               {"Content-Type": "multipart/form-data; boundary=B", "Content-Encoding": "gzip"})
        assert st == 200, (st, out)
        assert files_req(stack, s, "GET", "path=/tmp/m.txt")[2] == b"multi"
        # damaged, another coding, and more than a file may hold once unpacked
        for body, enc, want in ((b"\x1f\x8b\x08\x00garbage", "gzip", 400), (data, "gzip", 400),
                                (data, "br", 400),
                                (gzip.compress(b"\0" * (65 << 20)), "gzip", 413)):
            st, _, out = files_req(stack, s, "POST", "path=/tmp/bad.bin", body, dict(oct_, **{"Content-Encoding": enc}))
            assert st == want and json.loads(out)["message"], (enc, st, out)
        st, _, out = files_req(stack, s, "GET", "path=/tmp/bad.bin")
        assert st == 404, ("nothing was written by a refused upload", st)
    finally:
        api(stack, "DELETE", "/e2b/sandboxes/" + s["sandboxID"])


def t_signed_raw(stack):
    """Signed /files URLs: what a browser or curl sends with them."""
    s = create(stack)
    try:
        assert files_req(stack, s, "POST", "path=/tmp/s.txt", b"secret",
                         {"Content-Type": "application/octet-stream"})[0] == 200
        tok = s["envdAccessToken"]

        def sig(path, op, user="", exp=None):
            raw = "%s:%s:%s:%s" % (path, op, user, tok) + (":%d" % exp if exp is not None else "")
            import hashlib
            return "v1_" + base64.b64encode(hashlib.sha256(raw.encode()).digest()).decode().rstrip("=")

        from urllib.parse import quote
        q = "path=/tmp/s.txt&signature=" + quote(sig("/tmp/s.txt", "read"), safe="")
        st, _, out = stack.request("GET", "/files?" + q)
        assert st == 200 and out == b"secret", ("at the root, the signature names the sandbox", st, out)
        st, _, out = stack.request("GET", "/e2b/sandbox/files?" + q, headers={"E2b-Sandbox-Id": s["sandboxID"]})
        assert st == 200 and out == b"secret", (st, out)
        # a user in the URL is part of what is signed
        qu = "path=/tmp/s.txt&username=root&signature=" + quote(sig("/tmp/s.txt", "read", "root"), safe="")
        assert stack.request("GET", "/files?" + qu)[0] == 200
        assert stack.request("GET", "/files?" + qu.replace("username=root", "username=user"))[0] == 401
        for bad in ("path=/tmp/s.txt&signature=v1_AAAA", "path=/tmp/s.txt&signature=" + "x" * 200,
                    "path=/etc/passwd&signature=" + quote(sig("/tmp/s.txt", "read"), safe=""),
                    "path=/tmp/s.txt&signature=" + quote(sig("/tmp/s.txt", "write"), safe="")):
            st, _, out = stack.request("GET", "/files?" + bad)
            assert st == 401 and json.loads(out)["message"], (bad, st, out)
        exp = int(time.time()) - 5
        qe = "path=/tmp/s.txt&signature=%s&signature_expiration=%d" % (quote(sig("/tmp/s.txt", "read", "", exp), safe=""), exp)
        st, _, out = stack.request("GET", "/e2b/sandbox/files?" + qe, headers={"E2b-Sandbox-Id": s["sandboxID"]})
        assert st == 401 and "expired" in json.loads(out)["message"], (st, out)
        # the wrong token in the header is not saved by a good signature (envd)
        st, _, _ = stack.request("GET", "/e2b/sandbox/files?" + q, headers={"E2b-Sandbox-Id": s["sandboxID"],
                                                                             "X-Access-Token": "0" * 64})
        assert st == 401, st
        # /files at the root without a signature is no page of ours
        assert stack.request("GET", "/files?path=/tmp/s.txt")[0] == 404
    finally:
        api(stack, "DELETE", "/e2b/sandboxes/" + s["sandboxID"])


def start_detached(stack, sbx, body):
    """Starts a process and leaves once its start event came: it runs on."""
    raw = json.dumps(body).encode()
    raw = struct.pack(">BI", 0, len(raw)) + raw
    c = socket.create_connection(("127.0.0.1", stack.port))
    c.settimeout(10)
    c.sendall(("POST /e2b/sandbox/process.Process/Start HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
               "E2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\nContent-Type: application/connect+json\r\n"
               "Content-Length: %d\r\n\r\n" % (stack.port, sbx["sandboxID"], sbx["envdAccessToken"], len(raw))
               ).encode() + raw)
    got = b""
    while b'"start"' not in got:
        b = c.recv(4096)
        assert b, ("the start event came", got)
        got += b
    c.close()


def t_web_restart(stack):
    """The sandbox outlives a restart of the web (its lease), and its access
    token still opens it: the token is derived from the id, not stored. A
    process started before is listed after (sandboxd keeps it and its
    config), and can be killed."""
    s = create(stack, metadata={"keep": "yes"})
    try:
        st, _, env = envd(stack, s, "process.Process/Start",
                          {"process": {"cmd": "/bin/bash", "args": ["-c", "echo before >/tmp/mark"]}}, streaming=True)
        assert st == 200 and env[-1] == (2, {}), env
        start_detached(stack, s, {"process": {"cmd": "/bin/sleep", "args": ["300"], "envs": {"K": "v"}},
                                  "tag": "keeper"})
        stack.kill("web")
        stack.restart("web")
        st, _, data = envd(stack, s, "process.Process/List", {})
        procs = json.loads(data)["processes"]
        assert st == 200 and len(procs) == 1 and procs[0]["tag"] == "keeper", data
        assert procs[0]["config"]["cmd"] == "/bin/sleep" and procs[0]["config"]["args"] == ["300"], procs
        assert procs[0]["config"]["envs"] == {"K": "v"}, procs
        st, _, data = envd(stack, s, "process.Process/SendSignal",
                           {"process": {"tag": "keeper"}, "signal": "SIGNAL_SIGKILL"})
        assert st == 200, data
        deadline = time.time() + 10
        while json.loads(envd(stack, s, "process.Process/List", {})[2])["processes"]:
            assert time.time() < deadline, "killed after the restart, it leaves the list"
            time.sleep(0.1)
        st, _, env = envd(stack, s, "process.Process/Start",
                          {"process": {"cmd": "/bin/cat", "args": ["/tmp/mark"]}}, streaming=True)
        data = [e[1]["event"]["data"] for e in env if "data" in e[1].get("event", {})]
        assert st == 200 and data and "before" in "".join(
            __import__("base64").b64decode(d["stdout"]).decode() for d in data), env
        st, _, data = api(stack, "GET", "/e2b/sandboxes/" + s["sandboxID"])
        assert st == 200 and json.loads(data)["metadata"] == {"keep": "yes"}, (st, data)
    finally:
        api(stack, "DELETE", "/e2b/sandboxes/" + s["sandboxID"])


# ---- E2B_DOMAIN through the SDK, over TLS ----

def make_tls(d, domain):
    """A throwaway CA and a wildcard certificate for *.<domain> it signed,
    made with openssl in d; returns (ca.pem, cert, key)."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    ca, ca_key = os.path.join(d, "ca.pem"), os.path.join(d, "ca.key")
    crt, key, csr, ext = (os.path.join(d, n) for n in ("srv.pem", "srv.key", "srv.csr", "ext.cnf"))
    run = lambda *a: subprocess.run(["openssl"] + list(a), check=True, capture_output=True)  # noqa: E731
    run("req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "1", "-subj", "/CN=llmbox test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=*.%s" % domain)
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:*.%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n" % domain)
    run("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", crt, "-days", "1",
        "-extfile", ext)
    return ca, crt, key


def free_loopback_443():
    """An address of 127/8 whose port 443 is free (nginx's TLS listen: the
    SDK's https:// names carry no port)."""
    for _ in range(50):
        addr = "127.%d.%d.%d" % tuple(os.urandom(3)[i] % 250 + 2 for i in range(3))
        s = socket.socket()
        try:
            s.bind((addr, 443))
            return addr
        except OSError:
            continue
        finally:
            s.close()
    raise AssertionError("no free 127/8 address with port 443")


def t_e2b_domain_sdk(stack, tls):
    """The SDK with only E2B_DOMAIN set reaches https://49983-<id>.<domain>:
    nginx's TLS block with the wildcard certificate, *.e2b.test resolved to
    its address for the SDK's process only (a --import preload). Without
    the test CA it refuses the certificate: TLS is really checked. And
    sbx.getHost(8000): a python http.server the SDK started in the sandbox,
    fetched through its host name with the traffic token (refused
    without), a closed port's 502 (port forwarding, sandbox_port.c)."""
    env = dict(os.environ)
    env.pop("E2B_SANDBOX_URL", None)
    env.update({"E2B_API_URL": "http://127.0.0.1:%d/e2b" % stack.port, "E2B_API_KEY": TOKEN,
                "E2B_DOMAIN": "e2b.test", "NODE_EXTRA_CA_CERTS": tls["ca"],
                "LLMBOX_TEST_RESOLVE": "e2b.test=" + tls["addr"]})
    argv = ["node", "--import", "./resolve_test_domain.mjs", "sdk_domain.mjs"]
    p = subprocess.run(argv, cwd=E2B_DIR, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "PASS sdk_reaches_envd_by_host_name_over_tls" in p.stdout, (p.stdout, p.stderr[-2000:])
    assert "PASS get_host_reaches_a_server_in_the_sandbox" in p.stdout, (p.stdout, p.stderr[-2000:])
    assert "PASS allow_public_traffic_true_opens_ports_only" in p.stdout, (p.stdout, p.stderr[-2000:])
    print("   " + p.stdout.strip().replace("\n", "\n   "), file=sys.stderr)
    del env["NODE_EXTRA_CA_CERTS"]
    p = subprocess.run(argv, cwd=E2B_DIR, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "fetch failed" in p.stdout, ("without the CA the SDK fails", p.stdout, p.stderr[-2000:])
    # and why: the certificate, checked with and without the test CA
    name = "49983-%s.e2b.test" % ("0" * 32)
    for cafile, ok in ((tls["ca"], True), (None, False)):
        ctx = ssl.create_default_context(cafile=cafile)
        try:
            with socket.create_connection((tls["addr"], 443), timeout=10) as raw:
                with ctx.wrap_socket(raw, server_hostname=name):
                    verified = True
        except ssl.SSLCertVerificationError:
            verified = False
        assert verified == ok, ("the wildcard certificate verifies only with the test CA", cafile)


def t_snapshot_records_expire(stack):
    """A snapshot that sandboxd drops by age (sandbox_state_max_age_s)
    takes the web's records of it along (snapshot_owners/<id>, its owner,
    and e2b_snapshots/<id>, its name and sandbox), at the next list and at
    the web's start; a live snapshot keeps its records, and a record that
    is a symbolic link is never followed. Restarts sandboxd and the web."""
    key = USERS["alice"]  # a user's token: the owner record is written
    st, _, data = api(stack, "POST", "/e2b/v2/sandboxes", {"templateID": "base"}, key=key)
    assert st == 201, (st, data)
    sbx = json.loads(data)["sandboxID"]
    snaps = []
    for name in ("will-expire", "stays"):
        st, _, data = api(stack, "POST", "/e2b/sandboxes/%s/snapshots" % sbx, {"name": name}, key=key)
        assert st == 201, (st, data)
        snaps.append(json.loads(data)["snapshotID"])
    old, live = snaps
    api(stack, "DELETE", "/e2b/sandboxes/" + sbx, key=key)
    recs = {}
    for root, dirs, _ in os.walk(os.path.join(stack.prefix, "var")):
        for d in ("snapshot_owners", "e2b_snapshots"):
            if d in dirs:
                recs[d] = os.path.join(root, d)
    assert set(recs) == {"snapshot_owners", "e2b_snapshots"}, recs

    def rec(d, sid):
        return os.path.join(recs[d], sid)
    aged = time.time() - 120  # a record is as old as its snapshot, at least sandbox_state_max_age_s's 60 s
    for sid in snaps:
        for d in recs:
            assert os.path.isfile(rec(d, sid)), (d, sid)
            os.utime(rec(d, sid), (aged, aged))
    states = [os.path.join(root, f) for root, _, files in os.walk(os.path.join(stack.prefix, "var", "sandboxd"))
              for f in files if f == "api-%s.state" % old.split(".")[-1]]
    assert len(states) == 1, states
    week = time.time() - 8 * 86400  # older than sandbox_state_max_age_s's default of 7 days
    os.utime(states[0], (week, week))
    stack.kill("sandboxd")
    stack.restart("sandboxd")  # its start sweeps the states that are too old
    deadline = time.time() + 60
    while os.path.exists(states[0]):
        assert time.time() < deadline, "sandboxd kept a state older than sandbox_state_max_age_s"
        time.sleep(0.2)
    st, _, data = api(stack, "GET", "/e2b/snapshots", key=key)
    assert st == 200, (st, data)
    listed = [e["snapshotID"] for e in json.loads(data)]
    assert live in listed and old not in listed, (listed, old, live)
    for d in recs:
        assert not os.path.lexists(rec(d, old)), "%s/%s outlived its snapshot, which expired by age" % (d, old)
        assert os.path.isfile(rec(d, live)), "%s/%s of a live snapshot was removed" % (d, live)
    # left while no web listed: the web's start sweeps them; a link is only a
    # link (its target stays), a live snapshot's records stay
    gone = ".".join(live.split(".")[:-1] + [os.urandom(16).hex()])
    outside = os.path.join(stack.prefix, "not-a-record")
    with open(outside, "w") as f:
        f.write("alice")
    for d in recs:
        shutil.copyfile(rec(d, live), rec(d, gone))
        os.utime(rec(d, gone), (aged, aged))
    link = rec("snapshot_owners", ".".join(live.split(".")[:-1] + [os.urandom(16).hex()]))
    os.symlink(outside, link)
    stack.kill("web")
    stack.restart("web")
    for d in recs:
        assert not os.path.lexists(rec(d, gone)), "%s/%s of no snapshot outlived the web's start" % (d, gone)
        assert os.path.isfile(rec(d, live)), "%s/%s of a live snapshot was removed" % (d, live)
    assert os.path.isfile(outside) and os.path.islink(link), "the sweep followed or removed a link"
    os.unlink(link)
    st, _, data = api(stack, "DELETE", "/e2b/templates/" + live, key=key)
    assert st in (200, 204), (st, data)


def main():
    r = Reporter()
    # `python3 tests/integration/test_e2b.py NAME...` runs only those checks
    only = set(sys.argv[1:])
    if only:
        run_all = r.run
        r.run = lambda name, *a: run_all(name, *a) if name in only else None
    if not image_ready():
        print("SKIP e2b: the sandbox image is not built (make image)")
        return
    if os.geteuid() != 0:
        print("SKIP e2b: sandboxd needs root")
        return
    try:
        subprocess.run(["node", "--version"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        print("FAIL e2b: node is missing (scripts/deps.sh installs it)")
        sys.exit(1)
    if not os.path.isdir(os.path.join(E2B_DIR, "node_modules", "e2b")):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=E2B_DIR, check=True,
                       stdout=sys.stderr)
    env = {"LLMBOX_SANDBOX_API_TOKEN": TOKEN, "LLMBOX_SANDBOX_API_MAX": "16", "LLMBOX_E2B_DOMAIN": "E2B.test"}
    tmp = tempfile.mkdtemp(prefix="llmbox-e2b-tls-")
    ca, crt, key = make_tls(tmp, "e2b.test")
    tls = {"ca": ca, "addr": free_loopback_443()}
    stack_tls = {"listen": tls["addr"] + ":443", "cert": crt, "key": key, "names": "*.e2b.test"}
    with Stack(model=False, web_env=env, tls=stack_tls, conf=VOLUME_CONF + USERS_CONF) as st:
        r.run("sdk_commands", t_sdk, st, "sdk_commands.mjs")
        r.run("sdk_files", t_sdk, st, "sdk_files.mjs")
        r.run("sdk_watch", t_sdk, st, "sdk_watch.mjs")
        r.run("sdk_pty", t_sdk, st, "sdk_pty.mjs")
        r.run("sdk_hostile", t_sdk, st, "sdk_hostile.mjs")
        r.run("sdk_pause", t_sdk, st, "sdk_pause.mjs")
        r.run("sdk_pause_reboot", t_sdk, st, "sdk_pause_reboot.mjs")
        r.run("sdk_boot_id", t_sdk, st, "sdk_boot_id.mjs")
        r.run("sdk_restart_flags", t_sdk_restart_flags, st)
        r.run("sdk_auto_resume", t_sdk, st, "sdk_auto_resume.mjs")
        r.run("sdk_file_metadata", t_sdk, st, "sdk_file_metadata.mjs")
        r.run("sdk_user", t_sdk, st, "sdk_user.mjs")
        r.run("sdk_user_perms", t_sdk, st, "sdk_user_perms.mjs")
        r.run("sdk_links", t_sdk, st, "sdk_links.mjs")
        r.run("sdk_parity", t_sdk, st, "sdk_parity.mjs")
        r.run("sdk_base_user", t_sdk, st, "sdk_base_user.mjs")
        r.run("sdk_users", t_sdk, st, "sdk_users.mjs")
        r.run("sdk_metrics", t_sdk, st, "sdk_metrics.mjs")
        r.run("sdk_fork", t_sdk, st, "sdk_fork.mjs")
        r.run("sdk_upstream_parity", t_sdk, st, "sdk_upstream_parity.mjs")
        r.run("users_raw", t_users_raw, st)
        r.run("metrics_many", t_metrics_many, st)
        r.run("gzip_files_raw", t_gzip_raw, st)
        r.run("signed_urls_raw", t_signed_raw, st)
        r.run("readme_example_unchanged", t_readme_example, st)
        r.run("keys_and_tokens", t_keys, st)
        r.run("e2b_domain_host_names", t_e2b_domain_host_names, st)
        r.run("envelopes_malformed", t_envelopes, st)
        r.run("client_never_reads", t_never_reads, st)
        r.run("unsupported_said", t_unsupported_said, st)
        r.run("web_restart_keeps_sandbox_and_token", t_web_restart, st)
        r.run("e2b_domain_sdk_over_tls", t_e2b_domain_sdk, st, tls)
        # last: it restarts sandboxd, which ends every sandbox
        r.run("sdk_volumes", t_sdk_volumes, st)
        # restarts sandboxd and the web too
        r.run("snapshot_records_expire", t_snapshot_records_expire, st)
    shutil.rmtree(tmp, ignore_errors=True)
    r.done()


if __name__ == "__main__":
    main()
