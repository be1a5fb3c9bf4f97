#!/usr/bin/env python3
"""Exhaustion benchmark: what one hostile sandbox costs everyone else.

Starts the whole service (sandboxd, web, nginx: tests/lib/stack.py, private
var dir, the image store of this checkout). One attacker sandbox runs, in
turn, each exhaustion attempt of the second security review for a few seconds; meanwhile a
victim sandbox runs `true` in a loop on its own connection to sandboxd
(the exec round trip an agent or an RL rollout waits on), and a third
thread asks GET /api/health through nginx every 100 ms. The same two
probes run first with the attacker idle ("quiet"): the peer each attack
is measured against, in the same run.

Attacks (each bounded by the sandbox's own limits; nothing here writes
outside the attacker sandbox):
  files      200 processes, each raising RLIMIT_NOFILE to its hard limit
             and opening /dev/null until refused, then holding them
  mmap       8 processes opening, mapping and closing a file up to 60000
             times each (files held without an fd)
  pipes      pipes grown to the largest size allowed, until refused
  scm        fds sent over unix sockets and never received, until refused
  aio        io_setup in a loop (the host's AIO pool)
  ptys       /dev/ptmx opened until refused (the host's pty pool)
  forks      a fork bomb against the pids limit
  memory     allocation until the OOM killer acts
  disk       dd into the writable layer until full
  output     an endless stream on stdout (the capture caps)

Web attacks (a second stack: two users, 8 web threads, E2B host names;
the probe is the other user's GET /api/tasks every 50 ms, target p99
< 200 ms against its quiet p99 measured first in the same stack):
  bundles    alice's 40 clients ask, again and again, for the zip and the
             tar.gz of a 20 MB output folder (bundle.zip?path=f)
  ports      40 clients at a time ask a server in an E2B sandbox, which
             sends its answer's head a byte every 20 s, through
             8000-<id>.<e2b_domain>, and give up after 4 s

Prints, per attack: the victim's exec round trip p50 / p99 / max and the
ratio of its p99 to the quiet p99, /api/health's slowest answer and how
many failed, how far the host's open-file table (fs.file-nr) rose above
the quiet run's peak, whether the issue's target (victim p99 < 10 ms, every
health check answered) was met, and what the victim sandbox or the host
could not do while the attacker held what it took (a normal-size pipe,
F_SETPIPE_SZ to 1 MiB, an fd over a unix socket, a pty, an open(); on the
host: io_setup, a pty, an open()). A benchmark, not a test: nothing is
asserted. Needs root and the default image (make image).

    python3 bench/exhaustion.py [--secs 4] [--only files,aio,...,bundles,ports]
"""
import argparse
import math
import os
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))

from sandbox_rpc import Conn, skip_reason  # noqa: E402
from stack import Stack  # noqa: E402

PRELUDE = r'''
import ctypes, os, resource, socket, sys, time, array
libc = ctypes.CDLL(None, use_errno=True)
def hold(secs):
    time.sleep(secs)
'''

# Each attack is python run in the attacker sandbox; SECS is replaced by the
# attack's duration, so the attacker holds what it took until the end.
ATTACKS = {
    "files": r'''
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
kids = []
for i in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        fds = []
        try:
            while True:
                fds.append(os.open("/dev/null", os.O_RDONLY))
        except OSError:
            pass
        hold(SECS)
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
''',
    "mmap": r'''
# libc's mmap, not Python's (which keeps a dup of the fd): a mapping that
# outlives its descriptor holds a file of the host's table without an fd
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
open("/tmp/m", "wb").write(b"x" * 4096)
kids = []
for i in range(8):
    pid = os.fork()
    if pid == 0:
        for j in range(60000):
            fd = os.open("/tmp/m", os.O_RDONLY)
            if libc.mmap(None, 4096, 1, 1, fd, 0) in (None, ctypes.c_void_p(-1).value):
                break
            os.close(fd)
        hold(SECS)
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
''',
    "pipes": r'''
import fcntl
ps = []
try:
    while True:
        r, w = os.pipe()
        try:
            fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
            os.write(w, b"x" * 65536)
        except OSError:
            pass
        ps.append((r, w))
except OSError:
    pass
hold(SECS)
''',
    "scm": r'''
pairs = []
try:
    while True:
        a, b = socket.socketpair()
        pairs.append((a, b))
        for i in range(200):
            socket.send_fds(a, [b"x"], [b.fileno()])
except OSError:
    pass
hold(SECS)
''',
    "aio": r'''
ctx = ctypes.c_ulong(0)
end = time.time() + SECS
n = 0
while time.time() < end:
    ctx.value = 0
    if libc.syscall(206, 1024, ctypes.byref(ctx)) == 0:  # io_setup
        n += 1
    else:
        time.sleep(0.01)
''',
    "ptys": r'''
fds = []
try:
    while True:
        fds.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
except OSError:
    pass
hold(SECS)
''',
    "forks": None,   # shell, below
    "memory": r'''
b = []
end = time.time() + SECS
while time.time() < end:
    b.append(bytearray(16 << 20))
''',
    "disk": None,
    "output": None,
}
SHELL = {
    "forks": "timeout SECS bash -c 'b(){ b|b& };b' 2>/dev/null; true",
    "disk": "dd if=/dev/zero of=/tmp/fill bs=1M 2>/dev/null; sleep SECS; rm -f /tmp/fill",
    "output": "timeout SECS cat /dev/zero",
}


# What the victim sandbox and the host can still do while the attack holds
# its resources: the things the attacks above aim at, each tried once.
VICTIM_CHECK = r'''
import fcntl, json, os, socket
bad = []
r, w = os.pipe()
if fcntl.fcntl(w, 1032) < 65536:  # F_GETPIPE_SZ
    bad.append("pipe-size")
try:
    fcntl.fcntl(w, 1031, 1 << 20)
except OSError:
    bad.append("setpipe")
a, b = socket.socketpair()
try:
    socket.send_fds(a, [b"x"], [r])
except OSError:
    bad.append("scm")
try:
    os.close(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
except OSError:
    bad.append("pty")
try:
    os.close(os.open("/etc/hostname", os.O_RDONLY))
except OSError:
    bad.append("open")
print("@@" + json.dumps(bad))
'''


def host_check():
    import ctypes
    bad = []
    libc = ctypes.CDLL(None, use_errno=True)
    ctx = ctypes.c_ulong(0)
    if libc.syscall(206, 1, ctypes.byref(ctx)) != 0:  # io_setup
        bad.append("host-aio")
    else:
        libc.syscall(207, ctx)  # io_destroy
    try:
        m, sl = os.openpty()
        os.close(m)
        os.close(sl)
    except OSError:
        bad.append("host-pty")
    try:
        os.close(os.open("/etc/hostname", os.O_RDONLY))
    except OSError:
        bad.append("host-open")
    return bad


def victim_check(c, sid):
    r = c.exec(sid, "python3 - <<'LLMBOX_EOF'\n%s\nLLMBOX_EOF" % VICTIM_CHECK, timeout_ms=20000)
    so = r.get("stdout", "")
    i = so.rfind("@@")
    if i < 0:
        return ["victim-probe-failed"]
    import json
    return json.loads(so[i + 2:].splitlines()[0])


HOSTILE = dict(memory_mib=512, pids=512, disk_mib=256, cpu_milli=1000)


def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, math.ceil(len(xs) * p / 100.0) - 1))] if xs else float("nan")


def probe(stack, c, sid, secs, out):
    """The victim's exec loop and the health poller, for secs seconds."""
    rtt, health, failed, files = [], [], [0], []
    stop = time.time() + secs

    def poll_health():
        while time.time() < stop:
            with open("/proc/sys/fs/file-nr") as f:
                files.append(int(f.read().split()[0]))
            t = time.perf_counter()
            try:
                st, _, _ = stack.request("GET", "/api/health", timeout=5)
                if st != 200:
                    failed[0] += 1
            except OSError:
                failed[0] += 1
            health.append((time.perf_counter() - t) * 1000)
            time.sleep(0.1)

    th = threading.Thread(target=poll_health)
    th.start()
    while time.time() < stop:
        t = time.perf_counter()
        r = c.exec(sid, "true", timeout_ms=20000)
        dt = (time.perf_counter() - t) * 1000
        if r.get("exit_code") != 0:
            failed[0] += 1
            if failed[0] == 1:
                print("  victim exec failed: %r" % r, flush=True)
        rtt.append(dt)
    th.join()
    out.update(rtt=rtt, health=health, failed=failed[0], files=max(files or [0]), broken=victim_check(c, sid) + host_check())


def attack(c, sid, name, secs, result):
    code = ATTACKS.get(name)
    if code is not None:
        script = PRELUDE + code.replace("SECS", str(secs))
        cmd = "python3 - <<'LLMBOX_EOF'\n%s\nLLMBOX_EOF" % script
    else:
        cmd = SHELL[name].replace("SECS", str(secs))
    try:
        r = c.exec(sid, cmd, timeout_ms=int((secs + 10) * 1000))
        result["state"] = r.get("state")
    except Exception as e:  # noqa: BLE001
        result["state"] = "error: %s" % e


WEB_ATTACKS = ("bundles", "ports")


def web_probe(st, secs, token):
    """Another user's GET /api/tasks every 50 ms for secs: ms each (a
    failure counts as 30 s)."""
    out = []
    stop = time.time() + secs
    while time.time() < stop:
        t = time.perf_counter()
        try:
            code, _, _ = st.request("GET", "/api/tasks", None, {"Authorization": "Bearer " + token}, timeout=30)
            out.append((time.perf_counter() - t) * 1000 if code == 200 else 30000.0)
        except OSError:
            out.append(30000.0)
        time.sleep(0.05)
    return out


def web_attack(st, wx, name, secs, tid, sbx, counts):
    """40 attacking clients for secs; counts gets their answers by status."""
    stop = time.time() + secs
    lock = threading.Lock()

    def bundles(i):
        import socket
        fmt = "zip" if i % 2 else "tar.gz"
        while time.time() < stop:
            # the whole answer, read into one buffer and dropped (as little
            # of this process's CPU as a client can spend on 20 MB)
            code = 0
            try:
                c = socket.create_connection(("127.0.0.1", st.port), timeout=120)
                c.sendall(("GET /api/tasks/%s/bundle.%s?path=f HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           "Authorization: Bearer %s\r\nConnection: close\r\n\r\n" % (tid, fmt, wx.ALICE)).encode())
                got = c.recv(64)
                code = int(got[9:12]) if got.startswith(b"HTTP/1.") else 0
                buf = bytearray(1 << 20)
                while c.recv_into(buf):
                    pass
                c.close()
            except (OSError, ValueError):
                pass
            with lock:
                counts[code] = counts.get(code, 0) + 1
            if code in (429, 503):
                time.sleep(0.5)  # Retry-After is 5 s; an attacker does not wait that long

    def ports(i):
        import socket
        while time.time() < stop:
            code = 0
            try:
                c = socket.create_connection(("127.0.0.1", st.port), timeout=4)
                c.sendall(("GET /drip HTTP/1.1\r\nHost: 8000-%s.e2b.test:%d\r\nX-Access-Token: %s\r\n\r\n"
                           % (sbx["sandboxID"], st.port, sbx["envdAccessToken"])).encode())
                got = c.recv(64)
                code = int(got[9:12]) if got.startswith(b"HTTP/1.") else 0
                if code not in (429, 503):
                    time.sleep(max(0.0, 4 - 0.1))
                c.close()
            except (OSError, ValueError):
                pass  # gave up after 4 s: the dripping head
            with lock:
                counts[code] = counts.get(code, 0) + 1
            if code in (429, 503):
                time.sleep(0.5)  # Retry-After is 2 s; an attacker does not wait that long

    fn = bundles if name == "bundles" else ports
    ths = [threading.Thread(target=fn, args=(i,), daemon=True) for i in range(40)]
    for th in ths:
        th.start()
    return ths


def web_main(secs, names):
    sys.path.insert(0, os.path.join(REPO, "tests", "security"))
    import test_web_exhaustion as wx  # the same users, task and server as the test
    web_env = {"LLMBOX_SANDBOX_API_TOKEN": wx.SBX_TOKEN, "LLMBOX_WEB_THREADS": str(wx.THREADS),
               "LLMBOX_E2B_DOMAIN": "e2b.test", "LLMBOX_SANDBOX_API_MAX": "4"}
    with Stack(scenario=wx.SCENARIO, web_env=web_env, conf=wx.CONF, env={"LLMBOX_POOL_SIZE": "1"}) as st:
        tid = wx.create_task(st, wx.ALICE, "[big] write 20 MB into output/f")
        wx.wait_status(st, wx.ALICE, tid, ("succeeded",), 180)
        sbx = wx.e2b_sandbox(st)
        wx.start_drip(st, sbx)
        quiet = web_probe(st, secs, wx.BOB)
        q99 = pct(quiet, 99)
        print("  web attacks: another user's GET /api/tasks, %d web threads" % wx.THREADS)
        print("  %-8s %8s %8s %8s %10s  %s" % ("attack", "p50 ms", "p99 ms", "max ms", "p99/quiet",
                                              "target p99 < 200 ms; attackers' answers"))

        def row(name, res, counts=None):
            p99 = pct(res, 99)
            print("  %-8s %8.2f %8.2f %8.2f %9.2fx  %s %s" %
                  (name, pct(res, 50), p99, max(res), p99 / q99, "MET" if p99 < 200 else "NOT MET",
                   " ".join("%s:%d" % (k or "gave-up", v) for k, v in sorted((counts or {}).items()))),
                  flush=True)

        row("quiet", quiet)
        for name in names:
            counts = {}
            ths = web_attack(st, wx, name, secs + 1, tid, sbx, counts)
            time.sleep(1.0)  # let the attack take what it can first
            res = web_probe(st, secs, wx.BOB)
            for th in ths:
                th.join(150)
            row(name, res, counts)
            time.sleep(1.0)
        for c in wx.St.keep:
            c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=float, default=4.0)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    why = skip_reason()
    if why:
        print("bench/exhaustion: skipped: %s" % why)
        return 0
    names = [n for n in ATTACKS if not a.only or n in a.only.split(",")]
    web_names = [n for n in WEB_ATTACKS if not a.only or n in a.only.split(",")]
    print("exhaustion: %d cores, load %s, %.0f s per attack" %
          (os.cpu_count(), open("/proc/loadavg").read().split()[0], a.secs))
    if web_names:
        web_main(a.secs, web_names)
    if not names:
        return 0
    with Stack(model=False) as st:
        sock = os.path.join(st.prefix, "var", "run", "sandboxd.sock")
        # sandboxes belong to the connection that made them
        with Conn(sock) as vc, Conn(sock) as ac:
            victim = vc.create(memory_mib=256, pids=64)
            # the attacker gets a core of CPU (cpu_milli) so that the machine's
            # second core stays for everyone else; every other limit is the
            # default an API client gets
            hostile = ac.create(**HOSTILE)
            quiet = {}
            probe(st, vc, victim, a.secs, quiet)
            q99 = pct(quiet["rtt"], 99)
            print("  %-8s %8s %8s %8s %10s %14s %7s  %s" %
                  ("attack", "p50 ms", "p99 ms", "max ms", "p99/quiet", "health max ms", "failed",
                   "host files +N; target; what broke"))

            def row(name, res, state=""):
                p50, p99 = pct(res["rtt"], 50), pct(res["rtt"], 99)
                ok = p99 < 10 and res["failed"] == 0 and not res["broken"]
                print("  %-8s %8.2f %8.2f %8.2f %9.2fx %14.1f %7d  %+8d %s %s %s" %
                      (name, p50, p99, max(res["rtt"]), p99 / q99, max(res["health"] or [0]),
                       res["failed"], res["files"] - quiet.get("files", res["files"]),
                       "MET" if ok else "NOT MET", ",".join(res["broken"]) or "-", state),
                      flush=True)

            row("quiet", quiet)
            for name in names:
                res, ar = {}, {}
                t = threading.Thread(target=attack, args=(ac, hostile, name, a.secs + 4, ar))
                t.start()
                time.sleep(1.0)  # let the attack take what it can first
                probe(st, vc, victim, a.secs, res)
                t.join()
                row(name, res, "(attacker: %s)" % ar.get("state"))
                # a clean slate for the next attack; a sandbox that sandboxd
                # destroyed (the file watch) is replaced
                r = ac.exec(hostile, "rm -f /tmp/fill /tmp/m; true", timeout_ms=10000)
                if r.get("state") != "exited":
                    print("  (attacker sandbox gone: %s; a new one for the next attack)"
                          % str(r.get("message", r.get("state")))[:120], flush=True)
                    ac.destroy(hostile)  # a fork bomb's leftovers go with it
                    hostile = ac.create(**HOSTILE)
            ac.destroy(hostile)
            vc.destroy(victim)
    return 0


if __name__ == "__main__":
    sys.exit(main())
