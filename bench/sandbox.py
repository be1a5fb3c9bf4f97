#!/usr/bin/env python3
"""Sandbox benchmark: llmbox's sandboxd against bubblewrap, in one run.

Starts private sandboxds (temp var dir, the image store of this checkout,
like tests/integration/test_sandbox.py), talks the framed JSON RPC of
include/llmbox/sandbox.h, and measures the same things for the peer,
`bwrap --unshare-all --die-with-parent` over the same image root
(read-only bind of var/images/default/rootfs, --proc /proc, --dev /dev,
--tmpfs /tmp):

  cold create to first command   llmbox: create + exec `true` (destroy not
                                 timed); peer: wall time of `bwrap ... /bin/true`
  pool acquire                   create answered from the warm pool, when
                                 sandboxd's ping reports one (LLMBOX_POOL_SIZE)
  exec round trip                `true` in the persistent shell; peer: a fresh
                                 `bwrap ... /bin/true` each time
  creates per second             2 and 16 clients, each its own connection,
                                 create+destroy loops; peer: bwrap /bin/true loops;
                                 and the CPU time of each cycle: sandboxd, its zygote
                                 and what it reaped (inits, shells) against bwrap's
                                 and its sandbox's (this script's reaped children)
  64 clients x 64 sandboxes     each client its own connection and sandbox, looping
                                 exec `echo`: execs per second, p50/p99; peer: bwrap
                                 /bin/true runs per second from 16 clients
  a noisy neighbour              exec `true` round trips in one sandbox (p99) while
                                 another sandbox runs a fork bomb, floods its output,
                                 fills its disk, or is created with a large input
                                 copied in (--noisy-input-mib); ratio: the same p99
                                 with nothing else running, measured first
  container peers (peers)        in the same run, on the same root: llmbox's cold create
                                 -> first command and exec round trip, then `podman run
                                 --rm` (runc, --cgroup-manager cgroupfs, --rootfs ROOT:O,
                                 --network none), `podman exec` in a running container,
                                 and gVisor's `runsc --network=none do -root ROOT`, each
                                 /bin/true, --peer-n times; podman, runc and runsc are
                                 apt-get installed when missing
  through /api/sandboxes         the whole stack (nginx, web, sandboxd; tests/lib/stack.py)
                                 with the warm pool: POST /api/sandboxes then the first
                                 exec's answer (p50, pool hits; peer: the RPC's pool
                                 create then its first `true`, on the same sandboxd, round
                                 by round), and the exec round trip
                                 through nginx; peer: the exec round trip at the RPC of
                                 the same sandboxd, measured right after, of bare `true`
                                 (the ratio's peer: a plain command such as `true` runs in
                                 the shell itself, docs/API.md) and of a subshell line
                                 (what a command that is not plain costs: a bash fork).
                                 The API's figures twice: with Python's http.client and
                                 with a lean client as lean as the RPC's (Lean: one send
                                 per request; http.client sends a POST's head and body
                                 in two, and nginx waits for the second)
  idle memory per sandbox        N idle sandboxes (shell waiting); peer: N idle
                                 `bwrap ... bash` reading a pipe. Measures, each / N:
                                 - MemAvailable drop (/proc/meminfo): the whole
                                   host, kernel objects included, and whatever
                                   else the shared host did meanwhile (the noise
                                   line says how much that moved);
                                 - PSS added by the processes (smaps_rollup;
                                   llmbox: sandboxd and its children, before and
                                   after), and its anonymous part (Pss_Anon);
                                 - llmbox: what the sandboxes' memory cgroups
                                   are charged;
                                 - the growth of a few /proc/meminfo fields
                                   (anon, slab, page tables ...): where it went

Every line prints the ratio against the peer measured in this run and, where
the sandbox issue sets one, the target and whether it is met. A benchmark,
not a test: nothing here asserts a timing. Needs root, the default image
(make image) and bwrap. `make bench` runs it through bench/run.sh.

    python3 bench/sandbox.py [--n 200] [--exec-n 1000] [--secs 5] [--mem 100,1000] [--no-mem-peer]
                             [--pool-size 8] [--peer-n 50]
                             [--only cold,pool,exec,peers,rate,many,noisy,api,mem]
                             [--noisy-input-mib 1024]
"""
import argparse
import http.client
import json
import math
import os
import platform
import resource
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("LLMBOX_BIN", os.path.join(REPO, os.environ.get("BUILD", "build"), "llmbox"))
IMAGES = os.path.join(REPO, "var", "images")
ROOT = os.path.join(IMAGES, "default", "rootfs")
BWRAP = ["bwrap", "--ro-bind", ROOT, "/", "--proc", "/proc", "--dev", "/dev",
         "--tmpfs", "/tmp", "--unshare-all", "--die-with-parent"]
MIB = 1 << 20
PER_CONN = int(os.environ.get("LLMBOX_SANDBOX_MAX_PER_CONN") or 256)  # given to the bench's sandboxd

# ---- statistics and printing ---------------------------------------------------


def pct(xs, p):
    """Nearest-rank percentile (p in 0..100)."""
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, math.ceil(len(xs) * p / 100.0) - 1))]


def ms(x):
    return "%.3f ms" % x if x < 10 else "%.2f ms" % x


def line(what, value, ratio="", target=""):
    print("  %-44s %-30s %-26s %s" % (what, value, ratio, target), flush=True)


def verdict(ok):
    return "MET" if ok else "NOT MET"


# ---- the RPC -------------------------------------------------------------------


class Conn:
    """One client connection to sandboxd (framing of include/llmbox/sandbox.h)."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(120)
        self.s.connect(path)

    def close(self):
        self.s.close()

    def _recvn(self, n):
        out = bytearray()
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            if not chunk:
                raise EOFError("sandboxd closed the connection")
            out += chunk
        return bytes(out)

    def call(self, obj):
        b = json.dumps(obj).encode()
        self.s.sendall(struct.pack(">I", len(b)) + b)
        (n,) = struct.unpack(">I", self._recvn(4))
        r = json.loads(self._recvn(n))
        if r.get("data"):
            (n,) = struct.unpack(">I", self._recvn(4))
            self._recvn(n)
        return r

    def create(self):
        r = self.call({"op": "create", "image": "default"})
        if not r.get("ok"):
            raise RuntimeError("create failed: %s" % r.get("message", r))
        return r["id"]

    def exec_true(self, sid):
        r = self.call({"op": "exec", "id": sid, "command": "true", "timeout_ms": 20000})
        if not r.get("ok") or r.get("exit_code") != 0:
            raise RuntimeError("exec true failed: %s" % r)

    def destroy(self, sid):
        self.call({"op": "destroy", "id": sid})


class Lean:
    """A lean HTTP/1.1 client on one kept-alive TCP connection, the
    like-for-like peer of Conn: each request goes in one send (Python's
    http.client sends the head and the body in two, and nginx waits for
    the second: ~0.15 ms a POST on this machine), the answer is read by
    its Content-Length (or its chunks: an older web sends no length) and
    parsed with json.loads, nothing else. A connection nginx closed
    (keepalive_requests) is opened again once."""

    def __init__(self, port, token):
        self.port = port
        self.auth = "Authorization: Bearer %s\r\n" % token
        self.s = None
        self.buf = b""

    def _open(self):
        if self.s:
            self.s.close()
        self.s = socket.create_connection(("127.0.0.1", self.port), timeout=120)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def _fill(self):
        d = self.s.recv(65536)
        if not d:
            raise ConnectionError("nginx closed the connection")
        self.buf += d

    def _until(self, sep):
        while sep not in self.buf:
            self._fill()
        i = self.buf.index(sep)
        out, self.buf = self.buf[:i], self.buf[i + len(sep):]
        return out

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _once(self, raw):
        self.s.sendall(raw)
        head = self._until(b"\r\n\r\n").decode("latin-1")
        status = int(head[9:12])
        length = None
        for h in head.split("\r\n")[1:]:
            k, _, v = h.partition(":")
            if k.strip().lower() == "content-length":
                length = int(v)
        if length is not None:
            return status, self._take(length)
        body = b""
        while True:  # chunked
            n = int(self._until(b"\r\n").split(b";")[0], 16)
            body += self._take(n)
            self._take(2)
            if n == 0:
                return status, body

    def req(self, method, path, body=None):
        """The answer's JSON; raises on a status >= 300."""
        data = json.dumps(body).encode() if body is not None else b""
        raw = ("%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%sContent-Type: application/json\r\n"
               "Content-Length: %d\r\n\r\n" % (method, path, self.port, self.auth, len(data))).encode() + data
        if self.s is None:
            self._open()
        try:
            status, out = self._once(raw)
        except (ConnectionError, ValueError):
            self._open()  # a kept-alive connection nginx closed meanwhile
            status, out = self._once(raw)
        if status >= 300:
            raise RuntimeError("%s %s: %d %s" % (method, path, status, out[:200]))
        return json.loads(out) if out else None

    def close(self):
        if self.s:
            self.s.close()
            self.s = None


class Daemon:
    """A private sandboxd: own var dir, socket and log, killed at the end."""

    def __init__(self, name, env_extra):
        self.tmp = tempfile.mkdtemp(prefix="llmbox-bench-%s-" % name)
        self.var = os.path.join(self.tmp, "var")
        self.sock = os.path.join(self.tmp, "sd.sock")
        self.log_path = os.path.join(self.tmp, "sandboxd.log")
        env = dict(os.environ, LLMBOX_VAR=self.var, LLMBOX_IMAGE_STORE=IMAGES, **env_extra)
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([BIN, "sandboxd", "--socket", self.sock], env=env,
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        for _ in range(200):
            if os.path.exists(self.sock) or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(self.sock):
            self.stop()
            raise RuntimeError("sandboxd did not start (log: %s)" % self.log_path)
        self.pid = self.proc.pid

    def ping(self):
        c = Conn(self.sock)
        try:
            return c.call({"op": "ping"})
        finally:
            c.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def pool_info(ping):
    """The pool stats of a ping answer ({size, ready, hits, misses}) or None.
    Accepts {"pool":{...}} and one level of nesting per image."""
    p = ping.get("pool")
    if not isinstance(p, dict):
        return None
    if "ready" in p or "size" in p:
        return p
    for v in p.values():
        if isinstance(v, dict) and ("ready" in v or "size" in v):
            return v
    return None


# ---- the peer --------------------------------------------------------------------


def bwrap_true():
    t0 = time.perf_counter()
    subprocess.run(BWRAP + ["/bin/true"], check=True)
    return (time.perf_counter() - t0) * 1000


def spawn_true():
    """What this script pays to start any process: the floor of the peer."""
    t0 = time.perf_counter()
    subprocess.run(["/bin/true"], check=True)
    return (time.perf_counter() - t0) * 1000


# ---- the container peers (podman with runc, gVisor's runsc) ---------------------------

PEER_PKGS = {"podman": "podman", "runc": "runc", "runsc": "runsc"}


def ensure_peers():
    """apt-get install podman, runc and runsc when missing; what is still
    missing after (a sentence each)."""
    missing = [b for b in PEER_PKGS if not shutil.which(b)]
    if missing and shutil.which("apt-get"):
        pkgs = [PEER_PKGS[b] for b in missing]
        print("  installing %s (apt-get)" % " ".join(pkgs), flush=True)
        r = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends"] + pkgs,
                           env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            print("    apt-get failed: %s" % r.stderr.strip()[-300:])
    return ["%s not installed (apt-get install %s)" % (b, PEER_PKGS[b])
            for b in PEER_PKGS if not shutil.which(b)]


def nofile_hard():
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


def podman_base():
    """runc with cgroupfs: crun refuses this host's hybrid cgroups. The
    ulimit: podman asks for 1M open files by default, more than a process
    without CAP_SYS_RESOURCE may set (this machine's containers)."""
    lim = nofile_hard()
    return ["podman", "--cgroup-manager", "cgroupfs", "--runtime", "runc"], \
        ["--network", "none", "--ulimit", "nofile=%d:%d" % (lim, lim),
         "--ulimit", "nproc=4096:4096", "--rootfs", ROOT + ":O"]


def podman_run_cmd():
    g, o = podman_base()
    return g + ["run", "--rm"] + o + ["/bin/true"]


# gVisor: the same root, read-only under a tmpfs overlay (runsc do's
# default), no network but loopback
RUNSC = ["runsc", "--network=none", "do", "-quiet", "-root", ROOT, "/bin/true"]


def timed_run(cmd):
    t0 = time.perf_counter()
    # cwd "/": `runsc do` makes the caller's working directory inside the
    # root it is given, which here is the shared image
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd="/")
    return (time.perf_counter() - t0) * 1000


def peer_times(cmd, n):
    """n timed runs after 2 warm-ups, or (None, why) on the first failure."""
    xs = []
    try:
        for i in range(n + 2):
            x = timed_run(cmd)
            if i >= 2:
                xs.append(x)
    except subprocess.CalledProcessError as e:
        return None, (e.stderr or b"").decode(errors="replace").strip()[-300:]
    return xs, ""


def podman_exec_times(n):
    """podman exec /bin/true in one running container (sleep infinity)."""
    g, o = podman_base()
    name = "llmbox-bench-%d" % os.getpid()
    r = subprocess.run(g + ["run", "-d", "--name", name] + o + ["/bin/sleep", "infinity"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode:
        return None, r.stderr.strip()[-300:]
    try:
        return peer_times(g + ["exec", name, "/bin/true"], n)
    finally:
        subprocess.run(g + ["rm", "-f", "-t", "0", name], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


def bench_peers(d, n, bw):
    """llmbox's cold create -> first command and exec round trip, then each
    peer's, in this order, so all are in one run; ratios printed."""
    why = ensure_peers()
    for w in why:
        print("    peer missing: %s" % w)
    first, _, _ = bench_cold(d, n)
    xs = bench_exec(d, n)
    lf, lx, lb = statistics.median(first), statistics.median(xs), statistics.median(bw)
    line("llmbox cold create -> first command (n=%d)" % n, stats(first))
    line("llmbox exec `true` round trip (n=%d)" % n, stats(xs))
    line("peer: bwrap ... /bin/true (n=%d)" % len(bw), stats(bw), "llmbox cold %.3fx, exec %.3fx" % (lf / lb, lx / lb))
    peers = []
    if shutil.which("podman") and shutil.which("runc"):
        peers.append(("podman run (runc, cgroupfs) /bin/true", lambda: peer_times(podman_run_cmd(), n)))
        peers.append(("podman exec (runc) /bin/true", lambda: podman_exec_times(n)))
    if shutil.which("runsc"):
        peers.append(("runsc do (gVisor) /bin/true", lambda: peer_times(RUNSC, n)))
    for name, fn in peers:
        ys, err = fn()
        if ys is None:
            line("peer: " + name, "failed", "", "")
            print("    %s" % err)
            continue
        p = statistics.median(ys)
        line("peer: " + name + " (n=%d)" % len(ys), stats(ys),
             "llmbox cold %.3fx, exec %.3fx" % (lf / p, lx / p), "bwrap %.2fx" % (lb / p))


# ---- host memory -------------------------------------------------------------------


MEMINFO_KEYS = ("AnonPages", "Shmem", "SUnreclaim", "SReclaimable", "KernelStack",
                "PageTables", "Percpu")


def meminfo():
    out = {}
    with open("/proc/meminfo") as f:
        for ln in f:
            k, v = ln.split(":", 1)
            out[k] = int(v.split()[0]) * 1024
    return out


def mem_available():
    return meminfo().get("MemAvailable", 0)


def meminfo_delta(before, after, n):
    """Where the host's memory went, per sandbox (MiB), from /proc/meminfo."""
    return ", ".join("%s %.2f" % (k, (after.get(k, 0) - before.get(k, 0)) / max(1, n) / MIB)
                     for k in MEMINFO_KEYS)


def mem_available_settled(samples=5, gap=0.4):
    """Median of a few samples, and their spread (the noise of a shared host)."""
    xs = []
    for i in range(samples):
        if i:
            time.sleep(gap)
        xs.append(mem_available())
    return statistics.median(xs), max(xs) - min(xs)


def children_map():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        ppid = int(st[st.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def descendants(roots):
    kids = children_map()
    out, todo = [], list(roots)
    while todo:
        p = todo.pop()
        for k in kids.get(p, []):
            out.append(k)
            todo.append(k)
    return out


def pss(pid, field="Pss:"):
    """Pss: all pages, shared ones divided among their users (file pages of
    bash and libc included: they were in the page cache already);
    Pss_Anon: the anonymous part only, closer to what the process added."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for ln in f:
                if ln.startswith(field):
                    return int(ln.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cgroup_usage(var_sids):
    """Sum of the memory charged to the given sandboxes' memory cgroups
    (v1 memory.usage_in_bytes or v2 memory.current), or None."""
    total, found = 0, 0
    for base in ("/sys/fs/cgroup/memory", "/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if not os.path.isdir(base):
            continue
        for parent in os.listdir(base):
            if not parent.startswith("llmbox"):
                continue
            for sid in var_sids:
                for fn in ("memory.usage_in_bytes", "memory.current"):
                    p = os.path.join(base, parent, sid, fn)
                    try:
                        with open(p) as f:
                            total += int(f.read())
                        found += 1
                        break
                    except (OSError, ValueError):
                        pass
        if found:
            return total, found
    return None


# ---- the measurements ------------------------------------------------------------------


def bench_cold(d, n):
    """create + exec true, timed; destroy after, timed on its own."""
    c = Conn(d.sock)
    first, create, destroy = [], [], []
    for i in range(n + 5):
        t0 = time.perf_counter()
        sid = c.create()
        t1 = time.perf_counter()
        c.exec_true(sid)
        t2 = time.perf_counter()
        c.destroy(sid)
        t3 = time.perf_counter()
        if i >= 5:  # warm-up: page cache, dentries, first cgroups
            first.append((t2 - t0) * 1000)
            create.append((t1 - t0) * 1000)
            destroy.append((t3 - t2) * 1000)
    c.close()
    return first, create, destroy


def bench_pool(d, n, size):
    """Acquire = a create answered from a full pool; misses are left out."""
    c = Conn(d.sock)
    acq, first, misses = [], [], 0

    def wait_full():
        end = time.time() + 30
        while time.time() < end:
            p = pool_info(d.ping()) or {}
            if p.get("ready", 0) >= min(size, p.get("size", size)):
                return p
            time.sleep(0.005)
        return pool_info(d.ping()) or {}

    for i in range(n + 3):
        before = wait_full()
        t0 = time.perf_counter()
        sid = c.create()
        t1 = time.perf_counter()
        c.exec_true(sid)
        t2 = time.perf_counter()
        after = pool_info(d.ping()) or {}
        c.destroy(sid)
        hit = after.get("hits", 0) > before.get("hits", 0)
        if i < 3:
            continue
        if not hit:
            misses += 1
            continue
        acq.append((t1 - t0) * 1000)
        first.append((t2 - t0) * 1000)
    c.close()
    return acq, first, misses


def bench_exec(d, n):
    c = Conn(d.sock)
    sid = c.create()
    xs = []
    for i in range(n + 20):
        t0 = time.perf_counter()
        c.exec_true(sid)
        if i >= 20:
            xs.append((time.perf_counter() - t0) * 1000)
    c.destroy(sid)
    c.close()
    return xs


def run_clients(k, secs, body):
    """k threads run body(stop_time) -> count; returns ops per second."""
    counts = [0] * k
    errors = []
    start = time.perf_counter()
    stop = start + secs

    def worker(i):
        try:
            counts[i] = body(stop)
        except Exception as e:  # reported, not raised: the others go on
            errors.append(str(e))

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(k)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(counts) / (time.perf_counter() - start), errors


def proc_ticks(pid, fields):
    """Sum of /proc/<pid>/stat fields (1-based numbers), in seconds."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            v = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(v[i - 3]) for i in fields) / os.sysconf("SC_CLK_TCK")


def daemon_cpu(d):
    """CPU seconds of sandboxd, of what it has reaped (each init, and through
    it each shell: utime, stime, cutime, cstime) and of its zygote."""
    return proc_ticks(d.pid, (14, 15, 16, 17)) + sum(proc_ticks(z, (14, 15)) for z in zygotes(d))


def children_cpu():
    """CPU seconds of this script's reaped children (bwrap and its sandbox)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def llmbox_loop(d):
    def body(stop):
        c = Conn(d.sock)
        n = 0
        try:
            while time.perf_counter() < stop:
                c.destroy(c.create())
                n += 1
        finally:
            c.close()
        return n
    return body


def bwrap_loop(stop):
    n = 0
    while time.perf_counter() < stop:
        subprocess.run(BWRAP + ["/bin/true"], check=True)
        n += 1
    return n


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def zygotes(d):
    """sandboxd's zygote (server/sandboxd/zygote.h): part of the daemon, not
    of any sandbox."""
    return [p for p in children_map().get(d.pid, []) if comm(p) == "llmbox-zygote"]


def sandbox_procs(d):
    zy = set(zygotes(d))
    inits = [p for p in children_map().get(d.pid, []) if p not in zy]
    return inits + descendants(inits)


def nfds(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return 0


MEM_FLOOR = 2 << 30  # stop creating when the host has less than this available


def mem_llmbox(d, n):
    """n idle sandboxes over ceil(n/PER_CONN) connections."""
    base, noise = mem_available_settled()
    mi0 = meminfo()
    # the daemon is sandboxd and its zygote: their PSS is counted before and
    # after (it moves as the inits share pages), the rest is the sandboxes'
    daemon = [d.pid] + zygotes(d)
    pss0 = sum(pss(p) for p in daemon)
    anon0 = sum(pss(p, "Pss_Anon:") for p in daemon)
    fds0 = nfds(d.pid)
    conns, sids, lat, err = [], [], [], ""
    marks = []  # (count, seconds since the start): the creation rate as the count grows
    t0 = time.perf_counter()
    try:
        while len(sids) < n:
            if len(sids) % PER_CONN == 0:
                conns.append(Conn(d.sock))
            if len(sids) % 1000 == 0 and len(sids):
                marks.append((len(sids), time.perf_counter() - t0))
                if mem_available() < MEM_FLOOR:
                    err = "stopped: the host has less than %d MiB available" % (MEM_FLOOR // MIB)
                    break
            t1 = time.perf_counter()
            sids.append(conns[-1].create())
            lat.append((time.perf_counter() - t1) * 1000)
    except Exception as e:
        err = str(e)
    secs = time.perf_counter() - t0
    marks.append((len(sids), secs))
    time.sleep(3)  # settle: shells started, lazy allocations done
    after, noise2 = mem_available_settled()
    mi1 = meminfo()
    procs = sandbox_procs(d)
    pss_sum = sum(pss(p) for p in procs + daemon) - pss0
    anon_sum = sum(pss(p, "Pss_Anon:") for p in procs + daemon) - anon0
    cg = cgroup_usage(sids)
    ping = d.ping()
    rates, prev = [], (0, 0.0)
    for k, t in marks:
        if k > prev[0] and t > prev[1]:
            rates.append("%d-%d: %.0f/s" % (prev[0] + 1, k, (k - prev[0]) / (t - prev[1])))
        prev = (k, t)
    res = {"n": len(sids), "want": n, "secs": secs, "err": err, "rates": rates,
           "fds": (nfds(d.pid) - fds0) / max(1, len(sids)), "parked": ping.get("parked", 0),
           "zygote_kib": sum(pss(p, "Rss:") for p in zygotes(d)) // 1024,
           "avail": (base - after) / max(1, len(sids)), "noise": max(noise, noise2),
           "pss": pss_sum / max(1, len(sids)), "procs": len(procs),
           "anon": anon_sum / max(1, len(sids)),
           "breakdown": meminfo_delta(mi0, mi1, len(sids)),
           "cg": (cg[0] / max(1, cg[1])) if cg else None,
           # does a create get slower with many sandboxes around?
           "lat_first": statistics.median(lat[:50]) if lat else 0,
           "lat_last": statistics.median(lat[-50:]) if lat else 0}
    t1 = time.perf_counter()
    for c in conns:  # closing a connection destroys its sandboxes
        c.close()
    end = time.time() + 300
    while time.time() < end and d.ping().get("sandboxes", 0):
        time.sleep(0.2)
    # the destroys run on sandboxd's workers after the ping says 0: wait for
    # the last init, so that the peer's baseline is not taken while memory
    # is still coming back
    while time.time() < end and sandbox_procs(d):
        time.sleep(0.2)
    res["teardown_secs"] = time.perf_counter() - t1
    return res


def mem_bwrap(n):
    """n idle `bwrap ... bash` (the shell reads a pipe we hold)."""
    base, noise = mem_available_settled()
    mi0 = meminfo()
    procs, err = [], ""
    t0 = time.perf_counter()
    try:
        for _ in range(n):
            procs.append(subprocess.Popen(BWRAP + ["/bin/bash", "--noprofile", "--norc"],
                                          stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
    except Exception as e:
        err = str(e)
    secs = time.perf_counter() - t0
    time.sleep(3)
    after, noise2 = mem_available_settled()
    mi1 = meminfo()
    pids = [p.pid for p in procs]
    tree = pids + descendants(pids)
    alive = sum(1 for p in procs if p.poll() is None)
    pss_sum = sum(pss(p) for p in tree)
    anon_sum = sum(pss(p, "Pss_Anon:") for p in tree)
    res = {"n": alive, "want": n, "secs": secs, "err": err,
           "avail": (base - after) / max(1, alive), "noise": max(noise, noise2),
           "pss": pss_sum / max(1, alive), "procs": len(tree),
           "anon": anon_sum / max(1, alive),
           "breakdown": meminfo_delta(mi0, mi1, alive)}
    for p in procs:
        p.stdin.close()  # EOF: bash exits, bwrap follows
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return res


# ---- report ------------------------------------------------------------------------


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for ln in f:
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        ram = int(f.readline().split()[1]) / (1 << 20)
    distro = ""
    try:
        with open("/etc/os-release") as f:
            for ln in f:
                if ln.startswith("PRETTY_NAME="):
                    distro = ln.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    load = os.getloadavg()[0]
    return ("%s, %d cores, %.1f GiB RAM, kernel %s, %s, load %.2f at start"
            % (cpu, os.cpu_count(), ram, platform.release(), distro, load))


def many_loop(d, clients, secs):
    """clients connections, one sandbox each, looping exec echo: (execs/s, latencies ms, errors)."""
    conns, sids = [], []
    for _ in range(clients):
        c = Conn(d.sock)
        conns.append(c)
        sids.append(c.create())
    lat = [[] for _ in range(clients)]
    errors = []
    start = time.perf_counter()
    stop = start + secs

    def worker(i):
        try:
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                r = conns[i].call({"op": "exec", "id": sids[i], "command": "echo x", "timeout_ms": 20000})
                if not r.get("ok"):
                    raise RuntimeError(r.get("message"))
                lat[i].append((time.perf_counter() - t0) * 1000)
        except Exception as e:  # reported, not raised
            errors.append(str(e))

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    el = time.perf_counter() - start
    for c, sid in zip(conns, sids):
        c.destroy(sid)
        c.close()
    xs = [x for l in lat for x in l]
    return len(xs) / el, xs, errors


def victim_p99(c, sid, stop_fn, min_n=200):
    """exec `true` round trips in sid until stop_fn() (and at least min_n): latencies in ms."""
    xs = []
    while not stop_fn() or len(xs) < min_n:
        t0 = time.perf_counter()
        c.exec_true(sid)
        xs.append((time.perf_counter() - t0) * 1000)
    return xs


def noisy(d, input_mib):
    """{hog name: victim latencies} plus "none": the victim alone, first."""
    vc = Conn(d.sock)
    vsid = vc.create()
    out = {"none": victim_p99(vc, vsid, lambda: True, 500)}
    hogs = [
        ("fork bomb (pids cgroup)", "bomb() { bomb | bomb & }; bomb; sleep 3"),
        ("output flood (yes, 3 s)", "timeout 3 yes"),
        ("disk fill (dd to the quota)", "dd if=/dev/zero of=/testbed/fill bs=1M 2>&1; sleep 1"),
    ]
    for name, cmd in hogs:
        hc = Conn(d.sock)
        hsid = hc.create()
        done = threading.Event()

        def hog():
            try:
                hc.call({"op": "exec", "id": hsid, "command": cmd, "timeout_ms": 10000})
            finally:
                done.set()

        t = threading.Thread(target=hog)
        t.start()
        time.sleep(0.2)  # the hog under way
        out[name] = victim_p99(vc, vsid, done.is_set)
        t.join()
        hc.destroy(hsid)
        hc.close()
    if input_mib:
        src = tempfile.mkdtemp(prefix="llmbox-bench-input-")
        try:
            with open(os.path.join(src, "big.bin"), "wb") as f:
                chunk = os.urandom(MIB)
                for _ in range(input_mib):
                    f.write(chunk)
            os.chmod(src, 0o755)
            hc = Conn(d.sock)
            done = threading.Event()
            res = {}

            def copy():
                try:
                    res["r"] = hc.call({"op": "create", "image": "default", "input_dir": src,
                                        "memory_mib": input_mib * 2 + 1024, "disk_mib": input_mib + 1024})
                finally:
                    done.set()

            t = threading.Thread(target=copy)
            t0 = time.perf_counter()
            t.start()
            out["input copy (%d MiB)" % input_mib] = victim_p99(vc, vsid, done.is_set)
            t.join()
            took = time.perf_counter() - t0
            r = res.get("r") or {}
            if r.get("ok"):
                hc.destroy(r["id"])
            else:
                print("    input copy: %s" % r.get("message", r))
            print("    input copy of %d MiB took %.1f s" % (input_mib, took))
            hc.close()
        finally:
            shutil.rmtree(src, ignore_errors=True)
    vc.destroy(vsid)
    vc.close()
    return out


# The subshell line the web sent sandboxd for POST /api/sandboxes/{id}/exec
# {"command": "true"} before plain commands ran in the shell itself (it
# still does for a command that is not plain: sandbox_spec.c,
# lb_sbx_exec_line_sub; the default workdir). Shown for what a fork of the
# sandbox's bash costs; the API's target is against the RPC's bare `true`.
API_TRUE_LINE = "( cd -- '/testbed' && eval 'true' ) < /dev/null"


def bench_api(n, exec_n, pool_size):
    """Through a whole stack, each figure in ms: {"first", "create": API
    create (pool hit) -> the first exec's answer, and the create alone,
    http.client; "first_lean": the same with the lean client; "rpc_first",
    "rpc_create": the RPC's pool create -> first `true` on the same
    sandboxd (the peer), interleaved round by round; "hx", "lx": the API's
    exec of `true` with http.client and with the lean client; "rx": the
    RPC's `true` (the peer); "rl": the RPC's subshell line}."""
    sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
    from stack import Stack  # noqa: E402 - the test harness starts nginx, web and sandboxd
    tok = "bench-" + os.urandom(16).hex()
    env = {"LLMBOX_POOL_SIZE": str(pool_size)}
    out = {k: [] for k in ("first", "create", "first_lean", "rpc_first", "rpc_create", "hx", "lx", "rx", "rl")}
    with Stack(model=False, env=env, web_env={"LLMBOX_SANDBOX_API_TOKEN": tok}) as st:
        hc = http.client.HTTPConnection("127.0.0.1", st.port, timeout=60)
        hdr = {"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
        lean = Lean(st.port, tok)

        def req(method, path, body=None):
            hc.request(method, path, body=json.dumps(body).encode() if body is not None else None, headers=hdr)
            r = hc.getresponse()
            data = r.read()
            if r.status >= 300:
                raise RuntimeError("%s %s: %d %s" % (method, path, r.status, data[:200]))
            return json.loads(data) if data else None

        def pool_full():
            end = time.time() + 30
            while time.time() < end:
                p = pool_info(st.sandboxd_ping()) or {}
                if p.get("ready", 0) >= min(pool_size, p.get("size", pool_size)):
                    return p
                time.sleep(0.005)
            return pool_info(st.sandboxd_ping()) or {}

        c = Conn(os.path.join(st.prefix, "var", "run", "sandboxd.sock"))
        # create (pool hit) -> first exec: the API with each client and the
        # RPC on the same sandboxd, in turn, each from a full pool (a round
        # whose RPC create missed the pool is left out of all three)
        for i in range(n + 3):
            pool_full()
            t0 = time.perf_counter()
            sid = req("POST", "/api/sandboxes", {})["id"]
            t1 = time.perf_counter()
            req("POST", "/api/sandboxes/%s/exec" % sid, {"command": "true"})
            t2 = time.perf_counter()
            req("DELETE", "/api/sandboxes/" + sid)
            pool_full()
            t3 = time.perf_counter()
            sid = lean.req("POST", "/api/sandboxes", {})["id"]
            lean.req("POST", "/api/sandboxes/%s/exec" % sid, {"command": "true"})
            t4 = time.perf_counter()
            lean.req("DELETE", "/api/sandboxes/" + sid)
            before = pool_full()
            t5 = time.perf_counter()
            rsid = c.create()
            t6 = time.perf_counter()
            c.exec_true(rsid)
            t7 = time.perf_counter()
            after = pool_info(st.sandboxd_ping()) or {}
            c.destroy(rsid)
            if i >= 3 and after.get("hits", 0) > before.get("hits", 0):
                out["create"].append((t1 - t0) * 1000)
                out["first"].append((t2 - t0) * 1000)
                out["first_lean"].append((t4 - t3) * 1000)
                out["rpc_create"].append((t6 - t5) * 1000)
                out["rpc_first"].append((t7 - t5) * 1000)
        sid = req("POST", "/api/sandboxes", {})["id"]
        rsid = c.create()
        # interleaved, so the machine's load falls on all alike: the API's
        # exec of {"command": "true"} with each client, the RPC's bare
        # `true` (the peer), and the RPC's subshell line (a bash fork: what
        # a command that is not plain still costs)
        for i in range(exec_n + 20):
            t0 = time.perf_counter()
            req("POST", "/api/sandboxes/%s/exec" % sid, {"command": "true"})
            t1 = time.perf_counter()
            lean.req("POST", "/api/sandboxes/%s/exec" % sid, {"command": "true"})
            t2 = time.perf_counter()
            c.exec_true(rsid)
            t3 = time.perf_counter()
            r = c.call({"op": "exec", "id": rsid, "command": API_TRUE_LINE, "timeout_ms": 20000})
            t4 = time.perf_counter()
            if not r.get("ok") or r.get("exit_code") != 0:
                raise RuntimeError("the subshell line failed: %s" % r)
            if i >= 20:
                out["hx"].append((t1 - t0) * 1000)
                out["lx"].append((t2 - t1) * 1000)
                out["rx"].append((t3 - t2) * 1000)
                out["rl"].append((t4 - t3) * 1000)
        req("DELETE", "/api/sandboxes/" + sid)
        hc.close()
        lean.close()
        c.destroy(rsid)
        c.close()
    return out


def stats(xs):
    return "p50 %s  p99 %s" % (ms(statistics.median(xs)), ms(pct(xs, 99)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=int(os.environ.get("BENCH_N", 200)),
                    help="iterations of cold create and of the peer (default 200)")
    ap.add_argument("--exec-n", type=int, default=1000, help="exec round trips (default 1000)")
    ap.add_argument("--secs", type=float, default=5, help="seconds per concurrency run (default 5)")
    ap.add_argument("--mem", default="100,1000", help="idle sandbox counts (default 100,1000)")
    ap.add_argument("--no-mem-peer", dest="mem_peer", action="store_false",
                    help="skip bwrap in the mem part (its idle shells double the time at 10,000)")
    ap.add_argument("--pool-size", type=int, default=int(os.environ.get("LLMBOX_POOL_SIZE") or 8),
                    help="LLMBOX_POOL_SIZE of the pool daemon (default 8)")
    ap.add_argument("--noisy-input-mib", type=int, default=1024,
                    help="size of the input copied in during the noisy-neighbour part (default 1024; 0: none)")
    ap.add_argument("--peer-n", type=int, default=50,
                    help="runs of each container peer, and of llmbox next to them (default 50)")
    ap.add_argument("--only", default="cold,pool,exec,peers,rate,many,noisy,api,mem",
                    help="comma list of parts to run")
    a = ap.parse_args()
    parts = set(a.only.split(","))
    if os.geteuid() != 0 or not os.path.isdir(ROOT) or not shutil.which("bwrap") \
            or not os.access(BIN, os.X_OK):
        print("needs root, %s (make), the default image (make image) and bwrap "
              "(apt-get install bubblewrap)" % BIN)
        return 1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # 1000 peers' pipes

    print("sandbox benchmark, %s" % time.strftime("%Y-%m-%d %H:%M"))
    print("machine: %s" % machine())
    print("command: python3 bench/sandbox.py %s" % " ".join(sys.argv[1:]), flush=True)
    # pool off for everything but the pool part: a pool would turn "cold" into
    # hits and add its ready sandboxes to the idle memory
    mem_ns = [int(x) for x in a.mem.split(",") if x]
    top = max([1024] + mem_ns)
    # enough uid slots and sandboxes per connection for the largest count
    d = Daemon("cold", {"LLMBOX_POOL_SIZE": "0", "LLMBOX_SANDBOX_MAX": str(top),
                        "LLMBOX_SANDBOX_UID_SLOTS": str(max(4095, top + 8)),
                        "LLMBOX_SANDBOX_MAX_PER_CONN": str(PER_CONN)})
    try:
        ping = d.ping()
        print("sandboxd %s, cgroup %s; peer: %s" % (
            ping.get("version"), ping.get("cgroup"),
            subprocess.run(["bwrap", "--version"], capture_output=True, text=True).stdout.strip()))
        print()
        print("  %-44s %-30s %-26s %s" % ("what", "llmbox", "vs bwrap (same run)", "target"))
        bw, floor = [], []
        if parts & {"cold", "pool", "exec", "peers"}:
            for i in range(a.n + 5):
                x = bwrap_true()
                if i >= 5:
                    bw.append(x)
            floor = [spawn_true() for _ in range(50)]
        if "cold" in parts:
            first, create, destroy = bench_cold(d, a.n)
            hits = (pool_info(d.ping()) or {}).get("hits", 0)
            r = statistics.median(first) / statistics.median(bw)
            line("cold create -> first command (n=%d)" % a.n, stats(first),
                 "%.2fx bwrap p50 (lower=better)" % r,
                 "p50 <= bwrap /bin/true: %s" % verdict(statistics.median(first) <= statistics.median(bw)))
            line("  of which create RPC", stats(create))
            line("  destroy RPC (not in the figure above)", stats(destroy))
            line("  peer: bwrap ... /bin/true (n=%d)" % a.n, stats(bw))
            line("  floor: this script spawning /bin/true", stats(floor))
            if hits:
                print("  WARNING: the cold daemon reported %d pool hits: cold figures are not cold" % hits)
        if "pool" in parts:
            dp = Daemon("pool", {"LLMBOX_POOL_SIZE": str(a.pool_size)})
            try:
                pinfo = pool_info(dp.ping())
                if not pinfo or not pinfo.get("size"):
                    line("pool acquire", "n/a (no pool)" if not pinfo else "n/a (pool size 0)",
                         "", "p50 < 1 ms: n/a")
                else:
                    acq, pfirst, misses = bench_pool(dp, a.n, a.pool_size)
                    if not acq:
                        line("pool acquire", "no hits (%d misses)" % misses, "", "p50 < 1 ms: NOT MET")
                    else:
                        r = statistics.median(acq) / statistics.median(bw)
                        line("pool acquire (create RPC, hit; n=%d)" % len(acq), stats(acq),
                             "%.3fx bwrap p50" % r,
                             "p50 < 1 ms: %s" % verdict(statistics.median(acq) < 1.0))
                        line("  pool create -> first command", stats(pfirst),
                             "%.3fx bwrap p50" % (statistics.median(pfirst) / statistics.median(bw)))
                        line("  pool size %d, misses left out" % a.pool_size, str(misses))
            finally:
                dp.stop()
        if "exec" in parts:
            xs = bench_exec(d, a.exec_n)
            r = statistics.median(xs) / statistics.median(bw)
            line("exec `true` round trip (n=%d)" % a.exec_n, stats(xs),
                 "%.3fx fresh bwrap true p50" % r,
                 "p50 < 1 ms: %s" % verdict(statistics.median(xs) < 1.0))
        if "peers" in parts:
            print("  peers on the same image (%s; lower ratio = llmbox faster)" % ROOT)
            bench_peers(d, a.peer_n, bw)
        if "rate" in parts:
            for k in (2, 16):
                c0, t0 = daemon_cpu(d), time.perf_counter()
                lr, lerr = run_clients(k, a.secs, llmbox_loop(d))
                c1, t1 = daemon_cpu(d), time.perf_counter()
                b0 = children_cpu()
                br, berr = run_clients(k, a.secs, bwrap_loop)
                b1, t2 = children_cpu(), time.perf_counter()
                line("creates/s, %d clients (create+destroy)" % k, "%.1f /s" % lr,
                     "%.2fx bwrap runs/s (%.1f /s)" % (lr / br if br else 0, br))
                # CPU per cycle: what the machine's load does not change much,
                # unlike the rates (the peer's excludes this script's spawning)
                lc = (c1 - c0) / max(1.0, lr * (t1 - t0)) * 1000
                bc = (b1 - b0) / max(1.0, br * (t2 - t1)) * 1000
                line("  CPU per create+destroy / per bwrap run", "%.2f ms" % lc,
                     "%.2fx bwrap's %.2f ms" % (lc / bc if bc else 0, bc))
                for e in (lerr + berr)[:3]:
                    print("    error: %s" % e)
        if "many" in parts:
            rate, xs, errs = many_loop(d, 64, a.secs)
            br, _ = run_clients(16, a.secs, bwrap_loop)
            line("64 clients x 64 sandboxes, exec echo", "%.0f execs/s" % rate,
                 "%.1fx bwrap runs/s, 16 clients (%.0f /s)" % (rate / br if br else 0, br),
                 ">= 3000 /s: %s" % verdict(rate >= 3000))
            if xs:
                line("  exec round trip under that load", stats(xs))
            for e in errs[:3]:
                print("    error: %s" % e)
        if "noisy" in parts:
            res = noisy(d, a.noisy_input_mib)
            base = pct(res["none"], 99)
            # max too: one exec stuck behind a blocking copy is a single sample
            line("another sandbox's exec, nothing else", stats(res["none"]) + "  max %s" % ms(max(res["none"])))
            for name, xs in res.items():
                if name == "none":
                    continue
                line("  while one runs a %s" % name if not name.startswith("input") else "  while one has its %s" % name,
                     stats(xs) + "  max %s" % ms(max(xs)), "%.1fx its p99 alone" % (pct(xs, 99) / base),
                     "p99 < 5 ms: %s" % verdict(pct(xs, 99) < 5.0))
        if "api" in parts:
            m = bench_api(a.n, a.exec_n, a.pool_size)
            p50 = {k: statistics.median(v) for k, v in m.items() if v}
            if not m["first"]:
                print("  API: no round with a pool hit of the RPC's create; create figures left out")
            else:
                r = p50["first"] / p50["rpc_first"]
                line("API: POST /api/sandboxes -> first exec (n=%d)" % len(m["first"]), stats(m["first"]),
                     "%.2fx the RPC's (%s, same run)" % (r, ms(p50["rpc_first"])),
                     "<= 2x the RPC's: %s" % verdict(r <= 2.0))
                line("  of which the create (pool hit)", stats(m["create"]))
                rl_ = p50["first_lean"] / p50["rpc_first"]
                line("  the same, the lean HTTP client", stats(m["first_lean"]),
                     "%.2fx the RPC's" % rl_, "<= 2x the RPC's: %s" % verdict(rl_ <= 2.0))
                line("  peer: RPC pool create -> first command", stats(m["rpc_first"]))
                line("  of which the RPC's create (pool hit)", stats(m["rpc_create"]))
            r = p50["hx"] / p50["rx"]
            line("API: exec `true` through nginx", stats(m["hx"]),
                 "%.2fx the RPC's exec `true` p50 (%s, same run)" % (r, ms(p50["rx"])),
                 "<= 1.5x the RPC's `true`: %s" % verdict(r <= 1.5))
            r = p50["lx"] / p50["rx"]
            line("  the same, the lean HTTP client", stats(m["lx"]),
                 "%.2fx the RPC's exec `true` p50" % r,
                 "<= 1.5x the RPC's `true`: %s" % verdict(r <= 1.5))
            line("  the RPC, a subshell line (a bash fork)", stats(m["rl"]),
                 "%.2fx the RPC's `true`" % (p50["rl"] / p50["rx"]))
        if "mem" in parts:
            for n in mem_ns:
                lm = mem_llmbox(d, n)
                bm = mem_bwrap(n) if a.mem_peer else {"n": n, "want": n, "secs": 0, "err": "", "avail": 0,
                                                     "noise": 0, "pss": 0, "procs": 0, "anon": 0,
                                                     "breakdown": "(not run: --no-mem-peer)"}
                for m, who in ((lm, "llmbox"), (bm, "bwrap")):
                    if m["n"] < m["want"] or m["err"]:
                        print("    %s: only %d of %d started: %s" % (who, m["n"], m["want"], m["err"]))
                full = lm["n"] >= n
                line("idle x%d: MemAvailable drop / sandbox" % n, "%.2f MiB" % (lm["avail"] / MIB),
                     "%.2fx bwrap (%.2f MiB)" % (lm["avail"] / bm["avail"] if bm["avail"] > 0 else 0,
                                                 bm["avail"] / MIB),
                     ("< 1.5 MiB each: %s" % verdict(full and lm["avail"] < 1.5 * MIB))
                     if n >= 1000 else "")
                line("  PSS added by the processes / sandbox", "%.2f MiB (%d procs)" % (lm["pss"] / MIB, lm["procs"]),
                     "%.2fx bwrap (%.2f MiB, %d procs)" % (lm["pss"] / bm["pss"] if bm["pss"] else 0,
                                                          bm["pss"] / MIB, bm["procs"]))
                line("  of which anonymous (Pss_Anon) / sandbox", "%.2f MiB" % (lm["anon"] / MIB),
                     "%.2fx bwrap (%.2f MiB)" % (lm["anon"] / bm["anon"] if bm["anon"] else 0,
                                                 bm["anon"] / MIB))
                if lm["cg"] is not None:
                    line("  charged to its memory cgroup / sandbox", "%.2f MiB" % (lm["cg"] / MIB))
                line("  MemAvailable noise (spread of 5 samples)", "%.0f MiB" % (lm["noise"] / MIB),
                     "bwrap: %.0f MiB" % (bm["noise"] / MIB))
                line("  time to start all / tear down", "%.1f s / %.1f s" % (lm["secs"], lm["teardown_secs"]),
                     "bwrap start: %.1f s" % bm["secs"])
                line("  create RPC p50, first 50 / last 50", "%s / %s" % (ms(lm["lat_first"]), ms(lm["lat_last"])))
                line("  creates per second overall", "%.1f /s" % (lm["n"] / lm["secs"] if lm["secs"] else 0),
                     "bwrap starts: %.1f /s" % (bm["n"] / bm["secs"] if bm["secs"] else 0))
                if len(lm["rates"]) > 1:
                    print("    creates per second as the count grows: %s" % ", ".join(lm["rates"]))
                line("  sandboxd descriptors / sandbox", "%.2f (%d parked)" % (lm["fds"], lm["parked"]))
                line("  the zygote (RSS, once)", "%d KiB" % lm["zygote_kib"])
                print("    /proc/meminfo growth per sandbox, MiB: llmbox: %s" % lm["breakdown"])
                print("    %-43s bwrap:  %s" % ("", bm["breakdown"]))
    finally:
        d.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
