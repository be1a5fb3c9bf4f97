"""The registry client (server/images/registry_*, pull_*, push_*) against a
real Distribution registry (Debian's docker-registry) on loopback, with
images made by umoci from a small root filesystem and pushed there by
skopeo. What a user relies on: `llmbox image pull REF --oci DIR` writes
an OCI image layout skopeo reads, with the registry's manifest and blobs
byte for byte; a multi-arch index resolves to linux/amd64; a blob that is
not what its digest says is refused and nothing of it is kept; a
registry behind Bearer token auth (a token server in this file, in front
of the real registry) is pulled from anonymously and with credentials,
and wrong credentials are refused with a sentence; a registry on a
non-loopback address over plain HTTP is refused unless listed in
insecure_registries; a stopped pull resumes with a Range request; push
then pull gives the same manifest, in one PUT or in chunks. Python stdlib
only."""
import base64
import glob
import hashlib
import http.client
import http.server
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import LLMBOX, Reporter, Skip, free_port  # noqa: E402

TMP = tempfile.mkdtemp(prefix="llmbox-registry-")
PORT = free_port()
REG = "127.0.0.1:%d" % PORT
procs = []


def run(cmd, env=None, timeout=180, check=True):
    e = dict(os.environ)
    e.update({"LLMBOX_HOME": TMP})
    for k in ("LLMBOX_REGISTRY_USER", "LLMBOX_REGISTRY_PASSWORD", "LLMBOX_INSECURE_REGISTRIES"):
        e.pop(k, None)
    e.update(env or {})
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError("%s failed (%d): %s %s" % (cmd, p.returncode, p.stdout, p.stderr))
    return p


def pull(ref, out, env=None, check=True):
    return run([LLMBOX, "image", "pull", ref, "--oci", out], env=env, check=check)


def start_registry():
    conf = os.path.join(TMP, "registry.yml")
    with open(conf, "w") as f:
        f.write("version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\n"
                "  delete:\n    enabled: true\nhttp:\n  addr: %s\n" % (os.path.join(TMP, "storage"), REG))
    log = open(os.path.join(TMP, "registry.log"), "w")
    procs.append(subprocess.Popen(["docker-registry", "serve", conf], stdout=log, stderr=log))
    for _ in range(300):
        try:
            urllib.request.urlopen("http://%s/v2/" % REG, timeout=2).read()
            return
        except Exception:
            time.sleep(0.1)
    raise AssertionError("the registry did not start: " + open(os.path.join(TMP, "registry.log")).read())


def make_image(name, files):
    """An OCI layout TMP/src-NAME with tag t: one layer holding files
    ({path: bytes}), made by umoci; returns the layout path."""
    layout = os.path.join(TMP, "src-" + name)
    root = os.path.join(TMP, "root-" + name)
    os.makedirs(root)
    for p, data in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, p)), exist_ok=True)
        with open(os.path.join(root, p), "wb") as f:
            f.write(data)
    run(["umoci", "init", "--layout", layout])
    run(["umoci", "new", "--image", layout + ":t"])
    run(["umoci", "insert", "--rootless", "--image", layout + ":t", root, "/"])
    return layout


def skopeo_push(layout, ref):
    run(["skopeo", "copy", "--dest-tls-verify=false", "oci:%s:t" % layout, "docker://" + ref])


def registry_get(path, accept=None):
    req = urllib.request.Request("http://%s%s" % (REG, path))
    if accept:
        req.add_header("Accept", accept)
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read(), r.headers


def layout_manifest(out):
    idx = json.load(open(os.path.join(out, "index.json")))
    d = idx["manifests"][0]["digest"]
    return d, json.load(open(os.path.join(out, "blobs", "sha256", d[7:])))


def layer_files(out, man):
    names = {}
    for l in man["layers"]:
        data = open(os.path.join(out, "blobs", "sha256", l["digest"][7:]), "rb").read()
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as t:
            for m in t.getmembers():
                if m.isfile():
                    names[m.name.lstrip("./")] = t.extractfile(m).read()
    return names


BIG = os.urandom(3 << 20)  # a layer of over 1 MiB, for chunked pushes and resumes
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def setup():
    start_registry()
    skopeo_push(make_image("img", {"etc/hello": b"hello from the image\n", "opt/big": BIG}), REG + "/team/img:1")
    skopeo_push(make_image("arm", {"etc/hello": b"an arm image\n"}), REG + "/team/multi:arm")
    skopeo_push(make_image("bad", {"etc/hello": b"this layer will be corrupted\n"}), REG + "/team/bad:1")


def test_pull_writes_a_layout_skopeo_reads():
    out = os.path.join(TMP, "out-pull")
    p = pull(REG + "/team/img:1", out)
    assert p.stdout.startswith(REG + "/team/img:1 sha256:"), p.stdout
    body, hdr = registry_get("/v2/team/img/manifests/1", OCI_MANIFEST)
    d, man = layout_manifest(out)
    assert d == "sha256:" + hashlib.sha256(body).hexdigest(), (d, p.stdout)
    assert open(os.path.join(out, "blobs", "sha256", d[7:]), "rb").read() == body
    for blob in [man["config"]] + man["layers"]:
        data = open(os.path.join(out, "blobs", "sha256", blob["digest"][7:]), "rb").read()
        assert "sha256:" + hashlib.sha256(data).hexdigest() == blob["digest"]
    files = layer_files(out, man)
    assert files["etc/hello"] == b"hello from the image\n" and files["opt/big"] == BIG
    info = json.loads(run(["skopeo", "inspect", "oci:" + out]).stdout)
    assert info["Architecture"] == "amd64" and len(info["Layers"]) == 1, info
    assert not [f for f in os.listdir(os.path.join(out, "blobs", "sha256")) if f.endswith(".partial")]
    assert "layer 1/1" in p.stderr, p.stderr  # progress lines


def test_multi_arch_index_resolves_to_linux_amd64():
    amd, _ = registry_get("/v2/team/img/manifests/1", OCI_MANIFEST)
    arm, _ = registry_get("/v2/team/multi/manifests/arm", OCI_MANIFEST)
    # the amd64 image's blobs and manifest into team/multi too
    skopeo_push(os.path.join(TMP, "src-img"), REG + "/team/multi:amd")
    desc = lambda b, arch: {"mediaType": OCI_MANIFEST, "size": len(b),  # noqa: E731
                            "digest": "sha256:" + hashlib.sha256(b).hexdigest(),
                            "platform": {"architecture": arch, "os": "linux"}}
    index = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                        "manifests": [desc(arm, "arm64"), desc(amd, "amd64")]}).encode()
    req = urllib.request.Request("http://%s/v2/team/multi/manifests/1" % REG, data=index, method="PUT",
                                 headers={"Content-Type": "application/vnd.oci.image.index.v1+json"})
    urllib.request.urlopen(req, timeout=30).read()
    out = os.path.join(TMP, "out-multi")
    pull(REG + "/team/multi:arm", out)  # the folder held another image first
    p = pull(REG + "/team/multi:1", out)
    d, man = layout_manifest(out)
    assert d == "sha256:" + hashlib.sha256(amd).hexdigest(), (d, p.stderr)
    assert layer_files(out, man)["etc/hello"] == b"hello from the image\n"
    # an index with no linux/amd64 is refused with a sentence
    only_arm = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                           "manifests": [desc(arm, "arm64")]}).encode()
    req = urllib.request.Request("http://%s/v2/team/multi/manifests/armonly" % REG, data=only_arm, method="PUT",
                                 headers={"Content-Type": "application/vnd.oci.image.index.v1+json"})
    urllib.request.urlopen(req, timeout=30).read()
    p = pull(REG + "/team/multi:armonly", os.path.join(TMP, "out-armonly"), check=False)
    assert p.returncode != 0 and "no linux/amd64" in p.stderr, p.stderr


def test_corrupt_blob_is_refused_and_not_kept():
    _, man = layout_manifest_from_registry("team/bad", "1")
    layer = man["layers"][0]["digest"][7:]
    data = os.path.join(TMP, "storage", "docker", "registry", "v2", "blobs", "sha256", layer[:2], layer, "data")
    raw = bytearray(open(data, "rb").read())
    raw[len(raw) // 2] ^= 0xFF  # same size, other bytes
    open(data, "wb").write(bytes(raw))
    out = os.path.join(TMP, "out-bad")
    p = pull(REG + "/team/bad:1", out, check=False)
    assert p.returncode != 0, p.stdout
    assert "not what its digest says" in p.stderr and layer in p.stderr, p.stderr
    blobs = os.listdir(os.path.join(out, "blobs", "sha256"))
    assert layer not in blobs and layer + ".partial" not in blobs, blobs
    assert not os.path.exists(os.path.join(out, "index.json"))


def layout_manifest_from_registry(repo, tag):
    body, _ = registry_get("/v2/%s/manifests/%s" % (repo, tag), OCI_MANIFEST)
    return body, json.loads(body)


class TokenProxy(http.server.BaseHTTPRequestHandler):
    """In front of the real registry: /token hands out a token (to anyone,
    or only to USER:PASS when creds is set), every /v2/ request without
    that token gets 401 with a Bearer challenge; the rest is forwarded."""
    creds = None
    token = "tok-" + os.urandom(8).hex()
    scopes = []
    ranges = []
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _send(self, status, headers, body):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if self.path.startswith("/token"):
            TokenProxy.scopes.append(self.path)
            if TokenProxy.creds:
                want = "Basic " + base64.b64encode(TokenProxy.creds.encode()).decode()
                if self.headers.get("Authorization") != want:
                    return self._send(401, [], b'{"details":"bad credentials"}')
            return self._send(200, [("Content-Type", "application/json")],
                              json.dumps({"token": TokenProxy.token}).encode())
        if self.headers.get("Authorization") != "Bearer " + TokenProxy.token:
            host = self.headers.get("Host")
            return self._send(401, [("WWW-Authenticate",
                                     'Bearer realm="http://%s/token",service="test-registry"' % host),
                                    ("Content-Type", "application/json")],
                              b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}')
        if self.headers.get("Range"):
            TokenProxy.ranges.append(self.headers.get("Range"))
        c = http.client.HTTPConnection(REG, timeout=60)
        hdrs = {k: v for k, v in self.headers.items() if k.lower() not in ("authorization", "host")}
        c.request(self.command, self.path, body=body if body else None, headers=hdrs)
        r = c.getresponse()
        data = r.read()
        self._send(r.status, [(k, v) for k, v in r.getheaders()
                              if k.lower() not in ("content-length", "transfer-encoding", "connection")], data)
        c.close()

    do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = _any


class Quiet(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a client that hangs up on a hostile answer is what the test wants


def serve(handler, addr):
    srv = Quiet((addr, 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_bearer_token_auth_anonymous_and_with_credentials():
    srv = serve(TokenProxy, "127.0.0.1")
    try:
        ref = "127.0.0.1:%d/team/img:1" % srv.server_address[1]
        TokenProxy.creds = None
        pull(ref, os.path.join(TMP, "out-tok-anon"))
        assert any("scope=repository%3Ateam%2Fimg%3Apull" in s and "service=test-registry" in s
                   for s in TokenProxy.scopes), TokenProxy.scopes
        TokenProxy.creds = "alice:s3cret"
        p = pull(ref, os.path.join(TMP, "out-tok-none"), check=False)
        assert p.returncode != 0 and "refused" in p.stderr and "no credentials" in p.stderr, p.stderr
        p = pull(ref, os.path.join(TMP, "out-tok-bad"), env={"LLMBOX_REGISTRY_USER": "alice",
                                                             "LLMBOX_REGISTRY_PASSWORD": "wrong"}, check=False)
        assert p.returncode != 0 and "refused" in p.stderr, p.stderr
        out = os.path.join(TMP, "out-tok-ok")
        pull(ref, out, env={"LLMBOX_REGISTRY_USER": "alice", "LLMBOX_REGISTRY_PASSWORD": "s3cret"})
        assert layer_files(out, layout_manifest(out)[1])["etc/hello"] == b"hello from the image\n"
        # the same credentials from a Docker-style auth file
        auth = os.path.join(TMP, "auth.json")
        with open(auth, "w") as f:
            json.dump({"auths": {"127.0.0.1:%d" % srv.server_address[1]:
                                 {"auth": base64.b64encode(b"alice:s3cret").decode()}}}, f)
        pull(ref, os.path.join(TMP, "out-tok-file"), env={"LLMBOX_REGISTRY_AUTH_FILE": auth})
    finally:
        TokenProxy.creds = None
        srv.shutdown()


def test_stopped_pull_resumes_with_a_range():
    srv = serve(TokenProxy, "127.0.0.1")
    try:
        ref = "127.0.0.1:%d/team/img:1" % srv.server_address[1]
        _, man = layout_manifest_from_registry("team/img", "1")
        big = max(man["layers"], key=lambda l: l["size"])
        whole, _ = registry_get("/v2/team/img/blobs/" + big["digest"])
        out = os.path.join(TMP, "out-resume")
        os.makedirs(os.path.join(out, "blobs", "sha256"))
        half = len(whole) // 2
        open(os.path.join(out, "blobs", "sha256", big["digest"][7:] + ".partial"), "wb").write(whole[:half])
        TokenProxy.ranges.clear()
        p = pull(ref, out)
        assert "bytes=%d-" % half in TokenProxy.ranges, (TokenProxy.ranges, p.stderr)
        assert open(os.path.join(out, "blobs", "sha256", big["digest"][7:]), "rb").read() == whole
        # a .partial that is not the blob's start is caught by the digest and not kept
        out2 = os.path.join(TMP, "out-resume-bad")
        os.makedirs(os.path.join(out2, "blobs", "sha256"))
        open(os.path.join(out2, "blobs", "sha256", big["digest"][7:] + ".partial"), "wb").write(b"x" * half)
        p = pull(ref, out2, check=False)
        assert p.returncode != 0 and "not what its digest says" in p.stderr, p.stderr
        assert not os.path.exists(os.path.join(out2, "blobs", "sha256", big["digest"][7:] + ".partial"))
        pull(ref, out2)  # the next try starts afresh
    finally:
        srv.shutdown()


def own_address():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("10.255.255.255", 1))
        ip = s.getsockname()[0]
    except OSError:
        ip = None
    finally:
        s.close()
    return ip if ip and not ip.startswith("127.") else None


class PlainProxy(TokenProxy):
    """The registry, forwarded without auth."""

    def _any(self):
        self.headers.replace_header("Authorization", "Bearer " + TokenProxy.token) \
            if self.headers.get("Authorization") else self.headers.add_header(
                "Authorization", "Bearer " + TokenProxy.token)
        TokenProxy._any(self)

    do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = _any


class Stalling(TokenProxy):
    """Forwards with auth; while Stalling.stall is set, a whole-blob GET of
    the big layer sends its first half and then hangs."""
    stall = None

    def _any(self):
        if Stalling.stall and self.path.endswith(Stalling.stall) and not self.headers.get("Range") and \
                self.headers.get("Authorization") == "Bearer " + TokenProxy.token:
            whole, _ = registry_get(self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(whole)))
            self.end_headers()
            self.wfile.write(whole[:len(whole) // 2])
            self.wfile.flush()
            time.sleep(60)
            return
        TokenProxy._any(self)

    do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = _any


def test_kill_9_mid_pull_then_the_next_pull_finishes():
    srv = serve(Stalling, "127.0.0.1")
    try:
        ref = "127.0.0.1:%d/team/img:1" % srv.server_address[1]
        _, man = layout_manifest_from_registry("team/img", "1")
        big = max(man["layers"], key=lambda l: l["size"])["digest"]
        Stalling.stall = big
        out = os.path.join(TMP, "out-kill")
        part = os.path.join(out, "blobs", "sha256", big[7:] + ".partial")
        e = dict(os.environ, LLMBOX_HOME=TMP)
        p = subprocess.Popen([LLMBOX, "image", "pull", ref, "--oci", out], env=e,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while time.time() < deadline and not (os.path.exists(part) and os.path.getsize(part) > 0):
            time.sleep(0.05)
        time.sleep(0.3)
        p.kill()
        p.wait()
        assert os.path.getsize(part) > 0, "the pull wrote nothing before the kill"
        assert not os.path.exists(os.path.join(out, "index.json")), "a killed pull left a whole-looking layout"
        assert not os.path.exists(part[:-len(".partial")])
        Stalling.stall = None
        TokenProxy.ranges.clear()
        pull(ref, out)
        assert any(r.startswith("bytes=") and r != "bytes=0-" for r in TokenProxy.ranges), TokenProxy.ranges
        assert layer_files(out, layout_manifest(out)[1])["opt/big"] == BIG
        assert not os.path.exists(part)
    finally:
        Stalling.stall = None
        srv.shutdown()


def test_plain_http_elsewhere_than_loopback_needs_insecure():
    ip = own_address()
    if not ip:
        raise Skip("this host has no address other than loopback")
    srv = serve(PlainProxy, ip)
    try:
        host = "%s:%d" % (ip, srv.server_address[1])
        p = pull(host + "/team/img:1", os.path.join(TMP, "out-plain"), check=False)
        assert p.returncode != 0 and "insecure_registries" in p.stderr and "TLS" in p.stderr, p.stderr
        out = os.path.join(TMP, "out-plain-ok")
        pull(host + "/team/img:1", out, env={"LLMBOX_INSECURE_REGISTRIES": "example.org, " + host})
        assert layer_files(out, layout_manifest(out)[1])["etc/hello"] == b"hello from the image\n"
    finally:
        srv.shutdown()


def test_push_then_pull_round_trip():
    src = os.path.join(TMP, "out-pull")  # from the first test
    d0, _ = layout_manifest(src)
    for tag, extra in (("whole", []), ("chunked", ["--chunk-mib", "1"])):
        ref = REG + "/team/copy-%s:1" % tag
        p = run([LLMBOX, "image", "push", "--oci", src, ref] + extra)
        assert p.stdout.strip() == ref + " " + d0, p.stdout
        assert "is there already" not in p.stderr, p.stderr
        if extra:
            assert "(chunked)" in p.stderr, p.stderr
        out = os.path.join(TMP, "out-copy-" + tag)
        pull(ref, out)
        assert layout_manifest(out)[0] == d0
        assert layer_files(out, layout_manifest(out)[1])["opt/big"] == BIG
    # a second push finds every blob there already
    p = run([LLMBOX, "image", "push", "--oci", src, REG + "/team/copy-whole:again"])
    assert p.stderr.count("is there already") == 2, p.stderr


def test_push_a_stored_image_by_name():
    """A stored image (the layer store's record refs/<name>.json naming its
    manifest, blobs in oci/blobs/sha256) pushed by its name."""
    store = os.path.join(TMP, "store-push")
    src = os.path.join(TMP, "out-pull")
    d0, _ = layout_manifest(src)
    shutil.copytree(os.path.join(src, "blobs"), os.path.join(store, "oci", "blobs"))
    os.makedirs(os.path.join(store, "oci", "refs"))
    with open(os.path.join(store, "oci", "refs", "team+img=v1.json"), "w") as f:
        json.dump({"reference": "team/img:v1", "manifest": d0}, f)
    before = sorted(os.listdir(os.path.join(store, "oci", "blobs", "sha256")))
    p = run([LLMBOX, "image", "push", "team/img:v1", REG + "/team/from-store:1"],
            env={"LLMBOX_IMAGE_STORE": store})
    assert p.stdout.strip() == REG + "/team/from-store:1 " + d0, p.stdout
    out = os.path.join(TMP, "out-from-store")
    pull(REG + "/team/from-store:1", out)
    assert layout_manifest(out)[0] == d0
    assert sorted(os.listdir(os.path.join(store, "oci", "blobs", "sha256"))) == before
    assert os.listdir(os.path.join(store, "oci", "tmp")) == []
    p = run([LLMBOX, "image", "push", "team/none", REG + "/team/x:1"], env={"LLMBOX_IMAGE_STORE": store},
            check=False)
    assert p.returncode != 0 and "There is no stored image team/none" in p.stderr, p.stderr


def test_bad_references_and_missing_images_say_why():
    p = pull("127.0.0.1:%d/Team/img" % PORT, os.path.join(TMP, "out-x"), check=False)
    assert p.returncode != 0 and "lowercase" in p.stderr, p.stderr
    p = pull(REG + "/team/nothing:1", os.path.join(TMP, "out-y"), check=False)
    assert p.returncode != 0 and "has no image team/nothing:1" in p.stderr, p.stderr
    port = free_port()
    p = pull("127.0.0.1:%d/team/img:1" % port, os.path.join(TMP, "out-z"), check=False)
    assert p.returncode != 0 and "Cannot reach the registry" in p.stderr, p.stderr


class CountingProxy(TokenProxy):
    """The registry with token auth, counting the requests it forwards."""
    hits = []

    def _any(self):
        CountingProxy.hits.append(self.path)
        TokenProxy._any(self)

    do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = _any


def test_first_use_pull_waits_for_the_lock_and_pulls_once():
    """Two creates that want an image the node lacks: the second waits on
    the first's lock (a flock on <image_store>/oci/spool/<name>.lock) and,
    finding the image registered when it gets the lock, pulls nothing."""
    import fcntl
    store = os.path.join(TMP, "store")
    srv = serve(CountingProxy, "127.0.0.1")
    try:
        port = srv.server_address[1]
        ref = "127.0.0.1:%d/team/img:1" % port
        fname = "127.0.0.1=%d+team+img=1" % port
        os.makedirs(os.path.join(store, "oci", "spool"))
        os.makedirs(os.path.join(store, "oci", "refs"))
        lock = open(os.path.join(store, "oci", "spool", fname + ".lock"), "w")
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first create, pulling
        e = dict(os.environ, LLMBOX_HOME=TMP, LLMBOX_IMAGE_STORE=store)
        p = subprocess.Popen([LLMBOX, "image", "pull", "--if-missing", ref], env=e,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        assert p.poll() is None, "the second pull did not wait for the lock: " + p.stderr.read()
        assert CountingProxy.hits == [], CountingProxy.hits
        # the first registers the image (as the store's import does) and lets go
        with open(os.path.join(store, "oci", "refs", fname + ".json"), "w") as f:
            f.write('{"reference": "%s"}' % ref)
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert CountingProxy.hits == [], CountingProxy.hits
        # a node that cannot pull fails with a sentence
        dead = "127.0.0.1:%d/team/img:1" % free_port()
        r = run([LLMBOX, "image", "pull", "--if-missing", dead], env={"LLMBOX_IMAGE_STORE": store}, check=False)
        assert r.returncode != 0, r.stdout
        assert "This node does not have the image %s and cannot pull it: Cannot reach" % dead in r.stderr, r.stderr
    finally:
        srv.shutdown()


class Hostile(http.server.BaseHTTPRequestHandler):
    """A registry that answers from Hostile.routes: {(method, path): (status,
    headers, body)}; /v2/ is 200; anything else 404."""
    routes = {}
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _any(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        path = self.path.split("?")[0]
        if path == "/v2/":
            status, headers, body = 200, {}, b"{}"
        else:
            status, headers, body = Hostile.routes.get((self.command, path), (404, {}, b""))
        if callable(body):
            body = body(self)
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = _any


def oci_manifest(config, layers):
    d = lambda b: {"mediaType": "application/vnd.oci.image.layer.v1.tar", "size": len(b),  # noqa: E731
                   "digest": "sha256:" + hashlib.sha256(b).hexdigest()}
    m = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": dict(d(config), mediaType=
                                                                         "application/vnd.oci.image.config.v1+json"),
         "layers": [d(l) for l in layers]}
    return json.dumps(m).encode()


def test_hostile_registry_answers_are_refused():
    srv = serve(Hostile, "127.0.0.1")
    host = "127.0.0.1:%d" % srv.server_address[1]
    mt = {"Content-Type": OCI_MANIFEST}

    def refused(tag, words):
        out = os.path.join(TMP, "out-hostile-" + tag)
        p = pull(host + "/h/img:" + tag, out, check=False)
        assert p.returncode != 0 and words in p.stderr, (tag, p.stderr)
        assert not os.path.exists(os.path.join(out, "index.json")), tag

    try:
        config, layer = b'{"architecture":"amd64","os":"linux"}', b"layer bytes" * 10
        cd, ld = (hashlib.sha256(b).hexdigest() for b in (config, layer))
        # a manifest past the 4 MiB cap
        Hostile.routes = {("GET", "/v2/h/img/manifests/big"): (200, mt, b" " * (5 << 20))}
        refused("big", "sent more than allowed")
        # Docker's schema 1
        Hostile.routes = {("GET", "/v2/h/img/manifests/s1"): (
            200, {"Content-Type": "application/vnd.docker.distribution.manifest.v1+prettyjws"},
            b'{"schemaVersion":1,"fsLayers":[]}')}
        refused("s1", "schema 1 is not supported")
        # a blob longer than its descriptor says, and one with other bytes
        man = oci_manifest(config, [layer])
        Hostile.routes = {("GET", "/v2/h/img/manifests/long"): (200, mt, man),
                          ("GET", "/v2/h/img/blobs/sha256:" + cd): (200, {}, config),
                          ("GET", "/v2/h/img/blobs/sha256:" + ld): (200, {}, layer + b"more")}
        refused("long", "sent more than the %d bytes the manifest gives for layer 1/1" % len(layer))
        Hostile.routes[("GET", "/v2/h/img/manifests/other")] = (200, mt, man)
        Hostile.routes[("GET", "/v2/h/img/blobs/sha256:" + ld)] = (200, {}, b"X" * len(layer))
        refused("other", "not what its digest says")
        # a manifest asked for by digest that is not those bytes
        fake = "sha256:" + "0" * 64
        Hostile.routes = {("GET", "/v2/h/img/manifests/" + fake): (200, mt, man)}
        p = pull(host + "/h/img@" + fake, os.path.join(TMP, "out-hostile-digest"), check=False)
        assert p.returncode != 0 and "is not what its digest says" in p.stderr, p.stderr
        # more than 256 layers, a layer past the size cap, a bad digest
        many = json.loads(man)
        many["layers"] = many["layers"] * 257
        Hostile.routes = {("GET", "/v2/h/img/manifests/many"): (200, mt, json.dumps(many).encode())}
        refused("many", "257 layers, more than the 256 allowed")
        huge = json.loads(man)
        huge["layers"][0]["size"] = 1 << 40
        Hostile.routes = {("GET", "/v2/h/img/manifests/huge"): (200, mt, json.dumps(huge).encode()),
                          ("GET", "/v2/h/img/blobs/sha256:" + cd): (200, {}, config)}
        refused("huge", "more than the 17179869184 allowed")
        bad = json.loads(man)
        bad["layers"][0]["digest"] = "sha256:../../etc/passwd"
        Hostile.routes = {("GET", "/v2/h/img/manifests/bad"): (200, mt, json.dumps(bad).encode()),
                          ("GET", "/v2/h/img/blobs/sha256:" + cd): (200, {}, config)}
        refused("bad", "digest that is not sha256 and 64 lowercase hex digits")
    finally:
        srv.shutdown()


class BadTokens(TokenProxy):
    """A token server that answers without a token, or with one that would
    split a header line."""
    answer = b"{}"

    def _any(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        if self.path.startswith("/token"):
            return self._send(200, [("Content-Type", "application/json")], BadTokens.answer)
        return self._send(401, [("WWW-Authenticate", 'Bearer realm="http://%s/token",service="x"'
                                 % self.headers.get("Host"))], b"")

    do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = _any


def test_bad_token_servers_are_refused():
    srv = serve(BadTokens, "127.0.0.1")
    try:
        ref = "127.0.0.1:%d/team/img:1" % srv.server_address[1]
        for answer in (b"{}", b"not json", json.dumps({"token": "a\r\nX-Evil: 1"}).encode()):
            BadTokens.answer = answer
            p = pull(ref, os.path.join(TMP, "out-badtok"), check=False)
            assert p.returncode != 0 and "did not answer with a usable token" in p.stderr, (answer, p.stderr)
    finally:
        srv.shutdown()


def test_upload_location_on_another_host_is_refused():
    srv = serve(Hostile, "127.0.0.1")
    try:
        host = "127.0.0.1:%d" % srv.server_address[1]
        Hostile.routes = {("POST", "/v2/h/up/blobs/uploads/"): (
            202, {"Location": "http://127.0.0.2:1/v2/h/up/blobs/uploads/x"}, b"")}
        p = run([LLMBOX, "image", "push", "--oci", os.path.join(TMP, "out-pull"), host + "/h/up:1"], check=False)
        assert p.returncode != 0 and "upload location on another host" in p.stderr, p.stderr
    finally:
        srv.shutdown()


def test_pull_registers_the_image_in_the_layer_store():
    """Without --oci, a pull registers the image in the layer store: `image
    ls` lists it by its reference, its layer is unpacked there, and a second
    pull of the same reference unpacks nothing again."""
    store = os.path.join(TMP, "store-pull")
    env = {"LLMBOX_IMAGE_STORE": store}
    ref = REG + "/team/img:1"
    p = run([LLMBOX, "image", "pull", ref], env=env)
    ls = run([LLMBOX, "image", "ls"], env=env)
    assert ref in ls.stdout, ls.stdout
    hello = [os.path.join(d, "etc", "hello") for d in
             glob.glob(os.path.join(store, "oci", "layers", "sha256", "*", "root"))]
    found = [h for h in hello if os.path.exists(h)]
    assert len(found) == 1 and open(found[0], "rb").read() == b"hello from the image\n", hello
    before = os.stat(found[0]).st_ino
    run([LLMBOX, "image", "pull", ref], env=env)
    assert os.stat(found[0]).st_ino == before  # the layer was not unpacked again
    assert not os.path.exists(os.path.join(store, "oci", "spool", "127.0.0.1=%d+team+img=1" % PORT)), \
        os.listdir(os.path.join(store, "oci", "spool"))


def main():
    r = Reporter()
    for tool in ("docker-registry", "skopeo", "umoci"):
        if not shutil.which(tool):
            print("SKIP registry: %s is not installed (scripts/deps.sh)" % tool)
            return
    try:
        setup()
        r.run("pull_writes_a_layout_skopeo_reads", test_pull_writes_a_layout_skopeo_reads)
        r.run("multi_arch_index_resolves_to_linux_amd64", test_multi_arch_index_resolves_to_linux_amd64)
        r.run("bearer_token_auth_anonymous_and_with_credentials",
              test_bearer_token_auth_anonymous_and_with_credentials)
        r.run("stopped_pull_resumes_with_a_range", test_stopped_pull_resumes_with_a_range)
        r.run("kill_9_mid_pull_then_the_next_pull_finishes", test_kill_9_mid_pull_then_the_next_pull_finishes)
        r.run("plain_http_elsewhere_than_loopback_needs_insecure",
              test_plain_http_elsewhere_than_loopback_needs_insecure)
        r.run("push_then_pull_round_trip", test_push_then_pull_round_trip)
        r.run("push_a_stored_image_by_name", test_push_a_stored_image_by_name)
        r.run("pull_registers_the_image_in_the_layer_store", test_pull_registers_the_image_in_the_layer_store)
        r.run("bad_references_and_missing_images_say_why", test_bad_references_and_missing_images_say_why)
        r.run("first_use_pull_waits_for_the_lock_and_pulls_once",
              test_first_use_pull_waits_for_the_lock_and_pulls_once)
        r.run("hostile_registry_answers_are_refused", test_hostile_registry_answers_are_refused)
        r.run("bad_token_servers_are_refused", test_bad_token_servers_are_refused)
        r.run("upload_location_on_another_host_is_refused", test_upload_location_on_another_host_is_refused)
        r.run("corrupt_blob_is_refused_and_not_kept", test_corrupt_blob_is_refused_and_not_kept)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(TMP, ignore_errors=True)
    r.done()


if __name__ == "__main__":
    main()
