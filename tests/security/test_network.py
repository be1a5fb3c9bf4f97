#!/usr/bin/env python3
"""Security: reaching the host from a sandbox over the network.

The test starts a TCP server on the host's 127.0.0.1 and an abstract unix
socket on the host, then tries to reach them from a sandbox in `none` mode
(loopback only) and in `nat` mode (slirp4netns with host loopback
disabled: the host is 10.0.2.2 there, and connecting to it must fail).
Nothing here sends traffic to any address but the sandbox's own loopback,
10.0.2.2 (slirp's alias of the host loopback, refused) and the host's
127.0.0.1 server. Run as root:

    python3 tests/security/test_network.py [CHECK...]
"""
import os
import socket
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seclib import (Problems, descendants, init_hostpid, pidns_of, proc_cmdline, py,  # noqa: E402
                    suite_main, wait_gone)


class HostServers:
    """A TCP listener on 127.0.0.1 and an abstract unix socket; counts every
    connection they accept."""

    def __init__(self):
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(16)
        self.port = self.tcp.getsockname()[1]
        self.abstract = "llmbox-sectest-" + uuid.uuid4().hex[:12]
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind("\0" + self.abstract)
        self.unix.listen(16)
        self.accepted = []
        self.stop = False
        self.threads = [threading.Thread(target=self._serve, args=(s, n), daemon=True)
                        for s, n in ((self.tcp, "tcp"), (self.unix, "abstract unix"))]
        for t in self.threads:
            t.start()

    def _serve(self, s, name):
        s.settimeout(0.2)
        while not self.stop:
            try:
                conn, _ = s.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted.append(name)
            try:
                conn.sendall(b"host-server\n")
            except OSError:
                pass
            conn.close()

    def close(self):
        self.stop = True
        for t in self.threads:
            t.join(2)
        self.tcp.close()
        self.unix.close()


PROBE = r'''
import socket
res = {"ifaces": sorted(n for _, n in socket.if_nameindex())}
def tcp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, port))
        data = s.recv(64)
        return "connected: %r" % data
    except OSError as e:
        return type(e).__name__ + ": " + (ename(e.errno) if e.errno else str(e))
    finally:
        s.close()
for host in HOSTS:
    res["tcp %s:%d" % (host, PORT)] = tcp(host, PORT)
u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    u.connect("\0" + ABSTRACT)
    res["abstract unix"] = "connected"
except OSError as e:
    res["abstract unix"] = ename(e.errno)
out(res)
'''


def _probe(c, sid, srv, hosts):
    code = PROBE.replace("HOSTS", repr(hosts)).replace("PORT", str(srv.port)) \
        .replace("ABSTRACT", repr(srv.abstract))
    return py(c, sid, code, timeout_ms=30000)


def net_none(d):
    """network "none" (also the default): only lo; the host's 127.0.0.1
    server and abstract unix sockets are out of reach."""
    p = Problems()
    srv = HostServers()
    try:
        with d.connect() as c:
            for spec in ({}, {"network": "none"}):
                sid = c.create(memory_mib=128, **spec)
                res = _probe(c, sid, srv, ["127.0.0.1"])
                p.expect(res["ifaces"] == ["lo"], "%s: interfaces %s" % (spec, res["ifaces"]))
                reached = {k: v for k, v in res.items() if "connected" in str(v)}
                p.expect(not reached, "%s: reached %s" % (spec or "default", reached))
                c.destroy(sid)
        time.sleep(0.3)
        p.expect(not srv.accepted, "the host servers accepted %s" % srv.accepted)
    finally:
        srv.close()
    p.raise_if()


def net_nat(d):
    """network "nat": a real outbound interface exists (slirp4netns), but the
    host loopback is disabled: 10.0.2.2:<port> of a server on the host's
    127.0.0.1 is refused, so are 127.0.0.1 and abstract unix sockets. The
    helper process dies with the sandbox."""
    p = Problems()
    srv = HostServers()
    try:
        with d.connect() as c:
            try:
                sid = c.create(memory_mib=128, network="nat")
            except Exception as e:  # noqa: BLE001
                raise AssertionError("create with network nat failed: %s" % e)
            ns = pidns_of(c, sid)
            helpers = _slirp_helpers(d, init_hostpid(ns))
            res = _probe(c, sid, srv, ["10.0.2.2", "127.0.0.1"])
            p.expect([i for i in res["ifaces"] if i != "lo"],
                     "nat mode is not active: interfaces %s" % res["ifaces"])
            reached = {k: v for k, v in res.items() if "connected" in str(v)}
            p.expect(not reached, "reached %s" % reached)
            c.destroy(sid)
            wait_gone(d.var, sid, ns)
            time.sleep(0.3)
            alive = [pid for pid in helpers if os.path.exists("/proc/%d" % pid)]
            p.expect(not alive, "slirp4netns still running after destroy: %s" % alive)
        p.expect(not srv.accepted, "the host servers accepted %s" % srv.accepted)
    finally:
        srv.close()
    p.raise_if()


def _slirp_helpers(d, init):
    """slirp4netns processes serving this sandbox: sandboxd's descendants,
    or any naming the sandbox init's pid (it may be double-forked)."""
    found = set(x for x in descendants(d.proc.pid) if "slirp4netns" in proc_cmdline(x))
    for e in os.listdir("/proc"):
        if e.isdigit():
            cmd = proc_cmdline(int(e))
            if "slirp4netns" in cmd and (str(init) in cmd.split() or "/proc/%d/" % init in cmd):
                found.add(int(e))
    return sorted(found)


def net_namespace_each_its_own(d):
    """Every sandbox has a network namespace of its own, also those whose
    namespace the zygote made ahead (a stock of 4): six alive at once each
    show another namespace than the host's and than each other's, each
    has lo up, and each binds 127.0.0.1:7777 while the others hold it."""
    p = Problems()
    host = os.readlink("/proc/self/ns/net")
    hold = ("nohup python3 -c \"import socket,time; s=socket.socket(); "
            "s.bind(('127.0.0.1',7777)); s.listen(); open('/tmp/bound','w').write('bound'); "
            "time.sleep(60)\" >/dev/null 2>&1 &")
    with d.connect() as c:
        sids = [c.create(memory_mib=128) for _ in range(6)]
        try:
            for sid in sids:
                c.exec(sid, hold)
            seen = {}
            for sid in sids:
                r = c.exec(sid, "for i in $(seq 50); do [ -s /tmp/bound ] && break; sleep 0.1; done; "
                                "cat /tmp/bound; echo; readlink /proc/self/ns/net; "
                                "cat /sys/class/net/lo/operstate 2>/dev/null || "
                                "python3 -c \"import fcntl,socket,struct; "
                                "print('up' if struct.unpack('16sH',fcntl.ioctl(socket.socket(),0x8913,"
                                "struct.pack('16sH',b'lo',0)))[1] & 1 else 'down')\"")
                out = r.get("stdout", "").split()
                p.expect(len(out) >= 2 and out[0] == "bound", "%s could not hold 127.0.0.1:7777: %r" % (sid, r))
                ns = out[1] if len(out) > 1 else ""
                p.expect(ns.startswith("net:[") and ns != host, "%s: namespace %r (host %s)" % (sid, ns, host))
                p.expect(ns not in seen, "%s shares %s with %s" % (sid, ns, seen.get(ns)))
                seen[ns] = sid
                p.expect(len(out) > 2 and out[2] in ("up", "unknown"), "%s: lo is %r" % (sid, out[2:]))
        finally:
            for sid in sids:
                c.destroy(sid)
    p.raise_if()


CHECKS = [
    ("net_none_host_loopback", net_none),
    ("net_nat_host_loopback", net_nat),
    ("net_namespace_each_its_own", net_namespace_each_its_own),
]

if __name__ == "__main__":
    sys.exit(suite_main("security/", CHECKS, env={"LLMBOX_NETWORK_ALLOW": "none,nat"}))
