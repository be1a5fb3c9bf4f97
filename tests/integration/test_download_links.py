#!/usr/bin/env python3
"""Signed download links: nginx serves artifact downloads on its own.

The backend lists a task's files with a download_url each,
/dl/{task}/{path}?e={expires}&s={signature}; nginx checks the signature
(secure_link) and sends the file. These checks hold the contract users
rely on: a link gives exactly its file's bytes as a download, a link that
was changed, cut, moved to another file or task, or has expired gives a
JSON error and no byte of any file, and nothing outside the task's output
(no symlink) is ever served. Runs on the harness of test_web.py (the real
nginx.conf and `llmbox web`, no sandbox).
"""
import base64
import json
import hashlib
import os
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_web  # noqa: E402
from test_web import Env, expect_error  # noqa: E402
from test_tasks_files import finished_task_with_outputs  # noqa: E402


def key_of(E):
    return open(os.path.join(E.prefix, "var", "web", "download.key")).read().strip()


def sign(key, expires, tid, path):
    """The signature as docs/ARCHITECTURE.md defines it (and nginx checks it)."""
    msg = ("%d/dl/%s/%s %s" % (expires, tid, path, key)).encode()
    return base64.urlsafe_b64encode(hashlib.md5(msg).digest()).decode().rstrip("=")


def link(tid, path, expires, sig):
    return "/dl/%s/%s?e=%d&s=%s" % (tid, urllib.parse.quote(path), expires, sig)


def listed(E, tid):
    st, _, t = E.json("GET", "/api/tasks/" + tid)
    assert st == 200, (st, t)
    st, _, a = E.json("GET", "/api/tasks/%s/artifacts" % tid)
    assert st == 200, (st, a)
    return {x["path"]: x for x in t["artifacts"]}, {x["path"]: x for x in a["artifacts"]}


NAMES = {
    "a.txt": b"alpha\n",
    "plots/fig 1.png": b"\x89PNG\r\n\x1a\n" + os.urandom(3000),
    "odd/%41+b#c?d;e.bin": os.urandom(100),
    "unicode/\u00e9t\u00e9 \u65e5\u672c.html": "<script>alert(1)</script>".encode(),
}


def t_links_serve_the_files(E):
    tid, _ = finished_task_with_outputs(E, NAMES)
    from_task, from_list = listed(E, tid)
    assert set(from_task) == set(NAMES) == set(from_list), (from_task.keys(), from_list.keys())
    for name, data in NAMES.items():
        a = from_list[name]
        assert a["download_url"] == from_task[name]["download_url"], "two lists in one minute: one link"
        assert a["download_expires"] > time.time() + 3000, a
        st, h, body = E.req("GET", a["download_url"])
        assert st == 200 and body == data, (name, st, body[:80])
        # always a download, never a page of this origin
        assert h.get("content-type") == "application/octet-stream", h
        assert h.get("content-disposition") == "attachment", h
        assert h.get("x-content-type-options") == "nosniff", h
        assert h.get("content-security-policy") == "sandbox", h
        assert h.get("etag") and "content-encoding" not in h, h
    # ranges and revalidation, as for a static file
    url = from_list["plots/fig 1.png"]["download_url"]
    st, h, body = E.req("GET", url, headers={"Range": "bytes=0-7"})
    assert st == 206 and body == NAMES["plots/fig 1.png"][:8], (st, body)
    st, h, _ = E.req("GET", url)
    st, _, body = E.req("GET", url, headers={"If-None-Match": h["etag"]})
    assert st == 304 and body == b"", st
    # the link the server signed is the one this test computes from the key
    e = from_list["a.txt"]["download_expires"]
    assert from_list["a.txt"]["download_url"] == link(tid, "a.txt", e, sign(key_of(E), e, tid, "a.txt"))
    # no request reached the backend for those downloads
    web_log = open(os.path.join(E.prefix, "var", "log", "web.out"), errors="replace").read()
    assert "/dl/" not in web_log, "a download went through the backend"


def t_tampered_links_refused(E):
    tid, _ = finished_task_with_outputs(E, {"a.txt": b"secret-a", "b.txt": b"secret-b"})
    other, _ = finished_task_with_outputs(E, {"a.txt": b"other-a"})
    _, from_list = listed(E, tid)
    a = from_list["a.txt"]
    e = a["download_expires"]
    sig = urllib.parse.parse_qs(urllib.parse.urlsplit(a["download_url"]).query)["s"][0]
    bad = [
        link(tid, "b.txt", e, sig),                      # another file of the task
        link(other, "a.txt", e, sig),                    # the same name in another task
        link(tid, "a.txt", e + 3600, sig),               # a later expiry
        link(tid, "a.txt", e, sig[:-1]),                 # cut short
        link(tid, "a.txt", e, sig[:-2] + ("AA" if sig[-2:] != "AA" else "BB")),
        "/dl/%s/a.txt?e=%d" % (tid, e),                 # no signature
        "/dl/%s/a.txt?s=%s" % (tid, sig),                # no expiry
        "/dl/%s/a.txt" % tid,
        "/dl/%s/x/../a.txt?e=%d&s=%s" % (tid, e, sig),   # dot segments: nginx resolves, the link still names a.txt
        "/dl/%s/%%2e%%2e/%s/a.txt?e=%d&s=%s" % (tid, other, e, sig),
    ]
    for url in bad:
        st, h, body = E.req("GET", url)
        if url.startswith("/dl/%s/x/../a.txt" % tid):
            # resolves to /dl/{tid}/a.txt, which this signature does sign
            assert st == 200 and body == b"secret-a", (url, st)
            continue
        assert st == 403, (url, st, body[:200])
        assert b"secret" not in body and b"other-a" not in body, url
        st2, _, j = E.json("GET", url)
        expect_error(st2, j, 403, "forbidden")
    # expired: a correct signature of a time already past
    past = int(time.time()) - 5
    st, _, j = E.json("GET", link(tid, "a.txt", past, sign(key_of(E), past, tid, "a.txt")))
    expect_error(st, j, 410, "link_expired")
    # signed with another key
    st, _, j = E.json("GET", link(tid, "a.txt", e, sign("0" * 64, e, tid, "a.txt")))
    expect_error(st, j, 403, "forbidden")


def t_only_the_task_output(E):
    """A valid signature never reaches beyond the task's output folder."""
    tid, out = finished_task_with_outputs(E, {"a.txt": b"a", "d/b.txt": b"b"})
    key = key_of(E)
    e = int(time.time()) + 600
    # a symlink where a file was (the output is the sandbox's: hostile)
    os.unlink(os.path.join(out, "a.txt"))
    os.symlink("/etc/passwd", os.path.join(out, "a.txt"))
    os.rename(os.path.join(out, "d"), os.path.join(out, "d.real"))
    os.symlink("/etc", os.path.join(out, "d"))
    for path in ("a.txt", "d/b.txt", "d/passwd"):
        st, _, body = E.req("GET", link(tid, path, e, sign(key, e, tid, path)))
        assert st in (403, 404) and b"root:" not in body, (path, st, body[:100])
    # the task's other files (trajectory, inputs) are not under output/
    open(os.path.join(E.task_dir(tid), "secret.txt"), "w").write("nope")
    for path in ("../secret.txt", "../trajectory.json"):
        st, _, body = E.req("GET", link(tid, path, e, sign(key, e, tid, path)))
        assert st in (403, 404) and b"nope" not in body and b"turns" not in body, (path, st, body[:100])
    # a task id that is not one
    st, _, body = E.req("GET", "/dl/..%2f..%2fvar/web/download.key?e=1&s=x")
    assert st in (400, 403, 404) and key.encode() not in body, st


def t_odd_requests_json(E):
    """Every answer under /dl/ that is not the file is a JSON error."""
    tid, _ = finished_task_with_outputs(E, {"a.txt": b"hello"})
    _, from_list = listed(E, tid)
    url = from_list["a.txt"]["download_url"]
    st, h, body = E.req("HEAD", url)
    assert st == 200 and body == b"" and h.get("content-length") == "5", (st, h)
    cases = [("POST", url, {}, 405), ("PUT", url, {}, 405), ("DELETE", url, {}, 405), ("OPTIONS", url, {}, 405),
             ("GET", url, {"Range": "bytes=100-200"}, 416), ("GET", "/dl/", {}, 404), ("GET", "/dl/" + tid, {}, 404),
             ("GET", "/dl/%s/" % tid, {}, 404), ("GET", "/dl/NOTANID/a.txt", {}, 404),
             ("GET", url.replace("a.txt", "a%00.txt"), {}, 400)]
    for method, u, headers, want in cases:
        st, _, body = E.req(method, u, headers=headers)
        try:
            j = json.loads(body)
        except ValueError:
            raise AssertionError("%s %s -> %d, not JSON: %r" % (method, u, st, body[:100]))
        expect_error(st, j, want)
        assert b"hello" not in body
    # the API route answers a bad range in JSON too
    st, _, body = E.req("GET", "/api/tasks/%s/artifacts/a.txt" % tid, headers={"Range": "bytes=100-200"})
    assert st == 416 and body.startswith(b'{"error"'), (st, body[:100])


def t_deleted_task_link_gone(E):
    tid, _ = finished_task_with_outputs(E, {"a.txt": b"a"})
    _, from_list = listed(E, tid)
    url = from_list["a.txt"]["download_url"]
    st, _, _ = E.req("GET", url)
    assert st == 200, st
    st, _, _ = E.json("DELETE", "/api/tasks/" + tid)
    assert st == 200, st
    # nginx keeps open files for reuse and looks at them again after 1 s
    # (open_file_cache_valid): the link stops within that second
    deadline = time.time() + 3
    while True:
        st, _, body = E.req("GET", url)
        if st != 200 or time.time() > deadline:
            break
        time.sleep(0.1)
    expect_error(st, json.loads(body) if st != 200 else None, 404, "not_found")


def t_no_links_without_key_or_ttl(_unused):
    """download_link_ttl_s = 0: no links, a line in the log saying why, and
    downloads through the API as before. Several nodes: no key file, or a bad
    one, no longer turns links off: the key is the store's (made by the
    first web), the web writes it to the file, and a link nginx (started
    with the old file) cannot check goes through the backend's check."""
    cases = [("ttl 0", {"LLMBOX_DOWNLOAD_LINK_TTL_S": "0"}, None, "download links are off (download_link_ttl_s = 0)"),
             ("no key", {}, lambda p: os.unlink(os.path.join(p, "var", "web", "download.key")),
              "now holds the download key shared through the store (it held none)"),
             ("bad key", {}, lambda p: open(os.path.join(p, "var", "web", "download.key"), "w").write("short\n"),
              "now holds the download key shared through the store (it held none)")]
    for label, env, hook, needle in cases:
        E2 = Env()
        E2.extra_env = env
        E2.before_web = hook
        try:
            E2.start()
            tid, _ = finished_task_with_outputs(E2, {"a.txt": b"via-api"})
            from_task, from_list = listed(E2, tid)
            log = open(os.path.join(E2.prefix, "var", "log", "web.out"), errors="replace").read()
            assert needle in log, (label, log[-2000:])
            st, _, body = E2.req("GET", "/api/tasks/%s/artifacts/a.txt" % tid)
            assert st == 200 and body == b"via-api", (label, st)
            if label == "ttl 0":
                assert "download_url" not in from_task["a.txt"] and "download_url" not in from_list["a.txt"], label
                continue
            key = open(os.path.join(E2.prefix, "var", "web", "download.key")).read()
            assert len(key) == 65 and key.endswith("\n") and all(c in "0123456789abcdef" for c in key[:64]), label
            assert key[:64] not in log, "the key is in the log"
            st, _, body = E2.req("GET", from_list["a.txt"]["download_url"])
            assert st == 200 and body == b"via-api", (label, st, body[:200])
        finally:
            E2.stop()


def t_bad_stored_secret_stops_web(_unused):
    """Several nodes: a secret in the store that is not hex (written by hand)
    is never used: `llmbox web` stops at start with a sentence saying
    which and how to mend it, and no part of the value in it."""
    import shutil
    import sqlite3
    import tempfile
    home = tempfile.mkdtemp(prefix="llmbox-secret-")
    try:
        db = os.path.join(home, "t.db")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LLMBOX_HOME": home, "LLMBOX_DB": db,
               "LLMBOX_WEB_USER": "", "LLMBOX_WEB_SOCKET": os.path.join(home, "web.sock")}
        # the store made as a web would find it (every migration, a preview
        # secret), then its value spoiled by hand
        r = subprocess.run([test_web.BIN, "secrets", "rotate", "preview"], env=env, capture_output=True,
                           text=True, timeout=60, cwd="/")
        assert r.returncode == 0, (r.returncode, (r.stdout + r.stderr)[-2000:])
        c = sqlite3.connect(db)
        n = c.execute("UPDATE web_secrets SET value = 'NOT-A-KEY-9f8e7d' WHERE name = 'preview'").rowcount
        c.commit()
        c.close()
        assert n == 1, "no preview secret after a rotation: %d rows" % n
        r = subprocess.run([test_web.BIN, "web"], env=env, capture_output=True, text=True, timeout=60, cwd="/")
        out = r.stdout + r.stderr
        assert r.returncode == 1, (r.returncode, out[-2000:])
        assert "cannot read or make the shared secrets" in out and "is not 32 to 127 lowercase hex" in out \
            and "DELETE FROM web_secrets WHERE name = 'preview'" in out, out[-2000:]
        assert "NOT-A-KEY" not in out, "the stored value is in a message"
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main():
    if not os.access(test_web.BIN, os.X_OK):
        print("FAIL setup: %s is not built" % test_web.BIN)
        return 1
    E = Env()
    return test_web.run_on_env(E, [(t_links_serve_the_files, E), (t_tampered_links_refused, E),
                                   (t_only_the_task_output, E), (t_odd_requests_json, E),
                                   (t_deleted_task_link_gone, E), (t_no_links_without_key_or_ttl, None),
                                   (t_bad_stored_secret_stops_web, None)])

if __name__ == "__main__":
    sys.exit(main())
