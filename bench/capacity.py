#!/usr/bin/env python3
"""What one web node and one sandbox node each sustain (several nodes), each
beside a peer measured in the same run on the same machine.

  web     One web node: nginx + `llmbox web` on PostgreSQL with
          task_runner = queue (the web runs no agents), driven by wrk with
          the mix a cluster's web sees (--mix, default: 40 % task GET, 25 %
          event-stream opens read to the end of a finished task's stream,
          25 % signed downloads of a --file-kib file, 10 % task creates,
          stored and queued). The connections step up (--steps); each step
          gives req/s, p50/p99 and errors, and the knee is the step with the
          most req/s whose every round kept errors < 1 % and p99 < --p99-ms.
          Peers, in turn with it at every step: the SQLite web (one machine,
          the same queue mode, so a create is stored and queued the same
          way) and a plain nginx serving a static file of each answer's size
          (tests/lib/load.py PlainNginx: the front's ceiling; a create is a
          GET of a file the size of its answer there). Then each kind of
          request alone at --kind-c connections (not in --quick).
  streams How many open event streams the PostgreSQL web holds: the web
          restarted with web_threads = --streams + sse_reserve_threads, then
          --streams streams opened at once on a queued task (they stay
          open), memory per stream (the web's RSS, nginx's and PostgreSQL's
          PSS), and the next stream must be refused (429).
  node    One sandbox node: `llmbox node` (--capacity) + sandboxd, the
          scripted fake model (tests/fake_model.py, no delay), --tasks
          tasks of --turns bash `true` turns and a finish, each in a
          sandbox, created through the web at once; tasks/s (first created
          -> last finished, from the store) and CPU per task of the node
          host (node + its agents + sandboxd + the sandboxes). Peer: the
          same tasks on one machine, task_runner = local on SQLite with
          max_tasks = --capacity (creates past it get 429 and are retried).
  api     API sandboxes on that node's web: K sandboxes (--api-steps), one
          client each running exec `true` in a loop for --secs through
          nginx; execs/s, p50/p99, errors. Peer: the same on the SQLite web.

Every measurement runs --rounds times, engines in turn; the load average is
printed at the start and the end of each part (the machine is shared: the
figures are noisy). Creates lift nginx's 30-a-minute start limit per client
address (a cluster's web sees many addresses; wrk is one). PostgreSQL is
tests/lib/pg_server.py's (unix socket, fsync off). Everything started is
stopped and its folders removed; the end says whether anything was left.
Needs root and the sandbox image (as bench/web.py). Timings are reported,
never asserted.

    python3 bench/capacity.py [--quick] [--only web,streams,node,api] [--rounds 2] [--secs 4]
            [--steps 1,4,16,64,256] [--p99-ms 100] [--streams 1000] [--capacity 8] [--tasks 64]
"""
import os
import sys

# Python put bench/ first on the path, where bench/queue.py hides the
# standard queue module (concurrent.futures needs it): bench/ goes last
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]

import argparse  # noqa: E402
import asyncio  # noqa: E402
import http.client  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.append(HERE)
import load  # noqa: E402
import pg_server  # noqa: E402
from stack import Stack, image_ready, multipart, pg_fresh_db  # noqa: E402
from test_node_queue import nodes_end, nodes_on  # noqa: E402  (starts `llmbox node` on a stack's home)
from sandbox import descendants, pss  # noqa: E402  (bench/sandbox.py)

# a cluster's web stands for many client addresses; wrk is one
START_LIMIT = ("rate=30r/m", "rate=100000r/s")
SSE_RESERVE = 8  # sse_reserve_threads, the default
KINDS = ("get", "sse", "dl", "create")


def say(fmt, *a):
    print(fmt % a if a else fmt, flush=True)


def uptime():
    return open("/proc/loadavg").read().split()[:3]


def part_start(name):
    say("\n== %s (load average %s)", name, " ".join(uptime()))
    return time.time()


def part_end(name, t0):
    say("-- %s took %.0f s; load average at its end %s", name, time.time() - t0, " ".join(uptime()))


def pct(xs, p):
    return load.pct(xs, p) if xs else float("nan")


def stack_env(s):
    """The stack's LLMBOX_* settings for a node on its home (its own name
    and listen address aside), as tests/integration/test_node_queue.py's
    web_queue starts one."""
    return {k: v for k, v in s.env.items() if k.startswith("LLMBOX_") and k not in ("LLMBOX_NODE_NAME",
                                                                                     "LLMBOX_NODE_LISTEN")}


def start_node(s, db_url, name, capacity):
    """`llmbox node` on stack s's home and sandboxd (db_url "" = SQLite at
    its db_path); (the Cluster holding it, its process)."""
    c = nodes_on(None, db_url or "")
    DIRS.append(c.dir)
    try:
        p = c.node(name, s.model_url, capacity=capacity, lease=15, home=s.prefix, env=stack_env(s))
    except BaseException:
        nodes_end(c)
        raise
    return c, p


def stop_node(c, p):
    """SIGTERM (the node drains and exits 0), then the Cluster's own end."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
    nodes_end(c)


def pg_pids(pg):
    """The PostgreSQL server's processes: the postmaster and its backends."""
    return [pg.pid] + descendants([pg.pid]) if pg and pg.pid else []


def create_body(prompt):
    return multipart({"prompt": prompt}, [])


# ---- the web: a mix of requests through wrk ------------------------------------

def lua_str(b):
    if isinstance(b, str):
        b = b.encode()
    return '"' + "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else "\\%03d" % c for c in b) + '"'


MIX_LUA = """
local defs = { @DEFS@ }
local seq = {}
local n = 0
init = function(args)
  for i, d in ipairs(defs) do seq[i] = wrk.format(d[1], d[2], d[3], d[4]) end
end
request = function()
  n = n + 1
  return seq[(n - 1) % #seq + 1]
end
"""


def weighted(weights):
    """The kinds of weights ({kind: int}) in one evenly spread cycle."""
    g = 0
    for w in weights.values():
        g = math.gcd(g, w)
    slots = []
    for k, w in weights.items():
        w //= g
        slots += [((j + 0.5) / w, k) for j in range(w)]
    return [k for _, k in sorted(slots)]


def mix_lua(reqs, cycle):
    """wrk's script: the requests of reqs ({kind: (method, path, headers,
    body)}) in the order of cycle, round and round on every connection."""
    defs = []
    for k in cycle:
        m, path, hdr, body = reqs[k]
        h = ", ".join("[%s] = %s" % (lua_str(a), lua_str(b)) for a, b in hdr.items())
        defs.append("{%s, %s, {%s}, %s}" % (lua_str(m), lua_str(path), h, lua_str(body) if body else "nil"))
    return MIX_LUA.replace("@DEFS@", ",\n".join(defs))


class WebTarget:
    """One thing wrk is aimed at: its URL, the requests of each kind, and
    the processes whose CPU counts."""

    def __init__(self, name, base, reqs, pids_fn):
        self.name, self.base, self.reqs, self.pids_fn = name, base, reqs, pids_fn

    def cpu(self):
        return {k: load.cpu_seconds(v) for k, v in self.pids_fn().items()}

    def run(self, cycle, secs, conns):
        c0 = self.cpu()
        r = load.wrk(self.base + "/", secs, conns, threads=min(2, conns), lua=mix_lua(self.reqs, cycle))
        c1 = self.cpu()
        r["cpu_us"] = {k: (c1[k] - c0.get(k, 0)) * 1e6 / max(1, r["requests"]) for k in c1}
        r["err_pct"] = 100.0 * r["errors"] / max(1, r["requests"])
        return r


def seed_web(a, db_url, label):
    """A web in queue mode with one finished task that wrote a --file-kib
    file (run by a node started for it and stopped again: the web itself
    runs nothing); (stack, WebTarget, answers {kind: bytes}, a queued task id)."""
    cmd = "head -c %d /dev/urandom > /testbed/output/file.bin" % (a.file_kib * 1024)
    s = Stack(scenario=load.per_conversation(load.bash_steps(1, cmd)), db_url=db_url, model_log=False,
              env={"LLMBOX_TASK_RUNNER": "queue", "LLMBOX_WEB_THREADS": str(a.web_threads),
                   "LLMBOX_SSE_MAX_PER_CLIENT": "65536"},
              nginx_subst=[START_LIMIT])
    try:
        s.start()
        DIRS.append(s.prefix)
        st, t = s.create_task("[seed] write a file")
        assert st == 201, (st, t)
        c, p = start_node(s, db_url, "seed", 2)
        try:
            t = s.wait_task(t["id"], timeout=120)
        finally:
            stop_node(c, p)
        assert t["status"] == "succeeded", t
        tid = t["id"]
        ans = {}
        st, _, ans["get"] = s.request("GET", "/api/tasks/" + tid)
        assert st == 200, st
        st, _, ans["sse"] = s.request("GET", "/api/tasks/%s/events" % tid, headers={"Accept": "text/event-stream"})
        assert st == 200 and b"event: done" in ans["sse"], (st, ans["sse"][-300:])
        _, _, listing = s.request("GET", "/api/tasks/%s/artifacts" % tid)
        links = {x["path"]: x.get("download_url") for x in json.loads(listing)["artifacts"]}
        assert links.get("file.bin"), "no signed download link for file.bin: %r" % links
        st, _, ans["dl"] = s.request("GET", links["file.bin"])
        assert st == 200 and len(ans["dl"]) == a.file_kib * 1024, (st, len(ans["dl"]))
        ctype, body = create_body("[mix] a task that waits in the queue")
        st, _, ans["create"] = s.request("POST", "/api/tasks", body, {"Content-Type": ctype})
        assert st == 201, (st, ans["create"])
        queued = json.loads(ans["create"])["id"]
        reqs = {"get": ("GET", "/api/tasks/" + tid, {}, None),
                "sse": ("GET", "/api/tasks/%s/events" % tid, {"Accept": "text/event-stream"}, None),
                "dl": ("GET", links["file.bin"], {}, None),
                "create": ("POST", "/api/tasks", {"Content-Type": ctype}, body)}

        def pids():
            out = {"nginx": load.stack_pids(s, "nginx"), "web": load.stack_pids(s, "web")}
            if db_url:
                out["postgres"] = pg_pids(PG[0])
            return out
        return s, WebTarget(label, "http://127.0.0.1:%d" % s.port, reqs, pids), ans, queued
    except BaseException:
        s.stop()
        raise


PG = [None]  # the run's PgServer, for the CPU of its processes


def static_peer(ans):
    peer = load.PlainNginx()
    DIRS.append(peer.root)
    names = {"get": "task.json", "sse": "events.txt", "dl": "file.bin", "create": "create.json"}
    reqs = {k: ("GET", peer.add(names[k], data=ans[k]), {}, None) for k in KINDS}
    peer.start()
    target = WebTarget("static nginx", peer.url(""), reqs,
                       lambda: {"nginx": [peer.proc.pid] + load.children(peer.proc.pid)})
    return peer, target


def fmt_run(r):
    cpu = " ".join("%s %.0f" % (k, v) for k, v in r["cpu_us"].items())
    return "%8.0f req/s  p50 %7.2f ms  p99 %8.2f ms  errors %d (%.2f %%)  CPU/request us: %s" % (
        r["rps"], r["p50_ms"], r["p99_ms"], r["errors"], r["err_pct"], cpu)


def access_log(s):
    return os.path.join(s.prefix, "var", "log", "nginx-access.log")


def refusals(s, off):
    """The answers of 400 or more in s's nginx access log past offset off,
    by kind of request and status: ({(kind, status): n}, the new offset)."""
    out = {}
    with open(access_log(s), errors="replace") as f:
        f.seek(off)
        for ln in f:
            try:
                e = json.loads(ln)
            except ValueError:
                continue
            if e.get("status", 0) < 400 or e["status"] == 499:  # 499: wrk closed it at the end of its run
                continue
            path = e.get("path", "")
            kind = "dl" if path.startswith("/dl/") else "sse" if path.endswith("/events") else \
                "create" if e.get("method") == "POST" else "get"
            out[(kind, e["status"])] = out.get((kind, e["status"]), 0) + 1
        return out, f.tell()


def say_refusals(stacks, offs):
    for i, (name, s) in enumerate(stacks):
        got, offs[i] = refusals(s, offs[i])
        say("  %s answered %s", name, ", ".join("%s %d: %d" % (k, st, n) for (k, st), n in sorted(got.items()))
            if got else "no error (nothing of 400 or more in its nginx access log)")


def web_steps(a, targets, cycle):
    """Every step, the targets in turn, --rounds times; {target: {c: [runs]}}."""
    res = {t.name: {} for t in targets}
    for c in a.steps:
        for rnd in range(a.rounds):
            for t in targets:
                r = t.run(cycle, a.secs, c)
                res[t.name].setdefault(c, []).append(r)
                say("  c=%-4d %-13s round %d: %s", c, t.name, rnd + 1, fmt_run(r))
    return res


def knee(runs_by_c, bound):
    """(c, mean req/s) of the step with the most req/s whose every round kept
    errors < 1 % and p99 < bound; (None, 0) if none did."""
    best = (None, 0.0)
    for c, runs in sorted(runs_by_c.items()):
        if all(r["err_pct"] < 1.0 and r["p99_ms"] < bound for r in runs):
            rps = sum(r["rps"] for r in runs) / len(runs)
            if rps > best[1]:
                best = (c, rps)
    return best


def web_summary(a, res, names):
    say("\n  mix summary (mean of %d rounds; ratio = the PostgreSQL web's req/s over the peer's in the same step)",
        a.rounds)
    head = "  %-6s" % "c" + "".join("%26s" % n for n in names) + "   pg/sqlite  pg/static"
    say(head)
    for c in a.steps:
        cells, rps = [], {}
        for n in names:
            runs = res[n][c]
            rps[n] = sum(r["rps"] for r in runs) / len(runs)
            p99 = max(r["p99_ms"] for r in runs)
            err = max(r["err_pct"] for r in runs)
            cells.append("%7.0f/s p99<=%6.1f e%4.1f%%" % (rps[n], p99, err))
        say("  %-6d%s   %9.2f  %9.2f", c, "".join("%26s" % x for x in cells),
            rps[names[0]] / rps[names[1]], rps[names[0]] / rps[names[2]])
    say("  knee (most req/s with errors < 1 %% and p99 < %g ms in every round):", a.p99_ms)
    knees = {}
    for n in names:
        knees[n] = knee(res[n], a.p99_ms)
        c, rps = knees[n]
        say("    %-13s %s", n, "c=%d, %.0f req/s" % (c, rps) if c else "no step met the bound")
    if knees[names[0]][0] and knees[names[1]][0] and knees[names[2]][0]:
        say("    ratio at the knees: PostgreSQL web / SQLite web %.2fx, / static nginx %.2fx",
            knees[names[0]][1] / knees[names[1]][1], knees[names[0]][1] / knees[names[2]][1])
    return knees


def web_kinds(a, targets):
    """Each kind of request alone at --kind-c connections."""
    say("\n  each kind alone at c=%d (%d s, %d rounds):", a.kind_c, a.secs, a.rounds)
    for k in KINDS:
        rps = {}
        for rnd in range(a.rounds):
            for t in targets:
                r = t.run([k], a.secs, a.kind_c)
                rps.setdefault(t.name, []).append(r["rps"])
                say("    %-6s %-13s round %d: %s", k, t.name, rnd + 1, fmt_run(r))
        m = {n: sum(v) / len(v) for n, v in rps.items()}
        n0, n1, n2 = [t.name for t in targets]
        say("    %-6s ratio pg/sqlite %.2fx, pg/static %.2fx", k, m[n0] / m[n1], m[n0] / m[n2])


def web_part(a, pg):
    t0 = part_start("web: one web node, the request mix (%s)" % ", ".join("%s %d" % kv for kv in a.mix.items()))
    stacks, peer = [], None
    try:
        s_pg, t_pg, ans, queued = seed_web(a, pg_fresh_db(pg.url), "PostgreSQL web")
        stacks.append(s_pg)
        s_lite, t_lite, _, _ = seed_web(a, None, "SQLite web")
        stacks.append(s_lite)
        peer, t_static = static_peer(ans)
        say("  answers: task %d B, event stream %d B, download %d B, create %d B; web_threads %d; wrk %d s a run",
            len(ans["get"]), len(ans["sse"]), len(ans["dl"]), len(ans["create"]), a.web_threads, a.secs)
        targets = [t_pg, t_lite, t_static]
        named = [(t_pg.name, s_pg), (t_lite.name, s_lite)]
        offs = [os.path.getsize(access_log(x)) for _, x in named]
        if "web" in a.only:
            res = web_steps(a, targets, weighted(a.mix))
            say_refusals(named, offs)
            web_summary(a, res, [t.name for t in targets])
            if not a.quick:
                web_kinds(a, targets)
                say_refusals(named, offs)
        part_end("web", t0)
        if "streams" in a.only:
            streams_part(a, s_pg, pg, queued)
    finally:
        if peer:
            peer.stop()
        for s in stacks:
            s.stop()


# ---- open event streams held by one web ---------------------------------------

def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for ln in f:
                if ln.startswith("VmRSS:"):
                    return int(ln.split()[1])
    except OSError:
        pass
    return 0


def mem_now(s, pg):
    return {"web RSS": sum(rss_kib(p) for p in load.stack_pids(s, "web")),
            "nginx PSS": sum(pss(p) for p in load.stack_pids(s, "nginx")) // 1024,
            "PostgreSQL PSS": sum(pss(p) for p in pg_pids(pg)) // 1024,
            "MemAvailable": int(load.meminfo_mib() * 1024)}


def hold_streams(port, task_id, n):
    """n event streams on task_id opened at once from a thread of its own;
    (results, stop event, thread). The streams stay open until stop is set."""
    results = [load.SSEResult(task_id) for _ in range(n)]
    stop = threading.Event()

    def runner():
        async def main():
            tasks = [asyncio.ensure_future(load.sse_client(port, r)) for r in results]
            while not stop.is_set():
                await asyncio.sleep(0.05)
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        asyncio.run(main())

    th = threading.Thread(target=runner, daemon=True)
    th.start()
    return results, stop, th


def threads_for(streams):
    """The fewest web_threads whose share for streams (web_threads less
    sse_reserve_threads, a quarter of them at most: sse_admit.c) is streams."""
    w = streams
    while w - min(SSE_RESERVE, w // 4) < streams:
        w += 1
    return w


def status_of(port, path, headers, timeout=10):
    """The status of a GET, its body left unread (a stream admitted would
    never end)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path, headers=headers)
        return c.getresponse().status
    finally:
        c.close()


def streams_part(a, s, pg, queued):
    t0 = part_start("streams: open event streams one PostgreSQL web holds")
    load.raise_nofile(4 * a.streams + 1024)
    # the web again with threads for every stream (sse_reserve_threads stay for the rest)
    pr, argv, logname, env = s.named["web"]
    t1 = time.time()
    s.kill("web", signal.SIGTERM)
    t2 = time.time()
    threads = threads_for(a.streams)
    s.named["web"] = (pr, argv, logname, dict(env, LLMBOX_WEB_THREADS=str(threads)))
    s.restart("web")
    say("  the web restarted with web_threads %d, %d of them for streams (stopped in %.1f s, started in %.1f s)",
        threads, a.streams, t2 - t1, time.time() - t2)
    log0 = os.path.getsize(os.path.join(s.prefix, "var", "log", "web.log"))
    st, t = s.get_json("/api/tasks/" + queued)
    assert st == 200 and t["status"] == "queued", (st, t)
    for rnd in range(a.rounds):
        time.sleep(0.5)
        m0 = mem_now(s, pg)
        c0 = load.cpu_seconds(load.stack_pids(s, "web"))
        t1 = time.time()
        results, stop, th = hold_streams(s.port, queued, a.streams)
        try:
            deadline = time.time() + 60
            while time.time() < deadline and sum(1 for r in results if r.status is not None or r.error) < a.streams:
                time.sleep(0.1)
            opened = time.time() - t1
            ok = sum(1 for r in results if r.status == 200 and not r.error)
            time.sleep(1.0)  # a heap the web grew settles
            m1 = mem_now(s, pg)
            # one more must be refused: every thread the streams may take is taken
            try:
                st_extra = status_of(s.port, "/api/tasks/%s/events" % queued, {"Accept": "text/event-stream"})
            except OSError as e:
                st_extra = "no answer (%s)" % e
            c1 = load.cpu_seconds(load.stack_pids(s, "web"))
            errs = {}
            for r in results:
                if r.status != 200 or r.error:
                    key = r.error or "HTTP %s" % r.status
                    errs[key] = errs.get(key, 0) + 1
            say("  round %d: %d of %d streams open (200) in %.1f s; the next one answered %s; web CPU %.2f s meanwhile",
                rnd + 1, ok, a.streams, opened, st_extra, c1 - c0)
            if errs:
                say("    not open: %s", "; ".join("%d x %s" % (v, k) for k, v in list(errs.items())[:4]))
            per = ", ".join("%s %+.1f KiB" % (k, (m1[k] - m0[k]) / max(1, ok)) for k in m0 if k != "MemAvailable")
            say("    memory per open stream: %s; MemAvailable %+.1f KiB (the whole machine: noisy)",
                per, (m1["MemAvailable"] - m0["MemAvailable"]) / max(1, ok))
            say("    in all: web RSS %d -> %d MiB, PostgreSQL PSS %d -> %d MiB (%d backends)",
                m0["web RSS"] // 1024, m1["web RSS"] // 1024, m0["PostgreSQL PSS"] // 1024,
                m1["PostgreSQL PSS"] // 1024, len(pg_pids(pg)) - 1)
        finally:
            t3 = time.time()
            stop.set()
            th.join(60)
        # until the web has let every stream go (its threads free again)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                st2, _, _ = s.request("GET", "/api/health", timeout=5)
                if st2 == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        say("    closed and the web answering again in %.1f s", time.time() - t3)
    with open(os.path.join(s.prefix, "var", "log", "web.log"), errors="replace") as f:
        f.seek(log0)
        msgs = {}
        for ln in f:
            if '"level":"error"' in ln or '"level":"warn"' in ln:
                try:
                    m = json.loads(ln).get("msg", ln)
                except ValueError:
                    m = ln.strip()
                m = m[:160]
                msgs[m] = msgs.get(m, 0) + 1
    for m, n in sorted(msgs.items(), key=lambda kv: -kv[1])[:5]:
        say("  the web logged %d x: %s", n, m)
    part_end("streams", t0)


# ---- one sandbox node ----------------------------------------------------------

class NodeSide:
    """The PostgreSQL web in queue mode with `llmbox node` on its home."""
    name = "node (PostgreSQL)"

    def __init__(self, a, pg, tok):
        self.url = pg_fresh_db(pg.url)
        self.pg = pg
        self.s = Stack(scenario=load.per_conversation(load.bash_steps(a.turns)), db_url=self.url, model_log=False,
                       env={"LLMBOX_TASK_RUNNER": "queue"}, web_env={"LLMBOX_SANDBOX_API_TOKEN": tok},
                       nginx_subst=[START_LIMIT])
        try:
            self.s.start()
            DIRS.append(self.s.prefix)
            self.c, self.p = start_node(self.s, self.url, "n1", a.capacity)
        except BaseException:
            self.s.stop()
            raise

    def cpu(self):
        sd = load.stack_pids(self.s, "sandboxd")
        return {"node+agents": load.cpu_seconds([self.p.pid]), "sandboxd+sandboxes": load.cpu_seconds(sd),
                "web": load.cpu_seconds(load.stack_pids(self.s, "web")),
                "postgres": load.cpu_seconds(pg_pids(self.pg))}

    def wait(self, ids, timeout):
        self.c.wait(ids, timeout)
        deadline = time.time() + 10  # until the node has reaped its agents (their CPU counted)
        while load.children(self.p.pid) and time.time() < deadline:
            time.sleep(0.05)

    def stop(self):
        try:
            stop_node(self.c, self.p)
        finally:
            self.s.stop()


class LocalSide:
    """The single-machine web: task_runner = local on SQLite."""
    name = "local (SQLite)"

    def __init__(self, a, tok):
        self.s = Stack(scenario=load.per_conversation(load.bash_steps(a.turns)), model_log=False,
                       env={"LLMBOX_MAX_TASKS": str(a.capacity)}, web_env={"LLMBOX_SANDBOX_API_TOKEN": tok},
                       nginx_subst=[START_LIMIT])
        try:
            self.s.start()
        except BaseException:
            self.s.stop()
            raise
        DIRS.append(self.s.prefix)

    def cpu(self):
        sd = load.stack_pids(self.s, "sandboxd")
        return {"web+agents": load.cpu_seconds(load.stack_pids(self.s, "web")),
                "sandboxd+sandboxes": load.cpu_seconds(sd)}

    def wait(self, ids, timeout):
        load.wait_final(self.s, ids, timeout)
        web = load.stack_pids(self.s, "web")
        deadline = time.time() + 10  # until the web has reaped its agents (the spare one stays)
        while time.time() < deadline and any(not load.is_spare_agent(k) for w in web for k in load.children(w)):
            time.sleep(0.05)

    def stop(self):
        self.s.stop()


def submit(s, n, tag, deadline):
    """n tasks created through nginx, 4 at a time; a 429 (all slots busy on
    the single-machine web) is retried. Their ids."""
    def one(i):
        while True:
            st, t = s.create_task("[%s] task %d" % (tag, i))
            if st == 201:
                return t["id"]
            assert st == 429 and time.time() < deadline, "create %d: %s %s" % (i, st, t)
            time.sleep(0.02)
    with ThreadPoolExecutor(max_workers=4) as ex:
        return list(ex.map(one, range(n)))


def run_tasks(side, n, tag, capacity):
    c0 = side.cpu()
    ids = submit(side.s, n, tag, time.time() + 300)
    side.wait(ids, 300)
    c1 = side.cpu()
    ts = load.api_tasks(side.s, ids)
    bad = {i: t["status"] for i, t in ts.items() if t["status"] != "succeeded"}
    span = (max(t["finished_ms"] for t in ts.values()) - min(t["created_ms"] for t in ts.values())) / 1000.0
    runs = [t["finished_ms"] - t["started_ms"] for t in ts.values() if t.get("started_ms")]
    cpu = {k: (c1[k] - c0[k]) * 1000.0 / n for k in c1}
    # how full the slots were: the tasks' running time over capacity x the span
    busy = sum(runs) / 1000.0 / (capacity * span)
    return {"tps": n / span, "span": span, "bad": len(bad), "run_p50": pct(runs, 50), "busy": busy, "cpu_ms": cpu}


def node_part(a, pg, sides):
    t0 = part_start("node: one sandbox node, %d tasks of %d bash turn(s) + finish, capacity %d"
                    % (a.tasks, a.turns, a.capacity))
    for side in sides:  # one task each first: pools, connections, the node's first claim
        run_tasks(side, 1, "warm", a.capacity)
    got = {side.name: [] for side in sides}
    for rnd in range(a.rounds):
        for side in sides:
            r = run_tasks(side, a.tasks, "r%d" % rnd, a.capacity)
            got[side.name].append(r)
            host = sum(v for k, v in r["cpu_ms"].items() if k in ("node+agents", "web+agents", "sandboxd+sandboxes"))
            say("  %-18s round %d: %5.1f tasks/s (%d in %.1f s, %d not succeeded), started->finished p50 %.0f ms,"
                " slots busy %.0f %%; CPU ms/task: %s; the host's (agents, sandboxes, sandboxd, node or web) %.0f",
                side.name, rnd + 1, r["tps"], a.tasks, r["span"], r["bad"], r["run_p50"], 100 * r["busy"],
                ", ".join("%s %.1f" % kv for kv in r["cpu_ms"].items()), host)
    n0, n1 = [side.name for side in sides]
    tps = [x["tps"] / y["tps"] for x, y in zip(got[n0], got[n1])]
    say("  tasks/s node / local per round: %s", ", ".join("%.2fx" % x for x in tps))
    part_end("node", t0)


def api_round(s, tok, k, secs, pids):
    """k sandboxes through s's web, one client each running exec `true` for
    secs; (execs, errors, latencies ms, wall s, CPU s of pids meanwhile)."""
    hdr = {"Authorization": "Bearer " + tok, "Content-Type": "application/json"}

    def call(hc, method, path, body=None):
        hc.request(method, path, body=json.dumps(body).encode() if body is not None else None, headers=hdr)
        r = hc.getresponse()
        data = r.read()
        return r.status, data

    conns = [http.client.HTTPConnection("127.0.0.1", s.port, timeout=60) for _ in range(k)]
    sids = []
    try:
        for hc in conns:
            st, data = call(hc, "POST", "/api/sandboxes", {})
            assert st in (200, 201), (st, data[:300])
            sids.append(json.loads(data)["id"])
        start = threading.Barrier(k + 1)
        out = [None] * k

        def worker(i):
            hc, sid, lat, errs = conns[i], sids[i], [], 0
            start.wait()
            end = time.time() + secs
            while time.time() < end:
                t = time.perf_counter()
                st, data = call(hc, "POST", "/api/sandboxes/%s/exec" % sid, {"command": "true"})
                lat.append((time.perf_counter() - t) * 1000)
                if st != 200 or json.loads(data).get("return_code") != 0:
                    errs += 1
            out[i] = (lat, errs)
        ths = [threading.Thread(target=worker, args=(i,)) for i in range(k)]
        for th in ths:
            th.start()
        c0 = load.cpu_seconds(pids)
        start.wait()
        t0 = time.time()
        for th in ths:
            th.join()
        wall = time.time() - t0
        cpu = load.cpu_seconds(pids) - c0
        lat = [x for o in out for x in o[0]]
        return len(lat), sum(o[1] for o in out), lat, wall, cpu
    finally:
        for hc, sid in zip(conns, sids):
            try:
                call(hc, "DELETE", "/api/sandboxes/" + sid)
            except OSError:
                pass
        for hc in conns:
            hc.close()


def api_part(a, sides, tok):
    t0 = part_start("api: API sandboxes through the node host's web, exec `true` in a loop, %d s a run" % a.secs)
    for k in a.api_steps:
        rates = {}
        for rnd in range(a.rounds):
            for side in sides:
                pids = load.stack_pids(side.s, "web") + load.stack_pids(side.s, "nginx") + \
                    load.stack_pids(side.s, "sandboxd")
                n, errs, lat, wall, cpu = api_round(side.s, tok, k, a.secs, pids)
                cpu = cpu * 1e6 / max(1, n)
                rates.setdefault(side.name, []).append(n / wall)
                say("  k=%-4d %-18s round %d: %7.0f execs/s (%5.1f per sandbox per s)  p50 %6.2f ms  p99 %7.2f ms"
                    "  errors %d  CPU/exec (web, nginx, sandboxd) %.0f us",
                    k, side.name, rnd + 1, n / wall, n / wall / k, pct(lat, 50), pct(lat, 99), errs, cpu)
        n0, n1 = [side.name for side in sides]
        say("  k=%-4d ratio %s / %s per round: %s", k, n0, n1,
            ", ".join("%.2fx" % (x / y) for x, y in zip(rates[n0], rates[n1])))
    part_end("api", t0)


# ---- main -------------------------------------------------------------------------

DIRS = []  # every folder the run made (stacks, PostgreSQL, the peer, the nodes' own)


def leftovers():
    """What the run left: its folders, and processes working in them."""
    left = [d for d in DIRS if os.path.exists(d)]
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cwd = os.readlink("/proc/%s/cwd" % pid)
        except OSError:
            continue
        if any(cwd == d or cwd.startswith(d + "/") for d in DIRS):
            left.append("process %s in %s" % (pid, cwd))
    return left


def parse_mix(text):
    out = {}
    for part in text.split(","):
        k, _, v = part.partition("=")
        if k not in KINDS or not v.isdigit() or int(v) <= 0:
            raise argparse.ArgumentTypeError("KIND=WEIGHT,... with KIND one of %s and WEIGHT > 0 (got %r)"
                                             % (", ".join(KINDS), part))
        out[k] = int(v)
    return out


def ints(text):
    try:
        v = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("a list of numbers, e.g. 1,4,16 (got %r)" % text)
    if not v or min(v) < 1:
        raise argparse.ArgumentTypeError("numbers of at least 1 (got %r)" % text)
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a scaled-down run (about a minute)")
    ap.add_argument("--only", default="web,streams,node,api")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--secs", type=int)
    ap.add_argument("--steps", type=ints)
    ap.add_argument("--p99-ms", type=float, default=100.0)
    ap.add_argument("--mix", type=parse_mix, default=parse_mix("get=40,sse=25,dl=25,create=10"))
    ap.add_argument("--file-kib", type=int, default=16)
    ap.add_argument("--web-threads", type=int, default=64)
    ap.add_argument("--kind-c", type=int, default=16)
    ap.add_argument("--streams", type=int)
    ap.add_argument("--capacity", type=int, default=8)
    ap.add_argument("--tasks", type=int)
    ap.add_argument("--turns", type=int, default=1)
    ap.add_argument("--api-steps", type=ints)
    a = ap.parse_args()
    q = a.quick
    a.rounds = a.rounds or (1 if q else 2)
    a.secs = a.secs or (2 if q else 4)
    a.steps = a.steps or ([4, 32] if q else [1, 4, 16, 64, 256])
    a.streams = a.streams or (50 if q else 1000)
    a.tasks = a.tasks or (8 if q else 64)
    a.api_steps = a.api_steps or ([4] if q else [1, 8, 32])
    a.only = a.only.split(",")
    bad = [x for x in a.only if x not in ("web", "streams", "node", "api")]
    if bad:
        ap.error("--only: parts among web, streams, node, api (got %s)" % ", ".join(map(repr, bad)))
    if a.streams < 8:
        ap.error("--streams: at least 8 (the web keeps a quarter of its threads from streams: fewer leave none)")
    if os.geteuid() != 0 or not image_ready():
        say("capacity benchmark: needs root and the sandbox image (make image); skipped")
        return 0
    missing = pg_server.missing()
    if missing:
        say("capacity benchmark: PostgreSQL is not installed (%s; scripts/deps.sh); skipped", ", ".join(missing))
        return 0
    load.raise_nofile(65536)
    t_all = time.time()
    say("capacity benchmark (several nodes), %s", time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    say("machine: %s", load.machine())
    say("command: python3 bench/capacity.py %s", " ".join(sys.argv[1:]))
    tok = "bench-" + os.urandom(16).hex()
    with pg_server.PgServer(max_connections=max(200, a.streams + a.web_threads + 100)) as pg:
        PG[0] = pg
        DIRS.append(pg.dir)
        if "web" in a.only or "streams" in a.only:
            web_part(a, pg)
        if "node" in a.only or "api" in a.only:
            sides = []
            try:
                sides.append(NodeSide(a, pg, tok))
                sides.append(LocalSide(a, tok))
                if "node" in a.only:
                    node_part(a, pg, sides)
                if "api" in a.only:
                    api_part(a, sides, tok)
            finally:
                for side in sides:
                    side.stop()
    left = leftovers()
    say("\nwhole run %.0f s; load average at the end %s; left behind: %s", time.time() - t_all,
        " ".join(uptime()), ", ".join(left) if left else "nothing")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
