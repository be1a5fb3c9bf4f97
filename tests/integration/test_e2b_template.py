#!/usr/bin/env python3
"""E2B's template API (server/e2b/e2b_template.c, docs/E2B.md "Templates"):
E2B's own SDK (tests/e2b/sdk_template.mjs) builds a template with
Template().fromImage(...).runCmd().setEnvs().copy(), Template.build with
onBuildLogs, then Sandbox.create(alias) runs in the image; a failing RUN
and a step llmbox cannot do are BuildErrors with the sentence; a symlink in
an upload is refused. Raw HTTP plays what the SDK never sends: a tar.gz
with "../" and with a symlink to the upload URL, a wrong upload token,
another user's template and build, more builds at once than a key may
have, tags.

The base is a layered image made with umoci and imported into the test's
own image store (the default image is a debootstrap one, and cannot be a
FROM). Needs root, umoci, node, the built default image.

    python3 tests/integration/test_e2b_template.py   (from the repo root)

Checked against the old code: every /templates call answered 501, so
every check here fails there.
"""
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from oci_images import tiny_rootfs, umoci_image  # noqa: E402
from stack import LLMBOX, REPO, Reporter, Stack, image_ready  # noqa: E402

TOKEN = "e2b-tpl-" + os.urandom(16).hex()
USERS = {n: "%s-%s" % (n, os.urandom(16).hex()) for n in ("alice", "bob", "carol")}
USERS_CONF = "".join('[user "%s"]\ntoken_sha256 = %s\n' % (n, hashlib.sha256(t.encode()).hexdigest())
                     for n, t in USERS.items())
E2B_DIR = os.path.join(HERE, "..", "e2b")
BASE = "tplbase"


def api(st, method, path, body=None, key=TOKEN, headers=None):
    h = {"X-API-KEY": key} if key else {}
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    h.update(headers or {})
    code, _, data = st.request(method, path, body, h, timeout=60)
    try:
        return code, json.loads(data) if data else None
    except ValueError:
        return code, data


def t_sdk(st):
    env = dict(os.environ, E2B_API_URL="http://127.0.0.1:%d/e2b" % st.port,
               E2B_SANDBOX_URL="http://127.0.0.1:%d/e2b/sandbox" % st.port, E2B_API_KEY=TOKEN, TPL_BASE=BASE, TPL_NAT="1")
    p = subprocess.run(["node", "sdk_template.mjs"], cwd=E2B_DIR, env=env, capture_output=True, text=True,
                       timeout=900)
    lines = [l for l in p.stdout.splitlines() if l.startswith(("PASS ", "FAIL "))]
    for l in lines:
        print("   " + l, file=sys.stderr)
    fails = [l for l in lines if l.startswith("FAIL ")]
    assert p.returncode == 0 and lines and not fails, (fails or lines, p.stderr[-3000:])


def tgz(entries):
    """A tar.gz of (name, kind, data): kind "file" or "symlink" (data: target)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, kind, data in entries:
            ti = tarfile.TarInfo(name)
            if kind == "symlink":
                ti.type, ti.linkname = tarfile.SYMTYPE, data
                t.addfile(ti)
            else:
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def upload_path(url):
    u = urllib.parse.urlparse(url)
    return u.path


def t_hostile_upload(st):
    code, r = api(st, "POST", "/e2b/v3/templates", {"name": "tpl-hostile"})
    assert code == 202, (code, r)
    bid = r["buildID"]
    paths = {}
    for n, entries in (("dotdot", [("../../escaped.txt", "file", b"x")]),
                       ("link", [("link", "symlink", "/etc")]),
                       ("linkthrough", [("a/b", "symlink", "/"), ("a/b/etc/x", "file", b"x")]),
                       ("ok", [("fine.txt", "file", b"fine\n")])):
        h = hashlib.sha256(n.encode()).hexdigest()
        code, link = api(st, "GET", "/e2b/templates/tpl-hostile/files/%s" % h)
        assert code == 200 and link["present"] is False and link["url"].startswith("http://"), (code, link)
        paths[n] = (h, upload_path(link["url"]), entries)
    # no API key is needed (the SDK sends none): the URL's token is the key; a wrong one is refused
    h, p, _ = paths["ok"]
    bad = p.replace(p.split("/")[-2], "0" * 64)
    code, _, _ = st.request("PUT", bad, tgz([("fine.txt", "file", b"x")]), {})
    assert code == 404, ("a wrong upload token", code)
    code, _, body = st.request("PUT", p, tgz(paths["ok"][2]), {})
    assert code == 200, (code, body)
    code, link = api(st, "GET", "/e2b/templates/tpl-hostile/files/%s" % h)
    assert code == 200 and link["present"] is True, ("an uploaded hash is present", link)
    _, p, entries = paths["dotdot"]
    code, _, body = st.request("PUT", p, tgz(entries), {})
    assert code == 400 and b"escaped.txt" in body, (code, body)
    # a refused upload ends the build, with the sentence
    code, s = api(st, "GET", "/e2b/templates/tpl-hostile/builds/%s/status" % bid)
    assert code == 200 and s["status"] == "error" and "escaped.txt" in s["reason"]["message"], s
    assert s["logEntries"][-1]["level"] == "error", s
    var = os.path.join(st.prefix, "var")
    found = [os.path.join(d, f) for d, _, fs in os.walk(var) for f in fs if f == "escaped.txt"]
    assert not found, found
    # the other hostile archives, each in a build of its own
    for n in ("link", "linkthrough"):
        code, r = api(st, "POST", "/e2b/v3/templates", {"name": "tpl-hostile-" + n})
        assert code == 202, (code, r)
        h, _, entries = paths[n]
        code, link = api(st, "GET", "/e2b/templates/tpl-hostile-%s/files/%s" % (n, h))
        code, _, body = st.request("PUT", upload_path(link["url"]), tgz(entries), {})
        assert code == 400 and b"link" in body.lower(), (n, code, body)
    assert not os.path.exists(os.path.join(var, "image-contexts", "tpl-hostile")), "nothing was published"


def t_users_own_templates(st):
    a, b = USERS["alice"], USERS["bob"]
    code, r = api(st, "POST", "/e2b/v3/templates", {"name": "tpl-alice"}, key=a)
    assert code == 202, (code, r)
    code, r2 = api(st, "POST", "/e2b/v3/templates", {"name": "tpl-alice"}, key=b)
    assert code == 403 and "another user" in r2["message"], (code, r2)
    code, s = api(st, "GET", "/e2b/templates/tpl-alice/builds/%s/status" % r["buildID"], key=b)
    assert code == 404, ("another user's build is not there for bob", code, s)
    code, s = api(st, "GET", "/e2b/templates/tpl-alice/files/%s" % ("a" * 64), key=b)
    assert code == 404, (code, s)
    code, s = api(st, "GET", "/e2b/templates/tpl-alice/builds/%s/status" % r["buildID"], key=a)
    assert code == 200 and s["status"] == "waiting", (code, s)
    # an image of the server is not a user's to replace; the shared token's it is
    for name in ("default", BASE):
        code, r3 = api(st, "POST", "/e2b/v3/templates", {"name": name}, key=b)
        assert code == 403 and "image of this server" in r3["message"], (name, code, r3)
    # the shared token sees alice's build
    code, s = api(st, "GET", "/e2b/templates/tpl-alice/builds/%s/status" % r["buildID"])
    assert code == 200, (code, s)


def t_caps_and_refusals(st):
    c = USERS["carol"]
    for n in ("tpl-c1", "tpl-c2"):
        code, r = api(st, "POST", "/e2b/v3/templates", {"name": n}, key=c)
        assert code == 202, (n, code, r)
    code, r = api(st, "POST", "/e2b/v3/templates", {"name": "tpl-c3"}, key=c)
    assert code == 429 and "at most 2" in r["message"], ("a third build at once", code, r)
    code, r = api(st, "POST", "/e2b/v3/templates", {"name": "tpl-c1"}, key=c)
    assert code in (409, 429), ("the same name twice at once", code, r)
    code, r = api(st, "POST", "/e2b/v3/templates", {"name": "tpl-tags", "tags": ["v1"]})
    assert code == 400 and "tags" in r["message"].lower(), (code, r)
    for bad in ("Upper", "a_b", "x" * 65, "0123456789abcdef0123456789abcdef", "-a", ""):
        code, r = api(st, "POST", "/e2b/v3/templates", {"name": bad})
        assert code == 400 and "template name" in r["message"], (bad, code, r)
    code, r = api(st, "GET", "/e2b/templates")
    assert code == 501 and "Template.build" in r["message"], (code, r)
    code, r = api(st, "POST", "/e2b/v3/templates", {"name": "tpl-nokey"}, key=None)
    assert code == 401, (code, r)
    # an upload past the cap is refused (413), and steps naming files never
    # uploaded end the build with a sentence
    code, r = api(st, "POST", "/e2b/v3/templates", {"name": "tpl-big"})
    assert code == 202, (code, r)
    code, link = api(st, "GET", "/e2b/templates/tpl-big/files/%s" % ("b" * 64))
    code, _, body = st.request("PUT", upload_path(link["url"]), b"\0" * (65 << 20), {})
    assert code == 413, (code, body[:300])
    code, r = api(st, "POST", "/e2b/v2/templates/tpl-big/builds/%s" % link["url"].split("/")[-3],
                  {"fromImage": BASE, "steps": [{"type": "COPY", "args": ["a", "/a", "", ""], "filesHash": "c" * 64}]})
    assert code == 202, (code, r)
    code, s = api(st, "GET", "/e2b/templates/tpl-big/builds/%s/status" % link["url"].split("/")[-3])
    assert code == 200 and s["status"] == "error" and "not uploaded" in s["reason"]["message"], s


def main():
    rep = Reporter()
    if not image_ready():
        print("SKIP e2b_template: the sandbox image is not built (make image)")
        return 0
    if os.geteuid() != 0:
        print("SKIP e2b_template: sandboxd needs root")
        return 0
    if not shutil.which("umoci") or not shutil.which("node"):
        print("SKIP e2b_template: umoci and node are needed (scripts/deps.sh)")
        return 0
    if not os.path.isdir(os.path.join(E2B_DIR, "node_modules", "e2b")):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=E2B_DIR, check=True,
                       stdout=sys.stderr)
    tmp = tempfile.mkdtemp(prefix="llmbox-e2b-tpl-")
    try:
        store = os.path.join(tmp, "store")
        os.makedirs(store)
        os.chmod(tmp, 0o755)  # the web (its own user) looks into the store, as in /var/lib/llmbox
        os.symlink(os.path.realpath(os.path.join(REPO, "var", "images", "default")), os.path.join(store, "default"))
        root = tiny_rootfs(os.path.join(tmp, "rootfs"))
        lay = umoci_image(tmp, root, env=["PATH=/usr/bin:/bin"], tag="v1")
        subprocess.run([LLMBOX, "image", "import", lay, BASE], check=True, capture_output=True,
                       env=dict(os.environ, LLMBOX_IMAGE_STORE=store))
        # nat allowed: the RUN steps of a template build get it (sdk_template.mjs)
        env = {"LLMBOX_IMAGE_STORE": store, "LLMBOX_POOL_SIZE": "0", "LLMBOX_NETWORK_ALLOW": "none,nat"}
        with Stack(model=False, env=env, web_env={"LLMBOX_SANDBOX_API_TOKEN": TOKEN}, conf=USERS_CONF) as st:
            rep.run("sdk_template", t_sdk, st)
            rep.run("hostile_upload_refused", t_hostile_upload, st)
            rep.run("users_own_templates", t_users_own_templates, st)
            rep.run("caps_and_refusals", t_caps_and_refusals, st)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rep.done()
    return 0


if __name__ == "__main__":
    sys.exit(main())
