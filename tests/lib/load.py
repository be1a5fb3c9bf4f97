"""Helpers shared by the load tests (tests/load/) and the benchmarks (bench/):
many tasks at once, checks of the stored events, sandbox leak checks, an
asyncio Server-Sent Events client for hundreds of streams, wrk runs and a
plain nginx to compare with. Python stdlib only (plus the wrk binary).
"""
import asyncio
import http.client
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from stack import multipart

# ---- the machine -----------------------------------------------------------


def meminfo_mib(field="MemAvailable"):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def machine():
    """One line: CPU, cores, RAM, kernel, distribution, load now."""
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    dist = platform.platform()
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    dist = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return "%s, %d cores, %.1f GiB RAM, kernel %s, %s, load %s" % (
        cpu, os.cpu_count() or 0, meminfo_mib("MemTotal") / 1024, platform.release(), dist, loadavg())


def cpu_seconds(pids):
    """User + system CPU seconds used so far by these processes (and their
    waited-for children)."""
    tck = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                st = f.read()
        except OSError:
            continue
        f_ = st[st.rfind(")") + 2:].split()
        total += sum(int(x) for x in f_[11:15]) / tck
    return total


def cpu_split(pid):
    """(own, reaped children) CPU seconds of one process."""
    tck = os.sysconf("SC_CLK_TCK")
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
    except OSError:
        return 0.0, 0.0
    f_ = [int(x) for x in st[st.rfind(")") + 2:].split()[11:15]]
    return (f_[0] + f_[1]) / tck, (f_[2] + f_[3]) / tck


class CpuMeter:
    """CPU seconds used by each part of a stack between start() and stop():
    the fake model, sandboxd (+ its sandboxes, reaped), the web, the agents
    (reaped by the web), nginx (master + workers)."""

    def __init__(self, stack):
        self.stack = stack

    def _now(self):
        s = self.stack
        out = {}
        model = [p.pid for p in s.procs if "fake_model.py" in " ".join(map(str, p.args))]
        out["fake model"] = sum(cpu_split(p)[0] for p in model)
        sd = stack_pids(s, "sandboxd")
        out["sandboxd"] = sum(cpu_split(p)[0] for p in sd)
        out["sandboxes"] = sum(cpu_split(p)[1] for p in sd)
        web = stack_pids(s, "web")
        out["web"] = sum(cpu_split(p)[0] for p in web)
        out["agents"] = sum(cpu_split(p)[1] for p in web)
        out["nginx"] = sum(sum(cpu_split(p)) for p in stack_pids(s, "nginx"))
        return out

    def start(self):
        self.t0 = time.time()
        self.c0 = self._now()
        return self

    def stop(self):
        c1 = self._now()
        self.secs = time.time() - self.t0
        self.used = {k: c1[k] - self.c0[k] for k in c1}
        return self.used

    def line(self):
        parts = ", ".join("%s %.1f" % (k, v) for k, v in sorted(self.used.items(), key=lambda kv: -kv[1]))
        total = sum(self.used.values())
        return "CPU seconds in %.1f s (2 cores = %.0f): %s; total %.1f (%.0f %% of the cores)" % (
            self.secs, 2 * self.secs, parts, total, 100 * total / ((os.cpu_count() or 1) * self.secs))


def stack_pids(stack, name):
    """pids of the stack's processes whose argv[1] is name (web, sandboxd)
    or whose argv[0] ends with it (nginx: the master and its workers)."""
    out = []
    for p in stack.procs:
        if p.poll() is not None:
            continue
        if (len(p.args) > 1 and p.args[1] == name) or os.path.basename(str(p.args[0])) == name:
            out.append(p.pid)
            if name == "nginx":
                out += children(p.pid)
    return out


def raise_nofile(want):
    """Raises this process's open-file limit to want (or the hard limit);
    returns the limit in effect."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            if os.geteuid() == 0:
                resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class MemSampler:
    """Samples MemAvailable in the background; .low is the lowest seen."""

    def __init__(self, every=0.25):
        self.every = every
        self.start = meminfo_mib()
        self.low = self.start
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.wait(self.every):
            self.low = min(self.low, meminfo_mib())

    def stop(self):
        self._stop.set()
        self._t.join()
        return self.start - self.low  # MiB the run took at its peak


# ---- scenarios and tasks -----------------------------------------------------


def bash_steps(n, command="true"):
    """n turns that each run one cheap bash command, then a finish call.
    Token counts are per conversation (the fake model's default counts by
    its global request number, which would run into the token budget after
    a few hundred requests)."""
    use = lambda k: {"prompt_tokens": 1000 + 200 * k, "completion_tokens": 20}
    steps = [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}], "usage": use(k)}
             for k in range(n)]
    steps.append({"tool_calls": [{"name": "finish", "arguments": {"answer": "done"}}], "usage": use(n)})
    return steps


def per_conversation(steps):
    """A scenario every task walks on its own (by the number of assistant
    messages in the request), so any number of tasks can run at once."""
    return {"scenarios": [], "steps": steps}


def post_task(port, prompt, source, fields=None, timeout=60):
    """POST /api/tasks from the loopback address `source`: nginx limits task
    starts per client address (30 a minute, bursts of 20), and a load test
    stands for many users, so it spreads its starts over addresses."""
    f = {"prompt": prompt}
    f.update(fields or {})
    ctype, body = multipart(f, [])
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
    try:
        c.request("POST", "/api/tasks", body=body, headers={"Content-Type": ctype})
        r = c.getresponse()
        data = r.read()
        return r.status, json.loads(data) if data else None
    finally:
        c.close()


def create_tasks(stack, n, prompt, fields=None, workers=16, per_source=16):
    """Starts n tasks at once (workers requests in flight); returns their
    ids in order. Raises AssertionError naming the first refusal."""
    def one(i):
        src = "127.0.%d.%d" % (1 + (i // per_source) // 250, 1 + (i // per_source) % 250)
        return post_task(stack.port, "%s #%d" % (prompt, i), src, fields)

    with ThreadPoolExecutor(max_workers=workers) as ex:
        res = list(ex.map(one, range(n)))
    bad = [(st, b) for st, b in res if st != 201]
    assert not bad, "%d of %d task starts refused; first: %s %s" % (len(bad), n, bad[0][0], bad[0][1])
    return [b["id"] for _, b in res]


def db(stack):
    """A read-only connection to the stack's task database (WAL: readers
    never block the writers)."""
    path = os.path.join(stack.prefix, "var", "web", "llmbox.db")
    c = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=30)
    c.execute("PRAGMA busy_timeout = 30000")
    return c


def wait_final(stack, ids, timeout):
    """Waits until every task in ids is final (read from the database, so
    hundreds of tasks cost one query a poll); returns {id: status}."""
    deadline = time.time() + timeout
    want = set(ids)
    c = db(stack)
    try:
        while True:
            rows = dict(c.execute("SELECT id, status FROM tasks WHERE status IN ('succeeded','failed','cancelled')"))
            done = {i: rows[i] for i in want if i in rows}
            if len(done) == len(want):
                return done
            if time.time() > deadline:
                left = sorted(want - set(done))
                raise AssertionError("%d of %d tasks not final after %d s (e.g. %s)" % (
                    len(left), len(want), timeout, left[:3]))
            time.sleep(0.2)
    finally:
        c.close()


def task_events(stack, ids):
    """{id: [(seq, type, data dict)]} from the database, in seq order."""
    c = db(stack)
    out = {i: [] for i in ids}
    try:
        for tid, seq, typ, data in c.execute("SELECT task_id, seq, type, data FROM events ORDER BY task_id, seq"):
            if tid in out:
                out[tid].append((seq, typ, json.loads(data)))
    finally:
        c.close()
    return out


def model_event_ts(stack, task_id):
    """{turn: ts_ms} of a task's model events (stored when the reply came)."""
    c = db(stack)
    try:
        rows = c.execute("SELECT ts_ms, data FROM events WHERE task_id = ? AND type = 'model'", (task_id,))
        return {json.loads(d)["turn"]: ts for ts, d in rows}
    finally:
        c.close()


def check_events(evs, turns, calls_per_turn=1):
    """Problems (sentences) with one task's stored events: seq must run
    1..N without a gap, each model turn and each tool call must be there
    exactly once, and the stream must end with exactly one done."""
    probs = []
    seqs = [s for s, _, _ in evs]
    if seqs != list(range(1, len(seqs) + 1)):
        gaps = [a for a, b in zip(seqs, seqs[1:]) if b != a + 1]
        probs.append("seq not contiguous from 1 (first break after %s; %d events)" % (gaps[:1] or seqs[:1], len(seqs)))
    types = [t for _, t, _ in evs]
    if types.count("done") != 1 or (types and types[-1] != "done"):
        probs.append("%d done events, last event %r" % (types.count("done"), types[-1] if types else None))
    mturns = [d.get("turn") for _, t, d in evs if t == "model"]
    if mturns != list(range(1, turns + 1)):
        probs.append("model events for turns %s, expected 1..%d once each" % (mturns[:12], turns))
    calls = [(d.get("turn"), d.get("call_id")) for _, t, d in evs if t == "tool"]
    if len(calls) != len(set(calls)) or len(calls) != turns * calls_per_turn:
        probs.append("%d tool events (%d distinct), expected %d" % (len(calls), len(set(calls)), turns * calls_per_turn))
    return probs


def api_tasks(stack, ids, workers=8):
    """GET /api/tasks/{id} for each id; {id: task object}."""
    def one(i):
        st, t = stack.get_json("/api/tasks/" + i)
        assert st == 200, "GET /api/tasks/%s: %s" % (i, st)
        return i, t
    with ThreadPoolExecutor(max_workers=workers) as ex:
        return dict(ex.map(one, ids))


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


# ---- sandbox leftovers -----------------------------------------------------


def cgroup_group(prefix):
    """The cgroup name sandboxd uses for this installation: llmbox-<FNV-1a
    of its var dir> (server/sandbox/cgroup.c)."""
    h = 2166136261
    for ch in (prefix.rstrip("/") + "/var").encode():
        h = ((h ^ ch) * 16777619) & 0xFFFFFFFF
    return "llmbox-%08x" % h


def cgroup_children(prefix):
    """Sandbox cgroups of the stack now: [paths]."""
    g = cgroup_group(prefix)
    out = []
    for base in [os.path.join("/sys/fs/cgroup", c, g) for c in os.listdir("/sys/fs/cgroup")] + \
            [os.path.join("/sys/fs/cgroup", g)]:
        if os.path.isdir(base):
            out += [os.path.join(base, d) for d in os.listdir(base) if os.path.isdir(os.path.join(base, d))]
    return out


def cgroup_bases(prefix):
    g = cgroup_group(prefix)
    return [p for p in [os.path.join("/sys/fs/cgroup", c, g) for c in os.listdir("/sys/fs/cgroup")] +
            [os.path.join("/sys/fs/cgroup", g)] if os.path.isdir(p)]


def mounts_under(path):
    with open("/proc/self/mountinfo") as f:
        return [l.split()[4] for l in f if path in l]


def children(pid):
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rfind(")") + 2:].split()
        if int(fields[1]) == pid:
            kids.append(int(d))
    return kids


def is_spare_agent(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read()
        # a spare still waiting: its task-id placeholder is there
        return b"\0--spare" in cmd and b"\0" + b"." * 32 in cmd
    except OSError:
        return False


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        k = children(todo.pop())
        out += k
        todo += k
    return out


def proc_start(pid):
    """(pid, start time) identifies a process across pid reuse."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
        return int(st[st.rfind(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def leaks_while_running(stack, settle=15):
    """What is left of the tasks' sandboxes while the stack still runs: the
    warm pool's ready sandboxes are allowed, nothing else. Waits up to
    settle seconds for destroys in flight; returns sentences."""
    deadline = time.time() + settle
    while True:
        left = []
        info = stack.sandboxd_ping()
        pool = info.get("pool") or {}
        # a sandbox being made for the pool has its dir already (sandboxd's workers)
        ready = pool.get("ready", 0) + pool.get("making", 0)
        if info.get("sandboxes", 0):
            left.append("sandboxd holds %d sandboxes of clients" % info["sandboxes"])
        d = os.path.join(stack.prefix, "var", "sandboxes")
        dirs = os.listdir(d) if os.path.isdir(d) else []
        if len(dirs) > ready:
            left.append("%d sandbox dirs for %d pooled sandboxes" % (len(dirs), ready))
        cgs = cgroup_children(stack.prefix)
        # a destroyed sandbox's empty groups are kept as spare-<n> for the
        # next create (sandboxd's cgroup.c, at most 64): allowed while the
        # stack runs, as long as no process is in one
        spares = [p for p in cgs if os.path.basename(p).startswith("spare-")]
        ncg = len(set(os.path.basename(p) for p in cgs if p not in spares))
        if ncg > ready:
            left.append("%d sandbox cgroups for %d pooled sandboxes" % (ncg, ready))
        if len(set(os.path.basename(p) for p in spares)) > 64:
            left.append("%d spare cgroups (at most 64 are kept)" % len(spares))
        for p in spares:
            try:
                with open(os.path.join(p, "cgroup.procs")) as f:
                    if f.read().strip():
                        left.append("a process in the spare cgroup %s" % p)
            except OSError:
                pass  # removed meanwhile
        sd = [p for p in stack.procs if len(p.args) > 1 and p.args[1] == "sandboxd"]
        if sd:
            # each pooled sandbox is an init and its shell
            procs = descendants(sd[0].pid)
            if len(procs) > 2 * ready + 2:
                left.append("%d processes under sandboxd for %d pooled sandboxes" % (len(procs), ready))
        web = [p for p in stack.procs if len(p.args) > 1 and p.args[1] == "web"]
        if web:
            # the spare agent (agent_spare) waits for the next task: not a leftover
            agents = [k for k in descendants(web[0].pid) if not is_spare_agent(k)]
            if agents:
                left.append("%d processes (agents) still under the web" % len(agents))
        if not left or time.time() > deadline:
            return left
        time.sleep(0.25)


def stop_and_check(stack):
    """Stops the stack's processes (SIGTERM) and returns what is left of
    its sandboxes on the host: processes of sandboxd, cgroups, mounts,
    scratch dirs. The prefix is kept for stack.stop() to remove."""
    sd = [p for p in stack.procs if len(p.args) > 1 and p.args[1] == "sandboxd"]
    kids = [(k, proc_start(k)) for k in descendants(sd[0].pid)] if sd and sd[0].poll() is None else []
    for pr in reversed(stack.procs):
        if pr.poll() is None:
            pr.send_signal(signal.SIGTERM)
    for pr in reversed(stack.procs):
        try:
            pr.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pr.kill()
            pr.wait()
    deadline = time.time() + 10
    while True:
        left = []
        alive = [k for k, st in kids if st is not None and proc_start(k) == st]
        if alive:
            left.append("%d processes of sandboxd still alive" % len(alive))
        if cgroup_bases(stack.prefix):
            left.append("cgroups left: %s" % cgroup_bases(stack.prefix)[:3])
        m = mounts_under(stack.prefix)
        if m:
            left.append("%d mounts left under the prefix (e.g. %s)" % (len(m), m[0]))
        d = os.path.join(stack.prefix, "var", "sandboxes")
        dirs = os.listdir(d) if os.path.isdir(d) else []
        if dirs:
            left.append("%d sandbox dirs left" % len(dirs))
        if not left or time.time() > deadline:
            return left
        time.sleep(0.25)


# ---- Server-Sent Events, many at once -----------------------------------------


class SSEResult:
    def __init__(self, task_id):
        self.task_id = task_id
        self.status = None
        self.ids = []
        self.types = []
        self.times = []             # time.monotonic() when each event arrived
        self.done = False
        self.error = None
        self.t_headers = None       # time.monotonic() when the headers arrived
        self.t_headers_wall = None  # the same in time.time()
        self.t_done = None


async def _read_body(reader, chunked):
    """Yields body bytes, decoding chunked transfer encoding."""
    if not chunked:
        while True:
            b = await reader.read(65536)
            if not b:
                return
            yield b
    while True:
        line = await reader.readline()
        if not line:
            return
        size = int(line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            return
        data = await reader.readexactly(size)
        await reader.readexactly(2)
        yield data


async def sse_client(port, res, source="127.0.0.1"):
    """Reads /api/tasks/{id}/events through nginx to the done event, as an
    EventSource would (HTTP/1.1, chunked); fills res."""
    writer = None
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0), limit=1 << 22)
        writer.write(("GET /api/tasks/%s/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      "Accept: text/event-stream\r\nCache-Control: no-cache\r\n\r\n" % res.task_id).encode())
        await writer.drain()
        line = await reader.readline()
        res.status = int(line.split()[1])
        chunked = False
        while True:
            h = await reader.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            k, _, v = h.decode("latin-1").partition(":")
            if k.lower() == "transfer-encoding" and "chunked" in v.lower():
                chunked = True
        res.t_headers = time.monotonic()
        res.t_headers_wall = time.time()
        if res.status != 200:
            res.error = "HTTP %d" % res.status
            return
        buf = b""
        async for data in _read_body(reader, chunked):
            buf += data.replace(b"\r\n", b"\n")
            while b"\n\n" in buf:
                block, buf = buf.split(b"\n\n", 1)
                ev, eid = None, None
                for ln in block.split(b"\n"):
                    if ln.startswith(b"id:"):
                        eid = int(ln[3:].strip())
                    elif ln.startswith(b"event:"):
                        ev = ln[6:].strip().decode()
                if eid is not None:
                    res.ids.append(eid)
                    res.types.append(ev)
                    res.times.append(time.monotonic())
                if ev == "done":
                    res.done = True
                    res.t_done = time.monotonic()
                    return
        res.error = "the stream ended before the done event"
    except Exception as e:  # noqa: BLE001 - recorded, the caller reports
        res.error = "%s: %s" % (type(e).__name__, e)
    finally:
        if writer is not None:
            writer.close()


def run_sse_clients(port, task_ids, timeout):
    """One SSE client per entry of task_ids (repeat an id for several
    clients of one task), all opened at once; returns [SSEResult]."""
    results = [SSEResult(t) for t in task_ids]

    async def main():
        tasks = [asyncio.ensure_future(sse_client(port, r)) for r in results]
        await asyncio.wait_for(asyncio.gather(*tasks), timeout)

    try:
        asyncio.run(main())
    except asyncio.TimeoutError:
        for r in results:
            if not r.done and not r.error:
                r.error = "no done event within %d s" % timeout
    return results


# ---- wrk and a plain nginx to compare with -------------------------------------

WRK_LUA = r"""
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"mean_us":%.1f,"max_us":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write,
    e.status, e.timeout, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.mean, latency.max))
end
"""


def wrk(url, seconds=5, connections=32, threads=2, timeout_s=10, lua=""):
    """Runs wrk on url; returns a dict: requests, rps, MiB/s, errors
    (connect, read, write, non-2xx/3xx, timeout), latency p50/p90/p99 (ms).
    lua: more of wrk's script before the summary (e.g. init and request
    functions for a mix of requests: bench/capacity.py)."""
    if not shutil.which("wrk"):
        raise FileNotFoundError("wrk is not installed (make deps installs it)")
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(lua + WRK_LUA)
        lua = f.name
    try:
        out = subprocess.run(["wrk", "-t%d" % threads, "-c%d" % connections, "-d%ds" % seconds,
                              "--timeout", "%ds" % timeout_s, "-s", lua, url],
                             capture_output=True, text=True, timeout=seconds + 60)
    finally:
        os.unlink(lua)
    m = re.search(r"^WRKJSON (\{.*\})$", out.stdout, re.M)
    if not m:
        raise RuntimeError("wrk gave no summary: %s %s" % (out.stdout[-500:], out.stderr[-500:]))
    r = json.loads(m.group(1))
    secs = r["duration_us"] / 1e6
    r["rps"] = r["requests"] / secs
    r["mib_s"] = r["bytes"] / secs / (1 << 20)
    r["errors"] = r["connect"] + r["read"] + r["write"] + r["status"] + r["timeout"]
    for k in ("p50", "p90", "p99", "mean", "max"):
        r[k + "_ms"] = r[k + "_us"] / 1000.0
    return r


def fmt_wrk(r):
    return "%8.0f req/s  %7.1f MiB/s  p50 %6.3f ms  p99 %6.3f ms  errors %d" % (
        r["rps"], r["mib_s"], r["p50_ms"], r["p99_ms"], r["errors"])


PLAIN_NGINX = """daemon off;
user llmbox;
worker_processes 2;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
worker_rlimit_nofile 10240;
events {{ worker_connections 4096; }}
http {{
    types {{ application/json json; }}
    default_type application/octet-stream;
    access_log {root}/access.log;
    client_body_temp_path {root}/tmp;
    sendfile on;
    tcp_nopush on;
    server_tokens off;
    keepalive_timeout 65s;
    server {{
        listen 127.0.0.1:{port};
        root {root}/www;
        etag on;
    }}
}}
"""


class PlainNginx:
    """nginx serving a folder of static files with nothing else (the peer):
    the same worker count, sendfile and access log as nginx.conf, so the
    difference to llmbox is the FastCGI round trip and the backend's work."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="llmbox-peer-")
        os.chmod(self.root, 0o755)
        self.www = os.path.join(self.root, "www")
        os.makedirs(self.www)
        os.makedirs(os.path.join(self.root, "tmp"))
        self.port = None
        self.proc = None

    def add(self, name, src=None, data=None):
        """Puts a file into the served folder (a copy of src, or data);
        returns its URL path."""
        dst = os.path.join(self.www, name)
        if src:
            shutil.copyfile(src, dst)
        else:
            with open(dst, "wb") as f:
                f.write(data)
        os.chmod(dst, 0o644)
        return "/" + name

    def start(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        with open(os.path.join(self.root, "nginx.conf"), "w") as f:
            f.write(PLAIN_NGINX.format(root=self.root, port=self.port))
        self.proc = subprocess.Popen(["nginx", "-p", self.root + "/", "-c", os.path.join(self.root, "nginx.conf"),
                                      "-e", os.path.join(self.root, "error.log")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the peer nginx did not start")

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *a):
        self.stop()

