#!/usr/bin/env python3
"""HTTPS through the gateway when it adds a secret (TLS ended and begun
again, one request a connection) against the same HTTPS passed through by
its TLS server name, in one run, from inside one sandbox.

The world is tests/security/test_egress_secrets.py's (no packet leaves the
machine): one HTTPS server (45.1.1.10:443, Python's http.server and ssl)
answers both allowed.test, which the secret "gh" goes to, and other.test,
which it does not. Inside one sandbox, interleaved, for each name:

  request round trip   a new connection, TLS handshake, GET, the whole
                       answer, close: 100 sequential requests
  throughput           one request reading 64 MiB

Run as root:

    python3 bench/egress_secrets.py [--rounds 3]
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "security"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
import test_egress_secrets as T  # noqa: E402

PROBE = r'''
import socket, ssl, statistics, time
sysctx = ssl.create_default_context()                      # the system bundle: holds the gateway's CA
testctx = ssl.create_default_context(cafile="/tmp/upstream-ca.crt")  # the test server's own CA
def get(name, ctx, path):
    s = ctx.wrap_socket(socket.create_connection((name, 443), 20), server_hostname=name)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path.encode(), name.encode()))
    n = 0
    while True:
        b = s.recv(262144)
        if not b:
            break
        n += len(b)
    s.close()
    return n
res = {"gw": [], "pass": []}
for i in range(100):
    for k, name, ctx in (("gw", "allowed.test", sysctx), ("pass", "other.test", testctx)):
        t = time.perf_counter()
        get(name, ctx, "/r")
        res[k].append(time.perf_counter() - t)
out_ = {}
for k in res:
    v = sorted(res[k])
    out_[k + "_p50_ms"] = statistics.median(v) * 1000
    out_[k + "_p90_ms"] = v[int(len(v) * 0.9)] * 1000
for k, name, ctx in (("gw", "allowed.test", sysctx), ("pass", "other.test", testctx)):
    t = time.perf_counter()
    n = get(name, ctx, "/big/%d" % (64 << 20))
    out_[k + "_mib_s"] = n / (1 << 20) / (time.perf_counter() - t)
out(out_)
'''


def inner():
    import seclib
    from sandbox_rpc import Daemon
    te = T.te
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
    d = Daemon(env=dict(seclib.SECRET_ENV, LLMBOX_CONF=os.environ["SECRET_CONF"])).start()
    try:
        c, sid = te.make(d, {"allow": ["allowed.test", "other.test"], "secrets": ["gh"]})
        with open(os.path.join(os.path.dirname(os.environ["SECRET_CONF"]), "certs", "ca.crt")) as f:
            ca = f.read()
        seclib.sh(c, sid, "cat > /tmp/upstream-ca.crt <<'EOF'\n%sEOF" % ca)
        print("| run | round trip p50 (p90), passthrough | with the secret | added | 64 MiB, passthrough "
              "| with the secret | ratio |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for i in range(rounds):
            r = seclib.py(c, sid, PROBE, timeout_ms=600000)
            print("| %d | %.2f ms (%.2f) | %.2f ms (%.2f) | %.2f ms | %.0f MiB/s | %.0f MiB/s | %.2fx |" % (
                i + 1, r["pass_p50_ms"], r["pass_p90_ms"], r["gw_p50_ms"], r["gw_p90_ms"],
                r["gw_p50_ms"] - r["pass_p50_ms"], r["pass_mib_s"], r["gw_mib_s"], r["gw_mib_s"] / r["pass_mib_s"]),
                flush=True)
        rec = [x for x in te.record(d, sid) if x["kind"] == "tcp"]
        added = sum("secret header added" in x["rule"] for x in rec)
        print("connections recorded: %d, with the secret added: %d" % (len(rec), added))
        print(json.dumps({"load": os.getloadavg()}))
    finally:
        d.stop()
    return 0


if __name__ == "__main__":
    sys.exit(inner() if "--inner" in sys.argv else T.outer(os.path.abspath(__file__), bandwidth_max=0))
