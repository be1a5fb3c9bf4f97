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

Run as root:

    python3 bench/egress.py
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


def inner():
    from seclib import Daemon
    d = Daemon(env={"LLMBOX_NETWORK_ALLOW": "none,nat", "LLMBOX_NETWORK_EGRESS_MAX": "*"}).start()
    try:
        T.check_world_is_closed(d)
        c = d.connect()
        os.chmod(d.tmp, 0o711)
        os.chmod(d.var, 0o711)
        res = {}
        for name, spec in (("nat", {"network": "nat"}),
                           ("gateway", {"network": "egress", "policy": json.dumps({"allow": ["allowed.test"]})})):
            sid = c.create(**spec)
            res[name] = T.probe(c, sid, PROBE)
            c.destroy(sid)
        print(json.dumps(res))
        n, g = res["nat"], res["gateway"]
        print("request round trip, median: nat %.2f ms, gateway %.2f ms (gateway/nat %.2fx); p90 %.2f / %.2f ms"
              % (n["median_ms"], g["median_ms"], g["median_ms"] / n["median_ms"], n["p90_ms"], g["p90_ms"]))
        print("throughput, one connection: nat %.0f MiB/s, gateway %.0f MiB/s (gateway/nat %.2fx)"
              % (n["mib_s"], g["mib_s"], g["mib_s"] / n["mib_s"]))
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
