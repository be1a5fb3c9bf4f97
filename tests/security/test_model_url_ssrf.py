#!/usr/bin/env python3
"""Security: a rollout's own model_url (rollout_allow_model_url = 1) is a
request the service makes to a URL a client chose, from the service's
host. It must not become a way to read that host's loopback-only or
private services.

- By default (rollout_model_url_allow = public) a model_url aimed at a
  loopback service, by address or by a name that resolves there
  ("localhost"), reaches nothing: the service sees no request, and the
  sample's error and the task's reason say the target is not allowed.
- Where the operator allows the target (rollout_model_url_allow =
  127.0.0.1), the answer of a service that is not a model (an HTML page,
  404 or 200) is never quoted into the sample's error or the task's
  reason: only its status and size are told.
- A list the service cannot read is refused when the configuration loads,
  with a sentence that names the key.

Against the real stack (fake model, sandboxd, web, nginx); the target is
a small HTTP server of this test on loopback whose every answer holds a
secret marker.

    python3 tests/security/test_model_url_ssrf.py
"""
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stack import LLMBOX, Reporter, Stack, image_ready  # noqa: E402

TOKEN = "ssrf-" + uuid.uuid4().hex
AUTH = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
SECRET = "LOOPBACK-ONLY-" + uuid.uuid4().hex
CONF = "[model \"m\"]\nbase_url = {model_url}\nmodel = m-id\nretries = 0\n"


class Target:
    """A loopback-only service: every answer is a page holding SECRET;
    /ok/... answers 200, anything else 404."""

    def __init__(self):
        self.hits = 0
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def _answer(self):
                outer.hits += 1
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(n)
                body = ("<html><body>admin console: %s</body></html>" % SECRET).encode()
                self.send_response(200 if self.path.startswith("/ok/") else 404)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def call(s, method, path, body=None, timeout=60):
    data = json.dumps(body).encode() if body is not None else None
    st, _, raw = s.request(method, path, data, AUTH, timeout=timeout)
    return st, json.loads(raw) if raw else None


def run_sample(s, url):
    """One sample of a group on model url: (sample, its task)."""
    st, g = call(s, "POST", "/api/rollouts", {"prompt": "say hi", "n": 1, "model": "m", "model_url": url,
                                              "max_turns": 2})
    assert st == 201, (st, g)
    deadline = time.time() + 120
    while time.time() < deadline:
        st, g = call(s, "GET", "/api/rollouts/%s?wait=5" % g["id"])
        assert st == 200, (st, g)
        if g["status"] != "running":
            break
    x = g["samples"][0]
    assert x["status"] == "done", g
    st, t = call(s, "GET", "/api/tasks/" + x["task_id"])
    assert st == 200, (st, t)
    return x, t


def assert_not_quoted(x, t):
    for where, text in (("the sample's error", x.get("error") or ""), ("the task's reason", t.get("reason") or "")):
        assert SECRET not in text and "admin console" not in text, "%s quotes the target's answer: %r" % (where, text)


def test_loopback_address_is_refused(s, target):
    before = target.hits
    x, t = run_sample(s, "http://127.0.0.1:%d/v1?x=/admin" % target.port)
    assert_not_quoted(x, t)
    assert target.hits == before, "the loopback service was reached (%d requests)" % (target.hits - before)
    assert x["outcome"] == "model_error", x
    assert "rollout_model_url_allow" in (t.get("reason") or ""), t.get("reason")


def test_name_that_resolves_to_loopback_is_refused(s, target):
    before = target.hits
    x, t = run_sample(s, "http://localhost:%d/v1" % target.port)
    assert_not_quoted(x, t)
    assert target.hits == before, "a name resolving to loopback reached it (%d requests)" % (target.hits - before)
    assert "rollout_model_url_allow" in (t.get("reason") or ""), t.get("reason")


def test_allowed_target_answer_is_not_quoted(s, target):
    before = target.hits
    x, t = run_sample(s, "http://127.0.0.1:%d/v1?x=/admin" % target.port)
    assert target.hits > before, "the allowed target was not asked: %r" % t.get("reason")
    assert_not_quoted(x, t)
    assert "HTTP 404" in (t.get("reason") or ""), t.get("reason")
    before = target.hits
    x, t = run_sample(s, "http://127.0.0.1:%d/ok/v1" % target.port)
    assert target.hits > before, t.get("reason")
    assert_not_quoted(x, t)
    assert "not JSON" in (t.get("reason") or ""), t.get("reason")


def test_unreadable_list_is_refused_at_load(_s=None, _t=None):
    home = tempfile.mkdtemp(prefix="llmbox-ssrf-")
    try:
        env = dict(os.environ, LLMBOX_HOME=home)
        ok = subprocess.run([LLMBOX, "config", "listen"], env=env, capture_output=True, text=True, timeout=30)
        assert ok.returncode == 0, ok.stderr  # the same home loads without the bad list
        env["LLMBOX_ROLLOUT_MODEL_URL_ALLOW"] = "10.0.0.0/33"
        p = subprocess.run([LLMBOX, "config", "listen"], env=env, capture_output=True, text=True, timeout=30)
        assert p.returncode != 0, p.stdout
        assert "ROLLOUT_MODEL_URL_ALLOW" in p.stderr.upper() and "32" in p.stderr, p.stderr
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main():
    rep = Reporter()
    rep.run("model_url_ssrf/unreadable_list_is_refused_at_load", test_unreadable_list_is_refused_at_load)
    if not image_ready():
        print("SKIP model_url_ssrf: the sandbox image is not built (make image)")
        rep.done()
    target = Target()
    try:
        env = {"LLMBOX_ROLLOUT_ALLOW_MODEL_URL": "1"}
        with Stack(conf=CONF, env=env, web_env={"LLMBOX_SANDBOX_API_TOKEN": TOKEN}) as s:
            rep.run("model_url_ssrf/loopback_address_is_refused", test_loopback_address_is_refused, s, target)
            rep.run("model_url_ssrf/name_that_resolves_to_loopback_is_refused",
                    test_name_that_resolves_to_loopback_is_refused, s, target)
        env["LLMBOX_ROLLOUT_MODEL_URL_ALLOW"] = "127.0.0.1"
        with Stack(conf=CONF, env=env, web_env={"LLMBOX_SANDBOX_API_TOKEN": TOKEN}) as s:
            rep.run("model_url_ssrf/allowed_target_answer_is_not_quoted", test_allowed_target_answer_is_not_quoted,
                    s, target)
    finally:
        target.close()
    rep.done()


if __name__ == "__main__":
    main()
