#!/usr/bin/env python3
"""Security: a sandbox whose network is a policy of rules reaches only what
the rules allow, through the gateway (docs/NETWORK.md).

Everything happens in network namespaces this test makes, so no packet
leaves the machine even if the gateway is wrong:
  host      sandboxd (and so every sandbox and the gateway) runs here; its
            only link is a veth into "internet", 45.1.0.2/24 (a stand-in
            for the host's own public address), default route via 45.1.0.1
  internet  the other end; on its loopback the servers the sandbox aims
            at: HTTP on 45.1.1.10 (allowed.test, api.wild.test) and
            45.1.1.20 (denied.test), 169.254.169.254 (cloud metadata's
            stand-in) and dnsmasq on 45.1.1.53 (the host's resolver, by
            /etc/netns/<host>/resolv.conf); no route out
Before the first probe the test asserts those two namespaces hold no other
link and no other route. Every refusal must be quick (NXDOMAIN, a reset,
an ICMP error), and every attempt must be in the gateway's record. Run as
root:

    python3 tests/security/test_egress.py [CHECK...]
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

TAG = "egt" + uuid.uuid4().hex[:6]
HOST_NS, INET_NS = TAG + "-host", TAG + "-inet"

SERVER = r'''
import http.server, socketserver, sys, json
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("server %s host %s path %s\n" % (self.connection.getsockname()[0],
                self.headers.get("Host"), self.path)).encode()
        if self.path.startswith("/big/"):  # a download of that many bytes
            body = b"x" * min(int(self.path[5:]), 1 << 26)
        with open(sys.argv[1], "a") as f:
            f.write(json.dumps({"server": self.connection.getsockname()[0], "port":
                    self.connection.getsockname()[1], "host": self.headers.get("Host")}) + "\n")
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
S(("0.0.0.0", int(sys.argv[2])), H).serve_forever()
'''

DNS_HOSTS = {
    "allowed.test": "45.1.1.10",
    "api.wild.test": "45.1.1.10",
    "wild.test": "45.1.1.10",
    "denied.test": "45.1.1.20",
    "later.test": "45.1.1.20",
    "rebind.test": "127.0.0.1",
    "hostaddr.test": "45.1.0.2",
    "meta.test": "169.254.169.254",
}


def run(*cmd, ns=None, check=True):
    full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    r = subprocess.run(full, capture_output=True, text=True, timeout=30)
    if check and r.returncode:
        raise RuntimeError("%s: %s" % (" ".join(full), r.stderr.strip()))
    return r.stdout


class World:
    """The two namespaces and the internet's servers."""

    def __init__(self):
        self.procs = []
        self.tmp = tempfile.mkdtemp(prefix="llmbox-egress-")
        self.hits = os.path.join(self.tmp, "hits.jsonl")

    def up(self):
        run("ip", "netns", "add", HOST_NS)
        run("ip", "netns", "add", INET_NS)
        run("ip", "link", "set", "lo", "up", ns=HOST_NS)
        run("ip", "link", "set", "lo", "up", ns=INET_NS)
        run("ip", "link", "add", "up0", "type", "veth", "peer", "name", "down0", "netns", INET_NS, ns=HOST_NS)
        run("ip", "addr", "add", "45.1.0.2/24", "dev", "up0", ns=HOST_NS)
        run("ip", "link", "set", "up0", "up", ns=HOST_NS)
        run("ip", "route", "add", "default", "via", "45.1.0.1", ns=HOST_NS)
        run("ip", "addr", "add", "45.1.0.1/24", "dev", "down0", ns=INET_NS)
        run("ip", "link", "set", "down0", "up", ns=INET_NS)
        for a in ("45.1.1.10/32", "45.1.1.20/32", "45.1.1.53/32", "169.254.169.254/32"):
            run("ip", "addr", "add", a, "dev", "lo", ns=INET_NS)
        srv = os.path.join(self.tmp, "server.py")
        with open(srv, "w") as f:
            f.write(SERVER)
        self.procs.append(subprocess.Popen(["ip", "netns", "exec", INET_NS, sys.executable, srv, self.hits, "80"]))
        self.procs.append(subprocess.Popen(["ip", "netns", "exec", INET_NS, sys.executable, srv, self.hits,
                                            "8080"]))
        args = ["dnsmasq", "--no-daemon", "--no-resolv", "--no-hosts", "--listen-address=45.1.1.53",
                "--bind-interfaces", "--port=53", "--pid-file=" + os.path.join(self.tmp, "dnsmasq.pid"),
                "--user=root"]
        args += ["--address=/%s/%s" % (n, a) for n, a in DNS_HOSTS.items()]
        self.procs.append(subprocess.Popen(["ip", "netns", "exec", INET_NS] + args,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        os.makedirs("/etc/netns/" + HOST_NS, exist_ok=True)
        with open("/etc/netns/%s/resolv.conf" % HOST_NS, "w") as f:
            f.write("nameserver 45.1.1.53\n")
        time.sleep(0.5)

    def down(self):
        for p in self.procs:
            p.kill()
            p.wait()
        for ns in (HOST_NS, INET_NS):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree("/etc/netns/" + HOST_NS, ignore_errors=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


def outer(script=None):
    """Makes the world, runs this file (or script, another suite that
    shares the world: test_egress_e2b.py, tests/browser/test_network_page.py)
    again inside the host namespace, with --inner."""
    from seclib import skip_reason
    why = skip_reason()
    if not why and not shutil.which("nft"):
        why = "nft is not installed (apt-get install nftables)"
    if not why and not shutil.which("dnsmasq"):
        why = "dnsmasq is not installed (apt-get install dnsmasq-base)"
    if why:
        print("SKIP security/test_egress: %s" % why, flush=True)
        return 0
    w = World()
    try:
        w.up()
        env = dict(os.environ, EGRESS_HITS=w.hits, EGRESS_NS=HOST_NS + " " + INET_NS)
        return subprocess.call(["ip", "netns", "exec", HOST_NS, sys.executable, os.path.abspath(script or __file__),
                                "--inner"] + sys.argv[1:], env=env)
    finally:
        w.down()


# ---- inside the host namespace -------------------------------------------------------------------

PROBE = r'''
import socket, time
def resolve(name):
    t = time.time()
    try:
        return {"addrs": sorted({a[4][0] for a in socket.getaddrinfo(name, 80, socket.AF_INET)}),
                "s": time.time() - t}
    except socket.gaierror as e:
        return {"error": "gaierror %d" % e.errno, "s": time.time() - t}
def http(addr, host, port=80, path="/"):
    t = time.time()
    s = socket.socket()
    s.settimeout(8)
    req = ("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path, host)).encode()
    got = b""
    try:
        s.connect((addr, port))
        s.sendall(req)
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except OSError as e:
        return {"error": type(e).__name__ + " " + (ename(e.errno) if e.errno else str(e)), "s": time.time() - t,
                "got": got.decode(errors="replace")}
    finally:
        s.close()
    return {"body": got.decode(errors="replace").split("\r\n\r\n", 1)[-1], "sent": len(req), "recv": len(got),
            "s": time.time() - t}
'''


def probe(conn, sid, code):
    from seclib import py
    return py(conn, sid, PROBE + "\n" + code, timeout_ms=60000)


def hits():
    try:
        with open(os.environ["EGRESS_HITS"]) as f:
            return [json.loads(x) for x in f if x.strip()]
    except OSError:
        return []


def record(d, sid):
    path = os.path.join(d.var, "netgw", sid, "record.jsonl")
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


def set_policy(d, sid, policy):
    """What PATCH does: the policy file replaced, then SIGHUP to the gateway."""
    dirp = os.path.join(d.var, "netgw", sid)
    tmp = os.path.join(dirp, ".policy.test")
    with open(tmp, "w") as f:
        f.write(json.dumps(policy))
    os.rename(tmp, os.path.join(dirp, "policy"))
    with open(os.path.join(dirp, "pid")) as f:
        os.kill(int(f.read()), signal.SIGHUP)
    time.sleep(0.3)


POLICY = {"allow": ["allowed.test", "*.wild.test", "denied.test"], "deny": ["denied.test"]}


def make(d, policy=POLICY):
    # the gateway of a root client runs as nobody: it must reach var/netgw
    os.chmod(d.tmp, 0o711)
    os.chmod(d.var, 0o711)
    c = d.connect()
    sid = c.create(network="egress", policy=json.dumps(policy))
    return c, sid


def check_world_is_closed(d):
    """No route leaves the two namespaces: asserted before any probe."""
    links = json.loads(run("ip", "-j", "link", "show"))
    names = sorted(x["ifname"] for x in links)
    assert names == ["lo", "up0"], "the host namespace has links %s" % names
    routes = json.loads(run("ip", "-j", "route", "show"))
    assert all(r.get("dev") == "up0" for r in routes), routes
    assert any(r["dst"] == "default" and r.get("gateway") == "45.1.0.1" for r in routes), routes
    inet = os.environ["EGRESS_NS"].split()[1]
    links = json.loads(run("ip", "-j", "link", "show", ns=inet))
    assert sorted(x["ifname"] for x in links) == ["down0", "lo"], links
    routes = json.loads(run("ip", "-j", "route", "show", ns=inet))
    assert not any(r["dst"] == "default" for r in routes), "the internet namespace has a way out: %s" % routes


def check_allowed_name_is_reached(d):
    c, sid = make(d)
    r = probe(c, sid, 'out({"dns": resolve("allowed.test"), "http": http("45.1.1.10", "allowed.test")})')
    assert r["dns"].get("addrs") == ["45.1.1.10"], r
    assert r["http"].get("body", "").startswith("server 45.1.1.10 host allowed.test"), r
    full = record(d, sid)
    # one line for the name's answer (its A question; the AAAA beside it is not a lookup), one for the connection
    dns = [(x["name"], x.get("addr"), x["allowed"], x["rule"]) for x in full if x["kind"] == "dns"]
    assert dns == [("allowed.test", "45.1.1.10", True, "resolved")], full
    rec = [x for x in full if x["kind"] == "tcp"]
    assert len(rec) == 1 and len(full) == 2, full
    x = rec[0]
    assert x["allowed"] and x["name"] == "allowed.test" and x["addr"] == "45.1.1.10" and x["port"] == 80, x
    assert x["rule"] == "allow allowed.test", x
    # exact bytes: what the sandbox sent and what it received
    assert x["bytes_out"] == r["http"]["sent"] and x["bytes_in"] == r["http"]["recv"], (x, r["http"])


def check_denied_and_unknown_names_get_nxdomain(d):
    c, sid = make(d)
    r = probe(c, sid, 'out({"denied": resolve("denied.test"), "unknown": resolve("nowhere.test"), '
                      '"wild_self": resolve("wild.test"), "wild": resolve("api.wild.test")})')
    for k in ("denied", "unknown", "wild_self"):
        assert "error" in r[k] and r[k]["s"] < 3, (k, r)
    assert r["wild"].get("addrs") == ["45.1.1.10"], r
    rec = record(d, sid)
    dns = {(x["name"], x["allowed"]): x["rule"] for x in rec if x["kind"] == "dns"}
    assert dns.get(("denied.test", False)) == "deny denied.test", rec
    assert dns.get(("nowhere.test", False)) == "no allow rule names it", rec
    assert ("api.wild.test", True) in dns, rec


def check_address_literal_and_wrong_host_are_refused(d):
    c, sid = make(d)
    before = len(hits())
    r = probe(c, sid, 'resolve("allowed.test")\n'
                      'out({"literal": http("45.1.1.10", "45.1.1.10"), "other": http("45.1.1.20", "allowed.test"), '
                      '"denied_addr": http("45.1.1.20", "denied.test"), "port": http("45.1.1.10", "allowed.test", '
                      '8080), "literal_other": http("45.1.1.10", "45.1.1.20")})')
    for k in ("literal", "other", "denied_addr", "literal_other"):
        assert "error" in r[k] and r[k]["s"] < 3, (k, r)
    # no name rule for 8080 is needed: "allowed.test" has no port, so 8080 is allowed by it
    assert r["port"].get("body", "").startswith("server 45.1.1.10"), r
    new = hits()[before:]
    assert all(h["port"] == 8080 for h in new), "a refused connection reached a server: %s" % new
    rec = [x for x in record(d, sid) if x["kind"] == "tcp" and not x["allowed"]]
    got = sorted((x["addr"], x["port"], x["name"] or "", x["rule"]) for x in rec)
    want = sorted([
        # a Host that is the destination's address names nothing: judged by
        # network rules and "*" alone (none here); another address is refused
        ("45.1.1.10", 80, "", "an address no allow rule names"),
        ("45.1.1.10", 80, "45.1.1.20", "the HTTP Host is an address, not a name"),
        ("45.1.1.20", 80, "allowed.test", "the HTTP Host allowed.test is not a name the gateway resolved to this "
                                          "address"),
        ("45.1.1.20", 80, "denied.test", "deny denied.test"),
    ])
    assert got == want, got
    assert all(x["bytes_out"] == 0 and x["bytes_in"] == 0 for x in rec), rec


def check_rebinding_metadata_and_host_are_refused(d):
    c, sid = make(d)
    before = len(hits())
    r = probe(c, sid, 'out({"rebind": resolve("rebind.test"), "host": resolve("hostaddr.test"), '
                      '"meta_name": resolve("meta.test"), "meta": http("169.254.169.254", "meta.test"), '
                      '"host_direct": http("45.1.0.2", "allowed.test"), "gw": http("10.200.0.1", "x", 15001)})')
    assert "error" in r["rebind"] and "error" in r["host"] and "error" in r["meta_name"], r
    for k in ("meta", "host_direct", "gw"):
        assert "error" in r[k] and r[k]["s"] < 3, (k, r)
    assert len(hits()) == before, hits()[before:]


def check_other_protocols_are_refused(d):
    c, sid = make(d, {"allow": ["*"]})
    r = probe(c, sid, r'''
res = {}
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(3)
u.connect(("45.1.1.10", 9999))
t = time.time()
try:
    u.send(b"x")
    u.recv(10)
    res["udp"] = "answered"
except OSError as e:
    res["udp"] = type(e).__name__
res["udp_s"] = time.time() - t
got = []
for kind in (socket.SOCK_RAW, socket.SOCK_DGRAM):
    try:
        ic = socket.socket(socket.AF_INET, kind, socket.IPPROTO_ICMP)
    except OSError as e:
        got.append("cannot open: " + type(e).__name__)
        continue
    ic.settimeout(3)
    try:
        ic.sendto(bytes([8, 0, 0xf7, 0xff, 0, 0, 0, 0]), ("45.1.1.10", 0))
        t = time.time()
        while time.time() - t < 3:
            b = ic.recv(200)
            got.append(b[20] if kind == socket.SOCK_RAW else b[0])
    except OSError as e:
        got.append(type(e).__name__)
res["icmp_types"] = got
try:
    s6 = socket.socket(socket.AF_INET6)
    s6.settimeout(3)
    s6.connect(("2001:4860::1", 80))
    res["v6"] = "connected"
except OSError as e:
    res["v6"] = type(e).__name__
out(res)''')
    assert r["udp"] != "answered" and r["udp_s"] < 3, r
    assert 0 not in r["icmp_types"], "an echo reply came back: %s" % r
    assert r["v6"] != "connected", r


def check_policy_changes_at_run_time(d):
    c, sid = make(d, {"allow": ["allowed.test"]})
    r1 = probe(c, sid, 'out({"dns": resolve("later.test")})')
    assert "error" in r1["dns"], r1
    set_policy(d, sid, {"allow": ["allowed.test", "later.test"]})
    r2 = probe(c, sid, 'out({"dns": resolve("later.test"), "http": http("45.1.1.20", "later.test")})')
    assert r2["dns"].get("addrs") == ["45.1.1.20"], r2
    assert r2["http"].get("body", "").startswith("server 45.1.1.20 host later.test"), r2
    set_policy(d, sid, {"allow": ["allowed.test"]})
    r3 = probe(c, sid, 'out({"http": http("45.1.1.20", "later.test")})')
    assert "error" in r3["http"], r3


def check_operator_ceiling(d):
    c = d.connect()
    from seclib import RpcError
    try:
        sid = c.create(network="egress", policy=json.dumps(POLICY))
    except RpcError as e:
        raise AssertionError("refused: %s" % e)
    assert sid
    # no policy at all: a clear refusal, not a sandbox with no rules
    r = c.call({"op": "create", "network": "egress"})
    assert not r.get("ok") and "policy" in r.get("message", ""), r


def check_api_record_and_patch(d):
    """Through the sandbox API: create with a policy, 403 beyond the
    ceiling, the record by GET .../network, a change by PATCH."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    from stack import Stack
    import http.client
    tok = "egress-" + uuid.uuid4().hex
    env = {"LLMBOX_NETWORK_EGRESS_MAX": "*.test", "LLMBOX_SANDBOX_API_TOKEN": tok}
    with Stack(model=False, env=env, web_env=env) as st:
        def call(method, path, body=None):
            c = http.client.HTTPConnection("127.0.0.1", st.port, timeout=60)
            c.request(method, path, json.dumps(body) if body is not None else None,
                      {"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
            r = c.getresponse()
            data = r.read()
            c.close()
            return r.status, (json.loads(data) if data else None)
        status, o = call("POST", "/api/sandboxes", {"network": {"allow": ["evil.example"]}})
        assert status == 403 and "evil.example" in o["error"]["message"], (status, o)
        status, o = call("POST", "/api/sandboxes", {"network": {"allow": ["allowed.test"]}})
        assert status in (200, 201), (status, o)
        sid = o["id"]
        code = ("import socket\ns = socket.create_connection(('allowed.test', 80), 5)\n"
                "s.sendall(b'GET / HTTP/1.1\\r\\nHost: allowed.test\\r\\nConnection: close\\r\\n\\r\\n')\n"
                "buf = b''\n"
                "while True:\n"
                "    b = s.recv(4096)\n"
                "    if not b: break\n"
                "    buf += b\n"
                "print(buf.decode().splitlines()[-1])\n")
        status, o = call("POST", "/api/sandboxes/%s/exec" % sid, {"command": "python3 -c \"%s\"" %
                                                                  code.replace('"', '\\"')})
        assert status == 200 and "server 45.1.1.10" in o.get("stdout", ""), (status, o)
        status, o = call("GET", "/api/sandboxes/%s/network" % sid)
        assert status == 200, (status, o)
        tcp = [x for x in o["connections"] if x["kind"] == "tcp"]
        assert len(tcp) == 1 and tcp[0]["allowed"] and tcp[0]["name"] == "allowed.test", o
        assert o["network"] == {"allow": ["allowed.test"], "deny": []}, o
        status, o = call("PATCH", "/api/sandboxes/%s/network" % sid, {"allow": ["evil.example"]})
        assert status == 403, (status, o)
        status, o = call("PATCH", "/api/sandboxes/%s/network" % sid, {"allow": ["later.test"]})
        assert status == 200 and o["network"]["allow"] == ["later.test"], (status, o)
        status, o = call("POST", "/api/sandboxes/%s/exec" % sid,
                         {"command": "getent hosts allowed.test; echo rc=$?; getent hosts later.test"})
        assert status == 200 and "rc=2" in o["stdout"] and "45.1.1.20" in o["stdout"], (status, o)
        netgw = os.path.join(st.prefix, "var", "netgw")
        assert len(os.listdir(netgw)) == 1, os.listdir(netgw)
        call("DELETE", "/api/sandboxes/%s" % sid)
        # the gateway's folder goes with its sandbox
        assert os.listdir(netgw) == [], os.listdir(netgw)

        # E2B's create: network {allowOut, denyOut} becomes the same rules
        def e2b(body):
            c = http.client.HTTPConnection("127.0.0.1", st.port, timeout=60)
            c.request("POST", "/e2b/sandboxes", json.dumps(body), {"X-API-KEY": tok,
                                                                     "Content-Type": "application/json"})
            r = c.getresponse()
            data = r.read()
            c.close()
            return r.status, (json.loads(data) if data else None)
        status, o = e2b({"templateID": "base", "allow_internet_access": False,
                         "network": {"allowOut": ["allowed.test"], "denyOut": ["0.0.0.0/0"]}})
        assert status == 201, (status, o)
        eid = o["sandboxID"]
        status, o = call("GET", "/api/sandboxes/%s/network" % eid)
        # E2B's rules carry E2B's precedence: an allowOut entry wins over denyOut
        assert status == 200 and o["network"] == {"allow": ["allowed.test"], "deny": [], "precedence": "allow"}, \
            (status, o)
        status, o = call("POST", "/api/sandboxes/%s/exec" % eid,
                         {"command": "getent hosts allowed.test; getent hosts later.test; echo rc=$?"})
        assert status == 200 and "45.1.1.10" in o["stdout"] and "rc=2" in o["stdout"], (status, o)
        call("DELETE", "/api/sandboxes/%s" % eid)
        status, o = e2b({"templateID": "base", "network": {"allowOut": ["evil.example"], "denyOut": ["0.0.0.0/0"]}})
        assert status == 403 and "evil.example" in json.dumps(o), (status, o)

        # a sandboxd killed with a sandbox of rules running: the restarted
        # one removes the gateway folder it left
        status, o = call("POST", "/api/sandboxes", {"network": {"allow": ["allowed.test"]}})
        assert status in (200, 201) and len(os.listdir(netgw)) == 1, (status, o, os.listdir(netgw))
        st.kill("sandboxd")
        assert len(os.listdir(netgw)) == 1, os.listdir(netgw)
        st.restart("sandboxd")
        for _ in range(100):  # bounds a hang
            if not os.listdir(netgw):
                break
            time.sleep(0.1)
        with open(os.path.join(st.prefix, "var", "log", "sandboxd.log")) as f:
            log = f.read()
        assert os.listdir(netgw) == [], (os.listdir(netgw), log[-3000:])


def check_task_through_gateway(d):
    """A task whose network is a policy: 403 beyond the ceiling; its agent's
    sandbox reaches the allowed name and the record comes by
    GET /api/tasks/{id}/network."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    from stack import Stack
    cmd = ("python3 -c \"import urllib.request; print(urllib.request.urlopen('http://allowed.test/t', "
           "timeout=10).read().decode())\" > /testbed/output/got.txt 2>&1; getent hosts later.test >> "
           "/testbed/output/got.txt; echo rc=$? >> /testbed/output/got.txt")
    steps = [{"tool_calls": [{"name": "bash", "arguments": {"command": cmd}}]},
             {"tool_calls": [{"name": "finish", "arguments": {"answer": "done"}}]}]
    tok = "egress-" + uuid.uuid4().hex
    env = {"LLMBOX_NETWORK_EGRESS_MAX": "*.test", "LLMBOX_NETWORK_MAX_MB": "1"}
    finish = [{"tool_calls": [{"name": "finish", "arguments": {"answer": "done"}}]}]
    scen = {"scenarios": [{"match": "[fetch]", "steps": steps}], "steps": finish}
    with Stack(scenario=scen, env=env, web_env={"LLMBOX_SANDBOX_API_TOKEN": tok}) as st:
        # a rollout's network: the same rules and ceiling
        import http.client
        for net, want in (({"allow": ["evil.example"]}, 403), ({"allow": ["10.0.0.0/8", "allowed.test"]}, 403),
                          ({"allow": ["nope nope"]}, 400), ({"allow": ["allowed.test"]}, 201)):
            c = http.client.HTTPConnection("127.0.0.1", st.port, timeout=60)
            c.request("POST", "/api/rollouts", json.dumps({"prompt": "roll", "n": 1, "network": net}),
                      {"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
            resp = c.getresponse()
            body = resp.read().decode()
            c.close()
            assert resp.status == want and (want != 403 or "beyond what this service allows" in body), (resp.status,
                                                                                                    body)
        # an evaluation's network: the same rules and ceiling
        from stack import multipart
        row = {"id": "r1", "domain": "math", "ground_truth": "4", "scorer": "numeric", "problem_statement": "2+2"}
        for net, want in ((json.dumps({"allow": ["evil.example"]}), 403), ("{\"allow\": [", 400),
                          (json.dumps({"allow": ["allowed.test"]}), 201)):
            ctype, body = multipart({"mode": "sandbox", "network": net},
                                    [("dataset", "set.jsonl", (json.dumps(row) + "\n").encode())])
            status, _, resp = st.request("POST", "/api/evals", body, {"Content-Type": ctype})
            assert status == want and (want != 403 or b"evil.example" in resp), (status, resp)
        status, b = st.create_task("[fetch] go", network=json.dumps({"allow": ["evil.example"]}))
        assert status == 403 and "evil.example" in json.dumps(b), (status, b)
        # a byte allowance beyond the operator's network_max_mb (1 MiB here)
        status, b = st.create_task("[fetch] go", network=json.dumps({"allow": ["allowed.test"],
                                                                     "max_bytes": (1 << 20) + 1}))
        assert status == 403 and "network_max_mb" in json.dumps(b) and "1048577" in json.dumps(b), (status, b)
        status, b = st.create_task("[fetch] go", network=json.dumps({"allow": ["allowed.test"]}))
        assert status == 201, (status, b)
        tid = b["id"]
        t = st.wait_task(tid, timeout=120)
        assert t["status"] == "succeeded", t
        with open(os.path.join(st.prefix, "artifacts", tid, "output", "got.txt")) as f:
            got = f.read()
        assert "server 45.1.1.10 host allowed.test path /t" in got and "rc=2" in got, got
        status, o = st.get_json("/api/tasks/%s/network" % tid)
        assert status == 200, (status, o)
        tcp = [x for x in o["connections"] if x["kind"] == "tcp"]
        assert len(tcp) == 1 and tcp[0]["allowed"] and tcp[0]["name"] == "allowed.test" and tcp[0]["bytes_in"] > 0, o
        dns = [x for x in o["connections"] if x["kind"] == "dns" and not x["allowed"]]
        assert any(x["name"] == "later.test" for x in dns), o
        # the sandbox has ended: its gateway's folder is gone, the record
        # above came from the task's own files
        assert os.listdir(os.path.join(st.prefix, "var", "netgw")) == [], os.listdir(os.path.join(st.prefix, "var",
                                                                                                 "netgw"))
        with open(os.path.join(st.prefix, "artifacts", tid, "network.json")) as f:
            kept = json.load(f)
        assert kept["connections"] == o["connections"] and kept["network"]["allow"] == ["allowed.test"], \
            (kept, o)


def check_connection_cap_refuses_at_once(d):
    """More than 64 connections at once from one sandbox: the rest are
    reset at once and recorded, while another sandbox's request goes
    through."""
    c, sid = make(d, {"allow": ["allowed.test"]})
    c2, sid2 = make(d, {"allow": ["allowed.test"]})
    r = probe(c, sid, r'''
addr = resolve("allowed.test")["addrs"][0]
held, refused = [], 0
t = time.time()
for i in range(80):
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect((addr, 80))
        held.append(s)
    except OSError:
        refused += 1
# a connection over the cap is reset as soon as the gateway sees it
time.sleep(0.5)
reset = 0
for s in held:
    s.setblocking(False)
    try:
        if s.recv(1) == b"":
            reset += 1
    except BlockingIOError:
        pass
    except OSError:
        reset += 1
out({"refused": refused, "reset": reset, "s": time.time() - t})''')
    other = probe(c2, sid2, 'out(http(resolve("allowed.test")["addrs"][0], "allowed.test"))')
    assert other.get("body", "").startswith("server 45.1.1.10"), other
    assert r["refused"] + r["reset"] >= 16 and r["s"] < 4, r
    capped = [x for x in record(d, sid) if x["kind"] == "tcp" and "too many connections" in x["rule"]]
    assert len(capped) >= 16, capped


def check_eval_counts_external_by_traffic(d):
    """An evaluation in sandbox mode with network rules, whose row's command
    fetches the allowed upstream with Python's socket module (no external
    pattern matches it): its result counts the connection by traffic, and
    the summary says both numbers (0 by pattern, all runs by traffic)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    from stack import Stack, multipart
    cmd = ("python3 -c \"import socket; s = socket.create_connection(('allowed.test', 80), 10); "
           "s.sendall(b'GET /ev HTTP/1.0\\r\\nHost: allowed.test\\r\\n\\r\\n'); print(s.recv(4096).decode())\"")
    steps = [{"tool_calls": [{"name": "bash", "arguments": {"command": cmd}}]},
             {"tool_calls": [{"name": "finish", "arguments": {"answer": "4"}}]}]
    scen = {"scenarios": [{"match": "[netfetch]", "steps": steps}], "steps": steps[1:]}
    with Stack(scenario=scen, env={"LLMBOX_NETWORK_EGRESS_MAX": "*.test"}) as st:
        row = {"id": "n1", "domain": "math", "ground_truth": "4", "scorer": "numeric",
               "problem_statement": "[netfetch] 2+2"}
        ctype, body = multipart({"mode": "sandbox", "network": json.dumps({"allow": ["allowed.test"]})},
                                [("dataset", "set.jsonl", (json.dumps(row) + "\n").encode())])
        status, _, resp = st.request("POST", "/api/evals", body, {"Content-Type": ctype})
        assert status == 201, (status, resp)
        eid = json.loads(resp)["id"]
        deadline = time.time() + 180
        while True:
            status, e = st.get_json("/api/evals/" + eid)
            if e.get("status") in ("succeeded", "failed", "cancelled") or time.time() > deadline:
                break
            time.sleep(0.5)
        assert e.get("status") == "succeeded", e
        status, _, body = st.request("GET", "/api/evals/%s/results.jsonl" % eid)
        line = json.loads(body.decode().splitlines()[0])
        assert any(h.get("host") == "allowed.test" for h in hits()), "the row's command reached no upstream"
        caps = line["capabilities"]
        assert caps and caps["external"] == 0 and caps["external_connections"] == 1, line
        c = e["summary"]["overall"]["capabilities"]
        assert c["traffic_rows"] == 1 and c["external_runs_by_pattern"] == 0, c
        assert c["external_runs_by_traffic"] == 1 and c["external_connections"] == 1, c
        status, _, md = st.request("GET", "/api/evals/%s/summary.md" % eid)
        assert b"## External access by traffic" in md and b"| **Overall** | 0.0% | 100.0% | 1 | 1 |" in md, md


def check_byte_allowance_cuts_and_refuses(d):
    """A policy's max_bytes (within the operator's network_max_mb, which
    this suite sets): a download past it is cut, a connection left idle
    meanwhile is cut within seconds, the next connection is refused at
    once, and the record says why for each."""
    c, sid = make(d, {"allow": ["allowed.test"], "max_bytes": 300000})
    r = probe(c, sid, r'''
addr = resolve("allowed.test")["addrs"][0]
idle = socket.create_connection((addr, 80), 10)
idle.sendall(b"GET /idle HTTP/1.1\r\nHost: allowed.test\r\n")  # the server waits for the rest
time.sleep(1.5)  # past the gateway's wait for the Host: relayed
big = http(addr, "allowed.test", path="/big/4000000")
t = time.time()
after = http(addr, "allowed.test")
after_s = time.time() - t
idle.settimeout(10)
try:
    idle_end = "eof" if idle.recv(100) == b"" else "data"
except socket.timeout:
    idle_end = "still open"
except OSError as e:
    idle_end = type(e).__name__
out({"big": {k: v for k, v in big.items() if k not in ("body", "got")}, "after": after, "after_s": after_s,
     "idle": idle_end, "idle_s": time.time() - t})''')
    got = r["big"].get("recv", len(r["big"].get("got", "")))
    assert "error" in r["big"] or got < 400000, r  # cut well before 4 MB
    assert "error" in r["after"] and "body" not in r["after"] and r["after_s"] < 3, r
    assert r["idle"] in ("eof", "ConnectionResetError") and r["idle_s"] < 8, r  # cut, not left open
    rec = [x for x in record(d, sid) if x["kind"] == "tcp"]
    why = "byte allowance (max_bytes) is spent"
    cut = [x for x in rec if x["allowed"] and why in x["rule"]]
    refused = [x for x in rec if not x["allowed"] and why in x["rule"]]
    big = [x for x in cut if x["bytes_in"] > 100000]
    assert len(cut) == 2 and len(big) == 1 and 200000 < big[0]["bytes_in"] + big[0]["bytes_out"] <= 300000, rec
    assert refused and refused[0]["name"] == "allowed.test", rec


CHECKS = [
    ("world_is_closed", check_world_is_closed),
    ("allowed_name_is_reached", check_allowed_name_is_reached),
    ("denied_and_unknown_names_get_nxdomain", check_denied_and_unknown_names_get_nxdomain),
    ("address_literal_and_wrong_host_are_refused", check_address_literal_and_wrong_host_are_refused),
    ("rebinding_metadata_and_host_are_refused", check_rebinding_metadata_and_host_are_refused),
    ("other_protocols_are_refused", check_other_protocols_are_refused),
    ("policy_changes_at_run_time", check_policy_changes_at_run_time),
    ("operator_ceiling", check_operator_ceiling),
    ("api_record_and_patch", check_api_record_and_patch),
    ("task_through_gateway", check_task_through_gateway),
    ("connection_cap_refuses_at_once", check_connection_cap_refuses_at_once),
    ("byte_allowance_cuts_and_refuses", check_byte_allowance_cuts_and_refuses),
    ("eval_counts_external_by_traffic", check_eval_counts_external_by_traffic),
]


def inner():
    from seclib import suite_main
    sys.argv = [sys.argv[0]] + [a for a in sys.argv[1:] if a != "--inner"]
    if sys.argv[1:] and "world_is_closed" not in sys.argv[1:]:
        sys.argv.insert(1, "world_is_closed")  # always first
    return suite_main("security/", CHECKS, env={"LLMBOX_NETWORK_EGRESS_MAX": "*", "LLMBOX_NETWORK_MAX_MB": "64"})


if __name__ == "__main__":
    sys.exit(inner() if "--inner" in sys.argv else outer())
