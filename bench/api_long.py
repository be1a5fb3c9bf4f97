#!/usr/bin/env python3
"""Long API commands at once: N concurrent `sleep S` execs through nginx.

Sandboxd v2 asks that running API commands either not each hold a web worker
thread for their whole duration, or that the threads be cheap enough for
1,000 long commands at once. The web serves FastCGI with blocking threads
(one request, one thread; docs/ARCHITECTURE.md), and the sandbox API holds
one sandboxd connection per API sandbox, so this measures the second:

  1. the whole stack of tests/lib/stack.py (nginx, web, sandboxd), sized for
     N: web_threads, sandbox_api_max, sandbox_max and sandboxd_max_conns;
  2. N API sandboxes (POST /api/sandboxes), then N clients, each its own
     HTTP connection, all released at once, each POST .../exec
     {"command": "sleep S"}: how many complete with exit 0, the wall time
     from the release to the last answer (S is the floor), p50/p99/max of
     each exec, the most `sleep`s running at once in the sandboxes, and the
     web's threads, RSS and CPU and sandboxd's RSS during the run;
  3. the peer, in the same run: the same N `sleep S` at sandboxd's RPC
     (N connections, one sandbox each, the same daemon), i.e. the same
     sandboxes without nginx and the web: its wall time and the ratio.

A benchmark, not a test: nothing asserts a timing. Needs root, make all and
the default image.

    python3 bench/api_long.py [--n 1000] [--secs 5] [--web-threads N+64]
"""
import argparse
import http.client
import json
import os
import statistics
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
import sandbox as sb  # noqa: E402 - Conn, pct, machine, descendants
from stack import Stack  # noqa: E402


def proc_status(pid):
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for ln in f:
                k, v = ln.split(":", 1)
                out[k] = v.strip()
    except OSError:
        pass
    return out


def cpu_secs(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
        v = st[st.rindex(")") + 2:].split()
        return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def count_sleeps(root_pid):
    n = 0
    for p in sb.descendants([root_pid]):
        try:
            with open("/proc/%d/comm" % p) as f:
                if f.read().strip() == "sleep":
                    n += 1
        except OSError:
            pass
    return n


class Sampler(threading.Thread):
    """Every 0.5 s: web threads and RSS, sandboxd RSS, sleeps running."""

    def __init__(self, web, sd):
        super().__init__(daemon=True)
        self.web, self.sd = web, sd
        self.stop_ev = threading.Event()
        self.max_threads = self.max_web_rss = self.max_sd_rss = self.max_sleeps = 0

    def run(self):
        while not self.stop_ev.is_set():
            w, s = proc_status(self.web), proc_status(self.sd)
            self.max_threads = max(self.max_threads, int(w.get("Threads", "0")))
            self.max_web_rss = max(self.max_web_rss, int(w.get("VmRSS", "0 kB").split()[0]))
            self.max_sd_rss = max(self.max_sd_rss, int(s.get("VmRSS", "0 kB").split()[0]))
            self.max_sleeps = max(self.max_sleeps, count_sleeps(self.sd))
            self.stop_ev.wait(0.5)


def release_all(n, body):
    """n threads wait on one barrier, then run body(i) -> (ok, ms, what);
    returns the results and the wall time from the release to the last."""
    res = [None] * n
    gate = threading.Barrier(n + 1)

    def worker(i):
        gate.wait()
        t0 = time.perf_counter()
        try:
            ok, what = body(i)
        except Exception as e:  # counted, not raised: the others go on
            ok, what = False, "%s: %s" % (type(e).__name__, e)
        res[i] = (ok, (time.perf_counter() - t0) * 1000, what)

    ts = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(n)]
    for t in ts:
        t.start()
    gate.wait()
    t0 = time.perf_counter()
    for t in ts:
        t.join()
    return res, time.perf_counter() - t0


def summary(res):
    ok = [r[1] for r in res if r and r[0]]
    errs = {}
    for r in res:
        if r and not r[0]:
            errs[r[2][:160]] = errs.get(r[2][:160], 0) + 1
    return ok, errs


def show(what, res, wall, secs):
    ok, errs = summary(res)
    lat = ("p50 %.0f ms  p99 %.0f ms  max %.0f ms" % (statistics.median(ok), sb.pct(ok, 99), max(ok))
           if ok else "none")
    print("  %-22s %d of %d exit 0; wall %.2f s (%.2fx the %g s floor); each exec %s"
          % (what, len(ok), len(res), wall, wall / secs, secs, lat), flush=True)
    for e, k in sorted(errs.items(), key=lambda x: -x[1])[:5]:
        print("    %d x %s" % (k, e))
    return len(ok)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="commands at once (default 1000)")
    ap.add_argument("--secs", type=float, default=5, help="each command's sleep (default 5)")
    ap.add_argument("--web-threads", type=int, default=0, help="web_threads (default n + 64)")
    ap.add_argument("--pool-size", type=int, default=8, help="LLMBOX_POOL_SIZE (default 8)")
    a = ap.parse_args()
    n, secs = a.n, a.secs
    threads = a.web_threads or n + 64
    if os.geteuid() != 0 or not os.access(sb.BIN, os.X_OK) or not os.path.isdir(sb.ROOT):
        print("needs root, %s (make all) and the default image" % sb.BIN)
        return 1
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # n client sockets, twice
    print("api_long: %d x `sleep %g` at once, %s" % (n, secs, time.strftime("%Y-%m-%d %H:%M")))
    print("machine: %s" % sb.machine())
    print("command: python3 bench/api_long.py %s" % " ".join(sys.argv[1:]), flush=True)
    tok = "bench-" + os.urandom(16).hex()
    # 2n: the peer's sandboxes while sandboxd may still be tearing down the
    # API's (the web's DELETE answers before sandboxd's count goes down)
    env = {"LLMBOX_POOL_SIZE": str(a.pool_size), "LLMBOX_SANDBOX_MAX": str(2 * n + 64),
           "LLMBOX_SANDBOXD_MAX_CONNS": str(2 * n + 64)}
    web_env = {"LLMBOX_SANDBOX_API_TOKEN": tok, "LLMBOX_SANDBOX_API_MAX": str(n),
               "LLMBOX_WEB_THREADS": str(threads)}
    print("config: web_threads %d, sandbox_api_max %d, sandbox_max %d, sandboxd_max_conns %d, pool %d"
          % (threads, n, 2 * n + 64, 2 * n + 64, a.pool_size), flush=True)
    with Stack(model=False, env=env, web_env=web_env) as st:
        web, sd = st.pid("web"), st.pid("sandboxd")
        hdr = {"Authorization": "Bearer " + tok, "Content-Type": "application/json"}

        def req(hc, method, path, body=None):
            hc.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                       headers=hdr)
            r = hc.getresponse()
            data = r.read()
            if r.status >= 300:
                raise RuntimeError("%s %s: %d %s" % (method, path, r.status, data[:200]))
            return json.loads(data) if data else None

        w0 = proc_status(web)
        print("  web at start: %s threads, RSS %s" % (w0.get("Threads"), w0.get("VmRSS")), flush=True)
        conns = [http.client.HTTPConnection("127.0.0.1", st.port, timeout=600) for _ in range(n)]
        t0 = time.perf_counter()
        sids, err = [], ""
        try:
            for i in range(n):
                sids.append(req(conns[i], "POST", "/api/sandboxes", {})["id"])
        except Exception as e:
            err = str(e)
        print("  %d API sandboxes created in %.1f s%s" % (len(sids), time.perf_counter() - t0,
                                                          ("; then: " + err) if err else ""), flush=True)
        k = len(sids)
        w1 = proc_status(web)
        sam = Sampler(web, sd)
        sam.start()
        cpu0 = cpu_secs(web)

        def api_exec(i):
            r = req(conns[i], "POST", "/api/sandboxes/%s/exec" % sids[i],
                    {"command": "sleep %g" % secs, "timeout_s": int(secs * 20 + 60)})
            return (r.get("return_code") == 0 and r.get("error_type") is None,
                    "return_code %s, error_type %s" % (r.get("return_code"), r.get("error_type")))

        res, wall = release_all(k, api_exec)
        sam.stop_ev.set()
        sam.join()
        web_cpu = cpu_secs(web) - cpu0
        print("== through nginx (POST /api/sandboxes/{id}/exec), %d at once" % k)
        done_api = show("API:", res, wall, secs)
        print("  most `sleep`s running at once: %d; web: %d threads (%s idle before), RSS max %.0f MiB "
              "(%.0f MiB with the sandboxes made, %.0f MiB at start), CPU %.2f s; sandboxd RSS max %.0f MiB"
              % (sam.max_sleeps, sam.max_threads, w1.get("Threads"), sam.max_web_rss / 1024,
                 int(w1.get("VmRSS", "0 kB").split()[0]) / 1024,
                 int(w0.get("VmRSS", "0 kB").split()[0]) / 1024, web_cpu, sam.max_sd_rss / 1024),
              flush=True)
        t0 = time.perf_counter()
        for i, sid in enumerate(sids):
            try:
                req(conns[i], "DELETE", "/api/sandboxes/" + sid)
            except Exception:
                pass
        for c in conns:
            c.close()
        print("  deleted in %.1f s" % (time.perf_counter() - t0), flush=True)

        # the peer: the same sleeps at the RPC of the same sandboxd, once the
        # web has let go of the deleted sandboxes' connections
        end = time.time() + 120
        while time.time() < end and st.sandboxd_ping().get("sandboxes", 0) > a.pool_size:
            time.sleep(0.2)
        sock = os.path.join(st.prefix, "var", "run", "sandboxd.sock")
        rconns, rsids = [], []
        try:
            for _ in range(k):
                c = sb.Conn(sock)
                rconns.append(c)
                rsids.append(c.create())
        except Exception as e:
            print("  RPC: only %d sandboxes: %s" % (len(rsids), e))

        def rpc_exec(i):
            r = rconns[i].call({"op": "exec", "id": rsids[i], "command": "sleep %g" % secs,
                                "timeout_ms": int(secs * 20000 + 60000)})
            return r.get("ok") and r.get("exit_code") == 0, r.get("message") or "exit %s" % r.get("exit_code")

        sam = Sampler(web, sd)
        sam.start()
        rres, rwall = release_all(len(rsids), rpc_exec)
        sam.stop_ev.set()
        sam.join()
        print("== the peer: sandboxd's RPC, same daemon, %d at once" % len(rsids))
        done_rpc = show("RPC:", rres, rwall, secs)
        print("  most `sleep`s running at once: %d" % sam.max_sleeps)
        for c, sid in zip(rconns, rsids):
            try:
                c.destroy(sid)
            except Exception:
                pass
            c.close()
        print("summary: %d of %d through nginx in %.2f s, %d of %d at the RPC in %.2f s: %.2fx the RPC's wall time"
              % (done_api, k, wall, done_rpc, len(rsids), rwall, wall / rwall if rwall else 0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
