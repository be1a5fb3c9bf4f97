#!/usr/bin/env python3
"""Security: hostile HTTP input to the service, through nginx, against the
real stack (fake model, sandboxd, web, nginx; tests/lib/stack.py).

Malformed and truncated multipart bodies, missing boundaries, huge headers
and field counts, file names with `..`, absolute paths, NUL, control
characters, 4 KB names and odd Unicode, invalid JSON for the sandbox API,
unknown and malformed ids, path traversal in artifact URLs (plain, %2e%2e,
%2f, double-encoded, backslashes), methods that are not allowed, odd
Last-Event-ID values. Each refusal must be a 4xx answer with the documented
error shape ({"error": {"code", "message"}}, valid UTF-8 JSON, a documented
code) that names no host path; afterwards web, sandboxd, nginx and a task's
agent are alive, nginx logged no 502/504 (a backend that died or hung up),
and the refused uploads left nothing behind. Run as root:

    python3 tests/security/test_service_input.py [CHECK...]

Requests go over raw sockets (so the bytes are exactly the test's), each
from its own 127.0.0.x source address: nginx limits task starts per address
(30 a minute), and this suite sends a few hundred refused ones.
"""
import json
import os
import re
import socket
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stack import REPO, Reporter, Skip, Stack, image_ready, multipart  # noqa: E402

TOKEN = "hostile-" + uuid.uuid4().hex + uuid.uuid4().hex
SECRET = "hostile-secret-" + uuid.uuid4().hex  # an input of the task; never served as an artifact
CODES = {"bad_request", "unauthorized", "forbidden", "not_found", "method_not_allowed", "conflict", "too_large",
         "unsupported_media_type", "too_many_tasks", "too_many_sandboxes", "rate_limited", "internal",
         "unavailable"}
ID0 = "0" * 32

SCENARIO = [
    {"tool_calls": [{"name": "bash", "arguments": {"command":
        "mkdir -p /testbed/output/d && echo artifact-a > /testbed/output/a.txt && "
        "echo artifact-b > /testbed/output/d/b.txt && sleep 4"}}]},
    {"tool_calls": [{"name": "finish", "arguments": {"answer": "done"}}]},
]


class Problems(list):
    def add(self, what):
        self.append(what)

    def raise_if(self):
        if self:
            for w in self:
                print("  problem: " + w[:400], file=sys.stderr)
            more = " (+%d more)" % (len(self) - 6) if len(self) > 6 else ""
            raise AssertionError("; ".join(self[:6]) + more)


class Env:
    """The stack and what the checks learn about it."""

    def __init__(self, st):
        self.st = st
        self.src = 0
        self.task = None       # the task started by task_starts
        self.sandbox = None    # an API sandbox for exec bodies
        self.answers = 0
        self.leak_re = re.compile(r"/work/|/var/|/artifacts/|/tmp/llmbox|%s|%s" % (
            re.escape(st.prefix), re.escape(REPO)))
        # where the checks start in nginx's logs: the health polls while the
        # web was still starting (no socket yet: "connect() failed", a 503)
        # are the harness waiting, not a backend that died
        log = os.path.join(st.prefix, "var", "log")
        self.log_from = {n: os.path.getsize(os.path.join(log, n)) for n in ("nginx-access.log", "nginx-error.log")}

    def log_since_start(self, name):
        """What nginx wrote to var/log/<name> since the checks began."""
        with open(os.path.join(self.st.prefix, "var", "log", name), "rb") as f:
            f.seek(self.log_from[name])
            return f.read().decode(errors="replace")

    # ---- raw HTTP ----------------------------------------------------------
    def raw(self, data, timeout=20, read_max=4 << 20):
        """Sends bytes as one request from a fresh 127.0.0.x address and
        returns (status, headers, body) of the answer (chunked decoded)."""
        self.src = (self.src + 1) % 250
        s = socket.socket()
        s.settimeout(timeout)
        s.bind(("127.0.0.%d" % (self.src + 2), 0))
        s.connect(("127.0.0.1", self.st.port))
        out = b""
        try:
            try:
                s.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # nginx may answer and close before it read everything
            while len(out) < read_max:
                try:
                    c = s.recv(65536)
                except ConnectionResetError:
                    break
                if not c:
                    break
                out += c
        finally:
            s.close()
        return parse_response(out)

    def req(self, method, path, body=b"", headers=None, timeout=20):
        h = {"Host": "localhost", "Connection": "close"}
        h.update(headers or {})
        if isinstance(body, str):
            body = body.encode()
        if body or method in ("POST", "PUT", "PATCH"):
            h.setdefault("Content-Length", str(len(body)))
        if isinstance(path, str):
            path = path.encode("utf-8", "surrogateescape")
        head = method.encode() + b" " + path + b" HTTP/1.1\r\n"
        for k, v in h.items():
            k = k.encode() if isinstance(k, str) else k
            v = v.encode("utf-8", "surrogateescape") if isinstance(v, str) else v
            head += k + b": " + v + b"\r\n"
        return self.raw(head + b"\r\n" + body, timeout=timeout)

    def api(self, method, path, body=b"", headers=None, token=True, **kw):
        h = {"Authorization": "Bearer " + TOKEN} if token else {}
        h.update(headers or {})
        return self.req(method, path, body, h, **kw)

    def post_form(self, ctype, body):
        return self.req("POST", "/api/tasks", body, {"Content-Type": ctype})

    # ---- what every answer must be -----------------------------------------
    def no_leak(self, p, label, body):
        m = self.leak_re.search(body.decode("utf-8", "replace"))
        if m:
            p.add("%s: the answer names a host path (%r)" % (label, m.group(0)))

    def error(self, p, label, resp, statuses=None, code=None):
        """resp must be a documented JSON error with a status in statuses
        (any 4xx if None); returns its message ('' when it is not one)."""
        st, h, body = resp
        self.answers += 1
        self.no_leak(p, label, body)
        ok_status = (st in statuses) if statuses else 400 <= st < 500
        if not ok_status:
            p.add("%s: status %s, wanted %s (%r)" % (label, st, statuses or "4xx", body[:160]))
            return ""
        if not h.get("content-type", "").startswith("application/json"):
            p.add("%s: %d with Content-Type %r (%r)" % (label, st, h.get("content-type"), body[:100]))
            return ""
        try:
            o = json.loads(body.decode("utf-8"))  # strict: invalid UTF-8 fails here
        except ValueError as e:
            p.add("%s: %d body is not UTF-8 JSON (%s): %r" % (label, st, e, body[:160]))
            return ""
        e = o.get("error") if isinstance(o, dict) else None
        if (not isinstance(e, dict) or set(o) != {"error"} or set(e) != {"code", "message"}
                or not isinstance(e["code"], str) or not isinstance(e["message"], str) or not e["message"]):
            p.add("%s: %d not the error shape: %r" % (label, st, o))
            return ""
        if e["code"] not in CODES:
            p.add("%s: undocumented code %r" % (label, e["code"]))
        if code and e["code"] != code:
            p.add("%s: code %r, wanted %r" % (label, e["code"], code))
        if st == 405 and "allow" not in h and "not allowed here." not in e["message"]:
            p.add("%s: 405 without an Allow header" % label)
        return e["message"]


def parse_response(raw):
    if not raw:
        return 0, {}, b""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    m = re.match(rb"HTTP/1\.[01] (\d{3})", lines[0])
    if not m:
        return -1, {}, raw  # not HTTP (e.g. an HTTP/0.9 answer)
    h = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(b":")
        h[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
    if h.get("transfer-encoding", "").lower() == "chunked":
        out, rest = b"", body
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            try:
                n = int(size.split(b";")[0], 16)
            except ValueError:
                break
            if n == 0:
                break
            out += rest[:n]
            rest = rest[n + 2:]
        body = out
    return int(m.group(1)), h, body


def form(fields=(), files=(), boundary="hostileB0undary"):
    """A multipart body by hand: fields [(name, value bytes)], files
    [(field, filename bytes, data bytes)]."""
    b = boundary.encode()
    out = b""
    for k, v in fields:
        out += b"--" + b + b"\r\nContent-Disposition: form-data; name=\"" + k + b"\"\r\n\r\n" + v + b"\r\n"
    for k, n, d in files:
        out += (b"--" + b + b"\r\nContent-Disposition: form-data; name=\"" + k + b"\"; filename=\"" + n +
                b"\"\r\nContent-Type: application/octet-stream\r\n\r\n" + d + b"\r\n")
    return out + b"--" + b + b"--\r\n"


CT = "multipart/form-data; boundary=hostileB0undary"


# ---- checks ------------------------------------------------------------------

def task_starts(E):
    """A real task (its agent runs while the hostile requests below come
    in): an input holding a secret, outputs a.txt and d/b.txt."""
    ctype, body = multipart({"prompt": "write two files"}, [("files", "secret.txt", SECRET.encode())])
    st, _, b = E.req("POST", "/api/tasks", body, {"Content-Type": ctype})
    assert st == 201, (st, b[:300])
    E.task = json.loads(b)["id"]


def multipart_malformed(E):
    """Malformed, truncated and boundary-less uploads: 400 (415 when not
    multipart at all), and no task."""
    p = Problems()
    good = form([(b"prompt", b"hello")])
    cases = [
        ("no content type", None, good, (415,)),
        ("text/plain", "text/plain", good, (415,)),
        ("json", "application/json", b'{"prompt":"x"}', (415,)),
        ("no boundary", "multipart/form-data", good, (400,)),
        ("empty boundary", 'multipart/form-data; boundary=""', good, (400,)),
        ("boundary 71 chars", "multipart/form-data; boundary=" + "b" * 71, good, (400,)),
        ("boundary with CR", "multipart/form-data; boundary=a\x01b", good, (400,)),
        ("boundary unterminated quote", 'multipart/form-data; boundary="abc', good, (400,)),
        ("boundary ;;;", "multipart/form-data;;;", good, (400,)),
        ("wrong boundary", "multipart/form-data; boundary=other", good, (400,)),
        ("empty body", CT, b"", (400,)),
        ("garbage body", CT, os.urandom(3000), (400,)),
        ("20 KiB preamble", CT, b"x" * 20000 + good, (400,)),
        ("no closing boundary", CT, good[:-len(b"--hostileB0undary--\r\n")], (400,)),
        ("LF line ends", CT, good.replace(b"\r\n", b"\n"), (400,)),
        ("part without headers", CT, b"--hostileB0undary\r\n\r\nhello\r\n--hostileB0undary--\r\n", (400,)),
        ("not form-data", CT, good.replace(b"form-data;", b"attachment;"), (400,)),
        ("no name", CT, good.replace(b' name="prompt"', b""), (400,)),
        ("empty name", CT, good.replace(b'name="prompt"', b'name=""'), (400,)),
        ("300-byte name", CT, good.replace(b'name="prompt"', b'name="' + b"n" * 300 + b'"'), (400,)),
        ("unterminated quote", CT, good.replace(b'name="prompt"', b'name="prompt'), (400,)),
        ("folded header", CT, good.replace(b"form-data;", b"form-data;\r\n "), (400,)),
        ("NUL in header", CT, good.replace(b'name="prompt"', b'name="pro\x00mpt"'), (400,)),
        ("header without colon", CT, good.replace(b"Content-Disposition:", b"Content-Disposition"), (400,)),
        ("two dispositions", CT, good.replace(b"\r\n\r\nhello", b"\r\nContent-Disposition: form-data; name=x"
                                              b"\r\n\r\nhello"), (400,)),
        ("9 KiB part header", CT, good.replace(b"\r\n\r\nhello", b"\r\nX-Pad: " + b"p" * 9000 + b"\r\n\r\nhello"),
         (400,)),
        ("boundary line junk", CT, good.replace(b"--hostileB0undary\r\n", b"--hostileB0undaryjunk\r\n", 1), (400,)),
        ("prompt twice", CT, form([(b"prompt", b"a"), (b"prompt", b"b")]), (400,)),
        ("prompt missing", CT, form([(b"model", b"default")]), (400,)),
        ("prompt blank", CT, form([(b"prompt", b" \r\n\t ")]), (400,)),
        ("prompt invalid UTF-8", CT, form([(b"prompt", b"caf\xe9")]), (400,)),
        ("prompt overlong UTF-8", CT, form([(b"prompt", b"\xc0\xaf")]), (400,)),
        ("prompt lone surrogate", CT, form([(b"prompt", b"a\xed\xa0\x80b")]), (400,)),
        ("prompt NUL", CT, form([(b"prompt", b"a\x00b")]), (400,)),
        ("prompt over 100 KB", CT, form([(b"prompt", b"p" * (100 * 1024 + 1))]), (413,)),
        ("field over 256 bytes", CT, form([(b"prompt", b"x"), (b"model", b"m" * 300)]), (413,)),
        ("max_turns abc", CT, form([(b"prompt", b"x"), (b"max_turns", b"abc")]), (400,)),
        ("max_turns -1", CT, form([(b"prompt", b"x"), (b"max_turns", b"-1")]), (400,)),
        ("max_turns huge", CT, form([(b"prompt", b"x"), (b"max_turns", b"9" * 40)]), (400,)),
        ("max_turns 1e3", CT, form([(b"prompt", b"x"), (b"max_turns", b"1e3")]), (400,)),
        ("max_turns NUL", CT, form([(b"prompt", b"x"), (b"max_turns", b"5\x007")]), (400,)),
        ("token_budget 0x10", CT, form([(b"prompt", b"x"), (b"token_budget", b"0x1000")]), (400,)),
        ("timeout_s 0", CT, form([(b"prompt", b"x"), (b"timeout_s", b"0")]), (400,)),
        ("model control chars", CT, form([(b"prompt", b"x"), (b"model", b"\x1b[31mred\xe2\x80\xae")]), (400,)),
        ("model NUL", CT, form([(b"prompt", b"x"), (b"model", b"default\x00evil")]), (400,)),
        ("network evil", CT, form([(b"prompt", b"x"), (b"network", b"host")]), (400,)),
        ("network NUL", CT, form([(b"prompt", b"x"), (b"network", b"none\x00nat")]), (400,)),
        ("network nat", CT, form([(b"prompt", b"x"), (b"network", b"nat")]), (403,)),
        ("image ../", CT, form([(b"prompt", b"x"), (b"image", b"../../etc")]), (400,)),
        ("image unknown", CT, form([(b"prompt", b"x"), (b"image", b"nope")]), (400,)),
        ("unpack maybe", CT, form([(b"prompt", b"x"), (b"unpack", b"maybe")]), (400,)),
    ]
    for label, ctype, body, statuses in cases:
        h = {"Content-Type": ctype} if ctype else {}
        E.error(p, label, E.req("POST", "/api/tasks", body, h), statuses)
    # truncated at every kind of place of an upload with a file
    full = form([(b"prompt", b"hello")], [(b"files", b"data/a.csv", b"1,2\r\n3,4\r\n" * 50)])
    # (len - 2 is complete: the CRLF after the closing delimiter is optional)
    for cut in sorted({1, 2, 10, 19, 20, 40, 70, 90, 120, 150, len(full) // 2, len(full) - 30,
                       len(full) - 21, len(full) - 5, len(full) - 3}):
        E.error(p, "truncated at %d" % cut, E.post_form(CT, full[:cut]), (400,))
    # a Content-Length that promises more than comes: nginx waits, then
    # gives up (client_body_timeout); here the client closes its side
    p.raise_if()


def field_counts(E):
    """Huge part and file counts: 413 with a sentence, never a crash."""
    p = Problems()
    many_fields = form([(b"f%d" % i, b"v") for i in range(1100)] + [(b"prompt", b"x")])
    E.error(p, "1100 fields", E.post_form(CT, many_fields), (413,))
    many_files = form([(b"prompt", b"x")], [(b"files", b"f%d.txt" % i, b"") for i in range(1001)])
    E.error(p, "1001 files", E.post_form(CT, many_files), (413,))
    empty_parts = b"--hostileB0undary\r\n" * 5000 + b"--hostileB0undary--\r\n"
    E.error(p, "5000 empty parts", E.post_form(CT, empty_parts), (400, 413))
    padded = form([(b"prompt", b"x")]).replace(b"--hostileB0undary\r\n", b"--hostileB0undary" + b" " * 200 + b"\r\n")
    E.error(p, "200 spaces after a boundary", E.post_form(CT, padded), (400,))
    p.raise_if()


BAD_NAMES = [
    (b"..", "dotdot"), (b"../x.txt", "leading .."), (b"a/../../b.txt", "inner .."), (b"a/..", "trailing .."),
    (b"/etc/passwd", "absolute"), (b"//x", "double slash absolute"), (b"a\\b.txt", "backslash"),
    (b"..\\..\\x.txt", "backslash .."), (b"C:\\x.txt", "drive letter"), (b"a\x00b.txt", "NUL"),
    (b"a\x01b.txt", "SOH"), (b"\x1b[31mred.txt", "escape sequence"), (b"a\x7fb.txt", "DEL"),
    (b"tab\there.txt", "tab"), (b"a%0Ab.txt", "LF (browser-escaped)"), (b"a%0Db.txt", "CR (browser-escaped)"),
    (b"a\xc2\x85b.txt", "C1 NEL"), (b"a\xc2\x9bb.txt", "C1 CSI"),
    (b"a" * 4096 + b".txt", "4 KB component"), ((b"d" * 200 + b"/") * 20 + b"x.txt", "4 KB path"),
    (b"evil\xe2\x80\xaetxt.exe", "RTL override"), (b"a\xe2\x81\xa6b\xe2\x81\xa9.txt", "bidi isolate"),
    (b"a\xe2\x80\xa8b.txt", "line separator"),
    (b"\xc0\xae\xc0\xae/x.txt", "overlong dots"), (b"a\xc0\xafb.txt", "overlong slash"),
    (b"\xed\xa0\x80.txt", "lone high surrogate"), (b"\xed\xbf\xbf.txt", "lone low surrogate"),
    (b"\xf4\x90\x80\x80.txt", "above U+10FFFF"), (b"\xff\xfe.txt", "invalid bytes"),
    (b"caf\xe9.txt", "latin-1"), (b"\xe2\x82.txt", "cut sequence"),
]


def file_names(E):
    """File names with .., absolute paths, NUL, control and bidi
    characters, 4 KB names, overlong UTF-8 and encoded surrogates: 400 and
    no task. Combining marks (the NFD names macOS sends) are fine and kept."""
    p = Problems()
    for name, label in BAD_NAMES:
        body = form([(b"prompt", b"x")], [(b"files", name, b"data")])
        msg = E.error(p, "file name " + label, E.post_form(CT, body), (400,))
        if msg and "\x00" in msg:
            p.add("file name %s: the message holds a NUL" % label)
    # two files, the same after cleaning
    body = form([(b"prompt", b"x")], [(b"files", b"a/b.txt", b"1"), (b"files", b"a//./b.txt", b"2")])
    E.error(p, "same name twice", E.post_form(CT, body), (400,))
    # a file and a folder of the same name
    body = form([(b"prompt", b"x")], [(b"files", b"a", b"1"), (b"files", b"a/b.txt", b"2")])
    E.error(p, "file vs folder", E.post_form(CT, body), (400,))
    p.raise_if()


def unicode_names_kept(E):
    """Combining marks and non-Latin scripts are names people use: the task
    is made and the name is stored exactly as sent."""
    names = ["re\u0301sume\u0301.txt", "\u062a\u0642\u0631\u064a\u0631.csv", "\u65e5\u672c/\u8a9e.txt",
             "emoji-\U0001F600.txt", "z\u0351\u0352\u0353.txt"]
    body = form([(b"prompt", b"list the inputs"), (b"max_turns", b"1")],
                [(b"files", n.encode(), b"x") for n in names])
    st, _, b = E.post_form(CT, body)
    assert st == 201, (st, b[:300])
    t = json.loads(b)
    got = sorted(i["path"] for i in t["inputs"])
    assert got == sorted(names), got
    E.extra_task = t["id"]


def sandbox_json(E):
    """Invalid JSON and invalid specs for the sandbox API: 400/413 with a
    sentence; the sandbox API stays usable."""
    p = Problems()
    bodies = [
        ("empty", b"", (400,)), ("{", b"{", (400,)), ("[]", b"[]", (400,)), ("null", b"null", (400,)),
        ("number", b"1", (400,)), ("string", b'"x"', (400,)), ("trailing garbage", b"{} x", (400,)),
        ("two objects", b"{}{}", (400,)), ("NaN", b'{"ttl_s": NaN}', (400,)),
        ("single quotes", b"{'image': 'default'}", (400,)), ("comment", b"{/* */}", (400,)),
        ("deep nesting", b"[" * 100000 + b"]" * 100000, (400,)),
        ("deep metadata", b'{"metadata":' + b'{"a":' * 5000 + b"1" + b"}" * 5001, (400, 413)),
        ("unknown field", b'{"ttl": 5}', (400,)), ("image number", b'{"image": 5}', (400,)),
        ("image traversal", b'{"image": "../../etc"}', (400,)), ("ttl_s -1", b'{"ttl_s": -1}', (400,)),
        ("ttl_s 1e999", b'{"ttl_s": 1e999}', (400,)), ("ttl_s 1.5", b'{"ttl_s": 1.5}', (400,)),
        ("ttl_s string", b'{"ttl_s": "10"}', (400,)), ("workdir relative", b'{"workdir": "work"}', (400,)),
        ("workdir ..", b'{"workdir": "/a/../../b"}', (400,)), ("workdir NUL", b'{"workdir": "/a\\u0000b"}', (400,)),
        ("env bad name", b'{"env": {"1A": "x"}}', (400,)), ("env = name", b'{"env": {"A=B": "x"}}', (400,)),
        ("env value number", b'{"env": {"A": 1}}', (400,)), ("env list", b'{"env": ["A"]}', (400,)),
        ("env 257", json.dumps({"env": {"V%d" % i: "x" for i in range(257)}}).encode(), (413,)),
        ("files object", b'{"files": {}}', (400,)), ("file no path", b'{"files": [{"content": "x"}]}', (400,)),
        ("file ..", b'{"files": [{"path": "../../etc/x", "content": "x"}]}', (400,)),
        ("file backslash", b'{"files": [{"path": "a\\\\b", "content": "x"}]}', (400,)),
        ("file control", b'{"files": [{"path": "a\\u0001b", "content": "x"}]}', (400,)),
        ("file NUL in path", b'{"files": [{"path": "a\\u0000/../../b", "content": "x"}]}', (400,)),
        ("file NUL in content", b'{"files": [{"path": "a", "content": "x\\u0000y"}]}', (400,)),
        ("file both contents", b'{"files": [{"path": "a", "content": "x", "content_base64": "eA=="}]}', (400,)),
        ("file bad base64", b'{"files": [{"path": "a", "content_base64": "!!!"}]}', (400,)),
        ("file mode 4755", b'{"files": [{"path": "a", "content": "x", "mode": "4755"}]}', (400,)),
        ("file mode -1", b'{"files": [{"path": "a", "content": "x", "mode": -1}]}', (400,)),
        ("1001 files", json.dumps({"files": [{"path": "f%d" % i, "content": ""} for i in range(1001)]}).encode(),
         (413,)),
        ("metadata 5 KB", json.dumps({"metadata": {"k": "v" * 5000}}).encode(), (413,)),
        ("metadata list", b'{"metadata": [1]}', (400,)),
        ("resources cpu 0", b'{"resources": {"cpu": 0}}', (400,)),
        ("resources memory huge", b'{"resources": {"memory_mib": 1e300}}', (400,)),
        ("resources unknown", b'{"resources": {"gpu": 1}}', (400,)),
        ("network host", b'{"network": "host"}', (400,)),
        ("invalid UTF-8 string", b'{"metadata": {"k": "caf\xe9"}}', (400,)),
        ("invalid UTF-8 key", b'{"metadata": {"\xff\xfe": 1}}', (400,)),
        ("overlong UTF-8", b'{"metadata": {"k": "\xc0\xaf"}}', (400,)),
        ("raw surrogate bytes", b'{"metadata": {"k": "\xed\xa0\x80"}}', (400,)),
        ("lone surrogate escape", b'{"metadata": {"k": "\\ud800"}}', (400,)),
        ("lone low surrogate escape", b'{"metadata": {"k": "\\udc00x"}}', (400,)),
        ("unknown field, invalid UTF-8 name", b'{"\xff\xfe\xfd": 1}', (400,)),
        ("unknown field, long name", ('{"%s": 1}' % ("\u00e9" * 100)).encode(), (400,)),
    ]
    for label, body, statuses in bodies:
        msg = E.error(p, "spec " + label, E.api("POST", "/api/sandboxes", body), statuses)
        if msg and ("\ufffd" in msg and label.startswith("unknown field")):
            pass  # a replacement character is how a bad byte may be shown
    # the exec request of a real sandbox
    st, _, b = E.api("POST", "/api/sandboxes", b'{"ttl_s": 300, "metadata": {"suite": "hostile"}}')
    if st != 201:
        p.add("a valid spec was refused after the invalid ones: %d %r" % (st, b[:200]))
        p.raise_if()
    E.sandbox = json.loads(b)["id"]
    ex = "/api/sandboxes/%s/exec" % E.sandbox
    execs = [
        ("empty", b"", (400,)), ("{", b"{", (400,)), ("list", b"[]", (400,)), ("no command", b"{}", (400,)),
        ("command number", b'{"command": 5}', (400,)), ("command empty", b'{"command": ""}', (400,)),
        ("command NUL", b'{"command": "echo a\\u0000; echo b"}', (400,)),
        ("command 300 KB", json.dumps({"command": "x" * (300 << 10)}).encode(), (413,)),
        ("timeout_s string", b'{"command": "true", "timeout_s": "5"}', (400,)),
        ("timeout_s 0", b'{"command": "true", "timeout_s": 0}', (400,)),
        ("timeout_s huge", b'{"command": "true", "timeout_s": 1e308}', (400,)),
        ("stdin number", b'{"command": "cat", "stdin": 5}', (400,)),
        ("stdin NUL", b'{"command": "cat", "stdin": "a\\u0000b"}', (400,)),
        ("env bad", b'{"command": "true", "env": {"A B": "x"}}', (400,)),
        ("cwd ..", b'{"command": "true", "cwd": "../../.."}', (400,)),
        ("cwd control", b'{"command": "true", "cwd": "/tmp/\\u001b"}', (400,)),
        ("unknown field", b'{"command": "true", "shell": "sh"}', (400,)),
        ("invalid UTF-8", b'{"command": "echo \xff"}', (400,)),
    ]
    for label, body, statuses in execs:
        E.error(p, "exec " + label, E.api("POST", ex, body), statuses)
    st, _, b = E.api("POST", ex, b'{"command": "echo alive"}')
    if st != 200 or json.loads(b).get("stdout") != "alive\n":
        p.add("the sandbox does not run a command after the invalid requests: %d %r" % (st, b[:200]))
    # file routes: traversal in the URL path
    fp = "/api/sandboxes/%s/files/" % E.sandbox
    for raw in ("..", "%2e%2e/%2e%2e/etc/passwd", "tmp/..%2f..%2fetc%2fpasswd", "tmp%2f..%2f..%2fetc",
                "a%00b", "a%5c..%5cb", "%ff%fe", "tmp/%e2%80%aex", "tmp/%c0%ae%c0%ae/x", "tmp/%c2%85",
                "a%", "a%zz", "a%2"):
        E.error(p, "file path " + raw, E.api("GET", fp + raw), (400, 404))
        E.error(p, "put file path " + raw, E.api("PUT", fp + raw, b"data"), (400, 404))
    # decoded once: "%2e%2e" is a plain name here, never a way up
    st, _, b = E.api("PUT", fp + "tmp/%252e%252e/x", b"data")
    if st != 200 or json.loads(b).get("path") != "/tmp/%2e%2e/x":
        p.add("a double-encoded name is not kept literally: %d %r" % (st, b[:200]))
    p.raise_if()


def sandbox_auth(E):
    """No, a wrong, or a malformed token: 401 with the error shape."""
    p = Problems()
    for label, h in [("none", {}), ("wrong", {"Authorization": "Bearer nope"}), ("empty bearer", {"Authorization":
                     "Bearer "}), ("basic", {"Authorization": "Basic " + TOKEN}), ("huge", {"Authorization":
                     "Bearer " + "t" * 7000}), ("token prefix", {"Authorization": "Bearer " + TOKEN[:-1]}),
                     ("token + junk", {"Authorization": "Bearer " + TOKEN + "x"}),
                     ("control", {"Authorization": "Bearer \x01" + TOKEN})]:
        for method, path in [("GET", "/api/sandboxes"), ("POST", "/api/sandboxes"), ("DELETE", "/api/sandboxes/"
                             + ID0), ("POST", "/api/sandboxes/%s/exec" % ID0)]:
            E.error(p, "auth %s %s %s" % (label, method, path), E.req(method, path, b"{}", h), (401, 400))
    p.raise_if()


BAD_IDS = ["", "x", "0" * 31, "0" * 33, "A" * 32, "g" * 32, "0" * 4000, "%00", "..", "%2e%2e", "-1",
           "00000000000000000000000000000000%00", "%30" * 32, "\u00e9" * 16, "0" * 31 + "%0a",
           "00000000-0000-0000-0000-000000000000", "..%2f..%2f" + "0" * 22, "0" * 32 + ";x"]


def ids(E):
    """Unknown and malformed task and sandbox ids on every route: 404
    (405 for a wrong method), never a crash or a 500."""
    p = Problems()
    task_routes = [("GET", ""), ("DELETE", ""), ("GET", "/events"), ("GET", "/trajectory"), ("POST", "/cancel"),
                   ("POST", "/rerun"), ("GET", "/artifacts"), ("GET", "/artifacts/a.txt"), ("GET", "/bundle.zip"),
                   ("GET", "/bundle.tar.gz"), ("GET", "/nope")]
    for tid in BAD_IDS + [ID0, "f" * 32]:
        shown = tid if len(tid) < 40 else tid[:20] + "...(%d)" % len(tid)
        for method, sub in task_routes:
            path = "/api/tasks/" + tid + sub
            # nginx itself refuses a URI with an encoded NUL (400)
            want = (400, 404) if "%00" in tid else (404,)
            E.error(p, "%s %s" % (method, path if len(path) < 80 else "/api/tasks/%s%s" % (shown, sub)),
                    E.req(method, path), want)
    for tid in BAD_IDS + [ID0]:
        for method, sub in [("GET", ""), ("DELETE", ""), ("POST", "/exec"), ("GET", "/files/tmp/x"),
                            ("PUT", "/files/tmp/x"), ("GET", "/nope")]:
            path = "/api/sandboxes/" + tid + sub
            want = (400, 404) if "%00" in tid else (404,)
            if tid == ID0 and method == "DELETE" and sub == "":
                continue  # destroy is idempotent: 200 for any well-formed id
            if tid == "" and sub == "":
                continue
            E.error(p, "%s /api/sandboxes/%s%s" % (method, tid[:40], sub), E.api(method, path, b"{}"), want)
    # query parameters
    for q in ("limit=abc", "limit=0", "limit=201", "limit=1e2", "limit=%00", "limit=" + "9" * 40, "before=-1",
              "before=abc", "before=" + "9" * 40, "before_id=zz", "before_id=%00", "before_id=" + "A" * 32,
              "limit=%", "limit=%zz"):
        E.error(p, "GET /api/tasks?" + q, E.req("GET", "/api/tasks?" + q), (400,))
    for q in ("path=../x", "path=%2e%2e", "path=/etc", "path=a%00b", "path=a%5cb", "path=%ff",
              "path=" + "a" * 2000, "path=%"):
        for tid in (ID0, E.task):
            if tid:
                E.error(p, "bundle ?" + q[:30], E.req("GET", "/api/tasks/%s/bundle.zip?%s" % (tid, q)), (400, 409))
    p.raise_if()


def methods(E):
    """Methods a route does not take: 405 JSON with Allow (nginx's own 405
    for TRACE: JSON too)."""
    p = Problems()
    tid = E.task or ID0
    routes = {"/api/health": "GET", "/api/models": "GET", "/api/info": "GET", "/api/tools": "GET",
              "/api/tasks": "GET POST", "/api/tasks/%s" % tid: "GET DELETE",
              "/api/tasks/%s/events" % tid: "GET", "/api/tasks/%s/trajectory" % tid: "GET",
              "/api/tasks/%s/cancel" % tid: "POST", "/api/tasks/%s/rerun" % tid: "POST",
              "/api/tasks/%s/artifacts" % tid: "GET", "/api/tasks/%s/artifacts/a.txt" % tid: "GET",
              "/api/tasks/%s/bundle.zip" % tid: "GET", "/api/sandboxes": "GET POST",
              "/api/sandboxes/%s" % ID0: "GET DELETE", "/api/sandboxes/%s/exec" % ID0: "POST",
              "/api/sandboxes/%s/files/tmp/x" % ID0: "GET PUT"}
    for path, allowed in routes.items():
        for m in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "PROPFIND", "FOO", "TRACE", "CONNECT"):
            if m in allowed.split():
                continue
            if path.startswith("/api/sandboxes/" + ID0) and m in ("GET", "DELETE", "POST", "PUT"):
                continue  # a well-formed unknown sandbox: its 404 may come before the method check
            resp = E.api(m, path, b"") if "sandboxes" in path else E.req(m, path)
            want = (400, 405) if m == "CONNECT" else (405,)
            E.error(p, "%s %s" % (m, path), resp, want)
    p.raise_if()


def huge_headers(E):
    """Headers and URIs over nginx's buffers, thousands of headers, long
    values the backend reads (Content-Type, Last-Event-ID): JSON 4xx."""
    p = Problems()
    E.error(p, "20 KB header", E.req("GET", "/api/health", headers={"X-Big": "a" * 20000}), (400,))
    many = {"X-H%d" % i: "v" for i in range(3000)}
    E.error(p, "3000 headers", E.req("GET", "/api/health", headers=many), (400,))
    E.error(p, "20 KB URI", E.req("GET", "/api/tasks/" + "a" * 20000), (414, 400))
    E.error(p, "7 KB URI", E.req("GET", "/api/tasks/" + "a" * 7000), (404,))
    E.error(p, "7 KB query", E.req("GET", "/api/tasks?limit=" + "1" * 7000), (400,))
    ct = "multipart/form-data; boundary=" + "b" * 7000
    E.error(p, "7 KB Content-Type", E.post_form(ct, form([(b"prompt", b"x")])), (400,))
    ct = "multipart/form-data; " + "x=y; " * 1000 + "b=c"
    E.error(p, "1000 Content-Type parameters", E.post_form(ct, form([(b"prompt", b"x")])), (400,))
    E.error(p, "Content-Length garbage", E.req("POST", "/api/tasks", b"", {"Content-Length": "abc",
            "Content-Type": CT}), (400,))
    E.error(p, "Content-Length negative", E.req("POST", "/api/tasks", b"", {"Content-Length": "-5",
            "Content-Type": CT}), (400,))
    E.error(p, "Content-Length huge", E.req("POST", "/api/tasks", b"", {"Content-Length": "9" * 30,
            "Content-Type": CT}), (400, 413))
    E.error(p, "two Content-Lengths", E.req("POST", "/api/tasks", b"", {"Content-Length": "0",
            "content-length": "5", "Content-Type": CT}), (400,))
    for bad in (b"GET /api/health HTTP/1.1\r\nHost: x\r\nBad Header: v\r\n\r\n",
                b"GET /api/health HTTP/1.1\r\nHost: x\r\n\x00: v\r\n\r\n",
                b"get /api/health HTTP/1.1\r\nHost: x\r\n\r\n",
                b"GET /api/health HTTP/9.9\r\nHost: x\r\n\r\n",
                b"GET /api/../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
                b"GET /api/tasks/\x00 HTTP/1.1\r\nHost: x\r\n\r\n",
                b"GET /api/health HTTP/1.1\r\n\r\n",
                b"POST /api/tasks HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: " +
                CT.encode() + b"\r\n\r\nzz\r\n"):
        E.error(p, "malformed request %r" % bad[:40], E.raw(bad + b"Connection: close\r\n\r\n"
                                                             if bad.endswith(b"zz\r\n") else bad), (400, 505))
    p.raise_if()


ART_TRAVERSALS = [
    "../input/secret.txt", "../../../../../../etc/passwd", "d/../../input/secret.txt",
    "%2e%2e/input/secret.txt", "%2E%2E/input/secret.txt", ".%2e/input/secret.txt", "%2e./input/secret.txt",
    "..%2finput%2fsecret.txt", "..%2Finput%2Fsecret.txt", "%2e%2e%2finput%2fsecret.txt",
    "%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "d%2f..%2f..%2finput%2fsecret.txt",
    "%252e%252e%252finput%252fsecret.txt", "%252e%252e/input/secret.txt", "..%252finput%252fsecret.txt",
    "..\\input\\secret.txt", "..%5cinput%5csecret.txt", "d%5c..%5c..%5cinput%5csecret.txt",
    "%c0%ae%c0%ae/input/secret.txt", "%c0%ae%c0%ae%c0%afinput%c0%afsecret.txt", "..%c0%afinput%c0%afsecret.txt",
    "%e0%80%ae%e0%80%ae/input/secret.txt", "/input/secret.txt", "%2finput%2fsecret.txt",
    "//input/secret.txt", "a.txt%00../../input/secret.txt", "a.txt%00", "a.txt/", "a.txt/.", "a.txt/..",
    "..;/input/secret.txt", "../trajectory.json", "%2e%2e/trajectory.json", "../../../var/web/llmbox.db",
    "..%2f..%2f..%2fweb%2fllmbox.db", "%", "%2", "%zz", "a%2", ".", "./", "%2e", "d/", "d",
    "a.txt?inline=1/../../input/secret.txt",
]


def agent_survives(E):
    """The task's agent ran while all of the above came in: it is still
    alive (or already done) and the task succeeds."""
    assert E.task, "no task"
    alive_or_done = agent_pid(E.task) or E.st.get_json("/api/tasks/" + E.task)[1]["status"] != "running"
    assert alive_or_done, "the agent of %s is gone while its task runs" % E.task
    t = E.st.wait_task(E.task, timeout=120)
    assert t["status"] == "succeeded", t
    # answer.txt is there when this task got the scenario's finish("done")
    # (the fake model's replies are shared with the other tasks the checks
    # start, so which task gets which reply depends on timing)
    got = sorted(a["path"] for a in t["artifacts"] if a["path"] != "answer.txt")
    assert got == ["a.txt", "d/b.txt"], got


def artifact_traversal(E):
    """Traversal in artifact URLs (plain, %2e%2e, %2f, double-encoded,
    backslashes, overlong UTF-8, NUL) of a finished task: a JSON 404, never
    an input, the trajectory or the database."""
    p = Problems()
    base = "/api/tasks/%s/artifacts/" % E.task
    st, _, b = E.req("GET", base + "a.txt")
    if st != 200 or b != b"artifact-a\n":
        p.add("the real artifact is not served: %d %r" % (st, b[:100]))
    for t in ART_TRAVERSALS:
        resp = E.req("GET", base + t)
        if resp[0] == 200 and resp[2] in (b"artifact-a\n", b"artifact-b\n"):
            continue  # a spelling of a real artifact (./a.txt)
        if SECRET.encode() in resp[2] or b"SQLite format" in resp[2] or b'"messages"' in resp[2]:
            p.add("%s served a file that is not an artifact" % t)
        E.error(p, "artifact " + t, resp, (400, 404))
        for q in ("", "?inline=1"):
            r2 = E.req("GET", "/api/tasks/%s/bundle.zip?path=%s%s" % (E.task, t, q.replace("?", "&")))
            if r2[0] != 200:
                E.error(p, "bundle path " + t, r2, (400, 404))
            elif SECRET.encode() in r2[2]:
                p.add("bundle ?path=%s holds the input" % t)
    # the internal location is not reachable from outside
    st, _, b = E.req("GET", "/_artifacts/%s/input/secret.txt" % E.task)
    if st == 200 or SECRET.encode() in b:
        p.add("/_artifacts/ answered from outside: %d" % st)
    p.raise_if()


def sse_last_event_id(E):
    """Odd Last-Event-ID values: a malformed one replays from the start, one
    past the end of a finished task ends the stream at once (it never holds
    a worker waiting for events that cannot come)."""
    p = Problems()
    path = "/api/tasks/%s/events" % E.task
    full = sse_ids(E.req("GET", path, timeout=30)[2])
    if not full or full != list(range(1, len(full) + 1)):
        p.add("the stream of the finished task is not 1..N: %s" % full)
        p.raise_if()
    n = full[-1]
    after2 = [i for i in full if i > 2]  # HTTP drops the blanks around a header value
    cases = [("abc", full), ("-1", full), ("", full), ("1e3", full), (" 2", after2), ("2 ", after2),
             ("0x10", full), ("%d" % (n - 1), [n]), ("%d" % n, []), ("%d" % (n + 5), []),
             ("9" * 18, []), ("9" * 25, full), ("9223372036854775807", full), ("9" * 7000, full),
             ("+3", full), ("3\x01", full), ("\u00b3", full), ("\uff13", full)]
    for v, want in cases:
        t0 = time.time()
        st, h, body = E.req("GET", path, headers={"Last-Event-ID": v}, timeout=10)
        took = time.time() - t0
        label = "Last-Event-ID %r" % (v if len(v) < 30 else v[:10] + "...")
        if st != 200 or not h.get("content-type", "").startswith("text/event-stream"):
            E.error(p, label, (st, h, body), (400,))
            continue
        got = sse_ids(body)
        if got != want:
            p.add("%s: events %s, wanted %s" % (label, got, want))
        if took > 5:
            p.add("%s: the stream took %.1f s to end" % (label, took))
    for v in ("abc", "-5", "9" * 40, "%00", "%ff"):
        st, h, body = E.req("GET", path + "?last_event_id=" + v, timeout=10)
        if st != 200:
            E.error(p, "last_event_id=" + v, (st, h, body), (400,))
    p.raise_if()


def sse_ids(body):
    return [int(m) for m in re.findall(rb"^id: (\d+)$", body, re.M)]


def sse_running(E):
    """While the task runs: streams opened with odd Last-Event-ID values and
    dropped mid-way do not hurt the agent or the web."""
    if not E.task:
        raise Skip("no task")
    for v in ("abc", "9" * 30, "-1", "1"):
        s = socket.socket()
        s.settimeout(5)
        s.connect(("127.0.0.1", E.st.port))
        s.sendall(("GET /api/tasks/%s/events HTTP/1.1\r\nHost: x\r\nLast-Event-ID: %s\r\n\r\n" %
                   (E.task, v)).encode())
        try:
            s.recv(4096)
        except socket.timeout:
            pass
        s.close()  # gone mid-stream
    pid = agent_pid(E.task)
    st, t = E.st.get_json("/api/tasks/" + E.task)
    assert st == 200, st
    assert pid or t["status"] != "running", "the agent is gone while the task runs"


def agent_pid(tid):
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = open("/proc/%s/cmdline" % d, "rb").read().split(b"\0")
        except OSError:
            continue
        if b"agent" in cmd and tid.encode() in cmd:
            return int(d)
    return 0


def nothing_left(E):
    """Refused uploads leave no task and no folder; the only tasks are the
    two this suite made."""
    p = Problems()
    st, o = E.st.get_json("/api/tasks?limit=200")
    ids_ = sorted(t["id"] for t in o["tasks"])
    want = sorted(x for x in (E.task, getattr(E, "extra_task", None)) if x)
    if ids_ != want:
        p.add("tasks %s, wanted %s" % (ids_, want))
    d = os.path.join(E.st.prefix, "artifacts")
    left = sorted(set(os.listdir(d)) - set(want))
    if left:
        p.add("artifacts/ holds %s" % left)
    if E.sandbox:
        st, _, _ = E.api("DELETE", "/api/sandboxes/" + E.sandbox)
        if st != 200:
            p.add("deleting the sandbox: %d" % st)
    p.raise_if()


def processes_alive(E):
    """web, sandboxd and nginx run; nginx never saw the backend die or hang
    up (no 502/504, no upstream error); the web log has no unanswered
    request; sandboxd answers."""
    p = Problems()
    names = {1: "sandboxd", 2: "web", 3: "nginx"}
    for i, name in names.items():
        if E.st.procs[i].poll() is not None:
            p.add("%s exited (%s)" % (name, E.st.procs[i].returncode))
    log = os.path.join(E.st.prefix, "var", "log")
    acc = E.log_since_start("nginx-access.log")
    bad = [ln for ln in acc.splitlines() if re.search(r'" (502|504) ', ln)]
    if bad:
        p.add("nginx answered 502/504 %d times, e.g. %s" % (len(bad), bad[0][:200]))
    err = E.log_since_start("nginx-error.log")
    ups = [ln for ln in err.splitlines() if "upstream" in ln and ("prematurely" in ln or "failed" in ln
                                                                  or "reset" in ln)]
    if ups:
        p.add("nginx: %s" % ups[0][:240])
    web = open(os.path.join(log, "web.log"), errors="replace").read()
    for needle in ("handler sent no response", "second response head", "AddressSanitizer", "runtime error"):
        if needle in web:
            p.add("web.log: %s" % needle)
    if not E.st.sandboxd_ping().get("ok", True):
        p.add("sandboxd does not answer")
    st, _, _ = E.req("GET", "/api/health")
    if st != 200:
        p.add("health %d" % st)
    print("%d refusals checked" % E.answers, file=sys.stderr)
    p.raise_if()


CHECKS = [("task_starts", task_starts), ("sse_running", sse_running), ("multipart_malformed", multipart_malformed),
          ("field_counts", field_counts), ("file_names", file_names), ("unicode_names_kept", unicode_names_kept),
          ("sandbox_auth", sandbox_auth), ("sandbox_json", sandbox_json), ("ids", ids), ("methods", methods),
          ("huge_headers", huge_headers), ("agent_survives", agent_survives),
          ("artifact_traversal", artifact_traversal), ("sse_last_event_id", sse_last_event_id),
          ("nothing_left", nothing_left), ("processes_alive", processes_alive)]


def main():
    r = Reporter()
    if not image_ready():
        print("SKIP service_input: the sandbox image is not built (make image)")
        return
    if os.geteuid() != 0:
        print("SKIP service_input: sandboxd needs root")
        return
    only = set(sys.argv[1:])
    with Stack(scenario=SCENARIO, web_env={"LLMBOX_SANDBOX_API_TOKEN": TOKEN}) as st:
        E = Env(st)
        for name, fn in CHECKS:
            if only and name not in only and name not in ("task_starts", "agent_survives", "processes_alive"):
                continue
            r.run("service_input/" + name, fn, E)
    r.done()


if __name__ == "__main__":
    main()
