#!/usr/bin/env python3
"""A sandbox's network through the gateway (a policy of rules) against
today's `nat` (slirp4netns), in one run, on one machine.

It makes the same closed world as tests/security/test_egress.py (a "host"
namespace where sandboxd runs, an "internet" namespace with the servers;
no packet leaves the machine), one sandbox of each kind, and measures in
each, from inside:

  request round trip   connect, GET, read the whole answer, close: 200
                       sequential requests to a small HTTP server
                       (connection setup is most of it)
  throughput           one TCP connection reading 256 MiB from a server
                       that writes as fast as it can
  CPU per connection   N more requests like the first (--conns, 2000):
                       the CPU time of the network's helper process
                       (the gateway, `llmbox netgw`, or slirp4netns), from
                       its /proc/PID/stat before and after, and of the
                       sandbox's client process (its own user + system
                       time, which holds the sandbox side of the kernel's
                       TCP work), each divided by N

Run as root:

    python3 bench/egress.py [--conns N]
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "security"))
import test_egress as T  # noqa: E402

BULK = r'''
import socket, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 9000))
s.listen(16)
chunk = b"x" * 262144
def serve(c):
    want = 256 << 20
    try:
        while want > 0:
            c.sendall(chunk)
            want -= len(chunk)
    except OSError:
        pass
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
'''

PROBE = r'''
import socket, time
addr = socket.getaddrinfo("allowed.test", 80, socket.AF_INET)[0][4][0]
req = b"GET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n"
lat = []
for i in range(200):
    t = time.perf_counter()
    s = socket.create_connection((addr, 80), 10)
    s.sendall(req)
    while s.recv(65536):
        pass
    s.close()
    lat.append(time.perf_counter() - t)
lat.sort()
t = time.perf_counter()
s = socket.create_connection((addr, 9000), 10)
n = 0
while True:
    b = s.recv(1 << 20)
    if not b:
        break
    n += len(b)
dt = time.perf_counter() - t
out({"median_ms": lat[len(lat) // 2] * 1000, "p90_ms": lat[int(len(lat) * 0.9)] * 1000,
     "mib_s": n / dt / (1 << 20), "bytes": n})
'''


CONNS = r'''
import socket, time
addr = socket.getaddrinfo("allowed.test", 80, socket.AF_INET)[0][4][0]
req = b"GET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n"
c0, t0 = time.process_time(), time.perf_counter()
for i in range(%d):
    s = socket.create_connection((addr, 80), 10)
    s.sendall(req)
    while s.recv(65536):
        pass
    s.close()
out({"client_cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - t0})
'''


def cpu_s(pid):
    """utime + stime of process pid (all its threads, ended ones too)."""
    with open("/proc/%d/stat" % pid) as f:
        f_ = f.read().rsplit(")", 1)[1].split()
    return (int(f_[11]) + int(f_[12])) / os.sysconf("SC_CLK_TCK")


def slirps(root):
    from seclib import descendants
    out = set()
    for pid in descendants(root):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if f.read().startswith(b"slirp4netns:"):
                    out.add(pid)
        except OSError:
            pass
    return out


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def inner():
    from seclib import Daemon
    d = Daemon(env={"LLMBOX_NETWORK_ALLOW": "none,nat", "LLMBOX_NETWORK_EGRESS_MAX": "*"}).start()
    try:
        T.check_world_is_closed(d)
        c = d.connect()
        os.chmod(d.tmp, 0o711)
        os.chmod(d.var, 0o711)
        res = {}
        nconn = int(sys.argv[sys.argv.index("--conns") + 1]) if "--conns" in sys.argv else 2000
        for name, spec in (("nat", {"network": "nat"}),
                           ("gateway", {"network": "egress", "policy": json.dumps({"allow": ["allowed.test"]})})):
            before = slirps(d.proc.pid)
            sid = c.create(**spec)
            res[name] = T.probe(c, sid, PROBE)
            if name == "nat":
                helper = sorted(slirps(d.proc.pid) - before)
                assert len(helper) == 1, "no slirp4netns of this sandbox: %s" % helper
                helper = helper[0]
            else:
                with open(os.path.join(d.var, "netgw", sid, "pid")) as f:
                    helper = int(f.read())
            h0 = cpu_s(helper)
            r = T.probe(c, sid, CONNS % nconn)
            r["helper_cpu_s"] = cpu_s(helper) - h0
            r["load"] = load()
            res[name].update(r)
            c.destroy(sid)
        print(json.dumps(res))
        n, g = res["nat"], res["gateway"]
        print("request round trip, median: nat %.2f ms, gateway %.2f ms (gateway/nat %.2fx); p90 %.2f / %.2f ms"
              % (n["median_ms"], g["median_ms"], g["median_ms"] / n["median_ms"], n["p90_ms"], g["p90_ms"]))
        print("throughput, one connection: nat %.0f MiB/s, gateway %.0f MiB/s (gateway/nat %.2fx)"
              % (n["mib_s"], g["mib_s"], g["mib_s"] / n["mib_s"]))
        us = {k: (res[k]["helper_cpu_s"] * 1e6 / nconn, res[k]["client_cpu_s"] * 1e6 / nconn) for k in res}
        print("CPU per connection over %d: helper nat (slirp4netns) %.0f us, gateway (netgw) %.0f us "
              "(gateway/nat %.2fx); sandbox client nat %.0f us, gateway %.0f us; both together gateway/nat %.2fx; "
              "load %s / %s" % (nconn, us["nat"][0], us["gateway"][0], us["gateway"][0] / max(us["nat"][0], 1e-9),
                                us["nat"][1], us["gateway"][1], sum(us["gateway"]) / max(sum(us["nat"]), 1e-9),
                                res["nat"]["load"], res["gateway"]["load"]))
    finally:
        d.stop()
    return 0


def outer():
    w = T.World()
    try:
        w.up()
        srv = os.path.join(w.tmp, "bulk.py")
        with open(srv, "w") as f:
            f.write(BULK)
        w.procs.append(subprocess.Popen(["ip", "netns", "exec", T.INET_NS, sys.executable, srv]))
        env = dict(os.environ, EGRESS_HITS=w.hits, EGRESS_NS=T.HOST_NS + " " + T.INET_NS)
        return subprocess.call(["ip", "netns", "exec", T.HOST_NS, sys.executable, os.path.abspath(__file__),
                                "--inner"], env=env)
    finally:
        w.down()


if __name__ == "__main__":
    sys.exit(inner() if "--inner" in sys.argv else outer())
