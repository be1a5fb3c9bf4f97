#!/usr/bin/env python3
"""What idle event streams cost the web: N Server-Sent-Event streams open
through nginx on tasks that stay running, and the CPU the `llmbox web`
process spends meanwhile.

Starts the whole service (tests/lib/stack.py) with the fake model answering
after an hour (--delay-ms), so every task starts its sandbox, asks the model
and then waits: running, with no new event. Then:

  1. the web's CPU with no stream open (the baseline: its own timers)
  2. --streams clients open GET /api/tasks/{id}/events through nginx
     (--per-task on each task), read what is stored, and stay open;
     the web's CPU over --secs, as % of a core and per 1,000 streams
  3. an event appended straight to the store by this process (as an agent
     does, from another process) on each task: the time until every
     stream of that task has it (the latency the watcher adds)

--build LABEL=DIR runs the same on the binary DIR/llmbox (repeat it to
compare builds in one run; DIR relative to the repository). To measure
the code before a change, build it elsewhere first, e.g.

    git archive main | tar -x -C /tmp/llmbox-main && make -C /tmp/llmbox-main -j2 all
    python3 bench/sse_idle.py --build before=/tmp/llmbox-main/build --build after=build

Needs root and the sandbox image (like tests/load). Timings are reported,
never asserted.

    python3 bench/sse_idle.py [--streams 1000] [--per-task 10] [--secs 10] [--build LABEL=DIR ...]
"""
import argparse
import asyncio
import os
import random
import sqlite3
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
import stack as stack_mod  # noqa: E402
from stack import Stack, image_ready  # noqa: E402
import load  # noqa: E402


def say(fmt, *a):
    print("  " + (fmt % a if a else fmt), flush=True)


def newest_seqs(s, ids):
    c = load.db(s)
    try:
        rows = dict(c.execute("SELECT task_id, MAX(seq) FROM events GROUP BY task_id"))
        status = dict(c.execute("SELECT id, status FROM tasks"))
    finally:
        c.close()
    return {i: rows.get(i, 0) for i in ids}, {i: status.get(i) for i in ids}


def wait_quiet(s, ids, quiet=3.0, timeout=180):
    """Until every task runs and none has stored an event for `quiet` s:
    each is waiting on the model."""
    deadline = time.time() + timeout
    last, since = None, time.time()
    while time.time() < deadline:
        seqs, status = newest_seqs(s, ids)
        bad = [i for i in ids if status[i] != "running"]
        if any(status[i] in ("succeeded", "failed", "cancelled") for i in ids):
            raise RuntimeError("a task ended: %s" % [(i, status[i]) for i in bad][:3])
        if seqs != last or bad:
            last, since = seqs, time.time()
        elif time.time() - since >= quiet:
            return seqs
        time.sleep(0.5)
    raise RuntimeError("the tasks did not settle in %d s" % timeout)


def append_event(s, task_id):
    """As an agent would: one event with the next seq, committed by a
    connection of another process. Returns time.monotonic() after the
    commit."""
    path = os.path.join(s.prefix, "var", "web", "llmbox.db")
    c = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        c.execute("BEGIN IMMEDIATE")
        c.execute("INSERT INTO events(task_id, seq, ts_ms, type, data) SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2,"
                  " 'status', '{\"bench\":\"ping\"}' FROM events WHERE task_id = ?1",
                  (task_id, int(time.time() * 1000)))
        seq = c.execute("SELECT MAX(seq) FROM events WHERE task_id = ?", (task_id,)).fetchone()[0]
        c.execute("COMMIT")
        return seq, time.monotonic()
    finally:
        c.close()


def measure(label, build, a):
    stack_mod.LLMBOX = os.path.join(REPO, build, "llmbox")
    if not os.access(stack_mod.LLMBOX, os.X_OK):
        raise SystemExit("no binary %s (build it first)" % stack_mod.LLMBOX)
    tasks = max(1, a.streams // a.per_task)
    env = {"LLMBOX_MAX_TASKS": str(tasks + 8), "LLMBOX_WEB_THREADS": str(a.streams + 64)}
    print("== %s: %s (load %s)" % (label, stack_mod.LLMBOX, load.loadavg()), flush=True)
    s = Stack(scenario=load.per_conversation(load.bash_steps(1)), env=env,
              model_args=["--delay-ms", "3600000"], model_log=False)
    s.start()
    out = {}
    try:
        ids = load.create_tasks(s, tasks, "[sse-idle] wait for the model")
        wait_quiet(s, ids)
        web = load.stack_pids(s, "web")
        ngx = load.stack_pids(s, "nginx")
        web_cpu = lambda: sum(load.cpu_split(p)[0] for p in web)  # not its reaped children (agents)

        c0, t0 = web_cpu(), time.time()
        time.sleep(a.secs / 2)
        base = (web_cpu() - c0) / (time.time() - t0)
        say("%d tasks running, waiting on the model; web with no stream open: %.2f %% of a core", tasks,
            100 * base)

        async def run():
            # the load tests' client: it reads until the done event, which
            # never comes here, so it stays open until cancelled
            streams = [load.SSEResult(i) for i in ids for _ in range(a.per_task)]
            jobs = [asyncio.ensure_future(load.sse_client(s.port, st)) for st in streams]
            t_open = time.time()
            while time.time() - t_open < 120:
                await asyncio.sleep(0.2)
                if all(st.t_headers or st.error for st in streams):
                    break
            errs = [st for st in streams if st.error or not st.t_headers]
            if errs:
                raise RuntimeError("%d of %d streams did not open, e.g. %s" % (len(errs), len(streams),
                                                                                errs[0].error))
            await asyncio.sleep(2)  # let every stream send what is stored and settle
            c0w, c0n, t0 = web_cpu(), load.cpu_seconds(ngx), time.time()
            await asyncio.sleep(a.secs)
            secs = time.time() - t0
            w, n = (web_cpu() - c0w) / secs, (load.cpu_seconds(ngx) - c0n) / secs
            out["web"], out["nginx"], out["base"] = w, n, base
            say("%d streams open, idle, for %.1f s: web %.1f %% of a core (%.1f %% per 1,000 streams), "
                "nginx %.1f %%", len(streams), secs, 100 * w, 100 * w * 1000 / len(streams), 100 * n)
            threads = len(os.listdir("/proc/%d/task" % web[0]))
            say("web threads: %d", threads)

            # an event written by another process: how soon does each stream have it?
            lat = []
            for tid in ids:
                await asyncio.sleep(random.uniform(0.01, 0.2))  # not in step with the watcher's tick
                seq, t_commit = append_event(s, tid)
                mine = [st for st in streams if st.task_id == tid]
                t_end = time.monotonic() + 5
                while time.monotonic() < t_end and not all(seq in st.ids for st in mine):
                    await asyncio.sleep(0.005)
                lat += [(st.times[st.ids.index(seq)] - t_commit) * 1000 if seq in st.ids else float("inf")
                        for st in mine]
            missing = sum(1 for x in lat if x == float("inf"))
            out["lat_p50"], out["lat_max"] = load.pct(lat, 50), max(lat)
            say("an event appended by another process, on each of the %d tasks: at the streams after "
                "p50 %.0f ms, p90 %.0f ms, max %.0f ms%s", len(ids), load.pct(lat, 50), load.pct(lat, 90),
                max(lat), "; %d streams never got it" % missing if missing else "")
            for j in jobs:
                j.cancel()
            await asyncio.gather(*jobs, return_exceptions=True)

        asyncio.run(run())
    finally:
        s.stop()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--streams", type=int, default=1000)
    ap.add_argument("--per-task", type=int, default=10)
    ap.add_argument("--secs", type=float, default=10)
    ap.add_argument("--build", action="append", default=[],
                    help="LABEL=DIR: measure DIR/llmbox (repeatable; default: this tree's build)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench/sse_idle.py: needs root (sandboxd)")
    if not image_ready():
        raise SystemExit("bench/sse_idle.py: the sandbox image is not built (make image)")
    have = load.raise_nofile(a.streams * 2 + 1024)
    if have < a.streams + 256:
        raise SystemExit("the open-file limit %d is too low for %d streams" % (have, a.streams))
    builds = [b.split("=", 1) if "=" in b else (b, b) for b in a.build] or [("this tree", "build")]
    print("sse_idle: %d streams, %d per task, %.0f s; %s" % (a.streams, a.per_task, a.secs, load.machine()))
    res = [(label, measure(label, build, a)) for label, build in builds]
    print("summary (web CPU, % of one core):")
    for label, r in res:
        print("  %-12s no stream %5.2f %%   %d idle streams %6.1f %%   per 1,000 streams %6.1f %%   "
              "event latency p50 %.0f ms, max %.0f ms" % (label, 100 * r["base"], a.streams, 100 * r["web"],
                                                        100 * r["web"] * 1000 / a.streams, r["lat_p50"],
                                                        r["lat_max"]))


if __name__ == "__main__":
    main()
