#!/usr/bin/env python3
"""Sandbox life cycle in `llmbox sandboxd` (python3 stdlib only, run as root):
the warm pool, TTLs and the reaper, network modes, and cleanup after a
sandboxd that was killed with SIGKILL.

Starts its own sandboxd instances on temporary sockets (LLMBOX_VAR in a temp
dir, the image from <repo>/var/images) and talks the framing protocol of
include/llmbox/sandbox.h with the client of test_sandbox.py. Network checks
never leave this machine: the only server is one this test starts on
127.0.0.1, and it must NOT be reachable from a sandbox.

    python3 tests/integration/test_sandbox_lifecycle.py   (from the repo root)
"""
import glob
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_sandbox import BIN, IMAGES, REPO, Conn  # noqa: E402  (the framing client)

failed = 0


def report(name, ok, why=""):
    global failed
    if ok:
        print("PASS %s" % name, flush=True)
    else:
        failed += 1
        print("FAIL %s: %s" % (name, why), flush=True)


def info(line):
    print("INFO %s" % line, flush=True)


# ---------------------------------------------------------------- helpers

def install_tag(var):
    """The tag sandboxd puts on its cgroups and helpers: FNV-1a of the var dir."""
    h = 2166136261
    for b in var.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return "llmbox-%08x" % h


class Daemon:
    """One sandboxd on a temporary socket; var may be shared to test restarts."""

    def __init__(self, tmp, var, env=None, name="sandboxd"):
        self.sock = os.path.join(tmp, name + ".sock")
        self.var = var
        self.logpath = os.path.join(tmp, name + ".log")
        e = dict(os.environ, LLMBOX_VAR=var, LLMBOX_IMAGE_STORE=IMAGES, LLMBOX_HOME=REPO)
        for k in ("LLMBOX_SANDBOXD_SOCKET", "LLMBOX_POOL_SIZE", "LLMBOX_POOL_IMAGES",
                  "LLMBOX_NETWORK_ALLOW", "LLMBOX_SANDBOX_TTL_MAX_S"):
            e.pop(k, None)
        e.update(env or {})
        self.log = open(self.logpath, "a")
        self.proc = subprocess.Popen([BIN, "sandboxd", "--socket", self.sock], env=e,
                                     stdout=self.log, stderr=self.log, cwd=REPO)
        for _ in range(200):
            if self.proc.poll() is not None:
                break
            try:
                c = Conn(self.sock)
                c.close()
                break
            except OSError:
                time.sleep(0.05)
        if self.proc.poll() is not None:
            raise RuntimeError("sandboxd exited with %r" % self.proc.returncode)

    def conn(self):
        return Conn(self.sock)

    def ping(self):
        c = self.conn()
        try:
            return c.call({"op": "ping"})
        finally:
            c.close()

    def wait_pool(self, ready, secs=30.0):
        end = time.time() + secs
        while True:
            p = self.ping().get("pool", {})
            if p.get("ready") == ready or time.time() > end:
                return p
            time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def tail(self, n=30):
        with open(self.logpath) as f:
            return "".join(f.readlines()[-n:])


def proc_starttime(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


def procs_with(needle, fname="mountinfo"):
    """{pid: starttime} of processes whose /proc/PID/<fname> contains needle."""
    out = {}
    for d in glob.glob("/proc/[0-9]*"):
        pid = int(d[6:])
        if pid == os.getpid():
            continue
        try:
            with open(d + "/" + fname, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if needle.encode() in data:
            st = proc_starttime(pid)
            if st:
                out[pid] = st
    return out


def still_alive(pids):
    """The processes of {pid: starttime} that still exist (not reused pids, not zombies)."""
    left = []
    for pid, st in pids.items():
        if proc_starttime(pid) != st:
            continue
        try:
            with open("/proc/%d/status" % pid) as f:
                if "\nState:\tZ" in f.read():
                    continue
        except OSError:
            continue
        left.append(pid)
    return left


def slirps(var):
    return procs_with("slirp4netns:" + install_tag(var), "cmdline")


def cgroups_of(var, ids):
    tag = install_tag(var)
    found = []
    for sid in ids:
        found += glob.glob("/sys/fs/cgroup/*/%s/%s" % (tag, sid))
        found += glob.glob("/sys/fs/cgroup/%s/%s" % (tag, sid))
    return found


def host_mounts_under(path):
    with open("/proc/self/mountinfo") as f:
        return [l for l in f if path in l]


def wait_until(fn, secs=5.0):
    end = time.time() + secs
    while True:
        v = fn()
        if v or time.time() > end:
            return v
        time.sleep(0.05)


def create(c, **spec):
    return c.call(dict({"op": "create"}, **spec))


# ---------------------------------------------------------------- the pool

def test_pool(d):
    p = d.wait_pool(2)
    report("pool_fills_in_background",
           p.get("size") == 2 and p.get("ready") == 2 and p.get("hits") == 0, repr(p))

    c = d.conn()
    # latency of a create served from the pool (client round trip; the pool
    # is refilled between samples)
    lat = []
    for _ in range(5):
        d.wait_pool(2)
        t0 = time.perf_counter()
        r = create(c)
        lat.append((time.perf_counter() - t0) * 1000)
        if not r.get("pooled"):
            report("pool_acquire_latency", False, repr(r))
            return
        c.call({"op": "destroy", "id": r["id"]})
    info("pool acquire, client round trip: p50 %.2f ms, max %.2f ms over %d (cold create: see "
         "below)" % (statistics.median(lat), max(lat), len(lat)))
    t0 = time.perf_counter()
    r = create(c, cpu_milli=500)  # a spec the pool cannot serve: made fresh
    cold = (time.perf_counter() - t0) * 1000
    info("cold create, client round trip: %.1f ms" % cold)
    report("pool_acquire_latency", r.get("ok") and r.get("pooled") is False,
           "%r p50 %.2f ms" % (r, statistics.median(lat)))
    c.call({"op": "destroy", "id": r.get("id", "0" * 32)})

    # freshness: marks left by one task are nowhere in the next pooled one
    d.wait_pool(2)
    r = create(c)
    sid = r.get("id", "")
    c.exec(sid, "echo task1 > /testbed/output/marker; echo t > /tmp/marker; echo r > /root/marker; "
                "export LEAK=1; (setsid sleep 7777 &); sleep 7778 & true")
    r1 = c.exec(sid, "ls /testbed/output /tmp; pgrep -c -f 'sleep 777' || true")
    c.call({"op": "destroy", "id": sid})
    d.wait_pool(2)
    r = create(c)
    sid2 = r.get("id", "")
    r2 = c.exec(sid2, "ls -A /testbed/output /testbed/input /tmp /root; echo \"leak=$LEAK\"; "
                      "pgrep -f 'sleep 777' | wc -l; ps -e --no-headers | wc -l; cat /etc/hostname")
    out = r2.get("stdout", "")
    report("pooled_sandbox_is_fresh",
           r.get("pooled") is True and sid2 != sid and "marker" in r1.get("stdout", "")
           and "marker" not in out and "leak=\n" in out and "\n0\n" in out,
           "%r %r %r" % (r, r1, r2))
    c.call({"op": "destroy", "id": sid2})

    # refill after use
    p = d.wait_pool(2)
    report("pool_refills_after_use", p.get("ready") == 2, repr(p))

    # the memory limit applies to a pooled sandbox at acquire (a cgroup
    # write; in rlimit mode init sets it, so such a spec is made fresh). A
    # pids request that changes the per-process file limit (RLIMIT_NOFILE =
    # budget / 2 / pids, set by init; raising it later would need
    # CAP_SYS_RESOURCE) is made fresh too, with its pids limit.
    def limits(sid):
        tag = install_tag(d.var)
        lim = glob.glob("/sys/fs/cgroup/memory/%s/%s/memory.limit_in_bytes" % (tag, sid)) + \
            glob.glob("/sys/fs/cgroup/%s/%s/memory.max" % (tag, sid))
        pids = glob.glob("/sys/fs/cgroup/pids/%s/%s/pids.max" % (tag, sid)) + \
            glob.glob("/sys/fs/cgroup/%s/%s/pids.max" % (tag, sid))
        return [open(x).read().strip() for x in lim + pids]

    d.wait_pool(2)
    r = create(c, memory_mib=96)
    sid = r.get("id", "")
    if d.ping().get("cgroup") == "rlimit":
        report("pooled_sandbox_gets_request_limits", r.get("ok") and r.get("pooled") is False,
               "rlimit mode: %r" % r)
    else:
        vals = limits(sid)
        report("pooled_sandbox_gets_request_limits",
               r.get("pooled") is True and vals[:1] == [str(96 << 20)], "%r %r" % (r, vals))
    c.call({"op": "destroy", "id": sid or "0" * 32})
    d.wait_pool(2)
    r = create(c, pids=64)
    sid = r.get("id", "")
    vals = limits(sid) if d.ping().get("cgroup") != "rlimit" else ["-", "64"]
    n = c.exec(sid, "ulimit -n").get("stdout", "").strip()
    report("pids_request_changing_file_limit_made_fresh",
           r.get("ok") and r.get("pooled") is False and vals[1:] == ["64"] and n.isdigit() and int(n) > 256,
           "%r %r nofile %r" % (r, vals, n))
    c.call({"op": "destroy", "id": sid or "0" * 32})

    # hits and misses: three creates pipelined in one write drain the pool
    # (input is pending all along, so no idle pass refills it meanwhile)
    d.wait_pool(2)
    before = d.ping()["pool"]
    x = d.conn()
    req = json.dumps({"op": "create"}).encode()
    x.s.sendall((len(req).to_bytes(4, "big") + req) * 3)
    rs = [json.loads(x.recv_frame()) for _ in range(3)]
    after = d.ping()["pool"]
    pooled = sorted(bool(x.get("pooled")) for x in rs)
    report("pool_hit_miss_counters",
           all(x.get("ok") for x in rs) and pooled == [False, True, True]
           and after["hits"] - before["hits"] == 2 and after["misses"] - before["misses"] == 1,
           "%r before %r after %r" % (rs, before, after))
    x.close()
    c.close()


# ---------------------------------------------------------------- network

class HostServer:
    """A TCP server on the host's 127.0.0.1 that counts connections."""

    def __init__(self):
        self.s = socket.socket()
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(16)
        self.s.settimeout(0.2)
        self.port = self.s.getsockname()[1]
        self.accepted = 0
        self.stop = False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop:
            try:
                a, _ = self.s.accept()
                self.accepted += 1
                a.sendall(b"host-secret\n")
                a.close()
            except socket.timeout:
                continue
            except OSError:
                return

    def close(self):
        self.stop = True
        self.t.join(2)
        self.s.close()


PROBE = r'''
import fcntl, socket, struct, sys
names = sorted(n for _, n in socket.if_nameindex())
print("ifaces", ",".join(names))
def addr(ifname):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        return socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", ifname.encode()))[20:24])
    except OSError:
        return "-"
print("tap0", addr("tap0") if "tap0" in names else "-")
default = [l.split()[0] for l in open("/proc/net/route").read().splitlines()[1:] if l.split()[1] == "00000000"]
print("default", ",".join(default) or "-")
for host in sys.argv[2:]:
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((host, int(sys.argv[1])))
        print(host, "connected", s.recv(64))
    except OSError as e:
        print(host, "blocked", type(e).__name__)
'''


def probe(c, sid, port, *hosts):
    c.call({"op": "write", "id": sid, "path": "/tmp/probe.py"}, PROBE.encode())
    r = c.exec(sid, "python3 /tmp/probe.py %d %s" % (port, " ".join(hosts)), timeout_ms=30000)
    out = {}
    for line in r.get("stdout", "").splitlines():
        k, _, v = line.partition(" ")
        out[k] = v
    return out, r


def test_network(d):
    srv = HostServer()
    c = d.conn()
    try:
        # nat: tap0 with 10.0.2.100 and a default route; host loopback unreachable
        r = create(c, network="nat")
        sid = r.get("id", "")
        helpers = slirps(d.var)
        out, raw = probe(c, sid, srv.port, "10.0.2.2", "127.0.0.1")
        report("nat_has_tap0_and_default_route",
               r.get("network") == "nat" and out.get("tap0") == "10.0.2.100"
               and out.get("default") == "tap0" and "tap0" in out.get("ifaces", ""),
               "%r %r" % (r, raw))
        report("nat_host_loopback_unreachable",
               out.get("10.0.2.2", "").startswith("blocked")
               and out.get("127.0.0.1", "").startswith("blocked") and srv.accepted == 0,
               "%r accepted=%d" % (raw, srv.accepted))
        rc = c.exec(sid, "cat /etc/resolv.conf; test -L /etc/resolv.conf && echo link")
        report("nat_resolv_conf", rc.get("stdout") == "nameserver 10.0.2.3\n", repr(rc))
        report("nat_slirp4netns_running", len(helpers) == 1, repr(helpers))
        c.call({"op": "destroy", "id": sid})
        report("nat_slirp4netns_dies_with_sandbox",
               wait_until(lambda: not still_alive(helpers)), repr(still_alive(helpers)))

        # none: only lo, and nothing of the host either
        r = create(c)
        sid = r.get("id", "")
        out, raw = probe(c, sid, srv.port, "127.0.0.1", "10.0.2.2")
        report("none_has_only_lo",
               r.get("network") == "none" and out.get("ifaces") == "lo"
               and out.get("default") == "-" and out.get("127.0.0.1", "").startswith("blocked")
               and out.get("10.0.2.2", "").startswith("blocked") and srv.accepted == 0,
               "%r %r" % (r, raw))
        c.call({"op": "destroy", "id": sid})

        # nat on a sandbox from the pool
        d.wait_pool(2)
        r = create(c, network="nat")
        sid = r.get("id", "")
        out, raw = probe(c, sid, srv.port, "10.0.2.2")
        report("nat_from_pool",
               r.get("pooled") is True and r.get("network") == "nat"
               and out.get("tap0") == "10.0.2.100" and out.get("10.0.2.2", "").startswith("blocked"),
               "%r %r" % (r, raw))
        c.call({"op": "destroy", "id": sid})
    finally:
        c.close()
        srv.close()


# ---------------------------------------------------------------- TTL

def test_ttl(d):
    c = d.conn()
    r = create(c, network="nat")
    report("nat_refused_when_not_allowed",
           r.get("ok") is False and r.get("error") == "invalid"
           and "LLMBOX_NETWORK_ALLOW" in r.get("message", ""), repr(r))

    r = create(c)
    r2 = create(c, ttl_s=100)
    report("ttl_max_caps_every_sandbox", r.get("ttl_s") == 3 and r2.get("ttl_s") == 3,
           "%r %r" % (r, r2))
    for x in (r, r2):
        c.call({"op": "destroy", "id": x.get("id", "0" * 32)})

    r = create(c, ttl_s=2)
    sid = r.get("id", "")
    ns = c.exec(sid, "readlink /proc/self/ns/pid").get("stdout", "").strip()
    t0 = time.time()
    re = c.exec(sid, "sleep 60; echo not-reached", timeout_ms=60000)
    el = time.time() - t0
    report("ttl_running_exec_gets_error",
           re.get("ok") is False and re.get("error") == "sandbox" and "expired" in re.get("message", "")
           and el < 6, "%.1f s %r" % (el, re))
    r2 = c.exec(sid, "true")
    report("ttl_expired_is_notfound_with_reason",
           r2.get("error") == "notfound" and "expired" in r2.get("message", ""), repr(r2))
    left = []
    if ns:
        left = [p for p in glob.glob("/proc/[0-9]*/ns/pid") if os.path.exists(p) and
                _readlink(p) == ns]
    report("ttl_expired_leaves_nothing",
           ns.startswith("pid:[") and not left and not cgroups_of(d.var, [sid])
           and not os.path.exists(os.path.join(d.var, "sandboxes", sid)), "%r %r" % (ns, left))
    r = c.call({"op": "destroy", "id": sid})
    report("destroy_of_expired_is_ok", r.get("ok") is True, repr(r))
    r = c.call({"op": "ping"})
    report("connection_usable_after_expiry", r.get("ok") is True and r.get("sandboxes") == 0,
           repr(r))
    c.close()


def _readlink(p):
    try:
        return os.readlink(p)
    except OSError:
        return None


# ---------------------------------------------------------------- restart

def sandbox_mark(var):
    """How a sandbox's mount table names its installation: the overlay's
    source is the install tag (its layer paths are relative, no host path)."""
    return " - overlay %s " % install_tag(var)


def fake_stale(tmp, var):
    """What PDEATHSIG cannot catch: a process with a sandbox root of this
    installation but no sandboxd parent, and a slirp4netns of ours. Both must
    go when sandboxd starts."""
    fid = "f" * 32
    base = os.path.join(var, "sandboxes", fid)
    for sub in ("upper", "work", "merged"):
        os.makedirs(os.path.join(base, sub), exist_ok=True)
    lower = os.path.join(tmp, "lower")
    os.makedirs(lower, exist_ok=True)
    sb = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           "mount -t overlay %s -o lowerdir=%s,upperdir=%s/upper,workdir=%s/work "
                           "%s/merged && exec sleep 1000" % (install_tag(var), lower, base, base, base)])
    sl = subprocess.Popen(["bash", "-c", "exec -a slirp4netns:%s sleep 1000" % install_tag(var)])
    return fid, [sb, sl]


def test_restart(tmp, var, d):
    c = d.conn()
    d.wait_pool(2)
    made = [create(c), create(c, network="nat"), create(c, cpu_milli=500)]
    ids = [r.get("id", "") for r in made]
    for sid in ids:
        # background jobs and a double-forked daemon in each
        c.exec(sid, "sleep 1000 & (setsid sleep 1001 &); true")
    # a second sandboxd on the same var dir (another socket) must refuse to
    # start, before it cleans up anything of the live one
    try:
        second = Daemon(tmp, var, {}, name="second")
        second.stop()
        refused = False
    except RuntimeError:
        refused = True
    with open(os.path.join(tmp, "second.log")) as f:
        why = f.read()
    alive = [c.exec(sid, "echo alive").get("stdout") for sid in ids]
    report("second_daemon_on_same_var_refused",
           refused and "already uses" in why and alive == ["alive\n"] * 3, "%r %r" % (why[-300:], alive))

    old_ids = set(os.listdir(os.path.join(var, "sandboxes")))  # also the pooled ones
    procs = procs_with(sandbox_mark(var))
    helpers = slirps(var)
    report("restart_setup",
           all(r.get("ok") for r in made) and any(r.get("pooled") for r in made) and len(helpers) == 1
           and len(old_ids) >= 5 and len(procs) >= 15,
           "made=%r ids=%d procs=%d slirp=%d" % (made, len(old_ids), len(procs), len(helpers)))

    d.proc.kill()  # SIGKILL: no cleanup of its own
    d.proc.wait()
    gone = wait_until(lambda: not still_alive(procs) and not still_alive(helpers), 5)
    report("kill9_sandbox_processes_die", gone,
           "alive: %r %r" % (still_alive(procs), still_alive(helpers)))
    report("kill9_leaves_no_host_mounts", not host_mounts_under(var), repr(host_mounts_under(var)))

    fid, fakes = fake_stale(tmp, var)
    time.sleep(0.3)
    fake_pids = {p.pid: proc_starttime(p.pid) for p in fakes}
    fake_pids.update(procs_with("upperdir=%s/sandboxes/%s" % (var, fid)))
    fake_pids.update(procs_with(sandbox_mark(var)))
    d.log.close()
    d2 = Daemon(tmp, var, {"LLMBOX_POOL_SIZE": "1", "LLMBOX_NETWORK_ALLOW": "none,nat"},
                name="restarted")
    try:
        p = d2.wait_pool(1)
        now_ids = set(os.listdir(os.path.join(var, "sandboxes")))
        left = sorted(old_ids & now_ids)
        report("restart_removes_old_scratch_dirs",
               not left and fid not in now_ids and p.get("ready") == 1, "%r %r" % (left, p))
        report("restart_removes_old_cgroups", not cgroups_of(var, old_ids), repr(cgroups_of(var, old_ids)))
        for f in fakes:
            try:
                f.wait(5)
            except subprocess.TimeoutExpired:
                pass
        report("restart_kills_orphaned_sandbox_processes_and_helpers",
               not still_alive(fake_pids) and not still_alive(procs) and not slirps(var),
               "alive: %r %r %r" % (still_alive(fake_pids), still_alive(procs), slirps(var)))
        report("restart_leaves_no_host_mounts", not host_mounts_under(var),
               repr(host_mounts_under(var)))
        c2 = d2.conn()
        r = create(c2)
        report("restarted_daemon_serves", r.get("ok") is True, repr(r))
        c2.close()
    finally:
        for f in fakes:
            if f.poll() is None:
                f.kill()
                f.wait()
        d2.stop()
    c.close()
    return d2


# ---------------------------------------------------------------- /api/health

def test_health():
    """GET /api/health shows the pool (the whole stack: sandboxd, web, nginx)."""
    sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
    from stack import Stack
    with Stack(model=False, env={"LLMBOX_POOL_SIZE": "1"}) as s:
        end = time.time() + 20
        while True:
            st, h = s.get_json("/api/health")
            pool = h.get("pool") or {}
            if pool.get("ready") == 1 or time.time() > end:
                break
            time.sleep(0.5)  # the web caches sandboxd's answer for 3 s
        sp = h.get("sandboxd", {}).get("pool", {})
        report("health_shows_pool",
               st == 200 and pool.get("size") == 1 and pool.get("ready") == 1
               and {"hits", "misses"} <= set(pool) and sp.get("size") == 1
               and h["sandboxd"].get("networks") == ["none"], repr(h))


# ---------------------------------------------------------------- main

def main():
    if os.geteuid() != 0:
        print("SKIP test_sandbox_lifecycle: needs root")
        return 0
    if not os.path.exists(os.path.join(IMAGES, "default", ".complete")):
        print("SKIP test_sandbox_lifecycle: image not built (make image)")
        return 0
    if not os.access(BIN, os.X_OK):
        report("binary", False, "%s missing (make)" % BIN)
        return 1
    have_slirp = os.path.exists("/usr/bin/slirp4netns")
    tmp = tempfile.mkdtemp(prefix="llmbox-lctest-")
    daemons = []
    try:
        var = os.path.join(tmp, "var")
        a = Daemon(tmp, var, {"LLMBOX_POOL_SIZE": "2", "LLMBOX_NETWORK_ALLOW": "none,nat"}, "a")
        daemons.append(a)
        for name, fn in (("pool", test_pool), ("network", test_network)):
            if name == "network" and not have_slirp:
                print("SKIP network: slirp4netns not installed")
                continue
            try:
                fn(a)
            except Exception as e:  # noqa: BLE001 - a crash of a group is one failure
                report(name, False, "%s: %s" % (type(e).__name__, e))

        b = Daemon(tmp, os.path.join(tmp, "var-b"),
                   {"LLMBOX_POOL_SIZE": "1", "LLMBOX_SANDBOX_TTL_MAX_S": "3"}, "b")
        daemons.append(b)
        try:
            test_ttl(b)
        except Exception as e:  # noqa: BLE001
            report("ttl", False, "%s: %s" % (type(e).__name__, e))
        b.stop()

        if shutil.which("nginx"):
            try:
                test_health()
            except Exception as e:  # noqa: BLE001
                report("health", False, "%s: %s" % (type(e).__name__, e))
        else:
            print("SKIP health_shows_pool: nginx not installed")

        if have_slirp:
            try:
                daemons.append(test_restart(tmp, var, a))
            except Exception as e:  # noqa: BLE001
                report("restart", False, "%s: %s" % (type(e).__name__, e))
        else:
            print("SKIP restart: slirp4netns not installed")
    finally:
        for d in daemons:
            if d.proc.poll() is None:
                d.stop()
        if failed:
            for d in daemons:
                sys.stderr.write("--- %s (last lines) ---\n%s" % (d.logpath, d.tail()))
        if os.environ.get("KEEP_TMP"):
            print("kept %s" % tmp)
        else:
            subprocess.call(["rm", "-rf", tmp])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
