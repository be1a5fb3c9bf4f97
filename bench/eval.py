#!/usr/bin/env python3
"""Evaluation harness benchmark (the evaluation harness): rows per minute in each mode at
concurrency 8 and 64 with a 200 ms model, the harness's own overhead per
row, and people's tasks while a large evaluation runs.

Starts the whole service (tests/lib/stack.py) with the fake model's eval
behaviour (tests/fake_model.py {"eval": true}) answering every request
after --delay-ms (default 200). An llm-mode row is one request; a
sandbox-mode row two (a bash command writing the answer file, then
finish), in a fresh sandbox.

Peers, measured in the same run:
  llm mode      the same requests sent straight to the fake model by a
                thread pool of the same concurrency (what a plain LLM-mode
                runner does): ratio = llmbox rows/min / direct rows/min
  sandbox mode  the model-bound ceiling: concurrency x 60 s / (2 x delay);
                ratio = llmbox rows/min / that ceiling
Overhead per row = a run's wall time (task created -> finished) minus the
model's time (requests x delay) minus its tool time.

People: while an evaluation of --people-rows sandbox rows runs at
concurrency 64, a person submits a task every 2 s; the figure is how many
were admitted and their wait (created -> running) and wall time, against
the same tasks on the idle service (the peer). The evaluation never takes
the last eval_reserve_slots task slots (docs/EVAL.md "The service").

    python3 bench/eval.py [--rows 256] [--delay-ms 200] [--people-rows 500] [--only llm|sandbox|people]
                          [--concurrency 8,64] [--peer DIR [--rounds 2]]

--peer DIR: the llm and sandbox modes (--only one of them) on the checkout
in DIR too (built there, e.g. main in a second worktree), alternating
with this one --rounds times, each in a fresh stack; prints the rows per
minute and the host CPU per row of each, and their ratios.
"""
import argparse
import http.client
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# --repo DIR: the service of another checkout (its build, its tests/lib), for
# a peer measured in the same run (--peer)
if "--repo" in sys.argv:
    REPO = os.path.abspath(sys.argv[sys.argv.index("--repo") + 1])
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
from stack import Stack, image_ready, multipart  # noqa: E402
import load  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rollout  # noqa: E402  (its CPU count from /proc)

ENV = {"LLMBOX_MAX_TASKS": "96", "LLMBOX_EVAL_RESERVE_SLOTS": "16", "LLMBOX_EVAL_MAX_ROWS": "20000"}


def dataset(n):
    rows = []
    for i in range(n):
        rows.append(json.dumps({"id": "q%05d" % i, "domain": ("math", "chem", "physics")[i % 3],
                                "scorer": "numeric", "ground_truth": str(i),
                                "problem_statement": "Row %d. LLM-ANSWER[%d] SANDBOX-ANSWER[%d]" % (i, i, i)}))
    return ("\n".join(rows) + "\n").encode()


def run_eval(s, n, mode, conc):
    ctype, body = multipart({"mode": mode, "concurrency": str(conc), "layout": "official"},
                            [("dataset", "bench.jsonl", dataset(n))])
    t0 = time.time()
    st, _, resp = s.request("POST", "/api/evals", body, {"Content-Type": ctype}, timeout=120)
    assert st == 201, (st, resp[:500])
    eid = json.loads(resp)["id"]
    while True:
        st, e = s.get_json("/api/evals/%s?limit=1" % eid)
        if e["status"] in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.25)
    wall = time.time() - t0
    st, _, lines = s.request("GET", "/api/evals/%s/results.jsonl" % eid, timeout=120)
    res = [json.loads(x) for x in lines.decode().splitlines() if x.strip()]
    return e, wall, res


def direct_llm(port, n, conc, delay_ms):
    """The peer of llm mode: the same requests straight to the fake model."""
    def one(i):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        body = json.dumps({"model": "x", "messages": [
            {"role": "user", "content": "Row %d. LLM-ANSWER[%d] SANDBOX-ANSWER[%d]" % (i, i, i)}]})
        c.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        c.close()
        return r.status
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=conc) as ex:
        st = list(ex.map(one, range(n)))
    assert all(x == 200 for x in st), st[:5]
    return time.time() - t0


def report_mode(s, mode, n, conc, delay_ms):
    cpu0 = rollout.stack_cpu(s)
    e, wall, res = run_eval(s, n, mode, conc)
    cpu1 = rollout.stack_cpu(s)
    cpu = sum(cpu1.get(k, 0) - cpu0.get(k, 0) for k in cpu1) * 1000.0 / max(1, len(res))
    ok = sum(1 for r in res if r["status"] == "ok" and r["score"] == 1)
    rpm = len(res) / wall * 60
    reqs = 1 if mode == "llm" else 2
    over = sorted(r["wall_ms"] - reqs * delay_ms - r["tool_ms"] for r in res if r["wall_ms"])
    med = over[len(over) // 2] if over else float("nan")
    if mode == "llm":
        peer_wall = direct_llm(s.model_port, n, conc, delay_ms)
        peer = n / peer_wall * 60
        peer_name = "direct requests, same concurrency"
    else:
        peer = conc * 60000.0 / (reqs * delay_ms)
        peer_name = "model-bound ceiling"
    print("  %-7s c=%-3d %4d rows in %6.1f s: %7.0f rows/min (%d right)  peer (%s) %7.0f rows/min  "
          "ratio %.2fx  overhead/row p50 %.0f ms, mean %.0f ms" % (
              mode, conc, len(res), wall, rpm, ok, peer_name, peer, rpm / peer, med,
              sum(over) / max(1, len(over))))
    print("          cpu per row: %.1f ms (web, sandboxd, nginx and all under them, from /proc)" % cpu)
    sys.stdout.flush()
    return {"rpm": rpm, "cpu_ms": cpu, "right": ok, "n": len(res)}


def people(s, rows, during):
    """People's tasks, one every 2 s, while an evaluation of rows runs (or
    on the idle service when rows == 0)."""
    stop = threading.Event()
    box = {}
    if rows:
        def ev():
            box["eval"] = run_eval(s, rows, "sandbox", 64)
            stop.set()
        th = threading.Thread(target=ev)
        th.start()
        time.sleep(3)  # the evaluation has filled what it may
    out = []
    t_end = time.time() + during
    while time.time() < t_end and not (rows and stop.is_set()):
        st, t = s.create_task("a person's task")
        if st == 201:
            out.append(t["id"])
        else:
            out.append(None)
        time.sleep(2)
    waits, walls, refused = [], [], out.count(None)
    for tid in out:
        if not tid:
            continue
        t = s.wait_task(tid, timeout=300)
        waits.append(t["started_ms"] - t["created_ms"])
        walls.append(t["finished_ms"] - t["created_ms"])
    if rows:
        th.join()
    waits.sort()
    walls.sort()
    return len(out), refused, waits, walls, box.get("eval")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--delay-ms", type=int, default=200)
    ap.add_argument("--people-rows", type=int, default=500)
    ap.add_argument("--only", default="")
    ap.add_argument("--concurrency", default="8,64")
    ap.add_argument("--repo", help="run the service of this checkout (default: this one)")
    ap.add_argument("--peer", help="a second checkout, measured alternately in the same run")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json-out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if os.geteuid() != 0 or not image_ready():
        print("eval benchmark: needs root and the sandbox image (make image); skipped")
        return 0
    concs = [int(x) for x in a.concurrency.split(",") if x.strip()]
    modes = [m for m in ("llm", "sandbox") if not a.only or a.only == m]
    if a.peer:
        return with_peer(a, modes, concs)
    if a.json_out:
        out = {}
        with Stack(scenario={"eval": True}, env=ENV, model_args=["--delay-ms", str(a.delay_ms)],
                   model_log=False) as s:
            for mode in modes:
                for conc in concs:
                    out["%s %d" % (mode, conc)] = report_mode(s, mode, a.rows, conc, a.delay_ms)
        with open(a.json_out, "w") as f:
            json.dump(out, f)
        return 0
    print("evaluation benchmark, %s" % time.strftime("%Y-%m-%d %H:%M"))
    print("machine: %s" % load.machine())
    print("command: python3 bench/eval.py --rows %d --delay-ms %d --people-rows %d%s" % (
        a.rows, a.delay_ms, a.people_rows, " --only " + a.only if a.only else ""))
    with Stack(scenario={"eval": True}, env=ENV, model_args=["--delay-ms", str(a.delay_ms)],
               model_log=False) as s:
        for mode in ("llm", "sandbox"):
            if a.only and a.only != mode:
                continue
            for conc in concs:
                report_mode(s, mode, a.rows, conc, a.delay_ms)
        if not a.only or a.only == "people":
            n0, r0, w0, l0, _ = people(s, 0, 20)
            n1, r1, w1, l1, ev = people(s, a.people_rows, 600)
            p50 = lambda v: v[len(v) // 2] if v else float("nan")
            print("  people's tasks (one every 2 s), 2 turns each at %d ms:" % a.delay_ms)
            print("    idle service (peer)          %2d submitted, %d refused, wait p50 %5.0f ms max %5.0f, "
                  "wall p50 %5.0f ms" % (n0, r0, p50(w0), max(w0 or [0]), p50(l0)))
            e, wall, res = ev
            print("    during a %d-row sandbox eval at c=64 (%.0f s, %.0f rows/min): %2d submitted, %d refused, "
                  "wait p50 %5.0f ms max %5.0f, wall p50 %5.0f ms" % (
                      len(res), wall, len(res) / wall * 60, n1, r1, p50(w1), max(w1 or [0]), p50(l1)))
            print("    ratio of wall p50 (during / idle): %.2fx" % (p50(l1) / p50(l0)))
    print("load at the end: %s" % open("/proc/loadavg").read().split()[0])
    return 0


def with_peer(a, modes, concs):
    """Each mode and concurrency on this checkout and on a.peer,
    alternating, a.rounds times, each in a fresh stack; rows per minute and
    CPU per row of each, and the ratios this / peer."""
    import subprocess
    import tempfile
    me = os.path.abspath(__file__)
    print("evaluation benchmark against a peer, %s" % time.strftime("%Y-%m-%d %H:%M"))
    print("machine: %s" % load.machine())
    print("command: python3 bench/eval.py --rows %d --delay-ms %d%s --concurrency %s --peer %s --rounds %d" % (
        a.rows, a.delay_ms, " --only " + a.only if a.only else "", a.concurrency, a.peer, a.rounds))
    got = {"this": [], "peer": []}
    for r in range(a.rounds):
        for who, repo in (("peer", os.path.abspath(a.peer)), ("this", REPO)):
            with tempfile.NamedTemporaryFile(suffix=".json") as tf:
                print("round %d, %s (%s), load %s:" % (r + 1, who, repo, open("/proc/loadavg").read().split()[0]))
                sys.stdout.flush()
                cmd = [sys.executable, me, "--repo", repo, "--rows", str(a.rows), "--delay-ms", str(a.delay_ms),
                       "--concurrency", a.concurrency, "--json-out", tf.name]
                if a.only:
                    cmd += ["--only", a.only]
                subprocess.run(cmd, check=True)
                got[who].append(json.load(open(tf.name)))
    for mode in modes:
        for c in concs:
            k = "%s %d" % (mode, c)
            this = [g[k] for g in got["this"]]
            peer = [g[k] for g in got["peer"]]
            mean = lambda v, f: sum(x[f] for x in v) / len(v)
            print("  %s c=%d rows/min: this %s (mean %.0f), peer %s (mean %.0f): ratio %.2fx; cpu per row: this "
                  "%.1f ms, peer %.1f ms: ratio %.2fx" % (
                      mode, c, ", ".join("%.0f" % x["rpm"] for x in this), mean(this, "rpm"),
                      ", ".join("%.0f" % x["rpm"] for x in peer), mean(peer, "rpm"),
                      mean(this, "rpm") / mean(peer, "rpm"), mean(this, "cpu_ms"), mean(peer, "cpu_ms"),
                      mean(this, "cpu_ms") / mean(peer, "cpu_ms")))
    print("load at the end: %s" % open("/proc/loadavg").read().split()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
