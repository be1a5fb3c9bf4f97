#!/usr/bin/env python3
"""Drive-by use of the web, without a browser: DNS rebinding (a Host that
is not ours), cross-site and opaque-origin (Origin: null) requests that
change state, with and without users; what an anonymous /api/health
shows; log file modes and the preview keys kept out of the logs; the CSP
sandbox on every way an artifact is served.

Runs on the harness of tests/integration/test_web.py (the real nginx.conf
and `llmbox web`, no sandbox, no model: an agent started by a task fails
at once, which does not matter here: the task row is what counts). Each
check prints PASS/FAIL. tests/browser/origin_e2e.mjs does the same
attacks in real Chromium.
"""
import hashlib
import json
import os
import pwd
import stat
import subprocess
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import test_web  # noqa: E402
from test_web import Env, expect_error, multipart  # noqa: E402
from test_tasks_files import finished_task_with_outputs  # noqa: E402

REPO = test_web.REPO
ALLOWED = "llmbox.example, Proxy.Example:8443"
TOKEN = "lbx_" + uuid.uuid4().hex + uuid.uuid4().hex
EVIL_HTML = (b'<!doctype html><script>fetch("/api/tasks",{method:"POST",body:new FormData()})</script>')
EVIL_SVG = (b'<svg xmlns="http://www.w3.org/2000/svg"><script>fetch("/api/tasks",{method:"POST"})</script></svg>')


def prepare(prefix):
    """As scripts/run.sh does before starting anything."""
    subprocess.check_call([os.path.join(REPO, "scripts", "prepare-dirs.sh"), pwd.getpwuid(os.geteuid()).pw_name],
                          cwd=prefix, stdout=subprocess.DEVNULL)


class NoUsers(Env):
    extra_env = {"LLMBOX_ALLOWED_HOSTS": ALLOWED}
    before_web = staticmethod(prepare)


class WithUsers(Env):
    @staticmethod
    def before_web(prefix):
        prepare(prefix)
        with open(os.path.join(prefix, "llmbox.conf"), "w") as f:
            f.write('[user "alice"]\ntoken_sha256 = %s\n' % hashlib.sha256(TOKEN.encode()).hexdigest())


def count_tasks(E):
    return E.db.execute("SELECT COUNT(*) FROM tasks").fetchone()[0]


def post_task(E, headers=None, prompt="drive-by"):
    ctype, body = multipart([("prompt", prompt)], [])
    h = {"Content-Type": ctype}
    h.update(headers or {})
    st, _, b = E.req("POST", "/api/tasks", body, h)
    return st, json.loads(b) if b else None


def bearer(extra=None):
    h = {"Authorization": "Bearer " + TOKEN}
    h.update(extra or {})
    return h


# ------------------------------------------------------------ no users

def t_rebinding_host_refused(E):
    """A DNS-rebinding page: Host attacker.example on loopback, every route."""
    tid = E.insert_task("succeeded", prompt="a secret prompt", answer="a secret answer")
    for host in ("attacker.example:%d" % E.port, "attacker.example", "localhost.attacker.example",
                 "127.0.0.1.nip.io:%d" % E.port, "proxy.example:9999", "[::2]:%d" % E.port):
        for method, path in (("GET", "/api/tasks"), ("GET", "/api/tasks/" + tid),
                             ("GET", "/api/tasks/%s/trajectory" % tid), ("GET", "/api/health"),
                             ("GET", "/api/models"), ("GET", "/api/sandboxes"), ("GET", "/metrics"),
                             ("POST", "/api/tasks/%s/cancel" % tid), ("DELETE", "/api/tasks/" + tid)):
            st, _, b = E.req(method, path, headers={"Host": host})
            assert b"secret" not in b, (host, path, b[:200])
            expect_error(st, json.loads(b), 403, "host_not_allowed")
    before = count_tasks(E)
    st, b = post_task(E, {"Host": "attacker.example:%d" % E.port})
    expect_error(st, b, 403, "host_not_allowed")
    assert "allowed_hosts" in b["error"]["message"], b
    assert count_tasks(E) == before


def t_our_hosts_answered(E):
    for host in ("127.0.0.1:%d" % E.port, "localhost:%d" % E.port, "LOCALHOST:%d" % E.port,
                 "localhost:9000", "[::1]:%d" % E.port, "127.0.0.1", "llmbox.example", "llmbox.example:1234",
                 "proxy.example:8443"):
        st, _, b = E.req("GET", "/api/tasks", headers={"Host": host})
        assert st == 200, (host, st, b[:300])


def t_origin_null_refused(E):
    """A generated html/svg file's script: Origin null, on every state change."""
    tid = E.insert_task("running")
    before = count_tasks(E)
    for h in ({"Origin": "null"}, {"Origin": "null", "Sec-Fetch-Site": "cross-site"}):
        st, b = post_task(E, h)
        expect_error(st, b, 403, "csrf")
        assert "opaque" in b["error"]["message"] or "another page" in b["error"]["message"], b
        for method, path in (("POST", "/api/tasks/%s/cancel" % tid), ("POST", "/api/tasks/%s/rerun" % tid),
                             ("DELETE", "/api/tasks/" + tid), ("POST", "/api/sandboxes")):
            st, _, body = E.json(method, path, b"{}", dict(h, **{"Content-Type": "application/json"}))
            expect_error(st, body, 403, "csrf")
    assert count_tasks(E) == before
    st, _, t = E.json("GET", "/api/tasks/" + tid)
    assert st == 200 and t["status"] == "running", t


def t_cross_origin_refused(E):
    """Another origin on this machine (another port), a same-site page, any site."""
    before = count_tasks(E)
    for h in ({"Origin": "http://127.0.0.1:%d" % test_web.free_port()},
              {"Origin": "http://localhost:%d" % E.port},   # same machine, another origin than Host
              {"Origin": "http://attacker.example"},
              {"Sec-Fetch-Site": "cross-site"},
              {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:%d" % E.port},
              {"Sec-Fetch-Site": "none"}):
        st, b = post_task(E, h)
        expect_error(st, b, 403, "csrf")
    assert count_tasks(E) == before


def t_page_and_scripts_accepted(E):
    """The page itself (same-origin), a proxy name of allowed_hosts, and
    clients that send no Origin (curl, these tests) start tasks."""
    before = count_tasks(E)
    for h in ({}, {"Origin": "http://127.0.0.1:%d" % E.port},
              {"Origin": "http://127.0.0.1:%d" % E.port, "Sec-Fetch-Site": "same-origin"},
              {"Origin": "https://llmbox.example"},
              {"Origin": "https://proxy.example:8443"}):
        st, b = post_task(E, h)
        assert st == 201, (h, st, b)
    assert count_tasks(E) == before + 5


def t_health_full_without_users(E):
    """Without users whoever gets here can read every task: the full answer."""
    st, _, h = E.json("GET", "/api/health")
    assert st == 200 and h["model"].get("url") and "tasks" in h and h.get("detail") == "full", h


def t_log_modes(E):
    """var/log 0750, its logs not world-readable (nginx makes its own 0644)."""
    E.req("GET", "/api/tasks")
    E.req("GET", "/no-such-file")
    d = os.path.join(E.prefix, "var", "log")
    mode = stat.S_IMODE(os.stat(d).st_mode)
    assert mode & 0o007 == 0, "var/log is %o" % mode
    for n in ("nginx-access.log", "nginx-error.log", "web.log", "sandboxd.log"):
        p = os.path.join(d, n)
        assert os.path.exists(p), "%s was not made" % n
        m = stat.S_IMODE(os.stat(p).st_mode)
        assert m & 0o007 == 0, "%s is %o" % (n, m)
    wl = os.path.join(E.prefix, "var", "web", "log")
    assert stat.S_IMODE(os.stat(wl).st_mode) & 0o007 == 0


def t_preview_key_not_logged(E):
    """Error answers on preview links (an unknown file; a listed file gone
    from the disk, which nginx itself fails to open) keep the key out of
    nginx's access and error logs and the web's own log."""
    tid, out = finished_task_with_outputs(E, {"page.html": b"<p>hi</p>", "gone.html": b"x"})
    os.unlink(os.path.join(out, "gone.html"))
    st, _, t = E.json("GET", "/api/tasks/" + tid)
    base = t["preview_base"]
    key = base.rstrip("/").rsplit("/", 1)[1]
    assert len(key) == 32, base
    for rest, want in (("page.html", 200), ("missing.html", 404), ("gone.html", 404), ("a/../../x", None)):
        st, _, _ = E.req("GET", base + rest)
        assert want is None or st == want, (rest, st)
    st, _, _ = E.req("POST", base + "page.html")  # 405
    import time
    time.sleep(0.3)  # nginx writes its access line after the answer
    d = os.path.join(E.prefix, "var", "log")
    for n in ("nginx-access.log", "nginx-error.log", "web.out"):
        txt = open(os.path.join(d, n), errors="replace").read()
        assert key not in txt, "the preview key is in %s: %s" % (
            n, [ln for ln in txt.splitlines() if key in ln][:2])
    acc = open(os.path.join(d, "nginx-access.log")).read()
    assert "/preview/-/missing.html" in acc, acc[-1000:]


def t_csp_sandbox_everywhere(E):
    """Every way an artifact is served sends CSP sandbox without
    allow-same-origin, so its scripts never run as the page's origin."""
    tid, _ = finished_task_with_outputs(E, {"evil.html": EVIL_HTML, "evil.svg": EVIL_SVG})
    st, _, t = E.json("GET", "/api/tasks/" + tid)
    st, _, a = E.json("GET", "/api/tasks/%s/artifacts" % tid)
    links = {x["path"]: x.get("download_url") for x in a["artifacts"]}
    for name in ("evil.html", "evil.svg"):
        urls = [t["preview_base"] + name, "/api/tasks/%s/artifacts/%s" % (tid, name),
                "/api/tasks/%s/artifacts/%s?inline=1" % (tid, name)]
        if links.get(name):
            urls.append(links[name])
        for u in urls:
            st, h, _ = E.req("GET", u)
            csp = h.get("content-security-policy", "")
            assert st == 200 and "sandbox" in csp and "allow-same-origin" not in csp, (u, st, csp)
            assert h.get("x-content-type-options") == "nosniff", (u, h)


# ------------------------------------------------------------ with users

def t_users_opaque_and_cross_site_refused(E):
    """With users, a token does not make a request from a generated file or
    another site acceptable either."""
    before = count_tasks(E)
    for h in ({"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}, {"Origin": "http://attacker.example"}):
        st, b = post_task(E, bearer(h))
        expect_error(st, b, 403, "csrf")
    for h in ({"Origin": "null"}, {"Sec-Fetch-Site": "same-site"}):
        st, _, b = E.json("POST", "/api/login", json.dumps({"token": TOKEN}).encode(),
                          dict(h, **{"Content-Type": "application/json"}))
        expect_error(st, b, 403, "csrf")
    assert count_tasks(E) == before
    st, b = post_task(E, bearer())
    assert st == 201, (st, b)


def t_users_rebinding_refused(E):
    st, _, b = E.json("GET", "/api/tasks", headers=bearer({"Host": "attacker.example:%d" % E.port}))
    expect_error(st, b, 403, "host_not_allowed")


def t_users_health_trimmed(E):
    """Anonymous: whether it works, no URL, no model, no counts, no paths.
    With a token: everything."""
    st, _, raw = E.req("GET", "/api/health")
    h = json.loads(raw)
    assert st == 200 and h["ok"] is True, h
    assert isinstance(h["sandboxd"]["ok"], bool) and isinstance(h["model"]["reachable"], bool), h
    for k in ("tasks", "pool", "sandbox_api"):
        assert k not in h, (k, h)
    for k in ("url", "model", "name"):
        assert k not in h["model"], (k, h)
    assert set(h["sandboxd"]) <= {"ok", "message"}, h
    assert b"http" not in raw and b"127.0.0.1" not in raw and b".sock" not in raw, raw
    assert h.get("detail") == "public", h
    st, _, full = E.json("GET", "/api/health", headers=bearer())
    assert st == 200 and full["model"].get("url") and "tasks" in full and full["detail"] == "full", full
    # a wrong token is anonymous, not an error: health needs no login
    st, _, h2 = E.json("GET", "/api/health", headers={"Authorization": "Bearer lbx_wrong"})
    assert st == 200 and "tasks" not in h2, h2


def main():
    if not os.access(test_web.BIN, os.X_OK):
        print("FAIL setup: %s is not built" % test_web.BIN)
        return 1
    E = NoUsers()
    rc = test_web.run_on_env(E, [(t, E) for t in (
        t_rebinding_host_refused, t_our_hosts_answered, t_origin_null_refused, t_cross_origin_refused,
        t_page_and_scripts_accepted, t_health_full_without_users, t_log_modes, t_preview_key_not_logged,
        t_csp_sandbox_everywhere)])
    U = WithUsers()
    rc2 = test_web.run_on_env(U, [(t, U) for t in (
        t_users_opaque_and_cross_site_refused, t_users_rebinding_refused, t_users_health_trimmed)])
    return rc or rc2


if __name__ == "__main__":
    sys.exit(main())
