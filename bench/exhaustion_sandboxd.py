#!/usr/bin/env python3
"""Exhaustion benchmark, sandboxd's side: what one sandbox's code costs
everyone else through sandboxd's own processes and port connects (a
sibling of bench/exhaustion.py, which covers the kernel's pools).

Starts the whole service (sandboxd, web, nginx: tests/lib/stack.py, a
private var dir, the image store of this checkout, E2B's protocol on).
A victim sandbox runs `true` in a loop on its own connection to sandboxd,
another client asks GET /api/tasks through nginx every 50 ms, and
sandboxd's RSS is sampled. The same probes run first with nothing else
going on ("quiet"): the peer each attack is measured against, in the same
run. Attacks:

  port     a server in the attacker's sandbox listens with a full backlog
           and never accepts; 20 clients ask sandboxd for port connects to
           it again and again
  spawner  in an E2B sandbox the code keeps the spawner stopped (kill
           -STOP every 50 ms); 40 process.Start requests at a time through
           the web, each client giving up after 3 s, again and again
  stdin    N processes of a 64 MiB sandbox never read stdin and are each
           sent 900 KB (N: --procs)

Per row: the victim's exec p50 / p99 and p99 against the quiet p99,
GET /api/tasks p99, sandboxd's RSS growth over the quiet run's, and
whether the targets hold (tasks p99 < 200 ms, victim p99 within 3x the
quiet one, RSS growth <= 32 MiB). A benchmark: nothing is asserted.
Needs root and the default image.

    python3 bench/exhaustion_sandboxd.py [--secs 6] [--procs 400] [--only port,spawner,stdin]
"""
import argparse
import json
import math
import os
import socket
import struct
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))

from sandbox_rpc import Conn, skip_reason  # noqa: E402
from stack import Stack  # noqa: E402

TOKEN = "bench-e2b-" + os.urandom(12).hex()

FULL_BACKLOG = r'''
import socket, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 7000))
s.listen(0)
fill = []
for i in range(4):
    c = socket.socket()
    c.setblocking(False)
    try:
        c.connect(("127.0.0.1", 7000))
    except BlockingIOError:
        pass
    fill.append(c)
open("/tmp/listening", "w").close()
time.sleep(3600)
'''

STOPPER = ("(for i in $(seq 100); do for p in /proc/[0-9]*; do "
           "[ \"$(cat $p/comm 2>/dev/null)\" = llmbox-spawner ] && kill -STOP ${p#/proc/}; done; sleep 0.05; done; "
           "while :; do for p in /proc/[0-9]*; do [ \"$(cat $p/comm 2>/dev/null)\" = llmbox-spawner ] && "
           "kill -STOP ${p#/proc/}; done; sleep 0.05; done) >/dev/null 2>&1 &")


def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, math.ceil(len(xs) * p / 100.0) - 1))] if xs else float("nan")


def rss_mib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for ln in f:
                if ln.startswith("VmRSS:"):
                    return int(ln.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def probe(st, c, sid, secs, sd_pid):
    """The victim's exec loop, the task-list poller and the RSS sampler."""
    rtt, tasks, failed, rss = [], [], [0], []
    stop = time.time() + secs

    def poll_tasks():
        while time.time() < stop:
            rss.append(rss_mib(sd_pid))
            t = time.perf_counter()
            try:
                code, _, _ = st.request("GET", "/api/tasks", timeout=30)
                if code != 200:
                    failed[0] += 1
            except OSError:
                failed[0] += 1
            tasks.append((time.perf_counter() - t) * 1000)
            time.sleep(0.05)

    th = threading.Thread(target=poll_tasks)
    th.start()
    while time.time() < stop:
        t = time.perf_counter()
        r = c.exec(sid, "true", timeout_ms=60000)
        rtt.append((time.perf_counter() - t) * 1000)
        if r.get("exit_code") != 0:
            failed[0] += 1
    th.join()
    rss.append(rss_mib(sd_pid))
    return {"rtt": rtt, "tasks": tasks, "failed": failed[0], "rss": max(rss)}


def e2b_start_raw(st, sbx, argv):
    body = json.dumps({"process": {"cmd": argv[0], "args": argv[1:]}}).encode()
    body = struct.pack(">BI", 0, len(body)) + body
    c = socket.create_connection(("127.0.0.1", st.port))
    c.sendall(("POST /e2b/sandbox/process.Process/Start HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
               "E2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\nContent-Type: application/connect+json\r\n"
               "Connection: close\r\nContent-Length: %d\r\n\r\n"
               % (st.port, sbx["sandboxID"], sbx["envdAccessToken"], len(body))).encode() + body)
    return c


def drain(c, secs):
    c.settimeout(secs)
    try:
        while c.recv(65536):
            pass
    except OSError:
        pass
    c.close()


# ---- attacks: each runs until stop is set --------------------------------

def attack_port(st, sock, stop, note):
    a = Conn(sock)
    sid = a.create()
    a.exec(sid, "nohup python3 -c '%s' >/dev/null 2>&1 &" % FULL_BACKLOG.replace("'", "'\\''"))
    for _ in range(100):
        if a.exec(sid, "test -e /tmp/listening && echo y").get("stdout") == "y\n":
            break
        time.sleep(0.1)
    asked = [0]

    def client():
        w = Conn(sock, timeout=60)
        while not stop.is_set():
            w.send({"op": "port_connect", "id": sid, "port": 7000})
            try:
                w.s.recvmsg(4096, socket.CMSG_SPACE(16))
            except OSError:
                break
            asked[0] += 1
        w.close()
    ts = [threading.Thread(target=client) for _ in range(20)]
    for t in ts:
        t.start()
    stop.wait()
    for t in ts:
        t.join(70)
    note.append("%d connects answered" % asked[0])
    a.destroy(sid)
    a.close()


def attack_spawner(st, sock, stop, note):
    h = {"X-API-KEY": TOKEN, "Content-Type": "application/json"}
    code, _, data = st.request("POST", "/e2b/v2/sandboxes", b"{}", h)
    if code != 201:
        note.append("no E2B sandbox: %s %r" % (code, data[:200]))
        stop.wait()
        return
    sbx = json.loads(data)
    drain(e2b_start_raw(st, sbx, ["/bin/sh", "-c", STOPPER]), 10)
    rounds = 0
    while not stop.is_set():
        socks = [e2b_start_raw(st, sbx, ["/bin/echo", "x"]) for _ in range(40)]
        stop.wait(3)  # the clients give up after 3 s
        for c in socks:
            c.close()
        rounds += 1
    note.append("%d rounds of 40 starts" % rounds)
    try:
        st.request("DELETE", "/e2b/sandboxes/" + sbx["sandboxID"], None, {"X-API-KEY": TOKEN}, timeout=10)
    except OSError as e:  # the web's threads may all be held (the attack worked): the stack's end takes it
        note.append("its delete: %r" % e)


def attack_stdin(st, sock, stop, note, procs):
    a = Conn(sock)
    sid = a.create(memory_mib=64, pids=max(64, procs + 32))
    pids = []
    for _ in range(procs):
        r = a.call({"op": "proc_start", "id": sid, "argv": ["sleep", "3600"], "stdin": True})
        if not r.get("ok"):
            note.append("start refused after %d: %s" % (len(pids), r.get("message", "")[:80]))
            break
        pids.append(r["pid"])
    chunk, taken, refused = b"x" * 900000, 0, 0
    for pid in pids:
        r = a.call({"op": "proc_input", "id": sid, "pid": pid}, data=chunk)
        if r.get("ok"):
            taken += len(chunk)
        else:
            refused += 1
    note.append("%d processes, %.1f MB taken, %d refused" % (len(pids), taken / 1e6, refused))
    stop.wait()
    a.destroy(sid)
    a.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=float, default=6.0)
    ap.add_argument("--procs", type=int, default=400)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    why = skip_reason()
    if why:
        print("bench/exhaustion_sandboxd: skipped: %s" % why)
        return 0
    names = [n for n in ("port", "spawner", "stdin") if not a.only or n in a.only.split(",")]
    print("exhaustion_sandboxd: %d cores, load %s, %.0f s per probe, %d stdin processes" %
          (os.cpu_count(), open("/proc/loadavg").read().split()[0], a.secs, a.procs))
    env = {"LLMBOX_SANDBOX_API_TOKEN": TOKEN, "LLMBOX_SANDBOX_API_MAX": "8"}
    with Stack(model=False, web_env=env, env={"LLMBOX_POOL_SIZE": "0"}) as st:
        sock = os.path.join(st.prefix, "var", "run", "sandboxd.sock")
        sd_pid = st.pid("sandboxd")
        with Conn(sock) as vc:
            victim = vc.create(memory_mib=256, pids=64)
            vc.exec(victim, "true")
            quiet = probe(st, vc, victim, a.secs, sd_pid)
            q99 = pct(quiet["rtt"], 99)
            print("  %-8s %9s %9s %10s %13s %13s %7s  %s" %
                  ("attack", "exec p50", "exec p99", "p99/quiet", "tasks p99 ms", "sandboxd RSS", "failed",
                   "targets; attacker"))

            def row(name, res, note=""):
                p99, t99 = pct(res["rtt"], 99), pct(res["tasks"], 99)
                grow = res["rss"] - quiet["rss"]
                ok = t99 < 200 and p99 <= 3 * q99 and grow <= 32 and res["failed"] == 0
                print("  %-8s %9.2f %9.2f %9.2fx %13.1f %+10.1f MiB %7d  %s %s" %
                      (name, pct(res["rtt"], 50), p99, p99 / q99, t99, grow, res["failed"],
                       "MET" if ok else "NOT MET", note), flush=True)

            row("quiet", quiet)
            for name in names:
                stop, note = threading.Event(), []
                fn = {"port": attack_port, "spawner": attack_spawner, "stdin": attack_stdin}[name]
                args = (st, sock, stop, note) + ((a.procs,) if name == "stdin" else ())
                t = threading.Thread(target=fn, args=args)
                t.start()
                time.sleep(2.0 if name != "stdin" else 0.5)  # the attack takes hold first
                if name == "stdin":
                    while t.is_alive() and not note:
                        time.sleep(0.2)  # its stdin is sent before the probe
                res = probe(st, vc, victim, a.secs, sd_pid)
                stop.set()
                t.join(120)
                row(name, res, "; ".join(note))
            vc.destroy(victim)
    return 0


if __name__ == "__main__":
    sys.exit(main())
