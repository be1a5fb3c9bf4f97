#!/usr/bin/env python3
"""Access through the real stack (nginx, web, agent, sandboxd, fake model):
users and API tokens from llmbox.conf, the page's login and its session
cookie, CSRF refusals, tasks that belong to their creator (another user
gets 404 on every task route), per-user limits, preview links, the nginx
internal location, and the service without users exactly as before.

Tokens come from `llmbox user add NAME`, as an operator makes them.
Prints PASS/FAIL/SKIP lines. Python stdlib only."""
import hashlib
import http.client
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import LLMBOX, Reporter, Skip, Stack, image_ready, multipart  # noqa: E402

REPORT_HTML = '<!doctype html><title>r</title><img src="pics/dot.svg"><p>report</p>'
DOT_SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>'
MAKE = ("mkdir -p /testbed/output/pics && printf '%%s' '%s' > /testbed/output/report.html && "
        "printf '%%s' '%s' > /testbed/output/pics/dot.svg && echo the answer > /testbed/output/answer.txt"
        % (REPORT_HTML, DOT_SVG))

SCENARIO = {
    "scenarios": [
        {"match": "[files]", "steps": [
            {"content": "Writing.", "tool_calls": [{"name": "bash", "arguments": {"command": MAKE}}]}]},
        # a task that stays running: the model takes its time to answer
        {"match": "[long]", "steps": [{"content": "Thinking.", "delay_ms": 60000}]},
    ],
    "steps": [],  # anything else: finish at once
}
ID_RE = re.compile(r"^[0-9a-f]{32}$")


def new_user(name):
    """(token, hash) as `llmbox user add NAME` prints them."""
    out = subprocess.check_output([LLMBOX, "user", "add", name], text=True,
                                  env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LLMBOX_CONF": "/dev/null"})
    tok = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("lbx_")][0]
    hsh = [ln.split("=", 1)[1].strip() for ln in out.splitlines() if ln.startswith("token_sha256 =")][0]
    assert '[user "%s"]' % name in out, out
    assert hashlib.sha256(tok.encode()).hexdigest() == hsh, "the printed hash is not the token's SHA-256"
    return tok, hsh


class Client:
    """One identity against the stack: a bearer token, a session cookie
    (with its CSRF token), or nothing."""

    def __init__(self, stack, bearer=None):
        self.s = stack
        self.bearer = bearer
        self.cookie = None
        self.csrf = None

    def headers(self, extra=None, csrf=True):
        h = {}
        if self.bearer:
            h["Authorization"] = "Bearer " + self.bearer
        if self.cookie:
            h["Cookie"] = self.cookie
            if csrf and self.csrf:
                h["X-CSRF-Token"] = self.csrf
        h.update(extra or {})
        return h

    def req(self, method, path, body=None, headers=None, csrf=True):
        return self.s.request(method, path, body, self.headers(headers, csrf))

    def json(self, method, path, body=None, headers=None, csrf=True):
        st, h, b = self.req(method, path, body, headers, csrf)
        try:
            return st, h, json.loads(b) if b else None
        except ValueError:
            return st, h, b

    def login(self, token, extra=None):
        h = {"Content-Type": "application/json"}
        h.update(extra or {})
        st, hd, b = self.s.request("POST", "/api/login", json.dumps({"token": token}), h)
        if st == 200:
            self.cookie = hd["set-cookie"].split(";")[0]
            self.csrf = json.loads(b)["csrf_token"]
        return st, hd, json.loads(b)

    def create(self, prompt, files=(), headers=None, csrf=True, **fields):
        f = {"prompt": prompt}
        f.update(fields)
        ctype, body = multipart(f, [("files", n, d) for n, d in files])
        h = {"Content-Type": ctype}
        h.update(headers or {})
        return self.json("POST", "/api/tasks", body, h, csrf)

    def wait(self, tid, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            st, _, t = self.json("GET", "/api/tasks/" + tid)
            assert st == 200, (st, t)
            if t["status"] in ("succeeded", "failed", "cancelled"):
                return t
            time.sleep(0.1)
        raise AssertionError("task %s did not end" % tid)


def error_code(body):
    return (body or {}).get("error", {}).get("code") if isinstance(body, dict) else None


# ---- the stack with users ----------------------------------------------------

def users_conf(users):
    out = ["user_tasks_per_minute = 0", "user_max_tasks = 0"]
    for name, (tok, hsh, extra) in users.items():
        out.append('[user "%s"]' % name)
        out.append("token_sha256 = %s" % hsh)
        out.extend(extra)
    return "\n".join(out) + "\n"


def t_no_credentials(s, u):
    anon = Client(s)
    for path in ("/api/tasks", "/api/models", "/api/info", "/api/tools", "/api/tasks/" + "0" * 32):
        st, h, b = anon.json("GET", path)
        assert st == 401 and error_code(b) == "unauthorized", (path, st, b)
        assert h.get("www-authenticate", "").startswith("Bearer"), h
        assert "log in" in b["error"]["message"], b
    st, _, b = anon.create("hello")
    assert st == 401, (st, b)
    # health stays public (monitoring); the session route says a login is needed
    st, _, b = anon.json("GET", "/api/health")
    assert st == 200 and b["ok"], (st, b)
    st, _, b = anon.json("GET", "/api/session")
    assert st == 200 and b == {"login_required": True, "user": None, "via": None}, b


def t_wrong_token_401(s, u):
    for auth in ("Bearer lbx_" + "0" * 64, "Bearer " + u["alice"][0] + "x", "Bearer ", "Basic YWxpY2U6eA==",
                 "Bearer " + u["alice"][1]):  # the hash is not the token
        st, h, b = s.request("GET", "/api/tasks", headers={"Authorization": auth})
        b = json.loads(b)
        assert st == 401 and error_code(b) == "unauthorized", (auth, st, b)
        assert "Bearer" in h.get("www-authenticate", ""), h
    st, _, b = Client(s).login("lbx_" + "1" * 64)
    assert st == 401 and error_code(b) == "unauthorized", (st, b)
    # a right bearer with a wrong cookie: the bearer decides
    st, _, _ = s.request("GET", "/api/tasks", headers={"Authorization": "Bearer " + u["alice"][0],
                                                        "Cookie": "llmbox_session=" + "a" * 64})
    assert st == 200, st
    # and the token never reaches a log
    logs = s.logs()
    assert u["alice"][0] not in logs, "a token was logged"


def t_bearer_tokens(s, u):
    alice = Client(s, bearer=u["alice"][0])
    st, _, b = alice.json("GET", "/api/session")
    assert st == 200 and b["user"] == "alice" and b["via"] == "token" and "csrf_token" not in b, b
    # a state change with a bearer token needs no CSRF token
    st, _, t = alice.create("[files] make the report")
    assert st == 201 and ID_RE.match(t["id"]), (st, t)
    assert t["preview_base"] == "/api/tasks/%s/preview/%s/" % (t["id"], t["preview_base"].split("/")[5]), t
    t = alice.wait(t["id"])
    assert t["status"] == "succeeded", t
    st, _, lst = alice.json("GET", "/api/tasks")
    assert st == 200 and t["id"] in [x["id"] for x in lst["tasks"]], lst
    s.alice_task = t["id"]
    s.alice_preview = t["preview_base"]


def cookie_attrs(set_cookie):
    parts = [p.strip() for p in set_cookie.split(";")]
    name, _, value = parts[0].partition("=")
    return name, value, {p.split("=")[0].lower(): (p.split("=", 1)[1] if "=" in p else True) for p in parts[1:]}


def t_login_cookie_flags(s, u):
    c = Client(s)
    st, h, b = c.login(u["alice"][0])
    assert st == 200 and b["user"] == "alice" and b["via"] == "session", (st, b)
    name, value, attrs = cookie_attrs(h["set-cookie"])
    assert name == "llmbox_session" and re.match(r"^[0-9a-f]{64}$", value), h["set-cookie"]
    assert attrs.get("httponly") is True and attrs.get("samesite") == "Strict", attrs
    assert attrs.get("path") == "/api/" and int(attrs.get("max-age")) == 604800, attrs
    assert "secure" not in attrs, "plain http: a Secure cookie would never come back"
    assert re.match(r"^[0-9a-f]{64}$", b["csrf_token"]) and b["csrf_token"] != value, b
    # the database holds the session id's hash, never the id
    db = sqlite3.connect(os.path.join(s.prefix, "var", "web", "llmbox.db"))
    rows = db.execute("SELECT id_sha256, user FROM sessions").fetchall()
    db.close()
    assert (hashlib.sha256(value.encode()).hexdigest(), "alice") in rows, rows
    assert not any(value in r[0] for r in rows)
    # over TLS (nginx's $https, or a proxy's X-Forwarded-Proto) the cookie is Secure
    st, h, _ = Client(s).login(u["alice"][0], {"X-Forwarded-Proto": "https"})
    assert st == 200 and cookie_attrs(h["set-cookie"])[2].get("secure") is True, h["set-cookie"]
    # the session works for reading, and says who
    st, _, b = c.json("GET", "/api/session")
    assert st == 200 and b["user"] == "alice" and b["csrf_token"] == c.csrf, b
    st, _, lst = c.json("GET", "/api/tasks")
    assert st == 200, st
    # a login is JSON from this origin only
    st, _, b = s.json_req("POST", "/api/login", "token=" + u["alice"][0],
                          {"Content-Type": "application/x-www-form-urlencoded"})
    assert st == 415, (st, b)
    st, _, b = Client(s).login(u["alice"][0], {"Sec-Fetch-Site": "cross-site"})
    assert st == 403 and error_code(b) == "csrf", (st, b)


def t_csrf_refusal(s, u):
    c = Client(s)
    assert c.login(u["bob"][0])[0] == 200
    # no CSRF token: refused, and no task was made
    st, _, b = c.create("[files] no token", csrf=False)
    assert st == 403 and error_code(b) == "csrf" and "CSRF" in b["error"]["message"], (st, b)
    good = c.csrf
    c.csrf = "0" * 64
    st, _, b = c.create("[files] wrong token")
    assert st == 403 and error_code(b) == "csrf", (st, b)
    c.csrf = good
    # the right token, but the browser says another site sent it
    st, _, b = c.create("[files] from elsewhere", headers={"Sec-Fetch-Site": "cross-site"})
    assert st == 403 and error_code(b) == "csrf", (st, b)
    st, _, b = c.create("[files] same site", headers={"Sec-Fetch-Site": "same-site"})
    assert st == 403, (st, b)
    # no Sec-Fetch-Site (an older browser): Origin must be this server
    st, _, b = c.create("[files] origin", headers={"Origin": "http://evil.example"})
    assert st == 403 and error_code(b) == "csrf", (st, b)
    st, _, lst = c.json("GET", "/api/tasks")
    assert lst["tasks"] == [], "a refused request made a task: %s" % lst
    # the page's own request: token, same origin
    st, _, t = c.create("[files] fine", headers={"Sec-Fetch-Site": "same-origin",
                                                 "Origin": "http://127.0.0.1:%d" % s.port})
    assert st == 201, (st, t)
    c.wait(t["id"])
    # DELETE and cancel are state changes too
    st, _, b = c.json("DELETE", "/api/tasks/" + t["id"], csrf=False)
    assert st == 403 and error_code(b) == "csrf", (st, b)
    st, _, b = c.json("POST", "/api/tasks/%s/rerun" % t["id"], csrf=False)
    assert st == 403, (st, b)
    st, _, b = c.json("DELETE", "/api/tasks/" + t["id"])
    assert st == 200 and b["deleted"], (st, b)


def t_logout_and_expiry(s, u):
    c = Client(s)
    assert c.login(u["bob"][0])[0] == 200
    # logout is a state change: the CSRF token is needed
    st, _, b = c.json("POST", "/api/logout", csrf=False)
    assert st == 403, (st, b)
    st, h, b = c.json("POST", "/api/logout")
    assert st == 200 and b["logged_out"] is True, (st, b)
    name, value, attrs = cookie_attrs(h["set-cookie"])
    assert value == "" and attrs.get("max-age") == "0", h["set-cookie"]
    st, h, b = c.json("GET", "/api/tasks")
    assert st == 401 and "log in again" in b["error"]["message"], (st, b)
    assert "max-age=0" in h.get("set-cookie", "").lower(), h
    # an expired session, and one whose token is no longer in llmbox.conf
    db_path = os.path.join(s.prefix, "var", "web", "llmbox.db")
    for change in ("UPDATE sessions SET expires_ms = 1 WHERE id_sha256 = ?",
                   "UPDATE sessions SET token_sha256 = '%s' WHERE id_sha256 = ?" % ("f" * 64)):
        c = Client(s)
        assert c.login(u["bob"][0])[0] == 200
        assert c.json("GET", "/api/tasks")[0] == 200
        db = sqlite3.connect(db_path)
        db.execute(change, (hashlib.sha256(c.cookie.split("=")[1].encode()).hexdigest(),))
        db.commit()
        db.close()
        st, _, b = c.json("GET", "/api/tasks")
        assert st == 401 and error_code(b) == "unauthorized", (change, st, b)
        # logging out of an ended session just clears the cookie
        st, h, b = c.json("POST", "/api/logout")
        assert st == 200 and b["logged_out"] is False and "max-age=0" in h["set-cookie"].lower(), (st, b)


def t_cross_user_404(s, u):
    tid = s.alice_task
    alice = Client(s, bearer=u["alice"][0])
    bob = Client(s, bearer=u["bob"][0])
    bob_web = Client(s)
    assert bob_web.login(u["bob"][0])[0] == 200
    routes = [("GET", "/api/tasks/%s"), ("GET", "/api/tasks/%s/events"), ("GET", "/api/tasks/%s/artifacts"),
              ("GET", "/api/tasks/%s/artifacts/report.html"), ("GET", "/api/tasks/%s/artifacts/pics/dot.svg"),
              ("GET", "/api/tasks/%s/bundle.zip"), ("GET", "/api/tasks/%s/bundle.tar.gz"),
              ("GET", "/api/tasks/%s/bundle.zip?path=pics"), ("GET", "/api/tasks/%s/trajectory"),
              ("HEAD", "/api/tasks/%s/artifacts/report.html"),
              ("POST", "/api/tasks/%s/cancel"), ("POST", "/api/tasks/%s/rerun"), ("DELETE", "/api/tasks/%s")]
    unknown = "0123456789abcdef0123456789abcdef"
    for who in (bob, bob_web):
        for method, path in routes:
            st, h, b = who.req(method, path % tid)
            st2, _, b2 = who.req(method, path % unknown)
            assert st == 404, (method, path, st, b)
            assert "x-accel-redirect" not in h, h
            if method != "HEAD":
                # word for word what an unknown task gets: nothing confirms the id exists
                assert b.replace(tid.encode(), b"ID") == b2.replace(unknown.encode(), b"ID"), (path, b, b2)
    # and after all that, alice's task is whole
    st, _, t = alice.json("GET", "/api/tasks/" + tid)
    assert st == 200 and t["status"] == "succeeded", (st, t)
    st, h, _ = alice.req("GET", "/api/tasks/%s/artifacts/report.html" % tid)
    assert st == 200 and "sandbox" in h.get("content-security-policy", ""), (st, h)
    st, _, body = alice.req("GET", "/api/tasks/%s/bundle.zip" % tid)
    assert st == 200 and body[:2] == b"PK", st
    st, h, b = alice.req("GET", "/api/tasks/%s/events" % tid)
    assert st == 200 and b"event: done" in b, (st, b[:200])
    # bob's list does not show it; rerun by alice works and the copy is hers
    st, _, lst = bob.json("GET", "/api/tasks")
    assert tid not in [x["id"] for x in lst["tasks"]], lst
    st, _, t2 = alice.json("POST", "/api/tasks/%s/rerun" % tid)
    assert st == 201 and t2["rerun_of"] == tid, (st, t2)
    assert bob.json("GET", "/api/tasks/" + t2["id"])[0] == 404
    alice.wait(t2["id"])


def t_list_isolation(s, u):
    carol = Client(s, bearer=u["carol"][0])
    dave = Client(s, bearer=u["dave"][0])
    mine = []
    for i in range(3):
        st, _, t = carol.create("carol %d" % i)
        assert st == 201, (st, t)
        mine.append(t["id"])
    st, _, t = dave.create("dave's")
    assert st == 201
    # paging walks carol's tasks only
    seen, q = [], "/api/tasks?limit=2"
    while True:
        st, _, page = carol.json("GET", q)
        assert st == 200, page
        seen += [x["id"] for x in page["tasks"]]
        if not page["next_before"]:
            break
        q = "/api/tasks?limit=2&before=%d&before_id=%s" % (page["next_before"], page["next_before_id"])
    assert seen == mine[::-1], (seen, mine)
    st, _, page = dave.json("GET", "/api/tasks")
    assert [x["id"] for x in page["tasks"]] == [t["id"]], page
    for tid in mine + [t["id"]]:
        (carol if tid in mine else dave).wait(tid)


def t_preview_links(s, u):
    tid, base = s.alice_task, s.alice_preview
    anon = Client(s)
    # no login: the key is the credential, for this task's artifacts only
    st, h, b = anon.req("GET", base + "report.html")
    assert st == 200 and b.decode() == REPORT_HTML, (st, b[:100])
    assert h["content-disposition"].startswith("inline"), h
    assert "sandbox" in h.get("content-security-policy", "") and h.get("referrer-policy") == "no-referrer", h
    st, h, b = anon.req("GET", base + "pics/dot.svg")  # what a relative <img src> in the page asks for
    assert st == 200 and b.decode() == DOT_SVG, st
    key = base.split("/")[5]
    bad = [base.replace(key, "0" * 32) + "report.html", base.replace(key, key[:31]) + "report.html",
           base + "../bundle.zip", base + "nothing.txt", base[:-1], base + "%2e%2e/trajectory",
           "/api/tasks/%s/preview/%s/report.html" % ("0" * 32, key)]
    for path in bad:
        st, _, b = anon.req("GET", path)
        assert st == 404, (path, st, b)
    st, _, b = anon.req("POST", base + "report.html")
    assert st == 405, st
    # the key shows only to the owner
    st, _, t = Client(s, bearer=u["alice"][0]).json("GET", "/api/tasks/" + tid)
    assert t["preview_base"] == base, t


def t_internal_location(s, u):
    """nginx serves artifacts only through X-Accel-Redirect from the backend."""
    tid = s.alice_task
    anon = Client(s, bearer=u["alice"][0])  # even the owner, even logged in
    for path in ("/_artifacts/%s/output/report.html" % tid, "/_artifacts/%s/trajectory.json" % tid,
                 "/_artifacts/%s/bundle.zip" % tid, "//_artifacts/%s/output/report.html" % tid,
                 "/%%5Fartifacts/%s/output/report.html" % tid, "/web/../_artifacts/%s/output/report.html" % tid,
                 "/_artifacts/", "/artifacts/%s/output/report.html" % tid):
        st, _, b = anon.req("GET", path)
        assert st in (400, 404), (path, st, b[:100])
        assert b"report" not in b, path
    # a client cannot send its own X-Accel-Redirect through the backend
    st, h, b = anon.req("GET", "/api/tasks/%s" % tid, headers={"X-Accel-Redirect": "/_artifacts/%s/output/report.html" % tid})
    assert st == 200 and json.loads(b)["id"] == tid, st


def t_limit_concurrent_429(s, u):
    erin = Client(s, bearer=u["erin"][0])  # max_tasks = 1
    st, _, t = erin.create("[long] think")
    assert st == 201, (st, t)
    st, h, b = erin.create("another")
    assert st == 429 and error_code(b) == "too_many_tasks", (st, b)
    assert "1 task queued or running" in b["error"]["message"], b
    # other users are not held back by erin's limit
    st, _, t2 = Client(s, bearer=u["carol"][0]).create("carol runs")
    assert st == 201, (st, t2)
    st, _, c = erin.json("POST", "/api/tasks/%s/cancel" % t["id"])
    assert st == 202, (st, c)
    erin.wait(t["id"])
    st, _, t3 = erin.create("now there is room")
    assert st == 201, (st, t3)
    erin.wait(t3["id"])
    # rerun counts as a start too
    st, _, t4 = erin.create("[long] again")
    assert st == 201
    st, _, b = erin.json("POST", "/api/tasks/%s/rerun" % t3["id"])
    assert st == 429 and error_code(b) == "too_many_tasks", (st, b)
    erin.json("POST", "/api/tasks/%s/cancel" % t4["id"])
    erin.wait(t4["id"])


def t_limit_rate_429(s, u):
    frank = Client(s, bearer=u["frank"][0])  # tasks_per_minute = 2
    # refused requests do not count: a missing prompt, a bad model
    for bad in ({"prompt": " "}, {"prompt": "x", "model": "nope"}):
        ctype, body = multipart(bad, [])
        st, _, b = frank.json("POST", "/api/tasks", body, {"Content-Type": ctype})
        assert st == 400, (st, b)
    ids = []
    for i in range(2):
        st, _, t = frank.create("frank %d" % i)
        assert st == 201, (i, st, t)
        ids.append(t["id"])
    st, h, b = frank.create("one too many")
    assert st == 429 and error_code(b) == "rate_limited", (st, b)
    assert "2 tasks in the last minute" in b["error"]["message"], b
    assert 1 <= int(h["retry-after"]) <= 60, h
    st, _, b = frank.json("POST", "/api/tasks/%s/rerun" % ids[0])
    assert st == 429 and error_code(b) == "rate_limited", (st, b)
    assert Client(s, bearer=u["dave"][0]).create("dave is fine")[0] == 201
    for tid in ids:
        frank.wait(tid)


def t_limit_upload_413(s, u):
    gina = Client(s, bearer=u["gina"][0])  # max_upload_mb = 1
    big = b"x" * ((1 << 20) + 1)
    st, _, b = gina.create("big", files=[("big.bin", big)])
    assert st == 413 and error_code(b) == "too_large", (st, b)
    assert "1 MiB per task for you" in b["error"]["message"], b
    # the same upload is fine for someone with the service's limit
    st, _, t = Client(s, bearer=u["dave"][0]).create("big for dave", files=[("big.bin", big)])
    assert st == 201, (st, t)
    # without Content-Length (chunked), the stream is cut at the limit
    ctype, body = multipart({"prompt": "chunked"}, [("files", "big.bin", big)])
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
    c.putrequest("POST", "/api/tasks")
    c.putheader("Content-Type", ctype)
    c.putheader("Authorization", "Bearer " + u["gina"][0])
    c.putheader("Transfer-Encoding", "chunked")
    c.endheaders()
    for i in range(0, len(body), 65536):
        part = body[i:i + 65536]
        c.send(b"%x\r\n%s\r\n" % (len(part), part))
    c.send(b"0\r\n\r\n")
    r = c.getresponse()
    b = json.loads(r.read())
    c.close()
    assert r.status == 413 and error_code(b) == "too_large", (r.status, b)
    st, _, info = gina.json("GET", "/api/info")
    assert info["limits"]["upload_bytes"] == 1 << 20, info["limits"]
    st, _, se = gina.json("GET", "/api/session")
    assert se["limits"] == {"max_tasks": 0, "tasks_per_minute": 0, "upload_bytes": 1 << 20}, se
    st, _, lst = gina.json("GET", "/api/tasks")
    assert lst["tasks"] == [], lst
    Client(s, bearer=u["dave"][0]).wait(t["id"])


def t_start_log_users(s, u):
    log = open(os.path.join(s.prefix, "var", "log", "web.log")).read()
    assert "7 users configured" in log, log[-2000:]
    assert "no users configured" not in log
    assert " user alice" in log, "the access log names the user"


# ---- without users -----------------------------------------------------------

def t_no_users_unchanged(s):
    st, b = s.get_json("/api/session")
    assert st == 200 and b["login_required"] is False and b["user"] is None, b
    st, t = s.create_task("[files] no login here")
    assert st == 201, (st, t)
    t = s.wait_task(t["id"])
    assert t["status"] == "succeeded", t
    for path in ("/api/tasks", "/api/tasks/%s/artifacts/report.html" % t["id"], "/api/tasks/%s/bundle.zip" % t["id"],
                 "/api/models", "/api/info"):
        st, _, _ = s.request("GET", path)
        assert st == 200, (path, st)
    # a cookie or token changes nothing, and a cookie-less POST needs no CSRF token
    st, _, _ = s.request("GET", "/api/tasks", headers={"Authorization": "Bearer lbx_whatever"})
    assert st == 200, st
    st, _, b = s.request("POST", "/api/tasks/%s/rerun" % t["id"])
    assert st == 201, (st, b)
    s.wait_task(json.loads(b)["id"])
    st, _, b = s.request("POST", "/api/login", json.dumps({"token": "x"}), {"Content-Type": "application/json"})
    assert st == 404 and b"no users" in b, (st, b)
    log = open(os.path.join(s.prefix, "var", "log", "web.log")).read()
    assert "no users configured: serving on 127.0.0.1 only, without login" in log, log[-1500:]
    # a client beyond loopback (nginx opened wider by hand; here nginx's
    # realip module makes X-Forwarded-For the client address): refused
    for path in ("/api/health", "/api/tasks", "/api/session", "/api/tasks/%s/artifacts/report.html" % t["id"]):
        st, _, b = s.request("GET", path, headers={"X-Forwarded-For": "192.0.2.7"})
        assert st == 403 and b"no users configured" in b, (path, st, b)
    st, _, b = s.request("POST", "/api/tasks", b"", {"X-Forwarded-For": "192.0.2.7", "Content-Type": "text/plain"})
    assert st == 403, (st, b)
    db = sqlite3.connect(os.path.join(s.prefix, "var", "web", "llmbox.db"))
    owners = {r[0] for r in db.execute("SELECT owner FROM tasks")}
    db.close()
    assert owners == {None}, owners


# ---- listen, from the command line -------------------------------------------

def run_llmbox(args, conf, env=None):
    d = tempfile.mkdtemp(prefix="llmbox-auth-conf-")
    path = os.path.join(d, "llmbox.conf")
    with open(path, "w") as f:
        f.write(conf)
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LLMBOX_CONF": path, "LLMBOX_HOME": d}
    e.update(env or {})
    p = subprocess.run([LLMBOX] + args, capture_output=True, text=True, env=e, timeout=30)
    subprocess.run(["rm", "-rf", d])
    return p.returncode, p.stdout + p.stderr


def t_listen_refused_without_users():
    for conf, env in (("listen = 0.0.0.0:8080\n", None), ("", {"LLMBOX_LISTEN": "[::]:8080"}),
                      ("listen = 192.0.2.7:80\n", None)):
        for args in (["config", "listen"], ["web"], ["config", "check"]):
            rc, out = run_llmbox(args, conf, env)
            assert rc == 1, (conf, env, args, rc, out)
            assert "without users llmbox has no login" in out and "llmbox user add" in out, out
    # loopback needs no user; anything else does, and then it is allowed
    rc, out = run_llmbox(["config", "listen"], "listen = 127.0.0.2:9000\n")
    assert rc == 0 and out.strip() == "127.0.0.2:9000", (rc, out)
    tok, hsh = new_user("ops")
    rc, out = run_llmbox(["config", "listen"], 'listen = 0.0.0.0:8080\n[user "ops"]\ntoken_sha256 = %s\n' % hsh)
    assert rc == 0 and out.strip() == "0.0.0.0:8080", (rc, out)
    # `user add` still works while the file is refused: it makes the first user
    rc, out = run_llmbox(["user", "add", "first"], "listen = 0.0.0.0:8080\n")
    assert rc == 0 and "lbx_" in out and '[user "first"]' in out, (rc, out)
    rc, out = run_llmbox(["config", "check"], "listen = localhost:80\n")
    assert rc == 1 and "ADDRESS:PORT" in out, out


def t_config_mistakes_named():
    _, hsh = new_user("x")
    cases = [
        ('[user "a"]\ntoken = lbx_abc\n', "tokens are never kept in llmbox.conf"),
        ('[user "a"]\ntoken_sha256 = lbx_%s\n' % ("0" * 64), "not the token itself"),
        ('[user "a"]\nmax_tasks = 2\n', "has no token_sha256"),
        ('[user "a"]\ntoken_sha256 = %s\n[user "b"]\ntoken_sha256 = %s\n' % (hsh, hsh), "a token names one user"),
        ('[user "a b"]\ntoken_sha256 = %s\n' % hsh, "a user name is"),
        ('token_sha256 = %s\n' % hsh, "is a user setting"),
        ('[user "a"]\ntoken_sha256 = %s\ncolour = red\n' % hsh, "unknown key 'colour'"),
    ]
    for conf, want in cases:
        rc, out = run_llmbox(["config", "check"], conf)
        assert rc == 1 and want in out, (conf, out)
        assert "lbx_abc" not in out, "a pasted token was echoed"


def main():
    rep = Reporter()
    rep.run("listen_refused_without_users", t_listen_refused_without_users)
    rep.run("config_mistakes_named", t_config_mistakes_named)
    if not image_ready():
        print("SKIP auth_stack: the sandbox image is not built")
        rep.done()
    users = {}
    extra = {"alice": [], "bob": [], "carol": [], "dave": [], "erin": ["max_tasks = 1"],
             "frank": ["tasks_per_minute = 2"], "gina": ["max_upload_mb = 1"]}
    for name, ex in extra.items():
        tok, hsh = new_user(name)
        users[name] = (tok, hsh, ex)
    # nginx's own limit on task starts per client address (30 a minute)
    # would stop this suite long before the per-user limits it tests
    fast = (("rate=30r/m", "rate=6000r/m"), ("burst=20", "burst=1000"))
    with Stack(scenario=SCENARIO, conf=users_conf(users), nginx_subst=fast) as s:
        s.json_req = lambda m, p, b, h: (lambda r: (r[0], r[1], json.loads(r[2]) if r[2] else None))(
            s.request(m, p, b, h))
        u = {k: (v[0], v[1]) for k, v in users.items()}
        rep.run("no_credentials_401", t_no_credentials, s, u)
        rep.run("wrong_token_401", t_wrong_token_401, s, u)
        rep.run("bearer_tokens", t_bearer_tokens, s, u)
        rep.run("login_cookie_flags", t_login_cookie_flags, s, u)
        rep.run("csrf_refusal", t_csrf_refusal, s, u)
        rep.run("logout_and_expiry", t_logout_and_expiry, s, u)
        if hasattr(s, "alice_task"):
            rep.run("cross_user_404_every_route", t_cross_user_404, s, u)
            rep.run("preview_links", t_preview_links, s, u)
            rep.run("internal_location_unreachable", t_internal_location, s, u)
        rep.run("list_isolation", t_list_isolation, s, u)
        rep.run("limit_concurrent_429", t_limit_concurrent_429, s, u)
        rep.run("limit_rate_429", t_limit_rate_429, s, u)
        rep.run("limit_upload_413", t_limit_upload_413, s, u)
        rep.run("start_log_names_users", t_start_log_users, s, u)
    realip = (("        server_name localhost;",
               "        server_name localhost;\n        set_real_ip_from 127.0.0.1;\n"
               "        real_ip_header X-Forwarded-For;"),)
    with Stack(scenario=SCENARIO, nginx_subst=realip) as s:
        rep.run("no_users_mode_unchanged", t_no_users_unchanged, s)
    rep.done()


if __name__ == "__main__":
    main()
