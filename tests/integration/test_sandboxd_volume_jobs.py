#!/usr/bin/env python3
"""E2B's volume requests on sandboxd's worker threads (sandboxd/volume_jobs.h),
at the RPC level against a real sandboxd (python3 stdlib only, run as root):

  - the event loop is not held: while one connection's 48 MiB volume write
    (its bytes, an fsync, a rename) is being made, another connection's
    ping is answered, and the write's answer has not come yet;
  - one connection's pipelined volume requests are answered in order
    (write, read, stat, remove, stat), each right;
  - two connections' writes of one path land in the order they came, and
    an exec of a sandbox between them is served;
  - a client that leaves while its write runs: the daemon goes on.

    python3 tests/integration/test_sandboxd_volume_jobs.py   (from the repo root)
"""
import os
import select
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sandbox_rpc import Daemon, Reporter, skip_reason  # noqa: E402


def volume(c, owner="t", name="v"):
    r = c.call({"op": "volume", "action": "create", "owner": owner, "name": name})
    assert r.get("ok"), r
    return r["volume"]["id"]


def check_loop_not_held(d):
    a, b = d.connect(timeout=300), d.connect()
    vid = volume(a, name="big")
    data = os.urandom(1 << 20) * 48
    ok = 0
    for _ in range(3):  # the machine may be slow to start the write: the best of three
        a.send({"op": "volume", "action": "write", "volume": vid, "path": "/big"}, data)
        time.sleep(0.05)  # the loop has the whole request by now
        t = time.monotonic()
        r = b.call({"op": "ping"})
        ping_ms = (time.monotonic() - t) * 1000
        assert r.get("ok"), r
        pending = not select.select([a.s], [], [], 0)[0]
        w = a.recv()
        assert w.get("ok"), w
        ok += pending
        if pending:
            break
    assert ok, "another connection's ping was answered only after the volume write (%.1f ms)" % ping_ms
    r = a.call({"op": "volume", "action": "stat", "volume": vid, "path": "/big"})
    assert r.get("ok") and r["entry"]["size"] == len(data), r
    a.close()
    b.close()


def check_pipelined_in_order(d):
    c = d.connect()
    vid = volume(c, name="order")
    reqs = [({"action": "write", "path": "/d/f.txt", "force": True}, b"hello"),
            ({"action": "read", "path": "/d/f.txt"}, None),
            ({"action": "stat", "path": "/d/f.txt"}, None),
            ({"action": "remove", "path": "/d/f.txt"}, None),
            ({"action": "stat", "path": "/d/f.txt"}, None)]
    for req, data in reqs:
        c.send(dict(req, op="volume", volume=vid), data)
    got = [c.recv() for _ in reqs]
    assert got[0].get("ok"), got[0]
    assert got[1].get("ok") and got[1].get("_data") == b"hello", got[1]
    assert got[2].get("ok") and got[2]["entry"]["size"] == 5, got[2]
    assert got[3].get("ok"), got[3]
    assert not got[4].get("ok") and got[4].get("error") == "notfound", got[4]
    c.close()


def check_two_connections(d):
    a, b, e = d.connect(timeout=120), d.connect(timeout=120), d.connect()
    vid = volume(a, name="two")
    sid = e.create()
    one, two = os.urandom(1 << 20) * 8, os.urandom(1 << 20) * 8
    a.send({"op": "volume", "action": "write", "volume": vid, "path": "/x"}, one)
    time.sleep(0.05)
    b.send({"op": "volume", "action": "write", "volume": vid, "path": "/x"}, two)
    r = e.exec(sid, "echo served")
    assert r.get("ok") and r.get("stdout") == "served\n", r
    assert a.recv().get("ok") and b.recv().get("ok")
    r = e.call({"op": "volume", "action": "read", "volume": vid, "path": "/x"})
    assert r.get("ok") and r.get("_data") == two, "the later write is what stays"
    e.destroy(sid)
    for c in (a, b, e):
        c.close()


def check_client_leaves(d):
    a = d.connect(timeout=120)
    vid = volume(a, name="gone")
    a.send({"op": "volume", "action": "write", "volume": vid, "path": "/g"}, os.urandom(1 << 20) * 16)
    a.close()
    c = d.connect()
    deadline = time.monotonic() + 60
    while True:
        r = c.call({"op": "volume", "action": "stat", "volume": vid, "path": "/g"})
        if r.get("ok") or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert c.call({"op": "ping"}).get("ok") and d.alive()
    c.close()


def main():
    p = Reporter("sandboxd_volume_jobs/")
    why = skip_reason()
    if why:
        print("SKIP sandboxd_volume_jobs: %s" % why)
        return 0
    with Daemon(env={"LLMBOX_POOL_SIZE": "0", "LLMBOX_VOLUME_MAX_MB_PER_OWNER": "1024"}) as d:
        for name, fn in [("loop_not_held", check_loop_not_held), ("pipelined_in_order", check_pipelined_in_order),
                         ("two_connections", check_two_connections), ("client_leaves", check_client_leaves)]:
            p.run(name, fn, d)
    return p.exit_code()


if __name__ == "__main__":
    sys.exit(main())
