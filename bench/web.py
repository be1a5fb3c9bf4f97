#!/usr/bin/env python3
"""HTTP benchmark: the API and artifact downloads through llmbox's nginx,
against a plain nginx serving the same bytes as static files, in one run.

Starts the whole service (tests/lib/stack.py: nginx, web, sandboxd, the
fake model) and runs one task whose bash command writes a small and a
large file of random bytes into /testbed/output. Then wrk
(--threads, --connections, --secs) on:

  GET /api/health            the backend's JSON (sandboxd and model status
                             cached by the backend)
  GET /api/tasks/{id}        the task object from SQLite
  GET /dl/{id}/small?e&s     a small artifact through its signed download
                             link (from the artifact list, as the page
                             uses it): nginx checks the signature and
                             sends the file, the backend is not asked
  GET /dl/{id}/mid, large    the same for a 1 MiB and a large file
  GET .../artifacts/small    the API route to the same files: the backend
      mid, large             checks the task and the artifact index, then
                             X-Accel-Redirect, and nginx sends the file

The peer is a second nginx (tests/lib/load.py PlainNginx: the same worker
count, sendfile and access log) serving a copy of each response body as a
static file: the health and task JSON as they were answered, the two
artifacts. Each pair runs interleaved (llmbox, peer, llmbox, peer ...,
--rounds) and the ratio is of the mean throughputs. The CPU time the
server processes spent per request is printed for both sides (llmbox: its
nginx and the web; the peer: its nginx). Targets (reliability work):
downloads (signed links, as the page makes them) >= 0.9x the peer. The
API and its download route have no target; the ratio says what the
FastCGI round trip and the backend cost.

    python3 bench/web.py [--secs 10] [--rounds 2] [--connections 32] [--threads 2]
                          [--small-kib 16] [--mid-kib 1024] [--large-mib 48] [--only TEXT]
"""
import argparse
import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
from stack import Stack, image_ready  # noqa: E402
import load  # noqa: E402


def files_command(small_kib, mid_kib, large_mib):
    return ("head -c %d /dev/urandom > /testbed/output/small.bin && "
            "head -c %d /dev/urandom > /testbed/output/mid.bin && "
            "head -c %d /dev/urandom > /testbed/output/large.bin" % (small_kib * 1024, mid_kib * 1024, large_mib << 20))


OURS, PEER = {}, {}  # the server processes of each side, for their CPU time


def timed_wrk(url, a, connections, pids):
    """wrk on url, with the CPU time the server processes (pids: {name:
    [pids]}) spent per request, in microseconds."""
    c0 = {k: load.cpu_seconds(v) for k, v in pids.items()}
    r = load.wrk(url, a.secs, connections, a.threads)
    for k, v in pids.items():
        r["cpu_us_" + k] = (load.cpu_seconds(v) - c0[k]) * 1e6 / max(1, r["requests"])
    return r


def compare(name, ours_url, peer_url, a, connections, target=None):
    if a.only and a.only not in name:
        return None, 0
    runs = {"llmbox": [], "peer": []}
    for _ in range(a.rounds):
        runs["llmbox"].append(timed_wrk(ours_url, a, connections, OURS))
        runs["peer"].append(timed_wrk(peer_url, a, connections, PEER))
    mean = lambda k, f: sum(r[f] for r in runs[k]) / len(runs[k])
    ratio = mean("llmbox", "rps") / mean("peer", "rps")
    per_round = " ".join("%.2f" % (o["rps"] / p["rps"]) for o, p in zip(runs["llmbox"], runs["peer"]))
    errors = sum(r["errors"] for k in runs for r in runs[k])
    verdict = ""
    if target:
        verdict = "target >= %.1fx: %s" % (target, "MET" if ratio >= target else "NOT MET")
    print("  %s (c=%d)" % (name, connections))
    for k in ("llmbox", "peer"):
        cpu = " + ".join("%s %.0f" % (n, mean(k, "cpu_us_" + n)) for n in (OURS if k == "llmbox" else PEER))
        print("    %-7s %8.0f req/s %8.1f MiB/s  p50 %7.3f ms  p99 %7.3f ms  CPU/request: %s us" % (
            k, mean(k, "rps"), mean(k, "mib_s"), mean(k, "p50_ms"), mean(k, "p99_ms"), cpu))
    print("    ratio   %.3fx the peer's req/s (rounds: %s)  errors %d  %s" % (ratio, per_round, errors, verdict))
    return ratio, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--secs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--small-kib", type=int, default=16)
    ap.add_argument("--mid-kib", type=int, default=1024)
    ap.add_argument("--large-mib", type=int, default=48)
    ap.add_argument("--only", default="", help="run only the comparisons whose name holds this text")
    a = ap.parse_args()
    if os.geteuid() != 0 or not image_ready():
        print("web benchmark: needs root and the sandbox image (make image); skipped")
        return 0
    load.raise_nofile(65536)
    print("web benchmark, %s" % time.strftime("%Y-%m-%d %H:%M"))
    print("machine: %s" % load.machine())
    print("command: python3 bench/web.py --secs %d --rounds %d --connections %d --threads %d "
          "--small-kib %d --mid-kib %d --large-mib %d%s" % (a.secs, a.rounds, a.connections, a.threads, a.small_kib,
                                                            a.mid_kib, a.large_mib,
                                                            " --only '%s'" % a.only if a.only else ""))
    s = Stack(scenario=load.per_conversation(load.bash_steps(1, files_command(a.small_kib, a.mid_kib, a.large_mib))),
              model_log=False,
              env={"LLMBOX_WEB_THREADS": str(max(32, a.connections + 8))})
    s.start()
    peer = load.PlainNginx()
    try:
        st, t = s.create_task("[files] write a small and a large file")
        assert st == 201, (st, t)
        t = s.wait_task(t["id"], timeout=300)
        assert t["status"] == "succeeded", t
        tid = t["id"]
        base = "http://127.0.0.1:%d" % s.port
        _, _, health = s.request("GET", "/api/health")
        _, _, task_json = s.request("GET", "/api/tasks/" + tid)
        out_dir = os.path.join(s.prefix, "artifacts", tid, "output")
        peer.add("health.json", data=health)
        peer.add("task.json", data=task_json)
        peer.add("small.bin", src=os.path.join(out_dir, "small.bin"))
        peer.add("mid.bin", src=os.path.join(out_dir, "mid.bin"))
        peer.add("large.bin", src=os.path.join(out_dir, "large.bin"))
        peer.start()
        OURS.update(nginx=load.stack_pids(s, "nginx"), web=load.stack_pids(s, "web"))
        PEER.update(nginx=[peer.proc.pid] + load.children(peer.proc.pid))
        print("llmbox nginx :%d, plain nginx :%d; wrk -t%d, %d s a run, %d rounds" % (
            s.port, peer.port, a.threads, a.secs, a.rounds))
        compare("GET /api/health (%d bytes)" % len(health), base + "/api/health",
                peer.url("/health.json"), a, a.connections)
        compare("GET /api/tasks/{id} (%d bytes)" % len(task_json), base + "/api/tasks/" + tid,
                peer.url("/task.json"), a, a.connections)
        # downloads as the page makes them: the signed links of the list,
        # which nginx serves without the backend (target >= 0.9x)
        _, _, listing = s.request("GET", "/api/tasks/%s/artifacts" % tid)
        links = {x["path"]: x.get("download_url") for x in json.loads(listing)["artifacts"]}
        assert all(links.values()), "no signed download links in the list: %r" % links
        sizes = (("small.bin", "%d KiB" % a.small_kib, a.connections), ("mid.bin", "%d KiB" % a.mid_kib, a.connections),
                 ("large.bin", "%d MiB" % a.large_mib, min(8, a.connections)))
        for name, size, conns in sizes:
            compare("download %s artifact (signed link)" % size, base + links[name], peer.url("/" + name), a, conns,
                    0.9)
        # the API route (previews, scripts): the backend checks each request,
        # then X-Accel-Redirect; no target
        for name, size, conns in sizes:
            compare("download %s artifact (API route, X-Accel-Redirect)" % size,
                    base + "/api/tasks/%s/artifacts/%s" % (tid, name), peer.url("/" + name), a, conns)
        print("load at the end: %s" % load.loadavg())
    finally:
        peer.stop()
        s.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
