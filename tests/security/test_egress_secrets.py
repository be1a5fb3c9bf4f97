#!/usr/bin/env python3
"""Security: secrets the gateway adds to a sandbox's HTTPS requests, and the
bandwidth limit per sandbox (docs/NETWORK.md "Secrets", "Bandwidth").

The world is test_egress.py's (two network namespaces, nothing leaves the
machine) with, in "internet":
  45.1.1.10:443  HTTPS for allowed.test and other.test, its certificate from
                 a test CA that the gateway is told to trust upstream
                 (network_upstream_ca: that setting is for tests and private
                 CAs); every request's Authorization headers are written down
  45.1.1.20:443  HTTPS for untrusted.test with a self-signed certificate
  45.1.1.10:8081 plain HTTP that answers /big/N with N bytes
The secret "gh" goes to allowed.test and untrusted.test. Run as root:

    python3 tests/security/test_egress_secrets.py [CHECK...]
"""
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import test_egress as te  # noqa: E402  (its world: namespaces, dnsmasq, helpers)

te.DNS_HOSTS.update({"other.test": "45.1.1.10", "untrusted.test": "45.1.1.20"})

SERVER = r'''
import hashlib, http.server, json, socketserver, ssl, sys, threading
hits, certdir = sys.argv[1], sys.argv[2]
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def rec(self, body=b""):
        with lock, open(hits, "a") as f:
            f.write(json.dumps({"server": self.connection.getsockname()[0], "port":
                                self.connection.getsockname()[1], "path": self.path,
                                "host": self.headers.get("Host"),
                                "auth": self.headers.get_all("Authorization") or [],
                                "body": hashlib.sha256(body).hexdigest(), "len": len(body)}) + "\n")
    def reply(self, body):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        if self.path.startswith("/big/"):
            n = int(self.path.split("/")[2])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"x" * 65536
            while n > 0:
                self.wfile.write(chunk[:n])
                n -= 65536
            return
        self.rec()
        self.reply(b"hello " + self.path.encode() + b"\n")
    def do_POST(self):
        body = b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if not size:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.rec(body)
        self.reply(b"got %d\n" % len(body))
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
def serve(addr, port, cert=None):
    s = S((addr, port), H)
    if cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(certdir + "/" + cert + ".crt", certdir + "/" + cert + ".key")
        s.socket = ctx.wrap_socket(s.socket, server_side=True)
    threading.Thread(target=s.serve_forever, daemon=True).start()
serve("45.1.1.10", 443, "good")
serve("45.1.1.20", 443, "self")
serve("45.1.1.10", 8081)
threading.Event().wait()
'''


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True, timeout=60)


def make_certs(d):
    """A test CA and a leaf for allowed.test/other.test; a self-signed one
    for untrusted.test."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
            "-out", "ca.crt", "-days", "2", "-subj", "/CN=llmbox test upstream CA", "-addext",
            "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign", cwd=d)
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "good.key", "-out",
            "good.csr", "-subj", "/CN=allowed.test", cwd=d)
    with open(os.path.join(d, "good.ext"), "w") as f:
        f.write("subjectAltName=DNS:allowed.test,DNS:other.test\nbasicConstraints=CA:FALSE\n"
                "extendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "good.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out",
            "good.crt", "-days", "2", "-extfile", "good.ext", cwd=d)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "self.key",
            "-out", "self.crt", "-days", "2", "-subj", "/CN=untrusted.test", "-addext",
            "subjectAltName=DNS:untrusted.test", cwd=d)


def outer(script=None, bandwidth_max=8000000):
    """Makes the world, runs script (this file) again inside the host
    namespace with --inner; the operator's network_bandwidth_max."""
    from seclib import skip_reason
    import shutil
    why = skip_reason()
    name = os.path.splitext(os.path.basename(script or __file__))[0]
    if not why and not shutil.which("nft"):
        why = "nft is not installed (apt-get install nftables)"
    if not why and not shutil.which("dnsmasq"):
        why = "dnsmasq is not installed (apt-get install dnsmasq-base)"
    if not why and not shutil.which("openssl"):
        why = "openssl is not installed"
    if why:
        print("SKIP security/%s: %s" % (name, why), flush=True)
        return 0
    w = te.World()
    try:
        w.up()
        os.chmod(w.tmp, 0o711)  # the gateway (nobody) reads the upstream CA
        certs = os.path.join(w.tmp, "certs")
        os.mkdir(certs, 0o755)
        make_certs(certs)
        os.chmod(os.path.join(certs, "ca.crt"), 0o644)
        srv = os.path.join(w.tmp, "tls_server.py")
        with open(srv, "w") as f:
            f.write(SERVER)
        hits = os.path.join(w.tmp, "tls_hits.jsonl")
        w.procs.append(subprocess.Popen(["ip", "netns", "exec", te.INET_NS, sys.executable, srv, hits, certs]))
        value = "ghs_" + uuid.uuid4().hex + uuid.uuid4().hex
        tok = os.path.join(w.tmp, "gh.token")
        with open(os.open(tok, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            f.write(value + "\n")
        conf = os.path.join(w.tmp, "llmbox.conf")
        with open(conf, "w") as f:
            f.write("network_egress_max = *.test secret:gh\n"
                    "network_upstream_ca = %s\n"
                    "network_bandwidth_max = %d\n"
                    "[secret \"gh\"]\n"
                    "hosts = allowed.test, untrusted.test\n"
                    "header = Authorization: Bearer {value}\n"
                    "value_file = %s\n"
                    "[secret \"unset\"]\n"
                    "hosts = other.test\n"
                    "header = X-Key: {value}\n"
                    "value_env = LLMBOX_TEST_UNSET_SECRET\n" % (os.path.join(certs, "ca.crt"), bandwidth_max, tok))
        time.sleep(0.5)
        env = dict(os.environ, EGRESS_HITS=w.hits, TLS_HITS=hits, EGRESS_NS=te.HOST_NS + " " + te.INET_NS,
                   SECRET_VALUE=value, SECRET_CONF=conf)
        return subprocess.call(["ip", "netns", "exec", te.HOST_NS, sys.executable,
                                script or os.path.abspath(__file__), "--inner"] + sys.argv[1:], env=env)
    finally:
        w.down()


# ---- inside the host namespace -------------------------------------------------------------------

def tls_hits(path=None):
    try:
        with open(os.environ["TLS_HITS"]) as f:
            got = [json.loads(x) for x in f if x.strip()]
    except OSError:
        return []
    return [h for h in got if path is None or h["path"] == path]


SECRETS_POLICY = {"allow": ["allowed.test", "other.test", "untrusted.test"], "secrets": ["gh"]}


def curl(c, sid, args):
    return te.probe(c, sid, "import subprocess\n"
                            "r = subprocess.run(%r, capture_output=True, text=True, timeout=30)\n"
                            "out({'rc': r.returncode, 'out': r.stdout, 'err': r.stderr})" % (["curl", "-sS"] + args))


def check_secret_goes_to_listed_host_only(d):
    """curl https://allowed.test/ in the sandbox: the server gets the secret
    in Authorization (in place of one the sandbox sent); other.test, allowed
    but not listed for the secret, gets no header; plain HTTP never does."""
    value = os.environ["SECRET_VALUE"]
    c, sid = te.make(d, SECRETS_POLICY)
    r = curl(c, sid, ["https://allowed.test/s1"])
    assert r["rc"] == 0 and r["out"] == "hello /s1\n", r
    r = curl(c, sid, ["-H", "Authorization: Bearer placeholder", "https://allowed.test/s2"])
    assert r["rc"] == 0 and r["out"] == "hello /s2\n", r
    # Python's ssl with its default trust (the system bundle, which now holds the CA)
    r = te.probe(c, sid, "import urllib.request\n"
                         "out(urllib.request.urlopen('https://allowed.test/s3', timeout=20).read().decode())")
    assert r == "hello /s3\n", r
    for p in ("/s1", "/s2", "/s3"):
        h = tls_hits(p)
        assert len(h) == 1 and h[0]["auth"] == ["Bearer " + value], (p, h and h[0]["auth"] == [])
    r = curl(c, sid, ["-k", "https://other.test/o1"])
    assert r["rc"] == 0 and r["out"] == "hello /o1\n", r
    h = tls_hits("/o1")
    assert len(h) == 1 and h[0]["auth"] == [], h
    rec = te.record(d, sid)
    tcp = [x for x in rec if x["kind"] == "tcp" and x["allowed"] and x["port"] == 443]
    assert sum(x["rule"] == "allow allowed.test; secret header added" for x in tcp) == 3, tcp
    assert all("secret" not in x["rule"] for x in tcp if x["name"] == "other.test"), tcp


def check_sandbox_never_sees_the_value_or_the_key(d):
    """Nothing the sandbox can read holds the value (its environment, /etc,
    every process's environment and command line) nor a private key; the
    record, the gateway's folder and sandboxd's log hold neither the value
    nor the CA's key; processes get the trust variables."""
    value = os.environ["SECRET_VALUE"]
    c, sid = te.make(d, SECRETS_POLICY)
    assert curl(c, sid, ["https://allowed.test/v1"])["rc"] == 0
    r = c.call({"op": "proc_start", "id": sid, "argv": ["sh", "-c", "env > /tmp/env.txt"]})
    assert r.get("ok"), r
    time.sleep(1)
    from seclib import hidden
    r = te.probe(c, sid, r'''
import os, re
needle = %s.encode()
found, keys, files = [], [], 0
def scan(path, data):
    if needle in data:
        found.append(path)
    if re.search(rb"-----BEGIN [A-Z ]*PRIVATE KEY-----", data):
        keys.append(path)
for root, dirs, names in os.walk("/etc"):
    for n in names:
        p = os.path.join(root, n)
        try:
            if os.path.islink(p) or os.path.getsize(p) > 8 << 20:
                continue
            with open(p, "rb") as f:
                scan(p, f.read())
            files += 1
        except OSError:
            pass
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for k in ("environ", "cmdline"):
            try:
                with open("/proc/%%s/%%s" %% (pid, k), "rb") as f:
                    scan("/proc/%%s/%%s" %% (pid, k), f.read())
            except OSError:
                pass
with open("/tmp/env.txt") as f:
    env = f.read()
with open("/etc/llmbox/ca.crt") as f:
    ca = f.read()
with open("/etc/llmbox/ca-bundle.crt") as f:
    bundle = f.read()
out({"found": found, "keys": keys, "files": files, "env": env, "ca": ca, "bundle_has_ca": ca in bundle,
     "bundle_len": len(bundle)})''' % hidden(value))
    assert r["files"] > 20, r["files"]
    assert not r["found"], "the secret's value is readable in the sandbox at %s" % r["found"]
    assert not r["keys"], "a private key is readable in the sandbox at %s" % r["keys"]
    assert "SSL_CERT_FILE=/etc/llmbox/ca-bundle.crt" in r["env"], r["env"]
    assert "NODE_EXTRA_CA_CERTS=/etc/llmbox/ca.crt" in r["env"], r["env"]
    assert r["ca"].startswith("-----BEGIN CERTIFICATE-----") and r["bundle_has_ca"] and r["bundle_len"] > 10000, r
    gw = os.path.join(d.var, "netgw", sid)
    assert not os.path.exists(os.path.join(gw, "secrets")), os.listdir(gw)
    for n in os.listdir(gw):
        with open(os.path.join(gw, n), "rb") as f:
            data = f.read()
        assert value.encode() not in data, "the value is in %s" % n
        assert b"PRIVATE KEY-----" not in data, "a private key is in %s" % n
    with open(d.log_path, "rb") as f:
        assert value.encode() not in f.read(), "the value is in sandboxd's log"


def scan_memory(pid, needles):
    """Which of needles (bytes) are in process pid's memory: every readable
    region of /proc/PID/maps read through /proc/PID/mem (as root, from the
    host), in chunks that overlap by a needle's length. Returns (found
    needles, bytes read)."""
    found, total = set(), 0
    keep = max(len(n) for n in needles)
    try:
        with open("/proc/%d/maps" % pid) as f:
            maps = f.read().splitlines()
        fd = os.open("/proc/%d/mem" % pid, os.O_RDONLY)
    except OSError:
        return found, total  # the process has ended
    try:
        for line in maps:
            parts = line.split()
            if len(parts) < 2 or parts[1][0] != "r" or (len(parts) > 5 and parts[5] == "[vvar]"):
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            tail, at = b"", lo
            while at < hi:
                try:
                    b = os.pread(fd, min(4 << 20, hi - at), at)
                except OSError:
                    break
                if not b:
                    break
                total += len(b)
                buf = tail + b
                found.update(n for n in needles if n in buf)
                tail = buf[-keep:]
                at += len(b)
    finally:
        os.close(fd)
    return found, total


def check_sandbox_memory_never_holds_the_value(d):
    """After the sandbox used the secret (curl, and a Python process that
    fetched and stays alive), no byte of any of its processes' memory holds
    the value: read as root from the host through /proc/PID/mem. A marker a
    sandbox process holds only in its heap is found, so the scan sees
    memory and not just command lines."""
    from seclib import pidns_of, procs_in
    value = os.environ["SECRET_VALUE"].encode()
    c, sid = te.make(d, SECRETS_POLICY)
    assert curl(c, sid, ["https://allowed.test/mem1"])["rc"] == 0
    half = uuid.uuid4().hex
    code = ("import urllib.request, time\n"
            "b = urllib.request.urlopen('https://allowed.test/mem2', timeout=20).read()\n"
            "m = ''.join(['memmark-', %r])\n"
            "open('/tmp/fetched', 'wb').write(b)\n"
            "time.sleep(300)\n" % half)
    r = c.call({"op": "proc_start", "id": sid, "argv": ["python3", "-c", code]})
    assert r.get("ok"), r
    for _ in range(100):
        if c.exec(sid, "cat /tmp/fetched").get("stdout") == "hello /mem2\n":
            break
        time.sleep(0.2)
    else:
        raise AssertionError("the sandbox's python did not fetch https://allowed.test/mem2")
    h = tls_hits("/mem2")
    assert len(h) == 1 and h[0]["auth"] == ["Bearer " + value.decode()], "the secret was not used"
    marker = ("memmark-" + half).encode()
    pids = procs_in(pidns_of(c, sid))
    assert len(pids) >= 2, pids
    seen, total = {}, 0
    for pid in pids:
        f, n = scan_memory(pid, [value, marker])
        total += n
        for x in f:
            seen.setdefault(x, []).append(pid)
    assert total > 1 << 20, "only %d bytes of the sandbox's memory were read" % total
    assert marker in seen, "the scan missed a marker in a sandbox process's heap (%d bytes read)" % total
    assert value not in seen, "the secret's value is in the memory of sandbox processes %s" % seen[value]


def check_unverified_upstream_is_refused(d):
    """untrusted.test is listed for the secret but its certificate does not
    verify: the connection is refused and recorded, no request reaches it."""
    c, sid = te.make(d, SECRETS_POLICY)
    r = curl(c, sid, ["https://untrusted.test/u1"])
    assert r["rc"] != 0, r
    assert not tls_hits("/u1"), tls_hits("/u1")
    rec = [x for x in te.record(d, sid) if x["kind"] == "tcp" and x["name"] == "untrusted.test"]
    assert rec and not rec[0]["allowed"] and "did not verify" in rec[0]["rule"], rec


HOSTILE = r'''
import socket, ssl
ctx = ssl.create_default_context()
def talk(raw, name="allowed.test"):
    s = ctx.wrap_socket(socket.create_connection((name, 443), 20), server_hostname=name)
    s.settimeout(20)
    got = b""
    try:
        s.sendall(raw)
    except OSError:
        pass  # refused before all of it was read: the answer may still be there
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except OSError as e:
        got += ("<%s>" % type(e).__name__).encode()
    s.close()
    return got.decode(errors="replace")
body = b"chunk-one" * 1000
chunked = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 3000]), body[i:i + 3000]) for i in range(0, len(body), 3000))
res = {
  "wrong_host": talk(b"GET /h1 HTTP/1.1\r\nHost: other.test\r\n\r\n"),
  "huge_header": talk(b"GET /h2 HTTP/1.1\r\nHost: allowed.test\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n"),
  "many_headers": talk(b"GET /h3 HTTP/1.1\r\nHost: allowed.test\r\n" + b"X-A: b\r\n" * 200 + b"\r\n"),
  "smuggle": talk(b"POST /h4 HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 5\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
  "bare_lf": talk(b"GET /h5 HTTP/1.1\nHost: allowed.test\n\n"),
  "pipelined": talk(b"GET /p1 HTTP/1.1\r\nHost: allowed.test\r\n\r\nGET /p2 HTTP/1.1\r\nHost: allowed.test\r\n\r\n"),
  "chunked": talk(b"POST /c1 HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked +
                  b"0\r\nX-Trailer: t\r\n\r\n"),
  "length": talk(b"POST /c2 HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: %d\r\n\r\n" % len(body) + body),
}
out(res)
'''


def check_hostile_requests(d):
    """What the sandbox sends is hostile: a Host that is not the TLS name,
    oversized heads, Content-Length with Transfer-Encoding and bare LFs are
    refused with 4xx and never forwarded; a pipelined second request is not
    forwarded; chunked and sized bodies arrive intact."""
    value = os.environ["SECRET_VALUE"]
    c, sid = te.make(d, SECRETS_POLICY)
    r = te.probe(c, sid, HOSTILE)
    assert r["wrong_host"].startswith("HTTP/1.1 421"), r["wrong_host"][:200]
    for k in ("huge_header", "many_headers", "smuggle", "bare_lf"):
        assert r[k].startswith("HTTP/1.1 400"), (k, r[k][:200])
    for p in ("/h1", "/h2", "/h3", "/h4", "/h5", "/p2"):
        assert not tls_hits(p), (p, tls_hits(p))
    assert "hello /p1" in r["pipelined"] and len(tls_hits("/p1")) == 1, r["pipelined"][:300]
    body = b"chunk-one" * 1000
    want = hashlib.sha256(body).hexdigest()
    for p, k in (("/c1", "chunked"), ("/c2", "length")):
        h = tls_hits(p)
        assert len(h) == 1 and h[0]["len"] == len(body) and h[0]["body"] == want, (p, h, r[k][:200])
        assert h[0]["auth"] == ["Bearer " + value], p
    assert value not in json.dumps(r), "the value came back to the sandbox"


FETCH = r'''
import socket, threading, time
def fetch(n, res):
    s = socket.create_connection(("allowed.test", 8081), 20)
    s.settimeout(120)
    s.sendall(b"GET /big/%d HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n" % n)
    got = 0
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += len(b)
    res.append(got)
def many(n, k):
    res = []
    t = time.time()
    ts = [threading.Thread(target=fetch, args=(n, res)) for _ in range(k)]
    for x in ts:
        x.start()
    for x in ts:
        x.join()
    return {"s": time.time() - t, "got": sum(res)}
'''


def check_bandwidth_limit_holds_across_connections(d):
    """A policy's bandwidth of 256 KiB/s: 1 MiB over two connections at
    once takes at least (1 MiB - the burst) / rate."""
    c, sid = te.make(d, {"allow": ["allowed.test"], "bandwidth": 262144})
    r = te.probe(c, sid, FETCH + "out(many(524288, 2))")
    assert r["got"] > 2 * 524288, r
    # the burst is at most 32 KiB (an eighth of a second): 1 MiB needs >= 3.87 s
    assert r["s"] >= 3.5, "1 MiB at 256 KiB/s took only %.2f s" % r["s"]
    assert r["s"] < 60, r


def check_operator_caps_bandwidth(d):
    """network_bandwidth_max (8 MB/s here) caps a policy asking more."""
    c, sid = te.make(d, {"allow": ["allowed.test"], "bandwidth": 2000000000})
    r = te.probe(c, sid, FETCH + "out(many(16000000, 1))")
    assert r["got"] > 16000000, r
    assert r["s"] >= 1.7, "16 MB under an 8 MB/s cap took only %.2f s" % r["s"]


def check_flood_does_not_slow_another_sandbox(d):
    """One sandbox floods at its limit (1 MiB/s) on 8 connections; another's
    1 MiB fetch and secret request complete promptly meanwhile."""
    a, sa = te.make(d, {"allow": ["allowed.test"], "bandwidth": 1048576})
    b, sb = te.make(d, SECRETS_POLICY)
    done = {}

    def flood():
        try:
            done["r"] = te.probe(a, sa, FETCH + "out(many(1 << 20, 8))")
        except Exception as e:  # noqa: BLE001  (destroyed under it)
            done["r"] = repr(e)
    t = threading.Thread(target=flood, daemon=True)
    t.start()
    time.sleep(1.5)
    t0 = time.time()
    r = te.probe(b, sb, FETCH + "out(many(1 << 20, 1))")
    https = curl(b, sb, ["https://allowed.test/f1"])
    took = time.time() - t0
    assert r["got"] > 1 << 20 and https["out"] == "hello /f1\n", (r, https)
    assert took < 15, "the other sandbox's fetches took %.1f s during the flood" % took
    assert "r" not in done, "the flood (8 MiB at 1 MiB/s) ended early: %s" % done
    t.join(90)
    assert done["r"]["s"] >= 7, done  # it was held at its own limit all along


def check_api_secret_ceiling_and_record(d):
    """Through the sandbox API: a secret network_egress_max does not list
    is a 403 naming it; one it lists works, and the record the API answers
    names the secret's use, never its value."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    from stack import Stack
    import http.client
    value = os.environ["SECRET_VALUE"]
    with open(os.environ["SECRET_CONF"]) as f:
        conf = f.read()
    conf = conf.replace("secret:gh", "secret:gh secret:spare") + "[secret \"spare\"]\nhosts = other.test\n" \
        "header = X-Key: {value}\nvalue_env = SPARE_KEY\n"
    conf_no = conf.replace("secret:gh secret:spare", "secret:spare")
    tok = "egress-" + uuid.uuid4().hex
    env = {"LLMBOX_SANDBOX_API_TOKEN": tok, "SPARE_KEY": "spare-" + uuid.uuid4().hex}
    for text, want in ((conf_no, 403), (conf, 201)):
        with Stack(model=False, env=env, web_env=env, conf=text) as st:
            def call(method, path, body=None):
                c = http.client.HTTPConnection("127.0.0.1", st.port, timeout=60)
                c.request(method, path, json.dumps(body) if body is not None else None,
                          {"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
                r = c.getresponse()
                data = r.read()
                c.close()
                return r.status, (json.loads(data) if data else None)
            status, o = call("POST", "/api/sandboxes", {"network": {"allow": ["allowed.test"], "secrets": ["gh"]}})
            if want == 403:
                assert status == 403 and "\"gh\"" in o["error"]["message"], (status, o)
                continue
            assert status in (200, 201), (status, o)
            sid = o["id"]
            status, o = call("POST", "/api/sandboxes/%s/exec" % sid, {"command": "curl -sS https://allowed.test/api1"})
            assert status == 200 and o.get("stdout") == "hello /api1\n", (status, o)
            h = tls_hits("/api1")
            assert len(h) == 1 and h[0]["auth"] == ["Bearer " + value], h
            status, o = call("GET", "/api/sandboxes/%s/network" % sid)
            assert status == 200 and o["network"].get("secrets") == ["gh"], (status, o)
            assert any("secret header added" in x["rule"] for x in o["connections"]), o
            assert value not in json.dumps(o), "the record holds the value"
            call("DELETE", "/api/sandboxes/%s" % sid)


def check_e2b_transform_through_the_sdk(d):
    """E2B's per-host transforms (network.rules) through E2B's own SDK
    (tests/e2b/sdk_network_transform.mjs): the client's header goes to the
    named host's HTTPS requests only, never to the sandbox or the record."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    from stack import Stack
    e2b_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2b")
    if not os.path.isdir(os.path.join(e2b_dir, "node_modules", "e2b")):
        print("SKIP: the e2b SDK is not installed in tests/e2b (npm ci)")
        return
    with open(os.environ["SECRET_CONF"]) as f:
        conf = f.read()
    tok = "egress-" + uuid.uuid4().hex
    env = {"LLMBOX_SANDBOX_API_TOKEN": tok}
    with Stack(model=False, env=env, web_env=env, conf=conf) as st:
        senv = dict(os.environ, E2B_API_URL="http://127.0.0.1:%d/e2b" % st.port,
                    E2B_SANDBOX_URL="http://127.0.0.1:%d/e2b/sandbox" % st.port, E2B_API_KEY=tok)
        p = subprocess.run(["node", "sdk_network_transform.mjs"], cwd=e2b_dir, env=senv, capture_output=True,
                           text=True, timeout=300)
        sys.stdout.write(p.stdout)
        assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
        # nor anything the gateway's folder or the service's logs hold
        # (the script prints the value it made; its command lines carry halves only)
        value = [x.split(" ", 1)[1] for x in p.stdout.splitlines() if x.startswith("VALUE ")][0].encode()
        for dirpath, _, files in os.walk(st.prefix):
            for fn in files:
                try:
                    with open(os.path.join(dirpath, fn), "rb") as f:
                        data = f.read(64 << 20)
                except OSError:
                    continue
                assert value not in data, "the value is in " + os.path.join(dirpath, fn)


def check_task_trajectory_never_holds_the_value(d):
    """A task whose network names the secret: its command's request reaches
    the upstream with the value, and nothing the task keeps (trajectory,
    network record, outputs, every file of artifacts/<task>/) holds it."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    from stack import Stack
    value = os.environ["SECRET_VALUE"]
    with open(os.environ["SECRET_CONF"]) as f:
        conf = f.read()
    cmd = "curl -sS -H 'Authorization: Bearer placeholder' https://allowed.test/task1; env; cat /etc/llmbox/ca.crt"
    steps = [{"tool_calls": [{"name": "bash", "arguments": {"command": cmd}}]},
             {"tool_calls": [{"name": "finish", "arguments": {"answer": "done"}}]}]
    scen = {"scenarios": [{"match": "[secret]", "steps": steps}], "steps": steps[1:]}
    with Stack(scenario=scen, conf=conf) as st:
        status, b = st.create_task("[secret] go", network=json.dumps({"allow": ["allowed.test"], "secrets": ["gh"]}))
        assert status == 201, (status, b)
        tid = b["id"]
        t = st.wait_task(tid, timeout=120)
        assert t["status"] == "succeeded", t
        h = tls_hits("/task1")
        assert len(h) == 1 and h[0]["auth"] == ["Bearer " + value], "the task's request did not carry the secret"
        root = os.path.join(st.prefix, "artifacts", tid)
        with open(os.path.join(root, "trajectory.json")) as f:
            traj = f.read()
        assert "hello /task1" in traj, "the trajectory lacks the command's output"
        files = 0
        for base, _, names in os.walk(root):
            for n in names:
                with open(os.path.join(base, n), "rb") as f:
                    assert value.encode() not in f.read(), "the value is in %s" % os.path.join(base, n)
                files += 1
        assert files >= 2, files
        status, o = st.get_json("/api/tasks/%s/network" % tid)
        assert status == 200 and any("secret header added" in x["rule"] for x in o["connections"]), (status, o)
        assert value not in json.dumps(o), "the task's network record holds the value"


def check_secret_without_value_is_refused(d):
    """A secret no [secret] section defines, or one whose value is not
    there, refuses the create with a sentence naming it (and no gateway)."""
    from seclib import RpcError
    os.chmod(d.tmp, 0o711)
    os.chmod(d.var, 0o711)
    c = d.connect()
    for name, want in (("nosuch", "network secret \"nosuch\" is not defined"),
                       ("unset", "LLMBOX_TEST_UNSET_SECRET (value_env) is not set")):
        try:
            sid = c.create(network="egress", policy=json.dumps({"allow": ["other.test"], "secrets": [name]}))
        except RpcError as e:
            assert want in str(e), e
            continue
        raise AssertionError("a sandbox naming secret %s was made: %s" % (name, sid))


CHECKS = [
    ("world_is_closed", te.check_world_is_closed),
    ("secret_goes_to_listed_host_only", check_secret_goes_to_listed_host_only),
    ("sandbox_never_sees_the_value_or_the_key", check_sandbox_never_sees_the_value_or_the_key),
    ("sandbox_memory_never_holds_the_value", check_sandbox_memory_never_holds_the_value),
    ("task_trajectory_never_holds_the_value", check_task_trajectory_never_holds_the_value),
    ("unverified_upstream_is_refused", check_unverified_upstream_is_refused),
    ("hostile_requests", check_hostile_requests),
    ("bandwidth_limit_holds_across_connections", check_bandwidth_limit_holds_across_connections),
    ("operator_caps_bandwidth", check_operator_caps_bandwidth),
    ("flood_does_not_slow_another_sandbox", check_flood_does_not_slow_another_sandbox),
    ("api_secret_ceiling_and_record", check_api_secret_ceiling_and_record),
    ("secret_without_value_is_refused", check_secret_without_value_is_refused),
    ("e2b_transform_through_the_sdk", check_e2b_transform_through_the_sdk),
]


def inner():
    from seclib import suite_main
    sys.argv = [sys.argv[0]] + [a for a in sys.argv[1:] if a != "--inner"]
    if sys.argv[1:] and "world_is_closed" not in sys.argv[1:]:
        sys.argv.insert(1, "world_is_closed")
    return suite_main("security/", CHECKS, env={"LLMBOX_CONF": os.environ["SECRET_CONF"]})


if __name__ == "__main__":
    sys.exit(inner() if "--inner" in sys.argv else outer())
